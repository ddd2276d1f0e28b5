//! Task sets (spec §7): a project's named sets of tasks (the original's `kind='tasks'`
//! datasets), one optionally linked to each environment. Kept as platform documents:
//! a set is a `task-set` document, each of its tasks a document of the kind
//! `task-set-tasks:<datasetId>` (so a set's tasks list in creation order by the kind's
//! `seq`), and an environment's link a `task-set-link` document under the container id.
//!
//! A task edit keeps the earlier text: every version (`validFrom`, `changeReason`,
//! `prompt`, `expectedOutput`) stays in the task's document, the newest is current.
//! Task names are not required to be unique within a set (`link-task-set` skips the
//! names a set already has on the client side).

use super::documents::document_text;
use super::evaluations::Fields;
use super::request::str_or_null;
use super::response::{ok, Answer};
use super::state::Hub;
use crate::error::HubError;
use crate::store::{Container, DocumentPages};
use crate::util::{new_id, now_iso};
use gateway_world::json::{self, object, Map, Value};

const TASK_SET: &str = "task-set";
const LINK: &str = "task-set-link";
/// Every task a set lists is read in pages of this many.
const PAGE: i64 = 500;
/// The longest task or set name.
const MAX_NAME: usize = 200;
/// What a task of a set is (the `kind` member of a listed task).
const TASK_KIND: &str = "task";

fn tasks_kind(dataset_id: &str) -> String {
    format!("task-set-tasks:{dataset_id}")
}

fn parse_document(text: &str, what: &str) -> Result<Map, HubError> {
    match json::parse_clean(text) {
        Some(Value::Object(map)) => Ok(map),
        _ => Err(HubError::Corrupt(what.to_string())),
    }
}

fn member(map: &Map, key: &str) -> Value {
    map.get(key).cloned().unwrap_or_default()
}

fn checked_name(fields: &Fields<'_>, key: &str) -> Result<String, HubError> {
    let name = fields.nonblank(key)?.ok_or_else(|| HubError::BadRequest(format!("'{key}' is required")))?;
    if name.chars().count() > MAX_NAME {
        return Err(HubError::BadRequest(format!("'{key}' is longer than {MAX_NAME} characters")));
    }
    Ok(name)
}

/// The id of the task set linked to a container, if any.
pub(super) async fn linked(hub: &Hub, project: &str, container_id: &str) -> Result<Option<String>, HubError> {
    let Some(text) = hub.meta.document(project, LINK, container_id).await? else { return Ok(None) };
    Ok(parse_document(&text, "a task-set link")?.get("taskSetDatasetId").and_then(Value::as_str).map(str::to_string))
}

async fn load_set(hub: &Hub, project: &str, dataset_id: &str) -> Result<Map, HubError> {
    let text = hub.meta.document(project, TASK_SET, dataset_id).await?.ok_or_else(|| HubError::missing("task set", dataset_id))?;
    parse_document(&text, "a task set")
}

/// `GET /environments/{cid}/task-set`: the linked set and its tasks (404 when none is linked).
pub(super) async fn get_linked(hub: &Hub, project: &str, container: &Container) -> Answer {
    let dataset_id = linked(hub, project, &container.id).await?.ok_or_else(|| {
        HubError::NotFound(format!(
            "environment '{}' has no linked task set: link one with `gateway environment link-task-set {}`",
            container.slug, container.slug
        ))
    })?;
    let set = load_set(hub, project, &dataset_id).await?;
    let mut tasks = Vec::new();
    let mut pages = DocumentPages::new(hub.meta.as_ref(), project, tasks_kind(&dataset_id), PAGE);
    while let Some(page) = pages.next_page().await? {
        for (_, text) in &page {
            let task = parse_document(text, "a task")?;
            tasks.push(object([
                ("id", member(&task, "id")),
                ("name", member(&task, "name")),
                ("prompt", member(&task, "prompt")),
                ("kind", Value::str(TASK_KIND)),
                ("expectedOutput", member(&task, "expectedOutput")),
                ("metadata", member(&task, "metadata")),
            ]));
        }
    }
    ok(object([
        ("datasetId", Value::str(dataset_id)),
        ("name", member(&set, "name")),
        ("description", member(&set, "description")),
        ("tasks", Value::Array(tasks)),
    ]))
}

/// `POST /environments/{cid}/task-set {taskSetDatasetId: id | null}`: link a set of this
/// project, or detach.
pub(super) async fn link(hub: &Hub, project: &str, container: &Container, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["taskSetDatasetId"])?;
    if !body.contains_key("taskSetDatasetId") {
        return Err(HubError::BadRequest("'taskSetDatasetId' is required: a task set id, or null to detach".into()));
    }
    let dataset_id = fields.nonblank("taskSetDatasetId")?;
    match &dataset_id {
        Some(id) => {
            load_set(hub, project, id).await?;
            let link = object([("containerId", Value::str(container.id.clone())), ("taskSetDatasetId", Value::str(id.clone()))]);
            hub.meta.put_document(project, LINK, &container.id, &document_text(&link)).await?;
        }
        None => {
            hub.meta.delete_document(project, LINK, &container.id).await?;
        }
    }
    ok(object([("containerId", Value::str(container.id.clone())), ("taskSetDatasetId", str_or_null(&dataset_id))]))
}

/// `POST /task-sets {name, description?}`.
pub(super) async fn create_set(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["name", "description"])?;
    let name = checked_name(&fields, "name")?;
    let description = fields.string("description")?;
    let id = new_id("ds_");
    let set = object([
        ("datasetId", Value::str(id.clone())),
        ("name", Value::str(name.clone())),
        ("description", str_or_null(&description)),
        ("createdAt", Value::str(now_iso())),
    ]);
    hub.meta.put_document(project, TASK_SET, &id, &document_text(&set)).await?;
    ok(object([("datasetId", Value::str(id)), ("name", Value::str(name))]))
}

/// `POST /task-sets/{datasetId}/tasks {name, prompt, expectedOutput?, metadata?}`.
pub(super) async fn create_task(hub: &Hub, project: &str, dataset_id: &str, body: &Map) -> Answer {
    load_set(hub, project, dataset_id).await?;
    let fields = Fields::new(body, "");
    fields.only(&["name", "prompt", "expectedOutput", "metadata"])?;
    let name = checked_name(&fields, "name")?;
    let prompt = fields.string("prompt")?.ok_or_else(|| HubError::BadRequest("'prompt' is required".into()))?;
    let expected = fields.get("expectedOutput").cloned().unwrap_or_default();
    let metadata = fields.object("metadata")?.unwrap_or_default();
    let id = new_id("task_");
    let now = now_iso();
    let version = object([
        ("validFrom", Value::str(now.clone())),
        ("changeReason", Value::Null),
        ("prompt", Value::str(prompt.clone())),
        ("expectedOutput", expected.clone()),
    ]);
    let task = object([
        ("id", Value::str(id.clone())),
        ("datasetId", Value::str(dataset_id)),
        ("name", Value::str(name.clone())),
        ("prompt", Value::str(prompt)),
        ("expectedOutput", expected),
        ("metadata", metadata),
        ("createdAt", Value::str(now)),
        ("versions", Value::Array(vec![version])),
    ]);
    hub.meta.put_document(project, &tasks_kind(dataset_id), &id, &document_text(&task)).await?;
    ok(object([("id", Value::str(id)), ("datasetId", Value::str(dataset_id)), ("name", Value::str(name))]))
}

/// `POST /task-sets/{datasetId}/tasks/{taskId} {changeReason, prompt?, expectedOutput?}`:
/// a new current version; the earlier ones stay in the task's history.
pub(super) async fn update_task(hub: &Hub, project: &str, dataset_id: &str, task_id: &str, body: &Map) -> Answer {
    load_set(hub, project, dataset_id).await?;
    let kind = tasks_kind(dataset_id);
    let text = hub
        .meta
        .document(project, &kind, task_id)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("no task '{task_id}' in task set '{dataset_id}'")))?;
    let mut task = parse_document(&text, "a task")?;
    let fields = Fields::new(body, "");
    fields.only(&["changeReason", "prompt", "expectedOutput"])?;
    let reason =
        fields.nonblank("changeReason")?.ok_or_else(|| HubError::BadRequest("'changeReason' is required: why the task changes".into()))?;
    let prompt = fields.string("prompt")?;
    let expected = fields.get("expectedOutput").cloned();
    if let Some(prompt) = &prompt {
        task.insert("prompt".into(), Value::str(prompt.clone()));
    }
    if let Some(expected) = &expected {
        task.insert("expectedOutput".into(), expected.clone());
    }
    let now = now_iso();
    let version = object([
        ("validFrom", Value::str(now.clone())),
        ("changeReason", Value::str(reason.clone())),
        ("prompt", member(&task, "prompt")),
        ("expectedOutput", member(&task, "expectedOutput")),
    ]);
    match task.get_mut("versions") {
        Some(Value::Array(versions)) => versions.push(version),
        _ => {
            task.insert("versions".into(), Value::Array(vec![version]));
        }
    }
    hub.meta.put_document(project, &kind, task_id, &document_text(&Value::Object(task))).await?;
    ok(object([("taskId", Value::str(task_id)), ("validFrom", Value::str(now)), ("changeReason", Value::str(reason))]))
}

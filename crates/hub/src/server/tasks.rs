//! Stored world tasks (`/api/public/world-tasks`, spec §6): a task is a document
//! of its project holding every version of its spec; a new spec appends a version.

use super::access::{container, own_version};
use super::documents::{document_text, load_document};
use super::request::opt_str;
use super::response::{ok, Answer};
use super::state::Hub;
use super::versions::resolve_ref;
use super::world_host::world_version;
use crate::error::HubError;
use crate::store::DocumentPages;
use crate::util::{new_id, now_iso};
use gateway_world::json::{self, object, Map, Value};
use gateway_world::task::TaskSpec;
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The document kind of stored tasks.
pub(super) const TASK: &str = "task";

/// A spec's hash: sha256 of its canonical normalised form.
pub(super) fn spec_hash(spec: &Value) -> String {
    hex::encode(Sha256::digest(json::canonical(spec).as_bytes()))
}

/// Validate a spec as the host will, refusing with the original's message.
pub(super) fn parse_spec(value: &Value) -> Result<(TaskSpec, Value), HubError> {
    let spec = TaskSpec::parse(value).map_err(|e| HubError::BadRequest(e.to_string()))?;
    let normalised = spec.to_value();
    Ok((spec, normalised))
}

pub(super) async fn load_task(hub: &Hub, project: &str, id: &str) -> Result<Map, HubError> {
    load_document(hub.meta.as_ref(), project, TASK, id, &format!("world task {id}"), || HubError::missing("world task", id)).await
}

async fn store_task(hub: &Hub, project: &str, task: &Map) -> Result<(), HubError> {
    let id = task.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
    hub.meta.put_document(project, TASK, &id, &document_text(&Value::Object(task.clone()))).await?;
    Ok(())
}

/// The summary of a task: everything but its version history.
pub(super) fn summary(task: &Map) -> Value {
    Value::Object(task.iter().filter(|(k, _)| k.as_str() != "versions").map(|(k, v)| (k.clone(), v.clone())).collect())
}

async fn world_pin(hub: &Hub, project: &str, body: &Map) -> Result<Option<Value>, HubError> {
    match body.get("world") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(Value::Null)),
        Some(Value::Str(slug)) => {
            container(hub, project, Some(slug.clone())).await?;
            Ok(Some(Value::str(slug)))
        }
        Some(_) => Err(HubError::BadRequest("'world' is a world slug or null".into())),
    }
}

fn task_name(body: &Map, spec: Option<&TaskSpec>) -> Result<Option<String>, HubError> {
    let name = match body.get("name") {
        Some(Value::Str(name)) => Some(name.clone()),
        None | Some(Value::Null) => spec.and_then(|s| s.name.clone()),
        Some(_) => return Err(HubError::BadRequest("'name' is a string".into())),
    };
    if let Some(name) = &name {
        if name.trim().is_empty() || name.chars().count() > 120 {
            return Err(HubError::BadRequest("a task name is 1-120 characters".into()));
        }
    }
    Ok(name)
}

fn version_entry(version: i64, hash: &str, spec: &Value, by: &str, message: Option<&Value>, at: &str) -> Value {
    object([
        ("version", Value::Int(version)),
        ("hash", Value::str(hash)),
        ("createdAt", Value::str(at)),
        ("createdBy", Value::str(by)),
        ("message", message.cloned().unwrap_or_default()),
        ("spec", spec.clone()),
    ])
}

pub(super) async fn create_task(hub: &Hub, project: &str, body: &Map) -> Answer {
    let spec_value = body.get("spec").ok_or_else(|| HubError::BadRequest("'spec' is required".into()))?;
    let (spec, _) = parse_spec(spec_value)?;
    create_task_from(hub, project, body, &spec).await
}

/// [`create_task`] of a spec parsed already (a session's, saved as a task): `body`'s
/// name, world and message, its `spec` not read.
pub(super) async fn create_task_from(hub: &Hub, project: &str, body: &Map, spec: &TaskSpec) -> Answer {
    let normalised = spec.to_value();
    let name = task_name(body, Some(spec))?
        .ok_or_else(|| HubError::BadRequest("a task needs a name: give 'name' or a spec with a name".into()))?;
    let world = world_pin(hub, project, body).await?.unwrap_or_default();
    let id = new_id("wt_");
    let at = now_iso();
    let hash = spec_hash(&normalised);
    let mut task = Map::default();
    task.insert("id".into(), Value::str(&id));
    task.insert("name".into(), Value::str(name));
    task.insert("world".into(), world);
    task.insert("version".into(), Value::Int(1));
    task.insert("hash".into(), Value::str(&hash));
    task.insert("spec".into(), normalised.clone());
    task.insert("createdAt".into(), Value::str(&at));
    task.insert("updatedAt".into(), Value::str(&at));
    task.insert("createdBy".into(), Value::str(project));
    task.insert("updatedBy".into(), Value::str(project));
    task.insert("versions".into(), Value::Array(vec![version_entry(1, &hash, &normalised, project, body.get("message"), &at)]));
    store_task(hub, project, &task).await?;
    ok(summary(&task))
}

pub(super) async fn update_task(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let mut task = load_task(hub, project, id).await?;
    let at = now_iso();
    if let Some(spec_value) = body.get("spec").filter(|v| !matches!(v, Value::Null)) {
        let (_, normalised) = parse_spec(spec_value)?;
        let hash = spec_hash(&normalised);
        if task.get("hash").and_then(Value::as_str) != Some(hash.as_str()) {
            let version = task.get("version").and_then(|v| v.as_f64()).unwrap_or(0.0) as i64 + 1;
            if let Some(Value::Array(versions)) = task.get_mut("versions") {
                versions.push(version_entry(version, &hash, &normalised, project, body.get("message"), &at));
            }
            task.insert("version".into(), Value::Int(version));
            task.insert("hash".into(), Value::str(hash));
            task.insert("spec".into(), normalised);
        }
    }
    if let Some(name) = task_name(body, None)? {
        task.insert("name".into(), Value::str(name));
    }
    if let Some(world) = world_pin(hub, project, body).await? {
        task.insert("world".into(), world);
    }
    task.insert("updatedAt".into(), Value::str(at));
    task.insert("updatedBy".into(), Value::str(project));
    store_task(hub, project, &task).await?;
    ok(summary(&task))
}

/// Every task of a project, oldest first.
pub(super) async fn all_tasks(hub: &Hub, project: &str) -> Result<Vec<Map>, HubError> {
    let mut out = Vec::new();
    let mut pages = DocumentPages::new(hub.meta.as_ref(), project, TASK, 500);
    while let Some(page) = pages.next_page().await? {
        out.extend(page.into_iter().filter_map(|(_, text)| match json::parse_clean(&text) {
            Some(Value::Object(map)) => Some(map),
            _ => None,
        }));
    }
    Ok(out)
}

pub(super) async fn list_tasks(hub: &Hub, project: &str, query: &BTreeMap<String, String>) -> Answer {
    let number = |key: &str, default: i64| -> Result<i64, HubError> {
        match query.get(key) {
            None => Ok(default),
            Some(text) => {
                text.parse::<i64>().ok().filter(|n| *n >= 1).ok_or_else(|| HubError::BadRequest(format!("'{key}' is a positive integer")))
            }
        }
    };
    let page = number("page", 1)?;
    let limit = number("limit", 50)?.min(500);
    let world = query.get("world").filter(|w| !w.is_empty());
    let wanted: Vec<(&str, &String)> = query.iter().filter_map(|(k, v)| k.strip_prefix("metadata.").map(|k| (k, v))).collect();
    let matching: Vec<Value> = all_tasks(hub, project)
        .await?
        .into_iter()
        .filter(|task| world.is_none_or(|w| task.get("world").and_then(Value::as_str) == Some(w.as_str())))
        .filter(|task| {
            let metadata = task.get("spec").and_then(|s| s.get("metadata"));
            wanted.iter().all(|(key, value)| {
                metadata.and_then(|m| m.get(key)).is_some_and(|found| match found {
                    Value::Str(text) => text == *value,
                    other => json::python_str(other) == **value,
                })
            })
        })
        .map(|task| summary(&task))
        .collect();
    let total = matching.len() as i64;
    let start = ((page - 1).saturating_mul(limit)).min(total) as usize;
    let items: Vec<Value> = matching.into_iter().skip(start).take(limit as usize).collect();
    ok(object([
        ("tasks", Value::Array(items)),
        (
            "meta",
            object([
                ("page", Value::Int(page)),
                ("limit", Value::Int(limit)),
                ("totalItems", Value::Int(total)),
                ("totalPages", Value::Int((total + limit - 1) / limit)),
            ]),
        ),
    ]))
}

/// A task's spec at `version` (None: the current one): `(version, hash, spec)`.
pub(super) fn task_version(task: &Map, version: Option<i64>) -> Result<(i64, String, Value), HubError> {
    let current = task.get("version").and_then(Value::as_f64).unwrap_or(0.0) as i64;
    let wanted = version.unwrap_or(current);
    let versions = task.get("versions").and_then(Value::as_array).cloned().unwrap_or_default();
    let entry = versions.iter().find(|v| v.get("version").and_then(Value::as_f64).map(|n| n as i64) == Some(wanted));
    let Some(entry) = entry else {
        let id = task.get("id").and_then(Value::as_str).unwrap_or_default();
        return Err(HubError::NotFound(format!("world task {id} has no version {wanted} (its versions are 1-{current})")));
    };
    Ok((wanted, entry.get("hash").and_then(Value::as_str).unwrap_or_default().to_string(), entry.get("spec").cloned().unwrap_or_default()))
}

pub(super) async fn show_task(hub: &Hub, project: &str, id: &str, version: Option<String>) -> Answer {
    let task = load_task(hub, project, id).await?;
    let version =
        version.map(|v| v.parse::<i64>().map_err(|_| HubError::BadRequest("'version' is a positive integer".into()))).transpose()?;
    let mut out = match summary(&task) {
        Value::Object(map) => map,
        _ => Map::default(),
    };
    if version.is_some() {
        let (number, hash, spec) = task_version(&task, version)?;
        out.insert("version".into(), Value::Int(number));
        out.insert("hash".into(), Value::Str(hash));
        out.insert("spec".into(), spec);
    }
    let mut versions: Vec<Value> = task
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|v| match v {
            Value::Object(map) => Value::Object(map.into_iter().filter(|(k, _)| k != "spec").collect()),
            other => other,
        })
        .collect();
    versions.reverse();
    out.insert("versions".into(), Value::Array(versions));
    ok(Value::Object(out))
}

pub(super) async fn delete_task(hub: &Hub, project: &str, id: &str) -> Answer {
    load_task(hub, project, id).await?;
    hub.meta.delete_document(project, TASK, id).await?;
    ok(object([("id", Value::str(id)), ("deleted", Value::Bool(true))]))
}

pub(super) async fn validate_task(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let task = load_task(hub, project, id).await?;
    let version = match body.get("version") {
        None | Some(Value::Null) => None,
        Some(Value::Int(n)) if *n >= 1 => Some(*n),
        Some(_) => return Err(HubError::BadRequest("'version' is a positive integer".into())),
    };
    let (number, _, spec_value) = task_version(&task, version)?;
    let slug = opt_str(body, "slug")?;
    let version_id = opt_str(body, "versionId")?;
    if slug.is_some() && version_id.is_some() {
        return Err(HubError::BadRequest("give 'slug' or 'versionId', not both".into()));
    }
    let slug = slug.or_else(|| task.get("world").and_then(Value::as_str).map(str::to_string));
    let world = match (version_id, slug) {
        (Some(id), _) => Some(own_version(hub, project, &id).await?.1),
        (None, Some(slug)) => {
            let container = container(hub, project, Some(slug)).await?;
            Some(resolve_ref(hub, &container, "latest").await?.0)
        }
        (None, None) => None,
    };
    let mut out = Map::default();
    out.insert("taskId".into(), Value::str(id));
    out.insert("version".into(), Value::Int(number));
    let Some(world) = world else {
        out.insert("versionId".into(), Value::Null);
        out.insert("ok".into(), Value::Bool(true));
        out.insert("checked".into(), Value::str("none"));
        out.insert("problems".into(), Value::Array(Vec::new()));
        out.insert("entities".into(), Value::Null);
        return ok(Value::Object(out));
    };
    let (spec, _) = parse_spec(&spec_value)?;
    let spec = Arc::new(spec);
    let opened = world_version(hub, &world).await?;
    let entities: Vec<String> = opened.template.contract().entities.iter().map(|e| e.name.clone()).collect();
    let mut problems = Vec::new();
    if let Err(refused) = gateway_world::task::check_task_entities(&spec, entities.iter().map(String::as_str)) {
        problems.push(Value::Str(refused.message));
    }
    if let Err(refused) = gateway_world::task::check_task_tools(&spec, opened.spec.operations.iter().map(|o| o.name.as_str())) {
        problems.push(Value::Str(refused.message));
    }
    // Beyond the original: the self-test (a no-op agent below the pass bar, the
    // reference solution at or above it), run on this hub's own host.
    let host = hub.worlds.as_ref().and_then(|w| w.embedded.clone());
    if let (true, Some(host)) = (problems.is_empty(), host) {
        let url = crate::worlds::stored_bundle(&world.object_key);
        let (id, spec) = (world.id.clone(), spec.clone());
        let tested = tokio::task::spawn_blocking(move || gateway_host::selftest::self_test(&host, &id, &url, &spec)).await?;
        match tested {
            Ok(report) => {
                for problem in report.get("problems").and_then(Value::as_array).into_iter().flatten() {
                    problems.push(Value::Str(format!("self-test: {}", problem.as_str().unwrap_or_default())));
                }
                out.insert("selfTest".into(), report);
            }
            Err(error) => problems.push(Value::Str(format!("self-test: {error}"))),
        }
    }
    let mut sorted = entities;
    sorted.sort();
    out.insert("versionId".into(), Value::str(&world.id));
    out.insert("ok".into(), Value::Bool(problems.is_empty()));
    out.insert("checked".into(), Value::str("entities"));
    out.insert("problems".into(), Value::Array(problems));
    out.insert("entities".into(), Value::Array(sorted.into_iter().map(Value::Str).collect()));
    ok(Value::Object(out))
}

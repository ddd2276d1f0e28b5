//! Stored tasks as a run's tasks (`worlds run --task-id`, `--task-set`): the
//! hub's world tasks (`/api/v1/world-tasks`, what `gateway task create` stores)
//! fetched by id — `ID` for the current version, `ID@N` for version N, the
//! spelling `bench run-configs create --world-tasks` takes — or every stored task
//! of a named set (tasks whose spec carries `metadata.taskSet = NAME`).
//!
//! A fetched spec is checked as a world's own `tasks/*.json` is; a task pinned to
//! another world is refused by name, so that a run never grades one world with
//! another's task.

use crate::error::RunnerError;
use crate::tasks::{TaskSource, WorldTask};
use gateway_hub_client::sessions_client::SessionsClient;
use gateway_world::json::Value;
use gateway_world::task::TaskSpec;
use std::path::Path;
use std::sync::Arc;

/// The metadata member naming the set a stored task belongs to.
pub const SET_MEMBER: &str = "taskSet";

/// The most tasks a page of the hub's task list holds.
const PAGE: i64 = 500;

/// One stored task a run names: its id and, optionally, a pinned version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRef {
    /// The task's id (`wt_…`).
    pub id: String,
    /// The version to run (None: the current one).
    pub version: Option<i64>,
}

/// `ID[@VERSION]` items, each flag value possibly comma-separated.
pub fn parse_refs(values: &[String]) -> Result<Vec<StoredRef>, RunnerError> {
    let mut refs = Vec::new();
    for item in values.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|i| !i.is_empty()) {
        let parsed = match item.rsplit_once('@') {
            None => StoredRef { id: item.to_string(), version: None },
            Some((id, version)) => match version.parse::<i64>() {
                Ok(number) if number >= 1 && !id.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) => {
                    StoredRef { id: id.to_string(), version: Some(number) }
                }
                _ => {
                    return Err(RunnerError::Config(format!(
                        "stored task ref '{item}' is not <id> or <id>@<version> (version a positive integer)"
                    )))
                }
            },
        };
        if !refs.contains(&parsed) {
            refs.push(parsed);
        }
    }
    Ok(refs)
}

/// What a run asks of the hub's stored tasks.
#[derive(Debug, Clone, Default)]
pub struct StoredTasks {
    /// `--task-id` values.
    pub ids: Vec<String>,
    /// `--task-set`.
    pub set: Option<String>,
}

impl StoredTasks {
    /// Whether the run names any stored task.
    pub fn any(&self) -> bool {
        !self.ids.is_empty() || self.set.is_some()
    }
}

/// The stored tasks a run names, as tasks of the world at `world_dir` (whose hub
/// slug is `slug`, when it has one): ids first in the order given, then the set's
/// tasks in the hub's order, each once.
pub fn fetch(client: &SessionsClient, wanted: &StoredTasks, slug: Option<&str>, world_dir: &Path) -> Result<Vec<WorldTask>, RunnerError> {
    let mut details = Vec::new();
    for reference in parse_refs(&wanted.ids)? {
        let detail = client
            .get_task(&reference.id, reference.version)
            .map_err(|e| RunnerError::World(format!("stored task {}: {e}", shown_ref(&reference))))?;
        details.push(detail);
    }
    if let Some(set) = &wanted.set {
        let before = details.len();
        let metadata = [(SET_MEMBER.to_string(), set.clone())];
        let mut page = 1;
        loop {
            let listed = client.list_tasks(slug, &metadata, Some(page), Some(PAGE))?;
            let tasks = listed.get("tasks").and_then(Value::as_array).cloned().unwrap_or_default();
            details.extend(tasks);
            let pages = listed.get("meta").and_then(|m| m.get("totalPages")).and_then(Value::as_i64).unwrap_or(1);
            if page >= pages {
                break;
            }
            page += 1;
        }
        if details.len() == before {
            let scope = slug.map(|s| format!(" of world '{s}'")).unwrap_or_default();
            return Err(RunnerError::World(format!(
                "no stored task{scope} is in set '{set}' (a task joins a set with \"metadata\": {{\"{SET_MEMBER}\": \"{set}\"}} in its spec)"
            )));
        }
    }
    let mut tasks: Vec<WorldTask> = Vec::new();
    for detail in details {
        let task = as_world_task(&detail, slug, world_dir)?;
        if !tasks.iter().any(|t| t.name == task.name) {
            tasks.push(task);
        }
    }
    Ok(tasks)
}

fn shown_ref(reference: &StoredRef) -> String {
    match reference.version {
        Some(version) => format!("{}@{version}", reference.id),
        None => reference.id.clone(),
    }
}

/// A stored task (the hub's detail or summary: `{id, name, world, version, spec}`)
/// as a task of the world: named `<name>` (its id when unnamed).
fn as_world_task(detail: &Value, slug: Option<&str>, world_dir: &Path) -> Result<WorldTask, RunnerError> {
    let id = detail.get("id").and_then(Value::as_str).unwrap_or_default();
    let version = detail.get("version").and_then(Value::as_i64).unwrap_or(0);
    let shown = format!("stored task {id}@{version}");
    let pinned = detail.get("world").and_then(Value::as_str).filter(|w| !w.is_empty());
    if let (Some(pinned), Some(slug)) = (pinned, slug) {
        if pinned != slug {
            return Err(RunnerError::World(format!("{shown} is pinned to world '{pinned}', not '{slug}'")));
        }
    }
    let spec = detail.get("spec").unwrap_or(&Value::Null);
    let spec = Arc::new(TaskSpec::parse(spec).map_err(|e| RunnerError::World(format!("{shown}: {}", e.message)))?);
    let name = detail.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).map(str::to_string);
    let name = name.or(spec.name.clone()).unwrap_or_else(|| id.to_string());
    // Not a file on disk: a spec task's directory is the world's, as for tasks/*.json.
    let file = world_dir.join("tasks").join(format!("{id}.json"));
    Ok(WorldTask { name, instruction: spec.instruction.clone(), source: TaskSource::Spec { spec, file } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_take_ids_versions_and_commas() {
        let refs = parse_refs(&["wt_a, wt_b@2".into(), "wt_a".into()]).unwrap();
        assert_eq!(refs, vec![StoredRef { id: "wt_a".into(), version: None }, StoredRef { id: "wt_b".into(), version: Some(2) }]);
    }

    #[test]
    fn a_bad_version_is_refused_by_name() {
        for bad in ["wt_a@0", "wt_a@x", "@3", "wt_a@+2"] {
            let error = parse_refs(&[bad.into()]).unwrap_err().to_string();
            assert!(error.contains(bad) && error.contains("positive integer"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_task_of_another_world_is_refused() {
        let detail =
            gateway_world::json::parse(r#"{"id": "wt_1", "name": "t", "world": "other", "version": 1, "spec": {"instruction": "do it"}}"#)
                .unwrap()
                .value;
        let error = as_world_task(&detail, Some("acme"), Path::new("/w")).unwrap_err().to_string();
        assert_eq!(error, "stored task wt_1@1 is pinned to world 'other', not 'acme'");
        let task = as_world_task(&detail, None, Path::new("/w")).unwrap();
        assert_eq!((task.name.as_str(), task.instruction.as_str()), ("t", "do it"));
    }
}

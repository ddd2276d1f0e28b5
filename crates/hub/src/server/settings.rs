//! A container's sealed secrets and a project's run configs.

use super::access::container;
use super::request::{opt_bool, opt_str, opt_value, req_str};
use super::response::{ok, Answer};
use super::state::Hub;
use crate::error::HubError;
use crate::util::{new_id, now_iso};
use gateway_world::json::{self, object, Map, Value};

pub(super) fn check_secret_key(key: &str) -> Result<(), HubError> {
    let ok = !key.is_empty()
        && key.len() <= 128
        && key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(HubError::BadRequest(format!("invalid secret key '{key}': use an environment variable name (UPPER_SNAKE_CASE)")))
    }
}

pub(super) async fn set_secret(hub: &Hub, project: &str, body: &Map) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let key = req_str(body, "key")?;
    check_secret_key(&key)?;
    let value = req_str(body, "value")?;
    if value.len() > 64 * 1024 {
        return Err(HubError::TooLarge("secret values are limited to 64 KiB".into()));
    }
    let sealed = hub.keys.seal(&format!("{}/{key}", container.id), value.as_bytes())?;
    let created = hub.meta.put_secret(&container.id, &key, sealed).await?;
    ok(object([("slug", Value::str(container.slug)), ("key", Value::str(key)), ("created", Value::Bool(created))]))
}

pub(super) async fn list_secrets(hub: &Hub, project: &str, slug: Option<String>) -> Answer {
    let container = container(hub, project, slug).await?;
    let rows = hub.meta.secrets(&container.id).await?;
    let list = rows
        .into_iter()
        .map(|s| object([("key", Value::str(s.key)), ("createdAt", Value::str(s.created_at)), ("updatedAt", Value::str(s.updated_at))]))
        .collect();
    ok(object([("slug", Value::str(container.slug)), ("secrets", Value::Array(list))]))
}

pub(super) async fn delete_secret(hub: &Hub, project: &str, body: &Map) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let key = req_str(body, "key")?;
    if !hub.meta.delete_secret(&container.id, &key).await? {
        return Err(HubError::NotFound(format!("'{}' has no secret '{key}'", container.slug)));
    }
    ok(object([("slug", Value::str(container.slug)), ("key", Value::str(key)), ("deleted", Value::Bool(true))]))
}

// ------------------------------------------------------------------ run configs

pub(super) async fn list_run_configs(hub: &Hub, project: &str) -> Answer {
    let rows = hub.meta.run_configs(project).await?;
    ok(object([("runConfigs", Value::Array(rows.iter().map(|r| opt_value(r)).collect()))]))
}

pub(super) async fn upsert_run_config(hub: &Hub, project: &str, body: &Map) -> Answer {
    let name = req_str(body, "name")?;
    let models = match body.get("models") {
        Some(Value::Array(items)) if items.iter().all(|m| matches!(m, Value::Str(s) if !s.is_empty())) => items.clone(),
        _ => return Err(HubError::BadRequest("'models' must be a list of model names".into())),
    };
    let parallelism = match body.get("parallelism") {
        None | Some(Value::Null) => 1,
        Some(Value::Int(n)) if (1..=16).contains(n) => *n,
        _ => return Err(HubError::BadRequest("'parallelism' must be an integer from 1 to 16".into())),
    };
    if body.contains_key("taskNames") && body.contains_key("worldTasks") {
        return Err(HubError::BadRequest(
            "'taskNames' and 'worldTasks' are exclusive: a config runs bundled scenarios or stored tasks".into(),
        ));
    }
    let (id, created_at) = match opt_str(body, "id")? {
        Some(id) => {
            let existing = hub.meta.run_config(project, &id).await?.ok_or_else(|| HubError::NotFound(format!("no run config '{id}'")))?;
            let created = opt_value(&existing).get("createdAt").and_then(Value::as_str).map(str::to_string).unwrap_or_else(now_iso);
            (id, created)
        }
        None => (new_id("rc_"), now_iso()),
    };
    let mut row = Map::default();
    row.insert("id".into(), Value::str(id.clone()));
    row.insert("name".into(), Value::str(name));
    row.insert("models".into(), Value::Array(models));
    row.insert("parallelism".into(), Value::Int(parallelism));
    row.insert("autoRunOnPush".into(), Value::Bool(opt_bool(body, "autoRunOnPush")?));
    for key in ["agent", "taskNames", "worldTasks", "numExamples", "rolloutsPerExample", "timeoutMinutes", "taskSetDatasetId"] {
        if let Some(v) = body.get(key).filter(|v| !matches!(v, Value::Null)) {
            row.insert(key.into(), v.clone());
        }
    }
    row.insert("createdAt".into(), Value::str(created_at));
    row.insert("updatedAt".into(), Value::str(now_iso()));
    let row = Value::Object(row);
    hub.meta.put_run_config(project, &id, &json::canonical(&row)).await?;
    ok(row)
}

pub(super) async fn delete_run_config(hub: &Hub, project: &str, body: &Map) -> Answer {
    let id = req_str(body, "id")?;
    if !hub.meta.delete_run_config(project, &id).await? {
        return Err(HubError::NotFound(format!("no run config '{id}'")));
    }
    ok(object([("id", Value::str(id)), ("deleted", Value::Bool(true))]))
}

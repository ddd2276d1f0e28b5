//! The agents platform's routes (spec §8, §11): project secrets, agent registration and
//! listing, datasets, the algorithm catalogue. Its runs (verify jobs, the worker
//! endpoints) are `runs.rs`'s and its agent builds (the release gate) `release.rs`'s,
//! each a route family of its own (`routes::Family`); both name this module's lookups.
//!
//! Secrets are sealed at rest with the hub's secrets key (AES-256-GCM, bound to project
//! and name, as a world's environment secrets are) and never leave the hub through
//! these routes: a create answers `displayValue: "****"`, a list names, scopes and
//! descriptions. Only a worker's claim carries values (`runs.rs`, behind the
//! control-plane secret). Every body is read member by member before anything is
//! stored, and a refusal names the member.

use super::evaluations::Fields;
use super::request::{opt_value, str_or_null, JsonRequest};
use super::response::{ok, Answer};
use super::state::Hub;
use crate::agents::{Agent, Dataset, ProjectSecret};
use crate::error::HubError;
use crate::util::{new_id, now_iso};
use gateway_common::url::unquote_plus;
use gateway_hub_store::StoreError;
use gateway_world::json::{self, object, DumpOptions, Map, Value};

/// The scopes a project secret may have: whose environment it is put into.
const SCOPES: [&str; 3] = ["agent", "worker", "both"];
/// The largest secret value.
const MAX_SECRET_BYTES: usize = 64 * 1024;
/// The most items one dataset import may carry.
const MAX_DATASET_ITEMS: usize = 100_000;
/// What a secret's value is shown as, whatever it is.
pub(super) const MASK: &str = "****";

/// An algorithm the platform runs: what `run start` / `run verify` accept by name and
/// what an agent's `compatibleAlgorithms` is computed from.
pub(super) struct AlgorithmInfo {
    /// The name runs use.
    pub name: &'static str,
    /// Display name.
    pub display_name: &'static str,
    /// One line.
    pub description: &'static str,
    /// Boolean requirements an agent's capabilities must meet (the original's
    /// `compute_compatible_algorithms`: a true requirement names a capability).
    pub requires: &'static [&'static str],
    /// `min_runners`, informational.
    pub min_runners: i64,
}

/// The original's named algorithms, in the order its registry discovers them.
pub(super) const ALGORITHMS: [AlgorithmInfo; 3] = [
    AlgorithmInfo { name: "gepa", display_name: "GEPA", description: "Genetic-Pareto Prompt Adaptation", requires: &[], min_runners: 1 },
    AlgorithmInfo {
        name: "apo",
        display_name: "APO",
        description: "Async Prompt Optimization with textual gradients",
        requires: &[],
        min_runners: 1,
    },
    AlgorithmInfo { name: "evals", display_name: "Evals", description: "Single-pass agent evaluation", requires: &[], min_runners: 1 },
];

/// The algorithm named `name`, or a refusal listing the known ones.
pub(super) fn algorithm(name: &str) -> Result<&'static AlgorithmInfo, HubError> {
    ALGORITHMS.iter().find(|a| a.name == name).ok_or_else(|| {
        HubError::BadRequest(format!(
            "unknown algorithm '{name}': this hub runs {}",
            ALGORITHMS.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// The algorithms whose true requirements are all among `capabilities`.
fn compatible(capabilities: &[String]) -> Vec<Value> {
    ALGORITHMS.iter().filter(|a| a.requires.iter().all(|r| capabilities.iter().any(|c| c == r))).map(|a| Value::str(a.name)).collect()
}

/// The routes of the agents platform (`routes::Family::Agents`).
pub(super) async fn route(request: &JsonRequest<'_>, p: &str) -> Answer {
    let JsonRequest { hub, method, segments, .. } = *request;
    let id = |raw: &str| unquote_plus(raw);
    match (method.as_str(), segments) {
        ("POST", ["secrets"]) => create_secret(hub, p, &request.json()?).await,
        ("GET", ["secrets"]) => list_secrets(hub, p).await,
        ("PUT", ["secrets", name]) => put_secret(hub, p, &id(name), &request.json()?).await,
        ("DELETE", ["secrets", name]) => delete_secret(hub, p, &id(name)).await,
        ("POST", ["agents", "register"]) => register_agent(hub, p, &request.json()?).await,
        ("GET", ["agents"]) => list_agents(hub, p).await,
        ("GET", ["agents", agent]) => show_agent(hub, p, &id(agent)).await,
        ("GET", ["algorithms"]) => ok(object([("algorithms", Value::Array(ALGORITHMS.iter().map(algorithm_json).collect()))])),
        ("POST", ["datasets", "import"]) => import_dataset(hub, p, &request.json()?).await,
        ("GET", ["datasets"]) => list_datasets(hub, p).await,
        ("GET", ["datasets", name]) => show_dataset(hub, p, &id(name)).await,
        _ => Err(request.no_route()),
    }
}

fn algorithm_json(a: &AlgorithmInfo) -> Value {
    let mut requirements = Map::default();
    requirements.insert("gpu".into(), Value::Bool(a.requires.contains(&"gpu")));
    requirements.insert("min_runners".into(), Value::Int(a.min_runners));
    object([
        ("name", Value::str(a.name)),
        ("displayName", Value::str(a.display_name)),
        ("description", Value::str(a.description)),
        ("requirements", Value::Object(requirements)),
    ])
}

// ------------------------------------------------------------------ secrets

/// The additional data a project secret is sealed with: its project and name, so a
/// sealed value copied to another row does not open.
pub(super) fn secret_aad(project: &str, name: &str) -> String {
    format!("project/{project}/{name}")
}

fn secret_json(s: &ProjectSecret) -> Value {
    object([
        ("name", Value::str(&s.name)),
        ("scope", Value::str(&s.scope)),
        ("description", str_or_null(&s.description)),
        ("createdAt", Value::str(&s.created_at)),
        ("updatedAt", Value::str(&s.updated_at)),
    ])
}

/// `(value, scope, description)` of a secret body, each checked.
fn secret_fields(fields: &Fields, scope_default: Option<&str>) -> Result<(String, Option<String>, Option<String>), HubError> {
    let value = fields.string("value")?.unwrap_or_default();
    if value.is_empty() {
        return Err(HubError::BadRequest("'value' is required: a secret's value cannot be empty".into()));
    }
    if value.len() > MAX_SECRET_BYTES {
        return Err(HubError::TooLarge(format!("'value' is over {MAX_SECRET_BYTES} bytes: secret values are limited to 64 KiB")));
    }
    let scope = fields.string("scope")?.or_else(|| scope_default.map(str::to_string));
    if let Some(scope) = &scope {
        if !SCOPES.contains(&scope.as_str()) {
            return Err(HubError::BadRequest(format!("'scope' must be one of agent, worker, both, not '{scope}'")));
        }
    }
    let description = fields.string("description")?;
    if description.as_ref().is_some_and(|d| d.chars().count() > 1000) {
        return Err(HubError::BadRequest("'description' is over 1000 characters".into()));
    }
    Ok((value, scope, description))
}

/// `POST /api/public/secrets`: create (409 when the name is taken: the client then PUTs).
async fn create_secret(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["name", "value", "scope", "description"])?;
    let name = fields.string("name")?.unwrap_or_default();
    super::settings::check_secret_key(&name)?;
    let (value, scope, description) = secret_fields(&fields, Some("agent"))?;
    let now = now_iso();
    let secret = ProjectSecret {
        name: name.clone(),
        scope: scope.unwrap_or_else(|| "agent".into()),
        description,
        created_at: now.clone(),
        updated_at: now,
    };
    let sealed = hub.keys.seal(&secret_aad(project, &name), value.as_bytes())?;
    if !hub.meta.create_project_secret(project, secret.clone(), sealed).await? {
        return Err(HubError::Conflict(format!(
            "a secret named '{name}' already exists: PUT /api/public/secrets/{name} replaces its value"
        )));
    }
    let mut answer = secret_json(&secret);
    if let Value::Object(map) = &mut answer {
        map.insert("displayValue".into(), Value::str(MASK));
    }
    Ok((201, answer))
}

/// `PUT /api/public/secrets/{name}`: replace the value (and the scope and description
/// when sent); a new name is created.
async fn put_secret(hub: &Hub, project: &str, name: &str, body: &Map) -> Answer {
    super::settings::check_secret_key(name)?;
    let fields = Fields::new(body, "");
    fields.only(&["name", "value", "scope", "description"])?;
    if let Some(other) = fields.string("name")?.filter(|n| n != name) {
        return Err(HubError::BadRequest(format!("'name' is '{other}' but the path names '{name}': a secret is not renamed")));
    }
    let (value, scope, description) = secret_fields(&fields, None)?;
    let keep_description = !body.contains_key("description");
    let now = now_iso();
    let existing = hub.meta.project_secrets(project).await?.into_iter().find(|s| s.name == name);
    let secret = ProjectSecret {
        name: name.to_string(),
        scope: scope.or_else(|| existing.as_ref().map(|s| s.scope.clone())).unwrap_or_else(|| "agent".into()),
        description,
        created_at: now.clone(),
        updated_at: now,
    };
    let sealed = hub.keys.seal(&secret_aad(project, name), value.as_bytes())?;
    let created = hub.meta.put_project_secret(project, secret, keep_description, sealed).await?;
    let stored = hub.meta.project_secrets(project).await?.into_iter().find(|s| s.name == name).ok_or(StoreError::Vanished("secret"))?;
    let mut answer = secret_json(&stored);
    if let Value::Object(map) = &mut answer {
        map.insert("displayValue".into(), Value::str(MASK));
        map.insert("created".into(), Value::Bool(created));
    }
    Ok((if created { 201 } else { 200 }, answer))
}

/// `GET /api/public/secrets`: names, scopes, descriptions; never values.
async fn list_secrets(hub: &Hub, project: &str) -> Answer {
    let secrets = hub.meta.project_secrets(project).await?;
    ok(object([("secrets", Value::Array(secrets.iter().map(secret_json).collect()))]))
}

/// `DELETE /api/public/secrets/{name}`.
async fn delete_secret(hub: &Hub, project: &str, name: &str) -> Answer {
    if !hub.meta.delete_project_secret(project, name).await? {
        return Err(HubError::NotFound(format!("no secret named '{name}' in this project")));
    }
    ok(object([("name", Value::str(name)), ("deleted", Value::Bool(true))]))
}

// ------------------------------------------------------------------ agents

/// An agent (or dataset) name: printable, no `/`, at most 200 characters.
fn check_name(what: &str, name: &str) -> Result<(), HubError> {
    if name.trim().is_empty()
        || name.trim() != name
        || name.chars().count() > 200
        || name.contains('/')
        || name.chars().any(char::is_control)
    {
        return Err(HubError::BadRequest(format!(
            "invalid {what} name '{name}': use 1-200 printable characters, no '/' and no leading or trailing space"
        )));
    }
    Ok(())
}

/// Compile `schema`, the body's `member`, as a JSON Schema (draft from its `$schema`,
/// else 2020-12), or refuse it saying why it is not one.
pub(super) fn check_json_schema(member: &'static str, schema: &Value) -> Result<(), HubError> {
    let invalid = |reason: String| HubError::InvalidSchema { member, reason };
    let text = json::dumps(schema, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: true });
    let parsed: serde_json::Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    jsonschema::validator_for(&parsed).map(|_| ()).map_err(|e| invalid(e.to_string()))
}

/// `POST /api/public/agents/register`: create or update an agent by name (201 either
/// way: the original client takes only 201 as success).
async fn register_agent(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["name", "image", "manifest", "capabilities", "resources", "description", "imageDigest", "taskInputSchema"])?;
    let name = fields.string("name")?.unwrap_or_default();
    check_name("agent", &name)?;
    let image = fields.nonblank("image")?.ok_or_else(|| HubError::BadRequest("'image' is required: the agent's container image".into()))?;
    if image.chars().count() > 500 || image.chars().any(char::is_whitespace) {
        return Err(HubError::BadRequest(format!("'image' must be an image reference without spaces, not '{image}'")));
    }
    let manifest = fields.object("manifest")?;
    let capabilities = fields.strings("capabilities")?.unwrap_or_default();
    let resources = fields.object("resources")?;
    let description = fields.string("description")?;
    let image_digest = fields.string("imageDigest")?;
    let schema = fields.object("taskInputSchema")?;
    if let Some(schema) = &schema {
        check_json_schema("taskInputSchema", schema)?;
    }
    let compatible = compatible(&capabilities);
    let mut rest = Map::default();
    rest.insert("manifest".into(), manifest.unwrap_or_else(|| Value::Object(Map::default())));
    rest.insert("capabilities".into(), Value::Array(capabilities.into_iter().map(Value::Str).collect()));
    rest.insert("resources".into(), resources.unwrap_or_else(|| Value::Object(Map::default())));
    rest.insert("description".into(), description.map(Value::Str).unwrap_or(Value::Null));
    rest.insert("imageDigest".into(), image_digest.map(Value::Str).unwrap_or(Value::Null));
    rest.insert("taskInputSchema".into(), schema.unwrap_or(Value::Null));
    rest.insert("compatibleAlgorithms".into(), Value::Array(compatible));
    let now = now_iso();
    let agent = Agent {
        id: new_id("agt_"),
        project_id: project.to_string(),
        name,
        image,
        body: json::canonical(&Value::Object(rest)),
        created_at: now.clone(),
        updated_at: now,
        seq: 0,
    };
    let (stored, created) = hub.meta.upsert_agent(agent).await?;
    let mut answer = agent_json(&stored);
    if let Value::Object(map) = &mut answer {
        map.insert("created".into(), Value::Bool(created));
    }
    Ok((201, answer))
}

/// An agent as the API shows it (`taskInputSchema` and `imageDigest` only when set).
pub(super) fn agent_json(a: &Agent) -> Value {
    let rest = opt_value(&a.body);
    let member = |key: &str| rest.get(key).cloned().unwrap_or(Value::Null);
    let mut out = Map::default();
    out.insert("id".into(), Value::str(&a.id));
    out.insert("name".into(), Value::str(&a.name));
    out.insert("image".into(), Value::str(&a.image));
    out.insert("description".into(), member("description"));
    out.insert("version".into(), member("manifest").get("version").cloned().unwrap_or(Value::Null));
    out.insert("capabilities".into(), member("capabilities"));
    out.insert("compatibleAlgorithms".into(), member("compatibleAlgorithms"));
    for key in ["imageDigest", "taskInputSchema"] {
        if !matches!(member(key), Value::Null) {
            out.insert(key.into(), member(key));
        }
    }
    out.insert("createdAt".into(), Value::str(&a.created_at));
    out.insert("updatedAt".into(), Value::str(&a.updated_at));
    Value::Object(out)
}

async fn list_agents(hub: &Hub, project: &str) -> Answer {
    let agents = hub.meta.agents(project).await?;
    ok(object([("agents", Value::Array(agents.iter().map(agent_json).collect()))]))
}

async fn show_agent(hub: &Hub, project: &str, key: &str) -> Answer {
    let agent = find_agent(hub, project, key).await?;
    let mut answer = agent_json(&agent);
    if let Value::Object(map) = &mut answer {
        let rest = opt_value(&agent.body);
        for key in ["manifest", "resources"] {
            map.insert(key.into(), rest.get(key).cloned().unwrap_or(Value::Null));
        }
    }
    ok(answer)
}

/// An agent of this project by id or name, or a 404 saying how to register one.
pub(super) async fn find_agent(hub: &Hub, project: &str, key: &str) -> Result<Agent, HubError> {
    hub.meta
        .agent(project, key)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("no agent '{key}' in this project: register it with `gateway deploy`")))
}

// ------------------------------------------------------------------ datasets

/// `POST /api/public/datasets/import`: `{name, items: [{input, expectedOutput?,
/// metadata?}], description?}`. A known name keeps its id and has its items replaced.
async fn import_dataset(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["name", "items", "description"])?;
    let name = fields.string("name")?.unwrap_or_default();
    check_name("dataset", &name)?;
    let description = fields.string("description")?;
    let items = match body.get("items") {
        Some(Value::Array(items)) => items,
        Some(other) => return Err(HubError::BadRequest(format!("'items' must be a list of {{input}} objects, not {}", other.type_name()))),
        None => return Err(HubError::BadRequest("'items' is required: a list of {input} objects".into())),
    };
    if items.is_empty() {
        return Err(HubError::BadRequest("'items' is empty: a dataset needs at least one item".into()));
    }
    if items.len() > MAX_DATASET_ITEMS {
        return Err(HubError::TooLarge(format!("{} items: one import carries at most {MAX_DATASET_ITEMS}", items.len())));
    }
    let mut texts = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(map) = item else {
            return Err(HubError::BadRequest(format!("'items[{i}]' must be an object {{input: …}}, not {}", item.type_name())));
        };
        let item_fields = Fields::new(map, format!("items[{i}]."));
        item_fields.only(&["input", "expectedOutput", "metadata"])?;
        if !map.contains_key("input") {
            return Err(HubError::BadRequest(format!("'items[{i}].input' is required")));
        }
        item_fields.object("metadata")?;
        texts.push(json::canonical(item));
    }
    let now = now_iso();
    let dataset = Dataset {
        id: new_id("ds_"),
        project_id: project.to_string(),
        name,
        description,
        item_count: texts.len() as i64,
        created_at: now.clone(),
        updated_at: now,
        seq: 0,
    };
    let (stored, created) = hub.meta.put_dataset(dataset, texts).await?;
    Ok((
        if created { 201 } else { 200 },
        object([
            ("datasetId", Value::str(&stored.id)),
            ("datasetName", Value::str(&stored.name)),
            ("itemCount", Value::Int(stored.item_count)),
            ("created", Value::Bool(created)),
        ]),
    ))
}

fn dataset_json(d: &Dataset) -> Map {
    let mut out = Map::default();
    out.insert("id".into(), Value::str(&d.id));
    out.insert("name".into(), Value::str(&d.name));
    out.insert("description".into(), str_or_null(&d.description));
    out.insert("itemCount".into(), Value::Int(d.item_count));
    out.insert("createdAt".into(), Value::str(&d.created_at));
    out.insert("updatedAt".into(), Value::str(&d.updated_at));
    out
}

/// `GET /api/public/datasets`: `{data: [{id, name, …}]}` (what the worker reads).
async fn list_datasets(hub: &Hub, project: &str) -> Answer {
    let datasets = hub.meta.datasets(project).await?;
    let count = datasets.len() as i64;
    ok(object([
        ("data", Value::Array(datasets.iter().map(|d| Value::Object(dataset_json(d))).collect())),
        ("meta", object([("totalItems", Value::Int(count))])),
    ]))
}

/// `GET /api/public/datasets/{name}`: the dataset with its items `[{id, datasetId, input, …}]`.
async fn show_dataset(hub: &Hub, project: &str, key: &str) -> Answer {
    let dataset = find_dataset(hub, project, key).await?;
    let items = hub.meta.dataset_items(&dataset.id, 0, MAX_DATASET_ITEMS as i64).await?;
    let items = items
        .into_iter()
        .map(|(idx, text)| {
            let mut item = Map::default();
            item.insert("id".into(), Value::str(format!("{}-{idx}", dataset.id)));
            item.insert("datasetId".into(), Value::str(&dataset.id));
            if let Value::Object(stored) = opt_value(&text) {
                item.extend(stored);
            }
            Value::Object(item)
        })
        .collect();
    let mut out = dataset_json(&dataset);
    out.insert("items".into(), Value::Array(items));
    ok(Value::Object(out))
}

/// A dataset of this project by id or name, or a 404 saying how to upload one.
pub(super) async fn find_dataset(hub: &Hub, project: &str, key: &str) -> Result<Dataset, HubError> {
    hub.meta
        .dataset(project, key)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("no dataset '{key}' in this project: upload it with `gateway dataset upload`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_and_compatibility() {
        assert!(algorithm("gepa").is_ok());
        let refused = algorithm("sgd").err().unwrap().to_string();
        assert_eq!(refused, "unknown algorithm 'sgd': this hub runs gepa, apo, evals");
        assert_eq!(compatible(&[]).len(), 3);
    }

    #[test]
    fn names_and_schemas() {
        assert!(check_name("agent", "crm-analyst").is_ok());
        assert!(check_name("agent", " x").is_err());
        assert!(check_name("dataset", "a/b").is_err());
        let schema = json::parse_clean(r#"{"type": "object", "required": ["q"]}"#).unwrap();
        assert!(check_json_schema("taskInputSchema", &schema).is_ok());
        let broken = json::parse_clean(r#"{"type": "nonsense"}"#).unwrap();
        assert!(check_json_schema("taskInputSchema", &broken).is_err());
    }
}

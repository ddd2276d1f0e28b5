//! `connector ingest`: the successful captures become the world's `data/initial.json`.
//!
//! Rows are projected (results path, `drop`, `explode` children first), deduped by
//! primary key against what the batch already holds (insert / update / skip), proven
//! in a scratch copy of the world, and only then written and recompiled.

use crate::capture::{CAPTURES, MANIFEST};
use crate::spec::{load_spec, Operation, Spec};
use gateway_world::compiler::Contract;
use gateway_world::data::tempfile_dir::Scratch;
use gateway_world::error::{ContractError, Error, Result};
use gateway_world::files::{read_json, sha256_hex};
use gateway_world::json::{dumps, object, parse, python_equal, python_repr, DumpOptions, Map, Value};
use gateway_world::snapshot::data_files;
use gateway_world::store::Store;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// What an ingest did.
#[derive(Debug, Clone)]
pub struct IngestOutcome {
    /// The batch id now in `data/initial.json`.
    pub batch: String,
    /// Mutations the batch holds.
    pub mutations: usize,
    /// Rows per entity the world seeds with.
    pub entity_counts: Vec<(String, i64)>,
    /// Whether anything was written.
    pub changed: bool,
}

const PYTHON_JSON: DumpOptions = DumpOptions { sort_keys: true, ensure_ascii: true, indent: None, compact: false };

fn ingest_error(message: impl Into<String>) -> ContractError {
    ContractError::new("ingest", message, format!("/{CAPTURES}"))
}

/// The primary-key identity of a row, or None when the entity has no key or the row lacks one.
fn key(contract: &Contract, entity: &str, row: &Value) -> Option<Vec<String>> {
    let fields = contract.entity(entity).map(|e| e.primary_key.clone()).unwrap_or_default();
    if fields.is_empty() {
        return None;
    }
    fields.iter().map(|f| row.get(f).map(|v| dumps(v, PYTHON_JSON))).collect()
}

fn dig<'a>(body: &'a Value, path: &str) -> Option<&'a Value> {
    let mut here = body;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        here = here.as_object()?.get(part)?;
    }
    Some(here)
}

/// The entity rows one vendor row yields: children first, then the parent without its dropped fields.
fn project(operation: &Operation, raw: &Map, file: &str) -> std::result::Result<Vec<(String, Value)>, ContractError> {
    let mut out = Vec::new();
    for explode in &operation.explode {
        let items = match raw.get(&explode.field) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(items)) => items,
            Some(_) => return Err(ingest_error(format!("{} is not an array in {file}", explode.field))),
        };
        for item in items {
            let Value::Object(item) = item else {
                return Err(ingest_error(format!("An item of {} in {file} is not an object", explode.field)));
            };
            let mut child = Map::default();
            for (name, source) in &explode.carry {
                child.insert(name.clone(), raw.get(source).cloned().unwrap_or(Value::Null));
            }
            for (name, source) in &explode.take {
                child.insert(name.clone(), item.get(source).cloned().unwrap_or(Value::Null));
            }
            out.push((explode.entity.clone(), Value::Object(child)));
        }
    }
    let parent: Map = raw.iter().filter(|(k, _)| !operation.drop.contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
    out.push((operation.entity.clone().unwrap_or_default(), Value::Object(parent)));
    Ok(out)
}

/// Insert what is new, update what changed, skip what the batch already holds.
fn mutations(root: &Path, spec: &Spec, contract: &Contract, prior: &[Value]) -> std::result::Result<Vec<Value>, ContractError> {
    let manifest_path = root.join(CAPTURES).join(MANIFEST);
    if !manifest_path.is_file() {
        return Err(ingest_error("No captures to ingest; run capture first"));
    }
    let mut held: HashMap<(String, Vec<String>), Value> = HashMap::new();
    for mutation in prior {
        let op = mutation.get("op").and_then(Value::as_str);
        let (Some("insert" | "update"), Some(value @ Value::Object(_)), Some(entity)) =
            (op, mutation.get("value"), mutation.get("entity").and_then(Value::as_str))
        else {
            continue;
        };
        if let Some(k) = key(contract, entity, value) {
            held.insert((entity.to_string(), k), value.clone());
        }
    }
    let manifest_text = std::fs::read_to_string(&manifest_path).map_err(|_| ingest_error(format!("Cannot read {CAPTURES}/{MANIFEST}")))?;
    let Ok(Value::Array(entries)) = parse(&manifest_text).map(|p| p.value) else {
        return Err(ingest_error(format!("{CAPTURES}/{MANIFEST} is not a JSON list")));
    };
    let mut out = Vec::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for entry in &entries {
        let status = entry.get("status").and_then(Value::as_f64).unwrap_or(0.0);
        if !(200.0..300.0).contains(&status) {
            continue;
        }
        let Some(operation) = entry.get("operation").and_then(Value::as_str).and_then(|name| spec.operation(name)) else {
            continue;
        };
        if operation.entity.is_none() {
            continue;
        }
        let file = entry.get("file").and_then(Value::as_str).unwrap_or_default().to_string();
        let digest = entry.get("sha256").and_then(Value::as_str).unwrap_or_default().to_string();
        let path = root.join(&file);
        if file.split('/').any(|part| part == "..") || !file.starts_with(&format!("{CAPTURES}/")) || !path.is_file() {
            return Err(ingest_error(format!("Capture listed in the manifest is missing: {file}")));
        }
        let encoded = std::fs::read(&path).map_err(|_| ingest_error(format!("Capture listed in the manifest is missing: {file}")))?;
        if sha256_hex(&encoded) != digest {
            return Err(ingest_error(format!("Capture changed since it was recorded: {file}")));
        }
        let record = std::str::from_utf8(&encoded)
            .ok()
            .and_then(|t| parse(t).ok())
            .map(|p| p.value)
            .ok_or_else(|| ingest_error(format!("Capture is not JSON: {file}")))?;
        let body = record.get("body").cloned().unwrap_or(Value::Null);
        let rows = if operation.results.is_empty() { Some(&body) } else { dig(&body, &operation.results) };
        let rows: Vec<Value> = match rows {
            None | Some(Value::Null) => continue,
            Some(Value::Object(map)) => vec![Value::Object(map.clone())],
            Some(Value::Array(items)) => items.clone(),
            Some(_) => {
                return Err(ingest_error(format!(
                    "results path {} is not an array in {file}",
                    python_repr(&Value::str(&operation.results))
                )))
            }
        };
        for raw in &rows {
            let Value::Object(raw) = raw else {
                return Err(ingest_error(format!("A row in {file} is not an object")));
            };
            for (entity, row) in project(operation, raw, &file)? {
                let identity = sha256_hex(dumps(&row, PYTHON_JSON).as_bytes());
                if !seen.insert((entity.clone(), identity.clone())) {
                    continue;
                }
                let row_key = key(contract, &entity, &row);
                let existing = row_key.as_ref().and_then(|k| held.get(&(entity.clone(), k.clone())));
                if existing.is_some_and(|e| python_equal(e, &row)) {
                    continue;
                }
                let mut mutation = vec![
                    ("op", Value::str(if existing.is_some() { "update" } else { "insert" })),
                    ("entity", Value::str(&entity)),
                    ("value", row.clone()),
                    (
                        "source",
                        object([
                            ("record", Value::Str(format!("{}:{}:{identity}", spec.slug, operation.name))),
                            (
                                "evidence",
                                Value::Array(vec![object([
                                    ("reference", Value::Str(format!("capture:{file}"))),
                                    ("digest", Value::str(&digest)),
                                ])]),
                            ),
                        ]),
                    ),
                ];
                if existing.is_some() {
                    let fields = contract.entity(&entity).map(|e| e.primary_key.clone()).unwrap_or_default();
                    let key_value: Map = fields.iter().map(|f| (f.clone(), row.get(f).cloned().unwrap_or(Value::Null))).collect();
                    mutation.push(("key", Value::Object(key_value)));
                }
                out.push(object(mutation));
            }
        }
    }
    Ok(out)
}

/// Apply the world's data files in a scratch store, audit it, and count rows per entity.
fn materialized_counts(world: &Path, contract: &Arc<Contract>) -> Result<Vec<(String, i64)>> {
    let scratch = Scratch::new("gateway-ingest")?;
    let mut store = Store::create(&scratch.path().join("world.db"), contract.clone())?;
    for path in data_files(world) {
        store.apply_batch(&read_json(&path)?)?;
    }
    store.audit()?;
    store.counts()
}

fn batch_text(batch: &Value) -> String {
    let options = DumpOptions { sort_keys: true, ensure_ascii: true, indent: Some(1), compact: false };
    format!("{}\n", dumps(batch, options))
}

/// The version number the next `…initial.vN` id takes.
fn next_version(prior_id: &str) -> u64 {
    let Some((_, digits)) = prior_id.rsplit_once(".v") else { return 1 };
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse::<u64>().map(|n| n + 1).unwrap_or(1)
    } else {
        1
    }
}

/// Seed the world from its captures, gated by the contract.
pub fn ingest(world: &Path, batch_id: Option<&str>) -> Result<IngestOutcome> {
    let spec = load_spec(world)?;
    // The contract is built once: the staged proof and the final check reuse it.
    let opened = gateway_world::World::open(world)?;
    let contract = opened.compile(true)?;
    let initial_path = world.join("data/initial.json");
    let previous = if initial_path.is_file() { Some(read_json(&initial_path)?) } else { None };
    let prior: Vec<Value> = previous.as_ref().and_then(|p| p.get("mutations")).and_then(Value::as_array).cloned().unwrap_or_default();
    let package_id = contract.package().get("id").and_then(Value::as_str).unwrap_or_default().to_string();
    let prior_id = match &previous {
        Some(p) => p.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
        None => format!("{package_id}.initial.v0"),
    };
    let fresh = mutations(world, &spec, &contract, &prior)?;
    if fresh.is_empty() {
        if prior.is_empty() {
            return Err(ingest_error("No successful capture maps to an entity; give the operation an entity and results path").into());
        }
        let counts = materialized_counts(world, &contract)?;
        return Ok(IngestOutcome { batch: prior_id, mutations: prior.len(), entity_counts: counts, changed: false });
    }
    let id = batch_id.map(str::to_string).unwrap_or_else(|| format!("{package_id}.initial.v{}", next_version(&prior_id)));
    let total = prior.len() + fresh.len();
    let batch = object([
        ("id", Value::Str(id.clone())),
        ("target", contract.target().clone()),
        ("mapping", object([("id", Value::Str(format!("connector-capture:{}", spec.slug))), ("version", Value::str("1"))])),
        ("coverage", Value::str("partial")),
        ("mutations", Value::Array(prior.into_iter().chain(fresh).collect())),
    ]);
    let text = batch_text(&batch);
    let counts = {
        let scratch = Scratch::new("gateway-ingest")?;
        let staged = scratch.path().join("world");
        gateway_world::import::copy_tree(world, &staged)?;
        let staged_initial = staged.join("data/initial.json");
        std::fs::create_dir_all(staged.join("data")).map_err(|e| Error::io(e, &staged))?;
        // The copy keeps links as links: unlink first, so the write never reaches through one.
        let _ = std::fs::remove_file(&staged_initial);
        std::fs::write(&staged_initial, &text).map_err(|e| Error::io(e, &staged_initial))?;
        // The copy's schema and artifacts are the world's: so is its contract.
        materialized_counts(&staged, &contract)?
    };
    if let Some(parent) = initial_path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(e, parent))?;
    }
    gateway_world::files::write_atomic(&initial_path, text.as_bytes()).map_err(|e| Error::io(e, &initial_path))?;
    opened.compile(true)?;
    opened.check()?;
    Ok(IngestOutcome { batch: id, mutations: total, entity_counts: counts, changed: true })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_follow_the_prior_id() {
        assert_eq!(next_version("acme.initial.v0"), 1);
        assert_eq!(next_version("acme.initial.v12"), 13);
        assert_eq!(next_version("acme.seed"), 1);
        assert_eq!(next_version("acme.v2x"), 1);
    }
}

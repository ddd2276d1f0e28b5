//! Planning rows into batch mutations: the original's `_plan`, `_held` and
//! `seed_batch`, shared by scenario overlays, imports and live seeding.

use crate::compiler::Contract;
use crate::error::{fail, ContractError, Result};
use crate::files::sha256_hex;
use crate::json::{dumps, object, python_equal, DumpOptions, Value};
use crate::store::{new_batch_id, Store};
use indexmap::IndexMap;

/// Rows by entity, in the order they were read.
pub type Rows = IndexMap<String, Vec<Value>>;

/// A planning key: `(entity, json.dumps of each primary-key value)`.
pub type HeldKey = (String, Vec<String>);

/// Rows already held, by planning key, in insertion order.
pub type Held = IndexMap<HeldKey, Value>;

/// The modes rows can be planned in.
pub const MODES: [&str; 2] = ["append", "replace"];

/// How rows meet what the world already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Mode {
    /// Upsert by primary key.
    #[default]
    Append,
    /// The named entities' rows are replaced by the batch's.
    Replace,
}

impl Mode {
    /// Every mode, in the original's order.
    pub const ALL: [Mode; 2] = [Mode::Append, Mode::Replace];

    /// The original's spelling (`append`, `replace`): on the wire and in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Append => "append",
            Mode::Replace => "replace",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Mode {
    type Err = ContractError;

    /// A stored or sent spelling; anything else is the engine's refusal.
    fn from_str(text: &str) -> Result<Mode, ContractError> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
            .ok_or_else(|| ContractError::new("mode", "mode must be append or replace", "/mode"))
    }
}

/// The planning key of a row (None when the entity is unknown or a key field is missing).
/// Note `1` and `1.0` are different keys here, as in the original.
pub fn plan_key(contract: &Contract, entity: &str, row: &Value) -> Option<Vec<String>> {
    let fields = &contract.entity(entity)?.primary_key;
    let map = row.as_object()?;
    fields.iter().map(|f| map.get(f).map(|v| dumps(v, DumpOptions::CLI))).collect()
}

/// What a journal of mutations leaves in each entity (the original's `_held`), of the
/// rows `wanted` accepts: planning consults only some (see [`consulted`]), and a
/// journal can be as large as the world's data, so the others are not copied.
pub fn held_from<M: std::borrow::Borrow<Value>>(
    contract: &Contract,
    mutations: impl IntoIterator<Item = M>,
    wanted: &dyn Fn(&HeldKey) -> bool,
) -> Held {
    let mut held = Held::new();
    for mutation in mutations {
        let mutation = mutation.borrow();
        let entity = mutation.get("entity").and_then(Value::as_str).unwrap_or_default();
        let op = mutation.get("op").and_then(Value::as_str);
        let key_object = mutation.get("key").filter(|k| k.as_object().is_some());
        let keyed = |of: &Value| plan_key(contract, entity, of).map(|key| (entity.to_string(), key)).filter(|k| wanted(k));
        if op == Some("delete") {
            if let Some(held_key) = key_object.and_then(keyed) {
                held.shift_remove(&held_key);
            }
            continue;
        }
        if !matches!(op, Some("insert" | "update")) {
            continue;
        }
        let value = mutation.get("value");
        if op == Some("update") && key_object.is_some() {
            if let (Some(held_key), Some(Value::Object(patch))) = (key_object.and_then(keyed), value) {
                if let Some(Value::Object(current)) = held.get_mut(&held_key) {
                    for (k, v) in patch {
                        current.insert(k.clone(), v.clone());
                    }
                }
            }
            continue;
        }
        if let Some(value @ Value::Object(_)) = value {
            if let Some(held_key) = keyed(value) {
                held.insert(held_key, value.clone());
            }
        }
    }
    held
}

/// The held rows [`plan`] consults for `rows` in `mode`: a replace, every row of the
/// entities `rows` names (those not sent again are deleted); an append, only the rows
/// with the keys `rows` sends.
pub fn consulted<'r>(contract: &'r Contract, rows: &'r Rows, mode: &str) -> impl Fn(&HeldKey) -> bool + 'r {
    let replace = mode == "replace";
    let incoming: std::collections::HashSet<HeldKey> = if replace {
        Default::default()
    } else {
        rows.iter()
            .flat_map(|(entity, listed)| listed.iter().filter_map(move |row| Some((entity.clone(), plan_key(contract, entity, row)?))))
            .collect()
    };
    move |held_key: &HeldKey| if replace { rows.contains_key(&held_key.0) } else { incoming.contains(held_key) }
}

/// The mutations that take the world from `held` to `held` + `rows`.
pub fn plan(contract: &Contract, rows: &Rows, mode: &str, held: &mut Held) -> Result<Vec<Value>, ContractError> {
    let mut mutations = Vec::new();
    if mode == "replace" {
        let incoming: std::collections::HashSet<(String, Option<Vec<String>>)> = rows
            .iter()
            .filter(|(entity, _)| contract.entity(entity).is_some())
            .flat_map(|(entity, listed)| {
                listed.iter().filter(|r| r.as_object().is_some()).map(move |row| (entity.clone(), plan_key(contract, entity, row)))
            })
            .collect();
        // One pass over the held rows (a replace of a large entity deletes most of
        // them: removing one by one from an ordered map would be quadratic).
        let mut kept = Held::with_capacity(held.len());
        for (held_key, value) in std::mem::take(held) {
            if !rows.contains_key(&held_key.0) || incoming.contains(&(held_key.0.clone(), Some(held_key.1.clone()))) {
                kept.insert(held_key, value);
                continue;
            }
            let fields = &contract.entity(&held_key.0).expect("known entity").primary_key;
            let key = object(fields.iter().map(|f| (f.clone(), value.get(f).cloned().unwrap_or_default())));
            mutations.push(object([
                ("op", Value::str("delete")),
                ("entity", Value::str(&held_key.0)),
                ("key", key),
                ("source", object([("record", Value::Str(format!("data-import:{}:replace", held_key.0)))])),
            ]));
        }
        *held = kept;
    }
    for (entity, listed) in rows {
        let Some(declared) = contract.entity(entity) else {
            let names: Vec<&str> = contract.entities.iter().map(|e| e.name.as_str()).collect();
            return fail("entity", format!("Unknown entity {entity}; the world has {}", names.join(", ")), format!("/{entity}"));
        };
        for (index, row) in listed.iter().enumerate() {
            let Some(map) = row.as_object() else {
                return fail("rows", "A row must be an object", format!("/{entity}/{index}"));
            };
            if let Some(missing) = declared.primary_key.iter().find(|f| !map.contains_key(*f)) {
                return fail(
                    "primary_key",
                    format!("Row is missing primary key field {}", crate::json::python_repr(&Value::str(missing))),
                    format!("/{entity}/{index}"),
                );
            }
            let key = plan_key(contract, entity, row).expect("all key fields present");
            let held_key = (entity.clone(), key);
            let existing = held.get(&held_key);
            if existing.is_some_and(|e| python_equal(e, row)) {
                continue;
            }
            let identity = &sha256_hex(dumps(row, DumpOptions::CLI).as_bytes())[..16];
            let mut mutation = vec![
                ("op", Value::str(if existing.is_some() { "update" } else { "insert" })),
                ("entity", Value::str(entity)),
                ("value", row.clone()),
                ("source", object([("record", Value::Str(format!("data-import:{entity}:{identity}")))])),
            ];
            if existing.is_some() {
                mutation.push(("key", object(declared.primary_key.iter().map(|f| (f.clone(), map[f].clone())))));
            }
            mutations.push(object(mutation));
            held.insert(held_key, row.clone());
        }
    }
    Ok(mutations)
}

/// The batch that seeds a live store with `rows` (the original's `seed_batch`).
pub fn seed_batch(store: &Store, rows: &Rows, mode: &str, batch_id: Option<&str>) -> Result<Value> {
    let contract = store.contract().clone();
    if !MODES.contains(&mode) {
        return Err(ContractError::new("mode", format!("mode must be one of {}", MODES.join(", ")), "/mode").into());
    }
    let mut held = Held::new();
    for (entity, listed) in rows {
        let Some(declared) = contract.entity(entity) else { continue };
        if mode == "replace" {
            for value in store.list(entity)? {
                if let Some(key) = plan_key(&contract, entity, &value) {
                    held.insert((entity.clone(), key), value);
                }
            }
            continue;
        }
        for row in listed {
            let Some(map) = row.as_object() else { continue };
            let Some(key) = plan_key(&contract, entity, row) else { continue };
            let held_key = (entity.clone(), key);
            if held.contains_key(&held_key) {
                continue;
            }
            let key_object = object(declared.primary_key.iter().map(|f| (f.clone(), map[f].clone())));
            if let Ok(Some(value)) = store.get(entity, &key_object) {
                held.insert(held_key, value);
            }
        }
    }
    let mutations = plan(&contract, rows, mode, &mut held)?;
    Ok(object([
        ("id", Value::Str(batch_id.map(str::to_string).unwrap_or_else(|| format!("seed-{}", new_batch_id())))),
        ("target", contract.target().clone()),
        ("mapping", object([("id", Value::str("data-import")), ("version", Value::str("1"))])),
        ("coverage", Value::str("partial")),
        ("mutations", Value::Array(mutations)),
    ]))
}

/// Rows from a JSON object `{entity: [rows]}`; None if the value has another shape.
pub fn rows_from_object(value: &Value) -> Option<Rows> {
    value.as_object()?.iter().map(|(k, v)| v.as_array().map(|rows| (k.clone(), rows.clone()))).collect()
}

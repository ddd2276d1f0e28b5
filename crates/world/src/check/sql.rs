//! The exact apply: the staged rows applied to a scratch copy of the snapshot in one
//! rolled-back SQLite transaction, so every constraint speaks with SQLite's own
//! judgement. Used for `replace` and whenever the in-memory apply
//! ([`super::memory`]) cannot decide a case exactly.

use super::held::Held;
use super::{dependency_order, field_of, refusal, Staged, Validators};
use crate::compiler::Contract;
use crate::dialect::validate;
use crate::error::Result;
use crate::json::{object, Value};
use crate::store::{key_of, Store};
use std::collections::HashSet;

/// Apply the held rows as one batch in the scratch copy, as the original's
/// `seed_batch` + `apply_batch` would (replace deletes first, then per row: skip an
/// identical row, update with a shallow merge, or insert; then the commit-time
/// audit). Returns the store's refusal mapped back to its row, or the counts after
/// the batch. The copy is thrown away, so it keeps no journal to roll back with.
pub(super) fn apply(contract: &Contract, validators: &Validators, store: &Store, held: &Held, mode: &str) -> Result<Result<Value, Value>> {
    let conn = store.connection();
    conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -32768; BEGIN")?;
    match apply_rows(contract, validators, conn, held, mode)? {
        Some(refused) => Ok(Err(refused)),
        None => Ok(Ok(store.counts_value()?)),
    }
}

fn is_constraint(error: &rusqlite::Error) -> bool {
    matches!(error, rusqlite::Error::SqliteFailure(failure, _) if failure.code == rusqlite::ErrorCode::ConstraintViolation)
}

fn apply_rows(contract: &Contract, validators: &Validators, conn: &rusqlite::Connection, held: &Held, mode: &str) -> Result<Option<Value>> {
    use crate::compiler::quote;
    use rusqlite::OptionalExtension as _;
    let order: Vec<String> = dependency_order(contract).into_iter().filter(|n| held.has_entity(n)).collect();
    let row_refusal = |name: &str, staged: &Staged, field: Option<&str>, detail: &str| {
        refusal(Some(staged.chunk), Some(staged.index), Some(name), Some(&staged.value()), field, detail, Some(contract))
    };
    const CONFLICT: &str = "Primary or unique key conflicts with existing state";
    let mut deleted = HashSet::new();
    if mode == "replace" {
        for name in &order {
            let table = quote(name);
            let doomed: Vec<String> = {
                let mut statement = conn.prepare(&format!("SELECT _key FROM {table} ORDER BY _key"))?;
                let keys = statement.query_map([], |r| r.get::<_, String>(0))?;
                let mut doomed = Vec::new();
                for key in keys {
                    let key = key?;
                    if !held.contains(name, &key, None)? {
                        doomed.push(key);
                    }
                }
                doomed
            };
            let mut delete = conn.prepare(&format!("DELETE FROM {table} WHERE _key = ?1"))?;
            for key in doomed {
                delete.execute([&key])?;
                deleted.insert(name.clone());
            }
        }
    }
    let mut updated: Vec<(&str, Staged, Value)> = Vec::new();
    for name in &order {
        let declared = contract.entity(name).expect("staged entity");
        let table = quote(name);
        let mut select = conn.prepare(&format!("SELECT payload FROM {table} WHERE _key = ?1"))?;
        let mut insert = conn.prepare(&format!("INSERT INTO {table} (_key, payload) VALUES (?1, ?2)"))?;
        let mut update = conn.prepare(&format!("UPDATE {table} SET payload = ?1 WHERE _key = ?2"))?;
        // One scan of the keys held, so a new row costs no lookup (unless memory is bounded).
        let count: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?;
        let stored: Option<HashSet<String>> = if super::memory::scan_worthwhile(count, held.len(name)?, held.spilled()) {
            let mut statement = conn.prepare(&format!("SELECT _key FROM {table}"))?;
            let keys = statement.query_map([], |r| r.get::<_, String>(0))?;
            Some(keys.collect::<rusqlite::Result<_>>()?)
        } else {
            None
        };
        let mut refused = None;
        held.for_each(name, |key, staged| {
            let existing: Option<String> = match &stored {
                Some(keys) if !keys.contains(key) => None,
                _ => select.query_row([key], |r| r.get(0)).optional()?,
            };
            let Some(existing) = existing else {
                return match insert.execute([key, &staged.text]) {
                    Ok(_) => Ok(true),
                    Err(error) if is_constraint(&error) => {
                        refused = Some(row_refusal(name, staged, None, CONFLICT));
                        Ok(false)
                    }
                    Err(error) => Err(error.into()),
                };
            };
            let current = crate::json::parse_clean(&existing).unwrap_or_default();
            let value = staged.value();
            if crate::json::python_equal(&current, &value) {
                return Ok(true);
            }
            let mut merged = current.as_object().cloned().unwrap_or_default();
            for (k, v) in value.as_object().expect("staged object") {
                merged.insert(k.clone(), v.clone());
            }
            let merged = Value::Object(merged);
            if !validators[name].accepts(&merged) {
                if let Err(error) = validate(&declared.schema, &merged, &format!("{}/schema", declared.location), "") {
                    refused = Some(row_refusal(name, staged, field_of(&error), &error.message));
                    return Ok(false);
                }
            }
            match update.execute([&crate::json::canonical(&merged), key]) {
                Ok(_) => {
                    updated.push((name, staged.clone(), merged));
                    Ok(true)
                }
                Err(error) if is_constraint(&error) => {
                    refused = Some(row_refusal(name, staged, None, CONFLICT));
                    Ok(false)
                }
                Err(error) => Err(error.into()),
            }
        })?;
        if refused.is_some() {
            return Ok(refused);
        }
    }
    // The commit-time audit: inserted rows were reference-checked against the batch
    // and the parent; an update keeps the references of the row it merges into.
    for (name, staged, merged) in &updated {
        let declared = contract.entity(name).expect("staged entity");
        for relationship in &declared.relationships {
            let keys: Vec<Option<&Value>> = relationship
                .fields
                .iter()
                .map(|f| crate::compiler::payload_value(merged, f).filter(|v| !matches!(v, Value::Null)))
                .collect();
            if keys.iter().all(Option::is_none) {
                continue;
            }
            if keys.iter().any(Option::is_none) {
                return Ok(Some(row_refusal(name, staged, None, "Composite references must be wholly present or wholly absent/null")));
            }
            let target = contract.entity(&relationship.target).expect("compiled target");
            let wanted = object(target.primary_key.iter().cloned().zip(keys.into_iter().map(|k| k.expect("present").clone())));
            let wanted = match key_of(target, &wanted, true) {
                Ok(wanted) => wanted,
                Err(error) => return Ok(Some(row_refusal(name, staged, field_of(&error), &error.message))),
            };
            let exists = conn.prepare_cached(&format!("SELECT 1 FROM {} WHERE _key = ?1", quote(&target.name)))?.exists([&wanted])?;
            if !exists {
                return Ok(Some(row_refusal(
                    name,
                    staged,
                    None,
                    "Relationship target does not exist; incomplete evidence requires an explicit mapping decision",
                )));
            }
        }
    }
    if !deleted.is_empty() {
        for entity in contract.entities.iter().filter(|e| e.relationships.iter().any(|r| deleted.contains(&r.target))) {
            if conn.prepare(&format!("PRAGMA foreign_key_check({})", quote(&entity.name)))?.exists([])? {
                return Ok(Some(refusal(None, None, None, None, None, "Persisted SQLite relationship check failed", None)));
            }
        }
    }
    Ok(None)
}

//! The exact apply: the staged rows applied to a scratch copy of the snapshot in one
//! rolled-back SQLite transaction, so every constraint speaks with SQLite's own
//! judgement. Used for `replace` and whenever the in-memory apply
//! ([`super::memory`]) cannot decide a case exactly.

use super::{dependency_order, field_of, refusal, Stage, Staged, Validators};
use crate::compiler::Contract;
use crate::dialect::validate;
use crate::error::Result;
use crate::json::{object, Value};
use crate::store::{key_of, Store};
use std::collections::HashSet;

/// Apply the staged rows as one batch in the scratch copy, as the original's
/// `seed_batch` + `apply_batch` would (replace deletes first, then per row: skip an
/// identical row, update with a shallow merge, or insert; then the commit-time
/// audit), and roll it back. Returns the store's refusal mapped back to its row,
/// and the counts after the batch (the parent's when it was refused).
pub(super) fn apply(
    contract: &Contract,
    validators: &Validators,
    store: &Store,
    stage: &Stage,
    mode: &str,
) -> Result<(Option<Value>, Value)> {
    let conn = store.connection();
    conn.execute_batch("PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA cache_size = -32768; BEGIN")?;
    let outcome = apply_rows(contract, validators, conn, stage, mode);
    let counts = match &outcome {
        Ok(None) => Some(store.counts_value()),
        _ => None,
    };
    conn.execute_batch("ROLLBACK")?;
    let refused = outcome?;
    let counts = match counts {
        Some(counts) => counts?,
        None => store.counts_value()?,
    };
    Ok((refused, counts))
}

fn is_constraint(error: &rusqlite::Error) -> bool {
    matches!(error, rusqlite::Error::SqliteFailure(failure, _) if failure.code == rusqlite::ErrorCode::ConstraintViolation)
}

fn apply_rows(
    contract: &Contract,
    validators: &Validators,
    conn: &rusqlite::Connection,
    stage: &Stage,
    mode: &str,
) -> Result<Option<Value>> {
    use crate::compiler::quote;
    let order: Vec<String> = dependency_order(contract).into_iter().filter(|n| stage.rows.contains_key(n)).collect();
    let row_refusal = |name: &str, staged: &Staged, field: Option<&str>, detail: &str| {
        refusal(Some(staged.chunk), Some(staged.index), Some(name), Some(&staged.value()), field, detail, Some(contract))
    };
    let mut deleted = HashSet::new();
    if mode == "replace" {
        for name in &order {
            let table = quote(name);
            let incoming = &stage.rows[name];
            let doomed: Vec<String> = {
                let mut statement = conn.prepare(&format!("SELECT _key FROM {table} ORDER BY _key"))?;
                let keys = statement.query_map([], |r| r.get::<_, String>(0))?;
                let mut doomed = Vec::new();
                for key in keys {
                    let key = key?;
                    if !incoming.contains_key(&key) {
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
    let mut updated: Vec<(&str, &Staged, Value)> = Vec::new();
    for name in &order {
        let declared = contract.entity(name).expect("staged entity");
        let table = quote(name);
        let mut select = conn.prepare(&format!("SELECT payload FROM {table} WHERE _key = ?1"))?;
        let mut insert = conn.prepare(&format!("INSERT INTO {table} (_key, payload) VALUES (?1, ?2)"))?;
        let mut update = conn.prepare(&format!("UPDATE {table} SET payload = ?1 WHERE _key = ?2"))?;
        // One scan of the keys held, so a new row costs no lookup.
        let held: HashSet<String> = {
            let mut statement = conn.prepare(&format!("SELECT _key FROM {table}"))?;
            let keys = statement.query_map([], |r| r.get::<_, String>(0))?;
            keys.collect::<rusqlite::Result<_>>()?
        };
        for (key, staged) in &stage.rows[name] {
            let existing: Option<String> = if held.contains(key) {
                use rusqlite::OptionalExtension as _;
                select.query_row([key], |r| r.get(0)).optional()?
            } else {
                None
            };
            let Some(existing) = existing else {
                match insert.execute([key, &staged.text]) {
                    Ok(_) => continue,
                    Err(error) if is_constraint(&error) => {
                        return Ok(Some(row_refusal(name, staged, None, "Primary or unique key conflicts with existing state")));
                    }
                    Err(error) => return Err(error.into()),
                }
            };
            let current = crate::json::parse_clean(&existing).unwrap_or_default();
            let value = staged.value();
            if crate::json::python_equal(&current, &value) {
                continue;
            }
            let mut merged = current.as_object().cloned().unwrap_or_default();
            for (k, v) in value.as_object().expect("staged object") {
                merged.insert(k.clone(), v.clone());
            }
            let merged = Value::Object(merged);
            if !validators[name].accepts(&merged) {
                if let Err(error) = validate(&declared.schema, &merged, &format!("{}/schema", declared.location), "") {
                    return Ok(Some(row_refusal(name, staged, field_of(&error), &error.message)));
                }
            }
            match update.execute([&crate::json::canonical(&merged), key]) {
                Ok(_) => updated.push((name, staged, merged)),
                Err(error) if is_constraint(&error) => {
                    return Ok(Some(row_refusal(name, staged, None, "Primary or unique key conflicts with existing state")));
                }
                Err(error) => return Err(error.into()),
            }
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

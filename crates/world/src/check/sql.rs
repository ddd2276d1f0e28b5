//! The exact apply: the staged rows applied to a copy of the snapshot in one SQLite
//! transaction, so every constraint speaks with SQLite's own judgement. A check
//! (`apply`) uses it for `replace` and whenever the in-memory apply
//! ([`super::memory`]) cannot decide a case exactly, and throws the copy away; a
//! batch (`write`, [`crate::batch`]) commits it, with the ledger row and a lineage
//! row per written row, as the store's own batches leave them.

use super::held::Held;
use super::report::refusal;
use super::staged::{dependency_order, update_of, Update};
use super::types::Staged;
use crate::compiler::Contract;
use crate::error::Result;
use crate::json::Value;
use crate::store::Store;
use std::collections::HashSet;

/// Apply the held rows as one batch in the scratch copy, as the original's
/// `seed_batch` + `apply_batch` would (replace deletes first, then per row: skip an
/// identical row, update with a shallow merge, or insert; then the commit-time
/// audit). Returns the store's refusal mapped back to its row, or the counts after
/// the batch. The copy is thrown away, so it keeps no journal to roll back with.
pub(super) fn apply(contract: &Contract, store: &Store, held: &Held, mode: &str) -> Result<Result<Value, Value>> {
    let conn = store.connection();
    conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -32768; BEGIN")?;
    match apply_rows(contract, conn, held, mode, None)? {
        Some(refused) => Ok(Err(refused)),
        None => Ok(Ok(store.counts_value()?)),
    }
}

/// The ledger row a written batch leaves in `_gateway_batches`.
#[derive(Debug, Clone)]
pub(crate) struct Ledger<'a> {
    /// The batch id (the lineage rows point at it).
    pub(crate) id: &'a str,
    /// What the batch is, as a digest.
    pub(crate) digest: &'a str,
    /// Canonical JSON of the batch's envelope (id, target, mapping, coverage).
    pub(crate) metadata: String,
}

/// Lineage rows written as rows are: `(batch, ordinal, entity, key, source)`.
struct Lineage<'c> {
    statement: rusqlite::Statement<'c>,
    batch: String,
    ordinal: i64,
    /// Rows inserted or updated so far.
    upserts: usize,
}

impl Lineage<'_> {
    /// One written row; `text` is its canonical payload (None for a delete).
    fn record(&mut self, entity: &str, key: &str, text: Option<&str>) -> Result<()> {
        let identity = match text {
            Some(text) => crate::files::sha256_hex(text.as_bytes())[..16].to_string(),
            None => "replace".to_string(),
        };
        let source = crate::json::canonical(&crate::json::object([("record", Value::Str(format!("data-import:{entity}:{identity}")))]));
        self.statement.execute(rusqlite::params![self.batch, self.ordinal, entity, key, source])?;
        self.ordinal += 1;
        self.upserts += usize::from(text.is_some());
        Ok(())
    }
}

/// What [`write`] did.
#[derive(Debug)]
pub(crate) struct Written {
    /// The apply's refusal, if any.
    pub(crate) refusal: Option<Value>,
    /// Whether the transaction was committed.
    pub(crate) committed: bool,
    /// Rows inserted or updated.
    pub(crate) upserts: usize,
    /// Row counts after the apply, when it met no refusal.
    pub(crate) counts: Option<Value>,
}

/// Apply the held rows to `store` for real: one transaction holding the ledger row,
/// every write and its lineage. `commit` sees the apply's refusal (if any) and says
/// whether to keep the transaction.
pub(crate) fn write(
    contract: &Contract,
    store: &Store,
    held: &Held,
    mode: &str,
    ledger: &Ledger<'_>,
    commit: impl FnOnce(Option<&Value>) -> bool,
) -> Result<Written> {
    let conn = store.connection();
    // The file is private to its builder until it is complete: rollback, no durability.
    conn.execute_batch("PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA cache_size = -65536; BEGIN IMMEDIATE")?;
    let applied = (|| {
        conn.execute("INSERT INTO _gateway_batches VALUES (?1, ?2, ?3)", rusqlite::params![ledger.id, ledger.digest, ledger.metadata])?;
        let statement = conn.prepare("INSERT INTO _gateway_lineage VALUES (?1, ?2, ?3, ?4, ?5)")?;
        let mut lineage = Lineage { statement, batch: ledger.id.to_string(), ordinal: 0, upserts: 0 };
        let refusal = apply_rows(contract, conn, held, mode, Some(&mut lineage))?;
        let counts = if refusal.is_none() { Some(store.counts_value()?) } else { None };
        Ok((refusal, lineage.upserts, counts))
    })();
    match applied {
        Ok((refusal, upserts, counts)) => {
            let committed = commit(refusal.as_ref());
            conn.execute_batch(if committed { "COMMIT" } else { "ROLLBACK" })?;
            Ok(Written { refusal, committed, upserts, counts })
        }
        Err(error) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(error)
        }
    }
}

fn is_constraint(error: &rusqlite::Error) -> bool {
    matches!(error, rusqlite::Error::SqliteFailure(failure, _) if failure.code == rusqlite::ErrorCode::ConstraintViolation)
}

fn apply_rows(
    contract: &Contract,
    conn: &rusqlite::Connection,
    held: &Held,
    mode: &str,
    mut lineage: Option<&mut Lineage<'_>>,
) -> Result<Option<Value>> {
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
                if let Some(lineage) = lineage.as_deref_mut() {
                    lineage.record(name, &key, None)?;
                }
            }
        }
    }
    let mut updated: Vec<(&str, Staged, Value)> = Vec::new();
    for name in &order {
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
                    Ok(_) => {
                        if let Some(lineage) = lineage.as_deref_mut() {
                            lineage.record(name, key, Some(&staged.text))?;
                        }
                        Ok(true)
                    }
                    Err(error) if is_constraint(&error) => {
                        refused = Some(row_refusal(name, staged, None, CONFLICT));
                        Ok(false)
                    }
                    Err(error) => Err(error.into()),
                };
            };
            let merged = match update_of(contract, name, staged, &existing) {
                Update::Unchanged => return Ok(true),
                Update::Refused(record) => {
                    refused = Some(record);
                    return Ok(false);
                }
                Update::Merged { merged, .. } => merged,
            };
            let text = crate::json::canonical(&merged);
            match update.execute([&text, key]) {
                Ok(_) => {
                    if let Some(lineage) = lineage.as_deref_mut() {
                        lineage.record(name, key, Some(&text))?;
                    }
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
    // An update keeps the references of the row it merges into; the scratch copy
    // now holds the batch, so it answers whether a target exists.
    let refused = super::staged::audit_updated(contract, &updated, |target, wanted| {
        Ok(conn.prepare_cached(&format!("SELECT 1 FROM {} WHERE _key = ?1", quote(&target.name)))?.exists([wanted])?)
    })?;
    if refused.is_some() {
        return Ok(refused);
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

//! World state in SQLite: the generated DDL, the batch ledger and lineage, and
//! atomic, contract-checked mutations.
//!
//! Every table row is `(_key, payload)`: `_key` is the canonical JSON array of the
//! primary-key values and is the table's primary key, so a lookup by key is one
//! index probe. Payloads are canonical JSON; generated columns project the scalar
//! fields for SQL. A batch runs in one transaction: a refused batch changes nothing.
//!
//! This file opens a store and reads it, and holds its transactions and write groups;
//! `apply` runs batches and single-row writes, `audit` checks rows against the
//! contract, `mutation` is what both record and check of a mutation, `prepared` a
//! create checked away from the writer.

use crate::compiler::{quote, Contract, Entity};
use crate::error::{ContractError, Error, Result};
use crate::json::{canonical, object, Value};
use rusqlite::{Connection, OptionalExtension};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod apply;
mod audit;
mod mutation;
mod prepared;

use mutation::parse_stored;

pub use gateway_common::random::fill_random;
pub use mutation::{check_source, key_of, new_batch_id, ordered_batch_id, ordered_stamp, row_key};
pub use prepared::PreparedInsert;

/// The store's own tables, created after the generated DDL (exact text: it is compared).
pub const PRIVATE_DDL: &str = "
CREATE TABLE _gateway_contract (contract TEXT NOT NULL);
CREATE TABLE _gateway_batches (id TEXT PRIMARY KEY, digest TEXT NOT NULL, metadata TEXT NOT NULL);
CREATE TABLE _gateway_lineage (batch TEXT NOT NULL REFERENCES _gateway_batches(id),
    ordinal INTEGER NOT NULL, entity TEXT NOT NULL, key TEXT NOT NULL, source TEXT NOT NULL,
    PRIMARY KEY(batch, ordinal));
CREATE TABLE benchmark_runtime_context (context_key TEXT PRIMARY KEY, scenario_id TEXT NOT NULL);
CREATE TABLE benchmark_runtime_parameters (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE benchmark_conversation_events (scenario_id TEXT NOT NULL, user_turn_index INTEGER NOT NULL,
    event_type TEXT NOT NULL, actor TEXT NOT NULL, name TEXT, payload_json TEXT NOT NULL);

";

/// Name prefix of the indexes a served world adds to its private copy of a
/// snapshot (never to the snapshot itself); the contract check tolerates them.
pub const SERVING_INDEX_PREFIX: &str = "_gwrs_idx_";

/// Register the engine's SQL functions on a connection: `gw_fold(json)` is
/// Python's `str(value).lower()` of a JSON value (NULL for absent/null, a marker
/// for arrays, whose elements match one by one), used by serving indexes.
pub fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function("gw_fold", 1, FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC, |ctx| {
        // Read in place: the index calls this for every row it writes.
        Ok(match ctx.get_raw(0) {
            rusqlite::types::ValueRef::Text(text) => std::str::from_utf8(text).ok().and_then(fold_json_text),
            _ => None,
        })
    })
}

/// `gw_fold` of JSON text: the folded text, [`ARRAY_FOLD`] for arrays, None for null.
pub fn fold_json_text(text: &str) -> Option<String> {
    // A string with no escapes is its own text between the quotes.
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).filter(|t| !t.contains(['\\', '"'])) {
        return Some(inner.to_lowercase());
    }
    fold_parsed(text)
}

/// `gw_fold` of any JSON text, parsed.
fn fold_parsed(text: &str) -> Option<String> {
    match crate::json::parse_clean(text)? {
        Value::Null => None,
        Value::Array(_) => Some(ARRAY_FOLD.to_string()),
        other => Some(crate::json::python_str(&other).to_lowercase()),
    }
}

/// What `gw_fold` answers for an array (never a folded scalar: it starts with NUL).
pub const ARRAY_FOLD: &str = "\u{0}array";

const RUNTIME_TABLES: [&str; 3] = ["benchmark_runtime_context", "benchmark_runtime_parameters", "benchmark_conversation_events"];

/// A world's state file, opened against its contract.
pub struct Store {
    conn: Connection,
    contract: Arc<Contract>,
    path: PathBuf,
    depth: usize,
    touched: BTreeSet<(String, String)>,
    deleted_from: BTreeSet<String>,
    /// The highest integer of a generated field, per (entity, field): read from the
    /// table once, then kept current by this store's own single-row writes, so a
    /// generated id never needs a scan (a bulk batch forgets it; it is read again).
    highest: std::collections::HashMap<(String, String), i64>,
    /// Set while a single-row write runs its batch (which keeps `highest` itself).
    single_write: bool,
    /// Set while a group of writes shares one SQLite transaction (group commit):
    /// each outermost batch is then a savepoint of it, audited and undone alone.
    grouped: bool,
    /// Set when a write of the open group failed after changing the database with no
    /// savepoint to undo it by (`insert_prepared`): the group can only be rolled back.
    group_broken: bool,
    /// Each entity's single-row INSERT text, written once (`insert_prepared` names
    /// its cached statement by it).
    insert_sql: std::collections::HashMap<String, String>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

fn state_error(message: &str) -> ContractError {
    ContractError::new("state_contract", message, "")
}

impl Store {
    /// Create a new state file (refused if it exists) holding the contract's tables.
    pub fn create(path: &Path, contract: Arc<Contract>) -> Result<Store> {
        if path.exists() {
            return Err(ContractError::new("state_exists", "Refusing to replace existing state; reset/rebuild explicitly", "").into());
        }
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        parent.map(|p| std::fs::create_dir_all(p).map_err(|e| Error::io(e, p))).transpose()?;
        let result = (|| {
            let conn = Connection::open(path)?;
            let ddl = contract.artifact_text("db/schema.sql") + PRIVATE_DDL;
            conn.execute_batch(&ddl)?;
            conn.execute("INSERT INTO _gateway_contract VALUES (?1)", [canonical(&contract.lock)])?;
            Store::open_on(conn, contract, path, false)
        })();
        result.inspect_err(|_| drop(std::fs::remove_file(path)))
    }

    /// Open existing state; `audit` re-validates every row (skip it for snapshots
    /// whose bytes a sidecar digest has just verified).
    pub fn open(path: &Path, contract: Arc<Contract>, audit: bool) -> Result<Store> {
        if !path.is_file() {
            return Err(ContractError::new("state_missing", "Cannot open missing state", "").into());
        }
        let conn = Connection::open(path)?;
        Store::open_on(conn, contract, path, audit)
    }

    /// [`Store::open`] on a connection the caller opened (a copy-on-write session's,
    /// through its VFS); `path` only names the state in messages.
    pub fn open_on(conn: Connection, contract: Arc<Contract>, path: &Path, audit: bool) -> Result<Store> {
        conn.execute_batch("PRAGMA foreign_keys = ON")?;
        register_functions(&conn)?;
        let enabled: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
        if enabled != 1 {
            return Err(ContractError::new("sqlite", "Foreign-key enforcement is required", "").into());
        }
        let store = Store {
            conn,
            contract,
            path: path.to_path_buf(),
            depth: 0,
            touched: BTreeSet::new(),
            deleted_from: BTreeSet::new(),
            highest: Default::default(),
            single_write: false,
            grouped: false,
            group_broken: false,
            insert_sql: Default::default(),
        };
        store.check_contract()?;
        if audit {
            store.audit()?;
        }
        Ok(store)
    }

    /// The contract this store was opened with.
    pub fn contract(&self) -> &Arc<Contract> {
        &self.contract
    }

    /// The underlying connection, for read-only queries by callers.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    fn check_contract(&self) -> Result<(), ContractError> {
        let inner = || -> rusqlite::Result<Result<(), ContractError>> {
            let mut statement = self.conn.prepare("SELECT contract FROM _gateway_contract")?;
            let rows: Vec<String> = statement.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
            if rows.len() != 1 || rows[0] != canonical(&self.contract.lock) {
                return Ok(Err(state_error("State belongs to a different schema/package lock; no automatic migration")));
            }
            let expected = Connection::open_in_memory()?;
            let ddl = self.contract.artifact_text("db/schema.sql") + PRIVATE_DDL;
            expected.execute_batch(&ddl)?;
            let objects = |conn: &Connection| -> rusqlite::Result<BTreeMap<String, String>> {
                let mut statement = conn.prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL")?;
                let rows = statement.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
                rows.collect()
            };
            let want = objects(&expected)?;
            let have = objects(&self.conn)?;
            let differs = want.iter().any(|(k, v)| have.get(k) != Some(v))
                || have
                    .keys()
                    .any(|k| !want.contains_key(k) && !RUNTIME_TABLES.contains(&k.as_str()) && !k.starts_with(SERVING_INDEX_PREFIX));
            if differs {
                return Ok(Err(state_error("State DDL differs from the compiled storage contract")));
            }
            Ok(Ok(()))
        };
        inner().unwrap_or_else(|_| Err(state_error("State has no compatible schema contract")))
    }

    fn entity(&self, name: &Value) -> Result<&Entity, ContractError> {
        Store::entity_in(&self.contract, name)
    }

    fn entity_in<'c>(contract: &'c Contract, name: &Value) -> Result<&'c Entity, ContractError> {
        name.as_str()
            .and_then(|n| contract.entity(n))
            .ok_or_else(|| ContractError::new("entity", "Unknown entity type", "").with("entity", name.clone()))
    }

    fn entity_named(&self, name: &str) -> Result<&Entity, ContractError> {
        self.entity(&Value::str(name))
    }

    /// The canonical `_key` of a payload or key object; `exact` requires exactly
    /// the primary-key fields.
    pub fn key(&self, name: &str, value: &Value, exact: bool) -> Result<String, ContractError> {
        let entity = self.entity_named(name)?;
        key_of(entity, value, exact)
    }

    /// The row at `key` (an object of exactly the primary-key fields), if any.
    pub fn get(&self, name: &str, key: &Value) -> Result<Option<Value>> {
        let encoded_key = self.key(name, key, true)?;
        self.get_by_key(name, &encoded_key)
    }

    /// The row stored at an encoded `_key`.
    pub fn get_by_key(&self, name: &str, encoded_key: &str) -> Result<Option<Value>> {
        let sql = format!("SELECT payload FROM {} WHERE _key = ?1", quote(name));
        let payload: Option<String> = self.conn.prepare_cached(&sql)?.query_row([encoded_key], |r| r.get(0)).optional()?;
        Ok(payload.and_then(|p| parse_stored(&p)))
    }

    /// Every row of an entity in key order.
    pub fn list(&self, name: &str) -> Result<Vec<Value>> {
        self.entity_named(name)?;
        let sql = format!("SELECT payload FROM {} ORDER BY _key", quote(name));
        let mut statement = self.conn.prepare_cached(&sql)?;
        let rows = statement.query_map([], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for row in rows {
            out.extend(parse_stored(&row?));
        }
        Ok(out)
    }

    /// Row counts per entity, in entity order.
    pub fn counts(&self) -> Result<Vec<(String, i64)>> {
        let mut out = Vec::new();
        for entity in &self.contract.entities {
            let count: i64 = self.conn.query_row(&format!("SELECT COUNT(*) FROM {}", quote(&entity.name)), [], |r| r.get(0))?;
            out.push((entity.name.clone(), count));
        }
        Ok(out)
    }

    /// Counts as a JSON object.
    pub fn counts_value(&self) -> Result<Value> {
        Ok(object(self.counts()?.into_iter().map(|(k, v)| (k, Value::Int(v)))))
    }

    // -------------------------------------------------------------- transactions

    /// Run `body` in a transaction: the outermost one commits after the
    /// commit-time audit; nested ones are savepoints. Any error rolls back.
    /// Inside a group ([`Store::begin_group`]) the outermost one is a savepoint
    /// too: audited and undone on its own, made durable by [`Store::commit_group`].
    pub fn transaction<T>(&mut self, body: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
        let outer = self.depth == 0;
        let savepoint = format!("gateway_batch_{}", self.depth);
        let own_transaction = outer && !self.grouped;
        if own_transaction {
            self.conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        } else {
            // Cached: a group runs one savepoint per write.
            self.conn.prepare_cached(&format!("SAVEPOINT {savepoint}"))?.execute([])?;
        }
        if outer {
            self.touched.clear();
            self.deleted_from.clear();
        }
        self.depth += 1;
        let result = body(self).and_then(|value| {
            if outer {
                self.audit_touched()?;
            }
            Ok(value)
        });
        self.depth -= 1;
        match result {
            Ok(value) => {
                if own_transaction {
                    self.conn.prepare_cached("COMMIT")?.execute([])?;
                } else {
                    self.conn.prepare_cached(&format!("RELEASE {savepoint}"))?.execute([])?;
                }
                Ok(value)
            }
            Err(error) => {
                let rollback =
                    if own_transaction { "ROLLBACK".to_string() } else { format!("ROLLBACK TO {savepoint}; RELEASE {savepoint}") };
                let _ = self.conn.execute_batch(&rollback);
                // Writes the rollback undid may have raised a tracked highest value.
                self.highest.clear();
                Err(error)
            }
        }
    }

    /// Open a group: the batches applied until [`Store::commit_group`] share one
    /// SQLite transaction (one WAL commit for all), while each stays its own batch
    /// with its own ledger and lineage rows, and a refused one changes nothing.
    pub fn begin_group(&mut self) -> Result<()> {
        if self.grouped || self.depth > 0 {
            return Err(state_error("A write group is already open").into());
        }
        self.conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        self.grouped = true;
        self.group_broken = false;
        Ok(())
    }

    /// Commit the open group; when the commit fails every batch of the group is
    /// undone and the error returned.
    pub fn commit_group(&mut self) -> Result<()> {
        if !self.grouped {
            return Ok(());
        }
        self.grouped = false;
        if std::mem::take(&mut self.group_broken) {
            let _ = self.conn.execute_batch("ROLLBACK");
            self.highest.clear();
            return Err(state_error("A write of the group failed halfway; the group was rolled back").into());
        }
        match self.conn.prepare_cached("COMMIT").and_then(|mut s| s.execute([])) {
            Ok(_) => Ok(()),
            Err(error) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                self.highest.clear();
                Err(error.into())
            }
        }
    }

    /// Undo the open group (and any batch left half-applied by a panic inside it).
    pub fn abort_group(&mut self) {
        let _ = self.conn.execute_batch("ROLLBACK");
        self.grouped = false;
        self.group_broken = false;
        self.depth = 0;
        self.touched.clear();
        self.deleted_from.clear();
        self.highest.clear();
    }

    /// Close the connection (flushes nothing: every transaction already committed).
    pub fn close(self) -> Result<()> {
        self.conn.close().map_err(|(_, e)| e.into())
    }
}

#[cfg(test)]
mod fold_tests {
    use super::*;

    /// The unparsed reading of a plain string folds as parsing it does.
    #[test]
    fn plain_strings_fold_as_parsed() {
        for text in [r#""Lead""#, r#""""#, r#""ÉCOLE Straße""#, r#""İ""#, r#""a b\tc""#, r#""q\"uote""#, r#""\u00C9""#] {
            assert_eq!(fold_json_text(text), fold_parsed(text), "{text}");
        }
        assert_eq!(fold_json_text(r#""Lead""#).as_deref(), Some("lead"));
        assert_eq!(fold_json_text(r#""\u00C9""#).as_deref(), Some("é"));
        assert_eq!(fold_json_text("null"), None);
        assert_eq!(fold_json_text("[1]").as_deref(), Some(ARRAY_FOLD));
        assert_eq!(fold_json_text("true").as_deref(), Some("true"));
    }
}

//! World state in SQLite: the generated DDL, the batch ledger and lineage, and
//! atomic, contract-checked mutations.
//!
//! Every table row is `(_key, payload)`: `_key` is the canonical JSON array of the
//! primary-key values and is the table's primary key, so a lookup by key is one
//! index probe. Payloads are canonical JSON; generated columns project the scalar
//! fields for SQL. A batch runs in one transaction: a refused batch changes nothing.

use crate::compiler::{payload_value, quote, Contract, Entity};
use crate::dialect::{members, nonempty, validate};
use crate::error::{fail, ContractError, Error, Result};
use crate::files::BatchFile;
use crate::json::{canonical, object, python_equal, Map, Spread, Value};
use rusqlite::{params, Connection, OptionalExtension};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod prepared;
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
        let text: Option<String> = ctx.get(0)?;
        Ok(text.and_then(|t| fold_json_text(&t)))
    })
}

/// `gw_fold` of JSON text: the folded text, [`ARRAY_FOLD`] for arrays, None for null.
pub fn fold_json_text(text: &str) -> Option<String> {
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
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

fn state_error(message: &str) -> ContractError {
    ContractError::new("state_contract", message, "")
}

/// Validate a mutation's `source` provenance record.
pub fn check_source(source: Option<&Value>, location: &str) -> Result<(), ContractError> {
    let source = source.unwrap_or(&Value::Null);
    members(source, &["record", "evidence"], &["record"], location)?;
    nonempty(source.get("record"), &format!("{location}/record"))?;
    let evidence = match source.get("evidence") {
        None => return Ok(()),
        Some(Value::Array(items)) => items,
        Some(_) => return fail("provenance", "evidence must be an array of stable reference/digest pairs", location),
    };
    for (index, entry) in evidence.iter().enumerate() {
        members(entry, &["reference", "digest"], &["reference", "digest"], &format!("{location}/evidence/{index}"))?;
        nonempty(entry.get("reference"), location)?;
        let ok = entry
            .get("digest")
            .and_then(Value::as_str)
            .is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        if !ok {
            return fail("provenance", "Evidence digest must be lowercase SHA-256 hex", location);
        }
    }
    Ok(())
}

fn parse_stored(text: &str) -> Option<Value> {
    crate::json::parse_clean(text)
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
        Ok(())
    }

    /// Commit the open group; when the commit fails every batch of the group is
    /// undone and the error returned.
    pub fn commit_group(&mut self) -> Result<()> {
        if !self.grouped {
            return Ok(());
        }
        self.grouped = false;
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
        self.depth = 0;
        self.touched.clear();
        self.deleted_from.clear();
        self.highest.clear();
    }

    // -------------------------------------------------------------- batches

    /// Apply a batch atomically. An exact retry is a no-op; reusing its id with
    /// other content is refused.
    pub fn apply_batch(&mut self, batch: &Value) -> Result<Value> {
        self.apply_spread(batch, None)
    }

    /// [`Store::apply_batch`] of a batch file, its mutations parsed one at a time as they
    /// are applied (a batch can hold a world's data: its tree is never built).
    pub fn apply_batch_file(&mut self, file: &BatchFile) -> Result<Value> {
        let spread = file.spread();
        self.apply_spread(&spread.value, Some(&spread))
    }

    /// The batch `batch`, whose mutations are its own or, when `spread` leaves them in
    /// the file's text, `spread`'s items.
    fn apply_spread(&mut self, batch: &Value, spread: Option<&Spread<'_>>) -> Result<Value> {
        if !self.single_write {
            // A batch may write any value into a tracked field: read it again later.
            self.highest.clear();
        }
        const MEMBERS: &[&str] = &["id", "target", "mapping", "coverage", "mutations"];
        members(batch, MEMBERS, MEMBERS, "/batch")?;
        nonempty(batch.get("id"), "/batch/id")?;
        if !python_equal(batch.get("target").expect("member"), self.contract.target()) {
            return Err(
                ContractError::new("batch_target", "Batch targets a different domain identity/version/hash", "/batch/target").into()
            );
        }
        let mapping = batch.get("mapping").expect("member");
        members(mapping, &["id", "version"], &["id", "version"], "/batch/mapping")?;
        for (key, value) in mapping.as_object().expect("object") {
            nonempty(Some(value), &format!("/batch/mapping/{key}"))?;
        }
        if !matches!(batch.get("coverage").and_then(Value::as_str), Some("partial" | "complete")) {
            return Err(ContractError::new(
                "coverage",
                "coverage must be partial or complete (neither implies deletion)",
                "/batch/coverage",
            )
            .into());
        }
        let Some(mutations) = batch.get("mutations").and_then(Value::as_array) else {
            return Err(ContractError::new("batch", "mutations must be an array", "/batch/mutations").into());
        };
        // A file's text was range-checked whole when it was read.
        if let Some(pointer) = crate::json::range_problem(batch).filter(|_| spread.is_none()) {
            // The original canonicalises the whole batch for its digest first.
            return Err(ContractError::new("numeric_range", crate::json::NUMERIC_RANGE_MESSAGE, pointer).into());
        }
        let id = batch.get("id").and_then(Value::as_str).expect("checked").to_string();
        let head = batch.as_object().expect("checked object");
        self.transaction(|store| {
            let prior: Option<String> =
                store.conn.query_row("SELECT digest FROM _gateway_batches WHERE id = ?1", [&id], |r| r.get(0)).optional()?;
            if let Some(prior) = prior {
                if prior != batch_digest(head, each_mutation(mutations, spread)) {
                    return Err(ContractError::new(
                        "idempotency_conflict",
                        "Batch ID was already applied with different content",
                        "/batch/id",
                    )
                    .with("batch", Value::str(&id))
                    .into());
                }
                return Ok(object([("status", Value::str("already_applied")), ("batch", Value::str(&id)), ("applied", Value::Int(0))]));
            }
            let metadata: Map = head.iter().filter(|(k, _)| *k != "mutations").map(|(k, v)| (k.clone(), v.clone())).collect();
            // The digest is known once every mutation went by: the ledger row takes it
            // then (one transaction: nobody sees it without).
            store.conn.execute("INSERT INTO _gateway_batches VALUES (?1, '', ?2)", params![id, canonical(&Value::Object(metadata))])?;
            let mut failure = None;
            let mut applied = 0usize;
            let applying = each_mutation(mutations, spread).enumerate().map_while(|(index, mutation)| {
                match store.apply_mutation(&id, index, &mutation) {
                    Ok(()) => {
                        applied += 1;
                        Some(mutation)
                    }
                    Err(error) => {
                        failure = Some(contextualize_mutation(error, &id, index, &mutation));
                        None
                    }
                }
            });
            let batch_hash = batch_digest(head, applying);
            if let Some(failure) = failure {
                return Err(failure);
            }
            store.conn.execute("UPDATE _gateway_batches SET digest = ?2 WHERE id = ?1", params![id, batch_hash])?;
            Ok(object([("status", Value::str("applied")), ("batch", Value::str(&id)), ("applied", Value::Int(applied as i64))]))
        })
    }

    fn apply_mutation(&mut self, batch_id: &str, index: usize, mutation: &Value) -> Result<()> {
        let location = format!("/batch/mutations/{index}");
        members(mutation, &["op", "entity", "key", "value", "source"], &["op", "entity", "source"], &location)?;
        let op = match mutation.get("op") {
            Some(Value::Str(op)) => op.as_str(),
            _ => return Err(ContractError::new("operation", "Operation must be insert, update or delete", location).into()),
        };
        let required: &[&str] = match op {
            "insert" => &["op", "entity", "source", "value"],
            "update" => &["op", "entity", "source", "key", "value"],
            "delete" => &["op", "entity", "source", "key"],
            _ => return Err(ContractError::new("operation", "Only insert, update and delete are supported", location).into()),
        };
        members(mutation, required, required, &location)?;
        check_source(mutation.get("source"), &format!("{location}/source"))?;
        let (entity_name, key) = self.mutate(mutation, op)?;
        let source = canonical(mutation.get("source").expect("member"));
        self.conn.prepare_cached("INSERT INTO _gateway_lineage VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(params![
            batch_id,
            index as i64,
            entity_name,
            key,
            source
        ])?;
        Ok(())
    }

    fn mutate(&mut self, mutation: &Value, op: &str) -> Result<(String, String)> {
        // The contract is shared: holding it keeps the entity without copying its schema.
        let contract = self.contract.clone();
        let entity = Store::entity_in(&contract, mutation.get("entity").expect("member"))?;
        let name = entity.name.clone();
        let schema_location = format!("{}/schema", entity.location);
        let (key, payload) = if op == "insert" {
            let value = mutation.get("value").expect("member");
            validate(&entity.schema, value, &schema_location, "")?;
            (key_of(entity, value, false)?, Some(value.clone()))
        } else {
            let key_value = mutation.get("key").expect("member");
            let key = key_of(entity, key_value, true)?;
            let Some(current) = self.get_by_key(&name, &key)? else {
                return Err(ContractError::new("not_found", "No entity exists at this key", "")
                    .with("entity", Value::str(&name))
                    .with("key", key_value.clone())
                    .into());
            };
            if op == "update" {
                let Some(patch) = mutation.get("value").and_then(Value::as_object) else {
                    return Err(ContractError::new("type", "An update must be an object", "").into());
                };
                let mut merged = current.as_object().cloned().unwrap_or_default();
                for (k, v) in patch {
                    merged.insert(k.clone(), v.clone());
                }
                let merged = Value::Object(merged);
                validate(&entity.schema, &merged, &schema_location, "")?;
                if key_of(entity, &merged, false)? != key {
                    return Err(ContractError::new("key_immutable", "Updates cannot change primary keys", "")
                        .with("entity", Value::str(&name))
                        .into());
                }
                (key, Some(merged))
            } else {
                (key, None)
            }
        };
        self.touched.insert((name.clone(), key.clone()));
        let table = quote(&name);
        let outcome = match (op, &payload) {
            ("insert", Some(value)) => self
                .conn
                .prepare_cached(&format!("INSERT INTO {table} (_key, payload) VALUES (?1, ?2)"))?
                .execute(params![key, canonical(value)]),
            ("update", Some(value)) => self
                .conn
                .prepare_cached(&format!("UPDATE {table} SET payload = ?1 WHERE _key = ?2"))?
                .execute(params![canonical(value), key]),
            _ => {
                self.deleted_from.insert(name.clone());
                self.conn.prepare_cached(&format!("DELETE FROM {table} WHERE _key = ?1"))?.execute(params![key])
            }
        };
        match outcome {
            Ok(_) => Ok((name, key)),
            Err(error) => Err(write_refusal(error, entity, &key)),
        }
    }

    /// A single-row mutation wrapped in its own batch (the original's store helpers).
    fn single(&mut self, op: &str, entity: &str, key: Option<&Value>, value: Option<&Value>, source: Option<Value>) -> Result<()> {
        let mut mutation = Map::default();
        mutation.insert("op".into(), Value::str(op));
        mutation.insert("entity".into(), Value::str(entity));
        if let Some(key) = key {
            mutation.insert("key".into(), key.clone());
        }
        if let Some(value) = value {
            mutation.insert("value".into(), value.clone());
        }
        mutation.insert("source".into(), source.unwrap_or_else(|| object([("record", Value::Str(format!("store.{op}")))])));
        let batch = object([
            ("id", Value::Str(ordered_batch_id())),
            ("target", self.contract.target().clone()),
            ("mapping", object([("id", Value::str("gateway-store")), ("version", Value::str("1"))])),
            ("coverage", Value::str("partial")),
            ("mutations", Value::Array(vec![Value::Object(mutation)])),
        ]);
        self.single_write = true;
        let applied = self.apply_batch(&batch).map(|_| ());
        self.single_write = false;
        applied
    }

    /// Shallow-merge `patch` into the row at `key`; returns the merged row.
    pub fn update(&mut self, entity: &str, key: &Value, patch: &Value, source: Option<Value>) -> Result<Option<Value>> {
        self.single("update", entity, Some(key), Some(patch), source)?;
        self.highest.retain(|(cached, field), _| cached != entity || patch.get(field).is_none());
        self.get(entity, key)
    }

    /// Delete the row at `key`.
    pub fn delete(&mut self, entity: &str, key: &Value, source: Option<Value>) -> Result<()> {
        let tracked = self.highest.keys().any(|(cached, _)| cached == entity);
        let row = if tracked { self.get(entity, key)? } else { None };
        self.single("delete", entity, Some(key), None, source)?;
        if let Some(row) = row {
            // Only deleting the row that holds the highest value needs a fresh read.
            self.highest.retain(|(cached, field), highest| cached != entity || integer_of(row.get(field)) != Some(*highest));
        }
        Ok(())
    }

    /// The next integer of a generated field (`max(0, highest integer) + 1`, as
    /// the original computes it), read from the table only the first time.
    pub fn next_integer(&mut self, entity: &str, field: &str) -> Result<i64> {
        let slot = (entity.to_string(), field.to_string());
        if let Some(highest) = self.highest.get(&slot) {
            return Ok(highest + 1);
        }
        if self.contract.entity(entity).is_none() {
            return Err(ContractError::new("entity", "Unknown entity type", "").with("entity", Value::str(entity)).into());
        }
        let path = format!("$.\"{}\"", field.replace('"', "\"\""));
        let sql = format!(
            "SELECT MAX(CASE json_type(payload, ?1) WHEN 'integer' THEN json_extract(payload, ?1) WHEN 'true' THEN 1 \
             WHEN 'false' THEN 0 END) FROM {}",
            crate::compiler::quote(entity)
        );
        let found: Option<i64> = self.conn.query_row(&sql, [&path], |r| r.get(0))?;
        let highest = found.unwrap_or(0).max(0);
        self.highest.insert(slot, highest);
        Ok(highest + 1)
    }

    /// The next integer of a generated field among the rows whose `scope` fields
    /// hold the given values (`max(0, highest integer) + 1`): an issue's number in
    /// its repository. Read each time (inside the writer, so a group's earlier
    /// writes count); the scope's fields should be served by an index.
    pub fn next_integer_in(&mut self, entity: &str, field: &str, scope: &[(String, Value)]) -> Result<i64> {
        if self.contract.entity(entity).is_none() {
            return Err(ContractError::new("entity", "Unknown entity type", "").with("entity", Value::str(entity)).into());
        }
        let json_path = |dotted: &str| {
            let mut path = String::from("$");
            for part in dotted.split('.') {
                path.push_str(".\"");
                path.push_str(&part.replace('"', "\"\""));
                path.push('"');
            }
            path
        };
        let mut sql = format!(
            "SELECT MAX(CASE json_type(payload, ?1) WHEN 'integer' THEN json_extract(payload, ?1) WHEN 'true' THEN 1 \
             WHEN 'false' THEN 0 END) FROM {} WHERE 1",
            crate::compiler::quote(entity)
        );
        let mut bound: Vec<rusqlite::types::Value> = vec![rusqlite::types::Value::Text(json_path(field))];
        for (scoped, value) in scope {
            bound.push(rusqlite::types::Value::Text(json_path(scoped)));
            let at = bound.len();
            // Compared as SQL values: an integer id equals the integer stored.
            let wanted = match value {
                Value::Int(n) => rusqlite::types::Value::Integer(*n),
                Value::Float(f) => rusqlite::types::Value::Real(*f),
                Value::Bool(b) => rusqlite::types::Value::Integer(i64::from(*b)),
                Value::Null => rusqlite::types::Value::Null,
                Value::Str(text) => rusqlite::types::Value::Text(text.clone()),
                other => rusqlite::types::Value::Text(canonical(other)),
            };
            bound.push(wanted);
            sql.push_str(&format!(" AND json_extract(payload, ?{at}) = ?{}", at + 1));
        }
        let found: Option<i64> = self.conn.query_row(&sql, rusqlite::params_from_iter(bound), |r| r.get(0))?;
        Ok(found.unwrap_or(0).max(0) + 1)
    }

    // -------------------------------------------------------------- audits

    /// The first way a stored row breaks the contract. `written` says the payload
    /// is one this store's own write validated and keyed in this transaction, so
    /// only its relationships can have broken.
    fn row_violation(&self, entity: &Entity, stored_key: &str, payload: &str, written: bool) -> Option<ContractError> {
        let value = match crate::files::parse_json_bytes(payload.as_bytes(), &format!("{}/schema", entity.location)) {
            Ok(value) => value,
            Err(error) => return Some(error.with("entity", Value::str(&entity.name))),
        };
        let check = || -> Result<(), ContractError> {
            if !written {
                validate(&entity.schema, &value, &format!("{}/schema", entity.location), "")?;
            }
            if !written && key_of(entity, &value, false)? != stored_key {
                return Err(
                    ContractError::new("key", "Stored key differs from payload identity", "").with("entity", Value::str(&entity.name))
                );
            }
            for relationship in &entity.relationships {
                let keys: Vec<Option<&Value>> =
                    relationship.fields.iter().map(|f| payload_value(&value, f).filter(|v| !matches!(v, Value::Null))).collect();
                if keys.iter().all(Option::is_none) {
                    continue;
                }
                let location = format!("{}/relationships", entity.location);
                if keys.iter().any(Option::is_none) {
                    return fail("foreign_key", "Composite references must be wholly present or wholly absent/null", location);
                }
                let target = self.contract.entity(&relationship.target).expect("compiled target");
                let target_key = object(target.primary_key.iter().cloned().zip(keys.into_iter().map(|k| k.expect("present").clone())));
                let encoded_key = key_of(target, &target_key, true)?;
                let exists = self.get_by_key(&target.name, &encoded_key).ok().flatten().is_some();
                if !exists {
                    return fail(
                        "foreign_key",
                        "Relationship target does not exist; incomplete evidence requires an explicit mapping decision",
                        location,
                    );
                }
            }
            Ok(())
        };
        let error = check().err()?;
        let mut error = error.with("entity", Value::str(&entity.name)).with("key", parse_stored(stored_key).unwrap_or_default());
        let lineage: Option<(String, i64, String)> = self
            .conn
            .query_row(
                "SELECT batch, ordinal, source FROM _gateway_lineage WHERE entity=?1 AND key=?2 ORDER BY rowid DESC LIMIT 1",
                params![entity.name, stored_key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .ok()
            .flatten();
        if let Some((batch, index, source)) = lineage {
            error.set("batch", Value::Str(batch));
            error.set("index", Value::Int(index));
            error.set("source", parse_stored(&source).unwrap_or_default());
        }
        Some(error)
    }

    /// Every contract violation in persisted state, at most `limit` of them.
    pub fn violations(&self, limit: Option<usize>) -> Result<Vec<ContractError>> {
        let mut found = Vec::new();
        for entity in &self.contract.entities {
            let mut statement = self.conn.prepare(&format!("SELECT _key, payload FROM {} ORDER BY _key", quote(&entity.name)))?;
            let rows = statement.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            for row in rows {
                let (key, payload) = row?;
                if let Some(error) = self.row_violation(entity, &key, &payload, false) {
                    found.push(error);
                    if limit.is_some_and(|l| found.len() >= l) {
                        return Ok(found);
                    }
                }
            }
        }
        if self.foreign_key_violation(None)? {
            found.push(ContractError::new("foreign_key", "Persisted SQLite relationship check failed", ""));
        }
        Ok(found)
    }

    /// Validate every persisted row, key identity and reference.
    pub fn audit(&self) -> Result<()> {
        match self.violations(Some(1))?.into_iter().next() {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }

    /// SQLite's own relationship check. With `tables`, only those referencing tables.
    fn foreign_key_violation(&self, tables: Option<&BTreeSet<String>>) -> Result<bool> {
        match tables {
            None => Ok(self.conn.prepare("PRAGMA foreign_key_check")?.exists([])?),
            Some(tables) => {
                for table in tables {
                    if self.conn.prepare(&format!("PRAGMA foreign_key_check({})", quote(table)))?.exists([])? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    /// The commit-time audit: the rows this transaction wrote, then SQLite's
    /// relationship check. Rows written here were checked row by row above, so a
    /// relationship can only have broken through a delete: only tables that
    /// reference an entity this transaction deleted from are re-checked, which keeps
    /// a transaction's cost proportional to its size, not the world's.
    fn audit_touched(&mut self) -> Result<()> {
        let touched = std::mem::take(&mut self.touched);
        for (name, key) in &touched {
            let entity = self.contract.entity(name).expect("touched entity");
            if entity.relationships.is_empty() {
                // Every payload written here was validated and keyed as it was
                // written (`mutate`); with no relationships nothing else can break.
                continue;
            }
            let payload: Option<String> = self
                .conn
                .prepare_cached(&format!("SELECT payload FROM {} WHERE _key = ?1", quote(name)))?
                .query_row([key], |r| r.get(0))
                .optional()?;
            if let Some(payload) = payload {
                if let Some(error) = self.row_violation(entity, key, &payload, true) {
                    return Err(error.into());
                }
            }
        }
        let deleted = std::mem::take(&mut self.deleted_from);
        if !deleted.is_empty() {
            let referencing: BTreeSet<String> = self
                .contract
                .entities
                .iter()
                .filter(|e| e.relationships.iter().any(|r| deleted.contains(&r.target)))
                .map(|e| e.name.clone())
                .collect();
            if self.foreign_key_violation(Some(&referencing))? {
                return Err(ContractError::new("foreign_key", "Persisted SQLite relationship check failed", "").into());
            }
        }
        Ok(())
    }

    /// Close the connection (flushes nothing: every transaction already committed).
    pub fn close(self) -> Result<()> {
        self.conn.close().map_err(|(_, e)| e.into())
    }
}

/// The canonical `_key` for `value` under `entity`'s primary key.
pub fn key_of(entity: &Entity, value: &Value, exact: bool) -> Result<String, ContractError> {
    let supply =
        || ContractError::new("key", "Supply exactly the declared primary-key fields", "").with("entity", Value::str(&entity.name));
    let map = value.as_object().ok_or_else(supply)?;
    if entity.primary_key.iter().any(|f| !map.contains_key(f)) || (exact && map.len() != entity.primary_key.len()) {
        return Err(supply());
    }
    let mut parts = Vec::with_capacity(entity.primary_key.len());
    for field in &entity.primary_key {
        let part = &map[field];
        let property = entity.property(field).cloned().unwrap_or_default();
        validate(&property, part, &format!("{}/schema/properties/{field}", entity.location), "")?;
        parts.push(match part {
            Value::Float(f) => Value::Int(*f as i64),
            other => other.clone(),
        });
    }
    Ok(canonical(&Value::Array(parts)))
}

/// The id of a single-row write's batch: 32 hex digits like `uuid4().hex`, but
/// ordered — 16 from a per-process stamp that only grows (microseconds since the
/// epoch, or one more than the last), 16 random. The ledger and lineage tables are
/// keyed by batch id, so ordered ids append to their indexes instead of touching
/// a random page of each per write.
pub fn ordered_batch_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0);
    let stamp = match LAST.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some(now.max(last + 1))) {
        Ok(last) | Err(last) => now.max(last + 1),
    };
    let mut random = [0u8; 8];
    fill_random(&mut random);
    format!("{stamp:016x}{}", hex::encode(random))
}

/// A fresh random batch id (32 lowercase hex digits, like Python's `uuid4().hex`).
pub fn new_batch_id() -> String {
    let mut bytes = [0u8; 16];
    fill_random(&mut bytes);
    hex::encode(bytes)
}

/// An integer as Python's `int` test sees it (booleans are integers).
fn integer_of(value: Option<&Value>) -> Option<i64> {
    match value {
        Some(Value::Int(n)) => Some(*n),
        Some(Value::Bool(b)) => Some(i64::from(*b)),
        _ => None,
    }
}

pub use gateway_common::random::fill_random;

/// A batch's mutations in order: its own, or read one at a time from its file's text.
fn each_mutation<'b>(mutations: &'b [Value], spread: Option<&Spread<'b>>) -> Box<dyn Iterator<Item = Cow<'b, Value>> + 'b> {
    match spread.filter(|s| s.is_spread()) {
        // The text was accepted whole when read: an item of it parses.
        Some(spread) => Box::new(spread.items().map(|item| Cow::Owned(item.expect("accepted JSON text")))),
        None => Box::new(mutations.iter().map(Cow::Borrowed)),
    }
}

/// `sha256(encoded(batch))` with the batch's mutations streamed (the original's batch
/// digest), never encoded whole.
fn batch_digest<'b>(head: &Map, mutations: impl Iterator<Item = Cow<'b, Value>>) -> String {
    crate::hash::digest_of_pieces(|sink| {
        crate::json::dumps_with_items(head, "mutations", mutations, crate::json::DumpOptions::CANONICAL, sink);
        sink("\n");
    })
}

/// A failed row write as the original says it: a taken primary or unique key is
/// `unique`, naming the entity and the key; anything else is SQLite's.
fn write_refusal(error: rusqlite::Error, entity: &Entity, key: &str) -> Error {
    match error {
        rusqlite::Error::SqliteFailure(failure, _) if failure.code == rusqlite::ErrorCode::ConstraintViolation => {
            ContractError::new("unique", "Primary or unique key conflicts with existing state", format!("{}/unique", entity.location))
                .with("entity", Value::str(&entity.name))
                .with("key", parse_stored(key).unwrap_or_default())
                .into()
        }
        other => other.into(),
    }
}

fn contextualize_mutation(error: Error, batch: &str, index: usize, mutation: &Value) -> Error {
    let Error::Contract(mut error) = error else { return error };
    error.set("batch", Value::str(batch));
    error.set("index", Value::Int(index as i64));
    if let Some(map) = mutation.as_object() {
        error.set("entity", map.get("entity").cloned().unwrap_or_default());
        if let Some(key) = map.get("key") {
            error.set("key", key.clone());
        }
        if check_source(map.get("source"), "").is_ok() {
            error.set("source", map.get("source").cloned().unwrap_or_default());
        }
    }
    Error::Contract(error)
}

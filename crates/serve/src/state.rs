//! The store behind a served world: a private copy of the snapshot, reset by
//! copying again, read through a pool of connections and written through one.
//!
//! At start the default snapshot (or, without one, the world's initial batch
//! replayed once) is copied into a private *template* and given the serving
//! indexes: one expression index per equality filter of the connector
//! (`gw_fold(payload -> '$.<path>'), _key, payload ->> '$.<path>'`). The template is
//! shared ([`Template`]): a World Host opens many sessions of one world from it. A
//! session's database is copy-on-write over it (gateway-cow): it reads the pages it
//! never wrote from the template's file and keeps the ones it wrote in an overlay file
//! of its own, so an open, a reset (a new, empty overlay) and a fork (a copy of the
//! overlay) cost the same whatever the world's size. A durable session
//! (`worlds serve --state`) is a whole file instead: it must outlive the process, and
//! the template it would overlay is rebuilt by each process.
//!
//! Locks: every critical section here is one cache update or one SQLite call that
//! leaves the data consistent if it unwinds, so a poisoned lock is recovered
//! (`PoisonError::into_inner`) rather than failing every later request.

use gateway_world::compiler::quote;
use gateway_world::data::tempfile_dir::Scratch;
use gateway_world::error::{ContractError, Error as WorldError};
use gateway_world::json::{object, python_str, Map, Value};
use gateway_world::plan::{rows_from_object, seed_batch, Rows, MODES};
use gateway_world::snapshot;
use gateway_world::store::{new_batch_id, register_functions, Store, ARRAY_FOLD, SERVING_INDEX_PREFIX};
use gateway_world::{Contract, Result};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

mod db;
mod fork;
pub(crate) mod handler_writes;

use db::{commit_failure, compare, cow_error, exact_expression, fold_expression, Column, Db, Storage};
pub use db::{Filter, WriteJob};

/// The original's `_dig`: a dotted path through objects.
pub fn dig<'a>(row: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = row;
    for part in path.split('.') {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

/// Whether a row passes every filter (the original's `_matches`).
pub fn matches(row: &Value, filters: &[Filter]) -> bool {
    filters.iter().all(|filter| {
        let Some(value) = dig(row, &filter.path).filter(|v| !matches!(v, Value::Null)) else {
            return false;
        };
        let single = [value.clone()];
        let candidates: &[Value] = match value {
            Value::Array(items) => items,
            _ => &single,
        };
        candidates.iter().any(|c| compare(&python_str(c).to_lowercase(), &filter.wanted, &filter.mode))
    })
}

/// What every session of one world shares: the checked contract, the snapshot's
/// sidecar and the indexed template every session database reads its unchanged pages
/// from. Built once per world (per version, on a host), never written after.
pub struct Template {
    world: PathBuf,
    contract: Arc<Contract>,
    /// The sidecar of the snapshot in use (None on the legacy path).
    snapshot: Option<Value>,
    /// The indexed template: a normal SQLite file, shared read-only by every session.
    base: Arc<gateway_cow::Base>,
    /// Holds the template file; removed when the last session lets go.
    _scratch: Scratch,
    /// Per entity, the dotted paths that have a serving index.
    indexed: BTreeMap<String, Vec<String>>,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Template").field("world", &self.world).finish()
    }
}

impl Template {
    /// Check the world and prepare its indexed template. `indexed` names, per
    /// entity, the dotted paths equality filters use.
    pub fn open(world: &Path, indexed: BTreeMap<String, Vec<String>>) -> Result<Template> {
        Template::open_world(&gateway_world::World::open(world)?, indexed)
    }

    /// [`Template::open`] of an opened world: its contract is not built again.
    pub fn open_world(opened: &gateway_world::World, indexed: BTreeMap<String, Vec<String>>) -> Result<Template> {
        let world = opened.root();
        let contract = opened.check()?;
        let sidecar = snapshot::current_default(world, &contract)?;
        let scratch = Scratch::new("gateway-world-api")?;
        let template = scratch.path().join("template.db");
        match &sidecar {
            Some(_) => {
                let source = snapshot::default_snapshot(world);
                std::fs::copy(&source, &template).map_err(|e| WorldError::io(e, &source))?;
            }
            None => {
                // The legacy path: no current snapshot, the initial batch replayed once.
                let initial = gateway_world::files::read_json(&world.join("data/initial.json"))?;
                let mut store = Store::create(&template, contract.clone())?;
                store.apply_batch(&initial)?;
                store.close()?;
            }
        }
        add_indexes(&template, &contract, &indexed)?;
        gateway_cow::register().map_err(cow_error)?;
        let base = gateway_cow::Base::open(&template).map_err(cow_error)?;
        Ok(Template { world: world.to_path_buf(), contract, snapshot: sidecar, base, _scratch: scratch, indexed })
    }

    /// The first `limit` rows of an entity as the world starts (its seed), in key
    /// order: what the served OpenAPI document shows as examples.
    pub fn seed_rows(&self, entity: &str, limit: usize) -> Result<Vec<Value>> {
        let conn = Connection::open_with_flags(self.base.path(), OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        let sql = format!("SELECT payload FROM {} ORDER BY _key LIMIT ?1", quote(entity));
        let mut statement = conn.prepare(&sql)?;
        let rows = statement.query_map([limit as i64], |r| r.get::<_, String>(0))?;
        Ok(rows.map(|r| r.map(|text| parse_payload(&text))).collect::<rusqlite::Result<_>>()?)
    }

    /// The indexed template file every session copies (read apart by `state_diff`).
    pub(crate) fn path(&self) -> &Path {
        self.base.path()
    }

    /// The world's directory.
    pub fn world(&self) -> &Path {
        &self.world
    }

    /// The world's contract.
    pub fn contract(&self) -> &Arc<Contract> {
        &self.contract
    }

    /// The template's database file: a normal SQLite file (sessions share it read-only;
    /// it may be attached by name), never written while the template lives.
    pub fn database(&self) -> &Path {
        self.base.path()
    }

    /// A whole copy of the template at a new path in `dir` (a durable session's start).
    fn copy_into(&self, dir: &Path) -> Result<PathBuf> {
        let path = dir.join(format!("{}.db", new_batch_id()));
        std::fs::copy(self.base.path(), &path).map_err(|e| WorldError::io(e, self.base.path()))?;
        Ok(path)
    }

    /// The batch digest of the snapshot the template holds.
    pub fn digest(&self) -> Option<String> {
        self.snapshot.as_ref().and_then(|s| s.get("batchDigest")).and_then(Value::as_str).map(str::to_string)
    }
}

/// One session of a served world: its own database over the shared [`Template`]
/// (copy-on-write, or a whole copy for a durable session), reset to a fresh one.
pub struct WorldState {
    shared: Arc<Template>,
    /// This session's directory (its database files live here).
    scratch: Scratch,
    /// The directory of a durable session (`--state DIR`): its database lives
    /// there, named by `DIR/current`, instead of in `scratch`.
    durable: Option<PathBuf>,
    current: RwLock<Arc<Db>>,
}

/// The file in a durable state directory naming its live database.
const CURRENT: &str = "current";

impl std::fmt::Debug for WorldState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorldState").field("world", &self.shared.world).finish()
    }
}

fn parse_payload(text: &str) -> Value {
    gateway_world::json::parse_clean(text).unwrap_or_default()
}

impl WorldState {
    /// Open the world: check it, prepare the indexed template, open a session copy.
    /// `indexed` names, per entity, the dotted paths equality filters use.
    pub fn open(world: &Path, indexed: BTreeMap<String, Vec<String>>) -> Result<WorldState> {
        WorldState::session(Arc::new(Template::open(world, indexed)?))
    }

    /// A new session on a shared template: an empty overlay of it in a directory of its own.
    pub fn session(shared: Arc<Template>) -> Result<WorldState> {
        let scratch = Scratch::new("gateway-world-session")?;
        let db = Db::open(Storage::overlay(&shared.base, scratch.path())?, &shared.contract, false)?;
        Ok(WorldState { shared, scratch, durable: None, current: RwLock::new(Arc::new(db)) })
    }

    /// A durable session kept in `dir`: continued from the database `dir/current`
    /// names when there is one (every write acknowledged before a crash is there),
    /// else started from a copy of the template. Each commit is synced before its
    /// answers are sent; a reset replaces the database and then the name.
    pub fn durable(shared: Arc<Template>, dir: &Path) -> Result<WorldState> {
        std::fs::create_dir_all(dir).map_err(|e| WorldError::io(e, dir))?;
        let pointer = dir.join(CURRENT);
        let named = match std::fs::read_to_string(&pointer) {
            Ok(name) => Some(dir.join(name.trim())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => return Err(WorldError::io(error, &pointer)),
        };
        let scratch = Scratch::new("gateway-world-session")?;
        let path = match named {
            Some(path) if path.is_file() => {
                // Another contract's state is refused by name.
                Store::open(&path, shared.contract.clone(), false)?.close()?;
                add_indexes(&path, &shared.contract, &shared.indexed)?;
                path
            }
            Some(path) => {
                return Err(ContractError::new(
                    "state_missing",
                    format!("{} names {}, which does not exist", pointer.display(), path.display()),
                    "",
                )
                .into())
            }
            None => {
                let path = shared.copy_into(dir)?;
                publish_current(dir, &path)?;
                path
            }
        };
        remove_stale(dir, &path);
        let db = Db::open(Storage::File(path), &shared.contract, true)?;
        Ok(WorldState { shared, scratch, durable: Some(dir.to_path_buf()), current: RwLock::new(Arc::new(db)) })
    }

    /// Where this session's database files are made.
    fn home(&self) -> &Path {
        self.durable.as_deref().unwrap_or(self.scratch.path())
    }

    /// Open `path` as the session's database and retire the one in use.
    fn replace_db(&self, path: &Path) -> Result<()> {
        if let Some(dir) = &self.durable {
            publish_current(dir, path)?;
        }
        self.swap(Db::open(Storage::File(path.to_path_buf()), &self.shared.contract, self.durable.is_some())?);
        Ok(())
    }

    /// The world's contract.
    pub fn contract(&self) -> &Arc<Contract> {
        &self.shared.contract
    }

    /// The batch digest of the snapshot in use.
    pub fn digest(&self) -> Option<String> {
        self.shared.digest()
    }

    /// The template this session was copied from.
    pub fn template(&self) -> &Arc<Template> {
        &self.shared
    }

    /// The session's state as one SQLite file at `destination`: SQLite's online
    /// backup under the writer's lock, so it is consistent while requests go on.
    pub fn export(&self, destination: &Path) -> Result<()> {
        let db = self.db();
        let store = db.lock_writer();
        store.connection().execute("VACUUM INTO ?1", [destination.to_string_lossy()])?;
        Ok(())
    }

    /// Continue from a file [`WorldState::export`] wrote (elsewhere, perhaps): it
    /// is opened with a full audit of its rows, since it came from outside.
    pub fn restore(&self, source: &Path) -> Result<()> {
        let path = self.home().join(format!("{}.db", new_batch_id()));
        std::fs::copy(source, &path).map_err(|e| WorldError::io(e, source))?;
        Store::open(&path, self.shared.contract.clone(), true)?.close()?;
        add_indexes(&path, &self.shared.contract, &self.shared.indexed)?;
        self.replace_db(&path)?;
        Ok(())
    }

    /// A read-only connection of its own to the session's database as it stands (read
    /// apart by `state_diff`; an overlay through the copy-on-write VFS).
    pub(crate) fn read_connection(&self) -> Result<Connection> {
        Ok(self.db().storage.connect(OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?)
    }

    /// The name another connection of this process attaches the session's database by
    /// (a file's path; an overlay's registered name, which the copy-on-write VFS opens).
    pub(crate) fn attach_name(&self) -> String {
        self.db().storage.open_name()
    }

    fn db(&self) -> Arc<Db> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn swap(&self, db: Db) {
        let old = std::mem::replace(&mut *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner), Arc::new(db));
        drop_db(old);
    }

    /// Back to the start: a new, empty overlay of the template (a durable session: a
    /// fresh copy of it). The old database goes once no read holds it.
    pub fn reset(&self) -> Result<()> {
        if self.durable.is_some() {
            let path = self.shared.copy_into(self.home())?;
            return self.replace_db(&path);
        }
        self.swap(Db::open(Storage::overlay(&self.shared.base, self.home())?, &self.shared.contract, false)?);
        Ok(())
    }

    /// An empty world (for a legacy whole-state seed).
    fn reset_empty(&self) -> Result<()> {
        let path = self.home().join(format!("{}.db", new_batch_id()));
        Store::create(&path, self.shared.contract.clone())?.close()?;
        add_indexes(&path, &self.shared.contract, &self.shared.indexed)?;
        self.replace_db(&path)
    }

    /// `{batchDigest, contractHash}` of the snapshot in use, or null.
    pub fn describe_snapshot(&self) -> Value {
        match &self.shared.snapshot {
            None => Value::Null,
            Some(s) => object([
                ("batchDigest", s.get("batchDigest").cloned().unwrap_or_default()),
                ("contractHash", s.get("contractHash").cloned().unwrap_or_default()),
            ]),
        }
    }

    /// Start in one of the world's scenarios.
    pub fn apply_scenario(&self, name: &str) -> Result<()> {
        let scenarios = snapshot::scenario_dirs(&self.shared.world)?;
        let Some(scenario) = scenarios.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
            let listed = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            return Err(ContractError::new(
                "scenario",
                format!("No scenario {name}; the world has {listed}"),
                format!("/scenarios/{name}"),
            )
            .into());
        };
        let built = snapshot::scenario_snapshot(&self.shared.world, name);
        if let Some(default_digest) = self.digest() {
            let mut chunks = Vec::new();
            for path in snapshot::scenario_seed_files(&scenario.dir)? {
                chunks.push(gateway_world::files::file_sha256(&path).map_err(|e| WorldError::io(e, &path))?);
            }
            let digest = snapshot::batch_digest(&default_digest, &format!("scenario:{name}"), &chunks);
            let sidecar = gateway_world::snapshot::read_sidecar(&built)?;
            let current = built.is_file()
                && sidecar.is_some_and(|s| {
                    s.get("contractHash").and_then(Value::as_str) == Some(self.shared.contract.contract_hash().as_str())
                        && s.get("batchDigest").and_then(Value::as_str) == Some(digest.as_str())
                });
            if current {
                let path = self.home().join(format!("{}.db", new_batch_id()));
                std::fs::copy(&built, &path).map_err(|e| WorldError::io(e, &built))?;
                add_indexes(&path, &self.shared.contract, &self.shared.indexed)?;
                return self.replace_db(&path);
            }
            let overlay = snapshot::scenario_overlay(&scenario.dir)?;
            self.reset()?;
            return self.seed_live(&Value::Object(overlay), "replace");
        }
        let initial = gateway_world::files::read_json(&self.shared.world.join("data/initial.json"))?;
        let mut base = Map::default();
        for mutation in initial.get("mutations").and_then(Value::as_array).into_iter().flatten() {
            if mutation.get("op").and_then(Value::as_str) == Some("insert") {
                let entity = mutation.get("entity").and_then(Value::as_str).unwrap_or_default().to_string();
                if let Value::Array(rows) = base.entry(entity).or_insert_with(|| Value::Array(Vec::new())) {
                    rows.push(mutation.get("value").cloned().unwrap_or_default());
                }
            }
        }
        for (entity, rows) in snapshot::scenario_overlay(&scenario.dir)? {
            base.insert(entity, rows);
        }
        self.seed(&Value::Object(base))
    }

    /// The runner's seed: a legacy whole state `{entity: [rows]}` on an empty world,
    /// or an overlay `{base, rows, mode}` on the snapshot.
    pub fn seed(&self, body: &Value) -> Result<()> {
        let Some(map) = body.as_object() else {
            return Err(ContractError::new("seed", "Seed must be an object of entity -> rows", "/seed").into());
        };
        if let (Some(Value::Str(base)), Some(Value::Object(rows))) = (map.get("base"), map.get("rows")) {
            let mode = map.get("mode").cloned().unwrap_or(Value::str("append"));
            let mode = mode
                .as_str()
                .filter(|m| MODES.contains(m))
                .ok_or_else(|| ContractError::new("seed", format!("mode must be one of {}", MODES.join(", ")), "/seed/mode"))?;
            if Some(base.as_str()) != self.digest().as_deref() {
                let expected = self.digest().map(Value::Str).unwrap_or_default();
                return Err(ContractError::new("base_mismatch", "The overlay's base is not the snapshot this world is on", "")
                    .with("expected", expected)
                    .into());
            }
            self.reset()?;
            return self.seed_live(&Value::Object(rows.clone()), mode);
        }
        let mut mutations = Vec::new();
        for (entity, rows) in map {
            if self.shared.contract.entity(entity).is_none() {
                return Err(ContractError::new("seed", format!("Unknown entity {entity}"), format!("/seed/{entity}")).into());
            }
            let Some(rows) = rows.as_array() else {
                return Err(ContractError::new("seed", "Rows must be an array", format!("/seed/{entity}")).into());
            };
            for row in rows {
                mutations.push(object([
                    ("op", Value::str("insert")),
                    ("entity", Value::str(entity)),
                    ("value", row.clone()),
                    ("source", object([("record", Value::Str(format!("api-seed:{entity}")))])),
                ]));
            }
        }
        self.reset_empty()?;
        if mutations.is_empty() {
            return Ok(());
        }
        let batch = object([
            ("id", Value::Str(format!("api-seed-{}", new_batch_id()))),
            ("target", self.shared.contract.target().clone()),
            ("mapping", object([("id", Value::str("api-seed")), ("version", Value::str("1"))])),
            ("coverage", Value::str("partial")),
            ("mutations", Value::Array(mutations)),
        ]);
        self.write(|store| store.apply_batch(&batch).map(|_| ()), None)
    }

    /// Rows onto the world as it stands (append upserts, replace swaps entities).
    pub fn seed_live(&self, rows: &Value, mode: &str) -> Result<()> {
        check_mode(mode)?;
        let Some(rows): Option<Rows> = rows_from_object(rows) else {
            return Err(ContractError::new("rows", "rows must map entity names to arrays of rows", "/rows").into());
        };
        self.seed_rows(&rows, mode)
    }

    /// [`WorldState::seed_live`] of rows already grouped by entity.
    pub fn seed_rows(&self, rows: &Rows, mode: &str) -> Result<()> {
        check_mode(mode)?;
        self.write(
            |store| {
                let batch = seed_batch(store, rows, mode, Some(&format!("api-seed-{}", new_batch_id())))?;
                store.apply_batch(&batch).map(|_| ())
            },
            None,
        )
    }

    /// Run a write on the session's store; column caches of `entity` (or all) are dropped.
    pub fn write<T>(&self, body: impl FnOnce(&mut Store) -> Result<T>, entity: Option<&str>) -> Result<T> {
        self.db().write(body, entity)
    }

    /// How many groups of request writes the session's database has committed.
    pub fn group_commits(&self) -> u64 {
        self.db().group_commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Run `job` grouped with other requests' writes (see the module's session database, `Db`): resolves once the
    /// transaction holding it is committed. Needs a Tokio runtime (the drain runs on
    /// its blocking pool).
    pub fn write_grouped(&self, job: WriteJob, entity: Option<&str>) -> impl std::future::Future<Output = Result<Value>> + Send + 'static {
        let answer = self.db().submit(job, entity.map(str::to_string));
        async move { answer.await.unwrap_or_else(|_| Err(commit_failure("the writer stopped"))) }
    }

    /// Every row of an entity in key order.
    pub fn rows(&self, entity: &str) -> Result<Vec<Value>> {
        let sql = format!("SELECT payload FROM {} ORDER BY _key", quote(entity));
        self.db().read(|conn| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map([], |r| r.get::<_, String>(0))?;
            rows.map(|r| r.map(|text| parse_payload(&text))).collect()
        })
    }

    /// The rows of `entity` that may equal every `(dotted path, value)` condition,
    /// each with its stored key: a superset of the exact matches, for a caller that
    /// re-checks them with its own equality (the task grader's). SQLite's
    /// `json_extract` narrows on string and integer conditions — it cannot tell
    /// `true` from `1`, which only widens the superset — and a string condition on
    /// a path with a serving index is answered by that index, the whole primary key
    /// by the stored key; a condition it cannot
    /// narrow on (null, a float, a bool, a container, a path through something
    /// other than plain object keys) selects every row.
    pub fn rows_maybe_equal(&self, entity: &str, conditions: &Map) -> Result<Vec<(String, Value)>> {
        const EXACT_INT: u64 = 1 << 53;
        let plain = |path: &str| {
            path.split('.').all(|part| {
                part.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                    && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
        };
        let mut clauses = Vec::new();
        let mut params: Vec<rusqlite::types::Value> = Vec::new();
        // Every primary-key field named with a string or an integer: one row at most,
        // by its stored key (a value the key's schema refuses cannot be stored there).
        if let Some(declared) = self.shared.contract.entity(entity) {
            let key: Option<Map> = declared
                .primary_key
                .iter()
                .map(|field| match conditions.get(field) {
                    Some(value @ (Value::Str(_) | Value::Int(_))) => Some((field.clone(), value.clone())),
                    _ => None,
                })
                .collect();
            if let Some(encoded) = key.and_then(|key| gateway_world::store::key_of(declared, &Value::Object(key), true).ok()) {
                params.push(rusqlite::types::Value::Text(encoded));
                clauses.push(format!("_key = ?{}", params.len()));
            }
        }
        let indexed = self.shared.indexed.get(entity);
        for (path, wanted) in conditions {
            if let (Value::Str(text), Some(paths)) = (wanted, indexed) {
                if paths.iter().any(|p| p == path) {
                    // A serving index answers: the fold (lower-cased text) of an
                    // equal string is the fold of the wanted one.
                    params.push(rusqlite::types::Value::Text(text.to_lowercase()));
                    clauses.push(format!("{} = ?{}", fold_expression(path), params.len()));
                    continue;
                }
            }
            let bound = match wanted {
                Value::Str(text) => rusqlite::types::Value::Text(text.to_string()),
                Value::Int(n) if n.unsigned_abs() < EXACT_INT => rusqlite::types::Value::Integer(*n),
                _ => continue,
            };
            if !plain(path) {
                continue;
            }
            params.push(rusqlite::types::Value::Text(format!("$.{path}")));
            params.push(bound);
            clauses.push(format!("json_extract(payload, ?{}) = ?{}", params.len() - 1, params.len()));
        }
        let filter = if clauses.is_empty() { String::new() } else { format!(" WHERE {}", clauses.join(" AND ")) };
        let sql = format!("SELECT _key, payload FROM {}{filter} ORDER BY _key", quote(entity));
        self.db().read(|conn| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows =
                statement.query_map(rusqlite::params_from_iter(params.iter()), |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            rows.map(|r| r.map(|(key, text)| (key, parse_payload(&text)))).collect()
        })
    }

    /// How many rows of `entity` hold exactly each `(dotted path, string)`: what an
    /// assertions grader's `count` check with such a `where` asks. Answered from the
    /// serving indexes alone when every path has one (the folded value narrows, the
    /// exact value the index carries decides: no row is read, none decoded); None when
    /// a path has none, or the wanted text could pass for a container's JSON.
    pub fn count_equal(&self, entity: &str, conditions: &[(&str, &str)]) -> Result<Option<i64>> {
        let Some(indexed) = self.shared.indexed.get(entity).filter(|_| self.shared.contract.entity(entity).is_some()) else {
            return Ok(None);
        };
        let answerable =
            |(path, wanted): &&(&str, &str)| indexed.iter().any(|p| p == path) && !wanted.starts_with('{') && !wanted.starts_with('[');
        if conditions.is_empty() || !conditions.iter().all(|c| answerable(&c)) {
            return Ok(None);
        }
        let mut clauses = Vec::new();
        let mut params = Vec::new();
        for (path, wanted) in conditions {
            params.push(wanted.to_lowercase());
            clauses.push(format!("{} = ?{}", fold_expression(path), params.len()));
            params.push(wanted.to_string());
            clauses.push(format!("{} = ?{}", exact_expression(path), params.len()));
        }
        let sql = format!("SELECT COUNT(*) FROM {} WHERE {}", quote(entity), clauses.join(" AND "));
        let count = self.db().read(|conn| conn.prepare_cached(&sql)?.query_row(rusqlite::params_from_iter(params.iter()), |r| r.get(0)))?;
        Ok(Some(count))
    }

    /// The row at a primary key (an object of exactly the key fields).
    pub fn get(&self, entity: &str, key: &Value) -> Result<Option<Value>> {
        let declared = self
            .shared
            .contract
            .entity(entity)
            .ok_or_else(|| ContractError::new("entity", "Unknown entity type", "").with("entity", Value::str(entity)))?;
        let encoded = gateway_world::store::key_of(declared, key, true)?;
        self.row_at(entity, &encoded)
    }

    fn row_at(&self, entity: &str, encoded: &str) -> Result<Option<Value>> {
        let sql = format!("SELECT payload FROM {} WHERE _key = ?1", quote(entity));
        self.db().read(|conn| {
            conn.prepare_cached(&sql)?.query_row([encoded], |r| r.get::<_, String>(0)).optional().map(|p| p.map(|t| parse_payload(&t)))
        })
    }

    /// Rows of `entity` passing every filter, in key order: the total and the page
    /// `[offset, offset + limit)` (Python slice semantics), or every match without a window.
    pub fn select(&self, entity: &str, filters: &[Filter], window: Option<(i64, i64)>) -> Result<(i64, Vec<Value>)> {
        let db = self.db();
        if let Some((filter, expression)) = self.driving_filter(&db, entity, filters)? {
            return select_indexed(&db, entity, filters, filter, &expression, window);
        }
        if filters.is_empty() {
            return select_all(&db, entity, window);
        }
        // Streaming scan over folded columns: no payload is decoded unless it is on the page.
        let columns: Vec<Arc<Column>> = filters.iter().map(|f| db.column(entity, &f.path)).collect::<Result<_>>()?;
        if columns.iter().any(|c| c.generation == u64::MAX || c.generation != columns[0].generation) {
            // A write landed between two column scans: answer from the rows themselves.
            let matched: Vec<Value> = self.rows(entity)?.into_iter().filter(|r| matches(r, filters)).collect();
            return Ok(slice_all(matched, window));
        }
        let matching = matching_positions(&db, entity, filters, &columns);
        let total = matching.len() as i64;
        let (start, stop) = match window {
            Some((offset, limit)) => crate::page::python_slice(total, offset, offset.saturating_add(limit)),
            None => (0, matching.len()),
        };
        let sql = format!("SELECT payload FROM {} WHERE _key = ?1", quote(entity));
        let keys = &columns[0].keys;
        let rows = db.read(|conn| {
            let mut statement = conn.prepare_cached(&sql)?;
            let mut rows = Vec::with_capacity(stop - start);
            for index in &matching[start..stop] {
                if let Some(text) = statement.query_row([&keys[*index as usize]], |r| r.get::<_, String>(0)).optional()? {
                    rows.push(parse_payload(&text));
                }
            }
            Ok(rows)
        })?;
        Ok((total, rows))
    }

    /// The filter the serving index answers, with its folded expression: when every
    /// filter is an indexed equality (a mix with substring filters is answered from
    /// the folded columns instead) and no row holds an array at its path (an array
    /// matches element by element, which the index cannot answer).
    fn driving_filter<'f>(&self, db: &Db, entity: &str, filters: &'f [Filter]) -> Result<Option<(&'f Filter, String)>> {
        let indexed = |f: &Filter| f.mode == "equals" && self.shared.indexed.get(entity).is_some_and(|paths| paths.contains(&f.path));
        let Some(filter) = filters.first().filter(|_| filters.iter().all(indexed)) else { return Ok(None) };
        let expression = fold_expression(&filter.path);
        let sql = format!("SELECT EXISTS(SELECT 1 FROM {} WHERE {expression} = ?1)", quote(entity));
        let has_arrays: bool = db.read(|conn| conn.prepare_cached(&sql)?.query_row([ARRAY_FOLD], |r| r.get(0)))?;
        Ok((!has_arrays).then_some((filter, expression)))
    }

    /// Every entity keyed the way the original's `/__world/state` keys it.
    pub fn dump(&self) -> Result<Map> {
        let mut out = Map::default();
        for entity in &self.shared.contract.entities {
            let mut keyed = Map::default();
            for row in self.rows(&entity.name)? {
                let key = entity.primary_key.iter().map(|f| python_str(row.get(f).unwrap_or(&Value::Null))).collect::<Vec<_>>().join(":");
                keyed.insert(key, row);
            }
            out.insert(entity.name.clone(), Value::Object(keyed));
        }
        Ok(out)
    }
}

fn check_mode(mode: &str) -> Result<()> {
    if MODES.contains(&mode) {
        return Ok(());
    }
    Err(ContractError::new("seed", format!("mode must be one of {}", MODES.join(", ")), "/seed/mode").into())
}

/// [`WorldState::select`] driven by the index on `filter` (its folded `expression`):
/// the page read straight from the index when it is the only filter, else every
/// indexed match checked against the other filters.
fn select_indexed(
    db: &Db,
    entity: &str,
    filters: &[Filter],
    filter: &Filter,
    expression: &str,
    window: Option<(i64, i64)>,
) -> Result<(i64, Vec<Value>)> {
    let table = quote(entity);
    if filters.len() > 1 {
        let sql = format!("SELECT payload FROM {table} WHERE {expression} = ?1 ORDER BY _key");
        let matched = db.read(|conn| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map([&filter.wanted], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for row in rows {
                let row = parse_payload(&row?);
                if matches(&row, filters) {
                    out.push(row);
                }
            }
            Ok(out)
        })?;
        return Ok(slice_all(matched, window));
    }
    let total = indexed_count(db, entity, filter, expression)?;
    let (start, stop) = match window {
        Some((offset, limit)) => crate::page::python_slice(total, offset, offset.saturating_add(limit)),
        None => (0, total as usize),
    };
    let page_sql = format!("SELECT payload FROM {table} WHERE {expression} = ?1 ORDER BY _key LIMIT ?2 OFFSET ?3");
    let rows = db.read(|conn| {
        let mut statement = conn.prepare_cached(&page_sql)?;
        let rows = statement.query_map(rusqlite::params![filter.wanted, (stop - start) as i64, start as i64], |r| r.get::<_, String>(0))?;
        rows.map(|r| r.map(|t| parse_payload(&t))).collect::<rusqlite::Result<Vec<_>>>()
    })?;
    // The index answers Python's semantics exactly; re-check the page anyway.
    Ok((total, rows.into_iter().filter(|r| matches(r, filters)).collect()))
}

/// How many rows the index finds for `filter`, cached until the next write.
fn indexed_count(db: &Db, entity: &str, filter: &Filter, expression: &str) -> Result<i64> {
    let count_key = (entity.to_string(), filter.path.clone(), filter.wanted.clone());
    let started = db.generation();
    let cached =
        db.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&count_key).filter(|(g, _)| *g == started).map(|(_, n)| *n);
    if let Some(total) = cached {
        return Ok(total);
    }
    let count_sql = format!("SELECT COUNT(*) FROM {} WHERE {expression} = ?1", quote(entity));
    let total: i64 = db.read(|conn| conn.prepare_cached(&count_sql)?.query_row([&filter.wanted], |r| r.get(0)))?;
    if db.generation() == started {
        db.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(count_key, (started, total));
    }
    Ok(total)
}

/// [`WorldState::select`] without filters: the page in key order, and the row count.
fn select_all(db: &Db, entity: &str, window: Option<(i64, i64)>) -> Result<(i64, Vec<Value>)> {
    let table = quote(entity);
    let total: i64 = db.read(|conn| conn.prepare_cached(&format!("SELECT COUNT(*) FROM {table}"))?.query_row([], |r| r.get(0)))?;
    let (start, stop) = match window {
        Some((offset, limit)) => crate::page::python_slice(total, offset, offset.saturating_add(limit)),
        None => (0, total as usize),
    };
    let sql = format!("SELECT payload FROM {table} ORDER BY _key LIMIT ?1 OFFSET ?2");
    let rows = db.read(|conn| {
        let mut statement = conn.prepare_cached(&sql)?;
        let rows = statement.query_map([(stop - start) as i64, start as i64], |r| r.get::<_, String>(0))?;
        rows.map(|r| r.map(|t| parse_payload(&t))).collect()
    })?;
    Ok((total, rows))
}

/// The positions (in the columns' key order) of the rows every filter marks, from
/// the folded columns of one generation; cached until the next write.
fn matching_positions(db: &Db, entity: &str, filters: &[Filter], columns: &[Arc<Column>]) -> Arc<Vec<u32>> {
    let generation = columns[0].generation;
    let result_key = (
        entity.to_string(),
        filters.iter().map(|f| format!("{}\u{0}{}\u{0}{}", f.path, f.mode, f.wanted)).collect::<Vec<_>>().join("\u{1}"),
    );
    let cached = db
        .matches
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&result_key)
        .filter(|(g, _)| *g == generation)
        .map(|(_, m)| m.clone());
    if let Some(matching) = cached {
        return matching;
    }
    let count = columns[0].keys.len();
    let mut passed = vec![true; count];
    for (filter, column) in filters.iter().zip(columns) {
        let mut marks = vec![false; count];
        column.mark(filter, &mut marks);
        passed.iter_mut().zip(marks).for_each(|(p, m)| *p &= m);
    }
    let matching: Arc<Vec<u32>> = Arc::new((0..count as u32).filter(|i| passed[*i as usize]).collect());
    let mut cache = db.matches.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if cache.len() >= 256 {
        cache.clear();
    }
    cache.insert(result_key, (generation, matching.clone()));
    matching
}

fn slice_all(rows: Vec<Value>, window: Option<(i64, i64)>) -> (i64, Vec<Value>) {
    let total = rows.len() as i64;
    match window {
        None => (total, rows),
        Some((offset, limit)) => {
            let (a, b) = crate::page::python_slice(total, offset, offset.saturating_add(limit));
            (total, rows.into_iter().skip(a).take(b - a).collect())
        }
    }
}

/// Make `path` the live database of the durable directory `dir`: the file's bytes
/// are synced, then `dir/current` is replaced atomically and the directory synced,
/// so a crash at any moment leaves `current` naming a whole database.
fn publish_current(dir: &Path, path: &Path) -> Result<()> {
    let sync = |target: &Path| std::fs::File::open(target).and_then(|f| f.sync_all()).map_err(|e| WorldError::io(e, target));
    sync(path)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let staged = dir.join(format!("{CURRENT}.tmp"));
    std::fs::write(&staged, format!("{name}\n")).map_err(|e| WorldError::io(e, &staged))?;
    sync(&staged)?;
    std::fs::rename(&staged, dir.join(CURRENT)).map_err(|e| WorldError::io(e, dir))?;
    sync(dir)
}

/// Databases of a durable directory other than the live one: left by a crash
/// between a reset's copy and its switch, or by a reset whose old file was still
/// being removed.
fn remove_stale(dir: &Path, live: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let live_name = live.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let base = name.trim_end_matches("-wal").trim_end_matches("-shm");
        if base.ends_with(".db") && base != live_name {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn drop_db(db: Arc<Db>) {
    // The last holder removes the files; in-flight readers keep theirs alive until done.
    if let Ok(db) = Arc::try_unwrap(db) {
        let files = db.storage.files();
        drop(db);
        fn remove(files: &[PathBuf]) {
            for file in files {
                let _ = std::fs::remove_file(file);
            }
        }
        // Unlinking a large file frees its blocks before returning (milliseconds
        // for a 20K-row world): a reset should not wait for that.
        let background = files.clone();
        if std::thread::Builder::new().name("session-file-removal".into()).spawn(move || remove(&background)).is_err() {
            remove(&files);
        }
    }
}

fn add_indexes(path: &Path, contract: &Arc<Contract>, indexed: &BTreeMap<String, Vec<String>>) -> Result<()> {
    let conn = Connection::open(path)?;
    register_functions(&conn)?;
    // WAL is recorded in the file: every copy of this one opens in WAL mode already.
    conn.execute_batch("PRAGMA journal_mode = WAL")?;
    for (entity, paths) in indexed {
        if contract.entity(entity).is_none() {
            continue;
        }
        for (n, dotted) in paths.iter().enumerate() {
            let name = quote(&format!("{SERVING_INDEX_PREFIX}{entity}_{n}"));
            // The exact value last: the key order of one folded value is the index's
            // order still, and a count of exact equals is answered from the index alone.
            conn.execute_batch(&format!(
                "CREATE INDEX IF NOT EXISTS {name} ON {} ({}, _key, {})",
                quote(entity),
                fold_expression(dotted),
                exact_expression(dotted)
            ))?;
        }
    }
    // The file whole, no log beside it: a template is shared as it stands on disk.
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json::object;

    fn helpdesk() -> Arc<WorldState> {
        let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
        Arc::new(WorldState::open(&world, BTreeMap::new()).expect("the example opens"))
    }

    fn customer(id: &str) -> Value {
        object([
            ("id", Value::str(id)),
            ("name", Value::str("Grouped Writer")),
            ("email", Value::Str(format!("{}@example.com", id.to_lowercase()))),
            ("tier", Value::str("free")),
            ("created_at", Value::str("2026-01-01T00:00:00Z")),
        ])
    }

    fn count(state: &WorldState, sql: &'static str) -> i64 {
        state.write(|store| Ok(store.connection().query_row(sql, [], |r| r.get::<_, i64>(0))?), None).expect("count")
    }

    #[test]
    fn grouped_writes_share_commits_but_stay_separate_batches() {
        let state = helpdesk();
        let customers = state.rows("customers").unwrap().len();
        let batches = count(&state, "SELECT COUNT(*) FROM _gateway_batches");
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let answers: Vec<Result<Value>> = runtime.block_on(async {
            let tasks: Vec<_> = (0..200)
                .map(|n| {
                    let state = state.clone();
                    // C1 exists already: that one write is refused, alone.
                    let id = if n == 77 { "C1".to_string() } else { format!("G{n}") };
                    tokio::spawn(async move {
                        let row = customer(&id);
                        let job: WriteJob = Box::new(move |store| store.insert("customers", &row, None));
                        state.write_grouped(job, Some("customers")).await
                    })
                })
                .collect();
            let mut answers = Vec::new();
            for task in tasks {
                answers.push(task.await.expect("task"));
            }
            answers
        });
        let refused: Vec<usize> = answers.iter().enumerate().filter(|(_, a)| a.is_err()).map(|(n, _)| n).collect();
        assert_eq!(refused, vec![77]);
        assert!(answers[77].as_ref().unwrap_err().to_string().contains("unique"), "{:?}", answers[77]);
        assert_eq!(answers[3].as_ref().unwrap().get("id").and_then(Value::as_str), Some("G3"));
        // Every accepted write is visible to readers once answered, each its own batch
        // with its own lineage row; the refused one left nothing.
        assert_eq!(state.rows("customers").unwrap().len(), customers + 199);
        assert_eq!(count(&state, "SELECT COUNT(*) FROM _gateway_batches"), batches + 199);
        assert_eq!(count(&state, "SELECT COUNT(*) FROM _gateway_lineage WHERE key LIKE '%G%'"), 199);
        let commits = state.group_commits();
        assert!((1..199).contains(&commits), "199 writes took {commits} commits");
    }

    #[test]
    fn a_grouped_write_sees_the_writes_before_it_and_caches_follow() {
        let state = helpdesk();
        // A column cache built before the writes must not survive them.
        let (before, _) =
            state.select("customers", &[Filter { path: "tier".into(), mode: "equals".into(), wanted: "free".into() }], None).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let first: WriteJob = Box::new(|store| store.insert("customers", &customer("H1"), None));
            // The second write reads the first inside the same group.
            let second: WriteJob = Box::new(|store| {
                let found = store.get("customers", &object([("id", Value::str("H1"))]))?;
                assert!(found.is_some(), "the earlier write of the group is visible to the later one");
                store.insert("customers", &customer("H2"), None)
            });
            let (a, b) = tokio::join!(state.write_grouped(first, Some("customers")), state.write_grouped(second, Some("customers")));
            a.unwrap();
            b.unwrap();
        });
        let (after, _) =
            state.select("customers", &[Filter { path: "tier".into(), mode: "equals".into(), wanted: "free".into() }], None).unwrap();
        assert_eq!(after, before + 2);
    }

    #[test]
    fn a_count_of_exact_strings_is_answered_by_the_serving_index() {
        let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
        let indexed =
            BTreeMap::from([("customers".to_string(), vec!["name".to_string()]), ("tickets".to_string(), vec!["tags".to_string()])]);
        let state = WorldState::open(&world, indexed).unwrap();
        for (id, name) in [("X1", "Grouped Writer"), ("X2", "GROUPED WRITER"), ("X3", "Grouped Writer")] {
            let Value::Object(mut row) = customer(id) else { unreachable!() };
            row.insert("name".into(), Value::str(name));
            let row = Value::Object(row);
            state.write(|store| store.insert("customers", &row, None), Some("customers")).unwrap();
        }
        let by_rows = |entity: &str, path: &str, wanted: &str| {
            state.rows(entity).unwrap().iter().filter(|r| dig(r, path).and_then(Value::as_str) == Some(wanted)).count() as i64
        };
        assert_eq!(state.count_equal("customers", &[("name", "Grouped Writer")]).unwrap(), Some(2), "the case counts");
        assert_eq!(by_rows("customers", "name", "Grouped Writer"), 2);
        // An array holding the string is not the string.
        assert_eq!(state.count_equal("tickets", &[("tags", "billing")]).unwrap(), Some(by_rows("tickets", "tags", "billing")));
        assert_eq!(state.count_equal("customers", &[("email", "x")]).unwrap(), None, "no index on email");
        // The program reads the index's columns only: the table's cursor is opened
        // (a deferred seek) but no column of it is ever read.
        let program: Vec<(String, i64)> = state
            .write(
                |store| {
                    let sql = format!(
                        "EXPLAIN SELECT COUNT(*) FROM customers WHERE {} = 'a' AND {} = 'A'",
                        fold_expression("name"),
                        exact_expression("name")
                    );
                    let mut statement = store.connection().prepare(&sql)?;
                    let ops = statement.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, i64>(2)?)))?;
                    Ok(ops.collect::<rusqlite::Result<Vec<_>>>()?)
                },
                None,
            )
            .unwrap();
        let table = program.iter().find(|(op, _)| op == "OpenRead").map(|(_, cursor)| *cursor);
        let columns: Vec<i64> = program.iter().filter(|(op, _)| op == "Column").map(|(_, cursor)| *cursor).collect();
        assert!(!columns.is_empty() && !columns.contains(&table.unwrap()), "{program:?}");
    }

    #[test]
    fn a_durable_state_continues_after_a_restart_and_resets_in_place() {
        let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
        let dir = tempfile::tempdir().unwrap();
        let template = || Arc::new(Template::open(&world, BTreeMap::new()).unwrap());
        let customers;
        {
            let state = WorldState::durable(template(), dir.path()).unwrap();
            customers = state.rows("customers").unwrap().len();
            state.write(|store| store.insert("customers", &customer("D1"), None), Some("customers")).unwrap();
        }
        let state = WorldState::durable(template(), dir.path()).unwrap();
        assert_eq!(state.rows("customers").unwrap().len(), customers + 1, "the write outlived the process's state");
        state.reset().unwrap();
        assert_eq!(state.rows("customers").unwrap().len(), customers);
        drop(state);
        let state = WorldState::durable(template(), dir.path()).unwrap();
        assert_eq!(state.rows("customers").unwrap().len(), customers, "the reset is what a restart finds");
        let databases =
            std::fs::read_dir(dir.path()).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".db")).count();
        assert_eq!(databases, 1, "retired databases are removed");
    }
}

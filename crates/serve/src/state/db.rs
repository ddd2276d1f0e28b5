//! A session's database: where its pages live ([`Storage`]: a file of its own, or a
//! copy-on-write overlay of the template), its writer with group commit, its pooled
//! read-only connections, and the folded-column and count caches keyed by the write
//! generation.

use gateway_cow::Overlay;
use gateway_world::compiler::quote;
use gateway_world::error::Error as WorldError;
use gateway_world::json::{python_str, Value};
use gateway_world::store::{register_functions, Store};
use gateway_world::{Contract, Result};
use rusqlite::{Connection, OpenFlags};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A filter on one row field: `(dotted path, mode, wanted text lower-cased)`.
#[derive(Debug, Clone)]
pub struct Filter {
    /// Dotted path into the row.
    pub path: String,
    /// equals | contains | prefix.
    pub mode: String,
    /// The wanted value, lower-cased.
    pub wanted: String,
}

/// The JSON path literal SQLite uses for a dotted row path.
pub(super) fn json_path(dotted: &str) -> String {
    let mut path = String::from("$");
    for part in dotted.split('.') {
        path.push('.');
        gateway_world::json::write_string(&mut path, part, false);
    }
    format!("'{}'", path.replace('\'', "''"))
}

pub(super) fn fold_expression(dotted: &str) -> String {
    format!("gw_fold(\"payload\" -> {})", json_path(dotted))
}

/// The value at a dotted path as SQL sees it (`->>`: text for a string, a number for
/// a number, JSON text for a container): the serving index's last column.
pub(super) fn exact_expression(dotted: &str) -> String {
    format!("\"payload\" ->> {}", json_path(dotted))
}

pub(super) fn compare(have: &str, wanted: &str, mode: &str) -> bool {
    match mode {
        "contains" => have.contains(wanted),
        "prefix" => have.starts_with(wanted),
        _ => have == wanted,
    }
}

/// A folded column: every row's `_key` (in key order) and the folded text of its
/// value at one path, all segments in one buffer so a substring filter is one
/// SIMD scan (`memchr::memmem`) instead of a comparison per row.
#[derive(Debug)]
pub(super) struct Column {
    /// The write generation the scan saw (`u64::MAX` when a write raced it).
    pub(super) generation: u64,
    pub(super) keys: Vec<String>,
    /// Folded values joined by NUL; an array contributes one segment per element.
    text: String,
    /// Start of each segment in `text`.
    starts: Vec<usize>,
    /// End of each segment in `text`.
    ends: Vec<usize>,
    /// The row each segment belongs to.
    rows: Vec<usize>,
}

impl Column {
    fn build(values: Vec<(String, Vec<String>)>) -> Column {
        let mut column = Column {
            generation: 0,
            keys: Vec::with_capacity(values.len()),
            text: String::new(),
            starts: Vec::new(),
            ends: Vec::new(),
            rows: Vec::new(),
        };
        for (row, (key, segments)) in values.into_iter().enumerate() {
            column.keys.push(key);
            for segment in segments {
                column.starts.push(column.text.len());
                column.text.push_str(&segment);
                column.ends.push(column.text.len());
                column.text.push('\0');
                column.rows.push(row);
            }
        }
        column
    }

    /// Mark the rows some segment of which passes `filter`.
    pub(super) fn mark(&self, filter: &Filter, marks: &mut [bool]) {
        let wanted = filter.wanted.as_bytes();
        let text = self.text.as_bytes();
        if filter.mode == "contains" && !wanted.contains(&0) {
            if wanted.is_empty() {
                self.rows.iter().for_each(|r| marks[*r] = true);
                return;
            }
            for hit in memchr::memmem::find_iter(text, wanted) {
                let segment = self.starts.partition_point(|s| *s <= hit) - 1;
                if hit + wanted.len() <= self.ends[segment] {
                    marks[self.rows[segment]] = true;
                }
            }
            return;
        }
        for (segment, row) in self.rows.iter().enumerate() {
            if !marks[*row] && compare(&self.text[self.starts[segment]..self.ends[segment]], &filter.wanted, &filter.mode) {
                marks[*row] = true;
            }
        }
    }
}

// The WAL is folded into the database every 10,000 pages (40 MiB; overlays: see
// `OVERLAY_PRAGMAS`): a checkpoint writes each page once however often the log
// holds it, and inserts keyed at random (ids a client or a capture supplies; the
// ids the server generates are ordered) rewrite the same few hundred index pages
// again and again (with 1,000 pages, a fifth of a create-heavy session's CPU went to
// checkpoints). A session's log only grows that large if it writes that much.
// The writer keeps no mapping and a cache of 32 MiB: a commit ends by trimming the
// page cache, which costs in proportion to its size, but request writes commit
// once per group, while a cache that holds the index pages random inserts touch
// saves reading them again (measured on 20K rows: with 8 MiB, a tenth of the
// writer's time went to pread).
// `synchronous` comes first so that a switch to WAL (a copy of a template not yet
// in WAL mode) is not itself synced; templates are put in WAL mode once, so their
// copies open without writing at all.
const SESSION_PRAGMAS: &str =
    "PRAGMA synchronous = OFF; PRAGMA journal_mode = WAL; PRAGMA cache_size = -32768; PRAGMA mmap_size = 0; PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 10000;";
// A durable session (`worlds serve --state DIR`) syncs each commit: its answers
// are sent only after the group holding them is on disk.
const DURABLE_PRAGMAS: &str = "PRAGMA synchronous = FULL;";
// An overlay's WAL is held in memory (gateway-cow's volatile overlays, within the
// process's budget), so it is folded in every 20,000 pages (80 MiB) rather than
// 10,000: random keys spread a create-heavy session's writes over thousands of leaf
// pages, and a longer log rewrites more of them before each is copied out (measured
// on 20K rows with random generated ids: server CPU per create −10 %; with ordered
// ones, 1,000 to 20,000 pages were alike). The log keeps its memory
// between checkpoints (no `journal_size_limit`): cut back, it was allocated and
// zeroed again every cycle, which cost more than the copying it saved.
const OVERLAY_PRAGMAS: &str = "PRAGMA wal_autocheckpoint = 20000;";
const READER_PRAGMAS: &str = "PRAGMA cache_size = -65536; PRAGMA mmap_size = 1073741824;";

/// The most writes one group commits together: enough to amortise a WAL commit
/// over the requests a busy server has in flight, few enough that the first of
/// them never waits long for the last.
const MAX_GROUP: usize = 64;

/// A write handed to the session's writer: it runs as its own batch inside the
/// group's transaction and returns the row it wrote (or null).
pub type WriteJob = Box<dyn FnOnce(&mut Store) -> Result<Value> + Send>;

/// Where a queued write's outcome goes.
type ReplySender = tokio::sync::oneshot::Sender<Result<Value>>;

struct QueuedWrite {
    job: WriteJob,
    /// The entity it writes (its column caches are dropped after the commit).
    entity: Option<String>,
    reply: ReplySender,
}

/// Writes waiting for the writer, and whether a drain task is running.
#[derive(Default)]
struct WriteQueue {
    waiting: Vec<QueuedWrite>,
    draining: bool,
}

pub(super) fn commit_failure(reason: &str) -> WorldError {
    WorldError::Io { message: format!("the write was not committed: {reason}") }
}

/// One session database: a writer, pooled readers, and folded-column caches.
///
/// Requests' single-row writes are committed in groups (`WorldState::write_grouped`):
/// they queue, and one drain task on the blocking pool takes every write waiting,
/// runs each as its own batch (a savepoint with its own ledger and lineage rows,
/// audited and undone alone) inside one transaction, commits once, and only then
/// answers each. An answer is never sent for a write that is not committed, and a
/// busy server pays for one WAL commit per group rather than per write, with no
/// thread hand-off per write. Other writes (`WorldState::write`) take the writer
/// between groups, each in its own transaction.
pub(super) struct Db {
    pub(super) storage: Storage,
    writer: Mutex<Store>,
    queue: Mutex<WriteQueue>,
    /// Groups committed by the drain (each holding one or more writes).
    pub(super) group_commits: std::sync::atomic::AtomicU64,
    readers: Mutex<Vec<Connection>>,
    columns: Mutex<HashMap<(String, String), Arc<Column>>>,
    /// Rows (column positions) matching a scanned filter set, until the next write.
    pub(super) matches: Mutex<HashMap<(String, String), (u64, Arc<Vec<u32>>)>>,
    /// Matching-row counts of indexed equality filters, until the next write.
    pub(super) counts: Mutex<HashMap<(String, String, String), (u64, i64)>>,
    /// Bumped by every write: a column built across a write is never cached.
    generation: std::sync::atomic::AtomicU64,
}

impl Db {
    pub(super) fn open(storage: Storage, contract: &Arc<Contract>, durable: bool) -> Result<Db> {
        let store = match &storage {
            Storage::File(path) => Store::open(path, contract.clone(), false)?,
            Storage::Overlay(overlay) => Store::open_on(storage.connect(OpenFlags::default())?, contract.clone(), overlay.path(), false)?,
        };
        // A private session copy: no durability needed (a reset copies it again), but
        // readers run beside the writer (WAL) and pages stay mapped and cached.
        store.connection().execute_batch(SESSION_PRAGMAS)?;
        if let Storage::Overlay(_) = &storage {
            store.connection().execute_batch(OVERLAY_PRAGMAS)?;
        }
        if durable {
            store.connection().execute_batch(DURABLE_PRAGMAS)?;
        }
        Ok(Db {
            storage,
            writer: Mutex::new(store),
            queue: Mutex::default(),
            group_commits: Default::default(),
            readers: Mutex::new(Vec::new()),
            columns: Mutex::new(HashMap::new()),
            counts: Mutex::new(HashMap::new()),
            matches: Mutex::new(HashMap::new()),
            generation: Default::default(),
        })
    }

    pub(super) fn read<T>(&self, body: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        let pooled = self.readers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => {
                let conn = self.storage.connect(OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
                conn.execute_batch(READER_PRAGMAS)?;
                register_functions(&conn)?;
                conn
            }
        };
        let result = body(&conn);
        self.readers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(conn);
        Ok(result?)
    }

    pub(super) fn invalidate(&self, entity: Option<&str>) {
        self.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
        self.matches.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
        let mut columns = self.columns.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match entity {
            Some(entity) => columns.retain(|(e, _), _| e != entity),
            None => columns.clear(),
        }
    }

    pub(super) fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub(super) fn lock_writer(&self) -> std::sync::MutexGuard<'_, Store> {
        self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Run `body` on the writer in its own transaction, between groups.
    pub(super) fn write<T>(&self, body: impl FnOnce(&mut Store) -> Result<T>, entity: Option<&str>) -> Result<T> {
        let result = body(&mut self.lock_writer());
        self.invalidate(entity);
        result
    }

    /// Queue `job`; a drain task is started when none runs.
    pub(super) fn submit(self: &Arc<Self>, job: WriteJob, entity: Option<String>) -> tokio::sync::oneshot::Receiver<Result<Value>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let mut queue = self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        queue.waiting.push(QueuedWrite { job, entity, reply });
        if !queue.draining {
            queue.draining = true;
            let db = self.clone();
            tokio::task::spawn_blocking(move || db.drain());
        }
        answer
    }

    /// Commit groups until the queue is empty.
    fn drain(&self) {
        loop {
            let group: Vec<QueuedWrite> = {
                let mut queue = self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if queue.waiting.is_empty() {
                    queue.draining = false;
                    return;
                }
                let take = queue.waiting.len().min(MAX_GROUP);
                queue.waiting.drain(..take).collect()
            };
            self.commit_group(group);
        }
    }

    /// Run a group of writes in one transaction and answer each after the commit.
    fn commit_group(&self, group: Vec<QueuedWrite>) {
        let (ran, touched, committed) = self.run_group(group);
        // Caches are dropped after the commit, so no reader caches a column of the
        // old rows under the new generation.
        match touched {
            Some(entities) => entities.iter().for_each(|entity| self.invalidate(Some(entity))),
            None => self.invalidate(None),
        }
        for (reply, result) in ran {
            let answer = match (&committed, result) {
                // A refused write changed nothing, whatever became of its group.
                (_, Err(refused)) => Err(refused),
                (Ok(()), Ok(value)) => Ok(value),
                (Err(reason), Ok(_)) => Err(commit_failure(reason)),
            };
            let _ = reply.send(answer);
        }
    }

    /// Each write of `group` as its own batch inside one transaction, then the
    /// commit: every write's reply and outcome, the entities written (`None`: all),
    /// and the commit's outcome.
    #[allow(clippy::type_complexity)]
    fn run_group(
        &self,
        group: Vec<QueuedWrite>,
    ) -> (Vec<(ReplySender, Result<Value>)>, Option<std::collections::BTreeSet<String>>, std::result::Result<(), String>) {
        let mut store = self.lock_writer();
        if let Err(error) = store.begin_group() {
            let reason = error.to_string();
            let ran = group.into_iter().map(|write| (write.reply, Err(commit_failure(&reason)))).collect();
            return (ran, Some(Default::default()), Err(reason));
        }
        let mut ran = Vec::with_capacity(group.len());
        let mut touched = Some(std::collections::BTreeSet::new());
        let mut panicked = false;
        for write in group {
            let outcome = if panicked {
                Err(commit_failure("another write of its group panicked"))
            } else {
                let job = write.job;
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut store))).unwrap_or_else(|_| {
                    panicked = true;
                    Err(commit_failure("the write panicked"))
                })
            };
            if outcome.is_ok() {
                match (write.entity, &mut touched) {
                    (Some(entity), Some(set)) => {
                        set.insert(entity);
                    }
                    (None, slot) => *slot = None,
                    _ => {}
                }
            }
            ran.push((write.reply, outcome));
        }
        self.group_commits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let committed = if panicked {
            // A panic may have left a batch half-applied: undo the group.
            store.abort_group();
            Err("a write of its group panicked; the group was rolled back".to_string())
        } else {
            store.commit_group().map_err(|e| e.to_string())
        };
        (ran, touched, committed)
    }

    pub(super) fn column(&self, entity: &str, path: &str) -> Result<Arc<Column>> {
        let cache_key = (entity.to_string(), path.to_string());
        if let Some(column) = self.columns.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&cache_key) {
            return Ok(column.clone());
        }
        let started = self.generation();
        let sql = format!("SELECT _key, \"payload\" -> {} FROM {} ORDER BY _key", json_path(path), quote(entity));
        let column = self.read(|conn| {
            let mut statement = conn.prepare(&sql)?;
            let mut rows = statement.query([])?;
            let mut values = Vec::new();
            while let Some(row) = rows.next()? {
                let key = row.get::<_, String>(0)?;
                let text: Option<String> = row.get(1)?;
                let segments = match text.as_deref().and_then(gateway_world::json::parse_clean) {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(items)) => items.iter().map(|i| python_str(i).to_lowercase()).collect(),
                    Some(other) => vec![python_str(&other).to_lowercase()],
                };
                values.push((key, segments));
            }
            Ok(Column::build(values))
        })?;
        let mut column = column;
        column.generation = if self.generation() == started { started } else { u64::MAX };
        let column = Arc::new(column);
        let mut columns = self.columns.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if column.generation == started {
            columns.insert(cache_key, column.clone());
        }
        Ok(column)
    }
}

/// Where a session database's pages live.
pub(super) enum Storage {
    /// A SQLite file of its own: a durable session's, a restored export, a scenario's
    /// snapshot, a legacy empty world.
    File(PathBuf),
    /// Copy-on-write over the template's snapshot: only the pages it wrote are its own.
    Overlay(Arc<Overlay>),
}

impl Storage {
    /// A new, empty overlay of `base` in `dir` (no file until its first write).
    pub(super) fn overlay(base: &Arc<gateway_cow::Base>, dir: &Path) -> Result<Storage> {
        let path = dir.join(format!("{}.cow", gateway_world::store::new_batch_id()));
        // Volatile: a session's overlay is never reopened (its scratch directory goes
        // with it), so its WAL may live in memory.
        Ok(Storage::Overlay(Overlay::create_volatile(&path, base).map_err(cow_error)?))
    }

    /// The database's own file.
    pub(super) fn path(&self) -> &Path {
        match self {
            Storage::File(path) => path,
            Storage::Overlay(overlay) => overlay.path(),
        }
    }

    /// The name a connection opens the database by.
    pub(super) fn open_name(&self) -> String {
        match self {
            Storage::File(path) => path.to_string_lossy().into_owned(),
            Storage::Overlay(overlay) => overlay.name().to_string(),
        }
    }

    /// A new connection to the database.
    pub(super) fn connect(&self, flags: OpenFlags) -> rusqlite::Result<Connection> {
        match self {
            Storage::File(path) => Connection::open_with_flags(path, flags),
            Storage::Overlay(overlay) => {
                let conn = Connection::open_with_flags_and_vfs(overlay.name(), flags, gateway_cow::VFS_NAME)?;
                // An overlay's files go with its session: a checkpoint when the last
                // connection closes would be work thrown away (a fork checkpoints itself).
                conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
                Ok(conn)
            }
        }
    }

    /// Every file the database may have left on disk.
    pub(super) fn files(&self) -> Vec<PathBuf> {
        ["", "-wal", "-shm", "-journal"].iter().map(|suffix| PathBuf::from(format!("{}{suffix}", self.path().display()))).collect()
    }
}

/// A copy-on-write failure as the engine's I/O error.
pub(super) fn cow_error(error: gateway_cow::CowError) -> WorldError {
    WorldError::Io { message: error.to_string() }
}

/// Whether a row passes every filter (the original's `_matches`).
pub fn matches(row: &Value, filters: &[Filter]) -> bool {
    filters.iter().all(|filter| {
        let Some(value) = crate::dotted::dig(row, &filter.path).filter(|v| !matches!(v, Value::Null)) else {
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

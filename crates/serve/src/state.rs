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

use gateway_world::data::tempfile_dir::Scratch;
use gateway_world::error::{ContractError, Error as WorldError};
use gateway_world::json::{object, Value};
use gateway_world::store::{new_batch_id, Store};
use gateway_world::{Contract, Result};
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

mod db;
mod fork;
pub(crate) mod handler_writes;
mod seed;
mod select;
mod template;
#[cfg(test)]
mod tests;

use db::{commit_failure, Db, Storage};
use handler_writes::Pinned;
use template::add_indexes;

pub use crate::dotted::dig;
pub use db::{matches, Filter, WriteJob};
pub use template::Template;

/// The source a served write records in its batch (`api.create`, `api.update`,
/// `api.delete`): a built-in action's and a handler's `ctx` writes alike.
pub(crate) fn api_source(record: &str) -> Value {
    object([("record", Value::str(record))])
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

    /// The database a handler call works on (a reset during the call swaps in a new
    /// one; the call goes on with the one it started on).
    pub(crate) fn pin(&self) -> Pinned {
        Pinned::new(self.db())
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

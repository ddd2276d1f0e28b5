//! A session forked: a new session on the same template holding a copy of this
//! one's database as it stands at one moment — to branch an episode, try a
//! what-if, or replay from a step.
//!
//! The copy is taken under the writer's lock, so it holds every committed write and
//! no part of a group still running. A copy-on-write session (gateway-cow) is forked
//! by copying its overlay: the pages it wrote, not the world — the same cost at 2M
//! rows as at 20K (docs/PERFORMANCE.md, *Sessions at any world size*). A passive checkpoint first moves
//! the WAL's frames into the overlay; when a reader in the middle of a read holds the
//! checkpoint back, the WAL is copied along and the fork's first connection replays it.
//!
//! A session with a whole file of its own (durable, restored, a scenario's snapshot)
//! is copied whole: checkpointed, then the file copied (`copy_file_range`: in the
//! kernel, and a reflink on file systems that have them); nothing else writes that
//! file meanwhile (readers are read-only connections, and only the writer
//! checkpoints). When a reader holds the checkpoint back, the copy is SQLite's online
//! backup from the writer's connection, which reads every page as that connection
//! sees it, WAL included.

use super::db::{cow_error, Db, Storage};
use super::WorldState;
use gateway_world::data::tempfile_dir::Scratch;
use gateway_world::error::Error as WorldError;
use gateway_world::store::new_batch_id;
use gateway_world::Result;
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, RwLock};

/// How a database was copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Copied {
    /// Checkpointed, then the file (or the overlay) copied whole.
    File,
    /// An overlay copied with its WAL (a reader held the checkpoint back).
    WithWal,
    /// Page by page through the online backup (a reader held the checkpoint back).
    Pages,
}

impl WorldState {
    /// A new session on the same template whose database is a copy of this one's
    /// now. Writes to either are never seen by the other; a reset of the fork goes
    /// back to the template, like any session's. The fork is never durable (it lives
    /// in a scratch directory of its own), whatever this session is.
    pub fn fork(&self) -> Result<WorldState> {
        let scratch = Scratch::new("gateway-world-session")?;
        let (storage, _) = copy_database(&self.db(), scratch.path())?;
        let db = Db::open(storage, &self.shared.contract, false)?;
        Ok(WorldState { shared: self.shared.clone(), scratch, durable: None, current: RwLock::new(Arc::new(db)) })
    }
}

/// (busy, frames in the WAL, frames checkpointed) of a passive checkpoint: when
/// every frame is checkpointed (or the database is not in WAL mode: (0, -1, -1)) the
/// database file alone holds every commit.
fn checkpoint(writer: &Connection) -> Result<bool> {
    let (busy, frames, checkpointed): (i64, i64, i64) =
        writer.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(busy == 0 && frames == checkpointed)
}

/// `db` as it stands, into new storage in `dir`, under its writer's lock.
fn copy_database(db: &Db, dir: &Path) -> Result<(Storage, Copied)> {
    let store = db.lock_writer();
    let writer = store.connection();
    let whole = checkpoint(writer)?;
    match &db.storage {
        Storage::Overlay(overlay) => {
            let path = dir.join(format!("{}.cow", new_batch_id()));
            let copy = overlay.fork(&path, !whole).map_err(cow_error)?;
            Ok((Storage::Overlay(copy), if whole { Copied::File } else { Copied::WithWal }))
        }
        Storage::File(source) => {
            let destination = dir.join(format!("{}.db", new_batch_id()));
            if whole {
                std::fs::copy(source, &destination).map_err(|e| WorldError::io(e, source))?;
                return Ok((Storage::File(destination), Copied::File));
            }
            backup(writer, &destination)?;
            Ok((Storage::File(destination), Copied::Pages))
        }
    }
}

/// Every page of `source`'s main database, as its connection sees it, into `destination`.
fn backup(source: &Connection, destination: &Path) -> Result<()> {
    let mut target = Connection::open(destination)?;
    // A private scratch file: nothing to journal or sync while it is written (a
    // failure leaves a file nobody opens). The pages copied carry the source's WAL
    // mode, so the copy opens in WAL mode.
    target.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")?;
    let stepped = {
        let backup = rusqlite::backup::Backup::new(source, &mut target)?;
        backup.step(-1)?
    };
    target.close().map_err(|(_, e)| e)?;
    if stepped != rusqlite::backup::StepResult::Done {
        return Err(WorldError::Io { message: format!("the session's database could not be copied ({stepped:?})") });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json::{object, Value};
    use std::collections::BTreeMap;

    fn helpdesk() -> WorldState {
        let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
        WorldState::open(&world, BTreeMap::new()).expect("the example opens")
    }

    fn customer(id: &str) -> Value {
        object([
            ("id", Value::str(id)),
            ("name", Value::str("Forked")),
            ("email", Value::Str(format!("{}@example.com", id.to_lowercase()))),
            ("tier", Value::str("free")),
            ("created_at", Value::str("2026-01-01T00:00:00Z")),
        ])
    }

    fn insert(state: &WorldState, id: &str) {
        state.write(|store| store.insert("customers", &customer(id), None), Some("customers")).expect("insert");
    }

    fn has(state: &WorldState, id: &str) -> bool {
        state.get("customers", &object([("id", Value::str(id))])).expect("get").is_some()
    }

    #[test]
    fn a_fork_holds_the_parents_writes_then_goes_its_own_way() {
        let parent = helpdesk();
        let start = parent.rows("customers").unwrap().len();
        insert(&parent, "P1");
        let fork = parent.fork().unwrap();
        assert!(has(&fork, "P1"), "the write still in the parent's WAL is in the fork");
        insert(&parent, "P2");
        insert(&fork, "F1");
        assert!(!has(&fork, "P2") && !has(&parent, "F1"), "neither sees the other's later writes");
        let grandchild = fork.fork().unwrap();
        assert!(has(&grandchild, "F1") && has(&grandchild, "P1"));
        fork.reset().unwrap();
        assert_eq!(fork.rows("customers").unwrap().len(), start, "a fork's reset is the template, not the parent");
        assert!(has(&parent, "P1") && has(&parent, "P2") && has(&grandchild, "F1"), "and leaves the others alone");
    }

    /// `parent` copied while a read transaction, opened before its last write, holds
    /// that write's frames out of the database file: how it was copied, and the copy
    /// as a session — which must hold both writes all the same.
    fn copied_while_a_reader_holds_the_checkpoint(parent: &WorldState) -> Copied {
        insert(parent, "P1");
        let reader = parent.db().storage.connect(rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        reader.execute_batch("BEGIN; SELECT COUNT(*) FROM customers;").unwrap();
        insert(parent, "P2");
        let scratch = Scratch::new("gateway-fork-test").unwrap();
        let (storage, copied) = copy_database(&parent.db(), scratch.path()).unwrap();
        reader.execute_batch("COMMIT").unwrap();
        let held = WorldState {
            shared: parent.shared.clone(),
            scratch,
            durable: None,
            current: RwLock::new(Arc::new(Db::open(storage, &parent.shared.contract, false).unwrap())),
        };
        assert!(has(&held, "P1") && has(&held, "P2"), "the copy holds the write the file lacked");
        let scratch = Scratch::new("gateway-fork-test").unwrap();
        let (_, again) = copy_database(&parent.db(), scratch.path()).unwrap();
        assert_eq!(again, Copied::File, "with the reader gone, the checkpoint completes");
        copied
    }

    #[test]
    fn a_reader_holding_the_checkpoint_back_sends_the_wal_along() {
        assert_eq!(copied_while_a_reader_holds_the_checkpoint(&helpdesk()), Copied::WithWal);
    }

    #[test]
    fn a_whole_file_held_back_is_copied_page_by_page() {
        let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
        let template = Arc::new(super::super::Template::open(&world, BTreeMap::new()).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let durable = WorldState::durable(template, dir.path()).unwrap();
        assert_eq!(copied_while_a_reader_holds_the_checkpoint(&durable), Copied::Pages);
    }
}

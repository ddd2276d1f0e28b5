//! A session forked: a new session on the same template holding a copy of this
//! one's database as it stands at one moment — to branch an episode, try a
//! what-if, or replay from a step.
//!
//! The copy is taken under the writer's lock, so it holds every committed write and
//! no part of a group still running. It is a copy of the pages, not a copy-on-write
//! layer (one that shares the parent's pages until either side writes is issue 29's
//! work): the cost grows with the database's size — 2.5 ms for the 7 MB of a
//! 20K-row world (docs/PERFORMANCE.md, *Fork*).
//!
//! How: session databases are in WAL mode, so the database file alone may lack the
//! latest commits. Under the lock a passive checkpoint moves every WAL frame into the
//! file, which is then copied whole (`copy_file_range`: in the kernel, and a reflink
//! on file systems that have them); nothing else writes that file meanwhile (readers
//! are read-only connections, and only the writer checkpoints). A reader in the
//! middle of a read can hold the checkpoint back; then the copy is SQLite's online
//! backup from the writer's connection, which reads every page as that connection
//! sees it, WAL included (4× slower on 20K rows: a page at a time).

use super::{Db, WorldState};
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
    /// Checkpointed, then the file copied whole.
    File,
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
        let path = scratch.path().join(format!("{}.db", new_batch_id()));
        copy_database(&self.db(), &path)?;
        let db = Db::open(&path, &self.shared.contract, false)?;
        Ok(WorldState { shared: self.shared.clone(), scratch, durable: None, current: RwLock::new(Arc::new(db)) })
    }
}

/// `db` as it stands, into a new file at `destination`, under its writer's lock.
fn copy_database(db: &Db, destination: &Path) -> Result<Copied> {
    let store = db.lock_writer();
    let writer = store.connection();
    // (busy, frames in the WAL, frames checkpointed): all of them → the file is whole.
    // Not in WAL mode: (0, -1, -1), and the file is whole too (no transaction is open).
    let (busy, frames, checkpointed): (i64, i64, i64) =
        writer.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    if busy == 0 && frames == checkpointed {
        std::fs::copy(&db.path, destination).map_err(|e| WorldError::io(e, &db.path))?;
        return Ok(Copied::File);
    }
    backup(writer, destination)?;
    Ok(Copied::Pages)
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

    #[test]
    fn a_reader_holding_the_checkpoint_back_is_copied_page_by_page() {
        let parent = helpdesk();
        insert(&parent, "P1");
        // A read transaction open on the snapshot before the next write keeps that
        // write's frames out of the database file.
        let reader = Connection::open(&parent.db().path).unwrap();
        reader.execute_batch("BEGIN; SELECT COUNT(*) FROM customers;").unwrap();
        insert(&parent, "P2");
        let dir = Scratch::new("gateway-fork-test").unwrap();
        let copied = copy_database(&parent.db(), &dir.path().join("held.db")).unwrap();
        assert_eq!(copied, Copied::Pages);
        reader.execute_batch("COMMIT").unwrap();
        let fork = parent.fork().unwrap();
        assert!(has(&fork, "P1") && has(&fork, "P2"));
        let copied = copy_database(&parent.db(), &dir.path().join("free.db")).unwrap();
        assert_eq!(copied, Copied::File, "with the reader gone, the checkpoint completes");
        let held = WorldState {
            shared: parent.shared.clone(),
            scratch: Scratch::new("gateway-fork-test").unwrap(),
            durable: None,
            current: RwLock::new(Arc::new(Db::open(&dir.path().join("held.db"), &parent.shared.contract, false).unwrap())),
        };
        assert!(has(&held, "P1") && has(&held, "P2"), "the page copy holds the write the file lacked");
    }
}

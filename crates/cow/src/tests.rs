//! The VFS driven through real SQLite connections: reads through to the base,
//! writes kept in the overlay, reload, torn slots, forks, resets, large overlays.

use crate::{register, Base, Overlay, VFS_NAME};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::sync::Arc;

/// A WAL-mode base of `rows` rows in `dir`, checkpointed whole.
fn make_base(dir: &Path, rows: i64) -> Arc<Base> {
    let path = dir.join("base.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, body TEXT); CREATE INDEX t_name ON t (name);",
    )
    .unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    for id in 0..rows {
        tx.execute("INSERT INTO t VALUES (?1, ?2, ?3)", rusqlite::params![id, format!("name {id}"), "x".repeat(200)]).unwrap();
    }
    tx.commit().unwrap();
    drop(conn);
    Base::open(&path).unwrap()
}

fn connect(overlay: &Overlay) -> Connection {
    register().unwrap();
    let conn = Connection::open_with_flags_and_vfs(overlay.name(), OpenFlags::default(), VFS_NAME).unwrap();
    conn.execute_batch("PRAGMA synchronous = OFF").unwrap();
    conn
}

fn reader(overlay: &Overlay) -> Connection {
    register().unwrap();
    Connection::open_with_flags_and_vfs(overlay.name(), OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX, VFS_NAME)
        .unwrap()
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn digest(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn reads_go_through_to_the_base_and_an_idle_overlay_has_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 500);
    let overlay = Overlay::create(&dir.path().join("s.cow"), &base).unwrap();
    let conn = connect(&overlay);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM t"), 500);
    assert_eq!(count(&conn, "SELECT id FROM t WHERE name = 'name 321'"), 321);
    let journal: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(journal, "wal");
    assert_eq!(overlay.stats().file_bytes, 0, "reading creates no overlay file");
    assert!(!overlay.path().exists());
}

#[test]
fn writes_stay_in_the_overlay_and_the_base_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 500);
    let before = digest(base.path());
    let overlay = Overlay::create(&dir.path().join("s.cow"), &base).unwrap();
    let conn = connect(&overlay);
    conn.execute("UPDATE t SET name = 'changed' WHERE id = 7", []).unwrap();
    conn.execute("INSERT INTO t VALUES (1000, 'new', 'y')", []).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM t"), 501);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM t WHERE name = 'changed'"), 1);
    let stats = overlay.stats();
    assert!(stats.pages > 0 && stats.pages < 10, "only the pages written: {stats:?}");
    // A second connection (a reader) sees the checkpointed pages through the shared map.
    let other = reader(&overlay);
    assert_eq!(count(&other, "SELECT id FROM t WHERE name = 'new'"), 1000);
    drop((conn, other));
    assert_eq!(digest(base.path()), before, "the base's bytes are untouched");
    let plain = Connection::open_with_flags(base.path(), OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    assert_eq!(count(&plain, "SELECT COUNT(*) FROM t"), 500);
}

#[test]
fn readers_see_commits_still_in_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 100);
    let overlay = Overlay::create(&dir.path().join("s.cow"), &base).unwrap();
    let writer = connect(&overlay);
    let read = reader(&overlay);
    assert_eq!(count(&read, "SELECT COUNT(*) FROM t"), 100);
    writer.execute("DELETE FROM t WHERE id < 10", []).unwrap();
    assert_eq!(count(&read, "SELECT COUNT(*) FROM t"), 90);
    assert!(overlay.stats().wal_bytes > 0);
    // A reader in a transaction keeps its snapshot while the writer goes on.
    read.execute_batch("BEGIN").unwrap();
    assert_eq!(count(&read, "SELECT COUNT(*) FROM t"), 90);
    writer.execute("DELETE FROM t WHERE id < 20", []).unwrap();
    assert_eq!(count(&read, "SELECT COUNT(*) FROM t"), 90);
    read.execute_batch("COMMIT").unwrap();
    assert_eq!(count(&read, "SELECT COUNT(*) FROM t"), 80);
}

#[test]
fn a_commit_is_in_the_wal_file_when_it_returns() {
    // The overlay gathers a transaction's frames and writes them at its commit frame:
    // when the commit returns they are in the file, whole, ending with the commit.
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 400);
    let overlay = Overlay::create(&dir.path().join("s.cow"), &base).unwrap();
    let conn = connect(&overlay);
    conn.execute_batch("PRAGMA wal_autocheckpoint = 0").unwrap();
    let wal = dir.path().join("s.cow-wal");
    let page = base.page_size();
    for round in 0..3 {
        conn.execute("UPDATE t SET body = ?1 WHERE id % 2 = ?2", rusqlite::params![format!("round {round}"), round % 2]).unwrap();
        let on_disk = std::fs::read(&wal).unwrap();
        assert_eq!(on_disk.len() as u64, overlay.stats().wal_bytes, "round {round}: nothing held back after the commit");
        let frame = (page + 24) as usize;
        assert_eq!((on_disk.len() - 32) % frame, 0, "whole frames");
        let last = &on_disk[on_disk.len() - frame..];
        assert_ne!(&last[4..8], &[0, 0, 0, 0], "round {round}: the last frame is the commit frame");
    }
    // A transaction of one frame: its commit header is the first write it stages.
    conn.execute("UPDATE t SET body = 'one page' WHERE id = 5", []).unwrap();
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), overlay.stats().wal_bytes, "a one-frame commit is written when it returns");
    // A transaction larger than what is held back at once, rolled back halfway.
    conn.execute_batch("BEGIN; UPDATE t SET body = hex(randomblob(1500)); SAVEPOINT s; DELETE FROM t; ROLLBACK TO s; COMMIT").unwrap();
    assert_eq!(count(&reader(&overlay), "SELECT COUNT(*) FROM t WHERE length(body) = 3000"), 400);
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), overlay.stats().wal_bytes);
}

#[test]
fn an_overlay_reopened_holds_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 300);
    let path = dir.path().join("s.cow");
    {
        let overlay = Overlay::create(&path, &base).unwrap();
        let conn = connect(&overlay);
        conn.execute("UPDATE t SET body = 'rewritten' WHERE id % 3 = 0", []).unwrap();
        conn.execute("INSERT INTO t VALUES (5000, 'late', 'z')", []).unwrap();
        // Closing the last connection checkpoints the WAL into the overlay.
    }
    let overlay = Overlay::open(&path, &base).unwrap();
    let conn = connect(&overlay);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM t WHERE body = 'rewritten'"), 100);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM t WHERE id = 5000"), 1);
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn a_torn_trailing_slot_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 300);
    let path = dir.path().join("s.cow");
    let page_size = base.page_size() as usize;
    {
        let overlay = Overlay::create(&path, &base).unwrap();
        let conn = connect(&overlay);
        conn.execute("UPDATE t SET name = 'kept' WHERE id = 1", []).unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
        drop(conn);
    }
    let length = std::fs::metadata(&path).unwrap().len();
    {
        use std::io::Write;
        // A whole slot claiming page 0 (the database header) with a bad checksum, then
        // half a slot: both what a crash in the middle of appends leaves.
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let mut slot = vec![0xAB; 16 + page_size];
        slot[..8].copy_from_slice(&0u64.to_le_bytes());
        file.write_all(&slot).unwrap();
    }
    let overlay = Overlay::open(&path, &base).unwrap();
    {
        let conn = connect(&overlay);
        assert_eq!(count(&conn, "SELECT id FROM t WHERE name = 'kept'"), 1);
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok");
    }
    drop(overlay);
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(length + 100).unwrap();
    let overlay = Overlay::open(&path, &base).unwrap();
    let conn = connect(&overlay);
    assert_eq!(count(&conn, "SELECT id FROM t WHERE name = 'kept'"), 1);
    conn.execute("UPDATE t SET name = 'after' WHERE id = 2", []).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM t WHERE name IN ('kept', 'after')"), 2);
}

#[test]
fn a_fork_is_independent_of_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 300);
    let parent = Overlay::create(&dir.path().join("p.cow"), &base).unwrap();
    let conn = connect(&parent);
    conn.execute("INSERT INTO t VALUES (900, 'parent', '')", []).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    conn.execute("INSERT INTO t VALUES (901, 'in the wal', '')", []).unwrap();
    // Copied with its WAL: the commit not yet checkpointed comes along.
    let fork = parent.fork(&dir.path().join("f.cow"), true).unwrap();
    let forked = connect(&fork);
    assert_eq!(count(&forked, "SELECT COUNT(*) FROM t WHERE id >= 900"), 2);
    forked.execute("INSERT INTO t VALUES (902, 'fork only', '')", []).unwrap();
    conn.execute("INSERT INTO t VALUES (903, 'parent only', '')", []).unwrap();
    forked.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    assert_eq!(count(&forked, "SELECT COUNT(*) FROM t WHERE id = 903"), 0);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM t WHERE id = 902"), 0);
    // Checkpointed first, a fork needs no WAL.
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    let second = parent.fork(&dir.path().join("g.cow"), false).unwrap();
    assert_eq!(count(&connect(&second), "SELECT COUNT(*) FROM t WHERE id >= 900"), 3);
}

#[test]
fn a_reset_is_a_fresh_overlay_and_the_old_one_goes() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 300);
    let first = Overlay::create(&dir.path().join("a.cow"), &base).unwrap();
    let conn = connect(&first);
    conn.execute("DELETE FROM t", []).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM t"), 0);
    drop(conn);
    drop(first);
    let again = Overlay::create(&dir.path().join("b.cow"), &base).unwrap();
    assert_eq!(count(&connect(&again), "SELECT COUNT(*) FROM t"), 300);
    assert!(Overlay::create(&dir.path().join("b.cow"), &base).is_err(), "one live overlay per path");
}

#[test]
fn a_large_overlay_stays_correct_through_fork_and_reset() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 3000);
    let pages = base.size() / base.page_size();
    let overlay = Overlay::create(&dir.path().join("big.cow"), &base).unwrap();
    let conn = connect(&overlay);
    // Every row grows: nearly every page of the table and its index is rewritten,
    // and the database grows past the base.
    conn.execute("UPDATE t SET body = body || body || printf('%d', id), name = 'n' || id", []).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    let stats = overlay.stats();
    assert!(stats.pages >= pages * 3 / 4, "most pages written: {stats:?} of {pages}");
    assert!(stats.size > base.size());
    let check = |conn: &Connection| {
        assert_eq!(count(conn, "SELECT COUNT(*) FROM t WHERE length(body) = 400 + length(id)"), 3000);
        assert_eq!(count(conn, "SELECT id FROM t WHERE name = 'n2999'"), 2999);
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok");
    };
    check(&conn);
    check(&reader(&overlay));
    let fork = overlay.fork(&dir.path().join("big-fork.cow"), false).unwrap();
    let forked = connect(&fork);
    check(&forked);
    // Shrinking: VACUUM rewrites the database smaller than it was.
    forked.execute_batch("DELETE FROM t WHERE id >= 100; VACUUM;").unwrap();
    forked.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    assert_eq!(count(&forked, "SELECT COUNT(*) FROM t"), 100);
    assert!(fork.stats().size < stats.size);
    check(&conn);
    drop(forked);
    let reopened = Overlay::open(fork.path(), &base);
    assert!(reopened.is_err(), "still open in this process");
    drop(fork);
    let reopened = Overlay::open(&dir.path().join("big-fork.cow"), &base).unwrap();
    let conn2 = connect(&reopened);
    assert_eq!(count(&conn2, "SELECT COUNT(*) FROM t"), 100);
    let ok: String = conn2.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let fresh = Overlay::create(&dir.path().join("reset.cow"), &base).unwrap();
    assert_eq!(count(&connect(&fresh), "SELECT COUNT(*) FROM t WHERE length(body) = 200"), 3000);
}

#[test]
fn other_files_go_to_the_default_vfs() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 50);
    let overlay = Overlay::create(&dir.path().join("s.cow"), &base).unwrap();
    let conn = connect(&overlay);
    conn.execute("INSERT INTO t VALUES (77777, 'exported', '')", []).unwrap();
    // ATTACH of the base by its path, and VACUUM INTO a plain file.
    conn.execute("ATTACH DATABASE ?1 AS template", [base.path().to_str().unwrap()]).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM main.t EXCEPT SELECT COUNT(*) FROM template.t"), 51);
    conn.execute("DETACH DATABASE template", []).unwrap();
    let exported = dir.path().join("export.db");
    conn.execute("VACUUM INTO ?1", [exported.to_str().unwrap()]).unwrap();
    let plain = Connection::open(&exported).unwrap();
    assert_eq!(count(&plain, "SELECT COUNT(*) FROM t"), 51);
}

#[test]
fn a_volatile_overlay_keeps_its_wal_in_memory_through_checkpoints_and_forks() {
    let dir = tempfile::tempdir().unwrap();
    let base = make_base(dir.path(), 2000);
    let overlay = Overlay::create_volatile(&dir.path().join("v.cow"), &base).unwrap();
    let conn = connect(&overlay);
    conn.execute_batch("PRAGMA wal_autocheckpoint = 50; PRAGMA journal_size_limit = 65536").unwrap();
    for id in 0..600 {
        conn.execute("INSERT INTO t VALUES (?1, ?2, ?3)", rusqlite::params![10_000 + id, format!("v{id}"), "y".repeat(300)]).unwrap();
    }
    conn.execute("UPDATE t SET body = body || 'z' WHERE id % 7 = 0", []).unwrap();
    let stats = overlay.stats();
    assert!(stats.wal_in_memory && stats.wal_bytes > 0, "{stats:?}");
    assert!(!dir.path().join("v.cow-wal").exists(), "no log file while the log is in memory");
    // A reader sees every commit, some in the log, some checkpointed into the overlay.
    let check = |conn: &Connection| {
        assert_eq!(count(conn, "SELECT COUNT(*) FROM t"), 2600);
        assert_eq!(count(conn, "SELECT COUNT(*) FROM t WHERE body LIKE '%z'"), count(conn, "SELECT COUNT(*) FROM t WHERE id % 7 = 0"));
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok");
    };
    check(&reader(&overlay));
    // Forked with its log (what a reader holding a checkpoint back makes a session do):
    // the copy's log is in memory too, and replayed by the fork's first connection.
    conn.execute("INSERT INTO t VALUES (99999, 'last', '')", []).unwrap();
    let fork = overlay.fork(&dir.path().join("vf.cow"), true).unwrap();
    assert!(fork.stats().wal_in_memory);
    let forked = connect(&fork);
    assert_eq!(count(&forked, "SELECT COUNT(*) FROM t WHERE id = 99999"), 1);
    forked.execute("DELETE FROM t WHERE id = 99999", []).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM t WHERE id = 99999"), 1, "the fork's writes are its own");
    conn.execute("DELETE FROM t WHERE id = 99999", []).unwrap();
    check(&conn);
    check(&forked);
    // A checkpoint that moves every frame out, then a commit: SQLite cuts the log
    // back to the journal size limit, and the memory goes with it.
    conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(())).unwrap();
    conn.execute("INSERT INTO t VALUES (99998, 'after', '')", []).unwrap();
    assert!(overlay.stats().wal_bytes <= 65536, "{:?}", overlay.stats());
    drop((conn, forked));
    assert!(!overlay.stats().wal_in_memory, "the last connection's close deletes the log");
}

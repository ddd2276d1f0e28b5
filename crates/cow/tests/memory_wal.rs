//! The process-wide budget of in-memory write-ahead logs (a binary of its own: the
//! budget is global). A volatile overlay whose log outgrows it spills the log to its
//! file, losing nothing, and every byte goes back to the budget when logs go.

use gateway_cow::{memory_wal_bytes, register, set_memory_wal_budget, Base, Overlay, VFS_NAME};
use rusqlite::{params, Connection, OpenFlags};

#[test]
fn a_log_that_outgrows_the_budget_spills_to_its_file_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base_path = dir.path().join("base.db");
    let conn = Connection::open(&base_path).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT);").unwrap();
    drop(conn);
    let base = Base::open(&base_path).unwrap();
    register().unwrap();
    set_memory_wal_budget(3 << 20);

    let overlay = Overlay::create_volatile(&dir.path().join("s.cow"), &base).unwrap();
    let conn = Connection::open_with_flags_and_vfs(overlay.name(), OpenFlags::default(), VFS_NAME).unwrap();
    conn.execute_batch("PRAGMA synchronous = OFF; PRAGMA wal_autocheckpoint = 0").unwrap();
    // One commit per row: each is at least a frame of its own, so the log grows
    // past 3 MiB with no checkpoint to reset it.
    let mut spilled_at = None;
    for id in 0..2000i64 {
        conn.execute("INSERT INTO t VALUES (?1, ?2)", params![id, format!("{id:0>1000}")]).unwrap();
        let stats = overlay.stats();
        if !stats.wal_in_memory && spilled_at.is_none() {
            spilled_at = Some(id);
        }
        assert!(memory_wal_bytes() <= 3 << 20, "the budget holds");
    }
    let spilled_at = spilled_at.expect("the log left memory");
    assert!(spilled_at > 100, "it started in memory: spilled at row {spilled_at}");
    let wal_file = dir.path().join("s.cow-wal");
    assert_eq!(std::fs::metadata(&wal_file).unwrap().len(), overlay.stats().wal_bytes, "the whole log is in its file");
    assert_eq!(memory_wal_bytes(), 0, "a spilled log holds no memory");

    let reader =
        Connection::open_with_flags_and_vfs(overlay.name(), OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX, VFS_NAME)
            .unwrap();
    let (rows, total): (i64, i64) = reader.query_row("SELECT COUNT(*), SUM(id) FROM t", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!((rows, total), (2000, 1999 * 2000 / 2));
    let ok: String = reader.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    drop((reader, conn));

    // A new overlay starts in memory again, and gives it back when it goes.
    let second = Overlay::create_volatile(&dir.path().join("t.cow"), &base).unwrap();
    let conn = Connection::open_with_flags_and_vfs(second.name(), OpenFlags::default(), VFS_NAME).unwrap();
    conn.execute("INSERT INTO t VALUES (1, 'x')", []).unwrap();
    assert!(second.stats().wal_in_memory);
    // A log of a few frames is counted as one 64 KiB chunk, not more.
    assert!(memory_wal_bytes() > 0 && memory_wal_bytes() <= 64 << 10, "{}", memory_wal_bytes());
    drop(conn);
    drop(second);
    assert_eq!(memory_wal_bytes(), 0);
}

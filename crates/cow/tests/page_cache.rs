//! The page-cache wrapper in a process of its own (it must be installed before SQLite
//! is first used): installed, it answers most end-of-transaction truncates itself, and
//! databases written through it — B-tree splits, savepoints rolled back, tables
//! dropped, a file shrunk by VACUUM — keep exactly the rows a model of them holds.

use rusqlite::{params, Connection};
use std::collections::BTreeMap;

/// A small deterministic generator (no dependency for one test's random keys).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn the_wrapped_cache_skips_empty_truncates_and_loses_nothing() {
    gateway_cow::install_page_cache().expect("installed before SQLite's first use");
    assert!(gateway_cow::page_cache_installed());
    // A second call answers the first outcome.
    gateway_cow::install_page_cache().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let conn = Connection::open(dir.path().join("t.db")).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA cache_size = -32768;
         CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT NOT NULL); CREATE INDEX t_v ON t (v);",
    )
    .unwrap();
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..300 {
        conn.execute_batch("BEGIN").unwrap();
        for _ in 0..40 {
            // Random keys: inserts land all over both B-trees, splitting pages.
            let key = format!("{:016x}", rng.next());
            let value = format!("{:08x}-{}", rng.next() as u32, "x".repeat((rng.next() % 200) as usize));
            conn.execute("INSERT OR REPLACE INTO t VALUES (?1, ?2)", params![key, value]).unwrap();
            model.insert(key, value);
        }
        // Every third round, a savepoint's writes are undone.
        conn.execute_batch("SAVEPOINT s").unwrap();
        for _ in 0..30 {
            conn.execute("INSERT OR REPLACE INTO t VALUES (?1, 'undone')", params![format!("{:016x}", rng.next())]).unwrap();
        }
        if round % 3 == 0 {
            conn.execute_batch("ROLLBACK TO s; RELEASE s").unwrap();
        } else {
            conn.execute_batch("RELEASE s").unwrap();
            let mut statement = conn.prepare("SELECT k FROM t WHERE v = 'undone'").unwrap();
            let kept: Vec<String> = statement.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
            for key in kept {
                model.insert(key, "undone".to_string());
            }
        }
        conn.execute_batch("COMMIT").unwrap();
    }
    // Shrink the database: the truncates that drop pages past the end must reach the cache.
    conn.execute("DELETE FROM t WHERE k < '8'", []).unwrap();
    model.retain(|k, _| k.as_str() >= "8");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;").unwrap();

    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let mut statement = conn.prepare("SELECT k, v FROM t ORDER BY k").unwrap();
    let rows: BTreeMap<String, String> = statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    assert_eq!(rows.len(), model.len());
    assert!(rows == model, "the rows are the model's");

    let stats = gateway_cow::page_cache_stats();
    // 300 transactions, 100 savepoints rolled back (which drop the pages they added).
    assert!(
        stats.truncates_skipped >= 200 && stats.truncates_skipped > 4 * stats.truncates_passed,
        "most transactions end without a scan: {stats:?}"
    );
    assert!(stats.truncates_passed >= 1, "a shrinking database still truncates its cache: {stats:?}");
}

//! [`MetaStore`] on SQLite (the default): one database file under `--data`, WAL mode,
//! every write in a `BEGIN IMMEDIATE` transaction, so the branch compare-and-set
//! holds even between several processes sharing the file.

use crate::error::StoreError;
use crate::migrations::MIGRATIONS;
use crate::rows::*;
use crate::store::*;
use crate::util::{new_id, now_iso};
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod agents;
mod connectors;
mod evaluations;
mod world_data;

/// The SQLite metadata store.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

impl SqliteStore {
    /// Open (creating and migrating) the database at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let mut conn = Connection::open(path)?;
        // Key hashes, sealed secrets and tokens live here: owner-only, like the keys.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| StoreError::io(path, e))?;
        }
        conn.busy_timeout(Duration::from_secs(30))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        #[cfg(unix)]
        for suffix in ["-wal", "-shm"] {
            use std::os::unix::fs::PermissionsExt as _;
            let side = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
            if side.exists() {
                let _ = std::fs::set_permissions(&side, std::fs::Permissions::from_mode(0o600));
            }
        }
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")?;
        for (version, sql) in MIGRATIONS {
            let done: Option<i64> =
                tx.query_row("SELECT version FROM schema_migrations WHERE version = ?1", [version], |r| r.get(0)).optional()?;
            if done.is_none() {
                tx.execute_batch(sql)?;
                tx.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)", params![version, now_iso()])?;
            }
        }
        tx.commit()?;
        Ok(SqliteStore { conn: Arc::new(Mutex::new(conn)) })
    }

    /// Run `work` on the connection off the async workers.
    async fn with<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().map_err(|_| StoreError::LockPoisoned)?;
            work(&mut guard)
        })
        .await?
    }

    /// Every row `sql` selects with `params`, read as `T` from its first column on.
    async fn all<T, P>(&self, sql: String, params: P) -> StoreResult<Vec<T>>
    where
        T: FromColumns + Send + 'static,
        P: rusqlite::Params + Send + 'static,
    {
        self.with(move |c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map(params, from_sqlite)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// The first row `sql` selects with `params`, if any, read as `T`.
    async fn optional<T, P>(&self, sql: String, params: P) -> StoreResult<Option<T>>
    where
        T: FromColumns + Send + 'static,
        P: rusqlite::Params + Send + 'static,
    {
        self.with(move |c| Ok(c.query_row(&sql, params, from_sqlite).optional()?)).await
    }
}

fn get_version(conn: &Connection, id: &str) -> StoreResult<Option<Version>> {
    Ok(conn.query_row(&format!("SELECT {VERSION_COLUMNS} FROM versions WHERE id = ?1"), [id], from_sqlite).optional()?)
}

fn get_ref(conn: &Connection, container_id: &str, name: &str) -> StoreResult<Option<Ref>> {
    Ok(conn
        .query_row(&format!("SELECT {REF_COLUMNS} FROM refs WHERE container_id = ?1 AND name = ?2"), [container_id, name], from_sqlite)
        .optional()?)
}

/// Insert `row` into `table` (then `rest`: an `ON CONFLICT …` clause, or nothing); how
/// many rows it wrote.
fn insert<T: Stored>(conn: &Connection, table: &str, row: &T, rest: &str) -> StoreResult<usize> {
    Ok(conn.execute(&insert_sql::<T>(table, '?', rest), rusqlite::params_from_iter(row.params()))?)
}

#[async_trait]
impl MetaStore for SqliteStore {
    async fn key_count(&self) -> StoreResult<i64> {
        self.with(|c| Ok(c.query_row("SELECT COUNT(*) FROM api_keys", [], |r| r.get(0))?)).await
    }

    async fn create_key(&self, project: &str, public_key: &str, secret_hash: &str) -> StoreResult<String> {
        let (project, public_key, secret_hash) = (project.to_string(), public_key.to_string(), secret_hash.to_string());
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let existing: Option<String> = tx.query_row("SELECT id FROM projects WHERE name = ?1", [&project], |r| r.get(0)).optional()?;
            let id = match existing {
                Some(id) => id,
                None => {
                    let id = new_id("prj_");
                    tx.execute("INSERT INTO projects (id, name, created_at) VALUES (?1, ?2, ?3)", params![id, project, now_iso()])?;
                    id
                }
            };
            tx.execute(
                "INSERT INTO api_keys (public_key, secret_sha256, project_id, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![public_key, secret_hash, id, now_iso()],
            )?;
            tx.commit()?;
            Ok(id)
        })
        .await
    }

    async fn key_lookup(&self, public_key: &str) -> StoreResult<Option<(String, String)>> {
        self.optional("SELECT project_id, secret_sha256 FROM api_keys WHERE public_key = ?1".into(), (public_key.to_string(),)).await
    }

    async fn resolve_container(&self, new: Container) -> StoreResult<(Container, bool)> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let found = tx
                .query_row(
                    &format!("SELECT {CONTAINER_COLUMNS} FROM containers WHERE project_id = ?1 AND slug = ?2"),
                    [&new.project_id, &new.slug],
                    from_sqlite,
                )
                .optional()?;
            if let Some(found) = found {
                return Ok((found, false));
            }
            insert(&tx, "containers", &new, "")?;
            tx.commit()?;
            Ok((new, true))
        })
        .await
    }

    async fn container(&self, project_id: &str, slug: &str) -> StoreResult<Option<Container>> {
        let sql = format!("SELECT {CONTAINER_COLUMNS} FROM containers WHERE project_id = ?1 AND slug = ?2");
        self.optional(sql, (project_id.to_string(), slug.to_string())).await
    }

    async fn container_by_id(&self, id: &str) -> StoreResult<Option<Container>> {
        self.optional(format!("SELECT {CONTAINER_COLUMNS} FROM containers WHERE id = ?1"), (id.to_string(),)).await
    }

    async fn create_version(&self, new: Version) -> StoreResult<(Version, bool)> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let existing: Option<Version> = tx
                .query_row(
                    &format!("SELECT {VERSION_COLUMNS} FROM versions WHERE container_id = ?1 AND content_hash = ?2"),
                    [&new.container_id, &new.content_hash],
                    from_sqlite,
                )
                .optional()?;
            if let Some(mut existing) = existing {
                if !existing.uploaded {
                    tx.execute(
                        "UPDATE versions SET bundle_sha256 = ?1, bundle_size = ?2 WHERE id = ?3",
                        params![new.bundle_sha256, new.bundle_size, existing.id],
                    )?;
                    existing.bundle_sha256 = new.bundle_sha256;
                    existing.bundle_size = new.bundle_size;
                }
                tx.commit()?;
                return Ok((existing, false));
            }
            insert(&tx, "versions", &new, "")?;
            let stored = get_version(&tx, &new.id)?.ok_or_else(|| StoreError::Vanished("version"))?;
            tx.commit()?;
            Ok((stored, true))
        })
        .await
    }

    async fn version(&self, id: &str) -> StoreResult<Option<Version>> {
        let id = id.to_string();
        self.with(move |c| get_version(c, &id)).await
    }

    async fn mark_uploaded(&self, version_id: &str, wheel: bool) -> StoreResult<()> {
        let id = version_id.to_string();
        self.with(move |c| {
            let column = if wheel { "wheel_uploaded" } else { "uploaded" };
            c.execute(&format!("UPDATE versions SET {column} = 1 WHERE id = ?1"), [&id])?;
            Ok(())
        })
        .await
    }

    async fn attach_wheel(&self, version_id: &str, wheel: &WheelDecl) -> StoreResult<bool> {
        let (id, wheel) = (version_id.to_string(), wheel.clone());
        self.with(move |c| {
            let changed = c.execute(
                "UPDATE versions SET wheel_filename = ?1, wheel_sha256 = ?2, wheel_size = ?3, requires_dist = ?4, wheel_uploaded = 0 \
                 WHERE id = ?5 AND (wheel_filename IS NULL OR wheel_uploaded = 0)",
                rusqlite::params![wheel.filename, wheel.sha256, wheel.size, wheel.requires_dist, id],
            )?;
            Ok(changed == 1)
        })
        .await
    }

    async fn finalize(&self, version_id: &str, branch: &str, base: Option<&str>, force: bool) -> StoreResult<Finalized> {
        let (id, branch, base) = (version_id.to_string(), branch.to_string(), base.map(str::to_string));
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut version = get_version(&tx, &id)?.ok_or_else(|| StoreError::NotFound(format!("version {id} not found")))?;
            version.ensure_uploaded()?;
            let slug: String = tx.query_row("SELECT slug FROM containers WHERE id = ?1", [&version.container_id], |r| r.get(0))?;
            let tip = get_ref(&tx, &version.container_id, &branch)?;
            cas_decision(&slug, &branch, tip.as_ref(), &id, base.as_deref(), force)?;
            let now = now_iso();
            let previous_tip = tip.as_ref().map(|t| t.version_id.clone());
            if version.state != "READY" {
                let parent = version.lineage(base.as_deref(), previous_tip.as_deref());
                tx.execute(
                    "UPDATE versions SET state = 'READY', forked_from_version_id = COALESCE(forked_from_version_id, ?1) WHERE id = ?2",
                    params![parent, id],
                )?;
                version = get_version(&tx, &id)?.ok_or_else(|| StoreError::Vanished("version"))?;
            }
            match &tip {
                Some(_) => {
                    tx.execute(
                        "UPDATE refs SET version_id = ?1, updated_at = ?2 WHERE container_id = ?3 AND name = ?4",
                        params![id, now, version.container_id, branch],
                    )?;
                }
                None => {
                    tx.execute(
                        "INSERT INTO refs (container_id, name, kind, version_id, created_at, updated_at) VALUES (?1, ?2, 'branch', ?3, ?4, ?4)",
                        params![version.container_id, branch, id, now],
                    )?;
                }
            }
            let moved = get_ref(&tx, &version.container_id, &branch)?.ok_or_else(|| StoreError::Vanished("ref"))?;
            tx.commit()?;
            Ok(Finalized { version, branch: moved, previous_tip })
        })
        .await
    }

    async fn find_versions(&self, container_id: &str, filter: VersionFilter, limit: i64) -> StoreResult<Vec<Version>> {
        let base = format!("SELECT {VERSION_COLUMNS} FROM versions WHERE container_id = ?1 AND state = 'READY'");
        let (sql, arg) = match filter {
            VersionFilter::Ready => (format!("{base} AND ?2 = ?2"), String::new()),
            VersionFilter::Semver(s) => (format!("{base} AND semantic_version = ?2"), s),
            VersionFilter::HashPrefix(p) => (format!("{base} AND substr(content_hash, 1, length(?2)) = ?2"), p),
        };
        self.all(format!("{sql} ORDER BY seq DESC LIMIT ?3"), (container_id.to_string(), arg, limit)).await
    }

    async fn refs(&self, container_id: &str) -> StoreResult<Vec<Ref>> {
        let sql =
            format!("SELECT {REF_COLUMNS} FROM refs WHERE container_id = ?1 ORDER BY CASE kind WHEN 'branch' THEN 0 ELSE 1 END, name");
        self.all(sql, (container_id.to_string(),)).await
    }

    async fn get_ref(&self, container_id: &str, name: &str) -> StoreResult<Option<Ref>> {
        let (container_id, name) = (container_id.to_string(), name.to_string());
        self.with(move |c| get_ref(c, &container_id, &name)).await
    }

    async fn create_ref(&self, new: Ref) -> StoreResult<()> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some(existing) = get_ref(&tx, &new.container_id, &new.name)? {
                return Err(existing.name_taken(&new.name));
            }
            tx.execute(
                "INSERT INTO refs (container_id, name, kind, version_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                params![new.container_id, new.name, new.kind, new.version_id, new.created_at],
            )?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn fork(&self, target: Container, source: &Version) -> StoreResult<(Container, Version)> {
        let source = source.clone();
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let taken: Option<String> = tx
                .query_row("SELECT id FROM containers WHERE project_id = ?1 AND slug = ?2", [&target.project_id, &target.slug], |r| {
                    r.get(0)
                })
                .optional()?;
            if taken.is_some() {
                return Err(fork_slug_taken(&target.slug));
            }
            insert(&tx, "containers", &target, "")?;
            let now = now_iso();
            let copy = source.fork_copy(&target.id, &now);
            insert(&tx, "versions", &copy, "")?;
            tx.execute(
                "INSERT INTO refs (container_id, name, kind, version_id, created_at, updated_at) VALUES (?1, 'main', 'branch', ?2, ?3, ?3)",
                params![target.id, copy.id, now],
            )?;
            let stored = get_version(&tx, &copy.id)?.ok_or_else(|| StoreError::Vanished("version"))?;
            tx.commit()?;
            Ok((target, stored))
        })
        .await
    }

    async fn add_proposal(&self, p: Proposal) -> StoreResult<()> {
        self.with(move |c| insert(c, "proposals", &p, "").map(|_| ())).await
    }

    async fn proposals(&self, container_id: &str) -> StoreResult<Vec<Proposal>> {
        let sql = format!("SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE container_id = ?1 ORDER BY created_at DESC, id");
        self.all(sql, (container_id.to_string(),)).await
    }

    async fn put_secret(&self, container_id: &str, key: &str, sealed: Vec<u8>) -> StoreResult<bool> {
        let (container_id, key) = (container_id.to_string(), key.to_string());
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let now = now_iso();
            let updated = tx.execute(
                "UPDATE secrets SET sealed = ?1, updated_at = ?2 WHERE container_id = ?3 AND key = ?4",
                params![sealed, now, container_id, key],
            )?;
            if updated == 0 {
                tx.execute(
                    "INSERT INTO secrets (container_id, key, sealed, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
                    params![container_id, key, sealed, now],
                )?;
            }
            tx.commit()?;
            Ok(updated == 0)
        })
        .await
    }

    async fn secrets(&self, container_id: &str) -> StoreResult<Vec<SecretInfo>> {
        let sql = format!("SELECT {SECRET_INFO_COLUMNS} FROM secrets WHERE container_id = ?1 ORDER BY key");
        self.all(sql, (container_id.to_string(),)).await
    }

    async fn secret_value(&self, container_id: &str, key: &str) -> StoreResult<Option<Vec<u8>>> {
        let sql = "SELECT sealed FROM secrets WHERE container_id = ?1 AND key = ?2".to_string();
        self.optional(sql, (container_id.to_string(), key.to_string())).await
    }

    async fn delete_secret(&self, container_id: &str, key: &str) -> StoreResult<bool> {
        let (container_id, key) = (container_id.to_string(), key.to_string());
        self.with(move |c| Ok(c.execute("DELETE FROM secrets WHERE container_id = ?1 AND key = ?2", [&container_id, &key])? > 0)).await
    }

    async fn run_configs(&self, project_id: &str) -> StoreResult<Vec<String>> {
        self.all("SELECT body FROM run_configs WHERE project_id = ?1 ORDER BY created_at, id".into(), (project_id.to_string(),)).await
    }

    async fn run_config(&self, project_id: &str, id: &str) -> StoreResult<Option<String>> {
        let sql = "SELECT body FROM run_configs WHERE project_id = ?1 AND id = ?2".to_string();
        self.optional(sql, (project_id.to_string(), id.to_string())).await
    }

    async fn put_run_config(&self, project_id: &str, id: &str, body: &str) -> StoreResult<()> {
        let (project_id, id, body) = (project_id.to_string(), id.to_string(), body.to_string());
        self.with(move |c| {
            let now = now_iso();
            c.execute(
                "INSERT INTO run_configs (id, project_id, body, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4) \
                 ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                params![id, project_id, body, now],
            )?;
            Ok(())
        })
        .await
    }

    async fn delete_run_config(&self, project_id: &str, id: &str) -> StoreResult<bool> {
        let (project_id, id) = (project_id.to_string(), id.to_string());
        self.with(move |c| Ok(c.execute("DELETE FROM run_configs WHERE project_id = ?1 AND id = ?2", [&project_id, &id])? > 0)).await
    }

    async fn put_document(&self, project_id: &str, kind: &str, id: &str, body: &str) -> StoreResult<i64> {
        let (project_id, kind, id, body) = (project_id.to_string(), kind.to_string(), id.to_string(), body.to_string());
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let now = now_iso();
            let existing: Option<i64> = tx
                .query_row("SELECT seq FROM documents WHERE project_id = ?1 AND kind = ?2 AND id = ?3", [&project_id, &kind, &id], |r| r.get(0))
                .optional()?;
            let seq = match existing {
                Some(seq) => {
                    tx.execute(
                        "UPDATE documents SET body = ?4, updated_at = ?5 WHERE project_id = ?1 AND kind = ?2 AND id = ?3",
                        params![project_id, kind, id, body, now],
                    )?;
                    seq
                }
                None => {
                    let seq: i64 = tx.query_row(
                        "SELECT COALESCE(MAX(seq), 0) + 1 FROM documents WHERE project_id = ?1 AND kind = ?2",
                        [&project_id, &kind],
                        |r| r.get(0),
                    )?;
                    tx.execute(
                        "INSERT INTO documents (project_id, kind, id, seq, body, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                        params![project_id, kind, id, seq, body, now],
                    )?;
                    seq
                }
            };
            tx.commit()?;
            Ok(seq)
        })
        .await
    }

    async fn document(&self, project_id: &str, kind: &str, id: &str) -> StoreResult<Option<String>> {
        let sql = "SELECT body FROM documents WHERE project_id = ?1 AND kind = ?2 AND id = ?3".to_string();
        self.optional(sql, (project_id.to_string(), kind.to_string(), id.to_string())).await
    }

    async fn documents(&self, project_id: &str, kind: &str, after: i64, limit: i64) -> StoreResult<Vec<(i64, String)>> {
        let sql = "SELECT seq, body FROM documents WHERE project_id = ?1 AND kind = ?2 AND seq > ?3 ORDER BY seq LIMIT ?4".to_string();
        self.all(sql, (project_id.to_string(), kind.to_string(), after, limit)).await
    }

    async fn delete_document(&self, project_id: &str, kind: &str, id: &str) -> StoreResult<bool> {
        let (project_id, kind, id) = (project_id.to_string(), kind.to_string(), id.to_string());
        self.with(move |c| {
            Ok(c.execute("DELETE FROM documents WHERE project_id = ?1 AND kind = ?2 AND id = ?3", [&project_id, &kind, &id])? > 0)
        })
        .await
    }
}

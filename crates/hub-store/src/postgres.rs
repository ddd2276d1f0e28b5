//! [`MetaStore`] on PostgreSQL (`--database postgres://…`): the store several hub
//! processes share. The schema is `migrations/*.sql` in the PostgreSQL text the crate's
//! `migrations` module derives (column for column the SQLite one), applied at open under an
//! advisory lock so processes starting together migrate once.
//!
//! Why sqlx (default features off: `postgres`, `runtime-tokio`, rustls TLS) rather than
//! `tokio-postgres`: it brings the connection pool and TLS in one crate, with no macros
//! and no compile-time database; tokio-postgres would need a pool crate and a TLS
//! adapter on top. Migrations are our own embedded files and `schema_migrations` table
//! (as on SQLite), so sqlx's `migrate` feature is not needed.
//!
//! The branch compare-and-set: `finalize` (and `create_ref`) run in a transaction that
//! first locks the container's row (`SELECT … FOR NO KEY UPDATE`). Every ref change of
//! a container is thereby serialised across all processes and connections; under READ
//! COMMITTED each statement after the lock sees the tip the previous holder committed,
//! so of many finalizes from one stale base exactly one moves the branch.

use crate::error::StoreError;
use crate::migrations::{postgres_dialect, MIGRATIONS};
use crate::rows::*;
use crate::store::*;
use crate::util::{new_id, now_iso};
use async_trait::async_trait;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgExecutor, PgPool, PgPoolOptions};
use sqlx::{Postgres, Row, Transaction};
use std::str::FromStr;
use std::time::Duration;

mod agents;
mod connectors;
mod evaluations;
mod world_data;

/// An arbitrary constant: the advisory lock key held while migrating.
const MIGRATION_LOCK: i64 = 0x6761_7465_7761_7968;

/// The PostgreSQL metadata store.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pool: PgPool,
}

/// Redact the password of a database URL for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!("{}{}:***{}", &url[..scheme + 3], &userinfo[..colon], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

impl PostgresStore {
    /// Connect to `url` (`postgres://user:pass@host:port/db?sslmode=…`) and migrate.
    pub async fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let options =
            PgConnectOptions::from_str(url).map_err(|e| StoreError::BadRequest(format!("invalid --database URL {}: {e}", redact(url))))?;
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(|source| StoreError::ConnectPostgres { url: redact(url), source })?;
        let store = PostgresStore { pool };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(MIGRATION_LOCK).execute(&mut *tx).await?;
        sqlx::query("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)")
            .execute(&mut *tx)
            .await?;
        for (version, sql) in MIGRATIONS {
            let sql = postgres_dialect(sql);
            let done =
                sqlx::query("SELECT version FROM schema_migrations WHERE version = $1").bind(version).fetch_optional(&mut *tx).await?;
            if done.is_none() {
                sqlx::raw_sql(&sql).execute(&mut *tx).await?;
                sqlx::query("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)")
                    .bind(version)
                    .bind(now_iso())
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }
}

type Tx = Transaction<'static, Postgres>;

/// A statement with its arguments bound.
type Query<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

/// Every row `query` selects on `on` (the pool or a transaction), read as `T`.
async fn all<'c, T: FromColumns>(on: impl PgExecutor<'c>, query: Query<'_>) -> StoreResult<Vec<T>> {
    Ok(query.fetch_all(on).await?.iter().map(from_postgres).collect::<Result<_, _>>()?)
}

/// `query` with `params` bound in order.
fn bind_all<'q>(query: Query<'q>, params: Vec<Param<'q>>) -> Query<'q> {
    params.into_iter().fold(query, |query, param| match param {
        Param::Text(text) => query.bind(text),
        Param::Int(number) => query.bind(number),
        Param::Real(number) => query.bind(number),
    })
}

/// Insert `row` into `table` on `on` (then `rest`: an `ON CONFLICT …` clause, or
/// nothing); how many rows it wrote.
async fn insert<'c, T: Stored>(on: impl PgExecutor<'c>, table: &str, row: &T, rest: &str) -> StoreResult<u64> {
    let sql = insert_sql::<T>(table, '$', rest);
    Ok(bind_all(sqlx::query(&sql), row.params()).execute(on).await?.rows_affected())
}

/// The first row `query` selects on `on`, if any, read as `T`.
async fn optional<'c, T: FromColumns>(on: impl PgExecutor<'c>, query: Query<'_>) -> StoreResult<Option<T>> {
    Ok(query.fetch_optional(on).await?.as_ref().map(from_postgres).transpose()?)
}

async fn get_version(tx: &mut Tx, id: &str) -> StoreResult<Option<Version>> {
    let sql = format!("SELECT {VERSION_COLUMNS} FROM versions WHERE id = $1");
    optional(&mut **tx, sqlx::query(&sql).bind(id)).await
}

async fn get_ref(tx: &mut Tx, container_id: &str, name: &str) -> StoreResult<Option<Ref>> {
    let sql = format!("SELECT {REF_COLUMNS} FROM refs WHERE container_id = $1 AND name = $2");
    optional(&mut **tx, sqlx::query(&sql).bind(container_id).bind(name)).await
}

/// Lock a container's row for the rest of the transaction: ref changes of one container
/// are serialised by this lock. Returns its slug.
async fn lock_container(tx: &mut Tx, container_id: &str) -> StoreResult<String> {
    let row = sqlx::query("SELECT slug FROM containers WHERE id = $1 FOR NO KEY UPDATE")
        .bind(container_id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("container {container_id} not found")))?;
    Ok(row.try_get(0)?)
}

async fn insert_version(tx: &mut Tx, v: &Version) -> StoreResult<bool> {
    Ok(insert(&mut **tx, "versions", v, "ON CONFLICT (container_id, content_hash) DO NOTHING").await? == 1)
}

/// Insert a container unless the slug is taken in its project. Returns whether it was inserted.
async fn insert_container(tx: &mut Tx, c: &Container) -> StoreResult<bool> {
    Ok(insert(&mut **tx, "containers", c, "ON CONFLICT (project_id, slug) DO NOTHING").await? == 1)
}

#[async_trait]
impl MetaStore for PostgresStore {
    async fn key_count(&self) -> StoreResult<i64> {
        Ok(sqlx::query("SELECT COUNT(*) FROM api_keys").fetch_one(&self.pool).await?.try_get(0)?)
    }

    async fn create_key(&self, project: &str, public_key: &str, secret_hash: &str) -> StoreResult<String> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING")
            .bind(new_id("prj_"))
            .bind(project)
            .bind(now_iso())
            .execute(&mut *tx)
            .await?;
        let id: String = sqlx::query("SELECT id FROM projects WHERE name = $1").bind(project).fetch_one(&mut *tx).await?.try_get(0)?;
        sqlx::query("INSERT INTO api_keys (public_key, secret_sha256, project_id, created_at) VALUES ($1, $2, $3, $4)")
            .bind(public_key)
            .bind(secret_hash)
            .bind(&id)
            .bind(now_iso())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn key_lookup(&self, public_key: &str) -> StoreResult<Option<(String, String)>> {
        optional(&self.pool, sqlx::query("SELECT project_id, secret_sha256 FROM api_keys WHERE public_key = $1").bind(public_key)).await
    }

    async fn resolve_container(&self, new: Container) -> StoreResult<(Container, bool)> {
        let mut tx = self.pool.begin().await?;
        let created = insert_container(&mut tx, &new).await?;
        if created {
            tx.commit().await?;
            return Ok((new, true));
        }
        let row = sqlx::query(&format!("SELECT {CONTAINER_COLUMNS} FROM containers WHERE project_id = $1 AND slug = $2"))
            .bind(&new.project_id)
            .bind(&new.slug)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((from_postgres(&row)?, false))
    }

    async fn container(&self, project_id: &str, slug: &str) -> StoreResult<Option<Container>> {
        let sql = format!("SELECT {CONTAINER_COLUMNS} FROM containers WHERE project_id = $1 AND slug = $2");
        optional(&self.pool, sqlx::query(&sql).bind(project_id).bind(slug)).await
    }

    async fn container_by_id(&self, id: &str) -> StoreResult<Option<Container>> {
        let sql = format!("SELECT {CONTAINER_COLUMNS} FROM containers WHERE id = $1");
        optional(&self.pool, sqlx::query(&sql).bind(id)).await
    }

    async fn create_version(&self, new: Version) -> StoreResult<(Version, bool)> {
        let mut tx = self.pool.begin().await?;
        if insert_version(&mut tx, &new).await? {
            let stored = get_version(&mut tx, &new.id).await?.ok_or_else(|| StoreError::Vanished("version"))?;
            tx.commit().await?;
            return Ok((stored, true));
        }
        // Same content hash already there: lock it, and let a never-uploaded one take the
        // new bundle checksum and size.
        let row = sqlx::query(&format!("SELECT {VERSION_COLUMNS} FROM versions WHERE container_id = $1 AND content_hash = $2 FOR UPDATE"))
            .bind(&new.container_id)
            .bind(&new.content_hash)
            .fetch_one(&mut *tx)
            .await?;
        let mut existing: Version = from_postgres(&row)?;
        if !existing.uploaded {
            sqlx::query("UPDATE versions SET bundle_sha256 = $1, bundle_size = $2 WHERE id = $3")
                .bind(&new.bundle_sha256)
                .bind(new.bundle_size)
                .bind(&existing.id)
                .execute(&mut *tx)
                .await?;
            existing.bundle_sha256 = new.bundle_sha256;
            existing.bundle_size = new.bundle_size;
        }
        tx.commit().await?;
        Ok((existing, false))
    }

    async fn version(&self, id: &str) -> StoreResult<Option<Version>> {
        let sql = format!("SELECT {VERSION_COLUMNS} FROM versions WHERE id = $1");
        optional(&self.pool, sqlx::query(&sql).bind(id)).await
    }

    async fn mark_uploaded(&self, version_id: &str, wheel: bool) -> StoreResult<()> {
        let column = if wheel { "wheel_uploaded" } else { "uploaded" };
        sqlx::query(&format!("UPDATE versions SET {column} = 1 WHERE id = $1")).bind(version_id).execute(&self.pool).await?;
        Ok(())
    }

    async fn attach_wheel(&self, version_id: &str, wheel: &WheelDecl) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE versions SET wheel_filename = $1, wheel_sha256 = $2, wheel_size = $3, requires_dist = $4, wheel_uploaded = 0 \
             WHERE id = $5 AND (wheel_filename IS NULL OR wheel_uploaded = 0)",
        )
        .bind(&wheel.filename)
        .bind(&wheel.sha256)
        .bind(wheel.size)
        .bind(&wheel.requires_dist)
        .bind(version_id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn finalize(&self, version_id: &str, branch: &str, base: Option<&str>, force: bool) -> StoreResult<Finalized> {
        let id = version_id;
        let mut tx = self.pool.begin().await?;
        let container_id: String = sqlx::query("SELECT container_id FROM versions WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("version {id} not found")))?
            .try_get(0)?;
        // The row lock: from here on, no other finalize of this container runs.
        let slug = lock_container(&mut tx, &container_id).await?;
        let mut version = get_version(&mut tx, id).await?.ok_or_else(|| StoreError::NotFound(format!("version {id} not found")))?;
        version.ensure_uploaded()?;
        let tip = get_ref(&mut tx, &container_id, branch).await?;
        cas_decision(&slug, branch, tip.as_ref(), id, base, force)?;
        let now = now_iso();
        let previous_tip = tip.as_ref().map(|t| t.version_id.clone());
        if version.state != "READY" {
            let parent = version.lineage(base, previous_tip.as_deref());
            sqlx::query("UPDATE versions SET state = 'READY', forked_from_version_id = COALESCE(forked_from_version_id, $1) WHERE id = $2")
                .bind(parent)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            version = get_version(&mut tx, id).await?.ok_or_else(|| StoreError::Vanished("version"))?;
        }
        if tip.is_some() {
            sqlx::query("UPDATE refs SET version_id = $1, updated_at = $2 WHERE container_id = $3 AND name = $4")
                .bind(id)
                .bind(&now)
                .bind(&container_id)
                .bind(branch)
                .execute(&mut *tx)
                .await?;
        } else {
            sqlx::query(
                "INSERT INTO refs (container_id, name, kind, version_id, created_at, updated_at) VALUES ($1, $2, 'branch', $3, $4, $4)",
            )
            .bind(&container_id)
            .bind(branch)
            .bind(id)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
        }
        let moved = get_ref(&mut tx, &container_id, branch).await?.ok_or_else(|| StoreError::Vanished("ref"))?;
        tx.commit().await?;
        Ok(Finalized { version, branch: moved, previous_tip })
    }

    async fn find_versions(&self, container_id: &str, filter: VersionFilter, limit: i64) -> StoreResult<Vec<Version>> {
        let base = format!("SELECT {VERSION_COLUMNS} FROM versions WHERE container_id = $1 AND state = 'READY'");
        let (sql, arg) = match filter {
            VersionFilter::Ready => (format!("{base} AND $2 = $2"), String::new()),
            VersionFilter::Semver(s) => (format!("{base} AND semantic_version = $2"), s),
            VersionFilter::HashPrefix(p) => (format!("{base} AND starts_with(content_hash, $2)"), p),
        };
        let sql = format!("{sql} ORDER BY seq DESC LIMIT $3");
        all(&self.pool, sqlx::query(&sql).bind(container_id).bind(arg).bind(limit)).await
    }

    async fn refs(&self, container_id: &str) -> StoreResult<Vec<Ref>> {
        let sql = format!(
            "SELECT {REF_COLUMNS} FROM refs WHERE container_id = $1 \
             ORDER BY CASE kind WHEN 'branch' THEN 0 ELSE 1 END, name COLLATE \"C\""
        );
        all(&self.pool, sqlx::query(&sql).bind(container_id)).await
    }

    async fn get_ref(&self, container_id: &str, name: &str) -> StoreResult<Option<Ref>> {
        let sql = format!("SELECT {REF_COLUMNS} FROM refs WHERE container_id = $1 AND name = $2");
        optional(&self.pool, sqlx::query(&sql).bind(container_id).bind(name)).await
    }

    async fn create_ref(&self, new: Ref) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        lock_container(&mut tx, &new.container_id).await?;
        if let Some(existing) = get_ref(&mut tx, &new.container_id, &new.name).await? {
            return Err(existing.name_taken(&new.name));
        }
        sqlx::query("INSERT INTO refs (container_id, name, kind, version_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)")
            .bind(&new.container_id)
            .bind(&new.name)
            .bind(&new.kind)
            .bind(&new.version_id)
            .bind(&new.created_at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn fork(&self, target: Container, source: &Version) -> StoreResult<(Container, Version)> {
        let mut tx = self.pool.begin().await?;
        if !insert_container(&mut tx, &target).await? {
            return Err(fork_slug_taken(&target.slug));
        }
        let now = now_iso();
        let copy = source.fork_copy(&target.id, &now);
        insert_version(&mut tx, &copy).await?;
        sqlx::query(
            "INSERT INTO refs (container_id, name, kind, version_id, created_at, updated_at) VALUES ($1, 'main', 'branch', $2, $3, $3)",
        )
        .bind(&target.id)
        .bind(&copy.id)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        let stored = get_version(&mut tx, &copy.id).await?.ok_or_else(|| StoreError::Vanished("version"))?;
        tx.commit().await?;
        Ok((target, stored))
    }

    async fn add_proposal(&self, p: Proposal) -> StoreResult<()> {
        insert(&self.pool, "proposals", &p, "").await?;
        Ok(())
    }

    async fn proposals(&self, container_id: &str) -> StoreResult<Vec<Proposal>> {
        let sql = format!(
            "SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE container_id = $1 ORDER BY created_at COLLATE \"C\" DESC, id COLLATE \"C\""
        );
        all(&self.pool, sqlx::query(&sql).bind(container_id)).await
    }

    async fn put_secret(&self, container_id: &str, key: &str, sealed: Vec<u8>) -> StoreResult<bool> {
        let now = now_iso();
        // xmax = 0 on the returned row: it was inserted, not updated.
        let row = sqlx::query(
            "INSERT INTO secrets (container_id, key, sealed, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) \
             ON CONFLICT (container_id, key) DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at \
             RETURNING (xmax = 0)",
        )
        .bind(container_id)
        .bind(key)
        .bind(sealed)
        .bind(&now)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get(0)?)
    }

    async fn secrets(&self, container_id: &str) -> StoreResult<Vec<SecretInfo>> {
        let sql = format!("SELECT {SECRET_INFO_COLUMNS} FROM secrets WHERE container_id = $1 ORDER BY key COLLATE \"C\"");
        all(&self.pool, sqlx::query(&sql).bind(container_id)).await
    }

    async fn secret_value(&self, container_id: &str, key: &str) -> StoreResult<Option<Vec<u8>>> {
        optional(&self.pool, sqlx::query("SELECT sealed FROM secrets WHERE container_id = $1 AND key = $2").bind(container_id).bind(key))
            .await
    }

    async fn delete_secret(&self, container_id: &str, key: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM secrets WHERE container_id = $1 AND key = $2")
            .bind(container_id)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn run_configs(&self, project_id: &str) -> StoreResult<Vec<String>> {
        let sql = "SELECT body FROM run_configs WHERE project_id = $1 ORDER BY created_at COLLATE \"C\", id COLLATE \"C\"";
        all(&self.pool, sqlx::query(sql).bind(project_id)).await
    }

    async fn run_config(&self, project_id: &str, id: &str) -> StoreResult<Option<String>> {
        optional(&self.pool, sqlx::query("SELECT body FROM run_configs WHERE project_id = $1 AND id = $2").bind(project_id).bind(id)).await
    }

    async fn put_run_config(&self, project_id: &str, id: &str, body: &str) -> StoreResult<()> {
        let now = now_iso();
        // Like SQLite's upsert: an id is global; the row keeps its first project.
        sqlx::query(
            "INSERT INTO run_configs (id, project_id, body, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) \
             ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, updated_at = EXCLUDED.updated_at",
        )
        .bind(id)
        .bind(project_id)
        .bind(body)
        .bind(&now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn delete_run_config(&self, project_id: &str, id: &str) -> StoreResult<bool> {
        let done =
            sqlx::query("DELETE FROM run_configs WHERE project_id = $1 AND id = $2").bind(project_id).bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn put_document(&self, project_id: &str, kind: &str, id: &str, body: &str) -> StoreResult<i64> {
        let now = now_iso();
        let mut tx = self.pool.begin().await?;
        // New documents of one kind take their seq one at a time.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1 || '/' || $2))").bind(project_id).bind(kind).execute(&mut *tx).await?;
        let row = sqlx::query(
            "INSERT INTO documents (project_id, kind, id, seq, body, created_at, updated_at) \
             VALUES ($1, $2, $3, (SELECT COALESCE(MAX(seq), 0) + 1 FROM documents WHERE project_id = $1 AND kind = $2), $4, $5, $5) \
             ON CONFLICT (project_id, kind, id) DO UPDATE SET body = EXCLUDED.body, updated_at = EXCLUDED.updated_at \
             RETURNING seq",
        )
        .bind(project_id)
        .bind(kind)
        .bind(id)
        .bind(body)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row.try_get(0)?)
    }

    async fn document(&self, project_id: &str, kind: &str, id: &str) -> StoreResult<Option<String>> {
        let sql = "SELECT body FROM documents WHERE project_id = $1 AND kind = $2 AND id = $3";
        optional(&self.pool, sqlx::query(sql).bind(project_id).bind(kind).bind(id)).await
    }

    async fn documents(&self, project_id: &str, kind: &str, after: i64, limit: i64) -> StoreResult<Vec<(i64, String)>> {
        let sql = "SELECT seq, body FROM documents WHERE project_id = $1 AND kind = $2 AND seq > $3 ORDER BY seq LIMIT $4";
        all(&self.pool, sqlx::query(sql).bind(project_id).bind(kind).bind(after).bind(limit)).await
    }

    async fn delete_document(&self, project_id: &str, kind: &str, id: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM documents WHERE project_id = $1 AND kind = $2 AND id = $3")
            .bind(project_id)
            .bind(kind)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_redacted_in_messages() {
        assert_eq!(super::redact("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(super::redact("postgres://h/db"), "postgres://h/db");
    }
}

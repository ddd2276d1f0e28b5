//! [`ConnectorStore`] on PostgreSQL: the tables of migration 0006 (the SQLite ones,
//! column for column). A commit locks its repo's row (`SELECT … FOR UPDATE`) and
//! re-reads the head before moving it, so the compare-and-set holds whichever process
//! serves the push; a new repo is an `INSERT … ON CONFLICT DO NOTHING` on its slug.

use super::{all, insert, optional, PostgresStore, Tx};
use crate::connectors::*;
use crate::error::StoreError;
use crate::rows::*;
use crate::store::StoreResult;
use async_trait::async_trait;
use sqlx::Row;

/// A repo matches a search (`$2`, a [`like_pattern`]) by slug, name or description.
const MATCHES: &str = "($2::TEXT IS NULL OR lower(r.slug) LIKE $2 ESCAPE '\\' OR lower(r.name) LIKE $2 ESCAPE '\\' \
     OR lower(coalesce(r.description, '')) LIKE $2 ESCAPE '\\')";

impl PostgresStore {
    async fn commit_where(&self, sql: &str, repo_id: &str, value: &str) -> StoreResult<Vec<ConnectorCommit>> {
        let rows = sqlx::query(&format!("SELECT {COMMIT_COLUMNS}, {COMMIT_FILES} FROM connector_commits c {sql}"))
            .bind(repo_id)
            .bind(value)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(read_commit_with_files).collect::<Result<Vec<_>, _>>()?)
    }
}

async fn lock_repo(tx: &mut Tx, project_id: &str, slug: &str) -> StoreResult<Option<(String, Option<String>)>> {
    let sql = "SELECT id, head_commit_id FROM connector_repos WHERE project_id = $1 AND slug = $2 FOR UPDATE";
    optional(&mut **tx, sqlx::query(sql).bind(project_id).bind(slug)).await
}

#[async_trait]
impl ConnectorStore for PostgresStore {
    async fn connector_repo(&self, project_id: &str, slug: &str) -> StoreResult<Option<ConnectorRepo>> {
        let sql = format!("SELECT {REPO_COLUMNS} FROM connector_repos r WHERE r.project_id = $1 AND r.slug = $2");
        optional(&self.pool, sqlx::query(&sql).bind(project_id).bind(slug)).await
    }

    async fn connector_repo_by_id(&self, id: &str) -> StoreResult<Option<(ConnectorRepo, String)>> {
        let sql = format!("SELECT {REPO_COLUMNS}, p.name FROM connector_repos r JOIN projects p ON p.id = r.project_id WHERE r.id = $1");
        optional(&self.pool, sqlx::query(&sql).bind(id)).await
    }

    async fn connector_repos(&self, project_id: &str, listing: &RepoListing) -> StoreResult<(Vec<ConnectorRepo>, i64)> {
        let pattern = like_pattern(listing.query.as_deref());
        let public = listing.is_public.map(i64::from);
        let filter = format!("r.project_id = $1 AND {MATCHES} AND ($3::BIGINT IS NULL OR r.is_public = $3)");
        let total: i64 = sqlx::query(&format!("SELECT COUNT(*) FROM connector_repos r WHERE {filter}"))
            .bind(project_id)
            .bind(&pattern)
            .bind(public)
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?;
        let sql = format!("SELECT {REPO_COLUMNS} FROM connector_repos r WHERE {filter} ORDER BY r.slug COLLATE \"C\" LIMIT $4 OFFSET $5");
        let page = sqlx::query(&sql).bind(project_id).bind(&pattern).bind(public).bind(listing.limit).bind(listing.offset);
        let repos = all(&self.pool, page).await?;
        Ok((repos, total))
    }

    async fn connector_hub(&self, project_id: &str, query: Option<&str>) -> StoreResult<Vec<HubRow>> {
        let sql = format!(
            "SELECT {REPO_COLUMNS}, p.name, {COMMIT_COLUMNS} FROM connector_repos r \
             JOIN projects p ON p.id = r.project_id LEFT JOIN connector_commits c ON c.id = r.head_commit_id \
             WHERE (r.project_id = $1 OR r.is_public = 1) AND {MATCHES} \
             ORDER BY r.project_id <> $1, r.slug COLLATE \"C\", p.name COLLATE \"C\""
        );
        all(&self.pool, sqlx::query(&sql).bind(project_id).bind(like_pattern(query))).await
    }

    async fn connector_commit(&self, repo_id: &str, version: Option<&str>) -> StoreResult<Option<ConnectorCommit>> {
        let Some(version) = version.filter(|v| !v.is_empty()) else {
            let found =
                self.commit_where("JOIN connector_repos r ON r.head_commit_id = c.id WHERE r.id = $1 AND $2 = $2", repo_id, "").await?;
            return Ok(found.into_iter().next());
        };
        let labelled = self
            .commit_where("JOIN connector_labels l ON l.commit_id = c.id WHERE l.repo_id = $1 AND l.label = $2", repo_id, version)
            .await?;
        if let Some(found) = labelled.into_iter().next() {
            return Ok(Some(found));
        }
        let exact = self.commit_where("WHERE c.repo_id = $1 AND (c.id = $2 OR c.commit_hash = $2)", repo_id, version).await?;
        if let Some(found) = exact.into_iter().next() {
            return Ok(Some(found));
        }
        if version.len() >= 7 && version.bytes().all(|b| b.is_ascii_hexdigit()) {
            let prefix = format!("{}%", version.to_ascii_lowercase());
            let found = self.commit_where("WHERE c.repo_id = $1 AND c.commit_hash LIKE $2 LIMIT 2", repo_id, &prefix).await?;
            if found.len() > 1 {
                return Err(StoreError::BadRequest(format!("version '{version}' names more than one commit: give more of the hash")));
            }
            return Ok(found.into_iter().next());
        }
        Ok(None)
    }

    async fn commit_connector(&self, new: NewCommit) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        let repo = &new.repo;
        if new.create {
            if insert(&mut *tx, "connector_repos", &new.new_repo_row(), "ON CONFLICT (project_id, slug) DO NOTHING").await? != 1 {
                return Err(new.slug_taken());
            }
        } else {
            new.check_head(lock_repo(&mut tx, &repo.project_id, &repo.slug).await?)?;
        }
        let commit = &new.commit;
        let inserted = sqlx::query(
            "INSERT INTO connector_commits (id, repo_id, commit_hash, parent_hash, message, source, labels, files, metadata, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (repo_id, commit_hash) DO NOTHING",
        )
        .bind(&commit.id)
        .bind(&repo.id)
        .bind(&commit.commit_hash)
        .bind(&commit.parent_hash)
        .bind(&commit.message)
        .bind(&commit.source)
        .bind(&commit.labels)
        .bind(&commit.files)
        .bind(&commit.metadata)
        .bind(&commit.created_at)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() != 1 {
            return Err(new.commit_exists());
        }
        sqlx::query(
            "UPDATE connector_repos SET name = $2, description = $3, tags = $4, readme = $5, is_public = $6, scope = $7, \
             head_commit_id = $8, updated_at = $9 WHERE id = $1",
        )
        .bind(&repo.id)
        .bind(&repo.name)
        .bind(&repo.description)
        .bind(&repo.tags)
        .bind(&repo.readme)
        .bind(i64::from(repo.is_public))
        .bind(&repo.scope)
        .bind(&commit.id)
        .bind(&repo.updated_at)
        .execute(&mut *tx)
        .await?;
        for label in commit.label_list() {
            sqlx::query(
                "INSERT INTO connector_labels (repo_id, label, commit_id) VALUES ($1, $2, $3) \
                 ON CONFLICT (repo_id, label) DO UPDATE SET commit_id = excluded.commit_id",
            )
            .bind(&repo.id)
            .bind(&label)
            .bind(&commit.id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn delete_connector(&self, project_id: &str, slug: &str) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let Some((id, _)) = lock_repo(&mut tx, project_id, slug).await? else {
            return Ok(false);
        };
        for sql in [
            "DELETE FROM connector_labels WHERE repo_id = $1",
            "UPDATE connector_repos SET head_commit_id = NULL WHERE id = $1",
            "DELETE FROM connector_commits WHERE repo_id = $1",
            "DELETE FROM connector_repos WHERE id = $1",
        ] {
            sqlx::query(sql).bind(&id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(true)
    }
}

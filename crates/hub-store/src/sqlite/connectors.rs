//! [`ConnectorStore`] on SQLite: the `connector_repos`, `connector_commits` and
//! `connector_labels` tables of migration 0006. A commit and its head move happen in one
//! `BEGIN IMMEDIATE` transaction that re-reads the head first, so the compare-and-set
//! holds across processes sharing the file.

use super::{insert, SqliteStore};
use crate::connectors::*;
use crate::error::StoreError;
use crate::rows::*;
use crate::store::StoreResult;
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

/// A repo matches a search (`?2`, a [`like_pattern`]) by slug, name or description.
const MATCHES: &str = "(?2 IS NULL OR lower(r.slug) LIKE ?2 ESCAPE '\\' OR lower(r.name) LIKE ?2 ESCAPE '\\' \
     OR lower(coalesce(r.description, '')) LIKE ?2 ESCAPE '\\')";

fn find_commit(c: &Connection, repo_id: &str, version: Option<&str>) -> StoreResult<Option<ConnectorCommit>> {
    let select = format!("SELECT {COMMIT_COLUMNS}, {COMMIT_FILES} FROM connector_commits c");
    let one = |sql: &str, value: &str| -> StoreResult<Option<ConnectorCommit>> {
        Ok(c.query_row(&format!("{select} {sql}"), params![repo_id, value], |r| read_commit_with_files(r)).optional()?)
    };
    let Some(version) = version.filter(|v| !v.is_empty()) else {
        return Ok(c
            .query_row(&format!("{select} JOIN connector_repos r ON r.head_commit_id = c.id WHERE r.id = ?1"), params![repo_id], |r| {
                read_commit_with_files(r)
            })
            .optional()?);
    };
    if let Some(found) = one("JOIN connector_labels l ON l.commit_id = c.id WHERE l.repo_id = ?1 AND l.label = ?2", version)? {
        return Ok(Some(found));
    }
    if let Some(found) = one("WHERE c.repo_id = ?1 AND (c.id = ?2 OR c.commit_hash = ?2)", version)? {
        return Ok(Some(found));
    }
    if version.len() >= 7 && version.bytes().all(|b| b.is_ascii_hexdigit()) {
        let prefix = format!("{}%", version.to_ascii_lowercase());
        let mut stmt = c.prepare(&format!("{select} WHERE c.repo_id = ?1 AND c.commit_hash LIKE ?2 LIMIT 2"))?;
        let found = stmt.query_map(params![repo_id, prefix], |r| read_commit_with_files(r))?.collect::<rusqlite::Result<Vec<_>>>()?;
        if found.len() > 1 {
            return Err(StoreError::BadRequest(format!("version '{version}' names more than one commit: give more of the hash")));
        }
        return Ok(found.into_iter().next());
    }
    Ok(None)
}

#[async_trait]
impl ConnectorStore for SqliteStore {
    async fn connector_repo(&self, project_id: &str, slug: &str) -> StoreResult<Option<ConnectorRepo>> {
        let sql = format!("SELECT {REPO_COLUMNS} FROM connector_repos r WHERE r.project_id = ?1 AND r.slug = ?2");
        self.optional(sql, (project_id.to_string(), slug.to_string())).await
    }

    async fn connector_repo_by_id(&self, id: &str) -> StoreResult<Option<(ConnectorRepo, String)>> {
        let sql = format!("SELECT {REPO_COLUMNS}, p.name FROM connector_repos r JOIN projects p ON p.id = r.project_id WHERE r.id = ?1");
        self.optional(sql, (id.to_string(),)).await
    }

    async fn connector_repos(&self, project_id: &str, listing: &RepoListing) -> StoreResult<(Vec<ConnectorRepo>, i64)> {
        let project_id = project_id.to_string();
        let pattern = like_pattern(listing.query.as_deref());
        let (public, limit, offset) = (listing.is_public.map(i64::from), listing.limit, listing.offset);
        self.with(move |c| {
            let filter = format!("r.project_id = ?1 AND {MATCHES} AND (?3 IS NULL OR r.is_public = ?3)");
            let total: i64 = c.query_row(
                &format!("SELECT COUNT(*) FROM connector_repos r WHERE {filter}"),
                params![project_id, pattern, public],
                |r| r.get(0),
            )?;
            let mut stmt =
                c.prepare(&format!("SELECT {REPO_COLUMNS} FROM connector_repos r WHERE {filter} ORDER BY r.slug LIMIT ?4 OFFSET ?5"))?;
            let rows = stmt.query_map(params![project_id, pattern, public, limit, offset], from_sqlite)?;
            Ok((rows.collect::<rusqlite::Result<Vec<_>>>()?, total))
        })
        .await
    }

    async fn connector_hub(&self, project_id: &str, query: Option<&str>) -> StoreResult<Vec<HubRow>> {
        let sql = format!(
            "SELECT {REPO_COLUMNS}, p.name, {COMMIT_COLUMNS} FROM connector_repos r \
             JOIN projects p ON p.id = r.project_id LEFT JOIN connector_commits c ON c.id = r.head_commit_id \
             WHERE (r.project_id = ?1 OR r.is_public = 1) AND {MATCHES} \
             ORDER BY r.project_id <> ?1, r.slug, p.name"
        );
        self.all(sql, (project_id.to_string(), like_pattern(query))).await
    }

    async fn connector_commit(&self, repo_id: &str, version: Option<&str>) -> StoreResult<Option<ConnectorCommit>> {
        let (repo_id, version) = (repo_id.to_string(), version.map(str::to_string));
        self.with(move |c| find_commit(c, &repo_id, version.as_deref())).await
    }

    async fn commit_connector(&self, new: NewCommit) -> StoreResult<()> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let repo = &new.repo;
            let sql = "SELECT id, head_commit_id FROM connector_repos WHERE project_id = ?1 AND slug = ?2";
            let current = tx.query_row(sql, params![repo.project_id, repo.slug], from_sqlite).optional()?;
            if new.create {
                if current.is_some() {
                    return Err(new.slug_taken());
                }
                insert(&tx, "connector_repos", &new.new_repo_row(), "")?;
            } else {
                new.check_head(current)?;
            }
            let commit = &new.commit;
            let inserted = tx.execute(
                "INSERT INTO connector_commits (id, repo_id, commit_hash, parent_hash, message, source, labels, files, metadata, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (repo_id, commit_hash) DO NOTHING",
                params![
                    commit.id,
                    repo.id,
                    commit.commit_hash,
                    commit.parent_hash,
                    commit.message,
                    commit.source,
                    commit.labels,
                    commit.files,
                    commit.metadata,
                    commit.created_at
                ],
            )?;
            if inserted == 0 {
                return Err(new.commit_exists());
            }
            tx.execute(
                "UPDATE connector_repos SET name = ?2, description = ?3, tags = ?4, readme = ?5, is_public = ?6, scope = ?7, \
                 head_commit_id = ?8, updated_at = ?9 WHERE id = ?1",
                params![
                    repo.id,
                    repo.name,
                    repo.description,
                    repo.tags,
                    repo.readme,
                    i64::from(repo.is_public),
                    repo.scope,
                    commit.id,
                    repo.updated_at
                ],
            )?;
            for label in commit.label_list() {
                tx.execute(
                    "INSERT INTO connector_labels (repo_id, label, commit_id) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (repo_id, label) DO UPDATE SET commit_id = excluded.commit_id",
                    params![repo.id, label, commit.id],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn delete_connector(&self, project_id: &str, slug: &str) -> StoreResult<bool> {
        let (project_id, slug) = (project_id.to_string(), slug.to_string());
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let id: Option<String> = tx
                .query_row("SELECT id FROM connector_repos WHERE project_id = ?1 AND slug = ?2", params![project_id, slug], |r| r.get(0))
                .optional()?;
            let Some(id) = id else { return Ok(false) };
            tx.execute("UPDATE connector_repos SET head_commit_id = NULL WHERE id = ?1", params![id])?;
            tx.execute("DELETE FROM connector_labels WHERE repo_id = ?1", params![id])?;
            tx.execute("DELETE FROM connector_commits WHERE repo_id = ?1", params![id])?;
            tx.execute("DELETE FROM connector_repos WHERE id = ?1", params![id])?;
            tx.commit()?;
            Ok(true)
        })
        .await
    }
}

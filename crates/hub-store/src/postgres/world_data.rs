//! [`WorldDataStore`] on PostgreSQL: the tables of migration 0005 (the SQLite ones,
//! column for column). A chunk registration and a `complete` lock the batch's row
//! (`FOR UPDATE`), so concurrent calls through several hub processes are decided one
//! at a time; the apply lock is one `INSERT … ON CONFLICT … WHERE` statement.

use super::{all, insert, optional, PostgresStore, Tx};
use crate::error::StoreError;
use crate::rows::*;
use crate::store::{StoreResult, Version};
use crate::world_data::*;
use async_trait::async_trait;

async fn get_batch_locked(tx: &mut Tx, filter: &str, binds: &[&str]) -> StoreResult<Option<DataBatch>> {
    let sql = format!("SELECT {BATCH_COLUMNS} FROM world_data_batches WHERE {filter} FOR UPDATE");
    let mut query = sqlx::query(&sql);
    for bind in binds {
        query = query.bind(*bind);
    }
    optional(&mut **tx, query).await
}

async fn get_chunks(tx: &mut Tx, batch_id: &str) -> StoreResult<Vec<DataChunk>> {
    let sql = format!("SELECT {CHUNK_COLUMNS} FROM world_data_chunks WHERE batch_id = $1 ORDER BY ordinal");
    all(&mut **tx, sqlx::query(&sql).bind(batch_id)).await
}

async fn write_batch(tx: &mut Tx, b: &DataBatch) -> StoreResult<()> {
    sqlx::query(
        "UPDATE world_data_batches SET state = $1, phase = $2, base_version_id = $3, result = $4, refusals = $5, report_key = $6, \
         version_id = $7, error = $8, lease_until = $9, updated_at = $10, completed_at = $11 WHERE id = $12",
    )
    .bind(&b.state)
    .bind(&b.phase)
    .bind(&b.base_version_id)
    .bind(&b.result)
    .bind(&b.refusals)
    .bind(&b.report_key)
    .bind(&b.version_id)
    .bind(&b.error)
    .bind(b.lease_until)
    .bind(&b.updated_at)
    .bind(&b.completed_at)
    .bind(&b.id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[async_trait]
impl WorldDataStore for PostgresStore {
    async fn create_data_batch(&self, b: DataBatch) -> StoreResult<()> {
        insert(&self.pool, "world_data_batches", &b, "").await?;
        Ok(())
    }

    async fn data_batch(&self, project_id: &str, id: &str) -> StoreResult<Option<DataBatch>> {
        let sql = format!("SELECT {BATCH_COLUMNS} FROM world_data_batches WHERE project_id = $1 AND id = $2");
        optional(&self.pool, sqlx::query(&sql).bind(project_id).bind(id)).await
    }

    async fn data_batches(&self, container_id: &str, before: Option<i64>, limit: i64) -> StoreResult<Vec<DataBatch>> {
        let sql = format!(
            "SELECT {BATCH_COLUMNS} FROM world_data_batches WHERE container_id = $1 AND ($2::BIGINT IS NULL OR seq < $2) \
             ORDER BY seq DESC LIMIT $3"
        );
        all(&self.pool, sqlx::query(&sql).bind(container_id).bind(before).bind(limit)).await
    }

    async fn register_data_chunk(&self, batch_id: &str, chunk: DataChunk, now: &str) -> StoreResult<(DataChunk, bool)> {
        let mut tx = self.pool.begin().await?;
        let mut batch = get_batch_locked(&mut tx, "id = $1", &[batch_id])
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no batch '{batch_id}'")))?;
        let sql = format!("SELECT {CHUNK_COLUMNS} FROM world_data_chunks WHERE batch_id = $1 AND ordinal = $2");
        let existing = optional(&mut *tx, sqlx::query(&sql).bind(batch_id).bind(chunk.ordinal)).await?;
        let (stored, new) = batch.register(chunk, existing)?;
        if new {
            insert(&mut *tx, "world_data_chunks", &stored, CHUNK_UPSERT).await?;
        }
        batch.state = UPLOADING.into();
        batch.updated_at = now.to_string();
        write_batch(&mut tx, &batch).await?;
        tx.commit().await?;
        Ok((stored, new))
    }

    async fn data_chunks(&self, batch_id: &str) -> StoreResult<Vec<DataChunk>> {
        let sql = format!("SELECT {CHUNK_COLUMNS} FROM world_data_chunks WHERE batch_id = $1 ORDER BY ordinal");
        all(&self.pool, sqlx::query(&sql).bind(batch_id)).await
    }

    async fn mark_data_chunk_uploaded(&self, batch_id: &str, chunk_id: &str) -> StoreResult<Option<DataChunk>> {
        let sql = format!("UPDATE world_data_chunks SET uploaded = 1 WHERE batch_id = $1 AND id = $2 RETURNING {CHUNK_COLUMNS}");
        optional(&self.pool, sqlx::query(&sql).bind(batch_id).bind(chunk_id)).await
    }

    async fn complete_data_batch(&self, project_id: &str, id: &str, now: &str) -> StoreResult<DataBatch> {
        let mut tx = self.pool.begin().await?;
        let mut batch = get_batch_locked(&mut tx, "project_id = $1 AND id = $2", &[project_id, id])
            .await?
            .ok_or_else(|| StoreError::missing("batch", id))?;
        let chunks = get_chunks(&mut tx, id).await?;
        batch.complete(&chunks, now)?;
        write_batch(&mut tx, &batch).await?;
        tx.commit().await?;
        Ok(batch)
    }

    async fn update_data_batch(&self, batch: &DataBatch) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        write_batch(&mut tx, batch).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn publish_data_batches(&self, base: &Version, version: &Version, now: &str) -> StoreResult<Vec<String>> {
        let published = sqlx::query(
            "UPDATE world_data_batches SET state = $1, version_id = $2, updated_at = $3 WHERE container_id = $4 \
             AND base_version_id = $5 AND state = $6 AND version_id IS NULL AND dry_run = 0 RETURNING seq, id",
        )
        .bind(PUBLISHED)
        .bind(&version.id)
        .bind(now)
        .bind(&version.container_id)
        .bind(&base.id)
        .bind(APPLIED);
        let mut ids: Vec<(i64, String)> = all(&self.pool, published).await?;
        ids.sort();
        Ok(ids.into_iter().map(|(_, id)| id).collect())
    }

    async fn data_head(&self, container_id: &str) -> StoreResult<Option<DataHead>> {
        let sql = format!("SELECT {HEAD_COLUMNS} FROM world_data_heads WHERE container_id = $1");
        optional(&self.pool, sqlx::query(&sql).bind(container_id)).await
    }

    async fn put_data_head(&self, h: DataHead) -> StoreResult<()> {
        insert(&self.pool, "world_data_heads", &h, HEAD_UPSERT).await?;
        Ok(())
    }

    async fn lock_data(&self, container_id: &str, holder: &str, lease_until: i64, now: i64) -> StoreResult<bool> {
        let done = sqlx::query(
            "INSERT INTO world_data_locks (container_id, holder, lease_until) VALUES ($1, $2, $3) \
             ON CONFLICT (container_id) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until \
             WHERE world_data_locks.holder = excluded.holder OR world_data_locks.lease_until < $4",
        )
        .bind(container_id)
        .bind(holder)
        .bind(lease_until)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn unlock_data(&self, container_id: &str, holder: &str) -> StoreResult<()> {
        sqlx::query("DELETE FROM world_data_locks WHERE container_id = $1 AND holder = $2")
            .bind(container_id)
            .bind(holder)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

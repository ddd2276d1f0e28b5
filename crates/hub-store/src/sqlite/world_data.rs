//! [`WorldDataStore`] on SQLite: the tables of migration 0005. A chunk registration, a
//! `complete` and the apply lock are each one `BEGIN IMMEDIATE` transaction, so they
//! are decided on rows no other process changes meanwhile (the SQLite file is the lock).

use super::{insert, SqliteStore};
use crate::error::StoreError;
use crate::rows::*;
use crate::store::{StoreResult, Version};
use crate::world_data::*;
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

fn get_batch(conn: &Connection, project_id: &str, id: &str) -> StoreResult<Option<DataBatch>> {
    Ok(conn
        .query_row(
            &format!("SELECT {BATCH_COLUMNS} FROM world_data_batches WHERE project_id = ?1 AND id = ?2"),
            [project_id, id],
            from_sqlite,
        )
        .optional()?)
}

fn get_batch_by_id(conn: &Connection, id: &str) -> StoreResult<Option<DataBatch>> {
    Ok(conn.query_row(&format!("SELECT {BATCH_COLUMNS} FROM world_data_batches WHERE id = ?1"), [id], from_sqlite).optional()?)
}

fn get_chunks(conn: &Connection, batch_id: &str) -> StoreResult<Vec<DataChunk>> {
    let mut stmt = conn.prepare(&format!("SELECT {CHUNK_COLUMNS} FROM world_data_chunks WHERE batch_id = ?1 ORDER BY ordinal"))?;
    let rows = stmt.query_map([batch_id], from_sqlite)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

fn write_batch(conn: &Connection, b: &DataBatch) -> StoreResult<()> {
    conn.execute(
        "UPDATE world_data_batches SET state = ?1, phase = ?2, base_version_id = ?3, result = ?4, refusals = ?5, report_key = ?6, \
         version_id = ?7, error = ?8, lease_until = ?9, updated_at = ?10, completed_at = ?11 WHERE id = ?12",
        params![
            b.state,
            b.phase,
            b.base_version_id,
            b.result,
            b.refusals,
            b.report_key,
            b.version_id,
            b.error,
            b.lease_until,
            b.updated_at,
            b.completed_at,
            b.id
        ],
    )?;
    Ok(())
}

#[async_trait]
impl WorldDataStore for SqliteStore {
    async fn create_data_batch(&self, b: DataBatch) -> StoreResult<()> {
        self.with(move |c| insert(c, "world_data_batches", &b, "").map(|_| ())).await
    }

    async fn data_batch(&self, project_id: &str, id: &str) -> StoreResult<Option<DataBatch>> {
        let (project_id, id) = (project_id.to_string(), id.to_string());
        self.with(move |c| get_batch(c, &project_id, &id)).await
    }

    async fn data_batches(&self, container_id: &str, before: Option<i64>, limit: i64) -> StoreResult<Vec<DataBatch>> {
        let sql = format!(
            "SELECT {BATCH_COLUMNS} FROM world_data_batches WHERE container_id = ?1 AND (?2 IS NULL OR seq < ?2) \
             ORDER BY seq DESC LIMIT ?3"
        );
        self.all(sql, (container_id.to_string(), before, limit)).await
    }

    async fn register_data_chunk(&self, batch_id: &str, chunk: DataChunk, now: &str) -> StoreResult<(DataChunk, bool)> {
        let (batch_id, now) = (batch_id.to_string(), now.to_string());
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut batch = get_batch_by_id(&tx, &batch_id)?.ok_or_else(|| StoreError::NotFound(format!("no batch '{batch_id}'")))?;
            let existing = tx
                .query_row(
                    &format!("SELECT {CHUNK_COLUMNS} FROM world_data_chunks WHERE batch_id = ?1 AND ordinal = ?2"),
                    params![batch_id, chunk.ordinal],
                    from_sqlite,
                )
                .optional()?;
            let (stored, new) = batch.register(chunk, existing)?;
            if new {
                insert(&tx, "world_data_chunks", &stored, CHUNK_UPSERT)?;
            }
            batch.state = UPLOADING.into();
            batch.updated_at = now;
            write_batch(&tx, &batch)?;
            tx.commit()?;
            Ok((stored, new))
        })
        .await
    }

    async fn data_chunks(&self, batch_id: &str) -> StoreResult<Vec<DataChunk>> {
        let batch_id = batch_id.to_string();
        self.with(move |c| get_chunks(c, &batch_id)).await
    }

    async fn mark_data_chunk_uploaded(&self, batch_id: &str, chunk_id: &str) -> StoreResult<Option<DataChunk>> {
        let (batch_id, chunk_id) = (batch_id.to_string(), chunk_id.to_string());
        self.with(move |c| {
            c.execute("UPDATE world_data_chunks SET uploaded = 1 WHERE batch_id = ?1 AND id = ?2", [&batch_id, &chunk_id])?;
            Ok(c.query_row(
                &format!("SELECT {CHUNK_COLUMNS} FROM world_data_chunks WHERE batch_id = ?1 AND id = ?2"),
                [&batch_id, &chunk_id],
                from_sqlite,
            )
            .optional()?)
        })
        .await
    }

    async fn complete_data_batch(&self, project_id: &str, id: &str, now: &str) -> StoreResult<DataBatch> {
        let (project_id, id, now) = (project_id.to_string(), id.to_string(), now.to_string());
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut batch = get_batch(&tx, &project_id, &id)?.ok_or_else(|| StoreError::missing("batch", &id))?;
            let chunks = get_chunks(&tx, &id)?;
            batch.complete(&chunks, &now)?;
            write_batch(&tx, &batch)?;
            tx.commit()?;
            Ok(batch)
        })
        .await
    }

    async fn update_data_batch(&self, batch: &DataBatch) -> StoreResult<()> {
        let batch = batch.clone();
        self.with(move |c| write_batch(c, &batch)).await
    }

    async fn publish_data_batches(&self, base: &Version, version: &Version, now: &str) -> StoreResult<Vec<String>> {
        let (container_id, base, version, now) = (version.container_id.clone(), base.id.clone(), version.id.clone(), now.to_string());
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let ids: Vec<String> = {
                let mut stmt = tx.prepare(
                    "SELECT id FROM world_data_batches WHERE container_id = ?1 AND base_version_id = ?2 AND state = ?3 \
                     AND version_id IS NULL AND dry_run = 0 ORDER BY seq",
                )?;
                let rows = stmt.query_map(params![container_id, base, APPLIED], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            for id in &ids {
                tx.execute(
                    "UPDATE world_data_batches SET state = ?1, version_id = ?2, updated_at = ?3 WHERE id = ?4",
                    params![PUBLISHED, version, now, id],
                )?;
            }
            tx.commit()?;
            Ok(ids)
        })
        .await
    }

    async fn data_head(&self, container_id: &str) -> StoreResult<Option<DataHead>> {
        self.optional(format!("SELECT {HEAD_COLUMNS} FROM world_data_heads WHERE container_id = ?1"), (container_id.to_string(),)).await
    }

    async fn put_data_head(&self, h: DataHead) -> StoreResult<()> {
        self.with(move |c| insert(c, "world_data_heads", &h, HEAD_UPSERT).map(|_| ())).await
    }

    async fn lock_data(&self, container_id: &str, holder: &str, lease_until: i64, now: i64) -> StoreResult<bool> {
        let (container_id, holder) = (container_id.to_string(), holder.to_string());
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let taken = tx.execute(
                "INSERT INTO world_data_locks (container_id, holder, lease_until) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (container_id) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until \
                 WHERE world_data_locks.holder = excluded.holder OR world_data_locks.lease_until < ?4",
                params![container_id, holder, lease_until, now],
            )?;
            tx.commit()?;
            Ok(taken == 1)
        })
        .await
    }

    async fn unlock_data(&self, container_id: &str, holder: &str) -> StoreResult<()> {
        let (container_id, holder) = (container_id.to_string(), holder.to_string());
        self.with(move |c| {
            c.execute("DELETE FROM world_data_locks WHERE container_id = ?1 AND holder = ?2", [&container_id, &holder])?;
            Ok(())
        })
        .await
    }
}

//! [`EvaluationStore`] on PostgreSQL: the `evaluations` and `evaluation_samples`
//! tables of migration 0003 (the SQLite ones, column for column), and the
//! container/version reads of the environment views. A batch of samples and a
//! finalize each lock their evaluation's row (`SELECT … FOR UPDATE`), so a batch never
//! lands on an evaluation finalized meanwhile, whichever process serves it.

use super::{all, insert, optional, PostgresStore, Tx};
use crate::error::StoreError;
use crate::evaluations::*;
use crate::rows::*;
use crate::store::{Container, StoreResult, Version};
use async_trait::async_trait;
use sqlx::Row;

/// The evaluation, its row locked until the transaction ends.
async fn lock_evaluation(tx: &mut Tx, id: &str) -> StoreResult<Evaluation> {
    let sql = format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE id = $1 FOR UPDATE");
    optional(&mut **tx, sqlx::query(&sql).bind(id)).await?.ok_or_else(|| StoreError::NotFound(format!("no evaluation '{id}'")))
}

#[async_trait]
impl EvaluationStore for PostgresStore {
    async fn project_containers(&self, project_id: &str, slug: Option<&str>, limit: i64) -> StoreResult<Vec<Container>> {
        let sql = format!(
            "SELECT {CONTAINER_COLUMNS} FROM containers WHERE project_id = $1 AND ($2::TEXT IS NULL OR slug = $2) \
             ORDER BY slug COLLATE \"C\" LIMIT $3"
        );
        all(&self.pool, sqlx::query(&sql).bind(project_id).bind(slug).bind(limit)).await
    }

    async fn container_versions(&self, container_id: &str, limit: i64) -> StoreResult<Vec<Version>> {
        let sql = format!("SELECT {VERSION_COLUMNS} FROM versions WHERE container_id = $1 ORDER BY seq DESC LIMIT $2");
        all(&self.pool, sqlx::query(&sql).bind(container_id).bind(limit)).await
    }

    async fn ready_version_count(&self, container_id: &str) -> StoreResult<i64> {
        let row = sqlx::query("SELECT COUNT(*) FROM versions WHERE container_id = $1 AND state = 'READY'")
            .bind(container_id)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get(0)?)
    }

    async fn create_evaluation(&self, e: Evaluation) -> StoreResult<()> {
        insert(&self.pool, "evaluations", &e, "").await?;
        Ok(())
    }

    async fn evaluation(&self, id: &str) -> StoreResult<Option<Evaluation>> {
        let sql = format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE id = $1");
        optional(&self.pool, sqlx::query(&sql).bind(id)).await
    }

    async fn add_samples(&self, evaluation_id: &str, samples: Vec<Sample>) -> StoreResult<i64> {
        let mut tx = self.pool.begin().await?;
        let evaluation = lock_evaluation(&mut tx, evaluation_id).await?;
        evaluation.ensure_running()?;
        let insert =
            format!("INSERT INTO evaluation_samples ({SAMPLE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)");
        for s in &samples {
            sqlx::query(&insert)
                .bind(&s.id)
                .bind(&evaluation.id)
                .bind(&evaluation.container_id)
                .bind(&evaluation.version_id)
                .bind(&s.task)
                .bind(&s.example_id)
                .bind(s.rollout_index)
                .bind(s.reward)
                .bind(s.score)
                .bind(s.correct.map(i64::from))
                .bind(s.passed.map(i64::from))
                .bind(&s.body)
                .bind(&s.created_at)
                .execute(&mut *tx)
                .await?;
        }
        let count = samples.len() as i64;
        sqlx::query("UPDATE evaluations SET sample_count = sample_count + $1 WHERE id = $2")
            .bind(count)
            .bind(&evaluation.id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(count)
    }

    async fn finalize_evaluation(&self, id: &str, outcome: Outcome) -> StoreResult<Evaluation> {
        let mut tx = self.pool.begin().await?;
        let evaluation = lock_evaluation(&mut tx, id).await?;
        if !outcome.changes(&evaluation)? {
            return Ok(evaluation);
        }
        let row = sqlx::query(&format!(
            "UPDATE evaluations SET status = $1, metrics = $2, cost = $3, completed_at = $4 WHERE id = $5 RETURNING {EVALUATION_COLUMNS}"
        ))
        .bind(&outcome.status)
        .bind(&outcome.metrics)
        .bind(&outcome.cost)
        .bind(&outcome.completed_at)
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
        let done = from_postgres(&row)?;
        tx.commit().await?;
        Ok(done)
    }

    async fn evaluations(&self, container_id: &str, limit: i64) -> StoreResult<Vec<Evaluation>> {
        let sql = format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE container_id = $1 ORDER BY seq DESC LIMIT $2");
        all(&self.pool, sqlx::query(&sql).bind(container_id).bind(limit)).await
    }

    async fn evaluation_count(&self, container_id: &str) -> StoreResult<i64> {
        let row = sqlx::query("SELECT COUNT(*) FROM evaluations WHERE container_id = $1").bind(container_id).fetch_one(&self.pool).await?;
        Ok(row.try_get(0)?)
    }

    async fn samples(&self, evaluation_id: &str, limit: i64) -> StoreResult<Vec<Sample>> {
        let sql = format!("SELECT {SAMPLE_COLUMNS} FROM evaluation_samples WHERE evaluation_id = $1 ORDER BY seq LIMIT $2");
        all(&self.pool, sqlx::query(&sql).bind(evaluation_id).bind(limit)).await
    }

    async fn task_sums(&self, container_id: &str) -> StoreResult<Vec<TaskVersionSums>> {
        // COUNT(*) FILTER rather than SUM over the 0/1 columns: SUM(BIGINT) is NUMERIC.
        let sql = "SELECT task, version_id, COUNT(*), COUNT(*) - COUNT(reward), COALESCE(SUM(reward), 0.0), \
                   COALESCE(SUM(reward * reward), 0.0), COUNT(score), COALESCE(SUM(score), 0.0), COUNT(passed), \
                   COUNT(*) FILTER (WHERE passed = 1) \
                   FROM evaluation_samples WHERE container_id = $1 GROUP BY task, version_id \
                   ORDER BY task COLLATE \"C\", version_id COLLATE \"C\"";
        all(&self.pool, sqlx::query(sql).bind(container_id)).await
    }

    async fn evaluations_before(&self, container_id: &str, before: Option<i64>, limit: i64) -> StoreResult<Vec<Evaluation>> {
        let sql = format!(
            "SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE container_id = $1 AND ($2::BIGINT IS NULL OR seq < $2) \
             ORDER BY seq DESC LIMIT $3"
        );
        all(&self.pool, sqlx::query(&sql).bind(container_id).bind(before).bind(limit)).await
    }

    async fn samples_after(&self, evaluation_id: &str, after: i64, limit: i64) -> StoreResult<Vec<(i64, Sample)>> {
        let sql =
            format!("SELECT seq, {SAMPLE_COLUMNS} FROM evaluation_samples WHERE evaluation_id = $1 AND seq > $2 ORDER BY seq LIMIT $3");
        all(&self.pool, sqlx::query(&sql).bind(evaluation_id).bind(after).bind(limit)).await
    }

    async fn sample(&self, id: &str) -> StoreResult<Option<Sample>> {
        let sql = format!("SELECT {SAMPLE_COLUMNS} FROM evaluation_samples WHERE id = $1");
        optional(&self.pool, sqlx::query(&sql).bind(id)).await
    }
}

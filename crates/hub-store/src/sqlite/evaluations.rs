//! [`EvaluationStore`] on SQLite: the `evaluations` and `evaluation_samples` tables of
//! migration 0003, and the container/version reads of the environment views. Writes
//! run in `BEGIN IMMEDIATE` transactions like the rest of the store; a batch of
//! samples and its evaluation's count change together or not at all.

use super::{insert, SqliteStore};
use crate::error::StoreError;
use crate::evaluations::*;
use crate::rows::*;
use crate::store::{Container, StoreResult, Version};
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

fn get_evaluation(conn: &Connection, id: &str) -> StoreResult<Option<Evaluation>> {
    Ok(conn.query_row(&format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE id = ?1"), [id], from_sqlite).optional()?)
}

#[async_trait]
impl EvaluationStore for SqliteStore {
    async fn project_containers(&self, project_id: &str, slug: Option<&str>, limit: i64) -> StoreResult<Vec<Container>> {
        let sql = format!(
            "SELECT {CONTAINER_COLUMNS} FROM containers WHERE project_id = ?1 AND (?2 IS NULL OR slug = ?2) ORDER BY slug LIMIT ?3"
        );
        self.all(sql, (project_id.to_string(), slug.map(str::to_string), limit)).await
    }

    async fn container_versions(&self, container_id: &str, limit: i64) -> StoreResult<Vec<Version>> {
        let sql = format!("SELECT {VERSION_COLUMNS} FROM versions WHERE container_id = ?1 ORDER BY seq DESC LIMIT ?2");
        self.all(sql, (container_id.to_string(), limit)).await
    }

    async fn ready_version_count(&self, container_id: &str) -> StoreResult<i64> {
        let container_id = container_id.to_string();
        self.with(move |c| {
            Ok(c.query_row("SELECT COUNT(*) FROM versions WHERE container_id = ?1 AND state = 'READY'", [&container_id], |r| r.get(0))?)
        })
        .await
    }

    async fn create_evaluation(&self, e: Evaluation) -> StoreResult<()> {
        self.with(move |c| insert(c, "evaluations", &e, "").map(|_| ())).await
    }

    async fn evaluation(&self, id: &str) -> StoreResult<Option<Evaluation>> {
        let id = id.to_string();
        self.with(move |c| get_evaluation(c, &id)).await
    }

    async fn add_samples(&self, evaluation_id: &str, samples: Vec<Sample>) -> StoreResult<i64> {
        let evaluation_id = evaluation_id.to_string();
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let evaluation =
                get_evaluation(&tx, &evaluation_id)?.ok_or_else(|| StoreError::NotFound(format!("no evaluation '{evaluation_id}'")))?;
            evaluation.ensure_running()?;
            {
                let mut insert = tx.prepare(&format!(
                    "INSERT INTO evaluation_samples ({SAMPLE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
                ))?;
                for s in &samples {
                    insert.execute(params![
                        s.id,
                        evaluation.id,
                        evaluation.container_id,
                        evaluation.version_id,
                        s.task,
                        s.example_id,
                        s.rollout_index,
                        s.reward,
                        s.score,
                        s.correct.map(i64::from),
                        s.passed.map(i64::from),
                        s.body,
                        s.created_at
                    ])?;
                }
            }
            let count = samples.len() as i64;
            tx.execute("UPDATE evaluations SET sample_count = sample_count + ?1 WHERE id = ?2", params![count, evaluation.id])?;
            tx.commit()?;
            Ok(count)
        })
        .await
    }

    async fn finalize_evaluation(&self, id: &str, outcome: Outcome) -> StoreResult<Evaluation> {
        let id = id.to_string();
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let evaluation = get_evaluation(&tx, &id)?.ok_or_else(|| StoreError::NotFound(format!("no evaluation '{id}'")))?;
            if !outcome.changes(&evaluation)? {
                return Ok(evaluation);
            }
            tx.execute(
                "UPDATE evaluations SET status = ?1, metrics = ?2, cost = ?3, completed_at = ?4 WHERE id = ?5",
                params![outcome.status, outcome.metrics, outcome.cost, outcome.completed_at, id],
            )?;
            let done = get_evaluation(&tx, &id)?.ok_or_else(|| StoreError::Vanished("evaluation"))?;
            tx.commit()?;
            Ok(done)
        })
        .await
    }

    async fn evaluations(&self, container_id: &str, limit: i64) -> StoreResult<Vec<Evaluation>> {
        let sql = format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE container_id = ?1 ORDER BY seq DESC LIMIT ?2");
        self.all(sql, (container_id.to_string(), limit)).await
    }

    async fn evaluation_count(&self, container_id: &str) -> StoreResult<i64> {
        let container_id = container_id.to_string();
        self.with(move |c| Ok(c.query_row("SELECT COUNT(*) FROM evaluations WHERE container_id = ?1", [&container_id], |r| r.get(0))?))
            .await
    }

    async fn samples(&self, evaluation_id: &str, limit: i64) -> StoreResult<Vec<Sample>> {
        let sql = format!("SELECT {SAMPLE_COLUMNS} FROM evaluation_samples WHERE evaluation_id = ?1 ORDER BY seq LIMIT ?2");
        self.all(sql, (evaluation_id.to_string(), limit)).await
    }

    async fn task_sums(&self, container_id: &str) -> StoreResult<Vec<TaskVersionSums>> {
        let sql = "SELECT task, version_id, COUNT(*), COUNT(*) - COUNT(reward), COALESCE(SUM(reward), 0.0), \
                   COALESCE(SUM(reward * reward), 0.0), COUNT(score), COALESCE(SUM(score), 0.0), COUNT(passed), \
                   COALESCE(SUM(passed), 0) \
                   FROM evaluation_samples WHERE container_id = ?1 GROUP BY task, version_id ORDER BY task, version_id";
        self.all(sql.into(), (container_id.to_string(),)).await
    }

    async fn evaluations_before(&self, container_id: &str, before: Option<i64>, limit: i64) -> StoreResult<Vec<Evaluation>> {
        let sql = format!(
            "SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE container_id = ?1 AND (?2 IS NULL OR seq < ?2) ORDER BY seq DESC LIMIT ?3"
        );
        self.all(sql, (container_id.to_string(), before, limit)).await
    }

    async fn samples_after(&self, evaluation_id: &str, after: i64, limit: i64) -> StoreResult<Vec<(i64, Sample)>> {
        let sql =
            format!("SELECT seq, {SAMPLE_COLUMNS} FROM evaluation_samples WHERE evaluation_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3");
        self.all(sql, (evaluation_id.to_string(), after, limit)).await
    }

    async fn sample(&self, id: &str) -> StoreResult<Option<Sample>> {
        self.optional(format!("SELECT {SAMPLE_COLUMNS} FROM evaluation_samples WHERE id = ?1"), (id.to_string(),)).await
    }
}

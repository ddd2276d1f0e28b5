//! [`AgentStore`] on PostgreSQL: the tables of migration 0004 (the SQLite ones, column
//! for column). A claim takes its run with `FOR UPDATE SKIP LOCKED`, so workers of many
//! hub processes never share a run; a run change locks the run's row (`FOR UPDATE`); a
//! run number is taken under an advisory lock per project; upserts are single
//! `INSERT … ON CONFLICT` statements.

use super::{all, bind_all, insert, optional, PostgresStore, Query, Tx};
use crate::agents::*;
use crate::error::StoreError;
use crate::evaluations::{Evaluation, SampleSums};
use crate::rows::*;
use crate::store::StoreResult;
use async_trait::async_trait;
use sqlx::Row;

/// A run by id, else by job id; its row locked until the transaction ends when `lock`.
async fn get_run(tx: &mut Tx, project_id: &str, id: &str, lock: bool) -> StoreResult<Option<Run>> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE project_id = $1 AND (id = $2 OR job_id = $2) ORDER BY (id = $2) DESC LIMIT 1{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    optional(&mut **tx, sqlx::query(&sql).bind(project_id).bind(id)).await
}

/// Write back every column a change or a claim may move.
async fn write_run(tx: &mut Tx, run: &Run) -> StoreResult<()> {
    sqlx::query(
        "UPDATE runs SET state = $1, worker_id = $2, lease_expires = $3, attempts = $4, algo_state = $5, result = $6, \
         metrics = $7, metric_points = $8, rollouts = $9, started_at = $10, heartbeat_at = $11, finished_at = $12 WHERE id = $13",
    )
    .bind(&run.state)
    .bind(&run.worker_id)
    .bind(run.lease_expires)
    .bind(run.attempts)
    .bind(&run.algo_state)
    .bind(&run.result)
    .bind(&run.metrics)
    .bind(run.metric_points)
    .bind(run.rollouts)
    .bind(&run.started_at)
    .bind(&run.heartbeat_at)
    .bind(&run.finished_at)
    .bind(&run.id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A project secret's insert, before what a conflict does: `$1`…`$6` are its row
/// ([`secret_row`]), the time `$6` both its creation and its update.
const INSERT_SECRET: &str = "INSERT INTO project_secrets (project_id, name, scope, description, sealed, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $6)";

/// `sql` (an [`INSERT_SECRET`]) with the secret's row bound, `at` its time.
fn secret_row<'q>(sql: &'q str, project_id: &'q str, s: &'q ProjectSecret, sealed: Vec<u8>, at: &'q str) -> Query<'q> {
    sqlx::query(sql).bind(project_id).bind(&s.name).bind(&s.scope).bind(&s.description).bind(sealed).bind(at)
}

#[async_trait]
impl AgentStore for PostgresStore {
    async fn create_project_secret(&self, project_id: &str, s: ProjectSecret, sealed: Vec<u8>) -> StoreResult<bool> {
        let sql = format!("{INSERT_SECRET} ON CONFLICT (project_id, name) DO NOTHING");
        let done = secret_row(&sql, project_id, &s, sealed, &s.created_at).execute(&self.pool).await?;
        Ok(done.rows_affected() == 1)
    }

    async fn put_project_secret(&self, project_id: &str, s: ProjectSecret, keep_description: bool, sealed: Vec<u8>) -> StoreResult<bool> {
        let sql = format!(
            "{INSERT_SECRET} ON CONFLICT (project_id, name) DO UPDATE SET scope = EXCLUDED.scope, \
             description = CASE WHEN $7 THEN project_secrets.description ELSE EXCLUDED.description END, \
             sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at RETURNING (xmax = 0)"
        );
        let row = secret_row(&sql, project_id, &s, sealed, &s.updated_at).bind(keep_description).fetch_one(&self.pool).await?;
        Ok(row.try_get(0)?)
    }

    async fn project_secrets(&self, project_id: &str) -> StoreResult<Vec<ProjectSecret>> {
        let sql = format!("SELECT {SECRET_COLUMNS} FROM project_secrets WHERE project_id = $1 ORDER BY name COLLATE \"C\"");
        all(&self.pool, sqlx::query(&sql).bind(project_id)).await
    }

    async fn project_secret_values(&self, project_id: &str) -> StoreResult<Vec<(ProjectSecret, Vec<u8>)>> {
        let sql = format!("SELECT {SECRET_COLUMNS}, sealed FROM project_secrets WHERE project_id = $1 ORDER BY name COLLATE \"C\"");
        all(&self.pool, sqlx::query(&sql).bind(project_id)).await
    }

    async fn delete_project_secret(&self, project_id: &str, name: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM project_secrets WHERE project_id = $1 AND name = $2")
            .bind(project_id)
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn upsert_agent(&self, a: Agent) -> StoreResult<(Agent, bool)> {
        let upsert = "ON CONFLICT (project_id, name) DO UPDATE SET image = EXCLUDED.image, body = EXCLUDED.body, \
                      updated_at = EXCLUDED.updated_at";
        let sql = insert_sql::<Agent>("agents", '$', &format!("{upsert} RETURNING {AGENT_COLUMNS}, (xmax = 0)"));
        let row = bind_all(sqlx::query(&sql), a.params()).fetch_one(&self.pool).await?;
        Ok((from_postgres(&row)?, row.try_get(8)?))
    }

    async fn agents(&self, project_id: &str) -> StoreResult<Vec<Agent>> {
        let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE project_id = $1 ORDER BY name COLLATE \"C\"");
        all(&self.pool, sqlx::query(&sql).bind(project_id)).await
    }

    async fn agent(&self, project_id: &str, id_or_name: &str) -> StoreResult<Option<Agent>> {
        let sql =
            format!("SELECT {AGENT_COLUMNS} FROM agents WHERE project_id = $1 AND (id = $2 OR name = $2) ORDER BY (id = $2) DESC LIMIT 1");
        optional(&self.pool, sqlx::query(&sql).bind(project_id).bind(id_or_name)).await
    }

    async fn put_dataset(&self, d: Dataset, items: Vec<String>) -> StoreResult<(Dataset, bool)> {
        let mut tx = self.pool.begin().await?;
        let upsert = "ON CONFLICT (project_id, name) DO UPDATE SET description = EXCLUDED.description, \
                      item_count = EXCLUDED.item_count, updated_at = EXCLUDED.updated_at";
        let sql = insert_sql::<Dataset>("datasets", '$', &format!("{upsert} RETURNING {DATASET_COLUMNS}, (xmax = 0)"));
        let row = bind_all(sqlx::query(&sql), d.params()).fetch_one(&mut *tx).await?;
        let (stored, created): (Dataset, bool) = (from_postgres(&row)?, row.try_get(8)?);
        sqlx::query("DELETE FROM dataset_items WHERE dataset_id = $1").bind(&stored.id).execute(&mut *tx).await?;
        let indexes: Vec<i64> = (0..items.len() as i64).collect();
        sqlx::query("INSERT INTO dataset_items (dataset_id, idx, input) SELECT $1, t.idx, t.input FROM UNNEST($2::BIGINT[], $3::TEXT[]) AS t(idx, input)")
            .bind(&stored.id)
            .bind(indexes)
            .bind(items)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((stored, created))
    }

    async fn datasets(&self, project_id: &str) -> StoreResult<Vec<Dataset>> {
        let sql = format!("SELECT {DATASET_COLUMNS} FROM datasets WHERE project_id = $1 ORDER BY seq");
        all(&self.pool, sqlx::query(&sql).bind(project_id)).await
    }

    async fn dataset(&self, project_id: &str, id_or_name: &str) -> StoreResult<Option<Dataset>> {
        let sql = format!(
            "SELECT {DATASET_COLUMNS} FROM datasets WHERE project_id = $1 AND (id = $2 OR name = $2) ORDER BY (id = $2) DESC LIMIT 1"
        );
        optional(&self.pool, sqlx::query(&sql).bind(project_id).bind(id_or_name)).await
    }

    async fn dataset_items(&self, dataset_id: &str, offset: i64, limit: i64) -> StoreResult<Vec<(i64, String)>> {
        let sql = "SELECT idx, input FROM dataset_items WHERE dataset_id = $1 AND idx >= $2 ORDER BY idx LIMIT $3";
        all(&self.pool, sqlx::query(sql).bind(dataset_id).bind(offset).bind(limit)).await
    }

    async fn create_run(&self, mut run: Run) -> StoreResult<Run> {
        let mut tx = self.pool.begin().await?;
        if run.kind == KIND_RUN {
            // A project's runs take their numbers one at a time.
            sqlx::query("SELECT pg_advisory_xact_lock(hashtext('runs/' || $1))").bind(&run.project_id).execute(&mut *tx).await?;
            let next: i64 = sqlx::query("SELECT COALESCE(MAX(run_number), 0) + 1 FROM runs WHERE project_id = $1")
                .bind(&run.project_id)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
            run.run_number = Some(next);
        }
        insert(&mut *tx, "runs", &run, "").await?;
        let stored = get_run(&mut tx, &run.project_id, &run.id, false).await?.ok_or_else(|| StoreError::Vanished("run"))?;
        tx.commit().await?;
        Ok(stored)
    }

    async fn run(&self, project_id: &str, id: &str) -> StoreResult<Option<Run>> {
        let mut tx = self.pool.begin().await?;
        let run = get_run(&mut tx, project_id, id, false).await?;
        tx.commit().await?;
        Ok(run)
    }

    async fn runs(&self, project_id: &str, source: Option<&str>, limit: i64) -> StoreResult<Vec<Run>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE project_id = $1 AND kind = 'run' AND ($2::TEXT IS NULL OR source = $2) \
             ORDER BY seq DESC LIMIT $3"
        );
        all(&self.pool, sqlx::query(&sql).bind(project_id).bind(source).bind(limit)).await
    }

    async fn claim_run(&self, project_id: &str, claim: Claim) -> StoreResult<Option<Run>> {
        let mut tx = self.pool.begin().await?;
        // Rows another worker's claim holds are skipped, not waited for.
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE project_id = $1 AND source = 'platform' AND kind = ANY($2) \
             AND (state = 'pending' OR (state = 'running' AND lease_expires <= $3)) ORDER BY seq LIMIT 64 FOR UPDATE SKIP LOCKED"
        );
        let candidates = all(&mut *tx, sqlx::query(&sql).bind(project_id).bind(&claim.kinds).bind(claim.now.secs)).await?;
        let (exhausted, taken) = claim.decide(candidates);
        for run in exhausted.iter().chain(&taken) {
            write_run(&mut tx, run).await?;
        }
        tx.commit().await?;
        Ok(taken)
    }

    async fn change_run(&self, project_id: &str, id: &str, change: RunChange, now: Now) -> StoreResult<Run> {
        let mut tx = self.pool.begin().await?;
        let mut run = get_run(&mut tx, project_id, id, true).await?.ok_or_else(|| StoreError::missing("run", id))?;
        run.apply(&change, &now)?;
        write_run(&mut tx, &run).await?;
        match &change {
            RunChange::Metrics { points } => {
                let bodies: Vec<String> = points.iter().map(gateway_world::json::canonical).collect();
                sqlx::query("INSERT INTO run_metrics (run_id, body, created_at) SELECT $1, b, $3 FROM UNNEST($2::TEXT[]) AS b")
                    .bind(&run.id)
                    .bind(bodies)
                    .bind(&now.iso)
                    .execute(&mut *tx)
                    .await?;
            }
            RunChange::Rollout { name, session_id } => {
                sqlx::query("INSERT INTO run_rollouts (run_id, name, session_id, created_at) VALUES ($1, $2, $3, $4)")
                    .bind(&run.id)
                    .bind(name)
                    .bind(session_id)
                    .bind(&now.iso)
                    .execute(&mut *tx)
                    .await?;
            }
            _ => {}
        }
        tx.commit().await?;
        Ok(run)
    }

    async fn put_build(&self, b: AgentBuild) -> StoreResult<(AgentBuild, bool)> {
        let mut tx = self.pool.begin().await?;
        let inserted = insert(&mut *tx, "agent_builds", &b, "ON CONFLICT (project_id, agent_id, build_hash) DO NOTHING").await?;
        let row =
            sqlx::query(&format!("SELECT {BUILD_COLUMNS} FROM agent_builds WHERE project_id = $1 AND agent_id = $2 AND build_hash = $3"))
                .bind(&b.project_id)
                .bind(&b.agent_id)
                .bind(&b.build_hash)
                .fetch_one(&mut *tx)
                .await?;
        tx.commit().await?;
        Ok((from_postgres(&row)?, inserted == 1))
    }

    async fn build(&self, project_id: &str, id_or_hash: &str) -> StoreResult<Option<AgentBuild>> {
        let sql = format!(
            "SELECT {BUILD_COLUMNS} FROM agent_builds WHERE project_id = $1 AND (id = $2 OR build_hash = $2) \
             ORDER BY (id = $2) DESC, seq DESC LIMIT 1"
        );
        optional(&self.pool, sqlx::query(&sql).bind(project_id).bind(id_or_hash)).await
    }

    async fn builds_by_commit(&self, project_id: &str, prefix: &str, limit: i64) -> StoreResult<Vec<AgentBuild>> {
        let sql = format!(
            "SELECT {BUILD_COLUMNS} FROM agent_builds WHERE project_id = $1 AND commit_sha >= $2 \
             AND left(commit_sha, length($2)) = $2 ORDER BY seq DESC LIMIT $3"
        );
        all(&self.pool, sqlx::query(&sql).bind(project_id).bind(prefix).bind(limit)).await
    }

    async fn builds_by_version(&self, project_id: &str, agent_id: &str, version: &str, limit: i64) -> StoreResult<Vec<AgentBuild>> {
        let sql = format!(
            "SELECT {BUILD_COLUMNS} FROM agent_builds WHERE project_id = $1 AND agent_id = $2 AND version = $3 ORDER BY seq DESC LIMIT $4"
        );
        all(&self.pool, sqlx::query(&sql).bind(project_id).bind(agent_id).bind(version).bind(limit)).await
    }

    async fn build_evaluations(&self, project_id: &str, keys: Vec<String>, limit: i64) -> StoreResult<Vec<BuildEvaluation>> {
        // The evaluations through migration 0004's expression index (the same
        // expression here), each with its samples summed and its world's slug.
        let sql = format!(
            "SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE project_id = $1 \
             AND ((details::jsonb) ->> 'agentBuildId') = ANY($2) ORDER BY seq DESC LIMIT $3"
        );
        let evaluations: Vec<Evaluation> = all(&self.pool, sqlx::query(&sql).bind(project_id).bind(&keys).bind(limit)).await?;
        let mut out = Vec::new();
        for evaluation in evaluations {
            let sums = sqlx::query(
                "SELECT COUNT(*), COUNT(*) - COUNT(reward), COALESCE(SUM(reward), 0.0), COALESCE(SUM(reward * reward), 0.0), \
                 COUNT(score), COALESCE(SUM(score), 0.0), COUNT(passed), COUNT(*) FILTER (WHERE passed = 1) \
                 FROM evaluation_samples WHERE evaluation_id = $1",
            )
            .bind(&evaluation.id)
            .fetch_one(&self.pool)
            .await?;
            let sums: SampleSums = from_postgres(&sums)?;
            let slug = sqlx::query("SELECT slug FROM containers WHERE id = $1").bind(&evaluation.container_id);
            let world: Option<String> = optional(&self.pool, slug).await?;
            out.push(BuildEvaluation { evaluation, world: world.unwrap_or_default(), sums });
        }
        Ok(out)
    }
}

//! [`AgentStore`] on SQLite: the tables of migration 0004. Every write is a
//! `BEGIN IMMEDIATE` transaction, so a claim, a run change or a run number is decided
//! on rows no other process changes meanwhile (the SQLite file is the lock).

use super::{insert, SqliteStore};
use crate::agents::*;
use crate::error::StoreError;
use crate::evaluations::{Evaluation, SampleSums};
use crate::rows::*;
use crate::store::StoreResult;
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

fn get_run(conn: &Connection, project_id: &str, id: &str) -> StoreResult<Option<Run>> {
    Ok(conn
        .query_row(
            &format!("SELECT {RUN_COLUMNS} FROM runs WHERE project_id = ?1 AND (id = ?2 OR job_id = ?2) ORDER BY id = ?2 DESC LIMIT 1"),
            params![project_id, id],
            from_sqlite,
        )
        .optional()?)
}

/// Write back every column a change or a claim may move.
fn write_run(conn: &Connection, run: &Run) -> StoreResult<()> {
    conn.execute(
        "UPDATE runs SET state = ?1, worker_id = ?2, lease_expires = ?3, attempts = ?4, algo_state = ?5, result = ?6, \
         metrics = ?7, metric_points = ?8, rollouts = ?9, started_at = ?10, heartbeat_at = ?11, finished_at = ?12 WHERE id = ?13",
        params![
            run.state,
            run.worker_id,
            run.lease_expires,
            run.attempts,
            run.algo_state,
            run.result,
            run.metrics,
            run.metric_points,
            run.rollouts,
            run.started_at,
            run.heartbeat_at,
            run.finished_at,
            run.id
        ],
    )?;
    Ok(())
}

#[async_trait]
impl AgentStore for SqliteStore {
    async fn create_project_secret(&self, project_id: &str, s: ProjectSecret, sealed: Vec<u8>) -> StoreResult<bool> {
        let project_id = project_id.to_string();
        self.with(move |c| {
            let inserted = c.execute(
                "INSERT INTO project_secrets (project_id, name, scope, description, sealed, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) ON CONFLICT (project_id, name) DO NOTHING",
                params![project_id, s.name, s.scope, s.description, sealed, s.created_at],
            )?;
            Ok(inserted == 1)
        })
        .await
    }

    async fn put_project_secret(&self, project_id: &str, s: ProjectSecret, keep_description: bool, sealed: Vec<u8>) -> StoreResult<bool> {
        let project_id = project_id.to_string();
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let updated = tx.execute(
                "UPDATE project_secrets SET scope = ?1, description = CASE WHEN ?2 THEN description ELSE ?3 END, sealed = ?4, \
                 updated_at = ?5 WHERE project_id = ?6 AND name = ?7",
                params![s.scope, keep_description, s.description, sealed, s.updated_at, project_id, s.name],
            )?;
            if updated == 0 {
                tx.execute(
                    "INSERT INTO project_secrets (project_id, name, scope, description, sealed, created_at, updated_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                    params![project_id, s.name, s.scope, s.description, sealed, s.updated_at],
                )?;
            }
            tx.commit()?;
            Ok(updated == 0)
        })
        .await
    }

    async fn project_secrets(&self, project_id: &str) -> StoreResult<Vec<ProjectSecret>> {
        self.all(format!("SELECT {SECRET_COLUMNS} FROM project_secrets WHERE project_id = ?1 ORDER BY name"), (project_id.to_string(),))
            .await
    }

    async fn project_secret_values(&self, project_id: &str) -> StoreResult<Vec<(ProjectSecret, Vec<u8>)>> {
        let sql = format!("SELECT {SECRET_COLUMNS}, sealed FROM project_secrets WHERE project_id = ?1 ORDER BY name");
        self.all(sql, (project_id.to_string(),)).await
    }

    async fn delete_project_secret(&self, project_id: &str, name: &str) -> StoreResult<bool> {
        let (project_id, name) = (project_id.to_string(), name.to_string());
        self.with(move |c| Ok(c.execute("DELETE FROM project_secrets WHERE project_id = ?1 AND name = ?2", [&project_id, &name])? > 0))
            .await
    }

    async fn upsert_agent(&self, a: Agent) -> StoreResult<(Agent, bool)> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let updated = tx.execute(
                "UPDATE agents SET image = ?1, body = ?2, updated_at = ?3 WHERE project_id = ?4 AND name = ?5",
                params![a.image, a.body, a.updated_at, a.project_id, a.name],
            )?;
            if updated == 0 {
                insert(&tx, "agents", &a, "")?;
            }
            let stored = tx.query_row(
                &format!("SELECT {AGENT_COLUMNS} FROM agents WHERE project_id = ?1 AND name = ?2"),
                [&a.project_id, &a.name],
                from_sqlite,
            )?;
            tx.commit()?;
            Ok((stored, updated == 0))
        })
        .await
    }

    async fn agents(&self, project_id: &str) -> StoreResult<Vec<Agent>> {
        self.all(format!("SELECT {AGENT_COLUMNS} FROM agents WHERE project_id = ?1 ORDER BY name"), (project_id.to_string(),)).await
    }

    async fn agent(&self, project_id: &str, id_or_name: &str) -> StoreResult<Option<Agent>> {
        let sql =
            format!("SELECT {AGENT_COLUMNS} FROM agents WHERE project_id = ?1 AND (id = ?2 OR name = ?2) ORDER BY id = ?2 DESC LIMIT 1");
        self.optional(sql, (project_id.to_string(), id_or_name.to_string())).await
    }

    async fn put_dataset(&self, d: Dataset, items: Vec<String>) -> StoreResult<(Dataset, bool)> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let existing: Option<String> = tx
                .query_row("SELECT id FROM datasets WHERE project_id = ?1 AND name = ?2", [&d.project_id, &d.name], |r| r.get(0))
                .optional()?;
            let created = existing.is_none();
            let id = match existing {
                Some(id) => {
                    tx.execute(
                        "UPDATE datasets SET description = ?1, item_count = ?2, updated_at = ?3 WHERE id = ?4",
                        params![d.description, d.item_count, d.updated_at, id],
                    )?;
                    tx.execute("DELETE FROM dataset_items WHERE dataset_id = ?1", [&id])?;
                    id
                }
                None => {
                    insert(&tx, "datasets", &d, "")?;
                    d.id.clone()
                }
            };
            {
                let mut insert = tx.prepare("INSERT INTO dataset_items (dataset_id, idx, input) VALUES (?1, ?2, ?3)")?;
                for (idx, input) in items.iter().enumerate() {
                    insert.execute(params![id, idx as i64, input])?;
                }
            }
            let stored = tx.query_row(&format!("SELECT {DATASET_COLUMNS} FROM datasets WHERE id = ?1"), [&id], from_sqlite)?;
            tx.commit()?;
            Ok((stored, created))
        })
        .await
    }

    async fn datasets(&self, project_id: &str) -> StoreResult<Vec<Dataset>> {
        self.all(format!("SELECT {DATASET_COLUMNS} FROM datasets WHERE project_id = ?1 ORDER BY seq"), (project_id.to_string(),)).await
    }

    async fn dataset(&self, project_id: &str, id_or_name: &str) -> StoreResult<Option<Dataset>> {
        let sql = format!(
            "SELECT {DATASET_COLUMNS} FROM datasets WHERE project_id = ?1 AND (id = ?2 OR name = ?2) ORDER BY id = ?2 DESC LIMIT 1"
        );
        self.optional(sql, (project_id.to_string(), id_or_name.to_string())).await
    }

    async fn dataset_items(&self, dataset_id: &str, offset: i64, limit: i64) -> StoreResult<Vec<(i64, String)>> {
        let sql = "SELECT idx, input FROM dataset_items WHERE dataset_id = ?1 AND idx >= ?2 ORDER BY idx LIMIT ?3".to_string();
        self.all(sql, (dataset_id.to_string(), offset, limit)).await
    }

    async fn create_run(&self, mut run: Run) -> StoreResult<Run> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if run.kind == KIND_RUN {
                let next: i64 =
                    tx.query_row("SELECT COALESCE(MAX(run_number), 0) + 1 FROM runs WHERE project_id = ?1", [&run.project_id], |r| {
                        r.get(0)
                    })?;
                run.run_number = Some(next);
            }
            insert(&tx, "runs", &run, "")?;
            let stored = get_run(&tx, &run.project_id, &run.id)?.ok_or_else(|| StoreError::Vanished("run"))?;
            tx.commit()?;
            Ok(stored)
        })
        .await
    }

    async fn run(&self, project_id: &str, id: &str) -> StoreResult<Option<Run>> {
        let (project_id, id) = (project_id.to_string(), id.to_string());
        self.with(move |c| get_run(c, &project_id, &id)).await
    }

    async fn runs(&self, project_id: &str, source: Option<&str>, limit: i64) -> StoreResult<Vec<Run>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE project_id = ?1 AND kind = 'run' AND (?2 IS NULL OR source = ?2) \
             ORDER BY seq DESC LIMIT ?3"
        );
        self.all(sql, (project_id.to_string(), source.map(str::to_string), limit)).await
    }

    async fn claim_run(&self, project_id: &str, claim: Claim) -> StoreResult<Option<Run>> {
        let project_id = project_id.to_string();
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let candidates: Vec<Run> = {
                let mut stmt = tx.prepare(&format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE project_id = ?1 AND source = 'platform' \
                     AND (state = 'pending' OR (state = 'running' AND lease_expires <= ?2)) ORDER BY seq LIMIT 64"
                ))?;
                let rows = stmt.query_map(params![project_id, claim.now.secs], from_sqlite)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            let (exhausted, taken) = claim.decide(candidates);
            for run in exhausted.iter().chain(&taken) {
                write_run(&tx, run)?;
            }
            tx.commit()?;
            Ok(taken)
        })
        .await
    }

    async fn change_run(&self, project_id: &str, id: &str, change: RunChange, now: Now) -> StoreResult<Run> {
        let (project_id, id) = (project_id.to_string(), id.to_string());
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut run = get_run(&tx, &project_id, &id)?.ok_or_else(|| StoreError::missing("run", id))?;
            run.apply(&change, &now)?;
            write_run(&tx, &run)?;
            match &change {
                RunChange::Metrics { points } => {
                    let mut insert = tx.prepare("INSERT INTO run_metrics (run_id, body, created_at) VALUES (?1, ?2, ?3)")?;
                    for point in points {
                        insert.execute(params![run.id, gateway_world::json::canonical(point), now.iso])?;
                    }
                }
                RunChange::Rollout { name, session_id } => {
                    tx.execute(
                        "INSERT INTO run_rollouts (run_id, name, session_id, created_at) VALUES (?1, ?2, ?3, ?4)",
                        params![run.id, name, session_id, now.iso],
                    )?;
                }
                _ => {}
            }
            tx.commit()?;
            Ok(run)
        })
        .await
    }

    async fn put_build(&self, b: AgentBuild) -> StoreResult<(AgentBuild, bool)> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let inserted = insert(&tx, "agent_builds", &b, "ON CONFLICT (project_id, agent_id, build_hash) DO NOTHING")?;
            let stored = tx.query_row(
                &format!("SELECT {BUILD_COLUMNS} FROM agent_builds WHERE project_id = ?1 AND agent_id = ?2 AND build_hash = ?3"),
                [&b.project_id, &b.agent_id, &b.build_hash],
                from_sqlite,
            )?;
            tx.commit()?;
            Ok((stored, inserted == 1))
        })
        .await
    }

    async fn build(&self, project_id: &str, id_or_hash: &str) -> StoreResult<Option<AgentBuild>> {
        let sql = format!(
            "SELECT {BUILD_COLUMNS} FROM agent_builds WHERE project_id = ?1 AND (id = ?2 OR build_hash = ?2) \
             ORDER BY id = ?2 DESC, seq DESC LIMIT 1"
        );
        self.optional(sql, (project_id.to_string(), id_or_hash.to_string())).await
    }

    async fn builds_by_commit(&self, project_id: &str, prefix: &str, limit: i64) -> StoreResult<Vec<AgentBuild>> {
        let sql = format!(
            "SELECT {BUILD_COLUMNS} FROM agent_builds WHERE project_id = ?1 AND commit_sha >= ?2 \
             AND substr(commit_sha, 1, length(?2)) = ?2 ORDER BY seq DESC LIMIT ?3"
        );
        self.all(sql, (project_id.to_string(), prefix.to_string(), limit)).await
    }

    async fn builds_by_version(&self, project_id: &str, agent_id: &str, version: &str, limit: i64) -> StoreResult<Vec<AgentBuild>> {
        let sql = format!(
            "SELECT {BUILD_COLUMNS} FROM agent_builds WHERE project_id = ?1 AND agent_id = ?2 AND version = ?3 ORDER BY seq DESC LIMIT ?4"
        );
        self.all(sql, (project_id.to_string(), agent_id.to_string(), version.to_string(), limit)).await
    }

    async fn build_evaluations(&self, project_id: &str, keys: Vec<String>, limit: i64) -> StoreResult<Vec<BuildEvaluation>> {
        let project_id = project_id.to_string();
        self.with(move |c| {
            let mut out = Vec::new();
            // The evaluations through migration 0004's expression index (the same
            // expression here), then each one's samples summed through their index.
            let evaluations = {
                let marks: Vec<String> = (0..keys.len()).map(|i| format!("?{}", i + 3)).collect();
                let sql = format!(
                    "SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE project_id = ?1 \
                     AND json_extract(details, '$.agentBuildId') IN ({}) ORDER BY seq DESC LIMIT ?2",
                    marks.join(", ")
                );
                let mut stmt = c.prepare(&sql)?;
                let mut values: Vec<&dyn rusqlite::ToSql> = vec![&project_id, &limit];
                for key in &keys {
                    values.push(key);
                }
                let rows = stmt.query_map(values.as_slice(), from_sqlite::<Evaluation>)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            let mut sums_of = c.prepare(
                "SELECT COUNT(*), COUNT(*) - COUNT(reward), COALESCE(SUM(reward), 0.0), COALESCE(SUM(reward * reward), 0.0), \
                 COUNT(score), COALESCE(SUM(score), 0.0), COUNT(passed), COALESCE(SUM(passed), 0) \
                 FROM evaluation_samples WHERE evaluation_id = ?1",
            )?;
            let mut slug_of = c.prepare("SELECT slug FROM containers WHERE id = ?1")?;
            for evaluation in evaluations {
                let sums: SampleSums = sums_of.query_row([&evaluation.id], from_sqlite)?;
                let world: String = slug_of.query_row([&evaluation.container_id], |r| r.get(0)).optional()?.unwrap_or_default();
                out.push(BuildEvaluation { evaluation, world, sums });
            }
            Ok(out)
        })
        .await
    }
}

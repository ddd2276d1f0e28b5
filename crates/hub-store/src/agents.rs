//! The agents platform in storage (spec §8, §11): a project's sealed secrets, its
//! registered agents, datasets and their items, runs (platform runs and verify jobs a
//! worker claims, runs an SDK opens itself) with the lease their worker holds, metric
//! points and rollouts, agent builds, and the evaluations filed for a build (summed
//! per evaluation, for the release gate).
//!
//! Records and [`AgentStore`] (a supertrait of `MetaStore`, like `EvaluationStore`);
//! SQLite and PostgreSQL implement it in `sqlite/agents.rs` and `postgres/agents.rs`.
//! What a run may do next is decided here, once, for both: [`Run::apply`] and
//! [`Run::claimable`] are called by each back end on the row it holds locked. No HTTP
//! and no release rule here: those are the server's (gateway-hub's `server/agents.rs`,
//! `server/runs.rs`, `server/release.rs`).

use crate::error::{StoreError, StoreResult};
use crate::evaluations::{Evaluation, SampleSums};
use async_trait::async_trait;
use gateway_world::json::{self, Map, Value};

/// A queued run, not yet claimed (the SDK's `RunState` word for it).
pub const PENDING: &str = "pending";
/// A run a worker (or an SDK process) is working on.
pub const RUNNING: &str = "running";
/// The states a finish may set; a run in one of them changes no more.
pub const TERMINAL: [&str; 6] = ["completed", "failed", "cancelled", "crashed", "error", "timeout"];
/// `kind` of an optimisation run (listed by `run list`).
pub const KIND_RUN: &str = "run";
/// `kind` of a verify job (claimed like a run, never listed).
pub const KIND_VERIFY: &str = "verify";
/// `source` of the runs the hub queues for workers.
pub const SOURCE_PLATFORM: &str = "platform";
/// How many times a run is handed out before a lost lease fails it.
pub const MAX_ATTEMPTS: i64 = 3;

/// Whether `state` is terminal.
pub fn is_terminal(state: &str) -> bool {
    TERMINAL.contains(&state)
}

/// A project secret's public face: never its value.
#[derive(Debug, Clone, Default)]
pub struct ProjectSecret {
    /// Name (an environment variable name).
    pub name: String,
    /// `agent`, `worker` or `both`: whose environment it goes into.
    pub scope: String,
    /// What it is for.
    pub description: Option<String>,
    /// First set.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

/// A registered agent: an image and what its manifest declares.
#[derive(Debug, Clone, Default)]
pub struct Agent {
    /// Id (`agt_…`), kept across re-registrations.
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// Unique per project: a registration under a known name updates it.
    pub name: String,
    /// The image reference.
    pub image: String,
    /// The rest, a JSON object: `manifest`, `capabilities`, `resources`, `description`,
    /// `imageDigest`, `taskInputSchema`, `compatibleAlgorithms`.
    pub body: String,
    /// First registration.
    pub created_at: String,
    /// Last registration.
    pub updated_at: String,
    /// Higher is newer.
    pub seq: i64,
}

/// A dataset: named items a run's algorithm draws its tasks from.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    /// Id (`ds_…`), kept when the same name is imported again.
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// Unique per project.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Its items.
    pub item_count: i64,
    /// First import.
    pub created_at: String,
    /// Last import.
    pub updated_at: String,
    /// Higher is newer.
    pub seq: i64,
}

/// A run: a platform optimisation run or verify job (queued for workers), or a run an
/// SDK process reports on itself.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// Id (`run_…`).
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// `#` in `run list`: per project, kind `run` only.
    pub run_number: Option<i64>,
    /// [`KIND_RUN`] or [`KIND_VERIFY`].
    pub kind: String,
    /// [`SOURCE_PLATFORM`] (queued here) or what an SDK said (`sdk`, …).
    pub source: String,
    /// Display name.
    pub name: Option<String>,
    /// [`PENDING`], [`RUNNING`] or one of [`TERMINAL`].
    pub state: String,
    /// The algorithm (platform runs and verify jobs).
    pub algorithm_name: Option<String>,
    /// The registered agent's id.
    pub agent_id: Option<String>,
    /// The dataset's id.
    pub dataset_id: Option<String>,
    /// The algorithm's config, a JSON object.
    pub config: String,
    /// The queue job's id (what `run start` and `run verify` print).
    pub job_id: String,
    /// The worker holding the lease.
    pub worker_id: Option<String>,
    /// When the lease lapses (Unix seconds).
    pub lease_expires: Option<i64>,
    /// How many times it was handed to a worker.
    pub attempts: i64,
    /// The algorithm's last reported state (`/state` with an object), JSON.
    pub algo_state: Option<String>,
    /// What the finish reported (`result`, `error`), JSON.
    pub result: Option<String>,
    /// The latest value of each metric: `{name: {value, step}}`, JSON.
    pub metrics: String,
    /// Metric points stored.
    pub metric_points: i64,
    /// Rollouts recorded.
    pub rollouts: i64,
    /// Whatever else the creator sent (labels, tags, git, …), a JSON object.
    pub details: String,
    /// Creation time.
    pub created_at: String,
    /// First claim (or creation, for SDK runs).
    pub started_at: Option<String>,
    /// Last heartbeat.
    pub heartbeat_at: Option<String>,
    /// Finish time.
    pub finished_at: Option<String>,
    /// Higher is newer.
    pub seq: i64,
}

/// One change to a run, decided by [`Run::apply`] on the locked row.
#[derive(Debug, Clone)]
pub enum RunChange {
    /// Alive: extends the lease of a claimed run.
    Heartbeat {
        /// The worker reporting (checked against the lease holder when given).
        worker_id: Option<String>,
        /// The new lease length.
        lease_secs: i64,
    },
    /// `pending → running` (a worker starting, an SDK run's own report).
    Start {
        /// The worker reporting.
        worker_id: Option<String>,
    },
    /// The algorithm's state document (`PATCH …/state {state: {…}}`).
    AlgoState {
        /// The state, JSON text.
        state: String,
    },
    /// Metric points (`{name, value, step?, …}` objects) appended.
    Metrics {
        /// The points.
        points: Vec<Value>,
    },
    /// A rollout recorded.
    Rollout {
        /// Its display name.
        name: Option<String>,
        /// Its session id.
        session_id: String,
    },
    /// The run ends in a terminal state.
    Finish {
        /// The worker reporting.
        worker_id: Option<String>,
        /// One of [`TERMINAL`].
        state: String,
        /// What it produced (JSON), if anything.
        result: Option<String>,
    },
    /// A user cancels it.
    Cancel,
}

/// The clock of one change: Unix seconds and the same instant as ISO text.
#[derive(Debug, Clone)]
pub struct Now {
    /// Unix seconds.
    pub secs: i64,
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    pub iso: String,
}

impl Now {
    /// The current time.
    pub fn current() -> Now {
        Now { secs: crate::util::now_secs() as i64, iso: crate::util::now_iso() }
    }
}

/// What a claim does with a candidate run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimable {
    /// Hand it to the worker.
    Take,
    /// Its lease was lost too often: it fails instead.
    Exhausted,
    /// Not claimable now.
    No,
}

/// A worker's claim: who asks, for which kinds of run, for how long, and when.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The worker the run is handed to.
    pub worker_id: String,
    /// The kinds of run it takes (`run`, `verify`).
    pub kinds: Vec<String>,
    /// How long the lease lasts, in seconds.
    pub lease_secs: i64,
    /// The clock of the claim.
    pub now: Now,
}

impl Claim {
    /// The claim over `candidates` (oldest first): the runs it fails on the way (their
    /// lease lost too often), then the run it hands out, if any — each to be written back
    /// in that order.
    pub fn decide(&self, candidates: Vec<Run>) -> (Vec<Run>, Option<Run>) {
        let mut exhausted = Vec::new();
        for mut run in candidates.into_iter().filter(|r| self.kinds.contains(&r.kind)) {
            match run.claimable(self.now.secs) {
                Claimable::Take => {
                    run.take(&self.worker_id, self.lease_secs, &self.now);
                    return (exhausted, Some(run));
                }
                Claimable::Exhausted => {
                    run.exhaust(&self.now);
                    exhausted.push(run);
                }
                Claimable::No => {}
            }
        }
        (exhausted, None)
    }
}

impl Run {
    /// Whether a worker may claim this run now.
    pub fn claimable(&self, now: i64) -> Claimable {
        if self.source != SOURCE_PLATFORM {
            return Claimable::No;
        }
        let lost = self.state == RUNNING && self.lease_expires.is_some_and(|at| at <= now);
        if self.state != PENDING && !lost {
            return Claimable::No;
        }
        if lost && self.attempts >= MAX_ATTEMPTS {
            return Claimable::Exhausted;
        }
        Claimable::Take
    }

    /// Hand the run to `worker_id` for `lease_secs`.
    pub fn take(&mut self, worker_id: &str, lease_secs: i64, now: &Now) {
        self.state = RUNNING.into();
        self.worker_id = Some(worker_id.to_string());
        self.lease_expires = Some(now.secs + lease_secs);
        self.attempts += 1;
        self.started_at.get_or_insert_with(|| now.iso.clone());
        self.heartbeat_at = Some(now.iso.clone());
    }

    /// Fail a run whose lease was lost [`MAX_ATTEMPTS`] times.
    pub fn exhaust(&mut self, now: &Now) {
        let holder = self.worker_id.clone().unwrap_or_default();
        self.state = "failed".into();
        self.finished_at = Some(now.iso.clone());
        self.lease_expires = None;
        let reason =
            format!("the run was handed out {} times and every worker's lease lapsed without a heartbeat (last: {holder})", self.attempts);
        self.result = Some(json::canonical(&json::object([("error", Value::str(reason))])));
    }

    fn held_by_another(&self, worker_id: &Option<String>) -> Result<(), StoreError> {
        match (&self.worker_id, worker_id) {
            (Some(holder), Some(worker)) if holder != worker => Err(StoreError::Conflict(format!(
                "run {} is held by worker '{holder}', not '{worker}': this worker's lease lapsed and the run was claimed again; stop working on it",
                self.id
            ))),
            _ => Ok(()),
        }
    }

    fn ended(&self, what: &str) -> StoreError {
        StoreError::Conflict(format!("run {} is already {}: {what}", self.id, self.state))
    }

    /// Apply `change` (the row is locked by the caller), or refuse it.
    pub fn apply(&mut self, change: &RunChange, now: &Now) -> Result<(), StoreError> {
        match change {
            RunChange::Heartbeat { worker_id, lease_secs } => {
                if is_terminal(&self.state) {
                    return Ok(());
                }
                self.held_by_another(worker_id)?;
                self.heartbeat_at = Some(now.iso.clone());
                if self.worker_id.is_some() {
                    self.lease_expires = Some(now.secs + lease_secs);
                }
            }
            RunChange::Start { worker_id } => {
                if is_terminal(&self.state) {
                    return Err(self.ended("it cannot start again"));
                }
                self.held_by_another(worker_id)?;
                if self.source == SOURCE_PLATFORM && self.worker_id.is_none() {
                    return Err(StoreError::Conflict(format!(
                        "run {} is queued: a worker claims it first (POST /api/public/runs/claim)",
                        self.id
                    )));
                }
                self.state = RUNNING.into();
                self.started_at.get_or_insert_with(|| now.iso.clone());
                self.heartbeat_at = Some(now.iso.clone());
            }
            RunChange::AlgoState { state } => {
                if is_terminal(&self.state) {
                    return Err(self.ended("its state is final"));
                }
                self.algo_state = Some(state.clone());
            }
            RunChange::Metrics { points } => {
                let mut latest = json::parse_clean(&self.metrics).and_then(|v| v.as_object().cloned()).unwrap_or_default();
                for point in points {
                    let Some(name) = point.get("name").and_then(Value::as_str) else { continue };
                    let mut entry = Map::default();
                    entry.insert("value".into(), point.get("value").cloned().unwrap_or_default());
                    entry.insert("step".into(), point.get("step").cloned().unwrap_or_default());
                    latest.insert(name.to_string(), Value::Object(entry));
                }
                self.metrics = json::canonical(&Value::Object(latest));
                self.metric_points += points.len() as i64;
            }
            RunChange::Rollout { .. } => {
                self.rollouts += 1;
            }
            RunChange::Finish { worker_id, state, result } => {
                if is_terminal(&self.state) {
                    if &self.state == state {
                        return Ok(());
                    }
                    return Err(self.ended(&format!("it cannot finish again as {state}")));
                }
                self.held_by_another(worker_id)?;
                self.state = state.clone();
                self.finished_at = Some(now.iso.clone());
                self.lease_expires = None;
                if result.is_some() {
                    self.result = result.clone();
                }
            }
            RunChange::Cancel => {
                if self.state == "cancelled" {
                    return Ok(());
                }
                if is_terminal(&self.state) {
                    return Err(self.ended("only a queued or running run can be cancelled"));
                }
                self.state = "cancelled".into();
                self.finished_at = Some(now.iso.clone());
                self.lease_expires = None;
            }
        }
        Ok(())
    }
}

/// An agent build: one content-addressed identity of an agent (the SDK's
/// `POST /api/public/agent-builds`), what the release gate judges.
#[derive(Debug, Clone, Default)]
pub struct AgentBuild {
    /// Id (`bld_…`).
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// The agent's id as the SDK declares it (`tracing.init(agent=…)`).
    pub agent_id: String,
    /// The content hash (`sha256:…`): a build is unique per (agent, hash).
    pub build_hash: String,
    /// The declared version (`semanticVer`).
    pub version: Option<String>,
    /// The commit it was built from (`attribution.commitSha`).
    pub commit_sha: Option<String>,
    /// The registration as sent (manifest, attribution), a JSON object.
    pub body: String,
    /// First registration.
    pub created_at: String,
    /// Higher is newer.
    pub seq: i64,
}

/// An evaluation filed for a build, with its world's slug and its samples summed.
#[derive(Debug, Clone, Default)]
pub struct BuildEvaluation {
    /// The evaluation.
    pub evaluation: Evaluation,
    /// Its container's slug.
    pub world: String,
    /// Its samples, summed.
    pub sums: SampleSums,
}

/// Storage of the agents platform. Every write is one transaction.
#[async_trait]
pub trait AgentStore: Send + Sync {
    /// Create a secret; `false` (nothing written) when the name is taken.
    async fn create_project_secret(&self, project_id: &str, secret: ProjectSecret, sealed: Vec<u8>) -> StoreResult<bool>;
    /// Create or replace a secret's value and scope (and its description, when `Some`).
    /// Returns whether it was created.
    async fn put_project_secret(
        &self,
        project_id: &str,
        secret: ProjectSecret,
        keep_description: bool,
        sealed: Vec<u8>,
    ) -> StoreResult<bool>;
    /// A project's secrets by name (never their values).
    async fn project_secrets(&self, project_id: &str) -> StoreResult<Vec<ProjectSecret>>;
    /// A project's secrets with their sealed values (for a worker's claim only).
    async fn project_secret_values(&self, project_id: &str) -> StoreResult<Vec<(ProjectSecret, Vec<u8>)>>;
    /// Remove a secret; whether it existed.
    async fn delete_project_secret(&self, project_id: &str, name: &str) -> StoreResult<bool>;

    /// Register an agent: a known name keeps its id and creation time. Returns the stored
    /// agent and whether it is new.
    async fn upsert_agent(&self, agent: Agent) -> StoreResult<(Agent, bool)>;
    /// A project's agents by name.
    async fn agents(&self, project_id: &str) -> StoreResult<Vec<Agent>>;
    /// An agent by id, else by name.
    async fn agent(&self, project_id: &str, id_or_name: &str) -> StoreResult<Option<Agent>>;

    /// Import a dataset: a known name keeps its id and has its items replaced. Returns the
    /// stored dataset and whether it is new.
    async fn put_dataset(&self, dataset: Dataset, items: Vec<String>) -> StoreResult<(Dataset, bool)>;
    /// A project's datasets, oldest first.
    async fn datasets(&self, project_id: &str) -> StoreResult<Vec<Dataset>>;
    /// A dataset by id, else by name.
    async fn dataset(&self, project_id: &str, id_or_name: &str) -> StoreResult<Option<Dataset>>;
    /// A dataset's items (JSON texts) from `offset`, at most `limit`, in order.
    async fn dataset_items(&self, dataset_id: &str, offset: i64, limit: i64) -> StoreResult<Vec<(i64, String)>>;

    /// Store a new run; a `run` takes the project's next run number.
    async fn create_run(&self, run: Run) -> StoreResult<Run>;
    /// A run by id, else by job id.
    async fn run(&self, project_id: &str, id: &str) -> StoreResult<Option<Run>>;
    /// A project's runs of kind `run`, newest first (only `source` when given), at most `limit`.
    async fn runs(&self, project_id: &str, source: Option<&str>, limit: i64) -> StoreResult<Vec<Run>>;
    /// The oldest claimable run of one of the claim's kinds, handed to its worker
    /// ([`Claim::decide`]: runs whose lease was lost too often are failed on the way),
    /// atomically across processes: two workers never hold the same run.
    async fn claim_run(&self, project_id: &str, claim: Claim) -> StoreResult<Option<Run>>;
    /// Apply `change` to a run under its row lock ([`Run::apply`] decides); metric points
    /// and rollouts are stored with it. Returns the run after the change.
    async fn change_run(&self, project_id: &str, id: &str, change: RunChange, now: Now) -> StoreResult<Run>;

    /// Register a build: unique per (agent, hash); a known one is returned unchanged.
    /// Returns it and whether it is new.
    async fn put_build(&self, build: AgentBuild) -> StoreResult<(AgentBuild, bool)>;
    /// A build by id, else by hash (newest).
    async fn build(&self, project_id: &str, id_or_hash: &str) -> StoreResult<Option<AgentBuild>>;
    /// Builds whose commit starts with `prefix`, newest first, at most `limit`.
    async fn builds_by_commit(&self, project_id: &str, prefix: &str, limit: i64) -> StoreResult<Vec<AgentBuild>>;
    /// Builds of an agent with a declared version, newest first, at most `limit`.
    async fn builds_by_version(&self, project_id: &str, agent_id: &str, version: &str, limit: i64) -> StoreResult<Vec<AgentBuild>>;
    /// The evaluations whose `agentBuildId` is one of `keys`, newest first, at most
    /// `limit`, each with its world's slug and its samples summed.
    async fn build_evaluations(&self, project_id: &str, keys: Vec<String>, limit: i64) -> StoreResult<Vec<BuildEvaluation>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued() -> Run {
        Run { id: "run_1".into(), source: SOURCE_PLATFORM.into(), state: PENDING.into(), metrics: "{}".into(), ..Run::default() }
    }

    fn at(secs: i64) -> Now {
        Now { secs, iso: crate::util::iso(secs, 0) }
    }

    #[test]
    fn a_lease_is_taken_kept_lost_and_exhausted() {
        let mut run = queued();
        assert_eq!(run.claimable(100), Claimable::Take);
        run.take("w1", 30, &at(100));
        assert_eq!((run.state.as_str(), run.lease_expires, run.attempts), (RUNNING, Some(130), 1));
        assert_eq!(run.claimable(129), Claimable::No);
        run.apply(&RunChange::Heartbeat { worker_id: Some("w1".into()), lease_secs: 30 }, &at(120)).unwrap();
        assert_eq!(run.claimable(149), Claimable::No);
        assert_eq!(run.claimable(150), Claimable::Take);
        run.take("w2", 30, &at(150));
        // The first worker's lease is gone: its reports are refused.
        let stale = run.apply(&RunChange::Finish { worker_id: Some("w1".into()), state: "completed".into(), result: None }, &at(151));
        assert!(matches!(stale, Err(StoreError::Conflict(m)) if m.contains("held by worker 'w2'")));
        run.take("w3", 30, &at(181));
        assert_eq!(run.claimable(300), Claimable::Exhausted);
        run.exhaust(&at(300));
        assert_eq!(run.state, "failed");
        assert_eq!(run.claimable(400), Claimable::No);
    }

    #[test]
    fn a_claim_fails_the_exhausted_on_its_way_to_the_oldest_claimable() {
        let exhausted = Run {
            id: "run_0".into(),
            kind: KIND_RUN.into(),
            state: RUNNING.into(),
            lease_expires: Some(10),
            attempts: MAX_ATTEMPTS,
            ..queued()
        };
        let verify = Run { id: "run_v".into(), kind: KIND_VERIFY.into(), ..queued() };
        let held = Run { id: "run_h".into(), kind: KIND_RUN.into(), state: RUNNING.into(), lease_expires: Some(500), ..queued() };
        let first = Run { id: "run_1".into(), kind: KIND_RUN.into(), ..queued() };
        let second = Run { id: "run_2".into(), kind: KIND_RUN.into(), ..queued() };
        let claim = Claim { worker_id: "w".into(), kinds: vec![KIND_RUN.into()], lease_secs: 30, now: at(100) };
        let (failed, taken) = claim.decide(vec![exhausted, verify, held, first, second]);
        assert_eq!(failed.iter().map(|r| (r.id.as_str(), r.state.as_str())).collect::<Vec<_>>(), [("run_0", "failed")]);
        let taken = taken.unwrap();
        assert_eq!((taken.id.as_str(), taken.worker_id.as_deref(), taken.lease_expires), ("run_1", Some("w"), Some(130)));
        let none = Claim { kinds: vec![KIND_VERIFY.into()], now: at(600), ..claim }.decide(Vec::new());
        assert!(none.0.is_empty() && none.1.is_none());
    }

    #[test]
    fn finish_is_idempotent_and_final() {
        let mut run = queued();
        run.take("w", 60, &at(0));
        let finish = |state: &str| RunChange::Finish { worker_id: Some("w".into()), state: state.into(), result: None };
        run.apply(&finish("completed"), &at(5)).unwrap();
        run.apply(&finish("completed"), &at(6)).unwrap();
        assert!(run.apply(&finish("failed"), &at(7)).is_err());
        assert!(run.apply(&RunChange::Cancel, &at(8)).is_err());
        assert!(run.apply(&RunChange::AlgoState { state: "{}".into() }, &at(8)).is_err());
        assert_eq!(run.finished_at.as_deref(), Some(crate::util::iso(5, 0).as_str()));
    }

    #[test]
    fn metrics_keep_the_latest_point_per_name() {
        let mut run = queued();
        let point = |name: &str, value: f64, step: i64| {
            json::object([("name", Value::str(name)), ("value", Value::Float(value)), ("step", Value::Int(step))])
        };
        let points = vec![point("loss", 0.5, 1), point("loss", 0.25, 2), point("acc", 0.75, 2)];
        run.apply(&RunChange::Metrics { points }, &at(0)).unwrap();
        assert_eq!(run.metrics, r#"{"acc":{"step":2,"value":0.75},"loss":{"step":2,"value":0.25}}"#);
        assert_eq!(run.metric_points, 3);
    }

    #[test]
    fn a_queued_run_starts_only_once_claimed() {
        let mut run = queued();
        assert!(run.apply(&RunChange::Start { worker_id: None }, &at(0)).is_err());
        run.take("w", 60, &at(0));
        run.apply(&RunChange::Start { worker_id: Some("w".into()) }, &at(1)).unwrap();
        run.apply(&RunChange::Cancel, &at(2)).unwrap();
        assert_eq!(run.state, "cancelled");
        run.apply(&RunChange::Heartbeat { worker_id: Some("w".into()), lease_secs: 60 }, &at(3)).unwrap();
        assert_eq!(run.state, "cancelled");
    }
}

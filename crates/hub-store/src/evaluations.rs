//! Evaluations in storage: the records of spec §2 (an evaluation pinned to a READY
//! version, its scored samples) and [`EvaluationStore`], the storage calls the
//! evaluation routes and the §7 environment views need — the project's containers
//! and their version history, evaluations newest first, a rollout's samples, and the
//! per-(task, version) sums that performance is computed from.
//!
//! Evaluations and samples live in real tables (migrations 0003, indexed by
//! evaluation and by (container, task, version)); every view reads them through an
//! index, never by scanning documents. This module holds no HTTP and no arithmetic
//! beyond the sums: the means, rates and deviations are the server's
//! (gateway-hub's `server/environments.rs`). Task sets are not here: they are platform documents.

use crate::error::{StoreError, StoreResult};
use crate::store::records::{Container, Version};
use async_trait::async_trait;

/// An evaluation is open for samples until it is finalized.
pub const RUNNING: &str = "RUNNING";
/// The statuses a finalize may set.
pub const FINAL_STATUSES: [&str; 2] = ["COMPLETED", "FAILED"];

/// One run of a model against a pinned container version.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    /// Id (`eval_…`).
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// The version's container.
    pub container_id: String,
    /// The READY version it is pinned to.
    pub version_id: String,
    /// `model`, if given.
    pub model: Option<String>,
    /// `runId`, if given.
    pub run_id: Option<String>,
    /// `RUNNING`, then `COMPLETED` or `FAILED`.
    pub status: String,
    /// `numExamples`, if given.
    pub num_examples: Option<i64>,
    /// `rolloutsPerExample`, if given.
    pub rollouts_per_example: Option<i64>,
    /// The other members of the create request (`dispatchShard`, `conditionId`,
    /// `agentBuildId`, `appliedAgentVariation`, `environmentIds`, `metadata`), a JSON object.
    pub details: String,
    /// The finalize's `metrics` (JSON), if any.
    pub metrics: Option<String>,
    /// The finalize's `cost` (JSON), if any.
    pub cost: Option<String>,
    /// Samples stored so far.
    pub sample_count: i64,
    /// Creation time (the evaluation starts when it is created).
    pub created_at: String,
    /// Finalize time.
    pub completed_at: Option<String>,
    /// Higher is newer.
    pub seq: i64,
}

impl Evaluation {
    /// Samples and a finalize are taken only while the evaluation is RUNNING.
    pub fn ensure_running(&self) -> Result<(), StoreError> {
        if self.status == RUNNING {
            return Ok(());
        }
        Err(StoreError::Conflict(format!(
            "evaluation {} is already {}: samples and a finalize are taken only while it is RUNNING",
            self.id, self.status
        )))
    }
}

/// How an evaluation ends: what a finalize writes.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// One of [`FINAL_STATUSES`].
    pub status: String,
    /// `metrics` (JSON), if given.
    pub metrics: Option<String>,
    /// `cost` (JSON), if given.
    pub cost: Option<String>,
    /// When it was finalized.
    pub completed_at: String,
}

impl Outcome {
    /// Whether finalizing `evaluation` with this outcome changes it: not when it already
    /// ended with this status (a finalize repeated); a conflict when it ended otherwise.
    pub fn changes(&self, evaluation: &Evaluation) -> Result<bool, StoreError> {
        if evaluation.status == self.status {
            return Ok(false);
        }
        evaluation.ensure_running()?;
        Ok(true)
    }
}

/// One scored rollout of an evaluation.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Id (`smp_…`).
    pub id: String,
    /// Its evaluation.
    pub evaluation_id: String,
    /// The evaluation's container (copied, so performance reads one index).
    pub container_id: String,
    /// The evaluation's version (copied, likewise).
    pub version_id: String,
    /// What performance groups by: `task`, else `exampleId`, else `""`.
    pub task: String,
    /// `exampleId`, if given.
    pub example_id: Option<String>,
    /// `rolloutIndex` (0 when not given).
    pub rollout_index: i64,
    /// `reward`; `None` is a null score, its own category.
    pub reward: Option<f64>,
    /// `score`.
    pub score: Option<f64>,
    /// `correct`.
    pub correct: Option<bool>,
    /// Whether it passed: `correct` when given, else `reward >= 1.0` when a reward is
    /// given (the SDK's own rule for `correct`), else unknown.
    pub passed: Option<bool>,
    /// The sample as it was sent (a JSON object, member order kept).
    pub body: String,
    /// When it was stored.
    pub created_at: String,
}

/// Sums over a set of samples: everything performance needs, additive across groups.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SampleSums {
    /// Samples.
    pub samples: i64,
    /// Samples with a null reward.
    pub null_rewards: i64,
    /// Sum of the non-null rewards.
    pub reward_sum: f64,
    /// Sum of their squares.
    pub reward_squares: f64,
    /// Samples with a non-null score.
    pub scores: i64,
    /// Sum of the non-null scores.
    pub score_sum: f64,
    /// Samples whose pass/fail is known.
    pub judged: i64,
    /// Samples that passed.
    pub passed: i64,
}

impl SampleSums {
    /// Samples with a reward.
    pub fn rewards(&self) -> i64 {
        self.samples - self.null_rewards
    }

    /// Both groups together.
    pub fn add(&mut self, other: &SampleSums) {
        self.samples += other.samples;
        self.null_rewards += other.null_rewards;
        self.reward_sum += other.reward_sum;
        self.reward_squares += other.reward_squares;
        self.scores += other.scores;
        self.score_sum += other.score_sum;
        self.judged += other.judged;
        self.passed += other.passed;
    }
}

/// The sums of one task's samples on one version.
#[derive(Debug, Clone, Default)]
pub struct TaskVersionSums {
    /// The task (see [`Sample::task`]).
    pub task: String,
    /// The version.
    pub version_id: String,
    /// The sums.
    pub sums: SampleSums,
}

/// Storage of evaluations and the reads behind the environment views. Every write is
/// one transaction; a batch of samples is stored whole or not at all.
#[async_trait]
pub trait EvaluationStore: Send + Sync {
    /// A project's containers by slug (only `slug` when given), at most `limit`.
    async fn project_containers(&self, project_id: &str, slug: Option<&str>, limit: i64) -> StoreResult<Vec<Container>>;
    /// A container's versions in every state, newest first, at most `limit`.
    async fn container_versions(&self, container_id: &str, limit: i64) -> StoreResult<Vec<Version>>;
    /// How many READY versions a container has.
    async fn ready_version_count(&self, container_id: &str) -> StoreResult<i64>;

    /// Store a new evaluation.
    async fn create_evaluation(&self, new: Evaluation) -> StoreResult<()>;
    /// An evaluation by id.
    async fn evaluation(&self, id: &str) -> StoreResult<Option<Evaluation>>;
    /// Store a batch of samples of a RUNNING evaluation, all or none; the evaluation's
    /// sample count moves with them. [`crate::StoreError::Conflict`] once it is finalized.
    async fn add_samples(&self, evaluation_id: &str, samples: Vec<Sample>) -> StoreResult<i64>;
    /// Finalize a RUNNING evaluation with `status` (`metrics` and `cost` as JSON). A
    /// second finalize with the same status answers the stored evaluation unchanged;
    /// with another status it is a [`crate::StoreError::Conflict`].
    async fn finalize_evaluation(&self, id: &str, outcome: Outcome) -> StoreResult<Evaluation>;
    /// A container's evaluations, newest first, at most `limit`.
    async fn evaluations(&self, container_id: &str, limit: i64) -> StoreResult<Vec<Evaluation>>;
    /// How many evaluations a container has.
    async fn evaluation_count(&self, container_id: &str) -> StoreResult<i64>;
    /// An evaluation's samples in the order they were stored, at most `limit`.
    async fn samples(&self, evaluation_id: &str, limit: i64) -> StoreResult<Vec<Sample>>;
    /// A container's samples summed per (task, version).
    async fn task_sums(&self, container_id: &str) -> StoreResult<Vec<TaskVersionSums>>;

    // The web pages' paged reads (one indexed query a page, never a query per row).

    /// A container's evaluations with `seq < before` (all when None), newest first, at
    /// most `limit`.
    async fn evaluations_before(&self, container_id: &str, before: Option<i64>, limit: i64) -> StoreResult<Vec<Evaluation>>;
    /// An evaluation's samples with `seq > after` in the order stored, at most `limit`,
    /// each with its `seq` (the next page's cursor).
    async fn samples_after(&self, evaluation_id: &str, after: i64, limit: i64) -> StoreResult<Vec<(i64, Sample)>>;
    /// One sample by id.
    async fn sample(&self, id: &str) -> StoreResult<Option<Sample>>;
}

//! The runner's error type: what stops a run before or outside its rollouts. A
//! rollout's own failures (an agent that raised, a grader that refused) are not
//! errors here: they are recorded on the rollout and the run goes on.

use gateway_host::HostError;
use gateway_hub_client::ClientError;

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The world cannot be loaded or has no such task (the original's `WorldError`).
    #[error("{0}")]
    World(String),
    /// The agent cannot be resolved or started.
    #[error("{0}")]
    Agent(String),
    /// The run's own configuration is incomplete (a model runner with no model, …).
    #[error("{0}")]
    Config(String),
    /// A harvest or scoring found nothing to file or failed (the original's `EvalHarvestError`).
    #[error("{0}")]
    Harvest(String),
    /// A tool the run needs (harbor, Docker, a Python package) is not installed.
    #[error("{0}")]
    Missing(String),
    /// The World Host refused.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The hub (pull, push, resolve, filing) failed.
    #[error(transparent)]
    Hub(#[from] ClientError),
    /// The hub's session and task routes refused (a stored task not found, …).
    #[error(transparent)]
    Sessions(#[from] gateway_hub_client::sessions_client::SessionError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl RunnerError {
    /// An I/O error at a path.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> RunnerError {
        RunnerError::Io { path: path.display().to_string(), source }
    }
}

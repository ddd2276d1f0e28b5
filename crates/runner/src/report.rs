//! What a run or bench command hands the CLI: the result it prints, the gate it
//! ends on and the rollouts that measured nothing. Shared by [`crate::flows`] (which
//! re-exports it) and [`crate::bench`].

use crate::gate::Gate;
use gateway_world::json::Value;

/// What a command prints and gates on.
#[derive(Debug, Clone)]
pub struct Report {
    /// The result, printed as indented JSON.
    pub result: Value,
    /// The gate (bar, title, facts).
    pub gate: Gate,
    /// Rollouts that measured nothing of the agent (see `Rollout::errored`), and the
    /// first one's reason: the command fails on them unless told to allow them.
    pub errored: (usize, Option<String>),
}

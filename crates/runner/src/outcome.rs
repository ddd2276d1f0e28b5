//! What an agent's turn on a session gave back: the type every kind of agent
//! ([`crate::bridge`], [`crate::command`], [`crate::model`], the oracle) answers with,
//! kept apart from [`crate::agent`] so that those modules name it without naming the
//! dispatcher that calls them (the agent module re-exports it).

use gateway_world::json::Value;

/// What an agent's turn on a session gave back.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The agent's final answer (a callable's return value as `str()`, a model's
    /// last message, a command's stdout).
    pub completion: Option<String>,
    /// Why the agent failed, when it did (it raised, exited non-zero, ran out of time).
    pub error: Option<String>,
    /// The agent's own call log, when it keeps one (a Python agent's `world.call_log`).
    pub call_log: Option<Vec<Value>>,
    /// How many calls it made by its own count (the Python `World`'s).
    pub calls: Option<usize>,
    /// What else belongs in its transcript (a model's messages and usage).
    pub transcript: Option<Value>,
    /// Whether `error` is the harness's, not the agent's: the agent could not be run
    /// (its command did not start or exited non-zero, the Python bridge broke, its model
    /// endpoint could not be reached or kept failing). Such a rollout measured nothing of
    /// the agent: it is errored, not scored. An agent that raised, ran out of turns or of
    /// time, or whose reference solution failed, failed on its own: it is graded.
    pub harness: bool,
}

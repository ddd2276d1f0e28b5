//! The agents a run can use, and what acting on one session gives back.
//!
//! - [`Agent::Python`]: a callable `file.py[:fn]` / `module:fn` given a `World`
//!   object, in a Python subprocess speaking JSON lines with us ([`crate::bridge`]);
//! - [`Agent::Command`]: any program, given the session's endpoints in its
//!   environment ([`crate::command`]);
//! - [`Agent::Model`]: the built-in OpenAI-compatible tool-calling loop ([`crate::model`]);
//! - [`Agent::Oracle`]: each task's reference solution (`metadata.solution`) replayed.
//!
//! It does not grade or summarize: [`crate::run`] does, after the agent acted.

use crate::model::ModelConfig;
pub use crate::outcome::Outcome;
use crate::world::Session;
use std::time::Duration;

/// Who acts on a session.
#[derive(Debug, Clone)]
pub enum Agent {
    /// Replay the task's reference solution.
    Oracle,
    /// The built-in model runner.
    Model(ModelConfig),
    /// A Python callable (`file.py[:fn]` or `module:fn`).
    Python(String),
    /// A shell command run with the session in its environment.
    Command(String),
}

/// The `--agent` names that are not Python callables.
pub const ORACLE: &str = "oracle";
/// The built-in model runner's `--agent` name.
pub const BUILTIN: &str = "builtin";
/// The original's default harbor agent: an LLM tool loop, which the built-in runner stands in for.
pub const HARBOR_DEFAULT: &str = "mini-swe-agent";

/// What `--agent SPEC` names: `oracle`, `builtin` (or `mini-swe-agent`), else a
/// Python callable. None for the model runner, whose configuration the caller
/// resolves.
pub fn kind(spec: &str) -> Option<Agent> {
    match spec {
        ORACLE => Some(Agent::Oracle),
        BUILTIN | HARBOR_DEFAULT => None,
        other => Some(Agent::Python(other.to_string())),
    }
}

impl Agent {
    /// How the agent is named in summaries and filed runs.
    pub fn label(&self) -> String {
        match self {
            Agent::Oracle => ORACLE.into(),
            Agent::Model(_) => BUILTIN.into(),
            Agent::Python(spec) => spec.clone(),
            Agent::Command(command) => format!("cmd:{command}"),
        }
    }

    /// Act on `session` within `budget`.
    pub fn act(&self, session: &Session<'_>, budget: Duration) -> Outcome {
        match self {
            Agent::Oracle => oracle(session),
            Agent::Model(config) => crate::model::act(config, session, budget),
            Agent::Python(spec) => crate::bridge::act(spec, session, budget),
            Agent::Command(command) => crate::command::act(command, session, budget),
        }
    }
}

fn oracle(session: &Session<'_>) -> Outcome {
    let Some(calls) = session.task.spec().and_then(|spec| spec.solution()) else {
        return Outcome {
            error: Some(format!("task '{}' has no reference solution (metadata.solution) to replay", session.task.name)),
            ..Outcome::default()
        };
    };
    let problems = gateway_host::selftest::replay(calls, |tool, args| session.call(tool, args));
    Outcome { error: (!problems.is_empty()).then(|| problems.join("; ")), ..Outcome::default() }
}

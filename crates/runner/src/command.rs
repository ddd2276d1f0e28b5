//! `--agent-cmd 'CMD'`: an agent in any language, run as `sh -c CMD` once per
//! rollout with the session in its environment (beyond the original):
//!
//! | variable | what it holds |
//! | --- | --- |
//! | `GATEWAY_WORLD_API_URL` | the session's data plane root (`http://127.0.0.1:PORT/s/<session>`) |
//! | `GATEWAY_WORLD_API_BASE` | the same plus the vendor's base path (`…/s/<session>/api/v2`) |
//! | `GATEWAY_WORLD_TOKEN` | the bearer token the data plane and MCP endpoint take |
//! | `GATEWAY_WORLD_MCP_URL` | the session's MCP endpoint (streamable HTTP) |
//! | `GATEWAY_WORLD_INSTRUCTION` | the task's instruction |
//! | `GATEWAY_WORLD_TASK` | the task's name |
//! | `GATEWAY_WORLD_ROLLOUT` | the rollout's index, from 0 |
//! | `GATEWAY_WORLD_SESSION` | the session id |
//! | `GATEWAY_WORLD_TOOLS` | a JSON file: the task's tools (`[{name, signature, doc, inputSchema}]`) |
//!
//! Its stdout (up to 20,000 characters) is the rollout's completion; its stderr
//! passes through; a non-zero exit is the agent's error. It does not grade.

use crate::outcome::Outcome;
use crate::process::{over_budget, spawn_watched};
use crate::world::Session;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The session's data plane root.
pub const API_URL: &str = "GATEWAY_WORLD_API_URL";
/// The data plane root plus the vendor's base path.
pub const API_BASE: &str = "GATEWAY_WORLD_API_BASE";
/// The bearer token.
pub const TOKEN: &str = "GATEWAY_WORLD_TOKEN";
/// The MCP endpoint.
pub const MCP_URL: &str = "GATEWAY_WORLD_MCP_URL";
/// The task's instruction.
pub const INSTRUCTION: &str = "GATEWAY_WORLD_INSTRUCTION";
/// The task's name.
pub const TASK: &str = "GATEWAY_WORLD_TASK";
/// The rollout index.
pub const ROLLOUT: &str = "GATEWAY_WORLD_ROLLOUT";
/// The session id.
pub const SESSION: &str = "GATEWAY_WORLD_SESSION";
/// The tools file.
pub const TOOLS: &str = "GATEWAY_WORLD_TOOLS";

/// Most of a command's stdout kept as its completion, in characters.
pub const COMPLETION_CHARS: usize = 20_000;

/// The command could not be run: the harness's failure (see [`Outcome::harness`]).
fn failed(error: String) -> Outcome {
    Outcome { error: Some(error), harness: true, ..Outcome::default() }
}

/// Run `command` on `session` within `budget`.
pub fn act(command: &str, session: &Session<'_>, budget: Duration) -> Outcome {
    let api = match session.api_url() {
        Ok(api) => api,
        Err(error) => return failed(error.to_string()),
    };
    let tools = session.world.scratch().join(format!("{}.tools.json", session.id));
    let text = gateway_world::json::dumps(&session.tools(), gateway_world::json::DumpOptions::PRETTY);
    if let Err(error) = std::fs::write(&tools, text) {
        return failed(format!("{}: {error}", tools.display()));
    }
    let mut agent = Command::new("sh");
    agent
        .args(["-c", command])
        .env(API_URL, &api)
        .env(API_BASE, format!("{api}{}", session.base_path()))
        .env(TOKEN, &session.token)
        .env(MCP_URL, format!("{api}/mcp"))
        .env(INSTRUCTION, &session.task.instruction)
        .env(TASK, &session.task.name)
        .env(ROLLOUT, session.rollout.to_string())
        .env(SESSION, &session.id)
        .env(TOOLS, &tools)
        .stdin(Stdio::null());
    let (mut child, watchdog) = match spawn_watched(&mut agent, budget) {
        Ok(spawned) => spawned,
        Err(error) => return failed(format!("the agent command could not start: {error}")),
    };
    let mut stdout = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_end(&mut stdout);
    }
    let status = child.wait();
    let fired = watchdog.fired();
    drop(watchdog);
    let _ = std::fs::remove_file(&tools);
    let said: String = String::from_utf8_lossy(&stdout).trim().chars().take(COMPLETION_CHARS).collect();
    // Out of time is the agent's failure; a command that exits non-zero did not run to
    // an answer (a missing key, a crash, `exit 3`): the harness's.
    let (error, harness) = match status {
        _ if fired => (Some(over_budget(budget)), false),
        Ok(status) if status.success() => (None, false),
        Ok(status) => (Some(format!("the agent command failed ({status})")), true),
        Err(error) => (Some(format!("the agent command could not be waited for: {error}")), true),
    };
    Outcome { completion: (!said.is_empty()).then_some(said), error, harness, ..Outcome::default() }
}

//! The Python agent bridge: `--agent file.py[:fn]|module:fn` runs in a `python3`
//! subprocess (bridge.py, compiled in) that builds the original's `World` object
//! and calls the agent with it; the agent's tool calls come back to us as JSON
//! lines and are answered by the rollout's session. One process per rollout.
//!
//! It is not the world and keeps no state of it: the session does. Grading after
//! the agent is [`crate::run`]'s.

use crate::error::RunnerError;
use crate::outcome::Outcome;
use crate::process::{over_budget, spawn_watched, PYTHON};
use crate::world::Session;
use gateway_world::json::{self, object, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The bridge's source.
pub const BRIDGE: &str = include_str!("bridge.py");

fn line(value: &Value) -> String {
    let mut text = json::dumps(value, json::DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false });
    text.push('\n');
    text
}

/// Resolve the agent callable the way the original does, before any world is
/// loaded: the original's refusal (file not found, import error, not callable) is
/// the error.
pub fn check(spec: &str) -> Result<(), RunnerError> {
    let out = Command::new(PYTHON)
        .args(["-c", BRIDGE, "check", spec])
        .stdin(Stdio::null())
        // What the module prints as it loads is not the command's output.
        .stdout(Stdio::from(std::io::stderr()))
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| RunnerError::Agent(format!("{PYTHON} could not start: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    Err(RunnerError::Agent(if said.is_empty() { format!("could not load the agent '{spec}' ({})", out.status) } else { said }))
}

/// What the `World` object is built from.
fn world_info(session: &Session<'_>) -> Value {
    let world = session.world;
    let source = &world.source;
    let text = |v: &Option<String>| v.clone().map(Value::Str).unwrap_or_default();
    // The task's directory as the user knows it (in the world they pointed at, not our copy).
    let task_dir = session.task.dir().map(|dir| match dir.strip_prefix(&world.version.bundle) {
        Ok(rel) => source.dir.join(rel),
        Err(_) => dir.to_path_buf(),
    });
    object([
        ("slug", text(&source.slug)),
        ("branch", text(&source.branch)),
        ("versionId", text(&source.version_id)),
        ("variant", Value::str(&session.task.name)),
        ("fileBlock", text(&source.file_block)),
        ("bundleDir", Value::Str(source.dir.display().to_string())),
        ("taskDir", task_dir.map(|d| Value::Str(d.display().to_string())).unwrap_or_default()),
        ("task", Value::str(&session.task.name)),
        ("instruction", Value::str(&session.task.instruction)),
        ("sessionId", Value::str(&session.id)),
        ("tools", session.tools()),
    ])
}

fn answer(result: Result<Value, String>) -> Value {
    match result {
        Ok(result) => object([("ok", Value::Bool(true)), ("result", result)]),
        Err(error) => object([("ok", Value::Bool(false)), ("error", Value::Str(error))]),
    }
}

/// Run the Python agent `spec` on `session`, within `budget`.
pub fn act(spec: &str, session: &Session<'_>, budget: Duration) -> Outcome {
    let (mut child, watchdog) = match spawn_watched(Command::new(PYTHON).args(["-u", "-c", BRIDGE, "run"]).stdin(Stdio::piped()), budget) {
        Ok(spawned) => spawned,
        Err(error) => return Outcome { error: Some(format!("{PYTHON} could not start: {error}")), harness: true, ..Outcome::default() },
    };
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        return Outcome { error: Some("the Python bridge has no pipes".into()), harness: true, ..Outcome::default() };
    };
    let start = object([("agent", Value::str(spec)), ("world", world_info(session))]);
    let mut outcome: Option<Outcome> = None;
    if input.write_all(line(&start).as_bytes()).and_then(|()| input.flush()).is_ok() {
        for text in BufReader::new(output).lines() {
            let Ok(text) = text else { break };
            let Ok(message) = json::parse_loads(&text).map(|p| p.value) else {
                outcome = Some(Outcome {
                    error: Some(format!("the Python bridge said something that is not JSON: {text}")),
                    harness: true,
                    ..Outcome::default()
                });
                break;
            };
            let op = message.get("op").and_then(Value::as_str).unwrap_or_default();
            let reply = match op {
                "call" => {
                    let tool = message.get("tool").and_then(Value::as_str).unwrap_or_default();
                    let args = message.get("args").cloned().unwrap_or_else(|| Value::Object(Default::default()));
                    answer(session.call(tool, &args).map_err(|e| e.to_string()))
                }
                "grade" => answer(session.grade()),
                "refused" => {
                    let said = message.get("message").and_then(Value::as_str).unwrap_or("the agent could not be loaded");
                    outcome = Some(Outcome { error: Some(said.to_string()), ..Outcome::default() });
                    break;
                }
                "done" => {
                    let text = |key: &str| message.get(key).and_then(Value::as_str).map(str::to_string);
                    outcome = Some(Outcome {
                        completion: text("completion"),
                        error: text("agentError"),
                        call_log: message.get("callLog").and_then(Value::as_array).cloned(),
                        calls: message.get("calls").and_then(Value::as_f64).map(|n| n as usize),
                        transcript: None,
                        harness: false,
                    });
                    break;
                }
                other => answer(Err(format!("unknown op '{other}'"))),
            };
            if input.write_all(line(&reply).as_bytes()).and_then(|()| input.flush()).is_err() {
                break;
            }
        }
    }
    drop(input);
    let status = child.wait();
    let fired = watchdog.fired();
    drop(watchdog);
    match outcome {
        Some(outcome) => outcome,
        None if fired => Outcome { error: Some(over_budget(budget)), ..Outcome::default() },
        None => {
            let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
            Outcome {
                error: Some(format!("the Python agent bridge stopped ({status}) before the agent finished")),
                harness: true,
                ..Outcome::default()
            }
        }
    }
}

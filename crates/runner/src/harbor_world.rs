//! Harbor task trees run as the original's `worlds run` runs them: in-process in
//! Python, no Docker and no World Host. `tasks/<task>/task.toml` (`[metadata]
//! variant`) + `instruction.md`, and `environment/` with `schema.sql` + `seed.sql`
//! (a fresh SQLite file per run), `tools/*.py` exposing `TOOLS` (and `DB_ENV_VAR`)
//! and `grade.py` writing `reward.json` into `$GRADE_OUT`.
//!
//! harbor_world.py (compiled in) picks the task, materializes the database, loads
//! the tools, builds the original's `World`, calls the agent and grades; it tells
//! us over JSON lines when the world is loaded (so a filing note comes before the
//! agent runs, as the original's) and what came of it. This module turns that into
//! a [`Rollout`] that [`crate::filing`] files like any other.
//!
//! It does not start harbor itself (that is [`crate::harbor`]) and runs Python
//! callables only, the one kind of agent the original's `worlds run` takes.

use crate::bridge::BRIDGE;
use crate::error::RunnerError;
use crate::process::{over_budget, spawn_watched, PYTHON};
use crate::run::Rollout;
use crate::world::WorldSource;
use gateway_world::json::{self, object, Map, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The script's source.
pub const SCRIPT: &str = include_str!("harbor_world.py");

/// Whether `dir` is a Harbor task tree the original's `worlds run` takes:
/// no schema/api world, and `tasks/*/task.toml`.
pub fn is_harbor_tree(dir: &Path) -> bool {
    matches!(gateway_world::data::world_kind(dir), Ok("harbor"))
        && std::fs::read_dir(dir.join("tasks")).is_ok_and(|d| d.flatten().any(|e| e.path().join("task.toml").is_file()))
}

fn line(value: &Value) -> String {
    let mut text = json::dumps(value, json::DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false });
    text.push('\n');
    text
}

fn text(value: &Option<String>) -> Value {
    value.clone().map(Value::Str).unwrap_or_default()
}

/// Run the Python agent `spec` on `variant` of the Harbor world `source` within
/// `budget`; `note` hears a line meant for stderr before the agent acts (the
/// filing note, when `file` and the source cannot be filed). The rollout's `task`
/// is the task's directory name, its `variant` the one it is filed under
/// (`--variant`, else the task's own, else its directory).
pub fn run(
    source: &WorldSource,
    variant: Option<&str>,
    spec: &str,
    budget: Duration,
    file: bool,
    note: &mut dyn FnMut(&str),
) -> Result<Rollout, RunnerError> {
    let started = Instant::now();
    let (mut child, watchdog) = spawn_watched(Command::new(PYTHON).args(["-u", "-c", SCRIPT, "run", BRIDGE]).stdin(Stdio::piped()), budget)
        .map_err(|e| RunnerError::Agent(format!("{PYTHON} could not start: {e}")))?;
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(RunnerError::Agent("the Python world has no pipes".into()));
    };
    let start = object([
        ("agent", Value::str(spec)),
        ("variant", variant.map(Value::str).unwrap_or_default()),
        (
            "world",
            object([
                ("slug", text(&source.slug)),
                ("branch", text(&source.branch)),
                ("versionId", text(&source.version_id)),
                ("fileBlock", text(&source.file_block)),
                ("bundleDir", Value::Str(source.dir.display().to_string())),
            ]),
        ),
    ]);
    let mut loaded: Option<Value> = None;
    let mut done: Option<Value> = None;
    let mut refused: Option<String> = None;
    if input.write_all(line(&start).as_bytes()).and_then(|()| input.flush()).is_ok() {
        for said in BufReader::new(output).lines() {
            let Ok(said) = said else { break };
            let Ok(message) = json::parse_loads(&said).map(|p| p.value) else {
                refused = Some(format!("the Python world said something that is not JSON: {said}"));
                break;
            };
            match message.get("op").and_then(Value::as_str) {
                Some("loaded") => {
                    if let Some(block) = source.file_block.as_deref().filter(|_| file) {
                        note(&format!("note: running unfiled — {block}"));
                    }
                    loaded = Some(message);
                    if input.write_all(b"{\"ok\": true}\n").and_then(|()| input.flush()).is_err() {
                        break;
                    }
                }
                Some("refused") => {
                    refused = Some(message.get("message").and_then(Value::as_str).unwrap_or("the world could not be loaded").to_string());
                    break;
                }
                Some("done") => {
                    done = Some(message);
                    break;
                }
                _ => {}
            }
        }
    }
    drop(input);
    let status = child.wait();
    let fired = watchdog.fired();
    drop(watchdog);
    if let Some(message) = refused {
        return Err(RunnerError::World(message));
    }
    let (Some(loaded), Some(done)) = (loaded, done) else {
        if fired {
            return Err(RunnerError::Agent(over_budget(budget)));
        }
        let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        return Err(RunnerError::Agent(format!("the Python world stopped ({status}) before the run finished")));
    };
    let field = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let grade = done.get("grade").cloned().unwrap_or_default();
    // The original's sub-rewards: every member of reward.json but `reward`.
    let mut rewards = Map::default();
    for (key, value) in grade.as_object().into_iter().flatten() {
        if key != "reward" {
            rewards.insert(key.clone(), value.clone());
        }
    }
    let task = field(&loaded, "task").unwrap_or_default();
    let variant = field(&loaded, "variant").unwrap_or_else(|| task.clone());
    let reward = grade.get("reward").and_then(Value::as_f64);
    let duration = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    let mut rollout = Rollout {
        task: task.clone(),
        variant: variant.clone(),
        index: 0,
        instruction: field(&loaded, "instruction").unwrap_or_default(),
        reward,
        rewards,
        grade: grade.clone(),
        grade_error: field(&done, "gradeError"),
        agent_error: field(&done, "agentError"),
        errored: None,
        completion: field(&done, "completion"),
        call_log: done.get("callLog").and_then(Value::as_array).cloned().unwrap_or_default(),
        calls: done.get("calls").and_then(Value::as_f64).unwrap_or(0.0) as usize,
        messages: Vec::new(),
        pass_bar: 1.0,
        duration,
        // A Harbor task tree keeps its own SQLite file: no session database to keep.
        final_state: None,
        transcript: object([
            ("task", Value::Str(task)),
            ("variant", Value::Str(variant.clone())),
            ("agent", Value::str(spec)),
            ("grade", grade),
            ("callLog", done.get("callLog").cloned().unwrap_or_default()),
        ]),
    };
    crate::run::mark_errored(&mut rollout);
    Ok(rollout)
}

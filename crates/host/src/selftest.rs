//! A task's self-test, beyond the original: open the task on the world, grade the
//! untouched world (a no-op agent must score below the pass bar), and when the
//! spec carries a reference solution (`metadata.solution`: a list of
//! `{tool, args}` calls) replay it and grade again (it must reach the bar).
//! A task that a no-op passes, or that its own solution cannot pass, is a bad task.

use crate::error::HostError;
use crate::host::{OpenRequest, WorldHost};
use gateway_world::json::{object, Value};
use gateway_world::task::TaskSpec;
use std::sync::Arc;

/// The pass bar when the task's metadata names none (`metadata.passBar`).
pub const DEFAULT_PASS_BAR: f64 = 0.7;

/// Run the self-test of `spec` on version `version_id` (fetched from `bundle_url`)
/// in a throwaway session of `host`: `{passBar, noop, solution, ok, problems}`.
pub fn self_test(host: &WorldHost, version_id: &str, bundle_url: &str, spec: &Arc<TaskSpec>) -> Result<Value, HostError> {
    let session_id = format!("selftest-{}", gateway_serve::app::uuid4().replace('-', ""));
    host.open(OpenRequest {
        session_id: session_id.clone(),
        version_id: version_id.to_string(),
        bundle_url: bundle_url.to_string(),
        task_spec: Some(spec.clone()),
        ..OpenRequest::default()
    })?;
    let result = run(host, &session_id, spec);
    host.close(&session_id);
    result
}

/// A number as Python prints it (`1.0`, not `1`).
fn shown(number: f64) -> String {
    gateway_world::json::canonical(&Value::Float(number))
}

fn reward(grade: &Value) -> Option<f64> {
    grade.get("reward").and_then(Value::as_f64)
}

/// A task's pass bar: `metadata.passBar`, else [`DEFAULT_PASS_BAR`].
pub fn pass_bar(spec: &TaskSpec) -> f64 {
    spec.pass_bar().unwrap_or(DEFAULT_PASS_BAR)
}

/// Replay solution `calls` (`{tool, args}` each) through `call`, in order: the
/// problems met (a refused call, an answer of status 400 or more), none when
/// every call went through. The self-test and the runner's oracle agent share it.
pub fn replay(calls: &[Value], mut call: impl FnMut(&str, &Value) -> Result<Value, HostError>) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, step) in calls.iter().enumerate() {
        let tool = step.get("tool").and_then(Value::as_str).unwrap_or_default();
        let args = step.get("args").cloned().unwrap_or(Value::Object(Default::default()));
        match call(tool, &args) {
            Ok(answer) if answer.get("status").and_then(Value::as_f64).is_some_and(|s| s >= 400.0) => {
                problems.push(format!("solution call {i} ({tool}) answered {}", gateway_world::json::canonical(&answer)));
            }
            Ok(_) => {}
            Err(error) => problems.push(format!("solution call {i} ({tool}) was refused: {error}")),
        }
    }
    problems
}

fn run(host: &WorldHost, session_id: &str, spec: &TaskSpec) -> Result<Value, HostError> {
    let bar = pass_bar(spec);
    let mut problems = Vec::new();
    // A task without a grader, or graded by a rubric, has no number to test here.
    let noop = host.grade(session_id)?;
    if let Some(r) = reward(&noop).filter(|r| *r >= bar) {
        problems.push(format!("an agent that does nothing scores {}, at or above the pass bar {}", shown(r), shown(bar)));
    }
    let solution = match spec.solution() {
        None => Value::Null,
        Some(calls) => {
            let version = host.using(session_id, false)?.version().clone();
            // Solution args are what an agent would send: flat, or routed already.
            problems.extend(replay(calls, |tool, args| host.call(session_id, tool, &crate::tools::route_args(&version, tool, args))));
            let graded = host.grade(session_id)?;
            match reward(&graded) {
                Some(r) if r < bar => {
                    problems.push(format!("the reference solution scores {}, below the pass bar {}", shown(r), shown(bar)))
                }
                _ => {}
            }
            graded
        }
    };
    Ok(object([
        ("passBar", Value::Float(bar)),
        ("noop", noop),
        ("solution", solution),
        ("ok", Value::Bool(problems.is_empty())),
        ("problems", Value::Array(problems.into_iter().map(Value::Str).collect())),
    ]))
}

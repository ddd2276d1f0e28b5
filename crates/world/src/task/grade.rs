//! [`grade`]: a task's grader picked by its kind and run over a state dump.

use super::assertions::evaluate_assertions_with;
use super::python::{run_python_grader_with, GraderError, GraderOptions, PythonSource, DEFAULT_TIMEOUT};
use super::spec::{Grader, TaskSpec};
use crate::json::{Map, Value};
use std::time::Duration;

/// The grade of `spec` over `state` (the host's dump): no grader → `{"reward":
/// null, "rewards": {}}`; assertions → [`evaluate_assertions_with`] (with the
/// grader's tolerance); rubric → pending
/// (`{"reward": null, "rewards": {}, "pending": true, "grader": "rubric"}`); python →
/// its source run by [`run_python_grader_with`] within its timeout (30 s unless given).
pub fn grade(spec: &TaskSpec, state: &Value, options: &GraderOptions) -> Result<Value, GraderError> {
    let mut out = Map::default();
    match &spec.grader {
        None => {}
        Some(Grader::Assertions { checks, tolerance }) => return Ok(evaluate_assertions_with(checks, tolerance.as_ref(), state)),
        Some(Grader::Python { source, timeout_seconds }) => {
            // A spec built by hand may hold any float: never panic on it.
            let timeout = timeout_seconds.and_then(|s| Duration::try_from_secs_f64(s).ok()).unwrap_or(DEFAULT_TIMEOUT);
            return run_python_grader_with(PythonSource::Inline(source.clone()), state, timeout, options);
        }
        Some(Grader::Rubric { .. }) => {
            out.insert("reward".into(), Value::Null);
            out.insert("rewards".into(), Value::Object(Map::default()));
            out.insert("pending".into(), Value::Bool(true));
            out.insert("grader".into(), Value::str("rubric"));
            return Ok(Value::Object(out));
        }
    }
    out.insert("reward".into(), Value::Null);
    out.insert("rewards".into(), Value::Object(Map::default()));
    Ok(Value::Object(out))
}

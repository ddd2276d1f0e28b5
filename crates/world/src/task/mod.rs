//! Session tasks: a task supplied when a session opens (instead of a bundled
//! `scenarios/<name>/`), and the grading of any task over a state dump.
//!
//! * [`TaskSpec::parse`] checks a spec's shape and size with the original's
//!   refusals (code `task`); [`TaskSpec::to_value`] is the normalised spec the
//!   original stores and returns.
//! * [`check_task_entities`], [`check_task_tools`] and [`check_tool_allowed`] are the
//!   host's refusals of a spec against one world.
//! * [`evaluate_assertions`] is the declarative grader; [`run_python_grader`] runs a
//!   `verify.py`; [`grade`] picks by the spec's grader kind.
//! * [`write_task_dir`] / [`read_task_dir`] keep a spec under a session directory.
//!
//! Not here: opening sessions, applying the seed (that is `plan::seed_batch`),
//! dumping state, or judging a rubric (the platform does that).

mod assertions;
mod host;
mod parse;
mod python;
mod spec;

pub use assertions::{evaluate_assertions, evaluate_check};
pub use host::{check_task_entities, check_task_tools, check_tool_allowed, unknown_task_entities, unknown_task_tools};
pub use python::{run_python_grader, run_python_grader_with, GraderError, GraderOptions, PythonSource, DEFAULT_TIMEOUT};
pub use spec::{
    Assertion, Check, CountBound, Criterion, FieldTest, Grader, Op, RubricModel, Seed, SeedMode, TaskSpec, CHECKS, INSTRUCTION_BYTES,
    METADATA_BYTES, NAME_CHARS, PYTHON_SOURCE_BYTES, PYTHON_TIMEOUT_S, RUBRIC_BYTES, RUBRIC_CRITERIA, RUBRIC_CRITERION_BYTES, SEED_BYTES,
    SEED_ROWS, TOOLS, TOOL_NAME_CHARS,
};

use crate::error::{ContractError, Error};
use crate::json::{dumps, parse_loads, DumpOptions, Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The directory under a session that holds its task.
pub const TASK_DIR: &str = "task";
/// The spec's file inside [`TASK_DIR`].
pub const TASK_FILE: &str = "task.json";

/// The grade of `spec` over `state` (the host's dump): no grader → `{"reward":
/// null, "rewards": {}}`; assertions → [`evaluate_assertions`]; rubric → pending
/// (`{"reward": null, "rewards": {}, "pending": true, "grader": "rubric"}`); python →
/// its source run by [`run_python_grader_with`] within its timeout (30 s unless given).
pub fn grade(spec: &TaskSpec, state: &Value, options: &GraderOptions) -> Result<Value, GraderError> {
    let mut out = Map::default();
    match &spec.grader {
        None => {}
        Some(Grader::Assertions { checks }) => return Ok(evaluate_assertions(checks, state)),
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

/// Write `spec` under `session_dir/task/`: `task.json` (the normalised spec,
/// `json.dumps(indent=2, sort_keys=True)` and a newline), `instruction.md`, and for
/// a python grader `checks/verify.py`, where a bundled task has it. Returns the
/// task directory.
pub fn write_task_dir(spec: &TaskSpec, session_dir: &Path) -> Result<PathBuf, Error> {
    let root = session_dir.join(TASK_DIR);
    std::fs::create_dir_all(&root).map_err(|e| Error::io(e, &root))?;
    let options = DumpOptions { sort_keys: true, ensure_ascii: true, indent: Some(2), compact: false };
    let mut text = dumps(&spec.to_value(), options);
    text.push('\n');
    let file = root.join(TASK_FILE);
    std::fs::write(&file, text).map_err(|e| Error::io(e, &file))?;
    let instruction = root.join("instruction.md");
    std::fs::write(&instruction, &spec.instruction).map_err(|e| Error::io(e, &instruction))?;
    if let Some(Grader::Python { source, .. }) = &spec.grader {
        let checks = root.join("checks");
        std::fs::create_dir_all(&checks).map_err(|e| Error::io(e, &checks))?;
        let verify = checks.join("verify.py");
        std::fs::write(&verify, source).map_err(|e| Error::io(e, &verify))?;
    }
    Ok(root)
}

/// The task a session directory holds, or None for a session on a bundled task.
pub fn read_task_dir(session_dir: &Path) -> Result<Option<TaskSpec>, Error> {
    let file = session_dir.join(TASK_DIR).join(TASK_FILE);
    if !file.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&file).map_err(|e| Error::io(e, &file))?;
    let value = parse_loads(&text).map_err(|_| ContractError::new("task", "the session's task.json is not json", "/task"))?.value;
    Ok(Some(TaskSpec::parse(&value)?))
}

/// The path of the `verify.py` a session task's python grader is written to.
pub fn task_verify_path(session_dir: &Path) -> PathBuf {
    session_dir.join(TASK_DIR).join("checks").join("verify.py")
}

#[cfg(test)]
mod tests;

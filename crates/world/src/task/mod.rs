//! Session tasks: a task supplied when a session opens (instead of a bundled
//! `scenarios/<name>/`), and the grading of any task over a state dump.
//!
//! * [`TaskSpec::parse`] checks a spec's shape and size with the original's
//!   refusals (code `task`); [`TaskSpec::to_value`] is the normalised spec the
//!   original stores and returns.
//! * [`check_task_entities`], [`check_task_tools`] and [`check_tool_allowed`] are the
//!   host's refusals of a spec against one world.
//! * [`evaluate_assertions`] is the declarative grader (each check reported with the
//!   rows and values it saw, compared with the declared [`Tolerance`];
//!   [`evaluate_assertions_counted`] when the caller counted some `count` checks
//!   itself); [`run_python_grader`] runs a `verify.py`, [`run_python_graders`] one over
//!   many states in one worker; [`grade`] picks by the spec's grader kind.
//! * [`write_task_dir`] / [`read_task_dir`] keep a spec under a session directory.
//!
//! Not here: opening sessions, applying the seed (that is `plan::seed_batch`),
//! dumping state, or judging a rubric (the platform does that).

mod assertions;
mod counted;
mod dir;
mod evidence;
mod grade;
mod host;
mod parse;
mod python;
mod python_batch;
mod spec;

pub use assertions::{effective_tolerance, evaluate_assertions, evaluate_assertions_with, evaluate_check};
pub use counted::{count_passes, countable, evaluate_assertions_counted};
pub use dir::{read_task_dir, task_verify_path, write_task_dir, TASK_DIR, TASK_FILE};
pub use evidence::EVIDENCE_ROWS;
pub use grade::grade;
pub use host::{check_task_entities, check_task_tools, check_tool_allowed, unknown_task_entities, unknown_task_tools};
pub use python::{run_python_grader, run_python_grader_with, GraderError, GraderOptions, PythonSource, DEFAULT_TIMEOUT};
pub use python_batch::run_python_graders;
pub use spec::{
    Assertion, Check, CountBound, Criterion, FieldTest, Grader, Op, RubricModel, Seed, SeedMode, TaskSpec, Tolerance, CHECKS,
    INSTRUCTION_BYTES, METADATA_BYTES, NAME_CHARS, PYTHON_SOURCE_BYTES, PYTHON_TIMEOUT_S, RUBRIC_BYTES, RUBRIC_CRITERIA,
    RUBRIC_CRITERION_BYTES, SEED_BYTES, SEED_ROWS, TOOLS, TOOL_NAME_CHARS,
};

#[cfg(test)]
mod tests;

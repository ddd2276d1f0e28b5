//! Re-scoring stored final states under a task's grader (`…/evaluations/{id}/regrade`):
//! the synchronous half, no HTTP and no store — given task specs and state files,
//! the grades.
//!
//! A state file is a session database as the host exports it (`VACUUM INTO`), read in
//! place through `gateway_serve::state_diff::dump_file` (no contract needed). An
//! assertions grader runs in-process over only the entities its checks name, states
//! spread over the machine's cores; a python grader runs over every state of its spec
//! in one confined worker (`run_python_graders`), each state as its own `__main__`.
//! A rubric is a model's judgement and is not re-run here; a task without a grader
//! has nothing to re-score. Both are reported per state, as any other failure is.

use gateway_world::json::{self, DumpOptions, Map, Value};
use gateway_world::task::{Grader, GraderOptions, PythonSource, TaskSpec, DEFAULT_TIMEOUT};
use std::path::PathBuf;
use std::time::Duration;

/// One thing to grade: spec `spec` (an index into the specs given) over the state in
/// `state`.
#[derive(Debug, Clone)]
pub struct Job {
    /// Which spec grades it.
    pub spec: usize,
    /// The stored final state (a session database file).
    pub state: PathBuf,
}

/// Why a sample got no grade on a regrade, in the words its report shows (the sample
/// is filed errored with it; the server adds the reasons it finds before grading).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unscored {
    /// The stored state file could not be read as a session database.
    #[error("the stored state could not be read: {0}")]
    UnreadableState(String),
    /// The grader ran and failed (its own words).
    #[error("{0}")]
    GraderFailed(String),
    /// A rubric is a model's judgement, not re-run.
    #[error("a rubric grader is a model's judgement: regrade re-scores assertions and python graders")]
    Rubric,
    /// The task has no grader.
    #[error("the task has no grader: there is nothing to re-score")]
    NoGrader,
    /// The sample's state was registered, its bytes never uploaded.
    #[error("its final state {0} was registered but never uploaded")]
    NotUploaded(String),
    /// No state was stored for the sample.
    #[error("no final state was stored for this sample (worlds run files them; or POST …/states)")]
    NoState,
    /// The rollout had errored when it ran (its reason).
    #[error("the rollout itself errored: {0}")]
    RolloutErrored(String),
    /// No stored task carries the sample's task name.
    #[error("no stored task is named '{0}': regrade it with --task-id")]
    NoTaskNamed(String),
    /// Several stored tasks carry it.
    #[error("{count} stored tasks are named '{name}': regrade it with --task-id")]
    TasksNamed {
        /// How many.
        count: usize,
        /// The name.
        name: String,
    },
    /// The stored task has no such version (the task store's refusal, in its words).
    #[error("{0}")]
    NoTaskVersion(String),
    /// The task's version holds a spec that does not parse.
    #[error("task {task} version {version} does not parse: {message}")]
    SpecInvalid {
        /// The task's id.
        task: String,
        /// Its version.
        version: i64,
        /// The parser's message.
        message: String,
    },
}

/// The entities an assertions grader reads.
fn named_entities(spec: &TaskSpec) -> Vec<String> {
    let mut names: Vec<String> = match &spec.grader {
        Some(Grader::Assertions { checks, .. }) => checks.iter().map(|c| c.entity.clone()).collect(),
        _ => Vec::new(),
    };
    names.sort();
    names.dedup();
    names
}

/// The grade of an assertions spec over one state file.
fn grade_in_process(spec: &TaskSpec, job: &Job, options: &GraderOptions) -> Result<Value, Unscored> {
    let entities = named_entities(spec);
    let dump = gateway_serve::state_diff::dump_file(&job.state, Some(&entities)).map_err(|e| Unscored::UnreadableState(e.to_string()))?;
    gateway_world::task::grade(spec, &Value::Object(dump), options).map_err(|e| Unscored::GraderFailed(e.to_string()))
}

/// A state file as a python grader reads it on stdin: the host's dump (every entity,
/// then `snapshot`, null here: a stored state does not carry its version's sidecar).
fn python_input(job: &Job) -> Result<String, Unscored> {
    let mut dump: Map = gateway_serve::state_diff::dump_file(&job.state, None).map_err(|e| Unscored::UnreadableState(e.to_string()))?;
    dump.insert("snapshot".into(), Value::Null);
    Ok(json::dumps(&Value::Object(dump), DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false }))
}

/// `body` over `items` on up to `threads` threads, results in item order.
fn spread<T: Sync, R: Send>(items: &[T], threads: usize, body: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let size = items.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items.chunks(size).map(|chunk| scope.spawn(|| chunk.iter().map(&body).collect::<Vec<R>>())).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}

/// The grade of every job, in job order: the grader's answer (its `reward`,
/// `rewards` and, for assertions, `checks`), or why there is none. `options` runs
/// the python graders (a hub's: confined).
pub fn grade_states(specs: &[TaskSpec], jobs: &[Job], options: &GraderOptions, threads: usize) -> Vec<Result<Value, Unscored>> {
    let mut results: Vec<Option<Result<Value, Unscored>>> = vec![None; jobs.len()];
    // Assertions: in-process, every core.
    let in_process: Vec<usize> = (0..jobs.len())
        .filter(|i| matches!(specs.get(jobs[*i].spec).and_then(|s| s.grader.as_ref()), Some(Grader::Assertions { .. })))
        .collect();
    let graded = spread(&in_process, threads, |i| grade_in_process(&specs[jobs[*i].spec], &jobs[*i], options));
    for (i, grade) in in_process.into_iter().zip(graded) {
        results[i] = Some(grade);
    }
    // Python: one worker per spec over all of its states.
    for (index, spec) in specs.iter().enumerate() {
        let Some(Grader::Python { source, timeout_seconds }) = &spec.grader else { continue };
        let mine: Vec<usize> = (0..jobs.len()).filter(|i| jobs[*i].spec == index).collect();
        let inputs = spread(&mine, threads, |i| python_input(&jobs[*i]));
        let mut lines = Vec::new();
        let mut readable = Vec::new();
        for (i, input) in mine.iter().zip(inputs) {
            match input {
                Ok(line) => {
                    lines.push(line);
                    readable.push(*i);
                }
                Err(reason) => results[*i] = Some(Err(reason)),
            }
        }
        let timeout = timeout_seconds.and_then(|s| Duration::try_from_secs_f64(s).ok()).unwrap_or(DEFAULT_TIMEOUT);
        let grades = gateway_world::task::run_python_graders(PythonSource::Inline(source.clone()), &lines, timeout, options);
        for (i, grade) in readable.into_iter().zip(grades) {
            results[i] = Some(grade.map_err(|e| Unscored::GraderFailed(e.to_string())));
        }
    }
    results
        .into_iter()
        .zip(jobs)
        .map(|(result, job)| {
            result.unwrap_or_else(|| {
                Err(match specs.get(job.spec).and_then(|s| s.grader.as_ref()) {
                    Some(Grader::Rubric { .. }) => Unscored::Rubric,
                    _ => Unscored::NoGrader,
                })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> TaskSpec {
        TaskSpec::parse(&json::parse(text).unwrap().value).unwrap()
    }

    /// The helpdesk example's state as a session exports it, with ticket 101 set to `status`.
    fn state(dir: &std::path::Path, status: &str) -> PathBuf {
        let world = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
        let live = gateway_serve::state::WorldState::open(&world, Default::default()).unwrap();
        let key = json::object([("id", Value::Int(101))]);
        live.write(|store| store.update("tickets", &key, &json::object([("status", Value::str(status))]), None), None).unwrap();
        let path = dir.join(format!("{status}.sqlite"));
        live.export(&path).unwrap();
        path
    }

    #[test]
    fn stored_states_are_regraded_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let (solved, open) = (state(dir.path(), "solved"), state(dir.path(), "open"));
        let specs = vec![
            spec(
                r#"{"instruction": "x", "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]}}"#,
            ),
            spec(
                r#"{"instruction": "x", "grader": {"kind": "python", "source": "import json, sys\ns = json.load(sys.stdin)\nprint(json.dumps({'reward': s['tickets']['101']['status'] == 'solved', 'tickets': len(s['tickets'])}))"}}"#,
            ),
            spec(r#"{"instruction": "x", "grader": {"kind": "rubric", "rubric": "Be kind."}}"#),
            spec(r#"{"instruction": "x"}"#),
        ];
        let jobs: Vec<Job> =
            [(0, &solved), (0, &open), (1, &solved), (1, &open), (2, &open), (3, &open), (0, &dir.path().join("gone.sqlite"))]
                .into_iter()
                .map(|(spec, state)| Job { spec, state: state.clone() })
                .collect();
        let graded = grade_states(&specs, &jobs, &GraderOptions::default(), 2);
        let reward = |i: usize| graded[i].as_ref().map(|g| g.get("reward").and_then(Value::as_f64)).map_err(Clone::clone);
        assert_eq!(reward(0), Ok(Some(1.0)));
        assert_eq!(reward(1), Ok(Some(0.0)));
        assert!(graded[1].as_ref().unwrap().get("checks").is_some(), "an assertions regrade explains itself");
        assert_eq!(reward(2), Ok(Some(1.0)));
        assert_eq!(reward(3), Ok(Some(0.0)));
        assert_eq!(json::canonical(graded[3].as_ref().unwrap().get("rewards").unwrap()), r#"{"tickets":4.0}"#);
        assert_eq!(graded[4].as_ref().unwrap_err(), &Unscored::Rubric);
        assert!(graded[5].as_ref().unwrap_err().to_string().contains("no grader"));
        assert!(matches!(graded[6], Err(Unscored::UnreadableState(_))), "{:?}", graded[6]);
    }
}

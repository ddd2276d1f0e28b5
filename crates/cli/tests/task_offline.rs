//! `gateway worlds task grade SPEC --state STATE` and `worlds task validate SPEC
//! --path WORLD`: tasks checked and graded on this machine, no hub (beyond the
//! original).

use std::path::Path;
use std::process::Command;

const GATEWAY: &str = env!("CARGO_BIN_EXE_gateway");

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(GATEWAY).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap())
}

const SPEC: &str = r#"{"instruction": "Solve 101.", "grader": {"kind": "assertions", "checks": [
    {"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"},
    {"entity": "customers", "assert": "count", "count": {"gte": 1}}]},
    "metadata": {"solution": [{"tool": "solve_ticket", "args": {"path": {"id": 101}}}]}}"#;

#[test]
fn grade_prints_the_rewards_in_check_order_or_the_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, state) = (dir.path().join("task.json"), dir.path().join("state.json"));
    std::fs::write(&spec, SPEC).unwrap();
    std::fs::write(&state, r#"{"tickets": [{"id": 101, "status": "solved"}, "not a row"], "customers": {"C1": {"id": "C1"}}}"#).unwrap();
    let (spec, state) = (spec.to_str().unwrap(), state.to_str().unwrap());
    // The original's members first, then (ours) each check's report.
    let (code, out) = run(&["worlds", "task", "grade", spec, "--state", state]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with(
            "{\"reward\": 1.0, \"rewards\": {\"solved\": 1.0, \"check_1\": 1.0}, \"checks\": [{\"id\": \"solved\", \"passed\": true"
        ),
        "{out}"
    );
    let open = dir.path().join("open.json");
    std::fs::write(&open, r#"{"tickets": {"101": {"id": 101, "status": "open"}}}"#).unwrap();
    let (code, out) = run(&["worlds", "task", "grade", spec, "--state", open.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("{\"reward\": 0.0, \"rewards\": {\"solved\": 0.0, \"check_1\": 0.0}, \"checks\": ["), "{out}");
    assert!(out.contains("\"actual\": \"1 of 1 row failed: 101 status \\\"open\\\"\""), "what the check saw: {out}");
    assert!(out.contains("\"rows\": [{\"key\": \"101\", \"field\": \"status\", \"value\": \"open\"}]"), "{out}");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"instruction": "x", "grader": {"kind": "magic"}}"#).unwrap();
    let (code, out) = run(&["worlds", "task", "grade", bad.to_str().unwrap(), "--state", state]);
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "{\"error\": {\"code\": \"task\", \"message\": \"grader.kind must be assertions, python or rubric\", \"path\": \"\", \"schema_path\": \"/task/grader/kind\"}, \"status\": \"rejected\"}\n"
    );
}

#[test]
fn validate_with_a_path_checks_and_self_tests_the_task_locally() {
    let dir = tempfile::tempdir().unwrap();
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
    let spec = dir.path().join("task.json");
    std::fs::write(&spec, SPEC).unwrap();
    let (code, out) = run(&["worlds", "task", "validate", spec.to_str().unwrap(), "--path", world.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("\"ok\": true") && out.contains("\"noop\"") && out.contains("\"solution\""), "{out}");
    std::fs::write(&spec, SPEC.replace("\"id\": 101}}}]", "\"id\": 102}}}]")).unwrap();
    let (code, out) = run(&["worlds", "task", "validate", spec.to_str().unwrap(), "--path", world.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("self-test: the reference solution scores 0.5, below the pass bar 0.7"), "{out}");
    std::fs::write(&spec, r#"{"instruction": "x", "grader": {"kind": "assertions", "checks": [{"entity": "ghosts"}]}}"#).unwrap();
    let (code, out) = run(&["worlds", "task", "validate", spec.to_str().unwrap(), "--path", world.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("the task names ghosts, which this world does not define"), "{out}");
}

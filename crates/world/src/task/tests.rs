//! Unit tests of task specs, the assertions grader and the python grader. The
//! byte-for-byte comparison with the original lives in `tests/tasks.rs`.

use super::*;
use crate::json::{dumps, DumpOptions, Value};
use std::time::Duration;

fn value(text: &str) -> Value {
    crate::json::parse(text).expect("test json").value
}

fn text(value: &Value) -> String {
    dumps(value, DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false })
}

fn refusal(spec: &str) -> (String, String) {
    let error = TaskSpec::parse(&value(spec)).expect_err("refused");
    assert_eq!(error.code, "task");
    (error.message, error.schema_path)
}

#[test]
fn defaults_are_filled_and_numbers_become_floats() {
    let spec = TaskSpec::parse(&value(
        r#"{"metadata": {}, "grader": {"kind": "assertions", "checks": [{"entity": "users", "weight": 2}]},
            "instruction": "do it", "seed": {"rows": {"users": [{"id": 1}]}}, "name": "t.1"}"#,
    ))
    .unwrap();
    assert_eq!(
        text(&spec.to_value()),
        r#"{"instruction": "do it", "name": "t.1", "seed": {"mode": "append", "rows": {"users": [{"id": 1}]}}, "grader": {"kind": "assertions", "checks": [{"weight": 2.0, "entity": "users", "assert": "exists"}]}}"#
    );
    assert_eq!(spec.grader_kind(), Some("assertions"));
    assert!(spec.metadata.is_none());
    assert!(spec.allows_tool("anything"));
}

#[test]
fn python_timeout_is_a_float_in_range() {
    let spec =
        TaskSpec::parse(&value(r#"{"instruction": "x", "grader": {"kind": "python", "source": "pass", "timeoutSeconds": 5}}"#)).unwrap();
    assert_eq!(text(spec.to_value().get("grader").unwrap()), r#"{"kind": "python", "source": "pass", "timeoutSeconds": 5.0}"#);
    for bad in ["0", "30.5", "true", "\"5\""] {
        let spec = format!(r#"{{"instruction": "x", "grader": {{"kind": "python", "source": "s", "timeoutSeconds": {bad}}}}}"#);
        assert_eq!(refusal(&spec), ("timeoutSeconds is a number in (0, 30]".into(), "/task/grader/timeoutSeconds".into()));
    }
}

#[test]
fn refusals_name_their_place() {
    assert_eq!(refusal("[]"), ("a task is a json object".into(), "/task".into()));
    assert_eq!(refusal(r#"{"b": 1, "a": 2, "instruction": "x"}"#), ("unknown task field(s): a, b".into(), "/task".into()));
    assert_eq!(refusal(r#"{"instruction": ""}"#), ("a task needs an instruction".into(), "/task/instruction".into()));
    let (message, at) =
        refusal(r#"{"instruction": "x", "grader": {"kind": "assertions", "checks": [{"id": "check_1", "entity": "e"}, {"entity": "e"}]}}"#);
    assert_eq!(message, "check 1 has no id and its positional key 'check_1' is taken by another check's id");
    assert_eq!(at, "/task/grader/checks/1/id");
    let (message, _) =
        refusal(r#"{"instruction": "x", "grader": {"kind": "assertions", "checks": [{"entity": "e"}, {"id": "check_0", "entity": "e"}]}}"#);
    assert_eq!(message, "check id 'check_0' is used twice (an id of the form check_<n> is also the positional key of check n)");
}

#[test]
fn a_name_may_end_in_one_newline_as_pythons_dollar_allows() {
    assert!(TaskSpec::parse(&value(r#"{"instruction": "x", "name": "abc\n"}"#)).is_ok());
    assert!(TaskSpec::parse(&value(r#"{"instruction": "x", "name": "abc\n\n"}"#)).is_err());
    assert!(TaskSpec::parse(&value(r#"{"instruction": "x", "name": "_abc"}"#)).is_err());
}

#[test]
fn entities_and_the_hosts_refusals() {
    let spec = TaskSpec::parse(&value(
        r#"{"instruction": "x", "seed": {"rows": {"b": [], "a": []}}, "tools": ["t2", "t1"],
            "grader": {"kind": "assertions", "checks": [{"entity": "c"}, {"entity": "a"}, {"entity": "c"}]}}"#,
    ))
    .unwrap();
    assert_eq!(spec.entities(), ["b", "a", "c"]);
    assert_eq!(unknown_task_entities(&spec, ["a", "z"]), ["b", "c"]);
    let error = check_task_entities(&spec, ["z", "a"]).unwrap_err();
    assert_eq!(error.message, "the task names b, c, which this world does not define; its entities are a, z");
    assert_eq!(error.schema_path, "/task");
    assert!(check_task_entities(&spec, ["a", "b", "c"]).is_ok());
    let error = check_task_tools(&spec, []).unwrap_err();
    assert_eq!(error.message, "the task allows t2, t1, which this world does not serve; its tools are none");
    assert_eq!(error.schema_path, "/task/tools");
    assert_eq!(unknown_task_tools(&spec, ["t1"]), ["t2"]);
    let error = check_tool_allowed(&spec, "t3").unwrap_err();
    assert_eq!(error.code, "tool_not_allowed");
    assert_eq!(error.message, "tool 't3' is not allowed by this session's task; it allows: t2, t1");
    assert!(check_tool_allowed(&spec, "t1").is_ok());
}

/// A grade's original members (the check reports, ours, left out).
fn original(grade: &Value) -> Value {
    Value::Object(grade.as_object().unwrap().iter().filter(|(k, _)| k.as_str() != "checks").map(|(k, v)| (k.clone(), v.clone())).collect())
}

fn checks(json: &str) -> Vec<Check> {
    let spec = format!(r#"{{"instruction": "x", "grader": {{"kind": "assertions", "checks": {json}}}}}"#);
    match TaskSpec::parse(&value(&spec)).unwrap().grader {
        Some(Grader::Assertions { checks, .. }) => checks,
        _ => unreachable!(),
    }
}

#[test]
fn assertions_follow_json_equality_and_ordering() {
    let state = value(
        r#"{"users": {"1": {"id": 1, "ok": true, "n": 2.0, "tags": ["a", 1], "name": "bob", "p": {"q": null}}, "2": 7},
            "orders": [{"total": 10}, "junk", {"total": 3.5}]}"#,
    );
    let cases = [
        (r#"[{"entity": "users", "where": {"ok": 1}}]"#, 0.0),
        (r#"[{"entity": "users", "where": {"ok": true, "id": 1.0}}]"#, 1.0),
        (r#"[{"entity": "users", "where": {"p.q": null}}]"#, 1.0),
        (r#"[{"entity": "users", "where": {"p.r": null}}]"#, 0.0),
        (r#"[{"entity": "users", "where": {"name.x": "b"}}]"#, 0.0),
        (r#"[{"entity": "users", "assert": "count", "count": {"eq": 1}}]"#, 1.0),
        (r#"[{"entity": "orders", "assert": "count", "count": {"gte": 2, "lte": 2}}]"#, 1.0),
        (r#"[{"entity": "orders", "assert": "all", "field": "total", "op": "gt", "value": 3}]"#, 1.0),
        (r#"[{"entity": "orders", "assert": "all", "field": "total", "op": "gt", "value": "3"}]"#, 0.0),
        (r#"[{"entity": "users", "assert": "any", "field": "ok", "op": "gte", "value": 1}]"#, 0.0),
        (r#"[{"entity": "users", "assert": "any", "field": "tags", "op": "contains", "value": 1.0}]"#, 1.0),
        (r#"[{"entity": "users", "assert": "any", "field": "name", "op": "contains", "value": "o"}]"#, 1.0),
        (r#"[{"entity": "users", "assert": "any", "field": "n", "op": "contains", "value": 2}]"#, 0.0),
        (r#"[{"entity": "users", "assert": "any", "field": "missing", "op": "neq", "value": 1}]"#, 1.0),
        (r#"[{"entity": "users", "assert": "any", "field": "n", "op": "in", "value": [true, 2]}]"#, 1.0),
        (r#"[{"entity": "nobody", "assert": "all", "field": "x", "value": 1}]"#, 0.0),
        (r#"[{"entity": "nobody", "assert": "absent"}]"#, 1.0),
    ];
    for (json, reward) in cases {
        let grade = evaluate_assertions(&checks(json), &state);
        assert_eq!(grade.get("reward").unwrap().as_f64(), Some(reward), "{json}");
    }
}

#[test]
fn weights_and_keys_shape_the_grade() {
    let grade = evaluate_assertions(
        &checks(r#"[{"entity": "a", "weight": 3}, {"id": "second", "entity": "b"}, {"entity": "a", "assert": "absent"}]"#),
        &value(r#"{"a": [{}]}"#),
    );
    assert_eq!(text(&original(&grade)), r#"{"reward": 0.6, "rewards": {"check_0": 1.0, "second": 0.0, "check_2": 0.0}}"#);
    assert_eq!(text(&evaluate_assertions(&[], &Value::Null)), r#"{"reward": null, "rewards": {}, "checks": []}"#);
}

#[test]
fn int_float_comparisons_are_exact() {
    let state = value(r#"{"e": [{"n": 9007199254740993}]}"#);
    let grade = evaluate_assertions(&checks(r#"[{"entity": "e", "where": {"n": 9007199254740992.0}}]"#), &state);
    assert_eq!(grade.get("reward").unwrap().as_f64(), Some(0.0));
    let grade = evaluate_assertions(
        &checks(r#"[{"entity": "e", "assert": "all", "field": "n", "op": "gt", "value": 9007199254740992.0}]"#),
        &state,
    );
    assert_eq!(grade.get("reward").unwrap().as_f64(), Some(1.0));
}

#[test]
fn grade_dispatches_on_the_kind() {
    let options = GraderOptions::default();
    let rubric = TaskSpec::parse(&value(r#"{"instruction": "x", "grader": {"kind": "rubric", "rubric": "r"}}"#)).unwrap();
    assert_eq!(
        text(&grade(&rubric, &Value::Null, &options).unwrap()),
        r#"{"reward": null, "rewards": {}, "pending": true, "grader": "rubric"}"#
    );
    assert!(rubric.graded_on_platform());
    let none = TaskSpec::parse(&value(r#"{"instruction": "x"}"#)).unwrap();
    assert_eq!(text(&grade(&none, &Value::Null, &options).unwrap()), r#"{"reward": null, "rewards": {}}"#);
}

#[test]
fn the_task_dir_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let spec = TaskSpec::parse(&value(
        r#"{"name": "n", "instruction": "héllo", "grader": {"kind": "python", "source": "print('{}')"}, "metadata": {"k": "v"}}"#,
    ))
    .unwrap();
    let root = write_task_dir(&spec, dir.path()).unwrap();
    let stored = std::fs::read_to_string(root.join(TASK_FILE)).unwrap();
    assert_eq!(
        stored,
        "{\n  \"grader\": {\n    \"kind\": \"python\",\n    \"source\": \"print('{}')\"\n  },\n  \"instruction\": \"h\\u00e9llo\",\n  \"metadata\": {\n    \"k\": \"v\"\n  },\n  \"name\": \"n\"\n}\n"
    );
    assert_eq!(std::fs::read_to_string(task_verify_path(dir.path())).unwrap(), "print('{}')");
    let back = read_task_dir(dir.path()).unwrap().unwrap();
    assert_eq!(text(&back.to_value()), text(&spec.to_value()));
    assert!(read_task_dir(&dir.path().join("none")).unwrap().is_none());
}

// ---------------------------------------------------------------------------
// The python grader (needs python3 on PATH, as the host does).
// ---------------------------------------------------------------------------

fn run(source: &str, timeout: Duration) -> Result<Value, GraderError> {
    run_python_grader(PythonSource::Inline(source.into()), &value(r#"{"users": {"1": {"id": 1}}, "snapshot": null}"#), timeout)
}

#[test]
fn a_passing_grader_reads_the_state_and_prints_its_grade() {
    let source = r#"
import json, sys
state = json.load(sys.stdin)
print("thinking...")
print(json.dumps({"reward": len(state["users"]), "found": True, "note": "x"}))
"#;
    let grade = run(source, Duration::from_secs(20)).unwrap();
    assert_eq!(text(&grade), r#"{"reward": 1.0, "rewards": {"found": 1.0, "note": null}}"#);
}

#[test]
fn a_raising_grader_reports_its_exit_and_stderr_tail() {
    let error = run("raise SystemExit('boom')", Duration::from_secs(20)).unwrap_err();
    assert_eq!(error.to_string(), "verify.py exited 1: boom");
    let error = run("import sys\nraise ValueError('bad')", Duration::from_secs(20)).unwrap_err();
    match &error {
        GraderError::Exited { code: 1, stderr } => assert!(stderr.ends_with("ValueError: bad"), "{stderr}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(error.to_contract_error().code, "host");
}

#[test]
fn output_that_is_not_a_json_object_is_refused() {
    let error = run("print('done')\nprint('no grade here')", Duration::from_secs(20)).unwrap_err();
    assert_eq!(error.to_string(), "verify.py printed no rewards JSON: done\nno grade here");
    let error = run("pass", Duration::from_secs(20)).unwrap_err();
    assert_eq!(error.to_string(), "verify.py printed no rewards JSON: ");
    let error = run("print('[1, 2]')", Duration::from_secs(20)).unwrap_err();
    assert_eq!(error.to_string(), "verify.py rewards output is not an object");
}

#[test]
fn a_flood_of_output_is_read_to_its_tail() {
    let source = "import sys\nfor _ in range(24):\n    sys.stdout.write('x' * (1 << 20) + '\\n')\nprint('{\"reward\": 0.5}')";
    let grade = run(source, Duration::from_secs(20)).unwrap();
    assert_eq!(text(&grade), r#"{"reward": 0.5, "rewards": {}}"#);
}

#[test]
fn a_slow_grader_is_killed_at_its_timeout() {
    let started = std::time::Instant::now();
    let error = run("import subprocess, time\nsubprocess.Popen(['sleep', '30'])\ntime.sleep(30)", Duration::from_millis(700)).unwrap_err();
    assert_eq!(error.to_string(), "verify.py timed out after 0.7s");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn the_environment_is_scrubbed_and_cwd_is_the_scripts_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("helper.py"), "VALUE = 3\n").unwrap();
    let script = dir.path().join("verify.py");
    std::fs::write(
        &script,
        "import json, os, helper\nprint(json.dumps({'reward': helper.VALUE, 'secret': 'CARGO' in ''.join(os.environ), 'home': bool(os.environ.get('HOME'))}))\n",
    )
    .unwrap();
    let grade = run_python_grader(PythonSource::File(script), &Value::Null, Duration::from_secs(20)).unwrap();
    assert_eq!(text(&grade), r#"{"reward": 3.0, "rewards": {"secret": 0.0, "home": 1.0}}"#);
    let missing = run_python_grader(PythonSource::File(dir.path().join("nope.py")), &Value::Null, DEFAULT_TIMEOUT);
    assert!(matches!(missing, Err(GraderError::Missing(_))));
}

#[test]
fn the_network_is_denied_where_unshare_works() {
    let works = std::process::Command::new("unshare").args(["-rn", "--", "true"]).status().is_ok_and(|s| s.success())
        || std::process::Command::new("unshare").args(["-n", "--", "true"]).status().is_ok_and(|s| s.success());
    let source = r#"
import json, socket
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("1.1.1.1", 53))
    up = True
except OSError:
    up = False
interfaces = [name for _, name in socket.if_nameindex()]
print(json.dumps({"reward": 1, "online": up, "only_lo": interfaces == ["lo"]}))
"#;
    let grade = run(source, Duration::from_secs(20)).unwrap();
    if works {
        assert_eq!(grade.get("rewards").unwrap().get("only_lo").unwrap().as_f64(), Some(1.0), "{}", text(&grade));
        assert_eq!(grade.get("rewards").unwrap().get("online").unwrap().as_f64(), Some(0.0));
    }
}

// ---------------------------------------------------------------------------
// Check reports (evidence) and declared tolerances.
// ---------------------------------------------------------------------------

fn grader(json: &str) -> TaskSpec {
    TaskSpec::parse(&value(&format!(r#"{{"instruction": "x", "grader": {json}}}"#))).unwrap()
}

fn reports(spec: &TaskSpec, state: &Value) -> Vec<Value> {
    let graded = grade(spec, state, &GraderOptions::default()).unwrap();
    graded.get("checks").and_then(Value::as_array).unwrap().clone()
}

#[test]
fn a_failed_check_names_the_rows_and_values_it_saw() {
    let state = value(
        r#"{"tickets": {"7": {"id": 7, "status": "open"}, "8": {"id": 8, "status": "closed"}, "9": {"id": 9}},
            "customers": {"C1": {"id": "C1"}}}"#,
    );
    let spec = grader(
        r#"{"kind": "assertions", "checks": [
            {"id": "closed", "entity": "tickets", "where": {"id": 7}, "assert": "all", "field": "status", "value": "closed"},
            {"id": "three", "entity": "tickets", "assert": "count", "count": {"eq": 3}},
            {"id": "two", "entity": "tickets", "assert": "count", "count": {"eq": 2}},
            {"id": "any", "entity": "tickets", "assert": "any", "field": "status", "value": "solved"},
            {"id": "gone", "entity": "customers", "assert": "absent"},
            {"id": "there", "entity": "tickets", "where": {"id": 70}}]}"#,
    );
    let checks = reports(&spec, &state);
    let closed = &checks[0];
    assert_eq!(
        text(closed),
        concat!(
            r#"{"id": "closed", "passed": false, "description": "every tickets row where {\"id\": 7} has status eq \"closed\" (and there is one)", "#,
            r#""expected": "status eq \"closed\"", "actual": "1 of 1 row failed: 7 status \"open\"", "#,
            r#""rows": [{"key": "7", "field": "status", "value": "open"}], "rowCount": 1}"#
        )
    );
    assert!(matches!(checks[1].get("passed"), Some(Value::Bool(true))));
    assert_eq!(checks[2].get("actual").and_then(Value::as_str), Some(r#"3 rows: keys ["7", "8", "9"]"#));
    assert_eq!(checks[2].get("expected").and_then(Value::as_str), Some("eq 2 rows"));
    assert_eq!(
        checks[3].get("actual").and_then(Value::as_str),
        Some(r#"none of 3 rows held: 7 status "open", 8 status "closed", 9 status missing"#)
    );
    assert_eq!(text(&checks[3].get("rows").unwrap().as_array().unwrap()[2]), r#"{"key": "9", "field": "status", "missing": true}"#);
    assert_eq!(text(checks[4].get("rows").unwrap()), r#"[{"key": "C1", "row": {"id": "C1"}}]"#);
    assert_eq!(checks[5].get("actual").and_then(Value::as_str), Some("0 rows"));
}

#[test]
fn evidence_is_bounded_whatever_the_state_holds() {
    let rows: Vec<String> = (0..500).map(|i| format!(r#"{{"n": {i}, "pad": "{}"}}"#, "x".repeat(300))).collect();
    let state = value(&format!(r#"{{"e": [{}]}}"#, rows.join(", ")));
    let spec = grader(
        r#"{"kind": "assertions", "checks": [{"entity": "e", "assert": "all", "field": "pad", "value": "y"}, {"entity": "e", "assert": "absent"}]}"#,
    );
    for check in reports(&spec, &state) {
        assert_eq!(check.get("rows").unwrap().as_array().unwrap().len(), EVIDENCE_ROWS);
        assert!(matches!(check.get("rowCount"), Some(Value::Int(500))));
        assert!(matches!(check.get("rowsTruncated"), Some(Value::Bool(true))));
        assert!(text(&check).len() < 16 * 1024, "{}", text(&check).len());
    }
}

#[test]
fn numbers_compare_as_numbers_and_declared_tolerances_loosen() {
    let state = value(r#"{"orders": [{"total": 25, "who": "  Bob ", "rate": 0.333}]}"#);
    let reward = |json: &str| grade(&grader(json), &state, &GraderOptions::default()).unwrap().get("reward").and_then(Value::as_f64);
    let check = |extra: &str, field: &str, op: &str, value: &str| {
        format!(
            r#"{{"kind": "assertions"{extra}, "checks": [{{"entity": "orders", "assert": "all", "field": "{field}", "op": "{op}", "value": {value}}}]}}"#
        )
    };
    assert_eq!(reward(&check("", "total", "eq", "25.0")), Some(1.0), "25 equals 25.0 by default");
    assert_eq!(reward(&check("", "rate", "eq", "0.33")), Some(0.0));
    assert_eq!(reward(&check(r#", "tolerance": {"numeric": 0.01}"#, "rate", "eq", "0.33")), Some(1.0));
    assert_eq!(reward(&check(r#", "tolerance": {"numeric": 0.01}"#, "rate", "gt", "0.33")), Some(0.0), "within tolerance is equal");
    assert_eq!(reward(&check("", "who", "eq", r#""bob""#)), Some(0.0));
    assert_eq!(reward(&check(r#", "tolerance": {"case_insensitive": true}"#, "who", "eq", r#""bob""#)), Some(0.0), "not trimmed");
    assert_eq!(reward(&check(r#", "tolerance": {"case_insensitive": true, "trim": true}"#, "who", "eq", r#""bob""#)), Some(1.0));
    assert_eq!(reward(&check(r#", "tolerance": {"case_insensitive": true}"#, "who", "contains", r#""BO""#)), Some(1.0));
    // A check's own members win over the grader's.
    let own = r#"{"kind": "assertions", "tolerance": {"trim": true, "case_insensitive": true}, "checks": [
        {"entity": "orders", "where": {"who": "BOB"}, "tolerance": {"case_insensitive": false}}]}"#;
    assert_eq!(reward(own), Some(0.0));
    let spec = grader(own);
    let report = &reports(&spec, &state)[0];
    assert!(report.get("description").and_then(Value::as_str).unwrap().ends_with("(tolerance: trimmed)"), "{}", text(report));
    // Declared, it round-trips; refused, it is named.
    let normalised = text(&spec.to_value());
    assert!(normalised.contains(r#""tolerance": {"case_insensitive": false}"#), "{normalised}");
    assert!(normalised.contains(r#""tolerance": {"case_insensitive": true, "trim": true}"#), "{normalised}");
    let bad = |tolerance: &str| {
        refusal(&format!(
            r#"{{"instruction": "x", "grader": {{"kind": "assertions", "tolerance": {tolerance}, "checks": [{{"entity": "e"}}]}}}}"#
        ))
    };
    assert_eq!(bad(r#"{"numeric": -1}"#), ("tolerance.numeric is a finite number >= 0".into(), "/task/grader/tolerance/numeric".into()));
    assert_eq!(bad(r#"{"trim": "yes"}"#), ("tolerance.trim is true or false".into(), "/task/grader/tolerance/trim".into()));
    assert_eq!(bad(r#"{"fuzzy": true}"#).1, "/task/grader/tolerance");
}

#[test]
fn many_states_grade_in_one_worker_as_each_alone() {
    let source = r#"
import json, sys
state = json.load(sys.stdin)
n = state["n"]
if n == 3:
    raise SystemExit("three is refused")
if n == 4:
    print("no json")
    sys.exit(0)
print(json.dumps({"reward": n / 10, "even": n % 2 == 0}))
"#;
    let states: Vec<String> = (0..6).map(|n| format!(r#"{{"n": {n}}}"#)).collect();
    let grades = run_python_graders(PythonSource::Inline(source.into()), &states, Duration::from_secs(20), &GraderOptions::default());
    assert_eq!(grades.len(), 6);
    for (n, grade) in grades.iter().enumerate() {
        let alone = run_python_grader(PythonSource::Inline(source.into()), &value(&states[n]), Duration::from_secs(20));
        match (grade, alone) {
            (Ok(batched), Ok(alone)) => assert_eq!(text(batched), text(&alone), "state {n}"),
            (Err(batched), Err(alone)) => assert_eq!(batched.to_string(), alone.to_string(), "state {n}"),
            (batched, alone) => panic!("state {n}: {batched:?} vs {alone:?}"),
        }
    }
    assert_eq!(text(grades[2].as_ref().unwrap()), r#"{"reward": 0.2, "rewards": {"even": 1.0}}"#);
}

#[test]
fn a_state_that_kills_or_hangs_the_worker_is_reported_and_the_rest_graded() {
    let source = r#"
import json, os, sys, time
n = json.load(sys.stdin)["n"]
if n == 1:
    os._exit(7)
if n == 3:
    time.sleep(60)
print(json.dumps({"reward": n}))
"#;
    let states: Vec<String> = (0..5).map(|n| format!(r#"{{"n": {n}}}"#)).collect();
    let grades = run_python_graders(PythonSource::Inline(source.into()), &states, Duration::from_millis(800), &GraderOptions::default());
    let shown: Vec<String> = grades.iter().map(|g| g.as_ref().map(text).unwrap_or_else(|e| e.to_string())).collect();
    assert_eq!(shown[0], r#"{"reward": 0.0, "rewards": {}}"#);
    assert!(shown[1].starts_with("verify.py exited 7"), "{shown:?}");
    assert_eq!(shown[2], r#"{"reward": 2.0, "rewards": {}}"#);
    assert_eq!(shown[3], "verify.py timed out after 0.8s");
    assert_eq!(shown[4], r#"{"reward": 4.0, "rewards": {}}"#);
}

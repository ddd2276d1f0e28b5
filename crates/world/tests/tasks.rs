//! Task specs and the assertions grader replayed against the original: every case
//! in `fixtures/tasks/cases.json` (recorded by `fixtures/tasks/record.py` from
//! gatewaysdk 0.3.2) must give the same `json.dumps` text, byte for byte.
//!
//! The python cases run `python3` (as the host does), each a short subprocess.

use gateway_world::files::sha256_hex;
use gateway_world::json::{dumps, object, parse, DumpOptions, Map, Value};
use gateway_world::task::{
    check_task_entities, check_task_tools, evaluate_assertions, run_python_grader, unknown_task_entities, unknown_task_tools, Grader,
    PythonSource, TaskSpec,
};
use gateway_world::ContractError;
use std::path::Path;
use std::time::Duration;

/// `json.dumps(value)` with Python's defaults.
const PY_DUMPS: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false };

/// The recorder's directives: `{"$repeat": text, "times": n}` and `{"$list": item, "times": n}`.
fn expand(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.len() == 2 && map.contains_key("times") => {
            let times = match map.get("times") {
                Some(Value::Int(n)) => *n as usize,
                _ => panic!("times"),
            };
            if let Some(Value::Str(text)) = map.get("$repeat") {
                return Value::Str(text.repeat(times));
            }
            if let Some(item) = map.get("$list") {
                return Value::Array(vec![expand(item); times]);
            }
            Value::Object(map.iter().map(|(k, v)| (k.clone(), expand(v))).collect())
        }
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), expand(v))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(expand).collect()),
        other => other.clone(),
    }
}

fn detail(error: &ContractError) -> Value {
    let mut detail = Map::default();
    detail.insert("code".into(), Value::str(&error.code));
    detail.insert("message".into(), Value::str(&error.message));
    detail.insert("schema_path".into(), Value::str(&error.schema_path));
    detail.insert("path".into(), Value::str(&error.path));
    Value::Object(detail)
}

fn parse_outcome(input: &Value) -> Value {
    match TaskSpec::parse(input) {
        Ok(spec) => object([("spec", spec.to_value())]),
        Err(error) => object([("error", detail(&error))]),
    }
}

fn strings(value: Option<&Value>) -> Vec<&str> {
    value.and_then(Value::as_array).expect("a list").iter().map(|v| v.as_str().expect("a string")).collect()
}

fn string_list(items: Vec<String>) -> Value {
    Value::Array(items.into_iter().map(Value::Str).collect())
}

/// The host's `_run_verifier` over an inline `verify.py`.
fn python_outcome(case: &Value) -> Value {
    let source = case.get("source").and_then(Value::as_str).expect("source");
    let timeout = case.get("timeout").and_then(Value::as_f64).expect("timeout");
    let state = case.get("state").expect("state");
    match run_python_grader(PythonSource::Inline(source.into()), state, Duration::from_secs_f64(timeout)) {
        Ok(grade) => object([("grade", grade)]),
        Err(error) => object([("error", detail(&error.to_contract_error()))]),
    }
}

/// What the host derives from a spec against one world.
fn host_outcome(input: &Value, case: &Value) -> Value {
    let spec = TaskSpec::parse(input).unwrap_or_else(|e| panic!("host case spec refused: {e}"));
    let defined = strings(case.get("defined"));
    let served = strings(case.get("served"));
    let refusal = |result: Result<(), ContractError>| result.err().map(|e| detail(&e)).unwrap_or(Value::Null);
    let allows = strings(case.get("calls")).into_iter().map(|tool| (tool, Value::Bool(spec.allows_tool(tool))));
    object([
        ("entities", string_list(spec.entities())),
        ("unknown_entities", string_list(unknown_task_entities(&spec, defined.iter().copied()))),
        ("unknown_tools", string_list(unknown_task_tools(&spec, served.iter().copied()))),
        ("entities_refusal", refusal(check_task_entities(&spec, defined.iter().copied()))),
        ("tools_refusal", refusal(check_task_tools(&spec, served.iter().copied()))),
        ("allows", object(allows)),
        ("grader_kind", spec.grader_kind().map(Value::str).unwrap_or(Value::Null)),
        ("graded_on_platform", Value::Bool(spec.graded_on_platform())),
    ])
}

fn grade_outcome(input: &Value, state: &Value) -> Value {
    let spec = TaskSpec::parse(input).unwrap_or_else(|e| panic!("grade case spec refused: {e}"));
    let Some(Grader::Assertions { checks, .. }) = &spec.grader else { panic!("not an assertions grader") };
    // The original's members; the check reports (`checks`) are ours, tested apart.
    match evaluate_assertions(checks, state) {
        Value::Object(mut grade) => {
            assert!(grade.shift_remove("checks").is_some(), "every grade reports its checks");
            Value::Object(grade)
        }
        other => other,
    }
}

#[test]
fn every_recorded_case_matches_the_original() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tasks/cases.json");
    let text = std::fs::read_to_string(&path).expect("fixtures");
    // Some states hold integers past 2^53 on purpose: keep the value, ignore the range note.
    let fixtures = parse(&text).expect("fixtures are json").value;
    let cases = fixtures.get("cases").and_then(Value::as_array).expect("cases");
    assert!(cases.len() >= 80, "the corpus shrank to {}", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let name = case.get("name").and_then(Value::as_str).expect("name");
        let input = case.get("input").map(expand).unwrap_or_default();
        let outcome = match case.get("kind").and_then(Value::as_str) {
            Some("python") => python_outcome(case),
            Some("parse") => parse_outcome(&input),
            Some("grade") => grade_outcome(&input, &expand(case.get("state").expect("state"))),
            Some("host") => host_outcome(&input, case),
            other => panic!("unknown case kind {other:?}"),
        };
        let ours = dumps(&outcome, PY_DUMPS);
        let matched = match (case.get("expect"), case.get("expect_sha256")) {
            (Some(Value::Str(expected)), _) => ours == *expected,
            (_, Some(Value::Str(digest))) => {
                let length = case.get("expect_len").and_then(Value::as_f64).expect("expect_len") as usize;
                ours.len() == length && sha256_hex(ours.as_bytes()) == *digest
            }
            _ => panic!("case {name} records no expectation"),
        };
        if !matched {
            let expected = case.get("expect").and_then(Value::as_str).unwrap_or("<digest>");
            failures.push(format!("{name}\n  ours:     {}\n  original: {expected}", clip(&ours)));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

fn clip(text: &str) -> String {
    if text.len() <= 600 {
        return text.to_string();
    }
    let mut end = 600;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[test]
fn a_normalised_spec_parses_back_to_itself() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tasks/cases.json");
    let fixtures = parse(&std::fs::read_to_string(path).unwrap()).unwrap().value;
    for case in fixtures.get("cases").and_then(Value::as_array).unwrap() {
        let Some(input) = case.get("input").map(expand) else { continue };
        if let Ok(spec) = TaskSpec::parse(&input) {
            let again = TaskSpec::parse(&spec.to_value()).expect("the normalised spec is valid");
            assert_eq!(dumps(&again.to_value(), PY_DUMPS), dumps(&spec.to_value(), PY_DUMPS));
        }
    }
}

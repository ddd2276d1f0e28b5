//! The Python handler worker: protocol, ctx round trips, failures and restarts.

use gateway_serve::handlers::{CtxError, CtxHost, HandlerFailure, HandlerOutcome, HandlerRequest, Worker, WorkerError, WorkerOptions};
use gateway_world::json::{canonical, object, parse, Value};
use std::path::PathBuf;
use std::time::Instant;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/handlers").join(name)
}

fn json(text: &str) -> Value {
    parse(text).expect("test JSON").value
}

fn names(functions: &[&str]) -> Vec<String> {
    functions.iter().map(|f| f.to_string()).collect()
}

fn worker() -> Worker {
    Worker::start(&fixture("basic.py"), &names(&["plain", "gate"]), &WorkerOptions::default()).expect("worker starts")
}

fn request(args: &str) -> HandlerRequest {
    HandlerRequest {
        args: json(args),
        query: json(r#"{"limit": "2"}"#),
        body: json(r#"{"b": [1, 1.0, null, "é"]}"#),
        headers: json(r#"{"x-quota": "exhausted"}"#),
        operation: json(r#"{"name": "get_record", "method": "GET", "path": "/records/{id}", "entity": "records"}"#),
        context: Value::Null,
    }
}

/// A store of `records` keyed by `id`, answering ctx calls like the server would.
struct FakeHost {
    rows: Vec<Value>,
    calls: Vec<String>,
}

impl FakeHost {
    fn new() -> FakeHost {
        FakeHost {
            rows: vec![json(r#"{"id": "1", "name": "ada", "active": true}"#), json(r#"{"id": "2", "name": "bob", "active": false}"#)],
            calls: Vec::new(),
        }
    }

    fn position(&self, key: &Value) -> Option<usize> {
        let id = key.get("id")?;
        self.rows.iter().position(|row| row.get("id").map(canonical) == Some(canonical(id)))
    }
}

fn contract(code: &str, message: &str) -> CtxError {
    CtxError::Contract(object([
        ("code", Value::str(code)),
        ("message", Value::str(message)),
        ("schema_path", Value::str("")),
        ("path", Value::str("/records/1")),
    ]))
}

impl CtxHost for FakeHost {
    fn call(&mut self, method: &str, params: &Value) -> Result<Value, CtxError> {
        self.calls.push(method.to_string());
        if params.get("entity").and_then(Value::as_str) == Some("broken") {
            return Err(CtxError::Other("the store is unreachable".into()));
        }
        let param = |name: &str| params.get(name).cloned().unwrap_or_default();
        match method {
            "rows" => Ok(Value::Array(self.rows.clone())),
            "get" => Ok(self.position(&param("key")).map(|i| self.rows[i].clone()).unwrap_or_default()),
            "find" => {
                let fields = param("fields");
                let fields = fields.as_object().expect("fields object");
                let matching = self.rows.iter().filter(|row| {
                    fields.iter().all(|(name, wanted)| {
                        let have = row.get(name).map(gateway_world::json::python_str);
                        have.as_deref() == wanted.as_str()
                    })
                });
                Ok(Value::Array(matching.cloned().collect()))
            }
            "insert" => {
                let value = param("value");
                if self.position(&value).is_some() {
                    return Err(contract("unique", "A row with this key exists"));
                }
                self.rows.push(value.clone());
                Ok(value)
            }
            "update" => {
                let Some(i) = self.position(&param("key")) else {
                    return Err(contract("not_found", "No such row"));
                };
                let Value::Object(row) = &mut self.rows[i] else { unreachable!() };
                for (name, value) in param("patch").as_object().expect("patch object") {
                    row.insert(name.clone(), value.clone());
                }
                Ok(self.rows[i].clone())
            }
            "delete" => {
                let i = self.position(&param("key")).ok_or_else(|| contract("not_found", "No such row"))?;
                self.rows.remove(i);
                Ok(Value::Null)
            }
            "key_of" => Ok(object([("id", param("row").get("id").cloned().unwrap_or_default())])),
            "paged" => {
                let rows = param("rows");
                let limit: usize = param("query").get("limit").and_then(Value::as_str).unwrap_or("10").parse().unwrap();
                let items: Vec<Value> = rows.as_array().unwrap().iter().take(limit).cloned().collect();
                Ok(Value::Array(vec![
                    param("status"),
                    object([("data", Value::Array(items))]),
                    object([("X-Total-Count", Value::str(rows.as_array().unwrap().len().to_string()))]),
                ]))
            }
            "not_found" => Ok(json(r#"[404, {"error": "not_found"}]"#)),
            other => Err(CtxError::Other(format!("no ctx method {other}"))),
        }
    }
}

fn call(worker: &mut Worker, function: &str, host: &mut FakeHost) -> Result<HandlerOutcome, HandlerFailure> {
    worker.call(function, &request(r#"{"id": "1"}"#), host)
}

fn body(outcome: Result<HandlerOutcome, HandlerFailure>) -> String {
    match outcome {
        Ok(HandlerOutcome::Body(body)) => canonical(&body),
        other => panic!("expected a body, got {other:?}"),
    }
}

fn answer(outcome: Result<HandlerOutcome, HandlerFailure>) -> (i64, String, Option<Vec<(String, String)>>) {
    match outcome {
        Ok(HandlerOutcome::Answer { status, body, headers }) => (status, canonical(&body), headers),
        other => panic!("expected an answer, got {other:?}"),
    }
}

fn pairs(list: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    Some(list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

#[test]
fn worker_is_send() {
    fn send<T: Send>() {}
    send::<Worker>();
}

#[test]
fn plain_body_keeps_types_and_order() {
    let mut worker = worker();
    let outcome = call(&mut worker, "plain", &mut FakeHost::new());
    let Ok(HandlerOutcome::Body(value)) = outcome else { panic!("{outcome:?}") };
    assert_eq!(
        gateway_world::json::dumps(&value, gateway_world::json::DumpOptions::PRETTY).replace([' ', '\n'], ""),
        r#"{"args":{"id":"1"},"query":{"limit":"2"},"body":{"b":[1,1.0,null,"\u00e9"]},"op":"get_record","entity":"records"}"#
    );
}

#[test]
fn tuples_are_answers() {
    let mut worker = worker();
    let mut host = FakeHost::new();
    assert_eq!(answer(call(&mut worker, "pair", &mut host)), (201, r#"{"created":true,"ünï":"çødé"}"#.into(), None));
    assert_eq!(
        answer(call(&mut worker, "triple", &mut host)),
        (429, r#"{"title":"Too Many Requests"}"#.into(), pairs(&[("Retry-After", "60"), ("X-Quota", "exhausted")]))
    );
    assert_eq!(answer(call(&mut worker, "triple_none", &mut host)), (200, "[1,2.0,null]".into(), None));
    assert_eq!(answer(call(&mut worker, "gate", &mut host)).0, 429);
    // (True, "x") is not a status tuple: bool is refused as the original's _normalize does.
    assert_eq!(body(call(&mut worker, "not_a_status", &mut host)), r#"[true,"x"]"#);
}

#[test]
fn none_is_a_null_body() {
    let mut worker = worker();
    assert_eq!(body(call(&mut worker, "nothing", &mut FakeHost::new())), "null");
}

#[test]
fn headers_must_be_strings() {
    let mut worker = worker();
    match call(&mut worker, "bad_headers", &mut FakeHost::new()) {
        Err(HandlerFailure::Contract(detail)) => assert_eq!(
            canonical(&detail),
            r#"{"code":"handlers","message":"A handler's headers are a mapping of header names to strings","path":"","schema_path":"/api/handlers"}"#
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn store_round_trips() {
    let mut worker = worker();
    let mut host = FakeHost::new();
    let text = body(call(&mut worker, "store", &mut host));
    assert_eq!(host.calls, ["rows", "get", "update", "find", "get"]);
    assert_eq!(
        text,
        concat!(
            r#"{"again":{"active":true,"id":"1","name":"ADA"},"count":2,"#,
            r#""found":[{"active":true,"id":"1","name":"ADA"}],"updated":{"active":true,"id":"1","name":"ADA"}}"#
        )
    );
    assert_eq!(host.rows[0].get("name").and_then(Value::as_str), Some("ADA"));
    assert_eq!(answer(call(&mut worker, "missing_row", &mut host)), (404, r#"{"error":"not_found"}"#.into(), None));
    assert_eq!(
        answer(worker.call("shapes", &request("{}"), &mut host)),
        (
            200,
            r#"{"data":[{"active":true,"id":"1","name":"ADA"},{"active":false,"id":"2","name":"bob"}]}"#.into(),
            pairs(&[("X-Total-Count", "2")])
        )
    );
}

#[test]
fn contract_errors_can_be_caught_or_escape() {
    let mut worker = worker();
    let mut host = FakeHost::new();
    assert_eq!(
        answer(call(&mut worker, "catches", &mut host)),
        (409, r#"{"caught":"unique at /records/1: A row with this key exists","code":"unique"}"#.into(), None)
    );
    match call(&mut worker, "escapes", &mut host) {
        Err(HandlerFailure::Contract(detail)) => {
            assert_eq!(
                canonical(&detail),
                r#"{"code":"unique","message":"A row with this key exists","path":"/records/1","schema_path":""}"#
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(body(call(&mut worker, "host_fails", &mut host)), r#"{"runtime":"the store is unreachable"}"#);
}

#[test]
fn exceptions_are_reported_and_the_worker_goes_on() {
    let mut worker = worker();
    let mut host = FakeHost::new();
    match call(&mut worker, "raises", &mut host) {
        Err(HandlerFailure::Exception(text)) => assert_eq!(text, "ZeroDivisionError: division by zero"),
        other => panic!("{other:?}"),
    }
    assert!(worker.last_traceback().is_some_and(|t| t.contains("1 / 0")), "{:?}", worker.last_traceback());
    match call(&mut worker, "unserialisable", &mut host) {
        Err(HandlerFailure::Exception(text)) => assert!(text.starts_with("TypeError: Object of type set"), "{text}"),
        other => panic!("{other:?}"),
    }
    match call(&mut worker, "exits", &mut host) {
        Err(HandlerFailure::Exception(text)) => assert_eq!(text, "SystemExit: 3"),
        other => panic!("{other:?}"),
    }
    let pid = worker.pid();
    assert_eq!(body(call(&mut worker, "nothing", &mut host)), "null");
    assert_eq!(worker.pid(), pid, "same process");
}

#[test]
fn handler_output_does_not_break_the_protocol() {
    let mut worker = worker();
    assert_eq!(body(call(&mut worker, "noisy", &mut FakeHost::new())), r#"{"quiet":"from a sibling module"}"#);
    assert_eq!(body(call(&mut worker, "nothing", &mut FakeHost::new())), "null");
}

#[test]
fn missing_function_is_refused_at_start() {
    match Worker::start(&fixture("basic.py"), &names(&["plain", "absent", "also_absent"]), &WorkerOptions::default()) {
        Err(WorkerError::Missing(name)) => assert_eq!(name, "absent"),
        other => panic!("{other:?}"),
    }
    match Worker::start(&fixture("basic.py"), &names(&["not_callable"]), &WorkerOptions::default()) {
        Err(WorkerError::Missing(name)) => assert_eq!(name, "not_callable"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn import_error_is_refused_at_start() {
    match Worker::start(&fixture("broken.py"), &names(&["fine"]), &WorkerOptions::default()) {
        Err(WorkerError::Import(traceback)) => {
            assert!(traceback.contains("RuntimeError: this world's handlers do not import"), "{traceback}")
        }
        other => panic!("{other:?}"),
    }
    match Worker::start(&fixture("does_not_exist.py"), &[], &WorkerOptions::default()) {
        Err(WorkerError::Import(traceback)) => assert!(traceback.contains("FileNotFoundError"), "{traceback}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_dead_worker_is_restarted() {
    let mut worker = worker();
    let mut host = FakeHost::new();
    // Confined, the handler sees its own PID namespace: the worker's pid is the host's view.
    assert!(matches!(call(&mut worker, "pid", &mut host), Ok(HandlerOutcome::Body(Value::Int(_)))));
    let first = worker.pid().expect("a running worker");
    match call(&mut worker, "dies", &mut host) {
        Err(HandlerFailure::WorkerDied(why)) => assert!(why.contains("exit status: 7"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(worker.pid(), None);
    assert!(matches!(call(&mut worker, "pid", &mut host), Ok(HandlerOutcome::Body(Value::Int(_)))));
    let second = worker.pid().expect("a restarted worker");
    assert_ne!(first, second);
    assert_eq!(answer(call(&mut worker, "pair", &mut host)).0, 201);
}

#[test]
fn frozen_clock_and_ladder() {
    let mut worker = worker();
    let outcome = worker.call("clock", &request(r#"{"clock": "1767225600"}"#), &mut FakeHost::new());
    assert_eq!(
        body(outcome),
        concat!(
            r#"{"clock":1767225600.0,"elapsed":10.0,"ladder":["drafted","drafted","queued","queued","started","completed","drafted"],"#,
            r#""never":Infinity,"now":"2026-01-01T00:00:00Z","uuid":36}"#
        )
    );
}

#[test]
fn round_trip_cost() {
    let mut worker = worker();
    let mut host = FakeHost::new();
    let request = request(r#"{"id": "1"}"#);
    for _ in 0..50 {
        worker.call("trivial", &request, &mut host).expect("warm up");
    }
    let calls = 2_000;
    let started = Instant::now();
    for _ in 0..calls {
        worker.call("trivial", &request, &mut host).expect("trivial call");
    }
    let per_call = started.elapsed() / calls;
    let started = Instant::now();
    for _ in 0..calls {
        worker.call("missing_row", &request, &mut host).expect("two ctx calls");
    }
    let with_ctx = started.elapsed() / calls;
    eprintln!("handler round trip: {per_call:?} per trivial call, {with_ctx:?} per call making 2 ctx calls");
}

#[test]
fn a_call_past_its_deadline_times_out_and_the_worker_is_replaced() {
    let options = WorkerOptions { deadline: std::time::Duration::from_millis(700), ..WorkerOptions::default() };
    let mut worker = Worker::start(&fixture("basic.py"), &names(&["plain", "loops"]), &options).expect("worker starts");
    let mut host = FakeHost::new();
    let first = worker.pid().expect("running");
    let started = Instant::now();
    match call(&mut worker, "loops", &mut host) {
        Err(HandlerFailure::TimedOut(limit)) => assert_eq!(limit, options.deadline),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() >= options.deadline, "answered before the deadline");
    assert_eq!(worker.pid(), None, "the looping worker was killed");
    assert!(!std::path::Path::new(&format!("/proc/{first}")).exists(), "the killed worker is reaped");
    // The next call gets a fresh worker and an answer.
    assert_eq!(body(call(&mut worker, "plain", &mut host)), body(call(&mut worker, "plain", &mut host)));
    assert!(worker.pid().is_some_and(|pid| pid != first));
}

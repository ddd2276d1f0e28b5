//! The World Host end to end on loopback: a real listener on port 0, the
//! control plane driven with its secret, the data plane by Host header and by
//! path, on a copy of the bundled helpdesk example.

mod common;

use gateway_host::server::{self, ServerConfig};
use gateway_host::{HostConfig, WorldHost};
use gateway_test_support::copy_tree;
use gateway_world::json::{self, Value};
use std::path::Path;
use std::sync::Arc;

const SECRET: &str = "host-secret";

struct Running {
    addr: std::net::SocketAddr,
    _runtime: tokio::runtime::Runtime,
    _root: tempfile::TempDir,
    world: std::path::PathBuf,
}

fn start(max_sessions: usize) -> Running {
    let root = tempfile::tempdir().unwrap();
    let world = root.path().join("helpdesk-src");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    let mut config = HostConfig::local(root.path().join("host"));
    config.max_sessions = max_sessions;
    let host = Arc::new(WorldHost::new(config));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServerConfig { secret: SECRET.into(), domain: "worlds.test".into() };
    runtime.spawn(server::run(host, config, listener, std::future::pending()));
    Running { addr, _runtime: runtime, _root: root, world }
}

/// One HTTP/1.1 exchange; (status, body as JSON or a string).
fn http(addr: std::net::SocketAddr, method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let (status, _, body) = gateway_test_support::http_exchange(addr, method, target, headers, body);
    let body = json::parse(&body).map(|p| p.value).unwrap_or_else(|_| Value::str(&body));
    (status, body)
}

fn control(running: &Running, method: &str, path: &str, body: &str) -> (u16, Value) {
    http(running.addr, method, path, &[("X-Host-Secret", SECRET), ("Content-Type", "application/json")], body)
}

fn open_body(running: &Running, sid: &str, task: &str) -> String {
    format!(
        r#"{{"sessionId": "{sid}", "versionId": "v1", "bundleUrl": "file://{}", "token": "tok-{sid}", {task}}}"#,
        running.world.display()
    )
}

/// A grade's original members as canonical JSON: the check reports (`checks`) and
/// the state diff (`diff`), ours, left out.
fn graded(grade: &Value) -> String {
    json::canonical(&common::original_grade(grade))
}

/// The canonical JSON text of the member at a dotted path (`null` when absent).
fn get(value: &Value, path: &str) -> String {
    json::canonical(path.split('.').fold(value, |v, k| v.get(k).unwrap_or(&Value::Null)))
}

#[test]
fn a_session_opens_answers_resets_grades_exports_and_closes() {
    let running = start(10);
    assert_eq!(control(&running, "GET", "/__host/stats", "").0, 200);
    assert_eq!(http(running.addr, "GET", "/__host/stats", &[], "").0, 403, "the control plane needs the secret");

    let spec = r#""taskSpec": {"instruction": "Solve ticket 101.", "name": "solve-101",
        "seed": {"rows": {"customers": [{"id": "C9", "name": "Zed", "email": "zed@example.com", "tier": "free", "created_at": "2026-03-01T00:00:00Z"}]}},
        "grader": {"kind": "assertions", "checks": [
            {"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"},
            {"entity": "customers", "where": {"id": "C9"}}]},
        "tools": ["get_ticket", "solve_ticket", "list_tickets"]}"#;
    let (status, opened) = control(&running, "POST", "/__host/sessions", &open_body(&running, "s1", spec));
    assert_eq!(status, 200, "{opened:?}");
    assert_eq!(get(&opened, "taskSource"), r#""inline""#);
    assert_eq!(get(&opened, "taskName"), r#""solve-101""#);
    assert_eq!(get(&opened, "ready"), "true");

    // A retry of the same open is the same session; a different one is refused.
    let (status, again) = control(&running, "POST", "/__host/sessions", &open_body(&running, "s1", spec));
    assert_eq!((status, get(&again, "openedAt")), (200, get(&opened, "openedAt")));
    let (status, refused) = control(&running, "POST", "/__host/sessions", &open_body(&running, "s1", r#""task": "backlog""#));
    assert_eq!(status, 400, "{refused:?}");

    // The task's seed is there, its grade starts below the bar.
    let (_, grade) = control(&running, "POST", "/__host/sessions/s1/grade", "");
    assert_eq!(graded(&grade), r#"{"reward":0.5,"rewards":{"check_1":1.0,"solved":0.0}}"#);
    // The failed check says what it saw; nothing changed since the start (the seed is the start).
    assert_eq!(
        get(&grade, "checks"),
        concat!(
            r#"[{"actual":"1 of 1 row failed: 101 status \"open\"","description":"every tickets row where {\"id\": 101} has status eq \"solved\" (and there is one)","#,
            r#""expected":"status eq \"solved\"","id":"solved","passed":false,"rowCount":1,"rows":[{"field":"status","key":"101","value":"open"}]},"#,
            r#"{"actual":"1 row: keys [\"C9\"]","description":"a customers row where {\"id\": \"C9\"} exists","expected":"at least 1 row","id":"check_1","passed":true,"#,
            r#""rowCount":1,"rows":[{"key":"C9","row":{"created_at":"2026-03-01T00:00:00Z","email":"zed@example.com","id":"C9","name":"Zed","tier":"free"}}]}]"#
        )
    );
    assert_eq!(get(&grade, "diff.counts"), r#"{"added":0,"changed":0,"removed":0}"#);

    // The data plane: by Host header and by path; the token gates it.
    let api = [("Host", "w-s1-api.worlds.test"), ("Authorization", "Bearer tok-s1")];
    let (status, ticket) = http(running.addr, "GET", "/api/v2/tickets/101", &api, "");
    assert_eq!((status, get(&ticket, "id").as_str()), (200, "101"), "{ticket:?}");
    let (status, _) = http(running.addr, "GET", "/s/s1/api/v2/tickets/101", &[("Authorization", "Bearer tok-s1")], "");
    assert_eq!(status, 200);
    let (status, denied) =
        http(running.addr, "GET", "/api/v2/tickets/101", &[("Host", "w-s1-api.worlds.test"), ("Authorization", "Bearer nope")], "");
    // A wrong token is refused as the world refuses one (its `[api] unauthorized`).
    assert_eq!((status, json::canonical(&denied).as_str()), (401, r#"{"error":"unauthorized"}"#));
    let (status, _) = http(running.addr, "GET", "/api/v2/tickets/101", &[("Host", "w-nobody-api.worlds.test")], "");
    assert_eq!(status, 404);

    // A tool call through the control plane; one outside the task's tools is refused.
    let (status, called) =
        control(&running, "POST", "/__host/sessions/s1/call", r#"{"tool": "solve_ticket", "args": {"path": {"id": 101}}}"#);
    assert_eq!((status, get(&called, "status").as_str()), (200, "200"), "{called:?}");
    let (status, refused) =
        control(&running, "POST", "/__host/sessions/s1/call", r#"{"tool": "delete_ticket", "args": {"path": {"id": 101}}}"#);
    assert_eq!((status, get(&refused, "error").as_str()), (400, r#""tool_not_allowed""#), "{refused:?}");

    let (_, grade) = control(&running, "POST", "/__host/sessions/s1/grade", "");
    assert_eq!(graded(&grade), r#"{"reward":1.0,"rewards":{"check_1":1.0,"solved":1.0}}"#);
    assert_eq!(get(&grade, "diff.counts"), r#"{"added":0,"changed":1,"removed":0}"#);
    assert_eq!(get(&grade, "diff.entities.tickets.changed"), r#"[{"fields":{"status":{"after":"solved","before":"open"}},"key":"101"}]"#);

    // Export, then reset: back to the task's start (seed re-applied), the export unchanged-aware.
    let (status, export) = control(&running, "POST", "/__host/sessions/s1/export", "{}");
    assert_eq!(status, 200, "{export:?}");
    let sha = get(&export, "sha256").trim_matches('"').to_string();
    let (_, same) = control(&running, "POST", "/__host/sessions/s1/export", &format!(r#"{{"knownSha256": "{sha}"}}"#));
    assert_eq!(get(&same, "unchanged"), "true");
    let (status, _) = control(&running, "POST", "/__host/sessions/s1/reset", "");
    assert_eq!(status, 200);
    let (_, state) = control(&running, "GET", "/__host/sessions/s1/state", "");
    assert_eq!(get(&state, "tickets.101.status"), r#""open""#);
    assert!(get(&state, "customers.C9").starts_with('{'), "the task seed is re-applied on reset");

    // Seed onto the live state.
    let (status, seeded) = control(
        &running,
        "POST",
        "/__host/sessions/s1/seed",
        r#"{"args": {"rows": {"customers": [{"id": "C10", "name": "Y", "email": "y@example.com", "tier": "free", "created_at": "2026-03-01T00:00:00Z"}]}}}"#,
    );
    assert_eq!(status, 200, "{seeded:?}");
    assert_eq!(get(&seeded, "seeded"), "1");

    // Close; the session is gone from both planes.
    let (status, closed) = control(&running, "DELETE", "/__host/sessions/s1", "");
    assert_eq!((status, get(&closed, "closed").as_str()), (200, "true"));
    let (status, gone) = control(&running, "POST", "/__host/sessions/s1/grade", "");
    assert_eq!((status, get(&gone, "error").as_str()), (404, r#""unknown_session""#));
    assert_eq!(http(running.addr, "GET", "/api/v2/tickets/101", &api, "").0, 404);
}

#[test]
fn sessions_are_isolated_capacity_is_held_and_bad_specs_are_refused() {
    let running = start(2);
    for sid in ["a", "b"] {
        let (status, answer) = control(&running, "POST", "/__host/sessions", &open_body(&running, sid, r#""task": "backlog""#));
        assert_eq!(status, 200, "{answer:?}");
    }
    let (status, full) = control(&running, "POST", "/__host/sessions", &open_body(&running, "c", r#""task": "backlog""#));
    assert_eq!((status, get(&full, "error").as_str()), (503, r#""at_capacity""#));

    // A write in one session is not seen in the other.
    let (status, _) = http(running.addr, "DELETE", "/s/a/api/v2/tickets/101", &[("Authorization", "Bearer tok-a")], "");
    assert_eq!(status, 204);
    assert_eq!(http(running.addr, "GET", "/s/a/api/v2/tickets/101", &[("Authorization", "Bearer tok-a")], "").0, 404);
    assert_eq!(http(running.addr, "GET", "/s/b/api/v2/tickets/101", &[("Authorization", "Bearer tok-b")], "").0, 200);
    // Session a's token does not open session b.
    assert_eq!(http(running.addr, "GET", "/s/b/api/v2/tickets/101", &[("Authorization", "Bearer tok-a")], "").0, 401);

    control(&running, "DELETE", "/__host/sessions/b", "");
    let cases = [
        (r#""taskSpec": {"instruction": ""}"#, "task"),
        (r#""taskSpec": {"instruction": "x", "bogus": 1}"#, "task"),
        (r#""taskSpec": {"instruction": "x", "grader": {"kind": "assertions", "checks": [{"entity": "ghosts"}]}}"#, "task"),
        (r#""taskSpec": {"instruction": "x", "tools": ["no_such_tool"]}"#, "task"),
        (r#""task": "no-such-scenario""#, "host"),
        (r#""task": "backlog", "taskSpec": {"instruction": "x"}"#, "host"),
    ];
    for (task, code) in cases {
        let (status, refused) = control(&running, "POST", "/__host/sessions", &open_body(&running, "bad", task));
        assert_eq!((status, get(&refused, "error")), (400, format!("\"{code}\"")), "{task}: {refused:?}");
    }
    let (status, missing) = control(&running, "POST", "/__host/sessions", r#"{"versionId": "v1"}"#);
    assert_eq!((status, get(&missing, "error").as_str()), (400, r#""missing field""#));
    let (status, _) = control(&running, "POST", "/__host/sessions", "[[[");
    assert_eq!(status, 400);
    // The host still serves after every refusal.
    assert_eq!(control(&running, "GET", "/__host/stats", "").0, 200);
}

#[test]
fn python_graders_run_confined_and_a_crash_is_an_error_not_a_dead_session() {
    let running = start(4);
    let spec = r#""taskSpec": {"instruction": "x", "grader": {"kind": "python", "source": "import json, sys\nstate = json.load(sys.stdin)\nprint(json.dumps({'reward': len(state['tickets']) / 10, 'seen': 1}))\n"}}"#;
    let (status, opened) = control(&running, "POST", "/__host/sessions", &open_body(&running, "p", spec));
    assert_eq!(status, 200, "{opened:?}");
    let (status, grade) = control(&running, "POST", "/__host/sessions/p/grade", "");
    assert_eq!(status, 200, "{grade:?}");
    assert!(get(&grade, "reward").contains('.'), "{grade:?}");
    assert_eq!(get(&grade, "rewards.seen"), "1.0");

    let crash = r#""taskSpec": {"instruction": "x", "grader": {"kind": "python", "source": "raise SystemExit(3)"}}"#;
    control(&running, "POST", "/__host/sessions", &open_body(&running, "q", crash));
    let (status, failed) = control(&running, "POST", "/__host/sessions/q/grade", "");
    assert_eq!((status, get(&failed, "error").as_str()), (400, r#""host""#), "{failed:?}");
    assert_eq!(control(&running, "GET", "/__host/sessions/q/state", "").0, 200, "the session lives on");

    let rubric = r#""taskSpec": {"instruction": "x", "grader": {"kind": "rubric", "rubric": "Be kind."}}"#;
    control(&running, "POST", "/__host/sessions", &open_body(&running, "r", rubric));
    let (_, pending) = control(&running, "POST", "/__host/sessions/r/grade", "");
    assert_eq!(graded(&pending), r#"{"grader":"rubric","pending":true,"reward":null,"rewards":{}}"#);
}

#[test]
fn frozen_clock_seeded_faults_and_the_collateral_check() {
    let running = start(6);
    let spec = r#""taskSpec": {"instruction": "Solve 101 and nothing else.",
        "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]},
        "metadata": {"clock": "2026-06-01T12:00:00Z", "seed": 42, "collateral": {"allow": {"tickets": [101]}},
                     "faults": [{"operation": "get_ticket", "status": 503, "probability": 1.0}]}}"#;
    for sid in ["f1", "f2"] {
        let (status, opened) = control(&running, "POST", "/__host/sessions", &open_body(&running, sid, spec));
        assert_eq!(status, 200, "{opened:?}");
    }
    // The same create in two sessions gives the same row: the clock is frozen.
    let body = r#"{"customer_id": "C3", "subject": "Same everywhere"}"#;
    let created: Vec<String> = ["f1", "f2"]
        .iter()
        .map(|sid| {
            let token = format!("Bearer tok-{sid}");
            let (status, row) = http(running.addr, "POST", &format!("/s/{sid}/api/v2/tickets"), &[("Authorization", token.as_str())], body);
            assert_eq!(status, 201, "{row:?}");
            json::canonical(&row)
        })
        .collect();
    assert_eq!(created[0], created[1]);
    assert!(created[0].contains(r#""opened_at":"2026-06-01T12:00:00Z""#), "{}", created[0]);

    // Faults: the data plane and tool calls of get_ticket answer 503, others do not.
    let (status, _) = http(running.addr, "GET", "/s/f1/api/v2/tickets/101", &[("Authorization", "Bearer tok-f1")], "");
    assert_eq!(status, 503);
    let (_, called) = control(&running, "POST", "/__host/sessions/f1/call", r#"{"tool": "get_ticket", "args": {"path": {"id": 101}}}"#);
    assert_eq!((get(&called, "status"), get(&called, "fault")), ("503".to_string(), "true".to_string()));
    let (status, _) = http(running.addr, "GET", "/s/f1/api/v2/tickets", &[("Authorization", "Bearer tok-f1")], "");
    assert_eq!(status, 200);
    let (status, configured) = control(&running, "POST", "/__host/sessions/f1/configure", r#"{"faults": []}"#);
    assert_eq!((status, get(&configured, "faults")), (200, "[]".to_string()));
    assert_eq!(http(running.addr, "GET", "/s/f1/api/v2/tickets/101", &[("Authorization", "Bearer tok-f1")], "").0, 200);

    // Collateral: solving 101 is allowed; the ticket created above is damage.
    control(&running, "POST", "/__host/sessions/f1/call", r#"{"tool": "solve_ticket", "args": {"path": {"id": 101}}}"#);
    let (_, graded) = control(&running, "POST", "/__host/sessions/f1/grade", "");
    assert_eq!(self::graded(&graded), r#"{"reward":0.5,"rewards":{"collateral":0.0,"solved":1.0}}"#);
    control(&running, "POST", "/__host/sessions/f1/reset", "");
    control(&running, "POST", "/__host/sessions/f1/configure", r#"{"faults": null}"#);
    control(&running, "POST", "/__host/sessions/f1/call", r#"{"tool": "solve_ticket", "args": {"path": {"id": 101}}}"#);
    let (_, graded) = control(&running, "POST", "/__host/sessions/f1/grade", "");
    assert_eq!(self::graded(&graded), r#"{"reward":1.0,"rewards":{"collateral":1.0,"solved":1.0}}"#);
    let (status, refused) = control(&running, "POST", "/__host/sessions/f1/configure", r#"{"clock": "soon"}"#);
    assert_eq!(status, 400, "{refused:?}");
}

/// The world's own tools (`x-gateway.tools` + `tools/handlers.py`) as session
/// calls: input and output checked against the contract, a store write inside the
/// call's transaction, a refused call rolled back, the task's allow-list applied.
#[test]
fn the_worlds_own_tools_are_callable_in_a_session() {
    let running = start(4);
    // Rename the connector's operations so the world's tools are reached by name.
    let connector = running.world.join("connector.toml");
    let text = std::fs::read_to_string(&connector).unwrap();
    let renamed = text
        .replace("name = \"get_ticket\"", "name = \"api_get_ticket\"")
        .replace("name = \"list_tickets\"", "name = \"api_list_tickets\"")
        .replace("name = \"solve_ticket\"", "name = \"api_solve_ticket\"");
    std::fs::write(&connector, renamed).unwrap();
    // A handler that raises after it wrote: the write must not survive.
    let handlers = running.world.join("tools/handlers.py");
    let source = std::fs::read_to_string(&handlers).unwrap().replace(
        "    return store.update(\"tickets\", {\"id\": id}, {\"status\": \"solved\"})",
        "    row = store.update(\"tickets\", {\"id\": id}, {\"status\": \"solved\"})\n    if id == 103:\n        raise RuntimeError(\"boom after write\")\n    return row",
    );
    assert!(source.contains("boom after write"));
    std::fs::write(&handlers, source).unwrap();
    let spec = r#""taskSpec": {"instruction": "x", "tools": ["get_ticket", "solve_ticket", "list_tickets"]}"#;
    let (status, opened) = control(&running, "POST", "/__host/sessions", &open_body(&running, "t", spec));
    assert_eq!(status, 200, "{opened:?}");
    let (status, got) = control(&running, "POST", "/__host/sessions/t/call", r#"{"tool": "get_ticket", "args": {"id": 101}}"#);
    assert_eq!((status, get(&got, "status"), get(&got, "body.id")), (200, "200".into(), "101".into()), "{got:?}");
    let (_, solved) = control(&running, "POST", "/__host/sessions/t/call", r#"{"tool": "solve_ticket", "args": {"id": 102}}"#);
    assert_eq!(get(&solved, "body.status"), r#""solved""#, "{solved:?}");
    let (_, state) = control(&running, "GET", "/__host/sessions/t/state", "");
    assert_eq!(get(&state, "tickets.102.status"), r#""solved""#, "the tool's write is committed");
    let (status, refused) =
        control(&running, "POST", "/__host/sessions/t/call", r#"{"tool": "get_ticket", "args": {"id": 101, "bogus": 1}}"#);
    assert_eq!((status, get(&refused, "error")), (400, r#""additionalProperties""#.into()), "{refused:?}");
    let (_, listed) = control(&running, "POST", "/__host/sessions/t/call", r#"{"tool": "list_tickets", "args": {"status": "solved"}}"#);
    assert!(get(&listed, "body").contains("102"), "{listed:?}");
    // A handler that raises: 500 with the message, and nothing it wrote stays.
    let (status, raised) = control(&running, "POST", "/__host/sessions/t/call", r#"{"tool": "solve_ticket", "args": {"id": 103}}"#);
    assert_eq!(
        (status, get(&raised, "status"), get(&raised, "body.error")),
        (200, "500".into(), r#""boom after write""#.into()),
        "{raised:?}"
    );
    let (_, state) = control(&running, "GET", "/__host/sessions/t/state", "");
    assert_eq!(get(&state, "tickets.103.status"), r#""open""#, "the raising call rolled back");
    let (status, missing) = control(&running, "POST", "/__host/sessions/t/call", r#"{"tool": "solve_ticket", "args": {"id": 999}}"#);
    assert_eq!(status, 400, "updating a missing row is a store refusal: {missing:?}");
    assert_eq!(control(&running, "GET", "/__host/sessions/t/state", "").0, 200);
}

#[test]
fn a_task_self_test_grades_the_untouched_world_and_replays_its_solution() {
    let root = tempfile::tempdir().unwrap();
    let world = root.path().join("w");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    let host = WorldHost::new(HostConfig::local(root.path().join("host")));
    let url = format!("file://{}", world.display());
    let parsed = |text: &str| std::sync::Arc::new(gateway_world::task::TaskSpec::parse(&json::parse(text).unwrap().value).unwrap());
    let spec = |solution: &str| {
        parsed(&format!(
            r#"{{"instruction": "Solve 101.", "grader": {{"kind": "assertions", "checks": [{{"entity": "tickets", "where": {{"id": 101}}, "assert": "all", "field": "status", "value": "solved"}}]}},
                "metadata": {{"solution": {solution}}}}}"#
        ))
    };
    let good = gateway_host::selftest::self_test(&host, "v1", &url, &spec(r#"[{"tool": "solve_ticket", "args": {"path": {"id": 101}}}]"#))
        .unwrap();
    assert_eq!(get(&good, "ok"), "true", "{good:?}");
    assert_eq!((get(&good, "noop.reward"), get(&good, "solution.reward")), ("0.0".into(), "1.0".into()));
    let wrong = gateway_host::selftest::self_test(&host, "v1", &url, &spec(r#"[{"tool": "solve_ticket", "args": {"path": {"id": 102}}}]"#))
        .unwrap();
    assert_eq!(get(&wrong, "ok"), "false");
    assert!(get(&wrong, "problems").contains("below the pass bar"), "{wrong:?}");
    let trivial =
        parsed(r#"{"instruction": "x", "grader": {"kind": "assertions", "checks": [{"entity": "tickets", "where": {"id": 101}}]}}"#);
    let passed_by_noop = gateway_host::selftest::self_test(&host, "v1", &url, &trivial).unwrap();
    assert!(get(&passed_by_noop, "problems").contains("does nothing"), "{passed_by_noop:?}");
    assert_eq!(host.session_count(), 0, "the self-test's sessions are closed");
}

/// A session's state moves: export, upload (here to a file:// URL), and a new
/// session opened with `restore` continues from it; a wrong digest is refused.
#[test]
fn an_exported_session_is_restored_elsewhere() {
    let running = start(4);
    control(&running, "POST", "/__host/sessions", &open_body(&running, "e1", r#""task": "backlog""#));
    let (status, _) = http(running.addr, "DELETE", "/s/e1/api/v2/tickets/101", &[("Authorization", "Bearer tok-e1")], "");
    assert_eq!(status, 204);
    let (_, export) = control(&running, "POST", "/__host/sessions/e1/export", "{}");
    let (id, sha) = (get(&export, "exportId"), get(&export, "sha256"));
    let (id, sha) = (id.trim_matches('"'), sha.trim_matches('"'));
    let target = running.world.parent().unwrap().join("moved.sqlite");
    let (status, uploaded) =
        control(&running, "POST", &format!("/__host/sessions/e1/export/{id}"), &format!(r#"{{"url": "file://{}"}}"#, target.display()));
    assert_eq!((status, get(&uploaded, "uploaded")), (200, "true".into()), "{uploaded:?}");
    let restore = format!(r#""task": "backlog", "restore": {{"url": "file://{}", "sha256": "{sha}"}}"#, target.display());
    let (status, opened) = control(&running, "POST", "/__host/sessions", &open_body(&running, "e2", &restore));
    assert_eq!((status, get(&opened, "restored")), (200, "true".into()), "{opened:?}");
    assert_eq!(
        http(running.addr, "GET", "/s/e2/api/v2/tickets/101", &[("Authorization", "Bearer tok-e2")], "").0,
        404,
        "the deletion moved"
    );
    assert_eq!(http(running.addr, "GET", "/s/e2/api/v2/tickets/102", &[("Authorization", "Bearer tok-e2")], "").0, 200);
    let wrong = format!(r#""task": "backlog", "restore": {{"url": "file://{}", "sha256": "{}"}}"#, target.display(), "0".repeat(64));
    let (status, refused) = control(&running, "POST", "/__host/sessions", &open_body(&running, "e3", &wrong));
    assert_eq!(status, 400, "{refused:?}");
    assert!(!get(&refused, "detail").contains("e3 is already"), "{refused:?}");
}

/// The host grades assertions over only the rows their `where` can select (a SQL
/// prefilter); every edge case of the grader's equality must come out as it does
/// over the whole state.
#[test]
fn assertions_over_prefiltered_rows_grade_as_over_the_whole_state() {
    let running = start(4);
    let checks = r#"[
        {"id": "int_key", "entity": "tickets", "where": {"id": 101}},
        {"id": "float_key", "entity": "tickets", "where": {"id": 101.0}},
        {"id": "string_for_int", "entity": "tickets", "where": {"id": "101"}},
        {"id": "bool_for_int", "entity": "tickets", "where": {"priority": true}},
        {"id": "one_for_int", "entity": "tickets", "where": {"priority": 1}, "assert": "count", "count": {"gte": 1}},
        {"id": "by_status", "entity": "tickets", "where": {"status": "open"}, "assert": "count", "count": {"gte": 2}},
        {"id": "by_status_fails", "entity": "tickets", "where": {"status": "open"}, "assert": "count", "count": {"eq": 99}},
        {"id": "two_fields", "entity": "tickets", "where": {"status": "open", "customer_id": "C1"}, "assert": "all", "field": "priority", "op": "lte", "value": 3},
        {"id": "null_field", "entity": "customers", "where": {"tier": null}, "assert": "absent"},
        {"id": "missing_field", "entity": "customers", "where": {"nickname": "x"}, "assert": "absent"},
        {"id": "dotted", "entity": "tickets", "where": {"subject.text": "x"}, "assert": "absent"},
        {"id": "list_field", "entity": "tickets", "where": {"tags": "sso"}, "assert": "absent"},
        {"id": "no_where", "entity": "customers", "assert": "any", "field": "tier", "op": "eq", "value": "enterprise"},
        {"id": "contains", "entity": "tickets", "where": {"id": 101}, "assert": "any", "field": "tags", "op": "contains", "value": "sso"},
        {"id": "case", "entity": "customers", "where": {"id": "c1"}, "assert": "absent"},
        {"id": "loose_case", "entity": "customers", "where": {"id": "c1"}, "tolerance": {"case_insensitive": true}},
        {"id": "loose_number", "entity": "tickets", "where": {"priority": 1.2}, "tolerance": {"numeric": 0.5}, "assert": "count", "count": {"eq": 1}}
    ]"#;
    let spec = format!(r#""taskSpec": {{"instruction": "x", "grader": {{"kind": "assertions", "checks": {checks}}}}}"#);
    let (status, opened) = control(&running, "POST", "/__host/sessions", &open_body(&running, "g", &spec));
    assert_eq!(status, 200, "{opened:?}");
    let (status, graded) = control(&running, "POST", "/__host/sessions/g/grade", "");
    assert_eq!(status, 200, "{graded:?}");
    let (_, state) = control(&running, "GET", "/__host/sessions/g/state", "");
    let parsed = gateway_world::task::TaskSpec::parse(json::parse(&format!("{{{spec}}}")).unwrap().value.get("taskSpec").unwrap()).unwrap();
    let whole = gateway_world::task::grade(&parsed, &state, &Default::default()).unwrap();
    let mut prefiltered = graded.as_object().unwrap().clone();
    assert!(prefiltered.shift_remove("diff").is_some(), "{graded:?}");
    // A count the serving index answered (and passed) reports the same verdict and
    // count, no rows; a failing one reads its rows and reports them as the whole would.
    let reports = |grade: &Value| grade.get("checks").and_then(Value::as_array).cloned().unwrap_or_default();
    let (ours, theirs) = (reports(&Value::Object(prefiltered.clone())), reports(&whole));
    assert_eq!(ours.len(), theirs.len());
    let mut by_index = 0;
    for (ours, theirs) in ours.iter().zip(&theirs) {
        if ours.get("actual").and_then(Value::as_str).is_some_and(|a| a.ends_with("(counted by the serving index)")) {
            by_index += 1;
            for member in ["id", "passed", "rowCount", "description", "expected"] {
                assert_eq!(ours.get(member).map(json::canonical), theirs.get(member).map(json::canonical), "{member}: {ours:?}");
            }
        } else {
            assert_eq!(json::canonical(ours), json::canonical(theirs));
        }
    }
    assert_eq!(by_index, 1, "by_status is counted by the index, by_status_fails explains itself: {ours:?}");
    prefiltered.shift_remove("checks");
    let mut whole_members = whole.as_object().unwrap().clone();
    whole_members.shift_remove("checks");
    assert_eq!(json::canonical(&Value::Object(prefiltered)), json::canonical(&Value::Object(whole_members)));
    // Not vacuous: some checks pass and some fail.
    let rewards = json::canonical(&graded);
    assert!(rewards.contains(r#""int_key":1.0"#) && rewards.contains(r#""string_for_int":0.0"#), "{rewards}");
    assert!(
        rewards.contains(r#""loose_case":1.0"#) && rewards.contains(r#""loose_number":1.0"#),
        "a tolerance reads past the prefilter: {rewards}"
    );
}

/// Beyond the original: `POST /__host/sessions/{sid}/fork` copies a live session's
/// state into a new session with its own token, lease and directory, the same task,
/// tools and behaviour, and the seeded sequences where the parent had them.
#[test]
fn a_forked_session_starts_from_the_parents_state_and_then_lives_its_own_life() {
    let running = start(3);
    let spec = r#""taskSpec": {"instruction": "Solve ticket 101.", "name": "solve-101",
        "seed": {"rows": {"customers": [{"id": "C9", "name": "Zed", "email": "zed@example.com", "tier": "free", "created_at": "2026-03-01T00:00:00Z"}]}},
        "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]},
        "tools": ["get_ticket", "solve_ticket", "create_ticket", "list_customers"],
        "metadata": {"clock": "2026-06-01T12:00:00Z", "seed": 7, "faults": [{"operation": "list_customers", "status": 503, "probability": 0.5}]}}"#;
    let (status, opened) = control(&running, "POST", "/__host/sessions", &open_body(&running, "p", spec));
    assert_eq!(status, 200, "{opened:?}");
    assert_eq!(get(&opened, "forkedFrom"), "null");
    let auth = |sid: &str| format!("Bearer tok-{sid}");
    let faults = |sid: &str, n: usize| -> Vec<u16> {
        let token = auth(sid);
        (0..n)
            .map(|_| http(running.addr, "GET", &format!("/s/{sid}/api/v2/customers"), &[("Authorization", token.as_str())], "").0)
            .collect()
    };
    faults("p", 5);
    control(&running, "POST", "/__host/sessions/p/call", r#"{"tool": "solve_ticket", "args": {"path": {"id": 101}}}"#);

    let (status, forked) = control(&running, "POST", "/__host/sessions/p/fork", r#"{"sessionId": "f", "token": "tok-f"}"#);
    assert_eq!(status, 200, "{forked:?}");
    assert_eq!(
        (get(&forked, "forkedFrom"), get(&forked, "taskName"), get(&forked, "tools")),
        (
            r#""p""#.to_string(),
            r#""solve-101""#.to_string(),
            r#"["get_ticket","solve_ticket","create_ticket","list_customers"]"#.to_string()
        )
    );
    // A retry of the same fork is that fork; another session by its id is refused.
    let (status, again) = control(&running, "POST", "/__host/sessions/p/fork", r#"{"sessionId": "f", "token": "tok-f"}"#);
    assert_eq!((status, get(&again, "openedAt")), (200, get(&forked, "openedAt")));
    let (status, _) = control(&running, "POST", "/__host/sessions/p/fork", r#"{"sessionId": "f", "token": "other"}"#);
    assert_eq!(status, 400);

    // The fork holds the parent's write, and grades its own state.
    let (_, state) = control(&running, "GET", "/__host/sessions/f/state", "");
    assert_eq!((get(&state, "tickets.101.status"), get(&state, "customers.C9.name")), (r#""solved""#.into(), r#""Zed""#.into()));
    let (_, graded) = control(&running, "POST", "/__host/sessions/f/grade", "");
    assert_eq!(get(&graded, "reward"), "1.0");

    // The seeded fault draws go on from where the parent was, in both.
    let (after_parent, after_fork) = (faults("p", 12), faults("f", 12));
    assert_eq!(after_parent, after_fork);
    assert!(after_parent.contains(&503) && after_parent.contains(&200), "{after_parent:?}");

    // Each token opens its own session only.
    for (sid, token, status) in [("f", "p", 401), ("p", "f", 401), ("f", "f", 200)] {
        let got = http(running.addr, "GET", &format!("/s/{sid}/api/v2/tickets/102"), &[("Authorization", auth(token).as_str())], "").0;
        assert_eq!(got, status, "{token}'s token on {sid}");
    }

    // Writes after the fork stay where they were made; the frozen clock is kept.
    let (status, created) = http(
        running.addr,
        "POST",
        "/s/f/api/v2/tickets",
        &[("Authorization", auth("f").as_str())],
        r#"{"customer_id": "C3", "subject": "Fork only"}"#,
    );
    assert_eq!(status, 201, "{created:?}");
    assert_eq!(get(&created, "opened_at"), r#""2026-06-01T12:00:00Z""#);
    let id = get(&created, "id");
    assert_eq!(http(running.addr, "GET", &format!("/s/p/api/v2/tickets/{id}"), &[("Authorization", auth("p").as_str())], "").0, 404);
    control(&running, "POST", "/__host/sessions/p/call", r#"{"tool": "solve_ticket", "args": {"path": {"id": 102}}}"#);
    let (_, state) = control(&running, "GET", "/__host/sessions/p/state", "");
    assert_eq!(get(&state, "tickets.102.status"), r#""solved""#);
    let (_, state) = control(&running, "GET", "/__host/sessions/f/state", "");
    assert_eq!(get(&state, "tickets.102.status"), r#""pending""#, "the parent's later solve is not in the fork");

    // A reset of the fork is the task's start (its seed), not the parent's state.
    control(&running, "POST", "/__host/sessions/f/reset", "");
    let (_, state) = control(&running, "GET", "/__host/sessions/f/state", "");
    assert_eq!((get(&state, "tickets.101.status"), get(&state, "customers.C9.name")), (r#""open""#.into(), r#""Zed""#.into()));
    let (_, graded) = control(&running, "POST", "/__host/sessions/f/grade", "");
    assert_eq!(get(&graded, "reward"), "0.0");
    let (_, graded) = control(&running, "POST", "/__host/sessions/p/grade", "");
    assert_eq!(get(&graded, "reward"), "1.0", "the parent is as it was");

    // A fork takes a place like an open: refused when the host is full or draining.
    let (status, _) = control(&running, "POST", "/__host/sessions/f/fork", r#"{"sessionId": "g", "token": "tok-g"}"#);
    assert_eq!(status, 200);
    let (status, full) = control(&running, "POST", "/__host/sessions/p/fork", r#"{"sessionId": "h", "token": "tok-h"}"#);
    assert_eq!((status, get(&full, "error").as_str()), (503, r#""at_capacity""#));
    let (status, unknown) = control(&running, "POST", "/__host/sessions/nobody/fork", r#"{"sessionId": "h"}"#);
    assert_eq!((status, get(&unknown, "error").as_str()), (404, r#""unknown_session""#));
    let (status, missing) = control(&running, "POST", "/__host/sessions/p/fork", "{}");
    assert_eq!((status, get(&missing, "error").as_str()), (400, r#""missing field""#));

    // Closing the parent leaves its forks alive.
    control(&running, "DELETE", "/__host/sessions/p", "");
    assert_eq!(http(running.addr, "GET", "/s/f/api/v2/tickets/101", &[("Authorization", auth("f").as_str())], "").0, 200);
    let (_, stats) = control(&running, "GET", "/__host/stats", "");
    assert_eq!(get(&stats, "counters.forked"), "2");
    control(&running, "POST", "/__host/drain", "");
    let (status, draining) = control(&running, "POST", "/__host/sessions/f/fork", r#"{"sessionId": "h", "token": "tok-h"}"#);
    assert_eq!((status, get(&draining, "error").as_str()), (503, r#""draining""#));
}

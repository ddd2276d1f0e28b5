//! What a world's Python adds to an answer and what it leaves behind when it fails,
//! answered by the app itself (no socket) from a copy of examples/helpdesk with a
//! `before` gate and handlers of its own:
//!
//! - the gate adds headers (over the declared ones; the answer's own win) and
//!   members of successful object answers (`ctx.add_headers`, `ctx.add_fields`),
//!   to reads, built-in writes, refusals and handlers' answers alike; the original's
//!   contract (None lets the request through, an answer stops it) is unchanged;
//! - a handler's writes are one transaction: a handler that writes, then raises,
//!   leaves the state as it was and answers the error; one that catches a refused
//!   write keeps its other writes; a handler reads its own writes.

use gateway_common::fs::{copy_tree, Symlinks};
use gateway_serve::app::WorldApp;
use gateway_serve::server::{load, ServeOptions};
use gateway_world::json::{canonical, parse, Value};
use std::path::Path;

const HANDLERS: &str = r#"
import helpdesk_logic  # the example's own handlers, kept


def gate(ctx, args, query, body):
    if ctx.headers.get("x-block"):
        return 429, {"error": "slow down"}, {"Retry-After": "1"}
    if ctx.headers.get("x-gate-writes"):
        ctx.insert("customers", {"id": "C9", "name": "Gate", "email": "gate@example.com", "tier": "free", "created_at": "2026-01-01T00:00:00Z"})
        raise RuntimeError("the gate fell over after writing")
    ctx.add_headers({"X-RateLimit-Remaining": "41", "X-Operation": ctx.operation.name})
    ctx.add_fields({"served_by": "gate", "subject": "the gate's, where the answer holds none"})
    return None


def reopen_then_fail(ctx, args, query, body):
    ctx.update("tickets", {"id": 104}, {"status": "open"})
    ctx.insert("tickets", {"id": 900, "customer_id": "C1", "subject": "half", "status": "open", "priority": 3, "tags": [], "opened_at": "2026-01-01T00:00:00Z"})
    raise ValueError("failed after two writes")


def reopen_and_count(ctx, args, query, body):
    ctx.update("tickets", {"id": 104}, {"status": "open"})
    try:
        ctx.insert("tickets", {"id": 101, "customer_id": "C1", "subject": "taken", "status": "open", "priority": 3, "tags": [], "opened_at": "2026-01-01T00:00:00Z"})
    except ValueError as refused:  # the key is taken: this write alone is undone
        taken = refused.detail["code"]
    ctx.add_headers({"X-Handler": "yes"})
    mine = ctx.get("tickets", {"id": 104})  # the handler sees its own write
    solved = ctx.sql("SELECT COUNT(*) FROM tickets WHERE payload ->> '$.status' = ?", ["solved"])
    return {"status_now": mine["status"], "taken": taken, "solved": solved[0][0]}
"#;

const OPERATIONS: &str = r#"
[[operations]]
name = "reopen_then_fail"
method = "POST"
path = "/tickets/{id}/reopen-then-fail"
entity = "tickets"
[operations.api]
action = "handler"
handler = "reopen_then_fail"

[[operations]]
name = "reopen_and_count"
method = "POST"
path = "/tickets/{id}/reopen-and-count"
entity = "tickets"
[operations.api]
action = "handler"
handler = "reopen_and_count"
"#;

/// A copy of examples/helpdesk with the gate, the handlers above and a declared header.
fn world(dir: &Path) -> WorldApp {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
    copy_tree(&example, dir, Symlinks::Refuse, &|_| false).expect("copy the example");
    let own = std::fs::read_to_string(dir.join("api/handlers.py")).unwrap();
    std::fs::write(dir.join("api/helpdesk_logic.py"), own).unwrap();
    let handlers = format!("{HANDLERS}\nsolve_ticket = helpdesk_logic.solve_ticket\nticket_stats = helpdesk_logic.ticket_stats\n");
    std::fs::write(dir.join("api/handlers.py"), handlers).unwrap();
    let toml = std::fs::read_to_string(dir.join("connector.toml")).unwrap();
    let toml = toml.replacen(
        "invalid_status = 422\n",
        "invalid_status = 422\nbefore = \"gate\"\nheaders = { \"X-RateLimit-Remaining\" = \"5000\", \"X-RateLimit-Limit\" = \"5000\" }\n",
        1,
    );
    std::fs::write(dir.join("connector.toml"), format!("{toml}{OPERATIONS}")).unwrap();
    load(dir, &ServeOptions::default()).expect("the world serves")
}

struct Answer {
    status: u16,
    body: Value,
    headers: Vec<(String, String)>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn text(&self, member: &str) -> &str {
        self.body.get(member).and_then(Value::as_str).unwrap_or_default()
    }
}

fn call(app: &WorldApp, method: &str, path: &str, extra: &[(&str, &str)], body: &str) -> Answer {
    let mut headers =
        vec![("authorization".to_string(), "Bearer any".to_string()), ("content-type".to_string(), "application/json".to_string())];
    headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let answer = app.handle(method, &format!("/api/v2{path}"), &headers, body.as_bytes(), "127.0.0.1:9");
    Answer { status: answer.status, body: answer.body.unwrap_or_default(), headers: answer.headers }
}

fn state(app: &WorldApp) -> String {
    let dump = app.handle("GET", "/__world/state", &[], b"", "h").body.expect("a state");
    let Value::Object(mut dump) = dump else { panic!("the state is an object") };
    dump.swap_remove("snapshot");
    canonical(&Value::Object(dump))
}

#[test]
fn the_gate_adds_headers_and_members_to_whatever_answer_follows() {
    let dir = tempfile::tempdir().unwrap();
    let app = world(dir.path());
    let read = call(&app, "GET", "/tickets/101", &[], "");
    assert_eq!(read.status, 200);
    assert_eq!(read.text("served_by"), "gate", "{}", canonical(&read.body));
    assert_eq!(read.text("subject"), "SSO login loops back to the sign-in page", "the answer's own member wins");
    assert_eq!(read.header("x-ratelimit-remaining"), Some("41"), "the gate's header wins over the declared one");
    assert_eq!(read.header("x-ratelimit-limit"), Some("5000"), "the declared headers stay");
    assert_eq!(read.header("x-operation"), Some("get_ticket"));
    assert_eq!(read.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case("x-ratelimit-remaining")).count(), 1);

    let created = call(&app, "POST", "/tickets", &[], r#"{"customer_id": "C2", "subject": "new"}"#);
    assert_eq!((created.status, created.text("served_by")), (201, "gate"), "a built-in write: {}", canonical(&created.body));
    assert_eq!(created.header("x-operation"), Some("create_ticket"));

    let missing = call(&app, "GET", "/tickets/999", &[], "");
    assert_eq!(missing.status, 404);
    assert!(missing.body.get("served_by").is_none(), "members go into successful answers only");
    assert_eq!(missing.header("x-ratelimit-remaining"), Some("41"), "headers into every answer");

    let stats = call(&app, "GET", "/tickets/stats", &[], "");
    assert_eq!((stats.status, stats.text("served_by")), (200, "gate"), "a handler's answer too");
}

#[test]
fn the_gate_still_stops_a_request_with_its_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    let app = world(dir.path());
    let blocked = call(&app, "GET", "/tickets/101", &[("x-block", "1")], "");
    assert_eq!((blocked.status, canonical(&blocked.body)), (429, r#"{"error":"slow down"}"#.to_string()));
    assert_eq!(blocked.header("retry-after"), Some("1"));
    assert_eq!(blocked.header("x-ratelimit-remaining"), Some("5000"), "declared headers on its answer, nothing added");
}

#[test]
fn a_handler_that_raises_after_writing_leaves_the_state_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let app = world(dir.path());
    let before = state(&app);
    let failed = call(&app, "POST", "/tickets/104/reopen-then-fail", &[], "{}");
    assert_eq!(failed.status, 500, "{}", canonical(&failed.body));
    assert!(failed.text("detail").contains("failed after two writes"), "{}", canonical(&failed.body));
    assert_eq!(state(&app), before, "neither the update nor the insert landed");

    let gate = call(&app, "GET", "/tickets/101", &[("x-gate-writes", "1")], "");
    assert_eq!(gate.status, 500, "{}", canonical(&gate.body));
    assert_eq!(state(&app), before, "the gate's write did not land either");

    // The session goes on writing after a rolled-back call.
    let created = call(&app, "POST", "/tickets", &[], r#"{"customer_id": "C2", "subject": "after"}"#);
    assert_eq!(created.status, 201, "{}", canonical(&created.body));
    assert_ne!(state(&app), before);
}

#[test]
fn a_handler_keeps_its_writes_but_a_refused_one_and_reads_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let app = world(dir.path());
    let answered = call(&app, "POST", "/tickets/104/reopen-and-count", &[], "{}");
    assert_eq!(answered.status, 200, "{}", canonical(&answered.body));
    let expected =
        r#"{"served_by":"gate","solved":0,"status_now":"open","subject":"the gate's, where the answer holds none","taken":"unique"}"#;
    assert_eq!(canonical(&answered.body), expected, "its own write seen by get and sql");
    assert_eq!(answered.header("x-handler"), Some("yes"));
    let reread = call(&app, "GET", "/tickets/104", &[], "");
    assert_eq!(reread.text("status"), "open", "the update was committed");
    let listed = call(&app, "GET", "/tickets?q=taken", &[], "");
    assert_eq!(listed.body.get("tickets").and_then(Value::as_array).map(Vec::len), Some(0), "the refused insert is not there");
    assert!(parse(&canonical(&listed.body)).is_ok());
}

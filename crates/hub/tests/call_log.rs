//! A hub session's call log holds the agent's own calls: REST on the embedded host's
//! data plane (driven by curl), MCP at `<api url>/mcp` (raw JSON-RPC, then the real
//! Python `mcp` client when its venv is there) and the hub's calls API (`control`),
//! one log in `seq` order, read through `GET …/calls` (what `session export` reads),
//! `session export`'s lines and the session's web page. No secret sent with a call
//! (the session token in a header or the query, another header, a cookie, a password
//! member) is anywhere in it, and a body over the cap is cut and marked.

mod common;

use gateway_hub::server::CALL_LOG_BODY_CAP;
use gateway_test_support::mcp_python;
use gateway_test_support::{text, TestHub};
use gateway_world::json::{self, Map, Value};
use std::path::Path;

const HEADER_SECRET: &str = "hdr-secret-5f1c9a";
const COOKIE_SECRET: &str = "cookie-secret-77b2";
const PASSWORD: &str = "pw-secret-90ad";

/// A hub with helpdesk pushed and a session open on it: (hub, session id, api url, token).
fn session() -> (TestHub, String, String, String, tempfile::TempDir) {
    let hub = TestHub::start(None);
    let work = tempfile::tempdir().unwrap();
    common::push_helpdesk(&hub.api, &hub.one, work.path());
    let task = r#"{"instruction": "Solve ticket 101.", "tools": ["get_ticket", "solve_ticket"]}"#;
    let (status, opened) =
        hub.call("POST", "/api/public/world-sessions", Some(&format!(r#"{{"slug": "helpdesk", "task": {task}, "surfaces": ["api"]}}"#)));
    assert_eq!(status, 200, "{opened:?}");
    let (sid, url, token) = (text(&opened, "sessionId"), text(&opened, "surfaces.api.url"), text(&opened, "surfaces.api.token"));
    assert!(url.ends_with(&format!("/s/{sid}")) && !token.is_empty(), "{opened:?}");
    (hub, sid, url, token, work)
}

/// The whole log through `GET …/calls`, paged by its cursor `limit` at a time.
fn calls(hub: &TestHub, sid: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = hub.call("GET", &format!("/api/public/world-sessions/{sid}/calls?limit={limit}&cursor={cursor}"), None);
        assert_eq!(status, 200, "{page:?}");
        let rows = page.get("calls").and_then(Value::as_array).unwrap().clone();
        out.extend(rows);
        match page.get("nextCursor") {
            Some(Value::Str(next)) if !next.is_empty() => cursor = next.clone(),
            _ => return out,
        }
    }
}

fn curl(args: &[&str]) -> (u16, String) {
    let output =
        std::process::Command::new("curl").args(["-sS", "-o", "-", "-w", "\n%{http_code}"]).args(args).output().expect("curl runs");
    assert!(output.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    let out = String::from_utf8(output.stdout).unwrap();
    let (body, status) = out.rsplit_once('\n').unwrap();
    (status.parse().unwrap(), body.to_string())
}

fn no_secret(log: &str, token: &str) {
    for secret in [token, HEADER_SECRET, COOKIE_SECRET, PASSWORD] {
        assert!(!log.contains(secret), "a secret ({secret}) reached the log: {log}");
    }
}

/// The session's web page.
fn page(hub: &TestHub, sid: &str) -> String {
    match hub.call("GET", &format!("/ui/sessions/{sid}"), None) {
        (200, Value::Str(page)) => page,
        other => panic!("not a page: {other:?}"),
    }
}

fn with_surface<'a>(log: &'a [Value], surface: &str) -> Vec<&'a Value> {
    log.iter().filter(|c| text(c, "surface") == surface).collect()
}

#[test]
fn rest_calls_on_the_data_plane_and_the_calls_api_share_one_log() {
    let (hub, sid, url, token, _work) = session();
    let bearer = format!("Authorization: Bearer {token}");
    let secret_header = format!("X-Probe-Secret: {HEADER_SECRET}");
    let cookie = format!("Cookie: sid={COOKIE_SECRET}");
    let (status, got) = curl(&[&format!("{url}/tickets/101"), "-H", &bearer, "-H", &secret_header, "-H", &cookie]);
    assert_eq!(status, 200, "{got}");
    // A body over the cap (refused: create_ticket is not among the task's tools).
    let long = "x".repeat(CALL_LOG_BODY_CAP + 4000);
    let big = format!(r#"{{"subject": "{long}", "customer_id": "C1", "password": "{PASSWORD}"}}"#);
    let (refused, answer) =
        curl(&["-X", "POST", &format!("{url}/tickets"), "-H", &bearer, "-H", "Content-Type: application/json", "--data-binary", &big]);
    assert_eq!(refused, 403, "{answer}");
    // A small body with a credential member, the token in the query, a wrong token.
    let small = format!(r#"{{"subject": "Printer", "customer_id": "C1", "password": "{PASSWORD}"}}"#);
    curl(&["-X", "POST", &format!("{url}/tickets"), "-H", &bearer, "-H", "Content-Type: application/json", "--data-binary", &small]);
    let (status, _) = curl(&[&format!("{url}/tickets?status=open&token={token}")]);
    assert_eq!(status, 401, "the query token does not admit the api");
    let (status, _) = curl(&[&format!("{url}/tickets"), "-H", "Authorization: Bearer wrong"]);
    assert_eq!(status, 401);
    // The hub's calls API.
    let (status, _) = hub.call(
        "POST",
        &format!("/api/public/world-sessions/{sid}/calls"),
        Some(r#"{"kind": "call", "tool": "solve_ticket", "args": {"id": 101}}"#),
    );
    assert_eq!(status, 200);

    let log = calls(&hub, &sid, 2);
    assert_eq!(log.len(), 6, "five data-plane calls and one control call, paged two at a time: {log:?}");
    let seqs: Vec<String> = log.iter().map(|c| text(c, "seq")).collect();
    assert_eq!(seqs, ["1", "2", "3", "4", "5", "6"], "in the order they were made");
    let api = with_surface(&log, "api");
    assert_eq!(api.len(), 5);
    let first = api[0];
    assert_eq!(
        (text(first, "kind"), text(first, "method"), text(first, "path"), text(first, "status"), text(first, "tool")),
        ("request".into(), "GET".into(), "/tickets/101".into(), "200".into(), "GET /tickets/101".into())
    );
    assert_eq!(text(first, "result.id"), "101", "the answer is kept: {first:?}");
    assert!(matches!(first.get("durationMs"), Some(Value::Float(ms)) if *ms > 0.0), "{first:?}");
    assert!(!text(first, "createdAt").is_empty() && !text(first, "completedAt").is_empty());

    let cut = api[1];
    assert_eq!((text(cut, "status"), text(cut, "error"), text(cut, "state")), ("403".into(), "HTTP 403".into(), "FAILED".into()));
    assert_eq!(json::canonical(cut.get("result").unwrap()), json::canonical(&json::parse(&answer).unwrap().value), "the refusal is kept");
    assert_eq!((text(cut, "argsTruncated"), text(cut, "argsBytes")), ("true".into(), big.len().to_string()));
    assert_eq!(text(cut, "args").len(), CALL_LOG_BODY_CAP, "the body is cut at the cap");
    assert!(cut.get("resultTruncated").is_none(), "the short answer is whole: {cut:?}");

    assert_eq!(text(api[2], "args.password"), "[redacted]");
    assert_eq!(text(api[2], "args.subject"), "Printer");
    assert_eq!(text(api[3], "path"), "/tickets?status=open&token=[redacted]");
    assert_eq!(text(api[4], "status"), "401");

    let control = with_surface(&log, "control");
    assert_eq!(control.len(), 1);
    let keys: Vec<&str> = control[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "kind", "surface", "tool", "args", "result", "error", "state", "createdAt", "completedAt", "seq"]);
    assert_eq!(text(control[0], "result.body.status"), "solved");

    let whole = json::canonical(&Value::Array(log.clone()));
    no_secret(&whole, &token);

    // `session export`'s lines: the original's seven members and where each call was made.
    let rows: Vec<Map> = log.iter().filter_map(|c| c.as_object().cloned()).collect();
    let lines = gateway_hub_client::sessions_client::export_lines(&rows);
    assert_eq!(lines.len(), 6);
    assert!(lines[0].starts_with(r#"{"args": null, "completedAt": ""#), "{}", lines[0]);
    assert!(lines[0].contains(r#""method": "GET""#) && lines[0].contains(r#""surface": "api""#), "{}", lines[0]);
    assert!(lines[1].contains(r#""argsTruncated": true"#), "{}", lines[1]);
    assert!(lines[5].contains(r#""surface": "control""#) && lines[5].contains(r#""tool": "solve_ticket""#), "{}", lines[5]);
    no_secret(&lines.join("\n"), &token);

    // The session's page: every call, its surface, its bodies folded.
    let page = page(&hub, &sid);
    assert_eq!(page.matches("<td class=\"num\">").count(), 6, "six calls on the page");
    assert!(page.contains("GET /tickets/101") && page.contains("<details>") && page.contains(">control<"), "{page}");
    assert!(page.contains(&format!("cut at 16 KiB of {} bytes", big.len())), "{page}");
    no_secret(&page, &token);
}

#[test]
fn mcp_calls_are_logged_with_their_tools() {
    let (hub, sid, url, token, _work) = session();
    let mcp = format!("{url}/mcp");
    let http = reqwest::blocking::Client::new();
    let rpc = |body: &str| {
        let answer = common::mcp_post(&http, &mcp, &token, body).header("x-probe-secret", HEADER_SECRET).send().unwrap();
        assert_eq!(answer.status().as_u16(), 200);
    };
    rpc(
        r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}"#,
    );
    rpc(r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#);
    rpc(r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "solve_ticket", "arguments": {"id": 101}}}"#);
    rpc(r#"{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "delete_ticket", "arguments": {"id": 101}}}"#);

    let log = calls(&hub, &sid, 500);
    let mcp_log = with_surface(&log, "mcp");
    assert_eq!(mcp_log.len(), 4, "{log:?}");
    let methods: Vec<String> = mcp_log.iter().map(|c| text(c, "rpcMethod")).collect();
    assert_eq!(methods, ["initialize", "tools/list", "tools/call", "tools/call"]);
    let solved = mcp_log[2];
    assert_eq!((text(solved, "kind"), text(solved, "tool"), text(solved, "args.id")), ("mcp".into(), "solve_ticket".into(), "101".into()));
    assert_eq!((text(solved, "isError"), text(solved, "state")), ("false".into(), "DONE".into()));
    assert_eq!(text(solved, "result.structuredContent.body.status"), "solved", "{solved:?}");
    let refused = mcp_log[3];
    assert_eq!(
        (text(refused, "tool"), text(refused, "isError"), text(refused, "state")),
        ("delete_ticket".into(), "true".into(), "FAILED".into())
    );
    assert!(!text(refused, "error").is_empty(), "{refused:?}");
    assert_eq!((text(refused, "method"), text(refused, "path"), text(refused, "status")), ("POST".into(), "/mcp".into(), "200".into()));

    if let Some(python) = mcp_python() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/tests/mcp_client.py");
        let output = std::process::Command::new(python).arg(script).args(["http", &mcp, &token]).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let log = calls(&hub, &sid, 500);
        let tools: Vec<String> =
            with_surface(&log, "mcp").iter().filter(|c| text(c, "rpcMethod") == "tools/call").map(|c| text(c, "tool")).collect();
        // The client script's calls: then a 404 and a wrong-typed argument (mcp_client.py).
        assert_eq!(
            tools,
            ["solve_ticket", "delete_ticket", "get_ticket", "delete_ticket", "no_such_tool", "get_ticket", "get_ticket"],
            "{log:?}"
        );
        let got = with_surface(&log, "mcp").into_iter().find(|c| text(c, "tool") == "get_ticket").unwrap();
        assert_eq!(text(got, "result.structuredContent.body.id"), "101", "{got:?}");
    }
    let log = calls(&hub, &sid, 500);
    no_secret(&json::canonical(&Value::Array(log)), &token);
    let page = page(&hub, &sid);
    assert!(page.contains("tools/call solve_ticket") && page.contains(">mcp<"), "{page}");
    no_secret(&page, &token);
}

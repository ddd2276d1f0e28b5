//! MCP through the hub: a session opened on the embedded World Host answers
//! streamable HTTP at `<surfaces.api.url>/mcp` (the hub forwards `/s/…` to the
//! host's data plane), behind the session token; raw JSON-RPC, then the real
//! Python `mcp` client when its venv (~/.cache/gateway-mcp-venv) is there.

mod common;

use gateway_hub::HubConfig;
use gateway_test_support::mcp_python;
use gateway_world::json::{self, Value};
use std::path::Path;

fn text(value: &Value, path: &str) -> String {
    match path.split('.').fold(value, |v, k| v.get(k).unwrap_or(&Value::Null)) {
        Value::Str(s) => s.clone(),
        other => json::canonical(other),
    }
}

#[test]
fn a_hub_session_speaks_mcp_on_its_api_surface() {
    let data = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (api, key) = runtime.block_on(async {
        let config = HubConfig { data: data.path().to_path_buf(), database: None, objects: None };
        let hub = config.open(None, Default::default()).await.expect("open hub");
        let (_, public, secret) = gateway_hub::create_key(hub.meta.as_ref(), "one").await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(gateway_hub::server::serve_on(hub, listener));
        (format!("http://{addr}"), (public, secret))
    });
    let work = tempfile::tempdir().unwrap();
    common::push_helpdesk(&api, &key, work.path());

    let http = reqwest::blocking::Client::new();
    let task = r#"{"instruction": "Solve ticket 101.", "tools": ["get_ticket", "solve_ticket"]}"#;
    let opened = http
        .post(format!("{api}/api/public/world-sessions"))
        .basic_auth(&key.0, Some(&key.1))
        .header("content-type", "application/json")
        .body(format!(r#"{{"slug": "helpdesk", "task": {task}, "surfaces": ["api"]}}"#))
        .send()
        .unwrap();
    assert_eq!(opened.status().as_u16(), 200);
    let opened = json::parse(&opened.text().unwrap()).unwrap().value;
    let (url, token) = (format!("{}/mcp", text(&opened, "surfaces.api.url")), text(&opened, "surfaces.api.token"));

    let rpc = |token: &str, body: &str| {
        let answer = common::mcp_post(&http, &url, token, body).send().unwrap();
        let status = answer.status().as_u16();
        (status, json::parse(&answer.text().unwrap()).map(|p| p.value).unwrap_or_default())
    };
    let initialize = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}"#;
    let (status, initialized) = rpc(&token, initialize);
    assert_eq!((status, text(&initialized, "result.instructions").as_str()), (200, "Solve ticket 101."), "{initialized:?}");
    let (_, listed) = rpc(&token, r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#);
    let names: Vec<String> =
        listed.get("result").and_then(|r| r.get("tools")).and_then(Value::as_array).unwrap().iter().map(|t| text(t, "name")).collect();
    assert_eq!(names, ["get_ticket", "solve_ticket"]);
    let (_, solved) =
        rpc(&token, r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "solve_ticket", "arguments": {"id": 101}}}"#);
    assert_eq!(text(&solved, "result.structuredContent.body.status"), "solved", "{solved:?}");
    let (_, refused) = rpc(
        &token,
        r#"{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "delete_ticket", "arguments": {"id": 101}}}"#,
    );
    assert_eq!(text(&refused, "result.isError"), "true", "{refused:?}");
    assert_eq!(rpc("nope", initialize).0, 401, "the session token gates MCP");

    if let Some(python) = mcp_python() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/tests/mcp_client.py");
        let output = std::process::Command::new(python).arg(script).args(["http", &url, &token]).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let seen = json::parse(stdout.trim()).unwrap().value;
        assert_eq!(text(&seen, "get_ticket.structured.body.id"), "101", "{seen:?}");
        assert_eq!(text(&seen, "delete_ticket.isError"), "true");
        assert!(text(&seen, "tools.get_ticket.inputSchema.required").contains("id"));
    }
}

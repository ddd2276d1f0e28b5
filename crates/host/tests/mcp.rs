//! MCP over a host's sessions: rmcp's own client in process (a byte pipe), raw
//! streamable HTTP on the data plane (`/s/<sid>/mcp`, `/__mcp` by Host) behind the
//! session token, and the real Python `mcp` client over streamable HTTP (skipped
//! with a NOTICE when its venv, ~/.cache/gateway-mcp-venv, is absent).

mod common;

use gateway_host::mcp::{McpOptions, WorldMcp};
use gateway_host::server::{self, ServerConfig};
use gateway_host::{HostConfig, OpenRequest, WorldHost};
use gateway_test_support::copy_tree;
use gateway_test_support::mcp_python;
use gateway_world::json::{self, Value};
use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const TASK: &str = r#"{"instruction": "Solve ticket 101.", "name": "solve-101",
    "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]},
    "tools": ["get_ticket", "solve_ticket", "list_tickets"]}"#;

struct Running {
    host: Arc<WorldHost>,
    addr: std::net::SocketAddr,
    runtime: tokio::runtime::Runtime,
    _root: tempfile::TempDir,
}

fn helpdesk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk").canonicalize().unwrap()
}

/// A host on loopback (port 0) holding session `s1` on TASK, token `tok-s1`.
fn start() -> Running {
    let root = tempfile::tempdir().unwrap();
    let host = Arc::new(WorldHost::new(HostConfig::local(root.path().join("host"))));
    host.open(OpenRequest {
        session_id: "s1".into(),
        version_id: "v1".into(),
        bundle_url: format!("file://{}", helpdesk().display()),
        task_spec: Some(Arc::new(gateway_world::task::TaskSpec::parse(&json::parse(TASK).unwrap().value).unwrap())),
        token: Some("tok-s1".into()),
        ..Default::default()
    })
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServerConfig { secret: "secret".into(), domain: "worlds.test".into() };
    runtime.spawn(server::run(host.clone(), config, listener, std::future::pending()));
    Running { host, addr, runtime, _root: root }
}

fn object(text: &str) -> rmcp::model::JsonObject {
    serde_json::from_str(text).unwrap()
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
}

#[test]
fn rmcp_client_lists_calls_and_is_refused_in_process() {
    let running = start();
    let server = WorldMcp::new(running.host.clone(), "s1", McpOptions::default()).unwrap();
    running.runtime.block_on(async {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(theirs);
        tokio::spawn(gateway_host::mcp::serve_io(server, read, write));
        let client = ().serve(ours).await.unwrap();

        let info = client.peer_info().unwrap();
        assert_eq!(info.instructions.as_deref(), Some("Solve ticket 101."));

        // Only the task's tools, each with its input schema.
        let tools = client.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort();
        assert_eq!(names, ["get_ticket", "list_tickets", "solve_ticket"]);
        let get = tools.iter().find(|t| t.name == "get_ticket").unwrap();
        assert_eq!(serde_json::Value::Object((*get.input_schema).clone())["required"], serde_json::json!(["id"]));
        assert!(get.description.as_deref().unwrap().starts_with("get_ticket(id)"));

        // A call with flat args: the world's {status, body}.
        let got = client.call_tool(CallToolRequestParams::new("get_ticket").with_arguments(object(r#"{"id": 101}"#))).await.unwrap();
        assert_eq!(got.is_error, Some(false));
        let answer: serde_json::Value = serde_json::from_str(&text_of(&got)).unwrap();
        assert_eq!((answer["status"].as_i64(), answer["body"]["id"].as_i64()), (Some(200), Some(101)), "{answer}");
        assert_eq!(got.structured_content.as_ref().unwrap()["status"], 200);

        // The advertised shape for writes (placeholders + body=) is routed too.
        let solved = client
            .call_tool(CallToolRequestParams::new("solve_ticket").with_arguments(object(r#"{"id": 101, "body": {}}"#)))
            .await
            .unwrap();
        assert!(text_of(&solved).contains(r#""status": "solved""#), "{}", text_of(&solved));

        // Refusals are tool errors with the refusal's message; the server lives on.
        let refused = client.call_tool(CallToolRequestParams::new("delete_ticket").with_arguments(object(r#"{"id": 101}"#))).await.unwrap();
        assert_eq!(refused.is_error, Some(true));
        assert!(text_of(&refused).starts_with("tool_not_allowed: "), "{}", text_of(&refused));
        let unknown = client.call_tool(CallToolRequestParams::new("nope")).await.unwrap();
        assert_eq!(unknown.is_error, Some(true));
        assert_eq!(
            text_of(&unknown),
            "unknown tool 'nope': this session has no such tool; its tools are get_ticket, list_tickets, solve_ticket"
        );
        // An argument of the wrong type is refused by name, before the world sees it.
        let wrong = client.call_tool(CallToolRequestParams::new("get_ticket").with_arguments(object(r#"{"id": "abc"}"#))).await.unwrap();
        assert_eq!(wrong.is_error, Some(true));
        assert_eq!(text_of(&wrong), "invalid_argument: argument id of get_ticket must be an integer, not 'abc'");
        // The world's 4xx: an error result, the vendor's body first, then what it means.
        let missing = client.call_tool(CallToolRequestParams::new("get_ticket").with_arguments(object(r#"{"id": 7}"#))).await.unwrap();
        assert_eq!(missing.is_error, Some(true));
        let blocks: Vec<String> = missing.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
        assert_eq!(
            blocks,
            [r#"{"error": "RecordNotFound", "description": "Not found"}"#, "get_ticket answered HTTP 404: ticket 7 does not exist."]
        );
        assert_eq!(missing.structured_content.as_ref().unwrap()["status"], 404);
        // No control tools unless asked for.
        let grade = client.call_tool(CallToolRequestParams::new("__grade")).await.unwrap();
        assert_eq!(grade.is_error, Some(true));
        assert_eq!(client.list_all_tools().await.unwrap().len(), 3);
        client.cancel().await.unwrap();
    });
}

#[test]
fn control_tools_when_asked_for() {
    let running = start();
    let server = WorldMcp::new(running.host.clone(), "s1", McpOptions { controls: true }).unwrap();
    let names: Vec<String> = server.tool_list().unwrap().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names.iter().filter(|n| n.starts_with("__")).count(), 3, "{names:?}");
    let args = Value::Object(Default::default());
    let text = |result: &rmcp::model::CallToolResult| text_of(result);
    // A grade's original members (its check reports and state diff, ours, are left out).
    let graded = |result: &rmcp::model::CallToolResult| {
        let grade = json::parse(&text_of(result)).unwrap().value;
        assert!(grade.get("checks").is_some() && grade.get("diff").is_some(), "{grade:?}");
        json::dumps(
            &common::original_grade(&grade),
            json::DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false },
        )
    };
    assert_eq!(graded(&server.call("__grade", &args)), r#"{"reward": 0.0, "rewards": {"solved": 0.0}}"#);
    let solved = server.call("solve_ticket", &json::parse(r#"{"id": 101}"#).unwrap().value);
    assert_eq!(solved.is_error, Some(false), "{}", text(&solved));
    assert_eq!(graded(&server.call("__grade", &args)), r#"{"reward": 1.0, "rewards": {"solved": 1.0}}"#);
    assert!(text(&server.call("__state", &args)).contains(r#""status": "solved""#));
    assert_eq!(text(&server.call("__reset", &args)), r#"{"reset": true}"#);
    assert_eq!(graded(&server.call("__grade", &args)), r#"{"reward": 0.0, "rewards": {"solved": 0.0}}"#);
    // A closed session: a tool error, not a crash.
    running.host.close("s1");
    let gone = server.call("get_ticket", &json::parse(r#"{"id": 101}"#).unwrap().value);
    assert_eq!(gone.is_error, Some(true));
    assert!(text(&gone).starts_with("unknown_session: "), "{}", text(&gone));
}

/// One HTTP/1.1 POST of a JSON-RPC message; (status, body).
fn post(addr: std::net::SocketAddr, target: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut all = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    let (status, _, body) = gateway_test_support::http_exchange(addr, "POST", target, &all, body);
    (status, body)
}

const INITIALIZE: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}"#;

#[test]
fn streamable_http_on_the_data_plane_behind_the_token() {
    let running = start();
    let bearer = [("Authorization", "Bearer tok-s1")];
    let version = ("MCP-Protocol-Version", "2025-06-18");
    let by_path = |body: &str| post(running.addr, "/s/s1/mcp", &[bearer[0], version], body);

    let (status, initialized) = by_path(INITIALIZE);
    assert_eq!(status, 200, "{initialized}");
    let initialized = json::parse(&initialized).unwrap().value;
    assert_eq!(json::canonical(initialized.get("result").unwrap().get("instructions").unwrap()), r#""Solve ticket 101.""#);

    let (status, listed) = by_path(r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}"#);
    assert_eq!(status, 200, "{listed}");
    let listed = json::parse(&listed).unwrap().value;
    let tools = listed.get("result").and_then(|r| r.get("tools")).and_then(Value::as_array).unwrap();
    assert_eq!(tools.len(), 3);
    assert!(tools.iter().all(|t| t.get("inputSchema").and_then(|s| s.get("properties")).is_some()));

    let call = r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_ticket", "arguments": {"id": 101}}}"#;
    let (status, called) = by_path(call);
    assert_eq!(status, 200, "{called}");
    assert!(called.contains(r#"\"id\": 101"#) && called.contains(r#""isError":false"#), "{called}");
    let refuse = r#"{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "delete_ticket", "arguments": {"id": 101}}}"#;
    let (status, refused) = by_path(refuse);
    assert_eq!(status, 200, "{refused}");
    assert!(refused.contains(r#""isError":true"#) && refused.contains("tool_not_allowed"), "{refused}");

    // By Host: `/__mcp` of the api host.
    let host = ("Host", "w-s1-api.worlds.test");
    let (status, called) = post(running.addr, "/__mcp", &[host, bearer[0], version], call);
    assert_eq!(status, 200, "{called}");
    assert!(called.contains(r#"\"id\": 101"#), "{called}");

    // The token gates it: missing or wrong is 401 naming the Bearer scheme, another session's is 401.
    let (status, head, _) = gateway_test_support::http_exchange(running.addr, "POST", "/s/s1/mcp", &[version], INITIALIZE);
    assert_eq!(status, 401);
    assert!(head.lines().any(|l| l.eq_ignore_ascii_case("www-authenticate: Bearer")), "{head}");
    assert_eq!(post(running.addr, "/s/s1/mcp", &[("Authorization", "Bearer nope"), version], INITIALIZE).0, 401);
    assert_eq!(post(running.addr, "/__mcp", &[host, ("Authorization", "Bearer nope")], INITIALIZE).0, 401);
    assert_eq!(post(running.addr, "/s/nobody/mcp", &[bearer[0]], INITIALIZE).0, 404);
    // The ui host has no MCP endpoint: that path is the world's.
    assert_ne!(post(running.addr, "/__mcp", &[("Host", "w-s1.worlds.test"), bearer[0], version], INITIALIZE).0, 200);
}

#[test]
fn the_python_mcp_client_over_streamable_http() {
    let Some(python) = mcp_python() else { return };
    let running = start();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let url = format!("http://{}/s/s1/mcp", running.addr);
    let output = std::process::Command::new(python).arg(&script).args(["http", &url, "tok-s1"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(seen["instructions"], "Solve ticket 101.");
    let tools = seen["tools"].as_object().unwrap();
    let mut names: Vec<&String> = tools.keys().collect();
    names.sort();
    assert_eq!(names, ["get_ticket", "list_tickets", "solve_ticket"]);
    assert_eq!(tools["get_ticket"]["inputSchema"]["required"], serde_json::json!(["id"]));
    assert_eq!(seen["get_ticket"]["isError"], false);
    assert_eq!(seen["get_ticket"]["structured"]["body"]["id"], 101, "{seen}");
    assert_eq!(seen["delete_ticket"]["isError"], true);
    assert!(seen["delete_ticket"]["text"].as_str().unwrap().starts_with("tool_not_allowed"), "{seen}");
    assert_eq!(seen["no_such_tool"]["isError"], true);
    assert_eq!(seen["missing_ticket"]["isError"], true, "{seen}");
    assert!(seen["missing_ticket"]["text"].as_str().unwrap().contains("RecordNotFound"), "{seen}");
    assert!(seen["missing_ticket"]["text"].as_str().unwrap().contains("ticket 999999 does not exist"), "{seen}");
    assert_eq!(seen["wrong_type"]["isError"], true, "{seen}");
    assert!(seen["wrong_type"]["text"].as_str().unwrap().contains("argument id of get_ticket must be an integer"), "{seen}");
    // The schema an agent reads: the id typed as the key.
    assert_eq!(tools["get_ticket"]["inputSchema"]["properties"]["id"]["type"], "integer");

    // Without the token the client gets nowhere.
    let output = std::process::Command::new(mcp_python().unwrap()).arg(&script).args(["http", &url, "nope"]).output().unwrap();
    assert!(!output.status.success());
}

#[test]
fn the_worlds_own_tools_are_listed_with_their_contract_schemas_and_callable() {
    let root = tempfile::tempdir().unwrap();
    let world = root.path().join("helpdesk");
    copy_tree(&helpdesk(), &world);
    // Rename the connector's operations so the world's own tools are reached by name.
    let connector = world.join("connector.toml");
    let renamed = std::fs::read_to_string(&connector)
        .unwrap()
        .replace("name = \"get_ticket\"", "name = \"api_get_ticket\"")
        .replace("name = \"list_tickets\"", "name = \"api_list_tickets\"")
        .replace("name = \"solve_ticket\"", "name = \"api_solve_ticket\"");
    std::fs::write(&connector, renamed).unwrap();
    let local = gateway_host::mcp::open_local(&world, None, None).unwrap();
    let server = WorldMcp::new(local.host.clone(), &local.session_id, McpOptions::default()).unwrap();
    let tools = server.tool_list().unwrap();
    let list = tools.iter().find(|t| t.name == "list_tickets").expect("the world's own list_tickets");
    let schema = serde_json::Value::Object((*list.input_schema).clone());
    assert_eq!(schema["required"], serde_json::json!(["status"]), "{schema}");
    assert!(list.description.as_deref().unwrap().contains("Tickets in one status."));
    assert!(tools.iter().any(|t| t.name == "api_get_ticket"));
    let got = server.call("get_ticket", &json::parse(r#"{"id": 101}"#).unwrap().value);
    assert_eq!(got.is_error, Some(false), "{}", text_of(&got));
    assert_eq!(got.structured_content.as_ref().unwrap()["body"]["id"], 101);
    let refused = server.call("list_tickets", &json::parse(r#"{"status": "lost"}"#).unwrap().value);
    assert_eq!(refused.is_error, Some(true), "input outside the contract is refused: {}", text_of(&refused));
    // Refusals an agent can act on: the code, then the argument or row by name.
    let said = |tool: &str, args: &str| text_of(&server.call(tool, &json::parse(args).unwrap().value));
    assert_eq!(text_of(&refused), "enum: argument status of list_tickets must be one of 'open', 'pending', 'solved', not 'lost'");
    assert_eq!(said("get_ticket", r#"{"id": "x"}"#), "type: argument id of get_ticket must be an integer, not 'x'");
    assert_eq!(said("get_ticket", r#"{"id": 1, "bogus": 2}"#), "additionalProperties: get_ticket takes no argument 'bogus'; it takes 'id'");
    assert_eq!(said("get_ticket", "{}"), "required: get_ticket needs the argument 'id'");
    assert_eq!(said("solve_ticket", r#"{"id": 999}"#), "not_found: ticket 999 does not exist");
    // The operation's own 404: the vendor's body, then the sentence.
    assert_eq!(
        said("api_get_ticket", r#"{"id": 999}"#),
        r#"{"error": "RecordNotFound", "description": "Not found"}api_get_ticket answered HTTP 404: ticket 999 does not exist."#
    );
}

#[test]
fn a_tool_the_world_and_its_connector_both_name_is_listed_once() {
    // The helpdesk's own tools get_ticket, list_tickets and solve_ticket share
    // their names with operations: the operations win, each name listed once.
    let local = gateway_host::mcp::open_local(&helpdesk(), None, None).unwrap();
    let server = WorldMcp::new(local.host.clone(), &local.session_id, McpOptions::default()).unwrap();
    let mut names: Vec<String> = server.tool_list().unwrap().iter().map(|t| t.name.to_string()).collect();
    let listed = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), listed, "{names:?}");
    let session = local.host.using(&local.session_id, false).unwrap();
    assert_eq!(listed, session.version().spec.operations.len());
    assert!(session.version().tools.as_ref().unwrap().has("get_ticket"));
    let get = server.tool_list().unwrap().into_iter().find(|t| t.name == "get_ticket").unwrap();
    assert!(get.description.as_deref().unwrap().contains("GET /tickets/{id}"), "the operation's, not the world tool's");
}

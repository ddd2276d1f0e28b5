//! `gateway worlds mcp PATH` end to end: the real binary over stdio, driven by
//! raw JSON-RPC lines and by the real Python `mcp` client (skipped with a NOTICE
//! when its venv, ~/.cache/gateway-mcp-venv, is absent; .ci/run installs it).

use gateway_test_support::mcp_python;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

fn helpdesk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk")
}

const TASK: &str = r#"{"instruction": "Solve ticket 101.", "tools": ["get_ticket", "solve_ticket"]}"#;

#[test]
fn json_rpc_lines_over_stdio_and_a_clean_exit_when_stdin_closes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("task.json");
    std::fs::write(&spec, TASK).unwrap();
    let mut child = Command::new(BIN)
        .args(["worlds", "mcp"])
        .arg(helpdesk())
        .arg("--task-file")
        .arg(&spec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut exchange = |line: &str| -> serde_json::Value {
        writeln!(stdin, "{line}").unwrap();
        if line.contains("notifications/") {
            return serde_json::Value::Null; // no answer to a notification
        }
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
    };
    let initialized = exchange(
        r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}"#,
    );
    assert_eq!(initialized["result"]["instructions"], "Solve ticket 101.", "{initialized}");
    exchange(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#);
    let listed = exchange(r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#);
    let names: Vec<&str> = listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["get_ticket", "solve_ticket"], "{listed}");
    let called =
        exchange(r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_ticket", "arguments": {"id": 101}}}"#);
    assert_eq!(called["result"]["structuredContent"]["status"], 200, "{called}");
    assert_eq!(called["result"]["isError"], false);
    let refused =
        exchange(r#"{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "delete_ticket", "arguments": {"id": 101}}}"#);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused["result"]["content"][0]["text"].as_str().unwrap().starts_with("tool_not_allowed"), "{refused}");

    // Closing stdin ends the server.
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "worlds mcp did not exit after stdin closed");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn refusals_before_serving_are_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"instruction": "x", "tools": ["no_such_tool"]}"#).unwrap();
    let cases: [Vec<std::ffi::OsString>; 3] = [
        vec![dir.path().join("nowhere").into()],
        vec![helpdesk().into(), "--task".into(), "no-such-scenario".into()],
        vec![helpdesk().into(), "--task-file".into(), bad.into()],
    ];
    for args in cases {
        let output = Command::new(BIN).args(["worlds", "mcp"]).args(&args).stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("Error: worlds mcp refused: "), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "stdout is the protocol's");
    }
}

/// Run the Python client against `gateway worlds mcp <extra…>`; what it saw.
fn python_client(python: &Path, extra: &[&std::ffi::OsStr]) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/tests/mcp_client.py");
    let output = Command::new(python).arg(script).args(["stdio", BIN, "worlds", "mcp"]).arg(helpdesk()).args(extra).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap()
}

#[test]
fn the_python_mcp_client_over_stdio() {
    let Some(python) = mcp_python() else { return };
    // The default task: every tool, with its input schema.
    let seen = python_client(&python, &[]);
    let tools = seen["tools"].as_object().unwrap();
    assert_eq!(tools.len(), 10, "{seen}");
    assert!(tools.values().all(|t| t["inputSchema"]["type"] == "object" && t["inputSchema"]["properties"].is_object()));
    assert_eq!(tools["get_ticket"]["inputSchema"]["required"], serde_json::json!(["id"]));
    assert_eq!(seen["get_ticket"]["isError"], false);
    assert_eq!(seen["get_ticket"]["structured"]["status"], 200);
    assert_eq!(seen["get_ticket"]["structured"]["body"]["id"], 101, "{seen}");
    assert_eq!(seen["delete_ticket"]["structured"]["status"], 204, "the default task allows every tool");
    assert_eq!(seen["no_such_tool"]["isError"], true);
    assert!(seen["no_such_tool"]["text"].as_str().unwrap().contains("unknown tool 'no_such_tool'"), "{seen}");

    // A task of its own: its instruction, its tools only, the rest refused.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("task.json");
    std::fs::write(&spec, TASK).unwrap();
    let seen = python_client(&python, &["--task-file".as_ref(), spec.as_os_str()]);
    assert_eq!(seen["instructions"], "Solve ticket 101.");
    assert_eq!(seen["tools"].as_object().unwrap().len(), 2, "{seen}");
    assert_eq!(seen["get_ticket"]["structured"]["body"]["id"], 101);
    assert_eq!(seen["delete_ticket"]["isError"], true);
    assert!(seen["delete_ticket"]["text"].as_str().unwrap().starts_with("tool_not_allowed"), "{seen}");
}

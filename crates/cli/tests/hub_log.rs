//! `gateway hub serve`, `host serve` and `worlds serve` log one line per request on
//! stderr (tracing, target `gateway::request`): method, path, status, milliseconds —
//! never the query (signed URLs carry their signatures there) nor any header;
//! `GATEWAY_LOG=warn` quiets them.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const GATEWAY: &str = env!("CARGO_BIN_EXE_gateway");

/// Serve a hub with `log` as GATEWAY_LOG, make two requests, stop it: what it said.
fn requests_logged(log: &str) -> String {
    let data = tempfile::tempdir().unwrap();
    let data = data.path().to_str().unwrap().to_string();
    server_logged(
        &["hub", "serve", "--addr", "127.0.0.1:0", "--data", &data],
        "gateway hub listening on http://",
        &[("GATEWAY_LOG", log)],
        &[
            ("GET", "/openapi.json", &[]),
            ("GET", "/api/public/benchmark-containers?signature=s3cr3t", &[("Authorization", "Basic cGs6c2stc2VjcmV0")]),
        ],
        if log == "info" { 2 } else { 0 },
    )
}

#[test]
fn the_hub_logs_one_line_per_request_and_nothing_secret() {
    let said = requests_logged("info");
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("gateway::request")).collect();
    assert_eq!(lines.len(), 2, "{said}");
    assert!(lines[0].contains("GET /openapi.json 200 "), "{said}");
    assert!(lines[1].contains("GET /api/public/benchmark-containers 401 "), "{said}");
    for line in &lines {
        // `… INFO gateway::request: GET /openapi.json 200 0.4ms`: milliseconds, one decimal.
        let millis = line.rsplit(' ').next().and_then(|last| last.strip_suffix("ms")).unwrap_or_default();
        let (whole, tenth) = millis.split_once('.').unwrap_or_default();
        assert!(!whole.is_empty() && whole.bytes().all(|b| b.is_ascii_digit()), "{line}");
        assert!(tenth.len() == 1 && tenth.bytes().all(|b| b.is_ascii_digit()), "{line}");
        assert!(line.contains("  INFO gateway::request: GET /"), "{line}");
    }
    assert!(!said.contains("s3cr3t") && !said.contains("cGs6c2stc2VjcmV0"), "a secret reached the log: {said}");
    let quiet = requests_logged("warn");
    assert!(!quiet.contains("gateway::request"), "{quiet}");
}

/// Serve with `args`, read the address after `announce`, make `requests` (method,
/// target, headers), wait for `expected` request lines, stop it: what it said on stderr.
fn server_logged(
    args: &[&str],
    announce: &str,
    env: &[(&str, &str)],
    requests: &[(&str, &str, &[(&str, &str)])],
    expected: usize,
) -> String {
    let mut child =
        Command::new(GATEWAY).args(args).envs(env.iter().copied()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let addr = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "it did not start: {said}");
        said.push_str(&line);
        if let Some(addr) = line.trim().strip_prefix(announce) {
            break addr.to_string();
        }
    };
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    // The rest of stderr, read as it comes: the lines reach it within the log's flush
    // period, later on a loaded machine.
    let rest = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let rest = std::sync::Arc::clone(&rest);
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let mut rest = rest.lock().unwrap();
                rest.push_str(&line);
                rest.push('\n');
            }
        })
    };
    for (method, target, headers) in requests {
        gateway_test_support::http_exchange(addr, method, target, headers, "");
    }
    let logged = || rest.lock().unwrap().lines().filter(|l| l.contains("gateway::request")).count();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while logged() < expected && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Whatever else would come (a line too many, a quiet log's none) comes within this.
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    reader.join().unwrap();
    said.push_str(&rest.lock().unwrap());
    said
}

#[test]
fn worlds_serve_and_host_serve_log_one_line_per_request() {
    let world = gateway_test_support::example("helpdesk");
    let world = world.to_str().unwrap();
    let said = server_logged(
        &["worlds", "serve", world, "--port", "0"],
        "world api listening on http://",
        &[],
        &[("GET", "/api/v2/tickets/102?token=s3cr3t", &[("Authorization", "Bearer s3cr3t-token")]), ("GET", "/no/such/route", &[])],
        2,
    );
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("gateway::request")).collect();
    assert_eq!(lines.len(), 2, "{said}");
    assert!(lines[0].contains("GET /api/v2/tickets/102 200 "), "{said}");
    assert!(lines[1].contains("GET /no/such/route 401 "), "unauthenticated: {said}");
    assert!(!said.contains("s3cr3t"), "a secret reached the log: {said}");

    let root = tempfile::tempdir().unwrap();
    let said = server_logged(
        &["host", "serve", "--addr", "127.0.0.1:0", "--root", root.path().to_str().unwrap()],
        "gateway world host listening on http://",
        &[("WORLDS_HOST_SECRET", "host-secret")],
        &[("GET", "/healthz", &[]), ("GET", "/__host/stats", &[("X-Host-Secret", "host-secret")])],
        2,
    );
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("gateway::request")).collect();
    assert_eq!(lines.len(), 2, "{said}");
    assert!(lines[0].contains("GET /healthz 200 ") && lines[1].contains("GET /__host/stats 200 "), "{said}");
    assert!(!said.contains("host-secret"), "a secret reached the log: {said}");
}

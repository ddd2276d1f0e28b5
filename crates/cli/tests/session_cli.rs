//! `gateway worlds session …` and `gateway worlds task …` against a scripted fake
//! platform, compared with the ORIGINAL CLI.
//!
//! Each `fixtures/session_cli/<case>.json` was recorded by `fixtures/session_cli/record.py`
//! running the reference `gateway` against the same kind of fake platform: the command
//! line, the files it reads, the scripted answers (handed out in order, the last one
//! repeating), every request the original made, and its stdout, stderr, exit code and
//! written files. Here our binary runs the same command line against the same answers,
//! and must send the same requests (method, path, query, Content-Type, Authorization,
//! body text) and print the same bytes. This is not a test of the hub's server side.

use gateway_test_support::RawRequest;
use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

const GATEWAY: &str = env!("CARGO_BIN_EXE_gateway");

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/session_cli")
}

/// A scripted platform on loopback: records each request, answers the next answer.
struct Platform {
    host: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Platform {
    fn start(answers: Vec<(u16, String)>) -> Platform {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let host = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                serve(stream, &seen, &answers);
            }
        });
        Platform { host, requests }
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, seen: &Mutex<Vec<Value>>, answers: &[(u16, String)]) {
    let Some(request) = RawRequest::read(&mut BufReader::new(stream.try_clone().unwrap())) else { return };
    let (path, query) = request.target.split_once('?').unwrap_or((&request.target, ""));
    let index = {
        let mut seen = seen.lock().unwrap();
        seen.push(json!({
            "method": request.method,
            "path": path,
            "query": query,
            "contentType": request.header("content-type"),
            "authorization": request.header("authorization"),
            "body": if request.body.is_empty() { Value::Null } else { Value::String(String::from_utf8(request.body.clone()).unwrap()) },
        }));
        seen.len()
    };
    let (status, text) = match answers.get(index.min(answers.len()).wrapping_sub(1)) {
        Some(answer) => answer.clone(),
        None => (500, r#"{"error": "unscripted"}"#.to_string()),
    };
    let mut stream = stream;
    let head =
        format!("HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", text.len());
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(text.as_bytes());
    let _ = stream.flush();
}

struct Outcome {
    requests: Vec<Value>,
    stdout: String,
    stderr: String,
    code: i32,
    out_files: serde_json::Map<String, Value>,
}

fn replay(fixture: &Value) -> Outcome {
    let answers = fixture["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["status"].as_u64().unwrap() as u16, a["text"].as_str().unwrap().to_string()))
        .collect();
    let platform = Platform::start(answers);
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in fixture["files"].as_object().unwrap() {
        std::fs::write(dir.path().join(rel), text.as_str().unwrap()).unwrap();
    }
    let args: Vec<String> = fixture["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .map(|a| if a == "HOST" { platform.host.clone() } else { a.to_string() })
        .collect();
    let mut command = Command::new(GATEWAY);
    command
        .args(&args)
        .current_dir(dir.path())
        .env("GATEWAY_HOST", format!("{}/", platform.host))
        .env("GATEWAY_PUBLIC_KEY", "pk-test")
        .env("GATEWAY_SECRET_KEY", "sk-test");
    for key in fixture["unset"].as_array().unwrap() {
        command.env_remove(key.as_str().unwrap());
    }
    let output = command.output().unwrap();
    let mut out_files = serde_json::Map::new();
    for rel in fixture["outFiles"].as_object().unwrap().keys() {
        let text = std::fs::read_to_string(dir.path().join(rel)).unwrap_or_else(|e| format!("<unreadable: {e}>"));
        out_files.insert(rel.clone(), Value::String(text));
    }
    Outcome {
        requests: platform.requests(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        code: output.status.code().unwrap_or(-1),
        out_files,
    }
}

/// The requests with each run of repeated polls of one call (`GET …/calls/<id>`) counted
/// once: how many polls fit in a `--timeout` depends on the machine's load, not on what
/// the client does, and all the cases replay at once.
fn polls_collapsed(requests: &[Value]) -> Vec<&Value> {
    let mut kept: Vec<&Value> = Vec::new();
    for request in requests {
        let poll = request["method"] == "GET" && request["path"].as_str().is_some_and(|p| p.contains("/calls/"));
        if poll && kept.last() == Some(&request) {
            continue;
        }
        kept.push(request);
    }
    kept
}

#[test]
fn every_recorded_case_matches_the_original() {
    let mut cases: Vec<PathBuf> =
        std::fs::read_dir(fixtures()).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    cases.sort();
    assert!(cases.len() >= 60, "fixtures missing: {}", cases.len());
    let results: Vec<(String, Vec<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = cases
            .iter()
            .map(|path| {
                scope.spawn(move || {
                    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
                    let got = replay(&fixture);
                    let mut problems = Vec::new();
                    let expected = fixture["requests"].as_array().unwrap();
                    if polls_collapsed(&got.requests) != polls_collapsed(expected) {
                        problems.push(format!(
                            "requests differ\n  original: {}\n  ours:     {}",
                            serde_json::to_string_pretty(expected).unwrap(),
                            serde_json::to_string_pretty(&got.requests).unwrap()
                        ));
                    }
                    for (what, ours, theirs) in [
                        ("stdout", &got.stdout, fixture["stdout"].as_str().unwrap()),
                        ("stderr", &got.stderr, fixture["stderr"].as_str().unwrap()),
                    ] {
                        if ours != theirs {
                            problems.push(format!("{what} differs\n  original: {theirs:?}\n  ours:     {ours:?}"));
                        }
                    }
                    if got.code != fixture["code"].as_i64().unwrap() as i32 {
                        problems.push(format!("exit code {} (original {})", got.code, fixture["code"]));
                    }
                    if &got.out_files != fixture["outFiles"].as_object().unwrap() {
                        problems.push(format!("written files differ: {:?} vs {:?}", got.out_files, fixture["outFiles"]));
                    }
                    (name, problems)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let failed: Vec<String> = results
        .into_iter()
        .filter(|(_, problems)| !problems.is_empty())
        .map(|(name, problems)| format!("== {name}\n{}", problems.join("\n")))
        .collect();
    assert!(failed.is_empty(), "{} case(s) differ from the original:\n{}", failed.len(), failed.join("\n\n"));
}

/// Where the original would launch Playwright on an available surface, we stop with a
/// line saying so (the reference install has no Playwright either and also exits 1).
#[test]
fn browse_with_a_ui_surface_stops_without_a_browser() {
    let state = r#"{"sessionId": "ws_1", "surfaces": {"ui": {"url": "http://ui"}}}"#;
    let platform = Platform::start(vec![(200, state.to_string())]);
    let output = Command::new(GATEWAY)
        .args(["worlds", "session", "browse", "ws_1", "--host", &platform.host])
        .env("GATEWAY_PUBLIC_KEY", "pk")
        .env("GATEWAY_SECRET_KEY", "sk")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Driving a world UI is not supported"), "{stderr}");
    assert_eq!(platform.requests().len(), 1);
}

//! OpenTelemetry export: `gateway hub serve` with `OTEL_EXPORTER_OTLP_ENDPOINT` set sends
//! its spans to an OTLP/HTTP collector — here one served by the test on loopback, over
//! `http/json` so that what arrives can be read. An agent's call on a session's data
//! plane is a `request` span naming the session; the grade is a `grade` span naming it.

use gateway_test_support::copy_tree;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;
use common::*;

/// A collector on loopback: every body POSTed to it, by path.
struct Collector {
    url: String,
    received: Arc<Mutex<Vec<(String, String)>>>,
}

fn collector() -> Collector {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let sink = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let sink = sink.clone();
            std::thread::spawn(move || serve_exports(stream, &sink));
        }
    });
    Collector { url, received }
}

/// Answer each request of a keep-alive connection with 200 `{}`, keeping its body.
fn serve_exports(stream: TcpStream, sink: &Mutex<Vec<(String, String)>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut start = String::new();
        if reader.read_line(&mut start).unwrap_or(0) == 0 {
            return;
        }
        let path = start.split_whitespace().nth(1).unwrap_or_default().to_string();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        sink.lock().unwrap().push((path, String::from_utf8_lossy(&body).into_owned()));
        let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Every exported span: (name, its attributes as text), with the service it came from.
fn spans(received: &[(String, String)]) -> Vec<(String, String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    for (path, body) in received {
        assert_eq!(path, "/v1/traces", "traces go to the signal's path");
        let export: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not OTLP JSON ({e}): {body}"));
        for resource in export["resourceSpans"].as_array().into_iter().flatten() {
            let service = attributes(&resource["resource"]["attributes"]).into_iter().find(|(k, _)| k == "service.name");
            let service = service.map(|(_, v)| v).unwrap_or_default();
            for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                for span in scope["spans"].as_array().into_iter().flatten() {
                    out.push((service.clone(), span["name"].as_str().unwrap_or_default().to_string(), attributes(&span["attributes"])));
                }
            }
        }
    }
    out
}

fn attributes(list: &Value) -> Vec<(String, String)> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let value = &a["value"];
            let text = value["stringValue"].as_str().map(str::to_string).unwrap_or_else(|| {
                value.as_object().and_then(|o| o.values().next()).map(|v| v.to_string().trim_matches('"').to_string()).unwrap_or_default()
            });
            (a["key"].as_str().unwrap_or_default().to_string(), text)
        })
        .collect()
}

fn has(attributes: &[(String, String)], key: &str, wanted: impl Fn(&str) -> bool) -> bool {
    attributes.iter().any(|(k, v)| k == key && wanted(v))
}

#[test]
fn a_sessions_call_and_grade_reach_the_collector_as_spans_naming_the_session() {
    let collector = collector();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let keys = Command::new(GATEWAY).args(["hub", "keys", "create", "--project", "p1", "--data"]).arg(&data).output().unwrap();
    assert!(keys.status.success(), "{}", String::from_utf8_lossy(&keys.stderr));
    let keys = String::from_utf8(keys.stdout).unwrap();
    let (child, host) = gateway_test_support::spawn_hub(
        Command::new(GATEWAY)
            .args(["hub", "serve", "--addr", "127.0.0.1:0", "--data"])
            .arg(&data)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .env("OTEL_SERVICE_NAME", "gateway-under-test"),
    );
    let server = Server { child, host, public: field(&keys, "publicKey"), secret: field(&keys, "secretKey") };
    let work = tmp.path();
    let gateway = Path::new(GATEWAY);
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &work.join("helpdesk"));
    ok(&server, gateway, &["bench", "push", "helpdesk", "--slug", "helpdesk"], work);
    let opened = ok(&server, gateway, &["worlds", "session", "open", "helpdesk", "-t", "backlog", "-s", "api"], work);
    let sid = field(&opened, "sessionId");
    let api: Value = serde_json::from_str::<Value>(&opened).unwrap()["api"].clone();
    let (url, token) = (api["url"].as_str().unwrap(), api["token"].as_str().unwrap());
    let addr = url.trim_start_matches("http://").split('/').next().unwrap().parse().unwrap();
    let path = format!("/{}/api/v2/tickets/102", url.trim_start_matches("http://").split_once('/').map(|(_, p)| p).unwrap_or(""));
    let path = path.replace("//", "/");
    let (status, _, body) = gateway_test_support::http_exchange(addr, "GET", &path, &[("Authorization", &format!("Bearer {token}"))], "");
    assert_eq!(status, 200, "{body}");
    ok(&server, gateway, &["worlds", "session", "grade", &sid], work);

    // The batch goes out every 100 ms: wait for both spans (at most 20 s).
    let started = Instant::now();
    let (call, grade) = loop {
        let seen = spans(&collector.received.lock().unwrap());
        let call = seen.iter().find(|(_, name, attrs)| {
            name == "request" && has(attrs, "path", |p| p.ends_with("/api/v2/tickets/102")) && has(attrs, "session", |s| s == sid)
        });
        let grade = seen.iter().find(|(_, name, attrs)| name == "grade" && has(attrs, "session", |s| s == sid));
        if let (Some(call), Some(grade)) = (call, grade) {
            break (call.clone(), grade.clone());
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no request and grade spans naming {sid} reached the collector: {:?}",
            seen.iter().map(|(_, n, a)| (n, a)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(call.0, "gateway-under-test", "the service is named by OTEL_SERVICE_NAME");
    assert!(has(&call.2, "method", |m| m == "GET") && has(&call.2, "status", |s| s == "200"), "{call:?}");
    assert_eq!(grade.0, "gateway-under-test");
    // Nothing secret is exported: the session's token is in a header, never in a span.
    let everything: String = collector.received.lock().unwrap().iter().map(|(_, b)| b.as_str()).collect();
    assert!(!everything.contains(token), "the session token reached the collector");
}

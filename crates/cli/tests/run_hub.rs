//! `gateway worlds run` and `gateway worlds ci` against our real hub (`gateway hub
//! serve`, started here): a clean checkout files its run pinned to its version, a
//! drifted one runs unfiled, a slug is pulled and run; `worlds ci --agent oracle`
//! pushes onto the PR branch, runs every task, files and passes — and with a broken
//! world fails under the world's pass bar.
//!
//! The hub's evaluation routes are another branch's work: a small front on
//! loopback answers `/evaluations*` and `/api/public/ingestion` itself (recording
//! every body, so the filed shapes are checked) and forwards everything else to the
//! hub, adding a `passThreshold` to resolve-version answers when asked to.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

mod support;
use support::{gateway, serve, world, GATEWAY};

struct Hub {
    child: Child,
    host: String,
    public: String,
    secret: String,
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_hub(data: &Path) -> Hub {
    let keys = Command::new(GATEWAY).args(["hub", "keys", "create", "--project", "p1", "--data"]).arg(data).output().unwrap();
    assert!(keys.status.success(), "{}", String::from_utf8_lossy(&keys.stderr));
    let keys: Value = serde_json::from_slice(&keys.stdout).unwrap();
    let mut child = Command::new(GATEWAY)
        .args(["hub", "serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(data)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut host = String::new();
    for _ in 0..20 {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(addr) = line.trim().strip_prefix("gateway hub listening on ") {
            host = addr.to_string();
            break;
        }
    }
    assert!(!host.is_empty(), "hub did not start");
    std::thread::spawn(move || for _ in reader.lines() {});
    let text = |k: &str| keys[k].as_str().unwrap().to_string();
    Hub { child, host, public: text("publicKey"), secret: text("secretKey") }
}

/// The front: evaluation routes answered and recorded, the rest forwarded.
struct Front {
    hub: String,
    http: reqwest::Client,
    /// (path, body) of every JSON request, in order.
    seen: Mutex<Vec<(String, Value)>>,
    evaluations: AtomicUsize,
    pass_threshold: Mutex<Option<f64>>,
}

impl Front {
    fn bodies(&self, suffix: &str) -> Vec<Value> {
        self.seen.lock().unwrap().iter().filter(|(p, _)| p.ends_with(suffix)).map(|(_, b)| b.clone()).collect()
    }
    fn forget(&self) {
        self.seen.lock().unwrap().clear();
    }
}

async fn front(axum::extract::State(front): axum::extract::State<Arc<Front>>, request: axum::extract::Request) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let path = parts.uri.path().to_string();
    let target = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    if let Ok(parsed) = serde_json::from_slice::<Value>(&bytes) {
        front.seen.lock().unwrap().push((path.clone(), parsed));
    }
    let authorized = parts.headers.get("authorization").is_some_and(|v| v.to_str().unwrap_or("").starts_with("Basic "));
    let evaluations = "/api/public/benchmark-containers/evaluations";
    if path.starts_with(evaluations) || path == "/api/public/ingestion" {
        assert!(authorized, "filing calls carry the key pair");
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        let answer = if path == evaluations {
            json!({"evaluationId": format!("ev-{}", front.evaluations.fetch_add(1, Ordering::SeqCst) + 1)})
        } else if path.ends_with("/samples") {
            json!({"inserted": body["samples"].as_array().unwrap().len()})
        } else if path.ends_with("/finalize") {
            json!({"status": body["status"]})
        } else {
            json!({})
        };
        return ([("content-type", "application/json")], answer.to_string()).into_response();
    }
    let mut forwarded = front.http.request(parts.method.clone(), format!("{}{target}", front.hub)).body(bytes.to_vec());
    for (name, value) in &parts.headers {
        if name != "host" && name != "content-length" {
            forwarded = forwarded.header(name, value);
        }
    }
    let answered = forwarded.send().await.unwrap();
    let status = answered.status();
    let content_type = answered.headers().get("content-type").cloned();
    let mut bytes = answered.bytes().await.unwrap().to_vec();
    if let (true, Some(bar)) = (path.ends_with("/resolve-version") && status.is_success(), *front.pass_threshold.lock().unwrap()) {
        let mut resolved: Value = serde_json::from_slice(&bytes).unwrap();
        resolved["passThreshold"] = json!(bar);
        bytes = serde_json::to_vec(&resolved).unwrap();
    }
    let mut response = (status, bytes).into_response();
    if let Some(content_type) = content_type {
        response.headers_mut().insert("content-type", content_type);
    }
    response
}

const AGENT: &str = r#"
def agent(world):
    assert world.slug == "helpdesk" and world.version_id and world.branch == "main", (world.slug, world.version_id, world.branch)
    world.tools["solve_ticket"](id=101)
    return "solved 101"
"#;

#[test]
fn runs_are_filed_pinned_to_their_version_and_ci_gates_on_the_bar() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(&dir.path().join("hub"));
    let state = Arc::new(Front {
        hub: hub.host.clone(),
        http: reqwest::Client::new(),
        seen: Mutex::default(),
        evaluations: AtomicUsize::new(0),
        pass_threshold: Mutex::new(None),
    });
    let (_runtime, addr) = serve(axum::Router::new().fallback(front).with_state(state.clone()));
    let host = format!("http://{addr}");
    let env = [("GATEWAY_HOST", host.as_str()), ("GATEWAY_PUBLIC_KEY", hub.public.as_str()), ("GATEWAY_SECRET_KEY", hub.secret.as_str())];
    let work = dir.path().join("work");
    let helpdesk = world(&work);
    std::fs::write(work.join("agent.py"), AGENT).unwrap();
    let path = helpdesk.to_str().unwrap();

    // A clean checkout (just pushed) files its run pinned to the pushed version.
    let pushed = gateway(&work, &["bench", "push", path, "--slug", "helpdesk"], &env);
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);
    let version = pushed.json()["versionId"].as_str().unwrap().to_string();
    state.forget();
    let out = gateway(&work, &["worlds", "run", "--path", path, "--agent", "agent.py"], &env);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    assert_eq!((result["reward"].as_f64(), result["evaluationId"].as_str()), (Some(1.0), Some("ev-1")), "{result}");
    assert_eq!(result["world"], json!({"slug": "helpdesk", "branch": "main", "versionId": version, "variant": "solve-101", "filed": true}));
    let created = &state.bodies("/evaluations")[0];
    assert_eq!(
        created,
        &json!({"versionId": version, "model": "sdk-dev-loop", "rolloutsPerExample": 1, "metadata": {"source": "sdk-world-run", "variant": "solve-101"}})
    );
    let traces = state.bodies("/api/public/ingestion");
    assert_eq!(traces.len(), 1, "one rollout trace per sample");
    let trace = &traces[0]["batch"][0];
    assert_eq!((trace["type"].as_str(), trace["body"]["sessionId"].as_str()), (Some("trace-create"), Some("ev-1:solve-101:0")));
    assert_eq!((trace["body"]["environment"].as_str(), trace["body"]["output"].as_str()), (Some("rollouts"), Some("solved 101")));
    let samples = state.bodies("/evaluations/ev-1/samples");
    let sample = &samples[0]["samples"][0];
    for (key, want) in [
        ("exampleId", json!("solve-101")),
        ("task", json!("solve-101")),
        ("rolloutIndex", json!(0)),
        ("prompt", json!("Ticket 101 is fixed: solve it.")),
        ("completion", json!("solved 101")),
        ("reward", json!(1.0)),
        ("score", json!(1.0)),
        ("correct", json!(true)),
        ("rewards", json!({"solved": 1.0})),
    ] {
        assert_eq!(sample[key], want, "{key}: {sample}");
    }
    let info = &sample["info"];
    assert_eq!(
        (info["variant"].as_str(), info["source"].as_str(), &info["agentError"]),
        (Some("solve-101"), Some("sdk-world-run"), &Value::Null)
    );
    assert_eq!(info["callLog"][0]["tool"], "solve_ticket");
    assert_eq!((info["sessionId"].as_str(), info["traceId"].as_str().map(str::len)), (Some("ev-1:solve-101:0"), Some(32)));
    assert_eq!(
        state.bodies("/evaluations/ev-1/finalize")[0],
        json!({"status": "COMPLETED", "metrics": {"avg_reward": 1.0, "reward": 1.0, "rewards.solved": 1.0}})
    );

    // A drifted checkout runs and grades, but is not filed, and says why before the agent runs.
    std::fs::write(helpdesk.join("README.md"), "drifted\n").unwrap();
    let out = gateway(&work, &["worlds", "run", "--path", path, "--agent", "oracle"], &env);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("note: running unfiled — this checkout differs from main@"), "{}", out.stderr);
    assert!(out.stderr.contains("in 1 file(s) (README.md)"), "{}", out.stderr);
    assert_eq!((out.json()["world"]["filed"].as_bool(), out.json()["reward"].as_f64()), (Some(false), Some(1.0)));
    std::fs::remove_file(helpdesk.join("README.md")).unwrap();

    // A slug is pulled and run, pinned to what it resolved to.
    let out = gateway(&work, &["worlds", "run", "helpdesk@main", "--agent", "oracle", "--variant", "solve-103", "-m", "m-1"], &env);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    assert_eq!((result["evaluationId"].as_str(), result["world"]["versionId"].as_str()), (Some("ev-2"), Some(version.as_str())));
    assert_eq!(state.bodies("/evaluations")[1]["model"], "m-1");

    // worlds ci --agent oracle: push onto the PR branch, run every task, file, pass the default bar.
    state.forget();
    let outputs = work.join("outputs");
    let summary = work.join("summary.md");
    let ci_env = [
        env[0],
        env[1],
        env[2],
        ("GITHUB_HEAD_REF", "fix/solve"),
        ("GITHUB_SHA", "abcdef1234567890"),
        ("GITHUB_REPOSITORY", "acme/helpdesk"),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];
    let ci = ["worlds", "ci", "--path", path, "--agent", "oracle", "-o", outputs.to_str().unwrap()];
    let out = gateway(&work, &ci, &ci_env);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("pushed helpdesk@fix/solve ("), "{}", out.stderr);
    assert!(out.stderr.contains("gate: avg reward 1.000 clears the 0.7 bar (default bar)."), "{}", out.stderr);
    let result = out.json();
    assert_eq!(
        (result["evaluationId"].as_str(), result["samples"].as_i64(), result["branch"].as_str()),
        (Some("ev-3"), Some(2), Some("fix/solve"))
    );
    assert_eq!(result["metrics"], json!({"n": 2, "avg_reward": 1.0, "metrics": {"solved": 1.0}}));
    let ci_version = result["versionId"].as_str().unwrap().to_string();
    let pushes = state.bodies("/api/public/benchmark-containers/versions");
    assert_eq!((pushes[0]["branch"].as_str(), pushes[0]["force"].as_bool()), (Some("fix/solve"), Some(true)));
    assert_eq!(pushes[0]["changeReason"], "[ci] acme/helpdesk@abcdef123456");
    let created = &state.bodies("/evaluations")[0];
    assert_eq!(
        created,
        &json!({"versionId": ci_version, "model": "oracle", "numExamples": 2, "rolloutsPerExample": 1,
                "metadata": {"source": "worlds-ci", "branch": "fix/solve", "agent": "oracle"}})
    );
    let finalized = &state.bodies("/evaluations/ev-3/finalize")[0];
    assert_eq!((finalized["status"].as_str(), finalized["metrics"]["avg_reward"].as_f64()), (Some("COMPLETED"), Some(1.0)));
    assert!(outputs.join("world-runs/ci--helpdesk--fix-solve/solve-103.0.json").is_file());
    let written = std::fs::read_to_string(&summary).unwrap();
    let hash = &result["versionId"];
    assert!(written.starts_with("### World sim · helpdesk@fix/solve\n\n| | |\n|---|---|\n| avg reward | 1.000 |\n| samples | 2 |\n| evaluation | ev-3 |\n| model | oracle |\n| agent | oracle |\n| version | "), "{written} {hash}");
    assert!(written.ends_with("| gate | PASS — bar 0.7 (default bar) |\n\n"), "{written}");

    // A broken world: its solution no longer solves anything; under the world's own bar, ci fails.
    std::fs::write(helpdesk.join("api/handlers.py"), "def solve_ticket(ctx, args, query, body):\n    return ctx.invalid('broken')\n\n\ndef ticket_stats(ctx, args, query, body):\n    return {}\n").unwrap();
    *state.pass_threshold.lock().unwrap() = Some(0.8);
    let out = gateway(&work, &ci, &ci_env);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("gate: avg reward 0.000 is below the 0.8 bar (world pass bar)."), "{}", out.stderr);
    let result = out.json();
    assert_eq!((result["evaluationId"].as_str(), result["metrics"]["avg_reward"].as_f64()), (Some("ev-4"), Some(0.0)));
    assert!(result["tasks"][0]["errors"][0].as_str().unwrap().contains("solution call 0 (solve_ticket) answered"), "{result}");
    assert_ne!(result["versionId"].as_str(), Some(ci_version.as_str()), "the broken tree is a new version");
    assert!(std::fs::read_to_string(&summary).unwrap().ends_with("| gate | FAIL — bar 0.8 (world pass bar) |\n\n"));

    // --fail-under wins over the world's bar.
    let out = gateway(&work, &[&ci[..], &["--fail-under", "0"]].concat(), &ci_env);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("gate: avg reward 0.000 clears the 0 bar (--fail-under)."), "{}", out.stderr);

    // Refusals: no directory; no branch to run; --no-push on a drifted tree.
    let out = gateway(&work, &["worlds", "ci", "--path", "nowhere", "--agent", "oracle"], &env);
    assert_eq!((out.code, out.stderr.trim()), (1, "--path is not a directory: nowhere"));
    let fresh = world(&work.join("fresh"));
    let out = gateway(&work, &["worlds", "ci", "--path", fresh.to_str().unwrap(), "--agent", "oracle"], &env);
    assert_eq!(out.code, 1);
    assert!(out.stderr.starts_with("no branch to run: pass --branch"), "{}", out.stderr);
    let no_push = [&ci[..], &["--no-push", "--fail-under", "0"]].concat();
    let out = gateway(&work, &no_push, &ci_env);
    assert_eq!(out.code, 0, "the pushed tree is clean: {}", out.stderr);
    assert!(!out.stderr.contains("pushed "), "{}", out.stderr);
    std::fs::write(helpdesk.join("notes.md"), "drift\n").unwrap();
    let out = gateway(&work, &no_push, &ci_env);
    assert_eq!(
        (out.code, out.stderr.trim()),
        (1, "--no-push needs a clean checkout with a recorded base (.gateway) — push first, or drop --no-push.")
    );
}

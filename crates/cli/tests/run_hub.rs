//! `gateway worlds run` and `gateway worlds ci` against our real hub (`gateway hub
//! serve`, started here): a clean checkout files its run pinned to its version, a
//! drifted one runs unfiled, a slug is pulled and run; `worlds ci --agent oracle`
//! pushes onto the PR branch, runs every task, files and passes — and with a broken
//! world fails under the world's own pass bar (`[eval] pass_threshold` in its
//! gateway-env.toml, answered by the hub's resolve-version as `passThreshold`).
//!
//! Every filing lands in the hub's own evaluation routes and is read back through
//! `gateway environment rollouts|samples|performance` — ours, and the original's
//! (which must print the same bytes) when ~/.cache/gateway-reference is installed.
//! A recording pass-through in front of the hub keeps the request bodies that no
//! read view returns (the create body's metadata, the sample's prompt and
//! completion, the rollout traces sent to /api/public/ingestion); it answers nothing
//! itself.

use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};

mod common;
mod support;
use support::{gateway, serve, world, Out};

/// The recording pass-through: every request forwarded to the hub as is.
struct Front {
    hub: String,
    http: reqwest::Client,
    /// (path, body) of every JSON request, in order.
    seen: Mutex<Vec<(String, Value)>>,
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
    let target = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    if let Ok(parsed) = serde_json::from_slice::<Value>(&bytes) {
        front.seen.lock().unwrap().push((parts.uri.path().to_string(), parsed));
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
    let mut response = (status, answered.bytes().await.unwrap().to_vec()).into_response();
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

/// Reads the hub back through `gateway environment …`: ours, and the original's when
/// installed (the same state read twice must print the same bytes).
struct Views<'a> {
    work: &'a Path,
    env: [(&'a str, &'a str); 3],
    original: Option<std::path::PathBuf>,
}

impl Views<'_> {
    fn read(&self, args: &[&str]) -> Value {
        let ours = gateway(self.work, &[&["environment"], args].concat(), &self.env);
        assert_eq!(ours.code, 0, "environment {args:?}: {}", ours.stderr);
        if let Some(original) = &self.original {
            let mut command = std::process::Command::new(original);
            command.args([&["environment"], args].concat()).current_dir(self.work).env("COLUMNS", "400");
            for (name, value) in self.env {
                command.env(name, value);
            }
            let theirs = command.output().unwrap();
            assert_eq!(theirs.status.code(), Some(0), "original environment {args:?}: {}", String::from_utf8_lossy(&theirs.stderr));
            assert_eq!(String::from_utf8_lossy(&theirs.stdout), ours.stdout, "environment {args:?}: the original prints otherwise");
        }
        ours.json()
    }
}

fn id(out: &Out, key: &str) -> String {
    out.json()[key].as_str().unwrap_or_else(|| panic!("no {key} in {}", out.stdout)).to_string()
}

#[test]
// One story read top to bottom: each run is checked against the evaluations, samples and
// performance the runs before it filed on the same hub, so its steps share that history.
#[allow(clippy::too_many_lines)]
fn runs_are_filed_pinned_to_their_version_and_ci_gates_on_the_bar() {
    let (_dir, hub, work) = common::start_in_temp();
    let state = Arc::new(Front { hub: hub.host.clone(), http: reqwest::Client::new(), seen: Mutex::default() });
    let (_runtime, addr) = serve(axum::Router::new().fallback(front).with_state(state.clone()));
    let host = format!("http://{addr}");
    let env = [("GATEWAY_HOST", host.as_str()), ("GATEWAY_PUBLIC_KEY", hub.public.as_str()), ("GATEWAY_SECRET_KEY", hub.secret.as_str())];
    let helpdesk = world(&work);
    std::fs::write(work.join("agent.py"), AGENT).unwrap();
    let path = helpdesk.to_str().unwrap();
    let views = Views { work: &work, env, original: common::reference().map(|(gateway, _)| gateway) };

    // A clean checkout (just pushed) files its run pinned to the pushed version.
    let pushed = gateway(&work, &["bench", "push", path, "--slug", "helpdesk"], &env);
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);
    let (version, container) = (id(&pushed, "versionId"), id(&pushed, "containerId"));
    state.forget();
    let out = gateway(&work, &["worlds", "run", "--path", path, "--agent", "agent.py"], &env);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    assert_eq!(result["reward"].as_f64(), Some(1.0), "{result}");
    let first = id(&out, "evaluationId");
    assert_eq!(result["world"], json!({"slug": "helpdesk", "branch": "main", "versionId": version, "variant": "solve-101", "filed": true}));
    assert_eq!(
        state.bodies("/evaluations")[0],
        json!({"versionId": version, "model": "sdk-dev-loop", "rolloutsPerExample": 1, "metadata": {"source": "sdk-world-run", "variant": "solve-101"}})
    );
    let traces = state.bodies("/api/public/ingestion");
    assert_eq!(traces.len(), 1, "one rollout trace per sample");
    let trace = &traces[0]["batch"][0];
    let session = format!("{first}:solve-101:0");
    assert_eq!((trace["type"].as_str(), trace["body"]["sessionId"].as_str()), (Some("trace-create"), Some(session.as_str())));
    assert_eq!((trace["body"]["environment"].as_str(), trace["body"]["output"].as_str()), (Some("rollouts"), Some("solved 101")));
    let sent = &state.bodies(&format!("/evaluations/{first}/samples"))[0]["samples"][0];
    assert_eq!((&sent["prompt"], &sent["completion"]), (&json!("Ticket 101 is fixed: solve it."), &json!("solved 101")));

    // What the hub kept, read back: the rollout, its sample, the task's performance.
    let rollouts = views.read(&["rollouts", &container]);
    let rollout = &rollouts["rollouts"][0];
    assert_eq!(
        (&rollout["id"], &rollout["model"], &rollout["status"], &rollout["containerVersionId"], &rollout["sampleCount"]),
        (&json!(first), &json!("sdk-dev-loop"), &json!("COMPLETED"), &json!(version), &json!(1))
    );
    assert_eq!(rollout["metrics"], json!({"avg_reward": 1.0, "reward": 1.0, "rewards.solved": 1.0}));
    let samples = views.read(&["samples", &container, &first]);
    let sample = &samples["samples"][0];
    for (key, want) in [
        ("exampleId", json!("solve-101")),
        ("task", json!("solve-101")),
        ("rolloutIndex", json!(0)),
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
    assert_eq!((info["sessionId"].as_str(), info["traceId"].as_str().map(str::len)), (Some(session.as_str()), Some(32)));

    // A drifted checkout runs and grades, but is not filed, and says why before the agent runs.
    std::fs::write(helpdesk.join("README.md"), "drifted\n").unwrap();
    let out = gateway(&work, &["worlds", "run", "--path", path, "--agent", "oracle"], &env);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("note: running unfiled — this checkout differs from main@"), "{}", out.stderr);
    assert!(out.stderr.contains("in 1 file(s) (README.md)"), "{}", out.stderr);
    assert_eq!((out.json()["world"]["filed"].as_bool(), out.json()["reward"].as_f64()), (Some(false), Some(1.0)));
    std::fs::remove_file(helpdesk.join("README.md")).unwrap();
    assert_eq!(views.read(&["rollouts", &container])["rollouts"].as_array().unwrap().len(), 1, "nothing filed");

    // A slug is pulled and run, pinned to what it resolved to.
    let out = gateway(&work, &["worlds", "run", "helpdesk@main", "--agent", "oracle", "--variant", "solve-103", "-m", "m-1"], &env);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["world"]["versionId"].as_str(), Some(version.as_str()));
    let second = id(&out, "evaluationId");
    let rollouts = views.read(&["rollouts", &container]);
    assert_eq!((&rollouts["rollouts"][0]["id"], &rollouts["rollouts"][0]["model"]), (&json!(second), &json!("m-1")), "newest first");

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
    let third = id(&out, "evaluationId");
    assert_eq!((result["samples"].as_i64(), result["branch"].as_str()), (Some(2), Some("fix/solve")));
    assert_eq!(result["metrics"], json!({"n": 2, "avg_reward": 1.0, "metrics": {"solved": 1.0}}));
    let ci_version = result["versionId"].as_str().unwrap().to_string();
    let pushes = state.bodies("/api/public/benchmark-containers/versions");
    assert_eq!((pushes[0]["branch"].as_str(), pushes[0]["force"].as_bool()), (Some("fix/solve"), Some(true)));
    assert_eq!(pushes[0]["changeReason"], "[ci] acme/helpdesk@abcdef123456");
    assert_eq!(
        state.bodies("/evaluations")[0],
        json!({"versionId": ci_version, "model": "oracle", "numExamples": 2, "rolloutsPerExample": 1,
                "metadata": {"source": "worlds-ci", "branch": "fix/solve", "agent": "oracle"}})
    );
    let rollout = &views.read(&["rollouts", &container])["rollouts"][0];
    assert_eq!(
        (&rollout["id"], &rollout["status"], &rollout["containerVersionId"], &rollout["numExamples"], &rollout["sampleCount"]),
        (&json!(third), &json!("COMPLETED"), &json!(ci_version), &json!(2), &json!(2))
    );
    assert_eq!(rollout["metrics"]["avg_reward"], json!(1.0));
    assert!(outputs.join("world-runs/ci--helpdesk--fix-solve/solve-103.0.json").is_file());
    let written = std::fs::read_to_string(&summary).unwrap();
    assert!(
        written.starts_with(&format!(
            "### World sim · helpdesk@fix/solve\n\n| | |\n|---|---|\n| avg reward | 1.000 |\n| samples | 2 |\n| evaluation | {third} |\n| model | oracle |\n| agent | oracle |\n| version | "
        )),
        "{written}"
    );
    assert!(written.ends_with("| gate | PASS — bar 0.7 (default bar) |\n\n"), "{written}");

    // A broken world that names its own bar: its solution no longer solves anything; under
    // the bar its manifest names (read by the hub from the pushed bundle), ci fails.
    std::fs::write(helpdesk.join("api/handlers.py"), "def solve_ticket(ctx, args, query, body):\n    return ctx.invalid('broken')\n\n\ndef ticket_stats(ctx, args, query, body):\n    return {}\n").unwrap();
    let manifest = std::fs::read_to_string(helpdesk.join("gateway-env.toml")).unwrap();
    std::fs::write(helpdesk.join("gateway-env.toml"), format!("{manifest}\n[eval]\npass_threshold = 0.8\n")).unwrap();
    let out = gateway(&work, &ci, &ci_env);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("gate: avg reward 0.000 is below the 0.8 bar (world pass bar)."), "{}", out.stderr);
    let result = out.json();
    let fourth = id(&out, "evaluationId");
    assert_eq!(result["metrics"]["avg_reward"].as_f64(), Some(0.0));
    assert!(result["tasks"][0]["errors"][0].as_str().unwrap().contains("solution call 0 (solve_ticket) answered"), "{result}");
    let broken_version = result["versionId"].as_str().unwrap().to_string();
    assert_ne!(broken_version, ci_version, "the broken tree is a new version");
    assert!(std::fs::read_to_string(&summary).unwrap().ends_with("| gate | FAIL — bar 0.8 (world pass bar) |\n\n"));
    let resolved = gateway(&work, &["bench", "pull", "helpdesk@fix/solve", "-t", work.join("copy").to_str().unwrap()], &env);
    assert_eq!(resolved.code, 0, "{}", resolved.stderr);
    assert_eq!(state.bodies("/resolve-version").last().unwrap()["ref"], "fix/solve");

    // Performance per task across every filed run: two versions, one of them failing.
    let performance = views.read(&["performance", &container]);
    let tasks = performance["tasks"].as_array().unwrap();
    let task = |name: &str| tasks.iter().find(|t| t["task"] == name).unwrap_or_else(|| panic!("no {name} in {performance}")).clone();
    let (t101, t103) = (task("solve-101"), task("solve-103"));
    // solve-101: the agent's run and ci's (1.0, 1.0) and the broken run (0.0).
    assert_eq!((&t101["sampleCount"], &t101["nullScoreCount"], &t101["passRate"]), (&json!(3), &json!(0), &json!(2.0 / 3.0)));
    assert_eq!(t101["perVersion"][0]["containerVersionId"], json!(broken_version), "newest version first");
    assert_eq!(t101["perVersion"][0]["avgReward"], json!(0.0));
    assert_eq!(t103["sampleCount"], json!(3));
    assert_eq!(performance["totalSamples"], json!(6));
    let samples = views.read(&["samples", &container, &fourth]);
    assert_eq!(samples["samples"].as_array().unwrap().len(), 2);
    assert!(samples["samples"].as_array().unwrap().iter().all(|s| s["reward"] == json!(0.0) && s["correct"] == json!(false)));

    // --fail-under wins over the world's bar.
    let out = gateway(&work, &[&ci[..], &["--fail-under", "0"]].concat(), &ci_env);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("gate: avg reward 0.000 clears the 0 bar (--fail-under)."), "{}", out.stderr);

    // A bar the hub would ignore is refused before the push.
    let good = std::fs::read_to_string(helpdesk.join("gateway-env.toml")).unwrap();
    std::fs::write(helpdesk.join("gateway-env.toml"), good.replace("pass_threshold = 0.8", "pass_threshold = 80")).unwrap();
    let out = gateway(&work, &ci, &ci_env);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("gateway-env.toml [eval] pass_threshold must be a number from 0 to 1, not 80"), "{}", out.stderr);
    std::fs::write(helpdesk.join("gateway-env.toml"), good).unwrap();

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

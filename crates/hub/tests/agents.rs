//! The agents platform through the hub on loopback, on SQLite and (when
//! `GATEWAY_TEST_POSTGRES_URL` reaches a server) on PostgreSQL: project secrets sealed
//! at rest and never answered; agents registered (201, upserted by name); datasets
//! imported and read back; runs queued, claimed by workers and reported on (heartbeat,
//! state, metrics, rollouts, finish), a lost lease re-claimed and the stale worker
//! refused, two workers racing for one run; SDK runs; agent builds and the release
//! gate's verdicts; bad bodies refused with nothing written; another project's key
//! seeing none of it.

use gateway_hub_client::client::{Client, PushOptions};
use gateway_test_support::{postgres_url, text, TestHub as Hub};
use gateway_world::json::{self, Value};
use std::path::Path;

fn expect(hub: &Hub, status: u16, method: &str, path: &str, body: Option<&str>) -> Value {
    let (got, answer) = hub.call(method, path, body);
    assert_eq!(got, status, "{method} {path} {body:?}: {answer:?}");
    answer
}

fn refused(hub: &Hub, status: u16, method: &str, path: &str, body: &str, words: &str) {
    let answer = expect(hub, status, method, path, Some(body));
    assert!(text(&answer, "message").contains(words), "{method} {path} {body}: {answer:?}");
}

const AGENT: &str = r#"{"name": "crm-analyst", "image": "registry.local/crm:v1", "capabilities": ["tool-use"],
  "manifest": {"version": "1.0.0"}, "resources": {"memory": "4g"}, "description": "CRM analyst",
  "taskInputSchema": {"type": "object", "required": ["question"], "properties": {"question": {"type": "string"}}}}"#;

/// The platform's routes in one project's life, step by step; another project sees none of it.
fn platform(hub: &Hub) {
    let secret = secrets(hub);
    let agent_id = agents(hub);
    let dataset_id = datasets(hub);
    let (run, verify_job) = start_runs(hub, &agent_id, &dataset_id);
    report_on_a_run(hub, secret, &run, &verify_job);
    take_over_a_lapsed_run(hub, &run, &verify_job);
    cancel_and_sdk_runs(hub);
    other_project_sees_nothing(hub, &run);
}

/// Secrets: sealed at rest, never answered. The secret's value.
fn secrets(hub: &Hub) -> &'static str {
    let secret = "sk-very-secret-value-4242";
    let created = expect(
        hub,
        201,
        "POST",
        "/api/public/secrets",
        Some(&format!(r#"{{"name": "OPENAI_API_KEY", "value": "{secret}", "description": "model key"}}"#)),
    );
    assert_eq!((text(&created, "displayValue"), text(&created, "scope")), ("****".into(), "agent".into()));
    refused(hub, 409, "POST", "/api/public/secrets", &format!(r#"{{"name": "OPENAI_API_KEY", "value": "{secret}"}}"#), "already exists");
    let put =
        expect(hub, 200, "PUT", "/api/public/secrets/OPENAI_API_KEY", Some(&format!(r#"{{"value": "{secret}-2", "scope": "both"}}"#)));
    assert_eq!(
        (text(&put, "scope"), text(&put, "description")),
        ("both".into(), "model key".into()),
        "a PUT without a description keeps it"
    );
    expect(hub, 201, "PUT", "/api/public/secrets/WORKER_TOKEN", Some(r#"{"value": "wt", "scope": "worker"}"#));
    refused(hub, 400, "POST", "/api/public/secrets", r#"{"name": "bad-name", "value": "x"}"#, "invalid secret key");
    refused(hub, 400, "POST", "/api/public/secrets", r#"{"name": "EMPTY", "value": ""}"#, "cannot be empty");
    refused(hub, 400, "POST", "/api/public/secrets", r#"{"name": "SCOPED", "value": "x", "scope": "everyone"}"#, "'scope' must be one of");
    let listed = expect(hub, 200, "GET", "/api/public/secrets", None);
    assert_eq!(text(&listed, "secrets.0.name"), "OPENAI_API_KEY");
    assert_eq!(text(&listed, "secrets.1.name"), "WORKER_TOKEN");
    assert_eq!(listed.get("secrets").and_then(Value::as_array).map(Vec::len), Some(2), "refused secrets were not written");
    assert!(!json::canonical(&listed).contains(secret), "a list never carries a value");
    if let Ok(database) = std::fs::read(hub.data.path().join("hub.sqlite")) {
        assert!(!database.windows(secret.len()).any(|w| w == secret.as_bytes()), "the value is sealed at rest");
    }
    secret
}

/// Agents: registered (upserted by name) and listed. The agent's id.
fn agents(hub: &Hub) -> String {
    let registered = expect(hub, 201, "POST", "/api/public/agents/register", Some(AGENT));
    let agent_id = text(&registered, "id");
    assert_eq!(text(&registered, "compatibleAlgorithms"), r#"["gepa","apo","evals"]"#);
    let again = expect(hub, 201, "POST", "/api/public/agents/register", Some(&AGENT.replace("crm:v1", "crm:v2")));
    assert_eq!((text(&again, "id"), text(&again, "created")), (agent_id.clone(), "false".into()), "registration upserts by name");
    refused(hub, 400, "POST", "/api/public/agents/register", r#"{"name": "x"}"#, "'image' is required");
    refused(
        hub,
        400,
        "POST",
        "/api/public/agents/register",
        r#"{"name": "x", "image": "i", "taskInputSchema": {"type": 5}}"#,
        "not a valid JSON Schema",
    );
    refused(hub, 400, "POST", "/api/public/agents/register", r#"{"name": "x", "image": "i", "imagee": 1}"#, "unknown member");
    let agents = expect(hub, 200, "GET", "/api/public/agents", None);
    assert_eq!(agents.get("agents").and_then(Value::as_array).map(Vec::len), Some(1));
    assert_eq!(
        (text(&agents, "agents.0.image"), text(&agents, "agents.0.taskInputSchema.required")),
        ("registry.local/crm:v2".into(), r#"["question"]"#.into())
    );
    agent_id
}

/// Datasets: imported (replaced by name), listed, shown. The dataset's id.
fn datasets(hub: &Hub) -> String {
    let imported = expect(
        hub,
        201,
        "POST",
        "/api/public/datasets/import",
        Some(r#"{"name": "crm-v1", "items": [{"input": {"question": "a"}}, {"input": {"question": "b"}}], "description": "two"}"#),
    );
    let dataset_id = text(&imported, "datasetId");
    assert_eq!((text(&imported, "datasetName"), text(&imported, "itemCount")), ("crm-v1".into(), "2".into()));
    let replaced = expect(
        hub,
        200,
        "POST",
        "/api/public/datasets/import",
        Some(r#"{"name": "crm-v1", "items": [{"input": {"question": "c"}}, {"input": {"question": "d"}}, {"input": "e"}]}"#),
    );
    assert_eq!((text(&replaced, "datasetId"), text(&replaced, "itemCount")), (dataset_id.clone(), "3".into()));
    refused(
        hub,
        400,
        "POST",
        "/api/public/datasets/import",
        r#"{"name": "bad", "items": [{"input": 1}, {"metadata": {}}]}"#,
        "'items[1].input' is required",
    );
    refused(hub, 400, "POST", "/api/public/datasets/import", r#"{"name": "bad", "items": []}"#, "empty");
    let listed = expect(hub, 200, "GET", "/api/public/datasets", None);
    assert_eq!((text(&listed, "data.0.id"), text(&listed, "data.0.name")), (dataset_id.clone(), "crm-v1".into()));
    assert_eq!(listed.get("data").and_then(Value::as_array).map(Vec::len), Some(1), "the refused imports wrote nothing");
    let shown = expect(hub, 200, "GET", "/api/public/datasets/crm-v1", None);
    assert_eq!((text(&shown, "items.0.input.question"), text(&shown, "items.2.input")), ("c".into(), "e".into()));
    dataset_id
}

/// Runs queued (refused starts queue nothing) and a verify job. The run's id and the job's.
fn start_runs(hub: &Hub, agent_id: &str, dataset_id: &str) -> (String, String) {
    refused(
        hub,
        400,
        "POST",
        "/api/public/runs/start",
        &format!(r#"{{"algorithmName": "sgd", "agentId": "{agent_id}", "datasetId": "{dataset_id}"}}"#),
        "unknown algorithm 'sgd'",
    );
    refused(
        hub,
        404,
        "POST",
        "/api/public/runs/start",
        &format!(r#"{{"algorithmName": "gepa", "agentId": "ghost", "datasetId": "{dataset_id}"}}"#),
        "no agent 'ghost'",
    );
    refused(
        hub,
        404,
        "POST",
        "/api/public/runs/start",
        r#"{"algorithmName": "gepa", "agentId": "crm-analyst", "datasetId": "ghost"}"#,
        "no dataset 'ghost'",
    );
    assert_eq!(text(&expect(hub, 200, "GET", "/api/public/runs", None), "runs"), "[]", "refused starts queue nothing");
    let started = expect(
        hub,
        201,
        "POST",
        "/api/public/runs/start",
        Some(&format!(
            r#"{{"algorithmName": "gepa", "agentId": "{agent_id}", "datasetId": "crm-v1", "name": "r1", "config": {{"epochs": 2}}}}"#
        )),
    );
    let run = text(&started, "runId");
    assert_eq!((text(&started, "runNumber"), text(&started, "status")), ("1".into(), "queued".into()));
    let verify = expect(hub, 202, "POST", "/api/public/runs/verify", Some(r#"{"algorithmName": "evals", "agentId": "crm-analyst"}"#));
    let verify_job = text(&verify, "jobId");
    (run, verify_job)
}

/// A worker with the control-plane secret gets the run and the secrets it needs, and
/// reports on it.
fn report_on_a_run(hub: &Hub, secret: &str, run: &str, verify_job: &str) {
    let job = claim(hub, "w1", r#"["run"]"#, 5, true);
    assert_eq!(
        (text(&job, "runId"), text(&job, "algorithmName"), text(&job, "config.epochs")),
        (run.to_string(), "gepa".into(), "2".into())
    );
    assert_eq!(
        (text(&job, "agentImage"), text(&job, "datasetName"), text(&job, "attempt")),
        ("registry.local/crm:v2".into(), "crm-v1".into(), "1".into())
    );
    assert_eq!(text(&job, "secrets"), format!(r#"{{"OPENAI_API_KEY":"{secret}-2"}}"#));
    assert_eq!(text(&job, "workerSecrets"), format!(r#"{{"OPENAI_API_KEY":"{secret}-2","WORKER_TOKEN":"wt"}}"#));
    assert_eq!(text(&claim(hub, "w9", r#"["run"]"#, 60, false), "runId"), "null", "one run, one holder");
    let verify_claim = claim(hub, "w9", r#"["verify"]"#, 60, false);
    assert_eq!(
        (text(&verify_claim, "jobId"), text(&verify_claim, "secrets")),
        (verify_job.to_string(), "null".into()),
        "no secret without X-Worker-Secret"
    );
    let (status, _) =
        hub.call_as(&hub.one, "POST", "/api/public/runs/claim", Some(r#"{"workerId": "w"}"#), &[("x-worker-secret", "guess")]);
    assert_eq!(status, 401);

    let path = |tail: &str| format!("/api/public/runs/{run}/{tail}");
    expect(hub, 200, "POST", &path("heartbeat"), Some(r#"{"workerId": "w1", "leaseSeconds": 5}"#));
    assert_eq!(text(&expect(hub, 200, "PATCH", &path("state"), Some(r#"{"state": "running", "workerId": "w1"}"#)), "state"), "running");
    expect(hub, 200, "POST", &path("state"), Some(r#"{"state": {"generation": 1, "best_idx": 0}}"#));
    let metrics = expect(
        hub,
        200,
        "POST",
        &path("metrics"),
        Some(r#"{"metrics": [{"name": "score", "value": 0.5, "step": 1}, {"name": "score", "value": 0.75, "step": 2}]}"#),
    );
    assert_eq!(text(&metrics, "metricPoints"), "2");
    refused(hub, 400, "POST", &path("metrics"), r#"{"metrics": [{"name": "score"}]}"#, "'metrics[0].value' is required");
    let rollout = expect(hub, 201, "POST", &path("rollouts"), Some(r#"{"name": "t1", "sessionId": "ses-1"}"#));
    assert_eq!(text(&rollout, "sessionId"), "ses-1");
}

/// The worker goes quiet: its lease lapses, another worker takes the run over, and
/// the first one's reports are refused from then on.
fn take_over_a_lapsed_run(hub: &Hub, run: &str, verify_job: &str) {
    let path = |tail: &str| format!("/api/public/runs/{run}/{tail}");
    std::thread::sleep(std::time::Duration::from_millis(6500));
    let taken = claim(hub, "w2", r#"["run", "verify"]"#, 60, false);
    assert_eq!((text(&taken, "runId"), text(&taken, "attempt")), (run.to_string(), "2".into()));
    let (status, stale) = hub.call("POST", &path("finish"), Some(r#"{"state": "completed", "workerId": "w1"}"#));
    assert_eq!(status, 409, "{stale:?}");
    assert!(text(&stale, "message").contains("held by worker 'w2'"));
    refused(hub, 400, "POST", &path("finish"), r#"{"state": "done", "workerId": "w2"}"#, "'state' must be one of");
    let done = expect(hub, 200, "POST", &path("finish"), Some(r#"{"state": "COMPLETED", "workerId": "w2", "result": {"best": 0.75}}"#));
    assert_eq!(
        (text(&done, "state"), text(&done, "metrics.score.value"), text(&done, "rollouts")),
        ("completed".into(), "0.75".into(), "1".into())
    );
    assert_eq!(text(&done, "algorithmState.generation"), "1");
    expect(hub, 200, "POST", &path("finish"), Some(r#"{"state": "completed", "workerId": "w2"}"#));
    refused(hub, 409, "POST", &path("finish"), r#"{"state": "failed", "workerId": "w2"}"#, "already completed");
    let heartbeat = expect(hub, 200, "POST", &path("heartbeat"), None);
    assert_eq!(text(&heartbeat, "state"), "completed");
    expect(
        hub,
        200,
        "POST",
        &format!("/api/public/runs/{verify_job}/finish"),
        Some(r#"{"state": "completed", "result": {"valid": true}}"#),
    );
}

/// A run cancelled while queued (the next heartbeat says so), and an SDK run: created
/// running, never claimed.
fn cancel_and_sdk_runs(hub: &Hub) {
    // Cancelled while queued: the next heartbeat says so.
    let queued = expect(
        hub,
        201,
        "POST",
        "/api/public/runs/start",
        Some(r#"{"algorithmName": "apo", "agentId": "crm-analyst", "datasetId": "crm-v1"}"#),
    );
    let second = text(&queued, "runId");
    expect(hub, 200, "POST", &format!("/api/public/runs/{second}/cancel"), None);
    assert_eq!(text(&expect(hub, 200, "POST", &format!("/api/public/runs/{second}/heartbeat"), None), "state"), "cancelled");
    assert_eq!(text(&claim(hub, "w3", r#"["run", "verify"]"#, 60, false), "runId"), "null");

    // An SDK run: created running, never claimed.
    let sdk = expect(
        hub,
        201,
        "POST",
        "/api/public/runs",
        Some(r#"{"name": "local", "source": "sdk", "config": {}, "labels": {}, "tags": [], "gitSha": ""}"#),
    );
    assert_eq!(text(&sdk, "runNumber"), "3");
    refused(hub, 400, "POST", "/api/public/runs", r#"{"name": "x", "source": "platform"}"#, "cannot be 'platform'");
    let runs = expect(hub, 200, "GET", "/api/public/runs?limit=10", None);
    assert_eq!(
        [text(&runs, "runs.0.source"), text(&runs, "runs.1.state"), text(&runs, "runs.2.state")],
        ["sdk".to_string(), "cancelled".into(), "completed".into()]
    );
    assert_eq!(text(&expect(hub, 200, "GET", "/api/public/runs?source=sdk", None), "runs.0.name"), "local");
    refused(hub, 400, "GET", "/api/public/runs?limit=many", "", "'limit'");
}

/// Another project sees none of it.
fn other_project_sees_nothing(hub: &Hub, run: &str) {
    for path in ["/api/public/secrets", "/api/public/agents", "/api/public/runs"] {
        let (status, answer) = hub.call_as(&hub.two, "GET", path, None, &[]);
        assert_eq!(status, 200);
        assert!(!json::canonical(&answer).contains("crm") && !json::canonical(&answer).contains("OPENAI"), "{path}: {answer:?}");
    }
    let (status, _) = hub.call_as(&hub.two, "GET", &format!("/api/public/runs/{run}"), None, &[]);
    assert_eq!(status, 404);
    let (status, _) = hub.call_as(&hub.two, "GET", "/api/public/datasets/crm-v1", None, &[]);
    assert_eq!(status, 404);
}

/// A worker claims a job of `kinds` (with the control-plane secret when asked): the job, or null.
fn claim(hub: &Hub, worker: &str, kinds: &str, lease: i64, with_secret: bool) -> Value {
    let secret_header = std::fs::read_to_string(hub.data.path().join("keys/host-secret")).unwrap();
    let body = format!(r#"{{"workerId": "{worker}", "kinds": {kinds}, "leaseSeconds": {lease}}}"#);
    let headers: Vec<(&str, &str)> = if with_secret { vec![("x-worker-secret", secret_header.trim())] } else { Vec::new() };
    let (status, answer) = hub.call_as(&hub.one, "POST", "/api/public/runs/claim", Some(&body), &headers);
    assert_eq!(status, 200, "{answer:?}");
    answer.get("job").cloned().unwrap_or_default()
}

/// Workers racing for queued runs: each run is handed to exactly one of them.
fn racing_workers(hub: &Hub) {
    let body = r#"{"algorithmName": "evals", "agentId": "crm-analyst", "datasetId": "crm-v1"}"#;
    let mut queued: Vec<String> = (0..6).map(|_| text(&expect(hub, 201, "POST", "/api/public/runs/start", Some(body)), "runId")).collect();
    let claimed: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                scope.spawn(move || {
                    let mut got = Vec::new();
                    loop {
                        let (status, answer) = hub.call("POST", "/api/public/runs/claim", Some(&format!(r#"{{"workerId": "racer-{i}"}}"#)));
                        assert_eq!(status, 200, "{answer:?}");
                        match answer.get("job").filter(|j| !matches!(j, Value::Null)) {
                            Some(job) => got.push(text(job, "runId")),
                            None => return got,
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut claimed = claimed;
    claimed.sort();
    queued.sort();
    assert_eq!(claimed, queued, "every queued run claimed exactly once");
}

/// Push a small world: its version id.
fn push(hub: &Hub, work: &Path) -> String {
    let world = work.join("scored");
    std::fs::create_dir_all(&world).unwrap();
    std::fs::write(world.join("pyproject.toml"), "[project]\nname = \"scored\"\nversion = \"0.1.0\"\n").unwrap();
    std::fs::write(world.join("main.py"), "print(1)\n").unwrap();
    let client = Client::new(&hub.api, &hub.one.0, &hub.one.1).unwrap();
    let pushed = client.push(&world, &PushOptions { message: Some("first".into()), ..Default::default() }).unwrap();
    text(&pushed, "versionId")
}

const EVALS: &str = "/api/public/benchmark-containers/evaluations";

/// An evaluation for `build` with `passed` of `graded` samples passing (and one ungraded), finalized when `status` is.
fn evaluation(hub: &Hub, version: &str, build: &str, graded: usize, passed: usize, status: Option<&str>) -> String {
    let created =
        expect(hub, 200, "POST", EVALS, Some(&format!(r#"{{"versionId": "{version}", "model": "m", "agentBuildId": "{build}"}}"#)));
    let id = text(&created, "evaluationId");
    let mut samples: Vec<String> =
        (0..graded).map(|i| format!(r#"{{"task": "t{i}", "reward": {}}}"#, if i < passed { "1.0" } else { "0.0" })).collect();
    samples.push(r#"{"task": "ungraded", "reward": null}"#.into());
    expect(hub, 200, "POST", &format!("{EVALS}/{id}/samples"), Some(&format!(r#"{{"samples": [{}]}}"#, samples.join(", "))));
    if let Some(status) = status {
        expect(hub, 200, "POST", &format!("{EVALS}/{id}/finalize"), Some(&format!(r#"{{"status": "{status}"}}"#)));
    }
    id
}

fn gate(hub: &Hub) {
    let work = tempfile::tempdir().unwrap();
    let version = push(hub, work.path());
    let build = |hash: &str, version: &str, sha: &str| {
        format!(
            r#"{{"agentId": "checkout-bot", "buildHash": "{hash}", "semanticVer": "{version}", "manifest": {{"tools": []}}, "attribution": {{"source": "ci", "commitSha": "{sha}"}}}}"#
        )
    };
    let first = expect(hub, 201, "POST", "/api/public/agent-builds", Some(&build("sha256:aaa", "2.4.0", "0123456789abcdef")));
    let id = text(&first, "id");
    let again = expect(hub, 200, "POST", "/api/public/agent-builds", Some(&build("sha256:aaa", "2.4.0", "0123456789abcdef")));
    assert_eq!(text(&again, "id"), id, "a build is unique per (agent, hash)");
    refused(hub, 400, "POST", "/api/public/agent-builds", r#"{"agentId": "x"}"#, "'buildHash' is required");

    // The three forms name the same build; two forms, none, or a short sha are refused.
    let gate = |query: &str| hub.call("GET", &format!("/api/public/agent-builds/gate?{query}"), None);
    for query in
        [format!("buildId={id}"), "buildId=sha256%3Aaaa".into(), "commitSha=0123456".into(), "agentId=checkout-bot&version=2.4.0".into()]
    {
        let (status, answer) = gate(&query);
        assert_eq!((status, text(&answer, "build.id"), text(&answer, "gate.verdict")), (200, id.clone(), "untested".into()), "{query}");
    }
    for (query, words) in [
        (format!("buildId={id}&commitSha=0123456"), "buildId and commitSha were given"),
        ("".into(), "none was given"),
        ("commitSha=0123".into(), "too short"),
        ("agentId=checkout-bot".into(), "go together"),
    ] {
        let (status, answer) = gate(&query);
        assert_eq!(status, 400, "{query}: {answer:?}");
        assert!(text(&answer, "message").contains(words), "{query}: {answer:?}");
    }
    assert_eq!(gate("buildId=bld_nope").0, 404);
    assert_eq!(gate("commitSha=fffffff").0, 404);

    // Its latest evaluation decides: running → untested; below the rule → blocked; then pass.
    let (_, verdict) = gate(&format!("buildId={id}"));
    assert!(text(&verdict, "gate.reasons.0").starts_with("no run has recorded this build yet"));
    let running = evaluation(hub, &version, &id, 3, 3, None);
    let (_, verdict) = gate(&format!("buildId={id}"));
    assert_eq!((text(&verdict, "gate.verdict"), text(&verdict, "evaluatedRuns.0.state")), ("untested".into(), "RUNNING".into()));
    expect(hub, 200, "POST", &format!("{EVALS}/{running}/finalize"), Some(r#"{"status": "COMPLETED"}"#));
    let (_, verdict) = gate(&format!("buildId={id}"));
    assert_eq!(
        (text(&verdict, "gate.verdict"), text(&verdict, "gate.gradedRollouts"), text(&verdict, "gate.minGradedRollouts")),
        ("blocked".into(), "3".into(), "5".into())
    );
    assert!(text(&verdict, "gate.reasons.0").starts_with("only 3 graded rollouts"), "{verdict:?}");
    let rule = expect(hub, 200, "PUT", "/api/public/agent-builds/gate-rule", Some(r#"{"threshold": 0.75, "minGradedRollouts": 4}"#));
    assert_eq!(text(&rule, "threshold"), "0.75");
    refused(hub, 400, "PUT", "/api/public/agent-builds/gate-rule", r#"{"threshold": 2}"#, "from 0 to 1");
    // The hash links too: 3 of 4 pass = 0.75.
    evaluation(hub, &version, "sha256:aaa", 4, 3, Some("COMPLETED"));
    let (_, verdict) = gate("agentId=checkout-bot&version=2.4.0");
    assert_eq!((text(&verdict, "gate.verdict"), text(&verdict, "gate.passRate")), ("pass".into(), "0.75".into()), "{verdict:?}");
    assert_eq!((text(&verdict, "evaluatedRuns.0.world"), text(&verdict, "evaluatedRuns.0.graded")), ("scored".into(), "4".into()));
    assert_eq!(verdict.get("evaluatedRuns").and_then(Value::as_array).map(Vec::len), Some(2));
    evaluation(hub, &version, &id, 4, 2, Some("COMPLETED"));
    let (_, verdict) = gate(&format!("buildId={id}"));
    assert_eq!(text(&verdict, "gate.verdict"), "blocked");
    assert_eq!(
        text(&verdict, "gate.reasons"),
        r#"["pass rate 0.50 in run "#.to_string() + &text(&verdict, "evaluatedRuns.0.runId") + r#" is below the threshold 0.75"]"#
    );
    evaluation(hub, &version, &id, 4, 4, Some("FAILED"));
    assert_eq!(text(&gate(&format!("buildId={id}")).1, "gate.verdict"), "blocked");

    // A commit two agents were built from is ambiguous.
    expect(
        hub,
        201,
        "POST",
        "/api/public/agent-builds",
        Some(&build("sha256:bbb", "2.5.0", "0123456789abcdef").replace("checkout-bot", "other-bot")),
    );
    let (status, answer) = gate("commitSha=0123456789");
    assert_eq!(status, 400);
    assert!(text(&answer, "message").contains("names 2 builds"), "{answer:?}");
    let (status, _) = hub.call_as(&hub.two, "GET", &format!("/api/public/agent-builds/gate?buildId={id}"), None, &[]);
    assert_eq!(status, 404, "another project's build is not found");
}

#[test]
fn the_agents_platform_on_sqlite() {
    let hub = Hub::start(None);
    platform(&hub);
    racing_workers(&hub);
    gate(&hub);
}

#[test]
fn the_agents_platform_on_postgres() {
    let Some(url) = postgres_url("the agents platform") else { return };
    let hub = Hub::start(Some(url));
    platform(&hub);
    racing_workers(&hub);
    gate(&hub);
}

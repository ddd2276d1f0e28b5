//! `gateway environment …` end to end: `gateway hub serve` on loopback, evaluations
//! filed by the ORIGINAL SDK (`gatewaysdk.benchmark_hub.evals.GatewayEvalsClient`,
//! its rollout traces through `/api/public/ingestion` included), then every read and
//! write command run by the ORIGINAL `gateway` and by ours against the same hub: what
//! is deterministic (the same state read twice) must print the same bytes and exit
//! the same; writes are compared by shape. Then both against a scripted platform whose
//! answers exercise the original's pydantic coercions: the same requests, the same
//! prints, the same exit codes. Skips with a NOTICE without the reference.

use gateway_test_support::RawRequest;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

mod common;
use common::*;

/// Run `program` against the hub with the key pair `keys`: `(exit code, stdout, stderr)`.
fn run_as(server: &Server, keys: (&str, &str), program: &Path, args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("GATEWAY_HOST", &server.host)
        .env("GATEWAY_PUBLIC_KEY", keys.0)
        .env("GATEWAY_SECRET_KEY", keys.1)
        .env("COLUMNS", "400")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn parse(text: &str) -> gateway_world::json::Value {
    gateway_world::json::parse(text).unwrap_or_else(|e| panic!("not JSON ({e:?}): {text}")).value
}

/// A member by dotted path (`rollouts.0.id`), as text.
fn member(text: &str, path: &str) -> String {
    let value = parse(text);
    let found = path.split('.').fold(&value, |v, k| match (v, k.parse::<usize>()) {
        (gateway_world::json::Value::Array(items), Ok(i)) => items.get(i).unwrap_or(&gateway_world::json::Value::Null),
        _ => v.get(k).unwrap_or(&gateway_world::json::Value::Null),
    });
    match found {
        gateway_world::json::Value::Str(s) => s.clone(),
        other => gateway_world::json::canonical(other),
    }
}

/// Files three evaluations through the original SDK: one on v1 (samples in both the
/// camelCase and the snake_case spellings, a null reward, sub-rewards; finalized with
/// metrics), one on v2 left RUNNING, one failed by `fail_open_evaluations`. Prints the
/// three ids.
const FILE_EVALUATIONS: &str = r#"
import sys, json
from gatewaysdk.benchmark_hub.evals import GatewayEvalsClient, fail_open_evaluations
v1, v2 = sys.argv[1], sys.argv[2]
c = GatewayEvalsClient.from_env()
shard = {"protocol": 1, "dispatchId": "d-1", "slotId": "123e4567-e89b-12d3-a456-426614174000", "index": 0, "total": 2, "jobId": "j-1"}
e1 = c.create_evaluation(v1, model="openrouter/a", run_id="run-1", dispatch_shard=shard, condition_id="cond",
                         agent_build_id="build", applied_agent_variation={"revision": 1}, num_examples=2,
                         rollouts_per_example=2, environment_ids=["env"], metadata={"source": "sdk-world-run"})
n = c.push_samples(e1, [
    {"exampleId": "alpha", "task": "alpha", "rolloutIndex": 0, "prompt": "Do alpha.", "completion": "done",
     "reward": 1.0, "score": 1.0, "correct": True, "rewards": {"solved": 1.0}, "info": {"variant": "base"}},
    {"example_id": "alpha", "task": "alpha", "rollout_index": 1, "reward": 0.25, "rewards": {"solved": 0.0}},
    {"example_id": "beta", "task": "beta", "rollout_index": 0, "reward": None, "correct": False, "answer": "x"},
])
assert n == 3, n
assert c.finalize_evaluation(e1, metrics={"n": 3, "avg_reward": 0.625}, cost={"usd": 0.01}) == "COMPLETED"
e2 = c.create_evaluation(v2, model="openrouter/b")
c.push_samples(e2, [{"exampleId": "alpha", "task": "alpha", "reward": 0.5, "score": 0.5}])
e3 = c.create_evaluation(v2, model="openrouter/c")
assert fail_open_evaluations("the runner died") == [e2, e3]
print(json.dumps([e1, e2, e3]))
"#;

/// The original `gateway` and ours against one hub, run in `work`.
struct Both<'a> {
    server: &'a Server,
    original: std::path::PathBuf,
    ours: &'a Path,
    work: &'a Path,
}

impl Both<'_> {
    /// `program` with the hub's project key: `(exit code, stdout, stderr)`.
    fn run(&self, program: &Path, args: &[&str]) -> (i32, String, String) {
        run_as(self.server, (&self.server.public, &self.server.secret), program, args, self.work)
    }

    /// A read: the same bytes from both, exit 0. Its output.
    fn same(&self, args: &[&str]) -> String {
        let (code_o, out_o, err_o) = self.run(&self.original, args);
        let (code_u, out_u, err_u) = self.run(self.ours, args);
        assert_eq!(code_o, 0, "original {args:?}: {err_o}");
        assert_eq!((code_u, out_u.as_str(), err_u.as_str()), (0, out_o.as_str(), ""), "ours {args:?} differs from the original");
        out_u
    }
}

#[test]
fn the_original_and_ours_read_the_same_environment() {
    let Some((original, python)) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let both = Both { server: &server, original, ours: Path::new(GATEWAY), work: tmp.path() };
    let (v1, v2, cid) = push_two_versions(&both);
    let [e1, e2, e3] = file_evaluations(&both, &python, &v1, &v2);
    reads_agree(&both, &cid, &v2, [&e1, &e2, &e3]);
    task_sets_agree(&both, &cid);
    run_and_refusals_agree(&both, &cid, &v1);
    another_project_sees_nothing(&both, &cid, &e1);
}

/// Two versions of one world. Their ids and the container's.
fn push_two_versions(both: &Both) -> (String, String, String) {
    let world = both.work.join("scored");
    std::fs::create_dir_all(&world).unwrap();
    std::fs::write(world.join("pyproject.toml"), "[project]\nname = \"scored\"\nversion = \"0.1.0\"\n").unwrap();
    std::fs::write(world.join("main.py"), "print(1)\n").unwrap();
    let v1 = field(&ok(both.server, both.ours, &["bench", "push", "scored", "-m", "first", "--author", "alice"], both.work), "versionId");
    std::fs::write(world.join("main.py"), "print(2)\n").unwrap();
    let pushed = ok(both.server, both.ours, &["bench", "push", "scored", "-m", "second", "--auto-bump"], both.work);
    let (v2, cid) = (field(&pushed, "versionId"), field(&pushed, "containerId"));
    (v1, v2, cid)
}

/// Evaluations filed by the original SDK, one failed open. Their ids.
fn file_evaluations(both: &Both, python: &Path, v1: &str, v2: &str) -> [String; 3] {
    let (code, filed, stderr) = both.run(python, &["-c", FILE_EVALUATIONS, v1, v2]);
    assert_eq!(code, 0, "{filed}\n{stderr}");
    let ids = parse(filed.trim());
    let id = |i: usize| ids.as_array().unwrap()[i].as_str().unwrap().to_string();
    let (e1, e2, e3) = (id(0), id(1), id(2));
    [e1, e2, e3]
}

/// Reads: the same bytes from both, exit 0.
fn reads_agree(both: &Both, cid: &str, v2: &str, [e1, e2, e3]: [&str; 3]) {
    let listed = both.same(&["environment", "list"]);
    assert_eq!((member(&listed, "environments.0.id"), member(&listed, "environments.0.versionCount")), (cid.to_string(), "2".into()));
    assert_eq!(member(&listed, "environments.0.latestVersion"), "0.1.1");
    both.same(&["environment", "list", "--slug", "scored", "-n", "5"]);
    let env = both.same(&["environment", "get", cid]);
    assert_eq!((member(&env, "evaluationCount"), member(&env, "versions.1.author")), ("3".into(), "alice".into()));
    both.same(&["environment", "get", "scored"]);
    let perf = both.same(&["environment", "performance", cid]);
    assert_eq!((member(&perf, "totalSamples"), member(&perf, "totalNullScoreSamples")), ("4".into(), "1".into()));
    assert_eq!(member(&perf, "tasks.0.task"), "alpha");
    assert_eq!(
        (member(&perf, "tasks.0.avgReward"), member(&perf, "tasks.0.passRate")),
        ("0.5833333333333334".into(), "0.3333333333333333".into())
    );
    assert_eq!(member(&perf, "tasks.0.perVersion.0.containerVersionId"), v2);
    assert_eq!((member(&perf, "tasks.1.task"), member(&perf, "tasks.1.avgReward")), ("beta".into(), "null".into()));
    let rollouts = both.same(&["environment", "rollouts", cid]);
    assert_eq!(
        [member(&rollouts, "rollouts.0.id"), member(&rollouts, "rollouts.1.id"), member(&rollouts, "rollouts.2.id")],
        [e3.to_string(), e2.to_string(), e1.to_string()]
    );
    assert_eq!(
        (member(&rollouts, "rollouts.0.status"), member(&rollouts, "rollouts.0.metrics")),
        ("FAILED".into(), r#"{"error":"the runner died"}"#.into())
    );
    assert_eq!(
        (member(&rollouts, "rollouts.2.status"), member(&rollouts, "rollouts.2.cost")),
        ("COMPLETED".into(), r#"{"usd":0.01}"#.into())
    );
    let samples = both.same(&["environment", "samples", cid, e1]);
    assert_eq!((member(&samples, "samples.1.exampleId"), member(&samples, "samples.1.rolloutIndex")), ("alpha".into(), "1".into()));
    assert!(member(&samples, "samples.0.info.traceId").len() == 32, "the SDK's rollout trace id is stamped into info: {samples}");
    assert_eq!(member(&samples, "samples.2.correct"), "false");
    both.same(&["environment", "samples", cid, e1, "-n", "1"]);
    both.same(&["environment", "agent-status"]);
}

/// link-task-set: the original creates and fills the set; ours then reuses it and
/// creates nothing (the names exist); both link the same set. create-task, --fresh,
/// --detach.
fn task_sets_agree(both: &Both, cid: &str) {
    let tasks = both.work.join("tasks.jsonl");
    std::fs::write(&tasks, "{\"id\": \"alpha\", \"prompt\": \"Do alpha.\", \"worlds\": [\"scored\"]}\n\n{\"task\": \"beta\", \"prompt\": \"Do beta.\", \"metadata\": {\"tier\": 1}}\n{\"prompt\": \"nameless\"}\n").unwrap();
    let tasks_arg = tasks.to_str().unwrap();
    let (code, linked_o, err_o) = both.run(&both.original, &["environment", "link-task-set", "scored", "--tasks", tasks_arg]);
    assert_eq!(code, 0, "{err_o}");
    let dataset = member(&linked_o, "taskSetDatasetId");
    assert_eq!(err_o, format!("# created task set {dataset} (scored scenarios)\n# task alpha created\n# task beta created\n"));
    let (code, linked_u, err_u) = both.run(both.ours, &["environment", "link-task-set", "scored", "--tasks", tasks_arg]);
    assert_eq!((code, linked_u.as_str(), err_u), (0, linked_o.as_str(), format!("# reusing linked task set {dataset}\n")));
    let listed_tasks = both.same(&["environment", "tasks", cid]);
    assert_eq!(
        (member(&listed_tasks, "tasks.0.metadata"), member(&listed_tasks, "tasks.1.metadata")),
        (r#"{"worlds":["scored"]}"#.into(), r#"{"tier":1}"#.into())
    );
    assert_eq!(parse(&listed_tasks).get("tasks").and_then(|t| t.as_array()).map(Vec::len), Some(2));

    // create-task: the same shape from both.
    for program in [both.original.as_path(), both.ours] {
        let (code, created, err) = both
            .run(program, &["environment", "create-task", &dataset, "--name", "gamma", "--prompt", "Do gamma.", "--expected-output", "ok"]);
        assert_eq!(code, 0, "{err}");
        let keys_of = |text: &str| parse(text).as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()).unwrap();
        assert_eq!(keys_of(&created), ["id", "datasetId", "name"]);
        assert_eq!((member(&created, "datasetId"), member(&created, "name")), (dataset.to_string(), "gamma".into()));
    }
    let listed_tasks = both.same(&["environment", "tasks", cid]);
    assert_eq!((member(&listed_tasks, "tasks.3.name"), member(&listed_tasks, "tasks.3.expectedOutput")), ("gamma".into(), "ok".into()));
    // --fresh: a new set, named by --name.
    let (code, fresh, err) = both.run(both.ours, &["environment", "link-task-set", cid, "--fresh", "--name", "v2 set"]);
    assert_eq!(code, 0, "{err}");
    let fresh_id = member(&fresh, "taskSetDatasetId");
    assert!(fresh_id != dataset && err == format!("# created task set {fresh_id} (v2 set)\n"), "{err}");
    // --detach, from both; then there is no set to show.
    let detached = both.same(&["environment", "link-task-set", "scored", "--detach"]);
    assert_eq!(member(&detached, "taskSetDatasetId"), "null");
    for program in [both.original.as_path(), both.ours] {
        let (code, _, err) = both.run(program, &["environment", "tasks", cid]);
        assert!(code == 1 && err.contains("404") && err.contains("no linked task set"), "{err}");
    }
}

/// run: no runner here — the same dispatch print, each model named on stderr, exit 1;
/// refusals and usage errors exit the same.
fn run_and_refusals_agree(both: &Both, cid: &str, v1: &str) {
    let args = ["environment", "run", "scored", "-m", "openrouter/a", "-m", "anthropic/b", "--version-id", v1];
    let (code_o, out_o, err_o) = both.run(&both.original, &args);
    let (code_u, out_u, err_u) = both.run(both.ours, &args);
    assert_eq!((code_o, code_u), (1, 1), "{err_o}\n{err_u}");
    assert_eq!((out_u.as_str(), err_u.as_str()), (out_o.as_str(), err_o.as_str()));
    assert!(err_u.starts_with("# openrouter/a: this self-hosted hub has no hosted runner"), "{err_u}");
    assert_eq!(member(&out_u, "versionLabel"), "0.1.0");

    // Refusals: exit 1 for both, ours in one line (the original's traceback ends in it).
    for args in [
        vec!["environment", "run-status", "run-1", "--wait", "2"],
        vec!["environment", "agent-trigger"],
        vec!["environment", "get", "no-such-env"],
        vec!["environment", "samples", cid, "eval_nope"],
    ] {
        let (code_o, _, err_o) = both.run(&both.original, &args);
        let (code_u, out_u, err_u) = both.run(both.ours, &args);
        assert_eq!((code_o, code_u, out_u.as_str()), (1, 1, ""), "{args:?}: {err_o}\n{err_u}");
        let line = err_u.trim_end();
        assert!(!line.contains('\n') && line.contains(" -> 4"), "{args:?}: {err_u}");
        let status = &line[line.find(" -> ").unwrap() + 4..][..3];
        assert!(err_o.contains(&format!("-> {status}")), "{args:?}: the original saw another status: {err_o}");
    }
    // Usage errors: exit 2 from both.
    for args in [vec!["environment", "run", "scored"], vec!["environment", "list", "--limit", "many"]] {
        assert_eq!(both.run(&both.original, &args).0, 2, "{args:?}");
        assert_eq!(both.run(both.ours, &args).0, 2, "{args:?}");
    }
}

/// Another project's key sees nothing of it.
fn another_project_sees_nothing(both: &Both, cid: &str, e1: &str) {
    let other =
        Command::new(GATEWAY).args(["hub", "keys", "create", "--project", "p2", "--data"]).arg(both.work.join("data")).output().unwrap();
    let other = String::from_utf8(other.stdout).unwrap();
    let (public, secret) = (field(&other, "publicKey"), field(&other, "secretKey"));
    for program in [both.original.as_path(), both.ours] {
        let (code, listed, _) = run_as(both.server, (&public, &secret), program, &["environment", "list"], both.work);
        assert_eq!((code, member(&listed, "environments")), (0, "[]".into()));
        for args in [vec!["environment", "get", cid], vec!["environment", "performance", cid], vec!["environment", "samples", cid, e1]] {
            let (code, _, err) = run_as(both.server, (&public, &secret), program, &args, both.work);
            assert!(code == 1 && err.contains("404"), "{args:?}: {err}");
        }
    }
}

// ------------------------------------------------------------------ a scripted platform

/// A platform on loopback answering by route from a fixed script (answers chosen to
/// exercise the pydantic coercions: ints for floats, strings for ints and booleans,
/// extra members, non-ASCII text), recording every request.
struct Platform {
    host: String,
    seen: Arc<Mutex<Vec<String>>>,
}

fn scripted(method: &str, path: &str) -> (u16, &'static str) {
    match (method, path) {
        ("GET", "/api/public/environments") => (
            200,
            r#"{"environments": [{"id": "c1", "slug": "slack-legal", "name": "Slack légal", "versionCount": "2", "zeta": {"a": [1, 2.5]}, "description": "d"}], "next": null}"#,
        ),
        ("GET", "/api/public/environments/c1") => (
            200,
            r#"{"zeta": 1, "id": "c1", "slug": "slack-legal", "name": "n", "visibility": "PRIVATE", "evaluationCount": 3.0,
                "versions": [{"versionId": "v", "contentHash": "h", "state": "READY", "createdAt": "t", "extra": true}]}"#,
        ),
        ("GET", "/api/public/environments/bad") => (200, r#"{"id": 1}"#),
        ("GET", "/api/public/environments/c1/task-set") => (404, r#"{"error": "not_found"}"#),
        ("GET", "/api/public/environments/c2/task-set") => (
            200,
            r#"{"datasetId": "ds1", "name": "set", "tasks": [{"id": "t1", "name": "alpha", "prompt": "p", "kind": "task", "metadata": {"k": 1}}]}"#,
        ),
        ("GET", "/api/public/environments/c1/performance") => (
            200,
            r#"{"tasks": [{"task": "t", "sampleCount": 2, "nullScoreCount": "0", "avgReward": 1, "passRate": "0.5", "rewardStddev": true,
                "perVersion": [{"containerVersionId": "v", "contentHash": "h", "createdAt": "t", "avgReward": 0, "sampleCount": 2, "nullScoreCount": 0}]}],
                "totalSamples": 2, "totalNullScoreSamples": 0}"#,
        ),
        ("GET", "/api/public/environments/c1/rollouts") => (
            200,
            r#"{"rollouts": [{"id": "e", "status": "COMPLETED", "createdAt": "t", "containerVersionId": "v", "versionHash": "h", "sampleCount": "4", "metrics": {"avg_reward": 1}}]}"#,
        ),
        ("GET", "/api/public/environments/c1/rollouts/e%2F1/samples") => (
            200,
            r#"{"evaluationId": "e/1", "samples": [{"id": "s", "rolloutIndex": "3", "reward": 1, "correct": "yes", "info": {"é": null}}]}"#,
        ),
        ("POST", "/api/public/environments/c1/run") => (
            200,
            r#"{"runConfigId": "rc", "versionLabel": "v1", "runs": [{"model": "a/b", "runId": "r1", "ok": "true"}, {"model": "c/d", "runId": "", "ok": false}]}"#,
        ),
        ("POST", "/api/public/environments/c3/run") => {
            (200, r#"{"runConfigId": "", "versionLabel": "v1", "runs": [{"model": "a/b", "runId": "r2", "ok": true}]}"#)
        }
        ("GET", "/api/public/environments/runs/r1") => (
            200,
            r#"{"status": "succeeded", "avgReward": 1, "settled": 1, "rollouts": [{"task": "t", "reward": "0.5", "verifiers": {"v": [1, "é"]}}, {"reward": null}]}"#,
        ),
        ("GET", "/api/public/environments/runs/r2") => (200, r#"{"status": "RUNNING", "settled": false, "rollouts": []}"#),
        ("POST", "/api/public/task-sets") => (200, r#"{"datasetId": "ds9", "name": "slack-legal scenarios"}"#),
        ("POST", "/api/public/task-sets/ds9/tasks") | ("POST", "/api/public/task-sets/d%20s/tasks") => {
            (200, r#"{"id": "t9", "datasetId": "ds9", "name": "x"}"#)
        }
        ("POST", "/api/public/environments/c1/task-set") => (200, r#"{"containerId": "c1", "taskSetDatasetId": "ds9"}"#),
        ("GET", "/api/public/environment-agent") => (
            200,
            r#"{"config": {"id": "a", "enabled": "on", "postEvalAnalysis": 0, "autoHeal": 1, "model": "m"}, "runs": [{"id": "r", "status": "DONE", "triggerType": "cron", "createdAt": "t"}]}"#,
        ),
        ("POST", "/api/public/environment-agent/trigger") => (200, r#"{"runId": "r", "status": "QUEUED", "triggerType": "manual"}"#),
        _ => (500, r#"{"error": "unscripted"}"#),
    }
}

impl Platform {
    fn start() -> Platform {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let host = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                answer(stream, &log);
            }
        });
        Platform { host, seen }
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

fn answer(stream: TcpStream, log: &Mutex<Vec<String>>) {
    let Some(request) = RawRequest::read(&mut BufReader::new(stream.try_clone().unwrap())) else { return };
    let header = |name: &str| request.header(name).unwrap_or_default();
    log.lock().unwrap().push(format!(
        "{} {} type={} auth={} body={}",
        request.method,
        request.target,
        header("content-type"),
        header("authorization"),
        String::from_utf8_lossy(&request.body)
    ));
    let path = request.target.split('?').next().unwrap_or_default();
    let (status, text) = scripted(&request.method, path);
    let mut stream = stream;
    let head =
        format!("HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", text.len());
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(text.as_bytes());
}

/// Run `program` against the scripted platform: `(exit code, stdout, stderr, requests)`.
fn against(platform: &Platform, program: &Path, args: &[&str], cwd: &Path) -> (i32, String, String, Vec<String>) {
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("GATEWAY_HOST", format!("{}/", platform.host))
        .env("GATEWAY_PUBLIC_KEY", "pk-test")
        .env("GATEWAY_SECRET_KEY", "sk-test")
        .env("COLUMNS", "400")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let requests = platform.take();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        requests,
    )
}

#[test]
fn the_original_and_ours_send_and_print_alike_on_a_scripted_platform() {
    let Some((original, _)) = reference() else { return };
    let ours = Path::new(GATEWAY);
    let platform = Platform::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tasks.jsonl"),
        "{\"id\": 7, \"prompt\": {\"a\": 1}, \"metadata\": {\"m\": \"é\"}, \"worlds\": null}\n{\"task\": \"b\", \"worlds\": [\"w\"]}\n",
    )
    .unwrap();
    let cases: &[(&[&str], bool)] = &[
        (&["environment", "list"], true),
        (&["environment", "list", "--slug", "slack legal/é", "-n", "3"], true),
        (&["environment", "get", "c1"], true),
        (&["environment", "tasks", "c2"], true),
        (&["environment", "performance", "c1"], true),
        (&["environment", "rollouts", "c1"], true),
        (&["environment", "samples", "c1", "e/1", "--limit", "7"], true),
        (&["environment", "run-status", "r1", "--wait", "99"], true),
        (&["environment", "run-status", "r2", "-w", "-3"], true),
        (&["environment", "agent-status"], true),
        (&["environment", "agent-trigger"], true),
        (&["environment", "create-task", "d s", "--name", "x é", "--prompt", "p"], true),
        (&["environment", "create-task", "ds9", "--name", "x", "--prompt", "p", "--expected-output", "o"], true),
        (&["environment", "run", "c1", "-m", "a/b", "-m", "c/d", "-n", "2", "-k", "3", "--version-id", "v"], true),
        // Still running at the deadline: named on stderr, exit 1.
        (&["environment", "run", "c3", "-m", "a/b", "--wait-timeout", "0"], true),
        (&["environment", "run", "c1", "-m", "a/b", "--no-wait"], true),
        (&["environment", "run", "c1", "-m", "a/b", "--no-wait", "--wait"], true),
        (&["environment", "link-task-set", "slack-legal", "--tasks", "tasks.jsonl", "--description", "d"], true),
        (&["environment", "link-task-set", "c1", "--detach"], true),
        // The answer fails the model: both exit 1.
        (&["environment", "get", "bad"], false),
        // A 404: both exit 1 (the original with a traceback, ours in one line).
        (&["environment", "tasks", "c1"], false),
    ];
    for (args, exact_stderr) in cases {
        let (code_o, out_o, err_o, requests_o) = against(&platform, &original, args, dir.path());
        let (code_u, out_u, err_u, requests_u) = against(&platform, ours, args, dir.path());
        assert!(!requests_o.is_empty(), "{args:?}: the original made no request: {err_o}");
        assert_eq!(requests_u, requests_o, "{args:?}: the requests differ");
        assert_eq!((code_u, out_u.as_str()), (code_o, out_o.as_str()), "{args:?}: stderr ours {err_u}\noriginal {err_o}");
        if *exact_stderr {
            assert_eq!(err_u, err_o, "{args:?}");
        } else {
            assert!(code_u == 1 && !err_u.trim_end().contains('\n'), "{args:?}: {err_u}");
        }
    }
}

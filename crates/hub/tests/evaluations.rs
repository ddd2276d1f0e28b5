//! Evaluations and the environment views through the hub on loopback, on SQLite and
//! (when `GATEWAY_TEST_POSTGRES_URL` reaches a server) on PostgreSQL: two versions
//! pushed, evaluations created on each, samples added, finalized; then performance,
//! rollouts and a rollout's samples computed from them; task sets, run, the agent and
//! ingestion; bad bodies refused with the member named (and nothing stored); another
//! project's key answered 404 everywhere.

use gateway_hub_client::client::{Client, PushOptions};
use gateway_test_support::{postgres_url, text, Key, TestHub as Hub};
use gateway_world::json::Value;
use std::path::Path;

fn call(hub: &Hub, key: &Key, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    hub.call_as(key, method, path, body, &[])
}

fn ok(hub: &Hub, method: &str, path: &str, body: Option<&str>) -> Value {
    let (status, answer) = call(hub, &hub.one, method, path, body);
    assert_eq!(status, 200, "{method} {path}: {answer:?}");
    answer
}

/// Push a small world twice (two versions): `(container id, v1, v2)`.
fn push_two_versions(hub: &Hub, work: &Path) -> (String, String, String) {
    let world = work.join("scored");
    std::fs::create_dir_all(&world).unwrap();
    std::fs::write(world.join("pyproject.toml"), "[project]\nname = \"scored\"\nversion = \"0.1.0\"\n").unwrap();
    std::fs::write(world.join("main.py"), "print(1)\n").unwrap();
    let client = Client::new(&hub.api, &hub.one.0, &hub.one.1).unwrap();
    let options = PushOptions { message: Some("first".into()), author: Some("alice".into()), ..Default::default() };
    let first = client.push(&world, &options).unwrap();
    std::fs::write(world.join("main.py"), "print(2)\n").unwrap();
    let options = PushOptions { message: Some("second".into()), auto_bump: true, ..Default::default() };
    let second = client.push(&world, &options).unwrap();
    (text(&first, "containerId"), text(&first, "versionId"), text(&second, "versionId"))
}

const EVALS: &str = "/api/public/benchmark-containers/evaluations";

fn create(hub: &Hub, version: &str, extra: &str) -> String {
    let body = format!(r#"{{"versionId": "{version}"{extra}}}"#);
    let created = ok(hub, "POST", EVALS, Some(&body));
    assert_eq!(text(&created, "status"), "RUNNING");
    text(&created, "evaluationId")
}

/// The environment `scored` with two versions, an evaluation of each: what the views read.
struct Evaluated {
    cid: String,
    v1: String,
    v2: String,
    e1: String,
    e2: String,
    /// `/api/public/environments/<cid>`.
    envs: String,
}

fn scenario(hub: &Hub) {
    let work = tempfile::tempdir().unwrap();
    let (cid, v1, v2) = push_two_versions(hub, work.path());
    let (e1, e2) = evaluate_both_versions(hub, &v1, &v2);
    let envs = format!("/api/public/environments/{cid}");
    let w = Evaluated { cid, v1, v2, e1, e2, envs };
    performance(hub, &w);
    rollouts(hub, &w);
    environment(hub, &w);
    let did = task_sets(hub, &w);
    no_runner_and_ingestion(hub, &w);
    bad_bodies_refused(hub, &w);
    another_project_finds_nothing(hub, &w, &did);
}

/// Two evaluations, one per version (samples added); the first finalized: once, again
/// the same (answered unchanged), never to another status.
fn evaluate_both_versions(hub: &Hub, v1: &str, v2: &str) -> (String, String) {
    let e1 = create(
        hub,
        v1,
        r#", "model": "m-1", "runId": "run-1", "numExamples": 2, "rolloutsPerExample": 1, "metadata": {"source": "test"},
            "dispatchShard": {"protocol": 1, "dispatchId": "d", "slotId": "123e4567-e89b-12d3-a456-426614174000", "index": 0, "total": 1, "jobId": "j"}"#,
    );
    let samples = r#"{"samples": [
        {"exampleId": "a", "task": "alpha", "rolloutIndex": 0, "prompt": "p", "completion": "c", "reward": 1.0, "score": 1, "correct": true, "rewards": {"x": 1.0}, "info": {"k": "v"}},
        {"exampleId": "a", "task": "alpha", "rolloutIndex": 1, "reward": 0},
        {"exampleId": "b", "task": "beta", "correct": false}
    ]}"#;
    let added = ok(hub, "POST", &format!("{EVALS}/{e1}/samples"), Some(samples));
    assert_eq!(text(&added, "inserted"), "3");
    let e2 = create(hub, v2, r#", "model": "m-2""#);
    ok(hub, "POST", &format!("{EVALS}/{e2}/samples"), Some(r#"{"samples": [{"exampleId": "alpha", "reward": 0.5, "score": 0.25}]}"#));
    let done = ok(hub, "POST", &format!("{EVALS}/{e1}/finalize"), Some(r#"{"status": "COMPLETED", "metrics": {"avg_reward": 0.5}}"#));
    assert_eq!((text(&done, "status"), text(&done, "sampleCount")), ("COMPLETED".into(), "3".into()));
    let again = ok(hub, "POST", &format!("{EVALS}/{e1}/finalize"), Some(r#"{}"#));
    assert_eq!(text(&again, "metrics"), r#"{"avg_reward":0.5}"#);
    let (status, refused) = call(hub, &hub.one, "POST", &format!("{EVALS}/{e1}/finalize"), Some(r#"{"status": "FAILED"}"#));
    assert_eq!(status, 409, "{refused:?}");
    let (status, refused) = call(hub, &hub.one, "POST", &format!("{EVALS}/{e1}/samples"), Some(r#"{"samples": [{"reward": 1}]}"#));
    assert!(status == 409 && text(&refused, "message").contains("COMPLETED"), "{refused:?}");
    (e1, e2)
}

/// Performance, per task then per version (newest first).
fn performance(hub: &Hub, w: &Evaluated) {
    let v1 = w.v1.as_str();
    let v2 = w.v2.as_str();
    let envs = w.envs.as_str();
    let perf = ok(hub, "GET", &format!("{envs}/performance"), None);
    assert_eq!((text(&perf, "totalSamples"), text(&perf, "totalNullScoreSamples")), ("4".into(), "1".into()));
    assert_eq!(text(&perf, "tasks.0.task"), "alpha");
    assert_eq!(text(&perf, "tasks.0.sampleCount"), "3");
    assert_eq!(text(&perf, "tasks.0.nullScoreCount"), "0");
    assert_eq!(text(&perf, "tasks.0.avgReward"), "0.5");
    assert_eq!(text(&perf, "tasks.0.avgScore"), "0.625", "the mean of the non-null scores (1 and 0.25)");
    assert_eq!(text(&perf, "tasks.0.passRate"), "0.3333333333333333", "correct=true, reward 0 <1, reward 0.5 <1");
    assert_eq!(text(&perf, "tasks.0.rewardStddev"), "0.5");
    assert_eq!(text(&perf, "tasks.0.perVersion.0.containerVersionId"), v2);
    assert_eq!(
        (text(&perf, "tasks.0.perVersion.0.avgReward"), text(&perf, "tasks.0.perVersion.0.sampleCount")),
        ("0.5".into(), "1".into())
    );
    assert_eq!(text(&perf, "tasks.0.perVersion.1.containerVersionId"), v1);
    assert_eq!(text(&perf, "tasks.0.perVersion.1.author"), "alice");
    assert_eq!(text(&perf, "tasks.1.task"), "beta");
    assert_eq!((text(&perf, "tasks.1.nullScoreCount"), text(&perf, "tasks.1.avgReward")), ("1".into(), "null".into()));
    assert_eq!((text(&perf, "tasks.1.passRate"), text(&perf, "tasks.1.rewardStddev")), ("0.0".into(), "null".into()));
    assert_eq!(text(&perf, "tasks.1.perVersion.0.nullScoreCount"), "1");
}

/// Rollouts newest first; a rollout's samples in the order sent.
fn rollouts(hub: &Hub, w: &Evaluated) {
    let cid = w.cid.as_str();
    let v1 = w.v1.as_str();
    let e1 = w.e1.as_str();
    let e2 = w.e2.as_str();
    let envs = w.envs.as_str();
    let rollouts = ok(hub, "GET", &format!("{envs}/rollouts"), None);
    assert_eq!((text(&rollouts, "rollouts.0.id"), text(&rollouts, "rollouts.1.id")), (e2.to_string(), e1.to_string()));
    assert_eq!(text(&rollouts, "rollouts.0.status"), "RUNNING");
    assert_eq!(text(&rollouts, "rollouts.0.semanticVersion"), "0.1.1");
    assert_eq!(text(&rollouts, "rollouts.1.metrics"), r#"{"avg_reward":0.5}"#);
    assert_eq!((text(&rollouts, "rollouts.1.sampleCount"), text(&rollouts, "rollouts.1.numExamples")), ("3".into(), "2".into()));
    assert_eq!(text(&rollouts, "rollouts.1.containerVersionId"), v1);
    let listed = ok(hub, "GET", &format!("{envs}/rollouts/{e1}/samples?limit=2"), None);
    assert_eq!(text(&listed, "evaluationId"), e1);
    assert_eq!(listed.get("samples").and_then(Value::as_array).map(Vec::len), Some(2));
    assert_eq!(text(&listed, "samples.0.rewards"), r#"{"x":1.0}"#);
    assert_eq!((text(&listed, "samples.0.reward"), text(&listed, "samples.0.correct")), ("1.0".into(), "true".into()));
    assert_eq!((text(&listed, "samples.1.rolloutIndex"), text(&listed, "samples.1.reward")), ("1".into(), "0.0".into()));
    let (status, _) = call(hub, &hub.one, "GET", &format!("/api/public/environments/{cid}/rollouts/eval_nope/samples"), None);
    assert_eq!(status, 404);
}

/// The environment: listed, by id and by slug.
fn environment(hub: &Hub, w: &Evaluated) {
    let cid = w.cid.as_str();
    let v2 = w.v2.as_str();
    let listing = ok(hub, "GET", "/api/public/environments?limit=5&slug=scored", None);
    assert_eq!(text(&listing, "environments.0.id"), cid);
    assert_eq!(
        (text(&listing, "environments.0.versionCount"), text(&listing, "environments.0.latestVersion")),
        ("2".into(), "0.1.1".into())
    );
    let env = ok(hub, "GET", "/api/public/environments/scored", None);
    assert_eq!((text(&env, "id"), text(&env, "evaluationCount")), (cid.to_string(), "2".into()));
    assert_eq!((text(&env, "versions.0.versionId"), text(&env, "versions.1.changeReason")), (v2.to_string(), "first".into()));
    assert_eq!(text(&env, "tags"), "[]");
}

/// Task sets: created, linked, a task updated, unlinked. The task set's id.
fn task_sets(hub: &Hub, w: &Evaluated) -> String {
    let envs = w.envs.as_str();
    let (status, _) = call(hub, &hub.one, "GET", &format!("{envs}/task-set"), None);
    assert_eq!(status, 404, "none linked yet");
    let set = ok(hub, "POST", "/api/public/task-sets", Some(r#"{"name": "scored scenarios"}"#));
    let did = text(&set, "datasetId");
    let task = ok(
        hub,
        "POST",
        &format!("/api/public/task-sets/{did}/tasks"),
        Some(r#"{"name": "alpha", "prompt": "Do alpha.", "metadata": {"worlds": ["scored"]}}"#),
    );
    let tid = text(&task, "id");
    let linked = ok(hub, "POST", &format!("{envs}/task-set"), Some(&format!(r#"{{"taskSetDatasetId": "{did}"}}"#)));
    assert_eq!(text(&linked, "taskSetDatasetId"), did);
    let updated = ok(
        hub,
        "POST",
        &format!("/api/public/task-sets/{did}/tasks/{tid}"),
        Some(r#"{"changeReason": "clearer", "prompt": "Do alpha now."}"#),
    );
    assert_eq!(text(&updated, "changeReason"), "clearer");
    let shown = ok(hub, "GET", &format!("{envs}/task-set"), None);
    assert_eq!(
        (text(&shown, "name"), text(&shown, "tasks.0.prompt"), text(&shown, "tasks.0.kind")),
        ("scored scenarios".into(), "Do alpha now.".into(), "task".into())
    );
    assert_eq!(text(&ok(hub, "GET", "/api/public/environments", None), "environments.0.taskSetDatasetId"), did);
    ok(hub, "POST", &format!("{envs}/task-set"), Some(r#"{"taskSetDatasetId": null}"#));
    assert_eq!(call(hub, &hub.one, "GET", &format!("{envs}/task-set"), None).0, 404);
    did
}

/// No runner, no agent: the shapes the client reads, with the reason; ingestion
/// answered per event.
fn no_runner_and_ingestion(hub: &Hub, w: &Evaluated) {
    let envs = w.envs.as_str();
    let dispatched = ok(hub, "POST", &format!("{envs}/run"), Some(r#"{"models": ["a/b", "c/d"]}"#));
    assert_eq!((text(&dispatched, "runs.1.model"), text(&dispatched, "runs.1.ok")), ("c/d".into(), "false".into()));
    assert!(text(&dispatched, "runs.0.error").contains("no hosted runner"));
    assert_eq!(text(&dispatched, "versionLabel"), "0.1.1");
    assert_eq!(call(hub, &hub.one, "POST", &format!("{envs}/run"), Some("{}")).0, 400);
    assert_eq!(call(hub, &hub.one, "GET", "/api/public/environments/runs/r1?waitSeconds=5", None).0, 404);
    assert_eq!(text(&ok(hub, "GET", "/api/public/environment-agent", None), "config"), "null");
    assert_eq!(call(hub, &hub.one, "POST", "/api/public/environment-agent/trigger", Some("{}")).0, 400);
    let (status, ingested) = call(
        hub,
        &hub.one,
        "POST",
        "/api/public/ingestion",
        Some(
            r#"{"batch": [{"id": "e1", "type": "trace-create", "body": {"id": "t1", "sessionId": "s"}}, {"id": "e2", "type": "trace-create", "body": {}}]}"#,
        ),
    );
    assert_eq!((status, text(&ingested, "successes.0.id"), text(&ingested, "errors.0.id")), (207, "e1".into(), "e2".into()));
}

/// Bad bodies: refused, the member named, nothing stored.
fn bad_bodies_refused(hub: &Hub, w: &Evaluated) {
    let cid = w.cid.as_str();
    let v1 = w.v1.as_str();
    let e2 = w.e2.as_str();
    let envs = w.envs.as_str();
    for (path, body, named) in [
        (EVALS.to_string(), "{}".to_string(), "'versionId'"),
        (EVALS.to_string(), format!(r#"{{"versionId": "{v1}", "numExamples": "3"}}"#), "'numExamples' must be an integer"),
        (EVALS.to_string(), format!(r#"{{"versionId": "{v1}", "rolloutsPerExample": 1.5}}"#), "'rolloutsPerExample'"),
        (EVALS.to_string(), format!(r#"{{"versionId": "{v1}", "environmentIds": ["a", 2]}}"#), "'environmentIds[1]'"),
        (EVALS.to_string(), format!(r#"{{"versionId": "{v1}", "metadata": []}}"#), "'metadata' must be an object"),
        (EVALS.to_string(), format!(r#"{{"versionId": "{v1}", "model_name": "x"}}"#), "'model_name'"),
        (
            EVALS.to_string(),
            format!(
                r#"{{"versionId": "{v1}", "dispatchShard": {{"protocol": 1, "dispatchId": "d", "slotId": "123e4567-e89b-12d3-a456-426614174000", "index": 0, "total": 1, "jobId": "j"}}}}"#
            ),
            "runId",
        ),
        (
            EVALS.to_string(),
            format!(r#"{{"versionId": "{v1}", "runId": "r", "dispatchShard": {{"protocol": 1}}}}"#),
            "must contain exactly",
        ),
        (format!("{EVALS}/{e2}/samples"), r#"{"samples": {}}"#.to_string(), "'samples' must be a list"),
        (
            format!("{EVALS}/{e2}/samples"),
            r#"{"samples": [{"reward": 1}, {"reward": "high"}]}"#.to_string(),
            "'samples[1].reward' must be a number",
        ),
        (format!("{EVALS}/{e2}/samples"), r#"{"samples": [{"correct": 1}]}"#.to_string(), "'samples[0].correct' must be a boolean"),
        (format!("{EVALS}/{e2}/samples"), r#"{"samples": [{"rolloutIndex": -1}]}"#.to_string(), "'samples[0].rolloutIndex'"),
        (format!("{EVALS}/{e2}/samples"), r#"{"samples": [{"example_id": "a"}]}"#.to_string(), "'samples[0].example_id'"),
        (format!("{EVALS}/{e2}/samples"), r#"{"samples": [{"reward": NaN}]}"#.to_string(), "finite"),
        (format!("{EVALS}/{e2}/finalize"), r#"{"status": "DONE"}"#.to_string(), "'status' must be COMPLETED or FAILED"),
        (format!("{EVALS}/{e2}/finalize"), r#"{"metrics": 3}"#.to_string(), "'metrics' must be an object"),
    ] {
        let (status, refused) = call(hub, &hub.one, "POST", &path, Some(&body));
        assert_eq!(status, 400, "{body}: {refused:?}");
        assert_eq!(text(&refused, "error"), "bad_request");
        assert!(text(&refused, "message").contains(named), "{body}: {refused:?}");
    }
    let (status, _) = call(hub, &hub.one, "POST", EVALS, Some(r#"{"versionId": "ver_nope"}"#));
    assert_eq!(status, 404);
    // A version whose push was never finalized cannot be evaluated.
    let api = "/api/public/benchmark-containers";
    let pending = ok(
        hub,
        "POST",
        &format!("{api}/versions"),
        Some(&format!(
            r#"{{"containerId": "{cid}", "contentHash": "{}", "bundleSha256": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "bundleSizeBytes": 0, "branch": "main", "baseVersionId": null}}"#,
            "0".repeat(64)
        )),
    );
    let (status, refused) = call(hub, &hub.one, "POST", EVALS, Some(&format!(r#"{{"versionId": "{}"}}"#, text(&pending, "versionId"))));
    assert!(status == 400 && text(&refused, "message").contains("PENDING"), "{refused:?}");
    let rollouts = ok(hub, "GET", &format!("{envs}/rollouts"), None);
    assert_eq!(text(&rollouts, "rollouts.0.sampleCount"), "1", "a refused batch stores none of its samples");
    assert_eq!(rollouts.get("rollouts").and_then(Value::as_array).map(Vec::len), Some(2), "no refused create was stored");
}

/// Another project: not found, everywhere.
fn another_project_finds_nothing(hub: &Hub, w: &Evaluated, did: &str) {
    let v1 = w.v1.as_str();
    let e1 = w.e1.as_str();
    let e2 = w.e2.as_str();
    let envs = w.envs.as_str();
    for (method, path, body) in [
        ("POST", EVALS.to_string(), format!(r#"{{"versionId": "{v1}"}}"#)),
        ("POST", format!("{EVALS}/{e2}/samples"), r#"{"samples": []}"#.to_string()),
        ("POST", format!("{EVALS}/{e2}/finalize"), "{}".to_string()),
        ("GET", envs.to_string(), String::new()),
        ("GET", "/api/public/environments/scored".to_string(), String::new()),
        ("GET", format!("{envs}/performance"), String::new()),
        ("GET", format!("{envs}/rollouts"), String::new()),
        ("GET", format!("{envs}/rollouts/{e1}/samples"), String::new()),
        ("POST", format!("{envs}/task-set"), format!(r#"{{"taskSetDatasetId": "{did}"}}"#)),
        ("POST", format!("/api/public/task-sets/{did}/tasks"), r#"{"name": "x", "prompt": ""}"#.to_string()),
        ("POST", format!("{envs}/run"), r#"{"models": ["a/b"]}"#.to_string()),
    ] {
        let (status, answer) = call(hub, &hub.two, method, &path, Some(&body));
        assert_eq!(status, 404, "{method} {path}: {answer:?}");
    }
    let (status, listing) = call(hub, &hub.two, "GET", "/api/public/environments", None);
    assert_eq!((status, text(&listing, "environments")), (200, "[]".into()));
    let (status, _) = call(hub, &("pk-lf-nope".into(), "sk".into()), "GET", "/api/public/environments", None);
    assert_eq!(status, 401);
}

/// Sample batches racing a finalize: each batch is stored whole (200) or refused whole
/// (409, once finalized), and the evaluation's count is exactly the stored samples.
fn batches_race_a_finalize(hub: &Hub) {
    let work = tempfile::tempdir().unwrap();
    let (cid, v1, _) = push_two_versions(hub, work.path());
    let eid = create(hub, &v1, "");
    let batch = format!(r#"{{"samples": [{}]}}"#, [r#"{"task": "t", "reward": 0.5}"#; 10].join(", "));
    let stored = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..6)
            .map(|_| {
                scope.spawn(|| {
                    let mut stored = 0;
                    for _ in 0..5 {
                        let (status, answer) = call(hub, &hub.one, "POST", &format!("{EVALS}/{eid}/samples"), Some(&batch));
                        match status {
                            200 => stored += 10,
                            409 => {}
                            other => panic!("{other}: {answer:?}"),
                        }
                    }
                    stored
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(30));
        ok(hub, "POST", &format!("{EVALS}/{eid}/finalize"), Some(r#"{"status": "FAILED"}"#));
        workers.into_iter().map(|w| w.join().unwrap()).sum::<i64>()
    });
    let rollouts = ok(hub, "GET", &format!("/api/public/environments/{cid}/rollouts"), None);
    assert_eq!(text(&rollouts, "rollouts.0.sampleCount"), stored.to_string());
    let listed = ok(hub, "GET", &format!("/api/public/environments/{cid}/rollouts/{eid}/samples?limit=1000"), None);
    assert_eq!(listed.get("samples").and_then(Value::as_array).map(|s| s.len() as i64), Some(stored));
    let perf = ok(hub, "GET", &format!("/api/public/environments/{cid}/performance"), None);
    assert_eq!(text(&perf, "totalSamples"), stored.to_string());
}

#[test]
fn evaluations_and_views_on_sqlite() {
    scenario(&Hub::start(None));
}

#[test]
fn sample_batches_and_a_finalize_race_on_sqlite() {
    batches_race_a_finalize(&Hub::start(None));
}

#[test]
fn sample_batches_and_a_finalize_race_on_postgres() {
    let Some(url) = postgres_url("the evaluations tests") else { return };
    batches_race_a_finalize(&Hub::start(Some(url)));
}

#[test]
fn evaluations_and_views_on_postgres() {
    let Some(url) = postgres_url("the evaluations tests") else { return };
    scenario(&Hub::start(Some(url)));
}

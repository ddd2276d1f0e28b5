//! Live sessions and stored tasks through the hub on loopback: a pushed world
//! opened on the embedded World Host, called, seeded, reset, graded (assertions,
//! python, and a rubric judged by a fake OpenAI-compatible server), exported and
//! closed; stored tasks created, versioned, listed, validated; another project's
//! key refused at every route.

use gateway_hub::HubConfig;
use gateway_hub_client::client::{Client, PushOptions};
use gateway_test_support::copy_tree;
use gateway_world::json::{self, Value};
use std::path::Path;

struct Hub {
    api: String,
    one: (String, String),
    two: (String, String),
    runtime: tokio::runtime::Runtime,
    _data: tempfile::TempDir,
}

fn start() -> Hub {
    let data = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (api, one, two) = runtime.block_on(async {
        let config = HubConfig { data: data.path().to_path_buf(), database: None, objects: None };
        let hub = config.open(None, Default::default()).await.expect("open hub");
        let (_, p1, s1) = gateway_hub::create_key(hub.meta.as_ref(), "one").await.unwrap();
        let (_, p2, s2) = gateway_hub::create_key(hub.meta.as_ref(), "two").await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(gateway_hub::server::serve_on(hub, listener));
        (format!("http://{addr}"), (p1, s1), (p2, s2))
    });
    Hub { api, one, two, runtime, _data: data }
}

fn call(hub: &Hub, key: &(String, String), method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let http = reqwest::blocking::Client::new();
    let url = format!("{}{path}", hub.api);
    let request = match method {
        "GET" => http.get(url),
        "DELETE" => http.delete(url),
        "PATCH" => http.patch(url),
        _ => http.post(url),
    };
    let request = request.basic_auth(&key.0, Some(&key.1)).header("content-type", "application/json");
    let request = match body {
        Some(body) => request.body(body.to_string()),
        None => request,
    };
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    (status, json::parse(&text).map(|p| p.value).unwrap_or(Value::Str(text)))
}

fn text(value: &Value, path: &str) -> String {
    let found = path.split('.').fold(value, |v, k| v.get(k).unwrap_or(&Value::Null));
    match found {
        Value::Str(s) => s.clone(),
        other => json::canonical(other),
    }
}

fn push_helpdesk(hub: &Hub, work: &Path) {
    let world = work.join("helpdesk");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    let client = Client::new(&hub.api, &hub.one.0, &hub.one.1).unwrap();
    let options = PushOptions { slug: Some("helpdesk".into()), message: Some("first".into()), ..Default::default() };
    client.push(&world, &options).unwrap();
}

const TASK: &str = r#"{"name": "solve-101", "instruction": "Solve ticket 101.",
    "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]},
    "tools": ["get_ticket", "solve_ticket"], "metadata": {"team": "support"}}"#;

fn do_call(hub: &Hub, sid: &str, body: &str) -> Value {
    let (status, posted) = call(hub, &hub.one, "POST", &format!("/api/public/world-sessions/{sid}/calls"), Some(body));
    assert_eq!(status, 200, "{posted:?}");
    let (status, polled) = call(hub, &hub.one, "GET", &format!("/api/public/world-sessions/{sid}/calls/{}", text(&posted, "callId")), None);
    assert_eq!((status, text(&polled, "done")), (200, "true".to_string()), "the first poll finds the call done");
    polled
}

#[test]
fn a_session_on_a_pushed_world_end_to_end() {
    let hub = start();
    let work = tempfile::tempdir().unwrap();
    push_helpdesk(&hub, work.path());

    // Open on an inline task, with the api surface.
    let body = format!(r#"{{"slug": "helpdesk@main", "task": {TASK}, "reuseWarm": true, "surfaces": ["api"]}}"#);
    let (status, opened) = call(&hub, &hub.one, "POST", "/api/public/world-sessions", Some(&body));
    assert_eq!(status, 200, "{opened:?}");
    let sid = text(&opened, "sessionId");
    assert_eq!(text(&opened, "task.source"), "inline");
    assert_eq!(text(&opened, "instruction"), "Solve ticket 101.");
    let tools = text(&opened, "tools");
    assert!(tools.contains("get_ticket(id)") && !tools.contains("delete_ticket"), "{tools}");

    // The api surface answers with the session token, and only with it.
    let (url, token) = (text(&opened, "surfaces.api.url"), text(&opened, "surfaces.api.token"));
    let http = reqwest::blocking::Client::new();
    let ticket = http.get(format!("{url}/api/v2/tickets/101")).bearer_auth(&token).send().unwrap();
    assert_eq!(ticket.status().as_u16(), 200);
    assert_eq!(http.get(format!("{url}/api/v2/tickets/101")).bearer_auth("nope").send().unwrap().status().as_u16(), 401);

    // Calls: flat args routed to the path; a tool outside the task refused as the call's error.
    let solved = do_call(&hub, &sid, r#"{"kind": "call", "tool": "solve_ticket", "args": {"id": 101}}"#);
    assert_eq!(text(&solved, "result.body.status"), "solved", "{solved:?}");
    let refused = do_call(&hub, &sid, r#"{"kind": "call", "tool": "delete_ticket", "args": {"id": 101}}"#);
    assert!(text(&refused, "error").starts_with("tool_not_allowed"), "{refused:?}");
    let graded = do_call(&hub, &sid, r#"{"kind": "grade"}"#);
    assert_eq!((text(&graded, "result.reward"), text(&graded, "result.rewards")), ("1.0".into(), r#"{"solved":1.0}"#.into()));
    // Beyond the original: what changed since the task's start, and each check explained.
    assert_eq!(text(&graded, "result.diff.counts"), r#"{"added":0,"changed":1,"removed":0}"#, "{graded:?}");
    assert!(text(&graded, "result.checks").contains(r#""id":"solved","passed":true"#), "{graded:?}");
    let seeded = do_call(
        &hub,
        &sid,
        r#"{"kind": "seed", "args": {"mode": "append", "rows": {"customers": [{"id": "C9", "name": "Zed", "email": "zed@example.com", "tier": "free", "created_at": "2026-03-01T00:00:00Z"}]}}}"#,
    );
    assert_eq!(text(&seeded, "result.seeded"), "1", "{seeded:?}");
    let bad_seed = do_call(&hub, &sid, r#"{"kind": "seed", "args": {"rows": {"ghosts": [{"id": 1}]}}}"#);
    assert!(!text(&bad_seed, "error").is_empty(), "{bad_seed:?}");
    do_call(&hub, &sid, r#"{"kind": "reset"}"#);
    let state = do_call(&hub, &sid, r#"{"kind": "state"}"#);
    assert_eq!(text(&state, "result.tickets.101.status"), "open");
    assert_eq!(text(&state, "result.customers.C9"), "null", "reset drops the seeded row");

    // The call log pages by cursor, oldest first: the agent's two requests on the data
    // plane, then the calls API's (tests/call_log.rs has the rest of it).
    let (_, page) = call(&hub, &hub.one, "GET", &format!("/api/public/world-sessions/{sid}/calls?limit=3"), None);
    let calls = page.get("calls").and_then(Value::as_array).unwrap().clone();
    assert_eq!((calls.len(), text(&calls[0], "seq"), text(&calls[0], "tool")), (3, "1".to_string(), "GET /api/v2/tickets/101".to_string()));
    assert_eq!((text(&calls[0], "surface"), text(&calls[1], "status")), ("api".to_string(), "401".to_string()));
    assert_eq!(
        (text(&calls[2], "seq"), text(&calls[2], "tool"), text(&calls[2], "surface")),
        ("3".into(), "solve_ticket".into(), "control".into())
    );
    let cursor = text(&page, "nextCursor");
    let (_, rest) = call(&hub, &hub.one, "GET", &format!("/api/public/world-sessions/{sid}/calls?limit=3&cursor={cursor}"), None);
    assert_eq!(rest.get("calls").and_then(Value::as_array).map(Vec::len), Some(3));

    // Another project sees none of it.
    for (method, path) in [
        ("GET", format!("/api/public/world-sessions/{sid}")),
        ("POST", format!("/api/public/world-sessions/{sid}/calls")),
        ("GET", format!("/api/public/world-sessions/{sid}/calls")),
        ("DELETE", format!("/api/public/world-sessions/{sid}")),
    ] {
        let (status, _) = call(&hub, &hub.two, method, &path, Some(r#"{"kind": "state"}"#));
        assert_eq!(status, 404, "{method} {path}");
    }
    let (status, _) = call(&hub, &hub.two, "POST", "/api/public/world-sessions", Some(&body));
    assert_eq!(status, 404, "another project's world");

    // Save the inline task; then close.
    let (status, saved) = call(&hub, &hub.one, "POST", &format!("/api/public/world-sessions/{sid}/task"), Some(r#"{"name": "saved"}"#));
    assert_eq!((status, text(&saved, "world")), (200, "helpdesk".to_string()), "{saved:?}");
    let (_, after) = call(&hub, &hub.one, "GET", &format!("/api/public/world-sessions/{sid}"), None);
    assert_eq!(text(&after, "task.source"), "stored");
    let (status, closed) = call(&hub, &hub.one, "DELETE", &format!("/api/public/world-sessions/{sid}"), Some(r#"{"keepWarm": false}"#));
    assert_eq!((status, text(&closed, "state")), (200, "STOPPED".to_string()));
    assert_eq!(http.get(format!("{url}/api/v2/tickets/101")).bearer_auth(&token).send().unwrap().status().as_u16(), 404);

    // Refusals at open: a bad spec, a browser surface, an unknown bundled task.
    for (task, surfaces) in [
        (r#"{"instruction": ""}"#, "[]"),
        (r#"{"instruction": "x", "tools": ["nope"]}"#, "[]"),
        (r#""backlog""#, r#"["browser"]"#),
        (r#""no-such-task""#, "[]"),
    ] {
        let body = format!(r#"{{"slug": "helpdesk", "task": {task}, "surfaces": {surfaces}}}"#);
        let (status, refused) = call(&hub, &hub.one, "POST", "/api/public/world-sessions", Some(&body));
        assert_eq!(status, 400, "{task} {surfaces}: {refused:?}");
    }
}

#[test]
fn stored_tasks_version_list_validate_and_open() {
    let hub = start();
    let work = tempfile::tempdir().unwrap();
    push_helpdesk(&hub, work.path());
    let (status, created) = call(
        &hub,
        &hub.one,
        "POST",
        "/api/public/world-tasks",
        Some(&format!(r#"{{"spec": {TASK}, "world": "helpdesk", "message": "v1"}}"#)),
    );
    assert_eq!(status, 200, "{created:?}");
    let id = text(&created, "id");
    assert_eq!((text(&created, "version"), text(&created, "name")), ("1".to_string(), "solve-101".to_string()));

    // The same spec again is not a new version; a new spec is.
    let (_, same) = call(&hub, &hub.one, "PATCH", &format!("/api/public/world-tasks/{id}"), Some(&format!(r#"{{"spec": {TASK}}}"#)));
    assert_eq!(text(&same, "version"), "1");
    let changed = TASK.replace("Solve ticket 101.", "Solve ticket 101 now.");
    let (_, updated) = call(
        &hub,
        &hub.one,
        "PATCH",
        &format!("/api/public/world-tasks/{id}"),
        Some(&format!(r#"{{"spec": {changed}, "message": "v2"}}"#)),
    );
    assert_eq!(text(&updated, "version"), "2");
    let (_, shown) = call(&hub, &hub.one, "GET", &format!("/api/public/world-tasks/{id}?version=1"), None);
    assert_eq!(text(&shown, "spec.instruction"), "Solve ticket 101.");
    assert_eq!(shown.get("versions").and_then(Value::as_array).map(|v| text(&v[0], "version")), Some("2".to_string()), "newest first");

    // Listing with filters and paging.
    call(
        &hub,
        &hub.one,
        "POST",
        "/api/public/world-tasks",
        Some(r#"{"spec": {"instruction": "Other.", "metadata": {"team": "sales"}}, "name": "other"}"#),
    );
    let (_, listed) = call(&hub, &hub.one, "GET", "/api/public/world-tasks?metadata.team=support", None);
    assert_eq!(text(&listed, "meta.totalItems"), "1");
    let (_, pinned) = call(&hub, &hub.one, "GET", "/api/public/world-tasks?world=helpdesk&limit=1&page=1", None);
    assert_eq!((text(&pinned, "meta.totalItems"), text(&pinned, "meta.totalPages")), ("1".to_string(), "1".to_string()));
    let (_, all) = call(&hub, &hub.one, "GET", "/api/public/world-tasks?limit=1&page=2", None);
    assert_eq!((text(&all, "meta.totalPages"), all.get("tasks").and_then(Value::as_array).map(Vec::len)), ("2".to_string(), Some(1)));

    // Validation against the pinned world; a bad entity fails it.
    let (_, valid) = call(&hub, &hub.one, "POST", &format!("/api/public/world-tasks/{id}/validate"), Some("{}"));
    assert_eq!((text(&valid, "ok"), text(&valid, "checked")), ("true".to_string(), "entities".to_string()), "{valid:?}");
    let ghost = TASK.replace(r#""entity": "tickets""#, r#""entity": "ghosts""#);
    let (_, bad) = call(&hub, &hub.one, "POST", "/api/public/world-tasks", Some(&format!(r#"{{"spec": {ghost}, "world": "helpdesk"}}"#)));
    let (_, invalid) = call(&hub, &hub.one, "POST", &format!("/api/public/world-tasks/{}/validate", text(&bad, "id")), Some("{}"));
    assert_eq!(text(&invalid, "ok"), "false");
    assert!(text(&invalid, "problems").contains("ghosts"), "{invalid:?}");

    // Open a session on the stored task at version 1.
    let body = format!(r#"{{"slug": "helpdesk", "task": {{"id": "{id}", "version": 1}}}}"#);
    let (status, opened) = call(&hub, &hub.one, "POST", "/api/public/world-sessions", Some(&body));
    assert_eq!(status, 200, "{opened:?}");
    assert_eq!((text(&opened, "task.source"), text(&opened, "task.version")), ("stored".to_string(), "1".to_string()));

    // Another project: 404 on every task route.
    for (method, path) in [
        ("GET", format!("/api/public/world-tasks/{id}")),
        ("PATCH", format!("/api/public/world-tasks/{id}")),
        ("POST", format!("/api/public/world-tasks/{id}/validate")),
        ("DELETE", format!("/api/public/world-tasks/{id}")),
    ] {
        assert_eq!(call(&hub, &hub.two, method, &path, Some("{}")).0, 404, "{method} {path}");
    }
    let (_, theirs) = call(&hub, &hub.two, "GET", "/api/public/world-tasks", None);
    assert_eq!(text(&theirs, "meta.totalItems"), "0");
    let (status, _) = call(&hub, &hub.one, "DELETE", &format!("/api/public/world-tasks/{id}"), None);
    assert_eq!(status, 200);
    assert_eq!(call(&hub, &hub.one, "GET", &format!("/api/public/world-tasks/{id}"), None).0, 404);
}

/// A fake OpenAI-compatible judge on loopback: it records what it was asked and
/// scores criterion `tone` 0.5 and `done` 1.
async fn fake_judge(seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |body: String| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(body);
                let content = r#"Verdict: {"rewards": {"tone": 0.5, "done": 1}, "reward": 0.9, "reason": "polite and done"}"#;
                let answer = format!(
                    r#"{{"choices": [{{"message": {{"role": "assistant", "content": {}}}}}]}}"#,
                    json::canonical(&Value::str(content))
                );
                ([("content-type", "application/json")], answer)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

#[test]
fn a_rubric_grade_is_judged_by_the_configured_endpoint() {
    let hub = start();
    let work = tempfile::tempdir().unwrap();
    push_helpdesk(&hub, work.path());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let judge = hub.runtime.block_on(fake_judge(seen.clone()));
    let rubric = r#"{"instruction": "Solve 101 politely.", "grader": {"kind": "rubric", "rubric": "Was the agent polite?",
        "criteria": [{"id": "tone", "description": "polite", "weight": 1}, {"id": "done", "description": "solved", "weight": 3}],
        "model": {"provider": "openai", "model": "judge-1"}}}"#;
    let (status, opened) =
        call(&hub, &hub.one, "POST", "/api/public/world-sessions", Some(&format!(r#"{{"slug": "helpdesk", "task": {rubric}}}"#)));
    assert_eq!(status, 200, "{opened:?}");
    let sid = text(&opened, "sessionId");
    do_call(&hub, &sid, r#"{"kind": "call", "tool": "solve_ticket", "args": {"id": 101}}"#);

    // No judge configured: a clear error, not a silent null.
    std::env::remove_var("GATEWAY_JUDGE_BASE_URL");
    std::env::remove_var("OPENAI_BASE_URL");
    std::env::remove_var("OPENAI_API_KEY");
    std::env::remove_var("OPENROUTER_API_KEY");
    let unjudged = do_call(&hub, &sid, r#"{"kind": "grade"}"#);
    assert!(text(&unjudged, "error").contains("GATEWAY_JUDGE_BASE_URL"), "{unjudged:?}");

    std::env::set_var("GATEWAY_JUDGE_BASE_URL", &judge);
    std::env::set_var("GATEWAY_JUDGE_API_KEY", "test-key");
    let graded = do_call(&hub, &sid, r#"{"kind": "grade"}"#);
    std::env::remove_var("GATEWAY_JUDGE_BASE_URL");
    // The judge's verdict, and the host's diff of the state kept beside it.
    let mut verdict = graded.get("result").and_then(Value::as_object).cloned().unwrap();
    assert!(verdict.shift_remove("diff").is_some_and(|d| d.get("counts").is_some()), "{graded:?}");
    assert_eq!(
        json::canonical(&Value::Object(verdict)),
        r#"{"grader":"rubric","reason":"polite and done","reward":0.875,"rewards":{"done":1.0,"tone":0.5}}"#
    );
    let asked = seen.lock().unwrap().last().cloned().unwrap();
    assert!(asked.contains(r#""model":"judge-1""#), "the task's model is used: {asked}");
    assert!(asked.contains("Was the agent polite?") && asked.contains("solve_ticket") && asked.contains("finalState"), "{asked}");
}

#[test]
fn validate_runs_the_task_self_test() {
    let hub = start();
    let work = tempfile::tempdir().unwrap();
    push_helpdesk(&hub, work.path());
    let trivial = r#"{"name": "trivial", "instruction": "x", "grader": {"kind": "assertions", "checks": [{"entity": "tickets", "where": {"id": 101}}]}}"#;
    let (_, created) =
        call(&hub, &hub.one, "POST", "/api/public/world-tasks", Some(&format!(r#"{{"spec": {trivial}, "world": "helpdesk"}}"#)));
    let (_, validated) = call(&hub, &hub.one, "POST", &format!("/api/public/world-tasks/{}/validate", text(&created, "id")), Some("{}"));
    assert_eq!(text(&validated, "ok"), "false", "{validated:?}");
    assert!(text(&validated, "problems").contains("self-test: an agent that does nothing scores 1.0"), "{validated:?}");
    let solved = TASK.replace(
        r#""metadata": {"team": "support"}"#,
        r#""metadata": {"solution": [{"tool": "solve_ticket", "args": {"path": {"id": 101}}}]}"#,
    );
    let (_, created) =
        call(&hub, &hub.one, "POST", "/api/public/world-tasks", Some(&format!(r#"{{"spec": {solved}, "world": "helpdesk"}}"#)));
    let (_, validated) = call(&hub, &hub.one, "POST", &format!("/api/public/world-tasks/{}/validate", text(&created, "id")), Some("{}"));
    assert_eq!((text(&validated, "ok"), text(&validated, "selfTest.solution.reward")), ("true".into(), "1.0".into()), "{validated:?}");
}

#[test]
fn a_task_by_name_is_the_worlds_own_file_first_then_its_scenario() {
    let hub = start();
    let work = tempfile::tempdir().unwrap();
    push_helpdesk(&hub, work.path());

    // examples/helpdesk/tasks/solve-101.json: a spec of the world's own.
    let (status, opened) =
        call(&hub, &hub.one, "POST", "/api/public/world-sessions", Some(r#"{"slug": "helpdesk@main", "task": "solve-101"}"#));
    assert_eq!(status, 200, "{opened:?}");
    assert_eq!((text(&opened, "task.source"), text(&opened, "task.path")), ("world".to_string(), "tasks/solve-101.json".to_string()));
    assert_eq!(text(&opened, "instruction"), "Ticket 101 is fixed: solve it.");
    let sid = text(&opened, "sessionId");
    // The reference solution is the task's, never the agent's: not in any descriptor.
    let (_, status_read) = call(&hub, &hub.one, "GET", &format!("/api/public/world-sessions/{sid}"), None);
    for descriptor in [&opened, &status_read] {
        assert_eq!(text(descriptor, "task.metadata"), "{}", "{descriptor:?}");
        assert!(!json::canonical(descriptor).contains("\"solution\""), "{descriptor:?}");
    }
    let before = do_call(&hub, &sid, r#"{"kind": "grade"}"#);
    assert_eq!(text(&before, "result.reward"), "0.0", "{before:?}");
    do_call(&hub, &sid, r#"{"kind": "call", "tool": "solve_ticket", "args": {"id": 101}}"#);
    let after = do_call(&hub, &sid, r#"{"kind": "grade"}"#);
    assert_eq!(text(&after, "result.reward"), "1.0", "the file's grader grades: {after:?}");

    // A bundled scenario by name, as before.
    let (status, opened) =
        call(&hub, &hub.one, "POST", "/api/public/world-sessions", Some(r#"{"slug": "helpdesk@main", "task": "backlog"}"#));
    assert_eq!((status, text(&opened, "task.source")), (200, "bundled".to_string()), "{opened:?}");

    // Neither: a refusal naming what the world has.
    let (status, refused) =
        call(&hub, &hub.one, "POST", "/api/public/world-sessions", Some(r#"{"slug": "helpdesk@main", "task": "solve-999"}"#));
    assert_eq!(status, 400, "{refused:?}");
    assert_eq!(
        text(&refused, "message"),
        "this world has no task named 'solve-999': no tasks/solve-999.json and no scenarios/solve-999/ (its tasks: solve-101; its scenarios: backlog)"
    );
    // A name is a name, not a path.
    let (status, _) =
        call(&hub, &hub.one, "POST", "/api/public/world-sessions", Some(r#"{"slug": "helpdesk@main", "task": "../tasks/solve-101"}"#));
    assert_eq!(status, 400);
}

//! A world session forked through the hub (`POST /api/public/world-sessions/{id}/fork`):
//! the fork answers like an opened session, holds the parent's state at the moment of
//! the fork and then lives its own life — its own data plane and token, its own grade,
//! reset to the task's start, its own call log — and outlives its parent. A fork is a
//! session of the project's quota; only a live session of the project can be forked.

mod common;

use gateway_hub::server::Limits;
use gateway_test_support::{text, TestHub};
use gateway_world::json::Value;

const TASK: &str = r#"{"name": "solve-101", "instruction": "Solve ticket 101.",
    "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]},
    "tools": ["get_ticket", "solve_ticket", "create_ticket"]}"#;

/// A hub (with `limits`) and the helpdesk example pushed to its first project.
fn hub_with_helpdesk(limits: Limits) -> (TestHub, tempfile::TempDir) {
    let hub = TestHub::start_with(None, limits);
    let work = tempfile::tempdir().unwrap();
    common::push_helpdesk(&hub.api, &hub.one, work.path());
    (hub, work)
}

fn open(hub: &TestHub) -> Value {
    let body = format!(r#"{{"slug": "helpdesk", "task": {TASK}, "surfaces": ["api"]}}"#);
    let (status, opened) = hub.call("POST", "/api/public/world-sessions", Some(&body));
    assert_eq!(status, 200, "{opened:?}");
    opened
}

fn fork(hub: &TestHub, sid: &str) -> (u16, Value) {
    hub.call("POST", &format!("/api/public/world-sessions/{sid}/fork"), None)
}

/// A call through the calls API; its result (or error) as the first poll finds it.
fn do_call(hub: &TestHub, sid: &str, body: &str) -> Value {
    let (status, answered) = hub.call("POST", &format!("/api/public/world-sessions/{sid}/calls"), Some(body));
    assert_eq!(status, 200, "{answered:?}");
    answered
}

/// A request on a session's data plane (its `surfaces.api.url`) with a bearer token.
fn data_plane(session: &Value, token: &str, method: &str, path: &str) -> (u16, String) {
    let url = format!("{}{path}", text(session, "surfaces.api.url"));
    let response = reqwest::blocking::Client::new()
        .request(method.parse().unwrap(), url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .send()
        .unwrap();
    (response.status().as_u16(), response.text().unwrap())
}

fn log_kinds(hub: &TestHub, sid: &str) -> Vec<Value> {
    let (status, page) = hub.call("GET", &format!("/api/public/world-sessions/{sid}/calls"), None);
    assert_eq!(status, 200, "{page:?}");
    page.get("calls").and_then(Value::as_array).unwrap().clone()
}

#[test]
fn a_fork_is_a_session_of_its_own_holding_the_parents_state() {
    let (hub, _work) = hub_with_helpdesk(Limits::default());
    let parent = open(&hub);
    let sid = text(&parent, "sessionId");
    let token = text(&parent, "surfaces.api.token");
    // The agent's write on the parent's data plane, before the fork.
    let (status, body) = data_plane(&parent, &token, "POST", "/api/v2/tickets/101/solve");
    assert_eq!(status, 200, "{body}");

    let (status, forked) = fork(&hub, &sid);
    assert_eq!(status, 200, "{forked:?}");
    let fid = text(&forked, "sessionId");
    let fork_token = text(&forked, "surfaces.api.token");
    assert!(fid != sid && fork_token != token && !fork_token.is_empty(), "{forked:?}");
    assert_eq!(text(&forked, "forkedFrom"), sid);
    assert!(text(&forked, "surfaces.api.url").ends_with(&format!("/s/{fid}")), "{forked:?}");
    // The same shape as the open's answer, and the same task, tools and world.
    for member in ["state", "ready", "slug", "versionId", "taskName", "instruction", "task", "tools"] {
        assert_eq!(text(&forked, member), text(&parent, member), "{member}");
    }
    let mut keys: Vec<&String> = forked.as_object().unwrap().keys().filter(|k| *k != "forkedFrom").collect();
    let mut parent_keys: Vec<&String> = parent.as_object().unwrap().keys().collect();
    keys.sort();
    parent_keys.sort();
    assert_eq!(keys, parent_keys);
    let (_, status_read) = hub.call("GET", &format!("/api/public/world-sessions/{fid}"), None);
    assert_eq!((text(&status_read, "state"), text(&status_read, "forkedFrom")), ("READY".to_string(), sid.clone()));

    // Each token opens its own session's data plane only.
    let (status, ticket) = data_plane(&forked, &fork_token, "GET", "/api/v2/tickets/101");
    assert_eq!(status, 200, "{ticket}");
    assert!(ticket.contains(r#""status": "solved""#), "the fork holds the parent's write: {ticket}");
    assert_eq!(data_plane(&forked, &token, "GET", "/api/v2/tickets/101").0, 401, "the parent's token on the fork");
    assert_eq!(data_plane(&parent, &fork_token, "GET", "/api/v2/tickets/101").0, 401, "the fork's token on the parent");

    // The fork grades its own state; its reset is the task's start, not the parent's state.
    assert_eq!(text(&do_call(&hub, &fid, r#"{"kind": "grade"}"#), "result.reward"), "1.0");
    do_call(&hub, &fid, r#"{"kind": "reset"}"#);
    assert_eq!(text(&do_call(&hub, &fid, r#"{"kind": "grade"}"#), "result.reward"), "0.0");
    assert_eq!(text(&do_call(&hub, &sid, r#"{"kind": "grade"}"#), "result.reward"), "1.0", "the parent is untouched");
    let (status, _) = data_plane(&parent, &token, "POST", "/api/v2/tickets/102/solve");
    assert_eq!(status, 200);
    let state = do_call(&hub, &fid, r#"{"kind": "state"}"#);
    assert_ne!(text(&state, "result.tickets.102.status"), "solved", "the parent's later write is not in the fork");

    // The logs: the branch recorded on both sides, the fork's starting with it.
    let fork_log = log_kinds(&hub, &fid);
    assert_eq!((text(&fork_log[0], "kind"), text(&fork_log[0], "args.from")), ("fork".to_string(), sid.clone()));
    assert!(
        log_kinds(&hub, &sid).iter().any(|c| text(c, "kind") == "fork" && text(c, "args.fork") == fid),
        "the parent's log names its fork"
    );

    // Closing the parent leaves the fork alive; a closed session cannot be forked.
    let (status, _) = hub.call("DELETE", &format!("/api/public/world-sessions/{sid}"), None);
    assert_eq!(status, 200);
    assert_eq!(data_plane(&forked, &fork_token, "GET", "/api/v2/tickets/101").0, 200);
    assert_eq!(text(&do_call(&hub, &fid, r#"{"kind": "grade"}"#), "result.reward"), "0.0");
    let (status, refused) = fork(&hub, &sid);
    assert_eq!(status, 409, "{refused:?}");
    assert!(text(&refused, "message").contains("only a live session can be forked"), "{refused:?}");
    // A fork of a fork.
    let (status, grandchild) = fork(&hub, &fid);
    assert_eq!((status, text(&grandchild, "forkedFrom")), (200, fid.clone()), "{grandchild:?}");
}

#[test]
fn a_fork_counts_against_the_project_quota_and_stays_in_its_project() {
    let limits = Limits { max_sessions_per_project: 2, ..Default::default() };
    let (hub, _work) = hub_with_helpdesk(limits);
    let sid = text(&open(&hub), "sessionId");
    let (status, other) = hub.call_as(&hub.two, "POST", &format!("/api/public/world-sessions/{sid}/fork"), None, &[]);
    assert_eq!(status, 404, "another project's session: {other:?}");
    let (status, unknown) = fork(&hub, "ws-nobody");
    assert_eq!(status, 404, "{unknown:?}");

    let (status, first) = fork(&hub, &sid);
    assert_eq!(status, 200, "{first:?}");
    let (status, refused) = fork(&hub, &sid);
    assert_eq!(status, 429, "the parent and its fork hold the quota of 2: {refused:?}");
    let (status, _) = hub.call("DELETE", &format!("/api/public/world-sessions/{}", text(&first, "sessionId")), None);
    assert_eq!(status, 200);
    assert_eq!(fork(&hub, &sid).0, 200, "a closed fork frees its slot");
}

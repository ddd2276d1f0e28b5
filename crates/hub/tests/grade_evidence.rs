//! Grades that explain themselves, through the hub: a session's agent changes a row
//! on the data plane (REST), the session is graded through the calls API, and the
//! grade carries the row-level diff of the state against the task's start and, for
//! each failed check, the rows and values it saw — in the calls API's answer, in
//! `session export`'s lines, and on the session's web page ("Checks", "What changed").

mod common;

use gateway_test_support::{text, TestHub};
use gateway_world::json::{Map, Value};

const TASK: &str = r#"{"name": "solve-101", "instruction": "Solve ticket 101.",
    "grader": {"kind": "assertions", "checks": [
        {"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"},
        {"id": "three_solved", "entity": "tickets", "where": {"status": "solved"}, "assert": "count", "count": {"eq": 3}},
        {"id": "customers_kept", "entity": "customers", "assert": "count", "count": {"eq": 3}}]}}"#;

fn hub_with_helpdesk() -> (TestHub, tempfile::TempDir) {
    let hub = TestHub::start(None);
    let work = tempfile::tempdir().unwrap();
    common::push_helpdesk(&hub.api, &hub.one, work.path());
    (hub, work)
}

#[test]
fn a_grade_names_what_changed_and_what_each_failed_check_saw() {
    let (hub, _work) = hub_with_helpdesk();
    let (status, opened) =
        hub.call("POST", "/api/public/world-sessions", Some(&format!(r#"{{"slug": "helpdesk", "task": {TASK}, "surfaces": ["api"]}}"#)));
    assert_eq!(status, 200, "{opened:?}");
    let sid = text(&opened, "sessionId");

    // The agent's REST call: ticket 101 set to pending, not solved.
    let response = reqwest::blocking::Client::new()
        .patch(format!("{}/api/v2/tickets/101", text(&opened, "surfaces.api.url")))
        .bearer_auth(text(&opened, "surfaces.api.token"))
        .header("content-type", "application/json")
        .body(r#"{"status": "pending"}"#)
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "{}", response.text().unwrap());

    let (status, called) = hub.call("POST", &format!("/api/public/world-sessions/{sid}/calls"), Some(r#"{"kind": "grade"}"#));
    assert_eq!(status, 200, "{called:?}");
    // The original's members are as they were.
    assert_eq!(text(&called, "result.reward"), "0.3333333333333333");
    assert_eq!(text(&called, "result.rewards"), r#"{"customers_kept":1.0,"solved":0.0,"three_solved":0.0}"#);
    // What changed: one ticket, one field, before and after.
    assert_eq!(text(&called, "result.diff.counts"), r#"{"added":0,"changed":1,"removed":0}"#);
    assert_eq!(
        text(&called, "result.diff.entities.tickets.changed"),
        r#"[{"fields":{"status":{"after":"pending","before":"open"}},"key":"101"}]"#
    );
    // Each failed check names the rows and values it saw.
    assert_eq!(text(&called, "result.checks.0.passed"), "false");
    assert_eq!(text(&called, "result.checks.0.expected"), r#"status eq "solved""#);
    assert_eq!(text(&called, "result.checks.0.actual"), r#"1 of 1 row failed: 101 status "pending""#);
    assert_eq!(text(&called, "result.checks.0.rows"), r#"[{"field":"status","key":"101","value":"pending"}]"#);
    assert_eq!(text(&called, "result.checks.1.expected"), "eq 3 rows");
    assert_eq!(text(&called, "result.checks.1.actual"), r#"1 row: keys ["104"]"#);
    assert_eq!(text(&called, "result.checks.2.passed"), "true");

    // `session export`: the grade's line carries the same evidence.
    let (status, listed) = hub.call("GET", &format!("/api/public/world-sessions/{sid}/calls"), None);
    assert_eq!(status, 200, "{listed:?}");
    let calls: Vec<Map> = listed.get("calls").and_then(Value::as_array).unwrap().iter().filter_map(|c| c.as_object().cloned()).collect();
    let lines = gateway_hub_client::sessions_client::export_lines(&calls);
    let grade_line = lines.iter().find(|line| line.contains(r#""kind": "grade""#)).expect("the grade is exported");
    assert!(grade_line.contains(r#""fields": {"status": {"after": "pending", "before": "open"}}"#), "{grade_line}");
    assert!(grade_line.contains(r#""actual": "1 of 1 row failed: 101 status \"pending\"""#), "{grade_line}");
    let patch_line = lines.iter().find(|line| line.contains(r#""method": "PATCH""#)).expect("the REST call is exported");
    assert!(patch_line.contains("/tickets/101"), "{patch_line}");

    // The session's page explains the last grade.
    let page = reqwest::blocking::Client::new()
        .get(format!("{}/ui/sessions/{sid}", hub.api))
        .basic_auth(&hub.one.0, Some(&hub.one.1))
        .send()
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let html = page.text().unwrap();
    for expected in [
        "<h2>Checks</h2>",
        "<h2>What changed</h2>",
        "0 added, 0 removed, 1 changed",
        "status: &quot;open&quot; → &quot;pending&quot;",
        "1 of 1 row failed: 101 status &quot;pending&quot;",
        "1 row: keys [&quot;104&quot;]",
    ] {
        assert!(html.contains(expected), "the page lacks {expected:?}:\n{html}");
    }

    // A second grade after solving it: the page follows the last one.
    let response = reqwest::blocking::Client::new()
        .post(format!("{}/api/v2/tickets/101/solve", text(&opened, "surfaces.api.url")))
        .bearer_auth(text(&opened, "surfaces.api.token"))
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let (_, regraded) = hub.call("POST", &format!("/api/public/world-sessions/{sid}/calls"), Some(r#"{"kind": "grade"}"#));
    assert_eq!(text(&regraded, "result.diff.entities.tickets.changed.0.fields.status.after"), "solved");
    let html = reqwest::blocking::Client::new()
        .get(format!("{}/ui/sessions/{sid}", hub.api))
        .basic_auth(&hub.one.0, Some(&hub.one.1))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(html.contains("status: &quot;open&quot; → &quot;solved&quot;"), "{html}");
    assert!(html.contains("2 rows: keys [&quot;101&quot;, &quot;104&quot;]"), "{html}");
}

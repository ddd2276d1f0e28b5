//! The vendors' official SDKs against hub sessions of the example vendor worlds
//! (issue 26): the same workloads as `gateway worlds serve` passes (crates/cli/tests/
//! vendor_sdks.rs), here through the hub's `/s/<sid>` data plane — so the worlds'
//! rewritten URLs, Link headers and cursors carry the session's mount, the session
//! token opens it however the SDK sends it (`Authorization: token …` from PyGithub,
//! `Bearer` and form bodies from slack_sdk), and a wrong token is refused in the
//! vendor's own shape (GitHub's 401 "Bad credentials", Slack's HTTP 200 `invalid_auth`).

use gateway_hub_client::client::{Client, PushOptions};
use gateway_test_support::{copy_tree, text, vendor_sdk_python, TestHub};
use std::path::Path;

/// Push `examples/<name>`, open a session on it and run its SDK workload against the
/// session's data plane: the workload's report.
fn workload_through_a_session(name: &str, instruction: &str) -> Option<serde_json::Value> {
    let python = vendor_sdk_python()?;
    let hub = TestHub::start(None);
    let work = tempfile::tempdir().unwrap();
    let world = work.path().join(name);
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name);
    copy_tree(&example, &world);
    let client = Client::new(&hub.api, &hub.one.0, &hub.one.1).unwrap();
    client.push(&world, &PushOptions { slug: Some(name.into()), ..Default::default() }).unwrap();
    let body = format!(r#"{{"slug": "{name}", "task": {{"instruction": "{instruction}"}}, "surfaces": ["api"]}}"#);
    let (status, opened) = hub.call("POST", "/api/public/world-sessions", Some(&body));
    assert_eq!(status, 200, "{opened:?}");
    let (sid, url, token) = (text(&opened, "sessionId"), text(&opened, "surfaces.api.url"), text(&opened, "surfaces.api.token"));
    assert!(url.ends_with(&format!("/s/{sid}")), "{opened:?}");
    let script = example.join(format!("sdk/{name}_workload.py"));
    let out = std::process::Command::new(&python).arg(&script).args([url.as_str(), token.as_str()]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    Some(serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr))))
}

fn failed(report: &serde_json::Value) -> Vec<String> {
    let results = report["results"].as_array().unwrap();
    results.iter().filter(|r| r["ok"] != true).map(|r| format!("{}: {}", r["call"], r["error"])).collect()
}

#[test]
fn pygithub_works_through_a_hub_session() {
    let Some(report) = workload_through_a_session("github", "Triage the open issues of octocat/hello-world.") else { return };
    assert_eq!(failed(&report), Vec::<String>::new(), "{report:#}");
    assert!(report["passed"].as_i64().unwrap() >= 12, "{report}");
}

#[test]
fn slack_sdk_works_through_a_hub_session() {
    let Some(report) = workload_through_a_session("slack", "Plan the launch in a new channel.") else { return };
    assert_eq!(failed(&report), Vec::<String>::new(), "{report:#}");
    assert!(report["passed"].as_i64().unwrap() >= 12, "{report}");
}

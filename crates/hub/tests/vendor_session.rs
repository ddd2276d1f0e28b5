//! The official PyGithub client against a hub session of the GitHub example world
//! (issue 26): the same workload as `gateway worlds serve` passes (crates/cli/tests/
//! vendor_sdks.rs), here through the hub's `/s/<sid>` data plane — so the world's
//! rewritten URLs and Link headers carry the session's mount, and the session token
//! (sent as `Authorization: token …`, as PyGithub does) opens it.

use gateway_hub::client::{Client, PushOptions};
use gateway_test_support::{copy_tree, text, vendor_sdk_python, TestHub};
use std::path::Path;

#[test]
fn pygithub_works_through_a_hub_session() {
    let Some(python) = vendor_sdk_python() else { return };
    let hub = TestHub::start(None);
    let work = tempfile::tempdir().unwrap();
    let world = work.path().join("github");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/github"), &world);
    let client = Client::new(&hub.api, &hub.one.0, &hub.one.1).unwrap();
    client.push(&world, &PushOptions { slug: Some("github".into()), ..Default::default() }).unwrap();
    let task = r#"{"instruction": "Triage the open issues of octocat/hello-world."}"#;
    let (status, opened) =
        hub.call("POST", "/api/public/world-sessions", Some(&format!(r#"{{"slug": "github", "task": {task}, "surfaces": ["api"]}}"#)));
    assert_eq!(status, 200, "{opened:?}");
    let (sid, url, token) = (text(&opened, "sessionId"), text(&opened, "surfaces.api.url"), text(&opened, "surfaces.api.token"));
    assert!(url.ends_with(&format!("/s/{sid}")), "{opened:?}");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/github/sdk/github_workload.py");
    let out = std::process::Command::new(&python).arg(&script).args([url.as_str(), token.as_str(), "session"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    let failed: Vec<String> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ok"] != true)
        .map(|r| format!("{}: {}", r["call"], r["error"]))
        .collect();
    assert_eq!(failed, Vec::<String>::new(), "{report:#}");
    assert!(report["passed"].as_i64().unwrap() >= 12, "{report}");
}

//! The vendors' own SDKs against the bundled vendor worlds (issue 26): the official
//! PyGithub client runs its workload (examples/github/sdk/github_workload.py: reads
//! with paging and totalCount, creates, updates, sub-resources, search, the rate
//! limit, a 404 and a 401) against `gateway worlds serve examples/github`, a world
//! whose API is declared in its connector.toml (Python only for search); the
//! official slack_sdk client runs its workload (examples/slack/sdk/slack_workload.py:
//! `POST /api/<method>` with form and JSON bodies, cursor paging through
//! `response_metadata.next_cursor`, `{"ok": false, "error": …}` refusals at HTTP 200)
//! against `gateway worlds serve examples/slack`, declared without any Python.
//!
//! The SDKs come from PyPI in the venv `.ci/run` makes; without it the test skips
//! with a NOTICE.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A copy of the example `name`, compiled and served with `--api-key key`: the server
/// and its base URL.
fn serve(name: &str, dir: &Path, key: &str) -> (Served, String) {
    let world = gateway_test_support::copy_example(name, &dir.join(name));
    let compiled = Command::new(BIN).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap();
    assert!(compiled.status.success(), "compile: {}", String::from_utf8_lossy(&compiled.stdout));
    serve_world(&world, key)
}

/// A new world from the built-in template `template` with `--api` (the vendor world
/// it starts from), served with `--api-key key`: the world, the server and its base URL.
fn serve_template(template: &str, dir: &Path, key: &str) -> (PathBuf, Served, String) {
    let world = dir.join(format!("my-{template}"));
    let made = Command::new(BIN)
        .args(["worlds", "schema", "init"])
        .arg(&world)
        .args(["--connector", template, "--api", "--name", &format!("my-{template}")])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&made.stdout);
    assert!(made.status.success() && said.contains(r#""status": "ok""#), "init: {said}{}", String::from_utf8_lossy(&made.stderr));
    let manifest = std::fs::read_to_string(world.join("gateway-env.toml")).unwrap();
    assert!(
        manifest.contains(&format!("name = \"my-{template}\"")) && manifest.contains(&format!("connector = \"{template}\"")),
        "{manifest}"
    );
    let (served, url) = serve_world(&world, key);
    (world, served, url)
}

fn serve_world(world: &Path, key: &str) -> (Served, String) {
    let mut command = Command::new(BIN);
    command.args(["worlds", "serve"]).arg(world).args(["--port", "0", "--api-key", key]);
    let (child, announced) = gateway_test_support::spawn_announced(&mut command, "world api listening on ");
    let url = announced.unwrap_or_else(|said| panic!("the world did not start: {said}"));
    (Served(child), url.trim().to_string())
}

/// Run a workload script with the SDKs' Python: its JSON report.
fn workload(python: &Path, script: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(python).arg(script).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

fn failures(report: &serde_json::Value) -> Vec<String> {
    report["results"].as_array().unwrap().iter().filter(|r| r["ok"] != true).map(|r| format!("{}: {}", r["call"], r["error"])).collect()
}

#[test]
fn pygithub_works_against_the_github_world() {
    let Some(python) = gateway_test_support::vendor_sdk_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_served, url) = serve("github", dir.path(), "ghp_test_token");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/github/sdk/github_workload.py");
    let report = workload(&python, &script, &[&url, "ghp_test_token"]);
    assert!(report["calls"].as_i64().unwrap() >= 12, "{report}");
    assert_eq!(failures(&report), Vec::<String>::new(), "{report:#}");
}

#[test]
fn slack_sdk_works_against_the_slack_world() {
    let Some(python) = gateway_test_support::vendor_sdk_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_served, url) = serve("slack", dir.path(), "xoxb-test-token");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/slack/sdk/slack_workload.py");
    let report = workload(&python, &script, &[&url, "xoxb-test-token"]);
    assert!(report["calls"].as_i64().unwrap() >= 12, "{report}");
    assert_eq!(failures(&report), Vec::<String>::new(), "{report:#}");
}

/// Templates worth starting from (issue 26 item 9): `schema init --connector github
/// --api` writes the vendor world — the vendor's paths and names, seed rows, issue
/// comments, labels as objects — and PyGithub works against it out of the box, its
/// workload shipped with it.
#[test]
fn pygithub_works_against_a_world_from_the_github_template() {
    let Some(python) = gateway_test_support::vendor_sdk_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (world, _served, url) = serve_template("github", dir.path(), "ghp_test_token");
    let connector = std::fs::read_to_string(world.join("connector.toml")).unwrap();
    assert!(connector.contains("path = \"/repos/{owner}/{repo}/issues/{number}/comments\"") && connector.contains("name = \"get_issue\""));
    assert!(!connector.contains("github_issues"), "no template entity names on the wire");
    let report = workload(&python, &world.join("sdk/github_workload.py"), &[&url, "ghp_test_token"]);
    assert!(report["calls"].as_i64().unwrap() >= 12, "{report}");
    assert_eq!(failures(&report), Vec::<String>::new(), "{report:#}");
}

#[test]
fn slack_sdk_works_against_a_world_from_the_slack_template() {
    let Some(python) = gateway_test_support::vendor_sdk_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (world, _served, url) = serve_template("slack", dir.path(), "xoxb-test-token");
    let report = workload(&python, &world.join("sdk/slack_workload.py"), &[&url, "xoxb-test-token"]);
    assert!(report["calls"].as_i64().unwrap() >= 12, "{report}");
    assert_eq!(failures(&report), Vec::<String>::new(), "{report:#}");
}

//! `connector conform` of examples/github against GitHub's own published OpenAPI
//! description (`api.github.com.json` of npm's `@octokit/openapi`, 13 MB, 1,200+
//! operations) — issue 26's "no false green": every operation the world serves is
//! found in the document, called, its status the documented one and its body
//! validated against the documented schema (not merely "no schema to check"), and
//! every probe (required query parameters, `Link` on a page with a next, the
//! documented 401 and 404 provoked) passes.
//!
//! The document comes from the npm registry: `.ci/run` fetches the tarball once
//! into ~/.cache and names the file in `GATEWAY_TEST_GITHUB_OPENAPI` (and
//! `github-openapi` in `GATEWAY_CI_PROVIDES`); elsewhere, without it, the test skips
//! with a NOTICE.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

fn document() -> Option<PathBuf> {
    match std::env::var_os("GATEWAY_TEST_GITHUB_OPENAPI").map(PathBuf::from) {
        Some(path) if path.is_file() => Some(path),
        _ => {
            gateway_test_support::absent(
                "github-openapi",
                "GATEWAY_TEST_GITHUB_OPENAPI names no file (GitHub's OpenAPI from npm's @octokit/openapi; .ci/run fetches it); skipping the GitHub conformance run",
            );
            None
        }
    }
}

#[test]
fn the_github_world_conforms_to_githubs_published_openapi() {
    let Some(document) = document() else { return };
    let dir = tempfile::tempdir().unwrap();
    let world = gateway_test_support::copy_example("github", &dir.path().join("github"));
    let report_path = dir.path().join("report.json");
    let out = Command::new(BIN)
        .args(["worlds", "connector", "conform"])
        .arg(&world)
        .arg("--openapi")
        .arg(&document)
        .arg("--out")
        .arg(&report_path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();

    // Every route of the world's connector, and nothing else, was checked.
    let spec = std::fs::read_to_string(world.join("connector.toml")).unwrap();
    let served = spec.matches("[[operations]]").count();
    let operations = report["operations"].as_array().unwrap();
    assert_eq!(operations.len(), served, "{text}");
    let summary = &report["summary"];
    for (member, expected) in [("operations", served), ("documented", served), ("conforming", served)] {
        assert_eq!(summary[member], expected, "{member}: {summary}");
    }
    for member in ["status_mismatch", "schema_violations", "undocumented", "check_failures"] {
        assert_eq!(summary[member], 0, "{member}: {summary}");
    }
    for operation in operations {
        let name = &operation["operation"];
        assert_eq!(operation["documented"], true, "{name}");
        assert_eq!(operation["schema"], "ok", "{name}: its body was not validated against a documented schema");
        let status = operation["status"].as_i64().unwrap().to_string();
        assert!(operation["expected"].as_array().unwrap().iter().any(|e| e == &status), "{name}: {operation}");
        for check in operation["checks"].as_array().unwrap() {
            assert_ne!(check["result"], "fail", "{name}: {check}");
        }
    }
    // The probes that are the point of it ran and passed: paging by Link, a 404 up a
    // nested chain, a 401 with a wrong token where reads are anonymous.
    let passed = |op: &str, kind: &str, name: &str| {
        operations
            .iter()
            .filter(|o| o["operation"] == op)
            .flat_map(|o| o["checks"].as_array().unwrap())
            .any(|c| c["check"] == kind && c["name"] == name && c["result"] == "ok")
    };
    assert!(passed("list_issues", "header", "Link"), "{text}");
    assert!(passed("list_issue_comments", "header", "Link"), "{text}");
    assert!(passed("get_issue", "error", "404"), "{text}");
    assert!(passed("search_issues", "error", "401"), "{text}");
    assert!(passed("search_issues", "query", "q"), "{text}");
}

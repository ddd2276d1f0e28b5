//! schemathesis against our servers, each through the OpenAPI document it serves
//! itself: the bundled helpdesk world (`worlds serve` on port 0) must answer no 5xx
//! and nothing its `/openapi.json` does not describe (status, content type, body,
//! headers); the hub (`hub serve`'s router on port 0, a valid API key) must answer
//! no 5xx on the routes its `/openapi.json` lists.
//!
//! schemathesis is found through `GATEWAY_TEST_SCHEMATHESIS` (the `st` of the venv
//! `.ci/run` installs); without it these tests print a NOTICE and skip.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

/// The checks every answer of the world must pass, for requests the document
/// calls valid.
const CONFORMANCE: &str =
    "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance";
/// The checks for requests the document calls invalid: such a request may reach
/// another route (`/tickets/stats` is not a ticket id), so its body is not held to
/// the schema of the operation it was made for — but it must not fail the server,
/// and its status and content type must still be ones the document names.
const NEGATIVE: &str = "not_a_server_error,status_code_conformance,content_type_conformance";
/// Test cases per operation and phase: enough to reach every route's refusals,
/// small enough for CI (the hub has a hundred routes, the world a dozen). The seed
/// keeps a run reproducible.
const WORLD_EXAMPLES: &str = "60";
const HUB_EXAMPLES: &str = "25";
const SEED: &str = "20261203";

/// `st`, or a NOTICE and None.
fn schemathesis() -> Option<PathBuf> {
    let found = std::env::var_os("GATEWAY_TEST_SCHEMATHESIS").map(PathBuf::from).filter(|p| p.is_file());
    if found.is_none() {
        gateway_test_support::absent(
            "schemathesis",
            "GATEWAY_TEST_SCHEMATHESIS does not name schemathesis's `st` (.ci/run installs it); skipping the schemathesis run",
        );
    }
    found
}

/// Run `st run` on a served document; panic with its report unless it passed.
fn run(st: &PathBuf, document: &str, mode: &str, checks: &str, examples: &str, headers: &[String]) {
    let scratch = tempfile::tempdir().unwrap();
    let mut command = Command::new(st);
    command
        .current_dir(scratch.path())
        .args(["run", document, "--mode", mode, "--checks", checks, "--max-examples", examples, "--seed", SEED])
        // One worker: the report is then the same run after run.
        .args(["--workers", "1", "--generation-database", "none", "--no-color", "--request-timeout", "30"])
        .env("NO_COLOR", "1")
        .env("HYPOTHESIS_STORAGE_DIRECTORY", scratch.path().join("hypothesis"));
    for header in headers {
        command.args(["-H", header]);
    }
    let output = command.output().expect("run schemathesis");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis ({mode}, {checks}) on {document} failed:\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("{}", report.lines().rev().take(3).collect::<Vec<_>>().join(" | "));
}

/// `gateway worlds serve` on port 0; the address from its start-up line.
struct Served {
    child: Child,
    address: String,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_helpdesk() -> Served {
    serve_example("helpdesk")
}

fn serve_example(name: &str) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let world = gateway_test_support::copy_example(name, &dir.path().join(name));
    let compiled = Command::new(BIN).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap();
    assert!(compiled.status.success(), "compile: {}", String::from_utf8_lossy(&compiled.stderr));
    let mut child = Command::new(BIN)
        .args(["worlds", "serve"])
        .arg(&world)
        .args(["--port", "0"])
        .env("GATEWAY_WORLD_CLOCK", "1767225600")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("world api listening on ").map(str::to_string))
        .expect("the start-up line");
    // Keep reading what the server says so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Served { child, address, _dir: dir }
}

#[test]
fn the_served_world_answers_as_its_openapi_document_says() {
    let Some(st) = schemathesis() else { return };
    let mut served = serve_helpdesk();
    let document = format!("{}/openapi.json", served.address);
    let auth = vec![String::from("Authorization: Bearer schemathesis")];
    run(&st, &document, "positive", CONFORMANCE, WORLD_EXAMPLES, &auth);
    run(&st, &document, "negative", NEGATIVE, WORLD_EXAMPLES, &auth);
    // Without credentials every route answers the connector's 401, as documented.
    run(&st, &document, "positive", CONFORMANCE, WORLD_EXAMPLES, &[]);
    assert!(served.child.try_wait().unwrap().is_none(), "the server is still up");
    let health = reqwest::blocking::get(format!("{}/healthz", served.address)).unwrap();
    assert_eq!(health.status().as_u16(), 200);
}

/// A vendor declared the Slack way (examples/slack: `{"ok": …}` envelopes, errors at
/// HTTP 200, cursors at a path, rows under keys) documents what it answers too.
#[test]
fn the_served_slack_world_answers_as_its_openapi_document_says() {
    let Some(st) = schemathesis() else { return };
    let served = serve_example("slack");
    let document = format!("{}/openapi.json", served.address);
    let auth = vec![String::from("Authorization: Bearer schemathesis")];
    run(&st, &document, "positive", CONFORMANCE, WORLD_EXAMPLES, &auth);
    run(&st, &document, "negative", NEGATIVE, WORLD_EXAMPLES, &auth);
    run(&st, &document, "positive", CONFORMANCE, WORLD_EXAMPLES, &[]);
}

#[test]
fn the_hub_answers_no_server_error_on_its_documented_routes() {
    let Some(st) = schemathesis() else { return };
    let hub = gateway_test_support::TestHub::start(None);
    let document = format!("{}/openapi.json", hub.api);
    let credential = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("{}:{}", hub.one.0, hub.one.1));
    let auth = vec![format!("Authorization: Basic {credential}")];
    run(&st, &document, "all", "not_a_server_error", HUB_EXAMPLES, &auth);
    let (status, _) = hub.call("GET", "/healthz", None);
    assert_eq!(status, 200, "the hub is still up");
}

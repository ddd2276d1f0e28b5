//! The hub's embedded World Host reads a version's bundle from the hub's object
//! store in place — never over HTTP from its own hub — and a version is fetched and
//! compiled once per process, whoever reads it first: a session, a stored task's
//! validation, the world's data. A call of the calls API is written to the call log
//! once, and its `seq` still reaches every reader.
//!
//! One test in its own binary: it counts the contracts this process builds.

mod common;

use gateway_hub::store::MetaStore;
use gateway_hub::worlds::Worlds;
use gateway_hub::HubConfig;
use gateway_test_support::{call_hub, text};
use gateway_world::json::{self, Value};
use std::sync::Arc;

struct Hub {
    api: String,
    key: (String, String),
    project: String,
    worlds: Arc<Worlds>,
    meta: Arc<dyn MetaStore>,
    runtime: tokio::runtime::Runtime,
    _data: tempfile::TempDir,
}

/// A hub whose own address, as it would hand it to a World Host for bundles, is a
/// port nothing listens on: a host fetching a bundle from it over HTTP would fail.
fn start() -> Hub {
    let data = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let (api, key, project, worlds, meta) = runtime.block_on(async {
        let config = HubConfig { data: data.path().to_path_buf(), database: None, objects: None };
        let mut hub = config.open(None, Default::default()).await.expect("open hub");
        hub.bound_url = Some(format!("http://{closed}"));
        let (project, public, secret) = gateway_hub::create_key(hub.meta.as_ref(), "one").await.unwrap();
        let (worlds, meta) = (hub.worlds.clone().expect("an embedded host"), hub.meta.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(gateway_hub::server::serve_on(hub, listener));
        (format!("http://{addr}"), (public, secret), project, worlds, meta)
    });
    Hub { api, key, project, worlds, meta, runtime, _data: data }
}

fn call(hub: &Hub, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    call_hub(&hub.api, &hub.key, method, path, body, &[])
}

fn ok(hub: &Hub, method: &str, path: &str, body: Option<&str>) -> Value {
    let (status, answer) = call(hub, method, path, body);
    assert_eq!(status, 200, "{method} {path}: {answer:?}");
    answer
}

const TASK: &str = r#"{"instruction": "Solve ticket 101.",
    "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]}}"#;

/// Contracts built by this process while `work` runs.
fn builds(work: impl FnOnce()) -> u64 {
    let before = gateway_world::world::contract_builds();
    work();
    gateway_world::world::contract_builds() - before
}

#[test]
fn the_embedded_host_reads_bundles_from_the_store_and_each_version_is_compiled_once() {
    let hub = start();
    let work = tempfile::tempdir().unwrap();
    common::push_helpdesk(&hub.api, &hub.key, work.path());

    // The session opens although the hub's own address answers nothing: the bundle
    // came from the store.
    let open = format!(r#"{{"slug": "helpdesk", "task": {TASK}}}"#);
    let mut sid = String::new();
    let opening = builds(|| sid = text(&ok(&hub, "POST", "/api/public/world-sessions", Some(&open)), "sessionId"));
    assert!(opening >= 1, "the session's open compiled the version");

    // The world's data reads the files the session opened: its first read costs what
    // every read costs (no compile of its own), and nothing is fetched again.
    let first = builds(|| assert_eq!(text(&ok(&hub, "GET", "/api/public/worlds/helpdesk/data", None), "kind"), "schema"));
    let second = builds(|| assert_eq!(text(&ok(&hub, "GET", "/api/public/worlds/helpdesk/data", None), "kind"), "schema"));
    assert_eq!(first, second, "the first data read compiled the version again");

    // A stored task's validation runs its self-test on the same cached version.
    let created = ok(&hub, "POST", "/api/public/world-tasks", Some(&format!(r#"{{"name": "t", "world": "helpdesk", "spec": {TASK}}}"#)));
    let validated = ok(&hub, "POST", &format!("/api/public/world-tasks/{}/validate", text(&created, "id")), Some("{}"));
    assert!(validated.get("selfTest").is_some(), "{validated:?}");
    assert_eq!(hub.worlds.versions().unwrap().preparations(), 1, "one fetch and one compile of the version");

    // A grade is written to the call log once: its document holds no `seq`, which every
    // reader still gets (the calls API, the session's page).
    let graded = ok(&hub, "POST", &format!("/api/public/world-sessions/{sid}/calls"), Some(r#"{"kind": "grade"}"#));
    let call_id = text(&graded, "callId");
    let stored = hub.runtime.block_on(hub.meta.document(&hub.project, &format!("calls:{sid}"), &call_id)).unwrap().unwrap();
    assert!(json::parse_clean(&stored).unwrap().get("seq").is_none(), "{stored}");
    let listed = ok(&hub, "GET", &format!("/api/public/world-sessions/{sid}/calls"), None);
    let entry = listed.get("calls").and_then(Value::as_array).unwrap().iter().find(|c| text(c, "id") == call_id).unwrap().clone();
    let seq = text(&entry, "seq");
    assert!(seq.parse::<i64>().is_ok_and(|n| n >= 1), "{entry:?}");
    let page = match call(&hub, "GET", &format!("/ui/sessions/{sid}"), None) {
        (200, Value::Str(page)) => page,
        other => panic!("not a page: {other:?}"),
    };
    assert!(page.contains(&format!("(call {seq})")), "the page names the last grade's seq: {page}");
}

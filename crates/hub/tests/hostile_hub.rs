//! The hostile suite of a shared hub (issue 24): each test is an attack one project's
//! key — or a leaked secret — made on a hub it shares with another project, now
//! refused with a clear answer while normal use keeps working.
//!
//! - an agent's session token on its session's admin routes (`/__world/state|reset|seed`);
//! - one project taking every session slot (a per-project quota, 429);
//! - a leaked shared host secret registering a host to receive other projects' session
//!   opens (per-host credentials, revocation), and a forged `Host` header steering the
//!   bundle URL hosts are handed.

use gateway_hub::server::Limits;
use gateway_hub_client::client::{Client, PushOptions};
use gateway_test_support::{call_hub, copy_tree, example, text, Key, TestHub};
use gateway_world::json::{self, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};

fn push_helpdesk(api: &str, key: &Key, work: &Path) {
    let world = work.join("helpdesk");
    if !world.exists() {
        copy_tree(&example("helpdesk"), &world);
    }
    let client = Client::new(api, &key.0, &key.1).unwrap();
    client.push(&world, &PushOptions { slug: Some("helpdesk".into()), ..Default::default() }).unwrap();
}

const OPEN: &str = r#"{"slug": "helpdesk", "task": "backlog", "surfaces": ["api"]}"#;

fn do_call(hub: &TestHub, sid: &str, body: &str) -> Value {
    let (status, answer) = hub.call("POST", &format!("/api/public/world-sessions/{sid}/calls"), Some(body));
    assert_eq!(status, 200, "{answer:?}");
    assert!(matches!(answer.get("error"), None | Some(Value::Null)), "{answer:?}");
    answer
}

/// Item 7: the token a session hands its agent reaches the world's vendor API, and
/// nothing of its control: every admin route is a 403 `{error: forbidden, detail}`
/// (by path and with the token in the world's own credential slot alike), while the
/// project's session API still reads, resets and seeds it.
#[test]
fn hostile_agent_token_on_admin_routes() {
    let hub = TestHub::start(None);
    let work = tempfile::tempdir().unwrap();
    push_helpdesk(&hub.api, &hub.one, work.path());
    let (status, opened) = hub.call("POST", "/api/public/world-sessions", Some(OPEN));
    assert_eq!(status, 200, "{opened:?}");
    let sid = text(&opened, "sessionId");
    let (url, token) = (text(&opened, "surfaces.api.url"), text(&opened, "surfaces.api.token"));
    let http = reqwest::blocking::Client::new();
    let ticket = http.get(format!("{url}/api/v2/tickets/102")).bearer_auth(&token).send().unwrap();
    assert_eq!(ticket.status().as_u16(), 200, "the token still reaches the vendor API");

    for (method, path, body) in [
        ("GET", "/__world/state", ""),
        ("POST", "/__world/reset", ""),
        ("POST", "/__world/seed", r#"{"rows": {}}"#),
        ("GET", "/__world/anything-else", ""),
        ("POST", "/__world", ""),
    ] {
        let request = match method {
            "GET" => http.get(format!("{url}{path}")),
            _ => http.post(format!("{url}{path}")).body(body.to_string()),
        };
        for authorised in [request.try_clone().unwrap().bearer_auth(&token), request.header("x-api-key", &token)] {
            let answer = authorised.send().unwrap();
            assert_eq!(answer.status().as_u16(), 403, "{method} {path}");
            let refused = json::parse(&answer.text().unwrap()).unwrap().value;
            assert_eq!(text(&refused, "error"), "forbidden", "{method} {path}: {refused:?}");
            assert!(text(&refused, "detail").contains("gateway worlds session state|reset|seed"), "{refused:?}");
        }
    }

    // The project's own session API keeps working.
    let state = do_call(&hub, &sid, r#"{"kind": "state"}"#);
    assert_eq!(text(&state, "result.tickets.102.status"), "open");
    let seeded = do_call(
        &hub,
        &sid,
        r#"{"kind": "seed", "args": {"rows": {"customers": [{"id": "C9", "name": "Zed", "email": "zed@example.com", "tier": "free", "created_at": "2026-03-01T00:00:00Z"}]}}}"#,
    );
    assert_eq!(text(&seeded, "result.seeded"), "1");
    do_call(&hub, &sid, r#"{"kind": "reset"}"#);
    assert_eq!(text(&do_call(&hub, &sid, r#"{"kind": "state"}"#), "result.customers.C9"), "null");
}

/// Item 8: one project opening session after session stops at its quota (429, naming
/// the quota and the flag) while the other project still opens; closing frees a slot.
#[test]
fn hostile_project_takes_every_session_slot() {
    let hub = TestHub::start_with(None, Limits { max_sessions_per_project: 2, ..Limits::default() });
    let work = tempfile::tempdir().unwrap();
    push_helpdesk(&hub.api, &hub.one, work.path());
    push_helpdesk(&hub.api, &hub.two, work.path());
    let open = |key: &Key| hub.call_as(key, "POST", "/api/public/world-sessions", Some(OPEN), &[]);
    let first = open(&hub.one);
    assert_eq!(first.0, 200, "{:?}", first.1);
    assert_eq!(open(&hub.one).0, 200);
    let (status, refused) = open(&hub.one);
    assert_eq!(status, 429, "{refused:?}");
    assert_eq!(text(&refused, "error"), "too_many_requests");
    let message = text(&refused, "message");
    assert!(message.contains("quota of 2 open world sessions") && message.contains("--max-sessions-per-project"), "{message}");

    let (status, theirs) = open(&hub.two);
    assert_eq!(status, 200, "the other project still opens: {theirs:?}");

    let sid = text(&first.1, "sessionId");
    let (status, _) = hub.call("DELETE", &format!("/api/public/world-sessions/{sid}"), None);
    assert_eq!(status, 200);
    assert_eq!(open(&hub.one).0, 200, "a closed session frees its slot");
    assert_eq!(open(&hub.one).0, 429);
}

/// A hub with no embedded host (sessions go to registered hosts only), served in process.
struct RemoteHub {
    api: String,
    key: Key,
    meta: Arc<dyn gateway_hub::store::MetaStore>,
    keys: gateway_hub::server::Keys,
    shared_secret: String,
    runtime: tokio::runtime::Runtime,
    _data: tempfile::TempDir,
}

fn remote_hub() -> RemoteHub {
    let data = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let config = gateway_hub::HubConfig { data: data.path().to_path_buf(), database: None, objects: None };
    let shared_secret = config.host_secret().unwrap();
    let (api, key, meta, keys) = runtime.block_on(async {
        let mut hub = config.open(None, Limits::default()).await.expect("open hub");
        let objects = hub.objects.clone();
        hub.worlds = Some(Arc::new(gateway_hub::worlds::Worlds::remote_only(&data.path().join("host"), shared_secret.clone(), objects)));
        let (_, public, secret) = gateway_hub::create_key(hub.meta.as_ref(), "one").await.unwrap();
        let (meta, keys) = (hub.meta.clone(), hub.keys.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(gateway_hub::server::serve_on(hub, listener));
        (format!("http://{addr}"), (public, secret), meta, keys)
    });
    RemoteHub { api, key, meta, keys, shared_secret, runtime, _data: data }
}

/// A World Host served in process under `secret`, recording every bundle URL it fetches.
fn remote_host(hub: &RemoteHub, root: &Path, secret: &str, fetched: Arc<Mutex<Vec<String>>>) -> (Arc<gateway_host::WorldHost>, String) {
    let mut config = gateway_host::HostConfig::local(root.to_path_buf());
    config.fetch = Arc::new(move |url: &str, dest: &Path| {
        fetched.lock().unwrap().push(url.to_string());
        gateway_hub::worlds::fetch_bundle(url, dest)
    });
    let listener = hub.runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    config.advertise_url = Some(url.clone());
    let host = Arc::new(gateway_host::WorldHost::new(config));
    let server = gateway_host::server::ServerConfig { secret: secret.to_string(), domain: "localhost".into() };
    hub.runtime.spawn(gateway_host::server::run(host.clone(), server, listener, std::future::pending()));
    (host, url)
}

fn heartbeat(hub: &RemoteHub, host: &gateway_host::WorldHost, secret: &str) -> Result<(), String> {
    hub.runtime.block_on(gateway_hub::worlds::heartbeat_once(&reqwest::Client::new(), host, &hub.api, secret)).map_err(|e| e.to_string())
}

fn call(hub: &RemoteHub, method: &str, path: &str, body: Option<&str>, headers: &[(&str, &str)]) -> (u16, Value) {
    call_hub(&hub.api, &hub.key, method, path, body, headers)
}

/// Item 6: the shared host secret (leaked) registers no host; a host registers under
/// the credential the operator issued it, and receives opens — with a bundle URL on
/// the hub's own address even when the opening request forged its `Host`; once
/// revoked its heartbeats are 401, it is given no more sessions and the hub stops
/// calling it (its session is LOST).
#[test]
fn hostile_leaked_host_secret_and_forged_host_header() {
    let hub = remote_hub();
    let work = tempfile::tempdir().unwrap();
    push_helpdesk(&hub.api, &hub.key, work.path());

    // The attacker's host, holding the leaked shared secret: refused, and so is a forgery.
    let fetched = Arc::new(Mutex::new(Vec::new()));
    let (rogue, _) = remote_host(&hub, &work.path().join("rogue"), &hub.shared_secret, fetched.clone());
    for secret in [hub.shared_secret.as_str(), "ghc-h1.0000", ""] {
        let refused = heartbeat(&hub, &rogue, secret).unwrap_err();
        assert!(refused.contains("401"), "{secret}: {refused}");
    }
    let (status, refused) = call(&hub, "POST", "/api/public/world-sessions", Some(OPEN), &[]);
    assert_eq!(status, 409, "no host registered: {refused:?}");
    let (status, _) = call(&hub, "GET", "/api/public/world-sessions/ws-x/host", None, &[("x-host-secret", hub.shared_secret.as_str())]);
    assert_eq!(status, 401, "owner lookups need a host credential too");

    // The operator's host, under its own credential.
    let credential = hub.runtime.block_on(gateway_hub::host_credentials::add(hub.meta.as_ref(), &hub.keys, "h1")).unwrap();
    let (host, host_url) = remote_host(&hub, &work.path().join("h1"), &credential, fetched.clone());
    heartbeat(&hub, &host, &credential).unwrap();
    let forged = [("host", "evil.example:4444")];
    let (status, opened) = call(&hub, "POST", "/api/public/world-sessions", Some(OPEN), &forged);
    assert_eq!(status, 200, "{opened:?}");
    assert!(text(&opened, "surfaces.api.url").starts_with(&host_url), "{opened:?}");
    let urls = fetched.lock().unwrap().clone();
    assert_eq!(urls.len(), 1, "{urls:?}");
    assert!(urls[0].starts_with(&format!("{}/objects/", hub.api)) && !urls[0].contains("evil.example"), "{urls:?}");
    let sid = text(&opened, "sessionId");
    let (status, state) = call(&hub, "POST", &format!("/api/public/world-sessions/{sid}/calls"), Some(r#"{"kind": "state"}"#), &[]);
    assert_eq!((status, text(&state, "result.tickets.102.status")), (200, "open".to_string()), "{state:?}");
    let (status, owner) =
        call(&hub, "GET", &format!("/api/public/world-sessions/{sid}/host"), None, &[("x-host-secret", credential.as_str())]);
    assert_eq!((status, text(&owner, "hostUrl")), (200, host_url.clone()));

    // Revoked: no heartbeat, no open, no call.
    assert!(hub.runtime.block_on(gateway_hub::host_credentials::revoke(hub.meta.as_ref(), "h1")).unwrap());
    assert!(heartbeat(&hub, &host, &credential).unwrap_err().contains("401"));
    let (status, refused) = call(&hub, "POST", "/api/public/world-sessions", Some(OPEN), &[]);
    assert_eq!(status, 409, "a revoked host takes no session: {refused:?}");
    assert_eq!(host.session_count(), 1, "{refused:?}");
    let (status, refused) = call(&hub, "POST", &format!("/api/public/world-sessions/{sid}/calls"), Some(r#"{"kind": "state"}"#), &[]);
    assert_eq!(status, 409, "{refused:?}");
    assert!(text(&refused, "message").contains("credential was revoked"), "{refused:?}");
    let (_, status_now) = call(&hub, "GET", &format!("/api/public/world-sessions/{sid}"), None, &[]);
    assert_eq!(text(&status_now, "state"), "LOST");
}

/// Item 10, files, for a hub opened as a library (whatever the process's umask): its
/// data, keys, work and host directories are 0700; hub.sqlite, the keys and every stored
/// object 0600, under 0700 directories.
#[test]
fn hostile_hub_state_is_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let hub = TestHub::start(None);
    let work = tempfile::tempdir().unwrap();
    push_helpdesk(&hub.api, &hub.one, work.path());
    let data = hub.data.path();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    for dir in ["", "keys", "objects", "work", "host"] {
        assert_eq!(mode(&data.join(dir)), 0o700, "{dir}/");
    }
    for file in ["hub.sqlite", "keys/signing.key", "keys/secrets.key"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    let mut objects = 0;
    let mut stack = vec![data.join("objects")];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            assert_eq!(mode(&path), 0o700, "{}", path.display());
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            objects += 1;
            assert_eq!(mode(&path), 0o600, "{}", path.display());
        }
    }
    assert!(objects > 0, "the pushed bundle is among them");
}

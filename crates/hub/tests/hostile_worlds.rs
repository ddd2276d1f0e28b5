//! Hostile worlds on a shared hub (issue 24): project one pushes a world whose Python
//! attacks the hub — reads its files and environment, writes outside, connects out,
//! forks, allocates, loops, daemonizes — and a grader that tries to write the hub's
//! database. Each attack must fail with a contained error, while project two's sessions
//! on the bundled example keep answering. Skipped with a NOTICE where bubblewrap is
//! missing (CI installs it).

use gateway_hub::server::Limits;
use gateway_hub_client::client::{Client, PushOptions};
use gateway_sandbox::Sandbox;
use gateway_serve::handlers::WorkerOptions;
use gateway_test_support::{copy_tree, text, Key, TestHub};
use gateway_world::json::{self, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The hostile handlers: `GET /tickets/stats?attack=NAME&arg=…` runs one attack and
/// answers what it found.
const HOSTILE: &str = r#"
import json, os, socket, time

def ticket_stats(ctx, args, query, body):
    attack, arg = query.get("attack"), query.get("arg", "")
    if attack == "env":
        return {"env": sorted(os.environ)}
    if attack == "read":
        try:
            with open(arg, "rb") as f:
                return {"read": len(f.read())}
        except OSError as e:
            return {"refused": type(e).__name__}
    if attack == "write":
        try:
            with open(arg, "a") as f:
                f.write("pwned")
            return {"wrote": arg}
        except OSError as e:
            return {"refused": type(e).__name__}
    if attack == "connect":
        host, port = arg.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), 2).close()
            return {"connected": arg}
        except OSError as e:
            return {"refused": type(e).__name__}
    if attack == "fork":
        children = 0
        try:
            for _ in range(300):
                if os.fork() == 0:
                    time.sleep(1)
                    os._exit(0)
                children += 1
        except OSError:
            pass
        for _ in range(children):
            os.wait()
        return {"forked": children}
    if attack == "allocate":
        try:
            hog = bytearray(10 * 1024 ** 3)
            return {"allocated": len(hog)}
        except MemoryError:
            return {"refused": "MemoryError"}
    if attack == "daemon":
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                while True:
                    time.sleep(1)
            os._exit(0)
        return {"uid": os.getuid()}
    if attack == "loop":
        while True:
            pass
    return {"counts": {}, "total": len(ctx.rows("tickets")), "at": ctx.now()}
"#;

const DEADLINE: Duration = Duration::from_secs(4);

/// A hub with a short handler deadline, or None (a NOTICE) where world code cannot be confined.
fn start() -> Option<TestHub> {
    if let Err(error) = Sandbox::default().check() {
        gateway_test_support::absent("bwrap", format!("hostile worlds skipped: {error}"));
        return None;
    }
    let limits = Limits { workers: WorkerOptions { deadline: DEADLINE, ..WorkerOptions::default() }, ..Limits::default() };
    Some(TestHub::start_with(None, limits))
}

fn call(hub: &TestHub, key: &Key, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    hub.call_as(key, method, path, body, &[])
}

/// Push the example as `slug` for `key`, its handlers replaced by `handlers` when given.
fn push(hub: &TestHub, key: &Key, work: &Path, slug: &str, handlers: Option<&str>) {
    let world = work.join(slug);
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    if let Some(source) = handlers {
        let original = std::fs::read_to_string(world.join("api/handlers.py")).unwrap();
        let kept = original.split("\ndef ticket_stats").next().unwrap().to_string();
        std::fs::write(world.join("api/handlers.py"), format!("{kept}\n{source}")).unwrap();
    }
    let client = Client::new(&hub.api, &key.0, &key.1).unwrap();
    client.push(&world, &PushOptions { slug: Some(slug.into()), message: Some("push".into()), ..Default::default() }).unwrap();
}

/// A session on `slug`: its api URL and token.
fn open(hub: &TestHub, key: &Key, slug: &str, grader: Option<&str>) -> (String, String, String) {
    let grader = grader
        .map_or(String::new(), |source| format!(r#", "grader": {{"kind": "python", "source": {}}}"#, json::canonical(&Value::str(source))));
    let task = format!(r#"{{"name": "t", "instruction": "Look around."{grader}}}"#);
    let body = format!(r#"{{"slug": "{slug}@main", "task": {task}, "surfaces": ["api"]}}"#);
    let (status, opened) = call(hub, key, "POST", "/api/public/world-sessions", Some(&body));
    assert_eq!(status, 200, "{opened:?}");
    (text(&opened, "sessionId"), text(&opened, "surfaces.api.url"), text(&opened, "surfaces.api.token"))
}

fn attack(session: &(String, String, String), name: &str, arg: &str) -> (u16, Value) {
    attack_with(&reqwest::blocking::Client::builder().timeout(Duration::from_secs(120)).build().unwrap(), session, name, arg)
}

fn attack_with(client: &reqwest::blocking::Client, session: &(String, String, String), name: &str, arg: &str) -> (u16, Value) {
    let (_, url, token) = session;
    let response =
        client.get(format!("{url}/api/v2/tickets/stats")).query(&[("attack", name), ("arg", arg)]).bearer_auth(token).send().unwrap();
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    (status, json::parse(&text).map(|p| p.value).unwrap_or(Value::Str(text)))
}

/// Processes on the machine running under `uid`.
fn processes_of(uid: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            std::fs::read_to_string(entry.path().join("status")).ok().is_some_and(|status| {
                status.lines().find(|l| l.starts_with("Uid:")).is_some_and(|l| l.split_whitespace().nth(1) == Some(uid))
            })
        })
        .count()
}

#[test]
fn hostile_handlers_are_contained_and_other_projects_keep_working() {
    let Some(hub) = start() else { return };
    let work = tempfile::tempdir().unwrap();
    push(&hub, &hub.one, work.path(), "hostile", Some(HOSTILE));
    push(&hub, &hub.two, work.path(), "helpdesk", None);
    let hostile = open(&hub, &hub.one, "hostile", None);
    let victim = open(&hub, &hub.two, "helpdesk", None);

    // 1. The environment: only what the protocol needs.
    let (status, seen) = attack(&hostile, "env", "");
    assert_eq!(status, 200, "{seen:?}");
    let env = text(&seen, "env");
    for allowed in env.trim_matches(['[', ']']).split(',').filter(|n| !n.is_empty()) {
        let name = allowed.trim_matches('"');
        assert!(["PATH", "HOME", "LANG", "LC_CTYPE", "GATEWAY_WORLD_CLOCK"].contains(&name), "the handler saw {name}: {env}");
    }

    // 1–2. The hub's files: not there to read, nowhere to write.
    let sqlite = hub.data.path().join("hub.sqlite");
    let mut secrets = vec![sqlite.clone()];
    secrets.extend(std::fs::read_dir(hub.data.path().join("keys")).unwrap().flatten().map(|e| e.path()));
    assert!(secrets.len() >= 3, "the hub keeps its keys: {secrets:?}");
    for secret in secrets {
        let (status, seen) = attack(&hostile, "read", &secret.display().to_string());
        assert_eq!((status, text(&seen, "refused")), (200, "FileNotFoundError".to_string()), "{}: {seen:?}", secret.display());
    }
    for target in [sqlite.clone(), hub.data.path().join("planted"), PathBuf::from("/usr/planted")] {
        let (status, seen) = attack(&hostile, "write", &target.display().to_string());
        assert_eq!(status, 200);
        assert!(!text(&seen, "refused").is_empty() && text(&seen, "refused") != "null", "{}: {seen:?}", target.display());
    }
    assert!(!hub.data.path().join("planted").exists());
    assert!(!std::fs::read(&sqlite).unwrap().ends_with(b"pwned"), "the hub's database was written by the world");

    // Network: not the hub itself, not the world.
    let port = hub.api.rsplit(':').next().unwrap();
    for target in [format!("127.0.0.1:{port}"), "1.1.1.1:53".to_string()] {
        let (status, seen) = attack(&hostile, "connect", &target);
        assert_eq!(status, 200);
        assert_ne!(text(&seen, "refused"), "null", "{target}: {seen:?}");
    }

    // 4. Resources: a fork bomb stops at the cap, 10 GB is not granted.
    let (_, seen) = attack(&hostile, "fork", "");
    let forked: u64 = text(&seen, "forked").parse().unwrap();
    assert!(forked < 64, "forked {forked} children past the process cap");
    let (_, seen) = attack(&hostile, "allocate", "");
    assert_eq!(text(&seen, "refused"), "MemoryError", "{seen:?}");

    // 3–4. A daemon, then a handler that loops while 600 requests pile up on it: the
    // looping calls answer 504 at the deadline, the worker dies with its daemon, and project two's
    // calls are answered all the while.
    let (_, seen) = attack(&hostile, "daemon", "");
    let uid = text(&seen, "uid");
    // A uid of its own (and so this count) is given when the hub runs as root, as in CI.
    let root = std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:\t0\t"));
    if !root {
        eprintln!("NOTICE: not root: workers share the hub's uid; the daemon check is skipped");
        return;
    }
    assert!(uid.parse::<u32>().is_ok_and(|uid| uid >= gateway_sandbox::uid::BASE), "{seen:?}");
    assert!(processes_of(&uid) >= 2, "the worker and its daemon run under uid {uid}");
    let started = Instant::now();
    // The issue's ~600 requests piled on the looping handler, from one client.
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
    let looping: Vec<_> = (0..600)
        .map(|_| {
            let (hostile, client) = (hostile.clone(), client.clone());
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    let (status, _) = attack_with(&client, &hostile, "loop", "");
                    (status, Instant::now())
                })
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut victim_done = Vec::new();
    for _ in 0..10 {
        let (status, seen) = attack(&victim, "", "");
        assert_eq!(status, 200, "project two's handler call while project one loops: {seen:?}");
        victim_done.push(Instant::now());
    }
    let answers: Vec<(u16, Instant)> = looping.into_iter().map(|t| t.join().unwrap()).collect();
    let first_timeout = answers.iter().map(|(_, at)| *at).min().unwrap();
    assert!(answers.iter().all(|(status, _)| *status == 504), "{:?}", answers.iter().map(|a| a.0).collect::<Vec<_>>());
    assert!(
        victim_done.iter().all(|at| *at < first_timeout),
        "project two waited for project one's loop ({:?} after the loop began)",
        victim_done.last().unwrap().duration_since(started)
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_of(&uid) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_of(&uid), 0, "a process of the killed worker (the daemon) outlived it");
    // The world's next call gets a fresh worker.
    let (status, seen) = attack(&hostile, "", "");
    assert_eq!(status, 200, "{seen:?}");
}

#[test]
fn a_hostile_grader_cannot_write_the_hubs_database() {
    let Some(hub) = start() else { return };
    let work = tempfile::tempdir().unwrap();
    push(&hub, &hub.one, work.path(), "helpdesk", None);
    let sqlite = hub.data.path().join("hub.sqlite");
    // The grader reports what it reached; the hub's database must not even be there.
    let grader = format!(
        "import json, os, sqlite3\n\
         found = {{'exists': int(os.path.exists({path:?}))}}\n\
         try:\n    db = sqlite3.connect({path:?}); db.execute('CREATE TABLE planted (x)'); db.commit(); found['wrote'] = 1\n\
         except Exception as e: found['refused'] = 1\n\
         found['env'] = len([k for k in os.environ if k not in ('PATH', 'HOME', 'LANG', 'LC_CTYPE')])\n\
         print(json.dumps({{'reward': 1 if 'refused' in found and not found['env'] and not found['exists'] else 0, **found}}))",
        path = sqlite.display().to_string()
    );
    let (sid, _, _) = open(&hub, &hub.one, "helpdesk", Some(&grader));
    let (status, graded) = call(&hub, &hub.one, "POST", &format!("/api/public/world-sessions/{sid}/calls"), Some(r#"{"kind": "grade"}"#));
    assert_eq!(status, 200, "{graded:?}");
    let call_id = text(&graded, "callId");
    let mut result = Value::Null;
    for _ in 0..200 {
        let (_, polled) = call(&hub, &hub.one, "GET", &format!("/api/public/world-sessions/{sid}/calls/{call_id}"), None);
        if text(&polled, "done") == "true" {
            result = polled;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(text(&result, "result.reward"), "1.0", "the grader reached the hub's database or saw its environment: {result:?}");
    let planted = rusqlite::Connection::open(&sqlite)
        .unwrap()
        .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'planted'", [], |row| row.get::<_, i64>(0))
        .unwrap();
    assert_eq!(planted, 0, "the grader wrote the hub's database");
}

//! The hub end to end: `gateway hub serve` on loopback, our `bench` client against it,
//! and — when the reference install is present — the ORIGINAL client against it, plus
//! content-hash and tarball parity with the original's own functions.

use gateway_test_support::copy_tree;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

mod common;
use common::*;

fn write_tree(root: &Path) {
    let files: &[(&str, &str)] = &[
        ("README.md", "# Demo\n"),
        ("pyproject.toml", "[project]\nname = \"demo-env\"\nversion = \"0.1.0\"\ndependencies = [\"requests\"]\n"),
        ("main.py", "print(1)\n"),
        ("notes.txt", "notes\n"),
        ("pkg/a.py", "x = 1\n"),
        ("pkg/sub/b.json", "{}\n"),
        (".env", "SECRET=1\n"),
        (".gitignore", "data/\n*.log\n!keep.log\n"),
        ("data/rows.json", "[]\n"),
        ("pkg/x.log", "log\n"),
        ("pkg/keep.log", "kept\n"),
        ("pkg/.dot", "dot\n"),
        (".hidden/c.py", "y\n"),
        ("dist/d.py", "d\n"),
        ("pkg/éèà-ünïcode.py", "u = 'é'\n"),
    ];
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let long = format!("pkg/{}.py", "n".repeat(120));
    std::fs::write(root.join(long), "long = True\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("main.py", root.join("link.py")).unwrap();
}

fn python_hash_and_bundle(python: &Path, dir: &Path) -> (String, String) {
    let script = "import sys,hashlib,base64\nfrom gatewaysdk.benchmark_hub._archive import compute_content_hash\n\
                  from gatewaysdk.benchmark_hub.client import build_source_tarball\n\
                  t=build_source_tarball(sys.argv[1]);print(compute_content_hash(sys.argv[1]));print(base64.b64encode(hashlib.sha256(t).digest()).decode())";
    let out = Command::new(python).args(["-c", script]).arg(dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    (lines.next().unwrap().to_string(), lines.next().unwrap().to_string())
}

#[test]
fn content_hash_and_tarball_match_the_original() {
    let Some((_, python)) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    write_tree(tmp.path());
    let mut dirs = vec![tmp.path().to_path_buf()];
    let marker = tempfile::tempdir().unwrap();
    write_tree(marker.path());
    std::fs::write(marker.path().join("gateway-api-world.toml"), "[world]\n").unwrap();
    dirs.push(marker.path().to_path_buf());
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dirs.push(repo.join("examples/helpdesk"));
    let conformance = repo.join("../shared/conformance");
    if let Ok(entries) = std::fs::read_dir(conformance.join("worlds")) {
        dirs.extend(entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()));
    }
    for dir in dirs {
        let (hash, bundle) = python_hash_and_bundle(&python, &dir);
        assert_eq!(gateway_bundle::archive::compute_content_hash(&dir).unwrap(), hash, "content hash of {}", dir.display());
        let ours = gateway_bundle::archive::sha256_base64(&gateway_bundle::archive::build_source_tarball(&dir).unwrap());
        assert_eq!(ours, bundle, "tarball bytes of {}", dir.display());
    }
}

#[test]
fn our_client_against_our_hub() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let gw = Path::new(GATEWAY);
    let work = tmp.path();
    write_tree(&work.join("env"));
    let pushed = ok(&server, gw, &["bench", "push", "env", "-m", "first", "--author", "alice"], work);
    let v1 = field(&pushed, "versionId");
    assert_eq!(field(&pushed, "state"), "READY");
    // Same tree again: deduplicated.
    assert!(ok(&server, gw, &["bench", "push", "env"], work).contains("\"alreadyUploaded\": true"));
    let pulled = ok(&server, gw, &["bench", "pull", "demo-env", "-t", "copy"], work);
    assert_eq!(field(&pulled, "versionId"), v1);
    assert_eq!(std::fs::read(work.join("copy/main.py")).unwrap(), b"print(1)\n");
    assert!(!work.join("copy/notes.txt").exists(), "not in the archive");
    // A second working copy from the same base, both edited: the second push is refused.
    ok(&server, gw, &["bench", "checkout", "demo-env@main", "-t", "other"], work);
    std::fs::write(work.join("copy/main.py"), "print(2)\n").unwrap();
    std::fs::write(work.join("other/main.py"), "print(3)\n").unwrap();
    let status = ok(&server, gw, &["bench", "status", "copy"], work);
    assert!(status.contains("\"dirty\": true"));
    let v2 = field(&ok(&server, gw, &["bench", "push", "copy", "--auto-bump", "-m", "second"], work), "versionId");
    assert!(std::fs::read_to_string(work.join("copy/pyproject.toml")).unwrap().contains("version = \"0.1.1\""));
    let (success, _, stderr) = run(&server, gw, &["bench", "push", "other"], work);
    assert!(!success && stderr.contains("409") && stderr.contains("--force"), "{stderr}");
    assert!(ok(&server, gw, &["bench", "status", "other"], work).contains("\"behind\": true"));
    // Another branch takes it; then --force moves main.
    ok(&server, gw, &["bench", "push", "other", "--branch", "fix/other"], work);
    ok(&server, gw, &["bench", "branch", "wip", "--slug", "demo-env"], work);
    ok(&server, gw, &["bench", "tag", "v1", "--slug", "demo-env", "--version", &v1], work);
    let (success, _, stderr) = run(&server, gw, &["bench", "tag", "v1", "--slug", "demo-env"], work);
    assert!(!success && stderr.contains("immutable"), "{stderr}");
    let listed = ok(&server, gw, &["bench", "branch", "--path", "copy"], work);
    assert!(listed.contains("* branch main") && listed.contains("  branch fix/other") && listed.contains("  tag    v1"), "{listed}");
    let log = ok(&server, gw, &["bench", "log", "demo-env"], work);
    assert!(log.find(&v2).unwrap() < log.find(&v1).unwrap() && log.contains("\"author\": \"alice\""), "{log}");
    let pinned = ok(&server, gw, &["bench", "pull", "demo-env@v1", "-t", "pinned"], work);
    assert_eq!(field(&pinned, "versionId"), v1);
    let prefix: String = field(&pushed, "contentHash").chars().take(10).collect();
    assert_eq!(field(&ok(&server, gw, &["bench", "pull", &format!("demo-env@{prefix}"), "-t", "byhash"], work), "versionId"), v1);
    assert_eq!(field(&ok(&server, gw, &["bench", "pull", "demo-env@0.1.1", "-t", "bysemver"], work), "versionId"), v2);
    let diff = ok(&server, gw, &["bench", "diff", &v1, &v2], work);
    assert!(diff.contains("\"modified\": [\n    \"main.py\",\n    \"pyproject.toml\""), "{diff}");
    let fork = ok(&server, gw, &["bench", "fork", "demo-env", "--into", "demo-fork"], work);
    assert_eq!(field(&fork, "forkedFromVersionId"), v2);
    std::fs::write(work.join("copy/pkg/a.py"), "x = 2\n").unwrap();
    assert!(ok(&server, gw, &["bench", "propose", "copy", "--title", "T", "-m", "why"], work).contains("\"status\": \"OPEN\""));
    let (success, _, stderr) = run(&server, gw, &["bench", "propose", "pinned", "--title", "T", "-m", "why"], work);
    assert!(!success && stderr.contains("No changes"), "{stderr}");
    assert!(ok(&server, gw, &["bench", "secrets", "set", "--env", "demo-env", "--key", "API_KEY", "--value", "v4lue"], work)
        .starts_with("Added"));
    assert!(ok(&server, gw, &["bench", "secrets", "set", "--env", "demo-env", "--key", "API_KEY", "--value", "v5lue"], work)
        .starts_with("Rotated"));
    assert!(ok(&server, gw, &["bench", "secrets", "list", "--env", "demo-env"], work).starts_with("API_KEY  (rotated "));
    let db = std::fs::read(tmp.path().join("data/hub.sqlite")).unwrap();
    assert!(!db.windows(5).any(|w| w == b"v5lue"), "secret values are encrypted at rest");
    ok(&server, gw, &["bench", "secrets", "unset", "--env", "demo-env", "--key", "API_KEY"], work);
    let created = ok(&server, gw, &["bench", "run-configs", "create", "--name", "ci", "--models", "a,b", "--parallelism", "4"], work);
    let id = created.split_whitespace().next().unwrap().to_string();
    assert!(ok(&server, gw, &["bench", "run-configs", "list"], work).contains("[x4 containers]"));
    ok(&server, gw, &["bench", "run-configs", "delete", "--id", &id], work);
    assert!(ok(&server, gw, &["bench", "run-configs"], work).contains("No run configs"));
    // Wrong keys: 401; unknown slug: 404.
    let out = Command::new(GATEWAY)
        .args(["bench", "log", "demo-env"])
        .env("GATEWAY_HOST", &server.host)
        .env("GATEWAY_PUBLIC_KEY", &server.public)
        .env("GATEWAY_SECRET_KEY", "sk-lf-wrong")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("-> 401"));
    let (_, _, stderr) = run(&server, gw, &["bench", "pull", "nope"], work);
    assert!(stderr.contains("-> 404"), "{stderr}");
}

#[test]
fn the_original_client_against_our_hub() {
    let Some((reference, _)) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let (gw, work) = (Path::new(GATEWAY), tmp.path());
    write_tree(&work.join("env"));
    let pushed = ok(&server, &reference, &["bench", "push", "env", "-m", "first", "--author", "alice"], work);
    let v1 = field(&pushed, "versionId");
    // Our client pulls what the original pushed, and vice versa.
    ok(&server, gw, &["bench", "pull", "demo-env", "-t", "ours"], work);
    std::fs::write(work.join("ours/main.py"), "print(2)\n").unwrap();
    let v2 = field(&ok(&server, gw, &["bench", "push", "ours", "-m", "second"], work), "versionId");
    let pulled = ok(&server, &reference, &["bench", "pull", "demo-env", "-t", "theirs"], work);
    assert_eq!(field(&pulled, "versionId"), v2);
    assert_eq!(std::fs::read(work.join("theirs/main.py")).unwrap(), b"print(2)\n");
    // The original's stale push is refused with the 409.
    std::fs::write(work.join("env/main.py"), "print(3)\n").unwrap();
    let (success, _, stderr) = run(&server, &reference, &["bench", "push", "env"], work);
    assert!(!success && stderr.contains("409"), "{stderr}");
    ok(&server, &reference, &["bench", "branch", "feat/x", "--path", "theirs"], work);
    ok(&server, &reference, &["bench", "tag", "v1", "--path", "theirs", "--version", &v1], work);
    let listed = ok(&server, &reference, &["bench", "branch", "--path", "theirs"], work);
    assert!(listed.contains("* branch main") && listed.contains("branch feat/x") && listed.contains("tag    v1"), "{listed}");
    assert!(ok(&server, &reference, &["bench", "log", "demo-env"], work).contains(&v1));
    ok(&server, &reference, &["bench", "status", "theirs"], work);
    ok(&server, &reference, &["bench", "checkout", "demo-env@v1", "-t", "at-v1"], work);
    assert!(ok(&server, &reference, &["bench", "fork", "demo-env"], work).contains("demo-env-fork"));
    let ours = ok(&server, gw, &["bench", "diff", &v1, &v2], work);
    assert_eq!(ok(&server, &reference, &["bench", "diff", &v1, &v2], work), ours);
    std::fs::write(work.join("theirs/pkg/a.py"), "x = 3\n").unwrap();
    assert!(ok(&server, &reference, &["bench", "propose", "theirs", "--title", "T", "-m", "why"], work).contains("OPEN"));
    assert!(
        ok(&server, &reference, &["bench", "secrets", "set", "--env", "demo-env", "--key", "K", "--value", "v"], work).starts_with("Added")
    );
    assert!(ok(&server, &reference, &["bench", "secrets", "list", "--env", "demo-env"], work).starts_with("K  (rotated"));
    ok(&server, &reference, &["bench", "secrets", "unset", "--env", "demo-env", "--key", "K"], work);
    ok(&server, &reference, &["bench", "run-configs", "create", "--name", "ci", "--models", "m"], work);
    assert_eq!(ok(&server, &reference, &["bench", "run-configs", "list"], work), ok(&server, gw, &["bench", "run-configs", "list"], work));
    // The same status output from both clients on the same working copy.
    assert_eq!(ok(&server, &reference, &["bench", "status", "theirs"], work), ok(&server, gw, &["bench", "status", "theirs"], work));
}

/// The original CLI's `worlds session …` and `worlds task …` commands, and its SDK's
/// session client, against our hub and its embedded World Host.
#[test]
fn the_original_session_and_task_commands_against_our_hub() {
    let Some((reference, python)) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let work = tmp.path();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &work.join("helpdesk"));
    ok(&server, Path::new(GATEWAY), &["bench", "push", "helpdesk", "--slug", "helpdesk", "-m", "first"], work);
    let spec = r#"{"name": "solve-101", "instruction": "Solve ticket 101.", "tools": ["get_ticket", "solve_ticket"],
        "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]},
        "metadata": {"team": "support"}}"#;
    std::fs::write(work.join("task.json"), spec).unwrap();
    std::fs::write(
        work.join("rows.json"),
        r#"{"customers": [{"id": "C9", "name": "Zed", "email": "zed@example.com", "tier": "free", "created_at": "2026-03-01T00:00:00Z"}]}"#,
    )
    .unwrap();

    // Stored tasks.
    let created = ok(&server, &reference, &["worlds", "task", "create", "task.json", "-w", "helpdesk", "-m", "first"], work);
    let task = field(&created, "id");
    assert!(ok(&server, &reference, &["worlds", "task", "list", "-w", "helpdesk"], work).contains(&task));
    let validated = ok(&server, &reference, &["worlds", "task", "validate", &task], work);
    assert!(validated.contains("\"ok\": true") && validated.contains("\"checked\": \"entities\""), "{validated}");
    assert!(ok(&server, &reference, &["worlds", "task", "show", &task], work).contains("\"versions\""));

    // A session on a bundled scenario, then one on the stored task.
    let bundled = ok(&server, &reference, &["worlds", "session", "open", "helpdesk", "-t", "backlog", "-s", "api"], work);
    let bundled_id = field(&bundled, "sessionId");
    assert!(bundled.contains("\"source\": \"bundled\""), "{bundled}");
    ok(&server, &reference, &["worlds", "session", "close", &bundled_id], work);
    let opened = ok(&server, &reference, &["worlds", "session", "open", "helpdesk", "--task-id", &task, "-s", "api"], work);
    let sid = field(&opened, "sessionId");
    assert!(ok(&server, &reference, &["worlds", "session", "status", &sid], work).contains("\"ready\": true"));

    // The SDK's session client: tool calls, a refused tool, a grade.
    let script = format!(
        "from gatewaysdk.world_sessions import attach_session\n\
         s = attach_session('{sid}')\n\
         assert s.call('solve_ticket', {{'id': 101}})['body']['status'] == 'solved'\n\
         try:\n    s.call('delete_ticket', {{'id': 101}}); raise SystemExit('not refused')\n\
         except SystemExit: raise\n\
         except Exception as e: assert 'tool_not_allowed' in str(e), e\n\
         print(s.grade()['reward'])\n"
    );
    assert_eq!(ok(&server, &python, &["-c", &script], work).trim(), "1.0");
    let graded = ok(&server, &reference, &["worlds", "session", "grade", &sid], work);
    assert!(graded.contains("\"reward\": 1.0"), "{graded}");
    let seeded = ok(&server, &reference, &["worlds", "session", "seed", &sid, "rows.json"], work);
    assert!(seeded.contains("\"seeded\": 1"), "{seeded}");
    assert!(ok(&server, &reference, &["worlds", "session", "state", &sid], work).contains("\"C9\""));
    ok(&server, &reference, &["worlds", "session", "reset", &sid], work);
    assert!(!ok(&server, &reference, &["worlds", "session", "state", &sid], work).contains("\"C9\""));
    let exported = ok(&server, &reference, &["worlds", "session", "export", &sid], work);
    assert_eq!(exported.lines().count(), 8, "{exported}");
    assert!(exported.lines().next().unwrap().contains("\"tool\": \"solve_ticket\""), "{exported}");
    ok(&server, &reference, &["worlds", "session", "close", &sid], work);

    // An inline task saved as a stored one.
    let inline = ok(&server, &reference, &["worlds", "session", "open", "helpdesk", "--task-file", "task.json"], work);
    let inline_id = field(&inline, "sessionId");
    let saved = ok(&server, &reference, &["worlds", "session", "task", "save", &inline_id, "-n", "saved"], work);
    assert_eq!(field(&saved, "name"), "saved");
    ok(&server, &reference, &["worlds", "task", "delete", &task], work);
    let (success, _, stderr) = run(&server, &reference, &["worlds", "task", "show", &task], work);
    assert!(!success && stderr.contains("404"), "{stderr}");
}

/// Spawn a server command and wait for its "listening on http://ADDR" line.
fn spawn_listening(args: &[&str], envs: &[(&str, &str)], marker: &str) -> (Child, String) {
    let mut command = Command::new(GATEWAY);
    command.args(args).stderr(Stdio::piped()).stdout(Stdio::null());
    for (k, v) in envs {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut addr = String::new();
    for _ in 0..20 {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(found) = line.trim().strip_prefix(marker) {
            addr = found.to_string();
            break;
        }
    }
    assert!(!addr.is_empty(), "{args:?} did not start");
    std::thread::spawn(move || for _ in reader.lines() {});
    (child, addr)
}

/// One HTTP/1.1 GET on loopback; (status, body).
fn http_get(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    let mut head = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    stream.write_all(format!("{head}\r\n").as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw.split_whitespace().nth(1).unwrap_or("0").parse().unwrap_or(0);
    (status, raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

/// `gateway hub serve --no-host` places sessions on a `gateway host serve` that
/// registered by heartbeat; the session's API answers on that host; SIGTERM
/// drains the host (no new sessions), and it exits once its sessions close.
#[test]
fn sessions_on_a_registered_host_and_its_drain() {
    let Some((reference, _)) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let keys = Command::new(GATEWAY).args(["hub", "keys", "create", "--project", "p1", "--data"]).arg(&data).output().unwrap();
    let keys = String::from_utf8(keys.stdout).unwrap();
    // The host registers under a credential of its own, issued by the operator.
    let added = Command::new(GATEWAY).args(["hub", "hosts", "add", "h1", "--data"]).arg(&data).output().unwrap();
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let credential = field(&String::from_utf8(added.stdout).unwrap(), "credential");
    let secret_env = [("WORLDS_HOST_SECRET", credential.as_str())];
    let data_arg = data.to_string_lossy().into_owned();
    let (hub_child, hub_addr) = spawn_listening(
        &["hub", "serve", "--addr", "127.0.0.1:0", "--no-host", "--data", &data_arg],
        &[("WORLDS_HOST_SECRET", "the-shared-secret-registers-no-host")],
        "gateway hub listening on ",
    );
    let root = tmp.path().join("host").to_string_lossy().into_owned();
    let (mut host_child, host_addr) = spawn_listening(
        &[
            "host",
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--root",
            &root,
            "--platform",
            &hub_addr,
            "--heartbeat-seconds",
            "0.2",
            "--drain-seconds",
            "20",
        ],
        &secret_env,
        "gateway world host listening on ",
    );
    let server = Server { child: hub_child, host: hub_addr, public: field(&keys, "publicKey"), secret: field(&keys, "secretKey") };
    let work = tmp.path();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &work.join("helpdesk"));
    ok(&server, Path::new(GATEWAY), &["bench", "push", "helpdesk", "--slug", "helpdesk"], work);
    std::thread::sleep(std::time::Duration::from_millis(500));

    let opened = ok(&server, &reference, &["worlds", "session", "open", "helpdesk", "-t", "backlog", "-s", "api"], work);
    let sid = field(&opened, "sessionId");
    let parsed = gateway_world::json::parse(&opened).unwrap().value;
    let api = parsed.get("api").unwrap();
    let (url, token) = (api.get("url").and_then(|v| v.as_str()).unwrap(), api.get("token").and_then(|v| v.as_str()).unwrap());
    assert!(url.starts_with(&host_addr), "the session runs on the registered host: {url}");
    let (status, body) = http_get(&format!("{url}/api/v2/tickets/102"), &[("Authorization", &format!("Bearer {token}"))]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"status\": \"open\""), "the backlog scenario is applied: {body}");
    assert!(ok(&server, &reference, &["worlds", "session", "grade", &sid], work).contains("\"reward\""));
    // A fork (our client: beyond the original) runs on its parent's host.
    let forked = ok(&server, Path::new(GATEWAY), &["worlds", "session", "fork", &sid], work);
    let fork_api = gateway_world::json::parse(&forked).unwrap().value.get("api").cloned().unwrap();
    let (fork_url, fork_token) =
        (fork_api.get("url").and_then(|v| v.as_str()).unwrap(), fork_api.get("token").and_then(|v| v.as_str()).unwrap());
    assert!(fork_url.starts_with(&host_addr), "the fork runs on its parent's host: {fork_url}");
    let (status, body) = http_get(&format!("{fork_url}/api/v2/tickets/102"), &[("Authorization", &format!("Bearer {fork_token}"))]);
    assert!(status == 200 && body.contains("\"status\": \"open\""), "the fork holds the parent's state: {status} {body}");
    ok(&server, Path::new(GATEWAY), &["worlds", "session", "close", &field(&forked, "sessionId")], work);

    // Drain: the host refuses new sessions and stays until its session closes.
    let pid = host_child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (status, stats) = http_get(&format!("{host_addr}/__host/stats"), &[("X-Host-Secret", credential.as_str())]);
    assert_eq!(status, 200);
    assert!(stats.contains("\"draining\": true") && stats.contains("\"sessions\": 1"), "{stats}");
    let (success, _, stderr) = run(&server, &reference, &["worlds", "session", "open", "helpdesk", "-t", "backlog"], work);
    assert!(!success, "a draining host takes no new session: {stderr}");
    ok(&server, &reference, &["worlds", "session", "close", &sid], work);
    let started = std::time::Instant::now();
    let exited = loop {
        if let Some(status) = host_child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(15), "the drained host did not exit");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(exited.success());
}

/// Our own `worlds session …` / `worlds task …` commands against our hub, end to end.
#[test]
fn our_session_and_task_commands_against_our_hub() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let gw = Path::new(GATEWAY);
    let work = tmp.path();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &work.join("helpdesk"));
    ok(&server, gw, &["bench", "push", "helpdesk", "--slug", "helpdesk"], work);
    std::fs::write(
        work.join("task.json"),
        r#"{"name": "solve-101", "instruction": "Solve 101.", "tools": ["get_ticket", "solve_ticket"],
            "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]}}"#,
    )
    .unwrap();
    let task = field(&ok(&server, gw, &["worlds", "task", "create", "task.json", "-w", "helpdesk"], work), "id");
    assert!(ok(&server, gw, &["worlds", "task", "validate", &task], work).contains("\"ok\": true"));
    let opened = ok(&server, gw, &["worlds", "session", "open", "helpdesk", "--task-id", &task, "-s", "api"], work);
    let sid = field(&opened, "sessionId");
    assert!(opened.contains("\"source\": \"stored\""), "{opened}");
    assert!(ok(&server, gw, &["worlds", "session", "grade", &sid], work).contains("\"reward\": 0.0"));
    assert!(ok(&server, gw, &["worlds", "session", "state", &sid], work).contains("\"101\""));
    ok(&server, gw, &["worlds", "session", "reset", &sid], work);
    // The agent's own call on the session's data plane is in the export too.
    let api = serde_json::from_str::<serde_json::Value>(&opened).unwrap()["api"].clone();
    let (url, token) = (api["url"].as_str().unwrap().to_string(), api["token"].as_str().unwrap().to_string());
    let answer = reqwest::blocking::Client::new().get(format!("{url}/tickets/101")).bearer_auth(&token).send().unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let exported = ok(&server, gw, &["worlds", "session", "export", &sid], work);
    let lines: Vec<&str> = exported.lines().collect();
    assert_eq!(lines.len(), 4, "grade, state, reset, then the agent's GET: {exported}");
    assert!(lines[0].contains(r#""kind": "grade""#) && lines[0].contains(r#""surface": "control""#), "{exported}");
    assert!(lines[3].contains(r#""tool": "GET /tickets/101""#) && lines[3].contains(r#""status": 200"#), "{exported}");
    assert!(lines[3].contains(r#""surface": "api""#) && !exported.contains(&token), "{exported}");

    // Beyond the original: a fork, printed as an open is, a session of its own.
    let forked = ok(&server, gw, &["worlds", "session", "fork", &sid], work);
    let fid = field(&forked, "sessionId");
    assert!(fid != sid && field(&forked, "forkedFrom") == sid, "{forked}");
    assert!(forked.contains("\"ready\": true") && forked.contains("\"source\": \"stored\""), "{forked}");
    let fork_api = serde_json::from_str::<serde_json::Value>(&forked).unwrap()["api"].clone();
    let (fork_url, fork_token) = (fork_api["url"].as_str().unwrap().to_string(), fork_api["token"].as_str().unwrap().to_string());
    assert!(fork_url.ends_with(&format!("/s/{fid}")) && fork_token != token, "{forked}");
    let http = reqwest::blocking::Client::new();
    assert_eq!(http.get(format!("{fork_url}/tickets/101")).bearer_auth(&fork_token).send().unwrap().status().as_u16(), 200);
    assert_eq!(http.get(format!("{fork_url}/tickets/101")).bearer_auth(&token).send().unwrap().status().as_u16(), 401);
    assert!(ok(&server, gw, &["worlds", "session", "grade", &fid], work).contains("\"reward\": 0.0"));
    let fork_log = ok(&server, gw, &["worlds", "session", "export", &fid], work);
    assert!(fork_log.lines().next().is_some_and(|first| first.contains(r#""kind": "fork""#)), "the fork's log starts with it: {fork_log}");

    assert!(ok(&server, gw, &["worlds", "session", "close", &sid], work).contains("\"closed\": true"));
    let (success, _, stderr) = run(&server, gw, &["worlds", "session", "grade", &sid], work);
    assert!(!success && stderr.contains("409"), "a closed session takes no calls: {stderr}");
    let (success, _, stderr) = run(&server, gw, &["worlds", "session", "fork", &sid], work);
    assert!(!success && stderr.contains("409"), "a closed session cannot be forked: {stderr}");
    assert!(ok(&server, gw, &["worlds", "session", "grade", &fid], work).contains("\"reward\""), "the fork outlives its parent");
}

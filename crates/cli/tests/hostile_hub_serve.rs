//! The hostile suite (issue 24) against a real `gateway hub serve` process:
//!
//! - item 9, a hub restarted under its sessions: the sessions of the hub's embedded World
//!   Host live in its process; after a restart on the same data directory they are marked
//!   `LOST` with the reason — never left `READY` while every call is a 404 — and a call on
//!   one is a clear 409. Our `gateway` and the original's (when installed) read it; new
//!   sessions open as before.
//! - item 10, files: everything the hub writes under its data directory (hub.sqlite, keys,
//!   objects, the embedded host's versions and session databases) is its owner's only.

use gateway_test_support::{copy_tree, example, reference};
use std::path::Path;

mod common;
use common::*;

#[test]
fn hostile_restart_marks_sessions_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let work = tmp.path();
    copy_tree(&example("helpdesk"), &work.join("helpdesk"));
    let gw = Path::new(GATEWAY);
    let server = start(&data);
    ok(&server, gw, &["bench", "push", "helpdesk", "--slug", "helpdesk"], work);
    let opened = ok(&server, gw, &["worlds", "session", "open", "helpdesk", "-t", "backlog", "-s", "api"], work);
    let sid = field(&opened, "sessionId");
    assert!(ok(&server, gw, &["worlds", "session", "status", &sid], work).contains("READY"));

    // The hub dies (SIGKILL) and comes back on the same data directory.
    drop(server);
    let server = start(&data);
    let status = ok(&server, gw, &["worlds", "session", "status", &sid], work);
    assert!(status.contains("\"LOST\"") && !status.contains("\"READY\""), "{status}");
    assert!(status.contains("the hub restarted"), "the reason is given: {status}");
    let (success, stdout, stderr) = run(&server, gw, &["worlds", "session", "state", &sid], work);
    assert!(!success, "{stdout}");
    assert!(stderr.contains("409") && stderr.contains("LOST") && stderr.contains("the hub restarted"), "{stderr}");
    if let Some((original, _)) = reference() {
        let status = ok(&server, &original, &["worlds", "session", "status", &sid], work);
        assert!(status.contains("LOST"), "{status}");
        let (success, _, stderr) = run(&server, &original, &["worlds", "session", "state", &sid], work);
        assert!(!success && stderr.contains("LOST"), "{stderr}");
    }

    // A new session opens and answers as before.
    let opened = ok(&server, gw, &["worlds", "session", "open", "helpdesk", "-t", "backlog"], work);
    let fresh = field(&opened, "sessionId");
    assert!(ok(&server, gw, &["worlds", "session", "state", &fresh], work).contains("\"102\""));
    assert!(ok(&server, gw, &["worlds", "session", "close", &fresh], work).contains("\"closed\": true"));
}

/// Another user on the machine reads nothing the hub wrote: every file under the data
/// directory is 0600 (or tighter) and every directory 0700, with a session open.
#[test]
fn hostile_files_are_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let work = tmp.path();
    copy_tree(&example("helpdesk"), &work.join("helpdesk"));
    let gw = Path::new(GATEWAY);
    // The hub's own temporary directory (session databases live there) is walked too.
    let temp = tmp.path().join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let keys =
        std::process::Command::new(GATEWAY).args(["hub", "keys", "create", "--project", "p1", "--data"]).arg(&data).output().unwrap();
    let keys = String::from_utf8(keys.stdout).unwrap();
    let (child, host) = gateway_test_support::spawn_hub(
        std::process::Command::new(GATEWAY).args(["hub", "serve", "--addr", "127.0.0.1:0", "--data"]).arg(&data).env("TMPDIR", &temp),
    );
    let server = Server { child, host, public: field(&keys, "publicKey"), secret: field(&keys, "secretKey") };
    ok(&server, gw, &["bench", "push", "helpdesk", "--slug", "helpdesk"], work);
    let opened = ok(&server, gw, &["worlds", "session", "open", "helpdesk", "-t", "backlog"], work);
    let sid = field(&opened, "sessionId");
    ok(&server, gw, &["worlds", "session", "state", &sid], work);
    let mut seen = (0, 0);
    let mut open = Vec::new();
    let mut stack = vec![data.clone()];
    stack.extend(std::fs::read_dir(&temp).unwrap().map(|e| e.unwrap().path()));
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            seen.0 += 1;
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            seen.1 += 1;
        }
        // What confined world code reads (a version's bundle but its databases, the tools
        // adapter) is shared read-only with the sandbox's uid, below the 0700 host directory.
        let shared = path.components().any(|c| c.as_os_str() == "bundle" || c.as_os_str() == "tools-adapter")
            && path.starts_with(data.join("host"))
            && !path.components().any(|c| c.as_os_str() == "db")
            && !path.extension().is_some_and(|e| e == "sqlite" || e == "db");
        if meta.permissions().mode() & 0o077 != 0 && !shared {
            open.push(format!("{:o} {}", meta.permissions().mode() & 0o777, path.display()));
        }
    }
    assert!(open.is_empty(), "readable by others:\n{}", open.join("\n"));
    assert_eq!(std::fs::metadata(data.join("host")).unwrap().permissions().mode() & 0o777, 0o700, "what is shared sits below it");
    for name in ["hub.sqlite", "keys/signing.key", "keys/secrets.key", "objects", "host"] {
        assert!(data.join(name).exists(), "{name} is among what was checked");
    }
    assert!(seen.1 > 10, "{seen:?}");
    assert!(std::fs::read_dir(data.join("host")).unwrap().count() > 0, "the embedded host's files are among them");
    let databases = std::process::Command::new("find").arg(&temp).args(["-name", "*.db"]).output().unwrap();
    assert!(!databases.stdout.is_empty(), "the session databases are among them");
}

//! The hostile suite (issue 24), item 9: a hub restarted under its sessions. The
//! sessions of the hub's embedded World Host live in its process; after a restart on
//! the same data directory they are marked `LOST` with the reason — never left `READY`
//! while every call is a 404 — and a call on one is a clear 409. Our `gateway` and the
//! original's (when installed) read it; new sessions open as before.

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

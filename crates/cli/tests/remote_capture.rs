//! `gateway worlds connector capture --remote`: the hub runs the capture (spec §7
//! connector-captures) with the environment's sealed secret, the pages come back through
//! the drive into captures/ and the manifest. The vendor is a world served on loopback
//! (`gateway worlds serve --api-key`); ours and — when installed — the original CLI
//! drive it against our hub.

use gateway_test_support::copy_example;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

mod common;
use common::*;

const TOKEN: &str = "s3cret-vendor-token";

struct Vendor(Child);

impl Drop for Vendor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The helpdesk world served as the vendor, accepting only `TOKEN`.
fn vendor(world: &Path) -> (Vendor, u16) {
    let (child, address) = gateway_test_support::spawn_announced(
        Command::new(GATEWAY).args(["worlds", "serve"]).arg(world).args(["--port", "0", "--api-key", TOKEN]),
        "world api listening on http://",
    );
    let child = Vendor(child);
    let address = address.unwrap_or_else(|said| panic!("the vendor did not listen: {said}"));
    let port = address.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port");
    (child, port)
}

/// A vendor that takes every connection and answers only after `delay`.
fn slow_vendor(delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
            });
        }
    });
    port
}

fn point_at(world: &Path, port: u16) {
    let path = world.join("connector.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("https://helpdesk.example.test/api/v2", &format!("http://127.0.0.1:{port}/api/v2"))).unwrap();
}

fn manifest(world: &Path) -> Vec<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(world.join("captures/manifest.json")).unwrap()).unwrap()
}

fn grep_tree(root: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(grep_tree(&path, needle));
        } else if std::fs::read(&path).unwrap().windows(needle.len()).any(|w| w == needle) {
            found.push(path);
        }
    }
    found
}

#[test]
fn remote_capture_through_our_hub() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let (gw, work) = (Path::new(GATEWAY), tmp.path());
    let world = copy_example("helpdesk", &work.join("helpdesk"));
    ok(&server, gw, &["bench", "push", "helpdesk"], work);
    let (_vendor, port) = vendor(&copy_example("helpdesk", &work.join("vendor")));
    point_at(&world, port);
    let capture = |program: &Path, extra: &[&str]| {
        let mut args = vec!["worlds", "connector", "capture", "helpdesk", "--op", "list_tickets", "--remote"];
        args.extend_from_slice(extra);
        run(&server, program, &args, work)
    };

    // No secret stored for the environment: the capture fails, saying which and how.
    let (success, stdout, stderr) = capture(gw, &[]);
    assert!(!success && stdout.is_empty(), "{stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[0].starts_with("# remote capture cap_") && lines[0].contains(" on cnt_"), "{stderr}");
    assert!(
        lines.last().unwrap().starts_with("Remote capture failed: Set HELPDESK_TOKEN to the connection's credential")
            && stderr.contains("gateway bench secrets set"),
        "{stderr}"
    );
    assert!(!world.join("captures").exists());

    // With the secret: the hub calls the vendor, the page lands in captures/.
    ok(&server, gw, &["bench", "secrets", "set", "--env", "helpdesk", "--key", "HELPDESK_TOKEN", "--value", TOKEN], work);
    let (success, stdout, stderr) = capture(gw, &[]);
    assert!(success, "{stdout}\n{stderr}");
    let written: Vec<&str> = stdout.lines().collect();
    assert_eq!(written.len(), 1, "{stdout}");
    assert!(written[0].starts_with("captures/list_tickets/") && written[0].ends_with("-p1.json"), "{stdout}");
    let page: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(world.join(written[0])).unwrap()).unwrap();
    assert_eq!(page["status"], 200, "{page}");
    assert_eq!(page["request"]["url"], format!("http://127.0.0.1:{port}/api/v2/tickets"));
    assert!(page["body"]["tickets"].as_array().is_some_and(|t| !t.is_empty()), "{page}");
    let entries = manifest(&world);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["file"], written[0]);
    let text = std::fs::read_to_string(world.join("captures/manifest.json")).unwrap();
    assert!(text.starts_with("[\n {\n  \"captured_at\"") && text.ends_with("}\n]\n"), "sorted keys, indent 1: {text}");

    // A second capture, with a parameter: its entry is added to the manifest.
    let (success, stdout, stderr) = capture(gw, &["--param", "status=open", "--max-pages", "1"]);
    assert!(success, "{stderr}");
    assert_eq!(manifest(&world).len(), 2);
    let second: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(world.join(stdout.trim())).unwrap()).unwrap();
    assert_eq!(second["request"]["params"]["status"], "open");
    // The captured pages and what the hub kept never hold the credential.
    assert!(grep_tree(&world, TOKEN.as_bytes()).is_empty());
    assert!(grep_tree(&tmp.path().join("data"), TOKEN.as_bytes()).is_empty(), "sealed at rest");

    // Refusals: an unknown environment; an unknown operation, refused by the hub.
    let (success, _, stderr) = capture(gw, &["--environment", "nope"]);
    assert!(!success && stderr.contains("-> 404") && stderr.contains("no environment 'nope'"), "{stderr}");
    let (success, _, stderr) = run(&server, gw, &["worlds", "connector", "capture", "helpdesk", "--op", "nope", "--remote"], work);
    assert!(!success && stderr.contains("-> 400") && stderr.contains("unknown operation 'nope'"), "{stderr}");
    let (success, _, stderr) = capture(gw, &["--max-pages", "0"]);
    assert!(!success && stderr.contains("-> 400") && stderr.contains("'maxPages' must be an integer from 1 to 1000"), "{stderr}");
    // A connector.toml that does not parse is refused here, before any round trip.
    let bad = copy_example("helpdesk", &work.join("bad"));
    std::fs::write(bad.join("connector.toml"), "[connector]\n").unwrap();
    let (success, _, stderr) = run(&server, gw, &["worlds", "connector", "capture", "bad", "--op", "x", "--remote"], work);
    assert!(!success && stderr.starts_with("ContractError: spec at"), "{stderr}");

    // A capture that outlasts --timeout: the request id to poll, exit 1.
    let slow = slow_vendor(Duration::from_secs(6));
    let std_text = std::fs::read_to_string(world.join("connector.toml")).unwrap();
    std::fs::write(world.join("connector.toml"), std_text.replace(&format!("127.0.0.1:{port}"), &format!("127.0.0.1:{slow}"))).unwrap();
    let started = Instant::now();
    let (success, _, stderr) = capture(gw, &["--timeout", "1"]);
    assert!(!success, "{stderr}");
    let request = stderr.lines().next().unwrap().split_whitespace().nth(3).unwrap().to_string();
    assert!(
        stderr.lines().last().unwrap() == format!("Remote capture still running after 1s; poll it with the request id {request}"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "waited {:?}", started.elapsed());
    std::fs::write(world.join("connector.toml"), std_text).unwrap();

    // The original CLI, pointed at our hub, runs the same remote capture.
    let Some((reference, _)) = reference() else { return };
    let (success, stdout, stderr) = capture(&reference, &["--param", "status=solved"]);
    assert!(success, "{stdout}\n{stderr}");
    assert!(stderr.starts_with("# remote capture cap_"), "{stderr}");
    let file = stdout.trim();
    assert!(file.starts_with("captures/list_tickets/") && world.join(file).is_file(), "{stdout}");
    assert_eq!(manifest(&world).len(), 3);
    let (success, _, stderr) = capture(&reference, &["--environment", "nope"]);
    assert!(!success && stderr.contains("404"), "{stderr}");
}

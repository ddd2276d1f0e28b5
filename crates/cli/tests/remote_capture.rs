//! `gateway worlds connector capture --remote`: the hub runs the capture (spec §7
//! connector-captures) with the environment's sealed secret, the pages come back through
//! the drive into captures/ and the manifest. The vendor is a world served on loopback
//! (`gateway worlds serve --api-key`); ours and — when installed — the original CLI
//! drive it against our hub, which allows that loopback address and port by name
//! (`hub serve --capture-allow 127.0.0.1:PORT`). The `hostile_*` tests are a
//! connector.toml trying to reach what the operator did not allow.

use gateway_test_support::copy_example;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
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
    let (gw, work) = (Path::new(GATEWAY), tmp.path());
    let (_vendor, port) = vendor(&copy_example("helpdesk", &work.join("vendor")));
    let slow = slow_vendor(Duration::from_secs(6));
    let allowed = format!("127.0.0.1:{port},127.0.0.1:{slow}");
    let server = start_with(&tmp.path().join("data"), &["--capture-allow", &allowed]);
    let world = copy_example("helpdesk", &work.join("helpdesk"));
    ok(&server, gw, &["bench", "push", "helpdesk"], work);
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

/// A loopback server that answers every request with `answer(target)` (a whole HTTP
/// response) and records each request's line and headers.
fn recording(answer: impl Fn(&str) -> String + Send + Sync + 'static) -> (u16, Arc<Mutex<Vec<String>>>) {
    use std::io::{BufRead as _, BufReader};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                head.push_str(&line);
            }
            let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            log.lock().unwrap().push(head);
            let _ = stream.write_all(answer(&target).as_bytes());
        }
    });
    (port, seen)
}

fn response(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The helpdesk world pushed to `server` with its token stored, and a capture of
/// `list_tickets` against whatever `base_url` the world's connector.toml is given.
struct Attempt<'a> {
    server: &'a Server,
    work: &'a Path,
    world: PathBuf,
}

impl Attempt<'_> {
    fn new<'a>(server: &'a Server, work: &'a Path) -> Attempt<'a> {
        let world = copy_example("helpdesk", &work.join("helpdesk"));
        ok(server, Path::new(GATEWAY), &["bench", "push", "helpdesk"], work);
        let store = ["bench", "secrets", "set", "--env", "helpdesk", "--key", "HELPDESK_TOKEN", "--value", TOKEN];
        ok(server, Path::new(GATEWAY), &store, work);
        Attempt { server, work, world }
    }

    /// Capture with `base_url` (and `edit` applied to connector.toml): the last line said.
    fn capture(&self, base_url: &str, edit: &dyn Fn(String) -> String) -> String {
        let path = self.world.join("connector.toml");
        let text = std::fs::read_to_string(self.world.parent().unwrap().join("pristine.toml"))
            .or_else(|_| {
                let original = std::fs::read_to_string(&path)?;
                std::fs::write(self.world.parent().unwrap().join("pristine.toml"), &original).map(|()| original)
            })
            .unwrap();
        std::fs::write(&path, edit(text.replace("https://helpdesk.example.test/api/v2", base_url))).unwrap();
        let args = ["worlds", "connector", "capture", "helpdesk", "--op", "list_tickets", "--remote", "--timeout", "30"];
        let (success, stdout, stderr) = run(self.server, Path::new(GATEWAY), &args, self.work);
        assert!(!success && stdout.is_empty(), "{base_url} was captured: {stdout}\n{stderr}");
        assert!(!self.world.join("captures").exists(), "{base_url}: pages were written");
        stderr.lines().last().unwrap_or_default().to_string()
    }
}

#[test]
fn hostile_a_hub_without_an_allow_list_runs_no_remote_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let (trap, seen) = recording(|_| response("200 OK", "", r#"{"tickets": []}"#));
    let server = start(&tmp.path().join("data"));
    let attempt = Attempt::new(&server, tmp.path());
    let said = attempt.capture(&format!("http://127.0.0.1:{trap}/api/v2"), &|t| t);
    assert!(said.contains("-> 400") && said.contains("remote captures are off on this hub"), "{said}");
    assert!(said.contains("gateway hub serve --capture-allow HOST"), "{said}");
    assert!(seen.lock().unwrap().is_empty(), "the hub called {:?}", seen.lock().unwrap());
}

#[test]
fn hostile_connector_tomls_reach_only_what_the_operator_allows() {
    let tmp = tempfile::tempdir().unwrap();
    // The trap stands for everything the operator did not allow (the hub's own loopback
    // services, the metadata service): it must never be called.
    let (trap, trapped) = recording(|_| response("200 OK", "", r#"{"tickets": [{"id": 1}]}"#));
    // The vendor the operator allows, turned hostile: it redirects, or names a next page
    // on another host.
    let elsewhere = format!("http://127.0.0.1:{trap}");
    let (vendor, vendor_seen) = recording(move |target| match target {
        t if t.starts_with("/to-loopback/") => response("302 Found", &format!("Location: {elsewhere}/stolen\r\n"), ""),
        t if t.starts_with("/to-another-host/") => response("302 Found", &format!("Location: http://localhost:{trap}/stolen\r\n"), ""),
        t if t.starts_with("/elsewhere-next/") => {
            response("200 OK", "", &format!(r#"{{"tickets": [{{"id": 1}}], "cursor": "{elsewhere}/api/v2/tickets?cursor=2"}}"#))
        }
        _ => response("404 Not Found", "", "{}"),
    });
    let allowed = format!("127.0.0.1:{vendor},localhost,127.0.0.1");
    let server = start_with(&tmp.path().join("data"), &["--capture-allow", &allowed]);
    let attempt = Attempt::new(&server, tmp.path());
    let same = |t: String| t;

    // A host the operator did not name: refused before the capture starts, naming the flag.
    let said = attempt.capture("http://169.254.169.254/latest", &same);
    assert!(said.contains("-> 400") && said.contains("169.254.169.254:80 is not on this hub's capture allow-list"), "{said}");
    assert!(said.contains("--capture-allow"), "{said}");
    let said = attempt.capture("https://api.example.test/v2", &same);
    assert!(said.contains("api.example.test:443 is not on this hub's capture allow-list"), "{said}");

    // Loopback through the toml: an allowed address or name is still refused when it is
    // (or resolves to) loopback — only the exact address and port the operator named pass.
    let said = attempt.capture(&format!("http://127.0.0.1:{trap}/api/v2"), &same);
    assert!(said.starts_with("Remote capture failed:") && said.contains("127.0.0.1 is a loopback address"), "{said}");
    let said = attempt.capture(&format!("http://localhost:{trap}/api/v2"), &same);
    assert!(said.contains("localhost resolves to") && said.contains("a loopback address"), "{said}");
    let said = attempt.capture(&format!("http://[::ffff:127.0.0.1]:{trap}/api/v2"), &same);
    assert!(said.contains("a loopback address: remote captures reach public addresses only"), "{said}");

    // A redirect from the allowed vendor to loopback, or to another host: not followed.
    let said = attempt.capture(&format!("http://127.0.0.1:{vendor}/to-loopback"), &same);
    assert!(said.contains(&format!("a redirect to http://127.0.0.1:{trap}/stolen refused")), "{said}");
    let said = attempt.capture(&format!("http://127.0.0.1:{vendor}/to-another-host"), &same);
    assert!(said.contains(&format!("a redirect to http://localhost:{trap}/stolen refused")), "{said}");
    // A next page on another host: the secret is not sent there.
    let said = attempt.capture(&format!("http://127.0.0.1:{vendor}/elsewhere-next"), &same);
    assert!(said.contains(&format!("The next-page URL points at 127.0.0.1:{trap}, not the connection")), "{said}");
    // Only GET: an operation that writes is refused before it is sent.
    let post = |t: String| t.replace("name = \"list_tickets\"\n", "name = \"list_tickets\"\nmethod = \"POST\"\n");
    let before = vendor_seen.lock().unwrap().len();
    let said = attempt.capture(&format!("http://127.0.0.1:{vendor}/api/v2"), &post);
    assert!(said.contains("a remote capture sends GET requests only, not POST"), "{said}");
    assert_eq!(vendor_seen.lock().unwrap().len(), before, "the POST was sent");

    // The trap heard nothing; the allowed vendor got the secret, and only it.
    assert!(trapped.lock().unwrap().is_empty(), "reached: {:?}", trapped.lock().unwrap());
    let heard = vendor_seen.lock().unwrap();
    assert_eq!(heard.len(), 3, "{heard:?}");
    assert!(heard.iter().all(|h| h.contains(&format!("authorization: Bearer {TOKEN}"))), "{heard:?}");
}

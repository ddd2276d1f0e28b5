//! The README's "Your first hour" walk, run as written: its command lines are read from
//! README.md (so the two cannot drift apart), each `gateway …` line runs our binary in a
//! scratch directory, `worlds serve … --port 8080 &` runs on port 0 in the background,
//! and each `curl …` line is sent to the port it actually bound. The last answer must be
//! the one the README shows.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

const GATEWAY: &str = env!("CARGO_BIN_EXE_gateway");

/// The indented block under `## Your first hour`: its command lines and the answer it shows.
fn walk() -> (Vec<String>, String) {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let section = readme.split("## Your first hour").nth(1).expect("README has a first-hour section");
    let section = section.split("\n## ").next().unwrap();
    let block: Vec<&str> =
        section.lines().skip_while(|l| !l.starts_with("    ")).take_while(|l| l.starts_with("    ")).map(|l| l.trim()).collect();
    let commands: Vec<String> = block.iter().filter(|l| !l.starts_with('#')).map(|l| l.to_string()).collect();
    let shown = block.iter().rev().find(|l| l.starts_with("# ")).expect("the block shows the answer").trim_start_matches("# ").to_string();
    (commands, shown)
}

/// Split a command line as a POSIX shell would for these lines: words, 'single quotes'.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    assert!(!quoted, "unbalanced quote in {line}");
    if any {
        out.push(word);
    }
    out
}

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `curl [-X METHOD] URL [-d BODY]` as one HTTP/1.1 request: (status, body).
fn curl(args: &[String], port: u16) -> (u16, String) {
    let (mut method, mut body, mut url) = (None, None, None);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-X" => method = rest.next().cloned(),
            "-d" => body = rest.next().cloned(),
            "-s" => {}
            other => url = Some(other.to_string()),
        }
    }
    let url = url.expect("curl names a URL");
    let path = url.split_once('/').map(|(_, p)| format!("/{p}")).unwrap_or_else(|| "/".into());
    let body = body.unwrap_or_default();
    let method = method.unwrap_or_else(|| if body.is_empty() { "GET".into() } else { "POST".into() });
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // curl -d sends a form content type; the world reads the body as JSON all the same.
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, body.to_string())
}

#[test]
fn the_readme_first_hour_walk_serves_what_it_says() {
    let (commands, shown) = walk();
    assert!(commands.iter().any(|c| c.starts_with("gateway worlds schema init")), "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut served: Option<(Served, u16)> = None;
    let mut last = None;
    for line in &commands {
        let mut args = words(line);
        match args.first().map(String::as_str) {
            Some("gateway") if args.last().map(String::as_str) == Some("&") => {
                args.pop();
                let at = args.iter().position(|a| a == "--port").expect("serve names a port");
                args[at + 1] = "0".into();
                let (child, address) = gateway_test_support::spawn_announced(
                    Command::new(GATEWAY).args(&args[1..]).current_dir(dir.path()),
                    "world api listening on http://",
                );
                let child = Served(child);
                let address = address.unwrap_or_else(|said| panic!("{line}: {said}"));
                let address = address.as_str();
                let port = address.rsplit(':').next().unwrap().parse().unwrap();
                served = Some((child, port));
            }
            Some("gateway") => {
                let out = Command::new(GATEWAY).args(&args[1..]).current_dir(dir.path()).output().unwrap();
                assert!(
                    out.status.success(),
                    "{line} exited {:?}:\n{}\n{}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Some("curl") => {
                let (_, port) = served.as_ref().expect("the world is served before curl");
                let (status, body) = curl(&args[1..], *port);
                assert!((200..300).contains(&status), "{line} answered {status}: {body}");
                last = Some(body);
            }
            _ => panic!("unexpected line in the walk: {line}"),
        }
    }
    assert_eq!(last.as_deref(), Some(shown.as_str()), "the last answer is the one the README shows");
    // The world the walk made still checks, and its first template files are the original's.
    let check = Command::new(GATEWAY).args(["worlds", "schema", "check", "shop"]).current_dir(dir.path()).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
    drop(served);
}

#[test]
fn custom_without_api_has_no_connector_and_serve_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(GATEWAY).args(["worlds", "schema", "init", "w", "--no-api"]).current_dir(dir.path()).output().unwrap();
    assert!(out.status.success());
    assert!(!dir.path().join("w/connector.toml").exists());
    let refused =
        Command::new(GATEWAY).args(["worlds", "schema", "init", "x", "--api", "--no-api"]).current_dir(dir.path()).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "--api and --no-api exclude each other");
    assert!(!dir.path().join("x").exists());
    let serve = Command::new(GATEWAY).args(["worlds", "serve", "w", "--port", "0"]).current_dir(dir.path()).output().unwrap();
    assert_eq!(serve.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&serve.stderr);
    assert!(stderr.contains("No connector.toml") && stderr.contains("--api"), "{stderr}");
    // A path that is not there is named as such.
    let serve = Command::new(GATEWAY).args(["worlds", "serve", "nowhere", "--port", "0"]).current_dir(dir.path()).output().unwrap();
    assert_eq!(serve.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&serve.stderr).starts_with("Error: no such directory: nowhere"), "{serve:?}");
}

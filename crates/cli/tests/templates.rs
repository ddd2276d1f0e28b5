//! The built-in templates: `schema templates` lists the original's 14; every one inits,
//! compiles, checks and (with `--api`) serves with our binary; and — when the reference
//! install is present — `schema init` writes the original's files byte for byte, with the
//! original's output and exit codes (skipped with a NOTICE otherwise).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const GATEWAY: &str = env!("CARGO_BIN_EXE_gateway");
const TEMPLATES: [&str; 14] = [
    "apple-business-manager",
    "github",
    "google-calendar",
    "google-drive",
    "jamf",
    "jira",
    "kandji",
    "linear",
    "microsoft-teams",
    "netsuite",
    "salesforce",
    "slack",
    "workday",
    "custom",
];

fn reference() -> Option<PathBuf> {
    gateway_test_support::reference().map(|(gateway, _)| gateway)
}

fn run(program: &Path, args: &[&str]) -> Output {
    Command::new(program).args(args).stdin(Stdio::null()).output().unwrap()
}

fn ours(args: &[&str]) -> Output {
    run(Path::new(GATEWAY), args)
}

/// Every file under `root`: relative path → bytes.
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn same_files(want: &Path, got: &Path, what: &str) {
    let (want, got) = (files(want), files(got));
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&got), names(&want), "{what}: the files written");
    for (name, bytes) in &want {
        assert!(got[name] == *bytes, "{what}: {name} differs from the original's");
    }
}

#[test]
fn templates_lists_the_originals_fourteen() {
    let out = ours(&["worlds", "schema", "templates"]);
    assert!(out.status.success());
    let listed: Vec<String> = String::from_utf8(out.stdout.clone()).unwrap().lines().map(str::to_string).collect();
    assert_eq!(listed, TEMPLATES);
    let Some(reference) = reference() else { return };
    let theirs = run(&reference, &["worlds", "schema", "templates"]);
    assert_eq!(out.stdout, theirs.stdout);
    assert_eq!(out.status.code(), theirs.status.code());
}

/// GET `path` on loopback `port`: (status, body).
fn get(port: u16, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    (head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0), body.to_string())
}

#[test]
fn every_template_inits_compiles_checks_and_serves() {
    let dir = tempfile::tempdir().unwrap();
    for template in TEMPLATES {
        // As the original writes it: init compiles; compile and check again.
        let world = dir.path().join(template);
        let world_arg = world.to_str().unwrap();
        let init = ours(&["worlds", "schema", "init", world_arg, "--connector", template, "--no-api"]);
        assert!(init.status.success(), "{template}: {}", String::from_utf8_lossy(&init.stdout));
        for step in ["compile", "check"] {
            let out = ours(&["worlds", "schema", step, world_arg]);
            assert!(out.status.success(), "{template} {step}: {}", String::from_utf8_lossy(&out.stdout));
        }
        // With a starter connector.toml: served, and its first entity listed (github
        // and slack start from their vendor worlds instead: crates/cli/tests/vendor_sdks.rs).
        let served = dir.path().join(format!("{template}-api"));
        let init = ours(&["worlds", "schema", "init", served.to_str().unwrap(), "--connector", template, "--api"]);
        assert!(init.status.success(), "{template} --api: {}", String::from_utf8_lossy(&init.stdout));
        let check = ours(&["worlds", "schema", "check", served.to_str().unwrap()]);
        assert!(check.status.success(), "{template} --api check");
        if ["github", "slack"].contains(&template) {
            let connector = std::fs::read_to_string(served.join("connector.toml")).unwrap();
            let vendor_path = if template == "github" { "/repos/{owner}/{repo}/issues" } else { "/chat.postMessage" };
            assert!(connector.contains(&format!("path = \"{vendor_path}\"")), "{template}: {connector}");
            continue;
        }
        let world_json = std::fs::read_to_string(served.join("schema/world.json")).unwrap();
        let document = gateway_world::json::parse(&world_json).unwrap().value;
        let mut entities: Vec<String> =
            document.get("x-gateway").and_then(|x| x.get("entities")).and_then(|e| e.as_object()).unwrap().keys().cloned().collect();
        entities.sort();
        let (mut child, address) = gateway_test_support::spawn_announced(
            Command::new(GATEWAY).args(["worlds", "serve"]).arg(&served).args(["--port", "0"]),
            "world api listening on http://",
        );
        let port: Option<u16> = address.as_ref().ok().and_then(|a| a.rsplit(':').next().and_then(|p| p.parse().ok()));
        // The list route of the first entity, as the starter names it (`/issues` for
        // `github_issues`: the prefix the template's entities share left out).
        let connector = std::fs::read_to_string(served.join("connector.toml")).unwrap();
        let route = connector
            .split("[[operations]]")
            .find(|block| block.contains("name = \"list_") && block.contains(&format!("entity = \"{}\"", entities[0])))
            .unwrap_or_else(|| panic!("{template}: no list route of {}:\n{connector}", entities[0]));
        let value =
            |key: &str| route.lines().find_map(|l| l.strip_prefix(&format!("{key} = \""))).map(|v| v.trim_end_matches('"').to_string());
        let (path, envelope) = (value("path").unwrap(), value("envelope").unwrap());
        assert!(!path.contains(&format!("/{}", entities[0])) || !entities[0].contains('_'), "{template}: {path}");
        let answer = port.map(|port| get(port, &path));
        let _ = child.kill();
        let _ = child.wait();
        let (status, body) = answer.unwrap_or_else(|| panic!("{template}: serve said {address:?}"));
        assert_eq!(status, 200, "{template}: GET {path} answered {body}");
        assert!(body.contains(&format!("\"{envelope}\": []")), "{template}: {body}");
    }
}

#[test]
fn init_writes_the_originals_files_byte_for_byte() {
    let Some(reference) = reference() else { return };
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    for template in TEMPLATES {
        let (theirs, mine) = (at(&format!("{template}-ref")), at(&format!("{template}-ours")));
        let want = run(&reference, &["worlds", "schema", "init", &theirs, "--connector", template]);
        let got = ours(&["worlds", "schema", "init", &mine, "--connector", template, "--no-api"]);
        assert_eq!(got.status.code(), want.status.code(), "{template}: exit code");
        assert_eq!(String::from_utf8_lossy(&got.stdout), String::from_utf8_lossy(&want.stdout), "{template}: output");
        same_files(Path::new(&theirs), Path::new(&mine), template);
    }
    // --name is substituted as the original substitutes it.
    for template in ["slack", "github", "custom"] {
        let (theirs, mine) = (at(&format!("{template}-named-ref")), at(&format!("{template}-named-ours")));
        let want = run(&reference, &["worlds", "schema", "init", &theirs, "--connector", template, "--name", "my_world-2"]);
        let got = ours(&["worlds", "schema", "init", &mine, "--connector", template, "--name", "my_world-2", "--no-api"]);
        assert_eq!(got.stdout, want.stdout, "{template} --name: output");
        same_files(Path::new(&theirs), Path::new(&mine), &format!("{template} --name"));
    }
    // custom by default: the original's files exactly, plus the starter connector.toml.
    let (theirs, mine) = (at("custom-ref"), at("custom-default"));
    assert!(ours(&["worlds", "schema", "init", &mine]).status.success());
    std::fs::rename(Path::new(&mine).join("connector.toml"), dir.path().join("starter.toml")).unwrap();
    same_files(Path::new(&theirs), Path::new(&mine), "custom (default)");
    // Refusals and edge cases: the same answer and exit code.
    for args in [vec!["--connector", "custom", "--name", "Bad Name"], vec!["--connector", "jira", "--name", ""]] {
        let (theirs, mine) = (at("refused-ref"), at("refused-ours"));
        let want = run(&reference, &[&["worlds", "schema", "init", theirs.as_str()], args.as_slice()].concat());
        let got = ours(&[&["worlds", "schema", "init", mine.as_str()], args.as_slice()].concat());
        assert_eq!(got.status.code(), want.status.code(), "{args:?}: exit code");
        assert_eq!(got.stdout, want.stdout, "{args:?}: output");
        // A refusal writes nothing; an empty --name is no name at all (the default), as there.
        assert_eq!(Path::new(&mine).exists(), want.status.success(), "{args:?}: written only on success");
    }
    let occupied = at("jira-ref");
    let want = run(&reference, &["worlds", "schema", "init", &occupied, "--connector", "jira"]);
    let got = ours(&["worlds", "schema", "init", &occupied, "--connector", "jira"]);
    assert_eq!((got.status.code(), got.stdout), (want.status.code(), want.stdout), "an occupied destination");
    let want = run(&reference, &["worlds", "schema", "init", &at("u-ref"), "--connector", "nope"]);
    let got = ours(&["worlds", "schema", "init", &at("u-ours"), "--connector", "nope"]);
    assert_eq!(got.status.code(), want.status.code(), "an unknown template");
    assert!(String::from_utf8_lossy(&got.stderr).contains("'apple-business-manager', 'github'"));
}

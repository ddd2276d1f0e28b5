//! Workspace connectors end to end (spec §3): `gateway hub serve` on loopback with two
//! projects, our `worlds connector publish|list|pull|clone` and `schema init --connector
//! workspace:<slug>` against it — commits, labels, the parent check (409 with
//! `latestCommit`), a template that does not compile (400, nothing stored), scoping (another
//! project's unpublished connector is invisible) — and, when the reference install is
//! present, the ORIGINAL CLI running the same commands against our hub. The same scenario
//! runs on PostgreSQL when `GATEWAY_TEST_POSTGRES_URL` is set (else a NOTICE).

use gateway_test_support::unique;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

const GATEWAY: &str = env!("CARGO_BIN_EXE_gateway");

struct Hub {
    child: Child,
    host: String,
    keys: Vec<(String, String)>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn field(json: &str, key: &str) -> String {
    let value = gateway_world::json::parse(json).unwrap_or_else(|e| panic!("not JSON ({e:?}): {json}")).value;
    value.get(key).and_then(|v| v.as_str()).map(str::to_string).unwrap_or_else(|| panic!("no {key} in {json}"))
}

/// A hub on loopback with one key pair per project in `projects`.
fn start(data: &Path, database: Option<&str>, projects: &[&str]) -> Hub {
    let mut keys = Vec::new();
    for project in projects {
        let mut command = Command::new(GATEWAY);
        command.args(["hub", "keys", "create", "--project", project, "--data"]).arg(data);
        if let Some(url) = database {
            command.args(["--database", url]);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        keys.push((field(&text, "publicKey"), field(&text, "secretKey")));
    }
    let mut command = Command::new(GATEWAY);
    command.args(["hub", "serve", "--addr", "127.0.0.1:0", "--data"]).arg(data);
    if let Some(url) = database {
        command.args(["--database", url]);
    }
    let (child, host) = gateway_test_support::spawn_hub(&mut command);
    Hub { child, host, keys }
}

/// Run `program args` in `cwd` as project `who` of `hub`.
fn run(hub: &Hub, who: usize, program: &Path, args: &[&str], cwd: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("GATEWAY_HOST", &hub.host)
        .env("GATEWAY_PUBLIC_KEY", &hub.keys[who].0)
        .env("GATEWAY_SECRET_KEY", &hub.keys[who].1)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn ok(hub: &Hub, who: usize, program: &Path, args: &[&str], cwd: &Path) -> String {
    let out = run(hub, who, program, args, cwd);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{} {args:?} failed:\n{stdout}\n{stderr}", program.display());
    stdout
}

/// A raw JSON request to the hub as project `who`: (status, body).
fn call(hub: &Hub, who: usize, method: &str, path: &str, body: Option<&str>) -> (u16, gateway_world::Value) {
    let client = reqwest::blocking::Client::new();
    let mut request =
        client.request(method.parse().unwrap(), format!("{}{path}", hub.host)).basic_auth(&hub.keys[who].0, Some(&hub.keys[who].1));
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    (status, gateway_world::json::parse(&text).unwrap_or_else(|e| panic!("{e:?}: {text}")).value)
}

fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push((path.strip_prefix(root).unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// The whole scenario with `program` as the client (ours, or the original).
fn scenario(hub: &Hub, program: &Path, tag: &str) {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let slug = format!("jira-{tag}");
    // A world made from a built-in template, published from its world directory.
    let init = Command::new(GATEWAY).args(["worlds", "schema", "init", "w", "--connector", "jira"]).current_dir(cwd).output().unwrap();
    assert!(init.status.success());
    let out = run(hub, 0, program, &["worlds", "connector", "publish", "w", "--slug", &slug, "--tag", "v1", "-m", "first"], cwd);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let first: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(&first[..2], ["committed", slug.as_str()], "{stdout}");
    assert!(first[2].len() == 64 && first[3].starts_with(&hub.host), "{stdout}");
    assert!(stderr.contains("# left behind: data/initial.json") && stderr.contains("# left behind: gateway-env.toml"), "{stderr}");

    // The listing: own rows, with the metadata the hub derived.
    let listed = ok(hub, 0, program, &["worlds", "connector", "list"], cwd);
    let row = listed.lines().find(|l| l.starts_with(&slug)).unwrap_or_else(|| panic!("{listed}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells, [slug.as_str(), slug.as_str(), "jira", "-", "5", "3", "private"], "{listed}");
    assert!(listed.starts_with("slug"), "{listed}");

    // A second commit: a new file, and one gone (sent as null).
    std::fs::write(cwd.join("w/schema/NOTES.md"), "# notes\n").unwrap();
    let second = ok(hub, 0, program, &["worlds", "connector", "publish", "w", "--slug", &slug, "--workspace-visible"], cwd);
    let second_hash = second.split_whitespace().nth(2).unwrap().to_string();
    assert_ne!(second_hash, first[2]);
    std::fs::remove_file(cwd.join("w/schema/NOTES.md")).unwrap();
    std::fs::write(cwd.join("w/schema/EXTRA.md"), "extra\n").unwrap();
    let out = run(hub, 0, program, &["worlds", "connector", "publish", "w", "--slug", &slug, "--workspace-visible"], cwd);
    assert!(out.status.success() && text(&out).1.contains("# removing NOTES.md"), "{:?}", text(&out));

    // Pull: the head, a label, a commit hash; refusals.
    let pulled = ok(hub, 0, program, &["worlds", "connector", "pull", &slug, "--out", "head"], cwd);
    assert_eq!(pulled.lines().collect::<Vec<_>>(), ["EXTRA.md", "handlers.py", "world.json"]);
    assert_eq!(std::fs::read(cwd.join("head/world.json")).unwrap(), std::fs::read(cwd.join("w/schema/world.json")).unwrap());
    let labelled = ok(hub, 0, program, &["worlds", "connector", "pull", &slug, "--out", "v1", "--version", "v1"], cwd);
    assert_eq!(labelled.lines().collect::<Vec<_>>(), ["handlers.py", "world.json"]);
    let by_hash = ok(hub, 0, program, &["worlds", "connector", "pull", &slug, "--out", "h2", "--version", &second_hash], cwd);
    assert!(by_hash.contains("NOTES.md"), "{by_hash}");
    let occupied = run(hub, 0, program, &["worlds", "connector", "pull", &slug, "--out", "head"], cwd);
    assert_eq!(occupied.status.code(), Some(1));
    assert!(text(&occupied).1.contains("must be a new or empty directory"));
    let missing = run(hub, 0, program, &["worlds", "connector", "pull", "no-such-connector", "--out", "x"], cwd);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing).1.contains("-> 404:"), "{:?}", text(&missing));

    // Another project: sees it in the hub (published), clones it, inits a world from it.
    let hub_rows = ok(hub, 1, program, &["worlds", "connector", "list", "--hub"], cwd);
    let row = hub_rows.lines().find(|l| l.starts_with(&slug)).unwrap_or_else(|| panic!("{hub_rows}"));
    assert!(row.contains("public") && row.trim_end().ends_with("alpha"), "{hub_rows}");
    let own = run(hub, 1, program, &["worlds", "connector", "list"], cwd);
    assert!(!text(&own).0.contains(&slug), "not its own connector");
    let cloned_slug = format!("mine-{tag}");
    let cloned = ok(hub, 1, program, &["worlds", "connector", "clone", &slug, "--slug", &cloned_slug], cwd);
    assert!(cloned.starts_with(&format!("cloned {slug} from alpha -> {cloned_slug} (conn_")), "{cloned}");
    let init = ok(hub, 1, program, &["worlds", "schema", "init", "from-hub", "--connector", &format!("workspace:{cloned_slug}")], cwd);
    let answer = gateway_world::json::parse(init.trim()).unwrap().value;
    assert_eq!(answer.get("status").and_then(|s| s.as_str()), Some("ok"), "{init}");
    assert_eq!(answer.get("connector").and_then(|c| c.get("slug")).and_then(|s| s.as_str()), Some(cloned_slug.as_str()));
    // The world is the template's: the same files as a world made from the pulled template
    // directory, compiled and checked.
    let check = Command::new(GATEWAY).args(["worlds", "schema", "check", "from-hub"]).current_dir(cwd).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
    assert_eq!(
        std::fs::read(cwd.join("from-hub/schema/EXTRA.md")).unwrap(),
        b"extra\n",
        "supporting files of the template land under schema/"
    );
    let unknown = run(hub, 1, program, &["worlds", "schema", "init", "nothing", "--connector", &format!("workspace:{slug}")], cwd);
    assert_eq!(unknown.status.code(), Some(1), "another project's connector is not pulled by slug");
    assert!(!cwd.join("nothing").exists());

    // A template that does not compile is refused with the engine's reason; nothing stored.
    std::fs::create_dir_all(cwd.join("broken")).unwrap();
    for (name, bytes) in files(&cwd.join("head")) {
        std::fs::write(cwd.join("broken").join(name), bytes).unwrap();
    }
    let world = std::fs::read_to_string(cwd.join("broken/world.json")).unwrap();
    std::fs::write(cwd.join("broken/world.json"), world.replacen("\"primary_key\": [", "\"primary_key\": [\"no_such_field\", ", 1))
        .unwrap();
    let broken_slug = format!("broken-{tag}");
    let refused = run(hub, 0, program, &["worlds", "connector", "publish", "broken", "--slug", &broken_slug], cwd);
    assert_eq!(refused.status.code(), Some(1));
    let (_, stderr) = text(&refused);
    assert!(stderr.contains("-> 400:") && stderr.contains("does not compile into a world"), "{stderr}");
    let exists = call(hub, 0, "GET", &format!("/api/public/context/connectors/{broken_slug}?exists=true"), None);
    assert!(matches!(exists.1.get("exists"), Some(gateway_world::Value::Bool(false))), "{:?}", exists.1);
}

fn hub_side_checks(hub: &Hub, tag: &str) {
    let slug = format!("jira-{tag}");
    let path = format!("/api/public/context/connectors/{slug}");
    // A stale parent: 409 naming the head.
    let (status, body) = call(hub, 0, "GET", &path, None);
    assert_eq!(status, 200);
    let head = body.get("commit").and_then(|c| c.get("commitHash")).and_then(|h| h.as_str()).unwrap().to_string();
    let parent = body.get("commit").and_then(|c| c.get("parentCommitHash")).and_then(|h| h.as_str()).unwrap().to_string();
    let push = |parent: &str| format!(r#"{{"files": {{"x.md": {{"content": "x"}}}}, "message": "m", "parent_commit": "{parent}"}}"#);
    let (status, body) = call(hub, 0, "POST", &path, Some(&push(&parent)));
    assert_eq!(status, 409, "{body:?}");
    assert_eq!(body.get("latestCommit").and_then(|c| c.get("commitHash")).and_then(|h| h.as_str()), Some(head.as_str()));
    // The head as parent: committed, on top of it.
    let (status, body) = call(hub, 0, "POST", &path, Some(&push(&head)));
    assert_eq!(status, 200, "{body:?}");
    assert_eq!(body.get("status").and_then(|s| s.as_str()), Some("committed"));
    // Another project: the connector is not there for it (pull, push, delete are 404 / new).
    let (status, _) = call(hub, 1, "GET", &path, None);
    assert_eq!(status, 404);
    let (status, _) = call(hub, 1, "DELETE", &path, None);
    assert_eq!(status, 404);
    // Bad input: a path outside the template, a file entry that is not text.
    for body in [r#"{"files": {"../x.json": {"content": "{}"}}}"#, r#"{"files": {"a.md": {"content": 3}}}"#, r#"{"files": 1}"#] {
        let (status, answer) = call(hub, 0, "POST", &path, Some(body));
        assert_eq!(status, 400, "{body}: {answer:?}");
    }
    // The listing API: this project's repos, paged.
    let (status, body) = call(hub, 0, "GET", "/api/public/context/connectors?limit=1&offset=0", None);
    assert_eq!(status, 200);
    assert_eq!(body.get("repos").and_then(|r| r.as_array()).map(Vec::len), Some(1));
    assert!(body.get("total").and_then(|t| t.as_f64()).unwrap() >= 1.0);
    // Delete: gone for the owner; the other project's clone keeps its copy.
    let (status, _) = call(hub, 0, "DELETE", &path, None);
    assert_eq!(status, 200);
    let (status, _) = call(hub, 0, "GET", &path, None);
    assert_eq!(status, 404);
    let (status, _) = call(hub, 1, "GET", &format!("/api/public/context/connectors/mine-{tag}"), None);
    assert_eq!(status, 200);
}

#[test]
fn workspace_connectors_with_our_cli() {
    let data = tempfile::tempdir().unwrap();
    let hub = start(data.path(), None, &["alpha", "beta"]);
    scenario(&hub, Path::new(GATEWAY), "ours");
    hub_side_checks(&hub, "ours");
}

#[test]
fn workspace_connectors_with_the_original_cli() {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else { return };
    let original = home.join(".cache/gateway-reference/bin/gateway");
    if !original.is_file() {
        gateway_test_support::absent(
            "reference",
            "reference gateway not installed (../shared/reference/install.sh); skipping the original CLI against our hub",
        );
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let hub = start(data.path(), None, &["alpha", "beta"]);
    scenario(&hub, &original, "orig");
    hub_side_checks(&hub, "orig");
}

#[test]
fn workspace_connectors_on_postgres() {
    let Some(url) = std::env::var("GATEWAY_TEST_POSTGRES_URL").ok().filter(|u| !u.is_empty()) else {
        gateway_test_support::absent("postgres", "GATEWAY_TEST_POSTGRES_URL is not set; skipping the PostgreSQL connectors test");
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let probe = Command::new(GATEWAY)
        .args(["hub", "keys", "create", "--project", &unique("probe"), "--database", &url, "--data"])
        .arg(data.path())
        .output()
        .unwrap();
    if !probe.status.success() {
        gateway_test_support::absent(
            "postgres",
            "PostgreSQL at GATEWAY_TEST_POSTGRES_URL is unreachable; skipping the PostgreSQL connectors test",
        );
        return;
    }
    // Fresh project names: the database is shared with other tests and runs.
    let (alpha, beta) = (unique("alpha"), unique("beta"));
    let hub = start(data.path(), Some(&url), &[&alpha, &beta]);
    let tag = unique("pg").replace(['-'], "_").to_lowercase();
    let dir = tempfile::tempdir().unwrap();
    let init =
        Command::new(GATEWAY).args(["worlds", "schema", "init", "w", "--connector", "linear"]).current_dir(dir.path()).output().unwrap();
    assert!(init.status.success());
    let slug = format!("linear-{tag}");
    let published =
        ok(&hub, 0, Path::new(GATEWAY), &["worlds", "connector", "publish", "w", "--slug", &slug, "--workspace-visible"], dir.path());
    assert!(published.starts_with(&format!("committed {slug} ")), "{published}");
    let rows = ok(&hub, 1, Path::new(GATEWAY), &["worlds", "connector", "list", "--hub", "--query", &slug], dir.path());
    assert!(rows.lines().any(|l| l.starts_with(&slug) && l.contains(&alpha)), "{rows}");
    let cloned = ok(&hub, 1, Path::new(GATEWAY), &["worlds", "connector", "clone", &slug], dir.path());
    assert!(cloned.contains(&format!("-> {slug} (conn_")), "{cloned}");
    let init =
        ok(&hub, 1, Path::new(GATEWAY), &["worlds", "schema", "init", "again", "--connector", &format!("workspace:{slug}")], dir.path());
    assert!(init.contains("\"status\": \"ok\""), "{init}");
    // The parent check on PostgreSQL too.
    let path = format!("/api/public/context/connectors/{slug}");
    let push = r#"{"files": {"x.md": {"content": "x"}}, "message": "m", "parent_commit": "0000000000000000"}"#;
    let (status, body) = call(&hub, 0, "POST", &path, Some(push));
    assert_eq!(status, 409, "{body:?}");
    assert!(body.get("latestCommit").and_then(|c| c.get("commitHash")).is_some());
}

/// The bundled example with its own definitions moved into an authored
/// `schema/base.json` (referenced as `base.json#/…`): what the original's client
/// cannot publish, since it leaves `schema/base.json` behind as generated.
fn authored_base(into: &Path) {
    gateway_test_support::copy_example("helpdesk", into);
    let schema = into.join("schema");
    std::fs::rename(schema.join("helpdesk-types.json"), schema.join("base.json")).unwrap();
    let world = std::fs::read_to_string(schema.join("world.json")).unwrap();
    std::fs::write(schema.join("world.json"), world.replace("\"helpdesk-types.json#", "\"base.json#")).unwrap();
}

fn head_files(hub: &Hub, slug: &str) -> Vec<String> {
    let (status, head) = call(hub, 0, "GET", &format!("/api/public/context/connectors/{slug}"), None);
    assert_eq!(status, 200, "{head:?}");
    head.get("files").and_then(|f| f.as_object()).expect("files").keys().cloned().collect()
}

/// A world directory published twice (issue 28 items 1–2), with our client and with the
/// original: a world whose `schema/base.json` is authored is refused, naming the reason
/// and what to do (the client leaves it behind, and the dialect's base lacks `Instant`);
/// the bundled example, whose definitions are in a schema file of their own, publishes
/// as it is, carried trees (`api/`, `scenarios/`) included; a file removed locally
/// (`api/handlers.py`) is in the head's `files`, so the next publish removes it
/// ("# removing api/handlers.py") and the head no longer holds it.
#[test]
fn a_world_directory_published_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let hub = start(&tmp.path().join("data"), None, &["p1"]);
    let mut programs = vec![(PathBuf::from(GATEWAY), "ours")];
    match gateway_test_support::reference() {
        Some((reference, _)) => programs.push((reference, "original")),
        None => {
            gateway_test_support::absent("reference", "no reference install: the original's publish of a world directory is not checked")
        }
    }
    for (program, tag) in programs {
        let example = tmp.path().join(format!("{tag}-authored"));
        authored_base(&example);
        let slug = format!("{tag}-authored");
        let out = run(&hub, 0, &program, &["worlds", "connector", "publish", example.to_str().unwrap(), "--slug", &slug], tmp.path());
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{tag}: {stdout}{stderr}");
        assert!(stderr.contains("Unresolved reference base.json#/$defs/Instant"), "{tag}: {stderr}");
        assert!(stderr.contains("schema/base.json is generated") && stderr.contains("#/$defs/<name>"), "{tag}: {stderr}");

        let world = tmp.path().join(tag);
        gateway_test_support::copy_example("helpdesk", &world);
        let slug = format!("{tag}-helpdesk");
        let publish = ["worlds", "connector", "publish", world.to_str().unwrap(), "--slug", &slug];
        ok(&hub, 0, &program, &publish, tmp.path());
        let files = head_files(&hub, &slug);
        for path in ["api/handlers.py", "scenarios/backlog/scenario.toml", "helpdesk-types.json", "world.json", "handlers.py"] {
            assert!(files.iter().any(|f| f == path), "{tag}: {path} not in {files:?}");
        }
        assert!(!files.iter().any(|f| f.ends_with("base.json")), "{tag}: {files:?}");

        // api/handlers.py goes, and with it the operations that name its handlers.
        std::fs::remove_file(world.join("api/handlers.py")).unwrap();
        let toml = std::fs::read_to_string(world.join("connector.toml")).unwrap();
        let kept: Vec<&str> = toml.split("\n[[operations]]\n").filter(|block| !block.contains("action = \"handler\"")).collect();
        assert!(kept.len() + 2 == toml.split("\n[[operations]]\n").count(), "two handler operations: {toml}");
        std::fs::write(world.join("connector.toml"), kept.join("\n[[operations]]\n")).unwrap();
        let out = run(&hub, 0, &program, &publish, tmp.path());
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{tag}: {stdout}{stderr}");
        assert!(stderr.contains("# removing api/handlers.py"), "{tag}: {stderr}");
        let files = head_files(&hub, &slug);
        assert!(!files.iter().any(|f| f == "api/handlers.py"), "{tag}: {files:?}");
        assert!(files.iter().any(|f| f == "scenarios/backlog/scenario.toml"), "{tag}: {files:?}");
    }
}

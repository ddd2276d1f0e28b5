//! `gateway worlds data import | check | extract | show` against fixtures recorded
//! from the original (`tests/fixtures/data/record.py` re-records them): stdout,
//! stderr, exit code, the report and output files, and the world's data files
//! afterwards. A refused import must leave the world byte-identical.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/data")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn copy_dir(from: &Path, to: &Path) {
    gateway_test_support::copy_tree(from, to);
}

/// `json.dumps` (default separators) of a customer row, as record.py writes it.
fn customer(i: usize) -> String {
    format!(
        "{{\"id\": \"c{i}\", \"name\": \"N{i}\", \"email\": \"n{i}@example.com\", \"tier\": \"pro\", \"created_at\": \"2026-01-01T00:00:00Z\"}}"
    )
}

/// The inputs record.py generates instead of keeping them in the repository.
fn generate(dir: &Path) {
    let many: String = (0..10005).map(|i| format!("{{\"entity\": \"widgets\", \"row\": {{\"id\": {i}}}}}\n")).collect();
    std::fs::write(dir.join("many_bad.jsonl"), many).unwrap();
    let rows: String = (0..5000).map(|i| format!("{{\"entity\": \"customers\", \"row\": {}}}\n", customer(1000 + i))).collect();
    std::fs::write(dir.join("rows_5000.jsonl"), &rows).unwrap();
    std::fs::write(dir.join("rows_5001.jsonl"), format!("{rows}{{\"entity\": \"customers\", \"row\": {}}}\n", customer(9999))).unwrap();
    let big = format!("{{\"customers\": [{}]}}{}", customer(40), " ".repeat(4 * 1024 * 1024));
    std::fs::write(dir.join("big_bytes.json"), big).unwrap();
}

fn sha256(bytes: &[u8]) -> String {
    gateway_world::files::sha256_hex(bytes)
}

/// Compare a produced file with the recorded text or `{sha256, bytes}`.
fn same_file(recorded: &Value, bytes: &[u8]) -> bool {
    match recorded {
        Value::String(text) => text.as_bytes() == bytes,
        Value::Object(digest) => digest.get("sha256").and_then(Value::as_str) == Some(sha256(bytes).as_str()),
        _ => false,
    }
}

/// Every file of a tree with its sha256 (for the byte-identical check).
fn tree_digest(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, sha256(&std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

fn world_files(world: &Path) -> BTreeMap<String, Vec<u8>> {
    tree_digest(world)
        .into_keys()
        .filter(|rel| rel.starts_with("data/") || rel == "db/seed.sql")
        .map(|rel| {
            let bytes = std::fs::read(world.join(&rel)).unwrap();
            (rel, bytes)
        })
        .collect()
}

fn run_case(name: &str) -> Vec<String> {
    run_case_with(name, &[])
}

/// Run a case with extra environment variables (the outcome must not change).
fn run_case_with(name: &str, env: &[(&str, &str)]) -> Vec<String> {
    run_case_in("cases", name, env)
}

/// Run the case `name` of the fixture folder `folder` (`cases`: the original's answers;
/// `beyond`: where we answer differently on purpose, each case saying why).
fn run_case_in(folder: &str, name: &str, env: &[(&str, &str)]) -> Vec<String> {
    let case: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join(folder).join(format!("{name}.json"))).unwrap()).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let tmp = scratch.path();
    let world = tmp.join("w");
    let source = match case["world"].as_str().unwrap() {
        "helpdesk" => repo().join("examples/helpdesk"),
        other => fixtures().join("worlds").join(other),
    };
    copy_dir(&source, &world);
    if let Some(overlay) = case["overlay"].as_str() {
        copy_dir(&fixtures().join("overlays").join(overlay), &world);
    }
    copy_dir(&fixtures().join("inputs"), &tmp.join("in"));
    generate(&tmp.join("in"));
    if case["world"].as_str() == Some("helpdesk") {
        // Current snapshots first, so "a refused import writes nothing" is byte for byte.
        let compiled = Command::new(env!("CARGO_BIN_EXE_gateway")).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap();
        assert!(compiled.status.success(), "{name}: compile failed: {}", String::from_utf8_lossy(&compiled.stdout));
    }
    let before = tree_digest(&world);
    let args: Vec<&str> = case["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .args(["worlds", "data"])
        .args(&args)
        .envs(env.iter().copied())
        .current_dir(tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = case["stdin"].as_str().map(|f| std::fs::read(tmp.join("in").join(f)).unwrap()).unwrap_or_default();
    child.stdin.take().unwrap().write_all(&stdin).unwrap();
    let output = child.wait_with_output().unwrap();
    let mut problems = Vec::new();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stdout != case["stdout"].as_str().unwrap() {
        problems.push(format!("{name}: stdout\n--- want\n{}\n--- got\n{stdout}", case["stdout"].as_str().unwrap()));
    }
    if stderr != case["stderr"].as_str().unwrap() {
        problems.push(format!("{name}: stderr\n--- want\n{}\n--- got\n{stderr}", case["stderr"].as_str().unwrap()));
    }
    if output.status.code() != case["exit"].as_i64().map(|c| c as i32) {
        problems.push(format!("{name}: exit {:?}, want {}", output.status.code(), case["exit"]));
    }
    for (file, recorded) in case["files"].as_object().unwrap() {
        match std::fs::read(tmp.join(file)) {
            Ok(bytes) if same_file(recorded, &bytes) => {}
            Ok(bytes) => problems.push(format!("{name}: {file} differs:\n{}", String::from_utf8_lossy(&bytes))),
            Err(_) => problems.push(format!("{name}: {file} missing")),
        }
    }
    let tree = world_files(&world);
    let recorded = case["tree"].as_object().unwrap();
    for (file, want) in recorded {
        match tree.get(file) {
            Some(bytes) if same_file(want, bytes) => {}
            Some(bytes) => problems.push(format!("{name}: world file {file} differs:\n{}", String::from_utf8_lossy(bytes))),
            None => problems.push(format!("{name}: world file {file} missing")),
        }
    }
    for file in tree.keys().filter(|f| !recorded.contains_key(*f)) {
        problems.push(format!("{name}: unexpected world file {file}"));
    }
    let refused_import = args[0] == "import" && case["exit"].as_i64() != Some(0);
    if refused_import && tree_digest(&world) != before {
        problems.push(format!("{name}: a refused import changed the world"));
    }
    problems
}

fn case_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join("cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn run_group(prefix: &str) {
    let names: Vec<String> = case_names().into_iter().filter(|n| n.starts_with(prefix)).collect();
    assert!(!names.is_empty(), "no {prefix} fixtures");
    let problems: Vec<String> = names.iter().flat_map(|n| run_case(n)).collect();
    assert!(problems.is_empty(), "{} of {} cases differ:\n{}", problems.len(), names.len(), problems.join("\n\n"));
}

#[test]
fn check_matches_the_original() {
    run_group("check_");
}

#[test]
fn check_matches_the_original_with_rows_on_disk() {
    // No memory budget: every accepted row is held in the scratch file instead.
    let names: Vec<String> = case_names().into_iter().filter(|n| n.starts_with("check_") || n.contains("dry")).collect();
    let problems: Vec<String> = names.iter().flat_map(|n| run_case_with(n, &[("GATEWAY_ROWS_MEMORY", "0")])).collect();
    assert!(problems.is_empty(), "{} of {} cases differ:\n{}", problems.len(), names.len(), problems.join("\n\n"));
}

/// Where we answer differently from the original on purpose: each case in
/// `fixtures/data/beyond/` records our answer, the original's, and why.
#[test]
fn beyond_the_original() {
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join("beyond"))
        .unwrap()
        .map(|e| e.unwrap().path().file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for name in &names {
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(fixtures().join("beyond").join(format!("{name}.json"))).unwrap()).unwrap();
        assert!(case["why"].as_str().is_some_and(|why| !why.is_empty()), "{name}: say why we differ");
        assert!(case["original"]["exit"].is_i64(), "{name}: record the original's answer");
    }
    let problems: Vec<String> = names.iter().flat_map(|n| run_case_in("beyond", n, &[])).collect();
    assert!(problems.is_empty(), "{} of {} cases differ:\n{}", problems.len(), names.len(), problems.join("\n\n"));
}

/// `data import|check` read stdin (`-`) and bash's process substitution (a pipe
/// under /dev/fd), alone or beside files, and an import from them lands every row.
#[test]
fn streams_are_read_like_files() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("w");
    copy_dir(&repo().join("examples/helpdesk"), &world);
    let bin = env!("CARGO_BIN_EXE_gateway");
    let row = |id: &str| {
        format!(
            r#"{{"entity": "customers", "row": {{"id": "{id}", "name": "N", "email": "{id}@example.com", "tier": "pro", "created_at": "2026-01-01T00:00:00Z"}}}}"#
        )
    };
    std::fs::write(dir.path().join("file.jsonl"), row("F1") + "\n").unwrap();
    let script = format!(
        "set -e; cd {dir:?}; echo '{s}' | {bin} worlds data check w - >check.out; \
         {bin} worlds data import w <(echo '{p}') file.jsonl - <<<'{s}' >import.out",
        dir = dir.path(),
        s = row("S1"),
        p = row("P1"),
    );
    let out = Command::new("bash").arg("-c").arg(&script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let check: Value = serde_json::from_slice(&std::fs::read(dir.path().join("check.out")).unwrap()).unwrap();
    assert_eq!(check["rows"], 1, "{check}");
    let import: Value = serde_json::from_slice(&std::fs::read(dir.path().join("import.out")).unwrap()).unwrap();
    assert_eq!(import["entity_counts"]["customers"], 6, "{import}");
    let seed = std::fs::read_to_string(world.join("data/initial.json")).unwrap();
    for id in ["S1", "P1", "F1"] {
        assert!(seed.contains(&format!("\"id\": \"{id}\"")), "{id} missing from the seed");
    }
}

/// A non-empty input that holds no rows (only whitespace) is refused and changes
/// nothing; an empty one stays zero rows, as the original reads it.
#[test]
fn blank_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("w");
    copy_dir(&repo().join("examples/helpdesk"), &world);
    let before = tree_digest(&world);
    std::fs::write(dir.path().join("blank.jsonl"), "\n \n\t\n").unwrap();
    for command in ["import", "check"] {
        let out = Command::new(env!("CARGO_BIN_EXE_gateway"))
            .args(["worlds", "data", command])
            .arg(&world)
            .arg(dir.path().join("blank.jsonl"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{command}: {}", String::from_utf8_lossy(&out.stdout));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("blank.jsonl holds no rows: it holds only whitespace"), "{command}: {stderr}");
    }
    assert_eq!(tree_digest(&world), before, "a refused import changed the world");
}

#[test]
fn import_matches_the_original() {
    run_group("import_");
}

#[test]
fn mock_tools_worlds_match_the_original() {
    run_group("mt_");
}

#[test]
fn show_matches_the_original() {
    run_group("show");
}

#[test]
fn extract_matches_the_original() {
    run_group("extract_");
}

/// World files and rows nested far past the parser's limit are refused like any
/// other document that is not JSON — never a stack overflow (exit 134).
#[test]
fn deeply_nested_world_files_and_rows_are_refused() {
    let bin = env!("CARGO_BIN_EXE_gateway");
    let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    let dir = tempfile::tempdir().unwrap();

    let world = dir.path().join("contract");
    copy_dir(&repo().join("examples/helpdesk"), &world);
    std::fs::write(world.join("schema/world.json"), &deep).unwrap();
    let out = Command::new(bin).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""code": "document""#), "{}", String::from_utf8_lossy(&out.stdout));

    let world = dir.path().join("seed");
    copy_dir(&repo().join("examples/helpdesk"), &world);
    std::fs::write(world.join("data/initial.json"), format!(r#"{{"id": "x", "rows": {deep}}}"#)).unwrap();
    let out = Command::new(bin).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));

    let world = dir.path().join("rows");
    copy_dir(&repo().join("examples/helpdesk"), &world);
    let compiled = Command::new(bin).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap();
    assert!(compiled.status.success());
    for rows in [format!(r#"{{"entity": "customers", "row": {{"id": "C9", "x": {deep}}}}}"#), deep.clone()] {
        let file = dir.path().join("rows.jsonl");
        std::fs::write(&file, format!("{rows}\n")).unwrap();
        let out = Command::new(bin).args(["worlds", "data", "check"]).arg(&world).arg(&file).output().unwrap();
        assert!(matches!(out.status.code(), Some(1 | 2)), "{:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
}

/// A batch journal that is a symlink is refused like a linked `data/initial.json`.
#[test]
fn a_symlinked_batch_journal_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("w");
    copy_dir(&repo().join("examples/helpdesk"), &world);
    std::fs::create_dir_all(world.join("data/batches")).unwrap();
    let outside = dir.path().join("elsewhere.json");
    std::fs::write(&outside, "{}").unwrap();
    std::os::unix::fs::symlink(&outside, world.join("data/batches/0001.json")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gateway")).args(["worlds", "schema", "compile"]).arg(&world).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r#""code": "path""#) && stdout.contains("data/batches/0001.json"), "{stdout}");
}

/// A named pipe where `data/initial.json` should be is refused at once, not read
/// forever.
#[cfg(unix)]
#[test]
fn a_named_pipe_as_the_seed_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("w");
    copy_dir(&repo().join("examples/helpdesk"), &world);
    std::fs::remove_file(world.join("data/initial.json")).unwrap();
    let made = Command::new("mkfifo").arg(world.join("data/initial.json")).status().unwrap();
    assert!(made.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .args(["worlds", "schema", "compile"])
        .arg(&world)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("compile is blocked on the named pipe");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1));
}

/// An import killed between its data swap and the snapshot's rebuild leaves a snapshot
/// built from earlier data: `schema check` still answers the original's `ok`, and says
/// on stderr that the snapshot lags (the original's check computed that and dropped it).
#[test]
fn check_names_a_snapshot_older_than_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("w");
    copy_dir(&repo().join("examples/helpdesk"), &world);
    let bin = env!("CARGO_BIN_EXE_gateway");
    let run = |args: &[&str]| Command::new(bin).args(args).arg(&world).output().unwrap();
    assert!(run(&["worlds", "schema", "compile"]).status.success());
    let fresh = run(&["worlds", "schema", "check"]);
    assert!(fresh.status.success() && fresh.stderr.is_empty(), "{}", String::from_utf8_lossy(&fresh.stderr));
    let earlier = dir.path().join("db-before");
    copy_dir(&world.join("db"), &earlier);
    std::fs::write(dir.path().join("rows.jsonl"), format!("{{\"entity\": \"customers\", \"row\": {}}}\n", customer(77))).unwrap();
    let import = Command::new(bin).args(["worlds", "data", "import"]).arg(&world).arg(dir.path().join("rows.jsonl")).output().unwrap();
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    // The kill: the data swapped, the snapshot not rebuilt.
    std::fs::remove_dir_all(world.join("db")).unwrap();
    copy_dir(&earlier, &world.join("db"));
    let stale = run(&["worlds", "schema", "check"]);
    assert!(stale.status.success());
    assert!(String::from_utf8_lossy(&stale.stdout).contains(r#""status": "ok""#));
    let note = String::from_utf8_lossy(&stale.stderr);
    assert!(note.contains("db/state.sqlite was built from earlier data"), "{note}");
}

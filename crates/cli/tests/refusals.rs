//! Replays the refusal corpus recorded from the reference implementation.
//!
//! Every directory under `tests/fixtures/refusals/` holding an `expected.json` is one case:
//!
//! ```json
//! {"argv": ["worlds", "schema", "compile", "world"], "exit": 1, "stdout": "…",
//!  "symlink": {"link": "schema/world.json", "to": "real.json"},   // optional
//!  "ours": true,                                                  // optional
//!  "note": "…"}                                                   // optional
//! ```
//!
//! The case's `world/` is copied into a fresh temporary directory (as `world/`), the symlink
//! it describes (if any) is created inside that copy, and the `gateway` binary runs with the
//! case's `argv` and cwd = the temporary directory, so every path in a message is relative and
//! stable. Exit code and stdout must equal the recording byte for byte. `"ours": true` marks
//! a case where the reference crashes and the recording is our intended output instead.
//!
//! All cases run; the test then fails once, listing every case that did not match.
//! `GATEWAY_REFUSAL_CASES=name,other` restricts the run to the named cases (substring match).
//! See `tests/fixtures/refusals/README.md` for how the corpus was recorded.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_gateway");
const TIMEOUT: Duration = Duration::from_secs(120);
const SHOW: usize = 4000;

struct Case {
    name: String,
    dir: PathBuf,
    argv: Vec<String>,
    exit: i32,
    stdout: String,
    symlink: Option<(String, String)>,
    ours: bool,
}

struct Outcome {
    exit: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/refusals")
}

fn load_case(dir: &Path) -> Result<Case, String> {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let text = fs::read_to_string(dir.join("expected.json")).map_err(|e| format!("{name}: cannot read expected.json: {e}"))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| format!("{name}: bad expected.json: {e}"))?;
    let argv = json["argv"]
        .as_array()
        .ok_or_else(|| format!("{name}: expected.json lacks an argv array"))?
        .iter()
        .map(|a| a.as_str().map(str::to_owned).ok_or_else(|| format!("{name}: argv must hold strings")))
        .collect::<Result<Vec<_>, _>>()?;
    let exit = json["exit"].as_i64().ok_or_else(|| format!("{name}: expected.json lacks an integer exit"))? as i32;
    let stdout = json["stdout"].as_str().ok_or_else(|| format!("{name}: expected.json lacks a stdout string"))?.to_owned();
    let symlink = match &json["symlink"] {
        Value::Null => None,
        link => Some((
            link["link"].as_str().ok_or_else(|| format!("{name}: symlink.link must be a string"))?.to_owned(),
            link["to"].as_str().ok_or_else(|| format!("{name}: symlink.to must be a string"))?.to_owned(),
        )),
    };
    if !dir.join("world").is_dir() {
        return Err(format!("{name}: no world/ directory"));
    }
    Ok(Case { name, dir: dir.to_owned(), argv, exit, stdout, symlink, ours: json["ours"] == Value::Bool(true) })
}

/// Recursive copy that keeps symlinks as symlinks (a fixture may carry one).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            make_symlink(&fs::read_link(&source)?, &target)?;
        } else if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn make_symlink(original: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(original, link)
}

#[cfg(not(unix))]
fn make_symlink(_original: &Path, link: &Path) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, format!("symlinks are only created on unix ({})", link.display())))
}

fn read_all(mut stream: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buffer = Vec::new();
        let _ = stream.read_to_end(&mut buffer);
        buffer
    })
}

fn run_case(case: &Case) -> Result<Outcome, String> {
    let scratch = tempfile::Builder::new().prefix("gateway-refusal-").tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
    let world = scratch.path().join("world");
    copy_tree(&case.dir.join("world"), &world).map_err(|e| format!("cannot copy world/: {e}"))?;
    if let Some((link, to)) = &case.symlink {
        let path = world.join(link);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        if path.symlink_metadata().is_ok() {
            fs::remove_file(&path).map_err(|e| format!("cannot replace {}: {e}", path.display()))?;
        }
        make_symlink(Path::new(to), &path).map_err(|e| format!("cannot create symlink {link} -> {to}: {e}"))?;
    }
    let mut child = Command::new(BIN)
        .args(&case.argv)
        .current_dir(scratch.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {BIN}: {e}"))?;
    let stdout = read_all(child.stdout.take().unwrap());
    let stderr = read_all(child.stderr.take().unwrap());
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > TIMEOUT => {
                timed_out = true;
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("cannot wait for {BIN}: {e}")),
        }
    };
    let stdout = String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
    Ok(Outcome { exit: status.and_then(|s| s.code()), stdout, stderr, timed_out })
}

fn clip(text: &str) -> String {
    if text.chars().count() <= SHOW {
        return text.to_owned();
    }
    let head: String = text.chars().take(SHOW).collect();
    format!("{head}… ({} chars in all)", text.chars().count())
}

fn check(case: &Case) -> Option<String> {
    let outcome = match run_case(case) {
        Ok(outcome) => outcome,
        Err(error) => return Some(format!("{}: harness error: {error}", case.name)),
    };
    if !outcome.timed_out && outcome.exit == Some(case.exit) && outcome.stdout == case.stdout {
        return None;
    }
    let mut report = format!(
        "--- {}{} (gateway {})\n",
        case.name,
        if case.ours { " [ours: the reference crashes here]" } else { "" },
        case.argv.join(" ")
    );
    if outcome.timed_out {
        report.push_str(&format!("    timed out after {TIMEOUT:?}\n"));
    }
    if outcome.exit != Some(case.exit) {
        report.push_str(&format!("    exit:   expected {}, got {:?}\n", case.exit, outcome.exit));
    }
    if outcome.stdout != case.stdout {
        report.push_str(&format!("    stdout expected: {:?}\n", clip(&case.stdout)));
        report.push_str(&format!("    stdout actual:   {:?}\n", clip(&outcome.stdout)));
    }
    if !outcome.stderr.is_empty() {
        report.push_str(&format!("    stderr: {:?}\n", clip(&outcome.stderr)));
    }
    Some(report)
}

#[test]
fn refusal_corpus_matches_the_reference() {
    let root = corpus_dir();
    let filter: Vec<String> = std::env::var("GATEWAY_REFUSAL_CASES")
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", root.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("expected.json").is_file())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()))
        })
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no refusal cases found under {}", root.display());

    let mut failures = Vec::new();
    let mut cases = Vec::new();
    for dir in &dirs {
        match load_case(dir) {
            Ok(case) => cases.push(case),
            Err(error) => failures.push(error),
        }
    }
    let skipped: Vec<String> =
        if cfg!(unix) { Vec::new() } else { cases.iter().filter(|c| c.symlink.is_some()).map(|c| c.name.clone()).collect() };
    cases.retain(|c| !skipped.contains(&c.name));

    let queue = Mutex::new(cases.into_iter());
    let results = Mutex::new(Vec::new());
    let workers = thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 8);
    thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let next = queue.lock().unwrap().next();
                let Some(case) = next else { break };
                if let Some(report) = check(&case) {
                    results.lock().unwrap().push((case.name.clone(), report));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort();
    failures.extend(results.into_iter().map(|(_, report)| report));

    if !skipped.is_empty() {
        eprintln!("skipped (symlinks unsupported here): {}", skipped.join(", "));
    }
    if !failures.is_empty() {
        let names: Vec<&str> = failures.iter().map(|f| f.trim_start_matches("--- ").split([' ', ':']).next().unwrap_or("")).collect();
        panic!(
            "{} of {} refusal case(s) failed:\n{}\n\nfailing cases: {}\n",
            failures.len(),
            dirs.len() - skipped.len(),
            failures.join("\n"),
            names.join(" ")
        );
    }
}

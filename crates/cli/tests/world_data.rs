//! `gateway worlds data import <slug>` and `data status|batches|publish|show` against
//! `gateway hub serve` on loopback: atomic and per-chunk batches, refused rows with
//! `--report`, `--no-wait`, `--publish now|later` and `data publish`, an already
//! uploaded chunk not sent again, oversized chunks, a resumed upload after the CLI was
//! killed with SIGKILL mid-upload; the ORIGINAL CLI against our hub (import, status,
//! batches, publish, show, the same chunk digests as ours); and the local flags of a
//! directory import answered as the original answers them.

use gateway_test_support::copy_example;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::*;

fn customer(id: &str, tier: &str) -> String {
    format!(
        r#"{{"entity": "customers", "row": {{"id": "{id}", "name": "N {id}", "email": "{id}@example.com", "tier": "{tier}", "created_at": "2026-01-02T09:00:00Z"}}}}"#
    )
}

fn ticket(id: i64, customer: &str) -> String {
    format!(
        r#"{{"entity": "tickets", "row": {{"id": {id}, "customer_id": "{customer}", "subject": "S {id}", "status": "open", "priority": 2, "tags": ["x"], "opened_at": "2026-03-01T10:00:00Z"}}}}"#
    )
}

fn write_rows(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `args` run by `program` with the hub's keys: (exit code, stdout, stderr).
fn exec(server: &Server, program: &Path, args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = command(server, program, args, cwd).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn counts(server: &Server, cwd: &Path) -> (i64, i64) {
    let shown = json(&ok(server, Path::new(GATEWAY), &["worlds", "data", "show", "helpdesk"], cwd));
    let counts = &shown["entity_counts"];
    (counts["customers"].as_i64().unwrap(), counts["tickets"].as_i64().unwrap())
}

/// Chunk objects the hub holds.
fn chunk_objects(data: &Path) -> usize {
    let root = data.join("objects/world-data");
    let Ok(projects) = std::fs::read_dir(&root) else { return 0 };
    projects
        .filter_map(Result::ok)
        .filter_map(|p| std::fs::read_dir(p.path().join("chunks")).ok())
        .flat_map(|d| d.filter_map(Result::ok))
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl.gz"))
        .count()
}

/// The hub with the helpdesk world pushed; commands run in `cli/` (where `helpdesk`
/// is a slug, not a directory).
fn setup(tmp: &Path, extra: &[&str]) -> (Server, PathBuf) {
    let server = start_with(&tmp.join("data"), extra);
    let src = tmp.join("src");
    copy_example("helpdesk", &src.join("helpdesk"));
    ok(&server, Path::new(GATEWAY), &["bench", "push", "helpdesk", "--slug", "helpdesk", "-m", "first"], &src);
    let cli = tmp.join("cli");
    std::fs::create_dir_all(&cli).unwrap();
    (server, cli)
}

/// The state `batch` ends in, polled with `data status` (a minute at most).
fn finished_state(server: &Server, cli: &Path, batch: &str) -> String {
    let started = Instant::now();
    loop {
        let shown = json(&ok(server, Path::new(GATEWAY), &["worlds", "data", "status", batch], cli));
        let state = shown["state"].as_str().unwrap().to_string();
        if ["applied", "refused", "published", "failed"].contains(&state.as_str()) {
            return state;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the batch never finished: {shown}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn imports_into_a_hub_world() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, cli) = setup(tmp.path(), &[]);
    let gw = Path::new(GATEWAY);
    let (customers, tickets) = counts(&server, &cli);

    // Atomic, published now: one data-only version holding every row.
    let mut good: Vec<String> = (0..300).map(|i| customer(&format!("G{i}"), "pro")).collect();
    good.push(ticket(7001, "G1"));
    good.push(ticket(7002, "C1"));
    write_rows(&cli.join("good.jsonl"), &good);
    let (code, out, err) =
        exec(&server, gw, &["worlds", "data", "import", "helpdesk", "good.jsonl", "--chunk-bytes", "8k", "-m", "Q3"], &cli);
    assert_eq!(code, 0, "{out}\n{err}");
    let status = json(&out);
    assert_eq!(status["world"], "helpdesk");
    assert_eq!(status["state"], "published", "{out}");
    assert_eq!(status["appliedRows"], 302);
    assert_eq!(status["refusalCount"], 0);
    assert!(status["progress"]["chunks"].as_i64().unwrap() > 3, "cut in 8k chunks: {out}");
    let version = status["versionId"].as_str().unwrap().to_string();
    assert_eq!(counts(&server, &cli), (customers + 300, tickets + 2));
    let batch = status["batchId"].as_str().unwrap().to_string();
    let manifest = json(&std::fs::read_to_string(cli.join(format!(".gateway/imports/{batch}.json"))).unwrap());
    assert_eq!(manifest["completed"], true);
    assert_eq!(manifest["slug"], "helpdesk");
    assert_eq!(manifest["chunks"].as_array().unwrap().len() as i64, status["progress"]["chunks"].as_i64().unwrap());
    assert!(manifest["chunks"].as_array().unwrap().iter().all(|c| c["uploaded"] == true));
    assert_eq!(std::fs::read_to_string(cli.join(".gateway/.gitignore")).unwrap(), "*\n");
    // `data status` finds the world in the manifest; the log shows the data-only version.
    let shown = json(&ok(&server, gw, &["worlds", "data", "status", &batch], &cli));
    assert_eq!((shown["state"].as_str(), shown["versionId"].as_str()), (Some("published"), Some(version.as_str())));
    let log = ok(&server, gw, &["bench", "log", "helpdesk"], &cli);
    assert!(log.contains(&version) && log.contains("Q3"), "{log}");
    // The version carries the snapshot, its sidecar and the pin; a checkout opens it as is.
    // (A connector world is pushed as its api bundle: the world is its server/world.)
    ok(&server, gw, &["bench", "pull", "helpdesk", "-t", "pulled"], &cli);
    let pulled = if cli.join("pulled/gateway-api-world.toml").is_file() { "pulled/server/world" } else { "pulled" };
    let pin = json(&std::fs::read_to_string(cli.join(pulled).join("db/snapshot.json")).unwrap());
    assert_eq!(pin["batchDigest"], status["batchDigest"]);
    ok(&server, gw, &["worlds", "schema", "check", pulled], &cli);
    let local = json(&ok(&server, gw, &["worlds", "data", "show", pulled], &cli));
    assert_eq!(local["entity_counts"]["customers"].as_i64(), Some(customers + 300));
    let rows = json(&ok(&server, gw, &["worlds", "data", "show", "helpdesk", "--entity", "tickets"], &cli));
    assert!(rows["rows"].as_array().unwrap().iter().any(|r| r["id"] == 7001), "{rows}");
    // A session on the world opens the data-only version: the bundled scenario's
    // snapshot was rebuilt on the new data (its tickets replaced, the customers kept).
    let opened = json(&ok(&server, gw, &["worlds", "session", "open", "helpdesk", "-t", "backlog", "-s", "api"], &cli));
    let sid = opened["sessionId"].as_str().unwrap().to_string();
    let state = ok(&server, gw, &["worlds", "session", "state", &sid], &cli);
    assert!(state.contains("\"G299\"") && !state.contains("7002"), "{}", &state[..state.len().min(2000)]);
    ok(&server, gw, &["worlds", "session", "close", &sid], &cli);

    // Refused rows: nothing applies; the report holds every refusal with its place.
    let bad = vec![customer("B1", "pro"), customer("B2", "gold"), ticket(7003, "NOBODY"), customer("B3", "pro")];
    write_rows(&cli.join("bad.jsonl"), &bad);
    let (code, out, err) =
        exec(&server, gw, &["worlds", "data", "import", "helpdesk", "bad.jsonl", "--chunk-rows", "2", "--report", "refused.jsonl"], &cli);
    assert_eq!(code, 2, "{out}\n{err}");
    let status = json(&out);
    assert_eq!(status["state"], "refused");
    assert_eq!(status["refusalCount"], 2);
    let report = std::fs::read_to_string(cli.join("refused.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = report.lines().map(json).collect();
    assert_eq!(records.len(), 2, "{report}");
    let places: Vec<(i64, i64)> = records.iter().map(|r| (r["chunk"].as_i64().unwrap(), r["index"].as_i64().unwrap())).collect();
    assert!(places.contains(&(0, 1)) && places.contains(&(1, 0)), "{places:?}");
    assert!(report.lines().next().unwrap().starts_with(r#"{"chunk":"#), "the record's member order: {report}");
    assert_eq!(counts(&server, &cli), (customers + 300, tickets + 2), "a refused batch applies nothing");

    // Per chunk: the refused chunk is dropped whole, the others apply.
    let mixed = vec![customer("P1", "pro"), customer("P2", "pro"), customer("P3", "pro"), customer("P4", "gold"), customer("P5", "free")];
    write_rows(&cli.join("mixed.jsonl"), &mixed);
    let (code, out, err) =
        exec(&server, gw, &["worlds", "data", "import", "helpdesk", "mixed.jsonl", "--chunk-rows", "2", "--per-chunk"], &cli);
    assert_eq!(code, 0, "{out}\n{err}");
    let status = json(&out);
    assert_eq!(status["state"], "published", "{out}");
    assert_eq!(status["atomic"], false);
    assert_eq!(status["appliedChunks"], serde_json::json!([0, 2]));
    assert_eq!(status["refusalCount"], 1);
    assert_eq!(status["refusals"][0]["chunk"], 1);
    assert_eq!(counts(&server, &cli), (customers + 303, tickets + 2), "P3 went with its chunk");

    // --no-wait and --publish later, then `data publish` folds it into one version.
    write_rows(&cli.join("later.jsonl"), &[customer("L1", "free"), customer("L2", "free")]);
    let (code, out, err) =
        exec(&server, gw, &["worlds", "data", "import", "helpdesk", "later.jsonl", "--publish", "later", "--no-wait"], &cli);
    assert_eq!(code, 0, "{err}");
    let later = json(&out)["batchId"].as_str().unwrap().to_string();
    assert_eq!(out, format!("{{\"batchId\": \"{later}\", \"state\": \"queued\"}}\n"));
    assert_eq!(finished_state(&server, &cli, &later), "applied");
    let before = ok(&server, gw, &["bench", "log", "helpdesk"], &cli);
    assert_eq!(counts(&server, &cli), (customers + 305, tickets + 2), "applied rows show before they are published");
    let published = json(&ok(&server, gw, &["worlds", "data", "publish", "helpdesk", "-m", "fold"], &cli));
    assert_eq!(published["published"], true, "{published}");
    assert_eq!(published["batches"], serde_json::json!([later]));
    let folded = published["versionId"].as_str().unwrap();
    assert!(!before.contains(folded) && ok(&server, gw, &["bench", "log", "helpdesk"], &cli).contains(folded));
    assert_eq!(json(&ok(&server, gw, &["worlds", "data", "status", &later], &cli))["state"], "published");
    let again = json(&ok(&server, gw, &["worlds", "data", "publish", "helpdesk"], &cli));
    assert_eq!(again["published"], false, "nothing waits any more: {again}");

    // An already uploaded chunk is not sent again: the same rows, the same chunks.
    let held = chunk_objects(&tmp.path().join("data"));
    let (code, out, err) =
        exec(&server, gw, &["worlds", "data", "import", "helpdesk", "good.jsonl", "--chunk-bytes", "8k", "--publish", "later"], &cli);
    assert_eq!(code, 0, "{out}\n{err}");
    let status = json(&out);
    assert_eq!((status["state"].as_str(), status["appliedRows"].as_i64()), (Some("applied"), Some(0)), "every row already held: {out}");
    assert_eq!(chunk_objects(&tmp.path().join("data")), held, "no chunk stored twice");

    // The batches, newest first.
    let listed = json(&ok(&server, gw, &["worlds", "data", "batches", "helpdesk", "--limit", "10"], &cli));
    let states: Vec<&str> = listed["batches"].as_array().unwrap().iter().map(|b| b["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["applied", "published", "published", "refused", "published"], "{listed}");
    let first = json(&ok(&server, gw, &["worlds", "data", "batches", "helpdesk", "--limit", "1"], &cli));
    assert_eq!(first["batches"].as_array().unwrap().len(), 1);
    assert!(first["nextCursor"].is_string());

    // A world that does not exist, and a batch without a world to ask.
    let (code, _, err) = exec(&server, gw, &["worlds", "data", "import", "nope", "good.jsonl"], &cli);
    assert_eq!(code, 1);
    assert!(err.contains("POST /api/public/worlds/nope/data/batches -> 404") && err.contains("push it first"), "{err}");
    let (code, _, err) = exec(&server, gw, &["worlds", "data", "status", "wdb_unknown"], &cli);
    assert_eq!((code, err.as_str()), (1, "no manifest for wdb_unknown under .gateway/imports; pass --world SLUG\n"));

    // Bare rows of one entity (`--entity`): chunks of bare lines, registered with it.
    let bare: Vec<String> = ["E1", "E2"]
        .iter()
        .map(|id| {
            format!(r#"{{"id": "{id}", "name": "N", "email": "{id}@example.com", "tier": "pro", "created_at": "2026-01-02T09:00:00Z"}}"#)
        })
        .collect();
    write_rows(&cli.join("bare.jsonl"), &bare);
    let (code, out, err) = exec(&server, gw, &["worlds", "data", "import", "helpdesk", "bare.jsonl", "--entity", "customers"], &cli);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(json(&out)["appliedRows"], 2);
    assert_eq!(counts(&server, &cli), (customers + 307, tickets + 2));
}

#[test]
fn oversized_chunks_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, cli) = setup(tmp.path(), &["--max-chunk-bytes", "64k"]);
    let gw = Path::new(GATEWAY);
    write_rows(&cli.join("rows.jsonl"), &[customer("A1", "pro")]);
    // Chunks larger than the hub takes: refused before anything is uploaded.
    let (code, _, err) = exec(&server, gw, &["worlds", "data", "import", "helpdesk", "rows.jsonl", "--chunk-bytes", "1MiB"], &cli);
    assert_eq!(code, 1);
    assert_eq!(err, "--chunk-bytes 1048576 exceeds the platform's chunk limit 65536\n");
    // A row whose gzipped chunk alone is past the limit: its registration is refused.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let noise: String = (0..150_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state % 26) as u8)
        })
        .collect();
    write_rows(&cli.join("noisy.jsonl"), &[customer("A2", "pro").replace("\"N A2\"", &format!("\"{noise}\""))]);
    let (code, _, err) = exec(&server, gw, &["worlds", "data", "import", "helpdesk", "noisy.jsonl", "--chunk-bytes", "64k"], &cli);
    assert_eq!(code, 1);
    assert!(err.contains("/chunks -> 413") && err.contains("chunk limit of 65536 bytes"), "{err}");
    // One that gzips small but expands past the limit: the batch fails at the apply.
    let long = "a".repeat(100_000);
    write_rows(&cli.join("long.jsonl"), &[customer("A3", "pro").replace("\"N A3\"", &format!("\"{long}\""))]);
    let (code, out, err) = exec(&server, gw, &["worlds", "data", "import", "helpdesk", "long.jsonl", "--chunk-bytes", "64k"], &cli);
    assert_eq!(code, 1, "{out}\n{err}");
    let status = json(&out);
    assert_eq!(status["state"], "failed");
    assert!(status["error"].as_str().unwrap().contains("expands to more than 65536 bytes of JSONL"), "{out}");
    assert_eq!(counts(&server, &cli).0, 3, "nothing applied");
}

/// The CLI killed with SIGKILL mid-upload; `--resume` uploads only what the manifest
/// does not record, and the world holds every row once.
#[test]
fn resume_after_sigkill() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, cli) = setup(tmp.path(), &[]);
    let gw = Path::new(GATEWAY);
    let (customers, _) = counts(&server, &cli);
    let rows: Vec<String> = (0..2000).map(|i| customer(&format!("R{i:04}"), "pro")).collect();
    write_rows(&cli.join("many.jsonl"), &rows);
    let args = ["worlds", "data", "import", "helpdesk", "many.jsonl", "--chunk-rows", "4", "--parallel", "2"];
    let mut child = Command::new(gw)
        .args(args)
        .current_dir(&cli)
        .env("GATEWAY_HOST", &server.host)
        .env("GATEWAY_PUBLIC_KEY", &server.public)
        .env("GATEWAY_SECRET_KEY", &server.secret)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for some chunks to be recorded, then kill it where it stands.
    let imports = cli.join(".gateway/imports");
    let started = Instant::now();
    let recorded = loop {
        let manifest = std::fs::read_dir(&imports)
            .ok()
            .and_then(|mut d| d.find_map(|e| e.ok().filter(|e| e.file_name().to_string_lossy().ends_with(".json"))))
            .and_then(|e| std::fs::read_to_string(e.path()).ok())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        let count = manifest.as_ref().and_then(|m| m["chunks"].as_array().map(Vec::len)).unwrap_or(0);
        if count >= 40 {
            break count;
        }
        assert!(child.try_wait().unwrap().is_none(), "the upload finished before it could be killed");
        assert!(started.elapsed() < Duration::from_secs(60), "no chunk was recorded");
        std::thread::sleep(Duration::from_millis(2));
    };
    assert!(Command::new("kill").args(["-KILL", &child.id().to_string()]).status().unwrap().success());
    child.wait().unwrap();
    let manifest_path = std::fs::read_dir(&imports)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .unwrap()
        .path();
    let manifest = json(&std::fs::read_to_string(&manifest_path).unwrap());
    assert_eq!(manifest["completed"], false);
    let batch = manifest["batchId"].as_str().unwrap().to_string();
    assert!(recorded < 500, "killed mid-upload ({recorded} of 500 chunks)");
    assert_eq!(json(&ok(&server, gw, &["worlds", "data", "status", &batch], &cli))["state"], "uploading");

    // Resume: the same batch, finished.
    let (code, out, err) = exec(&server, gw, &[&args[..], &["--resume"]].concat(), &cli);
    assert_eq!(code, 0, "{out}\n{err}");
    let status = json(&out);
    assert_eq!(status["batchId"], batch.as_str());
    assert_eq!(status["state"], "published");
    assert_eq!(status["progress"]["chunks"], 500);
    assert_eq!(status["appliedRows"], 2000);
    assert_eq!(counts(&server, &cli).0, customers + 2000, "every row once");
    let manifest = json(&std::fs::read_to_string(&manifest_path).unwrap());
    assert_eq!((manifest["completed"].as_bool(), manifest["chunks"].as_array().unwrap().len()), (Some(true), 500));
    // Nothing left to resume.
    let (code, _, err) = exec(&server, gw, &[&args[..], &["--resume"]].concat(), &cli);
    assert_eq!(code, 1);
    assert!(err.starts_with("nothing to resume: no incomplete manifest for helpdesk under "), "{err}");
}

/// The original CLI against our hub: import (published now), refusals with a report,
/// `--publish later`, `data status`, `data batches`, `data publish`, `data show`; and
/// its chunks are ours, digest for digest.
#[test]
fn the_original_cli_imports_into_our_hub() {
    let Some((reference, _)) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (server, cli) = setup(tmp.path(), &[]);
    let gw = Path::new(GATEWAY);
    let (customers, _) = counts(&server, &cli);
    let rows: Vec<String> = (0..120).map(|i| customer(&format!("O{i}"), if i % 2 == 0 { "pro" } else { "free" })).collect();
    write_rows(&cli.join("rows.jsonl"), &rows);

    let (code, out, err) = exec(&server, &reference, &["worlds", "data", "import", "helpdesk", "rows.jsonl", "--chunk-bytes", "4k"], &cli);
    assert_eq!(code, 0, "{out}\n{err}");
    let status = json(&out);
    assert_eq!((status["world"].as_str(), status["state"].as_str()), (Some("helpdesk"), Some("published")), "{out}");
    assert_eq!(counts(&server, &cli).0, customers + 120);

    // Refused, with the report the original writes from our reportUrl.
    write_rows(&cli.join("bad.jsonl"), &[customer("OB1", "gold"), customer("OB2", "pro")]);
    let (code, out, err) =
        exec(&server, &reference, &["worlds", "data", "import", "helpdesk", "bad.jsonl", "--report", "report.jsonl"], &cli);
    assert_eq!(code, 2, "{out}\n{err}");
    assert_eq!(json(&out)["state"], "refused");
    let report = std::fs::read_to_string(cli.join("report.jsonl")).unwrap();
    assert_eq!(report.lines().count(), 1, "{report}");
    assert_eq!(json(report.lines().next().unwrap())["pointer"], "/customers/0/tier");

    // Later, then status, batches and publish, as the original prints them.
    write_rows(&cli.join("later.jsonl"), &[customer("OL1", "pro")]);
    let (code, out, err) = exec(&server, &reference, &["worlds", "data", "import", "helpdesk", "later.jsonl", "--publish", "later"], &cli);
    assert_eq!(code, 0, "{out}\n{err}");
    let later = json(&out)["batchId"].as_str().unwrap().to_string();
    let status = json(&ok(&server, &reference, &["worlds", "data", "status", &later], &cli));
    assert_eq!(status["state"], "applied");
    let ours = ok(&server, gw, &["worlds", "data", "status", &later], &cli);
    assert_eq!(ok(&server, &reference, &["worlds", "data", "status", &later, "--world", "helpdesk"], &cli), ours);
    let listed = json(&ok(&server, &reference, &["worlds", "data", "batches", "helpdesk", "--limit", "5"], &cli));
    assert_eq!(listed["batches"].as_array().unwrap().len(), 3);
    let published = json(&ok(&server, &reference, &["worlds", "data", "publish", "helpdesk", "-m", "from the original"], &cli));
    assert_eq!(published["batches"], serde_json::json!([later]));
    let shown = ok(&server, &reference, &["worlds", "data", "show", "helpdesk"], &cli);
    assert_eq!(shown, ok(&server, gw, &["worlds", "data", "show", "helpdesk"], &cli));
    assert_eq!(json(&shown)["entity_counts"]["customers"].as_i64(), Some(customers + 121));
    let rows_theirs = ok(&server, &reference, &["worlds", "data", "show", "helpdesk", "--entity", "customers"], &cli);
    assert_eq!(rows_theirs, ok(&server, gw, &["worlds", "data", "show", "helpdesk", "--entity", "customers"], &cli));

    // `data check`, `import --dry-run` and `data extract` of a slug run on its pulled
    // contract and data (the data-only version, snapshot pinned). Ours use the world
    // inside a connector world's api bundle; the original runs them on the bundle's root
    // and refuses it: the same answers where it runs, a refusal where it does not.
    write_rows(&cli.join("mixed.jsonl"), &[customer("OM1", "pro"), customer("OM2", "gold"), ticket(9100, "O1")]);
    std::fs::write(
        cli.join("tools.jsonl"),
        r#"{"tool": "list", "raw_output": {"results": [{"id": "OX1", "name": "X", "email": "ox1@example.com", "tier": "pro", "created_at": "2026-01-02T09:00:00Z", "extra": 1}]}}"#.to_string() + "\n",
    )
    .unwrap();
    for args in [
        &["worlds", "data", "check", "helpdesk", "mixed.jsonl"][..],
        &["worlds", "data", "import", "helpdesk", "mixed.jsonl", "--dry-run", "--per-chunk"],
        &["worlds", "data", "extract", "helpdesk", "tools.jsonl", "--shape", "tool-results", "--entity", "customers"],
    ] {
        let theirs = exec(&server, &reference, args, &cli);
        let ours = exec(&server, gw, args, &cli);
        assert_eq!(ours.0, if args[2] == "extract" { 0 } else { 2 }, "{args:?}: {ours:?}");
        if theirs.0 == 1 && theirs.2.contains("Not a schema-backed bundle") {
            continue;
        }
        assert_eq!(ours, theirs, "{args:?}");
    }

    // The same rows and chunking give the same chunks from both clients.
    let (code, out, _) = exec(
        &server,
        gw,
        &["worlds", "data", "import", "helpdesk", "rows.jsonl", "--chunk-bytes", "4k", "--publish", "later", "--no-wait"],
        &cli,
    );
    assert_eq!(code, 0);
    let ours = json(&out)["batchId"].as_str().unwrap().to_string();
    let digests = |batch: &str| -> Vec<String> {
        let manifest = json(&std::fs::read_to_string(cli.join(format!(".gateway/imports/{batch}.json"))).unwrap());
        manifest["chunks"].as_array().unwrap().iter().map(|c| c["digest"].as_str().unwrap().to_string()).collect()
    };
    let theirs = first_batch(&cli, &["rows.jsonl"]);
    assert_eq!(digests(&ours), digests(&theirs));
    assert!(digests(&ours).len() > 2);
}

/// The batch of the oldest manifest in `cli` for these inputs.
fn first_batch(cli: &Path, inputs: &[&str]) -> String {
    let mut found: Vec<(String, String)> = std::fs::read_dir(cli.join(".gateway/imports"))
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .map(|t| json(&t))
        .filter(|m| m["inputs"] == serde_json::json!(inputs))
        .map(|m| (m["createdAt"].as_str().unwrap().to_string(), m["batchId"].as_str().unwrap().to_string()))
        .collect();
    found.sort();
    found.into_iter().next().map(|(_, id)| id).unwrap()
}

/// A directory import takes the platform flags and ignores them, as the original does;
/// `--dry-run --per-chunk` checks chunk by chunk; a bad `--chunk-bytes` is refused first.
#[test]
fn local_flags_as_the_original_answers_them() {
    let Some((reference, _)) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let rows = tmp.path().join("rows.jsonl");
    write_rows(&rows, &[customer("D1", "pro"), customer("D2", "free")]);
    let bad = tmp.path().join("bad.jsonl");
    write_rows(&bad, &[customer("D3", "gold"), ticket(8000, "NOBODY"), customer("D4", "pro")]);
    let run = |program: &Path, name: &str, args: &[&str]| -> (i32, String, String, Option<String>) {
        let dir = tmp.path().join(name);
        let world = copy_example("helpdesk", &dir.join("helpdesk"));
        let mut full: Vec<String> = vec!["worlds".into(), "data".into(), "import".into(), world.display().to_string()];
        full.extend(args.iter().map(|a| a.replace("ROWS", &rows.display().to_string()).replace("BAD", &bad.display().to_string())));
        let report = dir.join("report.jsonl");
        full.extend(["--report".to_string(), report.display().to_string()]);
        let out = Command::new(program).args(&full).current_dir(&dir).env_remove("GATEWAY_HOST").output().unwrap();
        let strip = |s: &[u8]| String::from_utf8_lossy(s).replace(&world.display().to_string(), "WORLD");
        (out.status.code().unwrap_or(-1), strip(&out.stdout), strip(&out.stderr), std::fs::read_to_string(&report).ok())
    };
    let cases: [(&str, &[&str]); 5] = [
        ("import", &["ROWS", "--per-chunk", "-m", "why", "--publish", "later", "--parallel", "9", "--resume", "--no-wait"]),
        ("atomic", &["ROWS", "--atomic", "-m", "why"]),
        ("dry-per-chunk", &["BAD", "--dry-run", "--per-chunk"]),
        ("dry-atomic", &["BAD", "--dry-run", "--atomic"]),
        ("size", &["ROWS", "--chunk-bytes", "12x"]),
    ];
    for (name, args) in cases {
        let theirs = run(&reference, &format!("theirs-{name}"), args);
        let ours = run(Path::new(GATEWAY), &format!("ours-{name}"), args);
        assert_eq!(ours, theirs, "{name}");
    }
}

/// `data show SLUG --entity E` answers every row of the entity (the hub streams them),
/// past the 10,000 it used to stop at without a word: as many as the entity's count and
/// the same ids as the local `data show` of the pulled world — with ours, and with the
/// original when the reference install is present.
#[test]
fn show_answers_every_row_of_a_large_entity() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, cli) = setup(tmp.path(), &[]);
    let gw = Path::new(GATEWAY);
    // Before any batch the rows come from the version's own files.
    let (customers, _) = counts(&server, &cli);
    let before = json(&ok(&server, gw, &["worlds", "data", "show", "helpdesk", "--entity", "customers"], &cli));
    assert_eq!(before["rows"].as_array().map(Vec::len), Some(customers as usize), "{before}");
    let rows: Vec<String> = (0..12_000).map(|i| customer(&format!("L{i:05}"), if i % 2 == 0 { "pro" } else { "free" })).collect();
    write_rows(&cli.join("many.jsonl"), &rows);
    let (code, out, err) = exec(&server, gw, &["worlds", "data", "import", "helpdesk", "many.jsonl"], &cli);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(json(&out)["state"], "published", "{out}");
    let (customers, _) = counts(&server, &cli);
    assert!(customers > 12_000, "{customers}");
    let ids = |shown: &serde_json::Value| -> Vec<String> {
        let mut ids: Vec<String> =
            shown["rows"].as_array().expect("rows").iter().map(|r| r["id"].as_str().expect("an id").to_string()).collect();
        ids.sort();
        ids
    };
    let ours = ids(&json(&ok(&server, gw, &["worlds", "data", "show", "helpdesk", "--entity", "customers"], &cli)));
    assert_eq!(ours.len() as i64, customers);
    assert!(ours.contains(&"L11999".to_string()) && ours.contains(&"L00000".to_string()));
    ok(&server, gw, &["bench", "pull", "helpdesk", "-t", "pulled"], &cli);
    let pulled = if cli.join("pulled/gateway-api-world.toml").is_file() { "pulled/server/world" } else { "pulled" };
    let local = ids(&json(&ok(&server, gw, &["worlds", "data", "show", pulled, "--entity", "customers"], &cli)));
    assert_eq!(local, ours, "the hub's rows are the local world's");
    if let Some((reference, _)) = reference() {
        let theirs = ids(&json(&ok(&server, &reference, &["worlds", "data", "show", "helpdesk", "--entity", "customers"], &cli)));
        assert_eq!(theirs, ours, "the original reads every row from our hub");
    }
    // An unknown entity is still refused before any row.
    let (code, _, err) = exec(&server, gw, &["worlds", "data", "show", "helpdesk", "--entity", "nope"], &cli);
    assert_ne!(code, 0);
    assert!(err.contains("Unknown entity nope"), "{err}");
}

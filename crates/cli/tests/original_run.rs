//! The ORIGINAL CLI's `gateway worlds run SLUG --agent agent.py[:fn]` against OUR hub
//! (`gateway hub serve`, started here): the issue's acceptance criterion that the
//! original's `worlds run` works against our hub.
//!
//! What the original runs. `gatewaysdk.worlds` (0.3.2) runs only LEGACY Harbor worlds
//! in-process: `tasks/<task>/task.toml` (`[metadata] variant = "…"`), `instruction.md`,
//! and `environment/` with `schema.sql` + `seed.sql` (materialized into a fresh SQLite
//! file), `tools/*.py` exposing `TOOLS = {name: callable}` (and `DB_ENV_VAR`, the env
//! var its tools read the database path from) and `grade.py`, which writes
//! `reward.json` into `$GRADE_OUT`. A schema-backed bundle (`[schema] language =
//! "gateway-world/1"` in gateway-env.toml, like examples/helpdesk) is refused
//! ("Schema-backed bundles are unsupported by Harbor world sessions"), so the world
//! here is a small notes world of the legacy kind, written by this test. No Docker is
//! involved: the agent, the tools and the grader all run in the original's Python.
//!
//! The flow: the original `bench push`es the world to our hub; the original
//! `worlds run notes --agent agent.py` pulls it back (resolve-version + the signed
//! bundle download, checked against `bundleSha256`), runs the agent, grades, and files
//! an evaluation pinned to the version it pulled (create → samples → finalize). The
//! filing is read back through our `gateway environment rollouts|samples` and the
//! original's, which must print the same bytes. Then the gate: a lazy agent scores 0.5
//! and `--fail-under 1` exits 1 after filing; `--fail-under 1.1` is outside the
//! original's own `min=0.0, max=1.0` option range, a usage error (exit 2) before
//! anything runs; `--no-file` grades without filing. A clean checkout the original
//! pulls from our hub runs with `--path` and files pinned too, and after a second push
//! `notes@<hash prefix>` stays pinned to the first version while `notes` follows main.
//!
//! The second test runs OUR `gateway worlds run` on the same world (harbor_world.py
//! in gateway-runner, Python as the original's) beside the original's: `--path` on an
//! unlinked copy with `--no-file` and `--fail-under`, its refusals, then `SLUG`
//! against our hub, filed by each; results, filed rollouts and samples compare equal
//! but for ids and durations. One difference is kept on purpose: what the agent
//! prints goes to our stderr, where the original's shares stdout with the result.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

/// One task of the notes world: `<variant>`'s notebook, seeded with two notes; the
/// grader scores "a note titled groceries was added" and "the seeded notes are kept".
fn notes_task(world: &Path, variant: &str) {
    let task = world.join(format!("tasks/add-note-{variant}"));
    let write = |relative: &str, text: &str| {
        let path = task.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("task.toml", &format!("version = \"1.0\"\n\n[metadata]\nvariant = \"{variant}\"\n\n[verifier]\ntimeout_sec = 60.0\n"));
    write("instruction.md", &format!("Add a note titled 'groceries' to {variant}'s notebook; keep the rest.\n"));
    write("environment/schema.sql", "CREATE TABLE notes (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, title TEXT NOT NULL);\n");
    write("environment/seed.sql", &format!("INSERT INTO notes (owner, title) VALUES ('{variant}', 'todo'), ('{variant}', 'ideas');\n"));
    write(
        "environment/tools/notes.py",
        r#"import os
import sqlite3

DB_ENV_VAR = "NOTES_DB"


def _db():
    return sqlite3.connect(os.environ[DB_ENV_VAR])


def list_notes():
    with _db() as conn:
        return [{"id": i, "title": t} for i, t in conn.execute("SELECT id, title FROM notes ORDER BY id")]


def add_note(title):
    with _db() as conn:
        cursor = conn.execute("INSERT INTO notes (owner, title) VALUES ('me', ?)", (title,))
        return {"id": cursor.lastrowid, "title": title}


TOOLS = {"list_notes": list_notes, "add_note": add_note}
"#,
    );
    write(
        "environment/grade.py",
        r#"import json
import os
import sqlite3

conn = sqlite3.connect(os.environ["NOTES_DB"])
titles = [t for (t,) in conn.execute("SELECT title FROM notes")]
added = 1.0 if "groceries" in titles else 0.0
kept = 1.0 if {"todo", "ideas"} <= set(titles) else 0.0
with open(os.path.join(os.environ["GRADE_OUT"], "reward.json"), "w") as out:
    json.dump({"reward": (added + kept) / 2, "added": added, "kept": kept}, out)
"#,
    );
}

/// Deterministic agents: `agent` solves the task, `lazy` does nothing (reward 0.5).
const AGENT: &str = r#"
def agent(world):
    assert world.slug == "notes" and world.branch == "main" and world.version_id, (world.slug, world.branch, world.version_id)
    world.tools["add_note"]("groceries")
    return "added groceries; notes: " + ", ".join(n["title"] for n in world.tools["list_notes"]())


def lazy(world):
    return "did nothing"
"#;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", self.stdout, self.stderr))
    }
}

/// `program` (ours or the original) in `cwd` with a clean environment plus the hub's.
fn run(program: &Path, cwd: &Path, args: &[&str], hub: &common::Server) -> Out {
    let mut command = Command::new(program);
    command.env_clear().current_dir(cwd).args(args).env("COLUMNS", "400");
    for name in ["PATH", "HOME", "LANG"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.env("GATEWAY_HOST", &hub.host).env("GATEWAY_PUBLIC_KEY", &hub.public).env("GATEWAY_SECRET_KEY", &hub.secret);
    let out = command.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The original's `gateway`; None (with a NOTICE, or a failure in CI) when the reference
/// install is absent.
fn original() -> Option<PathBuf> {
    let found = common::reference().map(|(gateway, _)| gateway);
    if found.is_none() {
        gateway_test_support::absent("reference", "original_run skipped: the reference install (~/.cache/gateway-reference) is absent");
    }
    found
}

fn string(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_else(|| panic!("no {key} in {value}")).to_string()
}

#[test]
fn the_originals_worlds_run_pulls_from_our_hub_and_files_pinned_evaluations() {
    let Some(original) = original() else { return };
    let ours = Path::new(common::GATEWAY);
    let (_dir, hub, work) = common::start_in_temp();
    let world = work.join("notes");
    for variant in ["alice", "bob"] {
        notes_task(&world, variant);
    }
    std::fs::write(work.join("agent.py"), AGENT).unwrap();

    // Both read views, ours and the original's, must print the same bytes.
    let read = |args: &[&str]| -> Value {
        let args = [&["environment"], args].concat();
        let mine = run(ours, &work, &args, &hub);
        assert_eq!(mine.code, 0, "ours {args:?}: {}", mine.stderr);
        let theirs = run(&original, &work, &args, &hub);
        assert_eq!(theirs.code, 0, "original {args:?}: {}", theirs.stderr);
        assert_eq!(theirs.stdout, mine.stdout, "{args:?}: the original prints otherwise");
        mine.json()
    };

    // The original pushes the world to our hub.
    let pushed = run(&original, &work, &["bench", "push", "notes"], &hub);
    assert_eq!(pushed.code, 0, "{}\n{}", pushed.stdout, pushed.stderr);
    let pushed = pushed.json();
    let (version, container) = (string(&pushed, "versionId"), string(&pushed, "containerId"));

    // The original's worlds run SLUG: pulled from our hub, run, graded, filed.
    let out = run(&original, &work, &["worlds", "run", "notes", "--agent", "agent.py"], &hub);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    assert_eq!((result["reward"].as_f64(), &result["rewards"]), (Some(1.0), &json!({"added": 1.0, "kept": 1.0})), "{result}");
    assert_eq!((&result["agentError"], result["calls"].as_i64()), (&Value::Null, Some(2)), "{result}");
    assert_eq!(result["world"], json!({"slug": "notes", "branch": "main", "versionId": version, "variant": "alice", "filed": true}));
    let first = string(&result, "evaluationId");

    let rollouts = read(&["rollouts", &container]);
    let rollout = &rollouts["rollouts"][0];
    assert_eq!(rollouts["rollouts"].as_array().unwrap().len(), 1, "{rollouts}");
    assert_eq!(
        (&rollout["id"], &rollout["model"], &rollout["status"], &rollout["containerVersionId"], &rollout["sampleCount"]),
        (&json!(first), &json!("sdk-dev-loop"), &json!("COMPLETED"), &json!(version), &json!(1))
    );
    assert_eq!(rollout["metrics"], json!({"avg_reward": 1.0, "reward": 1.0, "rewards.added": 1.0, "rewards.kept": 1.0}));
    let samples = read(&["samples", &container, &first]);
    let sample = &samples["samples"][0];
    for (key, want) in [
        ("exampleId", json!("add-note-alice")),
        ("task", json!("add-note-alice")),
        ("rolloutIndex", json!(0)),
        ("reward", json!(1.0)),
        ("score", json!(1.0)),
        ("correct", json!(true)),
        ("rewards", json!({"added": 1.0, "kept": 1.0})),
    ] {
        assert_eq!(sample[key], want, "{key}: {sample}");
    }
    let info = &sample["info"];
    assert_eq!((&info["variant"], &info["source"], &info["agentError"]), (&json!("alice"), &json!("sdk-world-run"), &Value::Null));
    let calls: Vec<&str> = info["callLog"].as_array().unwrap().iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(calls, ["add_note", "list_notes"], "{info}");

    // The gate: a lazy agent on bob scores 0.5; under --fail-under 1 the run is still
    // filed (the original files before it gates), then exits 1.
    let out = run(
        &original,
        &work,
        &["worlds", "run", "notes@main", "--variant", "bob", "--agent", "agent.py:lazy", "-m", "lazy-1", "--fail-under", "1"],
        &hub,
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("gate: avg reward 0.500 is below the 1 bar (--fail-under)."), "{}", out.stderr);
    let result = out.json();
    assert_eq!((result["reward"].as_f64(), &result["rewards"]), (Some(0.5), &json!({"added": 0.0, "kept": 1.0})), "{result}");
    assert_eq!(result["world"], json!({"slug": "notes", "branch": "main", "versionId": version, "variant": "bob", "filed": true}));
    let second = string(&result, "evaluationId");
    let rollouts = read(&["rollouts", &container]);
    let rollout = &rollouts["rollouts"][0];
    assert_eq!(
        (&rollout["id"], &rollout["model"], &rollout["containerVersionId"], &rollout["metrics"]["avg_reward"]),
        (&json!(second), &json!("lazy-1"), &json!(version), &json!(0.5)),
        "newest first: {rollouts}"
    );
    let sample = &read(&["samples", &container, &second])["samples"][0];
    assert_eq!((&sample["exampleId"], &sample["reward"], &sample["correct"]), (&json!("add-note-bob"), &json!(0.5), &json!(false)));

    // A bar above the reward that the original's option range refuses: a usage error
    // (exit 2) before anything is pulled, run or filed.
    let out = run(&original, &work, &["worlds", "run", "notes", "--agent", "agent.py", "--fail-under", "1.1"], &hub);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("Invalid value for '--fail-under'"), "{}", out.stderr);
    // --no-file: pulled, run and graded, not filed; a bar it clears passes.
    let out = run(&original, &work, &["worlds", "run", "notes", "--agent", "agent.py", "--no-file", "--fail-under", "1"], &hub);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!((out.json()["reward"].as_f64(), &out.json()["world"]["filed"]), (Some(1.0), &json!(false)));
    assert_eq!(read(&["rollouts", &container])["rollouts"].as_array().unwrap().len(), 2, "nothing more filed");

    // A clean checkout pulled by the original from our hub runs with --path and files
    // pinned to the version it was pulled at (its .gateway metadata is our resolve-version).
    let pulled = run(&original, &work, &["bench", "pull", "notes", "-t", "checkout"], &hub);
    assert_eq!(pulled.code, 0, "{}\n{}", pulled.stdout, pulled.stderr);
    let out = run(&original, &work, &["worlds", "run", "--path", "checkout", "--agent", "agent.py"], &hub);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["world"], json!({"slug": "notes", "branch": "main", "versionId": version, "variant": "alice", "filed": true}));
    assert_eq!(read(&["rollouts", &container])["rollouts"][0]["id"], json!(string(&out.json(), "evaluationId")));

    // A new version on main: a run of notes@<first version's hash> stays pinned to it.
    std::fs::write(world.join("README.md"), "notes world\n").unwrap();
    let v2 = run(&original, &work, &["bench", "push", "notes"], &hub);
    assert_eq!(v2.code, 0, "{}\n{}", v2.stdout, v2.stderr);
    let v2 = string(&v2.json(), "versionId");
    assert_ne!(v2, version);
    let pinned = format!("notes@{}", &string(&pushed, "contentHash")[..12]);
    let out = run(&original, &work, &["worlds", "run", &pinned, "--agent", "agent.py:lazy"], &hub);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["world"]["versionId"].as_str(), Some(version.as_str()), "{}", out.stdout);
    let out = run(&original, &work, &["worlds", "run", "notes", "--agent", "agent.py:lazy"], &hub);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["world"]["versionId"].as_str(), Some(v2.as_str()), "latest is the new tip");
    let rollouts = read(&["rollouts", &container]);
    let pins: Vec<&str> = rollouts["rollouts"].as_array().unwrap().iter().map(|r| r["containerVersionId"].as_str().unwrap()).collect();
    assert_eq!(pins, [v2.as_str(), &version, &version, &version, &version], "{rollouts}");
}

/// A result with what differs run to run taken out: its duration and evaluation id.
fn comparable(result: &Value) -> Value {
    let mut result = result.clone();
    let fields = result.as_object_mut().unwrap();
    assert!(fields.remove("durationSeconds").is_some_and(|d| d.is_f64()), "no durationSeconds: {fields:?}");
    fields.remove("evaluationId");
    result
}

/// A filed sample with what differs filing to filing (ids, times; the session and
/// trace ids the hub derives from the evaluation's) taken out.
fn comparable_sample(sample: &Value) -> Value {
    let mut sample = sample.clone();
    for key in ["id", "evaluationId", "createdAt", "updatedAt", "startedAt", "completedAt", "durationMs"] {
        sample.as_object_mut().unwrap().remove(key);
    }
    for key in ["sessionId", "traceId"] {
        assert!(sample["info"].as_object_mut().unwrap().remove(key).is_some(), "{key}: {sample}");
    }
    sample
}

#[test]
fn our_worlds_run_runs_the_legacy_harbor_world_as_the_original_does() {
    let Some(original) = original() else { return };
    let ours = Path::new(common::GATEWAY);
    let (_dir, hub, work) = common::start_in_temp();
    for variant in ["alice", "bob"] {
        notes_task(&work.join("notes"), variant);
    }
    std::fs::write(
        work.join("agent.py"),
        AGENT.replace("    world.tools[\"add_note\"]", "    print(\"agent says hi\")\n    world.tools[\"add_note\"]"),
    )
    .unwrap();
    // An unlinked copy (no .gateway): runs unfiled, as --path does for an ad-hoc dir.
    for variant in ["alice", "bob"] {
        notes_task(&work.join("scratch"), variant);
    }
    let both = |args: &[&str]| -> (Out, Out) { (run(ours, &work, args, &hub), run(&original, &work, args, &hub)) };

    // --path --no-file: the same result, exit code and gate line as the original's.
    let (mine, theirs) = both(&["worlds", "run", "--path", "scratch", "--agent", "agent.py:lazy", "--no-file"]);
    assert_eq!((mine.code, theirs.code), (0, 0), "{}\n{}", mine.stderr, theirs.stderr);
    assert_eq!(comparable(&mine.json()), comparable(&theirs.json()));
    assert_eq!(mine.json()["world"], json!({"slug": null, "branch": null, "versionId": null, "variant": "alice", "filed": false}));
    let (mine, theirs) =
        both(&["worlds", "run", "--path", "scratch", "-v", "bob", "--agent", "agent.py:lazy", "--no-file", "--fail-under", "1"]);
    assert_eq!((mine.code, theirs.code), (1, 1), "{}\n{}", mine.stderr, theirs.stderr);
    assert_eq!(comparable(&mine.json()), comparable(&theirs.json()));
    assert_eq!((mine.json()["reward"].as_f64(), &mine.json()["world"]["variant"]), (Some(0.5), &json!("bob")));
    let gate = "gate: avg reward 0.500 is below the 1 bar (--fail-under).";
    assert!(mine.stderr.contains(gate) && theirs.stderr.contains(gate), "{}\n{}", mine.stderr, theirs.stderr);
    // Unfiled without --no-file: the note before the agent runs; the agent's prints
    // go to stderr here (the original's share its stdout with the result).
    let mine = run(ours, &work, &["worlds", "run", "--path", "scratch", "--agent", "agent.py:lazy"], &hub);
    assert_eq!(mine.code, 0, "{}", mine.stderr);
    assert!(mine.stderr.starts_with("note: running unfiled — this directory has no hub link"), "{}", mine.stderr);
    // The original's refusals, in its words: an unknown variant, an agent that is not there.
    let (mine, theirs) = both(&["worlds", "run", "--path", "scratch", "-v", "carol", "--agent", "agent.py", "--no-file"]);
    assert_eq!((mine.code, theirs.code), (1, 1));
    assert_eq!(mine.stderr.trim(), theirs.stderr.trim());
    assert!(mine.stderr.contains("no task matches variant 'carol'; have: add-note-alice (variant=alice), add-note-bob (variant=bob)"));

    // SLUG against our hub: pushed by the original, pulled, run and filed by each CLI.
    let pushed = run(&original, &work, &["bench", "push", "notes"], &hub);
    assert_eq!(pushed.code, 0, "{}\n{}", pushed.stdout, pushed.stderr);
    let (version, container) = (string(&pushed.json(), "versionId"), string(&pushed.json(), "containerId"));
    let (mine, theirs) = both(&["worlds", "run", "notes", "--agent", "agent.py"]);
    assert_eq!((mine.code, theirs.code), (0, 0), "{}\n{}", mine.stderr, theirs.stderr);
    assert!(mine.stderr.contains("agent says hi") && !mine.stdout.contains("agent says hi"), "{}", mine.stderr);
    // The original's agent printed onto its stdout, before the result.
    let printed = theirs.stdout.find("\n{").map(|at| theirs.stdout[..at].to_string());
    assert_eq!(printed.as_deref(), Some("agent says hi"), "{}", theirs.stdout);
    let theirs: Value = serde_json::from_str(&theirs.stdout["agent says hi\n".len()..]).unwrap();
    let mine = mine.json();
    assert_eq!(comparable(&mine), comparable(&theirs));
    assert_eq!(mine["world"], json!({"slug": "notes", "branch": "main", "versionId": version, "variant": "alice", "filed": true}));
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&mine), keys(&theirs), "the same members in the same order");
    let (my_eval, their_eval) = (string(&mine, "evaluationId"), string(&theirs, "evaluationId"));
    assert_ne!(my_eval, their_eval);

    // Filed alike: the rollouts (newest first: the original's, then ours) and the samples.
    let listed = run(ours, &work, &["environment", "rollouts", &container], &hub);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let rollouts = listed.json()["rollouts"].clone();
    let by_id = |id: &str| {
        rollouts.as_array().unwrap().iter().find(|r| r["id"] == json!(id)).cloned().unwrap_or_else(|| panic!("{id} not in {rollouts}"))
    };
    let (my_rollout, their_rollout) = (by_id(&my_eval), by_id(&their_eval));
    for key in ["model", "status", "containerVersionId", "sampleCount", "metrics"] {
        assert_eq!(my_rollout[key], their_rollout[key], "{key}: ours {my_rollout} theirs {their_rollout}");
    }
    assert_eq!(my_rollout["metrics"], json!({"avg_reward": 1.0, "reward": 1.0, "rewards.added": 1.0, "rewards.kept": 1.0}));
    let sample = |evaluation: &str| {
        let out = run(ours, &work, &["environment", "samples", &container, evaluation], &hub);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()["samples"][0].clone()
    };
    let (my_sample, their_sample) = (sample(&my_eval), sample(&their_eval));
    assert_eq!(comparable_sample(&my_sample), comparable_sample(&their_sample));
    assert_eq!((&my_sample["exampleId"], &my_sample["info"]["variant"]), (&json!("add-note-alice"), &json!("alice")));

    // The gate on a filed run: filed first, then exit 1, as the original.
    let args = ["worlds", "run", "notes@main", "--variant", "bob", "--agent", "agent.py:lazy", "-m", "lazy-1", "--fail-under", "1"];
    let (mine, theirs) = both(&args);
    assert_eq!((mine.code, theirs.code), (1, 1), "{}\n{}", mine.stderr, theirs.stderr);
    assert!(mine.stderr.contains(gate), "{}", mine.stderr);
    assert_eq!(comparable(&mine.json()), comparable(&theirs.json()));
    let newest = run(ours, &work, &["environment", "rollouts", &container], &hub).json();
    let filed: Vec<&Value> = newest["rollouts"].as_array().unwrap().iter().filter(|r| r["model"] == json!("lazy-1")).collect();
    assert_eq!(filed.len(), 2, "{newest}");
    assert_eq!((&filed[0]["metrics"], &filed[0]["status"]), (&filed[1]["metrics"], &filed[1]["status"]));
    assert_eq!(sample(&string(&mine.json(), "evaluationId"))["info"]["variant"], json!("bob"));

    // --no-file on a slug: graded, nothing filed.
    let (mine, theirs) = both(&["worlds", "run", "notes", "--agent", "agent.py:lazy", "--no-file"]);
    assert_eq!((mine.code, theirs.code), (0, 0));
    assert_eq!(comparable(&mine.json()), comparable(&theirs.json()));
    assert_eq!(mine.json()["world"]["filed"], json!(false));
    let count = run(ours, &work, &["environment", "rollouts", &container], &hub).json()["rollouts"].as_array().unwrap().len();
    assert_eq!(count, 4, "nothing more filed");
}

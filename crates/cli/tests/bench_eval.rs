//! `gateway bench harvest-harbor | eval | install | dispatch` against our real hub
//! (`gateway hub serve`, started here), each filing read back through `gateway
//! environment rollouts|samples|performance`:
//! - harvest-harbor on a jobs directory in harbor's real layout (fixtures/harbor/,
//!   written with harbor 0.26's own models), by ours and — with the same output and
//!   the same samples filed — by the ORIGINAL `gateway` when it is installed;
//! - eval of a harbor world under a stand-in `harbor` (and `docker`) on PATH that
//!   leaves that jobs directory (the `harbor run` command line checked against the
//!   original's), --path filed when clean and aggregated unfiled when drifted, the
//!   refusals when harbor or Docker is missing; eval of a verifiers world through
//!   stand-in `verifiers` and `openai` packages on PYTHONPATH, with its results
//!   artifact, and the refusal without them;
//! - install of a version's wheel with pip (a real venv) and the refusals;
//! - dispatch of a run config: the hub's `ok: false` answer, printed by ours and by
//!   the original alike;
//! - the world's pass bar from an api bundle pushed by the original.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
mod support;
use support::{clean_run, gateway, world, Out};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/harbor/helpdesk-job");
const MODEL: &str = "openrouter/openai/gpt-4o-mini";

struct Hub {
    server: common::Server,
    work: PathBuf,
    _dir: tempfile::TempDir,
}

impl Hub {
    fn start() -> Hub {
        let dir = tempfile::tempdir().unwrap();
        let server = common::start(&dir.path().join("hub"));
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        Hub { server, work, _dir: dir }
    }

    fn env(&self) -> Vec<(&str, &str)> {
        vec![
            ("GATEWAY_HOST", self.server.host.as_str()),
            ("GATEWAY_PUBLIC_KEY", self.server.public.as_str()),
            ("GATEWAY_SECRET_KEY", self.server.secret.as_str()),
            ("GATEWAY_EMIT_ROLLOUT_SESSIONS", "0"),
        ]
    }

    /// Ours, with the hub's keys and `extra` (which may replace PATH).
    fn ours(&self, args: &[&str], extra: &[(&str, &str)]) -> Out {
        gateway(&self.work, args, &[self.env(), extra.to_vec()].concat())
    }

    /// The original, likewise (its output as ours is shaped).
    fn original(&self, original: &Path, args: &[&str], extra: &[(&str, &str)]) -> Out {
        clean_run(original, &self.work, args, &[vec![("COLUMNS", "400")], self.env(), extra.to_vec()].concat())
    }

    fn view(&self, args: &[&str]) -> Value {
        let out = self.ours(&[&["environment"], args].concat(), &[]);
        assert_eq!(out.code, 0, "environment {args:?}: {}", out.stderr);
        out.json()
    }

    /// Push `dir` as `slug`: (containerId, versionId).
    fn push(&self, dir: &Path, slug: &str) -> (String, String) {
        let out = self.ours(&["bench", "push", dir.to_str().unwrap(), "--slug", slug], &[]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let pushed = out.json();
        (pushed["containerId"].as_str().unwrap().into(), pushed["versionId"].as_str().unwrap().into())
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    if text.starts_with("#!") {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The samples the fixture's five trials harvest into (what the original harvests).
fn fixture_samples() -> Value {
    let info = |trial: &str, cost: Value, minute: u32| {
        json!({"trialName": trial, "agent": "mini-swe-agent", "model": "openai/gpt-4o-mini", "costUsd": cost,
               "startedAt": format!("2026-01-02T10:0{minute}:00Z"), "finishedAt": format!("2026-01-02T10:0{minute}:42Z")})
    };
    json!([
        {"exampleId": "solve-101", "task": "solve-101", "rolloutIndex": 0, "reward": 0.5, "score": 0.5, "correct": false,
         "rewards": {"style": 0.25}, "info": info("solve-101__P2mWv8Z", json!(0.0009), 1)},
        {"exampleId": "solve-101", "task": "solve-101", "rolloutIndex": 1, "reward": 1.0, "score": 1.0, "correct": true,
         "rewards": {}, "info": info("solve-101__k3J9xQa", json!(0.0012), 0)},
        {"exampleId": "solve-103", "task": "solve-103", "rolloutIndex": 0, "reward": 1.0, "score": 1.0, "correct": true,
         "rewards": {"correct": 1.0, "style": 1.0}, "info": info("solve-103__Qz7Lr4T", json!(0.0021), 2)},
        {"exampleId": "solve-104", "task": "solve-104", "rolloutIndex": 0, "reward": null, "score": null, "correct": null,
         "rewards": {}, "info": info("solve-104__Vb5Nn1C", json!(0.0004), 3)},
        {"exampleId": "solve-105", "task": "solve-105", "rolloutIndex": 0, "reward": 0.0, "score": 0.0, "correct": false,
         "rewards": {}, "info": info("solve-105__Hd8Ke2M", Value::Null, 4)},
    ])
}

/// A filed rollout's samples without what differs from one filing to the next.
fn filed_samples(hub: &Hub, container: &str, evaluation: &str) -> Value {
    let mut samples = hub.view(&["samples", container, evaluation])["samples"].clone();
    for sample in samples.as_array_mut().unwrap() {
        sample.as_object_mut().unwrap().remove("id");
    }
    samples
}

#[test]
fn harvest_harbor_files_a_jobs_directory_as_the_original_does() {
    let hub = Hub::start();
    let helpdesk = world(&hub.work);
    let (container, version) = hub.push(&helpdesk, "helpdesk");

    let out = hub.ours(&["bench", "harvest-harbor", FIXTURE, "helpdesk@main", "-m", MODEL, "-r", "2", "--run-id", "run-7"], &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let printed = out.stdout.clone();
    let result = out.json();
    let evaluation = result["evaluationId"].as_str().unwrap().to_string();
    assert_eq!(
        result,
        json!({"evaluationId": evaluation, "samples": 5, "metrics": {"n": 5, "avg_reward": 0.625, "metrics": {"style": 0.625, "correct": 1.0}}, "richTraces": 0})
    );
    // Read back: one rollout pinned to the version, the five samples as harvested.
    let rollout = &hub.view(&["rollouts", &container])["rollouts"][0];
    assert_eq!(
        (&rollout["id"], &rollout["model"], &rollout["status"], &rollout["containerVersionId"]),
        (&json!(evaluation), &json!(MODEL), &json!("COMPLETED"), &json!(version))
    );
    assert_eq!(
        (&rollout["numExamples"], &rollout["rolloutsPerExample"], &rollout["sampleCount"], &rollout["runId"]),
        (&json!(4), &json!(2), &json!(5), &json!("run-7"))
    );
    assert_eq!(rollout["metrics"], result["metrics"]);
    assert_eq!(filed_samples(&hub, &container, &evaluation), fixture_samples());
    // The ungraded trial is its own category in performance, never a 0.
    let performance = hub.view(&["performance", &container]);
    let task = |name: &str| performance["tasks"].as_array().unwrap().iter().find(|t| t["task"] == name).unwrap().clone();
    assert_eq!(
        (task("solve-104")["sampleCount"].clone(), task("solve-104")["nullScoreCount"].clone(), task("solve-104")["avgReward"].clone()),
        (json!(1), json!(1), Value::Null)
    );
    assert_eq!((task("solve-101")["avgReward"].clone(), task("solve-101")["passRate"].clone()), (json!(0.75), json!(0.5)));
    assert_eq!(performance["totalNullScoreSamples"], json!(1));

    // Refusals, with the original's exit codes: nothing to harvest, an unknown world, no --model.
    let empty = hub.work.join("empty-jobs");
    std::fs::create_dir_all(empty.join("2026-01-01__00-00-00")).unwrap();
    let empty_args = ["bench", "harvest-harbor", empty.to_str().unwrap(), "helpdesk", "-m", MODEL];
    let out = hub.ours(&empty_args, &[]);
    assert_eq!((out.code, out.stderr.trim().to_string()), (1, format!("Error: no harbor trials found under {}", empty.display())));
    let missing_world = ["bench", "harvest-harbor", FIXTURE, "nowhere@main", "-m", MODEL];
    let out = hub.ours(&missing_world, &[]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.starts_with("Error: POST /api/public/benchmark-containers/resolve-version -> 404"), "{}", out.stderr);
    let no_model = ["bench", "harvest-harbor", FIXTURE, "helpdesk"];
    assert_eq!(hub.ours(&no_model, &[]).code, 2);

    // The original, against the same hub: the same printed result, the same samples filed.
    let Some((original, _)) = common::reference() else { return };
    let theirs =
        hub.original(&original, &["bench", "harvest-harbor", FIXTURE, "helpdesk@main", "-m", MODEL, "-r", "2", "--run-id", "run-7"], &[]);
    assert_eq!(theirs.code, 0, "{}", theirs.stderr);
    let their_evaluation = theirs.json()["evaluationId"].as_str().unwrap().to_string();
    assert_eq!(theirs.stdout.replace(&their_evaluation, &evaluation), printed);
    assert_eq!(filed_samples(&hub, &container, &their_evaluation), fixture_samples());
    let rollouts = hub.view(&["rollouts", &container]);
    let (theirs_row, ours_row) = (&rollouts["rollouts"][0], &rollouts["rollouts"][1]);
    for key in ["model", "status", "numExamples", "rolloutsPerExample", "containerVersionId", "metrics", "sampleCount", "runId"] {
        assert_eq!(theirs_row[key], ours_row[key], "{key}");
    }
    for args in [&empty_args[..], &missing_world[..], &no_model[..]] {
        assert_eq!(hub.original(&original, args, &[]).code, hub.ours(args, &[]).code, "{args:?}");
    }
}

/// A harbor world: task dirs under tasks/ (task.toml, instruction.md, tests/test.sh).
fn harbor_world(root: &Path) -> PathBuf {
    let dir = root.join("harbor-world");
    for task in ["solve-101", "solve-103"] {
        write(&dir.join(format!("tasks/{task}/task.toml")), "version = \"1.0\"\n\n[verifier]\ntimeout_sec = 60.0\n");
        write(&dir.join(format!("tasks/{task}/instruction.md")), &format!("Solve {task}.\n"));
        write(&dir.join(format!("tasks/{task}/tests/test.sh")), "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n");
    }
    write(&dir.join("README.md"), "# a harbor world\n");
    dir
}

/// Stand-ins on a PATH of their own: `harbor` records its arguments and leaves the
/// fixture's jobs directory under `-o`; `docker` answers `info` (unless told the daemon
/// is down) and `network prune`. Returns the PATH value.
fn stand_ins(root: &Path, with_harbor: bool, docker: Option<bool>) -> String {
    let bin = root.join(format!("bin-{with_harbor}-{docker:?}"));
    std::fs::create_dir_all(&bin).unwrap();
    if with_harbor {
        let log = root.join("harbor.log");
        write(
            &bin.join("harbor"),
            &format!(
                r#"#!/usr/bin/env python3
import json, shutil, sys
args = sys.argv[1:]
with open({log:?}, "a") as fh:
    fh.write(json.dumps(args) + "\n")
out = args[args.index("-o") + 1]
shutil.copytree({FIXTURE:?}, out, dirs_exist_ok=True)
print("harbor: 5 trials")
sys.exit(1)
"#
            ),
        );
    }
    if let Some(up) = docker {
        write(&bin.join("docker"), &format!("#!/bin/sh\nif [ \"$1\" = info ]; then exit {}; fi\nexit 0\n", if up { 0 } else { 1 }));
    }
    let python = Command::new("sh").args(["-c", "dirname \"$(command -v python3)\""]).output().unwrap();
    format!("{}:{}:/usr/bin:/bin", bin.display(), String::from_utf8_lossy(&python.stdout).trim())
}

fn harbor_calls(root: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(root.join("harbor.log")).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn eval_runs_harbor_worlds_under_harbor_and_files_them() {
    let hub = Hub::start();
    let tools = hub.work.join("tools");
    let world_dir = harbor_world(&hub.work);
    let (container, version) = hub.push(&world_dir, "harbor-world");
    let path = world_dir.to_str().unwrap();
    let key = ("OPENROUTER_API_KEY", "sk-or-test");
    let outputs = hub.work.join("outputs");
    let eval_path = ["bench", "eval", "--path", path, "-m", "openai/gpt-4o-mini", "-o", outputs.to_str().unwrap()];

    // Refusals before anything runs (the original's words and exit codes).
    let out = hub.ours(&eval_path, &[]);
    assert_eq!((out.code, out.stderr.trim()), (1, "OPENROUTER_API_KEY is required for `bench eval`."));
    let out = hub.ours(&["bench", "eval", "harbor-world", "--path", path, "-m", "m"], &[key]);
    assert_eq!((out.code, out.stderr.trim()), (1, "pass exactly one of SLUG or --path"));
    let out = hub.ours(&["bench", "eval", "harbor-world", "-m", "m", "--kind", "docker"], &[key]);
    assert_eq!((out.code, out.stderr.trim()), (1, "unknown --kind 'docker' (auto|verifiers|verifiers-v1|harbor)"));
    let helpdesk = world(&hub.work);
    let mock_tools = ["bench", "eval", "--path", helpdesk.to_str().unwrap(), "-m", "m"];
    let out = hub.ours(&mock_tools, &[key]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.starts_with("this container is a mock-tools world (gateway-env.toml)"), "{}", out.stderr);

    // Harbor missing, then Docker missing, then its daemon down: a refusal naming each.
    let bare = stand_ins(&tools, false, None);
    let out = hub.ours(&eval_path, &[key, ("PATH", &bare)]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("the harbor CLI is not installed — `uv tool install harbor`"), "{}", out.stderr);
    assert!(out.stderr.contains("Docker is not installed"), "{}", out.stderr);
    assert!(out.stderr.starts_with("filing to harbor-world@main ("), "said up front: {}", out.stderr);
    let down = stand_ins(&tools, true, Some(false));
    let out = hub.ours(&eval_path, &[key, ("PATH", &down)]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("the Docker daemon is not reachable (`docker info` failed)") && !out.stderr.contains("harbor CLI"),
        "{}",
        out.stderr
    );
    assert!(harbor_calls(&tools).is_empty(), "nothing ran");

    // With both: harbor runs over the task dirs (exiting 1: tolerated), the jobs are filed
    // pinned to the clean checkout's version, and the gate reads the harvest.
    let ready = stand_ins(&tools, true, Some(true));
    let summary = hub.work.join("summary.md");
    let gated = [&eval_path[..], &["--fail-under", "0.6", "-n", "2", "-r", "2"]].concat();
    let out = hub.ours(&gated, &[key, ("PATH", &ready), ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("[harbor] ") && out.stderr.contains("--ae OPENROUTER_API_KEY=***"), "{}", out.stderr);
    assert!(!out.stderr.contains("sk-or-test"), "the key is never shown: {}", out.stderr);
    assert!(out.stderr.contains("[harbor] exited 1 (harvesting whatever ran)"), "{}", out.stderr);
    assert!(out.stderr.contains("gate: avg reward 0.625 clears the 0.6 bar (--fail-under)."), "{}", out.stderr);
    let result = out.json();
    let evaluation = result["evaluationId"].as_str().unwrap().to_string();
    assert_eq!(result["metrics"]["avg_reward"], json!(0.625));
    let jobs = outputs.join("harbor-jobs/local--harbor-world");
    let tasks = world_dir.join("tasks");
    assert_eq!(
        harbor_calls(&tools)[0],
        [
            "run",
            "-p",
            tasks.to_str().unwrap(),
            "-a",
            "mini-swe-agent",
            "-m",
            "openrouter/openai/gpt-4o-mini",
            "-e",
            "docker",
            "-o",
            jobs.to_str().unwrap(),
            "-k",
            "2",
            "-n",
            "4",
            "-y",
            "-q",
            "-l",
            "2",
            "--ae",
            "OPENROUTER_API_KEY=sk-or-test"
        ]
    );
    let rollout = &hub.view(&["rollouts", &container])["rollouts"][0];
    assert_eq!((&rollout["id"], &rollout["containerVersionId"], &rollout["model"]), (&json!(evaluation), &json!(version), &json!(MODEL)));
    assert_eq!(filed_samples(&hub, &container, &evaluation).as_array().unwrap().len(), 5);
    let written = std::fs::read_to_string(&summary).unwrap();
    assert!(written.starts_with("### World eval · harbor-world (local)\n"), "{written}");
    assert!(
        written
            .contains(&format!("| evaluation | {evaluation} |\n| model | openrouter/openai/gpt-4o-mini |\n| agent | mini-swe-agent |\n")),
        "{written}"
    );

    // A drifted checkout runs, is not filed, and still gates on its local aggregate.
    write(&world_dir.join("README.md"), "# a harbor world, edited\n");
    let out = hub.ours(&[&eval_path[..], &["--fail-under", "0.9"]].concat(), &[key, ("PATH", &ready)]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.starts_with("note: 1 file(s) differ from main@"), "{}", out.stderr);
    assert!(out.stderr.contains("(README.md) — the run executes your local code but will NOT be filed."), "{}", out.stderr);
    assert!(out.stderr.contains("gate: avg reward 0.625 is below the 0.9 bar (--fail-under)."), "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({"jobsDir": jobs.to_str().unwrap(), "filed": false, "metrics": {"n": 5, "avg_reward": 0.625, "metrics": {"style": 0.625, "correct": 1.0}}})
    );
    assert_eq!(hub.view(&["rollouts", &container])["rollouts"].as_array().unwrap().len(), 1, "nothing more filed");
    write(&world_dir.join("README.md"), "# a harbor world\n");

    // By slug: pulled, detected as harbor, run and filed pinned to what it resolved to.
    let out = hub.ours(
        &["bench", "eval", "harbor-world@main", "-m", "anthropic/claude-x", "-a", "claude-code", "-o", outputs.to_str().unwrap()],
        &[key, ("PATH", &ready)],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let call = harbor_calls(&tools).last().unwrap().clone();
    assert_eq!((call[4].as_str(), call[6].as_str()), ("claude-code", "anthropic/claude-x"), "other agents take the model verbatim");
    assert!(call[2].ends_with("/src/tasks"), "the pulled copy's task dirs: {call:?}");
    assert_eq!(call[10], outputs.join("harbor-jobs/harbor-world--main").to_str().unwrap());
    let rollout = &hub.view(&["rollouts", &container])["rollouts"][0];
    assert_eq!((&rollout["id"], &rollout["containerVersionId"]), (&out.json()["evaluationId"], &json!(version)));

    // The original builds the same `harbor run` command line (its [harbor] line on stdout).
    let Some((original, _)) = common::reference() else { return };
    let before = harbor_calls(&tools).len();
    let theirs = hub.original(&original, &gated, &[key, ("PATH", &ready)]);
    assert_eq!(theirs.code, 0, "{}\n{}", theirs.stdout, theirs.stderr);
    assert_eq!(harbor_calls(&tools)[before], harbor_calls(&tools)[0]);
    let theirs = hub.original(&original, &mock_tools, &[key]);
    assert_eq!(theirs.code, 1);
    assert_eq!(theirs.stderr.trim(), hub.ours(&mock_tools, &[key]).stderr.trim());
}

/// Stand-in `verifiers` and `openai` packages: an environment whose rollout loop
/// answers three rollouts (two examples) without any model, checking what it is given.
fn fake_verifiers(root: &Path) -> PathBuf {
    let site = root.join("site");
    write(
        &site.join("openai/__init__.py"),
        "class AsyncOpenAI:\n    def __init__(self, base_url=None, api_key=None):\n        self.base_url, self.api_key = base_url, api_key\n",
    );
    write(
        &site.join("verifiers/__init__.py"),
        r#"
class Env:
    def evaluate_sync(self, client, model, num_examples, rollouts_per_example):
        assert client.base_url == "https://openrouter.ai/api/v1" and client.api_key == "sk-or-test", vars(client)
        print("scoring", model)  # an environment's chatter must not reach the JSON
        rows = [
            {"example_id": 0, "prompt": [{"role": "user", "content": "2+2?"}], "completion": [{"role": "assistant", "content": "4"}],
             "answer": "4", "reward": 1.0, "metrics": {"exact": 1.0, "format": 0.5}, "info": {"turns": 1}},
            {"example_id": 0, "prompt": [{"role": "user", "content": "2+2?"}], "completion": "five", "answer": "4",
             "reward": 0, "metrics": {"exact": 0.0}},
            {"example_id": 1, "prompt": "3+3?", "completion": "6", "answer": 6, "reward": None, "metrics": {}},
        ]
        return {"outputs": rows, "metadata": {"rollouts_per_example": rollouts_per_example}}

def load_environment(env_id):
    assert env_id == "arith", env_id
    return Env()
"#,
    );
    site
}

#[test]
fn eval_scores_verifiers_worlds_in_their_own_loop() {
    let hub = Hub::start();
    let package = hub.work.join("arith");
    write(&package.join("pyproject.toml"), "[project]\nname = \"arith\"\nversion = \"0.1.0\"\ndependencies = [\"verifiers<1.0.0\"]\n");
    write(&package.join("arith.py"), "def load_environment():\n    pass\n");
    let (container, version) = hub.push(&package, "arith");
    let key = ("OPENROUTER_API_KEY", "sk-or-test");
    let outputs = hub.work.join("outputs");
    let args =
        ["bench", "eval", "arith", "-m", "openai/gpt-4o-mini", "-r", "2", "-s", "-o", outputs.to_str().unwrap(), "--fail-under", "0.4"];

    // Without verifiers (and openai) importable: refused, saying what to install.
    let out = hub.ours(&args, &[key, ("PYTHONPATH", hub.work.join("nothing").to_str().unwrap())]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("openai is required: pip install openai") || out.stderr.contains("verifiers is not installed"),
        "{}",
        out.stderr
    );
    assert!(hub.view(&["rollouts", &container])["rollouts"].as_array().unwrap().is_empty());

    let site = fake_verifiers(&hub.work);
    let out = hub.ours(&args, &[key, ("PYTHONPATH", site.to_str().unwrap())]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("scoring openai/gpt-4o-mini"), "{}", out.stderr);
    assert!(out.stderr.contains("gate: avg reward 0.500 clears the 0.4 bar (--fail-under)."), "{}", out.stderr);
    let result = out.json();
    let evaluation = result["evaluationId"].as_str().unwrap().to_string();
    assert_eq!(
        (&result["samples"], &result["metrics"]),
        (&json!(3), &json!({"n": 3, "avg_reward": 0.5, "metrics": {"exact": 0.5, "format": 0.5}}))
    );
    let results = PathBuf::from(result["resultsPath"].as_str().unwrap());
    assert!(results.starts_with(outputs.join("evals/arith--openai--gpt-4o-mini")), "{results:?}");
    assert_eq!(std::fs::read_to_string(results.join("results.jsonl")).unwrap().lines().count(), 3);
    let metadata: Value = serde_json::from_str(&std::fs::read_to_string(results.join("metadata.json")).unwrap()).unwrap();
    assert_eq!(
        (&metadata["env_id"], &metadata["rollouts_per_example"], &metadata["avg_reward"]),
        (&json!("arith"), &json!(2), &json!(0.5))
    );

    let rollout = &hub.view(&["rollouts", &container])["rollouts"][0];
    assert_eq!(
        (&rollout["id"], &rollout["containerVersionId"], &rollout["numExamples"], &rollout["rolloutsPerExample"]),
        (&json!(evaluation), &json!(version), &json!(2), &json!(2))
    );
    let samples = filed_samples(&hub, &container, &evaluation);
    assert_eq!(
        samples,
        json!([
            {"exampleId": "0", "task": null, "rolloutIndex": 0, "reward": 1.0, "score": 1.0, "correct": null, "rewards": {"exact": 1.0, "format": 0.5}, "info": {"turns": 1}},
            {"exampleId": "0", "task": null, "rolloutIndex": 1, "reward": 0.0, "score": 0.0, "correct": null, "rewards": {"exact": 0.0}, "info": {}},
            {"exampleId": "1", "task": null, "rolloutIndex": 0, "reward": null, "score": null, "correct": null, "rewards": {}, "info": {}},
        ])
    );

    // --env-id names another environment (the stand-in knows only `arith`).
    let out = hub.ours(
        &["bench", "eval", "arith", "-m", "m", "--env-id", "other", "--kind", "verifiers"],
        &[key, ("PYTHONPATH", site.to_str().unwrap())],
    );
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("AssertionError: other") && out.stderr.contains("could not be scored"), "{}", out.stderr);

    // The original, with the same stand-ins: the same samples filed.
    let Some((original, _)) = common::reference() else { return };
    let theirs = hub.original(&original, &args[..8], &[key, ("PYTHONPATH", site.to_str().unwrap())]);
    assert_eq!(theirs.code, 0, "{}\n{}", theirs.stdout, theirs.stderr);
    let their_evaluation = hub.view(&["rollouts", &container])["rollouts"][0]["id"].as_str().unwrap().to_string();
    assert_ne!(their_evaluation, evaluation);
    assert_eq!(filed_samples(&hub, &container, &their_evaluation), samples);
}

/// A pure-Python wheel `wheelpkg-0.1.0-py3-none-any.whl` (RECORD included), made with python3.
fn make_wheel(dir: &Path) -> PathBuf {
    let wheel = dir.join("wheelpkg-0.1.0-py3-none-any.whl");
    let script = r#"
import base64, hashlib, sys, zipfile
files = {
    "wheelpkg/__init__.py": "ANSWER = 42\n",
    "wheelpkg-0.1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: wheelpkg\nVersion: 0.1.0\n",
    "wheelpkg-0.1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append("wheelpkg-0.1.0.dist-info/RECORD,,")
    z.writestr("wheelpkg-0.1.0.dist-info/RECORD", "\n".join(record) + "\n")
"#;
    let out = Command::new("python3").args(["-c", script]).arg(&wheel).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wheel
}

/// Push `dir` with a wheel through the hub's API (our client does not build wheels).
fn push_with_wheel(hub: &Hub, dir: &Path, slug: &str, wheel: &Path) -> String {
    use base64::Engine as _;
    let http = reqwest::blocking::Client::new();
    let api = format!("{}/api/public/benchmark-containers", hub.server.host);
    let post = |path: &str, body: Value| -> Value {
        let answer = http.post(format!("{api}{path}")).basic_auth(&hub.server.public, Some(&hub.server.secret)).json(&body).send().unwrap();
        assert!(answer.status().is_success(), "{path}: {}", answer.text().unwrap());
        answer.json().unwrap()
    };
    let sha = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
    let tarball = gateway_bundle::archive::build_source_tarball(dir).unwrap();
    let wheel_bytes = std::fs::read(wheel).unwrap();
    let container = post("/resolve", json!({"slug": slug}))["containerId"].as_str().unwrap().to_string();
    let version = post(
        "/versions",
        json!({"containerId": container, "contentHash": gateway_bundle::archive::compute_content_hash(dir).unwrap(),
               "bundleSha256": sha(&tarball), "bundleSizeBytes": tarball.len(), "fileManifest": [], "branch": "main",
               "wheelSha256": sha(&wheel_bytes), "wheelSizeBytes": wheel_bytes.len(),
               "wheelFilename": wheel.file_name().unwrap().to_str().unwrap(), "requiresDist": []}),
    );
    for (url, bytes, digest) in [("uploadUrl", &tarball, sha(&tarball)), ("wheelUploadUrl", &wheel_bytes, sha(&wheel_bytes))] {
        let put = http.put(version[url].as_str().unwrap()).header("x-amz-checksum-sha256", digest).body(bytes.clone()).send().unwrap();
        assert!(put.status().is_success(), "{url}");
    }
    let id = version["versionId"].as_str().unwrap().to_string();
    post(&format!("/versions/{id}/finalize"), json!({"branch": "main"}));
    id
}

#[test]
fn install_puts_a_versions_wheel_into_the_python_environment() {
    let hub = Hub::start();
    let package = hub.work.join("wheelpkg");
    write(&package.join("pyproject.toml"), "[project]\nname = \"wheelpkg\"\nversion = \"0.1.0\"\n");
    let wheel = make_wheel(&hub.work);
    let version = push_with_wheel(&hub, &package, "wheelpkg", &wheel);
    let helpdesk = world(&hub.work);
    hub.push(&helpdesk, "helpdesk");

    // A real pip in a fresh venv installs it, offline.
    let venv = hub.work.join("venv");
    let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let path = format!("{}:/usr/bin:/bin", venv.join("bin").display());
    let quiet = ("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    let out = hub.ours(&["bench", "install", "wheelpkg@main", "--tool", "pip"], &[("PATH", &path), quiet, ("PIP_NO_INDEX", "1")]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        out.json(),
        json!({"slug": "wheelpkg", "ref": "main", "versionId": version, "tool": "pip", "wheelFile": "wheelpkg-0.1.0-py3-none-any.whl"})
    );
    let import = Command::new(venv.join("bin/python")).args(["-c", "import wheelpkg; print(wheelpkg.ANSWER)"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&import.stdout).trim(), "42");

    // What is run: `pip install [--upgrade]` / `uv pip install [--reinstall]` on the canonical file name.
    let bin = hub.work.join("fake-bin");
    let log = hub.work.join("installer.log");
    for tool in ["pip", "uv"] {
        write(&bin.join(tool), &format!("#!/bin/sh\necho \"{tool} $*\" | sed \"s#/[^ ]*/##\" >> {}\n", log.display()));
    }
    let fake = format!("{}:/usr/bin:/bin", bin.display());
    assert_eq!(hub.ours(&["bench", "install", "wheelpkg", "--tool", "pip", "--no-upgrade"], &[("PATH", &fake)]).code, 0);
    assert_eq!(hub.ours(&["bench", "install", "wheelpkg"], &[("PATH", &fake)]).code, 0);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "pip install wheelpkg-0.1.0-py3-none-any.whl\nuv pip install --reinstall wheelpkg-0.1.0-py3-none-any.whl\n"
    );

    // Refusals: no uv; the installer fails; a version without a wheel.
    let out = hub.ours(&["bench", "install", "wheelpkg"], &[("PATH", "/nowhere")]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr.trim(),
        "Error: 'uv' is not installed or not on PATH — install it (https://docs.astral.sh/uv/) or rerun with tool='pip' (`gateway bench install --tool pip`)."
    );
    write(&bin.join("pip"), "#!/bin/sh\nexit 3\n");
    let out = hub.ours(&["bench", "install", "wheelpkg", "--tool", "pip"], &[("PATH", &fake)]);
    assert_eq!((out.code, out.stderr.trim()), (1, "Error: install failed (exit 3)"));
    let out = hub.ours(&["bench", "install", "helpdesk@main", "--tool", "pip"], &[("PATH", &fake)]);
    assert_eq!(
        (out.code, out.stderr.trim()),
        (1, "Error: helpdesk@main has no built wheel — push it with wheel=True (`gateway bench push --build-wheel`)")
    );
}

#[test]
fn dispatch_answers_that_this_hub_has_no_runner() {
    let hub = Hub::start();
    let helpdesk = world(&hub.work);
    let (container, version) = hub.push(&helpdesk, "helpdesk");
    let out = hub.ours(&["bench", "run-configs", "create", "--name", "nightly", "--models", "m-1,m-2"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let config = out.stdout.split_whitespace().next().unwrap().to_string();

    let out = hub.ours(&["bench", "dispatch", &config], &[]);
    assert_eq!(out.code, 1, "nothing started: {}", out.stderr);
    let answer = out.json();
    assert_eq!(
        (&answer["runConfigId"], &answer["versionId"], &answer["versionLabel"]),
        (&json!(config), &json!(version), &json!(version_label(&hub, &container)))
    );
    let runs = answer["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["model"].as_str().unwrap()).collect::<Vec<_>>(), ["m-1", "m-2"]);
    assert!(runs
        .iter()
        .all(|r| r["ok"] == json!(false) && r["error"].as_str().unwrap().starts_with("this self-hosted hub has no hosted runner")));
    assert!(out.stderr.starts_with("dispatch: m-1 did not start: this self-hosted hub has no hosted runner"), "{}", out.stderr);
    let pinned = hub.ours(&["bench", "dispatch", &config, "--container-id", &container, "--version-id", &version], &[]);
    assert_eq!(pinned.json(), answer);

    // Refusals: an unknown config or version; several environments and none named.
    let out = hub.ours(&["bench", "dispatch", "rc_nope"], &[]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("-> 404") && out.stderr.contains("no run config 'rc_nope'"), "{}", out.stderr);
    let out = hub.ours(&["bench", "dispatch", &config, "--version-id", "ver_nope"], &[]);
    assert_eq!(out.code, 1);
    hub.push(&harbor_world(&hub.work), "harbor-world");
    let out = hub.ours(&["bench", "dispatch", &config], &[]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("name one with 'containerId' (`--container-id`)"), "{}", out.stderr);

    // The original prints the hub's answer as it is (and, not reading `ok`, exits 0).
    let Some((original, _)) = common::reference() else { return };
    let args = ["bench", "dispatch", &config, "--container-id", &container];
    let theirs = hub.original(&original, &args, &[]);
    assert_eq!(theirs.code, 0, "{}", theirs.stderr);
    assert_eq!(theirs.stdout, hub.ours(&args, &[]).stdout);
}

fn version_label(hub: &Hub, container: &str) -> String {
    hub.view(&["get", container])["versions"][0]["contentHash"].as_str().unwrap()[..12].to_string()
}

#[test]
fn the_pass_bar_of_an_api_bundle_pushed_by_the_original() {
    let Some((original, _)) = common::reference() else { return };
    let hub = Hub::start();
    let helpdesk = world(&hub.work);
    let manifest = std::fs::read_to_string(helpdesk.join("gateway-env.toml")).unwrap();
    std::fs::write(helpdesk.join("gateway-env.toml"), format!("{manifest}\n[eval]\npass_threshold = 0.85\n")).unwrap();
    let out = hub.original(&original, &["bench", "push", helpdesk.to_str().unwrap(), "--slug", "helpdesk"], &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let resolve = |who: &Path| {
        let script = "import json; from gatewaysdk.benchmark_hub import GatewayBenchmarkClient as C; print(json.dumps(C.from_env().resolve_version('helpdesk', 'main')))";
        let python = who.parent().unwrap().join("python");
        let out = Command::new(python)
            .args(["-c", script])
            .env("GATEWAY_HOST", &hub.server.host)
            .env("GATEWAY_PUBLIC_KEY", &hub.server.public)
            .env("GATEWAY_SECRET_KEY", &hub.server.secret)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let resolved = resolve(&original);
    assert_eq!(resolved["passThreshold"], json!(0.85), "read from server/world/gateway-env.toml of the api bundle: {resolved}");
    let files = hub.view(&["get", "helpdesk"]);
    assert_eq!(files["versions"][0]["envKind"], json!("api"));
}

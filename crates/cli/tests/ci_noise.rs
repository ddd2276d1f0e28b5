//! `gateway worlds ci --baseline EVAL`: a gate that knows noise, against our real hub.
//!
//! The agent is a seeded flaky fake: per (seed, task, rollout) it solves its ticket
//! with probability `FLAKY_RATE`, so a run is reproducible and two seeds are two runs
//! of the same agent with different luck. A rerun of the same agent with other luck
//! is no regression (though its mean moves); an identical rerun gives the identical
//! verdict; a broken agent is a significant regression, exit 1. Every result carries
//! pass^k with its interval.

use serde_json::Value;

mod common;
mod support;
use support::{gateway, world, Out};

const FLAKY: &str = r#"
import json, os, random, urllib.request

env = os.environ
luck = random.Random(f'{env["FLAKY_SEED"]}:{env["GATEWAY_WORLD_TASK"]}:{env["GATEWAY_WORLD_ROLLOUT"]}').random()
if luck < float(env["FLAKY_RATE"]):
    ticket = env["GATEWAY_WORLD_TASK"].split("-")[1]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "solve_ticket", "arguments": {"id": int(ticket)}}}
    request = urllib.request.Request(env["GATEWAY_WORLD_MCP_URL"], data=json.dumps(body).encode())
    request.add_header("Authorization", "Bearer " + env["GATEWAY_WORLD_TOKEN"])
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    urllib.request.urlopen(request).read()
    print("solved")
else:
    print("gave up")
"#;

fn ci(work: &std::path::Path, env: &[(&str, &str)], path: &str, seed: &str, rate: &str, extra: &[&str]) -> Out {
    let mut env: Vec<(&str, &str)> = env.to_vec();
    env.extend([("FLAKY_SEED", seed), ("FLAKY_RATE", rate)]);
    let mut args = vec!["worlds", "ci", "--path", path, "--branch", "main", "--agent-cmd", "python3 flaky.py", "-r", "8", "-c", "4"];
    args.extend_from_slice(extra);
    gateway(work, &args, &env)
}

fn interval(result: &Value) -> (f64, f64) {
    let pair = &result["passHatKInterval"]["1"];
    (pair[0].as_f64().unwrap(), pair[1].as_f64().unwrap())
}

#[test]
fn a_baseline_gate_fails_on_a_real_regression_not_on_noise() {
    let (_dir, hub, work) = common::start_in_temp();
    let env = hub.env();
    let helpdesk = world(&work);
    std::fs::write(work.join("flaky.py"), FLAKY).unwrap();
    let path = helpdesk.to_str().unwrap();

    // The baseline: the flaky agent, gated on no bar.
    let base = ci(&work, &env, path, "1", "0.6", &["--fail-under", "0"]);
    assert_eq!(base.code, 0, "{}\n{}", base.stdout, base.stderr);
    let baseline = base.json();
    let baseline_id = baseline["evaluationId"].as_str().unwrap().to_string();
    let (low, high) = interval(&baseline);
    let pass_1 = baseline["passHatK"]["1"].as_f64().unwrap();
    assert!(low <= pass_1 && pass_1 <= high && high - low > 0.1, "an interval around the estimate: {baseline}");
    assert_eq!(baseline["passHatKInterval"].as_object().unwrap().len(), 8, "k = 1 … 8: {baseline}");

    // The same agent with other luck: its mean moves, the gate does not fail.
    let rerun = ci(&work, &env, path, "2", "0.6", &["--baseline", &baseline_id]);
    assert_eq!(rerun.code, 0, "{}\n{}", rerun.stdout, rerun.stderr);
    let compared = &rerun.json()["baseline"];
    assert_eq!((compared["evaluationId"].as_str(), compared["pairedTasks"].as_i64()), (Some(baseline_id.as_str()), Some(2)), "{compared}");
    assert_eq!(compared["regressed"], false, "{compared}");
    assert!(compared["delta"].as_f64().unwrap() < 0.0, "worse by chance, so the gate is tested: {compared}");
    assert!(rerun.stderr.contains(&format!("gate: no significant regression against baseline {baseline_id}")), "{}", rerun.stderr);
    assert!(!rerun.stderr.contains("bar"), "no bar is applied against a baseline: {}", rerun.stderr);

    // An identical rerun: the identical verdict, p-value and interval.
    let again = ci(&work, &env, path, "2", "0.6", &["--baseline", &baseline_id]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.json()["baseline"], *compared);
    assert_eq!(again.json()["passHatKInterval"], rerun.json()["passHatKInterval"]);

    // A broken agent: a significant regression, exit 1.
    let broken = ci(&work, &env, path, "3", "0", &["--baseline", &baseline_id]);
    assert_eq!(broken.code, 1, "{}\n{}", broken.stdout, broken.stderr);
    let compared = &broken.json()["baseline"];
    assert_eq!(compared["regressed"], true, "{compared}");
    assert!(compared["pValue"].as_f64().unwrap() < 0.01, "{compared}");
    assert!(broken.stderr.contains(&format!("gate: a significant regression against baseline {baseline_id}")), "{}", broken.stderr);

    // An explicit bar still gates beside the baseline; a baseline this hub cannot read is refused.
    let barred = ci(&work, &env, path, "2", "0.6", &["--baseline", &baseline_id, "--fail-under", "1"]);
    assert_eq!(barred.code, 1, "{}", barred.stderr);
    assert!(barred.stderr.contains("is below the 1 bar (--fail-under)"), "{}", barred.stderr);
    let unknown = ci(&work, &env, path, "2", "0.6", &["--baseline", "ev_missing"]);
    assert_eq!(unknown.code, 1);
    assert!(unknown.stderr.contains("--baseline ev_missing"), "{}", unknown.stderr);
    let bad = ci(&work, &env, path, "2", "0.6", &["--alpha", "1"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

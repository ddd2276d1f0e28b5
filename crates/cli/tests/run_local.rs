//! `gateway worlds run` on a local world, unfiled: Python agents through the
//! bridge (the World object, refusals, errors, budgets, the gate and the step
//! summary), the oracle over every task × rollouts with transcripts, an agent
//! command reaching its session over REST and MCP, and the built-in model runner
//! against a fake OpenAI-compatible server on loopback playing a script of tool
//! calls (pass^k from a task that fails one rollout of two); a rubric task judged
//! by a fake judge.

use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

mod support;
use support::{gateway, serve, world, Out};

/// `gateway worlds run --path WORLD ARGS…` in `dir`, with `env`.
fn run_world(dir: &Path, world: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut full = vec!["worlds", "run", "--path", world.to_str().unwrap()];
    full.extend_from_slice(args);
    gateway(dir, &full, env)
}

const AGENTS: &str = r#"
import time

print("the module loads")  # twice (resolved before the world loads, then run): never on stdout

def agent(world):
    print("noise on stdout must not break the bridge")
    assert world.variant == "solve-101" and "Ticket 101" in world.instruction, (world.variant, world.instruction)
    assert world.version_id is None and world.file_block, world.file_block
    kit = world.toolkit()
    names = sorted(s["function"]["name"] for s in kit.schemas)
    assert "solve_ticket" in names and "get_ticket" in names, names
    before = world.grade()
    assert before["reward"] == 0.0, before
    got = world.tools["get_ticket"](101)
    assert got["status"] == 200 and got["body"]["id"] == 101, got
    answer = kit.impls["solve_ticket"]({"id": 101})
    assert answer["status"] == 200 and answer["body"]["status"] == "solved", answer
    try:
        world.wrap({"nope": print})
        raise AssertionError("wrap accepted a tool the world does not serve")
    except Exception as error:
        assert "does not serve: nope" in str(error), error
    try:
        world.call("no_such_tool", {})
        raise AssertionError("an unknown tool was answered")
    except Exception as error:
        assert "unknown tool" in str(error), error
    assert len(world.call_log) == 2, world.call_log
    return "solved 101"

def idle(world):
    return None

def boom(world):
    world.tools["get_ticket"](id=101)
    raise ValueError("the agent broke")

def slow(world):
    time.sleep(60)
"#;

#[test]
fn python_agents_run_and_grade_locally_without_filing() {
    let dir = tempfile::tempdir().unwrap();
    let world = world(dir.path());
    std::fs::write(dir.path().join("agents.py"), AGENTS).unwrap();
    let path = world.to_str().unwrap();

    let out = gateway(dir.path(), &["worlds", "run", "--path", path, "--agent", "agents.py", "--no-file", "--fail-under", "1"], &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    let top = regex::Regex::new(r#"(?m)^  "(\w+)":"#).unwrap();
    let keys: Vec<&str> = top.captures_iter(&out.stdout).map(|c| c.get(1).unwrap().as_str()).collect();
    assert_eq!(keys, ["reward", "rewards", "agentError", "calls", "durationSeconds", "world"], "the original's shape");
    assert_eq!(
        (result["reward"].as_f64(), &result["rewards"]["solved"], &result["agentError"]),
        (Some(1.0), &serde_json::json!(1.0), &Value::Null)
    );
    assert_eq!(result["calls"], 2);
    assert_eq!(
        result["world"],
        serde_json::json!({"slug": null, "branch": null, "versionId": null, "variant": "solve-101", "filed": false})
    );
    assert!(out.stderr.contains("noise on stdout must not break the bridge"), "the agent's prints go to stderr: {}", out.stderr);
    assert!(out.stderr.contains("gate: avg reward 1.000 clears the 1 bar (--fail-under)."), "{}", out.stderr);
    assert!(!out.stderr.contains("note: running unfiled"), "--no-file says nothing about filing");

    // A miss under the gate: exit 1, the verdict on stderr, the step summary written.
    let summary = dir.path().join("summary.md");
    let out = gateway(
        dir.path(),
        &["worlds", "run", "--path", path, "--agent", "agents.py:idle", "--no-file", "--fail-under", "0.5"],
        &[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.json()["reward"].as_f64(), Some(0.0));
    assert!(out.stderr.contains("gate: avg reward 0.000 is below the 0.5 bar (--fail-under)."), "{}", out.stderr);
    let written = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(
        written,
        "### World run · local · solve-101\n\n| | |\n|---|---|\n| avg reward | 0.000 |\n| model | sdk-dev-loop |\n| gate | FAIL — bar 0.5 (--fail-under) |\n\n"
    );

    // An agent that raises failed on its own: recorded, graded anyway (the original's
    // way), exit 0 without a bar — not an errored rollout.
    let out = gateway(dir.path(), &["worlds", "run", "--path", path, "--variant", "103", "--agent", "agents.py:boom", "--no-file"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.json();
    assert_eq!((result["agentError"].as_str(), result["calls"].as_i64()), (Some("the agent broke"), Some(1)));
    assert_eq!(result["reward"].as_f64(), Some(0.0), "graded: {result}");
    assert_eq!(result["world"]["variant"], "solve-103", "a variant matches by substring as the original's");

    // An agent past its budget is stopped (its own failure: graded).
    let out = gateway(dir.path(), &["worlds", "run", "--path", path, "--agent", "agents.py:slow", "--no-file", "--timeout", "1"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.json()["agentError"].as_str().unwrap().contains("budget"), "{}", out.stdout);

    // Refusals, each one line on stderr and exit 1, as the original's.
    for (args, said) in [
        (vec!["--path", path, "--agent", "missing.py"], "agent file not found: missing.py".to_string()),
        (
            vec!["--path", path, "--agent", "agents.py:nothing"],
            "'agents.py:nothing' does not expose a callable 'nothing' — point --agent at a function taking the world (file.py:fn or module:fn; fn defaults to 'agent')".into(),
        ),
        (vec!["--agent", "agents.py"], "pass exactly one of SLUG or --path".into()),
        (vec!["--path", path, "--agent", "agents.py", "--variant", "zzz"], "no task matches variant 'zzz'; have: solve-101, solve-103".into()),
        (vec!["--path", path, "--agent", "builtin"], "the built-in model runner needs a model endpoint".into()),
    ] {
        let out = gateway(dir.path(), &[&["worlds", "run"][..], &args[..], &["--no-file"]].concat(), &[]);
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(&said), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
    }
    // A --fail-under outside [0, 1] is a usage error.
    assert_eq!(gateway(dir.path(), &["worlds", "run", "--path", path, "--agent", "x.py", "--fail-under", "2"], &[]).code, 2);

    // Without --no-file an unlinked directory runs, says why it is not filed, and files nothing.
    let out = gateway(dir.path(), &["worlds", "run", "--path", path, "--agent", "agents.py"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("note: running unfiled — this directory has no hub link (.gateway/.env-metadata.json)"), "{}", out.stderr);
    assert_eq!(out.json()["world"]["filed"], false);

    // A task the world cannot open (it names an entity the world lacks): one line, exit 1.
    let wrong = r#"{"name": "wrong", "instruction": "x", "grader": {"kind": "assertions", "checks": [{"entity": "invoices"}]}}"#;
    std::fs::write(world.join("tasks/wrong.json"), wrong).unwrap();
    let out = gateway(dir.path(), &["worlds", "run", "--path", path, "--variant", "wrong", "--agent", "agents.py:idle", "--no-file"], &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stderr.contains("\nthe session could not be opened:") && out.stderr.contains("invoices"), "{}", out.stderr);

    // A gate over a result with no reward cannot measure, so it fails.
    std::fs::write(world.join("tasks/ungraded.json"), r#"{"name": "ungraded", "instruction": "look around"}"#).unwrap();
    let args = ["worlds", "run", "--path", path, "--variant", "ungraded", "--agent", "agents.py:idle", "--no-file", "--fail-under", "0"];
    let out = gateway(dir.path(), &args, &[]);
    assert_eq!((out.code, &out.json()["reward"]), (1, &Value::Null), "{}", out.stderr);
    assert!(
        out.stderr.contains("gate: the result carries no aggregate reward — cannot verify the 0 bar (--fail-under), failing."),
        "{}",
        out.stderr
    );
}

#[test]
fn the_oracle_runs_every_task_with_rollouts_and_transcripts() {
    let dir = tempfile::tempdir().unwrap();
    let world = world(dir.path());
    let transcripts = dir.path().join("transcripts");
    let out = run_world(
        dir.path(),
        &world,
        &[
            "--agent",
            "oracle",
            "--all-tasks",
            "--rollouts",
            "2",
            "--concurrency",
            "3",
            "-o",
            transcripts.to_str().unwrap(),
            "--no-file",
            "--fail-under",
            "0.9",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    assert_eq!(result["samples"], 4);
    assert_eq!(result["metrics"], serde_json::json!({"n": 4, "avg_reward": 1.0, "metrics": {"solved": 1.0}}));
    assert_eq!(result["passHatK"], serde_json::json!({"1": 1.0, "2": 1.0}));
    assert_eq!(result["world"]["variant"], serde_json::json!(["solve-101", "solve-103"]));
    let mut files: Vec<String> =
        std::fs::read_dir(&transcripts).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, ["solve-101.0.json", "solve-101.1.json", "solve-103.0.json", "solve-103.1.json"]);
    let transcript: Value = serde_json::from_str(&std::fs::read_to_string(transcripts.join("solve-103.1.json")).unwrap()).unwrap();
    assert_eq!((transcript["agent"].as_str(), transcript["passed"].as_bool()), (Some("oracle"), Some(true)));
    assert_eq!(transcript["calls"][0]["tool"], "solve_ticket");
    assert_eq!(transcript["calls"][0]["result"]["body"]["status"], "solved");
}

const COMMAND_AGENT: &str = r#"
import json, os, urllib.request, urllib.error

env = {k: v for k, v in os.environ.items() if k.startswith("GATEWAY_WORLD_")}

def call(url, token, body=None, method=None):
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, None

token = env["GATEWAY_WORLD_TOKEN"]
mcp = env["GATEWAY_WORLD_MCP_URL"]
_, hello = call(mcp, token, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
_, solved = call(mcp, token, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "solve_ticket", "arguments": {"id": 103}}})
status, ticket = call(env["GATEWAY_WORLD_API_BASE"] + "/tickets/103", token)
refused, _ = call(env["GATEWAY_WORLD_API_BASE"] + "/tickets/103", "wrong-token")
tools = json.load(open(env["GATEWAY_WORLD_TOOLS"]))
print(json.dumps({
    "names": sorted(env),
    "instructions": hello["result"].get("instructions"),
    "solved": solved["result"]["structuredContent"]["body"]["status"],
    "status": status, "ticket": ticket["status"], "refused": refused,
    "task": env["GATEWAY_WORLD_TASK"], "rollout": env["GATEWAY_WORLD_ROLLOUT"],
    "apiUrl": env["GATEWAY_WORLD_API_URL"].endswith("/s/" + env["GATEWAY_WORLD_SESSION"]),
    "tools": sorted(t["name"] for t in tools)[:3],
}))
"#;

#[test]
fn an_agent_command_reaches_its_session_over_rest_and_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let world = world(dir.path());
    std::fs::write(dir.path().join("agent_cmd.py"), COMMAND_AGENT).unwrap();
    let transcripts = dir.path().join("tx");
    let out = run_world(
        dir.path(),
        &world,
        &["--variant", "solve-103", "--agent-cmd", "python3 agent_cmd.py", "--no-file", "-o", transcripts.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    assert_eq!((result["reward"].as_f64(), &result["agentError"]), (Some(1.0), &Value::Null), "{}", out.stderr);
    let transcript: Value = serde_json::from_str(&std::fs::read_to_string(transcripts.join("solve-103.0.json")).unwrap()).unwrap();
    let said: Value = serde_json::from_str(transcript["completion"].as_str().unwrap()).unwrap();
    assert_eq!(
        said,
        serde_json::json!({
            "names": ["GATEWAY_WORLD_API_BASE", "GATEWAY_WORLD_API_URL", "GATEWAY_WORLD_INSTRUCTION", "GATEWAY_WORLD_MCP_URL",
                      "GATEWAY_WORLD_ROLLOUT", "GATEWAY_WORLD_SESSION", "GATEWAY_WORLD_TASK", "GATEWAY_WORLD_TOKEN", "GATEWAY_WORLD_TOOLS"],
            "instructions": "Ticket 103 is fixed: solve it.",
            "solved": "solved", "status": 200, "ticket": "solved", "refused": 401,
            "task": "solve-103", "rollout": "0", "apiUrl": true,
            "tools": ["create_ticket", "customer_tickets", "delete_ticket"],
        })
    );
    // The session's data plane requests are its call log.
    let requests: Vec<&str> = transcript["calls"].as_array().unwrap().iter().filter_map(|c| c["request"].as_str()).collect();
    assert_eq!(requests, ["POST /mcp", "POST /mcp", "GET /api/v2/tickets/103", "GET /api/v2/tickets/103"], "{transcript}");
    // Each with what it sent and what it was answered.
    let calls = transcript["calls"].as_array().unwrap();
    assert!(calls[1]["body"].as_str().unwrap().contains("tools/call"), "{transcript}");
    assert!(calls[2]["answer"].as_str().unwrap().contains("\"solved\""), "{transcript}");
    assert_eq!(calls[3]["status"], 401, "{transcript}");

    // A failing command is the agent's error, and the rollout errored: exit 1.
    let out = gateway(dir.path(), &["worlds", "run", "--path", world.to_str().unwrap(), "--agent-cmd", "exit 3", "--no-file"], &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.json()["agentError"].as_str().unwrap().contains("failed (exit status: 3)"), "{}", out.stdout);
}

/// What the fake model server saw.
#[derive(Default)]
struct Seen {
    requests: Mutex<Vec<(Option<String>, Value)>>,
    calls: AtomicUsize,
    refusals_103: AtomicUsize,
}

/// A scripted model: the first request of all is a 503 (the runner retries); a
/// request ending in a tool answer gets a final message; otherwise it calls
/// `solve_ticket` on the ticket its instruction names — except the first time it
/// is asked about ticket 103, when it gives up without calling anything.
async fn chat(
    axum::extract::State(seen): axum::extract::State<Arc<Seen>>,
    headers: axum::http::HeaderMap,
    body: String,
) -> (axum::http::StatusCode, String) {
    let request: Value = serde_json::from_str(&body).unwrap();
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    seen.requests.lock().unwrap().push((auth, request.clone()));
    if seen.calls.fetch_add(1, Ordering::SeqCst) == 0 {
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, r#"{"error": "warming up"}"#.into());
    }
    let messages = request["messages"].as_array().unwrap();
    let usage = serde_json::json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
    let last = messages.last().unwrap();
    let answer = |message: Value| {
        serde_json::json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage}).to_string()
    };
    if last["role"] == "tool" {
        return (axum::http::StatusCode::OK, answer(serde_json::json!({"role": "assistant", "content": "done"})));
    }
    let instruction = messages.iter().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap();
    let id: u32 = regex::Regex::new(r"Ticket (\d+)").unwrap().captures(instruction).unwrap()[1].parse().unwrap();
    if id == 103 && seen.refusals_103.fetch_add(1, Ordering::SeqCst) == 0 {
        return (axum::http::StatusCode::OK, answer(serde_json::json!({"role": "assistant", "content": "I cannot do that."})));
    }
    let call = serde_json::json!({"id": format!("call_{id}"), "type": "function",
        "function": {"name": "solve_ticket", "arguments": format!("{{\"id\": {id}}}")}});
    (axum::http::StatusCode::OK, answer(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [call]})))
}

#[test]
fn the_builtin_model_runner_plays_a_scripted_model_over_parallel_rollouts() {
    let seen = Arc::new(Seen::default());
    let (_runtime, addr) = serve(axum::Router::new().route("/v1/chat/completions", axum::routing::post(chat)).with_state(seen.clone()));
    let dir = tempfile::tempdir().unwrap();
    let world = world(dir.path());
    let transcripts = dir.path().join("tx");
    let base = format!("http://{addr}/v1");
    let out = run_world(
        dir.path(),
        &world,
        &[
            "--agent",
            "builtin",
            "--all-tasks",
            "-r",
            "2",
            "-c",
            "2",
            "--base-url",
            &base,
            "--model",
            "fake-model",
            "--no-file",
            "-o",
            transcripts.to_str().unwrap(),
        ],
        &[("OPENAI_API_KEY", "sk-fake")],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    assert_eq!(result["metrics"]["avg_reward"].as_f64(), Some(0.75), "{result}");
    // solve-101 passes both rollouts, solve-103 one of two.
    assert_eq!(result["passHatK"], serde_json::json!({"1": 0.75, "2": 0.5}));
    assert_eq!(result["tasks"][1]["passed"], 1);

    let requests = seen.requests.lock().unwrap();
    assert_eq!(requests.len(), 1 + 2 * 2 + 1 + 2, "one 503, two turns per passing rollout, one for the refusal");
    for (auth, request) in requests.iter() {
        assert_eq!(auth.as_deref(), Some("Bearer sk-fake"), "the key comes from OPENAI_API_KEY with --base-url");
        assert_eq!(request["model"], "fake-model");
        let tool = request["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "solve_ticket").unwrap();
        assert_eq!(tool["function"]["parameters"]["required"], serde_json::json!(["id"]));
    }
    let transcript: Value = serde_json::from_str(&std::fs::read_to_string(transcripts.join("solve-101.0.json")).unwrap()).unwrap();
    let turn = &transcript["agentTranscript"];
    let roles: Vec<&str> = turn["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
    assert_eq!((turn["turns"].as_i64(), turn["usage"]["total_tokens"].as_i64()), (Some(2), Some(30)));
    let answered: Value = serde_json::from_str(turn["messages"][3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(answered["body"]["status"], "solved");
    assert_eq!((transcript["completion"].as_str(), transcript["reward"].as_f64()), (Some("done"), Some(1.0)));
}

/// A judge that checks it was shown the solving call and scores the one criterion.
async fn judge(body: String) -> String {
    let request: Value = serde_json::from_str(&body).unwrap();
    let brief: Value = serde_json::from_str(request["messages"][1]["content"].as_str().unwrap()).unwrap();
    let solved = brief["calls"].as_array().unwrap().iter().any(|c| c["tool"] == "solve_ticket")
        && brief["finalState"]["tickets"]["101"]["status"] == "solved";
    let verdict = json!({"rewards": {"solved": if solved { 1 } else { 0 }}, "reason": "looked at the calls"});
    json!({"model": request["model"], "choices": [{"message": {"role": "assistant", "content": verdict.to_string()}}]}).to_string()
}

#[test]
fn a_rubric_task_is_judged_by_the_configured_judge() {
    let (_runtime, addr) = serve(axum::Router::new().route("/v1/chat/completions", axum::routing::post(judge)));
    let dir = tempfile::tempdir().unwrap();
    let world = world(dir.path());
    let spec = r#"{"name": "polite-101", "instruction": "Ticket 101 is fixed: solve it.",
        "grader": {"kind": "rubric", "rubric": "The ticket is solved.", "criteria": [{"id": "solved", "description": "ticket 101 is solved"}]},
        "metadata": {"solution": [{"tool": "solve_ticket", "args": {"id": 101}}]}}"#;
    std::fs::write(world.join("tasks/polite-101.json"), spec).unwrap();
    let base = format!("http://{addr}/v1");
    let args = ["worlds", "run", "--path", world.to_str().unwrap(), "--variant", "polite-101", "--agent", "oracle", "--no-file"];
    let out = gateway(dir.path(), &args, &[("GATEWAY_JUDGE_BASE_URL", &base), ("GATEWAY_JUDGE_MODEL", "judge-1")]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    assert_eq!((result["reward"].as_f64(), &result["rewards"]), (Some(1.0), &json!({"solved": 1.0})), "{result}");
    // With no judge configured a rubric cannot be graded: the original's grader failure, exit 1.
    let out = gateway(dir.path(), &args, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stderr.contains("rubric grading needs a judge"), "{}", out.stderr);
}

#[test]
fn harness_failures_are_errored_samples_not_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let world = world(dir.path());
    let path = world.to_str().unwrap();
    // Nothing listens on port 9 (discard): the built-in runner's model is unreachable.
    let unreachable = [
        "worlds",
        "run",
        "--path",
        path,
        "--agent",
        "builtin",
        "--all-tasks",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--no-file",
    ];
    let command = ["worlds", "run", "--path", path, "--all-tasks", "-r", "2", "--agent-cmd", "exit 3", "--no-file"];
    for args in [&unreachable[..], &command[..]] {
        let out = gateway(dir.path(), args, &[("OPENAI_API_KEY", "sk-fake")]);
        assert_eq!(out.code, 1, "{args:?}: {}\n{}", out.stdout, out.stderr);
        let result = out.json();
        let samples = result["samples"].as_i64().unwrap();
        assert_eq!(result["errored"].as_i64(), Some(samples), "every rollout errored: {result}");
        assert_eq!(result["metrics"]["avg_reward"], Value::Null, "no zeros in the mean: {result}");
        assert_eq!(result["passHatK"], serde_json::json!({}), "no pass rate from errored rollouts: {result}");
        for task in result["tasks"].as_array().unwrap() {
            assert!(task["rewards"].as_array().unwrap().iter().all(Value::is_null), "{task}");
            assert_eq!(task["errored"], task["rollouts"], "{task}");
        }
        assert!(out.stderr.contains(&format!("error: {samples} rollout(s) errored")), "{}", out.stderr);
        // With --allow-errors: exit 0, the same result.
        let out = gateway(dir.path(), &[args, &["--allow-errors"]].concat(), &[("OPENAI_API_KEY", "sk-fake")]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.json()["errored"].as_i64(), Some(samples));
    }
    // A gate over errored rollouts alone has nothing to measure: it fails (exit 1), and
    // --allow-errors does not turn that into a pass.
    let out = gateway(dir.path(), &[&command[..], &["--allow-errors", "--fail-under", "0"]].concat(), &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("cannot verify the 0 bar"), "{}", out.stderr);
}

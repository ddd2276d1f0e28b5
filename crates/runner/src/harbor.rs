//! Harbor worlds (the original's `benchmark_hub.harbor_adapter`): a jobs directory
//! left by the first-party `harbor` engine, read and filed as ONE version-pinned
//! evaluation (`bench harvest-harbor`, `bench eval --kind harbor`), and the engine
//! itself started over a world's task dirs when harbor (and, for its default
//! sandbox, Docker) are installed.
//!
//! The jobs directory is read as the original reads it: a trial is any directory
//! holding a `result.json` (harbor's `TrialResult`) beside a `verifier/` directory,
//! found at any depth (hidden directories skipped), in path order. A trial's rewards
//! are `result.json`'s `verifier_result.rewards`, else `verifier/reward.json`; its
//! reward is the `reward` member, else the first numeric one, else null (an ungraded
//! trial stays null — never a 0); every other numeric member is a named sub-reward.
//!
//! It does not run agents or worlds itself (harbor does, in its sandboxes) and does
//! not export OTLP traces (`richTraces` is always 0 here).

use crate::error::RunnerError;
use gateway_hub_client::client::truthy;
use gateway_hub_client::evals_client::{EvalsClient, NewEvaluation};
use gateway_world::json::{self, object, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The harbor agent the original runs by default.
pub const DEFAULT_HARBOR_AGENT: &str = "mini-swe-agent";
/// Variables passed into the agent sandbox when set (installed agents call their models themselves).
pub const AGENT_ENV_PASSTHROUGH: [&str; 4] = ["OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_HOST"];

fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    json::parse_loads(&text).ok().map(|p| p.value)
}

/// `os.path.join` of a directory given as text and a name.
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() || dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The trial directories of a jobs directory, sorted as path text (see the module docs).
pub fn find_trials(job_dir: &str) -> Vec<String> {
    fn walk(dir: &str, out: &mut Vec<String>) {
        let result = join(dir, "result.json");
        if Path::new(&result).exists() && Path::new(&join(dir, "verifier")).is_dir() {
            out.push(dir.to_string());
        }
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // `**` skips hidden names; a linked directory is not followed (no loops).
            if name.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            walk(&join(dir, &name), out);
        }
    }
    let mut out = Vec::new();
    if Path::new(job_dir).is_dir() {
        walk(job_dir, &mut out);
    }
    out.sort();
    out
}

fn numeric(value: &Value) -> Option<f64> {
    match value {
        Value::Int(n) => Some(*n as f64),
        Value::Float(x) => Some(*x),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// Every numeric reward of a trial, in the order written (empty: ungraded).
pub fn trial_rewards(trial_dir: &str) -> Vec<(String, f64)> {
    let results = read_json(Path::new(&join(trial_dir, "result.json"))).unwrap_or_default();
    let recorded = results.get("verifier_result").filter(|v| truthy(v)).and_then(|v| v.get("rewards")).filter(|v| truthy(v)).cloned();
    let rewards = recorded.or_else(|| read_json(&Path::new(trial_dir).join("verifier").join("reward.json")));
    match rewards {
        Some(Value::Object(fields)) => fields.iter().filter_map(|(k, v)| numeric(v).map(|x| (k.clone(), x))).collect(),
        Some(value) => numeric(&value).map(|x| vec![("reward".to_string(), x)]).unwrap_or_default(),
        None => Vec::new(),
    }
}

/// The headline reward: `reward`, else the first, else None (nothing was graded).
pub fn scalar_reward(rewards: &[(String, f64)]) -> Option<f64> {
    rewards.iter().find(|(k, _)| k == "reward").or_else(|| rewards.first()).map(|(_, x)| *x)
}

fn basename(dir: &str) -> String {
    dir.trim_end_matches('/').rsplit('/').next().unwrap_or_default().to_string()
}

/// One eval sample per trial: `exampleId` = the task name (after any `org/`),
/// `rolloutIndex` = the trial's occurrence of its task, compact `info`.
pub fn samples_from_job_dir(job_dir: &str) -> Vec<Map> {
    let mut seen: BTreeMap<String, i64> = BTreeMap::new();
    let mut samples = Vec::new();
    for trial_dir in find_trials(job_dir) {
        let results = read_json(Path::new(&join(&trial_dir, "result.json"))).unwrap_or_default();
        let named = results.get("task_name").and_then(Value::as_str).unwrap_or_default();
        let task = Some(named.rsplit('/').next().unwrap_or_default())
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| basename(&trial_dir));
        let index = seen.entry(task.clone()).or_insert(0);
        let rollout = *index;
        *index += 1;
        let rewards = trial_rewards(&trial_dir);
        let reward = scalar_reward(&rewards);
        let member = |value: Option<&Value>, key: &str| value.filter(|v| truthy(v)).and_then(|v| v.get(key)).cloned().unwrap_or_default();
        let agent_info = results.get("agent_info");
        let model = agent_info.filter(|v| truthy(v)).and_then(|a| a.get("model_info"));
        let mut sample = Map::default();
        sample.insert("exampleId".into(), Value::str(&task));
        sample.insert("task".into(), Value::str(&task));
        sample.insert("rolloutIndex".into(), Value::Int(rollout));
        let reward_value = reward.map(Value::Float).unwrap_or_default();
        sample.insert("reward".into(), reward_value.clone());
        sample.insert("score".into(), reward_value);
        sample.insert("correct".into(), reward.map(|r| Value::Bool(r >= 1.0)).unwrap_or_default());
        sample.insert(
            "rewards".into(),
            Value::Object(rewards.iter().filter(|(k, _)| k != "reward").map(|(k, x)| (k.clone(), Value::Float(*x))).collect()),
        );
        sample.insert(
            "info".into(),
            object([
                ("trialName", Value::Str(basename(&trial_dir))),
                ("agent", member(agent_info, "name")),
                ("model", member(model, "name")),
                ("costUsd", member(results.get("agent_result"), "cost_usd")),
                ("startedAt", results.get("started_at").cloned().unwrap_or_default()),
                ("finishedAt", results.get("finished_at").cloned().unwrap_or_default()),
            ]),
        );
        samples.push(sample);
    }
    samples
}

fn mean(values: &[f64]) -> Value {
    if values.is_empty() {
        Value::Null
    } else {
        Value::Float(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// `{n, avg_reward, metrics: {name: mean}}` over samples (nulls left out of each mean).
pub fn metrics_from_samples(samples: &[Map]) -> Value {
    let rewards: Vec<f64> = samples.iter().filter_map(|s| s.get("reward").and_then(numeric_only)).collect();
    let mut names: Vec<String> = Vec::new();
    let mut by_metric: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for sample in samples {
        if let Some(Value::Object(named)) = sample.get("rewards") {
            for (name, value) in named {
                if let Some(x) = numeric_only(value) {
                    if !by_metric.contains_key(name) {
                        names.push(name.clone());
                    }
                    by_metric.entry(name.clone()).or_default().push(x);
                }
            }
        }
    }
    object([
        ("n", Value::Int(samples.len() as i64)),
        ("avg_reward", mean(&rewards)),
        ("metrics", Value::Object(names.iter().map(|n| (n.clone(), mean(&by_metric[n]))).collect())),
    ])
}

fn numeric_only(value: &Value) -> Option<f64> {
    match value {
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => numeric(value),
        _ => None,
    }
}

/// How a harvest is filed.
#[derive(Debug, Clone, Default)]
pub struct Harvest {
    /// The model label the job ran with.
    pub model: String,
    /// `--run-id`: the run the evaluation is linked to.
    pub run_id: Option<String>,
    /// `--rollouts-per-example`.
    pub rollouts_per_example: i64,
}

/// Harvest a completed jobs directory into an evaluation pinned to `version_id`:
/// create, samples, finalize with the metrics. `{evaluationId, samples, metrics, richTraces}`.
pub fn harvest_job_dir(job_dir: &str, version_id: &str, client: &EvalsClient, harvest: &Harvest) -> Result<Value, RunnerError> {
    let samples = samples_from_job_dir(job_dir);
    if samples.is_empty() {
        return Err(RunnerError::Harvest(format!("no harbor trials found under {job_dir}")));
    }
    let metrics = metrics_from_samples(&samples);
    let examples: BTreeSet<String> =
        samples.iter().filter_map(|s| s.get("exampleId").and_then(Value::as_str).map(str::to_string)).collect();
    let options = NewEvaluation {
        model: Some(harvest.model.clone()),
        run_id: harvest.run_id.clone(),
        num_examples: Some(examples.len() as i64),
        rollouts_per_example: Some(harvest.rollouts_per_example),
        metadata: None,
    };
    let evaluation_id = client.create_evaluation(version_id, &options)?;
    let inserted = client.push_samples(&evaluation_id, samples)?;
    client.finalize_evaluation(&evaluation_id, "COMPLETED", Some(metrics.clone()))?;
    if std::env::var_os("GATEWAY_OTLP_ENDPOINT").is_some_and(|e| !e.is_empty()) {
        eprintln!("note: GATEWAY_OTLP_ENDPOINT is set, but this client exports no OTLP trial traces (richTraces: 0)");
    }
    Ok(object([
        ("evaluationId", Value::Str(evaluation_id)),
        ("samples", Value::Int(inserted)),
        ("metrics", metrics),
        ("richTraces", Value::Int(0)),
    ]))
}

/// The kind of world a directory holds, as the original's `detect_env_kind`: `api`,
/// `mock-tools` (a root gateway-env.toml, schema worlds included), `harbor` (task
/// dirs with a task.toml), `verifiers-v1`, else `verifiers`.
pub fn detect_env_kind(src: &Path) -> &'static str {
    if src.join("gateway-api-world.toml").is_file() {
        return "api";
    }
    if src.join("gateway-env.toml").is_file() {
        return "mock-tools";
    }
    if has_task_dirs(&src.join("tasks")) || has_task_dirs(src) {
        return "harbor";
    }
    if crate::verifiers::is_verifiers_v1(src) {
        return "verifiers-v1";
    }
    "verifiers"
}

/// Whether any non-hidden child of `dir` holds a `task.toml`.
fn has_task_dirs(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| !entry.file_name().to_string_lossy().starts_with('.') && entry.path().join("task.toml").exists())
}

/// The directory whose children are task dirs: `<src>/tasks` when it has any, else `<src>`.
pub fn tasks_root(src: &Path) -> PathBuf {
    let tasks = src.join("tasks");
    if has_task_dirs(&tasks) {
        tasks
    } else {
        src.to_path_buf()
    }
}

/// A Claude-style MCP config bundled with the world: `<src>/mcp.json`, else `<src>/tasks/mcp.json`.
pub fn find_mcp_config(src: &Path) -> Option<PathBuf> {
    [src.join("mcp.json"), src.join("tasks").join("mcp.json")].into_iter().find(|p| p.is_file())
}

/// mini-swe-agent speaks litellm ids: an OpenRouter prefix unless given; other agents verbatim.
pub fn resolve_harbor_model(model: &str, agent: &str) -> String {
    if agent == DEFAULT_HARBOR_AGENT && !model.starts_with("openrouter/") {
        format!("openrouter/{model}")
    } else {
        model.to_string()
    }
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| {
        use std::os::unix::fs::PermissionsExt as _;
        candidate.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The sandbox harbor runs trials in: `HARBOR_SANDBOX_ENV`, else docker.
pub fn sandbox() -> String {
    std::env::var("HARBOR_SANDBOX_ENV").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "docker".into())
}

/// The harbor CLI (on PATH, else Pier's tool venv) and, for the docker sandbox, a
/// reachable Docker — or a refusal naming everything that is missing.
pub fn harbor_ready() -> Result<PathBuf, RunnerError> {
    let mut missing = Vec::new();
    let pier = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share/uv/tools/datacurve-pier/bin/harbor"));
    let harbor = on_path("harbor").or_else(|| pier.filter(|p| p.exists()));
    if harbor.is_none() {
        missing.push("the harbor CLI is not installed — `uv tool install harbor` (or install datacurve-pier)".to_string());
    }
    if sandbox() == "docker" {
        match on_path("docker") {
            None => missing.push("Docker is not installed (harbor's default sandbox; HARBOR_SANDBOX_ENV names another)".to_string()),
            Some(docker) => {
                let up = Command::new(docker)
                    .args(["info", "--format", "{{.ServerVersion}}"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                if !up.is_ok_and(|s| s.success()) {
                    missing.push("the Docker daemon is not reachable (`docker info` failed)".to_string());
                }
            }
        }
    }
    match harbor {
        Some(harbor) if missing.is_empty() => Ok(harbor),
        _ => Err(RunnerError::Missing(format!("harbor worlds run under harbor, and here {}.", missing.join("; ")))),
    }
}

/// A harbor job to run.
#[derive(Debug, Clone)]
pub struct HarborJob {
    /// The directory whose children are task dirs.
    pub tasks_dir: PathBuf,
    /// Where harbor writes the job.
    pub jobs_dir: PathBuf,
    /// The model id as harbor takes it.
    pub model: String,
    /// The harbor agent.
    pub agent: String,
    /// Tasks to run (-1: all).
    pub num_examples: i64,
    /// Attempts per task.
    pub rollouts_per_example: i64,
    /// Variables for the agent sandbox.
    pub extra_env: Vec<(String, String)>,
    /// `--mcp-config`.
    pub mcp_config: Option<PathBuf>,
}

/// The `harbor run` arguments for `job` (values of `--ae` included).
pub fn harbor_args(job: &HarborJob) -> Vec<String> {
    let concurrency = std::env::var("HARBOR_N_CONCURRENT").ok().and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(4);
    let mut args: Vec<String> = vec![
        "run".into(),
        "-p".into(),
        job.tasks_dir.display().to_string(),
        "-a".into(),
        job.agent.clone(),
        "-m".into(),
        job.model.clone(),
        "-e".into(),
        sandbox(),
        "-o".into(),
        job.jobs_dir.display().to_string(),
        "-k".into(),
        job.rollouts_per_example.max(1).to_string(),
        "-n".into(),
        concurrency.max(1).to_string(),
        "-y".into(),
        "-q".into(),
    ];
    if job.num_examples > 0 {
        args.extend(["-l".into(), job.num_examples.to_string()]);
    }
    if let Some(config) = &job.mcp_config {
        args.extend(["--mcp-config".into(), config.display().to_string()]);
    }
    let mut pairs: Vec<(String, String)> =
        AGENT_ENV_PASSTHROUGH.iter().filter_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()).map(|v| (k.to_string(), v))).collect();
    for (key, value) in &job.extra_env {
        match pairs.iter_mut().find(|(k, _)| k == key) {
            Some(pair) => pair.1 = value.clone(),
            None => pairs.push((key.clone(), value.clone())),
        }
    }
    for (key, value) in pairs.into_iter().filter(|(_, v)| !v.is_empty()) {
        args.extend(["--ae".into(), format!("{key}={value}")]);
    }
    args
}

/// Run harbor over the task dirs (harbor's own output to stderr; a non-zero exit is
/// said and tolerated: the trials that ran are harvested). Refused when harbor or
/// Docker is missing.
pub fn run_harbor_job(job: &HarborJob, note: &mut dyn FnMut(&str)) -> Result<(), RunnerError> {
    let harbor = harbor_ready()?;
    if sandbox() == "docker" {
        // Networks leaked by crashed earlier trials would shrink the address pools.
        let _ = Command::new("docker")
            .args(["network", "prune", "-f"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let args = harbor_args(job);
    let mut shown = vec![harbor.display().to_string()];
    let mut iter = args.iter().peekable();
    while let Some(arg) = iter.next() {
        if arg == "--ae" {
            let pair = iter.next().map(String::as_str).unwrap_or_default();
            shown.push(format!("--ae {}=***", pair.split('=').next().unwrap_or_default()));
        } else {
            shown.push(arg.clone());
        }
    }
    note(&format!("[harbor] {}", shown.join(" ")));
    let status = Command::new(&harbor)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .map_err(|e| RunnerError::Missing(format!("{} could not start: {e}", harbor.display())))?;
    if !status.success() {
        note(&format!("[harbor] exited {} (harvesting whatever ran)", status.code().unwrap_or(-1)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewards_and_their_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let trial = dir.path().join("t__1");
        std::fs::create_dir_all(trial.join("verifier")).unwrap();
        let t = trial.to_str().unwrap();
        assert!(trial_rewards(t).is_empty(), "no result, no reward file: ungraded");
        std::fs::write(trial.join("verifier/reward.json"), r#"{"style": 0.5, "reward": 1, "note": "x", "ok": true}"#).unwrap();
        assert_eq!(trial_rewards(t), vec![("style".into(), 0.5), ("reward".into(), 1.0), ("ok".into(), 1.0)]);
        assert_eq!(scalar_reward(&trial_rewards(t)), Some(1.0));
        std::fs::write(trial.join("result.json"), r#"{"verifier_result": {"rewards": {}}}"#).unwrap();
        assert_eq!(trial_rewards(t).len(), 3, "empty recorded rewards fall back to reward.json");
        std::fs::write(trial.join("result.json"), r#"{"verifier_result": {"rewards": {"a": 0.25, "b": 0.75}}}"#).unwrap();
        assert_eq!(scalar_reward(&trial_rewards(t)), Some(0.25), "no `reward`: the first");
        std::fs::write(trial.join("result.json"), r#"{"verifier_result": {"rewards": 0.5}}"#).unwrap();
        assert_eq!(trial_rewards(t), vec![("reward".into(), 0.5)]);
        assert_eq!(scalar_reward(&[]), None);
    }

    #[test]
    fn trials_are_found_at_any_depth_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        for trial in ["job/a-b", "job/a/b", "job/B", "job/.hidden/t", "other/t"] {
            let path = dir.path().join(trial);
            std::fs::create_dir_all(path.join("verifier")).unwrap();
            std::fs::write(path.join("result.json"), "{}").unwrap();
        }
        std::fs::write(dir.path().join("job/result.json"), "{}").unwrap();
        std::fs::create_dir_all(dir.path().join("job/no-verifier")).unwrap();
        std::fs::write(dir.path().join("job/no-verifier/result.json"), "{}").unwrap();
        let root = dir.path().to_str().unwrap().to_string();
        let found: Vec<String> = find_trials(&format!("{root}/job")).into_iter().map(|t| t[root.len()..].to_string()).collect();
        assert_eq!(found, ["/job/B", "/job/a-b", "/job/a/b"]);
        assert!(find_trials(&format!("{root}/nowhere")).is_empty());
    }

    #[test]
    fn metrics_keep_nulls_out_of_means() {
        let sample = |reward: Value, rewards: Value| match object([("reward", reward), ("rewards", rewards)]) {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let samples = [
            sample(Value::Float(1.0), json::parse(r#"{"style": 0.5}"#).unwrap().value),
            sample(Value::Null, json::parse(r#"{}"#).unwrap().value),
            sample(Value::Float(0.0), json::parse(r#"{"style": 0.0, "correct": 1.0}"#).unwrap().value),
        ];
        assert_eq!(json::canonical(&metrics_from_samples(&samples)), r#"{"avg_reward":0.5,"metrics":{"correct":1.0,"style":0.25},"n":3}"#);
        assert_eq!(json::canonical(&metrics_from_samples(&[])), r#"{"avg_reward":null,"metrics":{},"n":0}"#);
    }

    #[test]
    fn kinds_and_models() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect_env_kind(dir.path()), "verifiers");
        std::fs::create_dir_all(dir.path().join("tasks/t1")).unwrap();
        std::fs::write(dir.path().join("tasks/t1/task.toml"), "").unwrap();
        assert_eq!(detect_env_kind(dir.path()), "harbor");
        assert_eq!(tasks_root(dir.path()), dir.path().join("tasks"));
        std::fs::write(dir.path().join("gateway-env.toml"), "").unwrap();
        assert_eq!(detect_env_kind(dir.path()), "mock-tools");
        assert_eq!(resolve_harbor_model("openai/gpt-4o", "mini-swe-agent"), "openrouter/openai/gpt-4o");
        assert_eq!(resolve_harbor_model("openrouter/x", "mini-swe-agent"), "openrouter/x");
        assert_eq!(resolve_harbor_model("claude-x", "claude-code"), "claude-x");
    }
}

//! `gateway bench eval` and `gateway bench harvest-harbor` as flows (the original's
//! `bench_eval` and `bench_harvest_harbor`): which world kind runs how (harbor task
//! trees under harbor, verifiers packages in their own rollout loop; mock-tools and
//! verifiers v1 refused as the original refuses them), where the jobs go, what is
//! filed and pinned to which version, and what the gate is told. Notes meant for
//! stderr as they happen go through `note`.
//!
//! Argument parsing, printing and exit codes are the CLI's; the harvest and the
//! engines are [`crate::harbor`] and [`crate::verifiers`].

use crate::error::RunnerError;
use crate::gate::Gate;
use crate::harbor::{self, HarborJob, Harvest};
use crate::report::Report;
use crate::verifiers::{self, VerifiersEval};
use gateway_hub_client::client::Client;
use gateway_hub_client::evals_client::EvalsClient;
use gateway_hub_client::working_copy::{local_tree_state, meta_str};
use gateway_world::json::{object, Map, Value};
use std::path::{Path, PathBuf};

/// The original's refusal of a mock-tools world (a root gateway-env.toml).
pub const MOCK_TOOLS: &str =
    "this container is a mock-tools world (gateway-env.toml) — `gateway bench eval` runs the verifiers and harbor world types only. \
Run it locally with the environment runtime (`import gatewaysdk.environment as gwenv; env = gwenv.init(<slug>)`), \
or from the platform, whose hosted runner serves mock-tools worlds.";

/// The original's refusal of a verifiers v1 Taskset package.
pub const VERIFIERS_V1: &str =
    "this container is a verifiers v1 Taskset package (verifiers.v1 namespace) — `gateway bench eval` currently only runs \
the legacy v0 in-process path locally. Run it from the platform (its hosted runner handles the verifiers-v1 world type, including \
Anthropic-dialect endpoints), or pin the env to verifiers<1.0.0 and expose a v0 load_environment() for local eval.";

/// `slug@ref` split as the original splits it (a bare slug is `@latest`).
pub fn split_ref(slug: &str) -> (String, String) {
    match slug.rsplit_once('@') {
        Some((slug, reference)) => (slug.to_string(), reference.to_string()),
        None => (slug.to_string(), "latest".to_string()),
    }
}

fn version_of(resolved: &Value) -> Result<String, RunnerError> {
    resolved
        .get("versionId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| RunnerError::Hub(gateway_hub_client::ClientError::BadAnswer("resolve-version answered without a versionId".into())))
}

/// `gateway bench harvest-harbor`.
#[derive(Debug, Clone)]
pub struct HarvestRequest {
    /// The jobs directory.
    pub jobs_dir: String,
    /// `slug[@ref]` the evaluation pins to.
    pub slug: String,
    /// `--model`.
    pub model: String,
    /// `--rollouts-per-example`.
    pub rollouts: i64,
    /// `--run-id`.
    pub run_id: Option<String>,
    /// `--host`.
    pub host: Option<String>,
}

/// Resolve the version, then harvest the jobs directory into it.
pub fn harvest_harbor(request: &HarvestRequest) -> Result<Value, RunnerError> {
    let bench = Client::from_env(request.host.as_deref())?;
    let (slug, reference) = split_ref(&request.slug);
    let version_id = version_of(&bench.resolve_version(&slug, &reference)?)?;
    let client = EvalsClient::from_env(request.host.as_deref())?;
    let harvest = Harvest { model: request.model.clone(), run_id: request.run_id.clone(), rollouts_per_example: request.rollouts };
    harbor::harvest_job_dir(&request.jobs_dir, &version_id, &client, &harvest)
}

/// `gateway bench eval`.
#[derive(Debug, Clone)]
pub struct EvalRequest {
    /// `SLUG[@ref]`.
    pub slug: Option<String>,
    /// `--path`.
    pub path: Option<PathBuf>,
    /// `--model`.
    pub model: String,
    /// `--env-id`.
    pub env_id: Option<String>,
    /// `--kind`.
    pub kind: EvalKind,
    /// `--agent` (harbor kind).
    pub agent: String,
    /// `--num-examples`.
    pub num_examples: i64,
    /// `--rollouts-per-example`.
    pub rollouts: i64,
    /// `--save-results`.
    pub save_results: bool,
    /// `--output-dir`.
    pub output_dir: PathBuf,
    /// `--resume`.
    pub resume: Option<PathBuf>,
    /// `--fail-under`.
    pub fail_under: Option<f64>,
    /// `--host`.
    pub host: Option<String>,
}

fn gate(request: &EvalRequest, title: String, facts: Vec<(String, String)>) -> Gate {
    Gate { fail_under: request.fail_under, bar_source: "--fail-under".into(), title, facts, baseline: None }
}

fn harbor_job(request: &EvalRequest, src: &Path, jobs_dir: PathBuf, api_key: &str) -> HarborJob {
    HarborJob {
        tasks_dir: harbor::tasks_root(src),
        jobs_dir,
        model: harbor::resolve_harbor_model(&request.model, &request.agent),
        agent: request.agent.clone(),
        num_examples: request.num_examples,
        rollouts_per_example: request.rollouts,
        extra_env: vec![("OPENROUTER_API_KEY".into(), api_key.into())],
        mcp_config: harbor::find_mcp_config(src),
    }
}

/// What `bench eval` runs the environment as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum EvalKind {
    /// Pull the version and detect its kind.
    #[default]
    Auto,
    /// A verifiers (v0) package: its own rollout loop.
    Verifiers,
    /// A verifiers v1 package (refused: not supported, as the original).
    VerifiersV1,
    /// A harbor task tree, run under harbor.
    Harbor,
}

impl EvalKind {
    /// Every kind, in the original's order.
    pub const ALL: [EvalKind; 4] = [EvalKind::Auto, EvalKind::Verifiers, EvalKind::VerifiersV1, EvalKind::Harbor];

    /// The original's spelling (`auto`, `verifiers`, `verifiers-v1`, `harbor`).
    pub fn as_str(self) -> &'static str {
        match self {
            EvalKind::Auto => "auto",
            EvalKind::Verifiers => "verifiers",
            EvalKind::VerifiersV1 => "verifiers-v1",
            EvalKind::Harbor => "harbor",
        }
    }
}

/// Run a local eval and file it pinned to its version (see the module docs).
pub fn bench_eval(request: &EvalRequest, note: &mut dyn FnMut(&str)) -> Result<Report, RunnerError> {
    if request.slug.is_some() == request.path.is_some() {
        return Err(RunnerError::Config("pass exactly one of SLUG or --path".into()));
    }
    let api_key = std::env::var("OPENROUTER_API_KEY")
        .ok()
        .filter(|k| !k.is_empty())
        .ok_or_else(|| RunnerError::Config("OPENROUTER_API_KEY is required for `bench eval`.".into()))?;
    let kind = request.kind;
    if kind == EvalKind::VerifiersV1 {
        return Err(RunnerError::World(VERIFIERS_V1.into()));
    }
    if let Some(path) = &request.path {
        return eval_path(request, path, &api_key, note);
    }
    let bench = Client::from_env(request.host.as_deref())?;
    let (slug, reference) = split_ref(request.slug.as_deref().unwrap_or_default());
    let version_id = version_of(&bench.resolve_version(&slug, &reference)?)?;
    let scratch = tempfile::Builder::new()
        .prefix("gateway-bench-eval-")
        .tempdir_in(gateway_world::data::tempfile_dir::process_root())
        .map_err(|e| RunnerError::io(Path::new("tmp"), e))?;
    let src = scratch.path().join("src");
    let resolved_kind = if matches!(kind, EvalKind::Auto | EvalKind::Harbor) {
        bench.pull(&format!("{slug}@{reference}"), Some(&src))?;
        if kind == EvalKind::Auto {
            harbor::detect_env_kind(&src)
        } else {
            "harbor"
        }
    } else {
        "verifiers"
    };
    match resolved_kind {
        "mock-tools" => return Err(RunnerError::World(MOCK_TOOLS.into())),
        "verifiers-v1" => return Err(RunnerError::World(VERIFIERS_V1.into())),
        _ => {}
    }
    let title = format!("World eval · {slug}@{reference}");
    if resolved_kind == "harbor" {
        let jobs_dir = request.output_dir.join("harbor-jobs").join(format!("{slug}--{reference}"));
        let job = harbor_job(request, &src, jobs_dir.clone(), &api_key);
        harbor::run_harbor_job(&job, note)?;
        let client = EvalsClient::from_env(request.host.as_deref())?;
        let harvest = Harvest { model: job.model.clone(), run_id: None, rollouts_per_example: request.rollouts };
        let result = harbor::harvest_job_dir(&jobs_dir.display().to_string(), &version_id, &client, &harvest)?;
        let facts = vec![("model".into(), job.model), ("agent".into(), request.agent.clone())];
        return Ok(Report { result, gate: gate(request, title, facts), errored: (0, None) });
    }
    // verifiers (v0), and the original's fallback for anything else that is not a task tree.
    let eval = VerifiersEval {
        env_id: request.env_id.clone().filter(|e| !e.is_empty()).unwrap_or_else(|| slug.clone()),
        model: request.model.clone(),
        num_examples: request.num_examples,
        rollouts_per_example: request.rollouts,
        save_results: request.save_results,
        output_dir: request.output_dir.clone(),
        resume: request.resume.clone(),
        base_url: verifiers::OPENROUTER.into(),
    };
    let client = EvalsClient::from_env(request.host.as_deref())?;
    let result = verifiers::run_local_eval(&eval, &version_id, &client)?;
    Ok(Report { result, gate: gate(request, title, vec![("model".into(), request.model.clone())]), errored: (0, None) })
}

fn eval_path(request: &EvalRequest, path: &Path, api_key: &str, note: &mut dyn FnMut(&str)) -> Result<Report, RunnerError> {
    let src = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    if !src.is_dir() {
        return Err(RunnerError::Config(format!("--path is not a directory: {}", path.display())));
    }
    let resolved_kind = if request.kind == EvalKind::Auto { harbor::detect_env_kind(&src) } else { request.kind.as_str() };
    match resolved_kind {
        "mock-tools" => return Err(RunnerError::World(MOCK_TOOLS.into())),
        "verifiers-v1" => return Err(RunnerError::World(VERIFIERS_V1.into())),
        "verifiers" => {
            return Err(RunnerError::World(
                "--path runs harbor worlds; verifiers packages run from the hub (`gateway bench eval <slug>`).".into(),
            ))
        }
        _ => {}
    }
    // Filing is honest-or-off: only a clean checkout pins its base version, said up front.
    let state = local_tree_state(&src)?;
    let meta = state.meta.clone().unwrap_or_default();
    let shown = |key: &str| meta_str(&meta, key);
    let branch = shown("branch").or_else(|| shown("ref")).unwrap_or_else(|| "None".into());
    let hash: String = shown("contentHash").unwrap_or_default().chars().take(8).collect();
    let file_version = shown("versionId").filter(|_| state.clean);
    if file_version.is_some() {
        note(&format!("filing to {}@{branch} ({hash})", shown("slug").unwrap_or_else(|| "None".into())));
    } else if shown("versionId").is_some() {
        let dirty = &state.dirty;
        let listed = dirty.iter().take(5).cloned().collect::<Vec<_>>().join(", ") + if dirty.len() > 5 { ", …" } else { "" };
        note(&format!(
            "note: {} file(s) differ from {branch}@{hash} ({listed}) — the run executes your local code but will NOT be filed. Push first (`gateway bench push`) to file it.",
            dirty.len()
        ));
    } else {
        note("note: this dir has no hub link (.gateway) — the run stays local. Push it (`gateway bench push`) to file runs.");
    }
    let name = src.file_name().map(|n| n.to_string_lossy().into_owned()).filter(|n| !n.is_empty()).unwrap_or_else(|| "world".into());
    let jobs_dir = request.output_dir.join("harbor-jobs").join(format!("local--{name}"));
    let job = harbor_job(request, &src, jobs_dir.clone(), api_key);
    harbor::run_harbor_job(&job, note)?;
    let jobs_text = jobs_dir.display().to_string();
    let result = match file_version {
        Some(version_id) => {
            let client = EvalsClient::from_env(request.host.as_deref())?;
            let harvest = Harvest { model: job.model.clone(), run_id: None, rollouts_per_example: request.rollouts };
            harbor::harvest_job_dir(&jobs_text, &version_id, &client, &harvest)?
        }
        None => {
            // Unfiled runs still aggregate locally: the gate must not depend on filing.
            let samples = harbor::samples_from_job_dir(&jobs_text);
            let metrics = if samples.is_empty() { Value::Object(Map::default()) } else { harbor::metrics_from_samples(&samples) };
            object([("jobsDir", Value::Str(jobs_text)), ("filed", Value::Bool(false)), ("metrics", metrics)])
        }
    };
    let facts = vec![("model".into(), job.model), ("agent".into(), request.agent.clone())];
    Ok(Report { result, gate: gate(request, format!("World eval · {name} (local)"), facts), errored: (0, None) })
}

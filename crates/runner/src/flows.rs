//! The two commands as flows: `gateway worlds run` (the original's `worlds_run`:
//! load one variant of a world, run the agent, grade, file unless told not to —
//! and beyond it, many tasks × rollouts) and `gateway worlds ci` (`worlds_ci`: push
//! the checkout onto the PR's branch, run every task, file the run pinned to the
//! pushed version, gate on the world's bar). Each returns the result the command
//! prints and what its gate needs; notes meant for stderr as they happen go
//! through `note`.
//!
//! Argument parsing, printing and exit codes are the CLI's.

use crate::agent::{self, Agent};
use crate::bench::MOCK_TOOLS;
use crate::error::RunnerError;
use crate::filing::{self, RunFiling};
use crate::gate::Gate;
use crate::model::ModelConfig;
pub use crate::report::Report;
use crate::run::{self, Rollout, RunOptions};
use crate::tasks::{self, WorldTask};
use crate::world::{LocalWorld, WorldSource};
use gateway_hub_client::client::{Client, PushOptions};
use gateway_hub_client::evals_client::EvalsClient;
use gateway_hub_client::working_copy::{local_tree_state, meta_str};
use gateway_world::json::{object, Value};
use std::path::{Path, PathBuf};

/// Who acts: `--agent NAME` or `--agent-cmd CMD`.
#[derive(Debug, Clone)]
pub enum AgentChoice {
    /// `oracle`, `builtin` (or the original's `mini-swe-agent`), or a Python callable.
    Named(String),
    /// A shell command.
    Command(String),
}

/// The built-in model runner's flags.
#[derive(Debug, Clone, Default)]
pub struct ModelFlags {
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--api-key`.
    pub api_key: Option<String>,
    /// `--model` as given (None: the environment's `GATEWAY_MODEL`).
    pub model: Option<String>,
    /// `--max-turns`.
    pub max_turns: usize,
}

/// The agent a choice names; a Python callable is resolved (and refused) here,
/// before any world is loaded, as the original does.
pub fn resolve_agent(choice: &AgentChoice, flags: &ModelFlags) -> Result<Agent, RunnerError> {
    match choice {
        AgentChoice::Command(command) => Ok(Agent::Command(command.clone())),
        AgentChoice::Named(name) => match agent::kind(name) {
            None => Ok(Agent::Model(ModelConfig::resolve(
                flags.base_url.as_deref(),
                flags.api_key.as_deref(),
                flags.model.as_deref(),
                flags.max_turns,
            )?)),
            Some(Agent::Python(spec)) => {
                crate::bridge::check(&spec)?;
                Ok(Agent::Python(spec))
            }
            Some(other) => Ok(other),
        },
    }
}

/// The model label a run is filed under: `--model`, else the model runner's model,
/// else `default`.
fn model_label(flags: &ModelFlags, agent: &Agent, default: &str) -> String {
    match (&flags.model, agent) {
        (Some(model), _) => model.clone(),
        (None, Agent::Model(config)) => config.model.clone(),
        (None, _) => default.to_string(),
    }
}

fn text(value: &Option<String>) -> Value {
    value.clone().map(Value::Str).unwrap_or_default()
}

fn insert(result: &mut Value, key: &str, value: Value) {
    if let Value::Object(fields) = result {
        fields.insert(key.into(), value);
    }
}

/// `gateway worlds run`.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// `SLUG[@ref]` to pull.
    pub slug: Option<String>,
    /// `--path`.
    pub path: Option<PathBuf>,
    /// `--variant` (repeatable here).
    pub variants: Vec<String>,
    /// `--all-tasks`.
    pub all_tasks: bool,
    /// `--task-id` / `--task-set`: the hub's stored tasks instead of the world's own.
    pub stored: crate::stored::StoredTasks,
    /// Who acts.
    pub agent: AgentChoice,
    /// The model runner's flags (`model` is also the filed label).
    pub model: ModelFlags,
    /// `--no-file`.
    pub no_file: bool,
    /// `--fail-under`.
    pub fail_under: Option<f64>,
    /// `--host`.
    pub host: Option<String>,
    /// Rollouts, concurrency, budget, transcripts.
    pub options: RunOptions,
}

/// The label the original records for an SDK run.
pub const DEV_LOOP_MODEL: &str = "sdk-dev-loop";

fn chosen<'w>(world: &'w LocalWorld, variants: &[String], all: bool) -> Result<Vec<&'w WorldTask>, RunnerError> {
    if world.tasks.is_empty() {
        return Err(tasks::no_tasks(&world.source.dir));
    }
    if all {
        return Ok(world.tasks.iter().collect());
    }
    if variants.is_empty() {
        return Ok(vec![tasks::pick(&world.tasks, None)?]);
    }
    let mut out: Vec<&WorldTask> = Vec::new();
    for variant in variants {
        let task = tasks::pick(&world.tasks, Some(variant))?;
        if !out.iter().any(|t| t.name == task.name) {
            out.push(task);
        }
    }
    Ok(out)
}

/// Run an agent against a world (see the module docs).
pub fn worlds_run(request: &RunRequest, note: &mut dyn FnMut(&str)) -> Result<Report, RunnerError> {
    if request.slug.is_some() == request.path.is_some() {
        return Err(RunnerError::Config("pass exactly one of SLUG or --path".into()));
    }
    let agent = resolve_agent(&request.agent, &request.model)?;
    let source = match (&request.slug, &request.path) {
        (Some(slug), _) => WorldSource::pull(slug, request.host.as_deref())?,
        (None, Some(path)) => WorldSource::local(path)?,
        (None, None) => unreachable!("checked above"),
    };
    if crate::harbor_world::is_harbor_tree(&source.dir) {
        return harbor_run(request, &agent, &source, note);
    }
    let mut world = LocalWorld::open(source)?;
    let chosen = if request.stored.any() {
        let client = gateway_hub_client::sessions_client::SessionsClient::from_env(request.host.as_deref())?;
        world.tasks = crate::stored::fetch(&client, &request.stored, world.source.slug.as_deref(), &world.source.dir)?;
        world.tasks.iter().collect()
    } else {
        chosen(&world, &request.variants, request.all_tasks)?
    };
    let source = &world.source;
    if let Some(block) = source.file_block.as_deref().filter(|_| !request.no_file) {
        // Said BEFORE the agent runs: the run still executes and grades, only the filing is off.
        note(&format!("note: running unfiled — {block}"));
    }
    let file = !request.no_file && source.version_id.is_some();
    // A filed run keeps each rollout's final state for its sample (a later regrade).
    world.keep_states(file);
    let model = model_label(&request.model, &agent, DEV_LOOP_MODEL);
    let rollouts = run::run(&world, &chosen, &agent, &request.options)?;
    let errored = run::errors(&rollouts);
    let single = rollouts.len() == 1;
    let mut result = if single {
        single_result(&rollouts[0], file.then_some(source), &model, request.host.as_deref())?
    } else {
        let mut result = object([
            ("samples", Value::Int(rollouts.len() as i64)),
            ("errored", Value::Int(errored.0 as i64)),
            ("metrics", run::metrics(&rollouts)),
            ("passHatK", run::pass_hat_k(&rollouts)),
            ("passHatKInterval", crate::noise::pass_hat_k_intervals(&run::outcomes(&rollouts), crate::noise::DEFAULT_ALPHA)),
            ("tasks", run::per_task(&rollouts)),
        ]);
        if file {
            let client = EvalsClient::from_env(request.host.as_deref())?;
            let label = agent.label();
            let filing = RunFiling {
                version_id: source.version_id.as_deref().unwrap_or_default(),
                model: &model,
                agent: &label,
                rollouts_per_example: request.options.rollouts.max(1),
                metadata: object([
                    ("source", Value::str(filing::SOURCE)),
                    ("variants", Value::Array(chosen.iter().map(|t| Value::str(&t.name)).collect())),
                    ("agent", Value::Str(label.clone())),
                ]),
            };
            let filed = filing::file_run(&client, &filing, &rollouts)?;
            insert(&mut result, "evaluationId", filed.get("evaluationId").cloned().unwrap_or_default());
        }
        result
    };
    if let Some(dir) = &request.options.transcripts {
        insert(&mut result, "transcripts", Value::Str(dir.display().to_string()));
    }
    let variant =
        if chosen.len() == 1 { Value::str(&chosen[0].name) } else { Value::Array(chosen.iter().map(|t| Value::str(&t.name)).collect()) };
    let filed = result.get("evaluationId").is_some();
    insert(&mut result, "world", world_member(source, variant, filed));
    let shown_variant = chosen.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ");
    let gate = run_gate(request, source, &shown_variant, model);
    Ok(Report { result, gate, errored })
}

/// A `worlds run`'s gate: `--fail-under` over the run of `variants` of `source`, with its model.
fn run_gate(request: &RunRequest, source: &WorldSource, variants: &str, model: String) -> Gate {
    let title = format!(
        "World run · {}{} · {variants}",
        source.slug.as_deref().unwrap_or("local"),
        source.branch.as_deref().map(|b| format!("@{b}")).unwrap_or_default()
    );
    Gate { fail_under: request.fail_under, bar_source: "--fail-under".into(), title, facts: vec![("model".into(), model)], baseline: None }
}

/// One rollout's result as `World.run` gives it, filed when `filed_to` is given.
fn single_result(rollout: &Rollout, filed_to: Option<&WorldSource>, model: &str, host: Option<&str>) -> Result<Value, RunnerError> {
    if let Some(error) = &rollout.grade_error {
        return Err(RunnerError::World(error.clone()));
    }
    let mut result = object([
        ("reward", rollout.reward.map(Value::Float).unwrap_or_default()),
        ("rewards", Value::Object(rollout.rewards.clone())),
        ("agentError", text(&rollout.agent_error)),
        ("calls", Value::Int(rollout.calls as i64)),
        ("durationSeconds", Value::Float(rollout.duration)),
    ]);
    if let Some(source) = filed_to {
        let client = EvalsClient::from_env(host)?;
        let version_id = source.version_id.as_deref().unwrap_or_default();
        insert(&mut result, "evaluationId", Value::Str(filing::file_one(&client, version_id, model, rollout)?));
    }
    Ok(result)
}

/// The `world` member of a run's result.
fn world_member(source: &WorldSource, variant: Value, filed: bool) -> Value {
    object([
        ("slug", text(&source.slug)),
        ("branch", text(&source.branch)),
        ("versionId", text(&source.version_id)),
        ("variant", variant),
        ("filed", Value::Bool(filed)),
    ])
}

/// `gateway worlds run` on a Harbor task tree: one variant, a Python callable, run
/// in Python as the original runs it ([`crate::harbor_world`]).
fn harbor_run(request: &RunRequest, agent: &Agent, source: &WorldSource, note: &mut dyn FnMut(&str)) -> Result<Report, RunnerError> {
    let Agent::Python(spec) = agent else {
        return Err(RunnerError::Config(format!(
            "{} is a Harbor task tree (tasks/*/task.toml): `worlds run` runs it in Python with a Python callable agent (--agent file.py[:fn] or module:fn), not {}",
            source.dir.display(),
            agent.label()
        )));
    };
    if request.all_tasks
        || request.stored.any()
        || request.variants.len() > 1
        || request.options.rollouts > 1
        || request.options.transcripts.is_some()
    {
        return Err(RunnerError::Config(
            "a Harbor task tree runs one variant once (as the original's `worlds run`): drop --all-tasks, --task-id, --task-set, extra --variant, --rollouts-per-example and --output-dir".into(),
        ));
    }
    let file = !request.no_file && source.version_id.is_some();
    let rollout = crate::harbor_world::run(
        source,
        request.variants.first().map(String::as_str),
        spec,
        request.options.budget,
        !request.no_file,
        note,
    )?;
    let model = request.model.model.clone().unwrap_or_else(|| DEV_LOOP_MODEL.to_string());
    let mut result = single_result(&rollout, file.then_some(source), &model, request.host.as_deref())?;
    let filed = result.get("evaluationId").is_some();
    insert(&mut result, "world", world_member(source, Value::str(&rollout.variant), filed));
    let gate = run_gate(request, source, &rollout.variant, model);
    let errored = run::errors(std::slice::from_ref(&rollout));
    Ok(Report { result, gate, errored })
}

/// `gateway worlds ci`.
#[derive(Debug, Clone)]
pub struct CiRequest {
    /// `--path`.
    pub path: PathBuf,
    /// Who acts (default: the built-in model runner).
    pub agent: AgentChoice,
    /// The model runner's flags (`model` is also the filed label).
    pub model: ModelFlags,
    /// `--branch`.
    pub branch: Option<String>,
    /// `--fail-under`.
    pub fail_under: Option<f64>,
    /// `--no-push`.
    pub no_push: bool,
    /// `--num-examples` (negative: every task).
    pub num_examples: i64,
    /// `--message`.
    pub message: Option<String>,
    /// `--output-dir`.
    pub output_dir: PathBuf,
    /// `--host`.
    pub host: Option<String>,
    /// Rollouts, concurrency, budget (transcripts go under the output dir).
    pub options: RunOptions,
    /// `--baseline`: an evaluation of this world to compare with (the gate then fails
    /// only on a significant regression, or under an explicit `--fail-under`).
    pub baseline: Option<String>,
    /// `--alpha`: the regression test's level and 1 − the intervals' confidence.
    pub alpha: f64,
}

/// The baseline evaluation's graded samples (errored ones have no reward and are
/// left out), read from the hub's rollout view of the world `slug`.
fn baseline_outcomes(host: Option<&str>, slug: &str, evaluation_id: &str) -> Result<Vec<crate::noise::Outcome>, RunnerError> {
    let environments = gateway_hub_client::environments_client::EnvironmentsClient::from_env(host)?;
    let container = environments.resolve_environment_id(slug)?;
    let read = environments
        .get_rollout_samples(&container, evaluation_id, BASELINE_SAMPLES)
        .map_err(|e| RunnerError::Config(format!("--baseline {evaluation_id}: not an evaluation of {slug} this hub can read ({e})")))?;
    let samples = read.get("samples").and_then(Value::as_array).cloned().unwrap_or_default();
    let outcomes: Vec<crate::noise::Outcome> = samples
        .iter()
        .filter_map(|sample| {
            let reward = sample.get("reward").and_then(Value::as_f64)?;
            let task = sample.get("task").or_else(|| sample.get("exampleId")).and_then(Value::as_str)?.to_string();
            let passed = sample.get("info").and_then(|i| i.get("passed")).map(|p| matches!(p, Value::Bool(true))).unwrap_or(reward >= 1.0);
            Some(crate::noise::Outcome { task, reward, passed })
        })
        .collect();
    if outcomes.is_empty() {
        return Err(RunnerError::Config(format!("--baseline {evaluation_id}: it has no graded sample to compare with")));
    }
    Ok(outcomes)
}

/// The most samples of a baseline read (the hub's rollout view caps a page there).
const BASELINE_SAMPLES: i64 = 1000;

fn runnable(src: &Path) -> Result<(), RunnerError> {
    let kind = gateway_world::data::world_kind(src).map_err(|e| RunnerError::World(e.message))?;
    match kind {
        "schema" | "api" => Ok(()),
        "mock-tools" => Err(RunnerError::World(MOCK_TOOLS.into())),
        "harbor" => Err(RunnerError::World(
            "`worlds ci` here runs schema and api worlds on a local World Host; this dir is a harbor task tree (tasks/*/task.toml), which runs under harbor."
                .into(),
        )),
        _ => Err(RunnerError::World(
            "`worlds ci` runs harbor worlds (self-grading task dirs); this dir is a verifiers package — use `gateway bench eval` instead.".into(),
        )),
    }
}

/// Push, run, file, and say what the gate needs (see the module docs).
pub fn worlds_ci(request: &CiRequest, note: &mut dyn FnMut(&str)) -> Result<Report, RunnerError> {
    let src = std::path::absolute(&request.path).unwrap_or_else(|_| request.path.clone());
    if !src.is_dir() {
        return Err(RunnerError::Config(format!("--path is not a directory: {}", request.path.display())));
    }
    runnable(&src)?;
    let agent = resolve_agent(&request.agent, &request.model)?;
    let meta = gateway_hub_client::working_copy::read_local_meta(&src).unwrap_or_default();
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let branch = request
        .branch
        .clone()
        .filter(|b| !b.is_empty())
        .or_else(|| env("GITHUB_HEAD_REF"))
        .or_else(|| env("GITHUB_REF_NAME"))
        .or_else(|| meta_str(&meta, "branch"))
        .or_else(|| meta_str(&meta, "ref"))
        .ok_or_else(|| {
            RunnerError::Config(
                "no branch to run: pass --branch, or run under GitHub Actions (GITHUB_HEAD_REF / GITHUB_REF_NAME), or push the dir once so .gateway records one."
                    .into(),
            )
        })?;
    let bench = Client::from_env(request.host.as_deref())?;
    let (version_id, slug, content_hash) = if request.no_push {
        // Run exactly what the dir's base names: a pin to code that did not run would fabricate provenance.
        let state = local_tree_state(&src)?;
        let meta = state.meta.clone().unwrap_or_default();
        let Some(version_id) = meta_str(&meta, "versionId").filter(|_| state.clean) else {
            return Err(RunnerError::Config(
                "--no-push needs a clean checkout with a recorded base (.gateway) — push first, or drop --no-push.".into(),
            ));
        };
        let slug = meta_str(&meta, "slug").unwrap_or_else(|| src.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        (version_id, slug, meta_str(&meta, "contentHash").unwrap_or_default())
    } else {
        let sha: String = env("GITHUB_SHA").unwrap_or_default().chars().take(12).collect();
        let repo = env("GITHUB_REPOSITORY").unwrap_or_default();
        let message = request.message.clone().unwrap_or_else(|| {
            if !repo.is_empty() && !sha.is_empty() {
                format!("[ci] {repo}@{sha}")
            } else {
                "[ci] working tree".into()
            }
        });
        // Force: the hub branch mirrors this checkout; a concurrent tip on it is stale by definition.
        let options = PushOptions { branch: Some(branch.clone()), force: true, message: Some(message), ..PushOptions::default() };
        let pushed = bench.push(&src, &options)?;
        let field = |key: &str| pushed.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let (version_id, slug, content_hash) = (field("versionId"), field("slug"), field("contentHash"));
        note(&format!("pushed {slug}@{branch} ({})", content_hash.chars().take(8).collect::<String>()));
        (version_id, slug, content_hash)
    };
    let (fail_under, bar_source) = match request.fail_under {
        Some(bar) => (bar, "--fail-under"),
        None => match bench.resolve_version(&slug, &branch).ok().and_then(|r| r.get("passThreshold").and_then(Value::as_f64)) {
            Some(bar) => (bar, "world pass bar"),
            None => (gateway_host::selftest::DEFAULT_PASS_BAR, "default bar"),
        },
    };
    let world = LocalWorld::open(WorldSource::pushed(&src, &slug, &branch, &version_id))?;
    world.keep_states(true);
    if world.tasks.is_empty() {
        return Err(tasks::no_tasks(&src));
    }
    let take = if request.num_examples < 0 { world.tasks.len() } else { request.num_examples as usize };
    let chosen: Vec<&WorldTask> = world.tasks.iter().take(take).collect();
    if chosen.is_empty() {
        return Err(tasks::no_tasks(&src));
    }
    let mut options = request.options.clone();
    let transcripts = request.output_dir.join("world-runs").join(format!("ci--{slug}--{}", branch.replace('/', "-")));
    options.transcripts = Some(transcripts.clone());
    let rollouts = run::run(&world, &chosen, &agent, &options)?;
    let errored = run::errors(&rollouts);
    let model = model_label(&request.model, &agent, &agent.label());
    let label = agent.label();
    let filing = RunFiling {
        version_id: &version_id,
        model: &model,
        agent: &label,
        rollouts_per_example: options.rollouts.max(1),
        metadata: object([("source", Value::str("worlds-ci")), ("branch", Value::str(&branch)), ("agent", Value::Str(label.clone()))]),
    };
    let client = EvalsClient::from_env(request.host.as_deref())?;
    let mut result = filing::file_run(&client, &filing, &rollouts)?;
    insert(&mut result, "branch", Value::str(&branch));
    insert(&mut result, "versionId", Value::str(&version_id));
    insert(&mut result, "passHatK", run::pass_hat_k(&rollouts));
    let outcomes = run::outcomes(&rollouts);
    insert(&mut result, "passHatKInterval", crate::noise::pass_hat_k_intervals(&outcomes, request.alpha));
    insert(&mut result, "tasks", run::per_task(&rollouts));
    let baseline = match &request.baseline {
        Some(id) => {
            let compared = crate::noise::compare(&outcomes, &baseline_outcomes(request.host.as_deref(), &slug, id)?, request.alpha);
            let mut described = compared.describe();
            if let Value::Object(fields) = &mut described {
                fields.insert("evaluationId".into(), Value::str(id));
            }
            insert(&mut result, "baseline", described);
            Some((id.clone(), compared))
        }
        None => None,
    };
    insert(&mut result, "errored", Value::Int(errored.0 as i64));
    insert(&mut result, "transcripts", Value::Str(transcripts.display().to_string()));
    let version: String =
        if content_hash.is_empty() { version_id.chars().take(8).collect() } else { content_hash.chars().take(8).collect() };
    let gate = Gate {
        // Against a baseline, a bar gates only when asked for: the world's or the default
        // bar would fail a run that is no worse than the baseline.
        fail_under: if baseline.is_some() { request.fail_under } else { Some(fail_under) },
        bar_source: bar_source.into(),
        title: format!("World sim · {slug}@{branch}"),
        facts: vec![("model".into(), model), ("agent".into(), label), ("version".into(), version)],
        baseline,
    };
    Ok(Report { result, gate, errored })
}

//! `gateway bench …`: the hub client commands (push, pull, checkout, status, log,
//! branch, tag, fork, diff, propose, install, secrets, run-configs, dispatch) and the
//! evaluation commands (eval, harvest-harbor), with the original's flags and output.
//! Failures print `Error: …` on stderr and exit 1; usage errors exit 2. What the
//! evaluation commands do is gateway-runner's (`bench`, `harbor`, `verifiers`).

use crate::args::HubUrl;
use crate::choices::{EvalKind, Installer, RunConfigsAction, SecretsAction, Visibility};
use crate::exit::Status;
use crate::printer::{self, errln, outln};
use clap::Subcommand;
use gateway_hub_client::client::{Client, PushOptions};
use gateway_hub_client::working_copy::read_local_meta;
use gateway_hub_client::ClientError;
use gateway_world::json::{dumps, DumpOptions, Map, Value};

use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Push a benchmark container to Gateway as a content-hashed source bundle.
    Push {
        /// Path to the environment directory.
        path: PathBuf,
        /// Container slug (defaults to the pyproject name, else the directory name).
        #[arg(long)]
        slug: Option<String>,
        /// Human-readable container name.
        #[arg(long)]
        name: Option<String>,
        /// Container description.
        #[arg(long)]
        description: Option<String>,
        /// Tag (repeatable).
        #[arg(long = "tag")]
        tag: Vec<String>,
        /// Who may see the container.
        #[arg(long, value_enum)]
        visibility: Option<Visibility>,
        /// Patch-bump pyproject version before pushing.
        #[arg(long = "auto-bump")]
        auto_bump: bool,
        /// Bump/create an .rc pre-release before pushing.
        #[arg(long)]
        rc: bool,
        /// Bump/create a .post release before pushing.
        #[arg(long)]
        post: bool,
        /// Pre-built OCI image ref (recorded on the version).
        #[arg(long)]
        image: Option<String>,
        /// Build a wheel (uv build --wheel) + upload it for pip-install-by-name.
        #[arg(long = "build-wheel")]
        build_wheel: bool,
        /// Branch to push to (default: the dir's tracked branch, else main).
        #[arg(long, short = 'b')]
        branch: Option<String>,
        /// Skip the fast-forward check (move the branch even if it diverged).
        #[arg(long)]
        force: bool,
        /// Change reason, shown in History.
        #[arg(long, short = 'm')]
        message: Option<String>,
        /// Attribution shown in History (default: GATEWAY_AUTHOR env).
        #[arg(long)]
        author: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Reconstruct a container version's source directory, addressed by name.
    Pull {
        /// Container slug, optionally slug@latest | @<semver> | @<hash-prefix>.
        slug: String,
        /// Target dir (defaults to ./<slug>).
        #[arg(long, short = 't')]
        target: Option<PathBuf>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Materialize a ref into a working dir and track it (pull + set base).
    Checkout {
        /// slug@<branch|tag|semver|hash> (bare slug = main).
        slug_ref: String,
        /// Target dir (defaults to ./<slug>).
        #[arg(long, short = 't')]
        target: Option<PathBuf>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Where this dir stands: tracked branch, base version, local edits, remote tip.
    Status {
        /// Working dir (defaults to cwd).
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        host: HubUrl,
    },
    /// A branch's version lineage, tip first — hash, semver, author, reason.
    Log {
        /// Container slug.
        slug: String,
        /// Branch (default main).
        #[arg(long, short = 'b')]
        branch: Option<String>,
        /// Max entries.
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: i64,
        #[command(flatten)]
        host: HubUrl,
    },
    /// List branches/tags (the dir's current branch marked with *), or create one.
    Branch {
        /// Create a branch with this name (omit to list).
        name: Option<String>,
        /// Working dir whose container/branch to use.
        #[arg(long, default_value = ".")]
        path: PathBuf,
        /// Container slug (default: the dir's tracked slug).
        #[arg(long)]
        slug: Option<String>,
        /// Start version id (default: the main tip).
        #[arg(long = "from")]
        from_version: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Create an immutable tag pointing at a version.
    Tag {
        /// Tag name (immutable).
        name: String,
        /// Working dir whose container to use.
        #[arg(long, default_value = ".")]
        path: PathBuf,
        /// Container slug (default: the dir's tracked slug).
        #[arg(long)]
        slug: Option<String>,
        /// Version id to tag (default: main tip).
        #[arg(long)]
        version: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Fork a container into a new one (shares the bundle; records provenance).
    Fork {
        /// Source container slug (forks the head; omit @version).
        slug: String,
        /// Target slug (defaults to <slug>-fork).
        #[arg(long)]
        into: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Per-file diff (added/removed/modified/unchanged) between two version ids.
    Diff {
        /// Base version id.
        base: String,
        /// Head version id.
        head: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// File local edits as a change proposal (a PR to the env) instead of pushing.
    Propose {
        /// Working dir with local edits.
        #[arg(default_value = ".")]
        path: PathBuf,
        /// Proposal title, shown to the reviewer.
        #[arg(long, required = true)]
        title: String,
        /// Why this changeset.
        #[arg(long, short = 'm', required = true)]
        message: String,
        /// Branch the proposal merges into (default main).
        #[arg(long, short = 'b')]
        branch: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Environment secrets — env vars every hosted run of the world receives (write-only).
    Secrets {
        /// What to do.
        #[arg(value_enum)]
        action: SecretsAction,
        /// World slug the secret belongs to.
        #[arg(long, required = true)]
        env: String,
        /// Secret name (UPPER_SNAKE_CASE) — required for set/unset.
        #[arg(long)]
        key: Option<String>,
        /// Secret value for `set`; omit to read from stdin.
        #[arg(long)]
        value: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// pip-install a container version's built wheel by name (wheel-url-direct).
    Install {
        /// Container slug, optionally slug@latest | @<semver> | @<hash>.
        slug: String,
        /// Installer.
        #[arg(long, value_enum, default_value = "uv")]
        tool: Installer,
        /// Don't reinstall/upgrade if already present.
        #[arg(long = "no-upgrade")]
        no_upgrade: bool,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Run a local eval against a container version and harvest a version-pinned evaluation.
    ///
    /// verifiers kind: the environment's own rollout loop (verifiers and openai installed in
    /// python3, the container installed with `bench install`). harbor kind: the task dirs run
    /// under harbor (docker sandbox by default), then the jobs dir is harvested. --path runs a
    /// working copy (harbor kind); a clean checkout files pinned to its base version. Requires
    /// OPENROUTER_API_KEY either way.
    Eval(Box<EvalArgs>),
    /// Harvest an EXISTING harbor jobs directory into a version-pinned evaluation.
    #[command(name = "harvest-harbor")]
    HarvestHarbor {
        /// A completed harbor (or pier) jobs directory.
        jobs_dir: String,
        /// Container slug@ref the evaluation pins to.
        slug: String,
        /// Model id the job ran with.
        #[arg(long, short = 'm', required = true)]
        model: String,
        /// Rollouts per example the job ran.
        #[arg(long = "rollouts-per-example", short = 'r', default_value_t = 1, allow_negative_numbers = true)]
        rollouts: i64,
        /// Environment RunResult id to back-link.
        #[arg(long = "run-id")]
        run_id: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Start a hosted run of a run config (this hub has no hosted runner: every model is
    /// answered `ok: false` with the reason, and the command exits 1).
    Dispatch {
        /// Run config id (`bench run-configs`).
        run_config_id: String,
        /// Which environment, when the project hosts several.
        #[arg(long = "container-id")]
        container_id: Option<String>,
        /// Pin to a specific READY version (default: head).
        #[arg(long = "version-id")]
        version_id: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Run configs — list them, create one for CI, delete one.
    #[command(name = "run-configs")]
    RunConfigs {
        /// What to do.
        #[arg(value_enum, default_value = "list")]
        action: RunConfigsAction,
        /// Config name (create).
        #[arg(long)]
        name: Option<String>,
        /// Comma-separated model list (create).
        #[arg(long)]
        models: Option<String>,
        /// Containers per model, 1-16 (create).
        #[arg(long, default_value_t = 1)]
        parallelism: i64,
        /// Comma-separated bundled task names (create).
        #[arg(long)]
        tasks: Option<String>,
        /// Comma-separated stored task refs, <id> or <id>@<version> (create).
        #[arg(long = "world-tasks")]
        world_tasks: Option<String>,
        /// harbor agent (create).
        #[arg(long)]
        agent: Option<String>,
        /// Dispatch on every pushed READY version (create).
        #[arg(long = "auto-run-on-push")]
        auto_run_on_push: bool,
        /// Config id (delete/update).
        #[arg(long = "id")]
        config_id: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
}

/// `bench eval`'s arguments.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// Container slug@ref to eval (install it first: `bench install`). Omit when using --path.
    pub slug: Option<String>,
    /// Run a LOCAL world directory (harbor kind) instead of pulling a ref.
    #[arg(long, short = 'p')]
    pub path: Option<PathBuf>,
    /// Model id for OpenRouter.
    #[arg(long, short = 'm', required = true)]
    pub model: String,
    /// verifiers env id to load (defaults to the slug).
    #[arg(long = "env-id")]
    pub env_id: Option<String>,
    /// Environment kind (auto: pull and detect).
    #[arg(long, value_enum, default_value = "auto")]
    pub kind: EvalKind,
    /// harbor kind only: agent that runs the tasks (harbor agent name or acp: shorthand).
    #[arg(long, short = 'a', default_value = gateway_runner::harbor::DEFAULT_HARBOR_AGENT)]
    pub agent: String,
    /// Examples to run (-1: all).
    #[arg(long = "num-examples", short = 'n', default_value_t = -1, allow_negative_numbers = true)]
    pub num_examples: i64,
    /// Rollouts per example.
    #[arg(long = "rollouts-per-example", short = 'r', default_value_t = 1, allow_negative_numbers = true)]
    pub rollouts: i64,
    /// Write a resumable results dir.
    #[arg(long = "save-results", short = 's')]
    pub save_results: bool,
    /// Where jobs and results go.
    #[arg(long = "output-dir", short = 'o', default_value = "./outputs")]
    pub output_dir: PathBuf,
    /// Resume from a results dir path.
    #[arg(long, short = 'R')]
    pub resume: Option<PathBuf>,
    /// CI gate: exit 1 when the average reward lands below this bar (also when no aggregate
    /// is available). Writes a $GITHUB_STEP_SUMMARY table under GitHub Actions.
    #[arg(long = "fail-under", value_parser = crate::run::unit_interval)]
    pub fail_under: Option<f64>,
    #[command(flatten)]
    pub host: HubUrl,
}

impl EvalArgs {
    fn into_request(self) -> gateway_runner::bench::EvalRequest {
        gateway_runner::bench::EvalRequest {
            slug: self.slug,
            path: self.path,
            model: self.model,
            env_id: self.env_id,
            kind: self.kind.into(),
            agent: self.agent,
            num_examples: self.num_examples,
            rollouts: self.rollouts,
            save_results: self.save_results,
            output_dir: self.output_dir,
            resume: self.resume,
            fail_under: self.fail_under,
            host: self.host.given(),
        }
    }
}

enum Failure {
    Hub(ClientError),
    Usage(String),
    Plain(String),
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        Failure::Hub(error)
    }
}

fn client(host: &HubUrl) -> Result<Client, Failure> {
    Ok(Client::from_env(host.as_deref())?)
}

/// Run one `bench` command.
pub fn run(command: BenchCommand) -> ExitCode {
    let command = match command {
        BenchCommand::Eval(args) => {
            let request = args.into_request();
            return match gateway_runner::bench::bench_eval(&request, &mut |line| errln!("{line}")) {
                Ok(report) => crate::run::finish(&report, false),
                Err(error) => runner_failure(error),
            };
        }
        BenchCommand::HarvestHarbor { jobs_dir, slug, model, rollouts, run_id, host } => {
            let request = gateway_runner::bench::HarvestRequest { jobs_dir, slug, model, rollouts, run_id, host: host.given() };
            return match gateway_runner::bench::harvest_harbor(&request) {
                Ok(result) => {
                    printer::json(&result);
                    ExitCode::SUCCESS
                }
                Err(error) => runner_failure(error),
            };
        }
        other => other,
    };
    match execute(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Hub(error)) => {
            printer::error(error);
            Status::FAILED.into()
        }
        Err(Failure::Plain(message)) => {
            if !message.is_empty() {
                errln!("{message}");
            }
            Status::FAILED.into()
        }
        Err(Failure::Usage(message)) => {
            errln!("Error: Invalid value: {message}");
            Status::USAGE.into()
        }
    }
}

/// A runner's refusal: the original's own words (said plainly) or, for what the
/// original raises, `Error: …`; exit 1 either way.
fn runner_failure(error: gateway_runner::RunnerError) -> ExitCode {
    use gateway_runner::RunnerError as E;
    match error {
        E::Config(message) | E::World(message) | E::Missing(message) => errln!("{message}"),
        other => printer::error(other),
    }
    Status::FAILED.into()
}

fn tracked_slug(slug: Option<String>, path: &Path) -> Result<String, Failure> {
    slug.filter(|s| !s.is_empty())
        .or_else(|| read_local_meta(path).and_then(|m| m.get("slug").and_then(Value::as_str).map(str::to_string)))
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Failure::Plain("Error: no --slug and this dir tracks no container (pull first).".into()))
}

fn execute(command: BenchCommand) -> Result<(), Failure> {
    match command {
        BenchCommand::Push {
            path,
            slug,
            name,
            description,
            tag,
            visibility,
            auto_bump,
            rc,
            post,
            image,
            build_wheel,
            branch,
            force,
            message,
            author,
            host,
        } => {
            let client = client(&host)?;
            let options = PushOptions {
                slug,
                name,
                description,
                tags: tag,
                visibility: visibility.map(Into::into),
                auto_bump,
                rc,
                post,
                image_ref: image,
                build_wheel,
                branch,
                force,
                message,
                author: author.or_else(|| std::env::var("GATEWAY_AUTHOR").ok()).filter(|a| !a.is_empty()),
            };
            printer::json(&client.push_world(&path, &options)?);
        }
        BenchCommand::Pull { slug, target, host } => printer::json(&client(&host)?.pull(&slug, target.as_deref())?),
        BenchCommand::Checkout { slug_ref, target, host } => printer::json(&client(&host)?.pull(&slug_ref, target.as_deref())?),
        BenchCommand::Status { path, host } => {
            let result = client(&host)?.status(&path)?;
            printer::json(&result);
            if matches!(result.get("dirty"), Some(Value::Bool(true))) {
                errln!("# local edits not pushed");
            }
            if matches!(result.get("behind"), Some(Value::Bool(true))) {
                errln!("# branch tip moved past your base — `gateway bench pull` before pushing");
            }
        }
        BenchCommand::Log { slug, branch, limit, host } => printer::json(&client(&host)?.log(&slug, branch.as_deref(), limit)?),
        BenchCommand::Branch { name, path, slug, from_version, host } => branch(&client(&host)?, name, &path, slug, from_version)?,
        BenchCommand::Tag { name, path, slug, version, host } => {
            let client = client(&host)?;
            let slug = tracked_slug(slug, &path)?;
            printer::json(&client.create_ref(&slug, &name, "tag", version.as_deref())?);
        }
        BenchCommand::Fork { slug, into, host } => printer::json(&client(&host)?.fork(&slug, into.as_deref())?),
        BenchCommand::Diff { base, head, host } => printer::json(&client(&host)?.diff(&base, &head)?),
        BenchCommand::Propose { path, title, message, branch, host } => {
            printer::json(&client(&host)?.propose(&path, &title, &message, branch.as_deref())?)
        }
        BenchCommand::Secrets { action, env, key, value, host } => secrets(action, env, key, value, host)?,
        BenchCommand::Install { slug, tool, no_upgrade, host } => printer::json(&client(&host)?.install(&slug, tool.into(), no_upgrade)?),
        BenchCommand::Dispatch { run_config_id, container_id, version_id, host } => {
            dispatch(&client(&host)?, &run_config_id, container_id.as_deref(), version_id.as_deref())?
        }
        BenchCommand::Eval(_) | BenchCommand::HarvestHarbor { .. } => unreachable!("run() handles the evaluation commands"),
        BenchCommand::RunConfigs { action, name, models, parallelism, tasks, world_tasks, agent, auto_run_on_push, config_id, host } => {
            let client = client(&host)?;
            match action {
                RunConfigsAction::List => list_run_configs(&client)?,
                RunConfigsAction::Delete => delete_run_config(&client, config_id)?,
                RunConfigsAction::Create => {
                    let flags = RunConfigFlags { name, models, parallelism, tasks, world_tasks, agent, auto_run_on_push, config_id };
                    create_run_config(&client, flags)?
                }
            }
        }
    }
    Ok(())
}

/// `bench branch`: create a branch (NAME given), else list the refs, the checked-out
/// branch marked.
fn branch(client: &Client, name: Option<String>, path: &Path, slug: Option<String>, from_version: Option<String>) -> Result<(), Failure> {
    let meta = read_local_meta(path).unwrap_or_default();
    let slug = tracked_slug(slug, path)?;
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        printer::json(&client.create_ref(&slug, &name, "branch", from_version.as_deref())?);
        return Ok(());
    }
    let refs = client.list_refs(&slug)?;
    let meta_slug = meta.get("slug").and_then(Value::as_str);
    let current = if meta_slug == Some(slug.as_str()) { meta.get("branch").and_then(Value::as_str) } else { None };
    let text = |v: Option<&Value>| match v {
        Some(Value::Str(s)) => s.clone(),
        Some(Value::Null) | None => "None".to_string(),
        Some(other) => dumps(other, DumpOptions::CLI),
    };
    for r in refs.get("refs").and_then(Value::as_array).cloned().unwrap_or_default() {
        let kind = text(r.get("kind"));
        let name = text(r.get("name"));
        let marker = if kind == "branch" && Some(name.as_str()) == current { "*" } else { " " };
        let hash: String = r.get("contentHash").and_then(Value::as_str).unwrap_or("").chars().take(12).collect();
        let semver = r.get("semanticVersion").and_then(Value::as_str).unwrap_or("");
        outln!("{marker} {kind:<6} {name:<24} {hash:<12} {semver}");
    }
    Ok(())
}

/// `bench dispatch`: the run config dispatched; a dispatch that started nothing fails
/// (beyond the original, which prints and exits 0).
fn dispatch(client: &Client, run_config_id: &str, container_id: Option<&str>, version_id: Option<&str>) -> Result<(), Failure> {
    let result = client.dispatch_run_config(run_config_id, container_id, version_id)?;
    printer::json(&result);
    let runs = result.get("runs").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut started = !runs.is_empty();
    for run in &runs {
        if !run.get("ok").is_some_and(gateway_hub_client::client::truthy) {
            started = false;
            errln!("dispatch: {} did not start: {}", field(run, "model"), field(run, "error"));
        }
    }
    if !started {
        return Err(Failure::Plain(String::new()));
    }
    Ok(())
}

/// `bench run-configs list`: one line per config, its models and flags.
fn list_run_configs(client: &Client) -> Result<(), Failure> {
    let listed = client.list_run_configs()?;
    let rows = listed.get("runConfigs").and_then(Value::as_array).cloned().unwrap_or_default();
    if rows.is_empty() {
        outln!("No run configs in this project.");
        return Ok(());
    }
    for row in rows {
        let mut flags = Vec::new();
        if let Some(Value::Int(p)) = row.get("parallelism") {
            if *p > 1 {
                flags.push(format!("x{p} containers"));
            }
        }
        if row.get("autoRunOnPush").is_some_and(gateway_hub_client::client::truthy) {
            flags.push("auto-on-push".to_string());
        }
        let suffix = if flags.is_empty() { String::new() } else { format!("  [{}]", flags.join(", ")) };
        outln!("{}  {}  ({}){suffix}", field(&row, "id"), field(&row, "name"), models_text(&row, true));
    }
    Ok(())
}

/// `bench run-configs delete --id`.
fn delete_run_config(client: &Client, config_id: Option<String>) -> Result<(), Failure> {
    let id = config_id.filter(|i| !i.is_empty()).ok_or_else(|| Failure::Usage("--id is required for delete".into()))?;
    client.delete_run_config(&id)?;
    outln!("Deleted {id}.");
    Ok(())
}

/// The flags of `bench run-configs create`.
struct RunConfigFlags {
    name: Option<String>,
    models: Option<String>,
    parallelism: i64,
    tasks: Option<String>,
    world_tasks: Option<String>,
    agent: Option<String>,
    auto_run_on_push: bool,
    config_id: Option<String>,
}

/// `bench run-configs create`: a name and models at least; bundled tasks or stored
/// ones, not both.
fn create_run_config(client: &Client, flags: RunConfigFlags) -> Result<(), Failure> {
    let RunConfigFlags { name, models, parallelism, tasks, world_tasks, agent, auto_run_on_push, config_id } = flags;
    let (Some(name), Some(models)) = (name.filter(|n| !n.is_empty()), models.filter(|m| !m.is_empty())) else {
        return Err(Failure::Usage("--name and --models are required for create".into()));
    };
    let split = |text: &str| -> Vec<Value> { text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(Value::str).collect() };
    let mut fields = Map::default();
    fields.insert("name".into(), Value::str(name));
    fields.insert("models".into(), Value::Array(split(&models)));
    fields.insert("parallelism".into(), Value::Int(parallelism));
    if let Some(agent) = agent.filter(|a| !a.is_empty()) {
        fields.insert("agent".into(), Value::str(agent));
    }
    if let Some(tasks) = tasks.as_deref().filter(|t| !t.is_empty()) {
        fields.insert("taskNames".into(), Value::Array(split(tasks)));
    }
    if let Some(world_tasks) = world_tasks.filter(|w| !w.is_empty()) {
        if tasks.as_deref().is_some_and(|t| !t.is_empty()) {
            return Err(Failure::Usage("--tasks and --world-tasks are exclusive: a config runs bundled scenarios or stored tasks".into()));
        }
        fields.insert("worldTasks".into(), parse_world_task_refs(&world_tasks).map_err(Failure::Usage)?);
    }
    if auto_run_on_push {
        fields.insert("autoRunOnPush".into(), Value::Bool(true));
    }
    if let Some(id) = config_id.filter(|i| !i.is_empty()) {
        fields.insert("id".into(), Value::str(id));
    }
    let row = client.upsert_run_config(fields)?;
    outln!("{}  {}  ({})", field(&row, "id"), field(&row, "name"), models_text(&row, false));
    Ok(())
}

fn field(row: &Value, key: &str) -> String {
    match row.get(key) {
        Some(Value::Str(s)) => s.clone(),
        Some(Value::Null) | None => "None".into(),
        Some(other) => dumps(other, DumpOptions::CLI),
    }
}

fn models_text(row: &Value, placeholder: bool) -> String {
    let models: Vec<String> = row
        .get("models")
        .and_then(Value::as_array)
        .map(|m| m.iter().map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| dumps(v, DumpOptions::CLI))).collect())
        .unwrap_or_default();
    if models.is_empty() && placeholder {
        "no models".into()
    } else {
        models.join(", ")
    }
}

/// `wt_a,wt_b@2` → `[{id: wt_a}, {id: wt_b, version: 2}]`.
fn parse_world_task_refs(text: &str) -> Result<Value, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('@') {
            Some((id, version)) => {
                let version: i64 = version
                    .parse()
                    .ok()
                    .filter(|v| *v >= 1)
                    .ok_or_else(|| format!("world task ref '{part}': the version after @ must be a positive integer"))?;
                if id.is_empty() {
                    return Err(format!("world task ref '{part}' has no id"));
                }
                out.push(gateway_world::json::object([("id", Value::str(id)), ("version", Value::Int(version))]));
            }
            None => out.push(gateway_world::json::object([("id", Value::str(part))])),
        }
    }
    if out.is_empty() {
        return Err("--world-tasks names no task".into());
    }
    Ok(Value::Array(out))
}

fn secrets(action: SecretsAction, env: String, key: Option<String>, value: Option<String>, host: HubUrl) -> Result<(), Failure> {
    let client = client(&host)?;
    if action == SecretsAction::List {
        let listed = client.list_env_secret_keys(&env)?;
        let rows = listed.get("secrets").and_then(Value::as_array).cloned().unwrap_or_default();
        if rows.is_empty() {
            outln!("No secrets on {env}.");
            return Ok(());
        }
        for row in rows {
            outln!("{}  (rotated {})", field(&row, "key"), field(&row, "updatedAt"));
        }
        return Ok(());
    }
    let named = if action == SecretsAction::Set { "set" } else { "unset" };
    let key = key.filter(|k| !k.is_empty()).ok_or_else(|| Failure::Usage(format!("--key is required for `{named}`")))?;
    if action == SecretsAction::Unset {
        client.delete_env_secret(&env, &key)?;
        outln!("Deleted {key} from {env}.");
        return Ok(());
    }
    let secret = match value {
        Some(value) => value,
        None => {
            let line = crate::hub::prompt_secret(&format!("Value for {key} (input hidden)"), true)
                .map_err(|e| Failure::Plain(format!("Error: {e}")))?;
            line.trim().to_string()
        }
    };
    if secret.is_empty() {
        return Err(Failure::Usage("empty value — nothing stored".into()));
    }
    let result = client.set_env_secret(&env, &key, &secret)?;
    let word = if result.get("created").is_some_and(gateway_hub_client::client::truthy) { "Added" } else { "Rotated" };
    outln!("{word} {key} on {env} — next hosted run receives it.");
    Ok(())
}

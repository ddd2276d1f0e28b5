//! `gateway environment …`: the environment hub commands (list, get, tasks,
//! performance, rollouts, samples, link-task-set, create-task, run, run-status,
//! agent-status, agent-trigger; beyond the original, regrade) with the original's flags, its prints
//! (`json.dumps(model.model_dump(), indent=2)`), its stderr notes and exit codes: 0 on
//! success, 1 when a request fails or is refused (one line on stderr where the original
//! shows a traceback) and when a run dispatches nothing or fails, 2 on a usage error.
//!
//! Argument parsing and printing only: the requests, the reading of each answer as the
//! original's pydantic model and the multi-request flows live in
//! `gateway_hub_client::environments_client`.

use crate::args::HubUrl;
use crate::exit::Status;
use crate::printer::{self, errln, outln};
use clap::Subcommand;
use gateway_hub_client::environments_client::{verdict_lines, EnvironmentsClient, LinkOptions, RunWait};
use gateway_hub_client::evals_client::EvalsClient;
use gateway_hub_client::ClientError;
use gateway_world::json::{python_str, Value};

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, Subcommand)]
pub enum EnvironmentCommand {
    /// List the project's environments (id, slug, latest version, task-set link).
    List {
        /// Filter to one environment slug.
        #[arg(long)]
        slug: Option<String>,
        /// Max environments to list.
        #[arg(long, short = 'n', default_value_t = 50, allow_negative_numbers = true)]
        limit: i64,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Show one environment with its version history and rollout count.
    Get {
        /// Environment (container) id.
        container_id: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Show the environment's linked task set and its tasks.
    Tasks {
        /// Environment (container) id.
        container_id: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Dispatch hosted rollouts — one runner job per model — and (by default) wait for the verdicts.
    Run {
        /// Environment slug or container id.
        environment: String,
        /// Model to run, repeatable (a provider-prefixed id, e.g. openrouter/z-ai/glm-5.2).
        #[arg(long, short = 'm', required = true)]
        model: Vec<String>,
        /// Pin a READY version (default: newest).
        #[arg(long = "version-id")]
        version_id: Option<String>,
        /// Cap scenarios (default: all).
        #[arg(long = "num-examples", short = 'n', allow_negative_numbers = true)]
        num_examples: Option<i64>,
        /// Rollouts per scenario (default 1).
        #[arg(long, short = 'k', allow_negative_numbers = true)]
        rollouts: Option<i64>,
        /// Block until every run settles and print verdicts (the default).
        #[arg(long, overrides_with = "no_wait")]
        wait: bool,
        /// Return after the dispatch.
        #[arg(long = "no-wait", overrides_with = "wait")]
        no_wait: bool,
        /// Seconds to wait before giving up (with --wait).
        #[arg(long = "wait-timeout", default_value_t = 1200, allow_negative_numbers = true)]
        wait_timeout: i64,
        #[command(flatten)]
        host: HubUrl,
    },
    /// One run's verdict: status, avgReward, settled, per-task rollouts.
    RunStatus {
        /// Run id from `environment run` / dispatch.
        run_id: String,
        /// Block server-side up to N seconds (max 50) for it to settle.
        #[arg(long, short = 'w', default_value_t = 0, allow_negative_numbers = true)]
        wait: i64,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Create/fill a scenario set and attach it (idempotent: reuses the linked set, skips existing task names).
    LinkTaskSet {
        /// Environment slug or container id.
        environment: String,
        /// tasks.jsonl to fill the set from (rows: id, prompt, metadata, worlds).
        #[arg(long)]
        tasks: Option<PathBuf>,
        /// Task-set name (default: '<slug> scenarios').
        #[arg(long)]
        name: Option<String>,
        /// Task-set description.
        #[arg(long)]
        description: Option<String>,
        /// Always create a new set instead of reusing the linked one.
        #[arg(long)]
        fresh: bool,
        /// Unlink the environment's task set and exit.
        #[arg(long)]
        detach: bool,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Show per-task performance across rollouts (nulls kept as their own category).
    Performance {
        /// Environment (container) id.
        container_id: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// List the environment's rollouts (evaluations), newest first.
    Rollouts {
        /// Environment (container) id.
        container_id: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Show the scored samples of one rollout (reward/score/correct + sub-rewards).
    Samples {
        /// Environment (container) id.
        container_id: String,
        /// Rollout (evaluation) id.
        evaluation_id: String,
        /// Max samples to return.
        #[arg(long, short = 'n', default_value_t = 200, allow_negative_numbers = true)]
        limit: i64,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Re-score a rollout's stored final states under another version of its tasks' graders (nothing re-run), filed as a new rollout.
    Regrade {
        /// Rollout (evaluation) id to re-score.
        evaluation_id: String,
        /// The stored task version whose grader re-scores.
        #[arg(long = "task-version", value_parser = clap::value_parser!(i64).range(1..))]
        task_version: i64,
        /// Re-score only the samples of this stored task (default: each sample's task, by name).
        #[arg(long = "task-id")]
        task_id: Option<String>,
        /// Print the hub's answer as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Create a task in a task set (a kind='tasks' dataset item). Requires a secret key.
    CreateTask {
        /// Task set dataset id (kind='tasks').
        dataset_id: String,
        /// Task name.
        #[arg(long)]
        name: String,
        /// Task prompt.
        #[arg(long)]
        prompt: String,
        /// Optional expected output.
        #[arg(long = "expected-output")]
        expected_output: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Show the project's Environment Agent config and recent runs.
    AgentStatus {
        #[command(flatten)]
        host: HubUrl,
    },
    /// Enqueue a manual Environment Agent run. Requires a saved config and a secret key.
    AgentTrigger {
        #[command(flatten)]
        host: HubUrl,
    },
}

/// How a command ends when it does not succeed: a line on stderr (maybe none) and 1.
struct Failed(String);

impl From<ClientError> for Failed {
    fn from(error: ClientError) -> Self {
        Failed(error.to_string())
    }
}

fn note(line: &str) {
    errln!("{line}");
}

fn client(host: Option<&str>) -> Result<EnvironmentsClient, Failed> {
    Ok(EnvironmentsClient::from_env(host)?)
}

/// Run one `environment` command.
pub fn run(command: EnvironmentCommand) -> ExitCode {
    match execute(command) {
        Ok(status) => status.into(),
        Err(Failed(message)) => {
            if !message.is_empty() {
                note(&message);
            }
            Status::FAILED.into()
        }
    }
}

fn execute(command: EnvironmentCommand) -> Result<Status, Failed> {
    match command {
        EnvironmentCommand::List { slug, limit, host } => {
            printer::json(&client(host.as_deref())?.list_environments(slug.as_deref(), limit)?)
        }
        EnvironmentCommand::Get { container_id, host } => printer::json(&client(host.as_deref())?.get_environment(&container_id)?),
        EnvironmentCommand::Tasks { container_id, host } => printer::json(&client(host.as_deref())?.get_task_set(&container_id)?),
        EnvironmentCommand::Performance { container_id, host } => printer::json(&client(host.as_deref())?.get_performance(&container_id)?),
        EnvironmentCommand::Rollouts { container_id, host } => printer::json(&client(host.as_deref())?.list_rollouts(&container_id)?),
        EnvironmentCommand::Samples { container_id, evaluation_id, limit, host } => {
            printer::json(&client(host.as_deref())?.get_rollout_samples(&container_id, &evaluation_id, limit)?)
        }
        EnvironmentCommand::CreateTask { dataset_id, name, prompt, expected_output, host } => {
            let expected = expected_output.map(Value::Str);
            printer::json(&client(host.as_deref())?.create_task(&dataset_id, &name, &prompt, expected.as_ref(), None)?)
        }
        EnvironmentCommand::AgentStatus { host } => printer::json(&client(host.as_deref())?.get_agent()?),
        EnvironmentCommand::AgentTrigger { host } => printer::json(&client(host.as_deref())?.trigger_agent()?),
        EnvironmentCommand::RunStatus { run_id, wait, host } => printer::json(&client(host.as_deref())?.get_run(&run_id, wait)?),
        EnvironmentCommand::LinkTaskSet { environment, tasks, name, description, fresh, detach, host } => {
            let client = client(host.as_deref())?;
            let container_id = client.resolve_environment_id(&environment)?;
            let linked = if detach {
                client.link_task_set(&container_id, None)?
            } else {
                let options = LinkOptions { tasks: tasks.as_deref(), name: name.as_deref(), description: description.as_deref(), fresh };
                client.fill_and_link(&environment, &container_id, &options, &mut |line| note(line))?
            };
            printer::json(&linked);
        }
        EnvironmentCommand::Regrade { evaluation_id, task_version, task_id, json, host } => {
            let client = EvalsClient::from_env(host.as_deref())?;
            let answered = client.regrade(&evaluation_id, task_version, task_id.as_deref())?;
            if json {
                printer::json(&answered);
            } else {
                for line in regrade_lines(&answered) {
                    outln!("{line}");
                }
            }
        }
        EnvironmentCommand::Run { environment, model, version_id, num_examples, rollouts, wait: _, no_wait, wait_timeout, host } => {
            return run_environment(
                host.as_deref(),
                &environment,
                &model,
                version_id.as_deref(),
                num_examples,
                rollouts,
                !no_wait,
                wait_timeout,
            );
        }
    }
    Ok(Status::OK)
}

/// A regrade's answer in lines: what was filed, what became of the samples, the mean
/// reward before and after, and each errored sample's reason (as many as the hub listed).
fn regrade_lines(answered: &Value) -> Vec<String> {
    let text = |key: &str| python_str(answered.get(key).unwrap_or(&Value::Null));
    let mean = |key: &str| match answered.get(key).and_then(Value::as_f64) {
        Some(mean) => format!("{mean:.4}"),
        None => "none".into(),
    };
    let task = match answered.get("taskId").and_then(Value::as_str) {
        Some(id) => format!("task {id} version {}", text("taskVersion")),
        None => format!("task version {}", text("taskVersion")),
    };
    let mut lines = vec![
        format!("regraded {} into {} ({task}, {}s)", text("regradedFrom"), text("evaluationId"), text("seconds")),
        format!("{} samples: {} graded, {} errored, {} carried over", text("samples"), text("graded"), text("errored"), text("carried")),
        format!("mean reward {} -> {}", mean("previousAvgReward"), mean("avgReward")),
    ];
    for error in answered.get("errors").and_then(Value::as_array).into_iter().flatten() {
        let member = |key: &str| python_str(error.get(key).unwrap_or(&Value::Null));
        lines.push(format!("errored {} ({} #{}): {}", member("sampleId"), member("task"), member("rolloutIndex"), member("reason")));
    }
    lines
}

/// `environment run`: dispatch, print it, name the models that were not dispatched; then
/// (unless `--no-wait`) wait for each dispatched run's verdict until `wait_timeout`.
/// Exit 1 when nothing was dispatched, a verdict is not COMPLETED/SUCCEEDED, or a run
/// is still going at the deadline.
#[allow(clippy::too_many_arguments)]
fn run_environment(
    host: Option<&str>,
    environment: &str,
    models: &[String],
    version_id: Option<&str>,
    num_examples: Option<i64>,
    rollouts: Option<i64>,
    wait: bool,
    wait_timeout: i64,
) -> Result<Status, Failed> {
    let client = client(host)?;
    let container_id = client.resolve_environment_id(environment)?;
    let dispatch = client.run_evaluation(&container_id, models, version_id, num_examples, rollouts)?;
    printer::json(&dispatch);
    let runs: Vec<&Value> = dispatch.get("runs").and_then(Value::as_array).into_iter().flatten().collect();
    let ok = |run: &Value| matches!(run.get("ok"), Some(Value::Bool(true)));
    let run_id = |run: &Value| run.get("runId").and_then(Value::as_str).unwrap_or_default().to_string();
    let dispatched: Vec<&Value> = runs.iter().copied().filter(|run| ok(run) && !run_id(run).is_empty()).collect();
    for run in runs.iter().filter(|run| !ok(run)) {
        let member = |key: &str| python_str(run.get(key).unwrap_or(&Value::Null));
        note(&format!("# {}: {}", member("model"), member("error")));
    }
    if !wait || dispatched.is_empty() {
        return Ok(if dispatched.is_empty() { Status::FAILED } else { Status::OK });
    }
    let deadline = Instant::now() + Duration::from_secs(wait_timeout.max(0) as u64);
    let mut failed = false;
    for run in dispatched {
        let model = run.get("model").and_then(Value::as_str).unwrap_or_default();
        match client.wait_for_run(&run_id(run), deadline)? {
            RunWait::Settled(verdict) => {
                let (lines, passed) = verdict_lines(model, &verdict);
                for line in lines {
                    outln!("{line}");
                }
                failed = failed || !passed;
            }
            RunWait::StillRunning => {
                note(&format!("{model}: still running after {wait_timeout}s (runId={})", run_id(run)));
                failed = true;
            }
        }
    }
    Ok(if failed { Status::FAILED } else { Status::OK })
}

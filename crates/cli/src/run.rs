//! `gateway worlds run` and `gateway worlds ci`: their flags (the original's, and
//! ours beyond them), the result printed as indented JSON, the gate's line on
//! stderr and the exit code. What a run does is gateway-runner's (`flows`).

use crate::args::HubUrl;
use crate::exit::Status;
use crate::printer::{self, errln};
use gateway_runner::flows::{self, AgentChoice, ModelFlags, Report};
use gateway_runner::run::RunOptions;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// A `--fail-under` value: a float from 0 to 1 (typer's words on refusal).
pub(crate) fn unit_interval(text: &str) -> Result<f64, String> {
    let value: f64 = text.parse().map_err(|_| format!("{text} is not a valid float."))?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{text} is not in the range 0.0<=x<=1.0."))
    }
}

/// Flags of the built-in model runner and of every rollout, shared by both commands.
#[derive(Debug, clap::Args)]
pub struct RolloutArgs {
    /// Rollouts of each task (each in a session of its own).
    #[arg(long = "rollouts-per-example", short = 'r', visible_alias = "rollouts", default_value_t = 1)]
    pub rollouts: usize,
    /// Rollouts in flight at once.
    #[arg(long, short = 'c', default_value_t = 4)]
    pub concurrency: usize,
    /// Each rollout's time budget, in seconds (its agent is stopped past it).
    #[arg(long, default_value_t = 900.0)]
    pub timeout: f64,
    /// Run an agent in any language: `sh -c CMD` per rollout, with the session in its
    /// environment (GATEWAY_WORLD_API_URL, _API_BASE, _TOKEN, _MCP_URL, _INSTRUCTION, _TASK,
    /// _ROLLOUT, _SESSION, _TOOLS); its stdout is the completion.
    #[arg(long = "agent-cmd", conflicts_with = "agent")]
    pub agent_cmd: Option<String>,
    /// The built-in model runner's OpenAI-compatible base URL (default: GATEWAY_MODEL_BASE_URL,
    /// OPENAI_BASE_URL, else OpenRouter with OPENROUTER_API_KEY, else OpenAI with OPENAI_API_KEY).
    #[arg(long = "base-url")]
    pub base_url: Option<String>,
    /// The built-in model runner's key (default: GATEWAY_MODEL_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY).
    #[arg(long = "api-key")]
    pub api_key: Option<String>,
    /// Model calls a rollout of the built-in runner gets.
    #[arg(long = "max-turns", default_value_t = gateway_runner::model::DEFAULT_MAX_TURNS)]
    pub max_turns: usize,
    /// Exit 0 even when rollouts errored (the session did not open, the agent did not
    /// finish — model unreachable, command exited non-zero — or grading failed). Errored
    /// rollouts have no reward and are left out of means and pass rates either way.
    #[arg(long = "allow-errors")]
    pub allow_errors: bool,
}

impl RolloutArgs {
    fn options(&self, transcripts: Option<PathBuf>) -> RunOptions {
        RunOptions {
            rollouts: self.rollouts.max(1),
            concurrency: self.concurrency.max(1),
            budget: Duration::from_secs_f64(self.timeout.max(0.001)),
            transcripts,
            progress: true,
        }
    }

    fn model(&self, model: Option<String>) -> ModelFlags {
        ModelFlags { base_url: self.base_url.clone(), api_key: self.api_key.clone(), model, max_turns: self.max_turns }
    }
}

/// `gateway worlds run` arguments.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// World slug@ref to pull and run against; omit when using --path.
    pub slug: Option<String>,
    /// Local world directory instead of a hub pull. A clean checkout files runs pinned to its
    /// base version; a drifted or unlinked dir runs unfiled.
    #[arg(long, short = 'p')]
    pub path: Option<PathBuf>,
    /// The task (variant) to run; repeat for several (default: the first task).
    #[arg(long, short = 'v')]
    pub variant: Vec<String>,
    /// Run every task of the world.
    #[arg(long = "all-tasks", conflicts_with = "variant")]
    pub all_tasks: bool,
    /// Run the hub's stored task ID (`gateway worlds task create`) instead of the world's own:
    /// ID for its current version, ID@N for version N; repeat or comma-separate.
    #[arg(long = "task-id", conflicts_with_all = ["variant", "all_tasks"])]
    pub task_id: Vec<String>,
    /// Run every stored task of the world whose spec carries `metadata.taskSet` = NAME.
    #[arg(long = "task-set", value_name = "NAME", conflicts_with_all = ["variant", "all_tasks"])]
    pub task_set: Option<String>,
    /// Agent: file.py[:fn] or module:fn (fn defaults to 'agent'), called as fn(world); or
    /// `builtin` (the built-in model runner) or `oracle` (each task's reference solution).
    #[arg(long, short = 'a', required_unless_present = "agent_cmd")]
    pub agent: Option<String>,
    /// Model label recorded on the filed run (the model itself for `--agent builtin`).
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// Run and grade locally without filing an evaluation.
    #[arg(long = "no-file")]
    pub no_file: bool,
    /// CI gate: exit 1 when the graded reward lands below this bar. Writes a
    /// $GITHUB_STEP_SUMMARY table under GitHub Actions.
    #[arg(long = "fail-under", value_parser = unit_interval)]
    pub fail_under: Option<f64>,
    /// Write each rollout's transcript here (`<task>.<rollout>.json`).
    #[arg(long = "output-dir", short = 'o')]
    pub output_dir: Option<PathBuf>,
    #[command(flatten)]
    pub host: HubUrl,
    #[command(flatten)]
    pub rollout: RolloutArgs,
}

/// `gateway worlds ci` arguments.
#[derive(Debug, clap::Args)]
pub struct CiArgs {
    /// World directory inside the checked-out repo.
    #[arg(long, short = 'p', default_value = ".")]
    pub path: PathBuf,
    /// Model id for the runner (the filed label for other agents).
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// Agent that runs the tasks: `builtin` (the default; the original's `mini-swe-agent`
    /// names it too), `oracle` for a deterministic regression check of the world itself, or a
    /// Python callable file.py[:fn] / module:fn.
    #[arg(long, short = 'a', default_value = gateway_runner::agent::HARBOR_DEFAULT)]
    pub agent: String,
    /// Hub branch to push and run. Defaults to GITHUB_HEAD_REF (PRs), then GITHUB_REF_NAME
    /// (pushes), then the dir's recorded branch.
    #[arg(long, short = 'b')]
    pub branch: Option<String>,
    /// Reward gate. Defaults to the world's own pass bar, then 0.7.
    #[arg(long = "fail-under", value_parser = unit_interval)]
    pub fail_under: Option<f64>,
    /// Run the dir's recorded base version as-is (requires a clean checkout) instead of pushing the working tree.
    #[arg(long = "no-push")]
    pub no_push: bool,
    /// Tasks to run (the first N; -1: all).
    #[arg(long = "num-examples", short = 'n', default_value_t = -1, allow_negative_numbers = true)]
    pub num_examples: i64,
    /// Push change reason (default: a CI commit line).
    #[arg(long, short = 'M')]
    pub message: Option<String>,
    /// Where transcripts go (under world-runs/ci--<slug>--<branch>/).
    #[arg(long = "output-dir", short = 'o', default_value = "./outputs")]
    pub output_dir: PathBuf,
    /// Compare with this evaluation of the world (e.g. main's last): the gate fails only on
    /// a significant regression, task by task (a stratified permutation test), not on a
    /// bar — unless --fail-under is given too.
    #[arg(long, value_name = "EVALUATION_ID")]
    pub baseline: Option<String>,
    /// The regression test's significance level; 1 − alpha is the confidence of the
    /// pass^k intervals.
    #[arg(long, default_value_t = gateway_runner::noise::DEFAULT_ALPHA, value_parser = open_unit_interval)]
    pub alpha: f64,
    #[command(flatten)]
    pub host: HubUrl,
    #[command(flatten)]
    pub rollout: RolloutArgs,
}

/// An `--alpha` value: a float strictly between 0 and 1.
fn open_unit_interval(text: &str) -> Result<f64, String> {
    let value: f64 = text.parse().map_err(|_| format!("{text} is not a valid float."))?;
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(format!("{text} is not in the range 0.0<x<1.0."))
    }
}

fn note(line: &str) {
    errln!("{line}");
}

/// Print the result, then the gate's verdict: exit 1 under the bar, and exit 1 when
/// rollouts errored (unless `allow_errors`): a harness failure is not a score.
pub(crate) fn finish(report: &Report, allow_errors: bool) -> ExitCode {
    printer::json(&report.result);
    let verdict = gateway_runner::gate::finish(&report.result, &report.gate);
    if let Some(message) = &verdict.message {
        errln!("{message}");
    }
    let (errored, first) = &report.errored;
    if *errored > 0 {
        let first = first.as_deref().unwrap_or_default();
        if allow_errors {
            errln!("note: {errored} rollout(s) errored and were left out of the scores (--allow-errors); first: {first}");
        } else {
            errln!(
                "error: {errored} rollout(s) errored — they measured the harness, not the agent, and were left out of the scores; first: {first}\n(--allow-errors exits 0 on them)"
            );
            return Status::FAILED.into();
        }
    }
    if verdict.pass {
        ExitCode::SUCCESS
    } else {
        Status::UNDER_BAR.into()
    }
}

fn choice(agent: Option<String>, command: Option<String>) -> AgentChoice {
    match command {
        Some(command) => AgentChoice::Command(command),
        None => AgentChoice::Named(agent.unwrap_or_default()),
    }
}

/// `gateway worlds run`.
pub fn run(args: RunArgs) -> ExitCode {
    let request = flows::RunRequest {
        slug: args.slug,
        path: args.path,
        variants: args.variant,
        all_tasks: args.all_tasks,
        stored: gateway_runner::stored::StoredTasks { ids: args.task_id, set: args.task_set },
        agent: choice(args.agent, args.rollout.agent_cmd.clone()),
        model: args.rollout.model(args.model),
        no_file: args.no_file,
        fail_under: args.fail_under,
        host: args.host.given(),
        options: args.rollout.options(args.output_dir),
    };
    match flows::worlds_run(&request, &mut note) {
        Ok(report) => finish(&report, args.rollout.allow_errors),
        Err(error) => {
            errln!("{error}");
            Status::FAILED.into()
        }
    }
}

/// `gateway worlds ci`.
pub fn ci(args: CiArgs) -> ExitCode {
    let request = flows::CiRequest {
        path: args.path,
        agent: choice(Some(args.agent), args.rollout.agent_cmd.clone()),
        model: args.rollout.model(args.model),
        branch: args.branch,
        fail_under: args.fail_under,
        no_push: args.no_push,
        num_examples: args.num_examples,
        message: args.message,
        output_dir: args.output_dir,
        host: args.host.given(),
        options: args.rollout.options(None),
        baseline: args.baseline,
        alpha: args.alpha,
    };
    match flows::worlds_ci(&request, &mut note) {
        Ok(report) => finish(&report, args.rollout.allow_errors),
        Err(error) => {
            errln!("{error}");
            Status::FAILED.into()
        }
    }
}

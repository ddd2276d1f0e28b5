//! The `gateway` binary: argument parsing and printing only.
//!
//! Every command delegates to a library crate (`gateway-world` today) and prints
//! what the original Python CLI prints, with its exit codes: 0 on success, 1 on a
//! refusal (a JSON envelope on stdout for `worlds schema …`, a line on stderr for
//! `worlds data …`), 2 on a usage error. It is not where behaviour lives.

// Doc comments here are clap's help texts, written for a terminal (`[:fn]`,
// `{entity: [rows]}`, `./<slug>`), not rustdoc markup.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags, rustdoc::bare_urls)]

mod args;
mod bench;
mod choices;
mod connector;
mod environment;
mod exit;
mod help;
mod host;
mod hub;
mod log_format;
mod log_lines;
mod mcp;
mod platform;
mod printer;
mod run;
mod session;
mod telemetry;
mod workspace;
mod world_data;
mod worlds;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
use std::process::ExitCode;

// Rows checks and serving allocate many small values per row and request; mimalloc
// answers them markedly faster than the system allocator (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Gateway worlds: compile, check, serve and version vendor simulations.
#[derive(Debug, Parser)]
#[command(name = "gateway", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Worlds: stateful simulations of a vendor's service.
    Worlds {
        #[command(subcommand)]
        command: worlds::WorldsCommand,
    },
    /// Benchmark container hub — version and push benchmark environments.
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
    /// Environment hub — inspect environments, task sets, rollouts, and the Environment Agent.
    Environment {
        #[command(subcommand)]
        command: environment::EnvironmentCommand,
    },
    /// The self-hosted hub: serve it, manage its project keys.
    Hub {
        #[command(subcommand)]
        command: hub::HubCommand,
    },
    /// The World Host: live world sessions, on their own or behind a hub.
    Host {
        #[command(subcommand)]
        command: host::HostCommand,
    },
    /// Manage authentication credentials.
    Auth {
        #[command(subcommand)]
        command: hub::AuthCommand,
    },
    /// Build, push, and register an agent with the Gateway platform.
    Deploy(platform::DeployArgs),
    /// Scaffold a Gateway agent project with Dockerfile and manifest.
    Init(platform::InitArgs),
    /// List and manage algorithms.
    Algorithm {
        #[command(subcommand)]
        command: platform::AlgorithmCommand,
    },
    /// Manage project secrets (encrypted env vars for agent containers).
    Secret {
        #[command(subcommand)]
        command: platform::SecretCommand,
    },
    /// Manage registered agents.
    Agent {
        #[command(subcommand)]
        command: platform::AgentCommand,
    },
    /// Manage platform optimization runs.
    Run {
        #[command(subcommand)]
        command: platform::RunCommand,
    },
    /// Manage datasets.
    Dataset {
        #[command(subcommand)]
        command: platform::DatasetCommand,
    },
    /// Release gate for agent builds — ask the platform whether a build may ship.
    Release {
        #[command(subcommand)]
        command: platform::ReleaseCommand,
    },
    /// Print a shell completion script: `gateway completion bash > ~/.local/share/bash-completion/completions/gateway`.
    Completion {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// Completes on Ctrl-C or SIGTERM: servers stop taking connections and finish the
/// requests in flight.
pub(crate) async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}

/// The servers' log (`hub serve`, `host serve`, `worlds serve`): tracing's lines on
/// stderr, one per request among them, at the level `GATEWAY_LOG` names (an env-filter:
/// `info` by default, `warn` to quiet the request lines, `gateway::request=off`, …).
/// The lines go to stderr through [`log_lines`]: a request only copies its line into
/// one shared buffer and never waits on stderr; under a flood lines are dropped
/// (and counted) rather than requests slowed. With `OTEL_EXPORTER_OTLP_ENDPOINT` set,
/// the spans (info and above, whatever `GATEWAY_LOG` says of the lines) are exported
/// too ([`telemetry`]).
pub(crate) fn init_server_log() {
    use tracing_subscriber::filter::FilterExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::Layer as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("GATEWAY_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let (writer, flush) = log_lines::BatchedLines::new(std::io::stderr());
    // Lines are events only: a span (one per request) is never formatted for them
    // — with no OTLP export no layer wants spans, and none is made at all (that
    // formatting cost a fifth of a session's GET throughput). Spans go to OTLP.
    let events = tracing_subscriber::filter::filter_fn(|meta| meta.is_event());
    let lines = log_format::LineLayer::new(writer).with_filter(filter.and(events));
    let registry = tracing_subscriber::registry().with(lines);
    let mut guards = LOG_GUARDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match telemetry::layer() {
        Some((spans, export)) => {
            let spans = spans.with_filter(tracing_subscriber::filter::LevelFilter::INFO);
            if tracing::subscriber::set_global_default(registry.with(spans)).is_ok() {
                *guards = Some((flush, Some(export)));
            }
        }
        None => {
            if tracing::subscriber::set_global_default(registry).is_ok() {
                *guards = Some((flush, None));
            }
        }
    }
}

/// The log writer's and the span export's guards, dropped (flushing what is queued)
/// when `main` ends.
#[allow(clippy::type_complexity)]
static LOG_GUARDS: std::sync::Mutex<Option<(log_lines::FlushGuard, Option<telemetry::Telemetry>)>> = std::sync::Mutex::new(None);

fn main() -> ExitCode {
    // Before anything opens a database: SQLite takes a page cache only before its
    // first use. Without it (refused) SQLite keeps its own, which is only slower.
    let _ = gateway_cow::install_page_cache();
    // Bytes all served sessions' write-ahead logs may hold in memory together; past
    // it a session's log is a file beside its overlay.
    if let Some(budget) = std::env::var("GATEWAY_WAL_MEMORY").ok().and_then(|b| b.parse().ok()) {
        gateway_cow::set_memory_wal_budget(budget);
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    let cli = match parse(&args) {
        Ok(cli) => cli,
        Err(status) => return status,
    };
    gateway_world::data::tempfile_dir::sweep_stale();
    let code = run(cli);
    drop(LOG_GUARDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take());
    // Every temporary directory of this process lives under one, removed here (a
    // killed process's is swept by the next one to start).
    gateway_world::data::tempfile_dir::remove_process_root();
    code
}

/// The command line read against the command tree (with its help texts); a usage error
/// printed (`--help` and `--version` too), as clap prints it or, for a value the
/// original refused by hand, as the original words it.
fn parse(args: &[OsString]) -> Result<Cli, ExitCode> {
    read(args).map_err(|said| {
        match &said {
            Said::Clap(error) => {
                let _ = error.print();
            }
            Said::Original(message, _) => printer::err_line(message),
        }
        said.status().into()
    })
}

/// Why the command line did not make a command.
enum Said {
    /// clap's words: help, the version, or a usage error.
    Clap(clap::Error),
    /// The original's own refusal of a value, and its exit status.
    Original(String, exit::Status),
}

impl Said {
    fn status(&self) -> exit::Status {
        match self {
            Said::Clap(error) if !error.use_stderr() => exit::Status::OK,
            Said::Clap(_) => exit::Status::USAGE,
            Said::Original(_, status) => *status,
        }
    }
}

fn read(args: &[OsString]) -> Result<Cli, Said> {
    let command = help::decorate(Cli::command());
    let error = match command.clone().try_get_matches_from(args) {
        Ok(matches) => match Cli::from_arg_matches(&matches) {
            Ok(cli) => return Ok(cli),
            Err(error) => error.with_cmd(&command),
        },
        Err(error) => error,
    };
    Err(match original_refusal(&error, &command, args) {
        Some((message, status)) => Said::Original(message, status),
        None => Said::Clap(error),
    })
}

/// A bad value of a flag whose values the original checked by hand: its words.
fn original_refusal(error: &clap::Error, command: &clap::Command, args: &[OsString]) -> Option<(String, exit::Status)> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::InvalidValue {
        return None;
    }
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(text)) => Some(text.clone()),
        _ => None,
    };
    let (arg, value) = (text(ContextKind::InvalidArg)?, text(ContextKind::InvalidValue)?);
    choices::refusal(&command_path(command, args), &arg, &value)
}

/// The subcommands named on the command line, space-separated (`worlds data import`).
fn command_path(command: &clap::Command, args: &[OsString]) -> String {
    let mut path = Vec::new();
    let mut current = command;
    for arg in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if let Some(sub) = current.find_subcommand(arg) {
            path.push(sub.get_name().to_string());
            current = sub;
        }
    }
    path.join(" ")
}

fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Worlds { command } => worlds::run(command),
        Command::Bench { command } => bench::run(command),
        Command::Environment { command } => environment::run(command),
        Command::Hub { command } => hub::run(command),
        Command::Auth { command } => hub::auth(command),
        Command::Host { command } => host::run(command),
        Command::Deploy(args) => platform::deploy(args),
        Command::Init(args) => platform::init(args),
        Command::Algorithm { command } => platform::algorithm(command),
        Command::Secret { command } => platform::secret(command),
        Command::Agent { command } => platform::agent(command),
        Command::Run { command } => platform::run(command),
        Command::Dataset { command } => platform::dataset(command),
        Command::Release { command } => platform::release(command),
        Command::Completion { shell } => {
            // Into a buffer first: clap_complete panics on a closed stdout (`| head`).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "gateway", &mut script);
            printer::out_text(String::from_utf8_lossy(&script));
            ExitCode::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests;

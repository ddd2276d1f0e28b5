//! The `gateway` binary: argument parsing and printing only.
//!
//! Every command delegates to a library crate (`gateway-world` today) and prints
//! what the original Python CLI prints, with its exit codes: 0 on success, 1 on a
//! refusal (a JSON envelope on stdout for `worlds schema …`, a line on stderr for
//! `worlds data …`), 2 on a usage error. It is not where behaviour lives.

// Doc comments here are clap's help texts, written for a terminal (`[:fn]`,
// `{entity: [rows]}`, `./<slug>`), not rustdoc markup.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags, rustdoc::bare_urls)]

mod bench;
mod connector;
mod environment;
mod host;
mod hub;
mod mcp;
mod platform;
mod run;
mod session;
mod workspace;
mod world_data;
mod worlds;

use clap::{CommandFactory, Parser, Subcommand};
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    gateway_world::data::tempfile_dir::sweep_stale();
    let code = run(cli);
    // Every temporary directory of this process lives under one, removed here (a
    // killed process's is swept by the next one to start).
    gateway_world::data::tempfile_dir::remove_process_root();
    code
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
            use std::io::Write;
            let _ = std::io::stdout().write_all(&script);
            ExitCode::SUCCESS
        }
    }
}

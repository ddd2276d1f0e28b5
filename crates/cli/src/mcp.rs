//! `gateway worlds mcp PATH`: a world directory as one local session, served as
//! MCP over stdio until stdin closes. Parsing and printing only: the session and
//! the server are gateway-host's (`mcp::open_local`, `mcp::serve_stdio`).
//! Stdout carries the protocol; everything said to a person goes to stderr.

use crate::exit::Status;
use crate::printer::errln;
use std::path::PathBuf;
use std::process::ExitCode;

/// `gateway worlds mcp` arguments.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// World directory (schema/world.json, connector.toml).
    pub path: PathBuf,
    /// A bundled task: one of the world's scenarios/<name> (default: `default`).
    #[arg(long, conflicts_with = "task_file")]
    pub task: Option<String>,
    /// A task spec of the session's own (JSON: instruction, seed, grader, tools).
    #[arg(long = "task-file")]
    pub task_file: Option<PathBuf>,
    /// Also offer __grade, __state and __reset as tools (for trying a world out;
    /// an agent being graded should not have them).
    #[arg(long)]
    pub controls: bool,
}

pub fn run(args: McpArgs) -> ExitCode {
    let local = match gateway_host::mcp::open_local(&args.path, args.task.as_deref(), args.task_file.as_deref()) {
        Ok(local) => local,
        Err(error) => {
            errln!("Error: worlds mcp refused: {error}");
            return Status::FAILED.into();
        }
    };
    let options = gateway_host::mcp::McpOptions { controls: args.controls };
    let server = match gateway_host::mcp::WorldMcp::new(local.host.clone(), &local.session_id, options) {
        Ok(server) => server,
        Err(error) => {
            errln!("Error: worlds mcp refused: {error}");
            return Status::FAILED.into();
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            errln!("Error: worlds mcp could not start: {error}");
            return Status::FAILED.into();
        }
    };
    let served = runtime.block_on(gateway_host::mcp::serve_stdio(server));
    // stdin may still hold a blocking read: do not wait for it.
    runtime.shutdown_background();
    drop(local);
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            errln!("Error: worlds mcp stopped: {error}");
            Status::FAILED.into()
        }
    }
}

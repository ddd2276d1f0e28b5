//! The platform commands' flags and subcommands, as clap reads them (the original's
//! names, defaults and help texts): `deploy`, `init`, `algorithm`, `secret`, `agent`,
//! `run`, `dataset`, `release`, and the `--host` / `--api-key` pair they share.

use clap::Subcommand;

/// `--timeout`/`--interval` of `release gate`: seconds, at least 1.
fn at_least_one_second(text: &str) -> Result<f64, String> {
    let value: f64 = text.trim().parse().map_err(|_| format!("'{text}' is not a valid float."))?;
    if value.is_nan() || value < 1.0 {
        return Err(format!("{text} is not in the range x>=1.0."));
    }
    Ok(value)
}

/// `gateway deploy`'s flags.
#[derive(Debug, clap::Args)]
pub struct DeployArgs {
    /// Docker image to register. If omitted, builds from project dir.
    pub(super) image: Option<String>,
    /// Agent project directory (for building).
    #[arg(long = "project-dir", default_value = ".")]
    pub(super) project_dir: String,
    /// Path to the gateway_manifest/ directory.
    #[arg(long = "manifest-dir", default_value = "./gateway_manifest")]
    pub(super) manifest_dir: String,
    /// Skip Docker build, register image only.
    #[arg(long = "skip-build")]
    pub(super) skip_build: bool,
    /// Use specific Dockerfile (e.g., Dockerfile.gpu).
    #[arg(long)]
    pub(super) dockerfile: Option<String>,
    /// Override image tag.
    #[arg(long)]
    pub(super) tag: Option<String>,
    /// Validate manifest only, don't build or register.
    #[arg(long = "dry-run")]
    pub(super) dry_run: bool,
    /// Gateway server URL (e.g., http://localhost:3000) [env: GATEWAY_HOST].
    #[arg(long)]
    pub(super) host: Option<String>,
    /// Gateway project API key (sk-lf-...) [env: GATEWAY_SECRET_KEY].
    #[arg(long = "api-key")]
    pub(super) api_key: Option<String>,
}

/// `gateway init`'s flags.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Agent reference in module:attribute format (e.g., crm_agent:crm_agent).
    #[arg(long, short = 'a')]
    pub(super) agent: String,
    /// Agent name. Defaults to module name.
    #[arg(long, short = 'n')]
    pub(super) name: Option<String>,
    /// Output directory for generated files.
    #[arg(long = "output-dir", short = 'o', default_value = ".")]
    pub(super) output_dir: String,
}

#[derive(Debug, Subcommand)]
pub enum AlgorithmCommand {
    /// List all available algorithms from class metadata.
    List,
    /// Scaffold a new algorithm class.
    New {
        /// Algorithm name (e.g., my_algo)
        name: String,
        /// Directory to create the algorithm in
        #[arg(long = "output-dir", default_value = ".")]
        output_dir: String,
    },
}

/// `--host` / `--api-key` of the platform commands.
#[derive(Debug, Clone, clap::Args)]
pub struct Connection {
    /// Gateway server URL [env: GATEWAY_HOST].
    #[arg(long)]
    pub(super) host: Option<String>,
    /// Gateway project secret key (sk-lf-...) [env: GATEWAY_SECRET_KEY].
    #[arg(long = "api-key")]
    pub(super) api_key: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Create or update a project secret.
    Set {
        /// Secret name (UPPER_SNAKE_CASE, e.g. TAVILY_API_KEY)
        name: String,
        /// Secret value. If omitted, you will be prompted.
        #[arg(long, short = 'v')]
        value: Option<String>,
        /// Human-readable description
        #[arg(long, short = 'd')]
        description: Option<String>,
        /// Scope: agent, worker, or both
        #[arg(long, default_value = "agent")]
        scope: String,
        #[command(flatten)]
        connection: Connection,
    },
    /// List project secrets (names and descriptions only, not values).
    List {
        #[command(flatten)]
        connection: Connection,
    },
    /// Delete a project secret.
    Delete {
        /// Secret name to delete
        name: String,
        #[command(flatten)]
        connection: Connection,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// List registered agents.
    List {
        #[command(flatten)]
        connection: Connection,
    },
}

#[derive(Debug, Subcommand)]
pub enum RunCommand {
    /// Start a platform optimization run.
    Start {
        /// Algorithm name (e.g., gepa)
        algorithm: String,
        /// Registered agent ID
        #[arg(long)]
        agent: String,
        /// Dataset ID
        #[arg(long)]
        dataset: String,
        /// Run name
        #[arg(long)]
        name: Option<String>,
        /// JSON config string
        #[arg(long)]
        config: Option<String>,
        #[command(flatten)]
        connection: Connection,
    },
    /// Verify an algorithm configuration.
    Verify {
        /// Algorithm name
        algorithm: String,
        /// Agent ID
        #[arg(long)]
        agent: String,
        /// Dataset ID
        #[arg(long)]
        dataset: Option<String>,
        #[command(flatten)]
        connection: Connection,
    },
    /// List runs.
    List {
        /// Filter by source (platform/sdk)
        #[arg(long)]
        source: Option<String>,
        /// Max results
        #[arg(long, default_value_t = 20, allow_negative_numbers = true)]
        limit: i64,
        #[command(flatten)]
        connection: Connection,
    },
}

#[derive(Debug, Subcommand)]
pub enum DatasetCommand {
    /// Upload a JSON or JSONL file as a dataset ({"tasks": [...]}, {"items": [...]}, a bare array, or JSONL).
    Upload {
        /// Path to JSON or JSONL file
        path: String,
        /// Dataset name
        #[arg(long)]
        name: String,
        /// Validate items against this agent's task schema
        #[arg(long)]
        agent: Option<String>,
        /// Description
        #[arg(long)]
        description: Option<String>,
        #[command(flatten)]
        connection: Connection,
    },
}

#[derive(Debug, Subcommand)]
pub enum ReleaseCommand {
    /// The release gate's verdict on a build, as an exit code CI can branch on (0 pass, 1 blocked, 2 untested).
    Gate {
        /// Agent build id.
        #[arg(long)]
        build: Option<String>,
        /// Agent id (with --version).
        #[arg(long)]
        agent: Option<String>,
        /// Declared build version (with --agent).
        #[arg(long)]
        version: Option<String>,
        /// Commit sha the build was registered from (full, or a 7+ char prefix).
        #[arg(long)]
        commit: Option<String>,
        /// Poll until every run attributed to the build is terminal.
        #[arg(long)]
        wait: bool,
        /// Seconds to wait for runs to settle (with --wait).
        #[arg(long, default_value = "1800.0", value_parser = at_least_one_second)]
        timeout: f64,
        /// Seconds between polls (with --wait).
        #[arg(long, default_value = "15.0", value_parser = at_least_one_second)]
        interval: f64,
        /// Print the endpoint's JSON instead of a table.
        #[arg(long = "json")]
        as_json: bool,
        #[command(flatten)]
        connection: Connection,
    },
}

//! The agents-platform commands: `gateway deploy`, `init`, `algorithm list|new`,
//! `secret set|list|delete`, `agent list`, `run start|verify|list`, `dataset upload` and
//! `release gate`, with the original's flags, prints and exit codes (0 success, 1 a
//! refusal or failed request, 2 a usage error; `release gate`: 0 pass, 1 blocked, 2
//! untested or no such build). Where the original crashes with a traceback (a config
//! that is not JSON, a dataset that does not parse, an unreachable host, a missing
//! output directory) this prints one line and exits 1.
//!
//! Parsing and printing only: the requests, the manifest, the dataset reading, the
//! schema check and the gate's rendering live in `gateway_hub_client::platform_client` and
//! `gateway_hub_client::agent_project`.

use crate::exit::Status;
use crate::printer::{err_line as err, out_line as out};
use clap::Subcommand;
use gateway_hub_client::agent_project::{self as project, AgentManifest};
use gateway_hub_client::platform_client::{
    self as platform, python_g, python_join, python_path, Credentials, DatasetFileError, GateError, PlatformClient, Reply,
};
use gateway_world::json::{self, dumps, object, python_str, DumpOptions, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

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
    image: Option<String>,
    /// Agent project directory (for building).
    #[arg(long = "project-dir", default_value = ".")]
    project_dir: String,
    /// Path to the gateway_manifest/ directory.
    #[arg(long = "manifest-dir", default_value = "./gateway_manifest")]
    manifest_dir: String,
    /// Skip Docker build, register image only.
    #[arg(long = "skip-build")]
    skip_build: bool,
    /// Use specific Dockerfile (e.g., Dockerfile.gpu).
    #[arg(long)]
    dockerfile: Option<String>,
    /// Override image tag.
    #[arg(long)]
    tag: Option<String>,
    /// Validate manifest only, don't build or register.
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Gateway server URL (e.g., http://localhost:3000) [env: GATEWAY_HOST].
    #[arg(long)]
    host: Option<String>,
    /// Gateway project API key (sk-lf-...) [env: GATEWAY_SECRET_KEY].
    #[arg(long = "api-key")]
    api_key: Option<String>,
}

/// `gateway init`'s flags.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Agent reference in module:attribute format (e.g., crm_agent:crm_agent).
    #[arg(long, short = 'a')]
    agent: String,
    /// Agent name. Defaults to module name.
    #[arg(long, short = 'n')]
    name: Option<String>,
    /// Output directory for generated files.
    #[arg(long = "output-dir", short = 'o', default_value = ".")]
    output_dir: String,
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
    host: Option<String>,
    /// Gateway project secret key (sk-lf-...) [env: GATEWAY_SECRET_KEY].
    #[arg(long = "api-key")]
    api_key: Option<String>,
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

/// A command's end: the line on stderr already printed, the exit code.
type Outcome = Result<(), Status>;

fn fail(line: impl std::fmt::Display) -> Status {
    err(line);
    Status::FAILED
}

fn finish(outcome: Outcome) -> ExitCode {
    outcome.err().unwrap_or(Status::OK).into()
}

/// The httpx client of a command: credentials resolved as the original resolves them.
fn client(connection: &Connection, timeout: Duration) -> Result<PlatformClient, Status> {
    let credentials = Credentials::resolve(connection.host.as_deref(), connection.api_key.as_deref()).map_err(fail)?;
    PlatformClient::new(&credentials, timeout).map_err(|e| fail(e.to_string()))
}

const TIMEOUT: Duration = Duration::from_secs(30);

/// `Failed (HTTP n): body` and exit 1.
fn failed(reply: &Reply) -> Status {
    fail(format!("Failed (HTTP {}): {}", reply.status, reply.text))
}

fn send(result: Result<Reply, gateway_hub_client::ClientError>) -> Result<Reply, Status> {
    result.map_err(|e| fail(e.to_string()))
}

// ------------------------------------------------------------------ deploy

/// `gateway deploy`.
pub fn deploy(args: DeployArgs) -> ExitCode {
    finish(run_deploy(args))
}

fn run_deploy(args: DeployArgs) -> Outcome {
    let manifest_dir = Path::new(&args.manifest_dir);
    if !manifest_dir.exists() {
        return Err(fail(format!("Error: Manifest directory not found: {}", python_path(&args.manifest_dir))));
    }
    let manifest = project::parse_manifest(manifest_dir, &args.manifest_dir).map_err(|e| fail(format!("Error parsing manifest: {e}")))?;
    let task_schema = project::parse_task_schema(manifest_dir).map_err(|e| fail(format!("Error parsing manifest: {e}")))?;
    out("Validating manifest...");
    out(format!("  Name: {}", python_str(&manifest.name)));
    out(format!("  Version: {}", python_str(&manifest.version)));
    let capabilities = manifest.capabilities.join(", ");
    out(format!("  Capabilities: {}", if capabilities.is_empty() { "none" } else { &capabilities }));
    if task_schema.is_some() {
        out("  Task schema: found");
    }
    if args.dry_run {
        out("Dry-run complete. Manifest is valid.");
        return Ok(());
    }
    let image = args.image.clone().filter(|i| !i.is_empty());
    let mut image_tag = image.clone().or_else(|| args.tag.clone().filter(|t| !t.is_empty()));
    if image_tag.is_none() && !args.skip_build {
        image_tag = Some(format!("{}:latest", python_str(&manifest.name)));
    }
    let mut image_digest = None;
    if !args.skip_build && image.is_none() {
        let tag = image_tag.clone().unwrap_or_default();
        let project_dir = Path::new(&args.project_dir);
        let strategy =
            project::detect_build_strategy(project_dir, args.dockerfile.as_deref()).map_err(|e| fail(format!("Build failed: {e}")))?;
        out(format!("\nBuilding image '{tag}' (strategy: {})...", strategy.value()));
        let built = project::build_image(project_dir, &tag, args.dockerfile.as_deref()).map_err(|e| fail(format!("Build failed: {e}")))?;
        out("  Built successfully!");
        image_digest = project::image_digest(&built);
        image_tag = Some(built);
    }
    let Some(image_tag) = image_tag else {
        return Err(fail("Error: No image specified. Provide an image argument or use --tag."));
    };
    let connection = Connection { host: args.host.clone(), api_key: args.api_key.clone() };
    let client = client(&connection, TIMEOUT)?;
    out(format!("\nRegistering agent '{}' with image '{image_tag}'...", python_str(&manifest.name)));
    register(&client, &manifest, &image_tag, image_digest.as_deref(), task_schema.as_ref())?;
    upload_env_secrets(&connection, manifest_dir)
}

fn register(client: &PlatformClient, manifest: &AgentManifest, image: &str, digest: Option<&str>, schema: Option<&Value>) -> Outcome {
    let reply = send(client.post("/api/public/agents/register", &manifest.payload(image, digest, schema)))?;
    if reply.status != 201 {
        err(format!("Registration failed (HTTP {}):", reply.status));
        match reply.json() {
            Some(body) => err(format!("  {}", dumps(&body, DumpOptions::PRETTY))),
            None => err(format!("  {}", reply.text)),
        }
        return Err(Status::FAILED);
    }
    let body = reply.json().unwrap_or_default();
    let compatible: Vec<String> =
        body.get("compatibleAlgorithms").and_then(Value::as_array).map(|a| a.iter().map(python_str).collect()).unwrap_or_default();
    out("Agent registered successfully!");
    out(format!("  ID: {}", reply.member("id", "None")));
    out(format!("  Name: {}", reply.member("name", "None")));
    out(format!("  Compatible algorithms: {}", compatible.join(", ")));
    Ok(())
}

/// `gateway_manifest/.env` entries as agent-scope secrets: POST, and PUT on 409.
fn upload_env_secrets(connection: &Connection, manifest_dir: &Path) -> Outcome {
    let secrets = project::parse_secrets(manifest_dir).map_err(fail)?;
    if secrets.is_empty() {
        return Ok(());
    }
    out(format!("\nUploading {} secret(s)...", secrets.len()));
    let client = client(connection, Duration::from_secs(15))?;
    for (name, value) in &secrets {
        let created = client.post(
            "/api/public/secrets",
            &object([("name", Value::str(name)), ("value", Value::str(value)), ("scope", Value::str("agent"))]),
        );
        match created {
            Ok(reply) if reply.status == 200 || reply.status == 201 => out(format!("  {name} (created)")),
            Ok(reply) if reply.status == 409 => {
                let path = format!("/api/public/secrets/{}", platform::segment(name));
                match client.put(&path, &object([("value", Value::str(value)), ("scope", Value::str("agent"))])) {
                    Ok(reply) if reply.status == 200 || reply.status == 201 => out(format!("  {name} (updated)")),
                    Ok(reply) => err(format!("  {name} (update failed: HTTP {})", reply.status)),
                    Err(e) => err(format!("  {name} (error: {e})")),
                }
            }
            Ok(reply) => err(format!("  {name} (failed: HTTP {})", reply.status)),
            Err(e) => err(format!("  {name} (error: {e})")),
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ init, algorithm

/// `gateway init`.
pub fn init(args: InitArgs) -> ExitCode {
    finish(run_init(args))
}

fn run_init(args: InitArgs) -> Outcome {
    let output = PathBuf::from(&args.output_dir);
    if !output.is_dir() {
        return Err(fail(format!("Error: output directory {} does not exist: create it first", python_path(&args.output_dir))));
    }
    let module = args.agent.split(':').next().unwrap_or_default();
    let agent_name = args.name.clone().unwrap_or_else(|| module.replace('_', "-"));
    let description = format!("Gateway agent: {agent_name}");
    let shown = |name: &str| python_join(&args.output_dir, name);
    let write = |path: &Path, text: &str| std::fs::write(path, text).map_err(|e| fail(format!("Error: {}: {e}", path.display())));

    let dockerfile = output.join("Dockerfile");
    if dockerfile.exists() {
        out(format!("Warning: {} already exists, skipping.", shown("Dockerfile")));
    } else {
        write(&dockerfile, &project::init_dockerfile(&args.agent))?;
        out(format!("Created {}", shown("Dockerfile")));
    }
    let manifest_dir = output.join("gateway_manifest");
    std::fs::create_dir_all(&manifest_dir).map_err(|e| fail(format!("Error: {}: {e}", manifest_dir.display())))?;
    let agent_yml = manifest_dir.join("agent.yml");
    if agent_yml.exists() {
        out(format!("Warning: {} already exists, skipping.", shown("gateway_manifest/agent.yml")));
    } else {
        write(&agent_yml, &project::init_agent_yml(&agent_name, &description))?;
        out(format!("Created {}", shown("gateway_manifest/agent.yml")));
    }
    let gitignore = output.join(".gitignore");
    let entry = project::GITIGNORE_ENTRY;
    if gitignore.exists() {
        let existing = std::fs::read_to_string(&gitignore).map_err(|e| fail(format!("Error: {}: {e}", gitignore.display())))?;
        if !existing.contains(entry) {
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&gitignore)
                .map_err(|e| fail(format!("Error: {}: {e}", gitignore.display())))?;
            file.write_all(format!("\n# Gateway secrets (API keys)\n{entry}\n").as_bytes())
                .map_err(|e| fail(format!("Error: {}: {e}", gitignore.display())))?;
            out(format!("Updated {} (added {entry})", shown(".gitignore")));
        }
    } else {
        write(&gitignore, &format!("# Gateway secrets (API keys — never commit)\n{entry}\n"))?;
        out(format!("Created {}", shown(".gitignore")));
    }
    let env = manifest_dir.join(".env");
    if !env.exists() {
        write(&env, project::INIT_ENV)?;
        out(format!("Created {} (sample — add your API keys)", shown("gateway_manifest/.env")));
    }
    out("\nAgent project scaffolded!");
    out(format!("  Agent ref: {}", args.agent));
    out(format!("  Name: {agent_name}"));
    out("\nNext steps:");
    out("  1. Add your agent code and requirements.txt");
    out("  2. Add API keys to gateway_manifest/.env");
    out(format!("  3. Build & deploy: gateway deploy --tag {agent_name}:latest"));
    Ok(())
}

/// `gateway algorithm …`.
pub fn algorithm(command: AlgorithmCommand) -> ExitCode {
    match command {
        AlgorithmCommand::List => {
            out(format!("{} {} {} Description", platform::ljust("Name", 12), platform::ljust("Display", 16), platform::ljust("GPU", 6)));
            out("-".repeat(70));
            for (name, display, gpu, description) in project::ALGORITHM_ROWS {
                let gpu = if gpu { "True" } else { "False" };
                out(format!("{} {} {} {description}", platform::ljust(name, 12), platform::ljust(display, 16), platform::ljust(gpu, 6)));
            }
            ExitCode::SUCCESS
        }
        AlgorithmCommand::New { name, output_dir } => finish(new_algorithm(&name, &output_dir)),
    }
}

fn new_algorithm(name: &str, output_dir: &str) -> Outcome {
    if !project::is_python_identifier(name) {
        return Err(fail(format!(
            "Error: '{name}' cannot name an algorithm: use a Python identifier (letters, digits and '_', not starting with a digit), e.g. my_algo"
        )));
    }
    if !Path::new(output_dir).is_dir() {
        return Err(fail(format!("Error: output directory {} does not exist: create it first", python_path(output_dir))));
    }
    let shown = python_join(output_dir, &format!("{name}.py"));
    let path = Path::new(output_dir).join(format!("{name}.py"));
    if path.exists() {
        return Err(fail(format!("Error: {shown} already exists.")));
    }
    std::fs::write(&path, project::algorithm_module(name)).map_err(|e| fail(format!("Error: {shown}: {e}")))?;
    out(format!("Created algorithm scaffold: {shown}"));
    Ok(())
}

// ------------------------------------------------------------------ secrets, agents

/// `gateway secret …`.
pub fn secret(command: SecretCommand) -> ExitCode {
    finish(match command {
        SecretCommand::Set { name, value, description, scope, connection } => secret_set(&name, value, description, &scope, &connection),
        SecretCommand::List { connection } => secret_list(&connection),
        SecretCommand::Delete { name, connection } => {
            let client = match client(&connection, TIMEOUT) {
                Ok(client) => client,
                Err(status) => return status.into(),
            };
            send(client.delete(&format!("/api/public/secrets/{}", platform::segment(&name)))).and_then(|reply| {
                if reply.status == 200 || reply.status == 204 {
                    out(format!("Secret '{name}' deleted."));
                    Ok(())
                } else {
                    Err(failed(&reply))
                }
            })
        }
    })
}

fn secret_set(name: &str, value: Option<String>, description: Option<String>, scope: &str, connection: &Connection) -> Outcome {
    let value = match value {
        Some(value) => value,
        None => crate::hub::prompt_secret_like_click("Secret value").map_err(|e| fail(format!("Error: {e}")))?,
    };
    if value.is_empty() {
        return Err(fail("Error: an empty secret value is refused."));
    }
    let client = client(connection, TIMEOUT)?;
    let mut payload = object([("name", Value::str(name)), ("value", Value::str(&value)), ("scope", Value::str(scope))]);
    if let (Value::Object(map), Some(description)) = (&mut payload, description.filter(|d| !d.is_empty())) {
        map.insert("description".into(), Value::Str(description));
    }
    let reply = send(client.post("/api/public/secrets", &payload))?;
    match reply.status {
        200 | 201 => {
            out(format!("Secret '{}' saved ({})", reply.member("name", name), reply.member("displayValue", "****")));
            Ok(())
        }
        409 => {
            let reply = send(client.put(&format!("/api/public/secrets/{}", platform::segment(name)), &payload))?;
            if reply.status == 200 || reply.status == 201 {
                out(format!("Secret '{name}' updated."));
                Ok(())
            } else {
                Err(failed(&reply))
            }
        }
        _ => Err(failed(&reply)),
    }
}

fn list_of(reply: &Reply, key: &str) -> Vec<Value> {
    reply.json().and_then(|body| body.get(key).and_then(Value::as_array).cloned()).unwrap_or_default()
}

fn field(value: &Value, key: &str) -> String {
    value.get(key).map(python_str).unwrap_or_default()
}

fn secret_list(connection: &Connection) -> Outcome {
    let client = client(connection, TIMEOUT)?;
    let reply = send(client.get("/api/public/secrets", &[]))?;
    if reply.status != 200 {
        return Err(failed(&reply));
    }
    let secrets = list_of(&reply, "secrets");
    if secrets.is_empty() {
        out("No secrets configured. Run `gateway secret set <name>` to add one.");
        return Ok(());
    }
    out(format!("{} {} Description", platform::ljust("Name", 30), platform::ljust("Scope", 10)));
    out("-".repeat(70));
    for secret in &secrets {
        let description = secret.get("description").filter(|d| json_truthy(d)).map(python_str).unwrap_or_default();
        out(format!(
            "{} {} {}",
            platform::ljust(&field(secret, "name"), 30),
            platform::ljust(&field(secret, "scope"), 10),
            platform::prefix(&description, 28)
        ));
    }
    Ok(())
}

fn json_truthy(value: &Value) -> bool {
    gateway_hub_client::client::truthy(value)
}

/// `gateway agent list`.
pub fn agent(command: AgentCommand) -> ExitCode {
    let AgentCommand::List { connection } = command;
    finish((|| {
        let client = client(&connection, TIMEOUT)?;
        let reply = send(client.get("/api/public/agents", &[]))?;
        if reply.status != 200 {
            return Err(failed(&reply));
        }
        let agents = list_of(&reply, "agents");
        if agents.is_empty() {
            out("No agents registered. Run `gateway deploy` to register an agent.");
            return Ok(());
        }
        out(format!("{} {} Compatible", platform::ljust("Name", 20), platform::ljust("Image", 30)));
        out("-".repeat(70));
        for agent in &agents {
            let compatible: Vec<String> =
                agent.get("compatibleAlgorithms").and_then(Value::as_array).map(|a| a.iter().map(python_str).collect()).unwrap_or_default();
            out(format!(
                "{} {} {}",
                platform::ljust(&field(agent, "name"), 20),
                platform::ljust(&platform::prefix(&field(agent, "image"), 28), 30),
                compatible.join(", ")
            ));
        }
        Ok(())
    })())
}

// ------------------------------------------------------------------ runs

/// `gateway run …`.
pub fn run(command: RunCommand) -> ExitCode {
    finish(match command {
        RunCommand::Start { algorithm, agent, dataset, name, config, connection } => {
            run_start(&algorithm, &agent, &dataset, name, config, &connection)
        }
        RunCommand::Verify { algorithm, agent, dataset, connection } => (|| {
            let client = client(&connection, TIMEOUT)?;
            let mut payload = object([("algorithmName", Value::str(&algorithm)), ("agentId", Value::str(&agent))]);
            if let (Value::Object(map), Some(dataset)) = (&mut payload, dataset.filter(|d| !d.is_empty())) {
                map.insert("datasetId".into(), Value::Str(dataset));
            }
            let reply = send(client.post("/api/public/runs/verify", &payload))?;
            if reply.status == 200 || reply.status == 202 {
                out(format!("Verify job queued: {}", reply.member("jobId", "None")));
                Ok(())
            } else {
                Err(failed(&reply))
            }
        })(),
        RunCommand::List { source, limit, connection } => run_list(source, limit, &connection),
    })
}

fn run_start(
    algorithm: &str,
    agent: &str,
    dataset: &str,
    name: Option<String>,
    config: Option<String>,
    connection: &Connection,
) -> Outcome {
    let client = client(connection, TIMEOUT)?;
    let mut payload = json::Map::default();
    payload.insert("algorithmName".into(), Value::str(algorithm));
    payload.insert("agentId".into(), Value::str(agent));
    payload.insert("datasetId".into(), Value::str(dataset));
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        payload.insert("name".into(), Value::Str(name));
    }
    if let Some(config) = config.filter(|c| !c.is_empty()) {
        let parsed = json::parse_loads(&config).map_err(|e| fail(format!("Error: --config is not valid JSON ({e:?}): {config}")))?;
        payload.insert("config".into(), parsed.value);
    }
    let reply = send(client.post("/api/public/runs/start", &Value::Object(payload)))?;
    if reply.status == 200 || reply.status == 201 {
        out("Run started!");
        out(format!("  Run ID: {}", reply.member("runId", "None")));
        out(format!("  Run #:  {}", reply.member("runNumber", "None")));
        out(format!("  Job ID: {}", reply.member("jobId", "None")));
        out(format!("  Status: {}", reply.member("status", "None")));
        Ok(())
    } else {
        err(format!("Failed (HTTP {}):", reply.status));
        err(format!("  {}", reply.text));
        Err(Status::FAILED)
    }
}

fn run_list(source: Option<String>, limit: i64, connection: &Connection) -> Outcome {
    let client = client(connection, TIMEOUT)?;
    let mut query = vec![("limit", limit.to_string())];
    if let Some(source) = source.filter(|s| !s.is_empty()) {
        query.push(("source", source));
    }
    let reply = send(client.get("/api/public/runs", &query))?;
    if reply.status != 200 {
        return Err(failed(&reply));
    }
    let runs = list_of(&reply, "runs");
    if runs.is_empty() {
        out("No runs found.");
        return Ok(());
    }
    out(format!(
        "{} {} {} {}",
        platform::ljust("#", 6),
        platform::ljust("Name", 30),
        platform::ljust("State", 12),
        platform::ljust("Source", 10)
    ));
    out("-".repeat(60));
    for run in &runs {
        let name = run.get("name").filter(|n| json_truthy(n)).map(python_str).unwrap_or_default();
        out(format!(
            "{} {} {} {}",
            platform::ljust(&field(run, "runNumber"), 6),
            platform::ljust(&platform::prefix(&name, 28), 30),
            platform::ljust(&field(run, "state"), 12),
            platform::ljust(&field(run, "source"), 10)
        ));
    }
    Ok(())
}

// ------------------------------------------------------------------ datasets

/// `gateway dataset …`.
pub fn dataset(command: DatasetCommand) -> ExitCode {
    let DatasetCommand::Upload { path, name, agent, description, connection } = command;
    finish(dataset_upload(&path, &name, agent.as_deref(), description, &connection))
}

fn dataset_upload(path: &str, name: &str, agent: Option<&str>, description: Option<String>, connection: &Connection) -> Outcome {
    let file = Path::new(path);
    let items = platform::read_dataset_items(file).map_err(|e| match e {
        DatasetFileError::NotFound => fail(format!("Error: File not found: {path}")),
        DatasetFileError::Empty => fail("Error: No items found in file."),
        DatasetFileError::Unreadable(message) | DatasetFileError::Invalid(message) => fail(format!("Error: {message}")),
    })?;
    let file_name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    out(format!("Found {} items in {file_name}", items.len()));
    if let Some(agent) = agent.filter(|a| !a.is_empty()) {
        validate_against(agent, &items, connection)?;
    }
    out(format!("Uploading {} items as dataset '{name}'...", items.len()));
    let client = client(connection, TIMEOUT)?;
    let mut payload = json::Map::default();
    payload.insert("name".into(), Value::str(name));
    payload.insert("items".into(), Value::Array(items.into_iter().map(|item| object([("input", item)])).collect()));
    if let Some(description) = description.filter(|d| !d.is_empty()) {
        payload.insert("description".into(), Value::Str(description));
    }
    let reply = send(client.post("/api/public/datasets/import", &Value::Object(payload)))?;
    if reply.status != 200 && reply.status != 201 {
        return Err(failed(&reply));
    }
    out("Dataset created!");
    out(format!("  Dataset ID: {}", reply.member("datasetId", "None")));
    out(format!("  Name:       {}", reply.member("datasetName", "None")));
    out(format!("  Items:      {}", reply.member("itemCount", "None")));
    Ok(())
}

/// `--agent`: the items against the agent's `taskInputSchema` (nothing uploaded on a refusal).
fn validate_against(agent: &str, items: &[Value], connection: &Connection) -> Outcome {
    let client = client(connection, TIMEOUT)?;
    let reply = send(client.get("/api/public/agents", &[]))?;
    if reply.status != 200 {
        err(format!("Warning: Could not fetch agents for validation: HTTP {}", reply.status));
        return Ok(());
    }
    let agents = list_of(&reply, "agents");
    let Some(found) = agents.iter().find(|a| a.get("name").and_then(Value::as_str) == Some(agent)) else {
        err(format!("Warning: Agent '{agent}' not found, skipping validation"));
        return Ok(());
    };
    let Some(schema) = found.get("taskInputSchema").filter(|s| json_truthy(s)) else {
        out(format!("Agent '{agent}' has no taskInputSchema, skipping validation"));
        return Ok(());
    };
    out(format!("Validating against agent '{agent}' schema..."));
    let errors =
        platform::validate_items(schema, items).map_err(|e| fail(format!("Error: agent '{agent}' has an invalid taskInputSchema: {e}")))?;
    if !errors.is_empty() {
        err(format!("Validation failed ({} errors):", errors.len()));
        for line in errors.iter().take(10) {
            err(line);
        }
        if errors.len() > 10 {
            err(format!("  ... and {} more", errors.len() - 10));
        }
        return Err(Status::FAILED);
    }
    out(format!("  All {} items valid.", items.len()));
    Ok(())
}

// ------------------------------------------------------------------ release gate

/// `gateway release …`.
pub fn release(command: ReleaseCommand) -> ExitCode {
    let ReleaseCommand::Gate { build, agent, version, commit, wait, timeout, interval, as_json, connection } = command;
    let query = match platform::gate_query(build.as_deref(), agent.as_deref(), version.as_deref(), commit.as_deref()) {
        Ok(query) => query,
        Err(message) => {
            err(format!("Error: {message}"));
            return Status::USAGE.into();
        }
    };
    let client = match client(&connection, TIMEOUT) {
        Ok(client) => client,
        Err(status) => return status.into(),
    };
    let progress = |result: &Value| {
        if as_json {
            return;
        }
        let (runs, pending) = platform::pending_runs(result);
        if runs == 0 {
            err("waiting: no run has recorded this build yet");
        } else if pending > 0 {
            err(format!("waiting: {pending} of {runs} run(s) still going"));
        }
    };
    let fetched = if wait {
        platform::wait_for_gate(&client, &query, Duration::from_secs_f64(timeout), Duration::from_secs_f64(interval), progress).map(
            |(result, settled)| {
                if !settled {
                    err(format!("timed out after {}s; reporting the latest verdict", python_g(timeout)));
                }
                result
            },
        )
    } else {
        platform::fetch_gate(&client, &query)
    };
    let result = match fetched {
        Ok(result) => result,
        Err(GateError::NotFound(message)) => {
            err(format!("Error: {message}"));
            return Status::UNTESTED.into();
        }
        Err(GateError::Status(reply)) => {
            // As the original: a gate the platform would not answer is not a pass.
            err(format!("Failed (HTTP {}): {}", reply.status, reply.text));
            return Status::UNTESTED.into();
        }
        Err(GateError::Transport(message)) => {
            err(message);
            return Status::FAILED.into();
        }
    };
    out(if as_json { platform::render_json(&result) } else { platform::render_table(&result) });
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        // A nicety, never the contract: a summary that cannot be written is ignored.
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = file.write_all(platform::step_summary(&result).as_bytes());
        }
    }
    match platform::exit_code_for(&result) {
        Ok(code) => Status::from_code(code).into(),
        Err(message) => {
            err(format!("Error: {message}"));
            Status::FAILED.into()
        }
    }
}

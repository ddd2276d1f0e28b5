//! An agent project and its registration: `gateway deploy` (the manifest checked, the
//! image built, the agent registered, `gateway_manifest/.env` uploaded as secrets),
//! `gateway init` and `gateway algorithm new` (the scaffolds), `gateway algorithm list`
//! and `gateway agent list`.

use super::calls::{client, fail, failed, field, finish, list_of, send, Outcome, TIMEOUT};
use super::flags::{AgentCommand, AlgorithmCommand, Connection, DeployArgs, InitArgs};
use crate::exit::Status;
use crate::printer::{err_line as err, out_line as out};
use gateway_hub_client::agent_project::{self as project, AgentManifest};
use gateway_hub_client::platform_client::{self as platform, python_join, python_path, PlatformClient};
use gateway_world::json::{dumps, object, python_str, DumpOptions, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

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

//! `gateway worlds connector …`, `gateway worlds skill` and `gateway worlds schema entity add`.
//!
//! Refusals of validate/capture/ingest/conform go to stderr as the original's
//! uncaught `ContractError` line (exit 1); route/entity add answer with the schema
//! commands' JSON envelope.

use crate::args::HubUrl;
use crate::exit::Status;
use crate::printer::{self, errln, out, outln};
use clap::{Args, Subcommand};
use gateway_connector::authoring::{compile_in_scratch, entity_add, route_add, EntityDecl, Payload, Route};
use gateway_connector::capture::{capture, set_pair, CaptureRequest};
use gateway_connector::skill::{install_skill, next_step, packaged_skills, skill_text, SKILL_NAME};
use gateway_hub_client::captures_client::{CaptureOutcome, RemoteCapture};
use gateway_world::json::{object, Value};
use gateway_world::{ContractError, Error};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum ConnectorCommand {
    /// Parse connector.toml and list its operations.
    Validate {
        /// World directory holding connector.toml.
        path: PathBuf,
    },
    /// Call the live connection once (following its cursor) and record every page under captures/.
    Capture {
        /// World directory holding connector.toml.
        path: PathBuf,
        /// Operation name from connector.toml.
        #[arg(long)]
        op: String,
        /// Path argument, name=value (repeatable).
        #[arg(long = "arg")]
        args: Vec<String>,
        /// Query parameter, name=value (repeatable).
        #[arg(long = "param")]
        params: Vec<String>,
        /// Override [capture].max_pages.
        #[arg(long = "max-pages")]
        max_pages: Option<i64>,
        /// Run the capture on the hub, with the environment's secret, and pull the pages
        /// into captures/ here. The hub calls only hosts its operator allows (`hub serve
        /// --capture-allow`), at public addresses, GET only, no redirect to another host.
        #[arg(long)]
        remote: bool,
        /// Environment slug or id for --remote (default: the world's directory name).
        #[arg(long)]
        environment: Option<String>,
        /// Seconds to wait for a --remote capture.
        #[arg(long, default_value_t = 900)]
        timeout: u64,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Seed data/initial.json from the successful captures, gated by the world's contract.
    Ingest {
        /// World directory holding captures/.
        path: PathBuf,
        /// Batch id; defaults to the next initial version.
        #[arg(long = "batch-id")]
        batch_id: Option<String>,
    },
    /// Serve the world and check every operation's answer against the vendor's OpenAPI.
    Conform {
        /// World directory holding connector.toml.
        path: PathBuf,
        /// The vendor's OpenAPI document (JSON or YAML); repeatable.
        #[arg(long, required = true)]
        openapi: Vec<PathBuf>,
        /// Write the full report as JSON here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Check only the first N operations.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Declare routes in connector.toml without hand-editing it.
    Route {
        #[command(subcommand)]
        command: RouteCommand,
    },
    /// Save the template as a workspace connector on the hub: created on first publish, a new
    /// commit after. A world directory is mapped back into the template layout; data/,
    /// captures/, db/ and generated files stay behind. The hub compiles the template first
    /// and refuses one that does not make a world; paths no longer present are removed.
    Publish(crate::workspace::PublishArgs),
    /// List this project's workspace connectors (--hub adds the ones other projects published).
    List(crate::workspace::ListArgs),
    /// Write a workspace connector's template files to a directory.
    Pull(crate::workspace::PullArgs),
    /// Copy a connector another project published into this project, with provenance.
    Clone(crate::workspace::CloneArgs),
    /// The connector authoring skill: print it, or --install it into a repository's .claude/.
    Skill {
        /// Repository to install the skill and agent into (under its .claude/).
        #[arg(long)]
        install: Option<PathBuf>,
        /// Overwrite an existing file whose content differs.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum RouteCommand {
    /// Append one [[operations]] (and its [operations.api]) to connector.toml.
    Add(Box<RouteAddArgs>),
}

/// `worlds connector route add`'s arguments.
#[derive(Debug, clap::Args)]
pub struct RouteAddArgs {
    /// World directory holding connector.toml.
    pub path: PathBuf,
    /// Operation name (snake_case).
    pub name: String,
    /// Path template, e.g. /v1/things/{id}.
    #[arg(long = "path")]
    pub route: String,
    /// HTTP method.
    #[arg(short = 'X', long = "method", default_value = "GET")]
    pub method: String,
    /// Query parameter (repeatable).
    #[arg(long = "param")]
    pub params: Vec<String>,
    /// Entity the route reads or writes.
    #[arg(long)]
    pub entity: Option<String>,
    /// Dotted path to the rows in a response.
    #[arg(long)]
    pub results: Option<String>,
    /// create | update | delete | handler.
    #[arg(long)]
    pub action: Option<String>,
    /// Argument=row field the route selects on (repeatable).
    #[arg(long = "filter")]
    pub filter: Vec<String>,
    /// Row field=body path for writes (repeatable).
    #[arg(long = "body")]
    pub body: Vec<String>,
    /// Function in the world's api/handlers.py.
    #[arg(long)]
    pub handler: Option<String>,
    /// Answer one row, not a list.
    #[arg(long)]
    pub single: bool,
    /// Argument=equals|contains|prefix: how a filtered argument compares (repeatable).
    #[arg(long = "match")]
    pub matching: Vec<String>,
    /// The envelope key of this route's answers ("" = a bare array).
    #[arg(long)]
    pub envelope: Option<String>,
    /// The success status.
    #[arg(long)]
    pub status: Option<i64>,
    /// Field=JSON value a created row holds unless given (repeatable).
    #[arg(long = "default")]
    pub defaults: Vec<String>,
    /// Field=uuid|int|now|int-in-parent: a generated field of created rows (repeatable).
    #[arg(long)]
    pub generate: Vec<String>,
    /// Any other [operations.api] key as KEY=<TOML value> (repeatable), e.g.
    /// --api 'parent=[{entity = "repos", match = {owner = "owner.login"}}]' --api 'link={repo_id = "id"}'.
    #[arg(long = "api", value_name = "KEY=TOML")]
    pub api: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum EntityCommand {
    /// Declare one entity: its payload, key, uniques and relationships.
    Add {
        /// World directory.
        path: PathBuf,
        /// Entity name (snake_case).
        name: String,
        /// The payload is this $defs definition.
        #[arg(long = "ref", group = "payload")]
        reference: Option<String>,
        /// The payload is a closed object: "a:string,b:integer?" (? = optional).
        #[arg(long, group = "payload")]
        fields: Option<String>,
        /// The payload is this inline JSON schema.
        #[arg(long, group = "payload")]
        schema: Option<String>,
        /// Primary key field(s), comma-separated.
        #[arg(long)]
        key: String,
        /// A unique key, fields comma-separated (repeatable).
        #[arg(long)]
        unique: Vec<String>,
        /// FIELD->entity, or FIELD,FIELD->entity for a composite key (repeatable).
        #[arg(long)]
        relationship: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct SkillArgs {
    /// Packaged skill: connector-schema-authoring, world-data-ingestion, worlds-getting-started.
    name: Option<String>,
    /// List the skills this build ships and exit.
    #[arg(long)]
    list: bool,
    /// Repository to install the skill (and any agent it ships) into, under .claude/; every skill when no NAME.
    #[arg(long)]
    install: Option<PathBuf>,
    /// Overwrite an existing file whose content differs.
    #[arg(long)]
    force: bool,
}

/// The original's uncaught refusal: one line on stderr, exit 1.
fn refused(error: &dyn std::fmt::Display, kind: &str) -> ExitCode {
    errln!("{kind}: {error}");
    Status::FAILED.into()
}

fn engine_refused(error: Error) -> ExitCode {
    match error {
        Error::Contract(contract) => refused(&contract, "ContractError"),
        other => refused(&other, "Error"),
    }
}

/// `name=value` pairs, as the original's `_pairs` reads them (usage error otherwise).
fn pairs(values: &[String], what: &str) -> Result<Vec<(String, String)>, ExitCode> {
    let mut out = Vec::new();
    for item in values {
        let Some((key, value)) = item.split_once('=') else {
            errln!("Error: Invalid value: {what} must look like name=value, got '{item}'");
            return Err(Status::USAGE.into());
        };
        set_pair(&mut out, key.trim(), value);
    }
    Ok(out)
}

fn envelope(outcome: Result<Value, ContractError>) -> ExitCode {
    let (value, code) = match outcome {
        Ok(value) => (value, ExitCode::SUCCESS),
        Err(error) => (object([("status", Value::str("rejected")), ("error", error.detail())]), Status::FAILED.into()),
    };
    printer::json_line(&value);
    code
}

/// `capture --remote`: the same refusals as a local capture before any round trip, then
/// the platform's capture; written pages on stdout, the request id and refusals on stderr.
fn remote_capture(path: &Path, request: &RemoteCapture, host: Option<&str>) -> ExitCode {
    if let Err(error) = gateway_connector::spec::load_spec(path) {
        return refused(&error, "ContractError");
    }
    let outcome = gateway_hub_client::environments_client::EnvironmentsClient::from_env(host)
        .and_then(|client| client.remote_capture(path, request, &mut |line| errln!("{line}")));
    match outcome {
        Ok(CaptureOutcome::Written(files)) => {
            for file in files {
                outln!("{}", file.strip_prefix(path).unwrap_or(&file).to_string_lossy().replace('\\', "/"));
            }
            ExitCode::SUCCESS
        }
        Ok(CaptureOutcome::Refused(line)) => {
            errln!("{line}");
            Status::FAILED.into()
        }
        Err(error) => {
            errln!("{error}");
            Status::FAILED.into()
        }
    }
}

pub fn run(command: ConnectorCommand) -> ExitCode {
    match command {
        ConnectorCommand::Validate { path } => match gateway_connector::spec::load_spec(&path) {
            Ok(spec) => {
                outln!("{}  {}  auth={}", spec.slug, spec.base_url, spec.scheme);
                for op in &spec.operations {
                    let target = op.entity.as_ref().map(|e| format!(" -> {e}")).unwrap_or_default();
                    outln!("  {}: {} {}{target}", op.name, op.method, op.path);
                }
                ExitCode::SUCCESS
            }
            Err(error) => refused(&error, "ContractError"),
        },
        ConnectorCommand::Capture { path, op, args, params, max_pages, remote, environment, timeout, host } => {
            let (args, params) = match (pairs(&args, "--arg"), pairs(&params, "--param")) {
                (Ok(a), Ok(p)) => (a, p),
                (Err(code), _) | (_, Err(code)) => return code,
            };
            if remote {
                let request = RemoteCapture { op, args, params, max_pages, environment, timeout };
                return remote_capture(&path, &request, host.as_deref());
            }
            let request = CaptureRequest { op, args, params, max_pages };
            match capture(&path, &request, &mut |line| errln!("# {line}")) {
                Ok(written) => {
                    for file in written {
                        outln!("{}", file.strip_prefix(&path).unwrap_or(&file).to_string_lossy());
                    }
                    ExitCode::SUCCESS
                }
                Err(error) => refused(&error, "ContractError"),
            }
        }
        ConnectorCommand::Ingest { path, batch_id } => match gateway_connector::ingest::ingest(&path, batch_id.as_deref()) {
            Ok(outcome) => {
                outln!("batch {}: {} mutations", outcome.batch, outcome.mutations);
                let mut counts = outcome.entity_counts;
                counts.sort();
                for (entity, count) in counts {
                    outln!("  {entity}: {count}");
                }
                ExitCode::SUCCESS
            }
            Err(error) => engine_refused(error),
        },
        ConnectorCommand::Conform { path, openapi, out, limit } => conform(&path, &openapi, out.as_deref(), limit),
        ConnectorCommand::Route { command: RouteCommand::Add(args) } => route_add_command(*args),
        ConnectorCommand::Publish(args) => crate::workspace::publish(args),
        ConnectorCommand::List(args) => crate::workspace::list(args),
        ConnectorCommand::Pull(args) => crate::workspace::pull(args),
        ConnectorCommand::Clone(args) => crate::workspace::clone(args),
        ConnectorCommand::Skill { install, force } => print_or_install(SKILL_NAME, install.as_deref(), force),
    }
}

/// `worlds connector route add`.
fn route_add_command(args: RouteAddArgs) -> ExitCode {
    let parsed = (|| {
        let defaults = pairs(&args.defaults, "--default")?
            .into_iter()
            .map(|(field, text)| match gateway_world::json::parse(&text) {
                Ok(parsed) => Ok((field, parsed.value)),
                Err(_) => {
                    errln!("Error: Invalid value: --default {field}={text}: the value is not JSON");
                    Err(ExitCode::from(Status::USAGE))
                }
            })
            .collect::<Result<Vec<_>, ExitCode>>()?;
        Ok::<_, ExitCode>((
            pairs(&args.filter, "--filter")?,
            pairs(&args.body, "--body")?,
            pairs(&args.matching, "--match")?,
            defaults,
            pairs(&args.generate, "--generate")?,
            pairs(&args.api, "--api")?,
        ))
    })();
    let (filter, body, matching, defaults, generate, extra) = match parsed {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let path = args.path;
    let route = Route {
        name: args.name,
        path: args.route,
        method: args.method,
        params: args.params,
        entity: args.entity,
        results: args.results,
        action: args.action,
        filter,
        body,
        handler: args.handler,
        single: args.single,
        matching,
        envelope: args.envelope,
        status: args.status,
        defaults,
        generate,
        extra,
    };
    let world = path.clone();
    // The serving settings as a server would take them, links left to the contract's
    // relationships included (when the world has a contract to read).
    let check = move |spec: &gateway_connector::spec::Spec| {
        let mut settings = gateway_serve::settings::load_api_settings(&world, spec)?;
        match gateway_world::World::open(&world).and_then(|opened| opened.contract()) {
            Ok(contract) => gateway_serve::nested::link_from_contract(&mut settings, spec, &contract),
            Err(_) => Ok(()),
        }
    };
    envelope(route_add(&path, &route, &check))
}

fn conform(path: &Path, openapi: &[PathBuf], out: Option<&Path>, limit: Option<usize>) -> ExitCode {
    let report = match gateway_conform::conform(path, openapi, limit) {
        Ok(report) => report,
        Err(gateway_conform::ConformError::Contract(error)) => return refused(&error, "ContractError"),
        Err(error) => return refused(&error, "Error"),
    };
    for line in report.lines() {
        outln!("{line}");
    }
    for note in &report.notes {
        errln!("# note: {note}");
    }
    printer::json_python(&report.summary());
    // Ours on purpose: the original exits 0 when nothing was checked.
    for failure in report.failures() {
        errln!("Error: {failure}");
    }
    if let Some(out) = out {
        if let Err(error) = std::fs::write(out, report.to_text()) {
            errln!("Error: {}: {error}", out.display());
            return Status::FAILED.into();
        }
        outln!("report: {}", out.display());
    }
    if report.failed() {
        Status::FAILED.into()
    } else {
        ExitCode::SUCCESS
    }
}

pub fn entity(command: EntityCommand) -> ExitCode {
    let EntityCommand::Add { path, name, reference, fields, schema, key, unique, relationship } = command;
    let payload = match (reference, fields, schema) {
        (Some(r), _, _) => Payload::Ref(r),
        (_, Some(f), _) => Payload::Fields(f),
        (_, _, Some(s)) => Payload::Schema(s),
        _ => {
            errln!("Error: one of --ref, --fields or --schema gives the payload");
            return Status::USAGE.into();
        }
    };
    let split = |text: &str| text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect::<Vec<_>>();
    let mut relationships = Vec::new();
    for item in &relationship {
        let Some((fields, target)) = item.split_once("->").filter(|(fields, _)| !split(fields).is_empty()) else {
            errln!("Error: --relationship must look like FIELD->entity (or FIELD,FIELD->entity), got '{item}'");
            return Status::USAGE.into();
        };
        relationships.push((split(fields), target.trim().to_string()));
    }
    let decl = EntityDecl { name, payload, key: split(&key), unique: unique.iter().map(|u| split(u)).collect(), relationships };
    let world = path.clone();
    let compile = move |text: &str| compile_in_scratch(&world, text);
    envelope(entity_add(&path, &decl, &compile))
}

/// `install / relative` as Python's Path shows it (`.` vanishes, trailing slashes go).
fn shown(install: &Path, relative: &str) -> String {
    let base = install.to_string_lossy();
    let base = base.trim_end_matches('/');
    if base.is_empty() || base == "." {
        relative.to_string()
    } else {
        format!("{base}/{relative}")
    }
}

fn print_or_install(name: &str, install: Option<&Path>, force: bool) -> ExitCode {
    let text = match skill_text(name) {
        Ok(text) => text,
        Err(message) => {
            errln!("{message}");
            return Status::FAILED.into();
        }
    };
    let Some(install) = install else {
        out!("{text}");
        return ExitCode::SUCCESS;
    };
    let report = match install_skill(install, name, force) {
        Ok(report) => report,
        Err(message) => {
            errln!("{message}");
            return Status::FAILED.into();
        }
    };
    if !report.conflicts.is_empty() {
        errln!("Refusing to overwrite files that differ from the packaged skill:");
        for relative in &report.conflicts {
            errln!("  {}", shown(install, relative));
        }
        errln!("Pass --force to replace them.");
        return Status::FAILED.into();
    }
    for relative in &report.written {
        outln!("wrote {}", shown(install, relative));
    }
    for relative in &report.unchanged {
        outln!("unchanged {}", shown(install, relative));
    }
    if let Some(step) = next_step(name) {
        outln!("next: {step}");
    }
    ExitCode::SUCCESS
}

pub fn skill(args: SkillArgs) -> ExitCode {
    if args.list || (args.name.is_none() && args.install.is_none()) {
        for name in packaged_skills() {
            outln!("{name}");
        }
        if args.name.is_none() && !args.list {
            errln!("Name one to print it, or --install DIR to land every skill in a repository.");
        }
        return ExitCode::SUCCESS;
    }
    match &args.name {
        None => {
            for name in packaged_skills() {
                let code = print_or_install(name, args.install.as_deref(), args.force);
                if code != ExitCode::SUCCESS {
                    return code;
                }
            }
            ExitCode::SUCCESS
        }
        Some(name) => print_or_install(name, args.install.as_deref(), args.force),
    }
}

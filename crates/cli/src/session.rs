//! `gateway worlds session …` (live world sessions) and `gateway worlds task …`
//! (stored world tasks): the original's flags, its JSON prints (`json.dumps(…,
//! indent=2)`), its stderr lines and exit codes (1 for a refusal or a failed request,
//! 2 for the original's own usage refusals).
//!
//! Argument parsing and printing only: the requests, the polling and the shapes of
//! what is printed live in `gateway_hub_client::sessions_client`. This module does not drive
//! a browser: `session browse` stops at the surfaces check (see its doc).

use crate::args::HubUrl;
use crate::choices::Browse;
use crate::exit::Status;
use crate::printer::{self, errln, outln};
use clap::Subcommand;
use gateway_hub_client::sessions_client::{self as sessions, SessionError, SessionsClient, WorldPin, READY_TIMEOUT_SEC};
use gateway_world::json::{object, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Open a live session and print where it answers.
    Open {
        /// World slug (optionally slug@ref).
        slug: String,
        /// Bundled task / scenario to open the session on.
        #[arg(long, short = 't')]
        task: Option<String>,
        /// Stored task (see `worlds task`) to open the session on instead of --task.
        #[arg(long = "task-id")]
        task_id: Option<String>,
        /// With --task-id: open that version of the task instead of the current one.
        #[arg(long = "task-version", allow_negative_numbers = true)]
        task_version: Option<i64>,
        /// JSON file holding an inline task spec {instruction, seed?, grader?, metadata?} (World Host worlds).
        #[arg(long = "task-file")]
        task_file: Option<PathBuf>,
        /// Surface to ask for besides tools: api, ui, browser (repeatable).
        #[arg(long = "surface", short = 's')]
        surface: Vec<String>,
        /// Pin an exact world version.
        #[arg(long = "version-id")]
        version_id: Option<String>,
        /// Return as soon as the platform accepts the session.
        #[arg(long = "no-wait")]
        no_wait: bool,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Fork a live session: a new session holding a copy of its world's state now.
    ///
    /// Beyond the original. The fork has its own id and token, its parent's task, tools
    /// and surfaces, and runs on its parent's host; closing either leaves the other.
    /// Printed as `session open` prints a session, with `forkedFrom`.
    Fork {
        session_id: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Print a session's state, tools and surfaces.
    Status {
        session_id: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Dump the world's state right now — every entity's rows, what a grader reads.
    State {
        session_id: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Put the world back to its opening state (snapshot plus the task's seed).
    Reset {
        session_id: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Run the session's task grader against the world's current state and print {reward, rewards, raw}.
    Grade {
        session_id: String,
        /// Seconds to wait for the grade; defaults to the grader's budget (a rubric judge gets 15 min).
        #[arg(long, allow_negative_numbers = true)]
        timeout: Option<f64>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Open the session's UI in its browser surface (this build checks the surfaces and stops).
    Browse {
        session_id: String,
        /// Where the UI opens (auto prefers hosted).
        #[arg(long, value_enum, default_value = "auto")]
        mode: Browse,
        /// UI path to open instead of the declared entry.
        #[arg(long)]
        path: Option<String>,
        /// Write a PNG of the page here.
        #[arg(long)]
        screenshot: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// End a session.
    Close {
        session_id: String,
        /// Hand the container back to the warm pool.
        #[arg(long = "keep-warm")]
        keep_warm: bool,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Put rows into a LIVE session's world and wait for the engine's answer.
    Seed {
        session_id: String,
        /// Rows files: {entity: [rows]} JSON, {entity,row} JSONL, or bare rows.
        #[arg(required = true)]
        rows: Vec<PathBuf>,
        /// The entity bare-row files hold.
        #[arg(long)]
        entity: Option<String>,
        /// append (upsert by primary key) | replace (named entities). Checked once the session
        /// answers, as the original checks it (a bad one: exit 1 after that request).
        #[arg(long, default_value = "append")]
        mode: String,
        #[command(flatten)]
        host: HubUrl,
    },
    /// The session's call log as JSONL, one {seq, kind, tool, args, result, error, completedAt} per line.
    Export {
        session_id: String,
        /// Write the JSONL here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// A session's task: promote an inline one into a stored task.
    Task {
        #[command(subcommand)]
        command: SessionTaskCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionTaskCommand {
    /// Store the session's inline task as a reusable project task (version 1).
    Save {
        session_id: String,
        /// Stored task name (default: the spec's own).
        #[arg(long, short = 'n')]
        name: Option<String>,
        /// Pin the task to this world slug.
        #[arg(long, short = 'w')]
        world: Option<String>,
        /// Do not pin the task to the session's world.
        #[arg(long = "no-world")]
        no_world: bool,
        /// Version note.
        #[arg(long, short = 'm')]
        message: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Store a task spec as version 1 of a new project task.
    Create {
        /// JSON file: {instruction, seed?, grader?, metadata?, name?}.
        spec: PathBuf,
        /// Task name (default: the spec's name).
        #[arg(long, short = 'n')]
        name: Option<String>,
        /// Pin the task to this world slug.
        #[arg(long, short = 'w')]
        world: Option<String>,
        /// Version note.
        #[arg(long, short = 'm')]
        message: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Change a task: a new --spec appends a version; --name / --world / --no-world change in place.
    Update {
        task_id: String,
        /// JSON file with the new spec → the next version.
        #[arg(long)]
        spec: Option<PathBuf>,
        /// Rename the task.
        #[arg(long, short = 'n')]
        name: Option<String>,
        /// Pin the task to this world slug.
        #[arg(long, short = 'w')]
        world: Option<String>,
        /// Unpin the task from its world.
        #[arg(long = "no-world")]
        no_world: bool,
        /// Version note.
        #[arg(long, short = 'm')]
        message: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// The project's stored tasks, newest change first.
    List {
        /// Only tasks pinned to this world.
        #[arg(long, short = 'w')]
        world: Option<String>,
        /// key=value the task's spec metadata must carry (repeatable, all must match).
        #[arg(long)]
        metadata: Vec<String>,
        #[arg(long, allow_negative_numbers = true)]
        page: Option<i64>,
        #[arg(long, allow_negative_numbers = true)]
        limit: Option<i64>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// One task: its current (or --version) spec and its version history.
    Show {
        task_id: String,
        /// Show this version's spec instead of the current.
        #[arg(long, allow_negative_numbers = true)]
        version: Option<i64>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Check a task fits a world version without opening a session; exit 1 when it does not.
    Validate {
        /// The stored task's id; with --path, a task spec JSON file.
        task_id: String,
        /// Beyond the original: validate the spec file TASK_ID against the world
        /// directory at PATH, on this machine (entities, tools, and the self-test:
        /// a no-op agent below the pass bar, metadata.solution reaching it).
        #[arg(long)]
        path: Option<PathBuf>,
        /// Validate this task version (default: current).
        #[arg(long, allow_negative_numbers = true)]
        version: Option<i64>,
        /// Against this world's head version.
        #[arg(long, short = 'w')]
        world: Option<String>,
        /// Against this exact world version.
        #[arg(long = "version-id")]
        version_id: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Grade a world state with a task spec's grader, offline (beyond the original).
    ///
    /// Prints {"reward": R, "rewards": {…}} (rewards in check order), or the spec's
    /// refusal ({"status": "rejected", "error": {…}}) and exits 1.
    Grade {
        /// The task spec (JSON).
        spec: PathBuf,
        /// The world state: `{entity: {key: row}}` (a session's state) or `{entity: [row]}`.
        #[arg(long)]
        state: PathBuf,
    },
    /// Remove a stored task and all its versions. Open sessions keep their copy.
    Delete {
        task_id: String,
        #[command(flatten)]
        host: HubUrl,
    },
}

/// How a command ends when it does not succeed: a line on stderr and an exit code.
struct Exit {
    status: Status,
    message: String,
}

impl Exit {
    fn usage(message: impl Into<String>) -> Exit {
        Exit { status: Status::USAGE, message: message.into() }
    }

    fn refused(message: impl Into<String>) -> Exit {
        Exit { status: Status::FAILED, message: message.into() }
    }
}

impl From<SessionError> for Exit {
    fn from(error: SessionError) -> Self {
        Exit::refused(error.to_string())
    }
}

type Outcome = Result<(), Exit>;

fn finish(outcome: Outcome) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Exit { status, message }) => {
            if !message.is_empty() {
                errln!("{message}");
            }
            status.into()
        }
    }
}

/// `str(Path(text))`: pathlib's spelling of a path (no `.` parts, no repeated or
/// trailing `/`).
fn python_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let prefix = if text.starts_with("//") && !text.starts_with("///") {
        "//"
    } else if text.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = text.split('/').filter(|part| !part.is_empty() && *part != ".").collect();
    let joined = format!("{prefix}{}", parts.join("/"));
    if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

fn read_spec(path: &Path, flag: &str) -> Result<Value, Exit> {
    let shown = python_path(path);
    sessions::read_task_spec(path, &shown).map_err(|reason| Exit::usage(format!("{flag} {shown}: {reason}")))
}

fn client(host: Option<&str>) -> Result<SessionsClient, Exit> {
    Ok(SessionsClient::from_env(host)?)
}

/// `_world_from_flags`: `--world` / `--no-world` → the `world` member to send.
fn world_pin(world: Option<&str>, no_world: bool) -> Result<WorldPin, Exit> {
    let world = world.filter(|w| !w.is_empty());
    if world.is_some() && no_world {
        return Err(Exit::usage("--world and --no-world exclude each other"));
    }
    Ok(match (no_world, world) {
        (true, _) => WorldPin::Unpin,
        (false, Some(slug)) => WorldPin::Slug(slug.to_string()),
        (false, None) => WorldPin::Unset,
    })
}

/// `_task_from_flags`: exactly one task source.
fn task_from_flags(task: Option<&str>, task_id: Option<&str>, task_version: Option<i64>, task_file: Option<&Path>) -> Result<Value, Exit> {
    let task = task.filter(|t| !t.is_empty());
    let task_id = task_id.filter(|t| !t.is_empty());
    let task_file = task_file.filter(|f| !f.as_os_str().is_empty());
    if [task.is_some(), task_id.is_some(), task_file.is_some()].iter().filter(|given| **given).count() > 1 {
        return Err(Exit::usage("worlds session open takes one of --task, --task-id or --task-file"));
    }
    if task_version.is_some() && task_id.is_none() {
        return Err(Exit::usage("--task-version needs --task-id"));
    }
    if let Some(task) = task {
        return Ok(Value::str(task));
    }
    if let Some(id) = task_id {
        let mut reference = vec![("id", Value::str(id))];
        if let Some(version) = task_version {
            reference.push(("version", Value::Int(version)));
        }
        return Ok(object(reference));
    }
    match task_file {
        Some(file) => read_spec(file, "--task-file"),
        None => Err(Exit::usage("worlds session open needs --task, --task-id or --task-file")),
    }
}

/// Run one `worlds session` command.
pub fn run_session(command: SessionCommand) -> ExitCode {
    finish(session(command))
}

/// Run one `worlds task` command.
pub fn run_task(command: TaskCommand) -> ExitCode {
    finish(task(command))
}

fn session(command: SessionCommand) -> Outcome {
    match command {
        SessionCommand::Open { slug, task, task_id, task_version, task_file, surface, version_id, no_wait, host } => {
            let task_ref = task_from_flags(task.as_deref(), task_id.as_deref(), task_version, task_file.as_deref())?;
            sessions::check_task(&task_ref)?;
            let client = client(host.as_deref())?;
            let mut session = client.open(&slug, &task_ref, version_id.as_deref(), &surface)?;
            if !no_wait {
                match session.ready(READY_TIMEOUT_SEC) {
                    Ok(()) => {}
                    Err(SessionError::Timeout(message)) => {
                        // Still coming (a cold pod): print where it will answer so the
                        // caller polls instead of losing the id.
                        printer::json(&session.descriptor(false)?);
                        return Err(Exit::refused(format!("{message} Poll `gateway worlds session status {}` until ready.", session.id())));
                    }
                    Err(error) => return Err(error.into()),
                }
            }
            let ready = session.is_ready();
            printer::json(&session.descriptor(ready)?);
            Ok(())
        }
        SessionCommand::Fork { session_id, host } => {
            let client = client(host.as_deref())?;
            let mut fork = client.fork_session(&session_id)?;
            let ready = fork.is_ready();
            let Value::Object(mut out) = fork.descriptor(ready)? else { unreachable!("a descriptor is an object") };
            out.insert("forkedFrom".into(), Value::str(session_id));
            printer::json(&Value::Object(out));
            Ok(())
        }
        SessionCommand::Status { session_id, host } => {
            let client = client(host.as_deref())?;
            let mut session = client.attach(&session_id)?;
            let mut out = session.status()?.clone();
            out.extend(session.surfaces_json()?);
            printer::json(&Value::Object(out));
            Ok(())
        }
        SessionCommand::State { session_id, host } => {
            let client = client(host.as_deref())?;
            let state = client.attach(&session_id)?.world_state()?;
            printer::json(&state);
            Ok(())
        }
        SessionCommand::Reset { session_id, host } => {
            let client = client(host.as_deref())?;
            client.attach(&session_id)?.reset()?;
            printer::json(&object([("sessionId", Value::str(session_id)), ("reset", Value::Bool(true))]));
            Ok(())
        }
        SessionCommand::Grade { session_id, timeout, host } => {
            if timeout.is_some_and(|t| t <= 0.0) {
                return Err(Exit::refused("--timeout must be a positive number of seconds"));
            }
            let client = client(host.as_deref())?;
            let raw = client.attach(&session_id)?.grade(timeout)?;
            printer::json(&sessions::grade_report(&session_id, &raw));
            Ok(())
        }
        SessionCommand::Browse { session_id, mode, path: _, screenshot: _, host } => {
            let client = client(host.as_deref())?;
            let mut session = client.attach(&session_id)?;
            session.browser_surfaces(mode.into())?;
            Err(Exit::refused(format!(
                "Driving a world UI is not supported by this client (the original drives it with Playwright): \
                 open the `ui.entry` or `browser.wsUrl` that `gateway worlds session status {session_id}` prints with your own browser."
            )))
        }
        SessionCommand::Close { session_id, keep_warm, host } => {
            let client = client(host.as_deref())?;
            let closed = client.attach(&session_id)?.close(keep_warm)?;
            printer::json(&closed);
            Ok(())
        }
        SessionCommand::Seed { session_id, rows, entity, mode, host } => {
            let sources: Vec<String> = rows.iter().map(|p| python_path(p)).collect();
            let parsed = gateway_world::import::parse_rows(&sources, entity.as_deref()).map_err(|e| Exit::refused(e.to_string()))?;
            let rows = Value::Object(parsed.rows.into_iter().map(|(name, rows)| (name, Value::Array(rows))).collect());
            let client = client(host.as_deref())?;
            let mut session = client.attach(&session_id)?;
            let mode: gateway_world::plan::Mode = mode.parse().map_err(|_| Exit::refused("mode must be append or replace"))?;
            let result = session.seed(rows, mode)?;
            printer::json(&object([("sessionId", Value::str(session_id)), ("mode", Value::str(mode.as_str())), ("result", result)]));
            Ok(())
        }
        SessionCommand::Export { session_id, out, host } => {
            let client = client(host.as_deref())?;
            let calls = client.attach(&session_id)?.calls()?;
            let lines = sessions::export_lines(&calls);
            let mut text = lines.join("\n");
            if !lines.is_empty() {
                text.push('\n');
            }
            match out {
                None => {
                    let _ = std::io::stdout().write_all(text.as_bytes());
                }
                Some(out) => {
                    std::fs::write(&out, text).map_err(|e| Exit::refused(format!("{}: {e}", python_path(&out))))?;
                    outln!("wrote {} calls to {}", lines.len(), python_path(&out));
                }
            }
            Ok(())
        }
        SessionCommand::Task { command: SessionTaskCommand::Save { session_id, name, world, no_world, message, host } } => {
            let pin = world_pin(world.as_deref(), no_world)?;
            let client = client(host.as_deref())?;
            let saved = client.attach(&session_id)?.save_task(name.as_deref(), &pin, message.as_deref())?;
            printer::json(&saved);
            Ok(())
        }
    }
}

fn task(command: TaskCommand) -> Outcome {
    match command {
        TaskCommand::Create { spec, name, world, message, host } => {
            let parsed = read_spec(&spec, "spec")?;
            let client = client(host.as_deref())?;
            printer::json(&client.create_task(&parsed, name.as_deref(), world.as_deref(), message.as_deref())?);
            Ok(())
        }
        TaskCommand::Update { task_id, spec, name, world, no_world, message, host } => {
            let pin = world_pin(world.as_deref(), no_world)?;
            if spec.is_none() && name.is_none() && !no_world && world.is_none() {
                return Err(Exit::usage("worlds task update needs --spec, --name, --world or --no-world"));
            }
            let parsed = spec.as_deref().map(|path| read_spec(path, "--spec")).transpose()?;
            let client = client(host.as_deref())?;
            printer::json(&client.update_task(&task_id, parsed.as_ref(), name.as_deref(), &pin, message.as_deref())?);
            Ok(())
        }
        TaskCommand::List { world, metadata, page, limit, host } => {
            let mut pairs: Vec<(String, String)> = Vec::new();
            for pair in &metadata {
                let (key, value) = pair
                    .split_once('=')
                    .filter(|(key, _)| !key.is_empty())
                    .ok_or_else(|| Exit::usage(format!("--metadata {pair}: expected key=value")))?;
                match pairs.iter_mut().find(|(k, _)| k == key) {
                    Some(existing) => existing.1 = value.to_string(),
                    None => pairs.push((key.to_string(), value.to_string())),
                }
            }
            let client = client(host.as_deref())?;
            printer::json(&client.list_tasks(world.as_deref(), &pairs, page, limit)?);
            Ok(())
        }
        TaskCommand::Show { task_id, version, host } => {
            let client = client(host.as_deref())?;
            printer::json(&client.get_task(&task_id, version)?);
            Ok(())
        }
        TaskCommand::Validate { task_id, path: Some(world_dir), version, world, version_id, host: _ } => {
            // Offline, against a directory: the stored-task flags have nothing to act on.
            if version.is_some() || world.is_some() || version_id.is_some() {
                return Err(Exit::usage(
                    "--path validates a spec file against a world directory: --version, --world and --version-id do not apply",
                ));
            }
            local_validate(Path::new(&task_id), &world_dir)
        }
        TaskCommand::Grade { spec, state } => offline_grade(&spec, &state),
        TaskCommand::Validate { task_id, path: None, version, world, version_id, host } => {
            if world.as_deref().is_some_and(|w| !w.is_empty()) && version_id.as_deref().is_some_and(|v| !v.is_empty()) {
                return Err(Exit::usage("--world and --version-id exclude each other"));
            }
            let client = client(host.as_deref())?;
            let (printed, ok) = client.validate_task(&task_id, version, world.as_deref(), version_id.as_deref())?;
            printer::json(&printed);
            if ok {
                Ok(())
            } else {
                Err(Exit::refused(""))
            }
        }
        TaskCommand::Delete { task_id, host } => {
            let client = client(host.as_deref())?;
            printer::json(&client.delete_task(&task_id)?);
            Ok(())
        }
    }
}

/// Read a JSON document for an offline command, refusing with the original's
/// envelope (`{"status": "rejected", "error": {…}}`, exit 1).
fn read_document(path: &Path) -> Result<Value, Exit> {
    gateway_world::files::read_json(path).map_err(|error| rejected(&error))
}

fn rejected(error: &gateway_world::ContractError) -> Exit {
    let envelope = gateway_world::json::object([("status", Value::str("rejected")), ("error", error.detail())]);
    printer::json_line(&envelope);
    Exit::refused("")
}

/// `worlds task grade SPEC --state STATE`.
fn offline_grade(spec: &Path, state: &Path) -> Result<(), Exit> {
    let spec = gateway_world::task::TaskSpec::parse(&read_document(spec)?).map_err(|e| rejected(&e))?;
    let state = read_document(state)?;
    let options = gateway_world::task::GraderOptions::default();
    let graded = gateway_world::task::grade(&spec, &state, &options).map_err(|e| rejected(&e.to_contract_error()))?;
    // json.dumps(grade): the rewards in check order.
    printer::json_python(&graded);
    Ok(())
}

/// `worlds task validate SPEC --path WORLD`: the hub's validation and self-test,
/// on a local World Host under a temporary directory.
fn local_validate(spec_path: &Path, world: &Path) -> Result<(), Exit> {
    let spec = std::sync::Arc::new(gateway_world::task::TaskSpec::parse(&read_document(spec_path)?).map_err(|e| rejected(&e))?);
    let absolute = std::fs::canonicalize(world).map_err(|e| Exit::refused(format!("{}: {e}", world.display())))?;
    let scratch = tempfile::tempdir_in(gateway_world::data::tempfile_dir::process_root()).map_err(|e| Exit::refused(e.to_string()))?;
    let host = gateway_host::WorldHost::new(gateway_host::HostConfig::local(scratch.path().to_path_buf()));
    let url = format!("file://{}", absolute.display());
    let version = host.versions.ensure("local", &url).map_err(|e| Exit::refused(e.to_string()))?;
    let mut entities: Vec<String> = version.template.contract().entities.iter().map(|e| e.name.clone()).collect();
    entities.sort();
    let mut problems = Vec::new();
    if let Err(refused) = gateway_world::task::check_task_entities(&spec, entities.iter().map(String::as_str)) {
        problems.push(Value::Str(refused.message));
    }
    if let Err(refused) = gateway_world::task::check_task_tools(&spec, version.tool_names()) {
        problems.push(Value::Str(refused.message));
    }
    let mut out = gateway_world::json::Map::default();
    if problems.is_empty() {
        let report = gateway_host::selftest::self_test(&host, "local", &url, &spec).map_err(|e| Exit::refused(e.to_string()))?;
        for problem in report.get("problems").and_then(Value::as_array).into_iter().flatten() {
            problems.push(Value::Str(format!("self-test: {}", problem.as_str().unwrap_or_default())));
        }
        out.insert("selfTest".into(), report);
    }
    let ok = problems.is_empty();
    out.insert("path".into(), Value::Str(absolute.display().to_string()));
    out.insert("ok".into(), Value::Bool(ok));
    out.insert("checked".into(), Value::str("entities"));
    out.insert("problems".into(), Value::Array(problems));
    out.insert("entities".into(), Value::Array(entities.into_iter().map(Value::Str).collect()));
    printer::json(&Value::Object(out));
    if ok {
        Ok(())
    } else {
        Err(Exit::refused(""))
    }
}

//! `gateway worlds …`: the world commands.

use crate::args::HubUrl;
use crate::choices::{Merge, Mode, Publish, Shape};
use crate::exit::Status;
use crate::printer::{self, errln, out, outln};
use clap::Subcommand;
use gateway_world::json::{dumps, object, Value};
use gateway_world::{lifecycle, scaffold, Error};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum WorldsCommand {
    /// Compile and check offline executable world schemas.
    Schema {
        #[command(subcommand)]
        command: SchemaCommand,
    },
    /// Serve the world's vendor API locally: its routes answered from its store.
    Serve {
        /// World directory holding connector.toml.
        path: PathBuf,
        /// Port to listen on (0: any free port, printed on start).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Address to listen on; loopback unless asked (0.0.0.0 in a container).
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
        /// Key the admin routes (/__world/*) require in X-Admin-Key (also WORLD_ADMIN_KEY);
        /// without it they are open on loopback and closed on any other bind.
        #[arg(long = "admin-key")]
        admin_key: Option<String>,
        /// Require this credential; default accepts any non-empty one (also WORLD_API_KEY).
        #[arg(long = "api-key")]
        api_key: Option<String>,
        /// Start in one of the world's scenarios/<name>.
        #[arg(long)]
        scenario: Option<String>,
        /// Keep the served state in DIR so it outlives the process: continued when DIR
        /// holds one, else started from the world's snapshot. Each write is answered
        /// only once its commit is synced to disk, so a crash or kill -9 loses no
        /// acknowledged write. Without it, every start begins afresh (as the original).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
        /// Run the world's handlers as yourself, with your environment, files and
        /// network (the original's way; for your own world on your own machine only).
        /// By default they run in a sandbox, which needs bubblewrap (`bwrap`).
        #[arg(long)]
        unconfined: bool,
        #[command(flatten)]
        limits: crate::args::WorkerLimits,
    },
    /// Serve the world's tools over MCP (stdio) as one local session.
    Mcp(crate::mcp::McpArgs),
    /// Put rows into a world, or see what it holds.
    Data {
        #[command(subcommand)]
        command: DataCommand,
    },
    /// Describe a vendor connection, capture what it returns, seed the world from it.
    Connector {
        #[command(subcommand)]
        command: crate::connector::ConnectorCommand,
    },
    /// Print a packaged skill for an agent, or --install it into a repository's .claude/.
    Skill(crate::connector::SkillArgs),
    /// Live world sessions with api/ui/browser surfaces.
    Session {
        #[command(subcommand)]
        command: crate::session::SessionCommand,
    },
    /// Stored world tasks: task specs kept by the project outside any bundle, versioned, opened by id.
    Task {
        #[command(subcommand)]
        command: crate::session::TaskCommand,
    },
    /// Run an agent against a world's tasks, grade each rollout with the task's grader and
    /// (by default) file the result as a version-pinned run.
    Run(Box<crate::run::RunArgs>),
    /// The PR-to-simulation gate: push the checked-out world onto the PR's hub branch, run
    /// its tasks, file the run pinned to the pushed version, exit 1 under the bar.
    Ci(Box<crate::run::CiArgs>),
}

#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Initialize a schema world from a connector template, then compile it.
    Init {
        /// New or empty directory for the world.
        path: PathBuf,
        /// Template: a built-in slug (`gateway worlds schema templates`; `custom` is the
        /// blank contract), `workspace:<slug>` (a workspace connector pulled from the hub),
        /// or a template directory (world.json, handlers.py, …).
        #[arg(long, default_value = "custom")]
        connector: String,
        /// Environment name and package id.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        host: HubUrl,
        /// Also write a starter connector.toml (list/get/create routes per entity) when the
        /// template carries none, so `worlds serve` serves the world. The default for `custom`.
        /// For github and slack: the vendor-faithful world instead (examples/github,
        /// examples/slack: the vendor's paths, seed rows, its SDK's workload).
        #[arg(long, conflicts_with = "no_api")]
        api: bool,
        /// Write no starter connector.toml: exactly the original's files.
        #[arg(long)]
        no_api: bool,
    },
    /// List the built-in templates; `custom` is always offered last.
    Templates,
    /// Generate the contract artifacts and build the data snapshots.
    Compile { path: PathBuf },
    /// Verify the generated artifacts and snapshots match the authored contract.
    Check { path: PathBuf },
    /// Print the generated README of the contract.
    Describe { path: PathBuf },
    /// Write the api-kind bundle the platform hosts for this world.
    ApiBundle {
        /// World directory holding connector.toml.
        path: PathBuf,
        /// Empty directory for the api-kind bundle.
        #[arg(long)]
        out: PathBuf,
        /// What server/ carries to run the world (beyond the original).
        #[arg(long, value_enum, default_value_t = crate::choices::BundleBinary::Copy)]
        binary: crate::choices::BundleBinary,
    },
    /// Declare entities in schema/world.json without hand-editing it.
    Entity {
        #[command(subcommand)]
        command: crate::connector::EntityCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// What a world seeds with: every entity's row count, or one entity's rows.
    Show {
        /// World directory, or a platform world slug (optionally slug@ref).
        world: String,
        /// Print this entity's rows instead of counts.
        #[arg(long)]
        entity: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Put rows into a world through its own gate: a directory's data files, or a platform
    /// world's data in gzipped chunks (exit 0 applied or published, 2 refused, 1 error).
    Import(Box<ImportArgs>),
    /// Dry run: every row checked against the world's contract in a scratch snapshot. Exit 2 when any row is refused.
    Check {
        /// World directory, or a platform world slug (its contract is pulled).
        world: String,
        /// Rows files, or - for stdin.
        #[arg(required = true)]
        rows: Vec<String>,
        /// The entity bare-row files hold.
        #[arg(long)]
        entity: Option<String>,
        /// As the import would run: append (upsert by primary key) | replace (named entities).
        #[arg(long, value_enum, default_value = "append")]
        mode: Mode,
        /// As the import would run: upsert (last wins) | fill (first wins).
        #[arg(long, value_enum, default_value = "upsert")]
        merge: Merge,
        /// Write the refusals as JSONL here.
        #[arg(long)]
        report: Option<PathBuf>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Rows out of a tool-results export, a vendor response or a session export, shaped for `data import`.
    Extract {
        /// World directory, or a platform world slug (its contract is pulled).
        world: String,
        /// Input file, or - for stdin.
        source: String,
        /// What the input is.
        #[arg(long, value_enum)]
        shape: Shape,
        /// The entity the rows belong to.
        #[arg(long)]
        entity: String,
        /// Write tagged JSONL here (default stdout, also -).
        #[arg(long)]
        out: Option<String>,
        /// Dedupe by primary key: fill (first wins) | upsert (last wins).
        #[arg(long, value_enum, default_value = "fill")]
        merge: Merge,
        /// Skip the world's [redact] policy.
        #[arg(long = "no-redact")]
        no_redact: bool,
        #[command(flatten)]
        host: HubUrl,
    },
    /// One batch's state, progress, counts and first refusals.
    Status {
        /// The batch id `data import` printed or recorded in .gateway/imports/.
        batch_id: String,
        /// The world slug, when no manifest names it.
        #[arg(long)]
        world: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// The world's data batches, newest first.
    Batches {
        /// World slug.
        world: String,
        /// At most this many, newest first.
        #[arg(long)]
        limit: Option<i64>,
        #[command(flatten)]
        host: HubUrl,
    },
    /// Fold every applied `--publish later` batch into one data-only version.
    Publish {
        /// World slug.
        world: String,
        /// Change reason for the version.
        #[arg(long, short = 'm')]
        message: Option<String>,
        #[command(flatten)]
        host: HubUrl,
    },
}

/// `gateway worlds data import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// World directory, or a platform world slug (optionally slug@ref).
    world: String,
    /// Rows files ({entity: [rows]} JSON, {entity,row} JSONL, bare rows), or - for stdin.
    #[arg(required = true)]
    rows: Vec<String>,
    /// The entity bare-row files hold.
    #[arg(long)]
    entity: Option<String>,
    /// append (upsert by primary key) | replace (named entities).
    #[arg(long, value_enum, default_value = "append")]
    mode: Mode,
    /// Inside the batch, by key: upsert (last wins) | fill (first wins, later add fields).
    #[arg(long, value_enum, default_value = "upsert")]
    merge: Merge,
    /// Rows per uploaded chunk (instead of --chunk-bytes).
    #[arg(long = "chunk-rows")]
    chunk_rows: Option<i64>,
    /// JSONL bytes per uploaded chunk before gzip (default 64MiB).
    #[arg(long = "chunk-bytes")]
    chunk_bytes: Option<String>,
    /// Chunk uploads in flight.
    #[arg(long, default_value_t = 4)]
    parallel: i64,
    /// Pick up the newest incomplete upload of this world and these files.
    #[arg(long)]
    resume: bool,
    /// One refusal refuses the batch (the default).
    #[arg(long, overrides_with = "per_chunk")]
    atomic: bool,
    /// A refusal refuses only its chunk.
    #[arg(long = "per-chunk", overrides_with = "atomic")]
    per_chunk: bool,
    /// now: a version per batch | later: fold with `data publish`.
    #[arg(long, value_enum, default_value = "now")]
    publish: Publish,
    /// Wait for the batch to apply (the default).
    #[arg(long, overrides_with = "no_wait")]
    wait: bool,
    /// Print {batchId, state} once the upload completes.
    #[arg(long = "no-wait", overrides_with = "wait")]
    no_wait: bool,
    /// Write the refusals as JSONL here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Validate locally against the contract; upload and write nothing.
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Change reason for the version.
    #[arg(long, short = 'm')]
    message: Option<String>,
    /// A directory import's batch id (default `<package>.initial.v<N+1>` or `<package>.import.<N>`).
    #[arg(long = "batch-id")]
    batch_id: Option<String>,
    #[command(flatten)]
    host: HubUrl,
}

pub fn run(command: WorldsCommand) -> ExitCode {
    match command {
        WorldsCommand::Schema { command } => schema(command),
        WorldsCommand::Data { command } => data(command),
        WorldsCommand::Connector { command } => crate::connector::run(command),
        WorldsCommand::Skill(args) => crate::connector::skill(args),
        WorldsCommand::Session { command } => crate::session::run_session(command),
        WorldsCommand::Task { command } => crate::session::run_task(command),
        WorldsCommand::Serve { path, port, bind, admin_key, api_key, scenario, state, unconfined, limits } => {
            let api_key = api_key.or_else(|| std::env::var("WORLD_API_KEY").ok().filter(|k| !k.is_empty()));
            let workers = limits.options(unconfined);
            let options = gateway_serve::server::ServeOptions { port, host: None, api_key, scenario, state_dir: state, workers };
            serve(path, bind, admin_key, options)
        }
        WorldsCommand::Mcp(args) => crate::mcp::run(args),
        WorldsCommand::Run(args) => crate::run::run(*args),
        WorldsCommand::Ci(args) => crate::run::ci(*args),
    }
}

fn serve(path: PathBuf, bind: std::net::IpAddr, admin_key: Option<String>, options: gateway_serve::server::ServeOptions) -> ExitCode {
    let port = options.port;
    if !path.is_dir() {
        errln!("Error: no such directory: {} (a world is a directory holding schema/world.json and connector.toml)", path.display());
        return Status::FAILED.into();
    }
    crate::init_server_log();
    let mut app = match gateway_serve::server::load(&path, &options) {
        Ok(app) => app,
        Err(error) => {
            errln!("Error: world api refused: {error}");
            if !path.join("connector.toml").exists() {
                errln!(
                    "hint: `gateway worlds schema init NEW_DIR --connector TEMPLATE --api` writes a starter connector.toml; \
                     `gateway worlds connector skill` explains how to describe the vendor's API"
                );
            }
            return Status::FAILED.into();
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            errln!("Error: world api could not start: {error}");
            return Status::FAILED.into();
        }
    };
    let admin_key = admin_key.or_else(|| std::env::var("WORLD_ADMIN_KEY").ok().filter(|k| !k.is_empty()));
    app.admin = match admin_key {
        Some(key) => gateway_serve::app::AdminAccess::Key(key),
        None if bind.is_loopback() => gateway_serve::app::AdminAccess::Open,
        None => gateway_serve::app::AdminAccess::Closed,
    };
    let admin_note = match &app.admin {
        gateway_serve::app::AdminAccess::Closed | gateway_serve::app::AdminAccess::ControlPlane => {
            " (closed: bound beyond loopback without --admin-key)"
        }
        gateway_serve::app::AdminAccess::Key(_) => " (X-Admin-Key required)",
        gateway_serve::app::AdminAccess::Open => "",
    };
    let addr = std::net::SocketAddr::new(bind, port);
    let base_path = app.prefix().to_string();
    let served = runtime.block_on(async move {
        // Bind first, so "listening" names the real port (also for --port 0) and a
        // busy port is one clear line.
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(listener) => listener,
            Err(error) => {
                errln!("Error: world api could not listen on {addr}: {error}");
                return Status::FAILED.into();
            }
        };
        let bound = listener.local_addr().unwrap_or(addr);
        errln!("world api listening on http://{bound}");
        errln!(
            "  the vendor's API under http://{bound}{base_path}/ (OpenAPI: /openapi.json, docs: /docs; admin{admin_note}: /__world/state, /__world/reset, /__world/seed; health: /healthz)"
        );
        match gateway_serve::server::run(app, listener, crate::shutdown_signal()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                errln!("Error: world api stopped: {error}");
                Status::FAILED.into()
            }
        }
    });
    served
}

/// The original's envelope for a refusal of the offline schema CLI: exit 1.
fn rejected(error: Error) -> ExitCode {
    let detail = match error {
        Error::Contract(contract) => contract.detail(),
        other => object([("message", Value::Str(other.to_string()))]),
    };
    printer::json_line(&object([("status", Value::str("rejected")), ("error", detail)]));
    Status::FAILED.into()
}

fn schema(command: SchemaCommand) -> ExitCode {
    let outcome = match command {
        SchemaCommand::Entity { command } => return crate::connector::entity(command),
        SchemaCommand::ApiBundle { path, out, binary } => {
            use crate::choices::BundleBinary;
            use gateway_serve::bundle::{build_api_bundle, build_api_bundle_for, build_api_bundle_linked, ServerPayload};
            let built = match binary {
                BundleBinary::Copy => build_api_bundle(&path, &out),
                BundleBinary::Link => build_api_bundle_linked(&path, &out),
                BundleBinary::Image => build_api_bundle_for(&path, &out, ServerPayload::Image),
            };
            // The original lets the error escape as a traceback whose last line this is.
            return match built {
                Ok(bundle) => {
                    outln!("api bundle: {}", gateway_world::snapshot::display_path(&bundle));
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    errln!("{error}");
                    Status::FAILED.into()
                }
            };
        }
        SchemaCommand::Templates => {
            for slug in scaffold::list_templates() {
                outln!("{slug}");
            }
            return ExitCode::SUCCESS;
        }
        SchemaCommand::Describe { path } => match lifecycle::describe(&path) {
            Ok(text) => {
                out!("{text}");
                return ExitCode::SUCCESS;
            }
            Err(error) => Err(error),
        },
        SchemaCommand::Init { path, connector, name, host, api, no_api } => {
            if let Some(slug) = connector.strip_prefix("workspace:") {
                return crate::workspace::init_from_workspace(&path, slug, name.as_deref(), host.as_deref());
            }
            let starter_api = api || (!no_api && connector == scaffold::CUSTOM);
            let Some(template) = scaffold::Template::find(&connector) else {
                let choices = scaffold::list_templates().into_iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
                errln!("usage: gateway worlds schema init PATH [--connector TEMPLATE] [--name NAME]");
                errln!("error: argument --connector: invalid choice: '{connector}' (choose from {choices}, or a template directory holding world.json)");
                return Status::USAGE.into();
            };
            // As the original's CLI: an empty --name is not passed on (the default name).
            let name = name.filter(|n| !n.is_empty());
            let initialized = if api && gateway_world::vendor_template::has_vendor_world(&connector) {
                gateway_world::vendor_template::init_vendor_world(&path, &connector, name.as_deref())
            } else {
                scaffold::init(&path, &template, name.as_deref(), starter_api)
            };
            initialized.map(|domain| object([("status", Value::str("ok")), ("domain", domain)]))
        }
        SchemaCommand::Compile { path } => lifecycle::compile_world(&path).map(|(contract, snapshots)| {
            object([("status", Value::str("ok")), ("domain", contract.target().clone()), ("snapshots", snapshots)])
        }),
        SchemaCommand::Check { path } => {
            lifecycle::check_report(&path).map(|(contract, snapshots)| {
                // Beyond the original, whose check drops the `stale` it computes: the answer
                // stays its `ok`, and stderr says the snapshot lags the data.
                if matches!(snapshots.get("default").and_then(|d| d.get("stale")), Some(Value::Bool(true))) {
                    errln!(
                        "note: db/state.sqlite was built from earlier data than data/ holds (an interrupted \
                         import?); `gateway worlds schema compile {}` rebuilds it",
                        path.display()
                    );
                }
                object([("status", Value::str("ok")), ("domain", contract.target().clone())])
            })
        }
    };
    match outcome {
        Ok(value) => {
            printer::json_line(&value);
            ExitCode::SUCCESS
        }
        Err(error) => rejected(error),
    }
}

fn data(command: DataCommand) -> ExitCode {
    match command {
        DataCommand::Show { world, entity, host } => {
            if !std::path::Path::new(&world).is_dir() {
                return crate::world_data::show(&world, entity.as_deref(), host.as_deref());
            }
            let root = PathBuf::from(&world);
            let answer = gateway_world::data::world_kind(&root).map_err(Error::from).and_then(|kind| {
                let mut out = vec![("world", Value::str(&world)), ("kind", Value::str(kind))];
                match &entity {
                    None => out.push(("entity_counts", gateway_world::data::entity_counts(&root)?)),
                    Some(entity) => {
                        out.push(("entity", Value::str(entity)));
                        out.push(("rows", Value::Array(gateway_world::data::entity_rows(&root, entity)?)));
                    }
                }
                Ok(object(out))
            });
            match answer {
                Ok(value) => {
                    printer::json(&value);
                    ExitCode::SUCCESS
                }
                Err(error) => data_refused(error),
            }
        }
        DataCommand::Import(args) => import(*args),
        DataCommand::Check { world, rows, entity, mode, merge, report, host } => {
            let checked = crate::world_data::local_root(&world, host.as_deref(), |root| {
                let options = check_options(entity, mode, merge);
                check_with_bar(root, &rows, &options)
            });
            finish_check(&world, checked, report)
        }
        DataCommand::Extract { world, source, shape, entity, out, merge, no_redact, host } => {
            let mut code = ExitCode::SUCCESS;
            let root = crate::world_data::local_root(&world, host.as_deref(), |root| {
                code = data_extract(root, &source, shape, &entity, out.as_deref(), merge, no_redact);
                Ok(())
            });
            match root {
                Ok(()) => code,
                Err(error) => data_refused(error),
            }
        }
        DataCommand::Status { batch_id, world, host } => crate::world_data::status(&batch_id, world, host.as_deref()),
        DataCommand::Batches { world, limit, host } => crate::world_data::batches(&world, limit, host.as_deref()),
        DataCommand::Publish { world, message, host } => crate::world_data::publish(&world, message.as_deref(), host.as_deref()),
    }
}

fn check_options(entity: Option<String>, mode: Mode, merge: Merge) -> gateway_world::check::CheckOptions {
    let mut options = gateway_world::check::CheckOptions { entity, mode: mode.into(), merge: merge.into(), ..Default::default() };
    // Bytes of accepted rows held in memory before they move to a scratch file.
    if let Some(budget) = std::env::var("GATEWAY_ROWS_MEMORY").ok().and_then(|b| b.parse().ok()) {
        options.memory_budget = budget;
    }
    options
}

/// `data import`: a directory's data files (or, with --dry-run, a local check of a
/// directory or of a slug's pulled contract), else the platform world's chunks.
fn import(args: ImportArgs) -> ExitCode {
    let ImportArgs {
        world,
        rows,
        entity,
        mode,
        merge,
        chunk_rows,
        chunk_bytes,
        parallel,
        resume,
        atomic: _,
        per_chunk,
        publish,
        wait: _,
        no_wait,
        report,
        dry_run,
        message,
        batch_id,
        host,
    } = args;
    // As in the original, a bad size is refused before anything else (a directory too).
    let size = match chunk_bytes.as_deref().map(gateway_world::chunks::parse_size).transpose() {
        Ok(size) => size,
        Err(error) => return data_refused(error),
    };
    let atomic = !per_chunk;
    let local = std::path::Path::new(&world).is_dir();
    if dry_run {
        // Validated locally against the contract (a slug's is pulled); nothing uploaded.
        let checked = crate::world_data::local_root(&world, host.as_deref(), |root| {
            let options = check_options(entity, mode, merge);
            if atomic {
                check_with_bar(root, &rows, &options)
            } else {
                gateway_world::batch::check_rows_per_chunk(root, &rows, &options)
            }
        });
        return finish_check(&world, checked, report);
    }
    if !local {
        let request = crate::world_data::Import {
            slug: world,
            rows,
            entity,
            mode: mode.into(),
            merge: merge.into(),
            atomic,
            publish: publish.into(),
            chunk_bytes: size,
            chunk_rows,
            parallel,
            resume,
            wait: !no_wait,
            report,
            message,
            host,
        };
        return crate::world_data::import(request);
    }
    // A directory: the rows go into its data files; the upload flags (atomic or per chunk,
    // publish, message, chunking, parallel, resume, wait, report) mean nothing here and
    // are ignored, as the original ignores them.
    let root = PathBuf::from(&world);
    let outcome = gateway_world::import::refuse_large(&root, &rows, entity.as_deref())
        // The original fails here on `-` ("I/O operation on closed file": it counts the rows
        // by draining stdin first); a stream is spooled once and read twice (rows::open_source).
        .and_then(|()| gateway_world::import::parse_rows(&rows, entity.as_deref()))
        .and_then(|parsed| gateway_world::import::import_rows(&root, &parsed, mode.into(), batch_id.as_deref()));
    match outcome {
        Ok(Value::Object(result)) => {
            let mut out = vec![("world".to_string(), Value::str(&world))];
            out.extend(result);
            printer::json(&object(out));
            ExitCode::SUCCESS
        }
        Ok(other) => {
            printer::json(&other);
            ExitCode::SUCCESS
        }
        Err(error) => data_refused(error),
    }
}

/// A `worlds data` refusal: the error's text on stderr, exit 1.
pub(crate) fn data_refused(error: Error) -> ExitCode {
    errln!("{error}");
    Status::FAILED.into()
}

/// Inputs larger than this get a progress bar when stderr is a terminal.
const PROGRESS_BYTES: u64 = 8 * 1024 * 1024;

fn progress_bar(rows: &[String]) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal as _;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let total: u64 = rows.iter().filter(|r| r.as_str() != "-").filter_map(|r| std::fs::metadata(r).ok()).map(|m| m.len()).sum();
    if total < PROGRESS_BYTES {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {eta}") {
        bar.set_style(style);
    }
    Some(bar)
}

/// Print a check's report (and write `--report`): exit 2 when any row is refused.
fn finish_check(world: &str, checked: Result<gateway_world::check::CheckReport, Error>, report: Option<PathBuf>) -> ExitCode {
    use gateway_world::check::REPORT_CAP;
    let checked = match checked {
        Ok(checked) => checked,
        Err(error) => return data_refused(error),
    };
    if let Some(report) = report {
        if let Err(error) = std::fs::write(&report, checked.report_lines(REPORT_CAP)) {
            return data_refused(Error::io(error, &report));
        }
    }
    printer::json(&checked.to_json(world));
    if checked.refusal_count > 0 {
        Status::ROWS_REFUSED.into()
    } else {
        ExitCode::SUCCESS
    }
}

/// A local check of a world directory, with a progress bar over large inputs.
pub(crate) fn check_with_bar(
    root: &std::path::Path,
    rows: &[String],
    options: &gateway_world::check::CheckOptions,
) -> Result<gateway_world::check::CheckReport, Error> {
    let bar = progress_bar(rows);
    let advance = |n: u64| {
        if let Some(bar) = &bar {
            bar.inc(n);
        }
    };
    let progress: Option<&dyn Fn(u64)> = if bar.is_some() { Some(&advance) } else { None };
    let checked = gateway_world::check::check_rows(root, rows, options, progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    checked
}

/// The extraction policy from the world's `connector.toml`: `[api].envelope` and,
/// unless `no_redact`, the `[redact]` policy.
fn extract_policy(root: &std::path::Path, no_redact: bool) -> Result<gateway_world::extract::Policy, Error> {
    use gateway_world::extract::Policy;
    let path = root.join(gateway_connector::spec::SPEC);
    if !path.is_file() {
        return Ok(Policy::default());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(e, &path))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| Error::Io { message: e.message().to_string() })?;
    let envelope = table.get("api").and_then(|api| api.get("envelope")).and_then(|e| e.as_str()).unwrap_or_default().to_string();
    let redaction = if no_redact { None } else { Some(gateway_connector::spec::parse_spec(&text)?.redaction) };
    Ok(Policy { envelope, redaction })
}

fn data_extract(
    root: &std::path::Path,
    source: &str,
    shape: Shape,
    entity: &str,
    out: Option<&str>,
    merge: Merge,
    no_redact: bool,
) -> ExitCode {
    use std::io::Write as _;
    let root = root.to_path_buf();
    let mut sink: Box<dyn std::io::Write> = match out {
        None | Some("-") => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
        Some(path) => match std::fs::File::create(path) {
            Ok(file) => Box::new(std::io::BufWriter::new(file)),
            Err(error) => return data_refused(Error::io(error, std::path::Path::new(path))),
        },
    };
    let policy = || extract_policy(&root, no_redact);
    let outcome = gateway_world::extract::extract(&root, source, shape.into(), entity, merge.into(), &policy, &mut sink);
    let flushed = sink.flush();
    match outcome {
        Ok(summary) => {
            if let Err(error) = flushed {
                return data_refused(Error::Io { message: error.to_string() });
            }
            errln!("{}", dumps(&summary.to_json(), printer::PYTHON));
            ExitCode::SUCCESS
        }
        Err(error) => data_refused(error),
    }
}

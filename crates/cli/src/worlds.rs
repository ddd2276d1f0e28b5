//! `gateway worlds …`: the world commands.

use clap::Subcommand;
use gateway_world::json::{dumps, object, DumpOptions, Value};
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
        /// Port to listen on.
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Require this credential; default accepts any non-empty one (also WORLD_API_KEY).
        #[arg(long = "api-key")]
        api_key: Option<String>,
        /// Start in one of the world's scenarios/<name>.
        #[arg(long)]
        scenario: Option<String>,
    },
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
}

#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Initialize a schema world from a connector template, then compile it.
    Init {
        /// New or empty directory for the world.
        path: PathBuf,
        /// Template: `custom`, or a template directory (world.json, handlers.py, …).
        #[arg(long, default_value = "custom")]
        connector: String,
        /// Environment name and package id.
        #[arg(long)]
        name: Option<String>,
    },
    /// List the built-in templates; `custom` is always offered last.
    Templates,
    /// Generate the contract artifacts and build the data snapshots.
    Compile { path: PathBuf },
    /// Verify the generated artifacts and snapshots match the authored contract.
    Check { path: PathBuf },
    /// Print the generated README of the contract.
    Describe { path: PathBuf },
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
        /// World directory.
        world: String,
        /// Print this entity's rows instead of counts.
        #[arg(long)]
        entity: Option<String>,
    },
}

pub fn run(command: WorldsCommand) -> ExitCode {
    match command {
        WorldsCommand::Schema { command } => schema(command),
        WorldsCommand::Data { command } => data(command),
        WorldsCommand::Connector { command } => crate::connector::run(command),
        WorldsCommand::Skill(args) => crate::connector::skill(args),
        WorldsCommand::Serve { path, port, api_key, scenario } => serve(path, port, api_key, scenario),
    }
}

fn serve(path: PathBuf, port: u16, api_key: Option<String>, scenario: Option<String>) -> ExitCode {
    let api_key = api_key.or_else(|| std::env::var("WORLD_API_KEY").ok().filter(|k| !k.is_empty()));
    let options = gateway_serve::server::ServeOptions { port, host: None, api_key, scenario };
    let app = match gateway_serve::server::load(&path, &options) {
        Ok(app) => app,
        Err(error) => {
            eprintln!("world api refused: {error}");
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("world api could not start: {error}");
            return ExitCode::from(1);
        }
    };
    let addr = std::net::SocketAddr::from(([0, 0, 0, 0], port));
    eprintln!("world api listening on http://0.0.0.0:{port}");
    match runtime.block_on(gateway_serve::server::run(app, addr)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("world api stopped: {error}");
            ExitCode::from(1)
        }
    }
}

fn print_line(value: &Value) {
    println!("{}", dumps(value, DumpOptions::CLI));
}

/// The original's envelope for a refusal of the offline schema CLI: exit 1.
fn rejected(error: Error) -> ExitCode {
    let detail = match error {
        Error::Contract(contract) => contract.detail(),
        other => object([("message", Value::Str(other.to_string()))]),
    };
    print_line(&object([("status", Value::str("rejected")), ("error", detail)]));
    ExitCode::from(1)
}

fn schema(command: SchemaCommand) -> ExitCode {
    let outcome = match command {
        SchemaCommand::Entity { command } => return crate::connector::entity(command),
        SchemaCommand::Templates => {
            for slug in scaffold::list_templates() {
                println!("{slug}");
            }
            return ExitCode::SUCCESS;
        }
        SchemaCommand::Describe { path } => match lifecycle::describe(&path) {
            Ok(text) => {
                print!("{text}");
                return ExitCode::SUCCESS;
            }
            Err(error) => Err(error),
        },
        SchemaCommand::Init { path, connector, name } => {
            let Some(template) = scaffold::Template::find(&connector) else {
                let choices = scaffold::list_templates().into_iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
                eprintln!("usage: gateway worlds schema init PATH [--connector TEMPLATE] [--name NAME]");
                eprintln!("error: argument --connector: invalid choice: '{connector}' (choose from {choices}, or a template directory holding world.json)");
                return ExitCode::from(2);
            };
            scaffold::init(&path, &template, name.as_deref()).map(|domain| object([("status", Value::str("ok")), ("domain", domain)]))
        }
        SchemaCommand::Compile { path } => lifecycle::compile_world(&path).map(|(contract, snapshots)| {
            object([("status", Value::str("ok")), ("domain", contract.target().clone()), ("snapshots", snapshots)])
        }),
        SchemaCommand::Check { path } => {
            lifecycle::check_bundle(&path).map(|contract| object([("status", Value::str("ok")), ("domain", contract.target().clone())]))
        }
    };
    match outcome {
        Ok(value) => {
            print_line(&value);
            ExitCode::SUCCESS
        }
        Err(error) => rejected(error),
    }
}

fn data(command: DataCommand) -> ExitCode {
    match command {
        DataCommand::Show { world, entity } => {
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
                    println!("{}", dumps(&value, DumpOptions::PRETTY));
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    eprintln!("{error}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

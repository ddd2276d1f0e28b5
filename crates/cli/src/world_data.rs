//! `gateway worlds data …` against a platform world (a slug rather than a directory):
//! `import` in chunks, `status`, `batches`, `publish`, `show`, and the pulled contract
//! `check`, `extract` and `import --dry-run` run against. Printing and exit codes only:
//! the flow is `gateway_hub_client::world_data_client`.

use crate::exit::Status;
use crate::printer::{self, errln};
use gateway_hub_client::world_data_client::{self as client, Bar, Flags, ImportOptions, Manifest, TtyLines, WorldDataClient, MANIFEST_DIR};
use gateway_world::json::{object, Value};
use gateway_world::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn refused(message: impl std::fmt::Display) -> ExitCode {
    errln!("{message}");
    Status::FAILED.into()
}

/// Run `work` on the world directory `world`, or on the platform world `world`
/// (slug[@ref]) pulled into a temporary directory: the world itself, which in a
/// connector world's api bundle is `server/world` (the original runs on the bundle's
/// root there and refuses it as "Not a schema-backed bundle").
pub fn local_root<T>(world: &str, host: Option<&str>, work: impl FnOnce(&Path) -> Result<T, Error>) -> Result<T, Error> {
    if Path::new(world).is_dir() {
        return work(Path::new(world));
    }
    let as_error = |e: gateway_hub_client::ClientError| Error::Io { message: e.to_string() };
    let client = gateway_hub_client::client::Client::from_env(host).map_err(as_error)?;
    let scratch = gateway_world::data::tempfile_dir::Scratch::new("gateway-world-data")?;
    let slug = world.split('@').next().unwrap_or_default();
    let pulled = scratch.path().join(slug);
    client.pull(world, Some(&pulled)).map_err(as_error)?;
    let root = gateway_host::version::world_tree(&pulled).unwrap_or(pulled);
    work(&root)
}

fn data_client(host: Option<&str>) -> Result<WorldDataClient, ExitCode> {
    WorldDataClient::from_env(host).map_err(refused)
}

/// `data show <slug>`: what the platform world holds.
pub fn show(world: &str, entity: Option<&str>, host: Option<&str>) -> ExitCode {
    let client = match data_client(host) {
        Ok(client) => client,
        Err(code) => return code,
    };
    let answer = match client.counts(world, entity) {
        Ok(answer) => answer,
        Err(error) => return refused(error),
    };
    let field = |key: &str| answer.get(key).cloned().unwrap_or(Value::Null);
    let mut out = vec![("world", Value::str(world)), ("kind", field("kind")), ("entity_counts", field("entityCounts"))];
    if let Some(entity) = entity {
        out.push(("entity", Value::str(entity)));
        out.push(("rows", field("rows")));
    }
    printer::json(&object(out));
    ExitCode::SUCCESS
}

/// `data status BATCH_ID [--world SLUG]`: the slug from the flag, else the manifest.
pub fn status(batch_id: &str, world: Option<String>, host: Option<&str>) -> ExitCode {
    let mut slug = world;
    if slug.is_none() {
        let path = Path::new(MANIFEST_DIR).join(format!("{batch_id}.json"));
        if path.is_file() {
            match Manifest::load(&path) {
                Ok(manifest) => slug = manifest.get("slug").as_str().map(str::to_string),
                Err(error) => return refused(error),
            }
        }
    }
    let Some(slug) = slug.filter(|s| !s.is_empty()) else {
        return refused(format!("no manifest for {batch_id} under {MANIFEST_DIR}; pass --world SLUG"));
    };
    let client = match data_client(host) {
        Ok(client) => client,
        Err(code) => return code,
    };
    match client.status(&slug, batch_id) {
        Ok(answer) => {
            printer::json(&answer);
            ExitCode::SUCCESS
        }
        Err(error) => refused(error),
    }
}

/// `data batches <slug>`.
pub fn batches(world: &str, limit: Option<i64>, host: Option<&str>) -> ExitCode {
    let client = match data_client(host) {
        Ok(client) => client,
        Err(code) => return code,
    };
    match client.batches(world, limit, None) {
        Ok(answer) => {
            printer::json(&answer);
            ExitCode::SUCCESS
        }
        Err(error) => refused(error),
    }
}

/// `data publish <slug>`.
pub fn publish(world: &str, message: Option<&str>, host: Option<&str>) -> ExitCode {
    let client = match data_client(host) {
        Ok(client) => client,
        Err(code) => return code,
    };
    match client.publish(world, message) {
        Ok(answer) => {
            printer::json(&answer);
            ExitCode::SUCCESS
        }
        Err(error) => refused(error),
    }
}

/// What `data import <slug>` was asked.
pub struct Import {
    pub slug: String,
    pub rows: Vec<String>,
    pub entity: Option<String>,
    pub mode: gateway_world::plan::Mode,
    pub merge: gateway_world::check::Merge,
    pub atomic: bool,
    pub publish: gateway_hub_client::world_data_client::Publish,
    pub chunk_bytes: Option<usize>,
    pub chunk_rows: Option<i64>,
    pub parallel: i64,
    pub resume: bool,
    pub wait: bool,
    pub report: Option<PathBuf>,
    pub message: Option<String>,
    pub host: crate::args::HubUrl,
}

/// `data import <slug> ROWS…`: upload in chunks, complete, wait; exit 0 applied or
/// published, 2 refused, 1 otherwise.
pub fn import(request: Import) -> ExitCode {
    let client = match data_client(request.host.as_deref()) {
        Ok(client) => client,
        Err(code) => return code,
    };
    let chunk_rows = match request.chunk_rows {
        None => None,
        Some(n) if n >= 1 => Some(n as usize),
        Some(_) => return refused("chunk at /chunk: chunk bounds must be positive"),
    };
    let flags = Flags {
        mode: request.mode,
        merge: request.merge,
        atomic: request.atomic,
        publish: request.publish,
        dry_run: false,
        chunk_bytes: request.chunk_bytes.unwrap_or(gateway_world::chunks::CHUNK_BYTES),
        chunk_rows,
        entity: request.entity,
    };
    let base = match std::env::current_dir() {
        Ok(base) => base,
        Err(error) => return refused(error),
    };
    let options =
        ImportOptions { flags, parallel: request.parallel.max(1) as usize, resume: request.resume, message: request.message, base };
    let bar = Bar::for_inputs(&request.rows);
    let uploaded = client::import_rows(&client, &request.slug, &request.rows, &options, &bar);
    bar.finish();
    let manifest = match uploaded {
        Ok(manifest) => manifest,
        Err(error) => return refused(error),
    };
    if !request.wait {
        printer::json_python(&object([("batchId", Value::Str(manifest.batch_id())), ("state", Value::str("queued"))]));
        return ExitCode::SUCCESS;
    }
    let status = match client::wait(&client, &request.slug, &manifest.batch_id(), &TtyLines) {
        Ok(status) => status,
        Err(error) => return refused(error),
    };
    if let Some(report) = &request.report {
        if let Err(error) = client::write_status_report(&client, &status, report) {
            return refused(error);
        }
    }
    let mut out = vec![("world".to_string(), Value::str(&request.slug))];
    if let Value::Object(map) = &status {
        out.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    printer::json(&object(out));
    match status.get("state").and_then(Value::as_str) {
        Some("applied" | "published") => ExitCode::SUCCESS,
        Some("refused") => Status::ROWS_REFUSED.into(),
        _ => Status::FAILED.into(),
    }
}

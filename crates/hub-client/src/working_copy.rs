//! A working copy on disk, as `bench push|pull|status` and `worlds run --path` read it:
//! `.gateway/.env-metadata.json` (the hub link a pull or push records), whether the
//! archive-visible tree still matches the recorded base (a connector world compared with
//! what its api bundle carries), `pyproject.toml`'s project table, and what is refused
//! before a push. No HTTP: the requests are [`crate::client`]'s.

use crate::ClientError;
use gateway_bundle::archive;
use gateway_bundle::BundleError;
use gateway_world::json::{self, Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, ClientError>;

fn fail(message: impl Into<String>) -> ClientError {
    ClientError::Failed(message.into())
}

fn meta_path(env: &Path) -> PathBuf {
    env.join(".gateway").join(".env-metadata.json")
}

/// `.gateway/.env-metadata.json`, or `None` for an ad-hoc dir (or unreadable metadata).
pub fn read_local_meta(env: &Path) -> Option<Map> {
    let text = std::fs::read_to_string(meta_path(env)).ok()?;
    match json::parse(&text).ok()?.value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// Write `.gateway/.env-metadata.json` as `json.dumps(meta, indent=2)`.
pub fn write_local_meta(env: &Path, meta: &Value) -> Result<()> {
    let dir = env.join(".gateway");
    std::fs::create_dir_all(&dir).map_err(|e| ClientError::io(&dir, e))?;
    let path = meta_path(env);
    std::fs::write(&path, json::dumps(meta, json::DumpOptions::PRETTY)).map_err(|e| ClientError::io(&path, e))
}

/// `local_tree_state`: the dir's hub link and whether its archive-visible tree still
/// matches the recorded base (`baseFiles`).
#[derive(Debug, Clone, Default)]
pub struct TreeState {
    /// `.gateway/.env-metadata.json`, None for an ad-hoc dir.
    pub meta: Option<Map>,
    /// Relative paths changed, added or removed since the base, sorted.
    pub dirty: Vec<String>,
    /// True only when a base is recorded and nothing drifted.
    pub clean: bool,
}

/// The tree state of `env` (see [`TreeState`]).
pub fn local_tree_state(env: &Path) -> Result<TreeState> {
    let meta = read_local_meta(env);
    let Some(Value::Object(base)) = meta.as_ref().and_then(|m| m.get("baseFiles")).cloned() else {
        return Ok(TreeState { meta, dirty: Vec::new(), clean: false });
    };
    // A connector world pushed as its api bundle records the bundle's files: the world
    // is compared with the bundle's `server/world/` (beyond the original, whose world then
    // never reads as clean, so `worlds run --path` could never file against the push).
    let (now, base) = if base.contains_key("gateway-api-world.toml") && serves_api(env).unwrap_or(false) {
        let inside: Map =
            base.iter().filter_map(|(path, hash)| path.strip_prefix(BUNDLED_WORLD).map(|rest| (rest.to_string(), hash.clone()))).collect();
        (bundled_world_snapshot(env)?, inside)
    } else {
        (archive::snapshot_tree_hashes(env)?, base)
    };
    let mut dirty: Vec<String> =
        now.iter().filter(|(p, h)| base.get(*p).and_then(Value::as_str) != Some(h.as_str())).map(|(p, _)| p.clone()).collect();
    dirty.extend(base.keys().filter(|p| !now.contains_key(*p)).cloned());
    dirty.sort();
    dirty.dedup();
    let clean = dirty.is_empty();
    Ok(TreeState { meta, dirty, clean })
}

/// A non-empty string member of the local metadata.
pub fn meta_str(meta: &Map, key: &str) -> Option<String> {
    meta.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

pub(crate) fn base_files(env: &Path) -> Result<Value> {
    let snapshot = archive::snapshot_tree_hashes(env)?;
    Ok(Value::Object(snapshot.into_iter().map(|(k, v)| (k, Value::Str(v))).collect()))
}

fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::Str(s.clone()),
        toml::Value::Integer(i) => Value::Int(*i),
        toml::Value::Float(f) => Value::Float(*f),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::Str(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(table.iter().map(|(k, v)| (k.clone(), toml_to_json(v))).collect()),
    }
}

/// `read_pyproject`: `{name?, version?, dependencies?, requires_python?}` from pyproject.toml.
pub fn read_pyproject(env: &Path) -> Map {
    let mut out = Map::default();
    let Ok(text) = std::fs::read_to_string(env.join("pyproject.toml")) else { return out };
    let Ok(table) = text.parse::<toml::Table>() else { return out };
    let Some(toml::Value::Table(project)) = table.get("project") else { return out };
    for (key, name) in [("name", "name"), ("version", "version"), ("dependencies", "dependencies"), ("requires-python", "requires_python")]
    {
        if let Some(value) = project.get(key) {
            out.insert(name.to_string(), toml_to_json(value));
        }
    }
    out
}

/// What is refused before a push: a schema world that does not check, and a pass bar
/// the hub would ignore (beyond the original).
pub(crate) fn check_before_push(env: &Path) -> Result<()> {
    match gateway_world::compiler::bundle_mode(env) {
        Ok(None) => {}
        Ok(Some(_)) => {
            if let Err(error) = gateway_world::lifecycle::check_bundle(env) {
                return Err(fail(format!("Schema world check failed before push: {error}")));
            }
        }
        Err(error) => return Err(fail(format!("Schema world check failed before push: {}", error.message))),
    }
    // A pass bar the hub would ignore is refused here, before it is pushed (beyond the original).
    for (file, read) in [
        ("gateway-env.toml", gateway_bundle::world_facts::manifest_bar as fn(&str) -> std::result::Result<Option<f64>, BundleError>),
        ("pyproject.toml", gateway_bundle::world_facts::pyproject_bar),
    ] {
        if let Ok(text) = std::fs::read_to_string(env.join(file)) {
            read(&text).map_err(|problem| fail(format!("{problem} (the world's pass bar, read by `worlds ci`)")))?;
        }
    }
    Ok(())
}

/// Whether `bench push` sends `dir` as its api bundle: a schema world (`bundle_mode`)
/// that carries `connector.toml`.
pub fn serves_api(dir: &Path) -> Result<bool> {
    if !dir.join("connector.toml").is_file() {
        return Ok(false);
    }
    match gateway_world::compiler::bundle_mode(dir) {
        Ok(mode) => Ok(mode.is_some()),
        Err(error) => Err(fail(format!("ContractError: {error}"))),
    }
}

/// Where an api bundle holds the world, as a path prefix.
const BUNDLED_WORLD: &str = "server/world/";

/// `{path in the world: sha256 hex}` of what the api bundle built from `world` shows of
/// it under `server/world/` in a snapshot: the bundle's copy leaves out captures/,
/// `__pycache__`, `.git` and SQLite side files at any depth and follows symlinks; the
/// archive's rules then prune `.`-named, `dist`, `build`, `outputs`, `*.egg-info`
/// directories and `.`-named files.
pub fn bundled_world_snapshot(world: &Path) -> Result<std::collections::BTreeMap<String, String>> {
    fn walk(dir: &Path, prefix: &str, out: &mut std::collections::BTreeMap<String, String>) -> Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir).map_err(|e| ClientError::io(dir, e))?.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if gateway_serve::bundle::world_ignored(&name) || name.starts_with('.') {
                continue;
            }
            let relative = format!("{prefix}{name}");
            if path.is_dir() {
                if !(["dist", "build", "outputs"].contains(&name.as_str()) || name.ends_with(".egg-info")) {
                    walk(&path, &format!("{relative}/"), out)?;
                }
            } else if path.is_file() {
                let bytes = std::fs::read(&path).map_err(|e| ClientError::io(&path, e))?;
                out.insert(relative, hex::encode(Sha256::digest(&bytes)));
            }
        }
        Ok(())
    }
    let mut out = std::collections::BTreeMap::new();
    walk(world, "", &mut out)?;
    Ok(out)
}

/// Copy a directory tree (`.gateway/` metadata, in and out of a connector world's bundle);
/// a symbolic link in it is refused, naming it.
pub(crate) fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    use gateway_common::fs::{copy_tree, Symlinks};
    copy_tree(from, to, Symlinks::Refuse, &|_| false).map_err(|error| match error.refused_link() {
        Some(link) => fail(format!(
            "refusing to push {}: it is a symlink ({}); a push never follows links out of the world — copy the files in or remove the link",
            error.path.display(),
            link.display()
        )),
        None => ClientError::io(&error.path, error.source),
    })
}

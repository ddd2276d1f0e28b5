//! Snapshots: `db/state.sqlite` (the world's data applied through the contract)
//! and one per scenario, each with a `state.json` sidecar naming what it holds.
//!
//! A snapshot is keyed by `(contractHash, batchDigest)`: the same key is the same
//! content and is never rebuilt. Sessions and resets copy a snapshot file; nothing
//! replays JSON at run time.

use crate::compiler::Contract;
use crate::error::{fail, ContractError, Error, Result};
use crate::files::{file_sha256, read_json, sha256_hex};
use crate::json::{dumps, object, DumpOptions, Map, Value};
use crate::plan::{seed_batch, Rows};
use crate::store::Store;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Connection settings while a snapshot is being built (none of them persist in the
/// file): a build file is renamed into place only when complete, so it needs rollback
/// (a refused batch) but not durability, and a large cache keeps big batches linear.
const BUILD_PRAGMAS: &str =
    "PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY;";

/// The snapshot file name.
pub const SNAPSHOT: &str = "state.sqlite";
/// The sidecar file name.
pub const SIDECAR: &str = "state.json";
/// The parent digest of the empty world.
pub const EMPTY_DIGEST: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const SIDECAR_KEYS: [&str; 6] = ["contractHash", "batchDigest", "entityCounts", "builtAt", "runtime", "fileSha256"];

/// A path as Python's `pathlib` prints it: empty and `.` parts dropped.
pub fn display_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let absolute = text.starts_with('/');
    let parts: Vec<&str> = text.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    match (absolute, parts.is_empty()) {
        (true, _) => format!("/{}", parts.join("/")),
        (false, true) => ".".into(),
        (false, false) => parts.join("/"),
    }
}

fn io_error(error: std::io::Error, path: &Path) -> Error {
    Error::io(error, path)
}

/// `sha256(parent + "\n" + batch_id + "\n" + "\n".join(sorted(chunks)))`.
pub fn batch_digest(parent: &str, batch_id: &str, chunks: &[String]) -> String {
    let mut sorted = chunks.to_vec();
    sorted.sort();
    sha256_hex(format!("{parent}\n{batch_id}\n{}", sorted.join("\n")).as_bytes())
}

/// The world's data files in replay order: `data/initial.json`, then `data/batches/*.json`.
pub fn data_files(world: &Path) -> Vec<PathBuf> {
    let mut files = vec![world.join("data/initial.json")];
    if let Ok(entries) = std::fs::read_dir(world.join("data/batches")) {
        let mut journals: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
            .collect();
        journals.sort();
        files.extend(journals);
    }
    files
}

/// The digest of the tree's data files applied in order.
pub fn default_batch_digest(world: &Path) -> Result<String> {
    // initial.json is read once for both its id and its sha256 (it can be large).
    let initial = world.join("data/initial.json");
    let (batch_id, bytes) = crate::files::read_json_id_and_bytes(&initial)?;
    let batch_id = batch_id.unwrap_or_default();
    let mut chunks = Vec::new();
    for path in data_files(world) {
        if path == initial {
            use sha2::Digest as _;
            chunks.push(hex::encode(sha2::Sha256::digest(&bytes)));
            continue;
        }
        chunks.push(file_sha256(&path).map_err(|e| io_error(e, &path))?);
    }
    Ok(batch_digest(EMPTY_DIGEST, &batch_id, &chunks))
}

/// The platform's pin (`db/snapshot.json`) when the tree is a data-only version.
pub fn pinned_default(world: &Path) -> Result<Option<Value>, ContractError> {
    let path = world.join("db/snapshot.json");
    if !path.is_file() {
        return Ok(None);
    }
    let pin = read_json(&path)?;
    if pin.get("batchDigest").and_then(Value::as_str).is_none_or(|d| d.chars().count() != 64) {
        return fail("snapshot_pin", "db/snapshot.json must name the hosted snapshot's batchDigest", "/db/snapshot.json");
    }
    Ok(Some(pin))
}

/// The batch digest the default snapshot must carry.
pub fn expected_default_digest(world: &Path) -> Result<String> {
    match pinned_default(world)? {
        Some(pin) => Ok(pin.get("batchDigest").and_then(Value::as_str).unwrap_or_default().to_string()),
        None => default_batch_digest(world),
    }
}

/// One authored scenario directory.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The directory name, which is the scenario name.
    pub name: String,
    /// The scenario directory.
    pub dir: PathBuf,
}

fn read_toml(path: &Path) -> Result<toml::Table> {
    let text = std::fs::read_to_string(path).map_err(|e| io_error(e, path))?;
    text.parse::<toml::Table>().map_err(|e| Error::Io { message: e.message().to_string() })
}

/// Python's `repr` of a TOML value (strings quoted, booleans capitalised).
fn toml_repr(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => crate::json::python_repr(&Value::str(text)),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(f) => crate::json::python_float_repr(*f),
        toml::Value::Boolean(b) => {
            if *b {
                "True".into()
            } else {
                "False".into()
            }
        }
        other => format!("{other:?}"),
    }
}

/// A world's scenarios: `scenarios/<name>/scenario.toml`, in name order.
pub fn scenario_dirs(world: &Path) -> Result<Vec<Scenario>> {
    let Ok(entries) = std::fs::read_dir(world.join("scenarios")) else {
        return Ok(Vec::new());
    };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    let mut out = Vec::new();
    for dir in dirs {
        let marker = dir.join("scenario.toml");
        if !marker.is_file() {
            continue;
        }
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let table = read_toml(&marker)?;
        if let Some(declared) = table.get("name") {
            if declared.as_str() != Some(name.as_str()) {
                let shown = toml_repr(declared);
                return Err(ContractError::new(
                    "scenario",
                    format!("{name}/scenario.toml names {shown}; the directory is the name"),
                    format!("/scenarios/{name}"),
                )
                .into());
            }
        }
        for overlay in scenario_seed_files(&dir)? {
            if read_json(&overlay)?.as_object().is_none() {
                let file = overlay.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                return Err(ContractError::new(
                    "scenario",
                    format!("{file} must be an object of entity -> rows"),
                    format!("/scenarios/{name}"),
                )
                .into());
            }
        }
        out.push(Scenario { name, dir });
    }
    Ok(out)
}

/// A scenario's seed overlay files, sorted.
pub fn scenario_seed_files(scenario: &Path) -> Result<Vec<PathBuf>> {
    let table = read_toml(&scenario.join("scenario.toml"))?;
    let seed = match table.get("seed") {
        Some(toml::Value::String(text)) if !text.is_empty() => text.clone(),
        Some(toml::Value::String(_)) | None => "seed".into(),
        Some(other) => toml_repr(other),
    };
    let Ok(entries) = std::fs::read_dir(scenario.join(seed)) else {
        return Ok(Vec::new());
    };
    let mut files: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    Ok(files)
}

/// The scenario's overlays merged: a later file replaces an entity named twice.
pub fn scenario_overlay(scenario: &Path) -> Result<Map> {
    let mut overlay = Map::default();
    for path in scenario_seed_files(scenario)? {
        if let Value::Object(map) = read_json(&path)? {
            for (entity, rows) in map {
                overlay.insert(entity, rows);
            }
        }
    }
    Ok(overlay)
}

/// The sidecar file beside a snapshot.
pub fn sidecar_path(snapshot: &Path) -> PathBuf {
    snapshot.with_file_name(SIDECAR)
}

/// The sidecar of a snapshot, if present; refused when unreadable or incomplete.
pub fn read_sidecar(snapshot: &Path) -> Result<Option<Value>, ContractError> {
    let path = sidecar_path(snapshot);
    if !path.is_file() {
        return Ok(None);
    }
    let shown = display_path(&path);
    let parsed =
        std::fs::read(&path).ok().and_then(|b| String::from_utf8(b).ok()).and_then(|t| crate::json::parse(&t).ok()).map(|p| p.value);
    let Some(sidecar) = parsed else {
        return fail("snapshot", format!("Cannot read the snapshot sidecar {SIDECAR}"), shown);
    };
    if sidecar.as_object().is_none_or(|m| SIDECAR_KEYS.iter().any(|k| !m.contains_key(*k))) {
        return fail("snapshot", format!("The snapshot sidecar {SIDECAR} lacks {}", SIDECAR_KEYS.join(", ")), shown);
    }
    Ok(Some(sidecar))
}

pub use gateway_common::time::{format_utc, utc_now_seconds};

/// Write a snapshot's `state.json` sidecar (its file's sha256 read now); returns it.
pub fn write_sidecar(snapshot: &Path, contract_digest: &str, digest: &str, counts: Value) -> Result<Value> {
    let sha = file_sha256(snapshot).map_err(|e| io_error(e, snapshot))?;
    let sidecar = object([
        ("contractHash", Value::str(contract_digest)),
        ("batchDigest", Value::str(digest)),
        ("entityCounts", counts),
        ("builtAt", Value::Str(utc_now_seconds())),
        ("runtime", Value::str(crate::RUNTIME)),
        ("fileSha256", Value::Str(sha)),
    ]);
    let options = DumpOptions { sort_keys: false, ensure_ascii: true, indent: Some(1), compact: false };
    let path = sidecar_path(snapshot);
    crate::files::write_atomic(&path, format!("{}\n", dumps(&sidecar, options)).as_bytes()).map_err(|e| io_error(e, &path))?;
    Ok(sidecar)
}

fn current(snapshot: &Path, contract_digest: &str, digest: &str) -> Result<Option<Value>, ContractError> {
    if !snapshot.is_file() {
        return Ok(None);
    }
    Ok(read_sidecar(snapshot)?.filter(|s| {
        s.get("contractHash").and_then(Value::as_str) == Some(contract_digest)
            && s.get("batchDigest").and_then(Value::as_str) == Some(digest)
    }))
}

/// The sidecar of a snapshot whose bytes and contract it names; anything else is refused.
pub fn verify(snapshot: &Path, contract: &Contract) -> Result<Value> {
    let shown = display_path(snapshot);
    let Some(sidecar) = read_sidecar(snapshot)? else {
        return Err(ContractError::new("snapshot", format!("{shown} has no {SIDECAR} sidecar; recompile"), shown).into());
    };
    if sidecar.get("contractHash").and_then(Value::as_str) != Some(contract.contract_hash().as_str()) {
        return Err(ContractError::new("snapshot", format!("{shown} was built for a different contract; recompile"), shown).into());
    }
    if !snapshot.is_file() {
        return Err(ContractError::new("snapshot", format!("{shown} is missing; recompile"), shown).into());
    }
    let sha = file_sha256(snapshot).map_err(|e| io_error(e, snapshot))?;
    if sidecar.get("fileSha256").and_then(Value::as_str) != Some(sha.as_str()) {
        return Err(ContractError::new("snapshot", format!("{shown} differs from its sidecar's fileSha256; recompile"), shown).into());
    }
    Ok(sidecar)
}

/// `<world>/db/state.sqlite`.
pub fn default_snapshot(world: &Path) -> PathBuf {
    world.join("db").join(SNAPSHOT)
}

/// `<world>/scenarios/<name>/state.sqlite`.
pub fn scenario_snapshot(world: &Path, name: &str) -> PathBuf {
    world.join("scenarios").join(name).join(SNAPSHOT)
}

fn replace(snapshot: &Path, fresh: &Path) -> Result<()> {
    let _ = std::fs::remove_file(snapshot);
    let _ = std::fs::remove_file(sidecar_path(snapshot));
    std::fs::rename(fresh, snapshot).map_err(|e| io_error(e, snapshot))
}

/// Build `db/state.sqlite` unless a snapshot already holds this contract and data.
pub fn build_default(world: &Path, contract: &Arc<Contract>, force: bool) -> Result<Value> {
    let snapshot = default_snapshot(world);
    let contract_digest = contract.contract_hash();
    let digest = expected_default_digest(world)?;
    let kept = current(&snapshot, &contract_digest, &digest)?;
    if world.join("db/snapshot.json").is_file() {
        return kept.ok_or_else(|| {
            ContractError::new(
                "snapshot_pinned",
                format!("db/snapshot.json pins the hosted snapshot {digest}, which is not in the tree: fetch the world with its snapshot (load_world_to_sandbox, gateway worlds pull) or remove the pin to rebuild from the data files"),
                "/db/state.sqlite",
            )
            .into()
        });
    }
    if let (false, Some(kept)) = (force, kept) {
        return Ok(kept);
    }
    build_into(&snapshot, &contract_digest, &digest, |fresh| {
        let mut store = Store::create(fresh, contract.clone())?;
        store.connection().execute_batch(BUILD_PRAGMAS)?;
        for path in data_files(world) {
            store.apply_batch_file(&crate::files::read_batch(&path)?)?;
        }
        Ok(store)
    })
}

/// Build a snapshot under `.state.sqlite.building` with `fill`, then count, move it into
/// place and write its sidecar. A refusal removes the building file and leaves the
/// previous snapshot as it was.
fn build_into(snapshot: &Path, contract_digest: &str, digest: &str, fill: impl FnOnce(&Path) -> Result<Store>) -> Result<Value> {
    let fresh = snapshot.with_file_name(format!(".{SNAPSHOT}.building"));
    let _ = std::fs::remove_file(&fresh);
    let built = fill(&fresh).and_then(|store| {
        let counts = store.counts_value()?;
        store.close()?;
        Ok(counts)
    });
    let counts = match built {
        Ok(counts) => counts,
        Err(error) => {
            let _ = std::fs::remove_file(&fresh);
            return Err(error);
        }
    };
    replace(snapshot, &fresh)?;
    write_sidecar(snapshot, contract_digest, digest, counts)
}

/// Build `scenarios/<name>/state.sqlite`: the default snapshot with the overlays applied.
pub fn build_scenario(world: &Path, scenario: &Scenario, contract: &Arc<Contract>, default: &Value, force: bool) -> Result<Value> {
    let snapshot = scenario_snapshot(world, &scenario.name);
    let contract_digest = contract.contract_hash();
    let mut chunks = Vec::new();
    for path in scenario_seed_files(&scenario.dir)? {
        chunks.push(file_sha256(&path).map_err(|e| io_error(e, &path))?);
    }
    let parent = default.get("batchDigest").and_then(Value::as_str).unwrap_or_default();
    let digest = batch_digest(parent, &format!("scenario:{}", scenario.name), &chunks);
    if !force {
        if let Some(kept) = current(&snapshot, &contract_digest, &digest)? {
            return Ok(kept);
        }
    }
    let source = default_snapshot(world);
    build_into(&snapshot, &contract_digest, &digest, |fresh| {
        std::fs::copy(&source, fresh).map_err(|e| io_error(e, &source))?;
        let mut store = Store::open(fresh, contract.clone(), false)?;
        store.connection().execute_batch(BUILD_PRAGMAS)?;
        let overlay = scenario_overlay(&scenario.dir)?;
        if !overlay.is_empty() {
            let Some(rows): Option<Rows> = crate::plan::rows_from_object(&Value::Object(overlay)) else {
                return Err(ContractError::new("rows", "rows must map entity names to arrays of rows", "/rows").into());
            };
            let batch = seed_batch(&store, &rows, "replace", Some(&format!("scenario:{}", scenario.name)))?;
            store.apply_batch(&batch)?;
        }
        Ok(store)
    })
}

/// The default snapshot and one per scenario: `{"default": sidecar, "scenarios": {name: sidecar}}`.
pub fn build_all(world: &Path, contract: &Arc<Contract>, force: bool) -> Result<Value> {
    let default = build_default(world, contract, force)?;
    let mut scenarios = Map::default();
    for scenario in scenario_dirs(world)? {
        let sidecar = build_scenario(world, &scenario, contract, &default, force)?;
        scenarios.insert(scenario.name, sidecar);
    }
    Ok(object([("default", default), ("scenarios", Value::Object(scenarios))]))
}

/// Remove every snapshot in the tree.
pub fn discard_all(world: &Path) {
    let mut targets = vec![default_snapshot(world)];
    if let Ok(entries) = std::fs::read_dir(world.join("scenarios")) {
        targets.extend(entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).map(|p| p.join(SNAPSHOT)));
    }
    for snapshot in targets {
        let _ = std::fs::remove_file(&snapshot);
        let _ = std::fs::remove_file(sidecar_path(&snapshot));
    }
}

/// Verify every snapshot present in the tree; absent ones are not required.
/// Returns `(default sidecar with "stale", scenario sidecars)`.
pub fn check_all(world: &Path, contract: &Contract) -> Result<Value> {
    let mut found = Map::default();
    let snapshot = default_snapshot(world);
    let mut default = Value::Null;
    if snapshot.is_file() || sidecar_path(&snapshot).is_file() {
        let mut sidecar = verify(&snapshot, contract)?;
        let stale = pinned_default(world)?.is_none()
            && sidecar.get("batchDigest").and_then(Value::as_str) != Some(default_batch_digest(world)?.as_str());
        if let Value::Object(map) = &mut sidecar {
            map.insert("stale".into(), Value::Bool(stale));
        }
        default = sidecar;
    }
    found.insert("default".into(), default);
    let mut scenarios = Map::default();
    for scenario in scenario_dirs(world)? {
        let snapshot = scenario_snapshot(world, &scenario.name);
        if snapshot.is_file() || sidecar_path(&snapshot).is_file() {
            scenarios.insert(scenario.name.clone(), verify(&snapshot, contract)?);
        }
    }
    found.insert("scenarios".into(), Value::Object(scenarios));
    Ok(Value::Object(found))
}

/// The default snapshot's sidecar when it is exactly the tree's data through this contract.
pub fn current_default(world: &Path, contract: &Contract) -> Result<Option<Value>> {
    let snapshot = default_snapshot(world);
    if !snapshot.is_file() || !world.join("data/initial.json").is_file() {
        return Ok(None);
    }
    let digest = expected_default_digest(world)?;
    Ok(current(&snapshot, &contract.contract_hash(), &digest)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(1_709_164_800), "2024-02-29T00:00:00Z");
        assert_eq!(format_utc(1_798_761_599), "2026-12-31T23:59:59Z");
    }

    #[test]
    fn paths_display_like_pathlib() {
        assert_eq!(display_path(Path::new("./w//db/state.sqlite")), "w/db/state.sqlite");
        assert_eq!(display_path(Path::new("/tmp/./w/db")), "/tmp/w/db");
    }
}

//! What a world seeds with: `data show` (counts, or one entity's rows).

use crate::compiler::bundle_mode;
use crate::error::{fail, ContractError, Result};
use crate::json::{object, Value};
use crate::lifecycle::check_bundle;
use crate::snapshot::{current_default, data_files, default_snapshot};
use crate::store::Store;
use std::path::Path;

/// The kinds of world directory the original distinguishes.
pub fn world_kind(root: &Path) -> Result<&'static str, ContractError> {
    if bundle_mode(root)?.is_some() {
        return Ok("schema");
    }
    if root.join("gateway-api-world.toml").is_file() {
        return Ok("api");
    }
    if root.join("gateway-env.toml").is_file() {
        return Ok("mock-tools");
    }
    let harbor = |pattern_dir: &Path| {
        std::fs::read_dir(pattern_dir).map(|d| d.filter_map(|e| e.ok()).any(|e| e.path().join("task.toml").is_file())).unwrap_or(false)
    };
    if harbor(&root.join("tasks")) || harbor(root) {
        return Ok("harbor");
    }
    Ok("unknown")
}

/// The refusal for a world kind rows cannot go into (or be read from).
pub fn refuse_kind(kind: &str, root: &Path) -> ContractError {
    let shown = crate::snapshot::display_path(root);
    match kind {
        "api" => ContractError::new("kind", "This is an api world: its seed/base.json is generated from the authoring world's data/initial.json. Import into the world directory that holds connector.toml, then `gateway bench push` it again", shown),
        "harbor" => ContractError::new("kind", "This is a harbor task tree: each task seeds from its own fixtures under tasks/<task>/environment/ (schema.sql, seed.sql, files). Edit those", shown),
        _ => ContractError::new("kind", format!("{shown} is not a world this command knows: no gateway-env.toml, gateway-api-world.toml or tasks/*/task.toml"), shown),
    }
}

/// A scratch store holding the tree's data, for worlds without a current snapshot.
fn materialize(root: &Path, contract: &std::sync::Arc<crate::Contract>) -> Result<(tempfile_dir::Scratch, Store)> {
    let scratch = tempfile_dir::Scratch::new("gateway-show")?;
    let mut store = Store::create(&scratch.path().join("world.db"), contract.clone())?;
    for path in data_files(root) {
        store.apply_batch_file(&crate::files::read_batch(&path)?)?;
    }
    Ok((scratch, store))
}

/// The rows of an api world's `seed/base.json`.
fn api_seed(root: &Path) -> Result<crate::json::Map> {
    let base = root.join("seed/base.json");
    if !base.is_file() {
        return Ok(crate::json::Map::default());
    }
    Ok(crate::files::read_json(&base)?.as_object().cloned().unwrap_or_default())
}

/// A mock-tools world's starting database, materialized in a scratch directory.
fn mock_tools(root: &Path) -> Result<(tempfile_dir::Scratch, rusqlite::Connection)> {
    let scratch = tempfile_dir::Scratch::new("gateway-show")?;
    let conn = crate::mock_tools::materialize_mock_tools(root, &scratch.path().join("world.db"))?;
    Ok((scratch, conn))
}

/// Rows per entity (or table) the world seeds with.
pub fn entity_counts(root: &Path) -> Result<Value> {
    let kind = world_kind(root)?;
    match kind {
        "api" => {
            let seed = api_seed(root)?;
            return Ok(object(seed.iter().filter_map(|(k, v)| v.as_array().map(|rows| (k.clone(), Value::Int(rows.len() as i64))))));
        }
        "mock-tools" => {
            let (_scratch, conn) = mock_tools(root)?;
            return crate::mock_tools::sqlite_counts(&conn);
        }
        "schema" => {}
        _ => return Err(refuse_kind(kind, root).into()),
    }
    let contract = check_bundle(root)?;
    if let Some(sidecar) = current_default(root, &contract)? {
        return Ok(sidecar.get("entityCounts").cloned().unwrap_or_else(|| object::<_, String>([])));
    }
    let (_scratch, store) = materialize(root, &contract)?;
    store.counts_value()
}

/// The rows one entity (or table) seeds with, in key order.
pub fn entity_rows(root: &Path, entity: &str) -> Result<Vec<Value>> {
    let kind = world_kind(root)?;
    match kind {
        "api" => {
            let seed = api_seed(root)?;
            let Some(rows) = seed.get(entity) else {
                let mut names: Vec<&str> = seed.keys().map(String::as_str).collect();
                names.sort();
                let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
                return Err(
                    ContractError::new("entity", format!("Unknown entity {entity}; the seed has {names}"), format!("/{entity}")).into()
                );
            };
            return Ok(rows.as_array().cloned().unwrap_or_default());
        }
        "mock-tools" => return mock_tools_rows(root, entity),
        "schema" => {}
        _ => return Err(refuse_kind(kind, root).into()),
    }
    let contract = check_bundle(root)?;
    if contract.entity(entity).is_none() {
        let names: Vec<&str> = contract.entities.iter().map(|e| e.name.as_str()).collect();
        return Err(fail::<()>("entity", format!("Unknown entity {entity}; the world has {}", names.join(", ")), format!("/{entity}"))
            .unwrap_err()
            .into());
    }
    if current_default(root, &contract)?.is_some() {
        let store = Store::open(&default_snapshot(root), contract.clone(), false)?;
        return store.list(entity);
    }
    let (_scratch, store) = materialize(root, &contract)?;
    store.list(entity)
}

fn mock_tools_rows(root: &Path, table: &str) -> Result<Vec<Value>> {
    use rusqlite::types::ValueRef;
    let (_scratch, conn) = mock_tools(root)?;
    let columns = crate::mock_tools::sqlite_columns(&conn)?;
    if !columns.iter().any(|(t, _)| t == table) {
        let mut names: Vec<&str> = columns.iter().map(|(t, _)| t.as_str()).collect();
        names.sort();
        let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        return Err(ContractError::new("table", format!("No table {table}; tables: {names}"), format!("/{table}")).into());
    }
    let mut statement = conn.prepare(&format!("SELECT * FROM {}", crate::mock_tools::sql_ident(table)))?;
    let names: Vec<String> = statement.column_names().into_iter().map(str::to_string).collect();
    let mut rows = statement.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut map = crate::json::Map::default();
        for (i, name) in names.iter().enumerate() {
            let value = match row.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => Value::Int(n),
                ValueRef::Real(f) => Value::Float(f),
                ValueRef::Text(t) => Value::Str(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::Str(String::from_utf8_lossy(b).into_owned()),
            };
            map.insert(name.clone(), value);
        }
        out.push(Value::Object(map));
    }
    Ok(out)
}

/// The per-process temporary directories (kept at this path for the crates above).
pub use gateway_common::temp as tempfile_dir;

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

fn refuse_kind(kind: &str, root: &Path) -> ContractError {
    let shown = crate::snapshot::display_path(root);
    match kind {
        "api" => ContractError::new("kind", "This is an api world: its seed/base.json is generated from the authoring world's data/initial.json. Import into the world directory that holds connector.toml, then `gateway bench push` it again", shown),
        "harbor" => ContractError::new("kind", "This is a harbor task tree: it holds tasks, not world rows", shown),
        "mock-tools" => ContractError::new("kind", "Mock-tools worlds (db/seed.sql) are shown by the rows issue; this build reads schema worlds", shown),
        _ => ContractError::new("kind", format!("{shown} is not a world this command knows: no gateway-env.toml, gateway-api-world.toml or tasks/*/task.toml"), shown),
    }
}

/// A scratch store holding the tree's data, for worlds without a current snapshot.
fn materialize(root: &Path, contract: &std::sync::Arc<crate::Contract>) -> Result<(tempfile_dir::Scratch, Store)> {
    let scratch = tempfile_dir::Scratch::new("gateway-show")?;
    let mut store = Store::create(&scratch.path().join("world.db"), contract.clone())?;
    for path in data_files(root) {
        store.apply_batch(&crate::files::read_json(&path)?)?;
    }
    Ok((scratch, store))
}

/// Rows per entity the world seeds with.
pub fn entity_counts(root: &Path) -> Result<Value> {
    let kind = world_kind(root)?;
    if kind != "schema" {
        return Err(refuse_kind(kind, root).into());
    }
    let contract = check_bundle(root)?;
    if let Some(sidecar) = current_default(root, &contract)? {
        return Ok(sidecar.get("entityCounts").cloned().unwrap_or_else(|| object::<_, String>([])));
    }
    let (_scratch, store) = materialize(root, &contract)?;
    store.counts_value()
}

/// The rows one entity seeds with, in key order.
pub fn entity_rows(root: &Path, entity: &str) -> Result<Vec<Value>> {
    let kind = world_kind(root)?;
    if kind != "schema" {
        return Err(refuse_kind(kind, root).into());
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

/// A private temporary directory removed on drop (std only: the engine needs one
/// scratch directory per call, not a dependency).
pub mod tempfile_dir {
    use std::path::{Path, PathBuf};

    /// A temporary directory.
    #[derive(Debug)]
    pub struct Scratch(PathBuf);

    impl Scratch {
        /// Create `<tmp>/<prefix>-<random>`.
        pub fn new(prefix: &str) -> crate::Result<Scratch> {
            let mut bytes = [0u8; 8];
            crate::store::fill_random(&mut bytes);
            let path = std::env::temp_dir().join(format!("{prefix}-{}", hex::encode(bytes)));
            std::fs::create_dir_all(&path).map_err(|e| crate::Error::io(e, &path))?;
            Ok(Scratch(path))
        }
        /// The directory.
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

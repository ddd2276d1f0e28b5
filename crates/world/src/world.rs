//! A world directory opened once: its root, its kind, and — for a schema world —
//! its contract, built the first time something needs it and shared after.
//!
//! Compiling a contract reads and resolves the whole `schema/` tree; a command
//! that imports rows, proves the staged snapshot, recompiles and checks used to
//! build it four times. Through a [`World`] it is built once: the compiled
//! artifacts, the staged copy's proof and the final check all use the same
//! value. A `World` is not a cache across processes and not a lock: it assumes
//! nobody else edits the contract while it is held (the snapshot and data files
//! may change; they are read where they are used).

use crate::compiler::Contract;
use crate::error::Result;
use crate::lifecycle::{self, build_counted};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub use crate::lifecycle::contract_builds;

/// A world directory and what is known of it.
#[derive(Debug)]
pub struct World {
    root: PathBuf,
    kind: &'static str,
    contract: OnceLock<Arc<Contract>>,
}

impl World {
    /// Open the world at `root`: its kind is read now, its contract when first needed.
    pub fn open(root: &Path) -> Result<World> {
        let kind = crate::data::world_kind(root)?;
        Ok(World { root: root.to_path_buf(), kind, contract: OnceLock::new() })
    }

    /// The world's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `schema`, `api`, `mock-tools`, `harbor` (as [`crate::data::world_kind`] names them).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The contract, built on first use.
    pub fn contract(&self) -> Result<Arc<Contract>> {
        if let Some(contract) = self.contract.get() {
            return Ok(contract.clone());
        }
        let built = Arc::new(build_counted(&self.root)?);
        Ok(self.contract.get_or_init(|| built).clone())
    }

    /// `compile`'s writes: the generated artifacts and, with `snapshots`, every
    /// snapshot once the world has data (a data refusal removes them instead of
    /// failing, as the original's `compile_bundle`).
    pub fn compile(&self, snapshots: bool) -> Result<Arc<Contract>> {
        let contract = self.contract()?;
        lifecycle::compile_with(&self.root, &contract, snapshots)?;
        Ok(contract)
    }

    /// `check`: every generated artifact and snapshot present matches the contract.
    pub fn check(&self) -> Result<Arc<Contract>> {
        let contract = self.contract()?;
        lifecycle::check_with(&self.root, &contract)?;
        Ok(contract)
    }

    /// The same world's contract for a copy of it at `root` (a staged copy whose
    /// `schema/` is this world's): no second build.
    pub fn copy_at(&self, root: &Path) -> World {
        let contract = OnceLock::new();
        if let Some(built) = self.contract.get() {
            let _ = contract.set(built.clone());
        }
        World { root: root.to_path_buf(), kind: self.kind, contract }
    }
}

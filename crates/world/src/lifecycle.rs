//! What the `schema compile | check | describe` commands do to a world directory.

use crate::compiler::{build, Contract};
use crate::error::{ContractError, Error, Result};
use crate::files::write_atomic;
use crate::json::Value;
use crate::snapshot;
use crate::world::build_counted;
use std::path::Path;
use std::sync::Arc;

/// Write the generated artifacts and the lock (atomically, one file at a time).
pub fn write_artifacts(world: &Path, contract: &Contract) -> Result<()> {
    for (relative, bytes) in contract.files() {
        let path = world.join(relative);
        write_atomic(&path, &bytes).map_err(|e| Error::io(e, &path))?;
    }
    Ok(())
}

/// Build the contract and write its artifacts. With `snapshots`, also build the
/// snapshots once `data/initial.json` exists; data the contract refuses removes
/// every snapshot instead of failing (the original's `compile_bundle`).
pub fn compile_bundle(world: &Path, snapshots: bool) -> Result<Arc<Contract>> {
    let contract = Arc::new(build_counted(world)?);
    compile_with(world, &contract, snapshots)?;
    Ok(contract)
}

/// [`compile_bundle`] with a contract already built for this world.
pub fn compile_with(world: &Path, contract: &Arc<Contract>, snapshots: bool) -> Result<()> {
    write_artifacts(world, contract)?;
    if snapshots && world.join("data/initial.json").is_file() {
        match snapshot::build_all(world, contract, false) {
            Ok(_) => {}
            Err(Error::Contract(_)) => snapshot::discard_all(world),
            Err(other) => return Err(other),
        }
    }
    Ok(())
}

/// `compile`: artifacts, then every snapshot; a data refusal is reported.
pub fn compile_world(world: &Path) -> Result<(Arc<Contract>, Value)> {
    let contract = compile_bundle(world, false)?;
    let snapshots = snapshot::build_all(world, &contract, false)?;
    Ok((contract, snapshots))
}

/// `check`: the contract, provided every generated artifact and every snapshot
/// present matches it.
pub fn check_bundle(world: &Path) -> Result<Arc<Contract>> {
    let contract = Arc::new(build_counted(world)?);
    check_with(world, &contract)?;
    Ok(contract)
}

/// [`check_bundle`], with the snapshots it verified: `{"default": sidecar + "stale" | null,
/// "scenarios": {name: sidecar}}`. A stale default snapshot (built from earlier data than
/// the tree holds, e.g. an import killed between its data swap and the rebuild) passes,
/// as the original's check passes it; the caller says so.
pub fn check_report(world: &Path) -> Result<(Arc<Contract>, Value)> {
    let contract = Arc::new(build_counted(world)?);
    check_artifacts(world, &contract)?;
    let snapshots = snapshot::check_all(world, &contract)?;
    Ok((contract, snapshots))
}

/// [`check_bundle`] with a contract already built for this world.
pub fn check_with(world: &Path, contract: &Contract) -> Result<()> {
    check_artifacts(world, contract)?;
    snapshot::check_all(world, contract).map(|_| ())
}

/// Every generated artifact on disk is the one `contract` generates.
fn check_artifacts(world: &Path, contract: &Contract) -> Result<()> {
    for (relative, expected) in contract.files() {
        let matches = std::fs::read(world.join(relative)).is_ok_and(|bytes| bytes == *expected);
        if !matches {
            return Err(ContractError::new(
                "lock_mismatch",
                "Missing, edited or incompatible contract artifact; explicitly recompile (state migration is not automatic)",
                relative,
            )
            .into());
        }
    }
    Ok(())
}

/// `describe`: the generated README text.
pub fn describe(world: &Path) -> Result<String> {
    let contract = build(world)?;
    Ok(String::from_utf8_lossy(contract.artifact("schema/README.md")).into_owned())
}

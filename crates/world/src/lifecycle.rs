//! What the `schema compile | check | describe` commands do to a world directory.

use crate::compiler::{build, Contract, LOCK};
use crate::error::{ContractError, Error, Result};
use crate::files::{file_sha256, write_atomic_pieces};
use crate::json::{encoded, Value};
use crate::snapshot;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How many contracts this process has built (every [`build`] through a
/// [`crate::World`] or the path-taking helpers here); what the tests of "built
/// once" read (`gateway_world::world::contract_builds`).
pub fn contract_builds() -> u64 {
    BUILDS.load(Ordering::Relaxed)
}

static BUILDS: AtomicU64 = AtomicU64::new(0);

/// Build a contract, counted.
pub(crate) fn build_counted(root: &Path) -> Result<Contract> {
    BUILDS.fetch_add(1, Ordering::Relaxed);
    Ok(build(root)?)
}

/// Write the generated artifacts and the lock (atomically, one file at a time, each
/// streamed from the contract).
pub fn write_artifacts(world: &Path, contract: &Contract) -> Result<()> {
    for relative in Contract::artifact_paths() {
        let path = world.join(relative);
        write_atomic_pieces(&path, |sink| contract.write_artifact(relative, sink)).map_err(|e| Error::io(e, &path))?;
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

/// Every generated artifact on disk is the one `contract` generates: each generated
/// file hashes to what the contract's lock records for it (the file streamed, never
/// held), and the lock is the contract's lock.
fn check_artifacts(world: &Path, contract: &Contract) -> Result<()> {
    let recorded = contract.lock.get("artifacts");
    for relative in Contract::artifact_paths() {
        let path = world.join(relative);
        let matches = if relative == LOCK {
            std::fs::read(&path).is_ok_and(|bytes| bytes == encoded(&contract.lock))
        } else {
            let expected = recorded.and_then(|a| a.get(relative)).and_then(Value::as_str);
            file_sha256(&path).is_ok_and(|hash| Some(hash.as_str()) == expected)
        };
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
    Ok(contract.artifact_text("schema/README.md"))
}

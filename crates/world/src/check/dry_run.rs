//! [`check_rows`]: rows files staged, reference-checked and applied against a
//! world's snapshot without writing it (the apply decided in memory or in a scratch
//! copy).

use super::engine::{Engine, Input, Staging};
use super::memory::{self, Decision};
use super::options::CheckOptions;
use super::report::CheckReport;
use super::sql;
use crate::error::{Error, Result};
use crate::json::object;
use crate::lifecycle::check_bundle;
use crate::plan::Mode;
use crate::rows::Progress;
use crate::snapshot::{build_default, default_snapshot};
use crate::store::Store;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// The references step and the apply of staged rows against the snapshot at
/// `parent`: the apply decided in memory (an `append`) or in a scratch copy of
/// `parent` (a `replace`, or what memory cannot decide). Nothing is written.
fn decide(engine: &Engine<'_>, mut staging: Staging, parent: &Path, options: &CheckOptions) -> Result<CheckReport> {
    let contract = engine.contract;
    let timing = std::env::var_os("GATEWAY_TIMING").is_some();
    let clock = std::time::Instant::now();
    let lap = |what: &str| {
        if timing {
            eprintln!("{what}: {:.3}s", clock.elapsed().as_secs_f64());
        }
    };
    let snapshot = Connection::open_with_flags(parent, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    // One read transaction for the whole check: without it every lookup takes and drops
    // the file lock and SQLite empties its page cache in between.
    snapshot.execute_batch("PRAGMA cache_size = -16384; BEGIN")?;
    engine.references(&mut staging, &snapshot, options.mode.as_str())?;
    lap("references");
    let decided = if options.mode == Mode::Append && !options.exact {
        memory::apply(contract, &engine.unique_plans, &snapshot, &staging.stage.rows)?
    } else {
        Decision::Undecided
    };
    // Ok(counts after the batch) or Err(the refusal).
    let outcome = match decided {
        Decision::Accepted(counts) => Ok(counts),
        Decision::Refused(record) => Err(record),
        Decision::Undecided => {
            let scratch = crate::data::tempfile_dir::Scratch::new("gateway-check")?;
            let copy = scratch.path().join("state.sqlite");
            std::fs::copy(parent, &copy).map_err(|e| Error::io(e, parent))?;
            let store = Store::open(&copy, contract.clone(), false)?;
            sql::apply(contract, &store, &staging.stage.rows, options.mode.as_str())?
        }
    };
    let (refused, entity_counts) = match outcome {
        Ok(counts) => (None, counts),
        // A refused batch leaves the parent's counts.
        Err(record) => (Some(record), memory::counts(contract, &snapshot, &Default::default())?),
    };
    drop(snapshot);
    if let Some(record) = refused {
        staging.refuse(record);
    }
    lap("apply");
    let rows = staging.rows;
    let (refusals, refusal_count) = staging.into_refusals();
    Ok(CheckReport { rows, refusals, refusal_count, entity_counts })
}

/// Check rows files against the world at `root` without changing its data files.
///
/// Like the original this builds `db/state.sqlite` in the world when it is not
/// current; the rows are applied to a scratch copy that is then discarded.
pub fn check_rows(root: &Path, sources: &[String], options: &CheckOptions, progress: Option<Progress<'_>>) -> Result<CheckReport> {
    let timing = std::env::var_os("GATEWAY_TIMING").is_some();
    let clock = std::time::Instant::now();
    let contract = check_bundle(root)?;
    if timing {
        eprintln!("check_bundle: {:.3}s", clock.elapsed().as_secs_f64());
    }
    let engine = Engine::new(&contract);
    let staging = engine.stage(Input::Files(sources), options, progress)?;
    if staging.rows == 0 {
        return Ok(CheckReport { rows: 0, refusals: Vec::new(), refusal_count: 0, entity_counts: object::<_, String>([]) });
    }
    if timing {
        eprintln!("stage: {:.3}s", clock.elapsed().as_secs_f64());
    }
    build_default(root, &contract, false)?;
    decide(&engine, staging, &default_snapshot(root), options)
}

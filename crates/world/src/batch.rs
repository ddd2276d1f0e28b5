//! Rows in bulk onto a snapshot: the original's `build_batch`, on the engine that
//! `data check` and `data import --dry-run` run ([`crate::check`]).
//!
//! A batch is a list of chunk files (gzipped or plain JSONL: tagged
//! `{"entity", "row"}` lines, or bare rows of the chunk's entity) applied onto a
//! private copy of the parent snapshot, which is written in place:
//!
//! * **atomic**: every chunk staged together (shape, keys, the in-batch merge), the
//!   references step against the parent plus the batch, then one transaction; any
//!   refusal anywhere and nothing is kept, every refusal found;
//! * **per chunk**: each chunk staged, checked and applied in its own transaction
//!   against the snapshot as the earlier chunks left it; a chunk with any refusal is
//!   rolled back whole, the others are kept. (The original's code keeps the accepted
//!   rows of a chunk whose refusals came from staging while reporting the chunk as
//!   not applied; the contract says a refused chunk is dropped whole, and so it is
//!   here. A dry run, like `data check`, counts every row the apply accepts.)
//!
//! Refusals are the records of [`crate::check::refusal`] with the chunk's ordinal and
//! the row's index inside the chunk. The new snapshot's digest is
//! `sha256(parent + "\n" + batchId + "\n" + sorted applied chunk digests)`, the
//! sha256 of each applied chunk file ([`crate::snapshot::batch_digest`]), and it gets
//! its `state.json` sidecar like any snapshot.

use crate::check::{CheckOptions, Engine, Input, Merge, REPORT_CAP};
use crate::compiler::Contract;
use crate::error::{ContractError, Error, Result};
use crate::files::file_sha256;
use crate::json::{canonical, object, Value};
use crate::plan::Mode;
use crate::snapshot::{batch_digest, write_sidecar};
use crate::store::Store;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One chunk of a batch.
#[derive(Debug, Clone)]
pub struct ChunkSpec {
    /// Its position in the batch (refusals name it).
    pub ordinal: usize,
    /// The chunk file: gzip over JSONL (`.gz`), or plain JSONL.
    pub path: PathBuf,
    /// The entity of a chunk of bare rows; None for tagged lines.
    pub entity: Option<String>,
    /// The chunk's digest (sha256 hex of its gzipped bytes) when the caller knows it:
    /// the file may then be the JSONL already gunzipped. None: the file's sha256.
    pub digest: Option<String>,
}

/// How a batch applies.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// How the rows meet the parent snapshot's.
    pub mode: Mode,
    /// What a row repeating a key in the batch does.
    pub merge: Merge,
    /// One transaction for the batch (true), or one per chunk.
    pub atomic: bool,
    /// The batch id: the ledger row, and part of the digest.
    pub batch_id: String,
    /// The parent snapshot's batch digest.
    pub parent_digest: String,
    /// Find the refusals and keep nothing.
    pub dry_run: bool,
    /// Bytes of staged rows held in memory before they move to a scratch file.
    pub memory_budget: usize,
}

/// What a batch did.
#[derive(Debug, Clone)]
pub struct BatchOutcome {
    /// sha256 of the contract lock.
    pub contract_hash: String,
    /// The new snapshot's batch digest.
    pub batch_digest: String,
    /// Row counts after the batch (the parent's when nothing could apply).
    pub entity_counts: Value,
    /// Rows read from the chunks.
    pub rows: usize,
    /// Rows inserted or updated.
    pub applied_rows: usize,
    /// The first [`REPORT_CAP`] refusal records.
    pub refusals: Vec<Value>,
    /// How many refusals there were.
    pub refusal_count: usize,
    /// Ordinals of the chunks applied.
    pub applied_chunks: Vec<usize>,
    /// Whether the snapshot file holds the batch (with its sidecar): false on a dry
    /// run and on a refused atomic batch, when the file is removed.
    pub written: bool,
    /// sha256 of the written snapshot file.
    pub file_sha256: Option<String>,
}

impl BatchOutcome {
    /// `{contractHash, batchDigest, entityCounts, appliedRows, refusals, refusalCount, appliedChunks}`.
    pub fn to_json(&self) -> Value {
        object([
            ("contractHash", Value::str(&self.contract_hash)),
            ("batchDigest", Value::str(&self.batch_digest)),
            ("entityCounts", self.entity_counts.clone()),
            ("appliedRows", Value::Int(self.applied_rows as i64)),
            ("refusals", Value::Array(self.refusals.clone())),
            ("refusalCount", Value::Int(self.refusal_count as i64)),
            ("appliedChunks", Value::Array(self.applied_chunks.iter().map(|n| Value::Int(*n as i64)).collect())),
        ])
    }
}

/// Refusals of a batch: the first [`REPORT_CAP`] kept, all counted.
#[derive(Default)]
struct Refusals {
    kept: Vec<Value>,
    count: usize,
}

impl Refusals {
    fn extend(&mut self, (records, count): (Vec<Value>, usize)) {
        let room = REPORT_CAP.saturating_sub(self.kept.len());
        self.kept.extend(records.into_iter().take(room));
        self.count += count;
    }

    fn push(&mut self, record: Value) {
        self.extend((vec![record], 1));
    }
}

/// Apply `chunks` onto the snapshot at `snapshot` (a private copy: it is written in
/// place) and describe the result. See the module documentation.
pub fn build_batch(contract: &Arc<Contract>, snapshot: &Path, chunks: &[ChunkSpec], options: &BatchOptions) -> Result<BatchOutcome> {
    let check = CheckOptions {
        entity: None,
        mode: options.mode,
        merge: options.merge,
        memory_budget: options.memory_budget,
        ..CheckOptions::default()
    };
    if options.batch_id.is_empty() {
        return Err(ContractError::new("input", "batchId must be a non-empty string", "/batchId").into());
    }
    let store = Store::open(snapshot, contract.clone(), false)?;
    let engine = Engine::new(contract);
    let envelope = |id: &str| {
        canonical(&object([
            ("coverage", Value::str("partial")),
            ("id", Value::str(id)),
            ("mapping", object([("id", Value::str("data-import")), ("version", Value::str("1"))])),
            ("target", contract.target().clone()),
        ]))
    };
    let digest_of = |chunk: &ChunkSpec| match &chunk.digest {
        Some(digest) => Ok(digest.clone()),
        None => file_sha256(&chunk.path).map_err(|e| Error::io(e, &chunk.path)),
    };
    let mut refusals = Refusals::default();
    let (mut rows, mut applied_rows) = (0usize, 0usize);
    let mut applied: Vec<(usize, String)> = Vec::new();
    let entity_counts;
    if options.atomic {
        let mut staging = engine.stage(Input::Chunks(chunks), &check, None)?;
        rows = staging.rows;
        engine.references(&mut staging, store.connection(), options.mode.as_str())?;
        let digests = chunks.iter().map(digest_of).collect::<Result<Vec<String>>>()?;
        let digest = batch_digest(&options.parent_digest, &options.batch_id, &digests);
        let ledger = crate::check::Ledger { id: &options.batch_id, digest: &digest, metadata: envelope(&options.batch_id) };
        let clean = staging.refused() == 0;
        let written =
            engine.write(&staging, &store, options.mode.as_str(), &ledger, |refused| clean && refused.is_none() && !options.dry_run)?;
        refusals.extend(staging.into_refusals());
        if let Some(record) = written.refusal {
            refusals.push(record);
        }
        if written.committed {
            applied_rows = written.upserts;
            applied = chunks.iter().map(|c| c.ordinal).zip(digests).collect();
        }
        // The counts the apply left (valid rows applied), or the parent's when it refused.
        entity_counts = match written.counts {
            Some(counts) => counts,
            None => store.counts_value()?,
        };
    } else {
        for chunk in chunks {
            let mut staging = engine.stage(Input::Chunks(std::slice::from_ref(chunk)), &check, None)?;
            rows += staging.rows;
            engine.references(&mut staging, store.connection(), options.mode.as_str())?;
            let digest = digest_of(chunk)?;
            let id = format!("{}/{}", options.batch_id, chunk.ordinal);
            let ledger = crate::check::Ledger { id: &id, digest: &digest, metadata: envelope(&id) };
            let clean = staging.refused() == 0;
            // A chunk with any refusal is rolled back whole. A dry run keeps every row
            // the apply accepts, as `data check` counts them (and as the original's dry
            // run does), so later chunks see earlier ones; its file is removed at the end.
            let keep = |refused: Option<&Value>| refused.is_none() && (clean || options.dry_run);
            let written = engine.write(&staging, &store, options.mode.as_str(), &ledger, keep)?;
            refusals.extend(staging.into_refusals());
            if let Some(record) = written.refusal {
                refusals.push(record);
            }
            if written.committed {
                applied_rows += written.upserts;
                applied.push((chunk.ordinal, digest));
            }
        }
        entity_counts = store.counts_value()?;
    }
    if options.dry_run {
        applied_rows = 0;
        applied.clear();
    }
    let digests: Vec<String> = applied.iter().map(|(_, d)| d.clone()).collect();
    let digest = batch_digest(&options.parent_digest, &options.batch_id, &digests);
    let contract_hash = contract.contract_hash();
    store.close()?;
    let mut outcome = BatchOutcome {
        contract_hash,
        batch_digest: digest,
        entity_counts,
        rows,
        applied_rows,
        refusals: refusals.kept,
        refusal_count: refusals.count,
        applied_chunks: applied.iter().map(|(o, _)| *o).collect(),
        written: false,
        file_sha256: None,
    };
    if options.dry_run || (options.atomic && outcome.refusal_count > 0) {
        let _ = std::fs::remove_file(snapshot);
        return Ok(outcome);
    }
    let sidecar = write_sidecar(snapshot, &outcome.contract_hash, &outcome.batch_digest, outcome.entity_counts.clone())?;
    outcome.file_sha256 = sidecar.get("fileSha256").and_then(Value::as_str).map(str::to_string);
    outcome.written = true;
    Ok(outcome)
}

/// `data check` / `import --dry-run --per-chunk` on a world directory: the rows cut
/// into chunks of `options.chunk_bytes` of JSONL (as an upload would cut them), then
/// a per-chunk [`build_batch`] dry run on a scratch copy of the world's snapshot:
/// each chunk checked against the snapshot as the earlier accepted chunks leave it.
pub fn check_rows_per_chunk(root: &Path, sources: &[String], options: &CheckOptions) -> Result<crate::check::CheckReport> {
    use crate::chunks::{cut_chunks, ChunkOptions};
    let contract = crate::lifecycle::check_bundle(root)?;
    let scratch = crate::data::tempfile_dir::Scratch::new("gateway-check")?;
    let mut specs = Vec::new();
    let cut = ChunkOptions { chunk_bytes: options.chunk_bytes, chunk_rows: None, entity: options.entity.clone(), threads: options.threads };
    cut_chunks(sources, &scratch.path().join("chunks"), &cut, None, &mut |raw| {
        // The digests are never read: a dry run applies nothing.
        specs.push(ChunkSpec { ordinal: raw.ordinal, path: raw.path, entity: raw.entity, digest: Some(String::new()) });
        Ok(crate::rows::Flow::More)
    })?;
    if specs.is_empty() {
        return Ok(crate::check::CheckReport { rows: 0, refusals: Vec::new(), refusal_count: 0, entity_counts: object::<_, String>([]) });
    }
    crate::snapshot::build_default(root, &contract, false)?;
    let copy = scratch.path().join("state.sqlite");
    let source = crate::snapshot::default_snapshot(root);
    std::fs::copy(&source, &copy).map_err(|e| Error::io(e, &source))?;
    let batch = BatchOptions {
        mode: options.mode,
        merge: options.merge,
        atomic: false,
        batch_id: "check".into(),
        parent_digest: crate::snapshot::EMPTY_DIGEST.into(),
        dry_run: true,
        memory_budget: options.memory_budget,
    };
    let outcome = build_batch(&contract, &copy, &specs, &batch)?;
    Ok(crate::check::CheckReport {
        rows: outcome.rows,
        refusals: outcome.refusals,
        refusal_count: outcome.refusal_count,
        entity_counts: outcome.entity_counts,
    })
}

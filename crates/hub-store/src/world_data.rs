//! World data batches in storage (spec §4, §9.6): a batch of rows imported into a hub
//! world in chunks, its registered chunks, the world's data head (the snapshot the
//! applied batches left on top of a version) and the lock one applier holds on a world.
//!
//! Records and [`WorldDataStore`] (a supertrait of `MetaStore`, like `AgentStore`);
//! SQLite and PostgreSQL implement it in `sqlite/world_data.rs` and
//! `postgres/world_data.rs`. What a chunk registration or a `complete` may do is
//! decided here, once, for both ([`DataBatch::register`], [`DataBatch::complete`]),
//! on the rows each back end holds locked. No HTTP and no engine here: the routes and
//! the apply are the server's (gateway-hub's `server/world_data.rs`).

use crate::error::{StoreError, StoreResult};
use crate::store::records::Version;
use async_trait::async_trait;

/// A batch just opened: chunks may be registered.
pub const OPEN: &str = "open";
/// A batch with chunks registered: more may come, then `complete`.
pub const UPLOADING: &str = "uploading";
/// Completed: queued for the apply or being applied (`phase` says which).
pub const APPLYING: &str = "applying";
/// Applied onto the world's data (a `--publish later` batch waits for `data publish`).
pub const APPLIED: &str = "applied";
/// Refused: nothing applied (atomic), or no chunk could apply (per chunk).
pub const REFUSED: &str = "refused";
/// Applied and in a data-only version.
pub const PUBLISHED: &str = "published";
/// The apply could not run (the world's contract, a missing chunk, a moved branch…).
pub const FAILED: &str = "failed";
/// States a client may still upload into (`--resume` requires one of them).
pub const RESUMABLE: [&str; 2] = [OPEN, UPLOADING];
/// States that change no more.
pub const TERMINAL: [&str; 4] = [APPLIED, REFUSED, PUBLISHED, FAILED];

/// One batch.
#[derive(Debug, Clone, Default)]
pub struct DataBatch {
    /// Id (`wdb_…`).
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// The world (container) it imports into.
    pub container_id: String,
    /// One of the state constants.
    pub state: String,
    /// While applying: `queued`, `staging`, `publishing`…
    pub phase: Option<String>,
    /// `append` or `replace`.
    pub mode: String,
    /// `upsert` or `fill`.
    pub merge: String,
    /// One transaction for the batch, or one per chunk.
    pub atomic: bool,
    /// `now` (a data-only version per batch) or `later` (`data publish`).
    pub publish: String,
    /// Find the refusals, apply nothing.
    pub dry_run: bool,
    /// The change reason of its version.
    pub message: Option<String>,
    /// The version whose data it applied on top of.
    pub base_version_id: Option<String>,
    /// Canonical JSON: `{contractHash, batchDigest, parentBatchDigest, entityCounts,
    /// appliedRows, rows, refusalCount, appliedChunks}`.
    pub result: Option<String>,
    /// Canonical JSON array: the first refusal records.
    pub refusals: Option<String>,
    /// Object key of the JSONL refusal report (at most 10,000 records).
    pub report_key: Option<String>,
    /// The data-only version it was published in.
    pub version_id: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// Until when (Unix seconds) the process applying it holds it.
    pub lease_until: Option<i64>,
    /// Opened.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// When `complete` was called.
    pub completed_at: Option<String>,
    /// Higher is newer.
    pub seq: i64,
}

/// One registered chunk of a batch.
#[derive(Debug, Clone, Default)]
pub struct DataChunk {
    /// The batch.
    pub batch_id: String,
    /// Its position.
    pub ordinal: i64,
    /// Id (`wdc_…`).
    pub id: String,
    /// sha256 hex of the gzipped chunk: its address in the object store.
    pub digest: String,
    /// The gzipped size.
    pub bytes: i64,
    /// Rows it holds (as the client counted them).
    pub rows: i64,
    /// The entity of bare-row chunks.
    pub entity: Option<String>,
    /// Whether its bytes are stored.
    pub uploaded: bool,
    /// Registered.
    pub created_at: String,
}

/// A world's data head: the snapshot its applied batches left.
#[derive(Debug, Clone, Default)]
pub struct DataHead {
    /// The world.
    pub container_id: String,
    /// The version the snapshot's data starts from (the branch tip it was applied on).
    pub base_version_id: String,
    /// Object key of the snapshot (SQLite file).
    pub snapshot_key: String,
    /// Its batch digest.
    pub batch_digest: String,
    /// sha256 of the contract lock it was built through.
    pub contract_hash: String,
    /// Canonical JSON: its row counts.
    pub entity_counts: String,
    /// sha256 hex of the snapshot file.
    pub file_sha256: String,
    /// Whether applied `--publish later` batches are in it but in no version yet.
    pub pending: bool,
    /// Last change.
    pub updated_at: String,
}

impl DataBatch {
    /// Whether a chunk may still be registered.
    pub fn accepts_chunks(&self) -> Result<(), StoreError> {
        if RESUMABLE.contains(&self.state.as_str()) {
            return Ok(());
        }
        Err(StoreError::Conflict(format!(
            "batch {} is {}: chunks are registered only while it is open or uploading (start a new import)",
            self.id, self.state
        )))
    }

    /// Register `chunk` given what is registered at its ordinal: the same digest again
    /// is that chunk (a resumed upload); another digest replaces it. Returns what to
    /// store, and whether it is new.
    pub fn register(&self, chunk: DataChunk, existing: Option<DataChunk>) -> Result<(DataChunk, bool), StoreError> {
        self.accepts_chunks()?;
        match existing {
            Some(existing) if existing.digest == chunk.digest && existing.bytes == chunk.bytes => Ok((existing, false)),
            _ => Ok((chunk, true)),
        }
    }

    /// `complete`: every registered chunk uploaded, ordinals 0..n without a gap.
    /// The batch goes to `applying` (phase `queued`).
    pub fn complete(&mut self, chunks: &[DataChunk], now: &str) -> Result<(), StoreError> {
        if self.state == APPLYING || TERMINAL.contains(&self.state.as_str()) {
            return Err(StoreError::Conflict(format!("batch {} is already complete (it is {})", self.id, self.state)));
        }
        for (expected, chunk) in chunks.iter().enumerate() {
            if chunk.ordinal != expected as i64 {
                return Err(StoreError::Conflict(format!(
                    "batch {} has no chunk {expected} (chunks are numbered from 0 without gaps): register and upload it, then complete",
                    self.id
                )));
            }
        }
        let missing: Vec<String> = chunks.iter().filter(|c| !c.uploaded).map(|c| c.ordinal.to_string()).collect();
        if !missing.is_empty() {
            return Err(StoreError::Conflict(format!(
                "batch {}: chunk(s) {} were registered but never uploaded: PUT their bytes to the uploadUrl, then complete",
                self.id,
                missing.join(", ")
            )));
        }
        self.state = APPLYING.into();
        self.phase = Some("queued".into());
        self.completed_at = Some(now.to_string());
        self.updated_at = now.to_string();
        Ok(())
    }
}

/// World data batches in the metadata store.
#[async_trait]
pub trait WorldDataStore: Send + Sync {
    /// Store a new batch.
    async fn create_data_batch(&self, batch: DataBatch) -> StoreResult<()>;
    /// A batch of a project.
    async fn data_batch(&self, project_id: &str, id: &str) -> StoreResult<Option<DataBatch>>;
    /// A world's batches, newest first: at most `limit`, older than `before` (a seq).
    async fn data_batches(&self, container_id: &str, before: Option<i64>, limit: i64) -> StoreResult<Vec<DataBatch>>;
    /// Register a chunk ([`DataBatch::register`] on the batch held locked): the chunk
    /// stored at its ordinal, and whether it is new. The batch becomes `uploading`.
    async fn register_data_chunk(&self, batch_id: &str, chunk: DataChunk, now: &str) -> StoreResult<(DataChunk, bool)>;
    /// A batch's chunks by ordinal.
    async fn data_chunks(&self, batch_id: &str) -> StoreResult<Vec<DataChunk>>;
    /// Record that a chunk's bytes are stored; the chunk (None: no such chunk).
    async fn mark_data_chunk_uploaded(&self, batch_id: &str, chunk_id: &str) -> StoreResult<Option<DataChunk>>;
    /// [`DataBatch::complete`] on the batch and its chunks, held locked.
    async fn complete_data_batch(&self, project_id: &str, id: &str, now: &str) -> StoreResult<DataBatch>;
    /// Write back what the applier changed (state, phase, result, refusals, report,
    /// version, error, lease, base).
    async fn update_data_batch(&self, batch: &DataBatch) -> StoreResult<()>;
    /// Every applied, unpublished `--publish later` batch of `version`'s world applied on
    /// `base` becomes `published` in `version`; their ids.
    async fn publish_data_batches(&self, base: &Version, version: &Version, now: &str) -> StoreResult<Vec<String>>;
    /// A world's data head.
    async fn data_head(&self, container_id: &str) -> StoreResult<Option<DataHead>>;
    /// Set a world's data head (only the lock holder calls it).
    async fn put_data_head(&self, head: DataHead) -> StoreResult<()>;
    /// Take (or renew) a world's apply lock for `holder` until `lease_until` (Unix
    /// seconds): granted when free, expired (`now` past its lease) or already held by it.
    async fn lock_data(&self, container_id: &str, holder: &str, lease_until: i64, now: i64) -> StoreResult<bool>;
    /// Give the lock up (if `holder` holds it).
    async fn unlock_data(&self, container_id: &str, holder: &str) -> StoreResult<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(ordinal: i64, digest: &str, uploaded: bool) -> DataChunk {
        DataChunk { ordinal, digest: digest.into(), bytes: 10, uploaded, id: format!("c{ordinal}"), ..DataChunk::default() }
    }

    #[test]
    fn registration_and_completion() {
        let mut batch = DataBatch { id: "b".into(), state: OPEN.into(), ..DataBatch::default() };
        let (kept, new) = batch.register(chunk(0, "aa", false), Some(chunk(0, "aa", true))).unwrap();
        assert!(!new && kept.uploaded && kept.id == "c0", "the same digest again is the registered chunk");
        let (_, new) = batch.register(chunk(0, "bb", false), Some(chunk(0, "aa", true))).unwrap();
        assert!(new, "another digest replaces it");
        let gap = batch.clone().complete(&[chunk(0, "a", true), chunk(2, "b", true)], "t").unwrap_err();
        assert!(gap.to_string().contains("no chunk 1"), "{gap}");
        let missing = batch.clone().complete(&[chunk(0, "a", true), chunk(1, "b", false)], "t").unwrap_err();
        assert!(missing.to_string().contains("chunk(s) 1 were registered but never uploaded"), "{missing}");
        batch.complete(&[chunk(0, "a", true)], "t").unwrap();
        assert_eq!((batch.state.as_str(), batch.phase.as_deref()), (APPLYING, Some("queued")));
        assert!(batch.register(chunk(1, "c", false), None).is_err(), "a completed batch takes no chunk");
        assert!(batch.complete(&[], "t").is_err(), "complete twice");
    }
}

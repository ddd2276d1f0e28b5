//! The apply of a completed batch, in the background: the world's lock (a lease in the
//! metadata store, renewed while it works), the parent snapshot and the chunks fetched
//! (digests checked, gunzipped within the chunk limit), `build_batch`, the refusal
//! report, the world's data head moved, and — `publish: now` — the data-only version.

use super::places::{
    blocking, chunk_key, current_head, fetch_head_snapshot, fetch_object, int, report_key, snapshot_key, store_object, stored, tip,
    work_root, Laps, LEASE_SECS,
};
use super::publish::publish_version;
use super::tree::{schema_world, tree};
use crate::error::HubError;
use crate::server::state::Hub;
use crate::store::Container;
use crate::util::{now_iso, now_secs};
use crate::world_data::{DataBatch, DataChunk, DataHead, APPLIED, FAILED, PUBLISHED, REFUSED};
use gateway_world::batch::{build_batch, BatchOptions, BatchOutcome, ChunkSpec};
use gateway_world::json::{self, object, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How often the applier renews.
const RENEW_EVERY: Duration = Duration::from_secs(30);
/// Refusal records a batch's status carries (the report holds up to 10,000).
const STATUS_REFUSALS: usize = 200;

/// The batch as the applier holds it: its copy and the store's are written together.
pub(super) type Shared = Arc<tokio::sync::Mutex<DataBatch>>;

pub(super) async fn save(hub: &Hub, shared: &Shared, change: impl FnOnce(&mut DataBatch)) -> Result<(), HubError> {
    let mut batch = shared.lock().await;
    change(&mut batch);
    batch.updated_at = now_iso();
    Ok(hub.meta.update_data_batch(&batch).await?)
}

/// Apply a completed batch: wait for the world's lock, apply, publish if asked, and
/// record the outcome (`failed` with the reason when anything goes wrong).
pub(super) async fn run_apply(hub: Hub, batch: DataBatch) {
    let world_id = batch.container_id.clone();
    let holder = batch.id.clone();
    let shared: Shared = Arc::new(tokio::sync::Mutex::new(batch));
    let lease = || (now_secs() + LEASE_SECS) as i64;
    loop {
        match hub.meta.lock_data(&world_id, &holder, lease(), now_secs() as i64).await {
            Ok(true) => break,
            Ok(false) => {
                // Another batch of this world is applying: wait, keeping this one's lease.
                let _ = save(&hub, &shared, |b| b.lease_until = Some(lease())).await;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => {
                let _ = save(&hub, &shared, |b| fail(b, &error.to_string())).await;
                return;
            }
        }
    }
    let renewer = {
        let (hub, shared, world_id, holder) = (hub.clone(), shared.clone(), world_id.clone(), holder.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                let _ = hub.meta.lock_data(&world_id, &holder, lease(), now_secs() as i64).await;
                let _ = save(&hub, &shared, |b| b.lease_until = Some(lease())).await;
            }
        })
    };
    let work = work_root(&hub).join("batches").join(&holder);
    let applied = apply_locked(&hub, &shared, &work).await;
    renewer.abort();
    if let Err(error) = applied {
        let _ = save(&hub, &shared, |b| fail(b, &error.to_string())).await;
    }
    let _ = hub.meta.unlock_data(&world_id, &holder).await;
    let _ = tokio::fs::remove_dir_all(&work).await;
}

pub(super) fn fail(batch: &mut DataBatch, why: &str) {
    batch.state = FAILED.into();
    batch.phase = None;
    batch.lease_until = None;
    batch.error = Some(why.to_string());
}

/// Everything the apply does while it holds the world's lock.
pub(super) async fn apply_locked(hub: &Hub, shared: &Shared, work: &Path) -> Result<(), HubError> {
    let batch = shared.lock().await.clone();
    let world = hub
        .meta
        .container_by_id(&batch.container_id)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("world {} is gone", batch.container_id)))?;
    save(hub, shared, |b| b.phase = Some("staging".into())).await?;
    let tip = tip(hub, &world).await?;
    let head = current_head(hub, &world, &tip).await?;
    let chunks = hub.meta.data_chunks(&batch.id).await?;
    if chunks.is_empty() {
        // Nothing was sent: nothing changes, no version.
        let result =
            object([("rows", int(0)), ("appliedRows", int(0)), ("refusalCount", int(0)), ("appliedChunks", Value::Array(Vec::new()))]);
        return save(hub, shared, |b| {
            b.state = APPLIED.into();
            b.phase = None;
            b.lease_until = None;
            b.base_version_id = Some(tip.id.clone());
            b.result = Some(stored(&result));
        })
        .await;
    }
    let laps = Laps::new(&format!("apply {}", batch.id));
    let tree = tree(hub, &tip).await?;
    let root = schema_world(&tree, &world)?;
    laps.lap("tree");
    tokio::fs::create_dir_all(work).await.map_err(|e| HubError::io(work, e))?;
    // The parent: the world's data head on this tip, else the tip's own snapshot.
    let snapshot = work.join(gateway_world::snapshot::SNAPSHOT);
    let parent_digest = fetch_parent(hub, head.as_ref(), &root, &snapshot).await?;
    let specs = fetch_chunks(hub, &batch.project_id, &chunks, work).await?;
    laps.lap("parent and chunks");
    save(hub, shared, |b| b.phase = Some("applying".into())).await?;
    let options = batch_options(&batch, &parent_digest)?;
    let outcome = {
        let (root, snapshot) = (root.clone(), snapshot.clone());
        blocking(move || {
            let contract = gateway_world::lifecycle::check_bundle(&root).map_err(|e| HubError::engine("the world does not compile", e))?;
            build_batch(&contract, &snapshot, &specs, &options).map_err(|e| HubError::engine("the batch could not be applied", e))
        })
        .await?
    };
    laps.lap("build_batch");
    let report = store_refusal_report(hub, &world, &batch.id, &outcome, work).await?;
    let result = batch_result(&outcome, &parent_digest);
    let refusals = Value::Array(outcome.refusals.iter().take(STATUS_REFUSALS).cloned().collect());
    let moved = outcome.written && !outcome.applied_chunks.is_empty();
    let refused = outcome.refusal_count > 0 && !moved;
    save(hub, shared, |b| {
        b.result = Some(stored(&result));
        b.refusals = Some(stored(&refusals));
        b.report_key = report.clone();
        b.base_version_id = Some(tip.id.clone());
    })
    .await?;
    if batch.dry_run || !moved {
        return save(hub, shared, |b| {
            b.state = if refused { REFUSED.into() } else { APPLIED.into() };
            b.phase = None;
            b.lease_until = None;
        })
        .await;
    }
    // The world's data moves: its head is the new snapshot (stored first; a head never
    // names an object that is not there).
    let key = snapshot_key(&world, &outcome.batch_digest);
    store_object(hub, &key, &snapshot).await?;
    laps.lap("snapshot stored");
    let mut new_head = DataHead {
        container_id: world.id.clone(),
        base_version_id: tip.id.clone(),
        snapshot_key: key,
        batch_digest: outcome.batch_digest.clone(),
        contract_hash: outcome.contract_hash.clone(),
        entity_counts: stored(&outcome.entity_counts),
        file_sha256: outcome.file_sha256.clone().unwrap_or_default(),
        pending: true,
        updated_at: now_iso(),
    };
    let previous = hub.meta.data_head(&world.id).await?;
    if batch.publish != "now" {
        hub.meta.put_data_head(new_head.clone()).await?;
        forget_snapshot(hub, previous, &new_head).await;
        return save(hub, shared, |b| {
            b.state = APPLIED.into();
            b.phase = None;
            b.lease_until = None;
        })
        .await;
    }
    // Published now: the version first, then the head moves onto it. The batch stays
    // `applying` meanwhile (a client polls until a terminal state); if the version cannot
    // be made, the batch fails and the world's data is as it was.
    save(hub, shared, |b| b.phase = Some("publishing".into())).await?;
    let reason = batch.message.clone().unwrap_or_else(|| format!("data import {}", batch.id));
    let version = publish_version(hub, &world, &tip, &tree, &root, work, &new_head, &reason).await?;
    laps.lap("published");
    new_head.base_version_id = version.id.clone();
    new_head.pending = false;
    new_head.updated_at = now_iso();
    hub.meta.put_data_head(new_head.clone()).await?;
    forget_snapshot(hub, previous, &new_head).await;
    // `--publish later` batches applied on this tip before it are in the version too.
    hub.meta.publish_data_batches(&tip, &version, &now_iso()).await?;
    save(hub, shared, |b| {
        b.state = PUBLISHED.into();
        b.version_id = Some(version.id.clone());
        b.phase = None;
        b.lease_until = None;
    })
    .await
}

/// The parent snapshot copied to `snapshot`: the world's data head (its sha256
/// checked), else the tip's own snapshot. Its batch digest.
pub(super) async fn fetch_parent(hub: &Hub, head: Option<&DataHead>, root: &Path, snapshot: &Path) -> Result<String, HubError> {
    match head {
        Some(head) => {
            fetch_head_snapshot(hub, head, snapshot).await?;
            Ok(head.batch_digest.clone())
        }
        None => {
            let (root, snapshot) = (root.to_path_buf(), snapshot.to_path_buf());
            blocking(move || {
                let source = gateway_world::snapshot::default_snapshot(&root);
                std::fs::copy(&source, &snapshot).map_err(|e| HubError::io(&source, e))?;
                let sidecar = gateway_world::snapshot::read_sidecar(&source)?;
                Ok(sidecar
                    .and_then(|s| s.get("batchDigest").and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_else(|| gateway_world::snapshot::EMPTY_DIGEST.to_string()))
            })
            .await
        }
    }
}

/// The batch's chunks fetched under `work`: bytes checked against their digest,
/// gunzipped within the chunk limit.
pub(super) async fn fetch_chunks(hub: &Hub, project: &str, chunks: &[DataChunk], work: &Path) -> Result<Vec<ChunkSpec>, HubError> {
    let mut specs = Vec::new();
    for chunk in chunks {
        let gz = work.join(format!("{}.gz", gateway_world::chunks::chunk_name(chunk.ordinal as usize)));
        let sha = fetch_object(hub, &chunk_key(project, &chunk.digest), &gz).await?;
        if sha != chunk.digest {
            return Err(HubError::Mismatch { what: format!("chunk {}", chunk.ordinal), digest: "digest in the store" });
        }
        let plain = gz.with_extension("");
        let (from, to, cap, ordinal) = (gz.clone(), plain.clone(), hub.limits.chunk_bytes as u64, chunk.ordinal);
        blocking(move || gunzip_capped(&from, &to, cap, ordinal)).await?;
        let _ = tokio::fs::remove_file(&gz).await;
        specs.push(ChunkSpec {
            ordinal: chunk.ordinal as usize,
            path: plain,
            entity: chunk.entity.clone(),
            digest: Some(chunk.digest.clone()),
        });
    }
    Ok(specs)
}

/// The engine's options for a stored batch on a parent of `parent_digest`.
pub(super) fn batch_options(batch: &DataBatch, parent_digest: &str) -> Result<BatchOptions, HubError> {
    Ok(BatchOptions {
        // Checked when the batch was registered; a stored spelling is one of these.
        mode: batch.mode.parse::<gateway_world::plan::Mode>()?,
        merge: batch.merge.parse::<gateway_world::check::Merge>()?,
        atomic: batch.atomic,
        batch_id: batch.id.clone(),
        parent_digest: parent_digest.to_string(),
        dry_run: batch.dry_run,
        memory_budget: gateway_world::check::MEMORY_BUDGET,
    })
}

/// The refusal report stored, when anything was refused: up to 10,000 records, then
/// the truncation marker. Its object key.
pub(super) async fn store_refusal_report(
    hub: &Hub,
    world: &Container,
    batch_id: &str,
    outcome: &BatchOutcome,
    work: &Path,
) -> Result<Option<String>, HubError> {
    if outcome.refusal_count == 0 {
        return Ok(None);
    }
    let path = work.join("refusals.jsonl");
    let mut text = String::new();
    for record in &outcome.refusals {
        text.push_str(&json::dumps(record, gateway_world::check::ROW_LINE));
        text.push('\n');
    }
    if outcome.refusal_count > outcome.refusals.len() {
        let marker = object([("truncated", Value::Bool(true)), ("total", int(outcome.refusal_count))]);
        text.push_str(&json::dumps(&marker, gateway_world::check::ROW_LINE));
        text.push('\n');
    }
    tokio::fs::write(&path, text).await.map_err(|e| HubError::io(&path, e))?;
    let key = report_key(world, batch_id);
    store_object(hub, &key, &path).await?;
    Ok(Some(key))
}

/// A batch's `result`: digests, counts, the chunks applied.
pub(super) fn batch_result(outcome: &BatchOutcome, parent_digest: &str) -> Value {
    object([
        ("contractHash", Value::str(&outcome.contract_hash)),
        ("batchDigest", Value::str(&outcome.batch_digest)),
        ("parentBatchDigest", Value::str(parent_digest)),
        ("entityCounts", outcome.entity_counts.clone()),
        ("rows", int(outcome.rows)),
        ("appliedRows", int(outcome.applied_rows)),
        ("refusalCount", int(outcome.refusal_count)),
        ("appliedChunks", Value::Array(outcome.applied_chunks.iter().map(|n| int(*n)).collect())),
    ])
}

/// Remove the snapshot object a world's previous head named, once the head has moved
/// off it (the versions carry their own copies; a failure only leaves the object).
pub(super) async fn forget_snapshot(hub: &Hub, previous: Option<DataHead>, now: &DataHead) {
    if let Some(previous) = previous.filter(|p| p.snapshot_key != now.snapshot_key) {
        let _ = hub.objects.delete(&previous.snapshot_key).await;
    }
}

/// Gunzip a chunk (every gzip member, as Python's `gzip` reads them) into `to`,
/// refusing one that expands past `cap` bytes.
pub(super) fn gunzip_capped(from: &Path, to: &Path, cap: u64, ordinal: i64) -> Result<(), HubError> {
    use std::io::Read as _;
    let file = std::fs::File::open(from).map_err(|e| HubError::io(from, e))?;
    let mut decoder = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file)).take(cap + 1);
    let mut out = std::fs::File::create(to).map_err(|e| HubError::io(to, e))?;
    let copied =
        std::io::copy(&mut decoder, &mut out).map_err(|e| HubError::BadRequest(format!("chunk {ordinal} is not gzip over JSONL: {e}")))?;
    if copied > cap {
        return Err(HubError::TooLarge(format!(
            "chunk {ordinal} expands to more than {cap} bytes of JSONL, this hub's chunk limit (limits.chunkBytes): cut smaller chunks (--chunk-bytes)"
        )));
    }
    Ok(())
}

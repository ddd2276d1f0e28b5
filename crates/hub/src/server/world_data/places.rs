//! Where a world's data lives while the hub works on it, and the steps every part of
//! the data routes takes: the process's work directory, the object keys of chunks,
//! snapshots and refusal reports, objects copied to and from files, engine work off the
//! async workers, the world's tip and its data head, and the stored shape of a batch's
//! members. A leaf of `world_data/`.

use crate::error::HubError;
use crate::server::state::Hub;
use crate::server::versions::resolve_ref;
use crate::store::{Container, Version};
use crate::world_data::DataHead;
use gateway_world::json::{self, Value};
use sha2::{Digest as _, Sha256};
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt as _;

/// Seconds an applier holds a world (and its batch) without renewing.
pub(super) const LEASE_SECS: u64 = 120;

/// With `GATEWAY_TIMING` set, how long each step of an apply or a publish took (stderr).
pub(super) struct Laps {
    started: std::time::Instant,
    on: bool,
    what: String,
}

impl Laps {
    pub(super) fn new(what: &str) -> Laps {
        Laps { started: std::time::Instant::now(), on: std::env::var_os("GATEWAY_TIMING").is_some(), what: what.to_string() }
    }

    pub(super) fn lap(&self, step: &str) {
        if self.on {
            eprintln!("{} {step}: {:.3}s", self.what, self.started.elapsed().as_secs_f64());
        }
    }
}

/// JSON as a batch keeps it: compact, member order kept (refusal records and counts
/// read back in the order they were made).
pub(super) fn stored(value: &Value) -> String {
    json::dumps(value, gateway_world::check::ROW_LINE)
}

pub(super) fn int(n: impl TryInto<i64>) -> Value {
    Value::Int(n.try_into().unwrap_or(i64::MAX))
}

/// Where this process applies batches.
pub(super) fn work_root(hub: &Hub) -> PathBuf {
    hub.scratch.clone().unwrap_or_else(|| gateway_world::data::tempfile_dir::process_root().join("hub-work"))
}

/// A project's chunks, addressed by digest (a project never sees another's).
pub(super) fn chunk_key(project: &str, digest: &str) -> String {
    format!("world-data/{}/chunks/{digest}.jsonl.gz", &hex::encode(Sha256::digest(project.as_bytes()))[..16])
}

pub(super) fn snapshot_key(world: &Container, digest: &str) -> String {
    format!("world-data/{}/snapshots/{digest}.sqlite", world.id)
}

pub(super) fn report_key(world: &Container, batch: &str) -> String {
    format!("world-data/{}/reports/{batch}.jsonl", world.id)
}

/// Run blocking engine work off the async workers.
pub(super) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, HubError> + Send + 'static) -> Result<T, HubError> {
    tokio::task::spawn_blocking(work).await.map_err(|source| HubError::WorkerIn { what: "world data worker", source })?
}

/// The world's `main` tip (or its newest READY version).
pub(super) async fn tip(hub: &Hub, world: &Container) -> Result<Version, HubError> {
    Ok(resolve_ref(hub, world, "latest").await?.0)
}

/// A world's data head when it sits on `tip` (a head left on an older tip is stale:
/// the branch moved past it).
pub(super) async fn current_head(hub: &Hub, world: &Container, tip: &Version) -> Result<Option<DataHead>, HubError> {
    Ok(hub.meta.data_head(&world.id).await?.filter(|head| head.base_version_id == tip.id))
}

/// Copy an object into a file; its sha256 hex.
pub(super) async fn fetch_object(hub: &Hub, key: &str, dest: &Path) -> Result<String, HubError> {
    use futures_util::StreamExt as _;
    let mut stream = hub.objects.open(key).await?.ok_or_else(|| HubError::MissingObject(key.to_string()))?;
    if let Some(parent) = dest.parent() {
        tokio::fs::create_dir_all(parent).await.map_err(|e| HubError::io(parent, e))?;
    }
    let mut file = tokio::fs::File::create(dest).await.map_err(|e| HubError::io(dest, e))?;
    let mut digest = Sha256::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        digest.update(&chunk);
        file.write_all(&chunk).await.map_err(|e| HubError::io(dest, e))?;
    }
    file.flush().await.map_err(|e| HubError::io(dest, e))?;
    Ok(hex::encode(digest.finalize()))
}

/// The data head's snapshot copied to `dest`, its sha256 checked.
pub(super) async fn fetch_head_snapshot(hub: &Hub, head: &DataHead, dest: &Path) -> Result<(), HubError> {
    let sha = fetch_object(hub, &head.snapshot_key, dest).await?;
    if sha != head.file_sha256 {
        return Err(HubError::Mismatch { what: format!("the world's data snapshot {}", head.snapshot_key), digest: "sha256" });
    }
    Ok(())
}

/// Store a file as an object, streamed.
pub(super) async fn store_object(hub: &Hub, key: &str, path: &Path) -> Result<(), HubError> {
    use tokio::io::AsyncReadExt as _;
    let mut file = tokio::fs::File::open(path).await.map_err(|e| HubError::io(path, e))?;
    let mut writer = hub.objects.writer(key).await?;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = match file.read(&mut buffer).await {
            Ok(n) => n,
            Err(e) => {
                writer.abort().await?;
                return Err(HubError::io(path, e));
            }
        };
        if n == 0 {
            break;
        }
        if let Err(error) = writer.write(axum::body::Bytes::copy_from_slice(&buffer[..n])).await {
            writer.abort().await?;
            return Err(error.into());
        }
    }
    Ok(writer.commit().await?)
}

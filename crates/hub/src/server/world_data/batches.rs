//! A world's data batches over HTTP: open a batch, register its chunks by digest (a
//! signed PUT for the bytes the store does not hold yet), mark them uploaded, complete
//! it (the apply is queued: `apply.rs`), and a batch's status and the world's list.

use super::apply::run_apply;
use super::places::{chunk_key, int, tip, LEASE_SECS};
use super::tree::{schema_world, tree};
use crate::error::HubError;
use crate::server::objects::presign;
use crate::server::request::{opt_str, req_str, str_or_null};
use crate::server::response::{ok, Answer};
use crate::server::state::Hub;
use crate::server::versions::is_hex;
use crate::store::Container;
use crate::util::{new_id, now_iso, now_secs};
use crate::world_data::{DataBatch, DataChunk, APPLYING, FAILED, OPEN};
use gateway_world::json::{self, object, Map, Value};
use std::collections::BTreeMap;

/// Chunks a batch may hold.
const MAX_CHUNKS: i64 = 100_000;

/// A batch as `GET …/batches/{id}` answers it.
pub(super) async fn batch_json(hub: &Hub, world: &Container, batch: &DataBatch, base_url: &str, full: bool) -> Result<Value, HubError> {
    let chunks = hub.meta.data_chunks(&batch.id).await?;
    let mut out = Map::default();
    let mut put = |k: &str, v: Value| {
        out.insert(k.to_string(), v);
    };
    put("batchId", Value::str(&batch.id));
    put("slug", Value::str(&world.slug));
    put("state", Value::str(&batch.state));
    put(
        "progress",
        object([
            ("phase", batch.phase.as_ref().map_or(Value::Null, Value::str)),
            ("chunks", int(chunks.len())),
            ("uploadedChunks", int(chunks.iter().filter(|c| c.uploaded).count())),
            ("rows", int(chunks.iter().map(|c| c.rows).sum::<i64>())),
        ]),
    );
    put("mode", Value::str(&batch.mode));
    put("merge", Value::str(&batch.merge));
    put("atomic", Value::Bool(batch.atomic));
    put("publish", Value::str(&batch.publish));
    put("dryRun", Value::Bool(batch.dry_run));
    put("message", str_or_null(&batch.message));
    if let Some(Value::Object(map)) = batch.result.as_deref().and_then(json::parse_clean) {
        for (k, v) in map {
            put(&k, v);
        }
    }
    if full {
        if let Some(refusals) = batch.refusals.as_deref().and_then(json::parse_clean) {
            put("refusals", refusals);
        }
        if let Some(key) = &batch.report_key {
            put("reportUrl", Value::str(presign(hub, base_url, "GET", key, &[])));
        }
    }
    put("baseVersionId", str_or_null(&batch.base_version_id));
    put("versionId", str_or_null(&batch.version_id));
    if let Some(error) = &batch.error {
        put("error", Value::str(error));
    }
    put("createdAt", Value::str(&batch.created_at));
    put("updatedAt", Value::str(&batch.updated_at));
    put("completedAt", str_or_null(&batch.completed_at));
    Ok(Value::Object(out))
}

pub(super) async fn own_batch(hub: &Hub, project: &str, world: &Container, id: &str) -> Result<DataBatch, HubError> {
    hub.meta
        .data_batch(project, id)
        .await?
        .filter(|b| b.container_id == world.id)
        .ok_or_else(|| HubError::NotFound(format!("no data batch '{id}' for world '{}'", world.slug)))
}

pub(super) fn choice(body: &Map, key: &str, allowed: &[&str], default: &str) -> Result<String, HubError> {
    let value = opt_str(body, key)?.unwrap_or_else(|| default.to_string());
    if allowed.contains(&value.as_str()) {
        Ok(value)
    } else {
        Err(HubError::BadRequest(format!("'{key}' must be {}, not '{value}'", allowed.join(" or "))))
    }
}

pub(super) fn flag(body: &Map, key: &str, default: bool) -> Result<bool, HubError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(HubError::BadRequest(format!("'{key}' must be true or false"))),
    }
}

pub(super) async fn open_batch(hub: &Hub, project: &str, world: &Container, body: &Map) -> Answer {
    let mode = choice(body, "mode", &["append", "replace"], "append")?;
    let merge = choice(body, "merge", &["upsert", "fill"], "upsert")?;
    let publish = choice(body, "publish", &["now", "later"], "now")?;
    let atomic = flag(body, "atomic", true)?;
    let dry_run = flag(body, "dryRun", false)?;
    let message = opt_str(body, "message")?.filter(|m| !m.is_empty());
    let tip = tip(hub, world).await?;
    schema_world(&tree(hub, &tip).await?, world)?;
    let now = now_iso();
    let batch = DataBatch {
        id: new_id("wdb_"),
        project_id: project.to_string(),
        container_id: world.id.clone(),
        state: OPEN.into(),
        mode,
        merge,
        atomic,
        publish,
        dry_run,
        message,
        created_at: now.clone(),
        updated_at: now,
        ..DataBatch::default()
    };
    hub.meta.create_data_batch(batch.clone()).await?;
    ok(object([
        ("batchId", Value::str(&batch.id)),
        ("slug", Value::str(&world.slug)),
        ("state", Value::str(&batch.state)),
        ("mode", Value::str(&batch.mode)),
        ("merge", Value::str(&batch.merge)),
        ("atomic", Value::Bool(batch.atomic)),
        ("publish", Value::str(&batch.publish)),
        ("dryRun", Value::Bool(batch.dry_run)),
        ("limits", object([("chunkBytes", int(hub.limits.chunk_bytes)), ("maxChunks", int(MAX_CHUNKS))])),
        ("createdAt", Value::str(&batch.created_at)),
    ]))
}

pub(super) async fn register_chunk(hub: &Hub, project: &str, world: &Container, id: &str, body: &Map, base_url: &str) -> Answer {
    let batch = own_batch(hub, project, world, id).await?;
    batch.accepts_chunks()?;
    let number = |key: &str, min: i64| -> Result<i64, HubError> {
        match body.get(key) {
            Some(Value::Int(n)) if *n >= min => Ok(*n),
            _ => Err(HubError::BadRequest(format!("'{key}' must be an integer of at least {min}"))),
        }
    };
    let ordinal = number("ordinal", 0)?;
    if ordinal >= MAX_CHUNKS {
        return Err(HubError::BadRequest(format!("'ordinal' {ordinal} is past this hub's {MAX_CHUNKS} chunks per batch")));
    }
    let digest = req_str(body, "digest")?;
    if digest.len() != 64 || !is_hex(&digest) {
        return Err(HubError::BadRequest("'digest' must be the sha256 of the gzipped chunk, 64 lowercase hex characters".into()));
    }
    let bytes = number("bytes", 1)?;
    if bytes as u64 > hub.limits.chunk_bytes as u64 {
        return Err(HubError::TooLarge(format!(
            "chunk {ordinal} is {bytes} bytes, over this hub's chunk limit of {} bytes (limits.chunkBytes): cut smaller chunks (--chunk-bytes)",
            hub.limits.chunk_bytes
        )));
    }
    let rows = number("rows", 0)?;
    let entity = opt_str(body, "entity")?.filter(|e| !e.is_empty());
    let key = chunk_key(project, &digest);
    // Dedup: the project's store already holds these bytes (their digest was checked when they came).
    let held = hub.objects.size(&key).await? == Some(bytes as u64);
    let chunk = DataChunk {
        batch_id: batch.id.clone(),
        ordinal,
        id: new_id("wdc_"),
        digest: digest.clone(),
        bytes,
        rows,
        entity,
        uploaded: held,
        created_at: now_iso(),
    };
    let (mut stored, _) = hub.meta.register_data_chunk(&batch.id, chunk, &now_iso()).await?;
    if held && !stored.uploaded {
        stored = hub.meta.mark_data_chunk_uploaded(&batch.id, &stored.id).await?.unwrap_or(stored);
    }
    let mut out = Map::default();
    out.insert("chunkId".into(), Value::str(&stored.id));
    out.insert("ordinal".into(), int(stored.ordinal));
    out.insert("uploaded".into(), Value::Bool(stored.uploaded));
    if !stored.uploaded {
        use base64::Engine as _;
        let raw = hex::decode(&digest).map_err(|_| HubError::BadRequest("'digest' is not hex".into()))?;
        let checksum = base64::engine::general_purpose::STANDARD.encode(raw);
        let size = bytes.to_string();
        let url =
            presign(hub, base_url, "PUT", &key, &[("checksum", &checksum), ("batch", &batch.id), ("chunk", &stored.id), ("size", &size)]);
        out.insert("uploadUrl".into(), Value::str(url));
        out.insert(
            "uploadHeaders".into(),
            object([
                ("Content-Type", Value::str("application/gzip")),
                ("Content-Length", Value::str(&size)),
                ("x-amz-checksum-sha256", Value::str(&checksum)),
            ]),
        );
    }
    ok(Value::Object(out))
}

pub(super) async fn chunk_uploaded(hub: &Hub, project: &str, world: &Container, id: &str, chunk_id: &str) -> Answer {
    let batch = own_batch(hub, project, world, id).await?;
    let chunks = hub.meta.data_chunks(&batch.id).await?;
    let chunk = chunks
        .iter()
        .find(|c| c.id == chunk_id)
        .ok_or_else(|| HubError::NotFound(format!("no chunk '{chunk_id}' in batch {}", batch.id)))?;
    if hub.objects.size(&chunk_key(project, &chunk.digest)).await? != Some(chunk.bytes as u64) {
        return Err(HubError::Conflict(format!(
            "chunk {} of batch {} has no stored bytes: PUT them to its uploadUrl first",
            chunk.ordinal, batch.id
        )));
    }
    hub.meta.mark_data_chunk_uploaded(&batch.id, &chunk.id).await?;
    ok(object([("chunkId", Value::str(&chunk.id)), ("ordinal", int(chunk.ordinal)), ("uploaded", Value::Bool(true))]))
}

pub(super) async fn complete(hub: &Hub, project: &str, world: &Container, id: &str) -> Answer {
    own_batch(hub, project, world, id).await?;
    let mut batch = hub.meta.complete_data_batch(project, id, &now_iso()).await?;
    batch.lease_until = Some((now_secs() + LEASE_SECS) as i64);
    hub.meta.update_data_batch(&batch).await?;
    tokio::spawn(run_apply(hub.clone(), batch.clone()));
    ok(object([
        ("batchId", Value::str(&batch.id)),
        ("state", Value::str(&batch.state)),
        ("progress", object([("phase", Value::str("queued"))])),
    ]))
}

pub(super) async fn status(hub: &Hub, project: &str, world: &Container, id: &str, base_url: &str) -> Answer {
    let mut batch = own_batch(hub, project, world, id).await?;
    if batch.state == APPLYING && batch.lease_until.is_some_and(|lease| lease < now_secs() as i64) {
        // Its applier stopped renewing: the hub process went away mid-apply.
        batch.state = FAILED.into();
        batch.phase = None;
        batch.error =
            Some("the hub process applying this batch stopped before it finished; nothing was applied: import the rows again".into());
        batch.updated_at = now_iso();
        hub.meta.update_data_batch(&batch).await?;
    }
    ok(batch_json(hub, world, &batch, base_url, true).await?)
}

pub(super) async fn list_batches(hub: &Hub, world: &Container, query: &BTreeMap<String, String>) -> Answer {
    let limit = match query.get("limit") {
        None => 50,
        Some(raw) => {
            raw.parse::<i64>().ok().filter(|n| (1..=500).contains(n)).ok_or_else(|| HubError::BadRequest("'limit' must be 1-500".into()))?
        }
    };
    let before = match query.get("cursor").filter(|c| !c.is_empty()) {
        None => None,
        Some(raw) => Some(raw.parse::<i64>().map_err(|_| HubError::BadRequest(format!("'cursor' {raw} is not a cursor this hub gave")))?),
    };
    let batches = hub.meta.data_batches(&world.id, before, limit + 1).await?;
    let more = batches.len() as i64 > limit;
    let mut listed = Vec::new();
    for batch in batches.iter().take(limit as usize) {
        listed.push(batch_json(hub, world, batch, "", false).await?);
    }
    let next = if more { batches.get(limit as usize - 1).map(|b| Value::Str(b.seq.to_string())) } else { None };
    ok(object([("slug", Value::str(&world.slug)), ("batches", Value::Array(listed)), ("nextCursor", next.unwrap_or(Value::Null))]))
}

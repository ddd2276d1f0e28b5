//! World data batches (spec §4, §9.6): rows imported into a hub world in chunks.
//!
//! `POST /api/public/worlds/{slug}/data/batches` opens a batch; each chunk is
//! registered by digest (`uploaded: true` when the project's object store already
//! holds that digest, else a signed PUT URL), PUT, marked uploaded; `complete` queues
//! the apply, which runs here in the background: the world's data (its data head, or
//! the main tip's snapshot) copied, the chunks fetched (digest checked, gunzipped
//! within `limits.chunkBytes`), and `gateway_world::batch::build_batch` — the engine
//! of `data check` — applies them atomically or per chunk. An applied batch moves the
//! world's data head; `publish: now` then turns it into a data-only version of the
//! world (the tip's files, the new `db/state.sqlite` with its sidecar and the
//! `db/snapshot.json` pin, scenario snapshots rebuilt) on `main`; `later` batches wait
//! for `POST …/data/publish`. `GET …/data` shows what the world holds; with `?entity=`,
//! every row of that entity, streamed ([`show_rows`], answered ahead of the JSON routes).
//!
//! One applier at a time per world (a lease in the metadata store, renewed while it
//! works, so a process that dies lets the next batch through); a batch whose applier
//! stopped is reported failed once its lease is past.

use super::access::{authenticate, container};
use super::objects::presign;
use super::request::{opt_str, opt_value, req_str, str_or_null, JsonRequest};
use super::response::{ok, Answer};
use super::state::Hub;
use super::versions::{is_hex, resolve_ref};
use crate::error::HubError;
use crate::store::{Container, Version};
use crate::util::{new_id, now_iso, now_secs};
use crate::world_data::*;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use gateway_common::url::unquote_plus;
use gateway_world::batch::{build_batch, BatchOptions, BatchOutcome, ChunkSpec};
use gateway_world::json::{self, object, DumpOptions, Map, Value};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt as _;

/// Seconds an applier holds a world (and its batch) without renewing.
const LEASE_SECS: u64 = 120;
/// How often the applier renews.
const RENEW_EVERY: Duration = Duration::from_secs(30);
/// Chunks a batch may hold.
const MAX_CHUNKS: i64 = 100_000;
/// Refusal records a batch's status carries (the report holds up to 10,000).
const STATUS_REFUSALS: usize = 200;
/// gzip level of a data-only version's bundle (it is ours: no original bytes to match;
/// a snapshot is most of it, and level 1 packs one several times faster than 6).
const BUNDLE_LEVEL: u32 = 1;

/// A world's data routes, `worlds/<slug>/data/<rest>` (`routes::Family::WorldData`).
pub(super) async fn route(request: &JsonRequest<'_>, p: &str, slug: &str, rest: &[&str]) -> Answer {
    let JsonRequest { hub, method, query, base_url, .. } = *request;
    let world = container(hub, p, Some(unquote_plus(slug))).await?;
    match (method.as_str(), rest) {
        ("GET", []) => show(hub, &world).await,
        ("POST", ["batches"]) => open_batch(hub, p, &world, &request.json()?).await,
        ("GET", ["batches"]) => list_batches(hub, &world, query).await,
        ("GET", ["batches", id]) => status(hub, p, &world, id, base_url).await,
        ("POST", ["batches", id, "chunks"]) => register_chunk(hub, p, &world, id, &request.json()?, base_url).await,
        ("POST", ["batches", id, "chunks", chunk, "uploaded"]) => chunk_uploaded(hub, p, &world, id, chunk).await,
        ("POST", ["batches", id, "complete"]) => complete(hub, p, &world, id).await,
        ("POST", ["publish"]) => publish(hub, &world, &request.json()?).await,
        // Not `request.no_route()`: an empty rest is spelt `…/data/` here.
        _ => Err(HubError::no_route(method, format!("/api/public/worlds/{slug}/data/{}", rest.join("/")))),
    }
}

// ------------------------------------------------------------------ places

/// Where this process applies batches.
fn work_root(hub: &Hub) -> PathBuf {
    hub.scratch.clone().unwrap_or_else(|| gateway_world::data::tempfile_dir::process_root().join("hub-work"))
}

/// A project's chunks, addressed by digest (a project never sees another's).
fn chunk_key(project: &str, digest: &str) -> String {
    format!("world-data/{}/chunks/{digest}.jsonl.gz", &hex::encode(Sha256::digest(project.as_bytes()))[..16])
}

fn snapshot_key(world: &Container, digest: &str) -> String {
    format!("world-data/{}/snapshots/{digest}.sqlite", world.id)
}

fn report_key(world: &Container, batch: &str) -> String {
    format!("world-data/{}/reports/{batch}.jsonl", world.id)
}

fn engine_error(what: &str, error: gateway_world::Error) -> HubError {
    HubError::BadRequest(format!("{what}: {error}"))
}

/// Run blocking engine work off the async workers.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, HubError> + Send + 'static) -> Result<T, HubError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| HubError::Storage(format!("world data worker: {e}")))?
}

/// The world's `main` tip (or its newest READY version).
async fn tip(hub: &Hub, world: &Container) -> Result<Version, HubError> {
    Ok(resolve_ref(hub, world, "latest").await?.0)
}

/// A world's data head when it sits on `tip` (a head left on an older tip is stale:
/// the branch moved past it).
async fn current_head(hub: &Hub, world: &Container, tip: &Version) -> Result<Option<DataHead>, HubError> {
    Ok(hub.meta.data_head(&world.id).await?.filter(|head| head.base_version_id == tip.id))
}

/// Copy an object into a file; its sha256 hex.
async fn fetch_object(hub: &Hub, key: &str, dest: &Path) -> Result<String, HubError> {
    use futures_util::StreamExt as _;
    let mut stream = hub.objects.open(key).await?.ok_or_else(|| HubError::Storage(format!("object {key} is missing from the store")))?;
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

/// Store a file as an object, streamed.
async fn store_object(hub: &Hub, key: &str, path: &Path) -> Result<(), HubError> {
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
            return Err(error);
        }
    }
    writer.commit().await
}

/// A version's files, extracted and compiled once per process by the same version
/// cache the hub's sessions open it from (the embedded host's, or the catalog):
/// for a schema world, compiled (generated artifacts) and its snapshots built.
struct Tree {
    /// The extracted bundle.
    bundle: PathBuf,
    /// The schema world inside it (itself, or `server/world` of an api bundle).
    world: Option<PathBuf>,
    /// The cache's files, held while they are read (the cache keeps them meanwhile).
    _held: Arc<gateway_host::version::VersionFiles>,
}

async fn tree(hub: &Hub, version: &Version) -> Result<Tree, HubError> {
    use gateway_host::version::PrepareError;
    let worlds = super::world_host::worlds(hub)?.clone();
    let (id, locator) = (version.id.clone(), crate::worlds::stored_bundle(&version.object_key));
    let files = blocking(move || {
        worlds.version_files(&id, &locator).map_err(|error| match error {
            PrepareError::Compile(e) => engine_error(&format!("version {id} of this world does not compile"), e),
            // The store's own refusal (a missing object, an unsafe or oversized archive).
            PrepareError::Fetch { source, .. } => match source.downcast::<HubError>() {
                Ok(refused) => *refused,
                Err(other) => HubError::Storage(other.to_string()),
            },
            other => HubError::Storage(other.to_string()),
        })
    })
    .await?;
    Ok(Tree { bundle: files.bundle.clone(), world: files.tree().map(Path::to_path_buf), _held: files })
}

/// Marks an entry of a cache directory used (its mtime is the last use).
const USED: &str = ".used";
/// Snapshots kept for `data show` per process.
const KEPT_SNAPSHOTS: usize = 4;
/// An entry used this recently is never evicted (an apply may be reading it).
const EVICT_AFTER: Duration = Duration::from_secs(600);

/// Keep the `keep` most recently used entries of a cache directory (and any used in
/// the last [`EVICT_AFTER`]); remove the rest.
fn evict(cache: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(cache) else { return };
    let mut used: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| {
            let path = e.path();
            let marker = if path.is_dir() { path.join(USED) } else { path.clone() };
            let at = std::fs::metadata(&marker).and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
            (at, path)
        })
        .collect();
    used.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let now = std::time::SystemTime::now();
    for (at, path) in used.into_iter().skip(keep) {
        if now.duration_since(at).unwrap_or_default() < EVICT_AFTER {
            continue;
        }
        let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
    }
}

/// The schema world of a tree, or the refusal naming what the world is.
fn schema_world(tree: &Tree, world: &Container) -> Result<PathBuf, HubError> {
    tree.world.clone().ok_or_else(|| {
        let kind = gateway_world::data::world_kind(&tree.bundle).unwrap_or("unknown");
        HubError::BadRequest(format!(
            "'{}' is a {kind} world: data batches go into schema worlds (gateway-env.toml with [schema], pushed with `gateway bench push`)",
            world.slug
        ))
    })
}

// ------------------------------------------------------------------ answers

/// With `GATEWAY_TIMING` set, how long each step of an apply or a publish took (stderr).
struct Laps {
    started: std::time::Instant,
    on: bool,
    what: String,
}

impl Laps {
    fn new(what: &str) -> Laps {
        Laps { started: std::time::Instant::now(), on: std::env::var_os("GATEWAY_TIMING").is_some(), what: what.to_string() }
    }

    fn lap(&self, step: &str) {
        if self.on {
            eprintln!("{} {step}: {:.3}s", self.what, self.started.elapsed().as_secs_f64());
        }
    }
}

/// JSON as a batch keeps it: compact, member order kept (refusal records and counts
/// read back in the order they were made).
fn stored(value: &Value) -> String {
    json::dumps(value, gateway_world::check::ROW_LINE)
}

fn int(n: impl TryInto<i64>) -> Value {
    Value::Int(n.try_into().unwrap_or(i64::MAX))
}

/// A batch as `GET …/batches/{id}` answers it.
async fn batch_json(hub: &Hub, world: &Container, batch: &DataBatch, base_url: &str, full: bool) -> Result<Value, HubError> {
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

async fn own_batch(hub: &Hub, project: &str, world: &Container, id: &str) -> Result<DataBatch, HubError> {
    hub.meta
        .data_batch(project, id)
        .await?
        .filter(|b| b.container_id == world.id)
        .ok_or_else(|| HubError::NotFound(format!("no data batch '{id}' for world '{}'", world.slug)))
}

fn choice(body: &Map, key: &str, allowed: &[&str], default: &str) -> Result<String, HubError> {
    let value = opt_str(body, key)?.unwrap_or_else(|| default.to_string());
    if allowed.contains(&value.as_str()) {
        Ok(value)
    } else {
        Err(HubError::BadRequest(format!("'{key}' must be {}, not '{value}'", allowed.join(" or "))))
    }
}

fn flag(body: &Map, key: &str, default: bool) -> Result<bool, HubError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(HubError::BadRequest(format!("'{key}' must be true or false"))),
    }
}

// ------------------------------------------------------------------ routes

async fn open_batch(hub: &Hub, project: &str, world: &Container, body: &Map) -> Answer {
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

async fn register_chunk(hub: &Hub, project: &str, world: &Container, id: &str, body: &Map, base_url: &str) -> Answer {
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

async fn chunk_uploaded(hub: &Hub, project: &str, world: &Container, id: &str, chunk_id: &str) -> Answer {
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

async fn complete(hub: &Hub, project: &str, world: &Container, id: &str) -> Answer {
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

async fn status(hub: &Hub, project: &str, world: &Container, id: &str, base_url: &str) -> Answer {
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

async fn list_batches(hub: &Hub, world: &Container, query: &BTreeMap<String, String>) -> Answer {
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

/// `GET …/data` without `entity`: the world's kind and entity counts.
async fn show(hub: &Hub, world: &Container) -> Answer {
    let (out, _) = show_heading(hub, world).await?;
    ok(Value::Object(out))
}

/// What `GET …/data` says of a world before any rows (slug, version, kind, counts, and
/// the data head's digest), and where its rows are read from.
async fn show_heading(hub: &Hub, world: &Container) -> Result<(Map, RowsFrom), HubError> {
    let tip = tip(hub, world).await?;
    let head = current_head(hub, world, &tip).await?;
    let tree = tree(hub, &tip).await?;
    let mut out = Map::default();
    out.insert("slug".into(), Value::str(&world.slug));
    out.insert("versionId".into(), Value::str(&tip.id));
    match head {
        Some(head) => {
            let root = schema_world(&tree, world)?;
            out.insert("kind".into(), Value::str("schema"));
            out.insert("entityCounts".into(), opt_value(&head.entity_counts));
            out.insert("batchDigest".into(), Value::str(&head.batch_digest));
            out.insert("pending".into(), Value::Bool(head.pending));
            Ok((out, RowsFrom::Head { root, head }))
        }
        None => {
            let root = tree.world.clone().unwrap_or_else(|| tree.bundle.clone());
            let wanted = root.clone();
            let (kind, counts) = blocking(move || {
                let kind = gateway_world::data::world_kind(&wanted).map_err(|e| HubError::BadRequest(e.to_string()))?;
                let counts = gateway_world::data::entity_counts(&wanted).map_err(|e| HubError::BadRequest(e.to_string()))?;
                Ok((kind, counts))
            })
            .await?;
            out.insert("kind".into(), Value::str(kind));
            out.insert("entityCounts".into(), counts);
            Ok((out, RowsFrom::Files { root }))
        }
    }
}

/// Where a world's rows are: its data head's snapshot, or the version's own files.
enum RowsFrom {
    /// The snapshot of the world's data head (the world compiled at `root`).
    Head { root: PathBuf, head: DataHead },
    /// The version's files at `root` (no batch applied on this tip).
    Files { root: PathBuf },
}

/// Row text sent per body frame (about).
const FRAME_BYTES: usize = 64 * 1024;
/// Frames waiting to be sent: with [`FRAME_BYTES`], what a slow reader makes the hub hold.
const FRAMES_QUEUED: usize = 4;

/// `GET /api/public/worlds/{slug}/data?entity=E`: the heading of [`show`], `entity`,
/// `rowCount`, then every row of the entity (in key order from a data head's snapshot),
/// streamed: the rows are written to the body as they are read, so the hub holds a few
/// frames of them at a time, never the whole entity. A refusal (no such world or entity)
/// comes before the body; a read failing midway ends the body short (invalid JSON).
pub(super) async fn show_rows(hub: &Hub, headers: &HeaderMap, slug: &str, entity: &str) -> Result<Response, HubError> {
    let project = authenticate(hub, headers).await?;
    let world = container(hub, &project, Some(unquote_plus(slug))).await?;
    let (mut out, from) = show_heading(hub, &world).await?;
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(FRAMES_QUEUED);
    let wanted = entity.to_string();
    let total = match from {
        RowsFrom::Head { root, head } => {
            let cached = cached_snapshot(hub, &head).await?;
            let checked = (root.clone(), cached.clone(), wanted.clone());
            let total = blocking(move || snapshot_count(&checked.0, &checked.1, &checked.2)).await?;
            tokio::task::spawn_blocking(move || {
                if let Err(error) = send_snapshot_rows(&cached, &wanted, &sender) {
                    let _ = sender.blocking_send(Err(std::io::Error::other(error.to_string())));
                }
            });
            total
        }
        RowsFrom::Files { root } => {
            let read = wanted.clone();
            let rows =
                blocking(move || gateway_world::data::entity_rows(&root, &read).map_err(|e| HubError::BadRequest(e.to_string()))).await?;
            let total = rows.len();
            tokio::task::spawn_blocking(move || {
                let mut frame = RowFrame::default();
                for row in &rows {
                    if !frame.push(row, &sender) {
                        return;
                    }
                }
                frame.flush(&sender);
            });
            total
        }
    };
    out.insert("entity".into(), Value::str(entity));
    out.insert("rowCount".into(), int(total));
    let heading = json::dumps(&Value::Object(out), DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false });
    let opening = format!("{}, \"rows\": [", heading.strip_suffix('}').unwrap_or(&heading));
    let body = futures_util::stream::once(async move { Ok::<_, std::io::Error>(axum::body::Bytes::from(opening)) })
        .chain(futures_util::stream::unfold(receiver, |mut receiver| async move { receiver.recv().await.map(|frame| (frame, receiver)) }))
        .chain(futures_util::stream::once(async { Ok(axum::body::Bytes::from_static(b"]}")) }));
    let mut response = Response::new(Body::from_stream(body));
    response.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    Ok(response)
}

use futures_util::StreamExt as _;

/// Rows gathered into a body frame.
#[derive(Default)]
struct RowFrame {
    text: String,
    first_sent: bool,
}

impl RowFrame {
    /// Add a row; send the frame once it is full. False when the reader is gone.
    fn push(&mut self, row: &Value, sender: &tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>) -> bool {
        if self.first_sent || !self.text.is_empty() {
            self.text.push_str(", ");
        }
        self.text.push_str(&json::dumps(row, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false }));
        if self.text.len() >= FRAME_BYTES {
            self.first_sent = true;
            return sender.blocking_send(Ok(axum::body::Bytes::from(std::mem::take(&mut self.text)))).is_ok();
        }
        true
    }

    /// Send what is left.
    fn flush(self, sender: &tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>) {
        if !self.text.is_empty() {
            let _ = sender.blocking_send(Ok(axum::body::Bytes::from(self.text)));
        }
    }
}

/// The data head's snapshot, fetched once per process (its sha256 checked).
async fn cached_snapshot(hub: &Hub, head: &DataHead) -> Result<PathBuf, HubError> {
    let cached = work_root(hub).join("snapshots").join(format!("{}.sqlite", head.batch_digest));
    if !cached.is_file() {
        let partial = cached.with_extension(format!("part-{}", crate::util::random_hex(4)));
        let sha = fetch_object(hub, &head.snapshot_key, &partial).await?;
        if sha != head.file_sha256 {
            let _ = std::fs::remove_file(&partial);
            return Err(HubError::Storage(format!("snapshot {} does not match its sha256", head.snapshot_key)));
        }
        std::fs::rename(&partial, &cached).map_err(|e| HubError::io(&cached, e))?;
        evict(&work_root(hub).join("snapshots"), KEPT_SNAPSHOTS);
    }
    Ok(cached)
}

/// How many rows of `entity` a snapshot holds, or the refusal when the world has no
/// such entity.
fn snapshot_count(root: &Path, snapshot: &Path, entity: &str) -> Result<usize, HubError> {
    let contract = gateway_world::lifecycle::check_bundle(root).map_err(|e| engine_error("the world does not compile", e))?;
    if contract.entity(entity).is_none() {
        let names: Vec<&str> = contract.entities.iter().map(|e| e.name.as_str()).collect();
        return Err(HubError::BadRequest(format!("entity at /{entity}: Unknown entity {entity}; the world has {}", names.join(", "))));
    }
    let conn = rusqlite::Connection::open_with_flags(snapshot, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let total: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM {}", gateway_world::compiler::quote(entity)), [], |r| r.get(0))?;
    Ok(total as usize)
}

/// Every row of `entity` in a snapshot, in key order, sent in frames.
fn send_snapshot_rows(
    snapshot: &Path,
    entity: &str,
    sender: &tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>,
) -> Result<(), HubError> {
    let conn = rusqlite::Connection::open_with_flags(snapshot, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statement = conn.prepare(&format!("SELECT payload FROM {} ORDER BY _key", gateway_world::compiler::quote(entity)))?;
    let mut rows = statement.query([])?;
    let mut frame = RowFrame::default();
    while let Some(row) = rows.next()? {
        let payload: String = row.get(0)?;
        if let Some(value) = json::parse_clean(&payload) {
            if !frame.push(&value, sender) {
                return Ok(());
            }
        }
    }
    frame.flush(sender);
    Ok(())
}

// ------------------------------------------------------------------ the apply

/// The batch as the applier holds it: its copy and the store's are written together.
type Shared = Arc<tokio::sync::Mutex<DataBatch>>;

async fn save(hub: &Hub, shared: &Shared, change: impl FnOnce(&mut DataBatch)) -> Result<(), HubError> {
    let mut batch = shared.lock().await;
    change(&mut batch);
    batch.updated_at = now_iso();
    hub.meta.update_data_batch(&batch).await
}

/// Apply a completed batch: wait for the world's lock, apply, publish if asked, and
/// record the outcome (`failed` with the reason when anything goes wrong).
async fn run_apply(hub: Hub, batch: DataBatch) {
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

fn fail(batch: &mut DataBatch, why: &str) {
    batch.state = FAILED.into();
    batch.phase = None;
    batch.lease_until = None;
    batch.error = Some(why.to_string());
}

/// Everything the apply does while it holds the world's lock.
async fn apply_locked(hub: &Hub, shared: &Shared, work: &Path) -> Result<(), HubError> {
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
            let contract = gateway_world::lifecycle::check_bundle(&root).map_err(|e| engine_error("the world does not compile", e))?;
            build_batch(&contract, &snapshot, &specs, &options).map_err(|e| engine_error("the batch could not be applied", e))
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
async fn fetch_parent(hub: &Hub, head: Option<&DataHead>, root: &Path, snapshot: &Path) -> Result<String, HubError> {
    match head {
        Some(head) => {
            let sha = fetch_object(hub, &head.snapshot_key, snapshot).await?;
            if sha != head.file_sha256 {
                return Err(HubError::Storage(format!("the world's data snapshot {} does not match its sha256", head.snapshot_key)));
            }
            Ok(head.batch_digest.clone())
        }
        None => {
            let (root, snapshot) = (root.to_path_buf(), snapshot.to_path_buf());
            blocking(move || {
                let source = gateway_world::snapshot::default_snapshot(&root);
                std::fs::copy(&source, &snapshot).map_err(|e| HubError::io(&source, e))?;
                let sidecar = gateway_world::snapshot::read_sidecar(&source).map_err(|e| HubError::BadRequest(e.to_string()))?;
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
async fn fetch_chunks(hub: &Hub, project: &str, chunks: &[DataChunk], work: &Path) -> Result<Vec<ChunkSpec>, HubError> {
    let mut specs = Vec::new();
    for chunk in chunks {
        let gz = work.join(format!("{}.gz", gateway_world::chunks::chunk_name(chunk.ordinal as usize)));
        let sha = fetch_object(hub, &chunk_key(project, &chunk.digest), &gz).await?;
        if sha != chunk.digest {
            return Err(HubError::Storage(format!("chunk {} does not match its digest in the store", chunk.ordinal)));
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
fn batch_options(batch: &DataBatch, parent_digest: &str) -> Result<BatchOptions, HubError> {
    Ok(BatchOptions {
        // Checked when the batch was registered; a stored spelling is one of these.
        mode: batch.mode.parse().map_err(|e: gateway_world::ContractError| HubError::BadRequest(e.to_string()))?,
        merge: batch.merge.parse().map_err(|e: gateway_world::ContractError| HubError::BadRequest(e.to_string()))?,
        atomic: batch.atomic,
        batch_id: batch.id.clone(),
        parent_digest: parent_digest.to_string(),
        dry_run: batch.dry_run,
        memory_budget: gateway_world::check::MEMORY_BUDGET,
    })
}

/// The refusal report stored, when anything was refused: up to 10,000 records, then
/// the truncation marker. Its object key.
async fn store_refusal_report(
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
fn batch_result(outcome: &BatchOutcome, parent_digest: &str) -> Value {
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
async fn forget_snapshot(hub: &Hub, previous: Option<DataHead>, now: &DataHead) {
    if let Some(previous) = previous.filter(|p| p.snapshot_key != now.snapshot_key) {
        let _ = hub.objects.delete(&previous.snapshot_key).await;
    }
}

/// Gunzip a chunk (every gzip member, as Python's `gzip` reads them) into `to`,
/// refusing one that expands past `cap` bytes.
fn gunzip_capped(from: &Path, to: &Path, cap: u64, ordinal: i64) -> Result<(), HubError> {
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

/// Turn the data head into a data-only version of the world on `main`: the tip's
/// files, with the head's snapshot as `db/state.sqlite` (and its sidecar), the
/// `db/snapshot.json` pin naming it, and the scenario snapshots rebuilt on it.
#[allow(clippy::too_many_arguments)]
async fn publish_version(
    hub: &Hub,
    world: &Container,
    tip: &Version,
    tree: &Tree,
    root: &Path,
    work: &Path,
    head: &DataHead,
    reason: &str,
) -> Result<Version, HubError> {
    let snapshot = work.join(gateway_world::snapshot::SNAPSHOT);
    if !snapshot.is_file() {
        let sha = fetch_object(hub, &head.snapshot_key, &snapshot).await?;
        if sha != head.file_sha256 {
            return Err(HubError::Storage(format!("the world's data snapshot {} does not match its sha256", head.snapshot_key)));
        }
    }
    let bundle = work.join("bundle");
    let tarball = work.join("bundle.tar.gz");
    let (from, bundle_dir, world_rel) =
        (tree.bundle.clone(), bundle.clone(), root.strip_prefix(&tree.bundle).unwrap_or(Path::new("")).to_path_buf());
    let (head_owned, tarball_path) = (head.clone(), tarball.clone());
    let (content_hash, manifest, sha256, size) = blocking(move || {
        let laps = Laps::new("publish");
        let skip = |rel: &Path| {
            let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let in_world = rel.strip_prefix(&world_rel).ok();
            let parent = in_world.and_then(Path::parent).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            let snapshot_file = matches!(name, "state.sqlite" | "state.json") || name.starts_with(".state.sqlite.");
            in_world.is_some()
                && ((parent == "db" && (snapshot_file || name == "snapshot.json")) || (parent.starts_with("scenarios/") && snapshot_file))
        };
        // Links are left out (never read through); `skip` names files.
        gateway_common::fs::copy_tree(&from, &bundle_dir, gateway_common::fs::Symlinks::Skip, &|entry| {
            !entry.is_dir && skip(entry.relative)
        })
        .map_err(|e| HubError::io(&e.path, e.source))?;
        laps.lap("files copied");
        let world = bundle_dir.join(&world_rel);
        let db = world.join("db");
        std::fs::create_dir_all(&db).map_err(|e| HubError::io(&db, e))?;
        let target = gateway_world::snapshot::default_snapshot(&world);
        std::fs::copy(&snapshot, &target).map_err(|e| HubError::io(&snapshot, e))?;
        let counts = json::parse_clean(&head_owned.entity_counts).unwrap_or_default();
        gateway_world::snapshot::write_sidecar(&target, &head_owned.contract_hash, &head_owned.batch_digest, counts.clone())
            .map_err(|e| engine_error("the snapshot's sidecar", e))?;
        let pin = object([
            ("batchDigest", Value::str(&head_owned.batch_digest)),
            ("contractHash", Value::str(&head_owned.contract_hash)),
            ("entityCounts", counts),
        ]);
        let pin_text =
            format!("{}\n", json::dumps(&pin, DumpOptions { sort_keys: false, ensure_ascii: true, indent: Some(1), compact: false }));
        let pin_path = db.join("snapshot.json");
        std::fs::write(&pin_path, pin_text).map_err(|e| HubError::io(&pin_path, e))?;
        let contract = gateway_world::lifecycle::check_bundle(&world).map_err(|e| engine_error("the world does not compile", e))?;
        laps.lap("snapshot, sidecar and pin");
        gateway_world::snapshot::build_all(&world, &contract, false).map_err(|e| engine_error("the world's snapshots", e))?;
        laps.lap("scenario snapshots");
        let content_hash = gateway_bundle::archive::compute_content_hash(&bundle_dir)?;
        let manifest = Value::Array(gateway_bundle::archive::build_file_manifest(&bundle_dir));
        laps.lap("content hash and manifest");
        let file = std::fs::File::create(&tarball_path).map_err(|e| HubError::io(&tarball_path, e))?;
        let mut hashing = HashingFile { file: std::io::BufWriter::new(file), digest: Sha256::new(), bytes: 0 };
        gateway_bundle::archive::write_source_tarball(&bundle_dir, &mut hashing, BUNDLE_LEVEL)?;
        use std::io::Write as _;
        hashing.file.flush().map_err(|e| HubError::io(&tarball_path, e))?;
        use base64::Engine as _;
        let sha256 = base64::engine::general_purpose::STANDARD.encode(hashing.digest.finalize());
        laps.lap("tarball");
        Ok((content_hash, manifest, sha256, hashing.bytes))
    })
    .await?;
    if size > hub.limits.max_object_bytes as u64 {
        return Err(HubError::TooLarge(format!(
            "the data-only version's bundle is {size} bytes, over this hub's {}-byte bundle limit (--max-bundle-mb)",
            hub.limits.max_object_bytes
        )));
    }
    let new = Version {
        id: new_id("ver_"),
        container_id: world.id.clone(),
        content_hash: content_hash.clone(),
        bundle_sha256: sha256,
        bundle_size: size as i64,
        semantic_version: tip.semantic_version.clone(),
        pyproject_meta: tip.pyproject_meta.clone(),
        file_manifest: json::canonical(&manifest),
        state: "PENDING".into(),
        change_reason: Some(reason.to_string()),
        author: tip.author.clone(),
        image_ref: tip.image_ref.clone(),
        object_key: format!("bundles/{}/{}.tar.gz", world.id, content_hash),
        uploaded: false,
        requires_dist: tip.requires_dist.clone(),
        pushed_branch: Some("main".into()),
        created_at: now_iso(),
        ..Version::default()
    };
    let (version, _) = hub.meta.create_version(new).await?;
    if !version.uploaded || hub.objects.size(&version.object_key).await?.is_none() {
        store_object(hub, &version.object_key, &tarball).await?;
        hub.meta.mark_uploaded(&version.id, false).await?;
    }
    let done = hub.meta.finalize(&version.id, "main", Some(&tip.id), false).await.map_err(|error| match error {
        HubError::Conflict(_) => HubError::Conflict(format!(
            "'{}' main moved while the batch applied (it was {}): the data-only version was not published; import the rows onto the new tip",
            world.slug, tip.id
        )),
        other => other,
    })?;
    Ok(done.version)
}

/// A file writer that hashes and counts what it writes.
struct HashingFile {
    file: std::io::BufWriter<std::fs::File>,
    digest: Sha256,
    bytes: u64,
}

impl std::io::Write for HashingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.digest.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// `POST …/data/publish`: every applied `--publish later` batch of the world, folded
/// into one data-only version.
async fn publish(hub: &Hub, world: &Container, body: &Map) -> Answer {
    let message = opt_str(body, "message")?.filter(|m| !m.is_empty());
    let holder = new_id("pub_");
    if !hub.meta.lock_data(&world.id, &holder, (now_secs() + LEASE_SECS) as i64, now_secs() as i64).await? {
        return Err(HubError::Conflict(format!(
            "a data batch is being applied to '{}': publish once it is done (`gateway worlds data batches {}`)",
            world.slug, world.slug
        )));
    }
    let work = work_root(hub).join("batches").join(&holder);
    let published = publish_locked(hub, world, message, &work).await;
    let _ = hub.meta.unlock_data(&world.id, &holder).await;
    let _ = tokio::fs::remove_dir_all(&work).await;
    published
}

async fn publish_locked(hub: &Hub, world: &Container, message: Option<String>, work: &Path) -> Answer {
    let tip = tip(hub, world).await?;
    let head = hub.meta.data_head(&world.id).await?;
    let Some(head) = head.filter(|h| h.pending) else {
        return ok(object([
            ("slug", Value::str(&world.slug)),
            ("published", Value::Bool(false)),
            ("versionId", Value::str(&tip.id)),
            ("batches", Value::Array(Vec::new())),
            ("message", Value::str("nothing to publish: no batch imported with --publish later is waiting")),
        ]));
    };
    if head.base_version_id != tip.id {
        return Err(HubError::Conflict(format!(
            "'{}' main moved to {} since the waiting batches were applied on {}: their rows are not in it; import them again",
            world.slug, tip.id, head.base_version_id
        )));
    }
    let tree = tree(hub, &tip).await?;
    let root = schema_world(&tree, world)?;
    tokio::fs::create_dir_all(work).await.map_err(|e| HubError::io(work, e))?;
    let reason = message.unwrap_or_else(|| "data publish".to_string());
    let version = publish_version(hub, world, &tip, &tree, &root, work, &head, &reason).await?;
    let mut moved = head.clone();
    moved.base_version_id = version.id.clone();
    moved.pending = false;
    moved.updated_at = now_iso();
    hub.meta.put_data_head(moved).await?;
    let batches = hub.meta.publish_data_batches(&tip, &version, &now_iso()).await?;
    ok(object([
        ("slug", Value::str(&world.slug)),
        ("published", Value::Bool(true)),
        ("versionId", Value::str(&version.id)),
        ("contentHash", Value::str(&version.content_hash)),
        ("state", Value::str(&version.state)),
        ("batchDigest", Value::str(&head.batch_digest)),
        ("entityCounts", opt_value(&head.entity_counts)),
        ("batches", Value::Array(batches.into_iter().map(Value::Str).collect())),
    ]))
}

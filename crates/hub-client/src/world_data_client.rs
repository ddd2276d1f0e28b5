//! The client of world data batches behind `gateway worlds data import <slug>`,
//! `data status|batches|publish` and `data show <slug>`: the original's
//! `WorldDataClient` and `import_rows` (spec §4, §9.6).
//!
//! Rows stream from the files and are cut into gzipped chunks exactly as the original
//! cuts them (`gateway_world::chunks`), compressed and uploaded `parallel` at a time:
//! each registered by digest, PUT to its signed URL unless the hub already holds
//! that digest, marked uploaded, and recorded in the manifest
//! `.gateway/imports/<batchId>.json` (written atomically after every chunk), so
//! `--resume` re-cuts the same inputs and uploads only what is not recorded. Then
//! `complete`, and (unless `--no-wait`) the batch polled to a terminal state.

use crate::transport::{Cause, Dialect, EnvCredentials, Missing, Transport};
use crate::ClientError;
use gateway_common::url::quote_segment;
pub use gateway_world::check::Merge;
use gateway_world::chunks::{compress_chunk, cut_chunks, Chunk, ChunkOptions, RawChunk, CHUNK_BYTES};
use gateway_world::json::{self, object, DumpOptions, Map, Value};
pub use gateway_world::plan::Mode;
use gateway_world::rows::Flow;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Result<T> = std::result::Result<T, ClientError>;

fn fail(message: impl Into<String>) -> ClientError {
    ClientError::Failed(message.into())
}

/// The manifest format this client writes and reads.
pub const MANIFEST_VERSION: i64 = 1;
/// Where manifests live, relative to the working directory.
pub const MANIFEST_DIR: &str = ".gateway/imports";
/// States that change no more: polling stops.
pub const TERMINAL: [&str; 4] = ["applied", "refused", "published", "failed"];
/// States a batch may be resumed in.
pub const RESUMABLE: [&str; 2] = ["open", "uploading"];
/// Seconds between polls of a batch.
pub const POLL_SECONDS: u64 = 2;
/// Timeout of a chunk PUT.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(600);
/// Timeout of the JSON calls.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The original's `WorldDataClient._request`: a transport failure without its (signed)
/// URL, an empty answer `{}`, a repeated member not JSON.
const DIALECT: Dialect = Dialect { cause: Cause::ChainWithoutUrl, empty_is_object: true, refuse_repeated_members: true, ..Dialect::URLLIB };

/// A client of a hub's world data routes (`/api/public/worlds/{slug}/data`).
#[derive(Debug, Clone)]
pub struct WorldDataClient {
    transport: Transport,
}

impl WorldDataClient {
    /// A client for `host` with a key pair; the original's refusals when either is missing.
    pub fn new(host: &str, public_key: &str, secret_key: &str) -> Result<WorldDataClient> {
        Ok(WorldDataClient { transport: Transport::with_key_pair(host, public_key, secret_key, Missing::TERSE, CALL_TIMEOUT)? })
    }

    /// `--host` else `GATEWAY_HOST`, and `GATEWAY_PUBLIC_KEY` / `GATEWAY_SECRET_KEY`.
    pub fn from_env(host: Option<&str>) -> Result<WorldDataClient> {
        let credentials = EnvCredentials::read(host);
        WorldDataClient::new(&credentials.host, &credentials.public_key, &credentials.secret_key)
    }

    /// The hub, without a trailing `/`.
    pub fn host(&self) -> &str {
        self.transport.host()
    }

    /// One JSON call; an empty answer is `{}`. Failures read `METHOD path -> code: body`.
    pub fn request(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value> {
        self.transport.call(&DIALECT, method, path, body)
    }

    /// `/api/public/worlds/<slug without @ref>/data`.
    pub fn route(slug: &str) -> String {
        let bare = slug.split('@').next().unwrap_or_default();
        format!("/api/public/worlds/{}/data", quote_segment(bare))
    }

    fn post(&self, path: &str, body: Option<&Value>) -> Result<Value> {
        self.request(reqwest::Method::POST, path, body)
    }

    /// `POST …/batches`.
    pub fn open_batch(&self, slug: &str, flags: &Flags, message: Option<&str>) -> Result<Value> {
        let mut body = vec![
            ("mode", Value::str(flags.mode.as_str())),
            ("merge", Value::str(flags.merge.as_str())),
            ("atomic", Value::Bool(flags.atomic)),
            ("dryRun", Value::Bool(flags.dry_run)),
            ("publish", Value::str(flags.publish.as_str())),
        ];
        if let Some(message) = message {
            body.push(("message", Value::str(message)));
        }
        self.post(&format!("{}/batches", Self::route(slug)), Some(&object(body)))
    }

    /// `POST …/batches/{id}/chunks`.
    pub fn register_chunk(&self, slug: &str, batch_id: &str, chunk: &Chunk) -> Result<Value> {
        let mut body = vec![
            ("ordinal", Value::Int(chunk.ordinal as i64)),
            ("digest", Value::str(&chunk.digest)),
            ("bytes", Value::Int(chunk.bytes as i64)),
            ("rows", Value::Int(chunk.rows as i64)),
        ];
        if let Some(entity) = &chunk.entity {
            body.push(("entity", Value::str(entity)));
        }
        self.post(&format!("{}/batches/{batch_id}/chunks", Self::route(slug)), Some(&object(body)))
    }

    /// `POST …/chunks/{chunkId}/uploaded` (no body).
    pub fn mark_uploaded(&self, slug: &str, batch_id: &str, chunk_id: &str) -> Result<Value> {
        self.post(&format!("{}/batches/{batch_id}/chunks/{chunk_id}/uploaded", Self::route(slug)), None)
    }

    /// `POST …/batches/{id}/complete` (no body).
    pub fn complete(&self, slug: &str, batch_id: &str) -> Result<Value> {
        self.post(&format!("{}/batches/{batch_id}/complete", Self::route(slug)), None)
    }

    /// `GET …/batches/{id}`.
    pub fn status(&self, slug: &str, batch_id: &str) -> Result<Value> {
        self.request(reqwest::Method::GET, &format!("{}/batches/{batch_id}", Self::route(slug)), None)
    }

    /// `GET …/batches[?limit=]`.
    pub fn batches(&self, slug: &str, limit: Option<i64>, cursor: Option<&str>) -> Result<Value> {
        let mut query: Vec<String> = Vec::new();
        if let Some(limit) = limit {
            query.push(format!("limit={limit}"));
        }
        if let Some(cursor) = cursor {
            query.push(format!("cursor={}", gateway_common::url::quote_plus(cursor)));
        }
        let query = if query.is_empty() { String::new() } else { format!("?{}", query.join("&")) };
        self.request(reqwest::Method::GET, &format!("{}/batches{query}", Self::route(slug)), None)
    }

    /// `POST …/publish` with `{message}` or `{}`.
    pub fn publish(&self, slug: &str, message: Option<&str>) -> Result<Value> {
        let body = match message.filter(|m| !m.is_empty()) {
            Some(message) => object([("message", Value::str(message))]),
            None => Value::Object(Map::default()),
        };
        self.post(&format!("{}/publish", Self::route(slug)), Some(&body))
    }

    /// `GET …/data[?entity=]`.
    pub fn counts(&self, slug: &str, entity: Option<&str>) -> Result<Value> {
        let query = entity.map(|e| format!("?entity={}", quote_segment(e))).unwrap_or_default();
        self.request(reqwest::Method::GET, &format!("{}{query}", Self::route(slug)), None)
    }

    /// PUT a chunk to its signed URL with no auth: exactly `headers` when the hub gave
    /// them, else the gzip content type (the length comes with the body).
    pub fn put_object(&self, url: &str, path: &Path, size: u64, headers: Option<&Map>) -> Result<()> {
        let file = std::fs::File::open(path).map_err(|e| ClientError::io(path, e))?;
        let mut request = self.transport.http().put(url).timeout(UPLOAD_TIMEOUT);
        match headers {
            Some(headers) => {
                for (name, value) in headers {
                    // The sized body sends Content-Length itself.
                    if !name.eq_ignore_ascii_case("content-length") {
                        request = request.header(name.as_str(), value.as_str().unwrap_or_default());
                    }
                }
            }
            None => request = request.header("Content-Type", "application/gzip"),
        }
        let response = request
            .body(reqwest::blocking::Body::sized(file, size))
            .send()
            .map_err(|e| ClientError::Unreachable(format!("chunk PUT -> {}", Cause::ChainWithoutUrl.tell(e))))?;
        if !response.status().is_success() {
            let code = response.status().as_u16();
            let detail: String = response.text().unwrap_or_default().chars().take(300).collect();
            return Err(ClientError::Refused(format!("chunk PUT -> {code}: {detail}")));
        }
        Ok(())
    }

    /// The refusal report at `url` (no auth).
    pub fn fetch_report(&self, url: &str) -> Result<String> {
        let response = self
            .transport
            .http()
            .get(url)
            .timeout(CALL_TIMEOUT)
            .send()
            .and_then(|r| r.error_for_status())
            .map_err(|e| ClientError::Unreachable(format!("report download failed: {e}")))?;
        response.text().map_err(|e| ClientError::Unreachable(format!("report download failed: {e}")))
    }
}

// ------------------------------------------------------------------ the manifest

/// UTC now as `YYYY-MM-DDTHH:MM:SSZ`.
fn now() -> String {
    gateway_world::snapshot::utc_now_seconds()
}

/// When an applied batch becomes a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Publish {
    /// A data-only version per batch, as soon as it applies.
    #[default]
    Now,
    /// Applied batches wait for `data publish` to fold them into one version.
    Later,
}

impl Publish {
    /// Every choice, in the original's order.
    pub const ALL: [Publish; 2] = [Publish::Now, Publish::Later];

    /// The original's spelling (`now`, `later`).
    pub fn as_str(self) -> &'static str {
        match self {
            Publish::Now => "now",
            Publish::Later => "later",
        }
    }
}

/// The import's flags as the manifest records them.
#[derive(Debug, Clone)]
pub struct Flags {
    /// How the rows meet the world's.
    pub mode: Mode,
    /// What a row repeating a key in the batch does.
    pub merge: Merge,
    /// One refusal refuses the batch.
    pub atomic: bool,
    /// When the batch becomes a version.
    pub publish: Publish,
    /// Always false on the wire (`--dry-run` runs locally).
    pub dry_run: bool,
    /// JSONL bytes per chunk.
    pub chunk_bytes: usize,
    /// Rows per chunk, when bounded.
    pub chunk_rows: Option<usize>,
    /// The entity of bare rows.
    pub entity: Option<String>,
}

impl Default for Flags {
    fn default() -> Self {
        Flags {
            mode: Mode::Append,
            merge: Merge::Upsert,
            atomic: true,
            publish: Publish::Now,
            dry_run: false,
            chunk_bytes: CHUNK_BYTES,
            chunk_rows: None,
            entity: None,
        }
    }
}

impl Flags {
    fn to_json(&self) -> Value {
        object([
            ("mode", Value::str(self.mode.as_str())),
            ("merge", Value::str(self.merge.as_str())),
            ("atomic", Value::Bool(self.atomic)),
            ("publish", Value::str(self.publish.as_str())),
            ("dryRun", Value::Bool(self.dry_run)),
            ("chunkBytes", Value::Int(self.chunk_bytes as i64)),
            ("chunkRows", self.chunk_rows.map_or(Value::Null, |n| Value::Int(n as i64))),
            ("entity", self.entity.as_ref().map_or(Value::Null, Value::str)),
        ])
    }

    fn from_json(value: &Value) -> Result<Flags> {
        let text = |k: &str, default: &str| value.get(k).and_then(Value::as_str).unwrap_or(default).to_string();
        let size = |k: &str| value.get(k).and_then(Value::as_i64).filter(|n| *n > 0).map(|n| n as usize);
        let refused = |e: gateway_world::ContractError| fail(format!("the manifest's flags: {}", e.message));
        let publish = text("publish", "now");
        Ok(Flags {
            mode: text("mode", "append").parse().map_err(refused)?,
            merge: text("merge", "upsert").parse().map_err(refused)?,
            atomic: !matches!(value.get("atomic"), Some(Value::Bool(false))),
            publish: Publish::ALL
                .into_iter()
                .find(|p| p.as_str() == publish)
                .ok_or_else(|| fail(format!("the manifest's flags: publish must be now or later, not {publish}")))?,
            dry_run: matches!(value.get("dryRun"), Some(Value::Bool(true))),
            chunk_bytes: size("chunkBytes").unwrap_or(CHUNK_BYTES),
            chunk_rows: size("chunkRows"),
            entity: value.get("entity").and_then(Value::as_str).map(str::to_string),
        })
    }
}

/// `.gateway/imports/<batchId>.json`: what was uploaded, so an import can resume.
#[derive(Debug)]
pub struct Manifest {
    /// Where it is.
    pub path: PathBuf,
    data: Mutex<Map>,
}

impl Manifest {
    /// A new manifest (and `.gateway/.gitignore` holding `*` when there is none).
    pub fn create(base: &Path, batch_id: &str, slug: &str, host: &str, flags: &Flags, inputs: &[String]) -> Result<Manifest> {
        let directory = base.join(MANIFEST_DIR);
        std::fs::create_dir_all(&directory).map_err(|e| ClientError::io(&directory, e))?;
        let ignore = base.join(".gateway/.gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "*\n").map_err(|e| ClientError::io(&ignore, e))?;
        }
        let data = object([
            ("version", Value::Int(MANIFEST_VERSION)),
            ("batchId", Value::str(batch_id)),
            ("slug", Value::str(slug)),
            ("host", Value::str(host)),
            ("flags", flags.to_json()),
            ("inputs", Value::Array(inputs.iter().map(Value::str).collect())),
            ("chunks", Value::Array(Vec::new())),
            ("completed", Value::Bool(false)),
            ("createdAt", Value::Str(now())),
            ("updatedAt", Value::Str(now())),
        ]);
        let Value::Object(map) = data else { unreachable!("an object") };
        let manifest = Manifest { path: directory.join(format!("{batch_id}.json")), data: Mutex::new(map) };
        manifest.save()?;
        Ok(manifest)
    }

    /// Read a manifest; one of another format version is refused.
    pub fn load(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(|e| ClientError::io(path, e))?;
        let value = json::parse(&text).map_err(|e| fail(format!("{}: not JSON ({e:?})", path.display())))?.value;
        let Value::Object(map) = value else { return Err(fail(format!("{} is not a manifest", path.display()))) };
        let version = map.get("version").cloned().unwrap_or(Value::Null);
        if version.as_i64() != Some(MANIFEST_VERSION) {
            return Err(fail(format!(
                "{} is a manifest of version {}, not {MANIFEST_VERSION}",
                path.display(),
                json::python_str(&version)
            )));
        }
        Ok(Manifest { path: path.to_path_buf(), data: Mutex::new(map) })
    }

    /// The newest (by `updatedAt`) incomplete manifest for `slug` (and these inputs).
    pub fn find(base: &Path, slug: &str, inputs: Option<&[String]>) -> Option<Manifest> {
        let bare = slug.split('@').next().unwrap_or_default();
        let entries = std::fs::read_dir(base.join(MANIFEST_DIR)).ok()?;
        let mut best: Option<(String, Manifest)> = None;
        for entry in entries.filter_map(|e| e.ok()) {
            let path = entry.path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let Ok(manifest) = Manifest::load(&path) else { continue };
            let (keep, updated) = {
                let data = manifest.data.lock().expect("manifest lock");
                let completed = matches!(data.get("completed"), Some(Value::Bool(true)));
                let same_slug = data.get("slug").and_then(Value::as_str) == Some(bare);
                let same_inputs = inputs.is_none_or(|inputs| {
                    data.get("inputs").and_then(Value::as_array).is_some_and(|listed| {
                        listed.len() == inputs.len() && listed.iter().zip(inputs).all(|(a, b)| a.as_str() == Some(b.as_str()))
                    })
                });
                (!completed && same_slug && same_inputs, data.get("updatedAt").and_then(Value::as_str).unwrap_or_default().to_string())
            };
            if keep && best.as_ref().is_none_or(|(at, _)| updated > *at) {
                best = Some((updated, manifest));
            }
        }
        best.map(|(_, manifest)| manifest)
    }

    /// A member of the manifest.
    pub fn get(&self, key: &str) -> Value {
        self.data.lock().expect("manifest lock").get(key).cloned().unwrap_or(Value::Null)
    }

    /// Its batch id.
    pub fn batch_id(&self) -> String {
        self.get("batchId").as_str().unwrap_or_default().to_string()
    }

    /// Its flags.
    pub fn flags(&self) -> Result<Flags> {
        Flags::from_json(&self.get("flags"))
    }

    /// Chunks recorded.
    pub fn chunk_count(&self) -> usize {
        self.get("chunks").as_array().map_or(0, Vec::len)
    }

    fn save_locked(&self, data: &mut Map) -> Result<()> {
        data.insert("updatedAt".into(), Value::Str(now()));
        let text = format!(
            "{}\n",
            json::dumps(
                &Value::Object(data.clone()),
                DumpOptions { sort_keys: false, ensure_ascii: true, indent: Some(1), compact: false }
            )
        );
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(|e| ClientError::io(&tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| ClientError::io(&self.path, e))
    }

    /// Write it (atomically: a temporary file renamed over it).
    pub fn save(&self) -> Result<()> {
        let mut data = self.data.lock().expect("manifest lock");
        self.save_locked(&mut data)
    }

    /// Record a chunk (replacing one of its ordinal), in ordinal order, and save.
    pub fn record(&self, entry: Value) -> Result<()> {
        let mut data = self.data.lock().expect("manifest lock");
        let ordinal = entry.get("ordinal").and_then(Value::as_i64);
        let mut chunks: Vec<Value> = data
            .get("chunks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.get("ordinal").and_then(Value::as_i64) != ordinal)
            .collect();
        chunks.push(entry);
        chunks.sort_by_key(|c| c.get("ordinal").and_then(Value::as_i64).unwrap_or(0));
        data.insert("chunks".into(), Value::Array(chunks));
        self.save_locked(&mut data)
    }

    /// Whether chunk `ordinal` with `digest` is recorded as uploaded.
    pub fn uploaded(&self, ordinal: usize, digest: &str) -> bool {
        self.get("chunks").as_array().is_some_and(|chunks| {
            chunks.iter().any(|c| {
                c.get("ordinal").and_then(Value::as_i64) == Some(ordinal as i64)
                    && c.get("digest").and_then(Value::as_str) == Some(digest)
                    && matches!(c.get("uploaded"), Some(Value::Bool(true)))
            })
        })
    }

    /// Mark it complete and save.
    pub fn complete(&self) -> Result<()> {
        let mut data = self.data.lock().expect("manifest lock");
        data.insert("completed".into(), Value::Bool(true));
        self.save_locked(&mut data)
    }
}

// ------------------------------------------------------------------ the flow

/// Where progress goes: lines (on a terminal), and input bytes read.
pub trait Progress: Sync {
    /// One progress line.
    fn line(&self, text: &str);
    /// `n` more input bytes were read.
    fn advance(&self, _n: u64) {}
}

/// No progress at all (what a pipe gets, as in the original).
pub struct Quiet;

impl Progress for Quiet {
    fn line(&self, _: &str) {}
}

/// Progress lines on stderr when it is a terminal; silence otherwise (the original's
/// `tty_progress`).
pub struct TtyLines;

impl Progress for TtyLines {
    fn line(&self, text: &str) {
        if std::io::stderr().is_terminal() {
            eprintln!("{text}");
        }
    }
}

/// A bar over the input files' bytes with the lines above it, on a terminal only.
pub struct Bar {
    bar: Option<indicatif::ProgressBar>,
}

impl Bar {
    /// A bar for these inputs when stderr is a terminal (else silence).
    pub fn for_inputs(inputs: &[String]) -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar { bar: None };
        }
        let total: u64 = inputs.iter().filter(|i| i.as_str() != "-").filter_map(|i| std::fs::metadata(i).ok()).map(|m| m.len()).sum();
        let bar = indicatif::ProgressBar::with_draw_target(Some(total.max(1)), indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message("uploading");
        Bar { bar: Some(bar) }
    }

    /// Take the bar off the screen.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Bar {
    fn line(&self, text: &str) {
        if let Some(bar) = &self.bar {
            bar.println(text);
        }
    }

    fn advance(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }
}

/// How an import runs.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Flags of a new batch (a resumed one takes its manifest's).
    pub flags: Flags,
    /// Chunk uploads in flight.
    pub parallel: usize,
    /// Pick up the newest incomplete upload of this world and these inputs.
    pub resume: bool,
    /// The version's change reason.
    pub message: Option<String>,
    /// Where `.gateway/imports/` is (the working directory).
    pub base: PathBuf,
}

/// Register one compressed chunk, upload it unless the hub holds its digest, mark it
/// uploaded, record it.
fn upload(client: &WorldDataClient, slug: &str, batch_id: &str, chunk: &Chunk, manifest: &Manifest) -> Result<String> {
    let registered = client.register_chunk(slug, batch_id, chunk)?;
    let chunk_id = registered.get("chunkId").cloned().unwrap_or(Value::Null);
    let id_text = chunk_id.as_str().unwrap_or_default().to_string();
    if !matches!(registered.get("uploaded"), Some(v) if crate::client::truthy(v)) {
        let url = registered.get("uploadUrl").and_then(Value::as_str).filter(|u| !u.is_empty()).ok_or_else(|| {
            ClientError::BadAnswer(format!("chunk {}: the platform gave neither uploaded nor an uploadUrl", chunk.ordinal))
        })?;
        let headers = match registered.get("uploadHeaders") {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) if map.values().all(|v| v.as_str().is_some()) => Some(map),
            Some(_) => {
                return Err(ClientError::BadAnswer(format!("chunk {}: uploadHeaders must map header names to strings", chunk.ordinal)))
            }
        };
        client.put_object(url, &chunk.path, chunk.bytes, headers)?;
        client.mark_uploaded(slug, batch_id, &id_text)?;
    }
    manifest.record(object([
        ("ordinal", Value::Int(chunk.ordinal as i64)),
        ("digest", Value::str(&chunk.digest)),
        ("bytes", Value::Int(chunk.bytes as i64)),
        ("rows", Value::Int(chunk.rows as i64)),
        ("entity", chunk.entity.as_ref().map_or(Value::Null, Value::str)),
        ("chunkId", chunk_id),
        ("uploaded", Value::Bool(true)),
    ]))?;
    let _ = std::fs::remove_file(&chunk.path);
    Ok(id_text)
}

/// Stream `inputs` into chunks, upload them, complete the batch. Returns the manifest;
/// the caller polls the batch with [`wait`].
pub fn import_rows(
    client: &WorldDataClient,
    slug: &str,
    inputs: &[String],
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<Manifest> {
    let bare = slug.split('@').next().unwrap_or_default();
    let manifest = if options.resume {
        let found = Manifest::find(&options.base, slug, Some(inputs)).ok_or_else(|| {
            fail(format!("nothing to resume: no incomplete manifest for {slug} under {}", options.base.join(MANIFEST_DIR).display()))
        })?;
        let batch_id = found.batch_id();
        let status = client.status(slug, &batch_id)?;
        let state = status.get("state").cloned().unwrap_or(Value::Null);
        if !state.as_str().is_some_and(|s| RESUMABLE.contains(&s)) {
            return Err(fail(format!(
                "batch {batch_id} is {}; only an open or uploading batch resumes",
                state.as_str().map_or_else(|| json::python_str(&state), str::to_string)
            )));
        }
        progress.line(&format!("resuming batch {batch_id} ({} chunks recorded)", found.chunk_count()));
        found
    } else {
        let opened = client.open_batch(slug, &options.flags, options.message.as_deref())?;
        let batch_id = opened
            .get("batchId")
            .and_then(Value::as_str)
            .filter(|b| !b.is_empty())
            .ok_or_else(|| ClientError::BadAnswer("the platform opened no batch (no batchId in the answer)".into()))?
            .to_string();
        if let Some(limit) = opened.get("limits").and_then(|l| l.get("chunkBytes")).and_then(Value::as_i64) {
            if options.flags.chunk_bytes as i64 > limit {
                return Err(fail(format!("--chunk-bytes {} exceeds the platform's chunk limit {limit}", options.flags.chunk_bytes)));
            }
        }
        let manifest = Manifest::create(&options.base, &batch_id, bare, client.host(), &options.flags, inputs)?;
        progress.line(&format!("batch {batch_id} open"));
        manifest
    };
    let flags = manifest.flags()?;
    let batch_id = manifest.batch_id();
    let workdir = gateway_world::data::tempfile_dir::Scratch::new("gateway-chunks").map_err(|e| fail(e.to_string()))?;
    let parallel = options.parallel.max(1);
    let (sender, receiver) = std::sync::mpsc::sync_channel::<RawChunk>(parallel);
    let receiver = Arc::new(Mutex::new(receiver));
    let error: Arc<Mutex<Option<ClientError>>> = Arc::new(Mutex::new(None));
    let failed = || error.lock().expect("error lock").is_some();
    let cut = std::thread::scope(|scope| {
        for _ in 0..parallel {
            let (receiver, error, manifest, batch_id) = (receiver.clone(), error.clone(), &manifest, batch_id.as_str());
            scope.spawn(move || loop {
                let next = receiver.lock().expect("queue lock").recv();
                let Ok(raw) = next else { break };
                if error.lock().expect("error lock").is_some() {
                    let _ = std::fs::remove_file(&raw.path);
                    continue;
                }
                let done = compress_chunk(&raw).map_err(|e| fail(e.to_string())).and_then(|chunk| {
                    if manifest.uploaded(chunk.ordinal, &chunk.digest) {
                        let _ = std::fs::remove_file(&chunk.path);
                        progress.line(&format!("chunk {}: already uploaded ({} rows)", chunk.ordinal, chunk.rows));
                        return Ok(());
                    }
                    let id = upload(client, slug, batch_id, &chunk, manifest)?;
                    progress.line(&format!("chunk {}: uploaded {} rows, {} bytes ({id})", chunk.ordinal, chunk.rows, chunk.bytes));
                    Ok(())
                });
                if let Err(failure) = done {
                    let mut slot = error.lock().expect("error lock");
                    if slot.is_none() {
                        *slot = Some(failure);
                    }
                }
            });
        }
        let chunk_options = ChunkOptions {
            chunk_bytes: flags.chunk_bytes,
            chunk_rows: flags.chunk_rows,
            entity: flags.entity.clone(),
            ..ChunkOptions::default()
        };
        let advance = |n: u64| progress.advance(n);
        let cut = cut_chunks(inputs, workdir.path(), &chunk_options, Some(&advance), &mut |raw| {
            if failed() {
                let _ = std::fs::remove_file(&raw.path);
                return Ok(Flow::Stop);
            }
            // Blocks while `parallel` chunks wait: the chunks on disk stay bounded.
            if sender.send(raw).is_err() {
                return Ok(Flow::Stop);
            }
            Ok(Flow::More)
        });
        drop(sender);
        cut
    });
    if let Some(failure) = error.lock().expect("error lock").take() {
        return Err(failure);
    }
    cut.map_err(|e| fail(e.to_string()))?;
    client.complete(slug, &batch_id)?;
    manifest.complete()?;
    progress.line(&format!("batch {batch_id} complete: {} chunks", manifest.chunk_count()));
    Ok(manifest)
}

/// Poll the batch every [`POLL_SECONDS`] until a terminal state, one progress line per
/// change of state or phase.
pub fn wait(client: &WorldDataClient, slug: &str, batch_id: &str, progress: &dyn Progress) -> Result<Value> {
    let mut last: Option<(String, String)> = None;
    loop {
        let status = client.status(slug, batch_id)?;
        let state = status.get("state").cloned().unwrap_or(Value::Null);
        let phase = status.get("progress").and_then(|p| p.get("phase")).cloned().unwrap_or(Value::Null);
        let seen = (json::canonical(&state), json::canonical(&phase));
        if last.as_ref() != Some(&seen) {
            let shown = state.as_str().map_or_else(|| json::python_str(&state), str::to_string);
            match phase.as_str().filter(|p| !p.is_empty()) {
                Some(phase) => progress.line(&format!("{shown} ({phase})")),
                None => progress.line(&shown),
            }
            last = Some(seen);
        }
        if state.as_str().is_some_and(|s| TERMINAL.contains(&s)) {
            return Ok(status);
        }
        std::thread::sleep(Duration::from_secs(POLL_SECONDS));
    }
}

/// The batch's refusals as a JSONL report at `destination`: the hub's full report when
/// it offers one, else the records the status carries. Returns the refusal count.
pub fn write_status_report(client: &WorldDataClient, status: &Value, destination: &Path) -> Result<usize> {
    if let Some(url) = status.get("reportUrl").and_then(Value::as_str).filter(|u| !u.is_empty()) {
        let text = client.fetch_report(url)?;
        std::fs::write(destination, text).map_err(|e| ClientError::io(destination, e))?;
        return Ok(status.get("refusalCount").and_then(Value::as_i64).unwrap_or(0).max(0) as usize);
    }
    let records = status.get("refusals").and_then(Value::as_array).cloned().unwrap_or_default();
    std::fs::write(destination, report_text(&records)).map_err(|e| ClientError::io(destination, e))?;
    Ok(records.len())
}

/// Refusal records as the report's JSONL: at most 10,000, then `{"truncated": true, "total": N}`.
pub fn report_text(records: &[Value]) -> String {
    let cap = gateway_world::check::REPORT_CAP;
    let mut out = String::new();
    for record in records.iter().take(cap) {
        out.push_str(&json::dumps(record, gateway_world::check::ROW_LINE));
        out.push('\n');
    }
    if records.len() > cap {
        let marker = object([("truncated", Value::Bool(true)), ("total", Value::Int(records.len() as i64))]);
        out.push_str(&json::dumps(&marker, gateway_world::check::ROW_LINE));
        out.push('\n');
    }
    out
}

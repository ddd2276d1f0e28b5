//! The hub's side of live sessions: where sessions run (the World Host this hub
//! embeds, and hosts that register by heartbeat), how the hub reaches them (the
//! same typed control requests either way: run in this process, or sent as HTTP),
//! how hosts fetch bundles and move exports (HTTP with safe extraction; the embedded
//! host and the catalog read bundles from the hub's object store in place), and the
//! rubric judge.
//!
//! The session and task routes themselves are in `server/sessions.rs` and
//! `server/tasks.rs`; this module holds no route.

use crate::error::HubError;
use crate::store::ObjectStore;
use gateway_host::error::TransferError;
use gateway_host::version::{Fetch, FetchError, VersionCache, VersionFiles};
use gateway_host::{ControlRequest, HostConfig, WorldHost};
use gateway_world::json::{self, object, Value};
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The HTTP client heartbeats go through.
pub type HttpClient = reqwest::Client;

/// The most a bundle may weigh when a host fetches it.
pub const MAX_BUNDLE_BYTES: u64 = 1024 * 1024 * 1024;
/// A remote host not heard from for this long is not given new sessions.
pub const HOST_STALE_SECONDS: f64 = 30.0;
/// How a bundle locator names an object of the hub's own store (see [`stored_bundle`]).
pub const STORED_BUNDLE: &str = "hub-object:";

/// The locator of a stored bundle for this hub's own host and catalog: read from the
/// object store in place, never fetched over HTTP from the hub itself. A remote host
/// is handed a presigned URL instead.
pub fn stored_bundle(object_key: &str) -> String {
    format!("{STORED_BUNDLE}{object_key}")
}

/// Live sessions: the embedded host and the control-plane secret.
pub struct Worlds {
    /// The host this hub runs in its own process (None: remote hosts only).
    pub embedded: Option<Arc<WorldHost>>,
    /// The embedded host's data-plane router, built once (a clone per request is an
    /// `Arc` bump); the hub logs the requests itself, so it carries no log of its own.
    pub embedded_routes: Option<axum::Router>,
    /// The shared control-plane secret: `X-Worker-Secret` of run workers. Remote hosts
    /// are registered and called under credentials of their own
    /// ([`crate::host_credentials`]), never under this one.
    pub secret: String,
    /// This process's embedded host, as sessions record it: the pid and a random id,
    /// so a session of a host that is gone (a restart) is told from one still held.
    pub instance: String,
    /// The machine this process runs on, as `<hostname>/<boot id>`: a session's host is
    /// judged gone only by a hub on the same machine (a reboot changes the boot id).
    pub machine: String,
    /// Versions read for their contract and connector (checks, tools), without
    /// running them: the embedded host's cache when there is one.
    catalog: Option<VersionCache>,
    http: reqwest::Client,
}

impl std::fmt::Debug for Worlds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worlds").field("embedded", &self.embedded.is_some()).finish()
    }
}

/// Where a session runs.
#[derive(Clone, PartialEq)]
pub enum HostLink {
    /// In this process.
    Embedded,
    /// A registered World Host: its control-plane URL, its name and the credential
    /// the hub presents there.
    Remote {
        /// Its control-plane URL.
        url: String,
        /// The name its credential was issued under.
        name: String,
        /// Its credential (`X-Host-Secret`).
        secret: String,
    },
}

impl std::fmt::Debug for HostLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostLink::Embedded => f.write_str("Embedded"),
            HostLink::Remote { url, name, .. } => write!(f, "Remote({name} at {url})"),
        }
    }
}

impl HostLink {
    /// As stored with a session: `embedded` or the host's URL.
    pub fn name(&self) -> String {
        match self {
            HostLink::Embedded => "embedded".into(),
            HostLink::Remote { url, .. } => url.clone(),
        }
    }
}

/// A control call refused by the host: its status and body.
#[derive(Debug)]
pub struct HostRefusal {
    /// 400, 404 (`unknown_session`), 503 (`at_capacity`, `draining`), 502.
    pub status: u16,
    /// `{error, detail}`.
    pub body: Value,
}

impl HostRefusal {
    /// The refusal's text, as a call's `error`.
    pub fn message(&self) -> String {
        match self.body.get("detail").and_then(Value::as_str) {
            Some(detail) => detail.to_string(),
            None => json::canonical(&self.body),
        }
    }
}

impl Worlds {
    /// Live sessions with an embedded host under `root` (bundles read from `objects`),
    /// world code run as `workers` say (always confined on a hub: see `HubConfig`).
    pub fn embedded(root: &Path, secret: String, workers: gateway_serve::handlers::WorkerOptions, objects: Arc<dyn ObjectStore>) -> Worlds {
        // One directory per process: hub processes sharing a data directory must not
        // clear each other's sessions; those of processes that are gone are removed.
        if let Ok(entries) = std::fs::read_dir(root) {
            for entry in entries.flatten() {
                let pid = entry.file_name().to_string_lossy().strip_prefix("pid-").and_then(|p| p.parse::<u32>().ok());
                if pid.is_some_and(|pid| pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let mut config = HostConfig::local(root.join(format!("pid-{}", std::process::id())));
        config.fetch = store_fetch(objects);
        config.objects = Arc::new(HttpObjects);
        config.workers = workers;
        if let Some(max) = std::env::var("WORLDS_HOST_MAX_SESSIONS").ok().and_then(|v| v.parse().ok()) {
            config.max_sessions = max;
        }
        if let Some(lease) = std::env::var("WORLDS_HOST_LEASE_S").ok().and_then(|v| v.parse().ok()) {
            config.lease_seconds = lease;
        }
        let host = Arc::new(WorldHost::new(config));
        let routes = gateway_host::server::routes(
            host.clone(),
            gateway_host::server::ServerConfig { secret: String::new(), domain: "localhost".into() },
        );
        Worlds {
            embedded: Some(host),
            embedded_routes: Some(routes),
            secret,
            instance: format!("{}-{}", std::process::id(), gateway_common::random::random_hex(8)),
            machine: machine(),
            catalog: None,
            http: reqwest::Client::new(),
        }
    }

    /// Live sessions on remote hosts only; versions are read into a catalog under `root`
    /// (bundles read from `objects`).
    pub fn remote_only(root: &Path, secret: String, objects: Arc<dyn ObjectStore>) -> Worlds {
        let catalog = VersionCache::catalog(root.join(format!("catalog-{}", std::process::id())), store_fetch(objects));
        Worlds {
            embedded: None,
            embedded_routes: None,
            secret,
            instance: format!("{}-{}", std::process::id(), gateway_common::random::random_hex(8)),
            machine: machine(),
            catalog: Some(catalog),
            http: reqwest::Client::new(),
        }
    }

    /// The version, read once: from the embedded host's cache or the catalog.
    pub fn version(&self, id: &str, bundle_url: &str) -> Result<Arc<gateway_host::version::Version>, gateway_host::HostError> {
        self.versions()?.ensure(id, bundle_url)
    }

    /// A version's files (extracted, compiled), from the same cache as
    /// [`Worlds::version`]: one fetch and one compile of a version per process,
    /// whoever reads it first (a session, a task check, the world's data).
    pub fn version_files(&self, id: &str, bundle_url: &str) -> Result<Arc<VersionFiles>, gateway_host::version::PrepareError> {
        match self.versions() {
            Ok(versions) => versions.files(id, bundle_url),
            Err(refused) => Err(gateway_host::version::PrepareError::Io(std::io::Error::other(refused.to_string()))),
        }
    }

    /// The cache versions are read through: the embedded host's, else the catalog.
    pub fn versions(&self) -> Result<&VersionCache, gateway_host::HostError> {
        match (&self.embedded, &self.catalog) {
            (Some(host), _) => Ok(&host.versions),
            (None, Some(catalog)) => Ok(catalog),
            (None, None) => Err(gateway_host::error::refuse("host", "this hub reads no world versions")),
        }
    }

    /// One control-plane request on the host a session runs on: the embedded host runs
    /// it in this process, a remote one gets it as its HTTP call (`/__host/…`).
    pub async fn control(&self, link: &HostLink, request: ControlRequest) -> Result<Result<Value, HostRefusal>, HubError> {
        match link {
            HostLink::Embedded => {
                let Some(host) = self.embedded.clone() else {
                    return Err(HubError::NoEmbeddedHost);
                };
                let answer = tokio::task::spawn_blocking(move || host.control(request))
                    .await
                    .map_err(|source| HubError::WorkerIn { what: "the host failed", source })?;
                Ok(answer.map_err(|refused| {
                    let (status, body) = refused.answer();
                    HostRefusal { status, body }
                }))
            }
            HostLink::Remote { url, secret, .. } => {
                let (method, path, body) = request.to_http();
                let request = match method {
                    "GET" => self.http.get(format!("{url}{path}")),
                    "DELETE" => self.http.delete(format!("{url}{path}")),
                    _ => self.http.post(format!("{url}{path}")),
                };
                let sent = request
                    .header("x-host-secret", secret)
                    .header("content-type", "application/json")
                    .body(json::canonical(&body))
                    .timeout(Duration::from_secs(300))
                    .send()
                    .await;
                let response = match sent {
                    Ok(response) => response,
                    Err(error) => {
                        let body = object([("error", Value::str("host unreachable")), ("detail", Value::Str(format!("{url}: {error}")))]);
                        return Ok(Err(HostRefusal { status: 502, body }));
                    }
                };
                let status = response.status().as_u16();
                let text = response.text().await.unwrap_or_default();
                let value = json::parse(&text).map(|p| p.value).unwrap_or(Value::Str(text));
                Ok(if status == 200 { Ok(value) } else { Err(HostRefusal { status, body: value }) })
            }
        }
    }
}

/// `<hostname>/<boot id>` of this machine (empty parts where /proc does not say).
fn machine() -> String {
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
    format!("{}/{}", read("/proc/sys/kernel/hostname"), read("/proc/sys/kernel/random/boot_id"))
}

/// Tell the platform at `platform` this host is alive and what it holds, every
/// `every`, until the returned task is aborted (and once more at once).
pub fn start_heartbeat(host: Arc<WorldHost>, platform: String, secret: String, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let http = reqwest::Client::new();
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let _ = heartbeat_once(&http, &host, &platform, &secret).await;
        }
    })
}

/// One heartbeat: `POST {platform}/api/public/world-hosts` with the host's stats; a
/// platform that cannot be reached ([`HubError::Unreachable`]) or refuses it
/// ([`HubError::PlatformRefused`]) says so.
pub async fn heartbeat_once(http: &reqwest::Client, host: &WorldHost, platform: &str, secret: &str) -> Result<(), HubError> {
    let response = http
        .post(format!("{}/api/public/world-hosts", platform.trim_end_matches('/')))
        .header("x-host-secret", secret)
        .header("content-type", "application/json")
        .body(json::canonical(&host.stats()))
        .timeout(Duration::from_secs(5))
        .send()
        .await?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(HubError::PlatformRefused(response.status()))
    }
}

/// The fetch of this hub's own host and catalog: a [`stored_bundle`] locator read from
/// `objects` (the hub's own error handed back, its status kept), anything else as
/// [`fetch_bundle`] fetches it.
fn store_fetch(objects: Arc<dyn ObjectStore>) -> Fetch {
    // Reads run on the blocking pool (the host's operations are synchronous); the
    // store's async reads go through the runtime the hub serves on.
    let runtime = tokio::runtime::Handle::try_current().ok();
    Arc::new(move |locator: &str, dest: &Path| match locator.strip_prefix(STORED_BUNDLE) {
        Some(key) => read_stored_bundle(objects.as_ref(), runtime.as_ref(), key, dest).map_err(FetchError::from),
        None => fetch_bundle(locator, dest),
    })
}

/// A stored bundle extracted safely into `dest` within the archive limits: a local
/// store's file in place, any other store's object streamed to a scratch file first
/// (capped at [`MAX_BUNDLE_BYTES`], as a download is).
fn read_stored_bundle(objects: &dyn ObjectStore, runtime: Option<&tokio::runtime::Handle>, key: &str, dest: &Path) -> Result<(), HubError> {
    let limits = gateway_bundle::extract::ExtractLimits::from_env()?;
    let missing = || HubError::MissingObject(key.to_string());
    if let Some(file) = objects.local_file(key) {
        let size = std::fs::metadata(&file).map_err(|_| missing())?.len();
        if size > MAX_BUNDLE_BYTES {
            return Err(HubError::TooLarge(format!("the bundle is larger than {MAX_BUNDLE_BYTES} bytes")));
        }
        gateway_bundle::extract::safe_extract_file(&file, dest, limits)?;
        return Ok(());
    }
    let runtime = tokio::runtime::Handle::try_current().ok().or_else(|| runtime.cloned()).ok_or(HubError::NoRuntime)?;
    let download = gateway_common::temp::Scratch::new("bundle")?;
    let tgz = download.path().join("bundle.tar.gz");
    // A thread of its own: blocking on the runtime is refused on one of its workers.
    std::thread::scope(|scope| {
        scope.spawn(|| runtime.block_on(copy_object(objects, key, &tgz))).join().unwrap_or_else(|_| Err(missing()))
    })?;
    gateway_bundle::extract::safe_extract_file(&tgz, dest, limits)?;
    Ok(())
}

/// An object copied into the file `dest`, capped at [`MAX_BUNDLE_BYTES`].
async fn copy_object(objects: &dyn ObjectStore, key: &str, dest: &Path) -> Result<(), HubError> {
    use futures_util::StreamExt as _;
    let mut stream = objects.open(key).await?.ok_or_else(|| HubError::MissingObject(key.to_string()))?;
    let mut file = std::fs::File::create(dest).map_err(|e| HubError::io(dest, e))?;
    let mut copied = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        copied += chunk.len() as u64;
        if copied > MAX_BUNDLE_BYTES {
            return Err(HubError::TooLarge(format!("the bundle is larger than {MAX_BUNDLE_BYTES} bytes")));
        }
        file.write_all(&chunk).map_err(|e| HubError::io(dest, e))?;
    }
    file.flush().map_err(|e| HubError::io(dest, e))
}

/// Fetch a bundle tarball over HTTP, streamed to a file under the process's temporary
/// directory (capped at [`MAX_BUNDLE_BYTES`]), and extract it safely into `dest`
/// within the archive limits ([`gateway_bundle::extract::ExtractLimits::from_env`]).
pub fn fetch_bundle(url: &str, dest: &Path) -> Result<(), FetchError> {
    if url.starts_with("file://") {
        return gateway_host::version::local_fetch(url, dest);
    }
    let limits = gateway_bundle::extract::ExtractLimits::from_env().map_err(|e| e.to_string())?;
    let response = reqwest::blocking::Client::new()
        .get(url)
        .timeout(Duration::from_secs(300))
        .send()
        .map_err(|e| e.to_string())?
        .error_for_status()
        .map_err(|e| e.to_string())?;
    let download = gateway_common::temp::Scratch::new("bundle").map_err(|e| e.to_string())?;
    let tgz = download.path().join("bundle.tar.gz");
    let mut file = std::fs::File::create(&tgz).map_err(|e| e.to_string())?;
    let copied = std::io::copy(&mut response.take(MAX_BUNDLE_BYTES + 1), &mut file).map_err(|e| e.to_string())?;
    if copied > MAX_BUNDLE_BYTES {
        return Err(format!("the bundle is larger than {MAX_BUNDLE_BYTES} bytes").into());
    }
    gateway_bundle::extract::safe_extract_file(&tgz, dest, limits).map_err(|e| e.to_string())?;
    Ok(())
}

/// Exports moved over HTTP (presigned URLs), `file://` for a host on one machine.
#[derive(Debug, Default)]
pub struct HttpObjects;

impl gateway_host::host::Objects for HttpObjects {
    fn download(&self, url: &str, dest: &Path) -> Result<(), TransferError> {
        if url.starts_with("file://") {
            return gateway_host::host::LocalObjects.download(url, dest);
        }
        let mut response = reqwest::blocking::Client::new()
            .get(url)
            .timeout(Duration::from_secs(300))
            .send()
            .and_then(|r| r.error_for_status())
            .map_err(|e| TransferError::Remote(e.into()))?;
        let mut file = std::fs::File::create(dest)?;
        std::io::copy(&mut response, &mut file)?;
        Ok(())
    }

    fn upload(&self, url: &str, path: &Path, sha256_hex: &str, size: u64) -> Result<(), TransferError> {
        if url.starts_with("file://") {
            return gateway_host::host::LocalObjects.upload(url, path, sha256_hex, size);
        }
        use base64::Engine as _;
        let digest = hex::decode(sha256_hex)?;
        let file = std::fs::File::open(path)?;
        reqwest::blocking::Client::new()
            .put(url)
            .header("content-type", gateway_host::session::EXPORT_CONTENT_TYPE)
            .header("content-length", size)
            .header("x-amz-checksum-sha256", base64::engine::general_purpose::STANDARD.encode(digest))
            .body(reqwest::blocking::Body::sized(file, size))
            .timeout(Duration::from_secs(600))
            .send()
            .and_then(|r| r.error_for_status())
            .map(|_| ())
            .map_err(|e| TransferError::Remote(e.into()))
    }
}

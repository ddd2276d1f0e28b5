//! The hub's HTTP API (`/api/public/benchmark-containers/*` with evaluations, world
//! sessions and tasks, environments and task sets, the agents platform: secrets, agents,
//! datasets, runs, agent builds and the release gate) and its object routes, on axum. Every answer is a non-empty JSON object; every refusal is
//! `{"error": <code>, "message": <what happened and what to do>}` with its status.
//! `/` and `/ui/…` are the web pages (`web.rs`), HTML rather than JSON.

use crate::error::HubError;
use crate::store::*;
use crate::util::{new_id, now_iso, now_secs};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use base64::Engine as _;
pub(crate) use gateway_common::url::{quote_segment, unquote_plus};
use gateway_world::json::{self, object, DumpOptions, Map, Value};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;

mod agents;
mod captures;
mod connectors;
mod environments;
mod evaluations;
mod objects;
mod openapi;
mod refs;
mod release;
mod runs;
mod sessions;
mod settings;
mod task_sets;
mod tasks;
mod versions;
mod web;
mod world_data;

use objects::*;
use refs::*;
use settings::*;
use versions::*;
const API: &str = "/api/public/benchmark-containers";

/// Server limits and settings.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest JSON request body.
    pub max_json_bytes: usize,
    /// Largest object (tarball or wheel) upload.
    pub max_object_bytes: usize,
    /// How long presigned URLs stay valid, in seconds.
    pub url_ttl_secs: u64,
    /// Largest world data chunk (`limits.chunkBytes`): its gzipped upload, and its
    /// JSONL once gunzipped.
    pub chunk_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_json_bytes: 32 * 1024 * 1024,
            max_object_bytes: 1024 * 1024 * 1024,
            url_ttl_secs: 3600,
            chunk_bytes: gateway_world::chunks::CHUNK_BYTES,
        }
    }
}

/// Key material kept under `--data/keys`: the URL-signing key and the secrets key.
#[derive(Clone)]
pub struct Keys {
    signing: Vec<u8>,
    secrets: Vec<u8>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

impl Keys {
    /// Load the keys from `dir`, creating them (mode 0600) on first use.
    pub fn load_or_create(dir: &Path) -> Result<Keys, HubError> {
        std::fs::create_dir_all(dir).map_err(|e| HubError::io(dir, e))?;
        let read = |name: &str| -> Result<Vec<u8>, HubError> {
            let path = dir.join(name);
            match std::fs::read(&path) {
                Ok(bytes) if bytes.len() == 32 => Ok(bytes),
                Ok(_) => Err(HubError::Storage(format!("{} is not a 32-byte key", path.display()))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let key = crate::util::random_bytes(32);
                    write_private(&path, &key)?;
                    Ok(key)
                }
                Err(e) => Err(HubError::io(&path, e)),
            }
        };
        Ok(Keys { signing: read("signing.key")?, secrets: read("secrets.key")? })
    }

    fn sign(&self, text: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.signing).expect("any key length");
        mac.update(text.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Encrypt a secret value (AES-256-GCM, random nonce, bound to its container and key).
    pub fn seal(&self, aad: &str, value: &[u8]) -> Result<Vec<u8>, HubError> {
        let cipher = Aes256Gcm::new_from_slice(&self.secrets).map_err(|e| HubError::Storage(e.to_string()))?;
        let nonce = crate::util::random_bytes(12);
        let mut out = nonce.clone();
        let sealed = cipher
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: value, aad: aad.as_bytes() })
            .map_err(|_| HubError::Storage("encryption failed".into()))?;
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Decrypt a sealed value.
    pub fn open(&self, aad: &str, sealed: &[u8]) -> Result<Vec<u8>, HubError> {
        if sealed.len() < 12 {
            return Err(HubError::Storage("sealed secret too short".into()));
        }
        let cipher = Aes256Gcm::new_from_slice(&self.secrets).map_err(|e| HubError::Storage(e.to_string()))?;
        cipher
            .decrypt(Nonce::from_slice(&sealed[..12]), Payload { msg: &sealed[12..], aad: aad.as_bytes() })
            .map_err(|_| HubError::Storage("secret does not decrypt with this hub's key".into()))
    }
}

/// Write a new file readable by its owner only (0600).
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<(), HubError> {
    write_private(path, bytes)
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), HubError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| HubError::io(path, e))?;
    file.write_all(bytes).map_err(|e| HubError::io(path, e))?;
    file.sync_all().map_err(|e| HubError::io(path, e))
}

/// sha256 hex of a secret key: how key secrets are kept at rest.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A new `(public, secret)` key pair: `pk-lf-…` / `sk-lf-…` with 128 random bits each.
pub fn new_key_pair() -> (String, String) {
    (format!("pk-lf-{}", hex::encode(crate::util::random_bytes(16))), format!("sk-lf-{}", hex::encode(crate::util::random_bytes(16))))
}

/// Everything a request handler needs.
#[derive(Clone)]
pub struct Hub {
    /// Metadata.
    pub meta: Arc<dyn MetaStore>,
    /// Bundles.
    pub objects: Arc<dyn ObjectStore>,
    /// Key material.
    pub keys: Keys,
    /// The base URL put in presigned URLs; `None` = from the request's Host header.
    pub public_url: Option<String>,
    /// Limits.
    pub limits: Limits,
    /// Live sessions (an embedded World Host and registered ones); None: no sessions.
    pub worlds: Option<Arc<crate::worlds::Worlds>>,
    /// Where world data batches are applied (extracted versions, chunks, snapshots);
    /// None: under the process's temporary directory.
    pub scratch: Option<std::path::PathBuf>,
}

type Answer = Result<(u16, Value), HubError>;

fn ok(value: Value) -> Answer {
    Ok((200, value))
}

fn json_response(status: u16, value: &Value) -> Response {
    let body = json::dumps(value, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false });
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    response
}

/// `response`, telling the client the connection ends with it (a refused body may be
/// left partly unread, so the connection cannot carry another request).
fn closing(mut response: Response) -> Response {
    response.headers_mut().insert("connection", HeaderValue::from_static("close"));
    response
}

fn error_response(error: &HubError) -> Response {
    let mut response =
        json_response(error.status(), &object([("error", Value::str(error.code())), ("message", Value::str(error.to_string()))]));
    if error.status() == 401 {
        response.headers_mut().insert("www-authenticate", HeaderValue::from_static("Basic realm=\"gateway-hub\""));
    }
    response
}

/// The axum router of a hub.
pub fn router(hub: Hub) -> axum::Router {
    axum::Router::new().fallback(answer).with_state(Arc::new(hub))
}

/// Serve until the process ends.
pub async fn serve(hub: Hub, addr: std::net::SocketAddr) -> Result<(), HubError> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| HubError::Storage(format!("bind {addr}: {e}")))?;
    serve_on(hub, listener).await
}

/// Serve on a bound listener.
pub async fn serve_on(hub: Hub, listener: tokio::net::TcpListener) -> Result<(), HubError> {
    serve_until(hub, listener, std::future::pending()).await
}

/// Serve on a bound listener until `shutdown` completes (requests in flight are
/// answered first); the embedded World Host's expired leases are swept meanwhile.
pub async fn serve_until(
    hub: Hub,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), HubError> {
    let sweeper = hub.worlds.as_ref().and_then(|w| w.embedded.clone()).map(|host| tokio::spawn(gateway_host::server::sweep(host)));
    let served = axum::serve(listener, router(hub)).with_graceful_shutdown(shutdown).await;
    if let Some(sweeper) = sweeper {
        sweeper.abort();
    }
    served.map_err(|e| HubError::Storage(e.to_string()))
}

async fn answer(State(hub): State<Arc<Hub>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query = parse_query(parts.uri.query().unwrap_or(""));
    let is_object = path.starts_with("/objects/");
    let limit = if is_object { hub.limits.max_object_bytes } else { hub.limits.max_json_bytes };
    if let Some(length) = parts.headers.get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok()) {
        if length > limit as u64 {
            let error = HubError::TooLarge(format!("request body of {length} bytes is over the {limit}-byte limit"));
            return closing(error_response(&error));
        }
    }
    if path.starts_with("/s/") {
        // A session's data plane, when it runs on this hub's own host.
        if let Some(host) = hub.worlds.as_ref().and_then(|w| w.embedded.clone()) {
            let config = gateway_host::server::ServerConfig { secret: String::new(), domain: "localhost".into() };
            let request = Request::from_parts(parts, body);
            return match tower_service_call(gateway_host::server::app(host, config), request).await {
                Some(response) => response,
                None => error_response(&HubError::Storage("the session's host did not answer".into())),
            };
        }
    }
    if path == "/" || path == "/ui" || path.starts_with("/ui/") {
        // The web pages (server/web.rs): HTML for people, behind the same keys.
        return web::answer(&hub, parts, body).await;
    }
    if is_object {
        // Object bodies stream through (to the store, or from it): never held whole.
        return match object_route(&hub, &parts.method, &path, &query, &parts.headers, body).await {
            Ok(response) => response,
            // The body may be left partly unread: the client must not reuse the connection.
            Err(error) => closing(error_response(&error)),
        };
    }
    let bytes = match to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => return error_response(&HubError::TooLarge(format!("request body is over the {limit}-byte limit"))),
    };
    let result = route(&hub, &parts.method, &path, &query, &parts.headers, &bytes).await;
    match result {
        Ok((status, value)) => json_response(status, &value),
        Err(error) => error_response(&error),
    }
}

async fn route(hub: &Hub, method: &Method, path: &str, query: &BTreeMap<String, String>, headers: &HeaderMap, body: &[u8]) -> Answer {
    if path == "/healthz" {
        return ok(object([("ok", Value::Bool(true))]));
    }
    if path == "/openapi.json" && method == Method::GET {
        return ok(openapi::document());
    }
    let base_url = base_url(hub, headers);
    if let Some(rest) = path.strip_prefix("/api/public/") {
        let segments: Vec<&str> = rest.split('/').collect();
        match (method.as_str(), segments.as_slice()) {
            ("POST", ["world-hosts"]) => return sessions::heartbeat(hub, headers, &parse_body(body)?).await,
            ("GET", ["world-sessions", sid, "host"]) => return sessions::session_host(hub, headers, &unquote_plus(sid)).await,
            _ => {}
        }
        if let Some(answer) = world_route(hub, method, &segments, query, headers, body, &base_url).await {
            return answer;
        }
        if let Some(answer) = world_data::route(hub, method, &segments, query, headers, body, &base_url).await {
            return answer;
        }
        if let Some(answer) = environments::route(hub, method, &segments, query, headers, body).await {
            return answer;
        }
        if let Some(answer) = agents::route(hub, method, &segments, query, headers, body).await {
            return answer;
        }
        if let Some(answer) = connectors::route(hub, method, &segments, query, headers, body).await {
            return answer;
        }
    }
    let Some(rest) = path.strip_prefix(API) else {
        return Err(HubError::NotFound(format!("no route for {method} {path}")));
    };
    let project = authenticate(hub, headers).await?;
    let segments: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    let get = |key: &str| query.get(key).cloned();
    match (method.as_str(), segments.as_slice()) {
        ("POST", ["resolve"]) => resolve(hub, &project, &parse_body(body)?).await,
        ("POST", ["versions"]) => create_version(hub, &project, &parse_body(body)?, &base_url).await,
        ("GET", ["versions", "diff"]) => diff(hub, &project, get("base"), get("head")).await,
        ("POST", ["versions", id, "finalize"]) => finalize(hub, &project, id, &parse_body(body)?).await,
        ("GET", ["versions", id, "files"]) => files(hub, &project, id).await,
        ("GET", ["versions", id, "download"]) => download(hub, &project, id, get("artifact"), &base_url).await,
        ("POST", ["resolve-version"]) => resolve_version(hub, &project, &parse_body(body)?, &base_url).await,
        ("GET", ["refs"]) => list_refs(hub, &project, get("slug")).await,
        ("POST", ["refs"]) => create_ref(hub, &project, &parse_body(body)?).await,
        ("GET", ["log"]) => log(hub, &project, get("slug"), get("branch"), get("limit")).await,
        ("POST", ["fork"]) => fork(hub, &project, &parse_body(body)?).await,
        ("POST", ["proposals"]) => create_proposal(hub, &project, &parse_body(body)?).await,
        ("GET", ["proposals"]) => list_proposals(hub, &project, get("slug")).await,
        ("PUT", ["secrets"]) => set_secret(hub, &project, &parse_body(body)?).await,
        ("GET", ["secrets"]) => list_secrets(hub, &project, get("slug")).await,
        ("DELETE", ["secrets"]) => delete_secret(hub, &project, &parse_body(body)?).await,
        ("GET", ["run-configs"]) => list_run_configs(hub, &project).await,
        ("POST", ["run-configs"]) => upsert_run_config(hub, &project, &parse_body(body)?).await,
        ("DELETE", ["run-configs"]) => delete_run_config(hub, &project, &parse_body(body)?).await,
        ("POST", ["evaluations"]) => evaluations::create_evaluation(hub, &project, &parse_body(body)?).await,
        ("POST", ["evaluations", id, "samples"]) => evaluations::add_samples(hub, &project, &unquote_plus(id), &parse_body(body)?).await,
        ("POST", ["evaluations", id, "finalize"]) => {
            evaluations::finalize_evaluation(hub, &project, &unquote_plus(id), &parse_body(body)?).await
        }
        ("POST", ["run-configs", "dispatch"]) => environments::dispatch_run_config(hub, &project, &parse_body(body)?).await,
        _ => Err(HubError::NotFound(format!("no route for {method} {path}"))),
    }
}

/// The world-sessions and world-tasks routes (None: not one of them).
async fn world_route(
    hub: &Hub,
    method: &Method,
    segments: &[&str],
    query: &BTreeMap<String, String>,
    headers: &HeaderMap,
    body: &[u8],
    base_url: &str,
) -> Option<Answer> {
    if !matches!(segments.first(), Some(&"world-sessions" | &"world-tasks")) {
        return None;
    }
    let project = match authenticate(hub, headers).await {
        Ok(project) => project,
        Err(error) => return Some(Err(error)),
    };
    let p = project.as_str();
    let id = |raw: &str| unquote_plus(raw);
    Some(match (method.as_str(), segments) {
        ("POST", ["world-sessions"]) => match parse_body(body) {
            Ok(body) => sessions::open_session(hub, p, &body, base_url).await,
            Err(e) => Err(e),
        },
        ("GET", ["world-sessions", sid]) => sessions::session_status(hub, p, &id(sid)).await,
        ("DELETE", ["world-sessions", sid]) => sessions::close_session(hub, p, &id(sid)).await,
        ("POST", ["world-sessions", sid, "calls"]) => match parse_body(body) {
            Ok(body) => sessions::create_call(hub, p, &id(sid), &body, base_url).await,
            Err(e) => Err(e),
        },
        ("GET", ["world-sessions", sid, "calls"]) => sessions::list_calls(hub, p, &id(sid), query).await,
        ("GET", ["world-sessions", sid, "calls", call]) => sessions::get_call(hub, p, &id(sid), &id(call)).await,
        ("POST", ["world-sessions", sid, "task"]) => match parse_body(body) {
            Ok(body) => sessions::save_task(hub, p, &id(sid), &body).await,
            Err(e) => Err(e),
        },
        ("POST", ["world-sessions", _, "browser-events"]) | ("GET", ["world-sessions", _, "browser-events"]) => {
            Err(HubError::BadRequest("surface not available: this hub serves no browser surface".into()))
        }
        ("POST", ["world-tasks"]) => match parse_body(body) {
            Ok(body) => tasks::create_task(hub, p, &body).await,
            Err(e) => Err(e),
        },
        ("GET", ["world-tasks"]) => tasks::list_tasks(hub, p, query).await,
        ("GET", ["world-tasks", tid]) => tasks::show_task(hub, p, &id(tid), query.get("version").cloned()).await,
        ("PATCH", ["world-tasks", tid]) => match parse_body(body) {
            Ok(body) => tasks::update_task(hub, p, &id(tid), &body).await,
            Err(e) => Err(e),
        },
        ("DELETE", ["world-tasks", tid]) => tasks::delete_task(hub, p, &id(tid)).await,
        ("POST", ["world-tasks", tid, "validate"]) => match parse_body(body) {
            Ok(body) => tasks::validate_task(hub, p, &id(tid), &body, base_url).await,
            Err(e) => Err(e),
        },
        _ => Err(HubError::NotFound(format!("no route for {method} /api/public/{}", segments.join("/")))),
    })
}

/// Answer `request` with `router` in process.
async fn tower_service_call(router: axum::Router, request: Request) -> Option<Response> {
    use tower::ServiceExt as _;
    router.oneshot(request).await.ok()
}

// ------------------------------------------------------------------ plumbing

fn parse_query(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (unquote_plus(k), unquote_plus(v))
        })
        .collect()
}

fn parse_body(body: &[u8]) -> Result<Map, HubError> {
    let text = std::str::from_utf8(body).map_err(|_| HubError::BadRequest("request body is not UTF-8".into()))?;
    if text.trim().is_empty() {
        return Ok(Map::default());
    }
    match json::parse(text) {
        Ok(parsed) => match parsed.value {
            Value::Object(map) => Ok(map),
            _ => Err(HubError::BadRequest("request body must be a JSON object".into())),
        },
        Err(e) => Err(HubError::BadRequest(format!("request body is not valid JSON: {e:?}"))),
    }
}

fn opt_str(body: &Map, key: &str) -> Result<Option<String>, HubError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s.clone())),
        Some(_) => Err(HubError::BadRequest(format!("'{key}' must be a string"))),
    }
}

fn req_str(body: &Map, key: &str) -> Result<String, HubError> {
    opt_str(body, key)?.filter(|s| !s.is_empty()).ok_or_else(|| HubError::BadRequest(format!("'{key}' is required")))
}

fn opt_bool(body: &Map, key: &str) -> Result<bool, HubError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(HubError::BadRequest(format!("'{key}' must be a boolean"))),
    }
}

fn opt_value(text: &str) -> Value {
    json::parse_clean(text).unwrap_or(Value::Null)
}

fn str_or_null(value: &Option<String>) -> Value {
    value.as_ref().map(|s| Value::Str(s.clone())).unwrap_or(Value::Null)
}

fn base_url(hub: &Hub, headers: &HeaderMap) -> String {
    if let Some(url) = &hub.public_url {
        return url.trim_end_matches('/').to_string();
    }
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
    format!("http://{host}")
}

async fn authenticate(hub: &Hub, headers: &HeaderMap) -> Result<String, HubError> {
    let denied = || {
        HubError::Unauthorized(
            "missing or invalid credentials: send HTTP Basic <public key>:<secret key> of a project (`gateway hub keys create`)".into(),
        )
    };
    let header = headers.get("authorization").and_then(|h| h.to_str().ok()).ok_or_else(denied)?;
    let encoded = header.strip_prefix("Basic ").or_else(|| header.strip_prefix("basic ")).ok_or_else(denied)?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|_| denied())?;
    let decoded = String::from_utf8(decoded).map_err(|_| denied())?;
    let (public, secret) = decoded.split_once(':').ok_or_else(denied)?;
    let presented = hash_secret(secret);
    match hub.meta.key_lookup(public).await? {
        Some((project, stored)) if bool::from(stored.as_bytes().ct_eq(presented.as_bytes())) => Ok(project),
        Some(_) => Err(denied()),
        None => {
            // Same work on an unknown key, so timing does not tell which keys exist.
            let _ = presented.as_bytes().ct_eq(hash_secret("").as_bytes());
            Err(denied())
        }
    }
}

/// A valid container slug: 1–100 of `[A-Za-z0-9._-]`, starting alphanumeric.
pub fn check_slug(slug: &str) -> Result<(), HubError> {
    let ok = !slug.is_empty()
        && slug.len() <= 100
        && slug.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && slug.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(HubError::BadRequest(format!(
            "invalid slug '{slug}': use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )))
    }
}

/// A valid branch or tag name (git-like; `/` allowed between parts).
pub fn check_ref_name(name: &str) -> Result<(), HubError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name != "latest"
        && !name.starts_with('-')
        && name.split('/').all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with(".lock"))
        && !name.contains("..")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-/+@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(HubError::BadRequest(format!(
            "invalid ref name '{name}': use letters, digits, '.', '_', '-', '+', '@' and '/' between parts (not 'latest', no '..')"
        )))
    }
}

async fn container(hub: &Hub, project: &str, slug: Option<String>) -> Result<Container, HubError> {
    let slug = slug.filter(|s| !s.is_empty()).ok_or_else(|| HubError::BadRequest("'slug' is required".into()))?;
    check_slug(&slug)?;
    hub.meta
        .container(project, &slug)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("no container '{slug}' in this project: push it first (`gateway bench push`)")))
}

/// A version of this project (another project's version is "not found").
async fn own_version(hub: &Hub, project: &str, id: &str) -> Result<(Container, Version), HubError> {
    let missing = || HubError::NotFound(format!("no version '{id}' in this project"));
    let version = hub.meta.version(id).await?.ok_or_else(missing)?;
    let container = hub.meta.container_by_id(&version.container_id).await?.ok_or_else(missing)?;
    if container.project_id != project {
        return Err(missing());
    }
    Ok((container, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_slug("demo-env_1.x").is_ok());
        assert!(check_slug("../x").is_err());
        assert!(check_slug("").is_err());
        assert!(check_ref_name("fix/retention-lock").is_ok());
        assert!(check_ref_name("a//b").is_err());
        assert!(check_ref_name("latest").is_err());
        assert!(check_ref_name("a/../b").is_err());
    }

    #[test]
    fn query_codec() {
        assert_eq!(unquote_plus("a%2Fb+c"), "a/b c");
        assert_eq!(unquote_plus(&quote_segment("x+/=y")), "x+/=y");
        assert_eq!(unquote_plus("%"), "%");
    }

    #[test]
    fn sealing() {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::load_or_create(dir.path()).unwrap();
        let sealed = keys.seal("c/K", b"value").unwrap();
        assert!(!sealed.windows(5).any(|w| w == b"value"));
        assert_eq!(keys.open("c/K", &sealed).unwrap(), b"value");
        assert!(keys.open("c/OTHER", &sealed).is_err());
    }
}

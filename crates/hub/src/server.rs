//! The hub's HTTP API (`/api/public/benchmark-containers/*`) and its object routes,
//! on axum. Every answer is a non-empty JSON object; every refusal is
//! `{"error": <code>, "message": <what happened and what to do>}` with its status.

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
use gateway_world::json::{self, object, DumpOptions, Map, Value};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;

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
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_json_bytes: 32 * 1024 * 1024, max_object_bytes: 1024 * 1024 * 1024, url_ttl_secs: 3600 }
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
    axum::serve(listener, router(hub)).await.map_err(|e| HubError::Storage(e.to_string()))
}

async fn answer(State(hub): State<Arc<Hub>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query = parse_query(parts.uri.query().unwrap_or(""));
    let is_object = path.starts_with("/objects/");
    let limit = if is_object { hub.limits.max_object_bytes } else { hub.limits.max_json_bytes };
    if let Some(length) = parts.headers.get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok()) {
        if length > limit as u64 {
            return error_response(&HubError::TooLarge(format!("request body of {length} bytes is over the {limit}-byte limit")));
        }
    }
    if is_object {
        // Object bodies stream through (to the store, or from it): never held whole.
        return match object_route(&hub, &parts.method, &path, &query, &parts.headers, body).await {
            Ok(response) => response,
            Err(error) => error_response(&error),
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
    let Some(rest) = path.strip_prefix(API) else {
        return Err(HubError::NotFound(format!("no route for {method} {path}")));
    };
    let project = authenticate(hub, headers).await?;
    let segments: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    let get = |key: &str| query.get(key).cloned();
    let base_url = base_url(hub, headers);
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
        ("POST", ["run-configs", "dispatch"]) => Err(HubError::BadRequest(
            "this self-hosted hub does not run hosted evaluations: run the world locally (`gateway worlds run`)".into(),
        )),
        _ => Err(HubError::NotFound(format!("no route for {method} {path}"))),
    }
}

// ------------------------------------------------------------------ plumbing

fn parse_query(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// `application/x-www-form-urlencoded` decoding (`+` is a space).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16) {
                Ok(b) => {
                    out.push(b);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encode everything but unreserved characters.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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

fn presign(hub: &Hub, base_url: &str, method: &str, key: &str, extra: &[(&str, &str)]) -> String {
    let expires = (now_secs() + hub.limits.url_ttl_secs).to_string();
    let mut params: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    params.push(("expires".into(), expires));
    params.sort();
    let canonical: String = params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
    let signature = hub.keys.sign(&format!("{method}\n{key}\n{canonical}"));
    let query: String = params.iter().map(|(k, v)| format!("{k}={}", percent_encode(v))).collect::<Vec<_>>().join("&");
    let path: String = key.split('/').map(percent_encode).collect::<Vec<_>>().join("/");
    format!("{base_url}/objects/{path}?{query}&signature={signature}")
}

fn verify_signature(hub: &Hub, method: &str, key: &str, query: &BTreeMap<String, String>) -> Result<(), HubError> {
    let denied = |why: &str| HubError::Unauthorized(format!("object URL refused: {why}; ask the hub for a fresh URL"));
    let signature = query.get("signature").ok_or_else(|| denied("no signature"))?;
    let canonical: String = query.iter().filter(|(k, _)| *k != "signature").map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
    let expected = hub.keys.sign(&format!("{method}\n{key}\n{canonical}"));
    if !bool::from(expected.as_bytes().ct_eq(signature.as_bytes())) {
        return Err(denied("bad signature"));
    }
    let expires: u64 = query.get("expires").and_then(|e| e.parse().ok()).ok_or_else(|| denied("no expiry"))?;
    if expires < now_secs() {
        return Err(denied("expired"));
    }
    Ok(())
}

async fn object_route(
    hub: &Hub,
    method: &Method,
    path: &str,
    query: &BTreeMap<String, String>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, HubError> {
    let key: String = path.trim_start_matches("/objects/").split('/').map(percent_decode).collect::<Vec<_>>().join("/");
    check_object_key(&key)?;
    match method.as_str() {
        "PUT" => {
            verify_signature(hub, "PUT", &key, query)?;
            let mut writer = hub.objects.writer(&key).await?;
            let actual = match receive(body, writer.as_mut(), hub.limits.max_object_bytes).await {
                Ok(actual) => actual,
                Err(error) => {
                    writer.abort().await?;
                    return Err(error);
                }
            };
            let expected = query.get("checksum").cloned().unwrap_or_default();
            let header = headers.get("x-amz-checksum-sha256").map(|h| h.to_str().unwrap_or_default().to_string());
            let refusal = match header {
                Some(header) if header != actual => Some(HubError::BadDigest(format!(
                    "x-amz-checksum-sha256 {header} does not match the body's sha256 {actual}: the upload was corrupted or the header is wrong"
                ))),
                _ if actual != expected => Some(HubError::BadDigest(format!(
                    "body sha256 {actual} is not the announced bundleSha256 {expected}: rebuild the bundle and push again"
                ))),
                _ => None,
            };
            if let Some(refusal) = refusal {
                writer.abort().await?;
                return Err(refusal);
            }
            writer.commit().await?;
            let version_id = query.get("version").cloned().unwrap_or_default();
            let wheel = query.get("artifact").map(String::as_str) == Some("wheel");
            hub.meta.mark_uploaded(&version_id, wheel).await?;
            Ok(json_response(200, &object([("uploaded", Value::Bool(true)), ("key", Value::str(key)), ("sha256", Value::str(actual))])))
        }
        "GET" => {
            verify_signature(hub, "GET", &key, query)?;
            let stream = hub.objects.open(&key).await?.ok_or_else(|| HubError::NotFound(format!("object {key} not found")))?;
            let mut response = Response::new(Body::from_stream(stream));
            let kind = if key.ends_with(".whl") { "application/octet-stream" } else { "application/gzip" };
            response.headers_mut().insert("content-type", HeaderValue::from_static(kind));
            Ok(response)
        }
        _ => Err(HubError::NotFound(format!("no route for {method} {path}"))),
    }
}

/// Stream an upload's body into `writer`, at most `limit` bytes; the body's sha256 (base64).
async fn receive(body: Body, writer: &mut dyn ObjectWriter, limit: usize) -> Result<String, HubError> {
    use futures_util::StreamExt as _;
    let mut stream = body.into_data_stream();
    let mut digest = Sha256::new();
    let mut received = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| HubError::BadRequest(format!("reading the upload: {e}")))?;
        received += chunk.len();
        if received > limit {
            return Err(HubError::TooLarge(format!("request body is over the {limit}-byte limit")));
        }
        digest.update(&chunk);
        writer.write(chunk).await?;
    }
    Ok(base64::engine::general_purpose::STANDARD.encode(digest.finalize()))
}

// ------------------------------------------------------------------ containers and versions

async fn resolve(hub: &Hub, project: &str, body: &Map) -> Answer {
    let slug = req_str(body, "slug")?;
    check_slug(&slug)?;
    let name = opt_str(body, "name")?.filter(|n| !n.is_empty()).unwrap_or_else(|| slug.clone());
    let tags = match body.get("tags") {
        None | Some(Value::Null) => Value::Array(Vec::new()),
        Some(Value::Array(items)) if items.iter().all(|t| matches!(t, Value::Str(_))) => Value::Array(items.clone()),
        Some(_) => return Err(HubError::BadRequest("'tags' must be a list of strings".into())),
    };
    let visibility = opt_str(body, "visibility")?.unwrap_or_else(|| "PRIVATE".into());
    if visibility != "PRIVATE" && visibility != "PUBLIC" {
        return Err(HubError::BadRequest("'visibility' must be PRIVATE or PUBLIC".into()));
    }
    let new = Container {
        id: new_id("cnt_"),
        project_id: project.to_string(),
        slug: slug.clone(),
        name,
        description: opt_str(body, "description")?,
        tags: json::canonical(&tags),
        visibility,
        forked_from_version_id: None,
        created_at: now_iso(),
    };
    let (container, created) = hub.meta.resolve_container(new).await?;
    ok(object([
        ("containerId", Value::str(container.id)),
        ("slug", Value::str(container.slug)),
        ("name", Value::str(container.name)),
        ("created", Value::Bool(created)),
    ]))
}

fn is_hex(text: &str) -> bool {
    text.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

fn is_sha256_b64(text: &str) -> bool {
    base64::engine::general_purpose::STANDARD.decode(text).map(|b| b.len() == 32).unwrap_or(false)
}

async fn create_version(hub: &Hub, project: &str, body: &Map, base_url: &str) -> Answer {
    let container_id = req_str(body, "containerId")?;
    let container = hub
        .meta
        .container_by_id(&container_id)
        .await?
        .filter(|c| c.project_id == project)
        .ok_or_else(|| HubError::NotFound(format!("no container '{container_id}' in this project: call /resolve first")))?;
    let content_hash = req_str(body, "contentHash")?;
    if content_hash.len() != 64 || !is_hex(&content_hash) {
        return Err(HubError::BadRequest("'contentHash' must be 64 lowercase hex characters".into()));
    }
    let bundle_sha256 = req_str(body, "bundleSha256")?;
    if !is_sha256_b64(&bundle_sha256) {
        return Err(HubError::BadRequest("'bundleSha256' must be the base64 of a raw sha256 digest".into()));
    }
    let bundle_size = match body.get("bundleSizeBytes") {
        Some(Value::Int(n)) if *n >= 0 => *n,
        _ => return Err(HubError::BadRequest("'bundleSizeBytes' must be a non-negative integer".into())),
    };
    if bundle_size as u64 > hub.limits.max_object_bytes as u64 {
        return Err(HubError::TooLarge(format!(
            "bundle of {bundle_size} bytes is over this hub's {}-byte limit",
            hub.limits.max_object_bytes
        )));
    }
    let manifest = match body.get("fileManifest") {
        None | Some(Value::Null) => Value::Array(Vec::new()),
        Some(Value::Array(items)) => {
            for item in items {
                let path = item.get("path").and_then(Value::as_str);
                if path.is_none() {
                    return Err(HubError::BadRequest("every fileManifest entry needs a 'path'".into()));
                }
            }
            Value::Array(items.clone())
        }
        Some(_) => return Err(HubError::BadRequest("'fileManifest' must be a list".into())),
    };
    let pyproject = match body.get("pyprojectMeta") {
        Some(v @ Value::Object(_)) => v.clone(),
        _ => Value::Object(Map::default()),
    };
    let wheel_sha256 = opt_str(body, "wheelSha256")?;
    let wheel_filename = opt_str(body, "wheelFilename")?;
    if let Some(name) = &wheel_filename {
        if !name.ends_with(".whl") || name.contains('/') || name.contains('\\') || name.starts_with('.') {
            return Err(HubError::BadRequest("'wheelFilename' must be a plain *.whl file name".into()));
        }
    }
    if wheel_sha256.as_deref().is_some_and(|s| !is_sha256_b64(s)) {
        return Err(HubError::BadRequest("'wheelSha256' must be the base64 of a raw sha256 digest".into()));
    }
    let wheel = wheel_sha256.is_some() && wheel_filename.is_some();
    let requires = match body.get("requiresDist") {
        Some(v @ Value::Array(_)) => v.clone(),
        _ => Value::Array(Vec::new()),
    };
    let id = new_id("ver_");
    let new = Version {
        id: id.clone(),
        container_id: container.id.clone(),
        content_hash: content_hash.clone(),
        bundle_sha256,
        bundle_size,
        semantic_version: opt_str(body, "semanticVersion")?,
        pyproject_meta: json::canonical(&pyproject),
        file_manifest: json::canonical(&manifest),
        state: "PENDING".into(),
        change_reason: opt_str(body, "changeReason")?,
        author: opt_str(body, "author")?,
        image_ref: opt_str(body, "imageRef")?,
        object_key: format!("bundles/{}/{}.tar.gz", container.id, content_hash),
        uploaded: false,
        wheel_filename: if wheel { wheel_filename } else { None },
        wheel_sha256: if wheel { wheel_sha256 } else { None },
        wheel_size: if wheel {
            match body.get("wheelSizeBytes") {
                Some(Value::Int(n)) => Some(*n),
                _ => None,
            }
        } else {
            None
        },
        wheel_uploaded: false,
        requires_dist: json::canonical(&requires),
        forked_from_version_id: None,
        pushed_branch: opt_str(body, "branch")?,
        created_at: now_iso(),
        seq: 0,
    };
    let (version, _created) = hub.meta.create_version(new).await?;
    // A stored bundle is only "already uploaded" when the object is really there.
    let stored = version.uploaded && hub.objects.size(&version.object_key).await?.is_some();
    let mut out = Map::default();
    out.insert("versionId".into(), Value::str(version.id.clone()));
    out.insert("containerId".into(), Value::str(container.id.clone()));
    out.insert("contentHash".into(), Value::str(version.content_hash.clone()));
    out.insert("state".into(), Value::str(version.state.clone()));
    out.insert("alreadyUploaded".into(), Value::Bool(stored));
    if !stored {
        let url = presign(
            hub,
            base_url,
            "PUT",
            &version.object_key,
            &[("checksum", &version.bundle_sha256), ("version", &version.id), ("artifact", "bundle")],
        );
        out.insert("uploadUrl".into(), Value::str(url));
    }
    if let (Some(name), Some(sha), false) = (&version.wheel_filename, &version.wheel_sha256, version.wheel_uploaded) {
        let key = format!("wheels/{}/{}", version.id, name);
        let url = presign(hub, base_url, "PUT", &key, &[("checksum", sha), ("version", &version.id), ("artifact", "wheel")]);
        out.insert("wheelUploadUrl".into(), Value::str(url));
    }
    ok(Value::Object(out))
}

async fn finalize(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let (container, version) = own_version(hub, project, id).await?;
    let branch = opt_str(body, "branch")?.filter(|b| !b.is_empty()).unwrap_or_else(|| "main".into());
    check_ref_name(&branch)?;
    let base = opt_str(body, "baseVersionId")?;
    let force = opt_bool(body, "force")?;
    if !version.uploaded || hub.objects.size(&version.object_key).await?.is_none() {
        return Err(HubError::BadRequest(format!(
            "version {id} has no uploaded bundle: PUT the tarball to the uploadUrl from POST /versions before finalizing"
        )));
    }
    let done = hub.meta.finalize(id, &branch, base.as_deref(), force).await?;
    ok(object([
        ("versionId", Value::str(done.version.id)),
        ("containerId", Value::str(container.id)),
        ("slug", Value::str(container.slug)),
        ("state", Value::str(done.version.state)),
        ("branch", Value::str(done.branch.name)),
        ("previousTipVersionId", str_or_null(&done.previous_tip)),
        ("forkedFromVersionId", str_or_null(&done.version.forked_from_version_id)),
    ]))
}

fn version_summary(v: &Version) -> Vec<(&'static str, Value)> {
    vec![
        ("versionId", Value::str(v.id.clone())),
        ("contentHash", Value::str(v.content_hash.clone())),
        ("semanticVersion", str_or_null(&v.semantic_version)),
        ("author", str_or_null(&v.author)),
        ("changeReason", str_or_null(&v.change_reason)),
        ("createdAt", Value::str(v.created_at.clone())),
        ("forkedFromVersionId", str_or_null(&v.forked_from_version_id)),
        ("state", Value::str(v.state.clone())),
    ]
}

/// Resolve `ref` in a container: latest, branch, tag, version id, semver, hash prefix.
async fn resolve_ref(hub: &Hub, container: &Container, reference: &str) -> Result<(Version, Option<String>), HubError> {
    let ready = |v: Version| -> Result<Version, HubError> {
        if v.state == "READY" {
            Ok(v)
        } else {
            Err(HubError::NotFound(format!("version {} is not READY (its push was never finalized)", v.id)))
        }
    };
    let by_id = |id: String| async move {
        hub.meta.version(&id).await?.ok_or_else(|| HubError::Storage(format!("ref points at missing version {id}")))
    };
    if reference == "latest" {
        if let Some(main) = hub.meta.get_ref(&container.id, "main").await? {
            return Ok((ready(by_id(main.version_id).await?)?, Some("main".into())));
        }
        let newest = hub.meta.find_versions(&container.id, VersionFilter::Ready, 1).await?;
        return newest
            .into_iter()
            .next()
            .map(|v| (v, None))
            .ok_or_else(|| HubError::NotFound(format!("'{}' has no READY version yet", container.slug)));
    }
    if let Some(found) = hub.meta.get_ref(&container.id, reference).await? {
        let branch = (found.kind == "branch").then(|| found.name.clone());
        return Ok((ready(by_id(found.version_id).await?)?, branch));
    }
    if let Some(v) = hub.meta.version(reference).await? {
        if v.container_id == container.id {
            return Ok((ready(v)?, None));
        }
    }
    let semver = hub.meta.find_versions(&container.id, VersionFilter::Semver(reference.to_string()), 1).await?;
    if let Some(v) = semver.into_iter().next() {
        return Ok((v, None));
    }
    if !reference.is_empty() && reference.len() <= 64 && is_hex(&reference.to_ascii_lowercase()) {
        let prefix = reference.to_ascii_lowercase();
        let found = hub.meta.find_versions(&container.id, VersionFilter::HashPrefix(prefix.clone()), 50).await?;
        let distinct: BTreeSet<&str> = found.iter().map(|v| v.content_hash.as_str()).collect();
        match distinct.len() {
            0 => {}
            1 => return Ok((found.into_iter().next().expect("one"), None)),
            n => {
                return Err(HubError::Conflict(format!(
                    "content-hash prefix '{reference}' is ambiguous in '{}' ({n} versions match): give more characters",
                    container.slug
                )))
            }
        }
    }
    Err(HubError::NotFound(format!(
        "'{}@{reference}' matches no branch, tag, version id, semver or content-hash prefix of a READY version",
        container.slug
    )))
}

async fn resolve_version(hub: &Hub, project: &str, body: &Map, base_url: &str) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let reference = opt_str(body, "ref")?.filter(|r| !r.is_empty()).unwrap_or_else(|| "latest".into());
    let (version, branch) = resolve_ref(hub, &container, &reference).await?;
    let mut out = Map::default();
    out.insert("containerId".into(), Value::str(container.id.clone()));
    out.insert("slug".into(), Value::str(container.slug.clone()));
    out.insert("ref".into(), Value::str(reference));
    for (k, v) in version_summary(&version) {
        out.insert(k.into(), v);
    }
    if let Some(branch) = branch {
        out.insert("branch".into(), Value::str(branch));
    }
    out.insert("bundleSha256".into(), Value::str(version.bundle_sha256.clone()));
    out.insert("bundleSizeBytes".into(), Value::Int(version.bundle_size));
    if version.uploaded {
        out.insert("downloadUrl".into(), Value::str(presign(hub, base_url, "GET", &version.object_key, &[])));
    }
    ok(Value::Object(out))
}

async fn download(hub: &Hub, project: &str, id: &str, artifact: Option<String>, base_url: &str) -> Answer {
    let (_, version) = own_version(hub, project, id).await?;
    let mut out = Map::default();
    out.insert("versionId".into(), Value::str(version.id.clone()));
    match artifact.as_deref().unwrap_or("bundle") {
        "wheel" => {
            if let (Some(name), true) = (&version.wheel_filename, version.wheel_uploaded) {
                let key = format!("wheels/{}/{}", version.id, name);
                out.insert("downloadUrl".into(), Value::str(presign(hub, base_url, "GET", &key, &[])));
                out.insert("wheelFilename".into(), Value::str(name.clone()));
            }
        }
        "bundle" | "source" => {
            if version.uploaded {
                out.insert("downloadUrl".into(), Value::str(presign(hub, base_url, "GET", &version.object_key, &[])));
                out.insert("bundleSha256".into(), Value::str(version.bundle_sha256.clone()));
            }
        }
        other => return Err(HubError::BadRequest(format!("unknown artifact '{other}': use bundle or wheel"))),
    }
    ok(Value::Object(out))
}

fn manifest_map(version: &Version) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    if let Some(Value::Array(items)) = json::parse_clean(&version.file_manifest) {
        for item in items {
            if item.get("isDirectory").is_some_and(|d| matches!(d, Value::Bool(true))) {
                continue;
            }
            if let Some(path) = item.get("path").and_then(Value::as_str) {
                out.insert(path.to_string(), item.get("sha256").and_then(Value::as_str).map(str::to_string));
            }
        }
    }
    out
}

async fn files(hub: &Hub, project: &str, id: &str) -> Answer {
    let (_, version) = own_version(hub, project, id).await?;
    ok(object([
        ("versionId", Value::str(version.id.clone())),
        ("contentHash", Value::str(version.content_hash.clone())),
        ("files", opt_value(&version.file_manifest)),
    ]))
}

async fn diff(hub: &Hub, project: &str, base: Option<String>, head: Option<String>) -> Answer {
    let base = base.filter(|b| !b.is_empty()).ok_or_else(|| HubError::BadRequest("'base' (a version id) is required".into()))?;
    let head = head.filter(|h| !h.is_empty()).ok_or_else(|| HubError::BadRequest("'head' (a version id) is required".into()))?;
    let (_, base_v) = own_version(hub, project, &base).await?;
    let (_, head_v) = own_version(hub, project, &head).await?;
    let (old, new) = (manifest_map(&base_v), manifest_map(&head_v));
    let list = |paths: Vec<&String>| Value::Array(paths.into_iter().map(|p| Value::str(p.clone())).collect());
    let added = new.keys().filter(|p| !old.contains_key(*p)).collect();
    let removed = old.keys().filter(|p| !new.contains_key(*p)).collect();
    let modified = new.iter().filter(|(p, h)| old.get(*p).is_some_and(|o| o != *h)).map(|(p, _)| p).collect();
    let unchanged = new.iter().filter(|(p, h)| old.get(*p).is_some_and(|o| o == *h)).map(|(p, _)| p).collect();
    ok(object([
        ("base", Value::str(base)),
        ("head", Value::str(head)),
        ("baseContentHash", Value::str(base_v.content_hash)),
        ("headContentHash", Value::str(head_v.content_hash)),
        ("added", list(added)),
        ("removed", list(removed)),
        ("modified", list(modified)),
        ("unchanged", list(unchanged)),
    ]))
}

// ------------------------------------------------------------------ refs, log, fork

async fn list_refs(hub: &Hub, project: &str, slug: Option<String>) -> Answer {
    let container = container(hub, project, slug).await?;
    let mut out = Vec::new();
    for r in hub.meta.refs(&container.id).await? {
        let v = hub.meta.version(&r.version_id).await?;
        out.push(object([
            ("kind", Value::str(r.kind)),
            ("name", Value::str(r.name)),
            ("versionId", Value::str(r.version_id)),
            ("contentHash", v.as_ref().map(|v| Value::str(v.content_hash.clone())).unwrap_or(Value::Null)),
            ("semanticVersion", v.as_ref().map(|v| str_or_null(&v.semantic_version)).unwrap_or(Value::Null)),
            ("updatedAt", Value::str(r.updated_at)),
        ]));
    }
    ok(object([("slug", Value::str(container.slug)), ("refs", Value::Array(out))]))
}

async fn create_ref(hub: &Hub, project: &str, body: &Map) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let name = req_str(body, "name")?;
    check_ref_name(&name)?;
    let kind = opt_str(body, "kind")?.unwrap_or_else(|| "branch".into());
    if kind != "branch" && kind != "tag" {
        return Err(HubError::BadRequest("'kind' must be 'branch' or 'tag'".into()));
    }
    let version = match opt_str(body, "versionId")? {
        Some(id) => {
            let (owner, v) = own_version(hub, project, &id).await?;
            if owner.id != container.id {
                return Err(HubError::NotFound(format!("no version '{id}' in '{}'", container.slug)));
            }
            if v.state != "READY" {
                return Err(HubError::BadRequest(format!("version {id} is not READY")));
            }
            v
        }
        None => {
            let main = hub.meta.get_ref(&container.id, "main").await?.ok_or_else(|| {
                HubError::NotFound(format!("'{}' has no main branch to start from: pass a version id (--from/--version)", container.slug))
            })?;
            hub.meta.version(&main.version_id).await?.ok_or_else(|| HubError::Storage("main points at a missing version".into()))?
        }
    };
    let now = now_iso();
    hub.meta
        .create_ref(Ref {
            container_id: container.id.clone(),
            kind: kind.clone(),
            name: name.clone(),
            version_id: version.id.clone(),
            created_at: now.clone(),
            updated_at: now,
        })
        .await?;
    ok(object([
        ("slug", Value::str(container.slug)),
        ("kind", Value::str(kind)),
        ("name", Value::str(name)),
        ("versionId", Value::str(version.id)),
        ("contentHash", Value::str(version.content_hash)),
        ("semanticVersion", str_or_null(&version.semantic_version)),
    ]))
}

async fn log(hub: &Hub, project: &str, slug: Option<String>, branch: Option<String>, limit: Option<String>) -> Answer {
    let container = container(hub, project, slug).await?;
    let branch = branch.filter(|b| !b.is_empty()).unwrap_or_else(|| "main".into());
    let limit: usize = match limit {
        None => 50,
        Some(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| HubError::BadRequest("'limit' must be a positive integer".into()))?
            .min(1000),
    };
    let tip = hub
        .meta
        .get_ref(&container.id, &branch)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("'{}' has no branch or tag '{branch}'", container.slug)))?;
    let mut versions = Vec::new();
    let mut seen = BTreeSet::new();
    let mut next = Some(tip.version_id.clone());
    while let Some(id) = next {
        if versions.len() >= limit || !seen.insert(id.clone()) {
            break;
        }
        let Some(v) = hub.meta.version(&id).await? else { break };
        if v.container_id != container.id {
            break;
        }
        next = v.forked_from_version_id.clone();
        versions.push(object(version_summary(&v)));
    }
    ok(object([
        ("slug", Value::str(container.slug)),
        ("branch", Value::str(branch)),
        ("tipVersionId", Value::str(tip.version_id)),
        ("versions", Value::Array(versions)),
    ]))
}

async fn fork(hub: &Hub, project: &str, body: &Map) -> Answer {
    let slug = req_str(body, "slug")?;
    if slug.contains('@') {
        return Err(HubError::BadRequest("fork a container head: omit the @version suffix".into()));
    }
    let source = container(hub, project, Some(slug.clone())).await?;
    let target = opt_str(body, "targetSlug")?.filter(|t| !t.is_empty()).unwrap_or_else(|| format!("{slug}-fork"));
    check_slug(&target)?;
    let (head, _) = resolve_ref(hub, &source, "latest").await?;
    let new = Container {
        id: new_id("cnt_"),
        project_id: project.to_string(),
        slug: target,
        name: source.name.clone(),
        description: source.description.clone(),
        tags: source.tags.clone(),
        visibility: source.visibility.clone(),
        forked_from_version_id: Some(head.id.clone()),
        created_at: now_iso(),
    };
    let (created, version) = hub.meta.fork(new, &head).await?;
    ok(object([
        ("containerId", Value::str(created.id)),
        ("slug", Value::str(created.slug)),
        ("versionId", Value::str(version.id)),
        ("contentHash", Value::str(version.content_hash)),
        ("branch", Value::str("main")),
        ("forkedFromSlug", Value::str(source.slug)),
        ("forkedFromVersionId", Value::str(head.id)),
    ]))
}

// ------------------------------------------------------------------ proposals

async fn create_proposal(hub: &Hub, project: &str, body: &Map) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let title = req_str(body, "title")?;
    if title.chars().count() > 300 {
        return Err(HubError::BadRequest("'title' is longer than 300 characters".into()));
    }
    let reason = opt_str(body, "changeReason")?.unwrap_or_default();
    let base = req_str(body, "baseVersionId")?;
    let (owner, _) = own_version(hub, project, &base).await?;
    if owner.id != container.id {
        return Err(HubError::NotFound(format!("no version '{base}' in '{}'", container.slug)));
    }
    let target = opt_str(body, "targetBranch")?.unwrap_or_else(|| "main".into());
    check_ref_name(&target)?;
    let source_branch = opt_str(body, "sourceBranch")?;
    let Some(Value::Array(changes)) = body.get("changes") else {
        return Err(HubError::BadRequest("'changes' must be a list".into()));
    };
    if changes.is_empty() {
        return Err(HubError::BadRequest("'changes' is empty: nothing to propose".into()));
    }
    for change in changes {
        let path = change.get("path").and_then(Value::as_str).ok_or_else(|| HubError::BadRequest("every change needs a 'path'".into()))?;
        crate::archive::check_member_path(path).map_err(|_| HubError::BadRequest(format!("unsafe change path '{path}'")))?;
        match change.get("action").and_then(Value::as_str) {
            Some("write") if change.get("newContent").and_then(Value::as_str).is_some() => {}
            Some("delete") => {}
            _ => {
                return Err(HubError::BadRequest(format!("change to '{path}': action must be 'write' (with newContent text) or 'delete'")))
            }
        }
    }
    let proposal = Proposal {
        id: new_id("prop_"),
        container_id: container.id.clone(),
        title,
        change_reason: reason,
        base_version_id: base,
        target_branch: target,
        source_branch,
        changes: json::canonical(&Value::Array(changes.clone())),
        status: "OPEN".into(),
        created_at: now_iso(),
    };
    hub.meta.add_proposal(proposal.clone()).await?;
    ok(proposal_json(&container, &proposal, false))
}

fn proposal_json(container: &Container, p: &Proposal, with_changes: bool) -> Value {
    let changes = opt_value(&p.changes);
    let count = changes.as_array().map(Vec::len).unwrap_or(0);
    let mut pairs = vec![
        ("proposalId", Value::str(p.id.clone())),
        ("status", Value::str(p.status.clone())),
        ("slug", Value::str(container.slug.clone())),
        ("title", Value::str(p.title.clone())),
        ("changeReason", Value::str(p.change_reason.clone())),
        ("baseVersionId", Value::str(p.base_version_id.clone())),
        ("targetBranch", Value::str(p.target_branch.clone())),
        ("sourceBranch", str_or_null(&p.source_branch)),
        ("changeCount", Value::Int(count as i64)),
        ("createdAt", Value::str(p.created_at.clone())),
    ];
    if with_changes {
        pairs.push(("changes", changes));
    }
    object(pairs)
}

async fn list_proposals(hub: &Hub, project: &str, slug: Option<String>) -> Answer {
    let container = container(hub, project, slug).await?;
    let rows = hub.meta.proposals(&container.id).await?;
    let list = rows.iter().map(|p| proposal_json(&container, p, true)).collect();
    ok(object([("slug", Value::str(container.slug.clone())), ("proposals", Value::Array(list))]))
}

// ------------------------------------------------------------------ secrets

fn check_secret_key(key: &str) -> Result<(), HubError> {
    let ok = !key.is_empty()
        && key.len() <= 128
        && key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(HubError::BadRequest(format!("invalid secret key '{key}': use an environment variable name (UPPER_SNAKE_CASE)")))
    }
}

async fn set_secret(hub: &Hub, project: &str, body: &Map) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let key = req_str(body, "key")?;
    check_secret_key(&key)?;
    let value = req_str(body, "value")?;
    if value.len() > 64 * 1024 {
        return Err(HubError::TooLarge("secret values are limited to 64 KiB".into()));
    }
    let sealed = hub.keys.seal(&format!("{}/{key}", container.id), value.as_bytes())?;
    let created = hub.meta.put_secret(&container.id, &key, sealed).await?;
    ok(object([("slug", Value::str(container.slug)), ("key", Value::str(key)), ("created", Value::Bool(created))]))
}

async fn list_secrets(hub: &Hub, project: &str, slug: Option<String>) -> Answer {
    let container = container(hub, project, slug).await?;
    let rows = hub.meta.secrets(&container.id).await?;
    let list = rows
        .into_iter()
        .map(|s| object([("key", Value::str(s.key)), ("createdAt", Value::str(s.created_at)), ("updatedAt", Value::str(s.updated_at))]))
        .collect();
    ok(object([("slug", Value::str(container.slug)), ("secrets", Value::Array(list))]))
}

async fn delete_secret(hub: &Hub, project: &str, body: &Map) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let key = req_str(body, "key")?;
    if !hub.meta.delete_secret(&container.id, &key).await? {
        return Err(HubError::NotFound(format!("'{}' has no secret '{key}'", container.slug)));
    }
    ok(object([("slug", Value::str(container.slug)), ("key", Value::str(key)), ("deleted", Value::Bool(true))]))
}

// ------------------------------------------------------------------ run configs

async fn list_run_configs(hub: &Hub, project: &str) -> Answer {
    let rows = hub.meta.run_configs(project).await?;
    ok(object([("runConfigs", Value::Array(rows.iter().map(|r| opt_value(r)).collect()))]))
}

async fn upsert_run_config(hub: &Hub, project: &str, body: &Map) -> Answer {
    let name = req_str(body, "name")?;
    let models = match body.get("models") {
        Some(Value::Array(items)) if items.iter().all(|m| matches!(m, Value::Str(s) if !s.is_empty())) => items.clone(),
        _ => return Err(HubError::BadRequest("'models' must be a list of model names".into())),
    };
    let parallelism = match body.get("parallelism") {
        None | Some(Value::Null) => 1,
        Some(Value::Int(n)) if (1..=16).contains(n) => *n,
        _ => return Err(HubError::BadRequest("'parallelism' must be an integer from 1 to 16".into())),
    };
    if body.contains_key("taskNames") && body.contains_key("worldTasks") {
        return Err(HubError::BadRequest(
            "'taskNames' and 'worldTasks' are exclusive: a config runs bundled scenarios or stored tasks".into(),
        ));
    }
    let (id, created_at) = match opt_str(body, "id")? {
        Some(id) => {
            let existing = hub.meta.run_config(project, &id).await?.ok_or_else(|| HubError::NotFound(format!("no run config '{id}'")))?;
            let created = opt_value(&existing).get("createdAt").and_then(Value::as_str).map(str::to_string).unwrap_or_else(now_iso);
            (id, created)
        }
        None => (new_id("rc_"), now_iso()),
    };
    let mut row = Map::default();
    row.insert("id".into(), Value::str(id.clone()));
    row.insert("name".into(), Value::str(name));
    row.insert("models".into(), Value::Array(models));
    row.insert("parallelism".into(), Value::Int(parallelism));
    row.insert("autoRunOnPush".into(), Value::Bool(opt_bool(body, "autoRunOnPush")?));
    for key in ["agent", "taskNames", "worldTasks", "numExamples", "rolloutsPerExample", "timeoutMinutes", "taskSetDatasetId"] {
        if let Some(v) = body.get(key).filter(|v| !matches!(v, Value::Null)) {
            row.insert(key.into(), v.clone());
        }
    }
    row.insert("createdAt".into(), Value::str(created_at));
    row.insert("updatedAt".into(), Value::str(now_iso()));
    let row = Value::Object(row);
    hub.meta.put_run_config(project, &id, &json::canonical(&row)).await?;
    ok(row)
}

async fn delete_run_config(hub: &Hub, project: &str, body: &Map) -> Answer {
    let id = req_str(body, "id")?;
    if !hub.meta.delete_run_config(project, &id).await? {
        return Err(HubError::NotFound(format!("no run config '{id}'")));
    }
    ok(object([("id", Value::str(id)), ("deleted", Value::Bool(true))]))
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
        assert_eq!(percent_decode("a%2Fb+c"), "a/b c");
        assert_eq!(percent_decode(&percent_encode("x+/=y")), "x+/=y");
        assert_eq!(percent_decode("%"), "%");
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

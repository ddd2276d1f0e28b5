//! The host's HTTP surface: the control plane (`/__host/*`, behind
//! `X-Host-Secret`) and the data plane (a session's vendor API, named by the
//! `Host` header `w-<sid>-api.<domain>` or, without DNS, by the path `/s/<sid>/…`),
//! with MCP (streamable HTTP, [`crate::mcp`]) at `/s/<sid>/mcp` and `/__mcp` of the api host.

use crate::control::ControlRequest;
use crate::error::HostError;
use crate::host::{with_query, world_credential, WorldHost};
use crate::session::Session;
use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use gateway_world::json::{dumps, object, DumpOptions, Value};
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq as _;

/// Request bodies above this are refused with 413 (`WORLDS_HOST_MAX_BODY_MB`).
pub const MAX_BODY: usize = 32 * 1024 * 1024;
/// How often expired leases are swept.
pub const LEASE_SWEEP: Duration = Duration::from_secs(30);

/// What the server needs besides the host.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The control-plane secret (required: a host with no secret has no control plane).
    pub secret: String,
    /// The worlds domain sessions are named under (`w-<sid>-api.<domain>`).
    pub domain: String,
}

struct Shared {
    host: Arc<WorldHost>,
    config: ServerConfig,
}

const JSON: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false };

/// A JSON answer.
pub fn reply(status: u16, body: &Value) -> Response {
    let mut response = Response::new(Body::from(dumps(body, JSON)));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    response
}

fn error(status: u16, message: &str) -> Response {
    reply(status, &object([("error", Value::str(message))]))
}

/// The host's router, logging each request ([`gateway_serve::request_log`]).
pub fn app(host: Arc<WorldHost>, config: ServerConfig) -> axum::Router {
    routes(host, config).layer(axum::middleware::from_fn(gateway_serve::request_log::log_request))
}

/// The host's router without a request log of its own: for a server that embeds the
/// host and logs its requests itself (the hub).
pub fn routes(host: Arc<WorldHost>, config: ServerConfig) -> axum::Router {
    axum::Router::new().fallback(dispatch).with_state(Arc::new(Shared { host, config }))
}

/// Serve `host` on `listener` until `shutdown` completes, sweeping expired leases
/// meanwhile.
pub async fn run(
    host: Arc<WorldHost>,
    config: ServerConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let sweeper = tokio::spawn(sweep(host.clone()));
    let served = axum::serve(listener, app(host, config)).with_graceful_shutdown(shutdown).await;
    sweeper.abort();
    served
}

/// Close sessions whose leases ran out, every [`LEASE_SWEEP`].
pub async fn sweep(host: Arc<WorldHost>) {
    let mut tick = tokio::time::interval(LEASE_SWEEP);
    loop {
        tick.tick().await;
        let host = host.clone();
        let _ = tokio::task::spawn_blocking(move || host.expire_leases(crate::session::now())).await;
    }
}

async fn dispatch(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    if path == "/healthz" {
        return reply(200, &object([("ok", Value::Bool(true))]));
    }
    if path.starts_with("/__host/") {
        return control(shared, request).await;
    }
    data(shared, request).await
}

async fn read_body(body: Body) -> Result<Vec<u8>, Response> {
    match to_bytes(body, MAX_BODY).await {
        Ok(bytes) => Ok(bytes.to_vec()),
        Err(_) => {
            let mut response = error(413, "request body over 32 MiB");
            response.headers_mut().insert("connection", HeaderValue::from_static("close"));
            Err(response)
        }
    }
}

// ------------------------------------------------------------------ control plane

async fn control(shared: Arc<Shared>, request: Request) -> Response {
    let presented = request.headers().get("x-host-secret").map(|v| v.as_bytes().to_vec()).unwrap_or_default();
    if !bool::from(presented.ct_eq(shared.config.secret.as_bytes())) {
        return error(403, "forbidden");
    }
    let method = request.method().as_str().to_string();
    let path = request.uri().path().to_string();
    let raw = match read_body(request.into_body()).await {
        Ok(raw) => raw,
        Err(response) => return response,
    };
    let body = if raw.is_empty() {
        Value::Object(Default::default())
    } else {
        match std::str::from_utf8(&raw).ok().map(gateway_world::json::parse_loads) {
            Some(Ok(parsed)) => parsed.value,
            Some(Err(e)) => {
                return reply(400, &object([("error", Value::str("malformed json")), ("detail", Value::Str(format!("{e:?}")))]))
            }
            None => return reply(400, &object([("error", Value::str("malformed json")), ("detail", Value::str("not UTF-8"))])),
        }
    };
    if body.as_object().is_none() {
        return reply(400, &object([("error", Value::str("malformed json")), ("detail", Value::str("the body must be a json object"))]));
    }
    let host = shared.host.clone();
    if let ["", "__host", "sessions", sid, ..] = path.split('/').collect::<Vec<_>>()[..] {
        gateway_serve::request_log::record_session(sid);
    }
    let span = tracing::Span::current();
    let answered = tokio::task::spawn_blocking(move || span.in_scope(|| control_call(&host, &method, &path, &body))).await;
    match answered {
        Ok(Ok(Some(value))) => reply(200, &value),
        Ok(Ok(None)) => error(404, "unknown control route"),
        Ok(Err(refused)) => {
            let (status, body) = refused.answer();
            reply(status, &body)
        }
        Err(_) => error(500, "internal_error"),
    }
}

/// One control call over HTTP: the request read into a [`ControlRequest`] and run by
/// [`WorldHost::control`]; None for a route that does not exist.
pub fn control_call(host: &WorldHost, method: &str, path: &str, body: &Value) -> Result<Option<Value>, HostError> {
    match ControlRequest::from_http(method, path, body)? {
        Some(request) => host.control(request).map(Some),
        None => Ok(None),
    }
}

// ------------------------------------------------------------------ data plane

/// The session a request names: by `Host` (`w-<sid>-api.<domain>` → api,
/// `w-<sid>.<domain>` → ui, `w-<sid>-cdp.<domain>` → browser), or by path
/// (`/s/<sid>/<rest>`, the api surface). Returns (session id, surface, target
/// inside the session).
pub fn session_target(host_header: Option<&str>, target: &str) -> Option<(String, &'static str, String)> {
    if let Some(rest) = target.strip_prefix("/s/") {
        let (sid, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
        let tail = if tail.is_empty() || tail.starts_with('?') { format!("/{tail}") } else { tail.to_string() };
        return (!sid.is_empty()).then(|| (sid.to_string(), "api", tail));
    }
    let label = host_header?.split(':').next()?.split('.').next()?;
    let rest = label.strip_prefix("w-")?;
    let (sid, surface) = if let Some(sid) = rest.strip_suffix("-api") {
        (sid, "api")
    } else if let Some(sid) = rest.strip_suffix("-cdp") {
        (sid, "browser")
    } else {
        (rest, "ui")
    };
    Some((sid.to_string(), surface, target.to_string()))
}

fn bearer(headers: &[(String, String)]) -> Option<&str> {
    let value = headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.as_str())?;
    value.get(..7).filter(|p| p.eq_ignore_ascii_case("bearer ")).map(|_| &value[7..])
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The token in the world's own credential slot: the declared header for
/// `header` auth, the Basic user for `basic`, a declared `Authorization` word for `bearer`.
fn vendor_shaped(session: &Session, headers: &[(String, String)], token: &str) -> bool {
    let spec = &session.version().spec;
    let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    match spec.scheme.as_str() {
        "header" => header(&spec.auth_name.clone().unwrap_or_else(|| "x-api-key".into()).to_lowercase()).is_some_and(|v| same(v, token)),
        "basic" => {
            use base64::Engine as _;
            let Some(value) = header("authorization").filter(|v| v.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("basic "))) else {
                return false;
            };
            let decoded = base64::engine::general_purpose::STANDARD.decode(value[6..].trim()).ok().and_then(|b| String::from_utf8(b).ok());
            decoded.is_some_and(|d| same(d.split(':').next().unwrap_or(""), token))
        }
        // `Authorization: token X` where the world declares that word (GitHub's clients).
        "bearer" => session.app().router.presented_bearer(headers).is_some_and(|v| same(v, token)),
        _ => false,
    }
}

/// How a data-plane request may reach a session's surface, once its token is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SurfaceAccess {
    /// It presented the session's token (or the session takes any caller): the host
    /// presents the world's own credential on its behalf.
    Session,
    /// An oauth2 caller doing the world's own dance (its token endpoint, or a bearer
    /// the world minted): the request goes to the world as it is.
    World,
}

/// Whether a data-plane request may reach `session`'s surface, and how (None: it may
/// not — a missing or wrong token).
pub fn surface_access(session: &Session, path: &str, headers: &[(String, String)]) -> Option<SurfaceAccess> {
    let Some(token) = session.token() else { return Some(SurfaceAccess::Session) };
    let presented = bearer(headers);
    if presented.is_some_and(|b| same(b, token)) || vendor_shaped(session, headers, token) {
        return Some(SurfaceAccess::Session);
    }
    if session.version().spec.scheme == "oauth2" {
        let app = session.app();
        let stripped = path.strip_prefix(app.prefix()).filter(|_| !app.prefix().is_empty()).unwrap_or(path);
        if app.settings.token_path.as_deref().is_some_and(|t| t == stripped || (stripped.is_empty() && t == "/")) {
            return Some(SurfaceAccess::World);
        }
        if presented.is_some() && app.router.authorized(headers, &[], Some(token)) {
            return Some(SurfaceAccess::World);
        }
    }
    None
}

/// A world's admin route (`/__world/state|reset|seed` and any other `/__world/…`).
fn is_admin_path(path: &str) -> bool {
    path == "/__world" || path.starts_with("/__world/")
}

async fn data(shared: Arc<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let target = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
    let host_header = parts.headers.get("host").and_then(|v| v.to_str().ok()).map(str::to_string);
    let Some((sid, surface, inner)) = session_target(host_header.as_deref(), &target) else {
        return error(404, "no session named by Host");
    };
    gateway_serve::request_log::record_session(&sid);
    let Ok(session) = shared.host.using(&sid, true) else {
        return error(404, "unknown or closed session");
    };
    shared.host.count_request(surface);
    if surface == "browser" {
        return error(400, "surface not available: this host serves no browser surface");
    }
    let mut headers = gateway_serve::server::lowercase_headers(&parts.headers);
    let (path, _) = inner.split_once('?').unwrap_or((inner.as_str(), ""));
    if is_admin_path(path) {
        // Whoever asks, with whatever token: the session's admin operations are the
        // control plane's (the app refuses them too, under a ui's api path).
        return reply(403, &gateway_serve::app::control_plane_only());
    }
    // MCP on the api surface: `/s/<sid>/mcp`, or `/__mcp` of `w-<sid>-api.<domain>`.
    let mcp_path = if target.starts_with("/s/") { "/mcp" } else { "/__mcp" };
    let Some(access) = surface_access(&session, path, &headers) else {
        // The vendor's API refuses a wrong token as the vendor does (the world's
        // `[api] unauthorized`: Slack's HTTP 200 `invalid_auth`, GitHub's "Bad
        // credentials"), so its SDK reads it; MCP gets the session's own 401.
        let settings = &session.app().settings;
        let vendor = surface == "api" && path != mcp_path;
        let (status, mut denied) = match vendor {
            true => (settings.unauthorized_status, reply(settings.unauthorized_status as u16, &settings.unauthorized)),
            false => (401, error(401, "invalid session token")),
        };
        if status == 401 {
            // RFC 6750 (and MCP's authorization): a 401 names the scheme it wants.
            denied.headers_mut().insert("www-authenticate", HeaderValue::from_static("Bearer"));
        }
        return denied;
    };
    if surface == "api" && path == mcp_path {
        drop(session);
        return match crate::mcp::http(shared.host.clone(), &sid, MAX_BODY, Request::from_parts(parts, body)).await {
            Ok(answered) => answered,
            Err(refused) => error(404, &refused),
        };
    }
    let raw = match read_body(body).await {
        Ok(raw) => raw,
        Err(response) => return response,
    };
    // Injected faults: the operation the request routes to decides.
    let (route_path, query) = inner.split_once('?').unwrap_or((inner.as_str(), ""));
    let stripped = route_path.strip_prefix(session.app().prefix()).filter(|_| !session.app().prefix().is_empty()).unwrap_or(route_path);
    let query = gateway_serve::router::parse_query(query);
    let operation = session.app().router.route(parts.method.as_str(), stripped, &query).map(|(op, _)| op.name.clone());
    if let Some(operation) = operation {
        let (latency, fault) = session.strike(&operation);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if let Some((status, body)) = fault {
            let mut response = reply(status, &body);
            response.headers_mut().insert("x-gateway-fault", HeaderValue::from_static("injected"));
            return response;
        }
    }
    // Served under /s/<sid>: the world's links and rewritten URLs must carry it.
    headers.retain(|(k, _)| k != "x-forwarded-prefix");
    if target.starts_with("/s/") {
        headers.push(("x-forwarded-prefix".into(), format!("/s/{sid}")));
    }
    let mut target = inner;
    if access == SurfaceAccess::Session {
        let (credential, query) = world_credential(&session);
        headers.retain(|(k, _)| !credential.iter().any(|(c, _)| c == k));
        headers.extend(credential);
        target = with_query(&target, &query);
    }
    let default_host = format!("w-{sid}-api.{}", shared.config.domain);
    gateway_serve::server::respond(session.app().clone(), parts.method.as_str().to_string(), target, headers, raw, default_host).await
}

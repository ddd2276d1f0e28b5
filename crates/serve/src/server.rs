//! The HTTP server: axum on tokio, every request answered by [`WorldApp::handle`]
//! on the blocking pool (SQLite and the handler worker are synchronous).

use crate::app::{Handled, Response as AppResponse, StagedWrite, WorldApp};
use crate::router::Router;
use crate::settings::load_api_settings;
use crate::state::WorldState;
use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use gateway_world::json::{dumps, DumpOptions};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

/// Request bodies above this size are refused with 413.
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// Why a world could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The world or its connector refused (the original's ContractError).
    #[error("{0}")]
    World(#[from] gateway_world::Error),
    /// connector.toml or `[api]` refused.
    #[error("{0}")]
    Spec(#[from] gateway_world::ContractError),
    /// The handlers module could not start.
    #[error("{0}")]
    Handlers(String),
    /// The socket could not be bound or served.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Everything `gateway worlds serve` needs besides the world path.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Port to listen on.
    pub port: u16,
    /// Address to bind (default 0.0.0.0).
    pub host: Option<String>,
    /// Pin the accepted credential.
    pub api_key: Option<String>,
    /// Start in this scenario (a durable state that already exists continues instead).
    pub scenario: Option<String>,
    /// Keep the state in this directory across restarts (durable commits).
    pub state_dir: Option<std::path::PathBuf>,
    /// How the world's handlers run: confined (the default) or, on request, as the caller.
    pub workers: crate::handlers::WorkerOptions,
}

/// The dotted paths each entity's equality filters use: what gets a serving index.
pub fn index_plan(spec: &gateway_connector::spec::Spec, settings: &crate::settings::ApiSettings) -> BTreeMap<String, Vec<String>> {
    let mut plan: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for operation in &spec.operations {
        let Some(entity) = &operation.entity else { continue };
        let op = settings.for_operation(&operation.name);
        for (arg, path) in &op.filter {
            let equals = op.matching.get(arg).is_none_or(|m| m == "equals");
            let paths = plan.entry(entity.clone()).or_default();
            if equals && !paths.contains(path) {
                paths.push(path.clone());
            }
        }
    }
    plan
}

/// Load a world for serving: spec, settings, state (scenario applied) and handlers.
pub fn load(world: &Path, options: &ServeOptions) -> Result<WorldApp, ServeError> {
    let spec = gateway_connector::spec::load_spec(world)?;
    let mut settings = load_api_settings(world, &spec)?;
    let indexed = index_plan(&spec, &settings);
    let (state, fresh) = match &options.state_dir {
        None => (WorldState::open(world, indexed)?, true),
        Some(dir) => {
            let fresh = !dir.join("current").exists();
            (WorldState::durable(std::sync::Arc::new(crate::state::Template::open(world, indexed)?), dir)?, fresh)
        }
    };
    crate::nested::link_from_contract(&mut settings, &spec, state.contract())?;
    if let (Some(scenario), true) = (&options.scenario, fresh) {
        state.apply_scenario(scenario)?;
    }
    WorldApp::new(world, state, Router::new(spec), settings, options.api_key.clone(), &options.workers).map_err(ServeError::Handlers)
}

/// What the router of one served world holds: the world, and the address links name
/// when a request carries no Host header.
#[derive(Clone)]
struct Served {
    world: Arc<WorldApp>,
    local: Arc<str>,
}

async fn answer(State(served): State<Served>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_string();
    let target = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
    let headers = lowercase_headers(&parts.headers);
    let Ok(raw) = to_bytes(body, MAX_BODY).await else {
        return payload_too_large();
    };
    respond(served.world, method, target, headers, raw.to_vec(), served.local.to_string()).await
}

/// The request's headers as the app takes them: names lower-cased, values as text.
pub fn lowercase_headers(headers: &axum::http::HeaderMap) -> Vec<(String, String)> {
    headers.iter().map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect()
}

/// The 413 answer to a body over the cap.
pub fn payload_too_large() -> Response {
    let mut response = Response::new(Body::from(r#"{"error": "payload_too_large"}"#));
    *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    response
}

/// Answer one request from `app` and render it as the original does. Reads and
/// single-row writes are answered on the async worker; handlers, gates and admin
/// routes on the blocking pool. Shared by `worlds serve` and the World Host.
pub async fn respond(
    app: Arc<WorldApp>,
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    raw: Vec<u8>,
    default_host: String,
) -> Response {
    if app.is_quick(&method, &target, true) {
        // Index-backed reads take tens of microseconds: a hop to the blocking pool
        // would cost more than it saves. A single-row write joins the group the
        // session's writer commits next (see `state::Db`); this task waits for it
        // without holding a thread.
        let answered = match app.handle_staged(&method, &target, &headers, &raw, &default_host) {
            Handled::Answered(response) => response,
            Handled::Write(StagedWrite { entity, job, reply }) => {
                let written = app.state.write_grouped(job, Some(&entity)).await;
                app.finish_write(&reply, written)
            }
        };
        return render(&app, answered);
    }
    // A world with handlers: one request at a time holds a blocking thread for its
    // worker (which answers one call at a time anyway); the rest wait here without a
    // thread, and give up at the deadline. A looping handler so costs its own world
    // one thread, never the pool every other world and project shares.
    let _admitted = match app.worker() {
        Some(worker) => {
            let gate = worker.gate().clone();
            match tokio::time::timeout(worker.deadline(), gate.acquire_owned()).await {
                Ok(Ok(permit)) => Some(permit),
                _ => return render(&app, crate::app::handler_timeout(worker.deadline())),
            }
        }
        None => None,
    };
    let worker_app = app.clone();
    // The blocking pool's thread runs inside the request's span (the handler's span nests there).
    let span = tracing::Span::current();
    let answered =
        tokio::task::spawn_blocking(move || span.in_scope(|| worker_app.handle(&method, &target, &headers, &raw, &default_host))).await;
    let answered = answered.unwrap_or_else(|_| AppResponse {
        status: 500,
        body: Some(gateway_world::json::object([("error", gateway_world::Value::str("internal_error"))])),
        headers: Vec::new(),
        file: None,
    });
    render(&app, answered)
}

const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

const RESPONSE_JSON: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false };

fn render(app: &WorldApp, answered: AppResponse) -> Response {
    let status = StatusCode::from_u16(answered.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (body, content_type) = match (&answered.body, answered.status) {
        _ if answered.file.is_some() => {
            let (bytes, kind) = answered.file.clone().unwrap_or_default();
            (Body::from(bytes), HeaderValue::from_str(&kind).ok())
        }
        (_, 204) | (None, _) => (Body::empty(), None),
        (Some(value), code) => {
            let kind = if code >= 400 { HeaderValue::from_str(&app.settings.error_content_type).ok() } else { Some(APPLICATION_JSON) };
            (Body::from(dumps(value, RESPONSE_JSON)), kind)
        }
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    if let Some(server) = &app.server_header {
        headers.insert("server", server.clone());
    }
    if let Some(kind) = content_type {
        headers.insert("content-type", kind);
    }
    if answered.body.is_none() && answered.file.is_none() {
        // http.server always sends a Content-Length, 0 for an empty answer.
        headers.insert("content-length", HeaderValue::from_static("0"));
    }
    for (name, value) in answered.headers {
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value)) {
            headers.append(name, value);
        }
    }
    response
}

/// The router of one served world: every request answered by `world`; links name
/// `local` when a request carries no Host header.
pub fn app(world: Arc<WorldApp>, local: SocketAddr) -> axum::Router {
    let local = Arc::from(format!("127.0.0.1:{}", local.port()));
    axum::Router::new()
        .fallback(answer)
        .with_state(Served { world, local })
        .layer(axum::middleware::from_fn(crate::request_log::log_request))
}

/// Serve `world` on `listener` until `shutdown` completes; requests in flight are
/// answered before it returns.
pub async fn run(
    world: WorldApp,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let local = listener.local_addr()?;
    axum::serve(listener, app(Arc::new(world), local)).with_graceful_shutdown(shutdown).await?;
    Ok(())
}

//! One world's HTTP behaviour as a function of the request: admin routes, the
//! token endpoint, auth, routing, then the gate, actions and handlers. Nothing here
//! touches a socket (the server module does), so it is tested directly.
//!
//! This file takes a request as far as its operation; the rest is split by concern:
//! `actions` (the built-in reads and staged writes), `handler_call` (the `before`
//! gate and Python handlers), `staged` (a write handed to the writer and its answer),
//! `request` (a routed request, and a failure's answer), `admin` (who may use the
//! admin routes) and `ui` (the `[ui]` files).

use crate::handlers::{Worker, WorkerOptions};
use crate::page::Link;
use crate::response::{error_body, internal};
use crate::router::{parse_query, python_b64decode, Router};
use crate::settings::types::{ApiSettings, UiSettings};
use crate::state::WorldState;
use crate::vendor::Dress;
use gateway_connector::spec::base_path;
use gateway_world::error::Error as WorldError;
use gateway_world::json::{object, python_str, Map, Value};
use request::Request;

mod actions;
mod admin;
mod handler_call;
mod request;
mod staged;
mod ui;

pub use crate::clock::{clock, now_iso, uuid4, Determinism};
pub use crate::handlers::SharedWorker;
pub use crate::response::{handler_timeout, Response};
pub use admin::{control_plane_only, AdminAccess};
pub use staged::{Handled, StagedWrite, WriteReply};

/// Admin routes every served world answers.
pub const HEALTH: &str = "/healthz";
/// The world's OpenAPI document (richer than the api bundle's: openapi.rs), unless
/// an operation of the world answers this path itself.
pub const OPENAPI: &str = "/openapi.json";
/// A page listing the world's operations, unless an operation answers this path.
pub const DOCS: &str = "/docs";
/// The whole state, keyed by primary key.
pub const STATE: &str = "/__world/state";
/// Back to the snapshot.
pub const RESET: &str = "/__world/reset";
/// Seed the world (legacy whole state or overlay).
pub const SEED: &str = "/__world/seed";

/// The served world: state, routes, credentials and handlers.
pub struct WorldApp {
    /// The world's state.
    pub state: WorldState,
    /// Routes and credentials.
    pub router: Router,
    /// `[api]` settings.
    pub settings: ApiSettings,
    key: Option<String>,
    prefix: String,
    /// The world's handler worker; sessions of one world on a host share it.
    worker: Option<SharedWorker>,
    /// The operations a session allows (None = all).
    pub allowed: Option<Vec<String>>,
    /// A session's frozen clock and seeded ids (None: the process clock, random ids).
    pub determinism: Option<Determinism>,
    /// Who may use the admin routes (`/__world/*`).
    pub admin: AdminAccess,
    world_dir: std::path::PathBuf,
    /// `ctx.spec` and `ctx.settings` as handlers see them.
    handler_spec: Value,
    handler_settings: Value,
    /// The served OpenAPI document, built on first asking.
    document: std::sync::OnceLock<Value>,
    /// The `Server` header of every answer (`gateway-world-api/<slug>`), made once.
    pub(crate) server_header: Option<axum::http::HeaderValue>,
}

/// Seed rows per entity shown as examples in the served OpenAPI document.
const DOCUMENT_EXAMPLES: usize = 2;

impl std::fmt::Debug for WorldApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorldApp").field("slug", &self.router.spec.slug).finish()
    }
}

/// `[api] body_params`: a body's fields read as parameters (Slack's methods take
/// their arguments in a form or JSON body) — text, numbers and booleans, each
/// unless the query names it already; blanks dropped, as a query's are.
fn body_params(query: &mut Vec<(String, String)>, fields: &Map) {
    for (name, value) in fields {
        let text = match value {
            Value::Str(text) => text.clone(),
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => python_str(value),
            _ => continue,
        };
        if !text.is_empty() && !query.iter().any(|(k, _)| k == name) {
            query.push((name.clone(), text));
        }
    }
}

/// Start the worker for a world's `api/handlers.py`, when `[api]` names one, confined
/// and timed as `options` say; it sees the world directory `world` read-only.
pub fn start_worker(world: &std::path::Path, settings: &ApiSettings, options: &WorkerOptions) -> Result<Option<SharedWorker>, String> {
    let mut functions: Vec<String> = settings.operations.values().filter_map(|o| o.handler.clone()).collect();
    if let Some(gate) = &settings.before {
        functions.push(gate.clone());
    }
    match &settings.handlers {
        Some(path) => Ok(Some(SharedWorker::new(Worker::start(path, &functions, &options.seeing(world)).map_err(|e| e.to_string())?))),
        None => Ok(None),
    }
}

impl WorldApp {
    /// Assemble a served world. Starts the handler worker when the world has handlers.
    pub fn new(
        world: &std::path::Path,
        state: WorldState,
        router: Router,
        settings: ApiSettings,
        key: Option<String>,
        workers: &WorkerOptions,
    ) -> Result<WorldApp, String> {
        let worker = start_worker(world, &settings, workers)?;
        Ok(WorldApp::with_worker(world, state, router, settings, key, worker))
    }

    /// Assemble a served world around a handler worker started already (one per
    /// world on a host, whatever the number of its sessions).
    pub fn with_worker(
        world: &std::path::Path,
        state: WorldState,
        router: Router,
        settings: ApiSettings,
        key: Option<String>,
        worker: Option<SharedWorker>,
    ) -> WorldApp {
        let prefix = base_path(&router.spec.base_url);
        let handler_spec = crate::ctx::spec_value(&router.spec);
        let handler_settings = crate::ctx::settings_value(&settings);
        WorldApp {
            state,
            settings,
            key,
            prefix,
            worker,
            allowed: None,
            determinism: None,
            admin: AdminAccess::Open,
            world_dir: world.to_path_buf(),
            handler_spec,
            handler_settings,
            document: std::sync::OnceLock::new(),
            server_header: axum::http::HeaderValue::from_str(&format!("gateway-world-api/{}", router.spec.slug)).ok(),
            router,
        }
    }

    /// The world's handler worker, if it has one.
    pub fn worker(&self) -> Option<&SharedWorker> {
        self.worker.as_ref()
    }

    /// An id for a generated field: the session's sequence, or random.
    pub fn uuid(&self) -> String {
        crate::clock::draw_uuid(self.determinism.as_ref())
    }

    /// The clock in epoch seconds: the session's frozen clock, or the process's.
    pub fn clock(&self) -> f64 {
        crate::clock::read_clock(self.determinism.as_ref())
    }

    /// [`WorldApp::clock`] as ISO 8601 seconds with `Z`.
    pub fn now_iso(&self) -> String {
        gateway_world::snapshot::format_utc(self.clock().floor() as i64)
    }

    /// The URL path prefix of the vendor's base URL (routes are matched below it).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn strip<'a>(&self, path: &'a str) -> &'a str {
        if !self.prefix.is_empty() && path.starts_with(&self.prefix) {
            let rest = &path[self.prefix.len()..];
            return if rest.is_empty() { "/" } else { rest };
        }
        path
    }

    fn form(&self, raw: &[u8], headers: &[(String, String)]) -> Vec<(String, String)> {
        let header = |name: &str| headers.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let content_type = header("content-type").unwrap_or("").split(';').next().unwrap_or("").trim().to_lowercase();
        if content_type == "application/json" {
            return match std::str::from_utf8(raw).ok().and_then(|t| gateway_world::json::parse(t).ok()).map(|p| p.value) {
                Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), python_str(v))).collect(),
                _ => Vec::new(),
            };
        }
        let mut form = parse_query(&String::from_utf8_lossy(raw));
        if let Some(value) = header("authorization").filter(|v| v.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("basic "))) {
            if let Some(decoded) = python_b64decode(&value[6..]).and_then(|b| String::from_utf8(b).ok()) {
                let (id, secret) = decoded.split_once(':').unwrap_or((decoded.as_str(), ""));
                for (name, value) in [("client_id", id), ("client_secret", secret)] {
                    if !form.iter().any(|(k, _)| k == name) {
                        form.push((name.to_string(), value.to_string()));
                    }
                }
            }
        }
        form
    }

    /// Answer one request. `headers` are lower-cased; `default_host` is used for
    /// links when the request has no Host header. A built-in write runs here, in
    /// its own transaction.
    pub fn handle(&self, method: &str, target: &str, headers: &[(String, String)], raw: &[u8], default_host: &str) -> Response {
        match self.handle_staged(method, target, headers, raw, default_host) {
            Handled::Answered(response) => response,
            Handled::Write(staged) => {
                let StagedWrite { entity, job, reply } = staged;
                let written = self.state.write(job, Some(&entity));
                self.finish_write(&reply, written)
            }
        }
    }

    /// [`WorldApp::handle`], except that a built-in single-row write is handed back
    /// unrun, for the caller to group with other requests' writes
    /// ([`WorldState::write_grouped`]) and answer with [`WorldApp::finish_write`].
    pub fn handle_staged(&self, method: &str, target: &str, headers: &[(String, String)], raw: &[u8], default_host: &str) -> Handled {
        if let Some(ui) = &self.settings.ui {
            // The single-page app calls the API same-origin under `api_path`.
            if let Some(rest) =
                target.strip_prefix(ui.api_path.as_str()).filter(|r| r.is_empty() || r.starts_with('/') || r.starts_with('?'))
            {
                let rest = if rest.is_empty() || rest.starts_with('?') { format!("/{rest}") } else { rest.to_string() };
                return self.handle_api(method, &rest, headers, raw, default_host);
            }
            if method == "GET" {
                if let Some(file) = self.ui_file(ui, split_target(target).0) {
                    return Handled::Answered(file);
                }
            }
        }
        self.handle_api(method, target, headers, raw, default_host)
    }

    /// The answer to a write [`WorldApp::handle_staged`] handed back, once it ran.
    pub fn finish_write(&self, reply: &WriteReply, written: Result<Value, WorldError>) -> Response {
        reply.finish(written, &self.settings)
    }

    /// Whether a request only touches the store through the built-in actions (no
    /// Python handler, no gate, no admin route): reads, and with `writes` single-row
    /// creates, updates and deletes, which take well under a millisecond.
    pub fn is_quick(&self, method: &str, target: &str, writes: bool) -> bool {
        if self.settings.before.is_some() || self.settings.ui.is_some() {
            return false;
        }
        if method != "GET" && !(writes && matches!(method, "POST" | "PUT" | "PATCH" | "DELETE")) {
            return false;
        }
        let (path, query) = split_target(target);
        if path.starts_with("/__world/") || path == STATE {
            return false;
        }
        if path == HEALTH {
            return true;
        }
        let query = parse_query(query);
        let built_in = |action: &str| action == "read" || (writes && matches!(action, "create" | "update" | "delete"));
        match self.router.route(method, self.strip(path), &query) {
            Some((operation, _)) => self.settings.operations.get(&operation.name).is_none_or(|op| built_in(&op.action)),
            None => method == "GET",
        }
    }

    /// A file of the world's built UI for a GET path ([`ui::file`]); never at an admin path.
    fn ui_file(&self, ui: &UiSettings, path: &str) -> Option<Response> {
        if [HEALTH, STATE, RESET, SEED].contains(&path) {
            return None;
        }
        ui::file(&self.world_dir, &self.prefix, &self.router, ui, path)
    }

    /// The world documents itself: its OpenAPI 3.1 document (openapi.rs; richer than
    /// the api bundle's) or a static page drawn from it. Built once, on first asking.
    fn documentation(&self, page: bool) -> Response {
        let document = self.document.get_or_init(|| {
            let contract = self.state.contract();
            let samples = contract
                .entities
                .iter()
                .map(|e| (e.name.clone(), self.state.template().seed_rows(&e.name, DOCUMENT_EXAMPLES).unwrap_or_default()))
                .collect();
            crate::openapi::World {
                spec: &self.router.spec,
                settings: &self.settings,
                contract,
                prefix: &self.prefix,
                samples: &samples,
                allowed: self.allowed.as_deref(),
            }
            .document()
        });
        if !page {
            return Response::json(200, document.clone());
        }
        let html = crate::openapi::docs_page(document);
        Response { status: 200, body: None, headers: Vec::new(), file: Some((html.into_bytes(), "text/html; charset=utf-8".into())) }
    }

    /// The methods a path is served with (its `Allow`): the world's routes that
    /// match it, the admin and documentation routes, the token endpoint, `[ui]` files.
    fn allowed_methods(&self, path: &str) -> Vec<&'static str> {
        let routed = |method: &str| self.router.route(method, self.strip(path), &[]).is_some();
        let ui = |method: &str| method == "GET" && self.settings.ui.as_ref().is_some_and(|ui| self.ui_file(ui, path).is_some());
        let admin = |method: &str| match method {
            "GET" => [HEALTH, OPENAPI, DOCS, STATE].contains(&path),
            "POST" => [RESET, SEED].contains(&path) || self.settings.token_path.as_deref().is_some_and(|t| t == self.strip(path)),
            _ => false,
        };
        crate::openapi::METHODS.into_iter().filter(|m| routed(m) || admin(m) || ui(m)).collect()
    }

    fn handle_api(&self, method: &str, target: &str, headers: &[(String, String)], raw: &[u8], default_host: &str) -> Handled {
        match self.admin_or_token(method, target, headers, raw) {
            Some(response) => Handled::Answered(response),
            None => {
                let (path, query_text) = split_target(target);
                self.route(method, path, query_text, headers, raw, default_host)
            }
        }
    }

    /// The answers that are not the vendor's API: health, documentation, the admin
    /// routes, the token endpoint, and a 405 for methods no route takes.
    fn admin_or_token(&self, method: &str, target: &str, headers: &[(String, String)], raw: &[u8]) -> Option<Response> {
        let (path, _) = split_target(target);
        if method == "GET" && path == HEALTH {
            return Some(Response::json(200, object([("ok", Value::Bool(true)), ("world", Value::str(&self.router.spec.slug))])));
        }
        if method == "GET" && (path == OPENAPI || path == DOCS) && self.router.route("GET", self.strip(path), &[]).is_none() {
            return Some(self.documentation(path == DOCS));
        }
        if path.starts_with("/__world/") {
            if let Some(refused) = self.admin.refuses(headers) {
                return Some(refused);
            }
        }
        if method == "GET" && path == STATE {
            return Some(match self.state.dump() {
                Ok(mut dump) => {
                    dump.insert("snapshot".into(), self.state.describe_snapshot());
                    Response::json(200, Value::Object(dump))
                }
                Err(error) => internal(&error.to_string()),
            });
        }
        if method == "POST" && path == RESET {
            return Some(match self.state.reset() {
                Ok(()) => Response::json(200, object([("ok", Value::Bool(true))])),
                Err(error) => internal(&error.to_string()),
            });
        }
        if method == "POST" && path == SEED {
            let Some(body) = crate::body::json_body(raw) else {
                return Some(Response::json(400, error_body("seed must be JSON")));
            };
            return Some(match self.state.seed(&body) {
                Ok(()) => Response::json(200, object([("ok", Value::Bool(true))])),
                Err(WorldError::Contract(error)) if error.code == "base_mismatch" => Response::json(
                    409,
                    object([("error", Value::str("base_mismatch")), ("expected", error.context("expected").cloned().unwrap_or_default())]),
                ),
                Err(error) => {
                    Response::json(400, object([("error", Value::str("seed_rejected")), ("detail", Value::Str(error.to_string()))]))
                }
            });
        }
        if method == "POST" && self.settings.token_path.as_deref().is_some_and(|t| t == self.strip(path)) {
            return Some(match self.router.issue_token(&self.form(raw, headers), self.key.as_deref()) {
                Some(issued) => Response::json(200, issued),
                None => Response::json(400, error_body("invalid_client")),
            });
        }
        if !matches!(method, "GET" | "POST" | "PUT" | "PATCH" | "DELETE") {
            // RFC 9110 §15.5.6: a 405 names the methods the target is served with
            // (none, when nothing answers the path: an empty Allow says so).
            let mut refused = Response::json(405, error_body("method_not_allowed"));
            refused.headers.push(("Allow".into(), self.allowed_methods(path).join(", ")));
            return Some(refused);
        }
        None
    }

    fn route(
        &self,
        method: &str,
        raw_path: &str,
        query_text: &str,
        headers: &[(String, String)],
        raw: &[u8],
        default_host: &str,
    ) -> Handled {
        let settings = &self.settings;
        let path = self.strip(raw_path);
        let mut query = parse_query(query_text);
        let header = |name: &str| headers.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let body = if matches!(method, "POST" | "PUT" | "PATCH") {
            crate::body::request_body(raw, header("content-type"), settings.forms)
        } else {
            Some(Value::Object(Map::default()))
        };
        if let (true, Some(Value::Object(fields))) = (settings.body_params, &body) {
            body_params(&mut query, fields);
        }
        let host = header("host").unwrap_or(default_host);
        let proto = header("x-forwarded-proto").unwrap_or("http").split(',').next().unwrap_or("http").trim().to_string();
        // A host serving sessions under /s/<sid> says so: links and URLs carry it.
        let mount = header("x-forwarded-prefix").filter(|m| m.starts_with('/')).unwrap_or("").trim_end_matches('/');
        let served = || format!("{proto}://{host}{mount}{}", raw_path.strip_suffix(path).unwrap_or(self.prefix()));
        let mut dress = Dress {
            rewrite: (!settings.rewrite.is_empty()).then(|| (settings.rewrite.clone(), served().trim_end_matches('/').to_string())),
            headers: settings.headers.clone(),
            fields: Map::default(),
        };
        let anonymous = settings.anonymous.iter().any(|m| m == method) && header("authorization").is_none();
        if !anonymous && !self.router.authorized(headers, &query, self.key.as_deref()) {
            let mut refused = Response::json(settings.unauthorized_status, settings.unauthorized.clone());
            dress.apply(&mut refused);
            return Handled::Answered(refused);
        }
        let Some((operation, args)) = self.router.route(method, path, &query) else {
            let mut missing = Response::json(settings.not_found_status, settings.not_found.clone());
            dress.apply(&mut missing);
            return Handled::Answered(missing);
        };
        if let Some(allowed) = &self.allowed {
            if !allowed.contains(&operation.name) {
                return Handled::Answered(Response::json(
                    403,
                    object([("error", Value::str("tool_not_allowed")), ("tool", Value::str(&operation.name))]),
                ));
            }
        }
        let op = settings.for_operation(&operation.name);
        dress.headers.extend(op.headers.iter().cloned());
        let Some(body) = body else {
            let mut invalid = Response::json(settings.invalid_status, settings.invalid.clone());
            dress.apply(&mut invalid);
            return Handled::Answered(invalid);
        };
        let link: Link = (format!("{proto}://{host}{mount}{raw_path}"), query.clone());
        let request = Request { operation, args, query, body, headers, link };
        match self.gated(op, &request, &mut dress) {
            Ok(Handled::Answered(mut response)) => {
                dress.apply(&mut response);
                Handled::Answered(response)
            }
            Ok(write) => write,
            Err(failure) => {
                let mut response = failure.answer(&self.settings, &op.refusals);
                dress.apply(&mut response);
                Handled::Answered(response)
            }
        }
    }
}

/// Split a request target into its path and query.
pub fn split_target(target: &str) -> (&str, &str) {
    let without_fragment = target.split('#').next().unwrap_or("");
    without_fragment.split_once('?').unwrap_or((without_fragment, ""))
}

//! One world's HTTP behaviour as a function of the request: admin routes, the
//! token endpoint, auth, routing, the gate, actions and handlers. Nothing here
//! touches a socket (the server module does), so it is tested directly.

use crate::handlers::{HandlerFailure, HandlerOutcome, HandlerRequest, Worker, WorkerOptions};
use crate::page::{page_headers, window, wrap, wrap_with, Link, Page};
use crate::router::{parse_query, python_b64decode, Router};
use crate::settings::{ApiSettings, OperationSettings, Paging};
use crate::state::{dig, Filter, WorldState, WriteJob};
use gateway_connector::spec::{base_path, Operation};
use gateway_world::error::Error as WorldError;
use gateway_world::json::{object, python_str, Map, Value};

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

/// What [`WorldApp::handle_staged`] makes of a request.
pub enum Handled {
    /// The answer.
    Answered(Response),
    /// A built-in single-row write, not yet run.
    Write(StagedWrite),
}

/// A built-in create, update or delete: the store work and how to answer it.
pub struct StagedWrite {
    /// The entity it writes.
    pub entity: String,
    /// The store work; returns the written row (null for a delete).
    pub job: WriteJob,
    /// How the answer is shaped once the write ran.
    pub reply: WriteReply,
}

/// The shape of a write's answer (the operation's status, envelope, body).
#[derive(Debug, Clone)]
pub struct WriteReply {
    status: i64,
    single: bool,
    envelope: Option<String>,
    /// No body (a delete).
    empty: bool,
    /// URLs rewritten and headers added, as every answer of the operation.
    dress: crate::vendor::Dress,
    /// The vendor's shaping of the answer (boxed: most writes declare none, and a
    /// staged write travels through the writer's queue).
    shaping: Box<Shaping>,
}

/// How a write's answer is shaped beyond its row.
#[derive(Debug, Clone)]
struct Shaping {
    /// `api.wrap` / `api.lift`: the row under a key, members beside it.
    shape: crate::reply::Shape,
    /// `api.answer`: a constant answered in place of the row.
    constant: Option<Value>,
    /// `[api] success`: members of every successful answer.
    success: Map,
    /// The operation's own refusals.
    refusals: crate::reply::Refusals,
}

impl WriteReply {
    fn new(op: &OperationSettings, empty: bool, dress: &crate::vendor::Dress, success: &Map) -> WriteReply {
        WriteReply {
            status: op.status,
            single: op.single,
            envelope: op.envelope.clone(),
            empty,
            dress: dress.clone(),
            shaping: Box::new(Shaping {
                shape: op.shape.clone(),
                constant: op.answer.clone(),
                success: success.clone(),
                refusals: op.refusals.clone(),
            }),
        }
    }

    /// The body of a written row's answer (None: no body, a plain delete's).
    fn body(&self, row: Value, settings: &ApiSettings) -> Option<Value> {
        let shaping = &self.shaping;
        let mut body = match &shaping.constant {
            Some(constant) => constant.clone(),
            None if shaping.shape.shapes() => shaping.shape.apply(row),
            None if self.empty => return None,
            None if self.single => row,
            None => wrap(Page::whole(vec![row]), settings, self.envelope.as_deref(), &settings.paging, None),
        };
        crate::reply::succeed(&mut body, &shaping.success);
        Some(body)
    }
}

/// An answer: status, JSON body (None = empty), extra headers.
#[derive(Debug, Clone)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// The JSON body, or None for an empty body.
    pub body: Option<Value>,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// A static file of the world's `[ui]` (bytes, content type) instead of JSON.
    pub file: Option<(Vec<u8>, String)>,
}

impl Response {
    fn json(status: i64, body: Value) -> Response {
        Response { status: status.clamp(100, 999) as u16, body: Some(body), headers: Vec::new(), file: None }
    }
}

/// The content type of a static file, by extension.
fn content_type(path: &std::path::Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "txt" => "text/plain; charset=utf-8",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

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
}

/// Seed rows per entity shown as examples in the served OpenAPI document.
const DOCUMENT_EXAMPLES: usize = 2;

impl std::fmt::Debug for WorldApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorldApp").field("slug", &self.router.spec.slug).finish()
    }
}

/// The refusal of an admin route on a host session's data plane.
pub fn control_plane_only() -> Value {
    object([
        ("error", Value::str("forbidden")),
        (
            "detail",
            Value::str(
                "a session's admin routes (/__world/*) are not served to its token: use the hub's session API \
                 (gateway worlds session state|reset|seed)",
            ),
        ),
    ])
}

fn error_body(message: &str) -> Value {
    object([("error", Value::str(message))])
}

fn query_object(query: &[(String, String)]) -> Value {
    Value::Object(query.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect())
}

pub(crate) fn query_pairs(value: Option<&Value>) -> Vec<(String, String)> {
    match value {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), python_str(v))).collect(),
        _ => Vec::new(),
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

pub use crate::clock::{clock, now_iso, uuid4, Determinism};
pub use crate::handlers::SharedWorker;

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

/// Who may reset, seed and read the whole state of a served world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminAccess {
    /// Anyone who reaches the server (a loopback bind, as the original serves).
    Open,
    /// Requests carrying this key in `X-Admin-Key`.
    Key(String),
    /// Nobody: served beyond loopback without a key.
    Closed,
    /// Nobody on the data plane: a host's session, whose admin operations are its
    /// control plane's (`/__host/sessions/<sid>/state|reset|seed`), reached through the
    /// hub's project-authenticated session API — never with the agent's session token.
    ControlPlane,
}

impl AdminAccess {
    /// The refusal for a request the admin routes do not admit, if any.
    fn refuses(&self, headers: &[(String, String)]) -> Option<Response> {
        let presented = headers.iter().find(|(k, _)| k == "x-admin-key").map(|(_, v)| v.as_str());
        match self {
            AdminAccess::Open => None,
            AdminAccess::Key(key) => {
                let same = presented
                    .is_some_and(|p| p.len() == key.len() && p.bytes().zip(key.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0);
                (!same).then(|| Response::json(401, error_body("admin routes need the X-Admin-Key header")))
            }
            AdminAccess::Closed => Some(Response::json(
                403,
                error_body("admin routes are closed on a server bound beyond loopback; restart it with --admin-key"),
            )),
            AdminAccess::ControlPlane => Some(Response::json(403, control_plane_only())),
        }
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
            router,
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
        }
    }

    /// The world's handler worker, if it has one.
    pub fn worker(&self) -> Option<&SharedWorker> {
        self.worker.as_ref()
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
        let mut response = match written {
            Err(error) => self.failure(Failure::from(error), &reply.shaping.refusals),
            Ok(row) => match reply.body(row, &self.settings) {
                Some(body) => Response::json(reply.status, body),
                None => Response { status: reply.status as u16, body: None, headers: Vec::new(), file: None },
            },
        };
        reply.dress.apply(&mut response);
        response
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

    /// A file of the world's built UI for a GET path: the asset itself, or the
    /// app's index.html for paths under `entry` that no API route answers.
    fn ui_file(&self, ui: &crate::settings::UiSettings, path: &str) -> Option<Response> {
        if [HEALTH, STATE, RESET, SEED].contains(&path) {
            return None;
        }
        let root = self.world_dir.join(&ui.static_dir);
        let relative = crate::router::unquote(path.trim_start_matches('/'));
        let safe = !relative.split('/').any(|p| p == ".." || p.starts_with('.'));
        let candidate = root.join(if relative.is_empty() { "index.html" } else { relative.as_str() });
        let candidate = if candidate.is_dir() { candidate.join("index.html") } else { candidate };
        let serve_file = |file: std::path::PathBuf| {
            std::fs::read(&file).ok().map(|bytes| Response {
                status: 200,
                body: None,
                headers: Vec::new(),
                file: Some((bytes, content_type(&file).to_string())),
            })
        };
        if safe && candidate.is_file() {
            return serve_file(candidate);
        }
        // Paths under the API's base prefix, or that an operation answers, stay the API's.
        let api_path = !self.prefix.is_empty() && path.starts_with(&self.prefix);
        if path.starts_with(ui.entry.as_str()) && !api_path && self.router.route("GET", path, &[]).is_none() {
            return serve_file(root.join("index.html"));
        }
        None
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
        let served = format!("{proto}://{host}{mount}{}", raw_path.strip_suffix(path).unwrap_or(self.prefix()));
        let mut dress = crate::vendor::Dress {
            rewrite: (!settings.rewrite.is_empty()).then(|| (settings.rewrite.clone(), served.trim_end_matches('/').to_string())),
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
        match self.gated(&op, &request, &mut dress) {
            Ok(Handled::Answered(mut response)) => {
                dress.apply(&mut response);
                Handled::Answered(response)
            }
            Ok(write) => write,
            Err(failure) => {
                let mut response = self.failure(failure, &op.refusals);
                dress.apply(&mut response);
                Handled::Answered(response)
            }
        }
    }

    /// The answer to a request that failed: a taken key as the operation's (or
    /// `[api]`'s) `conflict` when declared, else the `invalid` body with the refusal's
    /// detail; or a 500.
    fn failure(&self, failure: Failure, refusals: &crate::reply::Refusals) -> Response {
        let settings = &self.settings;
        match failure {
            Failure::Contract(detail) => {
                let taken = detail.get("code").and_then(Value::as_str) == Some("unique");
                if let Some(conflict) = refusals.conflict.as_ref().or(settings.conflict.as_ref()).filter(|_| taken) {
                    return Response::json(conflict.status, conflict.body.clone());
                }
                let (status, invalid) = match &refusals.invalid {
                    Some(own) => (own.status, &own.body),
                    None => (settings.invalid_status, &settings.invalid),
                };
                let invalid = match invalid {
                    Value::Object(map) => {
                        let mut map = map.clone();
                        map.insert("detail".into(), detail);
                        Value::Object(map)
                    }
                    other => other.clone(),
                };
                Response::json(status, invalid)
            }
            Failure::Internal(message) => internal(&message),
            Failure::TimedOut(limit) => handler_timeout(limit),
        }
    }

    /// The `before` gate, then the operation: a gate that lets the request through
    /// may have added headers and members to its answer (kept in `dress`).
    fn gated(&self, op: &OperationSettings, request: &Request, dress: &mut crate::vendor::Dress) -> Result<Handled, Failure> {
        if let Some(gate) = &self.settings.before {
            let (verdict, added) = self.call_handler(gate, request)?;
            dress.add(added.headers, added.fields);
            match verdict {
                HandlerOutcome::Body(Value::Null) => {}
                HandlerOutcome::Body(body) => return Ok(Handled::Answered(Response::json(200, body))),
                HandlerOutcome::Answer { status, body, headers } => {
                    return Ok(Handled::Answered(answer(status, body, headers.unwrap_or_default())))
                }
            }
        }
        self.answer(op, request, dress)
    }

    /// Run one handler (or the gate): its `ctx` writes one transaction, committed
    /// when it answered, rolled back when it failed; what it added to the answer.
    fn call_handler(&self, function: &str, request: &Request) -> Result<(HandlerOutcome, crate::ctx::Added), Failure> {
        let Some(worker) = &self.worker else {
            return Err(Failure::Internal(format!("no handlers module for {function}")));
        };
        let operation = request.operation;
        let payload = HandlerRequest {
            args: Value::Object(request.args.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect()),
            query: query_object(&request.query),
            body: request.body.clone(),
            headers: Value::Object(request.headers.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect()),
            operation: object([
                ("name", Value::str(&operation.name)),
                ("method", Value::str(&operation.method)),
                ("path", Value::str(&operation.path)),
                ("params", Value::Array(operation.params.iter().map(Value::str).collect())),
                ("entity", operation.entity.clone().map(Value::Str).unwrap_or_default()),
                ("results", Value::str(&operation.results)),
                ("placeholders", Value::Array(operation.placeholders().into_iter().map(Value::Str).collect())),
            ]),
            context: object([
                ("spec", self.handler_spec.clone()),
                ("settings", self.handler_settings.clone()),
                ("link", Value::Array(vec![Value::str(&request.link.0), query_object(&request.link.1)])),
                // A session with a frozen clock and seeded ids answers ctx.clock()
                // and ctx.uuid() itself.
                ("session", Value::Bool(self.determinism.is_some())),
            ]),
        };
        let pinned = self.state.pin();
        let writes = crate::state::handler_writes::HandlerWrites::new(&pinned);
        let mut host = crate::ctx::Host { app: self, link: &request.link, writes, added: Default::default() };
        let outcome = worker.call(function, &payload, &mut host);
        let crate::ctx::Host { writes, added, .. } = host;
        writes.finish(outcome.is_ok()).map_err(Failure::from)?;
        match outcome {
            Ok(outcome) => Ok((outcome, added)),
            Err(HandlerFailure::Contract(detail)) => Err(Failure::Contract(detail)),
            Err(HandlerFailure::Exception(message)) | Err(HandlerFailure::WorkerDied(message)) => Err(Failure::Internal(message)),
            Err(HandlerFailure::TimedOut(limit)) => Err(Failure::TimedOut(limit)),
        }
    }

    /// A body with `[api] success` merged in when the status is a success.
    fn succeeded(&self, status: i64, mut body: Value) -> Value {
        if (200..300).contains(&status) {
            crate::reply::succeed(&mut body, &self.settings.success);
        }
        body
    }

    /// An `action = "handler"` operation's answer: the handler's, with `[api] success`
    /// and what it added (`ctx.add_headers`, `ctx.add_fields`).
    fn answer_by_handler(&self, op: &OperationSettings, request: &Request) -> Result<Response, Failure> {
        let succeed = |status: i64, body: Value| self.succeeded(status, body);
        let (outcome, added) = self.call_handler(op.handler.as_deref().unwrap_or_default(), request)?;
        let mut response = match outcome {
            HandlerOutcome::Body(Value::Null) => Response { status: op.status as u16, body: None, headers: Vec::new(), file: None },
            HandlerOutcome::Body(body) => Response::json(op.status, succeed(op.status, body)),
            HandlerOutcome::Answer { status, body, headers } => answer(status, succeed(status, body), headers.unwrap_or_default()),
        };
        let mut own = crate::vendor::Dress::default();
        own.add(added.headers, added.fields);
        own.apply(&mut response);
        Ok(response)
    }

    fn answer(&self, op: &OperationSettings, request: &Request, dress: &crate::vendor::Dress) -> Result<Handled, Failure> {
        let operation = request.operation;
        let succeed = |status: i64, body: Value| self.succeeded(status, body);
        if let Some(missing) = op.required.iter().find(|name| !carries(request, name)) {
            let refused = self.failure(
                Failure::Contract(object([("code", Value::str("required")), ("message", Value::Str(format!("{missing} is required")))])),
                &op.refusals,
            );
            return Ok(Handled::Answered(refused));
        }
        if op.action == "static" {
            return Ok(Handled::Answered(Response::json(op.status, succeed(op.status, op.answer.clone().unwrap_or_default()))));
        }
        if op.action == "handler" {
            return self.answer_by_handler(op, request).map(Handled::Answered);
        }
        let Some(entity) = operation.entity.as_deref() else {
            return Ok(Handled::Answered(Response::json(
                501,
                object([("error", Value::str("not_modelled")), ("operation", Value::str(&operation.name))]),
            )));
        };
        let not_found = |own: Option<&Value>| Handled::Answered(self.not_found(op, own));
        let query = op.listing.apply(&request.query);
        let mut values: Vec<(String, String)> = query.iter().filter(|(k, _)| operation.params.contains(k)).cloned().collect();
        for (k, v) in &request.args {
            match values.iter_mut().find(|(name, _)| name == k) {
                Some(slot) => slot.1 = v.clone(),
                None => values.push((k.clone(), v.clone())),
            }
        }
        let parent = match &op.nesting {
            Some(nesting) => match crate::nested::resolve(&self.state, nesting, &values).map_err(Failure::from)? {
                Ok(parent) => Some((nesting, parent)),
                Err(step) => return Ok(not_found(step.not_found.as_ref())),
            },
            None => None,
        };
        if op.action == "create" {
            return self.stage_create(op, request, entity, parent.as_ref(), dress);
        }
        let mut filters: Vec<Filter> = op
            .filter
            .iter()
            .filter_map(|(arg, path)| {
                let wanted = values.iter().find(|(k, _)| k == arg)?.1.to_lowercase();
                let mode = op.matching.get(arg).cloned().unwrap_or_else(|| "equals".into());
                Some(Filter { path: path.clone(), mode, wanted })
            })
            .collect();
        if let Some((nesting, parent)) = &parent {
            // The parent's rows first: an indexed equality drives the lookup.
            let mut linked = crate::nested::link_filters(nesting, parent);
            linked.append(&mut filters);
            filters = linked;
        }
        if matches!(op.action.as_str(), "update" | "delete") {
            let (total, rows) = self.state.select(entity, &filters, Some((0, 2))).map_err(Failure::from)?;
            if total != 1 {
                return Ok(not_found(None));
            }
            let current = &rows[0];
            let declared = self.state.contract().entity(entity).map(|e| e.primary_key.clone()).unwrap_or_default();
            let key = object(declared.iter().map(|f| (f.clone(), current.get(f).cloned().unwrap_or_default())));
            let name = entity.to_string();
            let success = &self.settings.success;
            if op.action == "delete" {
                // The deleted row, for an answer shaped from it (`lift`, `wrap`).
                let deleted = current.clone();
                let job: WriteJob = Box::new(move |store| store.delete(&name, &key, Some(source("api.delete"))).map(|()| deleted));
                return Ok(Handled::Write(StagedWrite {
                    entity: entity.to_string(),
                    job,
                    reply: WriteReply::new(op, true, dress, success),
                }));
            }
            let patch = self.bind(op, &request.body, Some(current))?;
            let job: WriteJob =
                Box::new(move |store| store.update(&name, &key, &patch, Some(source("api.update"))).map(Option::unwrap_or_default));
            return Ok(Handled::Write(StagedWrite { entity: entity.to_string(), job, reply: WriteReply::new(op, false, dress, success) }));
        }
        if op.single {
            let (_, rows) = self.state.select(entity, &filters, Some((0, 1))).map_err(Failure::from)?;
            return Ok(match rows.into_iter().next() {
                Some(row) => Handled::Answered(Response::json(op.status, succeed(op.status, op.shape.apply(row)))),
                None => not_found(None),
            });
        }
        let paging = match &op.paging {
            None => self.settings.paging.clone(),
            Some(style) => Paging { style: style.clone(), ..self.settings.paging.clone() },
        };
        let span = window(&request.query, &paging);
        let (total, rows) = match op.listing.order(&query) {
            // Sorted: every match, ordered, then the page (the serving indexes keep key order).
            Some((field, descending)) => {
                let (_, mut rows) = self.state.select(entity, &filters, None).map_err(Failure::from)?;
                crate::listing::sort_rows(&mut rows, &field, descending);
                let total = rows.len() as i64;
                let (a, b) = match span {
                    Some((offset, limit)) => crate::page::python_slice(total, offset, offset.saturating_add(limit)),
                    None => (0, rows.len()),
                };
                (total, rows.drain(a..b).collect())
            }
            None => self.state.select(entity, &filters, span).map_err(Failure::from)?,
        };
        let page = match span {
            None => Page::whole(rows),
            Some((offset, limit)) => Page { rows, total, offset, limit, style: paging.style.clone() },
        };
        let headers = page_headers(&page, &self.settings, &paging, Some(&request.link)).unwrap_or_default();
        let body = wrap_with(page, &self.settings, op.envelope.as_deref(), op.more_key.as_ref(), &paging, Some(&request.link));
        Ok(Handled::Answered(Response { status: op.status as u16, body: Some(succeed(op.status, body)), headers, file: None }))
    }

    /// A create, staged for the writer: the bound row, its parent's link fields,
    /// integers taken and computed fields filled inside the writer.
    fn stage_create(
        &self,
        op: &OperationSettings,
        request: &Request,
        entity: &str,
        parent: Option<&(&crate::nested::Nesting, Value)>,
        dress: &crate::vendor::Dress,
    ) -> Result<Handled, Failure> {
        let mut row = self.bind(op, &request.body, None)?;
        if let (Some((nesting, parent)), Value::Object(map)) = (parent, &mut row) {
            crate::nested::fill(nesting, parent, map);
        }
        // Integers and timestamps are taken inside the writer, so concurrent creates
        // never read the same highest value; an `int-in-parent` counts among the
        // parent's rows.
        let in_writer = crate::generate::InWriter {
            fields: op
                .generate
                .iter()
                .filter(|(field, _)| !row.get(field.as_str()).is_some_and(|v| !matches!(v, Value::Null)))
                .filter_map(|(field, kind)| crate::generate::Kind::parse(kind).filter(|k| k.in_writer()).map(|k| (field.clone(), k)))
                .collect(),
            scope: parent.map(|(nesting, parent)| crate::nested::scope(nesting, parent)).unwrap_or_default(),
            now: self.clock(),
        };
        let compute = (!op.computed.is_empty()).then(|| {
            let (computed, base_url, args) = (op.computed.clone(), self.settings.base_url.clone(), request.args.clone());
            Box::new(move |row: &mut Value| crate::vendor::compute(row, &computed, &base_url, &args)) as crate::generate::Compute
        });
        let job = in_writer.create_job(self.state.contract(), entity, row, source("api.create"), compute);
        let reply = WriteReply::new(op, false, dress, &self.settings.success);
        Ok(Handled::Write(StagedWrite { entity: entity.to_string(), job, reply }))
    }

    /// The row a create or update writes: defaults, the body (mapped or as-is), generated fields.
    fn bind(&self, op: &OperationSettings, body: &Value, current: Option<&Value>) -> Result<Value, Failure> {
        let empty = Map::default();
        let body_map = body.as_object().unwrap_or(&empty);
        let mut row: Map = if current.is_none() { op.defaults.clone() } else { Map::default() };
        if op.body.is_empty() {
            for (k, v) in body_map {
                row.insert(k.clone(), v.clone());
            }
        } else {
            for (field, path) in &op.body {
                if let Some(value) = dig(body, path).filter(|v| !matches!(v, Value::Null)) {
                    set_dotted(&mut row, field, value.clone(), current);
                }
            }
        }
        if current.is_none() {
            for field in &op.nulls {
                if !row.contains_key(field) {
                    set_dotted(&mut row, field, Value::Null, None);
                }
            }
            for (field, kind) in &op.generate {
                if row.get(field).is_some_and(|v| !matches!(v, Value::Null)) {
                    continue;
                }
                let value = match crate::generate::Kind::parse(kind) {
                    Some(crate::generate::Kind::Uuid) => Value::Str(self.uuid()),
                    Some(crate::generate::Kind::Now) => Value::Str(self.now_iso()),
                    Some(crate::generate::Kind::Epoch) => Value::Int(self.clock().floor() as i64),
                    Some(crate::generate::Kind::Id(prefix)) => Value::Str(crate::generate::prefixed_id(&prefix, &self.uuid())),
                    // Taken inside the writer (see the create action).
                    _ => continue,
                };
                row.insert(field.clone(), value);
            }
        }
        Ok(Value::Object(row))
    }
}

impl WorldApp {
    /// The not-found answer of an operation: `own` (a parent step's body), else
    /// the operation's, else `[api]`'s; the status the operation's, else `[api]`'s.
    fn not_found(&self, op: &OperationSettings, own: Option<&Value>) -> Response {
        let declared = op.refusals.not_found.as_ref();
        let status = declared.map_or(self.settings.not_found_status, |r| r.status);
        let body = own.or(declared.map(|r| &r.body)).unwrap_or(&self.settings.not_found);
        Response::json(status, body.clone())
    }
}

/// Whether a request carries a value for `name`: a path argument, a parameter
/// (a body's too, with `body_params`) or a body member that is not null.
fn carries(request: &Request, name: &str) -> bool {
    request.args.iter().chain(&request.query).any(|(k, v)| k == name && !v.is_empty())
        || request.body.get(name).is_some_and(|v| !matches!(v, Value::Null))
}

pub(crate) fn source(record: &str) -> Value {
    object([("record", Value::str(record))])
}

fn internal(message: &str) -> Response {
    Response::json(500, object([("error", Value::str("internal_error")), ("detail", Value::str(message))]))
}

/// The 504 of a handler that did not answer in time (its worker was killed and restarts).
pub fn handler_timeout(limit: std::time::Duration) -> Response {
    Response::json(
        504,
        object([
            ("error", Value::str("handler_timeout")),
            ("detail", Value::str(format!("the world's handler did not answer within {} s", limit.as_secs_f64()))),
        ]),
    )
}

fn answer(status: i64, body: Value, headers: Vec<(String, String)>) -> Response {
    let body = if matches!(body, Value::Null) { None } else { Some(body) };
    Response { status: status.clamp(100, 999) as u16, body, headers, file: None }
}

/// Split a request target into its path and query.
pub fn split_target(target: &str) -> (&str, &str) {
    let without_fragment = target.split('#').next().unwrap_or("");
    without_fragment.split_once('?').unwrap_or((without_fragment, ""))
}

/// The original's `_set`: assign a dotted target, keeping siblings of nested objects.
/// Set a dotted field of a row (`owner.login`), making the objects on the way;
/// `current` (an update's row) supplies what an object it makes already held.
pub(crate) fn set_dotted(row: &mut Map, target: &str, value: Value, current: Option<&Value>) {
    let parts: Vec<&str> = target.split('.').collect();
    if parts.len() == 1 {
        row.insert(target.to_string(), value);
        return;
    }
    let head = parts[0];
    if !row.contains_key(head) {
        let base =
            current.and_then(|c| c.get(head)).filter(|b| b.as_object().is_some()).cloned().unwrap_or_else(|| Value::Object(Map::default()));
        row.insert(head.to_string(), base);
    }
    let mut node = row.get_mut(head).expect("inserted");
    for part in &parts[1..parts.len() - 1] {
        let Value::Object(map) = node else { return };
        if !matches!(map.get(*part), Some(Value::Object(_))) {
            map.insert(part.to_string(), Value::Object(Map::default()));
        }
        node = map.get_mut(*part).expect("inserted");
    }
    if let Value::Object(map) = node {
        map.insert(parts[parts.len() - 1].to_string(), value);
    }
}

struct Request<'a> {
    operation: &'a Operation,
    args: Vec<(String, String)>,
    query: Vec<(String, String)>,
    body: Value,
    headers: &'a [(String, String)],
    link: Link,
}

enum Failure {
    Contract(Value),
    Internal(String),
    /// A handler past its deadline: 504.
    TimedOut(std::time::Duration),
}

impl From<WorldError> for Failure {
    fn from(error: WorldError) -> Self {
        match error {
            WorldError::Contract(contract) => Failure::Contract(contract.detail()),
            other => Failure::Internal(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_sequence_draws_what_its_parent_would_draw_next() {
        let parent = Determinism::new(Some(1_767_225_600.0), 7);
        let _drawn = (parent.uuid(), parent.uuid());
        let fork = parent.fork();
        assert_eq!(fork.clock(), Some(1_767_225_600.0));
        let next: Vec<String> = (0..3).map(|_| parent.uuid()).collect();
        assert_eq!(next, (0..3).map(|_| fork.uuid()).collect::<Vec<_>>());
        fork.restart();
        assert_eq!(fork.uuid(), Determinism::new(None, 7).uuid(), "a reset starts the sequence again");
    }
}

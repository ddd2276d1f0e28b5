//! The client of live world sessions (`/api/public/world-sessions`, spec §5) and of
//! stored world tasks (`/api/public/world-tasks`, spec §6): the original's
//! `world_sessions._Client` / `WorldSession` and `world_tasks`, speaking the same
//! requests (method, path, URL-quoting, query, JSON body and member order), polling a
//! call until `done` with the same budgets, paging the call log, and turning the
//! platform's answers into the JSON objects the original CLI prints.
//!
//! It is not the server side of those endpoints, drives no browser (the original's
//! Playwright surface is not reproduced: [`Session::browser_surfaces`] stops where the
//! original would launch one), and parses no command line (that is `gateway-cli`).

use crate::client::truthy;
pub use crate::error::SessionError;
pub use crate::task_shapes::{python_int, read_task_spec, task_detail, task_page, task_summary, task_validation};
use crate::transport::{with_query, Cause, Dialect, EnvCredentials, Missing, Transport};
use crate::ClientError;
use gateway_common::url::quote;
use gateway_common::url::quote_plus;
use gateway_world::json::{self, object, python_repr, python_str, DumpOptions, Map, Value};
use reqwest::Method;
use std::time::{Duration, Instant};

const SESSIONS: &str = "/api/public/world-sessions";
const TASKS: &str = "/api/public/world-tasks";

/// How long `open` waits for a session to become ready, and how often it asks.
pub const READY_TIMEOUT_SEC: f64 = 600.0;
const READY_POLL: Duration = Duration::from_secs(2);
/// A call's budget, and the poll interval while it runs.
pub const CALL_TIMEOUT_SEC: f64 = 180.0;
const CALL_POLL: Duration = Duration::from_millis(400);
/// A grade the platform's judge finalizes (`pending: true`): its budget and poll.
pub const JUDGED_GRADE_TIMEOUT_SEC: f64 = 900.0;
const JUDGED_GRADE_POLL: Duration = Duration::from_secs(2);
/// Per-request timeout of the original's urllib calls.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The original's `_Client._request`: `Content-Type: application/json` on every request,
/// a transport failure with its causes, a refusal's first 400 characters.
const DIALECT: Dialect =
    Dialect { content_type_always: true, cause: Cause::Chain, detail_chars: 400, not_json: "the answer is not JSON", ..Dialect::URLLIB };
/// The original's refusals of a missing host or key pair.
const MISSING: Missing = Missing { host: "GATEWAY_HOST is required", keys: "GATEWAY_PUBLIC_KEY / GATEWAY_SECRET_KEY are required" };
/// The surfaces a session may be opened with.
pub const SURFACE_KINDS: [&str; 4] = ["tools", "api", "ui", "browser"];
/// What the platform answers in a descriptor when a browser names no viewport.
const DEFAULT_VIEWPORT: (i64, i64) = (1280, 800);

type Result<T> = std::result::Result<T, SessionError>;

fn fail(message: impl Into<String>) -> SessionError {
    SessionError::Failed(message.into())
}

/// A transport's failure, in its words (they are the original's `WorldSessionError`'s).
fn failed(error: ClientError) -> SessionError {
    SessionError::Failed(error.to_string())
}

fn is_number(value: &Value) -> bool {
    matches!(value, Value::Int(_) | Value::Float(_))
}

/// Where a stored task is pinned: keep what it has, unpin (`world: null`), or a slug.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum WorldPin {
    /// Neither `--world` nor `--no-world`: the member is not sent.
    #[default]
    Unset,
    /// `--no-world`: `world: null`.
    Unpin,
    /// `--world <slug>`.
    Slug(String),
}

impl WorldPin {
    fn insert(&self, body: &mut Map) {
        match self {
            WorldPin::Unset => {}
            WorldPin::Unpin => {
                body.insert("world".into(), Value::Null);
            }
            WorldPin::Slug(slug) => {
                body.insert("world".into(), Value::str(slug.clone()));
            }
        }
    }
}

/// `_check_task`: the one refusal made before a request is spent.
pub fn check_task(task: &Value) -> Result<()> {
    match task {
        Value::Str(name) if !name.trim().is_empty() => return Ok(()),
        Value::Object(map) if map.contains_key("id") => {
            if !matches!(map.get("id"), Some(Value::Str(id)) if !id.trim().is_empty()) {
                return Err(fail("open_session task id must be a non-empty string"));
            }
            return match map.get("version") {
                None | Some(Value::Null) => Ok(()),
                Some(Value::Int(v)) if *v >= 1 => Ok(()),
                Some(Value::Bool(true)) => Ok(()),
                Some(_) => Err(fail("open_session task version must be a positive integer")),
            };
        }
        Value::Object(map) => {
            if matches!(map.get("instruction"), Some(Value::Str(text)) if !text.trim().is_empty()) {
                return Ok(());
            }
        }
        _ => {}
    }
    Err(fail("open_session needs a task: a bundled task name, a stored task {'id': ...} or a spec with an instruction"))
}

/// An authenticated client of the sessions and tasks API.
#[derive(Debug, Clone)]
pub struct SessionsClient {
    transport: Transport,
}

impl SessionsClient {
    /// From `--host` (else `GATEWAY_HOST`) and the key pair in the environment, with
    /// the original's refusals.
    pub fn from_env(host: Option<&str>) -> Result<SessionsClient> {
        let credentials = EnvCredentials::read(host);
        // A host of slashes alone is no host.
        let host = credentials.host.trim_end_matches('/');
        let transport = Transport::with_key_pair(host, &credentials.public_key, &credentials.secret_key, MISSING, REQUEST_TIMEOUT);
        Ok(SessionsClient { transport: transport.map_err(failed)? })
    }

    /// One JSON request. `Content-Type: application/json` goes on every request, as
    /// the original sends it; a non-2xx answer is `"<METHOD> <path> -> <code>: <first
    /// 400 characters of the body>"`.
    pub fn request(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value> {
        self.transport.call(&DIALECT, method, path, body).map_err(failed)
    }

    /// `open_session`: check the task, then `POST /world-sessions` with
    /// `{task, reuseWarm: true, surfaces?, versionId | slug}` (the slug without `@ref`).
    pub fn open(&self, slug: &str, task: &Value, version_id: Option<&str>, surfaces: &[String]) -> Result<Session<'_>> {
        let mut body = Map::default();
        body.insert("task".into(), task.clone());
        body.insert("reuseWarm".into(), Value::Bool(true));
        if !surfaces.is_empty() {
            let mut unknown: Vec<&String> = surfaces.iter().filter(|s| !SURFACE_KINDS.contains(&s.as_str())).collect();
            unknown.sort();
            unknown.dedup();
            if !unknown.is_empty() {
                let listed = Value::Array(unknown.into_iter().map(|s| Value::str(s.clone())).collect());
                return Err(fail(format!(
                    "Unknown world surfaces: {}; choose from ('tools', 'api', 'ui', 'browser')",
                    python_repr(&listed)
                )));
            }
            body.insert("surfaces".into(), Value::Array(surfaces.iter().map(|s| Value::str(s.clone())).collect()));
        }
        match version_id.filter(|v| !v.is_empty()) {
            Some(version_id) => body.insert("versionId".into(), Value::str(version_id)),
            None => body.insert("slug".into(), Value::str(slug.split('@').next().unwrap_or_default())),
        };
        let state = self.request(Method::POST, SESSIONS, Some(&Value::Object(body)))?;
        let id = match state.get("sessionId") {
            Some(Value::Str(id)) => id.clone(),
            Some(other) if !matches!(other, Value::Null) => python_str(other),
            _ => return Err(fail(format!("POST {SESSIONS} answered without a sessionId"))),
        };
        Ok(Session { client: self, id, state: into_map(state) })
    }

    /// `attach_session`: `GET /world-sessions/{id}`.
    pub fn attach(&self, session_id: &str) -> Result<Session<'_>> {
        let state = self.request(Method::GET, &session_path(session_id), None)?;
        Ok(Session { client: self, id: session_id.to_string(), state: into_map(state) })
    }

    /// Beyond the original: `POST /world-sessions/{id}/fork` (no body) — a new session
    /// holding a copy of that one's state now, with its own id and token, answered as
    /// an open is (plus `forkedFrom`).
    pub fn fork_session(&self, session_id: &str) -> Result<Session<'_>> {
        let path = format!("{}/fork", session_path(session_id));
        let state = self.request(Method::POST, &path, None)?;
        let id = match state.get("sessionId") {
            Some(Value::Str(id)) => id.clone(),
            _ => return Err(fail(format!("POST {path} answered without a sessionId"))),
        };
        Ok(Session { client: self, id, state: into_map(state) })
    }

    // ------------------------------------------------------------- stored tasks

    /// `create_task`: `POST /world-tasks` with `{spec, name?, world?, message?}`; the
    /// printed summary.
    pub fn create_task(&self, spec: &Value, name: Option<&str>, world: Option<&str>, message: Option<&str>) -> Result<Value> {
        let mut body = Map::default();
        body.insert("spec".into(), spec.clone());
        for (key, value) in [("name", name), ("world", world), ("message", message)] {
            if let Some(value) = value {
                body.insert(key.into(), Value::str(value));
            }
        }
        task_summary(&self.request(Method::POST, TASKS, Some(&Value::Object(body)))?)
    }

    /// `update_task`: `PATCH /world-tasks/{id}` with `{spec?, name?, message?, world?}`.
    pub fn update_task(
        &self,
        task_id: &str,
        spec: Option<&Value>,
        name: Option<&str>,
        world: &WorldPin,
        message: Option<&str>,
    ) -> Result<Value> {
        if spec.is_none() && name.is_none() && *world == WorldPin::Unset {
            return Err(fail("update_task: nothing to update — pass spec, name or world"));
        }
        let mut body = Map::default();
        if let Some(spec) = spec {
            body.insert("spec".into(), spec.clone());
        }
        for (key, value) in [("name", name), ("message", message)] {
            if let Some(value) = value {
                body.insert(key.into(), Value::str(value));
            }
        }
        world.insert(&mut body);
        task_summary(&self.request(Method::PATCH, &task_path(task_id), Some(&Value::Object(body)))?)
    }

    /// `list_tasks`: `GET /world-tasks?world=&page=&limit=&metadata.<k>=<v>…`; the
    /// printed `{tasks, meta}`.
    pub fn list_tasks(&self, world: Option<&str>, metadata: &[(String, String)], page: Option<i64>, limit: Option<i64>) -> Result<Value> {
        let mut params: Vec<(String, String)> = Vec::new();
        if let Some(world) = world.filter(|w| !w.is_empty()) {
            params.push(("world".into(), world.into()));
        }
        if let Some(page) = page {
            params.push(("page".into(), page.to_string()));
        }
        if let Some(limit) = limit {
            params.push(("limit".into(), limit.to_string()));
        }
        for (key, value) in metadata {
            params.push((format!("metadata.{key}"), value.clone()));
        }
        task_page(&self.request(Method::GET, &with_query(TASKS, params), None)?)
    }

    /// `get_task`: `GET /world-tasks/{id}[?version=N]`; the printed detail.
    pub fn get_task(&self, task_id: &str, version: Option<i64>) -> Result<Value> {
        let query = version.map(|v| format!("?version={v}")).unwrap_or_default();
        task_detail(&self.request(Method::GET, &format!("{}{query}", task_path(task_id)), None)?)
    }

    /// `delete_task`: `DELETE /world-tasks/{id}` (no body); the answer as-is.
    pub fn delete_task(&self, task_id: &str) -> Result<Value> {
        self.request(Method::DELETE, &task_path(task_id), None)
    }

    /// `validate_task`: `POST /world-tasks/{id}/validate` with `{version?, slug?,
    /// versionId?}`; the printed validation and its `ok`.
    pub fn validate_task(
        &self,
        task_id: &str,
        version: Option<i64>,
        slug: Option<&str>,
        version_id: Option<&str>,
    ) -> Result<(Value, bool)> {
        let mut body = Map::default();
        if let Some(version) = version {
            body.insert("version".into(), Value::Int(version));
        }
        if let Some(slug) = slug {
            body.insert("slug".into(), Value::str(slug));
        }
        if let Some(version_id) = version_id {
            body.insert("versionId".into(), Value::str(version_id));
        }
        let raw = self.request(Method::POST, &format!("{}/validate", task_path(task_id)), Some(&Value::Object(body)))?;
        Ok(task_validation(&raw))
    }
}

fn into_map(value: Value) -> Map {
    match value {
        Value::Object(map) => map,
        _ => Map::default(),
    }
}

fn session_path(session_id: &str) -> String {
    format!("{SESSIONS}/{}", quote(session_id, "/"))
}

fn task_path(task_id: &str) -> String {
    format!("{TASKS}/{}", quote(task_id, ""))
}

/// The session's surfaces, parsed as `SessionSurfaces.from_descriptor` does.
#[derive(Debug, Clone, Default)]
pub struct Surfaces {
    /// `api`: `{url, token?}`.
    pub api: Option<(Value, Option<Value>)>,
    /// `ui`: url, entry, apiPath, token.
    pub ui: Option<UiSurface>,
    /// `browser`: wsUrl and viewport.
    pub browser: Option<(Value, Value)>,
}

/// A session's UI surface.
#[derive(Debug, Clone)]
pub struct UiSurface {
    /// Base URL.
    pub url: Value,
    /// Entry path (default `/`).
    pub entry: Value,
    /// Same-origin API prefix, if any.
    pub api_path: Value,
    /// Per-session token, presented once as `?token=`.
    pub token: Option<Value>,
}

impl UiSurface {
    /// `entry_url`: the entry page's URL, carrying the token when there is one.
    pub fn entry_url(&self) -> String {
        let entry = python_str(&self.entry);
        let rel = if entry.starts_with('/') { entry } else { format!("/{entry}") };
        let full = format!("{}{rel}", python_str(&self.url).trim_end_matches('/'));
        let Some(token) = &self.token else { return full };
        let (before, fragment) = match full.split_once('#') {
            Some((before, fragment)) => (before.to_string(), format!("#{fragment}")),
            None => (full.clone(), String::new()),
        };
        let joiner = if before.contains('?') { '&' } else { '?' };
        format!("{before}{joiner}token={}{fragment}", quote_plus(&python_str(token)))
    }
}

impl Surfaces {
    fn parse(raw: Option<&Value>) -> Surfaces {
        let empty = Map::default();
        let raw = match raw {
            Some(Value::Object(map)) => map,
            _ => &empty,
        };
        let member = |name: &str| raw.get(name).filter(|v| truthy(v)).and_then(Value::as_object);
        let field = |map: &Map, key: &str| map.get(key).cloned().unwrap_or(Value::Null);
        let or_none = |map: &Map, key: &str| map.get(key).filter(|v| truthy(v)).cloned();
        Surfaces {
            api: member("api").map(|api| (field(api, "url"), or_none(api, "token"))),
            ui: member("ui").map(|ui| UiSurface {
                url: field(ui, "url"),
                entry: or_none(ui, "entry").unwrap_or_else(|| Value::str("/")),
                api_path: or_none(ui, "apiPath").unwrap_or(Value::Null),
                token: or_none(ui, "token"),
            }),
            browser: member("browser").map(|browser| {
                let viewport = or_none(browser, "viewport")
                    .unwrap_or_else(|| object([("width", Value::Int(DEFAULT_VIEWPORT.0)), ("height", Value::Int(DEFAULT_VIEWPORT.1))]));
                (field(browser, "wsUrl"), viewport)
            }),
        }
    }

    /// `kinds`: `tools` plus each surface present.
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut kinds = vec!["tools"];
        if self.api.is_some() {
            kinds.push("api");
        }
        if self.ui.is_some() {
            kinds.push("ui");
        }
        if self.browser.is_some() {
            kinds.push("browser");
        }
        kinds
    }
}

/// One live session, driven through the platform.
#[derive(Debug)]
pub struct Session<'a> {
    client: &'a SessionsClient,
    id: String,
    state: Map,
}

impl Session<'_> {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The state as last read.
    pub fn state(&self) -> &Map {
        &self.state
    }

    /// `is_ready`: whether the last read said ready (no request).
    pub fn is_ready(&self) -> bool {
        self.state.get("ready").is_some_and(truthy)
    }

    fn base(&self) -> String {
        session_path(&self.id)
    }

    /// `status`: `GET /world-sessions/{id}`, merged into the state (nulls never blank
    /// what is known).
    pub fn status(&mut self) -> Result<&Map> {
        let fresh = self.client.request(Method::GET, &self.base(), None)?;
        for (key, value) in into_map(fresh) {
            if !matches!(value, Value::Null) {
                self.state.insert(key, value);
            }
        }
        Ok(&self.state)
    }

    /// `ready`: poll the status every 2 s until ready, FAILED/STOPPED, or `timeout`.
    pub fn ready(&mut self, timeout: f64) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs_f64(timeout);
        loop {
            let state = self.status()?;
            if state.get("ready").is_some_and(truthy) {
                return Ok(());
            }
            let phase = state.get("state").cloned();
            if let Some(Value::Str(phase)) = &phase {
                if phase == "FAILED" || phase == "STOPPED" {
                    return Err(fail(format!("World session {} before it was ready.", phase.to_lowercase())));
                }
            }
            if Instant::now() > deadline {
                return Err(SessionError::Timeout(format!(
                    "World session still {} after {}s.",
                    python_str(&phase.unwrap_or(Value::Null)),
                    timeout as i64
                )));
            }
            std::thread::sleep(READY_POLL);
        }
    }

    /// `_exchange`: `POST …/calls`, then `GET …/calls/{callId}` until `done`. `None`
    /// takes the budget of the call's kind (a judged grade: 900 s, polled every 2 s).
    pub fn exchange(&mut self, body: &Value, timeout: Option<f64>) -> Result<Value> {
        let base = self.base();
        let enqueued = self.client.request(Method::POST, &format!("{base}/calls"), Some(body))?;
        let call_id = match enqueued.get("callId") {
            Some(Value::Str(id)) => id.clone(),
            Some(other) if !matches!(other, Value::Null) => python_str(other),
            _ => return Err(fail(format!("POST {base}/calls answered without a callId"))),
        };
        let judged = matches!(enqueued.get("pending"), Some(Value::Bool(true)));
        let timeout = timeout.unwrap_or(if judged { JUDGED_GRADE_TIMEOUT_SEC } else { CALL_TIMEOUT_SEC });
        let poll = if judged { JUDGED_GRADE_POLL } else { CALL_POLL };
        let deadline = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        let path = format!("{base}/calls/{}", quote(&call_id, "/"));
        loop {
            let call = self.client.request(Method::GET, &path, None)?;
            if call.get("done").is_some_and(truthy) {
                if let Some(error) = call.get("error").filter(|e| truthy(e)) {
                    return Err(fail(python_str(error)));
                }
                return Ok(call.get("result").cloned().unwrap_or(Value::Null));
            }
            if Instant::now() > deadline {
                let phase = python_str(call.get("state").unwrap_or(&Value::Null));
                let seconds = timeout as i64;
                return Err(SessionError::Timeout(if judged {
                    format!(
                        "Grade {call_id} still {phase} after {seconds}s — the judge has not answered; the platform finalizes the call on its own, read it back with export()."
                    )
                } else {
                    format!("Call {call_id} still {phase} after {seconds}s — the container may have died.")
                }));
            }
            std::thread::sleep(poll);
        }
    }

    /// `state`: every entity's rows as the world holds them now.
    pub fn world_state(&mut self) -> Result<Value> {
        self.exchange(&object([("kind", Value::str("state"))]), Some(CALL_TIMEOUT_SEC))
    }

    /// `reset`: back to the opening state.
    pub fn reset(&mut self) -> Result<()> {
        self.exchange(&object([("kind", Value::str("reset"))]), Some(CALL_TIMEOUT_SEC)).map(|_| ())
    }

    /// `grade`: the grader's payload (a non-object is wrapped as `{reward: null, raw}`).
    pub fn grade(&mut self, timeout: Option<f64>) -> Result<Value> {
        let raw = self.exchange(&object([("kind", Value::str("grade"))]), timeout)?;
        Ok(match raw {
            Value::Object(_) => raw,
            other => object([("reward", Value::Null), ("raw", other)]),
        })
    }

    /// `seed`: `{kind: "seed", args: {mode, rows}}` (mode `append` or `replace`).
    pub fn seed(&mut self, rows: Value, mode: gateway_world::plan::Mode) -> Result<Value> {
        let args = object([("mode", Value::str(mode.as_str())), ("rows", rows)]);
        self.exchange(&object([("kind", Value::str("seed")), ("args", args)]), Some(CALL_TIMEOUT_SEC))
    }

    /// `calls`: the whole call log, oldest first, paged `limit=500` by `cursor`.
    pub fn calls(&self) -> Result<Vec<Map>> {
        let base = self.base();
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut query = "limit=500".to_string();
            if let Some(cursor) = &cursor {
                query.push_str(&format!("&cursor={}", quote(cursor, "/")));
            }
            let listed = self.client.request(Method::GET, &format!("{base}/calls?{query}"), None)?;
            let rows = match &listed {
                Value::Object(map) => map.get("calls"),
                other => Some(other),
            };
            let Some(Value::Array(rows)) = rows else {
                return Err(fail(format!("GET {base}/calls answered without a call list")));
            };
            out.extend(rows.iter().filter_map(|row| row.as_object().cloned()));
            cursor = listed.get("nextCursor").filter(|c| truthy(c)).map(python_str);
            if cursor.is_none() || rows.is_empty() {
                return Ok(out);
            }
        }
    }

    /// `close`: `DELETE /world-sessions/{id}` with `{keepWarm}`; the answer as-is.
    pub fn close(&self, keep_warm: bool) -> Result<Value> {
        self.client.request(Method::DELETE, &self.base(), Some(&object([("keepWarm", Value::Bool(keep_warm))])))
    }

    /// `save_task`: `POST …/task` with `{name?, world?, message?}`; the printed summary.
    pub fn save_task(&self, name: Option<&str>, world: &WorldPin, message: Option<&str>) -> Result<Value> {
        let mut body = Map::default();
        if let Some(name) = name {
            body.insert("name".into(), Value::str(name));
        }
        world.insert(&mut body);
        if let Some(message) = message {
            body.insert("message".into(), Value::str(message));
        }
        task_summary(&self.client.request(Method::POST, &format!("{}/task", self.base()), Some(&Value::Object(body)))?)
    }

    /// `surfaces`: parsed from the state, read again from the platform when the state
    /// has none.
    pub fn surfaces(&mut self) -> Result<Surfaces> {
        if matches!(self.state.get("surfaces"), None | Some(Value::Null)) {
            let fresh = self.status()?.get("surfaces").cloned();
            return Ok(Surfaces::parse(fresh.as_ref()));
        }
        Ok(Surfaces::parse(self.state.get("surfaces")))
    }

    /// `_surfaces_json`: `{sessionId, surfaces: [kinds], api?, ui?, browser?}`.
    pub fn surfaces_json(&mut self) -> Result<Map> {
        let surfaces = self.surfaces()?;
        let mut out = Map::default();
        out.insert("sessionId".into(), Value::str(self.id.clone()));
        out.insert("surfaces".into(), Value::Array(surfaces.kinds().into_iter().map(Value::str).collect()));
        if let Some((url, token)) = &surfaces.api {
            let mut api = Map::default();
            api.insert("url".into(), url.clone());
            if let Some(token) = token {
                api.insert("token".into(), token.clone());
            }
            out.insert("api".into(), Value::Object(api));
        }
        if let Some(ui) = &surfaces.ui {
            out.insert(
                "ui".into(),
                object([("url", ui.url.clone()), ("entry", Value::Str(ui.entry_url())), ("apiPath", ui.api_path.clone())]),
            );
        }
        if let Some((ws_url, viewport)) = &surfaces.browser {
            out.insert("browser".into(), object([("wsUrl", ws_url.clone()), ("viewport", viewport.clone())]));
        }
        Ok(out)
    }

    /// `_task_json`: the platform's task block (`WorldSessionTask.from_state`).
    pub fn task_json(&self) -> Value {
        let mut out = Map::default();
        match self.state.get("task") {
            Some(Value::Object(raw)) => {
                let source = match raw.get("source") {
                    Some(Value::Str(s)) if ["bundled", "inline", "stored"].contains(&s.as_str()) => s.clone(),
                    _ => "bundled".to_string(),
                };
                let field = |key: &str| raw.get(key).cloned().unwrap_or(Value::Null);
                out.insert("source".into(), Value::str(source.clone()));
                out.insert("name".into(), field("name"));
                out.insert("hash".into(), field("hash"));
                out.insert("metadata".into(), Value::Object(raw.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default()));
                if source == "stored" {
                    out.insert("id".into(), field("id"));
                    let version = match raw.get("version") {
                        Some(Value::Int(v)) => Value::Int(*v),
                        Some(Value::Bool(b)) => Value::Int(i64::from(*b)),
                        _ => Value::Null,
                    };
                    out.insert("version".into(), version);
                }
            }
            _ => {
                out.insert("source".into(), Value::str("bundled"));
                out.insert("name".into(), self.state.get("taskName").cloned().unwrap_or(Value::Null));
                out.insert("hash".into(), Value::Null);
                out.insert("metadata".into(), Value::Object(Map::default()));
            }
        }
        Value::Object(out)
    }

    /// What `session open` prints: `{sessionId, surfaces, api?, ui?, browser?, ready, task}`.
    pub fn descriptor(&mut self, ready: bool) -> Result<Value> {
        let mut out = self.surfaces_json()?;
        out.insert("ready".into(), Value::Bool(ready));
        out.insert("task".into(), self.task_json());
        Ok(Value::Object(out))
    }

    /// The surfaces `session browse` would drive, with the original's refusals when the
    /// session has no UI (or no hosted browser for `--mode hosted`); the surfaces otherwise.
    /// As in the original, the surfaces are read (possibly re-fetched) before `mode` is checked.
    pub fn browser_surfaces(&mut self, mode: BrowseMode) -> Result<Surfaces> {
        let surfaces = self.surfaces()?;
        if surfaces.ui.is_none() && surfaces.browser.is_none() {
            return Err(fail("World surface 'ui' is unavailable: open the session with surfaces=['ui'] on a world that declares [ui]"));
        }
        if mode == BrowseMode::Hosted && surfaces.browser.is_none() {
            return Err(fail("World surface 'browser' is unavailable: open the session with surfaces=['browser'] to get a hosted browser"));
        }
        Ok(surfaces)
    }
}

/// Where `session browse` opens the world's UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum BrowseMode {
    /// The session's hosted browser.
    Hosted,
    /// A browser on this machine.
    Local,
    /// Hosted when the session has one, else local.
    #[default]
    Auto,
}

/// `named_rewards`: numeric entries of a nested `rewards` object, then numeric
/// top-level members (besides `reward` / `rewards`); booleans are not rewards.
pub fn named_rewards(graded: &Value) -> Map {
    let mut rewards = Map::default();
    if let Some(Value::Object(nested)) = graded.get("rewards") {
        for (key, value) in nested {
            if is_number(value) {
                rewards.insert(key.clone(), value.clone());
            }
        }
    }
    if let Some(map) = graded.as_object() {
        for (key, value) in map {
            if key != "reward" && key != "rewards" && is_number(value) {
                rewards.insert(key.clone(), value.clone());
            }
        }
    }
    rewards
}

/// What `session grade` prints: `{sessionId, reward, rewards, raw}`.
pub fn grade_report(session_id: &str, raw: &Value) -> Value {
    let reward = raw.get("reward").filter(|r| is_number(r)).cloned().unwrap_or(Value::Null);
    object([
        ("sessionId", Value::str(session_id)),
        ("reward", reward),
        ("rewards", Value::Object(named_rewards(raw))),
        ("raw", raw.clone()),
    ])
}

/// `session export`'s JSONL lines: `{seq, kind, tool, args, result, error,
/// completedAt}` of each call (the original's seven), keys sorted, and beyond the
/// original, those of [`EXPORT_EXTRA`] the call has: where it was made (`surface`:
/// `control` for the calls API, `api` / `mcp` for the agent's own calls on a hub
/// session's data plane) and, for those, the request and how it ended.
pub fn export_lines(calls: &[Map]) -> Vec<String> {
    const KEYS: [&str; 7] = ["seq", "kind", "tool", "args", "result", "error", "completedAt"];
    calls
        .iter()
        .map(|call| {
            let mut row = object(KEYS.iter().map(|k| (*k, call.get(*k).cloned().unwrap_or(Value::Null))));
            if let Value::Object(map) = &mut row {
                for key in EXPORT_EXTRA {
                    if let Some(value) = call.get(key) {
                        map.insert(key.into(), value.clone());
                    }
                }
            }
            json::dumps(&row, DumpOptions::CLI)
        })
        .collect()
}

/// The members of a call-log entry `session export` writes when present, beyond the
/// original's seven.
pub const EXPORT_EXTRA: [&str; 11] = [
    "surface",
    "method",
    "path",
    "status",
    "rpcMethod",
    "isError",
    "durationMs",
    "argsTruncated",
    "argsBytes",
    "resultTruncated",
    "resultBytes",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_matches_urllib() {
        assert_eq!(quote("ws 2/x", "/"), "ws%202/x");
        assert_eq!(quote("t/1 é", ""), "t%2F1%20%C3%A9");
        assert_eq!(quote_plus("c/d=e f"), "c%2Fd%3De+f");
    }

    #[test]
    fn task_checks() {
        assert!(check_task(&Value::str("  ")).is_err());
        assert!(check_task(&object([("id", Value::str("t")), ("version", Value::Int(0))])).is_err());
        assert!(check_task(&object([("instruction", Value::str("do"))])).is_ok());
    }
}

//! The session registry and the control operations: open, close, renew, reset,
//! seed, state, grade, call, export. Synchronous (SQLite, the handler worker and
//! graders block); the server runs them on tokio's blocking pool.

use crate::error::{refuse, HostError, TransferError, UNKNOWN_SESSION};
use crate::session::{now, Export, Session, SessionParts, SessionTask};
use crate::version::{Fetch, VersionCache};
use gateway_serve::app::WorldApp;
use gateway_serve::handlers::WorkerOptions;
use gateway_serve::router::Router;
use gateway_world::json::{object, Map, Value};
use gateway_world::task::TaskSpec;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

mod fork;
mod grading;

/// How long a session lives with no call renewing it (`WORLDS_HOST_LEASE_S`).
pub const DEFAULT_LEASE_SECONDS: f64 = 3600.0;
/// Sessions one host takes before it answers `at_capacity` (`WORLDS_HOST_MAX_SESSIONS`).
pub const DEFAULT_MAX_SESSIONS: usize = 1500;
/// A grader's time limit when its task names none.
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(30);

/// Moves exported session files to and from the platform's object store.
pub trait Objects: Send + Sync {
    /// Download `url` into the file `dest`.
    fn download(&self, url: &str, dest: &Path) -> Result<(), TransferError>;
    /// PUT the file at `url` (presigned), announcing its SHA-256 and size.
    fn upload(&self, url: &str, path: &Path, sha256_hex: &str, size: u64) -> Result<(), TransferError>;
}

/// `file://` objects only: a host on one machine, and tests.
#[derive(Debug, Default)]
pub struct LocalObjects;

impl Objects for LocalObjects {
    fn download(&self, url: &str, dest: &Path) -> Result<(), TransferError> {
        let path = url.strip_prefix("file://").ok_or_else(|| TransferError::NotFileUrl(url.to_string()))?;
        std::fs::copy(path, dest)?;
        Ok(())
    }
    fn upload(&self, url: &str, path: &Path, _sha256_hex: &str, _size: u64) -> Result<(), TransferError> {
        let target = url.strip_prefix("file://").ok_or_else(|| TransferError::NotFileUrl(url.to_string()))?;
        std::fs::copy(path, target)?;
        Ok(())
    }
}

/// How a host is set up.
pub struct HostConfig {
    /// Where versions and sessions live on disk.
    pub root: PathBuf,
    /// Lease length, in seconds.
    pub lease_seconds: f64,
    /// Most sessions held at once.
    pub max_sessions: usize,
    /// The control-plane address the platform reaches this host at.
    pub advertise_url: Option<String>,
    /// Fetches a version's bundle.
    pub fetch: Fetch,
    /// Moves exports.
    pub objects: Arc<dyn Objects>,
    /// How world code runs (handler and tool workers, python graders): confined by
    /// default, with a deadline per call.
    pub workers: WorkerOptions,
}

impl HostConfig {
    /// A host under `root` with the defaults and `file://` objects only.
    pub fn local(root: PathBuf) -> HostConfig {
        HostConfig {
            root,
            lease_seconds: DEFAULT_LEASE_SECONDS,
            max_sessions: DEFAULT_MAX_SESSIONS,
            advertise_url: None,
            fetch: Arc::new(crate::version::local_fetch),
            objects: Arc::new(LocalObjects),
            // A host of one's own (tests, `worlds mcp`, `worlds run`): confined where the
            // machine can; `host serve` and a hub set strictly confined options.
            workers: WorkerOptions::local(),
        }
    }
}

/// An open request (`POST /__host/sessions`).
#[derive(Debug, Clone, Default)]
pub struct OpenRequest {
    /// The platform's session id.
    pub session_id: String,
    /// The version to open.
    pub version_id: String,
    /// Where its bundle is.
    pub bundle_url: String,
    /// A bundled task (scenario) name.
    pub task: Option<String>,
    /// A task spec of the session's own, parsed once by whoever made the request
    /// (a platform in this process shares its value; `from_http` parses a remote one).
    pub task_spec: Option<Arc<TaskSpec>>,
    /// The data plane's token.
    pub token: Option<String>,
    /// An export to continue from: `{url, sha256}`.
    pub restore: Option<Value>,
}

impl OpenRequest {
    /// The refusal of an open that names a bundled task and carries a spec, or
    /// neither: it takes one of the two.
    pub fn one_task(bundled: bool, spec: bool) -> Result<(), HostError> {
        if bundled == spec {
            return Err(refuse("host", "an open names a bundled task or carries a task spec, one of the two"));
        }
        Ok(())
    }
}

/// The World Host.
pub struct WorldHost {
    config: HostConfig,
    /// The versions this host has cached.
    pub versions: VersionCache,
    sessions: RwLock<HashMap<String, Arc<Session>>>,
    /// Ids being opened: each holds one of `max_sessions` while it opens.
    opening: Mutex<HashSet<String>>,
    draining: AtomicBool,
    started_at: f64,
    counters: Mutex<BTreeMap<String, i64>>,
    session_seconds: Mutex<f64>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WorldHost {
    /// A host with `config`. Whatever an earlier process left under its sessions
    /// directory is unreachable now, and removed.
    pub fn new(config: HostConfig) -> WorldHost {
        let sessions = config.root.join("sessions");
        let _ = std::fs::remove_dir_all(&sessions);
        let _ = std::fs::create_dir_all(&sessions);
        let versions = VersionCache::new(config.root.join("versions"), config.fetch.clone(), config.workers.clone());
        WorldHost {
            config,
            versions,
            sessions: RwLock::default(),
            opening: Mutex::default(),
            draining: AtomicBool::new(false),
            started_at: now(),
            counters: Mutex::default(),
            session_seconds: Mutex::new(0.0),
        }
    }

    /// The lease length, in seconds.
    pub fn lease_seconds(&self) -> f64 {
        self.config.lease_seconds
    }

    fn tally(&self, key: &str) {
        *lock(&self.counters).entry(key.to_string()).or_default() += 1;
    }

    /// Count a data-plane request on `surface`.
    pub fn count_request(&self, surface: &str) {
        self.tally(&format!("requests.{surface}"));
    }

    /// The session, renewed (and `touch`ed: the world is being used), or
    /// `unknown_session`.
    pub fn using(&self, session_id: &str, touch: bool) -> Result<Arc<Session>, HostError> {
        let session = self.sessions.read().unwrap_or_else(PoisonError::into_inner).get(session_id).cloned();
        let Some(session) = session else {
            return Err(refuse(UNKNOWN_SESSION, format!("no session {session_id} on this host")));
        };
        session.renew(self.config.lease_seconds, touch);
        Ok(session)
    }

    /// The task spec a held session was opened on (shared, not renewed: reading it
    /// is not using the world), when it has one.
    pub fn task_spec(&self, session_id: &str) -> Option<Arc<TaskSpec>> {
        let sessions = self.sessions.read().unwrap_or_else(PoisonError::into_inner);
        sessions.get(session_id).and_then(|session| session.task().shared_spec().cloned())
    }

    /// Whether this host holds the session.
    pub fn owns(&self, session_id: &str) -> bool {
        self.sessions.read().unwrap_or_else(PoisonError::into_inner).contains_key(session_id)
    }

    /// Sessions held.
    pub fn session_count(&self) -> usize {
        self.sessions.read().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Stop taking sessions; the ones held are served until they close.
    pub fn drain(&self) -> Value {
        self.draining.store(true, Ordering::SeqCst);
        object([("draining", Value::Bool(true)), ("sessions", Value::Int(self.session_count() as i64))])
    }

    /// Whether the host is draining.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Open a session (idempotent for a retry of the same version, task and token).
    pub fn open(&self, request: OpenRequest) -> Result<Value, HostError> {
        OpenRequest::one_task(request.task.is_some(), request.task_spec.is_some())?;
        let existing = self.sessions.read().unwrap_or_else(PoisonError::into_inner).get(&request.session_id).cloned();
        if let Some(existing) = existing {
            let same_task = match (existing.task(), &request.task, &request.task_spec) {
                (SessionTask::Bundled(name), Some(task), None) => name == task,
                (SessionTask::Spec(held), None, Some(spec)) => gateway_world::json::json_equal(&held.to_value(), &spec.to_value()),
                _ => false,
            };
            if existing.version().id != request.version_id || !same_task || existing.token() != request.token.as_deref() {
                return Err(refuse("host", format!("session {} is already open as another version, task or token", request.session_id)));
            }
            return Ok(self.describe(&existing));
        }
        self.reserve_open_slot(&request.session_id)?;
        let opened = self.open_new(&request);
        lock(&self.opening).remove(&request.session_id);
        match opened {
            Ok(session) => {
                let described = self.describe(&session);
                self.sessions.write().unwrap_or_else(PoisonError::into_inner).insert(session.id().to_string(), session);
                self.tally("opened");
                Ok(described)
            }
            Err(error) => {
                self.tally("open_failures");
                Err(error)
            }
        }
    }

    /// Hold one of `max_sessions` for `session_id` while it is opened or forked (the
    /// caller gives it back from `opening` once the session is in the registry or
    /// failed): refused while draining, while the same id is being opened, or at
    /// capacity.
    fn reserve_open_slot(&self, session_id: &str) -> Result<(), HostError> {
        if self.is_draining() {
            return Err(refuse("draining", "this host is draining and takes no new sessions"));
        }
        let mut opening = lock(&self.opening);
        if opening.contains(session_id) {
            return Err(refuse("host", format!("session {session_id} is being opened already")));
        }
        if self.session_count() + opening.len() >= self.config.max_sessions {
            return Err(refuse("at_capacity", format!("this host holds its {} sessions; place elsewhere", self.config.max_sessions)));
        }
        opening.insert(session_id.to_string());
        Ok(())
    }

    fn open_new(&self, request: &OpenRequest) -> Result<Arc<Session>, HostError> {
        check_session_id(&request.session_id)?;
        let spec = request.task_spec.as_deref();
        let version = self.versions.ensure(&request.version_id, &request.bundle_url)?;
        let contract = version.template.contract().clone();
        if let Some(spec) = spec {
            gateway_world::task::check_task_tools(spec, version.tool_names())?;
            gateway_world::task::check_task_entities(spec, contract.entities.iter().map(|e| e.name.as_str()))?;
        }
        let state = gateway_serve::state::WorldState::session(version.template.clone())?;
        let behaviour = crate::behaviour::Behaviour::from_metadata(spec.and_then(|s| s.metadata.as_ref()))?;
        let determinism = gateway_serve::app::Determinism::new(behaviour.clock, behaviour.seed);
        let (app, grant) = session_app(&version, state, spec, request.token.as_deref(), determinism);
        let dir = self.session_dir(&request.session_id)?;
        let task = match (&request.task_spec, &request.task) {
            (Some(spec), _) => SessionTask::Spec(spec.clone()),
            (None, task) => SessionTask::Bundled(task.clone().unwrap_or_default()),
        };
        let parts =
            SessionParts { id: request.session_id.clone(), version, task, token: request.token.clone(), app, grant, dir, behaviour };
        let mut session = Session::new(parts, self.config.lease_seconds);
        session.start()?;
        if let Some(restore) = &request.restore {
            self.restore_into(&session, restore)?;
            session.mark_restored();
        }
        Ok(Arc::new(session))
    }

    /// A new session's own directory (its exports and grader files).
    fn session_dir(&self, session_id: &str) -> Result<PathBuf, HostError> {
        let dir = self.config.root.join("sessions").join(session_id);
        std::fs::create_dir_all(&dir).map_err(|e| refuse("host", e.to_string()))?;
        Ok(dir)
    }

    fn restore_into(&self, session: &Session, restore: &Value) -> Result<(), HostError> {
        let url = restore.get("url").and_then(Value::as_str);
        let sha256 = restore.get("sha256").and_then(Value::as_str).filter(|s| s.len() == 64);
        let (Some(url), Some(sha256)) = (url, sha256) else {
            return Err(refuse("host", "restore must be {url: <presigned export url>, sha256: <hex digest>}"));
        };
        let file = session.dir().join("restore.sqlite");
        self.config.objects.download(url, &file).map_err(|e| refuse("host", format!("could not fetch the export: {e}")))?;
        let digest = gateway_world::files::file_sha256(&file).map_err(|e| refuse("host", e.to_string()))?;
        if digest != sha256 {
            let _ = std::fs::remove_file(&file);
            return Err(refuse("host", format!("the export's sha256 is {digest}, not {sha256}")));
        }
        let restored = session.app().state.restore(&file);
        let _ = std::fs::remove_file(&file);
        restored.map_err(HostError::from)
    }

    /// The descriptor of a session, as the platform reads it.
    pub fn describe(&self, session: &Session) -> Value {
        let clock = session.clock();
        let spec = session.task().spec();
        let ui = session
            .version()
            .settings
            .ui
            .as_ref()
            .map(|ui| object([("entry", Value::str(&ui.entry)), ("apiPath", Value::str(&ui.api_path))]));
        object([
            ("sessionId", Value::str(session.id())),
            ("versionId", Value::str(&session.version().id)),
            ("task", session.bundled().map(Value::str).unwrap_or_default()),
            (
                "taskName",
                match spec {
                    Some(spec) => spec.name.clone().map(Value::Str).unwrap_or_default(),
                    None => session.bundled().map(Value::str).unwrap_or_default(),
                },
            ),
            ("taskSource", Value::str(if spec.is_some() { "inline" } else { "bundled" })),
            (
                "tools",
                spec.and_then(|s| s.tools.as_ref()).map(|tools| Value::Array(tools.iter().map(Value::str).collect())).unwrap_or_default(),
            ),
            ("ready", Value::Bool(true)),
            ("hostUrl", self.config.advertise_url.clone().map(Value::Str).unwrap_or_default()),
            ("leaseSeconds", Value::Float(self.config.lease_seconds)),
            ("leaseUntil", Value::Float(clock.lease_until)),
            ("workerPid", session.version().worker.as_ref().and_then(|w| w.pid()).map(|p| Value::Int(p.into())).unwrap_or_default()),
            ("ui", ui.unwrap_or_default()),
            ("browser", Value::Bool(false)),
            ("restored", Value::Bool(session.restored())),
            ("forkedFrom", session.forked_from().map(Value::str).unwrap_or_default()),
            ("openedAt", Value::Float(session.opened_at())),
            ("sessionSeconds", Value::Float(session.seconds())),
            ("touchedAt", Value::Float(clock.touched_at)),
        ])
    }

    /// Close a session (an unknown one is closed already).
    pub fn close(&self, session_id: &str) -> Value {
        let session = self.sessions.write().unwrap_or_else(PoisonError::into_inner).remove(session_id);
        match session {
            None => object([("closed", Value::Bool(true)), ("openedAt", Value::Null), ("sessionSeconds", Value::Float(0.0))]),
            Some(session) => {
                self.finish(&session, "closed");
                object([
                    ("closed", Value::Bool(true)),
                    ("openedAt", Value::Float(session.opened_at())),
                    ("sessionSeconds", Value::Float(session.seconds())),
                ])
            }
        }
    }

    fn finish(&self, session: &Session, reason: &str) {
        self.tally(&format!("closed.{reason}"));
        *lock(&self.session_seconds) += session.seconds();
        // The state goes when the last request in flight lets go of the session.
    }

    /// Close every session whose lease ran out; their ids.
    pub fn expire_leases(&self, at: f64) -> Vec<String> {
        let expired: Vec<Arc<Session>> = {
            let mut sessions = self.sessions.write().unwrap_or_else(PoisonError::into_inner);
            let ids: Vec<String> = sessions
                .values()
                .filter(|s| s.clock().lease_until <= at && Arc::strong_count(s) == 1)
                .map(|s| s.id().to_string())
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for session in &expired {
            self.finish(session, "expired");
        }
        expired.iter().map(|s| s.id().to_string()).collect()
    }

    /// Renew a session's lease; its descriptor.
    pub fn renew(&self, session_id: &str) -> Result<Value, HostError> {
        let session = self.using(session_id, false)?;
        Ok(self.describe(&session))
    }

    /// Back to the task's starting state.
    pub fn reset(&self, session_id: &str) -> Result<Value, HostError> {
        let session = self.using(session_id, true)?;
        session.app().state.reset()?;
        session.start()?;
        Ok(object([("reset", Value::Bool(true))]))
    }

    /// Rows onto the live state (`{rows: {entity: [row]}, mode?}`).
    pub fn seed(&self, session_id: &str, args: &Value) -> Result<Value, HostError> {
        let Some(rows) = args.get("rows").and_then(Value::as_object) else {
            return Err(refuse("host", "seed needs args.rows as {entity: [row, ...]}"));
        };
        let mode = args.get("mode").cloned().unwrap_or(Value::str("append"));
        let session = self.using(session_id, true)?;
        let state = &session.app().state;
        state.seed_live(&Value::Object(rows.clone()), mode.as_str().unwrap_or("\u{0}"))?;
        let seeded: usize = rows.values().map(|v| v.as_array().map_or(0, Vec::len)).sum();
        let mut counts = Map::default();
        for entity in rows.keys() {
            if state.contract().entity(entity).is_some() {
                counts.insert(entity.clone(), Value::Int(state.rows(entity)?.len() as i64));
            }
        }
        Ok(object([("seeded", Value::Int(seeded as i64)), ("mode", mode), ("entity_counts", Value::Object(counts))]))
    }

    /// Every entity's rows and the snapshot in use.
    pub fn state(&self, session_id: &str) -> Result<Value, HostError> {
        let session = self.using(session_id, true)?;
        state_dump(&session)
    }

    /// Invoke one of the world's operations by name, as the agent's tool call.
    pub fn call(&self, session_id: &str, tool: &str, args: &Value) -> Result<Value, HostError> {
        let session = self.using(session_id, true)?;
        let world_tool = session.version().tools.as_ref().filter(|t| t.has(tool) && session.version().spec.operation(tool).is_none());
        if let Some(runner) = world_tool {
            // One of the world's own tools (a connector operation of the same name
            // wins, as the original's host calls operations): `args` is its input.
            if let Some(spec) = session.task().spec() {
                gateway_world::task::check_tool_allowed(spec, tool)?;
            }
            let (latency, fault) = session.strike(tool);
            std::thread::sleep(latency);
            if let Some((status, body)) = fault {
                self.tally("faults");
                return Ok(object([("status", Value::Int(status.into())), ("body", body), ("fault", Value::Bool(true))]));
            }
            return runner.call(&session.app().state, tool, args);
        }
        let spec = &session.version().spec;
        let Some(operation) = spec.operation(tool) else {
            let mut known = session.version().tool_names();
            if let Some(allowed) = session.task().spec().and_then(|spec| spec.tools.as_ref()) {
                known.retain(|name| allowed.iter().any(|a| a == name));
            }
            known.sort_unstable();
            let known = if known.is_empty() { "(none)".to_string() } else { known.join(", ") };
            return Err(refuse("host", format!("unknown tool '{tool}': this session has no such tool; its tools are {known}")));
        };
        if let Some(spec) = session.task().spec() {
            gateway_world::task::check_tool_allowed(spec, tool)?;
        }
        crate::tool_schema::check_args(session.version(), operation, args)?;
        let (latency, fault) = session.strike(tool);
        std::thread::sleep(latency);
        if let Some((status, body)) = fault {
            self.tally("faults");
            return Ok(object([("status", Value::Int(status.into())), ("body", body), ("fault", Value::Bool(true))]));
        }
        let (method, target, raw) = call_request(&session, operation, args);
        let (headers, extra_query) = world_credential(&session);
        let target = with_query(&target, &extra_query);
        let answered = session.app().handle(&method, &target, &headers, &raw, "127.0.0.1");
        Ok(object([("status", Value::Int(answered.status.into())), ("body", answered.body.unwrap_or_default())]))
    }

    /// Copy the session's state to a file and hash it; unchanged from `known` is
    /// reported, not kept.
    pub fn export(&self, session_id: &str, known: Option<&str>) -> Result<Value, HostError> {
        let session = self.using(session_id, false)?;
        let exports = session.dir().join("exports");
        let _ = std::fs::remove_dir_all(&exports);
        std::fs::create_dir_all(&exports).map_err(|e| refuse("host", e.to_string()))?;
        let id = gateway_serve::app::uuid4().replace('-', "");
        let path = exports.join(format!("{id}.sqlite"));
        session.app().state.export(&path)?;
        let sha256 = gateway_world::files::file_sha256(&path).map_err(|e| refuse("host", e.to_string()))?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if known == Some(sha256.as_str()) {
            let _ = std::fs::remove_file(&path);
            session.set_pending_export(None);
            self.tally("exports_unchanged");
            return Ok(object([
                ("exportId", Value::Null),
                ("sha256", Value::Str(sha256)),
                ("bytes", Value::Int(bytes as i64)),
                ("unchanged", Value::Bool(true)),
            ]));
        }
        let export = Export { id, path, sha256, bytes };
        let described = export.describe();
        session.set_pending_export(Some(export));
        self.tally("exports");
        Ok(described)
    }

    /// Copy the session's state as it stands to `destination` (a new file): a run
    /// keeps its rollouts' final states this way (beyond the original).
    pub fn export_file(&self, session_id: &str, destination: &Path) -> Result<(), HostError> {
        let session = self.using(session_id, false)?;
        session.app().state.export(destination)?;
        Ok(())
    }

    /// PUT the export taken last to the platform's presigned URL.
    pub fn upload_export(&self, session_id: &str, export_id: &str, url: &str) -> Result<Value, HostError> {
        let session = self.using(session_id, false)?;
        let export = session.pending_export();
        let Some(export) = export.filter(|e| e.id == export_id) else {
            return Err(refuse("host", format!("no export {export_id} for session {session_id}; take one first")));
        };
        self.config
            .objects
            .upload(url, &export.path, &export.sha256, export.bytes)
            .map_err(|e| refuse("host", format!("could not upload the export: {e}")))?;
        let _ = std::fs::remove_file(&export.path);
        session.set_pending_export(None);
        self.tally("exports_uploaded");
        let mut answer = object([("uploaded", Value::Bool(true))]);
        if let (Value::Object(out), Value::Object(described)) = (&mut answer, export.describe()) {
            out.extend(described);
        }
        Ok(answer)
    }

    /// What this host is and holds (the heartbeat body and `/__host/stats`).
    pub fn stats(&self) -> Value {
        let (count, in_use) = {
            let sessions = self.sessions.read().unwrap_or_else(PoisonError::into_inner);
            let mut in_use: Vec<String> = sessions.values().map(|s| s.version().id.clone()).collect();
            in_use.sort();
            in_use.dedup();
            (sessions.len(), in_use)
        };
        let counters: Map = lock(&self.counters).iter().map(|(k, v)| (k.clone(), Value::Int(*v))).collect();
        object([
            ("hostUrl", self.config.advertise_url.clone().map(Value::Str).unwrap_or_default()),
            ("sessions", Value::Int(count as i64)),
            ("capacity", Value::Int(self.config.max_sessions as i64)),
            ("draining", Value::Bool(self.is_draining())),
            ("workers", Value::Int(0)),
            ("versions", Value::Array(self.versions.ids().into_iter().map(Value::Str).collect())),
            ("versionsInUse", Value::Array(in_use.into_iter().map(Value::Str).collect())),
            ("uptimeSeconds", Value::Float(now() - self.started_at)),
            ("counters", Value::Object(counters)),
            ("sessionSeconds", Value::Float(*lock(&self.session_seconds))),
            ("pid", Value::Int(std::process::id().into())),
            ("limits", Value::Null),
        ])
    }

    /// Set a live session's clock, seed, faults or collateral check.
    pub fn configure(&self, session_id: &str, settings: &Value) -> Result<Value, HostError> {
        let Some(settings) = settings.as_object() else {
            return Err(refuse("host", "configure takes {clock?, seed?, faults?, collateral?}"));
        };
        self.using(session_id, true)?.configure(settings)
    }

    /// Cache a version before any session asks for it.
    pub fn warm(&self, version_id: &str, bundle_url: &str) -> Result<Value, HostError> {
        let already = self.versions.get(version_id).is_some();
        self.versions.ensure(version_id, bundle_url)?;
        Ok(object([("versionId", Value::str(version_id)), ("cached", Value::Bool(true)), ("alreadyCached", Value::Bool(already))]))
    }
}

/// A session id is a plain name: it becomes a directory and a host name label.
fn check_session_id(session_id: &str) -> Result<(), HostError> {
    if session_id.is_empty() || !session_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(refuse("host", format!("session id {session_id:?} is not a plain name")));
    }
    Ok(())
}

/// The app a session of `version` answers through, serving `state`: the task's
/// tools only, admin routes the control plane's, ids and clock from `determinism`.
/// For an oauth2 world also the bearer its world mints for the host (`token` as the
/// client secret), which the host presents on the session's tool calls.
fn session_app(
    version: &crate::version::Version,
    state: gateway_serve::state::WorldState,
    spec: Option<&TaskSpec>,
    token: Option<&str>,
    determinism: gateway_serve::app::Determinism,
) -> (WorldApp, Option<String>) {
    let mut app = WorldApp::with_worker(
        &version.tree,
        state,
        Router::new(version.spec.clone()),
        version.settings.clone(),
        None,
        version.worker.clone(),
    );
    app.allowed = spec.and_then(|s| s.tools.clone());
    // State, reset and seed are the control plane's: never the agent's token.
    app.admin = gateway_serve::app::AdminAccess::ControlPlane;
    app.determinism = Some(determinism);
    let grant = (version.spec.scheme == "oauth2")
        .then(|| {
            let form = vec![
                ("grant_type".to_string(), "client_credentials".to_string()),
                ("client_secret".to_string(), token.unwrap_or_default().to_string()),
            ];
            app.router.issue_token(&form, token)
        })
        .flatten()
        .and_then(|issued| issued.get("access_token").and_then(Value::as_str).map(str::to_string));
    (app, grant)
}

/// `{<entity>: {key: row}…, snapshot}`: what graders and `state` see.
pub(crate) fn state_dump(session: &Session) -> Result<Value, HostError> {
    let mut dump = session.app().state.dump()?;
    dump.insert("snapshot".into(), session.app().state.describe_snapshot());
    Ok(Value::Object(dump))
}

/// The request a tool call makes: `args` is `{path, query, body}`, or its
/// leftover keys are the body.
fn call_request(session: &Session, operation: &gateway_connector::spec::Operation, args: &Value) -> (String, String, Vec<u8>) {
    let mut path = operation.path.clone();
    if let Some(Value::Object(params)) = args.get("path") {
        for (key, value) in params {
            path = path.replace(&format!("{{{key}}}"), &gateway_connector::url::quote(&gateway_world::json::python_str(value)));
        }
    }
    if let Some(Value::Object(query)) = args.get("query") {
        if !query.is_empty() {
            let pairs: Vec<(String, String)> = query.iter().map(|(k, v)| (k.clone(), gateway_world::json::python_str(v))).collect();
            path = format!("{path}?{}", gateway_connector::url::urlencode(&pairs));
        }
    }
    let body = match args.get("body") {
        Some(body @ Value::Object(_)) => Some(body.clone()),
        _ => {
            let leftovers: Map = args
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| !matches!(k.as_str(), "path" | "query" | "body"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (!leftovers.is_empty()).then_some(Value::Object(leftovers))
        }
    };
    let raw = match body {
        Some(body) if operation.method != "GET" => gateway_world::json::dumps(
            &body,
            gateway_world::json::DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false },
        )
        .into_bytes(),
        _ => Vec::new(),
    };
    let base = gateway_connector::spec::base_path(&session.version().spec.base_url);
    (operation.method.clone(), format!("{}{path}", base.trim_end_matches('/')), raw)
}

/// What satisfies a world's own auth check once the host's token gate let a
/// caller through: (headers, query parameters).
pub fn world_credential(session: &Session) -> (Vec<(String, String)>, Vec<(String, String)>) {
    let spec = &session.version().spec;
    let presented = session.token().unwrap_or("gateway-session").to_string();
    match spec.scheme.as_str() {
        "header" => (vec![(spec.auth_name.clone().unwrap_or_else(|| "x-api-key".into()).to_lowercase(), presented)], vec![]),
        "bearer" => (vec![("authorization".into(), format!("Bearer {presented}"))], vec![]),
        "oauth2" => (vec![("authorization".into(), format!("Bearer {}", session.grant().unwrap_or_default()))], vec![]),
        "basic" => {
            use base64::Engine as _;
            let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{presented}:"));
            (vec![("authorization".into(), format!("Basic {encoded}"))], vec![])
        }
        "query" => (vec![], vec![(spec.auth_name.clone().unwrap_or_else(|| "api_key".into()), presented)]),
        _ => (vec![], vec![]),
    }
}

/// `target` with `extra` merged into its query string.
pub fn with_query(target: &str, extra: &[(String, String)]) -> String {
    if extra.is_empty() {
        return target.to_string();
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (key, value) in gateway_serve::router::parse_query(query) {
        if !pairs.iter().any(|(k, _)| *k == key) {
            pairs.push((key, value));
        }
    }
    for (key, value) in extra {
        match pairs.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value.clone(),
            None => pairs.push((key.clone(), value.clone())),
        }
    }
    format!("{path}?{}", gateway_connector::url::urlencode(&pairs))
}

//! One live session: its own copy of a version's state behind the same app
//! `worlds serve` runs, the task it was opened on, its token and its lease.

use crate::behaviour::Behaviour;
use crate::error::{refuse, HostError};
use crate::version::Version;
use gateway_serve::app::WorldApp;
use gateway_world::json::{object, Value};
use gateway_world::task::TaskSpec;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The task a session was opened on.
#[derive(Debug, Clone)]
pub enum SessionTask {
    /// A scenario of the version (`scenarios/<name>`), by name.
    Bundled(String),
    /// A task spec of its own (inline, or a stored task's copy), as the platform
    /// parsed it: shared, never parsed again.
    Spec(Arc<TaskSpec>),
}

impl SessionTask {
    /// The task spec, when the session has one of its own.
    pub fn spec(&self) -> Option<&TaskSpec> {
        self.shared_spec().map(Arc::as_ref)
    }

    /// The task spec as shared with the platform that opened the session.
    pub fn shared_spec(&self) -> Option<&Arc<TaskSpec>> {
        match self {
            SessionTask::Spec(spec) => Some(spec),
            SessionTask::Bundled(_) => None,
        }
    }
}

/// A session state copy waiting for the platform's presigned URL.
#[derive(Debug, Clone)]
pub struct Export {
    /// Its id (the file's stem).
    pub id: String,
    /// The file.
    pub path: PathBuf,
    /// Hex SHA-256 of the file.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

impl Export {
    /// `{exportId, sha256, bytes, contentType}`.
    pub fn describe(&self) -> Value {
        object([
            ("exportId", Value::str(&self.id)),
            ("sha256", Value::str(&self.sha256)),
            ("bytes", Value::Int(self.bytes as i64)),
            ("contentType", Value::str(EXPORT_CONTENT_TYPE)),
        ])
    }
}

/// The content type of an exported session.
pub const EXPORT_CONTENT_TYPE: &str = "application/vnd.sqlite3";

/// Times a session keeps, in Unix seconds.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// When its lease runs out unless renewed.
    pub lease_until: f64,
    /// The last request that used the world (a renewal or export does not count).
    pub touched_at: f64,
}

/// One session. Its fields are its own: the host reads them through the accessors
/// below and changes them only through its methods (lease, export, behaviour).
pub struct Session {
    /// The platform's session id.
    id: String,
    /// The version it runs.
    version: Arc<Version>,
    /// Its task.
    task: SessionTask,
    /// The token the data plane takes (None: any caller).
    token: Option<String>,
    /// The world, as `worlds serve` answers it.
    app: Arc<WorldApp>,
    /// For an oauth2 world: the bearer its world minted for the host itself.
    grant: Option<String>,
    /// When it opened.
    opened_at: f64,
    /// Whether it continued from an export.
    restored: bool,
    /// The session it was forked from, if it was.
    forked_from: Option<String>,
    /// Where its exports and grader files go (removed with the session).
    dir: PathBuf,
    /// Lease and activity.
    clock: Mutex<Clock>,
    /// The last export taken and not yet uploaded.
    export: Mutex<Option<Export>>,
    /// Clock, seed, faults and collateral check (beyond the original).
    behaviour: Mutex<Behaviour>,
    /// Fault draws made so far (the seeded sequence's position).
    draws: AtomicU64,
}

/// What a new session is made of, whether opened or forked.
pub(crate) struct SessionParts {
    /// The platform's session id.
    pub id: String,
    /// The version it runs.
    pub version: Arc<Version>,
    /// Its task.
    pub task: SessionTask,
    /// The token the data plane takes (None: any caller).
    pub token: Option<String>,
    /// The world it answers through.
    pub app: WorldApp,
    /// For an oauth2 world: the bearer its world minted for the host.
    pub grant: Option<String>,
    /// Its own directory.
    pub dir: PathBuf,
    /// Its behaviour settings.
    pub behaviour: Behaviour,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).field("version", &self.version.id).finish()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The last holder (the registry or a request in flight) removes its files;
        // the database itself goes with the app's state.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

impl Session {
    /// A session just opened, leased for `lease_seconds` from now; not yet started
    /// ([`Session::start`]).
    pub(crate) fn new(parts: SessionParts, lease_seconds: f64) -> Session {
        let opened_at = now();
        let SessionParts { id, version, task, token, app, grant, dir, behaviour } = parts;
        Session {
            id,
            version,
            task,
            token,
            app: Arc::new(app),
            grant,
            opened_at,
            restored: false,
            forked_from: None,
            dir,
            clock: Mutex::new(Clock { lease_until: opened_at + lease_seconds, touched_at: opened_at }),
            export: Mutex::default(),
            behaviour: Mutex::new(behaviour),
            draws: AtomicU64::new(0),
        }
    }

    /// A fork of `parent`: a new session at the parent's place in the seeded fault
    /// draws, recording where it came from.
    pub(crate) fn forked(parts: SessionParts, lease_seconds: f64, parent: &Session) -> Session {
        let mut session = Session::new(parts, lease_seconds);
        session.forked_from = Some(parent.id.clone());
        session.draws = AtomicU64::new(parent.draws.load(Ordering::SeqCst));
        session
    }

    /// Record that the session continued from an export.
    pub(crate) fn mark_restored(&mut self) {
        self.restored = true;
    }

    /// The platform's session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The version it runs.
    pub fn version(&self) -> &Arc<Version> {
        &self.version
    }

    /// The task it was opened on.
    pub fn task(&self) -> &SessionTask {
        &self.task
    }

    /// The token its data plane takes (None: any caller).
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The world it answers through, as `worlds serve` answers it.
    pub fn app(&self) -> &Arc<WorldApp> {
        &self.app
    }

    /// For an oauth2 world: the bearer its world minted for the host itself.
    pub fn grant(&self) -> Option<&str> {
        self.grant.as_deref()
    }

    /// When it opened (Unix seconds).
    pub fn opened_at(&self) -> f64 {
        self.opened_at
    }

    /// Whether it continued from an export.
    pub fn restored(&self) -> bool {
        self.restored
    }

    /// The session it was forked from, if it was.
    pub fn forked_from(&self) -> Option<&str> {
        self.forked_from.as_deref()
    }

    /// Its own directory (exports, grader files).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The export taken last and not yet uploaded.
    pub fn pending_export(&self) -> Option<Export> {
        self.export.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Keep `export` as the one to upload (None: nothing pending).
    pub(crate) fn set_pending_export(&self, export: Option<Export>) {
        *self.export.lock().unwrap_or_else(PoisonError::into_inner) = export;
    }

    /// The behaviour settings.
    pub fn behaviour(&self) -> Behaviour {
        self.behaviour.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The fault (added latency, and the answer instead of the operation's) that
    /// strikes a call of `operation` now.
    pub fn strike(&self, operation: &str) -> (std::time::Duration, Option<(u16, Value)>) {
        let behaviour = self.behaviour.lock().unwrap_or_else(PoisonError::into_inner);
        if behaviour.faults.is_empty() {
            return (std::time::Duration::ZERO, None);
        }
        let draw = self.draws.fetch_add(1, Ordering::SeqCst);
        crate::behaviour::strike(&behaviour.faults, operation, behaviour.seed, draw)
    }

    /// Change clock, seed, faults or the collateral check on the live session.
    pub fn configure(&self, settings: &gateway_world::json::Map) -> Result<Value, HostError> {
        let mut behaviour = self.behaviour.lock().unwrap_or_else(PoisonError::into_inner);
        behaviour.configure(settings)?;
        if let Some(determinism) = &self.app.determinism {
            determinism.set_clock(behaviour.clock);
            if settings.contains_key("seed") {
                determinism.reseed(behaviour.seed);
            }
        }
        Ok(behaviour.describe())
    }

    /// The bundled task's name, or None.
    pub fn bundled(&self) -> Option<&str> {
        match &self.task {
            SessionTask::Bundled(name) => Some(name),
            SessionTask::Spec(_) => None,
        }
    }

    /// Lease and activity, as last recorded.
    pub fn clock(&self) -> Clock {
        *self.clock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Renew the lease; `touch` also records use of the world.
    pub fn renew(&self, lease_seconds: f64, touch: bool) {
        let mut clock = self.clock.lock().unwrap_or_else(PoisonError::into_inner);
        let at = now();
        clock.lease_until = at + lease_seconds;
        if touch {
            clock.touched_at = at;
        }
    }

    /// Seconds since it opened.
    pub fn seconds(&self) -> f64 {
        (now() - self.opened_at).max(0.0)
    }

    /// Start (or restart) the session in its task's state: the scenario overlay of
    /// a bundled task, or the seed of its own task, on the fresh copy it holds.
    pub fn start(&self) -> Result<(), HostError> {
        if let Some(determinism) = &self.app.determinism {
            determinism.restart();
        }
        self.draws.store(0, Ordering::SeqCst);
        self.start_on(&self.app.state)
    }

    /// Whether the task's starting state is the template itself (no seed, no
    /// scenario overlay): a grade's diff then reads the template as the start.
    pub fn starts_from_template(&self) -> bool {
        match &self.task {
            SessionTask::Spec(spec) => spec.seed.is_none(),
            SessionTask::Bundled(task) => match self.version.scenario_dir(task) {
                Some(dir) => gateway_world::snapshot::scenario_overlay(&dir).is_ok_and(|overlay| overlay.is_empty()),
                None => true,
            },
        }
    }

    /// The task's starting state applied to `state` (a fresh copy of the template).
    pub fn start_on(&self, state: &gateway_serve::state::WorldState) -> Result<(), HostError> {
        match &self.task {
            SessionTask::Spec(spec) => {
                if let Some(seed) = &spec.seed {
                    state.seed_rows(&seed.rows, seed.mode.as_str())?;
                }
                Ok(())
            }
            SessionTask::Bundled(task) => match self.version.scenario_dir(task) {
                Some(dir) => {
                    let overlay = gateway_world::snapshot::scenario_overlay(&dir)?;
                    if overlay.is_empty() {
                        return Ok(()); // the base state: the copy already holds it
                    }
                    let Some(digest) = state.digest() else {
                        return Err(refuse("host", "a scenario overlay needs a compiled snapshot to apply against"));
                    };
                    state.seed(&object([
                        ("base", Value::Str(digest)),
                        ("rows", Value::Object(overlay)),
                        ("mode", Value::str("replace")),
                    ]))?;
                    Ok(())
                }
                None if task == "default" => Ok(()),
                None => {
                    let mut names: Vec<String> =
                        gateway_world::snapshot::scenario_dirs(&self.version.tree)?.into_iter().map(|s| s.name).collect();
                    if names.is_empty() {
                        names.push("default".into());
                    }
                    Err(refuse("host", format!("no scenario '{task}' in this world; it has {}", names.join(", "))))
                }
            },
        }
    }
}

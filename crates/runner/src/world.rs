//! A world opened for a run: where it came from (a local directory, its hub link
//! and whether a run of it can be filed; or a version pulled from the hub), a World
//! Host of our own under a temporary directory holding it, its tasks, and one
//! [`Session`] per rollout. Agents that speak HTTP reach a session through a
//! loopback data plane (the host's own router, with each request logged), started
//! the first time one asks for it.
//!
//! It does not run agents ([`crate::agent`]) or decide what a run means
//! ([`crate::run`]); it opens, calls, grades and closes.

use crate::error::RunnerError;
use crate::tasks::{TaskSource, WorldTask};
use gateway_common::random::random_hex;
use gateway_host::server::ServerConfig;
use gateway_host::version::Version;
use gateway_host::{HostConfig, HostError, OpenRequest, WorldHost};
use gateway_hub_client::client::Client;
use gateway_hub_client::working_copy::{local_tree_state, meta_str};
use gateway_world::json::{object, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a world comes from, and whether a run of it can be filed.
#[derive(Debug)]
pub struct WorldSource {
    /// The world directory (as given, or where it was pulled to).
    pub dir: PathBuf,
    /// The hub slug, when the directory is linked to one.
    pub slug: Option<String>,
    /// The branch a filed run is tagged with.
    pub branch: Option<String>,
    /// The version a filed run is pinned to; None when it cannot be filed.
    pub version_id: Option<String>,
    /// Why a run of this world cannot be filed (None whenever `version_id` is set).
    pub file_block: Option<String>,
    _pulled: Option<tempfile::TempDir>,
}

impl WorldSource {
    /// A local directory (`load_path`): a clean hub checkout runs pinned to its
    /// base; a drifted or unlinked one runs, but is not filed, and says why.
    pub fn local(dir: &Path) -> Result<WorldSource, RunnerError> {
        if !dir.is_dir() {
            return Err(RunnerError::World(format!("{} is not a directory", dir.display())));
        }
        let state = local_tree_state(dir)?;
        let meta = state.meta.unwrap_or_default();
        let linked = meta_str(&meta, "versionId");
        let branch_or_ref = meta_str(&meta, "branch").or_else(|| meta_str(&meta, "ref"));
        let (slug, branch, version_id, file_block) = match linked {
            Some(version) if state.clean => (meta_str(&meta, "slug"), branch_or_ref, Some(version), None),
            Some(_) => {
                let mut shown = state.dirty.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
                if state.dirty.len() > 5 {
                    shown.push_str(", …");
                }
                let hash: String = meta_str(&meta, "contentHash").unwrap_or_default().chars().take(8).collect();
                let block = format!(
                    "this checkout differs from {}@{hash} in {} file(s) ({shown}) — push first (`gateway bench push`) so the run pins the code it actually executed, or pass file=False",
                    branch_or_ref.as_deref().unwrap_or("its base"),
                    state.dirty.len()
                );
                (meta_str(&meta, "slug"), None, None, Some(block))
            }
            None => (
                None,
                None,
                None,
                Some(
                    "this directory has no hub link (.gateway/.env-metadata.json) — push it (`gateway bench push`) so runs can pin a version, or pass file=False"
                        .to_string(),
                ),
            ),
        };
        Ok(WorldSource { dir: dir.to_path_buf(), slug, branch, version_id, file_block, _pulled: None })
    }

    /// `slug` / `slug@ref` pulled from the hub into a temporary directory (`load`):
    /// the pulled version and branch travel with it.
    pub fn pull(slug_ref: &str, host: Option<&str>) -> Result<WorldSource, RunnerError> {
        let client = Client::from_env(host)?;
        let target = tempfile::Builder::new()
            .prefix("gateway-world-pull-")
            .tempdir_in(gateway_world::data::tempfile_dir::process_root())
            .map_err(|e| RunnerError::io(Path::new("/tmp"), e))?;
        let pulled = client.pull(slug_ref, Some(target.path()))?;
        let text = |key: &str| pulled.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        Ok(WorldSource {
            dir: target.path().to_path_buf(),
            slug: text("slug"),
            branch: text("branch"),
            version_id: text("versionId"),
            file_block: None,
            _pulled: Some(target),
        })
    }

    /// A pushed directory: pinned to the version just pushed.
    pub fn pushed(dir: &Path, slug: &str, branch: &str, version_id: &str) -> WorldSource {
        WorldSource {
            dir: dir.to_path_buf(),
            slug: Some(slug.to_string()),
            branch: Some(branch.to_string()),
            version_id: Some(version_id.to_string()),
            file_block: None,
            _pulled: None,
        }
    }
}

/// The bundle a local host runs: the files a push would carry (the archive's
/// selection), copied — so a run executes exactly what is filed, and never an
/// `outputs/`, `.git` or `.venv` beside the world.
fn archive_fetch(url: &str, dest: &Path) -> Result<(), gateway_host::version::FetchError> {
    let Some(root) = url.strip_prefix("file://") else {
        return Err(format!("a run's host fetches file:// URLs only, not {url}").into());
    };
    let root = Path::new(root);
    let files = gateway_bundle::archive::collect_archive_files(root).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dest).map_err(|e| e.to_string())?;
    for file in files {
        let target = dest.join(&file.rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::copy(&file.path, &target).map_err(|e| format!("{}: {e}", file.rel))?;
    }
    Ok(())
}

type HttpLog = Arc<Mutex<HashMap<String, Vec<Value>>>>;

struct Served {
    addr: SocketAddr,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

/// A world opened on a World Host of this process.
pub struct LocalWorld {
    /// Where it came from.
    pub source: WorldSource,
    /// The host holding its sessions.
    pub host: Arc<WorldHost>,
    /// The opened version.
    pub version: Arc<Version>,
    /// Its tasks.
    pub tasks: Vec<WorldTask>,
    runtime: tokio::runtime::Runtime,
    server: OnceLock<Result<Served, String>>,
    http_log: HttpLog,
    root: tempfile::TempDir,
    /// Whether rollouts keep their final state (a filed run attaches them to its samples).
    keep_states: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for LocalWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalWorld").field("dir", &self.source.dir).field("tasks", &self.tasks.len()).finish()
    }
}

impl LocalWorld {
    /// Open `source` on a new host: its bundle copied (and compiled when it needs
    /// to be), its handlers started, its tasks read.
    pub fn open(source: WorldSource) -> Result<LocalWorld, RunnerError> {
        let root = tempfile::Builder::new()
            .prefix("gateway-run-")
            .tempdir_in(gateway_world::data::tempfile_dir::process_root())
            .map_err(|e| RunnerError::io(Path::new("/tmp"), e))?;
        let dir = std::fs::canonicalize(&source.dir).map_err(|e| RunnerError::io(&source.dir, e))?;
        let mut config = HostConfig::local(root.path().join("host"));
        config.fetch = Arc::new(archive_fetch);
        config.max_sessions = usize::MAX / 2;
        config.lease_seconds = 7.0 * 24.0 * 3600.0;
        let host = Arc::new(WorldHost::new(config));
        let version = host.versions.ensure("local", &format!("file://{}", dir.display())).map_err(|e| RunnerError::World(e.to_string()))?;
        let tasks = crate::tasks::discover(&version)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| RunnerError::World(format!("could not start the async runtime: {e}")))?;
        Ok(LocalWorld {
            source,
            host,
            version,
            tasks,
            runtime,
            server: OnceLock::new(),
            http_log: HttpLog::default(),
            root,
            keep_states: Default::default(),
        })
    }

    /// Keep each rollout's final state (`Session::keep_state`): a filed run attaches
    /// them to its samples so that the evaluation can be re-graded without re-running.
    pub fn keep_states(&self, keep: bool) {
        self.keep_states.store(keep, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether rollouts keep their final state.
    pub fn keeps_states(&self) -> bool {
        self.keep_states.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A scratch directory of this run (removed with the world).
    pub fn scratch(&self) -> &Path {
        self.root.path()
    }

    /// Run a future to completion on the world's runtime (from a plain thread).
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Open a session of `task` for rollout `rollout`.
    pub fn open_session<'w>(&'w self, task: &'w WorldTask, rollout: usize) -> Result<Session<'w>, RunnerError> {
        let id = format!("run-{}", random_hex(8));
        let token = random_hex(16);
        let (bundled, spec) = match &task.source {
            TaskSource::Spec { spec, .. } => (None, Some(spec.clone())),
            TaskSource::Bundled { .. } => (Some(task.name.clone()), None),
        };
        self.host.open(OpenRequest {
            session_id: id.clone(),
            version_id: self.version.id.clone(),
            bundle_url: String::new(),
            task: bundled,
            task_spec: spec,
            token: Some(token.clone()),
            restore: None,
        })?;
        Ok(Session { world: self, task, rollout, id, token, calls: Mutex::default() })
    }

    /// The loopback address of the data plane (started on first use).
    pub fn endpoint(&self) -> Result<SocketAddr, RunnerError> {
        match self.server.get_or_init(|| self.serve()) {
            Ok(served) => Ok(served.addr),
            Err(error) => Err(RunnerError::World(error.clone())),
        }
    }

    fn serve(&self) -> Result<Served, String> {
        let listener = self
            .runtime
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
            .map_err(|e| format!("could not listen on loopback: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let inner = gateway_host::server::app(self.host.clone(), ServerConfig { secret: random_hex(24), domain: "localhost".into() });
        let log = self.http_log.clone();
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| logged(inner.clone(), log.clone(), request));
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        self.runtime.spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Served { addr, _shutdown: shutdown })
    }
}

/// The host's router, with each data-plane request logged under its session: the
/// method and path, the status, and the first [`LOGGED_CHARS`] of the request's body
/// and of the answer (an event stream's answer is passed on untouched, unlogged).
async fn logged(inner: axum::Router, log: HttpLog, request: axum::extract::Request) -> axum::response::Response {
    use tower::ServiceExt as _;
    let method = request.method().to_string();
    let path = request.uri().path().to_string();
    let Some((sid, tail)) = path.strip_prefix("/s/").and_then(|rest| rest.split_once('/')) else {
        return match inner.oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
    };
    let (parts, body) = request.into_parts();
    // The host refuses bodies past its own limit; this only has to hold what it holds.
    let sent = axum::body::to_bytes(body, LOGGED_BODY_LIMIT).await.unwrap_or_default();
    let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(sent.clone()));
    let response = match inner.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let streamed = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let (response, answer) = if streamed {
        (response, None)
    } else {
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, LOGGED_BODY_LIMIT).await.unwrap_or_default();
        (axum::response::Response::from_parts(parts, axum::body::Body::from(bytes.clone())), Some(bytes))
    };
    let mut entry = object([
        ("kind", Value::str("http")),
        ("request", Value::Str(format!("{method} /{tail}"))),
        ("status", Value::Int(response.status().as_u16().into())),
    ]);
    if let Value::Object(fields) = &mut entry {
        if !sent.is_empty() {
            fields.insert("body".into(), Value::Str(preview(&sent)));
        }
        if let Some(answer) = answer.filter(|a| !a.is_empty()) {
            fields.insert("answer".into(), Value::Str(preview(&answer)));
        }
    }
    lock(&log).entry(sid.to_string()).or_default().push(entry);
    response
}

/// The most of a request's or answer's text a logged call keeps.
const LOGGED_CHARS: usize = 2000;
/// The largest body the log reads through (the host's own request limit is lower).
const LOGGED_BODY_LIMIT: usize = 64 << 20;

fn preview(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).chars().take(LOGGED_CHARS).collect()
}

/// One rollout's session: closed when dropped.
pub struct Session<'w> {
    /// The world it is a session of.
    pub world: &'w LocalWorld,
    /// Its task.
    pub task: &'w WorldTask,
    /// Which rollout of the task it is (from 0).
    pub rollout: usize,
    /// The host's session id.
    pub id: String,
    /// The data plane's bearer token.
    pub token: String,
    calls: Mutex<Vec<Value>>,
}

impl Session<'_> {
    /// The tools the task offers: `[{name, signature, doc, inputSchema}]`.
    pub fn tools(&self) -> Value {
        gateway_host::tools::tools(&self.world.version, self.task.allowed_tools())
    }

    /// Call a tool with an agent's args (flat, or routed already), recorded in the
    /// session's call log as the hub logs calls (`{kind, tool, args, result|error}`).
    pub fn call(&self, tool: &str, args: &Value) -> Result<Value, HostError> {
        let routed = gateway_host::tools::route_args(&self.world.version, tool, args);
        let answered = self.world.host.call(&self.id, tool, &routed);
        let mut entry = object([("kind", Value::str("call")), ("tool", Value::str(tool)), ("args", args.clone())]);
        if let Value::Object(fields) = &mut entry {
            match &answered {
                Ok(result) => fields.insert("result".into(), result.clone()),
                Err(error) => fields.insert("error".into(), Value::Str(error.to_string())),
            };
        }
        lock(&self.calls).push(entry);
        answered
    }

    /// Every call made in this session: tool calls, then HTTP requests to its data plane.
    pub fn calls(&self) -> Vec<Value> {
        let mut calls = lock(&self.calls).clone();
        calls.extend(lock(&self.world.http_log).get(&self.id).cloned().unwrap_or_default());
        calls
    }

    /// Grade the session's state with its task's grader; a rubric (graded
    /// `pending` by the host) is judged here by the configured judge.
    pub fn grade(&self) -> Result<Value, String> {
        let grade = self.world.host.grade(&self.id).map_err(|e| e.to_string())?;
        if !matches!(grade.get("pending"), Some(Value::Bool(true))) {
            return Ok(grade);
        }
        // Only a spec task is graded `pending` (by its rubric).
        let Some(spec) = self.task.spec() else { return Ok(grade) };
        let state = self.world.host.state(&self.id).map_err(|e| e.to_string())?;
        let mut judged = self.world.block_on(gateway_judge::judge(spec, &state, &self.calls())).map_err(|e| e.to_string())?;
        // The judge's verdict, and the host's diff of the state kept beside it.
        if let (Value::Object(verdict), Some(diff)) = (&mut judged, grade.get("diff")) {
            verdict.insert("diff".into(), diff.clone());
        }
        Ok(judged)
    }

    /// The session's state as it stands (after its grade), exported into the run's
    /// scratch directory under its sha256 — a state two rollouts share is kept once —
    /// as the final state its sample is filed with; None when it cannot be exported.
    pub fn keep_state(&self) -> Option<gateway_hub_client::evals_client::FinalState> {
        let states = self.world.scratch().join("final-states");
        std::fs::create_dir_all(&states).ok()?;
        let taken = states.join(format!("{}.taking", self.id));
        self.world.host.export_file(&self.id, &taken).ok()?;
        let sha256 = gateway_world::files::file_sha256(&taken).ok()?;
        let bytes = std::fs::metadata(&taken).ok()?.len();
        let kept = states.join(format!("{sha256}.sqlite"));
        if kept.is_file() {
            let _ = std::fs::remove_file(&taken);
        } else {
            std::fs::rename(&taken, &kept).ok()?;
        }
        Some(gateway_hub_client::evals_client::FinalState {
            example_id: self.task.name.clone(),
            rollout_index: self.rollout as i64,
            path: kept,
            sha256,
            bytes,
        })
    }

    /// The session's data plane: its root URL (`…/s/<id>`), served on loopback.
    pub fn api_url(&self) -> Result<String, RunnerError> {
        Ok(format!("http://{}/s/{}", self.world.endpoint()?, self.id))
    }

    /// The vendor's base path inside the session (`/api/v2`, or empty).
    pub fn base_path(&self) -> String {
        gateway_connector::spec::base_path(&self.world.version.spec.base_url).trim_end_matches('/').to_string()
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        self.world.host.close(&self.id);
        lock(&self.world.http_log).remove(&self.id);
    }
}

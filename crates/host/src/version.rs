//! The versions a host serves: each world version fetched once, compiled if it
//! needs to be, and its indexed template shared by every session opened on it.

use crate::error::{refuse, HostError};
use gateway_connector::spec::Spec;
use gateway_serve::app::{start_worker, SharedWorker};
use gateway_serve::handlers::WorkerOptions;
use gateway_serve::settings::ApiSettings;
use gateway_serve::state::Template;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The world tree inside an api bundle; a bare tree is its own root.
pub const BUNDLED_WORLD: &str = "server/world";
/// The marker of an api bundle.
pub const API_BUNDLE: &str = "gateway-api-world.toml";

/// Fetches a version's bundle (`url`) into `dest`, a directory that does not
/// exist yet: download and safe extraction live with the caller (the hub crate
/// has both), so this crate needs no HTTP client.
pub type Fetch = Arc<dyn Fn(&str, &Path) -> Result<(), String> + Send + Sync>;

/// One cached version: what every session of it shares.
pub struct Version {
    /// The platform's version id.
    pub id: String,
    /// The extracted bundle.
    pub bundle: PathBuf,
    /// The gateway-world tree inside it.
    pub tree: PathBuf,
    /// `connector.toml`.
    pub spec: Spec,
    /// `[api]` of connector.toml.
    pub settings: ApiSettings,
    /// The indexed snapshot sessions are copied from.
    pub template: Arc<Template>,
    /// The world's `api/handlers.py` worker, shared by its sessions (None in a
    /// catalog, which only reads versions).
    pub worker: Option<SharedWorker>,
    /// The world's own tools (`x-gateway.tools` + `tools/*.py`), when it has them
    /// (not loaded in a catalog).
    pub tools: Option<crate::world_tools::ToolRunner>,
}

impl std::fmt::Debug for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Version").field("id", &self.id).field("tree", &self.tree).finish()
    }
}

/// The gateway-world tree of an extracted bundle.
pub fn world_tree(bundle: &Path) -> Result<PathBuf, HostError> {
    let nested = bundle.join(BUNDLED_WORLD);
    if bundle.join(API_BUNDLE).is_file() && nested.join("schema/world.json").is_file() {
        return Ok(nested);
    }
    if bundle.join("schema/world.json").is_file() {
        return Ok(bundle.to_path_buf());
    }
    Err(refuse(
        "host",
        format!(
            "{} holds no schema world the host can open (no {BUNDLED_WORLD}/schema/world.json nor schema/world.json); custom-server worlds run on the pod engine",
            bundle.display()
        ),
    ))
}

/// Auth schemes the host can present a world's own credential for.
pub const SUPPORTED_AUTH_SCHEMES: [&str; 6] = ["none", "header", "bearer", "basic", "query", "oauth2"];

impl Version {
    /// Open an extracted bundle: find its tree, compile it when its generated
    /// artifacts or snapshot are missing or stale (a pushed world need not carry
    /// them), load its connector and start its handler worker.
    /// `workers`: how its handler and tool workers run; `None` (a catalog) runs none.
    pub fn open(id: &str, bundle: &Path, workers: Option<&WorkerOptions>) -> Result<Version, HostError> {
        if workers.is_some_and(|w| w.sandbox.is_confined()) {
            // The world's code runs under a uid of its own: it must be able to read the
            // bundle (kept owner-only by the hub's umask; its 0700 parents keep others out).
            // Its databases stay owner-only: sessions are copied from them.
            let database = |p: &Path| {
                p.file_name().is_some_and(|n| n == "db")
                    || p.extension().is_some_and(|e| ["sqlite", "db", "sqlite-wal", "sqlite-shm"].iter().any(|x| e == *x))
            };
            gateway_sandbox::share_read_only_except(bundle, &database).map_err(|e| refuse("host", format!("{}: {e}", bundle.display())))?;
        }
        let tree = world_tree(bundle)?;
        // One contract build for the whole open: the check, a compile when the
        // bundle's artifacts or snapshot are stale, and the template's check.
        let world = gateway_world::World::open(&tree)?;
        let current =
            world.check().ok().and_then(|contract| gateway_world::snapshot::current_default(&tree, &contract).ok().flatten()).is_some();
        if !current {
            let contract = world.compile(false)?;
            gateway_world::snapshot::build_all(&tree, &contract, false)?;
        }
        let spec = gateway_connector::spec::load_spec(&tree)?;
        if !SUPPORTED_AUTH_SCHEMES.contains(&spec.scheme.as_str()) {
            return Err(refuse(
                "host",
                format!(
                    "the host cannot present auth.scheme '{}' to a world; it serves {}",
                    spec.scheme,
                    SUPPORTED_AUTH_SCHEMES.join(", ")
                ),
            ));
        }
        let mut settings = gateway_serve::settings::load_api_settings(&tree, &spec)?;
        let template = Arc::new(Template::open_world(&world, gateway_serve::server::index_plan(&spec, &settings))?);
        gateway_serve::nested::link_from_contract(&mut settings, &spec, template.contract())?;
        let worker = match workers {
            Some(options) => {
                start_worker(&tree, &settings, options).map_err(|e| refuse("host", format!("the world's handlers could not start: {e}")))?
            }
            None => None,
        };
        let tools = match workers {
            Some(options) => {
                crate::world_tools::ToolRunner::start(&tree, template.contract(), &bundle.with_file_name("tools-adapter"), options)?
            }
            None => None,
        };
        Ok(Version { id: id.to_string(), bundle: bundle.to_path_buf(), tree, spec, settings, template, worker, tools })
    }

    /// Every tool a task may name, once each: the connector's operations, then the
    /// world's own tools no operation shadows.
    pub fn tool_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.spec.operations.iter().map(|o| o.name.as_str()).collect();
        for name in self.tools.iter().flat_map(|t| t.names().map(String::as_str)) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// A scenario directory for a bundled task: the bundle root first (where an
    /// api bundle keeps them), then the tree.
    pub fn scenario_dir(&self, task: &str) -> Option<PathBuf> {
        [self.bundle.join("scenarios").join(task), self.tree.join("scenarios").join(task)]
            .into_iter()
            .find(|dir| dir.join("scenario.toml").is_file())
    }
}

/// Every version this host has seen, on local disk. The first session of a
/// version pays for the fetch; the rest copy its template.
pub struct VersionCache {
    root: PathBuf,
    fetch: Fetch,
    versions: Mutex<HashMap<String, Arc<Version>>>,
    /// One build at a time per version: concurrent opens of a version being
    /// fetched wait for that fetch instead of starting their own.
    building: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// How versions start their handler workers (a host's cache does; a catalog
    /// that only reads contracts and connectors does not: `None`).
    workers: Option<WorkerOptions>,
}

impl VersionCache {
    /// A cache under `root`, fetching bundles with `fetch`, running their handlers as `workers` say.
    pub fn new(root: PathBuf, fetch: Fetch, workers: WorkerOptions) -> VersionCache {
        VersionCache { root, fetch, versions: Mutex::default(), building: Mutex::default(), workers: Some(workers) }
    }

    /// A cache that reads versions without running their code (no handler workers).
    pub fn catalog(root: PathBuf, fetch: Fetch) -> VersionCache {
        VersionCache { root, fetch, versions: Mutex::default(), building: Mutex::default(), workers: None }
    }

    /// The version, fetched and opened on first use.
    pub fn ensure(&self, id: &str, bundle_url: &str) -> Result<Arc<Version>, HostError> {
        if let Some(hit) = self.get(id) {
            return Ok(hit);
        }
        let slot = self.building.lock().unwrap_or_else(PoisonError::into_inner).entry(id.to_string()).or_default().clone();
        let _building = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(hit) = self.get(id) {
            return Ok(hit);
        }
        let built = self.build(id, bundle_url);
        self.building.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        let version = Arc::new(built?);
        self.versions.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_string(), version.clone());
        Ok(version)
    }

    /// A cached version, if this host has it.
    pub fn get(&self, id: &str) -> Option<Arc<Version>> {
        self.versions.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// The cached version ids, sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.versions.lock().unwrap_or_else(PoisonError::into_inner).keys().cloned().collect();
        ids.sort();
        ids
    }

    fn build(&self, id: &str, bundle_url: &str) -> Result<Version, HostError> {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) || id.starts_with('.') {
            return Err(refuse("host", format!("version id {id:?} is not a plain name")));
        }
        let bundle = self.root.join(id).join("bundle");
        if !bundle.is_dir() {
            let staging = self.root.join(id).join(format!(".bundle.{}", gateway_serve::app::uuid4()));
            std::fs::create_dir_all(self.root.join(id)).map_err(|e| refuse("host", e.to_string()))?;
            let fetched = (self.fetch)(bundle_url, &staging);
            if let Err(error) = fetched {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(refuse("host", format!("could not download the bundle from {bundle_url}: {error}")));
            }
            std::fs::rename(&staging, &bundle).map_err(|e| refuse("host", e.to_string()))?;
        }
        Version::open(id, &bundle, self.workers.as_ref())
    }
}

/// The fetch for `file://` URLs naming a world directory on this machine (a
/// local host, tests): the tree is copied, so sessions never touch the original.
pub fn local_fetch(url: &str, dest: &Path) -> Result<(), String> {
    let Some(path) = url.strip_prefix("file://") else {
        return Err(format!("this host fetches file:// URLs only, not {url}"));
    };
    // Symlinks are not followed out of the world.
    gateway_common::fs::copy_tree(Path::new(path), dest, gateway_common::fs::Symlinks::Skip, &|_| false).map_err(|e| e.to_string())
}

//! The versions a host serves: each world version fetched once, compiled if it
//! needs to be, and its indexed template shared by every session opened on it.
//!
//! Two layers, one cache: [`VersionFiles`] is a version's bundle fetched, extracted
//! and — for a schema world — compiled with its snapshots, once; a [`Version`] is
//! those files opened to serve (template, connector, handler worker). The hub's world
//! data reads the files layer of the same cache its embedded host serves from, so a
//! version is fetched and compiled once per process, not once per reader.

use crate::error::{refuse, HostError};
use gateway_connector::spec::Spec;
use gateway_serve::app::{start_worker, SharedWorker};
use gateway_serve::handlers::WorkerOptions;
use gateway_serve::settings::ApiSettings;
use gateway_serve::state::Template;
use gateway_world::World;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// The world tree inside an api bundle; a bare tree is its own root.
pub const BUNDLED_WORLD: &str = "server/world";
/// The marker of an api bundle.
pub const API_BUNDLE: &str = "gateway-api-world.toml";
/// Prepared versions no session serves and no reader holds, kept for the next reader
/// (the least recently used beyond these are removed from disk).
pub const KEPT_UNSERVED: usize = 4;

/// Why a fetch failed, as the caller's fetch says it (the hub hands back its own
/// error, so its refusals keep their statuses).
pub type FetchError = Box<dyn std::error::Error + Send + Sync>;

/// Fetches a version's bundle (`locator`) into `dest`, a directory that does not
/// exist yet: download and safe extraction live with the caller (the hub crate
/// has both), so this crate needs no HTTP client. The locator is the caller's to
/// read: a URL for a remote host, a key of the hub's own object store for its
/// embedded host.
pub type Fetch = Arc<dyn Fn(&str, &Path) -> Result<(), FetchError> + Send + Sync>;

/// Why a version's files could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The version id is not a plain name (it names a directory).
    #[error("version id {0:?} is not a plain name")]
    BadId(String),
    /// The bundle could not be fetched.
    #[error("could not download the bundle from {locator}: {source}")]
    Fetch {
        /// Where it was fetched from.
        locator: String,
        /// The fetch's own error.
        #[source]
        source: FetchError,
    },
    /// The bundle could not be shared read-only with confined world code.
    #[error("{path}: {source}")]
    Share {
        /// The bundle.
        path: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The cache's own directories could not be written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The schema world does not compile, or its snapshots cannot be built.
    #[error("{0}")]
    Compile(#[source] gateway_world::Error),
}

impl From<PrepareError> for HostError {
    /// The refusals a host answered before the files were a layer of their own.
    fn from(error: PrepareError) -> Self {
        match error {
            PrepareError::Compile(error) => HostError::from(error),
            other => refuse("host", other.to_string()),
        }
    }
}

/// A version's bundle as fetched once: extracted, shared read-only with confined
/// world code when the cache runs any, and a schema world compiled with its
/// snapshots when they were missing or stale. What a [`Version`] opens to serve,
/// and what the hub's world data reads.
pub struct VersionFiles {
    /// The platform's version id.
    pub id: String,
    /// The extracted bundle.
    pub bundle: PathBuf,
    /// The schema world inside it (the bundle, or `server/world` of an api bundle),
    /// opened once: its contract built at most once for every reader. None when the
    /// bundle holds no schema world.
    pub world: Option<World>,
    /// Whether preparing it compiled the world (its scenario snapshots are then built
    /// when it is first opened to serve, as a host always built them).
    compiled: bool,
}

impl std::fmt::Debug for VersionFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionFiles").field("id", &self.id).field("bundle", &self.bundle).finish()
    }
}

impl VersionFiles {
    /// The schema world's directory, when the bundle holds one.
    pub fn tree(&self) -> Option<&Path> {
        self.world.as_ref().map(World::root)
    }

    /// Prepare an extracted bundle (see [`VersionFiles`]).
    fn prepare(id: &str, bundle: PathBuf, share: bool) -> Result<VersionFiles, PrepareError> {
        if share {
            // The world's code runs under a uid of its own: it must be able to read the
            // bundle (kept owner-only by the hub's umask; its 0700 parents keep others out).
            // Its databases stay owner-only: sessions are copied from them.
            let database = |p: &Path| {
                p.file_name().is_some_and(|n| n == "db")
                    || p.extension().is_some_and(|e| ["sqlite", "db", "sqlite-wal", "sqlite-shm"].iter().any(|x| e == *x))
            };
            gateway_sandbox::share_read_only_except(&bundle, &database)
                .map_err(|source| PrepareError::Share { path: bundle.display().to_string(), source })?;
        }
        let world = world_tree(&bundle).ok().and_then(|tree| World::open(&tree).ok()).filter(|w| w.kind() == "schema");
        let compiled = match &world {
            Some(world) => compile_if_stale(world).map_err(PrepareError::Compile)?,
            None => false,
        };
        Ok(VersionFiles { id: id.to_string(), bundle, world, compiled })
    }
}

/// Compile a world whose generated artifacts or default snapshot are missing or
/// stale (a pushed world need not carry them); whether it did. One contract build
/// for the check, the compile and whoever reads the world after.
fn compile_if_stale(world: &World) -> gateway_world::Result<bool> {
    let tree = world.root();
    let current =
        world.check().ok().and_then(|contract| gateway_world::snapshot::current_default(tree, &contract).ok().flatten()).is_some();
    if !current {
        let contract = world.compile(false)?;
        gateway_world::snapshot::build_default(tree, &contract, false)?;
    }
    Ok(!current)
}

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
    /// The prepared files it serves (held: a served version's files stay).
    pub files: Arc<VersionFiles>,
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
    /// Open prepared files to serve: load the connector, index the template and start
    /// the handler worker. A bundle without a schema world is refused as it always
    /// was (no tree, or the engine's refusal of what is there).
    /// `workers`: how its handler and tool workers run; `None` (a catalog) runs none.
    pub fn open(files: Arc<VersionFiles>, workers: Option<&WorkerOptions>) -> Result<Version, HostError> {
        let other;
        let (world, compiled) = match &files.world {
            Some(world) => (world, files.compiled),
            None => {
                other = World::open(&world_tree(&files.bundle)?)?;
                let compiled = compile_if_stale(&other)?;
                (&other, compiled)
            }
        };
        if compiled {
            // The scenarios' snapshots beside the default one (kept, not rebuilt).
            gateway_world::snapshot::build_all(world.root(), &world.contract()?, false)?;
        }
        let (id, bundle, tree) = (files.id.as_str(), files.bundle.as_path(), world.root().to_path_buf());
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
        let template = Arc::new(Template::open_world(world, gateway_serve::server::index_plan(&spec, &settings))?);
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
        let bundle = bundle.to_path_buf();
        Ok(Version { id: id.to_string(), bundle, tree, spec, settings, template, worker, tools, files: files.clone() })
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
/// version pays for the fetch; the rest copy its template. A version only read for
/// its files (the hub's world data) is kept while it is held, and among the
/// [`KEPT_UNSERVED`] most recently used after.
pub struct VersionCache {
    root: PathBuf,
    fetch: Fetch,
    versions: Mutex<HashMap<String, Arc<Version>>>,
    /// Prepared files by version, with their last use.
    files: Mutex<HashMap<String, (Arc<VersionFiles>, Instant)>>,
    /// One build at a time per version: concurrent opens of a version being
    /// fetched wait for that fetch instead of starting their own.
    building: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// How versions start their handler workers (a host's cache does; a catalog
    /// that only reads contracts and connectors does not: `None`).
    workers: Option<WorkerOptions>,
    /// Bundles fetched and prepared (extracted, compiled when stale).
    preparations: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl VersionCache {
    /// A cache under `root`, fetching bundles with `fetch`, running their handlers as `workers` say.
    pub fn new(root: PathBuf, fetch: Fetch, workers: WorkerOptions) -> VersionCache {
        VersionCache::with_workers(root, fetch, Some(workers))
    }

    /// A cache that reads versions without running their code (no handler workers).
    pub fn catalog(root: PathBuf, fetch: Fetch) -> VersionCache {
        VersionCache::with_workers(root, fetch, None)
    }

    fn with_workers(root: PathBuf, fetch: Fetch, workers: Option<WorkerOptions>) -> VersionCache {
        VersionCache {
            root,
            fetch,
            versions: Mutex::default(),
            files: Mutex::default(),
            building: Mutex::default(),
            workers,
            preparations: AtomicU64::new(0),
        }
    }

    /// The version, fetched and opened on first use.
    pub fn ensure(&self, id: &str, bundle_url: &str) -> Result<Arc<Version>, HostError> {
        if let Some(hit) = self.get(id) {
            return Ok(hit);
        }
        let slot = lock(&self.building).entry(id.to_string()).or_default().clone();
        let _building = lock(&slot);
        if let Some(hit) = self.get(id) {
            return Ok(hit);
        }
        let built = self.prepared(id, bundle_url).map_err(HostError::from).and_then(|files| Version::open(files, self.workers.as_ref()));
        lock(&self.building).remove(id);
        let version = Arc::new(built?);
        lock(&self.versions).insert(id.to_string(), version.clone());
        Ok(version)
    }

    /// The version's files, fetched and prepared on first use (the same files its
    /// sessions serve, when it is served): for a reader of the files alone.
    pub fn files(&self, id: &str, bundle_url: &str) -> Result<Arc<VersionFiles>, PrepareError> {
        let slot = lock(&self.building).entry(id.to_string()).or_default().clone();
        let _building = lock(&slot);
        let prepared = self.prepared(id, bundle_url);
        lock(&self.building).remove(id);
        prepared
    }

    /// A cached version, if this host has it.
    pub fn get(&self, id: &str) -> Option<Arc<Version>> {
        lock(&self.versions).get(id).cloned()
    }

    /// The cached version ids, sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.versions).keys().cloned().collect();
        ids.sort();
        ids
    }

    /// How many bundles this cache has fetched and prepared (each version once
    /// while it is kept): what the tests of "compiled once" read.
    pub fn preparations(&self) -> u64 {
        self.preparations.load(Ordering::Relaxed)
    }

    /// The prepared files of `id` (the caller holds its build slot).
    fn prepared(&self, id: &str, bundle_url: &str) -> Result<Arc<VersionFiles>, PrepareError> {
        if let Some((files, used)) = lock(&self.files).get_mut(id) {
            *used = Instant::now();
            return Ok(files.clone());
        }
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) || id.starts_with('.') {
            return Err(PrepareError::BadId(id.to_string()));
        }
        let bundle = self.root.join(id).join("bundle");
        if !bundle.is_dir() {
            let staging = self.root.join(id).join(format!(".bundle.{}", gateway_serve::app::uuid4()));
            std::fs::create_dir_all(self.root.join(id))?;
            if let Err(source) = (self.fetch)(bundle_url, &staging) {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(PrepareError::Fetch { locator: bundle_url.to_string(), source });
            }
            std::fs::rename(&staging, &bundle)?;
        }
        let share = self.workers.as_ref().is_some_and(|w| w.sandbox.is_confined());
        let files = Arc::new(VersionFiles::prepare(id, bundle, share)?);
        self.preparations.fetch_add(1, Ordering::Relaxed);
        lock(&self.files).insert(id.to_string(), (files.clone(), Instant::now()));
        self.evict(id);
        Ok(files)
    }

    /// Remove the prepared files nobody holds (no served version, no reader) beyond
    /// the [`KEPT_UNSERVED`] most recently used, `current` (just prepared, for its
    /// reader) counted among them. A directory is moved aside under the lock, so a
    /// reader never finds one half removed, and deleted after.
    fn evict(&self, current: &str) {
        let mut gone = Vec::new();
        {
            let mut files = lock(&self.files);
            let mut unheld: Vec<(Instant, String)> = files
                .iter()
                .filter(|(id, (held, _))| id.as_str() == current || Arc::strong_count(held) == 1)
                .map(|(id, (_, used))| (*used, id.clone()))
                .collect();
            unheld.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
            for (_, id) in unheld.into_iter().skip(KEPT_UNSERVED) {
                files.remove(&id);
                let aside = self.root.join(format!(".gone-{id}-{}", gateway_serve::app::uuid4()));
                if std::fs::rename(self.root.join(&id), &aside).is_ok() {
                    gone.push(aside);
                }
            }
        }
        for dir in gone {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The fetch for `file://` URLs naming a world directory on this machine (a
/// local host, tests): the tree is copied, so sessions never touch the original.
pub fn local_fetch(url: &str, dest: &Path) -> Result<(), FetchError> {
    let Some(path) = url.strip_prefix("file://") else {
        return Err(format!("this host fetches file:// URLs only, not {url}").into());
    };
    // Symlinks are not followed out of the world.
    gateway_common::fs::copy_tree(Path::new(path), dest, gateway_common::fs::Symlinks::Skip, &|_| false).map_err(|e| e.to_string().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A cache whose fetch copies `file://` trees (or, for `empty:`, writes a bundle
    /// holding no world), counting its fetches.
    fn counting(root: &Path) -> (VersionCache, Arc<AtomicUsize>) {
        let fetches = Arc::new(AtomicUsize::new(0));
        let counted = fetches.clone();
        let fetch: Fetch = Arc::new(move |locator: &str, dest: &Path| {
            counted.fetch_add(1, Ordering::SeqCst);
            if locator.starts_with("empty:") {
                std::fs::create_dir_all(dest)?;
                return Ok(std::fs::write(dest.join("README.md"), locator)?);
            }
            local_fetch(locator, dest)
        });
        (VersionCache::new(root.join("versions"), fetch, WorkerOptions::local()), fetches)
    }

    #[test]
    fn a_version_read_for_its_files_and_then_served_is_fetched_and_compiled_once() {
        let scratch = tempfile::tempdir().unwrap();
        let world = scratch.path().join("helpdesk");
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
        gateway_common::fs::copy_tree(&example, &world, gateway_common::fs::Symlinks::Skip, &|_| false).unwrap();
        let (cache, fetches) = counting(scratch.path());
        let url = format!("file://{}", world.display());
        let files = cache.files("v1", &url).unwrap();
        assert!(files.tree().is_some_and(|tree| tree.join("db/state.sqlite").is_file()), "compiled: {files:?}");
        let served = cache.ensure("v1", &url).unwrap();
        assert!(Arc::ptr_eq(&served.files, &files), "the served version opens the files read before");
        assert!(Arc::ptr_eq(&cache.files("v1", &url).unwrap(), &files));
        assert_eq!((fetches.load(Ordering::SeqCst), cache.preparations()), (1, 1));
    }

    #[test]
    fn files_nobody_holds_are_kept_for_the_most_recent_readers_only() {
        let scratch = tempfile::tempdir().unwrap();
        let (cache, fetches) = counting(scratch.path());
        let held = cache.files("held", "empty:held").unwrap();
        assert!(held.world.is_none(), "a bundle without a schema world is files only");
        for n in 0..KEPT_UNSERVED + 2 {
            cache.files(&format!("v{n}"), &format!("empty:v{n}")).unwrap();
        }
        // The two least recent unheld versions went, from disk too; the held one stayed.
        for gone in ["v0", "v1"] {
            assert!(!scratch.path().join("versions").join(gone).exists(), "{gone} was kept");
        }
        assert!(held.bundle.join("README.md").is_file());
        let fetched = fetches.load(Ordering::SeqCst);
        cache.files("held", "empty:held").unwrap();
        cache.files(&format!("v{}", KEPT_UNSERVED + 1), "empty:again").unwrap();
        assert_eq!(fetches.load(Ordering::SeqCst), fetched, "what was kept is not fetched again");
        cache.files("v0", "empty:v0").unwrap();
        assert_eq!(fetches.load(Ordering::SeqCst), fetched + 1, "what went is fetched again");
    }
}

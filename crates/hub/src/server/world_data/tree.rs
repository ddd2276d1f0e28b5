//! A version's files as the data routes read them, from the hub's version cache (the
//! one its sessions open versions from); the schema world inside them, or the refusal
//! naming what the world is; the per-process cache directories' eviction.

use super::places::blocking;
use crate::error::HubError;
use crate::server::state::Hub;
use crate::server::world_host::worlds;
use crate::store::{Container, Version};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A version's files, extracted and compiled once per process by the same version
/// cache the hub's sessions open it from (the embedded host's, or the catalog):
/// for a schema world, compiled (generated artifacts) and its snapshots built.
pub(super) struct Tree {
    /// The extracted bundle.
    pub(super) bundle: PathBuf,
    /// The schema world inside it (itself, or `server/world` of an api bundle).
    pub(super) world: Option<PathBuf>,
    /// The cache's files, held while they are read (the cache keeps them meanwhile).
    _held: Arc<gateway_host::version::VersionFiles>,
}

pub(super) async fn tree(hub: &Hub, version: &Version) -> Result<Tree, HubError> {
    use gateway_host::version::PrepareError;
    let worlds = worlds(hub)?.clone();
    let (id, locator) = (version.id.clone(), crate::worlds::stored_bundle(&version.object_key));
    let files = blocking(move || {
        worlds.version_files(&id, &locator).map_err(|error| match error {
            PrepareError::Compile(e) => HubError::engine(format!("version {id} of this world does not compile"), e),
            // The store's own refusal (a missing object, an unsafe or oversized archive).
            PrepareError::Fetch { source, .. } => match source.downcast::<HubError>() {
                Ok(refused) => *refused,
                Err(other) => HubError::Storage(other.to_string()),
            },
            other => HubError::Prepare(other),
        })
    })
    .await?;
    Ok(Tree { bundle: files.bundle.clone(), world: files.tree().map(Path::to_path_buf), _held: files })
}

/// Marks an entry of a cache directory used (its mtime is the last use).
pub(super) const USED: &str = ".used";
/// Snapshots kept for `data show` per process.
pub(super) const KEPT_SNAPSHOTS: usize = 4;
/// An entry used this recently is never evicted (an apply may be reading it).
pub(super) const EVICT_AFTER: Duration = Duration::from_secs(600);

/// Keep the `keep` most recently used entries of a cache directory (and any used in
/// the last [`EVICT_AFTER`]); remove the rest.
pub(super) fn evict(cache: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(cache) else { return };
    let mut used: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| {
            let path = e.path();
            let marker = if path.is_dir() { path.join(USED) } else { path.clone() };
            let at = std::fs::metadata(&marker).and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
            (at, path)
        })
        .collect();
    used.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let now = std::time::SystemTime::now();
    for (at, path) in used.into_iter().skip(keep) {
        if now.duration_since(at).unwrap_or_default() < EVICT_AFTER {
            continue;
        }
        let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
    }
}

/// The schema world of a tree, or the refusal naming what the world is.
pub(super) fn schema_world(tree: &Tree, world: &Container) -> Result<PathBuf, HubError> {
    tree.world.clone().ok_or_else(|| {
        let kind = gateway_world::data::world_kind(&tree.bundle).unwrap_or("unknown");
        HubError::BadRequest(format!(
            "'{}' is a {kind} world: data batches go into schema worlds (gateway-env.toml with [schema], pushed with `gateway bench push`)",
            world.slug
        ))
    })
}

//! What every request handler shares: the [`Hub`] (stores, keys, limits, where
//! sessions run) and its [`Limits`].

use super::keys::Keys;
use crate::store::{MetaStore, ObjectStore};
use std::sync::Arc;

/// Server limits and settings.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest JSON request body.
    pub max_json_bytes: usize,
    /// Largest object (tarball or wheel) upload.
    pub max_object_bytes: usize,
    /// How long presigned URLs stay valid, in seconds.
    pub url_ttl_secs: u64,
    /// Largest world data chunk (`limits.chunkBytes`): its gzipped upload, and its
    /// JSONL once gunzipped.
    pub chunk_bytes: usize,
    /// How the embedded host runs world code: always confined (gateway-sandbox); the
    /// limits and the per-call deadline are the operator's to set.
    pub workers: gateway_serve::handlers::WorkerOptions,
    /// Where remote connector captures may connect (`hub serve --capture-allow`); by
    /// default an empty allow-list: remote captures are refused.
    pub capture_egress: gateway_connector::egress::Egress,
    /// Most sessions one project holds open at once (0: no quota): a project at its
    /// quota is refused (429) while the others still open theirs.
    pub max_sessions_per_project: usize,
}

/// The default per-project session quota: a quarter of a host's default capacity,
/// so no one project can hold every session slot of a hub.
pub const DEFAULT_SESSIONS_PER_PROJECT: usize = gateway_host::host::DEFAULT_MAX_SESSIONS / 4;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_json_bytes: 32 * 1024 * 1024,
            max_object_bytes: 1024 * 1024 * 1024,
            url_ttl_secs: 3600,
            chunk_bytes: gateway_world::chunks::CHUNK_BYTES,
            workers: gateway_serve::handlers::WorkerOptions::default(),
            capture_egress: gateway_connector::egress::Egress::AllowList(gateway_connector::egress::AllowList::default()),
            max_sessions_per_project: DEFAULT_SESSIONS_PER_PROJECT,
        }
    }
}

/// Everything a request handler needs.
#[derive(Clone)]
pub struct Hub {
    /// Metadata.
    pub meta: Arc<dyn MetaStore>,
    /// Bundles.
    pub objects: Arc<dyn ObjectStore>,
    /// Key material.
    pub keys: Keys,
    /// The base URL put in presigned URLs; `None` = from the request's Host header
    /// (for clients) or [`Hub::bound_url`] (for World Hosts).
    pub public_url: Option<String>,
    /// `http://<the address the hub listens on>` (set when it starts serving): the base
    /// of the bundle URLs hosts are given when there is no public URL.
    pub bound_url: Option<String>,
    /// Limits.
    pub limits: Limits,
    /// Live sessions (an embedded World Host and registered ones); None: no sessions.
    pub worlds: Option<Arc<crate::worlds::Worlds>>,
    /// Where world data batches are applied (extracted versions, chunks, snapshots);
    /// None: under the process's temporary directory.
    pub scratch: Option<std::path::PathBuf>,
    /// The queue of the embedded host's data-plane calls into the sessions' call logs.
    pub(crate) call_log: super::call_log::CallLog,
}

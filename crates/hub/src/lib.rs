//! The hub: versioned, content-hashed world bundles on branches and tags, served.
//!
//! This crate is the server side of the original's "benchmark containers" platform API
//! (`/api/public/benchmark-containers/*`, spec §1 and §9) and of everything built on it:
//! - the **server** ([`server`]) that `gateway hub serve` runs, self-hosted: containers,
//!   versions deduplicated by content hash, presigned-style object URLs with the
//!   `x-amz-checksum-sha256` check, finalize with the branch compare-and-set, refs,
//!   log, fork, diff, proposals, write-only encrypted secrets and run configs, behind
//!   HTTP Basic project keys; world sessions and stored tasks (spec §5, §6) run on the
//!   embedded or registered World Hosts ([`worlds`], [`host_credentials`]);
//! - the routes over its state, which lives behind the [`store`] traits of
//!   `gateway-hub-store` (re-exported here under the paths they had in this crate):
//!   evaluations (spec §2) with their samples' final states and their regrade
//!   ([`regrade`] scores stored states under a task version's grader, without
//!   re-running a rollout), the agents platform (spec §8, §11), workspace connectors
//!   and world data batches.
//!
//! It is not the store (`gateway-hub-store`: the metadata backends, their migrations,
//! the object stores, the keys), nor the clients that call it (`gateway-hub-client`,
//! which this crate does not depend on), nor the bundle format both sides share (`gateway-bundle`), nor the rubric
//! judge (`gateway-judge`); it is not the world engine (`gateway-world`), does not
//! compile or validate worlds itself beyond calling the engine, runs no hosted
//! evaluations (a run-config dispatch and an environment run answer every model
//! `ok: false`, with the reason), and holds no CLI parsing (that is `gateway-cli`).

pub mod error;
pub mod regrade;
pub mod seed_diff;
pub mod server;
pub mod worlds;

// The store, under the paths it had when it was part of this crate.
pub use gateway_hub_store::{agents, connectors, evaluations, host_credentials, postgres, s3, sqlite, store, util, world_data};
pub use gateway_hub_store::{SecretFailure, StoreError};

pub use error::HubError;

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a hub keeps its state.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The data directory: keys, and by default the SQLite database and the objects.
    pub data: PathBuf,
    /// Metadata database URL (`sqlite:PATH` or `postgres://…`); default `<data>/hub.sqlite`.
    pub database: Option<String>,
    /// Object store URL (`file:DIR` or `s3://bucket[/prefix]?endpoint=…&region=…`); default
    /// `<data>/objects`.
    pub objects: Option<String>,
}

impl HubConfig {
    /// Keys under the data directory.
    pub fn keys_dir(&self) -> PathBuf {
        self.data.join("keys")
    }

    /// The control-plane secret World Hosts and this hub share: `WORLDS_HOST_SECRET`,
    /// else one kept under the keys directory (created, 0600, on first use).
    pub fn host_secret(&self) -> Result<String, HubError> {
        if let Some(secret) = std::env::var("WORLDS_HOST_SECRET").ok().filter(|s| !s.is_empty()) {
            return Ok(secret);
        }
        let path = self.keys_dir().join("host-secret");
        match std::fs::read_to_string(&path) {
            Ok(secret) if !secret.trim().is_empty() => Ok(secret.trim().to_string()),
            _ => {
                util::private_dir(&self.keys_dir())?;
                let secret = hex::encode(util::random_bytes(32));
                server::write_private_file(&path, secret.as_bytes())?;
                Ok(secret)
            }
        }
    }

    /// Open the metadata store.
    pub async fn open_meta(&self) -> Result<Arc<dyn store::MetaStore>, HubError> {
        util::private_dir(&self.data)?;
        match self.database.as_deref() {
            None => Ok(Arc::new(sqlite::SqliteStore::open(&self.data.join("hub.sqlite"))?)),
            Some(url) => {
                if let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
                    Ok(Arc::new(sqlite::SqliteStore::open(Path::new(path))?))
                } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                    Ok(Arc::new(postgres::PostgresStore::open(url).await?))
                } else {
                    Err(HubError::BadRequest(format!(
                        "unsupported --database URL '{url}': use sqlite:PATH or postgres://USER:PASS@HOST/DB"
                    )))
                }
            }
        }
    }

    /// Open the object store.
    pub async fn open_objects(&self) -> Result<Arc<dyn store::ObjectStore>, HubError> {
        match self.objects.as_deref() {
            None => Ok(Arc::new(store::LocalObjects::new(&self.data.join("objects"))?)),
            Some(url) => {
                if let Some(path) = url.strip_prefix("file://").or_else(|| url.strip_prefix("file:")) {
                    Ok(Arc::new(store::LocalObjects::new(Path::new(path))?))
                } else if url.starts_with("s3://") {
                    Ok(Arc::new(s3::S3Objects::open(url).await?))
                } else {
                    Err(HubError::BadRequest(format!(
                        "unsupported --objects URL '{url}': use file:DIR or s3://BUCKET[/PREFIX]?endpoint=…&region=…"
                    )))
                }
            }
        }
    }

    /// Open everything a server needs.
    /// World code is confined: a machine that cannot confine it (no bubblewrap) does not serve.
    pub async fn open(&self, public_url: Option<String>, limits: server::Limits) -> Result<server::Hub, HubError> {
        if !limits.workers.sandbox.is_confined() {
            return Err(HubError::BadRequest("a hub never runs world code unconfined".into()));
        }
        limits.workers.sandbox.check()?;
        let workers = limits.workers.clone();
        let meta = self.open_meta().await?;
        let objects = self.open_objects().await?;
        util::private_dir(&self.data.join("work"))?;
        util::private_dir(&self.data.join("host"))?;
        Ok(server::Hub {
            meta,
            objects: objects.clone(),
            keys: server::Keys::load_or_create(&self.keys_dir())?,
            public_url,
            bound_url: None,
            limits,
            worlds: Some(Arc::new(worlds::Worlds::embedded(&self.data.join("host"), self.host_secret()?, workers, objects))),
            scratch: Some(self.data.join("work")),
            call_log: Default::default(),
        })
    }
}

/// Create a key pair for a project: returns `(project_id, public, secret)`. Only the
/// secret's sha256 is stored.
pub async fn create_key(meta: &dyn store::MetaStore, project: &str) -> Result<(String, String, String), HubError> {
    let (public, secret) = server::new_key_pair();
    let project_id = meta.create_key(project, &public, &server::hash_secret(&secret)).await?;
    Ok((project_id, public, secret))
}

//! What a request handler reaches of the World Hosts: the hub's [`Worlds`] (or the
//! refusal of a hub that runs none) and a stored version opened as the embedded host
//! opens it. A leaf: the sessions, the stored tasks' checks and a fork name it
//! without naming each other.

use super::state::Hub;
use crate::error::HubError;
use crate::store::Version;
use crate::worlds::{stored_bundle, Worlds};
use gateway_host::version::Version as HostVersion;
use std::sync::Arc;

pub(super) fn worlds(hub: &Hub) -> Result<&Arc<Worlds>, HubError> {
    hub.worlds.as_ref().ok_or_else(|| HubError::BadRequest("this hub runs no World Host: live sessions are not available".into()))
}

/// A version of the hub opened as the embedded host opens it (fetched once and
/// cached): its contract and connector, for checks and tools. The bundle is read
/// from the hub's object store in place ([`stored_bundle`]), never over HTTP.
pub(super) async fn world_version(hub: &Hub, version: &Version) -> Result<Arc<HostVersion>, HubError> {
    let worlds = worlds(hub)?.clone();
    if !version.uploaded {
        return Err(HubError::BadRequest(format!("version {} has no bundle stored", version.id)));
    }
    let url = stored_bundle(&version.object_key);
    let id = version.id.clone();
    tokio::task::spawn_blocking(move || worlds.version(&id, &url))
        .await?
        .map_err(|e| HubError::BadRequest(format!("the world version could not be opened: {e}")))
}

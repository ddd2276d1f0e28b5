//! Fork a world session (beyond the original): `POST /api/public/world-sessions/{id}/fork`
//! opens a new session holding a copy of a live session's state as it stands — to
//! branch an episode, test a what-if, or replay from a step.
//!
//! The fork is a session of its own in every way a client sees: a new id and agent
//! token, the parent's project, version, task, tools and surfaces, answered in the
//! shape `open` answers (plus `forkedFrom`), and it counts against the project's
//! session quota. Its state lives where the parent's does, so it is placed on the
//! parent's host — the embedded one or a registered remote host, whichever holds the
//! parent — through the host's fork ([`gateway_host::ControlRequest::Fork`], sent to a
//! remote host as `POST /__host/sessions/{sid}/fork`); a host that is full
//! or draining refuses it (409) rather than the fork going elsewhere. Closing either
//! leaves the other open.
//!
//! Call logs: the fork's starts with one control entry `kind: "fork"` (its `args`
//! name the parent), and the parent's gets the same entry naming the fork, so each
//! log shows where the branch happened; the parent's calls before the fork are not
//! copied into the fork's log.

use super::access::own_version;
use super::response::{ok, Answer};
use super::session_guard::{check, mark_lost, release, reserve};
use super::sessions::{link_of, load_session, log_control, public, store_session, surface_answers, text_of, ControlEntry, SessionAccess};
use super::state::Hub;
use super::world_host::{world_version, worlds};
use crate::error::HubError;
use crate::host_credentials::HOSTS_PROJECT;
use crate::util::{new_id, now_iso};
use crate::worlds::HostLink;
use gateway_host::ControlRequest;
use gateway_world::json::{self, object, Map, Value};

/// `POST /api/public/world-sessions/{id}/fork`: the new session, as `open` answers it.
pub(super) async fn fork_session(hub: &Hub, project: &str, id: &str, base_url: &str) -> Answer {
    let mut parent = load_session(hub, project, id).await?;
    check(hub, project, &mut parent).await?;
    if text_of(&parent, "state") != "READY" {
        let why = parent.get("error").and_then(Value::as_str).map(|e| format!(": {e}")).unwrap_or_default();
        return Err(HubError::Conflict(format!(
            "world session {id} is {}{why}; only a live session can be forked",
            text_of(&parent, "state")
        )));
    }
    let link = link_of(hub, project, &mut parent).await?;
    let session_id = new_id("ws");
    reserve(hub, project, &session_id).await?;
    let forked = fork_placed(hub, project, &mut parent, &link, &session_id, base_url).await;
    if forked.is_err() {
        release(hub, project, &session_id).await?;
    }
    forked
}

async fn fork_placed(hub: &Hub, project: &str, parent: &mut Map, link: &HostLink, session_id: &str, base_url: &str) -> Answer {
    let worlds = worlds(hub)?.clone();
    let parent_id = text_of(parent, "sessionId");
    let at = now_iso();
    let token = hex::encode(crate::util::random_bytes(24));
    let request = ControlRequest::Fork { session_id: parent_id.clone(), fork_id: session_id.to_string(), token: Some(token.clone()) };
    match worlds.control(link, request).await? {
        Ok(_descriptor) => {}
        Err(refused) if refused.status == 404 => {
            let why = format!("its World Host no longer holds it ({})", refused.message());
            mark_lost(hub, project, parent, &why).await?;
            return Err(HubError::Conflict(format!("world session {parent_id} is LOST: {why}")));
        }
        // The state is on that host: a fork cannot be placed anywhere else.
        Err(refused) if matches!(refused.status, 503 | 502) => {
            return Err(HubError::Conflict(format!(
                "the World Host holding world session {parent_id} cannot take its fork now: {}",
                refused.message()
            )))
        }
        Err(refused) => return Err(HubError::BadRequest(refused.message())),
    }
    let (_, version) = own_version(hub, project, &text_of(parent, "versionId")).await?;
    let opened = world_version(hub, &version).await?;
    let data_base = match link {
        HostLink::Embedded => base_url.to_string(),
        HostLink::Remote { url, .. } => url.clone(),
    };
    let surfaces: Vec<String> = parent.get("surfaces").and_then(Value::as_object).map(|s| s.keys().cloned().collect()).unwrap_or_default();
    let access = SessionAccess { session_id, api_url: format!("{data_base}/s/{session_id}"), token: &token };
    let surface_map = surface_answers(&worlds, link, &opened, &surfaces, &access).await?;
    // Everything else — task, tools, instruction, the host it runs on — is the parent's.
    let mut session = parent.clone();
    for gone in ["closedAt", "lostAt", "error"] {
        session.shift_remove(gone);
    }
    session.insert("sessionId".into(), Value::str(session_id));
    session.insert("surfaces".into(), Value::Object(surface_map));
    session.insert("createdAt".into(), Value::Str(now_iso()));
    session.insert("forkedFrom".into(), Value::str(&parent_id));
    store_session(hub, project, &session).await?;
    let owner = object([("hostUrl", Value::Str(link.name())), ("project", Value::str(project)), ("sessionId", Value::str(session_id))]);
    hub.meta.put_document(HOSTS_PROJECT, "owner", session_id, &json::canonical(&owner)).await?;
    let entry = |args: Value, result: Value| ControlEntry {
        kind: "fork",
        tool: Value::Null,
        args,
        result,
        error: Value::Null,
        created_at: at.clone(),
    };
    let branch = object([("forkedFrom", Value::str(&parent_id)), ("sessionId", Value::str(session_id))]);
    log_control(hub, project, &parent_id, entry(object([("fork", Value::str(session_id))]), branch.clone())).await?;
    log_control(hub, project, session_id, entry(object([("from", Value::str(&parent_id))]), branch)).await?;
    ok(public(&session))
}

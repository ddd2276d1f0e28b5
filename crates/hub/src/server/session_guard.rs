//! What keeps a hub's live sessions honest (issue 24):
//!
//! - **quotas**: a project holds at most `limits.max_sessions_per_project` open sessions
//!   (`hub serve --max-sessions-per-project`), so one project cannot take every host slot
//!   while the next gets a 409. A slot is a document of the project (`open-session`),
//!   written *before* the session is placed and counted after: two opens racing for the
//!   last slot may both be refused, never both admitted. A refusal is a 429 naming the quota;
//!   slots of sessions that closed, were lost or never finished opening are freed first.
//! - **lost sessions**: a session of an embedded host that is gone (the hub restarted —
//!   the host's sessions live in its process) or that no longer holds it (its lease ran
//!   out) is marked `LOST` with the reason in `error`, never left `READY` while every call
//!   is a 404: at startup ([`sweep_lost`]) and whenever a session is read.

use super::documents::{document_text, SESSION};
use super::state::Hub;
use crate::error::HubError;
use crate::host_credentials::HOSTS_PROJECT;
use crate::store::DocumentPages;
use crate::util::{now_iso, now_secs};
use crate::worlds::Worlds;
use gateway_world::json::{self, object, Map, Value};
use std::path::Path;
use std::sync::Arc;

/// The document kind of a project's open-session slots.
const SLOT: &str = "open-session";
/// A slot whose session was never stored is freed after this long (an open that died).
const STALE_SLOT_SECONDS: u64 = 600;

fn text_of(map: &Map, key: &str) -> String {
    map.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Take one of `project`'s session slots for `session_id`, or refuse (429) at its quota.
pub(super) async fn reserve(hub: &Hub, project: &str, session_id: &str) -> Result<(), HubError> {
    let quota = hub.limits.max_sessions_per_project;
    if quota == 0 {
        return Ok(());
    }
    let slot = object([("sessionId", Value::str(session_id)), ("at", Value::Int(now_secs() as i64))]);
    hub.meta.put_document(project, SLOT, session_id, &json::canonical(&slot)).await?;
    if held(hub, project, quota).await? <= quota {
        return Ok(());
    }
    free_stale(hub, project, session_id).await?;
    if held(hub, project, quota).await? <= quota {
        return Ok(());
    }
    release(hub, project, session_id).await?;
    Err(HubError::TooMany(format!(
        "this project holds its quota of {quota} open world sessions (hub serve --max-sessions-per-project): \
         close one (gateway worlds session close <id>) before opening another"
    )))
}

/// Free `session_id`'s slot (closed, lost, or its open failed).
pub(super) async fn release(hub: &Hub, project: &str, session_id: &str) -> Result<(), HubError> {
    hub.meta.delete_document(project, SLOT, session_id).await?;
    Ok(())
}

/// Slots taken, counted up to `quota + 1`.
async fn held(hub: &Hub, project: &str, quota: usize) -> Result<usize, HubError> {
    Ok(hub.meta.documents(project, SLOT, 0, quota as i64 + 1).await?.len())
}

/// Free the slots of sessions that are no longer open (closed, lost) and of opens that
/// never stored their session; `keep` is the open asking.
async fn free_stale(hub: &Hub, project: &str, keep: &str) -> Result<(), HubError> {
    let mut pages = DocumentPages::new(hub.meta.as_ref(), project, SLOT, 500);
    while let Some(page) = pages.next_page().await? {
        for (_, text) in page {
            let Some(slot) = json::parse_clean(&text) else { continue };
            let id = slot.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_string();
            if id == keep || id.is_empty() {
                continue;
            }
            let stored = hub.meta.document(project, SESSION, &id).await?;
            match stored.and_then(|t| json::parse_clean(&t)) {
                Some(Value::Object(mut session)) => {
                    if text_of(&session, "state") != "READY" {
                        release(hub, project, &id).await?;
                    } else {
                        check(hub, project, &mut session).await?;
                    }
                }
                _ => {
                    let at = slot.get("at").and_then(Value::as_i64).unwrap_or(0).max(0) as u64;
                    if now_secs().saturating_sub(at) > STALE_SLOT_SECONDS {
                        release(hub, project, &id).await?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Why a READY session can no longer be used, if it cannot: its embedded host is gone
/// (another process's, now dead, or this process's before a restart) or does not hold it.
/// Sessions on remote hosts are judged by their host's answer (a 404 on a call).
pub(super) fn lost_reason(worlds: Option<&Arc<Worlds>>, session: &Map) -> Option<String> {
    if text_of(session, "_host") != "embedded" {
        return None;
    }
    let sid = text_of(session, "sessionId");
    let instance = text_of(session, "_hostInstance");
    let here = worlds.filter(|w| w.embedded.is_some());
    let held_here = here.and_then(|w| w.embedded.as_ref()).is_some_and(|host| host.owns(&sid));
    if held_here {
        return None;
    }
    if here.is_some_and(|w| w.instance == instance) || instance.is_empty() {
        return Some("its World Host no longer holds it: its lease ran out (WORLDS_HOST_LEASE_S) or it was closed".into());
    }
    // Only a hub on the same machine can tell whether that process is gone: another
    // machine's hub (sharing a PostgreSQL database) leaves its sessions alone.
    let ours = worlds.map(|w| w.machine.clone()).unwrap_or_default();
    let theirs = text_of(session, "_hostMachine");
    let (our_host, our_boot) = ours.split_once('/').unwrap_or((&ours, ""));
    let (their_host, their_boot) = theirs.split_once('/').unwrap_or((&theirs, ""));
    if our_host != their_host {
        return None;
    }
    let pid = instance.split('-').next().and_then(|p| p.parse::<u32>().ok());
    match pid {
        // Another hub process on this machine (since its last boot), still running, holds it.
        Some(pid) if their_boot == our_boot && pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists() => None,
        _ => Some(
            "the hub restarted: sessions on its embedded World Host live in the hub's process and do not survive it; \
             open a new session"
                .into(),
        ),
    }
}

/// Mark a READY session that can no longer be used LOST (stored, its owner record and
/// slot freed); sessions that are fine, or not READY, are left as they are.
pub(super) async fn check(hub: &Hub, project: &str, session: &mut Map) -> Result<(), HubError> {
    if text_of(session, "state") != "READY" {
        return Ok(());
    }
    match lost_reason(hub.worlds.as_ref(), session) {
        Some(reason) => mark_lost(hub, project, session, &reason).await,
        None => Ok(()),
    }
}

/// Mark a session LOST with `reason`.
pub(super) async fn mark_lost(hub: &Hub, project: &str, session: &mut Map, reason: &str) -> Result<(), HubError> {
    let id = text_of(session, "sessionId");
    eprintln!("gateway hub: world session {id} is lost: {reason}");
    session.insert("state".into(), Value::str("LOST"));
    session.insert("ready".into(), Value::Bool(false));
    session.insert("error".into(), Value::str(reason));
    session.insert("lostAt".into(), Value::Str(now_iso()));
    let text = document_text(&Value::Object(session.clone()));
    hub.meta.put_document(project, SESSION, &id, &text).await?;
    hub.meta.delete_document(HOSTS_PROJECT, "owner", &id).await?;
    release(hub, project, &id).await
}

/// At startup: every session this hub's data says is open on an embedded host that is
/// gone is marked LOST (owner records name each open session and its project).
pub(super) async fn sweep_lost(hub: &Hub) -> Result<usize, HubError> {
    let mut lost = 0;
    let mut pages = DocumentPages::new(hub.meta.as_ref(), HOSTS_PROJECT, "owner", 500);
    while let Some(page) = pages.next_page().await? {
        for (_, text) in page {
            let Some(owner) = json::parse_clean(&text) else { continue };
            let (Some(project), Some(id)) = (owner.get("project").and_then(Value::as_str), owner.get("sessionId").and_then(Value::as_str))
            else {
                continue;
            };
            let Some(Value::Object(mut session)) = hub.meta.document(project, SESSION, id).await?.and_then(|t| json::parse_clean(&t))
            else {
                continue;
            };
            let was = text_of(&session, "state");
            check(hub, project, &mut session).await?;
            if text_of(&session, "state") != was {
                lost += 1;
            }
        }
    }
    Ok(lost)
}

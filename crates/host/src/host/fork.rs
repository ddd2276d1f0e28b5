//! Fork a live session (beyond the original): a new session holding a copy of
//! another's state as it stands — to branch an episode, try a what-if, or replay
//! from a step — with a token, lease and directory of its own.
//!
//! The fork is the parent's twin at that moment: the same version and task (so a
//! reset of the fork goes back to the task's start, and its grader grades the fork's
//! own state), tools, behaviour settings (clock, seed, faults, collateral check) and
//! the same place in the seeded sequences — its next generated id and its next fault
//! draw are the ones the parent would have had next, so replaying the same calls on
//! the fork and on the parent gives the same states. The state is copied under the
//! parent's writer lock (`WorldState::fork`). A fork counts against the host's
//! capacity like an open, and a draining host takes none.

use super::{lock, WorldHost};
use crate::error::{refuse, HostError};
use crate::session::{Session, SessionParts};
use gateway_world::json::Value;
use std::sync::{Arc, PoisonError};

impl WorldHost {
    /// Fork `session_id` into a new session `new_session_id` answering `token` on
    /// the data plane; its descriptor. A retry of the same fork (same parent and
    /// token) answers the fork already made; any other session by that id is refused.
    pub fn fork(&self, session_id: &str, new_session_id: &str, token: Option<String>) -> Result<Value, HostError> {
        // Like an export, a fork reads the parent without using its world: its lease is
        // renewed, its idle clock (`touchedAt`) is not.
        let parent = self.using(session_id, false)?;
        let existing = self.sessions.read().unwrap_or_else(PoisonError::into_inner).get(new_session_id).cloned();
        if let Some(existing) = existing {
            if existing.forked_from() != Some(session_id) || existing.token() != token.as_deref() {
                return Err(refuse("host", format!("session {new_session_id} is already open, and not as this fork")));
            }
            return Ok(self.describe(&existing));
        }
        super::check_session_id(new_session_id)?;
        self.reserve_open_slot(new_session_id)?;
        let forked = fork_of(&parent, new_session_id, token, self);
        lock(&self.opening).remove(new_session_id);
        match forked {
            Ok(session) => {
                let described = self.describe(&session);
                self.sessions.write().unwrap_or_else(PoisonError::into_inner).insert(session.id().to_string(), session);
                self.tally("forked");
                Ok(described)
            }
            Err(error) => {
                self.tally("fork_failures");
                Err(error)
            }
        }
    }
}

/// The new session: the parent's version, task and behaviour, a copy of its state.
fn fork_of(parent: &Session, session_id: &str, token: Option<String>, host: &WorldHost) -> Result<Arc<Session>, HostError> {
    let state = parent.app().state.fork()?;
    // The seeded sequences go on from where the parent is (a session always has one).
    let determinism = match &parent.app().determinism {
        Some(determinism) => determinism.fork(),
        None => gateway_serve::app::Determinism::new(parent.behaviour().clock, parent.behaviour().seed),
    };
    let (app, grant) = super::session_app(parent.version(), state, parent.task().spec(), token.as_deref(), determinism);
    let dir = host.session_dir(session_id)?;
    let parts = SessionParts {
        id: session_id.to_string(),
        version: parent.version().clone(),
        task: parent.task().clone(),
        token,
        app,
        grant,
        dir,
        behaviour: parent.behaviour(),
    };
    Ok(Arc::new(Session::forked(parts, host.config.lease_seconds, parent)))
}

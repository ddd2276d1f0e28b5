//! Who may use a served world's admin routes (`/__world/state|reset|seed`) and how a
//! request they do not admit is refused. A leaf of `app`, which checks it first.

use crate::response::{error_body, Response};
use gateway_world::json::{object, Value};

/// The refusal of an admin route on a host session's data plane.
pub fn control_plane_only() -> Value {
    object([
        ("error", Value::str("forbidden")),
        (
            "detail",
            Value::str(
                "a session's admin routes (/__world/*) are not served to its token: use the hub's session API \
                 (gateway worlds session state|reset|seed)",
            ),
        ),
    ])
}

/// Who may reset, seed and read the whole state of a served world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminAccess {
    /// Anyone who reaches the server (a loopback bind, as the original serves).
    Open,
    /// Requests carrying this key in `X-Admin-Key`.
    Key(String),
    /// Nobody: served beyond loopback without a key.
    Closed,
    /// Nobody on the data plane: a host's session, whose admin operations are its
    /// control plane's (`/__host/sessions/<sid>/state|reset|seed`), reached through the
    /// hub's project-authenticated session API — never with the agent's session token.
    ControlPlane,
}

impl AdminAccess {
    /// The refusal for a request the admin routes do not admit, if any.
    pub(crate) fn refuses(&self, headers: &[(String, String)]) -> Option<Response> {
        let presented = headers.iter().find(|(k, _)| k == "x-admin-key").map(|(_, v)| v.as_str());
        match self {
            AdminAccess::Open => None,
            AdminAccess::Key(key) => {
                let same = presented
                    .is_some_and(|p| p.len() == key.len() && p.bytes().zip(key.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0);
                (!same).then(|| Response::json(401, error_body("admin routes need the X-Admin-Key header")))
            }
            AdminAccess::Closed => Some(Response::json(
                403,
                error_body("admin routes are closed on a server bound beyond loopback; restart it with --admin-key"),
            )),
            AdminAccess::ControlPlane => Some(Response::json(403, control_plane_only())),
        }
    }
}

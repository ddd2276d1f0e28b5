//! What `api.parent` and `api.link` declare, as types: the steps from a path's
//! arguments to a row's parent, and the link from the parent to its rows. The
//! settings hold them; reading and resolving them is the parent module's (`nested`).

use gateway_world::json::Value;

/// One step from the path's arguments towards the row's parent.
#[derive(Debug, Clone)]
pub struct ParentStep {
    /// The entity the step finds a row of.
    pub entity: String,
    /// Path argument → the row's dotted field it equals.
    pub matching: Vec<(String, String)>,
    /// The row's dotted field → the field of the step before whose value it equals.
    pub link: Vec<(String, String)>,
    /// The body answered when the step finds no row (None: the operation's not-found).
    pub not_found: Option<Value>,
}

/// `api.parent` and `api.link` of one operation.
#[derive(Debug, Clone, Default)]
pub struct Nesting {
    /// The steps, outermost first.
    pub parents: Vec<ParentStep>,
    /// The operation's row field → the last parent's field whose value it holds.
    pub link: Vec<(String, String)>,
}

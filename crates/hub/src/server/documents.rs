//! The server's documents in the metadata store (`put_document` / `document`): the
//! kinds that several route modules read and write (a session's record, its call log,
//! its last grade), the text a document is stored as, and a stored document read back
//! as the JSON object it was written as. A leaf: the sessions, the call log's writer,
//! the quotas and the web pages name these without naming each other.

use crate::error::HubError;
use crate::store::MetaStore;
use gateway_world::json::{self, DumpOptions, Map, Value};

/// The document kind of sessions.
pub(super) const SESSION: &str = "session";
/// The document kind naming, per session, its last grade's call-log entry (the
/// session's page explains that grade). A document of its own, so that a grade never
/// rewrites the session's record (a close may be storing it at the same moment).
pub(super) const LAST_GRADE: &str = "last-grade";

/// The document kind of a session's call log.
pub(super) fn calls_kind(session_id: &str) -> String {
    format!("calls:{session_id}")
}

/// A document's stored text: compact JSON in the order it was built (answers
/// keep the order clients see on create).
pub(super) fn document_text(value: &Value) -> String {
    json::dumps(value, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: true })
}

/// A stored document's text as the JSON object it was written as; `what` names it in
/// the refusal of one that is not.
pub(super) fn parse_document(text: &str, what: &str) -> Result<Map, HubError> {
    match json::parse_clean(text) {
        Some(Value::Object(map)) => Ok(map),
        _ => Err(HubError::Corrupt(what.to_string())),
    }
}

/// The document `id` of `kind` as its JSON object, or the refusal `missing` when the
/// project has none (`what` names it when it is not an object).
pub(super) async fn load_document(
    meta: &dyn MetaStore,
    project: &str,
    kind: &str,
    id: &str,
    what: &str,
    missing: impl FnOnce() -> HubError,
) -> Result<Map, HubError> {
    let text = meta.document(project, kind, id).await?.ok_or_else(missing)?;
    parse_document(&text, what)
}

//! The session pages: the project's world sessions (paged by the documents' `seq`) and
//! one session with its call log (paged the same way, oldest first, as `session export`
//! reads it): the hub's calls API (`control`) and the agent's REST (`api`) and MCP
//! (`mcp`) calls on the embedded host's data plane, bodies folded in `<details>`; above
//! it, the last grade's checks and what changed (`grade.rs`). The session's api token
//! is never shown: it is the agent's credential.
//! Reads only; closing or calling a session stays the API's.

use super::super::call_log::entries;
use super::super::call_record::BODY_CAP;
use super::super::documents::{calls_kind, LAST_GRADE, SESSION};
use super::super::request::PageSize;
use super::super::state::Hub;
use super::page::{clip, cursor, json_text, page, state_pill, world_url};
use crate::error::HubError;
use gateway_common::url::quote_segment;
use gateway_world::json::{self, Value};
use maud::{html, Markup};
use std::collections::BTreeMap;

/// Sessions per page.
const SESSIONS_PAGE: i64 = 50;
/// Calls per page, by default and at most.
const CALLS: PageSize = PageSize { default: 100, max: 500 };

fn text_of(value: &Value, key: &str) -> String {
    match value.get(key) {
        Some(Value::Str(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => json::canonical(other),
    }
}

fn session_url(id: &str) -> String {
    format!("/ui/sessions/{}", quote_segment(id))
}

/// `/ui/sessions[?after=]`: sessions in the order they were opened.
pub(super) async fn list(hub: &Hub, project: &str, query: &BTreeMap<String, String>) -> Result<Markup, HubError> {
    let after = cursor(query, "after")?.unwrap_or(0);
    let found = hub.meta.documents(project, SESSION, after, SESSIONS_PAGE).await?;
    let next = (found.len() as i64 == SESSIONS_PAGE).then(|| found.last().map(|(seq, _)| *seq)).flatten();
    let sessions: Vec<Value> = found.into_iter().filter_map(|(_, text)| json::parse_clean(&text)).collect();
    Ok(page(
        "Sessions",
        &[],
        html! {
            @if sessions.is_empty() {
                p.muted { "No session" @if after > 0 { " after these" } ": open one with " code { "gateway worlds session open WORLD -t TASK" } "." }
            } @else {
                table {
                    tr { th { "Session" } th { "World" } th { "Task" } th { "State" } th { "Opened" } th { "Closed" } }
                    @for s in &sessions {
                        @let id = text_of(s, "sessionId");
                        tr {
                            td { a href=(session_url(&id)) { code { (id) } } }
                            td { a href=(world_url(&text_of(s, "slug"))) { (text_of(s, "slug")) } }
                            td { (text_of(s, "taskName")) }
                            td { (state_pill(&text_of(s, "state"))) }
                            td.muted { (text_of(s, "createdAt")) }
                            td.muted { (text_of(s, "closedAt")) }
                        }
                    }
                }
            }
            p.pager {
                @if after > 0 { a href="/ui/sessions" { "« First" } }
                @if let Some(seq) = next { a href={ "/ui/sessions?after=" (seq) } { "Next »" } }
            }
        },
    ))
}

/// One entry of the call log: its surface (`control` for the hub's calls API, `api` and
/// `mcp` for the agent's own calls on the data plane), what was called, how it ended,
/// and its bodies folded in a `<details>` (cut as the log cut them, said so).
fn call_row(c: &Value) -> Markup {
    let surface = match text_of(c, "surface") {
        s if s.is_empty() => "control".to_string(),
        s => s,
    };
    let error = c.get("error").filter(|e| !matches!(e, Value::Null));
    let (call, status) = match surface.as_str() {
        "api" => (text_of(c, "tool"), text_of(c, "status")),
        "mcp" if text_of(c, "rpcMethod") == "tools/call" => (format!("tools/call {}", text_of(c, "tool")), text_of(c, "status")),
        "mcp" => (text_of(c, "rpcMethod"), text_of(c, "status")),
        _ => (format!("{} {}", text_of(c, "kind"), text_of(c, "tool")).trim().to_string(), text_of(c, "state")),
    };
    let duration = match c.get("durationMs") {
        Some(Value::Float(ms)) => format!("{ms:.1} ms"),
        Some(Value::Int(ms)) => format!("{ms} ms"),
        _ => String::new(),
    };
    let cut = |name: &str| {
        matches!(c.get(&format!("{name}Truncated")), Some(Value::Bool(true)))
            .then(|| format!("cut at {} KiB of {} bytes", BODY_CAP / 1024, text_of(c, &format!("{name}Bytes"))))
    };
    let args = c.get("args").map(|a| json_text(a, 1500)).unwrap_or_default();
    html! {
        tr {
            td.num { (text_of(c, "seq")) }
            td { (surface) }
            td { code { (call) } }
            td {
                (status)
                @if error.is_some() { " " span.pill.FAILED { "error" } }
            }
            td.muted { (duration) }
            td {
                details {
                    summary { code { (clip(&args, 100)) } }
                    p.muted { "Arguments" @if let Some(note) = cut("args") { " (" (note) ")" } }
                    pre { (args) }
                    @if let Some(error) = error { p.muted { "Error" } pre { (json_text(error, 1500)) } }
                    p.muted { "Answer" @if let Some(note) = cut("result") { " (" (note) ")" } }
                    pre { (c.get("result").map(|r| json_text(r, 1500)).unwrap_or_default()) }
                }
            }
            td.muted { (text_of(c, "createdAt")) }
        }
    }
}

/// `/ui/sessions/{id}[?after=&limit=]`: a session and its call log.
pub(super) async fn session(hub: &Hub, project: &str, id: &str, query: &BTreeMap<String, String>) -> Result<Markup, HubError> {
    let text = hub.meta.document(project, SESSION, id).await?.ok_or_else(|| HubError::missing("world session", id))?;
    let session = json::parse_clean(&text).unwrap_or_default();
    let after = cursor(query, "after")?.unwrap_or(0);
    let size = CALLS.shown(query);
    hub.call_log.flush().await;
    let found = hub.meta.documents(project, &calls_kind(id), after, size).await?;
    let next = (found.len() as i64 == size).then(|| found.last().map(|(seq, _)| *seq)).flatten();
    let calls = entries(found);
    let tools: Vec<String> = session
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("signature").or_else(|| t.get("name")).and_then(Value::as_str).map(str::to_string))
        .collect();
    let surfaces: Vec<String> = session.get("surfaces").and_then(Value::as_object).map(|m| m.keys().cloned().collect()).unwrap_or_default();
    let slug = text_of(&session, "slug");
    let here = session_url(id);
    // The last grade's entry (two indexed reads): its checks and diff, explained.
    let last_call = hub.meta.document(project, LAST_GRADE, id).await?.and_then(|text| json::parse_clean(&text));
    let last_grade = match last_call.as_ref().and_then(|c| c.get("callId")).and_then(Value::as_str) {
        Some(call_id) => hub.meta.document(project, &calls_kind(id), call_id).await?.and_then(|text| json::parse_clean(&text)),
        None => None,
    };
    // An entry's `seq` is its document's order, kept beside its id by the last-grade record.
    let last_grade = match (last_grade, last_call.as_ref().and_then(|c| c.get("seq"))) {
        (Some(Value::Object(mut call)), Some(seq)) => {
            call.entry("seq".to_string()).or_insert_with(|| seq.clone());
            Some(Value::Object(call))
        }
        (call, _) => call,
    };
    Ok(page(
        &format!("Session {id}"),
        &[("Sessions", "/ui/sessions".into())],
        html! {
            table {
                tr { th { "World" } td { a href=(world_url(&slug)) { (slug) } " " span.muted { code { (text_of(&session, "versionId")) } } } }
                tr { th { "State" } td { (state_pill(&text_of(&session, "state"))) } }
                tr { th { "Task" } td { (text_of(&session, "taskName")) " " span.muted { "(" (session.get("task").map(|t| text_of(t, "source")).unwrap_or_default()) ")" } } }
                tr { th { "Instruction" } td { (text_of(&session, "instruction")) } }
                tr { th { "Tools" } td { @for (i, t) in tools.iter().enumerate() { @if i > 0 { ", " } code { (t) } } } }
                tr { th { "Surfaces" } td { (surfaces.join(", ")) } }
                tr { th { "Opened" } td { (text_of(&session, "createdAt")) } }
                @if session.get("closedAt").is_some() { tr { th { "Closed" } td { (text_of(&session, "closedAt")) } } }
            }
            @if let Some(call) = &last_grade { (super::grade::sections(call)) }
            h2 { "Call log" }
            @if calls.is_empty() {
                p.muted { "No call" @if after > 0 { " after these" } "." }
            } @else {
                table {
                    tr { th.num { "#" } th { "Surface" } th { "Call" } th { "Status" } th { "Duration" } th { "Arguments and answer" } th { "At" } }
                    @for c in &calls {
                        (call_row(c))
                    }
                }
            }
            p.pager {
                @if after > 0 { a href=(here) { "« First" } }
                @if let Some(seq) = next { a href={ (here) "?after=" (seq) } { "Next »" } }
            }
        },
    ))
}

//! One exchange of a session's data plane as its call-log entry: what the agent sent
//! and was answered, REST (`surface: "api"`) or MCP (`surface: "mcp"`), in the shape
//! of the hub's own `kind: call` entries (`kind`, `tool`, `args`, `result`, `error`,
//! `state`, `createdAt`, `completedAt` — what the original's `session export` reads)
//! plus `surface`, `method`, `path`, `status`, `durationMs` and, for MCP, `rpcMethod`
//! and `isError`.
//!
//! Secrets never reach it: request headers are not recorded at all (`Authorization`,
//! cookies, a vendor key header), the session's token is replaced wherever it appears
//! (path, query, bodies), and members and query/form parameters named like credentials
//! (`access_token`, `client_secret`, `password`, …) are replaced too. Each body is kept
//! up to [`BODY_CAP`] bytes of JSON text; a longer one is kept as the first
//! [`BODY_CAP`] bytes of its text (secrets replaced before the cut), marked
//! `argsTruncated` / `resultTruncated` with its full size in `argsBytes` /
//! `resultBytes` (a REST body's size as sent; an MCP value's as JSON text).

use gateway_world::json::{self, DumpOptions, Map, Value};
use std::time::Duration;

/// The most of a request or answer body an entry keeps, in bytes of JSON text.
pub const BODY_CAP: usize = 16 * 1024;

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Member and parameter names whose values are credentials (compared lowercased).
const SECRET_NAMES: [&str; 9] =
    ["access_token", "refresh_token", "id_token", "client_secret", "password", "token", "api_key", "apikey", "authorization"];

/// Which data-plane surface an exchange was on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// The world's vendor API (REST).
    Api,
    /// MCP (streamable HTTP at `/s/<sid>/mcp`).
    Mcp,
}

/// One request of a session's data plane and its answer, as the hub saw them.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The session named by the path.
    pub session_id: String,
    /// REST or MCP.
    pub surface: Surface,
    /// The HTTP method.
    pub method: String,
    /// The path inside the session (`/tickets?status=open`), query included.
    pub target: String,
    /// The answer's HTTP status.
    pub status: u16,
    /// The request body.
    pub request: axum::body::Bytes,
    /// The answer body; None when it was a stream (not held).
    pub answer: Option<axum::body::Bytes>,
    /// When the request arrived (ISO 8601, UTC).
    pub created_at: String,
    /// When its answer was built.
    pub completed_at: String,
    /// How long the hub took to answer.
    pub duration: Duration,
}

/// The entry for `exchange` under id `id`; `tokens` are the session's credentials.
pub fn entry(id: &str, exchange: &Exchange, tokens: &[String]) -> Map {
    let request = body_value(&exchange.request, tokens);
    let answer = exchange.answer.as_ref().map(|a| body_value(a, tokens));
    let path = redact_pairs_in_target(&scrub(&exchange.target, tokens));
    let failed_http = (exchange.status >= 400).then(|| Value::Str(format!("HTTP {}", exchange.status)));
    let mut out = Map::default();
    out.insert("id".into(), Value::str(id));
    let mut extra: Vec<(&str, Value)> = Vec::new();
    let (tool, args, result, error) = match exchange.surface {
        Surface::Api => {
            out.insert("kind".into(), Value::str("request"));
            out.insert("surface".into(), Value::str("api"));
            let tool = Value::Str(format!("{} {path}", exchange.method));
            (tool, request, answer.unwrap_or_default(), failed_http)
        }
        Surface::Mcp => {
            out.insert("kind".into(), Value::str("mcp"));
            out.insert("surface".into(), Value::str("mcp"));
            let rpc = mcp_parts(request, answer, &mut extra);
            (rpc.tool, rpc.args, rpc.result, failed_http.or(rpc.error))
        }
    };
    let (args, mut args_bytes) = capped(args);
    let (result, mut result_bytes) = capped(result);
    if exchange.surface == Surface::Api {
        // A REST body is recorded whole or cut: its size is the one sent.
        args_bytes = args_bytes.map(|_| exchange.request.len());
        result_bytes = result_bytes.and(exchange.answer.as_ref().map(|a| a.len()));
    }
    out.insert("tool".into(), tool);
    out.insert("args".into(), args);
    out.insert("result".into(), result);
    out.insert("state".into(), Value::str(if error.is_some() { "FAILED" } else { "DONE" }));
    out.insert("error".into(), error.unwrap_or_default());
    out.insert("method".into(), Value::str(&exchange.method));
    out.insert("path".into(), Value::Str(path));
    out.insert("status".into(), Value::Int(i64::from(exchange.status)));
    for (key, value) in extra {
        out.insert(key.into(), value);
    }
    out.insert("durationMs".into(), Value::Float((exchange.duration.as_secs_f64() * 1_000_000.0).round() / 1000.0));
    out.insert("createdAt".into(), Value::str(&exchange.created_at));
    out.insert("completedAt".into(), Value::str(&exchange.completed_at));
    for (name, bytes) in [("args", args_bytes), ("result", result_bytes)] {
        if let Some(bytes) = bytes {
            out.insert(format!("{name}Truncated"), Value::Bool(true));
            out.insert(format!("{name}Bytes"), Value::Int(bytes as i64));
        }
    }
    out
}

/// An MCP exchange read as a call: the JSON-RPC method, and for `tools/call` the
/// tool, its arguments, its result and whether the result was an error.
struct Rpc {
    tool: Value,
    args: Value,
    result: Value,
    error: Option<Value>,
}

fn mcp_parts(request: Value, answer: Option<Value>, extra: &mut Vec<(&'static str, Value)>) -> Rpc {
    let rpc_method = match &request {
        Value::Object(map) => map.get("method").cloned().unwrap_or_default(),
        Value::Array(_) => Value::str("batch"),
        _ => Value::Null,
    };
    extra.push(("rpcMethod", rpc_method.clone()));
    let params = request.get("params").cloned().unwrap_or_default();
    let is_call = rpc_method.as_str() == Some("tools/call");
    let (tool, args) = if is_call {
        (params.get("name").cloned().unwrap_or_default(), params.get("arguments").cloned().unwrap_or_default())
    } else {
        (rpc_method, params)
    };
    let answer = answer.unwrap_or_default();
    let (result, mut error) = match (answer.get("result"), answer.get("error")) {
        (Some(result), _) => (result.clone(), None),
        (None, Some(error)) => (error.clone(), Some(error.get("message").cloned().unwrap_or_else(|| Value::str("error")))),
        // Not a JSON-RPC answer (a refusal before MCP, a notification's empty 202).
        (None, None) => (answer, None),
    };
    if is_call {
        let is_error = matches!(result.get("isError"), Some(Value::Bool(true)));
        extra.push(("isError", Value::Bool(is_error)));
        if is_error && error.is_none() {
            error = Some(Value::Str(result_text(&result)));
        }
    }
    Rpc { tool, args, result, error }
}

/// The text items of a tool result's `content`, joined.
fn result_text(result: &Value) -> String {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| item.get("text").and_then(Value::as_str))
        .collect();
    if texts.is_empty() {
        "tool error".into()
    } else {
        texts.join("\n")
    }
}

/// A body as recorded: null when empty, its JSON (secret members replaced) when it
/// parses, else its text (secret parameters replaced when it reads as a form).
fn body_value(bytes: &[u8], tokens: &[String]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    let text = scrub(&String::from_utf8_lossy(bytes), tokens);
    match json::parse_clean(&text) {
        Some(value) => redact_members(value),
        None if looks_like_form(&text) => Value::Str(redact_pairs(&text)),
        None => Value::Str(text),
    }
}

/// `value`, or, when its JSON text is over [`BODY_CAP`], the first [`BODY_CAP`] bytes
/// of that text and its full size.
fn capped(value: Value) -> (Value, Option<usize>) {
    let text = match &value {
        Value::Str(s) => s.clone(),
        Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => return (value, None),
        other => json::dumps(other, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false }),
    };
    if text.len() <= BODY_CAP {
        return (value, None);
    }
    let mut cut = BODY_CAP;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    (Value::Str(text[..cut].to_string()), Some(text.len()))
}

/// `text` with every occurrence of each token replaced.
pub fn scrub(text: &str, tokens: &[String]) -> String {
    let mut out = text.to_string();
    for token in tokens.iter().filter(|t| !t.is_empty()) {
        if out.contains(token.as_str()) {
            out = out.replace(token.as_str(), REDACTED);
        }
    }
    out
}

fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_NAMES.contains(&lower.as_str())
}

/// `value` with the values of members named like credentials replaced, at any depth.
fn redact_members(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if is_secret_name(&k) && !matches!(v, Value::Null) { Value::str(REDACTED) } else { redact_members(v) };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(redact_members).collect()),
        other => other,
    }
}

/// A body that reads as `application/x-www-form-urlencoded`: `k=v` pairs, no spaces.
fn looks_like_form(text: &str) -> bool {
    text.contains('=') && !text.chars().any(char::is_whitespace) && !text.starts_with(['{', '['])
}

/// `k=v&k=v` with the values of credential-named parameters replaced.
fn redact_pairs(text: &str) -> String {
    text.split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if is_secret_name(&gateway_common::url::unquote_plus(name)) => format!("{name}={REDACTED}"),
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// A path with its query's credential-named parameters replaced.
fn redact_pairs_in_target(target: &str) -> String {
    match target.split_once('?') {
        Some((path, query)) => format!("{path}?{}", redact_pairs(query)),
        None => target.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member of `entry` as canonical JSON (`null` when absent).
    fn at(entry: &Map, key: &str) -> String {
        json::canonical(entry.get(key).unwrap_or(&Value::Null))
    }

    fn exchange(surface: Surface, target: &str, request: &str, answer: &str, status: u16) -> Exchange {
        Exchange {
            session_id: "ws1".into(),
            surface,
            method: "POST".into(),
            target: target.into(),
            status,
            request: axum::body::Bytes::from(request.to_string()),
            answer: Some(axum::body::Bytes::from(answer.to_string())),
            created_at: "t0".into(),
            completed_at: "t1".into(),
            duration: Duration::from_micros(1500),
        }
    }

    #[test]
    fn a_rest_exchange_keeps_no_secret() {
        let token = "abc123secret".to_string();
        let e = exchange(
            Surface::Api,
            "/tickets?token=abc123secret&q=1",
            r#"{"password": "hunter2", "note": "abc123secret", "n": 1}"#,
            r#"{"access_token": "jwt"}"#,
            201,
        );
        let entry = entry("wr1", &e, std::slice::from_ref(&token));
        let text = json::canonical(&Value::Object(entry.clone()));
        for secret in ["abc123secret", "hunter2", "jwt"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(at(&entry, "tool"), json::canonical(&Value::str("POST /tickets?token=[redacted]&q=1")));
        assert_eq!(at(&entry, "durationMs"), json::canonical(&Value::Float(1.5)));
        assert_eq!(at(&entry, "error"), json::canonical(&Value::Null));
        assert_eq!(at(&entry, "args"), r#"{"n":1,"note":"[redacted]","password":"[redacted]"}"#);
    }

    #[test]
    fn a_form_body_is_redacted_and_a_failure_is_an_error() {
        let e = exchange(Surface::Api, "/oauth/token", "grant_type=password&password=pw&username=u", "nope", 401);
        let entry = entry("wr1", &e, &[]);
        assert_eq!(at(&entry, "args"), json::canonical(&Value::str("grant_type=password&password=[redacted]&username=u")));
        assert_eq!(at(&entry, "error"), json::canonical(&Value::str("HTTP 401")));
        assert_eq!(at(&entry, "state"), json::canonical(&Value::str("FAILED")));
    }

    #[test]
    fn a_long_body_is_cut_and_marked() {
        let big = format!(r#"{{"text": "{}"}}"#, "x".repeat(BODY_CAP * 2));
        let e = exchange(Surface::Api, "/notes", &big, "{}", 200);
        let entry = entry("wr1", &e, &[]);
        let Some(Value::Str(kept)) = entry.get("args") else { panic!("{entry:?}") };
        assert_eq!(kept.len(), BODY_CAP);
        assert_eq!(at(&entry, "argsTruncated"), json::canonical(&Value::Bool(true)));
        assert_eq!(at(&entry, "argsBytes"), json::canonical(&Value::Int(big.len() as i64)));
        assert!(entry.get("resultTruncated").is_none());
    }

    #[test]
    fn an_mcp_tool_call_names_its_tool_and_error() {
        let request =
            r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "delete_ticket", "arguments": {"id": 101}}}"#;
        let answer =
            r#"{"jsonrpc": "2.0", "id": 3, "result": {"isError": true, "content": [{"type": "text", "text": "tool_not_allowed"}]}}"#;
        let entry = entry("wr1", &exchange(Surface::Mcp, "/mcp", request, answer, 200), &[]);
        assert_eq!(at(&entry, "tool"), json::canonical(&Value::str("delete_ticket")));
        assert_eq!(at(&entry, "rpcMethod"), json::canonical(&Value::str("tools/call")));
        assert_eq!(at(&entry, "isError"), json::canonical(&Value::Bool(true)));
        assert_eq!(at(&entry, "error"), json::canonical(&Value::str("tool_not_allowed")));
        assert_eq!(at(&entry, "args"), r#"{"id":101}"#);
        let listed = r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#;
        let other = super::entry(
            "wr2",
            &exchange(Surface::Mcp, "/mcp", listed, r#"{"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}"#, 200),
            &[],
        );
        assert_eq!((at(&other, "tool"), other.get("isError").is_none()), (json::canonical(&Value::str("tools/list")), true));
    }
}

//! Reading a request: its query string and JSON body, the body's typed members,
//! and the base URL its answers name.

use super::state::Hub;
use crate::error::HubError;
use axum::http::{HeaderMap, Method};
use gateway_common::url::query_pairs;
use gateway_world::json::{self, Map, Value};
use std::collections::BTreeMap;

/// A request to a JSON route under `/api/public/`, as the route modules read it.
#[derive(Clone, Copy)]
pub(super) struct JsonRequest<'a> {
    pub hub: &'a Hub,
    pub method: &'a Method,
    /// The path after `/api/public/`, split at `/` (still percent-encoded).
    pub segments: &'a [&'a str],
    pub query: &'a BTreeMap<String, String>,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    /// What the answers' URLs start with ([`base_url`]).
    pub base_url: &'a str,
}

impl JsonRequest<'_> {
    /// The body as a JSON object ([`parse_body`]).
    pub fn json(&self) -> Result<Map, HubError> {
        parse_body(self.body)
    }

    /// The refusal of a path no route serves.
    pub fn no_route(&self) -> HubError {
        HubError::no_route(self.method, format!("/api/public/{}", self.segments.join("/")))
    }
}

/// The query's pairs by name (a repeated name: the last wins).
pub(super) fn parse_query(query: &str) -> BTreeMap<String, String> {
    query_pairs(query).into_iter().collect()
}

pub(super) fn parse_body(body: &[u8]) -> Result<Map, HubError> {
    let text = std::str::from_utf8(body).map_err(|_| HubError::BadRequest("request body is not UTF-8".into()))?;
    if text.trim().is_empty() {
        return Ok(Map::default());
    }
    match json::parse(text) {
        Ok(parsed) => match parsed.value {
            Value::Object(map) => Ok(map),
            _ => Err(HubError::BadRequest("request body must be a JSON object".into())),
        },
        Err(e) => Err(HubError::BadRequest(format!("request body is not valid JSON: {e:?}"))),
    }
}

pub(super) fn opt_str(body: &Map, key: &str) -> Result<Option<String>, HubError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s.clone())),
        Some(_) => Err(HubError::BadRequest(format!("'{key}' must be a string"))),
    }
}

pub(super) fn req_str(body: &Map, key: &str) -> Result<String, HubError> {
    opt_str(body, key)?.filter(|s| !s.is_empty()).ok_or_else(|| HubError::BadRequest(format!("'{key}' is required")))
}

pub(super) fn opt_bool(body: &Map, key: &str) -> Result<bool, HubError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(HubError::BadRequest(format!("'{key}' must be a boolean"))),
    }
}

pub(super) fn opt_value(text: &str) -> Value {
    json::parse_clean(text).unwrap_or(Value::Null)
}

pub(super) fn str_or_null(value: &Option<String>) -> Value {
    value.as_ref().map(|s| Value::Str(s.clone())).unwrap_or(Value::Null)
}

/// The base URL of what the hub hands World Hosts and fetches itself (bundle URLs):
/// `--public-url`, else the address it is bound to — never a request's `Host` header,
/// which any caller writes.
pub(super) fn host_base_url(hub: &Hub) -> String {
    match (&hub.public_url, &hub.bound_url) {
        (Some(url), _) | (None, Some(url)) => url.trim_end_matches('/').to_string(),
        (None, None) => "http://127.0.0.1".into(),
    }
}

/// The base URL of a request's answers (presigned URLs a client uses): `--public-url`,
/// else the request's `Host`.
pub(super) fn base_url(hub: &Hub, headers: &HeaderMap) -> String {
    if let Some(url) = &hub.public_url {
        return url.trim_end_matches('/').to_string();
    }
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
    format!("http://{host}")
}

#[cfg(test)]
mod tests {
    use gateway_common::url::{quote_segment, unquote_plus};

    #[test]
    fn query_codec() {
        assert_eq!(unquote_plus("a%2Fb+c"), "a/b c");
        assert_eq!(unquote_plus(&quote_segment("x+/=y")), "x+/=y");
        assert_eq!(unquote_plus("%"), "%");
    }
}

/// How many items a listing answers per page: `default` when the query names no
/// `limit`, never more than `max` (nor fewer than one).
#[derive(Clone, Copy)]
pub(super) struct PageSize {
    pub default: i64,
    pub max: i64,
}

impl PageSize {
    /// The query's `limit` for a JSON route: refused when it is not an integer.
    pub(super) fn asked(self, query: &BTreeMap<String, String>) -> Result<i64, HubError> {
        match query.get("limit").filter(|l| !l.is_empty()) {
            None => Ok(self.default),
            Some(text) => text
                .trim()
                .parse::<i64>()
                .map(|n| n.clamp(1, self.max))
                .map_err(|_| HubError::BadRequest(format!("'limit' must be an integer, not '{text}'"))),
        }
    }

    /// The query's `limit` for a web page: anything unreadable is the default.
    pub(super) fn shown(self, query: &BTreeMap<String, String>) -> i64 {
        query.get("limit").and_then(|l| l.trim().parse::<i64>().ok()).unwrap_or(self.default).clamp(1, self.max)
    }
}

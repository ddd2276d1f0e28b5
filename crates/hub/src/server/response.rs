//! Answers: a handler's `(status, JSON)` ([`Answer`]), written as the hub's JSON
//! responses, and refusals as `{"error", "message"}`.

use crate::error::HubError;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use gateway_world::json::{self, object, DumpOptions, Value};

pub(super) type Answer = Result<(u16, Value), HubError>;

pub(super) fn ok(value: Value) -> Answer {
    Ok((200, value))
}

pub(super) fn json_response(status: u16, value: &Value) -> Response {
    let body = json::dumps(value, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false });
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    response
}

/// `response`, telling the client the connection ends with it (a refused body may be
/// left partly unread, so the connection cannot carry another request).
pub(super) fn closing(mut response: Response) -> Response {
    response.headers_mut().insert("connection", HeaderValue::from_static("close"));
    response
}

pub(super) fn error_response(error: &HubError) -> Response {
    let mut response =
        json_response(error.status(), &object([("error", Value::str(error.code())), ("message", Value::str(error.to_string()))]));
    if error.status() == 401 {
        response.headers_mut().insert("www-authenticate", HeaderValue::from_static("Basic realm=\"gateway-hub\""));
    }
    response
}

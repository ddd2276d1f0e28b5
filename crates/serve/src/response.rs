//! An answer of a served world as a value (status, JSON body, headers, or a static
//! file), and the answers every part of the server gives alike: a plain error body,
//! a 500, the 504 of a handler past its deadline. A leaf: the app, the vendor
//! dressing and the server all name it; it names none of them.

use gateway_world::json::{object, Value};

/// An answer: status, JSON body (None = empty), extra headers.
#[derive(Debug, Clone)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// The JSON body, or None for an empty body.
    pub body: Option<Value>,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// A static file of the world's `[ui]` (bytes, content type) instead of JSON.
    pub file: Option<(Vec<u8>, String)>,
}

impl Response {
    /// A JSON answer (a status outside 100–999 clamped into it).
    pub(crate) fn json(status: i64, body: Value) -> Response {
        Response { status: status.clamp(100, 999) as u16, body: Some(body), headers: Vec::new(), file: None }
    }

    /// What a handler answered: its status, body (null: no body) and headers.
    pub(crate) fn from_handler(status: i64, body: Value, headers: Vec<(String, String)>) -> Response {
        let body = if matches!(body, Value::Null) { None } else { Some(body) };
        Response { status: status.clamp(100, 999) as u16, body, headers, file: None }
    }
}

/// `{"error": message}`.
pub(crate) fn error_body(message: &str) -> Value {
    object([("error", Value::str(message))])
}

/// The 500 of a request the world could not answer.
pub(crate) fn internal(message: &str) -> Response {
    Response::json(500, object([("error", Value::str("internal_error")), ("detail", Value::str(message))]))
}

/// The 504 of a handler that did not answer in time (its worker was killed and restarts).
pub fn handler_timeout(limit: std::time::Duration) -> Response {
    Response::json(
        504,
        object([
            ("error", Value::str("handler_timeout")),
            ("detail", Value::str(format!("the world's handler did not answer within {} s", limit.as_secs_f64()))),
        ]),
    )
}

//! One log line and one span per HTTP request, for every server of the workspace
//! (`worlds serve`, `host serve`, `hub serve`): the axum middleware [`log_request`].
//!
//! The span (`request`, fields `method`, `path`, `status`, `session`) is the parent
//! of whatever the request does — a World Host records the session it names, a
//! handler call and a grade open spans of their own inside it — so a trace follows an
//! agent's call through the handler to the grade. The line is emitted under the
//! target `gateway::request` at level info (`GATEWAY_LOG=gateway::request=off` quiets
//! it). The query is left out of both: signed object URLs carry their signatures
//! there, and nothing secret is logged.

use axum::extract::Request;
use axum::response::Response;
use tracing::Instrument;

/// The middleware: `axum::middleware::from_fn(log_request)`.
pub async fn log_request(request: Request, next: axum::middleware::Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let span = tracing::info_span!(
        target: "gateway::request",
        "request",
        method = %method,
        path = %path.escape_debug(),
        status = tracing::field::Empty,
        session = tracing::field::Empty,
    );
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    span.record("status", status);
    drop(span);
    // Outside the span: the line reads the same whether or not spans are printed.
    // The path as it came: a URI path holds no control character (the http crate
    // refuses them), and the line's formatter escapes terminal controls anyway.
    let tenths = Tenths::of_millis(started.elapsed());
    tracing::info!(target: "gateway::request", "{method} {path} {status} {tenths}ms");
    response
}

/// Name the session the current request acts on, on its `request` span.
pub fn record_session(session: &str) {
    tracing::Span::current().record("session", session);
}

/// A duration in milliseconds with one decimal (`0.1`, `12.3`), rounded half up: what
/// `{:.1}` of the milliseconds as a float reads, in integer arithmetic — the float's
/// exact formatting was an eighth of a request line's cost.
struct Tenths(u128);

impl Tenths {
    fn of_millis(elapsed: std::time::Duration) -> Self {
        Tenths((elapsed.as_micros() + 50) / 100)
    }
}

impl std::fmt::Display for Tenths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0 / 10, self.0 % 10)
    }
}

#[cfg(test)]
mod tests {
    use super::Tenths;
    use std::time::Duration;

    #[test]
    fn milliseconds_read_with_one_decimal_rounded_half_up() {
        let read = |micros| Tenths::of_millis(Duration::from_micros(micros)).to_string();
        assert_eq!(read(0), "0.0");
        assert_eq!(read(49), "0.0");
        assert_eq!(read(50), "0.1");
        assert_eq!(read(12_345), "12.3");
        assert_eq!(read(12_350), "12.4");
        assert_eq!(read(1_000_000), "1000.0");
    }
}

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

/// The target of the request lines and spans.
pub const TARGET: &str = "gateway::request";

/// The request line's fields, in the order they are recorded: the method and the path
/// as text, the status and the milliseconds in tenths as integers. A line format reads
/// them as `GET /v2/records/r777 200 0.1ms` (the servers' does: crates/cli's
/// log_format.rs); they are fields, not a formatted message, so that a line costs no
/// `fmt` machinery (docs/PERFORMANCE.md "Logs and traces").
pub mod fields {
    /// The method (`GET`), text.
    pub const METHOD: &str = "method";
    /// The URI's path, query left out, as it came (text; the line's writer escapes
    /// terminal controls).
    pub const PATH: &str = "path";
    /// The answer's status code.
    pub const STATUS: &str = "status";
    /// The time to the answer's head, in tenths of a millisecond.
    pub const TENTHS_MS: &str = "tenths_ms";
}

/// The middleware: `axum::middleware::from_fn(log_request)`.
pub async fn log_request(request: Request, next: axum::middleware::Next) -> Response {
    // Quiet (`GATEWAY_LOG=warn`): neither a line nor a span is wanted, so nothing is
    // copied or timed for them. The global level is a load and a compare, where
    // `tracing::enabled!` would ask the subscriber every time.
    if !tracing::level_enabled!(tracing::Level::INFO) {
        return next.run(request).await;
    }
    let started = std::time::Instant::now();
    let method = request.method().clone();
    // The URI shares the request head's bytes: a clone counts a reference instead of
    // copying the path.
    let uri = request.uri().clone();
    let path = uri.path();
    let span = tracing::info_span!(
        target: TARGET,
        "request",
        method = %method,
        path = %path.escape_debug(),
        status = tracing::field::Empty,
        session = tracing::field::Empty,
    );
    // No layer wants the span (no OTLP export): the handler's future is not wrapped,
    // which would move it once more and enter and leave the span at every poll.
    let spanned = !span.is_disabled();
    let response = if spanned { next.run(request).instrument(span.clone()).await } else { next.run(request).await };
    let status = response.status().as_u16();
    if spanned {
        span.record("status", status);
    }
    drop(span);
    // Outside the span: the line reads the same whether or not spans are printed.
    let tenths_ms = tenths_of_millis(started.elapsed());
    tracing::info!(target: TARGET, method = method.as_str(), path, status, tenths_ms);
    response
}

/// Name the session the current request acts on, on its `request` span.
pub fn record_session(session: &str) {
    tracing::Span::current().record("session", session);
}

/// A duration in tenths of a millisecond, rounded half up: what `{:.1}` of the
/// milliseconds as a float reads, in integer arithmetic.
pub fn tenths_of_millis(elapsed: std::time::Duration) -> u64 {
    u64::try_from((elapsed.as_micros() + 50) / 100).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::tenths_of_millis;
    use std::time::Duration;

    #[test]
    fn milliseconds_in_tenths_rounded_half_up() {
        let read = |micros| tenths_of_millis(Duration::from_micros(micros));
        assert_eq!(read(0), 0);
        assert_eq!(read(49), 0);
        assert_eq!(read(50), 1);
        assert_eq!(read(12_345), 123);
        assert_eq!(read(12_350), 124);
        assert_eq!(read(1_000_000), 10_000);
    }
}

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
    tracing::info!(
        target: "gateway::request",
        "{method} {} {status} {:.1}ms",
        path.escape_debug(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    response
}

/// Name the session the current request acts on, on its `request` span.
pub fn record_session(session: &str) {
    tracing::Span::current().record("session", session);
}

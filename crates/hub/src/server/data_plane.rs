//! The embedded host's data plane (`/s/<sid>/…`, REST and MCP) as the hub serves it:
//! each request answered by the host's router in process, and the exchange (bodies
//! kept as reference-counted bytes) queued for the session's call log
//! (`call_log.rs`) before its answer leaves the hub.

use super::call_record::{Exchange, Surface};
use super::response::{closing, error_response};
use super::state::Hub;
use crate::error::HubError;
use crate::util::now_iso;
use axum::body::{to_bytes, Body, Bytes};
use axum::extract::Request;
use axum::http::request::Parts;
use axum::response::Response;
use std::time::Instant;

/// A request of the data plane (`/s/<sid>/…`) answered by the embedded host, and
/// recorded in its session's call log.
pub(super) async fn data_plane(hub: &Hub, routes: axum::Router, parts: Parts, body: Body, limit: usize) -> Response {
    let started = Instant::now();
    let created_at = now_iso();
    let target = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
    let named = gateway_host::server::session_target(None, &target);
    let method = parts.method.as_str().to_string();
    let (request, response) = match to_bytes(body, limit).await {
        Ok(request) => {
            let forwarded = Request::from_parts(parts, Body::from(request.clone()));
            let response = match answer_in_process(routes, forwarded).await {
                Some(response) => response,
                None => error_response(&HubError::HostSilent),
            };
            (request, response)
        }
        Err(_) => (Bytes::new(), closing(error_response(&HubError::TooLarge(format!("request body is over the {limit}-byte limit"))))),
    };
    let Some((session_id, _, inner)) = named else { return response };
    let (head, body) = response.into_parts();
    let streamed = head.headers.get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("text/event-stream"));
    // Answers are built whole by the host; an event stream is passed on unread.
    let (answer, body) = if streamed {
        (None, body)
    } else {
        match to_bytes(body, usize::MAX).await {
            Ok(bytes) => (Some(bytes.clone()), Body::from(bytes)),
            Err(_) => (None, Body::empty()),
        }
    };
    let surface = if inner.split('?').next() == Some("/mcp") { Surface::Mcp } else { Surface::Api };
    let exchange = Exchange {
        session_id,
        surface,
        method,
        target: inner,
        status: head.status.as_u16(),
        request,
        answer,
        created_at,
        completed_at: now_iso(),
        duration: started.elapsed(),
    };
    hub.call_log.record(&hub.meta, exchange).await;
    Response::from_parts(head, body)
}

/// Answer `request` with `router` in process.
async fn answer_in_process(router: axum::Router, request: Request) -> Option<Response> {
    use tower::ServiceExt as _;
    router.oneshot(request).await.ok()
}

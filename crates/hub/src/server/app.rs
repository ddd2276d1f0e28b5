//! The hub as an axum app: the router, serving on a listener, and each request's
//! first steps (the body limit, the embedded host's data plane — recorded in the
//! sessions' call logs —, the web pages, the
//! object routes, one entity's rows of a world's data, streamed) before the JSON routes.

use super::data_plane::data_plane;
use super::objects::object_route;
use super::request::parse_query;
use super::response::{closing, error_response, json_response};
use super::routes::route;
use super::session_guard::sweep_lost;
use super::state::Hub;
use super::web;
use super::world_data::show_rows;
use crate::error::HubError;
use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::response::Response;
use std::sync::Arc;

/// The axum router of a hub.
pub fn router(hub: Hub) -> axum::Router {
    axum::Router::new().fallback(answer).with_state(Arc::new(hub)).layer(axum::middleware::from_fn(gateway_serve::request_log::log_request))
}

/// Serve until the process ends.
pub async fn serve(hub: Hub, addr: std::net::SocketAddr) -> Result<(), HubError> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| HubError::Bind { addr, source })?;
    serve_on(hub, listener).await
}

/// Serve on a bound listener.
pub async fn serve_on(hub: Hub, listener: tokio::net::TcpListener) -> Result<(), HubError> {
    serve_until(hub, listener, std::future::pending()).await
}

/// Serve on a bound listener until `shutdown` completes (requests in flight are
/// answered first); the embedded World Host's expired leases are swept meanwhile.
pub async fn serve_until(
    mut hub: Hub,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), HubError> {
    if hub.bound_url.is_none() {
        hub.bound_url = listener.local_addr().ok().map(bound_url);
    }
    // Sessions of an embedded host that is gone (a restart) are marked LOST, not left READY.
    match sweep_lost(&hub).await {
        Ok(0) => {}
        Ok(lost) => eprintln!("gateway hub: {lost} world sessions of a previous run are marked LOST"),
        Err(error) => eprintln!("gateway hub: could not check the sessions of a previous run: {error}"),
    }
    let sweeper = hub.worlds.as_ref().and_then(|w| w.embedded.clone()).map(|host| tokio::spawn(gateway_host::server::sweep(host)));
    // The peer's address reaches the handlers (the sign-in rate limit counts by it).
    let app = router(hub).into_make_service_with_connect_info::<std::net::SocketAddr>();
    let served = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
    if let Some(sweeper) = sweeper {
        sweeper.abort();
    }
    served.map_err(HubError::Serve)
}

/// `http://<addr>`, an unspecified address (0.0.0.0, ::) as loopback: what this machine
/// reaches the hub at.
fn bound_url(addr: std::net::SocketAddr) -> String {
    let ip = match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", std::net::SocketAddr::new(ip, addr.port()))
}

pub(super) async fn answer(State(hub): State<Arc<Hub>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query = parse_query(parts.uri.query().unwrap_or(""));
    let is_object = path.starts_with("/objects/");
    let limit = if is_object { hub.limits.max_object_bytes } else { hub.limits.max_json_bytes };
    if let Some(length) = parts.headers.get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok()) {
        if length > limit as u64 {
            let error = HubError::TooLarge(format!("request body of {length} bytes is over the {limit}-byte limit"));
            return closing(error_response(&error));
        }
    }
    if path.starts_with("/s/") {
        // A session's data plane, when it runs on this hub's own host.
        // Every call is recorded in the session's call log (server/data_plane.rs).
        if let Some(routes) = hub.worlds.as_ref().and_then(|w| w.embedded_routes.clone()) {
            return data_plane(&hub, routes, parts, body, limit).await;
        }
    }
    if path == "/" || path == "/ui" || path.starts_with("/ui/") {
        // The web pages (server/web.rs): HTML for people, behind the same keys.
        return web::answer(&hub, parts, body).await;
    }
    if is_object {
        // Object bodies stream through (to the store, or from it): never held whole.
        return match object_route(&hub, &parts.method, &path, &query, &parts.headers, body).await {
            Ok(response) => response,
            // The body may be left partly unread: the client must not reuse the connection.
            Err(error) => closing(error_response(&error)),
        };
    }
    if let (true, Some(entity)) = (parts.method == Method::GET, query.get("entity")) {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        if let ["api", "public", "worlds", slug, "data"] = segments.as_slice() {
            // One entity's rows: every one, streamed (server/world_data.rs).
            return match show_rows(&hub, &parts.headers, slug, entity).await {
                Ok(response) => response,
                Err(error) => error_response(&error),
            };
        }
    }
    let bytes = match to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => return error_response(&HubError::TooLarge(format!("request body is over the {limit}-byte limit"))),
    };
    let result = route(&hub, &parts.method, &path, &query, &parts.headers, &bytes).await;
    match result {
        Ok((status, value)) => json_response(status, &value),
        Err(error) => error_response(&error),
    }
}

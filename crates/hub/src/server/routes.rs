//! The JSON routes: `/api/public/benchmark-containers/*` dispatched here, and the
//! other `/api/public/*` families handed to their modules.

use super::*;

pub(super) const API: &str = "/api/public/benchmark-containers";

pub(super) async fn route(
    hub: &Hub,
    method: &Method,
    path: &str,
    query: &BTreeMap<String, String>,
    headers: &HeaderMap,
    body: &[u8],
) -> Answer {
    if path == "/healthz" {
        return ok(object([("ok", Value::Bool(true))]));
    }
    if path == "/openapi.json" && method == Method::GET {
        return ok(super::openapi::document());
    }
    let base_url = base_url(hub, headers);
    if let Some(rest) = path.strip_prefix("/api/public/") {
        let segments: Vec<&str> = rest.split('/').collect();
        match (method.as_str(), segments.as_slice()) {
            ("POST", ["world-hosts"]) => return sessions::heartbeat(hub, headers, &parse_body(body)?).await,
            ("GET", ["world-sessions", sid, "host"]) => return sessions::session_host(hub, headers, &unquote_plus(sid)).await,
            _ => {}
        }
        if let Some(answer) = world_route(hub, method, &segments, query, headers, body, &base_url).await {
            return answer;
        }
        if let Some(answer) = world_data::route(hub, method, &segments, query, headers, body, &base_url).await {
            return answer;
        }
        if let Some(answer) = environments::route(hub, method, &segments, query, headers, body).await {
            return answer;
        }
        if let Some(answer) = agents::route(hub, method, &segments, query, headers, body).await {
            return answer;
        }
        if let Some(answer) = connectors::route(hub, method, &segments, query, headers, body).await {
            return answer;
        }
    }
    let Some(rest) = path.strip_prefix(API) else {
        return Err(HubError::NotFound(format!("no route for {method} {path}")));
    };
    let project = authenticate(hub, headers).await?;
    let segments: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    let get = |key: &str| query.get(key).cloned();
    match (method.as_str(), segments.as_slice()) {
        ("POST", ["resolve"]) => resolve(hub, &project, &parse_body(body)?).await,
        ("POST", ["versions"]) => create_version(hub, &project, &parse_body(body)?, &base_url).await,
        ("GET", ["versions", "diff"]) => diff(hub, &project, get("base"), get("head")).await,
        ("POST", ["versions", id, "finalize"]) => finalize(hub, &project, id, &parse_body(body)?).await,
        ("GET", ["versions", id, "files"]) => files(hub, &project, id).await,
        ("GET", ["versions", id, "download"]) => download(hub, &project, id, get("artifact"), &base_url).await,
        ("POST", ["resolve-version"]) => resolve_version(hub, &project, &parse_body(body)?, &base_url).await,
        ("GET", ["refs"]) => list_refs(hub, &project, get("slug")).await,
        ("POST", ["refs"]) => create_ref(hub, &project, &parse_body(body)?).await,
        ("GET", ["log"]) => log(hub, &project, get("slug"), get("branch"), get("limit")).await,
        ("POST", ["fork"]) => fork(hub, &project, &parse_body(body)?).await,
        ("POST", ["proposals"]) => create_proposal(hub, &project, &parse_body(body)?).await,
        ("GET", ["proposals"]) => list_proposals(hub, &project, get("slug")).await,
        ("PUT", ["secrets"]) => set_secret(hub, &project, &parse_body(body)?).await,
        ("GET", ["secrets"]) => list_secrets(hub, &project, get("slug")).await,
        ("DELETE", ["secrets"]) => delete_secret(hub, &project, &parse_body(body)?).await,
        ("GET", ["run-configs"]) => list_run_configs(hub, &project).await,
        ("POST", ["run-configs"]) => upsert_run_config(hub, &project, &parse_body(body)?).await,
        ("DELETE", ["run-configs"]) => delete_run_config(hub, &project, &parse_body(body)?).await,
        ("POST", ["evaluations"]) => evaluations::create_evaluation(hub, &project, &parse_body(body)?).await,
        ("POST", ["evaluations", id, "samples"]) => evaluations::add_samples(hub, &project, &unquote_plus(id), &parse_body(body)?).await,
        ("POST", ["evaluations", id, "finalize"]) => {
            evaluations::finalize_evaluation(hub, &project, &unquote_plus(id), &parse_body(body)?).await
        }
        ("POST", ["run-configs", "dispatch"]) => environments::dispatch_run_config(hub, &project, &parse_body(body)?).await,
        _ => Err(HubError::NotFound(format!("no route for {method} {path}"))),
    }
}

/// The world-sessions and world-tasks routes (None: not one of them).
pub(super) async fn world_route(
    hub: &Hub,
    method: &Method,
    segments: &[&str],
    query: &BTreeMap<String, String>,
    headers: &HeaderMap,
    body: &[u8],
    base_url: &str,
) -> Option<Answer> {
    if !matches!(segments.first(), Some(&"world-sessions" | &"world-tasks")) {
        return None;
    }
    let project = match authenticate(hub, headers).await {
        Ok(project) => project,
        Err(error) => return Some(Err(error)),
    };
    let p = project.as_str();
    let id = |raw: &str| unquote_plus(raw);
    Some(match (method.as_str(), segments) {
        ("POST", ["world-sessions"]) => match parse_body(body) {
            Ok(body) => sessions::open_session(hub, p, &body, base_url).await,
            Err(e) => Err(e),
        },
        ("GET", ["world-sessions", sid]) => sessions::session_status(hub, p, &id(sid)).await,
        ("DELETE", ["world-sessions", sid]) => sessions::close_session(hub, p, &id(sid)).await,
        ("POST", ["world-sessions", sid, "calls"]) => match parse_body(body) {
            Ok(body) => sessions::create_call(hub, p, &id(sid), &body, base_url).await,
            Err(e) => Err(e),
        },
        ("GET", ["world-sessions", sid, "calls"]) => sessions::list_calls(hub, p, &id(sid), query).await,
        ("GET", ["world-sessions", sid, "calls", call]) => sessions::get_call(hub, p, &id(sid), &id(call)).await,
        ("POST", ["world-sessions", sid, "task"]) => match parse_body(body) {
            Ok(body) => sessions::save_task(hub, p, &id(sid), &body).await,
            Err(e) => Err(e),
        },
        ("POST", ["world-sessions", _, "browser-events"]) | ("GET", ["world-sessions", _, "browser-events"]) => {
            Err(HubError::BadRequest("surface not available: this hub serves no browser surface".into()))
        }
        ("POST", ["world-tasks"]) => match parse_body(body) {
            Ok(body) => tasks::create_task(hub, p, &body).await,
            Err(e) => Err(e),
        },
        ("GET", ["world-tasks"]) => tasks::list_tasks(hub, p, query).await,
        ("GET", ["world-tasks", tid]) => tasks::show_task(hub, p, &id(tid), query.get("version").cloned()).await,
        ("PATCH", ["world-tasks", tid]) => match parse_body(body) {
            Ok(body) => tasks::update_task(hub, p, &id(tid), &body).await,
            Err(e) => Err(e),
        },
        ("DELETE", ["world-tasks", tid]) => tasks::delete_task(hub, p, &id(tid)).await,
        ("POST", ["world-tasks", tid, "validate"]) => match parse_body(body) {
            Ok(body) => tasks::validate_task(hub, p, &id(tid), &body, base_url).await,
            Err(e) => Err(e),
        },
        _ => Err(HubError::NotFound(format!("no route for {method} /api/public/{}", segments.join("/")))),
    })
}

//! The JSON routes: `/api/public/benchmark-containers/*` dispatched here, and the
//! other `/api/public/*` families handed to their modules.

use super::access::authenticate;
use super::refs::{create_proposal, create_ref, fork, list_proposals, list_refs, log};
use super::request::{base_url, parse_body, JsonRequest};
use super::response::{ok, Answer};
use super::settings::{delete_run_config, delete_secret, list_run_configs, list_secrets, set_secret, upsert_run_config};
use super::state::Hub;
use super::versions::{create_version, diff, download, files, finalize, resolve, resolve_version};
use super::{
    agents, connectors, environments, eval_states, evaluations, regrade, release, runs, session_fork, sessions, tasks, world_data,
};
use crate::error::HubError;
use axum::http::{HeaderMap, Method};
use gateway_common::url::unquote_plus;
use gateway_world::json::{object, Value};
use std::collections::BTreeMap;

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
        if let Some(family) = Family::of(&segments) {
            let request = JsonRequest { hub, method, segments: &segments, query, headers, body, base_url: &base_url };
            return family.route(&request).await;
        }
    }
    let Some(rest) = path.strip_prefix(API) else {
        return Err(HubError::no_route(method, path));
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
        ("POST", ["evaluations", id, "states"]) => {
            eval_states::register_states(hub, &project, &unquote_plus(id), &parse_body(body)?, &base_url).await
        }
        ("POST", ["evaluations", id, "regrade"]) => regrade::regrade(hub, &project, &unquote_plus(id), &parse_body(body)?).await,
        ("POST", ["run-configs", "dispatch"]) => environments::dispatch_run_config(hub, &project, &parse_body(body)?).await,
        _ => Err(HubError::no_route(method, path)),
    }
}

/// The `/api/public/*` families other than the benchmark containers, each served by
/// its module once the request's project key is checked.
#[derive(Clone, Copy)]
enum Family<'a> {
    /// World sessions and tasks (here).
    Worlds,
    /// A world's data batches (`world_data.rs`): `worlds/<slug>/data/<rest>`.
    WorldData { slug: &'a str, rest: &'a [&'a str] },
    /// Environments, task sets, ingestion (`environments.rs`).
    Environments,
    /// The agents platform: secrets, agents, datasets, algorithms (`agents.rs`).
    Agents,
    /// Its runs, verify jobs and the worker endpoints (`runs.rs`).
    Runs,
    /// Its agent builds and the release gate (`release.rs`).
    Releases,
    /// Workspace connectors (`connectors.rs`).
    Connectors,
}

impl<'a> Family<'a> {
    /// The family a path (split after `/api/public/`) belongs to, if any.
    fn of(segments: &'a [&'a str]) -> Option<Family<'a>> {
        Some(match segments {
            ["world-sessions" | "world-tasks", ..] => Family::Worlds,
            ["worlds", slug, "data", rest @ ..] => Family::WorldData { slug, rest },
            ["environments" | "task-sets" | "environment-agent" | "ingestion", ..] => Family::Environments,
            ["secrets" | "agents" | "datasets" | "algorithms", ..] => Family::Agents,
            ["runs", ..] => Family::Runs,
            ["agent-builds", ..] => Family::Releases,
            ["context", "connectors", ..] | ["connectors", "hub" | "clone"] => Family::Connectors,
            _ => return None,
        })
    }

    /// The answer of the family's module, for the project whose key the request carries.
    async fn route(self, request: &JsonRequest<'_>) -> Answer {
        let project = authenticate(request.hub, request.headers).await?;
        match self {
            Family::Worlds => world_route(request, &project).await,
            Family::WorldData { slug, rest } => world_data::route(request, &project, slug, rest).await,
            Family::Environments => environments::route(request, &project).await,
            Family::Agents => agents::route(request, &project).await,
            Family::Runs => runs::route(request, &project).await,
            Family::Releases => release::route(request, &project).await,
            Family::Connectors => connectors::route(request, &project).await,
        }
    }
}

/// The world-sessions and world-tasks routes.
async fn world_route(request: &JsonRequest<'_>, p: &str) -> Answer {
    let JsonRequest { hub, method, segments, query, base_url, .. } = *request;
    let id = |raw: &str| unquote_plus(raw);
    match (method.as_str(), segments) {
        ("POST", ["world-sessions"]) => sessions::open_session(hub, p, &request.json()?, base_url).await,
        ("GET", ["world-sessions", sid]) => sessions::session_status(hub, p, &id(sid)).await,
        ("DELETE", ["world-sessions", sid]) => sessions::close_session(hub, p, &id(sid)).await,
        ("POST", ["world-sessions", sid, "fork"]) => session_fork::fork_session(hub, p, &id(sid), base_url).await,
        ("POST", ["world-sessions", sid, "calls"]) => sessions::create_call(hub, p, &id(sid), &request.json()?).await,
        ("GET", ["world-sessions", sid, "calls"]) => sessions::list_calls(hub, p, &id(sid), query).await,
        ("GET", ["world-sessions", sid, "calls", call]) => sessions::get_call(hub, p, &id(sid), &id(call)).await,
        ("POST", ["world-sessions", sid, "task"]) => sessions::save_task(hub, p, &id(sid), &request.json()?).await,
        ("POST", ["world-sessions", _, "browser-events"]) | ("GET", ["world-sessions", _, "browser-events"]) => {
            Err(HubError::BadRequest("surface not available: this hub serves no browser surface".into()))
        }
        ("POST", ["world-tasks"]) => tasks::create_task(hub, p, &request.json()?).await,
        ("GET", ["world-tasks"]) => tasks::list_tasks(hub, p, query).await,
        ("GET", ["world-tasks", tid]) => tasks::show_task(hub, p, &id(tid), query.get("version").cloned()).await,
        ("PATCH", ["world-tasks", tid]) => tasks::update_task(hub, p, &id(tid), &request.json()?).await,
        ("DELETE", ["world-tasks", tid]) => tasks::delete_task(hub, p, &id(tid)).await,
        ("POST", ["world-tasks", tid, "validate"]) => tasks::validate_task(hub, p, &id(tid), &request.json()?).await,
        _ => Err(request.no_route()),
    }
}

//! World sessions (`/api/public/world-sessions`, spec §5) and the World Host
//! callbacks (`/api/public/world-hosts`, `…/{sid}/host`, §10.3).
//!
//! A session is a document of its project (its task, tools, surfaces and where it
//! runs); its calls are answered synchronously through the host's control plane
//! and logged as documents of their own, so the first poll of a call finds it done.
//! The agent's own calls on the data plane of the embedded host are logged beside them
//! (`call_log.rs`); every reader of the log flushes that queue first.

use super::access::{container, own_version};
use super::call_log::entries;
use super::documents::{calls_kind, document_text, load_document, LAST_GRADE, SESSION};
use super::objects::presign;
use super::request::{host_base_url, opt_str};
use super::response::{ok, Answer};
use super::session_guard::{check, mark_lost, release, reserve};
use super::state::Hub;
use super::tasks::{load_task, parse_spec, spec_hash, task_version};
use super::versions::resolve_ref;
use super::world_host::{world_version, worlds};
use crate::error::HubError;
use crate::host_credentials::HOSTS_PROJECT;
use crate::store::{Container, DocumentPages, Version};
use crate::util::{new_id, now_iso, now_secs};
use crate::worlds::{stored_bundle, HostLink, Worlds, HOST_STALE_SECONDS};
use axum::http::HeaderMap;
use gateway_host::tools::{bundled_instruction, route_args, tools};
use gateway_host::version::Version as HostVersion;
use gateway_host::{ControlRequest, OpenRequest};
use gateway_world::json::{self, object, Map, Value};
use gateway_world::task::TaskSpec;
use std::collections::BTreeMap;
use std::sync::Arc;

pub(super) async fn load_session(hub: &Hub, project: &str, id: &str) -> Result<Map, HubError> {
    load_document(hub.meta.as_ref(), project, SESSION, id, &format!("world session {id}"), || HubError::missing("world session", id)).await
}

pub(super) async fn store_session(hub: &Hub, project: &str, session: &Map) -> Result<(), HubError> {
    let id = session.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_string();
    hub.meta.put_document(project, SESSION, &id, &document_text(&Value::Object(session.clone()))).await?;
    Ok(())
}

/// The session as clients see it (the hub's own bookkeeping left out).
pub(super) fn public(session: &Map) -> Value {
    Value::Object(session.iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect())
}

pub(super) fn text_of(map: &Map, key: &str) -> String {
    map.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The registered remote hosts that may take a session, least loaded first: heard from
/// lately, not draining, with room, and holding a credential that is not revoked.
async fn remote_hosts(hub: &Hub) -> Result<Vec<HostLink>, HubError> {
    let now = now_secs() as f64;
    let mut hosts: Vec<(f64, HostLink)> = Vec::new();
    for (_, text) in hub.meta.documents(HOSTS_PROJECT, "host", 0, 1000).await? {
        let Some(stats) = json::parse_clean(&text) else { continue };
        let seen = stats.get("_seenAt").and_then(Value::as_f64).unwrap_or(0.0);
        let url = stats.get("hostUrl").and_then(Value::as_str).unwrap_or_default().to_string();
        let name = stats.get("_credential").and_then(Value::as_str).unwrap_or_default().to_string();
        let sessions = stats.get("sessions").and_then(Value::as_f64).unwrap_or(0.0);
        let capacity = stats.get("capacity").and_then(Value::as_f64).unwrap_or(0.0);
        let draining = matches!(stats.get("draining"), Some(Value::Bool(true)));
        if url.is_empty() || name.is_empty() || now - seen > HOST_STALE_SECONDS || draining || sessions >= capacity {
            continue;
        }
        if let Some(secret) = crate::host_credentials::credential(hub.meta.as_ref(), &hub.keys, &name).await? {
            hosts.push((sessions / capacity.max(1.0), HostLink::Remote { url, name, secret }));
        }
    }
    hosts.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(hosts.into_iter().map(|(_, link)| link).collect())
}

/// Where a stored session runs: its embedded host, or its remote host under that host's
/// credential. A host whose credential was revoked is called no more: the session is lost.
pub(super) async fn link_of(hub: &Hub, project: &str, session: &mut Map) -> Result<HostLink, HubError> {
    let url = text_of(session, "_host");
    if url == "embedded" {
        return Ok(HostLink::Embedded);
    }
    let name = text_of(session, "_hostName");
    match crate::host_credentials::credential(hub.meta.as_ref(), &hub.keys, &name).await? {
        Some(secret) => Ok(HostLink::Remote { url, name, secret }),
        None => {
            let why = format!("its World Host '{name}' is no longer registered (its credential was revoked)");
            mark_lost(hub, project, session, &why).await?;
            Err(HubError::Conflict(format!("world session {} is LOST: {why}", text_of(session, "sessionId"))))
        }
    }
}

pub(super) async fn open_session(hub: &Hub, project: &str, body: &Map, base_url: &str) -> Answer {
    let (container, version) = session_version(hub, project, body).await?;
    let surfaces = asked_surfaces(body)?;
    let opened = world_version(hub, &version).await?;
    let task = session_task(hub, project, body, &opened).await?;
    let session_id = new_id("ws");
    reserve(hub, project, &session_id).await?;
    let parts = OpenParts { container, version, surfaces, opened, task, session_id: &session_id };
    let answered = open_placed(hub, project, base_url, parts).await;
    if answered.is_err() {
        release(hub, project, &session_id).await?;
    }
    answered
}

/// What an open decided before it placed the session.
struct OpenParts<'a> {
    container: Container,
    version: Version,
    surfaces: Vec<String>,
    opened: Arc<HostVersion>,
    task: SessionTask,
    session_id: &'a str,
}

async fn open_placed(hub: &Hub, project: &str, base_url: &str, parts: OpenParts<'_>) -> Answer {
    let OpenParts { container, version, surfaces, opened, task, session_id } = parts;
    let worlds = worlds(hub)?.clone();
    let session_id = session_id.to_string();
    let token = hex::encode(crate::util::random_bytes(24));
    let (bundled, spec) = match &task.host {
        HostTask::Bundled(name) => (Some(name.clone()), None),
        HostTask::Spec(spec) => (None, Some(spec.clone())),
    };
    // The embedded host reads the bundle from the store; a remote host fetches it from
    // the hub's own address, never from the request's Host.
    let request = OpenRequest {
        session_id: session_id.clone(),
        version_id: version.id.clone(),
        bundle_url: stored_bundle(&version.object_key),
        task: bundled,
        task_spec: spec,
        token: Some(token.clone()),
        restore: None,
    };
    let remote_url = presign(hub, &host_base_url(hub), "GET", &version.object_key, &[]);
    let link = place_session(hub, &worlds, request, &remote_url).await?;
    let data_base = match &link {
        HostLink::Embedded => base_url.to_string(),
        HostLink::Remote { url, .. } => url.clone(),
    };
    let access = SessionAccess { session_id: &session_id, api_url: format!("{data_base}/s/{session_id}"), token: &token };
    let surface_map = surface_answers(&worlds, &link, &opened, &surfaces, &access).await?;
    let instruction = match &task.spec {
        Some(spec) => Value::str(&spec.instruction),
        None => bundled_instruction(&opened, task.info.get("name").and_then(Value::as_str).unwrap_or_default())
            .map(Value::Str)
            .unwrap_or_default(),
    };
    let mut session = Map::default();
    session.insert("sessionId".into(), Value::str(&session_id));
    session.insert("versionId".into(), Value::str(&version.id));
    session.insert("slug".into(), Value::str(&container.slug));
    session.insert("state".into(), Value::str("READY"));
    session.insert("ready".into(), Value::Bool(true));
    session.insert("taskName".into(), task.info.get("name").cloned().unwrap_or_default());
    session.insert("instruction".into(), instruction);
    session.insert("task".into(), task.info);
    session.insert("tools".into(), tools(&opened, task.spec.as_ref().and_then(|s| s.tools.as_ref())));
    session.insert("surfaces".into(), Value::Object(surface_map));
    session.insert("createdAt".into(), Value::Str(now_iso()));
    session.insert("_host".into(), Value::Str(link.name()));
    match &link {
        HostLink::Embedded => {
            session.insert("_hostMachine".into(), Value::str(&worlds.machine));
            session.insert("_hostInstance".into(), Value::str(&worlds.instance))
        }
        HostLink::Remote { name, .. } => session.insert("_hostName".into(), Value::str(name)),
    };
    if let HostTask::Spec(spec) = &task.host {
        session.insert("_spec".into(), spec.to_value());
    }
    store_session(hub, project, &session).await?;
    let owner = object([("hostUrl", Value::Str(link.name())), ("project", Value::str(project)), ("sessionId", Value::str(&session_id))]);
    hub.meta.put_document(HOSTS_PROJECT, "owner", &session_id, &json::canonical(&owner)).await?;
    ok(public(&session))
}

/// The version a session opens: `versionId`, else the latest of `slug` (a `@ref`
/// suffix is ignored).
async fn session_version(hub: &Hub, project: &str, body: &Map) -> Result<(Container, Version), HubError> {
    match opt_str(body, "versionId")? {
        Some(id) => own_version(hub, project, &id).await,
        None => {
            let slug = opt_str(body, "slug")?.map(|s| s.split('@').next().unwrap_or_default().to_string());
            let container = container(hub, project, slug).await?;
            let (version, _) = resolve_ref(hub, &container, "latest").await?;
            Ok((container, version))
        }
    }
}

/// The surfaces asked for: tools always, then api and ui (no browser surface here).
fn asked_surfaces(body: &Map) -> Result<Vec<String>, HubError> {
    let mut surfaces = vec!["tools".to_string()];
    if let Some(asked) = body.get("surfaces").and_then(Value::as_array) {
        for surface in asked {
            match surface.as_str() {
                Some(kind @ ("tools" | "api" | "ui")) => {
                    if !surfaces.iter().any(|s| s == kind) {
                        surfaces.push(kind.to_string());
                    }
                }
                Some("browser") => {
                    return Err(HubError::BadRequest(
                        "surface not available: this hub serves no browser surface (ask for tools, api or ui)".into(),
                    ))
                }
                _ => return Err(HubError::BadRequest(format!("unknown surface {}: use tools, api, ui", json::canonical(surface)))),
            }
        }
    }
    Ok(surfaces)
}

/// The task's metadata as a session's descriptor shows it: without the reference
/// solution (`metadata.solution`), which would hand the agent the answer. The host
/// and the graders still get the whole spec (`_spec`, never shown).
fn visible_metadata(spec: &TaskSpec) -> Value {
    Value::Object(spec.visible_metadata())
}

/// A session's task as the host is sent it: a bundled task by name, or a spec.
enum HostTask {
    /// The open request's `task`.
    Bundled(String),
    /// The open request's `taskSpec`: the spec this hub parsed, shared with its own
    /// host (a remote host is sent its normalised value).
    Spec(Arc<TaskSpec>),
}

/// A session's task as the host is sent it and the session records it.
struct SessionTask {
    /// The task of the host's open request.
    host: HostTask,
    /// The session's `task`: source, name, hash, metadata (and a stored task's id and version).
    info: Value,
    /// The spec, unless the task is bundled.
    spec: Option<Arc<TaskSpec>>,
}

impl SessionTask {
    /// A task given as a spec: the host is sent the spec itself; the session records
    /// where it came from (`source`), its name and hash, its visible metadata, then
    /// `more` (a stored task's id and version, a world task's path).
    fn of_spec<const N: usize>(spec: TaskSpec, source: &str, name: Value, hash: String, more: [(&str, Value); N]) -> SessionTask {
        let spec = Arc::new(spec);
        let mut info = Map::default();
        info.insert("source".into(), Value::str(source));
        info.insert("name".into(), name);
        info.insert("hash".into(), Value::Str(hash));
        info.insert("metadata".into(), visible_metadata(&spec));
        info.extend(more.into_iter().map(|(key, value)| (key.to_string(), value)));
        SessionTask { host: HostTask::Spec(spec.clone()), info: Value::Object(info), spec: Some(spec) }
    }
}

/// The task: by name the world's own `tasks/NAME.json` first, else its bundled scenario;
/// a stored task's spec; or an inline spec.
async fn session_task(hub: &Hub, project: &str, body: &Map, opened: &HostVersion) -> Result<SessionTask, HubError> {
    Ok(match body.get("task") {
        Some(Value::Str(name)) if !name.trim().is_empty() => match world_task(opened, name)? {
            Some(task) => task,
            None => bundled_task(opened, name)?,
        },
        Some(Value::Object(reference)) if reference.contains_key("id") => {
            let id = reference.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            let wanted = reference.get("version").and_then(Value::as_f64).map(|v| v as i64);
            let task = load_task(hub, project, &id).await?;
            let (number, hash, spec_value) = task_version(&task, wanted)?;
            let (spec, _) = parse_spec(&spec_value)?;
            let name = task.get("name").cloned().unwrap_or_default();
            SessionTask::of_spec(spec, "stored", name, hash, [("id", Value::Str(id)), ("version", Value::Int(number))])
        }
        Some(inline @ Value::Object(_)) => {
            let (spec, normalised) = parse_spec(inline)?;
            let name = spec.name.clone().map(Value::Str).unwrap_or_default();
            SessionTask::of_spec(spec, "inline", name, spec_hash(&normalised), [])
        }
        _ => {
            return Err(HubError::BadRequest(
                "a session needs a task: a bundled task name, a stored task {id, version?} or a spec with an instruction".into(),
            ))
        }
    })
}

/// The world's own task file `tasks/NAME.json`, as a spec the host is sent, when the
/// world has one by that (plain) name.
fn world_task(opened: &HostVersion, name: &str) -> Result<Option<SessionTask>, HubError> {
    let plain = !name.starts_with('.') && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let path = opened.tree.join("tasks").join(format!("{name}.json"));
    if !plain || !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| HubError::io(&path, e))?;
    let value = gateway_world::json::parse(&text)
        .map_err(|e| HubError::BadRequest(format!("tasks/{name}.json of this world is not JSON: {e:?}")))?
        .value;
    let (spec, normalised) = parse_spec(&value)?;
    let path = Value::Str(format!("tasks/{name}.json"));
    Ok(Some(SessionTask::of_spec(spec, "world", Value::str(name), spec_hash(&normalised), [("path", path)])))
}

/// A bundled scenario by name; refused, naming what the world does have, when there is none.
fn bundled_task(opened: &HostVersion, name: &str) -> Result<SessionTask, HubError> {
    if opened.scenario_dir(name).is_none() {
        let listed = |dir: std::path::PathBuf, suffix: &str| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(suffix)).map(str::to_string))
                .collect();
            names.sort();
            names
        };
        let tasks = listed(opened.tree.join("tasks"), ".json");
        let mut scenarios = listed(opened.bundle.join("scenarios"), "");
        scenarios.extend(listed(opened.tree.join("scenarios"), ""));
        scenarios.sort();
        scenarios.dedup();
        let have = |names: &[String]| if names.is_empty() { "none".to_string() } else { names.join(", ") };
        return Err(HubError::BadRequest(format!(
            "this world has no task named '{name}': no tasks/{name}.json and no scenarios/{name}/ (its tasks: {}; its scenarios: {})",
            have(&tasks),
            have(&scenarios)
        )));
    }
    Ok(SessionTask {
        host: HostTask::Bundled(name.to_string()),
        info: object([
            ("source", Value::str("bundled")),
            ("name", Value::str(name)),
            ("hash", Value::Null),
            ("metadata", Value::Object(Map::default())),
        ]),
        spec: None,
    })
}

/// Placement: this hub's own host first, then registered hosts, least loaded first;
/// the first that opens the session (`request`) holds it. A remote host is asked to
/// fetch the bundle from `remote_url`.
async fn place_session(hub: &Hub, worlds: &Worlds, request: OpenRequest, remote_url: &str) -> Result<HostLink, HubError> {
    let mut candidates: Vec<HostLink> = Vec::new();
    if worlds.embedded.is_some() {
        candidates.push(HostLink::Embedded);
    }
    candidates.extend(remote_hosts(hub).await?);
    let mut refusal = None;
    for link in candidates {
        let mut asked = request.clone();
        if let HostLink::Remote { .. } = link {
            asked.bundle_url = remote_url.to_string();
        }
        match worlds.control(&link, ControlRequest::Open(asked)).await? {
            Ok(_descriptor) => return Ok(link),
            // Full, draining, unreachable, or not holding the credential it registered with.
            Err(refused) if matches!(refused.status, 503 | 502 | 401 | 403) => refusal = Some(refused),
            Err(refused) => return Err(HubError::BadRequest(refused.message())),
        }
    }
    let why = refusal.map(|r| r.message()).unwrap_or_else(|| "no World Host is registered".into());
    Err(HubError::Conflict(format!("no World Host can take the session now: {why}")))
}

/// How a placed session is reached: its id, its data plane's URL and its token.
pub(super) struct SessionAccess<'a> {
    pub(super) session_id: &'a str,
    pub(super) api_url: String,
    pub(super) token: &'a str,
}

/// The session's `surfaces` answer (api, ui). A ui asked of a world without one
/// closes the session just opened and refuses.
pub(super) async fn surface_answers(
    worlds: &Worlds,
    link: &HostLink,
    opened: &HostVersion,
    surfaces: &[String],
    access: &SessionAccess<'_>,
) -> Result<Map, HubError> {
    let SessionAccess { session_id, api_url, token } = access;
    let mut surface_map = Map::default();
    if surfaces.iter().any(|s| s == "api") {
        surface_map.insert("api".into(), object([("url", Value::str(api_url)), ("token", Value::str(*token))]));
    }
    if surfaces.iter().any(|s| s == "ui") {
        let Some(ui) = opened.settings.ui.as_ref() else {
            worlds.control(link, ControlRequest::Close { session_id: session_id.to_string() }).await?.ok();
            return Err(HubError::BadRequest("surface not available: this world has no [ui] static app".into()));
        };
        surface_map.insert(
            "ui".into(),
            object([
                ("url", Value::str(api_url)),
                ("entry", Value::Str(format!("{api_url}/?token={token}"))),
                ("apiPath", Value::str(&ui.api_path)),
                ("token", Value::str(*token)),
            ]),
        );
    }
    Ok(surface_map)
}

pub(super) async fn session_status(hub: &Hub, project: &str, id: &str) -> Answer {
    let mut session = load_session(hub, project, id).await?;
    check(hub, project, &mut session).await?;
    ok(public(&session))
}

pub(super) async fn create_call(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let mut session = load_session(hub, project, id).await?;
    check(hub, project, &mut session).await?;
    if text_of(&session, "state") != "READY" {
        let why = session.get("error").and_then(Value::as_str).map(|e| format!(": {e}")).unwrap_or_default();
        return Err(HubError::Conflict(format!("world session {id} is {}{why}", text_of(&session, "state"))));
    }
    let worlds = worlds(hub)?.clone();
    let link = link_of(hub, project, &mut session).await?;
    let kind = opt_str(body, "kind")?.unwrap_or_default();
    let tool = body.get("tool").cloned().unwrap_or_default();
    let args = body.get("args").cloned().unwrap_or(Value::Object(Map::default()));
    let at = now_iso();
    let session_id = id.to_string();
    let request = match kind.as_str() {
        "call" => {
            let Some(name) = tool.as_str() else { return Err(HubError::BadRequest("a call needs 'tool'".into())) };
            let (_, version) = own_version(hub, project, &text_of(&session, "versionId")).await?;
            let opened = world_version(hub, &version).await?;
            // The agent's flat args, routed onto the operation's {path, query, body}.
            ControlRequest::Call { session_id, tool: name.to_string(), args: route_args(&opened, name, &args) }
        }
        "grade" => ControlRequest::Grade { session_id },
        "state" => ControlRequest::State { session_id },
        "reset" => ControlRequest::Reset { session_id },
        "seed" => ControlRequest::Seed { session_id, args: args.clone() },
        // Beyond the original: the session's clock, seed, faults, collateral check.
        "configure" => ControlRequest::Configure { session_id, settings: args.clone() },
        other => {
            return Err(HubError::BadRequest(format!("unknown call kind '{other}': use call, grade, state, reset, seed or configure")))
        }
    };
    let answered = worlds.control(&link, request).await?;
    let (mut result, mut error) = match answered {
        Ok(value) => (value, Value::Null),
        Err(refused) if refused.status == 404 => {
            let why = format!("its World Host no longer holds it ({})", refused.message());
            mark_lost(hub, project, &mut session, &why).await?;
            return Err(HubError::Conflict(format!("world session {id} is LOST: {why}")));
        }
        Err(refused) => (Value::Null, Value::Str(refused.message())),
    };
    if kind == "grade" && matches!(result.get("pending"), Some(Value::Bool(true))) {
        // The judge grades; the host's diff of the state stays with its verdict.
        let diff = result.get("diff").cloned();
        let spec = session_spec(&worlds, &session)?;
        let log = call_log(hub, project, id).await?;
        let state = match worlds.control(&link, ControlRequest::State { session_id: id.to_string() }).await? {
            Ok(state) => state,
            Err(refused) => Value::Str(refused.message()),
        };
        match gateway_judge::judge(&spec, &state, &log).await {
            Ok(mut grade) => {
                if let (Value::Object(fields), Some(diff)) = (&mut grade, diff) {
                    fields.insert("diff".into(), diff);
                }
                result = grade;
            }
            Err(why) => {
                result = Value::Null;
                error = Value::Str(why.to_string());
            }
        }
    }
    let entry = ControlEntry { kind: &kind, tool, args, result: result.clone(), error: error.clone(), created_at: at };
    let (call_id, seq) = log_control(hub, project, id, entry).await?;
    if kind == "grade" && matches!(error, Value::Null) {
        let last = object([("callId", Value::str(&call_id)), ("seq", Value::Int(seq))]);
        hub.meta.put_document(project, LAST_GRADE, id, &document_text(&last)).await?;
    }
    let mut out = object([("callId", Value::str(&call_id)), ("done", Value::Bool(true)), ("pending", Value::Bool(false))]);
    if let Value::Object(map) = &mut out {
        if matches!(error, Value::Null) {
            map.insert("result".into(), result);
        } else {
            map.insert("error".into(), error);
        }
    }
    ok(out)
}

/// A session's task spec, typed: its embedded host's own (the value this hub parsed
/// at open, shared), else — a remote host's session, or one its host no longer holds
/// — its record's normalised `_spec` read back.
fn session_spec(worlds: &Worlds, session: &Map) -> Result<Arc<TaskSpec>, HubError> {
    let held = match &worlds.embedded {
        Some(host) if text_of(session, "_host") == "embedded" => host.task_spec(&text_of(session, "sessionId")),
        _ => None,
    };
    match held {
        Some(spec) => Ok(spec),
        None => stored_spec(session),
    }
}

/// The normalised spec a session's record keeps (`_spec`), parsed back.
fn stored_spec(session: &Map) -> Result<Arc<TaskSpec>, HubError> {
    Ok(Arc::new(parse_spec(session.get("_spec").unwrap_or(&Value::Null))?.0))
}

/// An entry of the calls API in a session's call log (`surface: control`).
pub(super) struct ControlEntry<'a> {
    pub(super) kind: &'a str,
    pub(super) tool: Value,
    pub(super) args: Value,
    pub(super) result: Value,
    /// Null when the call succeeded (state `DONE`), else its error (`FAILED`).
    pub(super) error: Value,
    pub(super) created_at: String,
}

/// Store `entry` in session `id`'s call log, after the data plane's calls queued
/// before it, in one write: its call id and its `seq` (the document's order, which
/// every reader of the log gives each entry: [`super::call_log::entries`]).
pub(super) async fn log_control(hub: &Hub, project: &str, id: &str, entry: ControlEntry<'_>) -> Result<(String, i64), HubError> {
    let call_id = new_id("wc");
    let kind_key = calls_kind(id);
    let done = matches!(entry.error, Value::Null);
    let mut call = Map::default();
    call.insert("id".into(), Value::str(&call_id));
    call.insert("kind".into(), Value::str(entry.kind));
    call.insert("surface".into(), Value::str("control"));
    call.insert("tool".into(), entry.tool);
    call.insert("args".into(), entry.args);
    call.insert("result".into(), entry.result);
    call.insert("error".into(), entry.error);
    call.insert("state".into(), Value::str(if done { "DONE" } else { "FAILED" }));
    call.insert("createdAt".into(), Value::Str(entry.created_at));
    call.insert("completedAt".into(), Value::Str(now_iso()));
    // The data plane's calls queued before this one come before it in the log.
    hub.call_log.flush().await;
    let seq = hub.meta.put_document(project, &kind_key, &call_id, &document_text(&Value::Object(call))).await?;
    Ok((call_id, seq))
}

async fn call_log(hub: &Hub, project: &str, id: &str) -> Result<Vec<Value>, HubError> {
    hub.call_log.flush().await;
    let mut out = Vec::new();
    let mut pages = DocumentPages::new(hub.meta.as_ref(), project, calls_kind(id), 500);
    while let Some(page) = pages.next_page().await? {
        out.extend(entries(page));
    }
    Ok(out)
}

pub(super) async fn get_call(hub: &Hub, project: &str, id: &str, call_id: &str) -> Answer {
    load_session(hub, project, id).await?;
    let text = hub
        .meta
        .document(project, &calls_kind(id), call_id)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("no call '{call_id}' in world session {id}")))?;
    let call = json::parse_clean(&text).unwrap_or_default();
    let mut out = object([("done", Value::Bool(true)), ("state", call.get("state").cloned().unwrap_or_default())]);
    if let Value::Object(map) = &mut out {
        match call.get("error") {
            Some(error @ Value::Str(_)) => {
                map.insert("error".into(), error.clone());
            }
            _ => {
                map.insert("result".into(), call.get("result").cloned().unwrap_or_default());
            }
        }
    }
    ok(out)
}

pub(super) async fn list_calls(hub: &Hub, project: &str, id: &str, query: &BTreeMap<String, String>) -> Answer {
    load_session(hub, project, id).await?;
    hub.call_log.flush().await;
    let limit = query.get("limit").and_then(|l| l.parse::<i64>().ok()).unwrap_or(500).clamp(1, 1000);
    let after = match query.get("cursor").filter(|c| !c.is_empty()) {
        Some(cursor) => cursor.parse::<i64>().map_err(|_| HubError::BadRequest(format!("cursor '{cursor}' is not one this hub gave")))?,
        None => 0,
    };
    let page = hub.meta.documents(project, &calls_kind(id), after, limit).await?;
    let next = if page.len() as i64 == limit { page.last().map(|(seq, _)| Value::Str(seq.to_string())) } else { None };
    let calls = entries(page);
    ok(object([("calls", Value::Array(calls)), ("nextCursor", next.unwrap_or_default())]))
}

pub(super) async fn close_session(hub: &Hub, project: &str, id: &str) -> Answer {
    let mut session = load_session(hub, project, id).await?;
    if text_of(&session, "state") == "READY" {
        // A host that lost the session has closed it already; a revoked one is not called.
        if let Ok(link) = link_of(hub, project, &mut session).await {
            let _ = worlds(hub)?.control(&link, ControlRequest::Close { session_id: id.to_string() }).await?;
        }
    }
    if text_of(&session, "state") == "READY" {
        // Its data-plane calls are stored while its owner record still names its project.
        hub.call_log.flush().await;
        session.insert("state".into(), Value::str("STOPPED"));
        session.insert("ready".into(), Value::Bool(false));
        session.insert("closedAt".into(), Value::Str(now_iso()));
        store_session(hub, project, &session).await?;
        hub.meta.delete_document(HOSTS_PROJECT, "owner", id).await?;
    }
    release(hub, project, id).await?;
    ok(object([("sessionId", Value::str(id)), ("closed", Value::Bool(true)), ("state", session.get("state").cloned().unwrap_or_default())]))
}

pub(super) async fn save_task(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let mut session = load_session(hub, project, id).await?;
    let task = session.get("task").cloned().unwrap_or_default();
    match task.get("source").and_then(Value::as_str) {
        Some("inline") => {}
        Some("stored") => return Err(HubError::Conflict(format!("world session {id} runs a stored task already"))),
        _ => return Err(HubError::BadRequest(format!("world session {id} runs a bundled task; only an inline task can be saved"))),
    }
    let mut create = Map::default();
    for key in ["name", "message"] {
        if let Some(value) = body.get(key) {
            create.insert(key.into(), value.clone());
        }
    }
    create.insert("world".into(), body.get("world").cloned().unwrap_or_else(|| session.get("slug").cloned().unwrap_or_default()));
    let spec = match &hub.worlds {
        Some(worlds) => session_spec(worlds, &session)?,
        None => stored_spec(&session)?,
    };
    let (_, summary) = super::tasks::create_task_from(hub, project, &create, &spec).await?;
    if let Value::Object(task) = &mut session.get("task").cloned().unwrap_or_default() {
        task.insert("source".into(), Value::str("stored"));
        task.insert("id".into(), summary.get("id").cloned().unwrap_or_default());
        task.insert("version".into(), Value::Int(1));
        task.insert("name".into(), summary.get("name").cloned().unwrap_or_default());
        session.insert("task".into(), Value::Object(task.clone()));
        session.insert("taskName".into(), summary.get("name").cloned().unwrap_or_default());
    }
    store_session(hub, project, &session).await?;
    ok(summary)
}

/// The host whose own credential (`gateway hub hosts add`) is the request's
/// `X-Host-Secret`; a revoked, unknown or shared secret is refused (401).
async fn registered_host(hub: &Hub, headers: &HeaderMap) -> Result<String, HubError> {
    worlds(hub)?;
    let presented = headers.get("x-host-secret").and_then(|v| v.to_str().ok()).unwrap_or_default();
    crate::host_credentials::verify(hub.meta.as_ref(), presented).await?.ok_or_else(|| {
        HubError::Unauthorized(
            "a World Host callback needs the host's own credential as X-Host-Secret (issued by `gateway hub hosts add NAME`); \
             this one is unknown or revoked"
                .into(),
        )
    })
}

/// `POST /api/public/world-hosts`: a host's heartbeat (its stats), recorded under the
/// name its credential was issued to (one registration per credential).
pub(super) async fn heartbeat(hub: &Hub, headers: &HeaderMap, body: &Map) -> Answer {
    let name = registered_host(hub, headers).await?;
    let url = opt_str(body, "hostUrl")?.filter(|u| u.starts_with("http://") || u.starts_with("https://"));
    if url.is_none() {
        return Err(HubError::BadRequest("a heartbeat names its 'hostUrl' (http[s]://…)".into()));
    }
    let mut stats = body.clone();
    stats.insert("_seenAt".into(), Value::Float(now_secs() as f64));
    stats.insert("_credential".into(), Value::str(&name));
    hub.meta.put_document(HOSTS_PROJECT, "host", &name, &document_text(&Value::Object(stats))).await?;
    ok(object([("ok", Value::Bool(true))]))
}

/// `GET /api/public/world-sessions/{sid}/host`: which host owns a session.
pub(super) async fn session_host(hub: &Hub, headers: &HeaderMap, id: &str) -> Answer {
    registered_host(hub, headers).await?;
    let text = hub.meta.document(HOSTS_PROJECT, "owner", id).await?.ok_or_else(|| HubError::NotFound(format!("no open session {id}")))?;
    let owner = json::parse_clean(&text).unwrap_or_default();
    ok(object([("hostUrl", owner.get("hostUrl").cloned().unwrap_or_default())]))
}

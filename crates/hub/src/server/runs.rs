//! Runs (spec §8 `run start|verify|list`, §11): the hub queues platform runs and verify
//! jobs; workers claim them and report through the run endpoints; an SDK process may
//! also open a run of its own (`POST /api/public/runs`) and report on it the same way.
//!
//! | route | who | what |
//! |---|---|---|
//! | `POST /runs/start` | CLI | queue a run: algorithm known, agent and dataset of this project, agent compatible (201 `{runId, runNumber, jobId, status}`) |
//! | `POST /runs/verify` | CLI | queue a verify job (202 `{jobId}`) |
//! | `GET /runs?limit=&source=` | CLI | runs, newest first |
//! | `POST /runs` | SDK | a run the caller drives itself (201 `{runId, runNumber}`) |
//! | `GET /runs/{id}` | anyone | one run (by run id or job id) |
//! | `POST /runs/claim` | worker | the oldest claimable run or job, leased to the worker (`{job: …}` or `{job: null}`) |
//! | `POST /runs/{id}/heartbeat` | worker, SDK | keep the lease; the answer's `state` says `cancelled` when a user cancelled |
//! | `POST\|PATCH /runs/{id}/state` | worker, SDK | `{state: "running"}` starts it; `{state: {…}}` stores the algorithm's state |
//! | `POST /runs/{id}/metrics` | worker, SDK | `{metrics: [{name, value, step?}]}` appended |
//! | `POST /runs/{id}/rollouts` | worker, SDK | `{name?, sessionId?}` recorded (answers the session id) |
//! | `POST /runs/{id}/finish` | worker, SDK | `{state}`: completed, failed, cancelled, crashed, error or timeout |
//! | `POST /runs/{id}/cancel` | CLI | stop it (the next heartbeat says so) |
//!
//! A claim hands the oldest `pending` run — or a `running` one whose lease lapsed (its
//! worker died) — to the caller for `leaseSeconds` (default 60); heartbeats extend the
//! lease; a run whose lease lapses [`crate::agents::MAX_ATTEMPTS`] times fails. A report naming
//! another `workerId` than the lease holder is refused (409), so a worker that lost
//! its lease cannot overwrite the run. The claim answers the run's job as the
//! original worker's payload has it (`algorithmName`, `config`, `agentImage`,
//! `agentManifest`, `agentResources`, `datasetId`, …); the project's secrets go into
//! it (`secrets` for the agent, `workerSecrets` for the worker) only when the request
//! carries `X-Worker-Secret` equal to the hub's control-plane secret (the one World
//! Hosts present as `X-Host-Secret`): a project key alone never reads a secret back.

use super::agents::{algorithm, find_agent, find_dataset, secret_aad};
use super::evaluations::Fields;
use super::request::{opt_value, str_or_null, JsonRequest};
use super::response::{ok, Answer};
use super::state::Hub;
use crate::agents::{is_terminal, Claim, Now, Run, RunChange, KIND_RUN, KIND_VERIFY, PENDING, RUNNING, SOURCE_PLATFORM, TERMINAL};
use crate::error::HubError;
use crate::util::{new_id, now_iso};
use axum::http::HeaderMap;
use gateway_common::url::unquote_plus;
use gateway_world::json::{self, object, Map, Value};
use std::collections::BTreeMap;
use subtle::ConstantTimeEq as _;

/// The default and the bounds of a lease, in seconds.
const DEFAULT_LEASE: i64 = 60;
const MIN_LEASE: i64 = 5;
const MAX_LEASE: i64 = 3600;
/// The most metric points one request may carry.
const MAX_POINTS: usize = 10_000;

/// The runs routes (`agents.rs` hands them here).
pub(super) async fn route(request: &JsonRequest<'_>, project: &str) -> Answer {
    let JsonRequest { hub, method, segments, query, headers, .. } = *request;
    let id = |raw: &str| unquote_plus(raw);
    match (method.as_str(), segments) {
        ("POST", ["runs", "start"]) => start(hub, project, &request.json()?).await,
        ("POST", ["runs", "verify"]) => verify(hub, project, &request.json()?).await,
        ("POST", ["runs", "claim"]) => claim(hub, project, headers, &request.json()?).await,
        ("GET", ["runs"]) => list(hub, project, query).await,
        ("POST", ["runs"]) => create_sdk_run(hub, project, &request.json()?).await,
        ("GET", ["runs", run]) => show(hub, project, &id(run)).await,
        ("POST", ["runs", run, "heartbeat"]) => heartbeat(hub, project, &id(run), &request.json()?).await,
        ("POST" | "PATCH", ["runs", run, "state"]) => state(hub, project, &id(run), &request.json()?).await,
        ("POST", ["runs", run, "metrics"]) => metrics(hub, project, &id(run), &request.json()?).await,
        ("POST", ["runs", run, "rollouts"]) => rollout(hub, project, &id(run), &request.json()?).await,
        ("POST", ["runs", run, "finish"]) => finish(hub, project, &id(run), &request.json()?).await,
        ("POST", ["runs", run, "cancel"]) => change(hub, project, &id(run), RunChange::Cancel).await.map(|r| (200, run_json(&r))),
        _ => Err(request.no_route()),
    }
}

/// A run as the API shows it.
pub(super) fn run_json(r: &Run) -> Value {
    let mut out = Map::default();
    out.insert("id".into(), Value::str(&r.id));
    out.insert("runId".into(), Value::str(&r.id));
    out.insert("runNumber".into(), r.run_number.map(Value::Int).unwrap_or(Value::Null));
    out.insert("jobId".into(), Value::str(&r.job_id));
    out.insert("kind".into(), Value::str(&r.kind));
    out.insert("name".into(), str_or_null(&r.name));
    out.insert("state".into(), Value::str(&r.state));
    out.insert("source".into(), Value::str(&r.source));
    out.insert("algorithmName".into(), str_or_null(&r.algorithm_name));
    out.insert("agentId".into(), str_or_null(&r.agent_id));
    out.insert("datasetId".into(), str_or_null(&r.dataset_id));
    out.insert("config".into(), opt_value(&r.config));
    out.insert("workerId".into(), str_or_null(&r.worker_id));
    out.insert("leaseExpiresAt".into(), r.lease_expires.map(|s| Value::str(crate::util::iso(s, 0))).unwrap_or(Value::Null));
    out.insert("attempts".into(), Value::Int(r.attempts));
    out.insert("metrics".into(), opt_value(&r.metrics));
    out.insert("metricPoints".into(), Value::Int(r.metric_points));
    out.insert("rollouts".into(), Value::Int(r.rollouts));
    out.insert("algorithmState".into(), r.algo_state.as_deref().map(opt_value).unwrap_or(Value::Null));
    out.insert("result".into(), r.result.as_deref().map(opt_value).unwrap_or(Value::Null));
    out.insert("createdAt".into(), Value::str(&r.created_at));
    out.insert("startedAt".into(), str_or_null(&r.started_at));
    out.insert("heartbeatAt".into(), str_or_null(&r.heartbeat_at));
    out.insert("finishedAt".into(), str_or_null(&r.finished_at));
    Value::Object(out)
}

/// A queued run or job, checked: `(algorithm, agent, dataset, config)`.
async fn queued(
    hub: &Hub,
    project: &str,
    fields: &Fields<'_>,
    dataset_required: bool,
) -> Result<(String, crate::agents::Agent, Option<crate::agents::Dataset>, Value), HubError> {
    let algorithm_name =
        fields.nonblank("algorithmName")?.ok_or_else(|| HubError::BadRequest("'algorithmName' is required (gepa, apo or evals)".into()))?;
    let known = algorithm(&algorithm_name)?;
    let agent_key =
        fields.nonblank("agentId")?.ok_or_else(|| HubError::BadRequest("'agentId' is required: a registered agent's id".into()))?;
    let dataset_key = fields.nonblank("datasetId")?;
    if dataset_required && dataset_key.is_none() {
        return Err(HubError::BadRequest("'datasetId' is required: a dataset's id (`gateway dataset upload` prints it)".into()));
    }
    let config = fields.object("config")?.unwrap_or_else(|| Value::Object(Map::default()));
    let agent = find_agent(hub, project, &agent_key).await?;
    let compatible = opt_value(&agent.body).get("compatibleAlgorithms").and_then(Value::as_array).cloned().unwrap_or_default();
    if !compatible.iter().any(|a| a.as_str() == Some(known.name)) {
        return Err(HubError::BadRequest(format!(
            "agent '{}' is not compatible with algorithm '{}': its capabilities do not meet the algorithm's requirements",
            agent.name, known.name
        )));
    }
    let dataset = match dataset_key {
        Some(key) => Some(find_dataset(hub, project, &key).await?),
        None => None,
    };
    Ok((known.name.to_string(), agent, dataset, config))
}

fn new_run(project: &str, kind: &str, source: &str, state: &str) -> Run {
    Run {
        id: new_id("run_"),
        project_id: project.to_string(),
        kind: kind.into(),
        source: source.into(),
        state: state.into(),
        config: "{}".into(),
        job_id: new_id("job_"),
        metrics: "{}".into(),
        details: "{}".into(),
        created_at: now_iso(),
        ..Run::default()
    }
}

/// `POST /api/public/runs/start`.
async fn start(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["algorithmName", "agentId", "datasetId", "name", "config"])?;
    let name = fields.string("name")?;
    let (algorithm_name, agent, dataset, config) = queued(hub, project, &fields, true).await?;
    let mut run = new_run(project, KIND_RUN, SOURCE_PLATFORM, PENDING);
    run.name = name.or_else(|| Some(format!("{algorithm_name} · {}", agent.name)));
    run.algorithm_name = Some(algorithm_name);
    run.agent_id = Some(agent.id);
    run.dataset_id = dataset.map(|d| d.id);
    run.config = json::canonical(&config);
    let run = hub.meta.create_run(run).await?;
    created(&run, [("jobId", Value::str(&run.job_id)), ("status", Value::str("queued")), ("state", Value::str(&run.state))])
}

/// `POST /api/public/runs/verify`.
async fn verify(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["algorithmName", "agentId", "datasetId", "config"])?;
    let (algorithm_name, agent, dataset, config) = queued(hub, project, &fields, false).await?;
    let mut run = new_run(project, KIND_VERIFY, SOURCE_PLATFORM, PENDING);
    run.name = Some(format!("verify {algorithm_name} · {}", agent.name));
    run.algorithm_name = Some(algorithm_name);
    run.agent_id = Some(agent.id);
    run.dataset_id = dataset.map(|d| d.id);
    run.config = json::canonical(&config);
    let run = hub.meta.create_run(run).await?;
    Ok((202, object([("jobId", Value::str(&run.job_id)), ("runId", Value::str(&run.id)), ("status", Value::str("queued"))])))
}

/// `POST /api/public/runs`: a run an SDK process drives itself (never claimed).
async fn create_sdk_run(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    let name = fields.string("name")?;
    let source = fields.nonblank("source")?.unwrap_or_else(|| "sdk".into());
    if source == SOURCE_PLATFORM {
        return Err(HubError::BadRequest(
            "'source' cannot be 'platform': platform runs are queued for workers with POST /api/public/runs/start".into(),
        ));
    }
    let config = fields.object("config")?.unwrap_or_else(|| Value::Object(Map::default()));
    let details: Map =
        body.iter().filter(|(k, _)| !["name", "source", "config"].contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut run = new_run(project, KIND_RUN, &source, RUNNING);
    run.name = name;
    run.config = json::canonical(&config);
    run.details = json::canonical(&Value::Object(details));
    run.started_at = Some(run.created_at.clone());
    let run = hub.meta.create_run(run).await?;
    created(&run, [("state", Value::str(&run.state))])
}

/// The 201 answering a run's creation: its id and number, then `more`.
fn created<const N: usize>(run: &Run, more: [(&str, Value); N]) -> Answer {
    let number = run.run_number.map(Value::Int).unwrap_or(Value::Null);
    Ok((201, object([("runId", Value::str(&run.id)), ("runNumber", number)].into_iter().chain(more))))
}

/// `GET /api/public/runs?limit=&source=`.
async fn list(hub: &Hub, project: &str, query: &BTreeMap<String, String>) -> Answer {
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => 20,
        Some(text) => match text.trim().parse::<i64>() {
            Ok(n) if n >= 1 => n.min(1000),
            _ => return Err(HubError::BadRequest(format!("'limit' must be a positive integer, not '{text}'"))),
        },
    };
    let source = query.get("source").filter(|s| !s.is_empty()).map(String::as_str);
    let runs = hub.meta.runs(project, source, limit).await?;
    ok(object([("runs", Value::Array(runs.iter().map(run_json).collect()))]))
}

async fn show(hub: &Hub, project: &str, id: &str) -> Answer {
    let run = hub.meta.run(project, id).await?.ok_or_else(|| HubError::missing("run", id))?;
    ok(run_json(&run))
}

async fn change(hub: &Hub, project: &str, id: &str, change: RunChange) -> Result<Run, HubError> {
    Ok(hub.meta.change_run(project, id, change, Now::current()).await?)
}

fn lease_seconds(fields: &Fields) -> Result<i64, HubError> {
    let lease = fields.int("leaseSeconds", MIN_LEASE)?.unwrap_or(DEFAULT_LEASE);
    if lease > MAX_LEASE {
        return Err(HubError::BadRequest(format!("'leaseSeconds' must be at most {MAX_LEASE}")));
    }
    Ok(lease)
}

/// Whether the request carries the hub's control-plane secret as `X-Worker-Secret`.
fn trusted_worker(hub: &Hub, headers: &HeaderMap) -> bool {
    let Some(secret) = hub.worlds.as_ref().map(|w| w.secret.as_bytes()) else { return false };
    match headers.get("x-worker-secret") {
        Some(presented) => bool::from(presented.as_bytes().ct_eq(secret)),
        None => false,
    }
}

/// `POST /api/public/runs/claim` `{workerId, kinds?, leaseSeconds?}`.
async fn claim(hub: &Hub, project: &str, headers: &HeaderMap, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["workerId", "kinds", "leaseSeconds"])?;
    let worker =
        fields.nonblank("workerId")?.ok_or_else(|| HubError::BadRequest("'workerId' is required: a name for this worker".into()))?;
    if worker.chars().count() > 200 {
        return Err(HubError::BadRequest("'workerId' is over 200 characters".into()));
    }
    let kinds = fields.strings("kinds")?.unwrap_or_else(|| vec![KIND_RUN.into(), KIND_VERIFY.into()]);
    if kinds.is_empty() || kinds.iter().any(|k| k != KIND_RUN && k != KIND_VERIFY) {
        return Err(HubError::BadRequest("'kinds' must list 'run' and/or 'verify'".into()));
    }
    let lease = lease_seconds(&fields)?;
    let with_secrets = trusted_worker(hub, headers);
    if headers.contains_key("x-worker-secret") && !with_secrets {
        return Err(HubError::Unauthorized("forbidden: X-Worker-Secret is not this hub's control-plane secret".into()));
    }
    let claim = Claim { worker_id: worker, kinds, lease_secs: lease, now: Now::current() };
    let Some(run) = hub.meta.claim_run(project, claim).await? else {
        return ok(object([("job", Value::Null)]));
    };
    ok(object([("job", job_json(hub, project, &run, lease, with_secrets).await?)]))
}

/// The job a claim hands out: the original worker's payload, plus the lease.
async fn job_json(hub: &Hub, project: &str, run: &Run, lease: i64, with_secrets: bool) -> Result<Value, HubError> {
    let mut job = Map::default();
    job.insert("jobId".into(), Value::str(&run.job_id));
    job.insert("kind".into(), Value::str(&run.kind));
    job.insert("runId".into(), Value::str(&run.id));
    job.insert("runNumber".into(), run.run_number.map(Value::Int).unwrap_or(Value::Null));
    job.insert("projectId".into(), Value::str(project));
    job.insert("algorithmName".into(), str_or_null(&run.algorithm_name));
    job.insert("config".into(), opt_value(&run.config));
    job.insert("attempt".into(), Value::Int(run.attempts));
    job.insert("workerId".into(), str_or_null(&run.worker_id));
    job.insert("leaseSeconds".into(), Value::Int(lease));
    job.insert("leaseExpiresAt".into(), run.lease_expires.map(|s| Value::str(crate::util::iso(s, 0))).unwrap_or(Value::Null));
    if let Some(agent) = match &run.agent_id {
        Some(id) => hub.meta.agent(project, id).await?,
        None => None,
    } {
        let rest = opt_value(&agent.body);
        job.insert("agentId".into(), Value::str(&agent.id));
        job.insert("agentName".into(), Value::str(&agent.name));
        job.insert("agentImage".into(), Value::str(&agent.image));
        job.insert("agentManifest".into(), rest.get("manifest").cloned().unwrap_or(Value::Null));
        job.insert("agentResources".into(), rest.get("resources").cloned().unwrap_or(Value::Null));
        job.insert("taskInputSchema".into(), rest.get("taskInputSchema").cloned().unwrap_or(Value::Null));
    }
    if let Some(dataset) = match &run.dataset_id {
        Some(id) => hub.meta.dataset(project, id).await?,
        None => None,
    } {
        job.insert("datasetId".into(), Value::str(&dataset.id));
        job.insert("datasetName".into(), Value::str(&dataset.name));
    }
    let secrets = hub.meta.project_secret_values(project).await?;
    job.insert("secretNames".into(), Value::Array(secrets.iter().map(|(s, _)| Value::str(&s.name)).collect()));
    if with_secrets {
        let (mut agent_env, mut worker_env) = (Map::default(), Map::default());
        for (secret, sealed) in &secrets {
            let value = hub.keys.open(&secret_aad(project, &secret.name), sealed)?;
            let value = Value::Str(String::from_utf8_lossy(&value).into_owned());
            if secret.scope == "agent" || secret.scope == "both" {
                agent_env.insert(secret.name.clone(), value.clone());
            }
            if secret.scope == "worker" || secret.scope == "both" {
                worker_env.insert(secret.name.clone(), value);
            }
        }
        job.insert("secrets".into(), Value::Object(agent_env));
        job.insert("workerSecrets".into(), Value::Object(worker_env));
    }
    Ok(Value::Object(job))
}

/// The summary the reporting endpoints answer.
fn report(run: &Run) -> Value {
    object([
        ("runId", Value::str(&run.id)),
        ("state", Value::str(&run.state)),
        ("leaseExpiresAt", run.lease_expires.map(|s| Value::str(crate::util::iso(s, 0))).unwrap_or(Value::Null)),
    ])
}

/// `POST /api/public/runs/{id}/heartbeat` `{workerId?, leaseSeconds?}` (the SDK sends no body).
async fn heartbeat(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["workerId", "leaseSeconds"])?;
    let worker_id = fields.nonblank("workerId")?;
    let lease_secs = lease_seconds(&fields)?;
    let run = change(hub, project, id, RunChange::Heartbeat { worker_id, lease_secs }).await?;
    ok(report(&run))
}

/// `POST|PATCH /api/public/runs/{id}/state`: `{state: "running"}` or `{state: {…}}`.
async fn state(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["state", "workerId"])?;
    let worker_id = fields.nonblank("workerId")?;
    let run = match body.get("state") {
        Some(Value::Str(word)) if word.eq_ignore_ascii_case(RUNNING) => change(hub, project, id, RunChange::Start { worker_id }).await?,
        Some(Value::Str(word)) => {
            return Err(HubError::BadRequest(format!(
                "'state' '{word}' is not a step this route takes: send \"running\" here, end a run with POST …/finish"
            )))
        }
        Some(value @ Value::Object(_)) => change(hub, project, id, RunChange::AlgoState { state: json::canonical(value) }).await?,
        _ => return Err(HubError::BadRequest("'state' is required: \"running\", or the algorithm's state as an object".into())),
    };
    ok(report(&run))
}

/// `POST /api/public/runs/{id}/metrics` `{metrics: [{name, value, step?, …}]}`.
async fn metrics(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["metrics", "workerId"])?;
    let points = match body.get("metrics") {
        Some(Value::Array(points)) => points.clone(),
        _ => return Err(HubError::BadRequest("'metrics' is required: a list of {name, value, step?} points".into())),
    };
    if points.len() > MAX_POINTS {
        return Err(HubError::TooLarge(format!("{} metric points: one request carries at most {MAX_POINTS}", points.len())));
    }
    for (i, point) in points.iter().enumerate() {
        let Value::Object(map) = point else {
            return Err(HubError::BadRequest(format!("'metrics[{i}]' must be an object {{name, value, step?}}")));
        };
        let point = Fields::new(map, format!("metrics[{i}]."));
        if point.nonblank("name")?.is_none() {
            return Err(HubError::BadRequest(format!("'metrics[{i}].name' is required")));
        }
        if point.number("value")?.is_none() {
            return Err(HubError::BadRequest(format!("'metrics[{i}].value' is required: a finite number")));
        }
        point.int("step", 0)?;
    }
    let count = points.len() as i64;
    let run = change(hub, project, id, RunChange::Metrics { points }).await?;
    let mut answer = report(&run);
    if let Value::Object(map) = &mut answer {
        map.insert("accepted".into(), Value::Int(count));
        map.insert("metricPoints".into(), Value::Int(run.metric_points));
    }
    ok(answer)
}

/// `POST /api/public/runs/{id}/rollouts` `{name?, sessionId?}`: answers `{sessionId}`.
async fn rollout(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["name", "sessionId", "workerId"])?;
    let name = fields.string("name")?;
    let session_id = fields.nonblank("sessionId")?.unwrap_or_else(|| new_id("ses_"));
    let run = change(hub, project, id, RunChange::Rollout { name, session_id: session_id.clone() }).await?;
    Ok((201, object([("runId", Value::str(&run.id)), ("sessionId", Value::str(session_id)), ("rollouts", Value::Int(run.rollouts))])))
}

/// `POST /api/public/runs/{id}/finish` `{state, projectId?, workerId?, result?, error?}`.
async fn finish(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["state", "projectId", "workerId", "result", "error"])?;
    let word =
        fields.nonblank("state")?.ok_or_else(|| HubError::BadRequest(format!("'state' is required: one of {}", TERMINAL.join(", "))))?;
    let state = word.to_ascii_lowercase();
    if !is_terminal(&state) {
        return Err(HubError::BadRequest(format!("'state' must be one of {}, not '{word}'", TERMINAL.join(", "))));
    }
    if let Some(other) = fields.string("projectId")?.filter(|p| p != project) {
        return Err(HubError::BadRequest(format!("'projectId' is '{other}', not the project of this key")));
    }
    let worker_id = fields.nonblank("workerId")?;
    let error = fields.string("error")?;
    let mut result = Map::default();
    if let Some(value) = body.get("result").filter(|v| !matches!(v, Value::Null)) {
        result.insert("result".into(), value.clone());
    }
    if let Some(error) = error {
        result.insert("error".into(), Value::Str(error));
    }
    let result = (!result.is_empty()).then(|| json::canonical(&Value::Object(result)));
    let run = change(hub, project, id, RunChange::Finish { worker_id, state, result }).await?;
    ok(run_json(&run))
}

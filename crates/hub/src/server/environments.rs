//! The environment views (spec §7) and the routes outside `benchmark-containers` that
//! evaluations feed: `/api/public/environments/*` (list, one environment, task set,
//! performance, rollouts, a rollout's samples, run, run status), `/api/public/task-sets/*`
//! (in `task_sets.rs`), `/api/public/environment-agent/*` and `/api/public/ingestion`;
//! remote connector captures and the drive download route to `captures.rs`.
//!
//! An environment is a container of the caller's project, named by its id (or, beyond
//! the original, its slug). Every number here is computed from the evaluation tables
//! (`EvaluationStore`), never from stored aggregates:
//! - `sampleCount` counts samples; `nullScoreCount` those whose reward is null (a null
//!   stays its own category, never a 0);
//! - `avgReward` / `avgScore` are means over the non-null rewards / scores;
//! - `passRate` is the share of passed samples among those whose outcome is known: a
//!   sample passed when `correct` is true, or — when it sent no `correct` — when its
//!   reward is at least 1.0 (the SDK's own rule for `correct`); null when none is known;
//! - `rewardStddev` is the sample standard deviation (n − 1, SQL's `STDDEV`) of the
//!   non-null rewards, null below two;
//! - every evaluation's samples count, whatever its status.
//!
//! This hub has no hosted runner and no Environment Agent: `run` answers the dispatch
//! shape with every model `ok: false` and the reason, run status is a 404, the agent has
//! no config and no runs, and a trigger is refused.

use super::access::{check_slug, own_version};
use super::evaluations::{ingestion, own_evaluation, Fields};
use super::request::{opt_value, str_or_null, JsonRequest, PageSize};
use super::response::{ok, Answer};
use super::state::Hub;
use super::task_sets;
use super::versions::{manifest_map, version_facts};
use crate::error::HubError;
use crate::evaluations::{Evaluation, SampleSums};
use crate::store::{Container, Version, VersionFilter};
use crate::util::strings;
use gateway_common::url::unquote_plus;
use gateway_world::json::{object, Map, Value};
use std::collections::BTreeMap;

/// Default and largest page sizes.
const ENVIRONMENTS: PageSize = PageSize { default: 50, max: 500 };
const ROLLOUTS: PageSize = PageSize { default: 100, max: 1000 };
const SAMPLES: PageSize = PageSize { default: 200, max: 1000 };
/// Versions read for an environment's performance and rollouts.
const MAX_VERSIONS: i64 = 1000;

/// Why `run` dispatches nothing here.
const NO_RUNNER: &str = "this self-hosted hub has no hosted runner: run the world yourself \
     (`gateway worlds run <slug> --agent agent.py -m <model>` files its result here as an evaluation)";

/// The routes of this module and `task_sets.rs` (`routes::Family::Environments`).
pub(super) async fn route(request: &JsonRequest<'_>, p: &str) -> Answer {
    let JsonRequest { hub, method, segments, query, .. } = *request;
    let id = |raw: &str| unquote_plus(raw);
    match (method.as_str(), segments) {
        ("POST", ["ingestion"]) => ingestion(hub, p, &request.json()?).await,
        ("GET", ["environments"]) => list(hub, p, query).await,
        ("GET", ["environments", "runs", run]) => Err(HubError::NotFound(format!(
            "no run '{}': this self-hosted hub dispatches no hosted runs (`environment run` answers ok: false), so it has none to report",
            id(run)
        ))),
        ("GET", ["environments", cid]) => get(hub, p, &id(cid)).await,
        ("GET", ["environments", cid, "task-set"]) => task_sets::get_linked(hub, p, &find(hub, p, &id(cid)).await?).await,
        ("POST", ["environments", cid, "task-set"]) => {
            let body = request.json()?;
            task_sets::link(hub, p, &find(hub, p, &id(cid)).await?, &body).await
        }
        ("GET", ["environments", cid, "performance"]) => performance(hub, &find(hub, p, &id(cid)).await?).await,
        ("GET", ["environments", cid, "rollouts"]) => rollouts(hub, &find(hub, p, &id(cid)).await?, query).await,
        ("GET", ["environments", cid, "rollouts", eid, "samples"]) => {
            rollout_samples(hub, p, &find(hub, p, &id(cid)).await?, &id(eid), query).await
        }
        ("POST", ["environments", cid, "run"]) => {
            let body = request.json()?;
            run(hub, p, &find(hub, p, &id(cid)).await?, &body).await
        }
        ("POST", ["environments", cid, "connector-captures"]) => {
            let body = request.json()?;
            super::captures::start(hub, p, &find(hub, p, &id(cid)).await?, &body).await
        }
        ("GET", ["environments", cid, "connector-captures", rid]) => {
            super::captures::status(hub, p, &find(hub, p, &id(cid)).await?, &id(rid)).await
        }
        ("GET", ["environments", cid, "files", "download"]) => {
            super::captures::download(hub, &find(hub, p, &id(cid)).await?, query.get("path"), request.base_url).await
        }
        ("POST", ["task-sets"]) => task_sets::create_set(hub, p, &request.json()?).await,
        ("POST", ["task-sets", did, "tasks"]) => task_sets::create_task(hub, p, &id(did), &request.json()?).await,
        ("POST", ["task-sets", did, "tasks", tid]) => task_sets::update_task(hub, p, &id(did), &id(tid), &request.json()?).await,
        ("GET", ["environment-agent"]) => ok(object([("config", Value::Null), ("runs", Value::Array(Vec::new()))])),
        ("POST", ["environment-agent", "trigger"]) => Err(HubError::BadRequest(
            "no Environment Agent is configured for this project: this self-hosted hub runs no Environment Agent".into(),
        )),
        _ => Err(request.no_route()),
    }
}

/// The environment `reference` names: a container id of this project, else its slug.
pub(super) async fn find(hub: &Hub, project: &str, reference: &str) -> Result<Container, HubError> {
    if let Some(found) = hub.meta.container_by_id(reference).await?.filter(|c| c.project_id == project) {
        return Ok(found);
    }
    if check_slug(reference).is_ok() {
        if let Some(found) = hub.meta.container(project, reference).await? {
            return Ok(found);
        }
    }
    Err(HubError::NotFound(format!("no environment '{reference}' in this project (give its container id or slug)")))
}

/// A version's short label: its semantic version, else the first 12 hex of its content hash.
fn version_label(version: &Version) -> String {
    version.semantic_version.clone().unwrap_or_else(|| version.content_hash.chars().take(12).collect())
}

/// The kind of world a version holds, from its file manifest (the SDK's `detect_env_kind`
/// as far as a manifest tells): `api`, `mock-tools`, `harbor`, else unknown.
fn env_kind(version: &Version) -> Value {
    let files = manifest_map(version);
    let harbor = files.keys().any(|path| {
        let parts: Vec<&str> = path.split('/').collect();
        matches!(parts.as_slice(), [_, "task.toml"] | ["tasks", _, "task.toml"])
    });
    if files.contains_key("gateway-api-world.toml") {
        Value::str("api")
    } else if files.contains_key("gateway-env.toml") {
        Value::str("mock-tools")
    } else if harbor {
        Value::str("harbor")
    } else {
        Value::Null
    }
}

/// `GET /environments?limit=&slug=`.
async fn list(hub: &Hub, project: &str, query: &BTreeMap<String, String>) -> Answer {
    let limit = ENVIRONMENTS.asked(query)?;
    let slug = query.get("slug").filter(|s| !s.is_empty());
    let mut out = Vec::new();
    for container in hub.meta.project_containers(project, slug.map(String::as_str), limit).await? {
        let latest = hub.meta.find_versions(&container.id, VersionFilter::Ready, 1).await?;
        out.push(object([
            ("id", Value::str(container.id.clone())),
            ("slug", Value::str(container.slug.clone())),
            ("name", Value::str(container.name.clone())),
            ("description", str_or_null(&container.description)),
            ("taskSetDatasetId", str_or_null(&task_sets::linked(hub, project, &container.id).await?)),
            ("versionCount", Value::Int(hub.meta.ready_version_count(&container.id).await?)),
            ("latestVersion", latest.first().map(|v| Value::str(version_label(v))).unwrap_or_default()),
        ]));
    }
    ok(object([("environments", Value::Array(out))]))
}

/// `GET /environments/{cid}`: the environment with its versions (newest first, every state).
async fn get(hub: &Hub, project: &str, reference: &str) -> Answer {
    let container = find(hub, project, reference).await?;
    let versions = hub.meta.container_versions(&container.id, MAX_VERSIONS).await?;
    let versions = versions
        .iter()
        .map(|v| {
            object([
                ("versionId", Value::str(v.id.clone())),
                ("contentHash", Value::str(v.content_hash.clone())),
                ("semanticVersion", str_or_null(&v.semantic_version)),
                ("state", Value::str(v.state.clone())),
                ("author", str_or_null(&v.author)),
                ("changeReason", str_or_null(&v.change_reason)),
                ("envKind", env_kind(v)),
                ("imageRef", str_or_null(&v.image_ref)),
                ("createdAt", Value::str(v.created_at.clone())),
            ])
        })
        .collect();
    ok(object([
        ("id", Value::str(container.id.clone())),
        ("slug", Value::str(container.slug.clone())),
        ("name", Value::str(container.name.clone())),
        ("description", str_or_null(&container.description)),
        ("tags", opt_value(&container.tags)),
        ("visibility", Value::str(container.visibility.clone())),
        ("taskSetDatasetId", str_or_null(&task_sets::linked(hub, project, &container.id).await?)),
        ("evaluationCount", Value::Int(hub.meta.evaluation_count(&container.id).await?)),
        ("versions", Value::Array(versions)),
    ]))
}

fn mean(sum: f64, n: i64) -> Value {
    if n == 0 {
        Value::Null
    } else {
        Value::Float(sum / n as f64)
    }
}

/// The sample standard deviation of the rewards summed in `sums` (null below two). A
/// variance within rounding of zero is zero: the sums cannot tell it apart.
fn reward_stddev(sums: &SampleSums) -> Value {
    let n = sums.rewards();
    if n < 2 {
        return Value::Null;
    }
    let count = n as f64;
    let spread = sums.reward_squares - sums.reward_sum * sums.reward_sum / count;
    let variance = if spread <= 1e-12 * sums.reward_squares.abs() { 0.0 } else { spread / (count - 1.0) };
    Value::Float(variance.sqrt())
}

fn pass_rate(sums: &SampleSums) -> Value {
    if sums.judged == 0 {
        Value::Null
    } else {
        Value::Float(sums.passed as f64 / sums.judged as f64)
    }
}

/// `GET /environments/{cid}/performance`: per task (by name), the figures of the module
/// doc, and per version (newest first) the mean reward and counts.
async fn performance(hub: &Hub, container: &Container) -> Answer {
    let versions = hub.meta.container_versions(&container.id, MAX_VERSIONS).await?;
    let mut by_task: BTreeMap<String, Vec<(String, SampleSums)>> = BTreeMap::new();
    for row in hub.meta.task_sums(&container.id).await? {
        by_task.entry(row.task).or_default().push((row.version_id, row.sums));
    }
    let mut total = SampleSums::default();
    let mut tasks = Vec::new();
    for (task, rows) in by_task {
        let mut sums = SampleSums::default();
        for (_, part) in &rows {
            sums.add(part);
        }
        total.add(&sums);
        // Newest version first: the order of `versions`.
        let per_version = versions
            .iter()
            .filter_map(|v| rows.iter().find(|(id, _)| *id == v.id).map(|(_, part)| (v, part)))
            .map(|(v, part)| {
                let mut row = version_facts(v, "containerVersionId");
                row.extend([
                    ("avgReward", mean(part.reward_sum, part.rewards())),
                    ("sampleCount", Value::Int(part.samples)),
                    ("nullScoreCount", Value::Int(part.null_rewards)),
                ]);
                object(row)
            })
            .collect();
        tasks.push(object([
            ("task", Value::str(task)),
            ("sampleCount", Value::Int(sums.samples)),
            ("nullScoreCount", Value::Int(sums.null_rewards)),
            ("avgReward", mean(sums.reward_sum, sums.rewards())),
            ("avgScore", mean(sums.score_sum, sums.scores)),
            ("passRate", pass_rate(&sums)),
            ("rewardStddev", reward_stddev(&sums)),
            ("perVersion", Value::Array(per_version)),
        ]));
    }
    ok(object([
        ("tasks", Value::Array(tasks)),
        ("totalSamples", Value::Int(total.samples)),
        ("totalNullScoreSamples", Value::Int(total.null_rewards)),
    ]))
}

fn json_or_null(text: &Option<String>) -> Value {
    text.as_deref().map(opt_value).unwrap_or_default()
}

fn int_or_null(n: Option<i64>) -> Value {
    n.map(Value::Int).unwrap_or_default()
}

fn rollout(evaluation: &Evaluation, version: Option<&Version>) -> Value {
    let mut out = object([
        ("id", Value::str(evaluation.id.clone())),
        ("model", str_or_null(&evaluation.model)),
        ("status", Value::str(evaluation.status.clone())),
        ("createdAt", Value::str(evaluation.created_at.clone())),
        ("startedAt", Value::str(evaluation.created_at.clone())),
        ("completedAt", str_or_null(&evaluation.completed_at)),
        ("numExamples", int_or_null(evaluation.num_examples)),
        ("rolloutsPerExample", int_or_null(evaluation.rollouts_per_example)),
        ("containerVersionId", Value::str(evaluation.version_id.clone())),
        ("versionHash", version.map(|v| Value::str(v.content_hash.clone())).unwrap_or_default()),
        ("semanticVersion", version.and_then(|v| v.semantic_version.clone()).map(Value::Str).unwrap_or_default()),
        ("metrics", json_or_null(&evaluation.metrics)),
        ("cost", json_or_null(&evaluation.cost)),
        ("sampleCount", Value::Int(evaluation.sample_count)),
        ("runId", str_or_null(&evaluation.run_id)),
    ]);
    // Beyond the original, and only on a regrade's evaluation: the one it re-scored.
    if let (Value::Object(fields), Some(from)) = (&mut out, opt_value(&evaluation.details).get("regradedFrom")) {
        fields.insert("regradedFrom".into(), from.clone());
    }
    out
}

/// `GET /environments/{cid}/rollouts[?limit=]`: the evaluations, newest first.
async fn rollouts(hub: &Hub, container: &Container, query: &BTreeMap<String, String>) -> Answer {
    let limit = ROLLOUTS.asked(query)?;
    let versions = hub.meta.container_versions(&container.id, MAX_VERSIONS).await?;
    let mut out = Vec::new();
    for evaluation in hub.meta.evaluations(&container.id, limit).await? {
        let version = match versions.iter().find(|v| v.id == evaluation.version_id) {
            Some(v) => Some(v.clone()),
            None => hub.meta.version(&evaluation.version_id).await?,
        };
        out.push(rollout(&evaluation, version.as_ref()));
    }
    ok(object([("rollouts", Value::Array(out))]))
}

/// `GET /environments/{cid}/rollouts/{evaluationId}/samples[?limit=]`, in the order stored.
async fn rollout_samples(hub: &Hub, project: &str, container: &Container, evaluation_id: &str, query: &BTreeMap<String, String>) -> Answer {
    let limit = SAMPLES.asked(query)?;
    let missing = || HubError::NotFound(format!("no rollout '{evaluation_id}' of environment '{}'", container.slug));
    let evaluation = match own_evaluation(hub, project, evaluation_id).await {
        Ok(evaluation) if evaluation.container_id == container.id => evaluation,
        Err(other) if !other.is_not_found() => return Err(other),
        _ => return Err(missing()),
    };
    let samples = hub
        .meta
        .samples(&evaluation.id, limit)
        .await?
        .into_iter()
        .map(|sample| {
            let body = opt_value(&sample.body);
            let member = |key: &str| body.get(key).cloned().unwrap_or_default();
            object([
                ("id", Value::str(sample.id)),
                ("exampleId", member("exampleId")),
                ("task", member("task")),
                ("rolloutIndex", Value::Int(sample.rollout_index)),
                ("reward", sample.reward.map(Value::Float).unwrap_or_default()),
                ("score", sample.score.map(Value::Float).unwrap_or_default()),
                ("correct", sample.correct.map(Value::Bool).unwrap_or_default()),
                ("rewards", member("rewards")),
                ("info", member("info")),
            ])
        })
        .collect();
    ok(object([("evaluationId", Value::str(evaluation.id)), ("samples", Value::Array(samples))]))
}

/// `POST /environments/{cid}/run`: the request is checked as a dispatch would check it
/// (models or a run config of this project, a READY version of this environment), then
/// answered with every model `ok: false`: there is no runner to dispatch to.
async fn run(hub: &Hub, project: &str, container: &Container, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["runConfigId", "models", "versionId", "numExamples", "rolloutsPerExample"])?;
    let run_config_id = fields.nonblank("runConfigId")?;
    let mut models = fields.strings("models")?.unwrap_or_default();
    fields.int("numExamples", 1)?;
    fields.int("rolloutsPerExample", 1)?;
    if let Some(id) = &run_config_id {
        let config = hub.meta.run_config(project, id).await?.ok_or_else(|| HubError::NotFound(format!("no run config '{id}'")))?;
        if models.is_empty() {
            models = strings(opt_value(&config).get("models"));
        }
    }
    if models.is_empty() || models.iter().any(|m| m.trim().is_empty()) {
        return Err(HubError::BadRequest("'models' (a non-empty list of model names) or 'runConfigId' is required".into()));
    }
    pinned(hub, project, container, run_config_id, models, fields.nonblank("versionId")?).await
}

/// A dispatch answered without a runner: the version pinned (given, else the newest
/// READY one of `container`) and every model `ok: false` with the reason.
async fn pinned(
    hub: &Hub,
    project: &str,
    container: &Container,
    run_config_id: Option<String>,
    models: Vec<String>,
    version_id: Option<String>,
) -> Answer {
    let version = match version_id {
        Some(id) => {
            let (owner, version) = own_version(hub, project, &id).await?;
            if owner.id != container.id {
                return Err(HubError::NotFound(format!("no version '{id}' in environment '{}'", container.slug)));
            }
            if version.state != "READY" {
                return Err(HubError::BadRequest(format!("version {id} is {}: a run pins a READY version", version.state)));
            }
            version
        }
        None => hub
            .meta
            .find_versions(&container.id, VersionFilter::Ready, 1)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| HubError::BadRequest(format!("'{}' has no READY version to run: push one first", container.slug)))?,
    };
    let runs = models
        .into_iter()
        .map(|model| {
            object([("model", Value::str(model)), ("runId", Value::str("")), ("ok", Value::Bool(false)), ("error", Value::str(NO_RUNNER))])
        })
        .collect();
    ok(object([
        ("runConfigId", Value::str(run_config_id.unwrap_or_default())),
        ("versionLabel", Value::str(version_label(&version))),
        ("versionId", Value::str(version.id.clone())),
        ("runs", Value::Array(runs)),
    ]))
}

/// `POST /benchmark-containers/run-configs/dispatch` (§1.17): `{runConfigId,
/// containerId?, versionId?}` checked as a hosted dispatch would check it — the run
/// config of this project, the environment (given, else the project's only one), a
/// READY version (given, else the newest) — then answered like `run`: the config's
/// every model `ok: false`, with the reason.
pub(super) async fn dispatch_run_config(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["runConfigId", "containerId", "versionId"])?;
    let id = fields.nonblank("runConfigId")?.ok_or_else(|| HubError::BadRequest("'runConfigId' is required".into()))?;
    let config = hub.meta.run_config(project, &id).await?.ok_or_else(|| HubError::NotFound(format!("no run config '{id}'")))?;
    let models = strings(opt_value(&config).get("models"));
    let container = match fields.nonblank("containerId")? {
        Some(cid) => hub
            .meta
            .container_by_id(&cid)
            .await?
            .filter(|c| c.project_id == project)
            .ok_or_else(|| HubError::missing("environment", cid))?,
        None => {
            let mut all = hub.meta.project_containers(project, None, 2).await?;
            match all.len() {
                1 => all.remove(0),
                0 => return Err(HubError::BadRequest("this project has no environment to run: push one first".into())),
                _ => {
                    return Err(HubError::BadRequest(
                        "this project hosts several environments: name one with 'containerId' (`--container-id`)".into(),
                    ))
                }
            }
        }
    };
    pinned(hub, project, &container, Some(id), models, fields.nonblank("versionId")?).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json;

    fn sums(rewards: &[f64]) -> SampleSums {
        SampleSums {
            samples: rewards.len() as i64,
            reward_sum: rewards.iter().sum(),
            reward_squares: rewards.iter().map(|r| r * r).sum(),
            ..Default::default()
        }
    }

    #[test]
    fn deviation() {
        assert!(matches!(reward_stddev(&sums(&[1.0])), Value::Null));
        assert!(matches!(reward_stddev(&sums(&[1.0, 0.0, 0.5])), Value::Float(sd) if sd == 0.5));
        assert!(matches!(reward_stddev(&sums(&[0.7, 0.7, 0.7])), Value::Float(sd) if sd == 0.0));
    }

    #[test]
    fn labels_and_kinds() {
        let mut version = Version { content_hash: "ab".repeat(32), ..Default::default() };
        assert_eq!(version_label(&version), "abababababab");
        version.semantic_version = Some("0.1.0".into());
        assert_eq!(version_label(&version), "0.1.0");
        version.file_manifest = r#"[{"path":"tasks/a/task.toml"}]"#.into();
        assert_eq!(json::canonical(&env_kind(&version)), "\"harbor\"");
        version.file_manifest = r#"[{"path":"gateway-env.toml"},{"path":"a/task.toml"}]"#.into();
        assert_eq!(json::canonical(&env_kind(&version)), "\"mock-tools\"");
    }
}

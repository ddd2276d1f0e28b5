//! `POST …/evaluations/{id}/regrade` (beyond the original): re-score an evaluation's
//! samples from their stored final states (`eval_states.rs`) under a stored task's
//! version — a grader fixed or tightened after the run — and file the result as a new
//! evaluation linked to the old (`regradedFrom`), with the same samples (task,
//! example, rollout) and their new rewards, never re-running an agent.
//!
//! Which grader scores a sample: with `task_id`, that task's version for the samples
//! of that task (by name, or `info.taskId`), the others carried over as they were;
//! without, the project's stored task named as each sample's task (one pinned to the
//! evaluation's world first). A sample that cannot be re-scored — no stored state, no
//! such task or version, a rubric, a grader that failed, a rollout that errored in
//! the first place — is filed `errored` with the reason (reward null, never a 0).
//!
//! States are read in place when the object store is on this machine, else fetched to
//! a scratch directory a thousand at a time; the scoring itself is `crate::regrade`.

use super::documents::document_text;
use super::eval_states::{state_key, state_links};
use super::evaluations::{own_evaluation, Fields, MAX_SAMPLES_PER_BATCH};
use super::request::opt_value;
use super::response::{ok, Answer};
use super::state::Hub;
use super::tasks::{all_tasks, load_task, task_version};
use crate::error::HubError;
use crate::evaluations::{Evaluation, Outcome, Sample, RUNNING};
use crate::regrade::{grade_states, Job, Unscored};
use crate::util::{new_id, now_iso};
use gateway_world::json::{object, Map, Value};
use gateway_world::task::{GraderOptions, TaskSpec};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Distinct states fetched and scored per round (bounds the scratch disk).
const STATES_PER_ROUND: usize = 1000;
/// Most per-sample errors an answer lists (the samples carry them all).
const ERRORS_LISTED: usize = 50;

/// What becomes of one sample.
enum Plan {
    /// Scored by this spec (an index into the resolved specs).
    Grade(usize),
    /// Filed as it was (another task than the one regraded).
    Carry,
    /// Filed errored, with the reason.
    Errored(Unscored),
}

/// The specs the request names and each sample's plan.
struct Resolved {
    specs: Vec<TaskSpec>,
    /// Per spec: `(task id, task name)`.
    tasks: Vec<(String, String)>,
    plans: Vec<Plan>,
}

fn info_of(body: &Map) -> Map {
    body.get("info").and_then(Value::as_object).cloned().unwrap_or_default()
}

fn text(map: &Map, key: &str) -> String {
    map.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// A stored task's version `version` as a spec, or why not.
fn spec_at(task: &Map, version: i64) -> Result<TaskSpec, Unscored> {
    let (_, _, spec) = task_version(task, Some(version)).map_err(|e| Unscored::NoTaskVersion(e.to_string()))?;
    TaskSpec::parse(&spec).map_err(|e| Unscored::SpecInvalid { task: text(task, "id"), version, message: e.message })
}

/// The plan of every sample (`bodies` are the samples' bodies, in order).
async fn resolve(
    hub: &Hub,
    project: &str,
    slug: &str,
    bodies: &[Map],
    samples: &[Sample],
    task_id: Option<&str>,
    version: i64,
) -> Result<Resolved, HubError> {
    let mut resolved = Resolved { specs: Vec::new(), tasks: Vec::new(), plans: Vec::new() };
    if let Some(task_id) = task_id {
        let task = load_task(hub, project, task_id).await?;
        let spec = spec_at(&task, version)?;
        let name = text(&task, "name");
        resolved.specs.push(spec);
        resolved.tasks.push((task_id.to_string(), name.clone()));
        for (sample, body) in samples.iter().zip(bodies) {
            let ours = sample.task == name || text(&info_of(body), "taskId") == task_id;
            resolved.plans.push(if ours { Plan::Grade(0) } else { Plan::Carry });
        }
        if !resolved.plans.iter().any(|p| matches!(p, Plan::Grade(_))) {
            let mut names: Vec<&str> = samples.iter().map(|s| s.task.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            return Err(HubError::BadRequest(format!(
                "no sample is of task '{name}' ({task_id}); the evaluation's tasks are {}",
                names.join(", ")
            )));
        }
        return Ok(resolved);
    }
    let tasks = all_tasks(hub, project).await?;
    let mut by_name: HashMap<String, Result<usize, Unscored>> = HashMap::new();
    for sample in samples {
        if by_name.contains_key(&sample.task) {
            continue;
        }
        let named: Vec<&Map> = tasks.iter().filter(|t| text(t, "name") == sample.task).collect();
        let pinned: Vec<&Map> = named.iter().copied().filter(|t| text(t, "world") == slug).collect();
        let candidates = if pinned.is_empty() { named } else { pinned };
        let found = match candidates.as_slice() {
            [] => Err(Unscored::NoTaskNamed(sample.task.clone())),
            [task] => spec_at(task, version).map(|spec| {
                resolved.specs.push(spec);
                resolved.tasks.push((text(task, "id"), sample.task.clone()));
                resolved.specs.len() - 1
            }),
            many => Err(Unscored::TasksNamed { count: many.len(), name: sample.task.clone() }),
        };
        by_name.insert(sample.task.clone(), found);
    }
    for sample in samples {
        resolved.plans.push(match &by_name[&sample.task] {
            Ok(spec) => Plan::Grade(*spec),
            Err(reason) => Plan::Errored(reason.clone()),
        });
    }
    Ok(resolved)
}

/// An object's bytes streamed into `path`; false when there is no such object.
async fn fetch_to(hub: &Hub, key: &str, path: &Path) -> Result<bool, HubError> {
    use futures_util::StreamExt as _;
    use tokio::io::AsyncWriteExt as _;
    let Some(mut stream) = hub.objects.open(key).await? else { return Ok(false) };
    let mut file = tokio::fs::File::create(path).await.map_err(|e| HubError::io(path, e))?;
    while let Some(chunk) = stream.next().await {
        file.write_all(&chunk?).await.map_err(|e| HubError::io(path, e))?;
    }
    file.flush().await.map_err(|e| HubError::io(path, e))?;
    Ok(true)
}

/// The grade of every `(spec, sha256)` pair asked for, or why there is none.
async fn score(
    hub: &Hub,
    project: &str,
    specs: Vec<TaskSpec>,
    pairs: Vec<(usize, String)>,
) -> Result<HashMap<(usize, String), Result<Value, Unscored>>, HubError> {
    let mut digests: Vec<String> = pairs.iter().map(|(_, sha)| sha.clone()).collect();
    digests.sort_unstable();
    digests.dedup();
    let scratch = gateway_common::temp::Scratch::new("regrade")?;
    let specs = Arc::new(specs);
    let options = GraderOptions { sandbox: hub.limits.workers.sandbox.clone(), ..Default::default() };
    let threads = std::thread::available_parallelism().map(usize::from).unwrap_or(2);
    let mut out = HashMap::new();
    for round in digests.chunks(STATES_PER_ROUND) {
        let mut files: HashMap<&str, PathBuf> = HashMap::new();
        for sha in round {
            let key = state_key(project, sha);
            let file = match hub.objects.local_file(&key) {
                Some(path) => Some(path),
                None => {
                    let path = scratch.path().join(format!("{sha}.sqlite"));
                    fetch_to(hub, &key, &path).await?.then_some(path)
                }
            };
            match file {
                Some(path) => {
                    files.insert(sha.as_str(), path);
                }
                None => {
                    for (spec, _) in pairs.iter().filter(|(_, s)| s == sha) {
                        out.insert((*spec, sha.clone()), Err(Unscored::NotUploaded(sha.clone())));
                    }
                }
            }
        }
        let wanted: Vec<(usize, String)> = pairs.iter().filter(|(_, sha)| files.contains_key(sha.as_str())).cloned().collect();
        let jobs: Vec<Job> = wanted.iter().map(|(spec, sha)| Job { spec: *spec, state: files[sha.as_str()].clone() }).collect();
        let (specs, options) = (specs.clone(), options.clone());
        let grades = tokio::task::spawn_blocking(move || grade_states(&specs, &jobs, &options, threads))
            .await
            .map_err(|source| HubError::WorkerIn { what: "the regrade stopped", source })?;
        out.extend(wanted.into_iter().zip(grades));
        for path in files.values().filter(|p| p.starts_with(scratch.path())) {
            let _ = std::fs::remove_file(path);
        }
    }
    Ok(out)
}

fn mean(rewards: impl Iterator<Item = Option<f64>>) -> Value {
    let known: Vec<f64> = rewards.flatten().collect();
    if known.is_empty() {
        Value::Null
    } else {
        Value::Float(known.iter().sum::<f64>() / known.len() as f64)
    }
}

/// The new sample of `old` (its body `body`): rewards from `grade`, or errored.
fn regraded_sample(old: &Sample, body: &Map, evaluation: &Evaluation, outcome: Result<(Value, Map), Unscored>, now: &str) -> Sample {
    let mut body = body.clone();
    let mut info = info_of(&body);
    info.insert("regradedFrom".into(), Value::str(&old.id));
    let (reward, rewards) = match outcome {
        Ok((grade, regrade)) => {
            info.shift_remove("errored");
            info.insert("regrade".into(), Value::Object(regrade));
            (grade.get("reward").and_then(Value::as_f64), grade.get("rewards").cloned().unwrap_or_else(|| Value::Object(Map::default())))
        }
        Err(reason) => {
            info.insert("errored".into(), Value::Str(reason.to_string()));
            (None, Value::Object(Map::default()))
        }
    };
    let correct = reward.map(|r| r >= 1.0);
    let number = |n: Option<f64>| n.map(Value::Float).unwrap_or_default();
    body.insert("reward".into(), number(reward));
    body.insert("score".into(), number(reward));
    body.insert("correct".into(), correct.map(Value::Bool).unwrap_or_default());
    body.insert("rewards".into(), rewards);
    body.insert("info".into(), Value::Object(info));
    Sample {
        id: new_id("smp_"),
        evaluation_id: evaluation.id.clone(),
        container_id: evaluation.container_id.clone(),
        version_id: evaluation.version_id.clone(),
        task: old.task.clone(),
        example_id: old.example_id.clone(),
        rollout_index: old.rollout_index,
        reward,
        score: reward,
        correct,
        passed: correct,
        body: document_text(&Value::Object(body)),
        created_at: now.to_string(),
    }
}

/// A carried sample: as it was, in the new evaluation, naming the one it copies.
fn carried_sample(old: &Sample, body: &Map, evaluation: &Evaluation, now: &str) -> Sample {
    let mut body = body.clone();
    let mut info = info_of(&body);
    info.insert("regradedFrom".into(), Value::str(&old.id));
    body.insert("info".into(), Value::Object(info));
    let mut copy = old.clone();
    copy.id = new_id("smp_");
    copy.evaluation_id = evaluation.id.clone();
    copy.body = document_text(&Value::Object(body));
    copy.created_at = now.to_string();
    copy
}

/// `task_version` (or `taskVersion`) and `task_id` (or `taskId`) of a regrade's body.
fn asked(body: &Map) -> Result<(i64, Option<String>), HubError> {
    let fields = Fields::new(body, "");
    fields.only(&["task_version", "taskVersion", "task_id", "taskId"])?;
    let version = match fields.int("task_version", 1)? {
        Some(n) => n,
        None => fields
            .int("taskVersion", 1)?
            .ok_or_else(|| HubError::BadRequest("'task_version' is required: the task version whose grader re-scores".into()))?,
    };
    let task_id = match fields.nonblank("task_id")? {
        Some(id) => Some(id),
        None => fields.nonblank("taskId")?,
    };
    Ok((version, task_id))
}

/// What the regrade found, sample by sample, before anything is filed.
struct Scored {
    samples: Vec<Sample>,
    bodies: Vec<Map>,
    plans: Vec<Plan>,
    /// Per spec: `(task id, task name)`.
    tasks: Vec<(String, String)>,
    /// Sample id → its state's sha256.
    states: BTreeMap<String, String>,
    grades: HashMap<(usize, String), Result<Value, Unscored>>,
}

impl Scored {
    /// What becomes of sample `i`: None (carried), its grade and the `info.regrade`
    /// it is filed with, or why it errored.
    fn outcome(&self, i: usize, version: i64) -> Option<Result<(Value, Map), Unscored>> {
        let spec = match &self.plans[i] {
            Plan::Carry => return None,
            Plan::Errored(reason) => return Some(Err(reason.clone())),
            Plan::Grade(spec) => *spec,
        };
        let sha = &self.states[&self.samples[i].id];
        Some(match &self.grades[&(spec, sha.clone())] {
            Ok(grade) => {
                let (task, name) = &self.tasks[spec];
                let mut regrade = Map::default();
                regrade.insert("taskId".into(), Value::str(task));
                regrade.insert("task".into(), Value::str(name));
                regrade.insert("taskVersion".into(), Value::Int(version));
                regrade.insert("state".into(), Value::str(sha));
                if let Some(checks) = grade.get("checks") {
                    regrade.insert("checks".into(), checks.clone());
                }
                Ok((grade.clone(), regrade))
            }
            Err(reason) => Err(reason.clone()),
        })
    }
}

/// Every sample of `old` planned and its states scored.
async fn score_samples(hub: &Hub, project: &str, old: &Evaluation, task_id: Option<&str>, version: i64) -> Result<Scored, HubError> {
    let samples = hub.meta.samples(&old.id, i64::MAX).await?;
    if samples.is_empty() {
        return Err(HubError::BadRequest(format!("evaluation {} has no samples to regrade", old.id)));
    }
    let slug = hub.meta.container_by_id(&old.container_id).await?.map(|c| c.slug).unwrap_or_default();
    let bodies: Vec<Map> = samples.iter().map(|s| opt_value(&s.body).as_object().cloned().unwrap_or_default()).collect();
    let Resolved { specs, tasks, mut plans } = resolve(hub, project, &slug, &bodies, &samples, task_id, version).await?;
    let links = state_links(hub, project, &old.id).await?;
    for ((plan, sample), body) in plans.iter_mut().zip(&samples).zip(&bodies) {
        if !matches!(plan, Plan::Grade(_)) {
            continue;
        }
        if let Some(reason) = info_of(body).get("errored").and_then(Value::as_str) {
            *plan = Plan::Errored(Unscored::RolloutErrored(reason.to_string()));
        } else if !links.contains_key(&sample.id) {
            *plan = Plan::Errored(Unscored::NoState);
        }
    }
    let states: BTreeMap<String, String> = links.into_iter().map(|(sample, (sha, _))| (sample, sha)).collect();
    let mut pairs: Vec<(usize, String)> = plans
        .iter()
        .zip(&samples)
        .filter_map(|(plan, sample)| match plan {
            Plan::Grade(spec) => Some((*spec, states[&sample.id].clone())),
            _ => None,
        })
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    let grades = score(hub, project, specs, pairs).await?;
    Ok(Scored { samples, bodies, plans, tasks, states, grades })
}

/// `POST …/evaluations/{id}/regrade`: `{task_version, task_id?}` (or `taskVersion`,
/// `taskId`) → the new evaluation's id, what became of the samples and the rewards'
/// means before and after.
pub(super) async fn regrade(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let started = std::time::Instant::now();
    let old = own_evaluation(hub, project, id).await?;
    let (version, task_id) = asked(body)?;
    let scored = score_samples(hub, project, &old, task_id.as_deref(), version).await?;

    let now = now_iso();
    let mut details = opt_value(&old.details).as_object().cloned().unwrap_or_default();
    details.insert("regradedFrom".into(), Value::str(&old.id));
    details.insert(
        "regrade".into(),
        object([("taskId", task_id.clone().map(Value::Str).unwrap_or_default()), ("taskVersion", Value::Int(version))]),
    );
    let evaluation = Evaluation {
        id: new_id("eval_"),
        project_id: project.to_string(),
        container_id: old.container_id.clone(),
        version_id: old.version_id.clone(),
        model: old.model.clone(),
        run_id: old.run_id.clone(),
        status: RUNNING.into(),
        num_examples: old.num_examples,
        rollouts_per_example: old.rollouts_per_example,
        details: document_text(&Value::Object(details)),
        created_at: now.clone(),
        ..Default::default()
    };
    hub.meta.create_evaluation(evaluation.clone()).await?;
    let (mut graded, mut errored, mut carried) = (0i64, 0i64, 0i64);
    let mut errors = Vec::new();
    let mut filed = Vec::with_capacity(scored.samples.len());
    for (i, (sample, body)) in scored.samples.iter().zip(&scored.bodies).enumerate() {
        let Some(outcome) = scored.outcome(i, version) else {
            carried += 1;
            filed.push(carried_sample(sample, body, &evaluation, &now));
            continue;
        };
        match &outcome {
            Ok(_) => graded += 1,
            Err(reason) => {
                errored += 1;
                if errors.len() < ERRORS_LISTED {
                    errors.push(object([
                        ("sampleId", Value::str(&sample.id)),
                        ("task", Value::str(&sample.task)),
                        ("rolloutIndex", Value::Int(sample.rollout_index)),
                        ("reason", Value::Str(reason.to_string())),
                    ]));
                }
            }
        }
        filed.push(regraded_sample(sample, body, &evaluation, outcome, &now));
    }
    let avg = mean(filed.iter().map(|s| s.reward));
    let previous = mean(scored.samples.iter().map(|s| s.reward));
    let count = filed.len() as i64;
    for batch in filed.chunks(MAX_SAMPLES_PER_BATCH) {
        hub.meta.add_samples(&evaluation.id, batch.to_vec()).await?;
    }
    let tally = |key: &str, n: i64| (key.to_string(), Value::Int(n));
    let metrics = Value::Object(
        [
            ("avg_reward".to_string(), avg.clone()),
            tally("n", count),
            tally("graded", graded),
            tally("errored", errored),
            tally("carried", carried),
            ("regradedFrom".to_string(), Value::str(&old.id)),
        ]
        .into_iter()
        .collect(),
    );
    let outcome = Outcome { status: "COMPLETED".into(), metrics: Some(document_text(&metrics)), cost: None, completed_at: now_iso() };
    hub.meta.finalize_evaluation(&evaluation.id, outcome).await?;
    ok(object([
        ("evaluationId", Value::str(&evaluation.id)),
        ("regradedFrom", Value::str(&old.id)),
        ("taskId", task_id.map(Value::Str).unwrap_or_default()),
        ("taskVersion", Value::Int(version)),
        ("samples", Value::Int(count)),
        ("graded", Value::Int(graded)),
        ("errored", Value::Int(errored)),
        ("carried", Value::Int(carried)),
        ("avgReward", avg),
        ("previousAvgReward", previous),
        ("seconds", Value::Float((started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0)),
        ("errors", Value::Array(errors)),
    ]))
}

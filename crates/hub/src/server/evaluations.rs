//! Evaluations (spec §2): create one pinned to a READY version of the caller's
//! project, add scored samples in atomic batches, finalize it COMPLETED or FAILED; and
//! `/api/public/ingestion`, where the SDK files one rollout trace per sample (kept as
//! `trace` documents, best effort, answered 207 per event).
//!
//! Bodies are checked member by member before anything is stored, and a refusal names
//! the member (`'samples[3].reward' must be a number or null, not a string`): unknown
//! members are refused too, so a misspelt `example_id` is an error rather than lost
//! data. Another project's evaluation is "not found". The views computed from
//! evaluations are in `environments.rs`; nothing here runs an evaluation.

use super::access::own_version;
use super::documents::document_text;
use super::request::{opt_value, str_or_null};
use super::response::{ok, Answer};
use super::state::Hub;
use crate::error::HubError;
use crate::evaluations::{Evaluation, Outcome, Sample, FINAL_STATUSES, RUNNING};
use crate::util::{new_id, now_iso};
use gateway_world::json::{object, Map, Value};

/// The members an evaluation create may carry.
const CREATE_MEMBERS: [&str; 11] = [
    "versionId",
    "model",
    "runId",
    "dispatchShard",
    "conditionId",
    "agentBuildId",
    "appliedAgentVariation",
    "numExamples",
    "rolloutsPerExample",
    "environmentIds",
    "metadata",
];
/// The create members kept together as an evaluation's details, in this order.
const DETAIL_MEMBERS: [&str; 6] = ["dispatchShard", "conditionId", "agentBuildId", "appliedAgentVariation", "environmentIds", "metadata"];
/// The members of a sample (the SDK's `normalize_sample`).
const SAMPLE_MEMBERS: [&str; 11] =
    ["exampleId", "task", "rolloutIndex", "prompt", "completion", "answer", "reward", "score", "correct", "rewards", "info"];
/// The members of a dispatch shard, exactly.
const SHARD_MEMBERS: [&str; 6] = ["protocol", "dispatchId", "slotId", "index", "total", "jobId"];
/// The most samples one request may carry (the SDK sends batches of 100).
pub(super) const MAX_SAMPLES_PER_BATCH: usize = 1000;
/// The document kind rollout traces are kept under.
const TRACE: &str = "trace";

/// "a string", "an integer", …: how a refusal names what it got.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Int(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Str(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A JSON object's members, read with refusals that name them (`'<at><key>'`).
pub(super) struct Fields<'a> {
    map: &'a Map,
    at: String,
}

impl<'a> Fields<'a> {
    /// The members of `map`, named with the prefix `at` (`""`, or `"samples[3]."`).
    pub(super) fn new(map: &'a Map, at: impl Into<String>) -> Fields<'a> {
        Fields { map, at: at.into() }
    }

    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.at)
    }

    fn wrong(&self, key: &str, expected: &str, got: &Value) -> HubError {
        HubError::BadRequest(format!("'{}' must be {expected}, not {}", self.name(key), kind_of(got)))
    }

    /// Refuse members outside `allowed`, naming them.
    pub(super) fn only(&self, allowed: &[&str]) -> Result<(), HubError> {
        let unknown: Vec<String> =
            self.map.keys().filter(|k| !allowed.contains(&k.as_str())).map(|k| format!("'{}'", self.name(k))).collect();
        if unknown.is_empty() {
            return Ok(());
        }
        Err(HubError::BadRequest(format!(
            "unknown member{} {}: the accepted ones are {}",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", "),
            allowed.join(", ")
        )))
    }

    /// A member that is present and not null.
    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !matches!(v, Value::Null))
    }

    /// A string member (absent or null: `None`).
    pub(super) fn string(&self, key: &str) -> Result<Option<String>, HubError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Str(text)) => Ok(Some(text.clone())),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    /// A string member that is not blank.
    pub(super) fn nonblank(&self, key: &str) -> Result<Option<String>, HubError> {
        match self.string(key)? {
            Some(text) if text.trim().is_empty() => Err(HubError::BadRequest(format!("'{}' must not be blank", self.name(key)))),
            other => Ok(other),
        }
    }

    /// An integer member of at least `min` (booleans and floats refused).
    pub(super) fn int(&self, key: &str, min: i64) -> Result<Option<i64>, HubError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Int(n)) if *n >= min => Ok(Some(*n)),
            Some(Value::Int(_)) => Err(HubError::BadRequest(format!("'{}' must be an integer of at least {min}", self.name(key)))),
            Some(other) => Err(self.wrong(key, "an integer", other)),
        }
    }

    /// A finite number member (integers taken as floats).
    pub(super) fn number(&self, key: &str) -> Result<Option<f64>, HubError> {
        match self.get(key) {
            None => Ok(None),
            Some(value @ (Value::Int(_) | Value::Float(_))) => match value.as_f64().filter(|f| f.is_finite()) {
                Some(f) => Ok(Some(f)),
                None => Err(HubError::BadRequest(format!("'{}' must be a finite number or null", self.name(key)))),
            },
            Some(other) => Err(self.wrong(key, "a number or null", other)),
        }
    }

    /// A boolean member.
    pub(super) fn boolean(&self, key: &str) -> Result<Option<bool>, HubError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.wrong(key, "a boolean or null", other)),
        }
    }

    /// An object member.
    pub(super) fn object(&self, key: &str) -> Result<Option<Value>, HubError> {
        match self.get(key) {
            None => Ok(None),
            Some(value @ Value::Object(_)) => Ok(Some(value.clone())),
            Some(other) => Err(self.wrong(key, "an object", other)),
        }
    }

    /// A list-of-strings member.
    pub(super) fn strings(&self, key: &str) -> Result<Option<Vec<String>>, HubError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::Str(text) => Ok(text.clone()),
                    other => Err(HubError::BadRequest(format!("'{}[{i}]' must be a string, not {}", self.name(key), kind_of(other)))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(self.wrong(key, "a list of strings", other)),
        }
    }
}

/// A nonblank identifier without whitespace at either end (the SDK's rule for run ids
/// and the dispatch shard's ids).
fn is_identifier(text: &str) -> bool {
    !text.is_empty() && text.trim() == text
}

/// A hyphenated UUID (`8-4-4-4-12` hex, either case), as the SDK's check accepts.
fn is_hyphenated_uuid(text: &str) -> bool {
    text.len() == 36 && text.char_indices().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() })
}

/// `validate_dispatch_shard`: exactly the slot identity members, protocol 1,
/// `0 <= index < total <= 16`, nonblank ids, a hyphenated UUID slot; and a run id.
fn check_dispatch_shard(shard: &Value, run_id: Option<&str>) -> Result<(), HubError> {
    let bad = |message: &str| Err(HubError::BadRequest(format!("'dispatchShard' {message}")));
    let Value::Object(map) = shard else {
        return bad(&format!("must be an object, not {}", kind_of(shard)));
    };
    let missing: Vec<&str> = SHARD_MEMBERS.iter().copied().filter(|k| !map.contains_key(*k)).collect();
    let extra: Vec<&str> = map.keys().map(String::as_str).filter(|k| !SHARD_MEMBERS.contains(k)).collect();
    if !missing.is_empty() || !extra.is_empty() {
        let mut problems = Vec::new();
        if !missing.is_empty() {
            problems.push(format!("missing {}", missing.join(", ")));
        }
        if !extra.is_empty() {
            problems.push(format!("unknown {}", extra.join(", ")));
        }
        return bad(&format!("must contain exactly {} ({})", SHARD_MEMBERS.join(", "), problems.join("; ")));
    }
    if !matches!(map.get("protocol"), Some(Value::Int(1))) {
        return bad("protocol must be 1");
    }
    match (map.get("index"), map.get("total")) {
        (Some(Value::Int(index)), Some(Value::Int(total))) if (1..=16).contains(total) && (0..*total).contains(index) => {}
        _ => return bad("must have integers 0 <= index < total <= 16"),
    }
    for key in ["dispatchId", "slotId", "jobId"] {
        if !matches!(map.get(key), Some(Value::Str(text)) if is_identifier(text)) {
            return bad(&format!("{key} must be a nonblank identifier without boundary whitespace"));
        }
    }
    if !map.get("slotId").and_then(Value::as_str).is_some_and(is_hyphenated_uuid) {
        return bad("slotId must be a hyphenated UUID");
    }
    if !run_id.is_some_and(is_identifier) {
        return bad("requires a nonblank 'runId' without boundary whitespace");
    }
    Ok(())
}

/// An evaluation of this project (another project's is "not found").
pub(super) async fn own_evaluation(hub: &Hub, project: &str, id: &str) -> Result<Evaluation, HubError> {
    hub.meta.evaluation(id).await?.filter(|e| e.project_id == project).ok_or_else(|| HubError::missing("evaluation", id))
}

/// `POST …/evaluations`.
pub(super) async fn create_evaluation(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&CREATE_MEMBERS)?;
    let version_id = fields
        .nonblank("versionId")?
        .ok_or_else(|| HubError::BadRequest("'versionId' is required: the READY version the evaluation is pinned to".into()))?;
    let model = fields.string("model")?;
    let run_id = fields.string("runId")?;
    if let Some(shard) = fields.get("dispatchShard") {
        check_dispatch_shard(shard, run_id.as_deref())?;
    }
    fields.string("conditionId")?;
    fields.string("agentBuildId")?;
    fields.object("appliedAgentVariation")?;
    let num_examples = fields.int("numExamples", 0)?;
    let rollouts_per_example = fields.int("rolloutsPerExample", 1)?;
    fields.strings("environmentIds")?;
    fields.object("metadata")?;
    let (container, version) = own_version(hub, project, &version_id).await?;
    if version.state != "READY" {
        return Err(HubError::BadRequest(format!(
            "version {version_id} is {}: an evaluation pins a READY version (finalize the push first)",
            version.state
        )));
    }
    let details: Map = DETAIL_MEMBERS.iter().filter_map(|k| fields.get(k).map(|v| (k.to_string(), v.clone()))).collect();
    let evaluation = Evaluation {
        id: new_id("eval_"),
        project_id: project.to_string(),
        container_id: container.id.clone(),
        version_id: version.id.clone(),
        model,
        run_id,
        status: RUNNING.into(),
        num_examples,
        rollouts_per_example,
        details: document_text(&Value::Object(details)),
        created_at: now_iso(),
        ..Default::default()
    };
    hub.meta.create_evaluation(evaluation.clone()).await?;
    ok(object([
        ("evaluationId", Value::str(evaluation.id)),
        ("containerId", Value::str(container.id)),
        ("versionId", Value::str(version.id)),
        ("status", Value::str(evaluation.status)),
        ("createdAt", Value::str(evaluation.created_at)),
    ]))
}

/// One sample of a batch, checked; `at` is its place (`samples[i].`).
fn parse_sample(item: &Value, at: &str, evaluation: &Evaluation, now: &str) -> Result<Sample, HubError> {
    let Value::Object(map) = item else {
        return Err(HubError::BadRequest(format!("'{}' must be an object, not {}", at.trim_end_matches('.'), kind_of(item))));
    };
    let fields = Fields::new(map, at);
    fields.only(&SAMPLE_MEMBERS)?;
    let example_id = fields.string("exampleId")?;
    let task = fields.string("task")?;
    let rollout_index = fields.int("rolloutIndex", 0)?.unwrap_or(0);
    for key in ["prompt", "completion", "answer"] {
        fields.string(key)?;
    }
    let reward = fields.number("reward")?;
    let score = fields.number("score")?;
    let correct = fields.boolean("correct")?;
    fields.object("rewards")?;
    fields.object("info")?;
    Ok(Sample {
        id: new_id("smp_"),
        evaluation_id: evaluation.id.clone(),
        container_id: evaluation.container_id.clone(),
        version_id: evaluation.version_id.clone(),
        task: task.clone().or_else(|| example_id.clone()).unwrap_or_default(),
        example_id,
        rollout_index,
        reward,
        score,
        correct,
        passed: correct.or(reward.map(|r| r >= 1.0)),
        body: document_text(item),
        created_at: now.to_string(),
    })
}

/// `POST …/evaluations/{id}/samples`: the whole batch is checked, then stored in one
/// transaction.
pub(super) async fn add_samples(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let evaluation = own_evaluation(hub, project, id).await?;
    let fields = Fields::new(body, "");
    fields.only(&["samples"])?;
    let items = match body.get("samples") {
        Some(Value::Array(items)) => items,
        Some(other) => return Err(fields.wrong("samples", "a list of sample objects", other)),
        None => return Err(HubError::BadRequest("'samples' is required: a list of sample objects".into())),
    };
    if items.len() > MAX_SAMPLES_PER_BATCH {
        return Err(HubError::BadRequest(format!(
            "{} samples in one request: send at most {MAX_SAMPLES_PER_BATCH} per batch",
            items.len()
        )));
    }
    let now = now_iso();
    let samples = items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_sample(item, &format!("samples[{i}]."), &evaluation, &now))
        .collect::<Result<Vec<_>, _>>()?;
    let inserted = hub.meta.add_samples(&evaluation.id, samples).await?;
    ok(object([("evaluationId", Value::str(evaluation.id)), ("inserted", Value::Int(inserted))]))
}

/// `POST …/evaluations/{id}/finalize`.
pub(super) async fn finalize_evaluation(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let evaluation = own_evaluation(hub, project, id).await?;
    let fields = Fields::new(body, "");
    fields.only(&["status", "metrics", "cost"])?;
    let status = fields.string("status")?.unwrap_or_else(|| "COMPLETED".into());
    if !FINAL_STATUSES.contains(&status.as_str()) {
        return Err(HubError::BadRequest(format!("'status' must be {}, not '{status}'", FINAL_STATUSES.join(" or "))));
    }
    let metrics = fields.object("metrics")?.map(|m| document_text(&m));
    let cost = fields.object("cost")?.map(|c| document_text(&c));
    let done = hub.meta.finalize_evaluation(&evaluation.id, Outcome { status, metrics, cost, completed_at: now_iso() }).await?;
    ok(object([
        ("evaluationId", Value::str(done.id)),
        ("status", Value::str(done.status)),
        ("completedAt", str_or_null(&done.completed_at)),
        ("sampleCount", Value::Int(done.sample_count)),
        ("metrics", done.metrics.as_deref().map(opt_value).unwrap_or_default()),
    ]))
}

/// `POST /api/public/ingestion`: each `trace-create` event's body is kept as a `trace`
/// document under its id; other event types are accepted and dropped. Answered 207
/// with `{successes: [{id, status}], errors: [{id, status, message}]}`, per event.
pub(super) async fn ingestion(hub: &Hub, project: &str, body: &Map) -> Answer {
    let events = match body.get("batch") {
        Some(Value::Array(events)) => events,
        _ => return Err(HubError::BadRequest("'batch' is required: a list of ingestion events".into())),
    };
    let mut successes = Vec::new();
    let mut errors = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let event_id = event.get("id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("batch[{i}]"));
        let refuse =
            |message: &str| object([("id", Value::str(event_id.clone())), ("status", Value::Int(400)), ("message", Value::str(message))]);
        if event.get("type").and_then(Value::as_str) != Some("trace-create") {
            successes.push(object([("id", Value::str(event_id.clone())), ("status", Value::Int(201))]));
            continue;
        }
        let trace = event.get("body").filter(|b| b.as_object().is_some());
        let trace_id = trace.and_then(|b| b.get("id")).and_then(Value::as_str).filter(|id| is_identifier(id) && id.len() <= 200);
        match (trace, trace_id) {
            (Some(trace), Some(trace_id)) => {
                hub.meta.put_document(project, TRACE, trace_id, &document_text(trace)).await?;
                successes.push(object([("id", Value::str(event_id.clone())), ("status", Value::Int(201))]));
            }
            _ => errors.push(refuse("a trace-create event needs a body object with an 'id' string")),
        }
    }
    Ok((207, object([("successes", Value::Array(successes)), ("errors", Value::Array(errors))])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json;

    fn shard(text: &str) -> Value {
        json::parse(text).unwrap().value
    }

    #[test]
    fn dispatch_shards() {
        let good =
            r#"{"protocol": 1, "dispatchId": "d", "slotId": "123e4567-e89b-12d3-a456-426614174000", "index": 0, "total": 2, "jobId": "j"}"#;
        assert!(check_dispatch_shard(&shard(good), Some("run")).is_ok());
        assert!(check_dispatch_shard(&shard(good), None).unwrap_err().to_string().contains("runId"));
        assert!(check_dispatch_shard(&shard(good), Some(" run")).is_err());
        let extra = good.replace("\"jobId\": \"j\"", "\"jobId\": \"j\", \"x\": 1");
        assert!(check_dispatch_shard(&shard(&extra), Some("run")).unwrap_err().to_string().contains("unknown x"));
        let index = good.replace("\"index\": 0", "\"index\": 2");
        assert!(check_dispatch_shard(&shard(&index), Some("run")).is_err());
        let protocol = good.replace("\"protocol\": 1", "\"protocol\": true");
        assert!(check_dispatch_shard(&shard(&protocol), Some("run")).unwrap_err().to_string().contains("protocol"));
        let slot = good.replace("123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000");
        assert!(check_dispatch_shard(&shard(&slot), Some("run")).unwrap_err().to_string().contains("UUID"));
        assert!(is_hyphenated_uuid("123E4567-E89B-12D3-A456-426614174000"));
    }
}

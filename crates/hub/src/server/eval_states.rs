//! Evaluation samples' final states (beyond the original): `POST
//! …/evaluations/{id}/states` registers, per sample, the session database its
//! rollout ended with (`worlds run` uploads them after filing), so that a later
//! grader can re-score the evaluation without re-running it (`regrade.rs`).
//!
//! A state is an object of the project, content-addressed
//! (`evaluation-states/<project>/<sha256>.sqlite`): a state two rollouts share, or a
//! second evaluation re-registers, is stored once and answered `uploaded: true`;
//! otherwise the answer carries a signed PUT URL whose body must hash to the
//! registered sha256 and be no larger than its registered size. Each sample's link
//! to its state is a document of the project (`state:<evaluationId>`, by sample id).

use super::documents::document_text;
use super::evaluations::{own_evaluation, Fields};
use super::objects::presign;
use super::response::{ok, Answer};
use super::state::Hub;
use crate::error::HubError;
use crate::evaluations::Sample;
use crate::store::DocumentPages;
use base64::Engine as _;
use gateway_world::json::{self, object, Map, Value};
use std::collections::BTreeMap;

/// The most states one request registers.
pub(super) const MAX_STATES_PER_BATCH: usize = 1000;

/// The document kind of one evaluation's sample → state links.
pub(super) fn links_kind(evaluation_id: &str) -> String {
    format!("state:{evaluation_id}")
}

/// Where the project's state with this sha256 (hex) is stored.
pub(super) fn state_key(project: &str, sha256: &str) -> String {
    format!("evaluation-states/{project}/{sha256}.sqlite")
}

/// The sample an entry names: `sampleId`, else (`exampleId` or `task`, `rolloutIndex`).
fn named_sample<'a>(fields: &Fields<'_>, samples: &'a [Sample], at: &str) -> Result<&'a Sample, HubError> {
    if let Some(id) = fields.nonblank("sampleId")? {
        return samples
            .iter()
            .find(|s| s.id == id)
            .ok_or_else(|| HubError::BadRequest(format!("'{at}sampleId' {id} is no sample of this evaluation")));
    }
    let name = fields.nonblank("exampleId")?.or(fields.nonblank("task")?).ok_or_else(|| {
        HubError::BadRequest(format!("'{at}' names no sample: give 'sampleId', or 'exampleId' (or 'task') and 'rolloutIndex'"))
    })?;
    let index = fields.int("rolloutIndex", 0)?.unwrap_or(0);
    let matching: Vec<&Sample> =
        samples.iter().filter(|s| s.rollout_index == index && (s.example_id.as_deref() == Some(name.as_str()) || s.task == name)).collect();
    match matching.as_slice() {
        [one] => Ok(one),
        [] => Err(HubError::BadRequest(format!("'{at}' matches no sample of this evaluation ({name}, rollout {index})"))),
        _ => {
            Err(HubError::BadRequest(format!("'{at}' matches {} samples ({name}, rollout {index}): name it by 'sampleId'", matching.len())))
        }
    }
}

/// `POST …/evaluations/{id}/states`: `{states: [{sampleId | exampleId/task +
/// rolloutIndex, sha256, bytes}]}` → `{evaluationId, states: [{sampleId, sha256,
/// uploaded, uploadUrl?}]}`. Every entry is checked before anything is stored; a
/// sample registered again points at its new state.
pub(super) async fn register_states(hub: &Hub, project: &str, id: &str, body: &Map, base_url: &str) -> Answer {
    let evaluation = own_evaluation(hub, project, id).await?;
    Fields::new(body, "").only(&["states"])?;
    let items = match body.get("states") {
        Some(Value::Array(items)) if items.len() <= MAX_STATES_PER_BATCH => items,
        Some(Value::Array(items)) => {
            return Err(HubError::BadRequest(format!("{} states in one request: send at most {MAX_STATES_PER_BATCH}", items.len())))
        }
        _ => {
            return Err(HubError::BadRequest("'states' is required: a list of {sampleId | exampleId + rolloutIndex, sha256, bytes}".into()))
        }
    };
    let samples = hub.meta.samples(&evaluation.id, i64::MAX).await?;
    let mut checked = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("states[{i}].");
        let Value::Object(map) = item else { return Err(HubError::BadRequest(format!("'states[{i}]' must be an object"))) };
        let fields = Fields::new(map, &at);
        fields.only(&["sampleId", "exampleId", "task", "rolloutIndex", "sha256", "bytes"])?;
        let sample = named_sample(&fields, &samples, &at)?;
        let sha256 = fields.string("sha256")?.unwrap_or_default().to_ascii_lowercase();
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(HubError::BadRequest(format!("'{at}sha256' must be the state file's sha256 (64 hex digits)")));
        }
        let bytes =
            fields.int("bytes", 1)?.ok_or_else(|| HubError::BadRequest(format!("'{at}bytes' is required: the state file's size")))?;
        if bytes as u64 > hub.limits.max_object_bytes as u64 {
            return Err(HubError::TooLarge(format!("'{at}bytes' {bytes} is over the {}-byte object limit", hub.limits.max_object_bytes)));
        }
        checked.push((sample.id.clone(), sha256, bytes));
    }
    let mut answered = Vec::with_capacity(checked.len());
    for (sample_id, sha256, bytes) in checked {
        let key = state_key(project, &sha256);
        let link = object([("sampleId", Value::str(&sample_id)), ("sha256", Value::str(&sha256)), ("bytes", Value::Int(bytes))]);
        hub.meta.put_document(project, &links_kind(&evaluation.id), &sample_id, &document_text(&link)).await?;
        let stored = hub.objects.size(&key).await? == Some(bytes as u64);
        let mut entry = object([("sampleId", Value::str(&sample_id)), ("sha256", Value::str(&sha256)), ("uploaded", Value::Bool(stored))]);
        if !stored {
            let checksum = base64::engine::general_purpose::STANDARD.encode(hex::decode(&sha256).unwrap_or_default());
            let url = presign(hub, base_url, "PUT", &key, &[("checksum", &checksum), ("state", "1"), ("size", &bytes.to_string())]);
            if let Value::Object(map) = &mut entry {
                map.insert("uploadUrl".into(), Value::Str(url));
            }
        }
        answered.push(entry);
    }
    ok(object([("evaluationId", Value::str(&evaluation.id)), ("states", Value::Array(answered))]))
}

/// Every sample → state link of an evaluation: sample id → (sha256, bytes).
pub(super) async fn state_links(hub: &Hub, project: &str, evaluation_id: &str) -> Result<BTreeMap<String, (String, u64)>, HubError> {
    let mut links = BTreeMap::new();
    let mut pages = DocumentPages::new(hub.meta.as_ref(), project, links_kind(evaluation_id), 1000);
    while let Some(page) = pages.next_page().await? {
        for (_, text) in page {
            let Some(link) = json::parse_clean(&text) else { continue };
            let text_of = |key: &str| link.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
            let bytes = link.get("bytes").and_then(Value::as_i64).unwrap_or(0).max(0) as u64;
            links.insert(text_of("sampleId"), (text_of("sha256"), bytes));
        }
    }
    Ok(links)
}

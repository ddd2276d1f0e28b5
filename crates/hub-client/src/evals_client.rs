//! The filing client: the original's `GatewayEvalsClient` (spec §2). An evaluation
//! pinned to a version is created (for the agent build `GATEWAY_AGENT_BUILD_ID` names, if
//! set), its samples pushed in batches of 100 (each first
//! emitted as one rollout trace to `/api/public/ingestion`, best effort, unless
//! `GATEWAY_EMIT_ROLLOUT_SESSIONS` is `0|false|no`), then finalized with its metrics.
//!
//! It is only the client: the hub's evaluation endpoints are the server's, and what
//! goes into a sample (rewards, call logs) is the runner's (`gateway-runner`).

use crate::transport::{Dialect, EnvCredentials, Missing, Transport};
use crate::ClientError;
use gateway_common::random::random_hex;
use gateway_common::time::utc_now_millis as now_iso;
use gateway_world::json::{self, object, Map, Value};
use std::time::Duration;

const BASE: &str = "/api/public/benchmark-containers/evaluations";
/// Samples per `…/samples` POST.
pub const SAMPLE_BATCH: usize = 100;
/// The environment every rollout trace is stamped with.
pub const ROLLOUTS_ENVIRONMENT: &str = "rollouts";
/// The sample members the API takes, in the order the original sends them.
const SAMPLE_KEYS: [(&str, &[&str]); 11] = [
    ("exampleId", &["exampleId", "example_id"]),
    ("task", &["task"]),
    ("rolloutIndex", &["rolloutIndex", "rollout_index"]),
    ("prompt", &["prompt"]),
    ("completion", &["completion"]),
    ("answer", &["answer"]),
    ("reward", &["reward"]),
    ("score", &["score"]),
    ("correct", &["correct"]),
    ("rewards", &["rewards"]),
    ("info", &["info"]),
];

type Result<T> = std::result::Result<T, ClientError>;

/// A rollout's final state to attach to its filed sample (beyond the original): the
/// session database it ended with, named by the sample's task and rollout.
#[derive(Debug, Clone)]
pub struct FinalState {
    /// The sample's `exampleId` (its task).
    pub example_id: String,
    /// The sample's `rolloutIndex`.
    pub rollout_index: i64,
    /// The exported database.
    pub path: std::path::PathBuf,
    /// Its sha256, hex.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// What [`EvalsClient::upload_states`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatesFiled {
    /// Samples that now point at their state.
    pub registered: usize,
    /// State files sent (a state the hub held already, or sent once in this call, is not sent again).
    pub uploaded: usize,
}

/// The optional members of an evaluation's create body.
#[derive(Debug, Clone, Default)]
pub struct NewEvaluation {
    /// The model label.
    pub model: Option<String>,
    /// `runId`.
    pub run_id: Option<String>,
    /// Distinct examples (tasks) in the run.
    pub num_examples: Option<i64>,
    /// Rollouts per example.
    pub rollouts_per_example: Option<i64>,
    /// Free-form metadata (`{source, variant, …}`).
    pub metadata: Option<Value>,
}

/// A client of the evaluation routes, authenticated with a project key pair.
#[derive(Debug, Clone)]
pub struct EvalsClient {
    transport: Transport,
}

/// Whether each sample is first emitted as a rollout trace (`GATEWAY_EMIT_ROLLOUT_SESSIONS`).
pub fn emit_rollout_sessions() -> bool {
    !matches!(std::env::var("GATEWAY_EMIT_ROLLOUT_SESSIONS").as_deref(), Ok("0" | "false" | "no"))
}

/// The agent build a filed run tested (`GATEWAY_AGENT_BUILD_ID`: a build's id or hash),
/// sent as the evaluation's `agentBuildId` so the release gate counts the run for that
/// build (the original SDK takes it as `create_evaluation(agent_build_id=…)`).
pub fn agent_build_id() -> Option<String> {
    std::env::var("GATEWAY_AGENT_BUILD_ID").ok().map(|id| id.trim().to_string()).filter(|id| !id.is_empty())
}

/// A sample in the API's shape: the known members (camelCase or snake_case in),
/// null ones left out.
pub fn normalize_sample(sample: &Map) -> Value {
    let mut out = Map::default();
    for (ours, keys) in SAMPLE_KEYS {
        if let Some(value) = keys.iter().filter_map(|k| sample.get(*k)).find(|v| !matches!(v, Value::Null)) {
            out.insert(ours.to_string(), value.clone());
        }
    }
    Value::Object(out)
}

fn text_of(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::Str(text)) => text.clone(),
        Some(other) => json::dumps(other, json::DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false }),
    }
}

impl EvalsClient {
    /// A client for `host` with a key pair (all three required, as in the original).
    pub fn new(host: &str, public_key: &str, secret_key: &str) -> Result<EvalsClient> {
        Ok(EvalsClient { transport: Transport::with_key_pair(host, public_key, secret_key, Missing::SAY_WHERE, Duration::from_secs(180))? })
    }

    /// `--host` else `GATEWAY_HOST`, and `GATEWAY_PUBLIC_KEY` / `GATEWAY_SECRET_KEY`.
    pub fn from_env(host: Option<&str>) -> Result<EvalsClient> {
        let credentials = EnvCredentials::read(host);
        EvalsClient::new(&credentials.host, &credentials.public_key, &credentials.secret_key)
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value> {
        self.transport.call(&Dialect::URLLIB, reqwest::Method::POST, path, Some(body))
    }

    /// `POST …/evaluations`: the new evaluation's id.
    pub fn create_evaluation(&self, version_id: &str, options: &NewEvaluation) -> Result<String> {
        let mut body = Map::default();
        body.insert("versionId".into(), Value::str(version_id));
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                body.insert(key.into(), value);
            }
        };
        put("model", options.model.clone().map(Value::Str));
        put("runId", options.run_id.clone().map(Value::Str));
        put("agentBuildId", agent_build_id().map(Value::Str));
        put("numExamples", options.num_examples.map(Value::Int));
        put("rolloutsPerExample", options.rollouts_per_example.map(Value::Int));
        put("metadata", options.metadata.clone());
        let created = self.post(BASE, &Value::Object(body))?;
        created
            .get("evaluationId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ClientError::BadAnswer(format!("POST {BASE} answered without an evaluationId: {}", json::canonical(&created))))
    }

    /// One rollout as a session-tagged trace; `{sessionId, traceId}` on success,
    /// nothing on any failure (tracing never breaks a filing).
    fn emit_rollout_session(
        &self,
        session_id: &str,
        name: &str,
        prompt: &str,
        completion: &str,
        metadata: Value,
    ) -> Option<(String, String)> {
        // uuid.uuid4().hex's shape: 32 hex characters.
        let trace_id = random_hex(16);
        let now = now_iso();
        let event = object([
            ("id", Value::Str(random_hex(16))),
            ("type", Value::str("trace-create")),
            ("timestamp", Value::Str(now.clone())),
            (
                "body",
                object([
                    ("id", Value::Str(trace_id.clone())),
                    ("sessionId", Value::str(session_id)),
                    ("name", Value::str(if name.is_empty() { "rollout" } else { name })),
                    ("environment", Value::str(ROLLOUTS_ENVIRONMENT)),
                    ("input", Value::str(prompt)),
                    ("output", Value::str(completion)),
                    ("metadata", metadata),
                    ("timestamp", Value::Str(now)),
                ]),
            ),
        ]);
        match self.post("/api/public/ingestion", &object([("batch", Value::Array(vec![event]))])) {
            Ok(_) => Some((session_id.to_string(), trace_id)),
            Err(error) => {
                eprintln!("rollout session emit failed for {session_id}: {error}");
                None
            }
        }
    }

    /// Emit `sample`'s rollout trace and stamp `{sessionId, traceId}` into its info,
    /// unless the info names a session already.
    fn tag_sample_session(&self, evaluation_id: &str, sample: &mut Map) {
        if !matches!(sample.get("info"), Some(Value::Object(_))) {
            sample.insert("info".into(), Value::Object(Map::default()));
        }
        let named = |key: &str| sample.get("info").and_then(|i| i.get(key)).is_some_and(crate::client::truthy);
        if named("sessionId") || named("session_id") {
            return;
        }
        let pick = |keys: &[&str]| keys.iter().filter_map(|k| sample.get(*k)).find(|v| crate::client::truthy(v)).cloned();
        let example = pick(&["exampleId", "example_id"]).map(|v| text_of(Some(&v))).unwrap_or_else(|| "ex".into());
        let rollout = pick(&["rolloutIndex", "rollout_index"]).map(|v| text_of(Some(&v))).unwrap_or_else(|| "0".into());
        let session_id = format!("{evaluation_id}:{example}:{rollout}");
        let name = sample.get("task").filter(|v| crate::client::truthy(v)).map(|v| text_of(Some(v))).unwrap_or_else(|| example.clone());
        let completion = pick(&["completion", "answer"]);
        let metadata = object([
            ("evaluationId", Value::str(evaluation_id)),
            ("task", sample.get("task").cloned().unwrap_or_default()),
            ("reward", sample.get("reward").cloned().unwrap_or_default()),
        ]);
        let emitted =
            self.emit_rollout_session(&session_id, &name, &text_of(sample.get("prompt")), &text_of(completion.as_ref()), metadata);
        if let (Some((session, trace)), Some(Value::Object(info))) = (emitted, sample.get_mut("info")) {
            info.insert("sessionId".into(), Value::Str(session));
            info.insert("traceId".into(), Value::Str(trace));
        }
    }

    /// `POST …/{id}/samples` in batches of [`SAMPLE_BATCH`]: how many the hub inserted.
    pub fn push_samples(&self, evaluation_id: &str, samples: Vec<Map>) -> Result<i64> {
        let emit = emit_rollout_sessions();
        let mut total = 0;
        let mut samples = samples;
        for batch in samples.chunks_mut(SAMPLE_BATCH) {
            if emit {
                for sample in batch.iter_mut() {
                    self.tag_sample_session(evaluation_id, sample);
                }
            }
            let body = object([("samples", Value::Array(batch.iter().map(normalize_sample).collect()))]);
            let answered = self.post(&format!("{BASE}/{evaluation_id}/samples"), &body)?;
            total += answered.get("inserted").and_then(Value::as_f64).map_or(batch.len() as i64, |n| n as i64);
        }
        Ok(total)
    }

    /// Beyond the original: attach each rollout's final state to its sample — `POST
    /// …/{id}/states` in batches of [`SAMPLE_BATCH`] ×10, then each state file the hub
    /// lacks PUT to its signed URL — so the evaluation can be re-graded later.
    pub fn upload_states(&self, evaluation_id: &str, states: &[FinalState]) -> Result<StatesFiled> {
        let mut filed = StatesFiled::default();
        let mut sent = std::collections::HashSet::new();
        for batch in states.chunks(SAMPLE_BATCH * 10) {
            let entries = batch
                .iter()
                .map(|state| {
                    object([
                        ("exampleId", Value::str(&state.example_id)),
                        ("rolloutIndex", Value::Int(state.rollout_index)),
                        ("sha256", Value::str(&state.sha256)),
                        ("bytes", Value::Int(state.bytes as i64)),
                    ])
                })
                .collect();
            let answered = self.post(&format!("{BASE}/{evaluation_id}/states"), &object([("states", Value::Array(entries))]))?;
            let rows = answered.get("states").and_then(Value::as_array).cloned().unwrap_or_default();
            for (state, row) in batch.iter().zip(&rows) {
                filed.registered += 1;
                let Some(url) = row.get("uploadUrl").and_then(Value::as_str) else { continue };
                if !sent.insert(state.sha256.clone()) {
                    continue;
                }
                self.put_file(url, &state.path)?;
                filed.uploaded += 1;
            }
        }
        Ok(filed)
    }

    /// PUT a file's bytes to a signed object URL.
    fn put_file(&self, url: &str, path: &std::path::Path) -> Result<()> {
        let file = std::fs::File::open(path).map_err(|e| ClientError::Failed(format!("{}: {e}", path.display())))?;
        let response =
            self.transport.http().put(url).body(file).send().map_err(|e| ClientError::Unreachable(format!("PUT state -> {e}")))?;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let detail: String = response.text().unwrap_or_default().chars().take(500).collect();
            return Err(ClientError::Refused(format!("PUT state -> {status}: {detail}")));
        }
        Ok(())
    }

    /// Beyond the original: `POST …/{id}/regrade` — the evaluation's stored final states
    /// re-scored under `task_version` of its tasks (of `task_id` only, when given), filed
    /// as a new evaluation; the hub's answer.
    pub fn regrade(&self, evaluation_id: &str, task_version: i64, task_id: Option<&str>) -> Result<Value> {
        let mut body = Map::default();
        body.insert("task_version".into(), Value::Int(task_version));
        if let Some(task_id) = task_id {
            body.insert("task_id".into(), Value::str(task_id));
        }
        self.post(&format!("{BASE}/{}/regrade", gateway_common::url::quote(evaluation_id, "")), &Value::Object(body))
    }

    /// `POST …/{id}/finalize`: the status the hub recorded.
    pub fn finalize_evaluation(&self, evaluation_id: &str, status: &str, metrics: Option<Value>) -> Result<String> {
        let mut body = Map::default();
        body.insert("status".into(), Value::str(status));
        if let Some(metrics) = metrics {
            body.insert("metrics".into(), metrics);
        }
        let finalized = self.post(&format!("{BASE}/{evaluation_id}/finalize"), &Value::Object(body))?;
        Ok(finalized.get("status").map(|s| text_of(Some(s))).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_keep_known_non_null_members() {
        let sample = json::parse(r#"{"example_id": "t", "task": "t", "rollout_index": 0, "reward": null, "correct": false, "extra": 1}"#)
            .unwrap()
            .value;
        let normalized = normalize_sample(sample.as_object().unwrap());
        assert_eq!(json::canonical(&normalized), r#"{"correct":false,"exampleId":"t","rolloutIndex":0,"task":"t"}"#);
    }
}

//! The rubric judge: an LLM behind any OpenAI-compatible chat-completions endpoint
//! reads a task's rubric, the session's final state and its call log, and scores
//! each criterion. The host never calls a model (a rubric grade comes back
//! `pending`); the hub's server (a session's grade call) and the runner (`worlds run`
//! against a local world) do, both through this crate.
//!
//! Configured by environment: `GATEWAY_JUDGE_BASE_URL` (e.g.
//! `https://openrouter.ai/api/v1`), `GATEWAY_JUDGE_API_KEY` and `GATEWAY_JUDGE_MODEL`;
//! `OPENAI_BASE_URL`/`OPENAI_API_KEY`, or `OPENROUTER_API_KEY`, when those are unset.
//! The task's `grader.model.model` overrides the model.
//!
//! It reads the task as the typed [`TaskSpec`] its caller parsed once (the hub's
//! session, the runner's task): never the spec's JSON.
//!
//! It is not a grader of assertions or python checks (those are `gateway-world`'s
//! `task` module, run by the host), keeps nothing, and knows nothing of the hub.

use gateway_world::json::{self, object, Map, Value};
use gateway_world::task::{Criterion, TaskSpec};
use std::time::Duration;

/// Why a rubric grade could not be judged; the text is what a session's call log
/// and a run's rollout record.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// No judge is configured where the grade is asked for.
    #[error(
        "rubric grading needs a judge: set GATEWAY_JUDGE_BASE_URL, GATEWAY_JUDGE_API_KEY and GATEWAY_JUDGE_MODEL \
                    (any OpenAI-compatible endpoint) where the hub runs"
    )]
    NotConfigured,
    /// The endpoint could not be reached or its answer read.
    #[error("the rubric judge could not be reached: {0}")]
    Unreachable(#[source] reqwest::Error),
    /// The endpoint answered with an error status (the body's first 400 characters).
    #[error("the rubric judge answered {status}: {body}")]
    Refused {
        /// The HTTP status, as reqwest prints it (`500 Internal Server Error`).
        status: reqwest::StatusCode,
        /// The start of the answer's body.
        body: String,
    },
    /// A success without `choices[0].message.content`.
    #[error("the rubric judge's answer has no choices[0].message.content")]
    NoContent,
    /// The model's message holds no JSON object (its first 200 characters).
    #[error("the rubric judge did not answer JSON: {0}")]
    NotJson(String),
}

/// Where the judge is and who it is.
#[derive(Debug, Clone)]
pub struct JudgeConfig {
    /// The API base URL (`…/v1`), without the trailing `/chat/completions`.
    pub base_url: String,
    /// The bearer key (may be empty for a local endpoint).
    pub api_key: String,
    /// The model name.
    pub model: String,
}

impl JudgeConfig {
    /// From the environment, or None when no judge is configured.
    pub fn from_env() -> Option<JudgeConfig> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let (base_url, api_key) = match (var("GATEWAY_JUDGE_BASE_URL"), var("OPENAI_BASE_URL"), var("OPENROUTER_API_KEY")) {
            (Some(base), _, _) => (base, var("GATEWAY_JUDGE_API_KEY").or_else(|| var("OPENAI_API_KEY")).unwrap_or_default()),
            (None, Some(base), _) => (base, var("OPENAI_API_KEY").unwrap_or_default()),
            (None, None, Some(key)) => ("https://openrouter.ai/api/v1".to_string(), key),
            (None, None, None) => match var("OPENAI_API_KEY") {
                Some(key) => ("https://api.openai.com/v1".to_string(), key),
                None => return None,
            },
        };
        let model = var("GATEWAY_JUDGE_MODEL").unwrap_or_else(|| "gpt-4o-mini".into());
        Some(JudgeConfig { base_url: base_url.trim_end_matches('/').to_string(), api_key, model })
    }
}

const INSTRUCTIONS: &str = "You grade an AI agent's work in a simulated service. You get the task, a rubric, \
the final state of the service and the agent's calls. Answer with one JSON object and nothing else: \
{\"rewards\": {\"<criterion id>\": <score 0..1>, ...}, \"reward\": <overall score 0..1>, \"reason\": \"<one sentence>\"}. \
Without criteria, give only reward and reason.";

/// Judge a rubric grade: `{reward, rewards, grader: "rubric", reason}`, or why not.
pub async fn judge(spec: &TaskSpec, state: &Value, calls: &[Value]) -> Result<Value, JudgeError> {
    let Some(config) = JudgeConfig::from_env() else { return Err(JudgeError::NotConfigured) };
    judge_with(&config, spec, state, calls).await
}

/// [`judge`] with an explicit configuration.
pub async fn judge_with(config: &JudgeConfig, spec: &TaskSpec, state: &Value, calls: &[Value]) -> Result<Value, JudgeError> {
    // A task graded otherwise has no rubric: the judge is asked with none.
    let (rubric, criteria, model) = match spec.rubric() {
        Some((rubric, criteria, model)) => (Value::str(rubric), criteria, model),
        None => (Value::Null, &[][..], None),
    };
    let model = model.map_or(config.model.as_str(), |m| m.model.as_str()).to_string();
    let transcript: Vec<Value> = calls
        .iter()
        .map(|c| {
            object([
                ("kind", c.get("kind").cloned().unwrap_or_default()),
                ("tool", c.get("tool").cloned().unwrap_or_default()),
                ("args", c.get("args").cloned().unwrap_or_default()),
                ("result", c.get("result").cloned().unwrap_or_default()),
                ("error", c.get("error").cloned().unwrap_or_default()),
            ])
        })
        .collect();
    let brief = object([
        ("task", Value::str(&spec.instruction)),
        ("rubric", rubric),
        ("criteria", Value::Array(criteria.iter().map(Criterion::to_value).collect())),
        ("finalState", state.clone()),
        ("calls", Value::Array(transcript)),
    ]);
    let request = object([
        ("model", Value::Str(model)),
        ("temperature", Value::Int(0)),
        (
            "messages",
            Value::Array(vec![
                object([("role", Value::str("system")), ("content", Value::str(INSTRUCTIONS))]),
                object([("role", Value::str("user")), ("content", Value::Str(json::canonical(&brief)))]),
            ]),
        ),
    ]);
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", config.base_url))
        .bearer_auth(&config.api_key)
        .header("content-type", "application/json")
        .body(json::canonical(&request))
        .timeout(Duration::from_secs(180))
        .send()
        .await
        .map_err(JudgeError::Unreachable)?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(JudgeError::Refused { status, body: text.chars().take(400).collect() });
    }
    let content = json::parse(&text)
        .ok()
        .and_then(|p| p.value.get("choices")?.as_array()?.first()?.get("message")?.get("content")?.as_str().map(str::to_string))
        .ok_or(JudgeError::NoContent)?;
    let verdict = extract_object(&content).ok_or_else(|| JudgeError::NotJson(content.chars().take(200).collect()))?;
    Ok(score(&verdict, criteria))
}

/// The first JSON object in a model's text (it may wrap it in prose or a fence).
fn extract_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    json::parse(text.get(start..=end)?).ok().map(|p| p.value).filter(|v| v.as_object().is_some())
}

fn unit(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64).filter(|n| n.is_finite()).map(|n| n.clamp(0.0, 1.0))
}

/// The grade: each criterion's score (missing → 0), the reward their weighted
/// mean, or the judge's overall score without criteria.
fn score(verdict: &Value, criteria: &[Criterion]) -> Value {
    let given = verdict.get("rewards");
    let mut rewards = Map::default();
    let (mut total, mut weights) = (0.0, 0.0);
    for criterion in criteria {
        let weight = criterion.weight.unwrap_or(1.0);
        let value = unit(given.and_then(|g| g.get(&criterion.id))).unwrap_or(0.0);
        total += weight * value;
        weights += weight;
        rewards.insert(criterion.id.clone(), Value::Float(value));
    }
    let reward =
        if weights > 0.0 { Value::Float(total / weights) } else { unit(verdict.get("reward")).map(Value::Float).unwrap_or_default() };
    object([
        ("reward", reward),
        ("rewards", Value::Object(rewards)),
        ("grader", Value::str("rubric")),
        ("reason", verdict.get("reason").cloned().unwrap_or_default()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn criterion(id: &str, weight: Option<f64>) -> Criterion {
        Criterion { id: id.into(), description: format!("criterion {id}"), weight }
    }

    #[test]
    fn criteria_are_weighted_and_clamped() {
        let criteria = [criterion("a", Some(3.0)), criterion("b", None)];
        let verdict = json::parse(r#"{"rewards": {"a": 1, "b": 7}, "reward": 0.1, "reason": "ok"}"#).unwrap().value;
        assert_eq!(
            json::canonical(&score(&verdict, &criteria)),
            r#"{"grader":"rubric","reason":"ok","reward":1.0,"rewards":{"a":1.0,"b":1.0}}"#
        );
        let verdict = json::parse(r#"{"rewards": {"a": 0}}"#).unwrap().value;
        assert_eq!(json::canonical(&score(&verdict, &criteria).get("reward").cloned().unwrap()), "0.0");
        let bare = json::parse(r#"{"reward": 0.25}"#).unwrap().value;
        assert_eq!(json::canonical(&score(&bare, &[]).get("reward").cloned().unwrap()), "0.25");
    }

    #[test]
    fn the_object_is_found_inside_prose() {
        assert!(extract_object("Here:\n```json\n{\"reward\": 1}\n```").is_some());
        assert!(extract_object("no json").is_none());
    }
}

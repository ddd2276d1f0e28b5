//! The built-in model runner (beyond the original): an OpenAI-compatible
//! chat-completions tool-calling loop over a task's tools. The model gets the
//! task's instruction and the tools (JSON-schema functions from the session's tool
//! descriptors); each tool call it makes is answered by the session; the loop ends
//! when it answers without calling a tool, or at `--max-turns`.
//!
//! Where the model is: `--base-url` / `GATEWAY_MODEL_BASE_URL` (key: `--api-key` /
//! `GATEWAY_MODEL_API_KEY`), else `OPENAI_BASE_URL` + `OPENAI_API_KEY`, else
//! `OPENROUTER_API_KEY` (OpenRouter), else `OPENAI_API_KEY` (OpenAI); which model:
//! `--model` / `GATEWAY_MODEL`. It does not grade, and it is not the rubric judge
//! (`gateway_judge`).

use crate::error::RunnerError;
use crate::outcome::Outcome;
use crate::world::Session;
use gateway_world::json::{self, object, Map, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The model endpoint's base URL (`…/v1`).
pub const BASE_URL_ENV: &str = "GATEWAY_MODEL_BASE_URL";
/// Its key.
pub const API_KEY_ENV: &str = "GATEWAY_MODEL_API_KEY";
/// The model.
pub const MODEL_ENV: &str = "GATEWAY_MODEL";
/// OpenRouter's OpenAI-compatible base.
pub const OPENROUTER: &str = "https://openrouter.ai/api/v1";
/// OpenAI's.
pub const OPENAI: &str = "https://api.openai.com/v1";
/// Turns a rollout gets by default.
pub const DEFAULT_MAX_TURNS: usize = 30;
/// Most of a tool answer shown to the model, in characters.
pub const TOOL_ANSWER_CHARS: usize = 32_000;

const SYSTEM: &str = "You are an agent working in a simulated service through its tools. \
Use the tools to complete the task. When the task is done, answer briefly with what you did, without calling a tool.";

/// Where the model is and which one.
#[derive(Clone)]
pub struct ModelConfig {
    /// The API base URL, without `/chat/completions`.
    pub base_url: String,
    /// The bearer key (empty for an endpoint that takes none).
    pub api_key: String,
    /// The model name.
    pub model: String,
    /// Turns (model calls) a rollout gets.
    pub max_turns: usize,
    http: reqwest::blocking::Client,
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("max_turns", &self.max_turns)
            .finish()
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl ModelConfig {
    /// The configuration from flags, then the environment.
    pub fn resolve(
        base_url: Option<&str>,
        api_key: Option<&str>,
        model: Option<&str>,
        max_turns: usize,
    ) -> Result<ModelConfig, RunnerError> {
        let flag_key = api_key.map(str::to_string).filter(|k| !k.is_empty());
        let (base_url, api_key) = match (base_url.map(str::to_string).filter(|b| !b.is_empty()).or_else(|| var(BASE_URL_ENV)), var("OPENAI_BASE_URL")) {
            (Some(base), _) => {
                (base, flag_key.or_else(|| var(API_KEY_ENV)).or_else(|| var("OPENAI_API_KEY")).or_else(|| var("OPENROUTER_API_KEY")).unwrap_or_default())
            }
            (None, Some(base)) => (base, flag_key.or_else(|| var("OPENAI_API_KEY")).unwrap_or_default()),
            (None, None) => match (var("OPENROUTER_API_KEY"), var("OPENAI_API_KEY")) {
                (Some(key), _) => (OPENROUTER.to_string(), flag_key.unwrap_or(key)),
                (None, Some(key)) => (OPENAI.to_string(), flag_key.unwrap_or(key)),
                (None, None) => {
                    return Err(RunnerError::Config(format!(
                        "the built-in model runner needs a model endpoint: set OPENROUTER_API_KEY, or OPENAI_API_KEY (and OPENAI_BASE_URL), or pass --base-url (or set {BASE_URL_ENV})"
                    )))
                }
            },
        };
        let model = model
            .map(str::to_string)
            .filter(|m| !m.is_empty())
            .or_else(|| var(MODEL_ENV))
            .ok_or_else(|| RunnerError::Config(format!("the built-in model runner needs a model: pass --model or set {MODEL_ENV}")))?;
        let http = reqwest::blocking::Client::builder().build().map_err(|e| RunnerError::Config(format!("HTTP client: {e}")))?;
        Ok(ModelConfig { base_url: base_url.trim_end_matches('/').to_string(), api_key, model, max_turns: max_turns.max(1), http })
    }
}

/// A tool name as OpenAI-compatible APIs take it (the original's `model_tool_name`).
pub fn model_tool_name(name: &str) -> String {
    let alias: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).take(64).collect();
    if alias.is_empty() {
        "tool".into()
    } else {
        alias
    }
}

/// The session's tools as chat-completions function tools, and alias → tool name.
fn function_tools(descriptors: &Value) -> (Vec<Value>, HashMap<String, String>) {
    let mut tools = Vec::new();
    let mut names = HashMap::new();
    for descriptor in descriptors.as_array().into_iter().flatten() {
        let Some(name) = descriptor.get("name").and_then(Value::as_str) else { continue };
        let alias = model_tool_name(name);
        if names.contains_key(&alias) {
            continue;
        }
        names.insert(alias.clone(), name.to_string());
        let description = descriptor.get("doc").and_then(Value::as_str).unwrap_or(name);
        let signature = descriptor.get("signature").and_then(Value::as_str).unwrap_or(name);
        tools.push(object([
            ("type", Value::str("function")),
            (
                "function",
                object([
                    ("name", Value::Str(alias)),
                    ("description", Value::Str(format!("{signature}: {description}"))),
                    ("parameters", descriptor.get("inputSchema").cloned().unwrap_or_else(|| object([("type", Value::str("object"))]))),
                ]),
            ),
        ]));
    }
    (tools, names)
}

const JSON: json::DumpOptions = json::DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false };

/// One chat-completions call, retried on 429, 5xx and transport errors while
/// time remains: the response's first message.
fn chat(config: &ModelConfig, body: &Value, deadline: Instant, usage: &mut Map) -> Result<Value, String> {
    let text = json::dumps(body, JSON);
    let mut last = String::new();
    for attempt in 0..4u32 {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(format!("out of time waiting for the model{}", if last.is_empty() { String::new() } else { format!(" ({last})") }));
        }
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(500 * 2u64.pow(attempt)).min(remaining));
        }
        let mut request = config
            .http
            .post(format!("{}/chat/completions", config.base_url))
            .header("content-type", "application/json")
            .timeout(remaining.min(Duration::from_secs(300)))
            .body(text.clone());
        if !config.api_key.is_empty() {
            request = request.bearer_auth(&config.api_key);
        }
        let response = match request.send() {
            Ok(response) => response,
            Err(error) => {
                last = format!("the model endpoint could not be reached: {error}");
                continue;
            }
        };
        let status = response.status();
        let answer = response.text().unwrap_or_default();
        if status.as_u16() == 429 || status.is_server_error() {
            last = format!("the model endpoint answered {status}: {}", answer.chars().take(300).collect::<String>());
            continue;
        }
        if !status.is_success() {
            return Err(format!("the model endpoint answered {status}: {}", answer.chars().take(400).collect::<String>()));
        }
        let parsed =
            json::parse_loads(&answer).map_err(|e| format!("the model endpoint answered something that is not JSON ({e:?})"))?.value;
        for (key, value) in parsed.get("usage").and_then(Value::as_object).into_iter().flatten() {
            if let Value::Int(n) = value {
                let total = usage.get(key).and_then(Value::as_f64).unwrap_or(0.0) as i64 + n;
                usage.insert(key.clone(), Value::Int(total));
            }
        }
        return parsed
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .and_then(|c| c.get("message"))
            .cloned()
            .ok_or_else(|| format!("the model's answer has no choices[0].message: {}", answer.chars().take(300).collect::<String>()));
    }
    Err(last)
}

/// Answer one tool call of the model: the tool message's content.
fn run_tool(session: &Session<'_>, names: &HashMap<String, String>, call: &Value) -> String {
    let function = call.get("function");
    let alias = function.and_then(|f| f.get("name")).and_then(Value::as_str).unwrap_or_default();
    let Some(tool) = names.get(alias) else {
        let mut known: Vec<&String> = names.keys().collect();
        known.sort();
        return format!(
            "error: there is no tool named '{alias}'; the tools are {}",
            known.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        );
    };
    let raw = function.and_then(|f| f.get("arguments"));
    let args = match raw {
        None | Some(Value::Null) => Value::Object(Map::default()),
        Some(Value::Str(text)) if text.trim().is_empty() => Value::Object(Map::default()),
        Some(Value::Str(text)) => match json::parse_loads(text) {
            Ok(parsed) => parsed.value,
            Err(_) => return format!("error: the arguments are not JSON: {text}"),
        },
        Some(other) => other.clone(),
    };
    if args.as_object().is_none() {
        return "error: the arguments must be a JSON object".into();
    }
    match session.call(tool, &args) {
        Ok(answer) => json::dumps(&answer, JSON).chars().take(TOOL_ANSWER_CHARS).collect(),
        Err(error) => format!("error: {error}"),
    }
}

/// Run the loop on `session` within `budget`.
pub fn act(config: &ModelConfig, session: &Session<'_>, budget: Duration) -> Outcome {
    let deadline = Instant::now() + budget;
    let (tools, names) = function_tools(&session.tools());
    let mut messages = vec![
        object([("role", Value::str("system")), ("content", Value::str(SYSTEM))]),
        object([("role", Value::str("user")), ("content", Value::str(&session.task.instruction))]),
    ];
    let mut usage = Map::default();
    let mut completion = None;
    let mut error = None;
    let mut harness = false;
    let mut turns = 0;
    loop {
        if turns == config.max_turns {
            error = Some(format!("the model did not finish within {} turns", config.max_turns));
            break;
        }
        turns += 1;
        let mut body = object([("model", Value::str(&config.model)), ("messages", Value::Array(messages.clone()))]);
        if let (Value::Object(fields), false) = (&mut body, tools.is_empty()) {
            fields.insert("tools".into(), Value::Array(tools.clone()));
            fields.insert("tool_choice".into(), Value::str("auto"));
        }
        let message = match chat(config, &body, deadline, &mut usage) {
            Ok(message) => message,
            Err(failure) => {
                // The model could not be asked (unreachable, failing, refusing the key):
                // nothing of the agent was measured.
                error = Some(failure);
                harness = true;
                break;
            }
        };
        let content = message.get("content").and_then(Value::as_str).map(str::to_string);
        let calls: Vec<Value> = message.get("tool_calls").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut said = object([("role", Value::str("assistant")), ("content", content.clone().map(Value::Str).unwrap_or_default())]);
        if let (Value::Object(fields), false) = (&mut said, calls.is_empty()) {
            fields.insert("tool_calls".into(), Value::Array(calls.clone()));
        }
        messages.push(said);
        if calls.is_empty() {
            completion = content;
            break;
        }
        for call in &calls {
            let answer = run_tool(session, &names, call);
            messages.push(object([
                ("role", Value::str("tool")),
                ("tool_call_id", call.get("id").cloned().unwrap_or_default()),
                ("content", Value::Str(answer)),
            ]));
        }
    }
    let transcript = object([
        ("model", Value::str(&config.model)),
        ("turns", Value::Int(turns as i64)),
        ("usage", Value::Object(usage)),
        ("messages", Value::Array(messages)),
    ]);
    Outcome { completion, error, transcript: Some(transcript), harness, ..Outcome::default() }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tool_names_are_aliased_as_the_original() {
        assert_eq!(super::model_tool_name("crm.update:deal"), "crm_update_deal");
        assert_eq!(super::model_tool_name(""), "tool");
        assert_eq!(super::model_tool_name(&"x".repeat(70)).len(), 64);
    }
}

//! The client of the environment API (spec §7: `/api/public/environments`,
//! `/api/public/task-sets`, `/api/public/environment-agent`): the original's
//! `GatewayEnvironmentClient`, speaking the same requests (method, URL-quoting, query,
//! headers, JSON body and member order), and reading each answer as its pydantic model
//! does — required members checked, values coerced the way pydantic's lax mode coerces
//! them (`1` → `1.0` for a float, `"3"` → `3` for an int, `"yes"` → `true` …), then
//! dumped as `model_dump()` dumps: the declared members in declaration order (absent
//! optional ones as `null`), then the extra members as they came. So what the CLI
//! prints is what the original prints for the same answer.
//!
//! Also here: the multi-request flows of `environment link-task-set` (with the notes
//! it writes to stderr, handed to a callback) and the verdict wait of `environment
//! run`. It is not the server side of these endpoints (`server/environments.rs`),
//! files no evaluations, and parses no command line (that is `gateway-cli`).

use crate::client::truthy;
use crate::transport::{Cause, Dialect, Missing, Transport};
use crate::ClientError;
use gateway_common::url::quote;
use gateway_common::url::quote_plus;
use gateway_world::json::{self, object, python_str, DumpOptions, Map, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Per-request timeout of the original's urllib calls.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The original's `_get` / `_post`: a transport failure with its causes; an answer that
/// is not JSON named so.
const DIALECT: Dialect = Dialect { cause: Cause::Chain, not_json: "the answer is not JSON", ..Dialect::URLLIB };
/// The longest server-side wait one run-status request asks for.
pub const MAX_WAIT_SECONDS: i64 = 50;
/// The budget `environment run` gives each run-status request while it waits.
const RUN_POLL_BUDGET: f64 = 45.0;

type Result<T> = std::result::Result<T, ClientError>;

fn fail(message: impl Into<String>) -> ClientError {
    ClientError::Failed(message.into())
}

// ------------------------------------------------------------------ models

/// A member's type, as the pydantic models declare it.
#[derive(Debug, Clone, Copy)]
enum Ty {
    Str,
    Int,
    Float,
    Bool,
    Any,
    StrList,
    Model(&'static Model),
    Models(&'static Model),
}

/// What an absent member becomes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Absent {
    /// Required: absent is an error.
    Required,
    /// `Optional[…] = None`: absent (or null) is `null`.
    Null,
    /// `List[str] = []`: absent is `[]` (null is still an error).
    EmptyList,
}

#[derive(Debug)]
struct Field {
    name: &'static str,
    ty: Ty,
    absent: Absent,
}

/// A pydantic model: its name and its fields in declaration order.
#[derive(Debug)]
struct Model {
    name: &'static str,
    fields: &'static [Field],
}

const fn req(name: &'static str, ty: Ty) -> Field {
    Field { name, ty, absent: Absent::Required }
}

const fn opt(name: &'static str, ty: Ty) -> Field {
    Field { name, ty, absent: Absent::Null }
}

static ENVIRONMENT_SUMMARY: Model = Model {
    name: "EnvironmentSummary",
    fields: &[
        req("id", Ty::Str),
        req("slug", Ty::Str),
        req("name", Ty::Str),
        opt("description", Ty::Str),
        opt("taskSetDatasetId", Ty::Str),
        req("versionCount", Ty::Int),
        opt("latestVersion", Ty::Str),
    ],
};
static ENVIRONMENT_LIST: Model = Model { name: "EnvironmentList", fields: &[req("environments", Ty::Models(&ENVIRONMENT_SUMMARY))] };
static ENVIRONMENT_VERSION: Model = Model {
    name: "EnvironmentVersion",
    fields: &[
        req("versionId", Ty::Str),
        req("contentHash", Ty::Str),
        opt("semanticVersion", Ty::Str),
        req("state", Ty::Str),
        opt("author", Ty::Str),
        opt("changeReason", Ty::Str),
        opt("envKind", Ty::Str),
        opt("imageRef", Ty::Str),
        req("createdAt", Ty::Str),
    ],
};
static ENVIRONMENT: Model = Model {
    name: "Environment",
    fields: &[
        req("id", Ty::Str),
        req("slug", Ty::Str),
        req("name", Ty::Str),
        opt("description", Ty::Str),
        Field { name: "tags", ty: Ty::StrList, absent: Absent::EmptyList },
        req("visibility", Ty::Str),
        opt("taskSetDatasetId", Ty::Str),
        req("evaluationCount", Ty::Int),
        req("versions", Ty::Models(&ENVIRONMENT_VERSION)),
    ],
};
static TASK: Model = Model {
    name: "Task",
    fields: &[
        req("id", Ty::Str),
        req("name", Ty::Str),
        req("prompt", Ty::Str),
        req("kind", Ty::Str),
        opt("expectedOutput", Ty::Any),
        opt("metadata", Ty::Any),
    ],
};
static TASK_SET: Model = Model {
    name: "TaskSet",
    fields: &[req("datasetId", Ty::Str), req("name", Ty::Str), opt("description", Ty::Str), req("tasks", Ty::Models(&TASK))],
};
static TASK_PERFORMANCE_VERSION: Model = Model {
    name: "TaskPerformanceVersion",
    fields: &[
        req("containerVersionId", Ty::Str),
        req("contentHash", Ty::Str),
        opt("semanticVersion", Ty::Str),
        opt("author", Ty::Str),
        opt("changeReason", Ty::Str),
        req("createdAt", Ty::Str),
        opt("avgReward", Ty::Float),
        req("sampleCount", Ty::Int),
        req("nullScoreCount", Ty::Int),
    ],
};
static TASK_PERFORMANCE: Model = Model {
    name: "TaskPerformance",
    fields: &[
        req("task", Ty::Str),
        req("sampleCount", Ty::Int),
        req("nullScoreCount", Ty::Int),
        opt("avgReward", Ty::Float),
        opt("avgScore", Ty::Float),
        opt("passRate", Ty::Float),
        opt("rewardStddev", Ty::Float),
        req("perVersion", Ty::Models(&TASK_PERFORMANCE_VERSION)),
    ],
};
static PERFORMANCE: Model = Model {
    name: "Performance",
    fields: &[req("tasks", Ty::Models(&TASK_PERFORMANCE)), req("totalSamples", Ty::Int), req("totalNullScoreSamples", Ty::Int)],
};
static ROLLOUT: Model = Model {
    name: "Rollout",
    fields: &[
        req("id", Ty::Str),
        opt("model", Ty::Str),
        req("status", Ty::Str),
        req("createdAt", Ty::Str),
        opt("startedAt", Ty::Str),
        opt("completedAt", Ty::Str),
        opt("numExamples", Ty::Int),
        opt("rolloutsPerExample", Ty::Int),
        req("containerVersionId", Ty::Str),
        req("versionHash", Ty::Str),
        opt("semanticVersion", Ty::Str),
        opt("metrics", Ty::Any),
        opt("cost", Ty::Any),
        req("sampleCount", Ty::Int),
    ],
};
static ROLLOUT_LIST: Model = Model { name: "RolloutList", fields: &[req("rollouts", Ty::Models(&ROLLOUT))] };
static ROLLOUT_SAMPLE: Model = Model {
    name: "RolloutSample",
    fields: &[
        req("id", Ty::Str),
        opt("exampleId", Ty::Str),
        opt("task", Ty::Str),
        req("rolloutIndex", Ty::Int),
        opt("reward", Ty::Float),
        opt("score", Ty::Float),
        opt("correct", Ty::Bool),
        opt("rewards", Ty::Any),
        opt("info", Ty::Any),
    ],
};
static ROLLOUT_SAMPLES: Model =
    Model { name: "RolloutSamples", fields: &[req("evaluationId", Ty::Str), req("samples", Ty::Models(&ROLLOUT_SAMPLE))] };
static CREATED_TASK: Model = Model { name: "CreatedTask", fields: &[req("id", Ty::Str), req("datasetId", Ty::Str), req("name", Ty::Str)] };
static CREATED_TASK_SET: Model = Model { name: "CreatedTaskSet", fields: &[req("datasetId", Ty::Str), req("name", Ty::Str)] };
static TASK_SET_LINK: Model = Model { name: "TaskSetLink", fields: &[req("containerId", Ty::Str), opt("taskSetDatasetId", Ty::Str)] };
static UPDATED_TASK: Model =
    Model { name: "UpdatedTask", fields: &[req("taskId", Ty::Str), req("validFrom", Ty::Str), opt("changeReason", Ty::Str)] };
static RUN_RESULT: Model =
    Model { name: "RunResult", fields: &[req("model", Ty::Str), req("runId", Ty::Str), req("ok", Ty::Bool), opt("error", Ty::Str)] };
static RUN_DISPATCH: Model = Model {
    name: "RunDispatch",
    fields: &[req("runConfigId", Ty::Str), req("versionLabel", Ty::Str), req("runs", Ty::Models(&RUN_RESULT))],
};
static ENV_RUN_ROLLOUT: Model = Model {
    name: "EnvRunRollout",
    fields: &[opt("task", Ty::Str), opt("reward", Ty::Float), opt("verifiers", Ty::Any), opt("modelSaid", Ty::Str)],
};
static ENV_RUN: Model = Model {
    name: "EnvRun",
    fields: &[
        req("status", Ty::Str),
        opt("avgReward", Ty::Float),
        opt("summary", Ty::Str),
        req("settled", Ty::Bool),
        req("rollouts", Ty::Models(&ENV_RUN_ROLLOUT)),
    ],
};
static AGENT_CONFIG: Model = Model {
    name: "AgentConfig",
    fields: &[
        req("id", Ty::Str),
        req("enabled", Ty::Bool),
        opt("cronExpression", Ty::Str),
        req("postEvalAnalysis", Ty::Bool),
        req("autoHeal", Ty::Bool),
        opt("prompt", Ty::Str),
        opt("model", Ty::Str),
    ],
};
static AGENT_RUN: Model = Model {
    name: "AgentRun",
    fields: &[
        req("id", Ty::Str),
        req("status", Ty::Str),
        req("triggerType", Ty::Str),
        req("createdAt", Ty::Str),
        opt("startedAt", Ty::Str),
        opt("completedAt", Ty::Str),
    ],
};
static AGENT_STATUS: Model =
    Model { name: "AgentStatus", fields: &[opt("config", Ty::Model(&AGENT_CONFIG)), req("runs", Ty::Models(&AGENT_RUN))] };
static AGENT_TRIGGER_RESULT: Model =
    Model { name: "AgentTriggerResult", fields: &[req("runId", Ty::Str), req("status", Ty::Str), req("triggerType", Ty::Str)] };

/// Where in an answer a check failed: `environments.0.versionCount`.
fn at(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// pydantic's lax `int`: integers, booleans, integral floats, and strings of those.
fn lax_int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18 => Some(*f as i64),
        Value::Str(text) => {
            let text = text.trim();
            text.parse::<i64>().ok().or_else(|| text.parse::<f64>().ok().and_then(|f| lax_int(&Value::Float(f))))
        }
        _ => None,
    }
}

/// pydantic's lax `float`: numbers, booleans and numeric strings (`nan`, `inf` too).
fn lax_float(value: &Value) -> Option<f64> {
    match value {
        Value::Int(n) => Some(*n as f64),
        Value::Float(f) => Some(*f),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Str(text) => text.trim().parse::<f64>().ok(),
        _ => None,
    }
}

/// pydantic's lax `bool`: booleans, 0/1, and the usual words.
fn lax_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Int(0) => Some(false),
        Value::Int(1) => Some(true),
        Value::Float(f) if *f == 0.0 => Some(false),
        Value::Float(f) if *f == 1.0 => Some(true),
        Value::Str(text) => match text.to_ascii_lowercase().as_str() {
            "0" | "off" | "f" | "false" | "n" | "no" => Some(false),
            "1" | "on" | "t" | "true" | "y" | "yes" => Some(true),
            _ => None,
        },
        _ => None,
    }
}

fn coerce(value: &Value, ty: Ty, path: &str) -> std::result::Result<Value, String> {
    let wrong = |expected: &str| Err(format!("{path}: Input should be {expected}"));
    match ty {
        Ty::Any => Ok(value.clone()),
        Ty::Str => match value {
            Value::Str(_) => Ok(value.clone()),
            _ => wrong("a valid string"),
        },
        Ty::Int => lax_int(value).map(Value::Int).map_or_else(|| wrong("a valid integer"), Ok),
        Ty::Float => lax_float(value).map(Value::Float).map_or_else(|| wrong("a valid number"), Ok),
        Ty::Bool => lax_bool(value).map(Value::Bool).map_or_else(|| wrong("a valid boolean"), Ok),
        Ty::StrList => match value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| coerce(item, Ty::Str, &at(path, &i.to_string())))
                .collect::<std::result::Result<_, _>>()
                .map(Value::Array),
            _ => wrong("a valid list"),
        },
        Ty::Model(model) => dump(model, value, path),
        Ty::Models(model) => match value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| dump(model, item, &at(path, &i.to_string())))
                .collect::<std::result::Result<_, _>>()
                .map(Value::Array),
            _ => wrong("a valid list"),
        },
    }
}

/// `Model.model_validate(value).model_dump()`.
fn dump(model: &Model, value: &Value, path: &str) -> std::result::Result<Value, String> {
    let Value::Object(map) = value else {
        return Err(format!(
            "{}: Input should be a valid dictionary or instance of {}",
            if path.is_empty() { model.name } else { path },
            model.name
        ));
    };
    let mut out = Map::default();
    for field in model.fields {
        let here = at(path, field.name);
        let dumped = match (map.get(field.name), field.absent) {
            (None, Absent::Required) => return Err(format!("{here}: Field required")),
            (None, Absent::Null) | (Some(Value::Null), Absent::Null) => Value::Null,
            (None, Absent::EmptyList) => Value::Array(Vec::new()),
            (Some(found), _) => coerce(found, field.ty, &here)?,
        };
        out.insert(field.name.into(), dumped);
    }
    for (key, found) in map {
        if !model.fields.iter().any(|f| f.name == key) {
            out.insert(key.clone(), found.clone());
        }
    }
    Ok(Value::Object(out))
}

/// Read an answer as `model`; a mismatch is pydantic's refusal, in one line.
fn read(model: &Model, answer: &Value) -> Result<Value> {
    dump(model, answer, "").map_err(|problem| ClientError::BadAnswer(format!("1 validation error for {}: {problem}", model.name)))
}

// ------------------------------------------------------------------ client

/// An authenticated client of the environment API.
#[derive(Debug, Clone)]
pub struct EnvironmentsClient {
    transport: Transport,
}

/// `environment link-task-set`'s options.
#[derive(Debug, Clone, Default)]
pub struct LinkOptions<'a> {
    /// `--tasks`: a JSONL file of `{id|task, prompt, metadata, worlds}` rows.
    pub tasks: Option<&'a Path>,
    /// `--name`: the new set's name (default `"<environment> scenarios"`).
    pub name: Option<&'a str>,
    /// `--description`.
    pub description: Option<&'a str>,
    /// `--fresh`: always create a new set.
    pub fresh: bool,
}

/// What one `run-status` request found: the verdict once settled.
#[derive(Debug, Clone)]
pub enum RunWait {
    /// Settled: the run's `EnvRun`, dumped.
    Settled(Value),
    /// Still running when the deadline came.
    StillRunning,
}

impl EnvironmentsClient {
    /// From `--host` (else `GATEWAY_HOST`) and the key pair in the environment, with the
    /// original's refusals.
    pub fn from_env(host: Option<&str>) -> Result<EnvironmentsClient> {
        Ok(EnvironmentsClient { transport: Transport::from_env(host, Missing::TERSE, REQUEST_TIMEOUT)? })
    }

    /// `_get` / `_post`: Authorization on both, `Content-Type: application/json` and a
    /// `json.dumps` body on POST; a non-2xx answer is `"<METHOD> <path> -> <code>:
    /// <first 500 characters of the body>"`.
    pub(crate) fn request(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value> {
        self.transport.call(&DIALECT, method, path, body)
    }

    fn get(&self, model: &Model, path: &str) -> Result<Value> {
        read(model, &self.request(reqwest::Method::GET, path, None)?)
    }

    fn post(&self, model: &Model, path: &str, body: Value) -> Result<Value> {
        read(model, &self.request(reqwest::Method::POST, path, Some(&body))?)
    }

    /// `list_environments`: `GET /api/public/environments?limit=N[&slug=S]`.
    pub fn list_environments(&self, slug: Option<&str>, limit: i64) -> Result<Value> {
        let mut query = format!("limit={limit}");
        if let Some(slug) = slug.filter(|s| !s.is_empty()) {
            query.push_str(&format!("&slug={}", quote_plus(slug)));
        }
        self.get(&ENVIRONMENT_LIST, &format!("/api/public/environments?{query}"))
    }

    /// `get_environment`: `GET /api/public/environments/{cid}`.
    pub fn get_environment(&self, container_id: &str) -> Result<Value> {
        self.get(&ENVIRONMENT, &environment_path(container_id, ""))
    }

    /// `get_task_set`: `GET /api/public/environments/{cid}/task-set` (404 when none is linked).
    pub fn get_task_set(&self, container_id: &str) -> Result<Value> {
        self.get(&TASK_SET, &environment_path(container_id, "/task-set"))
    }

    /// `get_performance`: `GET /api/public/environments/{cid}/performance`.
    pub fn get_performance(&self, container_id: &str) -> Result<Value> {
        self.get(&PERFORMANCE, &environment_path(container_id, "/performance"))
    }

    /// `list_rollouts`: `GET /api/public/environments/{cid}/rollouts`.
    pub fn list_rollouts(&self, container_id: &str) -> Result<Value> {
        self.get(&ROLLOUT_LIST, &environment_path(container_id, "/rollouts"))
    }

    /// `get_rollout_samples`: `GET /api/public/environments/{cid}/rollouts/{eid}/samples?limit=N`.
    pub fn get_rollout_samples(&self, container_id: &str, evaluation_id: &str, limit: i64) -> Result<Value> {
        let suffix = format!("/rollouts/{}/samples?limit={limit}", quote(evaluation_id, ""));
        self.get(&ROLLOUT_SAMPLES, &environment_path(container_id, &suffix))
    }

    /// `create_task`: `POST /api/public/task-sets/{did}/tasks` with `{name, prompt,
    /// expectedOutput?, metadata?}`.
    pub fn create_task(
        &self,
        dataset_id: &str,
        name: &str,
        prompt: &str,
        expected: Option<&Value>,
        metadata: Option<&Value>,
    ) -> Result<Value> {
        let mut body = Map::default();
        body.insert("name".into(), Value::str(name));
        body.insert("prompt".into(), Value::str(prompt));
        if let Some(expected) = expected.filter(|e| !matches!(e, Value::Null)) {
            body.insert("expectedOutput".into(), expected.clone());
        }
        if let Some(metadata) = metadata.filter(|m| !matches!(m, Value::Null)) {
            body.insert("metadata".into(), metadata.clone());
        }
        self.post(&CREATED_TASK, &format!("/api/public/task-sets/{}/tasks", quote(dataset_id, "")), Value::Object(body))
    }

    /// `update_task`: `POST /api/public/task-sets/{did}/tasks/{tid}` with `{changeReason,
    /// prompt?, expectedOutput?}` (SDK only).
    pub fn update_task(
        &self,
        dataset_id: &str,
        task_id: &str,
        change_reason: &str,
        prompt: Option<&str>,
        expected: Option<&str>,
    ) -> Result<Value> {
        let mut body = Map::default();
        body.insert("changeReason".into(), Value::str(change_reason));
        if let Some(prompt) = prompt {
            body.insert("prompt".into(), Value::str(prompt));
        }
        if let Some(expected) = expected {
            body.insert("expectedOutput".into(), Value::str(expected));
        }
        let path = format!("/api/public/task-sets/{}/tasks/{}", quote(dataset_id, ""), quote(task_id, ""));
        self.post(&UPDATED_TASK, &path, Value::Object(body))
    }

    /// `create_task_set`: `POST /api/public/task-sets` with `{name, description?}`.
    pub fn create_task_set(&self, name: &str, description: Option<&str>) -> Result<Value> {
        let mut body = Map::default();
        body.insert("name".into(), Value::str(name));
        if let Some(description) = description {
            body.insert("description".into(), Value::str(description));
        }
        self.post(&CREATED_TASK_SET, "/api/public/task-sets", Value::Object(body))
    }

    /// `link_task_set`: `POST /api/public/environments/{cid}/task-set` with
    /// `{taskSetDatasetId}` (null detaches).
    pub fn link_task_set(&self, container_id: &str, dataset_id: Option<&str>) -> Result<Value> {
        let body = object([("taskSetDatasetId", dataset_id.map(Value::str).unwrap_or_default())]);
        self.post(&TASK_SET_LINK, &environment_path(container_id, "/task-set"), body)
    }

    /// `get_run`: `GET /api/public/environments/runs/{id}[?waitSeconds=N]` (N clamped to 0..=50).
    pub fn get_run(&self, run_id: &str, wait_seconds: i64) -> Result<Value> {
        let wait = wait_seconds.clamp(0, MAX_WAIT_SECONDS);
        let suffix = if wait > 0 { format!("?waitSeconds={wait}") } else { String::new() };
        self.get(&ENV_RUN, &format!("/api/public/environments/runs/{}{suffix}", quote(run_id, "")))
    }

    /// `run_evaluation`: `POST /api/public/environments/{cid}/run` with `{models,
    /// versionId?, numExamples?, rolloutsPerExample?}`.
    pub fn run_evaluation(
        &self,
        container_id: &str,
        models: &[String],
        version_id: Option<&str>,
        num_examples: Option<i64>,
        rollouts: Option<i64>,
    ) -> Result<Value> {
        let mut body = Map::default();
        body.insert("models".into(), Value::Array(models.iter().map(|m| Value::str(m.clone())).collect()));
        if let Some(version_id) = version_id {
            body.insert("versionId".into(), Value::str(version_id));
        }
        if let Some(n) = num_examples {
            body.insert("numExamples".into(), Value::Int(n));
        }
        if let Some(k) = rollouts {
            body.insert("rolloutsPerExample".into(), Value::Int(k));
        }
        self.post(&RUN_DISPATCH, &environment_path(container_id, "/run"), Value::Object(body))
    }

    /// `get_agent`: `GET /api/public/environment-agent`.
    pub fn get_agent(&self) -> Result<Value> {
        self.get(&AGENT_STATUS, "/api/public/environment-agent")
    }

    /// `trigger_agent`: `POST /api/public/environment-agent/trigger` with `{}`.
    pub fn trigger_agent(&self) -> Result<Value> {
        self.post(&AGENT_TRIGGER_RESULT, "/api/public/environment-agent/trigger", Value::Object(Map::default()))
    }

    /// `_resolve_environment_id`: the id of the listed environment whose slug is
    /// `reference` (`?slug=<ref>&limit=5`), else `reference` itself.
    pub fn resolve_environment_id(&self, reference: &str) -> Result<String> {
        let listing = self.list_environments(Some(reference), 5)?;
        let found = listing
            .get("environments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|env| env.get("slug").and_then(Value::as_str) == Some(reference))
            .and_then(|env| env.get("id").and_then(Value::as_str).map(str::to_string));
        Ok(found.unwrap_or_else(|| reference.to_string()))
    }

    /// `environment link-task-set` without `--detach`: reuse the linked set (unless
    /// `fresh`) or create one, create the `--tasks` rows whose names it lacks, link it.
    /// `note` gets the lines the original writes to stderr; the link is returned.
    pub fn fill_and_link(
        &self,
        environment: &str,
        container_id: &str,
        options: &LinkOptions<'_>,
        note: &mut dyn FnMut(&str),
    ) -> Result<Value> {
        let mut existing: Vec<String> = Vec::new();
        let mut dataset_id: Option<String> = None;
        if !options.fresh {
            // The original treats any failure here as "no linked set".
            if let Ok(current) = self.get_task_set(container_id) {
                let id = current.get("datasetId").and_then(Value::as_str).unwrap_or_default().to_string();
                existing = current
                    .get("tasks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
                    .collect();
                note(&format!("# reusing linked task set {id}"));
                dataset_id = Some(id);
            }
        }
        let dataset_id = match dataset_id {
            Some(id) => id,
            None => {
                let set_name = options.name.map(str::to_string).unwrap_or_else(|| format!("{environment} scenarios"));
                let created = self.create_task_set(&set_name, options.description)?;
                let id = created.get("datasetId").and_then(Value::as_str).unwrap_or_default().to_string();
                note(&format!("# created task set {id} ({set_name})"));
                id
            }
        };
        if let Some(path) = options.tasks {
            let text = std::fs::read_to_string(path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
            for line in python_lines(&text) {
                if line.trim().is_empty() {
                    continue;
                }
                let row =
                    json::parse_loads(line).map_err(|e| fail(format!("{}: a line is not JSON ({e:?}): {line}", path.display())))?.value;
                let Value::Object(row) = row else {
                    return Err(fail(format!("{}: a row is not a JSON object: {line}", path.display())));
                };
                let member = |key: &str| row.get(key).filter(|v| truthy(v));
                let task_name = member("id").or_else(|| member("task")).map(python_str).unwrap_or_default();
                if task_name.is_empty() || existing.contains(&task_name) {
                    continue;
                }
                let mut metadata = match member("metadata") {
                    None => Map::default(),
                    Some(Value::Object(map)) => map.clone(),
                    Some(_) => return Err(fail(format!("{}: task {task_name}: 'metadata' is not an object", path.display()))),
                };
                if let Some(worlds) = row.get("worlds").filter(|w| !matches!(w, Value::Null)) {
                    metadata.insert("worlds".into(), worlds.clone());
                }
                let prompt = member("prompt").map(python_str).unwrap_or_default();
                let metadata = (!metadata.is_empty()).then_some(Value::Object(metadata));
                self.create_task(&dataset_id, &task_name, &prompt, None, metadata.as_ref())?;
                note(&format!("# task {task_name} created"));
            }
        }
        self.link_task_set(container_id, Some(&dataset_id))
    }

    /// One step of `environment run`'s wait: ask for the run's verdict with a
    /// server-side budget of at most 45 s (never past `deadline`), until it settles or
    /// the deadline passes.
    pub fn wait_for_run(&self, run_id: &str, deadline: Instant) -> Result<RunWait> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now()).as_secs_f64();
            let budget = left.clamp(0.0, RUN_POLL_BUDGET) as i64;
            let verdict = self.get_run(run_id, budget)?;
            if verdict.get("settled").is_some_and(truthy) {
                return Ok(RunWait::Settled(verdict));
            }
            if Instant::now() >= deadline {
                return Ok(RunWait::StillRunning);
            }
        }
    }
}

/// `/api/public/environments/{quoted cid}{suffix}`.
pub(crate) fn environment_path(container_id: &str, suffix: &str) -> String {
    format!("/api/public/environments/{}{suffix}", quote(container_id, ""))
}

/// `str.splitlines()`: lines split at `\n`, `\r\n`, `\r` and the other Unicode breaks.
fn python_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}') {
            lines.push(&text[start..i]);
            let mut end = i + c.len_utf8();
            if c == '\r' {
                if let Some(&(j, '\n')) = chars.peek() {
                    chars.next();
                    end = j + 1;
                }
            }
            start = end;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// The lines `environment run` prints for a settled verdict: `<model>: <status>
/// avgReward=<r>`, then `  <task>: <reward> <verifiers as JSON>` per rollout; and
/// whether it counts as passed (status COMPLETED or SUCCEEDED, any case).
pub fn verdict_lines(model: &str, verdict: &Value) -> (Vec<String>, bool) {
    let member = |v: &Value, key: &str| python_str(v.get(key).unwrap_or(&Value::Null));
    let status = verdict.get("status").and_then(Value::as_str).unwrap_or_default();
    let mut lines = vec![format!("{model}: {status} avgReward={}", member(verdict, "avgReward"))];
    for rollout in verdict.get("rollouts").and_then(Value::as_array).into_iter().flatten() {
        let verifiers = json::dumps(
            rollout.get("verifiers").unwrap_or(&Value::Null),
            DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false },
        );
        lines.push(format!("  {}: {} {verifiers}", member(rollout, "task"), member(rollout, "reward")));
    }
    let passed = matches!(status.to_uppercase().as_str(), "COMPLETED" | "SUCCEEDED");
    (lines, passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Value {
        json::parse(text).unwrap().value
    }

    #[test]
    fn dumps_like_pydantic() {
        let answer = parsed(r#"{"zzz": 1, "versionCount": "3", "slug": "s", "id": "i", "name": "n", "extra2": [1]}"#);
        let dumped = dump(&ENVIRONMENT_SUMMARY, &answer, "").unwrap();
        assert_eq!(
            json::dumps(&dumped, DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false }),
            r#"{"id": "i", "slug": "s", "name": "n", "description": null, "taskSetDatasetId": null, "versionCount": 3, "latestVersion": null, "zzz": 1, "extra2": [1]}"#
        );
        let env = parsed(r#"{"id": "i", "slug": "s", "name": "n", "visibility": "PRIVATE", "evaluationCount": 2.0, "versions": []}"#);
        assert_eq!(json::canonical(&dump(&ENVIRONMENT, &env, "").unwrap().get("tags").cloned().unwrap()), "[]");
        let sample = parsed(r#"{"id": "x", "rolloutIndex": true, "reward": 1, "correct": "yes"}"#);
        let sample = dump(&ROLLOUT_SAMPLE, &sample, "").unwrap();
        assert_eq!(
            json::canonical(&sample),
            r#"{"correct":true,"exampleId":null,"id":"x","info":null,"reward":1.0,"rewards":null,"rolloutIndex":1,"score":null,"task":null}"#
        );
        let bad = parsed(r#"{"environments": [{"id": 1}]}"#);
        assert_eq!(
            read(&ENVIRONMENT_LIST, &bad).unwrap_err().to_string(),
            "1 validation error for EnvironmentList: environments.0.id: Input should be a valid string"
        );
        let missing = parsed(r#"{"environments": [{"id": "i", "slug": "s", "name": "n", "versionCount": 2.5}]}"#);
        assert!(read(&ENVIRONMENT_LIST, &missing).unwrap_err().to_string().contains("versionCount: Input should be a valid integer"));
    }

    #[test]
    fn verdicts_print_like_python() {
        let verdict = parsed(
            r#"{"status": "completed", "avgReward": 0.5, "settled": true, "rollouts": [{"task": null, "reward": 1.0, "verifiers": {"a": "é"}}]}"#,
        );
        let (lines, passed) = verdict_lines("m", &verdict);
        assert_eq!(lines, vec!["m: completed avgReward=0.5".to_string(), "  None: 1.0 {\"a\": \"\\u00e9\"}".to_string()]);
        assert!(passed);
        let (lines, passed) = verdict_lines("m", &parsed(r#"{"status": "FAILED", "avgReward": null, "rollouts": []}"#));
        assert_eq!((lines, passed), (vec!["m: FAILED avgReward=None".to_string()], false));
    }

    #[test]
    fn splitlines() {
        assert_eq!(python_lines("a\r\nb\rc\n\nd"), vec!["a", "b", "c", "", "d"]);
        assert_eq!(python_lines("a\n"), vec!["a"]);
    }
}

//! The agents-platform client behind `gateway secret|agent|run|dataset|deploy|release`:
//! the original's `cli/http_client.py` (credentials from the flag, then the environment,
//! then `~/.gateway/config.json`; HTTP Basic; 30 s) and what its commands compute
//! besides printing — a dataset file read as the original reads it (JSON array,
//! `{tasks|items}`, JSONL) and its items checked against an agent's `taskInputSchema`
//! with Python `jsonschema`'s messages; the release gate's query, wait, table, step
//! summary and exit code (`cli/release_gate.py`).
//!
//! Every request answers its status and body: the commands branch on the status as the
//! original does (201 only, 409 then PUT, 404 → exit 2). The hub's routes are
//! `server/agents.rs`, `server/runs.rs` and `server/release.rs`.

use crate::client::truthy;
use crate::transport::{basic_auth, with_query, Cause, Transport, Unanswered};
use crate::ClientError;
use gateway_world::json::{self, python_repr, python_str, DumpOptions, Map, Value};
use reqwest::Method;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The states after which a run grades nothing further (`--wait` stops on them).
pub const TERMINAL_STATES: [&str; 5] = ["COMPLETED", "FAILED", "ERROR", "TIMEOUT", "CANCELLED"];
/// The gate route.
pub const GATE_PATH: &str = "/api/public/agent-builds/gate";

/// `~/.gateway/config.json`.
pub fn config_file() -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".gateway").join("config.json")
}

/// Host and key pair, resolved as `get_credentials` does.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The host.
    pub host: String,
    /// The public key.
    pub public_key: String,
    /// The secret key.
    pub secret_key: String,
}

impl Credentials {
    /// host = `--host` (its env var already applied by the caller), then `GATEWAY_HOST`,
    /// then the config's `host`; secret = `--api-key`, then `GATEWAY_SECRET_KEY`, then
    /// `api_key`; public = `GATEWAY_PUBLIC_KEY`, then `public_key`. A missing one is the
    /// original's message (the caller prints it and exits 1).
    pub fn resolve(host: Option<&str>, api_key: Option<&str>) -> Result<Credentials, String> {
        let path = config_file();
        let config = match std::fs::read_to_string(&path) {
            Ok(text) => match json::parse_loads(&text) {
                Ok(parsed) => parsed.value,
                Err(e) => {
                    return Err(format!("Error: {} is not valid JSON ({e:?}): fix or remove it (`gateway auth logout`).", path.display()))
                }
            },
            Err(_) => Value::Null,
        };
        let pick = |flag: Option<&str>, var: &str, key: &str| -> Option<String> {
            flag.filter(|v| !v.is_empty())
                .map(str::to_string)
                .or_else(|| std::env::var(var).ok().filter(|v| !v.is_empty()))
                .or_else(|| config.get(key).filter(|v| truthy(v)).map(python_str))
        };
        let host = pick(host, "GATEWAY_HOST", "host")
            .ok_or("Error: Host not configured. Use --host, set GATEWAY_HOST, or run `gateway auth login`.")?;
        let secret_key = pick(api_key, "GATEWAY_SECRET_KEY", "api_key")
            .ok_or("Error: Secret key not configured. Use --api-key, set GATEWAY_SECRET_KEY, or run `gateway auth login`.")?;
        let public_key = pick(None, "GATEWAY_PUBLIC_KEY", "public_key")
            .ok_or("Error: Public key not configured. Use --public-key, set GATEWAY_PUBLIC_KEY, or run `gateway auth login`.")?;
        Ok(Credentials { host, public_key, secret_key })
    }
}

/// A response: its status and body text.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The body.
    pub text: String,
}

impl Reply {
    /// The body as JSON (`None` when it is not).
    pub fn json(&self) -> Option<Value> {
        json::parse_loads(&self.text).ok().map(|p| p.value)
    }

    /// A member of the JSON body as Python's `str()` (`default` when absent).
    pub fn member(&self, key: &str, default: &str) -> String {
        match self.json().as_ref().and_then(|v| v.get(key)) {
            Some(value) => python_str(value),
            None => default.to_string(),
        }
    }
}

/// The httpx client of the original's platform commands.
#[derive(Debug, Clone)]
pub struct PlatformClient {
    transport: Transport,
}

impl PlatformClient {
    /// A client of `credentials.host` with a request timeout.
    pub fn new(credentials: &Credentials, timeout: Duration) -> Result<PlatformClient, ClientError> {
        let auth = basic_auth(&credentials.public_key, &credentials.secret_key);
        Ok(PlatformClient { transport: Transport::new(&credentials.host, auth, timeout)? })
    }

    /// The host requests go to.
    pub fn host(&self) -> &str {
        self.transport.host()
    }

    /// One request: `query` pairs are URL-encoded, `body` sent as JSON (httpx's compact,
    /// UTF-8 form); the answer whatever its status.
    pub fn request(&self, method: Method, path: &str, query: &[(&str, String)], body: Option<&Value>) -> Result<Reply, ClientError> {
        let body = body.map(|body| json::dumps(body, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: true }));
        let host = self.host();
        match self.transport.exchange(method, &with_query(path, query.iter().map(|(k, v)| (k, v))), body, false) {
            Ok((status, text)) => Ok(Reply { status: status.as_u16(), text }),
            Err(Unanswered::Send(e)) => {
                Err(ClientError::Unreachable(format!("Error connecting to {host}: {}", Cause::FirstWithoutUrl.tell(e))))
            }
            Err(Unanswered::Read(e)) => Err(ClientError::Unreachable(format!("Error reading the answer of {host}: {e}"))),
        }
    }

    /// `GET path`.
    pub fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Reply, ClientError> {
        self.request(Method::GET, path, query, None)
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Result<Reply, ClientError> {
        self.request(Method::POST, path, &[], Some(body))
    }

    /// `PUT path` with a JSON body.
    pub fn put(&self, path: &str, body: &Value) -> Result<Reply, ClientError> {
        self.request(Method::PUT, path, &[], Some(body))
    }

    /// `DELETE path`.
    pub fn delete(&self, path: &str) -> Result<Reply, ClientError> {
        self.request(Method::DELETE, path, &[], None)
    }
}

/// A path segment for a name the API takes in its path (`secrets/{name}`).
pub fn segment(name: &str) -> String {
    gateway_common::url::quote_segment(name)
}

// ------------------------------------------------------------------ Python formatting

/// `format(text, "<width")`: left-aligned, padded with spaces to `width` characters.
pub fn ljust(text: &str, width: usize) -> String {
    let n = text.chars().count();
    if n >= width {
        text.to_string()
    } else {
        format!("{text}{}", " ".repeat(width - n))
    }
}

/// `text[:n]` (by characters).
pub fn prefix(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}

/// `format(x, "g")`: six significant digits, trailing zeros dropped.
pub fn python_g(value: f64) -> String {
    if !value.is_finite() {
        return if value.is_nan() {
            "nan".into()
        } else if value > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{value:.5e}");
    let (mantissa, exponent) = sci.split_once('e').expect("exponent");
    let exponent: i32 = exponent.parse().expect("integer exponent");
    let trim = |text: String| -> String {
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        }
    };
    if (-4..6).contains(&exponent) {
        trim(format!("{value:.*}", (5 - exponent) as usize))
    } else {
        format!("{}e{}{:02}", trim(mantissa.to_string()), if exponent < 0 { '-' } else { '+' }, exponent.abs())
    }
}

/// `Path(text)` as Python prints it: `.` parts and repeated or trailing `/` dropped.
pub fn python_path(text: &str) -> String {
    gateway_world::snapshot::display_path(Path::new(text))
}

/// `Path(base) / name` as Python prints it.
pub fn python_join(base: &str, name: &str) -> String {
    match python_path(base).as_str() {
        "." => python_path(name),
        base => python_path(&format!("{base}/{name}")),
    }
}

// ------------------------------------------------------------------ datasets

/// Why a dataset file cannot be uploaded (nothing is sent).
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetFileError {
    /// No such file.
    NotFound,
    /// It could not be read, or is not UTF-8 text.
    Unreadable(String),
    /// It is not what the command reads: the message names the file and the place.
    Invalid(String),
    /// It holds no item.
    Empty,
}

/// The items of a dataset file, read as the original reads it: a `.json` file, or text
/// starting with `{` or `[`, is one JSON document — a list of items, or an object whose
/// `tasks` (else `items`) is that list; anything else is JSONL, one item per non-blank
/// line. Beyond the original, a JSONL file whose first item is an object (which the
/// original takes for one document and fails on) is read as JSONL.
pub fn read_dataset_items(path: &Path) -> Result<Vec<Value>, DatasetFileError> {
    if !path.exists() {
        return Err(DatasetFileError::NotFound);
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
    let bytes = std::fs::read(path).map_err(|e| DatasetFileError::Unreadable(format!("{name}: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| DatasetFileError::Unreadable(format!("{name} is not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))?;
    let raw = text.trim();
    let is_json_suffix = path.extension().is_some_and(|e| e == "json");
    let items = if is_json_suffix || raw.starts_with('{') || raw.starts_with('[') {
        match json::parse_loads(raw) {
            Ok(parsed) => document_items(&name, parsed.value)?,
            Err(error) if !is_json_suffix && raw.lines().filter(|l| !l.trim().is_empty()).count() > 1 => match jsonl_items(&name, raw) {
                Ok(items) => items,
                Err(_) => {
                    return Err(DatasetFileError::Invalid(format!("{name} is neither one JSON document ({}) nor JSONL", syntax(&error))))
                }
            },
            Err(error) => return Err(DatasetFileError::Invalid(format!("{name} is not valid JSON: {}", syntax(&error)))),
        }
    } else {
        jsonl_items(&name, raw)?
    };
    if items.is_empty() {
        return Err(DatasetFileError::Empty);
    }
    Ok(items)
}

fn syntax(error: &json::ParseError) -> String {
    match error {
        json::ParseError::Syntax(reason) => reason.clone(),
        json::ParseError::DuplicateKey(key) => format!("the member '{key}' is repeated"),
    }
}

fn document_items(name: &str, value: Value) -> Result<Vec<Value>, DatasetFileError> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Object(map) => {
            let (key, list) = match map.get("tasks").filter(|v| truthy(v)) {
                Some(tasks) => ("tasks", tasks.clone()),
                None => ("items", map.get("items").filter(|v| truthy(v)).cloned().unwrap_or(Value::Array(Vec::new()))),
            };
            match list {
                Value::Array(items) => Ok(items),
                other => Err(DatasetFileError::Invalid(format!("{name}: '{key}' must be a list of items, not {}", other.type_name()))),
            }
        }
        _ => Ok(Vec::new()),
    }
}

fn jsonl_items(name: &str, raw: &str) -> Result<Vec<Value>, DatasetFileError> {
    let mut items = Vec::new();
    for (i, line) in raw.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match json::parse_loads(line) {
            Ok(parsed) => items.push(parsed.value),
            Err(error) => return Err(DatasetFileError::Invalid(format!("{name} line {}: not valid JSON ({})", i + 1, syntax(&error)))),
        }
    }
    Ok(items)
}

/// Check `items` against an agent's `taskInputSchema` as `jsonschema.validate` does:
/// `Err` when the schema is not one; else one line per refused item,
/// `  [i/n] <name>: <message>` (the item's `name`, else `item <i>`), with the message
/// Python's `jsonschema` gives for the best-matching error.
pub fn validate_items(schema: &Value, items: &[Value]) -> Result<Vec<String>, String> {
    let schema = to_serde(schema);
    let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
    let mut lines = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let instance = to_serde(item);
        let errors: Vec<jsonschema::ValidationError> = validator.iter_errors(&instance).collect();
        // best_match: the greatest by (shallowest, then the greater path, then not a weak
        // keyword); the first of equals.
        let mut best: Option<(Relevance, &jsonschema::ValidationError)> = None;
        for error in &errors {
            let key = relevance(error);
            if best.as_ref().is_none_or(|(top, _)| key > *top) {
                best = Some((key, error));
            }
        }
        let best = best.map(|(_, error)| error);
        if let Some(error) = best {
            let name = match item {
                Value::Object(map) => map.get("name").map(python_str).unwrap_or_else(|| format!("item {i}")),
                _ => format!("item {i}"),
            };
            lines.push(format!("  [{}/{}] {name}: {}", i + 1, items.len(), python_message(error)));
        }
    }
    Ok(lines)
}

/// A place in an instance, ordered as Python orders a path's items.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Index(usize),
    Property(String),
}

/// Python `jsonschema`'s `relevance` key: `(-len(path), path, not weak)`.
type Relevance = (std::cmp::Reverse<usize>, Vec<Step>, bool);

fn relevance(error: &jsonschema::ValidationError) -> Relevance {
    use jsonschema::paths::LocationSegment;
    let path: Vec<Step> = error
        .instance_path()
        .iter()
        .map(|segment| match segment {
            LocationSegment::Property(name) => Step::Property(name.to_string()),
            LocationSegment::Index(index) => Step::Index(index),
        })
        .collect();
    (std::cmp::Reverse(path.len()), path, !weak(error.kind()))
}

fn weak(kind: &jsonschema::error::ValidationErrorKind) -> bool {
    use jsonschema::error::ValidationErrorKind as K;
    matches!(kind, K::AnyOf { .. } | K::OneOfNotValid { .. } | K::OneOfMultipleValid { .. })
}

fn to_serde(value: &Value) -> serde_json::Value {
    let text = json::dumps(value, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: true });
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

fn from_serde(value: &serde_json::Value) -> Value {
    json::parse_loads(&value.to_string()).map(|p| p.value).unwrap_or_default()
}

/// Python's `repr` of a serde value.
fn py(value: &serde_json::Value) -> String {
    python_repr(&from_serde(value))
}

/// The message Python's `jsonschema` gives for `error`.
fn python_message(error: &jsonschema::ValidationError) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let instance = py(error.instance());
    let text = |s: &str| python_repr(&Value::str(s));
    let sized = |limit: u64, none: &str, one: &str, other: &str| {
        format!(
            "{instance} {}",
            if limit == 0 && !none.is_empty() {
                none
            } else if limit == 1 && !one.is_empty() {
                one
            } else {
                other
            }
        )
    };
    match error.kind() {
        K::Required { property } => format!("{} is a required property", py(property)),
        K::Type { kind } => {
            let names: Vec<String> = match kind {
                TypeKind::Single(t) => vec![text(&t.to_string())],
                TypeKind::Multiple(set) => set.iter().map(|t| text(&t.to_string())).collect(),
            };
            format!("{instance} is not of type {}", names.join(", "))
        }
        K::Enum { options } => format!("{instance} is not one of {}", py(options)),
        K::Constant { expected_value } => format!("{} was expected", py(expected_value)),
        K::MinLength { limit } => sized(*limit, "", "should be non-empty", "is too short"),
        K::MaxLength { limit } => sized(*limit, "is expected to be empty", "", "is too long"),
        K::MinItems { limit } => sized(*limit, "", "should be non-empty", "is too short"),
        K::MaxItems { limit } => sized(*limit, "is expected to be empty", "", "is too long"),
        K::MinProperties { limit } => sized(*limit, "", "should be non-empty", "does not have enough properties"),
        K::MaxProperties { limit } => sized(*limit, "is expected to be empty", "", "has too many properties"),
        K::Minimum { limit } => format!("{instance} is less than the minimum of {}", py(limit)),
        K::Maximum { limit } => format!("{instance} is greater than the maximum of {}", py(limit)),
        K::ExclusiveMinimum { limit } => format!("{instance} is less than or equal to the minimum of {}", py(limit)),
        K::ExclusiveMaximum { limit } => format!("{instance} is greater than or equal to the maximum of {}", py(limit)),
        K::Pattern { pattern } => format!("{instance} does not match {}", text(pattern)),
        K::UniqueItems => format!("{instance} has non-unique elements"),
        K::AdditionalProperties { unexpected } => {
            let mut names = unexpected.clone();
            names.sort();
            let listed: Vec<String> = names.iter().map(|n| text(n)).collect();
            format!(
                "Additional properties are not allowed ({} {} unexpected)",
                listed.join(", "),
                if names.len() == 1 { "was" } else { "were" }
            )
        }
        K::AnyOf { .. } | K::OneOfNotValid { .. } => format!("{instance} is not valid under any of the given schemas"),
        K::Not { schema } => format!("{instance} should not be valid under {}", py(schema)),
        K::FalseSchema => format!("False schema does not allow {instance}"),
        _ => error.to_string(),
    }
}

// ------------------------------------------------------------------ release gate

/// The gate's query: exactly one way of naming the build (else the original's message).
pub fn gate_query(
    build: Option<&str>,
    agent: Option<&str>,
    version: Option<&str>,
    commit: Option<&str>,
) -> Result<Vec<(&'static str, String)>, String> {
    let ways = [build.is_some(), agent.is_some() || version.is_some(), commit.is_some()];
    if ways.iter().filter(|w| **w).count() != 1 {
        return Err("name the build one way: --build, --agent + --version, or --commit".into());
    }
    if let Some(build) = build {
        return Ok(vec![("buildId", build.to_string())]);
    }
    if let Some(commit) = commit {
        return Ok(vec![("commitSha", commit.to_string())]);
    }
    match (agent.filter(|a| !a.is_empty()), version.filter(|v| !v.is_empty())) {
        (Some(agent), Some(version)) => Ok(vec![("agentId", agent.to_string()), ("version", version.to_string())]),
        _ => Err("--agent and --version go together; supply both".into()),
    }
}

/// How a gate request failed.
#[derive(Debug, Clone)]
pub enum GateError {
    /// 404: the body's `message` (else `error`), else a default.
    NotFound(String),
    /// Another non-2xx answer.
    Status(Reply),
    /// No answer, or one that is not JSON.
    Transport(String),
}

/// One `GET` of the gate.
pub fn fetch_gate(client: &PlatformClient, query: &[(&str, String)]) -> Result<Value, GateError> {
    let reply = client.get(GATE_PATH, query).map_err(|e| GateError::Transport(e.to_string()))?;
    if reply.status == 404 {
        let detail =
            reply.json().and_then(|body| ["message", "error"].iter().find_map(|k| body.get(k).and_then(Value::as_str).map(str::to_string)));
        return Err(GateError::NotFound(detail.unwrap_or_else(|| "no build matches that lookup".into())));
    }
    if !(200..300).contains(&reply.status) {
        return Err(GateError::Status(reply));
    }
    reply.json().ok_or_else(|| GateError::Transport(format!("GET {GATE_PATH} answered {} with a body that is not JSON", reply.status)))
}

/// The runs a verdict lists (`evaluatedRuns`, or none).
fn runs_of(result: &Value) -> Vec<Value> {
    match result.get("evaluatedRuns") {
        Some(Value::Array(runs)) => runs.clone(),
        _ => Vec::new(),
    }
}

fn state_of(run: &Value) -> String {
    run.get("state").map(python_str).unwrap_or_default().to_uppercase()
}

/// True once the build has runs and none of them can still change.
pub fn runs_settled(result: &Value) -> bool {
    let runs = runs_of(result);
    !runs.is_empty() && runs.iter().all(|r| TERMINAL_STATES.contains(&state_of(r).as_str()))
}

/// `(runs, still going)` of a verdict, for `--wait`'s progress lines.
pub fn pending_runs(result: &Value) -> (usize, usize) {
    let runs = runs_of(result);
    let pending = runs.iter().filter(|r| !TERMINAL_STATES.contains(&state_of(r).as_str())).count();
    (runs.len(), pending)
}

/// Poll until the attributed runs are terminal or `timeout` lapses (`on_poll` sees each
/// answer): the last answer and whether the runs settled.
pub fn wait_for_gate(
    client: &PlatformClient,
    query: &[(&str, String)],
    timeout: Duration,
    interval: Duration,
    mut on_poll: impl FnMut(&Value),
) -> Result<(Value, bool), GateError> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let result = fetch_gate(client, query)?;
        on_poll(&result);
        if runs_settled(&result) {
            return Ok((result, true));
        }
        if std::time::Instant::now() >= deadline {
            return Ok((result, false));
        }
        std::thread::sleep(interval);
    }
}

/// The exit code of a verdict: pass 0, blocked 1, untested 2 (else the original's error).
pub fn exit_code_for(result: &Value) -> Result<u8, String> {
    let verdict = result.get("gate").and_then(|g| g.get("verdict")).map(python_str).unwrap_or_default().to_lowercase();
    match verdict.as_str() {
        "pass" => Ok(0),
        "blocked" => Ok(1),
        "untested" => Ok(2),
        other => Err(format!("unknown gate verdict {}", python_repr(&Value::str(other)))),
    }
}

/// `d.get(key, default)` as Python's `str()`.
fn get_str(map: &Value, key: &str, default: &str) -> String {
    map.get(key).map(python_str).unwrap_or_else(|| default.to_string())
}

/// `str(d.get(key) or "-")`.
fn get_or_dash(map: &Value, key: &str) -> String {
    map.get(key).filter(|v| truthy(v)).map(python_str).unwrap_or_else(|| "-".into())
}

/// `_fmt_rate`: `n/a` for null, else two decimals.
fn fmt_rate(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "n/a".into(),
        Some(v) => v.as_f64().map(|f| format!("{f:.2}")).unwrap_or_else(|| python_str(v)),
    }
}

/// The verdict as the original's table: rows, then the reasons, then the runs.
pub fn render_table(result: &Value) -> String {
    let empty = Value::Object(Map::default());
    let build = result.get("build").unwrap_or(&empty);
    let gate = result.get("gate").unwrap_or(&empty);
    let mut rows: Vec<(&str, String)> = vec![
        ("verdict", get_str(gate, "verdict", "?").to_uppercase()),
        ("agent", get_str(build, "agentId", "?")),
        ("version", get_or_dash(build, "version")),
        ("build", get_str(build, "id", "?")),
        ("commit", get_or_dash(build, "commitSha")),
        ("pass rate", fmt_rate(gate.get("passRate"))),
        ("graded", get_str(gate, "gradedRollouts", "0")),
        (
            "rule",
            format!("needs {} pass rate and at least {} graded", fmt_rate(gate.get("threshold")), get_str(gate, "minGradedRollouts", "?")),
        ),
    ];
    if let Some(compared) = result.get("comparedTo").filter(|c| truthy(c)) {
        let stable = compared.get("stableVersion").filter(|v| truthy(v)).or_else(|| compared.get("stableBuildId"));
        rows.push(("production", stable.map(python_str).unwrap_or_else(|| "None".into())));
    }
    let width = rows.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    let mut lines: Vec<String> = rows.iter().map(|(k, v)| format!("{}  {v}", ljust(k, width))).collect();
    if let Some(Value::Array(reasons)) = gate.get("reasons").filter(|r| truthy(r)) {
        lines.push(String::new());
        lines.extend(reasons.iter().map(|r| format!("- {}", python_str(r))));
    }
    let runs = runs_of(result);
    if !runs.is_empty() {
        lines.push(String::new());
        lines.push("runs (newest first):".into());
        for run in &runs {
            lines.push(format!(
                "  {}  {}  world={}  model={}  pass={}  graded={}",
                get_str(run, "runId", "None"),
                get_str(run, "state", "None"),
                get_or_dash(run, "world"),
                get_or_dash(run, "model"),
                fmt_rate(run.get("passRate")),
                get_str(run, "graded", "0"),
            ));
        }
    }
    lines.join("\n")
}

/// `json.dumps(result, indent=2, sort_keys=True)`.
pub fn render_json(result: &Value) -> String {
    json::dumps(result, DumpOptions { sort_keys: true, ensure_ascii: true, indent: Some(2), compact: false })
}

/// The lines appended to `$GITHUB_STEP_SUMMARY` (then a blank line).
pub fn step_summary(result: &Value) -> String {
    let empty = Value::Object(Map::default());
    let build = result.get("build").unwrap_or(&empty);
    let gate = result.get("gate").unwrap_or(&empty);
    let version = build.get("version").filter(|v| truthy(v)).map(python_str).unwrap_or_default();
    let mut lines = vec![
        format!("### Release gate: {} {version}", get_str(build, "agentId", "?")).trim_end().to_string(),
        String::new(),
        "| | |".into(),
        "|---|---|".into(),
        format!("| verdict | {} |", get_str(gate, "verdict", "?").to_uppercase()),
        format!("| pass rate | {} |", fmt_rate(gate.get("passRate"))),
        format!("| graded | {} |", get_str(gate, "gradedRollouts", "0")),
        format!("| rule | {} / {} graded |", fmt_rate(gate.get("threshold")), get_str(gate, "minGradedRollouts", "?")),
    ];
    if let Some(Value::Array(reasons)) = gate.get("reasons") {
        lines.extend(reasons.iter().map(|r| format!("| reason | {} |", python_str(r))));
    }
    format!("{}\n\n", lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_formats() {
        assert_eq!(python_g(1800.0), "1800");
        assert_eq!(python_g(2.5), "2.5");
        assert_eq!(python_g(1e6), "1e+06");
        assert_eq!(python_g(0.0001), "0.0001");
        assert_eq!(python_g(123456789.0), "1.23457e+08");
        assert_eq!(ljust("ab", 4), "ab  ");
        assert_eq!(prefix("héllo", 2), "hé");
        assert_eq!(python_path("./gateway_manifest/"), "gateway_manifest");
        assert_eq!(python_path("."), ".");
        assert_eq!(python_path(""), ".");
        assert_eq!(python_join(".", "Dockerfile"), "Dockerfile");
        assert_eq!(python_join("./out/", "gateway_manifest"), "out/gateway_manifest");
    }

    #[test]
    fn gate_queries_name_the_build_once() {
        assert_eq!(gate_query(Some("b"), None, None, None).unwrap(), vec![("buildId", "b".to_string())]);
        assert!(gate_query(Some("b"), None, None, Some("abc1234")).is_err());
        assert!(gate_query(None, None, None, None).is_err());
        assert_eq!(gate_query(None, Some("a"), None, None).unwrap_err(), "--agent and --version go together; supply both");
    }

    #[test]
    fn the_table_and_the_exit_code() {
        let result = json::parse_clean(
            r#"{"build": {"id": "bld_1", "agentId": "bot", "version": "1.0", "commitSha": null},
                "gate": {"verdict": "blocked", "passRate": 0.5, "gradedRollouts": 4, "threshold": 0.7, "minGradedRollouts": 5,
                         "reasons": ["too few"]},
                "evaluatedRuns": [{"runId": "e1", "state": "COMPLETED", "world": "w", "model": null, "passRate": 0.5, "graded": 4}]}"#,
        )
        .unwrap();
        assert_eq!(
            render_table(&result),
            "verdict    BLOCKED\nagent      bot\nversion    1.0\nbuild      bld_1\ncommit     -\npass rate  0.50\ngraded     4\n\
             rule       needs 0.70 pass rate and at least 5 graded\n\n- too few\n\nruns (newest first):\n  e1  COMPLETED  world=w  model=-  pass=0.50  graded=4"
        );
        assert_eq!(exit_code_for(&result), Ok(1));
        assert!(runs_settled(&result));
        assert!(step_summary(&result).starts_with("### Release gate: bot 1.0\n\n| | |\n"));
    }

    #[test]
    fn dataset_files_in_every_shape() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        assert_eq!(read_dataset_items(&write("a.json", "[1, 2]")).unwrap().len(), 2);
        assert_eq!(read_dataset_items(&write("b.json", r#"{"tasks": [], "items": [{"q": 1}]}"#)).unwrap().len(), 1);
        assert_eq!(read_dataset_items(&write("c.jsonl", "{\"q\": 1}\n\n{\"q\": 2}\n")).unwrap().len(), 2);
        assert_eq!(read_dataset_items(&write("d.txt", "\"a\"\n\"b\"\n")).unwrap().len(), 2);
        assert_eq!(read_dataset_items(&write("e.json", "{}")).unwrap_err(), DatasetFileError::Empty);
        assert_eq!(read_dataset_items(&dir.path().join("missing.json")).unwrap_err(), DatasetFileError::NotFound);
        match read_dataset_items(&write("f.jsonl", "{\"q\": 1}\n{\"q\": 2\n")) {
            Err(DatasetFileError::Invalid(message)) => assert!(message.starts_with("f.jsonl is neither one JSON document"), "{message}"),
            other => panic!("{other:?}"),
        }
        match read_dataset_items(&write("g.json", r#"{"tasks": "abc"}"#)) {
            Err(DatasetFileError::Invalid(message)) => assert_eq!(message, "g.json: 'tasks' must be a list of items, not string"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn items_are_checked_with_pythons_words() {
        let schema = json::parse_clean(
            r#"{"type": "object", "required": ["question"], "properties": {"question": {"type": "string"}, "n": {"minimum": 1}}}"#,
        )
        .unwrap();
        let items: Vec<Value> = [
            "{\"question\": \"q\", \"n\": 2}",
            "{\"name\": \"t2\", \"n\": 1}",
            "{\"question\": 5}",
            "[1]",
            "{\"question\": \"x\", \"n\": 0}",
            "{\"n\": 0, \"question\": 1}",
        ]
        .iter()
        .map(|t| json::parse_clean(t).unwrap())
        .collect();
        assert_eq!(
            validate_items(&schema, &items).unwrap(),
            [
                "  [2/6] t2: 'question' is a required property",
                "  [3/6] item 2: 5 is not of type 'string'",
                "  [4/6] item 3: [1] is not of type 'object'",
                "  [5/6] item 4: 0 is less than the minimum of 1",
                "  [6/6] item 5: 1 is not of type 'string'",
            ]
        );
        assert!(validate_items(&json::parse_clean(r#"{"type": 7}"#).unwrap(), &items).is_err());
    }
}

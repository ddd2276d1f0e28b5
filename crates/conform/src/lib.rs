//! Conformance: does the served world answer the way the vendor's OpenAPI says it does?
//!
//! The world is served in-process (no socket: [`gateway_serve::app::WorldApp::handle`]),
//! every declared operation is called with arguments taken from the world's own rows,
//! and each answer is checked against the vendor's documents: the status must be one the
//! vendor documents for success, and the body must satisfy the documented response
//! schema. Bodies are validated by the `jsonschema` crate (draft 2020-12, formats not
//! asserted); OpenAPI 3.0's `nullable` and boolean exclusive bounds are rewritten into
//! their 2020-12 forms first, and `$ref`s resolve inside the document that declares the
//! operation.
//!
//! This crate sits above `gateway-serve` (which already depends on `gateway-connector`),
//! so the connector crate stays free of the server and there is no dependency cycle.

pub mod openapi;
pub mod schema;

use gateway_connector::spec::{base_path, Operation, Spec};
use gateway_serve::app::WorldApp;
use gateway_serve::server::{load, ServeOptions};
use gateway_world::error::{fail, ContractError};
use gateway_world::json::{dumps, object, python_str, DumpOptions, Value};
use openapi::Document;
use std::path::{Path, PathBuf};

/// The credential the conformance run pins the served world to.
pub const PIN: &str = "conform";

/// Why conformance could not run.
#[derive(Debug, thiserror::Error)]
pub enum ConformError {
    /// A refusal (spec, settings, documents).
    #[error("{0}")]
    Contract(#[from] ContractError),
    /// The world could not be served.
    #[error("{0}")]
    Serve(#[from] Box<gateway_serve::server::ServeError>),
}

/// One operation's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Operation name.
    pub operation: String,
    /// HTTP method.
    pub method: String,
    /// Path template as the world declares it.
    pub path: String,
    /// Whether a document describes this operation.
    pub documented: bool,
    /// The status the world answered.
    pub status: Option<u16>,
    /// The 2xx statuses the vendor documents (or `200`).
    pub expected: Vec<String>,
    /// `ok` | `violations` | `no-schema` | `unchecked`.
    pub schema: String,
    /// Schema problems, `$`-rooted paths first.
    pub problems: Vec<String>,
    /// What was sent: url, args, body.
    pub request: Value,
}

impl Outcome {
    /// Documented, answered with a documented status, and the body (if described) valid.
    pub fn ok(&self) -> bool {
        self.documented && self.status_matches() && matches!(self.schema.as_str(), "ok" | "no-schema")
    }

    fn status_matches(&self) -> bool {
        self.status.is_some_and(|s| self.expected.contains(&s.to_string()))
    }

    /// Whether the answer's status is one the vendor does not document.
    pub fn status_mismatch(&self) -> bool {
        self.status.is_some_and(|s| !self.expected.contains(&s.to_string()))
    }

    fn to_value(&self) -> Value {
        object([
            ("operation", Value::str(&self.operation)),
            ("method", Value::str(&self.method)),
            ("path", Value::str(&self.path)),
            ("documented", Value::Bool(self.documented)),
            ("status", self.status.map_or(Value::Null, |s| Value::Int(i64::from(s)))),
            ("expected", Value::Array(self.expected.iter().map(Value::str).collect())),
            ("schema", Value::str(&self.schema)),
            ("problems", Value::Array(self.problems.iter().map(Value::str).collect())),
            ("request", self.request.clone()),
        ])
    }
}

/// Every outcome of one run.
#[derive(Debug, Clone)]
pub struct Report {
    /// The world path as given.
    pub world: String,
    /// One per operation checked.
    pub outcomes: Vec<Outcome>,
    /// Things worth saying that are not failures (a response schema that could not compile).
    pub notes: Vec<String>,
}

impl Report {
    /// The counts the CLI prints.
    pub fn summary(&self) -> Value {
        let checked: Vec<&Outcome> = self.outcomes.iter().filter(|o| o.documented).collect();
        let count = |n: usize| Value::Int(n as i64);
        object([
            ("operations", count(self.outcomes.len())),
            ("documented", count(checked.len())),
            ("conforming", count(checked.iter().filter(|o| o.ok()).count())),
            ("status_mismatch", count(checked.iter().filter(|o| o.status_mismatch()).count())),
            ("schema_violations", count(checked.iter().filter(|o| o.schema == "violations").count())),
            ("undocumented", count(self.outcomes.iter().filter(|o| !o.documented).count())),
        ])
    }

    /// Whether the run found a status mismatch or a schema violation.
    pub fn failed(&self) -> bool {
        self.outcomes.iter().any(|o| o.documented && (o.status_mismatch() || o.schema == "violations"))
    }

    /// The full report as written by `--out`.
    pub fn to_value(&self) -> Value {
        object([
            ("world", Value::str(&self.world)),
            ("summary", self.summary()),
            ("operations", Value::Array(self.outcomes.iter().map(Outcome::to_value).collect())),
        ])
    }

    /// The report file's text (`json.dumps(…, indent=1)` plus a newline).
    pub fn to_text(&self) -> String {
        format!("{}\n", dumps(&self.to_value(), DumpOptions { sort_keys: false, ensure_ascii: true, indent: Some(1), compact: false }))
    }

    /// One CLI line per outcome, as the original prints them.
    pub fn lines(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .map(|o| {
                let mark = if !o.documented {
                    "  ?  "
                } else if o.ok() {
                    "  ok "
                } else {
                    " FAIL"
                };
                let mut detail = if o.documented { String::new() } else { "not in the document".to_string() };
                if o.documented && o.status_mismatch() {
                    detail = format!("status {}, vendor documents {}", o.status.unwrap_or_default(), o.expected.join(", "));
                } else if let Some(first) = o.problems.first() {
                    detail = first.clone();
                    if o.problems.len() > 1 {
                        detail.push_str(&format!(" (+{})", o.problems.len() - 1));
                    }
                }
                format!("{mark} {:6} {:60} {}  {detail}", o.method, o.path, o.operation)
            })
            .collect()
    }
}

/// Headers that get the run through the world's own auth, using the pin.
fn credentials(app: &WorldApp, spec: &Spec) -> Vec<(String, String)> {
    use base64::Engine as _;
    match spec.scheme.as_str() {
        "header" => vec![(spec.auth_name.clone().unwrap_or_default().to_ascii_lowercase(), PIN.to_string())],
        "bearer" => vec![("authorization".into(), format!("Bearer {PIN}"))],
        "basic" => vec![("authorization".into(), format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(PIN)))],
        "oauth2" => {
            let prefix = base_path(&spec.base_url);
            let token_path = app.settings.token_path.clone().unwrap_or_else(|| "/oauth/token".into());
            let form = format!("grant_type=client_credentials&client_id=conform&client_secret={PIN}");
            let headers = vec![("content-type".to_string(), "application/x-www-form-urlencoded".to_string())];
            let answer = app.handle("POST", &format!("{prefix}{token_path}"), &headers, form.as_bytes(), "127.0.0.1");
            let token = answer.body.as_ref().and_then(|b| b.get("access_token")).map(python_str).unwrap_or_default();
            vec![("authorization".into(), format!("Bearer {token}"))]
        }
        _ => Vec::new(),
    }
}

/// The first scalar at a dotted path among rows.
fn first_value(rows: &[Value], path: &str) -> Option<Value> {
    rows.iter().find_map(|row| {
        let mut found = Some(row);
        for part in path.split('.') {
            found = found.and_then(|f| f.get(part));
        }
        found.filter(|v| !matches!(v, Value::Null | Value::Object(_) | Value::Array(_))).cloned()
    })
}

/// Path arguments from the world's rows: the operation's `sample`, its filter, any
/// operation's filter on the same name, the entity's single primary key, then the
/// document's examples, then "1". Query parameters come from `sample` only.
fn sample_args(
    app: &WorldApp,
    operation: &Operation,
    document: &Document,
    documented: &Value,
) -> (Vec<(String, String)>, Vec<(String, String)>) {
    let spec = &app.router.spec;
    let op = app.settings.for_operation(&operation.name);
    let rows = |entity: &str| app.state.rows(entity).unwrap_or_default();
    let mut hints: Vec<(String, (String, String))> = Vec::new();
    for other in &spec.operations {
        let Some(entity) = &other.entity else { continue };
        for (arg, path) in &app.settings.for_operation(&other.name).filter {
            if !hints.iter().any(|(a, _)| a == arg) {
                hints.push((arg.clone(), (entity.clone(), path.clone())));
            }
        }
    }
    let documented_params: Vec<&Value> =
        documented.get("parameters").and_then(Value::as_array).map(|p| p.iter().collect()).unwrap_or_default();
    let mut params = Vec::new();
    for name in &operation.params {
        if let Some(value) = op.sample.get(name) {
            params.push((name.clone(), value.clone()));
        }
    }
    let mut args = Vec::new();
    for name in operation.placeholders() {
        let mut value = op.sample.get(&name).map(Value::str);
        if value.is_none() {
            if let (Some((_, path)), Some(entity)) = (op.filter.iter().find(|(a, _)| *a == name), &operation.entity) {
                value = first_value(&rows(entity), path);
            }
        }
        if value.is_none() {
            if let Some((_, (entity, path))) = hints.iter().find(|(a, _)| *a == name) {
                value = first_value(&rows(entity), path);
            }
        }
        if value.is_none() {
            if let Some(entity) = &operation.entity {
                let key = app.state.contract().entity(entity).map(|e| e.primary_key.clone()).unwrap_or_default();
                if key.len() == 1 {
                    value = first_value(&rows(entity), &key[0]);
                }
            }
        }
        if value.is_none() {
            let param =
                documented_params.iter().map(|p| document.deref(p)).find(|p| p.get("name").and_then(Value::as_str) == Some(name.as_str()));
            if let Some(param) = param {
                value = Some(document.example(param.get("schema").unwrap_or(&Value::Null), 0));
            }
        }
        let text = match value {
            Some(Value::Null) | None => "1".to_string(),
            Some(v) => python_str(&v),
        };
        args.push((name, text));
    }
    (args, params)
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Int(n) => *n != 0,
        Value::Float(f) => *f != 0.0,
        Value::Str(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

fn check_one(
    app: &WorldApp,
    operation: &Operation,
    document: &Document,
    documented: &Value,
    headers: &[(String, String)],
    notes: &mut Vec<String>,
) -> Outcome {
    let spec = &app.router.spec;
    let mut outcome = Outcome {
        operation: operation.name.clone(),
        method: operation.method.clone(),
        path: operation.path.clone(),
        documented: true,
        status: None,
        expected: Vec::new(),
        schema: "unchecked".into(),
        problems: Vec::new(),
        request: object::<_, String>([]),
    };
    let empty = Value::Object(Default::default());
    let responses = documented.get("responses").filter(|r| truthy(r)).unwrap_or(&empty);
    let codes: Vec<String> = responses.as_object().map(|m| m.keys().filter(|c| c.starts_with('2')).cloned().collect()).unwrap_or_default();
    outcome.expected = if codes.is_empty() { vec!["200".into()] } else { codes };
    let (args, mut params) = sample_args(app, operation, document, documented);
    if spec.scheme == "query" {
        gateway_connector::capture::set_pair(&mut params, spec.auth_name.as_deref().unwrap_or_default(), PIN);
    }
    let mut path = operation.path.clone();
    for (name, value) in &args {
        path = path.replace(&format!("{{{name}}}"), &gateway_connector::url::quote(value));
    }
    let prefix = base_path(&spec.base_url);
    let target = if params.is_empty() {
        format!("{prefix}{path}")
    } else {
        format!("{prefix}{path}?{}", gateway_connector::url::urlencode(&params))
    };
    let mut body = None;
    if matches!(operation.method.as_str(), "POST" | "PUT" | "PATCH") {
        let request_body = documented.get("requestBody").map(|b| document.deref(b)).unwrap_or_default();
        let content = request_body.get("content").and_then(|c| c.get("application/json")).cloned().unwrap_or_default();
        let example = content.get("example").cloned().filter(truthy);
        let generated = || content.get("schema").map(|s| document.example(s, 0)).filter(truthy);
        body = Some(example.or_else(generated).unwrap_or_else(|| empty.clone()));
    }
    let mut request = vec![
        ("url", Value::Str(format!("{prefix}{path}"))),
        ("args", Value::Object(args.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect())),
    ];
    if let Some(body) = &body {
        request.push(("body", body.clone()));
    }
    outcome.request = object(request);
    let mut sent = headers.to_vec();
    let raw = match &body {
        Some(b) => {
            sent.push(("content-type".into(), "application/json".into()));
            dumps(b, DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false }).into_bytes()
        }
        None => Vec::new(),
    };
    let answer = app.handle(&operation.method, &target, &sent, &raw, "127.0.0.1");
    outcome.status = Some(answer.status);
    let documented_answer =
        responses.get(&answer.status.to_string()).filter(|a| truthy(a)).or_else(|| responses.get("default").filter(|a| truthy(a)));
    let schema = documented_answer
        .map(|a| document.deref(a))
        .and_then(|a| a.get("content").and_then(|c| c.get("application/json")).and_then(|j| j.get("schema")).cloned());
    let Some(schema) = schema else {
        outcome.schema = "no-schema".into();
        return outcome;
    };
    let value = match (&answer.file, &answer.body, answer.status) {
        (Some((bytes, _)), _, _) => match std::str::from_utf8(bytes).ok().and_then(|t| gateway_world::json::parse(t).ok()) {
            Some(parsed) => parsed.value,
            None if bytes.is_empty() => Value::Null,
            None => {
                outcome.problems.push("$: body is not JSON".into());
                Value::Null
            }
        },
        (None, _, 204) | (None, None, _) => Value::Null,
        (None, Some(value), _) => value.clone(),
    };
    match document.check(&schema, &value) {
        Ok(problems) => outcome.problems.extend(problems),
        Err(note) => notes.push(format!("{}: {note}", operation.name)),
    }
    outcome.schema = if outcome.problems.is_empty() { "ok" } else { "violations" }.into();
    outcome
}

/// Serve `world` and check its operations (the first `limit`) against the documents.
pub fn conform(world: &Path, openapi: &[PathBuf], limit: Option<usize>) -> Result<Report, ConformError> {
    let spec = gateway_connector::spec::load_spec(world)?;
    gateway_serve::settings::load_api_settings(world, &spec)?;
    let documents = openapi.iter().map(|p| Document::load(p)).collect::<Result<Vec<_>, _>>()?;
    if documents.is_empty() {
        return Err(fail::<()>("conform", "Give at least one --openapi document to conform against", "/conform/openapi")
            .unwrap_err()
            .into());
    }
    // The author's own world on the author's machine: confined where the machine can.
    let workers = gateway_serve::handlers::WorkerOptions::local();
    let app = load(world, &ServeOptions { api_key: Some(PIN.into()), workers, ..ServeOptions::default() }).map_err(Box::new)?;
    let headers = credentials(&app, &app.router.spec);
    let mut outcomes = Vec::new();
    let mut notes = Vec::new();
    let operations: Vec<Operation> = app.router.spec.operations.iter().take(limit.unwrap_or(usize::MAX)).cloned().collect();
    for operation in &operations {
        let located = documents.iter().find_map(|d| d.find_operation(operation).map(|found| (d, found)));
        match located {
            None => outcomes.push(Outcome {
                operation: operation.name.clone(),
                method: operation.method.clone(),
                path: operation.path.clone(),
                documented: false,
                status: None,
                expected: Vec::new(),
                schema: "unchecked".into(),
                problems: Vec::new(),
                request: object::<_, String>([]),
            }),
            Some((document, documented)) => outcomes.push(check_one(&app, operation, document, &documented, &headers, &mut notes)),
        }
    }
    Ok(Report { world: world.to_string_lossy().into_owned(), outcomes, notes })
}

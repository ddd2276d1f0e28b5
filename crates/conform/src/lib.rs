//! Conformance: does the served world answer the way the vendor's OpenAPI says it does?
//!
//! The world is served in-process (no socket: [`gateway_serve::app::WorldApp::handle`]),
//! every declared operation is called with arguments taken from the world's own rows
//! ([`args`]), and each answer is checked against the vendor's documents: the status
//! must be one the vendor documents for success, and the body must satisfy the
//! documented response schema ([`schema`]). Beyond the original (`probes`): the
//! required query parameters are sent and must be declared and accepted, documented
//! response headers must be there (`Link` on a page with a next), documented 401 and
//! 404 answers are provoked and checked, and path arguments must come from the
//! world's rows (a sub-resource route with its parent's key). A run that checks
//! nothing fails ([`report::Report::failures`]).
//!
//! Documents are read lazily ([`lazy`]): GitHub's is 13 MB, and a run reads the few
//! hundred KB its operations reach.
//!
//! This crate sits above `gateway-serve` (which already depends on `gateway-connector`),
//! so the connector crate stays free of the server and there is no dependency cycle.

pub mod args;
pub mod lazy;
pub mod openapi;
mod probes;
pub mod report;
pub mod schema;

use gateway_connector::spec::{base_path, Operation, Spec};
use gateway_serve::app::{Response, WorldApp};
use gateway_serve::server::{load, ServeOptions};
use gateway_world::error::{fail, ContractError};
use gateway_world::json::{dumps, object, python_str, DumpOptions, Value};
use openapi::{Document, Found};
pub use report::{Check, Outcome, Report, Verdict};
use std::path::{Path, PathBuf};

/// The credential the conformance run pins the served world to.
pub const PIN: &str = "conform";

/// A credential the world never issued, for the 401 of an operation it serves
/// without one (`[auth] anonymous`): no credential is not a 401 there, a wrong one is.
const WRONG: &str = "conform-wrong";

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

/// Headers that get the run through the world's own auth, using `secret` (the pin;
/// [`WRONG`] for headers the world refuses).
fn credentials(app: &WorldApp, spec: &Spec, secret: &str) -> Vec<(String, String)> {
    use base64::Engine as _;
    match spec.scheme.as_str() {
        "header" => vec![(spec.auth_name.clone().unwrap_or_default().to_ascii_lowercase(), secret.to_string())],
        "bearer" => vec![("authorization".into(), format!("Bearer {secret}"))],
        "basic" => vec![("authorization".into(), format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(secret)))],
        "oauth2" if secret != PIN => vec![("authorization".into(), format!("Bearer {secret}"))],
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

pub(crate) fn truthy(value: &Value) -> bool {
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

/// The served world and how to get through its auth.
pub(crate) struct Run<'a> {
    pub app: &'a WorldApp,
    /// The credential headers.
    pub headers: Vec<(String, String)>,
    /// Credential headers the world refuses.
    pub wrong: Vec<(String, String)>,
    /// The path prefix of the connector's base URL.
    pub prefix: String,
    pub notes: Vec<String>,
}

/// One request of an operation.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub method: String,
    /// The path with its arguments in place.
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    /// What credential to present.
    pub credentials: Credential,
}

/// The credential a call presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Credential {
    /// The run's own (the pin).
    Pin,
    /// None at all.
    Absent,
    /// One the world never issued.
    Wrong,
}

impl Call {
    fn new(operation: &Operation, path_args: &[(String, String)], query: Vec<(String, String)>, body: Option<Value>) -> Call {
        let mut path = operation.path.clone();
        for (name, value) in path_args {
            path = path.replace(&format!("{{{name}}}"), &gateway_connector::url::quote(value));
        }
        Call { method: operation.method.clone(), path, query, body, credentials: Credential::Pin }
    }

    /// The request target: the prefix, the path, the query (with the pin when the
    /// world takes its credential in the query).
    fn target(&self, run: &Run) -> String {
        let spec = &run.app.router.spec;
        let mut query = self.query.clone();
        let secret = match self.credentials {
            Credential::Pin => Some(PIN),
            Credential::Wrong => Some(WRONG),
            Credential::Absent => None,
        };
        if let (true, Some(secret)) = (spec.scheme == "query", secret) {
            gateway_connector::capture::set_pair(&mut query, spec.auth_name.as_deref().unwrap_or_default(), secret);
        }
        if query.is_empty() {
            format!("{}{}", run.prefix, self.path)
        } else {
            format!("{}{}?{}", run.prefix, self.path, gateway_connector::url::urlencode(&query))
        }
    }

    /// What the report records of a check's request.
    fn record(&self, run: &Run) -> Value {
        object([("method", Value::str(&self.method)), ("url", Value::Str(self.target(run)))])
    }

    fn send(&self, run: &Run) -> Response {
        let mut sent = match self.credentials {
            Credential::Pin => run.headers.clone(),
            Credential::Wrong => run.wrong.clone(),
            Credential::Absent => Vec::new(),
        };
        let raw = match &self.body {
            Some(b) => {
                sent.push(("content-type".into(), "application/json".into()));
                dumps(b, DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false }).into_bytes()
            }
            None => Vec::new(),
        };
        run.app.handle(&self.method, &self.target(run), &sent, &raw, "127.0.0.1")
    }
}

/// The JSON body of an answer, or why it is not JSON.
pub(crate) fn answered_value(answer: &Response) -> Result<Value, String> {
    match (&answer.file, &answer.body, answer.status) {
        (Some((bytes, _)), _, _) => match std::str::from_utf8(bytes).ok().and_then(|t| gateway_world::json::parse(t).ok()) {
            Some(parsed) => Ok(parsed.value),
            None if bytes.is_empty() => Ok(Value::Null),
            None => Err("$: body is not JSON".into()),
        },
        (None, _, 204) | (None, None, _) => Ok(Value::Null),
        (None, Some(value), _) => Ok(value.clone()),
    }
}

/// The documented answer for a status (or `default`), dereferenced.
pub(crate) fn documented_answer(document: &Document, found: &Found, status: &str) -> Option<Value> {
    let responses = found.operation.get("responses")?;
    let answer = responses.get(status).filter(|a| truthy(a)).or_else(|| responses.get("default").filter(|a| truthy(a)))?;
    Some(document.deref(answer))
}

/// The JSON schema of a documented answer.
pub(crate) fn json_schema(answer: &Value) -> Option<Value> {
    answer.get("content").and_then(|c| c.get("application/json")).and_then(|j| j.get("schema")).cloned()
}

fn check_one(run: &mut Run, operation: &Operation, document: &Document, found: &Found) -> Outcome {
    let mut outcome = Outcome::undocumented(operation);
    outcome.documented = true;
    let codes: Vec<String> = found
        .operation
        .get("responses")
        .and_then(Value::as_object)
        .map(|m| m.keys().filter(|c| c.starts_with('2')).cloned().collect())
        .unwrap_or_default();
    outcome.expected = if codes.is_empty() { vec!["200".into()] } else { codes };
    let arguments = args::arguments(run.app, operation, document, found);
    let mut body = None;
    if matches!(operation.method.as_str(), "POST" | "PUT" | "PATCH") {
        let request_body = found.operation.get("requestBody").map(|b| document.deref(b)).unwrap_or_default();
        let content = request_body.get("content").and_then(|c| c.get("application/json")).cloned().unwrap_or_default();
        let example = content.get("example").cloned().filter(truthy);
        let generated = || content.get("schema").map(|s| document.example(s, 0)).filter(truthy);
        body = Some(example.or_else(generated).unwrap_or_else(|| Value::Object(Default::default())));
    }
    let call = Call::new(operation, &arguments.path, arguments.query.clone(), body);
    let mut request = vec![
        ("url", Value::Str(format!("{}{}", run.prefix, call.path))),
        ("args", Value::Object(arguments.path.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect())),
    ];
    if let Some(body) = &call.body {
        request.push(("body", body.clone()));
    }
    request.push(("query", Value::Object(call.query.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect())));
    outcome.request = object(request);
    let answer = call.send(run);
    outcome.status = Some(answer.status);
    outcome.checks.extend(arguments.checks.iter().cloned());
    let documented = documented_answer(document, found, &answer.status.to_string());
    match documented.as_ref().and_then(json_schema) {
        None => outcome.schema = "no-schema".into(),
        Some(schema) => {
            let value = answered_value(&answer).unwrap_or_else(|problem| {
                outcome.problems.push(problem);
                Value::Null
            });
            match document.check(&schema, &value) {
                Ok(problems) => outcome.problems.extend(problems),
                Err(reason) => {
                    // The original's lenient checker never fails to read a schema; ours
                    // can (a pattern its regex engine refuses). Not a pass: said as such.
                    run.notes.push(format!("{}: {reason}", operation.name));
                    outcome.checks.push(Check::new(
                        "schema",
                        answer.status.to_string(),
                        Verdict::Fail,
                        format!(
                            "the vendor's schema of the {} answer could not be compiled ({reason}); the body was not checked",
                            answer.status
                        ),
                    ));
                }
            }
            outcome.schema = if outcome.problems.is_empty() { "ok" } else { "violations" }.into();
        }
    }
    outcome.checks.extend(probes::query(run.app, operation, &arguments, &answer));
    if !outcome.status_mismatch() {
        if let Some(documented) = &documented {
            outcome.checks.extend(probes::headers(run, document, found, documented, &call, &answer));
        }
    }
    outcome.checks.extend(probes::errors(run, operation, document, found, &arguments, &call));
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
    let headers = credentials(&app, &app.router.spec, PIN);
    let wrong = credentials(&app, &app.router.spec, WRONG);
    let prefix = base_path(&app.router.spec.base_url);
    let mut run = Run { app: &app, headers, wrong, prefix, notes: Vec::new() };
    let mut outcomes = Vec::new();
    let operations: Vec<Operation> = app.router.spec.operations.iter().take(limit.unwrap_or(usize::MAX)).cloned().collect();
    for operation in &operations {
        let located = documents.iter().find_map(|d| d.find_operation(operation).map(|found| (d, found)));
        outcomes.push(match located {
            None => Outcome::undocumented(operation),
            Some((document, found)) => check_one(&mut run, operation, document, &found),
        });
    }
    let notes = std::mem::take(&mut run.notes);
    Ok(Report {
        world: world.to_string_lossy().into_owned(),
        documents: documents.iter().map(|d| d.file.clone()).collect(),
        outcomes,
        notes,
    })
}

//! The OpenAPI 3.1 document a served world answers at `/openapi.json`, and the
//! `/docs` page drawn from it. Richer than the api bundle's document (bundle.rs keeps
//! that one byte-identical to the original's): path and query parameters typed from
//! the contract's fields (filters, paging), request bodies for writes, the answers
//! the server actually sends (list envelopes, rows, the connector's error bodies,
//! the 405 and its `Allow` header), examples from the world's seed rows.
//!
//! It must stay truthful: every answer the server gives validates against it. Where
//! the world's own Python decides an answer (a handler, the `before` gate) the
//! document names the statuses it knows of and claims no body.

use crate::bundle::{path_parameter, string_schema};
use crate::page::Page;
use crate::settings::{ApiSettings, OperationSettings, Paging};
use gateway_connector::spec::{Operation, Spec};
use gateway_world::compiler::{Contract, Entity};
use gateway_world::json::{canonical, object, python_str, Map, Value};
use std::collections::BTreeMap;

/// What the document is drawn from.
pub struct World<'a> {
    /// The connection spec (operations, auth).
    pub spec: &'a Spec,
    /// `[api]` settings.
    pub settings: &'a ApiSettings,
    /// The compiled contract (entity schemas).
    pub contract: &'a Contract,
    /// The URL path the vendor's routes are served under.
    pub prefix: &'a str,
    /// The first seed rows of each entity, for examples.
    pub samples: &'a BTreeMap<String, Vec<Value>>,
    /// The operations a session allows (None = all): the others answer 403.
    pub allowed: Option<&'a [String]>,
}

/// The methods the world's routes may take, in the order an `Allow` header names them.
pub const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

const JSON: &str = "application/json";
fn described(description: impl Into<String>) -> Map {
    let mut map = Map::default();
    map.insert("description".into(), Value::Str(description.into()));
    map
}

/// Whether `value` is of the (scalar) schema's type and among its choices: an
/// example is only given where it fits.
fn fits(schema: &Value, value: &Value) -> bool {
    let typed = matches!(
        (schema.get("type").and_then(Value::as_str), value),
        (Some("string"), Value::Str(_))
            | (Some("integer"), Value::Int(_))
            | (Some("boolean"), Value::Bool(_))
            | (Some("number"), Value::Int(_) | Value::Float(_))
    );
    let chosen = match schema.get("enum").and_then(Value::as_array) {
        Some(choices) => choices.iter().any(|c| canonical(c) == canonical(value)),
        None => true,
    };
    typed && chosen
}

/// The text of a value in a query string, typed back as the parameter's schema reads it.
fn typed_sample(schema: &Value, text: &str) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => text.parse().map(Value::Int).unwrap_or_else(|_| Value::str(text)),
        Some("number") => text.parse().map(Value::Float).unwrap_or_else(|_| Value::str(text)),
        Some("boolean") => match text {
            "true" | "True" => Value::Bool(true),
            "false" | "False" => Value::Bool(false),
            _ => Value::str(text),
        },
        _ => Value::str(text),
    }
}

/// How a response is described: its status, a description, and (when the server
/// decides the body) a schema with its media type.
struct Answer {
    status: String,
    description: String,
    body: Option<(String, Value)>,
    headers: Vec<(String, Value)>,
    example: Option<Value>,
}

impl Answer {
    fn new(status: impl ToString, description: impl Into<String>) -> Answer {
        Answer { status: status.to_string(), description: description.into(), body: None, headers: Vec::new(), example: None }
    }

    fn with_body(mut self, media: &str, schema: Value) -> Answer {
        self.body = Some((media.to_string(), schema));
        self
    }

    fn render(&self) -> Value {
        let mut out = described(&self.description);
        if !self.headers.is_empty() {
            out.insert("headers".into(), Value::Object(self.headers.iter().cloned().collect()));
        }
        if let Some((media, schema)) = &self.body {
            let mut content = Map::default();
            content.insert("schema".into(), schema.clone());
            if let Some(example) = &self.example {
                content.insert("example".into(), example.clone());
            }
            out.insert("content".into(), object([(media.as_str(), Value::Object(content))]));
        }
        Value::Object(out)
    }
}

fn header(description: &str, required: bool, schema: Value) -> Value {
    object([("description", Value::str(description)), ("required", Value::Bool(required)), ("schema", schema)])
}

fn const_schema(value: &Value) -> Value {
    object([("const", value.clone())])
}

/// The `[api].invalid` body: as configured, or (an object) with the refusal's `detail` added.
fn invalid_schema(invalid: &Value) -> Value {
    let Value::Object(members) = invalid else {
        return const_schema(invalid);
    };
    let mut properties = Map::default();
    let mut required = Vec::new();
    for (key, value) in members {
        if key != "detail" {
            properties.insert(key.clone(), const_schema(value));
            required.push(Value::str(key));
        }
    }
    properties.insert("detail".into(), object([("description", Value::str("Why the world refused the request."))]));
    object([("type", Value::str("object")), ("properties", Value::Object(properties)), ("required", Value::Array(required))])
}

fn entity_ref(entity: &str) -> Value {
    object([("$ref", Value::Str(format!("#/components/schemas/{entity}")))])
}

impl World<'_> {
    fn entity(&self, operation: &Operation) -> Option<&Entity> {
        operation.entity.as_deref().and_then(|name| self.contract.entity(name))
    }

    fn sample(&self, operation: &Operation) -> Option<&Value> {
        operation.entity.as_deref().and_then(|name| self.samples.get(name)).and_then(|rows| rows.first())
    }

    fn paging(&self, op: &OperationSettings) -> Paging {
        match &op.paging {
            None => self.settings.paging.clone(),
            Some(style) => Paging { style: style.clone(), ..self.settings.paging.clone() },
        }
    }

    /// Whether the operation answers a page of rows (a built-in read of a list).
    fn lists(&self, operation: &Operation, op: &OperationSettings) -> bool {
        op.action == "read" && !op.single && self.entity(operation).is_some()
    }

    /// The schema of one argument (path placeholder or query parameter).
    fn argument(&self, operation: &Operation, op: &OperationSettings, arg: &str) -> (Value, String) {
        crate::arguments::argument(self.entity(operation), op, arg)
    }

    /// An example of an argument: the operation's `api.sample`, else the seed row's field.
    fn argument_example(&self, operation: &Operation, op: &OperationSettings, arg: &str, schema: &Value) -> Option<Value> {
        if let Some(text) = op.sample.get(arg) {
            return Some(typed_sample(schema, text));
        }
        let (_, path) = op.filter.iter().find(|(a, _)| a == arg)?;
        let value = crate::state::dig(self.sample(operation)?, path)?;
        let value = match value {
            Value::Array(items) => items.first()?,
            other => other,
        };
        match (op.matching.get(arg).map(String::as_str), value) {
            (Some("contains" | "prefix"), other) => Some(Value::Str(python_str(other))),
            (_, other) => Some(other.clone()),
        }
    }

    /// Values a placeholder must not take: the literal segments of other operations
    /// of the same method that the same request would reach instead.
    fn shadowed(&self, operation: &Operation, index: usize) -> Vec<Value> {
        let segments: Vec<&str> = operation.path.split('/').collect();
        let mut out = Vec::new();
        for other in &self.spec.operations {
            if std::ptr::eq(other, operation) || other.method != operation.method {
                continue;
            }
            let theirs: Vec<&str> = other.path.split('/').collect();
            if theirs.len() != segments.len() {
                continue;
            }
            let mut literal = None;
            let same_elsewhere = segments.iter().zip(&theirs).enumerate().all(|(i, (mine, them))| {
                if i == index {
                    literal = Some(*them);
                    gateway_connector::spec::placeholders(them).is_empty()
                } else {
                    mine == them
                }
            });
            if let (true, Some(text)) = (same_elsewhere, literal) {
                out.push(Value::str(text));
            }
        }
        out
    }

    fn parameters(&self, operation: &Operation, op: &OperationSettings) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        let mut named: Vec<String> = Vec::new();
        let segments: Vec<&str> = operation.path.split('/').collect();
        for name in operation.placeholders() {
            if named.contains(&name) {
                continue;
            }
            let (mut schema, description) = self.argument(operation, op, &name);
            let index = segments.iter().position(|s| *s == format!("{{{name}}}"));
            let shadowed = index.map(|i| self.shadowed(operation, i)).unwrap_or_default();
            if !shadowed.is_empty() {
                if let Value::Object(map) = &mut schema {
                    map.insert("not".into(), object([("enum", Value::Array(shadowed))]));
                }
            }
            let mut parameter = described(description);
            parameter.insert("name".into(), Value::str(&name));
            parameter.insert("in".into(), Value::str("path"));
            parameter.insert("required".into(), Value::Bool(true));
            if let Some(example) = self.argument_example(operation, op, &name, &schema).filter(|e| fits(&schema, e)) {
                parameter.insert("example".into(), example);
            }
            parameter.insert("schema".into(), schema);
            out.push(Value::Object(parameter));
            named.push(name);
        }
        for name in &operation.params {
            if named.contains(name) {
                continue;
            }
            let (schema, description) = self.argument(operation, op, name);
            let mut parameter = described(description);
            parameter.insert("name".into(), Value::str(name));
            parameter.insert("in".into(), Value::str("query"));
            parameter.insert("required".into(), Value::Bool(op.required.contains(name)));
            if let Some(example) = self.argument_example(operation, op, name, &schema).filter(|e| fits(&schema, e)) {
                parameter.insert("example".into(), example);
            }
            parameter.insert("schema".into(), schema);
            out.push(Value::Object(parameter));
            named.push(name.clone());
        }
        if self.lists(operation, op) {
            let paging = self.paging(op);
            let count = object([("type", Value::str("integer")), ("minimum", Value::Int(0))]);
            let page_params: Vec<(&str, Value, String)> = match paging.style.as_str() {
                "offset" => vec![
                    (&paging.limit_param, count.clone(), format!("Rows per page (default {}).", paging.page_size)),
                    (&paging.offset_param, count, String::from("How many matching rows to skip.")),
                ],
                "cursor" => vec![
                    (&paging.limit_param, count, format!("Rows per page (default {}).", paging.page_size)),
                    (&paging.cursor_param, string_schema(), String::from("The cursor a previous page answered.")),
                ],
                _ => Vec::new(),
            };
            for (name, schema, description) in page_params {
                if named.iter().any(|n| n == name) {
                    continue;
                }
                let mut parameter = described(description);
                parameter.insert("name".into(), Value::str(name));
                parameter.insert("in".into(), Value::str("query"));
                parameter.insert("required".into(), Value::Bool(false));
                parameter.insert("schema".into(), schema);
                out.push(Value::Object(parameter));
                named.push(name.to_string());
            }
        }
        out
    }

    /// The body a create or update reads ([`crate::arguments::body`]), with an
    /// example from the seed rows.
    fn request_body(&self, operation: &Operation, op: &OperationSettings) -> Option<Value> {
        let (schema, description) = crate::arguments::body(operation, self.entity(operation), op)?;
        let mut media = object([("schema", schema)]);
        if let (Some(example), Value::Object(map)) = (self.body_example(operation, op), &mut media) {
            map.insert("example".into(), example);
        }
        let mut content = object([(JSON, media.clone())]);
        if let (true, Value::Object(map)) = (self.settings.forms, &mut content) {
            // `[api] forms`: the same fields as a form, as the vendor's clients send them.
            for kind in ["application/x-www-form-urlencoded", "multipart/form-data"] {
                map.insert(kind.into(), object([("schema", media.get("schema").cloned().unwrap_or(Value::Null))]));
            }
        }
        Some(object([("description", Value::Str(description)), ("content", content)]))
    }

    /// A create's or update's body drawn from the entity's first seed row.
    fn body_example(&self, operation: &Operation, op: &OperationSettings) -> Option<Value> {
        if !matches!(op.action.as_str(), "create" | "update") {
            return None;
        }
        let entity = self.entity(operation)?;
        let sample = self.sample(operation)?;
        if !op.body.is_empty() {
            let mut example = Value::Object(Map::default());
            for (field, place) in &op.body {
                if let Some(value) = crate::state::dig(sample, field).filter(|v| !matches!(v, Value::Null)) {
                    place_value(&mut example, place, value.clone());
                }
            }
            return Some(example);
        }
        let creates = op.action == "create";
        let dropped = |field: &str| {
            if creates {
                op.generate.iter().any(|(f, _)| f == field)
            } else {
                entity.primary_key.iter().any(|k| k == field)
            }
        };
        sample.as_object().map(|row| Value::Object(row.iter().filter(|(k, _)| !dropped(k)).map(|(k, v)| (k.clone(), v.clone())).collect()))
    }

    /// A list answer: the rows in the operation's envelope (or a bare array).
    fn envelope_schema(&self, entity: &str, op: &OperationSettings, linked: bool) -> Value {
        let rows = object([("type", Value::str("array")), ("items", entity_ref(entity))]);
        let key = op.envelope.as_deref().unwrap_or(&self.settings.envelope);
        if key.is_empty() {
            return rows;
        }
        let settings = self.settings;
        // Page links are absolute URLs, null past the last page; bare cursors are
        // tokens, "" past the last page.
        let cursor = if linked && settings.page_links {
            object([("type", Value::Array(vec![Value::str("string"), Value::str("null")]))])
        } else {
            string_schema()
        };
        let mut properties = Map::default();
        properties.insert(key.to_string(), rows);
        settings.hits_key.place_schema(&mut properties, object([("type", Value::str("integer")), ("minimum", Value::Int(0))]));
        op.more_key.as_ref().unwrap_or(&settings.more_key).place_schema(&mut properties, object([("type", Value::str("boolean"))]));
        settings.cursor_key.place_schema(&mut properties, cursor.clone());
        if let Some(previous) = settings.previous_key.as_ref().filter(|k| !k.is_empty()) {
            properties.insert(previous.clone(), cursor);
        }
        let required: Vec<Value> = properties.keys().map(Value::str).collect();
        object([("type", Value::str("object")), ("properties", Value::Object(properties)), ("required", Value::Array(required))])
    }

    fn envelope_example(&self, operation: &Operation, op: &OperationSettings) -> Option<Value> {
        let row = self.sample(operation)?.clone();
        let mut example = crate::page::wrap_with(
            Page::whole(vec![row]),
            self.settings,
            op.envelope.as_deref(),
            op.more_key.as_ref(),
            &self.settings.paging,
            None,
        );
        crate::reply::succeed(&mut example, &self.settings.success);
        Some(example)
    }

    /// The statuses an operation answers, each with the body the server sends.
    fn answers(&self, operation: &Operation, op: &OperationSettings) -> Vec<Answer> {
        let settings = self.settings;
        let errors = settings.error_content_type.as_str();
        let mut out = Vec::new();
        // The entity's rows are only promised when the contract models it.
        let entity = operation.entity.as_deref().filter(|_| self.entity(operation).is_some());
        let handled = op.action == "handler";
        match (op.action.as_str(), operation.entity.as_deref(), entity) {
            ("static", _, _) => {
                let mut constant = op.answer.clone().unwrap_or_default();
                crate::reply::succeed(&mut constant, &settings.success);
                let mut answer = Answer::new(op.status, "A constant answer.").with_body(JSON, const_schema(&constant));
                answer.example = Some(constant);
                out.push(answer);
            }
            ("handler", _, _) => {
                let function = op.handler.as_deref().unwrap_or_default();
                out.push(Answer::new(op.status, format!("What the world's handler `{function}` answers when it returns a body.")));
            }
            (_, None, _) => out.push(Answer::new(501, "The operation names no entity the world models.").with_body(
                errors,
                object([
                    ("type", Value::str("object")),
                    (
                        "properties",
                        object([
                            ("error", const_schema(&Value::str("not_modelled"))),
                            ("operation", const_schema(&Value::str(&operation.name))),
                        ]),
                    ),
                    ("required", Value::Array(vec![Value::str("error"), Value::str("operation")])),
                ]),
            )),
            ("delete", Some(_), _) if op.answer.is_none() && !op.shape.shapes() => out.push(Answer::new(op.status, "Deleted; no body.")),
            (_, Some(_), None) => out.push(Answer::new(op.status, "Rows of an entity the contract does not declare.")),
            (action, Some(_), Some(entity)) => {
                // A write's answer holds its row (shaped as declared) unless it
                // answers a constant; a read's is the row or a page of rows.
                let single = op.single || op.shape.shapes() || action == "delete";
                let success = &settings.success;
                let (schema, example) = match &op.answer {
                    Some(constant) => {
                        let mut constant = constant.clone();
                        crate::reply::succeed(&mut constant, success);
                        (const_schema(&constant), Some(constant))
                    }
                    None if single => {
                        let example = self.sample(operation).map(|row| {
                            let mut shaped = op.shape.apply(row.clone());
                            crate::reply::succeed(&mut shaped, success);
                            shaped
                        });
                        (crate::reply::success_schema(op.shape.schema(entity_ref(entity)), success), example)
                    }
                    None => (
                        crate::reply::success_schema(self.envelope_schema(entity, op, action == "read"), success),
                        self.envelope_example(operation, op),
                    ),
                };
                let description = match (action, single) {
                    ("read", true) => "The row.".to_string(),
                    ("read", false) => "A page of the matching rows, in key order.".to_string(),
                    ("create", _) => "The row as stored (defaults and generated fields filled in).".to_string(),
                    ("delete", _) => "The deleted row, as the operation shapes it.".to_string(),
                    _ => "The row as stored after the change.".to_string(),
                };
                let mut answer = Answer::new(op.status, description).with_body(JSON, schema);
                answer.example = example;
                if action == "read" && !single {
                    for (key, name) in &settings.page_headers {
                        let (required, schema, description) = match key.as_str() {
                            "total" => (
                                true,
                                object([("type", Value::str("string")), ("pattern", Value::str("^[0-9]+$"))]),
                                "How many rows match in all.",
                            ),
                            "cursor" => (false, string_schema(), "The cursor of the next page (absent on the last page)."),
                            _ => (false, string_schema(), "The cursor of the previous page (absent on the first page)."),
                        };
                        answer.headers.push((name.clone(), header(description, required, schema)));
                    }
                }
                out.push(answer);
            }
        }
        if self.spec.scheme != "none" {
            out.push(
                Answer::new(settings.unauthorized_status, "No acceptable credential.")
                    .with_body(errors, const_schema(&settings.unauthorized)),
            );
        }
        if self.allowed.is_some_and(|allowed| !allowed.contains(&operation.name)) {
            let refused = object([("error", Value::str("tool_not_allowed")), ("tool", Value::str(&operation.name))]);
            out.push(Answer::new(403, "This session's task does not allow the operation.").with_body(errors, const_schema(&refused)));
        }
        self.refusals(operation, op, entity.is_some(), &mut out);
        if handled || settings.before.is_some() {
            // The world's Python may answer any status with any body: the statuses
            // above stay documented, their bodies are not promised.
            for answer in &mut out {
                answer.body = None;
                answer.example = None;
                answer.headers.clear();
            }
            out.push(Answer::new("default", "Whatever the world's handler or `before` gate answers."));
        }
        out
    }

    /// The not-found, invalid and conflict answers of an operation: its own
    /// declarations (and its parent steps' not-found bodies), else `[api]`'s.
    fn refusals(&self, operation: &Operation, op: &OperationSettings, modelled: bool, out: &mut Vec<Answer>) {
        let settings = self.settings;
        let errors = settings.error_content_type.as_str();
        let finds_one = op.single || matches!(op.action.as_str(), "update" | "delete");
        let own = &op.refusals;
        if !operation.placeholders().is_empty() || (finds_one && modelled) || op.nesting.is_some() {
            let status = own.not_found.as_ref().map_or(settings.not_found_status, |r| r.status);
            let body = own.not_found.as_ref().map_or(&settings.not_found, |r| &r.body);
            let mut bodies = vec![const_schema(body)];
            for step in op.nesting.iter().flat_map(|n| &n.parents) {
                if let Some(body) = &step.not_found {
                    bodies.push(const_schema(body));
                }
            }
            let schema = if bodies.len() == 1 { bodies.remove(0) } else { object([("anyOf", Value::Array(bodies))]) };
            out.push(Answer::new(status, "No such route, no such parent, or no single row matches.").with_body(errors, schema));
        }
        // An unrouted path answers `[api]`'s not-found whatever the operation's.
        if own.not_found.is_some() && !operation.placeholders().is_empty() {
            out.push(Answer::new(settings.not_found_status, "No such route.").with_body(errors, const_schema(&settings.not_found)));
        }
        let writes = matches!(op.action.as_str(), "create" | "update" | "delete");
        if writes || matches!(operation.method.as_str(), "POST" | "PUT" | "PATCH") || !op.required.is_empty() {
            let (status, body) = own.invalid.as_ref().map_or((settings.invalid_status, &settings.invalid), |r| (r.status, &r.body));
            out.push(
                Answer::new(status, "The body is not JSON, a required parameter is missing, or the world's contract refuses the change.")
                    .with_body(errors, invalid_schema(body)),
            );
        }
        if let Some(conflict) =
            own.conflict.as_ref().or(settings.conflict.as_ref()).filter(|_| matches!(op.action.as_str(), "create" | "update"))
        {
            out.push(
                Answer::new(conflict.status, "A primary or unique key is taken already.").with_body(errors, const_schema(&conflict.body)),
            );
        }
    }

    fn summary(&self, operation: &Operation, op: &OperationSettings) -> String {
        let entity = operation.entity.as_deref().unwrap_or("");
        match op.action.as_str() {
            "handler" => format!("Answered by the handler `{}` in api/handlers.py.", op.handler.as_deref().unwrap_or_default()),
            _ if self.entity(operation).is_none() => String::from("Not modelled by this world (501)."),
            "read" if op.single => format!("One `{entity}` row."),
            "read" => format!("A page of `{entity}` rows."),
            "create" => format!("Create a `{entity}` row."),
            "update" => format!("Update one `{entity}` row."),
            _ => format!("Delete one `{entity}` row."),
        }
    }

    fn operation(&self, operation: &Operation) -> Map {
        let op = self.settings.for_operation(&operation.name);
        let mut entry = Map::default();
        entry.insert("operationId".into(), Value::str(&operation.name));
        entry.insert("summary".into(), Value::Str(self.summary(operation, &op)));
        entry.insert("parameters".into(), Value::Array(self.parameters(operation, &op)));
        if let Some(body) = self.request_body(operation, &op) {
            entry.insert("requestBody".into(), body);
        }
        let mut responses = Map::default();
        for answer in self.answers(operation, &op) {
            merge_response(&mut responses, &answer);
        }
        entry.insert("responses".into(), Value::Object(responses));
        if self.spec.scheme != "none" {
            entry.insert("security".into(), Value::Array(vec![object([("vendor", Value::Array(Vec::new()))])]));
        }
        if let Some(entity) = &operation.entity {
            entry.insert("x-gateway-entity".into(), Value::str(entity));
        }
        entry.insert("x-gateway-action".into(), Value::str(&op.action));
        entry
    }

    fn security_scheme(&self) -> Option<Value> {
        let spec = self.spec;
        let scheme = match spec.scheme.as_str() {
            "header" | "query" => object([
                ("type", Value::str("apiKey")),
                ("in", Value::str(&spec.scheme)),
                ("name", Value::str(spec.auth_name.clone().unwrap_or_default())),
            ]),
            "bearer" | "basic" => object([("type", Value::str("http")), ("scheme", Value::str(&spec.scheme))]),
            "oauth2" => {
                let token_path = self.settings.token_path.as_deref().unwrap_or_default();
                let token_url = format!("{}{token_path}", self.prefix).trim_start_matches('/').to_string();
                let scope = spec.scope.clone().unwrap_or_else(|| "api".into());
                let flow = object([("tokenUrl", Value::Str(token_url)), ("scopes", object([(scope.as_str(), Value::str("API access"))]))]);
                object([("type", Value::str("oauth2")), ("flows", object([("clientCredentials", flow)]))])
            }
            _ => return None,
        };
        Some(scheme)
    }

    /// The token endpoint of an oauth2 world, as `Router::issue_token` answers it.
    fn token_operation(&self) -> Value {
        let text = string_schema();
        let form = object([
            ("type", Value::str("object")),
            (
                "properties",
                object([
                    (
                        "grant_type",
                        object([
                            ("type", Value::str("string")),
                            ("enum", Value::Array(["client_credentials", "password", "refresh_token"].map(Value::str).to_vec())),
                        ]),
                    ),
                    ("client_id", text.clone()),
                    ("client_secret", text.clone()),
                    ("scope", text.clone()),
                    ("username", text.clone()),
                    ("email", text.clone()),
                    ("password", text.clone()),
                    ("refresh_token", text.clone()),
                ]),
            ),
        ]);
        let issued = object([
            ("type", Value::str("object")),
            (
                "properties",
                object([
                    ("access_token", text.clone()),
                    ("token_type", const_schema(&Value::str("Bearer"))),
                    ("expires_in", object([("type", Value::str("integer"))])),
                    ("scope", text.clone()),
                    ("id_token", text.clone()),
                    ("refresh_token", text),
                ]),
            ),
            ("required", Value::Array(["access_token", "token_type", "expires_in"].map(Value::str).to_vec())),
        ]);
        let refused = const_schema(&object([("error", Value::str("invalid_client"))]));
        let mut responses = Map::default();
        merge_response(&mut responses, &Answer::new(200, "A token.").with_body(JSON, issued));
        merge_response(&mut responses, &Answer::new(400, "The grant is refused.").with_body(&self.settings.error_content_type, refused));
        object([
            ("operationId", Value::str("issue_token")),
            ("summary", Value::str("Mint a bearer token (client_credentials, password or refresh_token grant).")),
            (
                "requestBody",
                object([(
                    "content",
                    object([("application/x-www-form-urlencoded", object([("schema", form.clone())])), (JSON, object([("schema", form)]))]),
                )]),
            ),
            ("responses", Value::Object(responses)),
            ("security", Value::Array(Vec::new())),
        ])
    }

    /// OPTIONS (or any method the world does not route) on a path: the 405 naming
    /// the methods that path serves.
    fn refused_method(&self, template: &str) -> Value {
        let parameters: Vec<Value> = gateway_connector::spec::placeholders(template)
            .into_iter()
            .fold(Vec::new(), |mut names, name| {
                if !names.contains(&name) {
                    names.push(name);
                }
                names
            })
            .into_iter()
            .map(path_parameter)
            .collect();
        let mut answer = Answer::new(405, "The world answers this path only with the methods `Allow` names.")
            .with_body(&self.settings.error_content_type, const_schema(&object([("error", Value::str("method_not_allowed"))])));
        answer.headers.push(("Allow".into(), header("The methods this path serves.", true, string_schema())));
        let mut responses = Map::default();
        merge_response(&mut responses, &answer);
        object([
            ("summary", Value::str("Any method other than GET, POST, PUT, PATCH and DELETE is refused.")),
            ("parameters", Value::Array(parameters)),
            ("responses", Value::Object(responses)),
            ("security", Value::Array(Vec::new())),
        ])
    }

    /// The whole document.
    pub fn document(&self) -> Value {
        let mut paths: Map = Map::default();
        for operation in &self.spec.operations {
            let entry = self.operation(operation);
            let Value::Object(methods) = paths.entry(operation.path.clone()).or_insert_with(|| Value::Object(Map::default())) else {
                continue;
            };
            let method = operation.method.to_lowercase();
            match methods.get_mut(&method) {
                // OpenAPI keys one operation per path and method: a vendor that tells
                // lookups apart by query parameter has them merged into one.
                Some(Value::Object(existing)) => merge_variant(existing, entry),
                _ => {
                    methods.insert(method, Value::Object(entry));
                }
            }
        }
        if let (Some(token_path), "oauth2") = (&self.settings.token_path, self.spec.scheme.as_str()) {
            let methods = paths.entry(token_path.clone()).or_insert_with(|| Value::Object(Map::default()));
            if let Value::Object(methods) = methods {
                methods.insert("post".into(), self.token_operation());
            }
        }
        let templates: Vec<String> = paths.keys().cloned().collect();
        for template in templates {
            let refused = self.refused_method(&template);
            if let Some(Value::Object(methods)) = paths.get_mut(&template) {
                methods.insert("options".into(), refused);
            }
        }
        let mut schemas = Map::default();
        for entity in &self.contract.entities {
            let mut schema = entity.schema.as_object().cloned().unwrap_or_default();
            if let Some(rows) = self.samples.get(&entity.name).filter(|rows| !rows.is_empty()) {
                schema.insert("examples".into(), Value::Array(rows.clone()));
            }
            schemas.insert(entity.name.clone(), Value::Object(schema));
        }
        let mut components = Map::default();
        components.insert("schemas".into(), Value::Object(schemas));
        if let Some(scheme) = self.security_scheme() {
            components.insert("securitySchemes".into(), object([("vendor", scheme)]));
        }
        let contract_id = self.contract.target().get("id").map(python_str).unwrap_or_default();
        let description = format!(
            "The API of `{}` as this world serves it, in place of {}. Answers come from the world's state; \
             `/__world/state`, `/__world/reset` and `/__world/seed` (outside this document) read, reset and seed it.",
            self.spec.slug, self.spec.base_url
        );
        // Relative to where the document is served, so it holds both for `worlds serve`
        // (`/openapi.json`) and for a hosted session (`/s/<session>/openapi.json`).
        let server = if self.prefix.is_empty() { "." } else { self.prefix.trim_start_matches('/') };
        object([
            ("openapi", Value::str("3.1.0")),
            (
                "info",
                object([
                    ("title", Value::str(&self.spec.slug)),
                    ("version", Value::str("1.0.0")),
                    ("description", Value::Str(description)),
                    ("x-gateway-domain", Value::Str(contract_id)),
                ]),
            ),
            ("servers", Value::Array(vec![object([("url", Value::str(server)), ("description", Value::str("This world"))])])),
            ("paths", Value::Object(paths)),
            ("components", Value::Object(components)),
        ])
    }
}

/// Add a response to an operation's `responses`; a status described twice (two
/// settings sharing a status, or merged variants) takes either body.
fn merge_response(responses: &mut Map, answer: &Answer) {
    let rendered = answer.render();
    let Some(existing) = responses.get_mut(&answer.status) else {
        responses.insert(answer.status.clone(), rendered);
        return;
    };
    if canonical(existing) == canonical(&rendered) {
        return;
    }
    let Value::Object(existing) = existing else { return };
    let description = format!("{} Or: {}", existing.get("description").and_then(Value::as_str).unwrap_or(""), answer.description);
    existing.insert("description".into(), Value::Str(description));
    let theirs = rendered.get("content").cloned();
    let merged = match (existing.get("content").cloned(), theirs) {
        (Some(Value::Object(mine)), Some(Value::Object(theirs))) if mine.keys().eq(theirs.keys()) && mine.len() == 1 => {
            let (media, mine) = mine.into_iter().next().expect("one media type");
            let theirs = theirs.get(&media).cloned().unwrap_or_default();
            let schemas = [mine.get("schema"), theirs.get("schema")].into_iter().flatten().cloned().collect();
            Some(object([(media.as_str(), object([("schema", object([("anyOf", Value::Array(schemas))]))]))]))
        }
        // Different media types, or a status with and without a body: no promise.
        _ => None,
    };
    match merged {
        Some(content) => existing.insert("content".into(), content),
        None => existing.shift_remove("content"),
    };
    existing.shift_remove("headers");
}

/// Merge another operation on the same path and method into `existing`: its
/// parameters (none required but path ones), its answers, and its name kept under
/// `x-gateway-variants`.
fn merge_variant(existing: &mut Map, variant: Map) {
    let known = |existing: &Map, parameter: &Value| {
        existing.get("parameters").and_then(Value::as_array).is_some_and(|present| {
            present.iter().any(|p| {
                p.get("name").map(canonical) == parameter.get("name").map(canonical)
                    && p.get("in").map(canonical) == parameter.get("in").map(canonical)
            })
        })
    };
    for parameter in variant.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default() {
        if !known(existing, &parameter) {
            if let Some(Value::Array(parameters)) = existing.get_mut("parameters") {
                parameters.push(parameter);
            }
        }
    }
    if let (Some(Value::Object(theirs)), Some(Value::Object(_))) = (variant.get("responses"), existing.get("responses")) {
        for (status, response) in theirs {
            let Some(Value::Object(responses)) = existing.get_mut("responses") else { break };
            let answer = Answer {
                status: status.clone(),
                description: response.get("description").and_then(Value::as_str).unwrap_or("").to_string(),
                body: response
                    .get("content")
                    .and_then(Value::as_object)
                    .and_then(|c| c.iter().next())
                    .map(|(media, m)| (media.clone(), m.get("schema").cloned().unwrap_or_default())),
                headers: Vec::new(),
                example: None,
            };
            merge_response(responses, &answer);
        }
    }
    if variant.get("requestBody").is_some() && existing.get("requestBody").is_none() {
        existing.insert("requestBody".into(), variant.get("requestBody").cloned().unwrap_or_default());
    } else if let (Some(mine), Some(theirs)) = (existing.get("requestBody"), variant.get("requestBody")) {
        if canonical(mine) != canonical(theirs) {
            // Two different bodies on one method and path: either is taken.
            let any = object([("content", object([(JSON, object([("schema", object([("type", Value::str("object"))]))]))]))]);
            existing.insert("requestBody".into(), any);
        }
    }
    let summary = object([
        ("operationId", variant.get("operationId").cloned().unwrap_or_default()),
        ("x-gateway-action", variant.get("x-gateway-action").cloned().unwrap_or_default()),
    ]);
    match existing.get_mut("x-gateway-variants") {
        Some(Value::Array(variants)) => variants.push(summary),
        _ => {
            existing.insert("x-gateway-variants".into(), Value::Array(vec![summary]));
        }
    }
}

/// Put `value` at a dotted place of an object, creating the objects between.
fn place_value(target: &mut Value, place: &str, value: Value) {
    let parts: Vec<&str> = place.split('.').collect();
    let mut node = target;
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(map) = node else { return };
        if i + 1 == parts.len() {
            map.insert(part.to_string(), value);
            return;
        }
        node = map.entry(part.to_string()).or_insert_with(|| Value::Object(Map::default()));
    }
}

/// Text for HTML (the five characters that matter).
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

const PAGE_STYLE: &str = "body{font:15px system-ui,sans-serif;margin:2rem auto;max-width:64rem;padding:0 1rem;color:#222}\
h2{margin-top:2.2rem;border-bottom:1px solid #ccc}h3{margin:1.4rem 0 .4rem;font-size:16px}\
table{border-collapse:collapse;width:100%;margin:.3rem 0}td,th{border-bottom:1px solid #e4e4e4;padding:.3rem;text-align:left;vertical-align:top}\
code,pre{font-size:13px}pre{background:#f6f6f6;padding:.6rem;overflow:auto;max-height:18rem}\
.m{display:inline-block;min-width:4.5rem;font-weight:600}";

fn schema_text(schema: Option<&Value>) -> String {
    let Some(schema) = schema else { return String::new() };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        return reference.rsplit('/').next().unwrap_or(reference).to_string();
    }
    if schema.get("const").is_some() {
        return String::from("exactly");
    }
    let mut text = match schema.get("type") {
        Some(Value::Str(one)) => one.clone(),
        Some(Value::Array(many)) => many.iter().map(python_str).collect::<Vec<_>>().join(" | "),
        _ => String::from("any"),
    };
    if let Some(Value::Array(choices)) = schema.get("enum") {
        text.push_str(&format!(" ∈ {{{}}}", choices.iter().map(canonical).collect::<Vec<_>>().join(", ")));
    }
    text
}

/// Escaped text with its `code` spans (OpenAPI descriptions are CommonMark) as `<code>`.
fn prose(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in escape_html(text).split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(part);
            out.push_str("</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

fn pretty(value: &Value) -> String {
    gateway_world::json::dumps(
        value,
        gateway_world::json::DumpOptions { sort_keys: false, ensure_ascii: false, indent: Some(2), compact: false },
    )
}

/// The `/docs` page: every operation of the document with its parameters, body,
/// answers and examples. Static HTML, no script and nothing fetched from elsewhere.
pub fn docs_page(document: &Value) -> String {
    let title = document.get("info").and_then(|i| i.get("title")).map(python_str).unwrap_or_default();
    let description = document.get("info").and_then(|i| i.get("description")).map(python_str).unwrap_or_default();
    let server = document.get("servers").and_then(Value::as_array).and_then(|s| s.first()).and_then(|s| s.get("url")).map(python_str);
    let server = server.unwrap_or_default();
    let mut html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{0} API</title><style>{PAGE_STYLE}</style></head><body>\
         <h1>{0}</h1><p>{1}</p><p>Routes below are under <code>{2}</code> · the document: <a href=\"openapi.json\">openapi.json</a></p>",
        escape_html(&title),
        prose(&description),
        escape_html(&server),
    );
    let empty = Map::default();
    let paths = document.get("paths").and_then(Value::as_object).unwrap_or(&empty);
    for (path, methods) in paths {
        html.push_str(&format!("<h2><code>{}</code></h2>", escape_html(path)));
        for (method, entry) in methods.as_object().unwrap_or(&empty) {
            let name = entry.get("operationId").map(python_str).unwrap_or_default();
            let summary = entry.get("summary").map(python_str).unwrap_or_default();
            html.push_str(&format!(
                "<h3><span class=\"m\">{}</span> <code>{}</code> {}</h3>",
                escape_html(&method.to_uppercase()),
                escape_html(&name),
                prose(&summary)
            ));
            let parameters = entry.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default();
            if !parameters.is_empty() {
                html.push_str("<table><tr><th>parameter</th><th>in</th><th>type</th><th>meaning</th></tr>");
                for parameter in &parameters {
                    html.push_str(&format!(
                        "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                        escape_html(&parameter.get("name").map(python_str).unwrap_or_default()),
                        escape_html(&parameter.get("in").map(python_str).unwrap_or_default()),
                        escape_html(&schema_text(parameter.get("schema"))),
                        prose(&parameter.get("description").map(python_str).unwrap_or_default()),
                    ));
                }
                html.push_str("</table>");
            }
            if let Some(body) = entry.get("requestBody") {
                let media = body.get("content").and_then(Value::as_object).and_then(|c| c.values().next());
                html.push_str(&format!("<p>Body: {}</p>", prose(&body.get("description").map(python_str).unwrap_or_default())));
                if let Some(example) = media.and_then(|m| m.get("example")) {
                    html.push_str(&format!("<pre>{}</pre>", escape_html(&pretty(example))));
                }
            }
            html.push_str("<table><tr><th>status</th><th>answer</th><th>body</th></tr>");
            for (status, response) in entry.get("responses").and_then(Value::as_object).unwrap_or(&empty) {
                let media = response.get("content").and_then(Value::as_object).and_then(|c| c.values().next());
                let example = media.and_then(|m| m.get("example").or_else(|| m.get("schema").and_then(|s| s.get("const"))));
                html.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td><code>{}</code>{}</td></tr>",
                    escape_html(status),
                    prose(&response.get("description").map(python_str).unwrap_or_default()),
                    escape_html(&schema_text(media.and_then(|m| m.get("schema")))),
                    example.map(|e| format!("<pre>{}</pre>", escape_html(&pretty(e)))).unwrap_or_default(),
                ));
            }
            html.push_str("</table>");
        }
    }
    html.push_str("</body></html>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Value {
        gateway_world::json::parse(text).unwrap().value
    }

    #[test]
    fn html_escaping_leaves_no_markup() {
        assert_eq!(escape_html("<script>a&\"b'</script>"), "&lt;script&gt;a&amp;&quot;b&#39;&lt;/script&gt;");
        assert_eq!(escape_html("get_ticket"), "get_ticket");
        assert_eq!(prose("rows of `<b>` & `x"), "rows of <code>&lt;b&gt;</code> &amp; <code>x</code>");
    }

    #[test]
    fn examples_are_given_where_they_fit() {
        assert!(fits(&parsed(r#"{"type": "integer"}"#), &Value::Int(3)));
        assert!(!fits(&parsed(r#"{"type": "integer"}"#), &Value::str("3")));
        assert!(!fits(&parsed(r#"{"type": "string", "enum": ["a"]}"#), &Value::str("b")));
        assert_eq!(canonical(&typed_sample(&parsed(r#"{"type": "integer"}"#), "12")), "12");
    }

    #[test]
    fn an_invalid_body_may_carry_the_refusal() {
        let schema = invalid_schema(&parsed(r#"{"error": "RecordInvalid", "detail": "x"}"#));
        assert_eq!(
            canonical(&schema),
            r#"{"properties":{"detail":{"description":"Why the world refused the request."},"error":{"const":"RecordInvalid"}},"required":["error"],"type":"object"}"#
        );
    }

    #[test]
    fn mapped_examples_nest_their_places() {
        let mut example = Value::Object(Map::default());
        place_value(&mut example, "ticket.subject", Value::str("hi"));
        assert_eq!(canonical(&example), r#"{"ticket":{"subject":"hi"}}"#);
    }

    #[test]
    fn a_status_described_twice_takes_either_body() {
        let mut responses = Map::default();
        merge_response(&mut responses, &Answer::new(404, "a").with_body(JSON, const_schema(&Value::Int(1))));
        merge_response(&mut responses, &Answer::new(404, "b").with_body(JSON, const_schema(&Value::Int(2))));
        assert_eq!(
            canonical(&Value::Object(responses)),
            r#"{"404":{"content":{"application/json":{"schema":{"anyOf":[{"const":1},{"const":2}]}}},"description":"a Or: b"}}"#
        );
    }
}

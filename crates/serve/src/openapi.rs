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

use crate::arguments;
use crate::bundle::string_schema;
use crate::dotted::dig;
use crate::settings::types::{ApiSettings, OperationSettings, Paging};
use gateway_connector::spec::{Operation, Spec};
use gateway_world::compiler::{Contract, Entity};
use gateway_world::json::{object, python_str, Map, Value};
use parts::{described, fits, merge_response, merge_variant, place_value, typed_sample, JSON};
use std::collections::BTreeMap;

mod docs_page;
mod parts;
mod responses;

pub use docs_page::{docs_page, escape_html};

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
        arguments::argument(self.entity(operation), op, arg)
    }

    /// An example of an argument: the operation's `api.sample`, else the seed row's field.
    fn argument_example(&self, operation: &Operation, op: &OperationSettings, arg: &str, schema: &Value) -> Option<Value> {
        if let Some(text) = op.sample.get(arg) {
            return Some(typed_sample(schema, text));
        }
        let (_, path) = op.filter.iter().find(|(a, _)| a == arg)?;
        let value = dig(self.sample(operation)?, path)?;
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
        let (schema, description) = arguments::body(operation, self.entity(operation), op)?;
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
                if let Some(value) = dig(sample, field).filter(|v| !matches!(v, Value::Null)) {
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
        entry.insert("summary".into(), Value::Str(self.summary(operation, op)));
        entry.insert("parameters".into(), Value::Array(self.parameters(operation, op)));
        if let Some(body) = self.request_body(operation, op) {
            entry.insert("requestBody".into(), body);
        }
        let mut responses = Map::default();
        for answer in self.answers(operation, op) {
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

//! What each operation of the served OpenAPI document answers: its statuses with the
//! bodies the server sends (a page in its envelope, a row shaped as declared, a
//! constant, the connector's 401/404/422/409 bodies, a 403 outside a session's task,
//! the 501 of an unmodelled entity), what a handler or the gate leaves open; the
//! oauth2 token endpoint, and the 405 of a method no route takes.

use super::parts::{const_schema, entity_ref, header, invalid_schema, merge_response, Answer, JSON};
use super::World;
use crate::bundle::{path_parameter, string_schema};
use crate::page::{wrap_with, Page};
use crate::reply::{succeed, success_schema};
use crate::settings::types::OperationSettings;
use gateway_connector::spec::Operation;
use gateway_world::json::{object, Map, Value};

impl World<'_> {
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
        let mut example =
            wrap_with(Page::whole(vec![row]), self.settings, op.envelope.as_deref(), op.more_key.as_ref(), &self.settings.paging, None);
        succeed(&mut example, &self.settings.success);
        Some(example)
    }

    /// The statuses an operation answers, each with the body the server sends.
    pub(super) fn answers(&self, operation: &Operation, op: &OperationSettings) -> Vec<Answer> {
        let settings = self.settings;
        let errors = settings.error_content_type.as_str();
        let mut out = Vec::new();
        // The entity's rows are only promised when the contract models it.
        let entity = operation.entity.as_deref().filter(|_| self.entity(operation).is_some());
        let handled = op.action == "handler";
        match (op.action.as_str(), operation.entity.as_deref(), entity) {
            ("static", _, _) => {
                let mut constant = op.answer.clone().unwrap_or_default();
                succeed(&mut constant, &settings.success);
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
                        succeed(&mut constant, success);
                        (const_schema(&constant), Some(constant))
                    }
                    None if single => {
                        let example = self.sample(operation).map(|row| {
                            let mut shaped = op.shape.apply(row.clone());
                            succeed(&mut shaped, success);
                            shaped
                        });
                        (success_schema(op.shape.schema(entity_ref(entity)), success), example)
                    }
                    None => {
                        (success_schema(self.envelope_schema(entity, op, action == "read"), success), self.envelope_example(operation, op))
                    }
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

    /// The token endpoint of an oauth2 world, as `Router::issue_token` answers it.
    pub(super) fn token_operation(&self) -> Value {
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
    pub(super) fn refused_method(&self, template: &str) -> Value {
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
}

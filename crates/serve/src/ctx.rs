//! The `ctx` a world's Python handlers call back into: the store (rows, get, find,
//! insert, update, delete, read-only sql), ids and the clock, paging and envelopes,
//! refusals, and what a handler or the `before` gate adds to the answer — each
//! answered from the world's state by [`Host`].
//!
//! A call's writes are one transaction ([`HandlerWrites`]): the caller commits
//! them when the handler answered and rolls them back when it failed. Also here:
//! `ctx.spec` and `ctx.settings` as a handler sees them.

use crate::clock::{draw_uuid, read_clock, Determinism};
use crate::handlers::{CtxError, CtxHost};
use crate::page::{page_headers, paginate, wrap, Link};
use crate::settings::types::ApiSettings;
use crate::state::handler_writes::HandlerWrites;
use crate::state::{api_source, matches, Filter, WorldState};
use gateway_world::error::Error as WorldError;
use gateway_world::json::{object, python_str, Map, Value};

/// Answers a handler's `ctx` calls from the world's state.
pub(crate) struct Host<'a> {
    /// The session's state.
    pub(crate) state: &'a WorldState,
    /// The world's `[api]` settings.
    pub(crate) settings: &'a ApiSettings,
    /// The session's frozen clock and seeded ids, if any.
    pub(crate) determinism: Option<&'a Determinism>,
    /// Where the request was served, for page links.
    pub(crate) link: &'a Link,
    /// The call's writes, one transaction.
    pub(crate) writes: HandlerWrites<'a>,
    /// What the call added to the answer (`ctx.add_headers`, `ctx.add_fields`).
    pub(crate) added: Added,
}

/// What a handler or the gate added to the request's answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct Added {
    /// Headers, in the order added (a later value of a name replaces an earlier one).
    pub(crate) headers: Vec<(String, String)>,
    /// Members of a successful object answer.
    pub(crate) fields: Map,
}

impl Added {
    fn headers(&mut self, headers: &Value) -> Result<(), CtxError> {
        let Some(map) = headers.as_object().filter(|m| m.values().all(|v| v.as_str().is_some())) else {
            return Err(CtxError::Other("ctx.add_headers takes a mapping of header names to strings".into()));
        };
        for (name, value) in map {
            self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
            self.headers.push((name.clone(), value.as_str().unwrap_or_default().to_string()));
        }
        Ok(())
    }

    fn fields(&mut self, fields: &Value) -> Result<(), CtxError> {
        let Some(map) = fields.as_object() else {
            return Err(CtxError::Other("ctx.add_fields takes a mapping of member names to values".into()));
        };
        map.iter().for_each(|(k, v)| {
            self.fields.insert(k.clone(), v.clone());
        });
        Ok(())
    }
}

/// A JSON object's members as query pairs (`ctx.paged`'s `query`).
fn query_pairs(value: Option<&Value>) -> Vec<(String, String)> {
    match value {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), python_str(v))).collect(),
        _ => Vec::new(),
    }
}

fn ctx_error(error: WorldError) -> CtxError {
    match error {
        WorldError::Contract(contract) => CtxError::Contract(contract.detail()),
        other => CtxError::Other(other.to_string()),
    }
}

impl Host<'_> {
    /// Every row of `entity`, as the call sees the store (its own writes included).
    fn rows(&self, entity: &str) -> Result<Vec<Value>, CtxError> {
        match self.writes.store() {
            Some(store) => store.list(entity),
            None => self.state.rows(entity),
        }
        .map_err(ctx_error)
    }

    fn get(&self, entity: &str, key: &Value) -> Result<Value, CtxError> {
        match self.writes.store() {
            Some(store) => store.get(entity, key),
            None => self.state.get(entity, key),
        }
        .map(Option::unwrap_or_default)
        .map_err(ctx_error)
    }

    /// `ctx.envelope` and `ctx.paged`: rows paged and wrapped as the world's lists are.
    fn page(&self, method: &str, params: &Value) -> Value {
        let settings = self.settings;
        let rows = params.get("rows").and_then(Value::as_array).cloned().unwrap_or_default();
        let page = paginate(rows, &query_pairs(params.get("query")), &settings.paging);
        let envelope = params.get("envelope").and_then(Value::as_str);
        let headers = page_headers(&page, settings, &settings.paging, Some(self.link));
        let body = wrap(page, settings, envelope, &settings.paging, Some(self.link));
        if method == "envelope" {
            return body;
        }
        let status = params.get("status").cloned().unwrap_or(Value::Int(200));
        let headers = headers.map(|h| Value::Object(h.into_iter().map(|(k, v)| (k, Value::Str(v))).collect())).unwrap_or_default();
        Value::Array(vec![status, body, headers])
    }
}

impl CtxHost for Host<'_> {
    fn call(&mut self, method: &str, params: &Value) -> Result<Value, CtxError> {
        let (state, settings) = (self.state, self.settings);
        let text = |name: &str| params.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
        let null = Value::Null;
        let param = |name: &str| params.get(name).unwrap_or(&null);
        let entity = text("entity");
        match method {
            "uuid" => Ok(Value::Str(draw_uuid(self.determinism))),
            "clock" => Ok(Value::Float(read_clock(self.determinism))),
            "rows" => self.rows(&entity).map(Value::Array),
            "get" => self.get(&entity, param("key")),
            "find" => {
                let filters: Vec<Filter> = param("fields")
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| Filter { path: k.clone(), mode: "equals".into(), wanted: python_str(v).to_lowercase() })
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(Value::Array(self.rows(&entity)?.into_iter().filter(|r| matches(r, &filters)).collect()))
            }
            "insert" => {
                self.writes.write(&entity, |s| s.insert(&entity, param("value"), Some(api_source("api.create")))).map_err(ctx_error)
            }
            "update" => self
                .writes
                .write(&entity, |s| s.update(&entity, param("key"), param("patch"), Some(api_source("api.update"))))
                .map(Option::unwrap_or_default)
                .map_err(ctx_error),
            "delete" => self
                .writes
                .write(&entity, |s| s.delete(&entity, param("key"), Some(api_source("api.delete"))))
                .map(|_| Value::Null)
                .map_err(ctx_error),
            "sql" => {
                let (sql, args) = (text("sql"), param("params"));
                let refusal = "Raw SQL writes are not allowed in a handler; use ctx.insert, ctx.update or ctx.delete";
                match self.writes.read(|conn| Ok(crate::sql::read_only(conn, &sql, args, refusal))) {
                    Ok(answer) => answer,
                    Err(error) => Err(ctx_error(error)),
                }
            }
            "key_of" => {
                let fields = state.contract().entity(&entity).map(|e| e.primary_key.clone()).unwrap_or_default();
                let row = param("row");
                Ok(object(fields.iter().map(|f| (f.clone(), row.get(f).cloned().unwrap_or_default()))))
            }
            "envelope" | "paged" => Ok(self.page(method, params)),
            "not_found" => Ok(Value::Array(vec![Value::Int(settings.not_found_status), settings.not_found.clone()])),
            "invalid" => {
                let mut body = settings.invalid.clone();
                if let (Some(Value::Str(detail)), Value::Object(map)) = (params.get("detail"), &mut body) {
                    if !detail.is_empty() {
                        map.insert("detail".into(), Value::str(detail));
                    }
                }
                Ok(Value::Array(vec![Value::Int(settings.invalid_status), body]))
            }
            "add_headers" => self.added.headers(param("headers")).map(|()| Value::Null),
            "add_fields" => self.added.fields(param("fields")).map(|()| Value::Null),
            other => Err(CtxError::Other(format!("unknown ctx method {other}"))),
        }
    }
}

fn opt(value: &Option<String>) -> Value {
    value.clone().map(Value::Str).unwrap_or_default()
}

/// The connection spec's fields, for `ctx.spec`.
pub(crate) fn spec_value(spec: &gateway_connector::spec::Spec) -> Value {
    object([
        ("slug", Value::str(&spec.slug)),
        ("base_url", Value::str(&spec.base_url)),
        ("scheme", Value::str(&spec.scheme)),
        ("auth_name", opt(&spec.auth_name)),
        ("secret_env", opt(&spec.secret_env)),
        ("extra_headers", Value::Object(spec.extra_headers.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect())),
        ("token_url", opt(&spec.token_url)),
        ("client_id_env", opt(&spec.client_id_env)),
        ("scope", opt(&spec.scope)),
        ("requests_per_minute", Value::Int(spec.requests_per_minute)),
        ("timeout_seconds", Value::Float(spec.timeout_seconds)),
        ("max_pages", Value::Int(spec.max_pages)),
        ("cursor_param", opt(&spec.cursor_param)),
        ("cursor_field", opt(&spec.cursor_field)),
        ("cursor_header", opt(&spec.cursor_header)),
    ])
}

/// The `[api]` settings, for `ctx.settings`.
pub(crate) fn settings_value(settings: &ApiSettings) -> Value {
    let paging = &settings.paging;
    let strings = |pairs: &[(String, String)]| Value::Object(pairs.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect());
    object([
        ("envelope", Value::str(&settings.envelope)),
        ("unauthorized", settings.unauthorized.clone()),
        ("not_found", settings.not_found.clone()),
        ("filters", Value::Object(settings.operations.iter().map(|(name, op)| (name.clone(), strings(&op.filter))).collect())),
        ("unauthorized_status", Value::Int(settings.unauthorized_status)),
        ("not_found_status", Value::Int(settings.not_found_status)),
        ("invalid", settings.invalid.clone()),
        ("invalid_status", Value::Int(settings.invalid_status)),
        ("error_content_type", Value::str(&settings.error_content_type)),
        ("hits_key", Value::Str(settings.hits_key.to_string())),
        ("cursor_key", Value::Str(settings.cursor_key.to_string())),
        ("previous_key", opt(&settings.previous_key)),
        ("page_headers", Value::Object(settings.page_headers.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect())),
        ("page_links", Value::Bool(settings.page_links)),
        (
            "paging",
            object([
                ("style", Value::str(&paging.style)),
                ("limit_param", Value::str(&paging.limit_param)),
                ("offset_param", Value::str(&paging.offset_param)),
                ("cursor_param", Value::str(&paging.cursor_param)),
                ("page_size", Value::Int(paging.page_size)),
            ]),
        ),
        ("token_path", opt(&settings.token_path)),
        ("handlers", settings.handlers.as_ref().map(|p| Value::Str(p.display().to_string())).unwrap_or_default()),
        ("before", opt(&settings.before)),
    ])
}

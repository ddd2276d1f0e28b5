//! The `ctx` a world's Python handlers call back into: the store (rows, get, find,
//! insert, update, delete), ids and the clock, paging and envelopes, refusals —
//! each answered from the world's state by [`Host`].

use crate::app::{query_pairs, source, WorldApp};
use crate::handlers::{CtxError, CtxHost};
use crate::page::{page_headers, paginate, wrap, Link};
use crate::state::{matches, Filter};
use gateway_world::error::Error as WorldError;
use gateway_world::json::{object, python_str, Value};

/// Answers a handler's `ctx` calls from the world's state.
pub(crate) struct Host<'a> {
    pub(crate) app: &'a WorldApp,
    pub(crate) link: &'a Link,
}

fn ctx_error(error: WorldError) -> CtxError {
    match error {
        WorldError::Contract(contract) => CtxError::Contract(contract.detail()),
        other => CtxError::Other(other.to_string()),
    }
}

impl CtxHost for Host<'_> {
    fn call(&mut self, method: &str, params: &Value) -> Result<Value, CtxError> {
        let app = self.app;
        let text = |name: &str| params.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
        let null = Value::Null;
        let param = |name: &str| params.get(name).unwrap_or(&null);
        let entity = text("entity");
        let rows_of = |value: &Value| value.as_array().cloned().unwrap_or_default();
        match method {
            "uuid" => Ok(Value::Str(app.uuid())),
            "clock" => Ok(Value::Float(app.clock())),
            "rows" => app.state.rows(&entity).map(Value::Array).map_err(ctx_error),
            "get" => app.state.get(&entity, param("key")).map(Option::unwrap_or_default).map_err(ctx_error),
            "find" => {
                let filters: Vec<Filter> = param("fields")
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| Filter { path: k.clone(), mode: "equals".into(), wanted: python_str(v).to_lowercase() })
                            .collect()
                    })
                    .unwrap_or_default();
                let rows = app.state.rows(&entity).map_err(ctx_error)?;
                Ok(Value::Array(rows.into_iter().filter(|r| matches(r, &filters)).collect()))
            }
            "insert" => {
                app.state.write(|s| s.insert(&entity, param("value"), Some(source("api.create"))), Some(&entity)).map_err(ctx_error)
            }
            "update" => app
                .state
                .write(|s| s.update(&entity, param("key"), param("patch"), Some(source("api.update"))), Some(&entity))
                .map(Option::unwrap_or_default)
                .map_err(ctx_error),
            "delete" => app
                .state
                .write(|s| s.delete(&entity, param("key"), Some(source("api.delete"))), Some(&entity))
                .map(|_| Value::Null)
                .map_err(ctx_error),
            "key_of" => {
                let fields = app.state.contract().entity(&entity).map(|e| e.primary_key.clone()).unwrap_or_default();
                let row = param("row");
                Ok(object(fields.iter().map(|f| (f.clone(), row.get(f).cloned().unwrap_or_default()))))
            }
            "envelope" | "paged" => {
                let query = query_pairs(params.get("query"));
                let page = paginate(rows_of(param("rows")), &query, &app.settings.paging);
                let envelope = params.get("envelope").and_then(Value::as_str).map(str::to_string);
                let headers = page_headers(&page, &app.settings, &app.settings.paging, Some(self.link));
                let body = wrap(page, &app.settings, envelope.as_deref(), &app.settings.paging, Some(self.link));
                if method == "envelope" {
                    return Ok(body);
                }
                let status = params.get("status").cloned().unwrap_or(Value::Int(200));
                let headers = headers.map(|h| Value::Object(h.into_iter().map(|(k, v)| (k, Value::Str(v))).collect())).unwrap_or_default();
                Ok(Value::Array(vec![status, body, headers]))
            }
            "not_found" => Ok(Value::Array(vec![Value::Int(app.settings.not_found_status), app.settings.not_found.clone()])),
            "invalid" => {
                let mut body = app.settings.invalid.clone();
                if let (Some(Value::Str(detail)), Value::Object(map)) = (params.get("detail"), &mut body) {
                    if !detail.is_empty() {
                        map.insert("detail".into(), Value::str(detail));
                    }
                }
                Ok(Value::Array(vec![Value::Int(app.settings.invalid_status), body]))
            }
            other => Err(CtxError::Other(format!("unknown ctx method {other}"))),
        }
    }
}

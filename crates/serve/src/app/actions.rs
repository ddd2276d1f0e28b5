//! The built-in actions of `app`: a read (one row, or a page of rows filtered,
//! sorted and wrapped as the vendor's), a create, update or delete staged for the
//! writer with the row it binds from the body, a `static` answer; parents resolved
//! first (`api.parent`), required parameters checked, not-found answered the
//! operation's way.

use super::request::{carries, Failure, Request};
use super::staged::{Handled, StagedWrite, WriteReply};
use super::WorldApp;
use crate::dotted::{dig, set_dotted};
use crate::generate::{prefixed_id, Compute, InWriter, Kind};
use crate::listing::sort_rows;
use crate::nested::Nesting;
use crate::page::{page_headers, python_slice, window, wrap_with, Page};
use crate::response::Response;
use crate::settings::types::{OperationSettings, Paging};
use crate::state::{api_source, Filter, WriteJob};
use crate::vendor::Dress;
use gateway_world::json::{object, Map, Value};

impl WorldApp {
    /// The operation's answer once the gate let the request through: a built-in
    /// read or `static` answer, a handler's, or a write staged for the writer.
    pub(super) fn answer(&self, op: &OperationSettings, request: &Request, dress: &Dress) -> Result<Handled, Failure> {
        let operation = request.operation;
        let succeed = |status: i64, body: Value| self.succeeded(status, body);
        if let Some(missing) = op.required.iter().find(|name| !carries(request, name)) {
            let detail = object([("code", Value::str("required")), ("message", Value::Str(format!("{missing} is required")))]);
            let refused = Failure::Contract(detail).answer(&self.settings, &op.refusals);
            return Ok(Handled::Answered(refused));
        }
        if op.action == "static" {
            return Ok(Handled::Answered(Response::json(op.status, succeed(op.status, op.answer.clone().unwrap_or_default()))));
        }
        if op.action == "handler" {
            return self.answer_by_handler(op, request).map(Handled::Answered);
        }
        let Some(entity) = operation.entity.as_deref() else {
            return Ok(Handled::Answered(Response::json(
                501,
                object([("error", Value::str("not_modelled")), ("operation", Value::str(&operation.name))]),
            )));
        };
        let not_found = |own: Option<&Value>| Handled::Answered(self.not_found(op, own));
        let query = op.listing.apply(&request.query);
        let mut values: Vec<(String, String)> = query.iter().filter(|(k, _)| operation.params.contains(k)).cloned().collect();
        for (k, v) in &request.args {
            match values.iter_mut().find(|(name, _)| name == k) {
                Some(slot) => slot.1 = v.clone(),
                None => values.push((k.clone(), v.clone())),
            }
        }
        let parent = match &op.nesting {
            Some(nesting) => match crate::nested::resolve(&self.state, nesting, &values).map_err(Failure::from)? {
                Ok(parent) => Some((nesting, parent)),
                Err(step) => return Ok(not_found(step.not_found.as_ref())),
            },
            None => None,
        };
        if op.action == "create" {
            return self.stage_create(op, request, entity, parent.as_ref(), dress);
        }
        let mut filters: Vec<Filter> = op
            .filter
            .iter()
            .filter_map(|(arg, path)| {
                let wanted = values.iter().find(|(k, _)| k == arg)?.1.to_lowercase();
                let mode = op.matching.get(arg).cloned().unwrap_or_else(|| "equals".into());
                Some(Filter { path: path.clone(), mode, wanted })
            })
            .collect();
        if let Some((nesting, parent)) = &parent {
            // The parent's rows first: an indexed equality drives the lookup.
            let mut linked = crate::nested::link_filters(nesting, parent);
            linked.append(&mut filters);
            filters = linked;
        }
        if matches!(op.action.as_str(), "update" | "delete") {
            let (total, rows) = self.state.select(entity, &filters, Some((0, 2))).map_err(Failure::from)?;
            if total != 1 {
                return Ok(not_found(None));
            }
            let current = &rows[0];
            let declared = self.state.contract().entity(entity).map(|e| e.primary_key.clone()).unwrap_or_default();
            let key = object(declared.iter().map(|f| (f.clone(), current.get(f).cloned().unwrap_or_default())));
            let name = entity.to_string();
            let success = &self.settings.success;
            if op.action == "delete" {
                // The deleted row, for an answer shaped from it (`lift`, `wrap`).
                let deleted = current.clone();
                let job: WriteJob = Box::new(move |store| store.delete(&name, &key, Some(api_source("api.delete"))).map(|()| deleted));
                return Ok(Handled::Write(StagedWrite {
                    entity: entity.to_string(),
                    job,
                    reply: WriteReply::new(op, true, dress, success),
                }));
            }
            let patch = self.bind(op, &request.body, Some(current))?;
            let job: WriteJob =
                Box::new(move |store| store.update(&name, &key, &patch, Some(api_source("api.update"))).map(Option::unwrap_or_default));
            return Ok(Handled::Write(StagedWrite { entity: entity.to_string(), job, reply: WriteReply::new(op, false, dress, success) }));
        }
        if op.single {
            let (_, rows) = self.state.select(entity, &filters, Some((0, 1))).map_err(Failure::from)?;
            return Ok(match rows.into_iter().next() {
                Some(row) => Handled::Answered(Response::json(op.status, succeed(op.status, op.shape.apply(row)))),
                None => not_found(None),
            });
        }
        let paging = match &op.paging {
            None => self.settings.paging.clone(),
            Some(style) => Paging { style: style.clone(), ..self.settings.paging.clone() },
        };
        let span = window(&request.query, &paging);
        let (total, rows) = match op.listing.order(&query) {
            // Sorted: every match, ordered, then the page (the serving indexes keep key order).
            Some((field, descending)) => {
                let (_, mut rows) = self.state.select(entity, &filters, None).map_err(Failure::from)?;
                sort_rows(&mut rows, &field, descending);
                let total = rows.len() as i64;
                let (a, b) = match span {
                    Some((offset, limit)) => python_slice(total, offset, offset.saturating_add(limit)),
                    None => (0, rows.len()),
                };
                (total, rows.drain(a..b).collect())
            }
            None => self.state.select(entity, &filters, span).map_err(Failure::from)?,
        };
        let page = match span {
            None => Page::whole(rows),
            Some((offset, limit)) => Page { rows, total, offset, limit, style: paging.style.clone() },
        };
        let headers = page_headers(&page, &self.settings, &paging, Some(&request.link)).unwrap_or_default();
        let body = wrap_with(page, &self.settings, op.envelope.as_deref(), op.more_key.as_ref(), &paging, Some(&request.link));
        Ok(Handled::Answered(Response { status: op.status as u16, body: Some(succeed(op.status, body)), headers, file: None }))
    }

    /// A create, staged for the writer: the bound row, its parent's link fields,
    /// integers taken and computed fields filled inside the writer.
    fn stage_create(
        &self,
        op: &OperationSettings,
        request: &Request,
        entity: &str,
        parent: Option<&(&Nesting, Value)>,
        dress: &Dress,
    ) -> Result<Handled, Failure> {
        let mut row = self.bind(op, &request.body, None)?;
        if let (Some((nesting, parent)), Value::Object(map)) = (parent, &mut row) {
            crate::nested::fill(nesting, parent, map);
        }
        // Integers and timestamps are taken inside the writer, so concurrent creates
        // never read the same highest value; an `int-in-parent` counts among the
        // parent's rows.
        let in_writer = InWriter {
            fields: op
                .generate
                .iter()
                .filter(|(field, _)| !row.get(field.as_str()).is_some_and(|v| !matches!(v, Value::Null)))
                .filter_map(|(field, kind)| Kind::parse(kind).filter(|k| k.in_writer()).map(|k| (field.clone(), k)))
                .collect(),
            scope: parent.map(|(nesting, parent)| crate::nested::scope(nesting, parent)).unwrap_or_default(),
            now: self.clock(),
        };
        let compute = (!op.computed.is_empty()).then(|| {
            let (computed, base_url, args) = (op.computed.clone(), self.settings.base_url.clone(), request.args.clone());
            Box::new(move |row: &mut Value| crate::vendor::compute(row, &computed, &base_url, &args)) as Compute
        });
        let job = in_writer.create_job(self.state.contract(), entity, row, api_source("api.create"), compute);
        let reply = WriteReply::new(op, false, dress, &self.settings.success);
        Ok(Handled::Write(StagedWrite { entity: entity.to_string(), job, reply }))
    }

    /// The row a create or update writes: defaults, the body (mapped or as-is), generated fields.
    fn bind(&self, op: &OperationSettings, body: &Value, current: Option<&Value>) -> Result<Value, Failure> {
        let empty = Map::default();
        let body_map = body.as_object().unwrap_or(&empty);
        let mut row: Map = if current.is_none() { op.defaults.clone() } else { Map::default() };
        if op.body.is_empty() {
            for (k, v) in body_map {
                row.insert(k.clone(), v.clone());
            }
        } else {
            for (field, path) in &op.body {
                if let Some(value) = dig(body, path).filter(|v| !matches!(v, Value::Null)) {
                    set_dotted(&mut row, field, value.clone(), current);
                }
            }
        }
        if current.is_none() {
            for field in &op.nulls {
                if !row.contains_key(field) {
                    set_dotted(&mut row, field, Value::Null, None);
                }
            }
            for (field, kind) in &op.generate {
                if row.get(field).is_some_and(|v| !matches!(v, Value::Null)) {
                    continue;
                }
                let value = match Kind::parse(kind) {
                    Some(Kind::Uuid) => Value::Str(self.uuid()),
                    Some(Kind::Now) => Value::Str(self.now_iso()),
                    Some(Kind::Epoch) => Value::Int(self.clock().floor() as i64),
                    Some(Kind::Id(prefix)) => Value::Str(prefixed_id(&prefix, &self.uuid())),
                    // Taken inside the writer (see the create action).
                    _ => continue,
                };
                row.insert(field.clone(), value);
            }
        }
        Ok(Value::Object(row))
    }

    /// The not-found answer of an operation: `own` (a parent step's body), else
    /// the operation's, else `[api]`'s; the status the operation's, else `[api]`'s.
    fn not_found(&self, op: &OperationSettings, own: Option<&Value>) -> Response {
        let declared = op.refusals.not_found.as_ref();
        let status = declared.map_or(self.settings.not_found_status, |r| r.status);
        let body = own.or(declared.map(|r| &r.body)).unwrap_or(&self.settings.not_found);
        Response::json(status, body.clone())
    }
}

//! The arguments an operation is called with, taken from the world's own rows.
//!
//! As the original: the operation's `sample` first, then its filter, then any
//! operation's filter on the same placeholder, then the entity's primary key, and
//! query parameters from `sample`. Ours adds, on purpose:
//!
//! - path arguments that agree with each other: the operation's filtered
//!   placeholders are read from one row (the original reads each from the first
//!   row that has it, which for `/repos/{owner}/{repo}/issues/{issue_number}` can
//!   pair one repository's owner with another's name); a placeholder the operation
//!   does not filter on is read from that row's parent (a relationship of the
//!   entity to the entity another operation filters it on), so a sub-resource route
//!   is called with its parent's real key; a route declared nested (`api.parent`)
//!   is read up its chain: one of its rows, that row's parent, the parent's parent;
//! - the primary key stands in only for the last placeholder (a parent's key is not
//!   the child's id);
//! - a placeholder no row resolves is a failed `path` check: the original called the
//!   route with the document's example or "1" and passed it, which proves nothing;
//! - query parameters the document marks `required: true` are sent, valued from the
//!   rows (the operation's filter on them) or the document's example.

use crate::openapi::{Document, Found};
use crate::report::{Check, Verdict};
use gateway_connector::spec::Operation;
use gateway_serve::app::WorldApp;
use gateway_serve::nested::Nesting;
use gateway_serve::state::dig;
use gateway_world::json::{python_str, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// What an operation is called with.
#[derive(Debug, Default)]
pub struct Arguments {
    /// Placeholder → value, in path order.
    pub path: Vec<(String, String)>,
    /// Query parameters sent, in order.
    pub query: Vec<(String, String)>,
    /// The names of the documented required query parameters (sent).
    pub required: Vec<String>,
    /// One `path` check per placeholder: where its value came from, or that nothing did.
    pub checks: Vec<Check>,
}

/// A scalar (not null, not a container) at a dotted path.
fn scalar<'a>(row: &'a Value, path: &str) -> Option<&'a Value> {
    dig(row, path).filter(|v| !matches!(v, Value::Null | Value::Object(_) | Value::Array(_)))
}

/// A relationship field's value: a property name, or a JSON pointer into the row.
fn field<'a>(row: &'a Value, field: &str) -> Option<&'a Value> {
    if !field.starts_with('/') {
        return row.get(field);
    }
    let mut current = row;
    for part in crate::lazy::pointer_parts(field) {
        current = current.get(&part)?;
    }
    Some(current)
}

/// Where a placeholder's values live, learned from every operation that filters on it
/// (the first one wins, as in the original).
fn hint(app: &WorldApp, name: &str) -> Option<(String, String)> {
    app.router.spec.operations.iter().find_map(|other| {
        let entity = other.entity.as_ref()?;
        let op = app.settings.for_operation(&other.name);
        op.filter.iter().find(|(arg, _)| arg == name).map(|(_, path)| (entity.clone(), path.clone()))
    })
}

/// Each entity's rows, read once for an operation (a chain is tried from many rows).
struct Rows<'a> {
    app: &'a WorldApp,
    read: RefCell<HashMap<String, Rc<Vec<Value>>>>,
}

impl Rows<'_> {
    fn of(&self, entity: &str) -> Rc<Vec<Value>> {
        let mut read = self.read.borrow_mut();
        read.entry(entity.to_string()).or_insert_with(|| Rc::new(self.app.state.rows(entity).unwrap_or_default())).clone()
    }
}

/// How many of an operation's rows are tried for a parent chain that resolves.
const CANDIDATES: usize = 100;

/// The row of `parent` that `row` (of `entity`) references, by a relationship.
fn parent_row(app: &WorldApp, all: &Rows, entity: &str, row: &Value, parent: &str) -> Option<Value> {
    let contract = app.state.contract();
    let child = contract.entity(entity)?;
    let key = &contract.entity(parent)?.primary_key;
    child.relationships.iter().filter(|r| r.target == parent && r.fields.len() == key.len()).find_map(|relationship| {
        let wanted: Vec<&Value> = relationship.fields.iter().map(|f| field(row, f)).collect::<Option<_>>()?;
        all.of(parent)
            .iter()
            .find(|candidate| key.iter().zip(&wanted).all(|(k, w)| candidate.get(k).is_some_and(|v| gateway_world::json::json_equal(v, w))))
            .cloned()
    })
}

/// `issues row id=102`: a row named by its primary key.
fn row_label(app: &WorldApp, entity: &str, row: &Value) -> String {
    let key = app.state.contract().entity(entity).map(|e| e.primary_key.clone()).unwrap_or_default();
    let parts: Vec<String> = key.iter().map(|k| format!("{k}={}", row.get(k).map(python_str).unwrap_or_default())).collect();
    format!("{entity} row {}", parts.join(","))
}

/// A value for a documented parameter nothing in the world supplies.
fn documented_example(document: &Document, parameter: Option<&Value>) -> Option<Value> {
    let parameter = parameter?;
    if let Some(example) = parameter.get("example") {
        return Some(example.clone());
    }
    let schema = parameter.get("schema").cloned().unwrap_or_default();
    Some(document.example(&schema, 0)).filter(|v| !matches!(v, Value::Null))
}

/// The documented parameter `name` in `place` (`path` / `query`).
pub fn parameter<'a>(found: &'a Found, name: &str, place: &str) -> Option<&'a Value> {
    found
        .parameters
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name) && p.get("in").and_then(Value::as_str) == Some(place))
}

/// The documented path parameter at the same position as the world's `index`th
/// placeholder (the two may name it differently: `{id}` and `{userId}`).
pub fn path_parameter(found: &Found, index: usize) -> Option<&Value> {
    let name = gateway_connector::spec::placeholders(&found.path).into_iter().nth(index)?;
    parameter(found, &name, "path")
}

/// Whether two values are the same key, as the server's filters compare them (text).
fn same(left: Option<&Value>, right: Option<&Value>) -> bool {
    matches!((left, right), (Some(l), Some(r)) if !matches!(l, Value::Null) && python_str(l) == python_str(r))
}

/// The path arguments `api.parent` names, read up its chain from `row` (one of the
/// operation's rows) or, with no row, from the last parent's first row: each with
/// the sentence saying where it came from. None when a step finds no row.
fn up_the_chain(app: &WorldApp, all: &Rows, nesting: &Nesting, entity: &str, row: Option<&Value>) -> Option<Vec<(String, Value, String)>> {
    let rows = |entity: &str| all.of(entity);
    let last = nesting.parents.last()?;
    let mut current = match row {
        Some(row) => {
            rows(&last.entity).iter().find(|p| nesting.link.iter().all(|(field, from)| same(dig(row, field), dig(p, from))))?.clone()
        }
        None => rows(&last.entity).first()?.clone(),
    };
    let start = row.map(|r| row_label(app, entity, r)).unwrap_or_else(|| format!("no {entity} row"));
    let mut out = Vec::new();
    for (index, step) in nesting.parents.iter().enumerate().rev() {
        for (arg, field) in &step.matching {
            let value = scalar(&current, field)?.clone();
            out.push((
                arg.clone(),
                value,
                format!("{}.{field} of {}, up api.parent from {start}", step.entity, row_label(app, &step.entity, &current)),
            ));
        }
        if index > 0 {
            let before = &nesting.parents[index - 1];
            let found = rows(&before.entity)
                .iter()
                .find(|p| step.link.iter().all(|(field, from)| same(dig(&current, field), dig(p, from))))
                .cloned();
            current = found?;
        }
    }
    Some(out)
}

/// The arguments `operation` is called with (see the module's description).
pub fn arguments(app: &WorldApp, operation: &Operation, document: &Document, found: &Found) -> Arguments {
    let op = app.settings.for_operation(&operation.name);
    let entity = operation.entity.as_deref().filter(|e| app.state.contract().entity(e).is_some());
    let all = Rows { app, read: RefCell::default() };
    let rows = entity.map(|e| all.of(e)).unwrap_or_default();
    let placeholders = operation.placeholders();
    let entity_name = entity.unwrap_or_default();
    // The row the filtered placeholders are read from together, and (for a nested
    // route) whose parents give the others.
    let filtered: Vec<&(String, String)> =
        op.filter.iter().filter(|(arg, _)| placeholders.contains(arg) && !op.sample.contains_key(arg)).collect();
    let fits = |r: &&Value| filtered.iter().all(|(_, path)| scalar(r, path).is_some());
    let chain = |r: Option<&Value>| op.nesting.as_ref().and_then(|n| up_the_chain(app, &all, n, entity_name, r));
    let (row, chained) = match op.nesting {
        Some(_) => match rows.iter().filter(fits).take(CANDIDATES).find_map(|r| chain(Some(r)).map(|c| (r, c))) {
            Some((r, c)) => (Some(r), c),
            None => (rows.iter().find(fits), chain(None).unwrap_or_default()),
        },
        None => (rows.iter().find(fits).or_else(|| rows.first()), Vec::new()),
    };
    let mut out = Arguments::default();
    for name in &operation.params {
        if let Some(value) = op.sample.get(name) {
            out.query.push((name.clone(), value.clone()));
        }
    }
    let label = |entity: &str, row: &Value| row_label(app, entity, row);
    for (index, name) in placeholders.iter().enumerate() {
        let leaf = index + 1 == placeholders.len();
        let from_row = |path: &str| row.and_then(|r| scalar(r, path)).cloned();
        let own = |path: &str| row.map(|r| format!("{entity_name}.{path} of {}", label(entity_name, r))).unwrap_or_default();
        let mut found_value: Option<(Value, String)> = op.sample.get(name).map(|v| (Value::str(v), "the operation's sample".to_string()));
        if found_value.is_none() {
            found_value = chained.iter().find(|(arg, _, _)| arg == name).map(|(_, value, source)| (value.clone(), source.clone()));
        }
        if found_value.is_none() {
            if let Some((_, path)) = op.filter.iter().find(|(arg, _)| arg == name) {
                found_value = from_row(path).map(|v| (v, own(path)));
            }
        }
        if found_value.is_none() {
            if let Some((target, path)) = hint(app, name) {
                found_value = if target == entity_name {
                    from_row(&path).map(|v| (v, own(&path)))
                } else if let Some((parent, child)) = row.and_then(|r| parent_row(app, &all, entity_name, r, &target).map(|p| (p, r))) {
                    let source = format!("{target}.{path} of {}, the parent of {}", label(&target, &parent), label(entity_name, child));
                    scalar(&parent, &path).cloned().map(|v| (v, source))
                } else {
                    let parents = all.of(&target);
                    parents.iter().find_map(|r| scalar(r, &path).cloned().map(|v| (v, format!("{target}.{path} of {}", label(&target, r)))))
                };
            }
        }
        if found_value.is_none() && leaf {
            if let Some(key) = entity.and_then(|e| app.state.contract().entity(e)).map(|e| e.primary_key.clone()).filter(|k| k.len() == 1) {
                found_value = from_row(&key[0]).map(|v| (v, format!("{} (the primary key)", own(&key[0]))));
            }
        }
        let (text, check) = match found_value {
            Some((value, source)) => (python_str(&value), Check::new("path", name.clone(), Verdict::Ok, format!("{{{name}}} = {source}"))),
            None => {
                // Differs from the original on purpose: it passed a route called
                // with a made-up key.
                let example =
                    documented_example(document, path_parameter(found, index)).map(|v| python_str(&v)).unwrap_or_else(|| "1".into());
                let why = if leaf { "" } else { ", nor a parent row" };
                let detail = format!(
                    "{{{name}}} resolves from no row of the world (no sample, no filter{why}); called with {example:?}, so the route was not exercised with real keys"
                );
                (example, Check::new("path", name.clone(), Verdict::Fail, detail))
            }
        };
        out.path.push((name.clone(), text));
        out.checks.push(check);
    }
    for parameter in &found.parameters {
        let required = matches!(parameter.get("required"), Some(Value::Bool(true)));
        let Some(name) = parameter.get("name").and_then(Value::as_str).filter(|_| required) else { continue };
        if parameter.get("in").and_then(Value::as_str) != Some("query") {
            continue;
        }
        out.required.push(name.to_string());
        if out.query.iter().any(|(n, _)| n == name) {
            continue;
        }
        let from_filter = op.filter.iter().find(|(arg, _)| arg == name).and_then(|(_, path)| row.and_then(|r| scalar(r, path)).cloned());
        let value = from_filter.or_else(|| documented_example(document, Some(parameter))).unwrap_or_else(|| Value::str("sample"));
        out.query.push((name.to_string(), python_str(&value)));
    }
    out
}

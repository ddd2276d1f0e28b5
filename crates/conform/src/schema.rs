//! Response bodies against OpenAPI schemas, with the `jsonschema` crate.
//!
//! The schema is validated in the context of its document so that `$ref`s into
//! `#/components/…` resolve: the nodes it reaches, each at its own place (not the
//! whole document: GitHub's is 13 MB), rewritten to JSON Schema 2020-12 where 3.0
//! differs, become the root resource, and the response schema is reached through a
//! `$ref` to where it was placed. Formats are annotations only, as in the original:
//! a UUID-shaped string where the vendor answers a UUID is not what this hunts for.

use gateway_world::json::{python_repr, Value};
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use serde_json::Value as Json;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

const TARGET: &str = "x-gateway-conform-target";

/// Our value → serde_json (non-finite floats become null).
pub fn to_json(value: &Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(n) => Json::from(*n),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::Str(s) => Json::String(s.clone()),
        Value::Array(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::Object(map) => Json::Object(map.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
    }
}

/// OpenAPI 3.0 schema dialect → 2020-12: `nullable: true` adds `null` to `type` (and
/// to `enum`), boolean `exclusiveMinimum`/`exclusiveMaximum` become numeric bounds.
fn normalize_v30(node: &mut Json) {
    match node {
        Json::Object(map) => {
            if map.get("nullable") == Some(&Json::Bool(true)) {
                match map.get_mut("type") {
                    Some(Json::String(kind)) => {
                        let kind = std::mem::take(kind);
                        map.insert("type".into(), Json::Array(vec![Json::String(kind), Json::String("null".into())]));
                    }
                    Some(Json::Array(kinds)) if !kinds.contains(&Json::String("null".into())) => kinds.push(Json::String("null".into())),
                    _ => {}
                }
                if let Some(Json::Array(options)) = map.get_mut("enum") {
                    if !options.contains(&Json::Null) {
                        options.push(Json::Null);
                    }
                }
            }
            for (flag, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
                if let Some(Json::Bool(exclusive)) = map.get(flag).cloned() {
                    map.remove(flag);
                    if exclusive {
                        if let Some(limit) = map.remove(bound) {
                            map.insert(flag.into(), limit);
                        }
                    }
                }
            }
            for child in map.values_mut() {
                normalize_v30(child);
            }
        }
        Json::Array(items) => items.iter_mut().for_each(normalize_v30),
        _ => {}
    }
}

/// `$.a.b[0]` from an instance location.
fn display_path(location: &jsonschema::paths::Location) -> String {
    let mut out = String::from("$");
    for segment in location.iter() {
        match segment {
            LocationSegment::Property(name) => {
                out.push('.');
                out.push_str(&name);
            }
            LocationSegment::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

fn actual_type(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_f64() => "number",
        Json::Number(_) => "integer",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

fn repr(value: &Json) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    gateway_world::json::parse(&text).map(|p| python_repr(&p.value)).unwrap_or(text)
}

/// Compiled validators of one document, by the response schema's text: operations
/// share schemas (GitHub's `basic-error` answers hundreds of 404s), so each is built once.
pub type Validators = RefCell<HashMap<String, Result<Rc<jsonschema::Validator>, String>>>;

/// The document a response schema is read in: where its `$ref`s resolve, which
/// dialect it is written in, and where its compiled validators are kept. The OpenAPI
/// [`Document`](crate::openapi::Document) is one; this module names only the trait, so
/// that the document can call it without the two naming each other.
pub trait SchemaDocument {
    /// The node a local reference (`#/components/…`) names, if any.
    fn resolve(&self, reference: &str) -> Option<Rc<Value>>;
    /// Whether its schemas are OpenAPI 3.0's dialect (rewritten to 2020-12 here).
    fn is_v30(&self) -> bool;
    /// The validators compiled for it so far.
    fn validators(&self) -> &Validators;
}

/// Every local `$ref` string in a node.
fn references(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            for (key, child) in map {
                match (key.as_str(), child) {
                    ("$ref", Value::Str(reference)) if reference.starts_with("#/") => out.push(reference.clone()),
                    _ => references(child, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references(item, out)),
        _ => {}
    }
}

/// Place `node` at `pointer` in `root`, creating the objects on the way. Every node
/// is the document's own, so placing one inside an ancestor placed before rewrites
/// it with the same content, and an ancestor placed after a descendant holds it.
fn place(root: &mut serde_json::Map<String, Json>, pointer: &str, node: Json) {
    let parts: Vec<String> = crate::lazy::pointer_parts(pointer).collect();
    let Some((last, parents)) = parts.split_last() else { return };
    let mut here = root;
    for part in parents {
        let slot = here.entry(part.clone()).or_insert_with(|| Json::Object(serde_json::Map::new()));
        match slot {
            Json::Object(map) => here = map,
            // A scalar or array of a placed ancestor: the node is already inside it.
            _ => return,
        }
    }
    here.insert(last.clone(), node);
}

/// The part of the document a schema needs: the schema at [`TARGET`] and every node
/// its `$ref`s reach (transitively), each at its own place, so references resolve
/// as they would in the whole document. GitHub's document is 13 MB; an issue's
/// answer needs a few dozen of its schemas.
fn closure(document: &impl SchemaDocument, schema: &Value) -> Json {
    let mut root = serde_json::Map::new();
    let mut pending = Vec::new();
    references(schema, &mut pending);
    let mut seen = std::collections::HashSet::new();
    while let Some(reference) = pending.pop() {
        if !seen.insert(reference.clone()) {
            continue;
        }
        let Some(node) = document.resolve(&reference) else { continue };
        references(&node, &mut pending);
        place(&mut root, &reference[1..], to_json(&node));
    }
    root.insert(TARGET.into(), to_json(schema));
    // The document's own members are not schema keywords; only the reference is.
    root.insert("$ref".into(), Json::String(format!("#/{TARGET}")));
    root.remove("$schema");
    root.remove("$id");
    let mut root = Json::Object(root);
    if document.is_v30() {
        normalize_v30(&mut root);
    }
    root
}

fn validator(document: &impl SchemaDocument, schema: &Value) -> Result<Rc<jsonschema::Validator>, String> {
    let key = gateway_world::json::canonical(schema);
    if let Some(found) = document.validators().borrow().get(&key) {
        return found.clone();
    }
    let built = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(false)
        .build(&closure(document, schema))
        .map(Rc::new)
        .map_err(|e| e.to_string());
    document.validators().borrow_mut().insert(key, built.clone());
    built
}

/// Problems of `value` against `schema` (a schema of `document`), in the original's words.
pub fn check(document: &impl SchemaDocument, schema: &Value, value: &Value) -> Result<Vec<String>, String> {
    let validator = validator(document, schema)?;
    let instance = to_json(value);
    let mut problems = Vec::new();
    for error in validator.iter_errors(&instance) {
        let path = display_path(error.instance_path());
        match error.kind() {
            ValidationErrorKind::Type { kind } => {
                let expected: Vec<String> = match kind {
                    TypeKind::Single(t) => vec![t.to_string()],
                    TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
                };
                problems.push(format!("{path}: expected {}, got {}", expected.join(" | "), actual_type(error.instance())));
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().map(str::to_string).unwrap_or_else(|| property.to_string());
                problems.push(format!("{path}.{name}: required by the vendor, missing"));
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                for name in unexpected {
                    problems.push(format!("{path}.{name}: not a property the vendor documents"));
                }
            }
            ValidationErrorKind::Enum { .. } => problems.push(format!("{path}: {} is not one of the enum", repr(error.instance()))),
            ValidationErrorKind::Constant { expected_value } => {
                problems.push(format!("{path}: differs from const {}", repr(expected_value)))
            }
            ValidationErrorKind::AnyOf { .. } => problems.push(format!("{path}: matches no anyOf branch")),
            ValidationErrorKind::OneOfNotValid { .. } => problems.push(format!("{path}: matches 0 oneOf branches, not exactly one")),
            ValidationErrorKind::OneOfMultipleValid { .. } => {
                problems.push(format!("{path}: matches several oneOf branches, not exactly one"))
            }
            _ => problems.push(format!("{path}: {error}")),
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use crate::openapi::Document;
    use gateway_world::json::parse;

    fn doc(text: &str) -> Document {
        Document::from_text("t.json".into(), text.into()).unwrap()
    }

    #[test]
    fn reports_in_the_original_words() {
        let d = doc(
            r##"{"openapi": "3.0.3", "paths": {}, "components": {"schemas": {"T": {"type": "object", "required": ["id", "name"], "additionalProperties": false,
                "properties": {"id": {"type": "integer"}, "name": {"type": "string", "nullable": true}, "tier": {"type": "string", "enum": ["a", "b"]}}}}}}"##,
        );
        let schema = parse(r##"{"type": "array", "items": {"$ref": "#/components/schemas/T"}}"##).unwrap().value;
        let ok = parse(r#"[{"id": 1, "name": null}]"#).unwrap().value;
        assert_eq!(d.check(&schema, &ok).unwrap(), Vec::<String>::new());
        let bad = parse(r#"[{"id": "1", "tier": "c", "extra": 1}]"#).unwrap().value;
        let mut problems = d.check(&schema, &bad).unwrap();
        problems.sort();
        assert_eq!(
            problems,
            vec![
                "$[0].extra: not a property the vendor documents".to_string(),
                "$[0].id: expected integer, got string".to_string(),
                "$[0].name: required by the vendor, missing".to_string(),
                "$[0].tier: 'c' is not one of the enum".to_string(),
            ]
        );
    }
}

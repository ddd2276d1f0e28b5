//! Response bodies against OpenAPI schemas, with the `jsonschema` crate.
//!
//! The schema is validated in the context of its whole document so that `$ref`s into
//! `#/components/…` resolve: the document (rewritten to JSON Schema 2020-12 where 3.0
//! differs) becomes the root resource and the response schema is reached through a
//! `$ref` to where it was placed. Formats are annotations only, as in the original:
//! a UUID-shaped string where the vendor answers a UUID is not what this hunts for.

use crate::openapi::Document;
use gateway_world::json::{python_repr, Value};
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use serde_json::Value as Json;

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

/// Problems of `value` against `schema` (a schema of `document`), in the original's words.
pub fn check(document: &Document, schema: &Value, value: &Value) -> Result<Vec<String>, String> {
    let mut root = to_json(&document.root);
    if let Json::Object(map) = &mut root {
        map.insert(TARGET.into(), to_json(schema));
        // The document's own members are not schema keywords; only the reference is.
        map.insert("$ref".into(), Json::String(format!("#/{TARGET}")));
        map.remove("$schema");
        map.remove("$id");
    }
    if document.is_v30() {
        normalize_v30(&mut root);
    }
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(false)
        .build(&root)
        .map_err(|e| e.to_string())?;
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
    use super::*;
    use gateway_world::json::parse;

    fn doc(text: &str) -> Document {
        let root = parse(text).unwrap().value;
        let prefixes = crate::openapi::server_prefixes(&root);
        Document { file: "t.json".into(), root, prefixes }
    }

    #[test]
    fn reports_in_the_original_words() {
        let d = doc(
            r##"{"openapi": "3.0.3", "paths": {}, "components": {"schemas": {"T": {"type": "object", "required": ["id", "name"], "additionalProperties": false,
                "properties": {"id": {"type": "integer"}, "name": {"type": "string", "nullable": true}, "tier": {"type": "string", "enum": ["a", "b"]}}}}}}"##,
        );
        let schema = parse(r##"{"type": "array", "items": {"$ref": "#/components/schemas/T"}}"##).unwrap().value;
        let ok = parse(r#"[{"id": 1, "name": null}]"#).unwrap().value;
        assert_eq!(check(&d, &schema, &ok).unwrap(), Vec::<String>::new());
        let bad = parse(r#"[{"id": "1", "tier": "c", "extra": 1}]"#).unwrap().value;
        let mut problems = check(&d, &schema, &bad).unwrap();
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

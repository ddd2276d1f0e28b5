//! What an operation takes, typed from the world's contract: each path or query
//! argument's schema (the field a filter compares it with) and the body a create
//! or update reads (the entity's fields, or the places `api.body` maps them from).
//!
//! One description shared by the served OpenAPI document ([`crate::openapi`]) and
//! the host's tool descriptors (`gateway_host::tools`), so the two never disagree.
//! Schemas are plain JSON Schema (the contract's are resolved: no `$ref`).

use crate::bundle::string_schema;
use crate::settings::OperationSettings;
use gateway_connector::spec::Operation;
use gateway_world::compiler::Entity;
use gateway_world::json::{object, Map, Value};

/// JSON Schema keywords that still mean something for a query or path value.
const SCALAR_KEYWORDS: [&str; 13] = [
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "description",
];

/// The schema of a field at a dotted path through object properties.
pub fn field_schema<'a>(entity: &'a Entity, dotted: &str) -> Option<&'a Value> {
    let mut current = &entity.schema;
    for part in dotted.split('.') {
        current = current.get("properties")?.get(part)?;
    }
    Some(current)
}

/// The JSON types a schema declares (empty when it declares none).
pub fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::Str(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The schema of a query or path value compared with a row's field. A filter
/// compares the value's text with each element of an array field, so an array
/// field is typed by its items; a value the field cannot hold (null, an object)
/// is left out; anything less plain is a string.
pub fn scalar_schema(field: &Value) -> Value {
    let declared: Vec<&str> = types(field).into_iter().filter(|t| *t != "null").collect();
    match declared.as_slice() {
        ["array"] => field.get("items").map(scalar_schema).unwrap_or_else(string_schema),
        [one @ ("string" | "integer" | "number" | "boolean")] => {
            let mut out = Map::default();
            for keyword in SCALAR_KEYWORDS {
                if let Some(value) = field.get(keyword) {
                    out.insert(keyword.into(), value.clone());
                }
            }
            out.insert("type".into(), Value::str(*one));
            if let Some(Value::Array(choices)) = out.get("enum") {
                let kept: Vec<Value> = choices.iter().filter(|c| !matches!(c, Value::Null)).cloned().collect();
                out.insert("enum".into(), Value::Array(kept));
            }
            Value::Object(out)
        }
        _ => string_schema(),
    }
}

/// The schema of one argument (path placeholder or query parameter) of an
/// operation on `entity`, and what it means: typed by the field its filter
/// compares it with (equality only: a `contains` or `prefix` match takes any
/// text); an argument no filter reads is passed on as it is.
pub fn argument(entity: Option<&Entity>, op: &OperationSettings, arg: &str) -> (Value, String) {
    let Some((_, path)) = op.filter.iter().find(|(a, _)| a == arg) else {
        return (string_schema(), String::from("Passed to the operation as is."));
    };
    let mode = op.matching.get(arg).map(String::as_str).unwrap_or("equals");
    let wording = match mode {
        "contains" => "contains",
        "prefix" => "starts with",
        _ => "equals",
    };
    let field = entity.and_then(|e| field_schema(e, path));
    let of = if field.is_some_and(|f| types(f).contains(&"array")) { "an element of " } else { "" };
    let description = format!("Rows where {of}`{path}` {wording} this value (case-insensitive).");
    let schema = match (mode, field) {
        ("equals", Some(field)) => scalar_schema(field),
        _ => string_schema(),
    };
    (schema, description)
}

/// The body an operation reads, and what it is: for a create or update on
/// `entity`, the entity's fields (a create requires what the contract requires
/// but what `defaults` and `generate` supply; an update requires nothing), or
/// the places `api.body` maps them from; for a handler taking a body, any
/// object. None for an operation that reads no body.
pub fn body(operation: &Operation, entity: Option<&Entity>, op: &OperationSettings) -> Option<(Value, String)> {
    let writes = matches!(op.action.as_str(), "create" | "update");
    if !writes {
        let takes_body = op.action == "handler" && matches!(operation.method.as_str(), "POST" | "PUT" | "PATCH");
        return takes_body
            .then(|| (object([("type", Value::str("object"))]), String::from("JSON, handed to the world's handler as `body`.")));
    }
    let entity = entity?;
    let creates = op.action == "create";
    let supplied = |field: &str| op.defaults.contains_key(field) || op.generate.iter().any(|(f, _)| f == field);
    let entity_required: Vec<&str> =
        entity.schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let schema = if op.body.is_empty() {
        let mut schema = entity.schema.as_object().cloned().unwrap_or_default();
        schema.shift_remove("examples");
        let required: Vec<Value> = entity_required.iter().filter(|f| creates && !supplied(f)).map(|f| Value::str(*f)).collect();
        if required.is_empty() {
            schema.shift_remove("required");
        } else {
            schema.insert("required".into(), Value::Array(required));
        }
        Value::Object(schema)
    } else {
        let mut schema = object([("type", Value::str("object"))]);
        for (field, place) in &op.body {
            let field_type = field_schema(entity, field).cloned().unwrap_or_default();
            let needed = creates && entity_required.contains(&field.as_str()) && !supplied(field);
            place_schema(&mut schema, place, field_type, needed);
        }
        schema
    };
    let description = if creates {
        "The new row's fields; defaults and generated fields may be left out."
    } else {
        "The fields to change: merged into the row (members not sent are kept)."
    };
    Some((schema, description.to_string()))
}

/// Put `schema` at a dotted place of an object schema, creating the objects between.
pub fn place_schema(schema: &mut Value, place: &str, field: Value, required: bool) {
    let parts: Vec<&str> = place.split('.').collect();
    let mut node = schema;
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(map) = node else { return };
        if required {
            let list = map.entry("required".to_string()).or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list {
                if !list.iter().any(|r| r.as_str() == Some(part)) {
                    list.push(Value::str(*part));
                }
            }
        }
        let properties = map.entry("properties".to_string()).or_insert_with(|| Value::Object(Map::default()));
        let Value::Object(properties) = properties else { return };
        if i + 1 == parts.len() {
            properties.insert(part.to_string(), field);
            return;
        }
        let child = properties.entry(part.to_string()).or_insert_with(|| object([("type", Value::str("object"))]));
        node = child;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json::canonical;

    fn parsed(text: &str) -> Value {
        gateway_world::json::parse(text).unwrap().value
    }

    #[test]
    fn query_values_are_typed_by_the_field_they_filter() {
        let nullable = parsed(r#"{"type": ["null", "string"], "enum": [null, "a", "b"], "maxLength": 3}"#);
        assert_eq!(canonical(&scalar_schema(&nullable)), r#"{"enum":["a","b"],"maxLength":3,"type":"string"}"#);
        let tags = parsed(r#"{"type": "array", "items": {"type": "integer", "minimum": 1}, "uniqueItems": true}"#);
        assert_eq!(canonical(&scalar_schema(&tags)), r#"{"minimum":1,"type":"integer"}"#);
        assert_eq!(canonical(&scalar_schema(&parsed(r#"{"type": "object"}"#))), r#"{"type":"string"}"#);
        let described = parsed(r#"{"type": "string", "description": "Who works it."}"#);
        assert_eq!(canonical(&scalar_schema(&described)), r#"{"description":"Who works it.","type":"string"}"#);
    }

    #[test]
    fn mapped_bodies_nest_their_places() {
        let mut schema = object([("type", Value::str("object"))]);
        place_schema(&mut schema, "ticket.subject", string_schema(), true);
        assert_eq!(
            canonical(&schema),
            r#"{"properties":{"ticket":{"properties":{"subject":{"type":"string"}},"required":["subject"],"type":"object"}},"required":["ticket"],"type":"object"}"#
        );
    }
}

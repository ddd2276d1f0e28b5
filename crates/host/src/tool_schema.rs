//! A connector operation's tool input schema, generated from the world's
//! contract, and the check of an agent's arguments against it.
//!
//! The schema is flat JSON Schema (draft 2020-12, no `$ref`, what MCP clients
//! and model APIs take): each path placeholder, required, typed as the field its
//! filter compares it with — or, for a placeholder no filter reads that names a
//! key field of the operation's entity (a handler's `{id}`), as that key; each
//! query parameter typed as its filtered field (enum and format kept for an
//! equality, any text for `contains` / `prefix`); `body` for a write: for a
//! create or update the entity's fields as `gateway_serve::arguments::body`
//! describes them (a create requires what the contract requires but what the
//! operation's `defaults` and `generate` fill in; an update requires nothing),
//! each with its description. The agent may also pass a body's fields flat,
//! beside the path and query arguments ([`crate::tools::route_args`]).
//!
//! [`check_args`] holds a call to the path and query types: `{"id": "abc"}` for an
//! integer key is refused naming the argument, before the world sees it. Text
//! that reads as the type (`"7"`) passes: a path or query value is text on the
//! wire. Bodies are the world's to validate (its `[api].invalid` answer).

use crate::version::Version;
use gateway_connector::spec::Operation;
use gateway_serve::arguments;
use gateway_serve::settings::OperationSettings;
use gateway_world::compiler::Entity;
use gateway_world::json::{canonical, object, python_str, Map, Value};
use gateway_world::ContractError;

/// The refusal code of an argument its schema does not admit.
pub const INVALID_ARGUMENT: &str = "invalid_argument";

/// The operation's input schema: `{type: object, properties, required}`.
pub fn input_schema(version: &Version, operation: &Operation) -> Value {
    let op = version.settings.for_operation(&operation.name);
    let entity = entity_of(version, operation);
    let placeholders = operation.placeholders();
    let mut properties = Map::default();
    let mut required: Vec<Value> = Vec::new();
    for name in &placeholders {
        if !properties.contains_key(name) {
            properties.insert(name.clone(), argument_schema(entity, op, name, true));
            required.push(Value::str(name));
        }
    }
    for name in &operation.params {
        if !properties.contains_key(name) {
            properties.insert(name.clone(), argument_schema(entity, op, name, false));
        }
    }
    if operation.method != "GET" && !properties.contains_key("body") {
        let body = body_schema(operation, entity, op);
        if body.get("required").and_then(Value::as_array).is_some_and(|r| !r.is_empty()) {
            required.push(Value::str("body"));
        }
        properties.insert("body".into(), body);
    }
    object([("type", Value::str("object")), ("properties", Value::Object(properties)), ("required", Value::Array(required))])
}

fn entity_of<'a>(version: &'a Version, operation: &Operation) -> Option<&'a Entity> {
    operation.entity.as_deref().and_then(|name| version.template.contract().entity(name))
}

/// One path or query argument's schema, its description inside it.
fn argument_schema(entity: Option<&Entity>, op: &OperationSettings, name: &str, in_path: bool) -> Value {
    let (mut schema, mut description) = arguments::argument(entity, op, name);
    let filtered = op.filter.iter().find(|(arg, _)| arg == name).map(|(_, field)| field.as_str());
    if let (true, Some(entity)) = (in_path, entity) {
        let key = filtered.unwrap_or(name);
        let singles = op.single || matches!(op.action.as_str(), "update" | "delete" | "handler");
        if singles && entity.primary_key.iter().any(|k| k == key) {
            if let Some(field) = entity.property(key) {
                schema = arguments::scalar_schema(field);
                description = format!("Which `{}` row: its key `{key}`.", entity.name);
            }
        }
    }
    if let Value::Object(map) = &mut schema {
        let described = match map.get("description").and_then(Value::as_str) {
            Some(field) => format!("{description} {field}"),
            None => description,
        };
        map.insert("description".into(), Value::Str(described));
    }
    schema
}

/// The `body` argument: the entity's fields for a create or update, any object
/// otherwise; fields the server fills in say so.
fn body_schema(operation: &Operation, entity: Option<&Entity>, op: &OperationSettings) -> Value {
    let Some((mut schema, description)) = arguments::body(operation, entity, op) else {
        return object([("type", Value::str("object")), ("description", Value::str("The request body (JSON), as the world reads it."))]);
    };
    let properties = match &mut schema {
        Value::Object(map) => map.get_mut("properties"),
        _ => None,
    };
    if let Some(Value::Object(properties)) = properties {
        let mut filled: Vec<(&String, String)> = Vec::new();
        for relationship in entity.map(|e| e.relationships.as_slice()).unwrap_or_default() {
            if let [field] = relationship.fields.as_slice() {
                filled.push((field, format!("The key of a `{}` row.", relationship.target)));
            }
        }
        filled.extend(op.defaults.iter().map(|(field, value)| (field, format!("Left out, it is {}.", canonical(value)))));
        filled.extend(op.generate.iter().map(|(field, kind)| (field, format!("Left out, the server generates it ({kind})."))));
        for (field, note) in filled {
            if let Some(Value::Object(property)) = properties.get_mut(field.as_str()) {
                let text = match property.get("description").and_then(Value::as_str) {
                    Some(own) => format!("{own} {note}"),
                    None => note,
                };
                property.insert("description".into(), Value::Str(text));
            }
        }
    }
    if let Value::Object(map) = &mut schema {
        map.insert("description".into(), Value::Str(description));
    }
    schema
}

/// Refuse a routed call (`{path, query, body}`) whose path or query arguments
/// the operation's schema does not admit, naming the argument and what it takes.
pub fn check_args(version: &Version, operation: &Operation, routed: &Value) -> Result<(), ContractError> {
    let op = version.settings.for_operation(&operation.name);
    let entity = entity_of(version, operation);
    let placeholders = operation.placeholders();
    for (place, in_path) in [("path", true), ("query", false)] {
        let Some(Value::Object(args)) = routed.get(place) else { continue };
        for (name, value) in args {
            if !placeholders.contains(name) && !operation.params.contains(name) {
                continue;
            }
            let schema = argument_schema(entity, op, name, in_path && placeholders.contains(name));
            if let Some(wanted) = misfit(&schema, value) {
                let shown = match value {
                    Value::Str(text) => format!("'{text}'"),
                    other => canonical(other),
                };
                return Err(ContractError::new(
                    INVALID_ARGUMENT,
                    format!("argument {name} of {} must be {wanted}, not {shown}", operation.name),
                    "",
                ));
            }
        }
    }
    Ok(())
}

/// What `value` should have been, when the (scalar) schema does not admit it.
fn misfit(schema: &Value, value: &Value) -> Option<String> {
    if matches!(value, Value::Null) {
        return None;
    }
    let text = match value {
        Value::Str(text) => text.trim().to_string(),
        other => python_str(other),
    };
    let typed = match schema.get("type").and_then(Value::as_str) {
        Some("integer") => match value {
            Value::Int(_) => true,
            Value::Float(f) => f.fract() == 0.0,
            Value::Str(_) => text.parse::<i64>().is_ok(),
            _ => false,
        },
        Some("number") => matches!(value, Value::Int(_) | Value::Float(_)) || (value.as_str().is_some() && text.parse::<f64>().is_ok()),
        Some("boolean") => matches!(value, Value::Bool(_)) || matches!(text.to_lowercase().as_str(), "true" | "false"),
        Some("string") | None => !matches!(value, Value::Object(_) | Value::Array(_)),
        Some(_) => true,
    };
    if !typed {
        let kind = schema.get("type").and_then(Value::as_str).unwrap_or("text");
        let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
        return Some(format!("{article} {kind}"));
    }
    let choices = schema.get("enum").and_then(Value::as_array)?;
    // Filters compare case-insensitively: so does the check.
    if choices.iter().any(|c| python_str(c).to_lowercase() == text.to_lowercase()) {
        return None;
    }
    let named: Vec<String> = choices.iter().map(|c| format!("'{}'", python_str(c))).collect();
    Some(format!("one of {}", named.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::misfit;
    use gateway_world::json::{parse, Value};

    fn schema(text: &str) -> Value {
        parse(text).unwrap().value
    }

    #[test]
    fn path_and_query_values_are_held_to_their_type() {
        let integer = schema(r#"{"type": "integer"}"#);
        assert_eq!(misfit(&integer, &Value::Int(7)), None);
        assert_eq!(misfit(&integer, &Value::str("7")), None, "text reading as the type passes");
        assert_eq!(misfit(&integer, &Value::str("abc")).as_deref(), Some("an integer"));
        assert_eq!(misfit(&integer, &Value::Float(1.5)).as_deref(), Some("an integer"));
        let choice = schema(r#"{"type": "string", "enum": ["open", "solved"]}"#);
        assert_eq!(misfit(&choice, &Value::str("OPEN")), None, "filters fold case");
        assert_eq!(misfit(&choice, &Value::str("lost")).as_deref(), Some("one of 'open', 'solved'"));
        assert_eq!(misfit(&schema(r#"{"type": "boolean"}"#), &Value::str("yes")).as_deref(), Some("a boolean"));
        assert_eq!(misfit(&schema(r#"{"type": "string"}"#), &Value::Null), None);
    }
}

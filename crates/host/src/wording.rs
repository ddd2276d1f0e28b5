//! Refusals worded for the agent that has to act on them: which argument, what
//! it must be, which row does not exist — never the engine's schema jargon.
//!
//! A refusal keeps its code (`enum`, `not_found`, `tool_not_allowed`, …: what
//! the original's clients match on); only the message after it is reworded.

use gateway_world::json::{canonical, python_str, Value};
use gateway_world::ContractError;

/// An entity (table) name made singular for a sentence: `tickets` → `ticket`.
pub fn singular(name: &str) -> String {
    let words = name.replace('_', " ");
    if let Some(stem) = words.strip_suffix("ies") {
        return format!("{stem}y");
    }
    for ending in ["sses", "xes", "ches", "shes"] {
        if words.ends_with(ending) {
            return words[..words.len() - 2].to_string();
        }
    }
    match words.strip_suffix('s') {
        Some(stem) if !stem.ends_with(['s', 'u']) => stem.to_string(),
        _ => words,
    }
}

/// A value as a sentence quotes it: text in single quotes, the rest as JSON.
pub fn shown(value: &Value) -> String {
    match value {
        Value::Str(text) => format!("'{text}'"),
        other => canonical(other),
    }
}

/// The store's `not_found` (a handler or tool touched a row that is not there),
/// as `ticket 999 does not exist`; other refusals unchanged.
pub fn row_missing(error: ContractError) -> ContractError {
    if error.code != "not_found" {
        return error;
    }
    let (Some(Value::Str(entity)), Some(key)) = (error.context("entity").cloned(), error.context("key").cloned()) else {
        return error;
    };
    let key = match &key {
        Value::Object(members) if members.len() == 1 => members.values().next().cloned().unwrap_or_default(),
        other => other.clone(),
    };
    let message = format!("{} {} does not exist", singular(&entity), python_str(&key));
    ContractError { message, ..error }
}

/// A world tool's input refused by its contract schema (`schema`), reworded:
/// `argument status of list_tickets must be one of 'open', 'pending', not 'lost'`.
pub fn input_refused(tool: &str, schema: &Value, input: &Value, error: ContractError) -> ContractError {
    let segments: Vec<String> =
        error.path.split('/').skip(1).filter(|s| !s.is_empty()).map(|s| s.replace("~1", "/").replace("~0", "~")).collect();
    let (mut at_schema, mut at_value) = (Some(schema), Some(input));
    for segment in &segments {
        at_schema = at_schema.and_then(|s| s.get("properties").and_then(|p| p.get(segment)).or_else(|| s.get("items")));
        at_value = at_value.and_then(|v| match v {
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            other => other.get(segment),
        });
    }
    let argument = if segments.is_empty() { None } else { Some(segments.join(".")) };
    let quoted = |names: &[&str]| names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    let message = match (error.code.as_str(), &argument, at_value) {
        ("type", Some(arg), Some(value)) => {
            let wanted = error.message.strip_prefix("Expected ").unwrap_or(&error.message);
            let article = if wanted.contains(' ') {
                ""
            } else if wanted.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an "
            } else {
                "a "
            };
            format!("argument {arg} of {tool} must be {article}{wanted}, not {}", shown(value))
        }
        ("enum", Some(arg), Some(value)) => {
            let choices: Vec<String> =
                at_schema.and_then(|s| s.get("enum")).and_then(Value::as_array).into_iter().flatten().map(shown).collect();
            format!("argument {arg} of {tool} must be one of {}, not {}", choices.join(", "), shown(value))
        }
        ("required", _, _) => {
            let name = error.message.strip_prefix("Missing required property ").unwrap_or(&error.message);
            match &argument {
                Some(arg) => format!("argument {arg} of {tool} needs its member '{name}'"),
                None => format!("{tool} needs the argument '{name}'"),
            }
        }
        ("additionalProperties", _, _) => {
            let name = error.message.strip_prefix("Unknown property ").unwrap_or(&error.message);
            let known: Vec<&str> = at_schema
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            format!("{tool} takes no argument '{name}'; it takes {}", if known.is_empty() { "none".to_string() } else { quoted(&known) })
        }
        (_, Some(arg), _) => format!("argument {arg} of {tool}: {}", error.message),
        _ => format!("{tool}: {}", error.message),
    };
    ContractError { message, ..error }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json::parse;

    #[test]
    fn names_are_made_singular() {
        assert_eq!(
            ["tickets", "companies", "addresses", "boxes", "status", "line_items"].map(singular),
            ["ticket", "company", "address", "box", "status", "line item"]
        );
    }

    #[test]
    fn a_missing_row_is_named() {
        let error = ContractError::new("not_found", "No entity exists at this key", "")
            .with("entity", Value::str("tickets"))
            .with("key", parse(r#"{"id": 999}"#).unwrap().value);
        let worded = row_missing(error);
        assert_eq!((worded.code.as_str(), worded.message.as_str()), ("not_found", "ticket 999 does not exist"));
    }
}

//! Stored world tasks as the original CLI prints them (its `WorldTaskSummary`,
//! `WorldTaskDetail`, `WorldTaskPage` and `WorldTaskValidation`: members in their
//! order, snake_case turned camelCase outside the customer's `spec`, Python's `int()`
//! and `str()` coercions with their refusals), and a task spec read from a file with
//! Python's words for a file that cannot be read, decoded or parsed.
//!
//! Pure shaping: the requests that fetch these answers are
//! [`crate::sessions_client`]'s, which re-exports what the CLI calls.

use crate::client::truthy;
use crate::error::SessionError;
use gateway_world::json::{self, object, python_repr, python_str, Map, Value};

type Result<T> = std::result::Result<T, SessionError>;

fn fail(message: impl Into<String>) -> SessionError {
    SessionError::Failed(message.into())
}

/// Python's `str()` of a member, or `""` when it is missing or falsy (`str(x or "")`).
fn str_or_empty(value: Option<&Value>) -> String {
    value.filter(|v| truthy(v)).map(python_str).unwrap_or_default()
}

/// Python's `int()` of a JSON value.
pub fn python_int(value: &Value) -> Result<i64> {
    match value {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::Float(f) if f.is_finite() => Ok(f.trunc() as i64),
        Value::Float(f) if f.is_nan() => Err(fail("cannot convert float NaN to integer")),
        Value::Float(_) => Err(fail("cannot convert float infinity to integer")),
        Value::Str(text) => {
            let trimmed = text.trim();
            let digits = trimmed.strip_prefix('+').unwrap_or(trimmed);
            let plain = !digits.starts_with('_') && !digits.ends_with('_') && !digits.contains("__");
            digits
                .replace('_', "")
                .parse::<i64>()
                .ok()
                .filter(|_| plain && !digits.is_empty())
                .ok_or_else(|| fail(format!("invalid literal for int() with base 10: {}", python_repr(value))))
        }
        Value::Null => Err(fail("int() argument must be a string, a bytes-like object or a real number, not 'NoneType'")),
        Value::Array(_) => Err(fail("int() argument must be a string, a bytes-like object or a real number, not 'list'")),
        Value::Object(_) => Err(fail("int() argument must be a string, a bytes-like object or a real number, not 'dict'")),
    }
}

/// `int(member or 0)`.
fn int_or_zero(value: Option<&Value>) -> Result<i64> {
    value.filter(|v| truthy(v)).map(python_int).transpose().map(Option::unwrap_or_default)
}

/// `_read_task_spec`: a task spec from a JSON file — a JSON object with an
/// `instruction` string. The error is the original's reason after `"<flag> <file>: "`;
/// `shown` is the path as the original prints it.
pub fn read_task_spec(path: &std::path::Path, shown: &str) -> std::result::Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| os_error(&e, shown))?;
    let text = String::from_utf8(bytes).map_err(|e| utf8_error(&e))?;
    let parsed = json::parse_loads(&text).map_err(|e| json_error(&e, &text))?;
    match &parsed.value {
        Value::Object(map) if matches!(map.get("instruction"), Some(Value::Str(_))) => Ok(parsed.value),
        _ => Err("a task spec is a JSON object with an \"instruction\" string".into()),
    }
}

/// Python's `str(OSError)`: `[Errno N] <strerror>: '<file>'`.
fn os_error(error: &std::io::Error, shown: &str) -> String {
    let Some(code) = error.raw_os_error() else { return error.to_string() };
    let text = error.to_string();
    let strerror = text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_string();
    format!("[Errno {code}] {strerror}: {}", python_repr(&Value::str(shown)))
}

/// Python's `str(UnicodeDecodeError)` for a file that is not UTF-8 (single-byte form).
fn utf8_error(error: &std::string::FromUtf8Error) -> String {
    let bytes = error.as_bytes();
    let at = error.utf8_error().valid_up_to();
    let byte = bytes.get(at).copied().unwrap_or_default();
    let reason = match error.utf8_error().error_len() {
        None => "unexpected end of data",
        Some(_) if (0x80..0xC2).contains(&byte) || byte >= 0xF5 => "invalid start byte",
        Some(_) => "invalid continuation byte",
    };
    format!("'utf-8' codec can't decode byte 0x{byte:02x} in position {at}: {reason}")
}

/// Python's `str(JSONDecodeError)`: `<msg>: line L column C (char N)`, in characters.
fn json_error(error: &json::ParseError, text: &str) -> String {
    let message = match error {
        json::ParseError::Syntax(message) | json::ParseError::DuplicateKey(message) => message,
    };
    let Some((what, at)) = message.rsplit_once(" at char ") else { return message.clone() };
    let Ok(byte) = at.parse::<usize>() else { return message.clone() };
    let before = text.get(..byte.min(text.len())).unwrap_or(text);
    let position = before.chars().count();
    let line = before.matches('\n').count() + 1;
    let column = match before.rfind('\n') {
        Some(newline) => before[newline + 1..].chars().count() + 1,
        None => position + 1,
    };
    format!("{what}: line {line} column {column} (char {position})")
}

/// Python's `str.title()` (a letter after a non-letter is upper-cased, the rest lowered).
fn title(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    let mut previous_cased = false;
    for c in part.chars() {
        if c.is_lowercase() || c.is_uppercase() {
            if previous_cased {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
            previous_cased = true;
        } else {
            out.push(c);
            previous_cased = false;
        }
    }
    out
}

/// `_camel_keys`: snake_case member names to camelCase at every depth, except under
/// `spec` (the customer's own JSON).
fn camel_keys(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(camel_keys).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, inner)| {
                    let mut parts = key.split('_');
                    let mut name = parts.next().unwrap_or_default().to_string();
                    parts.for_each(|part| name.push_str(&title(part)));
                    (name, if key == "spec" { inner.clone() } else { camel_keys(inner) })
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn summary_members(raw: &Value) -> Result<Vec<(&'static str, Value)>> {
    let get = |key: &str| raw.get(key);
    let text = |key: &str| Value::Str(str_or_empty(get(key)));
    Ok(vec![
        ("id", text("id")),
        ("name", text("name")),
        ("world", camel_keys(get("world").unwrap_or(&Value::Null))),
        ("version", Value::Int(int_or_zero(get("version"))?)),
        ("hash", text("hash")),
        ("spec", get("spec").filter(|s| truthy(s)).cloned().unwrap_or_else(|| object([("instruction", Value::str(""))]))),
        ("createdAt", text("createdAt")),
        ("updatedAt", text("updatedAt")),
        ("createdBy", text("createdBy")),
        ("updatedBy", text("updatedBy")),
    ])
}

/// A stored task as the CLI prints it (`WorldTaskSummary`).
pub fn task_summary(raw: &Value) -> Result<Value> {
    Ok(object(summary_members(raw)?))
}

/// One task with its version history, newest first (`WorldTaskDetail`).
pub fn task_detail(raw: &Value) -> Result<Value> {
    let mut members = summary_members(raw)?;
    let mut versions = Vec::new();
    if let Some(Value::Array(listed)) = raw.get("versions") {
        for version in listed.iter().filter(|v| v.as_object().is_some()) {
            versions.push(object([
                ("version", Value::Int(int_or_zero(version.get("version"))?)),
                ("hash", Value::Str(str_or_empty(version.get("hash")))),
                ("createdAt", Value::Str(str_or_empty(version.get("createdAt")))),
                ("createdBy", Value::Str(str_or_empty(version.get("createdBy")))),
                ("message", camel_keys(version.get("message").unwrap_or(&Value::Null))),
            ]));
        }
    }
    members.push(("versions", Value::Array(versions)));
    Ok(object(members))
}

/// A page of tasks as the CLI prints it: `{tasks, meta: {page, limit, totalItems,
/// totalPages}}` (`WorldTaskPage`).
pub fn task_page(raw: &Value) -> Result<Value> {
    let empty = Map::default();
    let meta = raw.get("meta").and_then(Value::as_object).unwrap_or(&empty);
    let rows: &[Value] = match raw.get("tasks") {
        Some(Value::Array(rows)) => rows,
        _ => &[],
    };
    let tasks = rows.iter().filter(|t| t.as_object().is_some()).map(task_summary).collect::<Result<Vec<_>>>()?;
    let counted = rows.len() as i64;
    let or = |key: &str, default: i64| -> Result<i64> {
        meta.get(key).filter(|v| truthy(v)).map(python_int).transpose().map(|v| v.unwrap_or(default))
    };
    let total_pages = match meta.get("totalPages") {
        Some(value) if !matches!(value, Value::Null) => python_int(value)?,
        _ => 1,
    };
    Ok(object([
        ("tasks", Value::Array(tasks)),
        (
            "meta",
            object([
                ("page", Value::Int(or("page", 1)?)),
                ("limit", Value::Int(or("limit", counted)?)),
                ("totalItems", Value::Int(or("totalItems", counted)?)),
                ("totalPages", Value::Int(total_pages)),
            ]),
        ),
    ]))
}

/// A validation as the CLI prints it (`WorldTaskValidation`), and its `ok`.
pub fn task_validation(raw: &Value) -> (Value, bool) {
    let ok = raw.get("ok").is_some_and(truthy);
    let checked = if matches!(raw.get("checked"), Some(Value::Str(c)) if c == "none") { "none" } else { "entities" };
    let problems: Vec<Value> = match raw.get("problems").filter(|p| truthy(p)) {
        Some(Value::Array(items)) => items.iter().map(|p| Value::Str(python_str(p))).collect(),
        Some(Value::Str(text)) => text.chars().map(|c| Value::Str(c.to_string())).collect(),
        Some(Value::Object(map)) => map.keys().map(|k| Value::str(k.clone())).collect(),
        _ => Vec::new(),
    };
    let entities = match raw.get("entities") {
        Some(Value::Array(items)) => Value::Array(items.iter().map(|e| Value::Str(python_str(e))).collect()),
        _ => Value::Null,
    };
    let version = int_or_zero(raw.get("version")).unwrap_or_default();
    let printed = object([
        ("taskId", Value::Str(str_or_empty(raw.get("taskId")))),
        ("version", Value::Int(version)),
        ("versionId", Value::Str(str_or_empty(raw.get("versionId")))),
        ("ok", Value::Bool(ok)),
        ("checked", Value::str(checked)),
        ("problems", Value::Array(problems)),
        ("entities", entities),
    ]);
    (printed, ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json::DumpOptions;

    #[test]
    fn camel_case_follows_python_title() {
        let value = object([("created_at", Value::Int(1)), ("a_bC_1d", Value::Int(2)), ("spec", object([("x_y", Value::Int(3))]))]);
        let text = json::dumps(&camel_keys(&value), DumpOptions::CLI);
        assert_eq!(text, r#"{"aBc1D": 2, "createdAt": 1, "spec": {"x_y": 3}}"#);
    }

    #[test]
    fn int_like_python() {
        assert_eq!(python_int(&Value::str(" 2 ")).unwrap(), 2);
        assert_eq!(python_int(&Value::Float(2.9)).unwrap(), 2);
        assert!(python_int(&Value::str("x")).is_err());
    }
}

//! Answers shaped the vendor's way, declared — for vendors whose every answer is an
//! envelope (Slack: `{"ok": true, "user": {…}}`, `{"ok": false, "error": "…"}`):
//!
//! - **Success members**: `[api] success = '{"ok": true}'` merged into every
//!   successful answer that is an object (a member the answer holds already wins, so
//!   a handler's `{"ok": false, …}` stays what it says).
//! - **A single row under a key**: `[operations.api] wrap = "user"` answers
//!   `{"user": <row>}`; `lift = {channel = "channel", ts = "ts"}` puts members taken
//!   from the row's (dotted) fields beside it (`chat.postMessage`'s
//!   `{channel, ts, message}`); `lift` without `wrap` answers the members alone
//!   (`chat.delete`'s `{channel, ts}`); a write's `answer = '<JSON>'` answers that
//!   constant in place of the row (`reactions.add`'s `{}`).
//! - **Refusals per operation**: `not_found`, `invalid`, `conflict` (a primary or
//!   unique key already taken: Slack's `name_taken`) and their `_status`, in `[api]`
//!   for every operation and in `[operations.api]` for one (`user_not_found`); a
//!   step of `api.parent` may name its own `not_found` (`channel_not_found`).
//!   Error statuses may be 200 (a vendor answering its errors in the body) or 400–599.
//! - **Required parameters**: `required = ["channel"]`, refused with `invalid` when
//!   absent (a filter's absent parameter otherwise filters nothing).

use gateway_world::error::{fail, ContractError};
use gateway_world::json::{object, Map, Value};
use toml::Value as Toml;

/// An error answer: status and body.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// HTTP status (200 or 400–599).
    pub status: i64,
    /// The body.
    pub body: Value,
}

/// An operation's own refusals (None: `[api]`'s).
#[derive(Debug, Clone, Default)]
pub struct Refusals {
    /// No such row (or parent).
    pub not_found: Option<Refusal>,
    /// A body or change the contract refuses, or a required parameter missing.
    pub invalid: Option<Refusal>,
    /// A primary or unique key already taken.
    pub conflict: Option<Refusal>,
}

/// How an operation's successful answer holds its row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Shape {
    /// The row under this key.
    pub wrap: Option<String>,
    /// Answer members ← the row's dotted fields.
    pub lift: Vec<(String, String)>,
    /// Whether `lift` was declared (an empty `lift = {}` answers no member at all).
    pub lifted: bool,
}

impl Shape {
    /// Whether the row is answered as declared rather than as itself.
    pub fn shapes(&self) -> bool {
        self.wrap.is_some() || self.lifted
    }

    /// The answer holding `row`: lifted members, then the row under `wrap`.
    pub fn apply(&self, row: Value) -> Value {
        if !self.shapes() {
            return row;
        }
        let mut out = Map::default();
        for (member, field) in &self.lift {
            out.insert(member.clone(), crate::dotted::dig(&row, field).cloned().unwrap_or_default());
        }
        if let Some(key) = &self.wrap {
            out.insert(key.clone(), row);
        }
        Value::Object(out)
    }
}

/// Merge the success members into an answer that is an object: they come first,
/// and a member the answer holds already keeps its value.
pub fn succeed(body: &mut Value, success: &Map) {
    let Value::Object(map) = body else { return };
    if success.is_empty() {
        return;
    }
    let mut merged: Map = success.iter().filter(|(k, _)| !map.contains_key(k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    merged.extend(std::mem::take(map));
    *map = merged;
}

/// The JSON Schema of an answer with the success members (consts) merged in.
pub fn success_schema(schema: Value, success: &Map) -> Value {
    if success.is_empty() {
        return schema;
    }
    let consts: Map = success.iter().map(|(k, v)| (k.clone(), object([("const", v.clone())]))).collect();
    let required: Vec<Value> = success.keys().map(Value::str).collect();
    let members = object([("type", Value::str("object")), ("properties", Value::Object(consts)), ("required", Value::Array(required))]);
    object([("allOf", Value::Array(vec![schema, members]))])
}

impl Shape {
    /// The JSON Schema of the answer holding a row of `row` schema (lifted members
    /// are the row's fields: any value).
    pub fn schema(&self, row: Value) -> Value {
        if !self.shapes() {
            return row;
        }
        let mut properties = Map::default();
        for (member, field) in &self.lift {
            properties.insert(member.clone(), object([("description", Value::Str(format!("The row's `{field}`.")))]));
        }
        if let Some(key) = &self.wrap {
            properties.insert(key.clone(), row);
        }
        let required: Vec<Value> = properties.keys().map(Value::str).collect();
        object([("type", Value::str("object")), ("properties", Value::Object(properties)), ("required", Value::Array(required))])
    }
}

/// A status of an error answer: 200 (the vendor says it in the body) or 400–599.
pub fn error_status(t: &toml::Table, key: &str, default: i64, location: &str) -> Result<i64, ContractError> {
    match t.get(key) {
        None => Ok(default),
        Some(Toml::Integer(n)) if *n == 200 || (400..=599).contains(n) => Ok(*n),
        Some(_) => fail(
            "spec",
            format!("{key} must be an HTTP status between 400 and 599, or 200 for a vendor that answers errors in the body"),
            format!("{location}/{key}"),
        ),
    }
}

/// A JSON body written as a TOML string (`'{"ok": false}'`), if present.
pub fn json_text(t: &toml::Table, key: &str, location: &str) -> Result<Option<Value>, ContractError> {
    match t.get(key) {
        None => Ok(None),
        Some(Toml::String(text)) => match gateway_world::json::parse(text) {
            Ok(parsed) => Ok(Some(parsed.value)),
            Err(_) => fail("spec", format!("{key} is not valid JSON"), format!("{location}/{key}")),
        },
        Some(_) => fail("spec", format!("{key} must be a JSON string"), format!("{location}/{key}")),
    }
}

/// `[api] success`: the members every successful answer holds.
pub fn parse_success(api: &toml::Table) -> Result<Map, ContractError> {
    match json_text(api, "success", "/api")? {
        None => Ok(Map::default()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => fail("spec", "api.success is a JSON object of the members every successful answer holds", "/api/success"),
    }
}

/// One refusal `name` (+ `name_status`) of a table; None when neither is declared.
fn refusal(t: &toml::Table, name: &str, default_status: i64, location: &str) -> Result<Option<Refusal>, ContractError> {
    let status_key = format!("{name}_status");
    let body = json_text(t, name, location)?;
    if body.is_none() && !t.contains_key(&status_key) {
        return Ok(None);
    }
    let status = error_status(t, &status_key, default_status, location)?;
    let body = match body {
        Some(body) => body,
        None => return fail("spec", format!("{status_key} needs {name}, the body answered with it"), format!("{location}/{status_key}")),
    };
    Ok(Some(Refusal { status, body }))
}

/// `not_found`, `invalid` and `conflict` (each with its `_status`) of an operation.
pub fn parse_refusals(t: &toml::Table, location: &str) -> Result<Refusals, ContractError> {
    Ok(Refusals {
        not_found: refusal(t, "not_found", 404, location)?,
        invalid: refusal(t, "invalid", 400, location)?,
        conflict: refusal(t, "conflict", 409, location)?,
    })
}

/// `[api] conflict` (+ `conflict_status`): None keeps the original's answer to a
/// taken key, the `invalid` body with the refusal's detail.
pub fn parse_conflict(api: &toml::Table) -> Result<Option<Refusal>, ContractError> {
    refusal(api, "conflict", 409, "/api")
}

/// A parent step's own `not_found` body (its status is the operation's).
pub fn parse_step_not_found(step: &toml::Table, location: &str) -> Result<Option<Value>, ContractError> {
    json_text(step, "not_found", location)
}

/// `wrap` and `lift` of an operation.
pub fn parse_shape(t: &toml::Table, location: &str) -> Result<Shape, ContractError> {
    let wrap = match t.get("wrap") {
        None => None,
        Some(Toml::String(key)) if !key.is_empty() => Some(key.clone()),
        Some(_) => return fail("spec", "api.wrap is the key the answer holds the row under", format!("{location}/wrap")),
    };
    let (lift, lifted) = match t.get("lift") {
        None => (Vec::new(), false),
        Some(Toml::Table(m)) if m.iter().all(|(k, v)| !k.is_empty() && v.as_str().is_some_and(|s| !s.is_empty())) => {
            (m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect(), true)
        }
        Some(_) => return fail("spec", "api.lift maps answer members to the row's fields", format!("{location}/lift")),
    };
    Ok(Shape { wrap, lift, lifted })
}

/// `required`: parameters (or path arguments) a request must carry.
pub fn parse_required(t: &toml::Table, location: &str, declared: &dyn Fn(&str) -> bool) -> Result<Vec<String>, ContractError> {
    let names: Vec<String> = match t.get("required") {
        None => return Ok(Vec::new()),
        Some(Toml::Array(items)) if items.iter().all(|i| i.as_str().is_some_and(|s| !s.is_empty())) => {
            items.iter().filter_map(Toml::as_str).map(str::to_string).collect()
        }
        Some(_) => return fail("spec", "api.required lists the parameters a request must carry", format!("{location}/required")),
    };
    if let Some(name) = names.iter().find(|n| !declared(n)) {
        return fail(
            "spec",
            format!("api.required names {name}, which is neither a path argument nor a parameter"),
            format!("{location}/required"),
        );
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json::{canonical, parse};

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    fn json(text: &str) -> Value {
        parse(text).unwrap().value
    }

    #[test]
    fn rows_are_wrapped_lifted_or_answered_as_themselves() {
        let row = json(r#"{"channel": "C1", "ts": "1.000001", "text": "hi"}"#);
        let shape = parse_shape(
            &table(
                r#"wrap = "message"
lift = { channel = "channel", ts = "ts", missing = "nope" }"#,
            ),
            "/x",
        )
        .unwrap();
        assert_eq!(
            canonical(&shape.apply(row.clone())),
            r#"{"channel":"C1","message":{"channel":"C1","text":"hi","ts":"1.000001"},"missing":null,"ts":"1.000001"}"#
        );
        let alone = parse_shape(&table(r#"lift = { ts = "ts" }"#), "/x").unwrap();
        assert_eq!(canonical(&alone.apply(row.clone())), r#"{"ts":"1.000001"}"#);
        let nothing = parse_shape(&table("lift = {}"), "/x").unwrap();
        assert_eq!(canonical(&nothing.apply(row.clone())), "{}");
        let plain = parse_shape(&table(""), "/x").unwrap();
        assert_eq!(canonical(&plain.apply(row.clone())), canonical(&row));
        assert!(parse_shape(&table("wrap = 1"), "/x").is_err());
    }

    #[test]
    fn success_members_come_first_and_never_overwrite() {
        let success = parse_success(&table(r#"success = '{"ok": true}'"#)).unwrap();
        let mut body = json(r#"{"user": {"id": "U1"}}"#);
        succeed(&mut body, &success);
        let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["ok", "user"], "the success members first");
        let mut refused = json(r#"{"ok": false, "error": "x"}"#);
        succeed(&mut refused, &success);
        assert_eq!(canonical(&refused), r#"{"error":"x","ok":false}"#);
        let mut array = json("[1]");
        succeed(&mut array, &success);
        assert_eq!(canonical(&array), "[1]");
        assert!(parse_success(&table(r#"success = '[1]'"#)).is_err());
    }

    #[test]
    fn refusals_take_200_or_an_error_status() {
        let refusals = parse_refusals(
            &table(
                r#"not_found = '{"ok": false, "error": "user_not_found"}'
not_found_status = 200
conflict = '{"ok": false, "error": "name_taken"}'"#,
            ),
            "/operations/0/api",
        )
        .unwrap();
        assert_eq!(refusals.not_found.as_ref().map(|r| r.status), Some(200));
        assert_eq!(refusals.conflict.as_ref().map(|r| r.status), Some(409));
        assert!(refusals.invalid.is_none());
        for (text, said) in [
            ("not_found = '{}'\nnot_found_status = 302", "between 400 and 599, or 200"),
            ("invalid_status = 200", "needs invalid"),
            ("conflict = '{'", "not valid JSON"),
        ] {
            let error = parse_refusals(&table(text), "/x").unwrap_err();
            assert!(error.message.contains(said), "{text}: {}", error.message);
        }
    }

    #[test]
    fn required_names_declared_arguments() {
        let declared = |name: &str| name == "channel";
        assert_eq!(parse_required(&table(r#"required = ["channel"]"#), "/x", &declared).unwrap(), vec!["channel".to_string()]);
        let error = parse_required(&table(r#"required = ["user"]"#), "/x", &declared).unwrap_err();
        assert!(error.message.contains("user, which is neither"), "{}", error.message);
    }
}

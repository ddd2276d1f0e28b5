//! Reading the vendor's OpenAPI documents (3.0 or 3.1, JSON or YAML) and finding a
//! world operation in them.

use crate::lazy::{LazyJson, Span};
use crate::schema::{SchemaDocument, Validators};
use gateway_connector::spec::Operation;
use gateway_world::error::ContractError;
use gateway_world::json::{dumps, python_str, DumpOptions, Map, Value};
use std::path::Path;
use std::rc::Rc;

/// One loaded OpenAPI document, held as its text and read a node at a time
/// ([`LazyJson`]): GitHub's is 13 MB, of which a run reads a few hundred KB.
#[derive(Debug)]
pub struct Document {
    /// The file it came from, as given.
    pub file: String,
    /// The document's text, indexed on demand (a YAML document is converted to JSON).
    json: LazyJson,
    /// The path part of each server URL, longest first.
    pub prefixes: Vec<String>,
    /// Each path of `paths`, its placeholders blanked (`/a/{}`), with its path item's span.
    paths: Vec<(String, String, Span)>,
    v30: bool,
    /// Compiled response validators, by the schema's text (see [`crate::schema`]).
    validators: Validators,
}

/// Where a world operation is described: the path as the document spells it, the path
/// item (its shared `parameters`) and the operation object.
#[derive(Debug, Clone)]
pub struct Found {
    /// The document's path template.
    pub path: String,
    /// The operation object (`$ref`s not followed).
    pub operation: Value,
    /// Parameters of the path item and the operation, dereferenced; the operation's
    /// win over the path item's of the same name and place.
    pub parameters: Vec<Value>,
}

fn refuse(message: String) -> ContractError {
    ContractError::new("conform", message, "/conform/openapi")
}

/// Line and column (1-based) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.chars().count(), |i| before[i + 1..].chars().count()) + 1;
    (line, column)
}

/// Placeholder names differ between the world and the document; shapes must not.
fn canonical_path(path: &str) -> String {
    let mut out = String::new();
    let mut depth = 0i32;
    for c in path.chars() {
        match c {
            '{' => {
                depth += 1;
                out.push_str("{}");
            }
            '}' => depth -= 1,
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// JSON text → the document's text, refused in the original's words with the place.
fn checked_json(file: &str, text: String) -> Result<String, ContractError> {
    // The whole text is checked (syntax, repeated members) without building it; the
    // nodes are parsed later, when read.
    match gateway_world::json::skim_id(&text) {
        Ok(_) => Ok(text),
        Err(error) => {
            let place = match serde_json::from_str::<serde_json::Value>(&text) {
                Err(e) if e.line() > 0 => format!(" at line {}, column {}", e.line(), e.column()),
                _ => {
                    let (line, column) = line_column(&text, text.len());
                    format!(" near line {line}, column {column}")
                }
            };
            let reason = match error {
                gateway_world::json::ParseError::Syntax(s) => s,
                gateway_world::json::ParseError::DuplicateKey(k) => format!("duplicate member {k}"),
            };
            Err(refuse(format!("{file} is not valid JSON{place}: {reason}")))
        }
    }
}

impl Document {
    /// Read and check a document; a file that does not parse names itself and the place.
    pub fn load(path: &Path) -> Result<Document, ContractError> {
        let file = path.to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).map_err(|e| refuse(format!("Cannot read {file}: {e}")))?;
        let yaml = file.ends_with(".yaml") || file.ends_with(".yml");
        let text = if yaml {
            // Keys as JSON spells them (`200:` is the status "200", `true:` "true").
            match gateway_world::json::parse_yaml(&text, gateway_world::json::KeyStyle::Json) {
                // YAML documents are small; as JSON text they are read like the rest.
                Ok(value) => dumps(&value, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: true }),
                Err(error) => {
                    let place = error.place.map(|(line, column)| format!(" at line {line}, column {column}")).unwrap_or_default();
                    return Err(refuse(format!("{file} is not valid YAML{place}: {}", error.reason)));
                }
            }
        } else {
            checked_json(&file, text)?
        };
        Document::from_text(file, text)
    }

    /// A document from JSON text already known to be valid.
    pub fn from_text(file: String, text: String) -> Result<Document, ContractError> {
        let json = LazyJson::new(text);
        let root = json.root();
        let paths_span = if json.is_object(root) { json.child(root, "paths") } else { None };
        let Some(paths_span) = paths_span else {
            return Err(refuse(format!("{file} is not an OpenAPI document (no paths)")));
        };
        let paths = json.members(paths_span).named.iter().map(|(path, span)| (canonical_path(path), path.clone(), *span)).collect();
        let servers = json.child(root, "servers").map(|s| json.value(s)).unwrap_or_default();
        let prefixes = server_prefixes(&servers);
        let version = |key: &str| json.child(root, key).map(|s| json.value(s));
        let v30 =
            version("openapi").and_then(|v| v.as_str().map(|s| s.starts_with("3.0"))).unwrap_or(false) || version("swagger").is_some();
        Ok(Document { file, json, prefixes, paths, v30, validators: Default::default() })
    }

    /// Whether this is an OpenAPI 3.0 document (`nullable`, boolean exclusive bounds).
    pub fn is_v30(&self) -> bool {
        self.v30
    }

    /// The node a local reference (`#/components/schemas/x`) names.
    pub fn resolve(&self, reference: &str) -> Option<Rc<Value>> {
        let pointer = reference.strip_prefix('#')?;
        self.json.pointer(pointer).map(|span| self.json.value(span))
    }

    /// The document's description of a world operation, prefix-tolerant.
    pub fn find_operation(&self, operation: &Operation) -> Option<Found> {
        let mut wanted = vec![canonical_path(&operation.path)];
        for prefix in &self.prefixes {
            if let Some(rest) = operation.path.strip_prefix(prefix.as_str()).filter(|r| r.starts_with('/')) {
                wanted.push(canonical_path(rest));
            }
        }
        let method = operation.method.to_ascii_lowercase();
        self.paths.iter().filter(|(canonical, _, _)| wanted.contains(canonical)).find_map(|(_, path, span)| {
            let item = self.deref(&self.json.value(*span));
            let documented = item.get(&method)?.clone();
            let mut parameters: Vec<Value> = Vec::new();
            let listed = |v: &Value| v.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default();
            for parameter in listed(&item).iter().chain(listed(&documented).iter()) {
                let parameter = self.deref(parameter);
                let key = |p: &Value| (p.get("name").cloned().map(|n| python_str(&n)), p.get("in").cloned().map(|n| python_str(&n)));
                parameters.retain(|p| key(p) != key(&parameter));
                parameters.push(parameter);
            }
            Some(Found { path: path.clone(), operation: documented, parameters })
        })
    }

    /// Follow `$ref`s into this document; sibling members override the target's.
    pub fn deref(&self, schema: &Value) -> Value {
        let mut current = schema.clone();
        let mut seen: Vec<String> = Vec::new();
        while let Some(reference) = current.get("$ref").and_then(Value::as_str).map(str::to_string) {
            if seen.contains(&reference) || !reference.starts_with("#/") {
                return Value::Object(Map::default());
            }
            let Some(target) = self.resolve(&reference) else { return Value::Object(Map::default()) };
            seen.push(reference);
            let Value::Object(target) = &*target else { return Value::Object(Map::default()) };
            let mut merged = target.clone();
            if let Value::Object(siblings) = &current {
                for (k, v) in siblings {
                    if k != "$ref" {
                        merged.insert(k.clone(), v.clone());
                    }
                }
            }
            current = Value::Object(merged);
        }
        if matches!(current, Value::Object(_)) {
            current
        } else {
            Value::Object(Map::default())
        }
    }

    /// A value the schema accepts, from its examples or its shape (request bodies and
    /// path arguments nothing else supplies).
    pub fn example(&self, schema: &Value, depth: usize) -> Value {
        let schema = self.deref(schema);
        for key in ["example", "default"] {
            if let Some(v) = schema.get(key) {
                return v.clone();
            }
        }
        if let Some(first) = schema.get("examples").and_then(Value::as_array).and_then(|e| e.first()) {
            return first.clone();
        }
        if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
            return first.clone();
        }
        for keyword in ["allOf", "anyOf", "oneOf"] {
            let Some(branches) = schema.get(keyword).and_then(Value::as_array).filter(|b| !b.is_empty()) else { continue };
            let mut merged = Map::default();
            let take = if keyword == "allOf" { branches.len() } else { 1 };
            for branch in &branches[..take] {
                match self.example(branch, depth + 1) {
                    Value::Object(m) => merged.extend(m),
                    other => return other,
                }
            }
            return Value::Object(merged);
        }
        let kind = match schema.get("type") {
            Some(Value::Str(s)) => Some(s.clone()),
            Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).find(|t| *t != "null").map(str::to_string),
            _ => None,
        };
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        match kind.as_deref() {
            Some("object") | None if kind.is_some() || schema.get("properties").is_some() => {
                if depth > 6 {
                    return Value::Object(Map::default());
                }
                let mut out = Map::default();
                if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                    for (name, property) in properties {
                        if required.contains(&name.as_str()) {
                            out.insert(name.clone(), self.example(property, depth + 1));
                        }
                    }
                }
                Value::Object(out)
            }
            Some("array") => match schema.get("items") {
                Some(items @ Value::Object(_)) if depth < 6 => Value::Array(vec![self.example(items, depth + 1)]),
                _ => Value::Array(Vec::new()),
            },
            Some("integer") => Value::Int(schema.get("minimum").and_then(Value::as_f64).map_or(1, |m| m as i64)),
            Some("number") => Value::Float(schema.get("minimum").and_then(Value::as_f64).unwrap_or(1.0)),
            Some("boolean") => Value::Bool(true),
            Some("string") => Value::str(match schema.get("format").and_then(Value::as_str) {
                Some("date-time") => "2026-01-01T00:00:00Z",
                Some("date") => "2026-01-01",
                Some("uuid") => "00000000-0000-4000-8000-000000000001",
                Some("email") => "sample@example.invalid",
                _ => "sample",
            }),
            _ => Value::Null,
        }
    }

    /// Validate `value` against a response schema of this document. `Err` when the
    /// schema itself cannot be compiled (then nothing is claimed about the body).
    pub fn check(&self, schema: &Value, value: &Value) -> Result<Vec<String>, String> {
        crate::schema::check(self, schema, value)
    }
}

impl SchemaDocument for Document {
    fn resolve(&self, reference: &str) -> Option<Rc<Value>> {
        Document::resolve(self, reference)
    }

    fn is_v30(&self) -> bool {
        self.v30
    }

    fn validators(&self) -> &Validators {
        &self.validators
    }
}

/// The path part of each server URL (variables at their defaults), longest first.
fn server_prefixes(servers: &Value) -> Vec<String> {
    let mut prefixes: Vec<String> = Vec::new();
    for server in servers.as_array().map(Vec::as_slice).unwrap_or_default() {
        let mut url = server.get("url").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Some(variables) = server.get("variables").and_then(Value::as_object) {
            for (name, variable) in variables {
                let default = variable.get("default").map(gateway_world::json::python_str).unwrap_or_default();
                url = url.replace(&format!("{{{name}}}"), &default);
            }
        }
        let path = if url.contains("://") { gateway_connector::url::split(&url).2 } else { url };
        let path = path.trim_end_matches('/').to_string();
        if !path.is_empty() && !prefixes.contains(&path) {
            prefixes.push(path);
        }
    }
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
    prefixes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_paths_ignore_placeholder_names() {
        assert_eq!(canonical_path("/a/{id}/b/{x_y}"), "/a/{}/b/{}");
        let doc = Document::from_text(
            "t.json".into(),
            r#"{"servers": [{"url": "https://h/{v}/api/", "variables": {"v": {"default": "v2"}}}, {"url": "/x"}], "paths": {}}"#.into(),
        )
        .unwrap();
        assert_eq!(doc.prefixes, vec!["/v2/api".to_string(), "/x".to_string()]);
    }
}

//! The `gateway-world/1` schema dialect: a bounded JSON Schema 2020-12 subset.
//!
//! [`Resolver`] loads sibling documents under `schema/`, checks every keyword and
//! inlines `$ref`s into the normalised form the compiler hashes; [`validate`] checks
//! values against a resolved schema. Anything outside the subset is refused, never
//! ignored, and every refusal matches the original's first error.

use crate::error::{fail, ContractError};
use crate::files::read_json;
use crate::json::{escape_pointer, json_equal, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The only `$schema` a document may declare.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";
/// The contract language name.
pub const LANGUAGE: &str = "gateway-world/1";

const DOC_KEYS: &[&str] = &["title", "description", "$comment", "examples", "deprecated", "readOnly", "writeOnly", "default"];
const TYPES: &[&str] = &["object", "array", "string", "integer", "number", "boolean", "null"];
const OTHER_KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "format",
    "allOf",
    "anyOf",
    "oneOf",
];
const COMPOSITIONS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
const FORMATS: [&str; 4] = ["date", "time", "date-time", "vendor-date-time"];

fn is_keyword(key: &str) -> bool {
    DOC_KEYS.contains(&key) || OTHER_KEYWORDS.contains(&key)
}

/// The original's `members`: an object with only `allowed` keys and every `required` one.
pub fn members(value: &Value, allowed: &[&str], required: &[&str], location: &str) -> Result<(), ContractError> {
    let Some(map) = value.as_object() else {
        return fail("schema", "Expected an object", location);
    };
    if let Some(unknown) = map.keys().filter(|k| !allowed.contains(&k.as_str())).min() {
        return fail("unsupported", format!("Unsupported member {unknown}"), format!("{location}/{}", escape_pointer(unknown)));
    }
    if let Some(missing) = required.iter().filter(|k| !map.contains_key(**k)).min() {
        return fail("schema", format!("Missing member {missing}"), location);
    }
    Ok(())
}

/// Python's `str.isspace` for one character.
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The original's `nonempty`: a string with a non-blank character, at most 256 code points.
pub fn nonempty(value: Option<&Value>, location: &str) -> Result<(), ContractError> {
    match value {
        Some(Value::Str(text)) if !text.chars().all(python_space) && text.chars().count() <= 256 => Ok(()),
        _ => fail("schema", "Expected a nonempty string of at most 256 characters", location),
    }
}

/// The type names a resolved schema declares (a string is a one-element list).
pub fn declared_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::Str(name)) => vec![name.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn invalid_pointer_escape(part: &str) -> bool {
    let bytes = part.as_bytes();
    bytes.iter().enumerate().any(|(i, b)| *b == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1')))
}

/// Decode one JSON-pointer part.
pub fn unescape_pointer(part: &str) -> String {
    part.replace("~1", "/").replace("~0", "~")
}

/// Loads and resolves the schema documents of one world (`<world>/schema/*.json`).
#[derive(Debug)]
pub struct Resolver {
    root: PathBuf,
    /// Every document loaded so far, by file name (shared: resolving reads a document
    /// while it resolves into it, and a large one is never copied for that).
    pub documents: BTreeMap<String, Arc<Value>>,
    identities: BTreeMap<String, String>,
    checked: BTreeSet<String>,
}

impl Resolver {
    /// A resolver for the world at `bundle`.
    pub fn new(bundle: &Path) -> Self {
        let schema = bundle.join("schema");
        let root = std::fs::canonicalize(&schema).unwrap_or(schema);
        Resolver { root, documents: BTreeMap::new(), identities: BTreeMap::new(), checked: BTreeSet::new() }
    }

    /// Load a sibling document by bare file name, checking its identity.
    pub fn load(&mut self, name: &str) -> Result<Arc<Value>, ContractError> {
        let path = self.root.join(name);
        let resolved_parent = std::fs::canonicalize(&path).ok().and_then(|p| p.parent().map(Path::to_path_buf));
        let escapes = match resolved_parent {
            Some(parent) => parent != self.root,
            // A missing file resolves lexically: its parent is schema/ unless the name has separators.
            None => name.contains('/') || name == ".." || name == ".",
        };
        let is_link = std::fs::symlink_metadata(&path).map(|m| m.file_type().is_symlink()).unwrap_or(false);
        if escapes || is_link || !name.ends_with(".json") || name.contains(':') {
            return fail("reference", "References must be sibling .json files inside schema/", name);
        }
        if !self.documents.contains_key(name) {
            let document = read_json(&path)?;
            if document.get("$schema").and_then(Value::as_str) != Some(DIALECT) {
                return fail("schema", format!("Declare $schema = {DIALECT}"), name);
            }
            let id_location = format!("{name}/$id");
            nonempty(document.get("$id"), &id_location)?;
            let identity = document.get("$id").and_then(Value::as_str).unwrap_or_default().to_string();
            if !valid_identity(&identity) {
                return fail("identity", "$id must be an absolute, fragment-free URI (never fetched)", id_location);
            }
            if self.identities.get(&identity).is_some_and(|owner| owner != name) {
                return fail("identity", "Duplicate schema $id", id_location);
            }
            self.identities.insert(identity, name.to_string());
            self.documents.insert(name.to_string(), Arc::new(document));
        }
        Ok(self.documents[name].clone())
    }

    /// The document a `$ref` points into and the path of its target inside it (the
    /// target found), the document's name and the target's location.
    fn reference(
        &mut self,
        reference: &Value,
        name: &str,
        location: &str,
    ) -> Result<(Arc<Value>, Vec<String>, String, String), ContractError> {
        let text = match reference {
            Value::Str(text) if text.matches('#').count() == 1 => text,
            _ => return fail("reference", "Use a local #/$defs/name reference", location),
        };
        let (file, fragment) = text.split_once('#').expect("one #");
        let target_name = if file.is_empty() { name } else { file };
        let file_ok =
            file.len() > 5 && file.ends_with(".json") && file.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !file.is_empty() && !file_ok {
            return fail("reference", "Remote and escaping references are unsupported", location);
        }
        if !fragment.starts_with("/$defs/") {
            return fail("reference", "References must point into $defs", location);
        }
        let document = self.load(target_name)?;
        let mut current = &*document;
        let mut path = Vec::new();
        for part in fragment[1..].split('/') {
            if invalid_pointer_escape(part) {
                return fail("reference", "Invalid JSON pointer escape", location);
            }
            let part = unescape_pointer(part);
            match current.get(&part) {
                Some(next) => current = next,
                None => return fail("reference", format!("Unresolved reference {text}"), location),
            }
            path.push(part);
        }
        Ok((document.clone(), path, target_name.to_string(), format!("{target_name}#{fragment}")))
    }

    /// Resolve a schema at `location` of document `name`: check every keyword and
    /// inline `$ref`s. `stack` holds the reference targets being expanded.
    pub fn resolve(
        &mut self,
        schema: &Value,
        name: &str,
        location: &str,
        stack: &mut Vec<String>,
        root: bool,
    ) -> Result<Value, ContractError> {
        if stack.len() > 80 {
            return fail("reference", "Reference nesting exceeds 80", location);
        }
        let Some(map) = schema.as_object() else {
            return fail("unsupported", "Boolean schemas are unsupported; use an explicit type", location);
        };
        check_members(map, name, location, root)?;
        let mut result: Map = map
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "$ref" | "$defs" | "$schema" | "$id" | "x-gateway"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(reference) = map.get("$ref") {
            result = self.inline_reference(map, reference, result, name, location, stack)?;
        }
        self.resolve_subschemas(map, &mut result, name, location, stack)?;
        let types = normalise_types(&mut result, location, root)?;
        check_keywords(&mut result, &types, location)?;
        let result = Value::Object(result);
        if let Some(default) = result.get("default") {
            validate(&result, default, &format!("{location}/default"), "")?;
        }
        Ok(result)
    }

    /// The target of `$ref` resolved, with the referring schema's own members
    /// (documentation annotations only) laid over it.
    fn inline_reference(
        &mut self,
        map: &Map,
        reference: &Value,
        own: Map,
        name: &str,
        location: &str,
        stack: &mut Vec<String>,
    ) -> Result<Map, ContractError> {
        if map.keys().any(|k| k != "$ref" && !DOC_KEYS.contains(&k.as_str())) {
            return fail("unsupported", "$ref siblings may only be documentation annotations; use allOf for assertions", location);
        }
        let (document, path, target_name, target_location) = self.reference(reference, name, location)?;
        if stack.contains(&target_location) {
            return fail("recursive_reference", "Recursive payload schemas are unsupported (entity relationships may cycle)", location);
        }
        let target = path.iter().fold(&*document, |at, part| at.get(part).expect("found by reference"));
        stack.push(target_location.clone());
        let resolved = self.resolve(target, &target_name, &target_location, stack, false);
        stack.pop();
        let Value::Object(mut merged) = resolved? else { unreachable!("resolve returns objects") };
        for (key, value) in own {
            merged.insert(key, value);
        }
        Ok(merged)
    }

    /// The schemas inside one: `$defs` (checked, then dropped), `properties` in name
    /// order, `items`, and the branches of the compositions, each resolved in place.
    fn resolve_subschemas(
        &mut self,
        map: &Map,
        result: &mut Map,
        name: &str,
        location: &str,
        stack: &mut Vec<String>,
    ) -> Result<(), ContractError> {
        for key in ["$defs", "properties"] {
            let Some(children) = map.get(key) else { continue };
            let Some(children) = children.as_object() else {
                return fail("schema", format!("{key} must be an object"), format!("{location}/{key}"));
            };
            let mut sorted: Vec<(&String, &Value)> = children.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            let mut resolved = Map::default();
            for (child, value) in sorted {
                let child_location = format!("{location}/{key}/{}", escape_pointer(child));
                let child_schema = self.resolve(value, name, &child_location, stack, false)?;
                // `$defs` are only checked here (what uses them resolves them again):
                // kept, they would be a second copy of the whole document.
                if key == "properties" {
                    resolved.insert(child.clone(), child_schema);
                }
            }
            if key == "properties" {
                result.insert(key.to_string(), Value::Object(resolved));
            }
        }
        if let Some(items) = map.get("items") {
            let resolved = self.resolve(items, name, &format!("{location}/items"), stack, false)?;
            result.insert("items".into(), resolved);
        }
        for key in COMPOSITIONS {
            let Some(branches) = map.get(key) else { continue };
            let branches = match branches {
                Value::Array(items) if !items.is_empty() => items,
                _ => return fail("schema", format!("{key} needs a nonempty schema array"), location),
            };
            let mut resolved = Vec::with_capacity(branches.len());
            for (i, branch) in branches.iter().enumerate() {
                resolved.push(self.resolve(branch, name, &format!("{location}/{key}/{i}"), stack, false)?);
            }
            result.insert(key.to_string(), Value::Array(resolved));
        }
        Ok(())
    }

    /// Resolve every loaded document from its root, so unused `$defs` are checked too.
    pub fn check_documents(&mut self) -> Result<(), ContractError> {
        while let Some(name) = self.documents.keys().find(|n| !self.checked.contains(*n)).cloned() {
            let document = self.documents[&name].clone();
            self.resolve(&document, &name, &format!("{name}#"), &mut Vec::new(), true)?;
            self.checked.insert(name);
        }
        Ok(())
    }
}

/// A schema's members before anything is resolved: only known keywords (and
/// `x-gateway` at world.json's root), identity and dialect at a document's root only,
/// and the annotations' types.
fn check_members(map: &Map, name: &str, location: &str, root: bool) -> Result<(), ContractError> {
    let allow_annotation = root && name == "world.json";
    if let Some(unknown) = map.keys().filter(|k| !(is_keyword(k) || allow_annotation && *k == "x-gateway")).min() {
        return fail("unsupported", format!("Unsupported member {unknown}"), format!("{location}/{}", escape_pointer(unknown)));
    }
    if !root && (map.contains_key("$id") || map.contains_key("$schema") || map.contains_key("x-gateway")) {
        return fail("unsupported", "Identity/dialect/annotations belong at document root", location);
    }
    for key in ["title", "description", "$comment"] {
        if map.get(key).is_some_and(|v| !matches!(v, Value::Str(_))) {
            return fail("schema", format!("{key} must be a string"), location);
        }
    }
    for key in ["deprecated", "readOnly", "writeOnly", "uniqueItems", "additionalProperties"] {
        if map.get(key).is_some_and(|v| !matches!(v, Value::Bool(_))) {
            return fail("schema", format!("{key} must be boolean"), format!("{location}/{key}"));
        }
    }
    if map.get("examples").is_some_and(|v| !matches!(v, Value::Array(_))) {
        return fail("schema", "examples must be an array", location);
    }
    Ok(())
}

/// The declared types, checked (known, distinct, one type plus at most null, some
/// type or composition below the root); a type array is written back sorted.
fn normalise_types(result: &mut Map, location: &str, root: bool) -> Result<Vec<String>, ContractError> {
    let types: Vec<String> = match result.get("type") {
        None => Vec::new(),
        Some(Value::Str(name)) => vec![name.clone()],
        Some(Value::Array(items)) => {
            let mut names = Vec::new();
            for item in items {
                match item {
                    Value::Str(name) if TYPES.contains(&name.as_str()) => names.push(name.clone()),
                    _ => return fail("schema", "Invalid type declaration", location),
                }
            }
            names
        }
        Some(_) => return fail("schema", "Invalid type declaration", location),
    };
    let distinct: BTreeSet<&String> = types.iter().collect();
    if types.iter().any(|t| !TYPES.contains(&t.as_str())) || distinct.len() != types.len() {
        return fail("schema", "Invalid type declaration", location);
    }
    if result.contains_key("type") && types.is_empty() {
        return fail("schema", "type arrays must not be empty", location);
    }
    if types.len() > 1 && (types.len() != 2 || !types.iter().any(|t| t == "null")) {
        return fail("unsupported", "Type unions support one type plus null; use anyOf otherwise", location);
    }
    if types.is_empty() && !COMPOSITIONS.iter().any(|k| result.contains_key(*k)) && !root {
        return fail("schema", "Declare an explicit type or composition", location);
    }
    if let Some(Value::Array(_)) = result.get("type") {
        let mut sorted = types.clone();
        sorted.sort();
        result.insert("type".into(), Value::Array(sorted.into_iter().map(Value::Str).collect()));
    }
    Ok(types)
}

/// The assertion keywords against the declared `types`: each applies to a type the
/// schema declares, arrays have items, `required` names distinct declared properties
/// (written back sorted), counts are nonnegative integers, bounds are numbers, the
/// format is a known profile, `enum` values are distinct.
fn check_keywords(result: &mut Map, types: &[String], location: &str) -> Result<(), ContractError> {
    const APPLICABILITY: &[(&str, &[&str])] = &[
        ("properties", &["object"]),
        ("required", &["object"]),
        ("additionalProperties", &["object"]),
        ("items", &["array"]),
        ("minItems", &["array"]),
        ("maxItems", &["array"]),
        ("uniqueItems", &["array"]),
        ("minLength", &["string"]),
        ("maxLength", &["string"]),
        ("format", &["string"]),
        ("minimum", &["integer", "number"]),
        ("maximum", &["integer", "number"]),
        ("exclusiveMinimum", &["integer", "number"]),
        ("exclusiveMaximum", &["integer", "number"]),
    ];
    for (key, applicable) in APPLICABILITY {
        if result.contains_key(*key) && !types.iter().any(|t| applicable.contains(&t.as_str())) {
            return fail("schema", format!("{key} requires an applicable explicit type"), format!("{location}/{key}"));
        }
    }
    if types.iter().any(|t| t == "array") && !result.contains_key("items") {
        return fail("schema", "Array schemas require items", location);
    }
    if let Some(required) = result.get("required") {
        let names: Option<Vec<String>> =
            required.as_array().and_then(|items| items.iter().map(|v| v.as_str().map(str::to_string)).collect());
        let Some(mut names) = names.filter(|n| n.iter().collect::<BTreeSet<_>>().len() == n.len()) else {
            return fail("schema", "required must contain distinct property names", location);
        };
        let declared = result.get("properties").and_then(Value::as_object);
        if names.iter().any(|n| !declared.is_some_and(|d| d.contains_key(n))) {
            return fail("schema", "required names must be declared properties", location);
        }
        names.sort();
        result.insert("required".into(), Value::Array(names.into_iter().map(Value::Str).collect()));
    }
    for key in ["minItems", "maxItems", "minLength", "maxLength"] {
        if result.get(key).is_some_and(|v| !matches!(v, Value::Int(n) if *n >= 0)) {
            return fail("schema", format!("{key} must be a nonnegative integer"), location);
        }
    }
    for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
        if result.get(key).is_some_and(|v| !v.is_number()) {
            return fail("schema", format!("{key} must be numeric"), location);
        }
    }
    if let Some(format) = result.get("format") {
        if !format.as_str().is_some_and(|f| FORMATS.contains(&f)) {
            return fail("unsupported", "Unsupported string format profile", format!("{location}/format"));
        }
    }
    if let Some(values) = result.get("enum") {
        let distinct = match values {
            Value::Array(items) if !items.is_empty() => items.iter().enumerate().all(|(i, v)| items[..i].iter().all(|p| !json_equal(v, p))),
            _ => false,
        };
        if !distinct {
            return fail("schema", "enum must contain distinct values", location);
        }
    }
    Ok(())
}

fn valid_identity(identity: &str) -> bool {
    let mut chars = identity.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase()) && {
        let rest: String = chars.take_while(|c| *c != ':').collect();
        rest.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '.' | '-'))
            && identity[1 + rest.len()..].starts_with(':')
    };
    if !scheme_ok || identity.contains('#') {
        return false;
    }
    let bytes: Vec<char> = identity.chars().collect();
    for (i, c) in bytes.iter().enumerate() {
        let code = *c as u32;
        if code <= 0x20 || (0x7f..=0xffff).contains(&code) || python_space(*c) {
            return false;
        }
        if *c == '%' && !(bytes.get(i + 1).is_some_and(char::is_ascii_hexdigit) && bytes.get(i + 2).is_some_and(char::is_ascii_hexdigit)) {
            return false;
        }
    }
    true
}

// ------------------------------------------------------------------ validation

/// Validate `value` against a resolved schema located at `location`, the value
/// itself being at `path`. The first failure, in the original's order, is returned.
pub fn validate(schema: &Value, value: &Value, location: &str, path: &str) -> Result<(), ContractError> {
    if let Some(pointer) = crate::json::range_problem(value) {
        return fail("numeric_range", crate::json::NUMERIC_RANGE_MESSAGE, format!("{path}{pointer}"));
    }
    validate_node(schema, value, location, path)
}

fn validate_node(schema: &Value, value: &Value, location: &str, path: &str) -> Result<(), ContractError> {
    let error = |code: &str, message: String, keyword: &str| {
        let schema_path = if keyword.is_empty() { location.to_string() } else { format!("{location}/{keyword}") };
        Err(ContractError::new(code, message, schema_path).with_path(path))
    };
    let types = declared_types(schema);
    if !types.is_empty() {
        let actual = value.type_name();
        let matches = types.contains(&actual)
            || (actual == "integer" && types.contains(&"number"))
            || (actual == "number" && types.contains(&"integer") && matches!(value, Value::Float(f) if f.fract() == 0.0));
        if !matches {
            return error("type", format!("Expected {}", types.join(" or ")), "type");
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.iter().any(|o| json_equal(value, o)) {
            return error("enum", "Value is outside the declared enum".into(), "enum");
        }
    }
    if let Some(constant) = schema.get("const") {
        if !json_equal(value, constant) {
            return error("const", "Value differs from the declared constant".into(), "const");
        }
    }
    for keyword in COMPOSITIONS {
        let Some(Value::Array(branches)) = schema.get(keyword) else { continue };
        let passed = branches
            .iter()
            .enumerate()
            .filter(|(i, branch)| validate_node(branch, value, &format!("{location}/{keyword}/{i}"), path).is_ok())
            .count();
        let ok = match keyword {
            "allOf" => passed == branches.len(),
            "anyOf" => passed > 0,
            _ => passed == 1,
        };
        if !ok {
            return error(keyword, "Value does not satisfy the composition".into(), keyword);
        }
    }
    match value {
        Value::Object(members) => {
            if let Some(Value::Array(required)) = schema.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !members.contains_key(name) {
                        return error("required", format!("Missing required property {name}"), "required");
                    }
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let closed = matches!(schema.get("additionalProperties"), Some(Value::Bool(false)));
            for (name, item) in members {
                match properties.and_then(|p| p.get(name)) {
                    Some(property) => {
                        let escaped = escape_pointer(name);
                        validate_node(property, item, &format!("{location}/properties/{escaped}"), &format!("{path}/{escaped}"))?;
                    }
                    None if closed => return error("additionalProperties", format!("Unknown property {name}"), "additionalProperties"),
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            let bound = |key: &str| match schema.get(key) {
                Some(Value::Int(n)) => Some(*n as usize),
                _ => None,
            };
            if bound("minItems").is_some_and(|min| items.len() < min) {
                return error("minItems", "Array length is outside the declared bound".into(), "minItems");
            }
            if bound("maxItems").is_some_and(|max| items.len() > max) {
                return error("maxItems", "Array length is outside the declared bound".into(), "maxItems");
            }
            if matches!(schema.get("uniqueItems"), Some(Value::Bool(true)))
                && items.iter().enumerate().any(|(i, item)| items[..i].iter().any(|p| json_equal(item, p)))
            {
                return error("uniqueItems", "Array items must be unique".into(), "uniqueItems");
            }
            if let Some(item_schema) = schema.get("items") {
                let item_location = format!("{location}/items");
                for (i, item) in items.iter().enumerate() {
                    validate_node(item_schema, item, &item_location, &format!("{path}/{i}"))?;
                }
            }
        }
        Value::Str(text) => {
            let length = text.chars().count() as i64;
            let below = matches!(schema.get("minLength"), Some(Value::Int(n)) if length < *n);
            let above = matches!(schema.get("maxLength"), Some(Value::Int(n)) if length > *n);
            if below || above {
                return error("length", "String length is outside the declared bound".into(), "");
            }
            if let Some(format) = schema.get("format").and_then(Value::as_str) {
                if FORMATS.contains(&format) && !valid_format(format, text) {
                    return error("format", format!("Expected a valid {format} value"), "format");
                }
            }
        }
        Value::Int(_) | Value::Float(_) => {
            for keyword in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
                let Some(bound) = schema.get(keyword).filter(|b| b.is_number()) else { continue };
                let order = compare_numbers(value, bound);
                let outside = match keyword {
                    "minimum" => order == std::cmp::Ordering::Less,
                    "maximum" => order == std::cmp::Ordering::Greater,
                    "exclusiveMinimum" => order != std::cmp::Ordering::Greater,
                    _ => order != std::cmp::Ordering::Less,
                };
                if outside {
                    return error(keyword, "Number is outside the declared bound".into(), keyword);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn compare_numbers(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        _ => a.as_f64().partial_cmp(&b.as_f64()).unwrap_or(std::cmp::Ordering::Equal),
    }
}

// ------------------------------------------------------------------ formats

/// Whether `text` is a valid value of one of the four format profiles.
pub fn valid_format(format: &str, text: &str) -> bool {
    let b = text.as_bytes();
    match format {
        "date" => b.len() == 10 && date_at(b, 0),
        "time" => clock_offset(b, 0, true) == Some(b.len()),
        "date-time" => b.len() > 11 && date_at(b, 0) && matches!(b[10], b'T' | b't') && clock_offset(b, 11, true) == Some(b.len()),
        "vendor-date-time" => {
            b.len() > 11 && date_at(b, 0) && matches!(b[10], b'T' | b't' | b' ') && clock_offset(b, 11, false) == Some(b.len())
        }
        _ => true,
    }
}

fn digits(b: &[u8], at: usize, count: usize) -> Option<u32> {
    let slice = b.get(at..at + count)?;
    slice.iter().all(u8::is_ascii_digit).then(|| slice.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// `YYYY-MM-DD` at `at`, a real calendar date with year ≥ 1.
fn date_at(b: &[u8], at: usize) -> bool {
    let (Some(year), Some(month), Some(day)) = (digits(b, at, 4), digits(b, at + 5, 2), digits(b, at + 8, 2)) else {
        return false;
    };
    if b.get(at + 4) != Some(&b'-') || b.get(at + 7) != Some(&b'-') || year == 0 || !(1..=12).contains(&month) {
        return false;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    (1..=days).contains(&day)
}

/// `HH:MM:SS(.f+)?` then an offset (required or optional); the end position.
fn clock_offset(b: &[u8], at: usize, offset_required: bool) -> Option<usize> {
    let hour = digits(b, at, 2)?;
    let minute = digits(b, at + 3, 2)?;
    let second = digits(b, at + 6, 2)?;
    if b.get(at + 2) != Some(&b':') || b.get(at + 5) != Some(&b':') || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut pos = at + 8;
    if b.get(pos) == Some(&b'.') {
        let start = pos + 1;
        pos = start;
        while b.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        if pos == start {
            return None;
        }
    }
    match b.get(pos) {
        Some(b'Z' | b'z') => Some(pos + 1),
        Some(b'+' | b'-') => {
            let hours = digits(b, pos + 1, 2)?;
            let minutes = digits(b, pos + 4, 2)?;
            (b.get(pos + 3) == Some(&b':') && hours <= 23 && minutes <= 59).then_some(pos + 6)
        }
        None if !offset_required => Some(pos),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_the_profiles() {
        assert!(valid_format("date", "2024-02-29"));
        assert!(!valid_format("date", "2023-02-29"));
        assert!(!valid_format("date", "0000-01-01"));
        assert!(valid_format("time", "23:59:59.5+23:59"));
        assert!(!valid_format("time", "23:59:59"));
        assert!(!valid_format("time", "24:00:00Z"));
        assert!(valid_format("date-time", "2024-01-01t00:00:00z"));
        assert!(!valid_format("date-time", "2024-01-01 00:00:00Z"));
        assert!(!valid_format("date-time", "2024-01-01T23:59:60Z"));
        assert!(!valid_format("date-time", "2024-01-01T00:00:00.Z"));
        assert!(valid_format("vendor-date-time", "2024-01-01 00:00:00"));
        assert!(!valid_format("vendor-date-time", "2024-01-01 00:00:00+0100"));
    }

    #[test]
    fn identities() {
        assert!(valid_identity("urn:gateway:x"));
        assert!(valid_identity("https://example.com/a%20b"));
        assert!(!valid_identity("Urn:x"));
        assert!(!valid_identity("urn:x#y"));
        assert!(!valid_identity("urn:a b"));
        assert!(!valid_identity("urn:%zz"));
        assert!(!valid_identity("urn:é"));
        assert!(valid_identity("urn:😀"));
        assert!(!valid_identity("urn"));
    }

    fn schema(text: &str) -> Value {
        crate::json::parse_clean(text).unwrap()
    }

    #[test]
    fn validation_order_and_messages() {
        let s = schema(
            r#"{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string","minLength":2},"age":{"type":["integer","null"],"minimum":0}}}"#,
        );
        let err = validate(&s, &schema(r#"{"id":"x"}"#), "L", "").unwrap_err();
        assert_eq!((err.code.as_str(), err.schema_path.as_str(), err.path.as_str()), ("length", "L/properties/id", "/id"));
        let err = validate(&s, &schema(r#"{"age":1}"#), "L", "").unwrap_err();
        assert_eq!((err.code.as_str(), err.message.as_str()), ("required", "Missing required property id"));
        let err = validate(&s, &schema(r#"{"id":"xy","age":"1"}"#), "L", "").unwrap_err();
        assert_eq!((err.message.as_str(), err.schema_path.as_str()), ("Expected integer or null", "L/properties/age/type"));
        let err = validate(&s, &schema(r#"{"id":"xy","zz":1}"#), "L", "").unwrap_err();
        assert_eq!((err.code.as_str(), err.message.as_str()), ("additionalProperties", "Unknown property zz"));
        assert!(validate(&s, &schema(r#"{"id":"xy","age":3.0}"#), "L", "").is_ok());
        let err = validate(&s, &schema(r#"{"id":"xy","age":-1}"#), "L", "").unwrap_err();
        assert_eq!(err.code, "minimum");
    }
}

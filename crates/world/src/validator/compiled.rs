//! The compiled schema node ([`Validator`]) and its check of a built value.

use crate::dialect::{declared_types, valid_format};
use crate::json::{json_equal, Value, SAFE_INTEGER};
use std::cmp::Ordering;

pub(super) const NULL: u8 = 1;
pub(super) const BOOLEAN: u8 = 2;
pub(super) const INTEGER: u8 = 4;
pub(super) const NUMBER: u8 = 8;
pub(super) const STRING: u8 = 16;
pub(super) const ARRAY: u8 = 32;
pub(super) const OBJECT: u8 = 64;

/// A compiled schema node.
#[derive(Debug, Clone, Default)]
pub struct Validator {
    /// Declared types as a bit set (0 = any).
    pub(super) types: u8,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    all_of: Option<Vec<Validator>>,
    any_of: Option<Vec<Validator>>,
    one_of: Option<Vec<Validator>>,
    pub(super) required: Vec<String>,
    pub(super) properties: Properties<Validator>,
    pub(super) closed: bool,
    pub(super) min_items: Option<usize>,
    pub(super) max_items: Option<usize>,
    unique_items: bool,
    pub(super) items: Option<Box<Validator>>,
    pub(super) min_length: Option<i64>,
    pub(super) max_length: Option<i64>,
    pub(super) format: Option<String>,
    bounds: Vec<(Bound, Value)>,
}

type Properties<V> = indexmap::IndexMap<String, V, foldhash::fast::RandomState>;

#[derive(Debug, Clone, Copy)]
enum Bound {
    Minimum,
    Maximum,
    ExclusiveMinimum,
    ExclusiveMaximum,
}

fn type_bit(name: &str) -> u8 {
    match name {
        "null" => NULL,
        "boolean" => BOOLEAN,
        "integer" => INTEGER,
        "number" => NUMBER,
        "string" => STRING,
        "array" => ARRAY,
        "object" => OBJECT,
        _ => 0,
    }
}

impl Validator {
    /// Compile a resolved schema.
    pub fn compile(schema: &Value) -> Validator {
        let branches = |keyword: &str| match schema.get(keyword) {
            Some(Value::Array(items)) => Some(items.iter().map(Validator::compile).collect()),
            _ => None,
        };
        let count = |keyword: &str| match schema.get(keyword) {
            Some(Value::Int(n)) => Some(*n as usize),
            _ => None,
        };
        let length = |keyword: &str| match schema.get(keyword) {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        };
        let mut bounds = Vec::new();
        for (keyword, bound) in [
            ("minimum", Bound::Minimum),
            ("maximum", Bound::Maximum),
            ("exclusiveMinimum", Bound::ExclusiveMinimum),
            ("exclusiveMaximum", Bound::ExclusiveMaximum),
        ] {
            if let Some(value) = schema.get(keyword).filter(|b| b.is_number()) {
                bounds.push((bound, value.clone()));
            }
        }
        let declared = declared_types(schema);
        let mut types = declared.iter().map(|t| type_bit(t)).fold(0, |a, b| a | b);
        if !declared.is_empty() && types == 0 {
            types = 128; // only unknown names: nothing matches
        }
        Validator {
            types,
            enumeration: schema.get("enum").and_then(Value::as_array).cloned(),
            constant: schema.get("const").cloned(),
            all_of: branches("allOf"),
            any_of: branches("anyOf"),
            one_of: branches("oneOf"),
            required: schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            properties: schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.iter().map(|(k, v)| (k.clone(), Validator::compile(v))).collect())
                .unwrap_or_default(),
            closed: matches!(schema.get("additionalProperties"), Some(Value::Bool(false))),
            min_items: count("minItems"),
            max_items: count("maxItems"),
            unique_items: matches!(schema.get("uniqueItems"), Some(Value::Bool(true))),
            items: schema.get("items").map(|s| Box::new(Validator::compile(s))),
            min_length: length("minLength"),
            max_length: length("maxLength"),
            format: schema.get("format").and_then(Value::as_str).map(str::to_string),
            bounds,
        }
    }

    /// Whether this node compares whole values (`enum`, `const`, the combinators,
    /// `uniqueItems`), so that reading it needs a tree.
    pub(super) fn needs_tree(&self) -> bool {
        self.enumeration.is_some()
            || self.constant.is_some()
            || self.all_of.is_some()
            || self.any_of.is_some()
            || self.one_of.is_some()
            || self.unique_items
    }

    /// Whether a number meets this node's `minimum`/`maximum` and exclusive bounds.
    pub(super) fn within_bounds(&self, value: &Value) -> bool {
        self.bounds.iter().all(|(bound, limit)| {
            let order = compare_numbers(value, limit);
            match bound {
                Bound::Minimum => order != Ordering::Less,
                Bound::Maximum => order != Ordering::Greater,
                Bound::ExclusiveMinimum => order == Ordering::Greater,
                Bound::ExclusiveMaximum => order == Ordering::Less,
            }
        })
    }

    /// Whether `value` conforms (numbers in range included).
    pub fn accepts(&self, value: &Value) -> bool {
        in_range(value) && self.node(value)
    }

    fn node(&self, value: &Value) -> bool {
        if self.types != 0 {
            let ok = match value {
                Value::Null => self.types & NULL != 0,
                Value::Bool(_) => self.types & BOOLEAN != 0,
                Value::Int(_) => self.types & (INTEGER | NUMBER) != 0,
                Value::Float(f) => self.types & NUMBER != 0 || (self.types & INTEGER != 0 && f.fract() == 0.0),
                Value::Str(_) => self.types & STRING != 0,
                Value::Array(_) => self.types & ARRAY != 0,
                Value::Object(_) => self.types & OBJECT != 0,
            };
            if !ok {
                return false;
            }
        }
        if let Some(options) = &self.enumeration {
            if !options.iter().any(|o| json_equal(value, o)) {
                return false;
            }
        }
        if let Some(constant) = &self.constant {
            if !json_equal(value, constant) {
                return false;
            }
        }
        if self.all_of.as_ref().is_some_and(|all| !all.iter().all(|b| b.node(value))) {
            return false;
        }
        if self.any_of.as_ref().is_some_and(|any| !any.iter().any(|b| b.node(value))) {
            return false;
        }
        if self.one_of.as_ref().is_some_and(|one| one.iter().filter(|b| b.node(value)).count() != 1) {
            return false;
        }
        match value {
            Value::Object(members) => {
                if self.required.iter().any(|name| !members.contains_key(name)) {
                    return false;
                }
                for (name, item) in members {
                    match self.properties.get(name) {
                        Some(property) if !property.node(item) => return false,
                        None if self.closed => return false,
                        _ => {}
                    }
                }
                true
            }
            Value::Array(items) => {
                if self.min_items.is_some_and(|min| items.len() < min) || self.max_items.is_some_and(|max| items.len() > max) {
                    return false;
                }
                if self.unique_items && items.iter().enumerate().any(|(i, item)| items[..i].iter().any(|p| json_equal(item, p))) {
                    return false;
                }
                match &self.items {
                    Some(schema) => items.iter().all(|item| schema.node(item)),
                    None => true,
                }
            }
            Value::Str(text) => {
                if self.min_length.is_some() || self.max_length.is_some() {
                    let length = text.chars().count() as i64;
                    if self.min_length.is_some_and(|n| length < n) || self.max_length.is_some_and(|n| length > n) {
                        return false;
                    }
                }
                match &self.format {
                    Some(format) => valid_format(format, text),
                    None => true,
                }
            }
            Value::Int(_) | Value::Float(_) => self.within_bounds(value),
            _ => true,
        }
    }
}

fn compare_numbers(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        _ => a.as_f64().partial_cmp(&b.as_f64()).unwrap_or(Ordering::Equal),
    }
}

pub(super) fn in_range(value: &Value) -> bool {
    match value {
        Value::Int(n) => n.unsigned_abs() <= SAFE_INTEGER as u64,
        Value::Float(f) => f.is_finite() && f.abs() <= SAFE_INTEGER as f64,
        Value::Array(items) => items.iter().all(in_range),
        Value::Object(map) => map.values().all(in_range),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::validate;

    #[test]
    fn agrees_with_validate() {
        let schema = crate::json::parse(
            r#"{"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "uniqueItems": true},
                "at": {"type": "string", "format": "date-time"}, "kind": {"enum": ["a", "b"]}, "n": {"type": ["number", "null"], "exclusiveMaximum": 5},
                "x": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}, "required": ["id"], "additionalProperties": false}"#,
        )
        .unwrap()
        .value;
        let compiled = Validator::compile(&schema);
        for row in [
            r#"{"id": 1}"#,
            r#"{"id": 1.0}"#,
            r#"{"id": 1.5}"#,
            r#"{"id": 0}"#,
            r#"{}"#,
            r#"{"id": 1, "zz": 1}"#,
            r#"{"id": 1, "tags": ["a", "a"]}"#,
            r#"{"id": 1, "tags": ["abcd"]}"#,
            r#"{"id": 1, "at": "2026-01-01T00:00:00Z"}"#,
            r#"{"id": 1, "at": "2026-13-01T00:00:00Z"}"#,
            r#"{"id": 1, "kind": "c"}"#,
            r#"{"id": 1, "n": null}"#,
            r#"{"id": 1, "n": 5}"#,
            r#"{"id": 1, "x": true}"#,
            r#"{"id": 9007199254740992}"#,
            r#"{"id": true}"#,
        ] {
            let value = crate::json::parse(row).unwrap().value;
            assert_eq!(compiled.accepts(&value), validate(&schema, &value, "", "").is_ok(), "{row}");
        }
    }
}

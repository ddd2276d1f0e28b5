//! A row's JSONL line as the original's chunker writes it, and its length counted
//! without writing it (where a row falls in the chunks).

use super::options::ROW_LINE;
use crate::error::Result;
use crate::json::{dumps, Map, Value};
use crate::rows::{plain, Row};

pub(super) fn string_len(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// The length in bytes of `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`.
pub fn encoded_len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Int(n) => {
            let digits = if *n == 0 { 1 } else { n.unsigned_abs().ilog10() as usize + 1 };
            digits + usize::from(*n < 0)
        }
        Value::Float(f) => crate::json::python_float_repr(*f).len(),
        Value::Str(text) => string_len(text),
        Value::Array(items) => 2 + items.len().saturating_sub(1) + items.iter().map(encoded_len).sum::<usize>(),
        Value::Object(map) => 2 + map.len().saturating_sub(1) + map.iter().map(|(k, v)| string_len(k) + 1 + encoded_len(v)).sum::<usize>(),
    }
}

/// Python's `json.dumps` refusal of NaN and infinities (`allow_nan=False`).
pub fn has_non_finite(value: &Value) -> bool {
    match value {
        Value::Float(f) => !f.is_finite(),
        Value::Array(items) => items.iter().any(has_non_finite),
        Value::Object(map) => map.values().any(has_non_finite),
        _ => false,
    }
}

/// The JSONL line of a row as the original's chunker writes it, or its refusal:
/// NaN and infinities are not JSON, a lone surrogate is not UTF-8.
pub fn encode_line(row: &Row, tagged: bool) -> Result<String> {
    debug_assert!(row.problem.is_some() || encoded_len(&row.value) > 0);
    if row.problem.as_ref().is_some_and(|p| p.code == "numeric_range") && has_non_finite(&row.value) {
        return Err(plain("Out of range float values are not JSON compliant"));
    }
    let line = if tagged {
        let mut map = Map::with_capacity_and_hasher(2, Default::default());
        map.insert("entity".into(), Value::str(&row.entity));
        map.insert("row".into(), row.value.clone());
        dumps(&Value::Object(map), ROW_LINE)
    } else {
        dumps(&row.value, ROW_LINE)
    };
    if row.problem.as_ref().is_some_and(|p| p.code == "json") {
        let position = line.chars().position(|c| c == '\u{FFFD}').unwrap_or(0);
        let unit = row.lone_surrogate.unwrap_or(0xD800);
        return Err(plain(format!("'utf-8' codec can't encode character '\\u{unit:04x}' in position {position}: surrogates not allowed")));
    }
    Ok(line)
}

//! `data extract`: rows out of what an agent already holds, shaped for `data import`.
//!
//! | shape | input | rows |
//! | --- | --- | --- |
//! | `tool-results` | JSONL of `{…, "raw_output": {…}}` | objects of `raw_output.results` (else `.items`) carrying every key field |
//! | `vendor-envelope` | the vendor's response, one per line or one document, or a bare array | objects under the world's `[api].envelope` |
//! | `session-export` | `calls.jsonl` of a session | `result.<envelope>` of successful `call` records |
//!
//! Every row then loses its `null`/`""` members and the properties its entity does
//! not declare (counted), rows are deduped by primary key (`fill`: first wins and
//! later rows add missing members; `upsert`: last wins), and the world's
//! `[redact]` policy is applied. The policy and the envelope come from the world's
//! `connector.toml`, which this crate does not parse: the caller supplies them.

pub use crate::check::Merge;
use crate::compiler::build;
use crate::error::{ContractError, Error, Result};
use crate::files::sha256_hex;
use crate::json::{dumps, object, parse_loads, python_str, DumpOptions, Map, Value};
use crate::rows::{open_source, plain, stream_array, Flow, Reader, Row, Seen, LINE_CAP};
use indexmap::IndexMap;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

/// The input shapes.
pub const SHAPES: [&str; 3] = ["tool-results", "vendor-envelope", "session-export"];
/// Dedupe rules.
pub const MERGES: [&str; 2] = ["fill", "upsert"];

/// What the input of an extraction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// A tool-results export: `{tool, result}` lines or documents.
    ToolResults,
    /// A vendor response: the rows under the world's `[api].envelope`.
    VendorEnvelope,
    /// A session export: the call log's results.
    SessionExport,
}

impl Shape {
    /// Every shape, in the original's order.
    pub const ALL: [Shape; 3] = [Shape::ToolResults, Shape::VendorEnvelope, Shape::SessionExport];

    /// The original's spelling (`tool-results`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::ToolResults => "tool-results",
            Shape::VendorEnvelope => "vendor-envelope",
            Shape::SessionExport => "session-export",
        }
    }
}

/// The world's `[redact]` policy.
#[derive(Debug, Clone, Default)]
pub struct Redaction {
    /// The connector slug that salts hashes.
    pub slug: String,
    /// Fields replaced by `"sha256:" + sha256("<slug>:<value>")`.
    pub hash: BTreeSet<String>,
    /// Fields removed.
    pub drop: BTreeSet<String>,
    /// Numeric fields rounded to this many decimals.
    pub round: BTreeMap<String, i64>,
}

/// What the world's `connector.toml` says about extraction: the envelope key and,
/// unless redaction is off, the policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `[api].envelope` (`""` = a bare array).
    pub envelope: String,
    /// The `[redact]` policy, if any.
    pub redaction: Option<Redaction>,
}

/// The summary printed on stderr.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Rows the adapter produced.
    pub read: usize,
    /// Rows written.
    pub rows: usize,
    /// Undeclared fields stripped, by name.
    pub unknown: BTreeMap<String, usize>,
    /// Top-level fields dropped by redaction.
    pub dropped: usize,
    /// Top-level fields hashed by redaction.
    pub hashed: usize,
}

impl Summary {
    /// `{"read", "rows", "unknownFields", "redacted": {"dropped", "hashed"}}`.
    pub fn to_json(&self) -> Value {
        object([
            ("read", Value::Int(self.read as i64)),
            ("rows", Value::Int(self.rows as i64)),
            ("unknownFields", object(self.unknown.iter().map(|(k, v)| (k.clone(), Value::Int(*v as i64))))),
            ("redacted", object([("dropped", Value::Int(self.dropped as i64)), ("hashed", Value::Int(self.hashed as i64))])),
        ])
    }
}

fn extract_error(message: impl Into<String>, at: &str) -> Error {
    ContractError::new("extract", message, at).into()
}

fn dig<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    let mut value = value;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

fn objects(value: Option<&Value>, out: &mut dyn FnMut(&Map) -> Result<()>) -> Result<()> {
    match value {
        Some(Value::Array(items)) => {
            for item in items {
                if let Value::Object(map) = item {
                    out(map)?;
                }
            }
        }
        Some(Value::Object(map)) => out(map)?,
        _ => {}
    }
    Ok(())
}

/// JSONL records of a stream, blank lines skipped.
fn lines(reader: &mut Reader<'_>, at: &str, out: &mut dyn FnMut(Value) -> Result<()>) -> Result<()> {
    let mut number = 0usize;
    while let Some(range) = reader.line(None)? {
        number += 1;
        let line = reader.text(range);
        if !line.trim().is_empty() {
            let value = parse_loads(line).map_err(|_| extract_error(format!("{at}:{number} is not JSON"), at))?.value;
            out(value)?;
        }
        reader.compact();
    }
    Ok(())
}

fn tool_results(reader: &mut Reader<'_>, at: &str, keys: &[String], out: &mut dyn FnMut(&Map) -> Result<()>) -> Result<()> {
    lines(reader, at, &mut |record| {
        let Some(Value::Object(raw)) = record.get("raw_output") else { return Ok(()) };
        let listed = match raw.get("results") {
            None | Some(Value::Null) => raw.get("items"),
            some => some,
        };
        objects(listed, &mut |item| if keys.iter().all(|k| item.contains_key(k)) { out(item) } else { Ok(()) })
    })
}

fn vendor_envelope(reader: &mut Reader<'_>, at: &str, envelope: &str, out: &mut dyn FnMut(&Map) -> Result<()>) -> Result<()> {
    let Some(head) = reader.peek()? else { return Ok(()) };
    if head == b'[' {
        if !envelope.is_empty() {
            let quoted = crate::json::python_repr(&Value::str(envelope));
            return Err(extract_error(format!("{at} is a bare array but the world's envelope is {quoted}"), at));
        }
        let mut seen = Seen::default();
        stream_array(reader, at, "", &mut seen, &mut |row: Row| {
            if let Value::Object(map) = &row.value {
                out(map)?;
            }
            Ok(Flow::More)
        })?;
        return Ok(());
    }
    if head != b'{' {
        return Err(extract_error(format!("{at} is neither a JSON object nor an array"), at));
    }
    if envelope.is_empty() {
        return Err(extract_error(format!("{at} is an object but the world's envelope is empty: expected a bare array"), at));
    }
    let start = reader.pos;
    let first = reader.line(Some(LINE_CAP))?;
    let one_per_line = first.filter(|(s, e)| e - s <= LINE_CAP).is_some_and(|range| parse_loads(reader.text(range)).is_ok());
    reader.pos = start;
    if one_per_line {
        return lines(reader, at, &mut |response| objects(dig(&response, envelope), out));
    }
    // One pretty-printed response: a single page, read whole.
    let response = reader.value(at)?.value;
    objects(dig(&response, envelope), out)
}

fn session_export(reader: &mut Reader<'_>, at: &str, envelope: &str, out: &mut dyn FnMut(&Map) -> Result<()>) -> Result<()> {
    lines(reader, at, &mut |record| {
        let Value::Object(record) = &record else { return Ok(()) };
        if record.get("kind").and_then(Value::as_str) != Some("call") || record.get("error").is_some_and(|e| !matches!(e, Value::Null)) {
            return Ok(());
        }
        let result = record.get("result");
        let rows = if envelope.is_empty() { result } else { result.and_then(|r| dig(r, envelope)) };
        objects(rows, out)
    })
}

fn named(key: &str, here: &str, names: &BTreeSet<String>) -> bool {
    names.contains(key) || names.contains(here)
}

fn hashed(slug: &str, item: &Value) -> Value {
    match item {
        Value::Array(items) => Value::Array(items.iter().map(|i| hashed(slug, i)).collect()),
        Value::Object(_) | Value::Null => item.clone(),
        other => Value::Str(format!("sha256:{}", sha256_hex(format!("{slug}:{}", python_str(other)).as_bytes()))),
    }
}

/// Python's `round(x, n)` for a float: the correctly rounded decimal, ties to even.
pub fn python_round(value: f64, digits: i64) -> f64 {
    if !value.is_finite() {
        return value;
    }
    let digits = digits.clamp(0, 300) as usize;
    format!("{value:.digits$}").parse().unwrap_or(value)
}

/// Hash, drop or round the named fields; everything else is untouched. A bare
/// name applies at any depth, a dotted path at that place only (`*` = a list item).
pub fn redact(value: &Value, policy: &Redaction, path: &str) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::default();
            for (key, item) in map {
                let here = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                if named(key, &here, &policy.drop) {
                    continue;
                }
                let redacted = if named(key, &here, &policy.hash) && !matches!(item, Value::Null) {
                    hashed(&policy.slug, item)
                } else if let (Some(digits), Value::Float(f)) = (policy.round.get(key), item) {
                    Value::Float(python_round(*f, *digits))
                } else if let (Some(_), Value::Int(_)) = (policy.round.get(key), item) {
                    item.clone()
                } else {
                    redact(item, policy, &here)
                };
                out.insert(key.clone(), redacted);
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let here = if path.is_empty() { "*".to_string() } else { format!("{path}.*") };
            Value::Array(items.iter().map(|item| redact(item, policy, &here)).collect())
        }
        other => other.clone(),
    }
}

/// Run one adapter over `source`, write tagged JSONL to `out`, return the summary.
/// `policy` is asked for once the shape, merge, contract and entity have passed.
pub fn extract(
    world: &Path,
    source: &str,
    shape: Shape,
    entity: &str,
    merge: Merge,
    policy: &dyn Fn() -> Result<Policy>,
    out: &mut dyn Write,
) -> Result<Summary> {
    let contract = build(world)?;
    let Some(declared) = contract.entity(entity) else {
        let names: Vec<&str> = contract.entities.iter().map(|e| e.name.as_str()).collect();
        return Err(ContractError::new(
            "entity",
            format!("Unknown entity {entity}; the world has {}", names.join(", ")),
            format!("/{entity}"),
        )
        .into());
    };
    let keys = declared.primary_key.clone();
    let declared_fields: BTreeSet<String> =
        declared.schema.get("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect()).unwrap_or_default();
    let Policy { envelope, redaction } = policy()?;
    let mut summary = Summary::default();
    let mut held: IndexMap<String, Map> = IndexMap::new();
    let key_options = DumpOptions { sort_keys: true, ensure_ascii: true, indent: None, compact: true };
    let stream = match open_source(source, None) {
        Ok(stream) => stream,
        Err(Error::Contract(_)) if source != "-" => {
            return Err(Error::io(std::io::Error::from(std::io::ErrorKind::NotFound), Path::new(source)));
        }
        Err(other) => return Err(other),
    };
    let mut reader = Reader::new(stream, source);
    let mut take = |raw: &Map| -> Result<()> {
        summary.read += 1;
        let mut row = Map::default();
        for (name, value) in raw {
            if matches!(value, Value::Null) || matches!(value, Value::Str(s) if s.is_empty()) {
                continue;
            }
            if !declared_fields.contains(name) {
                *summary.unknown.entry(name.clone()).or_insert(0) += 1;
                continue;
            }
            row.insert(name.clone(), value.clone());
        }
        if !keys.iter().all(|k| row.contains_key(k)) {
            return Ok(());
        }
        let key = dumps(&Value::Array(keys.iter().map(|k| row[k].clone()).collect()), key_options);
        match held.get_mut(&key) {
            Some(slot) if merge == Merge::Upsert => *slot = row,
            Some(first) => {
                for (name, value) in row {
                    first.entry(name).or_insert(value);
                }
            }
            None => {
                held.insert(key, row);
            }
        }
        Ok(())
    };
    match shape {
        Shape::ToolResults => tool_results(&mut reader, source, &keys, &mut take)?,
        Shape::VendorEnvelope => vendor_envelope(&mut reader, source, &envelope, &mut take)?,
        Shape::SessionExport => session_export(&mut reader, source, &envelope, &mut take)?,
    }
    for (_, row) in held {
        let mut row = Value::Object(row);
        if let Some(policy) = &redaction {
            let redacted = redact(&row, policy, "");
            let (before, after) = (row.as_object().expect("object"), redacted.as_object().expect("object"));
            for (name, value) in before {
                if !after.contains_key(name) {
                    summary.dropped += 1;
                } else if policy.hash.contains(name) && !matches!(value, Value::Null) {
                    summary.hashed += 1;
                }
            }
            row = redacted;
        }
        if crate::check::has_non_finite(&row) {
            return Err(plain("Out of range float values are not JSON compliant"));
        }
        let line = object([("entity", Value::str(entity)), ("row", row)]);
        writeln!(out, "{}", dumps(&line, crate::check::ROW_LINE)).map_err(|e| plain(e.to_string()))?;
        summary.rows += 1;
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_hashes_drops_and_rounds() {
        let policy = Redaction {
            slug: "chat".into(),
            hash: ["email".to_string(), "tags".to_string()].into(),
            drop: ["profile.team".to_string()].into(),
            round: [("age".to_string(), 0)].into(),
        };
        let row =
            crate::json::parse(r#"{"id": "U1", "email": "a@b", "tags": ["x", ["y"]], "profile": {"team": "t"}, "age": 36.6, "n": 3}"#)
                .unwrap()
                .value;
        let out = redact(&row, &policy, "");
        assert_eq!(out.get("profile").and_then(Value::as_object).map(Map::len), Some(0));
        assert_eq!(crate::json::canonical(out.get("age").unwrap()), "37.0");
        let email = out.get("email").and_then(Value::as_str).unwrap();
        assert_eq!(email, format!("sha256:{}", sha256_hex(b"chat:a@b")));
        assert!(out.get("tags").and_then(Value::as_array).unwrap()[1].as_array().is_some());
    }

    #[test]
    fn python_rounding() {
        for (x, n, want) in [(2.5, 0, 2.0), (0.125, 2, 0.12), (2.675, 2, 2.67), (36.6, 0, 37.0), (-2.5, 0, -2.0)] {
            assert_eq!(python_round(x, n), want);
        }
    }
}

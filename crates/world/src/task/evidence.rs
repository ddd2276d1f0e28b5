//! A check's report (beyond the original): what it asked, what it saw, and the
//! rows it saw — so a failed grade says "expected status eq "solved", saw 101 status
//! "open"" instead of a bare 0.
//!
//! Reports are bounded whatever the state holds: at most [`EVIDENCE_ROWS`] rows are
//! listed (`rowCount` says how many there were) and long values are clipped.

use super::spec::{Assertion, Check, FieldTest, Tolerance};
use crate::json::{dumps, DumpOptions, Map, Value};
use std::borrow::Cow;

/// Most rows a check's report lists.
pub const EVIDENCE_ROWS: usize = 20;
/// Longest value text (in characters) a report's sentences quote.
const VALUE_CHARS: usize = 120;
/// Largest row (in bytes of JSON) a report lists whole; a larger one is listed by key.
const ROW_BYTES: usize = 2048;

/// What one check saw: the rows its `where` selected (each with what names it) and,
/// for a field test, whether each held.
pub(super) struct Seen<'a> {
    pub(super) passed: bool,
    pub(super) selected: Vec<(Cow<'a, str>, &'a Map)>,
    pub(super) held: Vec<bool>,
    pub(super) tolerance: Tolerance,
}

/// The value at a dotted path through nested objects, if every step exists.
pub(super) fn lookup<'a>(row: &'a Map, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut current = row.get(parts.next()?)?;
    for part in parts {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

/// A value as the sentences quote it: compact JSON, clipped.
fn quoted(value: &Value) -> String {
    let text = dumps(value, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false });
    clip(&text)
}

fn clip(text: &str) -> String {
    if text.chars().count() <= VALUE_CHARS {
        return text.to_string();
    }
    text.chars().take(VALUE_CHARS).collect::<String>() + "…"
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// `tickets row where {"id": 101}` (`rows` when `many`), or `tickets row` without a where.
fn selection(check: &Check, many: bool) -> String {
    let noun = if many { "rows" } else { "row" };
    match &check.where_ {
        Some(where_) => format!("{} {noun} where {}", check.entity, quoted(&Value::Object(where_.clone()))),
        None => format!("{} {noun}", check.entity),
    }
}

/// ` (tolerance: numeric 0.01, case-insensitive, trimmed)`, or nothing when exact.
fn tolerance_note(tolerance: &Tolerance) -> String {
    let mut parts = Vec::new();
    if let Some(numeric) = tolerance.numeric.filter(|n| *n > 0.0) {
        parts.push(format!("numeric {numeric}"));
    }
    if tolerance.case_insensitive == Some(true) {
        parts.push("case-insensitive".to_string());
    }
    if tolerance.trim == Some(true) {
        parts.push("trimmed".to_string());
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" (tolerance: {})", parts.join(", "))
    }
}

/// `status eq "solved"`.
fn test_text(test: &FieldTest) -> String {
    format!("{} {} {}", test.field, test.op.as_str(), quoted(&test.value))
}

/// `101 status "open"`, or `101 status missing`.
fn field_seen(key: &str, row: &Map, field: &str) -> String {
    match lookup(row, field) {
        Some(value) => format!("{key} {field} {}", quoted(value)),
        None => format!("{key} {field} missing"),
    }
}

/// The keys of rows, as a report's sentence lists them (at most [`EVIDENCE_ROWS`]).
fn keys_text(rows: &[&(Cow<'_, str>, &Map)]) -> String {
    let mut keys: Vec<String> = rows.iter().take(EVIDENCE_ROWS).map(|(key, _)| quoted(&Value::str(key.as_ref()))).collect();
    if rows.len() > EVIDENCE_ROWS {
        keys.push(format!("… {} more", rows.len() - EVIDENCE_ROWS));
    }
    format!("[{}]", keys.join(", "))
}

/// A listed row: its key, and for a field test the field's value (or `missing`),
/// else the row itself when it is small.
fn row_item(key: &str, row: &Map, test: Option<&FieldTest>) -> Value {
    let mut item = Map::default();
    item.insert("key".into(), Value::str(key));
    match test {
        Some(test) => {
            item.insert("field".into(), Value::str(&test.field));
            match lookup(row, &test.field) {
                Some(value) => item.insert("value".into(), value.clone()),
                None => item.insert("missing".into(), Value::Bool(true)),
            };
        }
        None => {
            let whole = Value::Object(row.clone());
            if dumps(&whole, DumpOptions::CANONICAL).len() <= ROW_BYTES {
                item.insert("row".into(), whole);
            }
        }
    }
    Value::Object(item)
}

/// The report of check `index`: `{id, passed, description, expected, actual, rows,
/// rowCount}` (`rowsTruncated` when more rows were seen than listed).
pub(super) fn report(check: &Check, index: usize, seen: &Seen<'_>) -> Value {
    let rows: Vec<&(Cow<'_, str>, &Map)> = seen.selected.iter().collect();
    let n = rows.len();
    let note = tolerance_note(&seen.tolerance);
    let (description, expected, actual, listed, test) = match &check.assertion {
        Assertion::Exists => (
            format!("a {} exists", selection(check, false)),
            "at least 1 row".to_string(),
            if n == 0 { "0 rows".to_string() } else { format!("{}: keys {}", plural(n, "row"), keys_text(&rows)) },
            rows,
            None,
        ),
        Assertion::Absent => (
            format!("no {} exists", selection(check, false)),
            "0 rows".to_string(),
            if n == 0 { "0 rows".to_string() } else { format!("{}: keys {}", plural(n, "row"), keys_text(&rows)) },
            rows,
            None,
        ),
        Assertion::Count(bounds) => {
            let wanted = bounds.iter().map(|(bound, value)| format!("{} {value}", bound.as_str())).collect::<Vec<_>>().join(", ");
            let actual = if n == 0 { "0 rows".to_string() } else { format!("{}: keys {}", plural(n, "row"), keys_text(&rows)) };
            (format!("the number of {} is {wanted}", selection(check, true)), format!("{wanted} rows"), actual, rows, None)
        }
        Assertion::All(test) | Assertion::Any(test) => {
            let all = matches!(check.assertion, Assertion::All(_));
            let failing: Vec<&(Cow<'_, str>, &Map)> =
                seen.selected.iter().zip(&seen.held).filter(|(_, held)| !**held).map(|(row, _)| row).collect();
            let holding: Vec<&(Cow<'_, str>, &Map)> =
                seen.selected.iter().zip(&seen.held).filter(|(_, held)| **held).map(|(row, _)| row).collect();
            let values = |rows: &[&(Cow<'_, str>, &Map)]| {
                let mut said: Vec<String> = rows.iter().take(EVIDENCE_ROWS).map(|(key, row)| field_seen(key, row, &test.field)).collect();
                if rows.len() > EVIDENCE_ROWS {
                    said.push(format!("… {} more", rows.len() - EVIDENCE_ROWS));
                }
                said.join(", ")
            };
            let (description, actual, listed) = if all {
                let description = format!("every {} has {} (and there is one)", selection(check, false), test_text(test));
                match (n, failing.len()) {
                    (0, _) => (description, "no row matched".to_string(), Vec::new()),
                    (_, 0) => (description, format!("all {} held", plural(n, "row")), holding),
                    (_, bad) => (description, format!("{bad} of {} failed: {}", plural(n, "row"), values(&failing)), failing),
                }
            } else {
                let description = format!("some {} has {}", selection(check, false), test_text(test));
                match (n, holding.len()) {
                    (0, _) => (description, "no row matched".to_string(), Vec::new()),
                    (_, 0) => (description, format!("none of {} held: {}", plural(n, "row"), values(&failing)), failing),
                    (_, good) => (description, format!("{good} of {} held: {}", plural(n, "row"), values(&holding)), holding),
                }
            };
            (description, test_text(test), actual, listed, Some(test))
        }
    };
    let mut out = Map::default();
    out.insert("id".into(), Value::Str(check.key(index)));
    out.insert("passed".into(), Value::Bool(seen.passed));
    out.insert("description".into(), Value::Str(format!("{description}{note}")));
    out.insert("expected".into(), Value::Str(expected));
    out.insert("actual".into(), Value::Str(actual));
    let items: Vec<Value> = listed.iter().take(EVIDENCE_ROWS).map(|(key, row)| row_item(key, row, test)).collect();
    out.insert("rows".into(), Value::Array(items));
    out.insert("rowCount".into(), Value::Int(listed.len() as i64));
    if listed.len() > EVIDENCE_ROWS {
        out.insert("rowsTruncated".into(), Value::Bool(true));
    }
    Value::Object(out)
}

/// The report of `count` check `index` judged on a count the caller made (from a
/// serving index): the count is what it saw; no row was read, so none is listed.
pub(super) fn count_report(check: &Check, index: usize, n: i64, passed: bool) -> Value {
    let Assertion::Count(bounds) = &check.assertion else { unreachable!("count_report of a count check") };
    let wanted = bounds.iter().map(|(bound, value)| format!("{} {value}", bound.as_str())).collect::<Vec<_>>().join(", ");
    let mut out = Map::default();
    out.insert("id".into(), Value::Str(check.key(index)));
    out.insert("passed".into(), Value::Bool(passed));
    out.insert("description".into(), Value::Str(format!("the number of {} is {wanted}", selection(check, true))));
    out.insert("expected".into(), Value::Str(format!("{wanted} rows")));
    out.insert("actual".into(), Value::Str(format!("{} (counted by the serving index)", plural(n.max(0) as usize, "row"))));
    out.insert("rows".into(), Value::Array(Vec::new()));
    out.insert("rowCount".into(), Value::Int(n));
    if n > 0 {
        out.insert("rowsTruncated".into(), Value::Bool(true));
    }
    Value::Object(out)
}

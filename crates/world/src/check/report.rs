//! What a check answers: the refusal records (the original's `{chunk, index,
//! entity, primaryKey, field, pointer, detail}`) and the [`CheckReport`].

use super::options::{PRINT_CAP, ROW_LINE};
use crate::compiler::Contract;
use crate::error::ContractError;
use crate::json::{dumps, object, Value};

/// The outcome of a check.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Rows read.
    pub rows: usize,
    /// The first [`REPORT_CAP`](super::REPORT_CAP) refusal records.
    pub refusals: Vec<Value>,
    /// How many rows were refused.
    pub refusal_count: usize,
    /// Row counts of the scratch copy after the accepted rows (`{}` for no rows).
    pub entity_counts: Value,
}

impl CheckReport {
    /// The CLI's output object: `{world, dryRun, rows, refusalCount, refusals (first 200), entityCounts}`.
    pub fn to_json(&self, world: &str) -> Value {
        object([
            ("world", Value::str(world)),
            ("dryRun", Value::Bool(true)),
            ("rows", Value::Int(self.rows as i64)),
            ("refusalCount", Value::Int(self.refusal_count as i64)),
            ("refusals", Value::Array(self.refusals.iter().take(PRINT_CAP).cloned().collect())),
            ("entityCounts", self.entity_counts.clone()),
        ])
    }

    /// The `--report` file: JSONL records, at most `cap`, then `{"truncated": true, "total": N}`
    /// when more were given (the original hands over the records it kept).
    pub fn report_lines(&self, cap: usize) -> String {
        let mut out = String::new();
        for record in self.refusals.iter().take(cap) {
            out.push_str(&dumps(record, ROW_LINE));
            out.push('\n');
        }
        if self.refusals.len() > cap {
            let marker = object([("truncated", Value::Bool(true)), ("total", Value::Int(self.refusals.len() as i64))]);
            out.push_str(&dumps(&marker, ROW_LINE));
            out.push('\n');
        }
        out
    }
}

/// One refusal record.
pub fn refusal(
    chunk: Option<usize>,
    index: Option<usize>,
    entity: Option<&str>,
    row: Option<&Value>,
    field: Option<&str>,
    detail: &str,
    contract: Option<&Contract>,
) -> Value {
    let key = contract
        .and_then(|c| entity.and_then(|e| c.entity(e)))
        .zip(row.and_then(Value::as_object))
        .filter(|(declared, map)| declared.primary_key.iter().all(|f| map.contains_key(f)))
        .map(|(declared, map)| object(declared.primary_key.iter().map(|f| (f.clone(), map[f].clone()))))
        .unwrap_or(Value::Null);
    let mut pointer = format!("/{}", entity.unwrap_or_default());
    if let Some(index) = index {
        pointer.push_str(&format!("/{index}"));
    }
    if let Some(field) = field.filter(|f| !f.is_empty()) {
        pointer.push('/');
        pointer.push_str(field);
    }
    let int = |n: Option<usize>| n.map_or(Value::Null, |n| Value::Int(n as i64));
    object([
        ("chunk", int(chunk)),
        ("index", int(index)),
        ("entity", entity.map_or(Value::Null, Value::str)),
        ("primaryKey", key),
        ("field", field.map_or(Value::Null, Value::str)),
        ("pointer", Value::Str(pointer)),
        ("detail", Value::str(detail)),
    ])
}

/// The refused property of a validation error: its value path without the leading `/`.
pub fn field_of(error: &ContractError) -> Option<&str> {
    error.path.strip_prefix('/').filter(|rest| !rest.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_records_point_at_the_row() {
        let record = refusal(Some(0), Some(7), Some("users"), None, Some("profile/team"), "Expected string", None);
        assert_eq!(
            crate::json::dumps(&record, ROW_LINE),
            r#"{"chunk":0,"index":7,"entity":"users","primaryKey":null,"field":"profile/team","pointer":"/users/7/profile/team","detail":"Expected string"}"#
        );
        let record = refusal(None, None, None, None, None, "Persisted SQLite relationship check failed", None);
        assert_eq!(record.get("pointer").and_then(Value::as_str), Some("/"));
    }

    #[test]
    fn report_is_capped() {
        let report = CheckReport {
            rows: 3,
            refusals: (0..3).map(|i| refusal(Some(0), Some(i), Some("a"), None, None, "x", None)).collect(),
            refusal_count: 3,
            entity_counts: Value::Null,
        };
        let text = report.report_lines(2);
        assert_eq!(text.lines().count(), 3);
        assert_eq!(text.lines().last(), Some(r#"{"truncated":true,"total":3}"#));
    }
}

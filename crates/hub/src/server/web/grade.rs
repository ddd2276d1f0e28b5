//! A session's last grade, explained (beyond the original): its "Checks" — each
//! check of an assertions grader with what it expected, what it saw and the rows it
//! saw — and "What changed" — the rows added, removed and changed since the task's
//! start, changed fields shown before → after. Drawn from the grade's entry in the
//! call log (what the host answered: `checks` and `diff`), as bounded as it is.

use super::page::{json_pretty, json_text, number};
use gateway_world::json::Value;
use maud::{html, Markup};

/// Longest value text a cell shows.
const CELL_CHARS: usize = 200;

fn text_of(value: &Value, key: &str) -> String {
    match value.get(key) {
        Some(Value::Str(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => json_text(other, CELL_CHARS),
    }
}

fn count(value: &Value, key: &str) -> i64 {
    value.get("counts").and_then(|c| c.get(key)).and_then(Value::as_i64).unwrap_or(0)
}

/// "Checks": one row per check, failed ones marked, their rows folded.
fn checks(checks: &[Value]) -> Markup {
    html! {
        table {
            tr { th { "Check" } th { "Result" } th { "What it checks" } th { "Expected" } th { "Saw" } }
            @for check in checks {
                @let passed = matches!(check.get("passed"), Some(Value::Bool(true)));
                tr class=(if passed { "" } else { "removed" }) {
                    td { code { (text_of(check, "id")) } }
                    td { span class={ "pill " (if passed { "COMPLETED" } else { "FAILED" }) } { (if passed { "passed" } else { "failed" }) } }
                    td { (text_of(check, "description")) }
                    td { (text_of(check, "expected")) }
                    td {
                        (text_of(check, "actual"))
                        @if let Some(rows) = check.get("rows").and_then(Value::as_array).filter(|r| !r.is_empty()) {
                            details {
                                summary.muted { (rows.len()) " of " (text_of(check, "rowCount")) " rows seen" }
                                pre { (json_pretty(&Value::Array(rows.clone()), 4000)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One changed field: `status: "open" → "solved"`.
fn field_change(path: &str, change: &Value) -> String {
    let side = |key: &str| change.get(key).map(|v| json_text(v, CELL_CHARS)).unwrap_or_else(|| "(absent)".into());
    format!("{path}: {} → {}", side("before"), side("after"))
}

/// "What changed": per entity, its counts and the rows listed (cut as the diff was).
fn changes(diff: &Value) -> Markup {
    if let Some(error) = diff.get("error") {
        return html! { p.muted { "The diff could not be read: " (json_text(error, CELL_CHARS)) } };
    }
    let entities = diff.get("entities").and_then(Value::as_object).cloned().unwrap_or_default();
    if entities.is_empty() {
        return html! { p.muted { "Nothing changed since the task's start." } };
    }
    html! {
        p {
            (count(diff, "added")) " added, " (count(diff, "removed")) " removed, " (count(diff, "changed")) " changed"
            @if matches!(diff.get("truncated"), Some(Value::Bool(true))) { span.muted { " (not every row is listed)" } }
        }
        @for (entity, changed) in &entities {
            h3 { (entity) " " span.muted { "(" (count(changed, "added")) " added, " (count(changed, "removed")) " removed, " (count(changed, "changed")) " changed)" } }
            table {
                tr { th { "Change" } th { "Key" } th { "Fields" } }
                @for row in changed.get("changed").and_then(Value::as_array).into_iter().flatten() {
                    tr.changed {
                        td { "changed" }
                        td { code { (text_of(row, "key")) } }
                        td {
                            @for (path, change) in row.get("fields").and_then(Value::as_object).into_iter().flatten() {
                                div { code { (field_change(path, change)) } }
                            }
                        }
                    }
                }
                @for (kind, class) in [("added", "added"), ("removed", "removed")] {
                    @for row in changed.get(kind).and_then(Value::as_array).into_iter().flatten() {
                        tr class=(class) {
                            td { (kind) }
                            td { code { (text_of(row, "key")) } }
                            td { code { (row.get("row").map(|r| json_text(r, 600)).unwrap_or_default()) } }
                        }
                    }
                }
            }
        }
    }
}

/// The sections of the grade logged as `call` (its result: the host's grade).
pub(super) fn sections(call: &Value) -> Markup {
    let result = call.get("result").cloned().unwrap_or_default();
    let reward = match result.get("reward") {
        Some(Value::Float(r)) => number(*r),
        Some(Value::Int(r)) => r.to_string(),
        _ => "none".into(),
    };
    let listed = result.get("checks").and_then(Value::as_array).cloned().unwrap_or_default();
    html! {
        h2 { "Checks" }
        p.muted { "Last grade: reward " (reward) ", at " (text_of(call, "completedAt")) " (call " (text_of(call, "seq")) ")." }
        @if listed.is_empty() {
            p.muted { "This grader reports no checks (only assertions graders do)." }
        } @else {
            (checks(&listed))
        }
        h2 { "What changed" }
        @match result.get("diff") {
            Some(diff) => (changes(diff)),
            None => p.muted { "This grade carries no diff." },
        }
    }
}

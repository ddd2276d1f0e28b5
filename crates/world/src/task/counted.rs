//! Count checks answered by a store: an assertions grade in which the caller counted
//! some `count` checks' rows itself (by index, say) instead of handing them over.
//!
//! A check qualifies when its `where` is only string equalities ([`countable`]):
//! then "how many rows have exactly this string at this path" is all the check asks,
//! and a store with an index on those paths answers it without decoding a row.

use super::assertions::{count_holds, effective_tolerance, evaluate_with_counts};
use super::spec::{Assertion, Check, Tolerance};
use crate::json::Value;
use std::collections::BTreeMap;

/// The `where` of a `count` check as `(dotted path, string)` equalities, when that
/// is all it holds and the check compares exactly (a declared tolerance that loosens
/// strings — case, whitespace — is not what an index of exact values answers); None
/// for any other check. `tolerance` is the grader's.
pub fn countable<'a>(check: &'a Check, tolerance: Option<&Tolerance>) -> Option<Vec<(&'a str, &'a str)>> {
    if !matches!(check.assertion, Assertion::Count(_)) || effective_tolerance(check, tolerance).loosens() {
        return None;
    }
    check.where_.as_ref()?.iter().map(|(path, wanted)| wanted.as_str().map(|text| (path.as_str(), text))).collect()
}

/// Whether `n` rows pass `check` (a `count` check; any other is not judged by a
/// count). A caller counts by index and hands over only the counts that pass: a
/// failing check's rows are read so that its report names them.
pub fn count_passes(check: &Check, n: i64) -> bool {
    matches!(&check.assertion, Assertion::Count(bounds) if count_holds(bounds, n))
}

/// [`evaluate_assertions_with`](super::evaluate_assertions_with) with the checks at the
/// positions `counted` names judged on those counts instead of on `state`'s rows
/// (which need not hold them): the same `reward` and `rewards`; their reports under
/// `checks` give the count and list no rows.
pub fn evaluate_assertions_counted(
    checks: &[Check],
    tolerance: Option<&Tolerance>,
    state: &Value,
    counted: &BTreeMap<usize, i64>,
) -> Value {
    evaluate_with_counts(checks, tolerance, state, counted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{evaluate_assertions, Grader, TaskSpec};

    fn value(text: &str) -> Value {
        crate::json::parse(text).expect("test json").value
    }

    #[test]
    fn a_count_the_caller_made_grades_as_the_rows_would() {
        let spec = TaskSpec::parse(&value(
            r#"{"instruction": "x", "grader": {"kind": "assertions", "checks": [
                {"id": "leads", "entity": "r", "where": {"kind": "lead"}, "assert": "count", "count": {"gte": 2, "lte": 2}},
                {"id": "mixed", "entity": "r", "where": {"kind": "lead", "n": 1}, "assert": "count", "count": {"eq": 1}},
                {"id": "there", "entity": "r", "where": {"kind": "vendor"}, "assert": "exists"}]}}"#,
        ))
        .unwrap();
        let Some(Grader::Assertions { checks, .. }) = &spec.grader else { panic!("assertions") };
        assert_eq!(countable(&checks[0], None), Some(vec![("kind", "lead")]));
        assert_eq!(countable(&checks[1], None), None, "a number in the where: not countable");
        assert_eq!(countable(&checks[2], None), None, "not a count");
        let state = value(r#"{"r": [{"kind": "lead", "n": 1}, {"kind": "Lead"}, {"kind": "lead"}, {"kind": "vendor"}]}"#);
        let by_rows = evaluate_assertions(checks, &state);
        let counted = BTreeMap::from([(0, 2)]);
        // The original's two members agree; the reports differ only in what they list.
        let same = |a: &Value, b: &Value| {
            ["reward", "rewards"].iter().all(|k| match (a.get(k), b.get(k)) {
                (Some(a), Some(b)) => crate::json::json_equal(a, b),
                _ => false,
            })
        };
        assert!(same(&evaluate_assertions_counted(checks, None, &state, &counted), &by_rows));
        // The count is the caller's: rows the state lacks do not change it.
        let without = value(r#"{"r": [{"kind": "lead", "n": 1}, {"kind": "vendor"}]}"#);
        assert!(same(&evaluate_assertions_counted(checks, None, &without, &counted), &by_rows));
        let wrong = evaluate_assertions_counted(checks, None, &state, &BTreeMap::from([(0, 3)]));
        assert_eq!(wrong.get("rewards").and_then(|r| r.get("leads")).and_then(Value::as_f64), Some(0.0));
        // A counted check's report names the count it saw, and lists no row.
        let report = wrong.get("checks").and_then(Value::as_array).and_then(|c| c.first()).unwrap();
        assert!(matches!(report.get("passed"), Some(Value::Bool(false))), "{report:?}");
        assert_eq!(report.get("actual").and_then(Value::as_str), Some("3 rows (counted by the serving index)"));
        assert!(matches!(report.get("rowCount"), Some(Value::Int(3))), "{report:?}");
        assert!(count_passes(&checks[0], 2) && !count_passes(&checks[0], 3) && !count_passes(&checks[2], 1));
        // A tolerance that loosens strings keeps the check off the index.
        let loose = crate::task::Tolerance { case_insensitive: Some(true), ..Default::default() };
        assert_eq!(countable(&checks[0], Some(&loose)), None);
    }
}

//! Count checks answered by a store: an assertions grade in which the caller counted
//! some `count` checks' rows itself (by index, say) instead of handing them over.
//!
//! A check qualifies when its `where` is only string equalities ([`countable`]):
//! then "how many rows have exactly this string at this path" is all the check asks,
//! and a store with an index on those paths answers it without decoding a row.

use super::assertions::evaluate_check;
use super::spec::{Assertion, Check, CountBound};
use crate::json::{Map, Value};
use std::collections::BTreeMap;

/// The `where` of a `count` check as `(dotted path, string)` equalities, when that
/// is all it holds; None for any other check.
pub fn countable(check: &Check) -> Option<Vec<(&str, &str)>> {
    if !matches!(check.assertion, Assertion::Count(_)) {
        return None;
    }
    check.where_.as_ref()?.iter().map(|(path, wanted)| wanted.as_str().map(|text| (path.as_str(), text))).collect()
}

/// [`evaluate_assertions`](super::evaluate_assertions) with the checks at the
/// positions `counted` names judged on those counts instead of on `state`'s rows
/// (which need not hold them): the same `reward` and `rewards`.
pub fn evaluate_assertions_counted(checks: &[Check], state: &Value, counted: &BTreeMap<usize, i64>) -> Value {
    let mut rewards = Map::default();
    let mut total = 0.0;
    let mut passed = 0.0;
    for (i, check) in checks.iter().enumerate() {
        let ok = match (counted.get(&i), &check.assertion) {
            (Some(n), Assertion::Count(bounds)) => bounds.iter().all(|(bound, value)| match bound {
                CountBound::Eq => n == value,
                CountBound::Gte => n >= value,
                CountBound::Lte => n <= value,
            }),
            _ => evaluate_check(check, state),
        };
        rewards.insert(check.key(i), Value::Float(if ok { 1.0 } else { 0.0 }));
        total += check.weight;
        if ok {
            passed += check.weight;
        }
    }
    let mut out = Map::default();
    out.insert("reward".into(), if total != 0.0 { Value::Float(passed / total) } else { Value::Null });
    out.insert("rewards".into(), Value::Object(rewards));
    Value::Object(out)
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
        let Some(Grader::Assertions { checks }) = &spec.grader else { panic!("assertions") };
        assert_eq!(countable(&checks[0]), Some(vec![("kind", "lead")]));
        assert_eq!(countable(&checks[1]), None, "a number in the where: not countable");
        assert_eq!(countable(&checks[2]), None, "not a count");
        let state = value(r#"{"r": [{"kind": "lead", "n": 1}, {"kind": "Lead"}, {"kind": "lead"}, {"kind": "vendor"}]}"#);
        let by_rows = evaluate_assertions(checks, &state);
        let counted = BTreeMap::from([(0, 2)]);
        let same = |a: &Value, b: &Value| crate::json::json_equal(a, b);
        assert!(same(&evaluate_assertions_counted(checks, &state, &counted), &by_rows));
        // The count is the caller's: rows the state lacks do not change it.
        let without = value(r#"{"r": [{"kind": "lead", "n": 1}, {"kind": "vendor"}]}"#);
        assert!(same(&evaluate_assertions_counted(checks, &without, &counted), &by_rows));
        let wrong = evaluate_assertions_counted(checks, &state, &BTreeMap::from([(0, 3)]));
        assert_eq!(wrong.get("rewards").and_then(|r| r.get("leads")).and_then(Value::as_f64), Some(0.0));
    }
}

//! The declarative grader: a task's assertion checks evaluated over a state dump,
//! pure computation on JSON values, each check reported with the rows and values it
//! saw (`evidence`).
//!
//! It reads nothing but the dump it is given (no store, no files) and does not
//! validate checks: they come from a parsed [`TaskSpec`](super::TaskSpec).

use super::evidence::{lookup, report, Seen};
use super::spec::{Assertion, Check, CountBound, FieldTest, Op, Tolerance};
use crate::json::{python_equal, Map, Value};
use std::borrow::Cow;
use std::cmp::Ordering;

/// The grade of an assertions grader over `state` with no grader-wide tolerance;
/// see [`evaluate_assertions_with`].
pub fn evaluate_assertions(checks: &[Check], state: &Value) -> Value {
    evaluate_assertions_with(checks, None, state)
}

/// The grade of an assertions grader over `state`: the weighted share of checks
/// passed under `reward` (null when there are no checks), each check's 1.0 or 0.0
/// under its reward key in `rewards`, in check order — the original's two members —
/// then `checks`: each check's report (`id`, `passed`, `description`, `expected`,
/// `actual`, the `rows` it saw, bounded). `tolerance` is the grader's; a check's own
/// members win over it.
///
/// `state` is `{entity: {key: row}}` (the host's dump) or `{entity: [row, …]}`;
/// rows that are not objects are ignored and a missing entity has no rows.
pub fn evaluate_assertions_with(checks: &[Check], tolerance: Option<&Tolerance>, state: &Value) -> Value {
    evaluate_with_counts(checks, tolerance, state, &std::collections::BTreeMap::new())
}

/// [`evaluate_assertions_with`], the `count` checks at the positions `counted` names
/// judged on those counts (made by the caller, from an index say) rather than on
/// `state`'s rows, which need not hold them; their reports give the count, no rows.
pub(super) fn evaluate_with_counts(
    checks: &[Check],
    tolerance: Option<&Tolerance>,
    state: &Value,
    counted: &std::collections::BTreeMap<usize, i64>,
) -> Value {
    let mut rewards = Map::default();
    let mut reports = Vec::with_capacity(checks.len());
    let mut total = 0.0;
    let mut passed = 0.0;
    for (i, check) in checks.iter().enumerate() {
        let (ok, checked) = match (counted.get(&i), &check.assertion) {
            (Some(&n), Assertion::Count(bounds)) => {
                let ok = count_holds(bounds, n);
                (ok, super::evidence::count_report(check, i, n, ok))
            }
            _ => {
                let seen = examine(check, tolerance, state);
                (seen.passed, report(check, i, &seen))
            }
        };
        rewards.insert(check.key(i), Value::Float(if ok { 1.0 } else { 0.0 }));
        total += check.weight;
        if ok {
            passed += check.weight;
        }
        reports.push(checked);
    }
    let mut out = Map::default();
    out.insert("reward".into(), if total != 0.0 { Value::Float(passed / total) } else { Value::Null });
    out.insert("rewards".into(), Value::Object(rewards));
    out.insert("checks".into(), Value::Array(reports));
    Value::Object(out)
}

/// Whether a count meets every bound of a `count` check.
pub(super) fn count_holds(bounds: &[(CountBound, i64)], n: i64) -> bool {
    bounds.iter().all(|(bound, value)| match bound {
        CountBound::Eq => n == *value,
        CountBound::Gte => n >= *value,
        CountBound::Lte => n <= *value,
    })
}

/// Whether one check holds over `state` (its own tolerance only).
pub fn evaluate_check(check: &Check, state: &Value) -> bool {
    examine(check, None, state).passed
}

/// The tolerance `check` compares with under a grader-wide `base`.
pub fn effective_tolerance(check: &Check, base: Option<&Tolerance>) -> Tolerance {
    match &check.tolerance {
        Some(own) => own.over(base),
        None => base.copied().unwrap_or_default(),
    }
}

/// One check evaluated: whether it holds, and the rows it selected with, for a
/// field test, whether each held.
fn examine<'a>(check: &Check, base: Option<&Tolerance>, state: &'a Value) -> Seen<'a> {
    let tolerance = effective_tolerance(check, base);
    let selected: Vec<(Cow<'a, str>, &Map)> =
        rows_of(state, &check.entity).filter(|(_, row)| matches_where(row, check.where_.as_ref(), &tolerance)).collect();
    let held: Vec<bool> = match &check.assertion {
        Assertion::All(test) | Assertion::Any(test) => selected.iter().map(|(_, row)| holds(row, test, &tolerance)).collect(),
        _ => Vec::new(),
    };
    let passed = match &check.assertion {
        Assertion::Exists => !selected.is_empty(),
        Assertion::Absent => selected.is_empty(),
        Assertion::Count(bounds) => count_holds(bounds, selected.len() as i64),
        Assertion::All(_) => !selected.is_empty() && held.iter().all(|h| *h),
        Assertion::Any(_) => held.iter().any(|h| *h),
    };
    Seen { passed, selected, held, tolerance }
}

/// The object rows of one entity in the dump, whichever of its two shapes it has,
/// each with what names it: its key in a keyed dump, else `#<position>`.
fn rows_of<'a>(state: &'a Value, entity: &str) -> Box<dyn Iterator<Item = (Cow<'a, str>, &'a Map)> + 'a> {
    match state.get(entity) {
        Some(Value::Object(by_key)) => {
            Box::new(by_key.iter().filter_map(|(key, row)| row.as_object().map(|row| (Cow::Borrowed(key.as_str()), row))))
        }
        Some(Value::Array(rows)) => {
            Box::new(rows.iter().enumerate().filter_map(|(i, row)| row.as_object().map(|row| (Cow::Owned(format!("#{i}")), row))))
        }
        _ => Box::new(std::iter::empty()),
    }
}

fn matches_where(row: &Map, where_: Option<&Map>, tolerance: &Tolerance) -> bool {
    where_.is_none_or(|conditions| {
        conditions.iter().all(|(path, expected)| lookup(row, path).is_some_and(|actual| same(actual, expected, tolerance)))
    })
}

/// A string as the tolerance reads it: trimmed and lower-cased when declared.
fn loosened<'a>(text: &'a str, tolerance: &Tolerance) -> Cow<'a, str> {
    let text = if tolerance.trim == Some(true) { text.trim() } else { text };
    if tolerance.case_insensitive == Some(true) {
        Cow::Owned(text.to_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// A number as a float, never a bool.
fn numeric(value: &Value) -> Option<f64> {
    match value {
        Value::Int(n) => Some(*n as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// JSON equality: a bool equals only the same bool (`true` is not `1`), numbers
/// compare by exact value (`1 == 1.0`) or within a declared numeric tolerance,
/// strings exactly or as the tolerance loosens them, null equals only null.
fn same(actual: &Value, expected: &Value, tolerance: &Tolerance) -> bool {
    match (actual, expected) {
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Bool(_), _) | (_, Value::Bool(_)) => false,
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => order(actual, expected, tolerance) == Some(Ordering::Equal),
        (Value::Str(a), Value::Str(b)) if tolerance.loosens() => loosened(a, tolerance) == loosened(b, tolerance),
        // Containers only meet containers here when a caller built such checks by
        // hand; Python's `==` then compares them element-wise.
        _ => python_equal(actual, expected),
    }
}

/// Python's exact ordering of an int and a float (None when the float is NaN).
fn int_float(i: i64, f: f64) -> Option<Ordering> {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() {
        return None;
    }
    if f >= TWO_63 {
        return Some(Ordering::Less);
    }
    if f < -TWO_63 {
        return Some(Ordering::Greater);
    }
    let whole = f.trunc();
    // |whole| < 2^63 and integral: the cast is exact.
    Some(i.cmp(&(whole as i64)).then_with(|| 0.0_f64.partial_cmp(&(f - whole)).unwrap_or(Ordering::Equal)))
}

/// How two values order, when the original compares them at all: both numbers
/// (never bools) or both strings (by code point). Numbers within a declared
/// numeric tolerance are equal; strings compare as the tolerance loosens them.
fn order(actual: &Value, expected: &Value, tolerance: &Tolerance) -> Option<Ordering> {
    if let (Some(limit), Some(a), Some(b)) = (tolerance.numeric.filter(|n| *n > 0.0), numeric(actual), numeric(expected)) {
        if (a - b).abs() <= limit {
            return Some(Ordering::Equal);
        }
    }
    match (actual, expected) {
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        (Value::Int(i), Value::Float(f)) => int_float(*i, *f),
        (Value::Float(f), Value::Int(i)) => int_float(*i, *f).map(Ordering::reverse),
        (Value::Float(a), Value::Float(b)) => a.partial_cmp(b),
        // UTF-8 byte order is code point order.
        (Value::Str(a), Value::Str(b)) => Some(loosened(a, tolerance).as_ref().cmp(loosened(b, tolerance).as_ref())),
        _ => None,
    }
}

/// Whether a field test holds for one row.
fn holds(row: &Map, test: &FieldTest, tolerance: &Tolerance) -> bool {
    let found = lookup(row, &test.field);
    let expected = &test.value;
    match test.op {
        Op::Eq => found.is_some_and(|actual| same(actual, expected, tolerance)),
        Op::Neq => found.is_none_or(|actual| !same(actual, expected, tolerance)),
        Op::In => found
            .is_some_and(|actual| expected.as_array().is_some_and(|options| options.iter().any(|option| same(actual, option, tolerance)))),
        Op::Contains => match found {
            Some(Value::Str(text)) => {
                expected.as_str().is_some_and(|needle| loosened(text, tolerance).contains(loosened(needle, tolerance).as_ref()))
            }
            Some(Value::Array(items)) => items.iter().any(|item| same(item, expected, tolerance)),
            _ => false,
        },
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => {
            let Some(ordering) = found.and_then(|actual| order(actual, expected, tolerance)) else { return false };
            match test.op {
                Op::Gt => ordering == Ordering::Greater,
                Op::Gte => ordering != Ordering::Less,
                Op::Lt => ordering == Ordering::Less,
                _ => ordering != Ordering::Greater,
            }
        }
    }
}

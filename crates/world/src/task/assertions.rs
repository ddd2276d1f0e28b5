//! The declarative grader: a task's assertion checks evaluated over a state dump,
//! pure computation on JSON values.
//!
//! It reads nothing but the dump it is given (no store, no files) and does not
//! validate checks: they come from a parsed [`TaskSpec`](super::TaskSpec).

use super::spec::{Assertion, Check, CountBound, FieldTest, Op};
use crate::json::{python_equal, Map, Value};
use std::cmp::Ordering;

/// The grade of an assertions grader over `state`: the weighted share of checks
/// passed under `reward` (null when there are no checks) and each check's 1.0 or
/// 0.0 under its reward key in `rewards`, in check order.
///
/// `state` is `{entity: {key: row}}` (the host's dump) or `{entity: [row, …]}`;
/// rows that are not objects are ignored and a missing entity has no rows.
pub fn evaluate_assertions(checks: &[Check], state: &Value) -> Value {
    let mut rewards = Map::default();
    let mut total = 0.0;
    let mut passed = 0.0;
    for (i, check) in checks.iter().enumerate() {
        let ok = evaluate_check(check, state);
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

/// Whether one check holds over `state`.
pub fn evaluate_check(check: &Check, state: &Value) -> bool {
    let selected: Vec<&Map> = rows_of(state, &check.entity).filter(|row| matches_where(row, check.where_.as_ref())).collect();
    match &check.assertion {
        Assertion::Exists => !selected.is_empty(),
        Assertion::Absent => selected.is_empty(),
        Assertion::Count(bounds) => {
            let n = selected.len() as i64;
            bounds.iter().all(|(bound, value)| match bound {
                CountBound::Eq => n == *value,
                CountBound::Gte => n >= *value,
                CountBound::Lte => n <= *value,
            })
        }
        Assertion::All(test) => !selected.is_empty() && selected.iter().all(|row| holds(row, test)),
        Assertion::Any(test) => selected.iter().any(|row| holds(row, test)),
    }
}

/// The object rows of one entity in the dump, whichever of its two shapes it has.
fn rows_of<'a>(state: &'a Value, entity: &str) -> Box<dyn Iterator<Item = &'a Map> + 'a> {
    match state.get(entity) {
        Some(Value::Object(by_key)) => Box::new(by_key.values().filter_map(Value::as_object)),
        Some(Value::Array(rows)) => Box::new(rows.iter().filter_map(Value::as_object)),
        _ => Box::new(std::iter::empty()),
    }
}

/// The value at a dotted path through nested objects, if every step exists.
fn lookup<'a>(row: &'a Map, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut current = row.get(parts.next()?)?;
    for part in parts {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

fn matches_where(row: &Map, where_: Option<&Map>) -> bool {
    where_.is_none_or(|conditions| conditions.iter().all(|(path, expected)| lookup(row, path).is_some_and(|actual| same(actual, expected))))
}

/// JSON equality: a bool equals only the same bool (`true` is not `1`), numbers
/// compare by exact value (`1 == 1.0`), null equals only null.
fn same(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Bool(_), _) | (_, Value::Bool(_)) => false,
        (Value::Int(a), Value::Int(b)) => a == b,
        (Value::Int(i), Value::Float(f)) | (Value::Float(f), Value::Int(i)) => int_float(*i, *f) == Some(Ordering::Equal),
        (Value::Float(a), Value::Float(b)) => a == b,
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
/// (never bools) or both strings (by code point).
fn order(actual: &Value, expected: &Value) -> Option<Ordering> {
    match (actual, expected) {
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        (Value::Int(i), Value::Float(f)) => int_float(*i, *f),
        (Value::Float(f), Value::Int(i)) => int_float(*i, *f).map(Ordering::reverse),
        (Value::Float(a), Value::Float(b)) => a.partial_cmp(b),
        // UTF-8 byte order is code point order.
        (Value::Str(a), Value::Str(b)) => Some(a.as_str().cmp(b.as_str())),
        _ => None,
    }
}

/// Whether a field test holds for one row.
fn holds(row: &Map, test: &FieldTest) -> bool {
    let found = lookup(row, &test.field);
    let expected = &test.value;
    match test.op {
        Op::Eq => found.is_some_and(|actual| same(actual, expected)),
        Op::Neq => found.is_none_or(|actual| !same(actual, expected)),
        Op::In => found.is_some_and(|actual| expected.as_array().is_some_and(|options| options.iter().any(|option| same(actual, option)))),
        Op::Contains => match found {
            Some(Value::Str(text)) => expected.as_str().is_some_and(|needle| text.contains(needle)),
            Some(Value::Array(items)) => items.iter().any(|item| same(item, expected)),
            _ => false,
        },
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => {
            let Some(ordering) = found.and_then(|actual| order(actual, expected)) else { return false };
            match test.op {
                Op::Gt => ordering == Ordering::Greater,
                Op::Gte => ordering != Ordering::Less,
                Op::Lt => ordering == Ordering::Less,
                _ => ordering != Ordering::Greater,
            }
        }
    }
}

//! An assertions grade of a live session, reading only what its checks need: a
//! `count` check whose `where` is string equalities on indexed paths is counted by
//! the serving indexes (`WorldState::count_equal`: no row read or decoded); every
//! other check gets the rows that may pass its `where`, and the grader re-applies
//! every `where` exactly.

use crate::error::HostError;
use crate::session::Session;
use gateway_world::json::{Map, Value};
use gateway_world::task::{countable, evaluate_assertions_counted, Check};
use std::collections::BTreeMap;

/// The grade of `checks` over the session's state now.
pub(super) fn assertions(session: &Session, checks: &[Check]) -> Result<Value, HostError> {
    let state = &session.app.state;
    let mut counted = BTreeMap::new();
    for (i, check) in checks.iter().enumerate() {
        if let Some(conditions) = countable(check) {
            if let Some(n) = state.count_equal(&check.entity, &conditions)? {
                counted.insert(i, n);
            }
        }
    }
    let rows = assertion_state(session, checks, &counted)?;
    Ok(evaluate_assertions_counted(checks, &rows, &counted))
}

/// What the checks not `counted` read, and only that: for each entity they name, the
/// rows that may pass some check's `where` (`{entity: [row, …]}`, a shape the grader
/// takes). A check without a `where` reads the whole entity. The grader re-applies
/// every `where` exactly, so rows read for one check do not change another's result.
fn assertion_state(session: &Session, checks: &[Check], counted: &BTreeMap<usize, i64>) -> Result<Value, HostError> {
    let state = &session.app.state;
    let mut by_entity: BTreeMap<&str, BTreeMap<String, Value>> = BTreeMap::new();
    let everything = Map::default();
    for (i, check) in checks.iter().enumerate() {
        if counted.contains_key(&i) || state.contract().entity(&check.entity).is_none() {
            continue;
        }
        let rows = by_entity.entry(check.entity.as_str()).or_default();
        for (key, row) in state.rows_maybe_equal(&check.entity, check.where_.as_ref().unwrap_or(&everything))? {
            rows.entry(key).or_insert(row);
        }
    }
    let dump: Map = by_entity.into_iter().map(|(entity, rows)| (entity.to_string(), Value::Array(rows.into_values().collect()))).collect();
    Ok(Value::Object(dump))
}

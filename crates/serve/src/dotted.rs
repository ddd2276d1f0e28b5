//! Dotted paths through a row's objects (`owner.login`), read and written as the
//! original's `_dig` and `_set` do: what filters, sorts, templates, shaped answers
//! and bound bodies all go through.

use gateway_world::json::{Map, Value};

/// The original's `_dig`: a dotted path through objects.
pub fn dig<'a>(row: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = row;
    for part in path.split('.') {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

/// The original's `_set`: assign a dotted target, keeping siblings of nested objects.
/// Set a dotted field of a row (`owner.login`), making the objects on the way;
/// `current` (an update's row) supplies what an object it makes already held.
pub(crate) fn set_dotted(row: &mut Map, target: &str, value: Value, current: Option<&Value>) {
    let parts: Vec<&str> = target.split('.').collect();
    if parts.len() == 1 {
        row.insert(target.to_string(), value);
        return;
    }
    let head = parts[0];
    if !row.contains_key(head) {
        let base =
            current.and_then(|c| c.get(head)).filter(|b| b.as_object().is_some()).cloned().unwrap_or_else(|| Value::Object(Map::default()));
        row.insert(head.to_string(), base);
    }
    let mut node = row.get_mut(head).expect("inserted");
    for part in &parts[1..parts.len() - 1] {
        let Value::Object(map) = node else { return };
        if !matches!(map.get(*part), Some(Value::Object(_))) {
            map.insert(part.to_string(), Value::Object(Map::default()));
        }
        node = map.get_mut(*part).expect("inserted");
    }
    if let Value::Object(map) = node {
        map.insert(parts[parts.len() - 1].to_string(), value);
    }
}

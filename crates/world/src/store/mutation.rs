//! What the apply checks and records of a mutation, apart from the store that runs
//! it: its provenance (`check_source`), its row's stored key (`key_of`), a batch's id
//! and streamed digest, and a refused write's error in the original's words. A leaf
//! of `store`: the apply, the audits and the prepared insert all name it.

use crate::compiler::Entity;
use crate::dialect::{members, nonempty, validate};
use crate::error::{fail, ContractError, Error};
use crate::json::{canonical, Map, Spread, Value};
use gateway_common::random::fill_random;
use std::borrow::Cow;

/// Validate a mutation's `source` provenance record.
pub fn check_source(source: Option<&Value>, location: &str) -> Result<(), ContractError> {
    let source = source.unwrap_or(&Value::Null);
    members(source, &["record", "evidence"], &["record"], location)?;
    nonempty(source.get("record"), &format!("{location}/record"))?;
    let evidence = match source.get("evidence") {
        None => return Ok(()),
        Some(Value::Array(items)) => items,
        Some(_) => return fail("provenance", "evidence must be an array of stable reference/digest pairs", location),
    };
    for (index, entry) in evidence.iter().enumerate() {
        members(entry, &["reference", "digest"], &["reference", "digest"], &format!("{location}/evidence/{index}"))?;
        nonempty(entry.get("reference"), location)?;
        let ok = entry
            .get("digest")
            .and_then(Value::as_str)
            .is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        if !ok {
            return fail("provenance", "Evidence digest must be lowercase SHA-256 hex", location);
        }
    }
    Ok(())
}

/// A stored payload or key as a value (None: not JSON).
pub(super) fn parse_stored(text: &str) -> Option<Value> {
    crate::json::parse_clean(text)
}

/// The canonical `_key` for `value` under `entity`'s primary key.
pub fn key_of(entity: &Entity, value: &Value, exact: bool) -> Result<String, ContractError> {
    let map = key_fields_of(entity, value, exact)?;
    let no_schema = Value::default();
    for field in &entity.primary_key {
        let property = entity.property(field).unwrap_or(&no_schema);
        validate(property, &map[field], &format!("{}/schema/properties/{field}", entity.location), "")?;
    }
    Ok(row_key(entity, map))
}

/// [`key_of`] a row its entity's schema accepts (so its key fields need no check
/// of their own).
pub(super) fn key_of_accepted(entity: &Entity, row: &Value) -> Result<String, ContractError> {
    key_fields_of(entity, row, false).map(|map| row_key(entity, map))
}

/// `value` as an object holding every primary-key field (and, `exact`, nothing else).
fn key_fields_of<'v>(entity: &Entity, value: &'v Value, exact: bool) -> Result<&'v Map, ContractError> {
    let supply =
        || ContractError::new("key", "Supply exactly the declared primary-key fields", "").with("entity", Value::str(&entity.name));
    let map = value.as_object().ok_or_else(supply)?;
    if entity.primary_key.iter().any(|f| !map.contains_key(f)) || (exact && map.len() != entity.primary_key.len()) {
        return Err(supply());
    }
    Ok(map)
}

/// The store's `_key` of a row that passed its schema (so the key fields are valid):
/// the canonical array of the key values, integral floats as integers.
pub fn row_key(entity: &Entity, row: &Map) -> String {
    let mut key = String::from("[");
    for (i, field) in entity.primary_key.iter().enumerate() {
        if i > 0 {
            key.push(',');
        }
        match &row[field] {
            Value::Float(f) => key.push_str(&(*f as i64).to_string()),
            other => key.push_str(&canonical(other)),
        }
    }
    key.push(']');
    key
}

/// A per-process stamp that only grows: microseconds since the epoch, or one more
/// than the last one drawn. Ids led by it sort in the order they were drawn.
pub fn ordered_stamp() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0);
    match LAST.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some(now.max(last + 1))) {
        Ok(last) | Err(last) => now.max(last + 1),
    }
}

/// The id of a single-row write's batch: 32 hex digits like `uuid4().hex`, but
/// ordered — 16 from [`ordered_stamp`], 16 random. The ledger and lineage tables are
/// keyed by batch id, so ordered ids append to their indexes instead of touching
/// a random page of each per write.
pub fn ordered_batch_id() -> String {
    // The stamp's 16 hex digits then 16 random ones.
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&ordered_stamp().to_be_bytes());
    fill_random(&mut bytes[8..]);
    hex::encode(bytes)
}

/// A fresh random batch id (32 lowercase hex digits, like Python's `uuid4().hex`).
pub fn new_batch_id() -> String {
    let mut bytes = [0u8; 16];
    fill_random(&mut bytes);
    hex::encode(bytes)
}

/// An integer as Python's `int` test sees it (booleans are integers).
pub(super) fn integer_of(value: Option<&Value>) -> Option<i64> {
    match value {
        Some(Value::Int(n)) => Some(*n),
        Some(Value::Bool(b)) => Some(i64::from(*b)),
        _ => None,
    }
}

/// A batch's mutations in order: its own, or read one at a time from its file's text.
pub(super) fn each_mutation<'b>(mutations: &'b [Value], spread: Option<&Spread<'b>>) -> Box<dyn Iterator<Item = Cow<'b, Value>> + 'b> {
    match spread.filter(|s| s.is_spread()) {
        // The text was accepted whole when read: an item of it parses.
        Some(spread) => Box::new(spread.items().map(|item| Cow::Owned(item.expect("accepted JSON text")))),
        None => Box::new(mutations.iter().map(Cow::Borrowed)),
    }
}

/// `sha256(encoded(batch))` with the batch's mutations streamed (the original's batch
/// digest), never encoded whole.
pub(super) fn batch_digest<'b>(head: &Map, mutations: impl Iterator<Item = Cow<'b, Value>>) -> String {
    crate::hash::digest_of_pieces(|sink| {
        crate::json::dumps_with_items(head, "mutations", mutations, crate::json::DumpOptions::CANONICAL, sink);
        sink("\n");
    })
}

/// A failed row write as the original says it: a taken primary or unique key is
/// `unique`, naming the entity and the key; anything else is SQLite's.
pub(super) fn write_refusal(error: rusqlite::Error, entity: &Entity, key: &str) -> Error {
    match error {
        rusqlite::Error::SqliteFailure(failure, _) if failure.code == rusqlite::ErrorCode::ConstraintViolation => {
            ContractError::new("unique", "Primary or unique key conflicts with existing state", format!("{}/unique", entity.location))
                .with("entity", Value::str(&entity.name))
                .with("key", parse_stored(key).unwrap_or_default())
                .into()
        }
        other => other.into(),
    }
}

/// A refused mutation's error with the batch, the mutation's index, entity, key and
/// (a valid one) source.
pub(super) fn contextualize_mutation(error: Error, batch: &str, index: usize, mutation: &Value) -> Error {
    let Error::Contract(mut error) = error else { return error };
    error.set("batch", Value::str(batch));
    error.set("index", Value::Int(index as i64));
    if let Some(map) = mutation.as_object() {
        error.set("entity", map.get("entity").cloned().unwrap_or_default());
        if let Some(key) = map.get("key") {
            error.set("key", key.clone());
        }
        if check_source(map.get("source"), "").is_ok() {
            error.set("source", map.get("source").cloned().unwrap_or_default());
        }
    }
    Error::Contract(error)
}

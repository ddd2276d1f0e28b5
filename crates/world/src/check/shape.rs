//! A row's shape against the contract (unknown entity, not an object, missing key
//! field, the entity's schema), the compiled validators, and the store key of a
//! row that passed.

use super::report::{field_of, refusal};
use crate::compiler::{Contract, Entity};
use crate::dialect::validate;
use crate::json::{Map, Value};
use crate::validator::Validator;

/// A row's shape against the contract; None when it conforms.
pub fn shape_refusal(contract: &Contract, chunk: usize, index: usize, entity: &str, row: &Value) -> Option<Value> {
    shape_refusal_with(contract, None, chunk, index, entity, row)
}

pub(super) fn shape_refusal_with(
    contract: &Contract,
    validators: Option<&Validators>,
    chunk: usize,
    index: usize,
    entity: &str,
    row: &Value,
) -> Option<Value> {
    let Some(declared) = contract.entity(entity) else {
        let names: Vec<&str> = contract.entities.iter().map(|e| e.name.as_str()).collect();
        let detail = format!("Unknown entity {entity}; the world has {}", names.join(", "));
        return Some(refusal(Some(chunk), Some(index), Some(entity), Some(row), None, &detail, None));
    };
    let Some(map) = row.as_object() else {
        return Some(refusal(Some(chunk), Some(index), Some(entity), Some(row), None, "A row must be an object", None));
    };
    if let Some(missing) = declared.primary_key.iter().find(|f| !map.contains_key(*f)) {
        let detail = format!("Row is missing primary key field {}", crate::json::python_repr(&Value::str(missing)));
        return Some(refusal(Some(chunk), Some(index), Some(entity), Some(row), Some(missing), &detail, Some(contract)));
    }
    if validators.and_then(|v| v.get(entity)).is_some_and(|v| v.accepts(row)) {
        return None;
    }
    let location = format!("{}/schema", declared.location);
    match validate(&declared.schema, row, &location, "") {
        Ok(()) => None,
        Err(error) => Some(refusal(Some(chunk), Some(index), Some(entity), Some(row), field_of(&error), &error.message, Some(contract))),
    }
}

/// Each entity's schema compiled once.
pub type Validators = std::collections::HashMap<String, Validator, foldhash::fast::RandomState>;

/// Compile every entity's schema.
pub fn validators(contract: &Contract) -> Validators {
    contract.entities.iter().map(|e| (e.name.clone(), Validator::compile(&e.schema))).collect()
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
            other => key.push_str(&crate::json::canonical(other)),
        }
    }
    key.push(']');
    key
}

//! A row's shape against the contract (unknown entity, not an object, missing key
//! field, the entity's schema), and the store key of a row that passed.

use super::report::{field_of, refusal};
use crate::compiler::Contract;
use crate::dialect::validate;
use crate::json::Value;

pub use crate::store::row_key;

/// A row's shape against the contract; None when it conforms.
pub fn shape_refusal(contract: &Contract, chunk: usize, index: usize, entity: &str, row: &Value) -> Option<Value> {
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
    if declared.accepts(row) {
        return None;
    }
    let location = format!("{}/schema", declared.location);
    match validate(&declared.schema, row, &location, "") {
        Ok(()) => None,
        Err(error) => Some(refusal(Some(chunk), Some(index), Some(entity), Some(row), field_of(&error), &error.message, Some(contract))),
    }
}

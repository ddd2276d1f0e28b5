//! An accepted row as held until the apply, and what both applies ([`super::memory`]
//! and [`super::sql`]) do with staged rows: the update's shallow merge, the commit-time
//! audit of updated rows, the dependency order of entities.

use super::report::{field_of, refusal};
use super::types::Staged;
use crate::compiler::{Contract, Entity};
use crate::dialect::validate;
use crate::error::Result;
use crate::json::{object, Value};
use crate::store::key_of;
use std::collections::HashSet;

/// Entities with the targets of their relationships first; a cycle keeps name order.
pub fn dependency_order(contract: &Contract) -> Vec<String> {
    let mut remaining: Vec<&Entity> = contract.entities.iter().collect();
    remaining.sort_by(|a, b| a.name.cmp(&b.name));
    let mut ordered = Vec::new();
    while !remaining.is_empty() {
        let names: HashSet<&str> = remaining.iter().map(|e| e.name.as_str()).collect();
        let mut ready: Vec<String> = remaining
            .iter()
            .filter(|e| e.relationships.iter().all(|r| r.target == e.name || !names.contains(r.target.as_str())))
            .map(|e| e.name.clone())
            .collect();
        if ready.is_empty() {
            ready.push(remaining[0].name.clone());
        }
        remaining.retain(|e| !ready.contains(&e.name));
        ordered.extend(ready);
    }
    ordered
}

/// What updating a stored row with a staged one comes to.
pub(super) enum Update {
    /// The stored row already equals the staged one: nothing to write.
    Unchanged,
    /// The shallow merge breaks the entity's schema: the refusal.
    Refused(Value),
    /// The stored row, and the shallow merge of the staged row into it.
    Merged { current: Value, merged: Value },
}

/// Merge a staged row into the stored payload `stored` of entity `name`, as the
/// store's update does (shallow, later members win), and check the result.
pub(super) fn update_of(contract: &Contract, name: &str, staged: &Staged, stored: &str) -> Update {
    let current = crate::json::parse_clean(stored).unwrap_or_default();
    let value = staged.value();
    if crate::json::python_equal(&current, &value) {
        return Update::Unchanged;
    }
    let mut merged = current.as_object().cloned().unwrap_or_default();
    for (k, v) in value.as_object().expect("staged object") {
        merged.insert(k.clone(), v.clone());
    }
    let merged = Value::Object(merged);
    let declared = contract.entity(name).expect("staged entity");
    if !declared.accepts(&merged) {
        if let Err(error) = validate(&declared.schema, &merged, &format!("{}/schema", declared.location), "") {
            let record =
                refusal(Some(staged.chunk), Some(staged.index), Some(name), Some(&value), field_of(&error), &error.message, Some(contract));
            return Update::Refused(record);
        }
    }
    Update::Merged { current, merged }
}

/// The commit-time audit of updated rows (inserted rows were reference-checked
/// before the apply): every relationship of the merged row must be wholly present or
/// absent and name a key that `exists` after the batch. The refusal, if any.
pub(super) fn audit_updated(
    contract: &Contract,
    updated: &[(&str, Staged, Value)],
    mut exists: impl FnMut(&Entity, &str) -> Result<bool>,
) -> Result<Option<Value>> {
    for (name, staged, merged) in updated {
        if let Some(refusal) = audit_updated_row(contract, name, staged, merged, &mut exists)? {
            return Ok(Some(refusal));
        }
    }
    Ok(None)
}

/// [`audit_updated`] for one updated row.
pub(super) fn audit_updated_row(
    contract: &Contract,
    name: &str,
    staged: &Staged,
    merged: &Value,
    exists: &mut impl FnMut(&Entity, &str) -> Result<bool>,
) -> Result<Option<Value>> {
    let row_refusal = |field: Option<&str>, detail: &str| {
        refusal(Some(staged.chunk), Some(staged.index), Some(name), Some(&staged.value()), field, detail, Some(contract))
    };
    let declared = contract.entity(name).expect("staged entity");
    for relationship in &declared.relationships {
        let keys: Vec<Option<&Value>> =
            relationship.fields.iter().map(|f| crate::compiler::payload_value(merged, f).filter(|v| !matches!(v, Value::Null))).collect();
        if keys.iter().all(Option::is_none) {
            continue;
        }
        if keys.iter().any(Option::is_none) {
            return Ok(Some(row_refusal(None, "Composite references must be wholly present or wholly absent/null")));
        }
        let target = contract.entity(&relationship.target).expect("compiled target");
        let wanted = object(target.primary_key.iter().cloned().zip(keys.into_iter().map(|k| k.expect("present").clone())));
        let wanted = match key_of(target, &wanted, true) {
            Ok(wanted) => wanted,
            Err(error) => return Ok(Some(row_refusal(field_of(&error), &error.message))),
        };
        if !exists(target, &wanted)? {
            let detail = "Relationship target does not exist; incomplete evidence requires an explicit mapping decision";
            return Ok(Some(row_refusal(None, detail)));
        }
    }
    Ok(None)
}

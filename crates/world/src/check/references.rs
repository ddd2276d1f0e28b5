//! Relationships: each staged row's references resolved once at staging
//! ([`RefPlans`]), and the references step that refuses rows pointing at a key
//! neither the batch nor the parent snapshot holds.

use super::held::Held;
use super::memory;
use super::report::refusal;
use super::types::Ref;
use crate::compiler::{quote, Contract, Entity};
use crate::error::Result;
use crate::json::{object, Map, Value};
use crate::store::key_of;
use crate::validator::Validator;
use rusqlite::Connection;
use std::collections::{HashMap, HashSet};

/// Each entity's relationships with their targets' key-property validators compiled once.
pub(super) struct RefPlans<'c> {
    plans: std::collections::HashMap<
        &'c str,
        Vec<(&'c crate::compiler::Relationship, &'c Entity, Vec<Validator>)>,
        foldhash::fast::RandomState,
    >,
}

impl<'c> RefPlans<'c> {
    pub(super) fn new(contract: &'c Contract) -> Self {
        let mut plans = std::collections::HashMap::default();
        for entity in &contract.entities {
            let list = entity
                .relationships
                .iter()
                .map(|relationship| {
                    let target = contract.entity(&relationship.target).expect("compiled target");
                    let checks =
                        target.primary_key.iter().map(|f| Validator::compile(&target.property(f).cloned().unwrap_or_default())).collect();
                    (relationship, target, checks)
                })
                .collect();
            plans.insert(entity.name.as_str(), list);
        }
        RefPlans { plans }
    }

    /// The outcome of each relationship of `entity` for `row`, as the references
    /// step words them (`row.get(field)`, null counts as absent, `key_of` not exact).
    pub(super) fn resolve(&self, entity: &str, row: &Map) -> Vec<Ref> {
        let Some(plans) = self.plans.get(entity) else { return Vec::new() };
        plans
            .iter()
            .map(|(relationship, target, checks)| {
                let values: Vec<Option<&Value>> =
                    relationship.fields.iter().map(|f| row.get(f).filter(|v| !matches!(v, Value::Null))).collect();
                if values.iter().all(Option::is_none) {
                    return Ref::Absent;
                }
                if values.iter().any(Option::is_none) {
                    return Ref::Partial;
                }
                let values: Vec<&Value> = values.into_iter().map(|v| v.expect("present")).collect();
                if values.len() == target.primary_key.len() && values.iter().zip(checks).all(|(v, check)| check.accepts(v)) {
                    let parts = values
                        .iter()
                        .map(|v| match v {
                            Value::Float(f) => Value::Int(*f as i64),
                            other => (*other).clone(),
                        })
                        .collect();
                    return Ref::Key(crate::json::canonical(&Value::Array(parts)));
                }
                let wanted = object(target.primary_key.iter().cloned().zip(values.into_iter().cloned()));
                match key_of(target, &wanted, false) {
                    Ok(wanted) => Ref::Key(wanted),
                    Err(error) => Ref::Invalid(error.message),
                }
            })
            .collect()
    }
}

/// The keys a parent snapshot holds for one entity, as the references step asks.
enum ParentKeys {
    /// The entity's rows are being replaced: the parent's do not count.
    Replaced,
    /// Read whole (few enough).
    Read(HashSet<String>),
    /// Looked up one by one.
    Indexed(String),
}

impl ParentKeys {
    fn new(snapshot: &Connection, table: &str, held: usize, replaced: bool, bounded: bool) -> Result<ParentKeys> {
        if replaced {
            return Ok(ParentKeys::Replaced);
        }
        let count: i64 = snapshot.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?;
        if !memory::scan_worthwhile(count, held, bounded) {
            return Ok(ParentKeys::Indexed(format!("SELECT 1 FROM {table} WHERE _key = ?1")));
        }
        let mut statement = snapshot.prepare(&format!("SELECT _key FROM {table}"))?;
        let keys = statement.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<_>>()?;
        Ok(ParentKeys::Read(keys))
    }

    fn contains(&self, snapshot: &Connection, key: &str) -> Result<bool> {
        Ok(match self {
            ParentKeys::Replaced => false,
            ParentKeys::Read(keys) => keys.contains(key),
            ParentKeys::Indexed(sql) => snapshot.prepare_cached(sql)?.exists([key])?,
        })
    }
}

/// Every held row's relationships must point at a key the batch or the parent
/// holds. As in the original, an entity's keys are taken when a relationship first
/// needs them: rows dropped from it by an earlier entity's pass are gone by then,
/// rows dropped later still count.
pub(super) fn reference_refusals(contract: &Contract, snapshot: &Connection, held: &mut Held, mode: &str) -> Result<Vec<Value>> {
    let mut refusals = Vec::new();
    // Per target entity: the pass that first needed its keys, and the parent's keys.
    let mut taken: HashMap<String, (usize, ParentKeys)> = HashMap::new();
    for (pass, entity_name) in held.entities().into_iter().enumerate() {
        let declared = contract.entity(&entity_name).expect("staged entity");
        if declared.relationships.is_empty() {
            continue;
        }
        let mut dropped = Vec::new();
        held.for_each(&entity_name, |key, staged| {
            for (relationship, resolved) in declared.relationships.iter().zip(&staged.refs) {
                let first_field = relationship.fields[0].as_str();
                let refuse = |detail: &str| {
                    refusal(
                        Some(staged.chunk),
                        Some(staged.index),
                        Some(&entity_name),
                        Some(&staged.value()),
                        Some(first_field),
                        detail,
                        Some(contract),
                    )
                };
                let wanted = match resolved {
                    Ref::Absent => continue,
                    Ref::Partial => {
                        refusals.push(refuse("Composite references must be wholly present or wholly absent/null"));
                        dropped.push(key.to_string());
                        break;
                    }
                    Ref::Invalid(message) => {
                        refusals.push(refuse(message));
                        dropped.push(key.to_string());
                        break;
                    }
                    Ref::Key(wanted) => wanted,
                };
                let target = contract.entity(&relationship.target).expect("compiled target");
                if !taken.contains_key(&target.name) {
                    let replaced = mode == "replace" && held.has_entity(&target.name);
                    let parent = ParentKeys::new(snapshot, &quote(&target.name), held.len(&target.name)?, replaced, held.spilled())?;
                    taken.insert(target.name.clone(), (pass, parent));
                }
                let (since, parent) = &taken[&target.name];
                if !held.contains(&target.name, wanted, Some(*since))? && !parent.contains(snapshot, wanted)? {
                    refusals.push(refuse(&format!("Relationship target does not exist in {}", target.name)));
                    dropped.push(key.to_string());
                    break;
                }
            }
            Ok(true)
        })?;
        for key in dropped {
            held.drop_row(&entity_name, &key, pass)?;
        }
    }
    held.purge()?;
    Ok(refusals)
}

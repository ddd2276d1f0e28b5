//! The in-memory apply: what the scratch-copy apply ([`super::sql`]) would decide for
//! an `append` batch, decided from hash sets and a read-only look at the parent
//! snapshot, without copying the snapshot or writing a row.
//!
//! An append batch can only be refused by a unique constraint (the primary key's
//! `UNIQUE` included), by an updated row that no longer conforms, or by the
//! commit-time audit of an updated row's references. Each is modelled here with
//! SQLite's own comparison rules (see [`Cell`]); where a staged value would need
//! SQLite's rendering of a JSON object or array to compare it, the apply answers
//! [`Decision::Undecided`] and the caller runs the exact one.

use super::held::Held;
use super::report::refusal;
use super::staged::{audit_updated_row, dependency_order, update_of, Update};
use super::types::{Cell, Staged, Tuple};
use crate::compiler::{quote, Contract, Entity};
use crate::error::Result;
use crate::json::{object, Value};
use rusqlite::{Connection, OptionalExtension as _};
use std::collections::{HashMap, HashSet};

/// The key paths of every unique constraint of every entity, parsed once.
pub(super) struct UniquePlans {
    plans: HashMap<String, Vec<Vec<Vec<String>>>, foldhash::fast::RandomState>,
    /// Entities whose primary-key `UNIQUE` cannot disagree with their store keys.
    keyed: HashSet<String>,
}

impl UniquePlans {
    pub(super) fn new(contract: &Contract) -> UniquePlans {
        let plans = contract
            .entities
            .iter()
            .map(|entity| {
                let sets = constraints(entity)
                    .map(|fields| fields.iter().map(|f| crate::compiler::pointer_parts(f, f, "key").unwrap_or_default()).collect())
                    .collect();
                (entity.name.clone(), sets)
            })
            .collect();
        // Two distinct store keys name the same SQLite tuple only when a boolean meets
        // an integer (`json_extract` makes `true` 1); key properties typed without
        // `boolean` rule that out, and the store-key check alone decides the primary key.
        let keyed = contract
            .entities
            .iter()
            .filter(|entity| {
                entity.primary_key.iter().all(|field| {
                    let types = entity.property(field).map(crate::dialect::declared_types).unwrap_or_default();
                    !types.is_empty() && !types.contains(&"boolean")
                })
            })
            .map(|entity| entity.name.clone())
            .collect();
        UniquePlans { plans, keyed }
    }

    /// How many leading constraints (0 or 1: the primary key's) the apply need not check.
    fn skipped(&self, entity: &str) -> usize {
        usize::from(self.keyed.contains(entity))
    }

    /// The row's tuple for each unique constraint of its entity the apply checks.
    pub(super) fn tuples(&self, entity: &str, row: &Value) -> Vec<Tuple> {
        let Some(sets) = self.plans.get(entity) else { return Vec::new() };
        sets.iter().skip(self.skipped(entity)).map(|fields| tuple(row, fields)).collect()
    }

    /// The top-level members the declared `unique` constraints of `entity` read.
    pub(super) fn declared_members(&self, entity: &str) -> impl Iterator<Item = &str> {
        let sets = self.plans.get(entity).map_or(&[][..], |sets| sets.get(1..).unwrap_or_default());
        sets.iter().flatten().filter_map(|parts| parts.first()).map(String::as_str)
    }

    /// The row's tuples for the declared `unique` constraints only (a staged row's
    /// primary-key tuple comes from its store key).
    pub(super) fn declared_tuples(&self, entity: &str, row: &Value) -> Vec<Tuple> {
        let Some(sets) = self.plans.get(entity) else { return Vec::new() };
        sets.iter().skip(1).map(|fields| tuple(row, fields)).collect()
    }
}

/// The unique constraints of an entity as its table declares them: the primary key, then `unique`.
fn constraints(entity: &Entity) -> impl Iterator<Item = &Vec<String>> {
    std::iter::once(&entity.primary_key).chain(&entity.unique)
}

fn tuple(row: &Value, fields: &[Vec<String>]) -> Tuple {
    let mut cells = Vec::with_capacity(fields.len());
    for parts in fields {
        let mut current = Some(row);
        for part in parts {
            current = current.and_then(Value::as_object).and_then(|map| map.get(part.as_str()));
        }
        cells.push(match current {
            None | Some(Value::Null) => return Tuple::Null,
            Some(Value::Bool(b)) => Cell::Int(i64::from(*b)),
            Some(Value::Int(n)) => Cell::Int(*n),
            Some(Value::Float(f)) => Cell::real(*f),
            Some(Value::Str(text)) => Cell::Text(text.as_str().into()),
            Some(Value::Array(_) | Value::Object(_)) => return Tuple::Complex,
        });
    }
    Tuple::Values(cells.into_boxed_slice())
}

/// What the in-memory apply decided.
pub(super) enum Decision {
    /// The batch applies: the counts after it.
    Accepted(Value),
    /// The refusal the exact apply would give.
    Refused(Value),
    /// A case only SQLite can decide.
    Undecided,
}

/// The rows a parent table holds, as far as the apply needs them.
enum Stored {
    /// Read whole, once: every key, and each constraint's tuples with their keys.
    Scanned { keys: HashSet<String>, owners: Vec<HashMap<Box<[Cell]>, String>> },
    /// Too large to read for this batch: looked up by index, row by row.
    Indexed,
}

/// A parent table is read whole when it is not much larger than what the batch
/// brings; otherwise every staged row costs index lookups instead.
/// With `bounded` (the batch is on disk) only a small table is read whole.
pub(super) fn scan_worthwhile(stored: i64, staged: usize, bounded: bool) -> bool {
    stored <= 10_000 || (!bounded && (stored as u64) <= 4 * staged as u64)
}

/// Decide an `append` batch against the snapshot behind `conn` (opened read-only).
///
/// For a batch held on disk the apply keeps memory bounded: a constraint it would
/// have to track row by row (a declared `unique`) is left to the exact apply.
pub(super) fn apply(contract: &Contract, plans: &UniquePlans, conn: &Connection, held: &Held) -> Result<Decision> {
    let bounded = held.spilled();
    let order: Vec<String> = dependency_order(contract).into_iter().filter(|n| held.has_entity(n)).collect();
    let row_refusal = |name: &str, staged: &Staged, field: Option<&str>, detail: &str| {
        refusal(Some(staged.chunk), Some(staged.index), Some(name), Some(&staged.value()), field, detail, Some(contract))
    };
    const CONFLICT: &str = "Primary or unique key conflicts with existing state";
    let mut inserted: HashMap<&str, i64> = HashMap::new();
    // An append deletes nothing: a target exists when the batch or the parent has it,
    // so an updated row is audited as soon as it is merged, and only the first
    // refusal is kept (a later conflict still comes first, as at commit time).
    let mut exists = |target: &Entity, wanted: &str| -> Result<bool> {
        Ok(held.contains(&target.name, wanted, None)?
            || conn.prepare_cached(&format!("SELECT 1 FROM {} WHERE _key = ?1", quote(&target.name)))?.exists([wanted])?)
    };
    let mut audit_refusal: Option<Value> = None;
    for name in &order {
        let declared = contract.entity(name).expect("staged entity");
        let table = quote(name);
        let skipped = plans.skipped(name);
        let sets: Vec<&Vec<String>> = constraints(declared).skip(skipped).collect();
        if bounded && !sets.is_empty() {
            return Ok(Decision::Undecided);
        }
        let count: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?;
        let stored = if scan_worthwhile(count, held.len(name)?, bounded) { scan(conn, &table, &sets)? } else { Stored::Indexed };
        // Tuples claimed (Some(key)) or given up (None) by rows of this batch.
        let mut overlay: Vec<HashMap<Box<[Cell]>, Option<String>>> = vec![HashMap::new(); sets.len()];
        let owner = |overlay: &[HashMap<Box<[Cell]>, Option<String>>], set: usize, cells: &[Cell]| -> Result<Option<String>> {
            if let Some(claimed) = overlay[set].get(cells) {
                return Ok(claimed.clone());
            }
            match &stored {
                Stored::Scanned { owners, .. } => Ok(owners[set].get(cells).cloned()),
                Stored::Indexed => {
                    let clause: Vec<String> = sets[set].iter().enumerate().map(|(i, f)| format!("{} = ?{}", quote(f), i + 1)).collect();
                    let sql = format!("SELECT _key FROM {table} WHERE {} LIMIT 1", clause.join(" AND "));
                    let params: Vec<rusqlite::types::Value> = cells.iter().map(Cell::to_sql).collect();
                    Ok(conn.prepare_cached(&sql)?.query_row(rusqlite::params_from_iter(params), |r| r.get(0)).optional()?)
                }
            }
        };
        let mut select = conn.prepare_cached(&format!("SELECT payload FROM {table} WHERE _key = ?1"))?;
        let mut decision = None;
        let mut added = 0i64;
        held.for_each(name, |key, staged| {
            let existing: Option<String> = match &stored {
                Stored::Scanned { keys, .. } if !keys.contains(key) => None,
                _ => select.query_row([key], |r| r.get(0)).optional()?,
            };
            let Some(existing) = existing else {
                let tuples = staged_tuples(key, staged, skipped == 0);
                for (set, tuple) in tuples.iter().enumerate() {
                    match tuple {
                        Tuple::Null => {}
                        Tuple::Complex => {
                            decision = Some(Decision::Undecided);
                            return Ok(false);
                        }
                        Tuple::Values(cells) => {
                            if owner(&overlay, set, cells)?.is_some() {
                                decision = Some(Decision::Refused(row_refusal(name, staged, None, CONFLICT)));
                                return Ok(false);
                            }
                        }
                    }
                }
                for (set, tuple) in tuples.into_iter().enumerate() {
                    if let Tuple::Values(cells) = tuple {
                        overlay[set].insert(cells, Some(key.to_string()));
                    }
                }
                added += 1;
                return Ok(true);
            };
            let (current, merged) = match update_of(contract, name, staged, &existing) {
                Update::Unchanged => return Ok(true),
                Update::Refused(record) => {
                    decision = Some(Decision::Refused(record));
                    return Ok(false);
                }
                Update::Merged { current, merged } => (current, merged),
            };
            let before = plans.tuples(name, &current);
            let after = plans.tuples(name, &merged);
            for (set, (old, new)) in before.iter().zip(&after).enumerate() {
                if old == new {
                    continue;
                }
                if matches!(old, Tuple::Complex) || matches!(new, Tuple::Complex) {
                    decision = Some(Decision::Undecided);
                    return Ok(false);
                }
                if let Tuple::Values(cells) = new {
                    if owner(&overlay, set, cells)?.is_some_and(|k| k != key) {
                        decision = Some(Decision::Refused(row_refusal(name, staged, None, CONFLICT)));
                        return Ok(false);
                    }
                }
            }
            for (set, (old, new)) in before.into_iter().zip(after).enumerate() {
                if old == new {
                    continue;
                }
                if let Tuple::Values(cells) = old {
                    overlay[set].insert(cells, None);
                }
                if let Tuple::Values(cells) = new {
                    overlay[set].insert(cells, Some(key.to_string()));
                }
            }
            if audit_refusal.is_none() {
                audit_refusal = audit_updated_row(contract, name, staged, &merged, &mut exists)?;
            }
            Ok(true)
        })?;
        if let Some(decision) = decision {
            return Ok(decision);
        }
        *inserted.entry(name).or_default() += added;
    }
    if let Some(record) = audit_refusal {
        return Ok(Decision::Refused(record));
    }
    Ok(Decision::Accepted(counts(contract, conn, &inserted)?))
}

/// Each entity's row count in the snapshot, plus what the batch inserts.
pub(super) fn counts(contract: &Contract, conn: &Connection, inserted: &HashMap<&str, i64>) -> Result<Value> {
    let mut counts = Vec::new();
    for entity in &contract.entities {
        let stored: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM {}", quote(&entity.name)), [], |r| r.get(0))?;
        counts.push((entity.name.clone(), Value::Int(stored + inserted.get(entity.name.as_str()).copied().unwrap_or(0))));
    }
    Ok(object(counts))
}

/// A staged row's tuples: the primary key's from its store key, the others as staged.
fn staged_tuples(key: &str, staged: &Staged, primary: bool) -> Vec<Tuple> {
    if !primary {
        return staged.uniques.clone();
    }
    let parts = crate::json::parse_clean(key);
    let primary = match parts {
        Some(Value::Array(parts)) => {
            let cells: Option<Vec<Cell>> = parts
                .iter()
                .map(|part| match part {
                    Value::Bool(b) => Some(Cell::Int(i64::from(*b))),
                    Value::Int(n) => Some(Cell::Int(*n)),
                    Value::Float(f) => Some(Cell::real(*f)),
                    Value::Str(text) => Some(Cell::Text(text.as_str().into())),
                    _ => None,
                })
                .collect();
            cells.map_or(Tuple::Complex, |cells| Tuple::Values(cells.into_boxed_slice()))
        }
        _ => Tuple::Complex,
    };
    std::iter::once(primary).chain(staged.uniques.iter().cloned()).collect()
}

/// Read a parent table whole: its keys and each constraint's tuples.
fn scan(conn: &Connection, table: &str, sets: &[&Vec<String>]) -> Result<Stored> {
    let columns: Vec<String> = sets.iter().flat_map(|fields| fields.iter().map(|f| quote(f))).collect();
    let mut sql = String::from("SELECT _key");
    for column in &columns {
        sql.push_str(", ");
        sql.push_str(column);
    }
    sql.push_str(&format!(" FROM {table}"));
    let mut statement = conn.prepare(&sql)?;
    let mut rows = statement.query([])?;
    let mut keys = HashSet::new();
    let mut owners: Vec<HashMap<Box<[Cell]>, String>> = vec![HashMap::new(); sets.len()];
    while let Some(row) = rows.next()? {
        let key: String = row.get(0)?;
        let mut column = 1;
        for (set, fields) in sets.iter().enumerate() {
            let cells: Option<Vec<Cell>> = (0..fields.len()).map(|i| Cell::from_sql(row.get_ref(column + i).ok()?)).collect();
            column += fields.len();
            if let Some(cells) = cells {
                owners[set].insert(cells.into_boxed_slice(), key.clone());
            }
        }
        keys.insert(key);
    }
    Ok(Stored::Scanned { keys, owners })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::ValueRef;

    #[test]
    fn cells_compare_as_sqlite_does() {
        assert_eq!(Cell::real(2.0), Cell::Int(2));
        assert_eq!(Cell::real(-0.0), Cell::Int(0));
        assert_ne!(Cell::real(2.5), Cell::Int(2));
        assert_eq!(Cell::from_sql(ValueRef::Real(3.0)), Some(Cell::Int(3)));
        assert_eq!(Cell::from_sql(ValueRef::Null), None);
        let row = crate::json::parse_clean(r#"{"a": true, "b": {"c": "x"}, "d": null, "e": [1]}"#).unwrap();
        let parts = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(tuple(&row, &[parts(&["a"]), parts(&["b", "c"])]), Tuple::Values(vec![Cell::Int(1), Cell::Text("x".into())].into()));
        assert_eq!(tuple(&row, &[parts(&["a"]), parts(&["d"])]), Tuple::Null);
        assert_eq!(tuple(&row, &[parts(&["missing"])]), Tuple::Null);
        assert_eq!(tuple(&row, &[parts(&["e"])]), Tuple::Complex);
    }
}

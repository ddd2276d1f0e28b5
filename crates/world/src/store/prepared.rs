//! Single-row inserts prepared away from the writer.
//!
//! An insert is a batch of one mutation. Everything about it that reads no state —
//! the batch's shape and numeric range, the row against its schema, its key, the
//! canonical texts and the batch digest — is done by [`PreparedInsert::new`], which
//! needs only the contract and may run on any thread (a request's task, while the
//! writer commits other requests' writes). [`Store::insert_prepared`] then does what
//! needs the state: the ledger row, the table row (a taken key is refused here), the
//! lineage row and the relationship audit, in one transaction (a savepoint inside a
//! group). The ledger, lineage and refusals are exactly those of
//! [`Store::apply_batch`] of the same batch.

use super::mutation::{check_source, contextualize_mutation, integer_of, key_of_accepted, ordered_batch_id, write_refusal};
use super::Store;
use crate::compiler::Contract;
use crate::dialect::validate;
use crate::error::{ContractError, Result};
use crate::json::{canonical, canonical_order, object, write_string, Value};
use rusqlite::params;
#[cfg(test)]
use std::borrow::Cow;

/// An insert checked and encoded, waiting for a writer.
#[derive(Debug)]
pub struct PreparedInsert {
    entity: String,
    batch_id: String,
    /// The encoded primary key (the table's `_key`).
    key: String,
    /// The row's canonical JSON (the table's `payload`).
    payload: String,
    /// The ledger's `metadata` and `digest` of the one-mutation batch.
    metadata: String,
    digest: String,
    /// The lineage's `source`.
    source: String,
    /// The mutation's source, to name in a refusal the writer makes (a taken key).
    source_value: Value,
    /// The row as stored (canonical member order): the insert's answer.
    row: Value,
}

impl PreparedInsert {
    /// Check and encode the insert of `value` into `entity` as [`Store::insert`] would
    /// apply it (the same refusals, with the batch and mutation they name). `source`
    /// defaults to `{"record": "store.insert"}`.
    pub fn new(contract: &Contract, entity: &str, value: &Value, source: Option<Value>) -> Result<PreparedInsert> {
        let source = source.unwrap_or_else(|| object([("record", Value::str("store.insert"))]));
        let batch_id = ordered_batch_id();
        // The mutation as a value is needed only to name it in a refusal.
        let mutation =
            || object([("op", Value::str("insert")), ("entity", Value::str(entity)), ("value", value.clone()), ("source", source.clone())]);
        // The batch's whole text is range-checked first, as apply_batch does; the
        // pointer is found in the batch itself only when something is out of range.
        if crate::json::range_problem(value).is_some() || crate::json::range_problem(&source).is_some() {
            let batch = object([("mutations", Value::Array(vec![mutation()]))]);
            if let Some(pointer) = crate::json::range_problem(&batch) {
                return Err(ContractError::new("numeric_range", crate::json::NUMERIC_RANGE_MESSAGE, pointer).into());
            }
        }
        let checked = (|| -> Result<(String, String)> {
            check_source(Some(&source), "/batch/mutations/0/source")?;
            let declared = Store::entity_in(contract, &Value::str(entity))?;
            // The compiled check answers a valid row; only a refused one is walked
            // again for its first error, with the locations that names.
            if !declared.accepts(value) {
                validate(&declared.schema, value, &format!("{}/schema", declared.location), "")?;
            }
            Ok((declared.name.clone(), key_of_accepted(declared, value)?))
        })();
        let (entity, key) = checked.map_err(|error| contextualize_mutation(error, &batch_id, 0, &mutation()))?;
        let payload = canonical(value);
        let source_text = canonical(&source);
        let (metadata, digest) = batch_texts(contract.target(), &batch_id, &entity, &source_text, &payload);
        Ok(PreparedInsert {
            row: canonical_order(value),
            entity,
            key,
            payload,
            metadata,
            digest,
            source: source_text,
            batch_id,
            source_value: source,
        })
    }

    /// The entity it inserts into.
    pub fn entity(&self) -> &str {
        &self.entity
    }

    /// The id of the one-mutation batch it is.
    pub fn batch_id(&self) -> &str {
        &self.batch_id
    }
}

/// The ledger's `metadata` and the batch digest of the one-insert batch, written
/// straight from the texts already made rather than by encoding the batch again:
/// the canonical text of `{"coverage", "id", "mapping", "mutations": [{"entity",
/// "op", "source", "value"}], "target"}` is those members in that (sorted) order,
/// and the row's and source's canonical texts are pieces of it. Checked against the
/// general encoding in this module's tests.
fn batch_texts(target: &Value, batch_id: &str, entity: &str, source: &str, payload: &str) -> (String, String) {
    let target = canonical(target);
    let mut head = String::with_capacity(128 + target.len());
    head.push_str(r#"{"coverage":"partial","id":"#);
    write_string(&mut head, batch_id, false);
    head.push_str(r#","mapping":{"id":"gateway-store","version":"1"}"#);
    let mut text = String::with_capacity(head.len() + entity.len() + source.len() + payload.len() + target.len() + 80);
    text.push_str(&head);
    text.push_str(r#","mutations":[{"entity":"#);
    write_string(&mut text, entity, false);
    text.push_str(r#","op":"insert","source":"#);
    text.push_str(source);
    text.push_str(r#","value":"#);
    text.push_str(payload);
    text.push_str(r#"}],"target":"#);
    text.push_str(&target);
    text.push_str("}\n");
    head.push_str(r#","target":"#);
    head.push_str(&target);
    head.push('}');
    (head, crate::hash::digest_of_pieces(|sink| sink(&text)))
}

impl Store {
    /// Insert one row; returns it in canonical member order.
    pub fn insert(&mut self, entity: &str, value: &Value, source: Option<Value>) -> Result<Value> {
        let prepared = PreparedInsert::new(&self.contract, entity, value, source)?;
        self.insert_prepared(prepared)
    }

    /// Apply an insert prepared against this store's contract (by
    /// [`PreparedInsert::new`], possibly on another thread); returns the row in
    /// canonical member order.
    pub fn insert_prepared(&mut self, prepared: PreparedInsert) -> Result<Value> {
        let PreparedInsert { entity, batch_id, key, payload, metadata, digest, source, source_value, row } = prepared;
        // What a refusal names of the mutation: its entity and source (an insert has no `key`).
        let mutation = || object([("op", Value::str("insert")), ("entity", Value::str(&entity)), ("source", source_value.clone())]);
        let contract = self.contract.clone();
        let declared = contract.entity(&entity).expect("prepared against this contract");
        if self.grouped && self.depth == 0 && declared.relationships.is_empty() {
            // Inside a group, an insert that no audit can refuse needs no savepoint of
            // its own (whose journal copies every page the insert touches): the table
            // row goes first, and a single-row insert refused by SQLite writes nothing;
            // the ledger and lineage rows after it can fail only as the database does,
            // and then the whole group is rolled back (`commit_group`).
            let inserted = self.insert_row(&entity, &key, &payload);
            if let Err(error) = inserted {
                return Err(contextualize_mutation(write_refusal(error, declared, &key), &batch_id, 0, &mutation()));
            }
            let recorded = self.record_insert(&batch_id, &digest, &metadata, &entity, &key, &source);
            if let Err(error) = recorded {
                self.group_broken = true;
                return Err(error);
            }
        } else {
            self.transaction(|store| {
                store.touched.insert((entity.clone(), key.clone()));
                let inserted = store.insert_row(&entity, &key, &payload);
                if let Err(error) = inserted {
                    return Err(contextualize_mutation(write_refusal(error, declared, &key), &batch_id, 0, &mutation()));
                }
                store.record_insert(&batch_id, &digest, &metadata, &entity, &key, &source)
            })?;
        }
        for ((cached, field), highest) in self.highest.iter_mut() {
            if *cached == entity {
                if let Some(n) = integer_of(row.get(field)) {
                    *highest = (*highest).max(n);
                }
            }
        }
        Ok(row)
    }

    /// Insert the table row `(key, payload)` of `entity`.
    fn insert_row(&mut self, entity: &str, key: &str, payload: &str) -> rusqlite::Result<usize> {
        if !self.insert_sql.contains_key(entity) {
            let sql = format!("INSERT INTO {} (_key, payload) VALUES (?1, ?2)", crate::compiler::quote(entity));
            self.insert_sql.insert(entity.to_string(), sql);
        }
        self.conn.prepare_cached(&self.insert_sql[entity])?.execute(params![key, payload])
    }

    /// The ledger row of a one-insert batch (its id is fresh: `ordered_batch_id`, so
    /// no earlier batch holds it) and the lineage row of its insert.
    fn record_insert(&mut self, batch_id: &str, digest: &str, metadata: &str, entity: &str, key: &str, source: &str) -> Result<()> {
        self.conn.prepare_cached("INSERT INTO _gateway_batches VALUES (?1, ?2, ?3)")?.execute(params![batch_id, digest, metadata])?;
        self.conn
            .prepare_cached("INSERT INTO _gateway_lineage VALUES (?1, ?2, ?3, ?4, ?5)")?
            .execute(params![batch_id, 0i64, entity, key, source])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{parse_clean, Map};
    use crate::store::mutation::batch_digest;

    /// The texts written piece by piece are the general encoding's, for rows and
    /// sources with escapes, non-ASCII, nesting and numbers of every kind.
    #[test]
    fn batch_texts_are_the_encoded_batch() {
        let rows = [
            r#"{"id": "a", "kind": "lead"}"#,
            r#"{"z": 1, "a": [3, {"y": 2.5, "b": null}], "é": "quote \" and \u2028", "n": -0.0, "big": 9007199254740991, "small": 1.5e-7, "t": true}"#,
            r#"{}"#,
        ];
        let sources = [r#"{"record": "api.create"}"#, r#"{"record": "r/1", "evidence": [{"reference": "x", "digest": "sha256:00"}]}"#];
        let targets = [r#"{"system": "crm", "version": "2"}"#, r#""plain""#];
        for (row, (source, target)) in rows.iter().zip(sources.iter().cycle().zip(targets.iter().cycle())) {
            let (row, source, target) = (parse_clean(row).unwrap(), parse_clean(source).unwrap(), parse_clean(target).unwrap());
            let mutation = object([
                ("op", Value::str("insert")),
                ("entity", Value::str("récords")),
                ("value", row.clone()),
                ("source", source.clone()),
            ]);
            let head = object([
                ("id", Value::str("0123abcd")),
                ("target", target.clone()),
                ("mapping", object([("id", Value::str("gateway-store")), ("version", Value::str("1"))])),
                ("coverage", Value::str("partial")),
                ("mutations", Value::Array(Vec::new())),
            ]);
            let Value::Object(head) = head else { unreachable!() };
            let digest = batch_digest(&head, std::iter::once(Cow::Borrowed(&mutation)));
            let metadata: Map = head.iter().filter(|(k, _)| *k != "mutations").map(|(k, v)| (k.clone(), v.clone())).collect();
            let (ours_metadata, ours_digest) = batch_texts(&target, "0123abcd", "récords", &canonical(&source), &canonical(&row));
            assert_eq!(ours_metadata, canonical(&Value::Object(metadata)));
            assert_eq!(ours_digest, digest);
            // The answer row is what parsing the stored text gives back, member order included.
            let stored = parse_clean(&canonical(&row)).unwrap();
            assert_eq!(canonical(&canonical_order(&row)), canonical(&stored));
            assert_eq!(
                crate::json::dumps(&canonical_order(&row), crate::json::DumpOptions::PRETTY),
                crate::json::dumps(&stored, crate::json::DumpOptions::PRETTY)
            );
        }
    }
}

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

use super::mutation::{
    batch_digest, check_source, contextualize_mutation, integer_of, key_of, ordered_batch_id, parse_stored, write_refusal,
};
use super::Store;
use crate::compiler::Contract;
use crate::dialect::validate;
use crate::error::{ContractError, Result};
use crate::json::{canonical, object, Map, Value};
use rusqlite::params;
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
    /// The mutation, to name in a refusal the writer makes (a taken key).
    mutation: Value,
    /// The row as stored (canonical member order): the insert's answer.
    row: Value,
}

impl PreparedInsert {
    /// Check and encode the insert of `value` into `entity` as [`Store::insert`] would
    /// apply it (the same refusals, with the batch and mutation they name). `source`
    /// defaults to `{"record": "store.insert"}`.
    pub fn new(contract: &Contract, entity: &str, value: &Value, source: Option<Value>) -> Result<PreparedInsert> {
        let source = source.unwrap_or_else(|| object([("record", Value::str("store.insert"))]));
        let mutation = object([("op", Value::str("insert")), ("entity", Value::str(entity)), ("value", value.clone()), ("source", source)]);
        let batch_id = ordered_batch_id();
        let head = object([
            ("id", Value::str(&batch_id)),
            ("target", contract.target().clone()),
            ("mapping", object([("id", Value::str("gateway-store")), ("version", Value::str("1"))])),
            ("coverage", Value::str("partial")),
            ("mutations", Value::Array(Vec::new())),
        ]);
        // The batch's whole text is range-checked first, as apply_batch does.
        let batch = object([("mutations", Value::Array(vec![mutation]))]);
        if let Some(pointer) = crate::json::range_problem(&batch) {
            return Err(ContractError::new("numeric_range", crate::json::NUMERIC_RANGE_MESSAGE, pointer).into());
        }
        let Value::Object(mut batch) = batch else { unreachable!("built as an object") };
        let Some(Value::Array(mut mutations)) = batch.shift_remove("mutations") else { unreachable!("built with mutations") };
        let mutation = mutations.pop().expect("one mutation");
        let checked = (|| -> Result<(String, String)> {
            check_source(mutation.get("source"), "/batch/mutations/0/source")?;
            let declared = Store::entity_in(contract, mutation.get("entity").expect("member"))?;
            validate(&declared.schema, value, &format!("{}/schema", declared.location), "")?;
            Ok((declared.name.clone(), key_of(declared, value, false)?))
        })();
        let (entity, key) = checked.map_err(|error| contextualize_mutation(error, &batch_id, 0, &mutation))?;
        let Value::Object(head) = head else { unreachable!("built as an object") };
        let digest = batch_digest(&head, std::iter::once(Cow::Borrowed(&mutation)));
        let metadata: Map = head.iter().filter(|(k, _)| *k != "mutations").map(|(k, v)| (k.clone(), v.clone())).collect();
        let payload = canonical(value);
        Ok(PreparedInsert {
            entity,
            key,
            row: parse_stored(&payload).unwrap_or_default(),
            payload,
            metadata: canonical(&Value::Object(metadata)),
            digest,
            source: canonical(mutation.get("source").expect("member")),
            batch_id,
            mutation,
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
        let PreparedInsert { entity, batch_id, key, payload, metadata, digest, source, mutation, row } = prepared;
        let declared = self.contract.entity(&entity).expect("prepared against this contract");
        if self.grouped && self.depth == 0 && declared.relationships.is_empty() {
            // Inside a group, an insert that no audit can refuse needs no savepoint of
            // its own (whose journal copies every page the insert touches): the table
            // row goes first, and a single-row insert refused by SQLite writes nothing;
            // the ledger and lineage rows after it can fail only as the database does,
            // and then the whole group is rolled back (`commit_group`).
            let inserted = self
                .conn
                .prepare_cached(&format!("INSERT INTO {} (_key, payload) VALUES (?1, ?2)", crate::compiler::quote(&entity)))?
                .execute(params![key, payload]);
            if let Err(error) = inserted {
                return Err(contextualize_mutation(write_refusal(error, declared, &key), &batch_id, 0, &mutation));
            }
            let recorded = self.record_insert(&batch_id, &digest, &metadata, &entity, &key, &source);
            if let Err(error) = recorded {
                self.group_broken = true;
                return Err(error);
            }
        } else {
            self.transaction(|store| {
                store.touched.insert((entity.clone(), key.clone()));
                let inserted = store
                    .conn
                    .prepare_cached(&format!("INSERT INTO {} (_key, payload) VALUES (?1, ?2)", crate::compiler::quote(&entity)))?
                    .execute(params![key, payload]);
                if let Err(error) = inserted {
                    let declared = store.contract.entity(&entity).expect("prepared against this contract");
                    return Err(contextualize_mutation(write_refusal(error, declared, &key), &batch_id, 0, &mutation));
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

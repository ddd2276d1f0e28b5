//! The apply: a batch checked (members, target, mapping, coverage, numeric range)
//! and run in one transaction with its ledger and lineage rows, each mutation
//! validated and keyed; single-row writes wrapped in a batch of their own; the next
//! integer of a generated field.

use super::mutation::{
    batch_digest, check_source, contextualize_mutation, each_mutation, integer_of, key_of, ordered_batch_id, write_refusal,
};
use super::Store;
use crate::compiler::quote;
use crate::dialect::{members, nonempty, validate};
use crate::error::{ContractError, Result};
use crate::files::BatchFile;
use crate::json::{canonical, object, python_equal, Map, Spread, Value};
use rusqlite::{params, OptionalExtension};

impl Store {
    /// Apply a batch atomically. An exact retry is a no-op; reusing its id with
    /// other content is refused.
    pub fn apply_batch(&mut self, batch: &Value) -> Result<Value> {
        self.apply_spread(batch, None)
    }

    /// [`Store::apply_batch`] of a batch file, its mutations parsed one at a time as they
    /// are applied (a batch can hold a world's data: its tree is never built).
    pub fn apply_batch_file(&mut self, file: &BatchFile) -> Result<Value> {
        let spread = file.spread();
        self.apply_spread(&spread.value, Some(&spread))
    }

    /// The batch `batch`, whose mutations are its own or, when `spread` leaves them in
    /// the file's text, `spread`'s items.
    fn apply_spread(&mut self, batch: &Value, spread: Option<&Spread<'_>>) -> Result<Value> {
        if !self.single_write {
            // A batch may write any value into a tracked field: read it again later.
            self.highest.clear();
        }
        const MEMBERS: &[&str] = &["id", "target", "mapping", "coverage", "mutations"];
        members(batch, MEMBERS, MEMBERS, "/batch")?;
        nonempty(batch.get("id"), "/batch/id")?;
        if !python_equal(batch.get("target").expect("member"), self.contract.target()) {
            return Err(
                ContractError::new("batch_target", "Batch targets a different domain identity/version/hash", "/batch/target").into()
            );
        }
        let mapping = batch.get("mapping").expect("member");
        members(mapping, &["id", "version"], &["id", "version"], "/batch/mapping")?;
        for (key, value) in mapping.as_object().expect("object") {
            nonempty(Some(value), &format!("/batch/mapping/{key}"))?;
        }
        if !matches!(batch.get("coverage").and_then(Value::as_str), Some("partial" | "complete")) {
            return Err(ContractError::new(
                "coverage",
                "coverage must be partial or complete (neither implies deletion)",
                "/batch/coverage",
            )
            .into());
        }
        let Some(mutations) = batch.get("mutations").and_then(Value::as_array) else {
            return Err(ContractError::new("batch", "mutations must be an array", "/batch/mutations").into());
        };
        // A file's text was range-checked whole when it was read.
        if let Some(pointer) = crate::json::range_problem(batch).filter(|_| spread.is_none()) {
            // The original canonicalises the whole batch for its digest first.
            return Err(ContractError::new("numeric_range", crate::json::NUMERIC_RANGE_MESSAGE, pointer).into());
        }
        let id = batch.get("id").and_then(Value::as_str).expect("checked").to_string();
        let head = batch.as_object().expect("checked object");
        self.transaction(|store| {
            let prior: Option<String> =
                store.conn.query_row("SELECT digest FROM _gateway_batches WHERE id = ?1", [&id], |r| r.get(0)).optional()?;
            if let Some(prior) = prior {
                if prior != batch_digest(head, each_mutation(mutations, spread)) {
                    return Err(ContractError::new(
                        "idempotency_conflict",
                        "Batch ID was already applied with different content",
                        "/batch/id",
                    )
                    .with("batch", Value::str(&id))
                    .into());
                }
                return Ok(object([("status", Value::str("already_applied")), ("batch", Value::str(&id)), ("applied", Value::Int(0))]));
            }
            let metadata: Map = head.iter().filter(|(k, _)| *k != "mutations").map(|(k, v)| (k.clone(), v.clone())).collect();
            // The digest is known once every mutation went by: the ledger row takes it
            // then (one transaction: nobody sees it without).
            store.conn.execute("INSERT INTO _gateway_batches VALUES (?1, '', ?2)", params![id, canonical(&Value::Object(metadata))])?;
            let mut failure = None;
            let mut applied = 0usize;
            let applying = each_mutation(mutations, spread).enumerate().map_while(|(index, mutation)| {
                match store.apply_mutation(&id, index, &mutation) {
                    Ok(()) => {
                        applied += 1;
                        Some(mutation)
                    }
                    Err(error) => {
                        failure = Some(contextualize_mutation(error, &id, index, &mutation));
                        None
                    }
                }
            });
            let batch_hash = batch_digest(head, applying);
            if let Some(failure) = failure {
                return Err(failure);
            }
            store.conn.execute("UPDATE _gateway_batches SET digest = ?2 WHERE id = ?1", params![id, batch_hash])?;
            Ok(object([("status", Value::str("applied")), ("batch", Value::str(&id)), ("applied", Value::Int(applied as i64))]))
        })
    }

    fn apply_mutation(&mut self, batch_id: &str, index: usize, mutation: &Value) -> Result<()> {
        let location = format!("/batch/mutations/{index}");
        members(mutation, &["op", "entity", "key", "value", "source"], &["op", "entity", "source"], &location)?;
        let op = match mutation.get("op") {
            Some(Value::Str(op)) => op.as_str(),
            _ => return Err(ContractError::new("operation", "Operation must be insert, update or delete", location).into()),
        };
        let required: &[&str] = match op {
            "insert" => &["op", "entity", "source", "value"],
            "update" => &["op", "entity", "source", "key", "value"],
            "delete" => &["op", "entity", "source", "key"],
            _ => return Err(ContractError::new("operation", "Only insert, update and delete are supported", location).into()),
        };
        members(mutation, required, required, &location)?;
        check_source(mutation.get("source"), &format!("{location}/source"))?;
        let (entity_name, key) = self.mutate(mutation, op)?;
        let source = canonical(mutation.get("source").expect("member"));
        self.conn.prepare_cached("INSERT INTO _gateway_lineage VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(params![
            batch_id,
            index as i64,
            entity_name,
            key,
            source
        ])?;
        Ok(())
    }

    fn mutate(&mut self, mutation: &Value, op: &str) -> Result<(String, String)> {
        // The contract is shared: holding it keeps the entity without copying its schema.
        let contract = self.contract.clone();
        let entity = Store::entity_in(&contract, mutation.get("entity").expect("member"))?;
        let name = entity.name.clone();
        let schema_location = format!("{}/schema", entity.location);
        let (key, payload) = if op == "insert" {
            let value = mutation.get("value").expect("member");
            validate(&entity.schema, value, &schema_location, "")?;
            (key_of(entity, value, false)?, Some(value.clone()))
        } else {
            let key_value = mutation.get("key").expect("member");
            let key = key_of(entity, key_value, true)?;
            let Some(current) = self.get_by_key(&name, &key)? else {
                return Err(ContractError::new("not_found", "No entity exists at this key", "")
                    .with("entity", Value::str(&name))
                    .with("key", key_value.clone())
                    .into());
            };
            if op == "update" {
                let Some(patch) = mutation.get("value").and_then(Value::as_object) else {
                    return Err(ContractError::new("type", "An update must be an object", "").into());
                };
                let mut merged = current.as_object().cloned().unwrap_or_default();
                for (k, v) in patch {
                    merged.insert(k.clone(), v.clone());
                }
                let merged = Value::Object(merged);
                validate(&entity.schema, &merged, &schema_location, "")?;
                if key_of(entity, &merged, false)? != key {
                    return Err(ContractError::new("key_immutable", "Updates cannot change primary keys", "")
                        .with("entity", Value::str(&name))
                        .into());
                }
                (key, Some(merged))
            } else {
                (key, None)
            }
        };
        self.touched.insert((name.clone(), key.clone()));
        let table = quote(&name);
        let outcome = match (op, &payload) {
            ("insert", Some(value)) => self
                .conn
                .prepare_cached(&format!("INSERT INTO {table} (_key, payload) VALUES (?1, ?2)"))?
                .execute(params![key, canonical(value)]),
            ("update", Some(value)) => self
                .conn
                .prepare_cached(&format!("UPDATE {table} SET payload = ?1 WHERE _key = ?2"))?
                .execute(params![canonical(value), key]),
            _ => {
                self.deleted_from.insert(name.clone());
                self.conn.prepare_cached(&format!("DELETE FROM {table} WHERE _key = ?1"))?.execute(params![key])
            }
        };
        match outcome {
            Ok(_) => Ok((name, key)),
            Err(error) => Err(write_refusal(error, entity, &key)),
        }
    }

    /// A single-row mutation wrapped in its own batch (the original's store helpers).
    fn single(&mut self, op: &str, entity: &str, key: Option<&Value>, value: Option<&Value>, source: Option<Value>) -> Result<()> {
        let mut mutation = Map::default();
        mutation.insert("op".into(), Value::str(op));
        mutation.insert("entity".into(), Value::str(entity));
        if let Some(key) = key {
            mutation.insert("key".into(), key.clone());
        }
        if let Some(value) = value {
            mutation.insert("value".into(), value.clone());
        }
        mutation.insert("source".into(), source.unwrap_or_else(|| object([("record", Value::Str(format!("store.{op}")))])));
        let batch = object([
            ("id", Value::Str(ordered_batch_id())),
            ("target", self.contract.target().clone()),
            ("mapping", object([("id", Value::str("gateway-store")), ("version", Value::str("1"))])),
            ("coverage", Value::str("partial")),
            ("mutations", Value::Array(vec![Value::Object(mutation)])),
        ]);
        self.single_write = true;
        let applied = self.apply_batch(&batch).map(|_| ());
        self.single_write = false;
        applied
    }

    /// Shallow-merge `patch` into the row at `key`; returns the merged row.
    pub fn update(&mut self, entity: &str, key: &Value, patch: &Value, source: Option<Value>) -> Result<Option<Value>> {
        self.single("update", entity, Some(key), Some(patch), source)?;
        self.highest.retain(|(cached, field), _| cached != entity || patch.get(field).is_none());
        self.get(entity, key)
    }

    /// Delete the row at `key`.
    pub fn delete(&mut self, entity: &str, key: &Value, source: Option<Value>) -> Result<()> {
        let tracked = self.highest.keys().any(|(cached, _)| cached == entity);
        let row = if tracked { self.get(entity, key)? } else { None };
        self.single("delete", entity, Some(key), None, source)?;
        if let Some(row) = row {
            // Only deleting the row that holds the highest value needs a fresh read.
            self.highest.retain(|(cached, field), highest| cached != entity || integer_of(row.get(field)) != Some(*highest));
        }
        Ok(())
    }

    /// The next integer of a generated field (`max(0, highest integer) + 1`, as
    /// the original computes it), read from the table only the first time.
    pub fn next_integer(&mut self, entity: &str, field: &str) -> Result<i64> {
        let slot = (entity.to_string(), field.to_string());
        if let Some(highest) = self.highest.get(&slot) {
            return Ok(highest + 1);
        }
        if self.contract.entity(entity).is_none() {
            return Err(ContractError::new("entity", "Unknown entity type", "").with("entity", Value::str(entity)).into());
        }
        let path = format!("$.\"{}\"", field.replace('"', "\"\""));
        let sql = format!(
            "SELECT MAX(CASE json_type(payload, ?1) WHEN 'integer' THEN json_extract(payload, ?1) WHEN 'true' THEN 1 \
             WHEN 'false' THEN 0 END) FROM {}",
            quote(entity)
        );
        let found: Option<i64> = self.conn.query_row(&sql, [&path], |r| r.get(0))?;
        let highest = found.unwrap_or(0).max(0);
        self.highest.insert(slot, highest);
        Ok(highest + 1)
    }

    /// The next integer of a generated field among the rows whose `scope` fields
    /// hold the given values (`max(0, highest integer) + 1`): an issue's number in
    /// its repository. Read each time (inside the writer, so a group's earlier
    /// writes count); the scope's fields should be served by an index.
    pub fn next_integer_in(&mut self, entity: &str, field: &str, scope: &[(String, Value)]) -> Result<i64> {
        if self.contract.entity(entity).is_none() {
            return Err(ContractError::new("entity", "Unknown entity type", "").with("entity", Value::str(entity)).into());
        }
        let json_path = |dotted: &str| {
            let mut path = String::from("$");
            for part in dotted.split('.') {
                path.push_str(".\"");
                path.push_str(&part.replace('"', "\"\""));
                path.push('"');
            }
            path
        };
        let mut sql = format!(
            "SELECT MAX(CASE json_type(payload, ?1) WHEN 'integer' THEN json_extract(payload, ?1) WHEN 'true' THEN 1 \
             WHEN 'false' THEN 0 END) FROM {} WHERE 1",
            quote(entity)
        );
        let mut bound: Vec<rusqlite::types::Value> = vec![rusqlite::types::Value::Text(json_path(field))];
        for (scoped, value) in scope {
            bound.push(rusqlite::types::Value::Text(json_path(scoped)));
            let at = bound.len();
            // Compared as SQL values: an integer id equals the integer stored.
            let wanted = match value {
                Value::Int(n) => rusqlite::types::Value::Integer(*n),
                Value::Float(f) => rusqlite::types::Value::Real(*f),
                Value::Bool(b) => rusqlite::types::Value::Integer(i64::from(*b)),
                Value::Null => rusqlite::types::Value::Null,
                Value::Str(text) => rusqlite::types::Value::Text(text.clone()),
                other => rusqlite::types::Value::Text(canonical(other)),
            };
            bound.push(wanted);
            sql.push_str(&format!(" AND json_extract(payload, ?{at}) = ?{}", at + 1));
        }
        let found: Option<i64> = self.conn.query_row(&sql, rusqlite::params_from_iter(bound), |r| r.get(0))?;
        Ok(found.unwrap_or(0).max(0) + 1)
    }
}

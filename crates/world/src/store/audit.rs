//! The audits: every persisted row against the contract (schema, key identity,
//! relationships, SQLite's own relationship check), and the commit-time audit of
//! what one transaction wrote, whose cost follows the transaction, not the world.

use super::mutation::{key_of, parse_stored};
use super::Store;
use crate::compiler::{payload_value, quote, Entity};
use crate::dialect::validate;
use crate::error::{fail, ContractError, Result};
use crate::json::{object, Value};
use rusqlite::{params, OptionalExtension};
use std::collections::BTreeSet;

impl Store {
    /// The first way a stored row breaks the contract. `written` says the payload
    /// is one this store's own write validated and keyed in this transaction, so
    /// only its relationships can have broken.
    fn row_violation(&self, entity: &Entity, stored_key: &str, payload: &str, written: bool) -> Option<ContractError> {
        let value = match crate::files::parse_json_bytes(payload.as_bytes(), &format!("{}/schema", entity.location)) {
            Ok(value) => value,
            Err(error) => return Some(error.with("entity", Value::str(&entity.name))),
        };
        let check = || -> Result<(), ContractError> {
            if !written {
                validate(&entity.schema, &value, &format!("{}/schema", entity.location), "")?;
            }
            if !written && key_of(entity, &value, false)? != stored_key {
                return Err(
                    ContractError::new("key", "Stored key differs from payload identity", "").with("entity", Value::str(&entity.name))
                );
            }
            for relationship in &entity.relationships {
                let keys: Vec<Option<&Value>> =
                    relationship.fields.iter().map(|f| payload_value(&value, f).filter(|v| !matches!(v, Value::Null))).collect();
                if keys.iter().all(Option::is_none) {
                    continue;
                }
                let location = format!("{}/relationships", entity.location);
                if keys.iter().any(Option::is_none) {
                    return fail("foreign_key", "Composite references must be wholly present or wholly absent/null", location);
                }
                let target = self.contract.entity(&relationship.target).expect("compiled target");
                let target_key = object(target.primary_key.iter().cloned().zip(keys.into_iter().map(|k| k.expect("present").clone())));
                let encoded_key = key_of(target, &target_key, true)?;
                let exists = self.get_by_key(&target.name, &encoded_key).ok().flatten().is_some();
                if !exists {
                    return fail(
                        "foreign_key",
                        "Relationship target does not exist; incomplete evidence requires an explicit mapping decision",
                        location,
                    );
                }
            }
            Ok(())
        };
        let error = check().err()?;
        let mut error = error.with("entity", Value::str(&entity.name)).with("key", parse_stored(stored_key).unwrap_or_default());
        let lineage: Option<(String, i64, String)> = self
            .conn
            .query_row(
                "SELECT batch, ordinal, source FROM _gateway_lineage WHERE entity=?1 AND key=?2 ORDER BY rowid DESC LIMIT 1",
                params![entity.name, stored_key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .ok()
            .flatten();
        if let Some((batch, index, source)) = lineage {
            error.set("batch", Value::Str(batch));
            error.set("index", Value::Int(index));
            error.set("source", parse_stored(&source).unwrap_or_default());
        }
        Some(error)
    }

    /// Every contract violation in persisted state, at most `limit` of them.
    pub fn violations(&self, limit: Option<usize>) -> Result<Vec<ContractError>> {
        let mut found = Vec::new();
        for entity in &self.contract.entities {
            let mut statement = self.conn.prepare(&format!("SELECT _key, payload FROM {} ORDER BY _key", quote(&entity.name)))?;
            let rows = statement.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            for row in rows {
                let (key, payload) = row?;
                if let Some(error) = self.row_violation(entity, &key, &payload, false) {
                    found.push(error);
                    if limit.is_some_and(|l| found.len() >= l) {
                        return Ok(found);
                    }
                }
            }
        }
        if self.foreign_key_violation(None)? {
            found.push(ContractError::new("foreign_key", "Persisted SQLite relationship check failed", ""));
        }
        Ok(found)
    }

    /// Validate every persisted row, key identity and reference.
    pub fn audit(&self) -> Result<()> {
        match self.violations(Some(1))?.into_iter().next() {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }

    /// SQLite's own relationship check. With `tables`, only those referencing tables.
    fn foreign_key_violation(&self, tables: Option<&BTreeSet<String>>) -> Result<bool> {
        match tables {
            None => Ok(self.conn.prepare("PRAGMA foreign_key_check")?.exists([])?),
            Some(tables) => {
                for table in tables {
                    if self.conn.prepare(&format!("PRAGMA foreign_key_check({})", quote(table)))?.exists([])? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    /// The commit-time audit: the rows this transaction wrote, then SQLite's
    /// relationship check. Rows written here were checked row by row above, so a
    /// relationship can only have broken through a delete: only tables that
    /// reference an entity this transaction deleted from are re-checked, which keeps
    /// a transaction's cost proportional to its size, not the world's.
    pub(super) fn audit_touched(&mut self) -> Result<()> {
        let touched = std::mem::take(&mut self.touched);
        for (name, key) in &touched {
            let entity = self.contract.entity(name).expect("touched entity");
            if entity.relationships.is_empty() {
                // Every payload written here was validated and keyed as it was
                // written (`mutate`); with no relationships nothing else can break.
                continue;
            }
            let payload: Option<String> = self
                .conn
                .prepare_cached(&format!("SELECT payload FROM {} WHERE _key = ?1", quote(name)))?
                .query_row([key], |r| r.get(0))
                .optional()?;
            if let Some(payload) = payload {
                if let Some(error) = self.row_violation(entity, key, &payload, true) {
                    return Err(error.into());
                }
            }
        }
        let deleted = std::mem::take(&mut self.deleted_from);
        if !deleted.is_empty() {
            let referencing: BTreeSet<String> = self
                .contract
                .entities
                .iter()
                .filter(|e| e.relationships.iter().any(|r| deleted.contains(&r.target)))
                .map(|e| e.name.clone())
                .collect();
            if self.foreign_key_violation(Some(&referencing))? {
                return Err(ContractError::new("foreign_key", "Persisted SQLite relationship check failed", "").into());
            }
        }
        Ok(())
    }
}

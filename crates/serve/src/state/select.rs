//! Reading a session: every row, a row by key, rows filtered and paged (an indexed
//! equality through its serving index, else a scan of folded columns cached until the
//! next write), the grader's prefilter and index-only counts, and the whole state.

use super::db::{exact_expression, fold_expression, matches, Column, Db, Filter};
use super::template::parse_payload;
use super::WorldState;
use crate::page::python_slice;
use gateway_world::compiler::quote;
use gateway_world::error::ContractError;
use gateway_world::json::{python_str, Map, Value};
use gateway_world::store::ARRAY_FOLD;
use gateway_world::Result;
use rusqlite::OptionalExtension;
use std::sync::Arc;

impl WorldState {
    /// Every row of an entity in key order.
    pub fn rows(&self, entity: &str) -> Result<Vec<Value>> {
        let sql = format!("SELECT payload FROM {} ORDER BY _key", quote(entity));
        self.db().read(|conn| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map([], |r| r.get::<_, String>(0))?;
            rows.map(|r| r.map(|text| parse_payload(&text))).collect()
        })
    }

    /// The rows of `entity` that may equal every `(dotted path, value)` condition,
    /// each with its stored key: a superset of the exact matches, for a caller that
    /// re-checks them with its own equality (the task grader's). SQLite's
    /// `json_extract` narrows on string and integer conditions — it cannot tell
    /// `true` from `1`, which only widens the superset — and a string condition on
    /// a path with a serving index is answered by that index, the whole primary key
    /// by the stored key; a condition it cannot
    /// narrow on (null, a float, a bool, a container, a path through something
    /// other than plain object keys) selects every row.
    pub fn rows_maybe_equal(&self, entity: &str, conditions: &Map) -> Result<Vec<(String, Value)>> {
        const EXACT_INT: u64 = 1 << 53;
        let plain = |path: &str| {
            path.split('.').all(|part| {
                part.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                    && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
        };
        let mut clauses = Vec::new();
        let mut params: Vec<rusqlite::types::Value> = Vec::new();
        // Every primary-key field named with a string or an integer: one row at most,
        // by its stored key (a value the key's schema refuses cannot be stored there).
        if let Some(declared) = self.shared.contract.entity(entity) {
            let key: Option<Map> = declared
                .primary_key
                .iter()
                .map(|field| match conditions.get(field) {
                    Some(value @ (Value::Str(_) | Value::Int(_))) => Some((field.clone(), value.clone())),
                    _ => None,
                })
                .collect();
            if let Some(encoded) = key.and_then(|key| gateway_world::store::key_of(declared, &Value::Object(key), true).ok()) {
                params.push(rusqlite::types::Value::Text(encoded));
                clauses.push(format!("_key = ?{}", params.len()));
            }
        }
        let indexed = self.shared.indexed.get(entity);
        for (path, wanted) in conditions {
            if let (Value::Str(text), Some(paths)) = (wanted, indexed) {
                if paths.iter().any(|p| p == path) {
                    // A serving index answers: the fold (lower-cased text) of an
                    // equal string is the fold of the wanted one.
                    params.push(rusqlite::types::Value::Text(text.to_lowercase()));
                    clauses.push(format!("{} = ?{}", fold_expression(path), params.len()));
                    continue;
                }
            }
            let bound = match wanted {
                Value::Str(text) => rusqlite::types::Value::Text(text.to_string()),
                Value::Int(n) if n.unsigned_abs() < EXACT_INT => rusqlite::types::Value::Integer(*n),
                _ => continue,
            };
            if !plain(path) {
                continue;
            }
            params.push(rusqlite::types::Value::Text(format!("$.{path}")));
            params.push(bound);
            clauses.push(format!("json_extract(payload, ?{}) = ?{}", params.len() - 1, params.len()));
        }
        let filter = if clauses.is_empty() { String::new() } else { format!(" WHERE {}", clauses.join(" AND ")) };
        let sql = format!("SELECT _key, payload FROM {}{filter} ORDER BY _key", quote(entity));
        self.db().read(|conn| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows =
                statement.query_map(rusqlite::params_from_iter(params.iter()), |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            rows.map(|r| r.map(|(key, text)| (key, parse_payload(&text)))).collect()
        })
    }

    /// How many rows of `entity` hold exactly each `(dotted path, string)`: what an
    /// assertions grader's `count` check with such a `where` asks. Answered from the
    /// serving indexes alone when every path has one (the folded value narrows, the
    /// exact value the index carries decides: no row is read, none decoded); None when
    /// a path has none, or the wanted text could pass for a container's JSON.
    pub fn count_equal(&self, entity: &str, conditions: &[(&str, &str)]) -> Result<Option<i64>> {
        let Some(indexed) = self.shared.indexed.get(entity).filter(|_| self.shared.contract.entity(entity).is_some()) else {
            return Ok(None);
        };
        let answerable =
            |(path, wanted): &&(&str, &str)| indexed.iter().any(|p| p == path) && !wanted.starts_with('{') && !wanted.starts_with('[');
        if conditions.is_empty() || !conditions.iter().all(|c| answerable(&c)) {
            return Ok(None);
        }
        let mut clauses = Vec::new();
        let mut params = Vec::new();
        for (path, wanted) in conditions {
            params.push(wanted.to_lowercase());
            clauses.push(format!("{} = ?{}", fold_expression(path), params.len()));
            params.push(wanted.to_string());
            clauses.push(format!("{} = ?{}", exact_expression(path), params.len()));
        }
        let sql = format!("SELECT COUNT(*) FROM {} WHERE {}", quote(entity), clauses.join(" AND "));
        let count = self.db().read(|conn| conn.prepare_cached(&sql)?.query_row(rusqlite::params_from_iter(params.iter()), |r| r.get(0)))?;
        Ok(Some(count))
    }

    /// The row at a primary key (an object of exactly the key fields).
    pub fn get(&self, entity: &str, key: &Value) -> Result<Option<Value>> {
        let declared = self
            .shared
            .contract
            .entity(entity)
            .ok_or_else(|| ContractError::new("entity", "Unknown entity type", "").with("entity", Value::str(entity)))?;
        let encoded = gateway_world::store::key_of(declared, key, true)?;
        self.row_at(entity, &encoded)
    }

    fn row_at(&self, entity: &str, encoded: &str) -> Result<Option<Value>> {
        let sql = format!("SELECT payload FROM {} WHERE _key = ?1", quote(entity));
        self.db().read(|conn| {
            conn.prepare_cached(&sql)?.query_row([encoded], |r| r.get::<_, String>(0)).optional().map(|p| p.map(|t| parse_payload(&t)))
        })
    }

    /// Rows of `entity` passing every filter, in key order: the total and the page
    /// `[offset, offset + limit)` (Python slice semantics), or every match without a window.
    pub fn select(&self, entity: &str, filters: &[Filter], window: Option<(i64, i64)>) -> Result<(i64, Vec<Value>)> {
        let db = self.db();
        if let Some((filter, expression)) = self.driving_filter(&db, entity, filters)? {
            return select_indexed(&db, entity, filters, filter, &expression, window);
        }
        if filters.is_empty() {
            return select_all(&db, entity, window);
        }
        // Streaming scan over folded columns: no payload is decoded unless it is on the page.
        let columns: Vec<Arc<Column>> = filters.iter().map(|f| db.column(entity, &f.path)).collect::<Result<_>>()?;
        if columns.iter().any(|c| c.generation == u64::MAX || c.generation != columns[0].generation) {
            // A write landed between two column scans: answer from the rows themselves.
            let matched: Vec<Value> = self.rows(entity)?.into_iter().filter(|r| matches(r, filters)).collect();
            return Ok(slice_all(matched, window));
        }
        let matching = matching_positions(&db, entity, filters, &columns);
        let total = matching.len() as i64;
        let (start, stop) = match window {
            Some((offset, limit)) => python_slice(total, offset, offset.saturating_add(limit)),
            None => (0, matching.len()),
        };
        let sql = format!("SELECT payload FROM {} WHERE _key = ?1", quote(entity));
        let keys = &columns[0].keys;
        let rows = db.read(|conn| {
            let mut statement = conn.prepare_cached(&sql)?;
            let mut rows = Vec::with_capacity(stop - start);
            for index in &matching[start..stop] {
                if let Some(text) = statement.query_row([&keys[*index as usize]], |r| r.get::<_, String>(0)).optional()? {
                    rows.push(parse_payload(&text));
                }
            }
            Ok(rows)
        })?;
        Ok((total, rows))
    }

    /// The filter the serving index answers, with its folded expression: when every
    /// filter is an indexed equality (a mix with substring filters is answered from
    /// the folded columns instead) and no row holds an array at its path (an array
    /// matches element by element, which the index cannot answer).
    fn driving_filter<'f>(&self, db: &Db, entity: &str, filters: &'f [Filter]) -> Result<Option<(&'f Filter, String)>> {
        let indexed = |f: &Filter| f.mode == "equals" && self.shared.indexed.get(entity).is_some_and(|paths| paths.contains(&f.path));
        let Some(filter) = filters.first().filter(|_| filters.iter().all(indexed)) else { return Ok(None) };
        let expression = fold_expression(&filter.path);
        let sql = format!("SELECT EXISTS(SELECT 1 FROM {} WHERE {expression} = ?1)", quote(entity));
        let has_arrays: bool = db.read(|conn| conn.prepare_cached(&sql)?.query_row([ARRAY_FOLD], |r| r.get(0)))?;
        Ok((!has_arrays).then_some((filter, expression)))
    }

    /// Every entity keyed the way the original's `/__world/state` keys it.
    pub fn dump(&self) -> Result<Map> {
        let mut out = Map::default();
        for entity in &self.shared.contract.entities {
            let mut keyed = Map::default();
            for row in self.rows(&entity.name)? {
                let key = entity.primary_key.iter().map(|f| python_str(row.get(f).unwrap_or(&Value::Null))).collect::<Vec<_>>().join(":");
                keyed.insert(key, row);
            }
            out.insert(entity.name.clone(), Value::Object(keyed));
        }
        Ok(out)
    }
}

/// [`WorldState::select`] driven by the index on `filter` (its folded `expression`):
/// the page read straight from the index when it is the only filter, else every
/// indexed match checked against the other filters.
fn select_indexed(
    db: &Db,
    entity: &str,
    filters: &[Filter],
    filter: &Filter,
    expression: &str,
    window: Option<(i64, i64)>,
) -> Result<(i64, Vec<Value>)> {
    let table = quote(entity);
    if filters.len() > 1 {
        let sql = format!("SELECT payload FROM {table} WHERE {expression} = ?1 ORDER BY _key");
        let matched = db.read(|conn| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map([&filter.wanted], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for row in rows {
                let row = parse_payload(&row?);
                if matches(&row, filters) {
                    out.push(row);
                }
            }
            Ok(out)
        })?;
        return Ok(slice_all(matched, window));
    }
    let total = indexed_count(db, entity, filter, expression)?;
    let (start, stop) = match window {
        Some((offset, limit)) => python_slice(total, offset, offset.saturating_add(limit)),
        None => (0, total as usize),
    };
    let page_sql = format!("SELECT payload FROM {table} WHERE {expression} = ?1 ORDER BY _key LIMIT ?2 OFFSET ?3");
    let rows = db.read(|conn| {
        let mut statement = conn.prepare_cached(&page_sql)?;
        let rows = statement.query_map(rusqlite::params![filter.wanted, (stop - start) as i64, start as i64], |r| r.get::<_, String>(0))?;
        rows.map(|r| r.map(|t| parse_payload(&t))).collect::<rusqlite::Result<Vec<_>>>()
    })?;
    // The index answers Python's semantics exactly; re-check the page anyway.
    Ok((total, rows.into_iter().filter(|r| matches(r, filters)).collect()))
}

/// How many rows the index finds for `filter`, cached until the next write.
fn indexed_count(db: &Db, entity: &str, filter: &Filter, expression: &str) -> Result<i64> {
    let count_key = (entity.to_string(), filter.path.clone(), filter.wanted.clone());
    let started = db.generation();
    let cached =
        db.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&count_key).filter(|(g, _)| *g == started).map(|(_, n)| *n);
    if let Some(total) = cached {
        return Ok(total);
    }
    let count_sql = format!("SELECT COUNT(*) FROM {} WHERE {expression} = ?1", quote(entity));
    let total: i64 = db.read(|conn| conn.prepare_cached(&count_sql)?.query_row([&filter.wanted], |r| r.get(0)))?;
    if db.generation() == started {
        db.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(count_key, (started, total));
    }
    Ok(total)
}

/// [`WorldState::select`] without filters: the page in key order, and the row count.
fn select_all(db: &Db, entity: &str, window: Option<(i64, i64)>) -> Result<(i64, Vec<Value>)> {
    let table = quote(entity);
    let total: i64 = db.read(|conn| conn.prepare_cached(&format!("SELECT COUNT(*) FROM {table}"))?.query_row([], |r| r.get(0)))?;
    let (start, stop) = match window {
        Some((offset, limit)) => python_slice(total, offset, offset.saturating_add(limit)),
        None => (0, total as usize),
    };
    let sql = format!("SELECT payload FROM {table} ORDER BY _key LIMIT ?1 OFFSET ?2");
    let rows = db.read(|conn| {
        let mut statement = conn.prepare_cached(&sql)?;
        let rows = statement.query_map([(stop - start) as i64, start as i64], |r| r.get::<_, String>(0))?;
        rows.map(|r| r.map(|t| parse_payload(&t))).collect()
    })?;
    Ok((total, rows))
}

/// The positions (in the columns' key order) of the rows every filter marks, from
/// the folded columns of one generation; cached until the next write.
fn matching_positions(db: &Db, entity: &str, filters: &[Filter], columns: &[Arc<Column>]) -> Arc<Vec<u32>> {
    let generation = columns[0].generation;
    let result_key = (
        entity.to_string(),
        filters.iter().map(|f| format!("{}\u{0}{}\u{0}{}", f.path, f.mode, f.wanted)).collect::<Vec<_>>().join("\u{1}"),
    );
    let cached = db
        .matches
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&result_key)
        .filter(|(g, _)| *g == generation)
        .map(|(_, m)| m.clone());
    if let Some(matching) = cached {
        return matching;
    }
    let count = columns[0].keys.len();
    let mut passed = vec![true; count];
    for (filter, column) in filters.iter().zip(columns) {
        let mut marks = vec![false; count];
        column.mark(filter, &mut marks);
        passed.iter_mut().zip(marks).for_each(|(p, m)| *p &= m);
    }
    let matching: Arc<Vec<u32>> = Arc::new((0..count as u32).filter(|i| passed[*i as usize]).collect());
    let mut cache = db.matches.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if cache.len() >= 256 {
        cache.clear();
    }
    cache.insert(result_key, (generation, matching.clone()));
    matching
}

fn slice_all(rows: Vec<Value>, window: Option<(i64, i64)>) -> (i64, Vec<Value>) {
    let total = rows.len() as i64;
    match window {
        None => (total, rows),
        Some((offset, limit)) => {
            let (a, b) = python_slice(total, offset, offset.saturating_add(limit));
            (total, rows.into_iter().skip(a).take(b - a).collect())
        }
    }
}

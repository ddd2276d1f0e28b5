//! Read-only SQL on a world's store, for the world's own code: a handler's
//! `ctx.sql(sql, params)` and a tool's `gateway_env.db`. A statement that would
//! write is refused as `raw_write` (writes go through the store, where they are
//! validated, audited and recorded); the rows come back as arrays of cells.

use crate::handlers::CtxError;
use gateway_world::json::{canonical, Value};
use gateway_world::ContractError;
use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::Connection;

/// Run `sql` with `params` (a JSON array) on `conn` if it only reads; one that
/// writes is refused as `raw_write` with `refusal` (saying where writes belong).
pub fn read_only(conn: &Connection, sql: &str, params: &Value, refusal: &str) -> Result<Value, CtxError> {
    let failed = |error: rusqlite::Error| CtxError::Other(error.to_string());
    let mut statement = conn.prepare(sql).map_err(failed)?;
    if !statement.readonly() {
        return Err(CtxError::Contract(ContractError::new("raw_write", refusal, "").detail()));
    }
    let bound: Vec<Sql> = params
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| match v {
            Value::Null => Sql::Null,
            Value::Bool(b) => Sql::Integer(i64::from(*b)),
            Value::Int(n) => Sql::Integer(*n),
            Value::Float(f) => Sql::Real(*f),
            Value::Str(s) => Sql::Text(s.clone()),
            other => Sql::Text(canonical(other)),
        })
        .collect();
    let columns = statement.column_count();
    let mut rows = statement.query(rusqlite::params_from_iter(bound)).map_err(failed)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(failed)? {
        let mut cells = Vec::with_capacity(columns);
        for i in 0..columns {
            cells.push(match row.get_ref(i).map_err(failed)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => Value::Int(n),
                ValueRef::Real(f) => Value::Float(f),
                ValueRef::Text(t) => Value::Str(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::Str(hex::encode(b)),
            });
        }
        out.push(Value::Array(cells));
    }
    Ok(Value::Array(out))
}

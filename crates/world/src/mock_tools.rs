//! A mock-tools world's SQLite database (`db/schema.sql`, `db/seed.sql`): built in a
//! scratch file, its tables and row counts, and rows as the `INSERT` statements an
//! import appends to its seed. What `data show` reads and `data import` writes.

use crate::error::{ContractError, Error, Result};
use crate::json::{object, Value};
use crate::plan::Rows;
use crate::rows::plain;
use rusqlite::Connection;
use std::path::Path;

/// Every user table's columns, in declaration order (tables in creation order).
pub fn sqlite_columns(conn: &Connection) -> rusqlite::Result<Vec<(String, Vec<String>)>> {
    let mut statement = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?;
    let tables: Vec<String> = statement.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::new();
    for table in tables {
        let mut info = conn.prepare(&format!("PRAGMA table_info({})", sql_ident(&table)))?;
        let columns: Vec<String> = info.query_map([], |r| r.get(1))?.collect::<rusqlite::Result<_>>()?;
        out.push((table, columns));
    }
    Ok(out)
}

/// A SQLite identifier, quoted.
pub fn sql_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn sql_literal(value: &Value) -> String {
    match value {
        Value::Null => "NULL".into(),
        Value::Bool(b) => if *b { "1" } else { "0" }.into(),
        Value::Int(n) => n.to_string(),
        Value::Float(f) => crate::json::python_float_str(*f),
        Value::Str(text) => format!("'{}'", text.replace('\'', "''")),
        other => crate::json::python_str(other),
    }
}

/// SQL text that seeds `rows` into tables with these `columns`.
pub fn sqlite_statements(columns: &[(String, Vec<String>)], rows: &Rows, mode: &str) -> Result<Vec<String>, ContractError> {
    let mut sorted: Vec<&str> = columns.iter().map(|(t, _)| t.as_str()).collect();
    sorted.sort();
    for (table, listed) in rows {
        let Some((_, declared)) = columns.iter().find(|(t, _)| t == table) else {
            let names = if sorted.is_empty() { "none".to_string() } else { sorted.join(", ") };
            return Err(ContractError::new("table", format!("No table {table} in db/schema.sql; tables: {names}"), format!("/{table}")));
        };
        for (index, row) in listed.iter().enumerate() {
            let Some(map) = row.as_object() else {
                return Err(ContractError::new("rows", "A row must be an object", format!("/{table}/{index}")));
            };
            for (column, value) in map {
                if !declared.contains(column) {
                    return Err(ContractError::new(
                        "column",
                        format!("Column {column} is not in table {table}; columns: {}", declared.join(", ")),
                        format!("/{table}/{index}/{column}"),
                    ));
                }
                if matches!(value, Value::Array(_) | Value::Object(_)) {
                    return Err(ContractError::new(
                        "value",
                        format!("Column {column} of {table} takes a scalar; encode nested values as text yourself"),
                        format!("/{table}/{index}/{column}"),
                    ));
                }
            }
        }
    }
    let verb = if mode == "replace" { "INSERT" } else { "INSERT OR REPLACE" };
    let mut statements = Vec::new();
    for (table, listed) in rows {
        let quoted = sql_ident(table);
        if mode == "replace" {
            statements.push(format!("DELETE FROM {quoted};"));
        }
        for row in listed {
            let map = row.as_object().expect("checked");
            if map.is_empty() {
                statements.push(format!("{verb} INTO {quoted} DEFAULT VALUES;"));
                continue;
            }
            let names: Vec<String> = map.keys().map(|c| sql_ident(c)).collect();
            let values: Vec<String> = map.values().map(sql_literal).collect();
            statements.push(format!("{verb} INTO {quoted} ({}) VALUES ({});", names.join(", "), values.join(", ")));
        }
    }
    Ok(statements)
}

/// Row counts of every user table of a mock-tools database, in creation order.
pub fn sqlite_counts(conn: &Connection) -> Result<Value> {
    let mut out = Vec::new();
    for (table, _) in sqlite_columns(conn)? {
        let count: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM {}", sql_ident(&table)), [], |r| r.get(0))?;
        out.push((table, Value::Int(count)));
    }
    Ok(object(out))
}

/// A mock-tools world's starting database: `db/schema.sql` then `db/seed.sql`.
pub fn materialize_mock_tools(root: &Path, database: &Path) -> Result<Connection> {
    let schema = root.join("db/schema.sql");
    let seed = root.join("db/seed.sql");
    if !schema.is_file() {
        return Err(plain("mock-tools bundle is missing db/schema.sql"));
    }
    let conn = Connection::open(database)?;
    let failed = || plain("Failed to build seed database; check db/schema.sql and db/seed.sql");
    for script in [schema, seed] {
        if script.is_file() {
            let text = std::fs::read_to_string(&script).map_err(|e| Error::io(e, &script))?;
            conn.execute_batch(&text).map_err(|_| failed())?;
        }
    }
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_quote_like_the_original() {
        let columns = vec![("users".to_string(), vec!["id".to_string(), "name".to_string(), "age".to_string()])];
        let mut rows = Rows::new();
        let row = crate::json::parse(r#"{"id": "u1", "name": "O'Hara", "age": 3.5}"#).unwrap().value;
        rows.insert("users".into(), vec![row, Value::Object(Default::default())]);
        assert_eq!(
            sqlite_statements(&columns, &rows, "append").unwrap(),
            [
                "INSERT OR REPLACE INTO \"users\" (\"id\", \"name\", \"age\") VALUES ('u1', 'O''Hara', 3.5);",
                "INSERT OR REPLACE INTO \"users\" DEFAULT VALUES;"
            ]
        );
        let replaced = sqlite_statements(&columns, &rows, "replace").unwrap();
        assert_eq!(replaced[0], "DELETE FROM \"users\";");
        let mut bad = Rows::new();
        bad.insert("users".into(), vec![crate::json::parse(r#"{"zzz": 1}"#).unwrap().value]);
        assert_eq!(
            sqlite_statements(&columns, &bad, "append").unwrap_err().to_string(),
            "column at /users/0/zzz: Column zzz is not in table users; columns: id, name, age"
        );
    }
}

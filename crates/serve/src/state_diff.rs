//! A session database read as a file: the row-level diff of its state against the
//! state it started from (a grade's "what changed"), and the dump a grader reads of
//! a stored final state (a regrade's input, no contract at hand).
//!
//! The diff attaches the start database read-only to a read-only connection of the
//! current one. The rows it compares are those the store's lineage says either side
//! wrote since they parted (the batches only one of them holds), so a grade's diff
//! costs what the agent wrote, not what the world holds; each is looked up by its
//! stored key (`_key`, the primary key) on both sides, canonical payload text telling
//! changed from unchanged, and only the rows listed are parsed, to name their changed
//! fields. Its output is bounded: per entity at most `rows` rows of each kind are
//! listed, with exact counts and `truncated` when more changed than are listed.

use crate::state::WorldState;
use gateway_world::compiler::quote;
use gateway_world::json::{self, python_str, Map, Value};
use gateway_world::Result;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Rows of each kind (added, removed, changed) a diff lists per entity by default.
pub const DIFF_ROWS: usize = 50;

/// A row's key as the state dump spells it: the primary key's values (`python_str`)
/// joined with `:`, read back from the stored key (`canonical([values])`).
pub fn dump_key(stored: &str) -> String {
    match json::parse_clean(stored) {
        Some(Value::Array(values)) => values.iter().map(python_str).collect::<Vec<_>>().join(":"),
        _ => stored.to_string(),
    }
}

fn payload(text: &str) -> Value {
    json::parse_clean(text).unwrap_or(Value::Null)
}

/// `(dotted path, before, after)` of every member that differs, objects compared
/// member by member (arrays and scalars whole); a side without the member has None.
fn changed_fields(before: &Value, after: &Value, prefix: &str, out: &mut Vec<(String, Option<Value>, Option<Value>)>) {
    let (Some(old), Some(new)) = (before.as_object(), after.as_object()) else {
        if !json::json_equal(before, after) {
            out.push((prefix.to_string(), Some(before.clone()), Some(after.clone())));
        }
        return;
    };
    let path = |key: &str| if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") };
    for (key, was) in old {
        match new.get(key) {
            Some(now) if json::canonical(was) == json::canonical(now) => {}
            Some(now) if was.as_object().is_some() && now.as_object().is_some() => changed_fields(was, now, &path(key), out),
            Some(now) => out.push((path(key), Some(was.clone()), Some(now.clone()))),
            None => out.push((path(key), Some(was.clone()), None)),
        }
    }
    for (key, now) in new {
        if !old.contains_key(key) {
            out.push((path(key), None, Some(now.clone())));
        }
    }
}

/// One entity's differing rows as they are found: every one counted, the first
/// `limit` of each kind kept (only those parsed).
struct EntityDiff {
    limit: usize,
    counts: [i64; 3],
    added: Vec<Value>,
    removed: Vec<Value>,
    changed: Vec<Value>,
}

impl EntityDiff {
    fn new(limit: usize) -> EntityDiff {
        EntityDiff { limit, counts: [0; 3], added: Vec::new(), removed: Vec::new(), changed: Vec::new() }
    }

    /// The row at stored key `key`, as it was at the start and as it is now.
    fn add(&mut self, key: &str, was: Option<&str>, now: Option<&str>) {
        let whole = |text: &str| json::object([("key", Value::Str(dump_key(key))), ("row", payload(text))]);
        match (was, now) {
            (None, Some(now)) => {
                self.counts[0] += 1;
                if self.added.len() < self.limit {
                    self.added.push(whole(now));
                }
            }
            (Some(was), None) => {
                self.counts[1] += 1;
                if self.removed.len() < self.limit {
                    self.removed.push(whole(was));
                }
            }
            (Some(was), Some(now)) if was != now => {
                self.counts[2] += 1;
                if self.changed.len() < self.limit {
                    self.changed.push(changed_row(key, was, now));
                }
            }
            _ => {}
        }
    }

    /// The entity's diff, or None when nothing of it changed.
    fn finish(self) -> Option<(Value, [i64; 3], bool)> {
        if self.counts.iter().all(|n| *n == 0) {
            return None;
        }
        let truncated = self.counts.iter().any(|n| *n as usize > self.limit);
        let diff = json::object([
            ("added", Value::Array(self.added)),
            ("removed", Value::Array(self.removed)),
            ("changed", Value::Array(self.changed)),
            ("counts", counts_value(self.counts)),
            ("truncated", Value::Bool(truncated)),
        ]);
        Some((diff, self.counts, truncated))
    }
}

/// A changed row: its key and each changed field `{before?, after?}`.
fn changed_row(key: &str, was: &str, now: &str) -> Value {
    let mut fields = Vec::new();
    changed_fields(&payload(was), &payload(now), "", &mut fields);
    let fields: Map = fields
        .into_iter()
        .map(|(path, before, after)| {
            let mut change = Map::default();
            if let Some(before) = before {
                change.insert("before".into(), before);
            }
            if let Some(after) = after {
                change.insert("after".into(), after);
            }
            (path, Value::Object(change))
        })
        .collect();
    json::object([("key", Value::Str(dump_key(key))), ("fields", Value::Object(fields))])
}

/// The keys each entity's rows may differ at between the two databases: those the
/// lineage of a batch only one side holds names. Every write of the store is a batch
/// with a lineage row per mutation, in the same transaction, so a row that neither
/// side wrote since they parted is the same on both: the diff costs what was written,
/// not what the world holds.
fn touched_keys(conn: &Connection) -> rusqlite::Result<BTreeMap<String, BTreeSet<String>>> {
    let mut touched: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (this, other) in [("main", "start"), ("start", "main")] {
        let only_here = format!(
            "SELECT b.id FROM {this}._gateway_batches AS b WHERE NOT EXISTS (SELECT 1 FROM {other}._gateway_batches AS o WHERE o.id = b.id)"
        );
        let batches: Vec<String> = conn.prepare(&only_here)?.query_map([], |row| row.get(0))?.collect::<rusqlite::Result<_>>()?;
        let mut lineage = conn.prepare(&format!("SELECT entity, key FROM {this}._gateway_lineage WHERE batch = ?1"))?;
        for batch in batches {
            let rows = lineage.query_map([&batch], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))?;
            for row in rows {
                let (entity, key) = row?;
                touched.entry(entity).or_default().insert(key);
            }
        }
    }
    Ok(touched)
}

/// One entity's diff over the keys its lineage names (in key order, as `_key` sorts).
fn entity_diff(
    conn: &Connection,
    entity: &str,
    keys: &BTreeSet<String>,
    limit: usize,
) -> rusqlite::Result<Option<(Value, [i64; 3], bool)>> {
    let table = quote(entity);
    let mut now = conn.prepare(&format!("SELECT payload FROM main.{table} WHERE _key = ?1"))?;
    let mut was = conn.prepare(&format!("SELECT payload FROM start.{table} WHERE _key = ?1"))?;
    let mut diff = EntityDiff::new(limit);
    for key in keys {
        let after: Option<String> = now.query_row([key], |row| row.get(0)).optional()?;
        let before: Option<String> = was.query_row([key], |row| row.get(0)).optional()?;
        diff.add(key, before.as_deref(), after.as_deref());
    }
    Ok(diff.finish())
}

/// One entity's diff by reading both tables whole (what the lineage spares; the
/// tests hold the two to each other).
#[cfg(test)]
fn entity_diff_scanned(conn: &Connection, entity: &str, limit: usize) -> rusqlite::Result<Option<(Value, [i64; 3], bool)>> {
    let table = quote(entity);
    let mut diff = EntityDiff::new(limit);
    let sql = format!(
        "SELECT x._key, y.payload, x.payload FROM main.{table} AS x LEFT JOIN start.{table} AS y ON y._key = x._key \
         UNION ALL SELECT y._key, y.payload, NULL FROM start.{table} AS y WHERE NOT EXISTS (SELECT 1 FROM main.{table} AS x WHERE x._key = y._key) \
         ORDER BY 1"
    );
    let mut statement = conn.prepare(&sql)?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let (key, was, now): (String, Option<String>, Option<String>) = (row.get(0)?, row.get(1)?, row.get(2)?);
        diff.add(&key, was.as_deref(), now.as_deref());
    }
    Ok(diff.finish())
}

fn counts_value(counts: [i64; 3]) -> Value {
    json::object([("added", Value::Int(counts[0])), ("removed", Value::Int(counts[1])), ("changed", Value::Int(counts[2]))])
}

/// The diff of the database at `current` against the one at `start` (both the same
/// contract's), over `entities`: `{entities: {name: {added: [{key, row}], removed:
/// [{key, row}], changed: [{key, fields: {path: {before?, after?}}}], counts,
/// truncated}}, counts, truncated}` — an entity nothing of which changed is left
/// out, and at most `rows` rows of each kind are listed per entity.
pub fn diff_files(current: &Path, start: &Path, entities: &[String], rows: usize) -> Result<Value> {
    let conn = Connection::open_with_flags(current, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    diff_on(conn, &start.to_string_lossy(), entities, rows)
}

/// [`diff_files`] on an open connection to the current state, the start attached by
/// the name `start` (a path, or a live overlay's name the copy-on-write VFS opens).
fn diff_on(conn: Connection, start: &str, entities: &[String], rows: usize) -> Result<Value> {
    diff_with(conn, start, entities, |conn| {
        let touched = touched_keys(conn)?;
        Ok(move |conn: &Connection, entity: &str| match touched.get(entity) {
            Some(keys) => entity_diff(conn, entity, keys, rows),
            None => Ok(None),
        })
    })
}

/// The diff assembled from each entity's (`per_entity`, made once the pair of
/// snapshots is open): totals over the entities, the changed ones listed.
fn diff_with<F>(
    conn: Connection,
    start: &str,
    entities: &[String],
    per_entity: impl FnOnce(&Connection) -> rusqlite::Result<F>,
) -> Result<Value>
where
    F: Fn(&Connection, &str) -> rusqlite::Result<Option<(Value, [i64; 3], bool)>>,
{
    conn.execute("ATTACH DATABASE ?1 AS start", [start])?;
    // One read transaction over both files: a consistent pair of snapshots.
    conn.execute_batch("BEGIN")?;
    let differ = per_entity(&conn)?;
    let mut by_entity = Map::default();
    let mut totals = [0i64; 3];
    let mut truncated = false;
    for entity in entities {
        if let Some((diff, counts, cut)) = differ(&conn, entity)? {
            by_entity.insert(entity.clone(), diff);
            for (total, n) in totals.iter_mut().zip(counts) {
                *total += n;
            }
            truncated |= cut;
        }
    }
    conn.execute_batch("COMMIT")?;
    Ok(json::object([("entities", Value::Object(by_entity)), ("counts", counts_value(totals)), ("truncated", Value::Bool(truncated))]))
}

/// The entity tables of a session database: every table with the `_key` and
/// `payload` columns the generated DDL gives an entity, in name order.
pub fn entity_tables(conn: &Connection) -> Result<Vec<String>> {
    let mut statement = conn.prepare(
        "SELECT m.name FROM sqlite_master AS m WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
         AND (SELECT count(*) FROM pragma_table_info(m.name) AS c WHERE c.name IN ('_key', 'payload')) = 2 ORDER BY m.name",
    )?;
    let names = statement.query_map([], |row| row.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names)
}

/// A stored database file opened to be read only and never changed under us
/// (`immutable=1`: no locks, and no `-wal`/`-shm` files written beside it — it may
/// lie in an object store).
fn open_stored(path: &Path) -> Result<Connection> {
    let text = path.to_string_lossy().replace('%', "%25").replace('?', "%3f").replace('#', "%23");
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    Ok(Connection::open_with_flags(format!("file:{text}?immutable=1"), flags)?)
}

/// The state dump of a stored session database file (an export: nothing writes it)
/// as a grader reads it, without its contract: `{entity: {key: row}}` for `entities`
/// (every entity table when None; an entity the file lacks has no rows), keys
/// spelled as the host's dump spells them.
pub fn dump_file(path: &Path, entities: Option<&[String]>) -> Result<Map> {
    let conn = open_stored(path)?;
    let tables = entity_tables(&conn)?;
    let wanted: Vec<String> = match entities {
        Some(names) => names.to_vec(),
        None => tables.clone(),
    };
    let mut out = Map::default();
    for entity in wanted {
        let mut keyed = Map::default();
        if tables.contains(&entity) {
            let mut statement = conn.prepare(&format!("SELECT _key, payload FROM {} ORDER BY _key", quote(&entity)))?;
            let rows = statement.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))?;
            for row in rows {
                let (key, text) = row?;
                keyed.insert(dump_key(&key), payload(&text));
            }
        }
        out.insert(entity, Value::Object(keyed));
    }
    Ok(out)
}

impl WorldState {
    /// What changed in this session's state since `start` (a state of the same
    /// template: the task's starting state built apart); see [`diff_files`].
    pub fn diff_from(&self, start: &WorldState, rows: usize) -> Result<Value> {
        diff_on(self.read_connection()?, &start.attach_name(), &self.entity_names(), rows)
    }

    /// What changed in this session's state since the template it was copied from
    /// (a session whose task adds nothing to it); see [`diff_files`].
    pub fn diff_from_template(&self, rows: usize) -> Result<Value> {
        diff_on(self.read_connection()?, &self.template().path().to_string_lossy(), &self.entity_names(), rows)
    }

    fn entity_names(&self) -> Vec<String> {
        self.contract().entities.iter().map(|e| e.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json::object;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn helpdesk() -> WorldState {
        let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
        WorldState::open(&world, BTreeMap::new()).expect("the example opens")
    }

    fn text(value: &Value) -> String {
        json::dumps(value, json::DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false })
    }

    fn key(id: i64) -> Value {
        object([("id", Value::Int(id))])
    }

    #[test]
    fn an_untouched_session_has_an_empty_diff() {
        let state = helpdesk();
        assert_eq!(
            text(&state.diff_from_template(DIFF_ROWS).unwrap()),
            r#"{"entities": {}, "counts": {"added": 0, "removed": 0, "changed": 0}, "truncated": false}"#
        );
    }

    #[test]
    fn added_removed_and_changed_rows_are_named_with_their_fields() {
        let state = helpdesk();
        state
            .write(
                |store| {
                    store.update(
                        "tickets",
                        &key(101),
                        &object([("status", Value::str("solved")), ("tags", Value::Array(vec![]))]),
                        None,
                    )?;
                    store.delete("tickets", &key(104), None)?;
                    store.insert(
                        "customers",
                        &object([
                            ("id", Value::str("C9")),
                            ("name", Value::str("New Person")),
                            ("email", Value::str("new@example.com")),
                            ("tier", Value::str("free")),
                            ("created_at", Value::str("2026-01-01T00:00:00Z")),
                        ]),
                        None,
                    )
                },
                None,
            )
            .unwrap();
        let diff = state.diff_from_template(DIFF_ROWS).unwrap();
        assert_eq!(text(diff.get("counts").unwrap()), r#"{"added": 1, "removed": 1, "changed": 1}"#);
        let tickets = diff.get("entities").and_then(|e| e.get("tickets")).unwrap();
        assert_eq!(
            text(tickets.get("changed").unwrap()),
            r#"[{"key": "101", "fields": {"status": {"before": "open", "after": "solved"}, "tags": {"before": ["sso", "login"], "after": []}}}]"#
        );
        assert_eq!(
            text(&tickets.get("removed").unwrap().as_array().unwrap()[0].get("row").unwrap().get("status").cloned().unwrap()),
            r#""solved""#
        );
        assert_eq!(text(&tickets.get("removed").unwrap().as_array().unwrap()[0].get("key").cloned().unwrap()), r#""104""#);
        let customers = diff.get("entities").and_then(|e| e.get("customers")).unwrap();
        assert_eq!(text(customers.get("counts").unwrap()), r#"{"added": 1, "removed": 0, "changed": 0}"#);
        assert_eq!(customers.get("added").unwrap().as_array().unwrap()[0].get("key").and_then(Value::as_str), Some("C9"));

        // Against a start of its own (a session of the same template): the same diff.
        let start = WorldState::session(Arc::clone(state.template())).unwrap();
        assert_eq!(text(&state.diff_from(&start, DIFF_ROWS).unwrap()), text(&diff));
        // And the stored final state reads back as the host's dump reads the live one.
        let exported = tempfile::tempdir().unwrap();
        let file = exported.path().join("final.sqlite");
        state.export(&file).unwrap();
        let dumped = dump_file(&file, None).unwrap();
        assert_eq!(text(&Value::Object(dumped)), text(&Value::Object(state.dump().unwrap())));
        let only = dump_file(&file, Some(&["tickets".to_string(), "nothing".to_string()])).unwrap();
        assert_eq!(only.keys().cloned().collect::<Vec<_>>(), ["tickets", "nothing"]);
        assert_eq!(only.get("nothing").map(text).as_deref(), Some("{}"));
    }

    /// The diff read whole, every row of both sides compared.
    fn scanned(state: &WorldState, start: &WorldState) -> Value {
        let entities = state.entity_names();
        diff_with(state.read_connection().unwrap(), &start.attach_name(), &entities, |_| {
            Ok(|conn: &Connection, entity: &str| entity_diff_scanned(conn, entity, DIFF_ROWS))
        })
        .unwrap()
    }

    fn ticket(id: i64, status: &str) -> Value {
        object([
            ("id", Value::Int(id)),
            ("customer_id", Value::str("C2")),
            ("subject", Value::Str(format!("Ticket {id}"))),
            ("status", Value::str(status)),
            ("priority", Value::Int(2)),
            ("tags", Value::Array(vec![])),
            ("assignee", Value::Null),
            ("opened_at", Value::str("2026-11-24T09:00:00Z")),
        ])
    }

    #[test]
    fn the_lineage_names_every_row_a_full_comparison_finds() {
        let shared = helpdesk().template().clone();
        let seed: gateway_world::plan::Rows =
            [("tickets".to_string(), vec![ticket(500, "open"), ticket(501, "open")])].into_iter().collect();
        // The task's start built apart (its own seed batch), and a session of it.
        let start = WorldState::session(shared.clone()).unwrap();
        start.seed_rows(&seed, "append").unwrap();
        let state = WorldState::session(shared).unwrap();
        state.seed_rows(&seed, "append").unwrap();
        assert_eq!(text(&state.diff_from(&start, DIFF_ROWS).unwrap()), text(&scanned(&state, &start)), "the seed alone");
        state
            .write(
                |store| {
                    store.update("tickets", &key(101), &object([("status", Value::str("pending"))]), None)?;
                    // Changed, then back as it was: written, but no difference.
                    store.update("tickets", &key(102), &object([("status", Value::str("solved"))]), None)?;
                    store.update("tickets", &key(102), &object([("status", Value::str("pending"))]), None)?;
                    // Deleted, then inserted again with another status.
                    store.delete("tickets", &key(500), None)?;
                    store.insert("tickets", &ticket(500, "solved"), None)?;
                    store.delete("tickets", &key(501), None)?;
                    store.delete("tickets", &key(104), None)?;
                    store.insert("tickets", &ticket(777, "open"), None)?;
                    Ok(())
                },
                None,
            )
            .unwrap();
        let diff = state.diff_from(&start, DIFF_ROWS).unwrap();
        assert_eq!(text(&diff), text(&scanned(&state, &start)));
        assert_eq!(text(diff.get("counts").unwrap()), r#"{"added": 1, "removed": 2, "changed": 2}"#);
    }

    #[test]
    fn a_big_diff_is_cut_with_exact_counts() {
        let state = helpdesk();
        state
            .write(
                |store| {
                    for n in 0..30 {
                        store.insert(
                            "customers",
                            &object([
                                ("id", Value::Str(format!("N{n:02}"))),
                                ("name", Value::str("Many")),
                                ("email", Value::Str(format!("n{n}@example.com"))),
                                ("tier", Value::str("free")),
                                ("created_at", Value::str("2026-01-01T00:00:00Z")),
                            ]),
                            None,
                        )?;
                    }
                    Ok(())
                },
                None,
            )
            .unwrap();
        let diff = state.diff_from_template(10).unwrap();
        let customers = diff.get("entities").and_then(|e| e.get("customers")).unwrap();
        assert_eq!(customers.get("added").unwrap().as_array().unwrap().len(), 10);
        assert_eq!(text(customers.get("counts").unwrap()), r#"{"added": 30, "removed": 0, "changed": 0}"#);
        assert!(matches!(customers.get("truncated"), Some(Value::Bool(true))));
        assert!(matches!(diff.get("truncated"), Some(Value::Bool(true))));
    }
}

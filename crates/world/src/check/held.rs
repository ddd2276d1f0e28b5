//! The rows a check holds between staging and the apply: accepted rows merged by
//! store key, per entity in first-staged order.
//!
//! They live in memory up to a byte budget; past it every held row moves to a
//! scratch SQLite file (keyed by entity and store key, ordered by first staging)
//! and later rows go there too, so a check's memory stays bounded whatever the size
//! of its input. Both forms answer the same questions in the same order.

use super::types::{Cell, Ref, Staged, Tuple};
use crate::data::tempfile_dir::Scratch;
use crate::error::Result;
use crate::json::{canonical, parse_clean, Value};
use indexmap::IndexMap;
use rusqlite::{params, Connection, OptionalExtension as _};
use std::collections::HashMap;

type Hasher = foldhash::fast::RandomState;

/// What one held row costs beyond its texts (map slot, struct, allocations).
const ROW_OVERHEAD: usize = 160;

/// Held rows: in memory, or spilled to a scratch SQLite file.
pub(super) struct Held {
    /// Entity names in first-staged order, with their rows while in memory.
    memory: IndexMap<String, IndexMap<String, Staged, Hasher>, Hasher>,
    /// Rows the references step refused, with the step's ordinal (in memory).
    dropped: HashMap<String, HashMap<String, usize, Hasher>, Hasher>,
    bytes: usize,
    budget: usize,
    spill: Option<Spill>,
}

struct Spill {
    /// The scratch file, once every queued row is written.
    conn: Option<Connection>,
    /// While staging: the thread writing rows, which owns the connection meanwhile.
    writer: Option<Writer>,
    /// Rows waiting to be handed to the writer.
    queued: Vec<(usize, String, Staged)>,
    // Dropped after the connection: the file goes with the directory.
    _dir: Scratch,
}

/// Rows handed to the writing thread at a time.
const WRITE_BATCH: usize = 1024;

/// The thread that writes staged rows to the scratch file, so staging goes on
/// parsing while SQLite works.
struct Writer {
    rows: std::sync::mpsc::SyncSender<Vec<(usize, String, Staged)>>,
    thread: std::thread::JoinHandle<Result<Connection>>,
}

impl Writer {
    fn start(conn: Connection) -> Writer {
        let (rows, incoming) = std::sync::mpsc::sync_channel::<Vec<(usize, String, Staged)>>(4);
        let thread = std::thread::spawn(move || {
            {
                // Rows go in ROWS_PER_INSERT to a statement (SQLite applies them in order, a
                // later row upserting an earlier one), prepared once: per-statement work is
                // a good part of a row's cost.
                let mut full = conn.prepare(&upsert_sql(ROWS_PER_INSERT))?;
                for batch in incoming {
                    let mut rows = batch.chunks_exact(ROWS_PER_INSERT);
                    for group in rows.by_ref() {
                        upsert_rows(&mut full, group.iter().map(|(entity, key, staged)| (*entity, key.as_str(), staged)))?;
                    }
                    let rest = rows.remainder();
                    if !rest.is_empty() {
                        let rest = rest.iter().map(|(entity, key, staged)| (*entity, key.as_str(), staged));
                        upsert_rows(&mut *conn.prepare_cached(&upsert_sql(rest.len()))?, rest)?;
                    }
                }
            }
            Ok(conn)
        });
        Writer { rows, thread }
    }

    /// Wait for every row to be written; the connection comes back.
    fn finish(self) -> Result<Connection> {
        drop(self.rows);
        match self.thread.join() {
            Ok(result) => Ok(result?),
            Err(_) => Err(crate::rows::plain("the thread writing held rows panicked")),
        }
    }
}

impl Spill {
    /// Hand the queued rows to the writer.
    fn send(&mut self) -> Result<()> {
        let batch = std::mem::take(&mut self.queued);
        let Some(writer) = &self.writer else { return Ok(()) };
        if writer.rows.send(batch).is_err() {
            // The writer stopped on an error: finishing reports it.
            self.finish()?;
            return Err(crate::rows::plain("the thread writing held rows stopped"));
        }
        Ok(())
    }

    /// Write everything queued and take the connection back.
    fn finish(&mut self) -> Result<()> {
        if !self.queued.is_empty() && self.writer.is_some() {
            self.send()?;
        }
        if let Some(writer) = self.writer.take() {
            self.conn = Some(writer.finish()?);
        }
        Ok(())
    }

    fn conn(&self) -> Result<&Connection> {
        self.conn.as_ref().ok_or_else(|| crate::rows::plain("held rows are still being written"))
    }
}

const SPILL_SCHEMA: &str = "
    PRAGMA page_size = 16384;
    PRAGMA journal_mode = OFF;
    PRAGMA synchronous = OFF;
    PRAGMA locking_mode = EXCLUSIVE;
    PRAGMA cache_size = -16384;
    CREATE TABLE staged (
        seq INTEGER PRIMARY KEY,
        entity INTEGER NOT NULL,
        key TEXT NOT NULL,
        text TEXT NOT NULL,
        refs TEXT NOT NULL,
        uniques TEXT NOT NULL,
        chunk INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        dropped INTEGER
    );
    CREATE UNIQUE INDEX staged_key ON staged (entity, key);
    BEGIN;
";

/// Rows the background writer puts in one INSERT statement.
const ROWS_PER_INSERT: usize = 64;

/// Insert `rows` staged rows; a row under a key already held replaces it in place.
fn upsert_sql(rows: usize) -> String {
    let values = vec!["(?, ?, ?, ?, ?, ?, ?)"; rows].join(", ");
    format!(
        "INSERT INTO staged (entity, key, text, refs, uniques, chunk, idx) VALUES {values}
        ON CONFLICT (entity, key) DO UPDATE SET text = excluded.text, refs = excluded.refs, uniques = excluded.uniques,
        chunk = excluded.chunk, idx = excluded.idx"
    )
}

impl Held {
    /// Nothing held; rows move to disk past `budget` bytes.
    pub(super) fn new(budget: usize) -> Held {
        Held { memory: IndexMap::default(), dropped: HashMap::default(), bytes: 0, budget, spill: None }
    }

    /// Whether the rows are on disk (and memory is bounded).
    pub(super) fn spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// Hold `staged` under (`entity`, `key`): `merge` gets the row already held under
    /// that key, if any (only when `merging`: otherwise the later row wins whole), and
    /// returns what to hold (which keeps the first's position).
    pub(super) fn hold(&mut self, entity: &str, key: String, merging: bool, merge: impl FnOnce(Option<Staged>) -> Staged) -> Result<()> {
        let id = match self.memory.get_index_of(entity) {
            Some(id) => id,
            None => self.memory.insert_full(entity.to_string(), IndexMap::default()).0,
        };
        if let Some(spill) = &mut self.spill {
            if !merging {
                // The later row wins whole: written in the background.
                spill.queued.push((id, key, merge(None)));
                if spill.queued.len() >= WRITE_BATCH {
                    spill.send()?;
                }
                return Ok(());
            }
            spill.finish()?;
            let conn = spill.conn()?;
            let existing = conn
                .prepare_cached("SELECT text, refs, uniques, chunk, idx FROM staged WHERE entity = ?1 AND key = ?2")?
                .query_row(params![id as i64, key], decode)
                .optional()?;
            let staged = merge(existing);
            upsert(conn, id, &key, &staged)?;
            return Ok(());
        }
        let rows = &mut self.memory[id];
        match rows.entry(key) {
            indexmap::map::Entry::Occupied(mut slot) => {
                let first = std::mem::take(slot.get_mut());
                let before = first.text.len();
                let staged = merge(Some(first));
                self.bytes = self.bytes.saturating_sub(before) + staged.text.len();
                *slot.get_mut() = staged;
            }
            indexmap::map::Entry::Vacant(slot) => {
                self.bytes += ROW_OVERHEAD + slot.key().len();
                let staged = merge(None);
                self.bytes += staged.text.len();
                slot.insert(staged);
            }
        }
        if self.bytes > self.budget {
            self.spill_all()?;
        }
        Ok(())
    }

    /// Move every held row to a scratch SQLite file, in held order.
    fn spill_all(&mut self) -> Result<()> {
        let dir = Scratch::new("gateway-check-rows")?;
        let conn = Connection::open(dir.path().join("held.sqlite"))?;
        conn.execute_batch(SPILL_SCHEMA)?;
        // Rows are dropped only after staging, when nothing moves to disk any more.
        debug_assert!(self.dropped.is_empty());
        let mut spill = Spill { conn: None, writer: Some(Writer::start(conn)), queued: Vec::new(), _dir: dir };
        for (id, rows) in self.memory.values_mut().enumerate() {
            for (key, staged) in rows.drain(..) {
                spill.queued.push((id, key, staged));
                if spill.queued.len() >= WRITE_BATCH {
                    spill.send()?;
                }
            }
        }
        self.memory.values_mut().for_each(|rows| rows.shrink_to_fit());
        self.bytes = 0;
        self.spill = Some(spill);
        Ok(())
    }

    /// End staging: every held row is written before it is read back.
    pub(super) fn finish(&mut self) -> Result<()> {
        match &mut self.spill {
            Some(spill) => spill.finish(),
            None => Ok(()),
        }
    }

    /// An entity's number in the scratch file (-1: never staged).
    fn id(&self, entity: &str) -> i64 {
        self.memory.get_index_of(entity).map_or(-1, |id| id as i64)
    }

    /// Entity names in first-staged order.
    pub(super) fn entities(&self) -> Vec<String> {
        self.memory.keys().cloned().collect()
    }

    /// Whether any row of `entity` was staged.
    pub(super) fn has_entity(&self, entity: &str) -> bool {
        self.memory.contains_key(entity)
    }

    /// How many rows of `entity` are held.
    pub(super) fn len(&self, entity: &str) -> Result<usize> {
        match &self.spill {
            Some(spill) => {
                let n: i64 = spill
                    .conn()?
                    .prepare_cached("SELECT COUNT(*) FROM staged WHERE entity = ?1")?
                    .query_row([self.id(entity)], |r| r.get(0))?;
                Ok(n as usize)
            }
            None => Ok(self.memory.get(entity).map_or(0, IndexMap::len)),
        }
    }

    /// Each held row of `entity` in first-staged order, until `visit` returns false.
    pub(super) fn for_each(&self, entity: &str, mut visit: impl FnMut(&str, &Staged) -> Result<bool>) -> Result<()> {
        match &self.spill {
            Some(spill) => {
                let mut statement =
                    spill.conn()?.prepare("SELECT key, text, refs, uniques, chunk, idx FROM staged WHERE +entity = ?1 ORDER BY seq")?;
                let mut rows = statement.query([self.id(entity)])?;
                while let Some(row) = rows.next()? {
                    let key: String = row.get(0)?;
                    let staged = decode_at(row, 1)?;
                    if !visit(&key, &staged)? {
                        break;
                    }
                }
            }
            None => {
                for (key, staged) in self.memory.get(entity).into_iter().flatten() {
                    if !visit(key, staged)? {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether a row of `entity` is held under `key`. With `since`, a row the
    /// references step dropped still counts when it was dropped at or after that
    /// step ordinal (the original looked the keys up once and kept them).
    pub(super) fn contains(&self, entity: &str, key: &str, since: Option<usize>) -> Result<bool> {
        let counts = |dropped: Option<usize>| dropped.is_none_or(|at| since.is_some_and(|since| at >= since));
        match &self.spill {
            Some(spill) => {
                let found: Option<Option<i64>> = spill
                    .conn()?
                    .prepare_cached("SELECT dropped FROM staged WHERE entity = ?1 AND key = ?2")?
                    .query_row(params![self.id(entity), key], |r| r.get(0))
                    .optional()?;
                Ok(found.is_some_and(|dropped| counts(dropped.map(|at| at as usize))))
            }
            None => {
                let held = self.memory.get(entity).is_some_and(|rows| rows.contains_key(key));
                Ok(held && counts(self.dropped.get(entity).and_then(|keys| keys.get(key)).copied()))
            }
        }
    }

    /// Mark a row refused by the references step at step `ordinal`.
    pub(super) fn drop_row(&mut self, entity: &str, key: &str, ordinal: usize) -> Result<()> {
        match &self.spill {
            Some(spill) => {
                spill.conn()?.prepare_cached("UPDATE staged SET dropped = ?3 WHERE entity = ?1 AND key = ?2")?.execute(params![
                    self.id(entity),
                    key,
                    ordinal as i64
                ])?;
            }
            None => {
                self.dropped.entry(entity.to_string()).or_default().insert(key.to_string(), ordinal);
            }
        }
        Ok(())
    }

    /// Forget every dropped row.
    pub(super) fn purge(&mut self) -> Result<()> {
        match &self.spill {
            Some(spill) => {
                spill.conn()?.execute("DELETE FROM staged WHERE dropped IS NOT NULL", [])?;
            }
            None => {
                for (entity, keys) in self.dropped.drain() {
                    if let Some(rows) = self.memory.get_mut(&entity) {
                        rows.retain(|key, _| !keys.contains_key(key));
                    }
                }
            }
        }
        Ok(())
    }
}

fn upsert(conn: &Connection, entity: usize, key: &str, staged: &Staged) -> Result<()> {
    upsert_rows(&mut *conn.prepare_cached(&upsert_sql(1))?, [(entity, key, staged)])
}

/// Upsert `rows` with a statement of [`upsert_sql`] for as many rows.
fn upsert_rows<'r>(statement: &mut rusqlite::Statement<'_>, rows: impl IntoIterator<Item = (usize, &'r str, &'r Staged)>) -> Result<()> {
    for (i, (entity, key, staged)) in rows.into_iter().enumerate() {
        let at = i * 7 + 1;
        statement.raw_bind_parameter(at, entity as i64)?;
        statement.raw_bind_parameter(at + 1, key)?;
        statement.raw_bind_parameter(at + 2, &staged.text)?;
        statement.raw_bind_parameter(at + 3, encode_refs(&staged.refs))?;
        statement.raw_bind_parameter(at + 4, encode_tuples(&staged.uniques))?;
        statement.raw_bind_parameter(at + 5, staged.chunk as i64)?;
        statement.raw_bind_parameter(at + 6, staged.index as i64)?;
    }
    statement.raw_execute()?;
    Ok(())
}

fn decode(row: &rusqlite::Row<'_>) -> rusqlite::Result<Staged> {
    decode_at(row, 0)
}

fn decode_at(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Staged> {
    let refs: String = row.get(at + 1)?;
    let uniques: String = row.get(at + 2)?;
    Ok(Staged {
        text: row.get(at)?,
        refs: decode_refs(&refs),
        uniques: decode_tuples(&uniques),
        chunk: row.get::<_, i64>(at + 3)? as usize,
        index: row.get::<_, i64>(at + 4)? as usize,
    })
}

// Refs and tuples are written as small JSON arrays (empty: the empty string):
// a ref is null (absent), false (partial), {"invalid": message} or the target key;
// a tuple is null, false (complex) or an array of integers, floats and strings.

fn encode_refs(refs: &[Ref]) -> String {
    if refs.is_empty() {
        return String::new();
    }
    let items = refs
        .iter()
        .map(|r| match r {
            Ref::Absent => Value::Null,
            Ref::Partial => Value::Bool(false),
            Ref::Invalid(message) => crate::json::object([("invalid", Value::str(message))]),
            Ref::Key(key) => Value::str(key),
        })
        .collect();
    canonical(&Value::Array(items))
}

fn decode_refs(text: &str) -> Vec<Ref> {
    let Some(Value::Array(items)) = (!text.is_empty()).then(|| parse_clean(text)).flatten() else { return Vec::new() };
    items
        .into_iter()
        .map(|item| match item {
            Value::Null => Ref::Absent,
            Value::Str(key) => Ref::Key(key),
            Value::Object(map) => Ref::Invalid(map.get("invalid").and_then(Value::as_str).unwrap_or_default().to_string()),
            _ => Ref::Partial,
        })
        .collect()
}

fn encode_tuples(tuples: &[Tuple]) -> String {
    if tuples.is_empty() {
        return String::new();
    }
    let items = tuples
        .iter()
        .map(|t| match t {
            Tuple::Null => Value::Null,
            Tuple::Complex => Value::Bool(false),
            Tuple::Values(cells) => Value::Array(
                cells
                    .iter()
                    .map(|cell| match cell {
                        Cell::Int(n) => Value::Int(*n),
                        Cell::Real(bits) => Value::Float(f64::from_bits(*bits)),
                        Cell::Text(text) => Value::str(&**text),
                    })
                    .collect(),
            ),
        })
        .collect();
    canonical(&Value::Array(items))
}

fn decode_tuples(text: &str) -> Vec<Tuple> {
    let Some(Value::Array(items)) = (!text.is_empty()).then(|| parse_clean(text)).flatten() else { return Vec::new() };
    items
        .into_iter()
        .map(|item| match item {
            Value::Array(cells) => Tuple::Values(
                cells
                    .into_iter()
                    .map(|cell| match cell {
                        Value::Int(n) => Cell::Int(n),
                        Value::Float(f) => Cell::Real(f.to_bits()),
                        Value::Str(text) => Cell::Text(text.into()),
                        _ => Cell::Int(0),
                    })
                    .collect(),
            ),
            Value::Null => Tuple::Null,
            _ => Tuple::Complex,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staged(text: &str, refs: Vec<Ref>, uniques: Vec<Tuple>, index: usize) -> Staged {
        Staged { text: text.into(), refs, uniques, chunk: 0, index }
    }

    fn keys(held: &Held, entity: &str) -> Vec<(String, String, usize)> {
        let mut out = Vec::new();
        held.for_each(entity, |key, staged| {
            out.push((key.to_string(), staged.text.clone(), staged.index));
            Ok(true)
        })
        .unwrap();
        out
    }

    #[test]
    fn rows_written_many_to_a_statement_keep_first_places_and_last_values() {
        // Keys repeat within and across the writer's multi-row statements.
        let outcome = |budget: usize| {
            let mut held = Held::new(budget);
            for i in 0..(3 * WRITE_BATCH + 17) {
                let key = format!("[{}]", (i * 7) % 150);
                held.hold("a", key, false, |_| staged(&format!("{{\"i\":{i}}}"), vec![], vec![], i)).unwrap();
            }
            held.finish().unwrap();
            assert_eq!(held.spilled(), budget == 0);
            keys(&held, "a")
        };
        let in_memory = outcome(usize::MAX);
        assert_eq!(in_memory.len(), 150);
        assert_eq!(outcome(0), in_memory);
    }

    #[test]
    fn spilled_rows_answer_as_held_ones() {
        for budget in [usize::MAX, 0] {
            let mut held = Held::new(budget);
            let refs = vec![Ref::Absent, Ref::Partial, Ref::Invalid("bad".into()), Ref::Key("[\"a\"]".into())];
            let tuples = vec![
                Tuple::Null,
                Tuple::Complex,
                Tuple::Values(vec![Cell::Int(2), Cell::Real(2.5f64.to_bits()), Cell::Text("x".into())].into()),
            ];
            held.hold("a", "[1]".into(), false, |_| staged("{\"id\":1}", refs.clone(), tuples.clone(), 0)).unwrap();
            held.hold("b", "[2]".into(), false, |_| staged("{\"id\":2}", vec![], vec![], 1)).unwrap();
            held.hold("a", "[3]".into(), false, |_| staged("{\"id\":3}", vec![], vec![], 2)).unwrap();
            // A later row under a held key keeps the first's position.
            held.hold("a", "[1]".into(), true, |first| {
                let first = first.expect("held");
                assert_eq!(first.index, 0);
                staged("{\"id\":1,\"x\":1}", first.refs, first.uniques, 3)
            })
            .unwrap();
            held.finish().unwrap();
            assert_eq!(held.spilled(), budget == 0);
            assert_eq!(held.entities(), ["a", "b"]);
            assert_eq!(held.len("a").unwrap(), 2);
            assert_eq!(keys(&held, "a"), [("[1]".into(), "{\"id\":1,\"x\":1}".into(), 3), ("[3]".into(), "{\"id\":3}".into(), 2)]);
            let mut seen = None;
            held.for_each("a", |_, staged| {
                seen = Some((format!("{:?}", staged.refs), staged.uniques.clone()));
                Ok(false)
            })
            .unwrap();
            assert_eq!(seen, Some((format!("{refs:?}"), tuples.clone())));
            held.drop_row("a", "[3]", 1).unwrap();
            // Keys taken at or before the dropping pass still hold the row; later ones do not.
            assert!(held.contains("a", "[3]", Some(1)).unwrap());
            assert!(held.contains("a", "[3]", Some(0)).unwrap());
            assert!(!held.contains("a", "[3]", Some(2)).unwrap());
            assert!(!held.contains("a", "[3]", None).unwrap());
            held.purge().unwrap();
            assert!(!held.contains("a", "[3]", Some(1)).unwrap());
            assert_eq!(held.len("a").unwrap(), 1);
        }
    }
}

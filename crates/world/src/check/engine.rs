//! The [`Engine`]: what is compiled once per contract, and the staging of rows
//! (shape check, canonical text, store key, references resolved, merge by key), on
//! the reading threads where a row needs no other row.

use super::held::Held;
use super::line::{encode_line, encoded_len, string_len};
use super::memory::UniquePlans;
use super::options::{CheckOptions, Merge, REPORT_CAP};
use super::references::{reference_refusals, RefPlans};
use super::report::refusal;
use super::shape::{row_key, shape_refusal};
use super::sql::{self, Ledger};
use super::types::Staged;
use crate::compiler::{Contract, Entity};
use crate::error::Result;
use crate::json::{Map, Value};
use crate::rows::{read_rows_prepared, Flow, Progress, Row, Seen};
use crate::store::Store;
use rusqlite::Connection;
use std::collections::HashMap;
use std::sync::Arc;

/// A row after the work that needs no other row (done on the reading threads).
enum Prepared<'c> {
    /// A row the shape check refuses or that holds a range problem: worded and
    /// staged on the calling thread, where its chunk and index are known.
    Row(Row),
    /// A row the shape check accepts.
    Accepted {
        entity: &'c Entity,
        key: String,
        staged: Staged,
        /// The row itself, kept only for a `fill` merge.
        value: Option<Value>,
    },
}

/// A row's canonical text, written into a per-thread buffer and copied out at its
/// exact length (one allocation per row).
fn canonical_text(value: &Value) -> String {
    thread_local! {
        static BUFFER: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    BUFFER.with_borrow_mut(|buffer| {
        buffer.clear();
        crate::json::canonical_into(buffer, value);
        buffer.as_str().into()
    })
}

/// Rows accepted by the shape check, merged by store key, and the refusals so far.
pub(super) struct Stage {
    pub(super) rows: Held,
    pub(super) refusals: Vec<Value>,
    pub(super) refused: usize,
}

impl Stage {
    pub(super) fn refuse(&mut self, record: Value) {
        self.refused += 1;
        if self.refusals.len() < REPORT_CAP {
            self.refusals.push(record);
        }
    }
}

/// Where a batch's rows come from.
pub(crate) enum Input<'a> {
    /// Rows files (`-` is stdin, `.gz` gunzipped), positioned in the chunks of
    /// `options.chunk_bytes` of JSONL the original's chunker would cut.
    Files(&'a [String]),
    /// Chunk files as a client uploaded them: each is one chunk (its ordinal) and a
    /// row's index counts from 0 inside it.
    Chunks(&'a [crate::batch::ChunkSpec]),
}

/// What is compiled once per contract for staging and applying rows.
pub(crate) struct Engine<'c> {
    pub(crate) contract: &'c Arc<Contract>,
    ref_plans: RefPlans<'c>,
    pub(super) unique_plans: UniquePlans,
    /// Per entity: the top-level members a row's store key, relationships and unique
    /// tuples read, and whether more than the key's are read.
    read_members: HashMap<&'c str, (Vec<String>, bool), foldhash::fast::RandomState>,
}

/// Rows read, shape-checked and merged by key: what the references step and the
/// apply work on.
pub(crate) struct Staging {
    pub(super) stage: Stage,
    /// Rows read.
    pub(crate) rows: usize,
}

impl Staging {
    /// Refusals so far (the first [`REPORT_CAP`]) and how many rows were refused.
    pub(crate) fn into_refusals(self) -> (Vec<Value>, usize) {
        (self.stage.refusals, self.stage.refused)
    }

    /// How many rows were refused so far.
    pub(crate) fn refused(&self) -> usize {
        self.stage.refused
    }

    /// Record one more refusal.
    pub(crate) fn refuse(&mut self, record: Value) {
        self.stage.refuse(record);
    }
}

impl<'c> Engine<'c> {
    pub(crate) fn new(contract: &'c Arc<Contract>) -> Engine<'c> {
        let unique_plans = UniquePlans::new(contract);
        let read_members = contract
            .entities
            .iter()
            .map(|entity| {
                let mut names: Vec<String> = entity.primary_key.clone();
                names.extend(entity.relationships.iter().flat_map(|r| r.fields.iter().cloned()));
                names.extend(unique_plans.declared_members(&entity.name).map(str::to_string));
                names.sort();
                names.dedup();
                let beyond_key = !entity.relationships.is_empty() || unique_plans.declared_members(&entity.name).next().is_some();
                (entity.name.as_str(), (names, beyond_key))
            })
            .collect();
        Engine { contract, ref_plans: RefPlans::new(contract), unique_plans, read_members }
    }

    /// Stage every row of `input`: shape check, canonical text, store key, references
    /// resolved, merged by key (`upsert` / `fill`). Refused rows become records.
    pub(crate) fn stage(&self, input: Input<'_>, options: &CheckOptions, progress: Option<Progress<'_>>) -> Result<Staging> {
        let merge_fill = options.merge == Merge::Fill;
        let mut stager = Stager {
            engine: self,
            options,
            fixed: matches!(input, Input::Chunks(_)),
            tagged: options.entity.is_none(),
            merge_fill,
            cursor: Cursor::default(),
            stage: Stage { rows: Held::new(options.memory_budget), refusals: Vec::new(), refused: 0 },
            rows_read: 0,
        };
        let mut seen = Seen::default();
        let prepare_text = |entity: &str, json: &str| if merge_fill { None } else { self.prepare_text(entity, json) };
        let prepare = |row: Row| self.prepare(row, merge_fill);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(options.threads.max(1));
        let scan = options.scan.then_some(&prepare_text as _);
        match input {
            Input::Files(sources) => {
                let entity = options.entity.as_deref();
                read_rows_prepared(sources, entity, &mut seen, progress, threads, scan, &prepare, &mut |row| stager.take(row))?;
            }
            Input::Chunks(specs) => {
                for spec in specs {
                    // A chunk file is one chunk, its ordinal; its rows are indexed from 0.
                    stager.cursor = Cursor { chunk: spec.ordinal, index: 0, bytes: 0 };
                    let source = [spec.path.to_string_lossy().into_owned()];
                    let entity = spec.entity.as_deref();
                    read_rows_prepared(&source, entity, &mut seen, progress, threads, scan, &prepare, &mut |row| stager.take(row))?;
                }
            }
        }
        stager.stage.rows.finish()?;
        Ok(Staging { stage: stager.stage, rows: stager.rows_read })
    }

    /// A shape-checked row as staged (its position is set by the caller) and its store key.
    fn staged_row(&self, row: &Row) -> (String, Staged) {
        let declared = self.contract.entity(&row.entity).expect("shape-checked entity");
        let map = row.value.as_object().expect("shape-checked object");
        let staged = Staged {
            text: canonical_text(&row.value),
            refs: self.ref_plans.resolve(&declared.name, map),
            uniques: self.unique_plans.declared_tuples(&declared.name, &row.value),
            chunk: 0,
            index: 0,
        };
        (row_key(declared, map), staged)
    }

    /// Runs on the reading threads: a plain row read from its text alone (see
    /// `Validator::scan`); None leaves it to [`Engine::prepare`], which decides it exactly.
    fn prepare_text(&self, entity: &str, json: &str) -> Option<Prepared<'c>> {
        let declared = self.contract.entity(entity)?;
        let (wanted, beyond_key) = &self.read_members[declared.name.as_str()];
        let scanned = declared.validator().scan(json, wanted)?;
        let span = |field: &String| -> Option<&str> {
            let slot = wanted.iter().position(|name| name == field)?;
            scanned.members[slot].clone().map(|span| &scanned.text[span])
        };
        // The store key is the key members' canonical texts, but for a float (an
        // integral one counts as an integer: the general way writes those).
        let mut key = String::with_capacity(16);
        key.push('[');
        for (i, field) in declared.primary_key.iter().enumerate() {
            let text = span(field)?;
            if text.starts_with(['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']) && text.contains(['.', 'e', 'E']) {
                return None;
            }
            if i > 0 {
                key.push(',');
            }
            key.push_str(text);
        }
        key.push(']');
        let (mut refs, mut uniques) = (Vec::new(), Vec::new());
        if *beyond_key {
            // The members those steps read, as the row holds them (an object member's
            // order would differ from the row's: such rows go the general way).
            let mut members = Map::with_capacity_and_hasher(wanted.len(), Default::default());
            for name in wanted {
                if let Some(text) = span(name) {
                    if text.starts_with('{') {
                        return None;
                    }
                    members.insert(name.clone(), crate::json::parse_clean(text)?);
                }
            }
            refs = self.ref_plans.resolve(&declared.name, &members);
            uniques = self.unique_plans.declared_tuples(&declared.name, &Value::Object(members));
        }
        let staged = Staged { text: scanned.text, refs, uniques, chunk: 0, index: 0 };
        Some(Prepared::Accepted { entity: declared, key, staged, value: None })
    }

    /// Runs on the reading threads: everything about a row that needs no other row.
    fn prepare(&self, row: Row, merge_fill: bool) -> Prepared<'c> {
        if row.problem.is_some() || shape_refusal(self.contract, 0, 0, &row.entity, &row.value).is_some() {
            return Prepared::Row(row);
        }
        let (key, staged) = self.staged_row(&row);
        let entity = self.contract.entity(&row.entity).expect("shape-checked entity");
        Prepared::Accepted { entity, key, staged, value: merge_fill.then_some(row.value) }
    }

    /// The references step against the snapshot behind `snapshot`: every held row
    /// pointing at a key neither the batch nor the parent holds is refused and dropped.
    pub(crate) fn references(&self, staging: &mut Staging, snapshot: &Connection, mode: &str) -> Result<()> {
        for record in reference_refusals(self.contract, snapshot, &mut staging.stage.rows, mode)? {
            staging.stage.refuse(record);
        }
        Ok(())
    }

    /// Apply the staged rows to `store` for real, in one transaction: committed when
    /// `commit` says so given the refusal the apply met (if any), rolled back
    /// otherwise. Every written row gets its lineage under the ledger row `batch_id`.
    /// Returns the apply's refusal, if any.
    pub(crate) fn write(
        &self,
        staging: &Staging,
        store: &Store,
        mode: &str,
        batch: &Ledger<'_>,
        commit: impl FnOnce(Option<&Value>) -> bool,
    ) -> Result<sql::Written> {
        sql::write(self.contract, store, &staging.stage.rows, mode, batch, commit)
    }
}

/// Where the next row falls: its chunk, its index inside the chunk, and the JSONL
/// bytes the chunk holds so far.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    chunk: usize,
    index: usize,
    bytes: usize,
}

/// The calling thread's side of staging: each prepared row, in input order, given
/// its place in the chunks, then refused or held (merged by key).
struct Stager<'e, 'c> {
    engine: &'e Engine<'c>,
    options: &'e CheckOptions,
    /// The rows come in chunk files (each its own chunk), not cut by size.
    fixed: bool,
    /// The rows are written as tagged lines (no `--entity`).
    tagged: bool,
    merge_fill: bool,
    cursor: Cursor,
    stage: Stage,
    rows_read: usize,
}

impl<'c> Stager<'_, 'c> {
    /// The sink of the reading: one prepared row.
    fn take(&mut self, prepared: Prepared<'c>) -> Result<Flow> {
        if self.fixed {
            if let Some(record) = self.unencodable(&prepared) {
                self.cursor.index += 1;
                self.rows_read += 1;
                self.stage.refuse(record);
                return Ok(Flow::More);
            }
        } else {
            self.advance(&prepared)?;
        }
        let (chunk, position) = (self.cursor.chunk, self.cursor.index);
        self.cursor.index += 1;
        self.rows_read += 1;
        let engine = self.engine;
        let (declared, key, mut staged, value) = match prepared {
            Prepared::Accepted { entity, key, staged, value } => (entity, key, staged, value),
            Prepared::Row(row) => {
                if let Some(record) = shape_refusal(engine.contract, chunk, position, &row.entity, &row.value) {
                    self.stage.refuse(record);
                    return Ok(Flow::More);
                }
                // A row with a range problem its schema accepts.
                let (key, staged) = engine.staged_row(&row);
                (engine.contract.entity(&row.entity).expect("shape-checked entity"), key, staged, self.merge_fill.then_some(row.value))
            }
        };
        staged.chunk = chunk;
        staged.index = position;
        self.hold(&declared.name, key, staged, value)?;
        Ok(Flow::More)
    }

    /// A chunk file's row that JSON cannot carry (a client wrote it by hand): its
    /// refusal where it stands; it is never stored.
    fn unencodable(&self, prepared: &Prepared<'_>) -> Option<Value> {
        let Prepared::Row(row) = prepared else { return None };
        row.problem.as_ref()?;
        let error = encode_line(row, false).err()?;
        let Cursor { chunk, index, .. } = self.cursor;
        let contract = self.engine.contract;
        Some(refusal(Some(chunk), Some(index), Some(&row.entity), Some(&row.value), None, &error.to_string(), Some(contract)))
    }

    /// Rows files: the row's JSONL line counted into its chunk, starting the next
    /// chunk where the original's chunker would.
    fn advance(&mut self, prepared: &Prepared<'_>) -> Result<()> {
        let bytes = line_len(prepared, self.tagged)? + 1;
        let cursor = &mut self.cursor;
        if cursor.bytes > 0 && cursor.bytes + bytes > self.options.chunk_bytes {
            *cursor = Cursor { chunk: cursor.chunk + 1, index: 0, bytes: 0 };
        }
        cursor.bytes += bytes;
        Ok(())
    }

    /// Hold an accepted row under its store key: `upsert` keeps the later row, `fill`
    /// the first, with the members only later rows have added.
    fn hold(&mut self, name: &str, key: String, staged: Staged, value: Option<Value>) -> Result<()> {
        let engine = self.engine;
        let merge_fill = self.merge_fill;
        self.stage.rows.hold(name, key, merge_fill, |first| match first {
            Some(mut first) if merge_fill => {
                let mut merged = first.value();
                if let (Value::Object(first), Some(Value::Object(later))) = (&mut merged, value) {
                    for (name, value) in later {
                        first.entry(name).or_insert(value);
                    }
                }
                first.refs = engine.ref_plans.resolve(name, merged.as_object().expect("object"));
                first.uniques = engine.unique_plans.declared_tuples(name, &merged);
                first.text = crate::json::canonical(&merged);
                first
            }
            _ => staged,
        })
    }
}

/// The length of a row's JSONL line. Canonical text has the line's length (compact,
/// unescaped; only the key order differs).
fn line_len(prepared: &Prepared<'_>, tagged: bool) -> Result<usize> {
    let (entity, row_len) = match prepared {
        Prepared::Accepted { entity, staged, .. } => (entity.name.as_str(), staged.text.len()),
        Prepared::Row(row) if row.problem.is_some() => (row.entity.as_str(), 0),
        Prepared::Row(row) => (row.entity.as_str(), encoded_len(&row.value)),
    };
    Ok(match prepared {
        Prepared::Row(row) if row.problem.is_some() => encode_line(row, tagged)?.len(),
        _ if tagged => "{\"entity\":,\"row\":}".len() + string_len(entity) + row_len,
        _ => row_len,
    })
}

//! The batch engine behind `data check` and `data import --dry-run`: every row of a
//! rows stream checked against a world's contract in a scratch copy of its snapshot.
//!
//! 1. **Stage**: each row's shape (unknown entity, not an object, missing key
//!    field, the entity's schema) is checked as it streams in; accepted rows are
//!    merged by store key (`upsert`: last wins, `fill`: first wins and later rows
//!    only add properties).
//! 2. **References**: every held row's relationships must point at a key the batch
//!    or the parent snapshot holds (the snapshot's keys do not count for an entity
//!    a `replace` names).
//! 3. **Apply**: the remaining rows as one batch (dependency order, planned against
//!    the scratch store exactly as a live seed is), so unique conflicts and the
//!    commit-time audit speak with the store's own refusals.
//!
//! Refusals are the original's records `{chunk, index, entity, primaryKey, field,
//! pointer, detail}`. Row positions follow the original's chunking: rows are cut into
//! chunks of at most 64 MiB of compact JSONL, `index` counts rows inside a chunk.

use crate::compiler::{Contract, Entity};
use crate::dialect::validate;
use crate::error::{ContractError, Error, Result};
use crate::json::{dumps, object, DumpOptions, Map, Value};
use crate::lifecycle::check_bundle;
pub use crate::plan::Mode;
use crate::rows::{plain, read_rows_prepared, Flow, Progress, Row, Seen};
use crate::snapshot::{build_default, default_snapshot};
use crate::store::{key_of, Store};
use crate::validator::Validator;
use memory::{Decision, Tuple, UniquePlans};
use rusqlite::{Connection, OpenFlags};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

mod held;
mod memory;
mod references;
mod sql;

use held::Held;
pub use held::MEMORY_BUDGET;
use references::{reference_refusals, Ref, RefPlans};
pub(crate) use sql::Ledger;

/// JSONL bytes per chunk before a new one starts.
pub const CHUNK_BYTES: usize = 64 * 1024 * 1024;
/// Refusal records kept (and written to a report).
pub const REPORT_CAP: usize = 10_000;
/// Refusal records printed by the CLI.
pub const PRINT_CAP: usize = 200;
/// Merge rules for rows repeating a key inside one batch.
pub const MERGES: [&str; 2] = ["upsert", "fill"];

/// What a row repeating a key already held in the batch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Merge {
    /// The last row wins.
    #[default]
    Upsert,
    /// The first row wins; later ones only add the fields it lacks.
    Fill,
}

impl Merge {
    /// Every rule, in the original's order.
    pub const ALL: [Merge; 2] = [Merge::Upsert, Merge::Fill];

    /// The original's spelling (`upsert`, `fill`).
    pub fn as_str(self) -> &'static str {
        match self {
            Merge::Upsert => "upsert",
            Merge::Fill => "fill",
        }
    }
}

impl std::fmt::Display for Merge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Merge {
    type Err = ContractError;

    /// A stored or sent spelling; anything else is the engine's refusal.
    fn from_str(text: &str) -> std::result::Result<Merge, ContractError> {
        Merge::ALL
            .into_iter()
            .find(|merge| merge.as_str() == text)
            .ok_or_else(|| ContractError::new("merge", "merge must be upsert or fill", "/merge"))
    }
}

/// `json.dumps(x, ensure_ascii=False, separators=(",", ":"))`: one JSONL line.
pub const ROW_LINE: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: true };

/// What a check was asked to do.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The entity bare-row files hold.
    pub entity: Option<String>,
    /// How the rows meet the world's.
    pub mode: Mode,
    /// What a row repeating a key in the batch does.
    pub merge: Merge,
    /// JSONL bytes per chunk.
    pub chunk_bytes: usize,
    /// Bytes of accepted rows held in memory; past it they move to a scratch file.
    pub memory_budget: usize,
    /// Threads that parse and shape-check JSONL rows (at most the machine's cores; past
    /// about four the staging thread is the bottleneck). Default 4.
    pub threads: usize,
    /// Always apply in a scratch SQLite copy, even where the in-memory apply decides
    /// (the two must agree; tests compare them).
    pub exact: bool,
    /// Read plain JSONL rows from their text without building them
    /// (`Validator::scan`); off, every row is parsed (the two must agree; tests
    /// compare them).
    pub scan: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            entity: None,
            mode: Mode::Append,
            merge: Merge::Upsert,
            chunk_bytes: CHUNK_BYTES,
            memory_budget: MEMORY_BUDGET,
            threads: 4,
            exact: false,
            scan: true,
        }
    }
}

/// The outcome of a check.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Rows read.
    pub rows: usize,
    /// The first [`REPORT_CAP`] refusal records.
    pub refusals: Vec<Value>,
    /// How many rows were refused.
    pub refusal_count: usize,
    /// Row counts of the scratch copy after the accepted rows (`{}` for no rows).
    pub entity_counts: Value,
}

impl CheckReport {
    /// The CLI's output object: `{world, dryRun, rows, refusalCount, refusals (first 200), entityCounts}`.
    pub fn to_json(&self, world: &str) -> Value {
        object([
            ("world", Value::str(world)),
            ("dryRun", Value::Bool(true)),
            ("rows", Value::Int(self.rows as i64)),
            ("refusalCount", Value::Int(self.refusal_count as i64)),
            ("refusals", Value::Array(self.refusals.iter().take(PRINT_CAP).cloned().collect())),
            ("entityCounts", self.entity_counts.clone()),
        ])
    }

    /// The `--report` file: JSONL records, at most `cap`, then `{"truncated": true, "total": N}`
    /// when more were given (the original hands over the records it kept).
    pub fn report_lines(&self, cap: usize) -> String {
        let mut out = String::new();
        for record in self.refusals.iter().take(cap) {
            out.push_str(&dumps(record, ROW_LINE));
            out.push('\n');
        }
        if self.refusals.len() > cap {
            let marker = object([("truncated", Value::Bool(true)), ("total", Value::Int(self.refusals.len() as i64))]);
            out.push_str(&dumps(&marker, ROW_LINE));
            out.push('\n');
        }
        out
    }
}

/// One refusal record.
pub fn refusal(
    chunk: Option<usize>,
    index: Option<usize>,
    entity: Option<&str>,
    row: Option<&Value>,
    field: Option<&str>,
    detail: &str,
    contract: Option<&Contract>,
) -> Value {
    let key = contract
        .and_then(|c| entity.and_then(|e| c.entity(e)))
        .zip(row.and_then(Value::as_object))
        .filter(|(declared, map)| declared.primary_key.iter().all(|f| map.contains_key(f)))
        .map(|(declared, map)| object(declared.primary_key.iter().map(|f| (f.clone(), map[f].clone()))))
        .unwrap_or(Value::Null);
    let mut pointer = format!("/{}", entity.unwrap_or_default());
    if let Some(index) = index {
        pointer.push_str(&format!("/{index}"));
    }
    if let Some(field) = field.filter(|f| !f.is_empty()) {
        pointer.push('/');
        pointer.push_str(field);
    }
    let int = |n: Option<usize>| n.map_or(Value::Null, |n| Value::Int(n as i64));
    object([
        ("chunk", int(chunk)),
        ("index", int(index)),
        ("entity", entity.map_or(Value::Null, Value::str)),
        ("primaryKey", key),
        ("field", field.map_or(Value::Null, Value::str)),
        ("pointer", Value::Str(pointer)),
        ("detail", Value::str(detail)),
    ])
}

/// The refused property of a validation error: its value path without the leading `/`.
pub fn field_of(error: &ContractError) -> Option<&str> {
    error.path.strip_prefix('/').filter(|rest| !rest.is_empty())
}

/// A row's shape against the contract; None when it conforms.
pub fn shape_refusal(contract: &Contract, chunk: usize, index: usize, entity: &str, row: &Value) -> Option<Value> {
    shape_refusal_with(contract, None, chunk, index, entity, row)
}

fn shape_refusal_with(
    contract: &Contract,
    validators: Option<&Validators>,
    chunk: usize,
    index: usize,
    entity: &str,
    row: &Value,
) -> Option<Value> {
    let Some(declared) = contract.entity(entity) else {
        let names: Vec<&str> = contract.entities.iter().map(|e| e.name.as_str()).collect();
        let detail = format!("Unknown entity {entity}; the world has {}", names.join(", "));
        return Some(refusal(Some(chunk), Some(index), Some(entity), Some(row), None, &detail, None));
    };
    let Some(map) = row.as_object() else {
        return Some(refusal(Some(chunk), Some(index), Some(entity), Some(row), None, "A row must be an object", None));
    };
    if let Some(missing) = declared.primary_key.iter().find(|f| !map.contains_key(*f)) {
        let detail = format!("Row is missing primary key field {}", crate::json::python_repr(&Value::str(missing)));
        return Some(refusal(Some(chunk), Some(index), Some(entity), Some(row), Some(missing), &detail, Some(contract)));
    }
    if validators.and_then(|v| v.get(entity)).is_some_and(|v| v.accepts(row)) {
        return None;
    }
    let location = format!("{}/schema", declared.location);
    match validate(&declared.schema, row, &location, "") {
        Ok(()) => None,
        Err(error) => Some(refusal(Some(chunk), Some(index), Some(entity), Some(row), field_of(&error), &error.message, Some(contract))),
    }
}

/// Each entity's schema compiled once.
pub type Validators = std::collections::HashMap<String, Validator, foldhash::fast::RandomState>;

/// Compile every entity's schema.
pub fn validators(contract: &Contract) -> Validators {
    contract.entities.iter().map(|e| (e.name.clone(), Validator::compile(&e.schema))).collect()
}

/// The store's `_key` of a row that passed its schema (so the key fields are valid):
/// the canonical array of the key values, integral floats as integers.
pub fn row_key(entity: &Entity, row: &Map) -> String {
    let mut key = String::from("[");
    for (i, field) in entity.primary_key.iter().enumerate() {
        if i > 0 {
            key.push(',');
        }
        match &row[field] {
            Value::Float(f) => key.push_str(&(*f as i64).to_string()),
            other => key.push_str(&crate::json::canonical(other)),
        }
    }
    key.push(']');
    key
}

fn string_len(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// The length in bytes of `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`.
pub fn encoded_len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Int(n) => {
            let digits = if *n == 0 { 1 } else { n.unsigned_abs().ilog10() as usize + 1 };
            digits + usize::from(*n < 0)
        }
        Value::Float(f) => crate::json::python_float_repr(*f).len(),
        Value::Str(text) => string_len(text),
        Value::Array(items) => 2 + items.len().saturating_sub(1) + items.iter().map(encoded_len).sum::<usize>(),
        Value::Object(map) => 2 + map.len().saturating_sub(1) + map.iter().map(|(k, v)| string_len(k) + 1 + encoded_len(v)).sum::<usize>(),
    }
}

/// Entities with the targets of their relationships first; a cycle keeps name order.
pub fn dependency_order(contract: &Contract) -> Vec<String> {
    let mut remaining: Vec<&Entity> = contract.entities.iter().collect();
    remaining.sort_by(|a, b| a.name.cmp(&b.name));
    let mut ordered = Vec::new();
    while !remaining.is_empty() {
        let names: HashSet<&str> = remaining.iter().map(|e| e.name.as_str()).collect();
        let mut ready: Vec<String> = remaining
            .iter()
            .filter(|e| e.relationships.iter().all(|r| r.target == e.name || !names.contains(r.target.as_str())))
            .map(|e| e.name.clone())
            .collect();
        if ready.is_empty() {
            ready.push(remaining[0].name.clone());
        }
        remaining.retain(|e| !ready.contains(&e.name));
        ordered.extend(ready);
    }
    ordered
}

/// Python's `json.dumps` refusal of NaN and infinities (`allow_nan=False`).
pub fn has_non_finite(value: &Value) -> bool {
    match value {
        Value::Float(f) => !f.is_finite(),
        Value::Array(items) => items.iter().any(has_non_finite),
        Value::Object(map) => map.values().any(has_non_finite),
        _ => false,
    }
}

/// The JSONL line of a row as the original's chunker writes it, or its refusal:
/// NaN and infinities are not JSON, a lone surrogate is not UTF-8.
pub fn encode_line(row: &Row, tagged: bool) -> Result<String> {
    debug_assert!(row.problem.is_some() || encoded_len(&row.value) > 0);
    if row.problem.as_ref().is_some_and(|p| p.code == "numeric_range") && has_non_finite(&row.value) {
        return Err(plain("Out of range float values are not JSON compliant"));
    }
    let line = if tagged {
        let mut map = Map::with_capacity_and_hasher(2, Default::default());
        map.insert("entity".into(), Value::str(&row.entity));
        map.insert("row".into(), row.value.clone());
        dumps(&Value::Object(map), ROW_LINE)
    } else {
        dumps(&row.value, ROW_LINE)
    };
    if row.problem.as_ref().is_some_and(|p| p.code == "json") {
        let position = line.chars().position(|c| c == '\u{FFFD}').unwrap_or(0);
        let unit = row.lone_surrogate.unwrap_or(0xD800);
        return Err(plain(format!("'utf-8' codec can't encode character '\\u{unit:04x}' in position {position}: surrogates not allowed")));
    }
    Ok(line)
}

/// An accepted row as held until the apply: its canonical text (what the store
/// holds) and the outcome of each of its entity's relationships, not its tree.
#[derive(Debug, Clone, Default)]
struct Staged {
    text: String,
    refs: Vec<Ref>,
    /// The row's tuples for its entity's declared `unique` constraints.
    uniques: Vec<Tuple>,
    chunk: usize,
    index: usize,
}

impl Staged {
    /// The row's tree again (for a refusal's primary key, a merge or an update).
    fn value(&self) -> Value {
        crate::json::parse_clean(&self.text).expect("canonical text parses")
    }
}

/// What updating a stored row with a staged one comes to.
enum Update {
    /// The stored row already equals the staged one: nothing to write.
    Unchanged,
    /// The shallow merge breaks the entity's schema: the refusal.
    Refused(Value),
    /// The stored row, and the shallow merge of the staged row into it.
    Merged { current: Value, merged: Value },
}

/// Merge a staged row into the stored payload `stored` of entity `name`, as the
/// store's update does (shallow, later members win), and check the result.
fn update_of(contract: &Contract, validators: &Validators, name: &str, staged: &Staged, stored: &str) -> Update {
    let current = crate::json::parse_clean(stored).unwrap_or_default();
    let value = staged.value();
    if crate::json::python_equal(&current, &value) {
        return Update::Unchanged;
    }
    let mut merged = current.as_object().cloned().unwrap_or_default();
    for (k, v) in value.as_object().expect("staged object") {
        merged.insert(k.clone(), v.clone());
    }
    let merged = Value::Object(merged);
    if !validators[name].accepts(&merged) {
        let declared = contract.entity(name).expect("staged entity");
        if let Err(error) = validate(&declared.schema, &merged, &format!("{}/schema", declared.location), "") {
            let record =
                refusal(Some(staged.chunk), Some(staged.index), Some(name), Some(&value), field_of(&error), &error.message, Some(contract));
            return Update::Refused(record);
        }
    }
    Update::Merged { current, merged }
}

/// The commit-time audit of updated rows (inserted rows were reference-checked
/// before the apply): every relationship of the merged row must be wholly present or
/// absent and name a key that `exists` after the batch. The refusal, if any.
fn audit_updated(
    contract: &Contract,
    updated: &[(&str, Staged, Value)],
    mut exists: impl FnMut(&Entity, &str) -> Result<bool>,
) -> Result<Option<Value>> {
    for (name, staged, merged) in updated {
        if let Some(refusal) = audit_updated_row(contract, name, staged, merged, &mut exists)? {
            return Ok(Some(refusal));
        }
    }
    Ok(None)
}

/// [`audit_updated`] for one updated row.
fn audit_updated_row(
    contract: &Contract,
    name: &str,
    staged: &Staged,
    merged: &Value,
    exists: &mut impl FnMut(&Entity, &str) -> Result<bool>,
) -> Result<Option<Value>> {
    let row_refusal = |field: Option<&str>, detail: &str| {
        refusal(Some(staged.chunk), Some(staged.index), Some(name), Some(&staged.value()), field, detail, Some(contract))
    };
    let declared = contract.entity(name).expect("staged entity");
    for relationship in &declared.relationships {
        let keys: Vec<Option<&Value>> =
            relationship.fields.iter().map(|f| crate::compiler::payload_value(merged, f).filter(|v| !matches!(v, Value::Null))).collect();
        if keys.iter().all(Option::is_none) {
            continue;
        }
        if keys.iter().any(Option::is_none) {
            return Ok(Some(row_refusal(None, "Composite references must be wholly present or wholly absent/null")));
        }
        let target = contract.entity(&relationship.target).expect("compiled target");
        let wanted = object(target.primary_key.iter().cloned().zip(keys.into_iter().map(|k| k.expect("present").clone())));
        let wanted = match key_of(target, &wanted, true) {
            Ok(wanted) => wanted,
            Err(error) => return Ok(Some(row_refusal(field_of(&error), &error.message))),
        };
        if !exists(target, &wanted)? {
            let detail = "Relationship target does not exist; incomplete evidence requires an explicit mapping decision";
            return Ok(Some(row_refusal(None, detail)));
        }
    }
    Ok(None)
}

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
struct Stage {
    rows: Held,
    refusals: Vec<Value>,
    refused: usize,
}

impl Stage {
    fn refuse(&mut self, record: Value) {
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
    pub(crate) validators: Validators,
    ref_plans: RefPlans<'c>,
    unique_plans: UniquePlans,
    /// Per entity: the top-level members a row's store key, relationships and unique
    /// tuples read, and whether more than the key's are read.
    read_members: HashMap<&'c str, (Vec<String>, bool), foldhash::fast::RandomState>,
}

/// Rows read, shape-checked and merged by key: what the references step and the
/// apply work on.
pub(crate) struct Staging {
    stage: Stage,
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
        Engine { contract, validators: validators(contract), ref_plans: RefPlans::new(contract), unique_plans, read_members }
    }

    /// Stage every row of `input`: shape check, canonical text, store key, references
    /// resolved, merged by key (`upsert` / `fill`). Refused rows become records.
    pub(crate) fn stage(&self, input: Input<'_>, options: &CheckOptions, progress: Option<Progress<'_>>) -> Result<Staging> {
        let contract = self.contract;
        let validators = &self.validators;
        let ref_plans = &self.ref_plans;
        let unique_plans = &self.unique_plans;
        let read_members = &self.read_members;
        let mut stage = Stage { rows: Held::new(options.memory_budget), refusals: Vec::new(), refused: 0 };
        let mut rows_read = 0usize;
        // The position of the next row: chunk, index inside it, JSONL bytes it holds.
        let cursor = std::cell::Cell::new((0usize, 0usize, 0usize));
        let fixed = matches!(input, Input::Chunks(_));
        let tagged = options.entity.is_none();
        let merge_fill = options.merge == Merge::Fill;
        let mut seen = Seen::default();
        // A shape-checked row as staged (its position is set by the caller) and its store key.
        let staged_row = |row: &Row| -> (String, Staged) {
            let declared = contract.entity(&row.entity).expect("shape-checked entity");
            let map = row.value.as_object().expect("shape-checked object");
            let staged = Staged {
                text: canonical_text(&row.value),
                refs: ref_plans.resolve(&declared.name, map),
                uniques: unique_plans.declared_tuples(&declared.name, &row.value),
                chunk: 0,
                index: 0,
            };
            (row_key(declared, map), staged)
        };
        // Runs on the reading threads: a plain row read from its text alone (see
        // `Validator::scan`); None leaves it to `prepare`, which decides it exactly.
        let prepare_text = |entity: &str, json: &str| -> Option<Prepared> {
            if merge_fill {
                return None;
            }
            let declared = contract.entity(entity)?;
            let (wanted, beyond_key) = &read_members[declared.name.as_str()];
            let scanned = validators.get(entity)?.scan(json, wanted)?;
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
                refs = ref_plans.resolve(&declared.name, &members);
                uniques = unique_plans.declared_tuples(&declared.name, &Value::Object(members));
            }
            let staged = Staged { text: scanned.text, refs, uniques, chunk: 0, index: 0 };
            Some(Prepared::Accepted { entity: declared, key, staged, value: None })
        };
        // Runs on the reading threads: everything about a row that needs no other row.
        let prepare = |row: Row| -> Prepared {
            if row.problem.is_some() || shape_refusal_with(contract, Some(validators), 0, 0, &row.entity, &row.value).is_some() {
                return Prepared::Row(row);
            }
            let (key, staged) = staged_row(&row);
            let entity = contract.entity(&row.entity).expect("shape-checked entity");
            Prepared::Accepted { entity, key, staged, value: merge_fill.then_some(row.value) }
        };
        let mut sink = |prepared: Prepared| -> Result<Flow> {
            let (mut chunk, mut index, mut chunk_bytes) = cursor.get();
            if fixed {
                // A chunk file's row that JSON cannot carry (a client wrote it by hand):
                // refused where it stands, never stored.
                if let Prepared::Row(row) = &prepared {
                    if row.problem.is_some() {
                        if let Err(error) = encode_line(row, false) {
                            let record = refusal(
                                Some(chunk),
                                Some(index),
                                Some(&row.entity),
                                Some(&row.value),
                                None,
                                &error.to_string(),
                                Some(contract),
                            );
                            cursor.set((chunk, index + 1, chunk_bytes));
                            rows_read += 1;
                            stage.refuse(record);
                            return Ok(Flow::More);
                        }
                    }
                }
            } else {
                // Canonical text has the JSONL line's length (compact, unescaped; only the key order differs).
                let (entity, row_len) = match &prepared {
                    Prepared::Accepted { entity, staged, .. } => (entity.name.as_str(), staged.text.len()),
                    Prepared::Row(row) if row.problem.is_some() => (row.entity.as_str(), 0),
                    Prepared::Row(row) => (row.entity.as_str(), encoded_len(&row.value)),
                };
                let line_len = match &prepared {
                    Prepared::Row(row) if row.problem.is_some() => encode_line(row, tagged)?.len(),
                    _ if tagged => "{\"entity\":,\"row\":}".len() + string_len(entity) + row_len,
                    _ => row_len,
                };
                let bytes = line_len + 1;
                if chunk_bytes > 0 && chunk_bytes + bytes > options.chunk_bytes {
                    chunk += 1;
                    index = 0;
                    chunk_bytes = 0;
                }
                chunk_bytes += bytes;
            }
            let position = index;
            index += 1;
            cursor.set((chunk, index, chunk_bytes));
            rows_read += 1;
            let (declared, key, mut staged, value) = match prepared {
                Prepared::Accepted { entity, key, staged, value } => (entity, key, staged, value),
                Prepared::Row(row) => {
                    if let Some(record) = shape_refusal_with(contract, Some(validators), chunk, position, &row.entity, &row.value) {
                        stage.refuse(record);
                        return Ok(Flow::More);
                    }
                    // A row with a range problem its schema accepts.
                    let (key, staged) = staged_row(&row);
                    (contract.entity(&row.entity).expect("shape-checked entity"), key, staged, merge_fill.then_some(row.value))
                }
            };
            staged.chunk = chunk;
            staged.index = position;
            let name = declared.name.as_str();
            stage.rows.hold(name, key, merge_fill, |first| match first {
                Some(mut first) if merge_fill => {
                    let mut merged = first.value();
                    if let (Value::Object(first), Some(Value::Object(later))) = (&mut merged, value) {
                        for (name, value) in later {
                            first.entry(name).or_insert(value);
                        }
                    }
                    first.refs = ref_plans.resolve(name, merged.as_object().expect("object"));
                    first.uniques = unique_plans.declared_tuples(name, &merged);
                    first.text = crate::json::canonical(&merged);
                    first
                }
                _ => staged,
            })?;
            Ok(Flow::More)
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(options.threads.max(1));
        let scan = options.scan.then_some(&prepare_text as _);
        match input {
            Input::Files(sources) => {
                read_rows_prepared(sources, options.entity.as_deref(), &mut seen, progress, threads, scan, &prepare, &mut sink)?;
            }
            Input::Chunks(specs) => {
                for spec in specs {
                    // The sink reads the chunk and index it is given through these.
                    cursor.set((spec.ordinal, 0, 0));
                    let source = [spec.path.to_string_lossy().into_owned()];
                    read_rows_prepared(&source, spec.entity.as_deref(), &mut seen, progress, threads, scan, &prepare, &mut sink)?;
                }
            }
        }
        stage.rows.finish()?;
        Ok(Staging { stage, rows: rows_read })
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
        sql::write(self.contract, &self.validators, store, &staging.stage.rows, mode, batch, commit)
    }
}

/// The references step and the apply of staged rows against the snapshot at
/// `parent`: the apply decided in memory (an `append`) or in a scratch copy of
/// `parent` (a `replace`, or what memory cannot decide). Nothing is written.
fn decide(engine: &Engine<'_>, mut staging: Staging, parent: &Path, options: &CheckOptions) -> Result<CheckReport> {
    let contract = engine.contract;
    let timing = std::env::var_os("GATEWAY_TIMING").is_some();
    let clock = std::time::Instant::now();
    let lap = |what: &str| {
        if timing {
            eprintln!("{what}: {:.3}s", clock.elapsed().as_secs_f64());
        }
    };
    let snapshot = Connection::open_with_flags(parent, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    // One read transaction for the whole check: without it every lookup takes and drops
    // the file lock and SQLite empties its page cache in between.
    snapshot.execute_batch("PRAGMA cache_size = -16384; BEGIN")?;
    engine.references(&mut staging, &snapshot, options.mode.as_str())?;
    lap("references");
    let decided = if options.mode == Mode::Append && !options.exact {
        memory::apply(contract, &engine.validators, &engine.unique_plans, &snapshot, &staging.stage.rows)?
    } else {
        Decision::Undecided
    };
    // Ok(counts after the batch) or Err(the refusal).
    let outcome = match decided {
        Decision::Accepted(counts) => Ok(counts),
        Decision::Refused(record) => Err(record),
        Decision::Undecided => {
            let scratch = crate::data::tempfile_dir::Scratch::new("gateway-check")?;
            let copy = scratch.path().join("state.sqlite");
            std::fs::copy(parent, &copy).map_err(|e| Error::io(e, parent))?;
            let store = Store::open(&copy, contract.clone(), false)?;
            sql::apply(contract, &engine.validators, &store, &staging.stage.rows, options.mode.as_str())?
        }
    };
    let (refused, entity_counts) = match outcome {
        Ok(counts) => (None, counts),
        // A refused batch leaves the parent's counts.
        Err(record) => (Some(record), memory::counts(contract, &snapshot, &Default::default())?),
    };
    drop(snapshot);
    if let Some(record) = refused {
        staging.refuse(record);
    }
    lap("apply");
    let rows = staging.rows;
    let (refusals, refusal_count) = staging.into_refusals();
    Ok(CheckReport { rows, refusals, refusal_count, entity_counts })
}

/// Check rows files against the world at `root` without changing its data files.
///
/// Like the original this builds `db/state.sqlite` in the world when it is not
/// current; the rows are applied to a scratch copy that is then discarded.
pub fn check_rows(root: &Path, sources: &[String], options: &CheckOptions, progress: Option<Progress<'_>>) -> Result<CheckReport> {
    let timing = std::env::var_os("GATEWAY_TIMING").is_some();
    let clock = std::time::Instant::now();
    let contract = check_bundle(root)?;
    if timing {
        eprintln!("check_bundle: {:.3}s", clock.elapsed().as_secs_f64());
    }
    let engine = Engine::new(&contract);
    let staging = engine.stage(Input::Files(sources), options, progress)?;
    if staging.rows == 0 {
        return Ok(CheckReport { rows: 0, refusals: Vec::new(), refusal_count: 0, entity_counts: object::<_, String>([]) });
    }
    if timing {
        eprintln!("stage: {:.3}s", clock.elapsed().as_secs_f64());
    }
    build_default(root, &contract, false)?;
    decide(&engine, staging, &default_snapshot(root), options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_records_point_at_the_row() {
        let record = refusal(Some(0), Some(7), Some("users"), None, Some("profile/team"), "Expected string", None);
        assert_eq!(
            crate::json::dumps(&record, ROW_LINE),
            r#"{"chunk":0,"index":7,"entity":"users","primaryKey":null,"field":"profile/team","pointer":"/users/7/profile/team","detail":"Expected string"}"#
        );
        let record = refusal(None, None, None, None, None, "Persisted SQLite relationship check failed", None);
        assert_eq!(record.get("pointer").and_then(Value::as_str), Some("/"));
    }

    #[test]
    fn report_is_capped() {
        let report = CheckReport {
            rows: 3,
            refusals: (0..3).map(|i| refusal(Some(0), Some(i), Some("a"), None, None, "x", None)).collect(),
            refusal_count: 3,
            entity_counts: Value::Null,
        };
        let text = report.report_lines(2);
        assert_eq!(text.lines().count(), 3);
        assert_eq!(text.lines().last(), Some(r#"{"truncated":true,"total":3}"#));
    }
}

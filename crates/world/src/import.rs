//! `data import` into a world directory: rows written the way the world's kind seeds.
//!
//! * A **schema** world gets a new batch: folded into `data/initial.json` (a new
//!   `.v<N+1>` id) or, once refresh journals exist, written as the next
//!   `data/batches/<N:06d>-<sha16>.json`. The new file is proven first: a scratch
//!   copy of the world with the file in place builds its default snapshot from
//!   scratch, so any row the contract refuses is refused with the store's own
//!   diagnostic and nothing in the world changes. Then the file is written
//!   atomically, the proven snapshot moved into `db/`, and the world compiled and
//!   checked.
//! * A **mock-tools** world gets statements appended to `db/seed.sql`, columns
//!   checked against `db/schema.sql` and the seed proven to load in a scratch
//!   database first.

use crate::data::tempfile_dir::Scratch;
use crate::data::{entity_counts, refuse_kind};
use crate::error::{ContractError, Error, Result};
use crate::files::{read_batch, read_json, sha256_hex, write_atomic, write_atomic_pieces, write_atomic_with, BatchFile};
use crate::json::{dumps_with_items, encoded, object, DumpOptions, Spread, Value};
use crate::mock_tools::{materialize_mock_tools, sqlite_columns, sqlite_counts, sqlite_statements};
use crate::plan::{consulted, held_from, plan, Mode, Rows};
use crate::rows::{count_rows, plain, read_rows, Flow, Seen};
use crate::snapshot::{build_default, default_snapshot, sidecar_path};
use crate::world::World;
use rusqlite::Connection;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Rows a directory import takes at most (the platform takes larger data in chunks).
pub const INLINE_ROWS: usize = 5000;
/// Bytes of input a directory import takes at most.
pub const INLINE_BYTES: u64 = 4 * 1024 * 1024;
/// Left out of scratch copies: captures, caches, and the snapshots (rebuilt from the data).
const SCRATCH_IGNORE: [&str; 5] = ["captures", "__pycache__", ".gateway", "state.sqlite", "state.json"];

/// Rows read for an import, with the rows whose text held an unpaired surrogate.
#[derive(Debug, Default)]
pub struct ParsedRows {
    /// `{entity: [rows]}`; every entity a file names is present, even with no rows
    /// (a `replace` empties it).
    pub rows: Rows,
    /// `(entity, index, pointer inside the row)` of each row with an unpaired
    /// surrogate (held here as U+FFFD: the original carries the surrogate into the
    /// file it proves, whose read refuses it).
    pub surrogates: Vec<(String, usize, String)>,
}

/// Read rows files for an import.
pub fn parse_rows(sources: &[String], entity: Option<&str>) -> Result<ParsedRows> {
    let mut parsed = ParsedRows::default();
    let mut seen = Seen::default();
    read_rows(sources, entity, &mut seen, None, &mut |row| {
        let listed = parsed.rows.entry(row.entity.clone()).or_default();
        if let Some(problem) = row.problem.as_ref().filter(|p| p.code == "json") {
            let pointer = if entity.is_none() && problem.pointer.starts_with("/row") && sources_tagged(&problem.pointer) {
                problem.pointer[4..].to_string()
            } else {
                problem.pointer.clone()
            };
            parsed.surrogates.push((row.entity.clone(), listed.len(), pointer));
        }
        listed.push(row.value);
        Ok(Flow::More)
    })?;
    for name in seen.keys() {
        parsed.rows.entry(name.clone()).or_default();
    }
    Ok(parsed)
}

fn sources_tagged(pointer: &str) -> bool {
    pointer == "/row" || pointer.starts_with("/row/")
}

/// The platform slug a local world would import into: its pulled metadata, else its name.
pub fn world_slug(root: &Path) -> String {
    let meta = root.join(".gateway/.env-metadata.json");
    if let Some(slug) = std::fs::read(&meta)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| crate::json::parse_loads(&t).ok())
        .and_then(|p| p.value.get("slug").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string))
    {
        return slug;
    }
    std::fs::canonicalize(root)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| root.to_string_lossy().into_owned())
}

/// The inline cap of a directory import: input size and row count (counted by
/// streaming, stopping past the cap).
pub fn refuse_large(root: &Path, sources: &[String], entity: Option<&str>) -> Result<()> {
    let size: u64 = sources
        .iter()
        .filter(|s| s.as_str() != "-")
        .filter_map(|s| std::fs::metadata(s).ok().filter(|m| m.is_file()).map(|m| m.len()))
        .sum();
    if size > INLINE_BYTES || count_rows(sources, entity, Some(INLINE_ROWS))? > INLINE_ROWS {
        return Err(plain(format!(
            "{} file(s) exceed the inline cap ({INLINE_ROWS} rows / {INLINE_BYTES} bytes) for a directory; import into the platform world `{}`",
            sources.len(),
            world_slug(root)
        )));
    }
    Ok(())
}

/// Write `rows` into the world at `root` the way its kind seeds.
pub fn import_rows(root: &Path, parsed: &ParsedRows, mode: Mode, batch_id: Option<&str>) -> Result<Value> {
    import_into(&World::open(root)?, parsed, mode, batch_id)
}

/// [`import_rows`] into an opened world: its contract is built at most once.
pub fn import_into(world: &World, parsed: &ParsedRows, mode: Mode, batch_id: Option<&str>) -> Result<Value> {
    let mode = mode.as_str();
    match world.kind() {
        "schema" => import_schema(world, parsed, mode, batch_id),
        "mock-tools" => import_mock_tools(world.root(), &parsed.rows, mode),
        kind => Err(refuse_kind(kind, world.root()).into()),
    }
}

fn journal_paths(root: &Path) -> Vec<PathBuf> {
    crate::snapshot::data_files(root).into_iter().filter(|p| p.is_file()).collect()
}

/// A batch's mutations, moved out of it (a journal is as large as its import).
fn into_mutations(batch: Value) -> Vec<Value> {
    match batch {
        Value::Object(mut members) => match members.swap_remove("mutations") {
            Some(Value::Array(mutations)) => mutations,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// How a new `data/initial.json` is written: as the original's `json.dumps(batch,
/// indent=1, sort_keys=True)`.
const INITIAL_JSON: DumpOptions = DumpOptions { sort_keys: true, ensure_ascii: true, indent: Some(1), compact: false };

/// The new data file an import writes, before it is proven.
enum Written {
    /// The next journal under `data/batches/`: the fresh mutations alone (as large as
    /// the import), encoded.
    Journal { id: Value, payload: Vec<u8> },
    /// `data/initial.json` again: its header, then the prior mutations kept (read from
    /// the old file one at a time as it is written) and the fresh ones.
    Initial { head: crate::json::Map },
}

fn import_schema(world: &World, parsed: &ParsedRows, mode: &str, batch_id: Option<&str>) -> Result<Value> {
    let root = world.root();
    let rows = &parsed.rows;
    if root.join("db/snapshot.json").is_file() {
        return Err(ContractError::new(
            "snapshot_pinned",
            "This world's data is a hosted snapshot (db/snapshot.json), which its data files cannot reproduce: import rows through the platform (`gateway worlds data import <slug>` or import_world_data) instead of into the checkout",
            "/db/snapshot.json",
        )
        .into());
    }
    let contract = world.compile(true)?;
    let journals = journal_paths(root);
    let initial_path = root.join("data/initial.json");
    // initial.json is held as text and its mutations parsed as each pass reaches them:
    // the tree of a world's data is never built.
    let previous_file = if initial_path.is_file() { Some(read_batch(&initial_path)?) } else { None };
    let previous = previous_file.as_ref().map(BatchFile::spread);
    let package = contract.package().get("id").and_then(Value::as_str).unwrap_or_default().to_string();
    let prior_id = match &previous {
        Some(batch) => batch.value.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
        None => format!("{package}.initial.v0"),
    };
    let prior = || previous.iter().flat_map(Spread::items).map(|item| item.expect("accepted JSON text"));
    let mut refreshed = Vec::new();
    if previous.is_some() {
        for path in journals.iter().skip(1) {
            refreshed.extend(into_mutations(read_json(path)?));
        }
    }
    let consulted = consulted(&contract, rows, mode);
    let mut held = held_from(&contract, prior().map(Cow::Owned).chain(refreshed.iter().map(Cow::Borrowed)), &consulted);
    let mut fresh = plan(&contract, rows, mode, &mut held)?;
    if fresh.is_empty() {
        return Ok(object([
            ("kind", Value::str("schema")),
            ("batch", Value::Str(prior_id)),
            ("entity_counts", entity_counts(root)?),
            ("changed", Value::Bool(false)),
        ]));
    }
    // Folded into initial.json, a replace is written compactly: the named entities' old
    // mutations are dropped and the rows inserted afresh.
    let compact = mode == "replace" && refreshed.is_empty();
    let kept = |mutation: &Value| !compact || !mutation.get("entity").and_then(Value::as_str).is_some_and(|e| rows.contains_key(e));
    if compact {
        fresh = plan(&contract, rows, mode, &mut held_from(&contract, prior().filter(|m| kept(m)), &consulted))?;
    }
    let version = prior_id
        .rsplit_once(".v")
        .and_then(|(_, n)| (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| n.parse::<u64>().ok()).flatten())
        .map_or(1, |n| n + 1);
    let mapping = object([("id", Value::str("data-import")), ("version", Value::str("1"))]);
    let batch_value = |id: String, mutations: Vec<Value>| {
        object([
            ("id", Value::Str(id)),
            ("target", contract.target().clone()),
            ("mapping", mapping.clone()),
            ("coverage", Value::str("partial")),
            ("mutations", Value::Array(mutations)),
        ])
    };
    let (written, file) = if refreshed.is_empty() {
        let id = batch_id.map(str::to_string).unwrap_or_else(|| format!("{package}.initial.v{version}"));
        let Value::Object(head) = batch_value(id, Vec::new()) else { unreachable!("built as an object") };
        (Written::Initial { head }, PathBuf::from("data/initial.json"))
    } else {
        let id = batch_id.map(str::to_string).unwrap_or_else(|| format!("{package}.import.{:06}", journals.len()));
        let name = format!("{:06}-{}.json", journals.len(), &sha256_hex(id.as_bytes())[..16]);
        let batch = batch_value(id.clone(), fresh);
        let payload = encoded(&batch);
        fresh = into_mutations(batch);
        (Written::Journal { id: Value::Str(id), payload }, PathBuf::from("data/batches").join(name))
    };
    if let Some((entity, index, pointer)) = parsed.surrogates.first() {
        // Where the row stands in the file written: after the prior mutations kept.
        let row = crate::json::canonical(&rows[entity][*index]);
        let before: Box<dyn Iterator<Item = Value>> =
            if matches!(written, Written::Initial { .. }) { Box::new(prior().filter(|m| kept(m))) } else { Box::new(std::iter::empty()) };
        let position = before.chain(fresh.iter().cloned()).position(|m| {
            m.get("entity").and_then(Value::as_str) == Some(entity) && m.get("value").is_some_and(|v| crate::json::canonical(v) == row)
        });
        if let Some(position) = position {
            let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
            return Err(ContractError::new(
                "json",
                "Unpaired Unicode surrogate is unsupported",
                format!("{name}/mutations/{position}/value{pointer}"),
            )
            .into());
        }
    }
    let scratch = Scratch::new("gateway-import")?;
    let staged = scratch.path().join("world");
    copy_tree(root, &staged)?;
    let staged_file = staged.join(&file);
    let written_id = match written {
        Written::Journal { id, payload, .. } => {
            write_atomic(&staged_file, &payload).map_err(|e| Error::io(e, &staged_file))?;
            id
        }
        Written::Initial { head } => {
            write_initial(&staged_file, &head, prior().filter(|m| kept(m)).chain(fresh))?;
            head.get("id").cloned().unwrap_or_default()
        }
    };
    // initial.json's old text goes before the proof reads the new file back.
    drop(previous);
    drop(previous_file);
    // Building the staged snapshot is the proof: every row goes through the store.
    // The copy's schema is the world's, and its artifacts were just written: the
    // world's contract is the copy's.
    let sidecar = build_default(&staged, &contract, true)?;
    let counts = sidecar.get("entityCounts").cloned().unwrap_or(Value::Null);
    let target_file = root.join(&file);
    write_atomic_with(&target_file, |out| std::io::copy(&mut std::fs::File::open(&staged_file)?, out).map(drop))
        .map_err(|e| Error::io(e, &target_file))?;
    // The proven snapshot moves into the world; compile finds it current and only
    // rebuilds the scenario snapshots on top of it.
    let target = default_snapshot(root);
    move_file(&default_snapshot(&staged), &target)?;
    move_file(&sidecar_path(&default_snapshot(&staged)), &sidecar_path(&target))?;
    world.compile(true)?;
    world.check()?;
    Ok(object([("kind", Value::str("schema")), ("batch", written_id), ("entity_counts", counts), ("changed", Value::Bool(true))]))
}

/// Write `data/initial.json` (atomically) from its header and its mutations, as the
/// original's `json.dumps(batch, indent=1, sort_keys=True)` and a newline.
fn write_initial(path: &Path, head: &crate::json::Map, mutations: impl Iterator<Item = Value>) -> Result<()> {
    write_atomic_pieces(path, |sink| {
        dumps_with_items(head, "mutations", mutations, INITIAL_JSON, sink);
        sink("\n");
    })
    .map_err(|e| Error::io(e, path))
}

fn move_file(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(e, parent))?;
    }
    if std::fs::rename(from, to).is_err() {
        // Across filesystems: copy beside the target, then rename into place.
        let temp = to.with_file_name(format!(".{}.moving", to.file_name().unwrap_or_default().to_string_lossy()));
        std::fs::copy(from, &temp).map_err(|e| Error::io(e, from))?;
        std::fs::rename(&temp, to).map_err(|e| Error::io(e, to))?;
        let _ = std::fs::remove_file(from);
    }
    Ok(())
}

fn ignored(name: &str) -> bool {
    SCRATCH_IGNORE.contains(&name) || name.starts_with(".state.sqlite.")
}

/// Copy a world into a scratch directory, leaving out captures, caches and snapshots;
/// a symbolic link is copied as the link (the proof reads what the world reads).
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    use gateway_common::fs::{copy_tree, Symlinks};
    copy_tree(from, to, Symlinks::Keep, &|entry| ignored(entry.name)).map_err(Error::from)
}

fn import_mock_tools(root: &Path, rows: &Rows, mode: &str) -> Result<Value> {
    let schema = root.join("db/schema.sql");
    if !schema.is_file() {
        return Err(ContractError::new("schema", "mock-tools world has no db/schema.sql to read tables from", "db/schema.sql").into());
    }
    let probe = Connection::open_in_memory()?;
    let text = std::fs::read_to_string(&schema).map_err(|e| Error::io(e, &schema))?;
    if let Err(error) = probe.execute_batch(&text) {
        let message = match &error {
            rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
            other => other.to_string(),
        };
        return Err(ContractError::new("schema", format!("db/schema.sql does not load: {message}"), "db/schema.sql").into());
    }
    let columns = sqlite_columns(&probe)?;
    let statements = sqlite_statements(&columns, rows, mode)?;
    if statements.is_empty() {
        return Ok(object([("kind", Value::str("mock-tools")), ("entity_counts", entity_counts(root)?), ("changed", Value::Bool(false))]));
    }
    let seed = root.join("db/seed.sql");
    let mut existing = if seed.is_file() { std::fs::read_to_string(&seed).map_err(|e| Error::io(e, &seed))? } else { String::new() };
    if !existing.is_empty() && !existing.ends_with('\n') {
        existing.push('\n');
    }
    let appended = format!("{existing}{}\n", statements.join("\n"));
    let scratch = Scratch::new("gateway-import")?;
    let staged = scratch.path().join("world");
    copy_tree(root, &staged)?;
    let staged_seed = staged.join("db/seed.sql");
    write_atomic(&staged_seed, appended.as_bytes()).map_err(|e| Error::io(e, &staged_seed))?;
    let conn = materialize_mock_tools(&staged, &scratch.path().join("world.db"))?;
    let counts = sqlite_counts(&conn)?;
    drop(conn);
    write_atomic(&seed, appended.as_bytes()).map_err(|e| Error::io(e, &seed))?;
    Ok(object([
        ("kind", Value::str("mock-tools")),
        ("entity_counts", counts),
        ("changed", Value::Bool(true)),
        ("statements", Value::Int(statements.len() as i64)),
    ]))
}

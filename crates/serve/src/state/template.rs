//! The template every session of one world reads: the world checked, its default
//! snapshot (or its initial batch replayed once) copied into a private file and given
//! the serving indexes, shared read-only by every session's database.

use super::db::{cow_error, exact_expression, fold_expression};
use gateway_world::compiler::quote;
use gateway_world::data::tempfile_dir::Scratch;
use gateway_world::error::Error as WorldError;
use gateway_world::json::Value;
use gateway_world::snapshot;
use gateway_world::store::{new_batch_id, register_functions, Store, SERVING_INDEX_PREFIX};
use gateway_world::{Contract, Result};
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What every session of one world shares: the checked contract, the snapshot's
/// sidecar and the indexed template every session database reads its unchanged pages
/// from. Built once per world (per version, on a host), never written after.
pub struct Template {
    pub(super) world: PathBuf,
    pub(super) contract: Arc<Contract>,
    /// The sidecar of the snapshot in use (None on the legacy path).
    pub(super) snapshot: Option<Value>,
    /// The indexed template: a normal SQLite file, shared read-only by every session.
    pub(super) base: Arc<gateway_cow::Base>,
    /// Holds the template file; removed when the last session lets go.
    _scratch: Scratch,
    /// Per entity, the dotted paths that have a serving index.
    pub(super) indexed: BTreeMap<String, Vec<String>>,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Template").field("world", &self.world).finish()
    }
}

impl Template {
    /// Check the world and prepare its indexed template. `indexed` names, per
    /// entity, the dotted paths equality filters use.
    pub fn open(world: &Path, indexed: BTreeMap<String, Vec<String>>) -> Result<Template> {
        Template::open_world(&gateway_world::World::open(world)?, indexed)
    }

    /// [`Template::open`] of an opened world: its contract is not built again.
    pub fn open_world(opened: &gateway_world::World, indexed: BTreeMap<String, Vec<String>>) -> Result<Template> {
        let world = opened.root();
        let contract = opened.check()?;
        let sidecar = snapshot::current_default(world, &contract)?;
        let scratch = Scratch::new("gateway-world-api")?;
        let template = scratch.path().join("template.db");
        match &sidecar {
            Some(_) => {
                let source = snapshot::default_snapshot(world);
                std::fs::copy(&source, &template).map_err(|e| WorldError::io(e, &source))?;
            }
            None => {
                // The legacy path: no current snapshot, the initial batch replayed once.
                let initial = gateway_world::files::read_json(&world.join("data/initial.json"))?;
                let mut store = Store::create(&template, contract.clone())?;
                store.apply_batch(&initial)?;
                store.close()?;
            }
        }
        add_indexes(&template, &contract, &indexed)?;
        gateway_cow::register().map_err(cow_error)?;
        let base = gateway_cow::Base::open(&template).map_err(cow_error)?;
        Ok(Template { world: world.to_path_buf(), contract, snapshot: sidecar, base, _scratch: scratch, indexed })
    }

    /// The first `limit` rows of an entity as the world starts (its seed), in key
    /// order: what the served OpenAPI document shows as examples.
    pub fn seed_rows(&self, entity: &str, limit: usize) -> Result<Vec<Value>> {
        let conn = Connection::open_with_flags(self.base.path(), OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        let sql = format!("SELECT payload FROM {} ORDER BY _key LIMIT ?1", quote(entity));
        let mut statement = conn.prepare(&sql)?;
        let rows = statement.query_map([limit as i64], |r| r.get::<_, String>(0))?;
        Ok(rows.map(|r| r.map(|text| parse_payload(&text))).collect::<rusqlite::Result<_>>()?)
    }

    /// The indexed template file every session copies (read apart by `state_diff`).
    pub(crate) fn path(&self) -> &Path {
        self.base.path()
    }

    /// The world's directory.
    pub fn world(&self) -> &Path {
        &self.world
    }

    /// The world's contract.
    pub fn contract(&self) -> &Arc<Contract> {
        &self.contract
    }

    /// The template's database file: a normal SQLite file (sessions share it read-only;
    /// it may be attached by name), never written while the template lives.
    pub fn database(&self) -> &Path {
        self.base.path()
    }

    /// A whole copy of the template at a new path in `dir` (a durable session's start).
    pub(super) fn copy_into(&self, dir: &Path) -> Result<PathBuf> {
        let path = dir.join(format!("{}.db", new_batch_id()));
        std::fs::copy(self.base.path(), &path).map_err(|e| WorldError::io(e, self.base.path()))?;
        Ok(path)
    }

    /// The batch digest of the snapshot the template holds.
    pub fn digest(&self) -> Option<String> {
        self.snapshot.as_ref().and_then(|s| s.get("batchDigest")).and_then(Value::as_str).map(str::to_string)
    }
}

/// A stored row's payload as a value.
pub(super) fn parse_payload(text: &str) -> Value {
    gateway_world::json::parse_clean(text).unwrap_or_default()
}

/// Give the database at `path` the serving indexes `indexed` names (per entity, the
/// dotted paths of equality filters), in WAL mode, checkpointed whole.
pub(super) fn add_indexes(path: &Path, contract: &Arc<Contract>, indexed: &BTreeMap<String, Vec<String>>) -> Result<()> {
    let conn = Connection::open(path)?;
    register_functions(&conn)?;
    // WAL is recorded in the file: every copy of this one opens in WAL mode already.
    conn.execute_batch("PRAGMA journal_mode = WAL")?;
    for (entity, paths) in indexed {
        if contract.entity(entity).is_none() {
            continue;
        }
        for (n, dotted) in paths.iter().enumerate() {
            let name = quote(&format!("{SERVING_INDEX_PREFIX}{entity}_{n}"));
            // The exact value last: the key order of one folded value is the index's
            // order still, and a count of exact equals is answered from the index alone.
            conn.execute_batch(&format!(
                "CREATE INDEX IF NOT EXISTS {name} ON {} ({}, _key, {})",
                quote(entity),
                fold_expression(dotted),
                exact_expression(dotted)
            ))?;
        }
    }
    // The file whole, no log beside it: a template is shared as it stands on disk.
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

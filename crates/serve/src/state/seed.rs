//! Seeding a session: the runner's legacy whole state or an overlay on the snapshot,
//! rows onto the world as it stands, and the world's scenarios.

use super::template::add_indexes;
use super::WorldState;
use gateway_world::error::{ContractError, Error as WorldError};
use gateway_world::json::{object, Map, Value};
use gateway_world::plan::{rows_from_object, seed_batch, Rows, MODES};
use gateway_world::snapshot;
use gateway_world::store::new_batch_id;
use gateway_world::Result;

impl WorldState {
    /// Start in one of the world's scenarios.
    pub fn apply_scenario(&self, name: &str) -> Result<()> {
        let scenarios = snapshot::scenario_dirs(&self.shared.world)?;
        let Some(scenario) = scenarios.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
            let listed = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            return Err(ContractError::new(
                "scenario",
                format!("No scenario {name}; the world has {listed}"),
                format!("/scenarios/{name}"),
            )
            .into());
        };
        let built = snapshot::scenario_snapshot(&self.shared.world, name);
        if let Some(default_digest) = self.digest() {
            let mut chunks = Vec::new();
            for path in snapshot::scenario_seed_files(&scenario.dir)? {
                chunks.push(gateway_world::files::file_sha256(&path).map_err(|e| WorldError::io(e, &path))?);
            }
            let digest = snapshot::batch_digest(&default_digest, &format!("scenario:{name}"), &chunks);
            let sidecar = gateway_world::snapshot::read_sidecar(&built)?;
            let current = built.is_file()
                && sidecar.is_some_and(|s| {
                    s.get("contractHash").and_then(Value::as_str) == Some(self.shared.contract.contract_hash().as_str())
                        && s.get("batchDigest").and_then(Value::as_str) == Some(digest.as_str())
                });
            if current {
                let path = self.home().join(format!("{}.db", new_batch_id()));
                std::fs::copy(&built, &path).map_err(|e| WorldError::io(e, &built))?;
                add_indexes(&path, &self.shared.contract, &self.shared.indexed)?;
                return self.replace_db(&path);
            }
            let overlay = snapshot::scenario_overlay(&scenario.dir)?;
            self.reset()?;
            return self.seed_live(&Value::Object(overlay), "replace");
        }
        let initial = gateway_world::files::read_json(&self.shared.world.join("data/initial.json"))?;
        let mut base = Map::default();
        for mutation in initial.get("mutations").and_then(Value::as_array).into_iter().flatten() {
            if mutation.get("op").and_then(Value::as_str) == Some("insert") {
                let entity = mutation.get("entity").and_then(Value::as_str).unwrap_or_default().to_string();
                if let Value::Array(rows) = base.entry(entity).or_insert_with(|| Value::Array(Vec::new())) {
                    rows.push(mutation.get("value").cloned().unwrap_or_default());
                }
            }
        }
        for (entity, rows) in snapshot::scenario_overlay(&scenario.dir)? {
            base.insert(entity, rows);
        }
        self.seed(&Value::Object(base))
    }

    /// The runner's seed: a legacy whole state `{entity: [rows]}` on an empty world,
    /// or an overlay `{base, rows, mode}` on the snapshot.
    pub fn seed(&self, body: &Value) -> Result<()> {
        let Some(map) = body.as_object() else {
            return Err(ContractError::new("seed", "Seed must be an object of entity -> rows", "/seed").into());
        };
        if let (Some(Value::Str(base)), Some(Value::Object(rows))) = (map.get("base"), map.get("rows")) {
            let mode = map.get("mode").cloned().unwrap_or(Value::str("append"));
            let mode = mode
                .as_str()
                .filter(|m| MODES.contains(m))
                .ok_or_else(|| ContractError::new("seed", format!("mode must be one of {}", MODES.join(", ")), "/seed/mode"))?;
            if Some(base.as_str()) != self.digest().as_deref() {
                let expected = self.digest().map(Value::Str).unwrap_or_default();
                return Err(ContractError::new("base_mismatch", "The overlay's base is not the snapshot this world is on", "")
                    .with("expected", expected)
                    .into());
            }
            self.reset()?;
            return self.seed_live(&Value::Object(rows.clone()), mode);
        }
        let mut mutations = Vec::new();
        for (entity, rows) in map {
            if self.shared.contract.entity(entity).is_none() {
                return Err(ContractError::new("seed", format!("Unknown entity {entity}"), format!("/seed/{entity}")).into());
            }
            let Some(rows) = rows.as_array() else {
                return Err(ContractError::new("seed", "Rows must be an array", format!("/seed/{entity}")).into());
            };
            for row in rows {
                mutations.push(object([
                    ("op", Value::str("insert")),
                    ("entity", Value::str(entity)),
                    ("value", row.clone()),
                    ("source", object([("record", Value::Str(format!("api-seed:{entity}")))])),
                ]));
            }
        }
        self.reset_empty()?;
        if mutations.is_empty() {
            return Ok(());
        }
        let batch = object([
            ("id", Value::Str(format!("api-seed-{}", new_batch_id()))),
            ("target", self.shared.contract.target().clone()),
            ("mapping", object([("id", Value::str("api-seed")), ("version", Value::str("1"))])),
            ("coverage", Value::str("partial")),
            ("mutations", Value::Array(mutations)),
        ]);
        self.write(|store| store.apply_batch(&batch).map(|_| ()), None)
    }

    /// Rows onto the world as it stands (append upserts, replace swaps entities).
    pub fn seed_live(&self, rows: &Value, mode: &str) -> Result<()> {
        check_mode(mode)?;
        let Some(rows): Option<Rows> = rows_from_object(rows) else {
            return Err(ContractError::new("rows", "rows must map entity names to arrays of rows", "/rows").into());
        };
        self.seed_rows(&rows, mode)
    }

    /// [`WorldState::seed_live`] of rows already grouped by entity.
    pub fn seed_rows(&self, rows: &Rows, mode: &str) -> Result<()> {
        check_mode(mode)?;
        self.write(
            |store| {
                let batch = seed_batch(store, rows, mode, Some(&format!("api-seed-{}", new_batch_id())))?;
                store.apply_batch(&batch).map(|_| ())
            },
            None,
        )
    }
}

fn check_mode(mode: &str) -> Result<()> {
    if MODES.contains(&mode) {
        return Ok(());
    }
    Err(ContractError::new("seed", format!("mode must be one of {}", MODES.join(", ")), "/seed/mode").into())
}

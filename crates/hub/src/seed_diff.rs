//! The row-level diff of a schema world's seed data between two versions: each
//! version's batches (`data/initial.json`, then `data/batches/*.json` in name order, the
//! engine's replay order) folded into rows per entity, keyed by the entity's primary key
//! (named by `schema/runtime.json`, else `schema/world.json`'s `x-gateway.entities`,
//! else `id`); then per entity the rows added, removed and changed, and for a changed
//! row the fields that differ.
//!
//! It is not the engine's batch apply: nothing is validated against the contract and no
//! SQLite is built — a mutation is folded as the store would fold it (insert sets the
//! row, update merges its members shallowly, delete removes it), and a malformed
//! mutation is reported, not guessed at. The work is linear (rows held in ordered maps,
//! compared in one merge pass), so a 20K-row seed diffs in well under a second; it holds
//! the two folded states, never a row per pair.

use gateway_world::json::{self, json_equal, Map, Value};
use std::collections::BTreeMap;

/// Primary key fields per entity.
pub type PrimaryKeys = BTreeMap<String, Vec<String>>;

/// Where a bundle keeps its world: the root for a schema world, `server/world/` in an
/// api bundle (`schema api-bundle`).
pub const WORLD_ROOTS: [&str; 2] = ["", "server/world/"];

/// Whether a bundle member is one this module reads (relative to a world root).
pub fn is_seed_member(rel: &str) -> bool {
    rel == "data/initial.json"
        || rel == "schema/runtime.json"
        || rel == "schema/world.json"
        || (rel.starts_with("data/batches/") && rel.ends_with(".json") && !rel["data/batches/".len()..].contains('/'))
}

/// The primary keys a world names: `schema/runtime.json`'s `entities.*.primary_key`
/// (the compiled contract), else `schema/world.json`'s `x-gateway.entities.*.primary_key`.
/// Entities named by neither are keyed by `id` (see [`SeedState::key_fields`]).
pub fn primary_keys(runtime_json: Option<&str>, world_json: Option<&str>) -> PrimaryKeys {
    let read = |text: Option<&str>, path: &[&str]| -> PrimaryKeys {
        let Some(value) = text.and_then(json::parse_clean) else { return PrimaryKeys::new() };
        let entities = path.iter().try_fold(&value, |v, k| v.get(k));
        let mut out = PrimaryKeys::new();
        for (name, entity) in entities.and_then(Value::as_object).into_iter().flatten() {
            let fields = crate::util::strings(entity.get("primary_key"));
            if !fields.is_empty() {
                out.insert(name.clone(), fields);
            }
        }
        out
    };
    let mut keys = read(world_json, &["x-gateway", "entities"]);
    keys.extend(read(runtime_json, &["entities"]));
    keys
}

/// A world's seed rows after its batches: per entity, rows by their key's canonical text.
#[derive(Debug, Default, Clone)]
pub struct SeedState {
    /// Entity → (key text → row).
    pub entities: BTreeMap<String, BTreeMap<String, Map>>,
    /// Primary keys used (entities not named are keyed by `id`).
    pub keys: PrimaryKeys,
    /// Batch files folded, in order.
    pub files: Vec<String>,
    /// Mutations that could not be folded: `file: mutation N: why` (at most 100 kept).
    pub problems: Vec<String>,
    /// Mutations folded.
    pub mutations: usize,
}

/// Why a batch's mutation could not be folded into the seed rows (a problem the diff
/// page lists, in these words).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unfoldable {
    /// The mutation is not a JSON object.
    #[error("not an object")]
    NotAnObject,
    /// It names no entity.
    #[error("no 'entity' name")]
    NoEntity,
    /// Its `value` is not an object.
    #[error("'value' is not an object")]
    ValueNotAnObject,
    /// An insert or update without its `value` (the op, with its article).
    #[error("{0} needs a 'value'")]
    NoValue(&'static str),
    /// An inserted row without its primary key fields.
    #[error("the row has no {0}")]
    RowWithoutKey(String),
    /// An update or delete without a `key` naming the primary key fields.
    #[error("{op} needs a 'key' with {fields}")]
    NoKey {
        /// The op, with its article (`an update`, `a delete`).
        op: &'static str,
        /// The entity's primary key fields.
        fields: String,
    },
    /// An update or delete of a row the seed does not hold.
    #[error("no row at this key")]
    NoRow,
    /// An op other than insert, update and delete.
    #[error("unknown op '{0}' (insert, update or delete)")]
    UnknownOp(String),
}

/// Most problems a state keeps (a broken file would otherwise list every row).
const MAX_PROBLEMS: usize = 100;

impl SeedState {
    /// An empty state keyed by `keys`.
    pub fn new(keys: PrimaryKeys) -> SeedState {
        SeedState { keys, ..Default::default() }
    }

    /// The key fields of `entity`: its primary key, else `["id"]`.
    pub fn key_fields(&self, entity: &str) -> Vec<String> {
        self.keys.get(entity).cloned().unwrap_or_else(|| vec!["id".to_string()])
    }

    fn problem(&mut self, text: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(text);
        }
    }

    /// The canonical key text of `value` (a row or a key object): the canonical JSON
    /// array of its key fields' values, integral floats as integers, as the engine's `_key`. None when a key field is missing.
    fn key_of(&self, entity: &str, value: &Map) -> Option<String> {
        let mut parts = Vec::new();
        for field in self.key_fields(entity) {
            parts.push(match value.get(&field)? {
                Value::Float(f) if f.fract() == 0.0 && f.abs() <= json::SAFE_INTEGER as f64 => Value::Int(*f as i64),
                other => other.clone(),
            });
        }
        Some(json::canonical(&Value::Array(parts)))
    }

    /// Fold one batch document (`{id, …, mutations: […]}`) named `file`.
    pub fn fold_text(&mut self, file: &str, text: &str) {
        self.files.push(file.to_string());
        match json::parse(text) {
            Ok(parsed) => self.fold(file, parsed.value),
            Err(error) => self.problem(format!("{file}: not JSON: {error:?}")),
        }
    }

    /// Fold one parsed batch document; its rows are moved, not copied.
    pub fn fold(&mut self, file: &str, batch: Value) {
        let Value::Object(mut batch) = batch else {
            self.problem(format!("{file}: a batch is a JSON object"));
            return;
        };
        let mutations = match batch.swap_remove("mutations") {
            Some(Value::Array(items)) => items,
            None => Vec::new(),
            Some(_) => {
                self.problem(format!("{file}: 'mutations' is not a list"));
                return;
            }
        };
        for (index, mutation) in mutations.into_iter().enumerate() {
            if let Err(why) = self.fold_mutation(mutation) {
                self.problem(format!("{file}: mutation {index}: {why}"));
            }
        }
    }

    fn fold_mutation(&mut self, mutation: Value) -> Result<(), Unfoldable> {
        let Value::Object(mut mutation) = mutation else { return Err(Unfoldable::NotAnObject) };
        let entity = match mutation.get("entity") {
            Some(Value::Str(entity)) => entity.clone(),
            _ => return Err(Unfoldable::NoEntity),
        };
        let op = mutation.get("op").and_then(Value::as_str).unwrap_or_default().to_string();
        let value = match mutation.swap_remove("value") {
            Some(Value::Object(map)) => Some(map),
            None => None,
            Some(_) => return Err(Unfoldable::ValueNotAnObject),
        };
        let key_object = match mutation.get("key") {
            Some(Value::Object(map)) => Some(map),
            _ => None,
        };
        let no_key = |op: &'static str| Unfoldable::NoKey { op, fields: self.key_fields(&entity).join(", ") };
        match op.as_str() {
            "insert" => {
                let row = value.ok_or(Unfoldable::NoValue("an insert"))?;
                let key = self.key_of(&entity, &row).ok_or_else(|| Unfoldable::RowWithoutKey(self.key_fields(&entity).join(", ")))?;
                self.entities.entry(entity).or_default().insert(key, row);
            }
            "update" => {
                let patch = value.ok_or(Unfoldable::NoValue("an update"))?;
                let key = key_object.and_then(|k| self.key_of(&entity, k)).ok_or_else(|| no_key("an update"))?;
                let row = self.entities.get_mut(&entity).and_then(|rows| rows.get_mut(&key)).ok_or(Unfoldable::NoRow)?;
                for (field, v) in patch {
                    row.insert(field, v);
                }
            }
            "delete" => {
                let key = key_object.and_then(|k| self.key_of(&entity, k)).ok_or_else(|| no_key("a delete"))?;
                self.entities.get_mut(&entity).and_then(|rows| rows.remove(&key)).ok_or(Unfoldable::NoRow)?;
            }
            other => return Err(Unfoldable::UnknownOp(other.to_string())),
        }
        self.mutations += 1;
        Ok(())
    }

    /// Rows held, all entities.
    pub fn row_count(&self) -> usize {
        self.entities.values().map(BTreeMap::len).sum()
    }
}

/// Fold a world's data files, given as `(path relative to the world root, text)` in any
/// order: `data/initial.json` first, then `data/batches/*.json` by name.
pub fn seed_state(keys: PrimaryKeys, files: Vec<(String, String)>) -> SeedState {
    let mut files = files;
    files.retain(|(rel, _)| rel == "data/initial.json" || rel.starts_with("data/batches/"));
    files.sort_by(|a, b| (a.0 != "data/initial.json", &a.0).cmp(&(b.0 != "data/initial.json", &b.0)));
    let mut state = SeedState::new(keys);
    for (rel, text) in files {
        state.fold_text(&rel, &text);
    }
    state
}

/// One field of a changed row.
#[derive(Debug, Clone)]
pub struct FieldChange {
    /// The field's name.
    pub field: String,
    /// Its value in the base (None: absent).
    pub before: Option<Value>,
    /// Its value in the head (None: absent).
    pub after: Option<Value>,
}

/// A row present in both versions whose fields differ.
#[derive(Debug, Clone)]
pub struct ChangedRow {
    /// The key's canonical text.
    pub key: String,
    /// The differing fields, in the head row's member order, then fields only the base has.
    pub fields: Vec<FieldChange>,
}

/// One entity's diff.
#[derive(Debug, Clone, Default)]
pub struct EntityDiff {
    /// The entity.
    pub entity: String,
    /// Its key fields.
    pub key_fields: Vec<String>,
    /// Rows only in the head, by key.
    pub added: Vec<(String, Map)>,
    /// Rows only in the base, by key.
    pub removed: Vec<(String, Map)>,
    /// Rows in both that differ, by key.
    pub changed: Vec<ChangedRow>,
    /// Rows in both that are equal.
    pub unchanged: usize,
}

impl EntityDiff {
    /// Whether anything differs.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The fields of `before` and `after` that differ (JSON equality: `1 == 1.0`).
pub fn changed_fields(before: &Map, after: &Map) -> Vec<FieldChange> {
    let mut out = Vec::new();
    for (field, value) in after {
        match before.get(field) {
            Some(old) if json_equal(old, value) => {}
            old => out.push(FieldChange { field: field.clone(), before: old.cloned(), after: Some(value.clone()) }),
        }
    }
    for (field, value) in before {
        if !after.contains_key(field) {
            out.push(FieldChange { field: field.clone(), before: Some(value.clone()), after: None });
        }
    }
    out
}

/// The diff of every entity either state holds, by entity name. Entities are compared
/// by one merge pass over their keys (both maps are ordered): linear in the rows.
pub fn diff(base: &SeedState, head: &SeedState) -> Vec<EntityDiff> {
    let empty = BTreeMap::new();
    let mut names: Vec<&String> = base.entities.keys().chain(head.entities.keys()).collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        let old = base.entities.get(name).unwrap_or(&empty);
        let new = head.entities.get(name).unwrap_or(&empty);
        let mut entity = EntityDiff { entity: name.clone(), key_fields: head.key_fields(name), ..Default::default() };
        let (mut a, mut b) = (old.iter().peekable(), new.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (None, None) => break,
                (Some((ka, ra)), Some((kb, rb))) if ka == kb => {
                    let fields = changed_fields(ra, rb);
                    if fields.is_empty() {
                        entity.unchanged += 1;
                    } else {
                        entity.changed.push(ChangedRow { key: (*ka).clone(), fields });
                    }
                    a.next();
                    b.next();
                }
                (Some((ka, ra)), Some((kb, _))) if ka < kb => {
                    entity.removed.push(((*ka).clone(), (*ra).clone()));
                    a.next();
                }
                (Some((ka, ra)), None) => {
                    entity.removed.push(((*ka).clone(), (*ra).clone()));
                    a.next();
                }
                (_, Some((kb, rb))) => {
                    entity.added.push(((*kb).clone(), (*rb).clone()));
                    b.next();
                }
            }
        }
        out.push(entity);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(mutations: &str) -> String {
        format!(r#"{{"id": "b", "target": {{}}, "mapping": {{}}, "coverage": "partial", "mutations": [{mutations}]}}"#)
    }

    fn insert(entity: &str, value: &str) -> String {
        format!(r#"{{"op": "insert", "entity": "{entity}", "value": {value}, "source": {{"record": "r"}}}}"#)
    }

    #[test]
    fn keys_come_from_the_compiled_contract_then_the_authored_one() {
        let world = r#"{"x-gateway": {"entities": {"a": {"primary_key": ["code"]}, "b": {"primary_key": ["x", "y"]}}}}"#;
        let runtime = r#"{"entities": {"a": {"primary_key": ["slug"]}}}"#;
        let keys = primary_keys(Some(runtime), Some(world));
        assert_eq!(keys["a"], vec!["slug"]);
        assert_eq!(keys["b"], vec!["x", "y"]);
        assert_eq!(SeedState::new(keys).key_fields("c"), vec!["id"]);
        assert!(primary_keys(Some("not json"), None).is_empty());
    }

    #[test]
    fn rows_added_removed_and_changed_by_primary_key() {
        let keys = primary_keys(None, Some(r#"{"x-gateway": {"entities": {"tickets": {"primary_key": ["num"]}}}}"#));
        let base = seed_state(
            keys.clone(),
            vec![(
                "data/initial.json".into(),
                batch(
                    &[
                        insert("tickets", r#"{"num": 1, "status": "open", "tags": ["a"]}"#),
                        insert("tickets", r#"{"num": 2, "status": "open"}"#),
                        insert("tickets", r#"{"num": 3, "status": "open", "old": true}"#),
                        insert("customers", r#"{"id": "C1", "name": "Ada"}"#),
                    ]
                    .join(","),
                ),
            )],
        );
        let head = seed_state(
            keys,
            vec![
                (
                    "data/batches/0002.json".into(),
                    batch(
                        &[
                            r#"{"op": "update", "entity": "tickets", "key": {"num": 3}, "value": {"status": "solved"}, "source": {}}"#
                                .to_string(),
                            r#"{"op": "delete", "entity": "tickets", "key": {"num": 2}, "source": {}}"#.to_string(),
                        ]
                        .join(","),
                    ),
                ),
                (
                    "data/initial.json".into(),
                    batch(
                        &[
                            insert("tickets", r#"{"num": 1.0, "status": "open", "tags": ["a"]}"#),
                            insert("tickets", r#"{"num": 2, "status": "open"}"#),
                            insert("tickets", r#"{"num": 3, "status": "open"}"#),
                            insert("tickets", r#"{"num": 4, "status": "new"}"#),
                            insert("customers", r#"{"id": "C1", "name": "Ada"}"#),
                        ]
                        .join(","),
                    ),
                ),
            ],
        );
        assert_eq!(head.files, vec!["data/initial.json", "data/batches/0002.json"], "initial first, then journals by name");
        assert!(head.problems.is_empty(), "{:?}", head.problems);
        let diff = diff(&base, &head);
        assert_eq!(diff.iter().map(|e| e.entity.as_str()).collect::<Vec<_>>(), ["customers", "tickets"]);
        assert!(diff[0].is_empty() && diff[0].unchanged == 1);
        let tickets = &diff[1];
        assert_eq!(tickets.key_fields, vec!["num"]);
        assert_eq!(tickets.added.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["[4]"]);
        assert_eq!(tickets.removed.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["[2]"]);
        assert_eq!(tickets.unchanged, 1, "1.0 and 1 are one key and equal values");
        assert_eq!(tickets.changed.len(), 1);
        let changed = &tickets.changed[0];
        assert_eq!(changed.key, "[3]");
        let fields: Vec<(&str, String, String)> = changed
            .fields
            .iter()
            .map(|f| {
                let show = |v: &Option<Value>| v.as_ref().map(json::canonical).unwrap_or_else(|| "-".into());
                (f.field.as_str(), show(&f.before), show(&f.after))
            })
            .collect();
        assert_eq!(fields, [("status", "\"open\"".into(), "\"solved\"".into()), ("old", "true".into(), "-".into())]);
    }

    #[test]
    fn bad_mutations_are_reported_not_guessed() {
        let state = seed_state(
            PrimaryKeys::new(),
            vec![
                (
                    "data/initial.json".into(),
                    batch(
                        &[
                            insert("t", r#"{"name": "no id"}"#),
                            r#"{"op": "update", "entity": "t", "key": {"id": 9}, "value": {}, "source": {}}"#.into(),
                            r#"{"op": "upsert", "entity": "t", "value": {"id": 1}, "source": {}}"#.into(),
                            r#"7"#.into(),
                        ]
                        .join(","),
                    ),
                ),
                ("data/batches/x.json".into(), "{".into()),
            ],
        );
        assert_eq!(state.row_count(), 0);
        assert_eq!(state.problems.len(), 5, "{:?}", state.problems);
        assert!(state.problems[0].contains("mutation 0") && state.problems[0].contains("no id"));
        assert!(state.problems[1].contains("no row at this key"));
        assert!(state.problems[2].contains("unknown op 'upsert'"));
        assert!(state.problems[4].starts_with("data/batches/x.json: not JSON"));
    }

    #[test]
    fn twenty_thousand_rows_diff_in_linear_time() {
        let rows = |shift: usize| -> String {
            let mutations: Vec<String> =
                (shift..20_000 + shift).map(|i| insert("rows", &format!(r#"{{"id": {i}, "value": "v{i}", "n": {i}}}"#))).collect();
            batch(&mutations.join(","))
        };
        let started = std::time::Instant::now();
        let base = seed_state(PrimaryKeys::new(), vec![("data/initial.json".into(), rows(0))]);
        let mut head = SeedState::new(PrimaryKeys::new());
        // The same rows shifted by 500, then every seventh of them changed.
        head.fold_text("data/initial.json", &rows(500));
        for (_, row) in head.entities.get_mut("rows").unwrap().iter_mut().step_by(7) {
            row.insert("value".into(), Value::str("changed"));
        }
        let diff = diff(&base, &head);
        let rows = &diff[0];
        assert_eq!(rows.added.len(), 500);
        assert_eq!(rows.removed.len(), 500);
        assert_eq!(rows.changed.len() + rows.unchanged, 19_500);
        assert!(rows.changed.len() > 2_000);
        // Generous bound: a quadratic pass over 20K rows would take minutes even in release.
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    }
}

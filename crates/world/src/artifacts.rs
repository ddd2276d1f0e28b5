//! The files a compiled [`Contract`] generates — `db/schema.sql`, `schema/runtime.json`,
//! `schema/README.md`, `tool-schemas.json` and `schema/lock.json` — byte for byte as the
//! original writes them, handed to a sink a piece at a time.
//!
//! The generated files of a large world are larger than its `world.json` (every `$ref`
//! is inlined, the README repeats each schema): they are streamed from the compiled
//! entities into a file, a hash or a comparison, never held whole. Not here: what the
//! files mean (the compiler) or where they go (the lifecycle).

use crate::contract::{pointer_parts, quote, Contract, Entity, GENERATED, LOCK, TARGET};
use crate::dialect::{declared_types, LANGUAGE};
use crate::hash::digest_of_pieces as digest;
use crate::json::{canonical, dumps_in_pieces, encoded, write_string, DumpOptions, Value};
use std::collections::BTreeSet;

/// Where generated text goes: a file, a hasher, a string.
pub type Sink<'s> = dyn FnMut(&str) + 's;

impl Contract {
    /// Hand the text of one generated file (one of [`GENERATED`] or [`LOCK`]) to `sink`.
    ///
    /// # Panics
    /// On a path the compiler does not generate (a caller's mistake).
    pub fn write_artifact(&self, path: &str, sink: &mut Sink<'_>) {
        match path {
            "db/schema.sql" => ddl(&self.entities, sink),
            "schema/runtime.json" => {
                let members: Vec<(&str, Member<'_>)> = self
                    .metadata
                    .as_object()
                    .expect("runtime metadata is an object")
                    .iter()
                    .map(|(key, value)| (key.as_str(), Member::Value(value)))
                    .chain([("entities", Member::Entities(&self.entities))])
                    .collect();
                put_object(sink, members);
                sink("\n");
            }
            "schema/README.md" => readme(self, sink),
            "tool-schemas.json" => {
                sink("{\"tools\":");
                dumps_in_pieces(self.tools(), DumpOptions::CANONICAL, sink);
                sink("}\n");
            }
            LOCK => sink(std::str::from_utf8(&encoded(&self.lock)).expect("JSON text is UTF-8")),
            other => panic!("{other} is not a generated file"),
        }
    }

    /// One generated file's whole text (for the small ones, or a caller that must hold it).
    pub fn artifact_text(&self, path: &str) -> String {
        let mut text = String::new();
        self.write_artifact(path, &mut |piece| text.push_str(piece));
        text
    }

    /// Every generated file, the lock last: the paths [`Contract::write_artifact`] takes.
    pub fn artifact_paths() -> impl Iterator<Item = &'static str> {
        GENERATED.into_iter().chain([LOCK])
    }
}

/// The domain hash: `sha256(encoded({entities, language, target}))`, streamed.
pub(crate) fn domain_hash(entities: &[Entity]) -> String {
    let language = Value::str(LANGUAGE);
    let target = Value::str(TARGET);
    digest(|sink| {
        put_object(
            sink,
            vec![("entities", Member::Entities(entities)), ("language", Member::Value(&language)), ("target", Member::Value(&target))],
        );
        sink("\n");
    })
}

/// The lock's `artifacts` member: each generated file's hash, in path order.
pub(crate) fn artifact_hashes(contract: &Contract) -> Vec<(&'static str, String)> {
    let mut hashes: Vec<(&'static str, String)> =
        GENERATED.iter().map(|path| (*path, digest(|sink| contract.write_artifact(path, sink)))).collect();
    hashes.sort();
    hashes
}

// ------------------------------------------------------------------ canonical JSON, streamed

/// A member of an object written by [`put_object`].
enum Member<'v> {
    Value(&'v Value),
    /// `{name: entity value}` for every entity (see [`put_entity`]).
    Entities(&'v [Entity]),
}

/// The canonical text (sorted keys, compact) of an object of `members`.
fn put_object(sink: &mut Sink<'_>, mut members: Vec<(&str, Member<'_>)>) {
    members.sort_by(|a, b| a.0.cmp(b.0));
    sink("{");
    for (i, (key, member)) in members.into_iter().enumerate() {
        put_key(sink, i == 0, key);
        match member {
            Member::Value(value) => dumps_in_pieces(value, DumpOptions::CANONICAL, sink),
            Member::Entities(entities) => {
                sink("{");
                for (j, entity) in entities.iter().enumerate() {
                    put_key(sink, j == 0, &entity.name);
                    put_entity(sink, entity);
                }
                sink("}");
            }
        }
    }
    sink("}");
}

/// `"key":`, after a comma unless it is the first member.
fn put_key(sink: &mut Sink<'_>, first: bool, key: &str) {
    let mut text = String::with_capacity(key.len() + 4);
    if !first {
        text.push(',');
    }
    write_string(&mut text, key, false);
    text.push(':');
    sink(&text);
}

/// One entity as runtime.json and the domain hash hold it:
/// `{location, primary_key, relationships, schema, unique}` (the canonical key order).
fn put_entity(sink: &mut Sink<'_>, entity: &Entity) {
    sink("{");
    put_key(sink, true, "location");
    sink(&canonical(&Value::str(&entity.location)));
    put_key(sink, false, "primary_key");
    sink(&canonical(&string_list(&entity.primary_key)));
    put_key(sink, false, "relationships");
    sink(&relationships_text(entity));
    put_key(sink, false, "schema");
    dumps_in_pieces(&entity.schema, DumpOptions::CANONICAL, sink);
    put_key(sink, false, "unique");
    sink(&unique_text(entity));
    sink("}");
}

fn string_list(fields: &[String]) -> Value {
    Value::Array(fields.iter().cloned().map(Value::Str).collect())
}

/// The canonical text of an entity's `unique` keys.
fn unique_text(entity: &Entity) -> String {
    canonical(&Value::Array(entity.unique.iter().map(|key| string_list(key)).collect()))
}

/// The canonical text of an entity's relationships, as declared (sorted by their text).
fn relationships_text(entity: &Entity) -> String {
    let texts: Vec<String> = entity.relationships.iter().map(|r| canonical(&r.declaration)).collect();
    format!("[{}]", texts.join(","))
}

// ------------------------------------------------------------------ db/schema.sql

fn quote_sql(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn json_path(field: &str) -> String {
    let parts = pointer_parts(field, field, "key").unwrap_or_default();
    let mut path = String::from("$");
    for part in parts {
        path.push('.');
        write_string(&mut path, &part, false);
    }
    path
}

fn generated_column(field: &str) -> String {
    format!("{} GENERATED ALWAYS AS (json_extract(\"payload\", {})) VIRTUAL", quote(field), quote_sql(&json_path(field)))
}

/// The DDL: one table per entity (entities in name order, so a target is found by
/// binary search), each statement on its own line.
fn ddl(entities: &[Entity], sink: &mut Sink<'_>) {
    sink("-- Generated by gateway-world-compiler/1; do not edit.\nPRAGMA foreign_keys = ON;\n");
    for entity in entities {
        sink(&create_table(entity, entities));
        sink("\n");
    }
}

fn create_table(entity: &Entity, entities: &[Entity]) -> String {
    let mut columns =
        vec!["\"_key\" TEXT PRIMARY KEY NOT NULL".to_string(), "\"payload\" TEXT NOT NULL CHECK(json_valid(\"payload\"))".to_string()];
    let properties = entity.schema.get("properties").and_then(Value::as_object);
    let mut names: Vec<&String> = properties.map(|p| p.keys().collect()).unwrap_or_default();
    names.sort();
    for field in &names {
        let types = declared_types(&properties.expect("properties")[*field]);
        if types.iter().any(|t| matches!(*t, "string" | "integer" | "number" | "boolean")) {
            columns.push(generated_column(field));
        }
    }
    let mut constrained: BTreeSet<&String> = entity.primary_key.iter().chain(entity.unique.iter().flatten()).collect();
    constrained.extend(entity.relationships.iter().flat_map(|r| &r.fields));
    for field in constrained.into_iter().filter(|f| !names.contains(f)) {
        columns.push(generated_column(field));
    }
    let join = |fields: &[String]| fields.iter().map(|f| quote(f)).collect::<Vec<_>>().join(", ");
    for fields in std::iter::once(&entity.primary_key).chain(&entity.unique) {
        columns.push(format!("UNIQUE ({})", join(fields)));
    }
    for relationship in &entity.relationships {
        let target = entities.binary_search_by(|e| e.name.as_str().cmp(&relationship.target)).ok().map(|i| &entities[i]);
        columns.push(format!(
            "FOREIGN KEY ({}) REFERENCES {} ({}) ON DELETE NO ACTION DEFERRABLE INITIALLY DEFERRED",
            join(&relationship.fields),
            quote(&relationship.target),
            target.map(|t| join(&t.primary_key)).unwrap_or_default()
        ));
    }
    format!("CREATE TABLE {} (\n  {}\n);", quote(&entity.name), columns.join(",\n  "))
}

// ------------------------------------------------------------------ schema/README.md

const README_JSON: DumpOptions = DumpOptions { sort_keys: true, ensure_ascii: false, indent: Some(2), compact: false };

/// The README: a section per entity (its keys, a property table, its schema), then the
/// tool contracts. The original joins its lines with newlines; the last ("```" then "")
/// ends the text.
fn readme(contract: &Contract, sink: &mut Sink<'_>) {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let domain = contract.target();
    sink(&format!(
        "# {} ({})\n\nGenerated; edit schema/world.json and compile. Defaults are annotations only.\n\n",
        text(domain.get("id")),
        text(domain.get("version"))
    ));
    for entity in &contract.entities {
        sink(&entity_section(entity));
        dumps_in_pieces(&entity.schema, README_JSON, sink);
        sink("\n```\n\n");
    }
    sink("## Tool contracts\n\n```json\n");
    dumps_in_pieces(contract.tools(), README_JSON, sink);
    sink("\n```\n");
}

/// An entity's README section up to its schema: title, keys and the property table.
fn entity_section(entity: &Entity) -> String {
    let mut out = String::new();
    let mut line = |text: &str| {
        out.push_str(text);
        out.push('\n');
    };
    line(&format!("## {}", entity.name));
    line("");
    line(&format!("Primary key: {}", entity.primary_key.join(", ")));
    line("");
    line("| Property | Type | Required |");
    line("| --- | --- | --- |");
    let required: Vec<&str> =
        entity.schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    if let Some(properties) = entity.schema.get("properties").and_then(Value::as_object) {
        let mut sorted: Vec<(&String, &Value)> = properties.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (field, property) in sorted {
            let kind = property.get("type").map_or_else(|| "\"composition\"".to_string(), canonical);
            let is_required = if required.contains(&field.as_str()) { "True" } else { "False" };
            line(&format!("| {field} | {kind} | {is_required} |"));
        }
    }
    line("");
    line(&format!("Unique: {}", unique_text(entity)));
    line(&format!("Relationships: {}", relationships_text(entity)));
    line("");
    line("```json");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A world of two related entities and a tool, compiled from a temporary directory.
    fn contract() -> Contract {
        let scratch = gateway_common::temp::Scratch::new("artifacts-test").expect("scratch dir");
        let dir = scratch.path();
        std::fs::create_dir_all(dir.join("schema")).unwrap();
        std::fs::write(
            dir.join("gateway-env.toml"),
            "[environment]\nname = \"t\"\nkind = \"mock-tools\"\n\n[schema]\nlanguage = \"gateway-world/1\"\n\n[tools]\nserve = [\"ping\"]\n",
        )
        .unwrap();
        let world = r##"{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:t", "$defs": {"A": {"type": "object", "additionalProperties": false, "required": ["id"],
            "properties": {"id": {"type": "string"}, "note": {"type": ["string", "null"], "description": "é \"q\""}}},
            "B": {"type": "object", "additionalProperties": false, "required": ["id", "a_id"],
            "properties": {"id": {"type": "integer"}, "a_id": {"type": "string"}}}},
          "x-gateway": {"version": 1, "domain_version": "1", "package": {"id": "t", "version": "1"},
            "entities": {"b": {"schema": {"$ref": "#/$defs/B"}, "primary_key": ["id"], "unique": [["a_id"]],
                "relationships": [{"fields": ["a_id"], "target": "a", "on_delete": "restrict"}]},
              "a": {"schema": {"$ref": "#/$defs/A"}, "primary_key": ["id"]}},
            "tools": {"ping": {"input": {"type": "object"}, "output": {"type": "string"}}}}}"##;
        std::fs::write(dir.join("schema/world.json"), world).unwrap();
        crate::compiler::build(dir).expect("compiles")
    }

    /// The value runtime.json holds for an entity, built whole (what streaming must equal).
    fn entity_value(entity: &Entity) -> Value {
        crate::json::object([
            ("schema", entity.schema.clone()),
            ("primary_key", string_list(&entity.primary_key)),
            ("unique", Value::Array(entity.unique.iter().map(|k| string_list(k)).collect())),
            ("relationships", Value::Array(entity.relationships.iter().map(|r| r.declaration.clone()).collect())),
            ("location", Value::str(&entity.location)),
        ])
    }

    #[test]
    fn streamed_runtime_json_is_the_encoding_of_the_whole_value() {
        let contract = contract();
        let mut whole = contract.metadata.as_object().unwrap().clone();
        whole.insert("entities".into(), Value::Object(contract.entities.iter().map(|e| (e.name.clone(), entity_value(e))).collect()));
        let whole = Value::Object(whole);
        assert_eq!(contract.artifact_text("schema/runtime.json").into_bytes(), encoded(&whole));
    }

    #[test]
    fn streamed_domain_hash_is_the_digest_of_the_whole_value() {
        let contract = contract();
        let entities = contract.entities.iter().map(|e| (e.name.clone(), entity_value(e))).collect();
        let whole = crate::json::object([
            ("entities", Value::Object(entities)),
            ("language", Value::str(LANGUAGE)),
            ("target", Value::str(TARGET)),
        ]);
        assert_eq!(domain_hash(&contract.entities), crate::hash::encoded_digest(&whole));
        assert_eq!(contract.target().get("hash").and_then(Value::as_str), Some(domain_hash(&contract.entities).as_str()));
    }

    #[test]
    fn the_lock_records_the_hash_of_each_streamed_file() {
        let contract = contract();
        let recorded = contract.lock.get("artifacts").and_then(Value::as_object).unwrap();
        for path in GENERATED {
            let text = contract.artifact_text(path);
            assert_eq!(
                recorded.get(path).and_then(Value::as_str),
                Some(gateway_common::fs::sha256_hex(text.as_bytes()).as_str()),
                "{path}"
            );
        }
        let ddl = contract.artifact_text("db/schema.sql");
        assert!(ddl.contains("FOREIGN KEY (\"a_id\") REFERENCES \"a\" (\"id\")"), "{ddl}");
        assert!(contract.artifact_text("schema/README.md").ends_with("}\n```\n"));
    }
}

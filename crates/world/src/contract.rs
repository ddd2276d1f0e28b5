//! A compiled world contract as a value: its entities (keys, unique keys,
//! relationships), metadata and lock, the names of the files generated from it, and
//! how a key field and a table name are spelt (`pointer_parts`, `quote`). The
//! compiler builds it and the artifacts are written from it; both name this, and it
//! names neither (`compiler` re-exports it, the path the other crates use).

use crate::dialect::unescape_pointer;
use crate::error::{fail, ContractError};
use crate::files::sha256_hex;
use crate::json::{canonical, Value};

/// The compiler's name, recorded in the lock.
pub const COMPILER: &str = "gateway-world-compiler/1";
/// The storage target, recorded in the lock and hashed into the domain.
pub const TARGET: &str = "sqlite-json/1";
/// The generated artifacts, in the order `check` compares them.
pub const GENERATED: [&str; 4] = ["db/schema.sql", "schema/runtime.json", "schema/README.md", "tool-schemas.json"];
/// The lock file.
pub const LOCK: &str = "schema/lock.json";

/// One relationship of an entity to another entity's primary key.
#[derive(Debug, Clone)]
pub struct Relationship {
    /// The referencing fields (property names or JSON pointers).
    pub fields: Vec<String>,
    /// The referenced entity.
    pub target: String,
    /// The declaration as authored (what runtime.json and the domain hash record).
    pub declaration: Value,
}

/// One compiled entity.
#[derive(Debug, Clone)]
pub struct Entity {
    /// Entity (table) name.
    pub name: String,
    /// The resolved payload schema (a closed object).
    pub schema: Value,
    /// Primary-key property names, as authored.
    pub primary_key: Vec<String>,
    /// Unique keys, sorted.
    pub unique: Vec<Vec<String>>,
    /// Relationships, sorted by canonical text.
    pub relationships: Vec<Relationship>,
    /// Where the entity is declared (`world.json#/x-gateway/entities/<name>`).
    pub location: String,
    /// The payload schema compiled for checking rows, on first use.
    pub(crate) validator: std::sync::OnceLock<crate::validator::Validator>,
}

impl Entity {
    /// Whether `row` conforms to the payload schema (numbers in range included),
    /// decided without building any location or message: a refused row goes through
    /// [`crate::dialect::validate`] for the original's first error.
    pub fn accepts(&self, row: &Value) -> bool {
        self.validator().accepts(row)
    }

    /// The payload schema compiled (once, on first use).
    pub fn validator(&self) -> &crate::validator::Validator {
        self.validator.get_or_init(|| crate::validator::Validator::compile(&self.schema))
    }

    /// The schema of one top-level property.
    pub fn property(&self, name: &str) -> Option<&Value> {
        self.schema.get("properties").and_then(|p| p.get(name))
    }
}

/// A compiled world contract: metadata, entities and lock. Its generated files are
/// written from these a piece at a time ([`Contract::write_artifact`]), never held.
#[derive(Debug, Clone)]
pub struct Contract {
    /// `schema/runtime.json`'s members but `entities` (language, compiler, target,
    /// domain, package, tools); the entities are [`Contract::entities`].
    pub metadata: Value,
    /// `schema/lock.json` as a value.
    pub lock: Value,
    /// Entities in name order.
    pub entities: Vec<Entity>,
    /// The manifest (`gateway-env.toml`) the contract was built with.
    pub manifest: toml::Table,
}

impl Contract {
    /// The domain identity `{id, version, hash}` batches must target.
    pub fn target(&self) -> &Value {
        self.metadata.get("domain").expect("domain")
    }
    /// The package `{id, version}`.
    pub fn package(&self) -> &Value {
        self.metadata.get("package").expect("package")
    }
    /// One entity by name.
    pub fn entity(&self, name: &str) -> Option<&Entity> {
        self.entities.binary_search_by(|e| e.name.as_str().cmp(name)).ok().map(|i| &self.entities[i])
    }
    /// Compiled tools `{name: {input_schema, output_schema, description}}`.
    pub fn tools(&self) -> &Value {
        self.metadata.get("tools").expect("tools")
    }
    /// `sha256(canonical(lock))`: what snapshots record as `contractHash`.
    pub fn contract_hash(&self) -> String {
        sha256_hex(canonical(&self.lock).as_bytes())
    }
}

/// The parts of a key field: one property name, or a decoded JSON pointer.
pub fn pointer_parts(field: &str, location: &str, code: &str) -> Result<Vec<String>, ContractError> {
    let Some(pointer) = field.strip_prefix('/') else {
        return Ok(vec![field.to_string()]);
    };
    let mut parts = Vec::new();
    for part in pointer.split('/') {
        let bytes = part.as_bytes();
        if bytes.iter().enumerate().any(|(i, b)| *b == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1'))) {
            return fail(code, "Invalid JSON Pointer escape in field path", location);
        }
        let decoded = unescape_pointer(part);
        if decoded.contains('"') {
            return fail(code, "Quoted property names are unsupported in key paths", location);
        }
        parts.push(decoded);
    }
    Ok(parts)
}

/// Quote an SQL identifier.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

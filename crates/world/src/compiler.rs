//! The compiler: `schema/world.json` (+ sibling documents) and `gateway-env.toml`
//! become a [`Contract`] and its generated artifacts, byte for byte as the original.

use crate::artifacts::{artifact_hashes, domain_hash};
use crate::dialect::{declared_types, members, nonempty, Resolver, LANGUAGE};
use crate::error::{fail, ContractError};
use crate::files::is_symlink;
use crate::hash::{encoded_digest, publication_digest};
use crate::json::{canonical, object, Map, Value};
use std::collections::BTreeSet;
use std::path::Path;

pub use crate::contract::{pointer_parts, quote, Contract, Entity, Relationship, COMPILER, GENERATED, LOCK, TARGET};

const ROOT: &str = "schema/world.json";

// ------------------------------------------------------------------ manifest

/// The original's `bundle_mode`: `Ok(None)` for a world that is not schema-backed,
/// the manifest for a schema world, or the refusal that the layout earns.
pub fn bundle_mode(bundle: &Path) -> Result<Option<toml::Table>, ContractError> {
    let exists_or_link = |p: &str| bundle.join(p).exists() || is_symlink(&bundle.join(p));
    let markers = [ROOT, LOCK, "schema/runtime.json"].iter().any(|p| exists_or_link(p));
    let manifest_path = bundle.join("gateway-env.toml");
    let manifest: toml::Table = if manifest_path.exists() {
        let manifest_error = || ContractError::new("manifest", "Cannot parse gateway-env.toml", "");
        let bytes = std::fs::read(&manifest_path).map_err(|_| manifest_error())?;
        let text = String::from_utf8(bytes).map_err(|_| manifest_error())?;
        text.parse::<toml::Table>().map_err(|_| manifest_error())?
    } else {
        toml::Table::new()
    };
    let declaration = manifest.get("schema");
    if declaration.is_none() && !markers {
        return Ok(None);
    }
    let exact = declaration
        .and_then(toml::Value::as_table)
        .is_some_and(|t| t.len() == 1 && t.get("language").and_then(toml::Value::as_str) == Some(LANGUAGE));
    if !exact {
        return fail("language", format!("Schema bundles require exactly [schema] language = '{LANGUAGE}'"), "gateway-env.toml/schema");
    }
    let mock_only = || fail("bundle_mode", "Schema contracts currently support mock-tools bundles only", "");
    if bundle.join("gateway-api-world.toml").exists() {
        return mock_only();
    }
    let empty = toml::Table::new();
    let env = manifest.get("environment").or_else(|| manifest.get("env"));
    let env = match env {
        None => &empty,
        Some(toml::Value::Table(table)) => table,
        Some(_) => return mock_only(),
    };
    if env.get("kind").is_some_and(|k| k.as_str() != Some("mock-tools")) {
        return mock_only();
    }
    let db = match manifest.get("db") {
        None => &empty,
        Some(toml::Value::Table(table)) => table,
        Some(_) => return fail("target", "Schema worlds require SQLite", ""),
    };
    let is_sqlite = |v: Option<&toml::Value>| v.is_none_or(|v| v.as_str() == Some("sqlite"));
    if !is_sqlite(db.get("engine")) || !is_sqlite(env.get("db")) {
        return fail("target", "Schema worlds require SQLite", "");
    }
    if ["schema", "seed", "path"].iter().any(|k| db.contains_key(*k)) {
        return fail("unsupported", "Schema mode uses fixed generated/initial paths; remove db.schema/seed/path", "");
    }
    if bundle.join("db/seed.sql").exists() {
        return fail("raw_seed", "Remove db/seed.sql; schema worlds seed through data/initial.json", "");
    }
    let root = lexically_resolved(bundle);
    for relative in [ROOT, LOCK].into_iter().chain(GENERATED).chain(["data/initial.json"]) {
        let target = bundle.join(relative);
        if is_symlink(&target) || !lexically_resolved(&target).starts_with(&root) {
            return fail("path", "Bundle contract paths may not escape the bundle or be symlinks", relative);
        }
    }
    // Batch journals are data files too: the same rule as initial.json (the
    // original reads a linked journal; we refuse it, naming it).
    let batches = bundle.join("data/batches");
    if is_symlink(&batches) {
        return fail("path", "Bundle contract paths may not escape the bundle or be symlinks", "data/batches");
    }
    if let Ok(entries) = std::fs::read_dir(&batches) {
        let mut linked: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|k| k.is_symlink()))
            .map(|e| format!("data/batches/{}", e.file_name().to_string_lossy()))
            .collect();
        linked.sort();
        if let Some(first) = linked.first() {
            return fail("path", "Bundle contract paths may not escape the bundle or be symlinks", first);
        }
    }
    Ok(Some(manifest))
}

/// `Path.resolve()` (non-strict): symlinks are followed component by component,
/// dangling ones included, and a missing tail is kept lexically.
fn lexically_resolved(path: &Path) -> std::path::PathBuf {
    use std::collections::VecDeque;
    use std::path::Component;
    let absolute = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut pending: VecDeque<std::ffi::OsString> = absolute
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    let mut out = std::path::PathBuf::from("/");
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            out.pop();
            continue;
        }
        let candidate = out.join(&part);
        match std::fs::read_link(&candidate) {
            Ok(target) if hops < 40 => {
                hops += 1;
                if target.is_absolute() {
                    out = std::path::PathBuf::from("/");
                }
                for component in target.components().rev() {
                    match component {
                        Component::Normal(p) => pending.push_front(p.to_os_string()),
                        Component::ParentDir => pending.push_front("..".into()),
                        _ => {}
                    }
                }
            }
            _ => out = candidate,
        }
    }
    out
}

// ------------------------------------------------------------------ identifiers and keys

fn identifier(name: &str, location: &str) -> Result<(), ContractError> {
    let lower = name.to_lowercase();
    let shaped =
        name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !shaped || ["_", "sqlite_", "gateway_", "benchmark_"].iter().any(|p| lower.starts_with(p)) {
        return fail("identity", "Use a SQL-safe name; _, sqlite_, gateway_, benchmark_ prefixes are reserved", location);
    }
    Ok(())
}

fn field_identifier(name: &str, location: &str) -> Result<(), ContractError> {
    let lower = name.to_lowercase();
    let shaped = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !shaped || lower == "_key" || lower == "payload" || ["sqlite_", "gateway_", "benchmark_"].iter().any(|p| lower.starts_with(p)) {
        return fail("identity", "Use a SQL-safe payload name; _key, payload, sqlite_, gateway_, and benchmark_ are reserved", location);
    }
    Ok(())
}

/// The value of a key field inside a payload (None when absent).
pub fn payload_value<'a>(value: &'a Value, field: &str) -> Option<&'a Value> {
    let parts = pointer_parts(field, field, "key").ok()?;
    let mut current = value;
    for part in &parts {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

fn field_schema(schema: &Value, field: &str, location: &str, code: &str, nested: bool) -> Result<Value, ContractError> {
    if field.starts_with('/') && !nested {
        return fail(code, "Primary keys must use direct property names", location);
    }
    let parts = pointer_parts(field, location, code)?;
    fn walk(current: &Value, remaining: &[String]) -> Option<Value> {
        let Some((part, rest)) = remaining.split_first() else {
            return Some(current.clone());
        };
        if current.get("type").and_then(Value::as_str) == Some("object") {
            if let Some(child) = current.get("properties").and_then(|p| p.get(part)) {
                return walk(child, rest);
            }
        }
        for keyword in ["allOf", "anyOf", "oneOf"] {
            let Some(branches) = current.get(keyword).and_then(Value::as_array) else { continue };
            let matches: Vec<Value> = branches.iter().filter_map(|b| walk(b, remaining)).collect();
            if matches.len() == 1 || (!matches.is_empty() && matches.iter().all(|m| canonical(m) == canonical(&matches[0]))) {
                return matches.into_iter().next();
            }
        }
        None
    }
    walk(schema, &parts).ok_or_else(|| ContractError::new(code, "Field paths must resolve through object properties", location))
}

fn key_fields(
    fields: &Value,
    schema: &Value,
    location: &str,
    required: bool,
    nested: bool,
    code: &str,
) -> Result<Vec<String>, ContractError> {
    let names: Option<Vec<String>> = fields.as_array().and_then(|items| items.iter().map(|v| v.as_str().map(str::to_string)).collect());
    let Some(names) = names.filter(|n| !n.is_empty() && n.iter().collect::<BTreeSet<_>>().len() == n.len()) else {
        return fail(code, "Keys require a nonempty list of distinct property paths", location);
    };
    let declared_required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    for field in &names {
        let field_location = format!("{location}/{field}");
        let property = field_schema(schema, field, &field_location, code, nested)?;
        let types = declared_types(&property);
        let allowed = types.iter().all(|t| matches!(*t, "string" | "integer" | "null"));
        if types.is_empty() || !allowed || !types.iter().any(|t| matches!(*t, "string" | "integer")) {
            return fail(code, "Key paths must resolve to string/integer properties", location);
        }
        if ["allOf", "oneOf", "anyOf"].iter().any(|k| property.get(k).is_some()) {
            return fail(code, "Composition is not supported on key fields", location);
        }
        if required && (!declared_required.contains(&field.as_str()) || types.contains(&"null")) {
            return fail(code, "Primary-key fields must be required and non-null", field_location);
        }
    }
    Ok(names)
}

// ------------------------------------------------------------------ build

/// Build the contract of the world at `bundle` (no files written).
pub fn build(bundle: &Path) -> Result<Contract, ContractError> {
    let Some(manifest) = bundle_mode(bundle)? else {
        return fail("language", "Not a schema-backed bundle; declare [schema] language", "");
    };
    let mut resolver = Resolver::new(bundle);
    let document = resolver.load("world.json")?;
    let (annotation, package) = check_annotation(&document)?;
    let entities = match annotation.get("entities") {
        Some(Value::Object(map)) if !map.is_empty() => map,
        _ => return fail("schema", "Declare at least one entity", "world.json#/x-gateway/entities"),
    };
    let mut sorted_entities: Vec<(&String, &Value)> = entities.iter().collect();
    sorted_entities.sort_by(|a, b| a.0.cmp(b.0));
    let mut compiled: Vec<Entity> = Vec::new();
    let mut seen = BTreeSet::new();
    for (name, declaration) in sorted_entities {
        let location = format!("world.json#/x-gateway/entities/{name}");
        identifier(name, &location)?;
        if !seen.insert(name.to_lowercase()) {
            return fail("identity", "Entity names collide under SQLite case folding", location);
        }
        compiled.push(compile_entity(&mut resolver, name, declaration, location)?);
    }
    check_relationships(&compiled)?;
    let tools = compile_tools(annotation, &mut resolver)?;
    check_served(&manifest, annotation)?;
    resolver.check_documents()?;
    let inputs = input_digests(&resolver);
    let domain = object([
        ("id", document.get("$id").cloned().unwrap_or_default()),
        ("version", annotation.get("domain_version").cloned().unwrap_or_default()),
        ("hash", Value::Str(domain_hash(&compiled))),
    ]);
    let metadata = object([
        ("language", Value::str(LANGUAGE)),
        ("compiler", Value::str(COMPILER)),
        ("target", Value::str(TARGET)),
        ("domain", domain),
        ("package", package.clone()),
        ("tools", tools),
    ]);
    // The schema documents are no longer needed: the contract holds one resolved copy of
    // each entity, and the generated files are streamed from it.
    drop(resolver);
    drop(document);
    let mut contract = Contract { metadata, lock: Value::Null, entities: compiled, manifest };
    contract.lock = lock(&contract, inputs);
    Ok(contract)
}

/// world.json's `x-gateway` annotation checked (version 1, a domain version, a
/// package with id and version): the annotation and its package.
fn check_annotation(document: &Value) -> Result<(&Value, &Value), ContractError> {
    let annotation = match document.get("x-gateway") {
        Some(value @ Value::Object(_)) => value,
        _ => return fail("schema", "x-gateway must be an object", "world.json#/x-gateway"),
    };
    const ANNOTATION: &[&str] = &["version", "domain_version", "package", "entities", "tools"];
    members(annotation, ANNOTATION, ANNOTATION, "world.json#/x-gateway")?;
    if !matches!(annotation.get("version"), Some(Value::Int(1))) {
        return fail("language", "Only x-gateway version 1 is supported", "world.json#/x-gateway/version");
    }
    nonempty(annotation.get("domain_version"), "world.json#/x-gateway/domain_version")?;
    let package = annotation.get("package").expect("member");
    let Some(package_map) = package.as_object() else {
        return fail("schema", "package must be an object", "world.json#/x-gateway/package");
    };
    members(package, &["id", "version"], &["id", "version"], "world.json#/x-gateway/package")?;
    for (key, value) in package_map {
        nonempty(Some(value), &format!("world.json#/x-gateway/package/{key}"))?;
    }
    Ok((annotation, package))
}

/// One entity's declaration compiled.
fn compile_entity(resolver: &mut Resolver, name: &str, declaration: &Value, location: String) -> Result<Entity, ContractError> {
    members(declaration, &["schema", "primary_key", "unique", "relationships"], &["schema", "primary_key"], &location)?;
    let payload = entity_payload(resolver, declaration, &location)?;
    let primary =
        key_fields(declaration.get("primary_key").expect("member"), &payload, &format!("{location}/primary_key"), true, false, "key")?;
    let mut unique = unique_keys(declaration, &payload, &primary, &location)?;
    let mut relationships = entity_relationships(declaration, &payload, &location)?;
    unique.sort();
    relationships.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Entity {
        name: name.to_string(),
        schema: payload,
        primary_key: primary,
        unique,
        relationships: relationships.into_iter().map(|r| r.1).collect(),
        location,
        validator: Default::default(),
    })
}

/// An entity's payload schema resolved: a direct closed object whose field names are
/// identifiers that collide neither with storage nor with each other.
fn entity_payload(resolver: &mut Resolver, declaration: &Value, location: &str) -> Result<Value, ContractError> {
    let payload = resolver.resolve(
        declaration.get("schema").expect("member"),
        "world.json",
        &format!("{location}/schema"),
        &mut Vec::new(),
        false,
    )?;
    let closed = payload.get("type").and_then(Value::as_str) == Some("object")
        && matches!(payload.get("additionalProperties"), Some(Value::Bool(false)))
        && !["allOf", "oneOf", "anyOf"].iter().any(|k| payload.get(k).is_some());
    if !closed {
        return fail("entity", "Entity roots must be direct closed objects (reuse through $ref, no inheritance)", location);
    }
    let mut field_names = BTreeSet::new();
    if let Some(properties) = payload.get("properties").and_then(Value::as_object) {
        for field in properties.keys() {
            field_identifier(field, &format!("{location}/schema/properties/{field}"))?;
            let lower = field.to_lowercase();
            if lower == "payload" || !field_names.insert(lower) {
                return fail("identity", "Payload field collides with storage or another field", location);
            }
        }
    }
    Ok(payload)
}

/// An entity's `unique` keys, in declaration order, none repeating another or the
/// primary key.
fn unique_keys(declaration: &Value, payload: &Value, primary: &[String], location: &str) -> Result<Vec<Vec<String>>, ContractError> {
    let empty = Value::Array(Vec::new());
    let unique_value = declaration.get("unique").unwrap_or(&empty);
    let Some(unique_list) = unique_value.as_array() else {
        return fail("key", "unique must be a list of key lists", location);
    };
    let mut constraints: Vec<BTreeSet<String>> = vec![primary.iter().cloned().collect()];
    let mut unique = Vec::new();
    for key in unique_list {
        let fields = key_fields(key, payload, &format!("{location}/unique"), false, true, "key")?;
        let set: BTreeSet<String> = fields.iter().cloned().collect();
        if constraints.contains(&set) {
            return fail("key", "Duplicate key declaration", location);
        }
        constraints.push(set);
        unique.push(fields);
    }
    Ok(unique)
}

/// An entity's relationships, in declaration order: each with its canonical text
/// (the sort key) and the compiled [`Relationship`].
fn entity_relationships(declaration: &Value, payload: &Value, location: &str) -> Result<Vec<(String, Relationship)>, ContractError> {
    let empty = Value::Array(Vec::new());
    let relationships_value = declaration.get("relationships").unwrap_or(&empty);
    let Some(relationship_list) = relationships_value.as_array() else {
        return fail("relationship", "relationships must be an array", location);
    };
    let mut relation_fields: Vec<Vec<String>> = Vec::new();
    let mut relationships: Vec<(String, Relationship)> = Vec::new();
    for relationship in relationship_list {
        let rel_location = format!("{location}/relationships");
        members(relationship, &["fields", "target", "on_delete"], &["fields", "target", "on_delete"], &rel_location)?;
        let fields = key_fields(
            relationship.get("fields").expect("member"),
            payload,
            &format!("{rel_location}/fields"),
            false,
            true,
            "relationship",
        )?;
        nonempty(relationship.get("target"), &format!("{rel_location}/target"))?;
        if relationship.get("on_delete").and_then(Value::as_str) != Some("restrict") {
            return fail("unsupported", "Only restrict deletion is supported; delete dependents explicitly in one batch", location);
        }
        if relation_fields.contains(&fields) {
            return fail("relationship", "A field tuple may have only one target", location);
        }
        relation_fields.push(fields.clone());
        let target = relationship.get("target").and_then(Value::as_str).unwrap_or_default().to_string();
        relationships.push((canonical(relationship), Relationship { fields, target, declaration: relationship.clone() }));
    }
    Ok(relationships)
}

/// The lock's `inputs`: each schema document's `$id` and digests.
fn input_digests(resolver: &Resolver) -> Map {
    resolver
        .documents
        .iter()
        .map(|(name, doc)| {
            let id = doc.get("$id").cloned().unwrap_or_default();
            let hash = encoded_digest(doc);
            (name.clone(), object([("id", id), ("hash", Value::Str(hash)), ("publication_hash", Value::Str(publication_digest(doc)))]))
        })
        .collect()
}

/// `schema/lock.json`: what was compiled from what, with the hash of every generated file.
fn lock(contract: &Contract, inputs: Map) -> Value {
    object([
        ("language", Value::str(LANGUAGE)),
        ("annotations", Value::Int(1)),
        ("compiler", Value::str(COMPILER)),
        ("target", Value::str(TARGET)),
        ("domain", contract.target().clone()),
        ("package", contract.package().clone()),
        ("inputs", Value::Object(inputs)),
        ("tools_hash", Value::Str(encoded_digest(contract.tools()))),
        ("artifacts", object(artifact_hashes(contract).into_iter().map(|(p, h)| (p, Value::Str(h))))),
    ])
}

fn check_relationships(compiled: &[Entity]) -> Result<(), ContractError> {
    for entity in compiled {
        for relationship in &entity.relationships {
            let location = format!("{}/relationships", entity.location);
            // Entities are in name order: the target is found without a scan.
            let target = compiled.binary_search_by(|e| e.name.as_str().cmp(&relationship.target)).ok().map(|i| &compiled[i]);
            let Some(target) = target.filter(|t| t.primary_key.len() == relationship.fields.len()) else {
                return fail("relationship", "Target must exist with matching primary-key arity", location);
            };
            for (source, dest) in relationship.fields.iter().zip(&target.primary_key) {
                let source_schema = field_schema(&entity.schema, source, &location, "relationship", true)?;
                let source_types: BTreeSet<&str> = declared_types(&source_schema).into_iter().filter(|t| *t != "null").collect();
                let target_schema = target.property(dest).cloned().unwrap_or_default();
                let target_types: BTreeSet<&str> = declared_types(&target_schema).into_iter().collect();
                if source_types != target_types {
                    return fail("relationship", "Relationship endpoint key types must match", location);
                }
            }
        }
    }
    Ok(())
}

fn compile_tools(annotation: &Value, resolver: &mut Resolver) -> Result<Value, ContractError> {
    let Some(tools) = annotation.get("tools").and_then(Value::as_object) else {
        return fail("tool", "tools must be an object", "world.json#/x-gateway/tools");
    };
    let mut sorted: Vec<(&String, &Value)> = tools.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut compiled = Map::default();
    for (name, tool) in sorted {
        let location = format!("world.json#/x-gateway/tools/{name}");
        let shaped = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !shaped {
            return fail("tool", "Invalid tool name", location);
        }
        members(tool, &["input", "output", "description"], &["input", "output"], &location)?;
        if tool.get("description").is_some_and(|d| !matches!(d, Value::Str(_))) {
            return fail("tool", "Tool description must be text", location);
        }
        let input =
            resolver.resolve(tool.get("input").expect("member"), "world.json", &format!("{location}/input"), &mut Vec::new(), false)?;
        let output =
            resolver.resolve(tool.get("output").expect("member"), "world.json", &format!("{location}/output"), &mut Vec::new(), false)?;
        if input.get("type").and_then(Value::as_str) != Some("object") {
            return fail("tool", "Tool inputs must resolve to an object schema", location);
        }
        let description = tool.get("description").cloned().unwrap_or_else(|| Value::str(name));
        compiled.insert(name.clone(), object([("input_schema", input), ("output_schema", output), ("description", description)]));
    }
    Ok(Value::Object(compiled))
}

fn check_served(manifest: &toml::Table, annotation: &Value) -> Result<(), ContractError> {
    let declared: BTreeSet<&str> =
        annotation.get("tools").and_then(Value::as_object).map(|t| t.keys().map(String::as_str).collect()).unwrap_or_default();
    let served = match manifest.get("tools") {
        None => None,
        Some(toml::Value::Table(table)) => table.get("serve").and_then(toml::Value::as_array),
        Some(_) => None,
    };
    let names: Option<Vec<&str>> = served.and_then(|list| list.iter().map(toml::Value::as_str).collect());
    let ok = names.is_some_and(|names| {
        let set: BTreeSet<&str> = names.iter().copied().collect();
        set.len() == names.len() && set == declared
    });
    if !ok {
        return fail("tool", "Manifest tools.serve must exactly match authored tool contracts", "gateway-env.toml/tools/serve");
    }
    Ok(())
}

//! `connector route add` and `schema entity add`: declare one more route or entity
//! by appending to the authored file, leaving every other byte where it was.
//!
//! Both build the new text, prove it (the connector spec parses, the contract
//! compiles in a scratch copy), and only then write it; a refusal writes nothing.

use crate::spec::{load_spec, parse_spec, placeholders, Spec, SPEC};
use gateway_world::error::{fail, ContractError};
use gateway_world::json::{dumps, object, parse, DumpOptions, Map, Value};
use std::path::Path;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const WORLD: &str = "schema/world.json";
const INLINE: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false };

fn is_snake(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_field(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A TOML basic string.
pub fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn toml_key(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        key.to_string()
    } else {
        toml_string(key)
    }
}

fn inline_table(pairs: &[(String, String)]) -> String {
    let members: Vec<String> = pairs.iter().map(|(k, v)| format!("{} = {}", toml_key(k), toml_string(v))).collect();
    format!("{{ {} }}", members.join(", "))
}

/// The declared entity names of `schema/world.json`.
fn world_entities(world: &Path) -> Result<Vec<String>, ContractError> {
    let document = gateway_world::files::read_json(&world.join(WORLD)).map_err(|e| e.with("file", Value::str(WORLD)))?;
    Ok(document
        .get("x-gateway")
        .and_then(|x| x.get("entities"))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default())
}

/// One route to append to `connector.toml`.
#[derive(Debug, Clone, Default)]
pub struct Route {
    /// Operation name (snake_case).
    pub name: String,
    /// Path template with `{args}`.
    pub path: String,
    /// HTTP method.
    pub method: String,
    /// Query parameters.
    pub params: Vec<String>,
    /// Entity the rows come from / go to.
    pub entity: Option<String>,
    /// Dotted path to the rows in a response.
    pub results: Option<String>,
    /// `[operations.api] action`.
    pub action: Option<String>,
    /// `[operations.api] filter`: argument → row field.
    pub filter: Vec<(String, String)>,
    /// `[operations.api] body`: row field → body path.
    pub body: Vec<(String, String)>,
    /// `[operations.api] handler`.
    pub handler: Option<String>,
    /// `[operations.api] single`.
    pub single: bool,
    /// `[operations.api] match`: argument → equals | contains | prefix.
    pub matching: Vec<(String, String)>,
    /// `[operations.api] envelope`.
    pub envelope: Option<String>,
    /// `[operations.api] status`.
    pub status: Option<i64>,
    /// `[operations.api] defaults`: field → JSON value.
    pub defaults: Vec<(String, Value)>,
    /// `[operations.api] generate`: field → uuid | int | now | int-in-parent.
    pub generate: Vec<(String, String)>,
    /// Any other `[operations.api]` key → its TOML value as written (`parent`, `link`,
    /// `computed`, `sort`, …); the serving settings prove it before anything is written.
    pub extra: Vec<(String, String)>,
}

/// A JSON value as a TOML inline value (None for null, which TOML cannot say).
fn toml_value(value: &Value) -> Option<String> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => b.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(f) => gateway_world::json::python_float_repr(*f),
        Value::Str(text) => toml_string(text),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Option<Vec<_>>>()?.join(", ")),
        Value::Object(map) => {
            let members = map.iter().map(|(k, v)| Some(format!("{} = {}", toml_key(k), toml_value(v)?))).collect::<Option<Vec<_>>>()?;
            format!("{{ {} }}", members.join(", "))
        }
    })
}

/// The text appended for `route`.
fn route_text(route: &Route) -> String {
    let mut text = format!("\n[[operations]]\nname = {}\n", toml_string(&route.name));
    if route.method != "GET" {
        text.push_str(&format!("method = {}\n", toml_string(&route.method)));
    }
    text.push_str(&format!("path = {}\n", toml_string(&route.path)));
    if !route.params.is_empty() {
        let params: Vec<String> = route.params.iter().map(|p| toml_string(p)).collect();
        text.push_str(&format!("params = [{}]\n", params.join(", ")));
    }
    if let Some(entity) = &route.entity {
        text.push_str(&format!("entity = {}\n", toml_string(entity)));
    }
    if let Some(results) = &route.results {
        text.push_str(&format!("results = {}\n", toml_string(results)));
    }
    let mut api = String::new();
    let action = route.action.clone().or_else(|| route.handler.as_ref().map(|_| "handler".to_string()));
    if let Some(action) = &action {
        api.push_str(&format!("action = {}\n", toml_string(action)));
    }
    if let Some(handler) = &route.handler {
        api.push_str(&format!("handler = {}\n", toml_string(handler)));
    }
    if !route.filter.is_empty() {
        api.push_str(&format!("filter = {}\n", inline_table(&route.filter)));
    }
    if !route.body.is_empty() {
        api.push_str(&format!("body = {}\n", inline_table(&route.body)));
    }
    if route.single {
        api.push_str("single = true\n");
    }
    if !route.matching.is_empty() {
        api.push_str(&format!("match = {}\n", inline_table(&route.matching)));
    }
    if let Some(envelope) = &route.envelope {
        api.push_str(&format!("envelope = {}\n", toml_string(envelope)));
    }
    if let Some(status) = route.status {
        api.push_str(&format!("status = {status}\n"));
    }
    if !route.defaults.is_empty() {
        let members: Vec<String> =
            route.defaults.iter().filter_map(|(k, v)| Some(format!("{} = {}", toml_key(k), toml_value(v)?))).collect();
        api.push_str(&format!("defaults = {{ {} }}\n", members.join(", ")));
    }
    if !route.generate.is_empty() {
        api.push_str(&format!("generate = {}\n", inline_table(&route.generate)));
    }
    for (key, value) in &route.extra {
        api.push_str(&format!("{} = {value}\n", toml_key(key)));
    }
    if !api.is_empty() {
        text.push_str("[operations.api]\n");
        text.push_str(&api);
    }
    text
}

/// Append one `[[operations]]` (and its `[operations.api]`) to the world's connector.toml.
/// `check` proves the new spec further (the serving settings) before anything is written.
pub fn route_add(world: &Path, route: &Route, check: &dyn Fn(&Spec) -> Result<(), ContractError>) -> Result<Value, ContractError> {
    let spec = load_spec(world)?;
    let location = "/route";
    if !is_snake(&route.name) {
        return fail("route", "operation name must be snake_case", format!("{location}/name"));
    }
    if spec.operation(&route.name).is_some() {
        return fail("route", format!("operation {} is already declared", route.name), format!("{location}/name"));
    }
    let method = route.method.to_uppercase();
    if !METHODS.contains(&method.as_str()) {
        return fail("route", format!("method must be one of {}", METHODS.join(", ")), format!("{location}/method"));
    }
    if !route.path.starts_with('/') || route.path.contains(['?', '#']) {
        return fail("route", "path must start with / and carry no query", format!("{location}/path"));
    }
    if let Some(same) = spec.operations.iter().find(|o| o.method == method && o.path == route.path) {
        return fail("route", format!("{method} {} is already declared as {}", route.path, same.name), format!("{location}/path"));
    }
    let args = placeholders(&route.path);
    for param in &route.params {
        if !is_field(param) {
            return fail("route", format!("parameter {param} is not a field name"), format!("{location}/params"));
        }
    }
    if let Some(entity) = &route.entity {
        let known = world_entities(world)?;
        if !known.contains(entity) {
            return fail("route", format!("Unknown entity {entity}; {WORLD} declares {}", known.join(", ")), format!("{location}/entity"));
        }
    }
    for (arg, field) in &route.filter {
        if !args.contains(arg) && !route.params.contains(arg) {
            return fail(
                "route",
                format!("filter {arg} is neither a path argument nor a parameter of {}", route.path),
                format!("{location}/filter"),
            );
        }
        if field.is_empty() {
            return fail("route", format!("filter {arg} names no row field"), format!("{location}/filter"));
        }
    }
    if !route.filter.is_empty() && route.entity.is_none() {
        return fail("route", "filter selects rows of an entity; give --entity", format!("{location}/filter"));
    }
    if let (Some(action), Some(_)) = (&route.action, &route.handler) {
        if action != "handler" {
            return fail("route", format!("--handler belongs to action handler, not {action}"), format!("{location}/handler"));
        }
    }
    if route.action.as_deref() == Some("handler") && route.handler.is_none() {
        return fail("route", "action handler needs --handler naming a function in api/handlers.py", format!("{location}/handler"));
    }
    if let Some((field, _)) = route.defaults.iter().find(|(_, v)| toml_value(v).is_none()) {
        return fail(
            "route",
            format!("default {field} is null, which TOML cannot hold: list it in --api 'nulls=[…]'"),
            format!("{location}/defaults"),
        );
    }
    for (key, value) in &route.extra {
        let known = ["single", "match", "envelope", "status", "defaults", "generate", "filter", "body", "action", "handler"];
        if known.contains(&key.as_str()) {
            return fail("route", format!("--api {key}: use the route's own flag for it"), format!("{location}/api"));
        }
        if !is_field(key) || format!("{key} = {value}").parse::<toml::Table>().is_err() {
            return fail("route", format!("--api {key}={value} is not KEY=<TOML value>"), format!("{location}/api"));
        }
    }
    let route = Route { method, ..route.clone() };
    let path = world.join(SPEC);
    let original =
        std::fs::read_to_string(&path).map_err(|_| ContractError::new("spec", format!("Cannot read {SPEC}"), format!("/{SPEC}")))?;
    let mut text = original.clone();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&route_text(&route));
    let updated = parse_spec(&text)?;
    check(&updated)?;
    gateway_world::files::write_atomic(&path, text.as_bytes())
        .map_err(|e| ContractError::new("io", format!("{}: {e}", path.display()), format!("/{SPEC}")))?;
    Ok(object([("status", Value::str("ok")), ("operation", Value::str(&route.name)), ("file", Value::str(SPEC))]))
}

// ---------------------------------------------------------------- entity add

/// How the new entity's payload schema is given.
#[derive(Debug, Clone)]
pub enum Payload {
    /// `--ref D`: a definition under `$defs`.
    Ref(String),
    /// `--fields "a:string,b:integer?"`: a closed object (`?` = optional).
    Fields(String),
    /// `--schema JSON`: an inline schema.
    Schema(String),
}

/// One entity to declare in `schema/world.json`.
#[derive(Debug, Clone)]
pub struct EntityDecl {
    /// Entity name (snake_case).
    pub name: String,
    /// The payload schema.
    pub payload: Payload,
    /// Primary-key fields.
    pub key: Vec<String>,
    /// Unique keys.
    pub unique: Vec<Vec<String>>,
    /// `(fields, target entity)` relationships: the fields hold the target's primary
    /// key (several for a composite one).
    pub relationships: Vec<(Vec<String>, String)>,
}

const FIELD_TYPES: [&str; 6] = ["string", "integer", "number", "boolean", "object", "array"];

fn fields_schema(spec: &str) -> Result<Value, ContractError> {
    let mut properties = Map::default();
    let mut required = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, kind)) = part.split_once(':') else {
            return fail("entity", format!("field {part} must look like name:type"), "/entity/fields");
        };
        let (name, kind) = (name.trim(), kind.trim());
        let (kind, optional) = kind.strip_suffix('?').map_or((kind, false), |k| (k, true));
        if !is_field(name) {
            return fail("entity", format!("{name} is not a field name"), "/entity/fields");
        }
        if !FIELD_TYPES.contains(&kind) {
            return fail("entity", format!("field {name}: type must be one of {}", FIELD_TYPES.join(", ")), "/entity/fields");
        }
        if properties.contains_key(name) {
            return fail("entity", format!("field {name} is given twice"), "/entity/fields");
        }
        properties.insert(name.to_string(), object([("type", Value::str(kind))]));
        if !optional {
            required.push(Value::str(name));
        }
    }
    if properties.is_empty() {
        return fail("entity", "--fields names no field", "/entity/fields");
    }
    Ok(object([
        ("type", Value::str("object")),
        ("properties", Value::Object(properties)),
        ("required", Value::Array(required)),
        ("additionalProperties", Value::Bool(false)),
    ]))
}

/// Byte spans of JSON values inside text: enough scanning to find where a member ends.
mod span {
    fn ws(b: &[u8], mut i: usize) -> usize {
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        i
    }

    fn string(b: &[u8], mut i: usize) -> Option<usize> {
        i += 1;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    }

    /// The end (exclusive) of the value starting at `i`.
    pub fn value(b: &[u8], i: usize) -> Option<usize> {
        match *b.get(i)? {
            b'"' => string(b, i),
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                let mut j = ws(b, i + 1);
                if b.get(j) == Some(&close) {
                    return Some(j + 1);
                }
                loop {
                    if open == b'{' {
                        j = string(b, j)?;
                        j = ws(b, j);
                        if b.get(j) != Some(&b':') {
                            return None;
                        }
                        j = ws(b, j + 1);
                    }
                    j = ws(b, value(b, j)?);
                    match b.get(j)? {
                        b',' => j = ws(b, j + 1),
                        c if *c == close => return Some(j + 1),
                        _ => return None,
                    }
                }
            }
            _ => {
                let mut j = i;
                while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    j += 1;
                }
                Some(j)
            }
        }
    }

    /// Members of the object at `i`: (key start, value start, value end).
    pub fn members(b: &[u8], i: usize) -> Option<Vec<(usize, usize, usize)>> {
        if b.get(i) != Some(&b'{') {
            return None;
        }
        let mut out = Vec::new();
        let mut j = ws(b, i + 1);
        if b.get(j) == Some(&b'}') {
            return Some(out);
        }
        loop {
            let key = j;
            j = ws(b, string(b, j)?);
            if b.get(j) != Some(&b':') {
                return None;
            }
            let start = ws(b, j + 1);
            let end = value(b, start)?;
            out.push((key, start, end));
            j = ws(b, end);
            match b.get(j)? {
                b',' => j = ws(b, j + 1),
                b'}' => return Some(out),
                _ => return None,
            }
        }
    }

    /// The value of member `key` of the object at `i`: (key start, value start, value end).
    pub fn member(text: &str, i: usize, key: &str) -> Option<(usize, usize, usize)> {
        let b = text.as_bytes();
        members(b, i)?.into_iter().find(|(k, start, _)| {
            let end = text[*k..*start].rfind(':').map(|c| k + c).unwrap_or(*start);
            gateway_world::json::parse(text[*k..end].trim()).ok().and_then(|p| p.value.as_str().map(|s| s == key)).unwrap_or(false)
        })
    }

    pub fn start(text: &str) -> usize {
        ws(text.as_bytes(), 0)
    }
}

/// The whitespace that starts the line holding byte `at`.
fn line_indent(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect()
}

/// `text` with `name: declaration` added as the last member of the object spanning `[open, close)`.
fn insert_member(text: &str, open: usize, close: usize, name: &str, declaration: &Map) -> Option<String> {
    let members = span::members(text.as_bytes(), open)?;
    let quoted = dumps(&Value::str(name), INLINE);
    let parent = line_indent(text, open);
    let multiline = text[open..close].contains('\n') || members.is_empty();
    let (child, unit) = match members.first() {
        Some((key, _, _)) if multiline => {
            let child = line_indent(text, *key);
            let unit = child.strip_prefix(parent.as_str()).filter(|u| !u.is_empty()).map(str::to_string).unwrap_or_else(|| "  ".into());
            (child, unit)
        }
        _ => (format!("{parent}  "), "  ".to_string()),
    };
    let rendered = if multiline {
        let inner: Vec<String> =
            declaration.iter().map(|(k, v)| format!("{child}{unit}{}: {}", dumps(&Value::str(k), INLINE), dumps(v, INLINE))).collect();
        format!("{quoted}: {{\n{}\n{child}}}", inner.join(",\n"))
    } else {
        format!("{quoted}: {}", dumps(&Value::Object(declaration.clone()), INLINE))
    };
    Some(match members.last() {
        Some((_, _, end)) if multiline => format!("{},\n{child}{rendered}{}", &text[..*end], &text[*end..]),
        Some((_, _, end)) => format!("{}, {rendered}{}", &text[..*end], &text[*end..]),
        None => format!("{}{{\n{child}{rendered}\n{parent}}}{}", &text[..open], &text[close..]),
    })
}

fn property_type(schema: &Value, field: &str) -> Option<Vec<String>> {
    let kind = schema.get("properties")?.get(field)?.get("type")?;
    match kind {
        Value::Str(s) => Some(vec![s.clone()]),
        Value::Array(items) => Some(items.iter().filter_map(Value::as_str).map(str::to_string).collect()),
        _ => None,
    }
}

/// Declare one entity in `schema/world.json`; `compile` proves the new document (in a
/// scratch copy) before it is written.
/// `compile` proves the new `schema/world.json` text and answers the domain it targets;
/// `data/initial.json` is retargeted to that domain when it is empty (as `schema init`
/// leaves it) or targets the contract as it was before (a seeded world: an added entity
/// changes none of its rows' entities), so the world compiles again without hand-editing
/// the batch.
pub fn entity_add(world: &Path, decl: &EntityDecl, compile: &dyn Fn(&str) -> Result<Value, ContractError>) -> Result<Value, ContractError> {
    let path = world.join(WORLD);
    let text = std::fs::read_to_string(&path).map_err(|_| ContractError::new("document", "Cannot read valid UTF-8 JSON", WORLD))?;
    let document = gateway_world::files::parse_json_bytes(text.as_bytes(), WORLD)?;
    let location = "/entity";
    if !is_snake(&decl.name) {
        return fail("entity", "entity name must be snake_case", format!("{location}/name"));
    }
    let entities = document.get("x-gateway").and_then(|x| x.get("entities")).and_then(Value::as_object).cloned();
    let Some(entities) = entities else {
        return fail("entity", format!("{WORLD} has no x-gateway.entities object"), "/x-gateway/entities");
    };
    if entities.contains_key(&decl.name) {
        return fail("entity", format!("entity {} is already declared", decl.name), format!("/x-gateway/entities/{}", decl.name));
    }
    let (schema_ref, resolved) = match &decl.payload {
        Payload::Ref(name) => {
            let Some(def) = document.get("$defs").and_then(|d| d.get(name)) else {
                let known: Vec<String> =
                    document.get("$defs").and_then(Value::as_object).map(|m| m.keys().cloned().collect()).unwrap_or_default();
                return fail("entity", format!("No $defs/{name}; the document defines {}", known.join(", ")), format!("{location}/ref"));
            };
            (object([("$ref", Value::Str(format!("#/$defs/{}", gateway_world::json::escape_pointer(name))))]), def.clone())
        }
        Payload::Fields(spec) => {
            let schema = fields_schema(spec)?;
            (schema.clone(), schema)
        }
        Payload::Schema(json) => match parse(json) {
            Ok(parsed) if matches!(parsed.value, Value::Object(_)) => (parsed.value.clone(), parsed.value),
            _ => return fail("entity", "--schema must be a JSON object", format!("{location}/schema")),
        },
    };
    if decl.key.is_empty() {
        return fail("entity", "--key names the primary key field", format!("{location}/key"));
    }
    let required: Vec<String> = resolved
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    for field in &decl.key {
        if !required.contains(field) {
            return fail("entity", format!("key field {field} must be required by the payload schema"), format!("{location}/key"));
        }
        if let Some(types) = property_type(&resolved, field) {
            if types.is_empty() || !types.iter().all(|t| t == "string" || t == "integer") {
                return fail("entity", format!("key field {field} must be a string or an integer"), format!("{location}/key"));
            }
        }
    }
    let has_property =
        |field: &str| resolved.get("properties").and_then(|p| p.get(field)).is_some() || matches!(decl.payload, Payload::Ref(_));
    for unique in &decl.unique {
        if let Some(field) = unique.iter().find(|f| !has_property(f)) {
            return fail("entity", format!("unique field {field} is not a property of the payload"), format!("{location}/unique"));
        }
    }
    let mut relationships = Vec::new();
    for (fields, target) in &decl.relationships {
        if let Some(field) = fields.iter().find(|f| !has_property(f)) {
            return fail(
                "entity",
                format!("relationship field {field} is not a property of the payload"),
                format!("{location}/relationship"),
            );
        }
        if !entities.contains_key(target) && target != &decl.name {
            return fail("entity", format!("relationship target {target} is not a declared entity"), format!("{location}/relationship"));
        }
        relationships.push(object([
            ("fields", Value::Array(fields.iter().map(Value::str).collect())),
            ("target", Value::str(target)),
            ("on_delete", Value::str("restrict")),
        ]));
    }
    let strings = |items: &[String]| Value::Array(items.iter().map(Value::str).collect());
    let mut declaration = Map::default();
    declaration.insert("schema".into(), schema_ref);
    declaration.insert("primary_key".into(), strings(&decl.key));
    declaration.insert("unique".into(), Value::Array(decl.unique.iter().map(|u| strings(u)).collect()));
    declaration.insert("relationships".into(), Value::Array(relationships));
    let root = span::start(&text);
    let located = span::member(&text, root, "x-gateway").and_then(|(_, x, _)| span::member(&text, x, "entities"));
    let updated = located.and_then(|(_, open, close)| insert_member(&text, open, close, &decl.name, &declaration));
    let Some(updated) = updated else {
        return fail("entity", format!("Cannot locate x-gateway.entities in {WORLD}"), "/x-gateway/entities");
    };
    // The contract as it was: a seeded batch that targets it still holds valid rows.
    let before = compile(&text).ok();
    let target = compile(&updated)?;
    gateway_world::files::write_atomic(&path, updated.as_bytes())
        .map_err(|e| ContractError::new("io", format!("{}: {e}", path.display()), WORLD))?;
    retarget_initial(world, before.as_ref(), &target)?;
    Ok(object([("status", Value::str("ok")), ("entity", Value::str(&decl.name)), ("file", Value::str(WORLD))]))
}

/// Point `data/initial.json` at `target`, keeping its id, rows and the rest, when it
/// has no mutations or targets `before` (the contract the entity was added to); a
/// batch aimed at some other contract, or none at all, is left alone.
fn retarget_initial(world: &Path, before: Option<&Value>, target: &Value) -> Result<(), ContractError> {
    let path = world.join("data/initial.json");
    let Ok(bytes) = std::fs::read(&path) else { return Ok(()) };
    let Ok(Value::Object(mut batch)) = gateway_world::files::parse_json_bytes(&bytes, "initial.json") else { return Ok(()) };
    let empty = batch.get("mutations").and_then(Value::as_array).is_some_and(Vec::is_empty);
    let aims =
        |wanted: &Value| batch.get("target").is_some_and(|t| gateway_world::json::canonical(t) == gateway_world::json::canonical(wanted));
    if aims(target) || !(empty || before.is_some_and(aims)) {
        return Ok(());
    }
    batch.insert("target".into(), target.clone());
    gateway_world::files::write_atomic(&path, &gateway_world::json::encoded(&Value::Object(batch)))
        .map_err(|e| ContractError::new("io", format!("{}: {e}", path.display()), "data/initial.json"))
}

/// Prove a new `schema/world.json` text compiles: a scratch copy of the world's
/// manifest and `schema/` directory, built with the engine's compiler. Answers the
/// domain the new contract targets.
pub fn compile_in_scratch(world: &Path, world_json: &str) -> Result<Value, ContractError> {
    let scratch = gateway_world::data::tempfile_dir::Scratch::new("gateway-entity-add")
        .map_err(|e| ContractError::new("io", e.to_string(), WORLD))?;
    let staged = scratch.path().join("world");
    let io = |e: std::io::Error| ContractError::new("io", e.to_string(), WORLD);
    std::fs::create_dir_all(staged.join("schema")).map_err(io)?;
    for entry in std::fs::read_dir(world.join("schema")).map_err(io)?.flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), staged.join("schema").join(entry.file_name())).map_err(io)?;
        }
    }
    for name in ["gateway-env.toml"] {
        if world.join(name).is_file() {
            std::fs::copy(world.join(name), staged.join(name)).map_err(io)?;
        }
    }
    std::fs::write(staged.join(WORLD), world_json).map_err(io)?;
    gateway_world::build(&staged).map(|contract| contract.target().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_after_the_last_member_keeping_the_rest() {
        let text = "{\n  \"x-gateway\": {\n    \"entities\": {\n      \"a\": {\"schema\": {}}\n    },\n    \"tools\": {}\n  }\n}\n";
        let root = span::start(text);
        let (_, x, _) = span::member(text, root, "x-gateway").unwrap();
        let (_, open, close) = span::member(text, x, "entities").unwrap();
        let decl: Map = [("primary_key".to_string(), Value::Array(vec![Value::str("id")]))].into_iter().collect();
        let out = insert_member(text, open, close, "b", &decl).unwrap();
        assert_eq!(
            out,
            "{\n  \"x-gateway\": {\n    \"entities\": {\n      \"a\": {\"schema\": {}},\n      \"b\": {\n        \"primary_key\": [\"id\"]\n      }\n    },\n    \"tools\": {}\n  }\n}\n"
        );
        let empty = "{\"x-gateway\": {\"entities\": {}}}";
        let (_, x, _) = span::member(empty, 0, "x-gateway").unwrap();
        let (_, open, close) = span::member(empty, x, "entities").unwrap();
        let out = insert_member(empty, open, close, "b", &decl).unwrap();
        assert!(parse(&out).is_ok(), "{out}");
    }

    #[test]
    fn fields_become_a_closed_object() {
        let schema = fields_schema("id:integer, name:string?").unwrap();
        assert_eq!(
            gateway_world::json::canonical(&schema),
            r#"{"additionalProperties":false,"properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"],"type":"object"}"#
        );
        assert!(fields_schema("id:uuid").is_err());
    }
}

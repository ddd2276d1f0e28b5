//! A session's tools as an agent sees them: the world's connector operations
//! described (name, Python-style signature, input schema), an agent's flat
//! arguments routed onto the `{path, query, body}` that [`WorldHost::call`]
//! takes, and a bundled task's instruction.
//!
//! Shared by the hub (session descriptors, `kind: call`) and the MCP server
//! ([`crate::mcp`]), so both describe and route tools the same way. It does not
//! call anything: invoking a tool is [`WorldHost::call`]'s.
//!
//! [`WorldHost::call`]: crate::host::WorldHost::call

use crate::version::Version;
use gateway_world::json::{object, Map, Value};

/// The tools a session offers: the world's connector operations, then its own
/// tools (`x-gateway.tools`) that no operation shadows — those in `allowed`, when
/// the task names any — each `{name, signature, doc, inputSchema}`. An own
/// tool's args are its input, as they are (no routing).
pub fn tools(version: &Version, allowed: Option<&Vec<String>>) -> Value {
    let mut out = Vec::new();
    let mut listed: Vec<&str> = Vec::new();
    for operation in &version.spec.operations {
        if allowed.is_some_and(|a| !a.contains(&operation.name)) || listed.contains(&operation.name.as_str()) {
            continue;
        }
        listed.push(&operation.name);
        let placeholders = operation.placeholders();
        let query: Vec<&String> = operation.params.iter().filter(|p| !placeholders.contains(p)).collect();
        let mut signature: Vec<String> = placeholders.clone();
        signature.extend(query.iter().map(|p| format!("{p}=None")));
        if operation.method != "GET" {
            signature.push("body=None".into());
        }
        out.push(object([
            ("name", Value::str(&operation.name)),
            ("signature", Value::Str(format!("{}({})", operation.name, signature.join(", ")))),
            ("doc", Value::Str(format!("{} {}", operation.method, operation.path))),
            ("inputSchema", crate::tool_schema::input_schema(version, operation)),
        ]));
    }
    // The world's own tools (x-gateway.tools), where no operation has the name.
    for name in version.tools.iter().flat_map(|t| t.names()) {
        if listed.contains(&name.as_str()) || allowed.is_some_and(|a| !a.contains(name)) {
            continue;
        }
        listed.push(name);
        let schemas = version.tools.as_ref().and_then(|t| t.schema(name)).cloned().unwrap_or_default();
        let description = schemas.get("description").and_then(Value::as_str).unwrap_or("a tool of the world").to_string();
        let input = schemas.get("input_schema").filter(|s| s.as_object().is_some()).cloned();
        out.push(object([
            ("name", Value::str(name)),
            ("signature", Value::Str(format!("{name}(input)"))),
            ("doc", Value::Str(description)),
            ("inputSchema", input.unwrap_or_else(|| object([("type", Value::str("object"))]))),
        ]));
    }
    Value::Array(out)
}

/// A tool call's args as the host takes them: `{path, query, body}`.
///
/// Flat args (what an agent sends, as the tool's signature and input schema
/// describe them) are split by the operation: its placeholders go to `path`, its
/// declared params (and anything else, for a GET) to `query`, the rest to the
/// body; a `body` object among them (the signature's `body=None`) is merged into
/// the body. Args that name `path` or `query` where the operation declares no
/// such parameter are routed already, and pass as they are.
pub fn route_args(version: &Version, tool: &str, args: &Value) -> Value {
    let Some(map) = args.as_object() else { return args.clone() };
    let Some(operation) = version.spec.operation(tool) else { return args.clone() };
    let placeholders = operation.placeholders();
    let declared = |key: &str| placeholders.iter().any(|p| p == key) || operation.params.iter().any(|p| p == key);
    if map.keys().any(|k| matches!(k.as_str(), "path" | "query") && !declared(k)) {
        return args.clone();
    }
    let (mut path, mut query, mut body) = (Map::default(), Map::default(), Map::default());
    for (key, value) in map {
        if placeholders.contains(key) {
            path.insert(key.clone(), value.clone());
        } else if operation.params.contains(key) {
            query.insert(key.clone(), value.clone());
        } else if let (Value::Object(fields), "body") = (value, key.as_str()) {
            body.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
        } else if operation.method == "GET" {
            query.insert(key.clone(), value.clone());
        } else {
            body.insert(key.clone(), value.clone());
        }
    }
    object([("path", Value::Object(path)), ("query", Value::Object(query)), ("body", Value::Object(body))])
}

/// A bundled task's instruction: `instruction.md` of its scenario, else the
/// scenario.toml's `instruction`.
pub fn bundled_instruction(version: &Version, task: &str) -> Option<String> {
    let dir = version.scenario_dir(task)?;
    if let Ok(text) = std::fs::read_to_string(dir.join("instruction.md")) {
        return Some(text.trim_end().to_string());
    }
    let table: toml::Table = std::fs::read_to_string(dir.join("scenario.toml")).ok()?.parse().ok()?;
    table.get("instruction").and_then(|v| v.as_str()).map(str::to_string)
}

//! `[api]`, `[operations.api]` and `[ui]` of `connector.toml`: how a world answers,
//! read with the original's refusals. The settings themselves are `types` (re-exported
//! here), which the modules that answer requests name without this reading.

use crate::page::member::Member;
use gateway_connector::spec::{Operation, Spec, DEFAULT_TOKEN_PATH};
use gateway_world::error::{fail, ContractError};
use gateway_world::json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use toml::Value as Toml;

pub mod types;

pub use types::{ApiSettings, OperationSettings, Paging, UiSettings};

const ACTIONS: [&str; 6] = ["read", "create", "update", "delete", "handler", "static"];
const MATCHES: [&str; 3] = ["equals", "contains", "prefix"];
const PAGING: [&str; 4] = ["none", "offset", "cursor", "page"];
/// The default handlers module of a world.
pub const HANDLERS: &str = "api/handlers.py";

/// TOML → JSON value (tables keep document order).
pub fn toml_to_json(value: &Toml) -> Value {
    match value {
        Toml::String(s) => Value::Str(s.clone()),
        Toml::Integer(n) => Value::Int(*n),
        Toml::Float(f) => Value::Float(*f),
        Toml::Boolean(b) => Value::Bool(*b),
        Toml::Datetime(d) => Value::Str(d.to_string()),
        Toml::Array(items) => Value::Array(items.iter().map(toml_to_json).collect()),
        Toml::Table(t) => Value::Object(t.iter().map(|(k, v)| (k.clone(), toml_to_json(v))).collect()),
    }
}

/// `[api] KEY = true|false`, false when absent.
fn flag(api: &toml::Table, key: &str) -> Result<bool, ContractError> {
    match api.get(key) {
        None => Ok(false),
        Some(Toml::Boolean(b)) => Ok(*b),
        Some(_) => fail("spec", format!("api.{key} must be true or false"), format!("/api/{key}")),
    }
}

fn json_body(t: &toml::Table, key: &str, default: Value, location: &str) -> Result<Value, ContractError> {
    match t.get(key) {
        None => Ok(default),
        Some(Toml::String(text)) => match gateway_world::json::parse(text) {
            Ok(parsed) => Ok(parsed.value),
            Err(_) => fail("spec", format!("{key} is not valid JSON"), format!("{location}/{key}")),
        },
        Some(_) => fail("spec", format!("{key} must be a JSON string"), format!("{location}/{key}")),
    }
}

fn status(t: &toml::Table, key: &str, default: i64, location: &str, low: i64, high: i64) -> Result<i64, ContractError> {
    match t.get(key) {
        None => Ok(default),
        Some(Toml::Integer(n)) if (low..=high).contains(n) => Ok(*n),
        Some(_) => fail("spec", format!("{key} must be an HTTP status between {low} and {high}"), format!("{location}/{key}")),
    }
}

fn name(t: &toml::Table, key: &str, default: &str, location: &str) -> Result<String, ContractError> {
    match t.get(key) {
        None => Ok(default.to_string()),
        Some(Toml::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(_) => fail("spec", format!("{key} must be a non-empty string"), format!("{location}/{key}")),
    }
}

fn str_map(t: &toml::Table, key: &str, location: &str) -> Result<Vec<(String, String)>, ContractError> {
    match t.get(key) {
        None => Ok(Vec::new()),
        Some(Toml::Table(m)) if m.iter().all(|(k, v)| !k.is_empty() && v.is_str()) => {
            Ok(m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        }
        Some(_) => fail("spec", format!("{key} maps names to strings"), format!("{location}/{key}")),
    }
}

/// An envelope member: a key, or a list of keys (a path into nested objects); ""
/// leaves the member out where `may_omit`.
fn member(t: &toml::Table, key: &str, default: &str, location: &str, may_omit: bool) -> Result<Member, ContractError> {
    match t.get(key) {
        None => Ok(Member::key(default)),
        Some(Toml::String(s)) if may_omit && s.is_empty() => Ok(Member::default()),
        Some(Toml::Array(parts)) if !parts.is_empty() && parts.iter().all(|p| p.as_str().is_some_and(|s| !s.trim().is_empty())) => {
            Ok(Member(parts.iter().filter_map(Toml::as_str).map(str::to_string).collect()))
        }
        Some(_) => Ok(Member::key(&name(t, key, default, location)?)),
    }
}

fn is_function_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn operation_settings(operation: &Operation, location: &str) -> Result<OperationSettings, ContractError> {
    let empty = toml::Table::new();
    let t = match operation.table.get("api") {
        None => &empty,
        Some(Toml::Table(t)) => t,
        Some(_) => return fail("spec", "[operations.api] must be a table", location),
    };
    let placeholders = operation.placeholders();
    let declared = |arg: &str| placeholders.iter().any(|p| p == arg) || operation.params.iter().any(|p| p == arg);
    let (filter, matching) = filter_settings(t, location, &declared)?;
    let (action, handler) = action_settings(t, operation, &filter, location)?;
    let default_status = match action.as_str() {
        "create" => 201,
        "delete" => 204,
        _ => 200,
    };
    let status_code = status(t, "status", default_status, location, 200, 299)?;
    let envelope = match t.get("envelope") {
        None => None,
        Some(Toml::String(s)) => Some(s.clone()),
        Some(_) => return fail("spec", "api.envelope must be a string", format!("{location}/envelope")),
    };
    let single = match t.get("single") {
        None => matches!(action.as_str(), "create" | "update"),
        Some(Toml::Boolean(b)) => *b,
        Some(_) => return fail("spec", "api.single must be true or false", format!("{location}/single")),
    };
    let (body, defaults, generate) = write_settings(t, &action, location)?;
    let sample = sample_settings(t, location, &declared)?;
    let nesting = crate::nested::parse(t, location, &declared)?;
    if nesting.is_some() && operation.entity.is_none() {
        return fail("spec", "api.parent needs the operation's entity", format!("{location}/parent"));
    }
    if generate.iter().any(|(_, kind)| kind == "int-in-parent") && nesting.is_none() {
        return fail("spec", "an int-in-parent generator counts among a parent's rows: declare api.parent", format!("{location}/generate"));
    }
    let listing = crate::listing::parse(t, location, &|p| operation.params.iter().any(|q| q == p))?;
    let computed = crate::vendor::parse_computed(t, location)?;
    if !computed.is_empty() && action != "create" {
        return fail("spec", "api.computed belongs to the create action", format!("{location}/computed"));
    }
    let headers = crate::vendor::parse_headers(t, location)?;
    let answer = match (action.as_str(), t.get("answer")) {
        ("static" | "create" | "update" | "delete", Some(Toml::String(_))) => Some(json_body(t, "answer", Value::Null, location)?),
        ("static", _) => return fail("spec", "action = \"static\" answers api.answer, a JSON string", format!("{location}/answer")),
        (_, Some(_)) => {
            return fail(
                "spec",
                "api.answer belongs to action = \"static\", or to a write answering a constant in place of its row",
                format!("{location}/answer"),
            )
        }
        (_, None) => None,
    };
    let shape = crate::reply::parse_shape(t, location)?;
    if shape.shapes() && !matches!(action.as_str(), "read" | "create" | "update" | "delete") {
        return fail("spec", "api.wrap and api.lift shape the row of a built-in action", location);
    }
    let more_key = match t.get("more_key") {
        None => None,
        Some(_) => Some(member(t, "more_key", "", location, true)?),
    };
    let nulls: Vec<String> = match t.get("nulls") {
        None => Vec::new(),
        Some(Toml::Array(items)) if action == "create" && items.iter().all(|i| i.as_str().is_some_and(|s| !s.is_empty())) => {
            items.iter().filter_map(Toml::as_str).map(str::to_string).collect()
        }
        Some(_) => {
            return fail(
                "spec",
                "api.nulls lists the fields a created row holds as null unless given (create only)",
                format!("{location}/nulls"),
            )
        }
    };
    let paging = match t.get("page") {
        None => None,
        Some(Toml::String(s)) if PAGING.contains(&s.as_str()) => Some(s.clone()),
        Some(_) => return fail("spec", format!("api.page must be one of {}", PAGING.join(", ")), format!("{location}/page")),
    };
    Ok(OperationSettings {
        filter,
        matching,
        action: action.clone(),
        status: status_code,
        envelope,
        single,
        body,
        defaults,
        generate,
        handler,
        paging,
        sample,
        nesting,
        listing,
        computed,
        headers,
        answer,
        nulls,
        refusals: crate::reply::parse_refusals(t, location)?,
        shape,
        required: crate::reply::parse_required(t, location, &declared)?,
        more_key,
    })
}

/// `api.filter` (arguments the operation declares) and `api.match` (how each
/// filtered argument compares).
fn filter_settings(
    t: &toml::Table,
    location: &str,
    declared: &dyn Fn(&str) -> bool,
) -> Result<(Vec<(String, String)>, BTreeMap<String, String>), ContractError> {
    let filter = str_map(t, "filter", location)?;
    for (arg, _) in &filter {
        if !declared(arg) {
            return fail(
                "spec",
                format!("api.filter names {arg}, which is neither a path argument nor a parameter"),
                format!("{location}/filter"),
            );
        }
    }
    let mut matching = BTreeMap::new();
    for (arg, mode) in str_map(t, "match", location)? {
        if !filter.iter().any(|(a, _)| *a == arg) {
            return fail("spec", format!("api.match names {arg}, which api.filter does not declare"), format!("{location}/match"));
        }
        if !MATCHES.contains(&mode.as_str()) {
            return fail("spec", format!("api.match.{arg} must be one of {}", MATCHES.join(", ")), format!("{location}/match"));
        }
        matching.insert(arg, mode);
    }
    Ok((filter, matching))
}

/// `api.action` (a write needs an entity, an update or delete a filter) and
/// `api.handler`, which only the `handler` action takes.
fn action_settings(
    t: &toml::Table,
    operation: &Operation,
    filter: &[(String, String)],
    location: &str,
) -> Result<(String, Option<String>), ContractError> {
    let action = name(t, "action", "read", location)?;
    if !ACTIONS.contains(&action.as_str()) {
        return fail("spec", format!("api.action must be one of {}", ACTIONS.join(", ")), format!("{location}/action"));
    }
    let writes = matches!(action.as_str(), "create" | "update" | "delete");
    if writes && operation.entity.is_none() {
        return fail("spec", format!("api.action {action} needs an entity to write"), format!("{location}/action"));
    }
    if matches!(action.as_str(), "update" | "delete") && filter.is_empty() {
        return fail("spec", format!("api.action {action} needs a filter to find the row"), format!("{location}/filter"));
    }
    let handler = t.get("handler");
    let handler = if action == "handler" {
        match handler.and_then(Toml::as_str) {
            Some(h) if is_function_name(h) => Some(h.to_string()),
            _ => return fail("spec", "api.handler names a function in the world's handlers module", format!("{location}/handler")),
        }
    } else if handler.is_some() {
        return fail("spec", "api.handler belongs to action = \"handler\"", format!("{location}/handler"));
    } else {
        None
    };
    Ok((action, handler))
}

/// What a create or update writes: `api.body` (fields from arguments), `api.defaults`
/// (constant fields) and `api.generate` (generated fields).
fn write_settings(
    t: &toml::Table,
    action: &str,
    location: &str,
) -> Result<(Vec<(String, String)>, Map, Vec<(String, String)>), ContractError> {
    let body = str_map(t, "body", location)?;
    let defaults = match t.get("defaults") {
        None => Map::default(),
        Some(table @ Toml::Table(_)) => match toml_to_json(table) {
            Value::Object(map) => map,
            _ => Map::default(),
        },
        Some(_) => return fail("spec", "api.defaults is a table of constant fields", format!("{location}/defaults")),
    };
    let generate = str_map(t, "generate", location)?;
    for (field, kind) in &generate {
        if crate::generate::Kind::parse(kind).is_none() {
            return fail("spec", format!("api.generate.{field} must be one of {}", crate::generate::KINDS), format!("{location}/generate"));
        }
    }
    if (!body.is_empty() || !defaults.is_empty() || !generate.is_empty()) && !matches!(action, "create" | "update") {
        return fail("spec", "api.body, defaults and generate belong to create and update actions", location);
    }
    Ok((body, defaults, generate))
}

/// `api.sample`: a value the route accepts for some of the operation's arguments,
/// as text.
fn sample_settings(t: &toml::Table, location: &str, declared: &dyn Fn(&str) -> bool) -> Result<BTreeMap<String, String>, ContractError> {
    let sample: BTreeMap<String, String> = match t.get("sample") {
        None => BTreeMap::new(),
        Some(Toml::Table(m)) if m.values().all(|v| matches!(v, Toml::String(_) | Toml::Integer(_) | Toml::Float(_))) => m
            .iter()
            .map(|(k, v)| {
                let text = match v {
                    Toml::String(s) => s.clone(),
                    Toml::Integer(n) => n.to_string(),
                    Toml::Float(f) => gateway_world::json::python_float_repr(*f),
                    _ => String::new(),
                };
                (k.clone(), text)
            })
            .collect(),
        Some(_) => {
            return fail("spec", "api.sample maps path arguments or parameters to a value the route accepts", format!("{location}/sample"))
        }
    };
    for arg in sample.keys() {
        if !declared(arg) {
            return fail(
                "spec",
                format!("api.sample names {arg}, which is neither a path argument nor a parameter"),
                format!("{location}/sample"),
            );
        }
    }
    Ok(sample)
}

fn ui_settings(raw: &toml::Table, world: &Path) -> Result<Option<UiSettings>, ContractError> {
    let Some(ui) = raw.get("ui") else { return Ok(None) };
    let Some(ui) = ui.as_table() else {
        return fail("spec", "[ui] must be a table", "/ui");
    };
    let static_dir = match ui.get("static").and_then(Toml::as_str) {
        Some(s) if !s.is_empty() && !s.starts_with('/') && !s.split('/').any(|p| p == "..") => s.to_string(),
        _ => return fail("spec", "ui.static is a directory inside the world holding the built ui", "/ui/static"),
    };
    let quoted = gateway_world::json::python_repr(&Value::str(&static_dir));
    if let Some(dropped) = static_dir.split('/').find(|p| ["dist", "build", "outputs", "__pycache__"].contains(p) || p.starts_with('.')) {
        let part = gateway_world::json::python_repr(&Value::str(dropped));
        return fail(
            "spec",
            format!("ui.static = {quoted} is under {part}, which bench push drops from every bundle as a build artifact; build the ui into a directory such as ui/static"),
            "/ui/static",
        );
    }
    if !world.join(&static_dir).join("index.html").is_file() {
        return fail("spec", format!("ui.static = {quoted} has no index.html; build the ui first"), "/ui/static");
    }
    let entry = match ui.get("entry") {
        None => "/".to_string(),
        Some(Toml::String(s)) if s.starts_with('/') => s.clone(),
        Some(_) => return fail("spec", "ui.entry is the path the agent lands on, starting with /", "/ui/entry"),
    };
    let api_path = match ui.get("api_path") {
        None => "/__world-api".to_string(),
        Some(Toml::String(s)) if s.starts_with('/') && s != "/" => s.clone(),
        Some(_) => return fail("spec", "ui.api_path is the same-origin prefix the ui calls the api at", "/ui/api_path"),
    };
    Ok(Some(UiSettings {
        static_dir: static_dir.trim_end_matches('/').to_string(),
        entry,
        api_path: api_path.trim_end_matches('/').to_string(),
    }))
}

/// Read `[api]` and every `[operations.api]` of the world's connector.toml.
pub fn load_api_settings(world: &Path, spec: &Spec) -> Result<ApiSettings, ContractError> {
    let empty = toml::Table::new();
    let api = match spec.raw.get("api") {
        None => &empty,
        Some(Toml::Table(t)) => t,
        Some(_) => return fail("spec", "[api] must be a table", "/api"),
    };
    let envelope = match api.get("envelope") {
        None => String::new(),
        Some(Toml::String(s)) => s.clone(),
        Some(_) => return fail("spec", "api.envelope must be a string", "/api/envelope"),
    };
    let style = name(api, "page", "none", "/api")?;
    if !PAGING.contains(&style.as_str()) {
        return fail("spec", format!("api.page must be one of {}", PAGING.join(", ")), "/api/page");
    }
    let page_size = match api.get("page_size") {
        None => 100,
        Some(Toml::Integer(n)) if *n >= 1 => *n,
        Some(_) => return fail("spec", "api.page_size must be a positive integer", "/api/page_size"),
    };
    let paging = Paging {
        style,
        limit_param: name(api, "limit_param", "limit", "/api")?,
        offset_param: name(api, "offset_param", "offset", "/api")?,
        cursor_param: name(api, "cursor_param", "cursor", "/api")?,
        page_param: name(api, "page_param", "page", "/api")?,
        page_size,
    };
    let mut token_path = match api.get("token_path") {
        None => None,
        Some(Toml::String(s)) if s.starts_with('/') => Some(s.clone()),
        Some(_) => return fail("spec", "api.token_path is the path the world mints tokens on", "/api/token_path"),
    };
    if token_path.is_some() && spec.scheme != "oauth2" {
        return fail("spec", "api.token_path belongs to auth.scheme oauth2", "/api/token_path");
    }
    if spec.scheme == "oauth2" && token_path.is_none() {
        let url = spec.token_url.clone().unwrap_or_default();
        token_path = Some(if url.starts_with('/') { url } else { DEFAULT_TOKEN_PATH.to_string() });
    }
    let handlers_name = match api.get("handlers") {
        None => None,
        Some(Toml::String(s)) => Some(s.clone()),
        Some(_) => return fail("spec", "api.handlers is the path of the world's handlers module", "/api/handlers"),
    };
    let handlers = world.join(handlers_name.as_deref().unwrap_or(HANDLERS));
    if let Some(declared) = &handlers_name {
        if !handlers.is_file() {
            return fail("spec", format!("api.handlers names {declared}, which is not a file in the world"), "/api/handlers");
        }
    }
    let mut operations = BTreeMap::new();
    for (index, operation) in spec.operations.iter().enumerate() {
        operations.insert(operation.name.clone(), operation_settings(operation, &format!("/operations/{index}/api"))?);
    }
    let before = match api.get("before") {
        None => None,
        Some(Toml::String(s)) if is_function_name(s) => Some(s.clone()),
        Some(_) => return fail("spec", "api.before names a function in the world's handlers module", "/api/before"),
    };
    let mut needs: Vec<String> = spec.operations.iter().filter(|o| operations[&o.name].handler.is_some()).map(|o| o.name.clone()).collect();
    if let Some(gate) = &before {
        needs.push(format!("[api].before={gate}"));
    }
    if !needs.is_empty() && !handlers.is_file() {
        let file = handlers.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        return fail("spec", format!("Operations {} name handlers but the world has no {file}", needs.join(", ")), "/api/handlers");
    }
    let page_headers = match api.get("page_headers") {
        None => Vec::new(),
        Some(Toml::Table(m))
            if m.iter().all(|(k, v)| {
                ["cursor", "total", "previous", "link"].contains(&k.as_str()) && v.as_str().is_some_and(|s| !s.trim().is_empty())
            }) =>
        {
            m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect()
        }
        Some(_) => {
            return fail("spec", "api.page_headers maps cursor, total, previous and link to response header names", "/api/page_headers")
        }
    };
    let page_links = match api.get("page_links") {
        None => false,
        Some(Toml::Boolean(b)) => *b,
        Some(_) => return fail("spec", "page_links must be true or false", "/api/page_links"),
    };
    let object = |pairs: &[(&str, &str)]| Value::Object(pairs.iter().map(|(k, v)| (k.to_string(), Value::str(*v))).collect());
    Ok(ApiSettings {
        envelope,
        unauthorized: json_body(api, "unauthorized", object(&[("error", "unauthorized")]), "/api")?,
        not_found: json_body(api, "not_found", object(&[("error", "not_found")]), "/api")?,
        unauthorized_status: crate::reply::error_status(api, "unauthorized_status", 401, "/api")?,
        not_found_status: crate::reply::error_status(api, "not_found_status", 404, "/api")?,
        invalid: json_body(api, "invalid", object(&[("error", "invalid")]), "/api")?,
        invalid_status: crate::reply::error_status(api, "invalid_status", 400, "/api")?,
        error_content_type: name(api, "error_content_type", "application/json", "/api")?,
        hits_key: member(api, "hits_key", "hits", "/api", true)?,
        cursor_key: member(api, "cursor_key", "cursor", "/api", false)?,
        more_key: member(api, "more_key", "", "/api", true)?,
        success: crate::reply::parse_success(api)?,
        conflict: crate::reply::parse_conflict(api)?,
        body_params: flag(api, "body_params")?,
        forms: flag(api, "forms")?,
        previous_key: if api.contains_key("previous_key") { Some(name(api, "previous_key", "", "/api")?) } else { None },
        page_headers,
        page_links,
        paging,
        token_path,
        handlers: handlers.is_file().then_some(handlers),
        before,
        operations,
        base_url: spec.base_url.clone(),
        rewrite: crate::vendor::parse_rewrite(api, &spec.base_url)?,
        headers: crate::vendor::parse_headers(api, "/api")?,
        anonymous: anonymous_methods(&spec.raw)?,
        ui: ui_settings(&spec.raw, world)?,
    })
}

/// `[auth] anonymous = ["GET", …]`: the methods a request may use without a
/// credential (a vendor's public reads); a credential sent is still checked.
fn anonymous_methods(raw: &toml::Table) -> Result<Vec<String>, ContractError> {
    match raw.get("auth").and_then(Toml::as_table).and_then(|auth| auth.get("anonymous")) {
        None => Ok(Vec::new()),
        Some(Toml::Array(items))
            if items.iter().all(|i| i.as_str().is_some_and(|m| ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&m))) =>
        {
            Ok(items.iter().filter_map(Toml::as_str).map(str::to_string).collect())
        }
        Some(_) => fail("spec", "auth.anonymous lists HTTP methods answered without a credential", "/auth/anonymous"),
    }
}

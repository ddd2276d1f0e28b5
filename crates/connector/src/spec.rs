//! Parsing `connector.toml` into a [`Spec`], with the original's refusals.

use gateway_world::error::{fail, ContractError};
use gateway_world::extract::Redaction;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use toml::Value as Toml;

/// The connection spec's file name inside a world.
pub const SPEC: &str = "connector.toml";
/// Where an oauth2 connection mints tokens when `token_url` is not given.
pub const DEFAULT_TOKEN_PATH: &str = "/oauth/token";
const SCHEMES: [&str; 6] = ["header", "bearer", "basic", "query", "oauth2", "none"];
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// One `[[operations.ingest.explode]]` entry: list items that become child rows.
#[derive(Debug, Clone)]
pub struct Explode {
    /// The parent field holding the list.
    pub field: String,
    /// The child entity.
    pub entity: String,
    /// Child field ← parent field.
    pub carry: BTreeMap<String, String>,
    /// Child field ← item field.
    pub take: BTreeMap<String, String>,
}

/// One vendor operation (`[[operations]]`).
#[derive(Debug, Clone)]
pub struct Operation {
    /// snake_case name.
    pub name: String,
    /// HTTP method, upper case.
    pub method: String,
    /// Path template with `{args}`.
    pub path: String,
    /// Declared query parameters.
    pub params: Vec<String>,
    /// The entity rows land in / are served from.
    pub entity: Option<String>,
    /// Dotted path to the rows in a response ("" = the body is the row).
    pub results: String,
    /// Fields dropped at ingest.
    pub drop: Vec<String>,
    /// Child rows exploded at ingest.
    pub explode: Vec<Explode>,
    /// The raw TOML table, for settings other crates read (`[operations.api]`).
    pub table: toml::Table,
}

impl Operation {
    /// The `{placeholder}` names of the path, in order.
    pub fn placeholders(&self) -> Vec<String> {
        placeholders(&self.path)
    }
}

/// `{name}` placeholders of a path template (`[A-Za-z_][A-Za-z0-9_]*`).
pub fn placeholders(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) if is_placeholder(&after[..end]) => {
                out.push(after[..end].to_string());
                rest = &after[end + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

/// Whether `name` (what lies between a `{` and the next `}`) names a placeholder.
pub fn is_placeholder(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A parsed `connector.toml`.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Connector slug.
    pub slug: String,
    /// The vendor's base URL, without a trailing slash.
    pub base_url: String,
    /// Auth scheme: header | bearer | basic | query | oauth2 | none.
    pub scheme: String,
    /// Header or query parameter name for header/query schemes.
    pub auth_name: Option<String>,
    /// Environment variable holding the credential.
    pub secret_env: Option<String>,
    /// Extra header name → environment variable.
    pub extra_headers: BTreeMap<String, String>,
    /// oauth2 token URL (absolute or under base_url).
    pub token_url: Option<String>,
    /// oauth2 client id environment variable.
    pub client_id_env: Option<String>,
    /// oauth2 scope.
    pub scope: Option<String>,
    /// Capture pacing.
    pub requests_per_minute: i64,
    /// Capture timeout.
    pub timeout_seconds: f64,
    /// Capture page limit.
    pub max_pages: i64,
    /// Cursor query parameter for capture paging.
    pub cursor_param: Option<String>,
    /// Body field holding the next cursor.
    pub cursor_field: Option<String>,
    /// Response header holding the next cursor.
    pub cursor_header: Option<String>,
    /// The `[redact]` policy (hash, drop, round), salted with the slug; the engine's
    /// walker applies it to captures and extracts alike.
    pub redaction: Redaction,
    /// Operations in declaration order.
    pub operations: Vec<Operation>,
    /// The whole parsed file, for sections other crates read (`[api]`, `[ui]`).
    pub raw: toml::Table,
}

impl Spec {
    /// An operation by name.
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.operations.iter().find(|o| o.name == name)
    }
}

fn table<'a>(value: Option<&'a Toml>, location: &str) -> Result<&'a toml::Table, ContractError> {
    match value {
        Some(Toml::Table(t)) => Ok(t),
        _ => fail("spec", "Expected a table", location),
    }
}

fn string(t: &toml::Table, key: &str, location: &str, default: Option<&str>, required: bool) -> Result<Option<String>, ContractError> {
    match t.get(key) {
        None if required => fail("spec", format!("Missing {key}"), location),
        None => Ok(default.map(str::to_string)),
        Some(Toml::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
        Some(_) => fail("spec", format!("{key} must be a non-empty string"), format!("{location}/{key}")),
    }
}

fn is_field(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn is_snake(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn paths(t: &toml::Table, key: &str, location: &str) -> Result<BTreeSet<String>, ContractError> {
    let empty = Vec::new();
    let list = match t.get(key) {
        None => &empty,
        Some(Toml::Array(items)) => items,
        Some(_) => return fail("spec", format!("{key} must be a list of field names or dotted paths"), format!("{location}/{key}")),
    };
    let mut out = BTreeSet::new();
    for item in list {
        match item.as_str() {
            Some(v) if !v.is_empty() && v.split('.').all(|p| p == "*" || is_field(p)) => {
                out.insert(v.to_string());
            }
            _ => return fail("spec", format!("{key} must be a list of field names or dotted paths"), format!("{location}/{key}")),
        }
    }
    Ok(out)
}

fn names(t: &toml::Table, key: &str, location: &str) -> Result<Vec<String>, ContractError> {
    let list: Vec<String> = match t.get(key) {
        None => Vec::new(),
        Some(Toml::Array(items)) if items.iter().all(|v| v.as_str().is_some_and(is_field)) => {
            items.iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect()
        }
        Some(_) => return fail("spec", format!("{key} must be a list of snake_case names"), format!("{location}/{key}")),
    };
    if list.iter().collect::<BTreeSet<_>>().len() != list.len() {
        return fail("spec", format!("{key} repeats a name"), format!("{location}/{key}"));
    }
    Ok(list)
}

fn positive(t: &toml::Table, key: &str, location: &str, default: f64) -> Result<f64, ContractError> {
    let value = match t.get(key) {
        None => default,
        Some(Toml::Integer(n)) => *n as f64,
        Some(Toml::Float(f)) => *f,
        Some(_) => return fail("spec", format!("{key} must be a positive number"), format!("{location}/{key}")),
    };
    if value <= 0.0 {
        return fail("spec", format!("{key} must be a positive number"), format!("{location}/{key}"));
    }
    Ok(value)
}

fn mapping(t: &toml::Table, key: &str, location: &str) -> Result<BTreeMap<String, String>, ContractError> {
    match t.get(key) {
        None => Ok(BTreeMap::new()),
        Some(Toml::Table(m)) if m.iter().all(|(k, v)| !k.is_empty() && v.as_str().is_some_and(|s| !s.is_empty())) => {
            Ok(m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        }
        Some(_) => fail("spec", format!("{key} maps child field names to source field names"), format!("{location}/{key}")),
    }
}

/// Split an http(s) URL into (scheme, netloc, path, has query or fragment).
fn split_url(url: &str) -> (String, String, String, bool) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (before_fragment, fragment) = rest.split_once('#').map_or((rest, false), |(a, _)| (a, true));
    let (before_query, query) = before_fragment.split_once('?').map_or((before_fragment, false), |(a, _)| (a, true));
    let (netloc, path) = match before_query.find('/') {
        Some(i) => (&before_query[..i], &before_query[i..]),
        None => (before_query, ""),
    };
    (scheme.to_ascii_lowercase(), netloc.to_string(), path.to_string(), query || fragment)
}

/// The path part of the base URL (what a served world strips from request paths).
pub fn base_path(base_url: &str) -> String {
    split_url(base_url).2.trim_end_matches('/').to_string()
}

/// The `[auth]` keys the spec reads; any other key the original silently ignores.
const AUTH_KEYS: [&str; 7] = ["scheme", "name", "secret_env", "headers", "token_url", "client_id_env", "scope"];
/// Key names that say "this holds a credential" (matched case-insensitively, as a part).
const CREDENTIAL_WORDS: [&str; 13] = [
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "apikey",
    "api_key",
    "api-key",
    "credential",
    "bearer",
    "cookie",
    "private_key",
];
/// Prefixes of well-known credential formats (Stripe, GitHub, Slack, GitLab, AWS, Google, JWTs).
const CREDENTIAL_PREFIXES: [&str; 14] =
    ["sk_", "sk-", "pk_live", "rk_live", "ghp_", "gho_", "ghu_", "ghs_", "github_pat_", "xoxb-", "xoxp-", "glpat-", "AKIA", "eyJ"];

fn credential_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    CREDENTIAL_WORDS.iter().any(|w| key.contains(w)) || key == "key" || key.ends_with("_key") || key == "pass" || key == "auth"
}

/// Whether `value` can be an environment variable's name and does not read as a credential.
fn env_name(value: &str) -> bool {
    let shaped = value.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let random = value.len() >= 16
        && value.chars().any(|c| c.is_ascii_lowercase())
        && value.chars().any(|c| c.is_ascii_uppercase())
        && value.chars().any(|c| c.is_ascii_digit());
    shaped && !random && !CREDENTIAL_PREFIXES.iter().any(|p| value.starts_with(p)) && !value.starts_with("AIza")
}

/// connector.toml names environment variables, never holds credentials: an unknown
/// credential-named key in `[auth]`/`[connector]`, a credential where a variable name
/// belongs, or userinfo in base_url is refused. The refusal names the key, never the value.
/// (The original ignores unknown `[auth]` keys and takes any string as a variable name.)
fn refuse_inline_secrets(
    connector: &toml::Table,
    auth: &toml::Table,
    netloc: &str,
    secret_env: Option<&str>,
    client_id_env: Option<&str>,
    headers: &BTreeMap<String, String>,
) -> Result<(), ContractError> {
    if netloc.contains('@') {
        return fail("spec", "base_url carries credentials; name an environment variable in [auth] instead", "/connector/base_url");
    }
    for (section, t) in [("auth", auth), ("connector", connector)] {
        let known: &[&str] = if section == "auth" { &AUTH_KEYS } else { &["slug", "base_url"] };
        if let Some(key) = t.keys().find(|k| !known.contains(&k.as_str()) && credential_key(k)) {
            return fail(
                "spec",
                format!(
                    "{section}.{key} holds a credential inline; connector.toml names environment variables, never values: \
                     export it and name the variable in auth.secret_env"
                ),
                format!("/{section}/{key}"),
            );
        }
    }
    for (key, value) in [("secret_env", secret_env), ("client_id_env", client_id_env)] {
        if value.is_some_and(|v| !env_name(v)) {
            return fail(
                "spec",
                format!("auth.{key} must name an environment variable (letters, digits, _), not hold the credential itself"),
                format!("/auth/{key}"),
            );
        }
    }
    if let Some(header) = headers.iter().find(|(_, v)| !env_name(v)).map(|(k, _)| k) {
        return fail(
            "spec",
            format!("auth.headers.{header} must name an environment variable (letters, digits, _), not hold the credential itself"),
            format!("/auth/headers/{header}"),
        );
    }
    Ok(())
}

/// Parse `connector.toml` text.
pub fn parse_spec(text: &str) -> Result<Spec, ContractError> {
    let raw: toml::Table = match text.parse() {
        Ok(raw) => raw,
        Err(error) => return fail("spec", format!("connector.toml is not valid TOML: {}", error.message()), "/connector.toml"),
    };
    let connector = table(raw.get("connector"), "/connector")?;
    let (slug, base_url, netloc) = connector_origin(connector)?;
    let default_auth = Toml::Table(toml::Table::from_iter([("scheme".to_string(), Toml::String("none".into()))]));
    let auth_table = table(Some(raw.get("auth").unwrap_or(&default_auth)), "/auth")?;
    let auth = parse_auth(auth_table)?;
    refuse_inline_secrets(connector, auth_table, &netloc, auth.secret_env.as_deref(), auth.client_id_env.as_deref(), &auth.extra_headers)?;
    let empty = Toml::Table(toml::Table::new());
    let capture = table(Some(raw.get("capture").unwrap_or(&empty)), "/capture")?;
    let (cursor_param, cursor_field, cursor_header) = capture_cursor(capture)?;
    let redaction = parse_redaction(table(Some(raw.get("redact").unwrap_or(&empty)), "/redact")?, &slug)?;
    let operations = parse_operations(&raw)?;
    let is_oauth = auth.scheme == "oauth2";
    Ok(Spec {
        slug,
        base_url: base_url.trim_end_matches('/').to_string(),
        scheme: auth.scheme,
        auth_name: auth.name,
        secret_env: auth.secret_env,
        extra_headers: auth.extra_headers,
        token_url: if is_oauth { auth.token_url } else { None },
        client_id_env: if is_oauth { auth.client_id_env } else { None },
        scope: if is_oauth { auth.scope } else { None },
        requests_per_minute: positive(capture, "requests_per_minute", "/capture", 30.0)? as i64,
        timeout_seconds: positive(capture, "timeout_seconds", "/capture", 30.0)?,
        max_pages: positive(capture, "max_pages", "/capture", 5.0)? as i64,
        cursor_param,
        cursor_field,
        cursor_header,
        redaction,
        operations,
        raw,
    })
}

/// `[connector]`'s slug and base URL, checked, with the URL's host.
fn connector_origin(connector: &toml::Table) -> Result<(String, String, String), ContractError> {
    let slug = string(connector, "slug", "/connector", None, true)?.unwrap_or_default();
    let slug_ok = slug.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && slug.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !slug_ok {
        return fail("spec", "slug must be lowercase letters, digits and hyphens", "/connector/slug");
    }
    let base_url = string(connector, "base_url", "/connector", None, true)?.unwrap_or_default();
    let (scheme_part, netloc, _, extra) = split_url(&base_url);
    if !matches!(scheme_part.as_str(), "https" | "http") || netloc.is_empty() || extra {
        return fail("spec", "base_url must be an http(s) origin with an optional path and no query", "/connector/base_url");
    }
    Ok((slug, base_url, netloc))
}

/// `[auth]` as declared (the OAuth2 members are kept for any scheme here; only
/// `oauth2` passes them on).
struct Auth {
    scheme: String,
    name: Option<String>,
    secret_env: Option<String>,
    token_url: Option<String>,
    client_id_env: Option<String>,
    scope: Option<String>,
    extra_headers: BTreeMap<String, String>,
}

/// `[auth]` checked: a known scheme with the members it takes and no other.
fn parse_auth(auth: &toml::Table) -> Result<Auth, ContractError> {
    let scheme = string(auth, "scheme", "/auth", None, true)?.unwrap_or_default();
    if !SCHEMES.contains(&scheme.as_str()) {
        return fail("spec", format!("auth.scheme must be one of {}", SCHEMES.join(", ")), "/auth/scheme");
    }
    let auth_name = string(auth, "name", "/auth", None, matches!(scheme.as_str(), "header" | "query"))?;
    let secret_env = string(auth, "secret_env", "/auth", None, scheme != "none")?;
    if scheme == "none" && (auth_name.is_some() || secret_env.is_some()) {
        return fail("spec", "auth.scheme none takes no name or secret_env", "/auth");
    }
    let token_url = string(auth, "token_url", "/auth", Some(DEFAULT_TOKEN_PATH), false)?;
    let client_id_env = string(auth, "client_id_env", "/auth", None, scheme == "oauth2")?;
    let scope = string(auth, "scope", "/auth", None, false)?;
    if scheme != "oauth2" && (client_id_env.is_some() || scope.is_some() || auth.contains_key("token_url")) {
        return fail("spec", "token_url, client_id_env and scope belong to auth.scheme oauth2", "/auth");
    }
    if scheme == "oauth2"
        && !token_url.as_deref().is_some_and(|u| u.starts_with('/') || u.starts_with("https://") || u.starts_with("http://"))
    {
        return fail("spec", "auth.token_url is a path under base_url or an absolute URL", "/auth/token_url");
    }
    let extra_headers = match auth.get("headers") {
        None => BTreeMap::new(),
        Some(Toml::Table(m)) if m.iter().all(|(k, v)| !k.trim().is_empty() && v.as_str().is_some_and(|s| !s.trim().is_empty())) => {
            m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect()
        }
        Some(_) => return fail("spec", "auth.headers maps header names to environment variable names", "/auth/headers"),
    };
    if let (Some(name), "header") = (&auth_name, scheme.as_str()) {
        if extra_headers.keys().any(|k| k.eq_ignore_ascii_case(name)) {
            return fail("spec", "auth.headers repeats the secret header", "/auth/headers");
        }
    }
    Ok(Auth { scheme, name: auth_name, secret_env, token_url, client_id_env, scope, extra_headers })
}

/// `[capture]`'s cursor: the query parameter it is sent as, and the body field or
/// response header it is read from (a parameter comes with exactly one of those).
fn capture_cursor(capture: &toml::Table) -> Result<(Option<String>, Option<String>, Option<String>), ContractError> {
    let cursor_param = string(capture, "cursor_param", "/capture", None, false)?;
    let cursor_field = string(capture, "cursor_field", "/capture", None, false)?;
    let cursor_header = string(capture, "cursor_header", "/capture", None, false)?;
    if cursor_field.is_some() && cursor_header.is_some() {
        return fail("spec", "The next cursor is read from a body field or a response header, not both", "/capture");
    }
    if cursor_param.is_some() != (cursor_field.is_some() || cursor_header.is_some()) {
        return fail("spec", "cursor_param comes with cursor_field or cursor_header", "/capture");
    }
    Ok((cursor_param, cursor_field, cursor_header))
}

/// `[redact]`: fields hashed, dropped or rounded, each in one of those at most.
fn parse_redaction(redact: &toml::Table, slug: &str) -> Result<Redaction, ContractError> {
    let hash_fields = paths(redact, "hash", "/redact")?;
    let drop_fields = paths(redact, "drop", "/redact")?;
    let round_fields: BTreeMap<String, i64> = match redact.get("round") {
        None => BTreeMap::new(),
        Some(Toml::Table(m)) if m.iter().all(|(k, v)| is_field(k) && matches!(v, Toml::Integer(n) if (0..=10).contains(n))) => {
            m.iter().map(|(k, v)| (k.clone(), v.as_integer().unwrap_or_default())).collect()
        }
        Some(_) => return fail("spec", "redact.round maps numeric field names to the decimals kept (0-10)", "/redact/round"),
    };
    let rounded: BTreeSet<String> = round_fields.keys().cloned().collect();
    if hash_fields.intersection(&drop_fields).next().is_some() || rounded.iter().any(|f| hash_fields.contains(f) || drop_fields.contains(f))
    {
        return fail("spec", "A field is hashed, dropped or rounded, never two of those", "/redact");
    }
    Ok(Redaction { slug: slug.to_string(), hash: hash_fields, drop: drop_fields, round: round_fields })
}

/// `[[operations]]`: at least one, each named once.
fn parse_operations(raw: &toml::Table) -> Result<Vec<Operation>, ContractError> {
    let listed = match raw.get("operations") {
        Some(Toml::Array(items)) if !items.is_empty() => items,
        _ => return fail("spec", "Declare at least one [[operations]] entry", "/operations"),
    };
    let mut operations: Vec<Operation> = Vec::new();
    for (index, entry) in listed.iter().enumerate() {
        let operation = parse_operation(entry, &format!("/operations/{index}"), &operations)?;
        operations.push(operation);
    }
    Ok(operations)
}

/// One `[[operations]]` entry at `location`, `before` the entries above it.
fn parse_operation(entry: &Toml, location: &str, before: &[Operation]) -> Result<Operation, ContractError> {
    let t = table(Some(entry), location)?;
    let name = string(t, "name", location, None, true)?.unwrap_or_default();
    if !is_snake(&name) {
        return fail("spec", "operation name must be snake_case", format!("{location}/name"));
    }
    if before.iter().any(|o| o.name == name) {
        return fail("spec", format!("operation {name} is declared twice"), format!("{location}/name"));
    }
    let method = string(t, "method", location, Some("GET"), false)?.unwrap_or_default().to_uppercase();
    if !METHODS.contains(&method.as_str()) {
        return fail("spec", format!("method must be one of {}", METHODS.join(", ")), format!("{location}/method"));
    }
    let path = string(t, "path", location, None, true)?.unwrap_or_default();
    if !path.starts_with('/') || path.contains('?') || path.contains('#') {
        return fail("spec", "path must start with / and carry no query", format!("{location}/path"));
    }
    let params = names(t, "params", location)?;
    let entity = string(t, "entity", location, None, false)?;
    let results = match t.get("results") {
        None => String::new(),
        Some(Toml::String(s)) => s.trim_matches('.').to_string(),
        Some(_) => return fail("spec", "results must be a dotted path string", format!("{location}/results")),
    };
    for placeholder in placeholders(&path) {
        if params.contains(&placeholder) {
            return fail("spec", format!("{placeholder} is both a path argument and a query parameter"), location);
        }
    }
    let empty = Toml::Table(toml::Table::new());
    let (drop, explode) = ingest_projection(t.get("ingest").unwrap_or(&empty), &format!("{location}/ingest"))?;
    if (!drop.is_empty() || !explode.is_empty()) && entity.is_none() {
        return fail("spec", "ingest projection needs an entity to land rows in", format!("{location}/ingest"));
    }
    Ok(Operation { name, method, path, params, entity, results, drop, explode, table: t.clone() })
}

fn ingest_projection(raw: &Toml, location: &str) -> Result<(Vec<String>, Vec<Explode>), ContractError> {
    let t = table(Some(raw), location)?;
    let drop = names(t, "drop", location)?;
    let listed = match t.get("explode") {
        None => Vec::new(),
        Some(Toml::Array(items)) => items.clone(),
        Some(_) => return fail("spec", "explode must be a list of tables", format!("{location}/explode")),
    };
    let mut explode = Vec::new();
    for (index, entry) in listed.iter().enumerate() {
        let where_ = format!("{location}/explode/{index}");
        let item = table(Some(entry), &where_)?;
        let field = string(item, "field", &where_, None, true)?.unwrap_or_default();
        let entity = string(item, "entity", &where_, None, true)?.unwrap_or_default();
        let carry = mapping(item, "carry", &where_)?;
        let take = mapping(item, "take", &where_)?;
        if carry.is_empty() && take.is_empty() {
            return fail("spec", "explode needs carry or take, or the child rows would be empty", where_);
        }
        if carry.keys().any(|k| take.contains_key(k)) {
            return fail("spec", "a child field is either carried from the parent or taken from the item", where_);
        }
        explode.push(Explode { field, entity, carry, take });
    }
    Ok((drop, explode))
}

/// Load `<world>/connector.toml`.
pub fn load_spec(world: &Path) -> Result<Spec, ContractError> {
    let path = world.join(SPEC);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return fail("spec", format!("No {SPEC} in the world; describe the connection first"), format!("/{SPEC}"));
        }
        Err(error) => return fail("spec", format!("Cannot read {SPEC}: {error}"), format!("/{SPEC}")),
    };
    match String::from_utf8(bytes) {
        Ok(text) => parse_spec(&text),
        Err(error) => fail(
            "spec",
            format!("{SPEC} is not UTF-8 text (invalid byte at offset {})", error.utf8_error().valid_up_to()),
            format!("/{SPEC}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connector_that_is_not_utf8_is_named_not_missing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SPEC), b"[connector]\nslug = \"\xff\"\n").unwrap();
        let refused = load_spec(dir.path()).unwrap_err();
        assert!(refused.message.contains("not UTF-8") && refused.message.contains("offset 20"), "{refused}");
        let missing = load_spec(&dir.path().join("nowhere")).unwrap_err();
        assert!(missing.message.starts_with("No connector.toml"), "{missing}");
    }

    #[test]
    fn parses_a_minimal_spec() {
        let spec = parse_spec("[connector]\nslug = \"acme\"\nbase_url = \"https://api.acme.test/v2/\"\n[[operations]]\nname = \"list\"\npath = \"/records/{id}\"\nparams = [\"q\"]\n").unwrap();
        assert_eq!(spec.base_url, "https://api.acme.test/v2");
        assert_eq!(spec.scheme, "none");
        assert_eq!(spec.operations[0].placeholders(), vec!["id".to_string()]);
        assert_eq!(base_path(&spec.base_url), "/v2");
    }

    #[test]
    fn refuses_like_the_original() {
        let err = parse_spec("[connector]\nslug = \"Acme\"\nbase_url = \"https://x\"\n").unwrap_err();
        assert_eq!((err.code.as_str(), err.schema_path.as_str()), ("spec", "/connector/slug"));
        let err = parse_spec("[connector]\nslug = \"acme\"\nbase_url = \"https://x?q=1\"\n").unwrap_err();
        assert_eq!(err.schema_path, "/connector/base_url");
        let err = parse_spec("[connector]\nslug = \"acme\"\nbase_url = \"https://x\"\n").unwrap_err();
        assert_eq!(err.message, "Declare at least one [[operations]] entry");
        let err = parse_spec("[connector]\nslug = \"acme\"\nbase_url = \"https://x\"\n[auth]\nscheme = \"header\"\nsecret_env = \"K\"\n[[operations]]\nname = \"a\"\npath = \"/a\"\n").unwrap_err();
        assert_eq!(err.message, "Missing name");
    }

    #[test]
    fn refuses_inline_secrets_without_echoing_them() {
        let spec = |auth: &str, base: &str| {
            format!("[connector]\nslug = \"acme\"\nbase_url = \"{base}\"\n[auth]\n{auth}\n[[operations]]\nname = \"a\"\npath = \"/a\"\n")
        };
        let bearer = "scheme = \"bearer\"\nsecret_env = \"ACME_TOKEN\"";
        assert!(parse_spec(&spec(bearer, "https://x")).is_ok());
        assert!(
            parse_spec(&spec(&format!("{bearer}\nheaders = {{ \"X-App\" = \"ACME_APP_TOKEN\" }}\ncomment = \"ok\""), "https://x")).is_ok()
        );
        for (auth, base, path) in [
            (format!("{bearer}\ntoken = \"s3cr3t-VALUE\""), "https://x", "/auth/token"),
            (format!("{bearer}\napi_key = \"s3cr3t-VALUE\""), "https://x", "/auth/api_key"),
            (format!("{bearer}\nPassword = \"s3cr3t-VALUE\""), "https://x", "/auth/Password"),
            (format!("{bearer}\nclient_secret = \"s3cr3t-VALUE\""), "https://x", "/auth/client_secret"),
            ("scheme = \"bearer\"\nsecret_env = \"s3cr3t-VALUE\"".into(), "https://x", "/auth/secret_env"),
            ("scheme = \"bearer\"\nsecret_env = \"sk_live_s3cr3tVALUE\"".into(), "https://x", "/auth/secret_env"),
            ("scheme = \"bearer\"\nsecret_env = \"aB3dE5gH7jK9mN1pQ3\"".into(), "https://x", "/auth/secret_env"),
            (format!("{bearer}\nheaders = {{ \"X-App\" = \"s3cr3t-VALUE\" }}"), "https://x", "/auth/headers/X-App"),
            (bearer.into(), "https://me:s3cr3t-VALUE@x", "/connector/base_url"),
        ] {
            let err = parse_spec(&spec(&auth, base)).unwrap_err();
            assert_eq!((err.code.as_str(), err.schema_path.as_str()), ("spec", path), "{auth}");
            assert!(!err.message.contains("s3cr3t") && !err.message.contains("aB3dE5"), "{}", err.message);
        }
        let err = parse_spec(&spec(&format!("{bearer}\ntoken = \"s3cr3t-VALUE\""), "https://x")).unwrap_err();
        assert!(err.message.starts_with("auth.token holds a credential inline"), "{}", err.message);
    }
}

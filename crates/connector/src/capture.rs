//! `connector capture`: call the live connection and record every page.
//!
//! The credential comes from the environment variable `connector.toml` names (or,
//! for oauth2, an access token minted from the client credentials) and never reaches
//! disk: the recorded URL is built without it and the token exchange is not recorded.
//! Bodies are redacted before they are written; non-2xx replies are recorded too
//! (the vendor's error bodies are evidence) and end the run. Where the calls may go is
//! the caller's [`Egress`]: anywhere for a capture on the author's machine, the
//! operator's allow-list (public addresses, pinned, no cross-host redirects, GET only,
//! and POST to the token endpoint) for the hub's remote captures.

use crate::egress::{Egress, EgressError, Gate};
use crate::redact::redact;
use crate::spec::{load_spec, Operation, Spec, DEFAULT_TOKEN_PATH};
use crate::url::{parse_qsl, quote, split, urlencode};
use base64::Engine as _;
use gateway_world::error::{fail, ContractError};
use gateway_world::files::sha256_hex;
use gateway_world::json::{dumps, object, parse, DumpOptions, Map, Value};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where captures live inside a world.
pub const CAPTURES: &str = "captures";
/// The capture manifest's file name inside `captures/`.
pub const MANIFEST: &str = "manifest.json";
/// The largest vendor body recorded.
pub const MAX_BODY: usize = 8 * 1024 * 1024;
const PAGING_NAMES: [&str; 5] = ["limit", "offset", "page", "page_size", "cursor"];
const RECORDED_HEADERS: [&str; 5] = ["content-type", "retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"];

/// What one capture run is asked to do.
#[derive(Debug, Clone, Default)]
pub struct CaptureRequest {
    /// Operation name from connector.toml.
    pub op: String,
    /// Path arguments, in the order given (a repeated name keeps its first place).
    pub args: Vec<(String, String)>,
    /// Query parameters, likewise.
    pub params: Vec<(String, String)>,
    /// Override of `[capture].max_pages`.
    pub max_pages: Option<i64>,
}

/// A vendor's answer, as capture needs it.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Set `name` in an ordered pair list the way a Python dict assignment does.
pub fn set_pair(pairs: &mut Vec<(String, String)>, name: &str, value: &str) {
    match pairs.iter_mut().find(|(k, _)| k == name) {
        Some(slot) => slot.1 = value.to_string(),
        None => pairs.push((name.to_string(), value.to_string())),
    }
}

/// Where a capture reads the values `connector.toml` names by environment variable:
/// the process environment locally, the environment's stored secrets on a hub.
pub type Secrets<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, as a local capture reads it (an empty value is unset).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn secret_value(spec: &Spec, env: Secrets<'_>) -> Result<String, ContractError> {
    let name = spec.secret_env.clone().unwrap_or_default();
    match env(&name) {
        Some(value) => Ok(value),
        None => fail("secret", format!("Set {name} to the connection's credential"), "/auth/secret_env"),
    }
}

fn refused(error: EgressError) -> ContractError {
    match error {
        EgressError::Client(why) => ContractError::new("transport", format!("Could not start the HTTP client: {why}"), "/capture"),
        other => ContractError::new("egress", other.to_string(), "/capture"),
    }
}

/// The URLs a capture of `spec` calls before any page names another: its base URL,
/// and for oauth2 its token endpoint.
pub fn origins(spec: &Spec) -> Vec<String> {
    let mut urls = vec![spec.base_url.clone()];
    if spec.scheme == "oauth2" {
        urls.push(token_endpoint(spec));
    }
    urls
}

/// The HTTP client capture uses (rustls, the spec's timeout), made by `egress`.
fn client(spec: &Spec, egress: &Egress) -> Result<Gate, ContractError> {
    egress.gate(&origins(spec), Duration::from_secs_f64(spec.timeout_seconds)).map_err(refused)
}

fn send(request: reqwest::blocking::RequestBuilder) -> Result<Reply, ContractError> {
    let response = request.send().map_err(|error| {
        let mut text = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(inner) = source {
            text = format!("{text}: {inner}");
            source = inner.source();
        }
        ContractError::new("transport", format!("Could not reach the connection: {text}"), "/capture")
    })?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let mut body = Vec::new();
    response
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| ContractError::new("transport", format!("Could not reach the connection: {e}"), "/capture"))?;
    Ok(Reply { status, headers, body })
}

fn header<'a>(reply: &'a Reply, name: &str) -> Option<&'a str> {
    let name = name.to_ascii_lowercase();
    reply.headers.iter().rev().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
}

/// Where an oauth2 connection exchanges its client credentials.
pub fn token_endpoint(spec: &Spec) -> String {
    let url = spec.token_url.clone().unwrap_or_else(|| DEFAULT_TOKEN_PATH.to_string());
    if url.starts_with("https://") || url.starts_with("http://") {
        url
    } else {
        format!("{}{url}", spec.base_url)
    }
}

/// Exchange the client credentials for an access token (RFC 6749 §4.4). Nothing about
/// the exchange is recorded.
fn mint_token(spec: &Spec, gate: &Gate, env: Secrets<'_>) -> Result<String, ContractError> {
    let id_env = spec.client_id_env.clone().unwrap_or_default();
    let Some(client_id) = env(&id_env) else {
        return fail("secret", format!("Set {id_env} to the connection's client id"), "/auth/client_id_env");
    };
    let client_secret = secret_value(spec, env)?;
    let mut form = vec![
        ("grant_type".to_string(), "client_credentials".to_string()),
        ("client_id".to_string(), client_id),
        ("client_secret".to_string(), client_secret),
    ];
    if let Some(scope) = &spec.scope {
        form.push(("scope".into(), scope.clone()));
    }
    let endpoint = token_endpoint(spec);
    gate.check_request("POST", &endpoint, true).map_err(refused)?;
    let request = gate
        .http
        .post(endpoint)
        .header("Accept", "application/json")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("User-Agent", format!("gateway-connector/{}", spec.slug))
        .body(urlencode(&form));
    let reply = send(request)?;
    let body = std::str::from_utf8(&reply.body).ok().and_then(|t| parse(t).ok()).map(|p| p.value);
    let token = body.as_ref().and_then(|b| b.get("access_token")).and_then(Value::as_str).filter(|t| !t.is_empty());
    match token {
        Some(token) if (200..300).contains(&reply.status) => Ok(token.to_string()),
        _ => fail("secret", format!("Token endpoint answered {} without an access_token", reply.status), "/auth/token_url"),
    }
}

/// The value requests carry: the credential, or for oauth2 a minted access token.
fn credential(spec: &Spec, gate: &Gate, env: Secrets<'_>) -> Result<Option<String>, ContractError> {
    match spec.scheme.as_str() {
        "none" => Ok(None),
        "oauth2" => mint_token(spec, gate, env).map(Some),
        _ => secret_value(spec, env).map(Some),
    }
}

/// A request ready to send, and the URL to record (which never carries the secret).
#[derive(Debug)]
pub struct Built {
    /// Method.
    pub method: String,
    /// The URL sent (with a query-scheme secret).
    pub url: String,
    /// Headers sent (with a header-scheme secret).
    pub headers: Vec<(String, String)>,
    /// The URL recorded.
    pub recorded: String,
}

/// Build one page's request, with the original's refusals of arguments and parameters.
pub fn build_request(
    spec: &Spec,
    operation: &Operation,
    args: &[(String, String)],
    params: &[(String, String)],
    secret: Option<&str>,
    env: Secrets<'_>,
) -> Result<Built, ContractError> {
    let placeholders = operation.placeholders();
    let missing: Vec<&str> = placeholders.iter().filter(|p| !args.iter().any(|(k, _)| k == *p)).map(String::as_str).collect();
    if !missing.is_empty() {
        return fail("capture", format!("Missing path argument(s): {}", missing.join(", ")), "/capture/args");
    }
    let extra: Vec<&str> = args.iter().filter(|(k, _)| !placeholders.contains(k)).map(|(k, _)| k.as_str()).collect();
    if !extra.is_empty() {
        return fail("capture", format!("Unknown path argument(s): {}", extra.join(", ")), "/capture/args");
    }
    let mut unknown: Vec<&str> = params
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !operation.params.iter().any(|p| p == k) && Some(*k) != spec.cursor_param.as_deref())
        .collect();
    if !unknown.is_empty() && spec.cursor_field.is_some() && unknown.iter().any(|u| !u.is_empty()) {
        // A next-page URL may carry the vendor's own paging parameters.
        unknown.retain(|name| !PAGING_NAMES.contains(name));
    }
    if !unknown.is_empty() {
        return fail("capture", format!("Operation {} takes no parameter(s): {}", operation.name, unknown.join(", ")), "/capture/params");
    }
    let mut path = String::new();
    let mut rest = operation.path.as_str();
    for name in &placeholders {
        let token = format!("{{{name}}}");
        if let Some(at) = rest.find(&token) {
            path.push_str(&rest[..at]);
            let value = args.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default();
            path.push_str(&quote(value));
            rest = &rest[at + token.len()..];
        }
    }
    path.push_str(rest);
    let mut query: Vec<(String, String)> = params.to_vec();
    let with_query = |query: &[(String, String)]| {
        let base = format!("{}{path}", spec.base_url);
        if query.is_empty() {
            base
        } else {
            format!("{base}?{}", urlencode(query))
        }
    };
    let recorded = with_query(&query);
    let mut headers = vec![
        ("Accept".to_string(), "application/json".to_string()),
        ("User-Agent".to_string(), format!("gateway-connector/{}", spec.slug)),
    ];
    for (name, variable) in &spec.extra_headers {
        match env(variable) {
            Some(value) => headers.push((name.clone(), value)),
            None => return fail("secret", format!("Set {variable} for the {name} header"), "/auth/headers"),
        }
    }
    let secret = secret.unwrap_or_default();
    match spec.scheme.as_str() {
        "header" => headers.push((spec.auth_name.clone().unwrap_or_default(), secret.to_string())),
        "bearer" | "oauth2" => headers.push(("Authorization".into(), format!("Bearer {secret}"))),
        "basic" => headers.push(("Authorization".into(), format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(secret)))),
        "query" => query.push((spec.auth_name.clone().unwrap_or_default(), secret.to_string())),
        _ => {}
    }
    Ok(Built { method: operation.method.clone(), url: with_query(&query), headers, recorded })
}

/// Follow a body field to the next cursor (dotted path).
fn dig<'a>(body: &'a Value, path: &str) -> Option<&'a Value> {
    let mut here = body;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        here = here.as_object()?.get(part)?;
    }
    Some(here)
}

fn pairs_object(pairs: &[(String, String)]) -> Value {
    Value::Object(pairs.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect())
}

/// `now` as (file stamp `YYYYmmddTHHMMSSffffffZ`, `captured_at` `YYYY-mm-ddTHH:MM:SS+00:00`).
fn stamps() -> (String, String) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let text = gateway_world::snapshot::format_utc(now.as_secs() as i64);
    let stamp = format!("{}{:06}Z", text.trim_end_matches('Z').replace(['-', ':'], ""), now.subsec_micros());
    (stamp, format!("{}+00:00", text.trim_end_matches('Z')))
}

/// Refuse a `captures/` tree that leads out of the world (a symlinked directory).
fn inside_captures(root: &Path, operation: &str) -> Result<PathBuf, ContractError> {
    let captures = root.join(CAPTURES);
    for path in [&captures, &captures.join(operation)] {
        if gateway_world::files::is_symlink(path) {
            return fail("capture", format!("{} is a symbolic link; captures stay inside the world", path.display()), "/capture");
        }
    }
    Ok(captures.join(operation))
}

fn io(error: std::io::Error, path: &Path) -> ContractError {
    ContractError::new("io", format!("{}: {error}", path.display()), "/capture")
}

/// Run one operation against the live connection and record every page; returns the
/// files written. `progress` receives one line per page (for stderr). Credentials come
/// from the process environment; the calls may go anywhere ([`Egress::Any`]).
pub fn capture(world: &Path, request: &CaptureRequest, progress: &mut dyn FnMut(&str)) -> Result<Vec<PathBuf>, ContractError> {
    capture_with(world, request, &process_env, &Egress::Any, progress)
}

/// [`capture`] with the credentials read through `env` (a hub reads the environment's
/// stored secrets under the variable names `connector.toml` gives) and the calls held
/// to `egress`.
pub fn capture_with(
    world: &Path,
    request: &CaptureRequest,
    env: Secrets<'_>,
    egress: &Egress,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<PathBuf>, ContractError> {
    let spec = load_spec(world)?;
    let Some(operation) = spec.operation(&request.op) else {
        let mut names: Vec<&str> = spec.operations.iter().map(|o| o.name.as_str()).collect();
        names.sort_unstable();
        return fail("operation", format!("Unknown operation; choose one of {}", names.join(", ")), "/capture/op");
    };
    let gate = client(&spec, egress)?;
    let secret = credential(&spec, &gate, env)?;
    let pages = request.max_pages.unwrap_or(spec.max_pages);
    if pages < 1 {
        return fail("capture", "max_pages must be at least 1", "/capture/max_pages");
    }
    let directory = inside_captures(world, &operation.name)?;
    let pause = Duration::from_secs_f64(60.0 / spec.requests_per_minute.max(1) as f64);
    let base_netloc = split(&spec.base_url).1;
    let mut written = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0..pages {
        if page > 0 {
            std::thread::sleep(pause);
        }
        let mut page_params = request.params.clone();
        match &cursor {
            Some(next) if next.starts_with("https://") || next.starts_with("http://") => {
                let (_, netloc, _, query) = split(next);
                if netloc != base_netloc {
                    return fail("capture", format!("The next-page URL points at {netloc}, not the connection"), "/capture");
                }
                let auth_name = spec.auth_name.clone().unwrap_or_default();
                page_params = Vec::new();
                for (k, v) in parse_qsl(&query) {
                    if k != auth_name {
                        set_pair(&mut page_params, &k, &v);
                    }
                }
            }
            Some(next) => set_pair(&mut page_params, spec.cursor_param.as_deref().unwrap_or_default(), next),
            None => {}
        }
        let built = build_request(&spec, operation, &request.args, &page_params, secret.as_deref(), env)?;
        gate.check_request(&built.method, &built.url, false).map_err(refused)?;
        let method = reqwest::Method::from_bytes(built.method.as_bytes()).unwrap_or(reqwest::Method::GET);
        let mut outgoing = gate.http.request(method, &built.url);
        for (name, value) in &built.headers {
            outgoing = outgoing.header(name.as_str(), value.as_str());
        }
        let reply = send(outgoing)?;
        if reply.body.len() > MAX_BODY {
            return fail("capture", "Response exceeds 8 MiB; narrow the request", "/capture");
        }
        let parsed = if reply.body.is_empty() {
            Some(Value::Null)
        } else {
            std::str::from_utf8(&reply.body).ok().and_then(|t| parse(t).ok()).map(|p| p.value)
        };
        let (body, raw_text) = match parsed {
            Some(value) => (value, None),
            None => (Value::Null, Some(String::from_utf8_lossy(&reply.body).chars().take(4096).collect::<String>())),
        };
        let (stamp, captured_at) = stamps();
        let mut recorded_headers = Map::default();
        let cursor_header = spec.cursor_header.as_ref().map(|h| h.to_ascii_lowercase());
        for (name, value) in &reply.headers {
            if RECORDED_HEADERS.contains(&name.as_str()) || cursor_header.as_deref() == Some(name.as_str()) {
                recorded_headers.insert(name.clone(), Value::str(value));
            }
        }
        let mut record = vec![
            ("connector", Value::str(&spec.slug)),
            ("operation", Value::str(&operation.name)),
            ("captured_at", Value::str(&captured_at)),
            (
                "request",
                object([
                    ("method", Value::str(&operation.method)),
                    ("url", Value::str(&built.recorded)),
                    ("args", pairs_object(&request.args)),
                    ("params", pairs_object(&page_params)),
                ]),
            ),
            ("status", Value::Int(i64::from(reply.status))),
            ("headers", Value::Object(recorded_headers)),
            ("body", redact(&body, &spec)),
        ];
        if let Some(text) = raw_text {
            record.push(("text", Value::Str(text)));
        }
        record.push(("page", Value::Int(page + 1)));
        let record = object(record);
        let options = DumpOptions { sort_keys: true, ensure_ascii: false, indent: Some(1), compact: false };
        let encoded = dumps(&record, options).into_bytes();
        let path = directory.join(format!("{stamp}-p{}.json", page + 1));
        std::fs::create_dir_all(&directory).map_err(|e| io(e, &directory))?;
        std::fs::write(&path, &encoded).map_err(|e| io(e, &path))?;
        append_manifest(world, &path, &operation.name, reply.status, &captured_at, &sha256_hex(&encoded))?;
        progress(&format!("{} {} -> {} (page {}, {} bytes)", operation.method, built.recorded, reply.status, page + 1, reply.body.len()));
        written.push(path);
        if !(200..300).contains(&reply.status) || (spec.cursor_field.is_none() && spec.cursor_header.is_none()) {
            break;
        }
        cursor = match (&spec.cursor_header, &spec.cursor_field) {
            (Some(name), _) => header(&reply, name).map(str::to_string),
            (None, Some(field)) => dig(&body, field).and_then(Value::as_str).map(str::to_string),
            _ => None,
        };
        if cursor.as_deref().is_none_or(str::is_empty) {
            break;
        }
    }
    Ok(written)
}

fn append_manifest(root: &Path, path: &Path, operation: &str, status: u16, captured_at: &str, sha256: &str) -> Result<(), ContractError> {
    let manifest = root.join(CAPTURES).join(MANIFEST);
    let mut entries = match std::fs::read_to_string(&manifest) {
        Ok(text) => match parse(&text).map(|p| p.value) {
            Ok(Value::Array(items)) => items,
            _ => return fail("capture", format!("{CAPTURES}/{MANIFEST} is not a JSON list"), format!("/{CAPTURES}")),
        },
        Err(_) => Vec::new(),
    };
    let relative = path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/");
    entries.push(object([
        ("file", Value::Str(relative)),
        ("operation", Value::str(operation)),
        ("status", Value::Int(i64::from(status))),
        ("captured_at", Value::str(captured_at)),
        ("sha256", Value::str(sha256)),
    ]));
    let options = DumpOptions { sort_keys: false, ensure_ascii: true, indent: Some(1), compact: false };
    let text = format!("{}\n", dumps(&Value::Array(entries), options));
    std::fs::write(&manifest, text).map_err(|e| io(e, &manifest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn the_recorded_url_never_carries_the_secret() {
        let spec = parse_spec(
            "[connector]\nslug = \"acme\"\nbase_url = \"https://api.acme.test/v1\"\n[auth]\nscheme = \"query\"\nname = \"key\"\nsecret_env = \"K\"\n[[operations]]\nname = \"get\"\npath = \"/things/{id}\"\nparams = [\"q\"]\n",
        )
        .unwrap();
        let op = &spec.operations[0];
        let built = build_request(&spec, op, &[("id".into(), "a/b c".into())], &[("q".into(), "x y".into())], Some("s3cret"), &process_env)
            .unwrap();
        assert_eq!(built.recorded, "https://api.acme.test/v1/things/a%2Fb%20c?q=x+y");
        assert_eq!(built.url, "https://api.acme.test/v1/things/a%2Fb%20c?q=x+y&key=s3cret");
        let err = build_request(&spec, op, &[], &[], None, &process_env).unwrap_err();
        assert_eq!(err.message, "Missing path argument(s): id");
        let err = build_request(&spec, op, &[("id".into(), "1".into())], &[("z".into(), "1".into())], None, &process_env).unwrap_err();
        assert_eq!((err.message.as_str(), err.schema_path.as_str()), ("Operation get takes no parameter(s): z", "/capture/params"));
    }

    #[test]
    fn stamps_have_the_original_shape() {
        let (stamp, at) = stamps();
        assert_eq!(stamp.len(), "20260101T000000000000Z".len());
        assert!(at.ends_with("+00:00") && at.len() == "2026-01-01T00:00:00+00:00".len());
    }
}

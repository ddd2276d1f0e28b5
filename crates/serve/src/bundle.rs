//! `gateway worlds schema api-bundle`: the api-kind bundle the platform hosts.
//!
//! The bundle root is what the original writes, byte for byte:
//! `gateway-api-world.toml`, `openapi.json` (`json.dumps(indent=1)` + newline),
//! `seed/base.json` (the initial batch's inserts by entity, same serialization)
//! and `scenarios/` (every authored scenario copied, plus a generated `default`
//! unless the world authors one). `server/` differs by design: the original
//! copies its Python package and a `main.py` there; this one copies the world
//! (`server/world/`, as the original does), a `Dockerfile` that runs
//! `gateway worlds serve` on it, a short README and — for `schema api-bundle` —
//! this binary (`server/gateway`). The bundle `bench push` uploads
//! ([`ServerPayload::Image`]) leaves the binary out: its Dockerfile starts from the
//! gateway image of this version instead, so a push does not carry 40 MB (380 MB
//! for a debug build) of executable, and the content hash moves with the world and
//! the gateway version, not with every build.
//!
//! Building it compiles the world in place first (artifacts and snapshots, as the
//! original's `compile_bundle` does), checks it, and imports the handlers module
//! once so a handler the module lacks fails here rather than in the container.
//! The bundle is assembled in a staging directory beside `--out` and moved into
//! place at the end, so a refusal never leaves a half-written bundle behind.

use crate::handlers::{Worker, WorkerError};
use crate::settings::{load_api_settings, ApiSettings, OperationSettings};
use gateway_connector::spec::{load_spec, Spec, DEFAULT_TOKEN_PATH};
use gateway_world::error::{ContractError, Error as WorldError};
use gateway_world::files::read_json;
use gateway_world::json::{dumps, object, python_repr, python_str, DumpOptions, Map, Value};
use gateway_world::snapshot::{display_path, scenario_dirs};
use std::fmt;
use std::path::{Path, PathBuf};

/// The port the bundle's server listens on.
pub const PORT: u16 = 8080;
/// The runner's health route.
pub const HEALTH: &str = "/healthz";
/// The runner's reset route.
pub const RESET: &str = "/__world/reset";
/// The runner's seed route.
pub const SEED: &str = "/__world/seed";
/// The runner's state route.
pub const STATE: &str = "/__world/state";

/// `json.dumps(x, indent=1)`: how the original writes `openapi.json` and `seed/base.json`.
pub const BUNDLE_JSON: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: true, indent: Some(1), compact: false };

/// Names the original leaves out of `server/world` (`shutil.ignore_patterns`).
const WORLD_IGNORED: [&str; 3] = ["captures", "__pycache__", ".git"];

/// Why a bundle could not be built. `Display` is the last line the original's
/// traceback ends with (`ContractError: spec at /connector.toml: …`).
#[derive(Debug)]
pub enum BundleError {
    /// A refusal (the original's `ContractError`).
    Contract(ContractError),
    /// Any other Python exception the original would raise, by class name
    /// (`FileNotFoundError`, `NotADirectoryError`, `PermissionError`, …).
    Python {
        /// The exception class.
        exception: String,
        /// `str(exception)`.
        message: String,
    },
    /// Importing the world's handlers module raised: the Python traceback, whose
    /// last line is the exception the original would have propagated.
    Import(String),
    /// `python3` could not be started to import the handlers module.
    Worker(String),
}

impl BundleError {
    /// The refusal's detail object, for a contract error.
    pub fn contract(&self) -> Option<&ContractError> {
        match self {
            BundleError::Contract(error) => Some(error),
            _ => None,
        }
    }
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::Contract(error) => write!(f, "ContractError: {error}"),
            BundleError::Python { exception, message } => write!(f, "{exception}: {message}"),
            BundleError::Import(traceback) => write!(f, "{}", traceback.trim_end()),
            BundleError::Worker(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for BundleError {}

impl From<ContractError> for BundleError {
    fn from(error: ContractError) -> Self {
        BundleError::Contract(error)
    }
}

impl From<WorldError> for BundleError {
    fn from(error: WorldError) -> Self {
        match error {
            WorldError::Contract(error) => BundleError::Contract(error),
            WorldError::Io { message } => {
                let errno = message.strip_prefix("[Errno ").and_then(|rest| rest.split(']').next()).and_then(|n| n.parse().ok());
                BundleError::Python { exception: exception_class(errno).into(), message }
            }
            WorldError::Sqlite(error) => BundleError::Python { exception: "sqlite3.DatabaseError".into(), message: error.to_string() },
        }
    }
}

/// Python's `OSError` subclass for an errno.
fn exception_class(errno: Option<i32>) -> &'static str {
    match errno {
        Some(2) => "FileNotFoundError",
        Some(1 | 13) => "PermissionError",
        Some(17) => "FileExistsError",
        Some(20) => "NotADirectoryError",
        Some(21) => "IsADirectoryError",
        _ => "OSError",
    }
}

/// An I/O failure on `path`, worded as Python words it (`[Errno 2] No such file or directory: 'x'`).
fn os_error(error: &std::io::Error, path: &Path) -> BundleError {
    let errno = error.raw_os_error();
    let text = error.to_string();
    let text = match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    };
    let shown = python_repr(&Value::str(display_path(path)));
    let message = match errno {
        Some(n) => format!("[Errno {n}] {text}: {shown}"),
        None => format!("{text}: {shown}"),
    };
    BundleError::Python { exception: exception_class(errno).into(), message }
}

fn io<T>(result: std::io::Result<T>, path: &Path) -> Result<T, BundleError> {
    result.map_err(|error| os_error(&error, path))
}

// ------------------------------------------------------------------ openapi.json

pub(crate) fn string_schema() -> Value {
    object([("type", Value::str("string"))])
}

/// A required path parameter typed only as a string (the bundle document's, and the
/// served document's where it knows no more).
pub(crate) fn path_parameter(name: String) -> Value {
    object([("name", Value::Str(name)), ("in", Value::str("path")), ("required", Value::Bool(true)), ("schema", string_schema())])
}

/// The world's API as an OpenAPI 3.1 document, exactly as the original's
/// `openapi_document`: one operation per path and method (a later operation on
/// the same path and method is kept under `x-gateway-variants`), `x-gateway-*`
/// extensions naming the entity and action, and one security scheme for the
/// connector's auth.
pub fn openapi_document(spec: &Spec, contract_id: &str, settings: Option<&ApiSettings>) -> Value {
    let auth_name = || spec.auth_name.as_deref().map_or(Value::Null, Value::str);
    let security_scheme = match spec.scheme.as_str() {
        scheme @ ("header" | "query") => Some(object([("type", Value::str("apiKey")), ("in", Value::str(scheme)), ("name", auth_name())])),
        "bearer" => Some(object([("type", Value::str("http")), ("scheme", Value::str("bearer"))])),
        "basic" => Some(object([("type", Value::str("http")), ("scheme", Value::str("basic"))])),
        "oauth2" => {
            let token_url = settings.and_then(|s| s.token_path.as_deref()).filter(|t| !t.is_empty()).unwrap_or(DEFAULT_TOKEN_PATH);
            let scope = spec.scope.as_deref().filter(|s| !s.is_empty()).unwrap_or("api");
            let flow = object([("tokenUrl", Value::str(token_url)), ("scopes", object([(scope, Value::str("API access"))]))]);
            Some(object([("type", Value::str("oauth2")), ("flows", object([("clientCredentials", flow)]))]))
        }
        _ => None,
    };
    let mut paths = Map::default();
    for operation in &spec.operations {
        let op = settings.map_or_else(OperationSettings::default, |s| s.for_operation(&operation.name).clone());
        let mut params: Vec<Value> = operation.placeholders().into_iter().map(path_parameter).collect();
        params.extend(operation.params.iter().map(|name| {
            object([("name", Value::str(name)), ("in", Value::str("query")), ("required", Value::Bool(false)), ("schema", string_schema())])
        }));
        let mut entry = Map::default();
        entry.insert("operationId".into(), Value::str(&operation.name));
        entry.insert("parameters".into(), Value::Array(params));
        if let Some(entity) = &operation.entity {
            entry.insert("x-gateway-entity".into(), Value::str(entity));
        }
        entry.insert("x-gateway-action".into(), Value::str(&op.action));
        let mut responses = Map::default();
        responses.insert(op.status.to_string(), object([("description", Value::str("OK"))]));
        responses.insert("401".into(), object([("description", Value::str("Unauthorized"))]));
        responses.insert("404".into(), object([("description", Value::str("Not found"))]));
        entry.insert("responses".into(), Value::Object(responses));
        if security_scheme.is_some() {
            entry.insert("security".into(), Value::Array(vec![object([("vendor", Value::Array(Vec::new()))])]));
        }
        let writes_body = matches!(op.action.as_str(), "create" | "update")
            || (op.action == "handler" && matches!(operation.method.as_str(), "POST" | "PUT" | "PATCH"));
        if writes_body {
            let content = object([("application/json", object([("schema", object([("type", Value::str("object"))]))]))]);
            entry.insert("requestBody".into(), object([("content", content)]));
        }
        let methods = match paths.entry(operation.path.clone()).or_insert_with(|| Value::Object(Map::default())) {
            Value::Object(methods) => methods,
            _ => unreachable!("paths hold objects"),
        };
        let method = operation.method.to_lowercase();
        match methods.get_mut(&method) {
            Some(Value::Object(existing)) => {
                // OpenAPI keys one operation per path+method; a vendor that tells lookups apart
                // by query parameter keeps every one of them here rather than losing all but the first.
                let variant: Map = entry
                    .into_iter()
                    .filter(|(k, _)| matches!(k.as_str(), "operationId" | "parameters" | "x-gateway-entity" | "x-gateway-action"))
                    .collect();
                match existing.entry("x-gateway-variants".to_string()).or_insert_with(|| Value::Array(Vec::new())) {
                    Value::Array(variants) => variants.push(Value::Object(variant)),
                    _ => unreachable!("variants are a list"),
                }
            }
            _ => {
                methods.insert(method, Value::Object(entry));
            }
        }
    }
    let mut document = Map::default();
    document.insert("openapi".into(), Value::str("3.1.0"));
    document.insert(
        "info".into(),
        object([("title", Value::str(&spec.slug)), ("version", Value::str("1.0.0")), ("x-gateway-domain", Value::str(contract_id))]),
    );
    document.insert("servers".into(), Value::Array(vec![object([("url", Value::str(&spec.base_url))])]));
    document.insert("paths".into(), Value::Object(paths));
    if let Some(scheme) = security_scheme {
        document.insert("components".into(), object([("securitySchemes", object([("vendor", scheme)]))]));
    }
    Value::Object(document)
}

// ------------------------------------------------------------------ seed and scenarios

fn no_get(value: &Value) -> BundleError {
    BundleError::Python {
        exception: "AttributeError".into(),
        message: format!("'{}' object has no attribute 'get'", value.python_type_name()),
    }
}

/// `seed/base.json`: the initial batch's inserted rows by entity (the original's `base_seed`).
pub fn base_seed(initial: &Value) -> Result<Value, BundleError> {
    let Value::Object(initial) = initial else { return Err(no_get(initial)) };
    let empty = Vec::new();
    let mutations = match initial.get("mutations") {
        None => &empty,
        Some(Value::Array(items)) => items,
        Some(Value::Object(map)) if map.is_empty() => &empty,
        Some(other) => {
            return Err(BundleError::Python {
                exception: "TypeError".into(),
                message: format!("'{}' object is not iterable", other.python_type_name()),
            })
        }
    };
    let mut seed = Map::default();
    for mutation in mutations {
        let Value::Object(mutation) = mutation else { return Err(no_get(mutation)) };
        if !matches!(mutation.get("op"), Some(Value::Str(op)) if op == "insert") {
            continue;
        }
        let member = |key: &str| {
            mutation.get(key).cloned().ok_or_else(|| BundleError::Python { exception: "KeyError".into(), message: format!("'{key}'") })
        };
        let entity = member("entity")?;
        let value = member("value")?;
        let key = match &entity {
            Value::Str(name) => name.clone(),
            other => {
                // A dict key must be hashable; the original would fail on a list or dict here.
                return Err(BundleError::Python {
                    exception: "TypeError".into(),
                    message: format!("unhashable type: '{}'", other.python_type_name()),
                });
            }
        };
        match seed.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
            Value::Array(rows) => rows.push(value),
            _ => unreachable!("seed holds lists"),
        }
    }
    Ok(Value::Object(seed))
}

/// The bytes of `seed/base.json` for a world (`json.dumps(indent=1)` + newline).
pub fn base_seed_bytes(world: &Path) -> Result<Vec<u8>, BundleError> {
    let initial = read_json(&world.join("data/initial.json"))?;
    Ok(format!("{}\n", dumps(&base_seed(&initial)?, BUNDLE_JSON)).into_bytes())
}

/// The bytes of `openapi.json` (`json.dumps(indent=1)` + newline).
pub fn openapi_bytes(spec: &Spec, contract_id: &str, settings: Option<&ApiSettings>) -> Vec<u8> {
    format!("{}\n", dumps(&openapi_document(spec, contract_id, settings), BUNDLE_JSON)).into_bytes()
}

/// `gateway-api-world.toml`.
pub fn manifest_text(package_id: &str, spec: &Spec, settings: &ApiSettings) -> String {
    let mut lines = vec![
        "# Generated from the world under server/world, which is the authority.".to_string(),
        "[service]".into(),
        format!("name = \"{package_id}\""),
        format!("emulates = \"{}\"", spec.slug),
        String::new(),
        "[server]".into(),
        format!("port = {PORT}"),
        format!("healthcheck = \"{HEALTH}\""),
        String::new(),
        "[admin]".into(),
        format!("reset = \"{RESET}\""),
        format!("seed = \"{SEED}\""),
        format!("state = \"{STATE}\""),
        String::new(),
    ];
    if let Some(ui) = &settings.ui {
        // The built ui travels inside the copied world; the host serves it from there.
        lines.extend([
            "[ui]".to_string(),
            format!("static = \"server/world/{}\"", ui.static_dir),
            format!("entry = \"{}\"", ui.entry),
            format!("api_path = \"{}\"", ui.api_path),
            String::new(),
        ]);
    }
    lines.join("\n")
}

fn default_instruction(spec: &Spec) -> String {
    format!("The {} world serving the vendor's API, seeded with its captured state. Point the provider client here.\n", spec.slug)
}

// ------------------------------------------------------------------ handlers

/// The original's `load_handlers` check: import the world's handlers module once;
/// the `[api].before` gate and every `action = "handler"` function must exist.
pub fn check_handlers(spec: &Spec, settings: &ApiSettings) -> Result<(), BundleError> {
    let Some(handlers) = &settings.handlers else { return Ok(()) };
    let mut functions: Vec<String> = settings.before.iter().cloned().collect();
    let handled: Vec<(&str, String)> = spec
        .operations
        .iter()
        .filter_map(|o| settings.operations.get(&o.name).and_then(|s| s.handler.clone()).map(|h| (o.name.as_str(), h)))
        .collect();
    functions.extend(handled.iter().map(|(_, h)| h.clone()));
    let file = handlers.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // The author's own code, checked on the author's machine: confined where it can be.
    match Worker::start(handlers, &functions, &crate::handlers::WorkerOptions::local()) {
        Ok(worker) => {
            drop(worker);
            Ok(())
        }
        Err(WorkerError::Missing(name)) => {
            if settings.before.as_deref() == Some(name.as_str()) {
                return Err(ContractError::new("handlers", format!("{file} has no function {name} for [api].before"), "/api/before").into());
            }
            let operation = handled.iter().find(|(_, h)| *h == name).map_or("", |(o, _)| *o);
            Err(ContractError::new("handlers", format!("{file} has no function {name} for operation {operation}"), "/api/handlers").into())
        }
        Err(WorkerError::Import(traceback)) => Err(BundleError::Import(traceback)),
        Err(error @ WorkerError::Spawn(_)) => Err(BundleError::Worker(error.to_string())),
    }
}

// ------------------------------------------------------------------ copying

/// Paths a copy must not descend into (the staging directory and `--out` when they sit inside the world).
struct Skip(Vec<PathBuf>);

impl Skip {
    fn holds(&self, path: &Path) -> bool {
        !self.0.is_empty() && std::fs::canonicalize(path).is_ok_and(|p| self.0.contains(&p))
    }
}

/// `shutil.copytree` (file modes kept), leaving out entries whose name `ignored`
/// accepts and the directories `skip` holds — except that a symbolic link is refused,
/// naming it, where the original copied what it points to: a bundle (and so a push of
/// a connector world) never carries a file from outside the world.
fn copy_tree(source: &Path, target: &Path, ignored: &dyn Fn(&str) -> bool, skip: &Skip) -> Result<(), BundleError> {
    use gateway_common::fs::{copy_tree, Symlinks};
    let leave_out = |entry: &gateway_common::fs::Entry| ignored(entry.name) || skip.holds(&source.join(entry.relative));
    copy_tree(source, target, Symlinks::Refuse, &leave_out).or_else(|error| match error.refused_link() {
        Some(link) => Err(refused_link(source, &error.path, link)),
        None => io(Err(error.source), &error.path),
    })
}

/// The refusal of a symbolic link met while copying the world (`link` under `root`),
/// worded as a plain push words its refusal.
fn refused_link(root: &Path, at: &Path, link: &Path) -> BundleError {
    let world = root.ancestors().find(|dir| dir.join("gateway-env.toml").is_file()).unwrap_or(root);
    let shown = at.strip_prefix(world).unwrap_or(at).display().to_string();
    let message = format!(
        "refusing to bundle {shown}: it is a symlink ({}); a bundle never follows links out of the world — copy the files in or remove the link",
        link.display()
    );
    ContractError::new("symlink", message, "/api/world").into()
}

/// What `server/world` leaves out: the original's ignore list, plus the files a
/// build or a live SQLite connection leaves beside a snapshot (never the
/// snapshots themselves, which the server opens instead of replaying the data).
pub fn world_ignored(name: &str) -> bool {
    WORLD_IGNORED.contains(&name)
        || name.starts_with(".state.sqlite.")
        || [".sqlite-journal", ".sqlite-wal", ".sqlite-shm", ".db-journal", ".db-wal", ".db-shm"].iter().any(|s| name.ends_with(s))
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), BundleError> {
    if let Some(parent) = path.parent() {
        io(std::fs::create_dir_all(parent), parent)?;
    }
    io(std::fs::write(path, bytes), path)
}

// ------------------------------------------------------------------ server/

/// `server/Dockerfile`. The build context is the bundle root, as for the original's
/// (`COPY server /app`): the image holds `server/` under `/srv`.
pub fn dockerfile() -> String {
    [
        "FROM debian:bookworm-slim".to_string(),
        "# python3 runs the world's own handlers (api/handlers.py), as the original's server did.".into(),
        "RUN apt-get update \\".into(),
        " && apt-get install -y --no-install-recommends python3 ca-certificates \\".into(),
        " && rm -rf /var/lib/apt/lists/*".into(),
        "WORKDIR /srv".into(),
        "COPY server /srv".into(),
        format!("EXPOSE {PORT}"),
        "# PORT and WORLD_API_KEY are read from the environment, as the original's main.py read them.".into(),
        format!("CMD [\"/bin/sh\", \"-c\", \"exec /srv/gateway worlds serve /srv/world --bind 0.0.0.0 --port \\\"${{PORT:-{PORT}}}\\\"\"]"),
        String::new(),
    ]
    .join("\n")
}

/// The gateway image a pushed bundle's Dockerfile starts from: the repository's own
/// `Dockerfile` built as `gateway:<version>`.
pub fn gateway_image() -> String {
    format!("gateway:{}", env!("CARGO_PKG_VERSION"))
}

/// `server/Dockerfile` of a bundle without the binary ([`ServerPayload::Image`]).
pub fn image_dockerfile() -> String {
    [
        "# The gateway image of this version, built from the gateway-rs repository:".to_string(),
        format!("#   docker build -t {} .", gateway_image()),
        "# Then this bundle, with its root as the context: docker build -f server/Dockerfile .".into(),
        format!("ARG GATEWAY_IMAGE={}", gateway_image()),
        "FROM ${GATEWAY_IMAGE}".into(),
        "COPY --chown=gateway server/world /srv/world".into(),
        format!("EXPOSE {PORT}"),
        "# PORT and WORLD_API_KEY are read from the environment, as the original's main.py read them.".into(),
        "ENTRYPOINT []".into(),
        format!("CMD [\"/bin/sh\", \"-c\", \"exec /usr/local/bin/gateway worlds serve /srv/world --bind 0.0.0.0 --port \\\"${{PORT:-{PORT}}}\\\"\"]"),
        String::new(),
    ]
    .join("\n")
}

fn image_readme(spec: &Spec) -> String {
    format!(
        "# {slug}: the world's API server\n\
         \n\
         - `world/`: the compiled world (contract, data, snapshots, scenarios, handlers), the authority.\n\
         - `Dockerfile`: starts from the gateway image `{image}` (`docker build -t {image} .` in the\n\
         \x20 gateway-rs repository), built with the bundle root as context (`docker build -f server/Dockerfile .`).\n\
         \n\
         The server listens on `$PORT` (default {PORT}) and accepts any non-empty credential unless\n\
         `WORLD_API_KEY` pins one. Beside the vendor's routes it answers `{HEALTH}`, `{SEED}`,\n\
         `{RESET}` and `{STATE}`. Run it without Docker, with gateway installed:\n\
         \n\
         ```\n\
         gateway worlds serve world --port {PORT}\n\
         ```\n",
        slug = spec.slug,
        image = gateway_image()
    )
}

fn server_readme(spec: &Spec) -> String {
    format!(
        "# {slug}: the world's API server\n\
         \n\
         Everything the container needs sits in this directory:\n\
         \n\
         - `world/`: the compiled world (contract, data, snapshots, scenarios, handlers), the authority.\n\
         - `gateway`: the gateway-rs binary that serves it (`gateway worlds serve world`).\n\
         - `Dockerfile`: built with the bundle root as context (`docker build -f server/Dockerfile .`).\n\
         \n\
         The server listens on `$PORT` (default {PORT}) and accepts any non-empty credential unless\n\
         `WORLD_API_KEY` pins one. Beside the vendor's routes it answers `{HEALTH}`, `{SEED}`,\n\
         `{RESET}` and `{STATE}`. Run it without Docker:\n\
         \n\
         ```\n\
         ./gateway worlds serve world --port {PORT}\n\
         ```\n",
        slug = spec.slug
    )
}

/// A symbolic link at `at` to `target` (where the platform has them).
fn link(target: &Path, at: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::symlink(target, at);
    #[cfg(not(unix))]
    return Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("no symbolic links here to {}; use --binary copy", target.display()),
    ));
}

// ------------------------------------------------------------------ the bundle

/// Where the bundle is assembled and how it reaches `--out`.
struct Staging {
    /// The directory being written.
    dir: PathBuf,
    /// `--out`, resolved.
    out: PathBuf,
    /// `--out` already exists (empty): move the staged entries into it.
    existing: bool,
}

impl Staging {
    fn new(out: &Path) -> Result<Staging, BundleError> {
        let exists = out.exists();
        let resolved = match (exists, out.file_name(), out.parent()) {
            (true, _, _) => io(std::fs::canonicalize(out), out)?,
            (false, Some(_), Some(parent)) if !parent.as_os_str().is_empty() => {
                io(std::fs::create_dir_all(parent), parent)?;
                io(std::fs::canonicalize(parent), parent)?.join(out.file_name().unwrap_or_default())
            }
            (false, Some(name), _) => io(std::env::current_dir(), Path::new("."))?.join(name),
            (false, None, _) => {
                // `..`-style paths: create the directory, then fill it like an existing one.
                io(std::fs::create_dir_all(out), out)?;
                io(std::fs::canonicalize(out), out)?
            }
        };
        let existing = resolved.is_dir();
        let parent = resolved.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
        let name = resolved.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "bundle".into());
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let dir = parent.join(format!(".{name}.api-bundle-{}-{nanos}", std::process::id()));
        io(std::fs::create_dir(&dir), &dir)?;
        Ok(Staging { dir, out: resolved, existing })
    }

    fn finish(self) -> Result<(), BundleError> {
        if !self.existing {
            io(std::fs::rename(&self.dir, &self.out), &self.out)?;
            return Ok(());
        }
        let mut entries: Vec<_> = io(std::fs::read_dir(&self.dir), &self.dir)?.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        entries.sort();
        for name in entries {
            let target = self.out.join(&name);
            io(std::fs::rename(self.dir.join(&name), &target), &target)?;
        }
        io(std::fs::remove_dir(&self.dir), &self.dir)?;
        Ok(())
    }
}

/// What `server/` carries beside the world.
#[derive(Debug, Clone, Copy)]
pub enum ServerPayload<'a> {
    /// This binary, copied in: `docker build` needs nothing else (`schema api-bundle`).
    Binary(&'a Path),
    /// A symbolic link to this binary instead of a copy (`schema api-bundle --binary
    /// link`): the bundle runs where it was built without carrying the executable; for
    /// `docker build`, copy the binary in or use [`ServerPayload::Image`].
    Link(&'a Path),
    /// No binary: the Dockerfile starts from the gateway image of this version
    /// (`bench push`).
    Image,
}

/// Write the api-kind bundle that hosts this world's API under `out`, serving
/// with the running executable. Returns `out` as given.
pub fn build_api_bundle(world: &Path, out: &Path) -> Result<PathBuf, BundleError> {
    let binary = io(std::env::current_exe(), Path::new("gateway"))?;
    build_api_bundle_with(world, out, &binary)
}

/// [`build_api_bundle`] with a symbolic link to the running executable in place of
/// its copy ([`ServerPayload::Link`]).
pub fn build_api_bundle_linked(world: &Path, out: &Path) -> Result<PathBuf, BundleError> {
    let binary = io(std::env::current_exe(), Path::new("gateway"))?;
    build_api_bundle_for(world, out, ServerPayload::Link(&binary))
}

/// [`build_api_bundle`] with the server binary named explicitly.
pub fn build_api_bundle_with(world: &Path, out: &Path, binary: &Path) -> Result<PathBuf, BundleError> {
    build_api_bundle_for(world, out, ServerPayload::Binary(binary))
}

/// [`build_api_bundle`] with `server/` as `payload` says.
pub fn build_api_bundle_for(world: &Path, out: &Path, payload: ServerPayload<'_>) -> Result<PathBuf, BundleError> {
    if out.exists() {
        let mut entries = io(std::fs::read_dir(out), out)?;
        if entries.next().is_some() {
            return Err(ContractError::new("api", "Output directory must be empty or absent", "/api/out").into());
        }
    }
    let spec = load_spec(world)?;
    let settings = load_api_settings(world, &spec)?;
    check_handlers(&spec, &settings)?;
    let opened = gateway_world::World::open(world)?;
    let contract = opened.compile(true)?;
    opened.check()?;
    let package_id = contract.package().get("id").map(python_str).unwrap_or_default();
    let contract_id = contract.target().get("id").map(python_str).unwrap_or_default();
    let seed = base_seed_bytes(world)?;
    let authored = scenario_dirs(world)?;
    let staging = Staging::new(out)?;
    let built = (|| {
        let root = &staging.dir;
        write(&root.join("gateway-api-world.toml"), manifest_text(&package_id, &spec, &settings))?;
        write(&root.join("openapi.json"), openapi_bytes(&spec, &contract_id, Some(&settings)))?;
        write(&root.join("seed/base.json"), &seed)?;
        let skip = Skip(vec![staging.dir.clone(), staging.out.clone()]);
        for scenario in &authored {
            copy_tree(&scenario.dir, &root.join("scenarios").join(&scenario.name), &|_| false, &skip)?;
        }
        if !authored.iter().any(|s| s.name == "default") {
            let scenario = root.join("scenarios/default");
            write(&scenario.join("scenario.toml"), "name = \"default\"\nseed = \"seed\"\n")?;
            write(&scenario.join("instruction.md"), default_instruction(&spec))?;
        }
        let server = root.join("server");
        copy_tree(world, &server.join("world"), &world_ignored, &skip)?;
        match payload {
            ServerPayload::Binary(binary) => {
                io(std::fs::copy(binary, server.join("gateway")), binary)?;
                write(&server.join("Dockerfile"), dockerfile())?;
                write(&server.join("README.md"), server_readme(&spec))?;
            }
            ServerPayload::Link(binary) => {
                let target = io(std::fs::canonicalize(binary), binary)?;
                io(link(&target, &server.join("gateway")), binary)?;
                write(&server.join("Dockerfile"), dockerfile())?;
                write(&server.join("README.md"), server_readme(&spec))?;
            }
            ServerPayload::Image => {
                write(&server.join("Dockerfile"), image_dockerfile())?;
                write(&server.join("README.md"), image_readme(&spec))?;
            }
        }
        Ok::<(), BundleError>(())
    })();
    let dir = staging.dir.clone();
    let placed = built.and_then(|()| staging.finish());
    if placed.is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    placed?;
    Ok(out.to_path_buf())
}

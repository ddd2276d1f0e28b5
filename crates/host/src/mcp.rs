//! MCP (Model Context Protocol) over one session of a [`WorldHost`], with the
//! official Rust SDK (`rmcp`): the session's tools listed from the shared
//! descriptors ([`crate::tools`]), restricted by its task's `tools`; a call routed
//! like the hub routes it and answered by [`WorldHost::call`]; the task's
//! instruction as the server's `instructions`.
//!
//! Transports: [`serve_stdio`] (or any byte stream, [`serve_io`]) for `gateway
//! worlds mcp`, and [`http`], the streamable HTTP endpoint the host's data plane
//! mounts at `/s/<sid>/mcp` and at `/__mcp` of `w-<sid>-api.<domain>` (stateless,
//! plain JSON answers: nothing is kept between requests, so it works through the
//! hub and across restarts; the session token gate is the server's, not this
//! module's).
//!
//! Control operations: with [`McpOptions::controls`], `__grade`, `__state` and
//! `__reset` are tools too. Off on the HTTP endpoint: that is the agent's
//! surface, and an agent that can read its grade or the whole state is graded on
//! nothing. `gateway worlds mcp --controls` turns them on for a developer trying a
//! world out.
//!
//! It is not a second implementation of tools: describing, routing and calling
//! are `tools.rs`'s and `host.rs`'s; a refusal (unknown or disallowed tool, an
//! argument of the wrong type, closed session) is a tool result with `isError:
//! true` and the refusal's message, never a protocol error or a crash; so is a
//! world's answer with an HTTP error status: the vendor's body, then a sentence
//! (`get_ticket answered HTTP 404: ticket 7 does not exist.`).

use crate::error::HostError;
use crate::host::WorldHost;
use crate::session::Session;
use gateway_world::json::{dumps, DumpOptions, Value};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use std::path::Path;
use std::sync::Arc;

/// The control operations offered as tools with [`McpOptions::controls`].
pub const CONTROL_TOOLS: [&str; 3] = ["__grade", "__state", "__reset"];

/// How a session is offered over MCP.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpOptions {
    /// Offer `__grade`, `__state` and `__reset` as tools.
    pub controls: bool,
}

/// An MCP server over one session of a host.
#[derive(Clone)]
pub struct WorldMcp {
    host: Arc<WorldHost>,
    session_id: String,
    options: McpOptions,
    instructions: Option<String>,
}

impl std::fmt::Debug for WorldMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorldMcp").field("session_id", &self.session_id).field("options", &self.options).finish()
    }
}

/// The instruction of a session's task: its spec's, or the bundled scenario's.
pub fn instruction(session: &Session) -> Option<String> {
    match session.task().spec() {
        Some(spec) => Some(spec.instruction.clone()),
        None => crate::tools::bundled_instruction(session.version(), session.bundled().unwrap_or_default()),
    }
}

const JSON: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false };

/// Our JSON value as serde_json's (for rmcp's types).
fn to_serde(value: &Value) -> serde_json::Value {
    serde_json::from_str(&dumps(value, JSON)).unwrap_or(serde_json::Value::Null)
}

/// serde_json's value as ours (numbers keep int vs float).
fn from_serde(value: &serde_json::Value) -> Value {
    gateway_world::json::parse(&value.to_string()).map(|p| p.value).unwrap_or_default()
}

/// A refusal as the agent reads it: `code: message` (the code an agent can
/// match on, `tool_not_allowed`, `invalid_argument`, …), or the message alone
/// where the code is the host's catch-all `host`.
fn refusal_text(error: &HostError) -> String {
    match error {
        HostError::Refused(refused) if refused.code == "host" => refused.message.clone(),
        HostError::Refused(refused) => format!("{}: {}", refused.code, refused.message),
        other => other.to_string(),
    }
}

fn refused(error: &HostError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(refusal_text(error))])
}

/// A tool's answer: the JSON text (in the world's own member order), and the
/// same value as structured content when it is an object. An answer with an
/// HTTP error status (`{status: 4xx/5xx, body}`) is an error result: the
/// vendor's body as the text, then a sentence saying what failed (`missing`
/// says what a 404 means for this call).
fn answered(tool: &str, value: &Value, missing: Option<&str>) -> CallToolResult {
    let status = value.get("status").and_then(Value::as_i64).filter(|s| *s >= 400);
    let mut result = match status {
        None => CallToolResult::success(vec![ContentBlock::text(dumps(value, JSON))]),
        Some(status) => {
            let body = value.get("body").unwrap_or(&Value::Null);
            let mut said = match (status, missing) {
                (404, Some(missing)) => format!("{tool} answered HTTP 404: {missing}."),
                _ => format!("{tool} answered HTTP {status}; the world's answer says why."),
            };
            if matches!(value.get("fault"), Some(Value::Bool(true))) {
                said.push_str(" This failure was injected; the same call may succeed if retried.");
            }
            CallToolResult::error(vec![ContentBlock::text(dumps(body, JSON)), ContentBlock::text(said)])
        }
    };
    if matches!(value, Value::Object(_)) {
        result.structured_content = Some(to_serde(value));
    }
    result
}

/// What a 404 from `tool` called with `routed` args means, in words: `ticket 7
/// does not exist` (the operation's entity, singular, and its path arguments).
fn missing_sentence(session: &Session, tool: &str, routed: &Value) -> Option<String> {
    let operation = session.version().spec.operation(tool)?;
    let entity = operation.entity.as_deref()?;
    let Some(Value::Object(path)) = routed.get("path") else { return None };
    let shown = |value: &Value| gateway_world::json::python_str(value);
    let singular = crate::wording::singular(entity);
    let keyed = session.version().template.contract().entity(entity).map(|e| e.primary_key.clone()).unwrap_or_default();
    match path.iter().collect::<Vec<_>>().as_slice() {
        [] => None,
        [(name, value)] if keyed.iter().any(|k| k == *name) => Some(format!("{singular} {} does not exist", shown(value))),
        many => {
            let named: Vec<String> = many.iter().map(|(k, v)| format!("{k} {}", shown(v))).collect();
            Some(format!("no {singular} with {} exists", named.join(" and ")))
        }
    }
}

impl WorldMcp {
    /// The server for session `session_id` of `host` (which must hold it).
    pub fn new(host: Arc<WorldHost>, session_id: &str, options: McpOptions) -> Result<WorldMcp, HostError> {
        let session = host.using(session_id, false)?;
        let instructions = instruction(&session);
        Ok(WorldMcp { host, session_id: session_id.to_string(), options, instructions })
    }

    /// The tools this session offers, as MCP describes them.
    pub fn tool_list(&self) -> Result<Vec<Tool>, HostError> {
        let session = self.host.using(&self.session_id, false)?;
        let allowed = session.task().spec().and_then(|s| s.tools.as_ref());
        let described = crate::tools::tools(session.version(), allowed);
        let mut out = Vec::new();
        for tool in described.as_array().into_iter().flatten() {
            let text = |key: &str| tool.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
            let schema = match to_serde(tool.get("inputSchema").unwrap_or(&Value::Null)) {
                serde_json::Value::Object(schema) => schema,
                _ => JsonObject::new(),
            };
            let doc = text("doc");
            let mut described = Tool::new(text("name"), format!("{} — {doc}", text("signature")), schema);
            described.annotations = Some(ToolAnnotations::new().read_only(doc.starts_with("GET ")).open_world(false));
            out.push(described);
        }
        if self.options.controls {
            let empty = || {
                let mut schema = JsonObject::new();
                schema.insert("type".into(), "object".into());
                schema.insert("properties".into(), serde_json::Value::Object(JsonObject::new()));
                schema
            };
            out.push(Tool::new("__grade", "Grade the session's state with its task's grader: {reward, rewards}.", empty()));
            out.push(Tool::new("__state", "Every entity's rows and the snapshot in use.", empty()));
            out.push(Tool::new("__reset", "Back to the task's starting state.", empty()));
        }
        Ok(out)
    }

    /// Call `tool` with the agent's `args` (flat, or `{path, query, body}`): the
    /// world's answer `{status, body}`, or the refusal as an error result.
    pub fn call(&self, tool: &str, args: &Value) -> CallToolResult {
        let mut missing = None;
        let answer = match tool {
            "__grade" if self.options.controls => self.host.grade(&self.session_id),
            "__state" if self.options.controls => self.host.state(&self.session_id),
            "__reset" if self.options.controls => self.host.reset(&self.session_id),
            _ => self.host.using(&self.session_id, false).and_then(|session| {
                let routed = crate::tools::route_args(session.version(), tool, args);
                missing = missing_sentence(&session, tool, &routed);
                drop(session);
                self.host.call(&self.session_id, tool, &routed)
            }),
        };
        match answer {
            Ok(value) => answered(tool, &value, missing.as_deref()),
            Err(error) => refused(&error),
        }
    }
}

impl ServerHandler for WorldMcp {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("gateway-world", env!("CARGO_PKG_VERSION")));
        match &self.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        match self.tool_list() {
            Ok(tools) => Ok(ListToolsResult::with_all_items(tools)),
            Err(error) => Err(ErrorData::internal_error(refusal_text(&error), None)),
        }
    }

    async fn call_tool(&self, request: CallToolRequestParams, _context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let args = from_serde(&serde_json::Value::Object(request.arguments.unwrap_or_default()));
        let server = self.clone();
        let tool = request.name.to_string();
        // The world's app, SQLite and the handler worker block: off the async threads.
        match tokio::task::spawn_blocking(move || server.call(&tool, &args)).await {
            Ok(result) => Ok(result.into()),
            Err(_) => Ok(CallToolResult::error(vec![ContentBlock::text("host: the tool call failed")]).into()),
        }
    }
}

/// Serve the session over a byte stream until the peer closes it.
pub async fn serve_io<R, W>(server: WorldMcp, read: R, write: W) -> Result<(), String>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let running = server.serve((read, write)).await.map_err(|e| format!("mcp: {e}"))?;
    running.waiting().await.map_err(|e| format!("mcp: {e}"))?;
    Ok(())
}

/// Serve the session over stdin/stdout until stdin closes.
pub async fn serve_stdio(server: WorldMcp) -> Result<(), String> {
    let (read, write) = rmcp::transport::stdio();
    serve_io(server, read, write).await
}

/// The streamable HTTP answer to one request for session `session_id` (the
/// caller has admitted it): stateless, JSON answers, bodies up to `max_body`. A
/// session the host does not hold is the refusal's text, for the caller to answer
/// (the host's server: 404).
pub async fn http(
    host: Arc<WorldHost>,
    session_id: &str,
    max_body: usize,
    request: axum::extract::Request,
) -> Result<axum::response::Response, String> {
    use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let server = WorldMcp::new(host, session_id, McpOptions::default()).map_err(|error| refusal_text(&error))?;
    // The host's gate (the session token) stands where rmcp's Host allow-list
    // would: sessions are named by Host headers no fixed list can hold.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(max_body)
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(move || Ok(server.clone()), Arc::new(NeverSessionManager::default()), config);
    Ok(service.handle(request).await.map(axum::body::Body::new))
}

/// A world directory opened as the one session of a host of its own, under a
/// temporary directory removed on drop (`gateway worlds mcp`).
pub struct LocalSession {
    /// The host holding the session.
    pub host: Arc<WorldHost>,
    /// The session's id.
    pub session_id: String,
    // Declared last: dropped after the host let go of its files.
    _root: tempfile::TempDir,
}

impl std::fmt::Debug for LocalSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSession").field("session_id", &self.session_id).finish()
    }
}

/// Open the world directory `world` (copied, never written) as one local session
/// on a bundled task (a scenario name; `default` when None) or on the task spec
/// in the JSON file `task_file`.
pub fn open_local(world: &Path, task: Option<&str>, task_file: Option<&Path>) -> Result<LocalSession, HostError> {
    use crate::error::refuse;
    let world = std::fs::canonicalize(world).map_err(|e| refuse("host", format!("{}: {e}", world.display())))?;
    let task_spec = match task_file {
        None => None,
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| refuse("task", format!("{}: {e}", file.display())))?;
            let parsed = gateway_world::json::parse(&text).map_err(|e| refuse("task", format!("{}: not JSON: {e:?}", file.display())))?;
            Some(Arc::new(gateway_world::task::TaskSpec::parse(&parsed.value)?))
        }
    };
    let root = tempfile::Builder::new()
        .prefix("gateway-mcp-")
        .tempdir_in(gateway_world::data::tempfile_dir::process_root())
        .map_err(|e| refuse("host", e.to_string()))?;
    let host = Arc::new(WorldHost::new(crate::host::HostConfig::local(root.path().join("host"))));
    let session_id = "local".to_string();
    host.open(crate::host::OpenRequest {
        session_id: session_id.clone(),
        version_id: "local".into(),
        bundle_url: format!("file://{}", world.display()),
        task: task_spec.is_none().then(|| task.unwrap_or("default").to_string()),
        task_spec,
        token: None,
        restore: None,
    })?;
    Ok(LocalSession { host, session_id, _root: root })
}

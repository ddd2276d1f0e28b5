//! A world's own tools (`x-gateway.tools` in its contract, `tools/*.py` beside it;
//! engine.md §15): run in serve's Python handler worker through an adapter module
//! (`tools_adapter.py`) that applies the original's registration rules and injects
//! `gateway_env`. One call is one store transaction: the input checked against the
//! tool's input schema, the handler run (its store and db calls answered here, on
//! that transaction), the result checked against the output schema, then commit;
//! any refusal rolls the whole call back.
//!
//! It is not the connector's operations (those are answered by the world's app).

use crate::error::{refuse, HostError};
use gateway_serve::app::SharedWorker;
use gateway_serve::handlers::WorkerOptions;
use gateway_serve::handlers::{CtxError, CtxHost, HandlerFailure, HandlerOutcome, HandlerRequest, Worker, WorkerError};
use gateway_serve::state::WorldState;
use gateway_world::json::{self, object, Map, Value};
use gateway_world::store::Store;
use gateway_world::{Contract, ContractError};
use std::path::Path;

/// The adapter module, embedded.
pub const ADAPTER_SOURCE: &str = include_str!("tools_adapter.py");

/// The code of the refusal that carries a tool's own exception through the
/// transaction (it becomes a `{status: 500}` answer, not a refusal).
const RAISED: &str = "__tool_raised__";

/// The code of the refusal that carries a tool past its deadline out of the
/// transaction (rolled back; a `{status: 504}` answer).
const TIMED_OUT: &str = "__tool_timed_out__";

/// A world's tools, loaded once per version.
pub struct ToolRunner {
    worker: SharedWorker,
    /// `{name: {description, input_schema, output_schema}}` from the contract.
    tools: Map,
}

impl std::fmt::Debug for ToolRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRunner").field("tools", &self.tools.keys().collect::<Vec<_>>()).finish()
    }
}

impl ToolRunner {
    /// Load the tools of the world at `tree` (None when it declares none or has no
    /// `tools/` directory); the adapter is written under `scratch`.
    pub fn start(tree: &Path, contract: &Contract, scratch: &Path, options: &WorkerOptions) -> Result<Option<ToolRunner>, HostError> {
        let tools = contract.tools().as_object().cloned().unwrap_or_default();
        let dir = tree.join("tools");
        if tools.is_empty() || !dir.is_dir() {
            return Ok(None);
        }
        let names: Vec<String> = tools.keys().cloned().collect();
        let absolute = std::fs::canonicalize(&dir).map_err(|e| refuse("host", format!("{}: {e}", dir.display())))?;
        let served = Value::Array(names.iter().map(Value::str).collect());
        let source = format!(
            "SERVED = {}\nTOOLS_DIR = {}\n{ADAPTER_SOURCE}",
            json::canonical(&served),
            json::canonical(&Value::Str(absolute.to_string_lossy().into_owned()))
        );
        std::fs::create_dir_all(scratch).map_err(|e| refuse("host", e.to_string()))?;
        let adapter = scratch.join("gateway_tools_adapter.py");
        std::fs::write(&adapter, source).map_err(|e| refuse("host", e.to_string()))?;
        if options.sandbox.is_confined() {
            gateway_sandbox::share_read_only(scratch).map_err(|e| refuse("host", format!("{}: {e}", scratch.display())))?;
        }
        let functions: Vec<String> = names.iter().map(|n| format!("tool__{n}")).collect();
        // The worker sees the adapter's directory and the world's tools, read-only.
        let worker = match Worker::start(&adapter, &functions, &options.seeing(&absolute)) {
            Ok(worker) => worker,
            Err(WorkerError::Missing(_)) => {
                return Err(HostError::Refused(ContractError::new("tool", "Authored handlers must exactly cover the declared tools", "")))
            }
            Err(error) => return Err(refuse("tool", format!("the world's tools could not load: {error}"))),
        };
        Ok(Some(ToolRunner { worker: SharedWorker::new(worker), tools }))
    }

    /// Whether `name` is one of the world's tools.
    pub fn has(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The tools' names.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.tools.keys()
    }

    /// The contract's description of a tool.
    pub fn schema(&self, name: &str) -> Option<&Value> {
        self.tools.get(name)
    }

    /// Run `name` with `input` on the session's state: `{status: 200, body}`; a
    /// handler's exception is `{status: 500, body: {error}}` (the call rolled back);
    /// a refusal (input, output, the store) is an error.
    pub fn call(&self, state: &WorldState, name: &str, input: &Value) -> Result<Value, HostError> {
        let Some(schemas) = self.tools.get(name) else {
            return Err(refuse("host", format!("unknown tool '{name}'")));
        };
        let location = format!("world.json#/x-gateway/tools/{name}");
        let ran = state.write(
            |store| {
                store.transaction(|store| {
                    let null = Value::Null;
                    let input_schema = schemas.get("input_schema").unwrap_or(&null);
                    gateway_world::dialect::validate(input_schema, input, &format!("{location}/input"), "")
                        .map_err(|error| crate::wording::input_refused(name, input_schema, input, error))?;
                    let request = HandlerRequest { body: input.clone(), ..HandlerRequest::default() };
                    let mut host = StoreHost { store, tool: name };
                    let outcome = self.worker.call(&format!("tool__{name}"), &request, &mut host);
                    let result = match outcome {
                        Ok(HandlerOutcome::Body(body)) | Ok(HandlerOutcome::Answer { body, .. }) => body,
                        Err(HandlerFailure::Contract(detail)) => return Err(contract_error(&detail).into()),
                        Err(HandlerFailure::Exception(text)) | Err(HandlerFailure::WorkerDied(text)) => {
                            return Err(ContractError::new(RAISED, text, "").into())
                        }
                        Err(failure @ HandlerFailure::TimedOut(_)) => {
                            return Err(ContractError::new(TIMED_OUT, failure.to_string(), "").into())
                        }
                    };
                    gateway_world::dialect::validate(
                        schemas.get("output_schema").unwrap_or(&null),
                        &result,
                        &format!("{location}/output"),
                        "",
                    )?;
                    Ok(result)
                })
            },
            None,
        );
        match ran {
            Ok(body) => Ok(object([("status", Value::Int(200)), ("body", body)])),
            Err(gateway_world::Error::Contract(error)) if error.code == RAISED => {
                // str(exception)[:2000], as the original: the message without its type.
                let message = error.message.split_once(": ").map_or(error.message.as_str(), |(_, m)| m);
                let message: String = message.chars().take(2000).collect();
                Ok(object([("status", Value::Int(500)), ("body", object([("error", Value::Str(message))]))]))
            }
            Err(gateway_world::Error::Contract(error)) if error.code == TIMED_OUT => Ok(object([
                ("status", Value::Int(504)),
                ("body", object([("error", Value::str("handler_timeout")), ("detail", Value::Str(error.message))])),
            ])),
            Err(gateway_world::Error::Contract(error)) => Err(crate::wording::row_missing(error).into()),
            Err(error) => Err(error.into()),
        }
    }
}

fn contract_error(detail: &Value) -> ContractError {
    let text = |key: &str| detail.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let mut error = ContractError::new(&text("code"), text("message"), text("schema_path")).with_path(text("path"));
    for (key, value) in detail.as_object().into_iter().flatten() {
        if !matches!(key.as_str(), "code" | "message" | "schema_path" | "path") {
            error.set(key, value.clone());
        }
    }
    error
}

/// Answers a tool's store and db calls on the call's transaction.
struct StoreHost<'a> {
    store: &'a mut Store,
    tool: &'a str,
}

fn ctx_error(error: gateway_world::Error) -> CtxError {
    match error {
        gateway_world::Error::Contract(contract) => CtxError::Contract(contract.detail()),
        other => CtxError::Other(other.to_string()),
    }
}

impl CtxHost for StoreHost<'_> {
    fn call(&mut self, method: &str, params: &Value) -> Result<Value, CtxError> {
        let null = Value::Null;
        let param = |name: &str| params.get(name).unwrap_or(&null);
        let entity = param("entity").as_str().unwrap_or_default().to_string();
        let source = || Some(object([("record", Value::Str(format!("tool:{}", self.tool)))]));
        match method {
            "rows" => self.store.list(&entity).map(Value::Array).map_err(ctx_error),
            "get" => self.store.get(&entity, param("key")).map(Option::unwrap_or_default).map_err(ctx_error),
            "insert" => {
                let source = source();
                self.store.insert(&entity, param("value"), source).map_err(ctx_error)
            }
            "update" => {
                let source = source();
                self.store.update(&entity, param("key"), param("patch"), source).map(Option::unwrap_or_default).map_err(ctx_error)
            }
            "delete" => {
                let source = source();
                self.store.delete(&entity, param("key"), source).map(|()| Value::Null).map_err(ctx_error)
            }
            // `gateway_env.db.one/all`: a read-only statement; a write is `raw_write`.
            "sql" => gateway_serve::sql::read_only(
                self.store.connection(),
                param("sql").as_str().unwrap_or_default(),
                param("params"),
                "Raw SQL writes are not allowed in a tool; use gateway_env.store",
            ),
            other => Err(CtxError::Other(format!("a tool cannot call ctx.{other}"))),
        }
    }
}

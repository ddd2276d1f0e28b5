//! Running a world's Python handlers (`api/handlers.py`) out of process.
//!
//! The original imports the handlers module into the server and calls
//! `fn(ctx, args, query, body)` directly. Here each world gets one long-lived
//! `python3` child (a [`Worker`]) running the embedded `worker.py`, started as
//! `python3 -u -c <worker.py source> <handlers.py>`: the source is compiled into
//! the binary with `include_str!` and passed on the command line, so no
//! temporary file is written or cleaned up.
//!
//! The child is confined as [`WorkerOptions::sandbox`] says (gateway-sandbox: no
//! environment, no network, a read-only view of the world and the Python runtime,
//! rlimits, a PID namespace); every call has a deadline ([`WorkerOptions::deadline`]),
//! past which the worker is killed with everything it started and restarted on the
//! next call. Its stderr (handlers' prints, tracebacks) reaches the server's log a
//! line at a time, marked and escaped ([`crate::worker_log::log_line`]).
//!
//! The two sides talk in JSON lines over the child's stdin/stdout:
//!
//! * start: Rust sends `{"op":"check","functions":[..]}`, the worker answers
//!   `{"ok":true}`, `{"ok":false,"missing":name}`, or — when the import itself
//!   raised, without waiting for the check — `{"ok":false,"error":traceback}`.
//! * call: Rust sends `{"op":"call","function","args","query","body","headers","operation"}`.
//!   Every store/shape call the handler makes on `ctx` arrives as
//!   `{"ctx":method,"params":{..}}` and is answered through [`CtxHost`] with
//!   `{"ok":value}`, `{"error":detail}` (a `ContractError` in Python) or
//!   `{"fail":message}` (a `RuntimeError` in Python). The call ends with
//!   `{"result":{"kind":"body","body":..}}`,
//!   `{"result":{"kind":"tuple","status":..,"body":..,"headers":..}}`,
//!   `{"contract_error":detail}` or `{"exception":"Type: message","traceback":..}`.
//!
//! The clock (`now`, `elapsed`, `ladder`, `clock`) and `uuid` are computed in
//! Python exactly as the original does, reading `GATEWAY_WORLD_CLOCK` from the
//! worker's environment (the server's value, handed on).
//!
//! ctx RPC methods and their params: `rows {entity}`, `get {entity,key}`,
//! `find {entity,fields}` (field values already `str()`-ed in Python, as the
//! original compares them), `insert {entity,value}`, `update {entity,key,patch}`,
//! `delete {entity,key}`, `key_of {entity,row}`, `envelope {rows,query,envelope}`,
//! `paged {rows,query,envelope,status}` (answer `[status, body, headers|null]`),
//! `not_found {}` and `invalid {detail}` (answer `[status, body]`), `sql {sql,params}`
//! (read-only; rows as arrays), `add_headers {headers}` and `add_fields {fields}`
//! (added to the request's answer). The server makes one call's writes one
//! transaction, rolled back when the call fails.

use gateway_sandbox::{Sandbox, View};
use gateway_world::json::{dumps, parse, write_string, DumpOptions, ParseError, Value};
use parking_lot::Mutex;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The worker's Python source, embedded in the binary.
pub const WORKER_SOURCE: &str = include_str!("worker.py");

/// The interpreter the worker runs on (looked up on `PATH`).
pub const PYTHON: &str = "python3";

/// The JSON text the protocol uses: member order kept, UTF-8, one line.
const WIRE: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: true };

/// Answers the ctx calls a handler makes (implemented by the server over the world's store).
pub trait CtxHost {
    /// Answer `ctx.<method>(**params)`; see the module docs for the methods and their params.
    fn call(&mut self, method: &str, params: &Value) -> Result<Value, CtxError>;
}

/// Why a ctx call failed.
#[derive(Debug, Clone)]
pub enum CtxError {
    /// A contract refusal: raised in the handler as `ContractError` with this detail object
    /// (`code`, `message`, `schema_path`, `path`, ...).
    Contract(Value),
    /// Any other failure: raised in the handler as `RuntimeError(message)`.
    Other(String),
}

/// What the handler is called with.
#[derive(Debug, Clone, Default)]
pub struct HandlerRequest {
    /// Path placeholders (`args`), an object of strings.
    pub args: Value,
    /// Query parameters, an object of strings.
    pub query: Value,
    /// The parsed request body (`{}` when the method carries none, as the original).
    pub body: Value,
    /// The request headers with lower-cased names (`ctx.headers`).
    pub headers: Value,
    /// The operation (`ctx.operation`): an object with `name`, `method`, `path`, `entity`.
    pub operation: Value,
    /// `ctx.spec`, `ctx.settings` and `ctx.link`: `{"spec": {…}, "settings": {…}, "link": [url, query]}`.
    pub context: Value,
}

/// What a handler that ran to completion handed back.
#[derive(Debug, Clone)]
pub enum HandlerOutcome {
    /// A plain return value (`None` is [`Value::Null`]): the operation's default status applies.
    Body(Value),
    /// A `(status, body)` or `(status, body, headers)` tuple.
    Answer {
        /// The status the handler chose.
        status: i64,
        /// The body.
        body: Value,
        /// Extra response headers, in the handler's order (`None` when not given or `None`).
        headers: Option<Vec<(String, String)>>,
    },
}

/// Why a handler call produced no outcome.
#[derive(Debug, Clone)]
pub enum HandlerFailure {
    /// A `ContractError` escaped the handler (or its headers were not strings): its detail object.
    Contract(Value),
    /// Any other exception, as `"ExceptionType: message"` (see [`Worker::last_traceback`]).
    Exception(String),
    /// The worker process died or broke the protocol; it is restarted on the next call.
    WorkerDied(String),
    /// No answer within the deadline (the worker busy or looping): the worker was
    /// killed and is restarted on the next call.
    TimedOut(Duration),
}

impl fmt::Display for HandlerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerFailure::Contract(detail) => write!(f, "contract error: {}", dumps(detail, WIRE)),
            HandlerFailure::Exception(text) => write!(f, "handler raised {text}"),
            HandlerFailure::WorkerDied(why) => write!(f, "handler worker died: {why}"),
            HandlerFailure::TimedOut(limit) => write!(f, "the handler did not answer within {} s", limit.as_secs_f64()),
        }
    }
}

impl std::error::Error for HandlerFailure {}

/// Why a worker could not be started.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkerError {
    /// `python3` could not be run, or exited without answering.
    #[error("could not start the handler worker: {0}")]
    Spawn(String),
    /// Importing the handlers module raised (the Python traceback).
    #[error("importing the handlers failed:\n{0}")]
    Import(String),
    /// The module has no callable of this name.
    #[error("the handlers have no function {0}")]
    Missing(String),
}

/// How a world's handler workers are started and how long a call may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerOptions {
    /// Confinement of the worker (see gateway-sandbox); unconfined only on request.
    pub sandbox: Sandbox,
    /// The longest a call may take, waiting for the worker included: past it the
    /// caller gets [`HandlerFailure::TimedOut`] and the worker is killed and restarted.
    pub deadline: Duration,
    /// Paths the worker sees read-only besides the handlers' own directory (the world).
    pub sees: Vec<PathBuf>,
}

/// A handler call's deadline unless configured (`--handler-timeout`).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

impl Default for WorkerOptions {
    /// Confined with the default limits, the default deadline.
    fn default() -> Self {
        WorkerOptions { sandbox: Sandbox::default(), deadline: DEFAULT_DEADLINE, sees: Vec::new() }
    }
}

impl WorkerOptions {
    /// For code of the user's own on the user's machine (`schema api-bundle`'s import
    /// check, `worlds mcp`): confined where this machine can confine, as the user where
    /// it cannot (no bubblewrap).
    pub fn local() -> WorkerOptions {
        WorkerOptions { sandbox: Sandbox::local(), ..WorkerOptions::default() }
    }

    /// These options, the worker also seeing `path` read-only.
    pub fn seeing(&self, path: impl Into<PathBuf>) -> WorkerOptions {
        let mut options = self.clone();
        options.sees.push(path.into());
        options
    }
}

/// One running `python3` child and its protocol pipes. Its answers are read by a
/// thread of their own, so that a call can stop waiting at its deadline.
struct Process {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Vec<u8>>,
}

/// Lines a worker may write on the protocol pipe (a handler's answer is one line).
const MAX_LINE: u64 = 64 << 20;

impl Process {
    fn send(&mut self, line: &str) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.stdin.write_all(&bytes)?;
        self.stdin.flush()
    }

    /// The next line, without its newline, if one comes before `deadline`.
    fn receive(&mut self, deadline: Instant) -> Result<String, Broken> {
        let wait = deadline.saturating_duration_since(Instant::now());
        let buf = match self.lines.recv_timeout(wait) {
            Ok(buf) => buf,
            Err(RecvTimeoutError::Timeout) => return Err(Broken::TimedOut),
            Err(RecvTimeoutError::Disconnected) => return Err(Broken::Ended),
        };
        Ok(match String::from_utf8(buf) {
            Ok(text) => text,
            Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
        })
    }

    /// Reap the child after its stream ended, killing it if it lingers; describes how it ended.
    fn finish(mut self) -> String {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return format!("the python3 worker exited ({status})"),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return "the python3 worker stopped answering and was killed".into();
                }
            }
        }
    }

    /// Kill the worker: confined, the sandbox's outer process, whose death takes every
    /// process inside with it (PID namespace); unconfined, the python process itself.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Read the worker's protocol lines on a thread of their own; a line that does not
/// end (the stream closed mid-line) or outgrows [`MAX_LINE`] ends the stream.
fn read_lines(stdout: ChildStdout) -> Receiver<Vec<u8>> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut buf = Vec::new();
            match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut buf) {
                Ok(_) if buf.last() == Some(&b'\n') => {
                    buf.pop();
                    if sender.send(buf).is_err() {
                        return;
                    }
                }
                _ => return,
            }
        }
    });
    receiver
}

/// Copy the worker's stderr (handlers' prints and tracebacks) into ours a line at a
/// time, each marked as the world's and escaped, so that nothing a world writes can
/// pass for a line of the server's own log.
fn forward_stderr(stderr: ChildStderr, world: String) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        loop {
            let mut buf = Vec::new();
            match (&mut reader).take(16 * 1024).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) => eprintln!("{}", crate::worker_log::log_line(&world, &buf)),
            }
        }
    });
}

/// A world's handlers module, loaded in one `python3` child process.
///
/// Calls are sequential (`&mut self`); share a worker between threads as a
/// [`SharedWorker`]. The child is killed when the worker is dropped.
pub struct Worker {
    handlers: PathBuf,
    functions: Vec<String>,
    options: WorkerOptions,
    process: Option<Process>,
    traceback: Option<String>,
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("handlers", &self.handlers)
            .field("functions", &self.functions)
            .field("pid", &self.process.as_ref().map(|p| p.child.id()))
            .finish()
    }
}

impl Worker {
    /// Start python3 on the handlers file, confined as `options` say, and check that
    /// every named function exists.
    ///
    /// Functions are checked in order; the first one missing (or not callable) is
    /// reported as [`WorkerError::Missing`].
    pub fn start(handlers: &Path, functions: &[String], options: &WorkerOptions) -> Result<Worker, WorkerError> {
        let process = spawn(handlers, functions, options)?;
        Ok(Worker {
            handlers: handlers.to_path_buf(),
            functions: functions.to_vec(),
            options: options.clone(),
            process: Some(process),
            traceback: None,
        })
    }

    /// The handlers file this worker runs.
    pub fn handlers(&self) -> &Path {
        &self.handlers
    }

    /// The process id of the running child (confined: the sandbox's outer process), if one is running.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.child.id())
    }

    /// The Python traceback of the last [`HandlerFailure::Exception`], for logs.
    pub fn last_traceback(&self) -> Option<&str> {
        self.traceback.as_deref()
    }

    /// Run one handler to completion within the options' deadline, answering its ctx
    /// calls through `host`.
    pub fn call(&mut self, function: &str, request: &HandlerRequest, host: &mut dyn CtxHost) -> Result<HandlerOutcome, HandlerFailure> {
        let deadline = Instant::now() + self.options.deadline;
        self.call_until(function, request, host, deadline)
    }

    /// Run one handler, giving up at `deadline`: the worker is then killed (with
    /// everything it started) and [`HandlerFailure::TimedOut`] returned; the next call
    /// starts a fresh one. A worker that died on an earlier call is restarted first.
    pub fn call_until(
        &mut self,
        function: &str,
        request: &HandlerRequest,
        host: &mut dyn CtxHost,
        deadline: Instant,
    ) -> Result<HandlerOutcome, HandlerFailure> {
        self.traceback = None;
        let mut process = match self.process.take() {
            Some(process) => process,
            None => spawn(&self.handlers, &self.functions, &self.options).map_err(|error| HandlerFailure::WorkerDied(error.to_string()))?,
        };
        let result = exchange(&mut process, function, request, host, &mut self.traceback, deadline);
        match result {
            Ok(answer) => {
                self.process = Some(process);
                answer
            }
            Err(Broken::Ended) => Err(HandlerFailure::WorkerDied(process.finish())),
            Err(Broken::TimedOut) => {
                process.kill();
                Err(HandlerFailure::TimedOut(self.options.deadline))
            }
            Err(Broken::Protocol(why)) => {
                process.kill();
                Err(HandlerFailure::WorkerDied(why))
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(process) = self.process.take() {
            process.kill();
        }
    }
}

/// A worker shared by the sessions (and threads) of one world. A call waits for the
/// worker at most until its deadline: behind a handler that loops, callers get
/// [`HandlerFailure::TimedOut`] instead of queueing for ever.
#[derive(Clone)]
pub struct SharedWorker {
    worker: Arc<Mutex<Worker>>,
    deadline: Duration,
    /// Admission for the server: at most one request per worker holds a blocking
    /// thread; the rest wait without one (see `server::respond`).
    gate: Arc<tokio::sync::Semaphore>,
}

impl fmt::Debug for SharedWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedWorker").field("deadline", &self.deadline).finish()
    }
}

impl SharedWorker {
    /// Share `worker`.
    pub fn new(worker: Worker) -> SharedWorker {
        let deadline = worker.options.deadline;
        SharedWorker { worker: Arc::new(Mutex::new(worker)), deadline, gate: Arc::new(tokio::sync::Semaphore::new(1)) }
    }

    /// The longest a call may take.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The admission gate a server passes before it hands a request to a blocking thread.
    pub fn gate(&self) -> &Arc<tokio::sync::Semaphore> {
        &self.gate
    }

    /// The running child's process id.
    pub fn pid(&self) -> Option<u32> {
        self.worker.try_lock_for(Duration::from_millis(100)).and_then(|worker| worker.pid())
    }

    /// Run one handler within the deadline, the wait for the worker included.
    pub fn call(&self, function: &str, request: &HandlerRequest, host: &mut dyn CtxHost) -> Result<HandlerOutcome, HandlerFailure> {
        self.call_until(function, request, host, Instant::now() + self.deadline)
    }

    /// Run one handler, giving up at `deadline` (a request's, counted from its arrival).
    pub fn call_until(
        &self,
        function: &str,
        request: &HandlerRequest,
        host: &mut dyn CtxHost,
        deadline: Instant,
    ) -> Result<HandlerOutcome, HandlerFailure> {
        let _span = tracing::info_span!("handler", function).entered();
        let wait = deadline.saturating_duration_since(Instant::now());
        let Some(mut worker) = self.worker.try_lock_for(wait) else {
            return Err(HandlerFailure::TimedOut(self.deadline));
        };
        worker.call_until(function, request, host, deadline)
    }
}

/// How the conversation with a worker broke down.
enum Broken {
    /// The pipes closed: the process is gone (or going).
    Ended,
    /// The call's deadline passed with no answer.
    TimedOut,
    /// It said something that is not the protocol.
    Protocol(String),
}

impl From<std::io::Error> for Broken {
    fn from(_: std::io::Error) -> Self {
        Broken::Ended
    }
}

/// How long a fresh worker may take to import the handlers and answer the check.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The world a handlers file belongs to, for log lines: `<world>/api/handlers.py` → `<world>`'s name.
fn world_name(handlers: &Path) -> String {
    let dir = handlers.parent().unwrap_or(Path::new(""));
    let world = if dir.file_name().is_some_and(|n| n == "api") { dir.parent().unwrap_or(dir) } else { dir };
    world.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn spawn(handlers: &Path, functions: &[String], options: &WorkerOptions) -> Result<Process, WorkerError> {
    let handlers = std::path::absolute(handlers).map_err(|e| WorkerError::Spawn(format!("{}: {e}", handlers.display())))?;
    let python = gateway_sandbox::interpreter(Path::new(PYTHON));
    let mut view = View::new();
    if let Some(dir) = handlers.parent() {
        view = view.read_only(dir);
    }
    for path in &options.sees {
        view = view.read_only(path);
    }
    // The clock a server was started with (tests, reproducible runs) is the worker's too.
    if let Some(clock) = std::env::var_os("GATEWAY_WORLD_CLOCK") {
        view = view.env("GATEWAY_WORLD_CLOCK", clock);
    }
    if !handlers.exists() && options.sandbox.is_confined() {
        return Err(WorkerError::Import(format!("FileNotFoundError: {} does not exist", handlers.display())));
    }
    let args: Vec<std::ffi::OsString> = vec!["-u".into(), "-c".into(), WORKER_SOURCE.into(), handlers.clone().into()];
    let mut command = options.sandbox.command(&python.executable, &args, &view).map_err(|error| WorkerError::Spawn(error.to_string()))?;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| WorkerError::Spawn(format!("{}: {error}", python.executable.display())))?;
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(WorkerError::Spawn("no pipes to the worker".into()));
    };
    forward_stderr(stderr, world_name(&handlers));
    let mut process = Process { child, stdin, lines: read_lines(stdout) };
    let check = Value::Array(functions.iter().map(|name| Value::str(name.as_str())).collect());
    // A worker whose import failed has already written its answer and may be gone:
    // a failed write is not the end of it, the answer is still to be read.
    let _ = process.send(&format!("{{\"op\":\"check\",\"functions\":{}}}", dumps(&check, WIRE)));
    let line = match process.receive(Instant::now() + START_TIMEOUT) {
        Ok(line) => line,
        Err(Broken::TimedOut) => {
            process.kill();
            return Err(WorkerError::Spawn(format!("the handlers did not load within {} s", START_TIMEOUT.as_secs())));
        }
        Err(_) => return Err(WorkerError::Spawn(process.finish())),
    };
    let answer = match parse(&line) {
        Ok(parsed) => parsed.value,
        Err(_) => {
            process.kill();
            return Err(WorkerError::Spawn(format!("unexpected worker answer: {line}")));
        }
    };
    match answer.get("ok") {
        Some(Value::Bool(true)) => Ok(process),
        _ => {
            let error = if let Some(name) = answer.get("missing") {
                WorkerError::Missing(name.as_str().unwrap_or_default().to_string())
            } else if let Some(text) = answer.get("error") {
                WorkerError::Import(text.as_str().unwrap_or_default().to_string())
            } else {
                WorkerError::Spawn(format!("unexpected worker answer: {line}"))
            };
            process.kill();
            Err(error)
        }
    }
}

/// The call request line.
fn call_line(function: &str, request: &HandlerRequest) -> String {
    let mut line = String::from("{\"op\":\"call\",\"function\":");
    write_string(&mut line, function, false);
    for (name, value) in [
        ("args", &request.args),
        ("query", &request.query),
        ("body", &request.body),
        ("headers", &request.headers),
        ("operation", &request.operation),
        ("context", &request.context),
    ] {
        line.push_str(",\"");
        line.push_str(name);
        line.push_str("\":");
        line.push_str(&dumps(value, WIRE));
    }
    line.push('}');
    line
}

/// One call: send the request, answer ctx calls until the final answer arrives.
/// `Ok` means the worker is still in step with the protocol (whatever the handler did).
fn exchange(
    process: &mut Process,
    function: &str,
    request: &HandlerRequest,
    host: &mut dyn CtxHost,
    traceback: &mut Option<String>,
    deadline: Instant,
) -> Result<Result<HandlerOutcome, HandlerFailure>, Broken> {
    process.send(&call_line(function, request))?;
    loop {
        let line = process.receive(deadline)?;
        let message = match parse(&line) {
            Ok(parsed) => parsed.value,
            Err(ParseError::DuplicateKey(name)) => {
                // Python can write an object twice under one name ({1: .., "1": ..}).
                let what = format!("ValueError: the handler's JSON repeats the member {name:?}");
                if line.starts_with("{\"ctx\":") {
                    let mut reply = String::from("{\"fail\":");
                    write_string(&mut reply, &what, false);
                    reply.push('}');
                    process.send(&reply)?;
                    continue;
                }
                return Ok(Err(HandlerFailure::Exception(what)));
            }
            Err(ParseError::Syntax(why)) => return Err(Broken::Protocol(format!("the worker wrote something that is not JSON ({why})"))),
        };
        let Value::Object(mut message) = message else {
            return Err(Broken::Protocol(format!("unexpected worker message: {line}")));
        };
        if let Some(method) = message.get("ctx") {
            let method = method.as_str().unwrap_or_default().to_string();
            let params = message.swap_remove("params").unwrap_or_default();
            let reply = match host.call(&method, &params) {
                Ok(value) => format!("{{\"ok\":{}}}", dumps(&value, WIRE)),
                Err(CtxError::Contract(detail)) => format!("{{\"error\":{}}}", dumps(&detail, WIRE)),
                Err(CtxError::Other(text)) => {
                    let mut reply = String::from("{\"fail\":");
                    write_string(&mut reply, &text, false);
                    reply.push('}');
                    reply
                }
            };
            process.send(&reply)?;
            continue;
        }
        if let Some(result) = message.swap_remove("result") {
            return Ok(outcome(result));
        }
        if let Some(detail) = message.swap_remove("contract_error") {
            return Ok(Err(HandlerFailure::Contract(detail)));
        }
        if let Some(text) = message.swap_remove("exception") {
            *traceback = message.swap_remove("traceback").and_then(|t| t.as_str().map(str::to_string));
            return Ok(Err(HandlerFailure::Exception(text.as_str().unwrap_or_default().to_string())));
        }
        return Err(Broken::Protocol(format!("unexpected worker message: {line}")));
    }
}

/// A `result` answer as an outcome.
fn outcome(result: Value) -> Result<HandlerOutcome, HandlerFailure> {
    let Value::Object(mut result) = result else {
        return Err(HandlerFailure::Exception("ValueError: malformed handler result".into()));
    };
    let body = result.swap_remove("body").unwrap_or_default();
    if result.get("kind").and_then(Value::as_str) != Some("tuple") {
        return Ok(HandlerOutcome::Body(body));
    }
    let status = match result.get("status") {
        Some(Value::Int(status)) => *status,
        Some(other) => {
            return Err(HandlerFailure::Exception(format!(
                "OverflowError: status {} out of range",
                gateway_world::json::python_repr(other)
            )))
        }
        None => return Err(HandlerFailure::Exception("ValueError: malformed handler result".into())),
    };
    let headers = match result.swap_remove("headers") {
        Some(Value::Object(map)) => Some(
            map.into_iter()
                .map(|(name, value)| match value {
                    Value::Str(text) => (name, text),
                    other => (name, gateway_world::json::python_str(&other)),
                })
                .collect(),
        ),
        _ => None,
    };
    Ok(HandlerOutcome::Answer { status, body, headers })
}

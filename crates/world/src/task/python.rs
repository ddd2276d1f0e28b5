//! The python grader: a task's `verify.py` run as a confined `python3` child over
//! the state dump, its last line of output read as the grade.
//!
//! Confined ([`GraderOptions::sandbox`], gateway-sandbox — what a hub and a host
//! always use), the child runs in a sandbox: an empty environment, no network, a
//! read-only view of its own directory and the Python runtime, a private `/tmp` as
//! its home, rlimits, a uid and a PID namespace of its own (a daemon it starts dies
//! with it at the timeout). Unconfined (a laptop without bubblewrap), it gets a
//! scrubbed environment (the interpreter's needs and a home of its own) and — where
//! the kernel lets an unprivileged `unshare -rn` (or, as root, `unshare -n`) run —
//! no network. Either way rlimits and a non-dumpable process are set by a small
//! prelude of ours, and its own process group is killed whole at the timeout. This module does not decide which script a session runs or when;
//! that is the host's.

use crate::json::{dumps, parse_loads, DumpOptions, Map, Value};
use crate::ContractError;
use gateway_sandbox::{Sandbox, View};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The timeout of a python grader that names none (and of a bundled `verify.py`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Most bytes of the grader's stdout kept (its tail: the grade is the last line).
const STDOUT_TAIL: usize = 8 << 20;
/// Most bytes of the grader's stderr kept (its tail: 800 characters are reported).
const STDERR_TAIL: usize = 64 << 10;
/// Environment variables the child inherits; everything else stays with us.
const INHERITED_ENV: [&str; 6] = ["PATH", "PYTHONPATH", "LANG", "LC_ALL", "TZ", "VIRTUAL_ENV"];

/// Runs before the grader's own code: caps memory, file size, open files and core
/// dumps (lowered to the hard limit where that is lower), makes the process
/// non-dumpable and its files private, then runs the script named next as
/// `__main__`.
macro_rules! limits {
    () => {
        r#"
import os, resource, runpy, sys
os.umask(0o077)
for _which, _cap in ((resource.RLIMIT_AS, 2048 << 20), (resource.RLIMIT_FSIZE, 4096 << 20),
                     (resource.RLIMIT_NOFILE, 4096), (resource.RLIMIT_CORE, 0)):
    try:
        _hard = resource.getrlimit(_which)[1]
        _value = _cap if _hard == resource.RLIM_INFINITY else min(_cap, _hard)
        resource.setrlimit(_which, (_value, _value))
    except (ValueError, OSError):
        pass
try:
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass
del _which, _cap
"#
    };
}
pub(super) use limits;

const PRELUDE: &str = concat!(
    limits!(),
    r#"sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"#
);

/// Which `verify.py` to run.
#[derive(Debug, Clone)]
pub enum PythonSource {
    /// A script on disk (a bundled `checks/verify.py`), run in its directory.
    File(PathBuf),
    /// Source text (a session task's grader), written to a private temporary
    /// directory and run there.
    Inline(String),
}

/// How the grader is run.
#[derive(Debug, Clone)]
pub struct GraderOptions {
    /// The interpreter (default `python3`, found on `PATH`). It is resolved once to
    /// the binary it runs (its `sys.executable`), so a launcher such as a pyenv
    /// shim neither adds its variables to the scrubbed environment nor its start-up
    /// to every grade.
    pub python: PathBuf,
    /// The child's `HOME` (default: a fresh temporary directory, removed after).
    pub home: Option<PathBuf>,
    /// Run without network where `unshare` allows it (default true; silently
    /// skipped where it does not). Unconfined runs only: a sandbox has no network.
    pub deny_network: bool,
    /// Confinement (gateway-sandbox): a hub's or host's graders always run confined
    /// (`Sandbox::default()`); the default here confines where this machine can
    /// ([`Sandbox::local`]) and otherwise runs scrubbed as above.
    pub sandbox: Sandbox,
}

impl Default for GraderOptions {
    fn default() -> Self {
        GraderOptions { python: PathBuf::from("python3"), home: None, deny_network: true, sandbox: Sandbox::local() }
    }
}

/// Why a python grader gave no grade. The messages are the original host's.
#[derive(Debug, thiserror::Error)]
pub enum GraderError {
    /// The script is not a file.
    #[error("the task's verify.py is missing at {}", .0.display())]
    Missing(PathBuf),
    /// The script ran past its timeout and was killed.
    #[error("verify.py timed out after {}s", format_g(.0.as_secs_f64()))]
    TimedOut(Duration),
    /// The script exited non-zero (negative: killed by that signal).
    #[error("verify.py exited {code}: {stderr}")]
    Exited {
        /// The exit status, `-signal` when killed.
        code: i32,
        /// The last 800 characters of its stripped stderr.
        stderr: String,
    },
    /// The last line of output is not JSON (or there is no output).
    #[error("verify.py printed no rewards JSON: {stdout}")]
    NoJson {
        /// The last 400 characters of its stripped stdout.
        stdout: String,
    },
    /// The last line is JSON but not an object.
    #[error("verify.py rewards output is not an object")]
    NotObject,
    /// The interpreter could not be started, or a pipe or temporary file failed.
    #[error("verify.py could not be run: {0}")]
    Launch(String),
}

impl GraderError {
    /// The refusal the original host reports (code `host`).
    pub fn to_contract_error(&self) -> ContractError {
        ContractError::new("host", self.to_string(), "")
    }
}

impl From<GraderError> for ContractError {
    fn from(error: GraderError) -> Self {
        error.to_contract_error()
    }
}

/// Run a python grader over `state` (sent on stdin as `json.dumps(state)`) with
/// the default options; see [`run_python_grader_with`].
pub fn run_python_grader(source: PythonSource, state: &Value, timeout: Duration) -> Result<Value, GraderError> {
    run_python_grader_with(source, state, timeout, &GraderOptions::default())
}

/// Run a python grader over `state` and read its grade: the last non-empty line
/// of stdout must be a JSON object; `reward` becomes a float when it is a number
/// (or a bool) and null otherwise, and every other member becomes a float or null
/// under `rewards`.
pub fn run_python_grader_with(
    source: PythonSource,
    state: &Value,
    timeout: Duration,
    options: &GraderOptions,
) -> Result<Value, GraderError> {
    let launch = |e: std::io::Error| GraderError::Launch(e.to_string());
    let scratch = tempfile::Builder::new().prefix("gateway-verify-").tempdir().map_err(launch)?;
    let script = script_path(source, scratch.path())?;
    let dump = dumps(state, DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false });
    let command = grader_command(PRELUDE, &[script.into_os_string()], options, scratch.path())?;
    let (status, stdout, stderr) = run_confined(command, dump.into_bytes(), timeout).map_err(|e| match e {
        Outcome::TimedOut => GraderError::TimedOut(timeout),
        Outcome::Io(error) => launch(error),
    })?;
    drop(scratch);
    let code = if status.success() { 0 } else { exit_code(status) };
    grade_printed(code, &decode(&stdout), &decode(&stderr))
}

/// The script a source names: a file as it is (absolute), or inline text written to
/// `checks/verify.py` under `scratch`.
pub(super) fn script_path(source: PythonSource, scratch: &Path) -> Result<PathBuf, GraderError> {
    let launch = |e: std::io::Error| GraderError::Launch(e.to_string());
    match source {
        PythonSource::File(path) => {
            if !path.is_file() {
                return Err(GraderError::Missing(path));
            }
            std::path::absolute(&path).map_err(launch)
        }
        PythonSource::Inline(text) => {
            let dir = scratch.join("checks");
            std::fs::create_dir_all(&dir).map_err(launch)?;
            let path = dir.join("verify.py");
            std::fs::write(&path, text).map_err(launch)?;
            Ok(path)
        }
    }
}

/// `python -c CODE ARGS…` as a grader runs: in the sandbox when `options` confine
/// (the script's directory — the first argument's parent — read-only, its cwd, the
/// sandbox's private /tmp as home), else scrubbed (the inherited variables only, a
/// home of its own under `scratch`, no network where `unshare` allows).
pub(super) fn grader_command(
    code: &str,
    args: &[std::ffi::OsString],
    options: &GraderOptions,
    scratch: &Path,
) -> Result<Command, GraderError> {
    let launch = |e: std::io::Error| GraderError::Launch(e.to_string());
    let script = args.first().map(PathBuf::from).unwrap_or_default();
    let cwd = script.parent().unwrap_or(Path::new("/")).to_path_buf();
    // The binary `python` runs as (its `sys.executable`, asked once per process): a
    // launcher such as a pyenv shim adds neither its variables nor its start-up.
    let python = gateway_sandbox::interpreter(&options.python);
    if options.sandbox.is_confined() {
        // The sandbox's own private /tmp is its home; it sees the script's directory
        // read-only and nothing of the session's or the hub's files.
        gateway_sandbox::share_read_only(&cwd).map_err(launch)?;
        let view = View::new().read_only(&cwd).cwd(&cwd).env("HOME", "/tmp");
        let mut full: Vec<std::ffi::OsString> = vec!["-c".into(), code.into()];
        full.extend(args.iter().cloned());
        return options.sandbox.command(&python.executable, &full, &view).map_err(|e| GraderError::Launch(e.to_string()));
    }
    let home = match &options.home {
        Some(home) => home.clone(),
        None => {
            let home = scratch.join("home");
            std::fs::create_dir_all(&home).map_err(launch)?;
            home
        }
    };
    let mut command = match options.deny_network.then(network_jail).flatten() {
        Some(jail) => {
            let mut command = Command::new("unshare");
            command.args(jail).arg("--").arg(&python.executable);
            command
        }
        None => Command::new(&python.executable),
    };
    command.arg("-c").arg(code).args(args).current_dir(&cwd).env_clear();
    for name in INHERITED_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.env("HOME", &home);
    Ok(command)
}

/// The grade a grader's run printed: its exit status, then the last non-empty line
/// of its stdout as a JSON object (see [`run_python_grader_with`]).
pub(super) fn grade_printed(code: i32, stdout: &str, stderr: &str) -> Result<Value, GraderError> {
    if code != 0 {
        return Err(GraderError::Exited { code, stderr: tail_chars(py_strip(stderr), 800) });
    }
    let stripped = py_strip(stdout);
    let no_json = || GraderError::NoJson { stdout: tail_chars(stripped, 400) };
    if stripped.is_empty() {
        return Err(no_json());
    }
    let last = stripped.rsplit(is_line_break).next().unwrap_or(stripped);
    let printed = parse_loads(last).map_err(|_| no_json())?.value;
    let Value::Object(printed) = printed else { return Err(GraderError::NotObject) };
    Ok(grade_of(&printed))
}

/// The runner's shape: the scalar under `reward`, every other member under `rewards`.
fn grade_of(printed: &Map) -> Value {
    let as_float = |value: &Value| match value {
        Value::Bool(b) => Value::Float(if *b { 1.0 } else { 0.0 }),
        Value::Int(n) => Value::Float(*n as f64),
        Value::Float(f) => Value::Float(*f),
        _ => Value::Null,
    };
    let rewards: Map = printed.iter().filter(|(key, _)| key.as_str() != "reward").map(|(k, v)| (k.clone(), as_float(v))).collect();
    let mut out = Map::default();
    out.insert("reward".into(), printed.get("reward").map(as_float).unwrap_or(Value::Null));
    out.insert("rewards".into(), Value::Object(rewards));
    Value::Object(out)
}

/// The `unshare` arguments that take the network away, if any work here (probed
/// once per process).
fn network_jail() -> Option<&'static [&'static str]> {
    static JAIL: OnceLock<Option<&'static [&'static str]>> = OnceLock::new();
    *JAIL.get_or_init(|| {
        const CANDIDATES: [&[&str]; 2] = [&["-rn"], &["-n"]];
        CANDIDATES.into_iter().find(|args| {
            Command::new("unshare")
                .args(*args)
                .args(["--", "true"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        })
    })
}

enum Outcome {
    TimedOut,
    Io(std::io::Error),
}

/// Spawn `command` in a process group of its own, feed it `input`, drain its
/// output (keeping the tails) and wait, all within `timeout`; past it the whole
/// group is killed.
fn run_confined(mut command: Command, input: Vec<u8>, timeout: Duration) -> Result<(ExitStatus, Vec<u8>, Vec<u8>), Outcome> {
    use std::os::unix::process::CommandExt;
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let deadline = Instant::now() + timeout;
    let mut child = command.spawn().map_err(Outcome::Io)?;
    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        // A grader that exits without reading its input closes the pipe: not an error.
        if let Some(pipe) = stdin.as_mut() {
            let _ = pipe.write_all(&input);
        }
    });
    let stdout = drain(child.stdout.take(), STDOUT_TAIL);
    let stderr = drain(child.stderr.take(), STDERR_TAIL);

    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) if stdout.is_finished() && stderr.is_finished() => break status,
            Ok(_) => {}
            Err(error) => {
                kill_group(&mut child);
                return Err(Outcome::Io(error));
            }
        }
        let now = Instant::now();
        if now >= deadline {
            kill_group(&mut child);
            return Err(Outcome::TimedOut);
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    let _ = writer.join();
    let collect = |handle: JoinHandle<Vec<u8>>| handle.join().unwrap_or_default();
    Ok((status, collect(stdout), collect(stderr)))
}

/// Read a pipe to its end on a thread, keeping only its last `cap` bytes.
fn drain<R: Read + Send + 'static>(pipe: Option<R>, cap: usize) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let Some(mut pipe) = pipe else { return Vec::new() };
        let mut kept: Vec<u8> = Vec::new();
        let mut buffer = [0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    kept.extend_from_slice(&buffer[..n]);
                    if kept.len() > 2 * cap {
                        kept.drain(..kept.len() - cap);
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if kept.len() > cap {
            kept.drain(..kept.len() - cap);
            // Do not start inside a UTF-8 sequence.
            let skip = kept.iter().take(3).take_while(|b| (**b & 0xC0) == 0x80).count();
            kept.drain(..skip);
        }
        kept
    })
}

/// Kill the child's whole process group (what it forked too), then the child.
pub(super) fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("kill").args(["-KILL", "--", &group]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
    let _ = child.kill();
    let _ = child.wait();
}

/// The status as Python's `returncode`: the exit code, or minus the signal.
pub(super) fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|signal| -signal)).unwrap_or(-1)
}

/// Output as Python's text-mode `subprocess` reads it: UTF-8 (lossy here, where
/// the original raises) with `\r\n` and `\r` read as `\n`.
pub(super) fn decode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace("\r\n", "\n").replace('\r', "\n")
}

/// Python's `str.isspace` for one character.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Python's `str.strip()`.
fn py_strip(text: &str) -> &str {
    text.trim_matches(py_space)
}

/// Where Python's `str.splitlines` breaks a line.
fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The last `n` characters of `text` (Python's `text[-n:]`).
fn tail_chars(text: &str, n: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(n)).collect()
}

/// Python's `format(x, "g")`: six significant digits, trailing zeros dropped,
/// scientific below 1e-4 and from 1e6.
pub(crate) fn format_g(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{x:.5e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if (-4..6).contains(&exponent) {
        let decimals = (5 - exponent).max(0) as usize;
        trim(format!("{x:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa.to_string()), exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_python() {
        for (x, text) in [
            (30.0, "30"),
            (0.5, "0.5"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (0.25, "0.25"),
            (123456.7, "123457"),
            (1234567.0, "1.23457e+06"),
            (0.000123, "0.000123"),
            (2.5e-7, "2.5e-07"),
            (29.9999999, "30"),
        ] {
            assert_eq!(format_g(x), text, "{x}");
        }
    }

    #[test]
    fn strip_and_lines_follow_python() {
        assert_eq!(py_strip("\x1c  {}\n\u{85}"), "{}");
        let text = "log\r\n{\"reward\": 1}";
        assert_eq!(text.rsplit(is_line_break).next(), Some("{\"reward\": 1}"));
        assert_eq!(tail_chars("héllo", 3), "llo");
    }

    #[test]
    fn grade_converts_as_the_original() {
        let printed = crate::json::parse_clean(r#"{"a": true, "reward": 1, "b": "x", "c": null, "d": 0.5}"#).unwrap();
        let grade = grade_of(printed.as_object().unwrap());
        let text = dumps(&grade, DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false });
        assert_eq!(text, r#"{"reward": 1.0, "rewards": {"a": 1.0, "b": null, "c": null, "d": 0.5}}"#);
    }
}

//! One python grader over many states in one confined worker (`regrade`: thousands of
//! stored final states re-scored without a process per state).
//!
//! The worker is a small loop of ours run by the same `python3` a single grade runs
//! (the same sandbox, rlimits and scrubbed environment, `grader_command`): it reads
//! one state dump per line on stdin and runs the script over it as `__main__` — stdin
//! the dump, stdout and stderr captured, `sys.exit` honoured, a per-state timer — then
//! writes one JSON line per state on a descriptor of its own (the script's writes to
//! fd 1 go nowhere). Each answer is read as a single run's output is, so a state gets
//! the grade (or the error) the one-process run gives it. A worker that dies or stops
//! answering within a state's timeout is killed; that state is reported (exited or
//! timed out) and a new worker takes the states after it.

use super::python::{decode, exit_code, grade_printed, grader_command, kill_group, limits, script_path};
use super::python::{GraderError, GraderOptions, PythonSource};
use crate::json::{parse_loads, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

/// What a worker's answer may take past the state's own timeout (the worker's timer
/// fires first; this only catches a worker that stopped answering at all).
const GRACE: Duration = Duration::from_secs(5);
/// Most bytes of a dead worker's stderr reported.
const STDERR_TAIL: usize = 64 << 10;

/// The worker's loop: argv = [script, timeout seconds].
const WORKER: &str = concat!(
    limits!(),
    r#"import io, json, signal, traceback
_proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
_script, _timeout = sys.argv[1], float(sys.argv[2])
class _TimedOut(BaseException):
    pass
def _alarm(signum, frame):
    raise _TimedOut()
signal.signal(signal.SIGALRM, _alarm)
_stdin, _stdout, _stderr = sys.stdin, sys.stdout, sys.stderr
while True:
    _line = _stdin.readline()
    if not _line:
        break
    _out, _err = io.StringIO(), io.StringIO()
    sys.stdin, sys.stdout, sys.stderr, sys.argv = io.StringIO(_line), _out, _err, [_script]
    _code = 0
    try:
        signal.setitimer(signal.ITIMER_REAL, _timeout)
        runpy.run_path(_script, run_name="__main__")
    except _TimedOut:
        _code = None
    except SystemExit as _exit:
        if _exit.code is None:
            _code = 0
        elif isinstance(_exit.code, int):
            _code = _exit.code
        else:
            print(_exit.code, file=_err)
            _code = 1
    except BaseException:
        traceback.print_exc(file=_err)
        _code = 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdin, sys.stdout, sys.stderr = _stdin, _stdout, _stderr
    _proto.write(json.dumps({"code": _code, "stdout": _out.getvalue()[-(8 << 20):], "stderr": _err.getvalue()[-65536:]}) + "\n")
    _proto.flush()
"#
);

/// Run one python grader over each of `states` (each a state dump as one line of
/// JSON, no newline inside) in as few worker processes as it takes: one, unless a
/// state kills or hangs its worker. The grades in `states`' order, each as
/// [`run_python_grader_with`](super::run_python_grader_with) would give it; `timeout`
/// is each state's.
pub fn run_python_graders(
    source: PythonSource,
    states: &[String],
    timeout: Duration,
    options: &GraderOptions,
) -> Vec<Result<Value, GraderError>> {
    let launch = |e: std::io::Error| GraderError::Launch(e.to_string());
    let prepared = tempfile::Builder::new()
        .prefix("gateway-verify-")
        .tempdir()
        .map_err(launch)
        .and_then(|scratch| script_path(source, scratch.path()).map(|script| (scratch, script)));
    let (scratch, script) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            let message = error.to_string();
            return states.iter().map(|_| Err(GraderError::Launch(message.clone()))).collect();
        }
    };
    let mut results: Vec<Result<Value, GraderError>> = Vec::with_capacity(states.len());
    while results.len() < states.len() {
        let from = results.len();
        let args = [script.clone().into_os_string(), timeout.as_secs_f64().to_string().into()];
        let answered =
            grader_command(WORKER, &args, options, scratch.path()).and_then(|command| run_worker(command, &states[from..], timeout));
        match answered {
            Ok(mut grades) => results.append(&mut grades),
            // A worker that cannot start fails every state left the same way.
            Err(error) => {
                let message = error.to_string();
                results.extend(states[from..].iter().map(|_| Err(GraderError::Launch(message.clone()))));
            }
        }
    }
    results
}

/// One worker over `states`: the grades it gave, in order; when it dies or hangs,
/// the grades before it and the state it died on (so the caller starts a new one after).
fn run_worker(
    mut command: std::process::Command,
    states: &[String],
    timeout: Duration,
) -> Result<Vec<Result<Value, GraderError>>, GraderError> {
    use std::os::unix::process::CommandExt;
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = command.spawn().map_err(|e| GraderError::Launch(e.to_string()))?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let (sender, answers) = mpsc::channel::<String>();
    let mut grades = Vec::with_capacity(states.len());
    std::thread::scope(|scope| {
        scope.spawn(move || {
            // A worker killed mid-way closes the pipe: not an error here.
            if let Some(mut pipe) = stdin {
                for state in states {
                    if pipe.write_all(state.as_bytes()).and_then(|_| pipe.write_all(b"\n")).is_err() {
                        break;
                    }
                }
            }
        });
        scope.spawn(move || {
            let Some(pipe) = stdout else { return };
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let errors = scope.spawn(move || {
            let mut kept = Vec::new();
            if let Some(pipe) = stderr.as_mut() {
                let _ = pipe.take(16 * STDERR_TAIL as u64).read_to_end(&mut kept);
            }
            kept
        });
        for _ in states {
            match answers.recv_timeout(timeout + GRACE) {
                Ok(line) => grades.push(read_answer(&line, timeout)),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    kill_group(&mut child);
                    grades.push(Err(GraderError::TimedOut(timeout)));
                    break;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait().map(exit_code).unwrap_or(-1);
                    let kept = errors.join().unwrap_or_default();
                    let text = decode(&kept[kept.len().saturating_sub(STDERR_TAIL)..]);
                    let code = if status == 0 { 1 } else { status };
                    grades.push(grade_printed(code, "", &text));
                    return;
                }
            }
        }
        kill_group(&mut child);
    });
    Ok(grades)
}

/// One answer line of the worker: `{code, stdout, stderr}` (`code` null: timed out).
fn read_answer(line: &str, timeout: Duration) -> Result<Value, GraderError> {
    let answer = parse_loads(line).map(|p| p.value).map_err(|_| GraderError::Launch("the grading worker answered garbage".into()))?;
    let text = |key: &str| answer.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    match answer.get("code") {
        Some(Value::Int(code)) => grade_printed(i32::try_from(*code).unwrap_or(1), &text("stdout"), &text("stderr")),
        _ => Err(GraderError::TimedOut(timeout)),
    }
}

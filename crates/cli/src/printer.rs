//! Everything `gateway` says goes through here: JSON in the original's three spellings,
//! lines on stdout (results) and stderr (notes, refusals). A closed pipe (`| head`)
//! ends the output quietly instead of panicking as `println!` would.

use gateway_world::json::{dumps, DumpOptions, Value};
use std::fmt::Display;
use std::io::Write;

/// `json.dumps(x)`: Python's default separators, one line.
pub const PYTHON: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false };

/// `json.dumps(x, indent=2)` on stdout: what most commands print.
pub fn json(value: &Value) {
    out_line(format_args!("{}", dumps(value, DumpOptions::PRETTY)));
}

/// The offline schema commands' one-line JSON (`{"status": "ok", …}`) on stdout.
pub fn json_line(value: &Value) {
    out_line(format_args!("{}", dumps(value, DumpOptions::CLI)));
}

/// `json.dumps(x)` (one line, Python's separators) on stdout.
pub fn json_python(value: &Value) {
    out_line(format_args!("{}", dumps(value, PYTHON)));
}

/// One line on stdout.
pub fn out_line(line: impl Display) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// Text on stdout as it is (no newline added), flushed (a prompt, a file's text).
pub fn out_text(text: impl Display) {
    let mut stdout = std::io::stdout().lock();
    let _ = write!(stdout, "{text}");
    let _ = stdout.flush();
}

/// One line on stderr.
pub fn err_line(line: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Text on stderr as it is (no newline added), flushed.
pub fn err_text(text: impl Display) {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{text}");
    let _ = stderr.flush();
}

/// `Error: …` on stderr: the line click prints for an error it caught.
pub fn error(message: impl Display) {
    err_line(format_args!("Error: {message}"));
}

/// `println!` through the printer.
macro_rules! outln {
    () => { $crate::printer::out_line("") };
    ($($arg:tt)*) => { $crate::printer::out_line(format_args!($($arg)*)) };
}

/// `eprintln!` through the printer.
macro_rules! errln {
    () => { $crate::printer::err_line("") };
    ($($arg:tt)*) => { $crate::printer::err_line(format_args!($($arg)*)) };
}

/// `print!` through the printer (flushed).
macro_rules! out {
    ($($arg:tt)*) => { $crate::printer::out_text(format_args!($($arg)*)) };
}

/// `eprint!` through the printer (flushed).
macro_rules! err {
    ($($arg:tt)*) => { $crate::printer::err_text(format_args!($($arg)*)) };
}

pub(crate) use {err, errln, out, outln};

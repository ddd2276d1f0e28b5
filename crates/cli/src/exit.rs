//! The exit statuses of `gateway`: one table of what each code means, used instead
//! of literal numbers (and by the "Exit status:" sections of `--help`).
//!
//! The original CLI gives a code several meanings depending on the command (2 is a
//! usage error almost everywhere, "some row was refused" for `worlds data check`,
//! "untested" for `release gate`); each meaning has its own name here so the code
//! that ends a command says which one it means.

use std::process::ExitCode;

/// An exit status with a meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(u8);

impl Status {
    /// Done as asked.
    pub const OK: Status = Status(0);
    /// A refusal, a failed request or an error (one line on stderr, or the original's
    /// JSON envelope on stdout for the offline schema commands).
    pub const FAILED: Status = Status(1);
    /// A usage error: clap's (unknown flag, bad value, missing argument) or one of the
    /// original's own usage refusals.
    pub const USAGE: Status = Status(2);
    /// `worlds data check|import`: the rows were read and at least one was refused.
    pub const ROWS_REFUSED: Status = Status(2);
    /// `worlds run|ci`, `bench eval`: the graded reward landed under `--fail-under`.
    pub const UNDER_BAR: Status = Status(1);
    /// `release gate`: the build is blocked.
    pub const BLOCKED: Status = Status(1);
    /// `release gate`: the build is untested, or no such build.
    pub const UNTESTED: Status = Status(2);

    /// The number the process exits with.
    pub const fn code(self) -> u8 {
        self.0
    }

    /// The status of a number a library computed (a gate's verdict).
    pub const fn from_code(code: u8) -> Status {
        Status(code)
    }
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status.0)
    }
}

/// The "Exit status:" section of a command's help: one line per status.
pub fn section(rows: &[(Status, &str)]) -> String {
    let mut text = String::from("Exit status:");
    for (status, meaning) in rows {
        text.push_str(&format!("\n  {}  {meaning}", status.code()));
    }
    text
}

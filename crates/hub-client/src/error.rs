//! The clients' error types: why a call to a hub, or the local work around it (a push's
//! bundle, a pull's extraction, a wheel), failed ([`ClientError`]); and the session
//! client's own [`SessionError`] (the original's `WorldSessionError` /
//! `WorldSessionTimeout`). Every variant's text is what the CLI prints after `Error: `,
//! worded as the original words it.

use gateway_bundle::BundleError;
use std::path::Path;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No hub to talk to or no key pair to talk with (`GATEWAY_HOST`,
    /// `GATEWAY_PUBLIC_KEY`, `GATEWAY_SECRET_KEY`), or no HTTP client to talk through.
    #[error("{0}")]
    Setup(String),
    /// A request that could not be sent, or whose answer could not be read
    /// (`"<METHOD> <path> -> <reason>"`).
    #[error("{0}")]
    Unreachable(String),
    /// The hub, or an object URL it signed, answered with an error status
    /// (`"<METHOD> <path> -> <code>: <body>"`).
    #[error("{0}")]
    Refused(String),
    /// A success whose body is not what it must be: not JSON, or without a member it
    /// must carry.
    #[error("{0}")]
    BadAnswer(String),
    /// What a flow itself refuses: a world that does not check, a drifted base, nothing
    /// to propose, an integrity check that failed, a caller's mistake… (the original's
    /// `BenchmarkPushError` and its friends).
    #[error("{0}")]
    Failed(String),
    /// A wheel that could not be built or read (`bench push --build-wheel`).
    #[error("{0}")]
    Wheel(String),
    /// A bundle that could not be built, read or extracted.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// A file system failure at a path.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl ClientError {
    /// An I/O error at a path.
    pub fn io(path: &Path, source: std::io::Error) -> ClientError {
        ClientError::Io { path: path.display().to_string(), source }
    }
}

/// An error and its causes, joined (reqwest's own text stops at the outermost).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// Why a session or task call failed; the text is what the original prints.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A refusal, a failed request (`"<METHOD> <path> -> <code>: <body>"`), a call's
    /// own error, or a caller mistake (the original's `WorldSessionError` / `ValueError`).
    #[error("{0}")]
    Failed(String),
    /// The container or the judge did not answer within the budget (`WorldSessionTimeout`).
    #[error("{0}")]
    Timeout(String),
}

//! The bundle crate's error type: what building, reading or extracting a world bundle
//! refuses, each kind of failure its own variant so a server can answer each with its
//! status and a client can word it (gateway-hub maps it onto `HubError`).

use std::path::Path;

/// Why a bundle could not be built, read or extracted.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// An archive that would write outside its destination, holds a link or a special
    /// member, or is not a readable `.tar.gz` (the server answers 400 `unsafe_archive`).
    #[error("{0}")]
    UnsafeArchive(String),
    /// An archive past one of the [`crate::extract::ExtractLimits`]: members, unpacked
    /// bytes in all or per member, compression ratio (the server answers 413).
    #[error("{0}")]
    TooLarge(String),
    /// A world whose top level holds a symbolic link to a directory: a push never
    /// follows links out of the world.
    #[error(
        "refusing to push {path}: it is a symlink to a directory ({target}); a push never follows links out of the world — copy the files in or remove the link"
    )]
    LinkedDirectory {
        /// The link, relative to the world's root.
        path: String,
        /// Where it points, as the link says.
        target: String,
    },
    /// A `GATEWAY_ARCHIVE_MAX_*` variable that is not a positive number.
    #[error("{name} must be a positive {expected}, not {given:?}")]
    BadLimit {
        /// The variable.
        name: String,
        /// What it must be (`whole number`, `size (like 4GiB or 1000000)`).
        expected: &'static str,
        /// What it is.
        given: String,
    },
    /// A pass bar a manifest names that is not a number from 0 to 1 (the text names the
    /// manifest and the member).
    #[error("{0}")]
    InvalidPassBar(String),
    /// A file system failure at a path.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl BundleError {
    /// An I/O error at a path.
    pub fn io(path: &Path, source: std::io::Error) -> BundleError {
        BundleError::Io { path: path.display().to_string(), source }
    }
}

//! What can go wrong preparing a base or an overlay (the VFS itself answers SQLite
//! with its result codes).

use std::path::PathBuf;

/// A base or overlay that could not be opened or created.
#[derive(Debug, thiserror::Error)]
pub enum CowError {
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The base is not a SQLite database file.
    #[error("{0} is not a SQLite database")]
    NotSqlite(PathBuf),
    /// The base has a write-ahead log beside it: the file alone is not the database.
    #[error("{0} has a write-ahead log with frames in it; checkpoint it before sharing it")]
    BaseHasWal(PathBuf),
    /// The overlay file is not one this crate wrote, or was written over another page size.
    #[error("{0} is not an overlay of this base")]
    NotOverlay(PathBuf),
    /// An overlay is already open at that path in this process.
    #[error("an overlay is already open at {0}")]
    AlreadyOpen(PathBuf),
    /// SQLite refused to register the VFS.
    #[error("the copy-on-write VFS could not be registered (SQLite result {0})")]
    Register(i32),
    /// SQLite refused the page-cache wrapper (it was already in use).
    #[error("the page cache could not be installed (SQLite result {0}): SQLite was already in use")]
    PageCache(i32),
}

impl CowError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> CowError {
        CowError::Io { path: path.to_path_buf(), source }
    }
}

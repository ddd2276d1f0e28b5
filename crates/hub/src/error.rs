//! The hub's error type: every refusal of the server and every failure of its store.
//! The clients have their own (`gateway_hub_client::ClientError`); a bundle's refusals
//! (`gateway_bundle::BundleError`) map onto the statuses the server answered for them
//! before the bundle format was a crate of its own.

use std::path::Path;

/// What went wrong, with the HTTP status the server answers for it.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// Missing or wrong credentials (401).
    #[error("{0}")]
    Unauthorized(String),
    /// A request that is malformed or refers to something invalid (400).
    #[error("{0}")]
    BadRequest(String),
    /// Something that does not exist, or belongs to another project (404).
    #[error("{0}")]
    NotFound(String),
    /// A state conflict: a moved branch tip, an existing ref or slug (409).
    #[error("{0}")]
    Conflict(String),
    /// A body over the size limit (413).
    #[error("{0}")]
    TooLarge(String),
    /// A quota or rate limit reached: a project's open sessions, sign-in failures (429).
    #[error("{0}")]
    TooMany(String),
    /// An object upload whose checksum does not match its body (400, `BadDigest`).
    #[error("{0}")]
    BadDigest(String),
    /// A tarball that would write outside its destination, or is unreadable.
    #[error("{0}")]
    UnsafeArchive(String),
    /// A setting of the hub's own environment that cannot be used (a
    /// `GATEWAY_ARCHIVE_MAX_*` that is not a positive number): the server's fault (500).
    #[error("{0}")]
    Setting(String),
    /// A file system failure.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A storage back end failure (database or object store).
    #[error("storage: {0}")]
    Storage(String),
    /// World code cannot be run confined here (a hub then refuses to serve).
    #[error(transparent)]
    Confinement(#[from] gateway_sandbox::SandboxError),
}

impl HubError {
    /// An I/O error at a path.
    pub fn io(path: &Path, source: std::io::Error) -> HubError {
        HubError::Io { path: path.display().to_string(), source }
    }

    /// The HTTP status code the server answers with.
    pub fn status(&self) -> u16 {
        match self {
            HubError::Unauthorized(_) => 401,
            HubError::BadRequest(_) | HubError::BadDigest(_) | HubError::UnsafeArchive(_) => 400,
            HubError::NotFound(_) => 404,
            HubError::Conflict(_) => 409,
            HubError::TooLarge(_) => 413,
            HubError::TooMany(_) => 429,
            HubError::Setting(_) | HubError::Io { .. } | HubError::Storage(_) | HubError::Confinement(_) => 500,
        }
    }

    /// The short machine-readable `error` member of an error answer.
    pub fn code(&self) -> &'static str {
        match self {
            HubError::Unauthorized(_) => "unauthorized",
            HubError::BadRequest(_) => "bad_request",
            HubError::BadDigest(_) => "BadDigest",
            HubError::UnsafeArchive(_) => "unsafe_archive",
            HubError::NotFound(_) => "not_found",
            HubError::Conflict(_) => "conflict",
            HubError::TooLarge(_) => "payload_too_large",
            HubError::TooMany(_) => "too_many_requests",
            HubError::Setting(_) | HubError::Io { .. } | HubError::Storage(_) | HubError::Confinement(_) => "internal",
        }
    }
}

impl From<rusqlite::Error> for HubError {
    fn from(error: rusqlite::Error) -> Self {
        HubError::Storage(error.to_string())
    }
}

impl From<gateway_bundle::BundleError> for HubError {
    /// The statuses and codes the server answered before the bundle format was a crate
    /// of its own: an unsafe archive 400 `unsafe_archive`, one past a limit 413, a bad
    /// limit setting and a file system failure 500 `internal`; the text unchanged.
    fn from(error: gateway_bundle::BundleError) -> Self {
        use gateway_bundle::BundleError as B;
        match error {
            B::UnsafeArchive(message) => HubError::UnsafeArchive(message),
            B::LinkedDirectory { .. } => HubError::UnsafeArchive(error.to_string()),
            B::TooLarge(message) => HubError::TooLarge(message),
            B::BadLimit { .. } => HubError::Setting(error.to_string()),
            B::InvalidPassBar(message) => HubError::BadRequest(message),
            B::Io { path, source } => HubError::Io { path, source },
        }
    }
}

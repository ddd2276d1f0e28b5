//! The store's error type: every failure of a metadata or object store, of the key
//! material, and the refusals a store decides itself (a moved branch tip, a taken slug,
//! a record that is not there).
//!
//! Its text is, word for word, what the hub answers with: the server (`gateway-hub`)
//! lifts the refusal classes into its own `HubError` variants of the same name and
//! wraps the rest, answered as 500s.

use std::path::Path;

/// Results of storage calls (the metadata and object stores').
pub type StoreResult<T> = Result<T, StoreError>;

/// What went wrong in storage.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A request that is malformed or refers to something invalid (400).
    #[error("{0}")]
    BadRequest(String),
    /// Something that does not exist, or belongs to another project (404).
    #[error("{0}")]
    NotFound(String),
    /// A thing the project does not have (404): `no agent 'ag_…' in this project`.
    /// Another project's is missing too: its existence is not told.
    #[error("no {kind} '{id}' in this project")]
    Missing {
        /// What it is (`run`, `evaluation`, …).
        kind: &'static str,
        /// The id (or slug) asked for.
        id: String,
    },
    /// A state conflict: a moved branch tip, an existing ref or slug (409).
    #[error("{0}")]
    Conflict(String),
    /// A file system failure.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The SQLite metadata store failed.
    #[error("storage: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The PostgreSQL metadata store failed.
    #[error("storage: postgres: {0}")]
    Postgres(#[from] sqlx::Error),
    /// The S3-compatible object store failed.
    #[error("storage: object store: {0}")]
    Objects(#[from] object_store::Error),
    /// A sealed secret or a key file the hub's keys cannot work with.
    #[error("storage: {0}")]
    Secret(#[from] SecretFailure),
    /// The PostgreSQL metadata store could not be reached at startup.
    #[error("storage: cannot connect to PostgreSQL at {url}: {source}")]
    ConnectPostgres {
        /// The database URL, its password redacted.
        url: String,
        /// Why the connection failed.
        source: sqlx::Error,
    },
    /// The bucket of `--objects` does not answer at startup.
    #[error(
        "storage: the bucket of --objects {url} does not answer: {source}. Check that the bucket exists and that \
         AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and the endpoint and region) are right"
    )]
    BucketSilent {
        /// The `--objects` URL.
        url: String,
        /// The probe's failure.
        source: object_store::Error,
    },
    /// A multipart upload to the object store failed while `step` (`storing`,
    /// `abandoning`) `what` (a key in a bucket).
    #[error("storage: {step} {what}: {source}")]
    Upload {
        /// What the writer was doing.
        step: &'static str,
        /// The key and its bucket.
        what: String,
        /// The object store's failure.
        source: object_store::Error,
    },
    /// The SQLite connection's lock was poisoned by a panic.
    #[error("storage: database lock poisoned")]
    LockPoisoned,
    /// A record read back inside the transaction that wrote it was not there:
    /// `version`, `ref`, `run`, …
    #[error("storage: {0} vanished")]
    Vanished(&'static str),
    /// A blocking worker that stopped before it answered: a panic, or the runtime
    /// shutting down.
    #[error("storage: {0}")]
    Worker(#[from] tokio::task::JoinError),
}

impl StoreError {
    /// An I/O error at a path.
    pub fn io(path: &Path, source: std::io::Error) -> StoreError {
        StoreError::Io { path: path.display().to_string(), source }
    }

    /// A thing this project does not have.
    pub fn missing(kind: &'static str, id: impl Into<String>) -> StoreError {
        StoreError::Missing { kind, id: id.into() }
    }

    /// The class of the failure as an HTTP status: the refusals' (400, 404, 409), else 500.
    pub fn status(&self) -> u16 {
        match self {
            StoreError::BadRequest(_) => 400,
            StoreError::NotFound(_) | StoreError::Missing { .. } => 404,
            StoreError::Conflict(_) => 409,
            StoreError::Io { .. }
            | StoreError::Sqlite(_)
            | StoreError::Postgres(_)
            | StoreError::Objects(_)
            | StoreError::Secret(_)
            | StoreError::ConnectPostgres { .. }
            | StoreError::BucketSilent { .. }
            | StoreError::Upload { .. }
            | StoreError::LockPoisoned
            | StoreError::Vanished(_)
            | StoreError::Worker(_) => 500,
        }
    }

    /// Whether it is a lookup that found nothing (of this project).
    pub fn is_not_found(&self) -> bool {
        self.status() == 404
    }
}

/// Why a secret could not be sealed or opened, or a key file read.
#[derive(Debug, thiserror::Error)]
pub enum SecretFailure {
    /// A key file that is not 32 bytes.
    #[error("{0} is not a 32-byte key")]
    KeyFile(String),
    /// A secrets key the cipher does not take.
    #[error("Invalid Length")]
    KeyLength,
    /// The cipher refused to seal.
    #[error("encryption failed")]
    Encrypt,
    /// A sealed value shorter than its nonce.
    #[error("sealed secret too short")]
    TooShort,
    /// A sealed value this hub's key does not open (another hub's, or altered).
    #[error("secret does not decrypt with this hub's key")]
    WrongKey,
}

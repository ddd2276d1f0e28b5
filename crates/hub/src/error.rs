//! The hub's error type: every refusal of the server and every failure of its store.
//! The clients have their own (`gateway_hub_client::ClientError`), the store its own
//! ([`StoreError`], which this type lifts or wraps without changing a word).
//!
//! A variant says what failed: a thing the project does not have (by kind and id), a
//! route nobody serves, the world engine's refusal, a bundle's, a storage back end's
//! (SQLite, PostgreSQL, the object store: [`HubError::Store`]), a worker that stopped;
//! the plain classes (`BadRequest`, `Conflict`, …) carry the refusals whose words are
//! their own (the store's among them). Each has one HTTP status and code
//! ([`HubError::status`], [`HubError::code`]); its text is the
//! `message` of the answer, word for word what the server said before it had variants.

use gateway_hub_store::StoreError;
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
    /// A thing the request's project does not have (404): `no world task 'wt_…' in
    /// this project`. Another project's is missing too: its existence is not told.
    #[error("no {kind} '{id}' in this project")]
    Missing {
        /// What it is (`world session`, `run`, `evaluation`, …).
        kind: &'static str,
        /// The id (or slug) asked for.
        id: String,
    },
    /// A method and path no route serves (404).
    #[error("no route for {method} {path}")]
    NoRoute {
        /// The request's method.
        method: String,
        /// The path as the route families see it.
        path: String,
    },
    /// A JSON Schema the body's `member` carries that does not compile (400).
    #[error("'{member}' is not a valid JSON Schema: {reason}")]
    InvalidSchema {
        /// The body's member (`taskInputSchema`).
        member: &'static str,
        /// What the schema compiler said.
        reason: String,
    },
    /// A regrade whose stored task cannot score (400): no such version, a spec that does
    /// not parse.
    #[error(transparent)]
    Unscorable(#[from] crate::regrade::Unscored),
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
    /// The world engine refused a world or its rows (400), while doing `what`: a
    /// version that does not compile, a batch that cannot apply.
    #[error("{what}: {source}")]
    Engine {
        /// What the hub was doing (`the world does not compile`, …).
        what: String,
        /// The engine's refusal (boxed: it is the largest of the variants).
        #[source]
        source: Box<gateway_world::Error>,
    },
    /// The world engine refused a world or its rows, in its own words (400).
    #[error(transparent)]
    World(#[from] gateway_world::Error),
    /// A bundle the hub cannot take or read: an unsafe archive (400 `unsafe_archive`),
    /// one past a limit (413), a bad `GATEWAY_ARCHIVE_MAX_*` setting (500), an invalid
    /// pass bar (400), I/O (500) — the statuses the server answered before the bundle
    /// format was a crate of its own.
    #[error(transparent)]
    Bundle(#[from] gateway_bundle::BundleError),
    /// A file system failure.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A storage failure the other variants do not name (500).
    #[error("storage: {0}")]
    Storage(String),
    /// A failure of the metadata or object store, or of the keys (500); the store's
    /// refusals (400, 404, 409) and I/O failures are lifted into this type's own
    /// variants instead (`From<StoreError>`), so a match on `Conflict` sees them.
    #[error(transparent)]
    Store(StoreError),
    /// A stored object whose bytes do not match the digest it was stored under (500):
    /// `what` (a chunk, a snapshot) against its `digest` (`sha256`, …).
    #[error("storage: {what} does not match its {digest}")]
    Mismatch {
        /// The object, as the message names it.
        what: String,
        /// What it was checked against.
        digest: &'static str,
    },
    /// The hub could not listen on its address (500).
    #[error("storage: bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why the bind failed.
        source: std::io::Error,
    },
    /// The server stopped on an I/O failure of its listener (500).
    #[error("storage: {0}")]
    Serve(#[source] std::io::Error),
    /// A scratch directory could not be made (500).
    #[error("storage: {0}")]
    Scratch(#[from] gateway_common::fs::PathError),
    /// A call for the embedded World Host on a hub that runs none (500).
    #[error("storage: this hub runs no embedded World Host")]
    NoEmbeddedHost,
    /// The embedded host's data plane gave no answer to a request it was routed (500).
    #[error("storage: the session's host did not answer")]
    HostSilent,
    /// A stored bundle read from a thread with no async runtime to read the object
    /// store on (500).
    #[error("storage: no async runtime to read the object store on")]
    NoRuntime,
    /// A stored version the version cache could not prepare (500).
    #[error("storage: {0}")]
    Prepare(#[source] gateway_host::version::PrepareError),
    /// An object the metadata names that the object store does not hold (500).
    #[error("storage: object {0} is missing from the store")]
    MissingObject(String),
    /// A stored document that is not the JSON object it was written as (500).
    #[error("storage: {0} is not a JSON object")]
    Corrupt(String),
    /// A blocking worker that stopped before it answered: a panic, or the runtime
    /// shutting down (500).
    #[error("storage: {0}")]
    Worker(#[from] tokio::task::JoinError),
    /// The same, in a step the message names (`world data worker`, `bundle reader`…).
    #[error("storage: {what}: {source}")]
    WorkerIn {
        /// The step whose worker stopped.
        what: &'static str,
        /// Why it stopped.
        source: tokio::task::JoinError,
    },
    /// World code cannot be run confined here (a hub then refuses to serve).
    #[error(transparent)]
    Confinement(#[from] gateway_sandbox::SandboxError),
    /// A platform a World Host reports to could not be reached (a heartbeat; never an
    /// answer of this server's).
    #[error("{0}")]
    Unreachable(#[from] reqwest::Error),
    /// A platform that answered a host's heartbeat with an error status.
    #[error("the platform answered {0}")]
    PlatformRefused(reqwest::StatusCode),
}

impl HubError {
    /// An I/O error at a path.
    pub fn io(path: &Path, source: std::io::Error) -> HubError {
        HubError::Io { path: path.display().to_string(), source }
    }

    /// The world engine's refusal while doing `what`.
    pub fn engine(what: impl Into<String>, source: gateway_world::Error) -> HubError {
        HubError::Engine { what: what.into(), source: Box::new(source) }
    }

    /// A thing this project does not have.
    pub fn missing(kind: &'static str, id: impl Into<String>) -> HubError {
        HubError::Missing { kind, id: id.into() }
    }

    /// No route serves `method` on `path`.
    pub fn no_route(method: impl std::fmt::Display, path: impl Into<String>) -> HubError {
        HubError::NoRoute { method: method.to_string(), path: path.into() }
    }

    /// Whether the answer is 404: a lookup that found nothing (of this project).
    pub fn is_not_found(&self) -> bool {
        self.status() == 404
    }

    /// The HTTP status code the server answers with.
    pub fn status(&self) -> u16 {
        use gateway_bundle::BundleError as B;
        match self {
            HubError::Unauthorized(_) => 401,
            HubError::BadRequest(_) | HubError::BadDigest(_) | HubError::InvalidSchema { .. } | HubError::Unscorable(_) => 400,
            HubError::Engine { .. } | HubError::World(_) => 400,
            HubError::Bundle(B::UnsafeArchive(_) | B::LinkedDirectory { .. } | B::InvalidPassBar(_)) => 400,
            HubError::NotFound(_) | HubError::Missing { .. } | HubError::NoRoute { .. } => 404,
            HubError::Conflict(_) => 409,
            HubError::TooLarge(_) | HubError::Bundle(B::TooLarge(_)) => 413,
            HubError::TooMany(_) => 429,
            HubError::Unreachable(_) | HubError::PlatformRefused(_) => 502,
            HubError::Bundle(B::BadLimit { .. } | B::Io { .. })
            | HubError::Io { .. }
            | HubError::Storage(_)
            | HubError::MissingObject(_)
            | HubError::Mismatch { .. }
            | HubError::Bind { .. }
            | HubError::Serve(_)
            | HubError::Scratch(_)
            | HubError::NoEmbeddedHost
            | HubError::HostSilent
            | HubError::NoRuntime
            | HubError::Prepare(_)
            | HubError::Corrupt(_)
            | HubError::Worker(_)
            | HubError::WorkerIn { .. }
            | HubError::Confinement(_) => 500,
            HubError::Store(error) => error.status(),
        }
    }

    /// The short machine-readable `error` member of an error answer.
    pub fn code(&self) -> &'static str {
        use gateway_bundle::BundleError as B;
        match self {
            HubError::Unauthorized(_) => "unauthorized",
            HubError::Bundle(B::UnsafeArchive(_) | B::LinkedDirectory { .. }) => "unsafe_archive",
            HubError::BadDigest(_) => "BadDigest",
            HubError::Unreachable(_) | HubError::PlatformRefused(_) => "bad_gateway",
            _ => match self.status() {
                400 => "bad_request",
                404 => "not_found",
                409 => "conflict",
                413 => "payload_too_large",
                429 => "too_many_requests",
                _ => "internal",
            },
        }
    }
}

impl From<StoreError> for HubError {
    /// The store's refusals and I/O failures as this type's variants of the same name
    /// (same words, same status); every other failure wrapped as it is.
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::BadRequest(message) => HubError::BadRequest(message),
            StoreError::NotFound(message) => HubError::NotFound(message),
            StoreError::Missing { kind, id } => HubError::Missing { kind, id },
            StoreError::Conflict(message) => HubError::Conflict(message),
            StoreError::Io { path, source } => HubError::Io { path, source },
            other => HubError::Store(other),
        }
    }
}

impl From<rusqlite::Error> for HubError {
    /// A SQLite failure outside the metadata store (a snapshot read), worded as the store's.
    fn from(error: rusqlite::Error) -> Self {
        HubError::Store(error.into())
    }
}

impl From<gateway_world::ContractError> for HubError {
    /// The engine's contract refusal, in its own words (400).
    fn from(error: gateway_world::ContractError) -> Self {
        HubError::World(error.into())
    }
}

//! Storage behind traits: [`MetaStore`] keeps the metadata (projects and keys,
//! containers, versions, refs, proposals, secrets, run configs) and [`ObjectStore`]
//! keeps the bundles. The server only talks to these traits; SQLite
//! ([`crate::sqlite::SqliteStore`]) and a local directory ([`LocalObjects`]) are the
//! defaults. Every state change is durable before the call returns.

use crate::error::StoreError;
use async_trait::async_trait;
use bytes::Bytes;
use std::path::{Path, PathBuf};

pub(crate) mod records;

pub use crate::error::StoreResult;
pub use records::{cas_decision, fork_slug_taken, Container, Finalized, Proposal, Ref, SecretInfo, Version, VersionFilter, WheelDecl};

/// The metadata store (evaluations and the environment views' reads included: see
/// [`crate::evaluations::EvaluationStore`]; the agents platform: [`crate::agents::AgentStore`];
/// workspace connectors: [`crate::connectors::ConnectorStore`]; world data batches:
/// [`crate::world_data::WorldDataStore`]).
#[async_trait]
pub trait MetaStore:
    crate::evaluations::EvaluationStore
    + crate::agents::AgentStore
    + crate::connectors::ConnectorStore
    + crate::world_data::WorldDataStore
    + Send
    + Sync
{
    /// How many API keys exist.
    async fn key_count(&self) -> StoreResult<i64>;
    /// Store a key pair (secret hashed by the caller) for a project, creating the
    /// project when it is new. Returns the project id.
    async fn create_key(&self, project: &str, public_key: &str, secret_hash: &str) -> StoreResult<String>;
    /// `(project_id, secret_hash)` of a public key.
    async fn key_lookup(&self, public_key: &str) -> StoreResult<Option<(String, String)>>;

    /// Get or create a container by slug. Returns it and whether it was created.
    async fn resolve_container(&self, new: Container) -> StoreResult<(Container, bool)>;
    /// A project's container by slug.
    async fn container(&self, project_id: &str, slug: &str) -> StoreResult<Option<Container>>;
    /// A container by id.
    async fn container_by_id(&self, id: &str) -> StoreResult<Option<Container>>;

    /// Create a version, or return the existing one with the same content hash
    /// (`false`). An existing version whose bundle never arrived takes the new
    /// bundle checksum and size.
    async fn create_version(&self, new: Version) -> StoreResult<(Version, bool)>;
    /// A version by id.
    async fn version(&self, id: &str) -> StoreResult<Option<Version>>;
    /// Record that the bundle (or the wheel) is stored.
    async fn mark_uploaded(&self, version_id: &str, wheel: bool) -> StoreResult<()>;
    /// Declare a wheel on a version that has none stored yet (a tree pushed again with
    /// `--build-wheel`); false when the version already holds an uploaded wheel.
    async fn attach_wheel(&self, version_id: &str, wheel: &WheelDecl) -> StoreResult<bool>;
    /// Mark READY and compare-and-set the branch, atomically (across processes):
    /// absent → create; `force` → move; tip == base or == this version → move;
    /// otherwise [`StoreError::Conflict`].
    async fn finalize(&self, version_id: &str, branch: &str, base: Option<&str>, force: bool) -> StoreResult<Finalized>;
    /// READY versions of a container, newest first, at most `limit`.
    async fn find_versions(&self, container_id: &str, filter: VersionFilter, limit: i64) -> StoreResult<Vec<Version>>;

    /// Every ref of a container, branches first, by name.
    async fn refs(&self, container_id: &str) -> StoreResult<Vec<Ref>>;
    /// One ref by name.
    async fn get_ref(&self, container_id: &str, name: &str) -> StoreResult<Option<Ref>>;
    /// Create a ref; [`StoreError::Conflict`] when the name is taken.
    async fn create_ref(&self, new: Ref) -> StoreResult<()>;

    /// Fork: a new container whose `main` points at a copy of `source` (shared bundle).
    async fn fork(&self, target: Container, source: &Version) -> StoreResult<(Container, Version)>;

    /// Store a proposal.
    async fn add_proposal(&self, proposal: Proposal) -> StoreResult<()>;
    /// A container's proposals, newest first.
    async fn proposals(&self, container_id: &str) -> StoreResult<Vec<Proposal>>;

    /// Set or rotate a secret (already encrypted). Returns whether it was created.
    async fn put_secret(&self, container_id: &str, key: &str, sealed: Vec<u8>) -> StoreResult<bool>;
    /// A container's secret names and times.
    async fn secrets(&self, container_id: &str) -> StoreResult<Vec<SecretInfo>>;
    /// The sealed value of a secret (for hosted runs; never served by the API).
    async fn secret_value(&self, container_id: &str, key: &str) -> StoreResult<Option<Vec<u8>>>;
    /// Remove a secret. Returns whether it existed.
    async fn delete_secret(&self, container_id: &str, key: &str) -> StoreResult<bool>;

    /// A project's run configs as canonical JSON objects, oldest first.
    async fn run_configs(&self, project_id: &str) -> StoreResult<Vec<String>>;
    /// One run config.
    async fn run_config(&self, project_id: &str, id: &str) -> StoreResult<Option<String>>;
    /// Create or replace a run config.
    async fn put_run_config(&self, project_id: &str, id: &str, body: &str) -> StoreResult<()>;
    /// Remove a run config. Returns whether it existed.
    async fn delete_run_config(&self, project_id: &str, id: &str) -> StoreResult<bool>;

    /// Write a document (a JSON text) of `kind` under `id`: a new one takes the next
    /// `seq` of its kind, an existing one keeps its place. Returns its `seq`.
    async fn put_document(&self, project_id: &str, kind: &str, id: &str, body: &str) -> StoreResult<i64>;
    /// A document's body.
    async fn document(&self, project_id: &str, kind: &str, id: &str) -> StoreResult<Option<String>>;
    /// Up to `limit` documents of `kind` with `seq > after`, in `seq` order: `(seq, body)`.
    async fn documents(&self, project_id: &str, kind: &str, after: i64, limit: i64) -> StoreResult<Vec<(i64, String)>>;
    /// Remove a document; whether it existed.
    async fn delete_document(&self, project_id: &str, kind: &str, id: &str) -> StoreResult<bool>;
}

/// Every document of a kind, a page at a time in `seq` order (a reader that goes
/// through all of them without holding more than a page of text).
pub struct DocumentPages<'a> {
    meta: &'a dyn MetaStore,
    project: &'a str,
    kind: String,
    per_page: i64,
    after: i64,
}

impl<'a> DocumentPages<'a> {
    /// The documents of `kind` in `project`, `per_page` at a time.
    pub fn new(meta: &'a dyn MetaStore, project: &'a str, kind: impl Into<String>, per_page: i64) -> DocumentPages<'a> {
        DocumentPages { meta, project, kind: kind.into(), per_page, after: 0 }
    }

    /// The next page `(seq, body)`, or None once every document has been read.
    pub async fn next_page(&mut self) -> StoreResult<Option<Vec<(i64, String)>>> {
        let page = self.meta.documents(self.project, &self.kind, self.after, self.per_page).await?;
        let Some((last, _)) = page.last() else { return Ok(None) };
        self.after = *last;
        Ok(Some(page))
    }
}

/// An object's bytes as they are read, in chunks.
pub type ByteStream = std::pin::Pin<Box<dyn futures_util::Stream<Item = StoreResult<Bytes>> + Send>>;

/// Read `stream` on a blocking thread: `read` gets a [`std::io::Read`] over its chunks
/// as they arrive (a gunzip, a tar reader), so an object is never held whole; once
/// `read` returns, the rest is not fetched. The outer error is the stream's, the inner
/// one the blocking thread's (it panicked).
pub async fn read_blocking<T: Send + 'static>(
    mut stream: ByteStream,
    read: impl FnOnce(StreamReader) -> T + Send + 'static,
) -> StoreResult<Result<T, tokio::task::JoinError>> {
    use futures_util::StreamExt as _;
    let (sender, chunks) = tokio::sync::mpsc::channel::<Bytes>(4);
    let reader = tokio::task::spawn_blocking(move || read(StreamReader { chunks, current: Bytes::new() }));
    let mut failed = None;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => {
                if sender.send(chunk).await.is_err() {
                    break; // the reader has what it wanted
                }
            }
            Err(error) => {
                failed = Some(error);
                break;
            }
        }
    }
    drop(sender);
    let read = reader.await;
    match failed {
        Some(error) => Err(error),
        None => Ok(read),
    }
}

/// A blocking [`std::io::Read`] over an object's chunks as [`read_blocking`] sends them.
pub struct StreamReader {
    chunks: tokio::sync::mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl std::io::Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// An object being written, a chunk at a time: nothing is visible under its key until
/// [`ObjectWriter::commit`]; [`ObjectWriter::abort`] (or dropping the writer) leaves nothing.
#[async_trait]
pub trait ObjectWriter: Send {
    /// Append a chunk.
    async fn write(&mut self, chunk: Bytes) -> StoreResult<()>;
    /// Make the object visible under its key (replacing any previous one).
    async fn commit(self: Box<Self>) -> StoreResult<()>;
    /// Give the object up.
    async fn abort(self: Box<Self>) -> StoreResult<()>;
}

/// The bundle store. Objects go in and out as streams, so a bundle never has to fit in
/// the server's memory.
#[async_trait]
pub trait ObjectStore: Send + Sync {
    /// Start writing an object.
    async fn writer(&self, key: &str) -> StoreResult<Box<dyn ObjectWriter>>;
    /// Read an object, if it exists.
    async fn open(&self, key: &str) -> StoreResult<Option<ByteStream>>;
    /// An object's size, if it exists.
    async fn size(&self, key: &str) -> StoreResult<Option<u64>>;
    /// Remove an object (one that is not there is no error).
    async fn delete(&self, key: &str) -> StoreResult<()>;
    /// Where an object lies on this machine's disk, for a reader that opens it in
    /// place (a regrade reading stored states): a local store's file; None when it
    /// must be read through [`ObjectStore::open`] (the default).
    fn local_file(&self, _key: &str) -> Option<PathBuf> {
        None
    }
}

/// Object keys are ours (`bundles/<container>/<version>.tar.gz`), but are checked anyway.
pub fn check_object_key(key: &str) -> StoreResult<()> {
    let ok = !key.is_empty()
        && key.len() <= 512
        && key.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
        && key.chars().all(|c| c.is_ascii_alphanumeric() || "._-/+@=".contains(c));
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadRequest(format!("invalid object key: {key}")))
    }
}

/// Objects as files under a directory, written atomically (temp file + rename).
#[derive(Debug, Clone)]
pub struct LocalObjects {
    root: PathBuf,
}

impl LocalObjects {
    /// Objects under `root` (created when missing).
    pub fn new(root: &Path) -> StoreResult<LocalObjects> {
        crate::util::private_dir(root)?;
        Ok(LocalObjects { root: root.to_path_buf() })
    }

    fn path(&self, key: &str) -> StoreResult<PathBuf> {
        check_object_key(key)?;
        Ok(self.root.join(key))
    }
}

/// Bytes read from a local object per chunk.
const READ_CHUNK: usize = 256 * 1024;

/// A local object being written: a temp file beside its final name, renamed on commit.
struct LocalWriter {
    file: Option<tokio::fs::File>,
    tmp: PathBuf,
    path: PathBuf,
}

#[async_trait]
impl ObjectWriter for LocalWriter {
    async fn write(&mut self, chunk: Bytes) -> StoreResult<()> {
        use tokio::io::AsyncWriteExt as _;
        let file = self.file.as_mut().expect("open until commit or abort");
        file.write_all(&chunk).await.map_err(|e| StoreError::io(&self.tmp, e))
    }

    async fn commit(mut self: Box<Self>) -> StoreResult<()> {
        let file = self.file.take().expect("open until commit or abort");
        file.sync_all().await.map_err(|e| StoreError::io(&self.tmp, e))?;
        drop(file);
        tokio::fs::rename(&self.tmp, &self.path).await.map_err(|e| StoreError::io(&self.path, e))
    }

    async fn abort(mut self: Box<Self>) -> StoreResult<()> {
        drop(self.file.take());
        match tokio::fs::remove_file(&self.tmp).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(&self.tmp, e)),
        }
    }
}

impl Drop for LocalWriter {
    fn drop(&mut self) {
        // Neither committed nor aborted (the request went away): leave nothing behind.
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[async_trait]
impl ObjectStore for LocalObjects {
    async fn writer(&self, key: &str) -> StoreResult<Box<dyn ObjectWriter>> {
        let path = self.path(key)?;
        let parent = path.parent().unwrap_or(&self.root).to_path_buf();
        // Owner-only: directories 0700, objects 0600 (the temp file keeps its mode through the rename).
        let mut dirs = tokio::fs::DirBuilder::new();
        dirs.recursive(true);
        #[cfg(unix)]
        dirs.mode(0o700);
        dirs.create(&parent).await.map_err(|e| StoreError::io(&parent, e))?;
        let tmp = parent.join(format!(".{}.part", crate::util::new_id("")));
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(0o600);
        let file = options.open(&tmp).await.map_err(|e| StoreError::io(&tmp, e))?;
        Ok(Box::new(LocalWriter { file: Some(file), tmp, path }))
    }

    async fn open(&self, key: &str) -> StoreResult<Option<ByteStream>> {
        use tokio::io::AsyncReadExt as _;
        let path = self.path(key)?;
        let file = match tokio::fs::File::open(&path).await {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let stream = futures_util::stream::try_unfold((file, path), |(mut file, path)| async move {
            let mut chunk = vec![0u8; READ_CHUNK];
            let read = file.read(&mut chunk).await.map_err(|e| StoreError::io(&path, e))?;
            if read == 0 {
                return Ok(None);
            }
            chunk.truncate(read);
            Ok(Some((Bytes::from(chunk), (file, path))))
        });
        Ok(Some(Box::pin(stream)))
    }

    async fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        let path = self.path(key)?;
        match tokio::fs::metadata(&path).await {
            Ok(meta) => Ok(Some(meta.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }

    async fn delete(&self, key: &str) -> StoreResult<()> {
        let path = self.path(key)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }

    fn local_file(&self, key: &str) -> Option<PathBuf> {
        self.path(key).ok().filter(|path| path.is_file())
    }
}

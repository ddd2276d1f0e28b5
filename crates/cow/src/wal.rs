//! An overlay's write-ahead log: SQLite's `-wal` file for its database, held as a
//! file beside the overlay (a transaction's frames gathered and handed to the kernel
//! in one write at its commit frame) or, for a volatile overlay, in memory
//! ([`MemoryLog`], within the process's budget, spilled to the file past it). The
//! overlay's `wal_*` methods, which the VFS calls, work on it under its lock.

use crate::memlog::MemoryLog;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An overlay's write-ahead log (shared by every connection of its session).
pub(crate) struct Wal {
    pub(crate) path: PathBuf,
    /// Whether the log starts in memory when it is created (a volatile overlay's).
    pub(crate) volatile: bool,
    /// The log in memory (at most one of `memory` and `file` is set; neither: no log).
    pub(crate) memory: Option<MemoryLog>,
    pub(crate) file: Option<Arc<File>>,
    /// The log's size, the bytes not yet handed to the kernel included.
    pub(crate) size: u64,
    /// Bytes written but not yet handed to the kernel, which belong at `pending_at`.
    pub(crate) pending: Vec<u8>,
    pub(crate) pending_at: u64,
    /// Where the commit frame being written ends: its transaction's frames go to the
    /// kernel, in one write, once it is whole.
    pub(crate) commit_end: Option<u64>,
}

/// A WAL frame's header (SQLite's layout: page number, then the database's size in
/// pages after the commit — nonzero only on a transaction's last frame — salts and
/// checksums).
pub(crate) const FRAME_HEAD: u64 = 24;
/// The WAL's own header, before the first frame.
pub(crate) const WAL_HEAD: u64 = 32;
/// The most bytes of a transaction held back before they are written anyway.
pub(crate) const PENDING_LIMIT: usize = 1 << 20;

/// The write-ahead log an overlay starts with.
pub(crate) enum WalStart {
    /// The file beside it, of this size (0: none yet).
    File(u64),
    /// A log in memory, of this size.
    Memory(MemoryLog, u64),
}

/// Write the first `size` bytes of `log` to a new file at `path`.
pub(crate) fn write_log(path: &Path, log: &MemoryLog, size: u64) -> io::Result<File> {
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
    let mut at = 0u64;
    for chunk in log.chunks() {
        let n = usize::try_from(size.saturating_sub(at)).unwrap_or(usize::MAX).min(chunk.len());
        if n == 0 {
            break;
        }
        file.write_all_at(&chunk[..n], at)?;
        at += n as u64;
    }
    Ok(file)
}

impl Wal {
    /// Move a log held in memory to its file (the budget is spent): everything after
    /// goes to the file as a non-volatile overlay's would, until the log is deleted.
    pub(crate) fn spill(&mut self) -> io::Result<()> {
        if let Some(log) = &self.memory {
            // The log stays in memory until its copy is whole: a failed spill fails
            // this write and loses nothing.
            let file = write_log(&self.path, log, self.size)?;
            self.file = Some(Arc::new(file));
            self.memory = None;
        }
        Ok(())
    }

    /// Whether bytes `offset..offset + len` meet the ones not yet written.
    pub(crate) fn pending_overlaps(&self, offset: u64, len: usize) -> bool {
        !self.pending.is_empty() && offset < self.pending_at + self.pending.len() as u64 && offset + len as u64 > self.pending_at
    }

    /// Hold `data` back with the pending bytes when it patches or extends them;
    /// otherwise write what is pending first and start again from `data`.
    pub(crate) fn stage(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let pending_end = self.pending_at + self.pending.len() as u64;
        if self.pending.is_empty() || offset < self.pending_at || offset > pending_end {
            self.flush()?;
            self.pending_at = offset;
        }
        let start = usize::try_from(offset - self.pending_at).unwrap_or(usize::MAX);
        let stop = start + data.len();
        if stop > self.pending.len() {
            self.pending.resize(stop, 0);
        }
        self.pending[start..stop].copy_from_slice(data);
        Ok(())
    }

    /// Hand the pending bytes to the kernel (dropped on failure: the transaction they
    /// belong to fails with the error).
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.commit_end = None;
        if self.pending.is_empty() {
            return Ok(());
        }
        let written = match &self.file {
            Some(file) => file.write_all_at(&self.pending, self.pending_at),
            None => Ok(()),
        };
        self.pending.clear();
        written
    }
}

pub(crate) fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push("-wal");
    PathBuf::from(name)
}

//! The base: a template's snapshot, the immutable SQLite file every overlay of it
//! reads its unchanged pages from. One open file and one mapping per base, shared by
//! all of its sessions' connections.

use crate::error::CowError;
use crate::sys::FileMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An immutable SQLite database file shared by overlays.
pub struct Base {
    path: PathBuf,
    file: File,
    size: u64,
    page_size: u64,
    /// The whole file mapped, for SQLite's memory-mapped reads (None when mapping failed).
    map: Option<FileMap>,
}

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Base").field("path", &self.path).field("size", &self.size).finish()
    }
}

impl Base {
    /// Open the database at `path` as a base. It must be whole (no WAL frames beside
    /// it) and must not be written while any overlay uses it.
    pub fn open(path: &Path) -> Result<Arc<Base>, CowError> {
        let file = File::open(path).map_err(|e| CowError::io(path, e))?;
        let size = file.metadata().map_err(|e| CowError::io(path, e))?.len();
        let mut header = [0u8; 100];
        if size < 100 || file.read_exact_at(&mut header, 0).is_err() || &header[..16] != b"SQLite format 3\0" {
            return Err(CowError::NotSqlite(path.to_path_buf()));
        }
        let page_size = match u16::from_be_bytes([header[16], header[17]]) {
            1 => 65536,
            n => u64::from(n),
        };
        let wal = PathBuf::from(format!("{}-wal", path.display()));
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            return Err(CowError::BaseHasWal(path.to_path_buf()));
        }
        let map = usize::try_from(size).ok().and_then(|len| FileMap::new(&file, len).ok());
        Ok(Arc::new(Base { path: path.to_path_buf(), file, size, page_size, map }))
    }

    /// Where the base is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Its page size (every overlay of it stores pages of this size).
    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    /// `buf.len()` bytes at `offset`; bytes past the end of the file read as zeros.
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let inside = usize::try_from(self.size.saturating_sub(offset)).unwrap_or(usize::MAX).min(buf.len());
        if inside > 0 {
            self.file.read_exact_at(&mut buf[..inside], offset)?;
        }
        buf[inside..].fill(0);
        Ok(())
    }

    /// A pointer into the mapping for `len` bytes at `offset`, when mapped.
    pub(crate) fn mapped(&self, offset: u64, len: usize) -> Option<*const u8> {
        self.map.as_ref()?.at(offset, len)
    }
}

//! The operating-system calls the crate makes beyond `std`: anonymous memory for
//! WAL-index regions, a read-only mapping of a base, and the open-file limit.
//!
//! Anonymous mappings rather than heap allocations for the WAL index: its regions
//! are 32 KiB each, SQLite touches the first few hundred bytes of an idle session's,
//! and a mapping costs memory only for the pages touched (a zeroed heap block is
//! written whole) — 10,000 idle sessions would otherwise hold 320 MiB of zeros.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

/// A private, zero-filled, read-write mapping: one WAL-index region.
pub(crate) struct Region {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone (nothing else unmaps it), and the
// memory is plain bytes: moving the owner to another thread is sound. Concurrent
// access to the bytes goes through the raw pointer SQLite holds, under SQLite's own
// WAL-index protocol (locks and barriers), never through Rust references.
unsafe impl Send for Region {}

impl Region {
    /// `len` bytes of zeroed memory.
    pub(crate) fn new(len: usize) -> io::Result<Region> {
        // SAFETY: an anonymous private mapping at an address the kernel picks: no
        // existing memory is affected; the result is checked before use.
        let start = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if start == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let start = NonNull::new(start.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Region { start, len })
    }

    /// The first byte, for SQLite.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.start.as_ptr()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `start`/`len` are exactly the mapping `new` made, unmapped once here;
        // SQLite unmaps its view (xShmUnmap) before the region is dropped.
        unsafe {
            libc::munmap(self.start.as_ptr().cast(), self.len);
        }
    }
}

/// A read-only shared mapping of a whole file that never changes while mapped.
pub(crate) struct FileMap {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: read-only memory owned by this value; sharing pointers into it between
// threads is sound since nothing writes it (the base file is immutable by contract).
unsafe impl Send for FileMap {}
// SAFETY: as above: only reads, from any thread.
unsafe impl Sync for FileMap {}

impl FileMap {
    /// Map `len` bytes of `file` (its whole length), read-only.
    pub(crate) fn new(file: &File, len: usize) -> io::Result<FileMap> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty file cannot be mapped"));
        }
        // SAFETY: a fresh read-only shared mapping of an open file descriptor at an
        // address the kernel picks; the result is checked before use.
        let start = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if start == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let start = NonNull::new(start.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(FileMap { start, len })
    }

    /// A pointer to `len` bytes at `offset`, when they are inside the mapping.
    pub(crate) fn at(&self, offset: u64, len: usize) -> Option<*const u8> {
        let offset = usize::try_from(offset).ok()?;
        // `offset + len <= self.len`, so the pointer stays inside the mapping.
        (offset.checked_add(len)? <= self.len).then(|| self.start.as_ptr().wrapping_add(offset).cast_const())
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping `new` made; SQLite releases every page it
        // fetched (xUnfetch) before the connections, which hold the base, close.
        unsafe {
            libc::munmap(self.start.as_ptr().cast(), self.len);
        }
    }
}

/// Raise the soft limit on open files to the hard limit, and answer the limit now in
/// force. A host holding thousands of sessions needs it: an overlay that has written
/// holds its file (and its WAL's) open, shared by every connection of its session.
pub fn raise_open_file_limit() -> io::Result<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
        // SAFETY: setrlimit reads the struct it is given; raising the soft limit up to
        // the hard one is always permitted.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(io::Error::last_os_error());
        }
        limit = raised;
    }
    Ok(limit.rlim_cur)
}

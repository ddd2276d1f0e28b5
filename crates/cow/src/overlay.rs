//! An overlay: one session's database as the pages it wrote over a shared [`Base`].
//!
//! The file: a 4 KiB header (magic, page size, the database's logical size, how much
//! of the base is still visible, a checksum), then slots of `[page number: u64,
//! checksum: u64, page bytes]`, one per page ever written, in the order first
//! written. A page written again is rewritten in its slot. The page → slot map lives
//! in memory (shared by every connection of the session) and is rebuilt by scanning
//! the slots on [`Overlay::open`].
//!
//! Crash rules: the file is created lazily, on the first write (a session that only
//! reads holds no file and no descriptor). A slot is appended with one `pwrite`; after
//! a crash the *last* slot failing its checksum is a torn append and is dropped
//! (the torn tail of a partial slot too). An earlier slot failing its checksum is a
//! torn rewrite in place: its page number is intact (a rewrite writes the same one),
//! so it keeps its place. Both only ever hold pages SQLite still has in its WAL — it
//! syncs the database file before it resets the log — so the WAL's replay restores
//! them. The header's size is written on sync, truncate and close; a page found
//! beyond it extends it.
//!
//! The write-ahead log is the overlay's too: a plain file beside it (`<path>-wal`),
//! also created on first write, its descriptor shared by the session's connections.
//! A transaction's frames reach that file in one write, at its commit frame (see
//! `Overlay::wal_write`), rather than two system calls per page. A *volatile* overlay
//! ([`Overlay::create_volatile`]: one that is never reopened, so whose log nobody reads
//! after the process ends) keeps its log in memory instead (`memlog.rs`), within the
//! process's budget, and spills it to that file when the budget is spent.

use crate::base::Base;
use crate::error::CowError;
use crate::locks::{FileLocks, Shm};
use crate::memlog::MemoryLog;
use crate::wal::{wal_path, write_log, Wal, WalStart, FRAME_HEAD, PENDING_LIMIT, WAL_HEAD};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

const MAGIC: &[u8; 8] = b"gwcow02\n";
const HEADER_BYTES: u64 = 4096;
const SLOT_HEAD: u64 = 16;
/// The page number of a slot given back by a truncation.
const FREE: u64 = u64::MAX;

/// One session's copy-on-write database (see the module's documentation).
pub struct Overlay {
    key: String,
    path: PathBuf,
    base: Arc<Base>,
    page_size: u64,
    pages: RwLock<Pages>,
    wal: Mutex<Wal>,
    pub(crate) locks: Mutex<FileLocks>,
    pub(crate) shm: Mutex<Shm>,
}

struct Pages {
    file: Option<Arc<File>>,
    /// Page index (0-based: byte offset / page size) → slot.
    slots: HashMap<u64, u64>,
    next_slot: u64,
    free: Vec<u64>,
    /// The database's size in bytes.
    size: u64,
    /// Bytes of the base still visible: a truncation hides what lies beyond it for good.
    base_limit: u64,
    header_dirty: bool,
    /// A slot's worth of bytes reused by every write (empty until the first).
    slot_buffer: Vec<u8>,
}

/// What an overlay holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverlayStats {
    /// Pages written (slots in use).
    pub pages: u64,
    /// Size of the overlay file (0 before the first write).
    pub file_bytes: u64,
    /// Size of its write-ahead log.
    pub wal_bytes: u64,
    /// The database's logical size.
    pub size: u64,
    /// Bytes of WAL index mapped.
    pub shm_bytes: u64,
    /// Whether the write-ahead log is held in memory now (a volatile overlay's, within
    /// the process's budget).
    pub wal_in_memory: bool,
}

impl std::fmt::Debug for Overlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overlay").field("path", &self.path).field("base", &self.base.path()).finish()
    }
}

/// A slot's (or the header's) checksum: four multiply-rotate lanes over 32-byte
/// strides, folded together. One lane is a chain of dependent multiplies (a page cost
/// about a microsecond, a tenth of a checkpoint's time); four independent ones let the
/// processor run them side by side. Any change of it is a new [`MAGIC`].
fn checksum(page: u64, data: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let seed = 0xcbf2_9ce4_8422_2325u64 ^ page.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut lanes = [seed, seed.rotate_left(16), seed.rotate_left(32), seed.rotate_left(48)];
    let word = |bytes: &[u8]| u64::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]]);
    let mut strides = data.chunks_exact(32);
    for stride in &mut strides {
        for (lane, bytes) in lanes.iter_mut().zip(stride.chunks_exact(8)) {
            *lane = (*lane ^ word(bytes)).wrapping_mul(PRIME).rotate_left(23);
        }
    }
    let mut sum = lanes.iter().fold(0u64, |sum, lane| (sum ^ lane).wrapping_mul(PRIME).rotate_left(31));
    for byte in strides.remainder() {
        sum = (sum ^ u64::from(*byte)).wrapping_mul(PRIME);
    }
    sum
}

fn read_lock<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write_lock<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

fn guard<T>(lock: &Mutex<T>) -> MutexGuard<'_, T> {
    lock.lock().unwrap_or_else(PoisonError::into_inner)
}

fn absolute(path: &Path) -> Result<(PathBuf, String), CowError> {
    let absolute = std::path::absolute(path).map_err(|e| CowError::io(path, e))?;
    let key = absolute.to_str().ok_or_else(|| CowError::io(path, io::Error::new(io::ErrorKind::InvalidInput, "not UTF-8")))?.to_string();
    Ok((absolute, key))
}

impl Overlay {
    /// A new, empty overlay of `base` at `path` (no file is created until the first
    /// write). Refused when a file or a live overlay is already there.
    pub fn create(path: &Path, base: &Arc<Base>) -> Result<Arc<Overlay>, CowError> {
        Overlay::create_empty(path, base, false)
    }

    /// A new, empty overlay like [`Overlay::create`]'s whose write-ahead log is kept in
    /// memory while the process's budget allows (see `memlog.rs`): for an overlay that
    /// is never reopened, as a served session's is not. It must not be: a log in memory
    /// is gone with the process, and with it every commit not yet checkpointed.
    pub fn create_volatile(path: &Path, base: &Arc<Base>) -> Result<Arc<Overlay>, CowError> {
        Overlay::create_empty(path, base, true)
    }

    fn create_empty(path: &Path, base: &Arc<Base>, volatile: bool) -> Result<Arc<Overlay>, CowError> {
        let (path, key) = absolute(path)?;
        if path.exists() {
            return Err(CowError::io(&path, io::Error::from(io::ErrorKind::AlreadyExists)));
        }
        Overlay::install(path, key, base, Pages::empty(base), WalStart::File(0), volatile)
    }

    /// The overlay of `base` at `path` as its file holds it (empty when there is no
    /// file), with the write-ahead log beside it if any.
    pub fn open(path: &Path, base: &Arc<Base>) -> Result<Arc<Overlay>, CowError> {
        let (path, key) = absolute(path)?;
        let pages = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => Pages::scan(file, base).map_err(|e| match e {
                ScanError::Io(e) => CowError::io(&path, e),
                ScanError::Foreign => CowError::NotOverlay(path.clone()),
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Pages::empty(base),
            Err(e) => return Err(CowError::io(&path, e)),
        };
        let wal_path = wal_path(&path);
        let wal_size = std::fs::metadata(&wal_path).map(|m| m.len()).unwrap_or(0);
        Overlay::install(path, key, base, pages, WalStart::File(wal_size), false)
    }

    fn install(
        path: PathBuf,
        key: String,
        base: &Arc<Base>,
        pages: Pages,
        wal: WalStart,
        volatile: bool,
    ) -> Result<Arc<Overlay>, CowError> {
        let wal_path = wal_path(&path);
        let (file, memory, size) = match wal {
            WalStart::File(0) => (None, None, 0),
            WalStart::File(size) => {
                let file = OpenOptions::new().read(true).write(true).open(&wal_path).map_err(|e| CowError::io(&wal_path, e))?;
                (Some(Arc::new(file)), None, size)
            }
            WalStart::Memory(log, size) => (None, Some(log), size),
        };
        let overlay = Arc::new(Overlay {
            key: key.clone(),
            path,
            base: base.clone(),
            page_size: base.page_size(),
            pages: RwLock::new(pages),
            wal: Mutex::new(Wal { path: wal_path, volatile, memory, file, size, pending: Vec::new(), pending_at: 0, commit_end: None }),
            locks: Mutex::default(),
            shm: Mutex::default(),
        });
        if !registry_insert(&key, &overlay) {
            return Err(CowError::AlreadyOpen(overlay.path.clone()));
        }
        Ok(overlay)
    }

    /// A new overlay at `to` holding what this one holds now: its file copied (in the
    /// kernel), and its write-ahead log too when `with_wal` (otherwise the caller has
    /// checkpointed it into the overlay). The caller keeps writers out meanwhile.
    pub fn fork(&self, to: &Path, with_wal: bool) -> Result<Arc<Overlay>, CowError> {
        let (path, key) = absolute(to)?;
        if path.exists() {
            return Err(CowError::io(&path, io::Error::from(io::ErrorKind::AlreadyExists)));
        }
        let pages = read_lock(&self.pages);
        let copy = Pages {
            file: None,
            slots: pages.slots.clone(),
            next_slot: pages.next_slot,
            free: pages.free.clone(),
            size: pages.size,
            base_limit: pages.base_limit,
            header_dirty: true,
            slot_buffer: Vec::new(),
        };
        let mut copy = copy;
        if pages.file.is_some() {
            if pages.header_dirty {
                // The copy's header must carry the size the parent has in memory.
                self.write_header(&pages)?;
            }
            std::fs::copy(&self.path, &path).map_err(|e| CowError::io(&self.path, e))?;
            copy.file = Some(Arc::new(OpenOptions::new().read(true).write(true).open(&path).map_err(|e| CowError::io(&path, e))?));
        }
        drop(pages);
        let mut wal = guard(&self.wal);
        let mut start = WalStart::File(0);
        if with_wal && wal.size > 0 {
            wal.flush().map_err(|e| CowError::io(&wal.path, e))?;
            let (copy_path, size) = (wal_path(&path), wal.size);
            if let Some(log) = &wal.memory {
                start = match log.try_clone() {
                    Some(copy) => WalStart::Memory(copy, size),
                    None => {
                        write_log(&copy_path, log, size).map_err(|e| CowError::io(&copy_path, e))?;
                        WalStart::File(size)
                    }
                };
            } else if wal.file.is_some() {
                std::fs::copy(&wal.path, &copy_path).map_err(|e| CowError::io(&wal.path, e))?;
                start = WalStart::File(size);
            }
        }
        let volatile = wal.volatile;
        drop(wal);
        Overlay::install(path, key, &self.base, copy, start, volatile)
    }

    /// Create the file now (header written and synced), for a caller that needs it on
    /// disk before the first write.
    pub fn materialize(&self) -> Result<(), CowError> {
        let mut pages = write_lock(&self.pages);
        let file = self.file(&mut pages).map_err(|e| CowError::io(&self.path, e))?;
        self.write_header(&pages)?;
        file.sync_all().map_err(|e| CowError::io(&self.path, e))
    }

    /// The overlay's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The name to open the database by (with the VFS, [`crate::VFS_NAME`]).
    pub fn name(&self) -> &str {
        &self.key
    }

    /// The base it reads unchanged pages from.
    pub fn base(&self) -> &Arc<Base> {
        &self.base
    }

    /// What it holds now.
    pub fn stats(&self) -> OverlayStats {
        let pages = read_lock(&self.pages);
        let wal = guard(&self.wal);
        OverlayStats {
            pages: pages.slots.len() as u64,
            file_bytes: if pages.file.is_some() { HEADER_BYTES + pages.next_slot * self.slot_bytes() } else { 0 },
            wal_bytes: wal.size,
            size: pages.size,
            shm_bytes: guard(&self.shm).bytes() as u64,
            wal_in_memory: wal.memory.is_some(),
        }
    }

    fn slot_bytes(&self) -> u64 {
        SLOT_HEAD + self.page_size
    }

    fn slot_offset(&self, slot: u64) -> u64 {
        HEADER_BYTES + slot * self.slot_bytes()
    }

    /// The overlay file, created (with its header) on first need.
    fn file(&self, pages: &mut Pages) -> io::Result<Arc<File>> {
        if let Some(file) = &pages.file {
            return Ok(file.clone());
        }
        let file = Arc::new(OpenOptions::new().read(true).write(true).create_new(true).open(&self.path)?);
        pages.file = Some(file.clone());
        pages.header_dirty = true;
        self.write_header(pages).map_err(|e| match e {
            CowError::Io { source, .. } => source,
            other => io::Error::other(other.to_string()),
        })?;
        Ok(file)
    }

    fn write_header(&self, pages: &Pages) -> Result<(), CowError> {
        let Some(file) = &pages.file else { return Ok(()) };
        let mut header = [0u8; 40];
        header[..8].copy_from_slice(MAGIC);
        header[8..16].copy_from_slice(&self.page_size.to_le_bytes());
        header[16..24].copy_from_slice(&pages.size.to_le_bytes());
        header[24..32].copy_from_slice(&pages.base_limit.to_le_bytes());
        let sum = checksum(0, &header[..32]);
        header[32..40].copy_from_slice(&sum.to_le_bytes());
        file.write_all_at(&header, 0).map_err(|e| CowError::io(&self.path, e))
    }

    /// Fill `buf` from `offset`; bytes past the database's end read as zeros, and
    /// the answer says whether any did (SQLite's short read).
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<bool> {
        let pages = read_lock(&self.pages);
        self.read_locked(&pages, offset, buf)
    }

    fn read_locked(&self, pages: &Pages, offset: u64, buf: &mut [u8]) -> io::Result<bool> {
        let valid = usize::try_from(pages.size.saturating_sub(offset)).unwrap_or(usize::MAX).min(buf.len());
        let mut done = 0;
        while done < valid {
            let at = offset + done as u64;
            let (page, within) = (at / self.page_size, at % self.page_size);
            let n = usize::try_from(self.page_size - within).unwrap_or(usize::MAX).min(valid - done);
            let out = &mut buf[done..done + n];
            match (pages.slots.get(&page), &pages.file) {
                (Some(slot), Some(file)) => file.read_exact_at(out, self.slot_offset(*slot) + SLOT_HEAD + within)?,
                _ if at < pages.base_limit => {
                    let visible = usize::try_from(pages.base_limit - at).unwrap_or(usize::MAX).min(n);
                    self.base.read(at, &mut out[..visible])?;
                    out[visible..].fill(0);
                }
                _ => out.fill(0),
            }
            done += n;
        }
        buf[valid..].fill(0);
        Ok(valid < buf.len())
    }

    /// Write `data` at `offset`: each page it touches goes to its slot (a new slot for
    /// a page not written before; a partly written page is read, patched and stored whole).
    pub(crate) fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut pages = write_lock(&self.pages);
        let file = self.file(&mut pages)?;
        let page_bytes = usize::try_from(self.page_size).unwrap_or(usize::MAX);
        // One slot's bytes, kept between writes: a checkpoint writes thousands of
        // pages, and a fresh zeroed buffer for each showed in its profile.
        let mut slot = std::mem::take(&mut pages.slot_buffer);
        slot.resize(SLOT_HEAD as usize + page_bytes, 0);
        let written = self.write_slots(&mut pages, &file, &mut slot, offset, data);
        pages.slot_buffer = slot;
        written?;
        let end = offset + data.len() as u64;
        if end > pages.size {
            pages.size = end;
            pages.header_dirty = true;
        }
        Ok(())
    }

    /// [`Overlay::write`]'s work, page by page, through the buffer `slot`.
    fn write_slots(&self, pages: &mut Pages, file: &File, slot: &mut [u8], offset: u64, data: &[u8]) -> io::Result<()> {
        let page_bytes = slot.len() - SLOT_HEAD as usize;
        let mut done = 0;
        while done < data.len() {
            let at = offset + done as u64;
            let (page, within) = (at / self.page_size, (at % self.page_size) as usize);
            let n = (page_bytes - within).min(data.len() - done);
            let body = &mut slot[SLOT_HEAD as usize..];
            if n < page_bytes {
                self.read_locked(pages, page * self.page_size, body)?;
            }
            body[within..within + n].copy_from_slice(&data[done..done + n]);
            let sum = checksum(page, body);
            slot[..8].copy_from_slice(&page.to_le_bytes());
            slot[8..16].copy_from_slice(&sum.to_le_bytes());
            let index = match pages.slots.get(&page) {
                Some(index) => *index,
                None => {
                    let index = pages.free.pop().unwrap_or_else(|| {
                        pages.next_slot += 1;
                        pages.next_slot - 1
                    });
                    pages.slots.insert(page, index);
                    index
                }
            };
            file.write_all_at(slot, self.slot_offset(index))?;
            done += n;
        }
        Ok(())
    }

    /// The database's size in bytes.
    pub(crate) fn size(&self) -> u64 {
        read_lock(&self.pages).size
    }

    /// Cut the database to `size` bytes: pages past it give their slots back, and the
    /// base past it is hidden for good.
    pub(crate) fn truncate(&self, size: u64) -> io::Result<()> {
        let mut pages = write_lock(&self.pages);
        let first_gone = size.div_ceil(self.page_size);
        let gone: Vec<(u64, u64)> = pages.slots.iter().filter(|(page, _)| **page >= first_gone).map(|(p, s)| (*p, *s)).collect();
        if let (false, Some(file)) = (gone.is_empty(), pages.file.clone()) {
            for (page, slot) in gone {
                file.write_all_at(&FREE.to_le_bytes(), self.slot_offset(slot))?;
                pages.slots.remove(&page);
                pages.free.push(slot);
            }
        }
        pages.size = size;
        pages.base_limit = pages.base_limit.min(size);
        pages.header_dirty = true;
        self.flush_locked(&mut pages)
    }

    fn flush_locked(&self, pages: &mut Pages) -> io::Result<()> {
        if pages.header_dirty && pages.file.is_some() {
            self.write_header(pages).map_err(|e| io::Error::other(e.to_string()))?;
            pages.header_dirty = false;
        }
        Ok(())
    }

    /// The header brought up to date and the file's data synced.
    pub(crate) fn sync(&self) -> io::Result<()> {
        let mut pages = write_lock(&self.pages);
        self.flush_locked(&mut pages)?;
        match &pages.file {
            Some(file) => file.sync_data(),
            None => Ok(()),
        }
    }

    /// The header brought up to date (a connection closing).
    pub(crate) fn flush(&self) -> io::Result<()> {
        self.flush_locked(&mut write_lock(&self.pages))
    }

    /// A pointer to `len` bytes at `offset` in the base's mapping, when they are one
    /// page (or part of one) the overlay never wrote and the base still shows.
    pub(crate) fn fetch(&self, offset: u64, len: usize) -> Option<*const u8> {
        let pages = read_lock(&self.pages);
        let page = offset / self.page_size;
        let end = offset.checked_add(len as u64)?;
        let one_page = (end - 1) / self.page_size == page;
        if !one_page || pages.slots.contains_key(&page) || end > pages.base_limit || end > pages.size {
            return None;
        }
        self.base.mapped(offset, len)
    }

    /// Fill `buf` from the write-ahead log at `offset`; true when it is shorter.
    pub(crate) fn wal_read(&self, offset: u64, buf: &mut [u8]) -> io::Result<bool> {
        let (file, valid) = {
            let mut wal = guard(&self.wal);
            let valid = usize::try_from(wal.size.saturating_sub(offset)).unwrap_or(usize::MAX).min(buf.len());
            // A log in memory is copied under the lock; a file is read outside it.
            let file = match &mut wal.memory {
                Some(log) => {
                    log.read(offset, &mut buf[..valid]);
                    None
                }
                None => {
                    if wal.pending_overlaps(offset, buf.len()) {
                        wal.flush()?;
                    }
                    wal.file.clone()
                }
            };
            (file, valid)
        };
        if let (Some(file), true) = (file, valid > 0) {
            file.read_exact_at(&mut buf[..valid], offset)?;
        }
        buf[valid..].fill(0);
        Ok(valid < buf.len())
    }

    /// Write `data` into the write-ahead log at `offset` (the file made on first write).
    ///
    /// SQLite writes a frame as two calls (its header, then the page), each a system
    /// call of its own and the page straddling two of the kernel's pages. A
    /// transaction's frames are gathered here instead and handed to the kernel in one
    /// write when its commit frame is whole (or a read, sync, truncation or fork needs
    /// them, or a megabyte waits): a committed transaction is in the kernel before
    /// SQLite hears its last write succeed, as when each call was a write, and a
    /// failed write fails the commit.
    pub(crate) fn wal_write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut wal = guard(&self.wal);
        if wal.volatile && wal.memory.is_none() && wal.file.is_none() {
            wal.memory = Some(MemoryLog::default());
            wal.size = 0;
        }
        if let Some(log) = &mut wal.memory {
            if log.write(offset, data).is_ok() {
                wal.size = wal.size.max(offset + data.len() as u64);
                return Ok(());
            }
            wal.spill()?;
        }
        if wal.file.is_none() {
            let file = Arc::new(OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&wal.path)?);
            wal.file = Some(file);
            wal.size = 0;
        }
        let frame = self.page_size + FRAME_HEAD;
        let commit_header = data.len() as u64 == FRAME_HEAD
            && offset >= WAL_HEAD
            && (offset - WAL_HEAD).is_multiple_of(frame)
            && data[4..8] != [0, 0, 0, 0];
        // Staged first: staging may hand earlier bytes to the kernel, which forgets
        // the commit frame awaited (a one-frame transaction's header starts afresh).
        wal.stage(offset, data)?;
        if commit_header {
            wal.commit_end = Some(offset + frame);
        }
        wal.size = wal.size.max(offset + data.len() as u64);
        let end = offset + data.len() as u64;
        if wal.commit_end.is_some_and(|commit_end| end >= commit_end) || wal.pending.len() >= PENDING_LIMIT {
            wal.flush()?;
        }
        Ok(())
    }

    /// Cut the write-ahead log to `size` bytes.
    pub(crate) fn wal_truncate(&self, size: u64) -> io::Result<()> {
        let mut wal = guard(&self.wal);
        if let Some(log) = &mut wal.memory {
            log.truncate(size);
        }
        wal.flush()?;
        if let Some(file) = &wal.file {
            file.set_len(size)?;
        }
        wal.size = wal.size.min(size);
        Ok(())
    }

    /// Sync the write-ahead log's data.
    pub(crate) fn wal_sync(&self) -> io::Result<()> {
        let file = {
            let mut wal = guard(&self.wal);
            wal.flush()?;
            wal.file.clone()
        };
        match file {
            Some(file) => file.sync_data(),
            None => Ok(()),
        }
    }

    /// The write-ahead log's size.
    pub(crate) fn wal_size(&self) -> u64 {
        guard(&self.wal).size
    }

    /// Whether the write-ahead log exists (was written and not deleted since).
    pub(crate) fn wal_exists(&self) -> bool {
        let wal = guard(&self.wal);
        wal.file.is_some() || wal.memory.is_some()
    }

    /// Delete the write-ahead log (SQLite does when the last connection closes).
    pub(crate) fn wal_delete(&self) -> io::Result<()> {
        let mut wal = guard(&self.wal);
        wal.size = 0;
        wal.pending.clear();
        wal.commit_end = None;
        wal.memory = None;
        if wal.file.take().is_some() {
            match std::fs::remove_file(&wal.path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        let _ = guard(&self.wal).flush();
        let _ = self.flush();
        registry_remove(&self.key, self);
    }
}

enum ScanError {
    Io(io::Error),
    Foreign,
}

impl From<io::Error> for ScanError {
    fn from(e: io::Error) -> ScanError {
        ScanError::Io(e)
    }
}

impl Pages {
    fn empty(base: &Base) -> Pages {
        Pages {
            file: None,
            slots: HashMap::new(),
            next_slot: 0,
            free: Vec::new(),
            size: base.size(),
            base_limit: base.size(),
            header_dirty: false,
            slot_buffer: Vec::new(),
        }
    }

    /// The map rebuilt from a file's slots (see the module's crash rules).
    fn scan(file: File, base: &Base) -> Result<Pages, ScanError> {
        let page_size = base.page_size();
        let length = file.metadata()?.len();
        let mut header = [0u8; 40];
        if length < HEADER_BYTES {
            // Torn at creation, before any slot: nothing was written.
            let mut pages = Pages::empty(base);
            pages.file = Some(Arc::new(file));
            pages.header_dirty = true;
            return Ok(pages);
        }
        file.read_exact_at(&mut header, 0)?;
        let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or_default());
        if &header[..8] != MAGIC || word(8) != page_size || checksum(0, &header[..32]) != word(32) {
            return Err(ScanError::Foreign);
        }
        let (mut size, base_limit) = (word(16), word(24));
        let slot_bytes = SLOT_HEAD + page_size;
        let count = (length - HEADER_BYTES) / slot_bytes;
        let mut slots = HashMap::new();
        let mut free = Vec::new();
        let mut kept = count;
        let mut buffer = vec![0u8; usize::try_from(slot_bytes).unwrap_or(usize::MAX)];
        for index in 0..count {
            file.read_exact_at(&mut buffer, HEADER_BYTES + index * slot_bytes)?;
            let page = u64::from_le_bytes(buffer[..8].try_into().unwrap_or_default());
            let sum = u64::from_le_bytes(buffer[8..16].try_into().unwrap_or_default());
            if page == FREE {
                free.push(index);
                continue;
            }
            let whole = checksum(page, &buffer[SLOT_HEAD as usize..]) == sum;
            if !whole && index + 1 == count {
                kept = index; // a torn append: dropped (its space is reused)
                break;
            }
            if !whole && slots.contains_key(&page) {
                free.push(index);
                continue;
            }
            slots.insert(page, index);
            size = size.max((page + 1) * page_size);
        }
        Ok(Pages {
            file: Some(Arc::new(file)),
            slots,
            next_slot: kept,
            free,
            size,
            base_limit,
            header_dirty: false,
            slot_buffer: Vec::new(),
        })
    }
}

// The overlays open in this process, by path: how the VFS finds the shared state
// (page map, WAL, WAL index, locks) of the overlay a connection names, so that every
// connection of one session sees the pages the others wrote.

fn overlays() -> &'static Mutex<HashMap<String, Weak<Overlay>>> {
    static OVERLAYS: OnceLock<Mutex<HashMap<String, Weak<Overlay>>>> = OnceLock::new();
    OVERLAYS.get_or_init(Mutex::default)
}

/// Record `overlay` under `key`; false when a live overlay holds the key already.
fn registry_insert(key: &str, overlay: &Arc<Overlay>) -> bool {
    let mut map = overlays().lock().unwrap_or_else(PoisonError::into_inner);
    if map.get(key).is_some_and(|held| held.strong_count() > 0) {
        return false;
    }
    map.insert(key.to_string(), Arc::downgrade(overlay));
    true
}

/// The live overlay registered under `key`.
pub(crate) fn lookup(key: &str) -> Option<Arc<Overlay>> {
    overlays().lock().unwrap_or_else(PoisonError::into_inner).get(key).and_then(Weak::upgrade)
}

/// Forget `key` if it still names `overlay` (a dropped one: its weak count is all that is left).
fn registry_remove(key: &str, overlay: *const Overlay) {
    let mut map = overlays().lock().unwrap_or_else(PoisonError::into_inner);
    if map.get(key).is_some_and(|held| std::ptr::eq(held.as_ptr(), overlay)) {
        map.remove(key);
    }
}

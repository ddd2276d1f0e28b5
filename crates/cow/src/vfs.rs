//! The SQLite VFS `gateway-cow`: the callbacks SQLite calls for the files of a
//! database opened with it, translated to [`Overlay`] calls.
//!
//! A file SQLite opens through this VFS is one of three things: the main database of
//! a registered overlay (reads and writes go to the overlay; locks and the WAL index
//! are the overlay's, in memory), that overlay's write-ahead log (the overlay's WAL
//! file), or anything else — passed to SQLite's default VFS, which opens it into the
//! same `sqlite3_file` (this VFS's file size is at least the default's), so SQLite then
//! calls the default VFS's methods on it directly.
//!
//! Every callback catches panics (none may unwind into C) and answers an I/O error.

use crate::error::CowError;
use crate::locks::{HeldLock, ShmHeld, NONE};
use crate::overlay::Overlay;
use rusqlite::ffi;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Arc, OnceLock, PoisonError};

/// The name connections open overlays with (`Connection::open_with_flags_and_vfs`).
pub const VFS_NAME: &str = "gateway-cow";
const VFS_NAME_C: &CStr = c"gateway-cow";

/// The default VFS, as an address (raw pointers are not `Sync`).
static DEFAULT: OnceLock<usize> = OnceLock::new();
static REGISTERED: OnceLock<Result<(), i32>> = OnceLock::new();

/// Register the VFS with SQLite (once per process; later calls answer the first
/// outcome) and answer its name. The process's soft limit on open files is raised to
/// its hard limit then too (see [`crate::raise_open_file_limit`]): a host of
/// thousands of sessions needs the descriptors their overlays hold.
pub fn register() -> Result<&'static str, CowError> {
    let outcome = REGISTERED.get_or_init(|| {
        // Best effort: a process that cannot raise it keeps the limit it has.
        let _ = crate::raise_open_file_limit();
        // SAFETY: sqlite3_vfs_find(NULL) answers the default VFS (initialising SQLite
        // first); it lives for the whole process.
        let default = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
        if default.is_null() {
            return Err(ffi::SQLITE_ERROR);
        }
        DEFAULT.get_or_init(|| default as usize);
        // SAFETY: `default` is a valid VFS (checked above); reading its fields is sound.
        let defaults = unsafe { &*default };
        let vfs = Box::leak(Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            szOsFile: defaults.szOsFile.max(std::mem::size_of::<CowFile>() as c_int),
            mxPathname: defaults.mxPathname,
            pNext: std::ptr::null_mut(),
            zName: VFS_NAME_C.as_ptr(),
            pAppData: std::ptr::null_mut(),
            xOpen: Some(x_open),
            xDelete: Some(x_delete),
            xAccess: Some(x_access),
            xFullPathname: Some(x_full_pathname),
            xDlOpen: Some(x_dl_open),
            xDlError: Some(x_dl_error),
            xDlSym: Some(x_dl_sym),
            xDlClose: Some(x_dl_close),
            xRandomness: Some(x_randomness),
            xSleep: Some(x_sleep),
            xCurrentTime: Some(x_current_time),
            xGetLastError: Some(x_get_last_error),
            xCurrentTimeInt64: Some(x_current_time_int64),
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        }));
        // SAFETY: `vfs` is leaked, so it outlives every connection; not the default.
        let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(rc)
        }
    });
    (*outcome).map(|()| VFS_NAME).map_err(CowError::Register)
}

fn default_vfs() -> *mut ffi::sqlite3_vfs {
    // Only called from callbacks of a registered VFS, so DEFAULT is set.
    DEFAULT.get().copied().unwrap_or(0) as *mut ffi::sqlite3_vfs
}

/// The `sqlite3_file` of a file this VFS handles itself.
#[repr(C)]
struct CowFile {
    base: ffi::sqlite3_file,
    handle: *mut Handle,
}

enum Handle {
    Main { overlay: Arc<Overlay>, lock: HeldLock, shm: ShmHeld },
    Wal { overlay: Arc<Overlay> },
}

impl Handle {
    fn overlay(&self) -> &Overlay {
        match self {
            Handle::Main { overlay, .. } | Handle::Wal { overlay } => overlay,
        }
    }
}

/// Run a callback's body, answering `failed` if it panics.
fn guarded(failed: c_int, body: impl FnOnce() -> c_int) -> c_int {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(failed)
}

/// The handle behind a file this VFS opened.
///
/// # Safety
/// `file` must be a `CowFile` that `x_open` filled and that is not closed yet; SQLite
/// calls one file's methods from one thread at a time, so the `&mut` is unique.
unsafe fn handle<'a>(file: *mut ffi::sqlite3_file) -> &'a mut Handle {
    // SAFETY: per this function's contract, `file` is a live CowFile whose handle is
    // a leaked Box that only this call sequence uses.
    unsafe { &mut *(*file.cast::<CowFile>()).handle }
}

/// A C string argument as `&str` (None for null or non-UTF-8).
///
/// # Safety
/// `name` is null or a NUL-terminated string valid for the call.
unsafe fn name_of<'a>(name: *const c_char) -> Option<&'a str> {
    if name.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated per this function's contract.
    unsafe { CStr::from_ptr(name) }.to_str().ok()
}

/// What a file name is to this VFS.
enum Named {
    Main(Arc<Overlay>),
    Wal(Arc<Overlay>),
    Other,
}

fn classify(name: Option<&str>) -> Named {
    let Some(name) = name else { return Named::Other };
    if let Some(overlay) = crate::overlay::lookup(name) {
        return Named::Main(overlay);
    }
    match name.strip_suffix("-wal").and_then(crate::overlay::lookup) {
        Some(overlay) => Named::Wal(overlay),
        None => Named::Other,
    }
}

/// The methods of a main database: version 3, with the overlay's WAL index
/// (shared memory) and memory-mapped reads.
const MAIN: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

// Statics: SQLite keeps the address of a file's methods.
static MAIN_METHODS: ffi::sqlite3_io_methods = MAIN;

/// A WAL file's: the same calls at version 1, without shared memory or mapping.
static WAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
    ..MAIN
};

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    guarded(ffi::SQLITE_CANTOPEN, || {
        // SAFETY: SQLite passes a file name that is null or NUL-terminated.
        let named = classify(unsafe { name_of(name) });
        let (handle, methods) = match named {
            Named::Main(overlay) if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 => {
                (Handle::Main { overlay, lock: HeldLock::default(), shm: ShmHeld::default() }, &MAIN_METHODS)
            }
            Named::Wal(overlay) if flags & ffi::SQLITE_OPEN_WAL != 0 => (Handle::Wal { overlay }, &WAL_METHODS),
            _ => {
                let default = default_vfs();
                // SAFETY: the default VFS is valid for the process; `file` has room for
                // its file (szOsFile is the larger of the two) and SQLite will call the
                // methods that open installs, not ours.
                return unsafe { ((*default).xOpen.unwrap_or(failed_open))(default, name, file, flags, out_flags) };
            }
        };
        let cow = file.cast::<CowFile>();
        // SAFETY: `file` points to szOsFile bytes SQLite allocated for this file, enough
        // for a CowFile; writing its fields initialises it. pMethods is set last, so a
        // failure before leaves it null as SQLite requires.
        unsafe {
            (*cow).handle = Box::into_raw(Box::new(handle));
            (*cow).base.pMethods = methods;
            if !out_flags.is_null() {
                *out_flags = flags;
            }
        }
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn failed_open(
    _vfs: *mut ffi::sqlite3_vfs,
    _name: ffi::sqlite3_filename,
    _file: *mut ffi::sqlite3_file,
    _flags: c_int,
    _out: *mut c_int,
) -> c_int {
    ffi::SQLITE_CANTOPEN
}

unsafe extern "C" fn x_delete(_vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_DELETE, || {
        // SAFETY: SQLite passes a NUL-terminated name.
        match classify(unsafe { name_of(name) }) {
            Named::Wal(overlay) => overlay.wal_delete().map_or(ffi::SQLITE_IOERR_DELETE, |()| ffi::SQLITE_OK),
            Named::Main(_) => ffi::SQLITE_IOERR_DELETE,
            Named::Other => {
                let default = default_vfs();
                // SAFETY: forwarded unchanged to the default VFS.
                unsafe { (*default).xDelete.map_or(ffi::SQLITE_IOERR_DELETE, |f| f(default, name, sync_dir)) }
            }
        }
    })
}

unsafe extern "C" fn x_access(_vfs: *mut ffi::sqlite3_vfs, name: *const c_char, flags: c_int, out: *mut c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_ACCESS, || {
        // SAFETY: SQLite passes a NUL-terminated name.
        let answer = match classify(unsafe { name_of(name) }) {
            Named::Main(_) => 1,
            Named::Wal(overlay) => c_int::from(overlay.wal_exists()),
            Named::Other => {
                let default = default_vfs();
                // SAFETY: forwarded unchanged to the default VFS.
                return unsafe { (*default).xAccess.map_or(ffi::SQLITE_IOERR_ACCESS, |f| f(default, name, flags, out)) };
            }
        };
        // SAFETY: SQLite passes a valid int to answer in.
        unsafe { *out = answer };
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_full_pathname(_vfs: *mut ffi::sqlite3_vfs, name: *const c_char, n_out: c_int, out: *mut c_char) -> c_int {
    guarded(ffi::SQLITE_CANTOPEN, || {
        // SAFETY: SQLite passes a NUL-terminated name.
        if let Named::Main(_) = classify(unsafe { name_of(name) }) {
            // An overlay's registered name is absolute already: kept as it is, so the
            // name SQLite opens (and derives the WAL's from) is the registry's key.
            // SAFETY: `name` is NUL-terminated (above).
            let bytes = unsafe { CStr::from_ptr(name) }.to_bytes_with_nul();
            if bytes.len() > usize::try_from(n_out).unwrap_or(0) {
                return ffi::SQLITE_CANTOPEN;
            }
            // SAFETY: `out` has room for n_out bytes, checked above.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), out, bytes.len()) };
            return ffi::SQLITE_OK;
        }
        let default = default_vfs();
        // SAFETY: forwarded unchanged to the default VFS.
        unsafe { (*default).xFullPathname.map_or(ffi::SQLITE_CANTOPEN, |f| f(default, name, n_out, out)) }
    })
}

// The rest of the VFS is the default's, forwarded with the default's own pointer.

unsafe extern "C" fn x_dl_open(_vfs: *mut ffi::sqlite3_vfs, name: *const c_char) -> *mut c_void {
    let default = default_vfs();
    // SAFETY: forwarded unchanged to the default VFS.
    unsafe { (*default).xDlOpen.map_or(std::ptr::null_mut(), |f| f(default, name)) }
}

unsafe extern "C" fn x_dl_error(_vfs: *mut ffi::sqlite3_vfs, n: c_int, message: *mut c_char) {
    let default = default_vfs();
    // SAFETY: forwarded unchanged to the default VFS.
    unsafe {
        if let Some(f) = (*default).xDlError {
            f(default, n, message);
        }
    }
}

type DlSymbol = Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)>;

unsafe extern "C" fn x_dl_sym(_vfs: *mut ffi::sqlite3_vfs, library: *mut c_void, symbol: *const c_char) -> DlSymbol {
    let default = default_vfs();
    // SAFETY: forwarded unchanged to the default VFS.
    unsafe { (*default).xDlSym.and_then(|f| f(default, library, symbol)) }
}

unsafe extern "C" fn x_dl_close(_vfs: *mut ffi::sqlite3_vfs, library: *mut c_void) {
    let default = default_vfs();
    // SAFETY: forwarded unchanged to the default VFS.
    unsafe {
        if let Some(f) = (*default).xDlClose {
            f(default, library);
        }
    }
}

unsafe extern "C" fn x_randomness(_vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    let default = default_vfs();
    // SAFETY: forwarded unchanged to the default VFS.
    unsafe { (*default).xRandomness.map_or(0, |f| f(default, n, out)) }
}

unsafe extern "C" fn x_sleep(_vfs: *mut ffi::sqlite3_vfs, microseconds: c_int) -> c_int {
    let default = default_vfs();
    // SAFETY: forwarded unchanged to the default VFS.
    unsafe { (*default).xSleep.map_or(0, |f| f(default, microseconds)) }
}

unsafe extern "C" fn x_current_time(_vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    let default = default_vfs();
    // SAFETY: forwarded unchanged to the default VFS.
    unsafe { (*default).xCurrentTime.map_or(ffi::SQLITE_ERROR, |f| f(default, out)) }
}

unsafe extern "C" fn x_get_last_error(_vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    let default = default_vfs();
    // SAFETY: forwarded unchanged to the default VFS.
    unsafe { (*default).xGetLastError.map_or(0, |f| f(default, n, out)) }
}

unsafe extern "C" fn x_current_time_int64(_vfs: *mut ffi::sqlite3_vfs, out: *mut ffi::sqlite3_int64) -> c_int {
    let default = default_vfs();
    // SAFETY: forwarded unchanged to the default VFS.
    unsafe { (*default).xCurrentTimeInt64.map_or(ffi::SQLITE_ERROR, |f| f(default, out)) }
}

// The file methods: `file` is always a CowFile x_open filled (SQLite calls a file's
// methods only through the pMethods x_open installed).

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    guarded(ffi::SQLITE_IOERR_CLOSE, || {
        let cow = file.cast::<CowFile>();
        // SAFETY: a live CowFile (see above); its handle is the Box x_open leaked,
        // taken back once here, and the file is not used after xClose.
        let mut handle = unsafe { Box::from_raw((*cow).handle) };
        // SAFETY: as above; cleared so no method can reach the freed handle.
        unsafe { (*cow).handle = std::ptr::null_mut() };
        if let Handle::Main { overlay, lock, shm } = &mut *handle {
            overlay.locks.lock().unwrap_or_else(PoisonError::into_inner).unlock(lock, NONE);
            overlay.shm.lock().unwrap_or_else(PoisonError::into_inner).unmap(shm);
            if overlay.flush().is_err() {
                return ffi::SQLITE_IOERR_CLOSE;
            }
        }
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: ffi::sqlite3_int64) -> c_int {
    guarded(ffi::SQLITE_IOERR_READ, || {
        // SAFETY: a live CowFile (see above).
        let handle = unsafe { handle(file) };
        // SAFETY: SQLite passes a buffer of `amount` writable bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), usize::try_from(amount).unwrap_or(0)) };
        let offset = u64::try_from(offset).unwrap_or(0);
        let read = match handle {
            Handle::Main { overlay, .. } => overlay.read(offset, out),
            Handle::Wal { overlay } => overlay.wal_read(offset, out),
        };
        match read {
            Ok(false) => ffi::SQLITE_OK,
            Ok(true) => ffi::SQLITE_IOERR_SHORT_READ,
            Err(_) => ffi::SQLITE_IOERR_READ,
        }
    })
}

unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: ffi::sqlite3_int64) -> c_int {
    guarded(ffi::SQLITE_IOERR_WRITE, || {
        // SAFETY: a live CowFile (see above).
        let handle = unsafe { handle(file) };
        // SAFETY: SQLite passes `amount` readable bytes.
        let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), usize::try_from(amount).unwrap_or(0)) };
        let offset = u64::try_from(offset).unwrap_or(0);
        let written = match handle {
            Handle::Main { overlay, .. } => overlay.write(offset, data),
            Handle::Wal { overlay } => overlay.wal_write(offset, data),
        };
        written.map_or(ffi::SQLITE_IOERR_WRITE, |()| ffi::SQLITE_OK)
    })
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    guarded(ffi::SQLITE_IOERR_TRUNCATE, || {
        // SAFETY: a live CowFile (see above).
        let handle = unsafe { handle(file) };
        let size = u64::try_from(size).unwrap_or(0);
        let done = match handle {
            Handle::Main { overlay, .. } => overlay.truncate(size),
            Handle::Wal { overlay } => overlay.wal_truncate(size),
        };
        done.map_or(ffi::SQLITE_IOERR_TRUNCATE, |()| ffi::SQLITE_OK)
    })
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_FSYNC, || {
        // SAFETY: a live CowFile (see above).
        let synced = match unsafe { handle(file) } {
            Handle::Main { overlay, .. } => overlay.sync(),
            Handle::Wal { overlay } => overlay.wal_sync(),
        };
        synced.map_or(ffi::SQLITE_IOERR_FSYNC, |()| ffi::SQLITE_OK)
    })
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, out: *mut ffi::sqlite3_int64) -> c_int {
    guarded(ffi::SQLITE_IOERR_FSTAT, || {
        // SAFETY: a live CowFile (see above).
        let size = match unsafe { handle(file) } {
            Handle::Main { overlay, .. } => overlay.size(),
            Handle::Wal { overlay } => overlay.wal_size(),
        };
        // SAFETY: SQLite passes a valid integer to answer in.
        unsafe { *out = ffi::sqlite3_int64::try_from(size).unwrap_or(ffi::sqlite3_int64::MAX) };
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_LOCK, || {
        // SAFETY: a live CowFile (see above).
        match unsafe { handle(file) } {
            Handle::Main { overlay, lock, .. } => {
                let granted = overlay.locks.lock().unwrap_or_else(PoisonError::into_inner).lock(lock, level);
                if granted {
                    ffi::SQLITE_OK
                } else {
                    ffi::SQLITE_BUSY
                }
            }
            // Nothing locks a WAL file itself.
            Handle::Wal { .. } => ffi::SQLITE_OK,
        }
    })
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_UNLOCK, || {
        // SAFETY: a live CowFile (see above).
        if let Handle::Main { overlay, lock, .. } = unsafe { handle(file) } {
            overlay.locks.lock().unwrap_or_else(PoisonError::into_inner).unlock(lock, level);
        }
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, || {
        // SAFETY: a live CowFile (see above).
        let reserved = match unsafe { handle(file) } {
            Handle::Main { overlay, .. } => overlay.locks.lock().unwrap_or_else(PoisonError::into_inner).reserved(),
            Handle::Wal { .. } => false,
        };
        // SAFETY: SQLite passes a valid int to answer in.
        unsafe { *out = c_int::from(reserved) };
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_file_control(_file: *mut ffi::sqlite3_file, _op: c_int, _arg: *mut c_void) -> c_int {
    // No file control is needed: SQLite treats NOTFOUND as "not supported".
    ffi::SQLITE_NOTFOUND
}

unsafe extern "C" fn x_sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    4096
}

unsafe extern "C" fn x_device_characteristics(_file: *mut ffi::sqlite3_file) -> c_int {
    // A write never damages bytes around it (slots are whole pages written by pwrite).
    ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE
}

unsafe extern "C" fn x_shm_map(file: *mut ffi::sqlite3_file, region: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int {
    guarded(ffi::SQLITE_IOERR_SHMMAP, || {
        // SAFETY: a live CowFile (see above).
        let Handle::Main { overlay, shm, .. } = (unsafe { handle(file) }) else { return ffi::SQLITE_IOERR_SHMMAP };
        let (Ok(region), Ok(size)) = (usize::try_from(region), usize::try_from(size)) else { return ffi::SQLITE_IOERR_SHMMAP };
        let mapped = overlay.shm.lock().unwrap_or_else(PoisonError::into_inner).map(shm, region, size, extend != 0);
        match mapped {
            Ok(address) => {
                // SAFETY: SQLite passes a valid pointer to answer in.
                unsafe { *out = address.cast() };
                ffi::SQLITE_OK
            }
            Err(_) => ffi::SQLITE_IOERR_SHMMAP,
        }
    })
}

unsafe extern "C" fn x_shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_SHMLOCK, || {
        // SAFETY: a live CowFile (see above).
        let Handle::Main { overlay, shm, .. } = (unsafe { handle(file) }) else { return ffi::SQLITE_IOERR_SHMLOCK };
        let (Ok(offset), Ok(n)) = (usize::try_from(offset), usize::try_from(n)) else { return ffi::SQLITE_IOERR_SHMLOCK };
        if overlay.shm.lock().unwrap_or_else(PoisonError::into_inner).lock(shm, offset, n, flags) {
            ffi::SQLITE_OK
        } else {
            ffi::SQLITE_BUSY
        }
    })
}

unsafe extern "C" fn x_shm_barrier(_file: *mut ffi::sqlite3_file) {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, _delete: c_int) -> c_int {
    guarded(ffi::SQLITE_IOERR_SHMMAP, || {
        // SAFETY: a live CowFile (see above).
        if let Handle::Main { overlay, shm, .. } = unsafe { handle(file) } {
            overlay.shm.lock().unwrap_or_else(PoisonError::into_inner).unmap(shm);
        }
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_fetch(file: *mut ffi::sqlite3_file, offset: ffi::sqlite3_int64, amount: c_int, out: *mut *mut c_void) -> c_int {
    guarded(ffi::SQLITE_IOERR_MMAP, || {
        // SAFETY: a live CowFile (see above).
        let handle = unsafe { handle(file) };
        let (Ok(offset), Ok(amount)) = (u64::try_from(offset), usize::try_from(amount)) else { return ffi::SQLITE_IOERR_MMAP };
        // A page the session never wrote is read straight from the base's mapping;
        // any other answers null, and SQLite reads it with xRead.
        let page = handle.overlay().fetch(offset, amount).unwrap_or(std::ptr::null());
        // SAFETY: SQLite passes a valid pointer to answer in; it only reads through it.
        unsafe { *out = page.cast_mut().cast() };
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_unfetch(_file: *mut ffi::sqlite3_file, _offset: ffi::sqlite3_int64, _page: *mut c_void) -> c_int {
    // The base's mapping lives as long as the overlay: nothing to release per page.
    ffi::SQLITE_OK
}

//! SQLite's own page cache, wrapped so that the truncate that ends every transaction
//! does not scan the whole cache.
//!
//! Why: when a B-tree split puts its new pages in ascending order
//! (`balance_nonroot`), SQLite swaps two pages through a temporary page number, the
//! one after the lock-byte page (262,145 for 4 KiB pages). The default cache
//! (`pcache1`) remembers the highest key it ever held, so from then on the truncate at
//! the end of the transaction (pages past the database's end are dropped) believes
//! pages up there may exist and walks every slot of its hash table — 8,192 of them for
//! a session writer's 32 MiB cache — instead of the few past the end. Under a load of
//! random-keyed inserts that was the largest single function of the create path.
//!
//! The wrapper keeps, per cache, an upper bound of the keys the cache holds — every
//! key fetched or moved to, except the temporary one, which `balance_nonroot` always
//! moves away again in the same three calls — and passes a truncate on only when a
//! page at or past its limit can exist. Everything else goes to the default cache
//! unchanged.
//!
//! Installed once per process with [`install_page_cache`], which must run before
//! SQLite is first used (`sqlite3_config` is refused afterwards).

use rusqlite::ffi;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// SQLite's lock-byte offset (`PENDING_BYTE`, 1 GiB unless a test build moves it).
const PENDING_BYTE: c_uint = 0x4000_0000;

/// The default page cache's methods, as SQLite had them before the wrapper.
struct Inner(ffi::sqlite3_pcache_methods2);

// SAFETY: the methods are function pointers and SQLite's own argument pointer (null
// for the default cache), written once before any use and never changed: sharing them
// between threads is sound.
unsafe impl Send for Inner {}
// SAFETY: as above; the value is only read.
unsafe impl Sync for Inner {}

static INNER: OnceLock<Inner> = OnceLock::new();
static INSTALLED: OnceLock<Result<(), i32>> = OnceLock::new();
static PASSED: AtomicU64 = AtomicU64::new(0);
static SKIPPED: AtomicU64 = AtomicU64::new(0);

/// What the wrapper did with the truncates SQLite asked of it, since the process began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageCacheStats {
    /// Passed on to the default cache (a page at or past the limit could exist).
    pub truncates_passed: u64,
    /// Answered here: no page could be at or past the limit.
    pub truncates_skipped: u64,
}

/// The wrapper's counts (zero when it is not installed).
pub fn page_cache_stats() -> PageCacheStats {
    PageCacheStats { truncates_passed: PASSED.load(Ordering::Relaxed), truncates_skipped: SKIPPED.load(Ordering::Relaxed) }
}

/// One wrapped cache: the default cache's handle and the bound of its keys.
struct Cache {
    inner: *mut ffi::sqlite3_pcache,
    /// No page of the cache has a key above this (the temporary key aside).
    highest: c_uint,
    /// The key `balance_nonroot` swaps pages through, for this cache's page size.
    swap_key: c_uint,
}

/// Wrap SQLite's page cache (once per process; later calls answer the first
/// outcome). Fails with SQLite's result code when SQLite was already in use.
pub fn install_page_cache() -> Result<(), crate::CowError> {
    let outcome = INSTALLED.get_or_init(|| {
        let mut default = ffi::sqlite3_pcache_methods2 {
            iVersion: 0,
            pArg: std::ptr::null_mut(),
            xInit: None,
            xShutdown: None,
            xCreate: None,
            xCachesize: None,
            xPagecount: None,
            xFetch: None,
            xUnpin: None,
            xRekey: None,
            xTruncate: None,
            xDestroy: None,
            xShrink: None,
        };
        // SAFETY: GETPCACHE2 fills the struct it is given (the default cache when none
        // was configured); the pointer is to a live local of the right type.
        let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETPCACHE2, &mut default as *mut ffi::sqlite3_pcache_methods2) };
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        if INNER.set(Inner(default)).is_err() {
            return Err(ffi::SQLITE_MISUSE);
        }
        let wrapper = ffi::sqlite3_pcache_methods2 {
            iVersion: 1,
            pArg: std::ptr::null_mut(),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            xCreate: Some(x_create),
            xCachesize: Some(x_cachesize),
            xPagecount: Some(x_pagecount),
            xFetch: Some(x_fetch),
            xUnpin: Some(x_unpin),
            xRekey: Some(x_rekey),
            xTruncate: Some(x_truncate),
            xDestroy: Some(x_destroy),
            xShrink: Some(x_shrink),
        };
        // SAFETY: PCACHE2 copies the struct; the callbacks it names live for the
        // process. SQLite answers SQLITE_MISUSE (and changes nothing) once initialised.
        let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_PCACHE2, &wrapper as *const ffi::sqlite3_pcache_methods2) };
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(rc)
        }
    });
    (*outcome).map_err(crate::CowError::PageCache)
}

/// Whether the wrapper is SQLite's page cache in this process.
pub fn page_cache_installed() -> bool {
    matches!(INSTALLED.get(), Some(Ok(())))
}

fn inner() -> &'static ffi::sqlite3_pcache_methods2 {
    // Only callbacks of the installed wrapper call this, and INNER is set before it is.
    &INNER.get().expect("the wrapper is installed after its inner cache is known").0
}

/// The wrapped cache behind a handle SQLite holds.
///
/// # Safety
/// `cache` must be a handle `x_create` returned and `x_destroy` has not freed. SQLite
/// calls one cache's methods from one thread at a time, so the `&mut` is unique.
unsafe fn cache<'a>(cache: *mut ffi::sqlite3_pcache) -> &'a mut Cache {
    // SAFETY: per the contract, a live Box<Cache> leaked by x_create.
    unsafe { &mut *cache.cast::<Cache>() }
}

unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
    let inner = inner();
    match inner.xInit {
        // SAFETY: the default cache's own initialiser with its own argument.
        Some(init) => unsafe { init(inner.pArg) },
        None => ffi::SQLITE_OK,
    }
}

unsafe extern "C" fn x_shutdown(_: *mut c_void) {
    let inner = inner();
    if let Some(shutdown) = inner.xShutdown {
        // SAFETY: the default cache's own shutdown with its own argument.
        unsafe { shutdown(inner.pArg) }
    }
}

unsafe extern "C" fn x_create(page_size: c_int, extra: c_int, purgeable: c_int) -> *mut ffi::sqlite3_pcache {
    let Some(create) = inner().xCreate else { return std::ptr::null_mut() };
    // SAFETY: the default cache's constructor, with SQLite's own arguments.
    let handle = unsafe { create(page_size, extra, purgeable) };
    if handle.is_null() {
        return handle;
    }
    let page_size = c_uint::try_from(page_size).unwrap_or(1).max(1);
    let wrapped = Box::new(Cache { inner: handle, highest: 0, swap_key: PENDING_BYTE / page_size + 1 });
    Box::into_raw(wrapped).cast()
}

unsafe extern "C" fn x_cachesize(handle: *mut ffi::sqlite3_pcache, pages: c_int) {
    // SAFETY: a live handle (SQLite's contract for every method below too).
    let cache = unsafe { cache(handle) };
    if let Some(size) = inner().xCachesize {
        // SAFETY: the default cache's method on its own handle.
        unsafe { size(cache.inner, pages) }
    }
}

unsafe extern "C" fn x_pagecount(handle: *mut ffi::sqlite3_pcache) -> c_int {
    // SAFETY: a live handle.
    let cache = unsafe { cache(handle) };
    // SAFETY: the default cache's method on its own handle.
    inner().xPagecount.map_or(0, |count| unsafe { count(cache.inner) })
}

unsafe extern "C" fn x_fetch(handle: *mut ffi::sqlite3_pcache, key: c_uint, create: c_int) -> *mut ffi::sqlite3_pcache_page {
    // SAFETY: a live handle.
    let cache = unsafe { cache(handle) };
    let Some(fetch) = inner().xFetch else { return std::ptr::null_mut() };
    // SAFETY: the default cache's method on its own handle.
    let page = unsafe { fetch(cache.inner, key, create) };
    if !page.is_null() {
        cache.highest = cache.highest.max(key);
    }
    page
}

unsafe extern "C" fn x_unpin(handle: *mut ffi::sqlite3_pcache, page: *mut ffi::sqlite3_pcache_page, discard: c_int) {
    // SAFETY: a live handle.
    let cache = unsafe { cache(handle) };
    if let Some(unpin) = inner().xUnpin {
        // SAFETY: the default cache's method on its own handle and page.
        unsafe { unpin(cache.inner, page, discard) }
    }
}

unsafe extern "C" fn x_rekey(handle: *mut ffi::sqlite3_pcache, page: *mut ffi::sqlite3_pcache_page, old: c_uint, new: c_uint) {
    // SAFETY: a live handle.
    let cache = unsafe { cache(handle) };
    // The swap key is left again before the swap's caller returns (see the module).
    if new != cache.swap_key {
        cache.highest = cache.highest.max(new);
    }
    if let Some(rekey) = inner().xRekey {
        // SAFETY: the default cache's method on its own handle and page.
        unsafe { rekey(cache.inner, page, old, new) }
    }
}

unsafe extern "C" fn x_truncate(handle: *mut ffi::sqlite3_pcache, limit: c_uint) {
    // SAFETY: a live handle.
    let cache = unsafe { cache(handle) };
    if limit > cache.highest {
        // No page has a key at or past the limit: nothing to drop.
        SKIPPED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    PASSED.fetch_add(1, Ordering::Relaxed);
    if let Some(truncate) = inner().xTruncate {
        // SAFETY: the default cache's method on its own handle.
        unsafe { truncate(cache.inner, limit) }
    }
    cache.highest = limit.saturating_sub(1);
}

unsafe extern "C" fn x_destroy(handle: *mut ffi::sqlite3_pcache) {
    // SAFETY: a live handle, given back to us for the last time: the Box is reclaimed.
    let cache = unsafe { Box::from_raw(handle.cast::<Cache>()) };
    if let Some(destroy) = inner().xDestroy {
        // SAFETY: the default cache's destructor on its own handle.
        unsafe { destroy(cache.inner) }
    }
}

unsafe extern "C" fn x_shrink(handle: *mut ffi::sqlite3_pcache) {
    // SAFETY: a live handle.
    let cache = unsafe { cache(handle) };
    if let Some(shrink) = inner().xShrink {
        // SAFETY: the default cache's method on its own handle.
        unsafe { shrink(cache.inner) }
    }
}

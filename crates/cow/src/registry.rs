//! The overlays open in this process, by path: how the VFS finds the shared state
//! (page map, WAL, WAL index, locks) of the overlay a connection names, so that every
//! connection of one session sees the pages the others wrote.

use crate::overlay::Overlay;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

fn overlays() -> &'static Mutex<HashMap<String, Weak<Overlay>>> {
    static OVERLAYS: OnceLock<Mutex<HashMap<String, Weak<Overlay>>>> = OnceLock::new();
    OVERLAYS.get_or_init(Mutex::default)
}

/// Record `overlay` under `key`; false when a live overlay holds the key already.
pub(crate) fn insert(key: &str, overlay: &Arc<Overlay>) -> bool {
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
pub(crate) fn remove(key: &str, overlay: *const Overlay) {
    let mut map = overlays().lock().unwrap_or_else(PoisonError::into_inner);
    if map.get(key).is_some_and(|held| std::ptr::eq(held.as_ptr(), overlay)) {
        map.remove(key);
    }
}

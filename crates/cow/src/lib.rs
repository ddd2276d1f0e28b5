//! Copy-on-write SQLite databases: many sessions share one immutable snapshot
//! file and each keeps only the pages it changed, so opening, resetting and
//! forking a session cost the same whatever the snapshot's size.
//!
//! The pieces:
//! - [`Base`]: the snapshot (a normal SQLite file at a path, never written once
//!   sessions use it), opened once per template and shared: one file descriptor and
//!   one read-only mapping for all of its sessions.
//! - [`Overlay`]: one session's database. Pages it wrote live in its own overlay file
//!   (slots of `[page number, checksum, page bytes]`, a page-number → slot map kept
//!   in memory and rebuilt by scanning the file on [`Overlay::open`]); every other page
//!   is read from the base. Its write-ahead log, the WAL index (in memory: all of a
//!   session's connections are in this process) and the locks between its connections
//!   are the overlay's too, shared by every connection that opens it; a volatile
//!   overlay's log is kept in memory, within a budget for the whole process.
//! - the VFS ([`register`], [`VFS_NAME`]): SQLite's file layer for those databases. A
//!   connection opens an overlay by its path with this VFS; any other file (the base
//!   attached by name, a `VACUUM INTO` target, journals, temporary files) goes to
//!   SQLite's own default VFS untouched.
//!
//! Why a VFS written here rather than a crate: the two maintained ones (`sqlite-vfs`,
//! `sqlite-plugin`) bring their own SQLite bindings or need a newer Rust than the
//! workspace's 1.80, and neither delegates the files it does not handle to the
//! default VFS, which is what keeps `ATTACH` of the template and `VACUUM INTO`
//! working here. The surface SQLite needs is small: about twenty callbacks, all in
//! `vfs.rs`; everything they do to data is plain safe Rust in `overlay.rs`, `locks.rs`.

mod base;
mod error;
mod locks;
mod memlog;
mod overlay;
#[allow(unsafe_code)]
mod pcache;
#[allow(unsafe_code)]
mod sys;
#[allow(unsafe_code)]
mod vfs;
mod wal;

pub use base::Base;
pub use error::CowError;
pub use memlog::{memory_wal_bytes, set_memory_wal_budget, DEFAULT_BUDGET as DEFAULT_MEMORY_WAL_BUDGET};
pub use overlay::{Overlay, OverlayStats};
pub use pcache::{install_page_cache, page_cache_installed, page_cache_stats, PageCacheStats};
pub use sys::raise_open_file_limit;
pub use vfs::{register, VFS_NAME};

#[cfg(test)]
mod tests;

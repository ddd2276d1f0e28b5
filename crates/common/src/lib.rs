//! What every gateway crate shares, one of each: URL codecs spelled as Python's
//! `urllib.parse` ([`url`]), atomic writes, tree copies and SHA-256 ([`fs`]), UTC dates
//! ([`time`]), the one random source ([`random`]) and the per-process temporary
//! directory ([`temp`]).
//!
//! It is the bottom of the workspace: it depends on no gateway crate, holds no JSON,
//! no SQL and no I/O beyond the file system, and stays synchronous.

pub mod fs;
pub mod random;
pub mod temp;
pub mod time;
pub mod url;

//! `connector.toml`: how a vendor's API is reached and shaped, described once.
//!
//! The same file drives capture (what to call), ingest (where rows land) and
//! serving (which routes a world answers). This crate parses and checks it with
//! the original's refusals. It does no HTTP itself.

pub mod spec;

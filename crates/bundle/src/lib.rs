//! A world bundle, as the hub's server and its clients both read and write it: which
//! files a push carries and their content hash (spec §9.1, with the root `.gitignore`
//! matched as the original matches it), the deterministic source tarball (§9.2), the
//! file manifest (§9.3), the snapshot recorded as `baseFiles` (§9.4), safe extraction
//! within limits, and the facts read back out of a stored bundle (its pass bar).
//!
//! It is not the hub: no HTTP, no store, no async — `gateway-hub` serves and stores
//! bundles and `gateway-hub-client` pushes and pulls them, both through this crate so
//! that a bundle's bytes and hash are computed once. It does not compile or check the
//! world inside a bundle (that is `gateway-world`).

pub mod archive;
pub mod error;
pub mod extract;
pub mod gitignore;
pub mod world_facts;

pub use error::BundleError;

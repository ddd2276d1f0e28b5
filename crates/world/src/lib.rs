//! The world engine of gateway-rs: everything a world *is*, independent of how it
//! is served or shipped.
//!
//! A world is a directory: a data contract (`schema/world.json`, dialect
//! `gateway-world/1`), seed batches (`data/initial.json`, `data/batches/*.json`),
//! scenarios, and the artifacts the compiler generates from them. This crate
//! parses and checks the contract ([`dialect`]), compiles it byte-for-byte as the
//! original Python engine does ([`compiler`]), holds state in SQLite ([`store`]),
//! applies batches atomically, builds and verifies snapshots ([`snapshot`]),
//! scaffolds new worlds ([`scaffold`]), answers what a world seeds with
//! ([`data`]) and checks and grades session tasks ([`task`]).
//!
//! It is not an HTTP server, a CLI or an async runtime: it is synchronous and
//! knows nothing of clap, axum or the network. Those live in the `serve`, `hub`
//! and `cli` crates, which call into this one.

pub mod artifacts;
pub mod batch;
pub mod check;
pub mod chunks;
pub mod compiler;
pub mod contract;
pub mod data;
pub mod dialect;
pub mod error;
pub mod extract;
pub mod files;
pub mod hash;
pub mod import;
pub mod json;
pub mod lifecycle;
pub mod mock_tools;
pub mod plan;
pub mod rows;
pub mod scaffold;
pub mod snapshot;
pub mod store;
pub mod task;
pub mod validator;
pub mod vendor_template;
pub mod world;

pub use compiler::{build, Contract};
pub use error::{ContractError, Error, Result};
pub use json::Value;
pub use world::World;

/// The version this engine reports as the snapshot `runtime`.
pub const RUNTIME: &str = concat!("gateway-rs ", env!("CARGO_PKG_VERSION"));

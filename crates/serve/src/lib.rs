//! Serving a world's vendor API from the world itself.
//!
//! `connector.toml` describes the vendor's routes; `[api]` and `[operations.api]`
//! say how the world answers them (envelopes, paging, filters, writes, handlers).
//! This crate turns a compiled world into an HTTP server that answers exactly as
//! the original's `gateway worlds serve`: the same statuses, bodies and headers.
//! It is not the engine (that is `gateway-world`) nor the connector tooling.

pub mod app;
pub mod arguments;
mod body;
pub mod bundle;
pub mod clock;
mod ctx;
mod dotted;
pub mod generate;
pub mod handlers;
pub mod listing;
pub mod nested;
pub mod openapi;
pub mod page;
pub mod reply;
pub mod request_log;
mod response;
pub mod router;
pub mod server;
pub mod settings;
pub mod sql;
pub mod state;
pub mod state_diff;
pub mod vendor;
pub mod worker_log;

//! The hub's storage: everything `gateway-hub` keeps, behind the [`store`] traits.
//!
//! - the metadata: [`store::MetaStore`] (projects and keys, containers, versions, refs,
//!   proposals, secrets, run configs, platform documents) with its parts —
//!   evaluations ([`evaluations`]), the agents platform ([`agents`]), workspace
//!   connectors ([`connectors`]), world data batches ([`world_data`]) — on SQLite
//!   ([`sqlite`], the default) or PostgreSQL ([`postgres`]), one schema for both
//!   (`migrations/*.sql`, the row mapping written once);
//! - the objects: [`store::ObjectStore`] on a local directory ([`store::LocalObjects`])
//!   or an S3-compatible bucket ([`s3`]);
//! - the key material under `<data>/keys` and the secrets it seals ([`keys`]), and the
//!   World Hosts' credentials kept in the metadata ([`host_credentials`]);
//! - [`StoreError`], every failure of the above and the refusals the stores decide
//!   themselves (a moved branch tip, a taken name, a record that is not there).
//!
//! It is not the server (`gateway-hub`, which depends on this crate and never the other
//! way round): it knows nothing of HTTP, axum, routes, the web pages, sessions or World
//! Hosts, and it runs no world code. The HTTP status a [`StoreError`] is answered with is
//! the server's business ([`StoreError::status`] only says which class a failure is in).

pub mod agents;
pub mod connectors;
pub mod error;
pub mod evaluations;
pub mod host_credentials;
pub mod keys;
mod migrations;
pub mod postgres;
mod rows;
pub mod s3;
pub mod sqlite;
pub mod store;
pub mod util;
pub mod world_data;

pub use error::{SecretFailure, StoreError, StoreResult};

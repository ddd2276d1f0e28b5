//! The World Host: one process holding many live sessions of many world versions.
//!
//! A session is an isolated copy of a version's snapshot (a file copy of the
//! version's indexed template), answered by the same app `worlds serve` runs, with
//! its task (a bundled scenario, or a task spec of its own: seed, grader, allowed
//! tools), a token and a lease. The platform (our hub, or any platform speaking
//! the original's protocol) drives it over the control plane (`/__host/*`), or, in
//! the same process, with the same requests typed ([`ControlRequest`]); agents
//! reach a session's vendor API over the data plane.
//!
//! It is not the platform: it keeps no call log, judges no rubric, mints no
//! tokens and knows nothing of projects. It fetches bundles and moves exports
//! through functions its caller provides ([`version::Fetch`], [`host::Objects`]),
//! so it needs no HTTP client of its own.

pub mod behaviour;
pub mod control;
pub mod error;
pub mod host;
pub mod mcp;
pub mod selftest;
pub mod server;
pub mod session;
pub mod tool_schema;
pub mod tools;
pub mod version;
pub mod wording;
pub mod world_tools;

pub use control::ControlRequest;
pub use error::HostError;
pub use host::{HostConfig, OpenRequest, WorldHost};

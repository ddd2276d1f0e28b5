//! `connector.toml`: how a vendor's API is reached and shaped, described once.
//!
//! The same file drives capture (what to call), ingest (where rows land) and
//! serving (which routes a world answers). [`spec`] parses and checks it with the
//! original's refusals; [`capture`] calls the live connection (the only HTTP client
//! in the workspace) within an [`egress`] policy, [`redact`] cleans bodies before they
//! touch disk, [`ingest`] turns captures into the world's seed batch, [`authoring`] appends routes and
//! entities without disturbing the rest of a file, and [`skill`] carries the
//! packaged agent skills.

pub mod authoring;
pub mod capture;
pub mod egress;
pub mod ingest;
pub mod redact;
pub mod skill;
pub mod spec;
pub mod url;

//! The hub's HTTP API (`/api/public/benchmark-containers/*` with evaluations, world
//! sessions and tasks, environments and task sets, the agents platform: secrets, agents,
//! datasets, runs, agent builds and the release gate; beyond the original, evaluation
//! samples' final states and their regrade) and its object routes, on axum. Every answer is a non-empty JSON object; every refusal is
//! `{"error": <code>, "message": <what happened and what to do>}` with its status.
//! `/` and `/ui/…` are the web pages (`web.rs`), HTML rather than JSON.

// Each module names what it uses from the leaves it needs (the state, the request and
// response helpers, the store); none names this module's own items.
mod access;
mod agents;
mod app;
mod call_log;
mod call_record;
mod captures;
mod connectors;
mod data_plane;
mod documents;
mod environments;
mod eval_states;
mod evaluations;
pub(crate) use gateway_hub_store::keys;
mod objects;
mod openapi;
mod refs;
mod regrade;
mod release;
mod request;
mod response;
mod routes;
mod runs;
mod session_fork;
mod session_guard;
mod sessions;
mod settings;
mod state;
mod task_sets;
mod tasks;
mod versions;
mod web;
mod world_data;
mod world_host;

pub use access::{check_ref_name, check_slug};
pub use app::{router, serve, serve_on, serve_until};
pub use call_record::BODY_CAP as CALL_LOG_BODY_CAP;
pub use keys::{hash_secret, new_key_pair, write_private_file, Keys};
pub use state::{Hub, Limits, DEFAULT_SESSIONS_PER_PROJECT};

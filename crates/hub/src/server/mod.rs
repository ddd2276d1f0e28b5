//! The hub's HTTP API (`/api/public/benchmark-containers/*` with evaluations, world
//! sessions and tasks, environments and task sets, the agents platform: secrets, agents,
//! datasets, runs, agent builds and the release gate; beyond the original, evaluation
//! samples' final states and their regrade) and its object routes, on axum. Every answer is a non-empty JSON object; every refusal is
//! `{"error": <code>, "message": <what happened and what to do>}` with its status.
//! `/` and `/ui/…` are the web pages (`web.rs`), HTML rather than JSON.

// What the route modules share (they `use super::*`).
use crate::error::HubError;
use crate::store::*;
use crate::util::{new_id, now_iso, now_secs, strings};
use axum::body::{to_bytes, Body};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use base64::Engine as _;
pub(crate) use gateway_common::url::{quote_segment, unquote_plus};
use gateway_world::json::{self, object, DumpOptions, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;

mod access;
mod agents;
mod app;
mod call_log;
mod call_record;
mod captures;
mod connectors;
mod environments;
mod eval_states;
mod evaluations;
mod keys;
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

use access::{authenticate, container, own_version};
pub use access::{check_ref_name, check_slug};
pub use app::{router, serve, serve_on, serve_until};
pub use call_record::BODY_CAP as CALL_LOG_BODY_CAP;
pub use keys::{hash_secret, new_key_pair, write_private_file, Keys};
use objects::*;
use refs::*;
use request::*;
use response::*;
use settings::*;
pub use state::{Hub, Limits, DEFAULT_SESSIONS_PER_PROJECT};
use versions::*;

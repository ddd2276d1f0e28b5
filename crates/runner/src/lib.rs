//! Running agents against worlds: `gateway worlds run` and `gateway worlds ci`.
//!
//! A world (a local directory or a version pulled from the hub) is opened on a
//! World Host in this process; each rollout of each task is a session of its own,
//! acted on by an agent — a Python callable given a `World` object ([`bridge`]),
//! any program given the session's endpoints in its environment ([`command`]), the
//! built-in OpenAI-compatible tool-calling loop ([`model`]) or the task's reference
//! solution ([`agent::Agent::Oracle`]), each answering an [`outcome::Outcome`] —
//! then graded with the task's own grader, summarized ([`run`]: mean reward,
//! pass^k), written out as transcripts, filed as an evaluation ([`filing`]) and
//! gated ([`gate`]). [`flows`] strings these together as the two commands do,
//! each ending in a [`report::Report`].
//!
//! The `bench` evaluation commands live here too ([`bench`](mod@bench)): a harbor jobs
//! directory harvested into one evaluation ([`harbor`]), harbor started over a
//! world's task dirs, a verifiers environment scored by its own loop ([`verifiers`]).
//!
//! It is not the CLI (no argument parsing or printing of results: `gateway-cli`),
//! not the World Host (`gateway-host`) and not the hub's server: it is a client of
//! the hub (pull, push, filing) through `gateway-hub-client`.

pub mod agent;
pub mod bench;
pub mod bridge;
pub mod command;
pub mod error;
pub mod filing;
pub mod flows;
pub mod gate;
pub mod harbor;
pub mod harbor_world;
pub mod model;
pub mod noise;
pub mod outcome;
pub mod process;
pub mod report;
pub mod run;
pub mod stored;
pub mod tasks;
pub mod verifiers;
pub mod world;

pub use error::RunnerError;

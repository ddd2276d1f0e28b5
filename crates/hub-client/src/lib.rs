//! The hub's clients: everything that calls a hub over HTTP on a user's behalf, behind
//! the CLI's commands and the runner's filing.
//!
//! - [`client`]: `gateway bench …` — push (content hash, deterministic tarball,
//!   compare-and-set base, a connector world as its api bundle), pull with integrity check
//!   and safe extraction, refs, log, status, propose, fork, diff, secrets, run configs,
//!   install; [`working_copy`] (a world directory's hub link and drift), [`wheel`]
//!   (`--build-wheel`, and the installer of `bench install`) and [`versioning`]
//!   (`--auto-bump/--rc/--post`) beside it;
//! - [`sessions_client`]: `gateway worlds session|task …`, live world sessions and stored
//!   tasks (spec §5, §6); [`task_shapes`]: the stored tasks as the original prints them;
//! - [`evals_client`]: the filing behind `gateway worlds run|ci` — evaluations, their
//!   samples, final states and finalize (spec §2);
//! - [`environments_client`]: `gateway environment …`, the §7 views;
//! - [`world_data_client`]: `gateway worlds data import <slug>` and friends (§4, §9.6);
//! - [`connectors_client`]: `gateway worlds connector publish|list|pull|clone` (§3);
//! - [`captures_client`]: `connector capture --remote`;
//! - [`platform_client`] and [`agent_project`]: `gateway
//!   secret|agent|deploy|init|algorithm|dataset|run|release` (spec §8, §11);
//! - `transport` (private): the one HTTP transport they all send through — the hub's
//!   address, the credentials' header, the request, its status and its decoded answer —
//!   and the env-var credentials and Basic auth; each client names only the words it
//!   tells its failures in;
//! - `objects` (private): bundles and wheels moved through the hub's signed object URLs.
//!
//! It is not the hub's server or store (`gateway-hub`, which does not depend on this
//! crate), parses no command line (`gateway-cli`), and owns no bundle format: what a
//! push carries and how a pull is extracted is `gateway-bundle`'s, shared with the server.
//!
//! Errors: the clients return [`ClientError`], their own, rather than the server's
//! `HubError` (whose variants are HTTP statuses a server answers); it says which side of
//! a call failed — setup, transport, the hub's refusal, an answer that is not what it
//! must be, the flow's own refusal, a wheel, a bundle, a file. Its text is what the
//! original prints. The session client keeps its own [`SessionError`] (the original's
//! `WorldSessionError` / `WorldSessionTimeout`).

pub mod agent_project;
pub mod captures_client;
pub mod client;
pub mod connectors_client;
pub mod environments_client;
pub mod error;
pub mod evals_client;
mod objects;
pub mod platform_client;
pub mod sessions_client;
pub mod task_shapes;
mod transport;
pub mod versioning;
pub mod wheel;
pub mod working_copy;
pub mod world_data_client;

pub use error::{ClientError, SessionError};

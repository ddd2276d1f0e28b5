//! The agents-platform commands: `gateway deploy`, `init`, `algorithm list|new`,
//! `secret set|list|delete`, `agent list`, `run start|verify|list`, `dataset upload` and
//! `release gate`, with the original's flags, prints and exit codes (0 success, 1 a
//! refusal or failed request, 2 a usage error; `release gate`: 0 pass, 1 blocked, 2
//! untested or no such build). Where the original crashes with a traceback (a config
//! that is not JSON, a dataset that does not parse, an unreachable host, a missing
//! output directory) this prints one line and exits 1.
//!
//! Parsing and printing only: the requests, the manifest, the dataset reading, the
//! schema check and the gate's rendering live in `gateway_hub_client::platform_client` and
//! `gateway_hub_client::agent_project`.
//!
//! By concern: `flags` (what clap reads), `calls` (the client, a failure's exit
//! status), `agents` (deploy, init, algorithm, agent list), `secrets`, `runs` (runs
//! and datasets) and `release`.

mod agents;
mod calls;
mod flags;
mod release;
mod runs;
mod secrets;

pub use agents::{agent, algorithm, deploy, init};
pub use flags::{AgentCommand, AlgorithmCommand, DatasetCommand, DeployArgs, InitArgs, ReleaseCommand, RunCommand, SecretCommand};
pub use release::release;
pub use runs::{dataset, run};
pub use secrets::secret;

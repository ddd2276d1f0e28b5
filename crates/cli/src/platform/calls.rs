//! What every platform command does around its calls: the client built from
//! `--host` / `--api-key` as the original resolves them, a failed call or a refusal
//! printed and turned into its exit status, and a listing read out of a reply.

use super::flags::Connection;
use crate::exit::Status;
use crate::printer::err_line as err;
use gateway_hub_client::platform_client::{Credentials, PlatformClient, Reply};
use gateway_world::json::{python_str, Value};
use std::process::ExitCode;
use std::time::Duration;

/// A command's end: the line on stderr already printed, the exit code.
pub(super) type Outcome = Result<(), Status>;

/// `line` on stderr, and the exit status of a failure (1).
pub(super) fn fail(line: impl std::fmt::Display) -> Status {
    err(line);
    Status::FAILED
}

/// The exit code a command ends with.
pub(super) fn finish(outcome: Outcome) -> ExitCode {
    outcome.err().unwrap_or(Status::OK).into()
}

/// The httpx client of a command: credentials resolved as the original resolves them.
pub(super) fn client(connection: &Connection, timeout: Duration) -> Result<PlatformClient, Status> {
    let credentials = Credentials::resolve(connection.host.as_deref(), connection.api_key.as_deref()).map_err(fail)?;
    PlatformClient::new(&credentials, timeout).map_err(|e| fail(e.to_string()))
}

/// A platform call's budget.
pub(super) const TIMEOUT: Duration = Duration::from_secs(30);

/// `Failed (HTTP n): body` and exit 1.
pub(super) fn failed(reply: &Reply) -> Status {
    fail(format!("Failed (HTTP {}): {}", reply.status, reply.text))
}

/// A call that could not be made or read: its line, and exit 1.
pub(super) fn send(result: Result<Reply, gateway_hub_client::ClientError>) -> Result<Reply, Status> {
    result.map_err(|e| fail(e.to_string()))
}

/// The list under `key` of a reply's JSON body (none when it is not one).
pub(super) fn list_of(reply: &Reply, key: &str) -> Vec<Value> {
    reply.json().and_then(|body| body.get(key).and_then(Value::as_array).cloned()).unwrap_or_default()
}

/// Python's `str()` of a member, or `""` when it is missing.
pub(super) fn field(value: &Value, key: &str) -> String {
    value.get(key).map(python_str).unwrap_or_default()
}

/// Python truthiness of a JSON value.
pub(super) fn json_truthy(value: &Value) -> bool {
    gateway_hub_client::client::truthy(value)
}

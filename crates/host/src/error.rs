//! What a control operation refuses, and how each refusal maps to an HTTP status.

use gateway_world::json::{object, Value};
use gateway_world::ContractError;

/// The refusal code a control call gets for a session this host does not hold:
/// the one answer a platform reads as "the host lost it".
pub const UNKNOWN_SESSION: &str = "unknown_session";

/// Why the host refused a control operation.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A refusal in the original's `ContractError` shape (`host`, `task`,
    /// `draining`, `at_capacity`, `unknown_session`, `tool_not_allowed`, or the
    /// engine's own codes).
    #[error("{0}")]
    Refused(ContractError),
    /// A required member of the request body is missing.
    #[error("missing field '{0}'")]
    MissingField(String),
}

/// Why an export could not be moved to or from the platform's object store
/// ([`crate::host::Objects`]); its text is what the refusal quotes.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// [`crate::host::LocalObjects`] moves `file://` URLs only.
    #[error("not a file:// URL: {0}")]
    NotFileUrl(String),
    /// Reading or writing the local file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The announced SHA-256 is not a hex digest.
    #[error(transparent)]
    Digest(#[from] hex::FromHexError),
    /// The object store or the network failed (a connection, a refusing status).
    #[error(transparent)]
    Remote(Box<dyn std::error::Error + Send + Sync>),
}

impl From<ContractError> for HostError {
    fn from(error: ContractError) -> Self {
        HostError::Refused(error)
    }
}

impl From<gateway_world::Error> for HostError {
    fn from(error: gateway_world::Error) -> Self {
        match error {
            gateway_world::Error::Contract(error) => HostError::Refused(error),
            other => HostError::Refused(ContractError::new("host", other.to_string(), "")),
        }
    }
}

/// A `host` refusal with a message (the original's `fail("host", …)`).
pub fn refuse(code: &str, message: impl Into<String>) -> HostError {
    HostError::Refused(ContractError::new(code, message, ""))
}

impl HostError {
    /// The refusal's code.
    pub fn code(&self) -> &str {
        match self {
            HostError::Refused(error) => &error.code,
            HostError::MissingField(_) => "missing field",
        }
    }

    /// The status and body the control plane answers with: 503 for a host that
    /// will not take the session (place it elsewhere), 404 for a session it does
    /// not hold, 400 for everything else.
    pub fn answer(&self) -> (u16, Value) {
        match self {
            HostError::MissingField(field) => {
                (400, object([("error", Value::str("missing field")), ("field", Value::Str(format!("'{field}'")))]))
            }
            HostError::Refused(error) => {
                let status = match error.code.as_str() {
                    "draining" | "at_capacity" => 503,
                    UNKNOWN_SESSION => 404,
                    _ => 400,
                };
                (status, object([("error", Value::str(&error.code)), ("detail", Value::Str(error.to_string()))]))
            }
        }
    }
}

//! A request as the app handles it once routed (its operation, arguments, query,
//! body, headers and page link), and a failure on the way with the answer it gets
//! (the contract's refusals as the operation's `invalid` or `conflict`, a 500, a
//! handler's 504). Leaves of `app`, named by its actions and handler calls.

use crate::page::Link;
use crate::reply::Refusals;
use crate::response::{handler_timeout, internal, Response};
use crate::settings::types::ApiSettings;
use gateway_connector::spec::Operation;
use gateway_world::error::Error as WorldError;
use gateway_world::json::Value;

/// A routed request.
pub(crate) struct Request<'a> {
    /// The operation the route found.
    pub(crate) operation: &'a Operation,
    /// Its path arguments.
    pub(crate) args: Vec<(String, String)>,
    /// Its query parameters (a body's too, with `[api] body_params`).
    pub(crate) query: Vec<(String, String)>,
    /// Its body, read as the world reads bodies.
    pub(crate) body: Value,
    /// Its headers, lower-cased.
    pub(crate) headers: &'a [(String, String)],
    /// Where it was served, for page links.
    pub(crate) link: Link,
}

/// Whether a request carries a value for `name`: a path argument, a parameter
/// (a body's too, with `body_params`) or a body member that is not null.
pub(crate) fn carries(request: &Request, name: &str) -> bool {
    request.args.iter().chain(&request.query).any(|(k, v)| k == name && !v.is_empty())
        || request.body.get(name).is_some_and(|v| !matches!(v, Value::Null))
}

/// Why a request was not answered as asked.
pub(crate) enum Failure {
    /// The contract refused it (the refusal's detail).
    Contract(Value),
    /// Something else went wrong: 500.
    Internal(String),
    /// A handler past its deadline: 504.
    TimedOut(std::time::Duration),
}

impl From<WorldError> for Failure {
    fn from(error: WorldError) -> Self {
        match error {
            WorldError::Contract(contract) => Failure::Contract(contract.detail()),
            other => Failure::Internal(other.to_string()),
        }
    }
}

impl Failure {
    /// The answer to a request that failed: a taken key as the operation's (or
    /// `[api]`'s) `conflict` when declared, else the `invalid` body with the refusal's
    /// detail; or a 500.
    pub(crate) fn answer(self, settings: &ApiSettings, refusals: &Refusals) -> Response {
        match self {
            Failure::Contract(detail) => {
                let taken = detail.get("code").and_then(Value::as_str) == Some("unique");
                if let Some(conflict) = refusals.conflict.as_ref().or(settings.conflict.as_ref()).filter(|_| taken) {
                    return Response::json(conflict.status, conflict.body.clone());
                }
                let (status, invalid) = match &refusals.invalid {
                    Some(own) => (own.status, &own.body),
                    None => (settings.invalid_status, &settings.invalid),
                };
                let invalid = match invalid {
                    Value::Object(map) => {
                        let mut map = map.clone();
                        map.insert("detail".into(), detail);
                        Value::Object(map)
                    }
                    other => other.clone(),
                };
                Response::json(status, invalid)
            }
            Failure::Internal(message) => internal(&message),
            Failure::TimedOut(limit) => handler_timeout(limit),
        }
    }
}

//! How `app` calls the world's Python: the `before` gate ahead of every operation,
//! and the handler of an `action = "handler"` operation — each call's `ctx` writes
//! one transaction, committed when it answered and rolled back when it failed, and
//! what it added to the answer (`ctx.add_headers`, `ctx.add_fields`).

use super::request::{Failure, Request};
use super::staged::Handled;
use super::WorldApp;
use crate::ctx::{Added, Host};
use crate::handlers::{HandlerFailure, HandlerOutcome, HandlerRequest};
use crate::reply::succeed;
use crate::response::Response;
use crate::settings::types::OperationSettings;
use crate::state::handler_writes::HandlerWrites;
use crate::vendor::Dress;
use gateway_world::json::{object, Value};

fn query_object(query: &[(String, String)]) -> Value {
    Value::Object(query.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect())
}

impl WorldApp {
    /// The `before` gate, then the operation: a gate that lets the request through
    /// may have added headers and members to its answer (kept in `dress`).
    pub(super) fn gated(&self, op: &OperationSettings, request: &Request, dress: &mut Dress) -> Result<Handled, Failure> {
        if let Some(gate) = &self.settings.before {
            let (verdict, added) = self.call_handler(gate, request)?;
            dress.add(added.headers, added.fields);
            match verdict {
                HandlerOutcome::Body(Value::Null) => {}
                HandlerOutcome::Body(body) => return Ok(Handled::Answered(Response::json(200, body))),
                HandlerOutcome::Answer { status, body, headers } => {
                    return Ok(Handled::Answered(Response::from_handler(status, body, headers.unwrap_or_default())))
                }
            }
        }
        self.answer(op, request, dress)
    }

    /// Run one handler (or the gate): its `ctx` writes one transaction, committed
    /// when it answered, rolled back when it failed; what it added to the answer.
    fn call_handler(&self, function: &str, request: &Request) -> Result<(HandlerOutcome, Added), Failure> {
        let Some(worker) = &self.worker else {
            return Err(Failure::Internal(format!("no handlers module for {function}")));
        };
        let operation = request.operation;
        let payload = HandlerRequest {
            args: Value::Object(request.args.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect()),
            query: query_object(&request.query),
            body: request.body.clone(),
            headers: Value::Object(request.headers.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect()),
            operation: object([
                ("name", Value::str(&operation.name)),
                ("method", Value::str(&operation.method)),
                ("path", Value::str(&operation.path)),
                ("params", Value::Array(operation.params.iter().map(Value::str).collect())),
                ("entity", operation.entity.clone().map(Value::Str).unwrap_or_default()),
                ("results", Value::str(&operation.results)),
                ("placeholders", Value::Array(operation.placeholders().into_iter().map(Value::Str).collect())),
            ]),
            context: object([
                ("spec", self.handler_spec.clone()),
                ("settings", self.handler_settings.clone()),
                ("link", Value::Array(vec![Value::str(&request.link.0), query_object(&request.link.1)])),
                // A session with a frozen clock and seeded ids answers ctx.clock()
                // and ctx.uuid() itself.
                ("session", Value::Bool(self.determinism.is_some())),
            ]),
        };
        let pinned = self.state.pin();
        let writes = HandlerWrites::new(&pinned);
        let mut host = Host {
            state: &self.state,
            settings: &self.settings,
            determinism: self.determinism.as_ref(),
            link: &request.link,
            writes,
            added: Default::default(),
        };
        let outcome = worker.call(function, &payload, &mut host);
        let Host { writes, added, .. } = host;
        writes.finish(outcome.is_ok()).map_err(Failure::from)?;
        match outcome {
            Ok(outcome) => Ok((outcome, added)),
            Err(HandlerFailure::Contract(detail)) => Err(Failure::Contract(detail)),
            Err(HandlerFailure::Exception(message)) | Err(HandlerFailure::WorkerDied(message)) => Err(Failure::Internal(message)),
            Err(HandlerFailure::TimedOut(limit)) => Err(Failure::TimedOut(limit)),
        }
    }

    /// A body with `[api] success` merged in when the status is a success.
    pub(super) fn succeeded(&self, status: i64, mut body: Value) -> Value {
        if (200..300).contains(&status) {
            succeed(&mut body, &self.settings.success);
        }
        body
    }

    /// An `action = "handler"` operation's answer: the handler's, with `[api] success`
    /// and what it added (`ctx.add_headers`, `ctx.add_fields`).
    pub(super) fn answer_by_handler(&self, op: &OperationSettings, request: &Request) -> Result<Response, Failure> {
        let succeed = |status: i64, body: Value| self.succeeded(status, body);
        let (outcome, added) = self.call_handler(op.handler.as_deref().unwrap_or_default(), request)?;
        let mut response = match outcome {
            HandlerOutcome::Body(Value::Null) => Response { status: op.status as u16, body: None, headers: Vec::new(), file: None },
            HandlerOutcome::Body(body) => Response::json(op.status, succeed(op.status, body)),
            HandlerOutcome::Answer { status, body, headers } => {
                Response::from_handler(status, succeed(status, body), headers.unwrap_or_default())
            }
        };
        let mut own = Dress::default();
        own.add(added.headers, added.fields);
        own.apply(&mut response);
        Ok(response)
    }
}

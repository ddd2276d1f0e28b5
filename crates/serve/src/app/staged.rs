//! A built-in write staged for the writer: the store work and how its answer is
//! shaped once it ran (status, envelope, `wrap`/`lift`, a constant, `[api] success`,
//! the operation's refusals and dressing). The server groups staged writes of many
//! requests into one commit; `app` stages them and answers with them.

use super::request::Failure;
use crate::page::{wrap, Page};
use crate::reply::{succeed, Refusals, Shape};
use crate::response::Response;
use crate::settings::types::{ApiSettings, OperationSettings};
use crate::state::WriteJob;
use crate::vendor::Dress;
use gateway_world::error::Error as WorldError;
use gateway_world::json::{Map, Value};

/// What [`crate::app::WorldApp::handle_staged`] makes of a request.
pub enum Handled {
    /// The answer.
    Answered(Response),
    /// A built-in single-row write, not yet run.
    Write(StagedWrite),
}

/// A built-in create, update or delete: the store work and how to answer it.
pub struct StagedWrite {
    /// The entity it writes.
    pub entity: String,
    /// The store work; returns the written row (null for a delete).
    pub job: WriteJob,
    /// How the answer is shaped once the write ran.
    pub reply: WriteReply,
}

/// The shape of a write's answer (the operation's status, envelope, body).
#[derive(Debug, Clone)]
pub struct WriteReply {
    status: i64,
    single: bool,
    envelope: Option<String>,
    /// No body (a delete).
    empty: bool,
    /// URLs rewritten and headers added, as every answer of the operation.
    dress: Dress,
    /// The vendor's shaping of the answer (boxed: most writes declare none, and a
    /// staged write travels through the writer's queue).
    shaping: Box<Shaping>,
}

/// How a write's answer is shaped beyond its row.
#[derive(Debug, Clone)]
struct Shaping {
    /// `api.wrap` / `api.lift`: the row under a key, members beside it.
    shape: Shape,
    /// `api.answer`: a constant answered in place of the row.
    constant: Option<Value>,
    /// `[api] success`: members of every successful answer.
    success: Map,
    /// The operation's own refusals.
    refusals: Refusals,
}

impl WriteReply {
    pub(crate) fn new(op: &OperationSettings, empty: bool, dress: &Dress, success: &Map) -> WriteReply {
        WriteReply {
            status: op.status,
            single: op.single,
            envelope: op.envelope.clone(),
            empty,
            dress: dress.clone(),
            shaping: Box::new(Shaping {
                shape: op.shape.clone(),
                constant: op.answer.clone(),
                success: success.clone(),
                refusals: op.refusals.clone(),
            }),
        }
    }

    /// The body of a written row's answer (None: no body, a plain delete's).
    fn body(&self, row: Value, settings: &ApiSettings) -> Option<Value> {
        let shaping = &self.shaping;
        let mut body = match &shaping.constant {
            Some(constant) => constant.clone(),
            None if shaping.shape.shapes() => shaping.shape.apply(row),
            None if self.empty => return None,
            None if self.single => row,
            None => wrap(Page::whole(vec![row]), settings, self.envelope.as_deref(), &settings.paging, None),
        };
        succeed(&mut body, &shaping.success);
        Some(body)
    }

    /// The answer once the write ran: its row shaped as the operation answers, or
    /// its refusal; dressed as every answer of the operation.
    pub(crate) fn finish(&self, written: Result<Value, WorldError>, settings: &ApiSettings) -> Response {
        let mut response = match written {
            Err(error) => Failure::from(error).answer(settings, &self.shaping.refusals),
            Ok(row) => match self.body(row, settings) {
                Some(body) => Response::json(self.status, body),
                None => Response { status: self.status as u16, body: None, headers: Vec::new(), file: None },
            },
        };
        self.dress.apply(&mut response);
        response
    }
}

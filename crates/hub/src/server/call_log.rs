//! The agent's side of a session's call log: every request of a session's data plane
//! on the hub's embedded host (`/s/<sid>/…`, REST and MCP) is recorded as a document
//! of the session's `calls:<sid>` kind, beside the hub's own `kind: call|grade|…`
//! entries (`surface: "control"`), so `GET …/calls`, `session export`, the session's
//! web page and the rubric judge read one log, in one `seq` order.
//!
//! The write is off the request path: the answer is built and its bodies kept (cheap
//! reference-counted bytes), the exchange is queued, and one writer task per hub turns
//! queued exchanges into entries (session and token looked up once per session,
//! secrets removed, bodies capped: [`super::call_record`]) and stores them in queue
//! order. Every reader of the log first [`CallLog::flush`]es: a marker sent down the
//! same queue answers once everything queued before it is stored. An exchange is
//! queued before its answer leaves the hub, so a client that saw its answer and then
//! reads the log finds it there. (Awaiting the store write before answering would add
//! a metadata transaction — a PostgreSQL round trip — to every data-plane call.)
//!
//! Sessions on remote hosts are not recorded here: their data plane does not pass
//! through the hub. The data plane's requests reach the queue through
//! `data_plane.rs`.

use super::call_record::{entry, Exchange};
use super::documents::{calls_kind, document_text, SESSION};
use crate::error::HubError;
use crate::host_credentials::HOSTS_PROJECT;
use crate::store::MetaStore;
use crate::util::new_id;
use gateway_world::json::{self, Value};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, oneshot};

/// Exchanges queued and not yet stored before a data-plane request waits for room.
const QUEUE: usize = 4096;
/// Sessions whose project and token the writer remembers (forgotten all at once past it).
const REMEMBERED: usize = 10_000;

enum Message {
    Record(Box<Exchange>),
    Flush(oneshot::Sender<()>),
}

/// The queue of a hub's data-plane exchanges and its writer (started by the first
/// exchange, on the runtime serving it).
#[derive(Clone, Default)]
pub(crate) struct CallLog {
    queue: Arc<OnceLock<mpsc::Sender<Message>>>,
}

impl CallLog {
    fn sender(&self, meta: &Arc<dyn MetaStore>) -> &mpsc::Sender<Message> {
        self.queue.get_or_init(|| {
            let (sender, receiver) = mpsc::channel(QUEUE);
            tokio::spawn(write_queued(meta.clone(), receiver));
            sender
        })
    }

    /// Queue an exchange for its session's log.
    pub(super) async fn record(&self, meta: &Arc<dyn MetaStore>, exchange: Exchange) {
        if self.sender(meta).send(Message::Record(Box::new(exchange))).await.is_err() {
            eprintln!("gateway hub: the call log's writer is gone; a data-plane call was not recorded");
        }
    }

    /// Return once every exchange queued so far is stored.
    pub(crate) async fn flush(&self) {
        let Some(sender) = self.queue.get() else { return };
        let (done, stored) = oneshot::channel();
        if sender.send(Message::Flush(done)).await.is_ok() {
            let _ = stored.await;
        }
    }
}

/// Where a session's entries go: its project, and the credentials scrubbed from them.
#[derive(Clone)]
struct Target {
    project: String,
    tokens: Vec<String>,
}

async fn write_queued(meta: Arc<dyn MetaStore>, mut receiver: mpsc::Receiver<Message>) {
    let mut targets: HashMap<String, Option<Target>> = HashMap::new();
    while let Some(message) = receiver.recv().await {
        match message {
            Message::Flush(done) => {
                let _ = done.send(());
            }
            Message::Record(exchange) => {
                if let Err(error) = store(meta.as_ref(), &mut targets, &exchange).await {
                    eprintln!("gateway hub: a data-plane call of session {} was not recorded: {error}", exchange.session_id);
                }
            }
        }
    }
}

async fn store(meta: &dyn MetaStore, targets: &mut HashMap<String, Option<Target>>, exchange: &Exchange) -> Result<(), HubError> {
    let sid = &exchange.session_id;
    let target = match targets.get(sid) {
        Some(target) => target.clone(),
        None => {
            let found = target(meta, sid).await?;
            if targets.len() >= REMEMBERED {
                targets.clear();
            }
            // An unknown session is not remembered: its id may be opened yet.
            if found.is_some() {
                targets.insert(sid.clone(), found.clone());
            }
            found
        }
    };
    // No open session of this hub by that id: nobody's log to write to.
    let Some(Target { project, tokens }) = target else { return Ok(()) };
    let id = new_id("wr");
    let entry = entry(&id, exchange, &tokens);
    meta.put_document(&project, &calls_kind(sid), &id, &document_text(&Value::Object(entry))).await?;
    Ok(())
}

/// The project of an open session (its owner record) and the token its surfaces hand out.
async fn target(meta: &dyn MetaStore, sid: &str) -> Result<Option<Target>, HubError> {
    let Some(owner) = meta.document(HOSTS_PROJECT, "owner", sid).await? else { return Ok(None) };
    let Some(project) = json::parse_clean(&owner).and_then(|o| o.get("project").and_then(Value::as_str).map(str::to_string)) else {
        return Ok(None);
    };
    let session = meta.document(&project, SESSION, sid).await?.and_then(|text| json::parse_clean(&text)).unwrap_or_default();
    let mut tokens: Vec<String> = session
        .get("surfaces")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|surfaces| surfaces.values())
        .filter_map(|surface| surface.get("token").and_then(Value::as_str).map(str::to_string))
        .filter(|token| !token.is_empty())
        .collect();
    tokens.sort();
    tokens.dedup();
    Ok(Some(Target { project, tokens }))
}

/// A call-log page `(seq, body)` as entries, each with its `seq` (entries written by
/// the queue carry it only as their document's order).
pub(super) fn entries(page: Vec<(i64, String)>) -> Vec<Value> {
    page.into_iter()
        .filter_map(|(seq, text)| match json::parse_clean(&text) {
            Some(Value::Object(mut map)) => {
                map.entry("seq".to_string()).or_insert(Value::Int(seq));
                Some(Value::Object(map))
            }
            _ => None,
        })
        .collect()
}

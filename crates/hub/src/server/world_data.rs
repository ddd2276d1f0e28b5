//! World data batches (spec §4, §9.6): rows imported into a hub world in chunks.
//!
//! `POST /api/public/worlds/{slug}/data/batches` opens a batch; each chunk is
//! registered by digest (`uploaded: true` when the project's object store already
//! holds that digest, else a signed PUT URL), PUT, marked uploaded; `complete` queues
//! the apply, which runs here in the background: the world's data (its data head, or
//! the main tip's snapshot) copied, the chunks fetched (digest checked, gunzipped
//! within `limits.chunkBytes`), and `gateway_world::batch::build_batch` — the engine
//! of `data check` — applies them atomically or per chunk. An applied batch moves the
//! world's data head; `publish: now` then turns it into a data-only version of the
//! world (the tip's files, the new `db/state.sqlite` with its sidecar and the
//! `db/snapshot.json` pin, scenario snapshots rebuilt) on `main`; `later` batches wait
//! for `POST …/data/publish`. `GET …/data` shows what the world holds; with `?entity=`,
//! every row of that entity, streamed ([`show_rows`], answered ahead of the JSON routes).
//!
//! One applier at a time per world (a lease in the metadata store, renewed while it
//! works, so a process that dies lets the next batch through); a batch whose applier
//! stopped is reported failed once its lease is past.
//!
//! By concern: `batches.rs` (the batch routes), `apply.rs` (the apply), `publish.rs`
//! (data-only versions), `show.rs` (what the world holds), `tree.rs` (a version's files),
//! `places.rs` (work directory, object keys, what they all share).

use crate::error::HubError;
use crate::server::access::container;
use crate::server::request::JsonRequest;
use crate::server::response::Answer;
use batches::{chunk_uploaded, complete, list_batches, open_batch, register_chunk, status};
use gateway_common::url::unquote_plus;
use publish::publish;
use show::show;

mod apply;
mod batches;
mod places;
mod publish;
mod show;
mod tree;

pub(super) use show::show_rows;

/// A world's data routes, `worlds/<slug>/data/<rest>` (`routes::Family::WorldData`).
pub(super) async fn route(request: &JsonRequest<'_>, p: &str, slug: &str, rest: &[&str]) -> Answer {
    let JsonRequest { hub, method, query, base_url, .. } = *request;
    let world = container(hub, p, Some(unquote_plus(slug))).await?;
    match (method.as_str(), rest) {
        ("GET", []) => show(hub, &world).await,
        ("POST", ["batches"]) => open_batch(hub, p, &world, &request.json()?).await,
        ("GET", ["batches"]) => list_batches(hub, &world, query).await,
        ("GET", ["batches", id]) => status(hub, p, &world, id, base_url).await,
        ("POST", ["batches", id, "chunks"]) => register_chunk(hub, p, &world, id, &request.json()?, base_url).await,
        ("POST", ["batches", id, "chunks", chunk, "uploaded"]) => chunk_uploaded(hub, p, &world, id, chunk).await,
        ("POST", ["batches", id, "complete"]) => complete(hub, p, &world, id).await,
        ("POST", ["publish"]) => publish(hub, &world, &request.json()?).await,
        // Not `request.no_route()`: an empty rest is spelt `…/data/` here.
        _ => Err(HubError::no_route(method, format!("/api/public/worlds/{slug}/data/{}", rest.join("/")))),
    }
}

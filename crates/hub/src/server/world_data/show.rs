//! What a world's data holds (`GET …/data`): its kind and entity counts, and with
//! `?entity=` every row of that entity, streamed from the data head's snapshot (fetched
//! once per process, its sha256 checked) or from the version's own files.

use super::places::{blocking, current_head, fetch_object, int, tip, work_root};
use super::tree::{evict, schema_world, tree, KEPT_SNAPSHOTS};
use crate::error::HubError;
use crate::server::access::{authenticate, container};
use crate::server::request::opt_value;
use crate::server::response::{ok, Answer};
use crate::server::state::Hub;
use crate::store::Container;
use crate::world_data::DataHead;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use futures_util::StreamExt as _;
use gateway_common::url::unquote_plus;
use gateway_world::json::{self, DumpOptions, Map, Value};
use std::path::{Path, PathBuf};

/// `GET …/data` without `entity`: the world's kind and entity counts.
pub(super) async fn show(hub: &Hub, world: &Container) -> Answer {
    let (out, _) = show_heading(hub, world).await?;
    ok(Value::Object(out))
}

/// What `GET …/data` says of a world before any rows (slug, version, kind, counts, and
/// the data head's digest), and where its rows are read from.
pub(super) async fn show_heading(hub: &Hub, world: &Container) -> Result<(Map, RowsFrom), HubError> {
    let tip = tip(hub, world).await?;
    let head = current_head(hub, world, &tip).await?;
    let tree = tree(hub, &tip).await?;
    let mut out = Map::default();
    out.insert("slug".into(), Value::str(&world.slug));
    out.insert("versionId".into(), Value::str(&tip.id));
    match head {
        Some(head) => {
            let root = schema_world(&tree, world)?;
            out.insert("kind".into(), Value::str("schema"));
            out.insert("entityCounts".into(), opt_value(&head.entity_counts));
            out.insert("batchDigest".into(), Value::str(&head.batch_digest));
            out.insert("pending".into(), Value::Bool(head.pending));
            Ok((out, RowsFrom::Head { root, head }))
        }
        None => {
            let root = tree.world.clone().unwrap_or_else(|| tree.bundle.clone());
            let wanted = root.clone();
            let (kind, counts) = blocking(move || {
                let kind = gateway_world::data::world_kind(&wanted)?;
                let counts = gateway_world::data::entity_counts(&wanted)?;
                Ok((kind, counts))
            })
            .await?;
            out.insert("kind".into(), Value::str(kind));
            out.insert("entityCounts".into(), counts);
            Ok((out, RowsFrom::Files { root }))
        }
    }
}

/// Where a world's rows are: its data head's snapshot, or the version's own files.
pub(super) enum RowsFrom {
    /// The snapshot of the world's data head (the world compiled at `root`).
    Head { root: PathBuf, head: DataHead },
    /// The version's files at `root` (no batch applied on this tip).
    Files { root: PathBuf },
}

/// Row text sent per body frame (about).
pub(super) const FRAME_BYTES: usize = 64 * 1024;
/// Frames waiting to be sent: with [`FRAME_BYTES`], what a slow reader makes the hub hold.
pub(super) const FRAMES_QUEUED: usize = 4;

/// `GET /api/public/worlds/{slug}/data?entity=E`: the heading of [`show`], `entity`,
/// `rowCount`, then every row of the entity (in key order from a data head's snapshot),
/// streamed: the rows are written to the body as they are read, so the hub holds a few
/// frames of them at a time, never the whole entity. A refusal (no such world or entity)
/// comes before the body; a read failing midway ends the body short (invalid JSON).
pub(in crate::server) async fn show_rows(hub: &Hub, headers: &HeaderMap, slug: &str, entity: &str) -> Result<Response, HubError> {
    let project = authenticate(hub, headers).await?;
    let world = container(hub, &project, Some(unquote_plus(slug))).await?;
    let (mut out, from) = show_heading(hub, &world).await?;
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(FRAMES_QUEUED);
    let wanted = entity.to_string();
    let total = match from {
        RowsFrom::Head { root, head } => {
            let cached = cached_snapshot(hub, &head).await?;
            let checked = (root.clone(), cached.clone(), wanted.clone());
            let total = blocking(move || snapshot_count(&checked.0, &checked.1, &checked.2)).await?;
            tokio::task::spawn_blocking(move || {
                if let Err(error) = send_snapshot_rows(&cached, &wanted, &sender) {
                    let _ = sender.blocking_send(Err(std::io::Error::other(error.to_string())));
                }
            });
            total
        }
        RowsFrom::Files { root } => {
            let read = wanted.clone();
            let rows = blocking(move || Ok(gateway_world::data::entity_rows(&root, &read)?)).await?;
            let total = rows.len();
            tokio::task::spawn_blocking(move || {
                let mut frame = RowFrame::default();
                for row in &rows {
                    if !frame.push(row, &sender) {
                        return;
                    }
                }
                frame.flush(&sender);
            });
            total
        }
    };
    out.insert("entity".into(), Value::str(entity));
    out.insert("rowCount".into(), int(total));
    let heading = json::dumps(&Value::Object(out), DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false });
    let opening = format!("{}, \"rows\": [", heading.strip_suffix('}').unwrap_or(&heading));
    let body = futures_util::stream::once(async move { Ok::<_, std::io::Error>(axum::body::Bytes::from(opening)) })
        .chain(futures_util::stream::unfold(receiver, |mut receiver| async move { receiver.recv().await.map(|frame| (frame, receiver)) }))
        .chain(futures_util::stream::once(async { Ok(axum::body::Bytes::from_static(b"]}")) }));
    let mut response = Response::new(Body::from_stream(body));
    response.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    Ok(response)
}

/// Rows gathered into a body frame.
#[derive(Default)]
pub(super) struct RowFrame {
    text: String,
    first_sent: bool,
}

impl RowFrame {
    /// Add a row; send the frame once it is full. False when the reader is gone.
    fn push(&mut self, row: &Value, sender: &tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>) -> bool {
        if self.first_sent || !self.text.is_empty() {
            self.text.push_str(", ");
        }
        self.text.push_str(&json::dumps(row, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false }));
        if self.text.len() >= FRAME_BYTES {
            self.first_sent = true;
            return sender.blocking_send(Ok(axum::body::Bytes::from(std::mem::take(&mut self.text)))).is_ok();
        }
        true
    }

    /// Send what is left.
    fn flush(self, sender: &tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>) {
        if !self.text.is_empty() {
            let _ = sender.blocking_send(Ok(axum::body::Bytes::from(self.text)));
        }
    }
}

/// The data head's snapshot, fetched once per process (its sha256 checked).
pub(super) async fn cached_snapshot(hub: &Hub, head: &DataHead) -> Result<PathBuf, HubError> {
    let cached = work_root(hub).join("snapshots").join(format!("{}.sqlite", head.batch_digest));
    if !cached.is_file() {
        let partial = cached.with_extension(format!("part-{}", crate::util::random_hex(4)));
        let sha = fetch_object(hub, &head.snapshot_key, &partial).await?;
        if sha != head.file_sha256 {
            let _ = std::fs::remove_file(&partial);
            return Err(HubError::Mismatch { what: format!("snapshot {}", head.snapshot_key), digest: "sha256" });
        }
        std::fs::rename(&partial, &cached).map_err(|e| HubError::io(&cached, e))?;
        evict(&work_root(hub).join("snapshots"), KEPT_SNAPSHOTS);
    }
    Ok(cached)
}

/// How many rows of `entity` a snapshot holds, or the refusal when the world has no
/// such entity.
pub(super) fn snapshot_count(root: &Path, snapshot: &Path, entity: &str) -> Result<usize, HubError> {
    let contract = gateway_world::lifecycle::check_bundle(root).map_err(|e| HubError::engine("the world does not compile", e))?;
    if contract.entity(entity).is_none() {
        let names: Vec<&str> = contract.entities.iter().map(|e| e.name.as_str()).collect();
        return Err(HubError::BadRequest(format!("entity at /{entity}: Unknown entity {entity}; the world has {}", names.join(", "))));
    }
    let conn = rusqlite::Connection::open_with_flags(snapshot, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let total: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM {}", gateway_world::compiler::quote(entity)), [], |r| r.get(0))?;
    Ok(total as usize)
}

/// Every row of `entity` in a snapshot, in key order, sent in frames.
pub(super) fn send_snapshot_rows(
    snapshot: &Path,
    entity: &str,
    sender: &tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>,
) -> Result<(), HubError> {
    let conn = rusqlite::Connection::open_with_flags(snapshot, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statement = conn.prepare(&format!("SELECT payload FROM {} ORDER BY _key", gateway_world::compiler::quote(entity)))?;
    let mut rows = statement.query([])?;
    let mut frame = RowFrame::default();
    while let Some(row) = rows.next()? {
        let payload: String = row.get(0)?;
        if let Some(value) = json::parse_clean(&payload) {
            if !frame.push(&value, sender) {
                return Ok(());
            }
        }
    }
    frame.flush(sender);
    Ok(())
}

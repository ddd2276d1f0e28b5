//! A world's data head turned into a data-only version on `main` (the tip's files, the
//! head's snapshot, its sidecar and pin, the scenario snapshots rebuilt), after an apply
//! (`publish: now`) or for `POST …/data/publish` (the `--publish later` batches).

use super::places::{blocking, fetch_head_snapshot, store_object, tip, work_root, Laps, LEASE_SECS};
use super::tree::{schema_world, tree, Tree};
use crate::error::HubError;
use crate::server::request::{opt_str, opt_value};
use crate::server::response::{ok, Answer};
use crate::server::state::Hub;
use crate::store::{Container, Version};
use crate::util::{new_id, now_iso, now_secs};
use crate::world_data::DataHead;
use gateway_world::json::{self, object, DumpOptions, Map, Value};
use sha2::{Digest as _, Sha256};
use std::path::Path;

/// gzip level of a data-only version's bundle (it is ours: no original bytes to match;
/// a snapshot is most of it, and level 1 packs one several times faster than 6).
const BUNDLE_LEVEL: u32 = 1;

/// Turn the data head into a data-only version of the world on `main`: the tip's
/// files, with the head's snapshot as `db/state.sqlite` (and its sidecar), the
/// `db/snapshot.json` pin naming it, and the scenario snapshots rebuilt on it.
#[allow(clippy::too_many_arguments)]
pub(super) async fn publish_version(
    hub: &Hub,
    world: &Container,
    tip: &Version,
    tree: &Tree,
    root: &Path,
    work: &Path,
    head: &DataHead,
    reason: &str,
) -> Result<Version, HubError> {
    let snapshot = work.join(gateway_world::snapshot::SNAPSHOT);
    if !snapshot.is_file() {
        fetch_head_snapshot(hub, head, &snapshot).await?;
    }
    let bundle = work.join("bundle");
    let tarball = work.join("bundle.tar.gz");
    let (from, bundle_dir, world_rel) =
        (tree.bundle.clone(), bundle.clone(), root.strip_prefix(&tree.bundle).unwrap_or(Path::new("")).to_path_buf());
    let (head_owned, tarball_path) = (head.clone(), tarball.clone());
    let (content_hash, manifest, sha256, size) = blocking(move || {
        let laps = Laps::new("publish");
        let skip = |rel: &Path| {
            let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let in_world = rel.strip_prefix(&world_rel).ok();
            let parent = in_world.and_then(Path::parent).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            let snapshot_file = matches!(name, "state.sqlite" | "state.json") || name.starts_with(".state.sqlite.");
            in_world.is_some()
                && ((parent == "db" && (snapshot_file || name == "snapshot.json")) || (parent.starts_with("scenarios/") && snapshot_file))
        };
        // Links are left out (never read through); `skip` names files.
        gateway_common::fs::copy_tree(&from, &bundle_dir, gateway_common::fs::Symlinks::Skip, &|entry| {
            !entry.is_dir && skip(entry.relative)
        })
        .map_err(|e| HubError::io(&e.path, e.source))?;
        laps.lap("files copied");
        let world = bundle_dir.join(&world_rel);
        let db = world.join("db");
        std::fs::create_dir_all(&db).map_err(|e| HubError::io(&db, e))?;
        let target = gateway_world::snapshot::default_snapshot(&world);
        std::fs::copy(&snapshot, &target).map_err(|e| HubError::io(&snapshot, e))?;
        let counts = json::parse_clean(&head_owned.entity_counts).unwrap_or_default();
        gateway_world::snapshot::write_sidecar(&target, &head_owned.contract_hash, &head_owned.batch_digest, counts.clone())
            .map_err(|e| HubError::engine("the snapshot's sidecar", e))?;
        let pin = object([
            ("batchDigest", Value::str(&head_owned.batch_digest)),
            ("contractHash", Value::str(&head_owned.contract_hash)),
            ("entityCounts", counts),
        ]);
        let pin_text =
            format!("{}\n", json::dumps(&pin, DumpOptions { sort_keys: false, ensure_ascii: true, indent: Some(1), compact: false }));
        let pin_path = db.join("snapshot.json");
        std::fs::write(&pin_path, pin_text).map_err(|e| HubError::io(&pin_path, e))?;
        let contract = gateway_world::lifecycle::check_bundle(&world).map_err(|e| HubError::engine("the world does not compile", e))?;
        laps.lap("snapshot, sidecar and pin");
        gateway_world::snapshot::build_all(&world, &contract, false).map_err(|e| HubError::engine("the world's snapshots", e))?;
        laps.lap("scenario snapshots");
        let content_hash = gateway_bundle::archive::compute_content_hash(&bundle_dir)?;
        let manifest = Value::Array(gateway_bundle::archive::build_file_manifest(&bundle_dir));
        laps.lap("content hash and manifest");
        let file = std::fs::File::create(&tarball_path).map_err(|e| HubError::io(&tarball_path, e))?;
        let mut hashing = HashingFile { file: std::io::BufWriter::new(file), digest: Sha256::new(), bytes: 0 };
        gateway_bundle::archive::write_source_tarball(&bundle_dir, &mut hashing, BUNDLE_LEVEL)?;
        use std::io::Write as _;
        hashing.file.flush().map_err(|e| HubError::io(&tarball_path, e))?;
        use base64::Engine as _;
        let sha256 = base64::engine::general_purpose::STANDARD.encode(hashing.digest.finalize());
        laps.lap("tarball");
        Ok((content_hash, manifest, sha256, hashing.bytes))
    })
    .await?;
    if size > hub.limits.max_object_bytes as u64 {
        return Err(HubError::TooLarge(format!(
            "the data-only version's bundle is {size} bytes, over this hub's {}-byte bundle limit (--max-bundle-mb)",
            hub.limits.max_object_bytes
        )));
    }
    let new = Version {
        id: new_id("ver_"),
        container_id: world.id.clone(),
        content_hash: content_hash.clone(),
        bundle_sha256: sha256,
        bundle_size: size as i64,
        semantic_version: tip.semantic_version.clone(),
        pyproject_meta: tip.pyproject_meta.clone(),
        file_manifest: json::canonical(&manifest),
        state: "PENDING".into(),
        change_reason: Some(reason.to_string()),
        author: tip.author.clone(),
        image_ref: tip.image_ref.clone(),
        object_key: format!("bundles/{}/{}.tar.gz", world.id, content_hash),
        uploaded: false,
        requires_dist: tip.requires_dist.clone(),
        pushed_branch: Some("main".into()),
        created_at: now_iso(),
        ..Version::default()
    };
    let (version, _) = hub.meta.create_version(new).await?;
    if !version.uploaded || hub.objects.size(&version.object_key).await?.is_none() {
        store_object(hub, &version.object_key, &tarball).await?;
        hub.meta.mark_uploaded(&version.id, false).await?;
    }
    let done = hub.meta.finalize(&version.id, "main", Some(&tip.id), false).await.map_err(|error| match HubError::from(error) {
        HubError::Conflict(_) => HubError::Conflict(format!(
            "'{}' main moved while the batch applied (it was {}): the data-only version was not published; import the rows onto the new tip",
            world.slug, tip.id
        )),
        other => other,
    })?;
    Ok(done.version)
}

/// A file writer that hashes and counts what it writes.
pub(super) struct HashingFile {
    file: std::io::BufWriter<std::fs::File>,
    digest: Sha256,
    bytes: u64,
}

impl std::io::Write for HashingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.digest.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// `POST …/data/publish`: every applied `--publish later` batch of the world, folded
/// into one data-only version.
pub(super) async fn publish(hub: &Hub, world: &Container, body: &Map) -> Answer {
    let message = opt_str(body, "message")?.filter(|m| !m.is_empty());
    let holder = new_id("pub_");
    if !hub.meta.lock_data(&world.id, &holder, (now_secs() + LEASE_SECS) as i64, now_secs() as i64).await? {
        return Err(HubError::Conflict(format!(
            "a data batch is being applied to '{}': publish once it is done (`gateway worlds data batches {}`)",
            world.slug, world.slug
        )));
    }
    let work = work_root(hub).join("batches").join(&holder);
    let published = publish_locked(hub, world, message, &work).await;
    let _ = hub.meta.unlock_data(&world.id, &holder).await;
    let _ = tokio::fs::remove_dir_all(&work).await;
    published
}

pub(super) async fn publish_locked(hub: &Hub, world: &Container, message: Option<String>, work: &Path) -> Answer {
    let tip = tip(hub, world).await?;
    let head = hub.meta.data_head(&world.id).await?;
    let Some(head) = head.filter(|h| h.pending) else {
        return ok(object([
            ("slug", Value::str(&world.slug)),
            ("published", Value::Bool(false)),
            ("versionId", Value::str(&tip.id)),
            ("batches", Value::Array(Vec::new())),
            ("message", Value::str("nothing to publish: no batch imported with --publish later is waiting")),
        ]));
    };
    if head.base_version_id != tip.id {
        return Err(HubError::Conflict(format!(
            "'{}' main moved to {} since the waiting batches were applied on {}: their rows are not in it; import them again",
            world.slug, tip.id, head.base_version_id
        )));
    }
    let tree = tree(hub, &tip).await?;
    let root = schema_world(&tree, world)?;
    tokio::fs::create_dir_all(work).await.map_err(|e| HubError::io(work, e))?;
    let reason = message.unwrap_or_else(|| "data publish".to_string());
    let version = publish_version(hub, world, &tip, &tree, &root, work, &head, &reason).await?;
    let mut moved = head.clone();
    moved.base_version_id = version.id.clone();
    moved.pending = false;
    moved.updated_at = now_iso();
    hub.meta.put_data_head(moved).await?;
    let batches = hub.meta.publish_data_batches(&tip, &version, &now_iso()).await?;
    ok(object([
        ("slug", Value::str(&world.slug)),
        ("published", Value::Bool(true)),
        ("versionId", Value::str(&version.id)),
        ("contentHash", Value::str(&version.content_hash)),
        ("state", Value::str(&version.state)),
        ("batchDigest", Value::str(&head.batch_digest)),
        ("entityCounts", opt_value(&head.entity_counts)),
        ("batches", Value::Array(batches.into_iter().map(Value::Str).collect())),
    ]))
}

//! Containers and versions: resolve, create, finalize, resolve a ref (with the
//! world's pass bar read once from its bundle), download, files and diffs.

use super::access::{check_ref_name, check_slug, container, own_version};
use super::objects::presign;
use super::request::{opt_bool, opt_str, opt_value, req_str, str_or_null};
use super::response::{ok, Answer};
use super::state::Hub;
use crate::error::HubError;
use crate::store::{read_blocking, Container, Version, VersionFilter, WheelDecl};
use crate::util::{new_id, now_iso};
use base64::Engine as _;
use gateway_bundle::world_facts;
use gateway_world::json::{self, object, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

pub(super) async fn resolve(hub: &Hub, project: &str, body: &Map) -> Answer {
    let slug = req_str(body, "slug")?;
    check_slug(&slug)?;
    let name = opt_str(body, "name")?.filter(|n| !n.is_empty()).unwrap_or_else(|| slug.clone());
    let tags = match body.get("tags") {
        None | Some(Value::Null) => Value::Array(Vec::new()),
        Some(Value::Array(items)) if items.iter().all(|t| matches!(t, Value::Str(_))) => Value::Array(items.clone()),
        Some(_) => return Err(HubError::BadRequest("'tags' must be a list of strings".into())),
    };
    let visibility = opt_str(body, "visibility")?.unwrap_or_else(|| "PRIVATE".into());
    if visibility != "PRIVATE" && visibility != "PUBLIC" {
        return Err(HubError::BadRequest("'visibility' must be PRIVATE or PUBLIC".into()));
    }
    let new = Container {
        id: new_id("cnt_"),
        project_id: project.to_string(),
        slug: slug.clone(),
        name,
        description: opt_str(body, "description")?,
        tags: json::canonical(&tags),
        visibility,
        forked_from_version_id: None,
        created_at: now_iso(),
    };
    let (container, created) = hub.meta.resolve_container(new).await?;
    ok(object([
        ("containerId", Value::str(container.id)),
        ("slug", Value::str(container.slug)),
        ("name", Value::str(container.name)),
        ("created", Value::Bool(created)),
    ]))
}

pub(super) fn is_hex(text: &str) -> bool {
    text.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

pub(super) fn is_sha256_b64(text: &str) -> bool {
    base64::engine::general_purpose::STANDARD.decode(text).map(|b| b.len() == 32).unwrap_or(false)
}

pub(super) async fn create_version(hub: &Hub, project: &str, body: &Map, base_url: &str) -> Answer {
    let container_id = req_str(body, "containerId")?;
    let container = hub
        .meta
        .container_by_id(&container_id)
        .await?
        .filter(|c| c.project_id == project)
        .ok_or_else(|| HubError::NotFound(format!("no container '{container_id}' in this project: call /resolve first")))?;
    let (content_hash, bundle_sha256, bundle_size) = bundle_fields(hub, body)?;
    let manifest = match body.get("fileManifest") {
        None | Some(Value::Null) => Value::Array(Vec::new()),
        Some(Value::Array(items)) => {
            for item in items {
                let path = item.get("path").and_then(Value::as_str);
                if path.is_none() {
                    return Err(HubError::BadRequest("every fileManifest entry needs a 'path'".into()));
                }
            }
            Value::Array(items.clone())
        }
        Some(_) => return Err(HubError::BadRequest("'fileManifest' must be a list".into())),
    };
    let pyproject = match body.get("pyprojectMeta") {
        Some(v @ Value::Object(_)) => v.clone(),
        _ => Value::Object(Map::default()),
    };
    let requires = match body.get("requiresDist") {
        Some(v @ Value::Array(_)) => v.clone(),
        _ => Value::Array(Vec::new()),
    };
    let wheel = wheel_fields(body, &requires)?;
    let new = Version {
        id: new_id("ver_"),
        container_id: container.id.clone(),
        content_hash: content_hash.clone(),
        bundle_sha256,
        bundle_size,
        semantic_version: opt_str(body, "semanticVersion")?,
        pyproject_meta: json::canonical(&pyproject),
        file_manifest: json::canonical(&manifest),
        state: "PENDING".into(),
        change_reason: opt_str(body, "changeReason")?,
        author: opt_str(body, "author")?,
        image_ref: opt_str(body, "imageRef")?,
        object_key: format!("bundles/{}/{}.tar.gz", container.id, content_hash),
        uploaded: false,
        wheel_filename: wheel.as_ref().map(|w| w.filename.clone()),
        wheel_sha256: wheel.as_ref().map(|w| w.sha256.clone()),
        wheel_size: wheel.as_ref().and_then(|w| w.size),
        wheel_uploaded: false,
        requires_dist: json::canonical(&requires),
        forked_from_version_id: None,
        pushed_branch: opt_str(body, "branch")?,
        created_at: now_iso(),
        seq: 0,
    };
    let (mut version, created) = hub.meta.create_version(new).await?;
    if let (false, Some(wheel)) = (created, wheel) {
        take_missing_wheel(hub, &mut version, wheel).await?;
    }
    version_upload_answer(hub, base_url, &container, &version).await
}

/// The bundle a version declares: its content hash (64 lowercase hex), the base64
/// sha256 of its tarball and the tarball's size (within this hub's limit).
fn bundle_fields(hub: &Hub, body: &Map) -> Result<(String, String, i64), HubError> {
    let content_hash = req_str(body, "contentHash")?;
    if content_hash.len() != 64 || !is_hex(&content_hash) {
        return Err(HubError::BadRequest("'contentHash' must be 64 lowercase hex characters".into()));
    }
    let bundle_sha256 = req_str(body, "bundleSha256")?;
    if !is_sha256_b64(&bundle_sha256) {
        return Err(HubError::BadRequest("'bundleSha256' must be the base64 of a raw sha256 digest".into()));
    }
    let bundle_size = match body.get("bundleSizeBytes") {
        Some(Value::Int(n)) if *n >= 0 => *n,
        _ => return Err(HubError::BadRequest("'bundleSizeBytes' must be a non-negative integer".into())),
    };
    if bundle_size as u64 > hub.limits.max_object_bytes as u64 {
        return Err(HubError::TooLarge(format!(
            "bundle of {bundle_size} bytes is over this hub's {}-byte limit",
            hub.limits.max_object_bytes
        )));
    }
    Ok((content_hash, bundle_sha256, bundle_size))
}

/// The wheel a version declares, when it names both a file and its digest.
fn wheel_fields(body: &Map, requires: &Value) -> Result<Option<WheelDecl>, HubError> {
    let wheel_sha256 = opt_str(body, "wheelSha256")?;
    let wheel_filename = opt_str(body, "wheelFilename")?;
    if let Some(name) = &wheel_filename {
        if !name.ends_with(".whl") || name.contains('/') || name.contains('\\') || name.starts_with('.') {
            return Err(HubError::BadRequest("'wheelFilename' must be a plain *.whl file name".into()));
        }
    }
    if wheel_sha256.as_deref().is_some_and(|s| !is_sha256_b64(s)) {
        return Err(HubError::BadRequest("'wheelSha256' must be the base64 of a raw sha256 digest".into()));
    }
    let (Some(filename), Some(sha256)) = (wheel_filename, wheel_sha256) else { return Ok(None) };
    let size = match body.get("wheelSizeBytes") {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    };
    Ok(Some(WheelDecl { filename, sha256, size, requires_dist: json::canonical(requires) }))
}

/// The same tree pushed again, now with a wheel: the version takes the wheel it lacks
/// (one already uploaded stays, as a version never changes once complete).
async fn take_missing_wheel(hub: &Hub, version: &mut Version, wheel: WheelDecl) -> Result<(), HubError> {
    if version.wheel_filename.is_some() && version.wheel_uploaded {
        return Ok(());
    }
    if hub.meta.attach_wheel(&version.id, &wheel).await? {
        version.wheel_filename = Some(wheel.filename);
        version.wheel_sha256 = Some(wheel.sha256);
        version.wheel_size = wheel.size;
        version.wheel_uploaded = false;
    }
    Ok(())
}

/// `POST /versions`' answer: the version, and signed upload URLs for the bundle and
/// the wheel it still lacks.
async fn version_upload_answer(hub: &Hub, base_url: &str, container: &Container, version: &Version) -> Answer {
    // A stored bundle is only "already uploaded" when the object is really there.
    let stored = version.uploaded && hub.objects.size(&version.object_key).await?.is_some();
    let mut out = Map::default();
    out.insert("versionId".into(), Value::str(version.id.clone()));
    out.insert("containerId".into(), Value::str(container.id.clone()));
    out.insert("contentHash".into(), Value::str(version.content_hash.clone()));
    out.insert("state".into(), Value::str(version.state.clone()));
    out.insert("alreadyUploaded".into(), Value::Bool(stored));
    if !stored {
        let url = presign(
            hub,
            base_url,
            "PUT",
            &version.object_key,
            &[("checksum", &version.bundle_sha256), ("version", &version.id), ("artifact", "bundle")],
        );
        out.insert("uploadUrl".into(), Value::str(url));
    }
    if let (Some(name), Some(sha), false) = (&version.wheel_filename, &version.wheel_sha256, version.wheel_uploaded) {
        let key = format!("wheels/{}/{}", version.id, name);
        let url = presign(hub, base_url, "PUT", &key, &[("checksum", sha), ("version", &version.id), ("artifact", "wheel")]);
        out.insert("wheelUploadUrl".into(), Value::str(url));
    }
    ok(Value::Object(out))
}

pub(super) async fn finalize(hub: &Hub, project: &str, id: &str, body: &Map) -> Answer {
    let (container, version) = own_version(hub, project, id).await?;
    let branch = opt_str(body, "branch")?.filter(|b| !b.is_empty()).unwrap_or_else(|| "main".into());
    check_ref_name(&branch)?;
    let base = opt_str(body, "baseVersionId")?;
    let force = opt_bool(body, "force")?;
    if !version.uploaded || hub.objects.size(&version.object_key).await?.is_none() {
        return Err(HubError::BadRequest(format!(
            "version {id} has no uploaded bundle: PUT the tarball to the uploadUrl from POST /versions before finalizing"
        )));
    }
    let done = hub.meta.finalize(id, &branch, base.as_deref(), force).await?;
    ok(object([
        ("versionId", Value::str(done.version.id)),
        ("containerId", Value::str(container.id)),
        ("slug", Value::str(container.slug)),
        ("state", Value::str(done.version.state)),
        ("branch", Value::str(done.branch.name)),
        ("previousTipVersionId", str_or_null(&done.previous_tip)),
        ("forkedFromVersionId", str_or_null(&done.version.forked_from_version_id)),
    ]))
}

/// What every listing says of a version: its id (under `id_key`), content hash,
/// semantic version, author, change reason and creation time, in that order.
pub(super) fn version_facts(v: &Version, id_key: &'static str) -> Vec<(&'static str, Value)> {
    vec![
        (id_key, Value::str(v.id.clone())),
        ("contentHash", Value::str(v.content_hash.clone())),
        ("semanticVersion", str_or_null(&v.semantic_version)),
        ("author", str_or_null(&v.author)),
        ("changeReason", str_or_null(&v.change_reason)),
        ("createdAt", Value::str(v.created_at.clone())),
    ]
}

/// A version as the log and a resolve describe it: its facts, lineage and state.
pub(super) fn version_summary(v: &Version) -> Vec<(&'static str, Value)> {
    let mut summary = version_facts(v, "versionId");
    summary.extend([("forkedFromVersionId", str_or_null(&v.forked_from_version_id)), ("state", Value::str(v.state.clone()))]);
    summary
}

/// Resolve `ref` in a container: latest, branch, tag, version id, semver, hash prefix.
pub(super) async fn resolve_ref(hub: &Hub, container: &Container, reference: &str) -> Result<(Version, Option<String>), HubError> {
    let ready = |v: Version| -> Result<Version, HubError> {
        if v.state == "READY" {
            Ok(v)
        } else {
            Err(HubError::NotFound(format!("version {} is not READY (its push was never finalized)", v.id)))
        }
    };
    let by_id = |id: String| async move {
        hub.meta.version(&id).await?.ok_or_else(|| HubError::Storage(format!("ref points at missing version {id}")))
    };
    if reference == "latest" {
        if let Some(main) = hub.meta.get_ref(&container.id, "main").await? {
            return Ok((ready(by_id(main.version_id).await?)?, Some("main".into())));
        }
        let newest = hub.meta.find_versions(&container.id, VersionFilter::Ready, 1).await?;
        return newest
            .into_iter()
            .next()
            .map(|v| (v, None))
            .ok_or_else(|| HubError::NotFound(format!("'{}' has no READY version yet", container.slug)));
    }
    if let Some(found) = hub.meta.get_ref(&container.id, reference).await? {
        let branch = (found.kind == "branch").then(|| found.name.clone());
        return Ok((ready(by_id(found.version_id).await?)?, branch));
    }
    if let Some(v) = hub.meta.version(reference).await? {
        if v.container_id == container.id {
            return Ok((ready(v)?, None));
        }
    }
    let semver = hub.meta.find_versions(&container.id, VersionFilter::Semver(reference.to_string()), 1).await?;
    if let Some(v) = semver.into_iter().next() {
        return Ok((v, None));
    }
    if !reference.is_empty() && reference.len() <= 64 && is_hex(&reference.to_ascii_lowercase()) {
        let prefix = reference.to_ascii_lowercase();
        let found = hub.meta.find_versions(&container.id, VersionFilter::HashPrefix(prefix.clone()), 50).await?;
        let distinct: BTreeSet<&str> = found.iter().map(|v| v.content_hash.as_str()).collect();
        match distinct.len() {
            0 => {}
            1 => return Ok((found.into_iter().next().expect("one"), None)),
            n => {
                return Err(HubError::Conflict(format!(
                    "content-hash prefix '{reference}' is ambiguous in '{}' ({n} versions match): give more characters",
                    container.slug
                )))
            }
        }
    }
    Err(HubError::NotFound(format!(
        "'{}@{reference}' matches no branch, tag, version id, semver or content-hash prefix of a READY version",
        container.slug
    )))
}

pub(super) async fn resolve_version(hub: &Hub, project: &str, body: &Map, base_url: &str) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let reference = opt_str(body, "ref")?.filter(|r| !r.is_empty()).unwrap_or_else(|| "latest".into());
    let (version, branch) = resolve_ref(hub, &container, &reference).await?;
    let mut out = Map::default();
    out.insert("containerId".into(), Value::str(container.id.clone()));
    out.insert("slug".into(), Value::str(container.slug.clone()));
    out.insert("ref".into(), Value::str(reference));
    for (k, v) in version_summary(&version) {
        out.insert(k.into(), v);
    }
    if let Some(branch) = branch {
        out.insert("branch".into(), Value::str(branch));
    }
    out.insert("bundleSha256".into(), Value::str(version.bundle_sha256.clone()));
    out.insert("bundleSizeBytes".into(), Value::Int(version.bundle_size));
    if version.uploaded {
        out.insert("downloadUrl".into(), Value::str(presign(hub, base_url, "GET", &version.object_key, &[])));
    }
    if let Some(bar) = pass_threshold(hub, project, &version).await? {
        out.insert("passThreshold".into(), Value::Float(bar));
    }
    ok(Value::Object(out))
}

/// The document kind caching what was read out of a version's bundle (`{passThreshold?}`).
const FACTS: &str = "version-facts";

/// The world's pass bar (`gateway_bundle::world_facts`): read from the bundle the first time a
/// version is resolved, then from its cached facts (a READY version never changes).
/// A bundle that cannot be read now names no bar, and is tried again next time.
async fn pass_threshold(hub: &Hub, project: &str, version: &Version) -> Result<Option<f64>, HubError> {
    if let Some(text) = hub.meta.document(project, FACTS, &version.id).await? {
        return Ok(opt_value(&text).get("passThreshold").and_then(Value::as_f64));
    }
    let listed = manifest_map(version);
    let wanted: Vec<&'static str> = world_facts::BAR_SOURCES.iter().copied().filter(|p| listed.contains_key(*p)).collect();
    let bar = if wanted.is_empty() || !version.uploaded {
        None
    } else {
        match bundle_members(hub, &version.object_key, wanted).await {
            Ok(members) => world_facts::pass_threshold(&members),
            Err(error) => {
                eprintln!("hub: could not read the pass bar of version {}: {error}", version.id);
                return Ok(None);
            }
        }
    };
    let facts = match bar {
        Some(bar) => object([("passThreshold", Value::Float(bar))]),
        None => Value::Object(Map::default()),
    };
    hub.meta.put_document(project, FACTS, &version.id, &json::canonical(&facts)).await?;
    Ok(bar)
}

/// Members of a stored bundle, streamed through gunzip and tar on a blocking thread
/// (never held whole; reading stops once every wanted member is found).
async fn bundle_members(hub: &Hub, key: &str, wanted: Vec<&'static str>) -> Result<BTreeMap<String, String>, HubError> {
    let Some(stream) = hub.objects.open(key).await? else { return Ok(BTreeMap::new()) };
    read_blocking(stream, move |reader| world_facts::read_members(reader, &wanted))
        .await?
        .map_err(|source| HubError::WorkerIn { what: "bundle reader", source })?
        .map_err(|e| HubError::Storage(format!("bundle {key}: {e}")))
}

pub(super) async fn download(hub: &Hub, project: &str, id: &str, artifact: Option<String>, base_url: &str) -> Answer {
    let (_, version) = own_version(hub, project, id).await?;
    let mut out = Map::default();
    out.insert("versionId".into(), Value::str(version.id.clone()));
    match artifact.as_deref().unwrap_or("bundle") {
        "wheel" => {
            if let (Some(name), true) = (&version.wheel_filename, version.wheel_uploaded) {
                let key = format!("wheels/{}/{}", version.id, name);
                out.insert("downloadUrl".into(), Value::str(presign(hub, base_url, "GET", &key, &[])));
                out.insert("wheelFilename".into(), Value::str(name.clone()));
            }
        }
        "bundle" | "source" => {
            if version.uploaded {
                out.insert("downloadUrl".into(), Value::str(presign(hub, base_url, "GET", &version.object_key, &[])));
                out.insert("bundleSha256".into(), Value::str(version.bundle_sha256.clone()));
            }
        }
        other => return Err(HubError::BadRequest(format!("unknown artifact '{other}': use bundle or wheel"))),
    }
    ok(Value::Object(out))
}

pub(super) fn manifest_map(version: &Version) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    if let Some(Value::Array(items)) = json::parse_clean(&version.file_manifest) {
        for item in items {
            if item.get("isDirectory").is_some_and(|d| matches!(d, Value::Bool(true))) {
                continue;
            }
            if let Some(path) = item.get("path").and_then(Value::as_str) {
                out.insert(path.to_string(), item.get("sha256").and_then(Value::as_str).map(str::to_string));
            }
        }
    }
    out
}

pub(super) async fn files(hub: &Hub, project: &str, id: &str) -> Answer {
    let (_, version) = own_version(hub, project, id).await?;
    ok(object([
        ("versionId", Value::str(version.id.clone())),
        ("contentHash", Value::str(version.content_hash.clone())),
        ("files", opt_value(&version.file_manifest)),
    ]))
}

pub(super) async fn diff(hub: &Hub, project: &str, base: Option<String>, head: Option<String>) -> Answer {
    let base = base.filter(|b| !b.is_empty()).ok_or_else(|| HubError::BadRequest("'base' (a version id) is required".into()))?;
    let head = head.filter(|h| !h.is_empty()).ok_or_else(|| HubError::BadRequest("'head' (a version id) is required".into()))?;
    let (_, base_v) = own_version(hub, project, &base).await?;
    let (_, head_v) = own_version(hub, project, &head).await?;
    let (old, new) = (manifest_map(&base_v), manifest_map(&head_v));
    let list = |paths: Vec<&String>| Value::Array(paths.into_iter().map(|p| Value::str(p.clone())).collect());
    let added = new.keys().filter(|p| !old.contains_key(*p)).collect();
    let removed = old.keys().filter(|p| !new.contains_key(*p)).collect();
    let modified = new.iter().filter(|(p, h)| old.get(*p).is_some_and(|o| o != *h)).map(|(p, _)| p).collect();
    let unchanged = new.iter().filter(|(p, h)| old.get(*p).is_some_and(|o| o == *h)).map(|(p, _)| p).collect();
    ok(object([
        ("base", Value::str(base)),
        ("head", Value::str(head)),
        ("baseContentHash", Value::str(base_v.content_hash)),
        ("headContentHash", Value::str(head_v.content_hash)),
        ("added", list(added)),
        ("removed", list(removed)),
        ("modified", list(modified)),
        ("unchanged", list(unchanged)),
    ]))
}

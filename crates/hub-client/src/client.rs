//! The hub client behind `gateway bench …`: the original's `GatewayBenchmarkClient`
//! (push with content hash, tarball and compare-and-set base; pull with integrity
//! check and safe extraction; refs, log, status, propose, fork, diff, secrets, run
//! configs), speaking the same HTTP API with the same bodies, and returning the same
//! JSON objects the original prints.

use crate::objects;
pub use crate::transport::{basic_auth, EnvCredentials};
use crate::transport::{Dialect, Missing, Transport};
use crate::versioning;
use crate::wheel;
pub use crate::wheel::Installer;
use crate::working_copy::{
    base_files, check_before_push, copy_dir, local_tree_state, meta_str, read_local_meta, read_pyproject, serves_api, write_local_meta,
};
use crate::ClientError;
use gateway_bundle::archive;
use gateway_bundle::extract::{self, ExtractLimits};
use gateway_bundle::BundleError;
use gateway_common::url::{quote_plus, quote_segment};
use gateway_world::json::{self, object, Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The branch a working copy tracks when nothing says otherwise.
pub const DEFAULT_BRANCH: &str = "main";
const API: &str = "/api/public/benchmark-containers";
/// The original's `GatewayBenchmarkClient._request`: a repeated member is not JSON.
const DIALECT: Dialect = Dialect { refuse_repeated_members: true, ..Dialect::URLLIB };

type Result<T> = std::result::Result<T, ClientError>;

fn fail(message: impl Into<String>) -> ClientError {
    ClientError::Failed(message.into())
}

/// `--auto-bump`, `--rc` or `--post` (one at most): pyproject.toml's version bumped
/// in place before the push.
fn bump_pyproject_version(env: &Path, options: &PushOptions) -> Result<()> {
    let bumps = [options.auto_bump, options.rc, options.post].iter().filter(|b| **b).count();
    if bumps > 1 {
        return Err(fail("--auto-bump, --rc and --post are mutually exclusive"));
    }
    if bumps == 1 {
        let current = read_pyproject(env).get("version").and_then(Value::as_str).map(str::to_string);
        let current = current.filter(|v| !v.is_empty()).ok_or_else(|| fail("no [project].version in pyproject.toml to bump"))?;
        let new_version = if options.auto_bump {
            versioning::bump_version(&current)
        } else if options.rc {
            versioning::bump_rc_version(&current)
        } else {
            versioning::bump_post_version(&current)
        };
        let path = env.join("pyproject.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| ClientError::io(&path, e))?;
        let updated = versioning::update_pyproject_version(&text, &new_version)
            .ok_or_else(|| fail("version line not found or unchanged in pyproject.toml"))?;
        std::fs::write(&path, updated).map_err(|e| ClientError::io(&path, e))?;
    }
    Ok(())
}

/// The `/resolve` request: the container's slug, its name (`--name`, else the
/// pyproject's name, else the slug) and what else the push sets on it.
fn resolve_request(options: &PushOptions, slug: &str, py_name: Option<String>) -> Value {
    let mut resolve = Map::default();
    resolve.insert("slug".into(), Value::str(slug));
    let name = options.name.clone().filter(|s| !s.is_empty()).or(py_name).unwrap_or_else(|| slug.to_string());
    resolve.insert("name".into(), Value::str(name));
    if let Some(d) = options.description.clone().filter(|s| !s.is_empty()) {
        resolve.insert("description".into(), Value::str(d));
    }
    if !options.tags.is_empty() {
        resolve.insert("tags".into(), Value::Array(options.tags.iter().cloned().map(Value::Str).collect()));
    }
    if let Some(v) = options.visibility {
        resolve.insert("visibility".into(), Value::str(v.as_str()));
    }
    Value::Object(resolve)
}

// ------------------------------------------------------------------ the client

/// Options of [`Client::push`] (the `bench push` flags).
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// `--slug`.
    pub slug: Option<String>,
    /// `--name`.
    pub name: Option<String>,
    /// `--description`.
    pub description: Option<String>,
    /// `--tag` (repeatable).
    pub tags: Vec<String>,
    /// `--visibility`.
    pub visibility: Option<Visibility>,
    /// `--auto-bump`.
    pub auto_bump: bool,
    /// `--rc`.
    pub rc: bool,
    /// `--post`.
    pub post: bool,
    /// `--image`.
    pub image_ref: Option<String>,
    /// `--build-wheel`: build the directory's wheel and upload it beside the bundle.
    pub build_wheel: bool,
    /// `--branch`.
    pub branch: Option<String>,
    /// `--force`.
    pub force: bool,
    /// `-m`.
    pub message: Option<String>,
    /// `--author` (or `GATEWAY_AUTHOR`).
    pub author: Option<String>,
}

/// A hub client authenticated with a project key pair.
#[derive(Debug, Clone)]
pub struct Client {
    transport: Transport,
}

impl Client {
    /// A client for `host` with a key pair (both required, as in the original).
    pub fn new(host: &str, public_key: &str, secret_key: &str) -> Result<Client> {
        // The JSON calls' budget; object transfers have objects::TRANSFER_TIMEOUT.
        let transport = Transport::with_key_pair(host, public_key, secret_key, Missing::SAY_WHERE, Duration::from_secs(120))?;
        Ok(Client { transport })
    }

    /// `from_env`: `--host` else `GATEWAY_HOST`, and `GATEWAY_PUBLIC_KEY` / `GATEWAY_SECRET_KEY`.
    pub fn from_env(host: Option<&str>) -> Result<Client> {
        let credentials = EnvCredentials::read(host);
        Client::new(&credentials.host, &credentials.public_key, &credentials.secret_key)
    }

    fn request(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value> {
        self.transport.call(&DIALECT, method, path, body)
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value> {
        self.request(reqwest::Method::POST, path, Some(body))
    }

    fn get(&self, path: &str) -> Result<Value> {
        self.request(reqwest::Method::GET, path, None)
    }

    /// `bench push`: resolve → versions → PUT → finalize, then rewrite the metadata.
    pub fn push(&self, env: &Path, options: &PushOptions) -> Result<Value> {
        if !env.is_dir() {
            return Err(fail(format!("Not a directory: {}", env.display())));
        }
        let local = read_local_meta(env).unwrap_or_default();
        let branch = options
            .branch
            .clone()
            .filter(|b| !b.is_empty())
            .or_else(|| meta_str(&local, "branch"))
            .unwrap_or_else(|| DEFAULT_BRANCH.into());
        let base_version_id = local.get("versionId").cloned().unwrap_or(Value::Null);

        bump_pyproject_version(env, options)?;

        check_before_push(env)?;

        let content_hash = archive::compute_content_hash(env)?;
        let pyproject = read_pyproject(env);
        let py_name = pyproject.get("name").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        let dir_name = env.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let slug = options.slug.clone().filter(|s| !s.is_empty()).or_else(|| py_name.clone()).unwrap_or(dir_name);

        // Built before the versions POST, so its sha256 and Requires-Dist travel with it
        // and the hub answers a second upload URL (the original's order).
        let wheel = if options.build_wheel { Some(wheel::build_wheel(env)?) } else { None };

        let resolve = resolve_request(options, &slug, py_name);
        let resolved = self.post(&format!("{API}/resolve"), &resolve)?;
        let container_id = resolved
            .get("containerId")
            .and_then(Value::as_str)
            .ok_or_else(|| ClientError::BadAnswer("resolve answered without a containerId".into()))?
            .to_string();

        let tarball = archive::build_source_tarball(env)?;
        let bundle_sha256 = archive::sha256_base64(&tarball);
        let semantic_version = pyproject.get("version").filter(|v| !matches!(v, Value::Null | Value::Bool(false))).cloned();
        let mut body = Map::default();
        body.insert("containerId".into(), Value::str(container_id.clone()));
        body.insert("contentHash".into(), Value::str(content_hash.clone()));
        body.insert("bundleSha256".into(), Value::str(bundle_sha256.clone()));
        body.insert("bundleSizeBytes".into(), Value::Int(tarball.len() as i64));
        if let Some(v) = semantic_version.clone().filter(|v| v.as_str() != Some("")) {
            body.insert("semanticVersion".into(), v);
        }
        body.insert("pyprojectMeta".into(), Value::Object(pyproject.clone()));
        body.insert("fileManifest".into(), Value::Array(archive::build_file_manifest(env)));
        body.insert("branch".into(), Value::str(branch.clone()));
        body.insert("baseVersionId".into(), base_version_id.clone());
        if options.force {
            body.insert("force".into(), Value::Bool(true));
        }
        if let Some(m) = options.message.clone().filter(|s| !s.is_empty()) {
            body.insert("changeReason".into(), Value::str(m));
        }
        if let Some(a) = options.author.clone().filter(|s| !s.is_empty()) {
            body.insert("author".into(), Value::str(a));
        }
        if let Some(i) = options.image_ref.clone().filter(|s| !s.is_empty()) {
            body.insert("imageRef".into(), Value::str(i));
        }
        if let Some(wheel) = &wheel {
            body.insert("wheelSha256".into(), Value::str(wheel.sha256_b64.clone()));
            body.insert("wheelSizeBytes".into(), Value::Int(wheel.bytes.len() as i64));
            body.insert("wheelFilename".into(), Value::str(wheel.filename.clone()));
            body.insert("requiresDist".into(), Value::Array(wheel.requires_dist.iter().cloned().map(Value::Str).collect()));
        }
        let version = self.post(&format!("{API}/versions"), &Value::Object(body))?;
        let version_id = version
            .get("versionId")
            .and_then(Value::as_str)
            .ok_or_else(|| ClientError::BadAnswer("versions answered without a versionId".into()))?
            .to_string();
        if let Some(url) = version.get("uploadUrl").and_then(Value::as_str).filter(|u| !u.is_empty()) {
            objects::put(self.transport.http(), url, tarball, &bundle_sha256, "application/gzip")?;
        }
        if let (Some(url), Some(wheel)) = (version.get("wheelUploadUrl").and_then(Value::as_str).filter(|u| !u.is_empty()), &wheel) {
            objects::put(self.transport.http(), url, wheel.bytes.clone(), &wheel.sha256_b64, "application/octet-stream")?;
        }

        let mut fin = Map::default();
        fin.insert("branch".into(), Value::str(branch.clone()));
        fin.insert("baseVersionId".into(), base_version_id.clone());
        if options.force {
            fin.insert("force".into(), Value::Bool(true));
        }
        let finalized = self.post(&format!("{API}/versions/{version_id}/finalize"), &Value::Object(fin))?;

        let semver_meta = pyproject.get("version").cloned().unwrap_or(Value::Null);
        write_local_meta(
            env,
            &object([
                ("slug", Value::str(slug.clone())),
                ("ref", Value::str(branch.clone())),
                ("branch", Value::str(branch.clone())),
                ("versionId", Value::str(version_id.clone())),
                ("contentHash", Value::str(content_hash.clone())),
                ("semanticVersion", semver_meta),
                ("forkedFromVersionId", base_version_id),
                ("baseFiles", base_files(env)?),
            ]),
        )?;
        let already = matches!(version.get("alreadyUploaded"), Some(v) if truthy(v));
        Ok(object([
            ("containerId", Value::str(container_id)),
            ("versionId", Value::str(version_id)),
            ("slug", Value::str(slug)),
            ("contentHash", Value::str(content_hash)),
            ("state", finalized.get("state").cloned().unwrap_or(Value::Null)),
            ("branch", finalized.get("branch").cloned().unwrap_or(Value::str(branch))),
            ("alreadyUploaded", Value::Bool(already)),
            ("wheelBuilt", Value::Bool(wheel.is_some())),
        ]))
    }

    /// `bench push DIR` as the original's command runs it: a schema world that carries
    /// `connector.toml` is pushed as the api bundle that serves it (built in a scratch
    /// directory with `.gateway/` carried in, and carried back after the push, so the
    /// world's metadata records the bundle's version and files); its slug defaults to the
    /// world's directory name. Anything else is pushed as it is ([`Client::push`]).
    pub fn push_world(&self, source: &Path, options: &PushOptions) -> Result<Value> {
        if !serves_api(source)? {
            return self.push(source, options);
        }
        let staging = tempfile::Builder::new().prefix("gateway-world-api-").tempdir().map_err(|e| ClientError::io(source, e))?;
        let bundle = staging.path().join("bundle");
        gateway_serve::bundle::build_api_bundle_for(source, &bundle, gateway_serve::bundle::ServerPayload::Image)
            .map_err(|error| fail(error.to_string()))?;
        let metadata = source.join(".gateway");
        if metadata.is_dir() {
            copy_dir(&metadata, &bundle.join(".gateway"))?;
        }
        let mut options = options.clone();
        if options.slug.as_deref().is_none_or(str::is_empty) {
            let resolved = std::fs::canonicalize(source).map_err(|e| ClientError::io(source, e))?;
            options.slug = resolved.file_name().map(|n| n.to_string_lossy().into_owned());
        }
        let result = self.push(&bundle, &options)?;
        let pushed = bundle.join(".gateway");
        if pushed.is_dir() {
            if metadata.exists() {
                std::fs::remove_dir_all(&metadata).map_err(|e| ClientError::io(&metadata, e))?;
            }
            copy_dir(&pushed, &metadata)?;
        }
        Ok(result)
    }

    /// `resolve-version`: slug + ref to a READY version and its download URL.
    pub fn resolve_version(&self, slug: &str, reference: &str) -> Result<Value> {
        let mut body = Map::default();
        body.insert("slug".into(), Value::str(slug));
        if !reference.is_empty() {
            body.insert("ref".into(), Value::str(reference));
        }
        self.post(&format!("{API}/resolve-version"), &Value::Object(body))
    }

    /// `bench pull` / `bench checkout`: download, verify, extract, record the base.
    pub fn pull(&self, slug_ref: &str, target: Option<&Path>) -> Result<Value> {
        let (slug, reference) = match slug_ref.rsplit_once('@') {
            Some((slug, reference)) => (slug.to_string(), reference.to_string()),
            None => (slug_ref.to_string(), "latest".to_string()),
        };
        let details = self.resolve_version(&slug, &reference)?;
        let url = details
            .get("downloadUrl")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| fail(format!("{slug}@{reference} resolved but has no uploaded bundle")))?
            .to_string();
        let dst = match target {
            Some(target) => target.to_path_buf(),
            None => {
                let cwd = std::env::current_dir().map_err(|e| ClientError::io(Path::new("."), e))?;
                let base = cwd.join(&slug);
                let mut dst = base.clone();
                let mut i = 1;
                while dst.exists() {
                    dst = base.with_file_name(format!("{}-{i}", base.file_name().unwrap_or_default().to_string_lossy()));
                    i += 1;
                }
                dst
            }
        };
        // The bundle streams to a file and is extracted from it within the limits, into
        // a scratch directory that becomes the target: never whole in memory, and a
        // refused bundle leaves nothing behind.
        let limits = ExtractLimits::from_env()?;
        let download = gateway_common::temp::Scratch::new("pull").map_err(|e| ClientError::io(&e.path, e.source))?;
        let bundle = download.path().join("bundle.tar.gz");
        let actual = objects::download_bundle(self.transport.http(), &url, &bundle)?;
        if let Some(expected) = details.get("bundleSha256").and_then(Value::as_str).filter(|s| !s.is_empty()) {
            if actual != expected {
                return Err(fail(format!(
                    "bundle integrity check failed for {slug}@{reference}: downloaded object sha256 ({actual}) != recorded bundleSha256 ({expected})"
                )));
            }
        }
        extract::extract_into(&bundle, &dst, limits).map_err(|error| match error {
            BundleError::TooLarge(why) | BundleError::UnsafeArchive(why) => fail(format!("bundle {slug}@{reference} refused: {why}")),
            other => ClientError::Bundle(other),
        })?;
        drop(download);
        let branch = details
            .get("branch")
            .and_then(Value::as_str)
            .filter(|b| !b.is_empty())
            .map(str::to_string)
            .or_else(|| (reference == "latest").then(|| DEFAULT_BRANCH.to_string()))
            .unwrap_or_else(|| DEFAULT_BRANCH.to_string());
        let field = |k: &str| details.get(k).cloned().unwrap_or(Value::Null);
        write_local_meta(
            &dst,
            &object([
                ("slug", Value::str(slug.clone())),
                ("ref", Value::str(reference.clone())),
                ("branch", Value::str(branch.clone())),
                ("versionId", field("versionId")),
                ("contentHash", field("contentHash")),
                ("semanticVersion", field("semanticVersion")),
                ("forkedFromVersionId", field("forkedFromVersionId")),
                ("baseFiles", base_files(&dst)?),
            ]),
        )?;
        Ok(object([
            ("slug", Value::str(slug)),
            ("ref", Value::str(reference)),
            ("branch", Value::str(branch)),
            ("versionId", field("versionId")),
            ("contentHash", field("contentHash")),
            ("target", Value::str(dst.display().to_string())),
        ]))
    }

    /// `GET /refs?slug=`.
    pub fn list_refs(&self, slug: &str) -> Result<Value> {
        self.get(&format!("{API}/refs?slug={}", quote_plus(slug)))
    }

    /// `POST /refs`: a branch (from the main tip unless pinned) or an immutable tag.
    pub fn create_ref(&self, slug: &str, name: &str, kind: &str, version_id: Option<&str>) -> Result<Value> {
        let mut body = Map::default();
        body.insert("slug".into(), Value::str(slug));
        body.insert("name".into(), Value::str(name));
        body.insert("kind".into(), Value::str(kind));
        if let Some(v) = version_id.filter(|v| !v.is_empty()) {
            body.insert("versionId".into(), Value::str(v));
        }
        self.post(&format!("{API}/refs"), &Value::Object(body))
    }

    /// `GET /log`: a branch's lineage, tip first.
    pub fn log(&self, slug: &str, branch: Option<&str>, limit: i64) -> Result<Value> {
        let mut query = format!("slug={}&limit={limit}", quote_plus(slug));
        if let Some(b) = branch.filter(|b| !b.is_empty()) {
            query.push_str(&format!("&branch={}", quote_plus(b)));
        }
        self.get(&format!("{API}/log?{query}"))
    }

    /// `bench status`: branch, base, dirtiness, and whether the tip moved past the base.
    pub fn status(&self, env: &Path) -> Result<Value> {
        let meta = read_local_meta(env).filter(|m| meta_str(m, "slug").is_some()).ok_or_else(|| {
            fail(format!(
                "{} has no .gateway/.env-metadata.json — pull or push it first so the dir knows which container/branch it tracks.",
                env.display()
            ))
        })?;
        let slug = meta_str(&meta, "slug").unwrap_or_default();
        let branch = meta_str(&meta, "branch").unwrap_or_else(|| DEFAULT_BRANCH.into());
        let local_hash = archive::compute_content_hash(env)?;
        let field = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
        // A connector world goes up as its api bundle, whose hash is not the world's: it is
        // compared file by file with the bundle's `server/world/` (clean right after a push).
        let bundled = meta.get("baseFiles").and_then(Value::as_object).is_some_and(|b| b.contains_key("gateway-api-world.toml"))
            && serves_api(env).unwrap_or(false);
        let dirty = if bundled { !local_tree_state(env)?.clean } else { field("contentHash").as_str() != Some(local_hash.as_str()) };
        let refs = self.list_refs(&slug)?;
        let tip = refs
            .get("refs")
            .and_then(Value::as_array)
            .and_then(|list| list.iter().find(|r| r.get("name").and_then(Value::as_str) == Some(branch.as_str())))
            .cloned();
        let tip_field = |k: &str| tip.as_ref().and_then(|t| t.get(k)).cloned().unwrap_or(Value::Null);
        let behind = tip.is_some() && !json::json_equal(&tip_field("versionId"), &field("versionId"));
        Ok(object([
            ("slug", Value::str(slug)),
            ("branch", Value::str(branch)),
            ("baseVersionId", field("versionId")),
            ("baseContentHash", field("contentHash")),
            ("localContentHash", Value::str(local_hash)),
            ("dirty", Value::Bool(dirty)),
            ("behind", Value::Bool(behind)),
            ("remoteTipVersionId", tip_field("versionId")),
            ("remoteTipContentHash", tip_field("contentHash")),
        ]))
    }

    fn manifest_hashes(&self, version_id: &str) -> Result<Map> {
        let listed = self.get(&format!("{API}/versions/{version_id}/files"))?;
        let mut out = Map::default();
        for f in listed.get("files").and_then(Value::as_array).cloned().unwrap_or_default() {
            if f.get("isDirectory").is_some_and(truthy) {
                continue;
            }
            let Some(path) = f.get("path").and_then(Value::as_str) else { continue };
            if path.split('/').any(|seg| seg.starts_with('.')) {
                continue;
            }
            out.insert(path.to_string(), f.get("sha256").cloned().unwrap_or(Value::Null));
        }
        Ok(out)
    }

    /// `bench propose`: file the working dir's edits as a change proposal.
    pub fn propose(&self, env: &Path, title: &str, message: &str, target_branch: Option<&str>) -> Result<Value> {
        let meta =
            read_local_meta(env).filter(|m| meta_str(m, "slug").is_some() && meta_str(m, "versionId").is_some()).ok_or_else(|| {
                fail(format!(
                    "{} has no recorded base (.gateway/.env-metadata.json) — a proposal is a diff against a base version, pull first.",
                    env.display()
                ))
            })?;
        let slug = meta_str(&meta, "slug").unwrap_or_default();
        let mut base_version_id = meta_str(&meta, "versionId").unwrap_or_default();
        let recorded = meta_str(&meta, "branch").or_else(|| meta_str(&meta, "ref"));
        let target = target_branch.filter(|t| !t.is_empty()).unwrap_or(DEFAULT_BRANCH).to_string();
        let mut source_branch = None;
        let base_by_path: Map = match recorded {
            Some(recorded) if recorded != target => {
                source_branch = Some(recorded);
                let tip = self
                    .resolve_version(&slug, &target)
                    .map_err(|e| fail(format!("could not resolve target branch '{target}' to propose against: {e}")))?;
                base_version_id = tip.get("versionId").and_then(Value::as_str).unwrap_or_default().to_string();
                self.manifest_hashes(&base_version_id)?
            }
            _ => match meta.get("baseFiles") {
                Some(Value::Object(files)) if !files.is_empty() => files.clone(),
                _ => self.manifest_hashes(&base_version_id)?,
            },
        };
        let mut changes = Vec::new();
        let mut local = std::collections::BTreeSet::new();
        for file in archive::collect_archive_files(env)? {
            local.insert(file.rel.clone());
            let data = std::fs::read(&file.path).map_err(|e| ClientError::io(&file.path, e))?;
            let digest = hex::encode(Sha256::digest(&data));
            if base_by_path.get(&file.rel).and_then(Value::as_str) == Some(digest.as_str()) {
                continue;
            }
            let text = String::from_utf8(data).map_err(|_| {
                fail(format!(
                    "{} is not utf-8 text — proposals carry text changesets; push binary changes directly to a branch instead.",
                    file.rel
                ))
            })?;
            changes.push(object([("path", Value::str(file.rel)), ("action", Value::str("write")), ("newContent", Value::Str(text))]));
        }
        let mut removed: Vec<&String> = base_by_path.keys().filter(|p| !local.contains(*p)).collect();
        removed.sort();
        for path in removed {
            changes.push(object([("path", Value::str(path.clone())), ("action", Value::str("delete"))]));
        }
        if changes.is_empty() {
            let suffix = source_branch.map(|b| format!(" (branch {b} matches the target's tip)")).unwrap_or_default();
            return Err(fail(format!("No changes against {target} — nothing to propose.{suffix}")));
        }
        let mut body = Map::default();
        body.insert("slug".into(), Value::str(slug));
        body.insert("title".into(), Value::str(title));
        body.insert("changeReason".into(), Value::str(message));
        body.insert("baseVersionId".into(), Value::str(base_version_id));
        if let Some(t) = target_branch.filter(|t| !t.is_empty()) {
            body.insert("targetBranch".into(), Value::str(t));
        }
        if let Some(s) = source_branch {
            body.insert("sourceBranch".into(), Value::str(s));
        }
        body.insert("changes".into(), Value::Array(changes));
        self.post(&format!("{API}/proposals"), &Value::Object(body))
    }

    /// `POST /fork`: a new container whose head copies the source's latest READY version.
    pub fn fork(&self, slug: &str, target_slug: Option<&str>) -> Result<Value> {
        if slug.contains('@') {
            return Err(fail("fork a container head; omit the @version suffix"));
        }
        let mut body = Map::default();
        body.insert("slug".into(), Value::str(slug));
        if let Some(t) = target_slug.filter(|t| !t.is_empty()) {
            body.insert("targetSlug".into(), Value::str(t));
        }
        self.post(&format!("{API}/fork"), &Value::Object(body))
    }

    /// `GET /versions/diff`.
    pub fn diff(&self, base: &str, head: &str) -> Result<Value> {
        self.get(&format!("{API}/versions/diff?base={}&head={}", quote_plus(base), quote_plus(head)))
    }

    /// `PUT /secrets`.
    pub fn set_env_secret(&self, slug: &str, key: &str, value: &str) -> Result<Value> {
        let body = object([("slug", Value::str(slug)), ("key", Value::str(key)), ("value", Value::str(value))]);
        self.request(reqwest::Method::PUT, &format!("{API}/secrets"), Some(&body))
    }

    /// `GET /secrets?slug=`: names and rotation times only.
    pub fn list_env_secret_keys(&self, slug: &str) -> Result<Value> {
        self.get(&format!("{API}/secrets?slug={}", quote_segment(slug)))
    }

    /// `DELETE /secrets`.
    pub fn delete_env_secret(&self, slug: &str, key: &str) -> Result<Value> {
        let body = object([("slug", Value::str(slug)), ("key", Value::str(key))]);
        self.request(reqwest::Method::DELETE, &format!("{API}/secrets"), Some(&body))
    }

    /// `GET /run-configs`.
    pub fn list_run_configs(&self) -> Result<Value> {
        self.get(&format!("{API}/run-configs"))
    }

    /// `POST /run-configs` (create, or update with `id`).
    pub fn upsert_run_config(&self, fields: Map) -> Result<Value> {
        self.post(&format!("{API}/run-configs"), &Value::Object(fields))
    }

    /// `DELETE /run-configs`.
    pub fn delete_run_config(&self, id: &str) -> Result<Value> {
        self.request(reqwest::Method::DELETE, &format!("{API}/run-configs"), Some(&object([("id", Value::str(id))])))
    }

    /// `POST /run-configs/dispatch`: `{versionLabel, runs: [{model, runId, ok, error?}]}`.
    pub fn dispatch_run_config(&self, run_config_id: &str, container_id: Option<&str>, version_id: Option<&str>) -> Result<Value> {
        let mut body = Map::default();
        body.insert("runConfigId".into(), Value::str(run_config_id));
        for (key, value) in [("containerId", container_id), ("versionId", version_id)] {
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                body.insert(key.into(), Value::str(value));
            }
        }
        self.post(&format!("{API}/run-configs/dispatch"), &Value::Object(body))
    }

    /// `bench install`: the version's built wheel, downloaded under its canonical
    /// file name and installed into the current Python environment with `uv pip
    /// install [--reinstall]` (`tool` = `uv`) or `pip install [--upgrade]` (anything
    /// else), as the original. `{slug, ref, versionId, tool, wheelFile}`.
    pub fn install(&self, slug_ref: &str, tool: Installer, no_upgrade: bool) -> Result<Value> {
        let (slug, reference) = match slug_ref.rsplit_once('@') {
            Some((slug, reference)) => (slug.to_string(), reference.to_string()),
            None => (slug_ref.to_string(), "latest".to_string()),
        };
        let details = self.resolve_version(&slug, &reference)?;
        let version_id = details.get("versionId").cloned().unwrap_or_default();
        let shown = match &version_id {
            Value::Str(id) => id.clone(),
            other => json::dumps(other, json::DumpOptions::CLI),
        };
        let download = self.get(&format!("{API}/versions/{}/download?artifact=wheel", quote_segment(&shown)))?;
        let url = download.get("downloadUrl").and_then(Value::as_str).filter(|u| !u.is_empty()).ok_or_else(|| {
            fail(format!("{slug}@{reference} has no built wheel — push it with wheel=True (`gateway bench push --build-wheel`)"))
        })?;
        // The object key's basename is the canonical wheel name pip and uv parse.
        let path = reqwest::Url::parse(url).map(|u| u.path().to_string()).unwrap_or_default();
        let name = gateway_common::url::unquote_plus(path.rsplit('/').next().unwrap_or_default());
        let name = if name.is_empty() { "pkg.whl".to_string() } else { name };
        let scratch = tempfile_dir("gateway-wheel-")?;
        let wheel_file = scratch.join(&name);
        let outcome =
            objects::download_wheel(self.transport.http(), url, &wheel_file).and_then(|()| wheel::install(tool, no_upgrade, &wheel_file));
        let _ = std::fs::remove_dir_all(&scratch);
        outcome?;
        Ok(object([
            ("slug", Value::str(slug)),
            ("ref", Value::str(reference)),
            ("versionId", version_id),
            ("tool", Value::str(tool.as_str())),
            ("wheelFile", Value::str(name)),
        ]))
    }
}

/// A fresh private scratch directory under the system temp dir.
fn tempfile_dir(prefix: &str) -> Result<PathBuf> {
    let dir = gateway_world::data::tempfile_dir::process_root().join(format!("{prefix}{}", gateway_common::random::random_hex(6)));
    std::fs::create_dir(&dir).map_err(|e| ClientError::io(&dir, e))?;
    Ok(dir)
}

/// Who may see a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Visibility {
    /// This project only.
    Private,
    /// Everyone.
    Public,
}

impl Visibility {
    /// The wire spelling (`PRIVATE`, `PUBLIC`).
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Private => "PRIVATE",
            Visibility::Public => "PUBLIC",
        }
    }
}

/// Python truthiness of a JSON value.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Str(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

//! Workspace connectors (spec §3): `/api/public/context/connectors[/{slug}]` (list,
//! exists, pull, push, delete) and `/api/public/connectors/{hub,clone}`.
//!
//! A push is a delta on the head (`{path: {content} | null}`); the resulting template
//! must make a world — it is initialised and compiled by the engine in a scratch
//! directory (and its `connector.toml`, when it has one, parsed with the serving
//! settings) — else 400 with the engine's reason (a reference into `base.json` the
//! dialect's base lacks says what to do: `schema/base.json` is generated, the template
//! never carries it, see [`explain_base`]). A `parent_commit` that is not the head
//! is a 409 whose body carries `latestCommit`; the head moves by a compare-and-set in the
//! store, so two pushes from one parent cannot both land.
//!
//! Scoping: a project is the hub's organisation. A connector belongs to the project that
//! pushed it (`scope` is kept as sent); only that project lists, pulls, pushes and deletes
//! it. `is_public` publishes it: every project then sees it in the hub listing and may
//! clone it. Another project's unpublished connector is a 404, as if absent.

use super::request::{opt_bool, opt_str, JsonRequest};
use super::response::{ok, Answer};
use super::state::Hub;
use crate::connectors::*;
use crate::error::HubError;
use crate::util::{new_id, now_iso};
use gateway_common::url::{quote_segment, unquote_plus};
use gateway_world::json::{self, object, Map, Value};
use gateway_world::scaffold::{self, TemplateFiles};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

const CONNECTORS: &str = "/api/public/context/connectors";
/// Most files one template may hold.
const MAX_FILES: usize = 2_000;
/// Most bytes of template text (all files together).
const MAX_TEMPLATE_BYTES: usize = 16 * 1024 * 1024;

/// The connector routes (`routes::Family::Connectors`).
pub(super) async fn route(request: &JsonRequest<'_>, p: &str) -> Answer {
    let JsonRequest { hub, method, segments, query, .. } = *request;
    match (method.as_str(), segments) {
        ("GET", ["context", "connectors"]) => list(hub, p, query).await,
        ("GET", ["context", "connectors", slug]) => {
            let slug = unquote_plus(slug);
            if query.get("exists").is_some_and(|v| v == "true") {
                exists(hub, p, &slug).await
            } else {
                pull(hub, p, &slug, query.get("version").map(String::as_str)).await
            }
        }
        ("POST", ["context", "connectors", slug]) => push(hub, p, &unquote_plus(slug), &request.json()?, request.base_url).await,
        ("DELETE", ["context", "connectors", slug]) => delete(hub, p, &unquote_plus(slug)).await,
        ("GET", ["connectors", "hub"]) => hub_listing(hub, p, query.get("query").map(String::as_str)).await,
        ("POST", ["connectors", "clone"]) => clone(hub, p, &request.json()?).await,
        _ => Err(request.no_route()),
    }
}

fn check_connector_slug(slug: &str) -> Result<(), HubError> {
    if slug.len() <= 100 && scaffold::is_slug(slug) {
        Ok(())
    } else {
        Err(HubError::BadRequest(format!(
            "invalid connector slug '{slug}': use 1-100 lowercase letters, digits, '-' or '_' (what `schema init --connector workspace:<slug>` accepts)"
        )))
    }
}

fn parsed(text: &str) -> Value {
    json::parse_clean(text).unwrap_or(Value::Null)
}

fn opt(value: &Option<String>) -> Value {
    value.as_ref().map(Value::str).unwrap_or(Value::Null)
}

fn visibility(repo: &ConnectorRepo) -> &'static str {
    if repo.is_public {
        "public"
    } else {
        "private"
    }
}

/// The members every view of a repo starts with.
fn repo_heading(repo: &ConnectorRepo) -> [(&'static str, Value); 5] {
    [
        ("id", Value::str(&repo.id)),
        ("slug", Value::str(&repo.slug)),
        ("name", Value::str(&repo.name)),
        ("description", opt(&repo.description)),
        ("tags", parsed(&repo.tags)),
    ]
}

fn repo_json(repo: &ConnectorRepo) -> Value {
    object(repo_heading(repo).into_iter().chain([
        ("readme", opt(&repo.readme)),
        ("type", Value::str("connector")),
        ("isPublic", Value::Bool(repo.is_public)),
        ("scope", Value::str(&repo.scope)),
        ("visibility", Value::str(visibility(repo))),
        ("headCommitId", opt(&repo.head_commit_id)),
        ("clonedFrom", repo.cloned_from.as_deref().map(parsed).unwrap_or(Value::Null)),
        ("createdAt", Value::str(&repo.created_at)),
        ("updatedAt", Value::str(&repo.updated_at)),
    ]))
}

fn commit_json(commit: &ConnectorCommit) -> Value {
    object([
        ("id", Value::str(&commit.id)),
        ("commitHash", Value::str(&commit.commit_hash)),
        ("parentCommitHash", opt(&commit.parent_hash)),
        ("message", Value::str(&commit.message)),
        ("source", Value::str(&commit.source)),
        ("labels", parsed(&commit.labels)),
        ("metadata", parsed(&commit.metadata)),
        ("createdAt", Value::str(&commit.created_at)),
    ])
}

/// A commit's files as the template map.
fn files_of(commit: &ConnectorCommit) -> Result<TemplateFiles, HubError> {
    let Some(Value::Object(map)) = json::parse_clean(&commit.files) else {
        return Err(HubError::Storage(format!("commit {} holds no file map", commit.id)));
    };
    Ok(map.into_iter().filter_map(|(path, content)| content.as_str().map(|text| (path, text.as_bytes().to_vec()))).collect())
}

fn files_text(files: &TemplateFiles) -> String {
    let map: Map = files.iter().map(|(path, bytes)| (path.clone(), Value::Str(String::from_utf8_lossy(bytes).into_owned()))).collect();
    json::canonical(&Value::Object(map))
}

async fn own_repo(hub: &Hub, project: &str, slug: &str) -> Result<ConnectorRepo, HubError> {
    check_connector_slug(slug)?;
    hub.meta.connector_repo(project, slug).await?.ok_or_else(|| {
        HubError::NotFound(format!("no connector '{slug}' in this project: publish it first (`gateway worlds connector publish`)"))
    })
}

async fn list(hub: &Hub, project: &str, query: &BTreeMap<String, String>) -> Answer {
    let number = |key: &str, default: i64, max: i64| -> Result<i64, HubError> {
        match query.get(key) {
            None => Ok(default),
            Some(text) => match text.parse::<i64>() {
                Ok(n) if (0..=max).contains(&n) => Ok(n),
                _ => Err(HubError::BadRequest(format!("'{key}' must be an integer from 0 to {max}"))),
            },
        }
    };
    let limit = number("limit", 100, 500)?;
    let offset = number("offset", 0, i64::MAX)?;
    let is_public = match query.get("is_public").map(String::as_str) {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => return Err(HubError::BadRequest(format!("'is_public' must be true or false, not '{other}'"))),
    };
    let listing = RepoListing { query: query.get("query").cloned(), is_public, limit, offset };
    let (repos, total) = hub.meta.connector_repos(project, &listing).await?;
    ok(object([
        ("repos", Value::Array(repos.iter().map(repo_json).collect())),
        ("total", Value::Int(total)),
        ("limit", Value::Int(limit)),
        ("offset", Value::Int(offset)),
    ]))
}

async fn exists(hub: &Hub, project: &str, slug: &str) -> Answer {
    check_connector_slug(slug)?;
    let found = hub.meta.connector_repo(project, slug).await?.is_some();
    ok(object([("exists", Value::Bool(found))]))
}

async fn pull(hub: &Hub, project: &str, slug: &str, version: Option<&str>) -> Answer {
    let repo = own_repo(hub, project, slug).await?;
    let commit = hub.meta.connector_commit(&repo.id, version).await?.ok_or_else(|| match version {
        Some(version) => HubError::NotFound(format!("connector '{slug}' has no label or commit '{version}'")),
        None => HubError::NotFound(format!("connector '{slug}' has no commit yet")),
    })?;
    let files: Map = files_of(&commit)?
        .into_iter()
        .map(|(path, bytes)| {
            let entry = object([("type", Value::str("file")), ("content", Value::Str(String::from_utf8_lossy(&bytes).into_owned()))]);
            (path, entry)
        })
        .collect();
    ok(object([("repo", repo_json(&repo)), ("commit", commit_json(&commit)), ("files", Value::Object(files))]))
}

async fn delete(hub: &Hub, project: &str, slug: &str) -> Answer {
    let repo = own_repo(hub, project, slug).await?;
    if !hub.meta.delete_connector(project, slug).await? {
        return Err(HubError::missing("connector", slug));
    }
    ok(object([("deleted", Value::Bool(true)), ("id", Value::str(&repo.id)), ("slug", Value::str(slug))]))
}

/// What the hub shows of a template: vendor, auth, entity and operation counts, digest.
/// The vendor is connector.toml's `[connector] slug`, else provenance.json's `connector`,
/// else the domain id's last part; operations are connector.toml's, else the world's tools.
fn metadata(files: &TemplateFiles, contract: &gateway_world::compiler::Contract, spec: Option<&gateway_connector::spec::Spec>) -> Value {
    let provenance = files
        .get("provenance.json")
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(json::parse_clean)
        .and_then(|v| v.get("connector").and_then(Value::as_str).map(str::to_string));
    let domain = contract.target().get("id").and_then(Value::as_str).and_then(|id| id.rsplit(':').next()).map(str::to_string);
    let vendor = spec.map(|s| s.slug.clone()).or(provenance).or(domain);
    let tools = contract.metadata.get("tools").and_then(Value::as_object).map(|t| t.len());
    let operations = spec.map(|s| s.operations.len()).or(tools).unwrap_or(0);
    object([
        ("vendor", vendor.map(Value::Str).unwrap_or(Value::Null)),
        ("auth", spec.map(|s| Value::str(&s.scheme)).unwrap_or(Value::Null)),
        ("entityCount", Value::Int(contract.entities.len() as i64)),
        ("operationCount", Value::Int(operations as i64)),
        ("digest", Value::Str(scaffold::template_digest(files))),
    ])
}

/// Make a world of `files` in a scratch directory (the engine's `schema init`), and
/// parse its connector.toml with the serving settings: the metadata, or the reason.
async fn prove(slug: &str, files: TemplateFiles) -> Result<(TemplateFiles, Value), HubError> {
    let slug = slug.to_string();
    tokio::task::spawn_blocking(move || {
        let scratch = tempfile::tempdir().map_err(|e| HubError::Storage(format!("scratch directory: {e}")))?;
        let world = scratch.path().join("world");
        let refused = |detail: String| HubError::BadRequest(format!("the template does not compile into a world: {detail}"));
        let contract = scaffold::init_from_files(&world, &files, &slug, None).map_err(|e| refused(explain_base(e.to_string())))?;
        let spec = if files.contains_key("connector.toml") {
            let spec = gateway_connector::spec::load_spec(&world).map_err(|e| refused(format!("connector.toml: {e}")))?;
            gateway_serve::settings::load_api_settings(&world, &spec).map_err(|e| refused(format!("connector.toml: {e}")))?;
            Some(spec)
        } else {
            None
        };
        let meta = metadata(&files, &contract, spec.as_ref());
        Ok((files, meta))
    })
    .await?
}

/// An engine refusal, with what to do when the template references a definition the
/// dialect's `base.json` lacks: a world directory's `schema/base.json` is generated, so
/// publishing leaves it behind (the original's client does, ours too) and the world
/// gets the dialect's base — an authored one's definitions are lost. They belong in a
/// supporting schema file of their own, which the template carries.
fn explain_base(detail: String) -> String {
    if !detail.contains("Unresolved reference base.json#") {
        return detail;
    }
    let defs = json::parse_clean(&String::from_utf8_lossy(scaffold::dialect_base()))
        .and_then(|base| base.get("$defs").and_then(Value::as_object).map(|defs| defs.keys().cloned().collect::<Vec<_>>().join(", ")))
        .unwrap_or_default();
    format!(
        "{detail} (schema/base.json is generated: a template never carries it, and the world made of it gets the dialect's base, \
         which defines {defs}; move your own definitions into a schema file of your own, e.g. schema/types.json with its own $id, \
         and reference them as types.json#/$defs/<name>)"
    )
}

fn commit_hash(parent: Option<&str>, digest: &str, message: &str, at: &str) -> String {
    let mut hash = Sha256::new();
    for part in [parent.unwrap_or(""), digest, message, at] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hex::encode(hash.finalize())
}

fn stale(slug: &str, parent: &str, head: Option<&ConnectorCommit>) -> Answer {
    let message = match head {
        Some(head) => format!(
            "parent_commit {parent} is not the head of connector '{slug}' (the head is {}): pull, merge your changes, and push again",
            head.commit_hash
        ),
        None => format!("parent_commit {parent} names no commit of connector '{slug}', which has none: push without a parent"),
    };
    let latest = head
        .map(|h| {
            object([
                ("id", Value::str(&h.id)),
                ("commitHash", Value::str(&h.commit_hash)),
                ("message", Value::str(&h.message)),
                ("createdAt", Value::str(&h.created_at)),
            ])
        })
        .unwrap_or(Value::Null);
    Ok((409, object([("error", Value::str("conflict")), ("message", Value::Str(message)), ("latestCommit", latest)])))
}

fn string_list(body: &Map, key: &str) -> Result<Option<Vec<String>>, HubError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Str(s) if !s.is_empty() && s.len() <= 100 => Ok(s.clone()),
                _ => Err(HubError::BadRequest(format!("'{key}' must be a list of non-empty strings of at most 100 characters"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(HubError::BadRequest(format!("'{key}' must be a list of strings"))),
    }
}

fn scope_of(body: &Map) -> Result<String, HubError> {
    match opt_str(body, "scope")?.as_deref() {
        None => Ok("org".into()),
        Some(scope @ ("org" | "project")) => Ok(scope.into()),
        Some(other) => Err(HubError::BadRequest(format!("'scope' must be 'org' or 'project', not '{other}'"))),
    }
}

fn answer_commit(repo: &ConnectorRepo, commit: &ConnectorCommit, base_url: &str, created: bool) -> Value {
    object([
        ("url", Value::Str(format!("{base_url}{CONNECTORS}/{}?version={}", quote_segment(&repo.slug), commit.commit_hash))),
        ("status", Value::str("committed")),
        ("repoId", Value::str(&repo.id)),
        ("slug", Value::str(&repo.slug)),
        ("commitId", Value::str(&commit.id)),
        ("commitHash", Value::str(&commit.commit_hash)),
        ("created", Value::Bool(created)),
        ("metadata", parsed(&commit.metadata)),
    ])
}

async fn push(hub: &Hub, project: &str, slug: &str, body: &Map, base_url: &str) -> Answer {
    check_connector_slug(slug)?;
    let Some(Value::Object(delta)) = body.get("files") else {
        return Err(HubError::BadRequest("'files' is required: an object of template path → {\"content\": text} or null".into()));
    };
    let message = opt_str(body, "message")?.filter(|m| !m.trim().is_empty()).unwrap_or_else(|| format!("publish {slug}"));
    let parent = opt_str(body, "parent_commit")?;
    let description = opt_str(body, "description")?;
    let readme = opt_str(body, "readme")?;
    let tags = string_list(body, "tags")?;
    let is_public = opt_bool(body, "is_public")?;
    let scope = scope_of(body)?;
    let source = opt_str(body, "source")?.unwrap_or_else(|| "api".into());

    let existing = hub.meta.connector_repo(project, slug).await?;
    let head = match &existing {
        Some(repo) => hub.meta.connector_commit(&repo.id, None).await?,
        None => None,
    };
    if let Some(parent) = &parent {
        let matches = head.as_ref().is_some_and(|h| &h.commit_hash == parent || &h.id == parent);
        if !matches {
            return stale(slug, parent, head.as_ref());
        }
    }
    let mut files = match &head {
        Some(head) => files_of(head)?,
        None => TemplateFiles::new(),
    };
    apply_file_delta(&mut files, delta)?;
    let unchanged = head.as_ref().is_some_and(|h| files_of(h).map(|f| f == files).unwrap_or(false));
    if let (true, Some(repo), Some(head)) = (unchanged && tags.is_none(), &existing, &head) {
        // Nothing to commit: the head already is this template.
        return ok(answer_commit(repo, head, base_url, false));
    }
    let (files, meta) = prove(slug, files).await?;
    let now = now_iso();
    let digest = meta.get("digest").and_then(Value::as_str).unwrap_or_default().to_string();
    let parent_hash = head.as_ref().map(|h| h.commit_hash.clone());
    let commit = ConnectorCommit {
        id: new_id("ccm_"),
        repo_id: String::new(),
        commit_hash: commit_hash(parent_hash.as_deref(), &digest, &message, &now),
        parent_hash,
        message,
        source,
        labels: json::canonical(&Value::Array(tags.clone().unwrap_or_default().into_iter().map(Value::Str).collect())),
        files: files_text(&files),
        metadata: json::canonical(&meta),
        created_at: now.clone(),
    };
    let tags_text = |tags: Vec<String>| json::canonical(&Value::Array(tags.into_iter().map(Value::Str).collect()));
    let repo = match existing.clone() {
        Some(repo) => ConnectorRepo {
            description: description.or(repo.description.clone()),
            readme: readme.or(repo.readme.clone()),
            tags: tags.map(tags_text).unwrap_or(repo.tags.clone()),
            is_public,
            scope,
            updated_at: now.clone(),
            ..repo
        },
        None => ConnectorRepo {
            id: new_id("conn_"),
            project_id: project.to_string(),
            slug: slug.to_string(),
            name: slug.to_string(),
            description,
            tags: tags_text(tags.unwrap_or_default()),
            readme,
            is_public,
            scope,
            head_commit_id: None,
            cloned_from: None,
            created_at: now.clone(),
            updated_at: now,
        },
    };
    let new = NewCommit {
        repo: repo.clone(),
        create: existing.is_none(),
        expected_head: existing.as_ref().and_then(|r| r.head_commit_id.clone()),
        commit: ConnectorCommit { repo_id: repo.id.clone(), ..commit },
    };
    let commit = new.commit.clone();
    match hub.meta.commit_connector(new).await.map_err(HubError::from) {
        Ok(()) => ok(answer_commit(&repo, &commit, base_url, existing.is_none())),
        Err(HubError::Conflict(_)) => {
            // Another push landed first: answer as a stale parent, with the new head.
            let latest = match hub.meta.connector_repo(project, slug).await? {
                Some(repo) => hub.meta.connector_commit(&repo.id, None).await?,
                None => None,
            };
            let parent = parent.or(head.map(|h| h.commit_hash)).unwrap_or_default();
            stale(slug, &parent, latest.as_ref())
        }
        Err(error) => Err(error),
    }
}

/// A push's `files` delta applied to the head's template (a path → `{"content"}`
/// writes it, → null removes it), within the template's caps.
fn apply_file_delta(files: &mut TemplateFiles, delta: &Map) -> Result<(), HubError> {
    for (path, entry) in delta {
        let safe = !path.is_empty()
            && path.len() <= 500
            && !path.starts_with('/')
            && !path.contains('\\')
            && path.split('/').all(|part| !part.is_empty() && part != "." && part != "..");
        if !safe {
            return Err(HubError::BadRequest(format!("file path '{path}' must be relative and stay inside the template")));
        }
        match entry {
            Value::Null => {
                files.remove(path);
            }
            Value::Object(entry) => match entry.get("content") {
                Some(Value::Str(text)) => {
                    files.insert(path.clone(), text.as_bytes().to_vec());
                }
                _ => return Err(HubError::BadRequest(format!("files['{path}'] must be {{\"content\": <text>}} or null"))),
            },
            _ => return Err(HubError::BadRequest(format!("files['{path}'] must be {{\"content\": <text>}} or null"))),
        }
    }
    if files.len() > MAX_FILES {
        return Err(HubError::BadRequest(format!("the template holds {} files; at most {MAX_FILES} are taken", files.len())));
    }
    let size: usize = files.values().map(Vec::len).sum();
    if size > MAX_TEMPLATE_BYTES {
        return Err(HubError::TooLarge(format!("the template holds {size} bytes; at most {MAX_TEMPLATE_BYTES} are taken")));
    }
    Ok(())
}

fn hub_row_json(row: &HubRow, project: &str) -> Value {
    let repo = &row.repo;
    let head = row.head.as_ref();
    object(repo_heading(repo).into_iter().chain([
        ("orgName", Value::str(&row.org_name)),
        ("isOwn", Value::Bool(repo.project_id == project)),
        ("visibility", Value::str(visibility(repo))),
        ("scope", Value::str(&repo.scope)),
        ("headCommitId", opt(&repo.head_commit_id)),
        ("commitHash", head.map(|h| Value::str(&h.commit_hash)).unwrap_or(Value::Null)),
        ("clonedFrom", repo.cloned_from.as_deref().map(parsed).unwrap_or(Value::Null)),
        ("updatedAt", Value::str(&repo.updated_at)),
        ("metadata", head.map(|h| parsed(&h.metadata)).unwrap_or_else(|| Value::Object(Map::default()))),
    ]))
}

async fn hub_listing(hub: &Hub, project: &str, query: Option<&str>) -> Answer {
    let rows = hub.meta.connector_hub(project, query).await?;
    ok(object([("connectors", Value::Array(rows.iter().map(|row| hub_row_json(row, project)).collect()))]))
}

async fn clone(hub: &Hub, project: &str, body: &Map) -> Answer {
    let source_id = opt_str(body, "sourceRepoId")?.filter(|s| !s.is_empty()).ok_or_else(|| {
        HubError::BadRequest("'sourceRepoId' is required: a hub connector's id (`gateway worlds connector list --hub`)".into())
    })?;
    let scope = scope_of(body)?;
    let missing = || HubError::NotFound(format!("no connector '{source_id}' in the hub: it is neither this project's nor published"));
    let (source, org_name) = hub.meta.connector_repo_by_id(&source_id).await?.ok_or_else(missing)?;
    if source.project_id != project && !source.is_public {
        return Err(missing());
    }
    let slug = opt_str(body, "slug")?.filter(|s| !s.is_empty()).unwrap_or_else(|| source.slug.clone());
    check_connector_slug(&slug)?;
    let name = opt_str(body, "name")?.filter(|s| !s.is_empty()).unwrap_or_else(|| source.name.clone());
    if hub.meta.connector_repo(project, &slug).await?.is_some() {
        return Err(HubError::Conflict(format!("this project already has a connector '{slug}': clone under another slug (`--slug`)")));
    }
    let head = hub
        .meta
        .connector_commit(&source.id, None)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("connector '{source_id}' has no commit yet")))?;
    let now = now_iso();
    let provenance = object([
        ("repoId", Value::str(&source.id)),
        ("slug", Value::str(&source.slug)),
        ("orgName", Value::str(&org_name)),
        ("commitId", Value::str(&head.id)),
        ("commitHash", Value::str(&head.commit_hash)),
    ]);
    let message = format!("clone {org_name}/{}@{}", source.slug, &head.commit_hash[..12.min(head.commit_hash.len())]);
    let digest = parsed(&head.metadata).get("digest").and_then(Value::as_str).unwrap_or_default().to_string();
    let repo = ConnectorRepo {
        id: new_id("conn_"),
        project_id: project.to_string(),
        slug: slug.clone(),
        name,
        description: source.description.clone(),
        tags: source.tags.clone(),
        readme: source.readme.clone(),
        is_public: false,
        scope,
        head_commit_id: None,
        cloned_from: Some(json::canonical(&provenance)),
        created_at: now.clone(),
        updated_at: now.clone(),
    };
    let commit = ConnectorCommit {
        id: new_id("ccm_"),
        repo_id: repo.id.clone(),
        commit_hash: commit_hash(None, &digest, &message, &now),
        parent_hash: None,
        message,
        source: "clone".into(),
        labels: "[]".into(),
        files: head.files.clone(),
        metadata: head.metadata.clone(),
        created_at: now,
    };
    hub.meta.commit_connector(NewCommit { repo: repo.clone(), create: true, expected_head: None, commit: commit.clone() }).await?;
    ok(object([
        ("id", Value::str(&repo.id)),
        ("slug", Value::str(&repo.slug)),
        ("name", Value::str(&repo.name)),
        ("commitId", Value::str(&commit.id)),
        ("commitHash", Value::str(&commit.commit_hash)),
        ("clonedFrom", provenance),
    ]))
}

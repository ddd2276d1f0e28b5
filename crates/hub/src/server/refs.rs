//! Branches and tags, the log, forks and proposals.

use super::access::{check_ref_name, check_slug, container, own_version};
use super::request::{opt_str, opt_value, req_str, str_or_null};
use super::response::{ok, Answer};
use super::state::Hub;
use super::versions::{resolve_ref, version_summary};
use crate::error::HubError;
use crate::store::{Container, Proposal, Ref};
use crate::util::{new_id, now_iso};
use gateway_world::json::{self, object, Map, Value};
use std::collections::BTreeSet;

pub(super) async fn list_refs(hub: &Hub, project: &str, slug: Option<String>) -> Answer {
    let container = container(hub, project, slug).await?;
    let mut out = Vec::new();
    for r in hub.meta.refs(&container.id).await? {
        let v = hub.meta.version(&r.version_id).await?;
        out.push(object([
            ("kind", Value::str(r.kind)),
            ("name", Value::str(r.name)),
            ("versionId", Value::str(r.version_id)),
            ("contentHash", v.as_ref().map(|v| Value::str(v.content_hash.clone())).unwrap_or(Value::Null)),
            ("semanticVersion", v.as_ref().map(|v| str_or_null(&v.semantic_version)).unwrap_or(Value::Null)),
            ("updatedAt", Value::str(r.updated_at)),
        ]));
    }
    ok(object([("slug", Value::str(container.slug)), ("refs", Value::Array(out))]))
}

pub(super) async fn create_ref(hub: &Hub, project: &str, body: &Map) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let name = req_str(body, "name")?;
    check_ref_name(&name)?;
    let kind = opt_str(body, "kind")?.unwrap_or_else(|| "branch".into());
    if kind != "branch" && kind != "tag" {
        return Err(HubError::BadRequest("'kind' must be 'branch' or 'tag'".into()));
    }
    let version = match opt_str(body, "versionId")? {
        Some(id) => {
            let (owner, v) = own_version(hub, project, &id).await?;
            if owner.id != container.id {
                return Err(HubError::NotFound(format!("no version '{id}' in '{}'", container.slug)));
            }
            if v.state != "READY" {
                return Err(HubError::BadRequest(format!("version {id} is not READY")));
            }
            v
        }
        None => {
            let main = hub.meta.get_ref(&container.id, "main").await?.ok_or_else(|| {
                HubError::NotFound(format!("'{}' has no main branch to start from: pass a version id (--from/--version)", container.slug))
            })?;
            hub.meta.version(&main.version_id).await?.ok_or_else(|| HubError::Storage("main points at a missing version".into()))?
        }
    };
    let now = now_iso();
    hub.meta
        .create_ref(Ref {
            container_id: container.id.clone(),
            kind: kind.clone(),
            name: name.clone(),
            version_id: version.id.clone(),
            created_at: now.clone(),
            updated_at: now,
        })
        .await?;
    ok(object([
        ("slug", Value::str(container.slug)),
        ("kind", Value::str(kind)),
        ("name", Value::str(name)),
        ("versionId", Value::str(version.id)),
        ("contentHash", Value::str(version.content_hash)),
        ("semanticVersion", str_or_null(&version.semantic_version)),
    ]))
}

pub(super) async fn log(hub: &Hub, project: &str, slug: Option<String>, branch: Option<String>, limit: Option<String>) -> Answer {
    let container = container(hub, project, slug).await?;
    let branch = branch.filter(|b| !b.is_empty()).unwrap_or_else(|| "main".into());
    let limit: usize = match limit {
        None => 50,
        Some(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| HubError::BadRequest("'limit' must be a positive integer".into()))?
            .min(1000),
    };
    let tip = hub
        .meta
        .get_ref(&container.id, &branch)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("'{}' has no branch or tag '{branch}'", container.slug)))?;
    let mut versions = Vec::new();
    let mut seen = BTreeSet::new();
    let mut next = Some(tip.version_id.clone());
    while let Some(id) = next {
        if versions.len() >= limit || !seen.insert(id.clone()) {
            break;
        }
        let Some(v) = hub.meta.version(&id).await? else { break };
        if v.container_id != container.id {
            break;
        }
        next = v.forked_from_version_id.clone();
        versions.push(object(version_summary(&v)));
    }
    ok(object([
        ("slug", Value::str(container.slug)),
        ("branch", Value::str(branch)),
        ("tipVersionId", Value::str(tip.version_id)),
        ("versions", Value::Array(versions)),
    ]))
}

pub(super) async fn fork(hub: &Hub, project: &str, body: &Map) -> Answer {
    let slug = req_str(body, "slug")?;
    if slug.contains('@') {
        return Err(HubError::BadRequest("fork a container head: omit the @version suffix".into()));
    }
    let source = container(hub, project, Some(slug.clone())).await?;
    let target = opt_str(body, "targetSlug")?.filter(|t| !t.is_empty()).unwrap_or_else(|| format!("{slug}-fork"));
    check_slug(&target)?;
    let (head, _) = resolve_ref(hub, &source, "latest").await?;
    let new = Container {
        id: new_id("cnt_"),
        project_id: project.to_string(),
        slug: target,
        name: source.name.clone(),
        description: source.description.clone(),
        tags: source.tags.clone(),
        visibility: source.visibility.clone(),
        forked_from_version_id: Some(head.id.clone()),
        created_at: now_iso(),
    };
    let (created, version) = hub.meta.fork(new, &head).await?;
    ok(object([
        ("containerId", Value::str(created.id)),
        ("slug", Value::str(created.slug)),
        ("versionId", Value::str(version.id)),
        ("contentHash", Value::str(version.content_hash)),
        ("branch", Value::str("main")),
        ("forkedFromSlug", Value::str(source.slug)),
        ("forkedFromVersionId", Value::str(head.id)),
    ]))
}

// ------------------------------------------------------------------ proposals

pub(super) async fn create_proposal(hub: &Hub, project: &str, body: &Map) -> Answer {
    let container = container(hub, project, opt_str(body, "slug")?).await?;
    let title = req_str(body, "title")?;
    if title.chars().count() > 300 {
        return Err(HubError::BadRequest("'title' is longer than 300 characters".into()));
    }
    let reason = opt_str(body, "changeReason")?.unwrap_or_default();
    let base = req_str(body, "baseVersionId")?;
    let (owner, _) = own_version(hub, project, &base).await?;
    if owner.id != container.id {
        return Err(HubError::NotFound(format!("no version '{base}' in '{}'", container.slug)));
    }
    let target = opt_str(body, "targetBranch")?.unwrap_or_else(|| "main".into());
    check_ref_name(&target)?;
    let source_branch = opt_str(body, "sourceBranch")?;
    let Some(Value::Array(changes)) = body.get("changes") else {
        return Err(HubError::BadRequest("'changes' must be a list".into()));
    };
    if changes.is_empty() {
        return Err(HubError::BadRequest("'changes' is empty: nothing to propose".into()));
    }
    for change in changes {
        let path = change.get("path").and_then(Value::as_str).ok_or_else(|| HubError::BadRequest("every change needs a 'path'".into()))?;
        gateway_bundle::extract::check_member_path(path).map_err(|_| HubError::BadRequest(format!("unsafe change path '{path}'")))?;
        match change.get("action").and_then(Value::as_str) {
            Some("write") if change.get("newContent").and_then(Value::as_str).is_some() => {}
            Some("delete") => {}
            _ => {
                return Err(HubError::BadRequest(format!("change to '{path}': action must be 'write' (with newContent text) or 'delete'")))
            }
        }
    }
    let proposal = Proposal {
        id: new_id("prop_"),
        container_id: container.id.clone(),
        title,
        change_reason: reason,
        base_version_id: base,
        target_branch: target,
        source_branch,
        changes: json::canonical(&Value::Array(changes.clone())),
        status: "OPEN".into(),
        created_at: now_iso(),
    };
    hub.meta.add_proposal(proposal.clone()).await?;
    ok(proposal_json(&container, &proposal, false))
}

pub(super) fn proposal_json(container: &Container, p: &Proposal, with_changes: bool) -> Value {
    let changes = opt_value(&p.changes);
    let count = changes.as_array().map(Vec::len).unwrap_or(0);
    let mut pairs = vec![
        ("proposalId", Value::str(p.id.clone())),
        ("status", Value::str(p.status.clone())),
        ("slug", Value::str(container.slug.clone())),
        ("title", Value::str(p.title.clone())),
        ("changeReason", Value::str(p.change_reason.clone())),
        ("baseVersionId", Value::str(p.base_version_id.clone())),
        ("targetBranch", Value::str(p.target_branch.clone())),
        ("sourceBranch", str_or_null(&p.source_branch)),
        ("changeCount", Value::Int(count as i64)),
        ("createdAt", Value::str(p.created_at.clone())),
    ];
    if with_changes {
        pairs.push(("changes", changes));
    }
    object(pairs)
}

pub(super) async fn list_proposals(hub: &Hub, project: &str, slug: Option<String>) -> Answer {
    let container = container(hub, project, slug).await?;
    let rows = hub.meta.proposals(&container.id).await?;
    let list = rows.iter().map(|p| proposal_json(&container, p, true)).collect();
    ok(object([("slug", Value::str(container.slug.clone())), ("proposals", Value::Array(list))]))
}

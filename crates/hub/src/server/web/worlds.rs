//! The world pages: the project's worlds, one world's branches, tags and versions, a
//! version's files and one file's text, and the diff between two versions (files by
//! their manifest hashes, seed rows through [`crate::seed_diff`]). It writes nothing and
//! holds no diff logic of its own: the folding and comparing of rows are `seed_diff`'s.

use super::super::request::PageSize;
use super::super::state::Hub;
use super::super::versions::manifest_map;
use super::bundle::{self, members};
use super::page::{json_text, page, project_world, state_pill, version_label, world_url, world_version};
use crate::error::HubError;
use crate::seed_diff::{self, EntityDiff, PrimaryKeys, WORLD_ROOTS};
use crate::store::{Ref, Version};
use gateway_common::url::quote_segment;
use gateway_world::json::{self, Value};
use maud::{html, Markup};
use std::collections::BTreeMap;

/// Most worlds listed (a project with more is a rare thing; the page says so).
const MAX_WORLDS: i64 = 500;
/// Versions on a world's page.
const MAX_VERSIONS: i64 = 200;
/// Largest file shown as text.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Largest seed file read for a diff.
const MAX_SEED_BYTES: u64 = 256 * 1024 * 1024;
/// Rows of each kind shown per entity by default, and at most.
const ROWS: PageSize = PageSize { default: 100, max: 10_000 };

/// `/ui/`: the project's worlds.
pub(super) async fn list(hub: &Hub, project: &str) -> Result<Markup, HubError> {
    let worlds = hub.meta.project_containers(project, None, MAX_WORLDS).await?;
    Ok(page(
        "Worlds",
        &[],
        html! {
            @if worlds.is_empty() {
                p.muted { "No world yet: push one with " code { "gateway bench push PATH" } "." }
            } @else {
                table {
                    tr { th { "World" } th { "Name" } th { "Description" } th { "Visibility" } th { "Created" } th {} }
                    @for w in &worlds {
                        tr {
                            td { a href=(world_url(&w.slug)) { (w.slug) } }
                            td { (w.name) }
                            td.muted { (w.description.clone().unwrap_or_default()) }
                            td { (w.visibility) }
                            td.muted { (w.created_at) }
                            td { a href={ (world_url(&w.slug)) "/evaluations" } { "evaluations" } }
                        }
                    }
                }
                @if worlds.len() as i64 == MAX_WORLDS { p.muted { "Showing the first " (MAX_WORLDS) " worlds by slug." } }
            }
        },
    ))
}

/// `/ui/w/{slug}`: branches, tags and versions of a world.
pub(super) async fn world(hub: &Hub, project: &str, slug: &str) -> Result<Markup, HubError> {
    let container = project_world(hub, project, slug).await?;
    let versions = hub.meta.container_versions(&container.id, MAX_VERSIONS).await?;
    let refs = hub.meta.refs(&container.id).await?;
    let evaluations = hub.meta.evaluation_count(&container.id).await?;
    let by_id: BTreeMap<&str, &Version> = versions.iter().map(|v| (v.id.as_str(), v)).collect();
    let url = world_url(&container.slug);
    let label = |id: &str| by_id.get(id).map(|v| version_label(v)).unwrap_or_else(|| id.to_string());
    let ready: Vec<&Version> = versions.iter().filter(|v| v.state == "READY").collect();
    Ok(page(
        &container.slug,
        &[("Worlds", "/ui/".into())],
        html! {
            @if let Some(description) = &container.description { p { (description) } }
            div.cards {
                div.card { b { (versions.len()) } "versions" }
                div.card { b { (refs.iter().filter(|r| r.kind == "branch").count()) } "branches" }
                div.card { b { (refs.iter().filter(|r| r.kind == "tag").count()) } "tags" }
                div.card { b { a href={ (url) "/evaluations" } { (evaluations) } } "evaluations" }
            }
            @for kind in ["branch", "tag"] {
                h2 { @if kind == "branch" { "Branches" } @else { "Tags" } }
                @let these: Vec<&Ref> = refs.iter().filter(|r| r.kind == kind).collect();
                @if these.is_empty() { p.muted { "None." } } @else {
                    table {
                        tr { th { "Name" } th { "Version" } th { "Updated" } }
                        @for r in these {
                            tr {
                                td { code { (r.name) } }
                                td { a href={ (url) "/v/" (r.version_id) } { (label(&r.version_id)) } }
                                td.muted { (r.updated_at) }
                            }
                        }
                    }
                }
            }
            h2 { "Versions" }
            @if ready.len() >= 2 {
                form.inline method="get" action={ (url) "/diff" } {
                    label { "Compare " select name="base" { @for v in &ready[1..] { option value=(v.id) { (version_label(v)) } } } }
                    label { " with " select name="head" { @for v in &ready { option value=(v.id) { (version_label(v)) } } } }
                    button type="submit" { "Diff" }
                }
                p {}
            }
            table {
                tr { th { "Version" } th { "State" } th { "Content hash" } th { "Author" } th { "Change" } th { "Created" } th {} }
                @for (i, v) in versions.iter().enumerate() {
                    tr {
                        td { a href={ (url) "/v/" (v.id) } { (version_label(v)) } }
                        td { (state_pill(&v.state)) }
                        td { code { (v.content_hash.chars().take(12).collect::<String>()) } }
                        td { (v.author.clone().unwrap_or_default()) }
                        td { (v.change_reason.clone().unwrap_or_default()) }
                        td.muted { (v.created_at) }
                        td {
                            @if let Some(previous) = versions.get(i + 1) {
                                a href={ (url) "/diff?base=" (previous.id) "&head=" (v.id) } { "diff with previous" }
                            }
                        }
                    }
                }
            }
            @if versions.len() as i64 == MAX_VERSIONS { p.muted { "Showing the newest " (MAX_VERSIONS) " versions." } }
        },
    ))
}

/// A version's file manifest: `(path, size, sha256)` of its files, by path.
fn manifest(version: &Version) -> Vec<(String, Option<i64>, String)> {
    let mut out: Vec<(String, Option<i64>, String)> = match json::parse_clean(&version.file_manifest) {
        Some(Value::Array(items)) => items
            .iter()
            .filter(|item| !matches!(item.get("isDirectory"), Some(Value::Bool(true))))
            .filter_map(|item| {
                let path = item.get("path").and_then(Value::as_str)?.to_string();
                let size = match item.get("size") {
                    Some(Value::Int(n)) => Some(*n),
                    _ => None,
                };
                Some((path, size, item.get("sha256").and_then(Value::as_str).unwrap_or_default().to_string()))
            })
            .collect(),
        _ => Vec::new(),
    };
    out.sort();
    out
}

/// A file's URL: each path segment percent-encoded.
fn file_url(slug: &str, version: &str, path: &str) -> String {
    let encoded: Vec<String> = path.split('/').map(quote_segment).collect();
    format!("/ui/w/{slug}/v/{version}/f/{}", encoded.join("/"))
}

/// `/ui/w/{slug}/v/{version}`: the version's files.
pub(super) async fn files(hub: &Hub, project: &str, slug: &str, id: &str) -> Result<Markup, HubError> {
    let container = project_world(hub, project, slug).await?;
    let version = world_version(hub, project, &container, id).await?;
    let files = manifest(&version);
    let total: i64 = files.iter().filter_map(|f| f.1).sum();
    Ok(page(
        &format!("{} @ {}", container.slug, version_label(&version)),
        &[("Worlds", "/ui/".into()), (&container.slug, world_url(&container.slug))],
        html! {
            p {
                (state_pill(&version.state)) " "
                code { (version.content_hash) }
                @if let Some(reason) = &version.change_reason { " — " (reason) }
            }
            p.muted { (files.len()) " files, " (total) " bytes (the manifest lists the whole tree; the bundle holds the archived files)." }
            table {
                tr { th { "Path" } th.num { "Size" } th { "sha256" } }
                @for (path, size, sha) in &files {
                    tr {
                        td { a href=(file_url(&container.slug, &version.id, path)) { (path) } }
                        td.num { (size.map(|s| s.to_string()).unwrap_or_default()) }
                        td { code.muted { (sha.chars().take(12).collect::<String>()) } }
                    }
                }
            }
        },
    ))
}

/// `/ui/w/{slug}/v/{version}/f/{path}`: one file of the bundle, as text.
pub(super) async fn file(hub: &Hub, project: &str, slug: &str, id: &str, path: &str) -> Result<Markup, HubError> {
    let container = project_world(hub, project, slug).await?;
    let version = world_version(hub, project, &container, id).await?;
    let listed = manifest(&version).into_iter().any(|(p, _, _)| p == path);
    if !listed {
        return Err(HubError::NotFound(format!("no file '{path}' in this version")));
    }
    let wanted = path.to_string();
    let found = members(hub, &version, move |p| p == wanted, MAX_FILE_BYTES, Some(1)).await?;
    let label = version_label(&version);
    let crumbs = [
        ("Worlds", "/ui/".to_string()),
        (container.slug.as_str(), world_url(&container.slug)),
        (label.as_str(), format!("/ui/w/{}/v/{}", container.slug, version.id)),
    ];
    let body = match found.first() {
        None => {
            html! { div.msg { "This file is in the manifest but not in the bundle (it is ignored or a dotfile, so it was never archived)." } }
        }
        Some(member) => match std::str::from_utf8(&member.bytes) {
            // A cut may fall inside a character: the valid prefix is shown.
            Err(e) if member.truncated() && e.error_len().is_none() => {
                text_view(&String::from_utf8_lossy(&member.bytes[..e.valid_up_to()]), member)
            }
            Ok(text) if !text.contains('\0') => text_view(text, member),
            _ => html! { div.msg { "A binary file of " (member.size) " bytes: not shown." } },
        },
    };
    Ok(page(path, &crumbs, body))
}

fn text_view(text: &str, member: &bundle::Member) -> Markup {
    html! {
        p.muted { (member.size) " bytes" @if member.truncated() { " — the first " (member.bytes.len()) " shown" } }
        pre { (text) }
    }
}

/// Both versions' seed files and the primary keys their contracts name.
async fn seed_files(hub: &Hub, version: &Version) -> Result<(Vec<(String, String)>, PrimaryKeys, Option<String>), HubError> {
    let wanted = |p: &str| WORLD_ROOTS.iter().any(|root| p.strip_prefix(root).is_some_and(seed_diff::is_seed_member));
    let found = members(hub, version, wanted, MAX_SEED_BYTES, None).await?;
    // The world's root: the bundle's own, else an api bundle's `server/world/`.
    let root = WORLD_ROOTS
        .iter()
        .find(|root| {
            found.iter().any(|m| m.path.strip_prefix(*root).is_some_and(|rel| rel == "data/initial.json" || rel == "schema/world.json"))
        })
        .copied();
    let Some(root) = root else { return Ok((Vec::new(), PrimaryKeys::new(), None)) };
    let mut files = Vec::new();
    let (mut runtime, mut contract) = (None, None);
    for member in found {
        let Some(rel) = member.path.strip_prefix(root).map(str::to_string) else { continue };
        if member.truncated() {
            return Err(HubError::BadRequest(format!("{} is over {} bytes: too large to diff here", member.path, MAX_SEED_BYTES)));
        }
        let text = String::from_utf8(member.bytes).map_err(|_| HubError::BadRequest(format!("{} is not UTF-8 text", member.path)))?;
        match rel.as_str() {
            "schema/runtime.json" => runtime = Some(text),
            "schema/world.json" => contract = Some(text),
            _ => files.push((rel, text)),
        }
    }
    let keys = seed_diff::primary_keys(runtime.as_deref(), contract.as_deref());
    Ok((files, keys, Some(root.to_string())))
}

/// `/ui/w/{slug}/diff?base=&head=[&entity=&limit=]`: files and seed rows between two
/// versions (default: the newest and the one before it).
pub(super) async fn diff(hub: &Hub, project: &str, slug: &str, query: &BTreeMap<String, String>) -> Result<Markup, HubError> {
    let container = project_world(hub, project, slug).await?;
    let (base, head) = match (query.get("base").filter(|b| !b.is_empty()), query.get("head").filter(|h| !h.is_empty())) {
        (Some(base), Some(head)) => {
            (world_version(hub, project, &container, base).await?, world_version(hub, project, &container, head).await?)
        }
        _ => {
            let newest = hub.meta.container_versions(&container.id, 2).await?;
            match newest.as_slice() {
                [head, base] => (base.clone(), head.clone()),
                _ => return Err(HubError::BadRequest(format!("'{}' has fewer than two versions to compare", container.slug))),
            }
        }
    };
    let rows = ROWS.shown(query) as usize;
    let only = query.get("entity").filter(|e| !e.is_empty()).cloned();

    // Files, by the manifests' hashes.
    let (old, new) = (manifest_map(&base), manifest_map(&head));
    let added: Vec<&String> = new.keys().filter(|p| !old.contains_key(*p)).collect();
    let removed: Vec<&String> = old.keys().filter(|p| !new.contains_key(*p)).collect();
    let modified: Vec<&String> = new.iter().filter(|(p, h)| old.get(*p).is_some_and(|o| o != *h)).map(|(p, _)| p).collect();

    // Seed rows: both bundles read (concurrently), folded and compared off the async threads.
    let (base_seed, head_seed) = tokio::join!(seed_files(hub, &base), seed_files(hub, &head));
    let ((base_files, base_keys, base_root), (head_files, head_keys, head_root)) = (base_seed?, head_seed?);
    let seeded = base_root.is_some() || head_root.is_some();
    let (entities, problems) = tokio::task::spawn_blocking(move || {
        // The head's contract names the keys; entities only the base knows keep the base's.
        let mut keys = base_keys;
        keys.extend(head_keys);
        let base_state = seed_diff::seed_state(keys.clone(), base_files);
        let head_state = seed_diff::seed_state(keys, head_files);
        let problems: Vec<String> = base_state
            .problems
            .iter()
            .map(|p| format!("base: {p}"))
            .chain(head_state.problems.iter().map(|p| format!("head: {p}")))
            .collect();
        (seed_diff::diff(&base_state, &head_state), problems)
    })
    .await?;

    let url = world_url(&container.slug);
    let here = format!("{url}/diff?base={}&head={}", base.id, head.id);
    let file_list = |title: &str, paths: &[&String], version: &Version| {
        html! {
            @if !paths.is_empty() {
                h3 { (title) " (" (paths.len()) ")" }
                ul { @for p in paths { li { a href=(file_url(&container.slug, &version.id, p)) { code { (p) } } } } }
            }
        }
    };
    Ok(page(
        &format!("{} → {}", version_label(&base), version_label(&head)),
        &[("Worlds", "/ui/".into()), (&container.slug, url.clone())],
        html! {
            p.muted {
                "Base " a href={ (url) "/v/" (base.id) } { code { (base.content_hash.chars().take(12).collect::<String>()) } }
                ", head " a href={ (url) "/v/" (head.id) } { code { (head.content_hash.chars().take(12).collect::<String>()) } }
            }
            h2 { "Files" }
            @if added.is_empty() && removed.is_empty() && modified.is_empty() { p.muted { "No file differs." } }
            (file_list("Added", &added, &head))
            (file_list("Removed", &removed, &base))
            (file_list("Modified", &modified, &head))
            h2 { "Seed rows" }
            @if !seeded {
                p.muted { "Neither version is a schema world with seed data (" code { "data/initial.json" } ")." }
            } @else {
                @if !problems.is_empty() {
                    div.msg.error {
                        "Some mutations could not be folded:"
                        ul { @for p in &problems { li { (p) } } }
                    }
                }
                table {
                    tr { th { "Entity" } th { "Key" } th.num { "Added" } th.num { "Removed" } th.num { "Changed" } th.num { "Unchanged" } }
                    @for e in &entities {
                        tr {
                            td { a href={ (here) "&entity=" (quote_segment(&e.entity)) "#rows" } { (e.entity) } }
                            td { code { (e.key_fields.join(", ")) } }
                            td.num { (e.added.len()) } td.num { (e.removed.len()) } td.num { (e.changed.len()) } td.num { (e.unchanged) }
                        }
                    }
                }
                div #rows {
                    @for e in entities.iter().filter(|e| only.as_ref().is_none_or(|o| *o == e.entity)) {
                        @if !e.is_empty() { (entity_rows(e, rows, &format!("{here}&entity={}", quote_segment(&e.entity)))) }
                    }
                }
            }
        },
    ))
}

/// One entity's added, removed and changed rows, the first `rows` of each.
fn entity_rows(e: &EntityDiff, rows: usize, more: &str) -> Markup {
    let cut = |n: usize| n > rows;
    html! {
        h3 { (e.entity) }
        table {
            tr { th { "" } th { "Key" } th { "Field" } th { "Base" } th { "Head" } }
            @for (key, row) in e.added.iter().take(rows) {
                tr.added { td { "+" } td { code { (key) } } td.muted { "row" } td {} td { code { (json_text(&Value::Object(row.clone()), 2000)) } } }
            }
            @for (key, row) in e.removed.iter().take(rows) {
                tr.removed { td { "−" } td { code { (key) } } td.muted { "row" } td { code { (json_text(&Value::Object(row.clone()), 2000)) } } td {} }
            }
            @for changed in e.changed.iter().take(rows) {
                @for (i, f) in changed.fields.iter().enumerate() {
                    tr.changed {
                        td { @if i == 0 { "~" } }
                        td { @if i == 0 { code { (changed.key) } } }
                        td { code { (f.field) } }
                        td { code { (f.before.as_ref().map(|v| json_text(v, 1000)).unwrap_or_else(|| "(absent)".into())) } }
                        td { code { (f.after.as_ref().map(|v| json_text(v, 1000)).unwrap_or_else(|| "(absent)".into())) } }
                    }
                }
            }
        }
        @if cut(e.added.len()) || cut(e.removed.len()) || cut(e.changed.len()) {
            p.pager {
                "Showing the first " (rows) " of each kind. "
                a href={ (more) "&limit=" ((rows * 10).min(ROWS.max as usize)) "#rows" } { "Show more" }
            }
        }
    }
}

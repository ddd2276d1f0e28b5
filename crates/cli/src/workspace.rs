//! `gateway worlds connector publish|list|pull|clone` and `schema init --connector
//! workspace:<slug>`: the workspace-connector commands, printed as the original prints
//! them (refusals on stderr, exit 1; `list`'s table; `pull`'s file lines).

use crate::args::HubUrl;
use crate::exit::Status;
use crate::printer::{self, errln, outln};
use clap::Args;
use gateway_hub_client::connectors_client::{collect_template, ConnectorsClient, PushOptions};
use gateway_world::json::{dumps, object, DumpOptions, Value};
use gateway_world::scaffold::{self, TemplateFiles};
use gateway_world::Error;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// A connector template directory, or the world directory it was authored in.
    path: PathBuf,
    /// Connector slug (default: the directory name).
    #[arg(long)]
    slug: Option<String>,
    /// Commit message.
    #[arg(short = 'm', long)]
    message: Option<String>,
    /// One-line description shown in listings.
    #[arg(long)]
    description: Option<String>,
    /// Tag (repeatable); each also labels this commit for `pull --version`.
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Visible to the whole workspace, not only this project's members (on this hub:
    /// published to every project, which may then clone it).
    #[arg(long)]
    workspace_visible: bool,
    /// Own it in this project rather than the org.
    #[arg(long)]
    project_scope: bool,
    #[command(flatten)]
    host: HubUrl,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Every connector this organization can use, published ones included.
    #[arg(long)]
    hub: bool,
    /// Filter by slug, name or description.
    #[arg(long)]
    query: Option<String>,
    #[command(flatten)]
    host: HubUrl,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    /// Workspace connector slug.
    slug: String,
    /// New or empty directory (default: ./<slug>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A label or commit hash; the head by default.
    #[arg(long)]
    version: Option<String>,
    #[command(flatten)]
    host: HubUrl,
}

#[derive(Debug, Args)]
pub struct CloneArgs {
    /// A hub connector's slug or repo id.
    source: String,
    /// Name for the clone (default: the source's).
    #[arg(long)]
    name: Option<String>,
    /// Slug for the clone (default: the source's).
    #[arg(long)]
    slug: Option<String>,
    /// Own it in this project rather than the org.
    #[arg(long)]
    project_scope: bool,
    #[command(flatten)]
    host: HubUrl,
}

fn failed(message: impl std::fmt::Display) -> ExitCode {
    errln!("{message}");
    Status::FAILED.into()
}

fn client(host: Option<&str>) -> Result<ConnectorsClient, ExitCode> {
    ConnectorsClient::from_env(host).map_err(failed)
}

fn text(row: &Value, key: &str) -> String {
    match row.get(key) {
        Some(Value::Str(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => dumps(other, DumpOptions::CLI),
    }
}

/// Python's `str()` of a metadata member, `-` when absent (`str(meta.get(k, "-"))`).
fn shown(meta: Option<&Value>, key: &str) -> String {
    match meta.and_then(|m| m.get(key)) {
        None => "-".into(),
        Some(Value::Str(s)) => s.clone(),
        Some(Value::Null) => "None".into(),
        Some(Value::Bool(b)) => if *b { "True" } else { "False" }.into(),
        Some(other) => dumps(other, DumpOptions::CLI),
    }
}

/// `meta.get(k) or "-"`.
fn or_dash(meta: Option<&Value>, key: &str) -> String {
    match meta.and_then(|m| m.get(key)) {
        Some(Value::Str(s)) if !s.is_empty() => s.clone(),
        Some(value) if gateway_hub_client::client::truthy(value) => dumps(value, DumpOptions::CLI),
        _ => "-".into(),
    }
}

fn is_own(row: &Value) -> bool {
    row.get("isOwn").is_some_and(gateway_hub_client::client::truthy)
}

/// The original's `_table`: columns padded to their widest cell, two spaces apart,
/// trailing spaces trimmed.
fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    std::iter::once(header)
        .chain(rows.iter().map(Vec::as_slice))
        .map(|line| {
            let cells: Vec<String> =
                line.iter().zip(&widths).map(|(cell, width)| format!("{cell}{}", " ".repeat(width - cell.chars().count()))).collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn publish(args: PublishArgs) -> ExitCode {
    let gathered = match collect_template(&args.path) {
        Ok(gathered) => gathered,
        Err(error) => return failed(error),
    };
    let slug = args.slug.clone().unwrap_or_else(|| {
        let resolved = std::fs::canonicalize(&args.path).unwrap_or_else(|_| args.path.clone());
        resolved.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    });
    let client = match client(args.host.as_deref()) {
        Ok(client) => client,
        Err(code) => return code,
    };
    let mut files: BTreeMap<String, Option<String>> = gathered.files.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
    let outcome = (|| {
        let mut parent = None;
        if client.exists(&slug)? {
            let head = client.pull(&slug, None)?;
            for stale in head.files.keys().filter(|path| !gathered.files.contains_key(*path)) {
                files.insert(stale.clone(), None);
                errln!("# removing {stale}");
            }
            parent = head.commit.get("commitHash").and_then(Value::as_str).filter(|h| h.chars().count() >= 8).map(str::to_string);
        }
        for left in &gathered.skipped {
            errln!("# left behind: {left}");
        }
        let options = PushOptions {
            message: args.message.clone().unwrap_or_else(|| format!("publish {slug}")),
            parent_commit: parent,
            description: args.description.clone(),
            tags: (!args.tags.is_empty()).then(|| args.tags.clone()),
            readme: None,
            workspace_visible: args.workspace_visible,
            scope: if args.project_scope { "project" } else { "org" }.into(),
        };
        client.push(&slug, &files, &options)
    })();
    let result = match outcome {
        Ok(result) => result,
        Err(error) => return failed(error),
    };
    let status = result.get("status").and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or("committed").to_string();
    let commit = [text(&result, "commitHash"), text(&result, "commitId")].into_iter().find(|s| !s.is_empty()).unwrap_or_default();
    outln!("{}", format!("{status} {slug} {commit} {}", text(&result, "url")).trim_end());
    ExitCode::SUCCESS
}

pub fn list(args: ListArgs) -> ExitCode {
    let client = match client(args.host.as_deref()) {
        Ok(client) => client,
        Err(code) => return code,
    };
    let mut rows = match client.hub(args.query.as_deref()) {
        Ok(rows) => rows,
        Err(error) => return failed(error),
    };
    if !args.hub {
        rows.retain(is_own);
    }
    if rows.is_empty() {
        errln!("no connectors{}", if args.hub { " in the hub" } else { "; `gateway worlds connector publish` adds one" });
        return ExitCode::SUCCESS;
    }
    let mut header: Vec<String> = ["slug", "name", "vendor", "auth", "entities", "operations", "visibility"].map(String::from).to_vec();
    if args.hub {
        header.push("org".into());
    }
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let meta = row.get("metadata").filter(|m| m.as_object().is_some());
            let mut line = vec![
                text(row, "slug"),
                text(row, "name"),
                or_dash(meta, "vendor"),
                or_dash(meta, "auth"),
                shown(meta, "entityCount"),
                shown(meta, "operationCount"),
                text(row, "visibility"),
            ];
            if args.hub {
                line.push(format!("{}{}", text(row, "orgName"), if is_own(row) { " (own)" } else { "" }));
            }
            line
        })
        .collect();
    outln!("{}", table(&header, &lines));
    ExitCode::SUCCESS
}

fn occupied(dir: &Path) -> bool {
    dir.exists() && (!dir.is_dir() || std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(true))
}

pub fn pull(args: PullArgs) -> ExitCode {
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(&args.slug));
    if occupied(&out) {
        return failed(format!("{}: must be a new or empty directory", out.display()));
    }
    let client = match client(args.host.as_deref()) {
        Ok(client) => client,
        Err(code) => return code,
    };
    let pulled = match client.pull(&args.slug, args.version.as_deref()) {
        Ok(pulled) => pulled,
        Err(error) => return failed(error),
    };
    for (relative, content) in &pulled.files {
        if relative.starts_with('/') || relative.split('/').any(|part| part == "..") {
            return failed(format!("Refusing a template path outside the directory: {relative}"));
        }
        let target = out.join(relative);
        let written = target.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&target, content));
        if let Err(error) = written {
            return failed(format!("{}: {error}", target.display()));
        }
        outln!("{relative}");
    }
    errln!("# {} @ {} -> {}", args.slug, pulled.commit_label(), out.display());
    ExitCode::SUCCESS
}

pub fn clone(args: CloneArgs) -> ExitCode {
    let client = match client(args.host.as_deref()) {
        Ok(client) => client,
        Err(code) => return code,
    };
    let rows = match client.hub(None) {
        Ok(rows) => rows,
        Err(error) => return failed(error),
    };
    let chosen = match rows.iter().find(|row| row.get("id").and_then(Value::as_str) == Some(args.source.as_str())) {
        Some(row) => row.clone(),
        None => {
            let matches: Vec<&Value> =
                rows.iter().filter(|row| row.get("slug").and_then(Value::as_str) == Some(args.source.as_str())).collect();
            let others: Vec<&Value> = matches.iter().copied().filter(|row| !is_own(row)).collect();
            let candidates = if others.is_empty() { matches } else { others };
            match candidates.as_slice() {
                [] => return failed(format!("{}: not in the hub; `gateway worlds connector list --hub` shows what is", args.source)),
                [one] => (*one).clone(),
                several => {
                    errln!("{} names {} hub connectors; clone by repo id instead:", args.source, several.len());
                    for row in several {
                        errln!("  {}  {}", text(row, "id"), text(row, "orgName"));
                    }
                    return Status::FAILED.into();
                }
            }
        }
    };
    let scope = if args.project_scope { "project" } else { "org" };
    let result = match client.clone_connector(&text(&chosen, "id"), args.name.as_deref(), args.slug.as_deref(), scope) {
        Ok(result) => result,
        Err(error) => return failed(error),
    };
    outln!(
        "cloned {} from {} -> {} ({}) commit {}",
        text(&chosen, "slug"),
        text(&chosen, "orgName"),
        text(&result, "slug"),
        text(&result, "id"),
        text(&result, "commitId")
    );
    ExitCode::SUCCESS
}

/// `schema init PATH --connector workspace:<slug>`: the template pulled from the hub,
/// then initialised as the original's `init_bundle_from_files` does.
pub fn init_from_workspace(path: &Path, slug: &str, name: Option<&str>, host: Option<&str>) -> ExitCode {
    if slug.is_empty() {
        errln!("Error: Invalid value: workspace:<slug> needs the connector's slug");
        return Status::USAGE.into();
    }
    let pulled = match client(host).and_then(|client| client.pull(slug, None).map_err(failed)) {
        Ok(pulled) => pulled,
        Err(code) => return code,
    };
    let files: TemplateFiles = pulled.files.iter().map(|(path, text)| (path.clone(), text.as_bytes().to_vec())).collect();
    match scaffold::init_from_files(path, &files, slug, name) {
        Ok(contract) => {
            let answer = object([
                ("status", Value::str("ok")),
                ("domain", contract.target().clone()),
                ("connector", object([("slug", Value::str(slug)), ("commit", Value::Str(pulled.commit_label()))])),
            ]);
            printer::json_line(&answer);
            ExitCode::SUCCESS
        }
        Err(Error::Contract(error)) => {
            printer::json_line(&object([("status", Value::str("rejected")), ("error", error.detail())]));
            Status::FAILED.into()
        }
        Err(other) => failed(other),
    }
}

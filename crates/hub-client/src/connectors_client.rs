//! The workspace-connectors client behind `gateway worlds connector publish|list|pull|clone`
//! and `schema init --connector workspace:<slug>` (spec §3; the original's
//! `connectors/client.py` and `connectors/template.py`): the requests, their error text
//! (`"<METHOD> <path> -> <code>: <first 500 characters>"`), and the gathering of a
//! template's files from a template directory or the world directory it was authored in.

use crate::transport::{with_query, Dialect, Missing, Transport};
use crate::ClientError;
use gateway_common::url::quote;
use gateway_world::json::{object, Map, Value};
use reqwest::Method;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const CONNECTORS: &str = "/api/public/context/connectors";
const HUB: &str = "/api/public/connectors/hub";
const CLONE: &str = "/api/public/connectors/clone";
/// The original's `connectors/client.py`: an empty answer is `{}`.
const DIALECT: Dialect = Dialect { empty_is_object: true, ..Dialect::URLLIB };

type Result<T> = std::result::Result<T, ClientError>;

fn fail(message: impl Into<String>) -> ClientError {
    ClientError::Failed(message.into())
}

/// A pulled connector: its `repo`, the resolved `commit`, and its files as text.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The repo, as answered.
    pub repo: Value,
    /// The commit, as answered.
    pub commit: Value,
    /// Path → text.
    pub files: BTreeMap<String, String>,
}

impl Pulled {
    /// `commit.commitHash`, else `commit.id`, else empty (what the CLI prints).
    pub fn commit_label(&self) -> String {
        let text = |key: &str| self.commit.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        text("commitHash").or_else(|| text("id")).unwrap_or_default()
    }
}

/// What a push sends besides the files.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// Commit message.
    pub message: String,
    /// The head's commit hash the files were based on.
    pub parent_commit: Option<String>,
    /// One-line description.
    pub description: Option<String>,
    /// Tags.
    pub tags: Option<Vec<String>>,
    /// README text.
    pub readme: Option<String>,
    /// `is_public`.
    pub workspace_visible: bool,
    /// `org` or `project`.
    pub scope: String,
}

/// A client of the workspace-connector API, authenticated with a project key pair.
#[derive(Debug, Clone)]
pub struct ConnectorsClient {
    transport: Transport,
}

impl ConnectorsClient {
    /// `--host` (else `GATEWAY_HOST`) and the key pair from the environment, refused as
    /// the original refuses them.
    pub fn from_env(host: Option<&str>) -> Result<ConnectorsClient> {
        Ok(ConnectorsClient { transport: Transport::from_env(host, Missing::TERSE, Duration::from_secs(120))? })
    }

    fn request(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value> {
        self.transport.call(&DIALECT, method, path, body)
    }

    /// `/context/connectors/<slug>[?query]`; a slug must be one path segment.
    fn one(slug: &str, query: &[(&str, Option<&str>)]) -> Result<String> {
        if slug.is_empty() || slug.contains('/') {
            return Err(fail("a connector slug is a single path segment"));
        }
        let path = format!("{CONNECTORS}/{}", quote(slug, ""));
        Ok(with_query(&path, query.iter().filter_map(|(k, v)| v.map(|v| (k, v)))))
    }

    /// The project's connector repos (`repos`, `total`, `limit`, `offset`).
    pub fn list(&self, query: Option<&str>, limit: i64, offset: i64, workspace_visible: Option<bool>) -> Result<Value> {
        let mut params = vec![("limit", limit.to_string()), ("offset", offset.to_string())];
        if let Some(query) = query.filter(|q| !q.is_empty()) {
            params.push(("query", query.to_string()));
        }
        if let Some(visible) = workspace_visible {
            params.push(("is_public", visible.to_string()));
        }
        self.request(Method::GET, &with_query(CONNECTORS, params), None)
    }

    /// Whether the project has a connector `slug`.
    pub fn exists(&self, slug: &str) -> Result<bool> {
        let answer = self.request(Method::GET, &Self::one(slug, &[("exists", Some("true"))])?, None)?;
        Ok(answer.get("exists").is_some_and(crate::client::truthy))
    }

    /// A connector's files at `version` (a label or a commit hash; the head by default).
    /// Every file entry must be `{type: "file", content: <text>}`.
    pub fn pull(&self, slug: &str, version: Option<&str>) -> Result<Pulled> {
        let answer = self.request(Method::GET, &Self::one(slug, &[("version", version)])?, None)?;
        let mut files = BTreeMap::new();
        if let Some(Value::Object(entries)) = answer.get("files") {
            for (path, entry) in entries {
                let content = match entry {
                    Value::Object(entry) if entry.get("type").and_then(Value::as_str) == Some("file") => {
                        entry.get("content").and_then(Value::as_str).map(str::to_string)
                    }
                    _ => None,
                };
                let Some(content) = content else {
                    return Err(fail(format!("{slug}: {path} is not a file entry; a connector template holds files only")));
                };
                files.insert(path.clone(), content);
            }
        }
        let member = |key: &str| answer.get(key).cloned().unwrap_or_else(|| Value::Object(Map::default()));
        Ok(Pulled { repo: member("repo"), commit: member("commit"), files })
    }

    /// Create the connector or commit to it (`None` content deletes a path).
    pub fn push(&self, slug: &str, files: &BTreeMap<String, Option<String>>, options: &PushOptions) -> Result<Value> {
        if options.scope != "org" && options.scope != "project" {
            return Err(fail("scope must be 'org' or 'project'"));
        }
        let files: Map = files
            .iter()
            .map(|(path, content)| {
                let entry = content.as_ref().map(|c| object([("content", Value::str(c))])).unwrap_or(Value::Null);
                (path.clone(), entry)
            })
            .collect();
        let mut body = Map::default();
        body.insert("files".into(), Value::Object(files));
        body.insert("message".into(), Value::str(&options.message));
        body.insert("is_public".into(), Value::Bool(options.workspace_visible));
        body.insert("scope".into(), Value::str(&options.scope));
        body.insert("source".into(), Value::str("sdk"));
        let optional = [("parent_commit", &options.parent_commit), ("description", &options.description), ("readme", &options.readme)];
        for (key, value) in optional {
            if let Some(value) = value {
                body.insert(key.into(), Value::str(value));
            }
        }
        if let Some(tags) = &options.tags {
            body.insert("tags".into(), Value::Array(tags.iter().map(Value::str).collect()));
        }
        self.request(Method::POST, &Self::one(slug, &[])?, Some(&Value::Object(body)))
    }

    /// Delete a connector.
    pub fn delete(&self, slug: &str) -> Result<Value> {
        self.request(Method::DELETE, &Self::one(slug, &[])?, None)
    }

    /// The hub: this project's connectors and the published ones of others.
    pub fn hub(&self, query: Option<&str>) -> Result<Vec<Value>> {
        let path = with_query(HUB, query.filter(|q| !q.is_empty()).map(|query| ("query", query)));
        let answer = self.request(Method::GET, &path, None)?;
        Ok(answer.get("connectors").and_then(Value::as_array).cloned().unwrap_or_default())
    }

    /// Copy a hub connector into this project (`id`, `slug`, `commitId`).
    pub fn clone_connector(&self, source_repo_id: &str, name: Option<&str>, slug: Option<&str>, scope: &str) -> Result<Value> {
        if scope != "org" && scope != "project" {
            return Err(fail("scope must be 'org' or 'project'"));
        }
        let mut body = Map::default();
        body.insert("sourceRepoId".into(), Value::str(source_repo_id));
        body.insert("scope".into(), Value::str(scope));
        if let Some(name) = name {
            body.insert("name".into(), Value::str(name));
        }
        if let Some(slug) = slug {
            body.insert("slug".into(), Value::str(slug));
        }
        self.request(Method::POST, CLONE, Some(&Value::Object(body)))
    }
}

// ------------------------------------------------------------------ gathering a template

/// World-directory trees that are never part of the template.
const WORLD_SKIPPED_DIRS: [&str; 4] = ["data", "captures", "db", "verifiers"];
/// World-directory files that are never part of the template.
const WORLD_SKIPPED_FILES: [&str; 2] = ["gateway-env.toml", "tool-schemas.json"];
/// World-directory trees carried into the template unchanged.
const WORLD_CARRIED_DIRS: [&str; 4] = ["api", "scenarios", "evidence", "reports"];
const SUPPORTING_SUFFIXES: [&str; 3] = [".json", ".md", ".toml"];
const GENERATED_NAMES: [&str; 5] = ["base.json", "runtime.json", "lock.json", "README.md", "tool-schemas.json"];

/// What [`collect_template`] found: which layout the directory had (`template` or
/// `world`), the template (path → text), and the world files left behind.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    /// `template` or `world`.
    pub source: String,
    /// Path in the template layout → text.
    pub files: BTreeMap<String, String>,
    /// World-directory entries that stay behind.
    pub skipped: Vec<String>,
}

/// What [`walk`] found: every regular file, and every symbolic link (not followed).
#[derive(Default)]
struct Walked {
    files: Vec<Vec<String>>,
    links: Vec<Vec<String>>,
}

/// Every regular file under `root` (no `.pyc`, dotfiles, or anything under a dot- or
/// `__pycache__` directory) and every symbolic link not named with a dot, as relative
/// component lists in Python's path order.
fn walk(root: &Path) -> std::io::Result<Walked> {
    fn visit(dir: &Path, prefix: &[String], out: &mut Walked) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type()?;
            let mut parts = prefix.to_vec();
            parts.push(name.clone());
            if kind.is_symlink() {
                if !name.starts_with('.') {
                    out.links.push(parts);
                }
                continue;
            }
            if kind.is_dir() {
                if name == "__pycache__" || name.starts_with('.') {
                    continue;
                }
                visit(&entry.path(), &parts, out)?;
            } else if kind.is_file() && !name.starts_with('.') && !name.ends_with(".pyc") {
                out.files.push(parts);
            }
        }
        Ok(())
    }
    let mut out = Walked::default();
    visit(root, &[], &mut out)?;
    out.files.sort();
    out.links.sort();
    Ok(out)
}

fn suffix(name: &str) -> &str {
    match name.rfind('.') {
        Some(0) | None => "",
        Some(at) => &name[at..],
    }
}

/// The template path a world-directory file maps to, or `None` to leave it behind.
fn template_path(parts: &[String]) -> Option<String> {
    let joined = parts.join("/");
    if WORLD_SKIPPED_DIRS.contains(&parts[0].as_str()) || WORLD_SKIPPED_FILES.contains(&joined.as_str()) {
        return None;
    }
    if parts.len() == 1 {
        return (parts[0] == "connector.toml").then_some(joined);
    }
    if parts[0] == "schema" {
        let name = &parts[1];
        let fits = parts.len() == 2 && SUPPORTING_SUFFIXES.contains(&suffix(name)) && !GENERATED_NAMES.contains(&name.as_str());
        return fits.then(|| name.clone());
    }
    if joined == "tools/handlers.py" {
        return Some("handlers.py".into());
    }
    WORLD_CARRIED_DIRS.contains(&parts[0].as_str()).then_some(joined)
}

/// The template held in `directory`, whichever of the two layouts it uses: a template
/// directory (`world.json` at its root) taken as it is, or a world directory
/// (`schema/world.json`) mapped back into the template layout.
pub fn collect_template(directory: &Path) -> std::result::Result<Gathered, String> {
    let root = PathBuf::from(directory);
    let shown = directory.display().to_string();
    let read = |parts: &[String]| -> std::result::Result<String, String> {
        let relative = parts.join("/");
        let bytes = std::fs::read(root.join(&relative)).map_err(|e| format!("{relative}: {e}"))?;
        String::from_utf8(bytes).map_err(|_| format!("{relative} is not UTF-8 text; a connector template holds text files only"))
    };
    let is_template = root.join("world.json").is_file();
    if !is_template && !root.join("schema/world.json").is_file() {
        return Err(format!("{shown}: neither a connector template (world.json) nor a world (schema/world.json)"));
    }
    let mut gathered = Gathered { source: if is_template { "template" } else { "world" }.into(), ..Gathered::default() };
    let walked = walk(&root).map_err(|e| format!("{shown}: {e}"))?;
    // A link the template would carry is refused (what it points to may be outside the
    // world); one in a place a world leaves behind is only left behind.
    for parts in &walked.links {
        if is_template || template_path(parts).is_some() {
            let relative = parts.join("/");
            let target = std::fs::read_link(root.join(&relative)).map(|t| t.display().to_string()).unwrap_or_default();
            return Err(format!(
                "refusing to publish {relative}: it is a symlink ({target}); a connector never follows links out of the world — copy the files in or remove the link"
            ));
        }
    }
    for parts in walked.files {
        if is_template {
            gathered.files.insert(parts.join("/"), read(&parts)?);
            continue;
        }
        match template_path(&parts) {
            Some(target) => {
                gathered.files.insert(target, read(&parts)?);
            }
            None => gathered.skipped.push(parts.join("/")),
        }
    }
    gathered.skipped.extend(walked.links.iter().map(|parts| parts.join("/")));
    Ok(gathered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_layout_maps_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            ("schema/world.json", "{}"),
            ("schema/base.json", "{}"),
            ("schema/lock.json", "{}"),
            ("schema/scope.toml", "x = 1"),
            ("tools/handlers.py", "# h"),
            ("connector.toml", "[connector]"),
            ("gateway-env.toml", ""),
            ("data/initial.json", "{}"),
            ("api/handlers.py", "# a"),
            ("tools/__pycache__/x.pyc", ""),
            (".hidden", ""),
            ("notes.txt", ""),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let gathered = collect_template(root).unwrap();
        assert_eq!(gathered.source, "world");
        let paths: Vec<&str> = gathered.files.keys().map(String::as_str).collect();
        assert_eq!(paths, ["api/handlers.py", "connector.toml", "handlers.py", "scope.toml", "world.json"]);
        assert_eq!(gathered.skipped, ["data/initial.json", "gateway-env.toml", "notes.txt", "schema/base.json", "schema/lock.json"]);
    }

    #[test]
    fn hostile_a_symlink_the_template_would_carry_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("world");
        std::fs::create_dir_all(root.join("schema")).unwrap();
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::write(root.join("schema/world.json"), "{}").unwrap();
        std::fs::write(dir.path().join("secret"), "s3cret").unwrap();
        // Left behind anyway: listed as skipped, never read.
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("data/initial.json")).unwrap();
        let gathered = collect_template(&root).unwrap();
        assert_eq!(gathered.skipped, ["data/initial.json"]);
        // Carried: refused, naming it.
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("connector.toml")).unwrap();
        let error = collect_template(&root).unwrap_err();
        assert!(error.starts_with("refusing to publish connector.toml: it is a symlink ("), "{error}");
        assert!(!error.contains("s3cret"));
    }

    #[test]
    fn neither_layout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let error = collect_template(dir.path()).unwrap_err();
        assert!(error.ends_with("neither a connector template (world.json) nor a world (schema/world.json)"), "{error}");
    }
}

//! New worlds from a template: `schema init` and `schema templates`.
//!
//! A template is a set of files in the template layout — `world.json`, `handlers.py`,
//! supporting `.json/.md/.toml` files (`provenance.json`, `scope.toml`, …), an optional
//! `connector.toml`, and `api/` / `scenarios/` trees. They come from one of three places:
//! - the built-in templates, data files under `crates/world/templates/<slug>/` (learned
//!   from the original's `schema init` output by `scripts/templates_from_reference.py`)
//!   compiled into the binary by `build.rs`;
//! - a template directory on disk (`--connector DIR`, beyond the original);
//! - a workspace connector pulled from a hub (`--connector workspace:<slug>`), in memory.
//!
//! Every one goes through [`init_from_files`], the original's `init_bundle_from_files`:
//! the world is written, compiled, and given an empty initial batch; on any refusal the
//! destination is removed again.

use crate::compiler::Contract;
use crate::error::{fail, ContractError, Error, Result};
use crate::json::{dumps, encoded, object, DumpOptions, Value};
use crate::lifecycle::compile_bundle;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/templates.rs"));
}

/// The template that is always offered, last.
pub const CUSTOM: &str = "custom";
/// Files a template may not carry: the compiler generates them.
const GENERATED_NAMES: [&str; 5] = ["base.json", "runtime.json", "lock.json", "README.md", "tool-schemas.json"];
/// Suffixes of the supporting files that go under `schema/`.
const SUPPORTING_SUFFIXES: [&str; 3] = [".json", ".md", ".toml"];

/// A template's files: path in the template layout → bytes.
pub type TemplateFiles = BTreeMap<String, Vec<u8>>;

/// The built-in template slugs, sorted, `custom` last.
pub fn list_templates() -> Vec<String> {
    let mut slugs: Vec<String> = builtin::TEMPLATES.iter().map(|(slug, _)| slug.to_string()).filter(|s| s != CUSTOM).collect();
    slugs.sort();
    slugs.push(CUSTOM.to_string());
    slugs
}

/// A built-in template's files, if `slug` names one.
pub fn builtin_files(slug: &str) -> Option<TemplateFiles> {
    builtin::TEMPLATES
        .iter()
        .find(|(name, _)| *name == slug)
        .map(|(_, files)| files.iter().map(|(path, bytes)| (path.to_string(), bytes.to_vec())).collect())
}

/// The dialect's `schema/base.json`, which every world made from a template gets (a
/// template cannot carry its own: `base.json` is generated).
pub fn dialect_base() -> &'static [u8] {
    builtin::BASE
}

/// The digest of a template (as the original's `template_digest`): sha256 over the
/// sorted `path \0 bytes \0`. Identical files pin identically wherever they come from.
pub fn template_digest(files: &TemplateFiles) -> String {
    let mut digest = Sha256::new();
    for (path, bytes) in files {
        digest.update(path.as_bytes());
        digest.update([0]);
        digest.update(bytes);
        digest.update([0]);
    }
    hex::encode(digest.finalize())
}

/// Where a template comes from.
#[derive(Debug, Clone)]
pub enum Template {
    /// A built-in template, by slug.
    Builtin(&'static str),
    /// A template directory on disk.
    Directory(PathBuf),
    /// Files held in memory (a workspace connector), under the slug the manifest records.
    Files {
        /// The connector slug.
        slug: String,
        /// The template's files.
        files: TemplateFiles,
    },
}

impl Template {
    /// Resolve `--connector`: a built-in slug or an existing directory holding `world.json`.
    pub fn find(connector: &str) -> Option<Template> {
        if let Some((slug, _)) = builtin::TEMPLATES.iter().find(|(slug, _)| *slug == connector) {
            return Some(Template::Builtin(slug));
        }
        let path = Path::new(connector);
        path.join("world.json").is_file().then(|| Template::Directory(path.to_path_buf()))
    }

    /// The slug recorded in the manifest.
    pub fn slug(&self) -> String {
        match self {
            Template::Builtin(slug) => slug.to_string(),
            Template::Files { slug, .. } => slug.clone(),
            Template::Directory(dir) => {
                let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
                canonical.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            }
        }
    }

    /// The template's files.
    pub fn files(&self) -> Result<TemplateFiles> {
        match self {
            Template::Builtin(slug) => Ok(builtin_files(slug).expect("a built-in slug")),
            Template::Files { files, .. } => Ok(files.clone()),
            Template::Directory(dir) => read_template_dir(dir),
        }
    }
}

/// A template directory's files: every regular file (no dotfiles, `__pycache__` or
/// `.pyc`); a symlink anywhere is refused, naming it.
pub fn read_template_dir(dir: &Path) -> Result<TemplateFiles> {
    fn walk(root: &Path, dir: &Path, files: &mut TemplateFiles) -> Result<()> {
        let mut entries: Vec<PathBuf> =
            std::fs::read_dir(dir).map_err(|e| Error::io(e, dir))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name.starts_with('.') || name == "__pycache__" || name.ends_with(".pyc") {
                continue;
            }
            if crate::files::is_symlink(&path) {
                return Err(ContractError::new(
                    "template",
                    "Template resources must be regular files, not symlinks",
                    path.display().to_string(),
                )
                .into());
            }
            if path.is_dir() {
                walk(root, &path, files)?;
            } else {
                let relative = path.strip_prefix(root).expect("under the root").to_string_lossy().replace('\\', "/");
                files.insert(relative, std::fs::read(&path).map_err(|e| Error::io(e, &path))?);
            }
        }
        Ok(())
    }
    let mut files = TemplateFiles::new();
    walk(dir, dir, &mut files)?;
    Ok(files)
}

fn slug(value: &str, location: &str) -> Result<(), ContractError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_') {
        return fail("identity", "Use lowercase letters, digits, - or _", location);
    }
    Ok(())
}

/// Whether `value` would be accepted as a connector slug or world name.
pub fn is_slug(value: &str) -> bool {
    slug(value, "").is_ok()
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut text = dumps(value, DumpOptions::PRETTY);
    text.push('\n');
    text.into_bytes()
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(e, parent))?;
    }
    std::fs::write(path, bytes).map_err(|e| Error::io(e, path))
}

fn manifest(name: &str, connector: &str, tools: &[String]) -> String {
    let serve = tools.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ");
    format!(
        "[environment]\nname = \"{name}\"\nkind = \"mock-tools\"\ndb = \"sqlite\"\nconnector = \"{connector}\"\n\n[schema]\nlanguage = \"gateway-world/1\"\n\n[tools]\nserve = [{serve}]\n\n[db]\nengine = \"sqlite\"\n"
    )
}

/// Where a template file goes in the world, `None` when it stays with the template
/// (`evidence/`, `reports/`), or the refusal.
fn destination_of(path: &str) -> Result<Option<PathBuf>, ContractError> {
    if path == "connector.toml" {
        return Ok(Some(PathBuf::from(path)));
    }
    if path.starts_with("api/") || path.starts_with("scenarios/") {
        return Ok(Some(PathBuf::from(path)));
    }
    if path.starts_with("evidence/") || path.starts_with("reports/") {
        return Ok(None);
    }
    let supported = !path.contains('/')
        && SUPPORTING_SUFFIXES.iter().any(|suffix| path.ends_with(suffix) && path.len() > suffix.len())
        && !GENERATED_NAMES.contains(&path);
    if supported {
        return Ok(Some(Path::new("schema").join(path)));
    }
    fail("template", "Unsupported or generated template artifact", format!("/init/files/{path}"))
}

fn safe_path(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('/') && !path.contains('\\') && !path.split('/').any(|part| part == "..")
}

/// Create and compile a world at `destination` from `template`; the domain it targets.
/// With `starter_api`, a template that carries no `connector.toml` also gets a starter
/// one ([`starter_connector`]), written after everything the original writes.
pub fn init(destination: &Path, template: &Template, name: Option<&str>, starter_api: bool) -> Result<Value> {
    let connector = template.slug();
    slug(&connector, "/init/connector")?;
    let files = template.files()?;
    let contract = init_from_files(destination, &files, &connector, name)?;
    if starter_api && !files.contains_key("connector.toml") {
        let world = crate::files::read_json(&destination.join("schema/world.json"))?;
        let written = write(&destination.join("connector.toml"), starter_connector(&connector, &world).as_bytes());
        if let Err(error) = written {
            let _ = std::fs::remove_dir_all(destination);
            return Err(error);
        }
    }
    Ok(contract.target().clone())
}

/// An entity's name as a resource: without the prefix every entity of the world shares
/// (`github_issues` → `issues`), and in the singular (`repositories` → `repository`).
fn resource_names(entities: &[&String]) -> Vec<(String, String)> {
    let prefix = entities.first().and_then(|first| first.split_once('_')).map(|(head, _)| format!("{head}_"));
    let shared = prefix.filter(|p| entities.len() > 1 && entities.iter().all(|e| e.starts_with(p.as_str()) && e.len() > p.len()));
    entities
        .iter()
        .map(|entity| {
            let plural = shared.as_deref().and_then(|p| entity.strip_prefix(p)).unwrap_or(entity).to_string();
            let one = if let Some(stem) = plural.strip_suffix("ies").filter(|s| !s.is_empty()) {
                format!("{stem}y")
            } else if plural.ends_with("sses") || plural.ends_with("xes") {
                plural[..plural.len() - 2].to_string()
            } else {
                // Not a plural: status, analysis, address.
                match plural.strip_suffix('s') {
                    Some(stem) if !stem.is_empty() && !["s", "u", "i"].iter().any(|end| stem.ends_with(end)) => stem.to_string(),
                    _ => plural.clone(),
                }
            };
            (plural, one)
        })
        .collect()
}

/// A starter `connector.toml` for a world whose template carries none: for every
/// entity, `GET /<resource>` (all rows), `GET /<resource>/{key…}` (one row by its
/// primary key) and `POST /<resource>` (a new row, checked against the contract), the
/// resource named without the prefix the template's entities share (`/issues`,
/// `get_repository`); no auth, so a local `curl` needs no token. Ours: the original's
/// templates ship no connector.toml.
pub fn starter_connector(connector: &str, world: &Value) -> String {
    let mut text = format!(
        "# A starter REST API over this world's entities, written by `gateway worlds schema init`.\n\
         # `gateway worlds serve .` serves it; `gateway worlds connector route add` adds routes.\n\
         # For a vendor-like token check, set [auth] scheme = \"bearer\" and secret_env = \"TOKEN_VAR\".\n\
         [connector]\nslug = \"{connector}\"\nbase_url = \"https://{connector}.example.test\"\n\n[auth]\nscheme = \"none\"\n"
    );
    let entities = world.get("x-gateway").and_then(|x| x.get("entities")).and_then(Value::as_object);
    let names: Vec<&String> = entities.into_iter().flat_map(|e| e.keys()).collect();
    let resources = resource_names(&names);
    for ((entity, declaration), (many, one)) in entities.into_iter().flatten().zip(resources) {
        let keys: Vec<String> = declaration
            .get("primary_key")
            .and_then(Value::as_array)
            .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        text.push_str(&format!(
            "\n[[operations]]\nname = \"list_{many}\"\npath = \"/{many}\"\nentity = \"{entity}\"\n[operations.api]\nenvelope = \"{many}\"\n"
        ));
        if !keys.is_empty() {
            let path: String = keys.iter().map(|k| format!("/{{{k}}}")).collect();
            let filter: Vec<String> = keys.iter().map(|k| format!("{k} = \"{k}\"")).collect();
            text.push_str(&format!(
                "\n[[operations]]\nname = \"get_{one}\"\npath = \"/{many}{path}\"\nentity = \"{entity}\"\n[operations.api]\nfilter = {{ {} }}\nsingle = true\n",
                filter.join(", ")
            ));
        }
        text.push_str(&format!(
            "\n[[operations]]\nname = \"create_{one}\"\nmethod = \"POST\"\npath = \"/{many}\"\nentity = \"{entity}\"\n[operations.api]\naction = \"create\"\n"
        ));
    }
    text
}

/// Create and compile a world at `destination` from a template's files (the original's
/// `init_bundle_from_files`): `connector` names the template in the manifest, `name` the
/// world (default `<connector>-world`). The destination must be absent or an empty
/// directory; on any failure it is removed again.
pub fn init_from_files(destination: &Path, files: &TemplateFiles, connector: &str, name: Option<&str>) -> Result<Arc<Contract>> {
    slug(connector, "/init/connector")?;
    let name = name.map(str::to_string).unwrap_or_else(|| format!("{connector}-world"));
    slug(&name, "/init/name")?;
    let occupied =
        destination.exists() && (!destination.is_dir() || std::fs::read_dir(destination).map(|mut d| d.next().is_some()).unwrap_or(true));
    if occupied {
        return fail("state_exists", "Destination must be a new or empty directory", "/init").map_err(Into::into);
    }
    let Some(world_bytes) = files.get("world.json") else {
        return fail("template", "A connector template needs world.json", "/init/files").map_err(Into::into);
    };
    if !files.keys().all(|path| safe_path(path)) {
        return fail("template", "Template paths must be relative and stay inside the template", "/init/files").map_err(Into::into);
    }
    let not_json = || ContractError::new("template", "world.json is not valid JSON", "/init/files/world.json");
    let text = std::str::from_utf8(world_bytes).map_err(|_| not_json())?;
    let mut world = crate::json::parse_loads(text).map_err(|_| not_json())?.value;
    let not_world = || ContractError::new("template", "world.json is not a gateway-world document", "/init/files/world.json");
    let Some(Value::Object(annotation)) = (match &mut world {
        Value::Object(map) => map.get_mut("x-gateway"),
        _ => None,
    }) else {
        return Err(not_world().into());
    };
    let Some(Value::Object(package)) = annotation.get_mut("package") else {
        return Err(not_world().into());
    };
    package.insert("id".into(), Value::str(&name));
    let names = |key: &str| -> Vec<String> {
        let mut names: Vec<String> =
            annotation.get(key).and_then(Value::as_object).map(|m| m.keys().cloned().collect()).unwrap_or_default();
        names.sort();
        names
    };
    let tools = names("tools");
    let entities = names("entities");
    let result = (|| -> Result<Arc<Contract>> {
        write(&destination.join("schema/world.json"), &pretty(&world))?;
        write(&destination.join("schema/base.json"), builtin::BASE)?;
        let handlers = files.get("handlers.py").or_else(|| files.get("tools/handlers.py")).map(Vec::as_slice).unwrap_or_default();
        write(&destination.join("tools/handlers.py"), handlers)?;
        for (path, bytes) in files {
            if ["world.json", "handlers.py", "tools/handlers.py"].contains(&path.as_str()) || path.starts_with("__pycache__") {
                continue;
            }
            if let Some(target) = destination_of(path)? {
                write(&destination.join(target), bytes)?;
            }
        }
        write(&destination.join("gateway-env.toml"), manifest(&name, connector, &tools).as_bytes())?;
        let Some(first) = entities.first() else {
            return fail("template", "world.json declares no entities", "/init/files/world.json").map_err(Into::into);
        };
        let verifier = format!("-- Scores 1.0 once the world holds any {first} row; edit for real tasks.\nSELECT CASE WHEN COUNT(*) > 0 THEN 1.0 ELSE 0.0 END FROM \"{first}\";\n");
        write(&destination.join("verifiers/state_present.sql"), verifier.as_bytes())?;
        let contract = compile_bundle(destination, true)?;
        write(&destination.join("data/records.json"), &pretty(&Value::Array(Vec::new())))?;
        let initial = object([
            ("id", Value::Str(format!("{name}.initial.v1"))),
            ("target", contract.target().clone()),
            ("mapping", object([("id", Value::str("empty")), ("version", Value::str("1"))])),
            ("coverage", Value::str("partial")),
            ("mutations", Value::Array(Vec::new())),
        ]);
        write(&destination.join("data/initial.json"), &encoded(&initial))?;
        Ok(contract)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(destination);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_original_fourteen_custom_last() {
        let listed = list_templates();
        assert_eq!(listed.len(), 14);
        assert_eq!(listed.first().map(String::as_str), Some("apple-business-manager"));
        assert_eq!(listed.last().map(String::as_str), Some(CUSTOM));
        for slug in &listed {
            let files = builtin_files(slug).unwrap();
            assert!(files.contains_key("world.json") && files.contains_key("handlers.py"), "{slug}");
        }
    }

    #[test]
    fn starter_routes_are_named_as_resources() {
        let names = |entities: &[&str]| {
            let owned: Vec<String> = entities.iter().map(|e| e.to_string()).collect();
            resource_names(&owned.iter().collect::<Vec<_>>())
        };
        let github = names(&["github_users", "github_repositories", "github_issues", "github_commits"]);
        let expected = [("users", "user"), ("repositories", "repository"), ("issues", "issue"), ("commits", "commit")];
        assert_eq!(github, expected.map(|(a, b)| (a.to_string(), b.to_string())));
        assert_eq!(names(&["records"]), [("records".to_string(), "record".to_string())], "one entity keeps its name");
        assert_eq!(names(&["sf_users", "contacts"])[0].0, "sf_users", "no prefix shared by all");
        assert_eq!(
            names(&["x_addresses", "x_boxes", "x_status"]).iter().map(|(_, one)| one.as_str()).collect::<Vec<_>>(),
            ["address", "box", "status"]
        );
    }

    #[test]
    fn refusals_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("w");
        let mut files = builtin_files(CUSTOM).unwrap();
        files.insert("notes.py".into(), b"x".to_vec());
        let error = init_from_files(&target, &files, "custom", None).unwrap_err();
        assert!(error.to_string().contains("Unsupported"), "{error}");
        assert!(!target.exists());
        files.remove("notes.py");
        files.insert("../escape.json".into(), b"{}".to_vec());
        assert!(init_from_files(&target, &files, "custom", None).is_err());
        assert!(!target.exists());
        assert!(init_from_files(&target, &builtin_files(CUSTOM).unwrap(), "Custom", None).is_err());
    }

    #[test]
    fn hostile_a_template_directory_with_a_symlinked_folder_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let template = dir.path().join("template");
        for (path, bytes) in builtin_files(CUSTOM).unwrap() {
            let at = template.join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, bytes).unwrap();
        }
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.json"), "{}").unwrap();
        std::os::unix::fs::symlink(&outside, template.join("scenarios")).unwrap();
        let target = dir.path().join("w");
        let error = init(&target, &Template::Directory(template.clone()), None, false).unwrap_err();
        assert!(error.to_string().contains("Template resources must be regular files, not symlinks"), "{error}");
        assert!(error.to_string().contains(&template.join("scenarios").display().to_string()), "{error}");
        assert!(!target.exists());
    }

    #[test]
    fn digest_is_over_sorted_paths() {
        let mut files = TemplateFiles::new();
        files.insert("b".into(), b"2".to_vec());
        files.insert("a".into(), b"1".to_vec());
        let expected = hex::encode(Sha256::digest(b"a\x001\x00b\x002\x00"));
        assert_eq!(template_digest(&files), expected);
    }
}

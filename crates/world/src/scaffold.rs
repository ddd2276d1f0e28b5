//! New worlds from a template: `schema init` and `schema templates`.
//!
//! The built-in template is `custom` (a `records` entity with list/get/create
//! tools). `--connector` also takes a template directory: its `world.json`,
//! optional `handlers.py`, `base.json`, `connector.toml`, supporting
//! `.json/.md/.toml` files and `api/` / `scenarios/` trees.

use crate::error::{fail, ContractError, Error, Result};
use crate::files::read_json;
use crate::json::{dumps, encoded, object, DumpOptions, Value};
use crate::lifecycle::compile_bundle;
use std::path::{Path, PathBuf};

const CUSTOM_WORLD: &str = include_str!("../templates/custom/world.json");
const CUSTOM_HANDLERS: &str = include_str!("../templates/custom/handlers.py");
const BASE: &str = include_str!("../templates/base.json");
/// Files a template may not carry: the compiler generates them.
const GENERATED_NAMES: [&str; 5] = ["base.json", "runtime.json", "lock.json", "README.md", "tool-schemas.json"];

/// The built-in template slugs, `custom` last.
pub fn list_templates() -> Vec<String> {
    vec!["custom".to_string()]
}

/// Where a template comes from.
#[derive(Debug, Clone)]
pub enum Template {
    /// The built-in `custom` template.
    Custom,
    /// A template directory on disk.
    Directory(PathBuf),
}

impl Template {
    /// Resolve `--connector`: a built-in slug or an existing directory.
    pub fn find(connector: &str) -> Option<Template> {
        if connector == "custom" {
            return Some(Template::Custom);
        }
        let path = Path::new(connector);
        path.join("world.json").is_file().then(|| Template::Directory(path.to_path_buf()))
    }

    /// The slug recorded in the manifest.
    pub fn slug(&self) -> String {
        match self {
            Template::Custom => "custom".into(),
            Template::Directory(dir) => {
                let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
                canonical.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            }
        }
    }
}

fn slug(value: &str, location: &str) -> Result<(), ContractError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_') {
        return fail("identity", "Use lowercase letters, digits, - or _", location);
    }
    Ok(())
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

/// The files a template contributes, as (relative destination, bytes).
/// Files to write, as (path relative to the world, bytes).
type Files = Vec<(PathBuf, Vec<u8>)>;

fn template_files(template: &Template) -> Result<(Value, Files)> {
    match template {
        Template::Custom => {
            let world = crate::json::parse_clean(CUSTOM_WORLD).expect("built-in template parses");
            Ok((
                world,
                vec![
                    (PathBuf::from("schema/base.json"), BASE.as_bytes().to_vec()),
                    (PathBuf::from("tools/handlers.py"), CUSTOM_HANDLERS.as_bytes().to_vec()),
                ],
            ))
        }
        Template::Directory(dir) => {
            let world = read_json(&dir.join("world.json"))?;
            let mut files = Vec::new();
            let base = std::fs::read(dir.join("base.json")).unwrap_or_else(|_| BASE.as_bytes().to_vec());
            files.push((PathBuf::from("schema/base.json"), base));
            let handlers =
                std::fs::read(dir.join("handlers.py")).or_else(|_| std::fs::read(dir.join("tools/handlers.py"))).unwrap_or_default();
            files.push((PathBuf::from("tools/handlers.py"), handlers));
            let mut entries: Vec<PathBuf> =
                std::fs::read_dir(dir).map_err(|e| Error::io(e, dir))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
            entries.sort();
            for path in entries {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if crate::files::is_symlink(&path) {
                    return Err(ContractError::new(
                        "template",
                        "Template resources must be regular files, not symlinks",
                        path.display().to_string(),
                    )
                    .into());
                }
                if path.is_dir() {
                    if name == "api" || name == "scenarios" {
                        copy_tree(&path, Path::new(&name), &mut files)?;
                    }
                    continue;
                }
                if ["world.json", "handlers.py", "base.json"].contains(&name.as_str()) {
                    continue;
                }
                let supported = [".json", ".md", ".toml"].iter().any(|s| name.ends_with(s)) && !GENERATED_NAMES.contains(&name.as_str());
                if !supported {
                    return Err(
                        ContractError::new("template", "Unsupported or generated template artifact", path.display().to_string()).into()
                    );
                }
                let bytes = std::fs::read(&path).map_err(|e| Error::io(e, &path))?;
                let target = if name == "connector.toml" { PathBuf::from(&name) } else { Path::new("schema").join(&name) };
                files.push((target, bytes));
            }
            Ok((world, files))
        }
    }
}

fn copy_tree(source: &Path, relative: &Path, files: &mut Files) -> Result<()> {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(source).map_err(|e| Error::io(e, source))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().expect("entry name").to_owned();
        if name == "__pycache__" || crate::files::is_symlink(&path) {
            continue;
        }
        if path.is_dir() {
            copy_tree(&path, &relative.join(&name), files)?;
        } else {
            files.push((relative.join(&name), std::fs::read(&path).map_err(|e| Error::io(e, &path))?));
        }
    }
    Ok(())
}

/// Create and compile a world at `destination` from `template`. The destination
/// must be absent or an empty directory; on any failure it is removed again.
pub fn init(destination: &Path, template: &Template, name: Option<&str>) -> Result<Value> {
    let connector = template.slug();
    slug(&connector, "/init/connector")?;
    let name = name.map(str::to_string).unwrap_or_else(|| format!("{connector}-world"));
    slug(&name, "/init/name")?;
    let occupied =
        destination.exists() && (!destination.is_dir() || std::fs::read_dir(destination).map(|mut d| d.next().is_some()).unwrap_or(true));
    if occupied {
        return fail("state_exists", "Destination must be a new or empty directory", "/init").map_err(Into::into);
    }
    let (mut world, files) = template_files(template)?;
    let declared_ok = world.get("x-gateway").and_then(|x| x.get("package")).and_then(Value::as_object).is_some();
    if !declared_ok {
        return fail("template", "world.json is not a gateway-world document", "/init/files/world.json").map_err(Into::into);
    }
    let annotation = match &mut world {
        Value::Object(map) => map.get_mut("x-gateway").expect("checked"),
        _ => unreachable!("checked above"),
    };
    if let Value::Object(annotation) = annotation {
        if let Some(Value::Object(package)) = annotation.get_mut("package") {
            package.insert("id".into(), Value::str(&name));
        }
    }
    let names = |key: &str| -> Vec<String> {
        let mut names: Vec<String> = world
            .get("x-gateway")
            .and_then(|x| x.get(key))
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        names.sort();
        names
    };
    let tools = names("tools");
    let entities = names("entities");
    let result = (|| -> Result<Value> {
        write(&destination.join("schema/world.json"), &pretty(&world))?;
        for (relative, bytes) in &files {
            write(&destination.join(relative), bytes)?;
        }
        write(&destination.join("gateway-env.toml"), manifest(&name, &connector, &tools).as_bytes())?;
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
        Ok(contract.target().clone())
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(destination);
    }
    result
}

//! `bench push --build-wheel`: the directory's wheel, built as the original builds it —
//! `uv build --wheel --out-dir dist` when uv is on PATH, else `python3 -m build --wheel`
//! when the `build` package is importable — and, where the original would fail for want
//! of both, written here for a hatchling project (the backend of `uv init` and the
//! verifiers environments): the same files, METADATA, entry points and RECORD as
//! hatchling's default wheel target, in a deterministic zip. Also the zip reading that
//! takes `Requires-Dist` out of a wheel's METADATA, and `bench install`'s installer
//! (`uv pip install` or `pip install` of a downloaded wheel).

use crate::ClientError;
use base64::Engine as _;
use gateway_bundle::archive::sha256_base64;
use gateway_bundle::gitignore::Matcher;
use sha2::{Digest, Sha256};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;

type Result<T> = std::result::Result<T, ClientError>;

fn fail(message: impl Into<String>) -> ClientError {
    ClientError::Wheel(format!("wheel build failed: {}", message.into()))
}

/// A wheel ready to upload.
#[derive(Debug, Clone)]
pub struct BuiltWheel {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Its canonical name (`demo_env-0.1.0-py3-none-any.whl`).
    pub filename: String,
    /// base64 of its raw sha256 (`wheelSha256`).
    pub sha256_b64: String,
    /// The `Requires-Dist` lines of its METADATA (`requiresDist`).
    pub requires_dist: Vec<String>,
}

/// Build `env`'s wheel into `env/dist/` (emptied first) and read it back.
pub fn build_wheel(env: &Path) -> Result<BuiltWheel> {
    let dist = env.join("dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist).map_err(|e| ClientError::io(&dist, e))?;
    }
    if on_path("uv") {
        run(Command::new("uv").args(["build", "--wheel", "--out-dir", "dist"]).current_dir(env))?;
    } else if python_has_build() {
        run(Command::new("python3").args(["-m", "build", "--wheel"]).arg(env))?;
    } else {
        write_hatchling_wheel(env, &dist)?;
    }
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(&dist)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "whl")).collect())
        .unwrap_or_default();
    wheels.sort();
    let path = wheels.pop().ok_or_else(|| ClientError::Wheel("wheel build produced no .whl".into()))?;
    let bytes = std::fs::read(&path).map_err(|e| ClientError::io(&path, e))?;
    let requires_dist = requires_dist(&bytes)?;
    let filename = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(BuiltWheel { sha256_b64: sha256_base64(&bytes), bytes, filename, requires_dist })
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

fn python_has_build() -> bool {
    Command::new("python3")
        .args(["-c", "import build"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Run a build tool; its failure as the original words it (the first 500 characters of
/// its stderr, else stdout).
fn run(command: &mut Command) -> Result<()> {
    let output = command.stdin(std::process::Stdio::null()).output().map_err(|e| fail(e.to_string()))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let text = if stderr.trim().is_empty() { String::from_utf8_lossy(&output.stdout).into_owned() } else { stderr.into_owned() };
    Err(fail(text.chars().take(500).collect::<String>()))
}

// ------------------------------------------------------------------ the hatchling wheel

/// `[-_.]+` → `_`, lowercased: the distribution name in file and directory names.
pub fn normalize_dist_name(name: &str) -> String {
    let mut out = String::new();
    let mut separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            separator = true;
            continue;
        }
        if separator && !out.is_empty() {
            out.push('_');
        }
        separator = false;
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn table<'a>(root: &'a toml::Table, path: &[&str]) -> Option<&'a toml::Table> {
    let mut here = root;
    for key in path {
        here = here.get(*key)?.as_table()?;
    }
    Some(here)
}

fn strings(value: Option<&toml::Value>, field: &str) -> Result<Vec<String>> {
    match value {
        None => Ok(Vec::new()),
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_string).ok_or_else(|| fail(format!("pyproject.toml: {field} must be a list of strings"))))
            .collect(),
        Some(_) => Err(fail(format!("pyproject.toml: {field} must be a list of strings"))),
    }
}

fn string(project: &toml::Table, key: &str) -> Result<Option<String>> {
    match project.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(fail(format!("pyproject.toml: [project].{key} must be a string"))),
    }
}

/// What hatchling's wheel target ships: (path inside the wheel, file on disk).
fn select_files(env: &Path, pyproject: &toml::Table, module: &str) -> Result<Vec<(String, PathBuf)>> {
    let target = table(pyproject, &["tool", "hatch", "build", "targets", "wheel"]);
    let build = table(pyproject, &["tool", "hatch", "build"]);
    let packages = strings(target.and_then(|t| t.get("packages")), "[tool.hatch.build.targets.wheel].packages")?;
    let mut include = strings(target.and_then(|t| t.get("only-include")), "[tool.hatch.build.targets.wheel].only-include")?;
    if include.is_empty() {
        include = strings(target.and_then(|t| t.get("include")).or_else(|| build.and_then(|b| b.get("include"))), "include")?;
    }
    for entry in packages.iter().chain(&include) {
        if entry.contains(['*', '?', '[', '!']) {
            return Err(fail(format!(
                "the pattern '{entry}' of pyproject.toml's [tool.hatch.build] needs hatchling itself: install uv or the `build` package"
            )));
        }
    }
    let ignore = std::fs::read_to_string(env.join(".gitignore")).map(|text| Matcher::parse(&text)).ok();
    let mut out = Vec::new();
    let add = |relative: &str, name_inside: &str, out: &mut Vec<(String, PathBuf)>| -> Result<()> {
        let path = env.join(relative);
        if path.is_dir() {
            walk(&path, name_inside, relative, ignore.as_ref(), out)
        } else if path.is_file() {
            out.push((name_inside.to_string(), path));
            Ok(())
        } else {
            Err(fail(format!("pyproject.toml names '{relative}', which {} does not hold", env.display())))
        }
    };
    if !packages.is_empty() {
        for package in &packages {
            let trimmed = package.trim_matches('/');
            let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
            add(trimmed, base, &mut out)?;
        }
    } else if !include.is_empty() {
        for entry in &include {
            let trimmed = entry.trim_matches('/');
            add(trimmed, trimmed, &mut out)?;
        }
    } else if env.join(module).join("__init__.py").is_file() {
        add(module, module, &mut out)?;
    } else if env.join("src").join(module).join("__init__.py").is_file() {
        add(&format!("src/{module}"), module, &mut out)?;
    } else if env.join(format!("{module}.py")).is_file() {
        add(&format!("{module}.py"), &format!("{module}.py"), &mut out)?;
    } else if env.join("src").join(format!("{module}.py")).is_file() {
        add(&format!("src/{module}.py"), &format!("{module}.py"), &mut out)?;
    } else {
        return Err(fail(format!(
            "Unable to determine which files to ship inside the wheel: {} holds none of {module}/__init__.py, \
             src/{module}/__init__.py, {module}.py; name them in [tool.hatch.build.targets.wheel] packages",
            env.display()
        )));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

fn walk(dir: &Path, inside: &str, relative: &str, ignore: Option<&Matcher>, out: &mut Vec<(String, PathBuf)>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir).map_err(|e| ClientError::io(dir, e))?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let (inside, relative) = (format!("{inside}/{name}"), format!("{relative}/{name}"));
        let is_dir = path.is_dir();
        if name == "__pycache__" || name == ".git" || (!is_dir && (name.ends_with(".pyc") || name.ends_with(".pyo"))) {
            continue;
        }
        let probe = if is_dir { format!("{relative}/") } else { relative.clone() };
        if ignore.is_some_and(|m| m.is_ignored(&probe) || m.is_ignored(&relative)) {
            continue;
        }
        if is_dir {
            walk(&path, &inside, &relative, ignore, out)?;
        } else {
            out.push((inside, path));
        }
    }
    Ok(())
}

/// A dependency list sorted as hatchling writes it (by its text).
fn sorted(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items.dedup();
    items
}

/// Core metadata as hatchling writes it for the fields this builder reads.
fn metadata(env: &Path, project: &toml::Table) -> Result<String> {
    let mut lines = vec!["Metadata-Version: 2.4".to_string()];
    let name = string(project, "name")?.ok_or_else(|| fail("pyproject.toml has no [project].name"))?;
    let version = string(project, "version")?.ok_or_else(|| fail("pyproject.toml has no static [project].version"))?;
    lines.push(format!("Name: {name}"));
    lines.push(format!("Version: {version}"));
    if let Some(summary) = string(project, "description")? {
        lines.push(format!("Summary: {summary}"));
    }
    if let Some(toml::Value::Table(urls)) = project.get("urls") {
        for (label, url) in urls {
            lines.push(format!("Project-URL: {label}, {}", url.as_str().unwrap_or_default()));
        }
    }
    for (field, header, email_header) in [("authors", "Author", "Author-email"), ("maintainers", "Maintainer", "Maintainer-email")] {
        let (mut names, mut emails) = (Vec::new(), Vec::new());
        if let Some(toml::Value::Array(people)) = project.get(field) {
            for person in people {
                let person_name = person.get("name").and_then(toml::Value::as_str);
                match (person_name, person.get("email").and_then(toml::Value::as_str)) {
                    (Some(n), Some(e)) => emails.push(format!("{n} <{e}>")),
                    (None, Some(e)) => emails.push(e.to_string()),
                    (Some(n), None) => names.push(n.to_string()),
                    (None, None) => {}
                }
            }
        }
        if !names.is_empty() {
            lines.push(format!("{header}: {}", names.join(", ")));
        }
        if !emails.is_empty() {
            lines.push(format!("{email_header}: {}", emails.join(", ")));
        }
    }
    match project.get("license") {
        Some(toml::Value::String(expression)) => lines.push(format!("License-Expression: {expression}")),
        Some(toml::Value::Table(license)) => {
            if let Some(text) = license.get("text").and_then(toml::Value::as_str) {
                lines.push(format!("License: {text}"));
            }
        }
        _ => {}
    }
    let keywords = strings(project.get("keywords"), "[project].keywords")?;
    if !keywords.is_empty() {
        lines.push(format!("Keywords: {}", keywords.join(",")));
    }
    for classifier in sorted(strings(project.get("classifiers"), "[project].classifiers")?) {
        lines.push(format!("Classifier: {classifier}"));
    }
    if let Some(python) = string(project, "requires-python")? {
        lines.push(format!("Requires-Python: {python}"));
    }
    for dependency in sorted(strings(project.get("dependencies"), "[project].dependencies")?) {
        lines.push(format!("Requires-Dist: {dependency}"));
    }
    if let Some(toml::Value::Table(extras)) = project.get("optional-dependencies") {
        for (extra, dependencies) in extras {
            lines.push(format!("Provides-Extra: {extra}"));
            for dependency in sorted(strings(Some(dependencies), "[project].optional-dependencies")?) {
                let joiner = if dependency.contains(';') {
                    format!("({}) and", dependency.split_once(';').map(|(_, m)| m.trim()).unwrap_or(""))
                } else {
                    String::new()
                };
                let requirement = dependency.split_once(';').map(|(r, _)| r.trim().to_string()).unwrap_or(dependency.clone());
                if joiner.is_empty() {
                    lines.push(format!("Requires-Dist: {requirement}; extra == '{extra}'"));
                } else {
                    lines.push(format!("Requires-Dist: {requirement}; {joiner} extra == '{extra}'"));
                }
            }
        }
    }
    let readme = match project.get("readme") {
        None => None,
        Some(toml::Value::String(file)) => {
            let kind = if file.to_ascii_lowercase().ends_with(".md") {
                "text/markdown"
            } else if file.to_ascii_lowercase().ends_with(".rst") {
                "text/x-rst"
            } else {
                "text/plain"
            };
            let path = env.join(file);
            Some((kind.to_string(), std::fs::read_to_string(&path).map_err(|e| fail(format!("readme {}: {e}", path.display())))?))
        }
        Some(toml::Value::Table(spec)) => {
            let kind = spec.get("content-type").and_then(toml::Value::as_str).unwrap_or("text/plain").to_string();
            let text = match (spec.get("file").and_then(toml::Value::as_str), spec.get("text").and_then(toml::Value::as_str)) {
                (Some(file), _) => {
                    let path = env.join(file);
                    std::fs::read_to_string(&path).map_err(|e| fail(format!("readme {}: {e}", path.display())))?
                }
                (None, Some(text)) => text.to_string(),
                (None, None) => return Err(fail("pyproject.toml: [project].readme needs a file or a text")),
            };
            Some((kind, text))
        }
        Some(_) => return Err(fail("pyproject.toml: [project].readme must be a file name or a table")),
    };
    let mut text = lines.join("\n");
    text.push('\n');
    if let Some((kind, body)) = readme {
        text.push_str(&format!("Description-Content-Type: {kind}\n\n{body}"));
    }
    Ok(text)
}

fn entry_points(project: &toml::Table) -> Option<String> {
    let mut groups: Vec<(String, &toml::Table)> = Vec::new();
    if let Some(scripts) = project.get("scripts").and_then(toml::Value::as_table) {
        groups.push(("console_scripts".into(), scripts));
    }
    if let Some(scripts) = project.get("gui-scripts").and_then(toml::Value::as_table) {
        groups.push(("gui_scripts".into(), scripts));
    }
    if let Some(toml::Value::Table(others)) = project.get("entry-points") {
        for (group, entries) in others {
            if let Some(entries) = entries.as_table() {
                groups.push((group.clone(), entries));
            }
        }
    }
    groups.retain(|(_, entries)| !entries.is_empty());
    if groups.is_empty() {
        return None;
    }
    let sections: Vec<String> = groups
        .into_iter()
        .map(|(group, entries)| {
            let mut text = format!("[{group}]\n");
            for (name, target) in entries {
                text.push_str(&format!("{name} = {}\n", target.as_str().unwrap_or_default()));
            }
            text
        })
        .collect();
    Some(sections.join("\n"))
}

/// The wheel's tag: `py3` when requires-python rules out Python 2, else `py2.py3`.
fn python_tag(project: &toml::Table) -> &'static str {
    let spec = project.get("requires-python").and_then(toml::Value::as_str).unwrap_or("").replace(' ', "");
    let py3_only = spec.split(',').any(|clause| {
        let version = clause.trim_start_matches(|c| "<>=!~".contains(c));
        let major = version.split('.').next().and_then(|m| m.parse::<u32>().ok());
        (clause.starts_with(">=") || clause.starts_with("~=") || clause.starts_with("==") || clause.starts_with('>'))
            && major.is_some_and(|m| m >= 3)
    });
    if py3_only {
        "py3"
    } else {
        "py2.py3"
    }
}

fn record_hash(bytes: &[u8]) -> String {
    format!("sha256={}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(bytes)))
}

/// Write `env`'s wheel into `dist` as hatchling's default wheel target would.
pub fn write_hatchling_wheel(env: &Path, dist: &Path) -> Result<PathBuf> {
    let text = std::fs::read_to_string(env.join("pyproject.toml"))
        .map_err(|_| fail(format!("{} does not appear to be a Python project: it has no pyproject.toml", env.display())))?;
    let pyproject: toml::Table = text.parse().map_err(|e| fail(format!("pyproject.toml: {e}")))?;
    let backend = table(&pyproject, &["build-system"]).and_then(|b| b.get("build-backend")).and_then(toml::Value::as_str);
    if backend != Some("hatchling.build") {
        return Err(fail(format!(
            "neither uv nor the `build` package is installed, and this client builds hatchling projects only \
             (pyproject.toml's build-backend is {}): install uv (`pip install uv`) or `pip install build`",
            backend.map(|b| format!("'{b}'")).unwrap_or_else(|| "not set".into())
        )));
    }
    let project = table(&pyproject, &["project"]).ok_or_else(|| fail("pyproject.toml has no [project] table"))?;
    if let Some(dynamic) = project.get("dynamic").and_then(toml::Value::as_array).filter(|d| !d.is_empty()) {
        let names: Vec<&str> = dynamic.iter().filter_map(toml::Value::as_str).collect();
        return Err(fail(format!("[project].dynamic ({}) needs hatchling itself: install uv or the `build` package", names.join(", "))));
    }
    let name = string(project, "name")?.ok_or_else(|| fail("pyproject.toml has no [project].name"))?;
    let version = string(project, "version")?.ok_or_else(|| fail("pyproject.toml has no static [project].version"))?;
    let dist_name = normalize_dist_name(&name);
    let files = select_files(env, &pyproject, &dist_name)?;
    let info = format!("{dist_name}-{}.dist-info", version.replace('-', "_"));
    let mut members: Vec<(String, Vec<u8>, u32)> = Vec::new();
    for (inside, path) in files {
        let bytes = std::fs::read(&path).map_err(|e| ClientError::io(&path, e))?;
        members.push((inside, bytes, 0o100644));
    }
    members.push((format!("{info}/METADATA"), metadata(env, project)?.into_bytes(), 0o644));
    let wheel = format!(
        "Wheel-Version: 1.0\nGenerator: gateway-rs {}\nRoot-Is-Purelib: true\nTag: {}-none-any\n",
        env!("CARGO_PKG_VERSION"),
        python_tag(project)
    );
    members.push((format!("{info}/WHEEL"), wheel.into_bytes(), 0o644));
    if let Some(points) = entry_points(project) {
        members.push((format!("{info}/entry_points.txt"), points.into_bytes(), 0o644));
    }
    let mut record = String::new();
    for (inside, bytes, _) in &members {
        record.push_str(&format!("{inside},{},{}\n", record_hash(bytes), bytes.len()));
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    members.push((format!("{info}/RECORD"), record.into_bytes(), 0o644));
    let filename = format!("{dist_name}-{}-{}-none-any.whl", version.replace('-', "_"), python_tag(project));
    std::fs::create_dir_all(dist).map_err(|e| ClientError::io(dist, e))?;
    let path = dist.join(filename);
    std::fs::write(&path, zip_bytes(&members)?).map_err(|e| ClientError::io(&path, e))?;
    Ok(path)
}

// ------------------------------------------------------------------ zip

/// 2020-02-02 00:00:00 in DOS form, the date hatchling stamps (reproducible builds).
const DOS_TIME: u16 = 0;
const DOS_DATE: u16 = ((2020 - 1980) << 9) | (2 << 5) | 2;

/// A deflated zip of `(name, bytes, unix mode)` members, in the order given.
pub fn zip_bytes(members: &[(String, Vec<u8>, u32)]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data, mode) in members {
        let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
        encoder.write_all(data).map_err(|e| fail(e.to_string()))?;
        let compressed = encoder.finish().map_err(|e| fail(e.to_string()))?;
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let (crc, offset) = (crc.sum(), out.len() as u32);
        let too_big = || fail("a wheel member over 4 GiB");
        let (size, packed) = (u32::try_from(data.len()).map_err(|_| too_big())?, u32::try_from(compressed.len()).map_err(|_| too_big())?);
        let common = |buf: &mut Vec<u8>| {
            buf.extend_from_slice(&20u16.to_le_bytes()); // version needed
            buf.extend_from_slice(&0u16.to_le_bytes()); // flags
            buf.extend_from_slice(&8u16.to_le_bytes()); // deflate
            buf.extend_from_slice(&DOS_TIME.to_le_bytes());
            buf.extend_from_slice(&DOS_DATE.to_le_bytes());
            buf.extend_from_slice(&crc.to_le_bytes());
            buf.extend_from_slice(&packed.to_le_bytes());
            buf.extend_from_slice(&size.to_le_bytes());
            buf.extend_from_slice(&(name.len() as u16).to_le_bytes());
            buf.extend_from_slice(&0u16.to_le_bytes()); // extra
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&compressed);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&0x0314u16.to_le_bytes()); // made by: unix, 2.0
        common(&mut central);
        central.extend_from_slice(&0u16.to_le_bytes()); // comment
        central.extend_from_slice(&0u16.to_le_bytes()); // disk
        central.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
        central.extend_from_slice(&(mode << 16).to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let (start, count) = (out.len() as u32, members.len() as u16);
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    Ok(out)
}

fn u16_at(bytes: &[u8], at: usize) -> Option<usize> {
    bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<usize> {
    bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// One member of a zip, by a predicate on its name: (name, bytes).
pub fn zip_member(zip: &[u8], wanted: impl Fn(&str) -> bool) -> Result<Option<(String, Vec<u8>)>> {
    let corrupt = || ClientError::Wheel("the built wheel is not a readable zip".into());
    let end = (0..zip.len().saturating_sub(21)).rev().find(|&at| zip[at..].starts_with(&[0x50, 0x4b, 0x05, 0x06])).ok_or_else(corrupt)?;
    let (count, mut at) = (u16_at(zip, end + 10).ok_or_else(corrupt)?, u32_at(zip, end + 16).ok_or_else(corrupt)?);
    for _ in 0..count {
        if u32_at(zip, at) != Some(0x0201_4b50) {
            return Err(corrupt());
        }
        let method = u16_at(zip, at + 10).ok_or_else(corrupt)?;
        let packed = u32_at(zip, at + 20).ok_or_else(corrupt)?;
        let (name_len, extra_len, comment_len) = (
            u16_at(zip, at + 28).ok_or_else(corrupt)?,
            u16_at(zip, at + 30).ok_or_else(corrupt)?,
            u16_at(zip, at + 32).ok_or_else(corrupt)?,
        );
        let local = u32_at(zip, at + 42).ok_or_else(corrupt)?;
        let name = String::from_utf8_lossy(zip.get(at + 46..at + 46 + name_len).ok_or_else(corrupt)?).into_owned();
        at += 46 + name_len + extra_len + comment_len;
        if !wanted(&name) {
            continue;
        }
        let data_at = local + 30 + u16_at(zip, local + 26).ok_or_else(corrupt)? + u16_at(zip, local + 28).ok_or_else(corrupt)?;
        let raw = zip.get(data_at..data_at + packed).ok_or_else(corrupt)?;
        let bytes = match method {
            0 => raw.to_vec(),
            8 => {
                let mut out = Vec::new();
                flate2::read::DeflateDecoder::new(raw).read_to_end(&mut out).map_err(|_| corrupt())?;
                out
            }
            _ => {
                return Err(ClientError::Wheel(format!(
                    "the built wheel stores {name} with zip method {method}, which this client cannot read"
                )))
            }
        };
        return Ok(Some((name, bytes)));
    }
    Ok(None)
}

/// `parse_wheel_requires_dist`: the `Requires-Dist` headers of the wheel's
/// `*.dist-info/METADATA` (folded lines unfolded), empty when it has none.
pub fn requires_dist(wheel: &[u8]) -> Result<Vec<String>> {
    let Some((_, metadata)) = zip_member(wheel, |name| name.ends_with(".dist-info/METADATA"))? else { return Ok(Vec::new()) };
    let text = String::from_utf8_lossy(&metadata);
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in text.split('\n').map(|l| l.trim_end_matches('\r')) {
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = headers.last_mut() {
                last.1.push('\n');
                last.1.push_str(line);
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            headers.push((key.to_string(), value.trim_start().to_string()));
        }
    }
    Ok(headers.into_iter().filter(|(k, _)| k.eq_ignore_ascii_case("Requires-Dist")).map(|(_, v)| v).collect())
}

/// The installer `bench install` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Installer {
    /// `uv pip install` (`--reinstall` unless `--no-upgrade`).
    #[default]
    Uv,
    /// `pip install` (`--upgrade` unless `--no-upgrade`).
    Pip,
}

impl Installer {
    /// The original's spelling (`uv`, `pip`).
    pub fn as_str(self) -> &'static str {
        match self {
            Installer::Uv => "uv",
            Installer::Pip => "pip",
        }
    }
}

/// `uv pip install [--reinstall] WHEEL` or `pip install [--upgrade] WHEEL`, its output
/// passed through; missing or failing, the original's words.
pub fn install(tool: Installer, no_upgrade: bool, wheel: &Path) -> Result<()> {
    let mut command: Vec<&str> = match tool {
        Installer::Uv => vec!["uv", "pip", "install"],
        Installer::Pip => vec!["pip", "install"],
    };
    if !no_upgrade {
        command.push(match tool {
            Installer::Uv => "--reinstall",
            Installer::Pip => "--upgrade",
        });
    }
    let status = std::process::Command::new(command[0])
        .args(&command[1..])
        .arg(wheel)
        .stdin(std::process::Stdio::null())
        // The installer's chatter is not the command's JSON.
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .status();
    match status {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ClientError::Failed(format!(
            "'{}' is not installed or not on PATH — install it (https://docs.astral.sh/uv/) or rerun with tool='pip' (`gateway bench install --tool pip`).",
            command[0]
        ))),
        Err(e) => Err(ClientError::Failed(format!("install failed ({e})"))),
        Ok(status) if !status.success() => Err(ClientError::Failed(format!("install failed (exit {})", status.code().unwrap_or(-1)))),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tags() {
        assert_eq!(normalize_dist_name("Demo.Env--x"), "demo_env_x");
        let project = |t: &str| t.parse::<toml::Table>().unwrap();
        assert_eq!(python_tag(&project("requires-python = \">=3.10\"")), "py3");
        assert_eq!(python_tag(&project("")), "py2.py3");
    }

    #[test]
    fn a_zip_we_write_reads_back() {
        let members = vec![
            ("a/b.py".to_string(), b"x = 1\n".to_vec(), 0o100644),
            (
                "d-1.dist-info/METADATA".to_string(),
                b"Name: d\nRequires-Dist: a\nRequires-Dist: b; extra == 'x'\n\nbody\nRequires-Dist: no\n".to_vec(),
                0o644,
            ),
        ];
        let zip = zip_bytes(&members).unwrap();
        assert_eq!(zip_member(&zip, |n| n == "a/b.py").unwrap().unwrap().1, b"x = 1\n");
        assert_eq!(requires_dist(&zip).unwrap(), vec!["a", "b; extra == 'x'"]);
        assert!(zip_member(&zip[..10], |_| true).is_err());
    }
}

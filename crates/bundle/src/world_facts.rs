//! What the hub reads out of a stored world bundle, once per version: the world's
//! own pass bar, answered as `passThreshold` by `resolve-version` (spec §1.5) and
//! read by `worlds ci` (ours and the original's) as the default `--fail-under`.
//!
//! A world names its bar in its manifest:
//!
//! ```toml
//! # gateway-env.toml (schema and mock-tools worlds; an api bundle carries the
//! # world's under server/world/)
//! [eval]
//! pass_threshold = 0.8
//!
//! # pyproject.toml (harbor and verifiers worlds, which have no gateway-env.toml)
//! [tool.gateway]
//! pass_threshold = 0.8
//! ```
//!
//! The first that names a number from 0 to 1 wins; anything else names no bar (and
//! `worlds ci` falls back to 0.7). Only the members that can hold a bar are read from
//! the tarball, each capped; this module neither fetches nor caches (the server does).

use crate::BundleError;
use std::collections::BTreeMap;
use std::io::Read;

/// Where a bundle may name its pass bar, in the order they are consulted.
pub const BAR_SOURCES: [&str; 3] = ["gateway-env.toml", "server/world/gateway-env.toml", "pyproject.toml"];
/// The most read of any one member (a manifest is a few hundred bytes).
pub const MEMBER_CAP: u64 = 256 * 1024;

/// A bar from `gateway-env.toml` text: `[eval] pass_threshold`.
pub fn manifest_bar(text: &str) -> Result<Option<f64>, BundleError> {
    bar_at(text, &["eval"], "gateway-env.toml [eval] pass_threshold")
}

/// A bar from `pyproject.toml` text: `[tool.gateway] pass_threshold`.
pub fn pyproject_bar(text: &str) -> Result<Option<f64>, BundleError> {
    bar_at(text, &["tool", "gateway"], "pyproject.toml [tool.gateway] pass_threshold")
}

fn bar_at(text: &str, tables: &[&str], shown: &str) -> Result<Option<f64>, BundleError> {
    let Ok(root) = text.parse::<toml::Table>() else { return Ok(None) };
    let mut table = &root;
    for name in tables {
        match table.get(*name) {
            Some(toml::Value::Table(inner)) => table = inner,
            _ => return Ok(None),
        }
    }
    let value = match table.get("pass_threshold") {
        None => return Ok(None),
        Some(toml::Value::Float(x)) => *x,
        Some(toml::Value::Integer(n)) => *n as f64,
        Some(other) => {
            return Err(BundleError::InvalidPassBar(format!("{shown} must be a number from 0 to 1, not a {}", other.type_str())))
        }
    };
    if (0.0..=1.0).contains(&value) {
        Ok(Some(value))
    } else {
        Err(BundleError::InvalidPassBar(format!("{shown} must be a number from 0 to 1, not {value}")))
    }
}

/// The bar named by a bundle's members (path → text), in [`BAR_SOURCES`] order; a
/// member naming an invalid bar names none.
pub fn pass_threshold(members: &BTreeMap<String, String>) -> Option<f64> {
    BAR_SOURCES.iter().find_map(|path| {
        let text = members.get(*path)?;
        let found = if path.ends_with("pyproject.toml") { pyproject_bar(text) } else { manifest_bar(text) };
        found.ok().flatten()
    })
}

/// The members of `wanted` found in a `.tar.gz` stream, as UTF-8 text (each at most
/// [`MEMBER_CAP`] bytes; a larger or non-UTF-8 member is left out). Stops reading as
/// soon as every wanted member is found.
pub fn read_members(tgz: impl Read, wanted: &[&str]) -> std::io::Result<BTreeMap<String, String>> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tgz));
    let mut found = BTreeMap::new();
    for entry in archive.entries()? {
        let entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path()?.to_string_lossy().trim_start_matches("./").to_string();
        if !wanted.contains(&path.as_str()) || entry.size() > MEMBER_CAP {
            continue;
        }
        let mut bytes = Vec::new();
        entry.take(MEMBER_CAP).read_to_end(&mut bytes)?;
        if let Ok(text) = String::from_utf8(bytes) {
            found.insert(path, text);
        }
        if found.len() == wanted.len() {
            break;
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_from_manifests() {
        assert_eq!(manifest_bar("[eval]\npass_threshold = 0.8\n").unwrap(), Some(0.8));
        assert_eq!(manifest_bar("[eval]\npass_threshold = 1\n").unwrap(), Some(1.0));
        assert_eq!(manifest_bar("[environment]\nname = 'x'\n").unwrap(), None);
        assert_eq!(manifest_bar("not toml [").unwrap(), None);
        assert!(manifest_bar("[eval]\npass_threshold = 1.5\n").unwrap_err().to_string().contains("from 0 to 1, not 1.5"));
        assert!(manifest_bar("[eval]\npass_threshold = 'high'\n").unwrap_err().to_string().ends_with("not a string"));
        assert_eq!(pyproject_bar("[project]\nname='w'\n[tool.gateway]\npass_threshold = 0.6\n").unwrap(), Some(0.6));
        assert_eq!(pyproject_bar("[tool.other]\npass_threshold = 0.6\n").unwrap(), None);
    }

    #[test]
    fn the_first_valid_source_wins() {
        let members = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let env = "[eval]\npass_threshold = 0.9\n";
        let pyproject = "[tool.gateway]\npass_threshold = 0.5\n";
        assert_eq!(pass_threshold(&members(&[("gateway-env.toml", env), ("pyproject.toml", pyproject)])), Some(0.9));
        assert_eq!(pass_threshold(&members(&[("server/world/gateway-env.toml", env)])), Some(0.9));
        assert_eq!(
            pass_threshold(&members(&[("gateway-env.toml", "[eval]\npass_threshold = 9\n"), ("pyproject.toml", pyproject)])),
            Some(0.5)
        );
        assert_eq!(pass_threshold(&members(&[("README.md", env)])), None);
    }

    #[test]
    fn members_come_out_of_a_tarball() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("gateway-env.toml"), "[eval]\npass_threshold = 0.75\n").unwrap();
        std::fs::write(dir.path().join("README.md"), "hello\n").unwrap();
        let tgz = crate::archive::build_source_tarball(dir.path()).unwrap();
        let found = read_members(&tgz[..], &BAR_SOURCES).unwrap();
        assert_eq!(found.keys().collect::<Vec<_>>(), ["gateway-env.toml"]);
        assert_eq!(pass_threshold(&found), Some(0.75));
    }
}

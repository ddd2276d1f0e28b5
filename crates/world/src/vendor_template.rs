//! Templates worth starting from (issue 26 item 9): `schema init PATH --connector
//! github --api` (or `slack`) writes the repository's vendor-faithful example world —
//! `examples/github`, `examples/slack`, compiled into the binary by `build.rs` — not
//! the original's template plus a starter API over its entities. Its routes are the
//! vendor's own (`/repos/{owner}/{repo}/issues/{number}`, `POST /api/chat.postMessage`),
//! named as the vendor names them (`get_issue`), over seed rows and the sub-entities
//! a client needs (issue comments, labels as objects), with the vendor SDK workload
//! that proves it (`sdk/`).
//!
//! Without `--api`, `--connector github` still writes the original's template byte for
//! byte (the parity the templates are held to).

use crate::error::{Error, Result};
use crate::json::Value;
use std::path::Path;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/vendor_worlds.rs"));
}

/// Whether `slug` has a vendor world to start from.
pub fn has_vendor_world(slug: &str) -> bool {
    embedded::VENDOR_WORLDS.iter().any(|(name, _)| *name == slug)
}

/// The slugs that have one.
pub fn vendor_worlds() -> impl Iterator<Item = &'static str> {
    embedded::VENDOR_WORLDS.iter().map(|(name, _)| *name)
}

/// The manifest's `[environment]` `name` and `connector` set to the world's name and
/// the template it came from.
fn manifest(text: &str, name: &str, slug: &str) -> String {
    let mut section = String::new();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            section = trimmed.to_string();
        }
        let key = trimmed.split('=').next().unwrap_or_default().trim();
        match (section.as_str(), key) {
            ("[environment]", "name") => out.push_str(&format!("name = \"{name}\"")),
            ("[environment]", "connector") => out.push_str(&format!("connector = \"{slug}\"")),
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Write `slug`'s vendor world at `destination` (absent or an empty directory) as the
/// world `name` (default `<slug>-world`), and compile it: the domain it targets. On
/// any failure the destination is removed again.
pub fn init_vendor_world(destination: &Path, slug: &str, name: Option<&str>) -> Result<Value> {
    let Some((_, files)) = embedded::VENDOR_WORLDS.iter().find(|(name, _)| *name == slug) else {
        return crate::error::fail("template", format!("{slug} has no vendor world to start from"), "/init/connector").map_err(Into::into);
    };
    let name = name.map(str::to_string).unwrap_or_else(|| format!("{slug}-world"));
    if !crate::scaffold::is_slug(&name) {
        return crate::error::fail("identity", "Use lowercase letters, digits, - or _", "/init/name").map_err(Into::into);
    }
    let occupied =
        destination.exists() && (!destination.is_dir() || std::fs::read_dir(destination).map(|mut d| d.next().is_some()).unwrap_or(true));
    if occupied {
        return crate::error::fail("state_exists", "Destination must be a new or empty directory", "/init").map_err(Into::into);
    }
    let written = (|| -> Result<Value> {
        for (path, bytes) in files.iter() {
            let target = destination.join(path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(e, parent))?;
            }
            let bytes = match *path {
                "gateway-env.toml" => manifest(&String::from_utf8_lossy(bytes), &name, slug).into_bytes(),
                _ => bytes.to_vec(),
            };
            std::fs::write(&target, bytes).map_err(|e| Error::io(e, &target))?;
        }
        let (contract, _) = crate::lifecycle::compile_world(destination)?;
        Ok(contract.target().clone())
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(destination);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_examples_are_embedded_without_what_compiling_generates() {
        assert_eq!(vendor_worlds().collect::<Vec<_>>(), ["github", "slack"]);
        for (_, files) in embedded::VENDOR_WORLDS {
            let paths: Vec<&str> = files.iter().map(|(path, _)| *path).collect();
            for wanted in ["connector.toml", "gateway-env.toml", "schema/world.json", "data/initial.json"] {
                assert!(paths.contains(&wanted), "{wanted} in {paths:?}");
            }
            assert!(!paths.iter().any(|p| p.starts_with("db/") || p.ends_with("lock.json")), "{paths:?}");
        }
    }

    #[test]
    fn the_manifest_names_the_world_and_its_template() {
        let text = "[environment]\nname = \"github\"\nkind = \"mock-tools\"\nconnector = \"custom\"\n\n[schema]\nname = \"x\"\n";
        assert_eq!(
            manifest(text, "my-gh", "github"),
            "[environment]\nname = \"my-gh\"\nkind = \"mock-tools\"\nconnector = \"github\"\n\n[schema]\nname = \"x\"\n"
        );
    }
}

//! Embeds the built-in connector templates (`templates/<slug>/…` and the shared
//! `templates/base.json`) as a table of `include_bytes!`, so the templates stay data files
//! of the repository and cargo rebuilds when any of them (or a new one) appears; and the
//! vendor-faithful example worlds (`examples/github`, `examples/slack`: their authored
//! files, not what compiling generates) that `schema init --api` starts from.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).expect("template directory").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).expect("UTF-8 template file name");
        if name.starts_with('.') || name == "__pycache__" {
            continue;
        }
        if path.is_dir() {
            files(root, &path, out);
        } else {
            let relative = path.strip_prefix(root).expect("under the template").to_str().expect("UTF-8 path").replace('\\', "/");
            out.push((relative, path));
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("templates");
    println!("cargo:rerun-if-changed=templates");
    let mut slugs: Vec<PathBuf> =
        std::fs::read_dir(&root).expect("templates/").map(|e| e.expect("entry").path()).filter(|p| p.is_dir()).collect();
    slugs.sort();
    let mut code = String::from("/// Every built-in template: (slug, [(path in the template, bytes)]), by slug.\npub static TEMPLATES: &[(&str, &[(&str, &[u8])])] = &[\n");
    for dir in &slugs {
        let slug = dir.file_name().and_then(|n| n.to_str()).expect("UTF-8 slug");
        let mut found = Vec::new();
        files(dir, dir, &mut found);
        writeln!(code, "    ({slug:?}, &[").unwrap();
        for (relative, path) in found {
            writeln!(code, "        ({relative:?}, include_bytes!({:?})),", path.to_str().expect("UTF-8 path")).unwrap();
        }
        code.push_str("    ]),\n");
    }
    code.push_str("];\n");
    writeln!(
        code,
        "/// The shared `schema/base.json` every template's world gets.\npub static BASE: &[u8] = include_bytes!({:?});",
        root.join("base.json").to_str().expect("UTF-8 path")
    )
    .unwrap();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("templates.rs"), code).expect("write templates.rs");
    std::fs::write(out.join("vendor_worlds.rs"), vendor_worlds(&manifest.join("../../examples"))).expect("write vendor_worlds.rs");
}

/// The examples `schema init --connector <slug> --api` writes.
const VENDOR_WORLDS: [&str; 2] = ["github", "slack"];

/// What compiling a world writes: left out (init compiles the world it writes).
fn generated(relative: &str) -> bool {
    relative.starts_with("db/")
        || ["schema/lock.json", "schema/runtime.json", "schema/README.md", "schema/base.json", "tool-schemas.json"].contains(&relative)
}

fn vendor_worlds(examples: &Path) -> String {
    let mut code = String::from("/// The vendor worlds: (slug, [(path in the world, bytes)]), by slug.\npub static VENDOR_WORLDS: &[(&str, &[(&str, &[u8])])] = &[\n");
    for slug in VENDOR_WORLDS {
        let dir = examples.join(slug);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut found = Vec::new();
        files(&dir, &dir, &mut found);
        writeln!(code, "    ({slug:?}, &[").unwrap();
        for (relative, path) in found.into_iter().filter(|(relative, _)| !generated(relative)) {
            writeln!(code, "        ({relative:?}, include_bytes!({:?})),", path.to_str().expect("UTF-8 path")).unwrap();
        }
        code.push_str("    ]),\n");
    }
    code.push_str("];\n");
    code
}

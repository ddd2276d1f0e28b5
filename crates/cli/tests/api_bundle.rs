//! `gateway worlds schema api-bundle --binary copy|link|image`: what `server/` carries
//! to run the world — a copy of this binary (the default, as the original's bundle is
//! self-contained), a symbolic link to it, or nothing (a Dockerfile FROM the gateway
//! image). Beside `server/`, the three bundles are the same bytes.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_gateway");

fn bundle(world: &Path, out: &Path, binary: Option<&str>) {
    let mut command = Command::new(BIN);
    command.args(["worlds", "schema", "api-bundle"]).arg(world).arg("--out").arg(out);
    if let Some(binary) = binary {
        command.args(["--binary", binary]);
    }
    let built = command.output().unwrap();
    assert!(built.status.success(), "{binary:?}: {}", String::from_utf8_lossy(&built.stderr));
}

#[test]
fn the_bundle_copies_links_or_leaves_out_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let world = gateway_test_support::copy_example("helpdesk", &dir.path().join("w"));
    let (copy, link, image) = (dir.path().join("copy"), dir.path().join("link"), dir.path().join("image"));
    bundle(&world, &copy, None);
    bundle(&world, &link, Some("link"));
    bundle(&world, &image, Some("image"));

    let copied = std::fs::symlink_metadata(copy.join("server/gateway")).unwrap();
    assert!(copied.is_file(), "the default copies the binary");
    assert_eq!(copied.len(), std::fs::metadata(BIN).unwrap().len());

    let linked = std::fs::symlink_metadata(link.join("server/gateway")).unwrap();
    assert!(linked.file_type().is_symlink(), "--binary link links it");
    assert_eq!(std::fs::read_link(link.join("server/gateway")).unwrap(), std::fs::canonicalize(BIN).unwrap());
    let runs = Command::new(link.join("server/gateway")).arg("--version").output().unwrap();
    assert!(runs.status.success(), "the linked binary runs");

    assert!(!image.join("server/gateway").exists(), "--binary image carries no binary");
    let dockerfile = std::fs::read_to_string(image.join("server/Dockerfile")).unwrap();
    assert!(dockerfile.contains("FROM ${GATEWAY_IMAGE}"), "{dockerfile}");

    for file in ["openapi.json", "gateway-api-world.toml", "seed/base.json"] {
        let bytes = std::fs::read(copy.join(file)).unwrap();
        assert_eq!(bytes, std::fs::read(link.join(file)).unwrap(), "{file}");
        assert_eq!(bytes, std::fs::read(image.join(file)).unwrap(), "{file}");
    }
}

#[test]
fn an_unknown_binary_choice_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["worlds", "schema", "api-bundle", "w", "--out"])
        .arg(dir.path().join("b"))
        .args(["--binary", "hardlink"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[possible values: copy, link, image]"));
}

//! `bench pull` within the archive limits (issue 17 item 6), against `gateway hub serve`
//! on loopback: a bundle past a limit the environment sets (GATEWAY_ARCHIVE_MAX_BYTES,
//! _MAX_MEMBER_BYTES, _MAX_MEMBERS) is refused, naming the bundle, the member and the
//! limit, and leaves nothing behind — no target, no scratch directory; the same bundles
//! pull within the defaults, into a new directory or over an existing one.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::*;

/// Upload `tarball` as the next version of `slug` through the hub's API (the calls
/// `bench push` makes, with a bundle of the test's own making).
fn upload(server: &Server, slug: &str, tarball: &[u8]) {
    use base64::Engine as _;
    let http = reqwest::blocking::Client::new();
    let api = format!("{}/api/public/benchmark-containers", server.host);
    let post = |path: &str, body: Value| -> Value {
        let answer = http.post(format!("{api}{path}")).basic_auth(&server.public, Some(&server.secret)).json(&body).send().unwrap();
        assert!(answer.status().is_success(), "{path}: {}", answer.text().unwrap());
        answer.json().unwrap()
    };
    let digest = <sha2::Sha256 as sha2::Digest>::digest(tarball);
    let sha = base64::engine::general_purpose::STANDARD.encode(digest);
    let container = post("/resolve", json!({"slug": slug}))["containerId"].as_str().unwrap().to_string();
    let version = post(
        "/versions",
        json!({"containerId": container, "contentHash": hex(&digest), "bundleSha256": sha, "bundleSizeBytes": tarball.len(),
               "fileManifest": [], "branch": "main"}),
    );
    let put = http.put(version["uploadUrl"].as_str().unwrap()).header("x-amz-checksum-sha256", &sha).body(tarball.to_vec()).send().unwrap();
    assert!(put.status().is_success(), "upload: {}", put.text().unwrap());
    post(&format!("/versions/{}/finalize", version["versionId"].as_str().unwrap()), json!({"branch": "main"}));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A `.tar.gz` of `files` (name, size of repeated zero bytes).
fn bundle(files: &[(String, usize)]) -> Vec<u8> {
    let files: Vec<(String, Vec<u8>)> = files.iter().map(|(name, size)| (name.clone(), vec![0u8; *size])).collect();
    gateway_bundle::archive::gzip_bytes(&gateway_bundle::archive::tar_bytes(&files))
}

/// `gateway bench pull SLUG -t TARGET` in `cwd` with `env` on top of the hub's keys.
fn pull(server: &Server, slug: &str, target: &str, cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(GATEWAY);
    command
        .args(["bench", "pull", slug, "-t", target])
        .current_dir(cwd)
        .env("GATEWAY_HOST", &server.host)
        .env("GATEWAY_PUBLIC_KEY", &server.public)
        .env("GATEWAY_SECRET_KEY", &server.secret)
        .stdin(Stdio::null());
    for name in
        ["GATEWAY_ARCHIVE_MAX_MEMBERS", "GATEWAY_ARCHIVE_MAX_BYTES", "GATEWAY_ARCHIVE_MAX_MEMBER_BYTES", "GATEWAY_ARCHIVE_MAX_RATIO"]
    {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    command.output().unwrap()
}

/// What `cwd` holds besides the hub's data directory.
fn left_in(cwd: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(cwd).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n != "data").collect();
    names.sort();
    names
}

fn refused(out: &Output, said: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "not refused: {stderr}");
    assert!(stderr.contains(said), "expected {said:?} in: {stderr}");
}

#[test]
fn a_small_bomb_is_refused_past_a_lowered_limit_and_pulls_within_the_defaults() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let server = start(&work.join("data"));
    // 4 MiB of zeros in one member: a few KiB gzipped.
    upload(&server, "bomb", &bundle(&[("README.md".into(), 10), ("bomb.bin".into(), 4 << 20)]));

    let out = pull(&server, "bomb", "out", work, &[("GATEWAY_ARCHIVE_MAX_BYTES", "1MiB")]);
    refused(
        &out,
        "Error: bundle bomb@latest refused: the members up to bomb.bin unpack to 4194314 bytes, past the limit of 1048576 bytes in all (GATEWAY_ARCHIVE_MAX_BYTES)",
    );
    assert!(left_in(work).is_empty(), "left behind: {:?}", left_in(work));

    let out = pull(&server, "bomb", "out", work, &[("GATEWAY_ARCHIVE_MAX_MEMBER_BYTES", "1000000")]);
    refused(&out, "bundle bomb@latest refused: member bomb.bin unpacks to 4194304 bytes, past the limit of 1000000 bytes per member (GATEWAY_ARCHIVE_MAX_MEMBER_BYTES)");
    assert!(left_in(work).is_empty(), "left behind: {:?}", left_in(work));

    // An existing target is left as it was.
    std::fs::create_dir(work.join("mine")).unwrap();
    std::fs::write(work.join("mine/notes.txt"), "mine").unwrap();
    let out = pull(&server, "bomb", "mine", work, &[("GATEWAY_ARCHIVE_MAX_BYTES", "1MiB")]);
    refused(&out, "past the limit of 1048576 bytes in all");
    assert_eq!(left_in(&work.join("mine")), ["notes.txt"]);
    assert_eq!(left_in(work), ["mine"]);

    // A value that is not a limit is refused by name.
    let out = pull(&server, "bomb", "out", work, &[("GATEWAY_ARCHIVE_MAX_MEMBERS", "many")]);
    refused(&out, "GATEWAY_ARCHIVE_MAX_MEMBERS must be a positive whole number, not \"many\"");

    // Within the defaults the same bundle pulls, into a new directory or over one.
    let out = pull(&server, "bomb", "out", work, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::metadata(work.join("out/bomb.bin")).unwrap().len(), 4 << 20);
    assert!(work.join("out/.gateway/.env-metadata.json").is_file());
    let out = pull(&server, "bomb", "mine", work, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(left_in(&work.join("mine")), [".gateway", "README.md", "bomb.bin", "notes.txt"]);
    assert_eq!(left_in(work), ["mine", "out"]);
}

#[test]
fn too_many_members_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let server = start(&work.join("data"));
    let files: Vec<(String, usize)> = (0..40).map(|i| (format!("pkg/f{i:02}.txt"), 3)).collect();
    upload(&server, "many", &bundle(&files));
    let out = pull(&server, "many", "out", work, &[("GATEWAY_ARCHIVE_MAX_MEMBERS", "25")]);
    refused(
        &out,
        "Error: bundle many@latest refused: member pkg/f25.txt is one more than the limit of 25 members (GATEWAY_ARCHIVE_MAX_MEMBERS)",
    );
    assert!(left_in(work).is_empty(), "left behind: {:?}", left_in(work));
    let out = pull(&server, "many", "out", work, &[("GATEWAY_ARCHIVE_MAX_MEMBERS", "40")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(left_in(&work.join("out/pkg")).len(), 40);
}

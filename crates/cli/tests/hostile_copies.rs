//! Copies of a world never carry what lies outside it: a symbolic link in a connector
//! world stops `schema api-bundle` and `bench push` (which pushes that bundle), naming
//! the link, with nothing written; a pulled bundle whose tarball holds a link, a hard
//! link or a `../` member is refused with nothing extracted (the bundle is served by a
//! hostile hub on loopback).

use gateway_test_support::tar_member;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::*;

const SECRET: &[u8] = b"the-secret-outside-the-world";

/// A helpdesk world whose `data/linked` is a symlink to a folder outside it holding a
/// secret.
fn linked_world(top: &Path) -> PathBuf {
    let world = gateway_test_support::copy_example("helpdesk", &top.join("helpdesk"));
    let outside = top.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink(&outside, world.join("data/linked")).unwrap();
    world
}

/// Every file under `root` holding `needle`.
fn holding(root: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            found.extend(holding(&path, needle));
        } else if kind.is_file() && std::fs::read(&path).unwrap().windows(needle.len()).any(|w| w == needle) {
            found.push(path);
        }
    }
    found
}

#[test]
fn hostile_api_bundle_refuses_a_symlinked_folder() {
    let dir = tempfile::tempdir().unwrap();
    let world = linked_world(dir.path());
    let out = dir.path().join("bundle");
    let built = Command::new(GATEWAY).args(["worlds", "schema", "api-bundle"]).arg(&world).arg("--out").arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(!built.status.success(), "bundled: {stderr}");
    assert!(
        stderr.contains("refusing to bundle data/linked: it is a symlink (") && stderr.contains("never follows links out of the world"),
        "{stderr}"
    );
    assert!(!out.exists(), "the bundle was written");
    assert_eq!(holding(dir.path(), SECRET), [dir.path().join("outside/secret.txt")]);
}

#[test]
fn hostile_bench_push_of_a_connector_world_refuses_a_symlinked_folder() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = start(&data);
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    linked_world(&work);
    let (success, stdout, stderr) = run(&server, Path::new(GATEWAY), &["bench", "push", "helpdesk"], &work);
    assert!(!success, "pushed: {stdout}");
    assert!(stderr.contains("refusing to bundle data/linked: it is a symlink ("), "{stderr}");
    assert!(holding(&data, SECRET).is_empty(), "the hub holds the secret");
    let (logged, listed, _) = run(&server, Path::new(GATEWAY), &["bench", "log", "helpdesk"], &work);
    assert!(!logged, "a version was made: {listed}");
}

/// A hub that resolves every version to `tarball`, served from its own port.
fn hostile_hub(tarball: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = format!("http://{}", listener.local_addr().unwrap());
    let bundle_url = format!("{host}/bundle.tar.gz");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut line, mut length) = (String::new(), 0usize);
            reader.read_line(&mut line).unwrap();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some(value) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let (kind, body) = if line.starts_with("GET /bundle.tar.gz") {
                ("application/gzip", tarball.clone())
            } else {
                let resolved = format!(
                    r#"{{"versionId": "ver_1", "contentHash": "abc", "branch": "main", "downloadUrl": "{bundle_url}", "bundleSha256": null}}"#
                );
                ("application/json", resolved.into_bytes())
            };
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body));
        }
    });
    host
}

#[test]
fn hostile_pull_refuses_links_and_escapes_in_the_bundle() {
    let ok_member = tar_member("README.md", b'0', "", b"fine");
    for (label, bad, said) in [
        ("symlink", tar_member("linked", b'2', "/etc", b""), "refusing link member in archive: linked"),
        ("hard link", tar_member("hard", b'1', "../outside", b""), "refusing link member in archive: hard"),
        ("parent escape", tar_member("../evil.txt", b'0', "", b"evil"), "unsafe path in archive: ../evil.txt"),
        ("nested escape", tar_member("a/../../evil.txt", b'0', "", b"evil"), "unsafe path in archive: a/../../evil.txt"),
    ] {
        let mut tar = [ok_member.clone(), bad].concat();
        tar.extend_from_slice(&[0u8; 1024]);
        let host = hostile_hub(gateway_bundle::archive::gzip_bytes(&tar));
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let pulled = Command::new(GATEWAY)
            .args(["bench", "pull", "helpdesk", "-t", "copy"])
            .current_dir(&work)
            .env("GATEWAY_HOST", &host)
            .env("GATEWAY_PUBLIC_KEY", "pk-lf-x")
            .env("GATEWAY_SECRET_KEY", "sk-lf-x")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&pulled.stderr);
        assert!(!pulled.status.success(), "{label}: pulled");
        assert!(stderr.contains("bundle helpdesk@latest refused: ") && stderr.contains(said), "{label}: {stderr}");
        assert!(!work.join("copy").exists(), "{label}: something was extracted");
        assert!(!work.join("evil.txt").exists() && !dir.path().join("evil.txt").exists(), "{label}: escaped");
        assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "{label}: left behind");
    }
}

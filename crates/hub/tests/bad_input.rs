//! The hub's refusals: crafted tarballs, checksum mismatches, unuploaded finalizes,
//! unknown refs, existing tags, malformed slugs, wrong keys, other projects' containers
//! and oversized bodies. Each is refused with a message and leaves the stored state usable.

use gateway_bundle::archive::{gzip_bytes, sha256_base64, tar_bytes};
use gateway_bundle::extract::{safe_extract_file, ExtractLimits};
use gateway_hub::server::{Hub, Limits};
use gateway_hub::HubConfig;
use gateway_test_support::tar_member;
use gateway_world::json::{self, object, Value};
use std::path::Path;

// ------------------------------------------------------------------ crafted archives

fn archive(members: &[Vec<u8>]) -> Vec<u8> {
    let mut tar: Vec<u8> = members.concat();
    tar.extend_from_slice(&[0u8; 1024]);
    gzip_bytes(&tar)
}

/// Extract `tgz` (written to a file beside `dest`) into `dest`.
fn extract(tgz: &[u8], dest: &Path) -> Result<usize, gateway_bundle::BundleError> {
    let file = dest.with_extension("tar.gz");
    std::fs::write(&file, tgz).unwrap();
    safe_extract_file(&file, dest, ExtractLimits::default())
}

#[test]
fn crafted_archives_are_refused_before_anything_is_written() {
    let cases = [
        ("parent escape", archive(&[tar_member("ok.txt", b'0', "", b"fine"), tar_member("../evil.txt", b'0', "", b"x")])),
        ("nested parent escape", archive(&[tar_member("a/../../evil.txt", b'0', "", b"x")])),
        ("absolute path", archive(&[tar_member("/tmp/evil.txt", b'0', "", b"x")])),
        ("symlink", archive(&[tar_member("link", b'2', "/etc/passwd", b"")])),
        ("hard link", archive(&[tar_member("hard", b'1', "../outside", b"")])),
        ("device", archive(&[tar_member("dev", b'3', "", b"")])),
        ("fifo", archive(&[tar_member("fifo", b'6', "", b"")])),
    ];
    for (label, tgz) in cases {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        let refused = extract(&tgz, &dest);
        assert!(refused.is_err(), "{label} was accepted");
        let written: Vec<_> = std::fs::read_dir(&dest).unwrap().collect();
        assert!(written.is_empty(), "{label}: something was written before the refusal");
        assert!(!dir.path().join("evil.txt").exists(), "{label} escaped");
    }
    let dir = tempfile::tempdir().unwrap();
    assert!(extract(b"not a gzip stream", &dir.path().join("garbage")).is_err());
    let honest = archive(&[tar_member("dir/ok.txt", b'0', "", b"fine")]);
    let dest = dir.path().join("honest");
    assert!(extract(&honest, &dest).is_ok());
    assert_eq!(std::fs::read(dest.join("dir/ok.txt")).unwrap(), b"fine");
}

// ------------------------------------------------------------------ the HTTP surface

struct Client {
    http: reqwest::blocking::Client,
    api: String,
    auth: (String, String),
}

impl Client {
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.api);
        let request = match method {
            "GET" => self.http.get(url),
            "PUT" => self.http.put(url),
            _ => self.http.post(url),
        };
        let request = request.basic_auth(&self.auth.0, Some(&self.auth.1));
        let request = match body {
            Some(body) => request.header("content-type", "application/json").body(json::canonical(body)),
            None => request,
        };
        let response = request.send().expect("request");
        let status = response.status().as_u16();
        let text = response.text().unwrap_or_default();
        (status, json::parse(&text).map(|p| p.value).unwrap_or(Value::Str(text)))
    }
}

async fn start(limits: Limits) -> (String, (String, String), (String, String), std::path::PathBuf) {
    let data = tempfile::tempdir().unwrap().keep();
    let config = HubConfig { data: data.clone(), database: None, objects: None };
    let hub: Hub = config.open(None, limits).await.expect("open hub");
    let (_, public, secret) = gateway_hub::create_key(hub.meta.as_ref(), "one").await.expect("key");
    let (_, other_public, other_secret) = gateway_hub::create_key(hub.meta.as_ref(), "two").await.expect("key");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(gateway_hub::server::serve_on(hub, listener));
    (format!("http://{addr}/api/public/benchmark-containers"), (public, secret), (other_public, other_secret), data)
}

/// Every file under `dir`, relative.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path).into_iter().map(|f| format!("{}/{f}", entry.file_name().to_string_lossy())));
        } else {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found.sort();
    found
}

/// A request body of unknown length (sent chunked, so only the stream itself can be counted).
fn chunked(bytes: Vec<u8>) -> reqwest::blocking::Body {
    reqwest::blocking::Body::new(std::io::Cursor::new(bytes))
}

fn text(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

#[test]
fn refusals_leave_the_hub_consistent() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let limits = Limits { max_json_bytes: 64 * 1024, max_object_bytes: 256 * 1024, ..Limits::default() };
    let (api, auth, other, data) = runtime.block_on(start(limits));
    let http = reqwest::blocking::Client::new();
    let one = Client { http: http.clone(), api: api.clone(), auth };
    let two = Client { http: http.clone(), api: api.clone(), auth: other };
    let wrong = Client { http: http.clone(), api: api.clone(), auth: ("pk-lf-nobody".into(), "sk-lf-wrong".into()) };

    let (status, _) = wrong.call("POST", "/resolve", Some(&object([("slug", Value::str("demo"))])));
    assert_eq!(status, 401, "wrong keys");

    // A body nested far past the JSON reader's limit is refused; the hub keeps serving.
    let deep = format!("{}{}", "[".repeat(3000), "]".repeat(3000));
    let answer = http.post(format!("{api}/resolve")).basic_auth(&one.auth.0, Some(&one.auth.1)).body(deep).send().unwrap();
    assert_eq!(answer.status().as_u16(), 400, "a deeply nested body");

    let (status, answer) = one.call("POST", "/resolve", Some(&object([("slug", Value::str("Not A Slug!"))])));
    assert!((400..500).contains(&status), "malformed slug: {status} {answer:?}");
    assert!(!text(&answer, "message").is_empty(), "a refusal says why: {answer:?}");

    let (status, resolved) = one.call("POST", "/resolve", Some(&object([("slug", Value::str("demo"))])));
    assert_eq!(status, 200, "{resolved:?}");
    let container = text(&resolved, "containerId");
    let tgz = gzip_bytes(&tar_bytes(&[("main.py".to_string(), b"print(1)\n".to_vec())]));
    let create = |hash: &str| {
        object([
            ("containerId", Value::str(&container)),
            ("contentHash", Value::str(hash)),
            ("bundleSha256", Value::str(sha256_base64(&tgz))),
            ("bundleSizeBytes", Value::Int(tgz.len() as i64)),
            ("fileManifest", Value::Array(vec![])),
            ("branch", Value::str("main")),
            ("baseVersionId", Value::Null),
        ])
    };
    let (status, version) = one.call("POST", "/versions", Some(&create(&"a".repeat(64))));
    assert_eq!(status, 200, "{version:?}");
    let version_id = text(&version, "versionId");

    // A finalize before the bundle is uploaded is refused.
    let (status, answer) = one.call("POST", &format!("/versions/{version_id}/finalize"), Some(&object([("branch", Value::str("main"))])));
    assert!((400..500).contains(&status), "finalize of an unuploaded version: {status} {answer:?}");

    // An upload whose bytes do not match the announced checksum is refused.
    let url = text(&version, "uploadUrl");
    let tampered =
        http.put(&url).header("x-amz-checksum-sha256", sha256_base64(b"other bytes")).body(b"other bytes".to_vec()).send().unwrap();
    assert!(tampered.status().is_client_error(), "checksum mismatch: {}", tampered.status());
    let tampered = http.put(&url).body(chunked(b"other bytes".to_vec())).send().unwrap();
    assert!(tampered.status().is_client_error(), "streamed checksum mismatch: {}", tampered.status());
    assert!(files_under(&data.join("objects")).is_empty(), "a refused upload leaves nothing: {:?}", files_under(&data.join("objects")));
    let uploaded = http.put(&url).header("x-amz-checksum-sha256", sha256_base64(&tgz)).body(chunked(tgz.clone())).send().unwrap();
    assert!(uploaded.status().is_success());
    let (status, download) = one.call("GET", &format!("/versions/{version_id}/download"), None);
    assert_eq!(status, 200, "{download:?}");
    let fetched = http.get(text(&download, "downloadUrl")).send().unwrap();
    assert!(fetched.status().is_success());
    assert_eq!(fetched.bytes().unwrap().to_vec(), tgz, "the bundle comes back as uploaded");
    let (status, answer) = one.call("POST", &format!("/versions/{version_id}/finalize"), Some(&object([("branch", Value::str("main"))])));
    assert_eq!(status, 200, "finalize after upload: {answer:?}");

    // Unknown refs, existing tags.
    let resolve = |reference: &str| object([("slug", Value::str("demo")), ("ref", Value::str(reference))]);
    let (status, _) = one.call("POST", "/resolve-version", Some(&resolve("no-such-branch")));
    assert_eq!(status, 404, "a ref that does not exist");
    let tag = object([
        ("slug", Value::str("demo")),
        ("name", Value::str("v1")),
        ("kind", Value::str("tag")),
        ("versionId", Value::str(&version_id)),
    ]);
    let (status, answer) = one.call("POST", "/refs", Some(&tag));
    assert_eq!(status, 200, "{answer:?}");
    let (status, answer) = one.call("POST", "/refs", Some(&tag));
    assert_eq!(status, 409, "a tag that exists: {answer:?}");

    // Another project never sees this container.
    let (status, answer) = two.call("POST", "/resolve-version", Some(&resolve("main")));
    assert_eq!(status, 404, "another project's container: {answer:?}");
    assert!(!json::canonical(&answer).contains(&version_id), "no data of the other project leaks");
    let (status, _) = two.call("GET", &format!("/versions/{version_id}/files"), None);
    assert_eq!(status, 404);

    // Bodies over the limits.
    let huge = object([("slug", Value::Str("x".repeat(128 * 1024)))]);
    let (status, _) = one.call("POST", "/resolve", Some(&huge));
    assert_eq!(status, 413, "JSON body over the limit");
    let (status, big) = one.call("POST", "/versions", Some(&create(&"b".repeat(64))));
    assert_eq!(status, 200, "{big:?}");
    let oversized = http
        .put(text(&big, "uploadUrl"))
        .header("x-amz-checksum-sha256", sha256_base64(&[0u8; 300 * 1024]))
        .body(vec![0u8; 300 * 1024])
        .send()
        .unwrap();
    assert_eq!(oversized.status().as_u16(), 413, "object over the limit");
    let streamed = http.put(text(&big, "uploadUrl")).body(chunked(vec![0u8; 300 * 1024])).send().unwrap();
    assert_eq!(streamed.status().as_u16(), 413, "object over the limit, its length unannounced");
    let stored = files_under(&data.join("objects"));
    assert_eq!(stored.len(), 1, "only the accepted bundle is stored, no partial file: {stored:?}");

    // After all of that the hub still resolves what was stored.
    let (status, answer) = one.call("POST", "/resolve-version", Some(&resolve("v1")));
    assert_eq!(status, 200, "{answer:?}");
    assert_eq!(text(&answer, "versionId"), version_id);
}

/// A push never follows a symlinked directory out of the world (the original
/// uploaded /etc through `ln -s /etc W/etcdir`): it is refused, naming the link.
#[test]
fn a_symlinked_directory_at_the_top_of_a_world_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("w");
    std::fs::create_dir_all(&world).unwrap();
    std::fs::write(world.join("gateway-env.toml"), "[environment]\nname = \"w\"\n").unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "do not upload").unwrap();
    std::os::unix::fs::symlink(&outside, world.join("etcdir")).unwrap();
    let refused = gateway_bundle::archive::collect_archive_files(&world).unwrap_err();
    assert!(refused.to_string().contains("etcdir") && refused.to_string().contains("symlink"), "{refused}");
    std::fs::remove_file(world.join("etcdir")).unwrap();
    let files = gateway_bundle::archive::collect_archive_files(&world).unwrap();
    assert!(files.iter().all(|f| !f.rel.contains("secret")));
}

#[cfg(unix)]
#[test]
fn the_metadata_database_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sqlite");
    gateway_hub::sqlite::SqliteStore::open(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
}

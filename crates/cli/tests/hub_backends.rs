//! The hub's scale-out back ends, end to end with the real `gateway` binary:
//! - PostgreSQL metadata (`--database postgres://…`, from `GATEWAY_TEST_POSTGRES_URL`): the
//!   full push/pull flow, and two `gateway hub serve` processes on one database raced by
//!   many concurrent finalizes (and real `bench push` clients) from one stale base:
//!   exactly one winner, every other one a 409;
//! - S3 objects (`--objects s3://…`) on a loopback `moto_server` (from
//!   `GATEWAY_TEST_MOTO_SERVER`, or `~/.cache/gateway-moto-venv/bin/moto_server`);
//! - both at once: two hubs with separate data directories (only `keys/` copied) sharing
//!   PostgreSQL and the bucket, pushing through one and pulling through the other.
//!
//! Each test skips with a NOTICE when its service is not available.

use gateway_test_support::{copy_tree, postgres_url, unique};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

mod common;
use common::{field, Server, GATEWAY};
const API: &str = "/api/public/benchmark-containers";

// ------------------------------------------------------------------ services

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `moto_server` on loopback with one bucket; killed on drop.
struct Moto {
    child: Child,
    endpoint: String,
    bucket: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto() -> Option<Moto> {
    let program = std::env::var_os("GATEWAY_TEST_MOTO_SERVER").map(PathBuf::from).or_else(|| {
        let default = PathBuf::from(std::env::var_os("HOME")?).join(".cache/gateway-moto-venv/bin/moto_server");
        default.is_file().then_some(default)
    });
    let Some(program) = program.filter(|p| p.is_file()) else {
        gateway_test_support::absent(
            "moto",
            "moto_server not found (GATEWAY_TEST_MOTO_SERVER or ~/.cache/gateway-moto-venv); skipping the S3 hub tests",
        );
        return None;
    };
    let port = free_port();
    let child = Command::new(&program)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let moto = Moto { child, endpoint: format!("http://{addr}"), bucket: format!("hub-{}", std::process::id()) };
    let started = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        if started.elapsed() > Duration::from_secs(30) {
            gateway_test_support::absent("moto", format!("moto_server did not start on {addr}; skipping the S3 hub tests"));
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Moto does not check signatures: a bare PUT creates the bucket.
    let (status, body) = http(&addr, "PUT", &format!("/{}", moto.bucket), &[], b"");
    assert_eq!(status, 200, "create bucket: {}", String::from_utf8_lossy(&body));
    Some(moto)
}

fn s3_env(command: &mut Command) -> &mut Command {
    command
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT")
        .env_remove("AWS_ENDPOINT_URL")
}

// ------------------------------------------------------------------ a tiny HTTP/1.1 client

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One request on a fresh connection (`Connection: close`): status and body.
fn http(addr: &str, method: &str, target: &str, headers: &[(&str, String)], body: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("HTTP head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status: u16 = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("status");
    let mut payload = raw[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let (mut out, mut rest) = (Vec::new(), &payload[..]);
        while let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..line_end]).trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[line_end + 2..line_end + 2 + size]);
            rest = &rest[line_end + 4 + size..];
        }
        payload = out;
    }
    (status, payload)
}

struct Api {
    addr: String,
    auth: String,
}

impl Api {
    fn new(host: &str, public: &str, secret: &str) -> Api {
        Api {
            addr: host.trim_start_matches("http://").to_string(),
            auth: format!("Basic {}", base64(format!("{public}:{secret}").as_bytes())),
        }
    }

    fn post(&self, path: &str, body: &str) -> (u16, gateway_world::json::Value) {
        let headers = [("Authorization", self.auth.clone()), ("Content-Type", "application/json".to_string())];
        let (status, raw) = http(&self.addr, "POST", &format!("{API}{path}"), &headers, body.as_bytes());
        let text = String::from_utf8(raw).unwrap();
        (status, gateway_world::json::parse(&text).unwrap_or_else(|e| panic!("not JSON ({e:?}): {text}")).value)
    }
}

fn get_str(value: &gateway_world::json::Value, key: &str) -> String {
    value.get(key).and_then(|v| v.as_str()).map(str::to_string).unwrap_or_else(|| panic!("no {key} in {value:?}"))
}

// ------------------------------------------------------------------ hub processes

/// A key pair for a fresh project (unique, so runs on one database never collide).
fn keys(data: &Path, database: Option<&str>) -> (String, String) {
    let mut command = Command::new(GATEWAY);
    command.args(["hub", "keys", "create", "--project", &unique("p"), "--data"]).arg(data);
    if let Some(url) = database {
        command.args(["--database", url]);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    (field(&text, "publicKey"), field(&text, "secretKey"))
}

fn serve(data: &Path, database: Option<&str>, objects: Option<&str>, (public, secret): &(String, String)) -> Server {
    let mut command = Command::new(GATEWAY);
    command.args(["hub", "serve", "--addr", "127.0.0.1:0", "--data"]).arg(data);
    if let Some(url) = database {
        command.args(["--database", url]);
    }
    if let Some(url) = objects {
        command.args(["--objects", url]);
    }
    let (child, host) = gateway_test_support::spawn_hub(s3_env(&mut command));
    Server { child, host, public: public.clone(), secret: secret.clone() }
}

fn run(server: &Server, args: &[&str], cwd: &Path) -> (bool, String, String) {
    common::run(server, Path::new(GATEWAY), args, cwd)
}

fn ok(server: &Server, args: &[&str], cwd: &Path) -> String {
    common::ok(server, Path::new(GATEWAY), args, cwd)
}

fn write_tree(root: &Path, payload_kib: usize) {
    let files: &[(&str, &str)] = &[
        ("README.md", "# Demo\n"),
        ("pyproject.toml", "[project]\nname = \"demo-env\"\nversion = \"0.1.0\"\n"),
        ("main.py", "print(1)\n"),
        ("pkg/a.py", "x = 1\n"),
        ("pkg/sub/b.json", "{}\n"),
    ];
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    // Incompressible-ish payload so timings measure moving bytes, not just round trips.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let blob: String = (0..payload_kib * 1024 / 17)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            format!("{:016x}\n", state)
        })
        .collect();
    std::fs::write(root.join("pkg/data.txt"), blob).unwrap();
}

// ------------------------------------------------------------------ flows

/// The push/pull flow on one hub; returns (push, pull) wall times of the first push and pull.
fn push_pull_flow(server: &Server, work: &Path) -> (Duration, Duration) {
    write_tree(&work.join("env"), 512);
    let started = Instant::now();
    let pushed = ok(server, &["bench", "push", "env", "-m", "first", "--author", "alice"], work);
    let push_time = started.elapsed();
    let v1 = field(&pushed, "versionId");
    assert_eq!(field(&pushed, "state"), "READY");
    assert!(ok(server, &["bench", "push", "env"], work).contains("\"alreadyUploaded\": true"), "deduplicated by content hash");
    let started = Instant::now();
    let pulled = ok(server, &["bench", "pull", "demo-env", "-t", "copy"], work);
    let pull_time = started.elapsed();
    assert_eq!(field(&pulled, "versionId"), v1);
    assert_eq!(std::fs::read(work.join("copy/pkg/data.txt")).unwrap(), std::fs::read(work.join("env/pkg/data.txt")).unwrap());
    // Two working copies from one base: the second push is refused with the 409.
    ok(server, &["bench", "checkout", "demo-env@main", "-t", "other"], work);
    std::fs::write(work.join("copy/main.py"), "print(2)\n").unwrap();
    std::fs::write(work.join("other/main.py"), "print(3)\n").unwrap();
    let v2 = field(&ok(server, &["bench", "push", "copy", "--auto-bump", "-m", "second"], work), "versionId");
    let (success, _, stderr) = run(server, &["bench", "push", "other"], work);
    assert!(!success && stderr.contains("409") && stderr.contains("--force"), "{stderr}");
    assert!(ok(server, &["bench", "status", "other"], work).contains("\"behind\": true"));
    ok(server, &["bench", "push", "other", "--branch", "fix/other"], work);
    ok(server, &["bench", "branch", "wip", "--slug", "demo-env"], work);
    ok(server, &["bench", "tag", "v1", "--slug", "demo-env", "--version", &v1], work);
    let (success, _, stderr) = run(server, &["bench", "tag", "v1", "--slug", "demo-env"], work);
    assert!(!success && stderr.contains("immutable"), "{stderr}");
    let listed = ok(server, &["bench", "branch", "--path", "copy"], work);
    assert!(
        listed.contains("* branch main")
            && listed.contains("  branch fix/other")
            && listed.contains("  branch wip")
            && listed.contains("  tag    v1"),
        "{listed}"
    );
    assert!(listed.find("fix/other").unwrap() < listed.find("main").unwrap(), "refs in byte order: {listed}");
    let log = ok(server, &["bench", "log", "demo-env"], work);
    assert!(log.find(&v2).unwrap() < log.find(&v1).unwrap() && log.contains("\"author\": \"alice\""), "{log}");
    assert_eq!(field(&ok(server, &["bench", "pull", "demo-env@v1", "-t", "pinned"], work), "versionId"), v1);
    let prefix: String = field(&pushed, "contentHash").chars().take(10).collect();
    assert_eq!(field(&ok(server, &["bench", "pull", &format!("demo-env@{prefix}"), "-t", "byhash"], work), "versionId"), v1);
    assert_eq!(field(&ok(server, &["bench", "pull", "demo-env@0.1.1", "-t", "bysemver"], work), "versionId"), v2);
    assert!(ok(server, &["bench", "diff", &v1, &v2], work).contains("\"main.py\""));
    assert_eq!(field(&ok(server, &["bench", "fork", "demo-env", "--into", "demo-fork"], work), "forkedFromVersionId"), v2);
    let (success, _, stderr) = run(server, &["bench", "fork", "demo-env", "--into", "demo-fork"], work);
    assert!(!success && stderr.contains("409"), "{stderr}");
    std::fs::write(work.join("copy/pkg/a.py"), "x = 2\n").unwrap();
    assert!(ok(server, &["bench", "propose", "copy", "--title", "T", "-m", "why"], work).contains("\"status\": \"OPEN\""));
    let set = |value: &str| ok(server, &["bench", "secrets", "set", "--env", "demo-env", "--key", "API_KEY", "--value", value], work);
    assert!(set("v4lue").starts_with("Added"));
    assert!(set("v5lue").starts_with("Rotated"));
    assert!(ok(server, &["bench", "secrets", "list", "--env", "demo-env"], work).starts_with("API_KEY  (rotated "));
    ok(server, &["bench", "secrets", "unset", "--env", "demo-env", "--key", "API_KEY"], work);
    let created = ok(server, &["bench", "run-configs", "create", "--name", "ci", "--models", "a,b", "--parallelism", "4"], work);
    let id = created.split_whitespace().next().unwrap().to_string();
    assert!(ok(server, &["bench", "run-configs", "list"], work).contains("[x4 containers]"));
    ok(server, &["bench", "run-configs", "delete", "--id", &id], work);
    let (_, _, stderr) = run(server, &["bench", "pull", "nope"], work);
    assert!(stderr.contains("-> 404"), "{stderr}");
    (push_time, pull_time)
}

/// Upload `n` distinct versions through `api` (not finalized); returns their ids.
fn prepare(api: &Api, container: &str, round: usize, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let tgz = gateway_bundle::archive::gzip_bytes(&gateway_bundle::archive::tar_bytes(&[(
                "main.py".to_string(),
                format!("print({round}, {i})\n").into_bytes(),
            )]));
            let sha = gateway_bundle::archive::sha256_base64(&tgz);
            let body = format!(
                "{{\"containerId\":\"{container}\",\"contentHash\":\"{:032x}{:032x}\",\"bundleSha256\":\"{sha}\",\
                 \"bundleSizeBytes\":{},\"fileManifest\":[],\"branch\":\"main\",\"baseVersionId\":null}}",
                round,
                i,
                tgz.len()
            );
            let (status, version) = api.post("/versions", &body);
            assert_eq!(status, 200, "{version:?}");
            let url = get_str(&version, "uploadUrl");
            let target = url.splitn(4, '/').nth(3).map(|t| format!("/{t}")).unwrap();
            let (status, answer) = http(&api.addr, "PUT", &target, &[("x-amz-checksum-sha256", sha)], &tgz);
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
            get_str(&version, "versionId")
        })
        .collect()
}

/// Everyone finalizes onto `main` from `base` at once, spread over the hubs: (200s, 409s).
fn race(apis: &[Arc<Api>], ids: &[String], base: &str) -> (usize, usize, Duration) {
    let barrier = Arc::new(Barrier::new(ids.len()));
    let started = Instant::now();
    let handles: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let (barrier, api, id, base) = (barrier.clone(), apis[i % apis.len()].clone(), id.clone(), base.to_string());
            std::thread::spawn(move || {
                barrier.wait();
                let (status, answer) =
                    api.post(&format!("/versions/{id}/finalize"), &format!("{{\"branch\":\"main\",\"baseVersionId\":\"{base}\"}}"));
                if status == 409 {
                    let message = get_str(&answer, "message");
                    assert!(message.contains("--force") && message.contains("pull"), "409 says what to do: {message}");
                } else {
                    assert_eq!(status, 200, "{answer:?}");
                }
                status
            })
        })
        .collect();
    let statuses: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    (statuses.iter().filter(|s| **s == 200).count(), statuses.iter().filter(|s| **s == 409).count(), started.elapsed())
}

// ------------------------------------------------------------------ tests

#[test]
fn postgres_push_pull_flow() {
    let Some(url) = postgres_url("the hub scale-out tests") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let server = serve(&data, Some(&url), None, &keys(&data, Some(&url)));
    let (push, pull) = push_pull_flow(&server, tmp.path());
    eprintln!("TIMING postgres+dir: first push {push:?}, first pull {pull:?} (512 KiB tree)");
    assert!(!data.join("hub.sqlite").exists(), "the metadata went to PostgreSQL, not SQLite");
}

#[test]
fn sqlite_push_pull_timing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let server = serve(&data, None, None, &keys(&data, None));
    let (push, pull) = push_pull_flow(&server, tmp.path());
    eprintln!("TIMING sqlite+dir: first push {push:?}, first pull {pull:?} (512 KiB tree)");
}

#[test]
fn two_hub_processes_on_one_postgres_have_one_winner_per_base() {
    let Some(url) = postgres_url("the hub scale-out tests") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let pair = keys(&data, Some(&url));
    let hubs = [serve(&data, Some(&url), None, &pair), serve(&data, Some(&url), None, &pair)];
    let apis: Vec<Arc<Api>> = hubs.iter().map(|h| Arc::new(Api::new(&h.host, &h.public, &h.secret))).collect();
    let (status, resolved) = apis[0].post("/resolve", "{\"slug\":\"race-env\"}");
    assert_eq!(status, 200, "{resolved:?}");
    let container = get_str(&resolved, "containerId");
    let first = prepare(&apis[0], &container, 0, 1).remove(0);
    let (status, answer) = apis[1].post(&format!("/versions/{first}/finalize"), "{\"branch\":\"main\"}");
    assert_eq!(status, 200, "{answer:?}");
    let mut base = first;
    for round in 1..=4 {
        let ids = prepare(&apis[round % 2], &container, round, 16);
        let (won, refused, took) = race(&apis, &ids, &base);
        eprintln!("RACE postgres round {round}: 16 finalizes from one base over 2 processes -> {won} won, {refused} got 409 in {took:?}");
        assert_eq!((won, refused), (1, 15), "exactly one winner per base");
        // The winner is main's tip, seen the same by both processes.
        let tips: Vec<String> = apis
            .iter()
            .map(|api| {
                let (status, v) = api.post("/resolve-version", "{\"slug\":\"race-env\",\"ref\":\"main\"}");
                assert_eq!(status, 200, "{v:?}");
                get_str(&v, "versionId")
            })
            .collect();
        assert_eq!(tips[0], tips[1]);
        assert!(ids.contains(&tips[0]) && tips[0] != base);
        // The stale base loses again, on either process.
        let late = prepare(&apis[0], &container, 100 + round, 2);
        let (won, refused, _) = race(&apis, &late, &base);
        assert_eq!((won, refused), (0, 2));
        base = tips[0].clone();
    }

    // Real clients: 8 working copies of main's tip, each edited, pushed at once through
    // both processes: one push lands, seven are told to pull.
    let work = tmp.path();
    let server = &hubs[0];
    write_tree(&work.join("seed"), 4);
    std::fs::write(work.join("seed/pyproject.toml"), "[project]\nname = \"clients-env\"\nversion = \"0.1.0\"\n").unwrap();
    ok(server, &["bench", "push", "seed"], work);
    for i in 0..8 {
        let dir = format!("c{i}");
        ok(server, &["bench", "checkout", "clients-env@main", "-t", &dir], work);
        std::fs::write(work.join(&dir).join("main.py"), format!("print('client {i}')\n")).unwrap();
    }
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let (barrier, host, public, secret) =
                (barrier.clone(), hubs[i % 2].host.clone(), hubs[i % 2].public.clone(), hubs[i % 2].secret.clone());
            let work = work.to_path_buf();
            std::thread::spawn(move || {
                barrier.wait();
                let out = Command::new(GATEWAY)
                    .args(["bench", "push", &format!("c{i}")])
                    .current_dir(&work)
                    .env("GATEWAY_HOST", host)
                    .env("GATEWAY_PUBLIC_KEY", public)
                    .env("GATEWAY_SECRET_KEY", secret)
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                assert!(out.status.success() || stderr.contains("409"), "{stderr}");
                out.status.success()
            })
        })
        .collect();
    let landed = handles.into_iter().map(|h| h.join().unwrap()).filter(|s| *s).count();
    eprintln!("RACE postgres clients: 8 concurrent `bench push` from one base over 2 processes -> {landed} landed");
    assert_eq!(landed, 1, "exactly one client push lands");
}

#[test]
fn s3_objects_on_moto() {
    let Some(moto) = moto() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let objects = format!("s3://{}/hub/bundles?endpoint={}&region=us-east-1", moto.bucket, moto.endpoint);
    let server = serve(&data, None, Some(&objects), &keys(&data, None));
    let (push, pull) = push_pull_flow(&server, tmp.path());
    eprintln!("TIMING sqlite+s3(moto): first push {push:?}, first pull {pull:?} (512 KiB tree)");
    assert!(!data.join("objects").exists(), "no bundle went to the local directory");
    let addr = moto.endpoint.trim_start_matches("http://");
    let (status, listing) = http(addr, "GET", &format!("/{}?list-type=2&prefix=hub/bundles/", moto.bucket), &[], b"");
    let listing = String::from_utf8_lossy(&listing);
    assert_eq!(status, 200, "{listing}");
    assert!(listing.matches("<Key>hub/bundles/").count() >= 3, "bundles are in the bucket under the prefix: {listing}");

    // A missing bucket is refused at start, with what to check.
    let mut command = Command::new(GATEWAY);
    command
        .args(["hub", "serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(&data)
        .args(["--objects", &format!("s3://no-such-bucket?endpoint={}&region=us-east-1", moto.endpoint)]);
    let mut child = s3_env(&mut command).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("a hub on a missing bucket started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(!status.success() && stderr.contains("does not answer"), "{stderr}");
}

#[test]
fn two_hubs_share_postgres_and_s3() {
    let Some(url) = postgres_url("the hub scale-out tests") else { return };
    let Some(moto) = moto() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (tmp.path().join("a"), tmp.path().join("b"));
    let pair = keys(&data_a, Some(&url));
    let objects = format!("s3://{}?endpoint={}&region=us-east-1", moto.bucket, moto.endpoint);
    let a = serve(&data_a, Some(&url), Some(&objects), &pair);
    // The only thing the hubs share on disk: the keys A made (copied, as a deployment mounts them).
    std::fs::create_dir_all(data_b.join("keys")).unwrap();
    for entry in std::fs::read_dir(data_a.join("keys")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), data_b.join("keys").join(entry.file_name())).unwrap();
    }
    let b = serve(&data_b, Some(&url), Some(&objects), &pair);
    let work = tmp.path();
    write_tree(&work.join("env"), 512);
    let started = Instant::now();
    let v1 = field(&ok(&a, &["bench", "push", "env", "-m", "via a"], work), "versionId");
    let push = started.elapsed();
    let started = Instant::now();
    assert_eq!(field(&ok(&b, &["bench", "pull", "demo-env", "-t", "via-b"], work), "versionId"), v1);
    let pull = started.elapsed();
    eprintln!("TIMING postgres+s3(moto): push via hub A {push:?}, pull via hub B {pull:?} (512 KiB tree)");
    assert_eq!(std::fs::read(work.join("via-b/pkg/data.txt")).unwrap(), std::fs::read(work.join("env/pkg/data.txt")).unwrap());
    // B pushes on top; A's stale copy is refused.
    std::fs::write(work.join("via-b/main.py"), "print('b')\n").unwrap();
    ok(&b, &["bench", "push", "via-b"], work);
    std::fs::write(work.join("env/main.py"), "print('a')\n").unwrap();
    let (success, _, stderr) = run(&a, &["bench", "push", "env"], work);
    assert!(!success && stderr.contains("409"), "{stderr}");
    ok(&b, &["bench", "secrets", "set", "--env", "demo-env", "--key", "K", "--value", "v"], work);
    assert!(ok(&a, &["bench", "secrets", "list", "--env", "demo-env"], work).starts_with("K  (rotated"));

    // World data through both: rows uploaded through B (chunks into the bucket, applied
    // by B), the batch followed and the world's data read through A.
    let world = format!("helpdesk-{}", std::process::id());
    let src = work.join("src");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &src.join("helpdesk"));
    ok(&a, &["bench", "push", "helpdesk", "--slug", &world], &src);
    let rows: String = (0..20)
        .map(|i| {
            format!(
                "{{\"entity\": \"customers\", \"row\": {{\"id\": \"S{i}\", \"name\": \"N\", \"email\": \"s{i}@example.com\", \"tier\": \"pro\", \"created_at\": \"2026-01-02T09:00:00Z\"}}}}\n"
            )
        })
        .collect();
    std::fs::write(work.join("rows.jsonl"), rows).unwrap();
    let cli = work.join("cli");
    std::fs::create_dir_all(&cli).unwrap();
    let imported = ok(&b, &["worlds", "data", "import", &world, "../rows.jsonl", "--chunk-rows", "5"], &cli);
    assert!(imported.contains("\"state\": \"published\""), "{imported}");
    let batch = field(&imported, "batchId");
    assert!(ok(&a, &["worlds", "data", "status", &batch], &cli).contains("\"state\": \"published\""));
    assert!(ok(&a, &["worlds", "data", "show", &world], &cli).contains("\"customers\": 23"));
    let addr = moto.endpoint.trim_start_matches("http://");
    let (status, listing) = http(addr, "GET", &format!("/{}?list-type=2&prefix=world-data/", moto.bucket), &[], b"");
    let listing = String::from_utf8_lossy(&listing);
    assert_eq!(status, 200, "{listing}");
    assert_eq!(listing.matches("/chunks/").count(), 4, "four chunks in the bucket: {listing}");
    assert_eq!(listing.matches("/snapshots/").count(), 1, "one snapshot in the bucket: {listing}");
    assert!(!data_a.join("objects").exists() && !data_b.join("objects").exists() && !data_b.join("hub.sqlite").exists());
}

//! What the workspace's integration tests share, so each test file says only what it
//! tests: copies of the bundled example worlds, unique names, a hub served in-process on
//! a loopback port with two projects' keys, JSON calls to it, a server process started
//! on port 0 (its announced address read), raw HTTP/1.1 exchanges and requests, and the probes for the
//! services a test may need (PostgreSQL, the original's reference install) that print a
//! NOTICE and skip when the service is absent — outside CI only: in CI, which provides
//! them all, an absent service fails the test ([`absent`]).
//!
//! A dev-dependency of the crates' tests only; nothing here is shipped.

pub mod fake_vendor;

use gateway_world::json::{self, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `examples/<name>` in the repository.
pub fn example(name: &str) -> PathBuf {
    repo_root().join("examples").join(name)
}

/// Copy a tree (links followed), panicking on failure.
pub fn copy_tree(from: &Path, to: &Path) {
    copy_tree_except(from, to, &|_| false);
}

/// [`copy_tree`] without the entries `skip` names.
fn copy_tree_except(from: &Path, to: &Path, skip: &dyn Fn(&gateway_common::fs::Entry) -> bool) {
    gateway_common::fs::copy_tree(from, to, gateway_common::fs::Symlinks::Follow, skip)
        .unwrap_or_else(|e| panic!("copy {} → {}: {e}", from.display(), to.display()));
}

/// A copy of `examples/<name>` at `into` (created); returns `into`. It holds what a
/// clean checkout holds: the snapshots `gateway worlds schema compile` writes into the
/// example (`state.sqlite`, `state.json`, ignored by git) stay behind, so a test sees
/// the same world after the README's main command has been run in the checkout.
pub fn copy_example(name: &str, into: &Path) -> PathBuf {
    copy_tree_except(&example(name), into, &|entry| {
        !entry.is_dir && (entry.name == "state.sqlite" || entry.name == "state.json" || entry.name.starts_with(".state.sqlite."))
    });
    into.to_path_buf()
}

/// Spawn a server `command` (bound to port 0) and read its standard error until a line
/// starts with `announce`: the child, and the rest of that line (the address it bound)
/// or, when it never says so, what it said instead. What it says after is drained (a
/// full or closed pipe would stall or end it).
pub fn spawn_announced(command: &mut std::process::Command, announce: &str) -> (std::process::Child, Result<String, String>) {
    use std::io::{BufRead, BufReader};
    let mut child = command.stderr(std::process::Stdio::piped()).stdout(std::process::Stdio::null()).spawn().expect("spawn a server");
    let mut reader = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut said = String::new();
    for _ in 0..20 {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Some(address) = line.trim().strip_prefix(announce) {
            let address = address.to_string();
            std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
            return (child, Ok(address));
        }
        said.push_str(&line);
    }
    (child, Err(said))
}

/// Spawn `gateway hub serve --addr 127.0.0.1:0 …` (`command`): the child and the
/// address it bound; a hub that does not start is a panic with what it said.
pub fn spawn_hub(command: &mut std::process::Command) -> (std::process::Child, String) {
    match spawn_announced(command, "gateway hub listening on ") {
        (child, Ok(host)) => (child, host),
        (mut child, Err(said)) => {
            let _ = child.kill();
            panic!("hub did not start: {said}");
        }
    }
}

/// One HTTP/1.1 exchange on a fresh connection (`Connection: close`, a `Host` unless
/// `headers` has one): the status, the response head and the body (de-chunked).
pub fn http_exchange(
    addr: std::net::SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let mut head = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("send head");
    stream.write_all(body.as_bytes()).expect("send body");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read answer");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_string() };
    (status, head.to_string(), body)
}

/// One HTTP/1.1 request as a scripted server on loopback reads it off its connection.
#[derive(Debug, Clone)]
pub struct RawRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target: the path and its query.
    pub target: String,
    /// The headers in order, names lower-cased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body: `Content-Length` bytes (none without one).
    pub body: Vec<u8>,
}

impl RawRequest {
    /// Read one request: None when the peer sent nothing (it closed, or the read failed).
    pub fn read(reader: &mut impl std::io::BufRead) -> Option<RawRequest> {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or_default().to_string(), parts.next().unwrap_or_default().to_string());
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
        }
        let mut request = RawRequest { method, target, headers, body: Vec::new() };
        request.body = vec![0u8; request.header("content-length").and_then(|l| l.parse().ok()).unwrap_or(0)];
        reader.read_exact(&mut request.body).expect("read the request's body");
        Some(request)
    }

    /// The first header called `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest.get(size + 2..).unwrap_or("");
    }
    out
}

/// The services `.ci/run` provides, as it names them in `GATEWAY_CI_PROVIDES`
/// (comma-separated: `postgres`, `moto`, `mcp`, `chromium`, `wheel`, `schemathesis`,
/// `vendor-sdk`, `bwrap`, `reference`).
fn provided_by_ci(service: &str) -> bool {
    provided_by(std::env::var("GATEWAY_CI_PROVIDES").ok().as_deref(), service)
}

fn provided_by(list: Option<&str>, service: &str) -> bool {
    list.is_some_and(|list| list.split(',').any(|s| s.trim() == service))
}

/// `service` is missing. Outside CI: a NOTICE saying what is skipped, and the caller
/// skips. In CI, which provides the service, a skip would pass a test that checked
/// nothing: the test fails with the same words.
pub fn absent(service: &str, notice: impl std::fmt::Display) {
    if provided_by_ci(service) {
        panic!("{service} is missing, and CI provides it (GATEWAY_CI_PROVIDES): {notice}");
    }
    eprintln!("NOTICE: {notice}");
}

/// A name no other test run uses (`prefix-<pid>-<nanos>`), for shared databases.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// The PostgreSQL URL to test against (`GATEWAY_TEST_POSTGRES_URL`) when a server
/// answers there; else a NOTICE naming what is skipped, and None.
pub fn postgres_url(skipped: &str) -> Option<String> {
    let Some(url) = std::env::var("GATEWAY_TEST_POSTGRES_URL").ok().filter(|u| !u.is_empty()) else {
        absent("postgres", format!("GATEWAY_TEST_POSTGRES_URL is not set; skipping {skipped} on PostgreSQL"));
        return None;
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let opened =
        runtime.block_on(async { tokio::time::timeout(Duration::from_secs(15), gateway_hub::postgres::PostgresStore::open(&url)).await });
    match opened {
        Ok(Ok(_)) => Some(url),
        Ok(Err(e)) => {
            absent("postgres", format!("PostgreSQL at GATEWAY_TEST_POSTGRES_URL is unreachable ({e}); skipping {skipped} on PostgreSQL"));
            None
        }
        Err(_) => {
            absent("postgres", format!("PostgreSQL at GATEWAY_TEST_POSTGRES_URL did not answer; skipping {skipped} on PostgreSQL"));
            None
        }
    }
}

/// The original's reference install (`~/.cache/gateway-reference/bin/{gateway,python}`),
/// or a NOTICE and None.
pub fn reference() -> Option<(PathBuf, PathBuf)> {
    let home = PathBuf::from(std::env::var_os("HOME")?).join(".cache/gateway-reference/bin");
    let (gateway, python) = (home.join("gateway"), home.join("python"));
    if gateway.is_file() && python.is_file() {
        Some((gateway, python))
    } else {
        absent("reference", "reference gateway not installed (../shared/reference/install.sh); skipping interop checks");
        None
    }
}

/// A project's API key: (public, secret).
pub type Key = (String, String);

/// A hub served in-process on a loopback port (port 0), with two projects.
pub struct TestHub {
    /// `http://127.0.0.1:<port>`.
    pub api: String,
    /// The first project's key.
    pub one: Key,
    /// The second project's key (for "another project sees none of it").
    pub two: Key,
    /// The hub's `--data` directory.
    pub data: tempfile::TempDir,
    _runtime: tokio::runtime::Runtime,
}

impl TestHub {
    /// A hub on SQLite, or on the PostgreSQL at `database`, with default limits.
    pub fn start(database: Option<String>) -> TestHub {
        TestHub::start_with(database, gateway_hub::server::Limits::default())
    }

    /// [`TestHub::start`] with its limits.
    pub fn start_with(database: Option<String>, limits: gateway_hub::server::Limits) -> TestHub {
        let data = tempfile::tempdir().expect("a temp dir");
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime");
        let (api, one, two) = runtime.block_on(async {
            let config = gateway_hub::HubConfig { data: data.path().to_path_buf(), database, objects: None };
            let hub = config.open(None, limits).await.expect("open hub");
            let (_, p1, s1) = gateway_hub::create_key(hub.meta.as_ref(), &unique("one")).await.expect("a key");
            let (_, p2, s2) = gateway_hub::create_key(hub.meta.as_ref(), &unique("two")).await.expect("a key");
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
            let addr = listener.local_addr().expect("its address");
            tokio::spawn(gateway_hub::server::serve_on(hub, listener));
            (format!("http://{addr}"), (p1, s1), (p2, s2))
        });
        TestHub { api, one, two, data, _runtime: runtime }
    }

    /// A call with `key`'s Basic credentials and extra headers; a body is sent as JSON.
    /// Returns the status and the answer (JSON, else its text as a string).
    pub fn call_as(&self, key: &Key, method: &str, path: &str, body: Option<&str>, headers: &[(&str, &str)]) -> (u16, Value) {
        call_hub(&self.api, key, method, path, body, headers)
    }

    /// [`TestHub::call_as`] with the first project's key and no extra headers.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        self.call_as(&self.one, method, path, body, &[])
    }
}

/// A call to the hub at `api` with `key`'s Basic credentials and extra headers; a body
/// is sent as JSON. Returns the status and the answer (JSON, else its text as a string).
pub fn call_hub(api: &str, key: &Key, method: &str, path: &str, body: Option<&str>, headers: &[(&str, &str)]) -> (u16, Value) {
    let http = reqwest::blocking::Client::new();
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("an HTTP method");
    let mut request = http.request(method, format!("{api}{path}")).basic_auth(&key.0, Some(&key.1));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().expect("the hub answers");
    let status = response.status().as_u16();
    let text = response.text().unwrap_or_default();
    (status, json::parse(&text).map(|p| p.value).unwrap_or(Value::Str(text)))
}

/// A member by dotted path (`runs.0.state`), as text: strings bare, the rest as JSON.
pub fn text(value: &Value, path: &str) -> String {
    let found = path.split('.').fold(value, |v, k| match (v, k.parse::<usize>()) {
        (Value::Array(items), Ok(i)) => items.get(i).unwrap_or(&Value::Null),
        _ => v.get(k).unwrap_or(&Value::Null),
    });
    match found {
        Value::Str(s) => s.clone(),
        other => json::canonical(other),
    }
}

/// One raw ustar member — `kind` b'0' a file, b'1' a hard link, b'2' a symlink to `link` —
/// enough to craft the archives no well-behaved writer produces (links, `../` names).
pub fn tar_member(name: &str, kind: u8, link: &str, payload: &[u8]) -> Vec<u8> {
    let mut header = vec![0u8; 512];
    header[..name.len()].copy_from_slice(name.as_bytes());
    header[100..108].copy_from_slice(b"0000644\0");
    header[108..116].copy_from_slice(b"0000000\0");
    header[116..124].copy_from_slice(b"0000000\0");
    header[124..136].copy_from_slice(format!("{:011o}\0", payload.len()).as_bytes());
    header[136..148].copy_from_slice(b"00000000000\0");
    header[156] = kind;
    header[157..157 + link.len()].copy_from_slice(link.as_bytes());
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut out = header;
    out.extend_from_slice(payload);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out
}

/// The Python that has the vendors' own SDKs (PyGithub, slack_sdk): the venv
/// `.ci/run` makes under ~/.cache. None, with a NOTICE, when it is absent.
pub fn vendor_sdk_python() -> Option<PathBuf> {
    let python = PathBuf::from(std::env::var_os("HOME")?).join(".cache/gateway-vendor-sdk-venv/bin/python");
    let ok = python.is_file()
        && std::process::Command::new(&python)
            .args(["-c", "import github, slack_sdk"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
    if !ok {
        absent(
            "vendor-sdk",
            format!("no PyGithub/slack_sdk at {} (.ci/run installs them); skipping the vendor SDK workload", python.display()),
        );
        return None;
    }
    Some(python)
}

/// The Python `mcp` client's venv (`~/.cache/gateway-mcp-venv`, installed by .ci/run), or
/// None with a NOTICE when it is absent: the MCP tests' Python-client parts then skip.
pub fn mcp_python() -> Option<PathBuf> {
    let python = PathBuf::from(std::env::var_os("HOME")?).join(".cache/gateway-mcp-venv/bin/python");
    let ok = python.is_file()
        && std::process::Command::new(&python).args(["-c", "import mcp"]).output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        absent("mcp", format!("no Python mcp client at {} (.ci/run installs it); skipping its part", python.display()));
        return None;
    }
    Some(python)
}

#[cfg(test)]
mod tests {
    use super::provided_by;

    #[test]
    fn a_service_is_required_only_where_ci_names_it() {
        assert!(provided_by(Some("postgres,moto, mcp"), "mcp"));
        assert!(provided_by(Some("postgres,moto"), "postgres"));
        assert!(!provided_by(Some("postgres,moto"), "reference"));
        assert!(!provided_by(Some(""), "postgres"));
        assert!(!provided_by(None, "postgres"));
        // A name is matched whole: `postgres-url` is not `postgres`.
        assert!(!provided_by(Some("postgres-url"), "postgres"));
    }
}

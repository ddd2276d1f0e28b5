//! World data batches through the hub on loopback, on SQLite and (when
//! `GATEWAY_TEST_POSTGRES_URL` reaches a server) on PostgreSQL: the routes spoken
//! directly — a chunk whose bytes are not its digest, an oversized registration and
//! body, complete before every chunk is uploaded or with a gap, a chunk the project
//! already holds (`uploaded: true`, no URL), a completed batch taking no chunk, bad
//! flags — each refused with nothing stored; another project's key sees none of it;
//! and the client flow (`world_data_client`) importing, publishing later, showing.

use gateway_hub::server::Limits;
use gateway_hub_client::client::{Client, PushOptions};
use gateway_hub_client::world_data_client::{self as wd, Flags, ImportOptions, Quiet, WorldDataClient};
use gateway_test_support::{copy_tree, postgres_url, Key, TestHub as Hub};
use gateway_world::json::{self, Value};
use std::path::Path;

const CHUNK_LIMIT: usize = 64 * 1024;

fn start(database: Option<String>) -> Hub {
    Hub::start_with(database, Limits { chunk_bytes: CHUNK_LIMIT, ..Limits::default() })
}

fn call(hub: &Hub, key: &Key, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    hub.call_as(key, method, path, body, &[])
}

fn expect(hub: &Hub, status: u16, method: &str, path: &str, body: Option<&str>) -> Value {
    let (got, answer) = call(hub, &hub.one, method, path, body);
    assert_eq!(got, status, "{method} {path} {body:?}: {}", json::canonical(&answer));
    answer
}

fn refused(hub: &Hub, status: u16, method: &str, path: &str, body: Option<&str>, words: &str) {
    let answer = expect(hub, status, method, path, body);
    let message = answer.get("message").and_then(Value::as_str).unwrap_or_default();
    assert!(message.contains(words), "{method} {path}: {message}");
}

fn text(value: &Value, key: &str) -> String {
    match value.get(key) {
        Some(Value::Str(s)) => s.clone(),
        Some(other) => json::canonical(other),
        None => String::new(),
    }
}

/// A gzipped chunk of `lines` (tagged JSONL), named as the client names it: (bytes, sha256 hex).
fn chunk(ordinal: usize, lines: &[String]) -> (Vec<u8>, String) {
    use std::io::Write as _;
    let name = format!("chunk-{ordinal:05}.jsonl");
    let mut encoder = flate2::GzBuilder::new().filename(name.as_bytes()).mtime(0).write(Vec::new(), flate2::Compression::best());
    for line in lines {
        encoder.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
    let bytes = encoder.finish().unwrap();
    let digest = gateway_world::files::sha256_hex(&bytes);
    (bytes, digest)
}

fn customer(id: &str) -> String {
    format!(
        r#"{{"entity":"customers","row":{{"id":"{id}","name":"N {id}","email":"{id}@example.com","tier":"pro","created_at":"2026-01-02T09:00:00Z"}}}}"#
    )
}

fn register(hub: &Hub, batch: &str, ordinal: usize, bytes: &[u8], digest: &str, rows: usize) -> Value {
    let body = format!(r#"{{"ordinal": {ordinal}, "digest": "{digest}", "bytes": {}, "rows": {rows}}}"#, bytes.len());
    expect(hub, 200, "POST", &format!("/api/public/worlds/helpdesk/data/batches/{batch}/chunks"), Some(&body))
}

fn put(url: &str, bytes: &[u8]) -> (u16, String) {
    let response =
        reqwest::blocking::Client::new().put(url).header("content-type", "application/gzip").body(bytes.to_vec()).send().unwrap();
    (response.status().as_u16(), response.text().unwrap())
}

fn wait(hub: &Hub, batch: &str) -> Value {
    let started = std::time::Instant::now();
    loop {
        let status = expect(hub, 200, "GET", &format!("/api/public/worlds/helpdesk/data/batches/{batch}"), None);
        if ["applied", "refused", "published", "failed"].contains(&text(&status, "state").as_str()) {
            return status;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "{}", json::canonical(&status));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn open(hub: &Hub, body: &str) -> String {
    text(&expect(hub, 200, "POST", "/api/public/worlds/helpdesk/data/batches", Some(body)), "batchId")
}

fn chunk_objects(hub: &Hub) -> usize {
    let root = hub.data.path().join("objects/world-data");
    std::fs::read_dir(&root)
        .map(|projects| {
            projects
                .filter_map(Result::ok)
                .filter_map(|p| std::fs::read_dir(p.path().join("chunks")).ok())
                .flat_map(|d| d.filter_map(Result::ok))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .count()
        })
        .unwrap_or(0)
}

fn world_data(hub: &Hub) {
    let work = tempfile::tempdir().unwrap();
    let world = push_helpdesk(hub, work.path());
    opens_refused(hub);
    let (bytes, digest) = upload_and_apply_a_batch(hub);
    chunks_stored_once_per_project(hub, &world, &bytes, &digest);
    dry_run(hub);
    gzip_bomb(hub);
    client_flow(hub, work.path());
}

/// The helpdesk world, pushed by project one. Its directory.
fn push_helpdesk(hub: &Hub, work: &Path) -> std::path::PathBuf {
    let world = work.join("helpdesk");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    let client = Client::new(&hub.api, &hub.one.0, &hub.one.1).unwrap();
    client.push(&world, &PushOptions { slug: Some("helpdesk".into()), message: Some("first".into()), ..Default::default() }).unwrap();
    world
}

/// Bad flags, an unknown world, another project: refused, nothing opened.
fn opens_refused(hub: &Hub) {
    refused(hub, 400, "POST", "/api/public/worlds/helpdesk/data/batches", Some(r#"{"mode": "merge"}"#), "'mode' must be append or replace");
    refused(hub, 400, "POST", "/api/public/worlds/helpdesk/data/batches", Some(r#"{"publish": "soon"}"#), "'publish' must be now or later");
    refused(hub, 400, "POST", "/api/public/worlds/helpdesk/data/batches", Some(r#"{"atomic": "yes"}"#), "'atomic' must be true or false");
    refused(hub, 404, "POST", "/api/public/worlds/nowhere/data/batches", Some("{}"), "push it first");
    let (status, _) = call(hub, &hub.two, "POST", "/api/public/worlds/helpdesk/data/batches", Some("{}"));
    assert_eq!(status, 404, "another project's world is not found");
    let listed = expect(hub, 200, "GET", "/api/public/worlds/helpdesk/data/batches", None);
    assert_eq!(text(&listed, "batches"), "[]", "refused opens left no batch");
}

/// A batch and its limits; registration refusals; a chunk whose PUT body is not its
/// digest, too long, or sent to another object's URL; completing before the upload or
/// with a gap; then uploaded whole and applied. The first chunk's bytes and digest.
fn upload_and_apply_a_batch(hub: &Hub) -> (Vec<u8>, String) {
    let answer = expect(hub, 200, "POST", "/api/public/worlds/helpdesk/data/batches", Some(r#"{"mode": "append", "publish": "later"}"#));
    assert_eq!(text(&answer, "state"), "open");
    assert_eq!(answer.get("limits").and_then(|l| l.get("chunkBytes")).and_then(Value::as_i64), Some(CHUNK_LIMIT as i64));
    let batch = text(&answer, "batchId");
    let (status, _) = call(hub, &hub.two, "GET", &format!("/api/public/worlds/helpdesk/data/batches/{batch}"), None);
    assert_eq!(status, 404, "another project's batch is not found");

    // Registration refusals: a bad digest, an oversized chunk, a bad ordinal.
    let chunks = format!("/api/public/worlds/helpdesk/data/batches/{batch}/chunks");
    refused(hub, 400, "POST", &chunks, Some(r#"{"ordinal": 0, "digest": "XYZ", "bytes": 10, "rows": 1}"#), "'digest' must be the sha256");
    let big = format!(r#"{{"ordinal": 0, "digest": "{}", "bytes": {}, "rows": 1}}"#, "a".repeat(64), CHUNK_LIMIT + 1);
    refused(hub, 413, "POST", &chunks, Some(&big), "over this hub's chunk limit of 65536 bytes");
    refused(hub, 400, "POST", &chunks, Some(r#"{"ordinal": -1, "digest": "aa", "bytes": 10, "rows": 1}"#), "'ordinal' must be an integer");

    // A chunk whose PUT body is not its digest: refused, nothing stored.
    let (bytes, digest) = chunk(0, &[customer("W1"), customer("W2")]);
    let registered = register(hub, &batch, 0, &bytes, &digest, 2);
    assert_eq!(text(&registered, "uploaded"), "false");
    let url = text(&registered, "uploadUrl");
    let headers = registered.get("uploadHeaders").unwrap();
    assert_eq!(text(headers, "Content-Length"), bytes.len().to_string());
    let mut tampered = bytes.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    let (status, answer) = put(&url, &tampered);
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("BadDigest") && answer.contains("is not the digest it was registered with"), "{answer}");
    assert_eq!(chunk_objects(hub), 0, "a refused body is not stored");
    // A body longer than it was registered with.
    let (status, answer) = put(&url, &[bytes.clone(), vec![0u8; 10]].concat());
    assert_eq!(status, 413, "{answer}");
    // A URL used for another object is refused by its signature.
    let (status, _) = put(&url.replace(&digest, &"b".repeat(64)), &bytes);
    assert_eq!(status, 401);
    // Completing before the upload: refused, the batch stays open for it.
    refused(hub, 409, "POST", &format!("/api/public/worlds/helpdesk/data/batches/{batch}/complete"), None, "never uploaded");
    refused(
        hub,
        409,
        "POST",
        &format!("/api/public/worlds/helpdesk/data/batches/{batch}/chunks/{}/uploaded", text(&registered, "chunkId")),
        None,
        "has no stored bytes",
    );
    let (status, answer) = put(&url, &bytes);
    assert_eq!(status, 200, "{answer}");
    expect(
        hub,
        200,
        "POST",
        &format!("/api/public/worlds/helpdesk/data/batches/{batch}/chunks/{}/uploaded", text(&registered, "chunkId")),
        None,
    );
    // The same chunk again is the registered chunk; a gap is refused at complete.
    let again = register(hub, &batch, 0, &bytes, &digest, 2);
    assert_eq!((text(&again, "chunkId"), text(&again, "uploaded")), (text(&registered, "chunkId"), "true".to_string()));
    let (other, other_digest) = chunk(2, &[customer("W3")]);
    let gap = register(hub, &batch, 2, &other, &other_digest, 1);
    assert_eq!(put(&text(&gap, "uploadUrl"), &other).0, 200);
    refused(hub, 409, "POST", &format!("/api/public/worlds/helpdesk/data/batches/{batch}/complete"), None, "has no chunk 1");
    let (one, one_digest) = chunk(1, &[customer("W4")]);
    let filled = register(hub, &batch, 1, &one, &one_digest, 1);
    assert_eq!(put(&text(&filled, "uploadUrl"), &one).0, 200);
    expect(hub, 200, "POST", &format!("/api/public/worlds/helpdesk/data/batches/{batch}/complete"), None);
    refused(
        hub,
        409,
        "POST",
        &chunks,
        Some(&format!(r#"{{"ordinal": 3, "digest": "{digest}", "bytes": {}, "rows": 2}}"#, bytes.len())),
        "only while it is open or uploading",
    );
    let status = wait(hub, &batch);
    assert_eq!(text(&status, "state"), "applied", "{}", json::canonical(&status));
    assert_eq!(text(&status, "appliedRows"), "4");
    assert_eq!(chunk_objects(hub), 3);
    (bytes, digest)
}

/// Dedup: a chunk the project holds needs no upload; another project holding no such
/// bytes is asked to upload them.
fn chunks_stored_once_per_project(hub: &Hub, world: &Path, bytes: &[u8], digest: &str) {
    let second = open(hub, r#"{"publish": "later"}"#);
    let known = register(hub, &second, 0, bytes, digest, 2);
    assert_eq!(text(&known, "uploaded"), "true");
    assert!(known.get("uploadUrl").is_none(), "no URL for bytes the hub holds");
    expect(hub, 200, "POST", &format!("/api/public/worlds/helpdesk/data/batches/{second}/complete"), None);
    assert_eq!(text(&wait(hub, &second), "state"), "applied");
    assert_eq!(chunk_objects(hub), 3, "nothing stored twice");
    // Another project holding no such bytes is asked to upload them.
    let theirs = Client::new(&hub.api, &hub.two.0, &hub.two.1).unwrap();
    theirs.push(world, &PushOptions { slug: Some("helpdesk".into()), ..Default::default() }).unwrap();
    let (code, opened) = call(hub, &hub.two, "POST", "/api/public/worlds/helpdesk/data/batches", Some("{}"));
    assert_eq!(code, 200);
    let body = format!(r#"{{"ordinal": 0, "digest": "{digest}", "bytes": {}, "rows": 2}}"#, bytes.len());
    let (code, asked) =
        call(hub, &hub.two, "POST", &format!("/api/public/worlds/helpdesk/data/batches/{}/chunks", text(&opened, "batchId")), Some(&body));
    assert_eq!((code, text(&asked, "uploaded")), (200, "false".to_string()), "chunks are per project");
}

/// A dry run on the wire: refusals and counts found, nothing applied.
fn dry_run(hub: &Hub) {
    let dry = open(hub, r#"{"dryRun": true}"#);
    let (rows_dry, rows_dry_digest) = chunk(0, &[customer("D1"), customer("D1").replace("\"pro\"", "\"gold\"")]);
    let registered = register(hub, &dry, 0, &rows_dry, &rows_dry_digest, 2);
    assert_eq!(put(&text(&registered, "uploadUrl"), &rows_dry).0, 200);
    expect(hub, 200, "POST", &format!("/api/public/worlds/helpdesk/data/batches/{dry}/complete"), None);
    let checked = wait(hub, &dry);
    assert_eq!(
        (text(&checked, "state"), text(&checked, "refusalCount"), text(&checked, "dryRun")),
        ("refused".into(), "1".into(), "true".into())
    );
    let shown = expect(hub, 200, "GET", "/api/public/worlds/helpdesk/data", None);
    assert_eq!(
        shown.get("entityCounts").and_then(|c| c.get("customers")).and_then(Value::as_i64),
        Some(3 + 4),
        "a dry run applies nothing"
    );
}

/// A gzip bomb: small upload, past the chunk limit once gunzipped; the batch fails.
fn gzip_bomb(hub: &Hub) {
    let bomb_batch = open(hub, "{}");
    let huge = format!(r#"{{"entity":"customers","row":{{"id":"X","name":"{}"}}}}"#, "a".repeat(CHUNK_LIMIT * 2));
    let (bomb, bomb_digest) = chunk(0, &[huge]);
    let registered = register(hub, &bomb_batch, 0, &bomb, &bomb_digest, 1);
    assert_eq!(put(&text(&registered, "uploadUrl"), &bomb).0, 200);
    expect(hub, 200, "POST", &format!("/api/public/worlds/helpdesk/data/batches/{bomb_batch}/complete"), None);
    let failed = wait(hub, &bomb_batch);
    assert_eq!(text(&failed, "state"), "failed");
    assert!(text(&failed, "error").contains("expands to more than 65536 bytes"), "{}", json::canonical(&failed));
}

/// The client flow: import published later, then one version for both batches.
fn client_flow(hub: &Hub, work: &Path) {
    let rows = work.join("rows.jsonl");
    std::fs::write(&rows, (0..50).map(|i| format!("{}\n", customer(&format!("F{i}")))).collect::<String>()).unwrap();
    let data = WorldDataClient::new(&hub.api, &hub.one.0, &hub.one.1).unwrap();
    let options = ImportOptions {
        flags: Flags { publish: gateway_hub_client::world_data_client::Publish::Later, chunk_bytes: 1024, ..Flags::default() },
        parallel: 3,
        resume: false,
        message: None,
        base: work.to_path_buf(),
    };
    let manifest = wd::import_rows(&data, "helpdesk@main", &[rows.display().to_string()], &options, &Quiet).unwrap();
    assert!(manifest.chunk_count() > 3);
    let status = wd::wait(&data, "helpdesk", &manifest.batch_id(), &Quiet).unwrap();
    assert_eq!(text(&status, "state"), "applied");
    let shown = data.counts("helpdesk", None).unwrap();
    assert_eq!(shown.get("entityCounts").and_then(|c| c.get("customers")).and_then(Value::as_i64), Some(3 + 4 + 50));
    let published = data.publish("helpdesk", Some("both")).unwrap();
    let ids = published.get("batches").and_then(Value::as_array).unwrap();
    assert_eq!(ids.len(), 3, "every applied later batch: {}", json::canonical(&published));
    let rows = data.counts("helpdesk", Some("customers")).unwrap();
    assert_eq!(rows.get("rows").and_then(Value::as_array).map(Vec::len), Some(57));
    // The world's data head names one snapshot object; those it moved off are gone.
    let snapshots: usize = std::fs::read_dir(hub.data.path().join("objects/world-data"))
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|d| std::fs::read_dir(d.path().join("snapshots")).ok())
        .map(|d| d.filter_map(Result::ok).filter(|e| !e.file_name().to_string_lossy().starts_with('.')).count())
        .sum();
    assert_eq!(snapshots, 1);
    let unknown = data.counts("helpdesk", Some("nope")).unwrap_err().to_string();
    assert!(unknown.contains("-> 400") && unknown.contains("Unknown entity nope"), "{unknown}");
}

#[test]
fn world_data_on_sqlite() {
    world_data(&start(None));
}

#[test]
fn world_data_on_postgres() {
    let Some(url) = postgres_url("the world data tests") else { return };
    world_data(&start(Some(url)));
}

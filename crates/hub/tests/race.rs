//! Many clients finalize onto one branch from the same stale base at once: exactly one
//! wins, every other one gets a 409 that says what to do. Runs on SQLite (the default
//! store); two hub processes sharing one database file race the same way.

use gateway_bundle::archive::{gzip_bytes, sha256_base64, tar_bytes};
use gateway_hub::server::{Hub, Limits};
use gateway_hub::HubConfig;
use gateway_world::json::{self, object, Value};
use std::sync::{Arc, Barrier};

fn post(http: &reqwest::blocking::Client, url: &str, auth: &(String, String), body: &Value) -> (u16, Value) {
    let response = http
        .post(url)
        .basic_auth(&auth.0, Some(&auth.1))
        .header("content-type", "application/json")
        .body(json::canonical(body))
        .send()
        .expect("request");
    let status = response.status().as_u16();
    let text = response.text().expect("body");
    (status, json::parse(&text).expect("JSON answer").value)
}

async fn start(config: &HubConfig) -> (String, (String, String)) {
    let hub: Hub = config.open(None, Limits::default()).await.expect("open hub");
    let (_, public, secret) = gateway_hub::create_key(hub.meta.as_ref(), "race").await.expect("key");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(gateway_hub::server::serve_on(hub, listener));
    (format!("http://{addr}"), (public, secret))
}

/// Push `n` distinct versions (uploaded, not finalized) and return their ids.
fn prepare(http: &reqwest::blocking::Client, host: &str, auth: &(String, String), slug: &str, n: usize) -> Vec<String> {
    let api = format!("{host}/api/public/benchmark-containers");
    let (status, resolved) = post(http, &format!("{api}/resolve"), auth, &object([("slug", Value::str(slug))]));
    assert_eq!(status, 200, "{resolved:?}");
    let container = resolved.get("containerId").and_then(Value::as_str).unwrap().to_string();
    let mut ids = Vec::new();
    for i in 0..n {
        let tgz = gzip_bytes(&tar_bytes(&[("main.py".to_string(), format!("print({i})\n").into_bytes())]));
        let body = object([
            ("containerId", Value::str(container.clone())),
            ("contentHash", Value::str(format!("{i:064x}"))),
            ("bundleSha256", Value::str(sha256_base64(&tgz))),
            ("bundleSizeBytes", Value::Int(tgz.len() as i64)),
            ("fileManifest", Value::Array(vec![])),
            ("branch", Value::str("main")),
            ("baseVersionId", Value::Null),
        ]);
        let (status, version) = post(http, &format!("{api}/versions"), auth, &body);
        assert_eq!(status, 200, "{version:?}");
        let url = version.get("uploadUrl").and_then(Value::as_str).unwrap();
        let put = http.put(url).header("x-amz-checksum-sha256", sha256_base64(&tgz)).body(tgz).send().unwrap();
        assert!(put.status().is_success());
        ids.push(version.get("versionId").and_then(Value::as_str).unwrap().to_string());
    }
    ids
}

fn race(hosts: &[String], auth: &(String, String), ids: &[String], base: &str) -> (usize, usize) {
    let barrier = Arc::new(Barrier::new(ids.len()));
    let handles: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let (barrier, auth, id, base) = (barrier.clone(), auth.clone(), id.clone(), base.to_string());
            let host = hosts[i % hosts.len()].clone();
            std::thread::spawn(move || {
                let http = reqwest::blocking::Client::new();
                barrier.wait();
                let url = format!("{host}/api/public/benchmark-containers/versions/{id}/finalize");
                let (status, answer) =
                    post(&http, &url, &auth, &object([("branch", Value::str("main")), ("baseVersionId", Value::str(base))]));
                if status == 409 {
                    let message = answer.get("message").and_then(Value::as_str).unwrap_or_default();
                    assert!(message.contains("--force") && message.contains("pull"), "409 says what to do: {message}");
                }
                status
            })
        })
        .collect();
    let statuses: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    (statuses.iter().filter(|s| **s == 200).count(), statuses.iter().filter(|s| **s == 409).count())
}

fn run_race(configs: Vec<HubConfig>) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
    let started: Vec<(String, (String, String))> = configs.iter().map(|c| runtime.block_on(start(c))).collect();
    let hosts: Vec<String> = started.iter().map(|(h, _)| h.clone()).collect();
    let auth = started[0].1.clone();
    let http = reqwest::blocking::Client::new();
    let ids = prepare(&http, &hosts[0], &auth, "race-env", 17);
    // The first version becomes main's tip; the 16 others all claim it as their base.
    let api = format!("{}/api/public/benchmark-containers", hosts[0]);
    let (status, _) = post(&http, &format!("{api}/versions/{}/finalize", ids[0]), &auth, &object([("branch", Value::str("main"))]));
    assert_eq!(status, 200);
    let (won, refused) = race(&hosts, &auth, &ids[1..], &ids[0]);
    assert_eq!((won, refused), (1, 15), "exactly one winner per base");
    // A second round from the now-stale base: nobody wins.
    let (won, refused) = race(&hosts, &auth, &ids[1..5], &ids[0]);
    let winner_is_among = won <= 1;
    assert!(winner_is_among && won + refused == 4);
    drop(runtime);
}

#[test]
fn concurrent_pushes_from_one_base_have_one_winner_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    run_race(vec![HubConfig { data: dir.path().to_path_buf(), database: None, objects: None }]);
}

#[test]
fn two_hubs_on_one_sqlite_file_have_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let config = HubConfig { data: dir.path().to_path_buf(), database: None, objects: None };
    run_race(vec![config.clone(), config]);
}

//! `build_batch` (rows in bulk onto a snapshot, the hub's apply) on the helpdesk
//! example: atomic and per-chunk, refusals with their chunk and index, the same
//! refusals as `data check` gives for the same rows, replace, dry runs, the digest,
//! the sidecar, and the ledger and lineage the store keeps.

use gateway_world::batch::{build_batch, BatchOptions, ChunkSpec};
use gateway_world::check::{check_rows, CheckOptions};
use gateway_world::chunks::{compress_chunk, cut_chunks, ChunkOptions};
use gateway_world::json::{dumps, DumpOptions, Value};
use gateway_world::rows::Flow;
use gateway_world::snapshot::{batch_digest, default_snapshot, read_sidecar, EMPTY_DIGEST};
use std::path::{Path, PathBuf};

fn copy_dir(from: &Path, to: &Path) {
    gateway_common::fs::copy_tree(from, to, gateway_common::fs::Symlinks::Follow, &|_| false).unwrap();
}

fn world(dir: &Path) -> PathBuf {
    let root = dir.join("helpdesk");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &root);
    gateway_world::lifecycle::compile_world(&root).unwrap();
    root
}

fn customer(id: &str, email: &str) -> String {
    format!(
        r#"{{"entity":"customers","row":{{"id":"{id}","name":"N {id}","email":"{email}","tier":"pro","created_at":"2026-01-02T09:00:00Z"}}}}"#
    )
}

/// A customer whose tier is not one the schema allows.
fn bad_customer(id: &str) -> String {
    customer(id, &format!("{id}@example.com")).replace("\"pro\"", "\"gold\"")
}

fn ticket(id: i64, customer: &str) -> String {
    format!(
        r#"{{"entity":"tickets","row":{{"id":{id},"customer_id":"{customer}","subject":"S","status":"open","priority":1,"tags":[],"assignee":null,"opened_at":"2026-03-01T10:00:00Z"}}}}"#
    )
}

/// `lines` written to a rows file and cut into gzipped chunks of `chunk_rows` rows.
fn chunks(dir: &Path, name: &str, lines: &[String], chunk_rows: usize) -> (String, Vec<ChunkSpec>) {
    let file = dir.join(format!("{name}.jsonl"));
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let source = file.display().to_string();
    let options = ChunkOptions { chunk_rows: Some(chunk_rows), ..ChunkOptions::default() };
    let mut specs = Vec::new();
    cut_chunks(std::slice::from_ref(&source), &dir.join(format!("{name}-chunks")), &options, None, &mut |raw| {
        let chunk = compress_chunk(&raw)?;
        specs.push(ChunkSpec { ordinal: chunk.ordinal, path: chunk.path, entity: chunk.entity, digest: None });
        Ok(Flow::More)
    })
    .unwrap();
    (source, specs)
}

fn options(atomic: bool) -> BatchOptions {
    BatchOptions {
        mode: gateway_world::plan::Mode::Append,
        merge: gateway_world::check::Merge::Upsert,
        atomic,
        batch_id: "b1".into(),
        parent_digest: EMPTY_DIGEST.into(),
        dry_run: false,
        memory_budget: gateway_world::check::MEMORY_BUDGET,
    }
}

/// A private copy of the world's default snapshot.
fn parent(root: &Path, name: &str) -> PathBuf {
    let copy = root.parent().unwrap().join(format!("{name}.sqlite"));
    std::fs::copy(default_snapshot(root), &copy).unwrap();
    copy
}

fn count(snapshot: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open(snapshot).unwrap().query_row(sql, [], |r| r.get(0)).unwrap()
}

fn pretty(value: &Value) -> String {
    dumps(value, DumpOptions::PRETTY)
}

#[test]
fn atomic_batches_apply_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let contract = gateway_world::lifecycle::check_bundle(&root).unwrap();
    let before = gateway_world::data::entity_counts(&root).unwrap();
    let customers = before.get("customers").and_then(Value::as_i64).unwrap();
    let tickets = before.get("tickets").and_then(Value::as_i64).unwrap();

    // Good rows in three chunks, a ticket referencing a customer of a later chunk.
    let good =
        vec![ticket(900, "N1"), customer("N1", "n1@example.com"), customer("N2", "n2@example.com"), customer("N1", "n1b@example.com")];
    let (_, specs) = chunks(dir.path(), "good", &good, 2);
    assert_eq!(specs.len(), 2);
    let snapshot = parent(&root, "good");
    let outcome = build_batch(&contract, &snapshot, &specs, &options(true)).unwrap();
    assert_eq!(outcome.refusal_count, 0, "{:?}", outcome.refusals);
    assert!(outcome.written);
    assert_eq!(outcome.applied_rows, 3, "the repeated key merged (upsert: last wins)");
    assert_eq!(outcome.applied_chunks, vec![0, 1]);
    assert_eq!(outcome.entity_counts.get("customers").and_then(Value::as_i64), Some(customers + 2));
    assert_eq!(outcome.entity_counts.get("tickets").and_then(Value::as_i64), Some(tickets + 1));
    let digests: Vec<String> = specs.iter().map(|s| gateway_world::files::file_sha256(&s.path).unwrap()).collect();
    assert_eq!(outcome.batch_digest, batch_digest(EMPTY_DIGEST, "b1", &digests));
    let sidecar = read_sidecar(&snapshot).unwrap().unwrap();
    assert_eq!(sidecar.get("batchDigest").and_then(Value::as_str), Some(outcome.batch_digest.as_str()));
    assert_eq!(sidecar.get("fileSha256").and_then(Value::as_str), outcome.file_sha256.as_deref());
    // The store opens it (contract lock, DDL, every row audited), with the ledger and lineage.
    gateway_world::store::Store::open(&snapshot, contract.clone(), true).unwrap();
    assert_eq!(count(&snapshot, "SELECT COUNT(*) FROM _gateway_batches WHERE id = 'b1'"), 1);
    assert_eq!(count(&snapshot, "SELECT COUNT(*) FROM _gateway_lineage WHERE batch = 'b1'"), 3);
    let email: String = rusqlite::Connection::open(&snapshot)
        .unwrap()
        .query_row("SELECT json_extract(payload, '$.email') FROM customers WHERE _key = '[\"N1\"]'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(email, "n1b@example.com");

    // One bad row anywhere: nothing applies, every refusal is found, the file is gone.
    let bad = vec![customer("N3", "n3@example.com"), ticket(901, "NOPE"), bad_customer("N4"), ticket(0, "C1")];
    let (source, specs) = chunks(dir.path(), "bad", &bad, 2);
    let snapshot = parent(&root, "bad");
    let outcome = build_batch(&contract, &snapshot, &specs, &options(true)).unwrap();
    assert!(!outcome.written && !snapshot.exists());
    assert_eq!(outcome.applied_rows, 0);
    assert!(outcome.applied_chunks.is_empty());
    assert_eq!(outcome.refusal_count, 3, "{}", pretty(&Value::Array(outcome.refusals.clone())));
    let places: Vec<(i64, i64)> = outcome
        .refusals
        .iter()
        .map(|r| (r.get("chunk").and_then(Value::as_i64).unwrap(), r.get("index").and_then(Value::as_i64).unwrap()))
        .collect();
    assert!(places.contains(&(0, 1)) && places.contains(&(1, 0)) && places.contains(&(1, 1)), "{places:?}");
    assert_eq!(outcome.batch_digest, batch_digest(EMPTY_DIGEST, "b1", &[]));

    // The same refusals (and counts) as `data check` finds for the same rows in one chunk.
    let (_, one) = chunks(dir.path(), "one", &bad, 100);
    let snapshot = parent(&root, "one");
    let dry = BatchOptions { dry_run: true, ..options(true) };
    let outcome = build_batch(&contract, &snapshot, &one, &dry).unwrap();
    let checked = check_rows(&root, &[source], &CheckOptions::default(), None).unwrap();
    assert_eq!(pretty(&Value::Array(outcome.refusals.clone())), pretty(&Value::Array(checked.refusals.clone())));
    assert_eq!(pretty(&outcome.entity_counts), pretty(&checked.entity_counts));
    assert!(!outcome.written && !snapshot.exists(), "a dry run keeps nothing");
}

#[test]
fn per_chunk_batches_drop_a_refused_chunk_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let contract = gateway_world::lifecycle::check_bundle(&root).unwrap();
    let customers = gateway_world::data::entity_counts(&root).unwrap().get("customers").and_then(Value::as_i64).unwrap();
    // Chunk 0 good, chunk 1 has one bad row beside a good one, chunk 2 references chunk 0.
    let lines = vec![
        customer("P1", "p1@example.com"),
        customer("P2", "p2@example.com"),
        customer("P3", "p3@example.com"),
        bad_customer("P4"),
        ticket(950, "P1"),
        ticket(951, "P2"),
    ];
    let (_, specs) = chunks(dir.path(), "rows", &lines, 2);
    let snapshot = parent(&root, "rows");
    let outcome = build_batch(&contract, &snapshot, &specs, &options(false)).unwrap();
    assert!(outcome.written);
    assert_eq!(outcome.applied_chunks, vec![0, 2]);
    assert_eq!(outcome.applied_rows, 4);
    assert_eq!(outcome.refusal_count, 1);
    assert_eq!(outcome.refusals[0].get("chunk").and_then(Value::as_i64), Some(1));
    assert_eq!(outcome.refusals[0].get("index").and_then(Value::as_i64), Some(1));
    assert_eq!(outcome.entity_counts.get("customers").and_then(Value::as_i64), Some(customers + 2), "P3 went with its chunk");
    assert_eq!(count(&snapshot, "SELECT COUNT(*) FROM customers WHERE _key = '[\"P3\"]'"), 0);
    assert_eq!(count(&snapshot, "SELECT COUNT(*) FROM _gateway_batches"), 3, "the initial batch and one per applied chunk");
    let applied: Vec<String> =
        specs.iter().filter(|s| s.ordinal != 1).map(|s| gateway_world::files::file_sha256(&s.path).unwrap()).collect();
    assert_eq!(outcome.batch_digest, batch_digest(EMPTY_DIGEST, "b1", &applied));
}

#[test]
fn replace_and_fill() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path());
    let contract = gateway_world::lifecycle::check_bundle(&root).unwrap();
    // Replace customers while tickets still reference them: the store's own refusal.
    let (_, specs) = chunks(dir.path(), "replace", &[customer("R1", "r1@example.com")], 10);
    let snapshot = parent(&root, "replace");
    let replace = BatchOptions { mode: gateway_world::plan::Mode::Replace, ..options(true) };
    let outcome = build_batch(&contract, &snapshot, &specs, &replace).unwrap();
    assert_eq!(outcome.refusal_count, 1, "{:?}", outcome.refusals);
    assert!(!outcome.written);
    // Fill: the first row wins, later ones only add members.
    let lines = vec![
        r#"{"entity":"tickets","row":{"id":960,"customer_id":"C1","subject":"first","status":"open","priority":1,"tags":[],"opened_at":"2026-03-01T10:00:00Z"}}"#.to_string(),
        r#"{"entity":"tickets","row":{"id":960,"customer_id":"C1","subject":"second","status":"open","priority":2,"tags":[],"assignee":"ann","opened_at":"2026-03-01T10:00:00Z"}}"#.to_string(),
    ];
    let (_, specs) = chunks(dir.path(), "fill", &lines, 10);
    let snapshot = parent(&root, "fill");
    let fill = BatchOptions { merge: gateway_world::check::Merge::Fill, ..options(true) };
    let outcome = build_batch(&contract, &snapshot, &specs, &fill).unwrap();
    assert_eq!(outcome.refusal_count, 0, "{:?}", outcome.refusals);
    let payload: String = rusqlite::Connection::open(&snapshot)
        .unwrap()
        .query_row("SELECT payload FROM tickets WHERE _key = '[960]'", [], |r| r.get(0))
        .unwrap();
    assert!(payload.contains("\"subject\":\"first\"") && payload.contains("\"assignee\":\"ann\""), "{payload}");
}

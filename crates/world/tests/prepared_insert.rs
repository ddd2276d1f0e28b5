//! Inserts prepared away from the writer (`PreparedInsert`) leave the store exactly
//! as `apply_batch` of the same one-mutation batch does — the row, the ledger row
//! with its digest, the lineage — and refuse what it refuses, naming the same batch,
//! index, code and location; a preparation may run on another thread.

use gateway_world::json::{canonical, parse, Value};
use gateway_world::store::{PreparedInsert, Store};
use std::path::Path;

fn value(text: &str) -> Value {
    parse(text).unwrap().value
}

fn helpdesk(dir: &Path) -> std::sync::Arc<gateway_world::Contract> {
    let root = dir.join("helpdesk");
    gateway_common::fs::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"),
        &root,
        gateway_common::fs::Symlinks::Follow,
        &|_| false,
    )
    .unwrap();
    gateway_world::lifecycle::compile_world(&root).unwrap();
    gateway_world::lifecycle::check_bundle(&root).unwrap()
}

const CUSTOMER: &str = r#"{"id": "P1", "name": "N", "email": "p1@example.com", "tier": "pro", "created_at": "2026-01-02T09:00:00Z"}"#;

/// (batch id, digest, metadata) of every ledger row, and (batch, ordinal, entity, key, source) of the lineage.
fn ledger(store: &Store) -> (Vec<(String, String, String)>, Vec<(String, i64, String, String, String)>) {
    let conn = store.connection();
    let batches = conn
        .prepare("SELECT id, digest, metadata FROM _gateway_batches ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let lineage = conn
        .prepare("SELECT batch, ordinal, entity, key, source FROM _gateway_lineage ORDER BY batch")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (batches, lineage)
}

#[test]
fn a_prepared_insert_writes_and_refuses_as_its_batch_would() {
    let dir = tempfile::tempdir().unwrap();
    let contract = helpdesk(dir.path());
    let mut prepared_store = Store::create(&dir.path().join("prepared.db"), contract.clone()).unwrap();
    let mut batch_store = Store::create(&dir.path().join("batch.db"), contract.clone()).unwrap();
    let source = value(r#"{"record": "api.create"}"#);

    // Prepared on another thread, applied on this one.
    let row = value(CUSTOMER);
    let prepared = {
        let (contract, row, source) = (contract.clone(), row.clone(), source.clone());
        std::thread::spawn(move || PreparedInsert::new(&contract, "customers", &row, Some(source))).join().unwrap().unwrap()
    };
    assert_eq!(prepared.entity(), "customers");
    let (batches, lineage) = ledger(&prepared_store);
    assert!(batches.is_empty() && lineage.is_empty(), "preparing writes nothing");
    let written = prepared_store.insert_prepared(prepared).unwrap();
    assert_eq!(canonical(&written), canonical(&row));

    // The same batch applied whole: the same ledger and lineage rows.
    let (batches, lineage) = ledger(&prepared_store);
    assert_eq!(batches.len(), 1);
    let (id, digest, metadata) = &batches[0];
    let mut batch = value(metadata);
    let Value::Object(head) = &mut batch else { panic!("metadata is an object") };
    head.insert(
        "mutations".into(),
        value(&format!(r#"[{{"op": "insert", "entity": "customers", "value": {CUSTOMER}, "source": {{"record": "api.create"}}}}]"#)),
    );
    batch_store.apply_batch(&batch).unwrap();
    assert_eq!(ledger(&batch_store), (batches.clone(), lineage.clone()));
    assert_eq!(lineage, vec![(id.clone(), 0, "customers".to_string(), r#"["P1"]"#.to_string(), r#"{"record":"api.create"}"#.to_string())]);
    assert_eq!(digest.len(), 64);
    assert_eq!(prepared_store.get("customers", &value(r#"{"id": "P1"}"#)).unwrap().map(|v| canonical(&v)), Some(canonical(&row)));

    // Refusals: a row its schema refuses (prepared), a taken key (in the writer);
    // each named as the batch's own refusal is, and nothing written.
    let refusal = |error: gateway_world::Error| match error {
        gateway_world::Error::Contract(error) => (
            error.code.clone(),
            format!("{} {}", error.schema_path, error.path),
            error.context.iter().find(|(k, _)| k == "index").map(|(_, v)| canonical(v)),
        ),
        other => panic!("not a refusal: {other}"),
    };
    let bad = value(&CUSTOMER.replace("\"pro\"", "\"gold\"").replace("P1", "P2"));
    let prepared_bad = refusal(PreparedInsert::new(&contract, "customers", &bad, Some(source.clone())).unwrap_err());
    let batch_bad = refusal(batch_store.insert("customers", &bad, Some(source.clone())).unwrap_err());
    assert_eq!(prepared_bad, batch_bad);
    assert_eq!(prepared_bad.2.as_deref(), Some("0"));
    let taken = PreparedInsert::new(&contract, "customers", &row, Some(source.clone())).unwrap();
    let (code, _, _) = refusal(prepared_store.insert_prepared(taken).unwrap_err());
    assert_eq!(code, "unique");
    assert_eq!(ledger(&prepared_store).0.len(), 1, "a refused insert leaves no ledger row");
    let unknown = refusal(PreparedInsert::new(&contract, "nothing", &row, None).unwrap_err());
    assert_eq!(unknown.0, "entity");
}

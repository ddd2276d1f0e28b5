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

#[test]
fn grouped_prepared_inserts_refuse_alone_and_a_broken_group_rolls_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let contract = helpdesk(dir.path());
    assert!(contract.entity("customers").unwrap().relationships.is_empty(), "the savepoint-free path is the one tested");
    let mut store = Store::create(&dir.path().join("grouped.db"), contract.clone()).unwrap();
    let source = value(r#"{"record": "api.create"}"#);
    let customer = |id: &str| value(&CUSTOMER.replace("P1", id).replace("p1@", &format!("{}@", id.to_lowercase())));
    let prepare = |row: &Value| PreparedInsert::new(&contract, "customers", row, Some(source.clone())).unwrap();
    let count = |store: &Store, sql: &str| -> i64 { store.connection().query_row(sql, [], |r| r.get(0)).unwrap() };

    // A group: a taken key is refused in the middle, the writes around it commit.
    store.begin_group().unwrap();
    store.insert_prepared(prepare(&customer("P1"))).unwrap();
    let refused = store.insert_prepared(prepare(&customer("P1"))).unwrap_err();
    assert!(matches!(&refused, gateway_world::Error::Contract(e) if e.code == "unique"), "{refused}");
    store.insert_prepared(prepare(&customer("P3"))).unwrap();
    store.commit_group().unwrap();
    let (batches, lineage) = ledger(&store);
    assert_eq!((batches.len(), lineage.len()), (2, 2), "the refused insert left no ledger or lineage row");
    assert_eq!(count(&store, "SELECT COUNT(*) FROM customers"), 2);

    // A write that fails after its row is in (its ledger id taken behind the store's
    // back) breaks the group: nothing of the group is committed.
    store.begin_group().unwrap();
    store.insert_prepared(prepare(&customer("P4"))).unwrap();
    let doomed = prepare(&customer("P5"));
    store.connection().execute("INSERT INTO _gateway_batches VALUES (?1, 'x', '{}')", [doomed.batch_id()]).unwrap();
    assert!(store.insert_prepared(doomed).is_err());
    let failed = store.commit_group().unwrap_err();
    assert!(failed.to_string().contains("rolled back"), "{failed}");
    assert_eq!(count(&store, "SELECT COUNT(*) FROM customers"), 2, "P4 and P5 are gone with their group");
    assert_eq!(ledger(&store), (batches, lineage));
    let ok: String = store.connection().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");

    // The store goes on: the next group commits.
    store.begin_group().unwrap();
    store.insert_prepared(prepare(&customer("P6"))).unwrap();
    store.commit_group().unwrap();
    assert_eq!(count(&store, "SELECT COUNT(*) FROM customers"), 3);
}

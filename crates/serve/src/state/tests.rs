//! The session store's tests: grouped writes, caches after writes, index-only
//! counts, durable sessions across restarts.

use super::db::{exact_expression, fold_expression};
use super::*;
use gateway_world::json::object;

fn helpdesk() -> Arc<WorldState> {
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
    Arc::new(WorldState::open(&world, BTreeMap::new()).expect("the example opens"))
}

fn customer(id: &str) -> Value {
    object([
        ("id", Value::str(id)),
        ("name", Value::str("Grouped Writer")),
        ("email", Value::Str(format!("{}@example.com", id.to_lowercase()))),
        ("tier", Value::str("free")),
        ("created_at", Value::str("2026-01-01T00:00:00Z")),
    ])
}

fn count(state: &WorldState, sql: &'static str) -> i64 {
    state.write(|store| Ok(store.connection().query_row(sql, [], |r| r.get::<_, i64>(0))?), None).expect("count")
}

#[test]
fn grouped_writes_share_commits_but_stay_separate_batches() {
    let state = helpdesk();
    let customers = state.rows("customers").unwrap().len();
    let batches = count(&state, "SELECT COUNT(*) FROM _gateway_batches");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let answers: Vec<Result<Value>> = runtime.block_on(async {
        let tasks: Vec<_> = (0..200)
            .map(|n| {
                let state = state.clone();
                // C1 exists already: that one write is refused, alone.
                let id = if n == 77 { "C1".to_string() } else { format!("G{n}") };
                tokio::spawn(async move {
                    let row = customer(&id);
                    let job: WriteJob = Box::new(move |store| store.insert("customers", &row, None));
                    state.write_grouped(job, Some("customers")).await
                })
            })
            .collect();
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.expect("task"));
        }
        answers
    });
    let refused: Vec<usize> = answers.iter().enumerate().filter(|(_, a)| a.is_err()).map(|(n, _)| n).collect();
    assert_eq!(refused, vec![77]);
    assert!(answers[77].as_ref().unwrap_err().to_string().contains("unique"), "{:?}", answers[77]);
    assert_eq!(answers[3].as_ref().unwrap().get("id").and_then(Value::as_str), Some("G3"));
    // Every accepted write is visible to readers once answered, each its own batch
    // with its own lineage row; the refused one left nothing.
    assert_eq!(state.rows("customers").unwrap().len(), customers + 199);
    assert_eq!(count(&state, "SELECT COUNT(*) FROM _gateway_batches"), batches + 199);
    assert_eq!(count(&state, "SELECT COUNT(*) FROM _gateway_lineage WHERE key LIKE '%G%'"), 199);
    let commits = state.group_commits();
    assert!((1..199).contains(&commits), "199 writes took {commits} commits");
}

#[test]
fn a_grouped_write_sees_the_writes_before_it_and_caches_follow() {
    let state = helpdesk();
    // A column cache built before the writes must not survive them.
    let (before, _) =
        state.select("customers", &[Filter { path: "tier".into(), mode: "equals".into(), wanted: "free".into() }], None).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let first: WriteJob = Box::new(|store| store.insert("customers", &customer("H1"), None));
        // The second write reads the first inside the same group.
        let second: WriteJob = Box::new(|store| {
            let found = store.get("customers", &object([("id", Value::str("H1"))]))?;
            assert!(found.is_some(), "the earlier write of the group is visible to the later one");
            store.insert("customers", &customer("H2"), None)
        });
        let (a, b) = tokio::join!(state.write_grouped(first, Some("customers")), state.write_grouped(second, Some("customers")));
        a.unwrap();
        b.unwrap();
    });
    let (after, _) =
        state.select("customers", &[Filter { path: "tier".into(), mode: "equals".into(), wanted: "free".into() }], None).unwrap();
    assert_eq!(after, before + 2);
}

#[test]
fn a_count_of_exact_strings_is_answered_by_the_serving_index() {
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
    let indexed = BTreeMap::from([("customers".to_string(), vec!["name".to_string()]), ("tickets".to_string(), vec!["tags".to_string()])]);
    let state = WorldState::open(&world, indexed).unwrap();
    for (id, name) in [("X1", "Grouped Writer"), ("X2", "GROUPED WRITER"), ("X3", "Grouped Writer")] {
        let Value::Object(mut row) = customer(id) else { unreachable!() };
        row.insert("name".into(), Value::str(name));
        let row = Value::Object(row);
        state.write(|store| store.insert("customers", &row, None), Some("customers")).unwrap();
    }
    let by_rows = |entity: &str, path: &str, wanted: &str| {
        state.rows(entity).unwrap().iter().filter(|r| dig(r, path).and_then(Value::as_str) == Some(wanted)).count() as i64
    };
    assert_eq!(state.count_equal("customers", &[("name", "Grouped Writer")]).unwrap(), Some(2), "the case counts");
    assert_eq!(by_rows("customers", "name", "Grouped Writer"), 2);
    // An array holding the string is not the string.
    assert_eq!(state.count_equal("tickets", &[("tags", "billing")]).unwrap(), Some(by_rows("tickets", "tags", "billing")));
    assert_eq!(state.count_equal("customers", &[("email", "x")]).unwrap(), None, "no index on email");
    // The program reads the index's columns only: the table's cursor is opened
    // (a deferred seek) but no column of it is ever read.
    let program: Vec<(String, i64)> = state
        .write(
            |store| {
                let sql = format!(
                    "EXPLAIN SELECT COUNT(*) FROM customers WHERE {} = 'a' AND {} = 'A'",
                    fold_expression("name"),
                    exact_expression("name")
                );
                let mut statement = store.connection().prepare(&sql)?;
                let ops = statement.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, i64>(2)?)))?;
                Ok(ops.collect::<rusqlite::Result<Vec<_>>>()?)
            },
            None,
        )
        .unwrap();
    let table = program.iter().find(|(op, _)| op == "OpenRead").map(|(_, cursor)| *cursor);
    let columns: Vec<i64> = program.iter().filter(|(op, _)| op == "Column").map(|(_, cursor)| *cursor).collect();
    assert!(!columns.is_empty() && !columns.contains(&table.unwrap()), "{program:?}");
}

#[test]
fn a_durable_state_continues_after_a_restart_and_resets_in_place() {
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
    let dir = tempfile::tempdir().unwrap();
    let template = || Arc::new(Template::open(&world, BTreeMap::new()).unwrap());
    let customers;
    {
        let state = WorldState::durable(template(), dir.path()).unwrap();
        customers = state.rows("customers").unwrap().len();
        state.write(|store| store.insert("customers", &customer("D1"), None), Some("customers")).unwrap();
    }
    let state = WorldState::durable(template(), dir.path()).unwrap();
    assert_eq!(state.rows("customers").unwrap().len(), customers + 1, "the write outlived the process's state");
    state.reset().unwrap();
    assert_eq!(state.rows("customers").unwrap().len(), customers);
    drop(state);
    let state = WorldState::durable(template(), dir.path()).unwrap();
    assert_eq!(state.rows("customers").unwrap().len(), customers, "the reset is what a restart finds");
    let databases = std::fs::read_dir(dir.path()).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".db")).count();
    assert_eq!(databases, 1, "retired databases are removed");
}

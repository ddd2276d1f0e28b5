//! The in-memory apply of `data check` against the exact one (a scratch SQLite
//! copy): for every batch here both must give the same refusals and counts.

use gateway_world::check::{check_rows, CheckOptions};
use gateway_world::json::{dumps, DumpOptions, Value};

const PRETTY: DumpOptions = DumpOptions::PRETTY;
use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A compiled copy of the example world, with `extra` more customers in its seed.
fn world(dir: &Path, extra: usize) -> PathBuf {
    let root = dir.join("helpdesk");
    copy_dir(&example(), &root);
    if extra > 0 {
        let path = root.join("data/initial.json");
        let mut batch = gateway_world::json::parse_clean(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Value::Object(map) = &mut batch else { panic!("batch") };
        let Some(Value::Array(mutations)) = map.get_mut("mutations") else { panic!("mutations") };
        for i in 0..extra {
            let row = format!(
                r#"{{"entity":"customers","op":"insert","source":{{"record":"x:{i}"}},"value":{{"created_at":"2026-01-02T09:00:00Z","email":"s{i}@example.com","id":"S{i}","name":"S {i}","tier":"pro"}}}}"#
            );
            mutations.push(gateway_world::json::parse_clean(&row).unwrap());
        }
        std::fs::write(&path, dumps(&batch, PRETTY)).unwrap();
    }
    gateway_world::lifecycle::compile_world(&root).unwrap();
    root
}

fn customer(id: &str, email: &str) -> String {
    format!(
        r#"{{"entity":"customers","row":{{"id":"{id}","name":"N {id}","email":"{email}","tier":"pro","created_at":"2026-01-02T09:00:00Z"}}}}"#
    )
}

fn ticket(id: i64, customer: &str) -> String {
    format!(
        r#"{{"entity":"tickets","row":{{"id":{id},"customer_id":"{customer}","subject":"S","status":"open","priority":1,"tags":[],"assignee":null,"opened_at":"2026-03-01T10:00:00Z"}}}}"#
    )
}

/// Check `lines` both ways; returns the report, after asserting they agree.
fn both(root: &Path, name: &str, lines: &[String]) -> Value {
    let file = root.parent().unwrap().join(format!("{name}.jsonl"));
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let sources = vec![file.display().to_string()];
    let run = |exact: bool, memory_budget: usize| {
        let options = CheckOptions { exact, memory_budget, ..CheckOptions::default() };
        dumps(&check_rows(root, &sources, &options, None).unwrap().to_json("w"), PRETTY)
    };
    let fast = run(false, usize::MAX);
    assert_eq!(fast, run(true, usize::MAX), "{name}: the in-memory apply disagrees");
    assert_eq!(fast, run(false, 0), "{name}: rows held on disk change the outcome");
    assert_eq!(fast, run(true, 0), "{name}: the exact apply of rows on disk disagrees");
    gateway_world::json::parse_clean(&fast).unwrap()
}

fn refused(report: &Value) -> Vec<String> {
    let Some(Value::Array(records)) = report.get("refusals") else { panic!("refusals") };
    records.iter().map(|r| r.get("detail").and_then(Value::as_str).unwrap().to_string()).collect()
}

const CONFLICT: &str = "Primary or unique key conflicts with existing state";

#[test]
fn in_memory_apply_agrees_with_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path(), 0);
    let fine = both(&root, "fine", &[customer("N1", "n1@x.io"), customer("N2", "n2@x.io"), ticket(900, "N1"), ticket(901, "C1")]);
    assert!(refused(&fine).is_empty());
    assert!(matches!(fine.get("entityCounts").and_then(|c| c.get("customers")), Some(Value::Int(5))), "{fine:?}");

    let stored = both(&root, "stored", &[customer("N1", "n1@x.io"), customer("N2", "ada@example.com")]);
    assert_eq!(refused(&stored), [CONFLICT]);
    let within = both(&root, "within", &[customer("N1", "same@x.io"), customer("N2", "same@x.io")]);
    assert_eq!(refused(&within), [CONFLICT]);
    let update = both(&root, "update", &[customer("C1", "grace@example.com")]);
    assert_eq!(refused(&update), [CONFLICT]);
    // C1 gives its address up first, so a new row may take it.
    let moved = both(&root, "moved", &[customer("C1", "ada2@example.com"), customer("N1", "ada@example.com")]);
    assert!(refused(&moved).is_empty(), "{moved:?}");
    // A new row takes an address an update frees only later: SQLite refuses the insert.
    let late = both(&root, "late", &[customer("N1", "ada@example.com"), customer("C1", "ada2@example.com")]);
    assert_eq!(refused(&late), [CONFLICT]);
    let swap = both(&root, "swap", &[customer("C1", "grace@example.com"), customer("C2", "ada@example.com")]);
    assert_eq!(refused(&swap), [CONFLICT]);
    let updated_then_taken = both(&root, "retake", &[customer("C1", "fresh@x.io"), customer("N1", "fresh@x.io")]);
    assert_eq!(refused(&updated_then_taken), [CONFLICT]);
    let missing = both(&root, "missing", &[ticket(902, "NOPE")]);
    assert_eq!(refused(&missing).len(), 1);
}

#[test]
fn in_memory_apply_agrees_on_a_large_parent() {
    // More stored rows than the apply reads whole: it looks rows up by index instead.
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path(), 10_050);
    let fine = both(&root, "fine", &[customer("N1", "n1@x.io"), customer("S5", "s5-new@x.io"), ticket(900, "S7")]);
    assert!(refused(&fine).is_empty());
    let stored = both(&root, "stored", &[customer("N1", "s9@example.com")]);
    assert_eq!(refused(&stored), [CONFLICT]);
    let update = both(&root, "update", &[customer("S1", "s2@example.com")]);
    assert_eq!(refused(&update), [CONFLICT]);
    let moved = both(&root, "moved", &[customer("S1", "s1-new@x.io"), customer("N1", "s1@example.com")]);
    assert!(refused(&moved).is_empty());
}

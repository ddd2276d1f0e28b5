//! The in-memory apply of `data check` against the exact one (a scratch SQLite
//! copy), and rows read from their text against rows parsed: for every batch here
//! all must give the same refusals and counts.

use gateway_world::check::{check_rows, CheckOptions};
use gateway_world::json::{dumps, DumpOptions, Value};

const PRETTY: DumpOptions = DumpOptions::PRETTY;
use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk")
}

fn copy_dir(from: &Path, to: &Path) {
    gateway_common::fs::copy_tree(from, to, gateway_common::fs::Symlinks::Follow, &|_| false).unwrap();
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

/// Check `lines` every way; returns the report, after asserting they agree.
fn both(root: &Path, name: &str, lines: &[String]) -> Value {
    every_way(root, name, lines, CheckOptions::default())
}

fn every_way(root: &Path, name: &str, lines: &[String], base: CheckOptions) -> Value {
    let file = root.parent().unwrap().join(format!("{name}.jsonl"));
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let sources = vec![file.display().to_string()];
    let run = |exact: bool, memory_budget: usize, scan: bool| {
        let options = CheckOptions { exact, memory_budget, scan, ..base.clone() };
        dumps(&check_rows(root, &sources, &options, None).unwrap().to_json("w"), PRETTY)
    };
    let fast = run(false, usize::MAX, true);
    assert_eq!(fast, run(false, usize::MAX, false), "{name}: rows read from their text differ from rows parsed");
    assert_eq!(fast, run(true, usize::MAX, true), "{name}: the in-memory apply disagrees");
    assert_eq!(fast, run(false, 0, true), "{name}: rows held on disk change the outcome");
    assert_eq!(fast, run(true, 0, false), "{name}: the exact apply of rows on disk disagrees");
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
    // Updates naming targets the batch does not hold: refused row by row, the rest apply.
    let audited = both(&root, "audited", &[ticket(101, "N1"), ticket(103, "C2"), ticket(102, "GONE"), ticket(104, "ALSO-GONE")]);
    assert_eq!(refused(&audited).len(), 3, "{audited:?}");
    let fine_update = both(&root, "fine-update", &[customer("N1", "n1@x.io"), ticket(101, "N1"), ticket(102, "C3")]);
    assert!(refused(&fine_update).is_empty(), "{fine_update:?}");
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

#[test]
fn rows_read_from_their_text_agree_with_rows_parsed() {
    // Small chunks: a refusal's chunk and index depend on every earlier row's canonical length.
    let dir = tempfile::tempdir().unwrap();
    let root = world(dir.path(), 0);
    let options = CheckOptions { chunk_bytes: 400, ..CheckOptions::default() };
    let mut lines = vec![
        customer("N1", "n1@x.io"),
        // Key order, spacing, escapes, non-ASCII, a float key, nested values.
        r#"{"entity": "customers", "row": {"tier": "pro", "email": "n2@x.io", "name": "Zoë \u00e9 \"q\"", "id": "N2", "created_at": "2026-01-02T09:00:00Z"}}"#.into(),
        r#"{"entity":"tickets","row":{"id":903.0,"customer_id":"N1","subject":"S","status":"open","priority":2,"tags":["a",{"z":1,"a":[1.5,-0]}],"assignee":null,"opened_at":"2026-03-01T10:00:00Z"}}"#.into(),
        r#"{"entity":"tickets","row":{"id":904,"customer_id":"N2","subject":"😀","status":"open","priority":1e0,"tags":[],"assignee":null,"opened_at":"2026-03-01T10:00:00Z"}}"#.into(),
        // Refusals among them: a repeated member, a bad type, an unknown member, an unknown entity.
        r#"{"entity":"customers","row":{"id":"N3","id":"N4","name":"N","email":"n3@x.io","tier":"pro","created_at":"2026-01-02T09:00:00Z"}}"#.into(),
        r#"{"entity":"tickets","row":{"id":"x","customer_id":"N1","subject":"S","status":"open","priority":1,"tags":[],"assignee":null,"opened_at":"2026-03-01T10:00:00Z"}}"#.into(),
        r#"{"entity":"customers","row":{"id":"N5","name":"N","email":"n5@x.io","tier":"pro","created_at":"2026-01-02T09:00:00Z","extra":1}}"#.into(),
        r#"{"entity":"nope","row":{"id":1}}"#.into(),
        ticket(905, "NOPE"),
    ];
    lines.extend((0..40).map(|i| ticket(1000 + i, if i % 2 == 0 { "N1" } else { "C1" })));
    lines.push(customer("N1", "n1-later@x.io"));
    let report = every_way(&root, "mixed", &lines, options.clone());
    assert!(refused(&report).len() >= 4, "{report:?}");
    // Bare rows with --entity, and a fill merge.
    let bare: Vec<String> = (0..5)
        .map(|i| format!(r#"{{"id":"B{i}","name":"N","email":"b{i}@x.io","tier":"pro","created_at":"2026-01-02T09:00:00Z"}}"#))
        .collect();
    every_way(&root, "bare", &bare, CheckOptions { entity: Some("customers".into()), ..options.clone() });
    every_way(&root, "fill", &lines, CheckOptions { merge: gateway_world::check::Merge::Fill, ..options.clone() });
    // The same rows as a document `{entity: [rows]}` (rows as written, grouped by entity).
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for line in &lines {
        let name = line.split('"').nth(3).unwrap().to_string();
        let body = line[line.find("\"row\":").unwrap() + 6..line.len() - 1].trim().to_string();
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, rows)) => rows.push(body),
            None => groups.push((name, vec![body])),
        }
    }
    let document: Vec<String> = groups.iter().map(|(name, rows)| format!("\"{name}\": [\n{}\n]", rows.join(",\n"))).collect();
    let document = vec!["{".to_string(), document.join(",\n"), "}".to_string()];
    let report = every_way(&root, "document", &document, options);
    assert!(refused(&report).len() >= 4, "{report:?}");
}

//! An import builds the world's contract once (it used to build it four times:
//! compile, the staged proof, the recompile, the check) and still leaves a world
//! that checks. Its own test binary: the build counter is process-wide.

use std::path::Path;

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn an_import_builds_the_contract_once() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("helpdesk");
    copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    gateway_world::lifecycle::compile_world(&world).unwrap();
    let rows = dir.path().join("customers.jsonl");
    std::fs::write(
        &rows,
        "{\"id\": \"C77\", \"name\": \"Grace\", \"email\": \"c77.only@example.org\", \"tier\": \"free\", \"created_at\": \"2026-03-01T00:00:00Z\"}\n",
    )
    .unwrap();
    let parsed = gateway_world::import::parse_rows(&[rows.display().to_string()], Some("customers")).unwrap();

    let before = gateway_world::world::contract_builds();
    let outcome = gateway_world::import::import_rows(&world, &parsed, gateway_world::plan::Mode::Append, None).unwrap();
    let builds = gateway_world::world::contract_builds() - before;

    assert!(matches!(outcome.get("changed"), Some(gateway_world::Value::Bool(true))), "{outcome:?}");
    assert_eq!(builds, 1, "an import builds the contract once");
    // What it left is a world whose artifacts and snapshots check.
    gateway_world::lifecycle::check_bundle(&world).expect("the imported world checks");
    let counts = gateway_world::data::entity_counts(&world).unwrap();
    assert!(gateway_world::json::canonical(&counts).contains("\"customers\""), "{counts:?}");
}

//! The helpdesk example with two task specs (solve ticket 101, solve ticket 103).

use gateway_test_support::copy_tree as copy;
use std::path::{Path, PathBuf};

/// A task spec: solve ticket `id` (assertions grader, reference solution).
pub fn task(id: u32) -> String {
    format!(
        r#"{{"name": "solve-{id}", "instruction": "Ticket {id} is fixed: solve it.",
 "grader": {{"kind": "assertions", "checks": [{{"id": "solved", "entity": "tickets", "where": {{"id": {id}}}, "assert": "all", "field": "status", "op": "eq", "value": "solved"}}]}},
 "metadata": {{"solution": [{{"tool": "solve_ticket", "args": {{"id": {id}}}}}]}}}}"#
    )
}

/// `<root>/helpdesk`: the helpdesk example with two tasks, solve ticket 101 and 103.
pub fn world(root: &Path) -> PathBuf {
    let world = root.join("helpdesk");
    copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    std::fs::create_dir_all(world.join("tasks")).unwrap();
    for id in [101, 103] {
        std::fs::write(world.join(format!("tasks/solve-{id}.json")), task(id)).unwrap();
    }
    world
}

/// [`world`] under `work`, pushed as `helpdesk` to the hub `env` names.
pub fn pushed_world(work: &Path, env: &[(&str, &str)]) -> PathBuf {
    let world = world(work);
    let pushed = super::gateway(work, &["bench", "push", world.to_str().unwrap(), "--slug", "helpdesk"], env);
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);
    world
}

//! `gateway worlds run --task-id / --task-set` against our real hub: the hub's
//! stored tasks (`gateway worlds task create`) are run instead of the world's own
//! `tasks/*.json`, a pinned version runs that version, a set runs every task that
//! names it, and a task of another world, an unknown id or an empty set is refused
//! with a message naming it.

use std::path::Path;

mod common;
mod support;
use support::{gateway, pushed_world, world, Out};

fn stored(work: &Path, env: &[(&str, &str)], file: &str, spec: &str, world: &str) -> String {
    std::fs::write(work.join(file), spec).unwrap();
    let out = gateway(work, &["worlds", "task", "create", file, "-w", world], env);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out.json()["id"].as_str().unwrap().to_string()
}

/// A task that asks for `status = want` on ticket `id`, in set `set`.
fn spec(name: &str, id: u32, want: &str, set: &str) -> String {
    format!(
        r#"{{"name": "{name}", "instruction": "Ticket {id}: make it {want}.",
 "grader": {{"kind": "assertions", "checks": [{{"id": "done", "entity": "tickets", "where": {{"id": {id}}}, "assert": "all", "field": "status", "op": "eq", "value": "{want}"}}]}},
 "metadata": {{"taskSet": "{set}", "solution": [{{"tool": "solve_ticket", "args": {{"id": {id}}}}}]}}}}"#
    )
}

fn run(work: &Path, env: &[(&str, &str)], path: &str, extra: &[&str]) -> Out {
    let mut args = vec!["worlds", "run", "--path", path, "--agent", "oracle", "--no-file"];
    args.extend_from_slice(extra);
    gateway(work, &args, env)
}

#[test]
fn stored_tasks_and_sets_run_in_place_of_the_worlds_own() {
    let (_dir, hub, work) = common::start_in_temp();
    let env = hub.env();
    let helpdesk = pushed_world(&work, &env);
    let path = helpdesk.to_str().unwrap();

    // Version 1 is solvable by its reference solution; version 2 asks for what it cannot do.
    let solvable = stored(&work, &env, "a.json", &spec("stored-101", 101, "solved", "smoke"), "helpdesk");
    let other = stored(&work, &env, "b.json", &spec("stored-103", 103, "solved", "smoke"), "helpdesk");
    std::fs::write(work.join("a2.json"), spec("stored-101", 101, "escalated", "smoke")).unwrap();
    let updated = gateway(&work, &["worlds", "task", "update", &solvable, "--spec", "a2.json"], &env);
    assert_eq!(updated.code, 0, "{}\n{}", updated.stdout, updated.stderr);

    // One stored task, at its first version: the oracle passes it.
    let out = run(&work, &env, path, &["--task-id", &format!("{solvable}@1")]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!((out.json()["reward"].as_f64(), out.json()["world"]["variant"].as_str()), (Some(1.0), Some("stored-101")), "{}", out.stdout);

    // Its current version (2) grades the same solution as a failure.
    let out = run(&work, &env, path, &["--task-id", &solvable]);
    assert_eq!(out.json()["reward"].as_f64(), Some(0.0), "{}\n{}", out.stdout, out.stderr);

    // A set: both tasks that name it, each run once.
    let out = run(&work, &env, path, &["--task-set", "smoke", "--task-id", &other]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let result = out.json();
    assert_eq!(result["samples"].as_i64(), Some(2), "{result}");
    let tasks: Vec<&str> = result["tasks"].as_array().unwrap().iter().map(|t| t["task"].as_str().unwrap()).collect();
    assert_eq!(tasks, ["stored-103", "stored-101"], "ids first, then the set's others: {result}");

    // Refusals name what is wrong.
    let out = run(&work, &env, path, &["--task-set", "nightly"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("no stored task of world 'helpdesk' is in set 'nightly'"), "{}", out.stderr);
    let out = run(&work, &env, path, &["--task-id", "wt_missing"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("stored task wt_missing:"), "{}", out.stderr);
    let out = run(&work, &env, path, &["--task-id", &format!("{solvable}@0")]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains(&format!("stored task ref '{solvable}@0' is not <id> or <id>@<version>")), "{}", out.stderr);
    let another = world(&work.join("another"));
    let pushed = gateway(&work, &["bench", "push", another.to_str().unwrap(), "--slug", "another-world"], &env);
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);
    let foreign = stored(&work, &env, "c.json", &spec("elsewhere", 101, "solved", "x"), "another-world");
    let out = run(&work, &env, path, &["--task-id", &foreign]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("is pinned to world 'another-world', not 'helpdesk'"), "{}", out.stderr);
    let out = run(&work, &env, path, &["--task-id", &solvable, "--variant", "solve-101"]);
    assert_eq!(out.code, 2, "--task-id and --variant conflict: {}", out.stderr);
}

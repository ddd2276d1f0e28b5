//! Re-grade without re-running, with the real binary against our real hub (`gateway hub
//! serve`): `gateway worlds run` files an evaluation of a stored task and attaches each
//! rollout's final state; the task gets a stricter version 2; `gateway environment
//! regrade EVAL --task-version 2` files a new evaluation from the stored states (no
//! agent runs again) with the new grader's rewards, linked to the old one; version 1
//! by `--task-id` gives the first rewards back; a bad version is a usage error.

use std::path::Path;

mod common;
mod support;
use support::{gateway, pushed_world};

/// A stored task asking for `status = want` on ticket 101, solved by its reference solution.
fn spec(want: &str) -> String {
    format!(
        r#"{{"name": "stored-101", "instruction": "Ticket 101: make it {want}.",
 "grader": {{"kind": "assertions", "checks": [{{"id": "done", "entity": "tickets", "where": {{"id": 101}}, "assert": "all", "field": "status", "op": "eq", "value": "{want}"}}]}},
 "metadata": {{"solution": [{{"tool": "solve_ticket", "args": {{"id": 101}}}}]}}}}"#
    )
}

#[test]
fn a_filed_run_is_regraded_under_a_new_task_version_without_running_again() {
    let (_dir, hub, work) = common::start_in_temp();
    let env = hub.env();
    let helpdesk = pushed_world(&work, &env);
    let path = helpdesk.to_str().unwrap();
    std::fs::write(work.join("v1.json"), spec("solved")).unwrap();
    let created = gateway(&work, &["worlds", "task", "create", "v1.json", "-w", "helpdesk"], &env);
    assert_eq!(created.code, 0, "{}\n{}", created.stdout, created.stderr);
    let task_id = created.json()["id"].as_str().unwrap().to_string();

    // The run: two rollouts of the oracle, filed with their final states.
    let ran = gateway(&work, &["worlds", "run", "--path", path, "--agent", "oracle", "--task-id", &task_id, "-r", "2"], &env);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let evaluation = ran.json()["evaluationId"].as_str().unwrap_or_else(|| panic!("filed: {}", ran.stdout)).to_string();
    assert!(!ran.stderr.contains("could not be attached"), "{}", ran.stderr);

    // Version 2 wants ticket 101 escalated: the same final states now fail.
    std::fs::write(work.join("v2.json"), spec("escalated")).unwrap();
    let updated = gateway(&work, &["worlds", "task", "update", &task_id, "--spec", "v2.json"], &env);
    assert_eq!(updated.code, 0, "{}\n{}", updated.stdout, updated.stderr);

    let regraded = gateway(&work, &["environment", "regrade", &evaluation, "--task-version", "2", "--json"], &env);
    assert_eq!(regraded.code, 0, "{}\n{}", regraded.stdout, regraded.stderr);
    let answer = regraded.json();
    assert_eq!(answer["regradedFrom"].as_str(), Some(evaluation.as_str()), "{answer}");
    assert_eq!(
        (answer["samples"].as_i64(), answer["graded"].as_i64(), answer["errored"].as_i64()),
        (Some(2), Some(2), Some(0)),
        "{answer}"
    );
    assert_eq!((answer["previousAvgReward"].as_f64(), answer["avgReward"].as_f64()), (Some(1.0), Some(0.0)), "{answer}");
    let new = answer["evaluationId"].as_str().unwrap().to_string();

    // The new evaluation is listed with its link, its samples with the new rewards.
    let rollouts = gateway(&work, &["environment", "rollouts", "helpdesk"], &env);
    assert_eq!(rollouts.code, 0, "{}", rollouts.stderr);
    let listed = rollouts.json();
    let linked = listed["rollouts"].as_array().unwrap().iter().find(|r| r["id"] == new.as_str()).cloned().expect("listed");
    assert_eq!(linked["regradedFrom"].as_str(), Some(evaluation.as_str()));
    let samples = gateway(&work, &["environment", "samples", "helpdesk", &new], &env);
    assert_eq!(samples.code, 0, "{}", samples.stderr);
    let rows = samples.json()["samples"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row["task"].as_str(), Some("stored-101"));
        assert_eq!(row["reward"].as_f64(), Some(0.0), "{row}");
        assert_eq!(row["info"]["regrade"]["checks"][0]["actual"].as_str(), Some(r#"1 of 1 row failed: 101 status "solved""#), "{row}");
    }

    // Version 1, by the task's id, in words: the first rewards back.
    let back = gateway(&work, &["environment", "regrade", &evaluation, "--task-version", "1", "--task-id", &task_id], &env);
    assert_eq!(back.code, 0, "{}\n{}", back.stdout, back.stderr);
    let lines: Vec<&str> = back.stdout.lines().collect();
    assert!(lines[0].starts_with(&format!("regraded {evaluation} into eval_")), "{}", back.stdout);
    assert!(lines[0].contains(&format!("(task {task_id} version 1, ")), "{}", back.stdout);
    assert_eq!(lines[1], "2 samples: 2 graded, 0 errored, 0 carried over");
    assert_eq!(lines[2], "mean reward 1.0000 -> 1.0000");

    // Refusals: a version the task lacks (the hub's 400), a version that is no version (usage).
    let missing = gateway(&work, &["environment", "regrade", &evaluation, "--task-version", "7", "--task-id", &task_id], &env);
    assert_eq!(missing.code, 1, "{}", missing.stdout);
    assert!(missing.stderr.contains("no version 7"), "{}", missing.stderr);
    let usage = gateway(Path::new("."), &["environment", "regrade", &evaluation, "--task-version", "0"], &env);
    assert_eq!(usage.code, 2, "{}", usage.stderr);
}

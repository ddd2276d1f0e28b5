//! Re-grade without re-running, through the hub on loopback: an evaluation of the
//! helpdesk world is filed with its samples' final states (`…/states`: session
//! databases, stored once per sha256), the task's grader is published anew (version
//! 2, a python grader), and `…/regrade` files a new evaluation linked to the old one
//! (`regradedFrom`): the same samples with the new grader's rewards, a sample without
//! a state `errored` (never a 0), version 1's assertions explaining themselves; the
//! refusals (no such version, another project's evaluation) named.

mod common;

use gateway_hub_client::evals_client::{EvalsClient, FinalState};
use gateway_test_support::{text, TestHub};
use gateway_world::json::{self, object, Value};
use std::path::{Path, PathBuf};

const EVALS: &str = "/api/public/benchmark-containers/evaluations";

const V1: &str = r#"{"name": "solve-101", "instruction": "Solve ticket 101.",
    "grader": {"kind": "assertions", "checks": [{"id": "solved", "entity": "tickets", "where": {"id": 101}, "assert": "all", "field": "status", "value": "solved"}]}}"#;

/// Version 2 asks for more: 101 and 102 solved (half the reward for 101 alone).
const V2_SOURCE: &str = "import json, sys\nstate = json.load(sys.stdin)\nt = state['tickets']\nsolved = [t[k]['status'] == 'solved' for k in ('101', '102')]\nprint(json.dumps({'reward': 1.0 if all(solved) else 0.5 if solved[0] else 0.0, 'both': all(solved)}))\n";

fn ok(hub: &TestHub, method: &str, path: &str, body: &str) -> Value {
    let (status, answer) = hub.call(method, path, Some(body));
    assert_eq!(status, 200, "{method} {path}: {answer:?}");
    answer
}

/// The helpdesk example's state as a session exports it, with these tickets solved.
fn final_state(dir: &Path, solved: &[i64]) -> (PathBuf, String, u64) {
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk");
    let live = gateway_serve::state::WorldState::open(&world, Default::default()).unwrap();
    for id in solved {
        let key = object([("id", Value::Int(*id))]);
        live.write(|store| store.update("tickets", &key, &object([("status", Value::str("solved"))]), None), None).unwrap();
    }
    let path = dir.join(format!("solved-{solved:?}.sqlite").replace([' ', ',', '[', ']'], ""));
    live.export(&path).unwrap();
    let sha256 = gateway_world::files::file_sha256(&path).unwrap();
    let bytes = std::fs::metadata(&path).unwrap().len();
    (path, sha256, bytes)
}

#[test]
fn an_evaluation_is_regraded_from_its_stored_states_into_a_linked_one() {
    let hub = TestHub::start(None);
    let work = tempfile::tempdir().unwrap();
    let pushed = common::push_helpdesk(&hub.api, &hub.one, work.path());
    let (cid, version) = (text(&pushed, "containerId"), text(&pushed, "versionId"));
    let task = ok(&hub, "POST", "/api/public/world-tasks", &format!(r#"{{"spec": {V1}, "world": "helpdesk"}}"#));
    let task_id = text(&task, "id");

    // The run: five rollouts of solve-101, filed with the rewards version 1 gave.
    let old =
        text(&ok(&hub, "POST", EVALS, &format!(r#"{{"versionId": "{version}", "model": "m", "rolloutsPerExample": 5}}"#)), "evaluationId");
    let samples: Vec<String> = [1.0, 0.0, 1.0, 0.0, 0.0]
        .iter()
        .enumerate()
        .map(|(i, r)| format!(r#"{{"exampleId": "solve-101", "task": "solve-101", "rolloutIndex": {i}, "reward": {r}, "info": {{"variant": "solve-101"}}}}"#))
        .collect();
    ok(&hub, "POST", &format!("{EVALS}/{old}/samples"), &format!(r#"{{"samples": [{}]}}"#, samples.join(", ")));
    ok(&hub, "POST", &format!("{EVALS}/{old}/finalize"), r#"{"status": "COMPLETED"}"#);

    // Their final states: 101 solved, nothing solved, 101 and 102 solved; rollout 3's
    // registered but never sent (below), rollout 4's never registered.
    let states = tempfile::tempdir().unwrap();
    let kept: Vec<FinalState> = [&[101][..], &[], &[101, 102]]
        .iter()
        .enumerate()
        .map(|(i, solved)| {
            let (path, sha256, bytes) = final_state(states.path(), solved);
            FinalState { example_id: "solve-101".into(), rollout_index: i as i64, path, sha256, bytes }
        })
        .collect();
    let client = EvalsClient::new(&hub.api, &hub.one.0, &hub.one.1).unwrap();
    let filed = client.upload_states(&old, &kept).unwrap();
    assert_eq!((filed.registered, filed.uploaded), (3, 3));
    // Registered again (another evaluation would do the same): nothing is sent twice.
    let again = client.upload_states(&old, &kept[..1]).unwrap();
    assert_eq!((again.registered, again.uploaded), (1, 0));
    // A body that is not the registered file is refused: larger, or another digest.
    let (status, refused) = hub.call(
        "POST",
        &format!("{EVALS}/{old}/states"),
        Some(&format!(r#"{{"states": [{{"exampleId": "solve-101", "rolloutIndex": 3, "sha256": "{}", "bytes": 10}}]}}"#, "ab".repeat(32))),
    );
    assert_eq!(status, 200, "{refused:?}");
    let url = text(&refused, "states.0.uploadUrl");
    let put = reqwest::blocking::Client::new().put(&url).body("not a state").send().unwrap();
    assert_eq!(put.status().as_u16(), 413, "{}", put.text().unwrap());
    let put = reqwest::blocking::Client::new().put(&url).body("not-astate").send().unwrap();
    assert_eq!(put.status().as_u16(), 400, "{}", put.text().unwrap());
    let (status, unknown) = hub.call(
        "POST",
        &format!("{EVALS}/{old}/states"),
        Some(r#"{"states": [{"exampleId": "nope", "rolloutIndex": 0, "sha256": "00", "bytes": 1}]}"#),
    );
    assert_eq!(status, 400, "{unknown:?}");
    assert!(text(&unknown, "message").contains("matches no sample"), "{unknown:?}");

    // Version 2 of the task: a python grader that wants 102 solved too.
    let spec2 = json::canonical(&object([
        ("name", Value::str("solve-101")),
        ("instruction", Value::str("Solve tickets 101 and 102.")),
        ("grader", object([("kind", Value::str("python")), ("source", Value::str(V2_SOURCE))])),
    ]));
    let updated = ok(&hub, "PATCH", &format!("/api/public/world-tasks/{task_id}"), &format!(r#"{{"spec": {spec2}}}"#));
    assert_eq!(text(&updated, "version"), "2");

    let answered = client.regrade(&old, 2, None).unwrap();
    assert_eq!(text(&answered, "regradedFrom"), old);
    assert_eq!(
        (text(&answered, "samples"), text(&answered, "graded"), text(&answered, "errored"), text(&answered, "carried")),
        ("5".into(), "3".into(), "2".into(), "0".into()),
        "{answered:?}"
    );
    assert_eq!(text(&answered, "previousAvgReward"), "0.4");
    let new = text(&answered, "evaluationId");
    assert_ne!(new, old);

    // The new evaluation: the same samples, the new rewards; errored ones say why.
    let listed = ok(&hub, "GET", &format!("/api/public/environments/{cid}/rollouts/{new}/samples"), "");
    let rows = listed.get("samples").and_then(Value::as_array).unwrap().clone();
    let shown: Vec<(String, String, String)> =
        rows.iter().map(|s| (text(s, "rolloutIndex"), text(s, "reward"), text(s, "info.errored"))).collect();
    assert_eq!(shown[0], ("0".into(), "0.5".into(), "null".into()));
    assert_eq!(shown[1], ("1".into(), "0.0".into(), "null".into()));
    assert_eq!(shown[2], ("2".into(), "1.0".into(), "null".into()));
    assert_eq!(shown[3].1, "null");
    assert!(shown[3].2.ends_with("was registered but never uploaded"), "{shown:?}");
    assert_eq!(shown[4].1, "null");
    assert!(shown[4].2.starts_with("no final state was stored"), "{shown:?}");
    assert_eq!(text(&rows[2], "rewards"), r#"{"both":1.0}"#);
    assert_eq!(text(&rows[2], "info.variant"), "solve-101", "the sample's info is kept");
    assert!(text(&rows[2], "info.regradedFrom").starts_with("smp_"));
    let rollouts = ok(&hub, "GET", &format!("/api/public/environments/{cid}/rollouts"), "");
    let linked = rollouts.get("rollouts").and_then(Value::as_array).unwrap().iter().find(|r| text(r, "id") == new).cloned().unwrap();
    assert_eq!(text(&linked, "regradedFrom"), old);
    assert_eq!(text(&linked, "status"), "COMPLETED");
    assert_eq!(text(&linked, "metrics.errored"), "2");

    // Version 1 by the task's id: its assertions, each sample's checks explained.
    let answered = client.regrade(&old, 1, Some(&task_id)).unwrap();
    assert_eq!((text(&answered, "graded"), text(&answered, "avgReward")), ("3".into(), "0.6666666666666666".into()), "{answered:?}");
    let back = text(&answered, "evaluationId");
    let listed = ok(&hub, "GET", &format!("/api/public/environments/{cid}/rollouts/{back}/samples"), "");
    let first = &listed.get("samples").and_then(Value::as_array).unwrap()[1];
    assert_eq!(text(first, "reward"), "0.0");
    assert_eq!(text(first, "info.regrade.checks.0.actual"), r#"1 of 1 row failed: 101 status "open""#);
    assert_eq!(text(first, "info.regrade.taskVersion"), "1");

    // Refusals: a version the task lacks, an evaluation of another project.
    let (status, refused) =
        hub.call("POST", &format!("{EVALS}/{old}/regrade"), Some(&format!(r#"{{"task_version": 9, "task_id": "{task_id}"}}"#)));
    assert_eq!(status, 400, "{refused:?}");
    assert!(text(&refused, "message").contains("no version 9"), "{refused:?}");
    let (status, _) = hub.call("POST", &format!("{EVALS}/{old}/regrade"), Some("{}"));
    assert_eq!(status, 400);
    let (status, _) = hub.call_as(&hub.two, "POST", &format!("{EVALS}/{old}/regrade"), Some(r#"{"task_version": 1}"#), &[]);
    assert_eq!(status, 404);
    // By name, a version the task lacks: every sample errored with the reason, none a 0.
    let answered = client.regrade(&old, 9, None).unwrap();
    assert_eq!(
        (text(&answered, "graded"), text(&answered, "errored"), text(&answered, "avgReward")),
        ("0".into(), "5".into(), "null".into())
    );
    assert!(text(&answered, "errors.0.reason").contains("no version 9"), "{answered:?}");
}

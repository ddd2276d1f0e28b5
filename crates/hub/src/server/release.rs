//! Agent builds and the release gate (spec §8 `release gate`, §11 `POST /agent-builds`).
//!
//! A build is what the SDK registers (`{agentId, buildHash, manifest, attribution,
//! semanticVer?}`), unique per (agent, hash). An evaluation is filed *for* a build when
//! its create carries `agentBuildId` — the build's id (`bld_…`) or its hash — as the
//! SDK's `create_evaluation(agent_build_id=…)` sends it (our `worlds run|ci` and
//! `bench eval` send it when `GATEWAY_AGENT_BUILD_ID` is set).
//!
//! `GET /agent-builds/gate` names the build exactly one way — `?buildId=`, `?commitSha=`
//! (7+ characters, a prefix of one build's commit) or `?agentId=&version=` — and judges
//! its **latest** evaluation against the project's rule (`GET|PUT
//! /agent-builds/gate-rule`: `threshold`, default 0.7; `minGradedRollouts`, default 5):
//! - no evaluation, or the latest still RUNNING: `untested`;
//! - the latest FAILED: `blocked`;
//! - else `passRate` = passed / graded over its samples (a sample is graded when its
//!   outcome is known: `correct`, else `reward >= 1.0`, as the environment views
//!   count it) — `pass` when `graded >= minGradedRollouts` and
//!   `passRate >= threshold`, `blocked` otherwise, each failed condition a reason.
//!
//! `evaluatedRuns` lists the build's evaluations newest first (at most 20), with their
//! status as `state` (RUNNING, COMPLETED, FAILED), so `--wait` polls until none runs.

use super::evaluations::Fields;
use super::request::{opt_value, str_or_null, JsonRequest};
use super::response::{ok, Answer};
use super::state::Hub;
use crate::agents::{AgentBuild, BuildEvaluation};
use crate::error::HubError;
use crate::util::{new_id, now_iso};
use gateway_common::url::unquote_plus;
use gateway_world::json::{self, object, Map, Value};
use std::collections::BTreeMap;

/// The document the project's rule is kept in.
const RULE_KIND: &str = "release-gate";
const RULE_ID: &str = "rule";
/// The rule of a project that set none.
const DEFAULT_THRESHOLD: f64 = 0.7;
const DEFAULT_MIN_GRADED: i64 = 5;
/// Evaluations listed in a verdict.
const LISTED_RUNS: i64 = 20;
/// The shortest commit prefix a gate query may name.
const MIN_COMMIT_PREFIX: usize = 7;

/// The project's release rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Rule {
    /// The lowest passing pass rate.
    pub threshold: f64,
    /// The fewest graded rollouts a verdict stands on.
    pub min_graded: i64,
}

/// The agent-builds routes (`agents.rs` hands them here).
pub(super) async fn route(request: &JsonRequest<'_>, project: &str) -> Answer {
    let JsonRequest { hub, method, segments, query, .. } = *request;
    match (method.as_str(), segments) {
        ("POST", ["agent-builds"]) => register(hub, project, &request.json()?).await,
        ("GET", ["agent-builds", "gate"]) => gate(hub, project, query).await,
        ("GET", ["agent-builds", "gate-rule"]) => ok(rule_json(&rule(hub, project).await?, false)),
        ("PUT", ["agent-builds", "gate-rule"]) => set_rule(hub, project, &request.json()?).await,
        ("GET", ["agent-builds", id]) => {
            let id = unquote_plus(id);
            let build = hub.meta.build(project, &id).await?.ok_or_else(|| HubError::missing("agent build", id))?;
            ok(build_json(&build, true))
        }
        _ => Err(request.no_route()),
    }
}

fn build_json(b: &AgentBuild, full: bool) -> Value {
    let mut out = Map::default();
    out.insert("id".into(), Value::str(&b.id));
    out.insert("agentId".into(), Value::str(&b.agent_id));
    out.insert("version".into(), str_or_null(&b.version));
    out.insert("commitSha".into(), str_or_null(&b.commit_sha));
    out.insert("buildHash".into(), Value::str(&b.build_hash));
    out.insert("createdAt".into(), Value::str(&b.created_at));
    if full {
        if let Value::Object(sent) = opt_value(&b.body) {
            for key in ["manifest", "attribution"] {
                out.insert(key.into(), sent.get(key).cloned().unwrap_or(Value::Null));
            }
        }
    }
    Value::Object(out)
}

/// `POST /api/public/agent-builds`: record a build (201 new, 200 known).
async fn register(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["agentId", "buildHash", "manifest", "attribution", "semanticVer"])?;
    let agent_id = fields.nonblank("agentId")?.ok_or_else(|| HubError::BadRequest("'agentId' is required".into()))?;
    let build_hash = fields.nonblank("buildHash")?.ok_or_else(|| HubError::BadRequest("'buildHash' is required".into()))?;
    for (key, value) in [("agentId", &agent_id), ("buildHash", &build_hash)] {
        if value.chars().count() > 300 || value.trim() != value {
            return Err(HubError::BadRequest(format!("'{key}' must be at most 300 characters without boundary whitespace")));
        }
    }
    fields.object("manifest")?;
    let attribution = fields.object("attribution")?;
    let version = fields.nonblank("semanticVer")?;
    let commit_sha = match attribution.as_ref().and_then(|a| a.get("commitSha")) {
        None | Some(Value::Null) => None,
        Some(Value::Str(sha)) if !sha.trim().is_empty() => Some(sha.trim().to_string()),
        Some(_) => return Err(HubError::BadRequest("'attribution.commitSha' must be a nonblank string".into())),
    };
    let kept: Map = ["manifest", "attribution"].iter().filter_map(|k| body.get(*k).map(|v| (k.to_string(), v.clone()))).collect();
    let build = AgentBuild {
        id: new_id("bld_"),
        project_id: project.to_string(),
        agent_id,
        build_hash,
        version,
        commit_sha,
        body: json::canonical(&Value::Object(kept)),
        created_at: now_iso(),
        seq: 0,
    };
    let (stored, created) = hub.meta.put_build(build).await?;
    let mut answer = build_json(&stored, false);
    if let Value::Object(map) = &mut answer {
        map.insert("created".into(), Value::Bool(created));
    }
    Ok((if created { 201 } else { 200 }, answer))
}

async fn rule(hub: &Hub, project: &str) -> Result<Rule, HubError> {
    let stored = hub.meta.document(project, RULE_KIND, RULE_ID).await?.map(|text| opt_value(&text));
    let threshold = stored.as_ref().and_then(|r| r.get("threshold")).and_then(Value::as_f64).unwrap_or(DEFAULT_THRESHOLD);
    let min_graded = match stored.as_ref().and_then(|r| r.get("minGradedRollouts")) {
        Some(Value::Int(n)) => *n,
        _ => DEFAULT_MIN_GRADED,
    };
    Ok(Rule { threshold, min_graded })
}

fn rule_json(rule: &Rule, stored: bool) -> Value {
    let mut out = object([("threshold", Value::Float(rule.threshold)), ("minGradedRollouts", Value::Int(rule.min_graded))]);
    if stored {
        if let Value::Object(map) = &mut out {
            map.insert("updatedAt".into(), Value::str(now_iso()));
        }
    }
    out
}

/// `PUT /api/public/agent-builds/gate-rule` `{threshold?, minGradedRollouts?}`.
async fn set_rule(hub: &Hub, project: &str, body: &Map) -> Answer {
    let fields = Fields::new(body, "");
    fields.only(&["threshold", "minGradedRollouts"])?;
    let mut next = rule(hub, project).await?;
    if let Some(threshold) = fields.number("threshold")? {
        if !(0.0..=1.0).contains(&threshold) {
            return Err(HubError::BadRequest(format!("'threshold' must be a pass rate from 0 to 1, not {threshold}")));
        }
        next.threshold = threshold;
    }
    if let Some(min) = fields.int("minGradedRollouts", 1)? {
        next.min_graded = min;
    }
    let stored = rule_json(&next, true);
    hub.meta.put_document(project, RULE_KIND, RULE_ID, &json::canonical(&stored)).await?;
    ok(stored)
}

/// The build a gate query names: exactly one form, or a 400 naming what was sent.
async fn lookup(hub: &Hub, project: &str, query: &BTreeMap<String, String>) -> Result<AgentBuild, HubError> {
    let given = |key: &str| query.get(key).map(|v| v.trim().to_string());
    let (build, commit, agent, version) = (given("buildId"), given("commitSha"), given("agentId"), given("version"));
    let forms: Vec<&str> = [
        build.is_some().then_some("buildId"),
        commit.is_some().then_some("commitSha"),
        (agent.is_some() || version.is_some()).then_some("agentId+version"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if forms.len() != 1 {
        return Err(HubError::BadRequest(format!(
            "name the build one way: ?buildId=, ?commitSha=, or ?agentId=&version= ({})",
            if forms.is_empty() { "none was given".to_string() } else { format!("{} were given", forms.join(" and ")) }
        )));
    }
    if let Some(id) = build {
        return hub.meta.build(project, &id).await?.ok_or_else(|| HubError::missing("agent build", id));
    }
    if let Some(sha) = commit {
        if sha.chars().count() < MIN_COMMIT_PREFIX {
            return Err(HubError::BadRequest(format!("'commitSha' '{sha}' is too short: give the full sha or a prefix of 7+ characters")));
        }
        let found = hub.meta.builds_by_commit(project, &sha, 50).await?;
        let Some(newest) = found.first().cloned() else {
            return Err(HubError::NotFound(format!("no agent build was registered from commit '{sha}'")));
        };
        let mut agents: Vec<String> =
            found.iter().map(|b| format!("{} @ {}", b.agent_id, b.commit_sha.clone().unwrap_or_default())).collect();
        agents.sort();
        agents.dedup();
        if agents.len() > 1 {
            return Err(HubError::BadRequest(format!(
                "commit '{sha}' names {} builds ({}): name the build with ?buildId= or ?agentId=&version=",
                agents.len(),
                agents.join(", ")
            )));
        }
        return Ok(newest);
    }
    let (Some(agent), Some(version)) = (agent.filter(|a| !a.is_empty()), version.filter(|v| !v.is_empty())) else {
        return Err(HubError::BadRequest("'agentId' and 'version' go together: give both".into()));
    };
    // A registered agent's id stands for its name (what the SDK declares builds under).
    let agent_key = match hub.meta.agent(project, &agent).await? {
        Some(registered) if registered.id == agent => registered.name,
        _ => agent.clone(),
    };
    hub.meta
        .builds_by_version(project, &agent_key, &version, 1)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| HubError::NotFound(format!("no agent build of '{agent}' declares version '{version}'")))
}

/// The share of graded rollouts that passed, when any was graded.
fn pass_rate(run: &BuildEvaluation) -> Option<f64> {
    (run.sums.judged > 0).then(|| run.sums.passed as f64 / run.sums.judged as f64)
}

/// The verdict on a build's evaluations (newest first): `(verdict, passRate, graded, reasons)`.
pub(super) fn judge(rule: &Rule, build_id: &str, runs: &[BuildEvaluation]) -> (&'static str, Option<f64>, i64, Vec<String>) {
    let Some(latest) = runs.first() else {
        return (
            "untested",
            None,
            0,
            vec![format!("no run has recorded this build yet: file an evaluation with agentBuildId = {build_id}")],
        );
    };
    let (rate, graded) = (pass_rate(latest), latest.sums.judged);
    let id = &latest.evaluation.id;
    match latest.evaluation.status.as_str() {
        "COMPLETED" => {}
        "FAILED" => return ("blocked", rate, graded, vec![format!("the latest run {id} ended FAILED")]),
        status => return ("untested", rate, graded, vec![format!("the latest run {id} is still {status}")]),
    }
    let mut reasons = Vec::new();
    if graded < rule.min_graded {
        reasons.push(format!(
            "only {graded} graded rollout{} in run {id}: the rule needs at least {}",
            if graded == 1 { "" } else { "s" },
            rule.min_graded
        ));
    }
    match rate {
        Some(rate) if rate < rule.threshold => {
            reasons.push(format!("pass rate {rate:.2} in run {id} is below the threshold {:.2}", rule.threshold))
        }
        None if graded >= rule.min_graded => reasons.push(format!("run {id} graded no rollout")),
        _ => {}
    }
    (if reasons.is_empty() { "pass" } else { "blocked" }, rate, graded, reasons)
}

fn float_or_null(value: Option<f64>) -> Value {
    value.map(Value::Float).unwrap_or(Value::Null)
}

/// `GET /api/public/agent-builds/gate?buildId=|commitSha=|agentId=&version=`.
async fn gate(hub: &Hub, project: &str, query: &BTreeMap<String, String>) -> Answer {
    let build = lookup(hub, project, query).await?;
    let rule = rule(hub, project).await?;
    let runs = hub.meta.build_evaluations(project, vec![build.id.clone(), build.build_hash.clone()], LISTED_RUNS).await?;
    let (verdict, rate, graded, reasons) = judge(&rule, &build.id, &runs);
    let evaluated = runs
        .iter()
        .map(|run| {
            object([
                ("runId", Value::str(&run.evaluation.id)),
                ("state", Value::str(&run.evaluation.status)),
                ("world", Value::str(&run.world)),
                ("model", str_or_null(&run.evaluation.model)),
                ("passRate", float_or_null(pass_rate(run))),
                ("graded", Value::Int(run.sums.judged)),
                ("samples", Value::Int(run.sums.samples)),
                ("versionId", Value::str(&run.evaluation.version_id)),
                ("createdAt", Value::str(&run.evaluation.created_at)),
                ("completedAt", str_or_null(&run.evaluation.completed_at)),
            ])
        })
        .collect();
    ok(object([
        ("build", build_json(&build, false)),
        (
            "gate",
            object([
                ("verdict", Value::str(verdict)),
                ("passRate", float_or_null(rate)),
                ("gradedRollouts", Value::Int(graded)),
                ("threshold", Value::Float(rule.threshold)),
                ("minGradedRollouts", Value::Int(rule.min_graded)),
                ("reasons", Value::Array(reasons.into_iter().map(Value::Str).collect())),
            ]),
        ),
        ("evaluatedRuns", Value::Array(evaluated)),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluations::{Evaluation, SampleSums};

    fn run(id: &str, status: &str, judged: i64, passed: i64) -> BuildEvaluation {
        BuildEvaluation {
            evaluation: Evaluation { id: id.into(), status: status.into(), ..Evaluation::default() },
            world: "w".into(),
            sums: SampleSums { samples: judged + 1, judged, passed, ..SampleSums::default() },
        }
    }

    #[test]
    fn the_latest_run_decides() {
        let rule = Rule { threshold: 0.8, min_graded: 4 };
        assert_eq!(judge(&rule, "b", &[]).0, "untested");
        assert_eq!(judge(&rule, "b", &[run("e2", "RUNNING", 1, 1), run("e1", "COMPLETED", 10, 10)]).0, "untested");
        let (verdict, rate, graded, reasons) = judge(&rule, "b", &[run("e2", "COMPLETED", 5, 4), run("e1", "COMPLETED", 1, 0)]);
        assert_eq!((verdict, rate, graded, reasons.len()), ("pass", Some(0.8), 5, 0));
        let (verdict, _, _, reasons) = judge(&rule, "b", &[run("e3", "COMPLETED", 3, 1)]);
        assert_eq!(verdict, "blocked");
        assert_eq!(
            reasons,
            ["only 3 graded rollouts in run e3: the rule needs at least 4", "pass rate 0.33 in run e3 is below the threshold 0.80"]
        );
        assert_eq!(judge(&rule, "b", &[run("e4", "FAILED", 9, 9)]).0, "blocked");
        let (verdict, rate, _, reasons) = judge(&Rule { threshold: 0.5, min_graded: 0 }, "b", &[run("e5", "COMPLETED", 0, 0)]);
        assert_eq!((verdict, rate, reasons), ("blocked", None, vec!["run e5 graded no rollout".to_string()]));
    }
}

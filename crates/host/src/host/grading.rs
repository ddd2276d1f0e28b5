//! Grading a session: its task's grader run over its state (an assertions grader
//! over only the rows its checks can select, and a `count` of exact strings on
//! indexed paths from the serving index alone), the collateral check, and — beyond
//! the original — the diff of the state against the task's start, added to every
//! grade as `diff`.

use super::{state_dump, WorldHost, VERIFY_TIMEOUT};
use crate::error::HostError;
use crate::session::{Session, SessionTask};
use gateway_world::json::{object, Map, Value};
use gateway_world::task::TaskSpec;
use std::collections::BTreeMap;

impl WorldHost {
    /// How this host runs a session's python grader: in the host's sandbox.
    fn grader_options(&self, session: &Session) -> gateway_world::task::GraderOptions {
        gateway_world::task::GraderOptions {
            home: Some(session.dir().join("verify")),
            sandbox: self.config.workers.sandbox.clone(),
            ..Default::default()
        }
    }

    /// Grade the session's state with its task's grader: the grader's answer (an
    /// assertions grader's reports each check under `checks`), then `diff` — what
    /// changed in the state since the task's start (beyond the original).
    pub fn grade(&self, session_id: &str) -> Result<Value, HostError> {
        let _span = tracing::info_span!("grade", session = session_id).entered();
        let session = self.using(session_id, true)?;
        let graded = self.run_grader(&session)?;
        Ok(with_diff(&session, graded))
    }

    fn run_grader(&self, session: &Session) -> Result<Value, HostError> {
        let none = || object([("reward", Value::Null), ("rewards", Value::Object(Map::default()))]);
        match session.task() {
            SessionTask::Spec(spec) => {
                let collateral = session.behaviour().collateral;
                if let (Some(gateway_world::task::Grader::Assertions { checks, tolerance }), None) = (&spec.grader, &collateral) {
                    let counted = counted(session, checks, tolerance.as_ref())?;
                    let state = assertion_state(session, checks, tolerance.as_ref(), &counted)?;
                    return Ok(gateway_world::task::evaluate_assertions_counted(checks, tolerance.as_ref(), &state, &counted));
                }
                let state = state_dump(session)?;
                let options = self.grader_options(session);
                let grade = gateway_world::task::grade(spec, &state, &options).map_err(|e| HostError::Refused(e.to_contract_error()))?;
                match collateral {
                    Some(allow) => with_collateral(session, spec, grade, &state, &allow),
                    None => Ok(grade),
                }
            }
            SessionTask::Bundled(task) => {
                let verify = session.version().scenario_dir(task).map(|dir| dir.join("checks/verify.py"));
                match verify.filter(|v| v.is_file()) {
                    None => Ok(none()),
                    Some(verify) => {
                        let state = state_dump(session)?;
                        gateway_world::task::run_python_grader_with(
                            gateway_world::task::PythonSource::File(verify),
                            &state,
                            VERIFY_TIMEOUT,
                            &self.grader_options(session),
                        )
                        .map_err(|e| HostError::Refused(e.to_contract_error()))
                    }
                }
            }
        }
    }
}

/// A grade with the collateral check added: the reward key `collateral` (1.0 when
/// nothing outside `allow` changed since the task's start); for an assertions
/// grader it counts in the reward as one more check of weight 1.
fn with_collateral(session: &Session, spec: &TaskSpec, grade: Value, now: &Value, allow: &Map) -> Result<Value, HostError> {
    let start_state = gateway_serve::state::WorldState::session(session.version().template.clone())?;
    session.start_on(&start_state)?;
    let start = start_state.dump()?;
    let now = now.as_object().cloned().unwrap_or_default();
    let collateral = crate::behaviour::collateral_reward(&start, &now, allow);
    let Value::Object(mut grade) = grade else { return Ok(grade) };
    if let Some(Value::Object(rewards)) = grade.get_mut("rewards") {
        rewards.insert("collateral".into(), Value::Float(collateral));
    }
    if let Some(gateway_world::task::Grader::Assertions { checks, .. }) = &spec.grader {
        let total: f64 = checks.iter().map(|c| c.weight).sum();
        if let Some(reward) = grade.get("reward").and_then(Value::as_f64) {
            grade.insert("reward".into(), Value::Float((reward * total + collateral) / (total + 1.0)));
        }
    }
    Ok(Value::Object(grade))
}

/// A grade with `diff` added: the session's state against the task's start (the
/// template itself when the task adds nothing to it, else that start built apart),
/// bounded ([`gateway_serve::state_diff::DIFF_ROWS`] rows of each kind per entity).
/// A diff that cannot be read is said so in its place; the grade stands.
fn with_diff(session: &Session, grade: Value) -> Value {
    let Value::Object(mut grade) = grade else { return grade };
    let diff = state_diff(session).unwrap_or_else(|error| object([("error", Value::Str(error.to_string()))]));
    grade.insert("diff".into(), diff);
    Value::Object(grade)
}

fn state_diff(session: &Session) -> Result<Value, HostError> {
    use gateway_serve::state_diff::DIFF_ROWS;
    let state = &session.app().state;
    if session.starts_from_template() {
        return Ok(state.diff_from_template(DIFF_ROWS)?);
    }
    let start = gateway_serve::state::WorldState::session(session.version().template.clone())?;
    session.start_on(&start)?;
    Ok(state.diff_from(&start, DIFF_ROWS)?)
}

/// The `count` checks whose `where` is exact string equalities on indexed paths and
/// whose count, made by the serving indexes (`WorldState::count_equal`: no row read
/// or decoded), passes, by position. A failing count is left out: its rows are read,
/// so that its report names the rows it saw — a pass costs an index count, a failure
/// pays for its explanation.
fn counted(
    session: &Session,
    checks: &[gateway_world::task::Check],
    tolerance: Option<&gateway_world::task::Tolerance>,
) -> Result<BTreeMap<usize, i64>, HostError> {
    let mut counted = BTreeMap::new();
    for (i, check) in checks.iter().enumerate() {
        if let Some(conditions) = gateway_world::task::countable(check, tolerance) {
            if let Some(n) = session.app().state.count_equal(&check.entity, &conditions)? {
                if gateway_world::task::count_passes(check, n) {
                    counted.insert(i, n);
                }
            }
        }
    }
    Ok(counted)
}

/// What an assertions grader reads, and only that: for each entity the checks not
/// `counted` name, the rows that may pass some check's `where` (`{entity: {key:
/// row}}`, keys spelled as the state dump spells them, so a check's evidence names
/// rows alike). A check without a `where`, or comparing more loosely than JSON
/// equality (a declared tolerance), reads the whole entity. The grader re-applies
/// every `where` exactly, so rows read for one check do not change another's result;
/// nothing else of the state is decoded.
fn assertion_state(
    session: &Session,
    checks: &[gateway_world::task::Check],
    tolerance: Option<&gateway_world::task::Tolerance>,
    counted: &BTreeMap<usize, i64>,
) -> Result<Value, HostError> {
    let state = &session.app().state;
    let mut by_entity: BTreeMap<&str, BTreeMap<String, Value>> = Default::default();
    let everything = Map::default();
    for (i, check) in checks.iter().enumerate() {
        if counted.contains_key(&i) || state.contract().entity(&check.entity).is_none() {
            continue;
        }
        let loose = gateway_world::task::effective_tolerance(check, tolerance).loosens();
        let conditions = match &check.where_ {
            Some(where_) if !loose => where_,
            _ => &everything,
        };
        let rows = by_entity.entry(check.entity.as_str()).or_default();
        for (key, row) in state.rows_maybe_equal(&check.entity, conditions)? {
            rows.entry(key).or_insert(row);
        }
    }
    let dump: Map = by_entity
        .into_iter()
        .map(|(entity, rows)| {
            let keyed: Map = rows.into_iter().map(|(key, row)| (gateway_serve::state_diff::dump_key(&key), row)).collect();
            (entity.to_string(), Value::Object(keyed))
        })
        .collect();
    Ok(Value::Object(dump))
}

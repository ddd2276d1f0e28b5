//! Filing a run as an evaluation pinned to a version (spec §2), in the shapes the
//! original sends: one rollout as `World.run` files it (`source: sdk-world-run`,
//! metrics `{avg_reward, reward, rewards.<k>}`), many as a harvest files them
//! (metrics `{n, avg_reward, metrics}`, here with `passHatK` beside them). An
//! evaluation that was created but could not be completed is finalized `FAILED`
//! with the reason, as the original's process-level handler does.
//!
//! Beyond the original, each rollout's final state (the session database it ended
//! with) is attached to its sample once the evaluation is filed (`…/states`), so that
//! it can be re-graded under a new grader without re-running (`environment regrade`).
//!
//! The HTTP is `gateway_hub_client::evals_client`'s; this only builds bodies.

use crate::error::RunnerError;
use crate::run::Rollout;
use gateway_hub_client::evals_client::{EvalsClient, FinalState, NewEvaluation};
use gateway_world::json::{object, Map, Value};

/// The `source` the original's SDK world runs file under.
pub const SOURCE: &str = "sdk-world-run";

/// The sample of one rollout: `info` carries `variant`, `source`, `agentError`,
/// `callLog` (the last 50 calls), the model's `messages` (built-in runner) and
/// whatever `info` adds.
pub fn sample(rollout: &Rollout, info: &[(&str, Value)]) -> Map {
    let prompt: String = rollout.instruction.chars().take(20_000).collect();
    let mut details = Map::default();
    details.insert("variant".into(), Value::str(&rollout.variant));
    details.insert("source".into(), Value::str(SOURCE));
    details.insert("agentError".into(), rollout.agent_error.clone().map(Value::Str).unwrap_or_default());
    details.insert("callLog".into(), Value::Array(rollout.call_log.clone()));
    if !rollout.messages.is_empty() {
        // The model's side of the rollout, for the sample's page (beyond the original).
        details.insert("messages".into(), Value::Array(rollout.messages.clone()));
    }
    if let Some(error) = &rollout.grade_error {
        details.insert("gradeError".into(), Value::str(error));
    }
    if let Some(why) = &rollout.errored {
        // No reward: the hub's views count it apart from the agent's scores.
        details.insert("errored".into(), Value::str(why));
    }
    for (key, value) in info {
        details.insert((*key).to_string(), value.clone());
    }
    let reward = rollout.reward.map(Value::Float).unwrap_or_default();
    let mut sample = Map::default();
    sample.insert("exampleId".into(), Value::str(&rollout.task));
    sample.insert("task".into(), Value::str(&rollout.task));
    sample.insert("rolloutIndex".into(), Value::Int(rollout.index as i64));
    sample.insert("prompt".into(), if prompt.is_empty() { Value::Null } else { Value::Str(prompt) });
    sample
        .insert("completion".into(), rollout.completion.clone().map(|c| Value::Str(c.chars().take(20_000).collect())).unwrap_or_default());
    sample.insert("reward".into(), reward.clone());
    sample.insert("score".into(), reward);
    sample.insert("correct".into(), rollout.reward.map(|r| Value::Bool(r >= 1.0)).unwrap_or_default());
    sample.insert("rewards".into(), Value::Object(rollout.rewards.clone()));
    sample.insert("info".into(), Value::Object(details));
    sample
}

/// Push the samples and finalize; on a failure, finalize `FAILED` with the reason.
fn complete(client: &EvalsClient, evaluation_id: &str, samples: Vec<Map>, status: &str, metrics: Value) -> Result<i64, RunnerError> {
    let pushed = client.push_samples(evaluation_id, samples).and_then(|inserted| {
        client.finalize_evaluation(evaluation_id, status, Some(metrics))?;
        Ok(inserted)
    });
    match pushed {
        Ok(inserted) => Ok(inserted),
        Err(error) => {
            let reason: String = error.to_string().chars().take(2000).collect();
            if let Err(also) = client.finalize_evaluation(evaluation_id, "FAILED", Some(object([("error", Value::Str(reason))]))) {
                eprintln!("[evals] could not mark evaluation {evaluation_id} FAILED: {also}");
            }
            Err(error.into())
        }
    }
}

/// Attach the rollouts' kept final states to their samples (beyond the original), so
/// that the evaluation can be re-graded without re-running it. A failure is said, not
/// fatal: the evaluation stands, only a regrade will find those samples stateless.
fn attach_states(client: &EvalsClient, evaluation_id: &str, rollouts: &[Rollout]) {
    let states: Vec<FinalState> = rollouts.iter().filter_map(|r| r.final_state.clone()).collect();
    if states.is_empty() {
        return;
    }
    if let Err(error) = client.upload_states(evaluation_id, &states) {
        // A hub without the route (the original platform) keeps no states: nothing to say.
        if error.to_string().contains("/states -> 404") {
            return;
        }
        eprintln!("[evals] the final states of evaluation {evaluation_id} could not be attached ({error}): a regrade will find none");
    }
}

/// File one rollout as `World.run` does: its evaluation id.
pub fn file_one(client: &EvalsClient, version_id: &str, model: &str, rollout: &Rollout) -> Result<String, RunnerError> {
    let evaluation_id = client.create_evaluation(
        version_id,
        &NewEvaluation {
            model: Some(model.to_string()),
            rollouts_per_example: Some(1),
            metadata: Some(object([("source", Value::str(SOURCE)), ("variant", Value::str(&rollout.variant))])),
            ..NewEvaluation::default()
        },
    )?;
    let mut metrics = Map::default();
    if let Some(reward) = rollout.reward {
        metrics.insert("avg_reward".into(), Value::Float(reward));
    }
    metrics.insert("reward".into(), rollout.reward.map(Value::Float).unwrap_or_default());
    for (name, value) in &rollout.rewards {
        metrics.insert(format!("rewards.{name}"), value.clone());
    }
    let status = if rollout.agent_error.is_some() { "FAILED" } else { "COMPLETED" };
    complete(client, &evaluation_id, vec![sample(rollout, &[])], status, Value::Object(metrics))?;
    attach_states(client, &evaluation_id, std::slice::from_ref(rollout));
    Ok(evaluation_id)
}

/// What a run is filed with besides its rollouts.
#[derive(Debug, Clone)]
pub struct RunFiling<'a> {
    /// The version it is pinned to.
    pub version_id: &'a str,
    /// The model label.
    pub model: &'a str,
    /// The agent's label (in each sample's info).
    pub agent: &'a str,
    /// Rollouts per task.
    pub rollouts_per_example: usize,
    /// The evaluation's metadata.
    pub metadata: Value,
}

/// File many rollouts as a harvest does: `{evaluationId, samples, metrics, richTraces}`.
pub fn file_run(client: &EvalsClient, filing: &RunFiling<'_>, rollouts: &[Rollout]) -> Result<Value, RunnerError> {
    let mut examples: Vec<&str> = rollouts.iter().map(|r| r.task.as_str()).collect();
    examples.sort_unstable();
    examples.dedup();
    let evaluation_id = client.create_evaluation(
        filing.version_id,
        &NewEvaluation {
            model: Some(filing.model.to_string()),
            num_examples: Some(examples.len() as i64),
            rollouts_per_example: Some(filing.rollouts_per_example as i64),
            metadata: Some(filing.metadata.clone()),
            ..NewEvaluation::default()
        },
    )?;
    let metrics = crate::run::metrics(rollouts);
    let mut finalized = metrics.clone();
    if let Value::Object(fields) = &mut finalized {
        fields.insert("passHatK".into(), crate::run::pass_hat_k(rollouts));
    }
    let samples = rollouts
        .iter()
        .map(|r| {
            sample(
                r,
                &[
                    ("agent", Value::str(filing.agent)),
                    ("model", Value::str(filing.model)),
                    ("durationSeconds", Value::Float(r.duration)),
                    ("passed", Value::Bool(r.passed())),
                ],
            )
        })
        .collect();
    let inserted = complete(client, &evaluation_id, samples, "COMPLETED", finalized)?;
    attach_states(client, &evaluation_id, rollouts);
    Ok(object([
        ("evaluationId", Value::Str(evaluation_id)),
        ("samples", Value::Int(inserted)),
        ("metrics", metrics),
        ("richTraces", Value::Int(0)),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_files_the_models_messages_when_there_are_any() {
        let mut rollout = crate::run::tests::graded("t", Some(1.0));
        let info = |rollout: &Rollout| sample(rollout, &[]).get("info").cloned().unwrap_or_default();
        assert!(info(&rollout).get("messages").is_none(), "none: no member");
        rollout.messages = vec![object([("role", Value::str("assistant")), ("content", Value::str("done"))])];
        let filed = info(&rollout).get("messages").cloned().unwrap_or_default();
        assert!(gateway_world::json::json_equal(&filed, &Value::Array(rollout.messages.clone())), "{filed:?}");
    }
}

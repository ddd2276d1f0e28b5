//! A run: every chosen task × `rollouts`, each rollout in a session of its own,
//! `concurrency` at a time; the agent acts, the task's grader grades, the
//! transcript is written; then the summary — mean reward, each named reward's
//! mean (the original harvest's `metrics`), and pass^k (the chance that k
//! rollouts of a task all reach its pass bar, estimated per task as
//! C(passes, k) / C(rollouts, k) and averaged over tasks).
//!
//! A rollout that fails (the session would not open, the agent raised, the grader
//! refused) is recorded as such and the run goes on. It neither prints results nor
//! files them ([`crate::filing`]); the progress bar on stderr (and a transcript it
//! could not write) is its only output.

use crate::agent::Agent;
use crate::error::RunnerError;
use crate::tasks::WorldTask;
use crate::world::LocalWorld;
use gateway_world::json::{self, object, Map, Value};
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How a run goes.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Rollouts of each task.
    pub rollouts: usize,
    /// Rollouts in flight at once.
    pub concurrency: usize,
    /// Each rollout's time budget.
    pub budget: Duration,
    /// Where each rollout's transcript is written (`<task>.<rollout>.json`).
    pub transcripts: Option<PathBuf>,
    /// Draw a progress bar on stderr (when it is a terminal).
    pub progress: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { rollouts: 1, concurrency: 4, budget: Duration::from_secs(900), transcripts: None, progress: true }
    }
}

/// One graded rollout.
#[derive(Debug, Clone)]
pub struct Rollout {
    /// The task's name.
    pub task: String,
    /// The variant it is filed under (the task's name, but for a Harbor task tree's
    /// `[metadata] variant`).
    pub variant: String,
    /// Its index among the task's rollouts.
    pub index: usize,
    /// The task's instruction (the prompt).
    pub instruction: String,
    /// The grader's reward (None: ungraded, or the grader failed).
    pub reward: Option<f64>,
    /// The named rewards (the original's `named_rewards`: nested `rewards`, then
    /// numeric members beside `reward`).
    pub rewards: Map,
    /// The grade as the grader gave it.
    pub grade: Value,
    /// Why grading failed, when it did.
    pub grade_error: Option<String>,
    /// Why the agent failed, when it did.
    pub agent_error: Option<String>,
    /// Why the rollout is not a measurement of the agent, when it is not: the session
    /// did not open, the agent could not run (its model unreachable, its command exited
    /// non-zero: `agent::Outcome::harness`), or grading failed. An errored rollout has
    /// no reward (its grader's answer is kept in `grade` and the transcript): it is left
    /// out of means and pass rates, counted apart, and fails the command unless
    /// `--allow-errors`.
    pub errored: Option<String>,
    /// The agent's final answer.
    pub completion: Option<String>,
    /// The calls as filed (`info.callLog`): the agent's own log when it keeps one,
    /// else ours, the last 50.
    pub call_log: Vec<Value>,
    /// How many calls were made.
    pub calls: usize,
    /// The model's conversation, for the built-in model runner (`[{role, content,
    /// tool_calls?}]`, each text cut to [`MESSAGE_CHARS`], the last [`MESSAGES`]).
    pub messages: Vec<Value>,
    /// The task's pass bar.
    pub pass_bar: f64,
    /// Seconds from the session's open to its grade.
    pub duration: f64,
    /// The transcript written for it.
    pub transcript: Value,
    /// The session database it ended with, kept when the run is filed (beyond the
    /// original: attached to its sample so that it can be re-graded later).
    pub final_state: Option<gateway_hub_client::evals_client::FinalState>,
}

impl Rollout {
    /// A rollout of `task` (its variant too) before it runs: nothing graded, called,
    /// said or timed yet.
    pub fn unrun(task: &str, index: usize, instruction: String, pass_bar: f64) -> Rollout {
        Rollout {
            task: task.into(),
            variant: task.into(),
            index,
            instruction,
            reward: None,
            rewards: Map::default(),
            grade: Value::Null,
            grade_error: None,
            agent_error: None,
            errored: None,
            completion: None,
            call_log: Vec::new(),
            calls: 0,
            messages: Vec::new(),
            pass_bar,
            duration: 0.0,
            transcript: Value::Null,
            final_state: None,
        }
    }

    /// Whether it reached its task's pass bar.
    pub fn passed(&self) -> bool {
        self.reward.is_some_and(|r| r >= self.pass_bar)
    }
}

/// The named rewards of a grade (the original's `named_rewards`).
pub fn named_rewards(grade: &Value) -> Map {
    let mut out = Map::default();
    let numeric = |v: &Value| matches!(v, Value::Int(_) | Value::Float(_));
    for (key, value) in grade.get("rewards").and_then(Value::as_object).into_iter().flatten() {
        if numeric(value) {
            out.insert(key.clone(), value.clone());
        }
    }
    for (key, value) in grade.as_object().into_iter().flatten() {
        if key != "reward" && key != "rewards" && numeric(value) {
            out.insert(key.clone(), value.clone());
        }
    }
    out
}

/// The most model messages a filed sample keeps (the last ones).
pub const MESSAGES: usize = 200;
/// The longest text of one filed model message.
pub const MESSAGE_CHARS: usize = 4000;

/// The model's messages of an agent transcript (`{messages: […]}`), as a sample files
/// them: the last [`MESSAGES`], each text cut to [`MESSAGE_CHARS`].
fn filed_messages(transcript: &Value) -> Vec<Value> {
    let Some(messages) = transcript.get("messages").and_then(Value::as_array) else { return Vec::new() };
    let cut = |v: &Value| match v {
        Value::Str(text) if text.chars().count() > MESSAGE_CHARS => Value::Str(text.chars().take(MESSAGE_CHARS).collect::<String>() + "…"),
        other => other.clone(),
    };
    messages[messages.len().saturating_sub(MESSAGES)..]
        .iter()
        .map(|message| match message {
            Value::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), cut(v))).collect()),
            other => other.clone(),
        })
        .collect()
}

/// A call as the filed call log shows it: the original `World.call_log` entry.
fn log_entry(call: &Value) -> Value {
    const JSON: json::DumpOptions = json::DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false };
    let cut = |v: &Value, n: usize| Value::Str(json::dumps(v, JSON).chars().take(n).collect());
    let mut entry = Map::default();
    match call.get("kind").and_then(Value::as_str) {
        Some("http") => {
            entry.insert("request".into(), call.get("request").cloned().unwrap_or_default());
            entry.insert("status".into(), call.get("status").cloned().unwrap_or_default());
            // Beyond the original's entry: what was sent and answered, cut.
            for key in ["body", "answer"] {
                if let Some(Value::Str(text)) = call.get(key) {
                    entry.insert(key.into(), Value::Str(text.chars().take(2000).collect()));
                }
            }
        }
        _ => {
            entry.insert("tool".into(), call.get("tool").cloned().unwrap_or_default());
            entry.insert("arguments".into(), cut(call.get("args").unwrap_or(&Value::Null), 2000));
            if let Some(result) = call.get("result") {
                entry.insert("result_preview".into(), cut(result, 2000));
            }
            if let Some(Value::Str(error)) = call.get("error") {
                entry.insert("error".into(), Value::Str(error.chars().take(500).collect()));
            }
        }
    }
    Value::Object(entry)
}

/// Decide whether a rollout measured its agent (see [`Rollout::errored`]: already set
/// when the agent could not run; a failed open or grade errors it too); one that did not
/// loses its reward: a zero the harness caused is not the agent's score.
pub fn mark_errored(rollout: &mut Rollout) {
    if rollout.errored.is_none() {
        rollout.errored = rollout.grade_error.as_ref().map(|e| format!("grading failed: {e}"));
    }
    if rollout.errored.is_some() {
        rollout.reward = None;
        rollout.rewards = Map::default();
    }
}

/// How many rollouts errored, and the first one's reason.
pub fn errors(rollouts: &[Rollout]) -> (usize, Option<String>) {
    let errored: Vec<&Rollout> = rollouts.iter().filter(|r| r.errored.is_some()).collect();
    let first = errored.first().and_then(|r| r.errored.as_ref().map(|e| format!("{} #{}: {e}", r.task, r.index)));
    (errored.len(), first)
}

fn text_or_null(text: &Option<String>) -> Value {
    text.clone().map(Value::Str).unwrap_or_default()
}

fn rounded(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// One rollout of `task`: open, act, grade, close.
pub fn rollout(world: &LocalWorld, task: &WorldTask, index: usize, agent: &Agent, budget: Duration) -> Rollout {
    let started = Instant::now();
    let mut result = Rollout::unrun(&task.name, index, task.instruction.clone(), task.pass_bar());
    let mut ours = Vec::new();
    let mut extra = Value::Null;
    match world.open_session(task, index) {
        // Not graded, and not the agent's doing.
        Err(error) => {
            result.grade_error = Some(format!("the session could not be opened: {error}"));
        }
        Ok(session) => {
            let outcome = agent.act(&session, budget);
            match session.grade() {
                Ok(grade) => {
                    result.reward = grade.get("reward").and_then(Value::as_f64);
                    result.rewards = named_rewards(&grade);
                    result.grade = grade;
                }
                Err(error) => result.grade_error = Some(error),
            }
            if world.keeps_states() {
                result.final_state = session.keep_state();
            }
            ours = session.calls();
            result.completion = outcome.completion;
            if outcome.harness {
                result.errored = outcome.error.as_ref().map(|e| format!("the agent could not run: {e}"));
            }
            result.agent_error = outcome.error;
            result.calls = outcome.calls.unwrap_or(ours.len());
            result.call_log = match outcome.call_log {
                Some(own) => own,
                None => ours.iter().map(log_entry).collect(),
            };
            let skip = result.call_log.len().saturating_sub(50);
            result.call_log.drain(..skip);
            extra = outcome.transcript.unwrap_or_default();
            result.messages = filed_messages(&extra);
        }
    }
    mark_errored(&mut result);
    result.duration = rounded(started.elapsed().as_secs_f64());
    result.transcript = object([
        ("task", Value::str(&result.task)),
        ("rollout", Value::Int(index as i64)),
        ("agent", Value::Str(agent.label())),
        ("instruction", Value::str(&result.instruction)),
        ("completion", text_or_null(&result.completion)),
        ("agentError", text_or_null(&result.agent_error)),
        ("grade", result.grade.clone()),
        ("gradeError", text_or_null(&result.grade_error)),
        ("errored", text_or_null(&result.errored)),
        ("reward", result.reward.map(Value::Float).unwrap_or_default()),
        ("passBar", Value::Float(result.pass_bar)),
        ("passed", Value::Bool(result.passed())),
        ("durationSeconds", Value::Float(result.duration)),
        ("calls", Value::Array(ours)),
        ("agentTranscript", extra),
    ]);
    result
}

/// A file name for a task: its name with anything but `[A-Za-z0-9._-]` as `_`.
fn file_stem(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect()
}

/// Run `tasks` × `options.rollouts` with `agent`: the rollouts in task order, then
/// rollout order. Refused only when the transcripts directory cannot be made.
pub fn run(world: &LocalWorld, tasks: &[&WorldTask], agent: &Agent, options: &RunOptions) -> Result<Vec<Rollout>, RunnerError> {
    let rollouts = options.rollouts.max(1);
    let jobs: Vec<(usize, usize)> = (0..tasks.len()).flat_map(|t| (0..rollouts).map(move |r| (t, r))).collect();
    if let Some(dir) = &options.transcripts {
        std::fs::create_dir_all(dir).map_err(|e| RunnerError::io(dir, e))?;
    }
    let bar = if options.progress && std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::with_draw_target(Some(jobs.len() as u64), indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} rollouts [{bar:30}] {pos}/{len} {elapsed} {msg}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<Rollout>>> = Mutex::new(vec![None; jobs.len()]);
    let tally = Mutex::new((0usize, 0.0f64, 0usize));
    std::thread::scope(|scope| {
        for _ in 0..options.concurrency.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(t, r)) = jobs.get(i) else { break };
                let result = rollout(world, tasks[t], r, agent, options.budget);
                if let Some(dir) = &options.transcripts {
                    let path = dir.join(format!("{}.{r}.json", file_stem(&result.task)));
                    if let Err(error) = std::fs::write(&path, json::dumps(&result.transcript, json::DumpOptions::PRETTY)) {
                        bar.suspend(|| eprintln!("could not write the transcript {}: {error}", path.display()));
                    }
                }
                {
                    let mut tally = tally.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(reward) = result.reward {
                        tally.0 += 1;
                        tally.1 += reward;
                    }
                    tally.2 += usize::from(result.passed());
                    if tally.0 > 0 {
                        bar.set_message(format!("mean reward {:.3}, {} passed", tally.1 / tally.0 as f64, tally.2));
                    }
                }
                bar.inc(1);
                done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
            });
        }
    });
    bar.finish_and_clear();
    Ok(done.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten().collect())
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// C(n, k) as a float.
fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The harvest's aggregate metrics: `{n, avg_reward, metrics: {name: mean}}`.
pub fn metrics(rollouts: &[Rollout]) -> Value {
    let rewards: Vec<f64> = rollouts.iter().filter_map(|r| r.reward).collect();
    let mut by_name: Vec<(String, Vec<f64>)> = Vec::new();
    for rollout in rollouts {
        for (name, value) in &rollout.rewards {
            let Some(value) = value.as_f64() else { continue };
            match by_name.iter_mut().find(|(n, _)| n == name) {
                Some((_, values)) => values.push(value),
                None => by_name.push((name.clone(), vec![value])),
            }
        }
    }
    let named: Map = by_name.into_iter().map(|(name, values)| (name, mean(&values).map(Value::Float).unwrap_or_default())).collect();
    object([
        ("n", Value::Int(rollouts.len() as i64)),
        ("avg_reward", mean(&rewards).map(Value::Float).unwrap_or_default()),
        ("metrics", Value::Object(named)),
    ])
}

/// The graded rollouts as the gate's statistics see them.
pub fn outcomes(rollouts: &[Rollout]) -> Vec<crate::noise::Outcome> {
    rollouts.iter().filter_map(|r| Some(crate::noise::Outcome { task: r.task.clone(), reward: r.reward?, passed: r.passed() })).collect()
}

/// pass^k for k = 1 … the fewest rollouts any task had: `{"1": …, "2": …}`, over
/// the tasks that were graded (ungraded is not failed: a task none of whose
/// rollouts got a reward is left out, as the mean reward leaves them out).
pub fn pass_hat_k(rollouts: &[Rollout]) -> Value {
    let mut tasks: Vec<(&str, usize, usize)> = Vec::new();
    let graded: Vec<&str> = rollouts.iter().filter(|r| r.reward.is_some()).map(|r| r.task.as_str()).collect();
    for rollout in rollouts.iter().filter(|r| graded.contains(&r.task.as_str())) {
        match tasks.iter_mut().find(|(name, _, _)| *name == rollout.task) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 += usize::from(rollout.passed());
            }
            None => tasks.push((&rollout.task, 1, usize::from(rollout.passed()))),
        }
    }
    let most = tasks.iter().map(|(_, n, _)| *n).min().unwrap_or(0);
    let mut out = Map::default();
    for k in 1..=most {
        let estimate = tasks.iter().map(|(_, n, c)| choose(*c, k) / choose(*n, k)).sum::<f64>() / tasks.len() as f64;
        out.insert(k.to_string(), Value::Float(estimate));
    }
    Value::Object(out)
}

/// Per task: `[{task, rollouts, passed, passBar, rewards: [...], meanReward}]`.
pub fn per_task(rollouts: &[Rollout]) -> Value {
    let mut order: Vec<&str> = Vec::new();
    for rollout in rollouts {
        if !order.contains(&rollout.task.as_str()) {
            order.push(&rollout.task);
        }
    }
    Value::Array(
        order
            .into_iter()
            .map(|task| {
                let mine: Vec<&Rollout> = rollouts.iter().filter(|r| r.task == task).collect();
                let rewards: Vec<f64> = mine.iter().filter_map(|r| r.reward).collect();
                let errors: Vec<Value> =
                    mine.iter().filter_map(|r| r.agent_error.clone().or_else(|| r.grade_error.clone())).map(Value::Str).collect();
                object([
                    ("task", Value::str(task)),
                    ("rollouts", Value::Int(mine.len() as i64)),
                    ("passed", Value::Int(mine.iter().filter(|r| r.passed()).count() as i64)),
                    ("passBar", Value::Float(mine.first().map_or(0.0, |r| r.pass_bar))),
                    ("rewards", Value::Array(mine.iter().map(|r| r.reward.map(Value::Float).unwrap_or_default()).collect())),
                    ("meanReward", mean(&rewards).map(Value::Float).unwrap_or_default()),
                    ("errored", Value::Int(mine.iter().filter(|r| r.errored.is_some()).count() as i64)),
                    ("errors", Value::Array(errors)),
                ])
            })
            .collect(),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn graded(task: &str, reward: Option<f64>) -> Rollout {
        Rollout { reward, ..Rollout::unrun(task, 0, String::new(), 0.7) }
    }

    #[test]
    fn filed_messages_keep_the_last_ones_cut() {
        let long = "x".repeat(MESSAGE_CHARS + 10);
        let messages: Vec<Value> =
            (0..MESSAGES + 5).map(|i| object([("role", Value::str("user")), ("content", Value::Str(format!("{i} {long}")))])).collect();
        let filed = filed_messages(&object([("messages", Value::Array(messages))]));
        assert_eq!(filed.len(), MESSAGES);
        let first = filed[0].get("content").and_then(Value::as_str).unwrap();
        assert!(first.starts_with("5 ") && first.ends_with('…') && first.chars().count() == MESSAGE_CHARS + 1, "{first}");
        assert!(filed_messages(&Value::Null).is_empty());
    }

    #[test]
    fn an_http_call_is_filed_with_what_it_sent_and_was_answered() {
        let call = object([
            ("kind", Value::str("http")),
            ("request", Value::str("POST /tickets")),
            ("status", Value::Int(201)),
            ("body", Value::str("{\"title\": \"x\"}")),
            ("answer", Value::Str("y".repeat(3000))),
        ]);
        let entry = log_entry(&call);
        assert_eq!(entry.get("request").and_then(Value::as_str), Some("POST /tickets"));
        assert_eq!(entry.get("body").and_then(Value::as_str), Some("{\"title\": \"x\"}"));
        assert_eq!(entry.get("answer").and_then(Value::as_str).map(|a| a.len()), Some(2000));
    }

    #[test]
    fn pass_hat_k_is_the_chance_k_rollouts_all_pass() {
        // a: 2 of 3 pass; b: 3 of 3.
        let rollouts = vec![
            graded("a", Some(1.0)),
            graded("a", Some(0.0)),
            graded("a", Some(0.8)),
            graded("b", Some(1.0)),
            graded("b", Some(1.0)),
            graded("b", Some(0.9)),
        ];
        let pass = pass_hat_k(&rollouts);
        let at = |k: &str| pass.get(k).and_then(Value::as_f64).unwrap();
        assert!((at("1") - (2.0 / 3.0 + 1.0) / 2.0).abs() < 1e-12);
        assert!((at("2") - (1.0 / 3.0 + 1.0) / 2.0).abs() < 1e-12);
        assert!((at("3") - 0.5).abs() < 1e-12);
        assert!(pass.get("4").is_none());
        // An ungraded task is left out, not counted as failed.
        let mut with_ungraded = rollouts.clone();
        with_ungraded.extend([graded("c", None), graded("c", None), graded("c", None)]);
        assert_eq!(gateway_world::json::canonical(&pass_hat_k(&with_ungraded)), gateway_world::json::canonical(&pass));
    }

    #[test]
    fn metrics_average_numeric_rewards_only() {
        let mut ungraded = graded("c", None);
        ungraded.rewards.insert("x".into(), Value::Float(1.0));
        let m = metrics(&[graded("a", Some(1.0)), graded("b", Some(0.5)), ungraded]);
        assert_eq!(json::canonical(&m), r#"{"avg_reward":0.75,"metrics":{"x":1.0},"n":3}"#);
        assert_eq!(json::canonical(&metrics(&[])), r#"{"avg_reward":null,"metrics":{},"n":0}"#);
    }

    #[test]
    fn named_rewards_take_nested_then_flat_numbers() {
        let grade = json::parse(r#"{"reward": 1, "rewards": {"a": 1.0, "b": "x"}, "c": 0.5, "d": true}"#).unwrap().value;
        assert_eq!(json::canonical(&Value::Object(named_rewards(&grade))), r#"{"a":1.0,"c":0.5}"#);
    }
}

//! The evaluation pages of a world: the reward-per-version chart over its samples and
//! the evaluations newest first (paged by `seq`), one evaluation with its rollouts
//! (samples, paged), and one rollout's transcript (prompt, completion, the call log of
//! `info.callLog`, the rest of `info`). Figures are computed as the §7 performance view
//! computes them (means over non-null rewards; nulls counted apart). It writes nothing
//! and is not the §7 API: the figures are drawn for people, not served as JSON.

use super::super::evaluations::own_evaluation;
use super::super::request::PageSize;
use super::super::state::Hub;
use super::chart::{reward_chart, Bar};
use super::page::{clip, cursor, json_pretty, json_text, number, page, project_world, state_pill, version_label, world_url};
use crate::error::HubError;
use crate::evaluations::{Evaluation, SampleSums};
use crate::store::{Container, Version};
use gateway_common::url::quote_segment;
use gateway_world::json::{self, Map, Value};
use maud::{html, Markup};
use std::collections::BTreeMap;

/// Evaluations per page, by default and at most.
const EVALUATIONS: PageSize = PageSize { default: 50, max: 200 };
/// Rollouts per page, by default and at most.
const SAMPLES: PageSize = PageSize { default: 100, max: 500 };
/// Versions read for labels and the chart.
const MAX_VERSIONS: i64 = 1000;
/// Longest text shown for one member of a transcript.
const MAX_TEXT: usize = 200_000;

/// The evaluation of this world (another world's or project's is absent).
async fn world_evaluation(hub: &Hub, project: &str, container: &Container, id: &str) -> Result<Evaluation, HubError> {
    match own_evaluation(hub, project, id).await {
        Ok(e) if e.container_id == container.id => Ok(e),
        Err(other) if !other.is_not_found() => Err(other),
        _ => Err(HubError::NotFound(format!("no evaluation '{id}' of '{}'", container.slug))),
    }
}

/// The mean reward an evaluation's finalize reported (`avg_reward`, else `reward`).
fn reported_reward(evaluation: &Evaluation) -> Option<f64> {
    let metrics = json::parse_clean(evaluation.metrics.as_deref()?)?;
    metrics.get("avg_reward").or_else(|| metrics.get("reward")).and_then(Value::as_f64)
}

fn mean(sums: &SampleSums) -> Option<f64> {
    (sums.rewards() > 0).then(|| sums.reward_sum / sums.rewards() as f64)
}

fn eval_url(slug: &str, id: &str) -> String {
    format!("/ui/w/{slug}/evaluations/{}", quote_segment(id))
}

/// `/ui/w/{slug}/evaluations[?before=&limit=]`.
pub(super) async fn list(hub: &Hub, project: &str, slug: &str, query: &BTreeMap<String, String>) -> Result<Markup, HubError> {
    let container = project_world(hub, project, slug).await?;
    let before = cursor(query, "before")?;
    let size = EVALUATIONS.shown(query);
    // Four indexed reads, whatever the number of evaluations or samples.
    let (evaluations, versions, sums, total) = tokio::try_join!(
        hub.meta.evaluations_before(&container.id, before, size),
        hub.meta.container_versions(&container.id, MAX_VERSIONS),
        hub.meta.task_sums(&container.id),
        hub.meta.evaluation_count(&container.id),
    )?;
    let mut per_version: BTreeMap<&str, SampleSums> = BTreeMap::new();
    let mut all = SampleSums::default();
    for row in &sums {
        per_version.entry(row.version_id.as_str()).or_default().add(&row.sums);
        all.add(&row.sums);
    }
    // Oldest first: `versions` is newest first.
    let bars: Vec<Bar> = versions
        .iter()
        .rev()
        .filter_map(|v| per_version.get(v.id.as_str()).map(|s| (v, s)))
        .map(|(v, s)| Bar { label: version_label(v), mean: mean(s), samples: s.samples, nulls: s.null_rewards })
        .collect();
    let labels: BTreeMap<&str, &Version> = versions.iter().map(|v| (v.id.as_str(), v)).collect();
    let url = world_url(&container.slug);
    let older = (evaluations.len() as i64 == size).then(|| evaluations.last().map(|e| e.seq)).flatten();
    Ok(page(
        &format!("{} · evaluations", container.slug),
        &[("Worlds", "/ui/".into()), (&container.slug, url.clone())],
        html! {
            div.cards {
                div.card { b { (total) } "evaluations" }
                div.card { b { (all.samples) } "rollouts" }
                div.card { b { (mean(&all).map(number).unwrap_or_else(|| "–".into())) } "mean reward" }
                div.card { b { (all.null_rewards) } "null rewards" }
            }
            h2 { "Mean reward per version" }
            @if bars.is_empty() { p.muted { "No rollout has been filed yet." } } @else { (reward_chart(&bars)) }
            h2 { "Evaluations" }
            @if evaluations.is_empty() {
                p.muted { "None" @if before.is_some() { " older than this" } "." }
            } @else {
                table {
                    tr { th { "Evaluation" } th { "Model" } th { "Status" } th { "Version" } th.num { "Rollouts" } th.num { "Reward" } th { "Run" } th { "Created" } }
                    @for e in &evaluations {
                        tr {
                            td { a href=(eval_url(&container.slug, &e.id)) { code { (e.id) } } }
                            td { (e.model.clone().unwrap_or_default()) }
                            td { (state_pill(&e.status)) }
                            td {
                                a href={ (url) "/v/" (e.version_id) } {
                                    (labels.get(e.version_id.as_str()).map(|v| version_label(v)).unwrap_or_else(|| e.version_id.clone()))
                                }
                            }
                            td.num { (e.sample_count) }
                            td.num { (reported_reward(e).map(number).unwrap_or_default()) }
                            td { (e.run_id.clone().unwrap_or_default()) }
                            td.muted { (e.created_at) }
                        }
                    }
                }
            }
            p.pager {
                @if before.is_some() { a href={ (url) "/evaluations" } { "« Newest" } }
                @if let Some(seq) = older { a href={ (url) "/evaluations?before=" (seq) } { "Older »" } }
            }
        },
    ))
}

/// `/ui/w/{slug}/evaluations/{id}[?after=&limit=]`: an evaluation and its rollouts.
pub(super) async fn evaluation(
    hub: &Hub,
    project: &str,
    slug: &str,
    id: &str,
    query: &BTreeMap<String, String>,
) -> Result<Markup, HubError> {
    let container = project_world(hub, project, slug).await?;
    let evaluation = world_evaluation(hub, project, &container, id).await?;
    let after = cursor(query, "after")?.unwrap_or(0);
    let size = SAMPLES.shown(query);
    let (samples, version) =
        tokio::try_join!(hub.meta.samples_after(&evaluation.id, after, size), hub.meta.version(&evaluation.version_id))?;
    let url = world_url(&container.slug);
    let here = eval_url(&container.slug, &evaluation.id);
    let next = (samples.len() as i64 == size).then(|| samples.last().map(|(seq, _)| *seq)).flatten();
    let json_or_dash =
        |text: &Option<String>| text.as_deref().and_then(json::parse_clean).map(|v| json_text(&v, 4000)).unwrap_or_else(|| "–".into());
    let details = json::parse_clean(&evaluation.details).unwrap_or_default();
    Ok(page(
        &format!("Evaluation {}", evaluation.id),
        &[("Worlds", "/ui/".into()), (&container.slug, url.clone()), ("evaluations", format!("{url}/evaluations"))],
        html! {
            table {
                tr { th { "Model" } td { (evaluation.model.clone().unwrap_or_default()) } }
                tr { th { "Status" } td { (state_pill(&evaluation.status)) } }
                tr {
                    th { "Version" }
                    td { a href={ (url) "/v/" (evaluation.version_id) } { (version.as_ref().map(version_label).unwrap_or_else(|| evaluation.version_id.clone())) } }
                }
                tr { th { "Run" } td { (evaluation.run_id.clone().unwrap_or_default()) } }
                tr { th { "Rollouts" } td { (evaluation.sample_count) } }
                tr { th { "Examples × rollouts" } td {
                    (evaluation.num_examples.map(|n| n.to_string()).unwrap_or_else(|| "–".into())) " × "
                    (evaluation.rollouts_per_example.map(|n| n.to_string()).unwrap_or_else(|| "–".into()))
                } }
                tr { th { "Created" } td { (evaluation.created_at) } }
                tr { th { "Completed" } td { (evaluation.completed_at.clone().unwrap_or_else(|| "–".into())) } }
                tr { th { "Metrics" } td { code { (json_or_dash(&evaluation.metrics)) } } }
                tr { th { "Cost" } td { code { (json_or_dash(&evaluation.cost)) } } }
                @if details.as_object().is_some_and(|d| !d.is_empty()) { tr { th { "Details" } td { code { (json_text(&details, 4000)) } } } }
            }
            h2 { "Rollouts" }
            @if samples.is_empty() {
                p.muted { "None" @if after > 0 { " after this" } "." }
            } @else {
                table {
                    tr { th { "Task" } th { "Example" } th.num { "Rollout" } th.num { "Reward" } th.num { "Score" } th { "Correct" } th {} }
                    @for (_, s) in &samples {
                        tr {
                            td { (s.task) }
                            td { (s.example_id.clone().unwrap_or_default()) }
                            td.num { (s.rollout_index) }
                            td.num { (s.reward.map(number).unwrap_or_else(|| "null".into())) }
                            td.num { (s.score.map(number).unwrap_or_default()) }
                            td { (s.correct.map(|c| c.to_string()).unwrap_or_default()) }
                            td { a href={ (here) "/samples/" (quote_segment(&s.id)) } { "transcript" } }
                        }
                    }
                }
            }
            p.pager {
                @if after > 0 { a href=(here) { "« First" } }
                @if let Some(seq) = next { a href={ (here) "?after=" (seq) } { "Next »" } }
            }
        },
    ))
}

/// A prompt or completion: text as is, a chat (`[{role, content}]`) as messages, else JSON.
fn conversation(value: &Value) -> Markup {
    match value {
        Value::Str(text) => html! { pre { (clip(text, MAX_TEXT)) } },
        Value::Array(items) if !items.is_empty() && items.iter().all(|m| m.get("role").is_some()) => html! {
            @for m in items {
                div.msg {
                    div.role { (m.get("role").and_then(Value::as_str).unwrap_or("?")) }
                    @match m.get("content") {
                        Some(Value::Str(text)) => { pre { (clip(text, MAX_TEXT)) } },
                        Some(other) => { pre { (json_pretty(other, MAX_TEXT)) } },
                        None => {},
                    }
                    @if let Some(calls) = m.get("tool_calls").filter(|c| !matches!(c, Value::Null)) { (tool_calls(calls)) }
                }
            }
        },
        other => html! { pre { (json_pretty(other, MAX_TEXT)) } },
    }
}

/// A logged value as it reads best: text that holds JSON (a model's `arguments`, a
/// `result_preview`, an HTTP body) decoded and shown as JSON, other text as is.
fn decoded(value: &Value) -> Markup {
    match value {
        Value::Str(text) => match json::parse_clean(text) {
            Some(parsed @ (Value::Object(_) | Value::Array(_))) => html! { code { (json_text(&parsed, 2000)) } },
            _ => html! { code { (clip(text, 2000)) } },
        },
        other => html! { code { (json_text(other, 2000)) } },
    }
}

/// What a logged call was: its tool (or kind), else the HTTP method and path it
/// sent (a runner's `request`, or a hub log row's `method` + `path`).
fn call_name(call: &Value) -> String {
    let named = ["tool", "name"].iter().find_map(|k| call.get(k).and_then(Value::as_str).filter(|n| !n.is_empty()));
    if let Some(name) = named {
        return name.to_string();
    }
    if let Some(request) = call.get("request").and_then(Value::as_str) {
        return request.to_string();
    }
    match (call.get("method").and_then(Value::as_str), call.get("path").and_then(Value::as_str)) {
        (Some(method), Some(path)) => format!("{method} {path}"),
        _ => call.get("kind").and_then(Value::as_str).unwrap_or_default().to_string(),
    }
}

/// A call log (`info.callLog`): one row per call — what it called, its arguments
/// (decoded), and its answer (decoded) with the HTTP status, or its error.
fn call_log(calls: &[Value]) -> Markup {
    let first = |call: &Value, keys: &[&str]| keys.iter().find_map(|k| call.get(k).filter(|v| !matches!(v, Value::Null))).cloned();
    html! {
        table {
            tr { th.num { "#" } th { "Call" } th { "Arguments" } th { "Answer" } }
            @for (i, call) in calls.iter().enumerate() {
                @let name = call_name(call);
                @let args = first(call, &["args", "arguments", "input", "body"]);
                @let error = first(call, &["error"]);
                @let result = first(call, &["result", "output", "result_preview", "answer"]);
                @let status = call.get("status").and_then(Value::as_i64);
                tr {
                    td.num { (i + 1) }
                    td { code { (name) } }
                    td { @if let Some(args) = &args { (decoded(args)) } @else if name.is_empty() { code { (json_text(call, 2000)) } } }
                    td {
                        @if let Some(status) = status { span class={ "pill " (if status < 400 { "COMPLETED" } else { "FAILED" }) } { (status) } " " }
                        @if let Some(error) = &error { span.pill.FAILED { "error" } " " (decoded(error)) }
                        @else if let Some(result) = &result { (decoded(result)) }
                    }
                }
            }
        }
    }
}

/// A model's tool calls (`[{id, function: {name, arguments}}]`): each as
/// `name(arguments)`, the arguments decoded.
fn tool_calls(calls: &Value) -> Markup {
    let Some(calls) = calls.as_array() else { return html! { pre { (json_pretty(calls, MAX_TEXT)) } } };
    html! {
        ul.calls {
            @for call in calls {
                @let function = call.get("function").unwrap_or(call);
                li {
                    code { (function.get("name").and_then(Value::as_str).unwrap_or("?")) }
                    " " @if let Some(arguments) = function.get("arguments") { (decoded(arguments)) }
                }
            }
        }
    }
}

/// `/ui/w/{slug}/evaluations/{id}/samples/{sample}`: one rollout's transcript.
pub(super) async fn transcript(hub: &Hub, project: &str, slug: &str, id: &str, sample_id: &str) -> Result<Markup, HubError> {
    let container = project_world(hub, project, slug).await?;
    let evaluation = world_evaluation(hub, project, &container, id).await?;
    let sample = hub
        .meta
        .sample(sample_id)
        .await?
        .filter(|s| s.evaluation_id == evaluation.id)
        .ok_or_else(|| HubError::NotFound(format!("no rollout '{sample_id}' in evaluation '{}'", evaluation.id)))?;
    let body = json::parse_clean(&sample.body).unwrap_or_default();
    let info = body.get("info").cloned().unwrap_or_default();
    let calls = info.get("callLog").or_else(|| info.get("call_log")).and_then(Value::as_array).cloned().unwrap_or_default();
    let messages = info.get("messages").filter(|m| m.as_array().is_some_and(|m| !m.is_empty())).cloned();
    let shown_apart = ["callLog", "call_log", "messages"];
    let rest: Map = info
        .as_object()
        .map(|m| m.iter().filter(|(k, _)| !shown_apart.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let url = world_url(&container.slug);
    let title = match (&sample.example_id, sample.task.is_empty()) {
        (Some(example), _) => format!("{} · {example} #{}", sample.task, sample.rollout_index),
        (None, false) => format!("{} #{}", sample.task, sample.rollout_index),
        (None, true) => format!("Rollout {}", sample.id),
    };
    Ok(page(
        &title,
        &[
            ("Worlds", "/ui/".into()),
            (&container.slug, url.clone()),
            ("evaluations", format!("{url}/evaluations")),
            (&evaluation.id, eval_url(&container.slug, &evaluation.id)),
        ],
        html! {
            div.cards {
                div.card { b { (sample.reward.map(number).unwrap_or_else(|| "null".into())) } "reward" }
                div.card { b { (sample.score.map(number).unwrap_or_else(|| "–".into())) } "score" }
                div.card { b { (sample.correct.map(|c| c.to_string()).unwrap_or_else(|| "–".into())) } "correct" }
                div.card { b { (calls.len()) } "calls" }
            }
            @if let Some(rewards) = body.get("rewards").filter(|r| !matches!(r, Value::Null)) { p { "Rewards: " code { (json_text(rewards, 2000)) } } }
            @if let Some(prompt) = body.get("prompt") { h2 { "Prompt" } (conversation(prompt)) }
            @if let Some(completion) = body.get("completion") { h2 { "Completion" } (conversation(completion)) }
            @if let Some(answer) = body.get("answer") { h2 { "Answer" } (conversation(answer)) }
            @if let Some(messages) = &messages { h2 { "Model messages" } (conversation(messages)) }
            h2 { "Call log" }
            @if calls.is_empty() { p.muted { "No call log in this rollout's info." } } @else { (call_log(&calls)) }
            @if !rest.is_empty() { h2 { "Info" } pre { (json_pretty(&Value::Object(rest), MAX_TEXT)) } }
        },
    ))
}

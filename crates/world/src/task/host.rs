//! The host's checks of a parsed task against one world: entities the contract
//! lacks, allowed tools the world does not serve, calls the allow-list refuses.
//!
//! Refusals only; opening a session and applying the seed are the host's.

use super::parse::refuse;
use super::spec::TaskSpec;
use crate::error::ContractError;
use std::collections::{BTreeSet, HashSet};

/// The entities `spec` names that `defined` (a world contract's) lacks, in the
/// order the spec names them.
pub fn unknown_task_entities<'a>(spec: &TaskSpec, defined: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let known: HashSet<&str> = defined.into_iter().collect();
    spec.entities().into_iter().filter(|e| !known.contains(e.as_str())).collect()
}

/// The tools `spec` allows that the world does not serve, in spec order (none when
/// the task allows every tool).
pub fn unknown_task_tools<'a>(spec: &TaskSpec, served: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let Some(tools) = &spec.tools else { return Vec::new() };
    let known: HashSet<&str> = served.into_iter().collect();
    tools.iter().filter(|t| !known.contains(t.as_str())).cloned().collect()
}

/// The host's refusal of a task naming entities the world does not define (the
/// original's `_check_task_entities`): an assertion over a missing entity selects
/// nothing, so `absent` would pass on a typo.
pub fn check_task_entities<'a>(spec: &TaskSpec, defined: impl IntoIterator<Item = &'a str>) -> Result<(), ContractError> {
    let defined: BTreeSet<&str> = defined.into_iter().collect();
    let unknown = unknown_task_entities(spec, defined.iter().copied());
    if unknown.is_empty() {
        return Ok(());
    }
    let listed = if defined.is_empty() { "none".to_string() } else { defined.into_iter().collect::<Vec<_>>().join(", ") };
    Err(refuse(format!("the task names {}, which this world does not define; its entities are {listed}", unknown.join(", ")), "/task"))
}

/// The host's refusal of an allow-list naming tools the world does not serve (the
/// original's `_check_task_tools`).
pub fn check_task_tools<'a>(spec: &TaskSpec, served: impl IntoIterator<Item = &'a str>) -> Result<(), ContractError> {
    let served: BTreeSet<&str> = served.into_iter().collect();
    let unknown = unknown_task_tools(spec, served.iter().copied());
    if unknown.is_empty() {
        return Ok(());
    }
    let listed = if served.is_empty() { "none".to_string() } else { served.into_iter().collect::<Vec<_>>().join(", ") };
    Err(refuse(format!("the task allows {}, which this world does not serve; its tools are {listed}", unknown.join(", ")), "/task/tools"))
}

/// The host's refusal of a call to a tool the session's task does not allow
/// (code `tool_not_allowed`).
pub fn check_tool_allowed(spec: &TaskSpec, tool: &str) -> Result<(), ContractError> {
    if spec.allows_tool(tool) {
        return Ok(());
    }
    let allowed = spec.tools.as_deref().unwrap_or_default().join(", ");
    Err(ContractError::new("tool_not_allowed", format!("tool '{tool}' is not allowed by this session's task; it allows: {allowed}"), ""))
}

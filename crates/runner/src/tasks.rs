//! A world's tasks, as a run sees them: the task specs it carries under
//! `tasks/*.json` (engine.md §14; beyond the original, which kept schema worlds'
//! tasks as bundled scenarios only) and its bundled scenarios that are tasks
//! (`scenarios/<name>/` with an instruction and a grader, `checks/verify.py`).
//!
//! It reads and checks specs; it does not open sessions or grade (see
//! [`crate::world`]).

use crate::error::RunnerError;
use gateway_host::version::Version;
use gateway_world::json::{python_repr, Value};
use gateway_world::task::TaskSpec;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a task comes from.
#[derive(Debug, Clone)]
pub enum TaskSource {
    /// A task spec (`tasks/<file>.json`), parsed once: the host, the graders and
    /// the judge share this value.
    Spec {
        /// The spec.
        spec: Arc<TaskSpec>,
        /// Its file.
        file: PathBuf,
    },
    /// A bundled scenario, by name.
    Bundled {
        /// Its directory.
        dir: PathBuf,
    },
}

/// One task of a world.
#[derive(Debug, Clone)]
pub struct WorldTask {
    /// The task's name (a spec's `name`, else its file stem; a scenario's directory).
    pub name: String,
    /// The instruction an agent is given.
    pub instruction: String,
    /// Where it comes from.
    pub source: TaskSource,
}

impl WorldTask {
    /// The spec, for a spec task.
    pub fn spec(&self) -> Option<&Arc<TaskSpec>> {
        match &self.source {
            TaskSource::Spec { spec, .. } => Some(spec),
            TaskSource::Bundled { .. } => None,
        }
    }

    /// The pass bar of a rollout of this task: `metadata.passBar`, else 0.7.
    pub fn pass_bar(&self) -> f64 {
        self.spec().map_or(gateway_host::selftest::DEFAULT_PASS_BAR, |spec| gateway_host::selftest::pass_bar(spec))
    }

    /// The tools the task allows (None: every tool of the world).
    pub fn allowed_tools(&self) -> Option<&Vec<String>> {
        self.spec()?.tools.as_ref()
    }

    /// The task's directory: its scenario's, or the one holding its spec file.
    pub fn dir(&self) -> Option<&Path> {
        match &self.source {
            TaskSource::Spec { file, .. } => file.parent(),
            TaskSource::Bundled { dir } => Some(dir),
        }
    }
}

fn sorted_dir(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect()).unwrap_or_default();
    paths.sort();
    paths
}

/// Every task of an opened version: the specs under `tasks/*.json` (file order),
/// then the scenarios with an instruction and a grader whose name no spec took
/// (name order).
/// A spec that does not parse refuses the whole world, naming its file.
pub fn discover(version: &Version) -> Result<Vec<WorldTask>, RunnerError> {
    let mut roots = vec![version.bundle.clone()];
    if version.tree != version.bundle {
        roots.push(version.tree.clone());
    }
    let mut tasks: Vec<WorldTask> = Vec::new();
    let mut names = BTreeSet::new();
    // An api bundle may carry tasks/ at its root and in its world tree: the root's win.
    if let Some(root) = roots.iter().find(|r| r.join("tasks").is_dir()) {
        for file in sorted_dir(&root.join("tasks")) {
            if file.extension().and_then(|e| e.to_str()) != Some("json") || !file.is_file() {
                continue;
            }
            let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
            let text = std::fs::read_to_string(&file).map_err(|e| RunnerError::World(format!("{shown}: {e}")))?;
            let spec = gateway_world::json::parse(&text).map_err(|e| RunnerError::World(format!("{shown}: not JSON ({e:?})")))?.value;
            let spec = Arc::new(TaskSpec::parse(&spec).map_err(|e| RunnerError::World(format!("{shown}: {}", e.message)))?);
            let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let name = spec.name.clone().unwrap_or(stem);
            if !names.insert(name.clone()) {
                return Err(RunnerError::World(format!("{shown}: another task is named '{name}' already")));
            }
            tasks.push(WorldTask { name, instruction: spec.instruction.clone(), source: TaskSource::Spec { spec, file } });
        }
    }
    let mut scenarios = BTreeSet::new();
    for root in &roots {
        for dir in sorted_dir(&root.join("scenarios")) {
            // A scenario without a grader is a starting state, not a task.
            if dir.join("scenario.toml").is_file() && dir.join("checks/verify.py").is_file() {
                scenarios.insert(dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
            }
        }
    }
    for name in scenarios {
        if names.contains(&name) {
            continue;
        }
        let (Some(instruction), Some(dir)) = (gateway_host::tools::bundled_instruction(version, &name), version.scenario_dir(&name)) else {
            continue;
        };
        tasks.push(WorldTask { name, instruction, source: TaskSource::Bundled { dir } });
    }
    Ok(tasks)
}

/// The task a variant names, as the original picks one: the first task when none
/// is named, else the one of that name, else the first whose name contains it.
pub fn pick<'a>(tasks: &'a [WorldTask], variant: Option<&str>) -> Result<&'a WorldTask, RunnerError> {
    let Some(variant) = variant else {
        return tasks.first().ok_or_else(|| RunnerError::World("the world has no tasks".into()));
    };
    if let Some(task) = tasks.iter().find(|t| t.name == variant).or_else(|| tasks.iter().find(|t| t.name.contains(variant))) {
        return Ok(task);
    }
    let known: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
    Err(RunnerError::World(format!("no task matches variant {}; have: {}", python_repr(&Value::str(variant)), known.join(", "))))
}

/// The refusal for a world with nothing to run.
pub fn no_tasks(world: &Path) -> RunnerError {
    RunnerError::World(format!(
        "{} has no tasks: add task specs under tasks/<name>.json, or scenarios/<name>/ with an instruction and checks/verify.py",
        world.display()
    ))
}

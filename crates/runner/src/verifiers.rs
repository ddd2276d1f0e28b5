//! Verifiers worlds (the original's `benchmark_hub.verifiers_adapter`): a verifiers
//! (v0) environment installed in the Python on PATH (`gateway bench install`) is
//! scored by its own rollout loop in a `python3` subprocess (verifiers_bridge.py,
//! compiled in), whose samples and metrics are then filed here as one evaluation
//! pinned to the version. Also the detection of verifiers v1 Taskset packages,
//! which run only on the platform's hosted runner.
//!
//! It is not verifiers: without `verifiers` and `openai` importable, a run is
//! refused with what to install.

use crate::error::RunnerError;
use crate::process::PYTHON;
use gateway_hub_client::evals_client::{EvalsClient, NewEvaluation};
use gateway_world::json::{self, object, Map, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The bridge's source.
pub const BRIDGE: &str = include_str!("verifiers_bridge.py");
/// The endpoint the original scores against (`OPENROUTER_API_KEY`).
pub const OPENROUTER: &str = "https://openrouter.ai/api/v1";

const V1_DEP: &str = r#"["']verifiers\s*(?:\[[^\]]*\])?\s*(?:>=|~=|==|>)\s*(?:0\.(?:[2-9]\d*|[1-9]\d+)|[1-9]\d*)"#;
const V1_IMPORT: &str = r"(?m)^\s*(?:from\s+verifiers\.v1\s+import\b|from\s+verifiers\s+import\s+v1\b|import\s+verifiers\.v1\b)";
const V1_TASKSET: &str = r"class\s+\w+\s*\(\s*(?:(?:vf|v1|verifiers(?:\.v1)?)\.)?Taskset\s*[,)]";

fn package_inits(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path().join("__init__.py"))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// A verifiers v1 Taskset package: a `verifiers>=0.2` (or later) dependency in
/// pyproject.toml, or a package `__init__.py` importing `verifiers.v1` or exporting a
/// `Taskset` subclass.
pub fn is_verifiers_v1(src: &Path) -> bool {
    let text = |p: &Path| std::fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let dep = regex::Regex::new(V1_DEP).expect("valid");
    if dep.is_match(&text(&src.join("pyproject.toml"))) {
        return true;
    }
    let import = regex::Regex::new(V1_IMPORT).expect("valid");
    let taskset = regex::Regex::new(V1_TASKSET).expect("valid");
    package_inits(src).into_iter().chain(package_inits(&src.join("src"))).any(|init| {
        let body = text(&init);
        !body.is_empty() && (import.is_match(&body) || (body.contains("__all__") && taskset.is_match(&body)))
    })
}

/// A verifiers eval.
#[derive(Debug, Clone)]
pub struct VerifiersEval {
    /// The verifiers env id (`--env-id`, else the slug).
    pub env_id: String,
    /// The model id.
    pub model: String,
    /// Examples (-1: all).
    pub num_examples: i64,
    /// Rollouts per example.
    pub rollouts_per_example: i64,
    /// Write the resumable results artifact.
    pub save_results: bool,
    /// Where the artifact goes (`<dir>/evals/<env>--<model>/<run>/`).
    pub output_dir: PathBuf,
    /// Resume (and write) this results dir.
    pub resume: Option<PathBuf>,
    /// The OpenAI-compatible endpoint.
    pub base_url: String,
}

/// What the bridge scored: samples, metrics and the artifact's path.
#[derive(Debug, Clone)]
pub struct Scored {
    /// One sample per rollout, in the API's shape.
    pub samples: Vec<Map>,
    /// `{n, avg_reward, metrics}`.
    pub metrics: Value,
    /// The results dir written, if any.
    pub results_path: Option<String>,
}

/// Run the environment's rollout loop in the bridge.
pub fn score(eval: &VerifiersEval) -> Result<Scored, RunnerError> {
    let config = object([
        ("envId", Value::str(&eval.env_id)),
        ("model", Value::str(&eval.model)),
        ("numExamples", Value::Int(eval.num_examples)),
        ("rolloutsPerExample", Value::Int(eval.rollouts_per_example)),
        ("saveResults", Value::Bool(eval.save_results || eval.resume.is_some())),
        ("outputDir", Value::Str(eval.output_dir.display().to_string())),
        ("resumePath", eval.resume.as_ref().map(|p| Value::Str(p.display().to_string())).unwrap_or_default()),
        ("baseUrl", Value::str(&eval.base_url)),
    ]);
    let out = Command::new(PYTHON)
        .args(["-c", BRIDGE, &json::canonical(&config)])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .stdout(Stdio::piped())
        .output()
        .map_err(|e| RunnerError::Missing(format!("{PYTHON} could not start: {e} (the verifiers kind runs in Python)")))?;
    match out.status.code() {
        Some(0) => {}
        Some(3) => return Err(RunnerError::Missing("the verifiers kind needs the Python packages named above".into())),
        _ => return Err(RunnerError::Harvest(format!("the verifiers environment '{}' could not be scored ({})", eval.env_id, out.status))),
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let done = json::parse_loads(&text)
        .map_err(|e| RunnerError::Harvest(format!("the verifiers bridge answered something that is not JSON ({e:?})")))?
        .value;
    let samples = done
        .get("samples")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|s| s.as_object().cloned()).collect())
        .unwrap_or_default();
    Ok(Scored {
        samples,
        metrics: done.get("metrics").cloned().unwrap_or_default(),
        results_path: done.get("resultsPath").and_then(Value::as_str).map(str::to_string),
    })
}

/// Score and file: `{evaluationId, samples, metrics, resultsPath}`.
pub fn run_local_eval(eval: &VerifiersEval, version_id: &str, client: &EvalsClient) -> Result<Value, RunnerError> {
    let scored = score(eval)?;
    let examples: BTreeSet<String> = scored.samples.iter().filter_map(|s| s.get("exampleId").map(json::canonical)).collect();
    let options = NewEvaluation {
        model: Some(eval.model.clone()),
        run_id: None,
        // Distinct examples, not rollout rows.
        num_examples: Some(if eval.num_examples > 0 { eval.num_examples } else { examples.len() as i64 }),
        rollouts_per_example: Some(eval.rollouts_per_example),
        metadata: None,
    };
    let evaluation_id = client.create_evaluation(version_id, &options)?;
    let inserted = client.push_samples(&evaluation_id, scored.samples)?;
    client.finalize_evaluation(&evaluation_id, "COMPLETED", Some(scored.metrics.clone()))?;
    Ok(object([
        ("evaluationId", Value::Str(evaluation_id)),
        ("samples", Value::Int(inserted)),
        ("metrics", scored.metrics),
        ("resultsPath", scored.results_path.map(Value::Str).unwrap_or_default()),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_packages_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_verifiers_v1(dir.path()));
        std::fs::write(dir.path().join("pyproject.toml"), "dependencies = [\"verifiers<1.0.0\"]\n").unwrap();
        assert!(!is_verifiers_v1(dir.path()), "the v0 pin");
        std::fs::write(dir.path().join("pyproject.toml"), "dependencies = [\"verifiers==0.1.5\"]\n").unwrap();
        assert!(!is_verifiers_v1(dir.path()));
        std::fs::write(dir.path().join("pyproject.toml"), "dependencies = [\"verifiers[all]>=0.2\"]\n").unwrap();
        assert!(is_verifiers_v1(dir.path()));
        std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
        std::fs::write(dir.path().join("src/pkg/__init__.py"), "__all__ = ['T']\nclass T(vf.Taskset):\n    pass\n").unwrap();
        assert!(is_verifiers_v1(dir.path()));
        std::fs::write(dir.path().join("src/pkg/__init__.py"), "class T(vf.Taskset):\n    pass\n").unwrap();
        assert!(!is_verifiers_v1(dir.path()), "a Taskset without __all__");
        std::fs::write(dir.path().join("src/pkg/__init__.py"), "import os\n  from verifiers.v1 import Taskset\n").unwrap();
        assert!(is_verifiers_v1(dir.path()));
    }
}

//! An agent project on disk, as `gateway deploy`, `gateway init` and `gateway algorithm
//! new` see it (the original's `platform/manifest.py`, `platform/builder.py` and the
//! scaffolds of `cli/platform.py`):
//! - `gateway_manifest/agent.yml` read into the registration payload, with the
//!   original's refusals (and clear ones where it would crash: a `runner` that is not
//!   a mapping, capabilities that are not strings, YAML that does not parse);
//!   `task.yml`'s `input_schema`; `.env` lines as secrets;
//! - the image build: the project's Dockerfile (or `--dockerfile`), else `nixpacks` when
//!   installed, else a generated Python Dockerfile — run with the `docker` CLI, refused
//!   in words when it is not installed;
//! - the files `init` and `algorithm new` write.
//!
//! No HTTP here: the registration and the secrets upload are the CLI's calls through
//! [`crate::platform_client`].

use crate::platform_client::python_path;
use gateway_world::json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `agent.yml` declares, as the original's `AgentManifest` holds it.
#[derive(Debug, Clone)]
pub struct AgentManifest {
    /// `name` (required; any YAML value, printed with Python's `str`).
    pub name: Value,
    /// `version` (default `"1.0.0"`).
    pub version: Value,
    /// `capabilities` (default none).
    pub capabilities: Vec<String>,
    /// `resources`, as written (default `{}`).
    pub resources: Map,
    /// `description` (default `""`).
    pub description: Value,
    /// `runner`: `max_rollouts`, `poll_interval`, `n_runners`, `container_lifecycle`.
    pub runner: Map,
    /// From `resources`: `memory`, `cpu`, `gpu`, `stop_timeout`.
    pub resource_limits: Map,
    /// `env` (default `{}`).
    pub env: Value,
}

/// A YAML file's document (`None` when the file is absent).
fn read_yaml(path: &Path, name: &str) -> Result<Option<Value>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{name}: {e}")),
    };
    if text.trim().is_empty() {
        return Ok(Some(Value::Null));
    }
    // The original reads it with PyYAML: a boolean key is `True` to it.
    let parsed = gateway_world::json::parse_yaml(&text, gateway_world::json::KeyStyle::Python)
        .map_err(|e| format!("{name} is not valid YAML: {e}"))?;
    Ok(Some(parsed))
}

fn member<'a>(map: &'a Map, key: &str) -> Option<&'a Value> {
    map.get(key)
}

/// A mapping member (absent: empty), or the refusal naming it.
fn mapping(data: &Map, key: &str) -> Result<Map, String> {
    match data.get(key) {
        None => Ok(Map::default()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(other) => Err(format!("agent.yml '{key}' must be a mapping, got {}", other.python_type_name())),
    }
}

/// `parse_manifest`: `<manifest_dir>/agent.yml`. `shown` is the directory as the user
/// named it (for the message when the file is missing).
pub fn parse_manifest(manifest_dir: &Path, shown: &str) -> Result<AgentManifest, String> {
    let Some(data) = read_yaml(&manifest_dir.join("agent.yml"), "agent.yml")? else {
        return Err(format!("agent.yml not found in {}", python_path(shown)));
    };
    let Value::Object(data) = data else {
        return Err(format!("agent.yml must be a YAML mapping, got {}", data.python_type_name()));
    };
    let Some(name) = member(&data, "name").cloned() else {
        return Err("agent.yml must contain a 'name' field".into());
    };
    let runner_raw = mapping(&data, "runner")?;
    let resources = mapping(&data, "resources")?;
    let capabilities = match data.get("capabilities") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|c| c.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("agent.yml 'capabilities' must be a list of strings")?,
        Some(other) => return Err(format!("agent.yml 'capabilities' must be a list of strings, got {}", other.python_type_name())),
    };
    let or = |map: &Map, key: &str, default: Value| map.get(key).cloned().unwrap_or(default);
    let mut runner = Map::default();
    runner.insert("max_rollouts".into(), or(&runner_raw, "max_rollouts", Value::Null));
    runner.insert("poll_interval".into(), or(&runner_raw, "poll_interval", Value::Float(5.0)));
    runner.insert("n_runners".into(), or(&runner_raw, "n_runners", Value::Int(1)));
    runner.insert("container_lifecycle".into(), or(&runner_raw, "container_lifecycle", Value::str("persistent")));
    let mut resource_limits = Map::default();
    resource_limits.insert("memory".into(), or(&resources, "memory", Value::Null));
    resource_limits.insert("cpu".into(), or(&resources, "cpu", Value::Null));
    resource_limits.insert("gpu".into(), or(&resources, "gpu", Value::Bool(false)));
    resource_limits.insert("stop_timeout".into(), or(&resources, "stop_timeout", Value::Int(30)));
    Ok(AgentManifest {
        name,
        version: or(&data, "version", Value::str("1.0.0")),
        capabilities,
        resources,
        description: or(&data, "description", Value::str("")),
        runner,
        resource_limits,
        env: or(&data, "env", Value::Object(Map::default())),
    })
}

/// `parse_task_schema`: `task.yml`'s `input_schema` (`{}` when it has none); `None`
/// without a `task.yml` mapping.
pub fn parse_task_schema(manifest_dir: &Path) -> Result<Option<Value>, String> {
    match read_yaml(&manifest_dir.join("task.yml"), "task.yml")? {
        Some(Value::Object(data)) => Ok(Some(data.get("input_schema").cloned().unwrap_or_else(|| Value::Object(Map::default())))),
        _ => Ok(None),
    }
}

/// `parse_secrets`: `.env` as `KEY=VALUE` lines (`#` comments and blank lines skipped,
/// split on the first `=`, one pair of matching quotes stripped), in file order.
pub fn parse_secrets(manifest_dir: &Path) -> Result<Vec<(String, String)>, String> {
    let path = manifest_dir.join(".env");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut secrets: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let (key, mut value) = (key.trim(), value.trim());
        let quoted =
            value.len() >= 2 && (value.starts_with('"') && value.ends_with('"') || value.starts_with('\'') && value.ends_with('\''));
        if quoted {
            value = &value[1..value.len() - 1];
        }
        if key.is_empty() {
            continue;
        }
        match secrets.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.to_string(),
            None => secrets.push((key.to_string(), value.to_string())),
        }
    }
    Ok(secrets)
}

impl AgentManifest {
    /// The registration body `deploy` sends.
    pub fn payload(&self, image: &str, image_digest: Option<&str>, task_schema: Option<&Value>) -> Value {
        let capabilities = Value::Array(self.capabilities.iter().cloned().map(Value::Str).collect());
        let mut manifest = Map::default();
        manifest.insert("version".into(), self.version.clone());
        manifest.insert("capabilities".into(), capabilities.clone());
        manifest.insert("resources".into(), Value::Object(self.resources.clone()));
        manifest.insert("description".into(), self.description.clone());
        manifest.insert("runner".into(), Value::Object(self.runner.clone()));
        manifest.insert("resource_limits".into(), Value::Object(self.resource_limits.clone()));
        manifest.insert("env".into(), self.env.clone());
        let mut resources = self.resources.clone();
        resources.insert("runner".into(), Value::Object(self.runner.clone()));
        resources.insert("resource_limits".into(), Value::Object(self.resource_limits.clone()));
        let mut payload = Map::default();
        payload.insert("name".into(), self.name.clone());
        payload.insert("image".into(), Value::str(image));
        payload.insert("manifest".into(), Value::Object(manifest));
        payload.insert("capabilities".into(), capabilities);
        payload.insert("resources".into(), Value::Object(resources));
        payload.insert("description".into(), self.description.clone());
        if let Some(digest) = image_digest {
            payload.insert("imageDigest".into(), Value::str(digest));
        }
        if let Some(schema) = task_schema {
            payload.insert("taskInputSchema".into(), schema.clone());
        }
        Value::Object(payload)
    }
}

// ------------------------------------------------------------------ building

/// How an image is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildStrategy {
    /// `docker build` with the project's Dockerfile (or `--dockerfile`).
    Dockerfile,
    /// `nixpacks build`.
    Nixpacks,
    /// `docker build` with a generated Python Dockerfile.
    Template,
}

impl BuildStrategy {
    /// The original's name for it.
    pub fn value(self) -> &'static str {
        match self {
            BuildStrategy::Dockerfile => "dockerfile",
            BuildStrategy::Nixpacks => "nixpacks",
            BuildStrategy::Template => "template",
        }
    }
}

/// The Dockerfile the template strategy builds with.
const FALLBACK_DOCKERFILE: &str = "FROM python:3.12-slim\nWORKDIR /app\nCOPY requirements.txt* ./\n\
RUN pip install --no-cache-dir -r requirements.txt 2>/dev/null || true\nCOPY . .\nCMD [\"python\", \"-m\", \"agent\"]\n";

/// An executable named `program` on `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            candidate.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            candidate.is_file()
        }
    })
}

/// `detect_build_strategy`.
pub fn detect_build_strategy(project_dir: &Path, dockerfile: Option<&str>) -> Result<BuildStrategy, String> {
    if let Some(dockerfile) = dockerfile {
        let path = project_dir.join(dockerfile);
        return if path.exists() {
            Ok(BuildStrategy::Dockerfile)
        } else {
            Err(format!("Specified Dockerfile not found: {}", python_path(&path.to_string_lossy())))
        };
    }
    if project_dir.join("Dockerfile").exists() {
        return Ok(BuildStrategy::Dockerfile);
    }
    if which("nixpacks").is_some() {
        return Ok(BuildStrategy::Nixpacks);
    }
    Ok(BuildStrategy::Template)
}

/// Run a build command, its output captured; its stderr is the failure's text.
fn run_build(program: &str, args: &[String], what: &str) -> Result<(), String> {
    if which(program).is_none() {
        return Err(missing(program));
    }
    let out = Command::new(program).args(args).output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => missing(program),
        _ => format!("{program}: {e}"),
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed:\n{}", String::from_utf8_lossy(&out.stderr)))
    }
}

fn missing(program: &str) -> String {
    if program == "docker" {
        "the docker CLI is not installed (no `docker` on PATH): install Docker to build the image, \
         or register an image built elsewhere with `gateway deploy IMAGE --skip-build`"
            .into()
    } else {
        format!("`{program}` is not installed (not on PATH)")
    }
}

/// `build_image`: build `tag` from `project_dir`; the tag built.
pub fn build_image(project_dir: &Path, tag: &str, dockerfile: Option<&str>) -> Result<String, String> {
    let project = project_dir.to_string_lossy().into_owned();
    match detect_build_strategy(project_dir, dockerfile)? {
        BuildStrategy::Dockerfile => {
            let mut args = vec!["build".to_string(), "-t".into(), tag.into()];
            if let Some(dockerfile) = dockerfile {
                args.push("-f".into());
                args.push(project_dir.join(dockerfile).to_string_lossy().into_owned());
            }
            args.push(project);
            run_build("docker", &args, "docker build")?;
        }
        BuildStrategy::Nixpacks => {
            run_build("nixpacks", &["build".into(), project, "--name".into(), tag.into()], "nixpacks build")?;
        }
        BuildStrategy::Template => {
            if which("docker").is_none() {
                return Err(missing("docker"));
            }
            let generated = project_dir.join(".gateway-Dockerfile.tmp");
            std::fs::write(&generated, FALLBACK_DOCKERFILE).map_err(|e| format!("{}: {e}", generated.display()))?;
            let args = vec!["build".into(), "-t".into(), tag.into(), "-f".into(), generated.to_string_lossy().into_owned(), project];
            let built = run_build("docker", &args, "docker build (template)");
            let _ = std::fs::remove_file(&generated);
            built?;
        }
    }
    Ok(tag.to_string())
}

/// `get_image_digest`: `docker inspect --format {{.Id}} TAG`, when it answers.
pub fn image_digest(tag: &str) -> Option<String> {
    let out = Command::new("docker").args(["inspect", "--format", "{{.Id}}", tag]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

// ------------------------------------------------------------------ scaffolds

/// `init`'s Dockerfile for the agent `agent_ref` (`module:attribute`).
pub fn init_dockerfile(agent_ref: &str) -> String {
    format!(
        "# Auto-generated by `gateway init`\nFROM python:3.12-slim\n\n\
RUN apt-get update && apt-get install -y --no-install-recommends \\\n    build-essential \\\n    && rm -rf /var/lib/apt/lists/*\n\n\
WORKDIR /app\n\n# Install Python dependencies\nCOPY requirements.txt .\nRUN pip install --no-cache-dir -r requirements.txt\n\n\
# Install gatewaysdk with agent extras (includes gateway-agent CLI)\nRUN pip install --no-cache-dir \"gatewaysdk[agent]\"\n\n\
# Copy agent code\nCOPY . /app/agent/\n\nENV PYTHONPATH=\"/app:/app/agent\"\n\n\
# gateway-agent handles: store client, tracer, runner init, rollout polling\nCMD [\"gateway-agent\", \"--agent\", \"{agent_ref}\"]\n"
    )
}

/// `init`'s `gateway_manifest/agent.yml`.
pub fn init_agent_yml(name: &str, description: &str) -> String {
    format!(
        "# Agent manifest for Gateway Platform\n# Generated by `gateway init`\n\nname: {name}\nversion: \"1.0.0\"\ndescription: >\n  {description}\n\n\
capabilities:\n  - prompt-optimization\n  - tool-use\n\nrunner:\n  n_runners: 1\n  poll_interval: 5.0\n\n\
resources:\n  memory: \"4g\"\n  cpu: 1.0\n  gpu: false\n\nenv: {{}}\n"
    )
}

/// `init`'s sample `gateway_manifest/.env`.
pub const INIT_ENV: &str = "# API keys for the agent container\n\
# These are uploaded to the platform as encrypted secrets during `gateway deploy`\n\
# ANTHROPIC_API_KEY=sk-ant-...\n# OPENAI_API_KEY=sk-...\n";

/// The `.gitignore` entry `init` makes sure of.
pub const GITIGNORE_ENTRY: &str = "gateway_manifest/.env";

/// Python's `str.title()`: a cased letter after an uncased character is upper-cased,
/// after a cased one lower-cased.
pub fn python_title(text: &str) -> String {
    let mut out = String::new();
    let mut previous_cased = false;
    for c in text.chars() {
        let cased = c.is_lowercase() || c.is_uppercase();
        if cased {
            if previous_cased {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
        } else {
            out.push(c);
        }
        previous_cased = cased;
    }
    out
}

/// Whether `name` can name the algorithm's class and module (a Python identifier).
pub fn is_python_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic()) && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// `algorithm new`'s module for the algorithm `name`.
pub fn algorithm_module(name: &str) -> String {
    let title = python_title(name);
    let class = title.replace('_', "");
    let display = title.replace('_', " ");
    format!(
        "\"\"\"Custom algorithm: {name}.\"\"\"\n\nfrom __future__ import annotations\n\nfrom typing import Any, ClassVar, Dict, Optional\n\n\
from gatewaysdk.algorithm.base import Algorithm\nfrom gatewaysdk.types import Dataset\n\n\n\
class {class}(Algorithm):\n    \"\"\"TODO: Describe your algorithm.\"\"\"\n\n\
    name: ClassVar[str] = \"{name}\"\n    display_name: ClassVar[str] = \"{display}\"\n\
    description: ClassVar[str] = \"TODO: Add description\"\n\
    requirements: ClassVar[Dict[str, Any]] = {{\"gpu\": False, \"min_runners\": 1}}\n\n\
    def run(\n        self,\n        train_dataset: Optional[Dataset[Any]] = None,\n        val_dataset: Optional[Dataset[Any]] = None,\n    ) -> None:\n\
        trainer = self.get_trainer()\n        store = self.get_store()\n\n\
        # TODO: Implement your algorithm logic here\n        raise NotImplementedError(\"Implement run() for {name}\")\n"
    )
}

/// The rows `algorithm list` prints: `(name, display name, gpu, description)` of the
/// direct subclasses of the original's `Algorithm` once `gatewaysdk.algorithm` is
/// imported — `FunctionalAlgorithm` and `FastAlgorithm` (base classes without a name)
/// and `GEPA`; APO, VERL and Evals load only when used, so the original lists them not.
pub const ALGORITHM_ROWS: [(&str, &str, bool, &str); 3] =
    [("", "", false, ""), ("", "", false, ""), ("gepa", "GEPA", false, "Genetic-Pareto Prompt Adaptation")];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_and_identifiers() {
        assert_eq!(python_title("my_algo"), "My_Algo");
        assert_eq!(python_title("algo2x"), "Algo2X");
        assert!(is_python_identifier("my_algo"));
        assert!(!is_python_identifier("my-algo"));
        assert!(!is_python_identifier("2fast"));
    }

    #[test]
    fn manifests_and_their_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path();
        assert_eq!(parse_manifest(manifest, "./m/").unwrap_err(), "agent.yml not found in m");
        std::fs::write(manifest.join("agent.yml"), init_agent_yml("crm-agent", "Gateway agent: crm-agent")).unwrap();
        let parsed = parse_manifest(manifest, "m").unwrap();
        assert_eq!(parsed.capabilities, ["prompt-optimization", "tool-use"]);
        let payload = gateway_world::json::canonical(&parsed.payload("img:1", None, None));
        assert_eq!(
            payload,
            r#"{"capabilities":["prompt-optimization","tool-use"],"description":"Gateway agent: crm-agent\n","image":"img:1","manifest":{"capabilities":["prompt-optimization","tool-use"],"description":"Gateway agent: crm-agent\n","env":{},"resource_limits":{"cpu":1.0,"gpu":false,"memory":"4g","stop_timeout":30},"resources":{"cpu":1.0,"gpu":false,"memory":"4g"},"runner":{"container_lifecycle":"persistent","max_rollouts":null,"n_runners":1,"poll_interval":5.0},"version":"1.0.0"},"name":"crm-agent","resources":{"cpu":1.0,"gpu":false,"memory":"4g","resource_limits":{"cpu":1.0,"gpu":false,"memory":"4g","stop_timeout":30},"runner":{"container_lifecycle":"persistent","max_rollouts":null,"n_runners":1,"poll_interval":5.0}}}"#
        );
        for (text, refusal) in [
            ("- a\n", "agent.yml must be a YAML mapping, got list"),
            ("", "agent.yml must be a YAML mapping, got NoneType"),
            ("version: 1\n", "agent.yml must contain a 'name' field"),
            ("name: x\nrunner: 3\n", "agent.yml 'runner' must be a mapping, got int"),
            ("name: x\ncapabilities: [1]\n", "agent.yml 'capabilities' must be a list of strings"),
        ] {
            std::fs::write(manifest.join("agent.yml"), text).unwrap();
            assert_eq!(parse_manifest(manifest, "m").unwrap_err(), refusal, "{text:?}");
        }
        std::fs::write(manifest.join("agent.yml"), "name: [unclosed\n").unwrap();
        assert!(parse_manifest(manifest, "m").unwrap_err().starts_with("agent.yml is not valid YAML"));
    }

    #[test]
    fn env_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "# c\n\nA=1\nB = \"two = 2\"\nnoequals\nA='x'\n=v\nC=\"\n").unwrap();
        assert_eq!(
            parse_secrets(dir.path()).unwrap(),
            [("A".to_string(), "x".to_string()), ("B".into(), "two = 2".into()), ("C".into(), "\"".into())]
        );
    }
}

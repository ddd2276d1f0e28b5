//! `worlds connector capture --remote`: the original's `_remote_capture` flow. The
//! platform runs the operation (from its egress, with the environment's secret); this
//! side starts it (`POST …/environments/{cid}/connector-captures`), polls its stage
//! until `complete`, `failed`/`cancelled` or the timeout, then fetches each landed page
//! through the drive (`GET …/files/download?path=` → presigned URL) into the world's
//! `captures/`, and merges the manifest entries it lacks into `captures/manifest.json`
//! (`json.dumps(indent=1, sort_keys=True)` + newline). Printing is the CLI's.

use crate::environments_client::{environment_path, EnvironmentsClient};
use crate::ClientError;
use gateway_common::url::quote;
use gateway_connector::capture::{CAPTURES, MANIFEST};
use gateway_world::json::{self, DumpOptions, Map, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, ClientError>;

/// How often the stage is read at most (the original sleeps 5 s between reads; the
/// first reads come sooner here, so a quick capture is not waited on for 5 s).
const POLL_CAP: Duration = Duration::from_secs(5);

/// What one remote capture asks for.
#[derive(Debug, Clone, Default)]
pub struct RemoteCapture {
    /// `--op`.
    pub op: String,
    /// `--arg name=value`, in order.
    pub args: Vec<(String, String)>,
    /// `--param name=value`, in order.
    pub params: Vec<(String, String)>,
    /// `--max-pages`.
    pub max_pages: Option<i64>,
    /// `--environment` (default: the world's directory name).
    pub environment: Option<String>,
    /// `--timeout`, seconds.
    pub timeout: u64,
}

/// How a remote capture ended.
#[derive(Debug)]
pub enum CaptureOutcome {
    /// The pages written under the world, in the order the platform listed them.
    Written(Vec<PathBuf>),
    /// Refused or stopped: the line the original prints on stderr (exit 1).
    Refused(String),
}

fn fail(message: impl Into<String>) -> ClientError {
    ClientError::Failed(message.into())
}

fn object_of(pairs: &[(String, String)]) -> Value {
    Value::Object(pairs.iter().map(|(k, v)| (k.clone(), Value::str(v))).collect())
}

impl EnvironmentsClient {
    /// `start_connector_capture`: the request id.
    pub fn start_connector_capture(&self, container_id: &str, connector_toml: &str, request: &RemoteCapture) -> Result<String> {
        let mut body = Map::default();
        body.insert("connectorToml".into(), Value::str(connector_toml));
        body.insert("op".into(), Value::str(&request.op));
        if !request.args.is_empty() {
            body.insert("args".into(), object_of(&request.args));
        }
        if !request.params.is_empty() {
            body.insert("params".into(), object_of(&request.params));
        }
        if let Some(pages) = request.max_pages {
            body.insert("maxPages".into(), Value::Int(pages));
        }
        let path = format!("/api/public/environments/{container_id}/connector-captures");
        let answer = self.request(reqwest::Method::POST, &path, Some(&Value::Object(body)))?;
        match answer.get("requestId") {
            Some(Value::Str(id)) => Ok(id.clone()),
            Some(other) => Ok(gateway_world::json::python_str(other)),
            None => Err(ClientError::BadAnswer(format!("POST {path} answered no requestId"))),
        }
    }

    /// `get_connector_capture`: the capture's view as it came.
    pub fn get_connector_capture(&self, container_id: &str, request_id: &str) -> Result<Value> {
        self.request(reqwest::Method::GET, &format!("/api/public/environments/{container_id}/connector-captures/{request_id}"), None)
    }

    /// `read_file`: a drive file's bytes, through its presigned URL.
    pub fn read_file(&self, container_id: &str, path: &str) -> Result<Vec<u8>> {
        let query = format!("path={}", quote(path, ""));
        let info = self.request(reqwest::Method::GET, &environment_path(container_id, &format!("/files/download?{query}")), None)?;
        for field in ["path", "url", "urlExpiry"] {
            if !matches!(info.get(field), Some(Value::Str(_))) {
                return Err(ClientError::BadAnswer(format!("1 validation error for DownloadInfo: {field} Field required")));
            }
        }
        let url = info.get("url").and_then(Value::as_str).unwrap_or_default();
        let response = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .and_then(|http| http.get(url).send())
            .map_err(|e| ClientError::Unreachable(format!("drive download of {path}: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(ClientError::Refused(format!("HTTP Error {}: drive download of {path}", status.as_u16())));
        }
        Ok(response.bytes().map_err(|e| ClientError::Unreachable(format!("drive download of {path}: {e}")))?.to_vec())
    }

    /// The whole `--remote` flow on `world`; `note` gets the stderr line naming the
    /// request.
    pub fn remote_capture(&self, world: &Path, request: &RemoteCapture, note: &mut dyn FnMut(&str)) -> Result<CaptureOutcome> {
        let spec_path = world.join("connector.toml");
        let spec_text = std::fs::read_to_string(&spec_path).map_err(|e| ClientError::io(&spec_path, e))?;
        let reference = match request.environment.clone().filter(|e| !e.is_empty()) {
            Some(reference) => reference,
            None => {
                let resolved = std::fs::canonicalize(world).map_err(|e| ClientError::io(world, e))?;
                resolved.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            }
        };
        let container_id = self.resolve_environment_id(&reference)?;
        let request_id = self.start_connector_capture(&container_id, &spec_text, request)?;
        note(&format!("# remote capture {request_id} on {container_id}"));
        let deadline = Instant::now() + Duration::from_secs(request.timeout);
        let mut pause = Duration::from_millis(250);
        let view = loop {
            let view = self.get_connector_capture(&container_id, &request_id)?;
            let stage = view.get("stage").map(json::python_str).unwrap_or_else(|| "None".into());
            if stage == "complete" {
                break view;
            }
            if stage == "failed" || stage == "cancelled" {
                let error = view.get("error").filter(|e| crate::client::truthy(e)).map(json::python_str);
                return Ok(CaptureOutcome::Refused(format!("Remote capture {stage}: {}", error.unwrap_or_else(|| "no detail".into()))));
            }
            if Instant::now() >= deadline {
                return Ok(CaptureOutcome::Refused(format!(
                    "Remote capture still {stage} after {}s; poll it with the request id {request_id}",
                    request.timeout
                )));
            }
            std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())).max(Duration::from_millis(10)));
            pause = (pause * 2).min(POLL_CAP);
        };
        let slug = view.get("worldSlug").map(json::python_str).ok_or_else(|| fail("the capture's view has no worldSlug"))?;
        let prefix = format!("worlds/{slug}/");
        let mut written = Vec::new();
        for file in view.get("files").and_then(Value::as_array).into_iter().flatten() {
            let drive_path = file.get("path").map(json::python_str).ok_or_else(|| fail("a landed file has no path"))?;
            let relative = drive_path.strip_prefix(&prefix).unwrap_or(&drive_path).to_string();
            if !relative.starts_with(&format!("{CAPTURES}/")) || relative.contains("..") {
                return Ok(CaptureOutcome::Refused(format!("Refusing a capture outside captures/: {drive_path}")));
            }
            let destination = world.join(&relative);
            if let Some(parent) = destination.parent() {
                std::fs::create_dir_all(parent).map_err(|e| ClientError::io(parent, e))?;
            }
            let bytes = self.read_file(&container_id, &drive_path)?;
            std::fs::write(&destination, bytes).map_err(|e| ClientError::io(&destination, e))?;
            written.push(destination);
        }
        merge_manifest(world, view.get("manifest"))?;
        Ok(CaptureOutcome::Written(written))
    }
}

/// Add the entries whose `file` the world's manifest lacks, and write it sorted.
fn merge_manifest(world: &Path, incoming: Option<&Value>) -> Result<()> {
    let path = world.join(CAPTURES).join(MANIFEST);
    let mut existing = match std::fs::read_to_string(&path) {
        Ok(text) => match json::parse_loads(&text).map(|p| p.value) {
            Ok(Value::Array(items)) => items,
            Ok(_) => return Err(fail(format!("{} is not a JSON list", path.display()))),
            Err(e) => return Err(fail(format!("{}: {e:?}", path.display()))),
        },
        Err(_) => Vec::new(),
    };
    // Entries compared by their `file` member's canonical text (Python's set of values).
    let file_of = |entry: &Value| entry.as_object().map(|e| json::canonical(e.get("file").unwrap_or(&Value::Null)));
    let mut known: Vec<String> = existing.iter().filter_map(file_of).collect();
    for entry in incoming.and_then(Value::as_array).into_iter().flatten() {
        if let Some(file) = file_of(entry) {
            if !known.contains(&file) {
                existing.push(entry.clone());
                known.push(file);
            }
        }
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ClientError::io(parent, e))?;
    }
    let options = DumpOptions { sort_keys: true, ensure_ascii: true, indent: Some(1), compact: false };
    std::fs::write(&path, format!("{}\n", json::dumps(&Value::Array(existing), options))).map_err(|e| ClientError::io(&path, e))
}

//! Remote connector captures (spec §7 `connector-captures`) and the drive download
//! they land in (`GET …/environments/{cid}/files/download`).
//!
//! `POST …/environments/{cid}/connector-captures {connectorToml, op, args?, params?,
//! maxPages?}` checks the connection and the operation, records the capture as a
//! document of the project (`stage: running`) and answers its `requestId` at once; the
//! capture itself runs on the blocking pool through gateway-connector's `capture_with`,
//! from this hub's network, with the credentials read from the environment's sealed
//! secrets under the variable names connector.toml gives (`bench secrets set --key
//! <SECRET_ENV>`), never from the hub's own environment. The calls are held to the
//! operator's allow-list (`hub serve --capture-allow`,
//! [`crate::server::Limits::capture_egress`]): a host it does not name — or no
//! allow-list at all — is refused here, before the capture starts; an address that is
//! not public, a redirect to another host, a page URL on another host or a method other
//! than GET (POST for the token exchange) ends the capture as `failed`. The redacted
//! pages go to the object store under `drive/<container>/worlds/<slug>/captures/…`; the
//! document then says `complete` with the drive `files` and the `manifest` entries, or
//! `failed` with the refusal. `GET …/connector-captures/{requestId}` reads the document. A capture
//! whose hub process died while it ran stays `running`: the client's `--timeout` ends
//! its wait.

use super::documents::document_text;
use super::objects::presign;
use super::request::req_str;
use super::response::{ok, Answer};
use super::state::Hub;
use crate::error::HubError;
use crate::store::{check_object_key, Container, ObjectStore};
use crate::util::{new_id, now_iso, now_secs};
use base64::Engine as _;
use gateway_connector::capture::{capture_with, origins, CaptureRequest, CAPTURES, MANIFEST};
use gateway_connector::egress::Egress;
use gateway_connector::spec::{parse_spec, Spec};
use gateway_world::json::{self, object, Map, Value};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The document kind of remote captures.
const CAPTURE: &str = "connector-capture";
/// The most pages one remote capture may ask for.
const MAX_PAGES: i64 = 1000;
/// The largest connector.toml accepted.
const MAX_SPEC_BYTES: usize = 256 * 1024;

fn pairs(body: &Map, key: &str) -> Result<Vec<(String, String)>, HubError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::Str(s) => Ok((k.clone(), s.clone())),
                _ => Err(HubError::BadRequest(format!("'{key}.{k}' must be a string"))),
            })
            .collect(),
        Some(_) => Err(HubError::BadRequest(format!("'{key}' must be an object of strings"))),
    }
}

/// The drive prefix of an environment's captures.
fn world_prefix(container: &Container) -> String {
    format!("worlds/{}/", container.slug)
}

fn drive_key(container: &Container, path: &str) -> String {
    format!("drive/{}/{path}", container.id)
}

/// The variable names connector.toml reads its credentials from.
fn secret_names(spec: &Spec) -> Vec<String> {
    let mut names: Vec<String> = spec.secret_env.iter().chain(&spec.client_id_env).cloned().collect();
    names.extend(spec.extra_headers.values().cloned());
    names.sort();
    names.dedup();
    names
}

pub(super) async fn start(hub: &Hub, project: &str, container: &Container, body: &Map) -> Answer {
    let text = req_str(body, "connectorToml")?;
    if text.len() > MAX_SPEC_BYTES {
        return Err(HubError::TooLarge(format!("connectorToml is over {MAX_SPEC_BYTES} bytes")));
    }
    let op = req_str(body, "op")?;
    let spec = parse_spec(&text).map_err(|e| HubError::BadRequest(format!("connectorToml: {e}")))?;
    if spec.operation(&op).is_none() {
        let mut names: Vec<&str> = spec.operations.iter().map(|o| o.name.as_str()).collect();
        names.sort_unstable();
        return Err(HubError::BadRequest(format!("unknown operation '{op}': choose one of {}", names.join(", "))));
    }
    let egress = hub.limits.capture_egress.clone();
    egress.check_hosts(&origins(&spec)).map_err(|e| HubError::BadRequest(e.to_string()))?;
    let max_pages = match body.get("maxPages") {
        None | Some(Value::Null) => None,
        Some(Value::Int(n)) if (1..=MAX_PAGES).contains(n) => Some(*n),
        Some(_) => return Err(HubError::BadRequest(format!("'maxPages' must be an integer from 1 to {MAX_PAGES}"))),
    };
    let request = CaptureRequest { op: op.clone(), args: pairs(body, "args")?, params: pairs(body, "params")?, max_pages };
    let mut secrets = BTreeMap::new();
    for name in secret_names(&spec) {
        if let Some(sealed) = hub.meta.secret_value(&container.id, &name).await? {
            let value = hub.keys.open(&format!("{}/{name}", container.id), &sealed)?;
            secrets.insert(name, String::from_utf8_lossy(&value).into_owned());
        }
    }
    let id = new_id("cap_");
    let mut document = Map::default();
    document.insert("requestId".into(), Value::str(id.clone()));
    document.insert("containerId".into(), Value::str(container.id.clone()));
    document.insert("worldSlug".into(), Value::str(container.slug.clone()));
    document.insert("op".into(), Value::str(op));
    document.insert("stage".into(), Value::str("running"));
    document.insert("error".into(), Value::Null);
    document.insert("files".into(), Value::Array(Vec::new()));
    document.insert("manifest".into(), Value::Array(Vec::new()));
    document.insert("createdAt".into(), Value::str(now_iso()));
    hub.meta.put_document(project, CAPTURE, &id, &document_text(&Value::Object(document.clone()))).await?;

    let (meta, objects, project, container) = (hub.meta.clone(), hub.objects.clone(), project.to_string(), container.clone());
    tokio::spawn(async move {
        let finished = match run(objects, &container, text, request, secrets, egress).await {
            Ok((files, manifest)) => {
                document.insert("stage".into(), Value::str("complete"));
                document.insert("files".into(), Value::Array(files));
                document.insert("manifest".into(), Value::Array(manifest));
                document
            }
            Err(error) => {
                document.insert("stage".into(), Value::str("failed"));
                document.insert("error".into(), Value::str(error));
                document
            }
        };
        let mut finished = finished;
        finished.insert("completedAt".into(), Value::str(now_iso()));
        let id = finished.get("requestId").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Err(error) = meta.put_document(&project, CAPTURE, &id, &document_text(&Value::Object(finished))).await {
            eprintln!("gateway hub: capture {id}: could not record its outcome: {error}");
        }
    });
    ok(object([("requestId", Value::str(id)), ("stage", Value::str("running"))]))
}

/// Run the capture in a scratch world, then store its pages in the drive: the drive
/// files and the manifest entries, or the refusal's words.
async fn run(
    objects: Arc<dyn ObjectStore>,
    container: &Container,
    text: String,
    request: CaptureRequest,
    secrets: BTreeMap<String, String>,
    egress: Egress,
) -> Result<(Vec<Value>, Vec<Value>), String> {
    let captured = tokio::task::spawn_blocking(move || -> Result<Vec<(String, Vec<u8>, Value)>, String> {
        let scratch = tempfile::Builder::new().prefix("gateway-capture-").tempdir().map_err(|e| e.to_string())?;
        std::fs::write(scratch.path().join("connector.toml"), text).map_err(|e| e.to_string())?;
        let lookup = |name: &str| secrets.get(name).filter(|v| !v.is_empty()).cloned();
        let written = capture_with(scratch.path(), &request, &lookup, &egress, &mut |_| {}).map_err(|error| {
            if error.code == "secret" {
                format!("{}: store it as the environment's secret (`gateway bench secrets set --env <slug> --key <NAME>`)", error.message)
            } else {
                error.to_string()
            }
        })?;
        let manifest_text = std::fs::read_to_string(scratch.path().join(CAPTURES).join(MANIFEST)).unwrap_or_default();
        let manifest = match json::parse_clean(&manifest_text) {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        let mut out = Vec::new();
        for path in written {
            let relative = path.strip_prefix(scratch.path()).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
            let entry = manifest.iter().find(|e| e.get("file").and_then(Value::as_str) == Some(relative.as_str())).cloned();
            out.push((relative, bytes, entry.unwrap_or(Value::Null)));
        }
        Ok(out)
    })
    .await
    .map_err(|e| format!("the capture stopped: {e}"))??;
    let (mut files, mut manifest) = (Vec::new(), Vec::new());
    for (relative, bytes, entry) in captured {
        let path = format!("{}{relative}", world_prefix(container));
        let key = drive_key(container, &path);
        check_object_key(&key).map_err(|e| e.to_string())?;
        let sha256 = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&bytes));
        let size = bytes.len() as i64;
        let mut writer = objects.writer(&key).await.map_err(|e| e.to_string())?;
        writer.write(bytes.into()).await.map_err(|e| e.to_string())?;
        writer.commit().await.map_err(|e| e.to_string())?;
        files.push(object([("path", Value::str(path)), ("sizeBytes", Value::Int(size)), ("sha256", Value::str(sha256))]));
        if !matches!(entry, Value::Null) {
            manifest.push(entry);
        }
    }
    Ok((files, manifest))
}

pub(super) async fn status(hub: &Hub, project: &str, container: &Container, id: &str) -> Answer {
    let missing = || HubError::NotFound(format!("no connector capture '{id}' on '{}'", container.slug));
    let text = hub.meta.document(project, CAPTURE, id).await?.ok_or_else(missing)?;
    match json::parse_clean(&text) {
        Some(value @ Value::Object(_)) if value.get("containerId").and_then(Value::as_str) == Some(container.id.as_str()) => ok(value),
        Some(Value::Object(_)) => Err(missing()),
        _ => Err(HubError::Corrupt(format!("connector capture {id}"))),
    }
}

/// `GET …/files/download?path=`: a presigned GET of one drive file.
pub(super) async fn download(hub: &Hub, container: &Container, path: Option<&String>, base_url: &str) -> Answer {
    let path = path.filter(|p| !p.is_empty()).ok_or_else(|| HubError::BadRequest("'path' is required".into()))?;
    let key = drive_key(container, path);
    if path.split('/').any(|part| part.is_empty() || part == "." || part == "..") || check_object_key(&key).is_err() {
        return Err(HubError::BadRequest(format!("invalid drive path '{path}'")));
    }
    let size = hub.objects.size(&key).await?.ok_or_else(|| HubError::NotFound(format!("no file '{path}' in this environment's drive")))?;
    let expiry = crate::util::iso((now_secs() + hub.limits.url_ttl_secs) as i64, 0);
    let kind = if path.ends_with(".json") { "application/json" } else { "application/octet-stream" };
    ok(object([
        ("path", Value::str(path.clone())),
        ("url", Value::str(presign(hub, base_url, "GET", &key, &[]))),
        ("urlExpiry", Value::str(expiry)),
        ("sizeBytes", Value::Int(size as i64)),
        ("contentType", Value::str(kind)),
    ]))
}

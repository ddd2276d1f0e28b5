//! Object routes: presigned URLs, and bundle bodies streamed to and from the
//! object store (hashed on the way in, committed only when the checksum matches).

use super::response::json_response;
use super::state::Hub;
use crate::error::HubError;
use crate::store::{check_object_key, ObjectWriter};
use crate::util::now_secs;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::response::Response;
use base64::Engine as _;
use gateway_common::url::{quote_segment, unquote_plus};
use gateway_world::json::{object, Value};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use subtle::ConstantTimeEq as _;

pub(super) fn presign(hub: &Hub, base_url: &str, method: &str, key: &str, extra: &[(&str, &str)]) -> String {
    let expires = (now_secs() + hub.limits.url_ttl_secs).to_string();
    let mut params: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    params.push(("expires".into(), expires));
    params.sort();
    let canonical: String = params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
    let signature = hub.keys.sign(&format!("{method}\n{key}\n{canonical}"));
    let query: String = params.iter().map(|(k, v)| format!("{k}={}", quote_segment(v))).collect::<Vec<_>>().join("&");
    let path: String = key.split('/').map(quote_segment).collect::<Vec<_>>().join("/");
    format!("{base_url}/objects/{path}?{query}&signature={signature}")
}

pub(super) fn verify_signature(hub: &Hub, method: &str, key: &str, query: &BTreeMap<String, String>) -> Result<(), HubError> {
    let denied = |why: &str| HubError::Unauthorized(format!("object URL refused: {why}; ask the hub for a fresh URL"));
    let signature = query.get("signature").ok_or_else(|| denied("no signature"))?;
    let canonical: String = query.iter().filter(|(k, _)| *k != "signature").map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
    let expected = hub.keys.sign(&format!("{method}\n{key}\n{canonical}"));
    if !bool::from(expected.as_bytes().ct_eq(signature.as_bytes())) {
        return Err(denied("bad signature"));
    }
    let expires: u64 = query.get("expires").and_then(|e| e.parse().ok()).ok_or_else(|| denied("no expiry"))?;
    if expires < now_secs() {
        return Err(denied("expired"));
    }
    Ok(())
}

pub(super) async fn object_route(
    hub: &Hub,
    method: &Method,
    path: &str,
    query: &BTreeMap<String, String>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, HubError> {
    let key: String = path.trim_start_matches("/objects/").split('/').map(unquote_plus).collect::<Vec<_>>().join("/");
    check_object_key(&key)?;
    match method.as_str() {
        "PUT" => {
            verify_signature(hub, "PUT", &key, query)?;
            // A world data chunk's URL names its batch, chunk and registered size; an
            // evaluation state's says it is one (`state`) and its registered size.
            let chunk = query.get("chunk").cloned();
            let state = query.contains_key("state");
            let limit = match (&chunk, state) {
                (Some(_), _) | (None, true) => query.get("size").and_then(|s| s.parse::<usize>().ok()).unwrap_or(0),
                (None, false) => hub.limits.max_object_bytes,
            };
            let announced = headers.get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
            if let (Some(_), Some(length)) = (&chunk, announced) {
                if length > limit as u64 {
                    return Err(HubError::TooLarge(format!(
                        "chunk body of {length} bytes is over the {limit} bytes it was registered with: register the chunk as it is"
                    )));
                }
            }
            let mut writer = hub.objects.writer(&key).await?;
            let actual = match receive(body, writer.as_mut(), limit).await {
                Ok(actual) => actual,
                Err(error) => {
                    writer.abort().await?;
                    return Err(error);
                }
            };
            let expected = query.get("checksum").cloned().unwrap_or_default();
            let header = headers.get("x-amz-checksum-sha256").map(|h| h.to_str().unwrap_or_default().to_string());
            let hex_of = |b64: &str| base64::engine::general_purpose::STANDARD.decode(b64).map(hex::encode).unwrap_or_default();
            let refusal = match header {
                Some(header) if header != actual => Some(HubError::BadDigest(format!(
                    "x-amz-checksum-sha256 {header} does not match the body's sha256 {actual}: the upload was corrupted or the header is wrong"
                ))),
                _ if actual != expected && chunk.is_some() => Some(HubError::BadDigest(format!(
                    "chunk body sha256 {} is not the digest it was registered with ({}): the chunk changed or the upload was corrupted; register and upload it again",
                    hex_of(&actual),
                    hex_of(&expected)
                ))),
                _ if actual != expected && state => Some(HubError::BadDigest(format!(
                    "state body sha256 {} is not the sha256 it was registered with ({}): register the file as it is",
                    hex_of(&actual),
                    hex_of(&expected)
                ))),
                _ if actual != expected => Some(HubError::BadDigest(format!(
                    "body sha256 {actual} is not the announced bundleSha256 {expected}: rebuild the bundle and push again"
                ))),
                _ => None,
            };
            if let Some(refusal) = refusal {
                writer.abort().await?;
                return Err(refusal);
            }
            writer.commit().await?;
            match &chunk {
                Some(chunk_id) => {
                    let batch_id = query.get("batch").cloned().unwrap_or_default();
                    hub.meta.mark_data_chunk_uploaded(&batch_id, chunk_id).await?;
                }
                // A state's sample already points at it (its link was stored on registration).
                None if state => {}
                None => {
                    let version_id = query.get("version").cloned().unwrap_or_default();
                    let wheel = query.get("artifact").map(String::as_str) == Some("wheel");
                    hub.meta.mark_uploaded(&version_id, wheel).await?;
                }
            }
            Ok(json_response(200, &object([("uploaded", Value::Bool(true)), ("key", Value::str(key)), ("sha256", Value::str(actual))])))
        }
        "GET" => {
            verify_signature(hub, "GET", &key, query)?;
            let stream = hub.objects.open(&key).await?.ok_or_else(|| HubError::NotFound(format!("object {key} not found")))?;
            let mut response = Response::new(Body::from_stream(stream));
            let kind = if key.ends_with(".whl") || key.ends_with(".sqlite") {
                "application/octet-stream"
            } else if key.ends_with(".jsonl") {
                "application/x-ndjson"
            } else if key.starts_with("drive/") && key.ends_with(".json") {
                "application/json"
            } else if key.starts_with("drive/") {
                "application/octet-stream"
            } else {
                "application/gzip"
            };
            response.headers_mut().insert("content-type", HeaderValue::from_static(kind));
            Ok(response)
        }
        _ => Err(HubError::no_route(method, path)),
    }
}

/// Stream an upload's body into `writer`, at most `limit` bytes; the body's sha256 (base64).
pub(super) async fn receive(body: Body, writer: &mut dyn ObjectWriter, limit: usize) -> Result<String, HubError> {
    use futures_util::StreamExt as _;
    let mut stream = body.into_data_stream();
    let mut digest = Sha256::new();
    let mut received = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| HubError::BadRequest(format!("reading the upload: {e}")))?;
        received += chunk.len();
        if received > limit {
            return Err(HubError::TooLarge(format!("request body is over the {limit}-byte limit")));
        }
        digest.update(&chunk);
        writer.write(chunk).await?;
    }
    Ok(base64::engine::general_purpose::STANDARD.encode(digest.finalize()))
}

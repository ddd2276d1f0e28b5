//! Who asks and what they may name: Basic authentication with a project's keys,
//! valid slugs and ref names, and the project's own containers and versions.

use super::keys::hash_secret;
use super::state::Hub;
use crate::error::HubError;
use crate::store::{Container, Version};
use axum::http::HeaderMap;
use base64::Engine as _;
use subtle::ConstantTimeEq;

pub(super) async fn authenticate(hub: &Hub, headers: &HeaderMap) -> Result<String, HubError> {
    let denied = || {
        HubError::Unauthorized(
            "missing or invalid credentials: send HTTP Basic <public key>:<secret key> of a project (`gateway hub keys create`)".into(),
        )
    };
    let header = headers.get("authorization").and_then(|h| h.to_str().ok()).ok_or_else(denied)?;
    let encoded = header.strip_prefix("Basic ").or_else(|| header.strip_prefix("basic ")).ok_or_else(denied)?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|_| denied())?;
    let decoded = String::from_utf8(decoded).map_err(|_| denied())?;
    let (public, secret) = decoded.split_once(':').ok_or_else(denied)?;
    let presented = hash_secret(secret);
    match hub.meta.key_lookup(public).await? {
        Some((project, stored)) if bool::from(stored.as_bytes().ct_eq(presented.as_bytes())) => Ok(project),
        Some(_) => Err(denied()),
        None => {
            // Same work on an unknown key, so timing does not tell which keys exist.
            let _ = presented.as_bytes().ct_eq(hash_secret("").as_bytes());
            Err(denied())
        }
    }
}

/// A valid container slug: 1–100 of `[A-Za-z0-9._-]`, starting alphanumeric.
pub fn check_slug(slug: &str) -> Result<(), HubError> {
    let ok = !slug.is_empty()
        && slug.len() <= 100
        && slug.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && slug.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(HubError::BadRequest(format!(
            "invalid slug '{slug}': use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )))
    }
}

/// A valid branch or tag name (git-like; `/` allowed between parts).
pub fn check_ref_name(name: &str) -> Result<(), HubError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name != "latest"
        && !name.starts_with('-')
        && name.split('/').all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with(".lock"))
        && !name.contains("..")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-/+@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(HubError::BadRequest(format!(
            "invalid ref name '{name}': use letters, digits, '.', '_', '-', '+', '@' and '/' between parts (not 'latest', no '..')"
        )))
    }
}

pub(super) async fn container(hub: &Hub, project: &str, slug: Option<String>) -> Result<Container, HubError> {
    let slug = slug.filter(|s| !s.is_empty()).ok_or_else(|| HubError::BadRequest("'slug' is required".into()))?;
    check_slug(&slug)?;
    hub.meta
        .container(project, &slug)
        .await?
        .ok_or_else(|| HubError::NotFound(format!("no container '{slug}' in this project: push it first (`gateway bench push`)")))
}

/// A version of this project (another project's version is "not found").
pub(super) async fn own_version(hub: &Hub, project: &str, id: &str) -> Result<(Container, Version), HubError> {
    let missing = || HubError::missing("version", id);
    let version = hub.meta.version(id).await?.ok_or_else(missing)?;
    let container = hub.meta.container_by_id(&version.container_id).await?.ok_or_else(missing)?;
    if container.project_id != project {
        return Err(missing());
    }
    Ok((container, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_slug("demo-env_1.x").is_ok());
        assert!(check_slug("../x").is_err());
        assert!(check_slug("").is_err());
        assert!(check_ref_name("fix/retention-lock").is_ok());
        assert!(check_ref_name("a//b").is_err());
        assert!(check_ref_name("latest").is_err());
        assert!(check_ref_name("a/../b").is_err());
    }
}

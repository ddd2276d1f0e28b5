//! Per-host credentials: a remote World Host registers with the hub, sends its
//! heartbeats, asks who owns a session and is called on its control plane under a
//! credential of its own, issued by the operator (`gateway hub hosts add NAME`) and
//! revocable (`gateway hub hosts revoke NAME`) — not under one secret every host shares,
//! whose leak would let anyone register a host and receive other projects' sessions.
//!
//! The credential is `ghc-<name>.<hex>`: an HMAC under the hub's signing key
//! (`<data>/keys`, never in the database) over the name and a nonce. The metadata
//! store keeps only the nonce and the credential's SHA-256 (a document of the hub-wide
//! `_hosts` project), so a database leak yields no credential; the hub re-derives it to
//! present it as `X-Host-Secret` on the host's control plane. The host is run with the
//! credential as its `WORLDS_HOST_SECRET`, so the §10 protocol is unchanged.

use crate::error::StoreError;
use crate::keys::Keys;
use crate::store::{DocumentPages, MetaStore};
use gateway_world::json::{self, object, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq as _;

/// The project under which hub-wide records live (hosts, credentials, session owners).
pub const HOSTS_PROJECT: &str = "_hosts";
/// The document kind of host credentials.
const KIND: &str = "credential";
/// What every credential starts with.
const PREFIX: &str = "ghc-";

/// A host name: 1 to 64 of `a-z 0-9 -`, starting with a letter or digit.
pub fn check_name(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadRequest(format!("host name {name:?} must be 1-64 of a-z, 0-9 and '-', not starting with '-'")))
    }
}

fn derive(keys: &Keys, name: &str, nonce: &str) -> String {
    format!("{PREFIX}{name}.{}", keys.sign(&format!("gateway-hub-host-credential\n{name}\n{nonce}")))
}

fn digest(credential: &str) -> String {
    hex::encode(Sha256::digest(credential.as_bytes()))
}

async fn record(meta: &dyn MetaStore, name: &str) -> Result<Option<Value>, StoreError> {
    Ok(meta.document(HOSTS_PROJECT, KIND, name).await?.and_then(|text| json::parse_clean(&text)))
}

fn is_active(record: &Value) -> bool {
    matches!(record.get("revokedAt"), None | Some(Value::Null))
}

/// Issue a credential for host `name` (refused while an active one exists): the
/// credential, to be shown once.
pub async fn add(meta: &dyn MetaStore, keys: &Keys, name: &str) -> Result<String, StoreError> {
    check_name(name)?;
    if record(meta, name).await?.is_some_and(|r| is_active(&r)) {
        return Err(StoreError::Conflict(format!(
            "host {name} has a credential already: revoke it first (gateway hub hosts revoke {name})"
        )));
    }
    let nonce = hex::encode(crate::util::random_bytes(16));
    let credential = derive(keys, name, &nonce);
    let stored = object([
        ("name", Value::str(name)),
        ("nonce", Value::Str(nonce)),
        ("sha256", Value::Str(digest(&credential))),
        ("createdAt", Value::Str(crate::util::now_iso())),
        ("revokedAt", Value::Null),
    ]);
    meta.put_document(HOSTS_PROJECT, KIND, name, &json::canonical(&stored)).await?;
    Ok(credential)
}

/// Every host credential issued: `{name, state: active|revoked, createdAt, revokedAt}`.
pub async fn list(meta: &dyn MetaStore) -> Result<Vec<Value>, StoreError> {
    let mut out = Vec::new();
    let mut pages = DocumentPages::new(meta, HOSTS_PROJECT, KIND, 500);
    while let Some(page) = pages.next_page().await? {
        for (_, text) in page {
            let Some(stored) = json::parse_clean(&text) else { continue };
            let state = if is_active(&stored) { "active" } else { "revoked" };
            out.push(object([
                ("name", stored.get("name").cloned().unwrap_or_default()),
                ("state", Value::str(state)),
                ("createdAt", stored.get("createdAt").cloned().unwrap_or_default()),
                ("revokedAt", stored.get("revokedAt").cloned().unwrap_or_default()),
            ]));
        }
    }
    Ok(out)
}

/// Revoke host `name`'s credential: its heartbeats are refused (401), it is given no
/// more sessions and the hub stops calling it. False when it had no active credential.
pub async fn revoke(meta: &dyn MetaStore, name: &str) -> Result<bool, StoreError> {
    let Some(Value::Object(mut stored)) = record(meta, name).await? else { return Ok(false) };
    if !is_active(&Value::Object(stored.clone())) {
        return Ok(false);
    }
    stored.insert("revokedAt".into(), Value::Str(crate::util::now_iso()));
    meta.put_document(HOSTS_PROJECT, KIND, name, &json::canonical(&Value::Object(stored))).await?;
    Ok(true)
}

/// The host a presented `X-Host-Secret` is the active credential of, if any.
pub async fn verify(meta: &dyn MetaStore, presented: &str) -> Result<Option<String>, StoreError> {
    let Some((name, _)) = presented.strip_prefix(PREFIX).and_then(|rest| rest.rsplit_once('.')) else { return Ok(None) };
    if check_name(name).is_err() {
        return Ok(None);
    }
    let Some(stored) = record(meta, name).await?.filter(is_active) else { return Ok(None) };
    let expected = stored.get("sha256").and_then(Value::as_str).unwrap_or_default();
    Ok(bool::from(digest(presented).as_bytes().ct_eq(expected.as_bytes())).then(|| name.to_string()))
}

/// The credential the hub presents on host `name`'s control plane; None once revoked.
pub async fn credential(meta: &dyn MetaStore, keys: &Keys, name: &str) -> Result<Option<String>, StoreError> {
    let Some(stored) = record(meta, name).await?.filter(is_active) else { return Ok(None) };
    let nonce = stored.get("nonce").and_then(Value::as_str).unwrap_or_default();
    Ok(Some(derive(keys, name, nonce)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_verify_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let meta = crate::sqlite::SqliteStore::open(&dir.path().join("hub.sqlite")).unwrap();
            let keys = Keys::load_or_create(&dir.path().join("keys")).unwrap();
            let issued = add(&meta, &keys, "host-a").await.unwrap();
            assert!(issued.starts_with("ghc-host-a."));
            assert!(matches!(add(&meta, &keys, "host-a").await, Err(StoreError::Conflict(_))), "one active credential per host");
            assert_eq!(verify(&meta, &issued).await.unwrap().as_deref(), Some("host-a"));
            assert_eq!(credential(&meta, &keys, "host-a").await.unwrap().as_deref(), Some(issued.as_str()));
            let stored = meta.document(HOSTS_PROJECT, KIND, "host-a").await.unwrap().unwrap();
            assert!(!stored.contains(issued.rsplit_once('.').unwrap().1), "the database holds no credential");
            for forged in ["", "ghc-host-a.00", "ghc-host-b.x", &issued.replace("ghc-host-a", "ghc-host-b"), "s3cret"] {
                assert_eq!(verify(&meta, forged).await.unwrap(), None, "{forged}");
            }
            assert!(revoke(&meta, "host-a").await.unwrap());
            assert!(!revoke(&meta, "host-a").await.unwrap());
            assert_eq!(verify(&meta, &issued).await.unwrap(), None);
            assert_eq!(credential(&meta, &keys, "host-a").await.unwrap(), None);
            let again = add(&meta, &keys, "host-a").await.unwrap();
            assert_ne!(again, issued, "a host added again gets a new credential");
            assert_eq!(list(&meta).await.unwrap().len(), 1);
            assert!(check_name("Bad_Name").is_err() && check_name("-x").is_err() && check_name("ok-1").is_ok());
        });
    }
}

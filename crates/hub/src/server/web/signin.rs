//! Signing in to the web pages and out of them (issue 24):
//!
//! - **a sign-in is a record**: the cookie (`HttpOnly`, `SameSite=Strict`, 12 hours) is
//!   `<public key>.<sign-in id>.<expiry>.<mac>`, signed with the hub's signing key over the
//!   key, its project, its secret's stored hash, the id and the expiry; the sign-in id is a
//!   document of the hub-wide `_web` project. Sign-out deletes it, so a copied cookie stops
//!   working at sign-out (not only at expiry, or when the key's secret changes).
//! - **CSRF tokens**: the sign-in form carries a token bound to a pre-sign-in cookie
//!   (`gateway_hub_csrf`, a random nonce: the token is an HMAC of it), the sign-out form one
//!   bound to the sign-in id; a POST without the right token is refused (403) and changes nothing.
//! - **a sign-in rate limit**: [`FAILURES_PER_MINUTE`] failed sign-ins from one client
//!   address, or for one public key, within a minute, and the next attempt is a 429 —
//!   counted in the metadata store, so every hub process behind a balancer shares them.
//!   The address is the TCP peer's (a proxy's, behind one: a `X-Forwarded-For` anyone can
//!   write is not trusted).

use super::super::access::authenticate;
use super::super::request::parse_query;
use super::super::state::Hub;
use super::page::{html_response, shell, Page};
use crate::error::HubError;
use crate::util::{now_iso, now_secs};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use base64::Engine as _;
use gateway_world::json::{self, object, Value};
use maud::{html, Markup};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// The session cookie's name.
const COOKIE: &str = "gateway_hub_session";
/// The pre-sign-in cookie the sign-in form's CSRF token is bound to.
const CSRF_COOKIE: &str = "gateway_hub_csrf";
/// How long a sign-in lasts.
pub(super) const SESSION_SECONDS: u64 = 12 * 3600;
/// How long a sign-in form stays usable.
const FORM_SECONDS: u64 = 3600;
/// The project under which the web pages' hub-wide records live.
const WEB_PROJECT: &str = "_web";
/// Sign-in records.
const SIGNIN: &str = "signin";
/// Failed sign-ins per client address and per public key, in one-minute windows.
const FAILURES: &str = "signin-failures";
/// Failed sign-ins allowed per minute, per client address and per public key.
pub(super) const FAILURES_PER_MINUTE: i64 = 5;

/// Who is looking: their project, and the sign-out token of a cookie sign-in (a Basic
/// caller has nothing to sign out of).
pub(super) struct Viewer {
    pub project: String,
    pub sign_out: Option<String>,
}

/// A form's CSRF token for `purpose`, bound to `binding` (a nonce or a sign-in id).
fn csrf_token(hub: &Hub, purpose: &str, binding: &str) -> String {
    hub.keys.sign(&format!("gateway-hub-web-csrf\n{purpose}\n{binding}"))
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The project of whoever asks: HTTP Basic (checked as the API checks it), else a valid
/// session cookie; `None` when they sent neither.
pub(super) async fn viewer(hub: &Hub, headers: &HeaderMap) -> Result<Option<Viewer>, HubError> {
    if headers.contains_key("authorization") {
        return Ok(Some(Viewer { project: authenticate(hub, headers).await?, sign_out: None }));
    }
    let Some(cookie) = read_cookie(headers, COOKIE) else { return Ok(None) };
    Ok(check_session(hub, &cookie, now_secs())
        .await?
        .map(|(project, id)| Viewer { project, sign_out: Some(csrf_token(hub, "signout", &id)) }))
}

fn read_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.to_string())
        .filter(|v| !v.is_empty())
}

/// What a session cookie signs: the key, its project, its secret's stored hash, the
/// sign-in id and the expiry.
fn session_mac(hub: &Hub, public: &str, project: &str, secret_hash: &str, id: &str, expires: u64) -> String {
    hub.keys.sign(&format!("gateway-hub-web-session\n{public}\n{project}\n{secret_hash}\n{id}\n{expires}"))
}

/// The cookie value `<public key>.<sign-in id>.<expiry>.<mac>`.
fn session_value(hub: &Hub, public: &str, project: &str, secret_hash: &str, id: &str, expires: u64) -> String {
    format!("{public}.{id}.{expires}.{}", session_mac(hub, public, project, secret_hash, id, expires))
}

/// The project and sign-in id of a session cookie that is well formed, unexpired, signed by
/// this hub for a key that still exists with the same secret, and not signed out of.
async fn check_session(hub: &Hub, value: &str, now: u64) -> Result<Option<(String, String)>, HubError> {
    let mut parts = value.rsplitn(4, '.');
    let (Some(mac), Some(expires), Some(id), Some(public)) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Ok(None);
    };
    let Ok(expires) = expires.parse::<u64>() else { return Ok(None) };
    if expires <= now || !public.starts_with("pk-") || id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let Some((project, secret_hash)) = hub.meta.key_lookup(public).await? else { return Ok(None) };
    if !same(&session_mac(hub, public, &project, &secret_hash, id, expires), mac) {
        return Ok(None);
    }
    // Signed, and still signed in: the record sign-out deletes.
    let record = hub.meta.document(WEB_PROJECT, SIGNIN, id).await?.and_then(|t| json::parse_clean(&t));
    let held = record.is_some_and(|r| r.get("publicKey").and_then(Value::as_str) == Some(public));
    Ok(held.then_some((project, id.to_string())))
}

/// Whether the hub is reached over https (its public URL, or a proxy's `X-Forwarded-Proto`).
fn https(hub: &Hub, headers: &HeaderMap) -> bool {
    hub.public_url.as_deref().is_some_and(|u| u.starts_with("https://"))
        || headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()) == Some("https")
}

/// `Set-Cookie` for the session cookie lasting `max_age` seconds (0 clears it).
fn cookie_header(hub: &Hub, headers: &HeaderMap, value: &str, max_age: u64) -> String {
    let secure = if https(hub, headers) { "; Secure" } else { "" };
    format!("{COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}")
}

/// The sign-in form as a response: the form (with `error`) and its CSRF token, bound to
/// the browser's pre-sign-in cookie (kept when it has one, so two tabs both work).
pub(super) fn login_response(hub: &Hub, headers: &HeaderMap, status: u16, error: Option<&str>, next: &str) -> Response {
    let nonce = read_cookie(headers, CSRF_COOKIE)
        .filter(|n| n.len() == 32 && n.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| crate::util::random_hex(16));
    let mut response = html_response(status, login_page(error, next, &csrf_token(hub, "signin", &nonce)));
    let secure = if https(hub, headers) { "; Secure" } else { "" };
    let cookie = format!("{CSRF_COOKIE}={nonce}; Path=/ui/; Max-Age={FORM_SECONDS}; HttpOnly; SameSite=Strict{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append("set-cookie", value);
    }
    response
}

/// The client address a request came from (the TCP peer), as the rate limit counts it.
fn peer(parts: &Parts) -> String {
    parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// The rate-limit records a sign-in attempt counts against.
fn limit_ids(address: &str, public: &str) -> [String; 2] {
    [format!("addr:{address}"), format!("key:{}", hex::encode(Sha256::digest(public.as_bytes())))]
}

/// Failures in the current minute of one record.
async fn failures(hub: &Hub, id: &str, now: u64) -> Result<(u64, i64), HubError> {
    let record = hub.meta.document(WEB_PROJECT, FAILURES, id).await?.and_then(|t| json::parse_clean(&t));
    let window = record.as_ref().and_then(|r| r.get("window")).and_then(Value::as_i64).unwrap_or(0).max(0) as u64;
    let count = record.as_ref().and_then(|r| r.get("failures")).and_then(Value::as_i64).unwrap_or(0);
    Ok(if now.saturating_sub(window) >= 60 { (now, 0) } else { (window, count) })
}

/// `POST /ui/login`: the CSRF token, the rate limit, then the form's key pair checked as
/// the API checks Basic credentials; a sign-in record and its cookie.
pub(super) async fn sign_in(hub: &Hub, parts: &Parts, body: &[u8]) -> Result<Page, HubError> {
    let form = parse_query(std::str::from_utf8(body).unwrap_or_default());
    let field = |name: &str| form.get(name).map(|v| v.trim().to_string()).unwrap_or_default();
    let (public, secret) = (field("public_key"), field("secret_key"));
    let next = local_next(form.get("next").map(String::as_str));
    let refuse = |status: u16, error: &str| Ok(Page::Login { status, error: Some(error.to_string()), next: next.clone() });
    let nonce = read_cookie(&parts.headers, CSRF_COOKIE).unwrap_or_default();
    if nonce.is_empty() || !same(&csrf_token(hub, "signin", &nonce), &field("csrf")) {
        return refuse(403, "This sign-in form has expired or was not sent by this hub's page: sign in again.");
    }
    let now = now_secs();
    let ids = limit_ids(&peer(parts), &public);
    for id in &ids {
        if failures(hub, id, now).await?.1 >= FAILURES_PER_MINUTE {
            return refuse(429, "Too many failed sign-ins from this address or for this key: wait a minute, then try again.");
        }
    }
    let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{public}:{secret}")));
    let mut check = HeaderMap::new();
    let denied = "that key pair is not one of this hub's: check the public and the secret key";
    let known = match HeaderValue::from_str(&basic) {
        Ok(value) => {
            check.insert("authorization", value);
            match authenticate(hub, &check).await {
                Ok(project) => hub.meta.key_lookup(&public).await?.map(|(_, hash)| (project, hash)),
                Err(_) => None,
            }
        }
        Err(_) => None,
    };
    let Some((project, secret_hash)) = known else {
        for id in &ids {
            let (window, count) = failures(hub, id, now).await?;
            let record = object([("window", Value::Int(window as i64)), ("failures", Value::Int(count + 1))]);
            hub.meta.put_document(WEB_PROJECT, FAILURES, id, &json::canonical(&record)).await?;
        }
        return refuse(401, denied);
    };
    let id = crate::util::random_hex(16);
    let expires = now + SESSION_SECONDS;
    let record =
        object([("publicKey", Value::str(&public)), ("expires", Value::Int(expires as i64)), ("createdAt", Value::Str(now_iso()))]);
    hub.meta.put_document(WEB_PROJECT, SIGNIN, &id, &json::canonical(&record)).await?;
    let value = session_value(hub, &public, &project, &secret_hash, &id, expires);
    Ok(Page::Redirect(next, Some(cookie_header(hub, &parts.headers, &value, SESSION_SECONDS))))
}

/// `POST /ui/logout`: with the sign-out form's token, the sign-in record is deleted (the
/// cookie is dead wherever it was copied) and the cookie cleared; without it, refused.
pub(super) async fn sign_out(hub: &Hub, headers: &HeaderMap, body: &[u8]) -> Result<Page, HubError> {
    let cleared = || Ok(Page::Redirect("/ui/login".into(), Some(cookie_header(hub, headers, "", 0))));
    let Some(cookie) = read_cookie(headers, COOKIE) else { return cleared() };
    let Some((_, id)) = check_session(hub, &cookie, now_secs()).await? else { return cleared() };
    let form = parse_query(std::str::from_utf8(body).unwrap_or_default());
    let presented = form.get("csrf").map(String::as_str).unwrap_or_default();
    if !same(&csrf_token(hub, "signout", &id), presented) {
        return Ok(Page::Forbidden("This sign-out was not sent by this hub's page: use the Sign out button.".into()));
    }
    hub.meta.delete_document(WEB_PROJECT, SIGNIN, &id).await?;
    cleared()
}

/// A `next` that stays on this hub's pages (anything else: the worlds page).
pub(super) fn local_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/ui/") && !n.starts_with("/ui/login") && !n.contains("//") && !n.contains('\\') => n.to_string(),
        _ => "/ui/".to_string(),
    }
}

pub(super) fn login_page(error: Option<&str>, next: &str, csrf: &str) -> Markup {
    shell(
        "Sign in",
        false,
        html! {
            form.login method="post" action="/ui/login" {
                h1 { "Sign in to this hub" }
                p.muted { "Use a project key pair (" code { "gateway hub keys create" } ")." }
                @if let Some(error) = error { div.msg.error { (error) } }
                label for="public_key" { "Public key" }
                input #public_key name="public_key" autocomplete="username" placeholder="pk-lf-…" required;
                label for="secret_key" { "Secret key" }
                input #secret_key name="secret_key" type="password" autocomplete="current-password" placeholder="sk-lf-…" required;
                input type="hidden" name="next" value=(next);
                input type="hidden" name="csrf" value=(csrf);
                button type="submit" { "Sign in" }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{hash_secret, Keys, Limits};

    #[test]
    fn next_stays_on_the_pages() {
        assert_eq!(local_next(Some("/ui/w/demo?x=1")), "/ui/w/demo?x=1");
        for bad in ["https://evil.example/", "//evil.example/ui/", "/ui//evil", "/api/public/x", "/ui/login?next=/ui/", "/ui\\x"] {
            assert_eq!(local_next(Some(bad)), "/ui/", "{bad}");
        }
        assert_eq!(local_next(None), "/ui/");
    }

    #[test]
    fn the_sign_in_form_escapes() {
        let escaped = login_page(Some("<script>alert(1)</script>"), "/ui/\"><x", "t").into_string();
        assert!(!escaped.contains("<script>alert") && escaped.contains("&lt;script&gt;"));
        assert!(!escaped.contains("\"><x"));
    }

    #[test]
    fn session_cookies() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let config = crate::HubConfig { data: dir.path().to_path_buf(), database: None, objects: None };
            let hub = Hub {
                meta: config.open_meta().await.unwrap(),
                objects: config.open_objects().await.unwrap(),
                keys: Keys::load_or_create(&config.keys_dir()).unwrap(),
                public_url: None,
                bound_url: None,
                limits: Limits::default(),
                worlds: None,
                scratch: None,
                call_log: Default::default(),
            };
            let (project, public, secret) = crate::create_key(hub.meta.as_ref(), "p").await.unwrap();
            let hash = hash_secret(&secret);
            let now = 1_000_000;
            let id = "0123abcd";
            let record = object([("publicKey", Value::str(&public))]);
            hub.meta.put_document(WEB_PROJECT, SIGNIN, id, &json::canonical(&record)).await.unwrap();
            let good = session_value(&hub, &public, &project, &hash, id, now + 60);
            let signed_in = Some((project.clone(), id.to_string()));
            assert_eq!(check_session(&hub, &good, now).await.unwrap(), signed_in);
            // Expired, tampered, another expiry or id, signed over another secret, unknown key, junk.
            assert_eq!(check_session(&hub, &good, now + 60).await.unwrap(), None);
            let other_expiry = good.replace(&format!(".{}.", now + 60), &format!(".{}.", now + 999_999));
            assert_eq!(check_session(&hub, &other_expiry, now).await.unwrap(), None);
            assert_eq!(check_session(&hub, &good.replace(".0123abcd.", ".0123abce."), now).await.unwrap(), None);
            let mut tampered = good.clone();
            tampered.pop();
            tampered.push(if good.ends_with('0') { '1' } else { '0' });
            assert_eq!(check_session(&hub, &tampered, now).await.unwrap(), None);
            let stale = session_value(&hub, &public, &project, &hash_secret("old secret"), id, now + 60);
            assert_eq!(check_session(&hub, &stale, now).await.unwrap(), None);
            let unknown = session_value(&hub, "pk-lf-0000", &project, &hash, id, now + 60);
            assert_eq!(check_session(&hub, &unknown, now).await.unwrap(), None);
            for junk in ["", "x", "a.b.c", "pk-lf-1.ab.notanumber.00"] {
                assert_eq!(check_session(&hub, junk, now).await.unwrap(), None);
            }
            // Signed out: the same, well-signed cookie is no sign-in.
            hub.meta.delete_document(WEB_PROJECT, SIGNIN, id).await.unwrap();
            assert_eq!(check_session(&hub, &good, now).await.unwrap(), None);
        });
    }
}

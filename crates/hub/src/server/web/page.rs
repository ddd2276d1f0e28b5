//! The frame of every web page and what the pages share: the stylesheet, the page's
//! answer ([`Page`]), the shell (header, navigation, the sign-out form) and the
//! signed-in page with its breadcrumbs, HTML and redirect responses, the error page,
//! and the small helpers the pages format and look things up with. A leaf of
//! `web/`: the page modules and the sign-in name it, it names none of them.

use super::super::access::{check_slug, own_version};
use super::super::state::Hub;
use crate::error::HubError;
use crate::store::{Container, Version};
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use gateway_world::json::{self, DumpOptions, Value};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use std::collections::BTreeMap;

/// The stylesheet of every page (a constant: the only raw text a page holds).
const STYLE: &str = "
:root{--fg:#1d232b;--muted:#5b6573;--line:#d9dee5;--bg:#f6f7f9;--accent:#2457c5;--add:#e6f4ea;--del:#fce8e6;--chg:#fff4d6}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:var(--fg);background:var(--bg)}
header{background:#1d232b;color:#fff;padding:10px 24px;display:flex;gap:20px;align-items:center}
header a{color:#fff;text-decoration:none;font-weight:600}header .brand{font-size:16px;margin-right:12px}
header form{margin-left:auto}header button{background:none;border:1px solid #6b7684;color:#fff;border-radius:4px;padding:3px 10px;cursor:pointer}
main{max-width:1180px;margin:0 auto;padding:18px 24px 40px}
h1{font-size:22px;margin:6px 0 14px}h2{font-size:17px;margin:26px 0 10px}h3{font-size:15px;margin:18px 0 8px}
a{color:var(--accent)}.muted{color:var(--muted)}.crumbs{color:var(--muted);margin-bottom:4px}.crumbs a{color:var(--muted)}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line)}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#eef1f5;font-weight:600;font-size:13px}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#fff;border:1px solid var(--line);padding:10px 12px;overflow:auto;white-space:pre-wrap;word-break:break-word;max-height:640px}
.pill{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;background:#e8ecf2}
.READY,.COMPLETED,.DONE{background:#dcefe1}.FAILED,.STOPPED{background:#f6dcd9}.RUNNING,.PENDING{background:#fbefcc}
.added td{background:var(--add)}.removed td{background:var(--del)}.changed td{background:var(--chg)}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:8px 0 4px}.card{background:#fff;border:1px solid var(--line);border-radius:6px;padding:8px 14px;min-width:120px}
.card b{display:block;font-size:18px}.pager{margin:12px 0}.pager a{margin-right:14px}
.msg{background:#fff;border:1px solid var(--line);border-left:4px solid var(--accent);padding:8px 12px;margin:8px 0}
.msg .role{font-weight:600;font-size:12px;text-transform:uppercase;color:var(--muted)}
.error{border-left-color:#c5221f}.login{max-width:420px;margin:60px auto;background:#fff;border:1px solid var(--line);border-radius:8px;padding:24px}
.login label{display:block;margin:12px 0 4px;font-weight:600}.login input{width:100%;padding:7px 9px;border:1px solid var(--line);border-radius:4px;font:inherit}
.login button{margin-top:16px;background:var(--accent);color:#fff;border:0;border-radius:4px;padding:8px 16px;font:inherit;cursor:pointer}
form.inline{display:flex;gap:8px;align-items:end;flex-wrap:wrap}form.inline select{padding:4px}
svg{background:#fff;border:1px solid var(--line);max-width:100%;height:auto}
";

/// A page's answer before it becomes a response.
pub(super) enum Page {
    /// 200 with this page.
    Html(Markup),
    /// 303 to this local path (with an optional `Set-Cookie`).
    Redirect(String, Option<String>),
    /// The sign-in form with this status, an error, and where to go after.
    Login { status: u16, error: Option<String>, next: String },
    /// 403: a form that did not come from this hub's page.
    Forbidden(String),
}

tokio::task_local! {
    /// The sign-out form's CSRF token of the page being drawn (empty: no sign-out form).
    pub(super) static SIGN_OUT: String;
}

/// A whole page: the header (with navigation when signed in, and the sign-out form
/// with its CSRF token for a cookie sign-in) and `body`.
pub(super) fn shell(title: &str, signed_in: bool, body: Markup) -> Markup {
    let sign_out = SIGN_OUT.try_with(Clone::clone).ok().filter(|t| !t.is_empty());
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · gateway hub" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    a.brand href="/ui/" { "gateway hub" }
                    @if signed_in {
                        a href="/ui/" { "Worlds" }
                        a href="/ui/sessions" { "Sessions" }
                        @if let Some(token) = &sign_out {
                            form method="post" action="/ui/logout" {
                                input type="hidden" name="csrf" value=(token);
                                button type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A signed-in page: breadcrumbs (label, link) and a heading.
pub(super) fn page(title: &str, crumbs: &[(&str, String)], body: Markup) -> Markup {
    shell(
        title,
        true,
        html! {
            @if !crumbs.is_empty() {
                div.crumbs {
                    @for (i, (label, href)) in crumbs.iter().enumerate() {
                        @if i > 0 { " / " }
                        a href=(href) { (label) }
                    }
                }
            }
            h1 { (title) }
            (body)
        },
    )
}

pub(super) fn html_response(status: u16, markup: Markup) -> Response {
    let mut response = Response::new(Body::from(markup.into_string()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    response
}

pub(super) fn redirect(to: &str, cookie: Option<String>) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(location) = HeaderValue::from_str(to) {
        response.headers_mut().insert("location", location);
    }
    if let Some(cookie) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert("set-cookie", cookie);
    }
    response.headers_mut().insert("cache-control", HeaderValue::from_static("no-store"));
    response
}

pub(super) fn error_page(error: &HubError) -> Response {
    let status = error.status();
    let (title, detail) = match status {
        404 => ("Not found", error.to_string()),
        400 | 409 | 413 | 429 => ("Cannot show this", error.to_string()),
        _ => {
            eprintln!("gateway hub web: {error}");
            ("Something went wrong", "the hub could not build this page; its log has the reason".to_string())
        }
    };
    html_response(
        status,
        page(
            title,
            &[],
            html! {
                div.msg.error { (detail) }
                p { a href="/ui/" { "Back to the worlds" } }
            },
        ),
    )
}

// ------------------------------------------------------------------ small helpers for the pages

/// A version's short label: its semantic version, else the first 12 hex of its hash.
pub(super) fn version_label(version: &Version) -> String {
    version.semantic_version.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| version.content_hash.chars().take(12).collect())
}

/// A JSON value as compact text, cut at `max` characters.
pub(super) fn json_text(value: &Value, max: usize) -> String {
    clip(&json::dumps(value, DumpOptions { sort_keys: false, ensure_ascii: false, indent: None, compact: false }), max)
}

/// A JSON value pretty-printed (two-space indent), cut at `max` characters.
pub(super) fn json_pretty(value: &Value, max: usize) -> String {
    clip(&json::dumps(value, DumpOptions { sort_keys: false, ensure_ascii: false, indent: Some(2), compact: false }), max)
}

/// `text` cut at `max` characters, with a note of how much was left out.
pub(super) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}… ({} more characters)", &text[..at], text[at..].chars().count()),
    }
}

/// A number for a table: up to 4 decimals, trailing zeros dropped.
pub(super) fn number(value: f64) -> String {
    let text = format!("{value:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.to_string()
    }
}

/// A cursor from the query (`before` / `after`): a non-negative sequence number.
pub(super) fn cursor(query: &BTreeMap<String, String>, name: &str) -> Result<Option<i64>, HubError> {
    match query.get(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(text) => text
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(Some)
            .ok_or_else(|| HubError::BadRequest(format!("'{name}' must be a page cursor this hub gave, not '{text}'"))),
    }
}

/// A project's world by slug; a malformed slug is as absent as a missing one.
pub(super) async fn project_world(hub: &Hub, project: &str, slug: &str) -> Result<Container, HubError> {
    let missing = || HubError::missing("world", slug);
    if check_slug(slug).is_err() {
        return Err(missing());
    }
    hub.meta.container(project, slug).await?.ok_or_else(missing)
}

/// A version of the world `container` (another world's or project's version is absent).
pub(super) async fn world_version(hub: &Hub, project: &str, container: &Container, id: &str) -> Result<Version, HubError> {
    match own_version(hub, project, id).await {
        Ok((owner, version)) if owner.id == container.id => Ok(version),
        Err(other) if !other.is_not_found() => Err(other),
        _ => Err(HubError::NotFound(format!("no version '{id}' of '{}'", container.slug))),
    }
}

/// The URL of a world's page (slugs are URL-safe by construction).
pub(super) fn world_url(slug: &str) -> String {
    format!("/ui/w/{slug}")
}

pub(super) fn state_pill(state: &str) -> Markup {
    html! { span class={ "pill " (state) } { (state) } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(clip("abcdef", 3), "abc… (3 more characters)");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(1.0), "1");
        assert_eq!(number(-0.00001), "0");
    }
}

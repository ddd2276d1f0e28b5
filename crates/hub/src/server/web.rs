//! The hub's web pages: `/` and `/ui/…`, server-rendered HTML for people, beside the
//! JSON API for clients. A project's worlds with their versions, branches and tags; a
//! version's files; the row-level seed diff between two versions; live sessions with
//! their call logs; evaluations with a reward-per-version chart, their rollouts and
//! each rollout's transcript.
//!
//! Access is the API's: a project key pair. A browser signs in once with a form
//! (`/ui/login`) and gets a session cookie (`HttpOnly`, `SameSite=Strict`, 12 hours)
//! backed by a sign-in record that sign-out deletes; both forms carry CSRF tokens and
//! failed sign-ins are rate limited (`web/signin.rs`). `curl` sends HTTP Basic, as to
//! the API. Another project's world, version, session or evaluation is a 404 page.
//!
//! It is not an API: nothing here is JSON, and nothing here writes except the sign-in
//! and sign-out. Pages are HTML from `maud` templates, where every interpolated value is
//! escaped (only the stylesheet, a constant, is inserted raw); the `Content-Security-Policy`
//! forbids scripts outright, and there are none. Every list is a page of one indexed
//! query (the store's paged reads), never a query per row.

use super::request::parse_query;
use super::state::Hub;
use crate::error::HubError;
use axum::body::{to_bytes, Body};
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::response::Response;
use gateway_common::url::{quote_segment, unquote_plus};
use maud::html;
use page::{error_page, html_response, page, redirect, Page, SIGN_OUT};
use signin::{local_next, login_response, sign_in, sign_out, viewer, Viewer};
use std::collections::BTreeMap;

mod bundle;
mod chart;
mod evals;
mod grade;
mod page;
mod sessions;
mod signin;
mod worlds;

/// Largest sign-in or sign-out form body.
const MAX_FORM_BYTES: usize = 16 * 1024;

/// Answer a request for `/` or `/ui/…`. The page is drawn knowing the viewer's sign-out
/// token (for the sign-out form in its header).
pub(super) async fn answer(hub: &Hub, parts: Parts, body: Body) -> Response {
    let path = parts.uri.path().to_string();
    if path == "/" || path == "/ui" {
        return redirect("/ui/", None);
    }
    let viewer = match (parts.method.as_str(), path.as_str()) {
        ("GET", "/ui/login") | ("POST", _) => Ok(None),
        _ => viewer(hub, &parts.headers).await,
    };
    let token = match &viewer {
        Ok(Some(Viewer { sign_out: Some(token), .. })) => token.clone(),
        _ => String::new(),
    };
    SIGN_OUT.scope(token, respond(hub, parts, body, viewer)).await
}

async fn respond(hub: &Hub, parts: Parts, body: Body, viewer: Result<Option<Viewer>, HubError>) -> Response {
    let path = parts.uri.path().to_string();
    let query = parse_query(parts.uri.query().unwrap_or(""));
    let method = parts.method.as_str();
    let rest = path.strip_prefix("/ui/").unwrap_or_default();
    let result = match (method, rest) {
        ("GET", "login") => Ok(Page::Login { status: 200, error: None, next: local_next(query.get("next").map(String::as_str)) }),
        ("POST", "login" | "logout") => match to_bytes(body, MAX_FORM_BYTES).await {
            Ok(bytes) if rest == "login" => sign_in(hub, &parts, &bytes).await,
            Ok(bytes) => sign_out(hub, &parts.headers, &bytes).await,
            Err(_) => Err(HubError::TooLarge("the form is too large".into())),
        },
        ("GET", _) => match viewer {
            Ok(Some(viewer)) => route(hub, &viewer.project, rest, &query).await,
            Ok(None) => {
                let here = match parts.uri.query() {
                    Some(q) => format!("{path}?{q}"),
                    None => path.clone(),
                };
                Ok(Page::Redirect(format!("/ui/login?next={}", quote_segment(&here)), None))
            }
            Err(error) => Err(error),
        },
        _ => Err(HubError::NotFound(format!("no page for {method} {path}"))),
    };
    match result {
        Ok(Page::Html(markup)) => html_response(200, markup),
        Ok(Page::Redirect(to, cookie)) => redirect(&to, cookie),
        Ok(Page::Login { status, error, next }) => login_response(hub, &parts.headers, status, error.as_deref(), &next),
        Ok(Page::Forbidden(why)) => html_response(403, page("Refused", &[], html! { div.msg.error { (why) } })),
        Err(HubError::Unauthorized(why)) => {
            let mut response = login_response(hub, &parts.headers, 401, Some(&why), &local_next(Some(&path)));
            if parts.headers.contains_key("authorization") {
                response.headers_mut().insert("www-authenticate", HeaderValue::from_static("Basic realm=\"gateway-hub\""));
            }
            response
        }
        Err(error) => error_page(&error),
    }
}

/// The pages behind the sign-in, by path under `/ui/`.
async fn route(hub: &Hub, project: &str, rest: &str, query: &BTreeMap<String, String>) -> Result<Page, HubError> {
    let segments: Vec<String> = rest.split('/').map(unquote_plus).collect();
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    let markup = match s.as_slice() {
        [""] => worlds::list(hub, project).await?,
        ["w", slug] | ["w", slug, ""] => worlds::world(hub, project, slug).await?,
        ["w", slug, "v", version] => worlds::files(hub, project, slug, version).await?,
        ["w", slug, "v", version, "f", ..] => {
            // The file's path is the rest of the URL, each segment decoded.
            let file = segments[5..].join("/");
            worlds::file(hub, project, slug, version, &file).await?
        }
        ["w", slug, "diff"] => worlds::diff(hub, project, slug, query).await?,
        ["w", slug, "evaluations"] => evals::list(hub, project, slug, query).await?,
        ["w", slug, "evaluations", evaluation] => evals::evaluation(hub, project, slug, evaluation, query).await?,
        ["w", slug, "evaluations", evaluation, "samples", sample] => evals::transcript(hub, project, slug, evaluation, sample).await?,
        ["sessions"] => sessions::list(hub, project, query).await?,
        ["sessions", session] => sessions::session(hub, project, session, query).await?,
        _ => return Err(HubError::NotFound(format!("no page /ui/{rest}"))),
    };
    Ok(Page::Html(markup))
}

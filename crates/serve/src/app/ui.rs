//! The world's `[ui]`: a built single-page app's files served beside the API, with
//! their content types. A leaf of `app`, which keeps the admin paths out of it.

use crate::response::Response;
use crate::router::Router;
use crate::settings::types::UiSettings;
use std::path::Path;

/// The content type of a static file, by extension.
fn content_type(path: &std::path::Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "txt" => "text/plain; charset=utf-8",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

/// A file of the world's built UI (under `world_dir`) for a GET path: the asset
/// itself, or the app's index.html for paths under `entry` that no API route
/// answers (`prefix`: the vendor's base path, whose paths stay the API's).
pub(crate) fn file(world_dir: &Path, prefix: &str, router: &Router, ui: &UiSettings, path: &str) -> Option<Response> {
    let root = world_dir.join(&ui.static_dir);
    let relative = crate::router::unquote(path.trim_start_matches('/'));
    let safe = !relative.split('/').any(|p| p == ".." || p.starts_with('.'));
    let candidate = root.join(if relative.is_empty() { "index.html" } else { relative.as_str() });
    let candidate = if candidate.is_dir() { candidate.join("index.html") } else { candidate };
    let serve_file = |file: std::path::PathBuf| {
        std::fs::read(&file).ok().map(|bytes| Response {
            status: 200,
            body: None,
            headers: Vec::new(),
            file: Some((bytes, content_type(&file).to_string())),
        })
    };
    if safe && candidate.is_file() {
        return serve_file(candidate);
    }
    // Paths under the API's base prefix, or that an operation answers, stay the API's.
    let api_path = !prefix.is_empty() && path.starts_with(prefix);
    if path.starts_with(ui.entry.as_str()) && !api_path && router.route("GET", path, &[]).is_none() {
        return serve_file(root.join("index.html"));
    }
    None
}

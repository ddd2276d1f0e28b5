//! What makes a world's answers read as the vendor's own, declared:
//!
//! - **URLs**: rows seeded from the vendor carry its absolute URLs
//!   (`"url": "https://api.github.com/repos/octo/hello"`), and SDKs follow them
//!   (PyGithub edits an issue by PATCHing its `url`, and refuses a URL on another
//!   host). `[api] rewrite_urls = true` rewrites every answer's strings that start
//!   with the connector's `base_url` (or `rewrite_urls = ["https://…", …]`, each
//!   prefix listed) to the address the world is served at, on the way out; what is
//!   stored keeps the vendor's.
//! - **Computed fields** of created rows, from templates over the connector's
//!   `base_url`, the new row's fields and the path's arguments:
//!   `computed = { url = "{base_url}/repos/{owner}/{repo}/issues/{number}" }`.
//! - **Headers**: `[api] headers = {…}` on every answer, `[operations.api] headers`
//!   on one operation's (rate-limit headers, an `ETag`, …).
//! - **Constant answers**: `action = "static"` with `answer = '<JSON>'` (a rate-limit
//!   document, a meta endpoint).

use crate::response::Response;
use gateway_world::error::{fail, ContractError};
use gateway_world::json::{Map, Value};
use toml::Value as Toml;

/// `[api] rewrite_urls`: the vendor prefixes rewritten to the serving address.
pub fn parse_rewrite(api: &toml::Table, base_url: &str) -> Result<Vec<String>, ContractError> {
    let prefixes: Vec<String> = match api.get("rewrite_urls") {
        None | Some(Toml::Boolean(false)) => Vec::new(),
        Some(Toml::Boolean(true)) => vec![base_url.to_string()],
        Some(Toml::Array(items)) if items.iter().all(|i| i.as_str().is_some_and(|s| s.starts_with("http"))) => {
            items.iter().filter_map(Toml::as_str).map(str::to_string).collect()
        }
        Some(_) => {
            return fail("spec", "api.rewrite_urls is true (the connector's base_url) or a list of http(s) prefixes", "/api/rewrite_urls")
        }
    };
    // The longest prefix first, so that a more specific one wins.
    let mut prefixes: Vec<String> = prefixes.into_iter().map(|p| p.trim_end_matches('/').to_string()).filter(|p| !p.is_empty()).collect();
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
    Ok(prefixes)
}

/// A TOML scalar as the text a parameter or a header carries (`""` for anything else).
pub(crate) fn scalar_text(value: &Toml) -> String {
    match value {
        Toml::String(s) => s.clone(),
        Toml::Integer(n) => n.to_string(),
        Toml::Boolean(b) => b.to_string(),
        _ => String::new(),
    }
}

/// A `headers = {name = "value"}` table.
pub fn parse_headers(t: &toml::Table, location: &str) -> Result<Vec<(String, String)>, ContractError> {
    match t.get("headers") {
        None => Ok(Vec::new()),
        Some(Toml::Table(m))
            if m.iter().all(|(k, v)| {
                !k.is_empty()
                    && k.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
                    && matches!(v, Toml::String(_) | Toml::Integer(_))
            }) =>
        {
            Ok(m.iter().map(|(k, v)| (k.clone(), scalar_text(v))).collect())
        }
        Some(_) => fail("spec", "headers maps header names to values", format!("{location}/headers")),
    }
}

/// `computed = {field = "template"}` of a create.
pub fn parse_computed(t: &toml::Table, location: &str) -> Result<Vec<(String, String)>, ContractError> {
    match t.get("computed") {
        None => Ok(Vec::new()),
        Some(Toml::Table(m)) if m.iter().all(|(k, v)| !k.is_empty() && v.is_str()) => {
            Ok(m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        }
        Some(_) => fail("spec", "api.computed maps fields to templates such as \"{base_url}/items/{id}\"", format!("{location}/computed")),
    }
}

/// A template's `{name}`s filled: `base_url`, then the row's (dotted) field, then
/// the path argument of that name; an unknown name is left as written.
pub fn render(template: &str, base_url: &str, row: &Value, args: &[(String, String)]) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        let value = if name == "base_url" {
            Some(base_url.to_string())
        } else {
            crate::dotted::dig(row, name)
                .filter(|v| !matches!(v, Value::Null))
                .map(gateway_world::json::python_str)
                .or_else(|| args.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
        };
        match value {
            Some(value) => out.push_str(&value),
            None => {
                out.push('{');
                out.push_str(name);
                out.push('}');
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Every string of `value` that starts with one of `prefixes` (at a boundary: the
/// prefix is followed by `/`, `?`, `#` or nothing) rewritten onto `to`.
pub fn rewrite(value: &mut Value, prefixes: &[String], to: &str) {
    match value {
        Value::Str(text) => {
            for prefix in prefixes {
                if let Some(tail) = text.strip_prefix(prefix.as_str()) {
                    if tail.is_empty() || tail.starts_with(['/', '?', '#']) {
                        *text = format!("{to}{tail}");
                        return;
                    }
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite(item, prefixes, to)),
        Value::Object(map) => map.values_mut().for_each(|item| rewrite(item, prefixes, to)),
        _ => {}
    }
}

/// How one request's answer is dressed: URLs rewritten onto where it was served,
/// the world's and the operation's headers added.
#[derive(Debug, Clone, Default)]
pub struct Dress {
    /// (vendor prefixes, serving base) when the world rewrites URLs.
    pub rewrite: Option<(Vec<String>, String)>,
    /// Headers every answer of the operation carries (the first of a name wins).
    pub headers: Vec<(String, String)>,
    /// Members added to a successful answer that is an object (`ctx.add_fields` in
    /// the `before` gate).
    pub fields: Map,
}

impl Dress {
    /// What the `before` gate added: its headers win over the declared ones, its
    /// members go into successful object answers.
    pub fn add(&mut self, headers: Vec<(String, String)>, fields: Map) {
        self.headers.splice(0..0, headers);
        self.fields.extend(fields);
    }

    /// Apply to an answer (a header or member the answer set already is kept).
    pub fn apply(&self, response: &mut Response) {
        if let (true, Some(Value::Object(body))) = ((200..300).contains(&response.status), response.body.as_mut()) {
            for (name, value) in &self.fields {
                if !body.contains_key(name) {
                    body.insert(name.clone(), value.clone());
                }
            }
        }
        if let (Some((prefixes, to)), Some(body)) = (&self.rewrite, response.body.as_mut()) {
            rewrite(body, prefixes, to);
        }
        for (name, value) in &self.headers {
            if !response.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
                response.headers.push((name.clone(), value.clone()));
            }
        }
    }
}

/// The computed fields set on a new row.
pub fn compute(row: &mut Value, computed: &[(String, String)], base_url: &str, args: &[(String, String)]) {
    if computed.is_empty() {
        return;
    }
    let values: Vec<(String, String)> =
        computed.iter().map(|(field, template)| (field.clone(), render(template, base_url, row, args))).collect();
    if let Value::Object(map) = row {
        for (field, value) in values {
            crate::dotted::set_dotted(map, &field, Value::Str(value), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_world::json::object;

    #[test]
    fn templates_fill_from_base_row_then_args() {
        let row = object([("number", Value::Int(7)), ("owner", object([("login", Value::str("octo"))]))]);
        let args = vec![("repo".to_string(), "hello".to_string()), ("number".to_string(), "99".to_string())];
        assert_eq!(
            render("{base_url}/repos/{owner.login}/{repo}/issues/{number}{missing}", "https://api.github.com", &row, &args),
            "https://api.github.com/repos/octo/hello/issues/7{missing}"
        );
    }

    #[test]
    fn urls_are_rewritten_at_a_boundary_only() {
        let prefixes = parse_rewrite(&"rewrite_urls = true".parse().unwrap(), "https://api.github.com/").unwrap();
        let mut body = gateway_world::json::parse(
            r#"{"url": "https://api.github.com/repos/o/r", "items": [{"u": "https://api.github.com"}], "x": "https://api.github.community/z", "n": 1}"#,
        )
        .unwrap()
        .value;
        rewrite(&mut body, &prefixes, "http://127.0.0.1:9/s/abc");
        assert_eq!(
            gateway_world::json::canonical(&body),
            r#"{"items":[{"u":"http://127.0.0.1:9/s/abc"}],"n":1,"url":"http://127.0.0.1:9/s/abc/repos/o/r","x":"https://api.github.community/z"}"#
        );
        assert!(parse_rewrite(&"rewrite_urls = 3".parse().unwrap(), "x").is_err());
    }
}

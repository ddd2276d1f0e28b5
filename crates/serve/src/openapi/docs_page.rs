//! The `/docs` page: static HTML drawn from the served OpenAPI document (every
//! operation with its parameters, body, answers and examples), no script and nothing
//! fetched from elsewhere. A leaf of `openapi`.

use gateway_world::json::{canonical, python_str, Map, Value};

/// Text for HTML (the five characters that matter).
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

const PAGE_STYLE: &str = "body{font:15px system-ui,sans-serif;margin:2rem auto;max-width:64rem;padding:0 1rem;color:#222}\
h2{margin-top:2.2rem;border-bottom:1px solid #ccc}h3{margin:1.4rem 0 .4rem;font-size:16px}\
table{border-collapse:collapse;width:100%;margin:.3rem 0}td,th{border-bottom:1px solid #e4e4e4;padding:.3rem;text-align:left;vertical-align:top}\
code,pre{font-size:13px}pre{background:#f6f6f6;padding:.6rem;overflow:auto;max-height:18rem}\
.m{display:inline-block;min-width:4.5rem;font-weight:600}";

fn schema_text(schema: Option<&Value>) -> String {
    let Some(schema) = schema else { return String::new() };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        return reference.rsplit('/').next().unwrap_or(reference).to_string();
    }
    if schema.get("const").is_some() {
        return String::from("exactly");
    }
    let mut text = match schema.get("type") {
        Some(Value::Str(one)) => one.clone(),
        Some(Value::Array(many)) => many.iter().map(python_str).collect::<Vec<_>>().join(" | "),
        _ => String::from("any"),
    };
    if let Some(Value::Array(choices)) = schema.get("enum") {
        text.push_str(&format!(" ∈ {{{}}}", choices.iter().map(canonical).collect::<Vec<_>>().join(", ")));
    }
    text
}

/// Escaped text with its `code` spans (OpenAPI descriptions are CommonMark) as `<code>`.
fn prose(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in escape_html(text).split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(part);
            out.push_str("</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

fn pretty(value: &Value) -> String {
    gateway_world::json::dumps(
        value,
        gateway_world::json::DumpOptions { sort_keys: false, ensure_ascii: false, indent: Some(2), compact: false },
    )
}

/// The `/docs` page: every operation of the document with its parameters, body,
/// answers and examples. Static HTML, no script and nothing fetched from elsewhere.
pub fn docs_page(document: &Value) -> String {
    let title = document.get("info").and_then(|i| i.get("title")).map(python_str).unwrap_or_default();
    let description = document.get("info").and_then(|i| i.get("description")).map(python_str).unwrap_or_default();
    let server = document.get("servers").and_then(Value::as_array).and_then(|s| s.first()).and_then(|s| s.get("url")).map(python_str);
    let server = server.unwrap_or_default();
    let mut html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{0} API</title><style>{PAGE_STYLE}</style></head><body>\
         <h1>{0}</h1><p>{1}</p><p>Routes below are under <code>{2}</code> · the document: <a href=\"openapi.json\">openapi.json</a></p>",
        escape_html(&title),
        prose(&description),
        escape_html(&server),
    );
    let empty = Map::default();
    let paths = document.get("paths").and_then(Value::as_object).unwrap_or(&empty);
    for (path, methods) in paths {
        html.push_str(&format!("<h2><code>{}</code></h2>", escape_html(path)));
        for (method, entry) in methods.as_object().unwrap_or(&empty) {
            let name = entry.get("operationId").map(python_str).unwrap_or_default();
            let summary = entry.get("summary").map(python_str).unwrap_or_default();
            html.push_str(&format!(
                "<h3><span class=\"m\">{}</span> <code>{}</code> {}</h3>",
                escape_html(&method.to_uppercase()),
                escape_html(&name),
                prose(&summary)
            ));
            let parameters = entry.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default();
            if !parameters.is_empty() {
                html.push_str("<table><tr><th>parameter</th><th>in</th><th>type</th><th>meaning</th></tr>");
                for parameter in &parameters {
                    html.push_str(&format!(
                        "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                        escape_html(&parameter.get("name").map(python_str).unwrap_or_default()),
                        escape_html(&parameter.get("in").map(python_str).unwrap_or_default()),
                        escape_html(&schema_text(parameter.get("schema"))),
                        prose(&parameter.get("description").map(python_str).unwrap_or_default()),
                    ));
                }
                html.push_str("</table>");
            }
            if let Some(body) = entry.get("requestBody") {
                let media = body.get("content").and_then(Value::as_object).and_then(|c| c.values().next());
                html.push_str(&format!("<p>Body: {}</p>", prose(&body.get("description").map(python_str).unwrap_or_default())));
                if let Some(example) = media.and_then(|m| m.get("example")) {
                    html.push_str(&format!("<pre>{}</pre>", escape_html(&pretty(example))));
                }
            }
            html.push_str("<table><tr><th>status</th><th>answer</th><th>body</th></tr>");
            for (status, response) in entry.get("responses").and_then(Value::as_object).unwrap_or(&empty) {
                let media = response.get("content").and_then(Value::as_object).and_then(|c| c.values().next());
                let example = media.and_then(|m| m.get("example").or_else(|| m.get("schema").and_then(|s| s.get("const"))));
                html.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td><code>{}</code>{}</td></tr>",
                    escape_html(status),
                    prose(&response.get("description").map(python_str).unwrap_or_default()),
                    escape_html(&schema_text(media.and_then(|m| m.get("schema")))),
                    example.map(|e| format!("<pre>{}</pre>", escape_html(&pretty(e)))).unwrap_or_default(),
                ));
            }
            html.push_str("</table>");
        }
    }
    html.push_str("</body></html>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escaping_leaves_no_markup() {
        assert_eq!(escape_html("<script>a&\"b'</script>"), "&lt;script&gt;a&amp;&quot;b&#39;&lt;/script&gt;");
        assert_eq!(escape_html("get_ticket"), "get_ticket");
        assert_eq!(prose("rows of `<b>` & `x"), "rows of <code>&lt;b&gt;</code> &amp; <code>x</code>");
    }
}

//! A request's body as the world reads it: JSON, as the original reads every body, and —
//! only where the connector declares `[api] forms = true` — the forms vendors' clients
//! send (`application/x-www-form-urlencoded`, `multipart/form-data`), as an object of
//! their fields. Not the routing of the fields (`body_params`, in the app) nor any
//! checking against the contract.

use gateway_world::json::{Map, Value};

/// Python's `_json` of a request body: `{}` when empty, None when not JSON.
pub(crate) fn json_body(raw: &[u8]) -> Option<Value> {
    if raw.is_empty() {
        return Some(Value::Object(Map::default()));
    }
    let text = std::str::from_utf8(raw).ok()?;
    // Python's json.loads: a repeated member keeps its first position and last value;
    // a body that is JSON null reads as "not JSON", as the original's `_json`.
    gateway_world::json::parse_loads(text).ok().map(|p| p.value).filter(|v| !matches!(v, Value::Null))
}

/// A request's body: JSON (see [`json_body`]) whatever its declared type, as the original
/// reads it (`curl -d '{…}'` says it sends a form). A body that is not JSON is refused
/// (None), as the original refuses it — unless the world declares `forms` and the body
/// says it is one: then an object of its fields.
pub(crate) fn request_body(raw: &[u8], content_type: Option<&str>, forms: bool) -> Option<Value> {
    let json = json_body(raw);
    if json.is_some() || !forms {
        return json;
    }
    let content_type = content_type.unwrap_or("");
    let (kind, parameters) = content_type.split_once(';').unwrap_or((content_type, ""));
    match kind.trim().to_ascii_lowercase().as_str() {
        "application/x-www-form-urlencoded" => urlencoded(raw),
        "multipart/form-data" => multipart(raw, &parameter(parameters, "boundary")?),
        _ => None,
    }
}

/// A urlencoded form: its fields' text, the first of a repeated name, blank values kept.
fn urlencoded(raw: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(raw).ok()?;
    let mut fields = Map::default();
    for pair in text.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = crate::router::unquote_plus(name);
        if !fields.contains_key(&name) {
            fields.insert(name, Value::Str(crate::router::unquote_plus(value)));
        }
    }
    Some(Value::Object(fields))
}

/// A `multipart/form-data` body (RFC 7578): each part's text under its name, the first
/// of a repeated name. A file part (one with a `filename`) reads as
/// `{"filename", "content_type", "size", "content"}`, `content` its text when that is
/// UTF-8 (a world stores text; bytes are not JSON). None when the body is not well
/// formed: no closing delimiter, a part without a name or with unreadable headers.
///
/// Written here rather than with `multer` (the crate axum's multipart uses): `multer`
/// reads an async stream, while the body is already whole in memory and the route that
/// reads it is synchronous; over whole bytes the format is a split on the delimiter
/// and a few header lines per part.
fn multipart(raw: &[u8], boundary: &str) -> Option<Value> {
    if boundary.is_empty() || boundary.len() > 70 {
        return None;
    }
    let delimiter = format!("--{boundary}");
    // A part ends where "\r\n--boundary" begins: one searcher for every part.
    let part_end = format!("\r\n{delimiter}");
    let part_end = memchr::memmem::Finder::new(part_end.as_bytes());
    // The preamble before the first delimiter is ignored (RFC 2046 §5.1.1).
    let mut at = memchr::memmem::find(raw, delimiter.as_bytes())? + delimiter.len();
    let mut fields = Map::default();
    loop {
        let rest = &raw[at..];
        if rest.starts_with(b"--") {
            return Some(Value::Object(fields));
        }
        let rest = rest.strip_prefix(b"\r\n")?;
        let end = part_end.find(rest)?;
        let (name, value) = part(&rest[..end])?;
        fields.entry(name).or_insert(value);
        at += 2 + end + part_end.needle().len();
    }
}

/// One part: its name and value (see [`multipart`]). Its header lines are read
/// leniently, as vendors read them: a name may hold any character but a quote (a
/// client's field names are not checked against HTTP's token rules).
fn part(bytes: &[u8]) -> Option<(String, Value)> {
    let (head, content) = match memchr::memmem::find(bytes, b"\r\n\r\n") {
        Some(at) => (std::str::from_utf8(&bytes[..at]).ok()?, &bytes[at + 4..]),
        // A part with no headers at all has no name.
        None => return None,
    };
    let header = |wanted: &str| {
        head.split("\r\n").find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim().eq_ignore_ascii_case(wanted).then(|| value.trim())
        })
    };
    let disposition = header("content-disposition")?;
    let (kind, parameters) = disposition.split_once(';').unwrap_or((disposition, ""));
    if !kind.trim().eq_ignore_ascii_case("form-data") {
        return None;
    }
    let name = parameter(parameters, "name")?;
    let text = std::str::from_utf8(content).ok();
    let value = match parameter(parameters, "filename") {
        None => Value::Str(text?.to_string()),
        Some(filename) => {
            let mut file = Map::default();
            file.insert("filename".into(), Value::Str(filename));
            file.insert("content_type".into(), Value::str(header("content-type").unwrap_or("application/octet-stream")));
            file.insert("size".into(), Value::Int(content.len() as i64));
            if let Some(text) = text {
                file.insert("content".into(), Value::str(text));
            }
            Value::Object(file)
        }
    };
    Some((name, value))
}

/// A `; name=value` parameter of a header (RFC 9110 §5.6.6: a token or a quoted string),
/// its name matched without case.
fn parameter(parameters: &str, wanted: &str) -> Option<String> {
    let mut rest = parameters;
    loop {
        rest = rest.trim_start_matches([';', ' ', '\t']);
        if rest.is_empty() {
            return None;
        }
        let (name, after) = rest.split_once('=')?;
        let after = after.trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end?..])
        } else {
            let end = after.find(';').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        if name.trim().eq_ignore_ascii_case(wanted) {
            return Some(value);
        }
        rest = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORM: Option<&str> = Some("application/x-www-form-urlencoded");

    #[test]
    fn bodies_are_json_whatever_they_say() {
        // `curl -d '{…}'` declares a form: it is still JSON, declared forms or not.
        for forms in [false, true] {
            let json = request_body(br#"{"sku": "A-1"}"#, FORM, forms).unwrap();
            assert_eq!(json.get("sku").and_then(Value::as_str), Some("A-1"));
        }
        assert!(request_body(b"", None, false).is_some_and(|v| v.as_object().is_some_and(Map::is_empty)));
    }

    #[test]
    fn a_form_is_refused_unless_the_world_declares_forms() {
        assert!(request_body(b"channel=C1", FORM, false).is_none(), "the original's 400");
        let fields = request_body(b"channel=C1&text=hello+world&text=again&empty=", FORM, true).unwrap();
        assert_eq!(gateway_world::json::canonical(&fields), r#"{"channel":"C1","empty":"","text":"hello world"}"#);
        assert!(request_body(b"channel=C1", Some("application/json"), true).is_none(), "not JSON, not a form: refused");
    }

    #[test]
    fn multipart_parts_are_fields_and_files_say_what_they_are() {
        let body = b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"channels\"\r\n\r\nC1\r\n\
--XyZ\r\ncontent-disposition: form-data; name=channels\r\n\r\nC2\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"odd \x1b\x13 name\"\r\n\r\nkept\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a \\\"b\\\".txt\"\r\nContent-Type: text/plain\r\n\r\nline 1\r\nline 2\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"blob\"; filename=\"x.bin\"\r\n\r\n\xff\xfe\r\n--XyZ--\r\nepilogue";
        let fields = request_body(body, Some("multipart/form-data; charset=utf-8; boundary=\"XyZ\""), true).unwrap();
        assert_eq!(
            gateway_world::json::canonical(&fields),
            concat!(
                r#"{"blob":{"content_type":"application/octet-stream","filename":"x.bin","size":2},"channels":"C1","#,
                r#""file":{"content":"line 1\r\nline 2","content_type":"text/plain","filename":"a \"b\".txt","size":14},"#,
                r#""odd \u001b\u0013 name":"kept"}"#
            )
        );
        assert!(request_body(body, Some("multipart/form-data; boundary=XyZ"), false).is_none());
    }

    #[test]
    fn malformed_multipart_is_refused() {
        let cases: [&[u8]; 4] = [
            b"--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1",
            b"--b\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\n1\r\n--b--",
            b"--b\r\nContent-Disposition: form-data\r\n\r\n1\r\n--b--",
            b"no delimiter at all",
        ];
        for body in cases {
            assert!(request_body(body, Some("multipart/form-data; boundary=b"), true).is_none(), "{:?}", String::from_utf8_lossy(body));
        }
        assert!(request_body(b"--b--", Some("multipart/form-data"), true).is_none(), "no boundary");
        let empty = request_body(b"--b--\r\n", Some("multipart/form-data; boundary=b"), true).unwrap();
        assert_eq!(gateway_world::json::canonical(&empty), "{}");
    }
}

//! The few URL pieces capture needs, spelled as Python's `urllib.parse` spells them.

/// Characters `quote` never escapes (RFC 3986 unreserved).
fn unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-' | b'~')
}

/// `urllib.parse.quote(text, safe="")`: every byte but the unreserved ones escaped.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &byte in text.as_bytes() {
        if unreserved(byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `urllib.parse.quote_plus`: as [`quote`], with spaces as `+`.
pub fn quote_plus(text: &str) -> String {
    text.split(' ').map(quote).collect::<Vec<_>>().join("+")
}

/// `urllib.parse.urlencode(pairs)`.
pub fn urlencode(pairs: &[(String, String)]) -> String {
    pairs.iter().map(|(k, v)| format!("{}={}", quote_plus(k), quote_plus(v))).collect::<Vec<_>>().join("&")
}

/// `urllib.parse.unquote_plus`: `+` → space, `%XX` decoded, invalid UTF-8 replaced.
pub fn unquote_plus(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match text
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(value) => {
                    out.push(value);
                    i += 3;
                    continue;
                }
                None => out.push(b'%'),
            },
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `urllib.parse.parse_qsl(query)`: name/value pairs, blank values left out.
pub fn parse_qsl(query: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in query.split('&') {
        if part.is_empty() {
            continue;
        }
        let (name, value) = part.split_once('=').unwrap_or((part, ""));
        if value.is_empty() {
            continue;
        }
        out.push((unquote_plus(name), unquote_plus(value)));
    }
    out
}

/// The parts of an absolute URL: (scheme, netloc, path, query).
pub fn split(url: &str) -> (String, String, String, String) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split_once('#').map_or(rest, |(a, _)| a);
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (netloc, path) = match before_query.find('/') {
        Some(i) => (&before_query[..i], &before_query[i..]),
        None => (before_query, ""),
    };
    (scheme.to_ascii_lowercase(), netloc.to_string(), path.to_string(), query.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_python() {
        assert_eq!(quote("a b/c@d~e"), "a%20b%2Fc%40d~e");
        assert_eq!(urlencode(&[("q".into(), "a b&c".into()), ("é".into(), "1".into())]), "q=a+b%26c&%C3%A9=1");
        assert_eq!(parse_qsl("a=1&b=&c=x+y%21&d"), vec![("a".into(), "1".into()), ("c".into(), "x y!".into())]);
        assert_eq!(unquote_plus("%zz%4"), "%zz%4");
        assert_eq!(split("http://h:1/p/q?x=1#f"), ("http".into(), "h:1".into(), "/p/q".into(), "x=1".into()));
    }
}

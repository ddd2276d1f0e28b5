//! URL codecs spelled as Python's `urllib.parse` spells them (what the original's
//! clients and servers send and expect), byte for byte.

/// The bytes `quote` never escapes (RFC 3986 unreserved), as Python's `always_safe`.
fn unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-' | b'~')
}

/// `urllib.parse.quote(text, safe)`: UTF-8 percent-encoding of every byte but the
/// unreserved ones and those in `safe` (Python's default `safe` is `"/"`; pass it).
pub fn quote(text: &str, safe: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if unreserved(byte) || safe.as_bytes().contains(&byte) {
            out.push(byte as char);
        } else {
            push_escaped(&mut out, byte);
        }
    }
    out
}

/// `urllib.parse.quote(text, safe="")`: a path segment or query value, `/` escaped too.
pub fn quote_segment(text: &str) -> String {
    quote(text, "")
}

/// `urllib.parse.quote_plus(text, safe="")`: as [`quote`], with spaces as `+`.
pub fn quote_plus(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b' ' => out.push('+'),
            b if unreserved(b) => out.push(b as char),
            b => push_escaped(&mut out, b),
        }
    }
    out
}

fn push_escaped(out: &mut String, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(HEX[usize::from(byte >> 4)] as char);
    out.push(HEX[usize::from(byte & 15)] as char);
}

/// `urllib.parse.urlencode(pairs)`: `quote_plus` of each key and value.
pub fn urlencode(pairs: &[(String, String)]) -> String {
    pairs.iter().map(|(k, v)| format!("{}={}", quote_plus(k), quote_plus(v))).collect::<Vec<_>>().join("&")
}

/// `urllib.parse.unquote`: `%XX` decoded (an invalid escape stays as written), the
/// bytes read as UTF-8 with invalid sequences replaced.
pub fn unquote(text: &str) -> String {
    unquote_bytes(text.as_bytes(), false)
}

/// `urllib.parse.unquote_plus`: as [`unquote`], `+` first turned into a space.
pub fn unquote_plus(text: &str) -> String {
    unquote_bytes(text.as_bytes(), true)
}

fn unquote_bytes(bytes: &[u8], plus: bool) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() && hex_value(bytes[i + 1]).is_some() && hex_value(bytes[i + 2]).is_some() => {
                out.push(hex_value(bytes[i + 1]).unwrap_or(0) << 4 | hex_value(bytes[i + 2]).unwrap_or(0));
                i += 3;
                continue;
            }
            b'+' if plus => out.push(b' '),
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|d| d as u8)
}

/// A query string's pairs in order (`parse_qsl(query, keep_blank_values=True)`):
/// `&`-separated, each side `unquote_plus`ed, a pair without `=` a blank value.
/// The workspace's one query parser: the other spellings below are views of it.
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (unquote_plus(k), unquote_plus(v))
        })
        .collect()
}

/// `urllib.parse.parse_qsl(query)`: [`query_pairs`] without the blank values.
pub fn parse_qsl(query: &str) -> Vec<(String, String)> {
    query_pairs(query).into_iter().filter(|(_, v)| !v.is_empty()).collect()
}

/// `{k: v[0] for k, v in parse_qs(query).items()}`: [`parse_qsl`] with the first value
/// of a repeated name kept, in first-seen order.
pub fn parse_qs_first(query: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, value) in parse_qsl(query) {
        if !out.iter().any(|(k, _)| *k == name) {
            out.push((name, value));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_spellings_of_a_query() {
        let query = "a=1&b=&c&a=2&d+e=f%20g&&";
        let pairs = |v: Vec<(String, String)>| v.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";");
        assert_eq!(pairs(query_pairs(query)), "a=1;b=;c=;a=2;d e=f g");
        assert_eq!(pairs(parse_qsl(query)), "a=1;a=2;d e=f g");
        assert_eq!(pairs(parse_qs_first(query)), "a=1;d e=f g");
    }

    #[test]
    fn quote_keeps_unreserved_and_safe_bytes() {
        assert_eq!(quote("a b/c~é", ""), "a%20b%2Fc~%C3%A9");
        assert_eq!(quote("a b/c", "/"), "a%20b/c");
        assert_eq!(quote_plus("a b&c=d"), "a+b%26c%3Dd");
        assert_eq!(urlencode(&[("q".into(), "x y".into()), ("n".into(), "1+1".into())]), "q=x+y&n=1%2B1");
    }

    #[test]
    fn unquote_leaves_invalid_escapes_and_replaces_invalid_utf8() {
        assert_eq!(unquote("%41%4a%zz%4"), "AJ%zz%4");
        assert_eq!(unquote("a+b%20c"), "a+b c");
        assert_eq!(unquote_plus("a+b%20c"), "a b c");
        assert_eq!(unquote("%ff"), "\u{fffd}");
        assert_eq!(unquote("%C3%A9%"), "é%");
    }

    #[test]
    fn a_query_keeps_blank_values_and_order() {
        assert_eq!(
            query_pairs("b=2&a=&c&&d=x+y%21"),
            vec![("b".into(), "2".into()), ("a".into(), "".into()), ("c".into(), "".into()), ("d".into(), "x y!".into())]
        );
    }
}

//! The few URL pieces capture needs, spelled as Python's `urllib.parse` spells them
//! (the codecs themselves are `gateway_common::url`).

pub use gateway_common::url::{parse_qsl, quote_segment as quote, unquote_plus, urlencode};

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

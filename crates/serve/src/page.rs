//! Pages, cursors, envelopes and paging headers, shaped the vendor's way.

use crate::settings::types::{ApiSettings, Paging};
use base64::Engine as _;
use gateway_world::json::{Map, Value};

pub mod member;

pub use member::Member;

/// One page of rows and where its neighbours start.
#[derive(Debug, Clone)]
pub struct Page {
    /// The rows of this page.
    pub rows: Vec<Value>,
    /// How many rows matched in all.
    pub total: i64,
    /// Where this page starts.
    pub offset: i64,
    /// Page size.
    pub limit: i64,
    /// none | offset | cursor | page.
    pub style: String,
}

impl Page {
    /// A page holding every row (no paging).
    pub fn whole(rows: Vec<Value>) -> Page {
        let total = rows.len() as i64;
        Page { rows, total, offset: 0, limit: total, style: "none".into() }
    }

    /// Where the next page starts, if there is one.
    pub fn next_offset(&self) -> Option<i64> {
        // Python's ints do not wrap: a huge cursor has no next page, never a negative one.
        let following = self.offset.saturating_add(self.limit);
        (self.style != "none" && following < self.total).then_some(following)
    }

    /// Where the previous page starts, if there is one.
    pub fn previous_offset(&self) -> Option<i64> {
        (self.style != "none" && self.offset > 0).then(|| self.offset.saturating_sub(self.limit).max(0))
    }
}

/// Zero code points of Unicode decimal-digit (Nd) blocks Python's `int()` accepts.
const DIGIT_ZEROS: &[u32] = &[
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090,
    0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
    0xFF10, 0x104A0, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x16A60, 0x16B50,
    0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E950, 0x1FBF0,
];

fn decimal_digit(c: char) -> Option<u32> {
    let code = c as u32;
    DIGIT_ZEROS.iter().find(|zero| (**zero..**zero + 10).contains(&code)).map(|zero| code - zero)
}

/// Python's `int(text)` for a query value: whitespace, a sign, Unicode decimal
/// digits and single underscores between digits; None when Python would raise.
/// Magnitudes beyond i64 saturate (a page that large holds every row anyway).
pub fn python_int(text: &str) -> Option<i64> {
    let trimmed = text.trim_matches(|c: char| c.is_whitespace());
    let (negative, digits) = match trimmed.chars().next() {
        Some('-') => (true, &trimmed[1..]),
        Some('+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    let mut value: i64 = 0;
    for c in digits.chars().filter(|c| *c != '_') {
        let digit = decimal_digit(c)?;
        value = value.saturating_mul(10).saturating_add(i64::from(digit));
    }
    Some(if negative { -value } else { value })
}

fn int_param(value: Option<&str>, default: i64) -> i64 {
    match value {
        None => default,
        Some(text) => match python_int(text) {
            Some(n) if n >= 0 => n,
            _ => default,
        },
    }
}

/// The offset a cursor token encodes, as the original decodes it:
/// `int(urlsafe_b64decode(raw + padding))`, 0 for anything unreadable.
pub fn decode_cursor(raw: &str) -> i64 {
    let padding = "=".repeat((4 - raw.chars().count() % 4) % 4);
    let standard: String = raw
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            other => other,
        })
        .collect::<String>()
        + &padding;
    crate::router::python_b64decode(&standard).and_then(|b| String::from_utf8(b).ok()).and_then(|text| python_int(&text)).unwrap_or(0)
}

/// The cursor token for an offset.
pub fn encode_cursor(offset: i64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(offset.to_string())
}

/// The (offset, limit) a query asks for under `paging`; None for unpaged lists.
pub fn window(query: &[(String, String)], paging: &Paging) -> Option<(i64, i64)> {
    if paging.style == "none" {
        return None;
    }
    let get = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let limit = int_param(get(&paging.limit_param), paging.page_size);
    let offset = match paging.style.as_str() {
        "offset" => int_param(get(&paging.offset_param), 0),
        // Pages count from 1 (GitHub's `page` & `per_page`); page 0 is page 1.
        "page" => int_param(get(&paging.page_param), 1).max(1).saturating_sub(1).saturating_mul(limit.max(1)),
        _ => get(&paging.cursor_param).filter(|r| !r.is_empty()).map(decode_cursor).unwrap_or(0),
    };
    Some((offset, limit))
}

/// Python's `rows[start:stop]` bounds for a list of `len` items.
pub fn python_slice(len: i64, start: i64, stop: i64) -> (usize, usize) {
    let clamp = |i: i64| if i < 0 { i.saturating_add(len).max(0) } else { i.min(len) };
    let (a, b) = (clamp(start), clamp(stop));
    (a as usize, b.max(a) as usize)
}

/// One page of `rows` as the query asks (the original's `paginate`).
pub fn paginate(rows: Vec<Value>, query: &[(String, String)], paging: &Paging) -> Page {
    let Some((offset, limit)) = window(query, paging) else {
        return Page::whole(rows);
    };
    let total = rows.len() as i64;
    let (a, b) = python_slice(total, offset, offset.saturating_add(limit));
    let rows = rows.into_iter().skip(a).take(b - a).collect();
    Page { rows, total, offset, limit, style: paging.style.clone() }
}

/// The request's absolute URL (without query) and query, for page links.
pub type Link = (String, Vec<(String, String)>);

/// What a client is handed for a neighbouring page.
fn page_ref(page: &Page, offset: Option<i64>, paging: &Paging, link: Option<&Link>) -> Value {
    let Some(offset) = offset else {
        return if link.is_some() { Value::Null } else { Value::str("") };
    };
    let Some((base, query)) = link else {
        return Value::Str(encode_cursor(offset));
    };
    let mut following = query.clone();
    let mut set = |key: &str, value: String| match following.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = value,
        None => following.push((key.to_string(), value)),
    };
    match page.style.as_str() {
        "offset" => set(&paging.offset_param, offset.to_string()),
        "page" => set(&paging.page_param, (offset / page.limit.max(1) + 1).to_string()),
        _ => set(&paging.cursor_param, encode_cursor(offset)),
    }
    set(&paging.limit_param, page.limit.to_string());
    Value::Str(format!("{base}?{}", gateway_common::url::urlencode(&following)))
}

/// RFC 8288 `Link` as GitHub sends it: `<url>; rel="prev", <url>; rel="next",
/// <url>; rel="last", <url>; rel="first"` — the neighbours that exist, and the
/// first and last pages when not on them.
fn link_header(page: &Page, paging: &Paging, link: &Link) -> Option<String> {
    let limit = page.limit.max(1);
    let last = if page.total == 0 { 0 } else { (page.total - 1) / limit * limit };
    let mut rels: Vec<(&str, i64)> = Vec::new();
    if let Some(previous) = page.previous_offset() {
        rels.push(("prev", previous));
    }
    if let Some(next) = page.next_offset() {
        rels.push(("next", next));
    }
    if page.offset < last {
        rels.push(("last", last));
    }
    if page.offset > 0 {
        rels.push(("first", 0));
    }
    let parts: Vec<String> = rels
        .into_iter()
        .filter_map(|(rel, offset)| match page_ref(page, Some(offset), paging, Some(link)) {
            Value::Str(url) => Some(format!("<{url}>; rel=\"{rel}\"")),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The page's cursor/total/previous (and `link`: an RFC 8288 `Link` of its
/// neighbours) as response headers, when the vendor sends them.
pub fn page_headers(page: &Page, settings: &ApiSettings, paging: &Paging, link: Option<&Link>) -> Option<Vec<(String, String)>> {
    if settings.page_headers.is_empty() {
        return None;
    }
    let text = |v: Value| match v {
        Value::Str(s) if !s.is_empty() => Some(s),
        _ => None,
    };
    let mut out = Vec::new();
    for (key, header) in &settings.page_headers {
        let value = match key.as_str() {
            "cursor" => text(page_ref(page, page.next_offset(), paging, None)),
            "total" => Some(page.total.to_string()),
            "link" => link.and_then(|link| link_header(page, paging, link)),
            _ => text(page_ref(page, page.previous_offset(), paging, None)),
        };
        if let Some(value) = value {
            out.push((header.clone(), value));
        }
    }
    Some(out)
}

/// Rows in the vendor's envelope (or the bare array when the envelope key is empty).
pub fn wrap(page: Page, settings: &ApiSettings, envelope: Option<&str>, paging: &Paging, link: Option<&Link>) -> Value {
    wrap_with(page, settings, envelope, None, paging, link)
}

/// [`wrap`], with an operation's own "is there more" member (`more_key`) in place
/// of `[api]`'s.
pub fn wrap_with(
    page: Page,
    settings: &ApiSettings,
    envelope: Option<&str>,
    more: Option<&Member>,
    paging: &Paging,
    link: Option<&Link>,
) -> Value {
    let key = envelope.unwrap_or(&settings.envelope);
    if key.is_empty() {
        return Value::Array(page.rows);
    }
    let link = if settings.page_links { link } else { None };
    let next = page_ref(&page, page.next_offset(), paging, link);
    let has_more = page.next_offset().is_some();
    let previous = settings
        .previous_key
        .as_ref()
        .filter(|k| !k.is_empty())
        .map(|k| (k.clone(), page_ref(&page, page.previous_offset(), paging, link)));
    let total = page.total;
    let mut out = Map::default();
    out.insert(key.to_string(), Value::Array(page.rows));
    settings.hits_key.set(&mut out, Value::Int(total));
    more.unwrap_or(&settings.more_key).set(&mut out, Value::Bool(has_more));
    settings.cursor_key.set(&mut out, next);
    if let Some((k, v)) = previous {
        out.insert(k, v);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_offsets_saturate_instead_of_wrapping() {
        let page = Page { rows: Vec::new(), total: 10, offset: i64::MAX, limit: 25, style: "cursor".into() };
        assert_eq!(page.next_offset(), None);
        assert_eq!(page.previous_offset(), Some(i64::MAX - 25));
        assert_eq!(python_slice(10, i64::MIN, i64::MAX), (0, 10));
        assert_eq!(python_slice(10, i64::MAX, i64::MAX), (10, 10));
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_zero() {
        assert_eq!(encode_cursor(2), "Mg");
        assert_eq!(decode_cursor("Mg"), 2);
        assert_eq!(decode_cursor("%%%"), 0);
        assert_eq!(decode_cursor("MTA="), 10);
        assert_eq!(decode_cursor("2aM"), 3);
    }

    #[test]
    fn python_ints() {
        assert_eq!(python_int(" 12 "), Some(12));
        assert_eq!(python_int("1_0"), Some(10));
        assert_eq!(python_int("-4"), Some(-4));
        assert_eq!(python_int("1.5"), None);
        assert_eq!(python_int("_1"), None);
        assert_eq!(python_int("\u{ff13}"), Some(3));
        assert_eq!(python_int("\u{663}"), Some(3));
        assert_eq!(python_int("99999999999999999999999"), Some(i64::MAX));
    }

    #[test]
    fn slices_like_python() {
        assert_eq!(python_slice(10, -5, -3), (5, 7));
        assert_eq!(python_slice(3, 2, 10), (2, 3));
        assert_eq!(python_slice(3, 5, 7), (3, 3));
    }
}

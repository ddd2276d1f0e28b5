//! One row as the reader hands it over, what a sink answers, and the refusals'
//! wording (rows errors, Python's bytes repr).

use crate::error::{ContractError, Error, Result};
use crate::json::{parse_loads, ParseError, RangeProblem, Value};
use indexmap::IndexMap;

/// Entity names a rows stream named, with how many rows each held (an entity named
/// with `[]` is recorded with 0: a `replace` import empties it).
pub type Seen = IndexMap<String, usize, foldhash::fast::RandomState>;

/// One row as the reader hands it over.
#[derive(Debug)]
pub struct Row {
    /// The entity the row is for.
    pub entity: String,
    /// The row (any JSON value: non-objects are refused by the reader before this).
    pub value: Value,
    /// The first out-of-range number or lone surrogate in the row's text, if any.
    pub problem: Option<RangeProblem>,
    /// The first unpaired surrogate escape in the row's text (code unit), if any.
    pub lone_surrogate: Option<u32>,
}

/// A decoded value with what the range check found in its text.
pub(crate) struct Decoded {
    pub(crate) value: Value,
    pub(crate) problem: Option<RangeProblem>,
    pub(crate) surrogate: Option<u32>,
}

pub(super) fn decode(text: &str) -> Result<Decoded, ParseError> {
    let parsed = parse_loads(text)?;
    let surrogate = if parsed.problem.as_ref().is_some_and(|p| p.code == "json") { first_lone_surrogate(text) } else { None };
    Ok(Decoded { value: parsed.value, problem: parsed.problem, surrogate })
}

/// The first `\uXXXX` escape of an unpaired surrogate in JSON text.
fn first_lone_surrogate(text: &str) -> Option<u32> {
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u32> {
        if bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u') {
            u32::from_str_radix(std::str::from_utf8(bytes.get(at + 2..at + 6)?).ok()?, 16).ok()
        } else {
            None
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if let Some(code) = unit(i) {
                if (0xD800..0xDC00).contains(&code) && unit(i + 6).is_some_and(|low| (0xDC00..0xE000).contains(&low)) {
                    i += 12;
                    continue;
                }
                if (0xD800..0xE000).contains(&code) {
                    return Some(code);
                }
                i += 6;
                continue;
            }
            i += 2;
            continue;
        }
        i += 1;
    }
    None
}

/// Whether a sink wants more rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    More,
    /// Stop here (e.g. a row count cap was passed).
    Stop,
}

/// Called with the number of raw input bytes read since the last call.
pub type Progress<'a> = &'a dyn Fn(u64);

pub(super) fn rows_error(message: impl Into<String>, at: &str) -> Error {
    ContractError::new("rows", message, at).into()
}

/// The refusal of a non-empty input that holds no rows, saying why.
pub(super) fn no_rows(at: &str, why: &str) -> Error {
    rows_error(
        format!(
            "{at} holds no rows: {why} (expected {{\"<entity>\": [rows]}}, \
             JSONL lines {{\"entity\", \"row\"}}, or bare rows with --entity)"
        ),
        at,
    )
}

/// A plain error message (the original's `ValueError`/`OSError` text, printed as is).
pub fn plain(message: impl Into<String>) -> Error {
    Error::Io { message: message.into() }
}

/// Python's `repr()` of a bytes value (`b'th'`).
pub fn bytes_repr(bytes: &[u8]) -> String {
    let quote = if bytes.contains(&b'\'') && !bytes.contains(&b'"') { '"' } else { '\'' };
    let mut out = format!("b{quote}");
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b if b as char == quote => {
                out.push('\\');
                out.push(quote);
            }
            0x20..=0x7e => out.push(b as char),
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push(quote);
    out
}

pub(super) fn python_blank(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// One more row of `entity` (no allocation once the entity is known).
pub(super) fn count(seen: &mut Seen, entity: &str) {
    match seen.get_mut(entity) {
        Some(n) => *n += 1,
        None => {
            seen.insert(entity.to_string(), 1);
        }
    }
}

/// The sink rows are pushed into.
pub type Sink<'s> = dyn FnMut(Row) -> Result<Flow> + 's;

pub(super) fn as_row(value: Value, at: &str) -> Result<Value> {
    match value {
        Value::Object(_) => Ok(value),
        _ => Err(rows_error(format!("{at}: a row must be a JSON object"), at)),
    }
}

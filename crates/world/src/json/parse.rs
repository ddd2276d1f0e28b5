//! Parsing JSON text as Python's `json.loads` does, noting what `json_value` refuses.

use super::{Map, Value, SAFE_INTEGER};
use std::fmt::Write as _;

/// The deepest nesting of arrays and objects any JSON reader here accepts.
///
/// Past it we refuse as for text that is not JSON, where the original crashes
/// (`RecursionError` a little under 1,000 levels, less inside a server's stack) or
/// drops the connection. No contract, row or request body nests anywhere near it.
/// It bounds every recursive walk of a parsed value (parsing, validation, canonical
/// writing, hashing, drop), so none can overflow a thread's stack: at this depth the
/// deepest of them fits in tokio's 2 MiB worker stacks even in a debug build
/// (~2.7 KiB per level there; a tenth of that in release).
pub const MAX_DEPTH: usize = 256;

/// Why a document failed to parse.
#[derive(Debug, Clone, PartialEq)]
pub enum ParseError {
    /// Not JSON at all (Python's `JSONDecodeError`), with a short reason.
    Syntax(String),
    /// An object repeats a member name (the first such object to close wins).
    DuplicateKey(String),
}

/// A value the original's `json_value` check refuses, found while parsing.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeProblem {
    /// `numeric_range` or `json`.
    pub code: &'static str,
    /// The message the original gives.
    pub message: &'static str,
    /// JSON pointer (escaped) of the offending value, relative to the document.
    pub pointer: String,
}

/// A parsed document plus the first value the range check refuses, in document order.
#[derive(Debug)]
pub struct Parsed {
    /// The value.
    pub value: Value,
    /// The first out-of-range number or lone surrogate, if any.
    pub problem: Option<RangeProblem>,
}

/// Parse JSON text the way Python's `json.loads` does (strict mode).
pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    parse_with(text, false)
}

/// Parse JSON text as Python's plain `json.loads` does: a repeated member keeps its
/// first position and takes the last value, silently (rows files are read this way).
pub fn parse_loads(text: &str) -> Result<Parsed, ParseError> {
    parse_with(text, true)
}

fn parse_with(text: &str, duplicates: bool) -> Result<Parsed, ParseError> {
    thread_local! {
        // The members stack outlives a parse: rows are parsed by the million.
        static MEMBERS: std::cell::Cell<Vec<(String, Value)>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut parser = Parser::new(text, MEMBERS.take(), false);
    let value = parser.document(duplicates);
    let mut members = std::mem::take(&mut parser.members);
    members.clear();
    MEMBERS.set(members);
    Ok(Parsed { value: value?, problem: parser.problem })
}

/// The one value at the start of `text` as [`parse_loads`] reads it, and the number
/// of bytes it spans; None when it is not JSON, repeats a member or has a range
/// problem (a caller reading plain rows fast leaves those to the general path).
pub(crate) fn parse_plain_prefix(text: &str) -> Option<(Value, usize)> {
    let mut parser = Parser::new(text, Vec::new(), false);
    let value = parser.value().ok()?;
    (parser.problem.is_none() && parser.duplicate.is_none()).then_some((value, parser.pos))
}

/// Check a document exactly as [`parse`] does — same syntax, duplicate-member and
/// range verdicts — without building it, and return the top-level object's `id`
/// member when it is a string. Used where only a batch's id is needed from a file
/// that may hold hundreds of thousands of rows.
pub fn skim_id(text: &str) -> Result<(Option<RangeProblem>, Option<String>), ParseError> {
    let mut parser = Parser::new(text, Vec::new(), true);
    parser.document(false)?;
    Ok((parser.problem, parser.top_id))
}

/// Parse and require no range problems (for trusted inputs such as our own files).
pub fn parse_clean(text: &str) -> Option<Value> {
    parse(text).ok().filter(|p| p.problem.is_none()).map(|p| p.value)
}

/// A JSON object read with one large array member left in its text: a batch whose
/// `mutations` may hold a world's data is held as text (once) and its mutations are
/// parsed one at a time, never as one tree.
///
/// Read only text that [`skim_id`] (or [`parse`]) accepted: the verdicts on syntax,
/// repeated members and ranges are the whole document's, given before anything is
/// applied, exactly as for a document parsed whole.
#[derive(Debug)]
pub struct Spread<'t> {
    /// The document; when the member is an array, with that member an empty array
    /// (its items come from [`Spread::items`]).
    pub value: Value,
    /// The member's array text, `[` to `]`, when it was left unparsed.
    items: Option<&'t str>,
}

impl<'t> Spread<'t> {
    /// The left-out array's items in order, each parsed as it is reached (none when
    /// the member was not left out).
    pub fn items(&self) -> ArrayItems<'t> {
        ArrayItems { parser: self.items.map(|text| Parser::new(text, Vec::new(), false)), started: false }
    }

    /// Whether the member's items come from [`Spread::items`].
    pub fn is_spread(&self) -> bool {
        self.items.is_some()
    }
}

/// Parse `text` (one JSON document, already accepted) leaving the top-level object's
/// array member `key` as text: see [`Spread`].
pub fn spread<'t>(text: &'t str, key: &str) -> Result<Spread<'t>, ParseError> {
    let mut parser = Parser::new(text, Vec::new(), false);
    parser.skip_ws();
    if parser.bytes.get(parser.pos) != Some(&b'{') {
        return parser.document(false).map(|value| Spread { value, items: None });
    }
    parser.pos += 1;
    parser.depth = 1;
    let mut map = Map::default();
    let mut items = None;
    parser.skip_ws();
    if parser.bytes.get(parser.pos) == Some(&b'}') {
        return Ok(Spread { value: Value::Object(map), items: None });
    }
    loop {
        parser.skip_ws();
        let (name, _) = parser.string(true)?;
        parser.skip_ws();
        parser.pos += 1; // the ':' the accepted text holds
        parser.skip_ws();
        let value = if name == key && parser.bytes.get(parser.pos) == Some(&b'[') {
            // Checked, not built: skimming walks the array without keeping it.
            let start = parser.pos;
            parser.skim = true;
            parser.value()?;
            parser.skim = false;
            items = Some(&text[start..parser.pos]);
            Value::Array(Vec::new())
        } else {
            parser.value()?
        };
        map.insert(name, value);
        parser.skip_ws();
        match parser.bytes.get(parser.pos) {
            Some(b',') => parser.pos += 1,
            Some(b'}') => return Ok(Spread { value: Value::Object(map), items }),
            _ => return parser.err("Expecting ',' delimiter"),
        }
    }
}

/// The items of a [`Spread`]'s array, parsed one at a time.
pub struct ArrayItems<'t> {
    parser: Option<Parser<'t>>,
    started: bool,
}

impl Iterator for ArrayItems<'_> {
    type Item = Result<Value, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        let parser = self.parser.as_mut()?;
        if !self.started {
            self.started = true;
            parser.pos += 1; // '['
            parser.skip_ws();
            if parser.bytes.get(parser.pos) == Some(&b']') {
                self.parser = None;
                return None;
            }
        }
        parser.skip_ws();
        let item = parser.value();
        parser.skip_ws();
        match parser.bytes.get(parser.pos) {
            Some(b',') => parser.pos += 1,
            _ => self.parser = None,
        }
        Some(item)
    }
}

struct Parser<'a> {
    /// The document (runs between ASCII delimiters are sliced from it as text).
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    problem: Option<RangeProblem>,
    duplicate: Option<String>,
    /// Containers currently open.
    depth: usize,
    /// While a noted problem's pointer is being collected: the depth of the
    /// container that must add its part for the child it is parsing.
    pending: Option<usize>,
    /// The problem's pointer parts, innermost first (collected as the parse unwinds,
    /// so the hot path never builds a path).
    parts: Vec<String>,
    /// The members of the objects being parsed, innermost last: an object's map is
    /// built once it closes, at its exact size (no regrowth while it fills).
    members: Vec<(String, Value)>,
    /// Check the document without building it (see [`skim_id`]).
    skim: bool,
    /// While skimming: the top-level object's `id` member, when it is a string.
    top_id: Option<String>,
    /// While skimming: the string about to be read is that `id` (others are checked,
    /// not kept: no allocation for them).
    keep_string: bool,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, members: Vec<(String, Value)>, skim: bool) -> Parser<'a> {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            problem: None,
            duplicate: None,
            depth: 0,
            pending: None,
            parts: Vec::new(),
            members,
            skim,
            top_id: None,
            keep_string: false,
        }
    }

    /// One whole document: the value, nothing after it, the problem's pointer
    /// completed, and (unless `duplicates` are tolerated) no repeated member.
    fn document(&mut self, duplicates: bool) -> Result<Value, ParseError> {
        self.skip_ws();
        let value = self.value()?;
        if let Some(problem) = &mut self.problem {
            for part in self.parts.iter().rev() {
                problem.pointer.push('/');
                problem.pointer.push_str(&escape_pointer(part));
            }
        }
        self.skip_ws();
        if self.pos != self.bytes.len() {
            return Err(ParseError::Syntax("Extra data".into()));
        }
        match self.duplicate.take().filter(|_| !duplicates) {
            Some(name) => Err(ParseError::DuplicateKey(name)),
            None => Ok(value),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// Open one more container, refusing past [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), ParseError> {
        if self.depth >= MAX_DEPTH {
            return self.err("Nesting too deep");
        }
        self.depth += 1;
        Ok(())
    }

    fn err<T>(&self, what: &str) -> Result<T, ParseError> {
        Err(ParseError::Syntax(format!("{what} at char {}", self.pos)))
    }

    /// Note the first problem; `at_container` places it at the open container itself
    /// (a key), else at the value being parsed.
    fn note(&mut self, code: &'static str, message: &'static str, at_container: bool) {
        if self.problem.is_none() {
            self.problem = Some(RangeProblem { code, message, pointer: String::new() });
            self.pending = Some(if at_container { self.depth - 1 } else { self.depth });
        }
    }

    /// After a child returns: add its part if the noted problem is inside it.
    fn unwind(&mut self, part: impl FnOnce() -> String) {
        if self.depth > 0 && self.pending == Some(self.depth) {
            self.parts.push(part());
            self.pending = Some(self.depth - 1);
        }
    }

    fn literal(&mut self, word: &str) -> bool {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.bytes.get(self.pos) {
            None => self.err("Expecting value"),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => {
                let build = !self.skim || std::mem::take(&mut self.keep_string);
                let (text, lone) = self.string(build)?;
                if lone {
                    self.note("json", "Unpaired Unicode surrogate is unsupported", false);
                }
                Ok(Value::Str(text))
            }
            Some(b'n') if self.literal("null") => Ok(Value::Null),
            Some(b't') if self.literal("true") => Ok(Value::Bool(true)),
            Some(b'f') if self.literal("false") => Ok(Value::Bool(false)),
            Some(b'N') if self.literal("NaN") => self.float(f64::NAN),
            Some(b'I') if self.literal("Infinity") => self.float(f64::INFINITY),
            Some(b'-') if self.bytes[self.pos..].starts_with(b"-Infinity") => {
                self.pos += 9;
                self.float(f64::NEG_INFINITY)
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.err("Expecting value"),
        }
    }

    fn float(&mut self, value: f64) -> Result<Value, ParseError> {
        self.note("numeric_range", NUMERIC_RANGE_MESSAGE, false);
        Ok(Value::Float(value))
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let Some((end, is_float)) = number_end(self.bytes, start) else {
            // Past a lone minus sign, as Python's scanner reports it.
            self.pos += usize::from(self.bytes[start] == b'-');
            return self.err("Expecting value");
        };
        self.pos = end;
        let text = &self.text[start..end];
        let value = if is_float {
            Value::Float(text.parse::<f64>().unwrap_or(f64::INFINITY))
        } else {
            match text.parse::<i64>() {
                Ok(n) => Value::Int(n),
                Err(_) => Value::Float(text.parse::<f64>().unwrap_or(f64::INFINITY)),
            }
        };
        if !in_range(&value) {
            self.note("numeric_range", NUMERIC_RANGE_MESSAGE, false);
        }
        Ok(value)
    }

    /// Returns the decoded text and whether a lone surrogate was replaced.
    /// With `build` false an unescaped string is checked but not copied out.
    fn string(&mut self, build: bool) -> Result<(String, bool), ParseError> {
        self.pos += 1;
        let mut out = String::new();
        let mut lone = false;
        let mut first = true;
        loop {
            let run_start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // ASCII delimiters are char boundaries: the run is a slice of the text.
            let run = &self.text[run_start..self.pos];
            if first && self.bytes.get(self.pos) == Some(&b'"') {
                // No escapes (the common case): one allocation of the exact size.
                self.pos += 1;
                return Ok((if build { run.to_string() } else { String::new() }, false));
            }
            first = false;
            out.push_str(run);
            match self.bytes.get(self.pos) {
                None => return self.err("Unterminated string starting"),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok((out, lone));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escape = self.bytes.get(self.pos).copied();
                    self.pos += 1;
                    match escape {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\u{8}'),
                        Some(b'f') => out.push('\u{c}'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => {
                            let high = self.hex4()?;
                            if (0xD800..0xDC00).contains(&high)
                                && self.bytes.get(self.pos) == Some(&b'\\')
                                && self.bytes.get(self.pos + 1) == Some(&b'u')
                            {
                                let save = self.pos;
                                self.pos += 2;
                                let low = self.hex4()?;
                                if (0xDC00..0xE000).contains(&low) {
                                    let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                                    out.push(char::from_u32(code).expect("valid pair"));
                                    continue;
                                }
                                self.pos = save;
                            }
                            match char::from_u32(high) {
                                Some(c) => out.push(c),
                                None => {
                                    lone = true;
                                    out.push('\u{FFFD}');
                                }
                            }
                        }
                        _ => return self.err("Invalid \\escape"),
                    }
                }
                Some(_) => return self.err("Invalid control character"),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let digits = self.bytes.get(self.pos..self.pos + 4).ok_or_else(|| ParseError::Syntax("Invalid \\uXXXX escape".into()))?;
        let text = std::str::from_utf8(digits).map_err(|_| ParseError::Syntax("Invalid \\uXXXX escape".into()))?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return self.err("Invalid \\uXXXX escape");
        }
        self.pos += 4;
        Ok(u32::from_str_radix(text, 16).expect("hex digits"))
    }

    fn array(&mut self) -> Result<Value, ParseError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        self.enter()?;
        let mut count = 0usize;
        loop {
            self.skip_ws();
            let item = self.value()?;
            let index = count;
            count += 1;
            self.unwind(|| index.to_string());
            if !self.skim {
                items.push(item);
            }
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(Value::Array(items));
                }
                _ => return self.err("Expecting ',' delimiter"),
            }
        }
    }

    fn object(&mut self) -> Result<Value, ParseError> {
        self.pos += 1;
        // Only skimming uses it (building, the map itself finds repeats).
        let mut seen: std::collections::HashSet<String, foldhash::fast::RandomState> = Default::default();
        let mut duplicate: Option<String> = None;
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Object(Map::default()));
        }
        self.enter()?;
        let base = self.members.len();
        loop {
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return self.err("Expecting property name enclosed in double quotes");
            }
            let (key, lone) = self.string(true)?;
            if lone {
                // Keys are checked at the object's own path, before their value.
                self.note("json", "Unpaired Unicode surrogate is unsupported", true);
            }
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b':') {
                return self.err("Expecting ':' delimiter");
            }
            self.pos += 1;
            self.skip_ws();
            self.keep_string = self.skim && self.depth == 1 && key == "id";
            let value = self.value()?;
            self.keep_string = false;
            self.unwind(|| key.clone());
            if self.skim {
                if self.depth == 1 && key == "id" {
                    self.top_id = value.as_str().map(str::to_string);
                }
                if seen.contains(&key) {
                    duplicate.get_or_insert_with(|| key.clone());
                } else {
                    seen.insert(key);
                }
            } else {
                self.members.push((key, value));
            }
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    let mut map = Map::with_capacity_and_hasher(self.members.len() - base, Default::default());
                    for (key, value) in self.members.drain(base..) {
                        match map.entry(key) {
                            indexmap::map::Entry::Occupied(mut slot) => {
                                // Python keeps the first position and the last value.
                                duplicate.get_or_insert_with(|| slot.key().clone());
                                *slot.get_mut() = value;
                            }
                            indexmap::map::Entry::Vacant(slot) => {
                                slot.insert(value);
                            }
                        }
                    }
                    if let Some(name) = duplicate {
                        // Python's object_pairs_hook runs when an object closes:
                        // the innermost object that closes first is reported.
                        self.duplicate.get_or_insert(name);
                    }
                    return Ok(Value::Object(map));
                }
                _ => return self.err("Expecting ',' delimiter"),
            }
        }
    }
}

/// Where the JSON number starting at `start` ends, and whether it is a float (has a
/// fraction or an exponent); None when no number starts there. A `.` or `e` not
/// followed by digits ends the number before it, as in Python's scanner.
pub(crate) fn number_end(bytes: &[u8], start: usize) -> Option<(usize, bool)> {
    let digits = |mut pos: usize| {
        while let Some(b'0'..=b'9') = bytes.get(pos) {
            pos += 1;
        }
        pos
    };
    let mut pos = start + usize::from(bytes.get(start) == Some(&b'-'));
    pos = match bytes.get(pos)? {
        b'0' => pos + 1,
        b'1'..=b'9' => digits(pos),
        _ => return None,
    };
    let mut is_float = false;
    if bytes.get(pos) == Some(&b'.') && matches!(bytes.get(pos + 1), Some(b'0'..=b'9')) {
        is_float = true;
        pos = digits(pos + 1);
    }
    if let Some(b'e' | b'E') = bytes.get(pos) {
        let mut probe = pos + 1;
        if let Some(b'+' | b'-') = bytes.get(probe) {
            probe += 1;
        }
        if matches!(bytes.get(probe), Some(b'0'..=b'9')) {
            is_float = true;
            pos = digits(probe);
        }
    }
    Some((pos, is_float))
}

/// The message of a `numeric_range` refusal.
pub const NUMERIC_RANGE_MESSAGE: &str = "Numbers must be finite and within ±(2^53-1)";

fn in_range(value: &Value) -> bool {
    match value {
        Value::Int(n) => n.unsigned_abs() <= SAFE_INTEGER as u64,
        Value::Float(f) => f.is_finite() && f.abs() <= SAFE_INTEGER as f64,
        _ => true,
    }
}

/// The first value outside the accepted range in document order (the original's
/// `json_value` walk), as (code, message, pointer). Lone surrogates cannot occur in
/// a built [`Value`], so only numbers are checked here.
pub fn range_problem(value: &Value) -> Option<String> {
    fn walk(value: &Value, path: &mut String) -> bool {
        match value {
            Value::Int(_) | Value::Float(_) => !in_range(value),
            Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
                let len = path.len();
                let _ = write!(path, "/{i}");
                let bad = walk(item, path);
                if !bad {
                    path.truncate(len);
                }
                bad
            }),
            Value::Object(map) => map.iter().any(|(k, item)| {
                let len = path.len();
                path.push('/');
                path.push_str(&escape_pointer(k));
                let bad = walk(item, path);
                if !bad {
                    path.truncate(len);
                }
                bad
            }),
            _ => false,
        }
    }
    let mut path = String::new();
    walk(value, &mut path).then_some(path)
}

/// Escape one JSON-pointer part (`~` → `~0`, `/` → `~1`).
pub fn escape_pointer(part: &str) -> String {
    if part.contains(['~', '/']) {
        part.replace('~', "~0").replace('/', "~1")
    } else {
        part.to_string()
    }
}

//! JSON values as the original engine sees them, and the exact text it writes.
//!
//! The original is Python: its `json` module keeps integers and floats apart
//! (`1` vs `1.0`), accepts `NaN`/`Infinity` tokens, keeps lone surrogates and
//! keeps object members in document order. Hashes and generated files depend on
//! those details, so this module has its own small parser and writers instead of
//! serde_json (which collapses duplicates, rejects lone surrogates and formats
//! floats differently).

use indexmap::IndexMap;
use std::fmt::Write as _;

/// An ordered JSON object: members keep the order they were parsed or inserted in.
pub type Map = IndexMap<String, Value>;

/// A JSON value with Python's distinctions (integer vs float).
#[derive(Debug, Clone, Default)]
pub enum Value {
    /// `null`
    #[default]
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer literal (Python `int`). Literals beyond `i64` parse as [`Value::Float`]
    /// of the same magnitude: they are outside the accepted range either way.
    Int(i64),
    /// A float literal (Python `float`), including `NaN` and infinities.
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, in member order.
    Object(Map),
}

/// The largest magnitude a number may have: 2^53 − 1.
pub const SAFE_INTEGER: i64 = (1 << 53) - 1;

impl Value {
    /// The object's map, if this is an object.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }
    /// The array's items, if this is an array.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }
    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }
    /// A member of an object (None for non-objects).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|map| map.get(key))
    }
    /// True for integers and floats (never booleans).
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Float(_))
    }
    /// The number as f64 (integers within ±2^53 convert exactly).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(n) => Some(*n as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
    /// The JSON Schema type name of this value as the original names it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "number",
            Value::Str(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    /// Shorthand for a string value.
    pub fn str(text: impl Into<String>) -> Value {
        Value::Str(text.into())
    }
}

/// JSON equality as the original's `equal`: numbers by value (`1 == 1.0`), booleans
/// distinct from numbers, objects by member set, arrays element-wise.
pub fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (a, b) if a.is_number() && b.is_number() => numbers_equal(a, b),
        (Value::Str(a), Value::Str(b)) => a == b,
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_equal(x, y)),
        (Value::Object(a), Value::Object(b)) => a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| json_equal(v, w))),
        _ => false,
    }
}

/// Python `==` between two values: like [`json_equal`] except that `True == 1` and
/// `False == 0.0`, as Python's bool is an int.
pub fn python_equal(left: &Value, right: &Value) -> bool {
    let as_num = |v: &Value| match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        other => other.as_f64(),
    };
    match (left, right) {
        (Value::Bool(_), Value::Int(_) | Value::Float(_)) | (Value::Int(_) | Value::Float(_), Value::Bool(_)) => {
            as_num(left) == as_num(right)
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| python_equal(x, y)),
        (Value::Object(a), Value::Object(b)) => a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| python_equal(v, w))),
        _ => json_equal(left, right),
    }
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        _ => a.as_f64() == b.as_f64(),
    }
}

// ------------------------------------------------------------------ parsing

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
    let mut parser = Parser {
        bytes: text.as_bytes(),
        pos: 0,
        problem: None,
        duplicate: None,
        depth: 0,
        pending: None,
        parts: Vec::new(),
        skim: false,
        top_id: None,
    };
    let value = parser.document(duplicates)?;
    Ok(Parsed { value, problem: parser.problem })
}

/// Check a document exactly as [`parse`] does — same syntax, duplicate-member and
/// range verdicts — without building it, and return the top-level object's `id`
/// member when it is a string. Used where only a batch's id is needed from a file
/// that may hold hundreds of thousands of rows.
pub fn skim_id(text: &str) -> Result<(Option<RangeProblem>, Option<String>), ParseError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        pos: 0,
        problem: None,
        duplicate: None,
        depth: 0,
        pending: None,
        parts: Vec::new(),
        skim: true,
        top_id: None,
    };
    parser.document(false)?;
    Ok((parser.problem, parser.top_id))
}

/// Parse and require no range problems (for trusted inputs such as our own files).
pub fn parse_clean(text: &str) -> Option<Value> {
    parse(text).ok().filter(|p| p.problem.is_none()).map(|p| p.value)
}

struct Parser<'a> {
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
    /// Check the document without building it (see [`skim_id`]).
    skim: bool,
    /// While skimming: the top-level object's `id` member, when it is a string.
    top_id: Option<String>,
}

impl Parser<'_> {
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
                let (text, lone) = self.string()?;
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
        if self.bytes[self.pos] == b'-' {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
                    self.pos += 1;
                }
            }
            _ => return self.err("Expecting value"),
        }
        let mut is_float = false;
        if self.bytes.get(self.pos) == Some(&b'.') && matches!(self.bytes.get(self.pos + 1), Some(b'0'..=b'9')) {
            is_float = true;
            self.pos += 1;
            while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            let mut probe = self.pos + 1;
            if let Some(b'+' | b'-') = self.bytes.get(probe) {
                probe += 1;
            }
            if matches!(self.bytes.get(probe), Some(b'0'..=b'9')) {
                is_float = true;
                self.pos = probe;
                while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
                    self.pos += 1;
                }
            }
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).expect("ascii digits");
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
    fn string(&mut self) -> Result<(String, bool), ParseError> {
        self.pos += 1;
        let mut out = String::new();
        let mut lone = false;
        loop {
            let run_start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The input is a &str, so any run of bytes between ASCII delimiters is valid UTF-8.
            out.push_str(std::str::from_utf8(&self.bytes[run_start..self.pos]).expect("utf-8 run"));
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
        self.depth += 1;
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
        let mut map = Map::new();
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut duplicate: Option<String> = None;
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        self.depth += 1;
        loop {
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return self.err("Expecting property name enclosed in double quotes");
            }
            let (key, lone) = self.string()?;
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
            let value = self.value()?;
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
                if map.contains_key(&key) {
                    duplicate.get_or_insert_with(|| key.clone());
                }
                map.insert(key, value);
            }
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
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

// ------------------------------------------------------------------ writing

/// How [`dumps`] formats, mirroring the arguments of Python's `json.dumps`.
#[derive(Debug, Clone, Copy)]
pub struct DumpOptions {
    /// Sort object members by key.
    pub sort_keys: bool,
    /// Escape every non-ASCII character as `\uXXXX`.
    pub ensure_ascii: bool,
    /// Pretty-print with this many spaces per level (`None` = one line).
    pub indent: Option<usize>,
    /// Compact separators `,` and `:` (else Python's default `, ` and `: `).
    pub compact: bool,
}

impl DumpOptions {
    /// `sort_keys=True, ensure_ascii=False, separators=(",", ":")`: the canonical form.
    pub const CANONICAL: DumpOptions = DumpOptions { sort_keys: true, ensure_ascii: false, indent: None, compact: true };
    /// `json.dumps(x, sort_keys=True)`: the CLI's one-line output.
    pub const CLI: DumpOptions = DumpOptions { sort_keys: true, ensure_ascii: true, indent: None, compact: false };
    /// `json.dumps(x, indent=2)`: pretty, ASCII-escaped, member order kept.
    pub const PRETTY: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: true, indent: Some(2), compact: false };
}

/// Python's `json.dumps(value, **options)`.
pub fn dumps(value: &Value, options: DumpOptions) -> String {
    let mut out = String::new();
    write_value(&mut out, value, options, 0);
    out
}

/// The canonical JSON text the original hashes and stores.
pub fn canonical(value: &Value) -> String {
    dumps(value, DumpOptions::CANONICAL)
}

/// [`canonical`] into a string of `capacity` bytes (its length when known: one allocation).
pub fn canonical_sized(value: &Value, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    write_value(&mut out, value, DumpOptions::CANONICAL, 0);
    out
}

/// Canonical text plus a newline, as bytes: what generated JSON files hold.
pub fn encoded(value: &Value) -> Vec<u8> {
    let mut text = canonical(value);
    text.push('\n');
    text.into_bytes()
}

fn write_value(out: &mut String, value: &Value, options: DumpOptions, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(f) => out.push_str(&python_float_repr(*f)),
        Value::Str(text) => write_string(out, text, options.ensure_ascii),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_separator(options));
                }
                newline(out, options, level + 1);
                write_value(out, item, options, level + 1);
            }
            newline(out, options, level);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if options.sort_keys {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(item_separator(options));
                }
                newline(out, options, level + 1);
                write_string(out, key, options.ensure_ascii);
                out.push_str(if options.compact { ":" } else { ": " });
                write_value(out, item, options, level + 1);
            }
            newline(out, options, level);
            out.push('}');
        }
    }
}

fn item_separator(options: DumpOptions) -> &'static str {
    // With an indent Python's default item separator is "," (the newline follows).
    if options.compact || options.indent.is_some() {
        ","
    } else {
        ", "
    }
}

fn newline(out: &mut String, options: DumpOptions, level: usize) {
    if let Some(width) = options.indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', width * level));
    }
}

/// Write a JSON string literal as Python's encoder does.
pub fn write_string(out: &mut String, text: &str, ensure_ascii: bool) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if ensure_ascii && (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: shortest round-trip digits, always marked as a float.
pub fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // `{:e}` gives the shortest round-trip digits as d[.ddd]e<exp>.
    let sci = format!("{value:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("exponent");
    let exponent: i32 = exponent.parse().expect("integer exponent");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(&digits);
        } else {
            let point = exponent as usize + 1;
            if digits.len() <= point {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', point - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs());
    }
    out
}

/// Python's `str()` of a JSON value as it appears in text (`True`, `None`, `1.0`,
/// lists and dicts in repr form).
pub fn python_str(value: &Value) -> String {
    match value {
        Value::Str(text) => text.clone(),
        other => python_repr(other),
    }
}

/// Python's `repr()` of a JSON value.
pub fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(n) => n.to_string(),
        Value::Float(f) => match python_float_repr(*f).as_str() {
            "NaN" => "nan".into(),
            "Infinity" => "inf".into(),
            "-Infinity" => "-inf".into(),
            text => text.into(),
        },
        Value::Str(text) => {
            let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
            let mut out = String::new();
            out.push(quote);
            for c in text.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                        let _ = write!(out, "\\x{:02x}", c as u32);
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        }
        Value::Array(items) => format!("[{}]", items.iter().map(python_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter().map(|(k, v)| format!("{}: {}", python_repr(&Value::Str(k.clone())), python_repr(v))).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Build an object from pairs (helper for literal construction).
pub fn object<I, K>(pairs: I) -> Value
where
    I: IntoIterator<Item = (K, Value)>,
    K: Into<String>,
{
    Value::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        let cases = [
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (123456789.123, "123456789.123"),
            (1500000000000000.0, "1500000000000000.0"),
            (1e-05, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (37.0, "37.0"),
            (2.5, "2.5"),
            (1e22, "1e+22"),
        ];
        for (value, want) in cases {
            assert_eq!(python_float_repr(value), want, "{value}");
        }
    }

    #[test]
    fn canonical_sorts_and_escapes() {
        let parsed = parse(r#"{"b": [1, 1.0, "é\u2028/"], "a": {"z": null, "y": true}, "c": "\u0001\u007f"}"#).unwrap();
        assert_eq!(canonical(&parsed.value), "{\"a\":{\"y\":true,\"z\":null},\"b\":[1,1.0,\"é\u{2028}/\"],\"c\":\"\\u0001\u{7f}\"}");
        assert_eq!(
            dumps(&parsed.value, DumpOptions::CLI),
            "{\"a\": {\"y\": true, \"z\": null}, \"b\": [1, 1.0, \"\\u00e9\\u2028/\"], \"c\": \"\\u0001\\u007f\"}"
        );
    }

    #[test]
    fn pretty_matches_python_indent() {
        let parsed = parse(r#"{"a": [1, {"b": []}], "c": {}}"#).unwrap();
        assert_eq!(dumps(&parsed.value, DumpOptions::PRETTY), "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {}\n}");
    }

    #[test]
    fn duplicate_keys_report_innermost_closing_first() {
        assert_eq!(parse(r#"{"a": 1, "b": {"c": 1, "c": 2}, "a": 2}"#).unwrap_err(), ParseError::DuplicateKey("c".into()));
    }

    #[test]
    fn range_problems_are_found_in_document_order() {
        let parsed = parse(r#"{"a": [1, 9007199254740992], "b": NaN}"#).unwrap();
        assert_eq!(parsed.problem.unwrap().pointer, "/a/1");
        let parsed = parse(r#"{"x/y": "\ud800", "z": 1e400}"#).unwrap();
        let problem = parsed.problem.unwrap();
        assert_eq!((problem.code, problem.pointer.as_str()), ("json", "/x~1y"));
        assert!(parse("9007199254740991").unwrap().problem.is_none());
        assert!(parse("-9007199254740992").unwrap().problem.is_some());
    }

    #[test]
    fn syntax_errors_are_refused() {
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "01", "\"\t\"", "1 2", "\u{feff}{}"] {
            assert!(matches!(parse(bad), Err(ParseError::Syntax(_))), "{bad:?}");
        }
    }

    #[test]
    fn skimming_gives_the_same_verdicts_and_the_id() {
        for text in
            [r#"{"id": "b1", "mutations": [{"a": 1}]}"#, r#"{"a": {"b": 1, "b": 2}}"#, r#"{"x": [1, NaN]}"#, "{", r#"[{"id": "no"}]"#]
        {
            let skimmed = skim_id(text);
            match parse(text) {
                Ok(parsed) => {
                    let (problem, id) = skimmed.unwrap();
                    assert_eq!(problem, parsed.problem, "{text}");
                    assert_eq!(id, parsed.value.get("id").and_then(Value::as_str).map(str::to_string));
                }
                Err(error) => assert_eq!(skimmed.unwrap_err(), error, "{text}"),
            }
        }
    }

    #[test]
    fn surrogate_pairs_decode() {
        assert_eq!(parse(r#""\ud83d\ude00""#).unwrap().value.as_str(), Some("😀"));
        let mut out = String::new();
        write_string(&mut out, "😀", true);
        assert_eq!(out, r#""\ud83d\ude00""#);
    }

    #[test]
    fn python_repr_of_values() {
        let parsed = parse(r#"[true, null, 1.0, "it's", {"a": "b"}]"#).unwrap();
        assert_eq!(python_repr(&parsed.value), r#"[True, None, 1.0, "it's", {'a': 'b'}]"#);
    }
}

//! Checking a row's JSON text against a compiled schema while writing its canonical
//! text, without building the row.
//!
//! Most rows of a rows file are plain: no escapes, no repeated member, numbers in
//! range, accepted by their schema. For those, neither the check nor the canonical
//! text needs a tree, and [`Validator::scan`] reads the text once. Anything else —
//! a refusal, an escape, a repeated member, a number out of range, syntax the
//! reader must word — answers `None`, and the caller takes the general path
//! (parse, [`Validator::accepts`], the canonical writer), which decides it exactly.
//! So a `Some` always equals what that path gives (the tests hold both to it).

use super::compiled::{in_range, Validator, ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING};
use crate::dialect::valid_format;
use crate::json::{canonical_into, python_float_repr, Value};
use std::ops::Range;

/// A row [`Validator::scan`] accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct Scanned {
    /// The row's canonical text (`json.dumps(row, sort_keys=True, ensure_ascii=False,
    /// separators=(",", ":"))`), allocated at its exact size.
    pub text: String,
    /// For each wanted top-level member, where its value's canonical text lies in
    /// `text` (None when the row has no such member).
    pub members: Vec<Option<Range<usize>>>,
}

/// One member of an object being read: its name in the input, and its
/// `"name":value` text in the output.
#[derive(Clone)]
struct Member {
    name: Range<usize>,
    written: Range<usize>,
}

/// Buffers a thread reuses from row to row.
#[derive(Default)]
struct Buffers {
    out: String,
    members: Vec<Member>,
    staging: String,
}

struct Scanner<'t, 'w> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    /// Canonical text written so far.
    out: String,
    /// Members of the objects open, innermost last.
    members: Vec<Member>,
    /// Where an object's members are put in order before they replace their
    /// as-read text in `out`.
    staging: String,
    wanted: &'w [String],
    spans: Vec<Option<Range<usize>>>,
    /// Values open; a row nested deeper than [`SCAN_DEPTH`] goes the general way
    /// (whose parser refuses past `json::MAX_DEPTH`), so this reading never recurses
    /// without bound.
    depth: usize,
}

/// How deep the fast reading follows a row (rows are shallow; a deeper one is read
/// the general way).
const SCAN_DEPTH: usize = 64;

impl Validator {
    /// Check the row whose JSON text is `json` and write its canonical text, noting
    /// where the `wanted` top-level members' values lie in it. None unless the row is
    /// plain and accepted (see the module's documentation): the caller then reads
    /// it the general way.
    pub fn scan(&self, json: &str, wanted: &[String]) -> Option<Scanned> {
        thread_local! {
            static BUFFERS: std::cell::Cell<Buffers> = std::cell::Cell::new(Buffers::default());
        }
        let buffers = BUFFERS.take();
        let mut scanner = Scanner {
            text: json,
            bytes: json.as_bytes(),
            pos: 0,
            out: buffers.out,
            members: buffers.members,
            staging: buffers.staging,
            wanted,
            spans: vec![None; wanted.len()],
            depth: 0,
        };
        scanner.out.clear();
        scanner.members.clear();
        let accepted = scanner.row(self);
        let scanned = accepted.map(|()| Scanned { text: scanner.out.as_str().into(), members: scanner.spans });
        BUFFERS.set(Buffers { out: scanner.out, members: scanner.members, staging: scanner.staging });
        scanned
    }
}

impl Scanner<'_, '_> {
    fn row(&mut self, schema: &Validator) -> Option<()> {
        self.skip_ws();
        if self.peek() != Some(b'{') || schema.needs_tree() || !allows(schema.types, OBJECT) {
            return None;
        }
        self.object(Some(schema), true)?;
        self.skip_ws();
        (self.pos == self.bytes.len()).then_some(())
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// One value, checked against `schema` (None: anything goes, numbers in range).
    fn value(&mut self, schema: Option<&Validator>) -> Option<()> {
        if self.depth >= SCAN_DEPTH {
            return None;
        }
        self.depth += 1;
        let read = self.value_within(schema);
        self.depth -= 1;
        read
    }

    fn value_within(&mut self, schema: Option<&Validator>) -> Option<()> {
        if let Some(schema) = schema.filter(|s| s.needs_tree()) {
            return self.tree(schema);
        }
        let types = schema.map_or(0, |s| s.types);
        match self.peek()? {
            b'{' if allows(types, OBJECT) => self.object(schema, false),
            b'[' if allows(types, ARRAY) => self.array(schema),
            b'"' if allows(types, STRING) => {
                let text = self.plain_string()?;
                let text = &self.text[text];
                if let Some(schema) = schema {
                    if schema.min_length.is_some() || schema.max_length.is_some() {
                        let length = text.chars().count() as i64;
                        if schema.min_length.is_some_and(|n| length < n) || schema.max_length.is_some_and(|n| length > n) {
                            return None;
                        }
                    }
                    if schema.format.as_deref().is_some_and(|format| !valid_format(format, text)) {
                        return None;
                    }
                }
                // Without escapes or control characters the canonical text is the input's.
                self.out.push('"');
                self.out.push_str(text);
                self.out.push('"');
                Some(())
            }
            b't' if allows(types, BOOLEAN) => self.literal("true"),
            b'f' if allows(types, BOOLEAN) => self.literal("false"),
            b'n' if allows(types, NULL) => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(schema),
            _ => None,
        }
    }

    /// A value whose schema compares whole values (`enum`, `const`, combinators,
    /// `uniqueItems`): parsed into a tree and checked as the general path does.
    fn tree(&mut self, schema: &Validator) -> Option<()> {
        let (value, length) = crate::json::parse_plain_prefix(&self.text[self.pos..])?;
        if !schema.accepts(&value) {
            return None;
        }
        self.pos += length;
        canonical_into(&mut self.out, &value);
        Some(())
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        if !self.bytes[self.pos..].starts_with(word.as_bytes()) {
            return None;
        }
        self.pos += word.len();
        self.out.push_str(word);
        Some(())
    }

    /// A string without escapes or control characters: the range of its contents.
    fn plain_string(&mut self) -> Option<Range<usize>> {
        self.pos += 1;
        let start = self.pos;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => self.pos += 1,
            }
        }
        self.pos += 1;
        Some(start..self.pos - 1)
    }

    /// A number as the parser reads it; integers keep their text (`-0` aside),
    /// floats are written as Python's `repr`.
    fn number(&mut self, schema: Option<&Validator>) -> Option<()> {
        let start = self.pos;
        let (end, is_float) = crate::json::number_end(self.bytes, start)?;
        self.pos = end;
        let text = &self.text[start..self.pos];
        let value = if is_float { Value::Float(text.parse().ok()?) } else { Value::Int(text.parse().ok()?) };
        if !in_range(&value) {
            return None;
        }
        if let Some(schema) = schema {
            let typed = match value {
                Value::Float(f) => allows(schema.types, NUMBER) || (schema.types & INTEGER != 0 && f.fract() == 0.0),
                _ => allows(schema.types, INTEGER | NUMBER),
            };
            if !typed || !schema.within_bounds(&value) {
                return None;
            }
        }
        match value {
            Value::Float(f) => self.out.push_str(&python_float_repr(f)),
            _ if text == "-0" => self.out.push('0'),
            _ => self.out.push_str(text),
        }
        Some(())
    }

    fn array(&mut self, schema: Option<&Validator>) -> Option<()> {
        self.pos += 1;
        self.out.push('[');
        let items = schema.and_then(|s| s.items.as_deref());
        let mut count = 0usize;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
        } else {
            loop {
                if count > 0 {
                    self.out.push(',');
                }
                self.skip_ws();
                self.value(items)?;
                count += 1;
                self.skip_ws();
                match self.peek()? {
                    b',' => self.pos += 1,
                    b']' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.out.push(']');
        let schema = match schema {
            Some(schema) => schema,
            None => return Some(()),
        };
        let fits = schema.min_items.is_none_or(|min| count >= min) && schema.max_items.is_none_or(|max| count <= max);
        fits.then_some(())
    }

    /// An object: members written as read, then put in key order (a repeated
    /// member, an unknown one in a closed schema or a missing required one: None).
    fn object(&mut self, schema: Option<&Validator>, top: bool) -> Option<()> {
        self.pos += 1;
        let start = self.out.len();
        let base = self.members.len();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_ws();
                if self.peek() != Some(b'"') {
                    return None;
                }
                let name = self.plain_string()?;
                self.skip_ws();
                if self.peek() != Some(b':') {
                    return None;
                }
                self.pos += 1;
                self.skip_ws();
                let key = &self.text[name.clone()];
                let property = match schema {
                    Some(schema) => match schema.properties.get(key) {
                        Some(property) => Some(property),
                        None if schema.closed => return None,
                        None => None,
                    },
                    None => None,
                };
                let at = self.out.len();
                self.out.push('"');
                self.out.push_str(key);
                self.out.push_str("\":");
                self.value(property)?;
                self.members.push(Member { name, written: at..self.out.len() });
                self.skip_ws();
                match self.peek()? {
                    b',' => self.pos += 1,
                    b'}' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        let text = self.text;
        let members = &mut self.members[base..];
        if let Some(schema) = schema {
            if !schema.required.iter().all(|required| members.iter().any(|m| text[m.name.clone()] == **required)) {
                return None;
            }
        }
        // Python's sort_keys: code point order, which is UTF-8 byte order.
        members.sort_unstable_by(|a, b| text[a.name.clone()].cmp(&text[b.name.clone()]));
        if members.windows(2).any(|pair| text[pair[0].name.clone()] == text[pair[1].name.clone()]) {
            return None;
        }
        self.staging.clear();
        self.staging.push('{');
        for (i, member) in members.iter().enumerate() {
            if i > 0 {
                self.staging.push(',');
            }
            if top {
                let key = &text[member.name.clone()];
                if let Some(slot) = self.wanted.iter().position(|w| w == key) {
                    let value_at = start + self.staging.len() + key.len() + 3;
                    self.spans[slot] = Some(value_at..start + self.staging.len() + member.written.len());
                }
            }
            self.staging.push_str(&self.out[member.written.clone()]);
        }
        self.staging.push('}');
        self.out.truncate(start);
        self.out.push_str(&self.staging);
        self.members.truncate(base);
        Some(())
    }
}

/// Whether a node declaring `types` (0: any) takes a value of type bit `bit`.
fn allows(types: u8, bit: u8) -> bool {
    types == 0 || types & bit != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{canonical, parse, parse_loads};

    const SCHEMAS: &[&str] = &[
        r#"{"type": "object", "properties": {"id": {"type": "string", "minLength": 1}, "kind": {"type": "string", "maxLength": 4},
            "n": {"type": ["integer", "null"], "minimum": 0, "exclusiveMaximum": 100}, "x": {"type": "number"},
            "at": {"type": "string", "format": "date-time"}, "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "attributes": {"type": "object", "properties": {"tier": {"type": "integer"}}, "required": ["tier"]}},
            "required": ["id"], "additionalProperties": false}"#,
        r#"{"type": "object", "properties": {"id": {"type": "integer"}, "kind": {"enum": ["lead", "deal"]},
            "tags": {"type": "array", "uniqueItems": true}, "x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}"#,
        r#"{"type": "object"}"#,
        r#"{"type": "object", "properties": {"id": {"const": 1}, "b": {"type": "boolean"}}, "required": ["id", "b"]}"#,
    ];

    /// Rows the general path accepts or refuses in every way a fast read must notice.
    const ROWS: &[&str] = &[
        r#"{"id": "b0", "kind": "lead", "name": "Record 0", "attributes": {"tier": 0}, "updated_at": "2026-01-01T00:00:00Z"}"#,
        r#"{"id":"a","kind":"deal","n":3,"x":1.5,"at":"2026-01-01T00:00:00Z","tags":["p","q"],"attributes":{"tier":2}}"#,
        r#"  {"kind": "lead", "id": "z", "n": null}  "#,
        r#"{"id": "a", "n": -0, "x": 1E5, "attributes": {"tier": 1.0}}"#,
        r#"{"id": "a", "x": 0.1, "n": 99}"#,
        r#"{"id": "a", "n": 100}"#,
        r#"{"id": "a", "n": 1.5}"#,
        r#"{"id": "a", "x": 9007199254740992}"#,
        r#"{"id": "a", "x": 1e400}"#,
        r#"{"id": "a", "x": NaN}"#,
        r#"{"id": "a", "id": "b"}"#,
        r#"{"id": "a\u00e9"}"#,
        r#"{"id": "a\"b"}"#,
        r#"{"id": "é ü 😀", "kind": "ok"}"#,
        r#"{"id": ""}"#,
        r#"{"id": "a", "kind": "toolong"}"#,
        r#"{"id": "a", "at": "2026-13-01T00:00:00Z"}"#,
        r#"{"id": "a", "tags": ["p", "q", "r"]}"#,
        r#"{"id": "a", "tags": ["p", "p"]}"#,
        r#"{"id": "a", "tags": [1, [2, {"b": 1, "a": [true, false, null]}]]}"#,
        r#"{"id": "a", "attributes": {}}"#,
        r#"{"id": "a", "attributes": {"tier": 1, "z": {"y": 1, "x": 2}, "a": []}}"#,
        r#"{"id": "a", "extra": 1}"#,
        r#"{"id": 1, "kind": "lead", "x": "s"}"#,
        r#"{"id": 1, "kind": "other"}"#,
        r#"{"id": 1, "b": true}"#,
        r#"{"id": 1, "b": 1}"#,
        r#"{"id": 1}"#,
        r#"{}"#,
        r#"[]"#,
        r#"{"id": "a",}"#,
        r#"{"id": "a"} x"#,
        r#"{"id": 01}"#,
        r#"{"id": 1.}"#,
        r#"{"id": "a", "n": 3 }"#,
        "{\"id\":\t\"a\"\r\n}",
        r#"{"id": "tab	inside"}"#,
        r#"{"id": "a", "big": -12345678901234567890}"#,
    ];

    /// The general path: parse, check, canonical text.
    fn general(schema: &Validator, text: &str) -> Option<(String, Value)> {
        let parsed = parse_loads(text).ok().filter(|p| p.problem.is_none())?;
        (matches!(parsed.value, Value::Object(_)) && schema.accepts(&parsed.value)).then(|| (canonical(&parsed.value), parsed.value))
    }

    #[test]
    fn a_fast_read_is_the_general_path() {
        let wanted: Vec<String> = ["id", "n", "attributes", "missing"].map(String::from).to_vec();
        let mut fast = 0;
        for schema_text in SCHEMAS {
            let schema = Validator::compile(&parse(schema_text).unwrap().value);
            for row in ROWS {
                let Some(scanned) = schema.scan(row, &wanted) else { continue };
                fast += 1;
                let (text, value) = general(&schema, row)
                    .unwrap_or_else(|| panic!("fast read accepted what the general path refuses: {row} / {schema_text}"));
                assert_eq!(scanned.text, text, "{row}");
                for (name, span) in wanted.iter().zip(&scanned.members) {
                    let expected = value.get(name).map(canonical);
                    assert_eq!(span.clone().map(|r| scanned.text[r].to_string()), expected, "{name} in {row}");
                }
            }
        }
        assert!(fast >= 20, "only {fast} rows read fast");
    }

    #[test]
    fn plain_rows_are_read_fast_and_the_rest_are_left_alone() {
        let schema = Validator::compile(&parse(SCHEMAS[0]).unwrap().value);
        for row in [
            ROWS[0]
                .replace("\"name\": \"Record 0\", ", "")
                .replace("\"updated_at\": \"2026-01-01T00:00:00Z\"", "\"at\": \"2026-01-01T00:00:00Z\""),
            ROWS[1].into(),
            ROWS[3].into(),
        ] {
            assert!(schema.scan(&row, &[]).is_some(), "{row}");
        }
        // Escapes, repeats, out-of-range numbers and refusals go the general way.
        for row in [ROWS[7], ROWS[9], ROWS[10], ROWS[11], ROWS[15], ROWS[22]] {
            assert!(schema.scan(row, &[]).is_none(), "{row}");
        }
    }
}

//! Writing JSON text exactly as Python's `json.dumps` does, and Python's `repr`/`str`.

use super::{Map, Value};
use std::fmt::Write as _;

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

/// `value` with every object's members in the order [`canonical`] writes them: what
/// parsing its canonical text gives back, without writing and parsing it.
pub fn canonical_order(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(canonical_order).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), canonical_order(v))).collect())
        }
        other => other.clone(),
    }
}

/// [`canonical`] into a string of `capacity` bytes (its length when known: one allocation).
pub fn canonical_sized(value: &Value, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    write_value(&mut out, value, DumpOptions::CANONICAL, 0);
    out
}

/// Append [`canonical`] text to `out` (a reused buffer saves an allocation per value).
pub fn canonical_into(out: &mut String, value: &Value) {
    write_value(out, value, DumpOptions::CANONICAL, 0);
}

/// Canonical text plus a newline, as bytes: what generated JSON files hold.
pub fn encoded(value: &Value) -> Vec<u8> {
    let mut text = canonical(value);
    text.push('\n');
    text.into_bytes()
}

/// The bytes of text [`dumps_in_pieces`] gathers before handing them on.
const PIECE: usize = 64 * 1024;

/// Where [`write_value`] writes: a string, or pieces handed on as they fill.
trait Text {
    /// The text being written.
    fn buffer(&mut self) -> &mut String;
    /// Between two items or members: the text so far may be handed on here.
    fn boundary(&mut self) {}
}

impl Text for String {
    fn buffer(&mut self) -> &mut String {
        self
    }
}

/// Text handed to a sink a piece at a time.
struct Pieces<'s> {
    buffer: String,
    sink: &'s mut dyn FnMut(&str),
}

impl Text for Pieces<'_> {
    fn buffer(&mut self) -> &mut String {
        &mut self.buffer
    }
    fn boundary(&mut self) {
        if self.buffer.len() >= PIECE {
            (self.sink)(&self.buffer);
            self.buffer.clear();
        }
    }
}

/// [`dumps`] handed to `sink` in pieces (of about 64 KiB, cut between items or
/// members): a large value's text is hashed or written without being held whole.
pub fn dumps_in_pieces(value: &Value, options: DumpOptions, sink: &mut dyn FnMut(&str)) {
    let mut pieces = Pieces { buffer: String::with_capacity(2 * PIECE), sink };
    write_value(&mut pieces, value, options, 0);
    if !pieces.buffer.is_empty() {
        (pieces.sink)(&pieces.buffer);
    }
}

fn write_value<T: Text>(text: &mut T, value: &Value, options: DumpOptions, level: usize) {
    let out = text.buffer();
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(f) => out.push_str(&python_float_repr(*f)),
        Value::Str(string) => write_string(out, string, options.ensure_ascii),
        Value::Array(items) => write_items(text, items.iter(), options, level),
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
                let out = text.buffer();
                if i > 0 {
                    out.push_str(item_separator(options));
                }
                newline(out, options, level + 1);
                write_string(out, key, options.ensure_ascii);
                out.push_str(if options.compact { ":" } else { ": " });
                write_value(text, item, options, level + 1);
                text.boundary();
            }
            let out = text.buffer();
            newline(out, options, level);
            out.push('}');
        }
    }
}

/// An array of `items` at `level` (`[]` when there are none).
fn write_items<T: Text, V: std::borrow::Borrow<Value>>(text: &mut T, items: impl Iterator<Item = V>, options: DumpOptions, level: usize) {
    let mut items = items.peekable();
    if items.peek().is_none() {
        text.buffer().push_str("[]");
        return;
    }
    text.buffer().push('[');
    for (i, item) in items.enumerate() {
        let out = text.buffer();
        if i > 0 {
            out.push_str(item_separator(options));
        }
        newline(out, options, level + 1);
        write_value(text, item.borrow(), options, level + 1);
        text.boundary();
    }
    let out = text.buffer();
    newline(out, options, level);
    out.push(']');
}

/// [`dumps_in_pieces`] of the object `head` with its member `key` the array of
/// `items` (a batch's mutations read one at a time from a file: the array is never
/// held). `head` holds `key` where it belongs (its value is not read).
pub fn dumps_with_items<V: std::borrow::Borrow<Value>>(
    head: &Map,
    key: &str,
    items: impl Iterator<Item = V>,
    options: DumpOptions,
    sink: &mut dyn FnMut(&str),
) {
    let mut pieces = Pieces { buffer: String::with_capacity(2 * PIECE), sink };
    let mut entries: Vec<(&String, &Value)> = head.iter().collect();
    if options.sort_keys {
        entries.sort_by(|a, b| a.0.cmp(b.0));
    }
    let mut items = Some(items);
    pieces.buffer.push('{');
    for (i, (name, value)) in entries.into_iter().enumerate() {
        let out = &mut pieces.buffer;
        if i > 0 {
            out.push_str(item_separator(options));
        }
        newline(out, options, 1);
        write_string(out, name, options.ensure_ascii);
        out.push_str(if options.compact { ":" } else { ": " });
        match items.take_if(|_| name == key) {
            Some(items) => write_items(&mut pieces, items, options, 1),
            None => write_value(&mut pieces, value, options, 1),
        }
        pieces.boundary();
    }
    if head.is_empty() {
        pieces.buffer.push('}');
    } else {
        newline(&mut pieces.buffer, options, 0);
        pieces.buffer.push('}');
    }
    if !pieces.buffer.is_empty() {
        (pieces.sink)(&pieces.buffer);
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
    out.reserve(text.len() + 2);
    out.push('"');
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    // Runs of bytes that need no escape are copied whole.
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'"' && b != b'\\' && b >= 0x20 && !(ensure_ascii && b > 0x7e) {
            i += 1;
            continue;
        }
        out.push_str(&text[start..i]);
        let c = text[i..].chars().next().expect("char boundary");
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
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
        i += c.len_utf8();
        start = i;
    }
    out.push_str(&text[start..]);
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

/// Python's `str()` (and `repr()`) of a float: [`python_float_repr`], with the
/// non-finite values spelled as Python spells them (`nan`, `inf`, `-inf`).
pub fn python_float_str(value: f64) -> String {
    match python_float_repr(value).as_str() {
        "NaN" => "nan".into(),
        "Infinity" => "inf".into(),
        "-Infinity" => "-inf".into(),
        text => text.into(),
    }
}

/// Python's `repr()` of a JSON value.
pub fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(n) => n.to_string(),
        Value::Float(f) => python_float_str(*f),
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

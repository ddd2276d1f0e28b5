//! One line of a handler worker's (or grader's) stderr as the hub's log prints it:
//! prefixed with where it came from and escaped, so a world's code cannot forge log
//! lines — no newline, carriage return, escape sequence or other control character
//! reaches the log raw, and invalid UTF-8 is shown as `\xNN`.
//!
//! Pure: the worker spawner (`handlers.rs`) reads its children's stderr line by line
//! and logs `log_line(source, line)` for each.

use std::fmt::Write as _;

/// `[worker <source>] <line>`, with `source` and `line` escaped: `\n`, `\r`, `\t`, `\\`
/// as themselves, other control characters (C0, DEL, C1, and the Unicode line and
/// paragraph separators and bidirectional overrides) as `\u{…}`, bytes that are not
/// UTF-8 as `\xNN`. One trailing `\n` (or `\r\n`) of `line` is its terminator, not content.
pub fn log_line(source: &str, line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").map(|l| l.strip_suffix(b"\r").unwrap_or(l)).unwrap_or(line);
    let mut out = String::with_capacity(line.len() + source.len() + 12);
    out.push_str("[worker ");
    escape_into(&mut out, source.as_bytes());
    out.push_str("] ");
    escape_into(&mut out, line);
    out
}

fn escape_into(out: &mut String, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                escape_text(out, text);
                return;
            }
            Err(error) => {
                let (valid, rest) = bytes.split_at(error.valid_up_to());
                escape_text(out, std::str::from_utf8(valid).unwrap_or_default());
                let bad = error.error_len().unwrap_or(rest.len());
                for byte in &rest[..bad] {
                    let _ = write!(out, "\\x{byte:02x}");
                }
                bytes = &rest[bad..];
            }
        }
    }
}

fn escape_text(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// Control characters, and the characters that move or reorder what a terminal shows.
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::log_line;

    #[test]
    fn prefixed_and_plain_text_kept() {
        assert_eq!(log_line("helpdesk", b"loaded 3 handlers\n"), "[worker helpdesk] loaded 3 handlers");
        assert_eq!(log_line("helpdesk", b"caf\xc3\xa9 \xe2\x9c\x93"), "[worker helpdesk] café ✓");
        assert_eq!(log_line("w", b""), "[worker w] ");
    }

    #[test]
    fn a_forged_log_line_stays_on_its_own_line() {
        let forged = b"oops\ngateway hub: key created for project admin\r\n";
        let logged = log_line("evil", forged);
        assert_eq!(logged, "[worker evil] oops\\ngateway hub: key created for project admin");
        assert!(!logged.contains('\n') && !logged.contains('\r'));
        let terminal = log_line("evil", b"\x1b[2K\x1b[1Ggateway hub listening\x07\x7f");
        assert_eq!(terminal, "[worker evil] \\u{1b}[2K\\u{1b}[1Ggateway hub listening\\u{7}\\u{7f}");
        assert_eq!(log_line("evil", "a\u{2028}b\u{202e}c\u{85}".as_bytes()), "[worker evil] a\\u{2028}b\\u{202e}c\\u{85}");
    }

    #[test]
    fn the_source_is_escaped_too_and_backslashes_are_unambiguous() {
        assert_eq!(log_line("a] [worker b\n", b"x"), "[worker a] [worker b\\n] x");
        assert_eq!(log_line("w", b"\\n is not a newline"), "[worker w] \\\\n is not a newline");
    }

    #[test]
    fn bytes_that_are_not_utf8() {
        assert_eq!(log_line("w", b"ok\xff\xfe then \xc3"), "[worker w] ok\\xff\\xfe then \\xc3");
        assert_eq!(log_line("w", b"\xe2\x9c"), "[worker w] \\xe2\\x9c");
    }
}

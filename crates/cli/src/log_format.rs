//! How a server's log line reads, and the layer that writes it: tracing's default
//! ("full") line, written for less.
//!
//! `2026-12-05T23:50:00.123456Z  INFO gateway::request: GET /healthz 200 0.1ms` — the
//! timestamp (UTC, microseconds), the level, the target, the message and any other
//! fields as ` name=value`, exactly as `tracing_subscriber::fmt`'s default format
//! spells them for the lines we log (events only: no span prefix, see `init_server_log`).
//!
//! Why not `tracing_subscriber::fmt`: one request line per request is the cost that
//! matters (docs/PERFORMANCE.md "Logs and traces"), and `core::fmt` was most of it —
//! the timestamp printed field by field, the level padded, the message's arguments
//! formatted, every character sanitised through the formatter one `char` at a time,
//! and the result copied through the layer's buffer and a writer. Here a line is built
//! in one reused per-thread buffer and handed to the sink in one piece: the
//! timestamp's first 19 characters are kept per thread for the current second and its
//! microseconds written as digits; the level column is a constant; the request line
//! (target `gateway::request`, whose method, path, status and tenths of a millisecond
//! are fields: `gateway_serve::request_log::fields`) is written from those fields as
//! text and digits, `GET /v2/records/r777 200 0.1ms`, its path scanned once for
//! terminal controls. Any other event's fields are written once, scanned as bytes, and
//! written again escaped only when they hold one of those characters — the same
//! characters, escaped the same way, as tracing's own guard does.

use gateway_serve::request_log::{self, fields};
use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::Context;

/// The layer writing the servers' log lines, one `write` per line, to `sink`
/// (`log_lines::BatchedLines` in the servers).
pub(crate) struct LineLayer<W> {
    sink: W,
}

impl<W> LineLayer<W> {
    pub(crate) fn new(sink: W) -> Self {
        LineLayer { sink }
    }
}

impl<S, W> tracing_subscriber::Layer<S> for LineLayer<W>
where
    S: Subscriber,
    W: for<'a> MakeWriter<'a> + 'static,
{
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        LINE.with(|line| {
            // A line being written when this thread logs again (a `Debug` that logs)
            // is not interrupted: the inner event gets a buffer of its own.
            let mut own = Vec::new();
            let mut borrowed = line.try_borrow_mut();
            let line = match borrowed.as_deref_mut() {
                Ok(line) => line,
                Err(_) => &mut own,
            };
            line.clear();
            write_line(line, event, SystemTime::now());
            // A failed write (stderr closed) loses the line; nothing else can be done with it.
            let _ = self.sink.make_writer_for(event.metadata()).write_all(line);
        });
    }
}

thread_local! {
    /// The line being written (reused: no allocation per line).
    static LINE: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(256));
    /// `YYYY-MM-DDTHH:MM:SS` of the last second this thread logged in.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// One event's line, newline included.
fn write_line(line: &mut Vec<u8>, event: &Event<'_>, now: SystemTime) {
    let meta = event.metadata();
    write_timestamp(line, now);
    line.extend_from_slice(level_column(meta.level()).as_bytes());
    line.extend_from_slice(meta.target().as_bytes());
    line.extend_from_slice(b": ");
    if meta.target() == request_log::TARGET && meta.fields().field(fields::STATUS).is_some() {
        event.record(&mut RequestLine { out: line });
    } else {
        let mut fields = String::new();
        event.record(&mut FieldsVisitor { out: &mut fields, first: true });
        write_sanitised(line, &fields);
    }
    line.push(b'\n');
}

/// RFC 3339 in UTC with microseconds, as tracing's `SystemTime` timer writes it.
fn write_timestamp(out: &mut Vec<u8>, now: SystemTime) {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    SECOND.with(|second| {
        let mut second = second.borrow_mut();
        if second.0 != secs {
            let whole = gateway_common::time::format_utc(i64::try_from(secs).unwrap_or(i64::MAX));
            second.1 = whole.trim_end_matches('Z').to_owned();
            second.0 = secs;
        }
        out.extend_from_slice(second.1.as_bytes());
    });
    // `.` and six digits, zero-padded, and `Z`: what `{:06}` writes, without fmt.
    let mut fraction = *b".000000Z";
    let mut micros = since.subsec_micros();
    for digit in fraction[1..7].iter_mut().rev() {
        *digit = b'0' + (micros % 10) as u8;
        micros /= 10;
    }
    out.extend_from_slice(&fraction);
}

/// ` {level:>5} ` as tracing's default format pads it.
fn level_column(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => " TRACE ",
        Level::DEBUG => " DEBUG ",
        Level::INFO => "  INFO ",
        Level::WARN => "  WARN ",
        Level::ERROR => " ERROR ",
    }
}

/// The request line, written as its fields are visited (in their declared order:
/// method, path, status, tenths of a millisecond): `GET /v2/records/r777 200 0.1ms`.
struct RequestLine<'a> {
    out: &'a mut Vec<u8>,
}

impl Visit for RequestLine<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == fields::METHOD {
            // A method is an HTTP token (the http crate refuses anything else): nothing
            // in it to escape.
            self.out.extend_from_slice(value.as_bytes());
        } else {
            self.out.push(b' ');
            write_sanitised(self.out, value);
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        let mut digits = itoa::Buffer::new();
        self.out.push(b' ');
        if field.name() == fields::TENTHS_MS {
            self.out.extend_from_slice(digits.format(value / 10).as_bytes());
            self.out.extend_from_slice(&[b'.', b'0' + (value % 10) as u8, b'm', b's']);
        } else {
            self.out.extend_from_slice(digits.format(value).as_bytes());
        }
    }

    /// A field the request line does not know (none today): ` name=value`, as any
    /// other event's.
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        write_sanitised(self.out, &format!(" {}={value:?}", field.name()));
    }
}

/// The message first, then ` name=value` per other field (Debug), as tracing's default
/// visitor writes them.
struct FieldsVisitor<'a> {
    out: &'a mut String,
    first: bool,
}

impl Visit for FieldsVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if !self.first {
            self.out.push(' ');
        }
        self.first = false;
        let name = field.name();
        // Writing into a String cannot fail.
        let _ = if name == "message" {
            write!(self.out, "{value:?}")
        } else {
            write!(self.out, "{}={value:?}", name.strip_prefix("r#").unwrap_or(name))
        };
    }
}

/// Whether a character is one tracing's formatter escapes: those that start or steer a
/// terminal escape sequence (ESC, BEL, BS, FF, DEL and the C1 controls).
fn needs_escape(ch: char) -> bool {
    matches!(ch, '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f' | '\u{80}'..='\u{9f}')
}

/// Whether `text` may hold a character to escape: ESC, BEL, BS, FF and DEL are single
/// bytes, a C1 control is encoded 0xC2 0x80..=0x9F. One pass over the bytes without an
/// early exit (a line's text is short), which leaves the loop free to be vectorised.
fn needs_sanitising(text: &str) -> bool {
    text.bytes().fold(false, |found, b| found | matches!(b, 0x1b | 0x07 | 0x08 | 0x0c | 0x7f | 0xc2))
}

/// `text` appended as it is when it holds nothing to escape (the rule), escaped
/// character by character otherwise.
fn write_sanitised(out: &mut Vec<u8>, text: &str) {
    if !needs_sanitising(text) {
        return out.extend_from_slice(text.as_bytes());
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        // Writing into a String cannot fail.
        let _ = match ch {
            ch if needs_escape(ch) && (ch as u32) < 0x80 => write!(escaped, "\\x{:02x}", ch as u32),
            ch if needs_escape(ch) => write!(escaped, "\\u{{{:x}}}", ch as u32),
            ch => escaped.write_char(ch),
        };
    }
    out.extend_from_slice(escaped.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    #[test]
    fn the_timestamp_reads_as_tracings_timer_writes_it_across_seconds() {
        let mut out = Vec::new();
        let at = |secs, micros| UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros);
        write_timestamp(&mut out, at(1_700_000_000, 42));
        out.push(b'|');
        write_timestamp(&mut out, at(1_700_000_000, 999_999));
        out.push(b'|');
        write_timestamp(&mut out, at(1_700_000_001, 0));
        assert_eq!(String::from_utf8(out).unwrap(), "2023-11-14T22:13:20.000042Z|2023-11-14T22:13:20.999999Z|2023-11-14T22:13:21.000000Z");
    }

    #[test]
    fn control_characters_are_escaped_as_tracing_escapes_them_and_nothing_else() {
        let mut out = Vec::new();
        write_sanitised(&mut out, "GET /a\u{1b}[31m\u{7}b \u{85}é\u{a0}ok\tand \"quoted\"");
        assert_eq!(String::from_utf8(out).unwrap(), "GET /a\\x1b[31m\\x07b \\u{85}é\u{a0}ok\tand \"quoted\"");
        let mut clean = Vec::new();
        write_sanitised(&mut clean, "GET /v2/records/r777 200 0.1ms");
        assert_eq!(clean, b"GET /v2/records/r777 200 0.1ms");
    }

    /// The line ours writes and the one tracing's default format writes, for the same
    /// events, differ in nothing but the timestamp's digits.
    #[test]
    fn a_line_matches_tracings_default_format_but_for_the_time() {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let log = |ours: bool| {
            let lines = Lines::default();
            let writer = {
                let lines = lines.clone();
                move || lines.clone()
            };
            let events = || {
                // The request line as the middleware logs it (fields) reads as the
                // message the default format was given before the fields were.
                if ours {
                    let (method, path, status, tenths_ms) = ("GET", "/v2/records/r777", 200u16, 3u64);
                    tracing::info!(target: "gateway::request", method, path, status, tenths_ms);
                    let (method, path, status, tenths_ms) = ("DELETE", "/a\u{1b}[2J\u{85}", 404u16, 123_456u64);
                    tracing::info!(target: "gateway::request", method, path, status, tenths_ms);
                } else {
                    tracing::info!(target: "gateway::request", "GET {} {} {:.1}ms", "/v2/records/r777", 200, 0.3);
                    tracing::info!(target: "gateway::request", "DELETE {} {} {:.1}ms", "/a\u{1b}[2J\u{85}", 404, 12_345.6);
                }
                tracing::warn!(session = "s-1", r#type = 3, "a \u{1b}[2Jcleared {}", "screen");
                tracing::error!(reason = ?Some("x"), "no message fields? {}", 1);
            };
            if ours {
                let subscriber = tracing_subscriber::layer::SubscriberExt::with(tracing_subscriber::registry(), LineLayer::new(writer));
                tracing::subscriber::with_default(subscriber, events);
            } else {
                let layer = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false);
                let subscriber = tracing_subscriber::layer::SubscriberExt::with(tracing_subscriber::registry(), layer);
                tracing::subscriber::with_default(subscriber, events);
            }
            let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
            // The timestamp's digits differ run to run; its shape does not.
            text.lines().map(|line| line.split_once(' ').map(|(t, rest)| (t.len(), rest.to_owned())).unwrap()).collect::<Vec<_>>()
        };
        let (ours, theirs) = (log(true), log(false));
        assert_eq!(ours.len(), 4);
        assert_eq!(ours, theirs);
    }
}

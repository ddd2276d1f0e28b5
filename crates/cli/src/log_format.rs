//! How a server's log line reads: tracing's default ("full") line, written for less.
//!
//! `2026-12-05T23:50:00.123456Z  INFO gateway::request: GET /healthz 200 0.1ms` — the
//! timestamp (UTC, microseconds), the level, the target, the message and any other
//! fields as ` name=value`, exactly as `tracing_subscriber::fmt`'s default format
//! spells them for the lines we log (events only: no span prefix, see `init_server_log`).
//!
//! Why not the default format: one request line per request is the cost that matters
//! (docs/PERFORMANCE.md "Logs and traces"), and two parts of the default dominated it.
//! The timestamp's date was worked out and printed field by field for every line; here
//! its first 19 characters are kept per thread for the current second. And the
//! sanitising of terminal control characters went through the formatter one `char` at
//! a time; here the fields are written once into a scratch string and scanned as
//! bytes, and only a line that holds one of those characters is written again escaped
//! — the same characters, escaped the same way, as tracing's own guard does.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The event format of the servers' log lines.
pub(crate) struct LineFormat;

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        write_timestamp(&mut writer, SystemTime::now())?;
        write!(writer, " {:>5} {}: ", meta.level(), meta.target())?;
        SCRATCH.with(|scratch| {
            let mut fields = scratch.borrow_mut();
            fields.clear();
            event.record(&mut FieldsVisitor { out: &mut fields, first: true });
            write_sanitised(&mut writer, &fields)
        })?;
        writer.write_char('\n')
    }
}

thread_local! {
    /// The fields of the line being written (reused: no allocation per line).
    static SCRATCH: RefCell<String> = RefCell::new(String::with_capacity(256));
    /// `YYYY-MM-DDTHH:MM:SS` of the last second this thread logged in.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// RFC 3339 in UTC with microseconds, as tracing's `SystemTime` timer writes it.
fn write_timestamp(writer: &mut impl fmt::Write, now: SystemTime) -> fmt::Result {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    SECOND.with(|second| {
        let mut second = second.borrow_mut();
        if second.0 != secs {
            let whole = gateway_common::time::format_utc(i64::try_from(secs).unwrap_or(i64::MAX));
            second.1 = whole.trim_end_matches('Z').to_owned();
            second.0 = secs;
        }
        write!(writer, "{}.{:06}Z", second.1, since.subsec_micros())
    })
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

/// `text` as it is when it holds nothing to escape (the rule: one scan of its bytes,
/// one write), escaped character by character otherwise.
fn write_sanitised(writer: &mut impl fmt::Write, text: &str) -> fmt::Result {
    // ESC, BEL, BS, FF and DEL are single bytes; a C1 control is encoded 0xC2 0x80..=0x9F.
    let suspect = text.bytes().any(|b| matches!(b, 0x1b | 0x07 | 0x08 | 0x0c | 0x7f | 0xc2));
    if !suspect {
        return writer.write_str(text);
    }
    for ch in text.chars() {
        match ch {
            ch if needs_escape(ch) && (ch as u32) < 0x80 => write!(writer, "\\x{:02x}", ch as u32)?,
            ch if needs_escape(ch) => write!(writer, "\\u{{{:x}}}", ch as u32)?,
            ch => writer.write_char(ch)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    #[test]
    fn the_timestamp_reads_as_tracings_timer_writes_it_across_seconds() {
        let mut out = String::new();
        let at = |secs, micros| UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros);
        write_timestamp(&mut out, at(1_700_000_000, 42)).unwrap();
        out.push('|');
        write_timestamp(&mut out, at(1_700_000_000, 999_999)).unwrap();
        out.push('|');
        write_timestamp(&mut out, at(1_700_000_001, 0)).unwrap();
        assert_eq!(out, "2023-11-14T22:13:20.000042Z|2023-11-14T22:13:20.999999Z|2023-11-14T22:13:21.000000Z");
    }

    #[test]
    fn control_characters_are_escaped_as_tracing_escapes_them_and_nothing_else() {
        let mut out = String::new();
        write_sanitised(&mut out, "GET /a\u{1b}[31m\u{7}b \u{85}é\u{a0}ok\tand \"quoted\"").unwrap();
        assert_eq!(out, "GET /a\\x1b[31m\\x07b \\u{85}é\u{a0}ok\tand \"quoted\"");
        let mut clean = String::new();
        write_sanitised(&mut clean, "GET /v2/records/r777 200 0.1ms").unwrap();
        assert_eq!(clean, "GET /v2/records/r777 200 0.1ms");
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
            let layer = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false);
            let events = || {
                tracing::info!(target: "gateway::request", "GET {} {} {:.1}ms", "/v2/records/r777", 200, 0.25);
                tracing::warn!(session = "s-1", r#type = 3, "a \u{1b}[2Jcleared {}", "screen");
                tracing::error!(reason = ?Some("x"), "no message fields? {}", 1);
            };
            if ours {
                let subscriber =
                    tracing_subscriber::layer::SubscriberExt::with(tracing_subscriber::registry(), layer.event_format(LineFormat));
                tracing::subscriber::with_default(subscriber, events);
            } else {
                let subscriber = tracing_subscriber::layer::SubscriberExt::with(tracing_subscriber::registry(), layer);
                tracing::subscriber::with_default(subscriber, events);
            }
            let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
            // The timestamp's digits differ run to run; its shape does not.
            text.lines().map(|line| line.split_once(' ').map(|(t, rest)| (t.len(), rest.to_owned())).unwrap()).collect::<Vec<_>>()
        };
        let (ours, theirs) = (log(true), log(false));
        assert_eq!(ours.len(), 3);
        assert_eq!(ours, theirs);
    }
}

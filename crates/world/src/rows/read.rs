//! The entry points: [`read_rows`] and [`read_rows_prepared`] over rows files in
//! argument order, each file's shape detected from its first value or line.

use super::document::{stream_array_prepared, stream_document};
use super::jsonl::{stream_jsonl, stream_jsonl_prepared, LinePreparer, PrepareText, PREPARE_BLOCK};
use super::reader::Reader;
use super::row::{no_rows, rows_error, Flow, Progress, Row, Seen, Sink};
use super::source::open_source;
use crate::error::Result;
use crate::json::{parse_loads, Value};

/// Bytes read from a source per block.
pub const READ_BLOCK: usize = 256 * 1024;
/// A first line longer than this is a one-line document, never a JSONL row.
pub const LINE_CAP: usize = 1024 * 1024;

/// Stream every row of `sources` (in argument order) into `sink`.
pub fn read_rows(
    sources: &[String],
    entity: Option<&str>,
    seen: &mut Seen,
    progress: Option<Progress<'_>>,
    sink: &mut Sink<'_>,
) -> Result<()> {
    read_rows_prepared(sources, entity, seen, progress, 1, None, &|row| row, sink)
}

/// How many rows the sources hold, stopping once past `cap`.
pub fn count_rows(sources: &[String], entity: Option<&str>, cap: Option<usize>) -> Result<usize> {
    let mut total = 0usize;
    let mut seen = Seen::default();
    read_rows(sources, entity, &mut seen, None, &mut |_| {
        total += 1;
        Ok(if cap.is_some_and(|cap| total > cap) { Flow::Stop } else { Flow::More })
    })?;
    Ok(total)
}

/// What a rows file holds, decided from its first value or line.
enum Shape {
    /// Nothing but whitespace.
    Empty,
    /// A bare JSON array of rows for the entity.
    Array(String),
    /// A JSON object of entity -> rows.
    Document,
    /// One row per line.
    Jsonl,
}

fn detect(reader: &mut Reader<'_>, at: &str, entity: Option<&str>) -> Result<Shape> {
    let Some(head) = reader.peek()? else {
        if reader.read_anything() {
            // Beyond the original (zero rows, success): blank but not empty is a file cut
            // short or the wrong one. An empty input stays zero rows, as the original reads it.
            return Err(no_rows(at, "it holds only whitespace"));
        }
        return Ok(Shape::Empty);
    };
    if head == b'[' {
        let Some(entity) = entity else {
            return Err(rows_error(format!("{at} is a bare array; say which entity it holds with --entity"), at));
        };
        return Ok(Shape::Array(entity.to_string()));
    }
    if head != b'{' {
        return Err(rows_error(format!("{at} is neither a JSON object of entity -> rows nor an array of rows"), at));
    }
    let start = reader.pos;
    let first = reader.line(Some(LINE_CAP))?;
    let mut is_jsonl = false;
    if let Some(range) = first.filter(|(s, e)| e - s <= LINE_CAP) {
        if let Ok(parsed) = parse_loads(reader.text(range)) {
            if let Value::Object(map) = &parsed.value {
                is_jsonl = match entity {
                    None => map.len() == 2 && map.contains_key("entity") && map.contains_key("row"),
                    Some(entity) => !(map.len() == 1 && matches!(map.get(entity), Some(Value::Array(_)))),
                };
            }
        }
    }
    reader.pos = start;
    Ok(if is_jsonl { Shape::Jsonl } else { Shape::Document })
}

/// Lines of a file read on the calling thread alone before helpers start: on a
/// small file their start-up costs more than they save. (The tests start them
/// mid-file, on files of a few thousand lines.)
const ONE_THREAD_LINES: usize = if cfg!(test) { 3_000 } else { 16 * PREPARE_BLOCK };

/// Like [`read_rows`], but every row is first turned into a `P` by `prepare`, and
/// `prepare_text` is tried on each row's text before it is parsed. For JSONL input
/// (the shape large files come in) both run on up to `threads` threads once a file
/// passes 32K lines, a block of lines at a time; `sink` still receives each prepared
/// row in input order, on the calling thread, and an error surfaces at the same row
/// as when reading on one thread.
#[allow(clippy::too_many_arguments)]
pub fn read_rows_prepared<P: Send>(
    sources: &[String],
    entity: Option<&str>,
    seen: &mut Seen,
    progress: Option<Progress<'_>>,
    threads: usize,
    prepare_text: Option<PrepareText<'_, P>>,
    prepare: &(dyn Fn(Row) -> P + Sync),
    sink: &mut dyn FnMut(P) -> Result<Flow>,
) -> Result<()> {
    let line = LinePreparer { entity, prepare_text, prepare };
    for source in sources {
        let stream = open_source(source, progress)?;
        let mut reader = Reader::new(stream, source);
        let flow = match detect(&mut reader, source, entity)? {
            Shape::Empty => Flow::More,
            Shape::Array(name) => {
                seen.entry(name.clone()).or_insert(0);
                stream_array_prepared(&mut reader, source, &name, seen, &line, sink)?
            }
            Shape::Document => stream_document(&mut reader, source, entity, seen, &line, sink)?,
            Shape::Jsonl => {
                let mut number = 0;
                let alone = (threads > 1).then_some(ONE_THREAD_LINES);
                match stream_jsonl(&mut reader, source, seen, &line, sink, &mut number, alone)? {
                    Some(flow) => flow,
                    None => stream_jsonl_prepared(&mut reader, source, seen, threads, &line, sink, number)?,
                }
            }
        };
        if flow == Flow::Stop {
            return Ok(());
        }
    }
    Ok(())
}

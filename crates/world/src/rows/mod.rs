//! Rows files: the three shapes `data import`, `data check` and live seeding read,
//! streamed row by row in bounded memory.
//!
//! * a JSON object `{"<entity>": [row, …], …}` (a *document*),
//! * tagged JSONL, one `{"entity": "<name>", "row": {…}}` per line,
//! * bare rows (only with `--entity`): a JSON array of rows, or JSONL of row objects.
//!
//! `-` reads stdin and `*.gz` files are gunzipped. Shape detection, the refusals and
//! their wording follow the original's `batch.iter_rows`: the first non-space
//! character picks array vs object, and for an object the first line (≤ 1 MiB)
//! decides between JSONL and a document. Rows are parsed as Python's `json.loads`
//! parses them (integers vs floats, member order, a repeated member silently last).

use crate::error::{ContractError, Error, Result};
use crate::json::{parse_loads, ParseError, RangeProblem, Value};
use indexmap::IndexMap;
use std::borrow::Cow;

mod reader;
mod source;

pub(crate) use reader::Reader;
pub use source::open_source;

/// Bytes read from a source per block.
pub const READ_BLOCK: usize = 256 * 1024;
/// A first line longer than this is a one-line document, never a JSONL row.
pub const LINE_CAP: usize = 1024 * 1024;

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

fn decode(text: &str) -> Result<Decoded, ParseError> {
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

fn rows_error(message: impl Into<String>, at: &str) -> Error {
    ContractError::new("rows", message, at).into()
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

fn python_blank(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// One more row of `entity` (no allocation once the entity is known).
fn count(seen: &mut Seen, entity: &str) {
    match seen.get_mut(entity) {
        Some(n) => *n += 1,
        None => {
            seen.insert(entity.to_string(), 1);
        }
    }
}

/// The sink rows are pushed into.
pub type Sink<'s> = dyn FnMut(Row) -> Result<Flow> + 's;

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

fn as_row(value: Value, at: &str) -> Result<Value> {
    match value {
        Value::Object(_) => Ok(value),
        _ => Err(rows_error(format!("{at}: a row must be a JSON object"), at)),
    }
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

/// JSONL lines handed to the preparing threads at a time.
const PREPARE_BLOCK: usize = 2048;

/// Lines of a file read on the calling thread alone before helpers start: on a
/// small file their start-up costs more than they save. (The tests start them
/// mid-file, on files of a few thousand lines.)
const ONE_THREAD_LINES: usize = if cfg!(test) { 3_000 } else { 16 * PREPARE_BLOCK };

/// Turns a JSONL row's text (entity named) straight into a `P` when it can; None
/// sends the row through the general reading and `prepare`.
pub type PrepareText<'a, P> = &'a (dyn Fn(&str, &str) -> Option<P> + Sync);

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

/// How a JSONL line becomes its entity's name and prepared row.
struct LinePreparer<'a, P> {
    /// The entity of bare rows (`--entity`).
    entity: Option<&'a str>,
    prepare_text: Option<PrepareText<'a, P>>,
    prepare: &'a (dyn Fn(Row) -> P + Sync),
}

impl<P> LinePreparer<'_, P> {
    /// One non-blank line (line `number` of `at`).
    fn prepare<'l>(&'l self, line: &'l str, number: usize, at: &str) -> Result<(Cow<'l, str>, P)> {
        if let Some(prepare_text) = self.prepare_text {
            let parts = match self.entity {
                Some(entity) => Some((entity, line)),
                None => tagged_parts(line),
            };
            if let Some((name, prepared)) = parts.and_then(|(name, json)| Some((name, prepare_text(name, json)?))) {
                return Ok((Cow::Borrowed(name), prepared));
            }
        }
        let row = jsonl_row(line, number, at, self.entity)?;
        Ok((Cow::Owned(row.entity.clone()), (self.prepare)(row)))
    }
}

fn stream_jsonl_prepared<P: Send>(
    reader: &mut Reader<'_>,
    at: &str,
    seen: &mut Seen,
    threads: usize,
    lines: &LinePreparer<'_, P>,
    sink: &mut dyn FnMut(P) -> Result<Flow>,
    mut number: usize,
) -> Result<Flow> {
    /// A share of a block: its lines' text in one buffer, with each line's number and end.
    #[derive(Default)]
    struct Lines {
        text: String,
        ends: Vec<(usize, usize)>,
    }
    // Each prepared row comes back with its entity's name when it differs from the
    // previous row's in the share (rows mostly come in runs of one entity).
    type Prepared<P> = Vec<Result<(Option<String>, P)>>;
    let preparer = lines;
    let work = |lines: &Lines| -> Prepared<P> {
        let mut start = 0;
        let mut previous: Option<String> = None;
        lines
            .ends
            .iter()
            .map(|&(number, end)| {
                let line = &lines.text[start..end];
                start = end;
                let (entity, row) = preparer.prepare(line, number, at)?;
                let name = match &previous {
                    Some(name) if *name == *entity => None,
                    _ => {
                        previous = Some(entity.into_owned());
                        previous.clone()
                    }
                };
                Ok((name, row))
            })
            .collect()
    };
    std::thread::scope(|scope| {
        // Helpers live as long as the file: a thread per block would start a fresh
        // allocator heap each time. Each gets a share of every block and sends it back.
        let helpers: Vec<_> = (1..threads)
            .map(|_| {
                let (to_helper, lines_in) = std::sync::mpsc::sync_channel::<Lines>(1);
                let (results_out, from_helper) = std::sync::mpsc::sync_channel::<Prepared<P>>(1);
                let work = &work;
                scope.spawn(move || {
                    for lines in lines_in {
                        if results_out.send(work(&lines)).is_err() {
                            break;
                        }
                    }
                });
                (to_helper, from_helper)
            })
            .collect();
        let mut current = String::new();
        let mut sink_all = |prepared: Prepared<P>| -> Result<Flow> {
            for item in prepared {
                let (name, row) = item?;
                if let Some(name) = name {
                    current = name;
                }
                count(seen, &current);
                if sink(row)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
            Ok(Flow::More)
        };
        // The previous block's rows: sunk while the helpers prepare the next block.
        let mut pending: Option<Prepared<P>> = None;
        let share = PREPARE_BLOCK.div_ceil(threads);
        loop {
            // Share k of the block holds its lines k*share .. (k+1)*share.
            let mut shares: Vec<Lines> = (0..threads).map(|_| Lines::default()).collect();
            let mut held = 0;
            let (mut ended, mut unreadable) = (false, None);
            while held < PREPARE_BLOCK {
                match reader.line(None) {
                    Ok(Some(range)) => {
                        number += 1;
                        let line = reader.text(range);
                        if !python_blank(line) {
                            let lines = &mut shares[held / share];
                            lines.text.push_str(line);
                            lines.ends.push((number, lines.text.len()));
                            held += 1;
                        }
                        reader.compact();
                    }
                    Ok(None) => {
                        ended = true;
                        break;
                    }
                    // The rows before the unreadable text still come first.
                    Err(error) => {
                        unreadable = Some(error);
                        break;
                    }
                }
            }
            let mut shares = shares.into_iter();
            let mine = shares.next().expect("one share at least");
            let mut handed = 0;
            for ((to_helper, _), lines) in helpers.iter().zip(shares) {
                if lines.ends.is_empty() {
                    break;
                }
                if to_helper.send(lines).is_err() {
                    return Err(plain("a row-preparing thread stopped"));
                }
                handed += 1;
            }
            if let Some(previous) = pending.take() {
                if sink_all(previous)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
            let mut prepared = work(&mine);
            for (_, from_helper) in helpers.iter().take(handed) {
                prepared.extend(from_helper.recv().map_err(|_| plain("a row-preparing thread stopped"))?);
            }
            if unreadable.is_none() && !ended {
                pending = Some(prepared);
                continue;
            }
            if sink_all(prepared)? == Flow::Stop {
                return Ok(Flow::Stop);
            }
            return match unreadable {
                Some(error) => Err(error),
                None => Ok(Flow::More),
            };
        }
    })
}

pub(crate) fn stream_array(reader: &mut Reader<'_>, at: &str, entity: &str, seen: &mut Seen, sink: &mut Sink<'_>) -> Result<Flow> {
    let rows = LinePreparer { entity: None, prepare_text: None, prepare: &|row| row };
    stream_array_prepared(reader, at, entity, seen, &rows, sink)
}

/// The rows of a JSON array, each offered to `rows.prepare_text` as text first.
fn stream_array_prepared<P>(
    reader: &mut Reader<'_>,
    at: &str,
    entity: &str,
    seen: &mut Seen,
    rows: &LinePreparer<'_, P>,
    sink: &mut dyn FnMut(P) -> Result<Flow>,
) -> Result<Flow> {
    reader.take(b'[', at)?;
    let mut index = 0usize;
    loop {
        if reader.peek()? == Some(b']') {
            reader.pos += 1;
            return Ok(Flow::More);
        }
        let here = || format!("{at}[{index}]");
        let Some(span) = reader.span()? else { return Err(reader.invalid(&here())) };
        let fast = rows.prepare_text.and_then(|prepare_text| prepare_text(entity, reader.text(span)));
        let prepared = match fast {
            Some(prepared) => {
                reader.pos = span.1;
                prepared
            }
            None => {
                let decoded = reader.decode(span, &here())?;
                let value = as_row(decoded.value, &here())?;
                (rows.prepare)(Row { entity: entity.to_string(), value, problem: decoded.problem, lone_surrogate: decoded.surrogate })
            }
        };
        count(seen, entity);
        if sink(prepared)? == Flow::Stop {
            return Ok(Flow::Stop);
        }
        reader.compact();
        index += 1;
        match reader.peek()? {
            Some(b',') => reader.pos += 1,
            Some(b']') => {}
            _ => return Err(rows_error(format!("{at}: expected ',' or ']' after row {}", index - 1), at)),
        }
    }
}

/// The refusal of a non-empty input that holds no rows, saying why.
fn no_rows(at: &str, why: &str) -> Error {
    rows_error(
        format!(
            "{at} holds no rows: {why} (expected {{\"<entity>\": [rows]}}, \
             JSONL lines {{\"entity\", \"row\"}}, or bare rows with --entity)"
        ),
        at,
    )
}

fn stream_document<P>(
    reader: &mut Reader<'_>,
    at: &str,
    entity: Option<&str>,
    seen: &mut Seen,
    rows: &LinePreparer<'_, P>,
    sink: &mut dyn FnMut(P) -> Result<Flow>,
) -> Result<Flow> {
    reader.take(b'{', at)?;
    if reader.peek()? == Some(b'}') {
        // Beyond the original, which reads such a file as zero rows and reports
        // success: a non-empty input that names nothing is almost always the wrong file.
        return Err(no_rows(at, "the document names no entity"));
    }
    loop {
        if reader.peek()? == Some(b'}') {
            reader.pos += 1;
            return Ok(Flow::More);
        }
        let Value::Str(name) = reader.value(at)?.value else {
            return Err(rows_error(format!("{at}: object keys must be entity names"), at));
        };
        reader.take(b':', at)?;
        if reader.peek()? != Some(b'[') {
            return Err(rows_error(format!("{at}: {name} must map to an array of rows (JSONL lines are {{\"entity\", \"row\"}})"), at));
        }
        if entity.is_some_and(|e| e != name) {
            return Err(rows_error(format!("{at} maps entities; drop --entity or make the file a bare array"), at));
        }
        seen.entry(name.clone()).or_insert(0);
        if stream_array_prepared(reader, &format!("{at}:{name}"), &name, seen, rows, sink)? == Flow::Stop {
            return Ok(Flow::Stop);
        }
        match reader.peek()? {
            Some(b',') => reader.pos += 1,
            Some(b'}') => {}
            _ => return Err(rows_error(format!("{at}: expected ',' or '}}' after {name}"), at)),
        }
    }
}

/// Lines read and prepared one at a time on the calling thread, `number` counting
/// them, until `limit` lines (None: no limit). Some(flow) when the file ended or
/// the sink stopped; None when the limit came first.
fn stream_jsonl<P>(
    reader: &mut Reader<'_>,
    at: &str,
    seen: &mut Seen,
    lines: &LinePreparer<'_, P>,
    sink: &mut dyn FnMut(P) -> Result<Flow>,
    number: &mut usize,
    limit: Option<usize>,
) -> Result<Option<Flow>> {
    loop {
        if limit.is_some_and(|limit| *number >= limit) {
            return Ok(None);
        }
        let Some(range) = reader.line(None)? else { return Ok(Some(Flow::More)) };
        *number += 1;
        let line = reader.text(range);
        if !python_blank(line) {
            let (entity, row) = lines.prepare(line, *number, at)?;
            count(seen, &entity);
            if sink(row)? == Flow::Stop {
                return Ok(Some(Flow::Stop));
            }
        }
        reader.compact();
    }
}

/// A tagged line exactly as `json.dumps` writes one — `{"entity": "<name>", "row": {…}}`,
/// either separator style, a name without escapes — as the name and the row's text
/// (which a caller may read on its own, skipping the wrapper object). None for
/// anything else: the general path reads those.
fn tagged_parts(line: &str) -> Option<(&str, &str)> {
    fn space(text: &str) -> &str {
        text.strip_prefix(' ').unwrap_or(text)
    }
    let rest = space(line.strip_prefix("{\"entity\":")?).strip_prefix('"')?;
    let end = rest.find('"')?;
    let name = &rest[..end];
    if name.bytes().any(|b| b == b'\\' || b < 0x20) {
        return None;
    }
    let rest = space(space(rest[end + 1..].strip_prefix(',')?).strip_prefix("\"row\":")?);
    let body = rest.trim_end_matches([' ', '\t', '\r', '\n']).strip_suffix('}')?;
    Some((name, body))
}

/// A tagged line (see [`tagged_parts`]) with its row parsed on its own. None also
/// for a row with a range problem (whose pointer must be the whole line's).
fn tagged_line(line: &str) -> Option<Row> {
    let (name, body) = tagged_parts(line)?;
    let parsed = parse_loads(body).ok()?;
    if parsed.problem.is_some() || !matches!(parsed.value, Value::Object(_)) {
        return None;
    }
    Some(Row { entity: name.to_string(), value: parsed.value, problem: None, lone_surrogate: None })
}

/// One non-blank JSONL line (line `number` of `at`) as a row.
fn jsonl_row(line: &str, number: usize, at: &str, entity: Option<&str>) -> Result<Row> {
    if entity.is_none() {
        if let Some(row) = tagged_line(line) {
            return Ok(row);
        }
    }
    jsonl_row_parsed(line, number, at, entity)
}

/// [`jsonl_row`] by parsing the whole line.
fn jsonl_row_parsed(line: &str, number: usize, at: &str, entity: Option<&str>) -> Result<Row> {
    let parsed = match decode(line) {
        Ok(parsed) => parsed,
        Err(ParseError::Syntax(_) | ParseError::DuplicateKey(_)) => {
            return Err(rows_error(format!("{at}:{number} is not JSON"), at));
        }
    };
    let here = || format!("{at}:{number}");
    Ok(match entity {
        Some(entity) => Row {
            entity: entity.to_string(),
            value: as_row(parsed.value, &here())?,
            problem: parsed.problem,
            lone_surrogate: parsed.surrogate,
        },
        None => {
            let tagged = match parsed.value {
                Value::Object(mut map) if map.len() == 2 && matches!(map.get("entity"), Some(Value::Str(_))) && map.contains_key("row") => {
                    let Some(Value::Str(name)) = map.shift_remove("entity") else { unreachable!("checked") };
                    Some((name, map.shift_remove("row").expect("checked")))
                }
                _ => None,
            };
            let Some((name, value)) = tagged else {
                return Err(rows_error(
                    format!("{at}:{number}: expected {{\"entity\": name, \"row\": {{…}}}} (or pass --entity for bare rows)"),
                    at,
                ));
            };
            Row { entity: name, value: as_row(value, &here())?, problem: parsed.problem, lone_surrogate: parsed.surrogate }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, entity: Option<&str>) -> Result<(Vec<(String, String)>, Seen)> {
        let dir = std::env::temp_dir().join(format!("gw-rows-{}-{}", std::process::id(), crate::store::new_batch_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rows.json");
        std::fs::write(&path, text).unwrap();
        let mut out = Vec::new();
        let mut seen = Seen::default();
        let result = read_rows(&[path.to_string_lossy().into_owned()], entity, &mut seen, None, &mut |row| {
            out.push((row.entity, crate::json::canonical(&row.value)));
            Ok(Flow::More)
        });
        std::fs::remove_dir_all(&dir).unwrap();
        result.map(|_| (out, seen))
    }

    /// What reading `bytes` yields, through `read_rows` or the threaded reader.
    fn outcome(bytes: &[u8], threads: Option<usize>) -> (usize, String, Vec<(String, usize)>, Option<String>) {
        let dir = std::env::temp_dir().join(format!("gw-rows-{}-{}", std::process::id(), crate::store::new_batch_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rows.jsonl");
        std::fs::write(&path, bytes).unwrap();
        let sources = [path.to_string_lossy().into_owned()];
        let mut out = Vec::new();
        let mut seen = Seen::default();
        let result = match threads {
            None => read_rows(&sources, None, &mut seen, None, &mut |row| {
                out.push(crate::json::canonical(&row.value));
                Ok(if out.len() == 9_000 { Flow::Stop } else { Flow::More })
            }),
            Some(threads) => {
                let prepare = |row: Row| crate::json::canonical(&row.value);
                // Every other row read from its text alone: the two ways interleave.
                let prepare_text = |_: &str, json: &str| {
                    let row = parse_loads(json).ok().filter(|p| p.problem.is_none() && json.len().is_multiple_of(2))?;
                    Some(crate::json::canonical(&row.value))
                };
                read_rows_prepared(&sources, None, &mut seen, None, threads, Some(&prepare_text), &prepare, &mut |text| {
                    out.push(text);
                    Ok(if out.len() == 9_000 { Flow::Stop } else { Flow::More })
                })
            }
        };
        std::fs::remove_dir_all(&dir).unwrap();
        let error = result.err().map(|e| message(e).replace(&sources[0], "rows.jsonl"));
        (out.len(), crate::files::sha256_hex(out.join("\n").as_bytes()), seen.into_iter().collect(), error)
    }

    #[test]
    fn threaded_reading_matches_one_thread() {
        let line = |i: usize| format!("{{\"entity\": \"e{}\", \"row\": {{\"id\": {i}}}}}\n", i % 3);
        let rows: String = (0..5_000).map(line).collect();
        let cases: Vec<Vec<u8>> = vec![
            rows.clone().into_bytes(),
            format!("{rows}\n  \n{}", line(7)).into_bytes(),
            format!("{rows}{{\"entity\": 1}}\n{rows}").into_bytes(),
            [rows.as_bytes(), b"{\"entity\": \"e\", \"row\": {\"x\": \"\xff\"}}\n", rows.as_bytes()].concat(),
            format!("{rows}{rows}").into_bytes(),
        ];
        for (i, bytes) in cases.iter().enumerate() {
            let one = outcome(bytes, None);
            for threads in [1, 2, 3] {
                assert_eq!(outcome(bytes, Some(threads)), one, "case {i}, {threads} threads");
            }
        }
    }

    #[test]
    fn tagged_lines_read_as_parsed_whole() {
        let lines = [
            r#"{"entity": "a", "row": {"id": 1, "x": [1, 2.5, "s"]}}"#,
            r#"{"entity":"a","row":{"id":1}}"#,
            "{\"entity\": \"a\", \"row\": {\"id\": 1}}\r",
            r#"{"entity": "é", "row": {"id": 1, "id": 2}}"#,
            r#"{"entity": "a\u0062", "row": {"id": 1}}"#,
            r#"{"entity": "a", "row": {"id": 1}, "x": 1}"#,
            r#"{"entity": "a", "row": {"id": 9007199254740993}}"#,
            r#"{"entity": "a", "row": [1]}"#,
            r#"{"row": {"id": 1}, "entity": "a"}"#,
        ];
        for line in lines {
            let whole = jsonl_row_parsed(line, 1, "f", None).map(|r| (r.entity, crate::json::canonical(&r.value), r.problem.is_some()));
            match tagged_line(line) {
                Some(row) => assert_eq!(whole.ok(), Some((row.entity, crate::json::canonical(&row.value), false)), "{line}"),
                None => assert!(!line.starts_with(r#"{"entity": "a", "row": {"id": 1}}"#), "{line} should be read fast"),
            }
        }
        assert!(tagged_line(lines[0]).is_some() && tagged_line(lines[1]).is_some() && tagged_line(lines[2]).is_some());
        assert!(tagged_line(lines[4]).is_none() && tagged_line(lines[5]).is_none() && tagged_line(lines[6]).is_none());
    }

    fn message(error: Error) -> String {
        match error {
            Error::Contract(c) => c.message,
            other => other.to_string(),
        }
    }

    #[test]
    fn three_shapes() {
        let (rows, seen) = read("{\"a\": [{\"id\": 1}, {\"id\": 2.0}], \"b\": []}", None).unwrap();
        assert_eq!(rows, [("a".into(), "{\"id\":1}".into()), ("a".into(), "{\"id\":2.0}".into())]);
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [("a".to_string(), 2), ("b".to_string(), 0)]);
        let (rows, _) = read("{\"entity\": \"a\", \"row\": {\"id\": 1}}\n\n{\"row\": {\"id\": 2}, \"entity\": \"b\"}", None).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].0, "b");
        let (rows, _) = read("\u{feff} [{\"id\": 1},{\"id\": 2},]", Some("a")).unwrap();
        assert_eq!(rows.len(), 2);
        let (rows, _) = read("{\"id\": 1}\n{\"id\": 2}\n", Some("a")).unwrap();
        assert_eq!(rows.len(), 2);
        let (rows, _) = read("{\"a\": [{\"id\": 1}]}", Some("a")).unwrap();
        assert_eq!(rows.len(), 1);
    }

    #[test]
    fn refusals_name_the_place() {
        assert!(message(read("[{}]", None).unwrap_err()).ends_with("is a bare array; say which entity it holds with --entity"));
        assert!(message(read(" {\n} ", None).unwrap_err()).contains("holds no rows: the document names no entity"));
        assert!(message(read(" \n\n\t", None).unwrap_err()).contains("holds no rows: it holds only whitespace"));
        assert!(read("", None).is_ok(), "an empty input is zero rows, as the original reads it");
        assert!(read("{\"a\": []}", None).is_ok(), "an explicit empty entity is a choice (replace mode empties it)");
        assert!(message(read("{\"a\": [{}", None).unwrap_err()).ends_with(":a: expected ',' or ']' after row 0"));
        assert!(message(read("{\"a\": [1]}", None).unwrap_err()).ends_with(":a[0]: a row must be a JSON object"));
        assert!(message(read("{\"a\": 1}", None).unwrap_err()).contains("a must map to an array of rows"));
        assert!(message(read("{\"entity\": \"a\", \"row\": {}}\nnope\n", None).unwrap_err()).ends_with(":2 is not JSON"));
        assert!(message(read("{\"entity\": \"a\", \"row\": {}}\n[1]\n", None).unwrap_err()).contains(":2: expected {\"entity\""));
        assert!(message(read("{\"a\": [{\"x\": tru}]}", None).unwrap_err()).ends_with(":a[0]: not valid JSON"));
        assert!(message(read("5", None).unwrap_err()).ends_with("is neither a JSON object of entity -> rows nor an array of rows"));
        assert!(
            message(read("{\n\"b\": []}", Some("a")).unwrap_err()).ends_with("maps entities; drop --entity or make the file a bare array")
        );
    }

    #[test]
    fn duplicates_keep_the_last_value() {
        let (rows, _) = read("{\"a\": [{\"id\": 1, \"x\": 1, \"id\": 2}]}", None).unwrap();
        assert_eq!(rows[0].1, "{\"id\":2,\"x\":1}");
    }

    #[test]
    fn values_across_block_edges() {
        let mut text = String::from("{\"a\": [");
        for i in 0..40_000 {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&format!("{{\"id\": {i}, \"name\": \"é{i}\"}}"));
        }
        text.push_str("]}");
        let (rows, _) = read(&text, None).unwrap();
        assert_eq!(rows.len(), 40_000);
        assert_eq!(rows[39_999].1, "{\"id\":39999,\"name\":\"é39999\"}");
    }

    #[test]
    fn python_bytes_repr() {
        assert_eq!(bytes_repr(b"th"), "b'th'");
        assert_eq!(bytes_repr(b"\x00'"), "b\"\\x00'\"");
    }
}

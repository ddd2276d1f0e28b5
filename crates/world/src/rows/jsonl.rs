//! JSONL rows: one row per line, tagged (`{"entity", "row"}`) or bare, read on the
//! calling thread or, past the first lines of a large file, prepared on helper threads
//! a block at a time and handed to the sink in input order.

use super::reader::Reader;
use super::row::{as_row, count, decode, plain, python_blank, rows_error, Flow, Row, Seen};
use crate::error::{Error, Result};
use crate::json::{parse_loads, ParseError, Value};
use std::borrow::Cow;

/// JSONL lines handed to the preparing threads at a time.
pub(super) const PREPARE_BLOCK: usize = 2048;

/// Turns a JSONL row's text (entity named) straight into a `P` when it can; None
/// sends the row through the general reading and `prepare`.
pub type PrepareText<'a, P> = &'a (dyn Fn(&str, &str) -> Option<P> + Sync);

/// How a JSONL line becomes its entity's name and prepared row.
pub(super) struct LinePreparer<'a, P> {
    /// The entity of bare rows (`--entity`).
    pub(super) entity: Option<&'a str>,
    pub(super) prepare_text: Option<PrepareText<'a, P>>,
    pub(super) prepare: &'a (dyn Fn(Row) -> P + Sync),
}

impl<P> LinePreparer<'_, P> {
    /// One non-blank line (line `number` of `at`).
    pub(super) fn prepare<'l>(&'l self, line: &'l str, number: usize, at: &str) -> Result<(Cow<'l, str>, P)> {
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

/// A share of a block: its lines' text in one buffer, with each line's number and end.
#[derive(Default)]
struct Lines {
    text: String,
    ends: Vec<(usize, usize)>,
}

/// A share's rows as prepared: each comes back with its entity's name when it differs
/// from the previous row's in the share (rows mostly come in runs of one entity).
type PreparedShare<P> = Vec<Result<(Option<String>, P)>>;

/// How a block's reading ended: the file went on, ended, or became unreadable (the
/// rows before the unreadable text still come first).
struct Block {
    /// Share k holds the block's lines k*share .. (k+1)*share.
    shares: Vec<Lines>,
    ended: bool,
    unreadable: Option<Error>,
}

/// The rest of a JSONL file (past line `number`), a block of lines at a time: the
/// calling thread and `threads - 1` helpers prepare a share of each block while the
/// previous block's rows are sunk, in input order.
pub(super) fn stream_jsonl_prepared<P: Send>(
    reader: &mut Reader<'_>,
    at: &str,
    seen: &mut Seen,
    threads: usize,
    lines: &LinePreparer<'_, P>,
    sink: &mut dyn FnMut(P) -> Result<Flow>,
    mut number: usize,
) -> Result<Flow> {
    let work = |share: &Lines| prepare_share(lines, share, at);
    std::thread::scope(|scope| {
        // Helpers live as long as the file: a thread per block would start a fresh
        // allocator heap each time. Each gets a share of every block and sends it back.
        let helpers: Vec<_> = (1..threads)
            .map(|_| {
                let (to_helper, lines_in) = std::sync::mpsc::sync_channel::<Lines>(1);
                let (results_out, from_helper) = std::sync::mpsc::sync_channel::<PreparedShare<P>>(1);
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
        let mut sink_all = |prepared: PreparedShare<P>| sink_share(prepared, &mut current, seen, sink);
        // The previous block's rows: sunk while the helpers prepare the next block.
        let mut pending: Option<PreparedShare<P>> = None;
        loop {
            let Block { shares, ended, unreadable } = read_block(reader, threads, &mut number);
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

/// The next [`PREPARE_BLOCK`] non-blank lines (fewer at the end of the file), cut
/// into `threads` shares; `number` counts the lines read, blank ones included.
fn read_block(reader: &mut Reader<'_>, threads: usize, number: &mut usize) -> Block {
    let share = PREPARE_BLOCK.div_ceil(threads);
    let mut block = Block { shares: (0..threads).map(|_| Lines::default()).collect(), ended: false, unreadable: None };
    let mut held = 0;
    while held < PREPARE_BLOCK {
        match reader.line(None) {
            Ok(Some(range)) => {
                *number += 1;
                let line = reader.text(range);
                if !python_blank(line) {
                    let lines = &mut block.shares[held / share];
                    lines.text.push_str(line);
                    lines.ends.push((*number, lines.text.len()));
                    held += 1;
                }
                reader.compact();
            }
            Ok(None) => {
                block.ended = true;
                break;
            }
            Err(error) => {
                block.unreadable = Some(error);
                break;
            }
        }
    }
    block
}

/// Runs on any thread: a share's lines prepared (see [`PreparedShare`]).
fn prepare_share<P>(preparer: &LinePreparer<'_, P>, lines: &Lines, at: &str) -> PreparedShare<P> {
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
}

/// A share's rows into the sink, in order, each counted under its entity (`current`
/// is the entity of the rows without a name of their own).
fn sink_share<P>(
    prepared: PreparedShare<P>,
    current: &mut String,
    seen: &mut Seen,
    sink: &mut dyn FnMut(P) -> Result<Flow>,
) -> Result<Flow> {
    for item in prepared {
        let (name, row) = item?;
        if let Some(name) = name {
            *current = name;
        }
        count(seen, current);
        if sink(row)? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::More)
}

/// Lines read and prepared one at a time on the calling thread, `number` counting
/// them, until `limit` lines (None: no limit). Some(flow) when the file ended or
/// the sink stopped; None when the limit came first.
pub(super) fn stream_jsonl<P>(
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
pub(super) fn tagged_parts(line: &str) -> Option<(&str, &str)> {
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
pub(super) fn jsonl_row(line: &str, number: usize, at: &str, entity: Option<&str>) -> Result<Row> {
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
}

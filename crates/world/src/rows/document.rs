//! Rows in JSON documents: a bare array of one entity's rows, and an object of
//! entity → rows, streamed one value at a time.

use super::jsonl::LinePreparer;
use super::reader::Reader;
use super::row::{as_row, count, no_rows, rows_error, Flow, Row, Seen, Sink};
use crate::error::Result;
use crate::json::Value;

pub(crate) fn stream_array(reader: &mut Reader<'_>, at: &str, entity: &str, seen: &mut Seen, sink: &mut Sink<'_>) -> Result<Flow> {
    let rows = LinePreparer { entity: None, prepare_text: None, prepare: &|row| row };
    stream_array_prepared(reader, at, entity, seen, &rows, sink)
}

/// The rows of a JSON array, each offered to `rows.prepare_text` as text first.
pub(super) fn stream_array_prepared<P>(
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

pub(super) fn stream_document<P>(
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

//! The incremental reader under every rows shape: a UTF-8 text stream with a growing
//! buffer, read one JSON value (finding its end before parsing it) or one line at a time.

use super::{decode, plain, rows_error, Decoded, LINE_CAP, READ_BLOCK};
use crate::error::{Error, Result};
use std::io::Read;

/// Scanning state of a value whose end is not in the buffer yet.
#[derive(Default)]
struct Scan {
    at: usize,
    depth: usize,
    in_string: bool,
    escape: bool,
}

/// A UTF-8 text stream with a growing buffer, decoded one JSON value or line at a time.
pub(crate) struct Reader<'a> {
    inner: Box<dyn Read + 'a>,
    source: &'a str,
    buf: Vec<u8>,
    pub(crate) pos: usize,
    eof: bool,
    tail: Vec<u8>,
    block: Vec<u8>,
}

const WS: [u8; 4] = [b' ', b'\t', b'\r', b'\n'];

impl<'a> Reader<'a> {
    pub(crate) fn new(inner: Box<dyn Read + 'a>, source: &'a str) -> Self {
        Reader { inner, source, buf: Vec::new(), pos: 0, eof: false, tail: Vec::new(), block: vec![0; READ_BLOCK] }
    }

    fn utf8_error(&self) -> Error {
        rows_error(format!("Cannot read {} as UTF-8 text", self.source), self.source)
    }

    /// Read one more block; false at the end of the stream.
    fn fill(&mut self) -> Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let n = loop {
            match self.inner.read(&mut self.block) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(plain(e.to_string())),
            }
        };
        if n == 0 {
            self.eof = true;
            if !self.tail.is_empty() {
                return Err(self.utf8_error());
            }
            return Ok(false);
        }
        if self.tail.is_empty() {
            match std::str::from_utf8(&self.block[..n]) {
                Ok(_) => self.buf.extend_from_slice(&self.block[..n]),
                Err(e) if e.error_len().is_some() => return Err(self.utf8_error()),
                Err(e) => {
                    self.buf.extend_from_slice(&self.block[..e.valid_up_to()]);
                    self.tail.extend_from_slice(&self.block[e.valid_up_to()..n]);
                }
            }
        } else {
            self.tail.extend_from_slice(&self.block[..n]);
            match std::str::from_utf8(&self.tail) {
                Ok(_) => {
                    self.buf.append(&mut self.tail);
                }
                Err(e) if e.error_len().is_some() => return Err(self.utf8_error()),
                Err(e) => {
                    let valid = e.valid_up_to();
                    self.buf.extend_from_slice(&self.tail[..valid]);
                    self.tail.drain(..valid);
                }
            }
        }
        Ok(true)
    }

    /// Read the rest of the stream, only to find undecodable text (a failed decode
    /// in the original reads on to the end before failing).
    fn drain(&mut self) -> Result<()> {
        loop {
            let start = self.buf.len();
            if !self.fill()? {
                return Ok(());
            }
            self.buf.truncate(start.max(self.pos));
        }
    }

    /// Drop consumed text once enough has accumulated (positions before `pos` are dead).
    pub(crate) fn compact(&mut self) {
        if self.pos >= LINE_CAP {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }

    /// Whether the stream held any text at all (whitespace included) up to here.
    pub(crate) fn read_anything(&self) -> bool {
        self.pos > 0 || !self.buf.is_empty()
    }

    /// The next non-whitespace byte (BOMs count as whitespace), or None at the end.
    pub(crate) fn peek(&mut self) -> Result<Option<u8>> {
        loop {
            while self.pos < self.buf.len() {
                let b = self.buf[self.pos];
                if WS.contains(&b) {
                    self.pos += 1;
                } else if b == 0xEF && self.buf[self.pos..].starts_with(&[0xEF, 0xBB, 0xBF]) {
                    self.pos += 3;
                } else {
                    return Ok(Some(b));
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    pub(crate) fn take(&mut self, char: u8, at: &str) -> Result<()> {
        if self.peek()? != Some(char) {
            return Err(rows_error(format!("{at}: expected '{}' in the JSON document", char as char), at));
        }
        self.pos += 1;
        Ok(())
    }

    /// The refusal of text at `at` that is not JSON (after checking the rest of the
    /// stream is UTF-8, as the original reads it whole first).
    pub(crate) fn invalid(&mut self, at: &str) -> Error {
        if let Err(error) = self.drain() {
            return error;
        }
        rows_error(format!("{at}: not valid JSON"), at)
    }

    /// Where the next JSON value lies in the buffer, reading more of the stream as
    /// needed; None when no JSON value starts there (see [`Reader::invalid`]).
    pub(crate) fn span(&mut self) -> Result<Option<(usize, usize)>> {
        self.peek()?;
        let mut scan = Scan { at: self.pos, ..Scan::default() };
        let end = loop {
            match scan_value(&self.buf, self.pos, &mut scan) {
                Scanned::End(end) => {
                    // A number or literal may continue past the buffer's edge.
                    if end == self.buf.len() && self.fill()? {
                        scan = Scan { at: self.pos, ..Scan::default() };
                        continue;
                    }
                    break end;
                }
                Scanned::More => {
                    if !self.fill()? {
                        return Ok(None);
                    }
                }
                Scanned::Invalid => return Ok(None),
            }
        };
        Ok(Some((self.pos, end)))
    }

    /// Decode the next JSON value, reading more of the stream as needed.
    pub(crate) fn value(&mut self, at: &str) -> Result<Decoded> {
        let Some(span) = self.span()? else { return Err(self.invalid(at)) };
        self.decode(span, at)
    }

    /// Decode the value [`Reader::span`] found, and move past it.
    pub(crate) fn decode(&mut self, span: (usize, usize), at: &str) -> Result<Decoded> {
        match decode(self.text(span)) {
            Ok(decoded) => {
                self.pos = span.1;
                Ok(decoded)
            }
            Err(_) => Err(self.invalid(at)),
        }
    }

    /// The next line without its newline, or None at the end. With `cap`, a line
    /// longer than it is handed back without being consumed.
    pub(crate) fn line(&mut self, cap: Option<usize>) -> Result<Option<(usize, usize)>> {
        let mut searched = self.pos;
        loop {
            if let Some(offset) = memchr::memchr(b'\n', &self.buf[searched..]) {
                let start = self.pos;
                let end = searched + offset;
                self.pos = end + 1;
                return Ok(Some((start, end)));
            }
            searched = self.buf.len();
            if cap.is_some_and(|cap| self.buf.len() - self.pos > cap) {
                return Ok(Some((self.pos, self.buf.len())));
            }
            if !self.fill()? {
                break;
            }
        }
        if self.pos == self.buf.len() {
            return Ok(None);
        }
        let start = self.pos;
        self.pos = self.buf.len();
        Ok(Some((start, self.buf.len())))
    }

    pub(crate) fn text(&self, range: (usize, usize)) -> &str {
        std::str::from_utf8(&self.buf[range.0..range.1]).expect("utf-8 buffer")
    }
}

enum Scanned {
    End(usize),
    More,
    Invalid,
}

/// Find where the JSON value starting at `start` ends, resuming from `scan`.
fn scan_value(buf: &[u8], start: usize, scan: &mut Scan) -> Scanned {
    let Some(&first) = buf.get(start) else { return Scanned::More };
    match first {
        b'{' | b'[' | b'"' => {
            if scan.at == start {
                if first == b'"' {
                    scan.in_string = true;
                } else {
                    scan.depth = 1;
                }
                scan.at = start + 1;
            }
            let mut i = scan.at;
            while i < buf.len() {
                let b = buf[i];
                if scan.in_string {
                    if scan.escape {
                        scan.escape = false;
                    } else if b == b'\\' {
                        scan.escape = true;
                    } else if b == b'"' {
                        scan.in_string = false;
                        if scan.depth == 0 {
                            return Scanned::End(i + 1);
                        }
                    } else if let Some(offset) = memchr::memchr2(b'"', b'\\', &buf[i + 1..]) {
                        i += offset;
                    } else {
                        i = buf.len() - 1;
                    }
                } else {
                    match b {
                        b'"' => scan.in_string = true,
                        b'{' | b'[' => scan.depth += 1,
                        b'}' | b']' => {
                            scan.depth -= 1;
                            if scan.depth == 0 {
                                return Scanned::End(i + 1);
                            }
                        }
                        _ => {}
                    }
                }
                i += 1;
            }
            scan.at = buf.len();
            Scanned::More
        }
        _ => {
            let rest = &buf[start..];
            for literal in [&b"null"[..], b"true", b"false", b"NaN", b"Infinity", b"-Infinity"] {
                if rest.starts_with(literal) {
                    return Scanned::End(start + literal.len());
                }
                if literal.starts_with(rest) {
                    return Scanned::More;
                }
            }
            match crate::json::number_end(rest, 0) {
                Some((n, _)) => Scanned::End(start + n),
                None => Scanned::Invalid,
            }
        }
    }
}

//! Opening a rows source: a file, `-` for stdin, `*.gz` gunzipped as Python's `gzip`
//! reads it, with the raw bytes counted for a progress bar.

use super::{bytes_repr, rows_error, Progress};
use crate::error::Result;
use std::io::Read;
use std::path::Path;

struct Counting<'a, R> {
    inner: R,
    progress: Option<Progress<'a>>,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(progress) = self.progress {
            progress(n as u64);
        }
        Ok(n)
    }
}

/// Open a rows source: `-` is stdin, `*.gz` is gunzipped (its magic checked on the
/// first read, as Python's `gzip` does).
pub fn open_source<'a>(source: &str, progress: Option<Progress<'a>>) -> Result<Box<dyn Read + 'a>> {
    if source == "-" {
        return Ok(Box::new(Counting { inner: std::io::stdin(), progress }));
    }
    let path = Path::new(source);
    if path.is_dir() {
        return Err(rows_error(format!("Cannot read {source}"), source));
    }
    let file = std::fs::File::open(path).map_err(|_| rows_error(format!("Cannot read {source}"), source))?;
    let counted = Counting { inner: file, progress };
    if path.extension().is_some_and(|x| x == "gz") {
        return Ok(Box::new(Gunzip::new(counted)));
    }
    Ok(Box::new(counted))
}

/// A gzip stream checked the way Python's `gzip` checks it.
struct Gunzip<R: Read> {
    state: GzState<R>,
}

enum GzState<R: Read> {
    Start(R),
    Running(Box<flate2::read::MultiGzDecoder<std::io::Chain<std::io::Cursor<Vec<u8>>, R>>>),
    Done,
}

impl<R: Read> Gunzip<R> {
    fn new(inner: R) -> Self {
        Gunzip { state: GzState::Start(inner) }
    }
}

impl<R: Read> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match std::mem::replace(&mut self.state, GzState::Done) {
                GzState::Done => return Ok(0),
                GzState::Start(mut inner) => {
                    let mut magic = Vec::with_capacity(2);
                    (&mut inner).take(2).read_to_end(&mut magic)?;
                    if magic.is_empty() {
                        return Ok(0);
                    }
                    if magic != [0x1f, 0x8b] {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("Not a gzipped file ({})", bytes_repr(&magic)),
                        ));
                    }
                    let chained = std::io::Cursor::new(magic).chain(inner);
                    self.state = GzState::Running(Box::new(flate2::read::MultiGzDecoder::new(chained)));
                }
                GzState::Running(mut decoder) => {
                    let n = decoder.read(buf).map_err(|error| {
                        let text = if error.kind() == std::io::ErrorKind::UnexpectedEof {
                            "Compressed file ended before the end-of-stream marker was reached".to_string()
                        } else {
                            format!("Error -3 while decompressing data: {error}")
                        };
                        std::io::Error::new(std::io::ErrorKind::InvalidData, text)
                    })?;
                    self.state = GzState::Running(decoder);
                    return Ok(n);
                }
            }
        }
    }
}

// ------------------------------------------------------------------ the reader

//! Opening a rows source: a file, `-` for stdin, `*.gz` gunzipped as Python's `gzip`
//! reads it, with the raw bytes counted for a progress bar.
//!
//! A stream (stdin, a pipe such as bash's `<(…)`, a FIFO) is spooled to a file under the
//! process's temp root the first time it is opened, and every later open of the same
//! source reads that file: an import counts the rows (for the inline cap) before it
//! parses them, and the original fails there on stdin ("I/O operation on closed file").

use super::{bytes_repr, rows_error, Progress};
use crate::error::Result;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

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
    let spooled;
    let path = if is_stream(source) {
        spooled = spool(source)?;
        spooled.as_path()
    } else {
        Path::new(source)
    };
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

/// Whether `source` can be read only once: stdin, or a path that is neither a regular
/// file nor a directory (a pipe, a FIFO, a character device).
fn is_stream(source: &str) -> bool {
    source == "-" || std::fs::metadata(source).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The file a stream was spooled to, spooling it on first use. Process-wide because the
/// stream itself is: stdin can be drained once per process, whoever opens it.
fn spool(source: &str) -> Result<PathBuf> {
    static SPOOLED: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut spooled = SPOOLED.get_or_init(Default::default).lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(path) = spooled.get(source) {
        return Ok(path.clone());
    }
    let cannot = |_| rows_error(format!("Cannot read {source}"), source);
    // process_root() exists once returned (created, or the system temp dir itself).
    let path = gateway_common::temp::process_root().join(format!("rows-stream-{}", spooled.len()));
    let mut file = std::fs::File::create(&path).map_err(cannot)?;
    let copied = if source == "-" {
        std::io::copy(&mut std::io::stdin().lock(), &mut file)
    } else {
        std::fs::File::open(source).and_then(|mut stream| std::io::copy(&mut stream, &mut file))
    };
    copied.map_err(cannot)?;
    spooled.insert(source.to_string(), path.clone());
    Ok(path)
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

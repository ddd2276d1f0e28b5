//! Rows cut into upload chunks exactly as the original's `chunk_rows` cuts them
//! (spec §9.6), so a chunk's digest is the same whichever client made it.
//!
//! * Each row is one JSONL line, `json.dumps(value, ensure_ascii=False,
//!   separators=(",", ":"), allow_nan=False)`, member order as read, Python's float
//!   formatting; tagged `{"entity": …, "row": …}` unless the chunks are of one entity
//!   (`--entity`), then bare rows.
//! * A chunk closes before a line when it already holds `chunk_rows` rows, or when its
//!   JSONL plus the line would pass `chunk_bytes` (never mid-row: a row larger than
//!   the bound is a chunk of its own). Ordinals start at 0.
//! * The chunk file is gzip, level 9, mtime 0, with the FNAME `chunk-NNNNN.jsonl`
//!   (the name Python's `GzipFile` takes from `chunk-NNNNN.jsonl.gz`); its digest is
//!   the sha256 of those gzipped bytes.
//!
//! Cutting ([`cut_chunks`]) writes each chunk's JSONL to a plain file and hands it
//! over as soon as it closes; compressing ([`compress_chunk`]) is separate, so the
//! caller may compress several chunks at once on other threads.

use crate::check::encode_line;
use crate::error::{Error, Result};
use crate::rows::{read_rows_prepared, Flow, Progress, Row, Seen};
use sha2::{Digest, Sha256};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// JSONL bytes per chunk by default (64 MiB).
pub const CHUNK_BYTES: usize = 64 * 1024 * 1024;

/// How rows are cut.
#[derive(Debug, Clone)]
pub struct ChunkOptions {
    /// JSONL bytes per chunk (before gzip).
    pub chunk_bytes: usize,
    /// Rows per chunk, when bounded by rows too.
    pub chunk_rows: Option<usize>,
    /// The one entity of bare-row chunks; None for tagged lines.
    pub entity: Option<String>,
    /// Threads that parse and encode JSONL rows (the cut itself is in input order).
    pub threads: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        ChunkOptions { chunk_bytes: CHUNK_BYTES, chunk_rows: None, entity: None, threads: 2 }
    }
}

/// A chunk's JSONL, cut but not compressed: a plain file.
#[derive(Debug, Clone)]
pub struct RawChunk {
    /// Its ordinal.
    pub ordinal: usize,
    /// The plain JSONL file (`chunk-NNNNN.jsonl`).
    pub path: PathBuf,
    /// Rows it holds.
    pub rows: usize,
    /// The index of its first row in the input.
    pub first_row: usize,
    /// Bytes of JSONL.
    pub content_bytes: u64,
    /// The entity of bare rows.
    pub entity: Option<String>,
}

/// A compressed chunk: what is registered and uploaded.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Its ordinal.
    pub ordinal: usize,
    /// The gzip file (`chunk-NNNNN.jsonl.gz`).
    pub path: PathBuf,
    /// sha256 hex of the gzip file: the chunk's address.
    pub digest: String,
    /// The gzip file's size.
    pub bytes: u64,
    /// Rows it holds.
    pub rows: usize,
    /// The entity of bare rows.
    pub entity: Option<String>,
    /// Bytes of JSONL before gzip.
    pub content_bytes: u64,
    /// sha256 hex of the JSONL.
    pub content_sha256: String,
    /// The index of its first row in the input.
    pub first_row: usize,
}

/// `chunk-NNNNN.jsonl`: a chunk's JSONL name (and the gzip header's FNAME).
pub fn chunk_name(ordinal: usize) -> String {
    format!("chunk-{ordinal:05}.jsonl")
}

/// The chunk being written.
struct Open {
    raw: RawChunk,
    out: BufWriter<std::fs::File>,
}

impl Open {
    fn close(self) -> Result<RawChunk> {
        let Open { raw, out } = self;
        let file = out.into_inner().map_err(|e| Error::io(e.into_error(), &raw.path))?;
        drop(file);
        Ok(raw)
    }
}

/// Stream the rows of `sources` and cut them into chunks under `dir`, handing each
/// to `sink` as it closes (in ordinal order). A row the line encoding refuses (NaN,
/// infinities, a lone surrogate) stops the cut with the original's message.
pub fn cut_chunks(
    sources: &[String],
    dir: &Path,
    options: &ChunkOptions,
    progress: Option<Progress<'_>>,
    sink: &mut dyn FnMut(RawChunk) -> Result<Flow>,
) -> Result<()> {
    if options.chunk_bytes < 1 || options.chunk_rows == Some(0) {
        return Err(crate::error::ContractError::new("chunk", "chunk bounds must be positive", "/chunk").into());
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(e, dir))?;
    let tagged = options.entity.is_none();
    // On the reading threads: each row's line, or the encoding's refusal.
    let prepare = |row: Row| -> Result<String> { encode_line(&row, tagged) };
    let mut open: Option<Open> = None;
    let mut ordinal = 0usize;
    let mut seen_rows = 0usize;
    let mut stopped = false;
    let mut take = |line: Result<String>| -> Result<Flow> {
        let mut line = line?;
        line.push('\n');
        let len = line.len() as u64;
        if let Some(current) = &open {
            let full = options.chunk_rows.is_some_and(|n| current.raw.rows >= n)
                || (current.raw.content_bytes > 0 && current.raw.content_bytes + len > options.chunk_bytes as u64);
            if full {
                let closed = open.take().expect("open").close()?;
                if sink(closed)? == Flow::Stop {
                    stopped = true;
                    return Ok(Flow::Stop);
                }
            }
        }
        if open.is_none() {
            let path = dir.join(chunk_name(ordinal));
            let file = std::fs::File::create(&path).map_err(|e| Error::io(e, &path))?;
            let raw = RawChunk { ordinal, path, rows: 0, first_row: seen_rows, content_bytes: 0, entity: options.entity.clone() };
            open = Some(Open { raw, out: BufWriter::with_capacity(1 << 20, file) });
            ordinal += 1;
        }
        let current = open.as_mut().expect("open");
        current.out.write_all(line.as_bytes()).map_err(|e| Error::io(e, &current.raw.path))?;
        current.raw.rows += 1;
        current.raw.content_bytes += len;
        seen_rows += 1;
        Ok(Flow::More)
    };
    let mut seen = Seen::default();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(options.threads.max(1));
    read_rows_prepared(sources, options.entity.as_deref(), &mut seen, progress, threads, None, &prepare, &mut take)?;
    if let (Some(last), false) = (open.take(), stopped) {
        sink(last.close()?)?;
    }
    Ok(())
}

/// Gzip a cut chunk as Python's `GzipFile(mtime=0)` writes `chunk-NNNNN.jsonl.gz`
/// (level 9, FNAME `chunk-NNNNN.jsonl`) beside it, remove the plain file, and
/// digest the result.
pub fn compress_chunk(raw: &RawChunk) -> Result<Chunk> {
    let name = chunk_name(raw.ordinal);
    let path = raw.path.with_file_name(format!("{name}.gz"));
    let file = std::fs::File::create(&path).map_err(|e| Error::io(e, &path))?;
    let hashing = HashingWriter { inner: BufWriter::with_capacity(1 << 20, file), digest: Sha256::new(), bytes: 0 };
    let mut encoder = flate2::GzBuilder::new().filename(name.as_bytes()).mtime(0).write(hashing, flate2::Compression::best());
    let mut content = Sha256::new();
    let mut input = std::fs::File::open(&raw.path).map_err(|e| Error::io(e, &raw.path))?;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = input.read(&mut buffer).map_err(|e| Error::io(e, &raw.path))?;
        if n == 0 {
            break;
        }
        content.update(&buffer[..n]);
        encoder.write_all(&buffer[..n]).map_err(|e| Error::io(e, &path))?;
    }
    let mut hashing = encoder.finish().map_err(|e| Error::io(e, &path))?;
    hashing.inner.flush().map_err(|e| Error::io(e, &path))?;
    let _ = std::fs::remove_file(&raw.path);
    Ok(Chunk {
        ordinal: raw.ordinal,
        path,
        digest: hex::encode(hashing.digest.finalize()),
        bytes: hashing.bytes,
        rows: raw.rows,
        entity: raw.entity.clone(),
        content_bytes: raw.content_bytes,
        content_sha256: hex::encode(content.finalize()),
        first_row: raw.first_row,
    })
}

/// A writer that hashes and counts what passes through it.
struct HashingWriter<W: Write> {
    inner: W,
    digest: Sha256,
    bytes: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.digest.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `64MiB`, `1000000`, `64k`, `2 GB`…: the original's `--chunk-bytes` sizes
/// (`k`/`kib` = 1024, `kb` = 1000, likewise `m`, `g`; case and spaces ignored).
pub fn parse_size(text: &str) -> Result<usize> {
    let raw: String = text.trim().to_lowercase().chars().filter(|c| *c != ' ').collect();
    let digits_end = raw.trim_end_matches(|c: char| c.is_ascii_lowercase()).len();
    let (digits, unit) = raw.split_at(digits_end);
    let factor: usize = match unit {
        "" | "b" => 1,
        "k" | "kib" => 1024,
        "kb" => 1000,
        "m" | "mib" => 1024 * 1024,
        "mb" => 1000 * 1000,
        "g" | "gib" => 1024 * 1024 * 1024,
        "gb" => 1000 * 1000 * 1000,
        _ => 0,
    };
    let refused = || {
        crate::rows::plain(format!(
            "--chunk-bytes takes a size like 64MiB or 1000000, not {}",
            crate::json::python_repr(&crate::json::Value::str(text))
        ))
    };
    if factor == 0 || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refused());
    }
    digits.parse::<usize>().ok().and_then(|n| n.checked_mul(factor)).ok_or_else(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("1000000").unwrap(), 1_000_000);
        assert_eq!(parse_size("2 kb").unwrap(), 2000);
        assert_eq!(parse_size("3G").unwrap(), 3 << 30);
        assert_eq!(parse_size("12x").unwrap_err().to_string(), "--chunk-bytes takes a size like 64MiB or 1000000, not '12x'");
        assert!(parse_size("MiB").is_err());
    }

    #[test]
    fn chunks_cut_on_row_boundaries_and_carry_fname() {
        let dir = tempfile::tempdir().unwrap();
        let rows = dir.path().join("rows.jsonl");
        let mut text = String::new();
        for i in 0..10 {
            text.push_str(&format!("{{\"entity\": \"t\", \"row\": {{\"id\": {i}, \"name\": \"é{i}\", \"x\": 1.0}}}}\n"));
        }
        std::fs::write(&rows, text).unwrap();
        let options = ChunkOptions { chunk_bytes: 110, ..ChunkOptions::default() };
        let mut chunks = Vec::new();
        cut_chunks(&[rows.to_string_lossy().into_owned()], &dir.path().join("out"), &options, None, &mut |raw| {
            chunks.push(compress_chunk(&raw)?);
            Ok(Flow::More)
        })
        .unwrap();
        // Each line is 52 bytes: two per chunk.
        assert_eq!(chunks.len(), 5);
        assert!(chunks.iter().all(|c| c.rows == 2));
        let bytes = std::fs::read(&chunks[1].path).unwrap();
        assert_eq!(&bytes[..10], b"\x1f\x8b\x08\x08\x00\x00\x00\x00\x02\xff");
        assert_eq!(&bytes[10..28], b"chunk-00001.jsonl\0");
        let mut plain = String::new();
        flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut plain).unwrap();
        assert_eq!(plain.lines().next().unwrap(), r#"{"entity":"t","row":{"id":2,"name":"é2","x":1.0}}"#);
        assert_eq!(chunks[1].digest, crate::files::sha256_hex(&bytes));
        assert_eq!(chunks[1].first_row, 2);
    }
}

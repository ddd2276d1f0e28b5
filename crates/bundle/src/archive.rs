//! What a pushed bundle is made of, byte for byte as the original computes it:
//! the archive file selection and the content hash (spec §9.1), the deterministic
//! source tarball (§9.2), the full-tree file manifest (§9.3), the archive-visible
//! snapshot recorded as `baseFiles` (§9.4). Reading one back safely is [`crate::extract`]'s.

use crate::gitignore::Matcher;
use crate::BundleError;
use gateway_world::json::{object, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const PRUNED_DIRS: [&str; 4] = ["dist", "__pycache__", "build", "outputs"];
const MANIFEST_SKIP_DIRS: [&str; 8] = [".git", "__pycache__", "node_modules", ".venv", ".mypy_cache", "dist", "build", "outputs"];

/// One selected file: its `/`-separated path relative to the root and where it is.
#[derive(Debug, Clone)]
pub struct ArchiveFile {
    /// Relative path with `/` separators.
    pub rel: String,
    /// The file on disk.
    pub path: PathBuf,
}

fn rel_of(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

fn include_file(path: &Path, rel: &str) -> bool {
    // `is_file()` follows links; a symlink is refused even when it points at a file.
    let Ok(meta) = fs::metadata(path) else { return false };
    if !meta.is_file() {
        return false;
    }
    if fs::symlink_metadata(path).map(|m| m.file_type().is_symlink()).unwrap_or(true) {
        return false;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if name.starts_with('.') {
        return false;
    }
    !rel.split('/').any(|part| part == "__pycache__")
}

fn include_dir(path: &Path) -> bool {
    if !path.is_dir() {
        return false;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    !(name.starts_with('.') || PRUNED_DIRS.contains(&name.as_str()) || name.ends_with(".egg-info"))
}

fn sorted_entries(dir: &Path) -> Vec<fs::DirEntry> {
    let mut entries: Vec<fs::DirEntry> = match fs::read_dir(dir) {
        Ok(read) => read.filter_map(Result::ok).collect(),
        Err(_) => Vec::new(),
    };
    entries.sort_by_key(|e| e.file_name());
    entries
}

/// A root-level glob of the original: `README.md`, `pyproject.toml`, `*.py`, or `*`.
fn root_glob(name: &str, pattern: &str) -> bool {
    match pattern {
        "*" => true,
        "*.py" => name.ends_with(".py"),
        exact => name == exact,
    }
}

/// `collect_archive_files`: the files the content hash and the tarball cover, sorted
/// by relative path (code-point order).
pub fn collect_archive_files(root: &Path) -> Result<Vec<ArchiveFile>, BundleError> {
    let gitignore = root.join(".gitignore");
    let matcher = if gitignore.exists() {
        let bytes = fs::read(&gitignore).map_err(|e| BundleError::io(&gitignore, e))?;
        Some(Matcher::parse(&String::from_utf8_lossy(&bytes)))
    } else {
        None
    };
    let ignored = |rel: &str| matcher.as_ref().is_some_and(|m| m.is_ignored(rel));
    let mut files: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut maybe_add = |path: &Path| {
        let rel = rel_of(root, path);
        if include_file(path, &rel) && !ignored(&rel) {
            files.insert(rel, path.to_path_buf());
        }
    };

    let root_entries = sorted_entries(root);
    let mut patterns = vec!["README.md", "pyproject.toml", "*.py"];
    if root.join("gateway-env.toml").is_file() || root.join("gateway-api-world.toml").is_file() {
        patterns.push("*");
    }
    for pattern in patterns {
        for entry in &root_entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if root_glob(&name, pattern) {
                maybe_add(&entry.path());
            }
        }
    }

    let dir_pruned = |path: &Path| !include_dir(path) || ignored(&rel_of(root, path));
    for entry in &root_entries {
        let sub = entry.path();
        if dir_pruned(&sub) {
            continue;
        }
        // The original's os.walk follows a top-level directory that is a symlink (a
        // link to /etc pushed /etc). A push never leaves the world: refuse it.
        if entry.file_type().is_ok_and(|kind| kind.is_symlink()) {
            let target = fs::read_link(&sub).map(|t| t.display().to_string()).unwrap_or_default();
            return Err(BundleError::LinkedDirectory { path: rel_of(root, &sub), target });
        }
        let mut stack = vec![sub];
        while let Some(dir) = stack.pop() {
            let mut subdirs = Vec::new();
            for child in sorted_entries(&dir) {
                let path = child.path();
                let Ok(kind) = child.file_type() else { continue };
                let is_dir = if kind.is_symlink() { path.is_dir() } else { kind.is_dir() };
                if is_dir {
                    if !kind.is_symlink() && !dir_pruned(&path) {
                        subdirs.push(path);
                    }
                } else {
                    maybe_add(&path);
                }
            }
            for sub in subdirs.into_iter().rev() {
                stack.push(sub);
            }
        }
    }
    Ok(files.into_iter().map(|(rel, path)| ArchiveFile { rel, path }).collect())
}

/// `compute_content_hash`: sha256 over `"file:" + relpath` and the bytes of each selected
/// file, in order; lowercase hex. An unreadable file contributes its path only.
pub fn compute_content_hash(root: &Path) -> Result<String, BundleError> {
    let mut hasher = Sha256::new();
    for file in collect_archive_files(root)? {
        hasher.update(format!("file:{}", file.rel).as_bytes());
        if let Ok(bytes) = fs::read(&file.path) {
            hasher.update(&bytes);
        }
    }
    Ok(hex::encode(hasher.finalize()))
}

/// `{relpath: sha256 hex}` over the archive-visible tree: the working copy's `baseFiles`.
pub fn snapshot_tree_hashes(root: &Path) -> Result<BTreeMap<String, String>, BundleError> {
    let mut out = BTreeMap::new();
    for file in collect_archive_files(root)? {
        let bytes = fs::read(&file.path).map_err(|e| BundleError::io(&file.path, e))?;
        out.insert(file.rel, hex::encode(Sha256::digest(&bytes)));
    }
    Ok(out)
}

// ------------------------------------------------------------------ tarball

/// A tar block: headers and payloads are padded to it.
pub(crate) const BLOCK: usize = 512;
const RECORD: usize = 20 * BLOCK;

fn octal(out: &mut Vec<u8>, value: u64, width: usize) {
    out.extend_from_slice(format!("{:0w$o}", value, w = width - 1).as_bytes());
    out.push(0);
}

fn text_field(out: &mut Vec<u8>, bytes: &[u8], width: usize) {
    let take = bytes.len().min(width);
    out.extend_from_slice(&bytes[..take]);
    out.resize(out.len() + (width - take), 0);
}

/// A ustar header block as Python's `tarfile` writes it in PAX format.
pub(crate) fn ustar_header(name: &[u8], mode: u32, size: u64, kind: u8) -> [u8; BLOCK] {
    let mut buf = Vec::with_capacity(BLOCK);
    text_field(&mut buf, name, 100);
    octal(&mut buf, u64::from(mode & 0o7777), 8);
    octal(&mut buf, 0, 8); // uid
    octal(&mut buf, 0, 8); // gid
    octal(&mut buf, size, 12);
    octal(&mut buf, 0, 12); // mtime
    buf.extend_from_slice(b"        "); // checksum placeholder
    buf.push(kind);
    text_field(&mut buf, b"", 100); // linkname
    buf.extend_from_slice(b"ustar\x0000");
    text_field(&mut buf, b"", 32); // uname
    text_field(&mut buf, b"", 32); // gname
    text_field(&mut buf, b"", 8); // devmajor (not a device: NULs)
    text_field(&mut buf, b"", 8); // devminor
    text_field(&mut buf, b"", 155); // prefix
    buf.resize(BLOCK, 0);
    let sum: u32 = buf.iter().map(|b| u32::from(*b)).sum();
    let field = format!("{sum:06o}\0");
    buf[148..155].copy_from_slice(field.as_bytes());
    let mut block = [0u8; BLOCK];
    block.copy_from_slice(&buf);
    block
}

/// One pax record `"<len> path=<value>\n"`, the length counting itself.
fn pax_record(keyword: &str, value: &str) -> Vec<u8> {
    let base = keyword.len() + value.len() + 3;
    let mut p = 0usize;
    loop {
        let n = base + p.to_string().len();
        if n == p {
            break;
        }
        p = n;
    }
    format!("{p} {keyword}={value}\n").into_bytes()
}

/// A tar stream as `tarfile` (PAX format) writes it, member by member, into `W`.
pub struct TarWriter<W: Write> {
    out: W,
    written: u64,
}

impl<W: Write> TarWriter<W> {
    /// A stream into `out`.
    pub fn new(out: W) -> TarWriter<W> {
        TarWriter { out, written: 0 }
    }

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> std::io::Result<()> {
        let rem = (self.written % BLOCK as u64) as usize;
        if rem != 0 {
            self.put(&vec![0u8; BLOCK - rem])?;
        }
        Ok(())
    }

    /// One regular file member of `size` bytes read from `payload`.
    pub fn add(&mut self, name: &str, size: u64, payload: &mut dyn Read) -> std::io::Result<()> {
        let needs_pax = !name.is_ascii() || name.chars().count() > 100;
        if needs_pax {
            let records = pax_record("path", name);
            self.put(&ustar_header(b"././@PaxHeader", 0, records.len() as u64, b'x'))?;
            self.put(&records)?;
            self.pad()?;
        }
        // Non-ASCII characters become '?' (encode("ascii", "replace")), then truncation.
        let mangled: Vec<u8> = name.chars().map(|c| if c.is_ascii() { c as u8 } else { b'?' }).collect();
        self.put(&ustar_header(&mangled, 0o644, size, b'0'))?;
        let copied = std::io::copy(&mut payload.take(size), &mut self.out)?;
        self.written += copied;
        if copied != size {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("{name} changed while it was archived")));
        }
        self.pad()
    }

    /// The end-of-archive blocks and the record padding; the writer back.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.put(&[0u8; 2 * BLOCK])?;
        let rem = (self.written % RECORD as u64) as usize;
        if rem != 0 {
            self.put(&vec![0u8; RECORD - rem])?;
        }
        Ok(self.out)
    }
}

/// The uncompressed tar stream of the given files, as `tarfile` (PAX format) writes it.
pub fn tar_bytes(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut tar = TarWriter::new(Vec::new());
    for (name, payload) in files {
        tar.add(name, payload.len() as u64, &mut &payload[..]).expect("writing to memory");
    }
    tar.finish().expect("writing to memory")
}

/// The source tarball of the archive files under `root`, streamed into `out` through
/// gzip (mtime 0, no name) at `level`: the same members in the same order as
/// [`build_source_tarball`], which uses level 9 and holds it in memory. Files are read
/// as they are written, so a large tree never has to fit in memory.
pub fn write_source_tarball(root: &Path, out: impl Write, level: u32) -> Result<(), BundleError> {
    let encoder = flate2::GzBuilder::new().mtime(0).write(out, flate2::Compression::new(level));
    let mut tar = TarWriter::new(encoder);
    for file in collect_archive_files(root)? {
        let mut input = fs::File::open(&file.path).map_err(|e| BundleError::io(&file.path, e))?;
        let size = input.metadata().map_err(|e| BundleError::io(&file.path, e))?.len();
        tar.add(&file.rel, size, &mut input).map_err(|e| BundleError::io(&file.path, e))?;
    }
    let encoder = tar.finish().map_err(|e| BundleError::io(root, e))?;
    encoder.finish().map_err(|e| BundleError::io(root, e))?;
    Ok(())
}

/// gzip with mtime 0, no file name, level 9: `GzipFile(mtime=0, compresslevel=9)`.
pub fn gzip_bytes(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::new(9));
    encoder.write_all(data).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

/// `build_source_tarball`: the deterministic `.tar.gz` of the archive files.
pub fn build_source_tarball(root: &Path) -> Result<Vec<u8>, BundleError> {
    let mut files = Vec::new();
    for file in collect_archive_files(root)? {
        let bytes = fs::read(&file.path).map_err(|e| BundleError::io(&file.path, e))?;
        files.push((file.rel, bytes));
    }
    Ok(gzip_bytes(&tar_bytes(&files)))
}

/// `build_file_manifest`: the full tree (dotfiles and ignored files included), os.walk
/// order, as `[{path, isDirectory:false, size, sha256}]`.
pub fn build_file_manifest(root: &Path) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for child in sorted_entries(&dir) {
            let path = child.path();
            let name = child.file_name().to_string_lossy().into_owned();
            let Ok(kind) = child.file_type() else { continue };
            let is_dir = if kind.is_symlink() { path.is_dir() } else { kind.is_dir() };
            if is_dir {
                if !kind.is_symlink() && !MANIFEST_SKIP_DIRS.contains(&name.as_str()) && !name.ends_with(".egg-info") {
                    dirs.push(path);
                }
            } else {
                files.push(path);
            }
        }
        for path in files {
            let Ok(bytes) = fs::read(&path) else { continue };
            entries.push(object([
                ("path", Value::Str(rel_of(root, &path))),
                ("isDirectory", Value::Bool(false)),
                ("size", Value::Int(bytes.len() as i64)),
                ("sha256", Value::Str(hex::encode(Sha256::digest(&bytes)))),
            ]));
        }
        for sub in dirs.into_iter().rev() {
            stack.push(sub);
        }
    }
    entries
}

/// base64 of the raw sha256: the `x-amz-checksum-sha256` / `bundleSha256` form.
pub fn sha256_base64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_record_counts_itself() {
        assert_eq!(pax_record("path", "a"), b"9 path=a\n".to_vec());
        let long = "x".repeat(95);
        let rec = pax_record("path", &long);
        assert_eq!(rec.len().to_string(), String::from_utf8_lossy(&rec).split(' ').next().unwrap());
    }

    #[test]
    fn streamed_tarball_is_the_in_memory_one() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.py"), "print(1)\n").unwrap();
        fs::create_dir_all(dir.path().join("pkg")).unwrap();
        fs::write(dir.path().join(format!("pkg/{}.py", "é".repeat(60))), vec![7u8; 3000]).unwrap();
        let mut streamed = Vec::new();
        write_source_tarball(dir.path(), &mut streamed, 9).unwrap();
        assert_eq!(streamed, build_source_tarball(dir.path()).unwrap());
    }
}

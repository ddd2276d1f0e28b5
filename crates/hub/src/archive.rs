//! What a pushed bundle is made of, byte for byte as the original computes it:
//! the archive file selection and the content hash (spec §9.1), the deterministic
//! source tarball (§9.2), the full-tree file manifest (§9.3), the archive-visible
//! snapshot recorded as `baseFiles` (§9.4), and safe extraction of a downloaded bundle.

use crate::error::HubError;
use crate::gitignore::Matcher;
use gateway_world::json::{object, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

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
pub fn collect_archive_files(root: &Path) -> Result<Vec<ArchiveFile>, HubError> {
    let gitignore = root.join(".gitignore");
    let matcher = if gitignore.exists() {
        let bytes = fs::read(&gitignore).map_err(|e| HubError::io(&gitignore, e))?;
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
            return Err(HubError::UnsafeArchive(format!(
                "refusing to push {}: it is a symlink to a directory ({target}); a push never follows links out of the world — copy the files in or remove the link",
                rel_of(root, &sub)
            )));
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
pub fn compute_content_hash(root: &Path) -> Result<String, HubError> {
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
pub fn snapshot_tree_hashes(root: &Path) -> Result<BTreeMap<String, String>, HubError> {
    let mut out = BTreeMap::new();
    for file in collect_archive_files(root)? {
        let bytes = fs::read(&file.path).map_err(|e| HubError::io(&file.path, e))?;
        out.insert(file.rel, hex::encode(Sha256::digest(&bytes)));
    }
    Ok(out)
}

// ------------------------------------------------------------------ tarball

const BLOCK: usize = 512;
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
fn ustar_header(name: &[u8], mode: u32, size: u64, kind: u8) -> [u8; BLOCK] {
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
pub fn write_source_tarball(root: &Path, out: impl Write, level: u32) -> Result<(), HubError> {
    let encoder = flate2::GzBuilder::new().mtime(0).write(out, flate2::Compression::new(level));
    let mut tar = TarWriter::new(encoder);
    for file in collect_archive_files(root)? {
        let mut input = fs::File::open(&file.path).map_err(|e| HubError::io(&file.path, e))?;
        let size = input.metadata().map_err(|e| HubError::io(&file.path, e))?.len();
        tar.add(&file.rel, size, &mut input).map_err(|e| HubError::io(&file.path, e))?;
    }
    let encoder = tar.finish().map_err(|e| HubError::io(root, e))?;
    encoder.finish().map_err(|e| HubError::io(root, e))?;
    Ok(())
}

/// gzip with mtime 0, no file name, level 9: `GzipFile(mtime=0, compresslevel=9)`.
pub fn gzip_bytes(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::new(9));
    encoder.write_all(data).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

/// `build_source_tarball`: the deterministic `.tar.gz` of the archive files.
pub fn build_source_tarball(root: &Path) -> Result<Vec<u8>, HubError> {
    let mut files = Vec::new();
    for file in collect_archive_files(root)? {
        let bytes = fs::read(&file.path).map_err(|e| HubError::io(&file.path, e))?;
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

// ------------------------------------------------------------------ extraction

/// What the extension headers before one member (PAX records, GNU long names) may
/// take: the tar reader holds them in memory.
const EXTENSION_BYTES: u64 = 1024 * 1024;
/// Unpacked bytes below which the compression ratio is not judged: a small archive
/// of sparse files (an SQLite file's empty pages) legitimately packs tight.
pub const RATIO_FLOOR: u64 = 64 * 1024 * 1024;

/// Limits on what extraction accepts: generous for any real world, each one
/// overridable through the environment ([`ExtractLimits::from_env`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractLimits {
    /// Most members (files and directories).
    pub max_members: u64,
    /// Most bytes unpacked in all.
    pub max_bytes: u64,
    /// Most bytes one member unpacks to.
    pub max_member_bytes: u64,
    /// Most unpacked bytes per byte of the compressed archive, judged once more
    /// than [`RATIO_FLOOR`] bytes are unpacked.
    pub max_ratio: u64,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits { max_members: 100_000, max_bytes: 4 << 30, max_member_bytes: 1 << 30, max_ratio: 200 }
    }
}

impl ExtractLimits {
    /// The defaults, each replaced by its environment variable when that is set:
    /// `GATEWAY_ARCHIVE_MAX_MEMBERS`, `GATEWAY_ARCHIVE_MAX_BYTES`,
    /// `GATEWAY_ARCHIVE_MAX_MEMBER_BYTES` (sizes: `4GiB`, `1000000`…) and
    /// `GATEWAY_ARCHIVE_MAX_RATIO`. A value that is not a positive number is refused.
    pub fn from_env() -> Result<ExtractLimits, HubError> {
        let defaults = ExtractLimits::default();
        Ok(ExtractLimits {
            max_members: env_limit("GATEWAY_ARCHIVE_MAX_MEMBERS", false)?.unwrap_or(defaults.max_members),
            max_bytes: env_limit("GATEWAY_ARCHIVE_MAX_BYTES", true)?.unwrap_or(defaults.max_bytes),
            max_member_bytes: env_limit("GATEWAY_ARCHIVE_MAX_MEMBER_BYTES", true)?.unwrap_or(defaults.max_member_bytes),
            max_ratio: env_limit("GATEWAY_ARCHIVE_MAX_RATIO", false)?.unwrap_or(defaults.max_ratio),
        })
    }
}

/// One limit from the environment: None when unset or empty.
fn env_limit(name: &str, size: bool) -> Result<Option<u64>, HubError> {
    let Some(raw) = std::env::var_os(name).filter(|v| !v.is_empty()) else { return Ok(None) };
    let text = raw.to_string_lossy();
    let parsed = if size { gateway_world::chunks::parse_size(&text).ok().map(|n| n as u64) } else { text.trim().parse::<u64>().ok() };
    match parsed {
        Some(n) if n > 0 => Ok(Some(n)),
        _ => {
            let kind = if size { "size (like 4GiB or 1000000)" } else { "whole number" };
            Err(HubError::Client(format!("{name} must be a positive {kind}, not {text:?}")))
        }
    }
}

/// Check one member name: relative, no `..`, no root or prefix component.
pub fn check_member_path(name: &str) -> Result<PathBuf, HubError> {
    let path = Path::new(name);
    if name.is_empty() || path.is_absolute() || name.starts_with('/') || name.starts_with('\\') {
        return Err(HubError::UnsafeArchive(format!("unsafe path in archive: {name}")));
    }
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(HubError::UnsafeArchive(format!("unsafe path in archive: {name}")));
            }
        }
    }
    if clean.as_os_str().is_empty() {
        return Err(HubError::UnsafeArchive(format!("unsafe path in archive: {name}")));
    }
    Ok(clean)
}

/// The decompressed stream under the tar reader, metered: the reader may take the
/// current member's data and then at most [`EXTENSION_BYTES`] of headers before it
/// hands over the next member, so a huge PAX record or GNU long name (which it would
/// hold in memory) is refused instead of read.
struct Metered<R> {
    inner: R,
    meter: std::rc::Rc<Meter>,
}

#[derive(Default)]
struct Meter {
    /// Decompressed bytes read so far.
    read: std::cell::Cell<u64>,
    /// How far the reader may read before the next member is handed over.
    budget: std::cell::Cell<u64>,
    /// Set when the budget stopped the reader.
    tripped: std::cell::Cell<bool>,
}

impl Meter {
    /// A member was handed over: its data (padded to whole blocks) and the next
    /// member's headers may be read.
    fn allow(&self, size: u64) {
        self.budget.set(self.read.get().saturating_add(size.div_ceil(BLOCK as u64) * BLOCK as u64).saturating_add(EXTENSION_BYTES));
    }
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.meter.budget.get().saturating_sub(self.meter.read.get());
        if left == 0 && !buf.is_empty() {
            self.meter.tripped.set(true);
            return Err(std::io::Error::other("member headers too large"));
        }
        let take = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..take])?;
        self.meter.read.set(self.meter.read.get() + n as u64);
        Ok(n)
    }
}

/// A `.tar.gz` file's tar stream.
type Unpacked = Metered<flate2::read::GzDecoder<std::io::BufReader<fs::File>>>;

/// One pass over the members of a `.tar.gz` file: `each` sees every member that is
/// not an extension header, in order.
fn each_member(tgz: &Path, each: &mut dyn FnMut(&mut tar::Entry<'_, Unpacked>) -> Result<(), HubError>) -> Result<(), HubError> {
    let file = fs::File::open(tgz).map_err(|e| HubError::io(tgz, e))?;
    let meter = std::rc::Rc::new(Meter::default());
    meter.allow(0);
    let mut archive =
        tar::Archive::new(Metered { inner: flate2::read::GzDecoder::new(std::io::BufReader::new(file)), meter: meter.clone() });
    let mut previous = String::new();
    let bad = |e: std::io::Error, previous: &str, meter: &Meter| {
        if meter.tripped.get() {
            let after = if previous.is_empty() { String::new() } else { format!(" after {previous}") };
            HubError::UnsafeArchive(format!("the headers of the member{after} take more than {EXTENSION_BYTES} bytes"))
        } else {
            HubError::UnsafeArchive(format!("unreadable archive: {e}"))
        }
    };
    for entry in archive.entries().map_err(|e| bad(e, &previous, &meter))? {
        let mut entry = entry.map_err(|e| bad(e, &previous, &meter))?;
        meter.allow(entry.size());
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() || kind.is_gnu_longname() {
            continue;
        }
        previous = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        each(&mut entry).map_err(|e| match e {
            HubError::Io { source, .. } if meter.tripped.get() => bad(source, &previous, &meter),
            other => other,
        })?;
    }
    Ok(())
}

/// `safe_tar_extract` over a `.tar.gz` file, streamed: a first pass checks every
/// member (names, kinds, the limits) reading nothing into memory, and only then does a
/// second write them, so a refused archive writes nothing. Links, absolute paths, `..`
/// parts and special members are refused, and no member may land under a symlink
/// already inside `dest`. Returns how many members were written.
pub fn safe_extract_file(tgz: &Path, dest: &Path, limits: ExtractLimits) -> Result<usize, HubError> {
    let compressed = fs::metadata(tgz).map_err(|e| HubError::io(tgz, e))?.len();
    let mut planned: Vec<PathBuf> = Vec::new();
    let mut total: u64 = 0;
    each_member(tgz, &mut |entry| {
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            return Err(HubError::UnsafeArchive(format!("refusing link member in archive: {name}")));
        }
        let rel = check_member_path(&name)?;
        if !(kind.is_dir() || kind.is_file() || kind == tar::EntryType::Continuous) {
            return Err(HubError::UnsafeArchive(format!("refusing special member in archive: {name}")));
        }
        if planned.len() as u64 >= limits.max_members {
            return Err(HubError::TooLarge(format!(
                "member {name} is one more than the limit of {} members (GATEWAY_ARCHIVE_MAX_MEMBERS)",
                limits.max_members
            )));
        }
        let size = entry.size();
        if size > limits.max_member_bytes {
            return Err(HubError::TooLarge(format!(
                "member {name} unpacks to {size} bytes, past the limit of {} bytes per member (GATEWAY_ARCHIVE_MAX_MEMBER_BYTES)",
                limits.max_member_bytes
            )));
        }
        total = total.saturating_add(size);
        if total > limits.max_bytes {
            return Err(HubError::TooLarge(format!(
                "the members up to {name} unpack to {total} bytes, past the limit of {} bytes in all (GATEWAY_ARCHIVE_MAX_BYTES)",
                limits.max_bytes
            )));
        }
        if total > RATIO_FLOOR && total / limits.max_ratio > compressed {
            return Err(HubError::TooLarge(format!(
                "the members up to {name} unpack to {total} bytes from {compressed} compressed, more than {} times as many (GATEWAY_ARCHIVE_MAX_RATIO)",
                limits.max_ratio
            )));
        }
        planned.push(rel);
        Ok(())
    })?;
    fs::create_dir_all(dest).map_err(|e| HubError::io(dest, e))?;
    let dest = dest.canonicalize().map_err(|e| HubError::io(dest, e))?;
    for rel in &planned {
        let mut at = dest.clone();
        for part in rel.components() {
            at.push(part);
            if fs::symlink_metadata(&at).map(|m| m.file_type().is_symlink()).unwrap_or(false) {
                return Err(HubError::UnsafeArchive(format!("archive member escapes destination: {}", rel.display())));
            }
        }
    }
    let count = planned.len();
    let mut planned = planned.into_iter();
    each_member(tgz, &mut |entry| {
        // The archive is the file the first pass read: the same members, in order.
        let Some(rel) = planned.next() else { return Err(HubError::UnsafeArchive("the archive changed while it was extracted".into())) };
        let target = dest.join(rel);
        if entry.header().entry_type().is_dir() {
            return fs::create_dir_all(&target).map_err(|e| HubError::io(&target, e));
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| HubError::io(parent, e))?;
        }
        let mut out = fs::File::create(&target).map_err(|e| HubError::io(&target, e))?;
        std::io::copy(entry, &mut out).map_err(|e| HubError::io(&target, e))?;
        Ok(())
    })?;
    Ok(count)
}

/// [`safe_extract_file`] into `dest`, leaving nothing half-written: the archive is
/// extracted into a scratch directory beside `dest` (on its file system), which then
/// becomes `dest` by a rename, or — when `dest` already exists — is moved into it as
/// `tarfile.extractall` writes over a directory: files replaced, directories merged.
/// The moves are checked before any is made (none may put a file where a directory is,
/// or the reverse, or pass through a symlink in `dest`). A refused archive leaves
/// `dest` as it was, not even created.
pub fn extract_into(tgz: &Path, dest: &Path, limits: ExtractLimits) -> Result<usize, HubError> {
    let scratch = gateway_common::temp::Scratch::beside(dest, "extracting").map_err(|e| HubError::io(&e.path, e.source))?;
    let count = safe_extract_file(tgz, scratch.path(), limits)?;
    if fs::symlink_metadata(dest).is_err() {
        fs::rename(scratch.path(), dest).map_err(|e| HubError::io(dest, e))?;
        return Ok(count);
    }
    check_moves(scratch.path(), dest, Path::new(""))?;
    make_moves(scratch.path(), dest)?;
    Ok(count)
}

/// Entries of a directory in name order.
fn entries_of(dir: &Path) -> Result<Vec<fs::DirEntry>, HubError> {
    let mut entries =
        fs::read_dir(dir).map_err(|e| HubError::io(dir, e))?.collect::<std::io::Result<Vec<_>>>().map_err(|e| HubError::io(dir, e))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    Ok(entries)
}

/// Whether every entry under `from` can move to its place under `into` (`rel` is
/// `from`'s path inside the archive).
fn check_moves(from: &Path, into: &Path, rel: &Path) -> Result<(), HubError> {
    for entry in entries_of(from)? {
        let member = rel.join(entry.file_name());
        let target = into.join(entry.file_name());
        let Ok(there) = fs::symlink_metadata(&target) else { continue };
        let is_dir = entry.file_type().map_err(|e| HubError::io(&entry.path(), e))?.is_dir();
        if there.file_type().is_symlink() {
            return Err(HubError::UnsafeArchive(format!("archive member escapes destination: {}", member.display())));
        }
        match (is_dir, there.is_dir()) {
            (true, true) => check_moves(&entry.path(), &target, &member)?,
            (false, false) => {}
            (true, false) => {
                return Err(HubError::io(
                    &target,
                    std::io::Error::new(std::io::ErrorKind::AlreadyExists, "a file is where the archive has a directory"),
                ))
            }
            (false, true) => {
                return Err(HubError::io(
                    &target,
                    std::io::Error::new(std::io::ErrorKind::IsADirectory, "a directory is where the archive has a file"),
                ))
            }
        }
    }
    Ok(())
}

/// Move every entry under `from` to its place under `into` (checked by [`check_moves`]).
fn make_moves(from: &Path, into: &Path) -> Result<(), HubError> {
    for entry in entries_of(from)? {
        let target = into.join(entry.file_name());
        if target.is_dir() && entry.file_type().is_ok_and(|t| t.is_dir()) {
            make_moves(&entry.path(), &target)?;
        } else {
            fs::rename(entry.path(), &target).map_err(|e| HubError::io(&target, e))?;
        }
    }
    Ok(())
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
    fn member_paths() {
        assert!(check_member_path("a/b.txt").is_ok());
        assert!(check_member_path("../x").is_err());
        assert!(check_member_path("/etc/passwd").is_err());
        assert!(check_member_path("a/../../x").is_err());
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

    /// `files` as a `.tar.gz` file in `dir`, streamed (members may be large).
    fn tarball(dir: &Path, files: &[(&str, u64)]) -> PathBuf {
        let path = dir.join(format!("t-{}.tar.gz", crate::util::random_hex(4)));
        let encoder = flate2::write::GzEncoder::new(fs::File::create(&path).unwrap(), flate2::Compression::new(6));
        let mut tar = TarWriter::new(encoder);
        for (name, size) in files {
            tar.add(name, *size, &mut std::io::repeat(b'z').take(*size)).unwrap();
        }
        tar.finish().unwrap().finish().unwrap();
        path
    }

    fn refusal(result: Result<usize, HubError>) -> String {
        match result {
            Err(HubError::TooLarge(message) | HubError::UnsafeArchive(message)) => message,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn streamed_extraction_matches() {
        let dir = tempfile::tempdir().unwrap();
        let files = vec![("a.py".to_string(), b"print(1)\n".to_vec()), (format!("pkg/{}.py", "é".repeat(60)), b"x".to_vec())];
        let tgz = dir.path().join("b.tar.gz");
        fs::write(&tgz, gzip_bytes(&tar_bytes(&files))).unwrap();
        assert_eq!(safe_extract_file(&tgz, &dir.path().join("out"), ExtractLimits::default()).unwrap(), 2);
        assert_eq!(fs::read(dir.path().join("out/a.py")).unwrap(), b"print(1)\n");
        assert!(dir.path().join(format!("out/pkg/{}.py", "é".repeat(60))).is_file());
    }

    #[test]
    fn each_limit_is_refused_naming_the_member_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let tgz = tarball(dir.path(), &[("a.txt", 10), ("b.txt", 2000), ("c.txt", 10)]);
        let out = dir.path().join("out");
        let cases = [
            (ExtractLimits { max_members: 2, ..ExtractLimits::default() }, "member c.txt is one more than the limit of 2 members"),
            (
                ExtractLimits { max_member_bytes: 1999, ..ExtractLimits::default() },
                "member b.txt unpacks to 2000 bytes, past the limit of 1999",
            ),
            (ExtractLimits { max_bytes: 2015, ..ExtractLimits::default() }, "up to c.txt unpack to 2020 bytes, past the limit of 2015"),
        ];
        for (limits, said) in cases {
            let message = refusal(safe_extract_file(&tgz, &out, limits));
            assert!(message.contains(said), "{message}");
            assert!(!out.exists(), "nothing written when refused");
        }
        assert_eq!(
            safe_extract_file(&tgz, &out, ExtractLimits { max_members: 3, max_bytes: 2020, ..ExtractLimits::default() }).unwrap(),
            3
        );
    }

    #[test]
    fn a_bomb_is_refused_by_its_ratio_past_the_floor() {
        let dir = tempfile::tempdir().unwrap();
        // ~70 MiB of one byte repeated: a few hundred KiB gzipped.
        let tgz = tarball(dir.path(), &[("small.bin", 1000), ("bomb.bin", RATIO_FLOOR + (4 << 20))]);
        let out = dir.path().join("out");
        let message = refusal(safe_extract_file(&tgz, &out, ExtractLimits::default()));
        assert!(message.contains("the members up to bomb.bin unpack to") && message.contains("GATEWAY_ARCHIVE_MAX_RATIO"), "{message}");
        assert!(!out.exists());
        // Under the floor the ratio is not judged: a small, tightly packed archive is fine.
        let small = tarball(dir.path(), &[("sparse.bin", 1 << 20)]);
        assert_eq!(safe_extract_file(&small, &out, ExtractLimits::default()).unwrap(), 1);
    }

    /// A raw ustar header of `kind` for `name` with `size` bytes of data following.
    fn raw_member(name: &str, kind: u8, size: u64) -> Vec<u8> {
        ustar_header(name.as_bytes(), 0o644, size, kind).to_vec()
    }

    #[test]
    fn a_huge_extension_header_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pax.tar.gz");
        let mut encoder = flate2::write::GzEncoder::new(fs::File::create(&path).unwrap(), flate2::Compression::new(6));
        let size = 8 * EXTENSION_BYTES;
        encoder.write_all(&raw_member("././@PaxHeader", b'x', size)).unwrap();
        std::io::copy(&mut std::io::repeat(b'a').take(size), &mut encoder).unwrap();
        encoder.write_all(&raw_member("a.txt", b'0', 0)).unwrap();
        encoder.write_all(&[0u8; 1024]).unwrap();
        encoder.finish().unwrap();
        let message = refusal(safe_extract_file(&path, &dir.path().join("out"), ExtractLimits::default()));
        assert!(message.contains(&format!("take more than {EXTENSION_BYTES} bytes")), "{message}");
    }

    #[test]
    fn special_members_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for (kind, label) in [(b'3', "character device"), (b'4', "block device"), (b'6', "fifo"), (b'S', "sparse file")] {
            let path = dir.path().join("special.tar.gz");
            let mut tar = raw_member("odd", kind, 0);
            tar.extend_from_slice(&[0u8; 1024]);
            fs::write(&path, gzip_bytes(&tar)).unwrap();
            let result = safe_extract_file(&path, &dir.path().join("out"), ExtractLimits::default());
            assert!(result.is_err(), "{label} accepted");
            assert!(!dir.path().join("out/odd").exists());
        }
    }

    #[test]
    fn extract_into_is_all_or_nothing_and_merges_into_an_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let tgz = tarball(dir.path(), &[("a.txt", 3), ("sub/b.txt", 4)]);
        // A refused archive leaves no target and no scratch directory behind.
        let fresh = dir.path().join("fresh");
        let small = ExtractLimits { max_member_bytes: 3, ..ExtractLimits::default() };
        assert!(extract_into(&tgz, &fresh, small).is_err());
        let left: Vec<String> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(left.iter().all(|n| n.ends_with(".tar.gz")), "left behind: {left:?}");
        // A new target is the scratch directory renamed.
        assert_eq!(extract_into(&tgz, &fresh, ExtractLimits::default()).unwrap(), 2);
        assert_eq!(fs::read(fresh.join("sub/b.txt")).unwrap(), b"zzzz");
        // An existing one keeps what the archive does not name; named files are replaced.
        let existing = dir.path().join("existing");
        fs::create_dir_all(existing.join("sub")).unwrap();
        fs::write(existing.join("a.txt"), "old").unwrap();
        fs::write(existing.join("sub/keep.txt"), "mine").unwrap();
        assert_eq!(extract_into(&tgz, &existing, ExtractLimits::default()).unwrap(), 2);
        assert_eq!(fs::read(existing.join("a.txt")).unwrap(), b"zzz");
        assert_eq!(fs::read(existing.join("sub/keep.txt")).unwrap(), b"mine");
        // A symlink in the way is refused before anything moves.
        let linked = dir.path().join("linked");
        fs::create_dir_all(&linked).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path(), linked.join("sub")).unwrap();
            let message = refusal(extract_into(&tgz, &linked, ExtractLimits::default()));
            assert!(message.contains("escapes destination: sub"), "{message}");
            assert!(!linked.join("a.txt").exists());
        }
    }

    #[test]
    fn limits_from_the_environment() {
        // Each variable is read by name; a bad value is refused with its name.
        let read = |name: &str, value: &str, size: bool| {
            std::env::set_var(name, value);
            let read = env_limit(name, size);
            std::env::remove_var(name);
            read
        };
        assert_eq!(read("GATEWAY_TEST_ARCHIVE_LIMIT_A", "4GiB", true).unwrap(), Some(4 << 30));
        assert_eq!(read("GATEWAY_TEST_ARCHIVE_LIMIT_B", "12", false).unwrap(), Some(12));
        assert_eq!(read("GATEWAY_TEST_ARCHIVE_LIMIT_C", "", false).unwrap(), None);
        let refused = read("GATEWAY_TEST_ARCHIVE_LIMIT_D", "0", false).unwrap_err().to_string();
        assert!(refused.contains("GATEWAY_TEST_ARCHIVE_LIMIT_D must be a positive whole number"), "{refused}");
        assert!(read("GATEWAY_TEST_ARCHIVE_LIMIT_E", "lots", true).is_err());
    }

    #[test]
    fn tarball_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let files = vec![("a.py".to_string(), b"print(1)\n".to_vec()), (format!("pkg/{}.py", "é".repeat(60)), b"x".to_vec())];
        let tgz = dir.path().join("b.tar.gz");
        fs::write(&tgz, gzip_bytes(&tar_bytes(&files))).unwrap();
        let out = dir.path().join("out");
        assert_eq!(safe_extract_file(&tgz, &out, ExtractLimits::default()).unwrap(), 2);
        assert_eq!(fs::read(out.join("a.py")).unwrap(), b"print(1)\n");
        assert!(out.join(format!("pkg/{}.py", "é".repeat(60))).is_file());
    }
}

//! Safe extraction of a downloaded or uploaded bundle (the original's
//! `safe_tar_extract`, stricter): member names checked, links and special members
//! refused, members, unpacked bytes and compression ratio held to [`ExtractLimits`]
//! (`GATEWAY_ARCHIVE_MAX_*`), everything checked before anything is written, and
//! [`extract_into`] all or nothing through a scratch directory renamed into place.
//! Writing a bundle is [`crate::archive`]'s.

use crate::archive::BLOCK;
use crate::BundleError;
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

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
    pub fn from_env() -> Result<ExtractLimits, BundleError> {
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
fn env_limit(name: &str, size: bool) -> Result<Option<u64>, BundleError> {
    let Some(raw) = std::env::var_os(name).filter(|v| !v.is_empty()) else { return Ok(None) };
    let text = raw.to_string_lossy();
    let parsed = if size { gateway_world::chunks::parse_size(&text).ok().map(|n| n as u64) } else { text.trim().parse::<u64>().ok() };
    match parsed {
        Some(n) if n > 0 => Ok(Some(n)),
        _ => {
            let kind = if size { "size (like 4GiB or 1000000)" } else { "whole number" };
            Err(BundleError::BadLimit { name: name.to_string(), expected: kind, given: text.into_owned() })
        }
    }
}

/// Check one member name: relative, no `..`, no root or prefix component.
pub fn check_member_path(name: &str) -> Result<PathBuf, BundleError> {
    let path = Path::new(name);
    if name.is_empty() || path.is_absolute() || name.starts_with('/') || name.starts_with('\\') {
        return Err(BundleError::UnsafeArchive(format!("unsafe path in archive: {name}")));
    }
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(BundleError::UnsafeArchive(format!("unsafe path in archive: {name}")));
            }
        }
    }
    if clean.as_os_str().is_empty() {
        return Err(BundleError::UnsafeArchive(format!("unsafe path in archive: {name}")));
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
fn each_member(tgz: &Path, each: &mut dyn FnMut(&mut tar::Entry<'_, Unpacked>) -> Result<(), BundleError>) -> Result<(), BundleError> {
    let file = fs::File::open(tgz).map_err(|e| BundleError::io(tgz, e))?;
    let meter = std::rc::Rc::new(Meter::default());
    meter.allow(0);
    let mut archive =
        tar::Archive::new(Metered { inner: flate2::read::GzDecoder::new(std::io::BufReader::new(file)), meter: meter.clone() });
    let mut previous = String::new();
    let bad = |e: std::io::Error, previous: &str, meter: &Meter| {
        if meter.tripped.get() {
            let after = if previous.is_empty() { String::new() } else { format!(" after {previous}") };
            BundleError::UnsafeArchive(format!("the headers of the member{after} take more than {EXTENSION_BYTES} bytes"))
        } else {
            BundleError::UnsafeArchive(format!("unreadable archive: {e}"))
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
            BundleError::Io { source, .. } if meter.tripped.get() => bad(source, &previous, &meter),
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
pub fn safe_extract_file(tgz: &Path, dest: &Path, limits: ExtractLimits) -> Result<usize, BundleError> {
    let compressed = fs::metadata(tgz).map_err(|e| BundleError::io(tgz, e))?.len();
    let mut planned: Vec<PathBuf> = Vec::new();
    let mut total: u64 = 0;
    each_member(tgz, &mut |entry| {
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            return Err(BundleError::UnsafeArchive(format!("refusing link member in archive: {name}")));
        }
        let rel = check_member_path(&name)?;
        if !(kind.is_dir() || kind.is_file() || kind == tar::EntryType::Continuous) {
            return Err(BundleError::UnsafeArchive(format!("refusing special member in archive: {name}")));
        }
        if planned.len() as u64 >= limits.max_members {
            return Err(BundleError::TooLarge(format!(
                "member {name} is one more than the limit of {} members (GATEWAY_ARCHIVE_MAX_MEMBERS)",
                limits.max_members
            )));
        }
        let size = entry.size();
        if size > limits.max_member_bytes {
            return Err(BundleError::TooLarge(format!(
                "member {name} unpacks to {size} bytes, past the limit of {} bytes per member (GATEWAY_ARCHIVE_MAX_MEMBER_BYTES)",
                limits.max_member_bytes
            )));
        }
        total = total.saturating_add(size);
        if total > limits.max_bytes {
            return Err(BundleError::TooLarge(format!(
                "the members up to {name} unpack to {total} bytes, past the limit of {} bytes in all (GATEWAY_ARCHIVE_MAX_BYTES)",
                limits.max_bytes
            )));
        }
        if total > RATIO_FLOOR && total / limits.max_ratio > compressed {
            return Err(BundleError::TooLarge(format!(
                "the members up to {name} unpack to {total} bytes from {compressed} compressed, more than {} times as many (GATEWAY_ARCHIVE_MAX_RATIO)",
                limits.max_ratio
            )));
        }
        planned.push(rel);
        Ok(())
    })?;
    fs::create_dir_all(dest).map_err(|e| BundleError::io(dest, e))?;
    let dest = dest.canonicalize().map_err(|e| BundleError::io(dest, e))?;
    for rel in &planned {
        let mut at = dest.clone();
        for part in rel.components() {
            at.push(part);
            if fs::symlink_metadata(&at).map(|m| m.file_type().is_symlink()).unwrap_or(false) {
                return Err(BundleError::UnsafeArchive(format!("archive member escapes destination: {}", rel.display())));
            }
        }
    }
    let count = planned.len();
    let mut planned = planned.into_iter();
    each_member(tgz, &mut |entry| {
        // The archive is the file the first pass read: the same members, in order.
        let Some(rel) = planned.next() else { return Err(BundleError::UnsafeArchive("the archive changed while it was extracted".into())) };
        let target = dest.join(rel);
        if entry.header().entry_type().is_dir() {
            return fs::create_dir_all(&target).map_err(|e| BundleError::io(&target, e));
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| BundleError::io(parent, e))?;
        }
        let mut out = fs::File::create(&target).map_err(|e| BundleError::io(&target, e))?;
        std::io::copy(entry, &mut out).map_err(|e| BundleError::io(&target, e))?;
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
pub fn extract_into(tgz: &Path, dest: &Path, limits: ExtractLimits) -> Result<usize, BundleError> {
    let scratch = gateway_common::temp::Scratch::beside(dest, "extracting").map_err(|e| BundleError::io(&e.path, e.source))?;
    let count = safe_extract_file(tgz, scratch.path(), limits)?;
    if fs::symlink_metadata(dest).is_err() {
        fs::rename(scratch.path(), dest).map_err(|e| BundleError::io(dest, e))?;
        return Ok(count);
    }
    check_moves(scratch.path(), dest, Path::new(""))?;
    make_moves(scratch.path(), dest)?;
    Ok(count)
}

/// Entries of a directory in name order.
fn entries_of(dir: &Path) -> Result<Vec<fs::DirEntry>, BundleError> {
    let mut entries = fs::read_dir(dir)
        .map_err(|e| BundleError::io(dir, e))?
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| BundleError::io(dir, e))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    Ok(entries)
}

/// Whether every entry under `from` can move to its place under `into` (`rel` is
/// `from`'s path inside the archive).
fn check_moves(from: &Path, into: &Path, rel: &Path) -> Result<(), BundleError> {
    for entry in entries_of(from)? {
        let member = rel.join(entry.file_name());
        let target = into.join(entry.file_name());
        let Ok(there) = fs::symlink_metadata(&target) else { continue };
        let is_dir = entry.file_type().map_err(|e| BundleError::io(&entry.path(), e))?.is_dir();
        if there.file_type().is_symlink() {
            return Err(BundleError::UnsafeArchive(format!("archive member escapes destination: {}", member.display())));
        }
        match (is_dir, there.is_dir()) {
            (true, true) => check_moves(&entry.path(), &target, &member)?,
            (false, false) => {}
            (true, false) => {
                return Err(BundleError::io(
                    &target,
                    std::io::Error::new(std::io::ErrorKind::AlreadyExists, "a file is where the archive has a directory"),
                ))
            }
            (false, true) => {
                return Err(BundleError::io(
                    &target,
                    std::io::Error::new(std::io::ErrorKind::IsADirectory, "a directory is where the archive has a file"),
                ))
            }
        }
    }
    Ok(())
}

/// Move every entry under `from` to its place under `into` (checked by [`check_moves`]).
fn make_moves(from: &Path, into: &Path) -> Result<(), BundleError> {
    for entry in entries_of(from)? {
        let target = into.join(entry.file_name());
        if target.is_dir() && entry.file_type().is_ok_and(|t| t.is_dir()) {
            make_moves(&entry.path(), &target)?;
        } else {
            fs::rename(entry.path(), &target).map_err(|e| BundleError::io(&target, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{gzip_bytes, tar_bytes, ustar_header, TarWriter};
    use std::io::Write;

    #[test]
    fn member_paths() {
        assert!(check_member_path("a/b.txt").is_ok());
        assert!(check_member_path("../x").is_err());
        assert!(check_member_path("/etc/passwd").is_err());
        assert!(check_member_path("a/../../x").is_err());
    }

    /// `files` as a `.tar.gz` file in `dir`, streamed (members may be large).
    fn tarball(dir: &Path, files: &[(&str, u64)]) -> PathBuf {
        let path = dir.join(format!("t-{}.tar.gz", gateway_common::random::random_hex(4)));
        let encoder = flate2::write::GzEncoder::new(fs::File::create(&path).unwrap(), flate2::Compression::new(6));
        let mut tar = TarWriter::new(encoder);
        for (name, size) in files {
            tar.add(name, *size, &mut std::io::repeat(b'z').take(*size)).unwrap();
        }
        tar.finish().unwrap().finish().unwrap();
        path
    }

    fn refusal(result: Result<usize, BundleError>) -> String {
        match result {
            Err(BundleError::TooLarge(message) | BundleError::UnsafeArchive(message)) => message,
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

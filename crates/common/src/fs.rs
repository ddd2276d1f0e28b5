//! Files: atomic writes, SHA-256 of bytes and files, and copying a tree with one
//! explicit rule for symbolic links.

use std::path::{Path, PathBuf};

/// Write `bytes` to `path` atomically: a temporary file beside it, synced, then a
/// rename — a reader sees the old file or the new one, never a torn one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// [`write_atomic`] for content produced a piece at a time: `fill` writes into a
/// buffered temporary file beside `path`, which replaces `path` once complete and
/// synced (a large generated file is never held whole in memory).
pub fn write_atomic_with(path: &Path, fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>) -> std::io::Result<()> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = parent.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::io::BufWriter::with_capacity(64 * 1024, std::fs::File::create(&temp)?);
        fill(&mut file)?;
        let file = file.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Lowercase hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// Lowercase hex SHA-256 of a file's bytes, streamed.
pub fn file_sha256(path: &Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

/// What [`copy_tree`] does with a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symlinks {
    /// Copy what it points to (Python's `shutil.copytree(symlinks=False)`).
    Follow,
    /// Recreate the link itself.
    Keep,
    /// Leave it out: nothing is read through a link.
    Skip,
    /// Stop the copy at the first link not left out by `skip`: a [`PathError`] on the
    /// link whose [`PathError::refused_link`] is what it points to. For copies that
    /// must never carry anything from outside the tree (a world bundled or pushed).
    Refuse,
}

/// The error a [`Symlinks::Refuse`] copy stops with, inside a [`PathError`].
#[derive(Debug)]
pub struct RefusedLink {
    /// What the link points to.
    pub target: PathBuf,
}

impl std::fmt::Display for RefusedLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a symbolic link (to {}) is not copied", self.target.display())
    }
}

impl std::error::Error for RefusedLink {}

/// An entry [`copy_tree`] is about to copy, for its `skip` rule.
pub struct Entry<'a> {
    /// The path below the tree's top (`data/initial.json`).
    pub relative: &'a Path,
    /// Its file name.
    pub name: &'a str,
    /// A directory (after the symlink rule: a followed link to a directory is one).
    pub is_dir: bool,
}

/// A file-system error and the path it happened on.
#[derive(Debug)]
pub struct PathError {
    /// The path.
    pub path: PathBuf,
    /// The error.
    pub source: std::io::Error,
}

impl PathError {
    /// A closure that puts `path` on an I/O error (`.map_err(PathError::at(path))`).
    pub fn at(path: &Path) -> impl Fn(std::io::Error) -> PathError + '_ {
        move |source| PathError { path: path.to_path_buf(), source }
    }
}

impl PathError {
    /// Where the refused link points, when a [`Symlinks::Refuse`] copy stopped at one
    /// (the link itself is [`PathError::path`]).
    pub fn refused_link(&self) -> Option<&Path> {
        self.source.get_ref().and_then(|inner| inner.downcast_ref::<RefusedLink>()).map(|link| link.target.as_path())
    }
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Copy the tree at `from` into `to` (created), entries in name order, leaving out
/// every entry `skip` accepts (a skipped directory is not entered).
pub fn copy_tree(from: &Path, to: &Path, symlinks: Symlinks, skip: &dyn Fn(&Entry) -> bool) -> Result<(), PathError> {
    copy_below(from, to, Path::new(""), symlinks, skip)
}

fn copy_below(from: &Path, to: &Path, relative: &Path, symlinks: Symlinks, skip: &dyn Fn(&Entry) -> bool) -> Result<(), PathError> {
    let at = PathError::at;
    std::fs::create_dir_all(to).map_err(at(to))?;
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(from).map_err(at(from))?.collect::<Result<_, _>>().map_err(at(from))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let source = entry.path();
        let file_name = entry.file_name();
        let name = file_name.to_string_lossy();
        let child = relative.join(&file_name);
        let target = to.join(&file_name);
        let mut kind = entry.file_type().map_err(at(&source))?;
        if kind.is_symlink() {
            match symlinks {
                Symlinks::Skip => continue,
                Symlinks::Keep => {
                    if !skip(&Entry { relative: &child, name: &name, is_dir: false }) {
                        let link = std::fs::read_link(&source).map_err(at(&source))?;
                        symlink(&link, &target).map_err(at(&target))?;
                    }
                    continue;
                }
                Symlinks::Follow => kind = std::fs::metadata(&source).map_err(at(&source))?.file_type(),
                Symlinks::Refuse => {
                    let is_dir = std::fs::metadata(&source).is_ok_and(|m| m.is_dir());
                    if skip(&Entry { relative: &child, name: &name, is_dir }) {
                        continue;
                    }
                    let target = std::fs::read_link(&source).map_err(at(&source))?;
                    return Err(PathError {
                        path: source,
                        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, RefusedLink { target }),
                    });
                }
            }
        }
        if skip(&Entry { relative: &child, name: &name, is_dir: kind.is_dir() }) {
            continue;
        }
        if kind.is_dir() {
            copy_below(&source, &target, &child, symlinks, skip)?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target).map_err(at(&source))?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(link: &Path, target: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(link, target)
}

#[cfg(not(unix))]
fn symlink(_link: &Path, target: &Path) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, format!("cannot recreate the link {}", target.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_follows_keeps_or_skips_links_and_honours_skip() {
        let top = tempfile::tempdir().unwrap();
        let from = top.path().join("from");
        std::fs::create_dir_all(from.join("data/cache")).unwrap();
        std::fs::write(from.join("data/a.json"), "a").unwrap();
        std::fs::write(from.join("data/cache/x"), "x").unwrap();
        std::fs::write(top.path().join("outside"), "secret").unwrap();
        std::os::unix::fs::symlink(top.path().join("outside"), from.join("link")).unwrap();
        let skip_cache = |e: &Entry| e.name == "cache";
        for (symlinks, expect) in [(Symlinks::Follow, Some(false)), (Symlinks::Keep, Some(true)), (Symlinks::Skip, None)] {
            let to = top.path().join(format!("{symlinks:?}"));
            copy_tree(&from, &to, symlinks, &skip_cache).unwrap();
            assert_eq!(std::fs::read_to_string(to.join("data/a.json")).unwrap(), "a");
            assert!(!to.join("data/cache").exists());
            let link = std::fs::symlink_metadata(to.join("link")).ok().map(|m| m.file_type().is_symlink());
            assert_eq!(link, expect, "{symlinks:?}");
        }
        let error = copy_tree(&top.path().join("missing"), &top.path().join("t"), Symlinks::Skip, &|_| false).unwrap_err();
        assert!(error.path.ends_with("missing"));
    }

    #[test]
    fn hostile_a_refusing_copy_stops_at_a_link_unless_it_is_left_out() {
        let top = tempfile::tempdir().unwrap();
        let from = top.path().join("from");
        std::fs::create_dir_all(from.join("data")).unwrap();
        std::fs::write(from.join("data/a.json"), "a").unwrap();
        std::fs::write(top.path().join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink(top.path(), from.join("data/outside")).unwrap();
        let error = copy_tree(&from, &top.path().join("to"), Symlinks::Refuse, &|_| false).unwrap_err();
        assert_eq!(error.path, from.join("data/outside"));
        assert_eq!(error.refused_link(), Some(top.path()));
        assert!(error.to_string().contains("a symbolic link (to "), "{error}");
        assert!(!top.path().join("to/data/outside").exists());
        // A link the skip rule leaves out is not a refusal; other errors are no refused link.
        copy_tree(&from, &top.path().join("skipped"), Symlinks::Refuse, &|e| e.name == "outside").unwrap();
        assert_eq!(std::fs::read_to_string(top.path().join("skipped/data/a.json")).unwrap(), "a");
        let missing = copy_tree(&top.path().join("missing"), &top.path().join("t"), Symlinks::Refuse, &|_| false).unwrap_err();
        assert_eq!(missing.refused_link(), None);
    }

    #[test]
    fn atomic_writes_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/file.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path().join("sub")).unwrap().count(), 1);
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(file_sha256(&path).unwrap(), sha256_hex(b"two"));
    }
}

//! Private temporary directories, all under one directory per process
//! (`<tmp>/gateway-proc-<pid>`), so that what a process leaves behind is one
//! directory: removed when the process ends through `main` ([`remove_process_root`]),
//! and swept by the next process to start when its owner died without that (a
//! kill, a panic). A scratch directory whose contents are to be renamed into place
//! lives beside its target instead ([`Scratch::beside`]): a rename cannot cross file
//! systems. std only: one scratch directory per call needs no dependency.

use crate::fs::PathError;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const PROCESS_PREFIX: &str = "gateway-proc-";

static ROOT: OnceLock<PathBuf> = OnceLock::new();

/// This process's temporary directory, created (and stale ones of dead
/// processes swept) on first use. Falls back to the system temp directory
/// itself when it cannot be created.
pub fn process_root() -> &'static Path {
    ROOT.get_or_init(|| {
        let tmp = std::env::temp_dir();
        sweep_dead(&tmp);
        let root = tmp.join(format!("{PROCESS_PREFIX}{}", std::process::id()));
        // A directory of this pid can only be a dead process's (pids are unique
        // among the living): start empty.
        let _ = std::fs::remove_dir_all(&root);
        match std::fs::create_dir_all(&root) {
            Ok(()) => root,
            Err(_) => tmp,
        }
    })
}

/// Remove the directories of processes that died without removing theirs
/// (call at the start of `main`; [`process_root`] also does on first use).
pub fn sweep_stale() {
    sweep_dead(&std::env::temp_dir());
}

/// Remove this process's temporary directory (call at the end of `main`).
pub fn remove_process_root() {
    if let Some(root) = ROOT.get() {
        if root.file_name().is_some_and(|n| n.to_string_lossy().starts_with(PROCESS_PREFIX)) {
            let _ = std::fs::remove_dir_all(root);
        }
    }
}

/// Remove the process directories whose process is gone. Liveness is read
/// from /proc; where there is no /proc nothing is swept.
fn sweep_dead(tmp: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(tmp) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PROCESS_PREFIX)) else { continue };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A temporary directory below the process root, removed when dropped.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// Create `<process root>/<prefix>-<random>`.
    pub fn new(prefix: &str) -> Result<Scratch, PathError> {
        let path = process_root().join(format!("{prefix}-{}", crate::random::random_hex(8)));
        std::fs::create_dir_all(&path).map_err(PathError::at(&path))?;
        Ok(Scratch(path))
    }

    /// Create `<parent of target>/.<target's name>.<prefix>-<random>`: on the target's
    /// file system, so what is built in it can be renamed into place.
    pub fn beside(target: &Path, prefix: &str) -> Result<Scratch, PathError> {
        let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let path = parent.join(format!(".{name}.{prefix}-{}", crate::random::random_hex(8)));
        std::fs::create_dir_all(&path).map_err(PathError::at(&path))?;
        Ok(Scratch(path))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_scratch_lives_under_the_process_root_until_dropped() {
        let scratch = super::Scratch::new("test").unwrap();
        let path = scratch.path().to_path_buf();
        assert!(path.starts_with(super::process_root()) && path.is_dir());
        drop(scratch);
        assert!(!path.exists());
    }

    #[test]
    fn a_scratch_beside_a_target_is_its_hidden_sibling() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("world");
        let scratch = super::Scratch::beside(&target, "pull").unwrap();
        let path = scratch.path().to_path_buf();
        assert_eq!(path.parent(), Some(dir.path()));
        assert!(path.file_name().unwrap().to_string_lossy().starts_with(".world.pull-") && path.is_dir());
        drop(scratch);
        assert!(!path.exists());
    }
}

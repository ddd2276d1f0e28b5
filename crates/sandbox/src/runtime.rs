//! The runtime a confined program needs to see: for a Python interpreter, its
//! executable as Python itself names it (`sys.executable`: a pyenv shim or a `python3`
//! on PATH is a script or a link a sandbox cannot follow) and its prefixes (the
//! standard library, site-packages of a venv and of its base). Asked once per
//! interpreter per process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// A Python interpreter as a sandbox runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// The binary to run (`sys.executable`), or the name given when Python could not say.
    pub executable: PathBuf,
    /// Directories it reads at start (prefixes), outside the system's `/usr`.
    pub dirs: Vec<PathBuf>,
}

static KNOWN: Mutex<Option<HashMap<PathBuf, Interpreter>>> = Mutex::new(None);

/// The interpreter `python` (a name on PATH or a path) runs as, asked once per process.
pub fn interpreter(python: &Path) -> Interpreter {
    let mut known = KNOWN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let known = known.get_or_insert_with(HashMap::new);
    if let Some(found) = known.get(python) {
        return found.clone();
    }
    let asked = Command::new(python)
        .args(["-c", "import sys\nfor p in (sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix): print(p)"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let found = match asked {
        Ok(output) if output.status.success() => {
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            let mut lines = text.lines().map(PathBuf::from);
            let executable = lines.next().filter(|p| p.is_absolute()).unwrap_or_else(|| python.to_path_buf());
            let mut dirs: Vec<PathBuf> = lines.filter(|p| p.is_absolute()).collect();
            if let Some(bin) = executable.parent() {
                dirs.push(bin.to_path_buf());
            }
            // A venv's python is a link into its base installation: that must be seen too.
            if let Ok(real) = std::fs::canonicalize(&executable) {
                if let Some(bin) = real.parent() {
                    dirs.push(bin.to_path_buf());
                    if let Some(prefix) = bin.parent() {
                        dirs.push(prefix.to_path_buf());
                    }
                }
            }
            Interpreter { executable, dirs: outside_system(dirs) }
        }
        _ => Interpreter { executable: python.to_path_buf(), dirs: Vec::new() },
    };
    known.insert(python.to_path_buf(), found.clone());
    known.insert(found.executable.clone(), found.clone());
    found
}

/// The directories to bind for `program`: an interpreter's prefixes when it is one
/// [`interpreter`] has described, else the program's own directory when it lies outside
/// the system's.
pub(crate) fn program_dirs(program: &Path) -> Vec<PathBuf> {
    let known = KNOWN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(found) = known.as_ref().and_then(|k| k.get(program)) {
        return found.dirs.clone();
    }
    drop(known);
    match program.parent() {
        Some(dir) if program.is_absolute() => outside_system(vec![dir.to_path_buf()]),
        _ => Vec::new(),
    }
}

/// `dirs` without those the sandbox binds anyway (the system's), without duplicates
/// and without directories inside another one kept, each existing.
fn outside_system(dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    let system = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64"];
    let mut kept: Vec<PathBuf> =
        dirs.into_iter().filter(|d| d.is_dir() && d != Path::new("/") && !system.iter().any(|s| d.starts_with(s))).collect();
    kept.sort();
    kept.dedup();
    let mut outer: Vec<PathBuf> = Vec::new();
    for dir in kept {
        if !outer.iter().any(|o| dir.starts_with(o)) {
            outer.push(dir);
        }
    }
    outer
}

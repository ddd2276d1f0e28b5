//! Confinement of the code a world or an agent brings: `api/handlers.py` and
//! `tools/handlers.py` workers, python graders, the runner's python bridge. That code is
//! untrusted — a project pushes it to a hub that other projects share — so it runs
//! with nothing of the process that starts it ([`Sandbox::command`]):
//!
//! * **an empty environment** plus what the caller names ([`View::env`]): no operator
//!   secret, no cloud key, no judge key;
//! * **no network**: a network namespace of its own (only a loopback nobody listens on);
//! * **its own view of the file system**: a mount namespace holding the system's
//!   `/usr` (read-only), the Python runtime (read-only), the paths the caller names
//!   (read-only unless said otherwise), a small private `/tmp`, a minimal `/dev` and its
//!   own `/proc` — nothing of the hub's data directory, other sessions or the keys;
//! * **a process tree that dies with it**: a PID namespace (a `setsid` daemon dies when
//!   the worker is killed), `--die-with-parent`, a new session (no terminal injection);
//! * **limits** ([`Limits`]): address space, processes, CPU seconds, open files, file
//!   size, no core files — set by `prlimit` before anything of the world runs;
//! * **a uid of its own** when the starter is root: each confined process tree runs
//!   under a fresh unprivileged uid ([`uid`]), so the process cap counts that tree alone
//!   and nothing the hub owns is writable even if it were visible; with no capabilities
//!   and `no_new_privs` (setuid binaries do not elevate).
//!
//! The namespaces come from bubblewrap (`bwrap`, Debian's `bubblewrap`), the limits from
//! util-linux's `prlimit` and the uid change from its `setpriv`: the workspace forbids
//! `unsafe`, so no `pre_exec` hook; a chain of small well-kept tools does each step
//! before the next `exec`. docs/SECURITY.md says why bubblewrap rather than Landlock.
//!
//! What this is not: a seccomp filter (the kernel's whole system-call surface stays
//! reachable), a disk quota beyond the file-size cap, or a CPU share (a confined process
//! competes for cores like any other; the per-call deadlines of its callers bound how
//! long it holds one). [`Policy::Unconfined`] is today's laptop mode: the program runs
//! as the caller, with the caller's environment — `worlds serve --unconfined` only.

mod runtime;
pub mod uid;

pub use runtime::{interpreter, Interpreter};

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Why a confined command could not be built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxError {
    /// The tools confinement needs are missing or do not work on this machine.
    #[error("world code cannot be confined here: {0}")]
    Unavailable(String),
    /// A path the confined program is to see does not exist or cannot be prepared.
    #[error("{path}: {reason}")]
    Path {
        /// The path named.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// What a confined process tree may consume. Every figure is a hard limit: the kernel
/// refuses past it (an allocation fails, a fork fails, a file write fails) or, for CPU
/// seconds, kills the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Address space of each process, in bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// Processes (and threads) of the tree at once (`RLIMIT_NPROC`; counted per tree only
    /// when the starter is root and each tree gets a uid of its own).
    pub processes: u64,
    /// CPU seconds of each process over its life (`RLIMIT_CPU`); callers' per-call
    /// deadlines bound a single call far sooner.
    pub cpu_seconds: u64,
    /// Open file descriptors of each process (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// The largest file a process may write, in bytes (`RLIMIT_FSIZE`).
    pub file_bytes: u64,
    /// The size of the private `/tmp` (a tmpfs), in bytes.
    pub tmp_bytes: u64,
}

impl Default for Limits {
    /// Safe defaults for a shared hub: 2 GiB of address space (the original's worker cap),
    /// 64 processes, an hour of CPU, 256 open files, 256 MiB files, a 64 MiB `/tmp`.
    fn default() -> Self {
        Limits { memory_bytes: 2 << 30, processes: 64, cpu_seconds: 3600, open_files: 256, file_bytes: 256 << 20, tmp_bytes: 64 << 20 }
    }
}

/// How untrusted code is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// As the caller, with the caller's environment (laptop mode, on explicit request).
    Unconfined,
    /// In a sandbox with these limits.
    Confined(Limits),
}

/// What a confined program sees: paths bound into its file system, its environment, its
/// working directory.
#[derive(Debug, Clone, Default)]
pub struct View {
    read_only: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    env: Vec<(String, OsString)>,
    cwd: Option<PathBuf>,
}

impl View {
    /// An empty view: the system and the interpreter only.
    pub fn new() -> View {
        View::default()
    }

    /// Show `path` (a file or directory, at the same path) read-only.
    pub fn read_only(mut self, path: impl Into<PathBuf>) -> View {
        self.read_only.push(path.into());
        self
    }

    /// Show the directory `path` writable (handed to the confined uid).
    pub fn writable(mut self, path: impl Into<PathBuf>) -> View {
        self.writable.push(path.into());
        self
    }

    /// Set one environment variable (nothing else is inherited).
    pub fn env(mut self, name: &str, value: impl Into<OsString>) -> View {
        self.env.push((name.to_string(), value.into()));
        self
    }

    /// Start in `dir` (inside the view; `/tmp` when not given).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> View {
        self.cwd = Some(dir.into());
        self
    }
}

/// How untrusted code is started: the policy, shared by every spawn of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    policy: Policy,
}

impl Default for Sandbox {
    /// Confined with the default limits: what a hub or host runs with.
    fn default() -> Self {
        Sandbox::confined(Limits::default())
    }
}

impl Sandbox {
    /// Code runs as the caller (laptop mode).
    pub fn unconfined() -> Sandbox {
        Sandbox { policy: Policy::Unconfined }
    }

    /// Code runs confined within `limits`.
    pub fn confined(limits: Limits) -> Sandbox {
        Sandbox { policy: Policy::Confined(limits) }
    }

    /// For code of the user's own on the user's machine (local graders, `worlds mcp`, an
    /// api bundle's import check): confined with the default limits where this machine
    /// can confine, as the user where it cannot (no bubblewrap). Never for a server that
    /// runs other people's code.
    pub fn local() -> Sandbox {
        let confined = Sandbox::default();
        if confined.check().is_ok() {
            confined
        } else {
            Sandbox::unconfined()
        }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Whether code is confined.
    pub fn is_confined(&self) -> bool {
        matches!(self.policy, Policy::Confined(_))
    }

    /// Check that this machine can confine (bubblewrap, prlimit, setpriv present and
    /// working); a server calls this at start so it refuses to serve rather than run
    /// world code unconfined. Unconfined always passes.
    pub fn check(&self) -> Result<(), SandboxError> {
        match self.policy {
            Policy::Unconfined => Ok(()),
            Policy::Confined(_) => probe().clone().map_err(SandboxError::Unavailable),
        }
    }

    /// The command that runs `program` with `args` under this policy, seeing `view`.
    /// Unconfined: the program itself, the caller's environment plus `view`'s, in
    /// `view`'s directory. Confined: see the crate docs; the returned command's child is
    /// the sandbox's outer process — killing it kills everything inside.
    pub fn command(&self, program: &Path, args: &[OsString], view: &View) -> Result<Command, SandboxError> {
        match &self.policy {
            Policy::Unconfined => {
                let mut command = Command::new(program);
                command.args(args);
                for (name, value) in &view.env {
                    command.env(name, value);
                }
                if let Some(dir) = &view.cwd {
                    command.current_dir(dir);
                }
                Ok(command)
            }
            Policy::Confined(limits) => {
                self.check()?;
                confined_command(program, args, view, limits)
            }
        }
    }
}

/// Let a confined uid read the tree at `path`: directories gain r-x and files r (and x
/// where their owner has it) for group and others. A hub creates its files owner-only
/// (umask 077) and keeps them so: what a confined tree reads (a version's extracted
/// bundle, a tools adapter, a grader's script) is shared this way, while the 0700
/// directories above it keep every other local user out, and the sandbox's view shows
/// the tree without them. Symbolic links are left alone (never followed).
pub fn share_read_only(path: &Path) -> std::io::Result<()> {
    share_read_only_except(path, &|_| false)
}

/// [`share_read_only`], leaving out (unshared, not descended into) what `keep` names:
/// a world's databases, which its code never reads (state reaches it through `ctx`) and
/// which the server copies into sessions that must stay owner-only.
pub fn share_read_only_except(path: &Path, keep: &dyn Fn(&Path) -> bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() || keep(path) {
        return Ok(());
    }
    let mode = meta.permissions().mode();
    // Directories and executables: r-x for group and others; other files: r.
    let wanted = if meta.is_dir() || mode & 0o100 != 0 { mode | 0o055 } else { mode | 0o044 };
    if wanted != mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted))?;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            share_read_only_except(&entry?.path(), keep)?;
        }
    }
    Ok(())
}

/// Whether this process is root (then each confined tree gets a uid of its own).
fn is_root() -> bool {
    static ROOT: OnceLock<bool> = OnceLock::new();
    *ROOT.get_or_init(|| {
        // /proc/self/status "Uid:\treal\teffective…"; no libc call needed.
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                status.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
            })
            .unwrap_or(false)
    })
}

/// Whether bubblewrap, prlimit and setpriv work here, probed once per process.
fn probe() -> &'static Result<(), String> {
    static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
    PROBED.get_or_init(|| {
        let mut bwrap = Command::new("bwrap");
        if !is_root() {
            bwrap.arg("--unshare-user");
        }
        bwrap.args(["--unshare-net", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"]);
        let runs = |mut command: Command| {
            command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
        };
        if !runs(bwrap) {
            return Err("bubblewrap (`bwrap`) is missing or cannot create namespaces on this machine; install it \
                 (Debian: apt-get install bubblewrap)"
                .into());
        }
        let mut prlimit = Command::new("prlimit");
        prlimit.args(["--nofile=64", "--", "true"]);
        if !runs(prlimit) {
            return Err("util-linux's `prlimit` is missing (Debian: apt-get install util-linux)".into());
        }
        if is_root() {
            let mut setpriv = Command::new("setpriv");
            setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", "true"]);
            if !runs(setpriv) {
                return Err("util-linux's `setpriv` is missing (Debian: apt-get install util-linux)".into());
            }
        }
        Ok(())
    })
}

/// System directories every program needs, bound read-only when they are directories
/// and recreated as the same symlinks when they are links (merged /usr).
const SYSTEM: [&str; 6] = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64"];

/// The few files of /etc a runtime reads; the rest of /etc (credentials, the operator's
/// configuration) stays out.
const SYSTEM_FILES: [&str; 4] = ["/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives", "/etc/ssl/certs"];

fn confined_command(program: &Path, args: &[OsString], view: &View, limits: &Limits) -> Result<Command, SandboxError> {
    let mut command = Command::new("prlimit");
    command.arg(format!("--as={}", limits.memory_bytes));
    command.arg(format!("--cpu={}", limits.cpu_seconds));
    command.arg(format!("--nofile={}", limits.open_files));
    command.arg(format!("--fsize={}", limits.file_bytes));
    command.arg("--core=0");
    let root = is_root();
    if root {
        // Counted per uid: meaningful only because the tree gets a uid of its own below.
        command.arg(format!("--nproc={}", limits.processes));
    }
    command.arg("--").arg("bwrap");
    if !root {
        command.arg("--unshare-user");
    }
    command.args(["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]);
    command.args(["--die-with-parent", "--new-session", "--clearenv", "--hostname", "world"]);
    for dir in SYSTEM {
        let path = Path::new(dir);
        match std::fs::read_link(path) {
            Ok(target) => {
                command.arg("--symlink").arg(target).arg(path);
            }
            Err(_) if path.is_dir() => {
                command.arg("--ro-bind").arg(path).arg(path);
            }
            Err(_) => {}
        }
    }
    for file in SYSTEM_FILES {
        command.arg("--ro-bind-try").arg(file).arg(file);
    }
    command.args(["--proc", "/proc", "--dev", "/dev"]);
    command.arg("--perms").arg("1777").arg("--size").arg(limits.tmp_bytes.to_string()).arg("--tmpfs").arg("/tmp");

    let uid = if root { Some(uid::next()) } else { None };
    let mut made: Vec<PathBuf> = Vec::new();
    for dir in runtime::program_dirs(program) {
        traversable(&mut command, &dir, &mut made);
        command.arg("--ro-bind").arg(&dir).arg(&dir);
    }
    for path in &view.read_only {
        let path = existing(path)?;
        traversable(&mut command, &path, &mut made);
        command.arg("--ro-bind").arg(&path).arg(&path);
    }
    for path in &view.writable {
        let path = existing(path)?;
        if let Some(uid) = uid {
            std::os::unix::fs::chown(&path, Some(uid), Some(uid))
                .map_err(|e| SandboxError::Path { path: path.clone(), reason: format!("cannot hand it to the sandbox: {e}") })?;
        }
        traversable(&mut command, &path, &mut made);
        command.arg("--bind").arg(&path).arg(&path);
    }
    let mut path_var = OsString::from("/usr/local/bin:/usr/bin:/bin");
    if let Some(dir) = program.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut with = dir.as_os_str().to_os_string();
        with.push(":");
        with.push(&path_var);
        path_var = with;
    }
    let mut env: Vec<(String, OsString)> =
        vec![("PATH".into(), path_var), ("HOME".into(), "/tmp".into()), ("LANG".into(), "C.UTF-8".into())];
    for (name, value) in &view.env {
        env.retain(|(n, _)| n != name);
        env.push((name.clone(), value.clone()));
    }
    for (name, value) in &env {
        command.arg("--setenv").arg(name).arg(value);
    }
    command.arg("--chdir").arg(view.cwd.as_deref().unwrap_or(Path::new("/tmp")));
    command.arg("--");
    if let Some(uid) = uid {
        command.arg("setpriv");
        command.arg(format!("--reuid={uid}")).arg(format!("--regid={uid}"));
        command.args(["--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"]);
    }
    // bubblewrap sets PWD for --chdir; the program's environment is exactly what was named.
    command.args(["/usr/bin/env", "-u", "PWD", "--"]);
    command.arg(program).args(args);
    // Nothing of the starter's environment reaches even the outer tools.
    command.env_clear();
    command.env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    Ok(command)
}

/// Create `path`'s ancestors inside the sandbox as plain 0755 directories (bubblewrap
/// would make them 0700, which a confined uid cannot cross). What the host has above a
/// bound path (a 0700 data directory) is not shown; the bound path keeps its own modes.
fn traversable(command: &mut Command, path: &Path, made: &mut Vec<PathBuf>) {
    let mut ancestors: Vec<&Path> = path.ancestors().skip(1).filter(|a| a.parent().is_some()).collect();
    ancestors.reverse();
    for dir in ancestors {
        if dir == Path::new("/tmp") || SYSTEM.iter().any(|s| dir.starts_with(s)) || made.iter().any(|m| m == dir) {
            continue;
        }
        made.push(dir.to_path_buf());
        command.arg("--perms").arg("0755").arg("--dir").arg(dir);
    }
}

/// `path` made absolute and checked to exist (bubblewrap refuses a missing bind source
/// with a message that names no caller).
fn existing(path: &Path) -> Result<PathBuf, SandboxError> {
    let absolute = std::path::absolute(path).map_err(|e| SandboxError::Path { path: path.to_path_buf(), reason: e.to_string() })?;
    if !absolute.exists() {
        return Err(SandboxError::Path { path: absolute, reason: "does not exist".into() });
    }
    Ok(absolute)
}

#[cfg(test)]
mod tests;

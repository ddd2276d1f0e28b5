//! `gateway hub serve` on loopback with a fresh project key, and a `gateway` (ours or
//! the original) run against it with the key in its environment.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub const GATEWAY: &str = env!("CARGO_BIN_EXE_gateway");

pub struct Server {
    pub child: Child,
    pub host: String,
    pub public: String,
    pub secret: String,
}

impl Server {
    /// What a `gateway` run against it reads: its address and key pair.
    pub fn env(&self) -> [(&str, &str); 3] {
        [("GATEWAY_HOST", self.host.as_str()), ("GATEWAY_PUBLIC_KEY", self.public.as_str()), ("GATEWAY_SECRET_KEY", self.secret.as_str())]
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn field(json: &str, key: &str) -> String {
    let value = gateway_world::json::parse(json).unwrap_or_else(|e| panic!("not JSON ({e:?}): {json}")).value;
    value.get(key).and_then(|v| v.as_str()).map(str::to_string).unwrap_or_else(|| panic!("no {key} in {json}"))
}

pub fn start(data: &Path) -> Server {
    start_with(data, &[])
}

/// A fresh temporary directory, a hub serving from its `hub/`, and its `work/` for the
/// runs against it. Bound in this order, the server stops before the directory goes.
pub fn start_in_temp() -> (tempfile::TempDir, Server, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(&dir.path().join("hub"));
    let work = dir.path().join("work");
    (dir, hub, work)
}

/// [`start`] with more `hub serve` flags.
pub fn start_with(data: &Path, extra: &[&str]) -> Server {
    let keys = Command::new(GATEWAY).args(["hub", "keys", "create", "--project", "p1", "--data"]).arg(data).output().unwrap();
    assert!(keys.status.success(), "{}", String::from_utf8_lossy(&keys.stderr));
    let out = String::from_utf8(keys.stdout).unwrap();
    let (child, host) = gateway_test_support::spawn_hub(
        Command::new(GATEWAY).args(["hub", "serve", "--addr", "127.0.0.1:0", "--data"]).arg(data).args(extra),
    );
    Server { child, host, public: field(&out, "publicKey"), secret: field(&out, "secretKey") }
}

/// `program args` in `cwd` with the server's address and keys in its environment.
pub fn command(server: &Server, program: &Path, args: &[&str], cwd: &Path) -> Command {
    let mut command = Command::new(program);
    command.args(args).current_dir(cwd).envs(server.env()).stdin(Stdio::null());
    command
}

pub fn run(server: &Server, program: &Path, args: &[&str], cwd: &Path) -> (bool, String, String) {
    let out = command(server, program, args, cwd).env_remove("GATEWAY_AUTHOR").output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

pub fn ok(server: &Server, program: &Path, args: &[&str], cwd: &Path) -> String {
    let (success, stdout, stderr) = run(server, program, args, cwd);
    assert!(success, "{} {args:?} failed:\n{stdout}\n{stderr}", program.display());
    stdout
}

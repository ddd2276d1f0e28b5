//! What the `worlds run` / `worlds ci` tests share: the helpdesk example with two
//! task specs, the binary run with a clean environment, and a server on loopback.
#![allow(dead_code)] // each test file uses its own part

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub use gateway_test_support::copy_tree as copy;

pub const GATEWAY: &str = env!("CARGO_BIN_EXE_gateway");

/// A task spec: solve ticket `id` (assertions grader, reference solution).
pub fn task(id: u32) -> String {
    format!(
        r#"{{"name": "solve-{id}", "instruction": "Ticket {id} is fixed: solve it.",
 "grader": {{"kind": "assertions", "checks": [{{"id": "solved", "entity": "tickets", "where": {{"id": {id}}}, "assert": "all", "field": "status", "op": "eq", "value": "solved"}}]}},
 "metadata": {{"solution": [{{"tool": "solve_ticket", "args": {{"id": {id}}}}}]}}}}"#
    )
}

/// `<root>/helpdesk`: the helpdesk example with two tasks, solve ticket 101 and 103.
pub fn world(root: &Path) -> PathBuf {
    let world = root.join("helpdesk");
    copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/helpdesk"), &world);
    std::fs::create_dir_all(world.join("tasks")).unwrap();
    for id in [101, 103] {
        std::fs::write(world.join(format!("tasks/solve-{id}.json")), task(id)).unwrap();
    }
    world
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", self.stdout, self.stderr))
    }
}

/// The binary in `cwd` with a clean environment (no hub, model or CI variables leak in) plus `env`.
pub fn gateway(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut command = Command::new(GATEWAY);
    command.env_clear().current_dir(cwd).args(args);
    for name in ["PATH", "HOME", "LANG"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Serve `app` on a loopback port: the runtime (keep it alive) and the address.
pub fn serve(app: axum::Router) -> (tokio::runtime::Runtime, std::net::SocketAddr) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    });
    (runtime, addr)
}

//! The `gateway` binary run with a clean environment: no hub, model or CI variables leak in.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

pub const GATEWAY: &str = env!("CARGO_BIN_EXE_gateway");

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
    clean_run(Path::new(GATEWAY), cwd, args, env)
}

/// `program` (ours or the original) in `cwd` with only PATH, HOME and LANG of this
/// environment, plus `env`.
pub fn clean_run(program: &Path, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut command = Command::new(program);
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

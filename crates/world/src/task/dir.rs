//! A session's task kept on disk: `task/task.json`, its instruction and a python
//! grader's `checks/verify.py`, as a bundled task lays them out.

use super::spec::{Grader, TaskSpec};
use crate::error::{ContractError, Error};
use crate::json::{dumps, parse_loads, DumpOptions};
use std::path::{Path, PathBuf};

/// The directory under a session that holds its task.
pub const TASK_DIR: &str = "task";
/// The spec's file inside [`TASK_DIR`].
pub const TASK_FILE: &str = "task.json";

/// Write `spec` under `session_dir/task/`: `task.json` (the normalised spec,
/// `json.dumps(indent=2, sort_keys=True)` and a newline), `instruction.md`, and for
/// a python grader `checks/verify.py`, where a bundled task has it. Returns the
/// task directory.
pub fn write_task_dir(spec: &TaskSpec, session_dir: &Path) -> Result<PathBuf, Error> {
    let root = session_dir.join(TASK_DIR);
    std::fs::create_dir_all(&root).map_err(|e| Error::io(e, &root))?;
    let options = DumpOptions { sort_keys: true, ensure_ascii: true, indent: Some(2), compact: false };
    let mut text = dumps(&spec.to_value(), options);
    text.push('\n');
    let file = root.join(TASK_FILE);
    std::fs::write(&file, text).map_err(|e| Error::io(e, &file))?;
    let instruction = root.join("instruction.md");
    std::fs::write(&instruction, &spec.instruction).map_err(|e| Error::io(e, &instruction))?;
    if let Some(Grader::Python { source, .. }) = &spec.grader {
        let checks = root.join("checks");
        std::fs::create_dir_all(&checks).map_err(|e| Error::io(e, &checks))?;
        let verify = checks.join("verify.py");
        std::fs::write(&verify, source).map_err(|e| Error::io(e, &verify))?;
    }
    Ok(root)
}

/// The task a session directory holds, or None for a session on a bundled task.
pub fn read_task_dir(session_dir: &Path) -> Result<Option<TaskSpec>, Error> {
    let file = session_dir.join(TASK_DIR).join(TASK_FILE);
    if !file.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&file).map_err(|e| Error::io(e, &file))?;
    let value = parse_loads(&text).map_err(|_| ContractError::new("task", "the session's task.json is not json", "/task"))?.value;
    Ok(Some(TaskSpec::parse(&value)?))
}

/// The path of the `verify.py` a session task's python grader is written to.
pub fn task_verify_path(session_dir: &Path) -> PathBuf {
    session_dir.join(TASK_DIR).join("checks").join("verify.py")
}

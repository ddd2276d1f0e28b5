//! Agent processes: each in its own process group, killed whole (with whatever it
//! started) when it runs past its budget. Used by the Python bridge and agent
//! commands; it knows nothing of what the process says.

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The interpreter agent bridges run on.
pub const PYTHON: &str = "python3";

/// Kill process group `pid` (the agent and its children).
pub fn kill_group(pid: u32) {
    let group = format!("-{pid}");
    let _ = Command::new("kill").args(["-KILL", "--", &group]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
}

/// Kills a process group when its budget runs out, unless dropped first.
#[derive(Debug)]
pub struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Watch process group `pid` for `budget`.
    pub fn start(pid: u32, budget: Duration) -> Watchdog {
        let (stop, stopped) = mpsc::channel::<()>();
        let fired = Arc::new(AtomicBool::new(false));
        let flag = fired.clone();
        let thread = std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(budget) {
                flag.store(true, Ordering::SeqCst);
                kill_group(pid);
            }
        });
        Watchdog { stop: Some(stop), fired, thread: Some(thread) }
    }

    /// Whether the budget ran out (and the group was killed).
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Start an agent's `command` in a process group of its own, its standard output piped
/// to us and its standard error ours, and watch it for `budget`.
pub fn spawn_watched(command: &mut Command, budget: Duration) -> std::io::Result<(Child, Watchdog)> {
    let child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).process_group(0).spawn()?;
    let watchdog = Watchdog::start(child.id(), budget);
    Ok((child, watchdog))
}

/// "ran past its N s budget".
pub fn over_budget(budget: Duration) -> String {
    format!("the agent ran past its {}s budget and was stopped", budget.as_secs_f64())
}

//! Flags many commands share, declared once and flattened into each
//! (`#[command(flatten)]`): the hub a command talks to, and how the servers run
//! world code (`worlds serve`, `hub serve`, `host serve`).

/// `--host`: the hub (or platform) a command talks to; the project's key pair comes
/// from GATEWAY_PUBLIC_KEY / GATEWAY_SECRET_KEY.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HubUrl {
    /// Hub URL (default: GATEWAY_HOST).
    #[arg(long = "host", env = "GATEWAY_HOST", hide_env_values = true)]
    url: Option<String>,
}

impl HubUrl {
    /// The URL given (flag or GATEWAY_HOST), if any: the clients fall back to
    /// GATEWAY_HOST themselves when it is None or empty.
    pub fn as_deref(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// The URL given, when it is not empty.
    pub fn given(&self) -> Option<String> {
        self.url.clone().filter(|url| !url.is_empty())
    }
}

/// How a server runs the code worlds bring (`api/handlers.py`, `tools/*.py`, python
/// graders): in a sandbox (bubblewrap: no environment, no network, a read-only view of
/// the world, a uid and PID namespace of its own) within these limits.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerLimits {
    /// Seconds a handler call may take (waiting for a busy worker included); past it the
    /// caller gets 504 and the worker is killed and restarted.
    #[arg(long = "handler-timeout", value_name = "SECONDS", default_value_t = 30.0)]
    handler_timeout: f64,
    /// Address space of each world process, in MiB.
    #[arg(long = "worker-memory-mb", value_name = "MIB", default_value_t = 2048)]
    worker_memory_mb: u64,
    /// Processes (and threads) a world's worker may run at once.
    #[arg(long = "worker-processes", value_name = "N", default_value_t = 64)]
    worker_processes: u64,
    /// CPU seconds a world process may use over its life.
    #[arg(long = "worker-cpu-seconds", value_name = "SECONDS", default_value_t = 3600)]
    worker_cpu_seconds: u64,
    /// Open files of each world process.
    #[arg(long = "worker-open-files", value_name = "N", default_value_t = 256)]
    worker_open_files: u64,
}

impl WorkerLimits {
    /// The workers' options: confined within these limits (or, `unconfined`, as the caller).
    pub fn options(&self, unconfined: bool) -> gateway_serve::handlers::WorkerOptions {
        let limits = gateway_sandbox::Limits {
            memory_bytes: self.worker_memory_mb.saturating_mul(1 << 20),
            processes: self.worker_processes.max(1),
            cpu_seconds: self.worker_cpu_seconds.max(1),
            open_files: self.worker_open_files.max(16),
            ..gateway_sandbox::Limits::default()
        };
        let sandbox = if unconfined { gateway_sandbox::Sandbox::unconfined() } else { gateway_sandbox::Sandbox::confined(limits) };
        let deadline = std::time::Duration::from_secs_f64(self.handler_timeout.clamp(0.001, 86_400.0));
        gateway_serve::handlers::WorkerOptions { sandbox, deadline, sees: Vec::new() }
    }
}

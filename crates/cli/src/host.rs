//! `gateway host serve`: a World Host on its own (the original's
//! `python -m gatewaysdk.environment.schema.host`), registering with a hub by
//! heartbeat so the hub places sessions on it. Parsing and printing only: the
//! host is `gateway-host`, its HTTP fetch and heartbeat `gateway-hub::worlds`.

use crate::exit::Status;
use crate::printer::{self, errln};
use clap::Subcommand;
use gateway_host::server::ServerConfig;
use gateway_host::{HostConfig, WorldHost};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Serve live world sessions: the control plane (/__host/*, behind
    /// X-Host-Secret) and each session's API (Host `w-<sid>-api.<domain>` or /s/<sid>/).
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: String,
        /// Where cached versions and sessions live (default: ~/.gateway/host).
        #[arg(long, env = "WORLDS_HOST_ROOT", hide_env_values = true, default_value_os_t = default_root(), hide_default_value = true)]
        root: PathBuf,
        /// The control-plane secret (required): with --platform, the credential
        /// `gateway hub hosts add NAME` printed for this host.
        #[arg(long, env = "WORLDS_HOST_SECRET", hide_env_values = true)]
        secret: Option<String>,
        /// The domain sessions are named under (`w-<sid>-api.<domain>`).
        #[arg(long, env = "WORLDS_INGRESS_DOMAIN", hide_env_values = true, default_value = "localhost")]
        domain: String,
        /// The hub to register with by heartbeat (its base URL).
        #[arg(long, env = "WORLDS_PLATFORM_URL", hide_env_values = true)]
        platform: Option<String>,
        /// The URL the hub reaches this host at (default: http://<addr>).
        #[arg(long, env = "WORLDS_HOST_ADVERTISE_URL", hide_env_values = true)]
        advertise: Option<String>,
        /// Sessions held before new ones are refused (503 at_capacity).
        #[arg(long = "max-sessions", env = "WORLDS_HOST_MAX_SESSIONS", hide_env_values = true, default_value_t = gateway_host::host::DEFAULT_MAX_SESSIONS)]
        max_sessions: usize,
        /// Lease of a session no call renews, in seconds.
        #[arg(long = "lease-seconds", env = "WORLDS_HOST_LEASE_S", hide_env_values = true, default_value_t = gateway_host::host::DEFAULT_LEASE_SECONDS)]
        lease_seconds: f64,
        /// Seconds between heartbeats.
        #[arg(long = "heartbeat-seconds", env = "WORLDS_HOST_HEARTBEAT_S", hide_env_values = true, default_value_t = 10.0)]
        heartbeat_seconds: f64,
        /// Seconds a drain waits for sessions to close before exiting.
        #[arg(long = "drain-seconds", default_value_t = 45.0)]
        drain_seconds: f64,
        /// World code (handlers, tools, graders) always runs confined on a host.
        #[command(flatten)]
        workers: crate::args::WorkerLimits,
    },
}

fn default_root() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".")).join(".gateway").join("host")
}

/// Run one `host` command.
pub fn run(command: HostCommand) -> ExitCode {
    let HostCommand::Serve {
        addr,
        root,
        secret,
        domain,
        platform,
        advertise,
        max_sessions,
        lease_seconds,
        heartbeat_seconds,
        drain_seconds,
        workers,
    } = command;
    crate::hub::private_files();
    let workers = workers.options(false);
    if let Err(error) = workers.sandbox.check() {
        errln!("Error: {error}");
        return Status::FAILED.into();
    }
    let Some(secret) = secret.filter(|s| !s.is_empty()) else {
        errln!("Error: the world host needs a control-plane secret: --secret or WORLDS_HOST_SECRET");
        return Status::FAILED.into();
    };
    let Ok(addr) = addr.parse::<std::net::SocketAddr>() else {
        errln!("Error: Invalid value: --addr must be HOST:PORT, not {addr}");
        return Status::USAGE.into();
    };
    crate::init_server_log();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            printer::error(error);
            return Status::FAILED.into();
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(listener) => listener,
            Err(error) => {
                errln!("Error: cannot listen on {addr}: {error}");
                return Status::FAILED.into();
            }
        };
        let bound = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let mut config = HostConfig::local(root);
        config.fetch = Arc::new(gateway_hub::worlds::fetch_bundle);
        config.objects = Arc::new(gateway_hub::worlds::HttpObjects);
        config.max_sessions = max_sessions;
        config.lease_seconds = lease_seconds;
        config.workers = workers;
        config.advertise_url = Some(advertise.unwrap_or_else(|| format!("http://{bound}")));
        let host = Arc::new(WorldHost::new(config));
        let heartbeat = platform.clone().map(|platform| {
            gateway_hub::worlds::start_heartbeat(
                host.clone(),
                platform,
                secret.clone(),
                Duration::from_secs_f64(heartbeat_seconds.max(0.1)),
            )
        });
        errln!("gateway world host listening on http://{bound}");
        let drained = {
            let host = host.clone();
            let (platform, secret) = (platform.clone(), secret.clone());
            async move {
                crate::shutdown_signal().await;
                // Drain: no new sessions; the platform hears at once; the ones held
                // are served until they close or the grace runs out.
                host.drain();
                if let Some(platform) = &platform {
                    let _ = gateway_hub::worlds::heartbeat_once(&reqwest_client(), &host, platform, &secret).await;
                }
                errln!("draining: {} sessions", host.session_count());
                let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(drain_seconds.max(0.0));
                while host.session_count() > 0 && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        };
        let served = gateway_host::server::run(host, ServerConfig { secret, domain }, listener, drained).await;
        if let Some(heartbeat) = heartbeat {
            heartbeat.abort();
        }
        match served {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                printer::error(error);
                Status::FAILED.into()
            }
        }
    })
}

fn reqwest_client() -> gateway_hub::worlds::HttpClient {
    gateway_hub::worlds::HttpClient::new()
}

//! `gateway hub serve|keys` (the self-hosted hub) and `gateway auth login|logout|status`
//! (`~/.gateway/config.json`, as the original writes it).

use crate::exit::Status;
use crate::printer::{self, err, errln, out, outln};
use clap::Subcommand;
use gateway_hub::server::Limits;
use gateway_hub::HubConfig;
use gateway_world::json::{dumps, object, DumpOptions, Value};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum HubCommand {
    /// Serve the hub: its API (/api/public/*), object URLs, the world sessions' data
    /// planes (/s/<sid>/…) and its web pages at / (sign in there with a project's public
    /// and secret key: `gateway hub keys create`). One log line per request on stderr
    /// (GATEWAY_LOG=warn quiets them).
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8090")]
        addr: String,
        /// Data directory: keys, and by default the database and the bundles (default: ~/.gateway/hub).
        #[arg(long, default_value_os_t = default_data(), hide_default_value = true)]
        data: PathBuf,
        /// Metadata database URL (default sqlite:<data>/hub.sqlite).
        #[arg(long)]
        database: Option<String>,
        /// Object store URL (default file:<data>/objects).
        #[arg(long)]
        objects: Option<String>,
        /// Base URL put into presigned object URLs (default: the request's Host for
        /// clients, the bound address for World Hosts).
        #[arg(long = "public-url")]
        public_url: Option<String>,
        /// Largest bundle upload, in MiB.
        #[arg(long = "max-bundle-mb", default_value_t = 1024)]
        max_bundle_mb: usize,
        /// Largest world data chunk (`limits.chunkBytes`): gzipped upload and JSONL
        /// (64MiB, 1000000, 512k…).
        #[arg(long = "max-chunk-bytes", default_value = "64MiB")]
        max_chunk_bytes: String,
        /// Run no World Host in this process: sessions go to hosts that register
        /// with `gateway host serve --platform <this hub>`, each under its own
        /// credential (`gateway hub hosts add NAME`).
        #[arg(long = "no-host")]
        no_host: bool,
        /// World code (handlers, tools, graders) always runs confined on a hub.
        #[command(flatten)]
        workers: crate::args::WorkerLimits,
        /// A host remote connector captures may call: HOST (any port) or HOST:PORT,
        /// repeatable or comma-separated. Without one, `connector capture --remote` is
        /// refused. A name is resolved and every address must be public (no loopback,
        /// private, link-local, CGNAT, multicast or metadata address); an IP address with
        /// a port (127.0.0.1:8080) allows exactly that address even when it is not.
        #[arg(
            long = "capture-allow",
            env = "GATEWAY_CAPTURE_ALLOW",
            hide_env_values = true,
            value_name = "HOST[:PORT]",
            value_delimiter = ','
        )]
        capture_allow: Vec<String>,
        /// Most world sessions one project holds open at once (0: no quota); the
        /// default is a quarter of a host's default capacity.
        #[arg(long = "max-sessions-per-project", default_value_t = gateway_hub::server::DEFAULT_SESSIONS_PER_PROJECT)]
        max_sessions_per_project: usize,
    },
    /// World Hosts allowed to register with this hub, each under its own credential.
    Hosts {
        #[command(subcommand)]
        command: HostsCommand,
    },
    /// Project API keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key pair for a project (created when new) and print it once.
    Create {
        /// Project name.
        #[arg(long, default_value = "default")]
        project: String,
        /// Data directory of the hub (default: ~/.gateway/hub).
        #[arg(long, default_value_os_t = default_data(), hide_default_value = true)]
        data: PathBuf,
        /// Metadata database URL (as given to `hub serve`).
        #[arg(long)]
        database: Option<String>,
    },
}

/// Where `hub hosts` finds the hub's state.
#[derive(Debug, clap::Args)]
pub struct HubData {
    /// Data directory of the hub (default: ~/.gateway/hub).
    #[arg(long, default_value_os_t = default_data(), hide_default_value = true)]
    data: PathBuf,
    /// Metadata database URL (as given to `hub serve`).
    #[arg(long)]
    database: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum HostsCommand {
    /// Issue a credential for a World Host and print it once (the hub keeps only its
    /// hash): run the host with it as WORLDS_HOST_SECRET.
    Add {
        /// The host's name (a-z, 0-9, '-').
        name: String,
        #[command(flatten)]
        hub: HubData,
    },
    /// The hosts issued a credential, active or revoked.
    List {
        #[command(flatten)]
        hub: HubData,
    },
    /// Revoke a host's credential: its heartbeats are refused and it gets no more sessions.
    Revoke {
        /// The host's name.
        name: String,
        #[command(flatten)]
        hub: HubData,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Store credentials for the gateway CLI.
    Login {
        /// Gateway server URL.
        #[arg(long)]
        host: Option<String>,
        /// Project public key (pk-lf-...).
        #[arg(long = "public-key")]
        public_key: Option<String>,
        /// Project secret key (sk-lf-...).
        #[arg(long = "api-key")]
        api_key: Option<String>,
    },
    /// Clear stored credentials.
    Logout,
    /// Show current authentication status.
    Status,
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."))
}

fn default_data() -> PathBuf {
    home().join(".gateway").join("hub")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime")
}

/// Every file and directory a hub or host command creates is its owner's only
/// (0600 / 0700): session databases, bundles, objects, hub.sqlite, keys.
pub(crate) fn private_files() {
    #[cfg(unix)]
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
}

/// Run one `hub` command.
pub fn run(command: HubCommand) -> ExitCode {
    private_files();
    match command {
        HubCommand::Serve {
            addr,
            data,
            database,
            objects,
            public_url,
            max_bundle_mb,
            max_chunk_bytes,
            no_host,
            workers,
            capture_allow,
            max_sessions_per_project,
        } => {
            let Ok(addr) = addr.parse::<std::net::SocketAddr>() else {
                errln!("Error: Invalid value: --addr must be HOST:PORT, not {addr}");
                return Status::USAGE.into();
            };
            let chunk_bytes = match gateway_world::chunks::parse_size(&max_chunk_bytes) {
                Ok(size) if size > 0 => size,
                _ => {
                    errln!("Error: Invalid value: --max-chunk-bytes takes a size like 64MiB or 1000000, not {max_chunk_bytes}");
                    return Status::USAGE.into();
                }
            };
            let allowed = match gateway_connector::egress::AllowList::parse(capture_allow.iter().map(String::as_str)) {
                Ok(allowed) => allowed,
                Err(error) => {
                    errln!("Error: Invalid value: {error}");
                    return Status::USAGE.into();
                }
            };
            crate::init_server_log();
            let database_flag = if database.is_some() { " --database <the same URL>" } else { "" };
            let config = HubConfig { data: data.clone(), database, objects };
            let limits = Limits {
                max_object_bytes: max_bundle_mb.saturating_mul(1024 * 1024),
                chunk_bytes,
                workers: workers.options(false),
                capture_egress: gateway_connector::egress::Egress::AllowList(allowed),
                max_sessions_per_project,
                ..Limits::default()
            };
            let result = runtime().block_on(async move {
                let mut hub = config.open(public_url, limits).await?;
                if no_host {
                    hub.worlds = Some(std::sync::Arc::new(gateway_hub::worlds::Worlds::remote_only(&config.data.join("host"), config.host_secret()?, hub.objects.clone())));
                }
                if hub.meta.key_count().await? == 0 {
                    errln!(
                        "No API keys yet: every call will be refused (401). Create one with\n  gateway hub keys create --data {}{database_flag} [--project NAME]\nthen point clients at this hub with GATEWAY_HOST=http://{addr} GATEWAY_PUBLIC_KEY=… GATEWAY_SECRET_KEY=…",
                        data.display()
                    );
                }
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| gateway_hub::HubError::Storage(format!("cannot listen on {addr}: {e}")))?;
                let bound = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
                errln!("gateway hub listening on http://{bound}");
                errln!("web pages: http://{bound}/ (sign in with a project's public and secret key)");
                gateway_hub::server::serve_until(hub, listener, crate::shutdown_signal()).await
            });
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    printer::error(error);
                    Status::FAILED.into()
                }
            }
        }
        HubCommand::Hosts { command } => hosts(command),
        HubCommand::Keys { command: KeysCommand::Create { project, data, database } } => {
            let config = HubConfig { data, database, objects: None };
            let result = runtime().block_on(async move {
                let meta = config.open_meta().await?;
                gateway_hub::create_key(meta.as_ref(), &project).await.map(|(id, public, secret)| (project, id, public, secret))
            });
            match result {
                Ok((project, id, public, secret)) => {
                    let out = object([
                        ("project", Value::str(project)),
                        ("projectId", Value::str(id)),
                        ("publicKey", Value::str(public.clone())),
                        ("secretKey", Value::str(secret.clone())),
                    ]);
                    printer::json(&out);
                    errln!("# The secret key is shown once (the hub keeps only its hash). Use it with:");
                    errln!("#   export GATEWAY_PUBLIC_KEY={public} GATEWAY_SECRET_KEY={secret}");
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    printer::error(error);
                    Status::FAILED.into()
                }
            }
        }
    }
}

/// Run one `hub hosts` command.
fn hosts(command: HostsCommand) -> ExitCode {
    let (HostsCommand::Add { hub, .. } | HostsCommand::List { hub } | HostsCommand::Revoke { hub, .. }) = &command;
    let config = HubConfig { data: hub.data.clone(), database: hub.database.clone(), objects: None };
    let result = runtime().block_on(async {
        let meta = config.open_meta().await?;
        match &command {
            HostsCommand::Add { name, .. } => {
                let keys = gateway_hub::server::Keys::load_or_create(&config.keys_dir())?;
                let credential = gateway_hub::host_credentials::add(meta.as_ref(), &keys, name).await?;
                Ok(object([("name", Value::str(name)), ("credential", Value::Str(credential))]))
            }
            HostsCommand::List { .. } => Ok(object([("hosts", Value::Array(gateway_hub::host_credentials::list(meta.as_ref()).await?))])),
            HostsCommand::Revoke { name, .. } => {
                if gateway_hub::host_credentials::revoke(meta.as_ref(), name).await? {
                    Ok(object([("name", Value::str(name)), ("revoked", Value::Bool(true))]))
                } else {
                    Err(gateway_hub::HubError::NotFound(format!("no active credential for host {name} (gateway hub hosts list)")))
                }
            }
        }
    });
    match result {
        Ok(answer) => {
            printer::json(&answer);
            if let HostsCommand::Add { name, hub } = &command {
                errln!("# The credential is shown once (the hub keeps only its hash). Run the host with it:");
                errln!("#   WORLDS_HOST_SECRET=<credential> gateway host serve --platform <this hub's URL> …");
                errln!("# and revoke it with: gateway hub hosts revoke {name} --data {}", hub.data.display());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            printer::error(error);
            Status::FAILED.into()
        }
    }
}

fn config_file() -> PathBuf {
    home().join(".gateway").join("config.json")
}

fn prompt(label: &str) -> String {
    out!("{label}: ");
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    line.trim_end_matches(['\n', '\r']).to_string()
}

/// A secret read without echo when stdin is a terminal (rpassword), else one line
/// of stdin (piped input, as the original's hidden prompt reads it).
pub(crate) fn prompt_secret(label: &str, to_stderr: bool) -> std::io::Result<String> {
    if to_stderr {
        err!("{label}: ");
    } else {
        out!("{label}: ");
    }
    read_secret()
}

/// A secret without echo from a terminal (rpassword), else one line of stdin.
fn read_secret() -> std::io::Result<String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return rpassword::read_password();
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

/// [`prompt_secret`] printed as click's hidden prompt prints it: `label:` on stdout,
/// then the space getpass writes — to the terminal, or to stderr when stdin is piped
/// (so a piped run's stdout is byte for byte the original's).
pub(crate) fn prompt_secret_like_click(label: &str) -> std::io::Result<String> {
    use std::io::IsTerminal;
    out!("{label}:");
    if std::io::stdin().is_terminal() {
        out!(" ");
    } else {
        err!(" ");
    }
    read_secret()
}

/// Run one `auth` command.
pub fn auth(command: AuthCommand) -> ExitCode {
    match command {
        AuthCommand::Login { host, public_key, api_key } => {
            let host = host.unwrap_or_else(|| prompt("Host"));
            let public_key = public_key.unwrap_or_else(|| prompt("Public key"));
            let api_key = api_key.unwrap_or_else(|| prompt_secret("Api key", false).unwrap_or_default());
            let config = object([
                ("host", Value::str(host.trim_end_matches('/'))),
                ("public_key", Value::str(public_key)),
                ("api_key", Value::str(api_key)),
            ]);
            match save_config(&config) {
                Ok(()) => {
                    outln!("Credentials saved to ~/.gateway/config.json");
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    printer::error(error);
                    Status::FAILED.into()
                }
            }
        }
        AuthCommand::Logout => {
            let path = config_file();
            if path.exists() {
                if let Err(error) = std::fs::remove_file(&path) {
                    errln!("Error: {}: {error}", path.display());
                    return Status::FAILED.into();
                }
                outln!("Credentials cleared.");
            } else {
                outln!("No credentials stored.");
            }
            ExitCode::SUCCESS
        }
        AuthCommand::Status => {
            let config = std::fs::read_to_string(config_file())
                .ok()
                .and_then(|text| gateway_world::json::parse(&text).ok())
                .map(|p| p.value)
                .unwrap_or(Value::Null);
            let host = config.get("host").and_then(Value::as_str).filter(|h| !h.is_empty());
            let has_key = config.get("api_key").is_some_and(gateway_hub_client::client::truthy);
            match host {
                Some(host) => {
                    outln!("Host: {host}");
                    outln!("API key: {}", if has_key { "configured" } else { "not set" });
                }
                None => outln!("No credentials stored. Run `gateway auth login`."),
            }
            ExitCode::SUCCESS
        }
    }
}

fn save_config(config: &Value) -> std::io::Result<()> {
    let path = config_file();
    let dir = path.parent().expect("config dir").to_path_buf();
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(&dir)?;
    std::fs::write(&path, dumps(config, DumpOptions::PRETTY))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

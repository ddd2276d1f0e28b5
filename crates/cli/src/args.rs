//! Flags many commands share, declared once and flattened into each
//! (`#[command(flatten)]`): the hub a command talks to.

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

//! The one HTTP transport every hub client sends through: the hub's address, the
//! `Authorization` header of its credentials and a blocking reqwest client. A request
//! is built here (the URL with its query, the auth header, a JSON body), sent, and its
//! status and body read back; a JSON call also checks the status and decodes the answer.
//!
//! What the clients do differently is not written again in each of them: it is the
//! [`Dialect`] a client names — how a request that got no answer is told, how much of a
//! refusal's body is kept, what an answer that is not JSON is called, whether an empty
//! answer is `{}` — because the original's clients each word these their own way and
//! the CLI prints those words. The credentials' refusals are a client's own words
//! ([`Missing`]).
//!
//! It is not a client of any route (those are the `*_client` modules). Signed object
//! URLs (bundles, chunks, wheels, states) carry no hub credentials: they go through
//! [`Transport::http`] as they are.

use crate::error::error_chain;
use crate::ClientError;
use base64::Engine as _;
use gateway_common::url::quote_plus;
use gateway_world::json::{self, DumpOptions, Map, Value};
use reqwest::{Method, StatusCode};
use std::time::Duration;

/// `json.dumps(x)`: Python's default separators, ASCII only — the body the original's
/// urllib-style clients send.
pub(crate) const PYTHON_DUMPS: DumpOptions = DumpOptions { sort_keys: false, ensure_ascii: true, indent: None, compact: false };

/// What the urllib-based clients of the original read: the host (`--host`, else
/// `GATEWAY_HOST`) and the key pair (`GATEWAY_PUBLIC_KEY`, `GATEWAY_SECRET_KEY`), from
/// the environment only (never `~/.gateway/config.json`). Empty when unset; each client
/// refuses missing values in its own words.
#[derive(Debug, Clone, Default)]
pub struct EnvCredentials {
    /// The host, as given (trailing `/` not yet removed).
    pub host: String,
    /// `GATEWAY_PUBLIC_KEY`.
    pub public_key: String,
    /// `GATEWAY_SECRET_KEY`.
    pub secret_key: String,
}

impl EnvCredentials {
    /// Read them: a non-empty `host` flag wins over `GATEWAY_HOST`.
    pub fn read(host: Option<&str>) -> EnvCredentials {
        let var = |name: &str| std::env::var(name).unwrap_or_default();
        EnvCredentials {
            host: host.map(str::to_string).filter(|h| !h.is_empty()).unwrap_or_else(|| var("GATEWAY_HOST")),
            public_key: var("GATEWAY_PUBLIC_KEY"),
            secret_key: var("GATEWAY_SECRET_KEY"),
        }
    }
}

/// The `Authorization` header value of a key pair: `Basic base64(public:secret)`.
pub fn basic_auth(public_key: &str, secret_key: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{public_key}:{secret_key}")))
}

/// How a client refuses a missing host or key pair (the original's words differ by client).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Missing {
    /// No host.
    pub host: &'static str,
    /// No public or no secret key.
    pub keys: &'static str,
}

impl Missing {
    /// `bench` and filing: the refusal says where to set them.
    pub(crate) const SAY_WHERE: Missing = Missing {
        host: "host is required (e.g. https://withgateway.ai): set GATEWAY_HOST or pass --host",
        keys: "both public_key and secret_key are required: set GATEWAY_PUBLIC_KEY and GATEWAY_SECRET_KEY",
    };
    /// Connectors, world data and environments.
    pub(crate) const TERSE: Missing =
        Missing { host: "host is required (e.g. https://withgateway.ai)", keys: "both public_key and secret_key are required" };
}

/// How a request that got no answer, or one it could not read, is told.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cause {
    /// reqwest's own text: the outermost error, URL included.
    Outermost,
    /// The error and all its causes, URL included.
    Chain,
    /// The error and all its causes, without the URL (a signed URL is a grant).
    ChainWithoutUrl,
    /// The error and its first cause, without the URL (the caller names the host).
    FirstWithoutUrl,
}

impl Cause {
    /// The error, told this way.
    pub(crate) fn tell(self, error: reqwest::Error) -> String {
        match self {
            Cause::Outermost => error.to_string(),
            Cause::Chain => error_chain(&error),
            Cause::ChainWithoutUrl => error_chain(&error.without_url()),
            Cause::FirstWithoutUrl => {
                let error = error.without_url();
                match std::error::Error::source(&error) {
                    Some(source) => format!("{error}: {source}"),
                    None => error.to_string(),
                }
            }
        }
    }
}

/// How a client reads and words a JSON call ([`Transport::call`]). A refusal is always
/// `"<METHOD> <path> -> <code>: <body's first characters>"`, a request without an
/// answer `"<METHOD> <path> -> <cause>"`, an answer that is not JSON
/// `"<METHOD> <path> -> <code>: <not_json> (<why>)"`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dialect {
    /// `Content-Type: application/json` on every request, not only on those with a body.
    pub content_type_always: bool,
    /// How a request without a (readable) answer is told.
    pub cause: Cause,
    /// How many characters of a refusal's body its message keeps.
    pub detail_chars: usize,
    /// What an answer that is not JSON is called.
    pub not_json: &'static str,
    /// An empty answer is `{}` (else it is not JSON).
    pub empty_is_object: bool,
    /// A repeated member makes an answer not JSON (else the last one wins, as in `json.loads`).
    pub refuse_repeated_members: bool,
}

impl Dialect {
    /// What most of the original's urllib clients do; each client changes what it words otherwise.
    pub(crate) const URLLIB: Dialect = Dialect {
        content_type_always: false,
        cause: Cause::Outermost,
        detail_chars: 500,
        not_json: "not JSON",
        empty_is_object: false,
        refuse_repeated_members: false,
    };
}

/// Why an exchange has no answer to give.
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// The request could not be sent, or no answer came.
    Send(reqwest::Error),
    /// The answer's body could not be read.
    Read(reqwest::Error),
}

/// A hub's address, the credentials' header and the HTTP client requests go through.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    host: String,
    auth: String,
    http: reqwest::blocking::Client,
}

impl Transport {
    /// Requests to `host` (a trailing `/` dropped) carrying `auth`, each within `timeout`
    /// unless it sets its own.
    pub(crate) fn new(host: &str, auth: String, timeout: Duration) -> Result<Transport, ClientError> {
        let http =
            reqwest::blocking::Client::builder().timeout(timeout).build().map_err(|e| ClientError::Setup(format!("HTTP client: {e}")))?;
        Ok(Transport { host: host.trim_end_matches('/').to_string(), auth, http })
    }

    /// With a project key pair (Basic auth); a missing host or key refused in `missing`'s words.
    pub(crate) fn with_key_pair(
        host: &str,
        public_key: &str,
        secret_key: &str,
        missing: Missing,
        timeout: Duration,
    ) -> Result<Transport, ClientError> {
        if host.is_empty() {
            return Err(ClientError::Setup(missing.host.into()));
        }
        if public_key.is_empty() || secret_key.is_empty() {
            return Err(ClientError::Setup(missing.keys.into()));
        }
        Transport::new(host, basic_auth(public_key, secret_key), timeout)
    }

    /// With the key pair of [`EnvCredentials::read`]`(host)`.
    pub(crate) fn from_env(host: Option<&str>, missing: Missing, timeout: Duration) -> Result<Transport, ClientError> {
        let credentials = EnvCredentials::read(host);
        Transport::with_key_pair(&credentials.host, &credentials.public_key, &credentials.secret_key, missing, timeout)
    }

    /// The host requests go to, without a trailing `/`.
    pub(crate) fn host(&self) -> &str {
        &self.host
    }

    /// The HTTP client itself, for signed object URLs (no hub credentials).
    pub(crate) fn http(&self) -> &reqwest::blocking::Client {
        &self.http
    }

    /// One request to `host + path`: the auth header, `body` (already JSON text) with
    /// its content type; the answer's status and its body, read as UTF-8.
    pub(crate) fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        content_type_always: bool,
    ) -> Result<(StatusCode, String), Unanswered> {
        let mut request = self.http.request(method, format!("{}{path}", self.host)).header("Authorization", &self.auth);
        if body.is_some() || content_type_always {
            request = request.header("Content-Type", "application/json");
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        let response = request.send().map_err(Unanswered::Send)?;
        let status = response.status();
        let text = response.text().map_err(Unanswered::Read)?;
        Ok((status, text))
    }

    /// One JSON call: `body` sent as `json.dumps` writes it; a success's answer decoded,
    /// anything else worded in `dialect`.
    pub(crate) fn call(&self, dialect: &Dialect, method: Method, path: &str, body: Option<&Value>) -> Result<Value, ClientError> {
        let body = body.map(|body| json::dumps(body, PYTHON_DUMPS));
        let (status, text) = self.exchange(method.clone(), path, body, dialect.content_type_always).map_err(|unanswered| {
            let (Unanswered::Send(error) | Unanswered::Read(error)) = unanswered;
            ClientError::Unreachable(format!("{method} {path} -> {}", dialect.cause.tell(error)))
        })?;
        if !status.is_success() {
            let detail: String = text.chars().take(dialect.detail_chars).collect();
            return Err(ClientError::Refused(format!("{method} {path} -> {}: {detail}", status.as_u16())));
        }
        if text.is_empty() && dialect.empty_is_object {
            return Ok(Value::Object(Map::default()));
        }
        let parsed = if dialect.refuse_repeated_members { json::parse(&text) } else { json::parse_loads(&text) };
        parsed
            .map(|parsed| parsed.value)
            .map_err(|e| ClientError::BadAnswer(format!("{method} {path} -> {}: {} ({e:?})", status.as_u16(), dialect.not_json)))
    }
}

/// `path?k=v&…` with each name and value as `urlencode` writes them (`quote_plus`);
/// `path` alone when there are none.
pub(crate) fn with_query<K: AsRef<str>, V: AsRef<str>>(path: &str, pairs: impl IntoIterator<Item = (K, V)>) -> String {
    let pairs: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{}={}", quote_plus(k.as_ref()), quote_plus(v.as_ref()))).collect();
    if pairs.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", pairs.join("&"))
    }
}

//! Where a capture may connect: [`Egress::Any`] for a capture on the author's own
//! machine, [`Egress::AllowList`] for the hub's remote captures (an SSRF from a
//! connector.toml must not reach the hub's loopback, its private network or the cloud's
//! metadata service, nor carry the environment's secret anywhere but the vendor).
//!
//! Under an allow-list every URL a capture calls is checked before the call: an http(s)
//! URL whose host the operator named (`hub serve --capture-allow HOST[:PORT]`), whose
//! every resolved address is public — loopback, private, link-local, carrier-grade NAT,
//! unspecified, multicast, broadcast, reserved and metadata addresses are refused, an
//! IPv4-mapped IPv6 address counting as its IPv4. The addresses checked are the only
//! ones the client may use: its resolver answers the checked names from that table
//! ([`Pins`]) and nothing else, so a DNS answer that changes between the check and the
//! connection (rebinding) is never used. Redirects are followed only on the same
//! scheme, host and port; no proxy is used. The one opt-in: an entry that is an IP
//! address with a port (`127.0.0.1:8080`) allows exactly that address and port even
//! when it is not public — the operator named it, a connector.toml cannot.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// The `hub serve` flag that names the hosts remote captures may reach.
pub const ALLOW_FLAG: &str = "--capture-allow";
/// Same-origin redirects followed at most.
const MAX_REDIRECTS: usize = 5;

/// Why a capture may not make a call.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EgressError {
    /// An allow-list entry that is not `HOST` or `HOST:PORT`.
    #[error("{ALLOW_FLAG} {0}: expected HOST or HOST:PORT (a name, an IPv4 address or [IPv6])")]
    BadEntry(String),
    /// The hub allows no host at all.
    #[error("remote captures are off on this hub: its operator allows no hosts (`gateway hub serve {ALLOW_FLAG} HOST`)")]
    Off,
    /// Not an http(s) URL with a host.
    #[error("{0} is not an http(s) URL with a host")]
    BadUrl(String),
    /// A host the allow-list does not name.
    #[error("{0} is not on this hub's capture allow-list (its operator allows a host with `gateway hub serve {ALLOW_FLAG} HOST`)")]
    NotAllowed(String),
    /// The name did not resolve.
    #[error("could not resolve {host}: {error}")]
    Unresolved {
        /// The name.
        host: String,
        /// The resolver's words.
        error: String,
    },
    /// The host is, or resolves to, an address captures never reach.
    #[error("{} a {reason} address: remote captures reach public addresses only", where_is(host, address))]
    Forbidden {
        /// The host as the URL names it.
        host: String,
        /// The address refused.
        address: IpAddr,
        /// What kind of address it is.
        reason: &'static str,
    },
    /// A URL outside the origins checked when the capture began.
    #[error("{0} is not the connection's host: a remote capture calls only the hosts its connector.toml names and sends its secret nowhere else")]
    OtherHost(String),
    /// A method a capture does not send.
    #[error("a remote capture sends {allowed} requests only, not {method}")]
    Method {
        /// The method refused.
        method: String,
        /// What is allowed for this call.
        allowed: &'static str,
    },
    /// The HTTP client could not be built.
    #[error("could not start the HTTP client: {0}")]
    Client(String),
}

/// `host resolves to address,`, or `address is` when the host is that address.
fn where_is(host: &str, address: &IpAddr) -> String {
    match Host::of(host) {
        Some(Host::Ip(ip)) if ip == *address => format!("{address} is"),
        _ => format!("{host} resolves to {address},"),
    }
}

/// Where captures may connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Egress {
    /// Anywhere, redirects followed: a capture on the author's own machine, which
    /// reaches what the author can reach.
    Any,
    /// Only the hosts listed, at public addresses, pinned (see the module's text).
    AllowList(AllowList),
}

/// The hosts an operator allows (`--capture-allow`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<Allowed>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    host: Host,
    /// `None`: any port.
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Name(String),
    Ip(IpAddr),
}

impl Host {
    /// A URL's or an entry's host: an IP address (an IPv4-mapped IPv6 one as its
    /// IPv4), or a lower-case name without its trailing dot.
    fn of(text: &str) -> Option<Host> {
        let bare = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or(text);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Some(Host::Ip(canonical_ip(ip)));
        }
        let name = bare.trim_end_matches('.').to_ascii_lowercase();
        let fits = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
        fits.then_some(Host::Name(name))
    }
}

/// An IPv4-mapped IPv6 address as its IPv4; any other address as it is.
fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl AllowList {
    /// Parse `HOST` / `HOST:PORT` / `[IPv6]:PORT` entries (blank ones ignored).
    pub fn parse<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<AllowList, EgressError> {
        let mut list = AllowList::default();
        for entry in entries.into_iter().map(str::trim).filter(|e| !e.is_empty()) {
            let bad = || EgressError::BadEntry(entry.to_string());
            let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
                let (inside, after) = rest.split_once(']').ok_or_else(bad)?;
                let port = match after {
                    "" => None,
                    _ => Some(after.strip_prefix(':').ok_or_else(bad)?),
                };
                (inside.parse::<Ipv6Addr>().map_err(|_| bad())?.to_string(), port)
            } else if entry.matches(':').count() == 1 {
                let (host, port) = entry.split_once(':').ok_or_else(bad)?;
                (host.to_string(), Some(port))
            } else {
                (entry.to_string(), None)
            };
            let port = port.map(|p| p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad)).transpose()?;
            let host = Host::of(&host).ok_or_else(bad)?;
            list.entries.push(Allowed { host, port });
        }
        Ok(list)
    }

    /// Whether no host is allowed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn entry(&self, host: &Host, port: u16) -> Option<&Allowed> {
        self.entries.iter().find(|e| e.host == *host && e.port.is_none_or(|p| p == port))
    }
}

/// The scheme, host and port of a URL a capture calls (equal when those are; the
/// spelling of the host aside).
#[derive(Debug, Clone)]
struct Origin {
    scheme: String,
    host: Host,
    port: u16,
    /// The URL's own spelling of the host (`api.acme.test`, `[::1]`).
    shown: String,
}

impl PartialEq for Origin {
    fn eq(&self, other: &Origin) -> bool {
        (&self.scheme, &self.host, self.port) == (&other.scheme, &other.host, other.port)
    }
}

fn origin(url: &Url) -> Option<Origin> {
    let scheme = url.scheme().to_string();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let shown = url.host_str()?.to_string();
    Some(Origin { scheme, host: Host::of(&shown)?, port: url.port_or_known_default()?, shown })
}

fn parsed(url: &str) -> Result<(Url, Origin), EgressError> {
    let bad = || EgressError::BadUrl(url.to_string());
    let parsed = Url::parse(url).map_err(|_| bad())?;
    let origin = origin(&parsed).ok_or_else(bad)?;
    Ok((parsed, origin))
}

/// Why `ip` is never reached by a remote capture, or `None` for a public address.
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match canonical_ip(ip) {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b) {
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200) => "cloud metadata",
        (0, _) if ip.is_unspecified() => "unspecified",
        (0, _) => "reserved (this network)",
        (127, _) => "loopback",
        (10, _) | (172, 16..=31) | (192, 168) => "private",
        (169, 254) => "link-local",
        (100, 64..=127) => "carrier-grade NAT",
        (192, 0) if c == 0 => "reserved (IETF protocol)",
        (198, 18 | 19) => "reserved (benchmarking)",
        _ if ip.is_broadcast() => "broadcast",
        (224..=239, _) => "multicast",
        (240..=255, _) => "reserved",
        _ => return None,
    })
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254) {
        return Some("cloud metadata");
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // NAT64 (64:ff9b::/96) addresses are judged by the IPv4 address they carry; the
    // deprecated IPv4-compatible ones (::/96) are never reached.
    let [.., hi, lo] = segments;
    let embedded = Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return forbidden_v4(embedded);
    }
    if segments[..6] == [0, 0, 0, 0, 0, 0] {
        return Some("reserved (IPv4-compatible)");
    }
    match segments[0] {
        s if s & 0xfe00 == 0xfc00 => Some("private (unique local)"),
        s if s & 0xffc0 == 0xfe80 => Some("link-local"),
        s if s & 0xffc0 == 0xfec0 => Some("site-local"),
        s if s & 0xff00 == 0xff00 => Some("multicast"),
        _ => None,
    }
}

/// The pinned answers: the only names the client resolves, to the addresses checked.
#[derive(Debug, Clone, Default)]
pub struct Pins(BTreeMap<String, Vec<SocketAddr>>);

impl Pins {
    /// The checked addresses of `name`, or `None` for a name never checked.
    pub fn lookup(&self, name: &str) -> Option<Vec<SocketAddr>> {
        self.0.get(&name.trim_end_matches('.').to_ascii_lowercase()).cloned()
    }
}

impl Resolve for Pins {
    fn resolve(&self, name: Name) -> Resolving {
        let answer = match self.lookup(name.as_str()) {
            Some(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
            None => Err(format!("{} was not checked against the capture allow-list", name.as_str()).into()),
        };
        Box::pin(std::future::ready(answer))
    }
}

/// How a name is resolved (the system resolver; tests give their own).
pub type Lookup<'a> = &'a dyn Fn(&str, u16) -> std::io::Result<Vec<SocketAddr>>;

/// The system resolver.
pub fn system_lookup(host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    (host, port).to_socket_addrs().map(Iterator::collect)
}

/// An HTTP client for one capture run and the origins it may call.
pub struct Gate {
    /// The client: under an allow-list, pinned, same-origin redirects only, no proxy.
    pub http: reqwest::blocking::Client,
    /// `None`: anywhere ([`Egress::Any`]).
    origins: Option<Vec<Origin>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").field("origins", &self.origins).finish_non_exhaustive()
    }
}

impl Egress {
    /// Check without resolving that every URL's host is on the allow-list (the hub's
    /// answer before it starts a capture).
    pub fn check_hosts(&self, urls: &[String]) -> Result<(), EgressError> {
        let Egress::AllowList(list) = self else { return Ok(()) };
        if list.is_empty() {
            return Err(EgressError::Off);
        }
        for url in urls {
            let (_, origin) = parsed(url)?;
            if list.entry(&origin.host, origin.port).is_none() {
                return Err(EgressError::NotAllowed(format!("{}:{}", origin.shown, origin.port)));
            }
        }
        Ok(())
    }

    /// The client for a capture calling `urls` (its base URL, its token endpoint):
    /// each checked and its name resolved and pinned here, with the system resolver.
    pub fn gate(&self, urls: &[String], timeout: Duration) -> Result<Gate, EgressError> {
        self.gate_with(urls, timeout, &system_lookup)
    }

    /// [`Egress::gate`] resolving names with `lookup`.
    pub fn gate_with(&self, urls: &[String], timeout: Duration, lookup: Lookup<'_>) -> Result<Gate, EgressError> {
        let builder = reqwest::blocking::Client::builder().timeout(timeout);
        let Egress::AllowList(list) = self else {
            let http = builder.build().map_err(|e| EgressError::Client(e.to_string()))?;
            return Ok(Gate { http, origins: None });
        };
        self.check_hosts(urls)?;
        let mut pins = Pins::default();
        let mut origins = Vec::new();
        for url in urls {
            let (_, origin) = parsed(url)?;
            let addrs = checked_addresses(list, &origin, lookup)?;
            if let Host::Name(name) = &origin.host {
                pins.0.entry(name.clone()).or_default().extend(addrs);
            }
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let same = attempt.previous().first().and_then(origin) == origin(attempt.url());
            if !same {
                let refused = format!("a redirect to {} refused: a remote capture follows redirects on the same host only", attempt.url());
                attempt.error(refused)
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        let http =
            builder.no_proxy().redirect(policy).dns_resolver(Arc::new(pins)).build().map_err(|e| EgressError::Client(e.to_string()))?;
        Ok(Gate { http, origins: Some(origins) })
    }
}

/// The addresses of an allowed origin, every one public — or the entry naming this exact
/// address and port.
fn checked_addresses(list: &AllowList, origin: &Origin, lookup: Lookup<'_>) -> Result<Vec<SocketAddr>, EgressError> {
    let entry =
        list.entry(&origin.host, origin.port).ok_or_else(|| EgressError::NotAllowed(format!("{}:{}", origin.shown, origin.port)))?;
    let addrs = match &origin.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, origin.port)],
        Host::Name(name) => {
            let found = lookup(name, origin.port).map_err(|e| EgressError::Unresolved { host: name.clone(), error: e.to_string() })?;
            if found.is_empty() {
                return Err(EgressError::Unresolved { host: name.clone(), error: "no address".into() });
            }
            found
        }
    };
    let named_exactly = matches!(entry.host, Host::Ip(_)) && entry.port.is_some();
    for addr in &addrs {
        if let Some(reason) = forbidden(addr.ip()).filter(|_| !named_exactly) {
            return Err(EgressError::Forbidden { host: origin.shown.clone(), address: canonical_ip(addr.ip()), reason });
        }
    }
    Ok(addrs)
}

impl Gate {
    /// Check that `method url` may be sent: under an allow-list, to one of the origins
    /// checked when the gate was made, with `GET` (or `POST` for the token exchange).
    pub fn check_request(&self, method: &str, url: &str, token_exchange: bool) -> Result<(), EgressError> {
        let Some(origins) = &self.origins else { return Ok(()) };
        let (_, origin) = parsed(url)?;
        if !origins.contains(&origin) {
            return Err(EgressError::OtherHost(format!("{}:{}", origin.shown, origin.port)));
        }
        let allowed = if token_exchange { "POST" } else { "GET" };
        if method != allowed {
            return Err(EgressError::Method { method: method.to_string(), allowed });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> AllowList {
        AllowList::parse(entries.iter().copied()).unwrap()
    }

    fn answering(addrs: &'static [&'static str]) -> impl Fn(&str, u16) -> std::io::Result<Vec<SocketAddr>> {
        move |_, port| Ok(addrs.iter().map(|a| SocketAddr::new(a.parse().unwrap(), port)).collect())
    }

    fn gate(entries: &[&str], url: &str, lookup: Lookup<'_>) -> Result<Gate, EgressError> {
        Egress::AllowList(list(entries)).gate_with(&[url.to_string()], Duration::from_secs(5), lookup)
    }

    #[test]
    fn hostile_every_non_public_address_is_refused() {
        for (ip, reason) in [
            ("127.0.0.1", "loopback"),
            ("127.9.9.9", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.1.1", "link-local"),
            ("169.254.169.254", "cloud metadata"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("100.127.255.255", "carrier-grade NAT"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "reserved (this network)"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("240.0.0.1", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fc00::1", "private (unique local)"),
            ("fd12:3456::1", "private (unique local)"),
            ("fd00:ec2::254", "cloud metadata"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:169.254.169.254", "cloud metadata"),
            ("64:ff9b::a00:1", "private"),
        ] {
            assert_eq!(forbidden(ip.parse().unwrap()), Some(reason), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert_eq!(forbidden(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn hostile_a_name_resolving_to_a_private_address_is_refused() {
        let private = answering(&["10.0.0.5"]);
        let error = gate(&["api.acme.test"], "https://api.acme.test/v1", &private).unwrap_err();
        assert_eq!(error, EgressError::Forbidden { host: "api.acme.test".into(), address: "10.0.0.5".parse().unwrap(), reason: "private" });
        assert!(error.to_string().contains("reach public addresses only"), "{error}");
        // One bad answer among good ones is enough to refuse.
        let mixed = answering(&["8.8.8.8", "::ffff:127.0.0.1"]);
        let error = gate(&["api.acme.test"], "https://api.acme.test/v1", &mixed).unwrap_err();
        assert!(error.to_string().contains("127.0.0.1, a loopback address"), "{error}");
        // A name the operator allowed is still checked: allowing `localhost` opens nothing.
        let loopback = answering(&["127.0.0.1"]);
        assert!(matches!(gate(&["localhost:8080"], "http://localhost:8080/", &loopback), Err(EgressError::Forbidden { .. })));
    }

    #[test]
    fn hostile_the_resolver_answers_only_the_checked_addresses() {
        // The check resolves once; the client's resolver answers from what was checked
        // (a later, rebound answer is never asked for) and knows no other name.
        let first = answering(&["93.184.216.34"]);
        let checked = gate(&["api.acme.test"], "https://api.acme.test/v1", &first).unwrap();
        assert!(format!("{checked:?}").contains("api.acme.test"));
        let list = list(&["api.acme.test"]);
        let origin = parsed("https://api.acme.test/v1").unwrap().1;
        let addrs = checked_addresses(&list, &origin, &first).unwrap();
        let pins = Pins([("api.acme.test".to_string(), addrs.clone())].into_iter().collect());
        assert_eq!(pins.lookup("API.acme.test."), Some(addrs));
        assert_eq!(pins.lookup("evil.test"), None);
    }

    #[test]
    fn hostile_hosts_off_the_list_and_an_empty_list_are_refused_naming_the_flag() {
        let public = answering(&["93.184.216.34"]);
        let error = gate(&[], "https://api.acme.test/v1", &public).unwrap_err();
        assert_eq!(error, EgressError::Off);
        assert!(error.to_string().contains("--capture-allow"), "{error}");
        let error = gate(&["api.acme.test"], "https://evil.test/v1", &public).unwrap_err();
        assert_eq!(error, EgressError::NotAllowed("evil.test:443".into()));
        assert!(error.to_string().contains("gateway hub serve --capture-allow HOST"), "{error}");
        // A port on the entry is the only port allowed.
        assert!(matches!(gate(&["api.acme.test:8443"], "https://api.acme.test/v1", &public), Err(EgressError::NotAllowed(_))));
        assert!(gate(&["api.acme.test:8443"], "https://api.acme.test:8443/v1", &public).is_ok());
        for url in ["ftp://api.acme.test/", "file:///etc/passwd", "not a url"] {
            assert!(matches!(gate(&["api.acme.test"], url, &public), Err(EgressError::BadUrl(_))), "{url}");
        }
    }

    #[test]
    fn an_address_and_port_the_operator_names_is_allowed_and_nothing_else() {
        let never = |_: &str, _: u16| -> std::io::Result<Vec<SocketAddr>> { panic!("an address is not resolved") };
        assert!(gate(&["127.0.0.1:8080"], "http://127.0.0.1:8080/api", &never).is_ok());
        assert!(gate(&["[::1]:8080"], "http://[::1]:8080/api", &never).is_ok());
        // Without the port, the address is checked like any other.
        assert!(matches!(gate(&["127.0.0.1"], "http://127.0.0.1:8080/api", &never), Err(EgressError::Forbidden { .. })));
        // The mapped spelling of a loopback address is the same address.
        assert!(matches!(gate(&["example.test"], "http://[::ffff:127.0.0.1]:8080/", &never), Err(EgressError::NotAllowed(_))));
        assert!(matches!(gate(&["::ffff:7f00:1"], "http://[::ffff:127.0.0.1]:80/", &never), Err(EgressError::Forbidden { .. })));
    }

    #[test]
    fn hostile_the_gate_admits_only_the_checked_origins_and_methods() {
        let public = answering(&["93.184.216.34"]);
        let checked = gate(&["api.acme.test"], "https://api.acme.test/v1", &public).unwrap();
        assert!(checked.check_request("GET", "https://api.acme.test/v1/things?page=2", false).is_ok());
        assert!(checked.check_request("GET", "https://API.acme.test./v1/things", false).is_ok());
        // Userinfo in a built URL does not change where it goes.
        let error = checked.check_request("GET", "https://api.acme.test@127.0.0.1/v1", false).unwrap_err();
        assert_eq!(error, EgressError::OtherHost("127.0.0.1:443".into()));
        assert!(matches!(checked.check_request("GET", "https://api.acme.test:8443/v1", false), Err(EgressError::OtherHost(_))));
        assert!(matches!(checked.check_request("GET", "http://api.acme.test/v1", false), Err(EgressError::OtherHost(_))));
        let error = checked.check_request("DELETE", "https://api.acme.test/v1/things/1", false).unwrap_err();
        assert_eq!(error.to_string(), "a remote capture sends GET requests only, not DELETE");
        assert!(checked.check_request("POST", "https://api.acme.test/oauth/token", true).is_ok());
        assert!(checked.check_request("POST", "https://api.acme.test/v1/things", false).is_err());
        // Anywhere: everything is admitted.
        let any = Egress::Any.gate(&[], Duration::from_secs(5)).unwrap();
        assert!(any.check_request("DELETE", "http://127.0.0.1/", false).is_ok());
    }

    #[test]
    fn allow_list_entries() {
        let parsed = list(&["API.Acme.test.", "127.0.0.1:8080", "[::1]:9000", "2001:db8::1", " "]);
        assert_eq!(parsed.entries.len(), 4);
        assert_eq!(parsed.entries[0], Allowed { host: Host::Name("api.acme.test".into()), port: None });
        assert_eq!(parsed.entries[2], Allowed { host: Host::Ip("::1".parse().unwrap()), port: Some(9000) });
        assert_eq!(parsed.entries[3], Allowed { host: Host::Ip("2001:db8::1".parse().unwrap()), port: None });
        for bad in
            ["https://api.acme.test", "api.acme.test/v1", "user@api.acme.test", "api.acme.test:0", "api.acme.test:x", "[::1", "[::1]x"]
        {
            assert_eq!(AllowList::parse([bad]), Err(EgressError::BadEntry(bad.into())), "{bad}");
        }
        assert!(AllowList::parse(Vec::<&str>::new()).unwrap().is_empty());
    }
}

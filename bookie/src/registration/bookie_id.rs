//! Bookie id, network address and listen address, derived exactly as the Java bookie 4.17
//! derives them (docs/registration.md §3), so that a bookie swapped in place keeps its id
//! (and so its cookies) and refuses to start where Java refuses.
//!
//! Owns the rules; what the host says (its name, the name service, the interfaces) comes
//! through [`HostNetwork`], so the rules are tested over a fake host. The real host is
//! `host_network.rs`.
//!
//! Java's rules (`BookieImpl.getBookieAddress`, `getBookieId`, `net.DNS`,
//! `BookieNettyServer`, `LegacyCookieValidation`, release 4.17.3):
//! 1. `advertisedAddress`, trimmed, if not empty: the host is that string as written, **with
//!    no loopback check** (Java returns before the check). The id is `<host>:<bookiePort>`.
//! 2. Else the interface `listeningInterface` (unset: `default`) gives a *host name*
//!    (`DNS.getDefaultHost`):
//!    * `default`: the local host's canonical name: `gethostname()` resolved (IPv4 addresses
//!      first, Java's default `preferIPv6Addresses=false`; the name `localhost` is loopback
//!      without a lookup), then reverse-resolved and confirmed forward
//!      (`InetAddress.getCanonicalHostName`: the name only if it resolves back to the
//!      address, else the address literal). If the host name does not resolve: `localhost`.
//!    * an interface name (`eth0`, or an alias `eth0:1`): a DNS PTR record (a query to the
//!      name servers, not `/etc/hosts`) of each of its IPv4 addresses, the first found; when
//!      none has one, Java warns and falls back to the `default` name above, so on a host
//!      whose name resolves to 127.0.0.1, `listeningInterface=eth0` without a PTR record still
//!      ends on loopback. No such interface (an IP literal is not an interface name): refused.
//! 3. That host name is resolved (first address, IPv4 first); not resolvable: refused. The id
//!    host is the address literal, or with `useHostNameAsBookieID=true` its canonical name
//!    (the literal when reverse lookup does not confirm a name; no error), cut at the first
//!    `.` with `useShortHostName=true`.
//! 4. The id host is resolved again; a loopback address (127/8, ::1) is refused unless
//!    `allowLoopback=true`. This happens even when a custom `bookieId` is set (Java derives
//!    the address first). A `--standalone` bookie (ours only; no cluster, no Java
//!    counterpart) allows loopback.
//! 5. The bookie id is `bookieId` verbatim if configured, else `<host>:<port>`; it must match
//!    `[a-zA-Z0-9:-_.\-]+` (`:-_` is a *range* 0x3A..=0x5F, a quirk kept) and not be
//!    `readonly`.
//! 6. Listen: `listeningInterface` unset: the wildcard on `bookiePort` (Java's
//!    `new InetSocketAddress(port)`, which Java's NIO binds dual-stack, `[::]` with
//!    `IPV6_V6ONLY` off); set: the resolved address of the host of rule 1-3 (with
//!    `advertisedAddress` set, that address, as in Java).
//! 7. Ids a previous configuration may have registered (cookie check): with a custom id none;
//!    else the rules rerun with loopback allowed and no `advertisedAddress`, once with
//!    `useHostNameAsBookieID=false` and once `true`, plus the configured id. A failure there
//!    fails start-up, as in Java.
//!
//! Where we differ: the PTR query of rule 2 waits at most [`PTR_TIMEOUT`] in all (Java's JNDI
//! retries for up to ~15 s per name server before falling back).

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use crate::config::BookieConfig;

/// Longest the DNS PTR lookup of a named `listeningInterface` waits, all servers together.
pub const PTR_TIMEOUT: Duration = Duration::from_secs(3);

/// What the rules ask of the host. Orders are the host's own (getaddrinfo, getifaddrs); the
/// rules apply Java's preferences on top.
pub trait HostNetwork {
    /// `gethostname()`.
    fn host_name(&self) -> Option<String>;
    /// Forward lookup through the name service (`/etc/hosts`, DNS), in getaddrinfo order.
    fn lookup(&self, name: &str) -> Vec<IpAddr>;
    /// Reverse lookup through the name service (`getnameinfo`, `NI_NAMEREQD`).
    fn reverse_lookup(&self, ip: IpAddr) -> Option<String>;
    /// The DNS PTR record of an address, asked of the name servers (Java's JNDI lookup; no
    /// `/etc/hosts`), as the record reads (trailing dot included).
    fn dns_ptr(&self, ip: Ipv4Addr) -> Option<String>;
    /// The addresses of an interface (or alias `eth0:1`) in Java's order
    /// (`NetworkInterface.getInetAddresses`); None if there is no such interface.
    fn interface_addrs(&self, name: &str) -> Option<Vec<IpAddr>>;
}

/// This bookie's identity on the network and in ZooKeeper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookieAddress {
    /// The bookie id (znode name under `available/`, `cookies/`; used in ensembles).
    pub bookie_id: String,
    /// The network host clients connect to (BookieServiceInfo host).
    pub host: String,
    /// The bookie port.
    pub port: u16,
    /// The address to listen on: None for the dual-stack wildcard (rule 6).
    pub listen_ip: Option<IpAddr>,
    /// Other ids this bookie may have been registered under before (rule 7), whose
    /// ZooKeeper cookies must also match (docs/registration.md §5.3 step 3). Does not contain
    /// `bookie_id`.
    pub alternate_ids: Vec<String>,
}

/// Why no bookie id could be derived; each names the keys that change the outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BookieIdError {
    #[error("bookie id {0:?} is invalid: only [a-zA-Z0-9:-_.-] characters (Java's class), and not \"readonly\"")]
    InvalidId(String),
    #[error(
        "trying to listen on loopback address {addr} ({how}); refused as the Java bookie \
         refuses it. Set advertisedAddress=<this host's reachable address or name>, or fix the \
         host name's resolution (or give its interface's address a DNS PTR record and set \
         listeningInterface=<interface>); allowLoopback=true only for a single-host test setup"
    )]
    Loopback { addr: String, how: String },
    #[error(
        "listeningInterface={0}: no such network interface (an interface name such as eth0 is \
         expected, as in Java; to name an address use advertisedAddress)"
    )]
    NoSuchInterface(String),
    #[error(
        "unable to resolve host name {host:?} (from listeningInterface={iface}); fix the host's \
         name resolution, or set advertisedAddress or listeningInterface"
    )]
    Unresolvable { host: String, iface: String },
}

/// Java `BookieId` validation (with its character-range quirk).
pub fn validate_bookie_id(id: &str) -> Result<(), BookieIdError> {
    let ok_char = |c: char| {
        c.is_ascii_alphanumeric() || ('\x3a'..='\x5f').contains(&c) || c == '.' || c == '-'
    };
    if id.is_empty() || !id.chars().all(ok_char) || id.eq_ignore_ascii_case("readonly") {
        return Err(BookieIdError::InvalidId(id.to_string()));
    }
    Ok(())
}

/// Derives this bookie's id and addresses on the real host. `port` is the bookie port (the
/// bound port when `bookiePort=0` with `allowEphemeralPorts`).
pub fn resolve_bookie_address(
    cfg: &BookieConfig,
    port: u16,
) -> Result<BookieAddress, BookieIdError> {
    derive(cfg, port, &super::host_network::RealHost)
}

/// The id-related keys, as rules 1-4 read them.
#[derive(Clone)]
struct IdKeys<'a> {
    advertised: Option<&'a str>,
    iface: Option<&'a str>,
    use_host_name: bool,
    short_host_name: bool,
    allow_loopback: bool,
}

/// Rules 1-7 over `net`.
pub fn derive(
    cfg: &BookieConfig,
    port: u16,
    net: &dyn HostNetwork,
) -> Result<BookieAddress, BookieIdError> {
    let keys = IdKeys {
        advertised: cfg
            .advertised_address
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty()),
        iface: cfg.listening_interface.as_deref(),
        use_host_name: cfg.use_host_name_as_bookie_id,
        short_host_name: cfg.use_short_host_name,
        allow_loopback: cfg.allow_loopback || cfg.standalone,
    };
    let java = Java { net };
    let host = java.bookie_host(&keys)?;
    let listen_ip = match keys.iface {
        None => None,
        Some(_) => Some(
            java.get_by_name(&host)
                .ok_or_else(|| BookieIdError::Unresolvable {
                    host: host.clone(),
                    iface: keys.iface.unwrap_or("default").to_string(),
                })?,
        ),
    };
    let custom = cfg
        .bookie_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let (bookie_id, alternate_ids) = match custom {
        Some(custom) => (custom.to_string(), Vec::new()),
        None => {
            let id = format!("{host}:{port}");
            let mut alternates = Vec::new();
            for use_host_name in [false, true] {
                let k = IdKeys {
                    advertised: None,
                    use_host_name,
                    allow_loopback: true,
                    ..keys.clone()
                };
                let alt = format!("{}:{port}", java.bookie_host(&k)?);
                if alt != id && !alternates.contains(&alt) {
                    alternates.push(alt);
                }
            }
            (id, alternates)
        }
    };
    validate_bookie_id(&bookie_id)?;
    Ok(BookieAddress {
        bookie_id,
        host,
        port,
        listen_ip,
        alternate_ids,
    })
}

/// Java's `InetAddress` and `net.DNS` behaviour over a [`HostNetwork`].
struct Java<'a> {
    net: &'a dyn HostNetwork,
}

impl Java<'_> {
    /// Rules 1-4: the host part of the id (`BookieImpl.getBookieAddress`).
    fn bookie_host(&self, k: &IdKeys) -> Result<String, BookieIdError> {
        if let Some(a) = k.advertised {
            return Ok(a.to_string());
        }
        let iface = k.iface.unwrap_or("default");
        let name = self.default_host(iface)?;
        let ip = self
            .get_by_name(&name)
            .ok_or_else(|| BookieIdError::Unresolvable {
                host: name.clone(),
                iface: iface.to_string(),
            })?;
        let host = if k.use_host_name {
            let canonical = self.canonical_host_name(ip);
            match (k.short_host_name, canonical.split_once('.')) {
                (true, Some((short, _))) => short.to_string(),
                _ => canonical,
            }
        } else {
            host_address(ip)
        };
        // Java resolves the id host again (`BookieSocketAddress.getSocketAddress`), before
        // it reads allowLoopback: an unresolvable one (a short name, say) ends start-up there.
        let addr = self
            .get_by_name(&host)
            .ok_or_else(|| BookieIdError::Unresolvable {
                host: host.clone(),
                iface: iface.to_string(),
            })?;
        if addr.is_loopback() && !k.allow_loopback {
            return Err(BookieIdError::Loopback {
                addr: host_address(addr),
                how: format!(
                    "listeningInterface={iface} gave host name {name:?}; this host is named {:?}",
                    self.net.host_name().unwrap_or_default()
                ),
            });
        }
        Ok(host)
    }

    /// `InetAddress.getByName`: a literal as it is, else the first address, IPv4 first.
    fn get_by_name(&self, name: &str) -> Option<IpAddr> {
        if let Ok(ip) = name.parse::<IpAddr>() {
            return Some(ip);
        }
        let all = self.net.lookup(name);
        all.iter()
            .find(|ip| ip.is_ipv4())
            .or_else(|| all.first())
            .copied()
    }

    /// `InetAddress.getLocalHost`.
    fn local_host(&self) -> Option<IpAddr> {
        let name = self.net.host_name()?;
        if name == "localhost" {
            return Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        self.get_by_name(&name)
    }

    /// `InetAddress.getCanonicalHostName`: a reverse name confirmed forward, else the literal.
    fn canonical_host_name(&self, ip: IpAddr) -> String {
        match self.net.reverse_lookup(ip) {
            Some(name) if self.net.lookup(&name).contains(&ip) => name,
            _ => host_address(ip),
        }
    }

    /// `DNS.getDefaultHost(iface)`.
    fn default_host(&self, iface: &str) -> Result<String, BookieIdError> {
        let cached = || {
            self.local_host()
                .map(|ip| self.canonical_host_name(ip))
                .unwrap_or_else(|| "localhost".to_string())
        };
        if iface == "default" {
            return Ok(cached());
        }
        let addrs = self
            .net
            .interface_addrs(iface)
            .ok_or_else(|| BookieIdError::NoSuchInterface(iface.to_string()))?;
        let ptr = addrs.iter().find_map(|ip| match ip {
            IpAddr::V4(v4) => self.net.dns_ptr(*v4),
            IpAddr::V6(_) => None,
        });
        Ok(ptr.unwrap_or_else(|| {
            tracing::warn!(
                interface = iface,
                "Unable to determine hostname for interface (no DNS PTR record for its \
                 addresses); using the local host's name, as Java does"
            );
            cached()
        }))
    }
}

/// `InetAddress.getHostAddress`: dotted IPv4; IPv6 as eight uncompressed hex groups.
fn host_address(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => v6
            .segments()
            .iter()
            .map(|s| format!("{s:x}"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

#[cfg(test)]
#[path = "bookie_id_tests.rs"]
mod tests;

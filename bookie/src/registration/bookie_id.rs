//! Bookie id and network address (docs/registration.md §3).
//!
//! Rules, in order:
//! 1. the network host is `advertisedAddress` (trimmed) if set; else the IPv4 address of
//!    `listeningInterface` (an interface name such as `eth0`), or of the default interface
//!    (the address the host name resolves to, else the first non-loopback interface address);
//!    with `useHostNameAsBookieID=true` the IP is replaced by its canonical host name
//!    (start-up fails if it does not resolve to a name), cut at the first `.` with
//!    `useShortHostName=true`;
//! 2. a loopback host is rejected unless `allowLoopback=true` (also for advertisedAddress, as
//!    in Java, where the check applies to the resolved address);
//! 3. the bookie id is `bookieId` verbatim if configured, else `<host>:<port>`;
//! 4. the id must match `[a-zA-Z0-9:-_.\-]+` (Java's class, where `:-_` is a *range*
//!    0x3A..=0x5F, so `;<=>?@[\]^` pass too; we keep that quirk for compatibility) and must not
//!    be `readonly` (any case).
//!
//! The BookieServiceInfo `bookie-rpc` endpoint uses the network host even with a custom id.

use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};

use crate::config::BookieConfig;

/// This bookie's identity on the network and in ZooKeeper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookieAddress {
    /// The bookie id (znode name under `available/`, `cookies/`; used in ensembles).
    pub bookie_id: String,
    /// The network host clients connect to (BookieServiceInfo host).
    pub host: String,
    /// The bookie port.
    pub port: u16,
    /// Other ids this bookie may have been registered under before (IP:port, hostname:port,
    /// advertisedAddress:port), whose ZooKeeper cookies must also match (docs/registration.md §5.3
    /// step 3). Empty when a custom `bookieId` is configured. Does not contain `bookie_id`.
    pub alternate_ids: Vec<String>,
}

/// Why no bookie id could be derived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BookieIdError {
    #[error("bookie id {0:?} is invalid: only [a-zA-Z0-9:-_.-] characters (Java's class), and not \"readonly\"")]
    InvalidId(String),
    #[error("bookie address {0} is a loopback address; set allowLoopback=true (tests) or advertisedAddress")]
    Loopback(String),
    #[error("listeningInterface {0:?}: no IPv4 address on that interface")]
    NoSuchInterface(String),
    #[error("no network address found for this host")]
    NoAddress,
    #[error("useHostNameAsBookieID=true but {0} does not resolve to a host name")]
    NoHostName(String),
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

fn interface_addrs() -> Vec<(String, Ipv4Addr)> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return out;
    }
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list returned by getifaddrs, valid until freeifaddrs.
        let ifa = unsafe { &*cur };
        if !ifa.ifa_addr.is_null() && !ifa.ifa_name.is_null() {
            // SAFETY: ifa_addr is non-null and points to a sockaddr of family sa_family.
            let family = unsafe { (*ifa.ifa_addr).sa_family } as i32;
            if family == libc::AF_INET {
                // SAFETY: family AF_INET means the sockaddr is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                // SAFETY: ifa_name is a NUL-terminated C string owned by the list.
                let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
                    .to_string_lossy()
                    .into_owned();
                out.push((name, ip));
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: head came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

/// The IPv4 address `listeningInterface` designates: an interface name (`eth0`, Java's
/// meaning) or, as a convenience, an IPv4 literal. None if there is no such interface. The
/// server binds this address (Java binds the interface's address too).
pub fn listening_ipv4(listening_interface: &str) -> Option<Ipv4Addr> {
    if let Ok(ip) = listening_interface.parse::<Ipv4Addr>() {
        return Some(ip);
    }
    interface_addrs()
        .into_iter()
        .find(|(name, _)| name == listening_interface)
        .map(|(_, ip)| ip)
}

fn local_host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length; gethostname NUL-terminates on success.
    if unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).into_owned();
    (!name.is_empty()).then_some(name)
}

/// Reverse DNS (canonical name) of an IPv4 address; None if it only resolves to itself.
fn reverse_lookup(ip: Ipv4Addr) -> Option<String> {
    // SAFETY: a zeroed sockaddr_in is a valid value; we fill family and address.
    let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sin.sin_family = libc::AF_INET as libc::sa_family_t;
    sin.sin_addr.s_addr = u32::from(ip).to_be();
    let mut host = [0 as libc::c_char; 1025];
    // SAFETY: pointers and lengths describe valid buffers for the duration of the call.
    let rc = unsafe {
        libc::getnameinfo(
            &sin as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: getnameinfo NUL-terminated the buffer on success.
    let name = unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    (name != ip.to_string() && !name.is_empty()).then_some(name)
}

/// The default interface's IPv4 address: what the host name resolves to (Java's
/// `InetAddress.getLocalHost()`), else the first non-loopback interface address, else loopback.
fn default_ip() -> Option<Ipv4Addr> {
    let from_name = local_host_name().and_then(|h| {
        (h.as_str(), 0)
            .to_socket_addrs()
            .ok()?
            .find_map(|a| match a.ip() {
                IpAddr::V4(v4) if !v4.is_loopback() => Some(v4),
                _ => None,
            })
    });
    let addrs = interface_addrs();
    from_name
        .or_else(|| addrs.iter().map(|(_, ip)| *ip).find(|ip| !ip.is_loopback()))
        .or_else(|| addrs.iter().map(|(_, ip)| *ip).next())
}

fn is_loopback_host(host: &str) -> bool {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return ip.is_loopback();
    }
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match (host, 0).to_socket_addrs() {
        Ok(mut addrs) => addrs.next().is_some_and(|a| a.ip().is_loopback()),
        Err(_) => false,
    }
}

/// Derives this bookie's id and network host. `port` is the bookie port (the bound port when
/// `bookiePort=0` with `allowEphemeralPorts`).
pub fn resolve_bookie_address(
    cfg: &BookieConfig,
    port: u16,
) -> Result<BookieAddress, BookieIdError> {
    let advertised = cfg
        .advertised_address
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let mut alternates: Vec<String> = Vec::new();
    let host = if let Some(a) = advertised {
        // Other ids this bookie may have used (docs/registration.md §5.3 step 3).
        if let Some(ip) = default_ip() {
            alternates.push(format!("{ip}:{port}"));
            if let Some(name) = reverse_lookup(ip) {
                alternates.push(format!("{name}:{port}"));
            }
        }
        a.to_string()
    } else {
        let ip = match cfg
            .listening_interface
            .as_deref()
            .filter(|s| !s.is_empty() && *s != "default")
        {
            Some(iface) => listening_ipv4(iface)
                .ok_or_else(|| BookieIdError::NoSuchInterface(iface.to_string()))?,
            None => default_ip().ok_or(BookieIdError::NoAddress)?,
        };
        let ip_id = format!("{ip}:{port}");
        let name = reverse_lookup(ip);
        if cfg.use_host_name_as_bookie_id {
            let mut name = name.ok_or_else(|| BookieIdError::NoHostName(ip.to_string()))?;
            if cfg.use_short_host_name {
                if let Some(i) = name.find('.') {
                    name.truncate(i);
                }
            }
            alternates.push(ip_id);
            name
        } else {
            if let Some(n) = name {
                alternates.push(format!("{n}:{port}"));
            }
            ip.to_string()
        }
    };
    if !cfg.allow_loopback && is_loopback_host(&host) {
        return Err(BookieIdError::Loopback(host));
    }
    let (bookie_id, alternate_ids) = match cfg
        .bookie_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(custom) => (custom.to_string(), Vec::new()),
        None => {
            let id = format!("{host}:{port}");
            alternates.retain(|a| a != &id);
            alternates.dedup();
            (id, alternates)
        }
    };
    validate_bookie_id(&bookie_id)?;
    Ok(BookieAddress {
        bookie_id,
        host,
        port,
        alternate_ids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BookieConfig {
        BookieConfig::defaults_standalone()
    }

    #[test]
    fn advertised_address_wins_and_custom_id_is_verbatim() {
        let mut c = cfg();
        c.advertised_address = Some(" bk1.example.com ".into());
        let a = resolve_bookie_address(&c, 3181).unwrap();
        assert_eq!(a.bookie_id, "bk1.example.com:3181");
        assert_eq!(a.host, "bk1.example.com");
        c.bookie_id = Some("my-bookie-1".into());
        let a = resolve_bookie_address(&c, 3181).unwrap();
        assert_eq!(a.bookie_id, "my-bookie-1");
        assert_eq!(
            a.host, "bk1.example.com",
            "network host stays the address even with a custom id"
        );
        assert!(a.alternate_ids.is_empty());
    }

    #[test]
    fn loopback_needs_allow_loopback() {
        let mut c = cfg();
        c.advertised_address = Some("127.0.0.1".into());
        assert!(matches!(
            resolve_bookie_address(&c, 3181),
            Err(BookieIdError::Loopback(_))
        ));
        c.allow_loopback = true;
        assert_eq!(
            resolve_bookie_address(&c, 3181).unwrap().bookie_id,
            "127.0.0.1:3181"
        );
    }

    #[test]
    fn listening_interface_lo_and_unknown_interface() {
        let mut c = cfg();
        c.listening_interface = Some("lo".into());
        c.allow_loopback = true;
        assert_eq!(
            resolve_bookie_address(&c, 4000).unwrap().bookie_id,
            "127.0.0.1:4000"
        );
        assert_eq!(listening_ipv4("lo"), Some(Ipv4Addr::LOCALHOST));
        assert_eq!(listening_ipv4("10.1.2.3"), Some(Ipv4Addr::new(10, 1, 2, 3)));
        c.listening_interface = Some("no-such-if0".into());
        assert!(matches!(
            resolve_bookie_address(&c, 4000),
            Err(BookieIdError::NoSuchInterface(_))
        ));
    }

    #[test]
    fn default_interface_gives_ip_port() {
        let mut c = cfg();
        c.allow_loopback = true;
        let a = resolve_bookie_address(&c, 3181).unwrap();
        let (ip, port) = a.bookie_id.rsplit_once(':').unwrap();
        assert!(ip.parse::<Ipv4Addr>().is_ok(), "{}", a.bookie_id);
        assert_eq!(port, "3181");
    }

    #[test]
    fn id_validation_follows_java_including_range_quirk() {
        for ok in ["10.0.0.1:3181", "bookie-1", "a_b", "x@y", "host;1"] {
            assert!(validate_bookie_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "readonly", "ReadOnly", "a b", "a/b", "a,b", "é"] {
            assert!(validate_bookie_id(bad).is_err(), "{bad}");
        }
    }
}

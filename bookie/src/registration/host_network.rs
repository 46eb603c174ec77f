//! The real host behind [`HostNetwork`]: `gethostname`, the name service (`getaddrinfo`,
//! `getnameinfo`), `getifaddrs`, and a DNS PTR query over UDP to the name servers of
//! `/etc/resolv.conf` (what Java's JNDI `dns:///` lookup asks; `/etc/hosts` is not read).
//!
//! Owns no rules (those are in `bookie_id.rs`); guarantees every call returns within a bound
//! of its own (the PTR query: [`PTR_TIMEOUT`] over all servers) and never panics on what the
//! host or a name server answers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::Path;
use std::time::Instant;

use super::bookie_id::{HostNetwork, PTR_TIMEOUT};

/// This machine's network configuration, read on every call.
pub struct RealHost;

impl HostNetwork for RealHost {
    fn host_name(&self) -> Option<String> {
        let mut buf = [0u8; 256];
        // SAFETY: buf is writable for its length; gethostname NUL-terminates on success.
        if unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } != 0 {
            return None;
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        let name = String::from_utf8_lossy(&buf[..end]).into_owned();
        (!name.is_empty()).then_some(name)
    }

    fn lookup(&self, name: &str) -> Vec<IpAddr> {
        let mut out: Vec<IpAddr> = Vec::new();
        if let Ok(addrs) = (name, 0).to_socket_addrs() {
            for a in addrs {
                if !out.contains(&a.ip()) {
                    out.push(a.ip());
                }
            }
        }
        out
    }

    fn reverse_lookup(&self, ip: IpAddr) -> Option<String> {
        let mut host = [0 as libc::c_char; 1025];
        let rc = match ip {
            IpAddr::V4(v4) => {
                // SAFETY: a zeroed sockaddr_in is valid; we fill family and address.
                let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
                sin.sin_family = libc::AF_INET as libc::sa_family_t;
                sin.sin_addr.s_addr = u32::from(v4).to_be();
                // SAFETY: pointers and lengths describe valid buffers for the call.
                unsafe {
                    libc::getnameinfo(
                        &sin as *const libc::sockaddr_in as *const libc::sockaddr,
                        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                        host.as_mut_ptr(),
                        host.len() as libc::socklen_t,
                        std::ptr::null_mut(),
                        0,
                        libc::NI_NAMEREQD,
                    )
                }
            }
            IpAddr::V6(v6) => {
                // SAFETY: a zeroed sockaddr_in6 is valid; we fill family and address.
                let mut sin6: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
                sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sin6.sin6_addr.s6_addr = v6.octets();
                // SAFETY: pointers and lengths describe valid buffers for the call.
                unsafe {
                    libc::getnameinfo(
                        &sin6 as *const libc::sockaddr_in6 as *const libc::sockaddr,
                        std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                        host.as_mut_ptr(),
                        host.len() as libc::socklen_t,
                        std::ptr::null_mut(),
                        0,
                        libc::NI_NAMEREQD,
                    )
                }
            }
        };
        if rc != 0 {
            return None;
        }
        // SAFETY: getnameinfo NUL-terminated the buffer on success.
        let name = unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        (!name.is_empty()).then_some(name)
    }

    fn dns_ptr(&self, ip: Ipv4Addr) -> Option<String> {
        let conf =
            bk_disk::read_small_text(Path::new("/etc/resolv.conf"), 64 << 10).unwrap_or_default();
        let mut servers = name_servers(&conf);
        if servers.is_empty() {
            servers.push(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        let deadline = Instant::now() + PTR_TIMEOUT;
        let query = ptr_query(ip, std::process::id() as u16);
        for server in servers {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            if let Some(name) = ask(server, &query, left) {
                return Some(name);
            }
        }
        None
    }

    fn interface_addrs(&self, name: &str) -> Option<Vec<IpAddr>> {
        let all = interfaces();
        if !all.iter().any(|(n, _)| n == name) {
            return None;
        }
        // Java: an interface's addresses include those of its aliases (`eth0:1`); the JDK
        // builds each list by prepending, IPv4 first then IPv6, so the order is reversed.
        let belongs = |n: &str| {
            n == name
                || (!name.contains(':')
                    && n.strip_prefix(name)
                        .is_some_and(|rest| rest.starts_with(':')))
        };
        let mut v4: Vec<IpAddr> = Vec::new();
        let mut v6: Vec<IpAddr> = Vec::new();
        for (n, ip) in all {
            match ip {
                Some(ip @ IpAddr::V4(_)) if belongs(&n) => v4.push(ip),
                Some(ip @ IpAddr::V6(_)) if belongs(&n) => v6.push(ip),
                _ => {}
            }
        }
        v4.extend(v6);
        v4.reverse();
        Some(v4)
    }
}

/// Every getifaddrs entry: the interface name and its address when IPv4 or IPv6 (None for
/// the link-layer entry every interface has, so an interface without addresses exists too).
fn interfaces() -> Vec<(String, Option<IpAddr>)> {
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
        if !ifa.ifa_name.is_null() {
            // SAFETY: ifa_name is a NUL-terminated C string owned by the list.
            let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
                .to_string_lossy()
                .into_owned();
            let ip = if ifa.ifa_addr.is_null() {
                None
            } else {
                // SAFETY: ifa_addr is non-null and points to a sockaddr of family sa_family.
                match unsafe { (*ifa.ifa_addr).sa_family } as i32 {
                    libc::AF_INET => {
                        // SAFETY: family AF_INET means the sockaddr is a sockaddr_in.
                        let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                        Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                            sin.sin_addr.s_addr,
                        ))))
                    }
                    libc::AF_INET6 => {
                        // SAFETY: family AF_INET6 means the sockaddr is a sockaddr_in6.
                        let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                        Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
                    }
                    _ => None,
                }
            };
            out.push((name, ip));
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: head came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

/// The `nameserver` lines of a resolv.conf, in order.
fn name_servers(conf: &str) -> Vec<IpAddr> {
    conf.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "nameserver").then(|| w.next()?.parse().ok())?
        })
        .collect()
}

/// A recursive DNS query for the PTR record of `ip` (`d.c.b.a.in-addr.arpa`).
fn ptr_query(ip: Ipv4Addr, id: u16) -> Vec<u8> {
    let mut q = Vec::with_capacity(64);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]); // RD; 1 question
    let o = ip.octets();
    for label in [
        o[3].to_string(),
        o[2].to_string(),
        o[1].to_string(),
        o[0].to_string(),
        "in-addr".into(),
        "arpa".into(),
    ] {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 12, 0, 1]); // root; QTYPE PTR; QCLASS IN
    q
}

fn ask(server: IpAddr, query: &[u8], wait: std::time::Duration) -> Option<String> {
    let local: SocketAddr = match server {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let sock = UdpSocket::bind(local).ok()?;
    sock.set_read_timeout(Some(wait)).ok()?;
    sock.connect((server, 53)).ok()?;
    sock.send(query).ok()?;
    let mut buf = [0u8; 1500];
    let n = sock.recv(&mut buf).ok()?;
    parse_ptr_answer(&buf[..n], u16::from_be_bytes([query[0], query[1]]))
}

/// The first PTR record of a DNS response to query `id`, with its trailing dot (as JNDI
/// reads it); None for anything else, malformed included.
fn parse_ptr_answer(msg: &[u8], id: u16) -> Option<String> {
    if msg.len() < 12 || u16::from_be_bytes([msg[0], msg[1]]) != id {
        return None;
    }
    let flags = u16::from_be_bytes([msg[2], msg[3]]);
    if flags & 0x8000 == 0 || flags & 0x000f != 0 {
        return None; // not a response, or an error rcode
    }
    let qd = u16::from_be_bytes([msg[4], msg[5]]);
    let an = u16::from_be_bytes([msg[6], msg[7]]);
    let mut pos = 12;
    for _ in 0..qd {
        pos = skip_name(msg, pos)? + 4;
    }
    for _ in 0..an {
        pos = skip_name(msg, pos)?;
        let rr = msg.get(pos..pos + 10)?;
        let (rtype, rdlen) = (
            u16::from_be_bytes([rr[0], rr[1]]),
            u16::from_be_bytes([rr[8], rr[9]]) as usize,
        );
        let rdata = pos + 10;
        if rtype == 12 {
            return read_name(msg, rdata);
        }
        pos = rdata + rdlen;
    }
    None
}

fn skip_name(msg: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let len = *msg.get(pos)? as usize;
        if len == 0 {
            return Some(pos + 1);
        }
        if len & 0xc0 == 0xc0 {
            return Some(pos + 2);
        }
        pos += 1 + len;
    }
}

fn read_name(msg: &[u8], mut pos: usize) -> Option<String> {
    let mut name = String::new();
    for _ in 0..128 {
        let len = *msg.get(pos)? as usize;
        if len == 0 {
            return (!name.is_empty()).then_some(name);
        }
        if len & 0xc0 == 0xc0 {
            pos = ((len & 0x3f) << 8) | *msg.get(pos + 1)? as usize;
            continue;
        }
        let label = msg.get(pos + 1..pos + 1 + len)?;
        name.push_str(&String::from_utf8_lossy(label));
        name.push('.');
        pos += 1 + len;
    }
    None // a compression loop
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolv_conf_servers_in_order() {
        let conf = "# x\nsearch a.b\nnameserver 10.0.0.53\nnameserver ::1\nnameserver bogus\n";
        assert_eq!(
            name_servers(conf),
            vec![
                "10.0.0.53".parse::<IpAddr>().unwrap(),
                "::1".parse().unwrap()
            ]
        );
    }

    #[test]
    fn ptr_answer_with_compression_is_read_with_trailing_dot() {
        let q = ptr_query(Ipv4Addr::new(192, 0, 2, 7), 0x1234);
        let mut r = q.clone();
        r[2] = 0x81;
        r[3] = 0x80; // response, RD RA, rcode 0
        r[7] = 1; // one answer
                  // answer: name = pointer to the question (offset 12), PTR IN, ttl, rdata
        r.extend_from_slice(&[0xc0, 12, 0, 12, 0, 1, 0, 0, 0, 60]);
        // "bk1" "example", then a pointer to the question's "in-addr" label (offset 22:
        // 12 + "7" 2 + "2" 2 + "0" 2 + "192" 4).
        let rdata: Vec<u8> = [&[3u8][..], b"bk1", &[7], b"example", &[0xc0, 22]].concat();
        r.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        r.extend_from_slice(&rdata);
        assert_eq!(
            parse_ptr_answer(&r, 0x1234).as_deref(),
            Some("bk1.example.in-addr.arpa.")
        );
        assert_eq!(parse_ptr_answer(&r, 0x9999), None, "another query's answer");
        r[3] = 0x83; // NXDOMAIN
        assert_eq!(parse_ptr_answer(&r, 0x1234), None);
        for cut in 0..r.len() {
            let _ = parse_ptr_answer(&r[..cut], 0x1234); // never panics
        }
    }

    #[test]
    fn the_loopback_interface_exists_with_its_addresses() {
        let lo = RealHost.interface_addrs("lo").expect("lo exists");
        assert!(lo.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{lo:?}");
        assert_eq!(RealHost.interface_addrs("no-such-if0"), None);
        assert_eq!(RealHost.interface_addrs("127.0.0.1"), None);
    }
}

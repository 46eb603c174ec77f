//! The bookie-id rules of `bookie_id.rs` over fake hosts: each case is what the Java 4.17
//! bookie derives (or refuses) on a host configured that way.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use super::*;

/// A host: its name, a name service (forward and reverse), DNS PTR records, interfaces.
#[derive(Default)]
struct FakeHost {
    name: Option<String>,
    forward: HashMap<String, Vec<IpAddr>>,
    reverse: HashMap<IpAddr, String>,
    ptr: HashMap<Ipv4Addr, String>,
    ifaces: Vec<(String, Vec<IpAddr>)>,
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

impl FakeHost {
    /// A host `name` with `lo` and `eth0` (192.0.2.2 and an IPv6 address, Java order: IPv6
    /// first); `localhost` in /etc/hosts.
    fn new(name: &str) -> FakeHost {
        let mut h = FakeHost {
            name: Some(name.into()),
            ..FakeHost::default()
        };
        h.forward
            .insert("localhost".into(), vec![ip("127.0.0.1"), ip("::1")]);
        h.reverse.insert(ip("127.0.0.1"), "localhost".into());
        h.ifaces = vec![
            ("lo".into(), vec![ip("::1"), ip("127.0.0.1")]),
            ("eth0".into(), vec![ip("fd00::2"), ip("192.0.2.2")]),
        ];
        h
    }

    fn hosts(mut self, name: &str, addrs: &[&str]) -> FakeHost {
        self.forward
            .insert(name.into(), addrs.iter().map(|a| ip(a)).collect());
        self
    }

    fn rev(mut self, addr: &str, name: &str) -> FakeHost {
        self.reverse.insert(ip(addr), name.into());
        self
    }

    fn ptr(mut self, addr: &str, name: &str) -> FakeHost {
        self.ptr.insert(addr.parse().unwrap(), name.into());
        self
    }
}

impl HostNetwork for FakeHost {
    fn host_name(&self) -> Option<String> {
        self.name.clone()
    }
    fn lookup(&self, name: &str) -> Vec<IpAddr> {
        // A resolver accepts a fully qualified name with its trailing dot.
        let key = name.strip_suffix('.').unwrap_or(name);
        self.forward.get(key).cloned().unwrap_or_default()
    }
    fn reverse_lookup(&self, ip: IpAddr) -> Option<String> {
        self.reverse.get(&ip).cloned()
    }
    fn dns_ptr(&self, ip: Ipv4Addr) -> Option<String> {
        self.ptr.get(&ip).cloned()
    }
    fn interface_addrs(&self, name: &str) -> Option<Vec<IpAddr>> {
        self.ifaces
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a.clone())
    }
}

fn cfg() -> BookieConfig {
    let mut c = BookieConfig::defaults_standalone();
    c.standalone = false; // the rules of a cluster bookie
    c
}

fn id(c: &BookieConfig, host: &FakeHost) -> Result<String, BookieIdError> {
    derive(c, 3181, host).map(|a| a.bookie_id)
}

/// The host of this session's machine: `vm` resolves to 127.0.0.1 in /etc/hosts, eth0 has
/// 192.0.2.2 with no PTR record.
fn loopback_named_host() -> FakeHost {
    FakeHost::new("vm").hosts("vm", &["127.0.0.1"])
}

#[test]
fn host_name_on_loopback_is_refused_with_the_keys_to_set() {
    let host = loopback_named_host();
    let err = id(&cfg(), &host).unwrap_err();
    assert!(matches!(err, BookieIdError::Loopback { .. }), "{err}");
    let msg = err.to_string();
    for key in ["advertisedAddress", "allowLoopback", "listeningInterface"] {
        assert!(msg.contains(key), "names {key}: {msg}");
    }
    // Java would also refuse with a custom bookieId: it derives the address first.
    let mut c = cfg();
    c.bookie_id = Some("bk-1".into());
    assert!(matches!(id(&c, &host), Err(BookieIdError::Loopback { .. })));
}

#[test]
fn listening_interface_without_ptr_falls_back_to_the_host_name_and_is_refused() {
    // Java's DNS.getDefaultHost("eth0") finds no PTR for 192.0.2.2 and uses the local host's
    // canonical name, "localhost" here: still loopback.
    let mut c = cfg();
    c.listening_interface = Some("eth0".into());
    assert!(matches!(
        id(&c, &loopback_named_host()),
        Err(BookieIdError::Loopback { .. })
    ));
    // With a PTR record the interface's name is used, and its address is the id.
    let host = loopback_named_host()
        .ptr("192.0.2.2", "bk1.example.com.")
        .hosts("bk1.example.com", &["192.0.2.2"])
        .rev("192.0.2.2", "bk1.example.com");
    let a = derive(&c, 3181, &host).unwrap();
    assert_eq!(a.bookie_id, "192.0.2.2:3181");
    assert_eq!(
        a.listen_ip,
        Some(ip("192.0.2.2")),
        "binds the interface's address"
    );
    c.use_host_name_as_bookie_id = true;
    assert_eq!(id(&c, &host).unwrap(), "bk1.example.com:3181");
    c.use_short_host_name = true;
    let short = loopback_named_host()
        .ptr("192.0.2.2", "bk1.example.com.")
        .hosts("bk1.example.com", &["192.0.2.2"])
        .hosts("bk1", &["192.0.2.2"])
        .rev("192.0.2.2", "bk1.example.com");
    assert_eq!(id(&c, &short).unwrap(), "bk1:3181");
    // A short name that does not resolve ends start-up (Java: NPE in getBookieAddress).
    assert!(matches!(
        id(&c, &host),
        Err(BookieIdError::Unresolvable { .. })
    ));
}

#[test]
fn allow_loopback_gives_javas_loopback_id() {
    let mut c = cfg();
    c.allow_loopback = true;
    let a = derive(&c, 3181, &loopback_named_host()).unwrap();
    assert_eq!(a.bookie_id, "127.0.0.1:3181");
    assert_eq!(a.listen_ip, None, "listeningInterface unset: the wildcard");
    // The host-name variant is "localhost:3181" (canonical name of 127.0.0.1).
    assert_eq!(a.alternate_ids, vec!["localhost:3181".to_string()]);
    c.use_host_name_as_bookie_id = true;
    assert_eq!(id(&c, &loopback_named_host()).unwrap(), "localhost:3181");
}

#[test]
fn standalone_allows_loopback() {
    let mut c = cfg();
    c.standalone = true;
    assert_eq!(id(&c, &loopback_named_host()).unwrap(), "127.0.0.1:3181");
}

#[test]
fn a_host_name_on_a_real_address_gives_that_address() {
    let host = FakeHost::new("bk2")
        .hosts("bk2", &["fd00::2", "192.0.2.2"])
        .rev("192.0.2.2", "bk2.example.com")
        .hosts("bk2.example.com", &["192.0.2.2"]);
    let mut c = cfg();
    let a = derive(&c, 3181, &host).unwrap();
    assert_eq!(a.bookie_id, "192.0.2.2:3181", "IPv4 first, as Java prefers");
    assert_eq!(a.host, "192.0.2.2");
    assert_eq!(a.alternate_ids, vec!["bk2.example.com:3181".to_string()]);
    c.use_host_name_as_bookie_id = true;
    let a = derive(&c, 3181, &host).unwrap();
    assert_eq!(a.bookie_id, "bk2.example.com:3181");
    assert_eq!(a.alternate_ids, vec!["192.0.2.2:3181".to_string()]);
}

#[test]
fn use_host_name_without_a_confirmed_reverse_name_is_the_address() {
    // Reverse name that does not resolve back: Java's getCanonicalHostName gives the literal.
    let host = FakeHost::new("bk3")
        .hosts("bk3", &["192.0.2.3"])
        .rev("192.0.2.3", "elsewhere.example.com")
        .hosts("elsewhere.example.com", &["198.51.100.1"]);
    let mut c = cfg();
    c.use_host_name_as_bookie_id = true;
    assert_eq!(id(&c, &host).unwrap(), "192.0.2.3:3181");
}

#[test]
fn an_unresolvable_host_name_falls_back_to_localhost() {
    // getLocalHost fails: Java's cached name is "localhost", which is loopback.
    let host = FakeHost::new("nowhere");
    assert!(matches!(
        id(&cfg(), &host),
        Err(BookieIdError::Loopback { .. })
    ));
    let mut c = cfg();
    c.allow_loopback = true;
    assert_eq!(id(&c, &host).unwrap(), "127.0.0.1:3181");
}

#[test]
fn advertised_address_wins_without_a_loopback_check() {
    let host = loopback_named_host();
    let mut c = cfg();
    c.advertised_address = Some(" bk1.example.com ".into());
    let a = derive(&c, 3181, &host).unwrap();
    assert_eq!(a.bookie_id, "bk1.example.com:3181");
    assert_eq!(a.host, "bk1.example.com");
    assert_eq!(a.listen_ip, None);
    // Java returns before its loopback check: an advertised 127.0.0.1 starts.
    c.advertised_address = Some("127.0.0.1".into());
    let a = derive(&c, 3181, &host).unwrap();
    assert_eq!(a.bookie_id, "127.0.0.1:3181");
    // The cookie check's other ids are derived with loopback allowed.
    assert_eq!(a.alternate_ids, vec!["localhost:3181".to_string()]);
    // A custom id is verbatim; the network host stays the address.
    c.bookie_id = Some("my-bookie-1".into());
    let a = derive(&c, 3181, &host).unwrap();
    assert_eq!(
        (a.bookie_id.as_str(), a.host.as_str()),
        ("my-bookie-1", "127.0.0.1")
    );
    assert!(a.alternate_ids.is_empty());
}

#[test]
fn listening_interface_with_advertised_address_binds_the_advertised_address() {
    let host = FakeHost::new("bk4").hosts("bk4", &["192.0.2.4"]);
    let mut c = cfg();
    c.advertised_address = Some("192.0.2.9".into());
    c.listening_interface = Some("eth0".into());
    let a = derive(&c, 3181, &host).unwrap();
    assert_eq!(a.bookie_id, "192.0.2.9:3181");
    assert_eq!(
        a.listen_ip,
        Some(ip("192.0.2.9")),
        "Java binds bookieAddress"
    );
}

#[test]
fn listening_interface_must_be_an_interface_name() {
    let host = FakeHost::new("bk5").hosts("bk5", &["192.0.2.5"]);
    let mut c = cfg();
    for bad in ["eth9", "192.0.2.5"] {
        c.listening_interface = Some(bad.into());
        let err = id(&c, &host).unwrap_err();
        assert_eq!(err, BookieIdError::NoSuchInterface(bad.into()));
        assert!(err.to_string().contains("listeningInterface"), "{err}");
    }
    // `lo` is an interface; its PTR-less address falls back to the host name.
    c.listening_interface = Some("lo".into());
    let a = derive(&c, 4000, &host).unwrap();
    assert_eq!(a.bookie_id, "192.0.2.5:4000");
    assert_eq!(a.listen_ip, Some(ip("192.0.2.5")));
}

#[test]
fn ipv6_only_host_formats_like_java() {
    let host = FakeHost::new("v6").hosts("v6", &["fd00::2"]);
    assert_eq!(id(&cfg(), &host).unwrap(), "fd00:0:0:0:0:0:0:2:3181");
}

#[test]
fn id_validation_follows_java_including_range_quirk() {
    for ok in ["10.0.0.1:3181", "bookie-1", "a_b", "x@y", "host;1"] {
        assert!(validate_bookie_id(ok).is_ok(), "{ok}");
    }
    for bad in ["", "readonly", "ReadOnly", "a b", "a/b", "a,b", "é"] {
        assert!(validate_bookie_id(bad).is_err(), "{bad}");
    }
    let mut c = cfg();
    c.advertised_address = Some("bk.example.com".into());
    c.bookie_id = Some("readonly".into());
    assert!(matches!(
        id(&c, &FakeHost::new("x")),
        Err(BookieIdError::InvalidId(_))
    ));
}

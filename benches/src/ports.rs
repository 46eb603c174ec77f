//! Loopback ports for the servers bkchaos and the tests start (bookies, their admin HTTP
//! ports, the drill's ZooKeeper): bkchaos, benches/tests and the bookie's own tests
//! (bookie/tests/ports/mod.rs) all take them from here.
//!
//! Why not `bind("127.0.0.1:0")` and drop: the kernel hands such ports out of the ephemeral
//! range (32768–60999 by default), the same range every outgoing connection (a load client,
//! a bookie's ZooKeeper session) takes its source port from, and a port just released may be
//! handed out again to the next caller. Two servers then race for one port and the loser
//! exits at start (CI saw an attached drill wait 60 s for a bookie that never came up). So
//! ports here come from below the ephemeral range, each at most once per process, and only
//! after a bind shows the port is free right now.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// The first port of the range and its size: 20000–31999, below Linux's default ephemeral
/// range (`net.ipv4.ip_local_port_range`), so no outgoing connection takes one of these.
const RANGE_START: u32 = 20_000;
const RANGE_LEN: u32 = 12_000;

/// The next offset into the range; it starts where this process's id points, so processes
/// running side by side (bkchaos runs under a test that starts bookies itself) start far apart.
static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);

/// A loopback port that nothing listens on now and that this process has not handed out before.
pub fn free_port() -> Result<u16, String> {
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % RANGE_LEN,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..RANGE_LEN {
        let offset = NEXT.fetch_add(1, Ordering::SeqCst) % RANGE_LEN;
        let port = (RANGE_START + offset) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(format!(
        "no free loopback port in {RANGE_START}..{}",
        RANGE_START + RANGE_LEN
    ))
}

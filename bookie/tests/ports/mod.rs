//! Loopback ports for the servers a test starts (bookies, their admin HTTP ports): from
//! `bkbench::ports`, the one rule bkchaos and the drill tests follow too. Its doc says why not
//! `bind("127.0.0.1:0")`: such a port comes from the ephemeral range and may be handed out
//! again, also as a client's source port. CI saw it here as a Java bookie's admin port answered
//! by a bookie's protocol port, which closes on an HTTP request.
#![allow(dead_code)]

/// A loopback port below the ephemeral range that nothing listens on now and that this test
/// process has not handed out before.
pub fn free_port() -> u16 {
    bkbench::ports::free_port().expect("a free loopback port")
}

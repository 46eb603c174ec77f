//! bookie: the BookKeeper-compatible storage node (server library behind the `bookie` binary).
//!
//! Module ownership (see ARCHITECTURE.md):
//! - request path: `server` (connections, framing, dispatch, backpressure, receive and send
//!   budgets), `handlers` (one function per bookie operation), `storage` (the journal +
//!   entry log pair, start-up replay, checkpointing);
//! - process: `node` (assembly, start-up and shutdown order), `mode` (writable / read-only
//!   and why, published to ZooKeeper and metrics), `disk_monitor` (ledger disk usage ->
//!   read-only), `journal_space` (a full journal disk -> read-only), `gc` (GC rounds and
//!   compaction schedule; `gc_trigger`: forced rounds), `memory` (the memory bound as a
//!   formula of the configured sizes), `request_metrics` (the request path into the stock
//!   metrics);
//! - operations: `admin` (the HTTP admin API, `/metrics` and the Helm probes' endpoints),
//!   `config` (stock `bk_server.conf` keys and flags), `metrics` (Prometheus `/metrics` with
//!   stock names), `registration` (ZooKeeper: INSTANCEID, cookies, available / read-only
//!   nodes, session expiry), `cookie` (the cookie text format and `current/VERSION`),
//!   `gc_scan` (the ledger tree scan that tells GC which ledgers still exist), `logging`
//!   (log formats), `build_info` (version and git commit), `inspect` (`bookie inspect ...`:
//!   read-only views and checks of the bookie's own files).

// Unit tests set up and inspect real directories directly; the library itself (the non-test
// build, which clippy checks too) is bound by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub mod admin;
pub mod bookie_status;
pub mod build_info;
pub mod chaos;
pub mod config;
pub mod cookie;
pub mod disk_monitor;
pub mod gc;
pub mod gc_metadata;
pub mod gc_metadata_zk;
pub mod gc_scan;
pub mod gc_status;
pub mod gc_trigger;
pub mod handlers;
pub mod inspect;
pub mod journal_space;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod mode;
pub mod node;
pub mod registration;
pub mod request_metrics;
pub mod scrubber;
pub mod server;
pub mod storage;
pub mod tls;

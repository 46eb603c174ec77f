//! bkbench as a library: the job model, the wire client and the reports, shared by the
//! `bkbench` binary (main.rs) and the end-to-end tests (benches/tests/).
//!
//! Map: options.rs (option table, value parsers, typed JobSpec) -> jobfile.rs (INI files,
//! command line, groups) -> job.rs (runs a job over client.rs connections, upgraded to TLS by
//! tls.rs, paced by ratelimit.rs, measured by stats.rs) -> report.rs (text, JSON, CSV) and
//! chart.rs (SVG); compare.rs builds the ours-vs-Java-vs-fio table. chaos/ is `bkchaos`, the
//! drill runner (src/bin/bkchaos.rs), on the same client, statistics and chart; ports.rs
//! hands out the loopback ports of the servers it and the drill tests start.

// A benchmark tool, not the bookie: it writes reports and scratch directories with std::fs
// directly, so it is exempt from ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

pub mod chaos;
pub mod chart;
pub mod client;
pub mod compare;
pub mod job;
pub mod jobfile;
pub mod options;
pub mod ports;
pub mod ratelimit;
pub mod report;
pub mod stats;
pub mod tls;

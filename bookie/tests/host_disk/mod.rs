//! Disk-usage settings for the bookies a test starts, so that a test that is not about disk
//! thresholds does not depend on how full the host's disk is.
//!
//! Why: like the Java bookie, a bookie treats a ledger directory as full when
//! `1 - available/total > diskUsageThreshold` (default 0.95) and then goes read-only (and the
//! entry log refuses new segments with ENOSPC). A CI host's filesystem can have less than 5 %
//! of its *total* size available (df shows a 252G filesystem with much of it reserved) while
//! having plenty of room for a test, and CI saw read-only bookies and ENOSPC in tests that
//! have nothing to do with a full disk. So every bookie a test starts gets thresholds close
//! to 1; the values must stay below 1 (the config refuses 1.0, as Java does).
//! `diskUsageLwmThreshold` defaults to `diskUsageThreshold`, so it need not be set. `--set`
//! overrides a `--conf` file's keys and applies with `--standalone` / `--data-dir` alike, so
//! one list serves every way a test starts the binary.
//!
//! Tests about disk thresholds (`drill_ledger_full`, a scenario on a small loop-mounted
//! filesystem) set their own values and do not use these.
#![allow(dead_code)]

/// `--set` arguments for the `bookie` binary: disk-usage thresholds near 1.
pub const ARGS: [&str; 4] = [
    "--set",
    "diskUsageThreshold=0.999",
    "--set",
    "diskUsageWarnThreshold=0.998",
];

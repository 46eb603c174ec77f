//! bk-journal: the bookie's write-ahead log (docs/formats.md and docs/durability.md,
//! sections "Journal").
//!
//! One journal per journal directory; ledger `L` goes to journal
//! `signSafeMod(L, dirs)` ([`journal_index_for`]). Each journal directory has one
//! committer OS thread that owns its [`bk_disk::Disk`] and runs the sans-I/O
//! [`commit::GroupCommit`] state machine: appends arrive over a bounded channel, a
//! group is written with one linked write+fdatasync whenever the device is free,
//! and appends are acknowledged (oneshot channels) in append order after the
//! fdatasync of their group succeeded.
//!
//! Module map:
//! - [`record`]: records (kind + payload) and the typed bookie kinds;
//! - [`format`](mod@format): byte formats (record, group, checkpoint file, file names);
//! - [`commit`]: the group-commit state machine (no I/O);
//! - [`replay`]: finding the end of the log, torn tail vs mid-log corruption;
//! - `segments`: segment files (pre-written with zeros, recycled after checkpoint);
//! - `committer`: the committer thread driving `GroupCommit` over a `Disk`;
//! - [`journal`]: the runtime API the bookie calls ([`Journal`]);
//! - `config`: [`JournalConfig`] (the bookie maps the stock keys onto it);
//! - `open`: opening one directory (replay, resync, recycle, where to resume);
//! - `space`: whether a directory waits for space (a full file system is not fatal);
//! - [`metrics`]: counters and histograms the bookie exports;
//! - `fuzz_support`: the fuzz harnesses (also run on stable by a property test).
//!
//! Invariants (see each module for its own):
//! - never acknowledge before the fdatasync of the group holding the record;
//! - a failed write or fdatasync is fatal: nothing is acknowledged after it, except
//!   "no space" (ENOSPC/EDQUOT) where nothing was made durable (a segment's
//!   preallocation, a write before its sync): those appends fail with
//!   `JournalError::NoSpace`, never acknowledged, and the journal waits for space;
//! - every queue is bounded (admission budget in bytes and records);
//! - replay never takes mid-log corruption for the end of the log.

mod ack;
pub mod commit;
mod committer;
mod config;
pub mod error;
pub mod format;
#[doc(hidden)]
pub mod fuzz_support;
pub mod journal;
pub mod metrics;
mod newest;
mod open;
pub mod record;
pub mod replay;
mod segments;
mod space;

pub use ack::{AckBatch, AckDelivery};
/// The `bytes` crate the API is expressed in (re-exported for callers without it).
pub use bytes;
pub use commit::{GroupCommit, GroupCommitConfig, LogPosition};
pub use config::JournalConfig;
pub use error::{FormatError, JournalError};
pub use journal::{AppendFuture, DiskFactory, Driver, Journal, JournalMark};
pub use metrics::{JournalMetrics, MetricsSnapshot};
pub use record::{Record, RecordKind, TypedRecord, MASTER_KEY_LEN};
pub use replay::{DirReplay, Replay, ReplayedRecord, TornTail};
pub use segments::FREE_SEGMENTS_FOLLOWED_MAX;

/// A record's sequence number in its journal directory: > 0, strictly increasing in
/// append order, never reused (numbers may be skipped after a recovery).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seq(pub u64);

impl std::fmt::Display for Seq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The journal a ledger's records go to: Java's `signSafeMod(ledgerId, n)`
/// (ledger ids are Java longs, so the id is taken as signed).
pub fn journal_index_for(ledger: u64, journals: usize) -> usize {
    let n = journals.max(1) as i64;
    (ledger as i64).rem_euclid(n) as usize
}

#[cfg(test)]
mod tests {
    #[test]
    fn runtime_types_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        fn send_static<T: Send + 'static>() {}
        send_sync::<super::Journal>();
        send_static::<super::AppendFuture>();
        send_sync::<super::JournalMetrics>();
    }

    #[test]
    fn sign_safe_mod() {
        assert_eq!(super::journal_index_for(5, 3), 2);
        assert_eq!(super::journal_index_for(u64::MAX, 3), 2); // -1 mod 3
        assert_eq!(super::journal_index_for(7, 1), 0);
    }
}

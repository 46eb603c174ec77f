//! Journal configuration: [`JournalConfig`] and the mapping from the stock
//! `bk_server.conf` journal keys ([`StockJournalKeys`]).
//!
//! Invariant: a config that passes `validate` keeps every group inside one segment
//! (records larger than a segment are refused) and every budget non-zero.

use crate::commit::GroupCommitConfig;
use crate::error::JournalError;
use bk_disk::SECTOR;
use std::time::Duration;

/// Journal settings. Stock `bk_server.conf` keys map onto the fields as noted.
#[derive(Clone, Debug)]
pub struct JournalConfig {
    /// `journalMaxGroupWaitMSec`. None (the default): greedy, a group is written as
    /// soon as the device is free (the natural batching of one group in flight).
    /// Some(d): with the device free, hold a group until a cap is reached or its
    /// oldest record waited `d` (the Java behaviour; adds up to `d` latency).
    /// The bookie maps the stock key to Some only when it is set explicitly > 0 and
    /// `journalFlushWhenQueueEmpty` is false.
    pub group_wait_max: Option<Duration>,
    /// `journalBufferedWritesThreshold` (default 512 KiB): cap on the record bytes of
    /// one group (a single larger record forms a group alone).
    pub group_bytes_max: usize,
    /// `journalMaxGroupedEntriesToCommit` / `journalBufferedEntriesThreshold`
    /// (0 = no cap, the default): cap on records per group.
    pub group_records_max: usize,
    /// `journalMaxSizeMB` scaled down (default 128 MiB): size of every segment file,
    /// a multiple of 4096. Also bounds a record: payload <= segment_bytes - 76.
    pub segment_bytes: u64,
    /// `journalMaxMemorySizeMb` (default 64 MiB): bytes admitted and not yet
    /// acknowledged, per journal directory; beyond it appends wait.
    pub in_flight_bytes_max: usize,
    /// `journalQueueSize` (default 10000): appends admitted and not yet acknowledged,
    /// per journal directory.
    pub queue_records_max: usize,
    /// `journalMaxBackups` (default 2 here): free segment files kept for reuse;
    /// further segments freed by a checkpoint are deleted.
    pub free_segments_max: usize,
    /// Open segment files with O_DIRECT (default true; the sim ignores it).
    pub direct_io: bool,
}

impl Default for JournalConfig {
    fn default() -> Self {
        JournalConfig {
            group_wait_max: None,
            group_bytes_max: 512 * 1024,
            group_records_max: 0,
            segment_bytes: 128 << 20,
            in_flight_bytes_max: 64 << 20,
            queue_records_max: 10_000,
            free_segments_max: 2,
            direct_io: true,
        }
    }
}

/// The stock `bk_server.conf` journal keys, as the bookie read them (None: absent).
#[derive(Clone, Debug, Default)]
pub struct StockJournalKeys {
    /// `journalMaxGroupWaitMSec`
    pub journal_max_group_wait_msec: Option<i64>,
    /// `journalFlushWhenQueueEmpty`
    pub journal_flush_when_queue_empty: Option<bool>,
    /// `journalBufferedWritesThreshold` (bytes)
    pub journal_buffered_writes_threshold: Option<u64>,
    /// `journalMaxGroupedEntriesToCommit` (or `journalBufferedEntriesThreshold`)
    pub journal_max_grouped_entries_to_commit: Option<u64>,
    /// `journalMaxSizeMB`
    pub journal_max_size_mb: Option<u64>,
    /// `journalMaxMemorySizeMb`
    pub journal_max_memory_size_mb: Option<u64>,
    /// `journalQueueSize`
    pub journal_queue_size: Option<u64>,
    /// `journalMaxBackups`
    pub journal_max_backups: Option<u64>,
}

impl JournalConfig {
    /// Maps the stock keys onto a config (defaults for absent keys):
    /// - group wait: greedy unless `journalMaxGroupWaitMSec` is set > 0 and
    ///   `journalFlushWhenQueueEmpty` is not true (the Java default 2 ms is not
    ///   applied when the key is absent: on a free device it is pure latency);
    /// - `journalMaxSizeMB` is the segment size, capped at 256 MiB (segments are reused,
    ///   so a smaller size only means more, cheaper recycling);
    /// - `journalMaxBackups` is the number of free segments kept for reuse.
    pub fn from_stock(k: &StockJournalKeys) -> JournalConfig {
        let d = JournalConfig::default();
        let wait = match (
            k.journal_max_group_wait_msec,
            k.journal_flush_when_queue_empty,
        ) {
            (Some(ms), flush) if ms > 0 && flush != Some(true) => {
                Some(Duration::from_millis(ms as u64))
            }
            _ => None,
        };
        let mb = |v: u64| (v.saturating_mul(1 << 20)) as usize;
        JournalConfig {
            group_wait_max: wait,
            group_bytes_max: k
                .journal_buffered_writes_threshold
                .filter(|v| *v > 0)
                .map_or(d.group_bytes_max, |v| v as usize),
            group_records_max: k
                .journal_max_grouped_entries_to_commit
                .map_or(d.group_records_max, |v| v as usize),
            segment_bytes: k
                .journal_max_size_mb
                .filter(|v| *v >= 1)
                .map_or(d.segment_bytes, |v| (v << 20).min(256 << 20)),
            in_flight_bytes_max: k
                .journal_max_memory_size_mb
                .filter(|v| *v > 0)
                .map_or(d.in_flight_bytes_max, mb),
            queue_records_max: k
                .journal_queue_size
                .filter(|v| *v > 0)
                .map_or(d.queue_records_max, |v| v as usize),
            free_segments_max: k
                .journal_max_backups
                .map_or(d.free_segments_max, |v| v as usize),
            direct_io: d.direct_io,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), JournalError> {
        let bad = |m: &str| Err(JournalError::InvalidInput(m.to_string()));
        if !self.segment_bytes.is_multiple_of(SECTOR as u64)
            || self.segment_bytes < 4 * SECTOR as u64
        {
            return bad("segment_bytes must be a multiple of 4096 and at least 16 KiB");
        }
        if self.segment_bytes > u32::MAX as u64 {
            return bad("segment_bytes must be below 4 GiB");
        }
        if self.group_bytes_max == 0 || self.in_flight_bytes_max == 0 || self.queue_records_max == 0
        {
            return bad("group_bytes_max, in_flight_bytes_max and queue_records_max must be > 0");
        }
        Ok(())
    }

    /// Largest record payload accepted.
    pub fn record_payload_max(&self) -> usize {
        self.commit_config(0).record_payload_max()
    }

    pub(crate) fn commit_config(&self, journal_id: u64) -> GroupCommitConfig {
        GroupCommitConfig {
            journal_id,
            segment_bytes: self.segment_bytes,
            group_bytes_max: self.group_bytes_max,
            group_records_max: self.group_records_max,
            group_wait_max: self.group_wait_max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_keys_map_onto_the_config() {
        let c = JournalConfig::from_stock(&StockJournalKeys::default());
        assert_eq!(c.group_wait_max, None);
        assert_eq!(c.group_bytes_max, 512 * 1024);
        let c = JournalConfig::from_stock(&StockJournalKeys {
            journal_max_group_wait_msec: Some(1),
            journal_buffered_writes_threshold: Some(65536),
            journal_max_grouped_entries_to_commit: Some(100),
            journal_max_size_mb: Some(2048),
            journal_queue_size: Some(500),
            ..StockJournalKeys::default()
        });
        assert_eq!(c.group_wait_max, Some(Duration::from_millis(1)));
        assert_eq!(c.group_bytes_max, 65536);
        assert_eq!(c.group_records_max, 100);
        assert_eq!(c.segment_bytes, 256 << 20);
        assert_eq!(c.queue_records_max, 500);
        assert!(c.validate().is_ok());
        let c = JournalConfig::from_stock(&StockJournalKeys {
            journal_max_group_wait_msec: Some(2),
            journal_flush_when_queue_empty: Some(true),
            ..StockJournalKeys::default()
        });
        assert_eq!(c.group_wait_max, None);
    }
}

//! Journal configuration: [`JournalConfig`]. The stock `bk_server.conf` journal keys are
//! read and mapped onto it by the bookie (`bookie/src/config/mapping.rs`), nowhere else;
//! the field docs name the keys that set them.
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
    /// The bookie's configuration is Some only when the key is set explicitly > 0 and
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
    /// `journalPreAllocSizeMB` (default 16 MiB): the smallest segment file made when
    /// the journal's file system has no room for a `segment_bytes` one (a journal
    /// directory smaller than two segments then runs with shorter segments). Capped
    /// at `segment_bytes`; a file is never shorter than the group written into it.
    pub segment_bytes_min: u64,
    /// How often a journal waiting for space retries making a segment (default 1 s).
    pub no_space_retry: Duration,
    /// `journalMaxMemorySizeMb` (default 64 MiB): bytes admitted and not yet
    /// acknowledged, per journal directory; beyond it appends wait.
    pub in_flight_bytes_max: usize,
    /// `journalQueueSize` (default 10000): appends admitted and not yet acknowledged,
    /// per journal directory.
    pub queue_records_max: usize,
    /// `journalMaxBackups` (default 2 here): free segment files kept for reuse;
    /// further segments freed by a checkpoint are deleted. With
    /// `free_segments_follow_checkpoints`, the fewest kept.
    pub free_segments_max: usize,
    /// Whether the free pool follows what checkpoints free (default false; the bookie
    /// sets it when `journalMaxBackups` is not set): a checkpoint that frees `n`
    /// segments lets the pool keep `n` of them, at least `free_segments_max` and at most
    /// [`crate::FREE_SEGMENTS_FOLLOWED_MAX`], because the next checkpoint
    /// interval will likely fill as many. A fixed pool smaller than that deletes the
    /// rest, and their successors are new files whose unwritten extents make every
    /// group's write and fdatasync convert them (docs/benchmarks.md, "Recycled
    /// segments under sustained load"). The journal's footprint never exceeds what was
    /// live before the checkpoint.
    pub free_segments_follow_checkpoints: bool,
    /// Open segment files with O_DIRECT (default true; the sim ignores it).
    pub direct_io: bool,
    /// Where acknowledgements are sent from (`ack` module): None (the default), the
    /// committer thread; Some, each group's batch is handed to the hook.
    pub ack_delivery: Option<crate::AckDelivery>,
}

impl Default for JournalConfig {
    fn default() -> Self {
        JournalConfig {
            group_wait_max: None,
            group_bytes_max: 512 * 1024,
            group_records_max: 0,
            segment_bytes: 128 << 20,
            segment_bytes_min: 16 << 20,
            no_space_retry: Duration::from_secs(1),
            in_flight_bytes_max: 64 << 20,
            queue_records_max: 10_000,
            free_segments_max: 2,
            free_segments_follow_checkpoints: false,
            direct_io: true,
            ack_delivery: None,
        }
    }
}

impl JournalConfig {
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
        if !self.segment_bytes_min.is_multiple_of(SECTOR as u64) || self.segment_bytes_min == 0 {
            return bad("segment_bytes_min must be a non-zero multiple of 4096");
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

    /// The smallest segment file made when space is short (see `segment_bytes_min`).
    pub(crate) fn segment_min(&self) -> u64 {
        self.segment_bytes_min.min(self.segment_bytes)
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
    fn default_config_is_valid_and_greedy() {
        let c = JournalConfig::default();
        assert_eq!(c.group_wait_max, None);
        assert_eq!(c.group_bytes_max, 512 * 1024);
        assert!(c.validate().is_ok());
        let bad = JournalConfig {
            queue_records_max: 0,
            ..JournalConfig::default()
        };
        assert!(bad.validate().is_err());
    }
}

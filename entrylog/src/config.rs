//! Configuration of the entry log, with the stock bk_server.conf key each field
//! corresponds to. Every buffer, cache and queue the entry log keeps is bounded by a
//! field here.

use std::time::Duration;

/// Entry-log configuration. `Default` gives the stock defaults where they exist.
#[derive(Clone, Debug)]
pub struct EntryLogConfig {
    /// Total write cache, both halves together (`dbStorage_writeCacheMaxSizeMb`). One half
    /// takes adds while the other is flushed. An entry larger than a half is still
    /// accepted: it is admitted alone into an empty half and flushed through (so memory
    /// peaks at `write_cache_bytes + max_entry_bytes` in the worst case).
    pub write_cache_bytes: usize,
    /// Read cache for read-ahead (`dbStorage_readAheadCacheMaxSizeMb`).
    pub read_cache_bytes: usize,
    /// Entries read ahead after a sequential miss (`dbStorage_readAheadCacheBatchSize`).
    pub readahead_entries: usize,
    /// Bytes read ahead at most per miss (`dbStorage_readAheadCacheBatchBytesSize`,
    /// default here 1 MiB instead of "off").
    pub readahead_bytes: usize,
    /// How long an add waits for write-cache space before `Throttled`
    /// (`dbStorage_maxThrottleTimeMs`).
    pub max_throttle: Duration,
    /// Largest entry accepted (the 64 MiB frame maximum).
    pub max_entry_bytes: usize,
    /// Size of each aligned write while flushing a segment.
    pub flush_write_bytes: usize,
    /// Writes in flight while flushing a segment.
    pub flush_queue_depth: usize,
    /// Reader handles (each owns one `Disk`): how many disk reads run concurrently.
    /// Default 32, the queue depth of a bookie serving many readers at once: with 8,
    /// cold random 4 KiB reads from 32 threads reached ~61k IOPS, with 32 ~79k
    /// (fio at queue depth 32 on the same directory: ~114k; entrylog_bench --readers).
    pub readers: usize,
    /// Open files with O_DIRECT where the backend supports it.
    pub direct_io: bool,
    /// The slowest a background flush of a write-cache half runs, bytes/s; it runs at
    /// twice the rate the half filled at when that is faster, and at full speed when
    /// hurried (`flush_pace` has the rule and the reason). 0: flushes are not paced
    /// (the default here; the bookie sets 64 MiB/s). Not a stock key.
    pub flush_pace_min_bytes_per_sec: u64,
    /// Segments whose live fraction is below this are compacted
    /// (`majorCompactionThreshold`; `minorCompactionThreshold` may be passed per call).
    pub compaction_threshold: f64,
    /// Compaction copy rate limit in bytes per second (`compactionRateByBytes` when
    /// `isThrottleByBytes=true`; 0 = off).
    pub compaction_rate_bytes_per_sec: u64,
    /// Compaction copy rate limit in entries per second (`compactionRateByEntries` when
    /// `isThrottleByBytes=false`, the stock default; 0 = off). Both limits apply when
    /// both are set.
    pub compaction_rate_entries_per_sec: u64,
    /// Segments smaller than this are merged with their neighbours (in precedence
    /// order) by compaction, which keeps the number of files bounded.
    pub compaction_merge_below_bytes: u64,
    /// Live bytes a merged segment is filled up to.
    pub compaction_target_segment_bytes: u64,
    /// A directory is full above this used fraction (`diskUsageThreshold`).
    pub disk_usage_threshold: f64,
    /// A directory is almost full above this (`diskUsageWarnThreshold`).
    pub disk_usage_warn_threshold: f64,
    /// A full directory is writable again only below this (`diskUsageLwmThreshold`).
    pub disk_usage_lwm_threshold: f64,
    /// Largest segment a flush writes (`logSizeLimit`, stock default 1 GiB): a larger
    /// write-cache half is flushed as several segments. A single entry larger than this
    /// still goes alone into one segment.
    pub segment_max_bytes: u64,
    /// Read-only as soon as one directory is full (`readOnlyModeOnAnyDiskFullEnabled`,
    /// stock default true); when false, only once every directory is full, and full
    /// directories just stop taking new segments.
    pub read_only_on_any_dir_full: bool,
    /// Refuse to open without a `ledgers.state` file even when no segment exists: the
    /// caller knows the entry log held state (the bookie sets it when a journal has a
    /// checkpoint, which only follows a completed flush). Not a configuration key.
    pub require_state_file: bool,
    /// Refuse to open when the newest `ledgers.state` has an epoch below this: the caller
    /// recorded (in its journal checkpoint) that it relies on a state file at least this
    /// new, so a lower one is an older copy that may have lost fences or deletions
    /// (docs/durability.md, the fault matrix). 0: no requirement. Not a configuration key.
    pub min_state_epoch: u64,
    /// Count a checkpoint only when the caller confirms it
    /// ([`crate::EntryLog::checkpoint_confirmed`]) instead of at every completed `flush()`.
    /// The count decides when a deleted ledger's tombstone may go (two checkpoints after
    /// the deletion, so that no journal record of it can be replayed); a caller whose
    /// journal checkpoint can fail or be deferred after a successful flush (the bookie's
    /// does on a full journal disk) must confirm, or the tombstone could go while the
    /// journal still holds the ledger's records and a restart would bring it back. Not a
    /// configuration key.
    pub checkpoints_confirmed_by_caller: bool,
}

impl Default for EntryLogConfig {
    fn default() -> Self {
        EntryLogConfig {
            write_cache_bytes: 64 * 1024 * 1024,
            read_cache_bytes: 64 * 1024 * 1024,
            readahead_entries: 100,
            readahead_bytes: 1024 * 1024,
            max_throttle: Duration::from_millis(10_000),
            max_entry_bytes: crate::format::MAX_ENTRY_BYTES,
            flush_write_bytes: 1024 * 1024,
            flush_queue_depth: 4,
            readers: 32,
            direct_io: true,
            flush_pace_min_bytes_per_sec: 0,
            compaction_threshold: 0.5,
            compaction_rate_bytes_per_sec: 1_000_000,
            compaction_rate_entries_per_sec: 0,
            compaction_merge_below_bytes: 4 * 1024 * 1024,
            compaction_target_segment_bytes: 64 * 1024 * 1024,
            disk_usage_threshold: 0.95,
            disk_usage_warn_threshold: 0.90,
            disk_usage_lwm_threshold: 0.95,
            segment_max_bytes: 1 << 30,
            read_only_on_any_dir_full: true,
            require_state_file: false,
            min_state_epoch: 0,
            checkpoints_confirmed_by_caller: false,
        }
    }
}

impl EntryLogConfig {
    /// Checks ranges; returns a description of the first problem.
    pub fn validate(&self) -> Result<(), String> {
        if self.write_cache_bytes < 2 * 4096 {
            return Err("write_cache_bytes must be at least 8 KiB".into());
        }
        if self.max_entry_bytes == 0 || self.max_entry_bytes > crate::format::MAX_ENTRY_BYTES {
            return Err("max_entry_bytes must be in 1..=64 MiB".into());
        }
        if self.flush_write_bytes < 4096 || self.flush_queue_depth == 0 || self.readers == 0 {
            return Err("flush_write_bytes >= 4096, flush_queue_depth >= 1, readers >= 1".into());
        }
        if self.segment_max_bytes < 1 << 20 {
            return Err("segment_max_bytes must be at least 1 MiB".into());
        }
        let t = self.disk_usage_threshold;
        if !(0.0..=1.0).contains(&t)
            || !(0.0..=t).contains(&self.disk_usage_warn_threshold)
            || !(0.0..=t).contains(&self.disk_usage_lwm_threshold)
        {
            return Err("disk usage thresholds must satisfy warn, lwm <= threshold <= 1".into());
        }
        Ok(())
    }
}

//! Counters, gauges and latency histograms of the entry log, lock-free (atomics), for
//! the bookie to export. Field docs give the stock Java metric name
//! (docs/config.md §3) where one exists; the bookie adds the `bookie_` prefix.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A latency histogram with power-of-two microsecond buckets (bucket i holds values
/// in [2^(i-1), 2^i) µs; bucket 0 holds 0 µs). Recording is one atomic add.
pub struct LatencyHistogram {
    buckets: [AtomicU64; 40],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
        }
    }
}

impl LatencyHistogram {
    /// Records one duration.
    pub fn record(&self, d: Duration) {
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        let idx = (64 - us.leading_zeros() as usize).min(39);
        self.buckets[idx].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }
    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
    /// Sum of recorded values in microseconds.
    pub fn sum_us(&self) -> u64 {
        self.sum_us.load(Ordering::Relaxed)
    }
    /// Upper bound (µs) of the bucket holding quantile `q` (0..=1); 0 when empty.
    pub fn quantile_us(&self, q: f64) -> u64 {
        let total = self.count();
        if total == 0 {
            return 0;
        }
        let target = ((total as f64) * q.clamp(0.0, 1.0)).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= target {
                return if i == 0 { 0 } else { 1u64 << i };
            }
        }
        1u64 << 39
    }
}

/// Usage of one ledger directory at the last disk check.
#[derive(Clone, Debug, PartialEq)]
pub struct DirUsage {
    pub path: std::path::PathBuf,
    /// Used fraction, 0..=1 (`bookie_ledger_dir_<path>_usage`, as a percentage there).
    pub used_fraction: f64,
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub state: crate::disk_usage::DirState,
}

/// All metrics of one entry log.
#[derive(Default)]
pub struct EntryLogMetrics {
    /// `write_cache_size`: bytes in both write-cache halves.
    pub write_cache_size: AtomicU64,
    /// `write_cache_count`: entries in both write-cache halves.
    pub write_cache_count: AtomicU64,
    /// `write_cache_max_size`.
    pub write_cache_max_size: AtomicU64,
    /// `write_cache_hits` / `write_cache_misses` (reads answered from the write cache).
    pub write_cache_hits: AtomicU64,
    pub write_cache_misses: AtomicU64,
    /// `read_cache_hits` / `read_cache_misses`.
    pub read_cache_hits: AtomicU64,
    pub read_cache_misses: AtomicU64,
    /// `read_cache_size` / `read_cache_count`.
    pub read_cache_size: AtomicU64,
    pub read_cache_count: AtomicU64,
    /// `readahead_batch_count` (batches) and entries read ahead in total.
    pub readahead_batch_count: AtomicU64,
    pub readahead_entries: AtomicU64,
    /// `readahead_batch_size`: bytes of the entries read ahead, in total (one event per
    /// batch, counted in `readahead_batch_count`).
    pub readahead_bytes: AtomicU64,
    /// `readahead_time`: nanoseconds spent reading read-ahead batches from disk and
    /// caching them, in total (Java: a counter of milliseconds).
    pub readahead_time_ns: AtomicU64,
    /// `readahead_max_batch_size`: the configured entries per read-ahead
    /// (`dbStorage_readAheadCacheBatchSize`).
    pub readahead_max_batch_size: AtomicU64,
    /// `add_entry`: time of each successful add into the write cache, a throttled
    /// wait for space included (as Java's `addEntry`; failures are not recorded).
    pub add_entry_latency: LatencyHistogram,
    /// `throttled_write_requests`: adds that had to wait for cache space.
    pub throttled_write_requests: AtomicU64,
    /// `throttled_write`: how long such an add waited, until it was inserted
    /// (success) or refused (failure: the throttle time ran out, or the log turned
    /// out of space or the ledger was deleted while it waited).
    pub throttled_write_latency: LatencyHistogram,
    pub throttled_write_failed_latency: LatencyHistogram,
    /// `rejected_write_requests`: adds rejected after the throttle time.
    pub rejected_write_requests: AtomicU64,
    /// `flush`: latency of write-cache flushes (segment + index + ledger state).
    pub flush_latency: LatencyHistogram,
    /// Successful and failed flushes.
    pub flush_count: AtomicU64,
    pub flush_failures: AtomicU64,
    /// `flush_size`: bytes of entries written by flushes, in total.
    pub flush_bytes: AtomicU64,
    /// `read_entry`: latency of `get_entry` calls that went to disk.
    pub read_entry_latency: LatencyHistogram,
    /// `DELETED_LEDGER_TOTAL`.
    pub deleted_ledger_total: AtomicU64,
    /// `RECLAIMED_DELETION_SPACE_BYTES`: segment bytes freed by deleting segments
    /// whose ledgers were all deleted.
    pub reclaimed_deletion_space_bytes: AtomicU64,
    /// `RECLAIM_FAILED_TO_DELETE`: failed removals of segment files that hold nothing
    /// live (dead after GC, or replaced by compaction); each failed attempt counts,
    /// and the file is retried at the next GC or compaction round.
    pub reclaim_failed_to_delete: AtomicU64,
    /// `RECLAIMED_COMPACTION_SPACE_BYTES`: bytes freed by compaction.
    pub reclaimed_compaction_space_bytes: AtomicU64,
    /// `MAJOR_COMPACTION_TOTAL` (we have one threshold: every compacted segment counts).
    pub compaction_total: AtomicU64,
    /// Bytes copied by compaction so far (progress).
    pub compaction_bytes_copied: AtomicU64,
    /// `ACTIVE_ENTRY_LOG_TOTAL`: segment files.
    pub active_segments: AtomicU64,
    /// `ENTRY_LOG_SPACE_BYTES`: bytes of all segment files.
    pub segment_space_bytes: AtomicU64,
    /// `ACTIVE_LEDGER_TOTAL` / `ledgers_count`.
    pub active_ledgers: AtomicU64,
    /// `entries_count`: entry locations in the index (flushed entries; a copy that
    /// compaction has not yet dropped counts twice, as in Java's location index).
    pub entries_count: AtomicU64,
    /// Not stock (`bookie_rs_entrylog_corrupt_entries`): corrupt entries detected by
    /// reads, each stored copy counted once (`corruption_report`).
    pub corrupt_entries: AtomicU64,
    /// Not stock (`bookie_rs_entrylog_corrupt_segment_indexes`): segments whose trailer or
    /// footer was found corrupt after start-up (by the scrubber), each counted once.
    pub corrupt_segment_indexes: AtomicU64,
    /// Scrub passes completed (`bookie_rs_scrub_passes`).
    pub scrub_passes: AtomicU64,
    /// Bytes and entries read and checked by scrubs (`bookie_rs_scrub_bytes`, `_entries`).
    pub scrub_bytes: AtomicU64,
    pub scrub_entries: AtomicU64,
    /// Corruptions found by scrubs, every pass counting what it finds (stock
    /// `scrubber_detectedScrubErrors`).
    pub scrub_findings: AtomicU64,
    /// Segments a scrub could not read (I/O errors; stock
    /// `scrubber_detectedFatalScrubErrors`, which Java counts once per failed pass).
    pub scrub_read_errors: AtomicU64,
    /// When the last scrub pass completed, ms since the Unix epoch; 0 before the first
    /// (`bookie_rs_scrub_last_completed_timestamp_seconds`).
    pub scrub_last_completed_unix_ms: AtomicU64,
}

impl EntryLogMetrics {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
    pub(crate) fn set(c: &AtomicU64, n: u64) {
        c.store(n, Ordering::Relaxed);
    }
    /// Reads a counter (convenience for exporters and tests).
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

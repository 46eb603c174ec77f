//! Metrics of one journal directory, for the bookie to export. Each field names the
//! stock Java metric it corresponds to (docs/config.md §3; scope
//! `bookie_journal_`, label `journalIndex`).
//!
//! Invariants: counters only grow; histograms are recorded by the committer thread
//! (once per group, plus once per acknowledged append) and read by the exporter
//! through [`JournalMetrics::snapshot`]; a lock is held only to record or copy.

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

fn hist() -> Mutex<Histogram<u64>> {
    // 1 .. 3.6e9 (µs: one hour), 3 significant digits: constant, valid bounds.
    Mutex::new(Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant histogram bounds"))
}

/// Counters and histograms of one journal directory.
pub struct JournalMetrics {
    /// Append latency in µs, from admission to acknowledgement (success only).
    /// Stock: `bookie_journal_JOURNAL_ADD_ENTRY`.
    pub append_latency_us: Mutex<Histogram<u64>>,
    /// Time in µs an append waited in the committer's queue, from admission until the
    /// committer thread took it into a group. Stock: `bookie_journal_JOURNAL_QUEUE_LATENCY`.
    pub queue_latency_us: Mutex<Histogram<u64>>,
    /// Latency of one group write+fdatasync in µs (one linked operation).
    /// Stock: `bookie_journal_JOURNAL_SYNC` (write and sync are not separated here).
    pub sync_latency_us: Mutex<Histogram<u64>>,
    /// Records per group. Stock: `bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES`.
    pub group_records: Mutex<Histogram<u64>>,
    /// Bytes (records, without padding) per group.
    /// Stock: `bookie_journal_JOURNAL_FORCE_WRITE_BATCH_BYTES`.
    pub group_bytes: Mutex<Histogram<u64>>,
    /// Appends admitted and not yet acknowledged (gauge).
    /// Stock: `bookie_journal_JOURNAL_QUEUE_SIZE`.
    pub queue_depth: AtomicU64,
    /// Bytes admitted and not yet acknowledged (gauge).
    /// Stock: `bookie_journal_JOURNAL_MEMORY_USED`.
    pub memory_used_bytes: AtomicU64,
    /// Groups submitted (write+fdatasync) and not completed: 0 or 1, one group is in
    /// flight at a time. Stock: `bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE`.
    pub force_write_queue: AtomicU64,
    /// Bytes written to segment files by group writes, padding included.
    /// Stock: `bookie_journal_JOURNAL_WRITE_BYTES`.
    pub bytes_written: AtomicU64,
    /// Groups written (= fdatasyncs issued by group commit).
    pub groups: AtomicU64,
    /// Barriers (force-ledger) acknowledged.
    pub barriers: AtomicU64,
    /// Barrier (force-ledger) latency in µs, from admission to acknowledgement (success
    /// only). Stock: `bookie_journal_JOURNAL_FORCE_LEDGER`.
    pub force_ledger_latency_us: Mutex<Histogram<u64>>,
    /// Time in µs the committer spent getting the next segment ready when a group
    /// starts one (the first group after open, and every switch): waiting for a spare
    /// operation, finishing the spare, then renaming a free segment or creating a
    /// preallocated one, syncing the directory, opening it (success only).
    /// Stock: `bookie_journal_JOURNAL_CREATION_LATENCY` (Java: creating its next
    /// journal file).
    pub segment_creation_latency_us: Mutex<Histogram<u64>>,
    /// Records acknowledged successfully.
    pub records_acked: AtomicU64,
    /// Segment files created (zero-filled) and recycled.
    pub segments_created: AtomicU64,
    pub segments_recycled: AtomicU64,
    /// Checkpoints persisted.
    pub checkpoints: AtomicU64,
}

impl Default for JournalMetrics {
    fn default() -> Self {
        JournalMetrics {
            append_latency_us: hist(),
            queue_latency_us: hist(),
            sync_latency_us: hist(),
            group_records: hist(),
            group_bytes: hist(),
            queue_depth: AtomicU64::new(0),
            memory_used_bytes: AtomicU64::new(0),
            force_write_queue: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            groups: AtomicU64::new(0),
            barriers: AtomicU64::new(0),
            force_ledger_latency_us: hist(),
            segment_creation_latency_us: hist(),
            records_acked: AtomicU64::new(0),
            segments_created: AtomicU64::new(0),
            segments_recycled: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
        }
    }
}

/// Percentiles of one histogram.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quantiles {
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

fn quantiles(h: &Mutex<Histogram<u64>>) -> Quantiles {
    let h = h.lock();
    Quantiles {
        count: h.len(),
        mean: h.mean(),
        p50: h.value_at_quantile(0.5),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
    }
}

/// A copy of the metrics at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricsSnapshot {
    pub append_latency_us: Quantiles,
    pub sync_latency_us: Quantiles,
    pub group_records: Quantiles,
    pub group_bytes: Quantiles,
    pub queue_depth: u64,
    pub memory_used_bytes: u64,
    pub bytes_written: u64,
    pub groups: u64,
    pub barriers: u64,
    pub records_acked: u64,
    pub segments_created: u64,
    pub segments_recycled: u64,
    pub checkpoints: u64,
}

impl JournalMetrics {
    pub(crate) fn record_us(h: &Mutex<Histogram<u64>>, d: Duration) {
        let us = (d.as_micros() as u64).max(1);
        let _ = h.lock().record(us.min(3_600_000_000));
    }

    pub(crate) fn record_value(h: &Mutex<Histogram<u64>>, v: u64) {
        let _ = h.lock().record(v.clamp(1, 3_600_000_000));
    }

    pub fn snapshot(&self) -> MetricsSnapshot {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        MetricsSnapshot {
            append_latency_us: quantiles(&self.append_latency_us),
            sync_latency_us: quantiles(&self.sync_latency_us),
            group_records: quantiles(&self.group_records),
            group_bytes: quantiles(&self.group_bytes),
            queue_depth: l(&self.queue_depth),
            memory_used_bytes: l(&self.memory_used_bytes),
            bytes_written: l(&self.bytes_written),
            groups: l(&self.groups),
            barriers: l(&self.barriers),
            records_acked: l(&self.records_acked),
            segments_created: l(&self.segments_created),
            segments_recycled: l(&self.segments_recycled),
            checkpoints: l(&self.checkpoints),
        }
    }

    /// Clears the histograms (benchmarks use this between phases).
    pub fn reset_histograms(&self) {
        self.append_latency_us.lock().reset();
        self.sync_latency_us.lock().reset();
        self.group_records.lock().reset();
        self.group_bytes.lock().reset();
        self.segment_creation_latency_us.lock().reset();
    }
}

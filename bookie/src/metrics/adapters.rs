//! Collectors that export the journal's and the entry log's own metrics structs under the stock
//! Java names (docs/config.md §3). Register them once at start-up:
//! `metrics.add_collector(journal_collector(journal_metrics, 0))`.
//!
//! Difference from Java (recorded decision): these crates keep cumulative histograms, so their
//! quantiles cover the bookie's lifetime, not the last 60 s window; counts and sums are exact.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bk_entrylog::{DirUsage, EntryLogMetrics, LatencyHistogram};
use bk_journal::JournalMetrics;

use super::{sanitize_name, OutcomeSnapshot, Scrape, SummarySnapshot, QUANTILES};

fn no_failures() -> OutcomeSnapshot {
    OutcomeSnapshot {
        count: 0,
        sum: 0.0,
        quantiles: [f64::NAN; 7],
    }
}

/// Summary from one of the journal's HDR histograms (`Mutex<Histogram<u64>>`); `$scale`
/// divides values (1000: µs -> ms). A macro so the histogram type is inferred, not named
/// (no direct dependency on `hdrhistogram`).
macro_rules! hdr_summary {
    ($h:expr, $scale:expr) => {{
        let h = $h.lock();
        let count = h.len();
        let scale: f64 = $scale;
        let quantiles = if count == 0 {
            [f64::NAN; 7]
        } else {
            QUANTILES.map(|q| {
                if q >= 1.0 {
                    h.max() as f64 / scale
                } else {
                    h.value_at_quantile(q) as f64 / scale
                }
            })
        };
        let sum = h.mean() * count as f64 / scale;
        SummarySnapshot {
            success: OutcomeSnapshot {
                count,
                sum,
                quantiles,
            },
            failure: no_failures(),
        }
    }};
}

fn latency_summary(h: &LatencyHistogram, failures: u64) -> SummarySnapshot {
    let count = h.count();
    let quantiles = if count == 0 {
        [f64::NAN; 7]
    } else {
        QUANTILES.map(|q| h.quantile_us(q) as f64 / 1000.0)
    };
    let failure = OutcomeSnapshot {
        count: failures,
        sum: f64::NAN,
        quantiles: [f64::NAN; 7],
    };
    SummarySnapshot {
        success: OutcomeSnapshot {
            count,
            sum: h.sum_us() as f64 / 1000.0,
            quantiles,
        },
        failure: if failures == 0 {
            no_failures()
        } else {
            failure
        },
    }
}

/// Exports one journal directory's metrics with label `journalIndex`.
pub fn journal_collector(
    m: Arc<JournalMetrics>,
    journal_index: usize,
) -> impl Fn(&mut Scrape) + Send + Sync {
    let idx = journal_index.to_string();
    move |s: &mut Scrape| {
        let l = [("journalIndex", idx.as_str())];
        s.summary(
            "bookie_journal_JOURNAL_ADD_ENTRY",
            &l,
            &hdr_summary!(m.append_latency_us, 1000.0),
        );
        s.summary(
            "bookie_journal_JOURNAL_SYNC",
            &l,
            &hdr_summary!(m.sync_latency_us, 1000.0),
        );
        s.summary(
            "bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES",
            &l,
            &hdr_summary!(m.group_records, 1.0),
        );
        s.summary(
            "bookie_journal_JOURNAL_FORCE_WRITE_BATCH_BYTES",
            &l,
            &hdr_summary!(m.group_bytes, 1.0),
        );
        // Java's JOURNAL_QUEUE_SIZE is a counter that goes up and down; keep its type.
        s.counter(
            "bookie_journal_JOURNAL_QUEUE_SIZE",
            &l,
            m.queue_depth.load(Ordering::Relaxed),
        );
        s.counter(
            "bookie_journal_JOURNAL_WRITE_BYTES",
            &l,
            m.bytes_written.load(Ordering::Relaxed),
        );
        s.gauge(
            "bookie_journal_JOURNAL_MEMORY_USED",
            &l,
            m.memory_used_bytes.load(Ordering::Relaxed) as f64,
        );
    }
}

/// Exports the entry log's metrics (DbLedgerStorage and GC names).
pub fn entrylog_collector(m: Arc<EntryLogMetrics>) -> impl Fn(&mut Scrape) + Send + Sync {
    move |s: &mut Scrape| {
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        s.gauge(
            "bookie_write_cache_size",
            &[],
            g(&m.write_cache_size) as f64,
        );
        s.gauge(
            "bookie_write_cache_count",
            &[],
            g(&m.write_cache_count) as f64,
        );
        s.gauge(
            "bookie_write_cache_max_size",
            &[],
            g(&m.write_cache_max_size) as f64,
        );
        s.gauge("bookie_read_cache_size", &[], g(&m.read_cache_size) as f64);
        s.gauge(
            "bookie_read_cache_count",
            &[],
            g(&m.read_cache_count) as f64,
        );
        s.counter("bookie_write_cache_hits", &[], g(&m.write_cache_hits));
        s.counter("bookie_write_cache_misses", &[], g(&m.write_cache_misses));
        s.counter("bookie_read_cache_hits", &[], g(&m.read_cache_hits));
        s.counter("bookie_read_cache_misses", &[], g(&m.read_cache_misses));
        s.counter(
            "bookie_throttled_write_requests",
            &[],
            g(&m.throttled_write_requests),
        );
        s.counter(
            "bookie_rejected_write_requests",
            &[],
            g(&m.rejected_write_requests),
        );
        s.summary(
            "bookie_flush",
            &[],
            &latency_summary(&m.flush_latency, g(&m.flush_failures)),
        );
        s.summary(
            "bookie_read_entry",
            &[],
            &latency_summary(&m.read_entry_latency, 0),
        );
        s.counter(
            "bookie_DELETED_LEDGER_TOTAL",
            &[],
            g(&m.deleted_ledger_total),
        );
        s.counter(
            "bookie_RECLAIMED_DELETION_SPACE_BYTES",
            &[],
            g(&m.reclaimed_deletion_space_bytes),
        );
        s.counter(
            "bookie_RECLAIMED_COMPACTION_SPACE_BYTES",
            &[],
            g(&m.reclaimed_compaction_space_bytes),
        );
        s.counter("bookie_MAJOR_COMPACTION_TOTAL", &[], g(&m.compaction_total));
        s.counter(
            "bookie_rs_entrylog_corrupt_entries",
            &[],
            g(&m.corrupt_entries),
        );
        s.gauge(
            "bookie_ACTIVE_ENTRY_LOG_TOTAL",
            &[],
            g(&m.active_segments) as f64,
        );
        s.gauge(
            "bookie_ENTRY_LOG_SPACE_BYTES",
            &[],
            g(&m.segment_space_bytes) as f64,
        );
        s.gauge(
            "bookie_ACTIVE_LEDGER_TOTAL",
            &[],
            g(&m.active_ledgers) as f64,
        );
        s.gauge("bookie_ledgers_count", &[], g(&m.active_ledgers) as f64);
    }
}

/// Ledger directory usage gauges: `bookie_ledger_dir_<path with / -> _>_usage` (percent),
/// `bookie_ledger_writable_dirs`, `bookie_ledger_num_dirs`. `usage` is read at scrape time.
pub fn ledger_dirs_collector(
    usage: impl Fn() -> Vec<DirUsage> + Send + Sync + 'static,
) -> impl Fn(&mut Scrape) + Send + Sync {
    move |s: &mut Scrape| {
        let dirs = usage();
        let writable = dirs
            .iter()
            .filter(|d| d.state != bk_entrylog::DirState::Full)
            .count();
        s.gauge("bookie_ledger_num_dirs", &[], dirs.len() as f64);
        s.gauge("bookie_ledger_writable_dirs", &[], writable as f64);
        for d in &dirs {
            let name = sanitize_name(&format!("bookie_ledger_dir_{}_usage", d.path.display()));
            s.gauge(
                &name,
                &[],
                (d.used_fraction * 100.0 * 1000.0).round() / 1000.0,
            );
        }
    }
}

/// The memory bound and its parts (docs/memory.md §1, ours): `bookie_rs_memory_bound_bytes`
/// (the formula's total), `bookie_rs_memory_part_bound_bytes{part}` (each configured part),
/// `bookie_rs_memory_part_used_bytes{part}` (what the part holds now; the fixed overhead
/// has none), `bookie_rs_memory_receive_buffer_bytes` (of the in-flight part, partial
/// frames) and `bookie_rs_memory_peak_rss_bytes` (the process's VmHWM). `usage` is read
/// at scrape time.
pub fn memory_collector(
    bound: crate::memory::MemoryBound,
    usage: impl Fn() -> crate::memory::MemoryUse + Send + Sync + 'static,
) -> impl Fn(&mut Scrape) + Send + Sync {
    use crate::memory::Part;
    move |s: &mut Scrape| {
        let now = usage();
        s.gauge("bookie_rs_memory_bound_bytes", &[], bound.total() as f64);
        for p in Part::ALL {
            s.gauge(
                "bookie_rs_memory_part_bound_bytes",
                &[("part", p.label())],
                bound.part(p) as f64,
            );
        }
        for p in Part::ALL {
            if let Some(used) = now.part(p) {
                s.gauge(
                    "bookie_rs_memory_part_used_bytes",
                    &[("part", p.label())],
                    used as f64,
                );
            }
        }
        s.gauge(
            "bookie_rs_memory_receive_buffer_bytes",
            &[],
            now.receive_buffers as f64,
        );
        s.gauge(
            "bookie_rs_memory_peak_rss_bytes",
            &[],
            crate::memory::peak_rss_bytes() as f64,
        );
    }
}

//! Collectors that export the journal's and the entry log's own metrics structs under the stock
//! Java names (docs/metrics.md §2). Register them once at start-up:
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

fn latency_outcome(h: &LatencyHistogram) -> OutcomeSnapshot {
    let count = h.count();
    OutcomeSnapshot {
        count,
        sum: h.sum_us() as f64 / 1000.0,
        quantiles: if count == 0 {
            [f64::NAN; 7]
        } else {
            QUANTILES.map(|q| h.quantile_us(q) as f64 / 1000.0)
        },
    }
}

/// An op stat whose successes and failures are each a latency histogram.
fn outcomes_summary(ok: &LatencyHistogram, failed: &LatencyHistogram) -> SummarySnapshot {
    SummarySnapshot {
        success: latency_outcome(ok),
        failure: latency_outcome(failed),
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
            "bookie_journal_JOURNAL_QUEUE_LATENCY",
            &l,
            &hdr_summary!(m.queue_latency_us, 1000.0),
        );
        s.summary(
            "bookie_journal_JOURNAL_FORCE_LEDGER",
            &l,
            &hdr_summary!(m.force_ledger_latency_us, 1000.0),
        );
        s.summary(
            "bookie_journal_JOURNAL_SYNC",
            &l,
            &hdr_summary!(m.sync_latency_us, 1000.0),
        );
        s.summary(
            "bookie_journal_JOURNAL_CREATION_LATENCY",
            &l,
            &hdr_summary!(m.segment_creation_latency_us, 1000.0),
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
        // As Java's: a counter incremented on enqueue and decremented when forced.
        s.counter(
            "bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE",
            &l,
            m.force_write_queue.load(Ordering::Relaxed),
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

/// `bookie_journal_JOURNAL_MEMORY_MAX{journalIndex}`: the bytes each journal directory
/// admits before appends wait (`journalMaxMemorySizeMb`), as Java's gauge.
pub fn journal_memory_max_collector(
    journals: usize,
    max_bytes: usize,
) -> impl Fn(&mut Scrape) + Send + Sync {
    move |s: &mut Scrape| {
        for i in 0..journals {
            let idx = i.to_string();
            s.gauge(
                "bookie_journal_JOURNAL_MEMORY_MAX",
                &[("journalIndex", idx.as_str())],
                max_bytes as f64,
            );
        }
    }
}

/// Where the entry log's metrics are read from at scrape time: a shared struct (tests),
/// or the running storage (it may be closed: then nothing is exported).
pub trait EntryLogSource: Send + Sync + 'static {
    /// Calls `f` with the metrics if they are there.
    fn visit(&self, f: &mut dyn FnMut(&EntryLogMetrics));
}

impl EntryLogSource for Arc<EntryLogMetrics> {
    fn visit(&self, f: &mut dyn FnMut(&EntryLogMetrics)) {
        f(self)
    }
}

/// Exports the entry log's metrics under the DbLedgerStorage and GC names
/// (docs/metrics.md §2). The DbLedgerStorage series carry Java's `ledgerDir` and
/// `indexDir` labels: Java has one series per directory, we have one entry log over all
/// of them, so the labels hold the `current` directories joined by `,` (exactly Java's
/// value with one ledger directory).
pub fn entrylog_collector(
    source: impl EntryLogSource,
    ledger_dirs: &[std::path::PathBuf],
) -> impl Fn(&mut Scrape) + Send + Sync {
    let dirs = ledger_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(",");
    move |s: &mut Scrape| {
        source.visit(&mut |m| entrylog_samples(s, m, &dirs));
    }
}

/// A value stat known only by its totals (count of events, sum of values): no
/// quantiles (NaN), as Java reports an empty window.
fn totals_summary(count: u64, sum: u64) -> SummarySnapshot {
    SummarySnapshot {
        success: OutcomeSnapshot {
            count,
            sum: sum as f64,
            quantiles: [f64::NAN; 7],
        },
        failure: no_failures(),
    }
}

fn entrylog_samples(s: &mut Scrape, m: &EntryLogMetrics, dirs: &str) {
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let l = [("ledgerDir", dirs), ("indexDir", dirs)];
    s.gauge("bookie_write_cache_size", &l, g(&m.write_cache_size) as f64);
    s.gauge(
        "bookie_write_cache_count",
        &l,
        g(&m.write_cache_count) as f64,
    );
    // DbLedgerStorage's own gauge, not per directory: no labels, as Java's.
    s.gauge(
        "bookie_write_cache_max_size",
        &[],
        g(&m.write_cache_max_size) as f64,
    );
    s.gauge("bookie_read_cache_size", &l, g(&m.read_cache_size) as f64);
    s.gauge("bookie_read_cache_count", &l, g(&m.read_cache_count) as f64);
    s.counter("bookie_write_cache_hits", &l, g(&m.write_cache_hits));
    s.counter("bookie_write_cache_misses", &l, g(&m.write_cache_misses));
    s.counter("bookie_read_cache_hits", &l, g(&m.read_cache_hits));
    s.counter("bookie_read_cache_misses", &l, g(&m.read_cache_misses));
    s.counter(
        "bookie_throttled_write_requests",
        &l,
        g(&m.throttled_write_requests),
    );
    s.counter(
        "bookie_rejected_write_requests",
        &l,
        g(&m.rejected_write_requests),
    );
    s.summary(
        "bookie_add_entry",
        &l,
        &latency_summary(&m.add_entry_latency, 0),
    );
    s.summary(
        "bookie_throttled_write",
        &l,
        &outcomes_summary(
            &m.throttled_write_latency,
            &m.throttled_write_failed_latency,
        ),
    );
    s.summary(
        "bookie_flush",
        &l,
        &latency_summary(&m.flush_latency, g(&m.flush_failures)),
    );
    s.summary(
        "bookie_read_entry",
        &l,
        &latency_summary(&m.read_entry_latency, 0),
    );
    // Value stats: per flush its bytes, per read-ahead its entries.
    s.summary(
        "bookie_flush_size",
        &l,
        &totals_summary(g(&m.flush_count), g(&m.flush_bytes)),
    );
    s.summary(
        "bookie_readahead_batch_count",
        &l,
        &totals_summary(g(&m.readahead_batch_count), g(&m.readahead_entries)),
    );
    s.summary(
        "bookie_readahead_batch_size",
        &l,
        &totals_summary(g(&m.readahead_batch_count), g(&m.readahead_bytes)),
    );
    // Java's is a counter of milliseconds (each read-ahead's time truncated to whole
    // ms before it is added); ours adds exact time, so it may be fractional.
    s.counter_f64(
        "bookie_readahead_time",
        &l,
        g(&m.readahead_time_ns) as f64 / 1e6,
    );
    // As `write_cache_max_size`.
    s.gauge(
        "bookie_readahead_max_batch_size",
        &[],
        g(&m.readahead_max_batch_size) as f64,
    );
    s.gauge("bookie_ledgers_count", &l, g(&m.active_ledgers) as f64);
    s.gauge("bookie_entries_count", &l, g(&m.entries_count) as f64);
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
        "bookie_RECLAIM_FAILED_TO_DELETE",
        &[],
        g(&m.reclaim_failed_to_delete),
    );
    s.counter(
        "bookie_RECLAIMED_COMPACTION_SPACE_BYTES",
        &[],
        g(&m.reclaimed_compaction_space_bytes),
    );
    s.counter("bookie_rs_compacted_segments", &[], g(&m.compaction_total));
    s.counter(
        "bookie_rs_entrylog_corrupt_entries",
        &[],
        g(&m.corrupt_entries),
    );
    s.counter(
        "bookie_rs_entrylog_corrupt_segment_indexes",
        &[],
        g(&m.corrupt_segment_indexes),
    );
    // The scrubber (bookie/src/scrubber.rs): Java's two ScrubberStats counters, and ours.
    s.counter("scrubber_detectedScrubErrors", &[], g(&m.scrub_findings));
    s.counter(
        "scrubber_detectedFatalScrubErrors",
        &[],
        g(&m.scrub_read_errors),
    );
    s.counter("bookie_rs_scrub_passes", &[], g(&m.scrub_passes));
    s.counter("bookie_rs_scrub_bytes", &[], g(&m.scrub_bytes));
    s.counter("bookie_rs_scrub_entries", &[], g(&m.scrub_entries));
    s.gauge(
        "bookie_rs_scrub_last_completed_timestamp_seconds",
        &[],
        g(&m.scrub_last_completed_unix_ms) as f64 / 1000.0,
    );
    s.gauge(
        "bookie_ACTIVE_ENTRY_LOG_TOTAL",
        &[],
        g(&m.active_segments) as f64,
    );
    s.gauge(
        "bookie_ACTIVE_ENTRY_LOG_SPACE_BYTES",
        &[],
        g(&m.segment_space_bytes) as f64,
    );
    s.gauge(
        "bookie_ACTIVE_LEDGER_TOTAL",
        &[],
        g(&m.active_ledgers) as f64,
    );
}

/// Ledger directory usage gauges as Java's `LedgerDirsManager` names them:
/// `bookie_ledger_dir_<ledger directory, / -> _>_usage` (percent used; the directory is
/// the configured one, the parent of its `current`), `bookie_ledger_writable_dirs`
/// (directories not full), `bookie_ledger_num_dirs`. `usage` is read at scrape time; when
/// it fails (storage closed) nothing is exported.
pub fn ledger_dirs_collector(
    usage: impl Fn() -> Option<Vec<DirUsage>> + Send + Sync + 'static,
) -> impl Fn(&mut Scrape) + Send + Sync {
    move |s: &mut Scrape| {
        let Some(dirs) = usage() else {
            return;
        };
        let writable = dirs
            .iter()
            .filter(|d| d.state != bk_entrylog::DirState::Full)
            .count();
        s.gauge("bookie_ledger_num_dirs", &[], dirs.len() as f64);
        s.gauge("bookie_ledger_writable_dirs", &[], writable as f64);
        for d in &dirs {
            let configured = match d.path.file_name() {
                Some(n) if n == crate::config::mapping::CURRENT_DIR => {
                    d.path.parent().unwrap_or(&d.path)
                }
                _ => &d.path,
            };
            let name = sanitize_name(&format!("bookie_ledger_dir_{}_usage", configured.display()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    #[test]
    fn entry_log_series_carry_java_names_and_dir_labels() {
        let m = Arc::new(EntryLogMetrics::default());
        m.entries_count.store(228_350, Ordering::Relaxed);
        m.active_ledgers.store(7, Ordering::Relaxed);
        m.read_cache_hits.store(5, Ordering::Relaxed);
        m.segment_space_bytes.store(4096, Ordering::Relaxed);
        m.readahead_batch_count.store(3, Ordering::Relaxed);
        m.readahead_entries.store(297, Ordering::Relaxed);
        let c = entrylog_collector(m, &[PathBuf::from("/d/ledgers/current")]);
        let mut s = Scrape::default();
        c(&mut s);
        let text = s.finish();
        let l = "{ledgerDir=\"/d/ledgers/current\",indexDir=\"/d/ledgers/current\"}";
        for line in [
            format!("# TYPE bookie_entries_count gauge\nbookie_entries_count{l} 228350\n"),
            format!("# TYPE bookie_ledgers_count gauge\nbookie_ledgers_count{l} 7\n"),
            format!("# TYPE bookie_read_cache_hits counter\nbookie_read_cache_hits{l} 5\n"),
            format!("bookie_write_cache_size{l} 0\n"),
            "bookie_write_cache_max_size 0\n".to_string(),
            "bookie_ACTIVE_ENTRY_LOG_SPACE_BYTES 4096\n".to_string(),
            "# TYPE bookie_DELETED_LEDGER_TOTAL counter\n".to_string(),
            format!(
                "bookie_readahead_batch_count_count{{success=\"true\",{}}} 3\n",
                &l[1..l.len() - 1]
            ),
            format!(
                "bookie_readahead_batch_count_sum{{success=\"true\",{}}} 297.0\n",
                &l[1..l.len() - 1]
            ),
            "# TYPE bookie_flush_size summary\n".to_string(),
        ] {
            assert!(text.contains(&line), "missing {line:?} in\n{text}");
        }
        assert!(
            !text.contains("bookie_ENTRY_LOG_SPACE_BYTES"),
            "not a 4.17 name"
        );
    }

    #[test]
    fn storage_series_of_adds_throttles_read_ahead_and_failed_removals() {
        let m = Arc::new(EntryLogMetrics::default());
        m.add_entry_latency.record(Duration::from_micros(300));
        m.throttled_write_latency.record(Duration::from_millis(4));
        m.throttled_write_failed_latency
            .record(Duration::from_millis(10));
        m.readahead_batch_count.store(2, Ordering::Relaxed);
        m.readahead_bytes.store(8192, Ordering::Relaxed);
        m.readahead_time_ns.store(1_500_000, Ordering::Relaxed);
        m.readahead_max_batch_size.store(100, Ordering::Relaxed);
        m.reclaim_failed_to_delete.store(3, Ordering::Relaxed);
        let mut s = Scrape::default();
        entrylog_collector(m, &[PathBuf::from("/d/current")])(&mut s);
        let text = s.finish();
        let l = "ledgerDir=\"/d/current\",indexDir=\"/d/current\"";
        for line in [
            "# TYPE bookie_add_entry summary\n".to_string(),
            format!("bookie_add_entry_count{{success=\"true\",{l}}} 1\n"),
            format!("bookie_throttled_write_count{{success=\"true\",{l}}} 1\n"),
            format!("bookie_throttled_write_count{{success=\"false\",{l}}} 1\n"),
            format!("bookie_throttled_write_sum{{success=\"false\",{l}}} 10.0\n"),
            format!("bookie_readahead_batch_size_count{{success=\"true\",{l}}} 2\n"),
            format!("bookie_readahead_batch_size_sum{{success=\"true\",{l}}} 8192.0\n"),
            format!("# TYPE bookie_readahead_time counter\nbookie_readahead_time{{{l}}} 1.5\n"),
            "# TYPE bookie_readahead_max_batch_size gauge\nbookie_readahead_max_batch_size 100\n"
                .to_string(),
            "# TYPE bookie_RECLAIM_FAILED_TO_DELETE counter\nbookie_RECLAIM_FAILED_TO_DELETE 3\n"
                .to_string(),
        ] {
            assert!(text.contains(&line), "missing {line:?} in\n{text}");
        }
        let j = Arc::new(JournalMetrics::default());
        let _ = j.segment_creation_latency_us.lock().record(2000);
        let mut s = Scrape::default();
        journal_collector(j, 0)(&mut s);
        let text = s.finish();
        assert!(
            text.contains("bookie_journal_JOURNAL_CREATION_LATENCY_count{success=\"true\",journalIndex=\"0\"} 1\n"),
            "{text}"
        );
    }

    #[test]
    fn dir_usage_gauges_are_named_after_the_configured_dir() {
        let dir = |p: &str, used: f64, state| DirUsage {
            path: PathBuf::from(p),
            used_fraction: used,
            total_bytes: 100,
            free_bytes: 0,
            state,
        };
        let c = ledger_dirs_collector(move || {
            Some(vec![
                dir(
                    "/var/tmp/ops-eval/java2/ledgers/current",
                    0.71234,
                    bk_entrylog::DirState::Ok,
                ),
                dir("/data/b/current", 0.99, bk_entrylog::DirState::Full),
            ])
        });
        let mut s = Scrape::default();
        c(&mut s);
        let text = s.finish();
        // The name the stock 4.17 bookie exported for the first directory.
        assert!(
            text.contains("bookie_ledger_dir__var_tmp_ops_eval_java2_ledgers_usage 71.234\n"),
            "{text}"
        );
        assert!(
            text.contains("bookie_ledger_dir__data_b_usage 99\n"),
            "{text}"
        );
        assert!(text.contains("bookie_ledger_writable_dirs 1\n"));
        assert!(text.contains("bookie_ledger_num_dirs 2\n"));
        let mut s = Scrape::default();
        ledger_dirs_collector(|| None)(&mut s);
        assert_eq!(s.finish(), "", "nothing once storage is closed");
    }

    #[test]
    fn journal_force_write_queue_and_memory_max() {
        let m = Arc::new(JournalMetrics::default());
        m.force_write_queue.store(1, Ordering::Relaxed);
        let mut s = Scrape::default();
        journal_collector(m, 0)(&mut s);
        journal_memory_max_collector(2, 64 << 20)(&mut s);
        let text = s.finish();
        assert!(text.contains("# TYPE bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE counter\nbookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE{journalIndex=\"0\"} 1\n"), "{text}");
        assert!(text.contains("bookie_journal_JOURNAL_MEMORY_MAX{journalIndex=\"1\"} 67108864\n"));
    }
}

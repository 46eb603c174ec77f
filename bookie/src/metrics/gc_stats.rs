//! The garbage collector's own stock series (Java's `GarbageCollectorStats`), recorded by
//! the GC loop (`gc.rs`) and exported with the other metrics (docs/metrics.md §2):
//! `bookie_MAJOR_COMPACTION_TOTAL` / `bookie_MINOR_COMPACTION_TOTAL` (counters: compaction
//! passes of each kind, as Java counts them) and `bookie_THREAD_RUNTIME` (summary: the
//! duration of each GC round, compaction included, in ms).
//!
//! Decision: one process-wide [`GC_STATS`], as Java's stats live in its process-wide
//! provider, so the GC loop needs no handle to the metrics; a process runs one bookie.
//! Recording is atomics only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Instant;

use super::{OpSummary, Scrape};

/// The GC loop's figures (module docs).
pub struct GcStats {
    major: AtomicU64,
    minor: AtomicU64,
    runtime: OpSummary,
}

/// The process's GC figures.
pub static GC_STATS: LazyLock<GcStats> = LazyLock::new(|| GcStats {
    major: AtomicU64::new(0),
    minor: AtomicU64::new(0),
    runtime: OpSummary::new(1000.0),
});

/// Records a GC round's duration into `bookie_THREAD_RUNTIME` when dropped.
pub struct RoundTimer {
    started: Instant,
}

impl Drop for RoundTimer {
    fn drop(&mut self) {
        let us = self.started.elapsed().as_micros().min(u64::MAX as u128) as u64;
        GC_STATS.runtime.record(us, true);
    }
}

impl GcStats {
    /// A compaction pass ran (`major`: the major threshold's).
    pub fn compaction_pass(&self, major: bool) {
        let c = if major { &self.major } else { &self.minor };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Times one GC round until the returned guard drops.
    pub fn time_round(&self) -> RoundTimer {
        RoundTimer {
            started: Instant::now(),
        }
    }

    /// Closes the quantile window (with the other op stats).
    pub fn rotate(&self) {
        self.runtime.rotate();
    }

    /// Adds the samples.
    pub fn collect(&self, s: &mut Scrape) {
        s.counter(
            "bookie_MAJOR_COMPACTION_TOTAL",
            &[],
            self.major.load(Ordering::Relaxed),
        );
        s.counter(
            "bookie_MINOR_COMPACTION_TOTAL",
            &[],
            self.minor.load(Ordering::Relaxed),
        );
        s.summary("bookie_THREAD_RUNTIME", &[], &self.runtime.snapshot());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_and_rounds_are_exported() {
        let stats = GcStats {
            major: AtomicU64::new(0),
            minor: AtomicU64::new(0),
            runtime: OpSummary::new(1000.0),
        };
        stats.compaction_pass(true);
        stats.compaction_pass(false);
        stats.compaction_pass(false);
        stats.runtime.record(2500, true);
        let mut s = Scrape::default();
        stats.collect(&mut s);
        let text = s.finish();
        assert!(
            text.contains(
                "# TYPE bookie_MAJOR_COMPACTION_TOTAL counter\nbookie_MAJOR_COMPACTION_TOTAL 1\n"
            ),
            "{text}"
        );
        assert!(text.contains("bookie_MINOR_COMPACTION_TOTAL 2\n"), "{text}");
        assert!(
            text.contains("bookie_THREAD_RUNTIME_count{success=\"true\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("bookie_THREAD_RUNTIME_sum{success=\"true\"} 2.5\n"),
            "{text}"
        );
        // The process-wide one times rounds.
        let before = GC_STATS.runtime.snapshot().success.count;
        drop(GC_STATS.time_round());
        assert_eq!(GC_STATS.runtime.snapshot().success.count, before + 1);
    }
}

//! What the GC loop's compactions are doing, and which of them the operator suspended: the
//! state behind `GET /api/v1/bookie/gc_details` and `/api/v1/bookie/gc/{suspend,resume}_compaction`
//! (Java's `GarbageCollectorThread` fields of the same names).
//!
//! Guarantees:
//! - a suspended kind (major or minor) is not started by the loop while suspended; one already
//!   running finishes (Java reads the flags once per round, as gc.rs does);
//! - `*_compacting` is true exactly while a pass of that kind runs, counters count passes
//!   started and finished (cancelled or failed ones too: Java counts a pass once it ran);
//! - the last-compaction times are wall-clock milliseconds, starting at the time the status
//!   was created (bookie start), as Java initialises them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Minor or major compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionKind {
    Minor,
    Major,
}

/// One kind's state.
#[derive(Default)]
struct KindStatus {
    suspended: AtomicBool,
    compacting: AtomicBool,
    last_ms: AtomicU64,
    counter: AtomicU64,
}

/// Shared by the GC loop (writes) and the admin API (reads, suspends, resumes).
pub struct GcStatus {
    minor: KindStatus,
    major: KindStatus,
}

/// A snapshot, in Java's `GarbageCollectionStatus` terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSnapshot {
    pub major_compacting: bool,
    pub minor_compacting: bool,
    pub last_major_ms: u64,
    pub last_minor_ms: u64,
    pub major_counter: u64,
    pub minor_counter: u64,
}

/// Held for the length of one compaction pass; ends it when dropped.
pub struct Pass<'a> {
    status: &'a GcStatus,
    kind: CompactionKind,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let k = self.status.kind(self.kind);
        let now = now_ms();
        k.last_ms.store(now, Ordering::Release);
        if self.kind == CompactionKind::Major {
            // A major pass also covers the minor threshold (Java moves both times).
            self.status.minor.last_ms.store(now, Ordering::Release);
        }
        k.counter.fetch_add(1, Ordering::AcqRel);
        k.compacting.store(false, Ordering::Release);
    }
}

impl Default for GcStatus {
    fn default() -> Self {
        let s = GcStatus {
            minor: KindStatus::default(),
            major: KindStatus::default(),
        };
        let now = now_ms();
        s.minor.last_ms.store(now, Ordering::Relaxed);
        s.major.last_ms.store(now, Ordering::Relaxed);
        s
    }
}

impl GcStatus {
    fn kind(&self, kind: CompactionKind) -> &KindStatus {
        match kind {
            CompactionKind::Minor => &self.minor,
            CompactionKind::Major => &self.major,
        }
    }

    /// Suspends (`true`) or resumes (`false`) one kind; returns whether the flag changed.
    pub fn set_suspended(&self, kind: CompactionKind, suspended: bool) -> bool {
        let changed = self.kind(kind).suspended.swap(suspended, Ordering::AcqRel) != suspended;
        if changed {
            tracing::info!(
                ?kind,
                suspended,
                "compaction suspension changed by the operator"
            );
        }
        changed
    }

    pub fn is_suspended(&self, kind: CompactionKind) -> bool {
        self.kind(kind).suspended.load(Ordering::Acquire)
    }

    /// Marks the start of a pass; hold the guard until it ends.
    pub fn begin(&self, kind: CompactionKind) -> Pass<'_> {
        self.kind(kind).compacting.store(true, Ordering::Release);
        Pass { status: self, kind }
    }

    pub fn snapshot(&self) -> CompactionSnapshot {
        CompactionSnapshot {
            major_compacting: self.major.compacting.load(Ordering::Acquire),
            minor_compacting: self.minor.compacting.load(Ordering::Acquire),
            last_major_ms: self.major.last_ms.load(Ordering::Acquire),
            last_minor_ms: self.minor.last_ms.load(Ordering::Acquire),
            major_counter: self.major.counter.load(Ordering::Acquire),
            minor_counter: self.minor.counter.load(Ordering::Acquire),
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_visible_while_it_runs_and_counted_when_it_ends() {
        let s = GcStatus::default();
        let start = s.snapshot();
        assert!(
            start.last_major_ms > 0,
            "times start at creation, as Java's"
        );
        {
            let _p = s.begin(CompactionKind::Major);
            let mid = s.snapshot();
            assert!(mid.major_compacting && !mid.minor_compacting);
            assert_eq!(mid.major_counter, 0);
        }
        let end = s.snapshot();
        assert!(!end.major_compacting);
        assert_eq!((end.major_counter, end.minor_counter), (1, 0));
        assert!(
            end.last_minor_ms >= start.last_minor_ms,
            "major moves minor too"
        );
    }

    #[test]
    fn suspension_is_per_kind_and_reports_changes() {
        let s = GcStatus::default();
        assert!(s.set_suspended(CompactionKind::Minor, true));
        assert!(!s.set_suspended(CompactionKind::Minor, true), "already");
        assert!(s.is_suspended(CompactionKind::Minor));
        assert!(!s.is_suspended(CompactionKind::Major));
        assert!(s.set_suspended(CompactionKind::Minor, false));
        assert!(!s.is_suspended(CompactionKind::Minor));
    }
}

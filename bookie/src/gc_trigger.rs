//! A forced GC round, asked for by the operator (admin API `PUT /api/v1/bookie/gc`) and
//! run by the GC loop (`gc.rs`) as soon as it is between rounds.
//!
//! Guarantees: a force asked while a round runs is not lost (it starts the next round);
//! `is_in_force_gc` is true from the ask until the forced round ended, whichever way it
//! ended (a skipped round — ZooKeeper unreachable — ends it too, as in Java, where a forced
//! round that fails clears the flag); it is never true when no GC loop runs (standalone):
//! [`GcTrigger::force`] then refuses. A forced round compacts as Java's
//! `GarbageCollectorThread.runWithFlags(force = true, ...)`: major (else minor) compaction
//! runs at once, whatever its interval, unless that kind is held back for the round: by the
//! operator's suspension, or by `forceMajor` / `forceMinor` = false in the ask (`true`
//! overrides a suspension for that round) — [`ForcedCompaction`].

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use tokio::sync::Notify;

use crate::gc_status::GcStatus;

/// What the ask of a forced round said of each compaction kind (`forceMajor`, `forceMinor`
/// of `PUT /api/v1/bookie/gc`): `Some(true)` compact it in this round even if suspended,
/// `Some(false)` not, `None` unless the operator suspended it (Java's defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForcedCompaction {
    pub major: Option<bool>,
    pub minor: Option<bool>,
}

/// `Option<bool>` in an atomic: 0 none, 1 false, 2 true.
fn encode(v: Option<bool>) -> u8 {
    v.map_or(0, |b| 1 + u8::from(b))
}

fn decode(v: u8) -> Option<bool> {
    (v != 0).then_some(v == 2)
}

/// Shared between the admin API (asks) and the GC loop (runs).
#[derive(Default)]
pub struct GcTrigger {
    wake: Notify,
    /// Asked and not yet started.
    pending: AtomicBool,
    /// A forced round is running.
    running: AtomicBool,
    /// A GC loop serves this trigger.
    served: AtomicBool,
    /// Compaction passes and the operator's suspensions (gc_status.rs).
    status: GcStatus,
    /// The pending ask's [`ForcedCompaction`] (encoded; the latest ask wins).
    force_major: AtomicU8,
    force_minor: AtomicU8,
}

/// Held by the GC loop for the length of one round; ends a forced round when dropped.
pub struct Round<'a> {
    trigger: &'a GcTrigger,
    /// `Some` for a forced round: what its ask said of compaction.
    pub forced: Option<ForcedCompaction>,
}

impl Drop for Round<'_> {
    fn drop(&mut self) {
        self.trigger.running.store(false, Ordering::Release);
    }
}

impl GcTrigger {
    /// Asks for a round now. False when no GC loop runs (standalone mode).
    pub fn force(&self) -> bool {
        self.force_compaction(ForcedCompaction::default())
    }

    /// Asks for a round now that compacts as `compaction` says. False when no GC loop runs.
    pub fn force_compaction(&self, compaction: ForcedCompaction) -> bool {
        if !self.served.load(Ordering::Acquire) {
            return false;
        }
        self.force_major
            .store(encode(compaction.major), Ordering::Release);
        self.force_minor
            .store(encode(compaction.minor), Ordering::Release);
        self.pending.store(true, Ordering::Release);
        self.wake.notify_one();
        true
    }

    /// True from a [`GcTrigger::force`] until the round it started ended.
    pub fn is_in_force_gc(&self) -> bool {
        self.pending.load(Ordering::Acquire) || self.running.load(Ordering::Acquire)
    }

    /// What compaction is doing and what the operator suspended (`gc_details`,
    /// `gc/suspend_compaction`, `gc/resume_compaction`).
    pub fn status(&self) -> &GcStatus {
        &self.status
    }

    /// Whether a GC loop serves this trigger (never in standalone mode).
    pub fn is_served(&self) -> bool {
        self.served.load(Ordering::Acquire)
    }

    /// Called once by the GC loop when it starts serving this trigger.
    pub fn serve(&self) {
        self.served.store(true, Ordering::Release);
    }

    /// Resolves when a round is asked for (immediately if one was asked meanwhile).
    pub async fn asked(&self) {
        self.wake.notified().await
    }

    /// Marks the start of a round (forced or not); hold the guard until it ends.
    pub fn begin_round(&self) -> Round<'_> {
        let mut forced = None;
        if self.pending.swap(false, Ordering::AcqRel) {
            self.running.store(true, Ordering::Release);
            forced = Some(ForcedCompaction {
                major: decode(self.force_major.swap(0, Ordering::AcqRel)),
                minor: decode(self.force_minor.swap(0, Ordering::AcqRel)),
            });
        }
        Round {
            trigger: self,
            forced,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn force_is_refused_without_a_loop_and_ends_with_its_round() {
        let t = GcTrigger::default();
        assert!(!t.force(), "no GC loop: refused");
        assert!(!t.is_in_force_gc());
        t.serve();
        assert!(t.force());
        assert!(t.is_in_force_gc(), "pending");
        {
            let _round = t.begin_round();
            assert!(t.is_in_force_gc(), "running");
        }
        assert!(!t.is_in_force_gc(), "ended with its round");
        let unforced = t.begin_round();
        assert!(!t.is_in_force_gc());
        assert_eq!(unforced.forced, None);
    }

    #[test]
    fn a_forced_round_carries_what_its_ask_said_of_compaction() {
        let t = GcTrigger::default();
        t.serve();
        let ask = ForcedCompaction {
            major: Some(true),
            minor: Some(false),
        };
        assert!(t.force_compaction(ask));
        assert_eq!(t.begin_round().forced, Some(ask));
        assert!(t.force());
        assert_eq!(t.begin_round().forced, Some(ForcedCompaction::default()));
    }
}

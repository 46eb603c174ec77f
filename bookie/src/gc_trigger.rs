//! A forced GC round, asked for by the operator (admin API `PUT /api/v1/bookie/gc`) and
//! run by the GC loop (`gc.rs`) as soon as it is between rounds.
//!
//! Guarantees: a force asked while a round runs is not lost (it starts the next round);
//! `is_in_force_gc` is true from the ask until the forced round ended, whichever way it
//! ended (a skipped round — ZooKeeper unreachable — ends it too, as in Java, where a forced
//! round that fails clears the flag); it is never true when no GC loop runs (standalone):
//! [`GcTrigger::force`] then refuses.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use crate::gc_status::GcStatus;

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
}

/// Held by the GC loop for the length of one round; ends a forced round when dropped.
pub struct Round<'a> {
    trigger: &'a GcTrigger,
}

impl Drop for Round<'_> {
    fn drop(&mut self) {
        self.trigger.running.store(false, Ordering::Release);
    }
}

impl GcTrigger {
    /// Asks for a round now. False when no GC loop runs (standalone mode).
    pub fn force(&self) -> bool {
        if !self.served.load(Ordering::Acquire) {
            return false;
        }
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
        if self.pending.swap(false, Ordering::AcqRel) {
            self.running.store(true, Ordering::Release);
        }
        Round { trigger: self }
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
        let _unforced = t.begin_round();
        assert!(!t.is_in_force_gc());
    }
}

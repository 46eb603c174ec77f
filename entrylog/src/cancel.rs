//! [`Cancel`]: the token that stops a running compaction or GC pass (the bookie cancels
//! it first thing at SIGTERM, docs/semantics.md §16).
//!
//! Guarantees: once [`Cancel::cancel`] returns, every [`Cancel::sleep`] in progress wakes
//! at once and every later [`Cancel::is_cancelled`] is true (cancellation is permanent).
//! A cancelled pass stops at its next check (per read batch, per written entry, per
//! removed segment) and leaves the entry log consistent: what it did is either complete
//! and durable or never became visible (entrylog/src/compaction.rs, entrylog/src/gc.rs).

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A cancellation token shared between whoever stops the work and the work. Clones share
/// one state.
#[derive(Clone, Default)]
pub struct Cancel(Arc<State>);

#[derive(Default)]
struct State {
    cancelled: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Cancel {
    /// A token not cancelled yet.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels: the work stops at its next check; sleeps in progress wake now.
    pub fn cancel(&self) {
        let _g = self.0.lock.lock();
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.0.wake.notify_all();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Sleeps for `d`, or less if cancelled meanwhile. Returns whether it is cancelled.
    pub fn sleep(&self, d: Duration) -> bool {
        let until = Instant::now() + d;
        let mut g = self.0.lock.lock();
        while !self.is_cancelled() {
            if self.0.wake.wait_until(&mut g, until).timed_out() {
                break;
            }
        }
        self.is_cancelled()
    }
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_wakes_a_sleeper_at_once() {
        let c = Cancel::new();
        assert!(!c.is_cancelled());
        let sleeper = {
            let c = c.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                (c.sleep(Duration::from_secs(60)), t.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        c.cancel();
        let (cancelled, slept) = sleeper.join().unwrap();
        assert!(cancelled);
        assert!(slept < Duration::from_secs(30), "slept {slept:?}");
        assert!(
            c.sleep(Duration::from_secs(60)),
            "cancellation is permanent"
        );
    }

    #[test]
    fn an_uncancelled_sleep_runs_its_time() {
        let c = Cancel::new();
        assert!(!c.sleep(Duration::from_millis(20)));
    }
}

//! Pacing of background write-cache flushes, so that a flush does not hit the ledger
//! device as one burst.
//!
//! Why: a flush writes a whole half of the write cache (128 MiB with Pulsar's 256 MiB
//! cache) at the device's full speed. Where the journal shares that device (one disk,
//! or one virtual disk whose host flushes everything on every cache flush), the journal
//! fdatasyncs issued during the burst wait for it: measured at 20,000 1 KiB adds/s on
//! this project's one-virtio-disk machine, every flush stalled adds for 40–58 ms
//! (docs/benchmarks.md, "Flush pacing").
//!
//! The rule: a background flush of a half that took `fill` to fill runs at
//! `max(min_rate, 2 * half_bytes / fill)`, so it ends in about half the time the next
//! half takes to fill at the same ingest rate; it is never the reason an add waits.
//! It stops pacing (runs at full speed) as soon as [`Pace::wait`]'s `hurry` says so:
//! the active half is half full, a caller waits for the flush lock (an explicit
//! flush or checkpoint, a ledger-state write), the log is stopping, or the caller of
//! a paced flush (`EntryLog::flush_paced`, the bookie's periodic checkpoint) says so.
//! Explicit flushes are never paced.

use std::time::{Duration, Instant};

/// Longest single sleep, so `hurry` is looked at often.
const SLICE: Duration = Duration::from_millis(20);

/// The schedule of one paced flush: `bytes_per_sec` from `start`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pace {
    start: Instant,
    bytes_per_sec: u64,
}

impl Pace {
    /// The pace for a half of `half_bytes` that filled in `fill`; `None` when pacing is
    /// off (`min_rate` 0).
    pub(crate) fn for_half(half_bytes: u64, fill: Duration, min_rate: u64) -> Option<Pace> {
        if min_rate == 0 {
            return None;
        }
        let fill_ms = fill.as_millis().max(1) as u64;
        let ingest_twice = half_bytes.saturating_mul(2).saturating_mul(1000) / fill_ms;
        Some(Pace {
            start: Instant::now(),
            bytes_per_sec: ingest_twice.max(min_rate),
        })
    }

    /// The bytes per second this flush runs at.
    #[cfg(test)]
    pub(crate) fn bytes_per_sec(&self) -> u64 {
        self.bytes_per_sec
    }

    /// When `done` bytes are due.
    fn due(&self, done: u64) -> Instant {
        let ms = done.saturating_mul(1000) / self.bytes_per_sec.max(1);
        self.start + Duration::from_millis(ms)
    }

    /// Sleeps until `done` bytes are due, in slices; returns at once, and stays
    /// unpaced from then on, once `hurry()` is true. Returns whether it is in a hurry.
    pub(crate) fn wait(&self, done: u64, hurry: &dyn Fn() -> bool) -> bool {
        let due = self.due(done);
        loop {
            if hurry() {
                return true;
            }
            let now = Instant::now();
            if now >= due {
                return false;
            }
            std::thread::sleep((due - now).min(SLICE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_when_the_minimum_is_zero() {
        assert!(Pace::for_half(128 << 20, Duration::from_secs(6), 0).is_none());
    }

    #[test]
    fn twice_the_ingest_rate_or_the_minimum() {
        // 128 MiB filled in 6.4 s (20 MiB/s): paced at 40 MiB/s.
        let p = Pace::for_half(128 << 20, Duration::from_millis(6400), 1 << 20).unwrap();
        assert_eq!(p.bytes_per_sec(), 40 << 20);
        // A slow fill: the minimum.
        let p = Pace::for_half(1 << 20, Duration::from_secs(60), 64 << 20).unwrap();
        assert_eq!(p.bytes_per_sec(), 64 << 20);
        // A fill in under a millisecond does not divide by zero.
        let p = Pace::for_half(1 << 20, Duration::ZERO, 1).unwrap();
        assert_eq!(p.bytes_per_sec(), 2000 << 20);
    }

    #[test]
    fn waits_until_due_and_not_when_hurried() {
        // 1 MiB/s: 20 KiB are due ~20 ms after the start.
        let p = Pace::for_half(1, Duration::from_secs(1), 1 << 20).unwrap();
        let t = Instant::now();
        assert!(!p.wait(20 << 10, &|| false));
        assert!(t.elapsed() >= Duration::from_millis(15));
        // 100 MiB would be due in 100 s: a hurry returns at once.
        let t = Instant::now();
        assert!(p.wait(100 << 20, &|| true));
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}

//! Trigger state: for one active fault, whether the next matching operation is hit
//! ([`TriggerState::fires`]), and the fault's seeded random draws.
//!
//! Every matching operation is offered to the trigger once, in the order the layer sees
//! them; the trigger's answer depends only on that order, the bytes offered and (for
//! `for_ms`) the clock, so a plan with a seed replays the same hits for the same workload.

use super::spec::Trigger;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

/// The running state of one fault's trigger, and its random source.
pub struct TriggerState {
    trigger: Trigger,
    added: Instant,
    /// Matching operations offered so far.
    matched: u64,
    /// Bytes written by matching operations offered so far (for `after_bytes`).
    bytes: u64,
    /// Hits so far.
    hits: u64,
    rng: ChaCha8Rng,
}

impl TriggerState {
    pub fn new(trigger: Trigger, seed: u64, now: Instant) -> Self {
        TriggerState {
            trigger,
            added: now,
            matched: 0,
            bytes: 0,
            hits: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Offers one matching operation that writes `written` bytes (0 for others) at `now`;
    /// true when it is hit (and counts the hit).
    pub fn fires(&mut self, written: u64, now: Instant) -> bool {
        self.matched += 1;
        let fire = match self.trigger {
            Trigger::Always => true,
            Trigger::Once => self.hits == 0,
            Trigger::Every(n) => self.matched.is_multiple_of(n.max(1)),
            Trigger::Probability(p) => self.rng.random_bool(p.clamp(0.0, 1.0)),
            Trigger::AfterBytes(n) => {
                // The write that would pass the mark is the first one refused.
                let after = self.bytes.saturating_add(written);
                let over = after > n;
                if !over {
                    self.bytes = after;
                }
                over
            }
            Trigger::ForMs(ms) => {
                now.saturating_duration_since(self.added) < Duration::from_millis(ms)
            }
        };
        if fire {
            self.hits += 1;
        }
        fire
    }

    /// Hits so far.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Matching operations offered so far.
    pub fn matched(&self) -> u64 {
        self.matched
    }

    /// Whether the trigger can never fire again (a `once` that fired, a `for_ms` past its end).
    pub fn spent(&self, now: Instant) -> bool {
        match self.trigger {
            Trigger::Once => self.hits > 0,
            Trigger::ForMs(ms) => {
                now.saturating_duration_since(self.added) >= Duration::from_millis(ms)
            }
            _ => false,
        }
    }

    /// A uniform draw in `0..=max` from the fault's seeded source.
    pub fn draw(&mut self, max: u64) -> u64 {
        if max == 0 {
            0
        } else {
            self.rng.random_range(0..=max)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(trigger: Trigger, seed: u64, ops: usize, bytes: u64) -> Vec<bool> {
        let now = Instant::now();
        let mut t = TriggerState::new(trigger, seed, now);
        (0..ops).map(|_| t.fires(bytes, now)).collect()
    }

    #[test]
    fn always_once_every() {
        assert_eq!(run(Trigger::Always, 0, 3, 0), [true, true, true]);
        assert_eq!(run(Trigger::Once, 0, 3, 0), [true, false, false]);
        assert_eq!(
            run(Trigger::Every(3), 0, 7, 0),
            [false, false, true, false, false, true, false]
        );
        assert_eq!(run(Trigger::Every(1), 0, 2, 0), [true, true]);
    }

    #[test]
    fn probability_is_seeded_and_near_p() {
        let a = run(Trigger::Probability(0.25), 42, 4000, 0);
        assert_eq!(a, run(Trigger::Probability(0.25), 42, 4000, 0));
        assert_ne!(a, run(Trigger::Probability(0.25), 43, 4000, 0));
        let hits = a.iter().filter(|h| **h).count();
        assert!((800..1200).contains(&hits), "{hits} hits of 4000 at p=0.25");
        assert!(run(Trigger::Probability(0.0), 1, 100, 0).iter().all(|h| !h));
        assert!(run(Trigger::Probability(1.0), 1, 100, 0).iter().all(|h| *h));
    }

    #[test]
    fn after_bytes_refuses_the_write_that_passes_the_mark_and_all_after() {
        // 4 KiB writes, full above 10 KiB: two fit, the third and later are refused.
        assert_eq!(
            run(Trigger::AfterBytes(10 * 1024), 0, 5, 4096),
            [false, false, true, true, true]
        );
        // Exactly at the mark still fits.
        assert_eq!(
            run(Trigger::AfterBytes(8192), 0, 3, 4096),
            [false, false, true]
        );
    }

    #[test]
    fn for_ms_fires_only_inside_its_window() {
        let start = Instant::now();
        let mut t = TriggerState::new(Trigger::ForMs(100), 0, start);
        assert!(t.fires(0, start));
        assert!(t.fires(0, start + Duration::from_millis(99)));
        assert!(!t.spent(start + Duration::from_millis(99)));
        assert!(!t.fires(0, start + Duration::from_millis(100)));
        assert!(t.spent(start + Duration::from_millis(100)));
        assert_eq!((t.hits(), t.matched()), (2, 3));
    }
}

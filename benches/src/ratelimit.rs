//! A pacing rate limiter shared by all workers of a job (`rate_iops`).
//!
//! Each request reserves the next send slot; slots are `1/rate` apart. A limiter that fell
//! behind (every worker was busy waiting for responses) does not bank credit: the next slot is
//! "now", so a slow bookie is never hit by a catch-up burst. `rate_iops` is therefore a cap,
//! and latency at a fixed rate is measured without bursts.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct RateLimiter {
    interval: Duration,
    next: Mutex<Option<Instant>>,
}

impl RateLimiter {
    /// `rate` requests per second; must be > 0.
    pub fn new(rate: u64) -> RateLimiter {
        let interval = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
        RateLimiter {
            interval,
            next: Mutex::new(None),
        }
    }

    /// Reserves a send slot given the current time; the caller waits until the returned instant.
    pub fn reserve(&self, now: Instant) -> Instant {
        let mut next = match self.next.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let slot = match *next {
            Some(t) if t > now => t,
            _ => now,
        };
        *next = Some(slot + self.interval);
        slot
    }

    /// Waits for the next slot.
    pub async fn wait(&self) {
        let slot = self.reserve(Instant::now());
        tokio::time::sleep_until(tokio::time::Instant::from_std(slot)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_spaced_and_never_bank_credit() {
        let r = RateLimiter::new(1000);
        let t0 = Instant::now();
        let s1 = r.reserve(t0);
        let s2 = r.reserve(t0);
        let s3 = r.reserve(t0);
        assert_eq!(s1, t0);
        assert_eq!(s2 - s1, Duration::from_millis(1));
        assert_eq!(s3 - s2, Duration::from_millis(1));
        // A long pause: the next slot is "now", not three slots in the past.
        let later = t0 + Duration::from_secs(1);
        assert_eq!(r.reserve(later), later);
        assert_eq!(r.reserve(later), later + Duration::from_millis(1));
    }

    #[test]
    fn ten_thousand_slots_cover_one_second_at_10k() {
        let r = RateLimiter::new(10_000);
        let t0 = Instant::now();
        let mut last = t0;
        for _ in 0..10_001 {
            last = r.reserve(t0);
        }
        let span = last - t0;
        assert!((span.as_secs_f64() - 1.0).abs() < 1e-6, "{span:?}");
    }
}

//! `rollover`: the op-stat quantile window (`prometheusStatsLatencyRolloverSeconds`): when
//! the current window of every op-stat summary closes, and the task that closes it.
//!
//! Java (`PrometheusMetricsProvider.start`, release-4.17.3) schedules
//! `rotateLatencyCollection` at a fixed rate: the first window closes 1 s after the provider
//! starts, then one every `prometheusStatsLatencyRolloverSeconds` seconds (an int, default
//! 60; a period <= 0 makes the scheduler throw, so start-up fails). A scrape reports the
//! quantiles of the last closed window (`summary.rs`); counts and sums are cumulative.
//!
//! Guarantees:
//! * closes fall on the fixed grid `start + 1 s + k × period` (a close that runs late does
//!   not shift the later ones); a period under 1 s (tests, embedders) starts the grid at
//!   `start + period`;
//! * grid points missed while the runtime was stalled close the window once, not in a burst
//!   of empty windows (Java's fixed-rate executor would run them back to back);
//! * [`Rollover`] is a pure function of the instants it is given, so the window is tested
//!   with an injected clock; [`spawn`] only sleeps until the next close and applies it.

use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use super::Metrics;

/// `prometheusStatsLatencyRolloverSeconds`'s default.
pub const DEFAULT_ROLLOVER_SECONDS: u64 = 60;
/// When the first window closes after the start (Java's initial delay).
const FIRST_CLOSE: Duration = Duration::from_secs(1);
/// The shortest period accepted from embedders (the key itself is whole seconds >= 1).
const MIN_PERIOD: Duration = Duration::from_millis(10);

/// The schedule of window closes (module docs).
#[derive(Debug, Clone)]
pub struct Rollover {
    period: Duration,
    next: Instant,
}

impl Rollover {
    /// The schedule of windows of `period`, started at `start`.
    pub fn new(period: Duration, start: Instant) -> Rollover {
        let period = period.max(MIN_PERIOD);
        Rollover {
            period,
            next: start + FIRST_CLOSE.min(period),
        }
    }

    /// The window length.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// When the current window closes.
    pub fn next_close(&self) -> Instant {
        self.next
    }

    /// True when the current window closes at `now`; the next close is then the first grid
    /// point after `now`.
    pub fn close_due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        let behind = now.duration_since(self.next).as_nanos();
        let steps = behind / self.period.as_nanos() + 1;
        let ahead = self.period.as_nanos().saturating_mul(steps);
        let ahead = Duration::from_nanos(u64::try_from(ahead).unwrap_or(u64::MAX));
        // Beyond the clock's range (a huge stall): one period from now.
        self.next = self.next.checked_add(ahead).unwrap_or(now + self.period);
        true
    }

    /// Closes the window of every op stat in `metrics` if due at `now` (what the task does
    /// at each wake-up); true when it closed.
    pub fn close_if_due(&mut self, now: Instant, metrics: &Metrics) -> bool {
        let due = self.close_due(now);
        if due {
            metrics.rotate();
        }
        due
    }
}

/// Closes the windows of `metrics` every `period` (module docs) until aborted.
pub fn spawn(metrics: Metrics, period: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut rollover = Rollover::new(period, Instant::now());
        loop {
            tokio::time::sleep_until(rollover.next_close().into()).await;
            rollover.close_if_due(Instant::now(), &metrics);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Op;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn windows_close_one_second_after_start_then_every_period() {
        let t0 = Instant::now();
        let mut r = Rollover::new(secs(60.0), t0);
        assert!(!r.close_due(t0 + secs(0.999)));
        assert!(r.close_due(t0 + secs(1.0)), "Java's initial delay");
        assert_eq!(r.next_close(), t0 + secs(61.0));
        assert!(!r.close_due(t0 + secs(60.0)));
        assert!(r.close_due(t0 + secs(61.2)), "a late close");
        assert_eq!(r.next_close(), t0 + secs(121.0), "the grid does not shift");
        // A stall over several periods closes once, at the first grid point after it.
        assert!(r.close_due(t0 + secs(300.0)));
        assert_eq!(r.next_close(), t0 + secs(301.0));
        assert!(!r.close_due(t0 + secs(300.5)));
    }

    #[test]
    fn the_period_is_the_configured_one() {
        let t0 = Instant::now();
        let mut r = Rollover::new(secs(5.0), t0);
        let closes: Vec<u32> = (0..=2000)
            .map(|i| i * 10)
            .filter(|ms| r.close_due(t0 + Duration::from_millis(*ms as u64)))
            .collect();
        assert_eq!(closes, [1000, 6000, 11000, 16000]);
        // Below a second (embedders, tests): the first close after one period.
        let mut short = Rollover::new(secs(0.25), t0);
        assert!(!short.close_due(t0 + secs(0.2)));
        assert!(short.close_due(t0 + secs(0.25)));
        assert_eq!(Rollover::new(Duration::ZERO, t0).period(), MIN_PERIOD);
    }

    #[test]
    fn quantiles_cover_exactly_the_last_closed_window() {
        let m = Metrics::new();
        let q50 = |m: &Metrics| {
            let text = m.encode();
            let line = "bookkeeper_server_ADD_ENTRY{success=\"true\",quantile=\"0.5\"} ";
            text.split(line)
                .nth(1)
                .and_then(|r| r.lines().next())
                .map(str::to_string)
                .unwrap()
        };
        let t0 = Instant::now();
        let mut r = Rollover::new(secs(30.0), t0);
        assert!(r.close_if_due(t0 + secs(1.0), &m), "first close, empty");
        m.op(Op::AddEntry).observe(Duration::from_millis(4), true);
        assert!(!r.close_if_due(t0 + secs(30.9), &m));
        assert_eq!(
            q50(&m),
            "NaN",
            "the window holding the sample is still open"
        );
        assert!(r.close_if_due(t0 + secs(31.0), &m));
        let p50: f64 = q50(&m).parse().unwrap();
        assert!((p50 - 4.0).abs() < 0.15, "{p50}");
        // Reported for the whole next window, then gone with it.
        assert!(!r.close_if_due(t0 + secs(60.9), &m));
        assert_eq!(q50(&m).parse::<f64>().unwrap(), p50);
        assert!(r.close_if_due(t0 + secs(61.0), &m));
        assert_eq!(q50(&m), "NaN");
        assert!(m
            .encode()
            .contains("bookkeeper_server_ADD_ENTRY_count{success=\"true\"} 1\n"));
    }
}

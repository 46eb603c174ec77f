//! Op-stat summaries shaped like the Java bookie's `DataSketchesOpStatsLogger`: per outcome
//! (success / failure) a cumulative count and sum, and quantiles over the last completed
//! rollover window (`prometheusStatsLatencyRolloverSeconds`, default 60 s; closed by
//! `rollover.rs`).
//!
//! Quantile estimator: a lock-free log-linear histogram. Values below 16 have their own bucket;
//! above, each power of two is split into 16 buckets, so a reported quantile (the bucket
//! midpoint) is within about 3 % of a true sample value; quantile 1.0 is the exact maximum.
//! Recording costs three relaxed atomic adds and one `fetch_max`; it never blocks, allocates
//! or fails. The window rotation swaps every bucket to zero (records racing with it land in one
//! of the two windows; none are lost from the cumulative count and sum).

use std::sync::atomic::{AtomicU64, Ordering};

/// Quantiles reported, in the Java order.
pub const QUANTILES: [f64; 7] = [0.5, 0.75, 0.95, 0.99, 0.999, 0.9999, 1.0];

const SUB: u64 = 16;
const SUB_BITS: u32 = 4;
/// 16 exact buckets + 60 octaves (2^4 .. 2^63) x 16 sub-buckets.
const BUCKETS: usize = 16 + 60 * 16;

fn bucket_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= 4
    let mantissa = (v >> (e - SUB_BITS)) - SUB; // 0..16
    (SUB + (e - SUB_BITS) as u64 * SUB + mantissa) as usize
}

/// Midpoint of bucket `i` (exact for i < 16).
fn bucket_value(i: usize) -> f64 {
    let i = i as u64;
    if i < SUB {
        return i as f64;
    }
    let e = (i - SUB) / SUB + SUB_BITS as u64;
    let m = (i - SUB) % SUB;
    let lo = ((SUB + m) as f64) * 2f64.powi((e - SUB_BITS as u64) as i32);
    let width = 2f64.powi((e - SUB_BITS as u64) as i32);
    lo + width / 2.0
}

struct Window {
    buckets: Box<[AtomicU64]>,
    max: AtomicU64,
}

impl Window {
    fn new() -> Window {
        Window {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            max: AtomicU64::new(0),
        }
    }
}

/// One outcome (success or failure) of one op.
struct Outcome {
    count: AtomicU64,
    sum: AtomicU64,
    current: Window,
    /// Quantiles of the last completed window (NaN when it had no samples).
    last: parking_lot::Mutex<[f64; 7]>,
}

impl Outcome {
    fn new() -> Outcome {
        Outcome {
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            current: Window::new(),
            last: parking_lot::Mutex::new([f64::NAN; 7]),
        }
    }

    fn record(&self, v: u64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
        self.current.buckets[bucket_of(v)].fetch_add(1, Ordering::Relaxed);
        // Most values are not a new maximum: a plain load skips the compare-and-swap loop
        // that `fetch_max` is on x86. A racing larger store only makes this one redundant.
        if v > self.current.max.load(Ordering::Relaxed) {
            self.current.max.fetch_max(v, Ordering::Relaxed);
        }
    }

    fn rotate(&self) {
        let counts: Vec<u64> = self
            .current
            .buckets
            .iter()
            .map(|b| b.swap(0, Ordering::Relaxed))
            .collect();
        let max = self.current.max.swap(0, Ordering::Relaxed);
        let total: u64 = counts.iter().sum();
        let mut out = [f64::NAN; 7];
        if total > 0 {
            for (slot, q) in out.iter_mut().zip(QUANTILES) {
                if q >= 1.0 {
                    *slot = max as f64;
                    continue;
                }
                let rank = ((total as f64) * q).ceil().max(1.0) as u64;
                let mut seen = 0;
                for (i, c) in counts.iter().enumerate() {
                    seen += c;
                    if seen >= rank {
                        *slot = bucket_value(i).min(max as f64);
                        break;
                    }
                }
            }
        }
        *self.last.lock() = out;
    }
}

/// A snapshot of one outcome, in reporting units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutcomeSnapshot {
    pub count: u64,
    pub sum: f64,
    pub quantiles: [f64; 7],
}

/// Snapshot of both outcomes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SummarySnapshot {
    pub success: OutcomeSnapshot,
    pub failure: OutcomeSnapshot,
}

impl SummarySnapshot {
    /// A summary with only a success count/sum known and no quantiles (NaN), for sources that
    /// keep cumulative figures.
    pub fn from_parts(success: OutcomeSnapshot, failure: OutcomeSnapshot) -> SummarySnapshot {
        SummarySnapshot { success, failure }
    }
}

/// One op's summary. `scale` divides recorded values for reporting (1000 for µs -> ms).
pub struct OpSummary {
    success: Outcome,
    failure: Outcome,
    scale: f64,
}

impl OpSummary {
    pub fn new(scale: f64) -> OpSummary {
        OpSummary {
            success: Outcome::new(),
            failure: Outcome::new(),
            scale,
        }
    }

    /// Records a value in recording units (µs for latencies, bytes for value stats).
    pub fn record(&self, v: u64, success: bool) {
        if success {
            self.success.record(v)
        } else {
            self.failure.record(v)
        }
    }

    /// Closes the current window: its quantiles become the reported ones.
    pub fn rotate(&self) {
        self.success.rotate();
        self.failure.rotate();
    }

    pub fn snapshot(&self) -> SummarySnapshot {
        let s = |o: &Outcome| OutcomeSnapshot {
            count: o.count.load(Ordering::Relaxed),
            sum: o.sum.load(Ordering::Relaxed) as f64 / self.scale,
            quantiles: o.last.lock().map(|q| q / self.scale),
        };
        SummarySnapshot {
            success: s(&self.success),
            failure: s(&self.failure),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut prev = 0;
        for v in (0u64..5000).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let b = bucket_of(v);
            assert!(b < BUCKETS);
            assert!(b >= prev || v > 5000);
            prev = b;
            let mid = bucket_value(b);
            assert!(
                ((mid - v as f64).abs() / (v as f64).max(1.0)) <= 0.035,
                "v={v} mid={mid}"
            );
        }
    }

    #[test]
    fn quantiles_come_from_the_last_window() {
        let s = OpSummary::new(1000.0);
        for us in 1..=1000u64 {
            s.record(us * 10, true); // 10 µs .. 10 ms
        }
        s.record(5, false);
        let before = s.snapshot();
        assert!(
            before.success.quantiles[0].is_nan(),
            "no completed window yet"
        );
        assert_eq!(before.success.count, 1000);
        s.rotate();
        let snap = s.snapshot();
        let q = snap.success.quantiles;
        assert!((q[0] - 5.0).abs() < 0.2, "p50 {q:?}");
        assert!((q[3] - 9.9).abs() < 0.35, "p99 {q:?}");
        assert_eq!(q[6], 10.0, "max exact");
        assert!((snap.success.sum - 5005.0).abs() < 1e-6);
        assert_eq!(snap.failure.count, 1);
        // An empty next window reports NaN again, counts stay cumulative.
        s.rotate();
        let snap = s.snapshot();
        assert!(snap.success.quantiles[0].is_nan());
        assert_eq!(snap.success.count, 1000);
    }
}

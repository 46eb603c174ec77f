//! Measurement: latency histograms, counters, errors by code, and the per-second timeline.
//!
//! Invariants:
//! - Latencies are recorded in nanoseconds; percentiles come from an HDR histogram
//!   (3 significant digits, so a percentile is within 0.1 % of the exact sample), while
//!   min/max/mean/stdev are exact (running sums, Welford's update), not bucket estimates.
//! - Only successful operations enter latency, IOPS and bandwidth; failures are counted by
//!   code in `errors` and nowhere else.
//! - stdev is the sample standard deviation (n - 1 denominator), as fio reports it.
//! - The timeline has one row per whole second of the measured phase and per operation kind;
//!   each row summarizes exactly the completions that fell in that second.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest latency the histograms track, ns (one minute). Larger values are clamped.
const LAT_MAX_NS: u64 = 60_000_000_000;

/// The percentiles every report shows.
pub const PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 99.99];

/// Exact moments plus an HDR histogram for percentiles.
#[derive(Clone)]
pub struct Latency {
    hist: Histogram<u64>,
    count: u64,
    min: u64,
    max: u64,
    mean: f64,
    m2: f64,
}

impl Latency {
    pub fn new(sigfig: u8) -> Latency {
        Latency {
            // Constant bounds (1 ns .. 60 s) and sigfig 2 or 3 from this crate: never input.
            hist: Histogram::new_with_bounds(1, LAT_MAX_NS, sigfig.clamp(1, 5))
                .expect("constant histogram bounds are valid"),
            count: 0,
            min: u64::MAX,
            max: 0,
            mean: 0.0,
            m2: 0.0,
        }
    }

    /// Records one latency, ns.
    pub fn record(&mut self, ns: u64) {
        let ns = ns.clamp(1, LAT_MAX_NS);
        self.hist.saturating_record(ns);
        self.count += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        let x = ns as f64;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Sample standard deviation, ns (0 for fewer than 2 samples).
    pub fn stdev(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2 / (self.count - 1) as f64).sqrt()
        }
    }

    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Value at percentile `p` (0..=100), ns; 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        self.hist.value_at_quantile(p / 100.0)
    }

    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            n: self.count,
            min_ns: if self.count == 0 { 0 } else { self.min },
            max_ns: self.max,
            mean_ns: self.mean(),
            stdev_ns: self.stdev(),
            percentiles_ns: PERCENTILES
                .iter()
                .map(|p| (format!("{p:.6}"), self.percentile(*p)))
                .collect(),
        }
    }
}

/// Latency summary, ns (JSON field names follow fio's `lat_ns`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencySummary {
    #[serde(rename = "N")]
    pub n: u64,
    #[serde(rename = "min")]
    pub min_ns: u64,
    #[serde(rename = "max")]
    pub max_ns: u64,
    #[serde(rename = "mean")]
    pub mean_ns: f64,
    #[serde(rename = "stddev")]
    pub stdev_ns: f64,
    /// Keys like fio's: "50.000000", "99.900000".
    #[serde(rename = "percentile")]
    pub percentiles_ns: BTreeMap<String, u64>,
}

/// Counters and latency of one operation kind (adds or reads).
#[derive(Clone)]
pub struct OpStats {
    pub lat: Latency,
    /// Successful requests.
    pub ops: u64,
    /// Payload bytes moved by successful requests.
    pub bytes: u64,
    /// Entries moved (differs from `ops` for batch reads).
    pub entries: u64,
    /// Failed requests by code name (EFENCED, ETIMEOUT, ECONNLOST, ...).
    pub errors: BTreeMap<String, u64>,
}

impl OpStats {
    pub fn new(sigfig: u8) -> OpStats {
        OpStats {
            lat: Latency::new(sigfig),
            ops: 0,
            bytes: 0,
            entries: 0,
            errors: BTreeMap::new(),
        }
    }

    pub fn success(&mut self, lat_ns: u64, bytes: u64, entries: u64) {
        self.lat.record(lat_ns);
        self.ops += 1;
        self.bytes += bytes;
        self.entries += entries;
    }

    pub fn error(&mut self, code: &str) {
        *self.errors.entry(code.to_string()).or_insert(0) += 1;
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Summary over `runtime_s` seconds.
    pub fn summary(&self, runtime_s: f64) -> OpSummary {
        let rt = if runtime_s > 0.0 { runtime_s } else { f64::NAN };
        let rate = |x: u64| {
            let r = x as f64 / rt;
            if r.is_finite() {
                r
            } else {
                0.0
            }
        };
        OpSummary {
            total_ios: self.ops,
            io_bytes: self.bytes,
            entries: self.entries,
            runtime_ms: (runtime_s * 1000.0).round() as u64,
            iops: rate(self.ops),
            bw_bytes: rate(self.bytes),
            lat_ns: self.lat.summary(),
            errors: self.errors.clone(),
            total_errors: self.error_count(),
        }
    }
}

/// What the report shows for one operation kind.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OpSummary {
    pub total_ios: u64,
    pub io_bytes: u64,
    pub entries: u64,
    pub runtime_ms: u64,
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: f64,
    pub lat_ns: LatencySummary,
    pub errors: BTreeMap<String, u64>,
    pub total_errors: u64,
}

/// Operation kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Write,
    Read,
}

/// One row of the per-second log.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IntervalRow {
    /// Seconds since the measured phase started (end of the interval).
    pub t_s: u64,
    pub op: OpKind,
    pub iops: u64,
    pub bw_bytes: u64,
    pub lat_min_us: f64,
    pub lat_mean_us: f64,
    pub lat_p50_us: f64,
    pub lat_p99_us: f64,
    pub lat_max_us: f64,
    pub errors: u64,
}

/// Everything a running job accumulates.
pub struct JobStats {
    pub write: OpStats,
    pub read: OpStats,
    interval_write: OpStats,
    interval_read: OpStats,
    pub timeline: Vec<IntervalRow>,
}

impl Default for JobStats {
    fn default() -> Self {
        JobStats::new()
    }
}

impl JobStats {
    pub fn new() -> JobStats {
        JobStats {
            write: OpStats::new(3),
            read: OpStats::new(3),
            interval_write: OpStats::new(2),
            interval_read: OpStats::new(2),
            timeline: Vec::new(),
        }
    }

    pub fn success(&mut self, op: OpKind, lat_ns: u64, bytes: u64, entries: u64) {
        let (total, interval) = self.pair(op);
        total.success(lat_ns, bytes, entries);
        interval.success(lat_ns, bytes, entries);
    }

    pub fn error(&mut self, op: OpKind, code: &str) {
        let (total, interval) = self.pair(op);
        total.error(code);
        interval.error(code);
    }

    fn pair(&mut self, op: OpKind) -> (&mut OpStats, &mut OpStats) {
        match op {
            OpKind::Write => (&mut self.write, &mut self.interval_write),
            OpKind::Read => (&mut self.read, &mut self.interval_read),
        }
    }

    /// Closes the current one-second interval (called once per second while measuring).
    /// `t_s` is the second that just ended; `secs` the interval's true length.
    pub fn close_interval(&mut self, t_s: u64, secs: f64, include_read: bool, include_write: bool) {
        for (op, include) in [(OpKind::Write, include_write), (OpKind::Read, include_read)] {
            let fresh = OpStats::new(2);
            let s = match op {
                OpKind::Write => std::mem::replace(&mut self.interval_write, fresh),
                OpKind::Read => std::mem::replace(&mut self.interval_read, fresh),
            };
            if !include {
                continue;
            }
            let sum = s.summary(secs);
            let us = |ns: f64| ns / 1000.0;
            self.timeline.push(IntervalRow {
                t_s,
                op,
                iops: sum.iops.round() as u64,
                bw_bytes: sum.bw_bytes.round() as u64,
                lat_min_us: us(sum.lat_ns.min_ns as f64),
                lat_mean_us: us(sum.lat_ns.mean_ns),
                lat_p50_us: us(s.lat.percentile(50.0) as f64),
                lat_p99_us: us(s.lat.percentile(99.0) as f64),
                lat_max_us: us(sum.lat_ns.max_ns as f64),
                errors: sum.total_errors,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_set() {
        let mut l = Latency::new(3);
        // 1..=10000 µs, each once.
        for us in 1..=10_000u64 {
            l.record(us * 1000);
        }
        let within = |got: u64, want_us: u64| {
            let want = (want_us * 1000) as f64;
            ((got as f64) - want).abs() / want <= 0.001
        };
        assert!(within(l.percentile(50.0), 5_000), "{}", l.percentile(50.0));
        assert!(within(l.percentile(90.0), 9_000), "{}", l.percentile(90.0));
        assert!(within(l.percentile(99.0), 9_900), "{}", l.percentile(99.0));
        assert!(within(l.percentile(99.9), 9_990), "{}", l.percentile(99.9));
        assert!(
            within(l.percentile(99.99), 9_999),
            "{}",
            l.percentile(99.99)
        );
        let s = l.summary();
        assert_eq!(s.n, 10_000);
        assert_eq!(s.min_ns, 1_000);
        assert_eq!(s.max_ns, 10_000_000);
        assert!((s.mean_ns - 5_000_500.0).abs() < 1e-3, "{}", s.mean_ns);
        // Sample stdev of 1..=n (in µs) is sqrt(n(n+1)/12) = 2886.89568...
        let want = (10_000.0f64 * 10_001.0 / 12.0).sqrt() * 1000.0;
        assert!(
            (s.stdev_ns - want).abs() < 1e-3 * want,
            "{} vs {want}",
            s.stdev_ns
        );
        assert_eq!(s.percentiles_ns.len(), 5);
        assert!(s.percentiles_ns.contains_key("99.900000"));
    }

    #[test]
    fn stdev_small_sets() {
        let mut l = Latency::new(3);
        assert_eq!(l.stdev(), 0.0);
        l.record(10);
        assert_eq!(l.stdev(), 0.0);
        let mut l = Latency::new(3);
        for x in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            l.record(x);
        }
        // Population stdev is 2; sample stdev is sqrt(32/7).
        assert!(
            (l.stdev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-9,
            "{}",
            l.stdev()
        );
        assert!((l.mean() - 5.0).abs() < 1e-12);
    }

    #[test]
    fn rates_and_errors() {
        let mut s = OpStats::new(3);
        for _ in 0..500 {
            s.success(1_000_000, 1024, 1);
        }
        s.error("EFENCED");
        s.error("ETIMEOUT");
        s.error("EFENCED");
        let sum = s.summary(2.0);
        assert_eq!(sum.total_ios, 500);
        assert_eq!(sum.iops, 250.0);
        assert_eq!(sum.bw_bytes, 500.0 * 1024.0 / 2.0);
        assert_eq!(sum.io_bytes, 512_000);
        assert_eq!(sum.runtime_ms, 2000);
        assert_eq!(sum.errors.get("EFENCED"), Some(&2));
        assert_eq!(sum.total_errors, 3);
        assert_eq!(sum.lat_ns.n, 500, "errors never enter latency");
        let empty = OpStats::new(3).summary(0.0);
        assert_eq!(empty.iops, 0.0);
        assert_eq!(empty.lat_ns.min_ns, 0);
    }

    #[test]
    fn timeline_rows_per_second() {
        let mut j = JobStats::new();
        for _ in 0..100 {
            j.success(OpKind::Write, 2_000_000, 1024, 1);
        }
        j.error(OpKind::Write, "EIO");
        j.close_interval(1, 1.0, false, true);
        for _ in 0..50 {
            j.success(OpKind::Write, 4_000_000, 1024, 1);
        }
        j.close_interval(2, 0.5, false, true);
        assert_eq!(j.timeline.len(), 2);
        assert_eq!(j.timeline[0].iops, 100);
        assert_eq!(j.timeline[0].errors, 1);
        assert!((j.timeline[0].lat_mean_us - 2000.0).abs() < 1e-6);
        assert_eq!(j.timeline[1].iops, 100, "50 ops in half a second");
        assert_eq!(j.timeline[1].bw_bytes, 102_400);
        assert_eq!(j.write.ops, 150);
    }
}

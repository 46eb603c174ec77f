//! Results of a run and their presentation: fio-like text, JSON, and the per-second CSV log.
//!
//! The JSON shape follows fio's where a field means the same thing (`jobname`, `read`/`write`
//! with `iops`, `bw_bytes`, `io_bytes`, `runtime` in ms, `lat_ns` with `percentile` keys like
//! `"99.900000"`), so scripts written for fio read it with few changes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::options::JobSpec;
use crate::stats::{IntervalRow, OpKind, OpSummary, PERCENTILES};

/// Work done before the measured phase (not part of any rate or latency).
#[derive(Debug, Clone, Serialize)]
pub struct PrefillSummary {
    pub entries: u64,
    pub bytes: u64,
    pub secs: f64,
    pub errors: BTreeMap<String, u64>,
}

/// One job's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct JobResult {
    pub jobname: String,
    pub groupid: usize,
    pub options: JobSpec,
    /// Measured phase length, ms.
    pub runtime: u64,
    pub write: Option<OpSummary>,
    pub read: Option<OpSummary>,
    pub prefill: Option<PrefillSummary>,
    /// Why the measured phase ended: "runtime", "number_ios", "data read", or an error.
    pub stopped_by: String,
    /// Ledger ids used (first, count), so a stock client can find and read them.
    pub ledger_ids: Vec<u64>,
    pub notes: Vec<String>,
    pub timeline: Vec<IntervalRow>,
}

impl JobResult {
    /// Total errors over both operation kinds.
    pub fn total_errors(&self) -> u64 {
        self.write.as_ref().map_or(0, |w| w.total_errors)
            + self.read.as_ref().map_or(0, |r| r.total_errors)
    }
}

/// A whole run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    #[serde(rename = "bkbench version")]
    pub version: String,
    /// Unix seconds at the start.
    pub timestamp: u64,
    pub jobs: Vec<JobResult>,
}

/// `12345.6` -> `12.3k`, as fio prints IOPS.
pub fn human_count(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.1}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// Bytes with binary units: `1536` -> `1.5KiB`.
pub fn human_bytes(x: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = x;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0}{}", UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

/// Bytes with decimal units, for the `(12.6MB/s)` part.
pub fn human_bytes_si(x: f64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = x;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0}{}", UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

fn op_text(out: &mut String, kind: &str, s: &OpSummary) {
    let _ = writeln!(
        out,
        "  {kind}: IOPS={}, BW={}/s ({}/s)({}/{}msec)",
        human_count(s.iops),
        human_bytes(s.bw_bytes),
        human_bytes_si(s.bw_bytes),
        human_bytes(s.io_bytes as f64),
        s.runtime_ms
    );
    if s.entries != s.total_ios {
        let _ = writeln!(
            out,
            "    entries={} ({:.1} per request)",
            s.entries,
            s.entries as f64 / s.total_ios.max(1) as f64
        );
    }
    let l = &s.lat_ns;
    // fio switches to msec when even the minimum is large.
    let (unit, div) = if l.min_ns >= 10_000_000 {
        ("msec", 1e6)
    } else {
        ("usec", 1e3)
    };
    if l.n > 0 {
        let _ = writeln!(
            out,
            "    lat ({unit}): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
            l.min_ns as f64 / div,
            l.max_ns as f64 / div,
            l.mean_ns / div,
            l.stdev_ns / div
        );
        let _ = writeln!(out, "    lat percentiles ({unit}):");
        let cells: Vec<String> = PERCENTILES
            .iter()
            .map(|p| {
                let v = l
                    .percentiles_ns
                    .get(&format!("{p:.6}"))
                    .copied()
                    .unwrap_or(0);
                format!("{p:>6.2}th=[{:>7.0}]", v as f64 / div)
            })
            .collect();
        for row in cells.chunks(3) {
            let _ = writeln!(out, "     | {}", row.join(", "));
        }
    } else {
        let _ = writeln!(out, "    lat: no successful requests");
    }
    if s.total_errors > 0 {
        let list: Vec<String> = s.errors.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "    errors: {} ({})", s.total_errors, list.join(" "));
    }
}

/// fio-like text for one job.
pub fn job_text(j: &JobResult) -> String {
    let mut out = String::new();
    let o = &j.options;
    let _ = writeln!(
        out,
        "{}: (groupid={}): rw={:?}, bs={}, iodepth={}, protocol={:?}, bookie={}, ledgers={}, errors={}",
        j.jobname,
        j.groupid,
        o.rw,
        bs_text(o),
        o.iodepth,
        o.protocol,
        o.bookies.join(","),
        o.ledgers,
        j.total_errors()
    );
    if !o.description.is_empty() {
        let _ = writeln!(out, "  description: {}", o.description);
    }
    if let Some(p) = &j.prefill {
        let _ = writeln!(
            out,
            "  prefill: {} entries, {} in {:.1}s{}",
            p.entries,
            human_bytes(p.bytes as f64),
            p.secs,
            if p.errors.is_empty() {
                String::new()
            } else {
                format!(", errors {:?}", p.errors)
            }
        );
    }
    if let Some(w) = &j.write {
        op_text(&mut out, "write", w);
    }
    if let Some(r) = &j.read {
        op_text(&mut out, "read", r);
    }
    let _ = writeln!(out, "  stopped by: {}", j.stopped_by);
    for n in &j.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out
}

fn bs_text(o: &JobSpec) -> String {
    match &o.bs {
        crate::options::BlockSize::Fixed { bytes } => human_bytes(*bytes as f64),
        crate::options::BlockSize::Range { min, max } => {
            format!("{}-{}", human_bytes(*min as f64), human_bytes(*max as f64))
        }
        crate::options::BlockSize::Split { choices } => choices
            .iter()
            .map(|(b, w)| format!("{}/{w}", human_bytes(*b as f64)))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// The text report for a run.
pub fn run_text(r: &RunReport) -> String {
    let mut out = String::new();
    for j in &r.jobs {
        out.push_str(&job_text(j));
        out.push('\n');
    }
    out
}

/// The JSON report for a run.
pub fn run_json(r: &RunReport) -> String {
    // Serializing plain data (no maps with non-string keys, no failing Serialize impls)
    // cannot fail; fall back to an error object rather than panic.
    serde_json::to_string_pretty(r)
        .unwrap_or_else(|e| format!("{{\"error\": \"serialization failed: {e}\"}}"))
}

/// The per-second log as CSV.
pub fn timeline_csv(rows: &[IntervalRow]) -> String {
    let mut out = String::from(
        "t_s,op,iops,bw_bytes,lat_min_us,lat_mean_us,lat_p50_us,lat_p99_us,lat_max_us,errors\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{:.1},{:.1},{:.1},{:.1},{:.1},{}",
            r.t_s,
            match r.op {
                OpKind::Write => "write",
                OpKind::Read => "read",
            },
            r.iops,
            r.bw_bytes,
            r.lat_min_us,
            r.lat_mean_us,
            r.lat_p50_us,
            r.lat_p99_us,
            r.lat_max_us,
            r.errors
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{JobStats, OpStats};

    fn sample_result() -> JobResult {
        let mut st = JobStats::new();
        for i in 0..1000u64 {
            st.success(OpKind::Write, 100_000 + i * 1000, 1024, 1);
        }
        st.error(OpKind::Write, "ETIMEOUT");
        st.close_interval(1, 1.0, false, true);
        let mut spec = JobSpec::defaults("w");
        spec.runtime = Some(std::time::Duration::from_secs(1));
        JobResult {
            jobname: "w".into(),
            groupid: 0,
            options: spec,
            runtime: 1000,
            write: Some(st.write.summary(1.0)),
            read: None,
            prefill: None,
            stopped_by: "runtime".into(),
            ledger_ids: vec![7],
            notes: vec![],
            timeline: st.timeline.clone(),
        }
    }

    #[test]
    fn json_parses_and_has_fio_fields() {
        let r = RunReport {
            version: "test".into(),
            timestamp: 1,
            jobs: vec![sample_result()],
        };
        let text = run_json(&r);
        let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        let w = &v["jobs"][0]["write"];
        assert_eq!(w["total_ios"], 1000);
        assert_eq!(w["iops"], 1000.0);
        assert_eq!(w["bw_bytes"], 1024000.0);
        assert_eq!(w["errors"]["ETIMEOUT"], 1);
        assert!(w["lat_ns"]["percentile"]["99.000000"].as_u64().unwrap_or(0) > 1_000_000);
        assert_eq!(v["jobs"][0]["read"], serde_json::Value::Null);
        assert_eq!(v["jobs"][0]["timeline"][0]["iops"], 1000);
    }

    #[test]
    fn text_has_iops_bw_latency_and_errors() {
        let t = job_text(&sample_result());
        assert!(
            t.contains("write: IOPS=1000, BW=1000.0KiB/s (1.0MB/s)"),
            "{t}"
        );
        assert!(t.contains("lat (usec): min=100, max=1099"), "{t}");
        assert!(t.contains("99.99th=["), "{t}");
        assert!(t.contains("errors: 1 (ETIMEOUT=1)"), "{t}");
    }

    #[test]
    fn human_units() {
        assert_eq!(human_count(999.0), "999");
        assert_eq!(human_count(12_345.0), "12.3k");
        assert_eq!(human_bytes(1536.0), "1.5KiB");
        assert_eq!(human_bytes(5.0 * 1048576.0), "5.0MiB");
        assert_eq!(human_bytes_si(12_600_000.0), "12.6MB");
        let _ = OpStats::new(3);
    }

    #[test]
    fn csv_has_header_and_rows() {
        let r = sample_result();
        let csv = timeline_csv(&r.timeline);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[1].starts_with("1,write,1000,1024000,"),
            "{}",
            lines[1]
        );
    }
}

//! What a drill reports: its schedule as it happened, each phase's adds, errors, latency and
//! reads, how long restarted bookies took to acknowledge again, and the verdict; as a table
//! for people, JSON for scripts, and an SVG timeline (chart.rs, the fault phases shaded).

use serde::Serialize;

use super::drill::Drill;
use super::load::{Comeback, Counts};
use super::verify::Verdict;
use crate::chart::{self, Shade};
use crate::options::Protocol;
use crate::stats::{IntervalRow, OpKind};

/// One schedule step as it ran.
#[derive(Debug, Clone, Serialize)]
pub struct StepOutcome {
    pub planned_s: f64,
    pub at_s: f64,
    pub step: String,
    pub ok: bool,
    pub result: String,
}

/// One phase: from a step (or the start) to the next step (or the end of the load).
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    pub label: String,
    pub from_s: f64,
    pub to_s: f64,
    pub adds: u64,
    pub acknowledged: u64,
    pub failed: u64,
    /// failed / adds, percent.
    pub error_pct: f64,
    pub errors: std::collections::BTreeMap<String, u64>,
    /// Of acknowledged adds, ms.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub reads: u64,
    pub reads_ok: u64,
    pub reads_eio: u64,
    pub reads_failed: u64,
    pub reads_wrong: u64,
    /// Per bookie (index): p99 of its OK answers to adds, ms, and its refusals.
    pub bookies: Vec<BookiePhase>,
}

/// One bookie in one phase.
#[derive(Debug, Clone, Serialize)]
pub struct BookiePhase {
    pub bookie: usize,
    pub ok: u64,
    pub p99_ms: f64,
    pub errors: std::collections::BTreeMap<String, u64>,
}

/// A restarted bookie: how long until it acknowledged an add again.
#[derive(Debug, Clone, Serialize)]
pub struct Recovery {
    pub bookie: usize,
    /// None: it did not acknowledge again before the load ended.
    pub acknowledging_after_s: Option<f64>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct DrillReport {
    pub drill: String,
    /// "bookie-rs" or "Java" (`--impl`).
    pub implementation: String,
    pub description: String,
    pub setup: String,
    pub steps: Vec<StepOutcome>,
    pub settle: Vec<String>,
    /// What went wrong besides the verdict: a bookie that exited though no step ended it, a
    /// bookie not registered again (mod.rs). Any fails the drill, as a failed step does.
    pub problems: Vec<String>,
    pub phases: Vec<Phase>,
    pub recoveries: Vec<Recovery>,
    pub verdict: Verdict,
    pub verify_s: f64,
    /// Reads during the load that returned other bytes than were acknowledged.
    pub wrong_reads: u64,
    pub passed: bool,
    #[serde(skip)]
    timeline: Vec<IntervalRow>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl DrillReport {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        drill: &Drill,
        implementation: &str,
        steps: Vec<StepOutcome>,
        settle: Vec<String>,
        problems: Vec<String>,
        phases: &[Counts],
        seconds: &[Counts],
        comebacks: &[Comeback],
        verdict: Verdict,
        load_ended: std::time::Duration,
        verify: std::time::Duration,
    ) -> DrillReport {
        let mut bounds: Vec<f64> = vec![0.0];
        // When each step started (load.rs counts by these), capped at the end of the load.
        let end = load_ended.as_secs_f64();
        bounds.extend(steps.iter().map(|s| s.at_s.min(end)));
        bounds.push(end);
        let phases: Vec<Phase> = phases
            .iter()
            .enumerate()
            .map(|(i, c)| Phase {
                label: if i == 0 {
                    "baseline".into()
                } else {
                    drill.schedule[i - 1].describe()
                },
                from_s: bounds[i],
                to_s: bounds[i + 1],
                adds: c.adds,
                acknowledged: c.acknowledged,
                failed: c.failed,
                error_pct: if c.adds == 0 {
                    0.0
                } else {
                    100.0 * c.failed as f64 / c.adds as f64
                },
                errors: c.errors.clone(),
                p50_ms: ms(c.latency.percentile(50.0)),
                p99_ms: ms(c.latency.percentile(99.0)),
                max_ms: ms(c.latency.percentile(100.0)),
                reads: c.reads,
                reads_ok: c.reads_ok,
                reads_eio: c.reads_eio,
                reads_failed: c.reads_failed,
                reads_wrong: c.reads_wrong,
                bookies: (0..drill.bookies)
                    .map(|b| {
                        let lat = c.bookie_latency.get(&b);
                        BookiePhase {
                            bookie: b,
                            ok: lat.map(|l| l.summary().n).unwrap_or(0),
                            p99_ms: lat.map(|l| ms(l.percentile(99.0))).unwrap_or(0.0),
                            errors: c.bookie_errors.get(&b).cloned().unwrap_or_default(),
                        }
                    })
                    .collect(),
            })
            .collect();
        let timeline = seconds
            .iter()
            .enumerate()
            .map(|(s, c)| IntervalRow {
                t_s: s as u64 + 1,
                op: OpKind::Write,
                iops: c.acknowledged,
                bw_bytes: c.acknowledged * drill.size,
                lat_min_us: 0.0,
                lat_mean_us: c.latency.mean() / 1e3,
                lat_p50_us: c.latency.percentile(50.0) as f64 / 1e3,
                lat_p99_us: c.latency.percentile(99.0) as f64 / 1e3,
                lat_max_us: c.latency.percentile(100.0) as f64 / 1e3,
                errors: c.failed,
            })
            .collect();
        let restarted: Vec<usize> = drill
            .schedule
            .iter()
            .filter(|s| matches!(s.action, super::drill::Action::Restart))
            .map(|s| s.bookie)
            .collect();
        let recoveries = comebacks
            .iter()
            .enumerate()
            .filter(|(b, _)| restarted.contains(b))
            .map(|(b, c)| Recovery {
                bookie: b,
                acknowledging_after_s: c.back_after.map(|d| d.as_secs_f64()),
            })
            .collect();
        let wrong_reads = phases.iter().map(|p| p.reads_wrong).sum();
        let setup = format!(
            "{} {implementation} bookies{}{}, {}, W{} A{}, {} ledgers, {} B entries, {} adds/s{}, iodepth {}, {:.0} s",
            drill.bookies,
            if drill.zookeeper || implementation == "Java" {
                " registered in ZooKeeper"
            } else {
                ""
            },
            if drill.chaos { " (chaos on)" } else { "" },
            match drill.protocol {
                Protocol::V2 => "v2",
                Protocol::V3 => "v3",
            },
            drill.ensemble,
            drill.ack_quorum,
            drill.ledgers,
            drill.size,
            if drill.rate == 0 {
                "unlimited".to_string()
            } else {
                drill.rate.to_string()
            },
            if drill.read_rate > 0 {
                format!(", {} reads/s", drill.read_rate)
            } else {
                String::new()
            },
            drill.iodepth,
            drill.duration.as_secs_f64()
        );
        let passed = verdict.passed()
            && wrong_reads == 0
            && problems.is_empty()
            && steps.iter().all(|s| s.ok);
        DrillReport {
            drill: drill.name.clone(),
            implementation: implementation.to_string(),
            description: drill.description.clone(),
            setup,
            steps,
            settle,
            problems,
            phases,
            recoveries,
            verdict,
            verify_s: verify.as_secs_f64(),
            wrong_reads,
            passed,
            timeline,
        }
    }

    /// The table for people.
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(o, "drill {}: {}", self.drill, self.description);
        let _ = writeln!(o, "  {}", self.setup);
        let _ = writeln!(o, "schedule:");
        for s in &self.steps {
            let _ = writeln!(o, "  t={:>6.2}s  {:<28} {}", s.at_s, s.step, s.result);
        }
        for s in &self.settle {
            let _ = writeln!(o, "  settle     {s}");
        }
        for p in &self.problems {
            let _ = writeln!(o, "PROBLEM: {p}");
        }
        let _ = writeln!(
            o,
            "{:<30} {:>6} {:>6} {:>7} {:>7} {:>6} {:>6} {:>8} {:>8} {:>8}  errors",
            "phase",
            "from s",
            "to s",
            "adds",
            "acked",
            "failed",
            "err %",
            "p50 ms",
            "p99 ms",
            "reads"
        );
        for p in &self.phases {
            let reads = if p.reads == 0 {
                "-".to_string()
            } else {
                format!("{}/{}", p.reads_ok, p.reads)
            };
            let mut errors: Vec<String> =
                p.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
            if p.reads_eio > 0 {
                errors.push(format!("read EIO {}", p.reads_eio));
            }
            if p.reads_failed > 0 {
                errors.push(format!("read failed {}", p.reads_failed));
            }
            if p.reads_wrong > 0 {
                errors.push(format!("READ WRONG BYTES {}", p.reads_wrong));
            }
            let _ = writeln!(
                o,
                "{:<30} {:>6.1} {:>6.1} {:>7} {:>7} {:>6} {:>6.1} {:>8.2} {:>8.2} {:>8}  {}",
                truncate(&p.label, 30),
                p.from_s,
                p.to_s,
                p.adds,
                p.acknowledged,
                p.failed,
                p.error_pct,
                p.p50_ms,
                p.p99_ms,
                reads,
                errors.join(", ")
            );
        }
        let _ = writeln!(o, "per bookie: OK answers to adds, their p99 ms, refusals");
        for p in &self.phases {
            let cells: Vec<String> = p
                .bookies
                .iter()
                .map(|b| {
                    let errs: Vec<String> =
                        b.errors.iter().map(|(k, v)| format!(" {k} {v}")).collect();
                    format!(
                        "b{} {} ok p99 {:.1}{}",
                        b.bookie,
                        b.ok,
                        b.p99_ms,
                        errs.join("")
                    )
                })
                .collect();
            let _ = writeln!(o, "{:<30} {}", truncate(&p.label, 30), cells.join(" | "));
        }
        for r in &self.recoveries {
            let _ = writeln!(
                o,
                "recovery: bookie {} acknowledged again {}",
                r.bookie,
                match r.acknowledging_after_s {
                    Some(s) => format!("{s:.2} s after its restart"),
                    None => "never before the load ended".into(),
                }
            );
        }
        let v = &self.verdict;
        let _ = writeln!(
            o,
            "verification ({:.1} s): {} acknowledged entries, {} copies: {} verified, {} detected (EIO where faults that damage reads were injected), {} lost, {} unreachable; entries with no copy left: {}",
            self.verify_s, v.acknowledged_entries, v.copies, v.verified, v.detected, v.lost, v.unreachable, v.entries_lost
        );
        for e in &v.examples {
            let _ = writeln!(o, "  {e}");
        }
        let _ = writeln!(
            o,
            "RESULT: {}",
            if self.passed {
                "PASS: no acknowledged entry lost".to_string()
            } else if v.acknowledged_entries == 0 {
                "FAIL: nothing was acknowledged, so nothing was proven".to_string()
            } else if !self.problems.is_empty() || self.steps.iter().any(|s| !s.ok) {
                format!(
                    "FAIL: {} problem(s), {} failed step(s); {} copies lost, {} unreachable",
                    self.problems.len(),
                    self.steps.iter().filter(|s| !s.ok).count(),
                    v.lost,
                    v.unreachable
                )
            } else {
                format!(
                    "FAIL: {} copies lost, {} unreachable, {} reads served wrong bytes",
                    v.lost, v.unreachable, self.wrong_reads
                )
            }
        );
        o
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Acknowledged adds per second and their latency, each phase after a step shaded.
    pub fn svg(&self) -> String {
        let shades: Vec<Shade> = self
            .phases
            .iter()
            .skip(1)
            .map(|p| Shade {
                from_s: p.from_s,
                to_s: p.to_s,
                label: p.label.clone(),
            })
            .collect();
        chart::render_with_phases(&format!("bkchaos: {}", self.drill), &self.timeline, &shades)
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
    }
}

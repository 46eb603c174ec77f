//! A hand-written SVG chart of a job's per-second log: throughput on top (IOPS, with MiB/s in
//! the legend), latency below (mean and p99, log scale), writes and reads in separate colours.
//! No dependencies: the SVG is plain text, so it opens in any browser. bkchaos adds shaded
//! spans (its fault phases) behind both panels.
//!
//! Invariants: the output is well-formed XML (job names are escaped); empty timelines give a
//! chart that says "no data" rather than dividing by zero.

use std::fmt::Write as _;

use crate::stats::{IntervalRow, OpKind};

const W: f64 = 900.0;
const PANEL_H: f64 = 220.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const GAP: f64 = 60.0;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten, at least `x`.
fn nice_ceiling(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= x {
            return m * p;
        }
    }
    10.0 * p
}

fn series(rows: &[IntervalRow], op: OpKind, f: impl Fn(&IntervalRow) -> f64) -> Vec<(f64, f64)> {
    rows.iter()
        .filter(|r| r.op == op)
        .map(|r| (r.t_s as f64, f(r)))
        .collect()
}

struct Panel {
    y0: f64,
    t_max: f64,
}

impl Panel {
    fn x(&self, t: f64) -> f64 {
        LEFT + (t / self.t_max) * (W - LEFT - RIGHT)
    }
}

fn polyline(out: &mut String, pts: &[(f64, f64)], colour: &str, dash: bool) {
    if pts.is_empty() {
        return;
    }
    let coords: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5"{} points="{}"/>"#,
        if dash {
            r#" stroke-dasharray="5,3""#
        } else {
            ""
        },
        coords.join(" ")
    );
}

/// A span of the time axis shaded behind both panels, labelled at its top.
#[derive(Debug, Clone)]
pub struct Shade {
    pub from_s: f64,
    pub to_s: f64,
    pub label: String,
}

/// Shade colours, cycled.
const SHADES: [&str; 4] = ["#fde0dd", "#e0ecf4", "#fee8c8", "#e5f5e0"];

/// Renders the chart.
pub fn render(job: &str, rows: &[IntervalRow]) -> String {
    render_with_phases(&format!("bkbench: {job}"), rows, &[])
}

/// Renders the chart titled `title`, with `shades` behind both panels.
pub fn render_with_phases(title: &str, rows: &[IntervalRow], shades: &[Shade]) -> String {
    let h = TOP + 2.0 * PANEL_H + GAP + 50.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{}</text>"#,
        escape(title)
    );
    if rows.is_empty() {
        let _ = writeln!(
            out,
            r#"<text x="{LEFT}" y="{}">no data (the measured phase was shorter than one second)</text>"#,
            TOP + 40.0
        );
        out.push_str("</svg>\n");
        return out;
    }
    let t_max = rows.iter().map(|r| r.t_s).max().unwrap_or(1).max(1) as f64;
    let t_max = shades.iter().map(|s| s.to_s).fold(t_max, f64::max);
    let colours = [
        (OpKind::Write, "#1f77b4", "write"),
        (OpKind::Read, "#d62728", "read"),
    ];

    // Throughput panel (linear).
    let p = Panel { y0: TOP, t_max };
    for (i, sh) in shades.iter().enumerate() {
        let (x0, x1) = (p.x(sh.from_s.max(0.0)), p.x(sh.to_s.min(t_max)));
        let colour = SHADES[i % SHADES.len()];
        for y0 in [TOP, TOP + PANEL_H + GAP] {
            let _ = writeln!(
                out,
                r#"<rect x="{x0:.1}" y="{y0}" width="{:.1}" height="{PANEL_H}" fill="{colour}"/>"#,
                (x1 - x0).max(0.0)
            );
        }
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#555">{}</text>"##,
            x0 + 2.0,
            TOP + 12.0 + 11.0 * (i % 3) as f64,
            escape(&sh.label)
        );
    }
    let iops_max = nice_ceiling(rows.iter().map(|r| r.iops as f64).fold(0.0, f64::max));
    axes(&mut out, &p, "requests/s", &linear_ticks(iops_max), |v| {
        p.y0 + PANEL_H - v / iops_max * PANEL_H
    });
    let mut legend_x = LEFT + 10.0;
    for (op, colour, label) in colours {
        let pts: Vec<(f64, f64)> = series(rows, op, |r| r.iops as f64)
            .into_iter()
            .map(|(t, v)| (p.x(t), p.y0 + PANEL_H - v / iops_max * PANEL_H))
            .collect();
        if pts.is_empty() {
            continue;
        }
        polyline(&mut out, &pts, colour, false);
        let n = rows.iter().filter(|r| r.op == op).count().max(1) as f64;
        let mean_bw = rows
            .iter()
            .filter(|r| r.op == op)
            .map(|r| r.bw_bytes as f64)
            .sum::<f64>()
            / n;
        let _ = writeln!(
            out,
            r#"<text x="{legend_x}" y="{}" fill="{colour}">{label} (mean {:.1} MiB/s)</text>"#,
            p.y0 - 6.0,
            mean_bw / 1048576.0
        );
        legend_x += 220.0;
    }

    // Latency panel (log10 scale, µs).
    let q = Panel {
        y0: TOP + PANEL_H + GAP,
        t_max,
    };
    let lat_vals = rows
        .iter()
        .flat_map(|r| [r.lat_mean_us, r.lat_p99_us])
        .filter(|v| *v > 0.0);
    let (lo, hi) = lat_vals.fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, hi) = if hi <= 0.0 { (1.0, 10.0) } else { (lo, hi) };
    let lmin = lo.log10().floor();
    let lmax = hi.log10().ceil().max(lmin + 1.0);
    let ly = |v: f64| {
        let l = v.max(10f64.powf(lmin)).log10();
        q.y0 + PANEL_H - (l - lmin) / (lmax - lmin) * PANEL_H
    };
    let ticks: Vec<f64> = (lmin as i32..=lmax as i32).map(|e| 10f64.powi(e)).collect();
    axes(&mut out, &q, "latency (µs, log)", &ticks, ly);
    let mut legend_x = LEFT + 10.0;
    for (op, colour, label) in colours {
        let mean: Vec<(f64, f64)> = series(rows, op, |r| r.lat_mean_us)
            .into_iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(t, v)| (q.x(t), ly(v)))
            .collect();
        let p99: Vec<(f64, f64)> = series(rows, op, |r| r.lat_p99_us)
            .into_iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(t, v)| (q.x(t), ly(v)))
            .collect();
        if mean.is_empty() {
            continue;
        }
        polyline(&mut out, &mean, colour, false);
        polyline(&mut out, &p99, colour, true);
        let _ = writeln!(
            out,
            r#"<text x="{legend_x}" y="{}" fill="{colour}">{label}: mean (solid), p99 (dashed)</text>"#,
            q.y0 - 6.0
        );
        legend_x += 260.0;
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">seconds since the measured phase started</text>"#,
        LEFT + (W - LEFT - RIGHT) / 2.0,
        q.y0 + PANEL_H + 36.0
    );
    out.push_str("</svg>\n");
    out
}

fn linear_ticks(max: f64) -> Vec<f64> {
    (0..=4).map(|i| max * f64::from(i) / 4.0).collect()
}

fn fmt_tick(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn axes(out: &mut String, p: &Panel, label: &str, yticks: &[f64], y: impl Fn(f64) -> f64) {
    let x1 = W - RIGHT;
    let y_bottom = p.y0 + PANEL_H;
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT}" y="{}" width="{}" height="{PANEL_H}" fill="none" stroke="#888"/>"##,
        p.y0,
        x1 - LEFT
    );
    for &v in yticks {
        let yy = y(v);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{x1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT - 6.0,
            yy + 4.0,
            fmt_tick(v)
        );
    }
    // Up to ~10 time ticks.
    let step = (p.t_max / 10.0).ceil().max(1.0);
    let mut t = 0.0;
    while t <= p.t_max {
        let xx = p.x(t);
        let _ = writeln!(
            out,
            r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{y_bottom}" y2="{}" stroke="#888"/><text x="{xx:.1}" y="{}" text-anchor="middle">{t:.0}</text>"##,
            y_bottom + 4.0,
            y_bottom + 16.0
        );
        t += step;
    }
    let _ = writeln!(
        out,
        r#"<text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        p.y0 + PANEL_H / 2.0,
        escape(label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, op: OpKind, iops: u64, mean: f64, p99: f64) -> IntervalRow {
        IntervalRow {
            t_s: t,
            op,
            iops,
            bw_bytes: iops * 1024,
            lat_min_us: mean / 2.0,
            lat_mean_us: mean,
            lat_p50_us: mean,
            lat_p99_us: p99,
            lat_max_us: p99 * 2.0,
            errors: 0,
        }
    }

    #[test]
    fn renders_lines_for_both_ops_and_escapes_names() {
        let rows: Vec<IntervalRow> = (1..=5)
            .flat_map(|t| {
                [
                    row(t, OpKind::Write, 1000 * t, 300.0, 900.0),
                    row(t, OpKind::Read, 500, 120.0, 4000.0),
                ]
            })
            .collect();
        let svg = render("a<b>&c", &rows);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("a&lt;b&gt;&amp;c"));
        assert_eq!(
            svg.matches("<polyline").count(),
            2 + 4,
            "iops x2, mean+p99 x2"
        );
        assert!(!svg.contains("NaN"), "{svg}");
        assert!(!svg.contains("inf"), "{svg}");
    }

    #[test]
    fn shades_are_drawn_in_both_panels_and_escaped() {
        let rows: Vec<IntervalRow> = (1..=5)
            .map(|t| row(t, OpKind::Write, 100, 300.0, 900.0))
            .collect();
        let shades = [Shade {
            from_s: 2.0,
            to_s: 3.0,
            label: "inject 0 {\"fault\": \"eio\"} <x>".into(),
        }];
        let svg = render_with_phases("bkchaos: d", &rows, &shades);
        assert_eq!(svg.matches(SHADES[0]).count(), 2);
        assert!(svg.contains("&lt;x&gt;"));
        assert!(svg.contains("bkchaos: d"));
        assert!(!svg.contains("NaN"), "{svg}");
    }

    #[test]
    fn empty_timeline_says_so() {
        let svg = render("x", &[]);
        assert!(svg.contains("no data"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(7.0), 10.0);
        assert_eq!(nice_ceiling(12_000.0), 20_000.0);
        assert_eq!(nice_ceiling(50.0), 50.0);
    }
}

//! `bkbench compare`: the side-by-side table of benches/compare.sh, from result files.
//!
//! Inputs: our bookie's and the Java bookie's bkbench JSON reports (same job set), optionally
//! a fio JSON report whose job names match (the disk's limit for the same shape), and the
//! bookies' peak RSS in KiB (VmHWM). Output: a Markdown table, one row per job, operation
//! and metric, with ratios ours ÷ Java and ours ÷ fio. For latency a ratio below 1 is better
//! for us; for IOPS and MiB/s a ratio above 1 is.
//!
//! Invariant: a value missing on one side prints as "-" and its ratio as "-"; nothing is
//! invented or defaulted to zero.

use std::fmt::Write as _;

use serde_json::Value;

fn opt<'a>(args: &'a [String], key: &str) -> Option<&'a str> {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("--{key}=")))
}

fn load_one(path: &str) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{path} is not valid JSON: {e}"))
}

/// Loads one report, or several (comma-separated paths) merged into one `jobs` list.
fn load(paths: &str) -> Result<Value, String> {
    let mut jobs = Vec::new();
    for p in paths.split(',').filter(|p| !p.is_empty()) {
        let v = load_one(p)?;
        let list = v["jobs"].as_array().ok_or_else(|| {
            format!("{p} has no \"jobs\" list (not a bkbench or fio JSON report)")
        })?;
        jobs.extend(list.iter().cloned());
    }
    Ok(serde_json::json!({ "jobs": jobs }))
}

fn find_job<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["jobs"]
        .as_array()?
        .iter()
        .find(|j| j["jobname"] == name)
}

/// A metric of one operation side ("read"/"write") of a job; works on bkbench and fio JSON.
fn metric(job: &Value, op: &str, m: &str) -> Option<f64> {
    let o = &job[op];
    if o.is_null() {
        return None;
    }
    let ios = o["total_ios"]
        .as_f64()
        .or_else(|| o["total_ios"].as_u64().map(|x| x as f64))?;
    if ios == 0.0 && m != "errors" {
        return None;
    }
    let pct = |p: &str| {
        // bkbench: lat_ns; fio: clat_ns (completion latency) or lat_ns.
        ["lat_ns", "clat_ns"]
            .iter()
            .find_map(|k| o[*k]["percentile"][p].as_f64())
            .map(|ns| ns / 1e6)
    };
    match m {
        "IOPS" => o["iops"].as_f64(),
        "MiB/s" => o["bw_bytes"].as_f64().map(|b| b / 1048576.0),
        "p50 ms" => pct("50.000000"),
        "p99 ms" => pct("99.000000"),
        "p99.9 ms" => pct("99.900000"),
        "errors" => o["total_errors"].as_f64(),
        _ => None,
    }
}

fn fmt(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) if x >= 1.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.3}"),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".into(),
    }
}

/// Builds the table from parsed reports.
pub fn table(
    ours: &Value,
    java: Option<&Value>,
    fio: Option<&Value>,
    rss_ours: Option<u64>,
    rss_java: Option<u64>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| job | op | metric | ours | java | ours/java | fio | ours/fio |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|");
    let jobs = ours["jobs"].as_array().cloned().unwrap_or_default();
    for j in &jobs {
        let name = j["jobname"].as_str().unwrap_or("?");
        let jj = java.and_then(|r| find_job(r, name));
        let fj = fio.and_then(|r| find_job(r, name));
        for op in ["write", "read"] {
            if j[op].is_null() {
                continue;
            }
            for m in ["IOPS", "MiB/s", "p50 ms", "p99 ms", "p99.9 ms", "errors"] {
                let a = metric(j, op, m);
                let b = jj.and_then(|x| metric(x, op, m));
                // fio measures the disk alone: only throughput and latency are comparable.
                let f = if m == "errors" {
                    None
                } else {
                    fj.and_then(|x| metric(x, op, m))
                };
                let _ = writeln!(
                    out,
                    "| {name} | {op} | {m} | {} | {} | {} | {} | {} |",
                    fmt(a),
                    fmt(b),
                    ratio(a, b),
                    fmt(f),
                    ratio(a, f)
                );
            }
        }
    }
    let mib = |k: Option<u64>| k.map(|k| k as f64 / 1024.0);
    let _ = writeln!(
        out,
        "| peak RSS (VmHWM) | - | MiB | {} | {} | {} | - | - |",
        fmt(mib(rss_ours)),
        fmt(mib(rss_java)),
        ratio(mib(rss_ours), mib(rss_java))
    );
    out
}

/// Entry point for `bkbench compare ...`.
pub fn main(args: &[String]) -> Result<String, String> {
    for a in args {
        let known = ["--ours=", "--java=", "--fio=", "--rss-ours=", "--rss-java="];
        if !known.iter().any(|k| a.starts_with(k)) {
            return Err(format!(
                "unknown argument '{a}' (expected {})",
                known.join(", ")
            ));
        }
    }
    let ours = load(opt(args, "ours").ok_or("--ours=OURS.json is required")?)?;
    let java = opt(args, "java").map(load).transpose()?;
    let fio = opt(args, "fio").map(load).transpose()?;
    let kib = |k: &str| -> Result<Option<u64>, String> {
        opt(args, k)
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("--{k}: expected KiB, got '{v}'"))
            })
            .transpose()
    };
    Ok(table(
        &ours,
        java.as_ref(),
        fio.as_ref(),
        kib("rss-ours")?,
        kib("rss-java")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(iops: f64, p99_ns: u64) -> Value {
        json!({"jobs": [{"jobname": "w", "write": {
            "total_ios": 1000, "iops": iops, "bw_bytes": iops * 1024.0, "total_errors": 0,
            "lat_ns": {"percentile": {"50.000000": 100000, "99.000000": p99_ns, "99.900000": p99_ns * 2}}
        }, "read": null}]})
    }

    #[test]
    fn ratios_and_missing_values() {
        let ours = report(20000.0, 2_000_000);
        let java = report(10000.0, 4_000_000);
        let fio = json!({"jobs": [{"jobname": "w", "write": {"total_ios": 5, "iops": 5000.0, "bw_bytes": 5000.0 * 1024.0,
            "clat_ns": {"percentile": {"50.000000": 50000, "99.000000": 1_000_000}}}}]});
        let t = table(&ours, Some(&java), Some(&fio), Some(204800), None);
        assert!(
            t.contains("| w | write | IOPS | 20000 | 10000 | 2.00 | 5000 | 4.00 |"),
            "{t}"
        );
        assert!(
            t.contains("| w | write | p99 ms | 2.00 | 4.00 | 0.50 | 1.00 | 2.00 |"),
            "{t}"
        );
        assert!(
            t.contains("| w | write | p99.9 ms | 4.00 | 8.00 | 0.50 | - | - |"),
            "{t}"
        );
        assert!(
            t.contains("| peak RSS (VmHWM) | - | MiB | 200 | - | - | - | - |"),
            "{t}"
        );
        let t = table(&ours, None, None, None, None);
        assert!(
            t.contains("| w | write | IOPS | 20000 | - | - | - | - |"),
            "{t}"
        );
    }

    #[test]
    fn rejects_unknown_arguments() {
        let e = main(&["--ourz=x".to_string()]).unwrap_err();
        assert!(e.contains("--ourz=x"), "{e}");
    }
}

//! The `bkbench` binary as a user runs it: JSON that parses, per-second CSV and SVG logs, and
//! error messages that name the option, file and line, against the in-process fake bookie.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::FakeBookie;

/// Starts a fake bookie on its own runtime thread (lives until the test process exits).
fn fake_bookie() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let fake = FakeBookie::start().await;
            tx.send(fake.addr.clone()).expect("send addr");
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("fake bookie address")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bkbench-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn bkbench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bkbench"))
        .args(args)
        .output()
        .expect("run bkbench")
}

#[test]
fn json_report_and_latency_logs() {
    let addr = fake_bookie();
    let dir = scratch("logs");
    let prefix = dir.join("run");
    let out = bkbench(&[
        &format!("--bookie={addr}"),
        "--name=w1",
        "--rw=write",
        "--bs=2k",
        "--iodepth=4",
        "--rate_iops=1000",
        "--runtime=2200ms",
        &format!("--write_lat_log={}", prefix.display()),
        "--output-format=json",
        "--progress=0",
    ]);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is valid JSON");
    let w = &v["jobs"][0]["write"];
    let ios = w["total_ios"].as_u64().expect("total_ios");
    // A cap, not a promise: a loaded CI machine may fall short, but never above the rate.
    assert!(
        (300..=2400).contains(&ios),
        "rate-limited to ~1000/s for 2.2 s: {ios}"
    );
    assert_eq!(w["io_bytes"].as_u64(), Some(ios * 2048));
    assert_eq!(w["total_errors"], 0);
    assert!(w["lat_ns"]["percentile"]["99.990000"].as_u64().is_some());
    let csv = std::fs::read_to_string(dir.join("run_w1.csv")).expect("csv log");
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].starts_with("t_s,op,iops"), "{csv}");
    assert!(rows.len() >= 3, "at least two seconds logged: {csv}");
    assert!(rows[1].starts_with("1,write,"), "{csv}");
    let svg = std::fs::read_to_string(dir.join("run_w1.svg")).expect("svg chart");
    assert!(
        svg.starts_with("<svg") && svg.contains("<polyline"),
        "{svg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn text_report_has_fio_lines() {
    let addr = fake_bookie();
    let out = bkbench(&[
        &format!("--bookie={addr}"),
        "--name=t",
        "--number_ios=200",
        "--iodepth=8",
        "--progress=0",
    ]);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("t: (groupid=0)"), "{text}");
    assert!(text.contains("write: IOPS="), "{text}");
    assert!(text.contains("lat (usec): min="), "{text}");
    assert!(text.contains("99.90th=["), "{text}");
    assert!(text.contains("stopped by: number_ios"), "{text}");
}

#[test]
fn bad_options_and_job_files_are_named() {
    let out = bkbench(&["--name=x", "--iodepth=lots"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'iodepth'") && err.contains("command line"),
        "{err}"
    );

    let dir = scratch("jobfile");
    let file = dir.join("bad.fio");
    std::fs::write(&file, "[global]\nbs=1k\n\n[a]\nrw=sideways\n").expect("write job file");
    let out = bkbench(&[file.to_str().expect("utf8 path")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.fio:5") && err.contains("'rw'"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);

    let out = bkbench(&["--name=x", "--bookie=127.0.0.1:1", "--number_ios=1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect to bookie 127.0.0.1:1"));
}

#[test]
fn standard_job_file_parses() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/jobs/standard.fio");
    let text = std::fs::read_to_string(path).expect("standard.fio");
    let defs = bkbench::jobfile::parse_job_file(path, &text).expect("parses");
    let groups = bkbench::jobfile::resolve(defs, &Default::default()).expect("valid jobs");
    let names: Vec<String> = groups.iter().flatten().map(|j| j.name.clone()).collect();
    for want in [
        "write-1k-max",
        "write-1k-rate",
        "write-5m",
        "tailing-read",
        "catchup-read",
        "mixed",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    assert_eq!(
        groups.len(),
        names.len(),
        "every standard job is stonewalled"
    );
}

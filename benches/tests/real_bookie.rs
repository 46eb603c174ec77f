//! bkbench against the real `bookie` binary (standalone mode): writes, tailing reads, batch
//! reads and v3 all complete with zero errors.
//!
//! Ignored by default because it needs a built bookie: run it with
//! `BOOKIE_BIN=$CARGO_TARGET_DIR/release/bookie cargo test -p bkbench --test real_bookie -- --ignored`.
//! Without BOOKIE_BIN the test fails (it is never silently skipped).

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Bookie {
    child: Child,
    dir: std::path::PathBuf,
}

impl Drop for Bookie {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn start_bookie() -> (Bookie, String) {
    let bin = std::env::var("BOOKIE_BIN")
        .expect("set BOOKIE_BIN to the bookie binary (this test runs only with --ignored)");
    let dir = std::env::temp_dir().join(format!("bkbench-real-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("data dir");
    let port = free_port();
    let child = Command::new(bin)
        .args(["--standalone", "--data-dir"])
        .arg(&dir)
        .args([
            "--port",
            &port.to_string(),
            "--metrics-port",
            &free_port().to_string(),
        ])
        // The machine's disk may be fuller than the default read-only threshold.
        .args([
            "--set",
            "diskUsageThreshold=0.999",
            "--set",
            "diskUsageWarnThreshold=0.998",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start bookie");
    let addr = format!("127.0.0.1:{port}");
    let t0 = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "bookie did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (Bookie { child, dir }, addr)
}

fn bkbench_json(args: &[String]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_bkbench"))
        .args(args)
        .args(["--output-format=json", "--progress=0"])
        .output()
        .expect("run bkbench");
    assert!(
        out.status.success(),
        "bkbench failed ({}): {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

#[test]
#[ignore = "needs BOOKIE_BIN (a built bookie binary)"]
fn standard_shapes_against_the_real_bookie() {
    let (_bookie, addr) = start_bookie();
    let b = format!("--bookie={addr}");
    let v = bkbench_json(&[
        b.clone(),
        "--number_ios=2000".into(),
        "--runtime=20s".into(),
        "--serial".into(),
        "--name=w-v2".into(),
        "--iodepth=64".into(),
        "--ledgers=4".into(),
        "--name=w-v3".into(),
        "--protocol=v3".into(),
        "--iodepth=16".into(),
        "--bs_range=100-64k".into(),
        "--name=tail".into(),
        "--rw=mixed".into(),
        "--read_pattern=tailing".into(),
        "--iodepth=16".into(),
        "--name=batch".into(),
        "--rw=read".into(),
        "--prefill=2m".into(),
        "--bs=4k".into(),
        "--batch_read=16".into(),
        "--iodepth=4".into(),
    ]);
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 4);
    for j in jobs {
        for op in ["write", "read"] {
            if !j[op].is_null() {
                assert_eq!(
                    j[op]["total_errors"], 0,
                    "{} {op}: {}",
                    j["jobname"], j[op]["errors"]
                );
            }
        }
    }
    assert!(jobs[2]["read"]["total_ios"].as_u64().unwrap_or(0) > 0);
    assert_eq!(
        jobs[3]["read"]["entries"].as_u64(),
        Some(512),
        "every prefilled entry batch-read once"
    );
}

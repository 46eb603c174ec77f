//! Issue 11, the background scrubber, tried as an operator would with the real binary:
//! start a standalone bookie with the admin API, add entries, stop it (SIGTERM), flip
//! bytes inside one entry of a segment, start it again, ask for a scrub pass
//! (`PUT /api/v1/bookie/scrub`), watch it (`GET /api/v1/bookie/scrub`) and find the
//! corruption in `GET /api/v1/bookie/corruptions` with its file, ledger and entry, and in
//! the metrics. A clean bookie's pass finds nothing, and a second ask while a pass runs is
//! refused with 409.
//!
//! Ports from this helper's range (bookies 3800-3899, admin 8800-8899).

// Test code damages real directories directly; only production code is bound by
// ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod host_disk;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use common::*;
use serde_json::Value;

fn start(data: &Path, port: u16, http_port: u16, rate: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_bookie"))
        .args(host_disk::ARGS)
        .args(["--standalone", "--data-dir"])
        .arg(data)
        .args(["--port", &port.to_string()])
        .args([
            "--set",
            "dbStorage_writeCacheMaxSizeMb=16",
            "--set",
            "dbStorage_readAheadCacheMaxSizeMb=8",
            "--set",
            "httpServerEnabled=true",
            "--set",
            "statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider",
            "--set",
            "httpServerHost=127.0.0.1",
            "--set",
            &format!("httpServerPort={http_port}"),
            "--set",
            &format!("localScrubRateLimit={rate}"),
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bookie")
}

/// One HTTP/1.1 request; `None` when the connection is refused or fails.
fn http(addr: SocketAddr, method: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: bookie\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

fn call(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    http(addr, method, path).unwrap_or_else(|| panic!("{method} {path}: no answer"))
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// Waits until the bookie port and the admin API both answer.
async fn serving(child: &mut Child, port: u16, admin: SocketAddr) -> Client {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            panic!("bookie exited at start-up: {s}");
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
            && http(admin, "GET", "/api/v1/bookie/state").is_some()
        {
            return Client::connect(([127, 0, 0, 1], port).into()).await;
        }
        assert!(Instant::now() < deadline, "bookie never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn stop(mut child: Child) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            assert!(s.success(), "SIGTERM exit status {s}");
            return;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn segments(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            segments(&p, out);
        } else if p.extension().is_some_and(|x| x == "seg") {
            out.push(p);
        }
    }
}

fn payload(e: i64) -> Vec<u8> {
    (0..300).map(|i| (e * 7 + i) as u8).collect()
}

/// Adds entries 0..100 of ledger 1.
async fn add_entries(c: &mut Client) {
    for e in 0..100 {
        let r = c
            .v2_add(Flags::NONE, key(), entry(1, e, e - 1, &payload(e)))
            .await;
        assert_eq!(r.error, ErrorCode::Ok);
    }
}

/// Asks for a pass and waits (hang guard only) until a pass ended; returns `lastPass`.
fn scrub_now(admin: SocketAddr) -> Value {
    let (code, body) = call(admin, "PUT", "/api/v1/bookie/scrub");
    assert_eq!(code, 200, "{body}");
    wait_last_pass(admin)
}

fn wait_last_pass(admin: SocketAddr) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (code, body) = call(admin, "GET", "/api/v1/bookie/scrub");
        assert_eq!(code, 200, "{body}");
        let v = json_of(&body);
        if v["running"] == false && !v["lastPass"].is_null() {
            return v["lastPass"].clone();
        }
        assert!(Instant::now() < deadline, "scrub never ended: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn metric(admin: SocketAddr, name: &str) -> f64 {
    let (code, body) = call(admin, "GET", "/metrics");
    assert_eq!(code, 200);
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
        .trim()
        .parse()
        .unwrap()
}

/// A data directory holding the test's entries (`add_entries`), written by a bookie on
/// these ports that was then stopped.
async fn stopped_with_entries(port: u16, http_port: u16, admin: SocketAddr) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start(dir.path(), port, http_port, "0");
    let mut c = serving(&mut child, port, admin).await;
    add_entries(&mut c).await;
    drop(c);
    stop(child);
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrub_lists_a_flipped_entry_with_its_ledger_and_entry() {
    let (port, http_port) = (3801, 8801);
    let admin = SocketAddr::from(([127, 0, 0, 1], http_port));
    let dir = stopped_with_entries(port, http_port, admin).await;

    let mut segs = Vec::new();
    segments(dir.path(), &mut segs);
    assert_eq!(segs.len(), 1, "{segs:?}");
    let seg = &segs[0];
    let mut bytes = std::fs::read(seg).unwrap();
    let stored = entry(1, 50, 49, &payload(50));
    let at = bytes
        .windows(stored.len())
        .position(|w| w == &stored[..])
        .expect("entry 50 is in the segment");
    for b in &mut bytes[at + 100..at + 104] {
        *b ^= 0xff;
    }
    std::fs::write(seg, &bytes).unwrap();

    let mut child = start(dir.path(), port, http_port, "0");
    let _c = serving(&mut child, port, admin).await;
    let (code, body) = call(admin, "GET", "/api/v1/bookie/corruptions");
    assert_eq!(code, 200, "{body}");
    assert_eq!(json_of(&body)["corruptions"], serde_json::json!([]));

    let last = scrub_now(admin);
    assert_eq!(last["result"], "corruptions found", "{last}");
    assert_eq!(last["corruptEntries"], 1, "{last}");
    assert_eq!(last["entries"], 100, "{last}");
    let (code, body) = call(admin, "GET", "/api/v1/bookie/corruptions");
    assert_eq!(code, 200, "{body}");
    let list = json_of(&body)["corruptions"].clone();
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{body}");
    let c0 = &list[0];
    assert_eq!(c0["ledgerId"], 1, "{body}");
    assert_eq!(c0["entryId"], 50, "{body}");
    assert_eq!(c0["foundBy"], "scrub", "{body}");
    assert_eq!(c0["offset"], at as u64, "{body}");
    assert_eq!(
        c0["file"]
            .as_str()
            .map(std::fs::canonicalize)
            .map(Result::unwrap),
        Some(std::fs::canonicalize(seg).unwrap()),
        "{body}"
    );
    assert_eq!(metric(admin, "bookie_rs_entrylog_corrupt_entries"), 1.0);
    assert_eq!(metric(admin, "scrubber_detectedScrubErrors"), 1.0);
    assert_eq!(metric(admin, "bookie_rs_scrub_passes"), 1.0);
    assert!(metric(admin, "bookie_rs_scrub_last_completed_timestamp_seconds") > 0.0);
    stop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_bookie_scrubs_clean_and_one_pass_runs_at_a_time() {
    let (port, http_port) = (3802, 8802);
    let admin = SocketAddr::from(([127, 0, 0, 1], http_port));
    let dir = stopped_with_entries(port, http_port, admin).await;

    // 100 entries at 25 entries/s: the pass waits about 4 s before its data read (a read
    // starts once the rate allows it), and the ask marks the pass running before it
    // answers, so the second ask finds it running.
    let mut child = start(dir.path(), port, http_port, "25");
    let _c = serving(&mut child, port, admin).await;
    let (code, body) = call(admin, "PUT", "/api/v1/bookie/scrub");
    assert_eq!(code, 200, "{body}");
    let (code, body) = call(admin, "POST", "/api/v1/bookie/scrub");
    assert_eq!(code, 409, "{body}");
    let last = wait_last_pass(admin);
    assert_eq!(last["result"], "ok", "{last}");
    assert_eq!(last["entries"], 100, "{last}");
    assert_eq!(last["corruptEntries"], 0, "{last}");
    let (_, body) = call(admin, "GET", "/api/v1/bookie/corruptions");
    assert_eq!(json_of(&body)["corruptions"], serde_json::json!([]));
    assert_eq!(metric(admin, "scrubber_detectedScrubErrors"), 0.0);
    assert_eq!(metric(admin, "bookie_rs_scrub_passes"), 1.0);
    stop(child);
}

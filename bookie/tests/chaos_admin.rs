//! Issue 14, the chaos layer inside a running bookie, tried with the real binary: a
//! standalone bookie started with `chaosEnabled=true` says so in its metrics, takes an EIO
//! fault on ledger reads through `POST /api/v1/chaos/faults`, answers a v2 read with rc 101
//! (EIO) while it is active, lists it with its hits, and reads fine again once `DELETE`
//! cleared it; a bit flipped on read is rc 101 too. A bookie started without chaos refuses the endpoint (403) and reports
//! `bookie_rs_chaos_enabled 0`. A fault plan given at start-up (`chaosFaultPlan`) is active
//! from the start; ENOSPC on journal writes turns the bookie read-only (adds EREADONLY,
//! never EIO) until the fault is cleared. A power cut injected while entries are added
//! aborts the bookie, and a restart on the same directories reads back every entry that
//! was acknowledged, byte-exact.

// The test writes its fault plan file directly; only production code is bound by
// ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod host_disk;
mod ports;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use common::*;
use ports::free_port;
use serde_json::Value;

fn start(data: &Path, port: u16, http_port: u16, chaos: bool) -> Child {
    start_with(data, port, http_port, chaos, &[])
}

fn start_with(data: &Path, port: u16, http_port: u16, chaos: bool, extra: &[String]) -> Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bookie"));
    cmd.args(host_disk::ARGS);
    // SAFETY: setrlimit is async-signal-safe; a power cut aborts the bookie, and its
    // core file is of no use to the test.
    unsafe {
        cmd.pre_exec(|| {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    cmd.args(["--standalone", "--data-dir"])
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
            &format!("chaosEnabled={chaos}"),
        ])
        .args(extra.iter().flat_map(|kv| ["--set", kv.as_str()]))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bookie")
}

/// One HTTP/1.1 request with `body`; `None` when the connection is refused or fails.
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: bookie\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

fn call(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    http(addr, method, path, body).unwrap_or_else(|| panic!("{method} {path}: no answer"))
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// The value of the metric line that starts with `prefix` (name and labels).
fn metric(admin: SocketAddr, prefix: &str) -> Option<f64> {
    let (code, body) = call(admin, "GET", "/metrics", "");
    assert_eq!(code, 200, "{body}");
    body.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
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
            && http(admin, "GET", "/api/v1/bookie/state", "").is_some()
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

fn payload(e: i64) -> Vec<u8> {
    (0..300).map(|i| (e * 11 + i) as u8).collect()
}

const FAULTS: &str = "/api/v1/chaos/faults";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eio_on_ledger_reads_answers_rc_101_until_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let (port, http_port) = (free_port(), free_port());
    let admin: SocketAddr = ([127, 0, 0, 1], http_port).into();

    // Entries written, then a restart: they are in ledger segments, no cache holds them.
    let mut child = start(dir.path(), port, http_port, true);
    let mut c = serving(&mut child, port, admin).await;
    for e in 0..20 {
        let r = c
            .v2_add(Flags::NONE, key(), entry(1, e, e - 1, &payload(e)))
            .await;
        assert_eq!(r.error, ErrorCode::Ok);
    }
    drop(c);
    stop(child);
    let mut child = start(dir.path(), port, http_port, true);
    let mut c = serving(&mut child, port, admin).await;

    assert_eq!(metric(admin, "bookie_rs_chaos_enabled "), Some(1.0));
    let (code, body) = call(
        admin,
        "POST",
        FAULTS,
        r#"{"dir": "ledgers", "op": "read", "fault": "eio"}"#,
    );
    assert_eq!(code, 201, "{body}");
    let id = json_of(&body)["id"].as_u64().unwrap();

    let r = c.v2_read(1, 5).await;
    assert_eq!(r.error, ErrorCode::Io, "a read under EIO answers rc 101");

    let (code, body) = call(admin, "GET", FAULTS, "");
    assert_eq!(code, 200, "{body}");
    let listed = json_of(&body);
    assert_eq!(listed["faults"][0]["id"].as_u64(), Some(id));
    assert_eq!(listed["faults"][0]["spec"]["fault"], "eio");
    assert!(listed["faults"][0]["hits"].as_u64().unwrap() >= 1, "{body}");
    assert!(listed["injected"]["eio"].as_u64().unwrap() >= 1, "{body}");
    assert!(metric(admin, "bookie_rs_chaos_faults_injected_total{kind=\"eio\"}").unwrap() >= 1.0);

    let (code, body) = call(admin, "DELETE", FAULTS, "");
    assert_eq!((code, json_of(&body)["cleared"].as_u64()), (200, Some(1)));
    let r = c.v2_read(1, 5).await;
    assert_eq!(r.error, ErrorCode::Ok);
    assert!(
        r.entry.ends_with(&payload(5)),
        "the entry reads back intact"
    );

    // A spec that does not parse is refused with the parser's reason.
    let (code, body) = call(
        admin,
        "POST",
        FAULTS,
        r#"{"fault": "eio", "trigger": {"every": 0}}"#,
    );
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("every"), "{body}");
    drop(c);
    stop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_chaos_the_endpoint_is_refused_and_the_metric_says_off() {
    let dir = tempfile::tempdir().unwrap();
    let (port, http_port) = (free_port(), free_port());
    let admin: SocketAddr = ([127, 0, 0, 1], http_port).into();
    let mut child = start(dir.path(), port, http_port, false);
    let c = serving(&mut child, port, admin).await;
    assert_eq!(metric(admin, "bookie_rs_chaos_enabled "), Some(0.0));
    let (code, body) = call(admin, "POST", FAULTS, r#"{"fault": "eio"}"#);
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("chaosEnabled=true"), "{body}");
    assert_eq!(call(admin, "GET", FAULTS, "").0, 403);
    drop(c);
    stop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enospc_on_journal_writes_makes_the_bookie_read_only_until_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let (port, http_port) = (free_port(), free_port());
    let admin: SocketAddr = ([127, 0, 0, 1], http_port).into();
    let mut child = start(dir.path(), port, http_port, true);
    let mut c = serving(&mut child, port, admin).await;
    for e in 0..5 {
        let r = c
            .v2_add(Flags::NONE, key(), entry(2, e, e - 1, &payload(e)))
            .await;
        assert_eq!(r.error, ErrorCode::Ok);
    }
    let (code, body) = call(
        admin,
        "POST",
        FAULTS,
        r#"{"dir": "journal", "op": "write", "fault": "enospc"}"#,
    );
    assert_eq!(code, 201, "{body}");
    let r = c
        .v2_add(Flags::NONE, key(), entry(2, 5, 4, &payload(5)))
        .await;
    assert_eq!(
        r.error,
        ErrorCode::ReadOnly,
        "a full journal refuses adds, never EIO"
    );
    assert_eq!(metric(admin, "bookie_SERVER_STATUS "), Some(0.0));
    assert!(
        metric(
            admin,
            "bookie_rs_chaos_faults_injected_total{kind=\"enospc\"}"
        )
        .unwrap()
            >= 1.0
    );

    // Space back: adds are accepted again without a restart (the deadline is a hang guard).
    call(admin, "DELETE", FAULTS, "");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = c
            .v2_add(Flags::NONE, key(), entry(2, 5, 4, &payload(5)))
            .await;
        match r.error {
            ErrorCode::Ok => break,
            ErrorCode::ReadOnly => {}
            other => panic!("add answered {other:?}"),
        }
        assert!(
            Instant::now() < deadline,
            "not writable after the fault was cleared"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for e in 0..6 {
        let r = c.v2_read(2, e).await;
        assert_eq!(r.error, ErrorCode::Ok, "entry {e}");
        assert!(r.entry.ends_with(&payload(e)));
    }
    drop(c);
    stop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_plan_given_at_start_up_is_active_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    std::fs::write(
        &plan,
        r#"[{"dir": "ledgers", "op": "read", "fault": "eio", "trigger": {"every": 2}, "seed": 9},
            {"dir": "journal", "op": "fdatasync", "fault": {"latency": {"ms": 1}}}]"#,
    )
    .unwrap();
    let (port, http_port) = (free_port(), free_port());
    let admin: SocketAddr = ([127, 0, 0, 1], http_port).into();
    let mut child = start_with(
        &dir.path().join("data"),
        port,
        http_port,
        true,
        &[format!("chaosFaultPlan={}", plan.display())],
    );
    let c = serving(&mut child, port, admin).await;
    let (code, body) = call(admin, "GET", FAULTS, "");
    assert_eq!(code, 200, "{body}");
    let listed = json_of(&body);
    let faults = listed["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 2, "{body}");
    assert_eq!(faults[0]["spec"]["trigger"]["every"], 2);
    assert_eq!(faults[1]["spec"]["fault"]["latency"]["ms"], 1);
    drop(c);
    stop(child);

    // A plan that does not parse stops start-up.
    std::fs::write(&plan, r#"[{"fault": "eio", "colour": "red"}]"#).unwrap();
    let mut bad = start_with(
        &dir.path().join("data"),
        free_port(),
        free_port(),
        true,
        &[format!("chaosFaultPlan={}", plan.display())],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = bad.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "a bad plan did not stop start-up"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success());
}

/// The payload of entry `e` of ledger `l` (distinct for every entry).
fn payload_of(l: i64, e: i64) -> Vec<u8> {
    (0..500).map(|i| (l * 131 + e * 7 + i) as u8).collect()
}

/// Adds entries round-robin to ledgers 1..=3 until the connection drops; after 300
/// acknowledged adds, posts `cut` (a power-cut fault). Returns the acknowledged
/// (ledger, entry) pairs: each was answered Ok, so it was fsynced in the journal.
async fn add_until_cut(c: &mut Client, admin: SocketAddr, cut: &str) -> Vec<(i64, i64)> {
    let mut acked = Vec::new();
    let mut posted = false;
    for i in 0..20_000i64 {
        let (l, e) = (i % 3 + 1, i / 3);
        let req = bk_proto::v2::AddRequest::new(
            Flags::NONE,
            key(),
            entry(l, e, e - 1, &payload_of(l, e)),
        )
        .expect("entry");
        c.v2_send(bk_proto::v2::Request::AddEntry(req)).await;
        let Some(frame) = c.recv_frame().await else {
            return acked;
        };
        match bk_proto::decode_response_v2(frame).expect("v2 response") {
            bk_proto::v2::Response::AddEntry(r) if r.error == ErrorCode::Ok => acked.push((l, e)),
            bk_proto::v2::Response::AddEntry(_) => return acked,
            other => panic!("expected add response, got {other:?}"),
        }
        if acked.len() == 300 && !posted {
            // No answer: the cut came (and the abort) before the answer was sent.
            if let Some((code, body)) = http(admin, "POST", FAULTS, cut) {
                assert_eq!(code, 201, "{body}");
            }
            posted = true;
        }
    }
    panic!("the power cut never came");
}

/// Waits for the bookie to die of the power cut's abort.
fn aborted(mut child: Child) {
    use std::os::unix::process::ExitStatusExt;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            assert_eq!(s.signal(), Some(libc::SIGABRT), "the cut aborts: {s}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the bookie did not abort after the power cut");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Restarts on `data` (with the same bookie `port`: the cookie names it) without chaos
/// and reads back `acked`; returns those that do not read back byte-exact.
async fn lost_after_restart(data: &Path, port: u16, acked: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let http_port = free_port();
    let admin: SocketAddr = ([127, 0, 0, 1], http_port).into();
    let mut child = start(data, port, http_port, false);
    let mut c = serving(&mut child, port, admin).await;
    let mut lost = Vec::new();
    for &(l, e) in acked {
        let r = c.v2_read(l, e).await;
        if r.error != ErrorCode::Ok || !r.entry.ends_with(&payload_of(l, e)) {
            lost.push((l, e));
        }
    }
    drop(c);
    stop(child);
    lost
}

/// The drill: a bookie armed from start-up by a plan (`extra` keys added), adds on three
/// ledgers, a power cut posted after 300 acknowledged adds that fires on the 40th write
/// after it (journal or ledger); the bookie must die of SIGABRT; a restart on the same
/// directories reads back the acknowledged entries. Returns (acknowledged, lost).
async fn power_cut_drill(extra: &[&str]) -> (usize, Vec<(i64, i64)>) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let plan = dir.path().join("plan.json");
    // A power_cut fault in the plan arms the layer from start-up (this one never fires).
    std::fs::write(
        &plan,
        r#"[{"file": "no-file-has-this-name", "fault": "power_cut"}]"#,
    )
    .unwrap();
    let (port, http_port) = (free_port(), free_port());
    let admin: SocketAddr = ([127, 0, 0, 1], http_port).into();
    let mut keys = vec![format!("chaosFaultPlan={}", plan.display())];
    keys.extend(extra.iter().map(|k| k.to_string()));
    let mut child = start_with(&data, port, http_port, true, &keys);
    let mut c = serving(&mut child, port, admin).await;
    let (code, body) = call(admin, "GET", FAULTS, "");
    assert_eq!(code, 200, "{body}");
    assert_eq!(json_of(&body)["injected"]["power_cut"], 0, "{body}");
    let acked = add_until_cut(
        &mut c,
        admin,
        r#"{"op": "write", "fault": "power_cut", "trigger": {"every": 40}}"#,
    )
    .await;
    drop(c);
    aborted(child);
    assert!(acked.len() >= 300, "{} acknowledged", acked.len());
    let lost = lost_after_restart(&data, port, &acked).await;
    (acked.len(), lost)
}

/// Issue 14's power cut with the real binary (the drill above): no acknowledged entry is
/// lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_power_cut_while_adding_loses_no_acknowledged_entry() {
    let (acked, lost) = power_cut_drill(&["flushInterval=100"]).await;
    assert!(
        lost.is_empty(),
        "{} of {acked} acknowledged entries lost, first {:?}",
        lost.len(),
        lost.first()
    );
}

/// The check above can fail: with the test-only switch that acknowledges adds before
/// their fdatasync (and no checkpoint to copy them to ledger storage first), the same
/// drill loses acknowledged entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_acks_before_fdatasync_the_same_power_cut_loses_acknowledged_entries() {
    let (acked, lost) = power_cut_drill(&[
        "chaosTestOnlyAckBeforeFdatasync=true",
        "flushInterval=3600000",
    ])
    .await;
    eprintln!(
        "acks before fdatasync: {} of {acked} acknowledged entries lost",
        lost.len()
    );
    assert!(
        !lost.is_empty(),
        "all {acked} acknowledged entries read back: the drill cannot see a loss"
    );
}

//! Production drill: the journal disk fills up under an unpaced load (issue #10, point 3).
//!
//! The `bookie` binary runs standalone with its journal directory on a small ext4 loop
//! mount (`loopfs`) and its ledger directory elsewhere. A filler file placed first leaves
//! room for a few journal segments; no checkpoint runs during the drill (long
//! `flushInterval`), so the journal's segments pile up until the disk is full. The drill
//! checks:
//! - the process never exits; adds are answered EREADONLY once the journal is full (never
//!   EIO, never acknowledged unwritten); reads are served; `bookie_SERVER_STATUS` shows
//!   read-only on the metrics endpoint;
//! - every acknowledged entry reads back byte-exact;
//! - the filler deleted, adds are accepted again without a restart;
//! - killed (SIGKILL) and restarted with the journal disk full again, the bookie comes up
//!   (journal replay only reads), serves every acknowledged entry, refuses adds once its
//!   preallocated segments are used (EREADONLY), and takes adds again when space returns;
//!   SIGTERM then ends it with status 0.
//!
//! Prints the figures the closing note quotes (time to read-only, time to writable,
//! entries checked). Skips (printing SKIPPED) only where loop mounts are impossible and
//! BK_REQUIRE_LOOP is unset.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod loopfs;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use common::{entry, key, Client};

/// Concurrent connections of the load, one ledger each.
const WRITERS: i64 = 8;
const ENTRY_BYTES: usize = 64 * 1024;
const FIRST_LEDGER: i64 = 100;

mod host_disk;
mod ports;
use ports::free_port;

fn payload(ledger: i64, e: i64) -> Vec<u8> {
    (0..ENTRY_BYTES)
        .map(|i| (ledger as usize * 7 + e as usize * 31 + i) as u8)
        .collect()
}

/// The bookie and its log file; dropping it kills the bookie (a failed test) and prints
/// the log's warnings and errors.
struct BookieProcess(Child, PathBuf);

impl BookieProcess {
    fn start(conf: &Path, log_path: PathBuf) -> BookieProcess {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        BookieProcess(
            Command::new(env!("CARGO_BIN_EXE_bookie"))
                .args(host_disk::ARGS)
                .arg("--standalone")
                .arg("--conf")
                .arg(conf)
                .env("RUST_LOG", "info")
                .stdout(Stdio::from(log.try_clone().unwrap()))
                .stderr(Stdio::from(log))
                .spawn()
                .expect("spawn bookie"),
            log_path,
        )
    }

    fn assert_alive(&mut self, when: &str) {
        if let Some(status) = self.0.try_wait().unwrap() {
            panic!("bookie exited ({status}) {when}");
        }
    }
}

impl Drop for BookieProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let log = std::fs::read_to_string(&self.1).unwrap_or_default();
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| !l.contains(" INFO ") || l.contains("journal") || l.contains("space"))
            .collect();
        for line in &lines[lines.len().saturating_sub(40)..] {
            println!("bookie: {line}");
        }
    }
}

/// Fills `path` with zeros until the file system refuses (ENOSPC), leaving `leave`
/// bytes free for an unprivileged writer; fsynced.
fn fill(m: &loopfs::LoopMount, path: &Path, leave: u64) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    let mib = vec![0u8; 1 << 20];
    let small = vec![0u8; 4096];
    loop {
        let free = m.free_bytes();
        if free <= leave {
            break;
        }
        let chunk: &[u8] = if free - leave >= 1 << 20 {
            &mib
        } else {
            &small
        };
        match f.write_all(chunk) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filler: {e}"),
        }
        if chunk.len() == small.len() {
            f.sync_all().unwrap();
        }
    }
    f.sync_all().unwrap();
}

/// `bookie_SERVER_STATUS` from the metrics endpoint (1 writable, 0 read-only).
fn server_status(metrics_port: u16) -> Option<i64> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", metrics_port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    body.lines()
        .find_map(|l| l.strip_prefix("bookie_SERVER_STATUS "))
        .and_then(|v| v.trim().parse().ok())
}

async fn wait_for_port(bookie: &mut BookieProcess, addr: SocketAddr) {
    let start = Instant::now();
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        bookie.assert_alive("at start-up");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "bookie never bound its port"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

type Acked = Arc<Mutex<BTreeMap<(i64, i64), ()>>>;

/// Unpaced adds on `WRITERS` connections until each one is answered EREADONLY. Entry ids
/// continue from `next` (per ledger). Returns when every writer saw EREADONLY.
async fn load_until_read_only(addr: SocketAddr, acked: Acked, next: &mut BTreeMap<i64, i64>) {
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let ledger = FIRST_LEDGER + w;
        let first = *next.get(&ledger).unwrap_or(&0);
        let acked = acked.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            let mut e = first;
            loop {
                let r = c
                    .v2_add(
                        Flags::NONE,
                        key(),
                        entry(ledger, e, e - 1, &payload(ledger, e)),
                    )
                    .await;
                match r.error {
                    ErrorCode::Ok => {
                        acked.lock().unwrap().insert((ledger, e), ());
                        e += 1;
                    }
                    ErrorCode::ReadOnly => return (ledger, e),
                    other => panic!("add {ledger}/{e} answered {other:?}"),
                }
                assert!(e < first + 100_000, "the journal disk never filled");
            }
        }));
    }
    for t in tasks {
        let (ledger, e) = t.await.expect("writer");
        next.insert(ledger, e);
    }
}

async fn read_back(addr: SocketAddr, acked: &Acked) -> usize {
    let all: Vec<(i64, i64)> = acked.lock().unwrap().keys().copied().collect();
    let mut c = Client::connect(addr).await;
    for (ledger, e) in &all {
        let r = c.v2_read(*ledger, *e).await;
        assert_eq!(r.error, ErrorCode::Ok, "read {ledger}/{e}");
        assert_eq!(
            r.entry,
            entry(*ledger, *e, e - 1, &payload(*ledger, *e)),
            "entry {ledger}/{e} bytes"
        );
    }
    all.len()
}

/// Adds one entry every 50 ms until one is acknowledged; returns how long it took.
async fn until_writable(
    bookie: &mut BookieProcess,
    addr: SocketAddr,
    acked: &Acked,
    next: &mut BTreeMap<i64, i64>,
) -> Duration {
    let start = Instant::now();
    let ledger = FIRST_LEDGER;
    let mut c = Client::connect(addr).await;
    loop {
        let e = next[&ledger];
        let r = c
            .v2_add(
                Flags::NONE,
                key(),
                entry(ledger, e, e - 1, &payload(ledger, e)),
            )
            .await;
        match r.error {
            ErrorCode::Ok => {
                acked.lock().unwrap().insert((ledger, e), ());
                next.insert(ledger, e + 1);
                return start.elapsed();
            }
            ErrorCode::ReadOnly => {}
            other => panic!("add {ledger}/{e} answered {other:?}"),
        }
        bookie.assert_alive("while waiting for space");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "not writable 30 s after space was freed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_status(metrics_port: u16, want: i64, what: &str) {
    let start = Instant::now();
    while server_status(metrics_port) != Some(want) {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "bookie_SERVER_STATUS never {want} ({what}); last {:?}",
            server_status(metrics_port)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_journal_disk_turns_the_bookie_read_only_and_back() {
    let test = "a_full_journal_disk_turns_the_bookie_read_only_and_back";
    let Some(mnt) = loopfs::mount_or_skip(test, 224 << 20) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let journal_dir = mnt.path().join("journal");
    let filler = mnt.path().join("filler");
    // Room for about four 16 MiB journal segments beside the filler.
    fill(&mnt, &filler, 64 << 20);
    let port = free_port();
    let metrics_port = free_port();
    let conf = tmp.path().join("bk_server.conf");
    std::fs::write(
        &conf,
        format!(
            "bookiePort={port}\nadvertisedAddress=127.0.0.1\nallowLoopback=true\n\
             journalDirectories={}\nledgerDirectories={}\n\
             journalMaxSizeMB=16\njournalPreAllocSizeMB=8\n\
             dbStorage_writeCacheMaxSizeMb=256\nflushInterval=3600000\n\
             statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider\nprometheusStatsHttpAddress=127.0.0.1\nprometheusStatsHttpPort={metrics_port}\n",
            journal_dir.display(),
            tmp.path().join("ledgers").display(),
        ),
    )
    .unwrap();
    let log_path = tmp.path().join("bookie.log");
    let mut bookie = BookieProcess::start(&conf, log_path.clone());
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    wait_for_port(&mut bookie, addr).await;
    wait_status(metrics_port, 1, "writable at start").await;

    // 1. Unpaced adds until the journal disk is full: EREADONLY, never an exit.
    let acked: Acked = Arc::new(Mutex::new(BTreeMap::new()));
    let mut next = BTreeMap::new();
    let load_start = Instant::now();
    load_until_read_only(addr, acked.clone(), &mut next).await;
    let to_read_only = load_start.elapsed();
    let acked_full = acked.lock().unwrap().len();
    println!(
        "journal disk full: read-only {to_read_only:?} after the load started, {acked_full} \
         entries of {} KiB acknowledged ({} MiB free on the journal disk)",
        ENTRY_BYTES / 1024,
        mnt.free_bytes() >> 20
    );
    assert!(
        acked_full > 0,
        "nothing was acknowledged before the disk filled"
    );
    bookie.assert_alive("after the journal disk filled");
    wait_status(metrics_port, 0, "journal disk full").await;
    // Still refused a moment later, and the process is still there.
    tokio::time::sleep(Duration::from_secs(2)).await;
    bookie.assert_alive("2 s into the full journal disk");
    {
        let mut c = Client::connect(addr).await;
        let e = next[&FIRST_LEDGER];
        let r = c
            .v2_add(
                Flags::NONE,
                key(),
                entry(FIRST_LEDGER, e, e - 1, &payload(FIRST_LEDGER, e)),
            )
            .await;
        assert_eq!(
            r.error,
            ErrorCode::ReadOnly,
            "an add on a full journal disk"
        );
    }
    let checked = read_back(addr, &acked).await;
    println!("{checked} acknowledged entries read back byte-exact while read-only");

    // 2. Space freed: writable again without a restart.
    std::fs::remove_file(&filler).unwrap();
    let to_writable = until_writable(&mut bookie, addr, &acked, &mut next).await;
    println!("writable again {to_writable:?} after the filler was deleted");
    wait_status(metrics_port, 1, "space freed").await;
    for w in 0..WRITERS {
        let ledger = FIRST_LEDGER + w;
        let mut c = Client::connect(addr).await;
        for _ in 0..20 {
            let e = next[&ledger];
            let r = c
                .v2_add(
                    Flags::NONE,
                    key(),
                    entry(ledger, e, e - 1, &payload(ledger, e)),
                )
                .await;
            assert_eq!(
                r.error,
                ErrorCode::Ok,
                "add {ledger}/{e} after space returned"
            );
            acked.lock().unwrap().insert((ledger, e), ());
            next.insert(ledger, e + 1);
        }
    }

    // 3. Killed, the journal disk filled again, restarted: comes up, serves every
    // acknowledged entry (replayed from the journal), refuses adds once its segments are
    // used, takes them again when space returns.
    let _ = bookie.0.kill();
    let _ = bookie.0.wait();
    drop(bookie);
    fill(&mnt, &filler, 0);
    println!("journal disk refilled: {} KiB free", mnt.free_bytes() >> 10);
    let restart = Instant::now();
    let mut bookie = BookieProcess::start(&conf, log_path.clone());
    wait_for_port(&mut bookie, addr).await;
    println!(
        "restarted on the full journal disk in {:?}",
        restart.elapsed()
    );
    let checked = read_back(addr, &acked).await;
    println!("{checked} acknowledged entries read back byte-exact after the restart");
    load_until_read_only(addr, acked.clone(), &mut next).await;
    bookie.assert_alive("after the restart on a full journal disk");
    wait_status(metrics_port, 0, "restart on a full journal disk").await;
    std::fs::remove_file(&filler).unwrap();
    let to_writable = until_writable(&mut bookie, addr, &acked, &mut next).await;
    println!("writable again {to_writable:?} after the filler was deleted (after the restart)");
    let checked = read_back(addr, &acked).await;
    println!("{checked} acknowledged entries read back byte-exact at the end");

    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(bookie.0.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = bookie.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "exit status {status}");
}

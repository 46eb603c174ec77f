//! Production drill: SIGTERM while the ledger disk is stalled (issue #10 point 6, "a
//! blocked flush gives up cleanly").
//!
//! A standalone `bookie` keeps its ledger directory on a small loop-mounted ext4 and its
//! journal elsewhere. Entries are added (acknowledged: in the journal, and in the write
//! cache only), then the ledger file system is frozen (`fsfreeze -f`: every write to it
//! blocks, as on a stalled device) and the bookie gets SIGTERM. The drill checks:
//! - the process calls exit within 10 s of SIGTERM (the bound issue #10 states; its main
//!   thread is gone), and once the file system is thawed it is reaped with status 75
//!   (final flush given up: not a clean shutdown, and not claimed as one). Reaped only
//!   then, because a thread blocked in the kernel on a frozen or stalled file system is
//!   in uninterruptible sleep: no process can end before its I/O returns;
//! - after the file system is thawed, a restart replays the journal and reads back every
//!   acknowledged entry byte-exact.
//!
//! Skips (printing SKIPPED) only where loop mounts are impossible and BK_REQUIRE_LOOP is
//! unset (bookie/tests/loopfs/mod.rs).

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod loopfs;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use common::{entry, key, Client};

const LEDGER: i64 = 3;
const ENTRIES: i64 = 100;
const PAYLOAD: usize = 64 * 1024;
const EXIT_BOUND: Duration = Duration::from_secs(10);
/// `bookie::node::EXIT_FLUSH_GAVE_UP`.
const EXIT_FLUSH_GAVE_UP: i32 = 75;

mod host_disk;
mod ports;
use ports::free_port;

fn payload(e: i64) -> Vec<u8> {
    (0..PAYLOAD).map(|i| (e as usize * 17 + i) as u8).collect()
}

/// A frozen file system; thawed when dropped (also on panic), so nothing stays blocked.
struct Frozen(PathBuf);

impl Frozen {
    fn freeze(mnt: &Path) -> Frozen {
        let ok = Command::new("fsfreeze")
            .arg("-f")
            .arg(mnt)
            .status()
            .expect("run fsfreeze")
            .success();
        assert!(ok, "fsfreeze -f {} failed", mnt.display());
        Frozen(mnt.to_path_buf())
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze").arg("-u").arg(&self.0).status();
    }
}

/// The bookie and its log; dropping it kills the bookie and prints its shutdown lines.
struct BookieProcess {
    child: Child,
    log: PathBuf,
}

impl BookieProcess {
    fn start(conf: &Path, log: PathBuf) -> BookieProcess {
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_bookie"))
            .args(host_disk::ARGS)
            .arg("--conf")
            .arg(conf)
            .arg("--standalone")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::from(file.try_clone().unwrap()))
            .stderr(Stdio::from(file))
            .spawn()
            .expect("spawn bookie");
        BookieProcess { child, log }
    }

    async fn wait_for_port(&mut self, addr: SocketAddr) {
        let start = Instant::now();
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(
                self.child.try_wait().unwrap().is_none(),
                "bookie exited early"
            );
            assert!(start.elapsed() < Duration::from_secs(60), "never listened");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// True once the process called exit: its main thread is gone (a zombie) even while
    /// another thread is still blocked in the kernel on the frozen file system.
    fn has_called_exit(&self) -> bool {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // "pid (comm) S ...": the state follows the command name.
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    }

    /// Sends SIGTERM; returns how long until the process called exit, or panics after
    /// `bound`.
    async fn terminate(&mut self, bound: Duration) -> Duration {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let sent = Instant::now();
        loop {
            if self.child.try_wait().unwrap().is_some() || self.has_called_exit() {
                return sent.elapsed();
            }
            assert!(
                sent.elapsed() < bound,
                "bookie still running {bound:?} after SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for the exit status (at most `bound`).
    async fn status(&mut self, bound: Duration) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(start.elapsed() < bound, "bookie not reaped after {bound:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for BookieProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        for line in log.lines().filter(|l| {
            l.contains("shutting down")
                || l.contains("flush")
                || l.contains("replayed")
                || l.contains("ERROR")
        }) {
            println!("bookie: {line}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_a_stalled_ledger_disk_gives_up_within_10s_and_loses_nothing() {
    let Some(ledgers) = loopfs::mount_or_skip(
        "sigterm_with_a_stalled_ledger_disk_gives_up_within_10s_and_loses_nothing",
        256 << 20,
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let conf = tmp.path().join("bk_server.conf");
    std::fs::write(
        &conf,
        format!(
            "bookiePort={port}\nadvertisedAddress=127.0.0.1\nallowLoopback=true\n\
             journalDirectories={}\nledgerDirectories={}\n\
             statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider\nprometheusStatsHttpAddress=127.0.0.1\nprometheusStatsHttpPort=0\n\
             dbStorage_writeCacheMaxSizeMb=64\nflushInterval=60000\n",
            tmp.path().join("journal").display(),
            ledgers.path().join("ledgers").display(),
        ),
    )
    .unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut bookie = BookieProcess::start(&conf, tmp.path().join("bookie-1.log"));
    bookie.wait_for_port(addr).await;

    // ~6.5 MB: acknowledged (journal), held in the write cache (half of 64 MiB).
    let mut c = Client::connect(addr).await;
    for e in 0..ENTRIES {
        let r = c
            .v2_add(Flags::NONE, key(), entry(LEDGER, e, e - 1, &payload(e)))
            .await;
        assert_eq!(r.error, ErrorCode::Ok, "add {e}");
    }
    drop(c);

    let frozen = Frozen::freeze(ledgers.path());
    let took = bookie.terminate(EXIT_BOUND).await;
    println!("exit called {took:?} after SIGTERM with the ledger disk frozen");
    // A thread blocked in the kernel on the frozen file system (uninterruptible) keeps
    // the process from being reaped until the file system answers: thaw it.
    drop(frozen);
    let status = bookie.status(EXIT_BOUND).await;
    assert_eq!(
        status.code(),
        Some(EXIT_FLUSH_GAVE_UP),
        "exit status {status}"
    );
    drop(bookie);

    // Thawed and restarted: the journal replays everything that was acknowledged.
    let mut bookie = BookieProcess::start(&conf, tmp.path().join("bookie-2.log"));
    bookie.wait_for_port(addr).await;
    let mut c = Client::connect(addr).await;
    for e in 0..ENTRIES {
        let r = c.v2_read(LEDGER, e).await;
        assert_eq!(r.error, ErrorCode::Ok, "entry {e}");
        assert_eq!(
            r.entry,
            entry(LEDGER, e, e - 1, &payload(e)),
            "entry {e} bytes"
        );
    }
    println!("{ENTRIES} acknowledged entries read back byte-exact after the restart");
    drop(c);
    let took = bookie.terminate(EXIT_BOUND).await;
    let status = bookie.status(EXIT_BOUND).await;
    println!("second bookie exited {took:?} after SIGTERM ({status})");
    assert!(status.success(), "exit status {status}");
}

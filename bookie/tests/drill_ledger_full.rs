//! Production drill: full LEDGER disks (issue #10, points 1 and 2).
//!
//! The real `bookie` binary runs standalone with its ledger directories on small loop-mounted
//! ext4 file systems (`loopfs`) and its journal elsewhere; clients add 64 KiB entries back to
//! back on many connections. Each test asserts: the process never exits, adds are answered
//! EREADONLY (never EIO, ETOOMANYREQUESTS or a stall past the client's 5 s timeout), reads are
//! served, `bookie_SERVER_STATUS` shows the mode, and every acknowledged entry reads back
//! byte-exact:
//! - (a) a 256 MiB ledger disk filled under an unpaced load with the default configuration;
//! - (b) space freed (a filler file deleted) → writable again without a restart; this one is
//!   registered in ZooKeeper and checks the read-only registration node both ways;
//! - (c) restart on a full disk: journal replay that cannot flush leaves the bookie up,
//!   read-only, serving the replayed entries; writable once space returns;
//! - (d) two ledger directories, one full: read-only with `readOnlyModeOnAnyDiskFullEnabled`
//!   (the default), writable with it false, the full one taking no segment.
//!
//! Tests run one at a time (each bookie may hold a 1 GiB write cache). Skipped (SKIPPED line)
//! only where loop mounts are impossible and BK_REQUIRE_LOOP is unset (or, for (b), ZooKeeper
//! cannot be installed and BK_REQUIRE_ZK is unset).

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod loopfs;
mod ops_support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use common::{entry, key, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MIB: u64 = 1 << 20;
const ENTRY_BYTES: usize = 64 * 1024;

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

mod ports;
use ports::free_port;

fn payload(ledger: i64, e: i64) -> Vec<u8> {
    let seed = (ledger as u64).wrapping_mul(131) ^ (e as u64).wrapping_mul(7919);
    (0..ENTRY_BYTES as u64)
        .map(|i| (seed.wrapping_add(i.wrapping_mul(31)) >> 3) as u8)
        .collect()
}

fn body(ledger: i64, e: i64) -> bytes::Bytes {
    entry(ledger, e, e - 1, &payload(ledger, e))
}

/// Takes `bytes` of the file system of `dir` with a real (allocated) file.
fn filler(dir: &Path, bytes: u64) -> PathBuf {
    let f = dir.join("filler");
    let ok = Command::new("fallocate")
        .arg("-l")
        .arg(bytes.to_string())
        .arg(&f)
        .status()
        .expect("fallocate")
        .success();
    assert!(ok, "fallocate {bytes} bytes in {}", dir.display());
    f
}

/// The bookie process and its log; killed on drop, printing the log's storage lines.
struct Bookie {
    child: Child,
    log: PathBuf,
    port: u16,
    metrics_port: u16,
}

impl Bookie {
    /// Starts the bookie standalone on `journal` and `ledgers` with `extra` config lines.
    fn start(tmp: &Path, name: &str, journal: &Path, ledgers: &[&Path], extra: &str) -> Bookie {
        Self::start_on(free_port(), tmp, name, journal, ledgers, extra)
    }

    /// [`Bookie::start`] on a given port (a restart keeps its bookie id).
    fn start_on(
        port: u16,
        tmp: &Path,
        name: &str,
        journal: &Path,
        ledgers: &[&Path],
        extra: &str,
    ) -> Bookie {
        let metrics_port = free_port();
        let dirs: Vec<String> = ledgers.iter().map(|d| d.display().to_string()).collect();
        let conf = tmp.join(format!("{name}.conf"));
        std::fs::write(
            &conf,
            format!(
                "bookiePort={port}\nadvertisedAddress=127.0.0.1\nallowLoopback=true\n\
                 journalDirectories={}\nledgerDirectories={}\n\
                 statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider\nprometheusStatsHttpAddress=127.0.0.1\nprometheusStatsHttpPort={metrics_port}\n{extra}",
                journal.display(),
                dirs.join(","),
            ),
        )
        .unwrap();
        let log = tmp.join(format!("{name}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bookie"));
        // Registered in ZooKeeper when `extra` names a metadata service, else standalone.
        if !extra.contains("metadataServiceUri=") {
            cmd.arg("--standalone");
        }
        let child = cmd
            .arg("--conf")
            .arg(&conf)
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .spawn()
            .expect("spawn bookie");
        Bookie {
            child,
            log,
            port,
            metrics_port,
        }
    }

    fn addr(&self) -> SocketAddr {
        format!("127.0.0.1:{}", self.port).parse().unwrap()
    }

    fn assert_alive(&mut self, when: &str) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("bookie exited ({status}) {when}:\n{}", self.log_text());
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the port answers (start-up includes journal replay).
    async fn wait_ready(&mut self) {
        let start = Instant::now();
        loop {
            self.assert_alive("during start-up");
            if tokio::net::TcpStream::connect(self.addr()).await.is_ok() {
                return;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "never ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `bookie_SERVER_STATUS` from the metrics endpoint (1 writable, 0 read-only).
    async fn server_status(&self) -> i64 {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", self.metrics_port))
            .await
            .expect("metrics endpoint");
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
            .await
            .expect("metrics within 10 s")
            .unwrap();
        let text = String::from_utf8_lossy(&buf);
        text.lines()
            .find_map(|l| l.strip_prefix("bookie_SERVER_STATUS "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|v| v as i64)
            .expect("bookie_SERVER_STATUS in the scrape")
    }

    /// Waits (up to `within`) for `bookie_SERVER_STATUS` to be `want`; returns the wait.
    async fn wait_status(&mut self, want: i64, within: Duration) -> Duration {
        let start = Instant::now();
        loop {
            self.assert_alive("waiting for its status");
            if self.server_status().await == want {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < within,
                "bookie_SERVER_STATUS never became {want}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGTERM and the exit status.
    async fn terminate(mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Bookie {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for line in self.log_text().lines().filter(|l| {
            l.contains("full")
                || l.contains("mode changed")
                || l.contains("room")
                || l.contains("ERROR")
                || l.contains("replayed")
        }) {
            println!("bookie: {line}");
        }
    }
}

/// Entries acknowledged per ledger: ledger `first + i` holds entries `0..acked[i]`.
struct Acked {
    first: i64,
    acked: Vec<i64>,
}

impl Acked {
    fn new(first: i64, ledgers: usize) -> Acked {
        Acked {
            first,
            acked: vec![0; ledgers],
        }
    }

    fn total(&self) -> i64 {
        self.acked.iter().sum()
    }
}

/// One connection per ledger adds entries back to back (unpaced) until the first
/// EREADONLY, `max_per_ledger` entries, or `within`. Any other answer fails the test, and so
/// does an add unanswered for 5 s (the client's timeout): adds never stall on a full disk.
/// Returns when every connection has stopped, with the time of the first EREADONLY.
async fn load(
    addr: SocketAddr,
    acked: &mut Acked,
    max_per_ledger: i64,
    within: Duration,
) -> Option<Instant> {
    let first_readonly: Arc<Mutex<Option<Instant>>> = Arc::default();
    let mut tasks = Vec::new();
    for (i, start) in acked.acked.iter().copied().enumerate() {
        let ledger = acked.first + i as i64;
        let first_readonly = first_readonly.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            let started = Instant::now();
            let mut e = start;
            while e < start + max_per_ledger && started.elapsed() < within {
                let r = c.v2_add(Flags::NONE, key(), body(ledger, e)).await;
                match r.error {
                    ErrorCode::Ok => e += 1,
                    ErrorCode::ReadOnly => {
                        let mut f = first_readonly.lock().unwrap();
                        f.get_or_insert_with(Instant::now);
                        break;
                    }
                    other => panic!("add {ledger}/{e} answered {other:?}, not EOK or EREADONLY"),
                }
            }
            e
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        acked.acked[i] = t.await.expect("load task");
    }
    let f = *first_readonly.lock().unwrap();
    f
}

/// Reads back every acknowledged entry, byte-exact, on a few connections at once.
async fn check_all(addr: SocketAddr, acked: &Acked) -> i64 {
    let mut tasks = Vec::new();
    for (i, n) in acked.acked.iter().copied().enumerate() {
        let ledger = acked.first + i as i64;
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            for e in 0..n {
                let r = c.v2_read(ledger, e).await;
                assert_eq!(r.error, ErrorCode::Ok, "read {ledger}/{e}");
                assert!(
                    r.entry == body(ledger, e),
                    "entry {ledger}/{e} bytes differ"
                );
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("read task");
    }
    total
}

/// An add on a fresh ledger until it is accepted; returns how long that took.
async fn wait_writable(bookie: &mut Bookie, ledger: i64, within: Duration) -> Duration {
    let start = Instant::now();
    let mut c = Client::connect(bookie.addr()).await;
    loop {
        bookie.assert_alive("waiting to become writable");
        let r = c.v2_add(Flags::NONE, key(), body(ledger, 0)).await;
        match r.error {
            ErrorCode::Ok => return start.elapsed(),
            ErrorCode::ReadOnly => {}
            other => panic!("probe add answered {other:?}"),
        }
        assert!(start.elapsed() < within, "not writable within {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn segments_in(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("current"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".seg"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_full_ledger_disk_under_unpaced_load_turns_read_only_with_the_default_config() {
    let _one_at_a_time = serial();
    let Some(mount) = loopfs::mount_or_skip("drill_ledger_full_a", 256 * MIB) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        // The default configuration: write cache RAM/16 up to 1 GiB, logSizeLimit 1 GiB,
        // diskUsageThreshold 0.95, diskCheckInterval 10 s, flushInterval 10 s.
        let mut bookie = Bookie::start(
            tmp.path(),
            "a",
            &tmp.path().join("journal"),
            &[mount.path()],
            "",
        );
        bookie.wait_ready().await;
        assert_eq!(bookie.server_status().await, 1, "writable at start");
        let mut acked = Acked::new(100, 32);
        let started = Instant::now();
        let first_readonly = load(bookie.addr(), &mut acked, i64::MAX, Duration::from_secs(60))
            .await
            .expect("the disk filled: adds answered EREADONLY within 60 s");
        println!(
            "first EREADONLY {:?} after the load started; {} entries acknowledged; {} bytes free",
            first_readonly - started,
            acked.total(),
            mount.free_bytes()
        );
        bookie.assert_alive("after the disk filled");
        assert_eq!(
            bookie.server_status().await,
            0,
            "bookie_SERVER_STATUS read-only"
        );
        // Still read-only a flush interval later: nothing exits, nothing clears it.
        tokio::time::sleep(Duration::from_secs(11)).await;
        bookie.assert_alive("a flush interval after the disk filled");
        assert_eq!(bookie.server_status().await, 0, "still read-only");
        let mut probe = Client::connect(bookie.addr()).await;
        let r = probe.v2_add(Flags::NONE, key(), body(999, 0)).await;
        assert_eq!(r.error, ErrorCode::ReadOnly, "adds answered EREADONLY");
        let checked = check_all(bookie.addr(), &acked).await;
        println!("{checked} acknowledged entries read back byte-exact");
        bookie.assert_alive("after the reads");
        let status = bookie.terminate().await;
        assert!(
            status.success(),
            "SIGTERM on a full disk exits 0, got {status}"
        );
    });
}

#[test]
fn b_space_freed_turns_the_bookie_writable_again() {
    let _one_at_a_time = serial();
    let Some(mount) = loopfs::mount_or_skip("drill_ledger_full_b", 256 * MIB) else {
        return;
    };
    let Some(zk) = ops_support::zk_server("drill_ledger_full_b") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let fill = filler(mount.path(), 160 * MIB);
    runtime().block_on(async {
        let root = "/drill-ledger-full/ledgers";
        let obs = ops_support::observer(zk).await;
        ops_support::init_cluster(&obs, root, None).await;
        let port = free_port();
        let readonly_node = format!("{root}/available/readonly/127.0.0.1:{port}");
        let writable_node = format!("{root}/available/127.0.0.1:{port}");
        let mut bookie = Bookie::start_on(
            port,
            tmp.path(),
            "b",
            &tmp.path().join("journal"),
            &[mount.path()],
            // The default write cache (RAM/16 up to 1 GiB): its flushes do not fit.
            &format!(
                "diskCheckInterval=1000\nmetadataServiceUri=zk+hierarchical://{}{root}\n\
                 zkTimeout=10000\ngcWaitTime=600000\n",
                zk.connect
            ),
        );
        bookie.wait_ready().await;
        let registered = |path: String| {
            let obs = &obs;
            async move {
                let start = Instant::now();
                while obs.check_stat(&path).await.unwrap().is_none() {
                    assert!(start.elapsed() < Duration::from_secs(15), "{path} never appeared");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        registered(writable_node.clone()).await;
        // 150 MiB of adds: more than the ~77 MiB of room, less than what deleting the
        // filler frees (a larger backlog would, correctly, stay read-only after it).
        let mut acked = Acked::new(200, 8);
        load(bookie.addr(), &mut acked, 300, Duration::from_secs(40)).await;
        // The flush (flushInterval 10 s) fills the disk to the threshold and stops.
        bookie.wait_status(0, Duration::from_secs(30)).await;
        let mut probe = Client::connect(bookie.addr()).await;
        let r = probe.v2_add(Flags::NONE, key(), body(298, 0)).await;
        assert_eq!(r.error, ErrorCode::ReadOnly, "adds answered EREADONLY");
        registered(readonly_node.clone()).await;
        println!("read-only registration node {readonly_node} present");
        assert_eq!(check_all(bookie.addr(), &acked).await, acked.total());
        std::fs::remove_file(&fill).unwrap();
        let freed = Instant::now();
        let writable = wait_writable(&mut bookie, 299, Duration::from_secs(30)).await;
        bookie.wait_status(1, Duration::from_secs(10)).await;
        registered(writable_node.clone()).await;
        println!(
            "writable {writable:?} after the filler was deleted (status 1 after {:?}); {} entries acknowledged before",
            freed.elapsed(),
            acked.total()
        );
        // Writes go on, and everything acknowledged before and after reads back.
        load(bookie.addr(), &mut acked, 64, Duration::from_secs(30)).await;
        let checked = check_all(bookie.addr(), &acked).await;
        println!("{checked} acknowledged entries read back byte-exact");
        assert!(bookie.terminate().await.success());
    });
}

#[test]
fn c_restart_on_a_full_disk_comes_up_read_only_and_serves_the_journal() {
    let _one_at_a_time = serial();
    let Some(mount) = loopfs::mount_or_skip("drill_ledger_full_c", 256 * MIB) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let fill = filler(mount.path(), 180 * MIB);
    let journal = tmp.path().join("journal");
    runtime().block_on(async {
        let extra = "dbStorage_writeCacheMaxSizeMb=64\ndiskCheckInterval=1000\n";
        let mut bookie = Bookie::start(tmp.path(), "c1", &journal, &[mount.path()], extra);
        bookie.wait_ready().await;
        let mut acked = Acked::new(300, 8);
        load(bookie.addr(), &mut acked, i64::MAX, Duration::from_secs(40))
            .await
            .expect("read-only once the disk filled");
        println!("{} entries acknowledged before the restart", acked.total());
        let port = bookie.port;
        // A crash: what is not in a segment is only in the journal (and the journal was
        // never checkpointed past it).
        bookie.child.kill().unwrap();
        bookie.child.wait().unwrap();
        drop(bookie);

        let mut bookie = Bookie::start_on(port, tmp.path(), "c2", &journal, &[mount.path()], extra);
        bookie.wait_ready().await;
        assert_eq!(bookie.server_status().await, 0, "read-only after start-up");
        let mut probe = Client::connect(bookie.addr()).await;
        let r = probe.v2_add(Flags::NONE, key(), body(399, 0)).await;
        assert_eq!(r.error, ErrorCode::ReadOnly);
        let checked = check_all(bookie.addr(), &acked).await;
        println!("{checked} acknowledged entries read back byte-exact after the restart");
        std::fs::remove_file(&fill).unwrap();
        let writable = wait_writable(&mut bookie, 398, Duration::from_secs(30)).await;
        println!("writable {writable:?} after the filler was deleted");
        bookie.wait_status(1, Duration::from_secs(10)).await;
        check_all(bookie.addr(), &acked).await;
        // A clean restart now finds everything in segments.
        assert!(bookie.terminate().await.success());
        let mut bookie = Bookie::start_on(port, tmp.path(), "c3", &journal, &[mount.path()], extra);
        bookie.wait_ready().await;
        bookie.wait_status(1, Duration::from_secs(10)).await;
        check_all(bookie.addr(), &acked).await;
    });
}

#[test]
fn d_two_ledger_dirs_one_full() {
    let _one_at_a_time = serial();
    let Some(full) = loopfs::mount_or_skip("drill_ledger_full_d1", 256 * MIB) else {
        return;
    };
    let Some(roomy) = loopfs::mount_or_skip("drill_ledger_full_d2", 256 * MIB) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // Above diskUsageThreshold (0.95) from the start.
    filler(full.path(), full.free_bytes() - 6 * MIB);
    runtime().block_on(async {
        let extra = "dbStorage_writeCacheMaxSizeMb=32\ndiskCheckInterval=1000\n";
        // readOnlyModeOnAnyDiskFullEnabled=true (the stock default): one full dir is enough.
        let mut bookie = Bookie::start(
            tmp.path(),
            "d1",
            &tmp.path().join("journal"),
            &[full.path(), roomy.path()],
            extra,
        );
        bookie.wait_ready().await;
        bookie.wait_status(0, Duration::from_secs(15)).await;
        let mut probe = Client::connect(bookie.addr()).await;
        let r = probe.v2_add(Flags::NONE, key(), body(499, 0)).await;
        assert_eq!(r.error, ErrorCode::ReadOnly, "read-only on any full dir");
        let port = bookie.port;
        assert!(bookie.terminate().await.success());

        // readOnlyModeOnAnyDiskFullEnabled=false: the full dir takes no segment, the
        // other takes them all, and the bookie stays writable.
        let mut bookie = Bookie::start_on(
            port,
            tmp.path(),
            "d2",
            &tmp.path().join("journal"),
            &[full.path(), roomy.path()],
            &format!("{extra}readOnlyModeOnAnyDiskFullEnabled=false\n"),
        );
        bookie.wait_ready().await;
        let mut acked = Acked::new(400, 8);
        let readonly = load(bookie.addr(), &mut acked, 160, Duration::from_secs(40)).await;
        assert!(
            readonly.is_none(),
            "EREADONLY with a writable ledger dir left"
        );
        assert_eq!(acked.total(), 8 * 160, "every add acknowledged");
        // Let the flusher write the cache out (flushInterval 10 s).
        tokio::time::sleep(Duration::from_secs(11)).await;
        bookie.assert_alive("with one dir full");
        assert_eq!(bookie.server_status().await, 1, "writable");
        let (in_full, in_roomy) = (segments_in(full.path()), segments_in(roomy.path()));
        println!("segments: {in_full} in the full dir, {in_roomy} in the other");
        assert_eq!(in_full, 0, "the full dir took a segment");
        assert!(in_roomy > 0, "the other dir took none");
        let checked = check_all(bookie.addr(), &acked).await;
        println!("{checked} acknowledged entries read back byte-exact");
        assert!(bookie.terminate().await.success());
    });
}

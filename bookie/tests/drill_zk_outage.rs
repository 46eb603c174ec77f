//! Production drill: ZooKeeper stopped for a minute under load (issue #10).
//!
//! The `bookie` binary runs against a ZooKeeper of this test's own (not the shared one of the
//! other `ops_*` tests, since this one stops it). While a client keeps adding entries, the
//! ZooKeeper process is stopped for `BK_ZK_OUTAGE_SECS` (60 unless set; set it lower only for
//! local iteration), then started again on the same port and data directory. The drill checks:
//! - the bookie process never exits, and adds are acknowledged in every 5 s window of the
//!   outage (they need no metadata);
//! - the bookie is registered again within 15 s of ZooKeeper answering `imok`;
//! - every acknowledged entry reads back byte-exact, and SIGTERM still ends it with status 0.
//!
//! Skips (printing SKIPPED) only when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod ops_support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use common::{entry, key, Client};
use ops_support::{init_cluster, observer, ZkServer};

const LEDGER: i64 = 7;

fn zk_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/zk.sh")
}

mod host_disk;
mod ports;
use ports::free_port;

/// A ZooKeeper this test starts and stops itself; stopped when dropped (also on panic).
/// Started without zk.sh's owner watchdog, which deletes the data directory when the server
/// exits: the outage must keep ZooKeeper's data, as a real one would.
struct OwnZk {
    dir: PathBuf,
    port: u16,
}

impl OwnZk {
    /// Starts ZooKeeper on `port` in `dir`; `Err` carries zk.sh's exit status and stderr.
    fn start(dir: &Path, port: u16) -> Result<OwnZk, (Option<i32>, String)> {
        let out = Command::new("bash")
            .arg(zk_script())
            .arg("start")
            .arg(dir)
            .arg(port.to_string())
            .output()
            .expect("run scripts/zk.sh");
        if out.status.success() {
            Ok(OwnZk {
                dir: dir.to_path_buf(),
                port,
            })
        } else {
            Err((
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ))
        }
    }

    fn stop(&self) {
        let status = Command::new("bash")
            .arg(zk_script())
            .arg("stop")
            .arg(&self.dir)
            .status()
            .expect("run scripts/zk.sh stop");
        assert!(status.success(), "zk.sh stop failed");
    }

    fn connect(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for OwnZk {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(zk_script())
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

/// The bookie and its log file. Dropping it kills the bookie (if the test fails before its
/// orderly SIGTERM) and prints the log's ZooKeeper and registration lines.
struct BookieProcess(Child, PathBuf);

impl Drop for BookieProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let log = std::fs::read_to_string(&self.1).unwrap_or_default();
        for line in log
            .lines()
            .filter(|l| l.contains("ZooKeeper") || l.contains("regist") || l.contains("ERROR"))
        {
            println!("bookie: {line}");
        }
    }
}

fn outage() -> Duration {
    let secs = std::env::var("BK_ZK_OUTAGE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60u64);
    // Longer than zkTimeout (4 s), so the session always expires.
    Duration::from_secs(secs.max(10))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_outage_of_a_minute_is_survived_under_load() {
    let tmp = tempfile::tempdir().unwrap();
    let zk_dir = tmp.path().join("zk");
    let zk_port = free_port();
    let zk = match OwnZk::start(&zk_dir, zk_port) {
        Ok(zk) => zk,
        Err((Some(2), _)) if std::env::var_os("BK_REQUIRE_ZK").is_none() => {
            println!("SKIPPED zookeeper_outage_of_a_minute_is_survived_under_load: ZooKeeper cannot be installed here");
            return;
        }
        Err((code, stderr)) => panic!("ZooKeeper could not be started ({code:?}): {stderr}"),
    };
    let server = ZkServer {
        connect: zk.connect(),
        dir: zk_dir.clone(),
    };
    let root = "/outage/ledgers";
    let obs = observer(&server).await;
    init_cluster(&obs, root, None).await;
    drop(obs);

    let port = free_port();
    let conf = tmp.path().join("bk_server.conf");
    std::fs::write(
        &conf,
        format!(
            "bookiePort={port}\nadvertisedAddress=127.0.0.1\nallowLoopback=true\n\
             journalDirectories={}\nledgerDirectories={}\n\
             metadataServiceUri=zk+hierarchical://{}{root}\nzkTimeout=4000\n\
             statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider\nprometheusStatsHttpAddress=127.0.0.1\nprometheusStatsHttpPort=0\n\
             gcWaitTime=600000\n",
            tmp.path().join("journal").display(),
            tmp.path().join("ledgers").display(),
            zk.connect(),
        ),
    )
    .unwrap();
    let log_path = tmp.path().join("bookie.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut bookie = BookieProcess(
        Command::new(env!("CARGO_BIN_EXE_bookie"))
            .args(host_disk::ARGS)
            .arg("--conf")
            .arg(&conf)
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn bookie"),
        log_path,
    );
    let node = format!("{root}/available/127.0.0.1:{port}");
    // The session that owns the registration node, if any.
    let owner = |zk: String, node: String| async move {
        let c = zookeeper_client::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&zk)
            .await
            .ok()?;
        match c.get_data(&node).await {
            Ok((_, stat)) if stat.ephemeral_owner != 0 => Some(stat.ephemeral_owner),
            _ => None,
        }
    };
    let start = Instant::now();
    let first_owner = loop {
        if let Some(o) = owner(zk.connect(), node.clone()).await {
            break o;
        }
        assert!(
            bookie.0.try_wait().unwrap().is_none(),
            "bookie exited early"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "never registered"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // The load: one connection adding 1 KiB entries back to back.
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let acked = Arc::new(AtomicI64::new(-1));
    let stop_load = Arc::new(AtomicBool::new(false));
    let load = {
        let (acked, stop_load) = (acked.clone(), stop_load.clone());
        tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            let mut e = 0i64;
            while !stop_load.load(Ordering::SeqCst) {
                let r = c
                    .v2_add(Flags::NONE, key(), entry(LEDGER, e, e - 1, &payload(e)))
                    .await;
                assert_eq!(r.error, ErrorCode::Ok, "add {e} refused");
                acked.store(e, Ordering::SeqCst);
                e += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };

    // The outage. Adds must go on in every 5 s window.
    zk.stop();
    let outage_started = Instant::now();
    let mut last = acked.load(Ordering::SeqCst);
    while outage_started.elapsed() < outage() {
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            bookie.0.try_wait().unwrap().is_none(),
            "bookie exited during the ZooKeeper outage"
        );
        assert!(!load.is_finished(), "the load stopped: an add failed");
        let now = acked.load(Ordering::SeqCst);
        assert!(
            now > last,
            "no add acknowledged in 5 s, {:?} into the outage",
            outage_started.elapsed()
        );
        last = now;
    }
    println!(
        "outage of {:?}: {} entries acknowledged so far",
        outage_started.elapsed(),
        last + 1
    );

    // ZooKeeper returns: registered again within 15 s of it answering.
    let zk = OwnZk::start(&zk_dir, zk_port).expect("ZooKeeper restarts");
    // The outage outlasts zkTimeout, so the bookie's old session is gone: registered again
    // means a node owned by a new session (ZooKeeper restores the old session's node from its
    // log and drops it only when that session times out).
    let back = Instant::now();
    loop {
        match owner(zk.connect(), node.clone()).await {
            Some(o) if o != first_owner => break,
            _ => {}
        }
        assert!(
            bookie.0.try_wait().unwrap().is_none(),
            "bookie exited after ZooKeeper returned"
        );
        assert!(
            back.elapsed() < Duration::from_secs(15),
            "not registered again within 15 s of ZooKeeper's return"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "registered again {:?} after ZooKeeper's return",
        back.elapsed()
    );

    stop_load.store(true, Ordering::SeqCst);
    load.await.expect("load task");
    let last = acked.load(Ordering::SeqCst);
    let mut c = Client::connect(addr).await;
    for e in 0..=last {
        let r = c.v2_read(LEDGER, e).await;
        assert_eq!(r.error, ErrorCode::Ok, "entry {e}");
        assert_eq!(
            r.entry,
            entry(LEDGER, e, e - 1, &payload(e)),
            "entry {e} bytes"
        );
    }
    println!("{} acknowledged entries read back byte-exact", last + 1);

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

fn payload(e: i64) -> Vec<u8> {
    (0..1024).map(|i| (e as usize * 31 + i) as u8).collect()
}

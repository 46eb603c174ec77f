//! The `bookie` binary's operational life cycle against a real ZooKeeper: it reads a
//! `bk_server.conf`, writes cookies, registers with Java-identical BookieServiceInfo,
//! unregisters on SIGTERM, and refuses to start with changed directories or an invalid key.
//! Skips (printing SKIPPED) only when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod ops_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bookie::registration::BookieServiceInfo;
use ops_support::*;

mod host_disk;
mod ports;
use ports::free_port;

fn write_conf(path: &Path, zk: &str, root: &str, base: &Path, port: u16, ledger_dir: &str) {
    let text = format!(
        "# bookie-rs ops test\n\
         bookiePort={port}\n\
         advertisedAddress=127.0.0.1\n\
         allowLoopback=true\n\
         journalDirectories={}\n\
         ledgerDirectories={}\n\
         metadataServiceUri=zk+hierarchical://{zk}{root}\n\
         zkTimeout=4000\n\
         statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider\n\
         prometheusStatsHttpAddress=127.0.0.1\n\
         prometheusStatsHttpPort=0\n\
         gcWaitTime=600000\n",
        base.join("journal").display(),
        base.join(ledger_dir).display(),
    );
    std::fs::write(path, text).unwrap();
}

fn spawn(conf: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_bookie"))
        .args(host_disk::ARGS)
        .arg("--conf")
        .arg(conf)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bookie")
}

fn wait_exit(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            panic!("bookie did not exit within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_registers_unregisters_and_checks_cookies() {
    let Some(server) = zk_server("binary_registers_unregisters_and_checks_cookies") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/bin1/ledgers";
    init_cluster(&obs, root, Some("bin-instance")).await;
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let conf = tmp.path().join("bk_server.conf");
    write_conf(&conf, &server.connect, root, tmp.path(), port, "ledgers");
    let id = format!("127.0.0.1:{port}");
    let node = format!("{root}/available/{id}");

    let mut child = spawn(&conf);
    let start = Instant::now();
    let data = loop {
        if let Ok((data, _)) = obs.get_data(&node).await {
            break data;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("bookie exited early ({status}): {}", stderr_of(&mut child));
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "bookie never registered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!("registered after {:?}", start.elapsed());
    let info = BookieServiceInfo::decode(&data).unwrap();
    let ep = info.rpc_endpoint().unwrap();
    assert_eq!((ep.host.as_str(), ep.port), ("127.0.0.1", port as i32));
    let (cookie, _) = obs.get_data(&format!("{root}/cookies/{id}")).await.unwrap();
    assert_eq!(
        std::fs::read(tmp.path().join("journal/current/VERSION")).unwrap(),
        cookie
    );
    assert!(String::from_utf8_lossy(&cookie).contains("instanceId: \"bin-instance\""));

    // SIGTERM: orderly shutdown removes the registration.
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_exit(&mut child, Duration::from_secs(30));
    assert!(
        status.success(),
        "exit status {status}: {}",
        stderr_of(&mut child)
    );
    assert!(
        obs.check_stat(&node).await.unwrap().is_none(),
        "unregistered on shutdown"
    );

    // Changed ledger directory: start-up refused, with a cookie error, and nothing registered.
    write_conf(
        &conf,
        &server.connect,
        root,
        tmp.path(),
        port,
        "ledgers-moved",
    );
    let mut child = spawn(&conf);
    let status = wait_exit(&mut child, Duration::from_secs(30));
    let err = stderr_of(&mut child);
    assert!(!status.success(), "must refuse to start");
    assert!(
        err.to_lowercase().contains("cookie"),
        "error names the cookie problem: {err}"
    );
    assert!(obs.check_stat(&node).await.unwrap().is_none());

    // An invalid value: start-up refused with the key named.
    std::fs::write(
        &conf,
        format!(
            "{}journalSyncData=perhaps\n",
            std::fs::read_to_string(&conf).unwrap()
        ),
    )
    .unwrap();
    let mut child = spawn(&conf);
    let status = wait_exit(&mut child, Duration::from_secs(30));
    let err = stderr_of(&mut child);
    assert!(!status.success());
    assert!(
        err.contains("journalSyncData") && err.contains("perhaps"),
        "{err}"
    );
}

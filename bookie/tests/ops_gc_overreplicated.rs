//! GC of over-replicated ledgers end to end (docs/semantics.md §15): the `bookie` binary
//! against a real ZooKeeper, ledgers written to it with raw adds and metadata znodes written
//! as a 4.x client writes them. With `gcOverreplicatedLedgerWaitTime=2000` and `gcWaitTime=1000`:
//! a CLOSED ledger whose ensembles do not list this bookie is deleted (reads answer ENOLEDGER),
//! its lock released and the counter counts it; a ledger listing this bookie in an earlier
//! segment only, an OPEN one, and one whose under-replication lock another session holds
//! are kept, the last until the lock goes.
//! Skips (printing SKIPPED) only when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.
// Test set-up writes its config file and log directly.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod ops_support;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use bookie::admin::ledger_metadata::{encode_ensembles_for_tests, LedgerState};
use bookie::gc_metadata_zk::lock_path;
use bookie::gc_scan::ledger_path;
use common::{entry, key, Client};
use ops_support::*;
use zookeeper_client as zk;

struct BookieProcess(Child, std::path::PathBuf);

impl Drop for BookieProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let log = std::fs::read_to_string(&self.1).unwrap_or_default();
        for line in log
            .lines()
            .filter(|l| l.contains("over-replicat") || l.contains("GC") || l.contains("ERROR"))
        {
            println!("bookie: {line}");
        }
    }
}

mod host_disk;
mod ports;
use ports::free_port;

async fn create_all(c: &zk::Client, path: &str, data: &[u8]) {
    let mut at = String::new();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    for (i, p) in parts.iter().enumerate() {
        at.push('/');
        at.push_str(p);
        let d: &[u8] = if i + 1 == parts.len() { data } else { b"" };
        match c.create(&at, d, &open()).await {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
}

async fn metric(port: u16, name: &str) -> Option<u64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).await.ok()?;
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overreplicated_ledgers_are_deleted_and_the_rest_kept() {
    let Some(server) = zk_server("overreplicated_ledgers_are_deleted_and_the_rest_kept") else {
        return;
    };
    let c = observer(server).await;
    let root = "/overrep/ledgers";
    init_cluster(&c, root, Some("overrep")).await;
    let tmp = tempfile::tempdir().unwrap();
    let (port, metrics_port) = (free_port(), free_port());
    let me = format!("127.0.0.1:{port}");
    let others: [&str; 3] = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"];

    // 1: closed, moved off this bookie (recover replaced it in the only ensemble).
    // 2: closed, this bookie in the first segment only (an ensemble change): kept.
    // 3: open, not a member: kept (its ensemble may still change).
    // 4: closed, not a member, but a replication worker holds its lock: kept until released.
    let (gone, first_only, open_ledger, locked) = (1i64, 2i64, 3i64, 4i64);
    let md = [
        (
            gone,
            encode_ensembles_for_tests(&[(0, &others)], LedgerState::Closed, Some(9)),
        ),
        (
            first_only,
            encode_ensembles_for_tests(
                &[(0, &[me.as_str(), others[1], others[2]]), (5, &others)],
                LedgerState::Closed,
                Some(9),
            ),
        ),
        (
            open_ledger,
            encode_ensembles_for_tests(&[(0, &others)], LedgerState::Open, None),
        ),
        (
            locked,
            encode_ensembles_for_tests(&[(0, &others)], LedgerState::Closed, Some(9)),
        ),
    ];
    for (id, data) in &md {
        create_all(&c, &ledger_path(root, *id as u64), data).await;
    }
    // The lock of ledger 4, held by another session (a replication worker's).
    let worker = observer(server).await;
    create_all(&worker, &format!("{root}/underreplication/locks"), b"").await;
    worker
        .create(
            &lock_path(root, locked as u64),
            b"bookieId: \"worker\"\n",
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();

    let conf = tmp.path().join("bk_server.conf");
    std::fs::write(
        &conf,
        format!(
            "bookiePort={port}\nadvertisedAddress=127.0.0.1\nallowLoopback=true\n\
             journalDirectories={}\nledgerDirectories={}\n\
             metadataServiceUri=zk+hierarchical://{}{root}\nzkTimeout=4000\n\
             gcWaitTime=1000\ngcOverreplicatedLedgerWaitTime=2000\n",
            tmp.path().join("journal").display(),
            tmp.path().join("ledgers").display(),
            server.connect,
        ),
    )
    .unwrap();
    let log_path = tmp.path().join("bookie.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let _bookie = BookieProcess(
        Command::new(env!("CARGO_BIN_EXE_bookie"))
            .args(host_disk::ARGS)
            .arg("--conf")
            .arg(&conf)
            .arg("--metrics-port")
            .arg(metrics_port.to_string())
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn bookie"),
        log_path,
    );
    let addr: SocketAddr = me.parse().unwrap();
    let started = Instant::now();
    let mut client = loop {
        if let Ok(s) = tokio::net::TcpStream::connect(addr).await {
            drop(s);
            break Client::connect(addr).await;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "bookie never listened"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for (id, _) in &md {
        for e in 0..10i64 {
            let r = client
                .v2_add(Flags::NONE, key(), entry(*id, e, e - 1, &[e as u8; 4096]))
                .await;
            assert_eq!(r.error, ErrorCode::Ok, "add {id}/{e}");
        }
    }

    let deadline = Instant::now() + Duration::from_secs(60);
    while client.v2_read(gone, 0).await.error != ErrorCode::NoLedger {
        assert!(
            Instant::now() < deadline,
            "ledger {gone}, closed and moved off this bookie, still served after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "over-replicated ledger deleted {:?} after the bookie started",
        started.elapsed()
    );
    // Two more rounds of the check (2 s apart) keep the others.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for id in [first_only, open_ledger, locked] {
        let r = client.v2_read(id, 9).await;
        assert_eq!(r.error, ErrorCode::Ok, "ledger {id} must be kept");
    }
    assert_eq!(
        c.check_stat(&lock_path(root, gone as u64)).await.unwrap(),
        None,
        "the lock taken for the deletion is released"
    );
    assert_eq!(
        metric(
            metrics_port,
            "bookie_rs_gc_overreplicated_ledgers_deleted_total"
        )
        .await,
        Some(1)
    );

    // The replication worker lets go: ledger 4 goes at a later check.
    worker
        .delete(&lock_path(root, locked as u64), None)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.v2_read(locked, 0).await.error != ErrorCode::NoLedger {
        assert!(
            Instant::now() < deadline,
            "ledger {locked} still served 60 s after its lock was released"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for id in [first_only, open_ledger] {
        assert_eq!(client.v2_read(id, 0).await.error, ErrorCode::Ok, "{id}");
    }
    assert_eq!(
        metric(
            metrics_port,
            "bookie_rs_gc_overreplicated_ledgers_deleted_total"
        )
        .await,
        Some(2)
    );
}

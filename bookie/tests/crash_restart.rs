//! Crash and restart of the real binary on the real journal + entry log: every add that
//! was acknowledged before a SIGKILL is readable after restart (byte for byte), fences
//! and master keys survive, and SIGTERM is an orderly shutdown (exit 0, data kept).

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{self, ErrorCode, Flags};
use bk_proto::v3::{self, RequestBody, StatusCode};
use bytes::Bytes;
use common::*;

struct Proc {
    child: Child,
    port: u16,
}

mod host_disk;
mod ports;
use ports::free_port;

fn start(data: &std::path::Path, port: u16) -> Proc {
    let child = Command::new(env!("CARGO_BIN_EXE_bookie"))
        .args(host_disk::ARGS)
        .args(["--standalone", "--data-dir"])
        .arg(data)
        .args(["--port", &port.to_string()])
        // Keep test memory small.
        .args([
            "--set",
            "dbStorage_writeCacheMaxSizeMb=16",
            "--set",
            "dbStorage_readAheadCacheMaxSizeMb=8",
            "--set",
            "flushInterval=600000",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn bookie");
    Proc { child, port }
}

async fn connect_when_ready(p: &mut Proc) -> Client {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = p.child.try_wait() {
            panic!("bookie exited early: {status}");
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", p.port))
            .await
            .is_ok()
        {
            return Client::connect(([127, 0, 0, 1], p.port).into()).await;
        }
        assert!(Instant::now() < deadline, "bookie did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn kill9(p: &mut Proc) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(p.child.id() as i32, libc::SIGKILL) };
    let _ = p.child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_adds_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut p = start(dir.path(), port);
    let mut c = connect_when_ready(&mut p).await;
    let mut acked = Vec::new();
    for ledger in [1i64, 2, 3] {
        for e in 0..40 {
            let payload = vec![(ledger * 7 + e) as u8; 100 + e as usize * 13];
            let body = entry(ledger, e, e - 1, &payload);
            let r = c.v2_add(Flags::NONE, key(), body.clone()).await;
            assert_eq!(r.error, ErrorCode::Ok);
            acked.push((ledger, e, body));
        }
    }
    // Fence ledger 2; write an explicit LAC on ledger 3 (v3 connection).
    assert_eq!(c.v2_fence(2, key()).await.error, ErrorCode::Ok);
    let mut c3 = Client::connect(([127, 0, 0, 1], port).into()).await;
    let lac = bk_proto::DigestManager::new(bk_proto::DigestType::Crc32c, b"").build_lac_body(3, 38);
    let r = c3
        .v3_call(
            None,
            RequestBody::WriteLac(v3::WriteLacRequest {
                ledger_id: 3,
                lac: 38,
                master_key: Bytes::copy_from_slice(&key().0),
                body: lac.clone(),
            }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    // A pipelined burst whose acks we do not wait for: may or may not survive.
    for e in 40..60 {
        let req = v2::AddRequest::new(Flags::NONE, key(), entry(1, e, e - 1, b"tail")).unwrap();
        c.v2_send(v2::Request::AddEntry(req)).await;
    }
    kill9(&mut p);

    let mut p = start(dir.path(), port);
    let mut c = connect_when_ready(&mut p).await;
    for (ledger, e, body) in &acked {
        let r = c.v2_read(*ledger, *e).await;
        assert_eq!(r.error, ErrorCode::Ok, "ledger {ledger} entry {e} lost");
        assert_eq!(&r.entry, body, "ledger {ledger} entry {e} changed");
    }
    // Entries of the unacknowledged burst are either complete or absent.
    for e in 40..60 {
        let r = c.v2_read(1, e).await;
        assert!(matches!(r.error, ErrorCode::Ok | ErrorCode::NoEntry));
        if r.error == ErrorCode::Ok {
            assert_eq!(r.entry, entry(1, e, e - 1, b"tail"));
        }
    }
    // The fence survived; recovery adds still work.
    let r = c.v2_add(Flags::NONE, key(), entry(2, 40, 39, b"x")).await;
    assert_eq!(r.error, ErrorCode::Fenced);
    let rec = Flags::RECOVERY_ADD.union(Flags::HIGH_PRIORITY);
    assert_eq!(
        c.v2_add(rec, key(), entry(2, 40, 39, b"x")).await.error,
        ErrorCode::Ok
    );
    // The master key survived: another key is refused (EIO when the first request after a
    // restart carries it, docs/semantics.md §3).
    let r = c
        .v2_add(Flags::NONE, other_key(), entry(1, 100, 39, b"x"))
        .await;
    assert_ne!(r.error, ErrorCode::Ok);
    // The explicit LAC survived.
    let mut c3 = Client::connect(([127, 0, 0, 1], port).into()).await;
    let r = c3
        .v3_call(
            None,
            RequestBody::ReadLac(v3::ReadLacRequest { ledger_id: 3 }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    assert_eq!(r.read_lac_response.unwrap().lac_body, Some(lac));
    kill9(&mut p);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_is_orderly_and_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut p = start(dir.path(), port);
    let mut c = connect_when_ready(&mut p).await;
    for e in 0..20 {
        let r = c
            .v2_add(Flags::NONE, key(), entry(9, e, e - 1, b"term"))
            .await;
        assert_eq!(r.error, ErrorCode::Ok);
    }
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(p.child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = p.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "exit status {status}");
    let mut p = start(dir.path(), port);
    let mut c = connect_when_ready(&mut p).await;
    for e in 0..20 {
        let r = c.v2_read(9, e).await;
        assert_eq!(
            (r.error, r.entry.clone()),
            (ErrorCode::Ok, entry(9, e, e - 1, b"term"))
        );
    }
    let r = c.v2_read(9, -1).await;
    assert_eq!(r.entry, entry(9, 19, 18, b"term"));
    kill9(&mut p);
}

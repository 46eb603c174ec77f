//! Backpressure: at the in-progress cap the bookie stops reading the socket (the client's
//! writes block) instead of buffering, and resumes when acknowledgements free the cap.

mod common;

use std::time::Duration;

use bk_proto::v2::{self, ErrorCode, Flags};
use bookie::server::limits::LimitsConfig;
use bookie::server::ServerConfig;
use bookie::storage::JournalRecord;
use bytes::BytesMut;
use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_the_bookie_stops_reading() {
    let b = mem_bookie_with(
        Default::default(),
        ServerConfig {
            limits: LimitsConfig {
                max_adds_per_connection: 4,
                ..LimitsConfig::default()
            },
            ..loopback_config()
        },
    )
    .await;
    b.journal.hold(true);
    // 64 MiB of adds: far more than socket buffers hold.
    let n: i64 = 1024;
    let payload = vec![0x5au8; 64 * 1024];
    let mut wire = BytesMut::new();
    for e in 0..n {
        v2::AddRequest::new(Flags::NONE, key(), entry(4, e, e - 1, &payload))
            .unwrap()
            .encode(&mut wire)
            .unwrap();
    }
    let stream = tokio::net::TcpStream::connect(b.addr()).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let writer = tokio::spawn(async move {
        wr.write_all(&wire).await.unwrap();
        wr
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !writer.is_finished(),
        "the bookie must stop reading at the cap"
    );
    let journaled = b
        .journal
        .snapshot()
        .iter()
        .filter(|r| matches!(r, JournalRecord::Entry { .. }))
        .count();
    assert_eq!(
        journaled, 4,
        "only the capped number of adds is in progress"
    );
    // Release: everything completes, every add is acknowledged.
    b.journal.hold(false);
    let mut buf = BytesMut::new();
    let decoder = bk_proto::FrameDecoder::default();
    let mut acks = 0;
    while acks < n {
        while let Some(f) = decoder.decode(&mut buf).unwrap() {
            match bk_proto::decode_response_v2(f).unwrap() {
                v2::Response::AddEntry(r) => assert_eq!(r.error, ErrorCode::Ok),
                other => panic!("{other:?}"),
            }
            acks += 1;
        }
        if acks == n {
            break;
        }
        let read = tokio::time::timeout(TIMEOUT, rd.read_buf(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(k)) if k > 0), "acks keep coming");
    }
    tokio::time::timeout(TIMEOUT, writer)
        .await
        .unwrap()
        .unwrap();
}

/// An add that blocks in storage (write cache full) must not stall the other connections
/// served by the same network thread for long: after the first slow add, adds are
/// submitted under `block_in_place`.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_throttled_add_does_not_stall_other_connections() {
    let b = mem_bookie().await;
    let mut setup = Client::connect(b.addr()).await;
    setup
        .v2_add(Flags::NONE, key(), entry(2, 0, -1, b"r"))
        .await;
    b.storage
        .add_delay_ms
        .store(700, std::sync::atomic::Ordering::SeqCst);
    let mut writer = Client::connect(b.addr()).await;
    // The first slow add teaches the server; then 3 more, pipelined in one write so the
    // server finds them in one buffer (without the mechanism it would block for all three).
    writer
        .v2_add(Flags::NONE, key(), entry(1, 0, -1, b"w"))
        .await;
    let mut burst = BytesMut::new();
    for e in 1..4 {
        v2::AddRequest::new(Flags::NONE, key(), entry(1, e, e - 1, b"w"))
            .unwrap()
            .encode(&mut burst)
            .unwrap();
    }
    writer.send_raw(&burst).await;
    // Measure from a plain thread with blocking I/O: the test's own runtime shares the
    // bookie's single worker, so its timers would stall with it.
    let addr = b.addr();
    let worst = std::thread::spawn(move || {
        use std::io::{Read, Write};
        std::thread::sleep(Duration::from_millis(100));
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let mut req = BytesMut::new();
        v2::ReadRequest::new(2, 0).encode(&mut req).unwrap();
        let mut worst = Duration::ZERO;
        for _ in 0..5 {
            let started = std::time::Instant::now();
            s.write_all(&req).unwrap();
            let mut len = [0u8; 4];
            s.read_exact(&mut len).unwrap();
            let mut resp = vec![0u8; i32::from_be_bytes(len) as usize];
            s.read_exact(&mut resp).unwrap();
            worst = worst.max(started.elapsed());
            std::thread::sleep(Duration::from_millis(50));
        }
        worst
    })
    .join()
    .unwrap();
    assert!(
        worst < Duration::from_millis(500),
        "reads stalled {worst:?} behind throttled adds"
    );
    b.storage
        .add_delay_ms
        .store(0, std::sync::atomic::Ordering::SeqCst);
    for _ in 1..4 {
        match writer.v2_recv().await {
            v2::Response::AddEntry(r) => assert_eq!(r.error, ErrorCode::Ok),
            other => panic!("{other:?}"),
        }
    }
}

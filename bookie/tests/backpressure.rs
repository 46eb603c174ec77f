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

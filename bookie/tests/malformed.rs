//! The malformed-input suite: truncated, oversized and negative frames, unknown opcodes,
//! garbage protobuf, missing required fields, short entries, random bytes. In each case the
//! bookie answers the right error or closes only that connection, and keeps serving
//! other clients (checked after every case).

mod common;

use bk_proto::v2::{ErrorCode, Flags};
use bk_proto::v3::{self, RequestBody};
use bookie::server::ServerConfig;
use bytes::{BufMut, BytesMut};
use common::*;
use rand::{Rng, SeedableRng};

/// A healthy client can still add and read.
async fn still_serving(addr: std::net::SocketAddr, ledger: i64) {
    let mut c = Client::connect(addr).await;
    let r = c
        .v2_add(Flags::NONE, key(), entry(ledger, 0, -1, b"ok"))
        .await;
    assert_eq!(r.error, ErrorCode::Ok);
    assert_eq!(c.v2_read(ledger, 0).await.error, ErrorCode::Ok);
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(payload.len() + 4);
    b.extend_from_slice(&(payload.len() as i32).to_be_bytes());
    b.extend_from_slice(payload);
    b
}

async fn expect_closed(addr: std::net::SocketAddr, bytes: &[u8], what: &str) {
    let mut c = Client::connect(addr).await;
    c.send_raw(bytes).await;
    assert!(
        c.closed_without_reply().await,
        "{what}: connection closed without reply"
    );
}

#[tokio::test]
async fn bad_frames_close_only_their_connection() {
    let b = mem_bookie_with(
        Default::default(),
        ServerConfig {
            max_frame_bytes: 1024 * 1024,
            ..loopback_config()
        },
    )
    .await;
    let addr = b.addr();
    // A healthy connection opened before, kept across every bad one.
    let mut keeper = Client::connect(addr).await;
    keeper
        .v2_add(Flags::NONE, key(), entry(1, 0, -1, b"k"))
        .await;

    expect_closed(addr, &(-1i32).to_be_bytes(), "negative length").await;
    expect_closed(addr, &i32::MIN.to_be_bytes(), "i32::MIN length").await;
    expect_closed(addr, &(2 * 1024 * 1024i32).to_be_bytes(), "oversized frame").await;
    // Exactly one byte over the limit (the limit counts the 4-byte prefix).
    expect_closed(addr, &(1024 * 1024 - 3i32).to_be_bytes(), "limit + 1").await;
    // Unknown v2 opcodes, and the defined-but-undecodable 4, 5, 6.
    for op in [0u8, 4, 5, 6, 8, 99, 255] {
        expect_closed(addr, &frame(&[2, op, 0, 0, 0, 0, 0, 0]), "unknown opcode").await;
    }
    // Truncated v2 packets: read without ids, add with a short entry, batch read cut short.
    expect_closed(addr, &frame(&[2, 2, 0, 0, 1, 2, 3]), "short read").await;
    let mut short_add = vec![2, 1, 0, 0];
    short_add.extend_from_slice(&key().0);
    short_add.extend_from_slice(&[0u8; 10]);
    expect_closed(addr, &frame(&short_add), "short add").await;
    expect_closed(
        addr,
        &frame(&[2, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
        "short batch",
    )
    .await;
    // Fence flag with version 2 but no key.
    let mut fence_no_key = vec![2, 2, 0, 1];
    fence_no_key.extend_from_slice(&[0u8; 16]);
    expect_closed(addr, &frame(&fence_no_key), "fence without key bytes").await;
    // Garbage protobuf (starts like a v3 header, then nonsense) and an empty frame.
    expect_closed(
        addr,
        &frame(&[0x0a, 0xff, 0xff, 0xff, 0x01]),
        "garbage protobuf",
    )
    .await;
    expect_closed(addr, &frame(&[]), "empty frame").await;
    // v3 request whose header lacks the required txnId.
    expect_closed(
        addr,
        &frame(&[0x0a, 0x04, 0x08, 0x03, 0x10, 0x01]),
        "missing txnId",
    )
    .await;
    // A v3 frame after v2 traffic on the same connection is decoded as v2 -> closed.
    {
        let mut c = Client::connect(addr).await;
        c.v2_read(1, 0).await;
        let req = v3::new_request(
            1,
            None,
            RequestBody::ReadLac(v3::ReadLacRequest { ledger_id: 1 }),
        );
        c.v3_send_request(&req).await;
        assert!(c.closed_without_reply().await, "v3 after v2");
    }
    // A truncated frame followed by EOF: the bookie just closes.
    {
        let mut c = Client::connect(addr).await;
        c.send_raw(&100i32.to_be_bytes()).await;
        c.send_raw(&[2, 2, 0, 0]).await;
        drop(c);
    }
    // The keeper connection still works; new connections too.
    assert_eq!(keeper.v2_read(1, 0).await.error, ErrorCode::Ok);
    still_serving(addr, 2).await;
    assert_eq!(b.fatal.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn semantic_errors_are_answered_not_closed() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    c.v2_add(Flags::NONE, key(), entry(3, 0, -1, b"a")).await;
    // wrong master key
    let r = c
        .v2_add(Flags::NONE, other_key(), entry(3, 1, -1, b"a"))
        .await;
    assert_eq!(r.error, ErrorCode::Unauthorized);
    // add to a fenced ledger
    c.v2_fence(3, key()).await;
    let r = c.v2_add(Flags::NONE, key(), entry(3, 1, -1, b"a")).await;
    assert_eq!(r.error, ErrorCode::Fenced);
    // a v2 add whose entry is 16..32 bytes long: ids known, answered EBADREQ.
    let mut raw = BytesMut::new();
    raw.put_i32(4 + 20 + 20);
    raw.put_slice(&[2, 1, 0, 0]);
    raw.put_slice(&key().0);
    raw.put_i64(4);
    raw.put_i64(0);
    raw.put_i32(0);
    c.send_raw(&raw).await;
    match c.v2_recv().await {
        bk_proto::v2::Response::AddEntry(r) => {
            assert_eq!((r.error, r.ledger_id), (ErrorCode::BadRequest, 4))
        }
        other => panic!("{other:?}"),
    }
    // v3 ops with missing sub-request -> EBADREQ (on a fresh, v3, connection).
    let mut c = Client::connect(b.addr()).await;
    let r = c
        .v3_call(None, RequestBody::MissingBody(v3::OperationType::AddEntry))
        .await;
    assert_eq!(v3_status(&r), v3::StatusCode::Ebadreq);
}

#[tokio::test]
async fn random_frames_never_hurt_the_bookie() {
    let b = mem_bookie_with(
        Default::default(),
        ServerConfig {
            max_frame_bytes: 64 * 1024,
            ..loopback_config()
        },
    )
    .await;
    let seed: u64 = std::env::var("BK_MALFORMED_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let rounds: usize = std::env::var("BK_MALFORMED_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for round in 0..rounds {
        let mut c = Client::connect(b.addr()).await;
        let len = rng.random_range(0..300usize);
        let mut payload: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        // Bias towards plausible starts: v2 headers and v3 header tags.
        match round % 3 {
            0 if payload.len() >= 2 => {
                payload[0] = 2;
                payload[1] = rng.random_range(0..9);
            }
            1 if !payload.is_empty() => payload[0] = 0x0a,
            _ => {}
        }
        let mut bytes = frame(&payload);
        if rng.random_bool(0.2) {
            bytes.truncate(rng.random_range(0..bytes.len().max(1)));
        }
        c.send_raw(&bytes).await;
        // Either an answer or a close; never a hang of the whole server.
        drop(c);
    }
    still_serving(b.addr(), 100).await;
}

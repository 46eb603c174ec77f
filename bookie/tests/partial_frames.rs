//! Partially received frames take from the global byte budget as their bytes arrive:
//! peers that send part of a large frame and stop hold at most the partial-frame share,
//! the rest are simply not read, a well-behaved client's small adds keep flowing, and
//! every byte of budget comes back when the connections go.

mod common;

use std::time::Duration;

use bk_proto::v2::{ErrorCode, Flags};
use bookie::server::limits::LimitsConfig;
use bookie::server::ServerConfig;
use common::*;
use tokio::io::AsyncWriteExt;

const BUDGET: usize = 8 * 1024 * 1024;
const FRAME: usize = 1024 * 1024;
const SENT: usize = 512 * 1024;
const STALLED: usize = 40;

async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_partial_frames_stay_in_their_share_and_good_adds_flow() {
    let b = mem_bookie_with(
        Default::default(),
        ServerConfig {
            limits: LimitsConfig {
                max_bytes_in_progress: BUDGET,
                ..LimitsConfig::default()
            },
            ..loopback_config()
        },
    )
    .await;
    let (_, _, share, free) = b.server.byte_budget();
    assert_eq!(free, BUDGET);
    assert_eq!(share, BUDGET / 4 * 3);

    // 40 peers announce a 1 MiB frame and send half of it: 20 MiB of would-be partials.
    let mut stalled = Vec::new();
    for _ in 0..STALLED {
        let mut s = tokio::net::TcpStream::connect(b.addr()).await.unwrap();
        let mut wire = Vec::with_capacity(4 + SENT);
        wire.extend_from_slice(&((FRAME - 4) as i32).to_be_bytes());
        wire.resize(4 + SENT, 0x42);
        s.write_all(&wire).await.unwrap();
        stalled.push(s);
    }
    // The share fills (6 peers reserve their whole frame), and stays within itself.
    wait_until("the partial share fills", || {
        b.server.byte_budget().1 >= share - FRAME
    })
    .await;

    // A good client's 1 KiB adds are all acknowledged.
    let mut good = Client::connect(b.addr()).await;
    let payload = vec![7u8; 1024];
    let mut lac = -1;
    for e in 0..200 {
        let r = tokio::time::timeout(
            TIMEOUT,
            good.v2_add(Flags::NONE, key(), entry(9, e, lac, &payload)),
        )
        .await
        .expect("a good client's add is acknowledged while peers stall");
        assert_eq!(r.error, ErrorCode::Ok);
        lac = e;
        let (buffered, partial, share, _) = b.server.byte_budget();
        assert!(partial <= share, "partial {partial} over share {share}");
        assert!(buffered <= BUDGET, "buffered {buffered} over budget");
    }

    // The stalled peers finish their frames (garbage as v2/v3: each is closed), one by
    // one as the share frees up; then every byte of budget is back.
    for s in &mut stalled {
        s.write_all(&vec![0x42; FRAME - 4 - SENT]).await.unwrap();
    }
    wait_until("every stalled peer is served", || {
        b.server.connections() == 1
    })
    .await;
    drop(stalled);
    drop(good);
    wait_until("no connection left", || b.server.connections() == 0).await;
    wait_until("the budget is back", || {
        let (buffered, partial, _, free) = b.server.byte_budget();
        buffered == 0 && partial == 0 && free == BUDGET
    })
    .await;
}

/// A bare prefix announcing a large frame reserves the budget, not memory, and a
/// connection that closes mid-frame gives everything back.
#[tokio::test]
async fn a_connection_closed_mid_frame_returns_its_budget() {
    let b = mem_bookie_with(
        Default::default(),
        ServerConfig {
            limits: LimitsConfig {
                max_bytes_in_progress: BUDGET,
                ..LimitsConfig::default()
            },
            ..loopback_config()
        },
    )
    .await;
    let mut s = tokio::net::TcpStream::connect(b.addr()).await.unwrap();
    s.write_all(&((FRAME - 4) as i32).to_be_bytes())
        .await
        .unwrap();
    s.write_all(&[1u8; 1000]).await.unwrap();
    wait_until("the frame is reserved", || {
        b.server.byte_budget().1 == FRAME
    })
    .await;
    let (buffered, _, _, free) = b.server.byte_budget();
    assert_eq!(buffered, FRAME);
    assert_eq!(free, BUDGET - FRAME);
    drop(s);
    wait_until("the budget is back", || {
        let (buffered, partial, _, free) = b.server.byte_budget();
        buffered == 0 && partial == 0 && free == BUDGET
    })
    .await;
}

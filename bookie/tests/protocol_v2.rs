//! v2 protocol against a running in-process bookie (in-memory storage double): every
//! operation a Pulsar broker sends on v2 connections and its error paths.

mod common;

use std::time::Duration;

use bk_proto::v2::{self, ErrorCode, Flags};
use bookie::handlers::BookieOptions;
use bookie::mode::ReadOnlyReason;
use bookie::storage::JournalRecord;
use bytes::Bytes;
use common::*;

#[tokio::test]
async fn add_then_read_back_exact_bytes_and_last_entry() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    for e in 0..3 {
        let r = c
            .v2_add(Flags::NONE, key(), entry(5, e, e - 1, b"hello"))
            .await;
        assert_eq!((r.error, r.ledger_id, r.entry_id), (ErrorCode::Ok, 5, e));
    }
    let r = c.v2_read(5, 1).await;
    assert_eq!(r.error, ErrorCode::Ok);
    assert_eq!(r.entry, entry(5, 1, 0, b"hello"));
    // entry -1 = last stored entry; the response echoes -1.
    let r = c.v2_read(5, -1).await;
    assert_eq!((r.error, r.entry_id), (ErrorCode::Ok, -1));
    assert_eq!(r.entry, entry(5, 2, 1, b"hello"));
    // missing entry / unknown ledger
    let r = c.v2_read(5, 7).await;
    assert_eq!((r.error, r.entry_id), (ErrorCode::NoEntry, 7));
    assert!(r.entry.is_empty());
    assert_eq!(c.v2_read(6, 0).await.error, ErrorCode::NoLedger);
    assert_eq!(c.v2_read(6, -1).await.error, ErrorCode::NoLedger);
    // The master key was journaled once, right before the first entry.
    let recs = b.journal.snapshot();
    assert!(matches!(
        recs[0],
        JournalRecord::MasterKey { ledger: 5, .. }
    ));
    assert_eq!(
        recs.iter()
            .filter(|r| matches!(r, JournalRecord::MasterKey { .. }))
            .count(),
        1
    );
    assert_eq!(
        recs.iter()
            .filter(|r| matches!(r, JournalRecord::Entry { .. }))
            .count(),
        3
    );
}

#[tokio::test]
async fn add_is_acknowledged_only_after_the_journal() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    b.journal.hold(true);
    let req = v2::AddRequest::new(Flags::NONE, key(), entry(9, 0, -1, b"x")).unwrap();
    c.v2_send(v2::Request::AddEntry(req)).await;
    assert!(
        c.silent_for(Duration::from_millis(300)).await,
        "no ack before journal durability"
    );
    // Readable before it is acknowledged (docs/semantics.md §4 step 5), from another connection.
    let mut other = Client::connect(b.addr()).await;
    assert_eq!(other.v2_read(9, 0).await.error, ErrorCode::Ok);
    b.journal.hold(false);
    match c.v2_recv().await {
        v2::Response::AddEntry(r) => assert_eq!(r.error, ErrorCode::Ok),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn wrong_master_key_is_eua() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    assert_eq!(
        c.v2_add(Flags::NONE, key(), entry(1, 0, -1, b"a"))
            .await
            .error,
        ErrorCode::Ok
    );
    assert_eq!(
        c.v2_add(Flags::NONE, other_key(), entry(1, 1, -1, b"a"))
            .await
            .error,
        ErrorCode::Unauthorized
    );
    assert_eq!(
        c.v2_fence(1, other_key()).await.error,
        ErrorCode::Unauthorized
    );
    // reads do not check the key
    assert_eq!(c.v2_read(1, 0).await.error, ErrorCode::Ok);
}

#[tokio::test]
async fn fencing_rules() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    // Fence of an unknown ledger creates it and answers ENOENTRY.
    let r = c.v2_fence(20, key()).await;
    assert_eq!((r.error, r.entry_id), (ErrorCode::NoEntry, -1));
    assert_eq!(
        c.v2_add(Flags::NONE, key(), entry(20, 0, -1, b"a"))
            .await
            .error,
        ErrorCode::Fenced
    );
    // Recovery adds go through; the key is still checked.
    let rec = Flags::RECOVERY_ADD.union(Flags::HIGH_PRIORITY);
    assert_eq!(
        c.v2_add(rec, key(), entry(20, 0, -1, b"a")).await.error,
        ErrorCode::Ok
    );
    assert_eq!(
        c.v2_add(rec, other_key(), entry(20, 1, -1, b"a"))
            .await
            .error,
        ErrorCode::Unauthorized
    );
    // Fence is idempotent and returns the last entry.
    let r = c.v2_fence(20, key()).await;
    assert_eq!((r.error, r.entry), (ErrorCode::Ok, entry(20, 0, -1, b"a")));
    // Exactly one fence record was journaled.
    let fences = b
        .journal
        .snapshot()
        .into_iter()
        .filter(|r| matches!(r, JournalRecord::Fence { ledger: 20 }))
        .count();
    assert_eq!(fences, 1);
}

#[tokio::test]
async fn fence_answer_waits_for_the_fence_record() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    c.v2_add(Flags::NONE, key(), entry(3, 0, -1, b"a")).await;
    b.journal.hold(true);
    c.v2_send(v2::Request::ReadEntry(v2::ReadRequest::fencing(
        3,
        -1,
        key(),
        Flags::NONE,
    )))
    .await;
    assert!(c.silent_for(Duration::from_millis(300)).await);
    // Fenced in memory at once: a normal add on another connection is refused.
    let mut other = Client::connect(b.addr()).await;
    assert_eq!(
        other
            .v2_add(Flags::NONE, key(), entry(3, 1, -1, b"a"))
            .await
            .error,
        ErrorCode::Fenced
    );
    b.journal.hold(false);
    match c.v2_recv().await {
        v2::Response::ReadEntry(r) => assert_eq!(r.error, ErrorCode::Ok),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn fence_without_key_is_eua() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    // version 1 packet with the fence flag: no key is parsed (docs/protocol.md §2.8).
    let mut raw = Vec::new();
    raw.extend_from_slice(&20i32.to_be_bytes());
    raw.extend_from_slice(&[1, 2, 0, 1]);
    raw.extend_from_slice(&4i64.to_be_bytes());
    raw.extend_from_slice(&(-1i64).to_be_bytes());
    c.send_raw(&raw).await;
    match c.v2_recv().await {
        v2::Response::ReadEntry(r) => {
            assert_eq!((r.version, r.error), (1, ErrorCode::Unauthorized))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn batch_read_selection() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    for e in [0, 1, 2, 3, 5] {
        c.v2_add(Flags::NONE, key(), entry(8, e, -1, &[7u8; 100]))
            .await;
    }
    let batch = |start, max_count, max_size, request_id| {
        v2::Request::BatchReadEntry(v2::BatchReadRequest {
            version: 2,
            flags: Flags::NONE,
            ledger_id: 8,
            start_entry_id: start,
            request_id,
            max_count,
            max_size,
            master_key: None,
        })
    };
    let mut get = async |req| {
        c.v2_send(req).await;
        match c.v2_recv().await {
            v2::Response::BatchReadEntry(r) => r,
            other => panic!("{other:?}"),
        }
    };
    // stops at the gap after 3
    let r = get(batch(0, 0, 1 << 20, 41)).await;
    assert_eq!(
        (r.error, r.request_id, r.entries.len()),
        (ErrorCode::Ok, 41, 4)
    );
    assert_eq!(r.entries[2], entry(8, 2, -1, &[7u8; 100]));
    // max count
    assert_eq!(get(batch(1, 2, 1 << 20, 42)).await.entries.len(), 2);
    // max size: the first entry is always included
    assert_eq!(get(batch(0, 0, 10, 43)).await.entries.len(), 1);
    // 36 + 2 * (4 + len) fits exactly two
    let len = entry(8, 0, -1, &[7u8; 100]).len() as i64;
    assert_eq!(
        get(batch(0, 0, 36 + 2 * (4 + len), 44)).await.entries.len(),
        2
    );
    // first entry missing -> its error, no entries
    let r = get(batch(4, 0, 1 << 20, 45)).await;
    assert_eq!((r.error, r.entries.len()), (ErrorCode::NoEntry, 0));
    let r = get(v2::Request::BatchReadEntry(v2::BatchReadRequest {
        ledger_id: 99,
        ..match batch(0, 0, 1, 46) {
            v2::Request::BatchReadEntry(b) => b,
            _ => unreachable!(),
        }
    }))
    .await;
    assert_eq!(r.error, ErrorCode::NoLedger);
}

#[tokio::test]
async fn auth_without_plugin_answers_auth_disabled() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    c.v2_send(v2::Request::Auth(v2::AuthRequest {
        version: 2,
        flags: Flags::NONE,
        message: bk_proto::v3::AuthMessage {
            auth_plugin_name: "SomePlugin".into(),
            payload: Bytes::from_static(b"hi"),
        },
    }))
    .await;
    match c.v2_recv().await {
        v2::Response::Auth(a) => {
            assert_eq!(a.version, 2);
            assert_eq!(a.message.auth_plugin_name, "AuthDisabledPlugin");
            assert!(a.message.payload.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // The connection keeps working.
    assert_eq!(c.v2_read(1, 0).await.error, ErrorCode::NoLedger);
}

#[tokio::test]
async fn read_only_bookie_rejects_adds_but_serves_reads_and_recovery() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    c.v2_add(Flags::NONE, key(), entry(2, 0, -1, b"a")).await;
    b.bookie.set_read_only(ReadOnlyReason::Manual, true);
    assert_eq!(
        c.v2_add(Flags::NONE, key(), entry(2, 1, -1, b"a"))
            .await
            .error,
        ErrorCode::ReadOnly
    );
    assert_eq!(c.v2_read(2, 0).await.error, ErrorCode::Ok);
    let rec = Flags::RECOVERY_ADD.union(Flags::HIGH_PRIORITY);
    assert_eq!(
        c.v2_add(rec, key(), entry(2, 1, -1, b"a")).await.error,
        ErrorCode::Ok
    );
    b.bookie.set_high_priority_writes_allowed(false);
    assert_eq!(
        c.v2_add(rec, key(), entry(2, 2, -1, b"a")).await.error,
        ErrorCode::ReadOnly
    );
    b.bookie.set_read_only(ReadOnlyReason::Manual, false);
    assert_eq!(
        c.v2_add(Flags::NONE, key(), entry(2, 3, -1, b"a"))
            .await
            .error,
        ErrorCode::Ok
    );
}

#[tokio::test]
async fn forced_read_only_stays_read_only() {
    let b = mem_bookie_with(
        BookieOptions {
            read_only: true,
            ..BookieOptions::default()
        },
        loopback_config(),
    )
    .await;
    b.bookie.set_read_only(ReadOnlyReason::Manual, false);
    let mut c = Client::connect(b.addr()).await;
    assert_eq!(
        c.v2_add(Flags::NONE, key(), entry(2, 0, -1, b"a"))
            .await
            .error,
        ErrorCode::ReadOnly
    );
}

#[tokio::test]
async fn journal_failure_is_eio_and_fatal() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    b.journal
        .fail
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        c.v2_add(Flags::NONE, key(), entry(2, 0, -1, b"a"))
            .await
            .error,
        ErrorCode::Io
    );
    assert!(b.fatal.load(std::sync::atomic::Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn storage_read_error_is_eio_not_enoentry() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    c.v2_add(Flags::NONE, key(), entry(2, 0, -1, b"a")).await;
    b.storage
        .fail_reads
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(c.v2_read(2, 0).await.error, ErrorCode::Io);
    assert_eq!(c.v2_read(2, 5).await.error, ErrorCode::Io);
}

#[tokio::test]
async fn unsupported_version_is_ebadversion() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    // READENTRY with version byte 3.
    let mut raw = Vec::new();
    raw.extend_from_slice(&20i32.to_be_bytes());
    raw.extend_from_slice(&[3, 2, 0, 0]);
    raw.extend_from_slice(&4i64.to_be_bytes());
    raw.extend_from_slice(&0i64.to_be_bytes());
    c.send_raw(&raw).await;
    match c.v2_recv().await {
        v2::Response::ReadEntry(r) => assert_eq!((r.version, r.error), (3, ErrorCode::BadVersion)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn many_pipelined_requests_are_all_answered_and_matched() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    let n = 500;
    for e in 0..n {
        let req = v2::AddRequest::new(Flags::NONE, key(), entry(77, e, e - 1, b"p")).unwrap();
        c.v2_send(v2::Request::AddEntry(req)).await;
    }
    let mut seen = std::collections::HashSet::new();
    for _ in 0..n {
        match c.v2_recv().await {
            v2::Response::AddEntry(r) => {
                assert_eq!(r.error, ErrorCode::Ok);
                assert!(seen.insert(r.entry_id));
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen.len(), n as usize);
}

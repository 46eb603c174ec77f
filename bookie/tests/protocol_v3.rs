//! v3 protocol against a running in-process bookie (in-memory storage double): every
//! operation, the header rules of docs/protocol.md §3.3, long poll, LAC and info requests.

mod common;

use std::time::{Duration, Instant};

use bk_proto::v3::{self, read_request, RequestBody, StatusCode};
use bk_proto::DigestManager;
use bookie::mode::ReadOnlyReason;
use bytes::Bytes;
use common::*;

fn lac_body(ledger: i64, lac: i64) -> Bytes {
    DigestManager::new(bk_proto::DigestType::Crc32c, b"").build_lac_body(ledger, lac)
}

#[tokio::test]
async fn add_and_read_with_max_lac() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    for e in 0..3 {
        let r = c.v3_add(key(), entry(5, e, e - 1, b"v3"), false).await;
        assert_eq!(v3_status(&r), StatusCode::Eok);
        let a = r.add_response.expect("addResponse");
        assert_eq!((a.ledger_id, a.entry_id), (5, e));
        assert_eq!(r.header.version, v3::ProtocolVersion::VersionThree as i32);
        assert_eq!(r.header.priority, None, "responses carry no priority");
    }
    let r = c.v3_read(5, 1).await;
    let rr = r.read_response.expect("readResponse");
    assert_eq!(rr.body, Some(entry(5, 1, 0, b"v3")));
    assert_eq!(rr.max_lac, Some(1), "bookie LAC = max LAC field seen");
    let r = c.v3_read(5, -1).await;
    let rr = r.read_response.clone().unwrap();
    assert_eq!((rr.entry_id, rr.body), (-1, Some(entry(5, 2, 1, b"v3"))));
    let r = c.v3_read(5, 9).await;
    assert_eq!(v3_status(&r), StatusCode::Enoentry);
    assert_eq!(v3_status(&c.v3_read(6, 0).await), StatusCode::Enoledger);
}

#[tokio::test]
async fn wrong_key_fence_and_recovery() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    c.v3_add(key(), entry(1, 0, -1, b"a"), false).await;
    let r = c.v3_add(other_key(), entry(1, 1, -1, b"a"), false).await;
    assert_eq!(v3_status(&r), StatusCode::Eua);
    let fence = |k: bk_proto::MasterKey| {
        RequestBody::ReadEntry(v3::ReadRequest {
            flag: Some(read_request::Flag::FenceLedger as i32),
            ledger_id: 1,
            entry_id: -1,
            master_key: Some(Bytes::copy_from_slice(&k.0)),
            ..Default::default()
        })
    };
    let r = c.v3_call(None, fence(key())).await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    let rr = r.read_response.clone().unwrap();
    assert!(rr.body.is_some());
    assert_eq!(rr.max_lac, None, "fence responses carry no maxLAC");
    let r = c.v3_add(key(), entry(1, 1, 0, b"a"), false).await;
    assert_eq!(v3_status(&r), StatusCode::Efenced);
    let r = c.v3_add(key(), entry(1, 1, 0, b"a"), true).await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    // fence without key -> EUA
    let r = c
        .v3_call(
            None,
            RequestBody::ReadEntry(v3::ReadRequest {
                flag: Some(read_request::Flag::FenceLedger as i32),
                ledger_id: 1,
                entry_id: -1,
                ..Default::default()
            }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Eua);
}

#[tokio::test]
async fn write_lac_and_read_lac() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    let read_lac = |ledger| RequestBody::ReadLac(v3::ReadLacRequest { ledger_id: ledger });
    assert_eq!(
        v3_status(&c.v3_call(None, read_lac(3)).await),
        StatusCode::Enoledger
    );
    let wl = c
        .v3_call(
            None,
            RequestBody::WriteLac(v3::WriteLacRequest {
                ledger_id: 3,
                lac: 4,
                master_key: Bytes::copy_from_slice(&key().0),
                body: lac_body(3, 4),
            }),
        )
        .await;
    assert_eq!(v3_status(&wl), StatusCode::Eok);
    assert_eq!(wl.write_lac_response.unwrap().ledger_id, 3);
    // Explicit LAC but no entries: Java answers EIO with lacBody (docs/semantics.md §9 quirk).
    let r = c.v3_call(None, read_lac(3)).await;
    assert_eq!(v3_status(&r), StatusCode::Eio);
    assert_eq!(r.read_lac_response.unwrap().lac_body, Some(lac_body(3, 4)));
    c.v3_add(key(), entry(3, 0, -1, b"x"), false).await;
    let r = c.v3_call(None, read_lac(3)).await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    let rl = r.read_lac_response.unwrap();
    assert_eq!(rl.lac_body, Some(lac_body(3, 4)));
    assert_eq!(rl.last_entry_body, Some(entry(3, 0, -1, b"x")));
    // Known ledger, neither -> ENOENTRY.
    c.v3_add(key(), entry(4, 0, -1, b"x"), false).await;
    let r = c
        .v3_call(
            None,
            RequestBody::ReadLac(v3::ReadLacRequest { ledger_id: 4 }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    // wrong key on write LAC
    let wl = c
        .v3_call(
            None,
            RequestBody::WriteLac(v3::WriteLacRequest {
                ledger_id: 3,
                lac: 5,
                master_key: Bytes::copy_from_slice(&other_key().0),
                body: lac_body(3, 5),
            }),
        )
        .await;
    assert_eq!(v3_status(&wl), StatusCode::Eua);
    // read-only rejects WRITE_LAC
    b.bookie.set_read_only(ReadOnlyReason::Manual, true);
    let wl = c
        .v3_call(
            Some(100),
            RequestBody::WriteLac(v3::WriteLacRequest {
                ledger_id: 3,
                lac: 5,
                master_key: Bytes::copy_from_slice(&key().0),
                body: lac_body(3, 5),
            }),
        )
        .await;
    assert_eq!(v3_status(&wl), StatusCode::Ereadonly);
}

fn long_poll(ledger: i64, previous: i64, timeout_ms: i64, piggyback: bool) -> RequestBody {
    RequestBody::ReadEntry(v3::ReadRequest {
        flag: piggyback.then_some(read_request::Flag::EntryPiggyback as i32),
        ledger_id: ledger,
        entry_id: -1,
        previous_lac: Some(previous),
        time_out: Some(timeout_ms),
        ..Default::default()
    })
}

#[tokio::test]
async fn long_poll_wakes_on_lac_advance_and_piggybacks() {
    let b = mem_bookie().await;
    let mut writer = Client::connect(b.addr()).await;
    writer.v3_add(key(), entry(7, 0, -1, b"a"), false).await;
    writer.v3_add(key(), entry(7, 1, 0, b"b"), false).await;
    // LAC is 0; wait for > 0.
    let mut poller = Client::connect(b.addr()).await;
    let started = Instant::now();
    let txn = poller.v3_send(None, long_poll(7, 0, 10_000, true)).await;
    assert!(poller.silent_for(Duration::from_millis(200)).await);
    writer.v3_add(key(), entry(7, 2, 1, b"c"), false).await;
    let r = poller.v3_recv().await;
    assert_eq!(r.header.txn_id, txn);
    assert!(started.elapsed() < Duration::from_secs(5));
    let rr = r.read_response.clone().unwrap();
    assert_eq!(v3_status(&r), StatusCode::Eok);
    assert_eq!(rr.max_lac, Some(1));
    assert_eq!(rr.entry_id, 1, "piggyback returns previousLAC + 1");
    assert_eq!(rr.body, Some(entry(7, 1, 0, b"b")));
    assert!(rr.lac_update_timestamp.is_some());
    // Already past previousLAC: answered at once.
    let r = poller.v3_call(None, long_poll(7, 0, 10_000, true)).await;
    assert_eq!(r.read_response.unwrap().max_lac, Some(1));
}

#[tokio::test]
async fn long_poll_times_out_with_max_lac_only_and_wakes_on_fence() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    c.v3_add(key(), entry(8, 0, -1, b"a"), false).await;
    c.v3_add(key(), entry(8, 1, 0, b"b"), false).await;
    let started = Instant::now();
    let r = c.v3_call(None, long_poll(8, 0, 300, true)).await;
    assert!(started.elapsed() >= Duration::from_millis(250));
    let rr = r.read_response.clone().unwrap();
    assert_eq!(
        (v3_status(&r), rr.max_lac, rr.body),
        (StatusCode::Eok, Some(0), None)
    );
    // Fence wakes the watcher.
    let mut poller = Client::connect(b.addr()).await;
    poller.v3_send(None, long_poll(8, 0, 20_000, true)).await;
    assert!(poller.silent_for(Duration::from_millis(200)).await);
    let started = Instant::now();
    c.v2_fence(8, key()).await;
    let r = poller.v3_recv().await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(v3_status(&r), StatusCode::Eok);
    // piggyback with entryId != -1 -> EBADREQ; unknown ledger -> ENOLEDGER
    let mut c2 = Client::connect(b.addr()).await;
    let r = c2
        .v3_call(
            None,
            RequestBody::ReadEntry(v3::ReadRequest {
                flag: Some(read_request::Flag::EntryPiggyback as i32),
                ledger_id: 8,
                entry_id: 3,
                previous_lac: Some(5),
                ..Default::default()
            }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Ebadreq);
    let r = c2.v3_call(None, long_poll(999, 0, 100, true)).await;
    assert_eq!(v3_status(&r), StatusCode::Enoledger);
}

#[tokio::test]
async fn force_ledger_info_and_list_of_entries() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    let r = c
        .v3_call(
            None,
            RequestBody::ForceLedger(v3::ForceLedgerRequest { ledger_id: 42 }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    assert_eq!(r.force_ledger_response.unwrap().ledger_id, 42);
    let r = c
        .v3_call(
            None,
            RequestBody::GetBookieInfo(v3::GetBookieInfoRequest { requested: Some(3) }),
        )
        .await;
    let info = r.get_bookie_info_response.unwrap();
    let (total, free) = (
        info.total_disk_capacity.unwrap(),
        info.free_disk_space.unwrap(),
    );
    assert!(total > 0 && free > 0 && free <= total);
    let r = c
        .v3_call(
            None,
            RequestBody::GetBookieInfo(v3::GetBookieInfoRequest { requested: Some(2) }),
        )
        .await;
    let info = r.get_bookie_info_response.unwrap();
    assert!(info.total_disk_capacity.is_none() && info.free_disk_space.is_some());

    for e in [0, 1, 2, 5, 6, 9] {
        c.v3_add(key(), entry(11, e, -1, b"z"), false).await;
    }
    let r = c
        .v3_call(
            None,
            RequestBody::GetListOfEntriesOfLedger(v3::GetListOfEntriesOfLedgerRequest {
                ledger_id: 11,
            }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    let bytes = r
        .get_list_of_entries_of_ledger_response
        .unwrap()
        .availability_of_entries_of_ledger
        .unwrap();
    let groups = bk_proto::availability::decode_availability(&bytes).unwrap();
    for e in 0..12 {
        assert_eq!(
            bk_proto::availability::is_entry_available(&groups, e),
            [0, 1, 2, 5, 6, 9].contains(&e),
            "entry {e}"
        );
    }
    let r = c
        .v3_call(
            None,
            RequestBody::GetListOfEntriesOfLedger(v3::GetListOfEntriesOfLedgerRequest {
                ledger_id: 12,
            }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Enoledger);
}

#[tokio::test]
async fn auth_start_tls_and_unsupported_operations() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    // AUTH: header copied verbatim (priority included), AuthDisabledPlugin.
    let txn = c
        .v3_send(
            Some(7),
            RequestBody::Auth(v3::AuthMessage {
                auth_plugin_name: "X".into(),
                payload: Bytes::from_static(b"p"),
            }),
        )
        .await;
    let r = c.v3_recv().await;
    assert_eq!((r.header.txn_id, r.header.priority), (txn, Some(7)));
    assert_eq!(
        r.auth_response.unwrap().auth_plugin_name,
        v3::AUTH_DISABLED_PLUGIN_NAME
    );
    let r = c.v3_call(None, RequestBody::StartTls).await;
    assert_eq!(v3_status(&r), StatusCode::Ebadreq);
    assert!(r.start_tls_response.is_none());
    for op in [3, 4, 12] {
        let r = c.v3_call(Some(1), RequestBody::Unsupported(op)).await;
        assert_eq!(v3_status(&r), StatusCode::Ebadreq);
        assert_eq!(r.header.priority, Some(1), "header copied for unknown ops");
    }
    // The connection still works.
    assert_eq!(v3_status(&c.v3_read(1, 0).await), StatusCode::Enoledger);
}

#[tokio::test]
async fn wrong_header_version_is_ebadversion() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    let mut req = v3::new_request(
        5,
        None,
        RequestBody::ReadEntry(v3::ReadRequest {
            ledger_id: 1,
            entry_id: 0,
            ..Default::default()
        }),
    );
    req.header.version = v3::ProtocolVersion::VersionTwo as i32;
    c.v3_send_request(&req).await;
    let r = c.v3_recv().await;
    assert_eq!(v3_status(&r), StatusCode::Ebadversion);
    assert_eq!(r.header.txn_id, 5);
}

#[tokio::test]
async fn v3_add_with_short_body_is_ebadreq() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    let r = c
        .v3_call(
            None,
            RequestBody::AddEntry(v3::AddRequest {
                ledger_id: 1,
                entry_id: 0,
                master_key: Bytes::copy_from_slice(&key().0),
                body: Bytes::from_static(b"short"),
                ..Default::default()
            }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Ebadreq);
}

#[tokio::test]
async fn v2_and_v3_connections_coexist_and_v3_error_codes_above_106_stay_v3() {
    let b = mem_bookie().await;
    let mut v2c = Client::connect(b.addr()).await;
    let mut v3c = Client::connect(b.addr()).await;
    v2c.v2_add(bk_proto::v2::Flags::NONE, key(), entry(30, 0, -1, b"a"))
        .await;
    let r = v3c.v3_read(30, 0).await;
    assert_eq!(r.read_response.unwrap().body, Some(entry(30, 0, -1, b"a")));
    assert_eq!(bookie::handlers::Status::UnknownLedgerState.v2_code(), 101);
    assert_eq!(bookie::handlers::Status::UnknownLedgerState.v3_code(), 507);
}

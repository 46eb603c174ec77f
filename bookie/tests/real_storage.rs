//! The request path on the real journal + entry log (in-process, temp directories): the
//! answers that depend on storage (ENOLEDGER vs ENOENTRY, last entry, fence state, master
//! key conflicts, explicit LAC, list of entries, batch reads) match the in-memory double's.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::sync::Arc;

use bk_proto::v2::{ErrorCode, Flags};
use bk_proto::v3::{self, RequestBody, StatusCode};
use bookie::handlers::{Bookie, BookieOptions};
use bookie::server::Server;
use bookie::storage::real::{self, RealStorage, RealStorageConfig};
use bookie::storage::FatalHandler;
use bytes::Bytes;
use common::*;

fn config(dir: &std::path::Path) -> RealStorageConfig {
    RealStorageConfig {
        journal_dirs: vec![dir.join("journal")],
        ledger_dirs: vec![dir.join("ledgers")],
        journal: bk_journal::JournalConfig {
            segment_bytes: 4 << 20,
            ..Default::default()
        },
        entry_log: bk_entrylog::EntryLogConfig {
            write_cache_bytes: 4 << 20,
            read_cache_bytes: 1 << 20,
            // Not about disk thresholds: never full however full the host disk is (1.0 is
            // allowed here, not in the bookie's config; bookie/tests/host_disk/mod.rs).
            disk_usage_threshold: 1.0,
            disk_usage_warn_threshold: 1.0,
            disk_usage_lwm_threshold: 1.0,
            ..Default::default()
        },
        disk: bk_disk::DiskConfig {
            kind: bk_disk::DiskKind::Syscall,
            ..Default::default()
        },
        chaos: None,
    }
}

fn no_fatal() -> FatalHandler {
    Arc::new(|reason: &str| panic!("fatal storage failure in test: {reason}"))
}

async fn start(dir: &std::path::Path) -> (Server, Arc<RealStorage>) {
    for d in ["journal", "ledgers"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    let cfg = config(dir);
    let storage = tokio::task::spawn_blocking(move || real::open(&cfg, no_fatal()))
        .await
        .unwrap()
        .expect("storage opens");
    let storage = Arc::new(storage);
    let bookie = Bookie::new(
        storage.store.clone(),
        BookieOptions {
            ledger_dirs: vec![dir.join("ledgers")],
            ..BookieOptions::default()
        },
    );
    let server = Server::start(bookie, loopback_config()).await.unwrap();
    (server, storage)
}

async fn stop(server: Server, storage: Arc<RealStorage>) {
    assert!(server.shutdown().await);
    tokio::task::spawn_blocking(move || storage.shutdown())
        .await
        .unwrap()
        .expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_dependent_answers_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (server, storage) = start(dir.path()).await;
    let mut c = Client::connect(server.local_addr()).await;
    assert_eq!(c.v2_read(1, 0).await.error, ErrorCode::NoLedger);
    assert_eq!(c.v2_read(1, -1).await.error, ErrorCode::NoLedger);
    for e in [0, 1, 2, 4] {
        let r = c
            .v2_add(Flags::NONE, key(), entry(1, e, e - 1, b"real"))
            .await;
        assert_eq!(r.error, ErrorCode::Ok);
    }
    assert_eq!(c.v2_read(1, 3).await.error, ErrorCode::NoEntry);
    let r = c.v2_read(1, -1).await;
    assert_eq!(
        (r.error, r.entry_id, r.entry.clone()),
        (ErrorCode::Ok, -1, entry(1, 4, 3, b"real"))
    );
    // Fence of an unknown ledger creates it: ENOENTRY, then adds are fenced.
    assert_eq!(c.v2_fence(2, key()).await.error, ErrorCode::NoEntry);
    assert_eq!(
        c.v2_add(Flags::NONE, key(), entry(2, 0, -1, b"x"))
            .await
            .error,
        ErrorCode::Fenced
    );
    assert_eq!(c.v2_read(2, 0).await.error, ErrorCode::NoEntry);
    // Batch read stops at the gap.
    c.v2_send(bk_proto::v2::Request::BatchReadEntry(
        bk_proto::v2::BatchReadRequest {
            version: 2,
            flags: Flags::NONE,
            ledger_id: 1,
            start_entry_id: 0,
            request_id: 5,
            max_count: 0,
            max_size: 1 << 20,
            master_key: None,
        },
    ))
    .await;
    match c.v2_recv().await {
        bk_proto::v2::Response::BatchReadEntry(r) => assert_eq!(r.entries.len(), 3),
        other => panic!("{other:?}"),
    }
    // v3: list of entries, explicit LAC, maxLAC.
    let mut c3 = Client::connect(server.local_addr()).await;
    let r = c3
        .v3_call(
            None,
            RequestBody::GetListOfEntriesOfLedger(v3::GetListOfEntriesOfLedgerRequest {
                ledger_id: 1,
            }),
        )
        .await;
    let groups = bk_proto::availability::decode_availability(
        &r.get_list_of_entries_of_ledger_response
            .unwrap()
            .availability_of_entries_of_ledger
            .unwrap(),
    )
    .unwrap();
    for e in 0..6 {
        assert_eq!(
            bk_proto::availability::is_entry_available(&groups, e),
            [0, 1, 2, 4].contains(&e)
        );
    }
    let lac = bk_proto::DigestManager::new(bk_proto::DigestType::Crc32c, b"").build_lac_body(1, 3);
    let r = c3
        .v3_call(
            None,
            RequestBody::WriteLac(v3::WriteLacRequest {
                ledger_id: 1,
                lac: 3,
                master_key: Bytes::copy_from_slice(&key().0),
                body: lac.clone(),
            }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    let r = c3.v3_read(1, 0).await;
    assert_eq!(r.read_response.unwrap().max_lac, Some(3));
    stop(server, storage).await;

    // Restart on the same directories: everything is back, answered the same way.
    let (server, storage) = start(dir.path()).await;
    let mut c = Client::connect(server.local_addr()).await;
    let r = c.v2_read(1, 2).await;
    assert_eq!(
        (r.error, r.entry.clone()),
        (ErrorCode::Ok, entry(1, 2, 1, b"real"))
    );
    assert_eq!(c.v2_read(1, 3).await.error, ErrorCode::NoEntry);
    assert_eq!(
        c.v2_add(Flags::NONE, key(), entry(2, 0, -1, b"x"))
            .await
            .error,
        ErrorCode::Fenced
    );
    // First write after restart with a different key: stored-key conflict -> EIO.
    assert_eq!(
        c.v2_add(Flags::NONE, other_key(), entry(1, 5, 4, b"x"))
            .await
            .error,
        ErrorCode::Io
    );
    let mut c3 = Client::connect(server.local_addr()).await;
    let r = c3
        .v3_call(
            None,
            RequestBody::ReadLac(v3::ReadLacRequest { ledger_id: 1 }),
        )
        .await;
    assert_eq!(r.read_lac_response.unwrap().lac_body, Some(lac));
    stop(server, storage).await;
}

/// Copies a directory tree: the image a SIGKILL at this moment would leave (every write
/// the storage made is in the files, none of its in-memory state).
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// "Never a deleted ledger back" (issue 11's fault matrix): after GC deleted a ledger,
/// the copy of `ledgers.state` from before the deletion is refused at start-up, naming
/// it, after a clean stop and in the image a SIGKILL right after the GC round leaves.
/// GC writes no journal record, so this holds only because the GC round checkpoints the
/// new state epoch at once (`RealStorage::gc`) and the journal writes a checkpoint for a
/// newer epoch even when its mark has not moved. Without either, the older copy was
/// accepted and ledger 2 answered its entries again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_state_file_cannot_bring_back_a_deleted_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    let (server, storage) = start(&live).await;
    let mut c = Client::connect(server.local_addr()).await;
    for l in [1, 2] {
        for e in 0..3 {
            let r = c
                .v2_add(Flags::NONE, key(), entry(l, e, e - 1, b"gc"))
                .await;
            assert_eq!(r.error, ErrorCode::Ok);
        }
    }
    let st = storage.clone();
    tokio::task::spawn_blocking(move || st.store.flush_and_checkpoint())
        .await
        .unwrap()
        .unwrap();
    let state = live.join("ledgers").join(bk_entrylog::STATE_FILE);
    let before_gc = std::fs::read(&state).unwrap();

    let st = storage.clone();
    let report = tokio::task::spawn_blocking(move || {
        let token = st.begin_gc_scan()?;
        st.gc(token, &|l| l != 2, &bk_entrylog::Cancel::new())
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(report.deleted_ledgers, vec![2]);
    let killed = dir.path().join("killed");
    copy_tree(&live, &killed);
    drop(c);
    stop(server, storage).await;

    for (how, image) in [("clean stop", &live), ("SIGKILL image", &killed)] {
        // The state file replaced with its copy from before the GC round: refused. (On a
        // copy: a start of the image itself would checkpoint again at its stop.)
        let damaged = dir.path().join(format!("{how} damaged"));
        copy_tree(image, &damaged);
        std::fs::write(
            damaged.join("ledgers").join(bk_entrylog::STATE_FILE),
            &before_gc,
        )
        .unwrap();
        let cfg = config(&damaged);
        let opened = tokio::task::spawn_blocking(move || real::open(&cfg, no_fatal()))
            .await
            .unwrap();
        let err = match opened {
            Ok(_) => panic!("{how}: the state file from before the GC round was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains(bk_entrylog::STATE_FILE),
            "{how}: refusal names the state file: {err}"
        );

        // Undamaged: ledger 2 stays deleted, ledger 1 is served.
        let (server, storage) = start(image).await;
        let mut c = Client::connect(server.local_addr()).await;
        assert_eq!(c.v2_read(2, 0).await.error, ErrorCode::NoLedger, "{how}");
        assert_eq!(c.v2_read(1, 2).await.error, ErrorCode::Ok, "{how}");
        drop(c);
        stop(server, storage).await;
    }
}

/// The add path asks `is_fenced` (one lookup) instead of building the ledger's
/// `LedgerMeta`: the real storage's answer must be the one `ledger_meta` gives, for an
/// unknown ledger, a negative id, a known one and a fenced one.
#[tokio::test]
async fn is_fenced_answers_as_ledger_meta_does() {
    let dir = tempfile::tempdir().unwrap();
    let (server, storage) = start(dir.path()).await;
    let s = storage.store.storage.clone();
    let meta_fenced = |l: i64| s.ledger_meta(l).unwrap().is_some_and(|m| m.fenced);
    for l in [7, -1] {
        assert!(!s.is_fenced(l).unwrap(), "ledger {l}");
        assert_eq!(s.is_fenced(l).unwrap(), meta_fenced(l), "ledger {l}");
    }
    s.set_master_key(7, key().as_bytes()).unwrap();
    assert!(!s.is_fenced(7).unwrap());
    assert_eq!(s.is_fenced(7).unwrap(), meta_fenced(7));
    assert!(s.set_fenced(7).unwrap());
    assert!(s.is_fenced(7).unwrap());
    assert_eq!(s.is_fenced(7).unwrap(), meta_fenced(7));
    assert!(
        !s.is_fenced(8).unwrap(),
        "another ledger is not fenced by it"
    );
    stop(server, storage).await;
}

//! The GC ledger scan against a real ZooKeeper: both hierarchical layouts, non-ledger znodes,
//! scale (BK_GC_SCAN_LEDGERS ledgers, default 20000; timings printed), and failures that must
//! be errors (missing root, unreachable ZooKeeper), never "no ledgers".
//! Skips (printing SKIPPED) only when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.

mod ops_support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bookie::gc_scan::{
    ledger_path, scan_live_ledgers, scan_live_ledgers_with, GcScanError, ScanOptions,
};
use ops_support::*;
use zookeeper_client as zk;

/// Creates ledger metadata znodes (tiny data) for `ids`, pipelining requests.
async fn create_ledgers(client: &zk::Client, root: &str, ids: &[u64]) {
    let mut parents: Vec<BTreeSet<String>> = vec![BTreeSet::new(); 5];
    for &id in ids {
        let path = ledger_path(root, id);
        let rel = &path[root.len() + 1..];
        let parts: Vec<&str> = rel.split('/').collect();
        for depth in 1..parts.len() {
            parents[depth - 1].insert(format!("{root}/{}", parts[..depth].join("/")));
        }
    }
    let opts = open();
    for level in parents {
        let level: Vec<String> = level.into_iter().collect();
        for chunk in level.chunks(1000) {
            let futs: Vec<_> = chunk.iter().map(|p| client.create(p, b"", &opts)).collect();
            for f in futs {
                match f.await {
                    Ok(_) | Err(zk::Error::NodeExists) => {}
                    Err(e) => panic!("create parent: {e}"),
                }
            }
        }
    }
    let paths: Vec<String> = ids.iter().map(|&id| ledger_path(root, id)).collect();
    for chunk in paths.chunks(1000) {
        let futs: Vec<_> = chunk
            .iter()
            .map(|p| client.create(p, b"BookieMetadataFormatVersion\t3\n", &opts))
            .collect();
        for f in futs {
            f.await.expect("create ledger znode");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_finds_both_layouts_and_skips_other_znodes() {
    let Some(server) = zk_server("scan_finds_both_layouts_and_skips_other_znodes") else {
        return;
    };
    let c = observer(server).await;
    let root = "/gc1/ledgers";
    init_cluster(&c, root, Some("x")).await;
    let ids = [
        0u64,
        1,
        9_999,
        10_000,
        123_456,
        2_147_483_646,
        2_147_483_647,
        2_147_483_648,
        5_000_000_000,
        i64::MAX as u64,
    ];
    create_ledgers(&c, root, &ids).await;
    // Znodes that are not ledgers.
    for p in [
        "cookies/127.0.0.1:3181",
        "idgen/ID-0000000001",
        "underreplication/ledgers/0000",
        "00/0000/notaledger",
    ] {
        c.mkdir(&format!("{root}/{p}"), &open()).await.unwrap();
    }
    c.create(&format!("{root}/00/0000/L12ab"), b"", &open())
        .await
        .unwrap();
    c.create(&format!("{root}/9x"), b"", &open()).await.unwrap();

    let live = scan_live_ledgers(&c, root).await.unwrap();
    assert_eq!(live.ids(), &ids[..]);
    assert_eq!(live.max_id(), Some(i64::MAX as u64));

    // Deleting a ledger's metadata removes it from the next scan.
    c.delete(&ledger_path(root, 123_456), None).await.unwrap();
    c.delete(&ledger_path(root, 2_147_483_648), None)
        .await
        .unwrap();
    let live = scan_live_ledgers(&c, root).await.unwrap();
    assert!(!live.contains(123_456) && !live.contains(2_147_483_648));
    assert_eq!(live.len(), ids.len() - 2);

    // A root with no ledgers at all is a legitimate empty answer.
    let empty_root = "/gc1-empty/ledgers";
    init_cluster(&c, empty_root, None).await;
    assert!(scan_live_ledgers(&c, empty_root).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_scans_are_errors_never_empty() {
    let Some(server) = zk_server("failed_scans_are_errors_never_empty") else {
        return;
    };
    let c = observer(server).await;
    let root = "/gc2/ledgers";
    init_cluster(&c, root, None).await;
    create_ledgers(&c, root, &[1, 2, 3]).await;

    let err = scan_live_ledgers(&c, "/gc2/wrong").await.unwrap_err();
    assert!(matches!(err, GcScanError::RootMissing(_)), "{err}");
    c.mkdir("/gc2/notbk/00/0000", &open()).await.unwrap();
    let err = scan_live_ledgers(&c, "/gc2/notbk").await.unwrap_err();
    assert!(matches!(err, GcScanError::NotALedgersRoot(_)), "{err}");

    // A LAYOUT naming a manager whose metadata is elsewhere: refuse (GC would delete all).
    init_cluster(&c, "/gc2/ms", None).await;
    c.set_data(
        "/gc2/ms/LAYOUT",
        b"2\norg.apache.bookkeeper.meta.MSLedgerManagerFactory:1",
        None,
    )
    .await
    .unwrap();
    let err = scan_live_ledgers(&c, "/gc2/ms").await.unwrap_err();
    assert!(
        matches!(err, GcScanError::UnsupportedLayout { .. }),
        "{err}"
    );
    c.set_data(
        "/gc2/ms/LAYOUT",
        b"2\norg.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1",
        None,
    )
    .await
    .unwrap();
    assert!(scan_live_ledgers(&c, "/gc2/ms").await.unwrap().is_empty());

    // ZooKeeper unreachable (connection cut and refused): the scan fails within the timeout.
    let proxy = ZkProxy::start(&server.connect).await;
    let through = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&proxy.connect)
        .await
        .unwrap();
    let opts = ScanOptions {
        op_timeout: Duration::from_secs(1),
        ..Default::default()
    };
    assert_eq!(
        scan_live_ledgers_with(&through, root, &opts)
            .await
            .unwrap()
            .len(),
        3
    );
    proxy.block();
    let started = Instant::now();
    let err = scan_live_ledgers_with(&through, root, &opts)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GcScanError::Timeout { .. } | GcScanError::Zk { .. }),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_at_scale() {
    let Some(server) = zk_server("scan_at_scale") else {
        return;
    };
    let n: u64 = std::env::var("BK_GC_SCAN_LEDGERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let c = observer(server).await;
    let root = "/gc3/ledgers";
    init_cluster(&c, root, None).await;
    // Sparse ids (step 499: about 20 ledgers per 4-digit directory, so many directories to list),
    // plus a tail of ids in the long layout.
    let mut ids: Vec<u64> = (0..n - n / 10).map(|i| i * 499).collect();
    ids.extend((0..n / 10).map(|i| 3_000_000_000 + i * 13));
    let t0 = Instant::now();
    create_ledgers(&c, root, &ids).await;
    let created = t0.elapsed();
    let live = scan_live_ledgers(&c, root).await.unwrap();
    println!(
        "gc_scan: {} ledgers created in {:?}; scanned in {:?} with {} getChildren calls",
        ids.len(),
        created,
        live.elapsed,
        live.listings
    );
    assert_eq!(live.ids(), &ids[..]);
    // Sequential (one request at a time) for comparison.
    let seq = scan_live_ledgers_with(
        &c,
        root,
        &ScanOptions {
            max_in_flight: 1,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    println!(
        "gc_scan: same scan with one request in flight: {:?}",
        seq.elapsed
    );
    assert_eq!(seq.ids(), live.ids());
}

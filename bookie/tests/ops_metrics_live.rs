//! The `bookie` binary's metrics under load, against the stock 4.17 bookie's series
//! (docs/metrics.md): after adds, reads and every other request kind, the request and
//! processing stats (`bookkeeper_server_ADD_ENTRY`, `READ_ENTRY`, every `*_REQUEST`) count
//! them, and the storage, ledger-dir and `process_*` series are there with plausible
//! values. Also which listener serves `/metrics` (docs/metrics.md §1): none without the
//! Prometheus provider, the admin port with the Apache Pulsar Helm chart's settings.
//! Standalone bookies (no ZooKeeper needed).

// The test reads its child's stderr and allocates ports; only production code is bound
// by invariant 1.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod loopfs;
mod ops_support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use bk_proto::v3::{self, RequestBody};
use bytes::Bytes;
use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PROMETHEUS: &str =
    "statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider";

struct Bookie {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Bookie {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

mod host_disk;
mod ports;
use ports::free_port;

/// A standalone bookie with `args` added, serving on a free port once this returns.
async fn start(args: &[&str]) -> Bookie {
    start_with(&["--standalone"], args).await
}

async fn start_with(mode: &[&str], args: &[&str]) -> Bookie {
    start_in(tempfile::tempdir().unwrap(), mode, args).await
}

/// [`start_with`] with its data in `dir`.
async fn start_in(dir: tempfile::TempDir, mode: &[&str], args: &[&str]) -> Bookie {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_bookie"))
        .args(host_disk::ARGS)
        .args(mode)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--port", &port.to_string()])
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bookie");
    let mut b = Bookie { child, port, dir };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if let Ok(Some(status)) = b.child.try_wait() {
            panic!("bookie exited early: {status}");
        }
        assert!(Instant::now() < deadline, "bookie did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b
}

/// Stops the bookie and returns what it logged.
fn stop(mut b: Bookie) -> String {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(b.child.id() as i32, libc::SIGTERM) };
    let _ = b.child.wait();
    let mut log = String::new();
    if let Some(mut e) = b.child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut log);
    }
    log
}

/// (status, body) of `GET path`, or None if nothing listens.
async fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut out))
        .await
        .ok()?
        .ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// The value of the sample whose line starts with `prefix` and a space.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix)?.strip_prefix(' ')?.parse().ok())
}

fn count(text: &str, op: &str) -> f64 {
    sample(text, &format!("{op}_count{{success=\"true\"}}"))
        .unwrap_or_else(|| panic!("{op}_count missing in\n{text}"))
}

/// The value of the one sample of family `name` (any labels).
fn labelled(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            let rest = l.strip_prefix(name)?;
            let rest = if rest.starts_with('{') {
                &rest[rest.find('}')? + 1..]
            } else {
                rest
            };
            rest.strip_prefix(' ')?.parse().ok()
        })
        .unwrap_or_else(|| panic!("{name} missing in\n{text}"))
}

/// The `success="true"` sample of summary part `name` (`<op>_count` / `<op>_sum`), any
/// further labels.
fn labelled_ok(text: &str, name: &str) -> f64 {
    let prefix = format!("{name}{{success=\"true\"");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix)?.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{name} missing in\n{text}"))
}

const ADDS: i64 = 200;
const LEDGER: i64 = 5;
/// Adds of [`blocking_load`], sent without waiting for their answers.
const BLOCKED_ADDS: i64 = 20;

/// Adds, reads (from the write cache, then from disk after a flush), a fence read, a long
/// poll and one of every other request kind.
async fn load(port: u16) {
    let mut c = Client::connect(([127, 0, 0, 1], port).into()).await;
    for e in 0..ADDS {
        let r = c
            .v2_add(Flags::NONE, key(), entry(LEDGER, e, e - 1, &[7u8; 1000]))
            .await;
        assert_eq!(r.error, ErrorCode::Ok, "add {e}");
    }
    for e in 0..ADDS {
        assert_eq!(c.v2_read(LEDGER, e).await.error, ErrorCode::Ok, "read {e}");
    }
    let mut v3c = Client::connect(([127, 0, 0, 1], port).into()).await;
    let body = bk_proto::DigestManager::new(bk_proto::DigestType::Crc32c, b"")
        .build_lac_body(LEDGER, ADDS - 2);
    for body in [
        RequestBody::WriteLac(v3::WriteLacRequest {
            ledger_id: LEDGER,
            lac: ADDS - 2,
            master_key: Bytes::copy_from_slice(&key().0),
            body,
        }),
        RequestBody::ReadLac(v3::ReadLacRequest { ledger_id: LEDGER }),
        RequestBody::ForceLedger(v3::ForceLedgerRequest { ledger_id: LEDGER }),
        RequestBody::GetBookieInfo(v3::GetBookieInfoRequest { requested: Some(3) }),
        RequestBody::GetListOfEntriesOfLedger(v3::GetListOfEntriesOfLedgerRequest {
            ledger_id: LEDGER,
        }),
        // A long poll already satisfied (LAC is above 0): answered at once.
        RequestBody::ReadEntry(v3::ReadRequest {
            ledger_id: LEDGER,
            entry_id: -1,
            previous_lac: Some(0),
            time_out: Some(1000),
            ..Default::default()
        }),
    ] {
        let r = v3c.v3_call(None, body).await;
        assert_eq!(v3_status(&r), v3::StatusCode::Eok, "{r:?}");
    }
    // A fence read on another ledger.
    c.v2_add(Flags::NONE, key(), entry(LEDGER + 1, 0, -1, b"x"))
        .await;
    assert_eq!(c.v2_fence(LEDGER + 1, key()).await.error, ErrorCode::Ok);
}

/// Requests that wait for the in-progress limits (one add, one read at a time): pipelined
/// adds on one connection, and a read queued behind a long poll that holds the one read
/// permit until its timeout. Then a fence of an unknown ledger, a last-entry read that
/// answers no-entry.
async fn blocking_load(port: u16) {
    const BLOCKED_LEDGER: i64 = LEDGER + 2;
    let mut c = Client::connect(([127, 0, 0, 1], port).into()).await;
    for e in 0..BLOCKED_ADDS {
        let add = bk_proto::v2::AddRequest::new(
            Flags::NONE,
            key(),
            entry(BLOCKED_LEDGER, e, e - 1, &[1u8; 100]),
        )
        .expect("entry");
        c.v2_send(bk_proto::v2::Request::AddEntry(add)).await;
    }
    for _ in 0..BLOCKED_ADDS {
        match c.v2_recv().await {
            bk_proto::v2::Response::AddEntry(r) => assert_eq!(r.error, ErrorCode::Ok),
            other => panic!("{other:?}"),
        }
    }
    let mut v3c = Client::connect(([127, 0, 0, 1], port).into()).await;
    v3c.v3_send(
        None,
        RequestBody::ReadEntry(v3::ReadRequest {
            ledger_id: BLOCKED_LEDGER,
            entry_id: -1,
            previous_lac: Some(1000),
            time_out: Some(300),
            ..Default::default()
        }),
    )
    .await;
    v3c.v3_send(
        None,
        RequestBody::ReadEntry(v3::ReadRequest {
            ledger_id: BLOCKED_LEDGER,
            entry_id: 0,
            ..Default::default()
        }),
    )
    .await;
    v3c.v3_recv().await;
    v3c.v3_recv().await;
    let r = c.v2_fence(LEDGER + 3, key()).await;
    assert_eq!((r.error, r.entry_id), (ErrorCode::NoEntry, -1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_bookie_exports_live_stock_series() {
    let mport = free_port();
    let b = start(&[
        "--metrics-port",
        &mport.to_string(),
        "--set",
        "prometheusStatsHttpAddress=127.0.0.1",
        "--set",
        "flushInterval=200",
        "--set",
        "maxAddsInProgressLimit=1",
        "--set",
        "maxReadsInProgressLimit=1",
    ])
    .await;
    load(b.port).await;
    blocking_load(b.port).await;
    // The flusher moves the entries into a segment (entries_count counts the index);
    // then the same reads come from disk through the read cache.
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let (status, text) = get(mport, "/metrics").await.expect("metrics port");
        assert_eq!(status, 200);
        if labelled(&text, "bookie_entries_count") >= (ADDS + 1 + BLOCKED_ADDS) as f64 {
            break text;
        }
        assert!(Instant::now() < deadline, "never flushed:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut c = Client::connect(([127, 0, 0, 1], b.port).into()).await;
    for e in 0..ADDS {
        assert_eq!(c.v2_read(LEDGER, e).await.error, ErrorCode::Ok);
    }
    let after = get(mport, "/metrics").await.unwrap().1;

    // Request path: processing and request stats of every kind sent.
    let adds = (ADDS + 1 + BLOCKED_ADDS) as f64;
    assert_eq!(count(&text, "bookkeeper_server_ADD_ENTRY"), adds);
    assert_eq!(count(&text, "bookkeeper_server_ADD_ENTRY_REQUEST"), adds);
    assert_eq!(count(&text, "bookie_BOOKIE_ADD_ENTRY"), adds);
    assert_eq!(
        count(&text, "bookkeeper_server_WRITE_THREAD_QUEUED_LATENCY"),
        adds
    );
    assert!(count(&text, "bookkeeper_server_READ_ENTRY") >= ADDS as f64);
    assert!(count(&text, "bookkeeper_server_READ_ENTRY_REQUEST") >= ADDS as f64);
    for op in [
        "bookkeeper_server_READ_ENTRY_FENCE_REQUEST",
        "bookkeeper_server_READ_ENTRY_FENCE_READ",
        "bookkeeper_server_READ_ENTRY_LONG_POLL_REQUEST",
        "bookkeeper_server_READ_ENTRY_LONG_POLL_READ",
        "bookkeeper_server_WRITE_LAC_REQUEST",
        "bookkeeper_server_WRITE_LAC",
        "bookkeeper_server_READ_LAC_REQUEST",
        "bookkeeper_server_READ_LAC",
        "bookkeeper_server_FORCE_LEDGER_REQUEST",
        "bookkeeper_server_FORCE_LEDGER",
        "bookkeeper_server_GET_BOOKIE_INFO_REQUEST",
        "bookkeeper_server_GET_BOOKIE_INFO",
        "bookkeeper_server_GET_LIST_OF_ENTRIES_OF_LEDGER_REQUEST",
        "bookkeeper_server_GET_LIST_OF_ENTRIES_OF_LEDGER",
        "bookkeeper_server_READ_ENTRY_SCHEDULING_DELAY",
        "bookie_BOOKIE_READ_ENTRY",
        "bookie_BOOKIE_GET_LIST_OF_ENTRIES_OF_LEDGER",
    ] {
        assert!(count(&text, op) >= 1.0, "{op} stayed 0");
    }
    for op in [
        "bookie_journal_JOURNAL_ADD_ENTRY",
        "bookie_journal_JOURNAL_FORCE_LEDGER",
        "bookie_journal_JOURNAL_SYNC",
        // The first group after start-up opens a fresh segment.
        "bookie_journal_JOURNAL_CREATION_LATENCY",
    ] {
        let line = format!("{op}_count{{success=\"true\",journalIndex=\"0\"}}");
        assert!(sample(&text, &line).unwrap_or(0.0) >= 1.0, "{op} stayed 0");
    }
    // blocking_load: requests that waited for the in-progress limits, and are done.
    for op in [
        "bookkeeper_server_ADD_ENTRY_BLOCKED_WAIT",
        "bookkeeper_server_READ_ENTRY_BLOCKED_WAIT",
        "bookkeeper_server_CHANNEL_WRITE",
    ] {
        assert!(count(&text, op) >= 1.0, "{op} stayed 0");
    }
    assert_eq!(
        sample(&text, "bookkeeper_server_ADD_ENTRY_BLOCKED"),
        Some(0.0)
    );
    assert_eq!(
        sample(&text, "bookkeeper_server_READ_ENTRY_BLOCKED"),
        Some(0.0)
    );
    assert_eq!(
        sample(&text, "bookkeeper_server_READ_LAST_ENTRY_NOENTRY_ERROR"),
        Some(1.0)
    );
    assert!(sample(&text, "bookie_WRITE_BYTES").unwrap() >= 200_000.0);
    assert!(sample(&text, "bookie_READ_BYTES").unwrap() >= 200_000.0);

    // Storage: every read asks the write cache first; once flushed, the reads go through
    // the read cache (read-ahead makes most of them hits).
    // Three ledgers with entries; the fenced empty one counts once its state is flushed.
    let ledgers = labelled(&text, "bookie_ledgers_count");
    assert!((3.0..=4.0).contains(&ledgers), "{ledgers}");
    let write_cache =
        |t: &str| labelled(t, "bookie_write_cache_hits") + labelled(t, "bookie_write_cache_misses");
    let read_cache =
        |t: &str| labelled(t, "bookie_read_cache_hits") + labelled(t, "bookie_read_cache_misses");
    assert!(write_cache(&text) >= ADDS as f64, "{text}");
    assert!(
        read_cache(&after) - read_cache(&text) >= ADDS as f64,
        "reads after the flush did not reach the read cache\n{after}"
    );
    assert!(labelled(&after, "bookie_read_cache_hits") >= 1.0);
    assert!(labelled_ok(&after, "bookie_readahead_batch_count_count") >= 1.0);
    // Each read-ahead's bytes (over 1,000 per entry read ahead) and time; the configured
    // entries per read-ahead (dbStorage_readAheadCacheBatchSize's default).
    let read_ahead = labelled_ok(&after, "bookie_readahead_batch_count_sum");
    assert!(read_ahead >= 1.0);
    assert!(labelled_ok(&after, "bookie_readahead_batch_size_sum") > read_ahead * 1000.0);
    assert!(labelled(&after, "bookie_readahead_time") > 0.0);
    assert_eq!(
        sample(&after, "bookie_readahead_max_batch_size"),
        Some(100.0)
    );
    // Every add went into the write cache (none waited: the cache is large).
    assert_eq!(labelled_ok(&text, "bookie_add_entry_count"), adds);
    assert_eq!(labelled_ok(&text, "bookie_throttled_write_count"), 0.0);
    // GC is off in a standalone bookie: nothing to fail (fed in
    // gc_counts_a_segment_file_it_cannot_remove).
    assert_eq!(sample(&text, "bookie_RECLAIM_FAILED_TO_DELETE"), Some(0.0));
    assert!(labelled_ok(&text, "bookie_flush_size_sum") >= 200_000.0);
    assert!(labelled(&after, "bookie_read_cache_size") > 0.0);
    // DbLedgerStorage's own gauges: no ledgerDir/indexDir labels, as Java's.
    assert!(sample(&text, "bookie_write_cache_max_size").unwrap_or(0.0) > 0.0);
    let _ = labelled(&text, "bookie_write_cache_size");
    assert!(labelled(&text, "bookie_ACTIVE_ENTRY_LOG_TOTAL") >= 1.0);
    assert!(labelled(&text, "bookie_ACTIVE_ENTRY_LOG_SPACE_BYTES") >= 200_000.0);
    let _ = labelled(&text, "bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE");
    assert!(labelled(&text, "bookie_journal_JOURNAL_MEMORY_MAX") > 0.0);

    // Ledger directory: Java's name for the configured directory, a percentage.
    let ledgers = b.dir.path().join("ledgers").display().to_string();
    let usage_name = bookie::metrics::sanitize_name(&format!("bookie_ledger_dir_{ledgers}_usage"));
    let usage = sample(&text, &usage_name).unwrap_or_else(|| panic!("{usage_name}\n{text}"));
    assert!(usage > 0.0 && usage <= 100.0, "{usage}");
    assert_eq!(sample(&text, "bookie_ledger_writable_dirs"), Some(1.0));
    assert_eq!(sample(&text, "bookie_ledger_num_dirs"), Some(1.0));

    // The process, as the Prometheus client's standard collector names it.
    assert!(sample(&text, "process_cpu_seconds_total").unwrap() > 0.0);
    let rss = sample(&text, "process_resident_memory_bytes").unwrap();
    assert!(rss > 1e6 && rss <= sample(&text, "process_virtual_memory_bytes").unwrap());
    let fds = sample(&text, "process_open_fds").unwrap();
    assert!(fds >= 3.0 && fds <= sample(&text, "process_max_fds").unwrap());
    assert!(sample(&text, "process_start_time_seconds").unwrap() > 1.6e9);
    assert!(text.contains("bookie_rs_build_info{version=\""), "{text}");
    stop(b);
}

/// Adds pipelined faster than a 1 MiB write cache flushes: some wait for space
/// (`bookie_throttled_write`, success once inserted) and every add is timed
/// (`bookie_add_entry`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_write_cache_feeds_throttled_write() {
    const BIG_ADDS: i64 = 40;
    let mport = free_port();
    let b = start(&[
        "--metrics-port",
        &mport.to_string(),
        "--set",
        "prometheusStatsHttpAddress=127.0.0.1",
        "--set",
        "dbStorage_writeCacheMaxSizeMb=1",
    ])
    .await;
    // 200 KiB entries: a half of 512 KiB takes two, the third swaps it out to the
    // flusher (a segment write, its fdatasync and the ledger state's), and the fifth
    // waits for that flush unless it was done within two entries' receive time.
    let mut c = Client::connect(([127, 0, 0, 1], b.port).into()).await;
    for e in 0..BIG_ADDS {
        let add = bk_proto::v2::AddRequest::new(
            Flags::NONE,
            key(),
            entry(LEDGER, e, e - 1, &[3u8; 200 * 1024]),
        )
        .expect("entry");
        c.v2_send(bk_proto::v2::Request::AddEntry(add)).await;
    }
    for _ in 0..BIG_ADDS {
        match c.v2_recv().await {
            bk_proto::v2::Response::AddEntry(r) => assert_eq!(r.error, ErrorCode::Ok),
            other => panic!("{other:?}"),
        }
    }
    let text = get(mport, "/metrics").await.expect("metrics port").1;
    let throttled = labelled(&text, "bookie_throttled_write_requests");
    println!("adds that waited for space: {throttled} of {BIG_ADDS}");
    assert!(throttled >= 1.0, "no add waited for space:\n{text}");
    assert_eq!(
        labelled_ok(&text, "bookie_throttled_write_count"),
        throttled
    );
    assert!(labelled_ok(&text, "bookie_throttled_write_sum") > 0.0);
    assert_eq!(
        labelled_ok(&text, "bookie_add_entry_count"),
        BIG_ADDS as f64
    );
    assert!(labelled_ok(&text, "bookie_add_entry_sum") > 0.0);
    stop(b);
}

/// Clears the immutable attribute of a file on drop, so the test's directories can go
/// whatever happens.
struct Immutable(std::path::PathBuf);

impl Immutable {
    fn set(path: &std::path::Path) -> Immutable {
        let ok = Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "chattr +i {} (ext4, root)", path.display());
        Immutable(path.to_path_buf())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// A ledger deleted from ZooKeeper whose segment file cannot be removed (immutable):
/// GC deletes the ledger, counts the failed removal (`bookie_RECLAIM_FAILED_TO_DELETE`)
/// and keeps running; once the file can go, a later round removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_counts_a_segment_file_it_cannot_remove() {
    const TEST: &str = "gc_counts_a_segment_file_it_cannot_remove";
    let Some(zk) = ops_support::zk_server(TEST) else {
        return;
    };
    // ext4, where root can make a file immutable (chattr +i) and unlink then fails.
    let Some(mount) = loopfs::mount_or_skip(TEST, 64 << 20) else {
        return;
    };
    let observer = ops_support::observer(zk).await;
    let root = format!("/metrics-reclaim-{}", std::process::id());
    ops_support::init_cluster(&observer, &root, None).await;
    let uri = format!("zk+hierarchical://{}{root}", zk.connect);
    let mport = free_port();
    // Only the ledger directory on the small file system (the journal's preallocated
    // segments would fill it).
    let journal = tempfile::tempdir().unwrap();
    let journal_dir = journal.path().display().to_string();
    let b = start_in(
        tempfile::tempdir_in(mount.path()).unwrap(),
        &["--metadata-service-uri", &uri],
        &[
            "--journal-dirs",
            &journal_dir,
            "--advertised-address",
            "127.0.0.1",
            "--allow-loopback",
            "--metrics-port",
            &mport.to_string(),
            "--set",
            "prometheusStatsHttpAddress=127.0.0.1",
            "--set",
            "gcWaitTime=500",
            "--set",
            "flushInterval=200",
        ],
    )
    .await;
    // The ledger is open with this bookie in its ensemble: GC keeps it.
    let me = format!("127.0.0.1:{}", b.port);
    let md = bookie::admin::ledger_metadata::encode_ensembles_for_tests(
        &[(0, &[me.as_str()])],
        bookie::admin::ledger_metadata::LedgerState::Open,
        None,
    );
    let znode = bookie::gc_scan::ledger_path(&root, LEDGER as u64);
    let mut at = String::new();
    let parts: Vec<&str> = znode.trim_start_matches('/').split('/').collect();
    for (i, p) in parts.iter().enumerate() {
        at.push('/');
        at.push_str(p);
        let d: &[u8] = if i + 1 == parts.len() { &md } else { b"" };
        match observer.create(&at, d, &ops_support::open()).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
    let mut c = Client::connect(([127, 0, 0, 1], b.port).into()).await;
    for e in 0..10 {
        let r = c
            .v2_add(Flags::NONE, key(), entry(LEDGER, e, e - 1, &[5u8; 1000]))
            .await;
        assert_eq!(r.error, ErrorCode::Ok, "add {e}");
    }
    let current = b.dir.path().join("ledgers").join("current");
    let segments = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&current)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "seg"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let seg = loop {
        if let [one] = segments().as_slice() {
            break one.clone();
        }
        assert!(Instant::now() < deadline, "never flushed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let pinned = Immutable::set(&seg);
    observer
        .delete(&znode, None)
        .await
        .expect("delete metadata");
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = get(mport, "/metrics").await.expect("metrics").1;
        if sample(&text, "bookie_RECLAIM_FAILED_TO_DELETE").unwrap_or(0.0) >= 1.0 {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no failed removal counted:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(sample(&text, "bookie_DELETED_LEDGER_TOTAL").unwrap() >= 1.0);
    assert_eq!(c.v2_read(LEDGER, 0).await.error, ErrorCode::NoLedger);
    assert!(seg.exists());
    // The file can go now: a later round removes it, and the bookie kept serving.
    drop(pinned);
    let deadline = Instant::now() + Duration::from_secs(60);
    while seg.exists() {
        assert!(Instant::now() < deadline, "{} never removed", seg.display());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = c
        .v2_add(Flags::NONE, key(), entry(LEDGER + 1, 0, -1, b"still up"))
        .await;
    assert_eq!(r.error, ErrorCode::Ok);
    stop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_metrics_port_without_the_prometheus_provider() {
    let mport = free_port();
    let b = start(&[
        "--set",
        &format!("prometheusStatsHttpPort={mport}"),
        "--set",
        "prometheusStatsHttpAddress=127.0.0.1",
    ])
    .await;
    assert!(
        TcpStream::connect(("127.0.0.1", mport)).await.is_err(),
        "a metrics port opened with the default NullStatsProvider"
    );
    stop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_settings_serve_metrics_on_the_admin_port() {
    let port = free_port();
    let b = start(&[
        "--set",
        PROMETHEUS,
        "--set",
        "httpServerEnabled=true",
        "--set",
        "httpServerHost=127.0.0.1",
        "--set",
        &format!("httpServerPort={port}"),
        "--set",
        &format!("prometheusStatsHttpPort={port}"),
        "--set",
        "prometheusStatsHttpAddress=127.0.0.1",
    ])
    .await;
    let mut c = Client::connect(([127, 0, 0, 1], b.port).into()).await;
    c.v2_add(Flags::NONE, key(), entry(9, 0, -1, b"helm")).await;
    let (status, body) = get(port, "/metrics").await.expect("admin port");
    assert_eq!(status, 200);
    assert_eq!(count(&body, "bookkeeper_server_ADD_ENTRY"), 1.0, "{body}");
    assert_eq!(get(port, "/api/v1/bookie/state").await.unwrap().0, 200);
    let log = stop(b);
    assert!(
        !log.contains("Address already in use") && !log.contains("not started"),
        "a second listener tried the same port:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_client_series_count_the_bookies_calls() {
    let Some(zk) = ops_support::zk_server("zookeeper_client_series_count_the_bookies_calls") else {
        return;
    };
    let observer = ops_support::observer(zk).await;
    let root = format!("/metrics-live-{}", std::process::id());
    ops_support::init_cluster(&observer, &root, None).await;
    let uri = format!("zk+hierarchical://{}{root}", zk.connect);
    let mport = free_port();
    let b = start_with(
        &["--metadata-service-uri", &uri],
        &[
            "--advertised-address",
            "127.0.0.1",
            "--allow-loopback",
            "--metrics-port",
            &mport.to_string(),
            "--set",
            "prometheusStatsHttpAddress=127.0.0.1",
            "--set",
            "gcWaitTime=1000",
        ],
    )
    .await;
    // Registered, and one GC round has listed the ledger tree.
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = get(mport, "/metrics").await.expect("metrics").1;
        let listed = sample(
            &text,
            "bookie_bookie_zk_get_children_count{success=\"true\"}",
        );
        if sample(&text, "bookie_SERVER_STATUS") == Some(1.0) && listed.unwrap_or(0.0) >= 1.0 {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no registration or GC scan:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(count(&text, "bookie_bookie_zk_create_client"), 1.0);
    assert!(
        count(&text, "bookie_bookie_zk_create") >= 2.0,
        "cookie + registration"
    );
    assert!(count(&text, "bookie_bookie_zk_exists") >= 1.0);
    // The cookie reads at start-up find no node: failures, as Java counts them.
    let failed = |op: &str| sample(&text, &format!("{op}_count{{success=\"false\"}}")).unwrap();
    assert!(failed("bookie_bookie_zk_get_data") >= 1.0, "{text}");
    assert!(sample(&text, "bookie_bookie_watcher_state_SyncConnected").unwrap() >= 1.0);
    for absent in [
        "bookie_bookie_zk_get_acl",
        "bookie_bookie_zk_multi",
        "bookie_bookie_zk_sync",
    ] {
        assert_eq!(count(&text, absent), 0.0, "{absent}: never called");
    }
    stop(b);
}

/// `<op>_count` of both outcomes: (success, failure).
fn counts(text: &str, op: &str) -> (f64, f64) {
    let of = |success: &str| {
        sample(text, &format!("{op}_count{{success=\"{success}\"}}"))
            .unwrap_or_else(|| panic!("{op}_count missing in\n{text}"))
    };
    (of("true"), of("false"))
}

const FENCE_WAIT: &str = "bookkeeper_server_READ_ENTRY_FENCE_WAIT";
const PRE_WAIT: &str = "bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT";
const POLL_WAIT: &str = "bookkeeper_server_READ_ENTRY_LONG_POLL_WAIT";

/// The three waits inside read requests (docs/metrics.md §2), as Java's v3 read processors
/// record them: each stays 0 until the request that has that wait, and each request adds
/// to its own wait only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fence_and_long_poll_waits_count_their_requests() {
    const L: i64 = 21;
    let mport = free_port();
    let b = start(&[
        "--metrics-port",
        &mport.to_string(),
        "--set",
        "prometheusStatsHttpAddress=127.0.0.1",
    ])
    .await;
    let scrape = || async { get(mport, "/metrics").await.expect("metrics port").1 };
    let waits = |text: &str| [FENCE_WAIT, PRE_WAIT, POLL_WAIT].map(|op| counts(text, op));
    let mut c = Client::connect(([127, 0, 0, 1], b.port).into()).await;
    // LAC 0 after entry 1.
    for (e, lac) in [(0, -1), (1, 0)] {
        let r = c.v3_add(key(), entry(L, e, lac, b"w"), false).await;
        assert_eq!(v3_status(&r), v3::StatusCode::Eok);
    }
    assert_eq!(
        waits(&scrape().await),
        [(0.0, 0.0); 3],
        "nothing waited yet"
    );
    let poll = |previous_lac, time_out| {
        RequestBody::ReadEntry(v3::ReadRequest {
            ledger_id: L,
            entry_id: -1,
            previous_lac: Some(previous_lac),
            time_out: Some(time_out),
            flag: Some(v3::read_request::Flag::EntryPiggyback as i32),
            ..Default::default()
        })
    };

    // A long poll the LAC already satisfies: a pre-wait, no wait.
    let r = c.v3_call(None, poll(-1, 10_000)).await;
    assert_eq!(v3_status(&r), v3::StatusCode::Eok);
    assert_eq!(
        waits(&scrape().await),
        [(0.0, 0.0), (1.0, 0.0), (0.0, 0.0)],
        "a satisfied long poll"
    );

    // A long poll that parks until its timeout: a failed wait.
    let r = c.v3_call(None, poll(0, 200)).await;
    assert_eq!(v3_status(&r), v3::StatusCode::Eok);
    assert_eq!(
        waits(&scrape().await),
        [(0.0, 0.0), (2.0, 0.0), (0.0, 1.0)],
        "a long poll that timed out"
    );

    // A long poll woken by an add that raises the LAC: a successful wait. The pre-wait
    // is recorded once the poll is subscribed to the LAC, so the add comes after it.
    let mut poller = Client::connect(([127, 0, 0, 1], b.port).into()).await;
    poller.v3_send(None, poll(0, 60_000)).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while counts(&scrape().await, PRE_WAIT).0 < 3.0 {
        assert!(Instant::now() < deadline, "the long poll never parked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        counts(&scrape().await, POLL_WAIT),
        (0.0, 1.0),
        "still parked"
    );
    let r = c.v3_add(key(), entry(L, 2, 1, b"w"), false).await;
    assert_eq!(v3_status(&r), v3::StatusCode::Eok);
    let r = poller.v3_recv().await;
    assert_eq!(v3_status(&r), v3::StatusCode::Eok);
    assert_eq!(r.read_response.unwrap().max_lac, Some(1));
    assert_eq!(
        waits(&scrape().await),
        [(0.0, 0.0), (3.0, 0.0), (1.0, 1.0)],
        "a long poll woken by the LAC"
    );

    // Fencing reads: of an empty ledger, answered no-entry before any wait (as Java);
    // of this ledger, the answer waits for the fence record to be durable.
    let fence = |ledger| {
        RequestBody::ReadEntry(v3::ReadRequest {
            flag: Some(v3::read_request::Flag::FenceLedger as i32),
            ledger_id: ledger,
            entry_id: -1,
            master_key: Some(Bytes::copy_from_slice(&key().0)),
            ..Default::default()
        })
    };
    let r = c.v3_call(None, fence(L + 1)).await;
    assert_eq!(v3_status(&r), v3::StatusCode::Enoentry);
    assert_eq!(
        counts(&scrape().await, FENCE_WAIT),
        (0.0, 0.0),
        "empty ledger"
    );
    let r = c.v3_call(None, fence(L)).await;
    assert_eq!(v3_status(&r), v3::StatusCode::Eok);
    assert_eq!(
        waits(&scrape().await),
        [(1.0, 0.0), (3.0, 0.0), (1.0, 1.0)],
        "a fencing read"
    );
    stop(b);
}

/// `prometheusStatsLatencyRolloverSeconds` is read: a value Java's provider cannot schedule
/// (a period of 0 s) refuses start-up naming the key; a valid one starts and is not named
/// as having no effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_latency_rollover_key_is_read_and_validated() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bookie"))
        .args(host_disk::ARGS)
        .arg("--standalone")
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--port", &free_port().to_string()])
        .args(["--set", PROMETHEUS])
        .args(["--set", "prometheusStatsHttpEnable=false"])
        .args(["--set", "prometheusStatsLatencyRolloverSeconds=0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bookie");
    // A configuration error exits at once; one still running after 30 s took the value.
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(
        status.is_some_and(|s| !s.success()),
        "started with a 0 s window ({status:?}):\n{err}"
    );
    assert!(
        err.contains("prometheusStatsLatencyRolloverSeconds"),
        "{err}"
    );

    let mport = free_port();
    let b = start(&[
        "--metrics-port",
        &mport.to_string(),
        "--set",
        "prometheusStatsHttpAddress=127.0.0.1",
        "--set",
        "prometheusStatsLatencyRolloverSeconds=5",
    ])
    .await;
    assert_eq!(get(mport, "/metrics").await.expect("metrics port").0, 200);
    let log = stop(b);
    assert!(
        !log.contains("prometheusStatsLatencyRolloverSeconds has no effect"),
        "{log}"
    );
}

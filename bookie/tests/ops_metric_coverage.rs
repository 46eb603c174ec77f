//! Every metric name the dashboards and alerts an operator uses depend on is exported by the
//! real `bookie` binary under load, and non-zero wherever the stock Java 4.17 bookie's is
//! non-zero under the same load (docs/monitoring.md §3). The four name lists: our Grafana
//! dashboard (deploy/grafana/bookie-rs.json) and alert rules
//! (deploy/prometheus/bookie-rs-alerts.yml), read here; apache/pulsar's and StreamNative's
//! BookKeeper dashboards, committed as name lists under deploy/metric-names/ (made by
//! scripts/metric-names.py). Java's values: deploy/metric-names/java-nonzero-under-load.txt,
//! recorded by `record_java_nonzero_under_load` below against a stock bookie
//! (scripts/java-metrics-under-load.sh runs one and this test).
//!
//! The load: adds and reads of 100 entries (1 KiB) on each of four ledgers, two over the v2
//! protocol and two over v3, then a trickle of adds and reads (v2 and v3) while /metrics is
//! scraped, so that the quantile windows (rolled over every 60 s, or every
//! `prometheusStatsLatencyRolloverSeconds`) hold samples; `flushInterval=1000` on both bookies,
//! so flushes and reads from flushed data happen within the run. A name counts as non-zero when
//! any of its samples is neither 0 nor NaN.
//!
//! Needs ZooKeeper (the bookie registers, as in production); skips, printing SKIPPED, only
//! when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;
mod metric_names;
mod ops_support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use bk_proto::v3::StatusCode;
use common::{entry, key, v3_status, Client};
use metric_names::*;
use ops_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Names that have no meaning for a bookie, with the reason. Each `bookie*` one must also be
/// absent from the stock Java bookie (checked), so an exception never hides a stock series.
const NOT_A_BOOKIE_SERIES: &[(&str, &str)] = &[
    (
        "up",
        "made by Prometheus for every scrape target, not exported",
    ),
    (
        "node_filesystem_avail_bytes",
        "node_exporter's (journal file system usage: no stock journal-dir gauge exists)",
    ),
    (
        "node_filesystem_size_bytes",
        "node_exporter's (journal file system usage: no stock journal-dir gauge exists)",
    ),
    (
        "kubelet_volume_stats_available_bytes",
        "the kubelet's (StreamNative's PVC usage panels)",
    ),
    (
        "kubelet_volume_stats_capacity_bytes",
        "the kubelet's (StreamNative's PVC usage panels)",
    ),
    (
        "pulsar_version_info",
        "the Pulsar broker's (StreamNative's cluster variable)",
    ),
    (
        "bookie_storage_ledgers_count",
        "pre-4.x scope, absent from stock 4.17 too: 4.17 exports bookie_ledgers_count (checked via StreamNative's list)",
    ),
    (
        "bookie_storage_entries_count",
        "pre-4.x scope, absent from stock 4.17 too: 4.17 exports bookie_entries_count",
    ),
    (
        "bookie_storage_write_cache_size",
        "pre-4.x scope, absent from stock 4.17 too: 4.17 exports bookie_write_cache_size",
    ),
    (
        "bookie_storage_read_cache_size",
        "pre-4.x scope, absent from stock 4.17 too: 4.17 exports bookie_read_cache_size",
    ),
    (
        "bookie_MINOR_COMPACTION_COUNT",
        "StreamNative's misspelling, absent from stock 4.17 too: 4.17 exports bookie_MINOR_COMPACTION_TOTAL",
    ),
    (
        "bookie_journal_JOURNAL_CB_QUEUE_SIZE",
        "absent from stock 4.17 (the journal callback queue is gone since 4.15)",
    ),
];

/// A path-specific stock name (`bookie_ledger_dir_<path>_usage`, one gauge per ledger
/// directory) stands for the pattern: the gauge of each configured ledger directory.
const LEDGER_DIR_USAGE: (&str, &str) = ("bookie_ledger_dir_", "_usage");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// The four lists, each with its names and `__name__` patterns.
fn lists() -> Vec<(&'static str, Used)> {
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/bookie-rs.json")).expect("dashboard is JSON");
    let mut ours_dashboard = Used::default();
    for e in dashboard_exprs(&dashboard) {
        ours_dashboard.extend(promql_names(&e));
    }
    let mut ours_alerts = Used::default();
    for (_, e) in alert_exprs(&read("deploy/prometheus/bookie-rs-alerts.yml")) {
        ours_alerts.extend(promql_names(&e));
    }
    let committed = |rel: &str| {
        let mut u = Used::default();
        for n in read_list(&read(rel)) {
            if n.starts_with(LEDGER_DIR_USAGE.0) && n.ends_with(LEDGER_DIR_USAGE.1) {
                u.patterns
                    .insert((LEDGER_DIR_USAGE.0.into(), LEDGER_DIR_USAGE.1.into()));
            } else {
                u.names.insert(n);
            }
        }
        u
    };
    vec![
        ("our dashboard", ours_dashboard),
        ("our alerts", ours_alerts),
        (
            "apache/pulsar dashboard",
            committed("deploy/metric-names/pulsar-bookkeeper-dashboard.txt"),
        ),
        (
            "StreamNative dashboard",
            committed("deploy/metric-names/streamnative-bookkeeper-dashboard.txt"),
        ),
    ]
}

fn pattern_key((p, s): &(String, String)) -> String {
    format!("{p}<dir>{s}")
}

/// Java's recorded value per name (`nonzero`, `zero` or `absent`).
fn java_values() -> BTreeMap<String, String> {
    read("deploy/metric-names/java-nonzero-under-load.txt")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (n, v) = l.split_once(' ').unwrap_or_else(|| panic!("line {l:?}"));
            assert!(["nonzero", "zero", "absent"].contains(&v.trim()), "{l}");
            (n.to_string(), v.trim().to_string())
        })
        .collect()
}

async fn scrape(metrics: SocketAddr) -> Option<String> {
    let mut s = tokio::net::TcpStream::connect(metrics).await.ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: bookie\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut buf))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.contains(" 200 ").then(|| body.to_string())
}

const PAYLOAD: [u8; 1024] = [0x5a; 1024];

/// The main load: 4 ledgers x 100 entries, written then read back, ledgers `base+0/1` over
/// v2 and `base+2/3` over v3.
async fn main_load(bookie: SocketAddr, base: i64) {
    let mut v2 = Client::connect(bookie).await;
    let mut v3 = Client::connect(bookie).await;
    for e in 0..100 {
        for l in [base, base + 1] {
            let r = v2
                .v2_add(Flags::NONE, key(), entry(l, e, e - 1, &PAYLOAD))
                .await;
            assert_eq!(r.error, ErrorCode::Ok, "v2 add {l}/{e}");
        }
        for l in [base + 2, base + 3] {
            let r = v3.v3_add(key(), entry(l, e, e - 1, &PAYLOAD), false).await;
            assert_eq!(v3_status(&r), StatusCode::Eok, "v3 add {l}/{e}");
        }
    }
    for e in 0..100 {
        for l in [base, base + 1] {
            assert_eq!(v2.v2_read(l, e).await.error, ErrorCode::Ok, "v2 read");
        }
        for l in [base + 2, base + 3] {
            assert_eq!(
                v3_status(&v3.v3_read(l, e).await),
                StatusCode::Eok,
                "v3 read"
            );
        }
    }
}

/// A little more load on ledger `ledger` (v2) and `ledger + 1` (v3) from entry `from`.
async fn trickle(bookie: SocketAddr, ledger: i64, from: i64, n: i64) {
    let mut v2 = Client::connect(bookie).await;
    let mut v3 = Client::connect(bookie).await;
    for e in from..from + n {
        let r = v2
            .v2_add(Flags::NONE, key(), entry(ledger, e, e - 1, &PAYLOAD))
            .await;
        assert_eq!(r.error, ErrorCode::Ok);
        let r = v3
            .v3_add(key(), entry(ledger + 1, e, e - 1, &PAYLOAD), false)
            .await;
        assert_eq!(v3_status(&r), StatusCode::Eok);
        assert_eq!(v2.v2_read(ledger, e).await.error, ErrorCode::Ok);
        assert_eq!(v3_status(&v3.v3_read(ledger + 1, e).await), StatusCode::Eok);
    }
}

/// Reads entries `from..from + n` of ledger `ledger` (written by [`main_load`]) again over v2.
async fn reread(bookie: SocketAddr, ledger: i64, from: i64, n: i64) {
    let mut v2 = Client::connect(bookie).await;
    for e in from..from + n {
        assert_eq!(
            v2.v2_read(ledger, e).await.error,
            ErrorCode::Ok,
            "v2 re-read"
        );
    }
}

/// Applies the load, then keeps a trickle going and scrapes every second until `done` says
/// the union of the scrapes so far is enough, or `limit` passes. Returns the union.
async fn load_and_scrape(
    bookie: SocketAddr,
    metrics: SocketAddr,
    limit: Duration,
    mut done: impl FnMut(&BTreeMap<String, bool>) -> bool,
) -> BTreeMap<String, bool> {
    main_load(bookie, 7_000).await;
    let start = Instant::now();
    let mut union: BTreeMap<String, bool> = BTreeMap::new();
    let mut next = 0;
    loop {
        trickle(bookie, 7_100, next, 10).await;
        // Reads of the main load's entries too: once a flush (flushInterval) has moved them
        // out of the write cache they go through the read cache, whose series would stay 0 if
        // every read found its entry still in the write cache.
        reread(bookie, 7_000, next % 100, 10).await;
        next += 10;
        if let Some(text) = scrape(metrics).await {
            for (n, nz) in samples(&text) {
                *union.entry(n).or_default() |= nz;
            }
        }
        if done(&union) || start.elapsed() > limit {
            return union;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

mod host_disk;
mod ports;
use ports::free_port;

struct Bookie(Child);

impl Drop for Bookie {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What is missing from one list: names not exported, names zero where Java's is non-zero.
#[derive(Default)]
struct Gaps {
    total: usize,
    missing: Vec<String>,
    zero: Vec<String>,
}

/// The shipped files parse, the alert rules have the structure Prometheus needs (and pass
/// `promtool check rules` where promtool is installed), the committed lists name their
/// source, every listed name has a recorded Java value, and every exception is used and is
/// not a stock series.
#[test]
fn shipped_dashboard_alerts_and_lists_are_consistent() {
    let lists = lists();
    for (list, used) in &lists {
        assert!(
            used.names.len() + used.patterns.len() >= 10,
            "{list}: too few names"
        );
    }
    for rel in [
        "deploy/metric-names/pulsar-bookkeeper-dashboard.txt",
        "deploy/metric-names/streamnative-bookkeeper-dashboard.txt",
    ] {
        let head = read(rel);
        assert!(
            head.lines()
                .any(|l| l.starts_with("# source: github.com/") && l.contains("commit ")),
            "{rel}: no source line"
        );
    }
    let java = java_values();
    let all: BTreeSet<&String> = lists.iter().flat_map(|(_, u)| &u.names).collect();
    for (name, reason) in NOT_A_BOOKIE_SERIES {
        assert!(!reason.is_empty());
        assert!(
            all.contains(&name.to_string()),
            "exception {name} is used by no list"
        );
        if name.starts_with("bookie") {
            assert_eq!(
                java.get(*name).map(String::as_str),
                Some("absent"),
                "{name} is excepted as not a stock series, so Java must not export it"
            );
        }
    }
    for (list, used) in &lists {
        for n in &used.names {
            assert!(
                java.contains_key(n),
                "{n} ({list}) has no Java value recorded: rerun record_java_nonzero_under_load"
            );
        }
        for p in &used.patterns {
            assert!(java.contains_key(&pattern_key(p)), "{p:?} ({list})");
        }
    }
    let rules = repo().join("deploy/prometheus/bookie-rs-alerts.yml");
    match Command::new("promtool")
        .arg("check")
        .arg("rules")
        .arg(&rules)
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "promtool check rules: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("promtool is not installed: the alert rules got the structural check only")
        }
        Err(e) => panic!("promtool: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboards_and_alerts_names_are_exported_under_load() {
    let lists = lists();
    let java = java_values();
    let excepted: BTreeMap<&str, &str> = NOT_A_BOOKIE_SERIES.iter().copied().collect();
    let Some(server) = zk_server("dashboards_and_alerts_names_are_exported_under_load") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/coverage/ledgers";
    init_cluster(&obs, root, Some("coverage-instance")).await;
    let tmp = tempfile::tempdir().unwrap();
    let (port, metrics_port) = (free_port(), free_port());
    let conf = tmp.path().join("bk_server.conf");
    std::fs::write(
        &conf,
        format!(
            "bookiePort={port}\nadvertisedAddress=127.0.0.1\nallowLoopback=true\n\
             journalDirectories={}\nledgerDirectories={}\n\
             metadataServiceUri=zk+hierarchical://{}{root}\nzkTimeout=10000\n\
             statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider\n\
             prometheusStatsHttpAddress=127.0.0.1\nprometheusStatsHttpPort={metrics_port}\n\
             prometheusStatsLatencyRolloverSeconds=1\ngcWaitTime=600000\nflushInterval=1000\n",
            tmp.path().join("journal").display(),
            tmp.path().join("ledgers").display(),
            server.connect,
        ),
    )
    .unwrap();
    let mut child = Bookie(
        Command::new(env!("CARGO_BIN_EXE_bookie"))
            .args(host_disk::ARGS)
            .arg("--conf")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bookie"),
    );
    let node = format!("{root}/available/127.0.0.1:{port}");
    let start = Instant::now();
    while obs.get_data(&node).await.is_err() {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("bookie exited early: {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "bookie never registered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let bookie = SocketAddr::from(([127, 0, 0, 1], port));
    let metrics = SocketAddr::from(([127, 0, 0, 1], metrics_port));

    // Everything Java had non-zero, over every list (patterns by their stand-in key).
    let want_nonzero: BTreeSet<String> = lists
        .iter()
        .flat_map(|(_, u)| u.names.iter().cloned())
        .filter(|n| java.get(n).map(String::as_str) == Some("nonzero"))
        .collect();
    // Quantile windows roll over every 60 s at most: 90 s is a generous bound.
    let exported = load_and_scrape(bookie, metrics, Duration::from_secs(90), |u| {
        want_nonzero.iter().all(|n| u.get(n) == Some(&true))
    })
    .await;

    let mut report = String::new();
    let mut failed = false;
    for (list, used) in &lists {
        let mut g = Gaps::default();
        for n in &used.names {
            if excepted.contains_key(n.as_str()) {
                continue;
            }
            g.total += 1;
            match exported.get(n) {
                None => g.missing.push(n.clone()),
                Some(false) if java.get(n).map(String::as_str) == Some("nonzero") => {
                    g.zero.push(n.clone())
                }
                Some(_) => {}
            }
        }
        for p in &used.patterns {
            g.total += 1;
            let m = matching(&exported, p);
            if m.is_empty() {
                g.missing.push(pattern_key(p));
            } else if java[&pattern_key(p)] == "nonzero" && !m.iter().any(|n| exported[*n]) {
                g.zero.push(pattern_key(p));
            }
        }
        failed |= !g.missing.is_empty() || !g.zero.is_empty();
        report.push_str(&format!(
            "{list}: {} names (after exceptions), {} exported; {} zero where Java's is non-zero\n  \
             not exported: {}\n  zero: {}\n",
            g.total,
            g.total - g.missing.len(),
            g.zero.len(),
            g.missing.join(" "),
            g.zero.join(" "),
        ));
    }
    println!("{report}");
    assert!(!failed, "metric coverage gaps:\n{report}");
}

/// Records deploy/metric-names/java-nonzero-under-load.txt against a stock Java bookie that
/// is already running (deploy/README.md says how): BK_JAVA_BOOKIE=host:port,
/// BK_JAVA_METRICS=host:port (its Prometheus listener), BK_JAVA_OUT=file to write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a running stock Java bookie (BK_JAVA_BOOKIE, BK_JAVA_METRICS)"]
async fn record_java_nonzero_under_load() {
    let addr = |v: &str| -> SocketAddr {
        std::env::var(v)
            .unwrap_or_else(|_| panic!("set {v}"))
            .parse()
            .unwrap()
    };
    let (bookie, metrics) = (addr("BK_JAVA_BOOKIE"), addr("BK_JAVA_METRICS"));
    let out = std::env::var("BK_JAVA_OUT").expect("set BK_JAVA_OUT");
    // Java's windows roll over every prometheusStatsLatencyRolloverSeconds (set it to 1):
    // five scrapes under the trickle.
    let mut scrapes = 0;
    let exported = load_and_scrape(bookie, metrics, Duration::from_secs(120), |_| {
        scrapes += 1;
        scrapes >= 5
    })
    .await;
    let value = |nonzero: Option<bool>| match nonzero {
        None => "absent",
        Some(true) => "nonzero",
        Some(false) => "zero",
    };
    let mut values: BTreeMap<String, &str> = BTreeMap::new();
    for (_, used) in lists() {
        for n in used.names {
            let v = value(exported.get(&n).copied());
            values.insert(n, v);
        }
        for p in &used.patterns {
            // Stand-in key: non-zero if any matching gauge is.
            let m = matching(&exported, p);
            let v = value((!m.is_empty()).then(|| m.iter().any(|n| exported[*n])));
            values.insert(pattern_key(p), v);
        }
    }
    let mut text = String::from(
        "# Per metric name of the four lists (bookie/tests/ops_metric_coverage.rs): the stock Java bookie's\n\
         # value under that test's load: nonzero (some sample neither 0 nor NaN), zero, or absent (not exported).\n\
         # Measured by record_java_nonzero_under_load against org.apache.bookkeeper.server.Main 4.17.3\n\
         # (DbLedgerStorage, PrometheusMetricsProvider, prometheusStatsLatencyRolloverSeconds=1, flushInterval=1000), by\n\
         # scripts/java-metrics-under-load.sh. `bookie_ledger_dir_<dir>_usage` stands for each ledger dir's gauge.\n",
    );
    for (n, v) in values {
        text.push_str(&format!("{n} {v}\n"));
    }
    std::fs::write(&out, &text).unwrap();
    print!("{text}");
}

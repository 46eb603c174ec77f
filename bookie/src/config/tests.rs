//! Unit tests of `config` (kept beside it, out of its source file).

use super::*;
use clap::Parser;

fn load(text: &str, argv: &[&str]) -> Result<(BookieConfig, LoadReport), ConfigError> {
    let mut full = vec!["bookie"];
    full.extend_from_slice(argv);
    let args = BookieArgs::try_parse_from(full).unwrap();
    BookieConfig::from_text_and_args(Some(text), Some(Path::new("/etc/bk_server.conf")), &args)
}

fn err_text(text: &str, argv: &[&str]) -> String {
    load(text, argv).unwrap_err().to_string()
}

const ZK: &str = "metadataServiceUri=zk+hierarchical://localhost:2181/ledgers\n";

#[test]
fn defaults_match_stock_code_defaults() {
    let (c, report) = load(ZK, &[]).unwrap();
    assert!(report.unknown_keys.is_empty() && report.ignored_keys.is_empty());
    assert_eq!(c.bookie_port, 3181);
    assert_eq!(c.journal_dirs, vec![PathBuf::from("/tmp/bk-txn")]);
    assert_eq!(c.ledger_dirs, vec![PathBuf::from("/tmp/bk-data")]);
    assert_eq!(c.index_dirs, None);
    // Deliberately Pulsar's shipped 5,253,120, not Java's 5,242,880 (sections.rs).
    assert_eq!(c.netty_max_frame_size_bytes, 5_253_120);
    assert!(report.adjusted.is_empty(), "{report:?}");
    assert_eq!(c.zk_timeout, Duration::from_millis(10_000));
    assert_eq!(c.journal_format_version_to_write, 6);
    assert_eq!(c.journal_max_group_wait, None, "greedy unless set");
    assert_eq!(c.journal_max_size_bytes, None);
    assert_eq!(c.journal_max_backups, None);
    assert_eq!(c.journal_buffered_writes_threshold_bytes, 524_288);
    assert_eq!(c.journal_alignment_size_bytes, 512);
    assert_eq!(c.journal_pre_alloc_size_bytes, 16 << 20);
    assert!(c.journal_sync_data && c.journal_write_data);
    assert_eq!(c.gc_wait_time, Duration::from_millis(600_000));
    assert_eq!(c.minor_compaction_threshold, 0.2);
    assert_eq!(c.major_compaction_threshold, 0.8);
    assert_eq!(c.disk_usage_threshold, 0.95);
    assert_eq!(c.disk_usage_warn_threshold, 0.90);
    assert_eq!(c.disk_usage_lwm_threshold, 0.95);
    assert_eq!(c.disk_check_interval, Duration::from_millis(10_000));
    assert_eq!(c.flush_interval, Duration::from_millis(10_000));
    assert_eq!(c.entry_log_size_limit_bytes, 1 << 30);
    assert_eq!(c.min_usable_size_for_entry_log_creation_bytes, 1 << 30);
    assert_eq!(c.min_usable_size_for_high_priority_writes_bytes, 1 << 30);
    assert!(c.read_only_mode_enabled && !c.force_read_only_bookie);
    assert_eq!(c.max_adds_in_progress_limit, None);
    assert_eq!(c.max_pending_add_requests_per_thread, 10_000);
    assert_eq!(c.prometheus_stats_http_port, 8000);
    assert_eq!(c.prometheus_stats_http_address, "0.0.0.0");
    assert_eq!(c.prometheus_stats_latency_rollover, Duration::from_secs(60));
    assert!(c.enable_statistics && !c.http_server_enabled);
    assert!(
        !c.metrics_enabled,
        "NullStatsProvider by default: no metrics listener"
    );
    assert_eq!(c.write_cache_max_size_bytes, default_cache_bytes());
    let md = c.metadata_service.unwrap();
    assert_eq!(md.zk_connect, "localhost:2181");
    assert_eq!(md.ledgers_root, "/ledgers");
    let s = BookieConfig::defaults_standalone();
    assert!(s.standalone && s.metadata_service.is_none());
}

#[test]
fn stock_pulsar_style_file() {
    let text = "\
# Pulsar conf/bookkeeper.conf excerpt
bookiePort=3181
advertisedAddress=
zkServers=zk1:2181,zk2:2181
zkTimeout=30000
journalDirectory=data/bookkeeper/journal
ledgerDirectories=data/bookkeeper/ledgers
journalFormatVersionToWrite=5
journalMaxGroupWaitMSec=1
journalAlignmentSize=4096
dbStorage_writeCacheMaxSizeMb=
dbStorage_readAheadCacheBatchSize=1000
flushInterval=60000
flushEntrylogBytes=33554432
gcWaitTime=900000
majorCompactionThreshold=0.5
nettyMaxFrameSizeBytes=5253120
ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage
statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider
numHighPriorityWorkerThreads=8
someTypoKey=1
";
    let (c, report) = load(text, &[]).unwrap();
    assert!(c.metrics_enabled, "the Prometheus provider exports metrics");
    assert_eq!(c.advertised_address, None, "empty value means unset");
    assert_eq!(
        c.journal_dirs,
        vec![PathBuf::from("data/bookkeeper/journal")]
    );
    assert_eq!(c.journal_format_version_to_write, 5);
    assert_eq!(c.journal_alignment_size_bytes, 4096);
    assert_eq!(c.read_ahead_cache_batch_size, 1000);
    assert_eq!(c.flush_interval, Duration::from_secs(60));
    assert_eq!(c.flush_entrylog_bytes, Some(33_554_432));
    assert_eq!(c.gc_wait_time, Duration::from_secs(900));
    assert_eq!(c.netty_max_frame_size_bytes, 5_253_120);
    assert_eq!(c.zk_timeout, Duration::from_secs(30));
    assert_eq!(
        c.metadata_service.as_ref().unwrap().zk_connect,
        "zk1:2181,zk2:2181"
    );
    assert_eq!(report.unknown_keys, vec!["someTypoKey".to_string()]);
    assert_eq!(
        report.ignored_keys,
        [
            "flushEntrylogBytes",
            "journalAlignmentSize",
            "ledgerStorageClass",
            "numHighPriorityWorkerThreads"
        ],
        "keys read (validated) but without effect are named too"
    );
}

#[test]
fn invalid_values_name_the_key_and_value() {
    let e = err_text(&format!("{ZK}bookiePort=31x81\n"), &[]);
    assert!(
        e.contains("bookiePort") && e.contains("31x81") && e.contains("line 2"),
        "{e}"
    );
    let e = err_text(&format!("{ZK}diskUsageThreshold=1.5\n"), &[]);
    assert!(e.contains("diskUsageThreshold") && e.contains("1.5"), "{e}");
    let e = err_text(&format!("{ZK}journalSyncData=maybe\n"), &[]);
    assert!(e.contains("journalSyncData") && e.contains("maybe"), "{e}");
    let e = err_text(&format!("{ZK}journalAlignmentSize=1000\n"), &[]);
    assert!(e.contains("journalAlignmentSize"), "{e}");
    let e = err_text(&format!("{ZK}diskUsageWarnThreshold=0.97\n"), &[]);
    assert!(e.contains("diskUsageWarnThreshold"), "{e}");
    let e = err_text(&format!("{ZK}bookiePort=70000\n"), &[]);
    assert!(e.contains("bookiePort") && e.contains("70000"), "{e}");
    let e = err_text(&format!("{ZK}logSizeLimit=4294967296\n"), &[]);
    assert!(e.contains("logSizeLimit"), "{e}");
    let e = err_text(&format!("{ZK}minorCompactionThreshold=0.9\n"), &[]);
    assert!(e.contains("minorCompactionThreshold"), "{e}");
    let e = err_text("metadataServiceUri=etcd://x:1/ledgers\n", &[]);
    assert!(
        e.contains("metadataServiceUri") && e.contains("etcd://x:1/ledgers"),
        "{e}"
    );
    let e = err_text(&format!("{ZK}bookiePort=0\n"), &[]);
    assert!(e.contains("allowEphemeralPorts"), "{e}");
    let e = err_text(
        &format!("{ZK}tlsProviderFactoryClass=com.example.MyTls\n"),
        &[],
    );
    assert!(
        e.contains("tlsProviderFactoryClass") && e.contains("com.example.MyTls"),
        "{e}"
    );
    let e = err_text("", &[]);
    assert!(
        e.contains("metadataServiceUri") && e.contains("--standalone"),
        "{e}"
    );
    let e = err_text(&format!("{ZK}ledgerDirectories=/a,/a\n"), &[]);
    assert!(
        e.contains("ledgerDirectories") && e.contains("twice"),
        "{e}"
    );
}

#[test]
fn flags_override_file_values_and_name_the_flag_on_error() {
    let text = format!("{ZK}bookiePort=3181\njournalDirectories=/j1\nledgerDirectories=/l1\nprometheusStatsHttpPort=8000\n");
    let (c, _) = load(
        &text,
        &[
            "--port",
            "4181",
            "-j",
            "/j2,/j3",
            "--ledger-dirs",
            "/l2",
            "--metrics-port",
            "9100",
            "--set",
            "gcWaitTime=5000",
        ],
    )
    .unwrap();
    assert_eq!(c.bookie_port, 4181);
    assert_eq!(
        c.journal_dirs,
        vec![PathBuf::from("/j2"), PathBuf::from("/j3")]
    );
    assert_eq!(c.ledger_dirs, vec![PathBuf::from("/l2")]);
    assert_eq!(c.prometheus_stats_http_port, 9100);
    assert_eq!(c.gc_wait_time, Duration::from_secs(5));
    let e = err_text(&text, &["--port", "abc"]);
    assert!(
        e.contains("bookiePort") && e.contains("abc") && e.contains("--port"),
        "{e}"
    );
    let e = err_text(&text, &["--set", "novalue"]);
    assert!(e.contains("novalue"), "{e}");
}

#[test]
fn zk_servers_flag_beats_uri_in_file() {
    let (c, _) = load(ZK, &["--zk-servers", "zkA:2281", "-m", "/bk/ledgers"]).unwrap();
    let md = c.metadata_service.unwrap();
    assert_eq!(md.zk_connect, "zkA:2281");
    assert_eq!(md.ledgers_root, "/bk/ledgers");
    let (c, _) = load(ZK, &["--metadata-service-uri", "zk+hierarchical://h:1/x"]).unwrap();
    assert_eq!(c.metadata_service.unwrap().ledgers_root, "/x");
}

#[test]
fn standalone_and_data_dir() {
    let (c, _) = load("", &["--standalone", "--data-dir", "/data/bk"]).unwrap();
    assert!(c.standalone && c.metadata_service.is_none());
    assert_eq!(c.journal_dirs, vec![PathBuf::from("/data/bk/journal")]);
    assert_eq!(c.ledger_dirs, vec![PathBuf::from("/data/bk/ledgers")]);
    let (c, _) = load(
        "",
        &[
            "--standalone",
            "--data-dir",
            "/d",
            "--journal-dirs",
            "/fast/j",
        ],
    )
    .unwrap();
    assert_eq!(c.journal_dirs, vec![PathBuf::from("/fast/j")]);
    assert_eq!(c.ledger_dirs, vec![PathBuf::from("/d/ledgers")]);
}

#[test]
fn journal_directory_fallback_and_index_dirs() {
    let (c, r) = load(
        &format!("{ZK}journalDirectory=/old\njournalDirectories=/new1,/new2\n"),
        &[],
    )
    .unwrap();
    assert_eq!(
        c.journal_dirs,
        vec![PathBuf::from("/new1"), PathBuf::from("/new2")]
    );
    assert!(
        r.unknown_keys.is_empty(),
        "journalDirectory is known: {r:?}"
    );
    let (c, _) = load(
        &format!("{ZK}journalDirectory=/old\nledgerDirectories=/l\nindexDirectories=/i\n"),
        &[],
    )
    .unwrap();
    assert_eq!(c.journal_dirs, vec![PathBuf::from("/old")]);
    assert_eq!(c.effective_index_dirs(), &[PathBuf::from("/i")]);
    assert_eq!(
        c.all_cookie_dirs(),
        vec![
            PathBuf::from("/old"),
            PathBuf::from("/l"),
            PathBuf::from("/i")
        ]
    );
}

#[test]
fn sentinels_become_options_and_units_convert() {
    let text = format!(
        "{ZK}maxAddsInProgressLimit=100\njournalBufferedEntriesThreshold=0\njournalMaxGroupedEntriesToCommit=50\n\
         dbStorage_writeCacheMaxSizeMb=64\ndbStorage_readAheadCacheBatchBytesSize=-1\nminorCompactionMaxTimeMillis=-1\n\
         majorCompactionMaxTimeMillis=2000\njournalMaxSizeMB=1\njournalWriteBufferSizeKB=8\nuseHostNameAsBookieID=yes\n"
    );
    let (c, r) = load(&text, &[]).unwrap();
    assert!(r.unknown_keys.is_empty(), "{r:?}");
    assert_eq!(r.ignored_keys, ["journalWriteBufferSizeKB"], "{r:?}");
    assert_eq!(c.max_adds_in_progress_limit, Some(100));
    assert_eq!(c.journal_buffered_entries_threshold, Some(50));
    assert_eq!(c.write_cache_max_size_bytes, 64 << 20);
    assert_eq!(c.read_ahead_cache_batch_bytes, None);
    assert_eq!(c.minor_compaction_max_time, None);
    assert_eq!(c.major_compaction_max_time, Some(Duration::from_secs(2)));
    assert_eq!(c.journal_max_size_bytes, Some(1 << 20));
    assert_eq!(c.journal_write_buffer_size_bytes, 8 << 10);
    assert!(c.use_host_name_as_bookie_id);
}

#[test]
fn conf_file_is_read_from_disk_and_missing_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bk_server.conf");
    std::fs::write(&path, format!("{ZK}bookiePort=3999\n")).unwrap();
    let args = BookieArgs {
        conf: Some(path.clone()),
        ..Default::default()
    };
    let (c, r) = BookieConfig::load_with_report(&args).unwrap();
    assert_eq!(c.bookie_port, 3999);
    assert_eq!(r.conf_file, Some(path));
    let args = BookieArgs {
        conf: Some(dir.path().join("nope.conf")),
        ..Default::default()
    };
    let e = BookieConfig::load_with_report(&args)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope.conf"), "{e}");
}

#[test]
fn negative_compaction_settings_disable_compaction_like_java() {
    let (c, _) = load(
        &format!("{ZK}minorCompactionThreshold=-1\nmajorCompactionInterval=-1\n"),
        &[],
    )
    .unwrap();
    assert_eq!(c.minor_compaction_interval, None);
    assert_eq!(c.major_compaction_interval, None);
    let e = err_text(&format!("{ZK}majorCompactionThreshold=1.5\n"), &[]);
    assert!(
        e.contains("majorCompactionThreshold") && e.contains("1.5"),
        "{e}"
    );
}

#[test]
fn identity_and_mode_flags() {
    let (c, _) = load(
        ZK,
        &[
            "--bookie-id",
            "bk-7",
            "--advertised-address",
            "10.1.2.3",
            "--allow-loopback",
            "--readonly",
            "--http-port",
            "8081",
            "-z",
            "zk9:2181",
        ],
    )
    .unwrap();
    assert_eq!(c.bookie_id.as_deref(), Some("bk-7"));
    assert_eq!(c.advertised_address.as_deref(), Some("10.1.2.3"));
    assert!(c.allow_loopback && c.force_read_only_bookie);
    assert_eq!(c.http_server_port, 8081);
    assert_eq!(c.metadata_service.unwrap().zk_connect, "zk9:2181");
}

#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn unknown_and_ignored_keys_are_logged_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bk_server.conf");
    std::fs::write(
        &path,
        format!("{ZK}typoKey=1\nserverNumIOThreads=4\ntypoKey=2\nnettyMaxFrameSizeBytes=5242880\n"),
    )
    .unwrap();
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let args = BookieArgs {
        conf: Some(path),
        ..Default::default()
    };
    tracing::subscriber::with_default(subscriber, || BookieConfig::load(&args).unwrap());
    let log = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    assert_eq!(log.matches("unknown config key").count(), 1, "{log}");
    assert!(log.contains("typoKey"));
    assert_eq!(log.matches("has no effect").count(), 1, "{log}");
    assert!(
        log.contains(
            "config: serverNumIOThreads has no effect in bookie-rs: connections are served by \
             the async runtime's worker threads"
        ),
        "the one line names the key and the reason: {log}"
    );
    assert_eq!(
        log.matches("nettyMaxFrameSizeBytes=5242880 is below")
            .count(),
        1,
        "a raised frame limit is named once: {log}"
    );
    assert!(
        log.contains("set twice"),
        "duplicate keys are reported: {log}"
    );
}

#[test]
fn metrics_follow_the_stats_provider_or_the_metrics_port_flag() {
    let enabled = |text: &str, args: BookieArgs| {
        let (c, report) = BookieConfig::from_text_and_args(Some(text), None, &args).unwrap();
        (c.metrics_enabled, report.adjusted.join("\n"))
    };
    let standalone = || BookieArgs {
        standalone: true,
        ..Default::default()
    };
    assert!(!enabled("", standalone()).0, "NullStatsProvider by default");
    assert!(!enabled("prometheusStatsHttpPort=9000\n", standalone()).0);
    assert!(
        enabled(
            "statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider\n",
            standalone()
        )
        .0
    );
    let flag = BookieArgs {
        metrics_port: Some("9100".into()),
        ..standalone()
    };
    assert!(enabled("", flag).0, "--metrics-port asks for metrics");
    let (on, notes) = enabled(
        "statsProviderClass=org.apache.bookkeeper.stats.codahale.CodahaleMetricsProvider\n",
        standalone(),
    );
    assert!(!on);
    assert!(notes.contains("statsProviderClass"), "{notes}");
}

#[test]
fn the_latency_rollover_is_whole_seconds_of_at_least_one() {
    let load = |v: &str| {
        let args = BookieArgs {
            standalone: true,
            set: vec![format!("prometheusStatsLatencyRolloverSeconds={v}")],
            ..Default::default()
        };
        BookieConfig::from_text_and_args(None, None, &args)
    };
    let (c, report) = load("15").unwrap();
    assert_eq!(c.prometheus_stats_latency_rollover, Duration::from_secs(15));
    assert!(report.ignored_keys.is_empty(), "{:?}", report.ignored_keys);
    for bad in ["0", "-5", "1.5", "2147483648", "soon"] {
        let e = load(bad).unwrap_err().to_string();
        assert!(
            e.contains("prometheusStatsLatencyRolloverSeconds") && e.contains(bad),
            "{bad}: {e}"
        );
    }
}

#[test]
fn stock_tls_and_authz_classes_are_accepted_and_parsed() {
    let text = format!(
        "{ZK}tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory\n\
         tlsKeyStoreType=PEM\ntlsKeyStore=/k.pem\ntlsCertificatePath=/c.pem\n\
         tlsTrustStoreType=PKCS12\ntlsTrustStore=/t.p12\ntlsClientAuthentication=true\n\
         tlsEnabledProtocols=TLSv1.3,TLSv1.2\n\
         bookieAuthProviderFactoryClass=org.apache.bookkeeper.tls.BookieAuthZFactory\n\
         authorizedRoles=pulsar, admin\n"
    );
    let (c, report) = load(&text, &[]).unwrap();
    let tls = c.tls.expect("TLS settings");
    assert!(c.tls_provider_factory_class_present);
    assert!(tls.client_authentication);
    assert_eq!(tls.enabled_protocol.as_deref(), Some("TLSv1.3"));
    assert_eq!(
        tls.key_store.map(|k| (k.key, k.path)),
        Some(("tlsKeyStore", std::path::PathBuf::from("/k.pem")))
    );
    assert_eq!(
        c.bookie_authz.unwrap().authorized_roles,
        ["pulsar".to_string(), "admin".to_string()]
    );
    assert!(
        report.unknown_keys.is_empty() && report.ignored_keys.is_empty(),
        "{report:?}"
    );
    assert!(
        report
            .adjusted
            .iter()
            .any(|n| n.starts_with("tlsEnabledProtocols") && n.contains("TLSv1.2")),
        "{:?}",
        report.adjusted
    );
    // Empty: TLS off, but present (Java still advertises "tls").
    let (c, _) = load(&format!("{ZK}tlsProviderFactoryClass=\n"), &[]).unwrap();
    assert!(c.tls.is_none() && c.tls_provider_factory_class_present);
    let (c, _) = load(ZK, &[]).unwrap();
    assert!(c.tls.is_none() && !c.tls_provider_factory_class_present && c.http_tls.is_none());
}

#[test]
fn security_refusals_name_the_key_and_say_why() {
    let e = err_text(&format!("{ZK}zkEnableSecurity=true\n"), &[]);
    assert!(
        e.starts_with("zkEnableSecurity:") && e.contains("SASL") && e.contains("InvalidACL"),
        "{e}"
    );
    let sasl = "org.apache.bookkeeper.sasl.SASLBookieAuthProviderFactory";
    let e = err_text(&format!("{ZK}bookieAuthProviderFactoryClass={sasl}\n"), &[]);
    assert!(
        e.contains("bookieAuthProviderFactoryClass") && e.contains(sasl),
        "{e}"
    );
    let e = err_text(
        &format!(
            "{ZK}tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory\ntlsKeyStoreType=pkcs12\n"
        ),
        &[],
    );
    assert!(e.contains("tlsKeyStoreType") && e.contains("pkcs12"), "{e}");
    let e = err_text(
        &format!("{ZK}bookieAuthProviderFactoryClass=org.apache.bookkeeper.tls.BookieAuthZFactory\nauthorizedRoles=\n"),
        &[],
    );
    assert!(e.starts_with("authorizedRoles:"), "{e}");
}

#[test]
fn scrub_keys_have_javas_defaults_and_meaning() {
    let (c, _) = load(ZK, &[]).unwrap();
    assert_eq!(c.local_scrub_interval, None, "off by default");
    assert_eq!(c.local_scrub_rate_limit, 60.0);
    assert_eq!(c.local_scrub_rate_limit_bytes, 0);
    let text = format!(
        "{ZK}localScrubInterval=3600\nlocalScrubRateLimit=0\nlocalScrubRateLimitBytes=20000000\n"
    );
    let (c, report) = load(&text, &[]).unwrap();
    assert!(report.unknown_keys.is_empty(), "{report:?}");
    assert_eq!(c.local_scrub_interval, Some(Duration::from_secs(3600)));
    assert_eq!(
        (c.local_scrub_rate_limit, c.local_scrub_rate_limit_bytes),
        (0.0, 20_000_000)
    );
    // Java: <= 0 is off.
    let (c, _) = load(&format!("{ZK}localScrubInterval=-5\n"), &[]).unwrap();
    assert_eq!(c.local_scrub_interval, None);
    assert!(err_text(&format!("{ZK}localScrubRateLimit=-1\n"), &[]).contains("localScrubRateLimit"));
}

#[test]
fn chaos_is_off_by_default_and_a_plan_needs_it_on() {
    let (c, _) = load(ZK, &[]).unwrap();
    assert!(!c.chaos_enabled, "never on by default");
    assert_eq!(c.chaos_fault_plan, None);
    let (c, report) = load(
        &format!("{ZK}chaosEnabled=true\nchaosFaultPlan=/tmp/plan.json\n"),
        &[],
    )
    .unwrap();
    assert!(report.unknown_keys.is_empty(), "{report:?}");
    assert!(c.chaos_enabled);
    assert_eq!(
        c.chaos_fault_plan.as_deref(),
        Some(std::path::Path::new("/tmp/plan.json"))
    );
    let e = err_text(&format!("{ZK}chaosFaultPlan=/tmp/plan.json\n"), &[]);
    assert!(
        e.contains("chaosFaultPlan") && e.contains("chaosEnabled=true"),
        "{e}"
    );
}

/// The test-only switch that acknowledges adds before fdatasync: off by default, needs
/// chaos on, and is refused by a build without debug assertions (a release build).
#[test]
fn the_ack_before_fdatasync_switch_is_off_needs_chaos_and_no_release_build() {
    let (c, _) = load(ZK, &[]).unwrap();
    assert!(!c.chaos_test_only_ack_before_fdatasync);
    let e = err_text(&format!("{ZK}chaosTestOnlyAckBeforeFdatasync=true\n"), &[]);
    assert!(e.contains("chaosTestOnlyAckBeforeFdatasync"), "{e}");
    let on = load(
        &format!("{ZK}chaosEnabled=true\nchaosTestOnlyAckBeforeFdatasync=true\n"),
        &[],
    );
    if cfg!(debug_assertions) {
        assert!(on.unwrap().0.chaos_test_only_ack_before_fdatasync);
    } else {
        let Err(e) = on else {
            panic!("a release build took chaosTestOnlyAckBeforeFdatasync")
        };
        let e = e.to_string();
        assert!(e.contains("release build"), "{e}");
    }
}

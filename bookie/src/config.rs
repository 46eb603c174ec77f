//! `config`: the bookie's configuration, read from a stock `bk_server.conf` (Java properties)
//! and overridden by command-line flags; this file holds the typed [`BookieConfig`], its
//! errors and the load entry points.
//!
//! Rooms (one concern each):
//! * [`properties`]: the lexical Java properties format;
//! * `props`: the typed property reader (origins, "used" marks, ranges, units);
//! * [`args`]: the command-line flags and how they become property overrides;
//! * `sections`: every key's default, unit, range and cross-key rule, one function per
//!   section of `bk_server.conf` (the only place a key is read);
//! * [`stock_keys`]: the table of what every stock key does here (honoured / no effect /
//!   refused, with the how or why; docs/config.md §5);
//! * `keys`: keys refused (security), keys set that have no effect, unknown keys;
//! * [`memory`]: the default cache size from physical memory;
//! * [`metadata_uri`]: `metadataServiceUri` / `zkServers`;
//! * [`mapping`]: [`BookieConfig`] -> the request path's and the storage's configs (the only
//!   mapping from the bookie's config to another crate's).
//!
//! Precedence (lowest to highest): code default < config file (`--conf`, else env
//! `BOOKIE_CONF`) < `--set key=value` < dedicated flags (`--port`, `--journal-dirs`, ...).
//! Every flag is applied as a property override *before* typed parsing, so a bad flag value is
//! reported exactly like a bad file value: `invalid value for <key> ("<value>", from <origin>)`.
//!
//! Invariants of a loaded [`BookieConfig`]:
//! * every numeric field is in range (ports fit u16, fractions in (0,1), sizes > 0 where the
//!   Java bookie requires it); an invalid value fails start-up, never falls back silently;
//! * an empty value (`key=`) means "unset" (Pulsar ships many `key=` lines);
//! * defaults are the Java *code* defaults (docs/config.md §1, not the commented
//!   values of the shipped file), except where a field's doc says otherwise and why;
//! * `metadata_service` is `Some` iff not standalone;
//! * journal/ledger dir lists are non-empty; `index_dirs` is `Some` only if configured
//!   (the cookie records index dirs only when configured);
//! * sizes are in bytes (`_bytes`; `usize` when they size memory), times are `Duration`s;
//!   Java's `-1`/`0` "off" sentinels become `Option::None`; each field holds the value as
//!   its consumer uses it, so nothing downstream converts it again;
//! * keys that are stock but have no effect here, unknown keys, and values the loader adjusted
//!   are logged once each at load (tracing `warn`) and listed in [`LoadReport`];
//! * security features we do not implement and whose silent absence would downgrade
//!   security fail start-up: `zkEnableSecurity=true`, and a `tlsProviderFactoryClass` or
//!   `bookieAuthProviderFactoryClass` other than the one class of each that bookie-rs
//!   implements (`tls::settings`); `ledgerStorageClass` is only informative (the storage is
//!   always ours).

pub mod args;
#[cfg(test)]
mod key_table_tests;
mod keys;
pub mod mapping;
pub mod memory;
pub mod metadata_uri;
pub mod properties;
mod props;
mod sections;
pub mod stock_keys;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use args::BookieArgs;
pub use memory::default_cache_bytes;
pub use metadata_uri::{LedgerManagerType, MetadataServiceUri};
use props::Props;

/// Errors while loading the configuration. Every value error names the key and the value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path}: {source}")]
    Syntax {
        path: PathBuf,
        source: properties::PropertiesError,
    },
    #[error("invalid value for {key} (\"{value}\", from {origin}): {reason}")]
    InvalidValue {
        key: String,
        value: String,
        origin: String,
        reason: String,
    },
    #[error("invalid --set argument \"{0}\": expected key=value")]
    BadOverride(String),
    #[error("{key}: {reason}")]
    Unsupported { key: String, reason: String },
}

/// The typed bookie configuration. Field docs give the stock key and the code default.
#[derive(Debug, Clone, PartialEq)]
pub struct BookieConfig {
    // ---- mode ----
    /// `--standalone`: no ZooKeeper at all.
    pub standalone: bool,
    /// metadataServiceUri / zkServers + zkLedgersRootPath; `None` iff standalone.
    pub metadata_service: Option<MetadataServiceUri>,
    /// zkTimeout (10000 ms): ZooKeeper session timeout.
    pub zk_timeout: Duration,

    // ---- network ----
    /// bookiePort (3181). 0 only with allowEphemeralPorts.
    pub bookie_port: u16,
    /// listeningInterface (unset = bind all, id from the default interface).
    pub listening_interface: Option<String>,
    /// advertisedAddress (unset).
    pub advertised_address: Option<String>,
    /// useHostNameAsBookieID (false).
    pub use_host_name_as_bookie_id: bool,
    /// useShortHostName (false).
    pub use_short_host_name: bool,
    /// bookieId (unset): custom id used verbatim.
    pub bookie_id: Option<String>,
    /// allowLoopback (false).
    pub allow_loopback: bool,
    /// allowEphemeralPorts (false).
    pub allow_ephemeral_ports: bool,
    /// serverTcpNoDelay (true).
    pub server_tcp_no_delay: bool,
    /// serverSockKeepalive (true).
    pub server_sock_keepalive: bool,
    /// nettyMaxFrameSizeBytes: the frame limit, counting the 4-byte prefix as Netty does.
    /// Default 5,253,120 (Pulsar's shipped value; Java's code default is 5,242,880), and never
    /// below it: a smaller configured value is raised to 5,253,120 and named in
    /// [`LoadReport::adjusted`]. Java's 5,242,880 would close the connection on a Pulsar chunk
    /// frame (5,242,992 bytes and more). The request path's limit, and the floor of a journal
    /// segment (one frame plus 1 MiB), as is.
    pub netty_max_frame_size_bytes: usize,
    /// maxPendingAddRequestsPerThread (10000).
    pub max_pending_add_requests_per_thread: u32,
    /// maxPendingReadRequestsPerThread (10000).
    pub max_pending_read_requests_per_thread: u32,
    /// maxAddsInProgressLimit (0 = off -> None).
    pub max_adds_in_progress_limit: Option<u32>,
    /// maxReadsInProgressLimit (0 = off -> None).
    pub max_reads_in_progress_limit: Option<u32>,
    /// numAddWorkerThreads (1; 0 = run on the I/O thread).
    pub num_add_worker_threads: u32,
    /// numReadWorkerThreads (8).
    pub num_read_worker_threads: u32,
    /// maxBatchReadSize (5242880 bytes).
    pub max_batch_read_size_bytes: u64,

    // ---- directories ----
    /// journalDirectories, else journalDirectory (/tmp/bk-txn).
    pub journal_dirs: Vec<PathBuf>,
    /// ledgerDirectories (/tmp/bk-data).
    pub ledger_dirs: Vec<PathBuf>,
    /// indexDirectories (unset = the ledger dirs; `None` = not configured).
    pub index_dirs: Option<Vec<PathBuf>>,
    /// allowStorageExpansion (false).
    pub allow_storage_expansion: bool,

    // ---- journal ----
    /// journalFormatVersionToWrite (6).
    pub journal_format_version_to_write: u32,
    /// journalMaxSizeMB in bytes; `None` unless the configuration sets it (Java's 2048 is
    /// not applied). When set, the journal segment size, capped at 256 MiB and never below a
    /// frame plus 1 MiB (`mapping`); otherwise segments are 128 MiB.
    pub journal_max_size_bytes: Option<u64>,
    /// journalMaxBackups; `None` unless the configuration sets it (Java's 5 is not applied).
    /// When set, the count of free journal segments kept for reuse; otherwise 2.
    pub journal_max_backups: Option<usize>,
    /// journalPreAllocSizeMB (16) in bytes.
    pub journal_pre_alloc_size_bytes: u64,
    /// journalWriteBufferSizeKB (64) in bytes.
    pub journal_write_buffer_size_bytes: u64,
    /// journalRemoveFromPageCache (true).
    pub journal_remove_from_page_cache: bool,
    /// journalWriteData (true).
    pub journal_write_data: bool,
    /// journalSyncData (true). No effect: every add is acknowledged after its fsync
    /// (docs/config.md §5).
    pub journal_sync_data: bool,
    /// journalAdaptiveGroupWrites (true).
    pub journal_adaptive_group_writes: bool,
    /// journalMaxGroupWaitMSec: the journal's group wait. `Some` only when the configuration
    /// sets it > 0 and journalFlushWhenQueueEmpty is false; otherwise `None`, greedy group
    /// commit (Java's 2 ms default is not applied: on a free device it is pure latency).
    pub journal_max_group_wait: Option<Duration>,
    /// journalBufferedWritesThreshold (524288 bytes), at least 4096 (0 would mean one record
    /// per group): the cap on one group's record bytes.
    pub journal_buffered_writes_threshold_bytes: usize,
    /// journalBufferedEntriesThreshold (0 = off -> None). `journalMaxGroupedEntriesToCommit` (not
    /// a stock Java key) is accepted as an alias.
    pub journal_buffered_entries_threshold: Option<usize>,
    /// journalFlushWhenQueueEmpty (false).
    pub journal_flush_when_queue_empty: bool,
    /// journalAlignmentSize (512 bytes; multiple of 512).
    pub journal_alignment_size_bytes: u64,
    /// journalQueueSize (10000 entries).
    pub journal_queue_size: usize,
    /// journalMaxMemorySizeMb in bytes, at least 8 MiB (Java: 5% of direct memory; here
    /// 0 or unset = None = the journal's own default).
    pub journal_max_memory_size_bytes: Option<usize>,
    /// journalPageCacheFlushIntervalMSec (1000 ms).
    pub journal_page_cache_flush_interval: Duration,
    /// journalReuseFiles (false).
    pub journal_reuse_files: bool,
    /// skipReplayJournalInvalidRecord (false).
    pub skip_replay_journal_invalid_record: bool,

    // ---- ledger storage ----
    /// ledgerStorageClass (informative only: the storage is always ours).
    pub ledger_storage_class: String,
    /// dbStorage_writeCacheMaxSizeMb (Java: 25% of direct memory; here see [`default_cache_bytes`]).
    pub write_cache_max_size_bytes: usize,
    /// dbStorage_readAheadCacheMaxSizeMb (same default rule).
    pub read_ahead_cache_max_size_bytes: usize,
    /// dbStorage_readAheadCacheBatchSize (100 entries).
    pub read_ahead_cache_batch_size: usize,
    /// dbStorage_readAheadCacheBatchBytesSize (-1 = off -> None).
    pub read_ahead_cache_batch_bytes: Option<u64>,
    /// dbStorage_maxThrottleTimeMs (10000 ms).
    pub max_throttle_time: Duration,
    /// logSizeLimit (1073741824 bytes, at most 1 GiB).
    pub entry_log_size_limit_bytes: u64,
    /// entryLogFilePreallocationEnabled (true).
    pub entry_log_file_preallocation_enabled: bool,
    /// flushInterval (10000 ms): checkpoint period.
    pub flush_interval: Duration,
    /// flushEntrylogBytes (0 = off -> None).
    pub flush_entrylog_bytes: Option<u64>,
    /// readBufferSizeBytes (512).
    pub read_buffer_size_bytes: u64,
    /// writeBufferSizeBytes (65536).
    pub write_buffer_size_bytes: u64,

    // ---- GC and compaction ----
    /// gcWaitTime (600000 ms).
    pub gc_wait_time: Duration,
    /// gcOverreplicatedLedgerWaitTime (86400000 ms): how often the over-replication check
    /// runs; None (a value <= 0) disables it (bookie/src/gc_metadata.rs).
    pub gc_overreplicated_ledger_wait_time: Option<Duration>,
    /// gcOverreplicatedLedgerMaxConcurrentRequests (1000), at least 1.
    pub gc_overreplicated_ledger_max_concurrent_requests: usize,
    /// gcMetadataOpRateLimit (1000 metadata operations a second), at least 1.
    pub gc_metadata_op_rate_limit: u32,
    /// verifyMetadataOnGC (false).
    pub verify_metadata_on_gc: bool,
    /// minorCompactionThreshold (0.2), at most 1; <= 0 disables minor compaction.
    pub minor_compaction_threshold: f64,
    /// minorCompactionInterval (3600 s); None = minor compaction disabled (interval or
    /// threshold <= 0).
    pub minor_compaction_interval: Option<Duration>,
    /// majorCompactionThreshold (0.8), at most 1; <= 0 disables major compaction.
    pub major_compaction_threshold: f64,
    /// majorCompactionInterval (86400 s); None = major compaction disabled.
    pub major_compaction_interval: Option<Duration>,
    /// minorCompactionMaxTimeMillis (-1 or 0 = unbounded -> None, as Java bounds only > 0).
    pub minor_compaction_max_time: Option<Duration>,
    /// majorCompactionMaxTimeMillis (-1 or 0 = unbounded -> None).
    pub major_compaction_max_time: Option<Duration>,
    /// compactionRateByEntries (= compactionRate = 1000 entries/s).
    pub compaction_rate_by_entries: u64,
    /// compactionRateByBytes (1000000 bytes/s).
    pub compaction_rate_by_bytes: u64,
    /// isThrottleByBytes (false).
    pub is_throttle_by_bytes: bool,
    /// compactionMaxOutstandingRequests (100000).
    pub compaction_max_outstanding_requests: u64,
    /// forceAllowCompaction (false).
    pub force_allow_compaction: bool,
    /// isForceGCAllowWhenNoSpace (false).
    pub is_force_gc_allow_when_no_space: bool,
    /// localScrubInterval (seconds; 0 or less = off -> None): the scrubber's period, each
    /// delay drawn from (0.5, 1.5) × this, as Java's ScrubberService.
    pub local_scrub_interval: Option<Duration>,
    /// localScrubRateLimit (60 entries/s; 0 = no limit).
    pub local_scrub_rate_limit: f64,
    /// localScrubRateLimitBytes (not a stock key; 0 = no limit): bytes/s.
    pub local_scrub_rate_limit_bytes: u64,
    /// chaosEnabled (not a stock key; false): wrap every storage disk in the chaos layer
    /// and serve `/api/v1/chaos/faults` (docs/chaos.md). Never on by default.
    pub chaos_enabled: bool,
    /// chaosFaultPlan (not a stock key; unset): a JSON fault plan added at start-up
    /// (needs `chaosEnabled=true`).
    pub chaos_fault_plan: Option<PathBuf>,
    /// chaosTestOnlyAckBeforeFdatasync (not a stock key; false): TEST ONLY, breaks
    /// durability: journal write+fdatasyncs run without the fdatasync, so adds are
    /// acknowledged before they are durable (to prove a loss check can fail). Needs
    /// `chaosEnabled=true`; refused by a build without debug assertions.
    pub chaos_test_only_ack_before_fdatasync: bool,

    // ---- read-only mode and disks ----
    /// readOnlyModeEnabled (true).
    pub read_only_mode_enabled: bool,
    /// readOnlyModeOnAnyDiskFullEnabled (true).
    pub read_only_mode_on_any_disk_full_enabled: bool,
    /// forceReadOnlyBookie (false).
    pub force_read_only_bookie: bool,
    /// persistBookieStatusEnabled (false).
    pub persist_bookie_status_enabled: bool,
    /// diskUsageThreshold (0.95), in (0, 1).
    pub disk_usage_threshold: f64,
    /// diskUsageWarnThreshold (0.90), in (0, 1), <= diskUsageThreshold.
    pub disk_usage_warn_threshold: f64,
    /// diskUsageLwmThreshold (= diskUsageThreshold), <= diskUsageThreshold.
    pub disk_usage_lwm_threshold: f64,
    /// diskCheckInterval (10000 ms).
    pub disk_check_interval: Duration,
    /// minUsableSizeForIndexFileCreation (104857600 bytes).
    pub min_usable_size_for_index_file_creation_bytes: u64,
    /// minUsableSizeForEntryLogCreation (= logSizeLimit; Java's `(long) 1.2 * x` quirk).
    pub min_usable_size_for_entry_log_creation_bytes: u64,
    /// minUsableSizeForHighPriorityWrites (= minUsableSizeForEntryLogCreation).
    pub min_usable_size_for_high_priority_writes_bytes: u64,

    // ---- HTTP and statistics ----
    /// httpServerEnabled (false). Advertised in BookieServiceInfo when true.
    pub http_server_enabled: bool,
    /// httpServerPort (8080).
    pub http_server_port: u16,
    /// httpServerHost (0.0.0.0).
    pub http_server_host: String,
    /// enableStatistics (true): with false, requests are not recorded (as Java's request
    /// processor skips its stats); the metrics endpoint still answers.
    pub enable_statistics: bool,
    /// statsProviderClass (org.apache.bookkeeper.stats.NullStatsProvider).
    pub stats_provider_class: String,
    /// Metrics are exported: `statsProviderClass` is the Prometheus provider, or
    /// `--metrics-port` was given (docs/metrics.md §1).
    pub metrics_enabled: bool,
    /// prometheusStatsHttpEnable (true).
    pub prometheus_stats_http_enable: bool,
    /// prometheusStatsHttpAddress (0.0.0.0).
    pub prometheus_stats_http_address: String,
    /// prometheusStatsHttpPort (8000).
    pub prometheus_stats_http_port: u16,
    /// prometheusStatsLatencyRolloverSeconds (60, whole seconds >= 1): the op-stat quantile
    /// window (`metrics/rollover.rs`, docs/metrics.md §1).
    pub prometheus_stats_latency_rollover: Duration,

    // ---- security (tls::settings, docs/tls.md §2) ----
    /// tlsProviderFactoryClass = org.apache.bookkeeper.tls.TLSContextFactory: the bookie
    /// port's TLS settings; `None` when the key is absent or empty (TLS off).
    pub tls: Option<crate::tls::settings::TlsSettings>,
    /// tlsProviderFactoryClass has an entry, even an empty one: Java then advertises the
    /// `"tls"` extension in BookieServiceInfo (even with TLS off).
    pub tls_provider_factory_class_present: bool,
    /// httpServerTlsEnable=true: the admin port's HTTPS settings.
    pub http_tls: Option<crate::tls::settings::HttpTlsSettings>,
    /// bookieAuthProviderFactoryClass = org.apache.bookkeeper.tls.BookieAuthZFactory, with
    /// its authorizedRoles.
    pub bookie_authz: Option<crate::tls::settings::AuthzSettings>,

    // ---- as given ----
    /// Every key set by the file, `--set` and the flags, with its value as written (the
    /// admin API's `/api/v1/config/server_config`, as Java's `conf.asJson()`), in key order.
    pub properties: Vec<(String, String)>,
}

/// What the loader noticed but did not act on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// The file actually read, if any.
    pub conf_file: Option<PathBuf>,
    /// Stock BookKeeper keys set (non-empty) that have no effect in bookie-rs
    /// ([`stock_keys::KeyEffect::NoEffect`]), in key order; each is logged once with its
    /// reason.
    pub ignored_keys: Vec<String>,
    /// Keys that are not BookKeeper keys we know (typos, other products' keys).
    pub unknown_keys: Vec<String>,
    /// Values the loader changed, one line each naming the key (e.g. a frame limit below
    /// Pulsar's, raised to it).
    pub adjusted: Vec<String>,
}

/// Largest configuration file read (a stock `bk_server.conf` is about 50 KiB): a path that
/// names something else by mistake fails with a clear error instead of filling memory.
const CONF_FILE_BYTES_MAX: u64 = 16 << 20;

impl BookieConfig {
    /// Loads the configuration for `args` and logs ignored/unknown keys once each (tracing warn).
    pub fn load(args: &BookieArgs) -> Result<BookieConfig, ConfigError> {
        let (cfg, report) = Self::load_with_report(args)?;
        if let Some(path) = &report.conf_file {
            tracing::info!(file = %path.display(), "configuration loaded");
        }
        for key in &report.ignored_keys {
            tracing::warn!("{}", keys::no_effect_line(key));
        }
        for key in &report.unknown_keys {
            tracing::warn!(key = %key, "unknown config key ignored (typo?)");
        }
        for note in &report.adjusted {
            tracing::warn!("{note}");
        }
        Ok(cfg)
    }

    /// Loads without logging; returns what was ignored.
    pub fn load_with_report(args: &BookieArgs) -> Result<(BookieConfig, LoadReport), ConfigError> {
        let conf_file = args
            .conf
            .clone()
            .or_else(|| std::env::var_os("BOOKIE_CONF").map(PathBuf::from));
        let text = match &conf_file {
            Some(path) => Some(bk_disk::read_small_text(path, CONF_FILE_BYTES_MAX).map_err(
                |source| ConfigError::Io {
                    path: path.clone(),
                    source,
                },
            )?),
            None => None,
        };
        Self::from_text_and_args(text.as_deref(), conf_file.as_deref(), args)
    }

    /// Defaults only (no file, no flags). Handy for tests of other modules.
    pub fn defaults_standalone() -> BookieConfig {
        let args = BookieArgs {
            standalone: true,
            ..Default::default()
        };
        match Self::from_text_and_args(None, None, &args) {
            Ok((cfg, _)) => cfg,
            // The code defaults are constants checked by `defaults_match_stock_code_defaults`.
            Err(e) => unreachable!("code defaults are valid: {e}"),
        }
    }

    /// Parses properties `text` (from `path`, for messages) and applies `args` on top.
    pub fn from_text_and_args(
        text: Option<&str>,
        path: Option<&Path>,
        args: &BookieArgs,
    ) -> Result<(BookieConfig, LoadReport), ConfigError> {
        let mut props = Props::default();
        if let Some(text) = text {
            let file_name = path
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "<config>".to_string());
            let entries = properties::parse(text).map_err(|source| ConfigError::Syntax {
                path: path.map(Path::to_path_buf).unwrap_or_default(),
                source,
            })?;
            for e in entries {
                if props.contains(&e.key) {
                    tracing::warn!(key = %e.key, line = e.line, "config key set twice; the last value wins");
                }
                props.set(&e.key, e.value, format!("{file_name} line {}", e.line));
            }
        }
        args::apply(&mut props, args)?;
        let mut cfg = sections::from_props(&mut props, args.standalone)?;
        cfg.properties = props.entries();
        let mut report = LoadReport {
            conf_file: path.map(Path::to_path_buf),
            adjusted: props.take_notes(),
            ..Default::default()
        };
        keys::classify_set_keys(&props, &mut report);
        Ok((cfg, report))
    }

    /// Index directories in effect: the configured ones, else the ledger directories.
    pub fn effective_index_dirs(&self) -> &[PathBuf] {
        self.index_dirs.as_deref().unwrap_or(&self.ledger_dirs)
    }

    /// Every directory that carries a cookie (`current/VERSION`): journal, ledger, then
    /// configured index dirs, without duplicates, in that order.
    pub fn all_cookie_dirs(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        let idx = self.index_dirs.iter().flatten();
        for d in self
            .journal_dirs
            .iter()
            .chain(self.ledger_dirs.iter())
            .chain(idx)
        {
            if !out.contains(d) {
                out.push(d.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;

//! `config`: the bookie's configuration, read from a stock `bk_server.conf` (Java properties)
//! and overridden by command-line flags.
//!
//! Owns: the key names, their stock defaults (the Java *code* defaults of
//! reference/config.md section 1, not the commented values of the shipped file), their units,
//! validation, and the command-line flags.
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
//! * `metadata_service` is `Some` iff not standalone;
//! * journal/ledger dir lists are non-empty; `index_dirs` is `Some` only if configured
//!   (the cookie records index dirs only when configured);
//! * sizes are in bytes (`_bytes`), times are `Duration`s; Java's `-1`/`0` "off" sentinels
//!   become `Option::None`;
//! * keys that are stock but have no effect here, and unknown keys, are logged once each at load
//!   (tracing `warn`) and listed in [`LoadReport`].
//! * features we do not implement and whose silent absence would downgrade security
//!   (`tlsProviderFactoryClass`, `bookieAuthProviderFactoryClass`, `zkEnableSecurity=true`)
//!   fail start-up; `ledgerStorageClass` is only informative (the storage is always ours).

pub mod metadata_uri;
pub mod properties;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use metadata_uri::{LedgerManagerType, MetadataServiceUri};

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

/// Command-line flags of the `bookie` binary. Flag names follow the Java `Main` where one exists
/// (`-c`, `-p`, `-j`, `-l`, `-i`, `-z`, `-m`, `-r`), long names are ours.
#[derive(clap::Parser, Debug, Clone, Default)]
#[command(
    name = "bookie",
    about = "BookKeeper-compatible bookie (reads stock bk_server.conf)"
)]
pub struct BookieArgs {
    /// Config file (Java properties, stock bk_server.conf keys). Default: env BOOKIE_CONF, else none.
    #[arg(short = 'c', long = "conf")]
    pub conf: Option<PathBuf>,
    /// bookiePort.
    #[arg(short = 'p', long = "port", alias = "bookieport")]
    pub port: Option<String>,
    /// journalDirectories (comma separated).
    #[arg(short = 'j', long = "journal-dirs", alias = "journal")]
    pub journal_dirs: Option<String>,
    /// ledgerDirectories (comma separated).
    #[arg(short = 'l', long = "ledger-dirs", alias = "ledgerdirs")]
    pub ledger_dirs: Option<String>,
    /// indexDirectories (comma separated).
    #[arg(short = 'i', long = "index-dirs", alias = "indexdirs")]
    pub index_dirs: Option<String>,
    /// metadataServiceUri, e.g. zk+hierarchical://localhost:2181/ledgers.
    #[arg(long = "metadata-service-uri")]
    pub metadata_service_uri: Option<String>,
    /// zkServers (used when metadataServiceUri is unset).
    #[arg(short = 'z', long = "zk-servers", alias = "zkserver")]
    pub zk_servers: Option<String>,
    /// zkLedgersRootPath.
    #[arg(short = 'm', long = "zk-ledgers-root-path", alias = "zkledgerpath")]
    pub zk_ledgers_root_path: Option<String>,
    /// Run without ZooKeeper: no registration, no cookie in ZooKeeper, no GC scan.
    #[arg(long = "standalone")]
    pub standalone: bool,
    /// Put journal (<dir>/journal) and ledger (<dir>/ledgers) directories under one directory,
    /// unless --journal-dirs / --ledger-dirs are given.
    #[arg(long = "data-dir")]
    pub data_dir: Option<PathBuf>,
    /// prometheusStatsHttpPort.
    #[arg(long = "metrics-port")]
    pub metrics_port: Option<String>,
    /// httpServerPort.
    #[arg(long = "http-port", alias = "httpport")]
    pub http_port: Option<String>,
    /// bookieId (custom bookie id).
    #[arg(long = "bookie-id")]
    pub bookie_id: Option<String>,
    /// advertisedAddress.
    #[arg(long = "advertised-address")]
    pub advertised_address: Option<String>,
    /// allowLoopback=true.
    #[arg(long = "allow-loopback")]
    pub allow_loopback: bool,
    /// forceReadOnlyBookie=true.
    #[arg(short = 'r', long = "readonly")]
    pub readonly: bool,
    /// Any key: --set key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// Which journal keys were given explicitly (file or `--set`). Their Java defaults
/// (2 ms group wait, 2 GiB files, 5 backups) are not bookie-rs's: greedy group commit,
/// 128 MiB recycled segments and 2 free segments are, unless the operator asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalKeysSet {
    pub max_group_wait: bool,
    pub max_size: bool,
    pub max_backups: bool,
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
    /// nettyMaxFrameSizeBytes (5242880).
    pub netty_max_frame_size_bytes: u32,
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
    /// journalMaxSizeMB (2048) in bytes. Applied only when the file sets it (capped at
    /// 256 MiB, and never below a frame plus 1 MiB); otherwise segments are 128 MiB.
    pub journal_max_size_bytes: u64,
    /// journalMaxBackups (5). Applied only when the file sets it: free journal segments
    /// kept for reuse; otherwise 2.
    pub journal_max_backups: u32,
    /// journalPreAllocSizeMB (16) in bytes.
    pub journal_pre_alloc_size_bytes: u64,
    /// journalWriteBufferSizeKB (64) in bytes.
    pub journal_write_buffer_size_bytes: u64,
    /// journalRemoveFromPageCache (true).
    pub journal_remove_from_page_cache: bool,
    /// journalWriteData (true).
    pub journal_write_data: bool,
    /// journalSyncData (true). false = acknowledge before fsync (operator's explicit choice).
    pub journal_sync_data: bool,
    /// journalAdaptiveGroupWrites (true).
    pub journal_adaptive_group_writes: bool,
    /// journalMaxGroupWaitMSec (2 ms). Applied only when the file sets it (> 0) and
    /// journalFlushWhenQueueEmpty is false; otherwise group commit is greedy.
    pub journal_max_group_wait: Duration,
    /// Which of journalMaxGroupWaitMSec, journalMaxSizeMB and journalMaxBackups the
    /// configuration set: those three apply only when set (ARCHITECTURE.md).
    pub journal_keys_set: JournalKeysSet,
    /// journalBufferedWritesThreshold (524288 bytes).
    pub journal_buffered_writes_threshold_bytes: u64,
    /// journalBufferedEntriesThreshold (0 = off -> None). `journalMaxGroupedEntriesToCommit` (not
    /// a stock Java key) is accepted as an alias.
    pub journal_buffered_entries_threshold: Option<u64>,
    /// journalFlushWhenQueueEmpty (false).
    pub journal_flush_when_queue_empty: bool,
    /// journalAlignmentSize (512 bytes; multiple of 512).
    pub journal_alignment_size_bytes: u64,
    /// journalQueueSize (10000 entries).
    pub journal_queue_size: u32,
    /// journalMaxMemorySizeMb (Java: 5% of direct memory; here None = journal's own default).
    pub journal_max_memory_size_bytes: Option<u64>,
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
    pub write_cache_max_size_bytes: u64,
    /// dbStorage_readAheadCacheMaxSizeMb (same default rule).
    pub read_ahead_cache_max_size_bytes: u64,
    /// dbStorage_readAheadCacheBatchSize (100 entries).
    pub read_ahead_cache_batch_size: u32,
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
    /// gcOverreplicatedLedgerWaitTime (86400000 ms).
    pub gc_overreplicated_ledger_wait_time: Duration,
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
    /// minorCompactionMaxTimeMillis (-1 = unbounded -> None).
    pub minor_compaction_max_time: Option<Duration>,
    /// majorCompactionMaxTimeMillis (-1 = unbounded -> None).
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
    /// enableStatistics (true).
    pub enable_statistics: bool,
    /// prometheusStatsHttpEnable (true).
    pub prometheus_stats_http_enable: bool,
    /// prometheusStatsHttpAddress (0.0.0.0).
    pub prometheus_stats_http_address: String,
    /// prometheusStatsHttpPort (8000).
    pub prometheus_stats_http_port: u16,
}

/// What the loader noticed but did not act on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// The file actually read, if any.
    pub conf_file: Option<PathBuf>,
    /// Stock BookKeeper keys that have no effect in bookie-rs.
    pub ignored_keys: Vec<String>,
    /// Keys that are not BookKeeper keys we know (typos, other products' keys).
    pub unknown_keys: Vec<String>,
}

/// Default size of each DbLedgerStorage-style cache when its key is unset.
///
/// Java uses 25% of the JVM's max direct memory (itself the heap size by default). We have no
/// JVM: we take 1/16 of physical memory, at least 16 MiB and at most 1 GiB, so two caches never
/// exceed 1/8 of RAM on small machines. Decision recorded for ARCHITECTURE.md.
pub fn default_cache_bytes() -> u64 {
    const MIB: u64 = 1 << 20;
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let phys = if pages > 0 && page_size > 0 {
        (pages as u64).saturating_mul(page_size as u64)
    } else {
        1 << 30
    };
    (phys / 16).clamp(16 * MIB, 1024 * MIB)
}

/// Stock keys we read but ignore (no equivalent in bookie-rs). Logged as "ignored".
const IGNORED_KEYS: &[&str] = &[
    "serverTcpLinger",
    "serverNumIOThreads",
    "byteBufAllocatorSizeInitial",
    "byteBufAllocatorSizeMin",
    "byteBufAllocatorSizeMax",
    "serverWriteBufferLowWaterMark",
    "serverWriteBufferHighWaterMark",
    "numHighPriorityWorkerThreads",
    "numLongPollWorkerThreads",
    "numJournalCallbackThreads",
    "readWorkerThreadsThrottlingEnabled",
    "requestTimerTickDurationMs",
    "requestTimerNumTicks",
    "waitTimeoutOnResponseBackpressureMs",
    "tlsProvider",
    "tlsClientAuthentication",
    "tlsKeyStoreType",
    "tlsKeyStore",
    "tlsKeyStorePasswordPath",
    "tlsTrustStoreType",
    "tlsTrustStore",
    "tlsTrustStorePasswordPath",
    "tlsCertificatePath",
    "tlsCertFilesRefreshDurationSeconds",
    "allowMultipleDirsUnderSameDiskPartition",
    "dbStorage_directIOEntryLogger",
    "dbStorage_directIOEntryLoggerTotalWriteBufferSizeMB",
    "dbStorage_directIOEntryLoggerTotalReadBufferSizeMB",
    "dbStorage_directIOEntryLoggerReadBufferSizeMB",
    "dbStorage_directIOEntryLoggerMaxFdCacheTimeSeconds",
    "defaultRocksdbConf",
    "entryLocationRocksdbConf",
    "ledgerMetadataRocksdbConf",
    "entryLogPerLedgerEnabled",
    "fileInfoFormatVersionToWrite",
    "openFileLimit",
    "pageLimit",
    "pageSize",
    "sortedLedgerStorageEnabled",
    "skipListSizeLimit",
    "gcOverreplicatedLedgerMaxConcurrentRequests",
    "gcMetadataOpRateLimit",
    "useTransactionalCompaction",
    "gcEntryLogMetadataCacheEnabled",
    "entryLocationCompactionInterval",
    "zkRetryBackoffStartMs",
    "zkRetryBackoffMaxMs",
    "httpServerClass",
    "httpServerTlsEnable",
    "statsProviderClass",
    "prometheusStatsLatencyRolloverSeconds",
    "exposeDefaultJVMMetrics",
    "bookieDeathWatchInterval",
    "autoRecoveryDaemonEnabled",
    "useV2WireProtocol",
    "dataIntegrityChecking",
    "localConsistencyCheckOnStartup",
    "extraServerComponents",
    "preserveMdcForTaskExecution",
    "ledgerManagerFactoryClass",
    "journalAdaptiveGroupWrites",
    "lostBookieRecoveryDelay",
    "rereplicationEntryBatchSize",
    "auditorPeriodicCheckInterval",
    "auditorPeriodicBookieCheckInterval",
    "openLedgerRereplicationGracePeriod",
    "numEntriesInReplicationTaskBatch",
    "zkRequestRateLimit",
    "compactionRate",
    "journalMaxMemorySizeMb",
    "limitStatsLogging",
    "ensemblePlacementPolicy",
    "reppDnsResolverClass",
    "bookieAuthProviderFactoryClass",
    "enableBusyWait",
    "stickyReadSEnabled",
    "reorderReadSequenceEnabled",
    "enableLocalTransport",
    "disableServerSocketBind",
    "skipListArenaChunkSize",
    "skipListArenaMaxAllocSize",
    "ledgerManagerType",
    "allowShadedLedgerManagerFactoryClass",
    "shadedLedgerManagerFactoryClassPrefix",
];

/// Key/value store with origin tracking and "used" marks.
struct Props {
    values: BTreeMap<String, (String, String)>, // key -> (value, origin)
    used: HashSet<String>,
}

impl Props {
    fn set(&mut self, key: &str, value: String, origin: String) {
        self.values.insert(key.to_string(), (value, origin));
    }

    /// Raw value; empty (after trim) means unset.
    fn raw(&mut self, key: &str) -> Option<(String, String)> {
        self.used.insert(key.to_string());
        let (v, o) = self.values.get(key)?;
        let v = v.trim();
        if v.is_empty() {
            None
        } else {
            Some((v.to_string(), o.clone()))
        }
    }

    fn invalid(key: &str, value: &str, origin: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue {
            key: key.to_string(),
            value: value.to_string(),
            origin: origin.to_string(),
            reason: reason.into(),
        }
    }

    fn string(&mut self, key: &str) -> Option<String> {
        self.raw(key).map(|(v, _)| v)
    }

    fn string_or(&mut self, key: &str, default: &str) -> String {
        self.string(key).unwrap_or_else(|| default.to_string())
    }

    fn bool(&mut self, key: &str, default: bool) -> Result<bool, ConfigError> {
        let Some((v, origin)) = self.raw(key) else {
            return Ok(default);
        };
        // commons-configuration (BooleanUtils.toBooleanObject) accepts these spellings.
        match v.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "y" | "t" => Ok(true),
            "false" | "no" | "off" | "n" | "f" => Ok(false),
            _ => Err(Self::invalid(key, &v, &origin, "expected true or false")),
        }
    }

    /// Integer in `[min, max]`.
    fn int(&mut self, key: &str, default: i64, min: i64, max: i64) -> Result<i64, ConfigError> {
        let Some((v, origin)) = self.raw(key) else {
            return Ok(default);
        };
        let n: i64 = v
            .parse()
            .map_err(|_| Self::invalid(key, &v, &origin, "expected an integer"))?;
        if n < min || n > max {
            return Err(Self::invalid(
                key,
                &v,
                &origin,
                format!("must be between {min} and {max}"),
            ));
        }
        Ok(n)
    }

    fn u64_min(&mut self, key: &str, default: u64, min: u64) -> Result<u64, ConfigError> {
        Ok(self.int(key, default as i64, min as i64, i64::MAX)? as u64)
    }

    fn u32_min(&mut self, key: &str, default: u32, min: u32) -> Result<u32, ConfigError> {
        Ok(self.int(key, default as i64, min as i64, u32::MAX as i64)? as u32)
    }

    fn port(&mut self, key: &str, default: u16) -> Result<u16, ConfigError> {
        Ok(self.int(key, default as i64, 0, u16::MAX as i64)? as u16)
    }

    /// Milliseconds, >= 0.
    fn millis(&mut self, key: &str, default_ms: u64) -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(self.u64_min(key, default_ms, 0)?))
    }

    /// Size given in `unit_bytes` units, returned in bytes (checked multiplication).
    fn size(
        &mut self,
        key: &str,
        default_units: u64,
        unit_bytes: u64,
        min_units: u64,
    ) -> Result<u64, ConfigError> {
        let units = self.u64_min(key, default_units, min_units)?;
        units.checked_mul(unit_bytes).ok_or_else(|| {
            let (v, o) = self.values.get(key).cloned().unwrap_or_default();
            Self::invalid(key, &v, &o, "too large")
        })
    }

    /// Floating point fraction in `[lo, hi]` (inclusive bounds unless `open`).
    fn fraction(
        &mut self,
        key: &str,
        default: f64,
        lo: f64,
        hi: f64,
        open: bool,
    ) -> Result<f64, ConfigError> {
        let Some((v, origin)) = self.raw(key) else {
            return Ok(default);
        };
        let f: f64 = v
            .parse()
            .map_err(|_| Self::invalid(key, &v, &origin, "expected a number"))?;
        let ok = if open {
            f > lo && f < hi
        } else {
            f >= lo && f <= hi
        };
        if !f.is_finite() || !ok {
            let (l, r) = if open { ('(', ')') } else { ('[', ']') };
            return Err(Self::invalid(
                key,
                &v,
                &origin,
                format!("must be in {l}{lo}, {hi}{r}"),
            ));
        }
        Ok(f)
    }

    fn dirs(&mut self, key: &str) -> Result<Option<Vec<PathBuf>>, ConfigError> {
        let Some((v, origin)) = self.raw(key) else {
            return Ok(None);
        };
        let dirs: Vec<PathBuf> = v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        if dirs.is_empty() {
            return Err(Self::invalid(key, &v, &origin, "no directory given"));
        }
        let mut seen = HashSet::new();
        for d in &dirs {
            if !seen.insert(d.clone()) {
                return Err(Self::invalid(
                    key,
                    &v,
                    &origin,
                    format!("directory {} listed twice", d.display()),
                ));
            }
        }
        Ok(Some(dirs))
    }
}

impl BookieConfig {
    /// Loads the configuration for `args` and logs ignored/unknown keys once each (tracing warn).
    pub fn load(args: &BookieArgs) -> Result<BookieConfig, ConfigError> {
        let (cfg, report) = Self::load_with_report(args)?;
        if let Some(path) = &report.conf_file {
            tracing::info!(file = %path.display(), "configuration loaded");
        }
        for key in &report.ignored_keys {
            tracing::warn!(key = %key, "stock BookKeeper config key has no effect in bookie-rs; ignored");
        }
        for key in &report.unknown_keys {
            tracing::warn!(key = %key, "unknown config key ignored (typo?)");
        }
        Ok(cfg)
    }

    /// Loads without logging; returns what was ignored.
    pub fn load_with_report(args: &BookieArgs) -> Result<(BookieConfig, LoadReport), ConfigError> {
        let conf_file = args
            .conf
            .clone()
            .or_else(|| std::env::var_os("BOOKIE_CONF").map(PathBuf::from));
        // TEMPORARY (issue #9, hk-disk): the lead replaces this read with
        // bk_disk::read_small_text after merging the config split.
        #[allow(clippy::disallowed_methods)]
        let text = match &conf_file {
            Some(path) => {
                Some(
                    std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
                        path: path.clone(),
                        source,
                    })?,
                )
            }
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
        let mut props = Props {
            values: BTreeMap::new(),
            used: HashSet::new(),
        };
        let mut report = LoadReport {
            conf_file: path.map(Path::to_path_buf),
            ..Default::default()
        };
        if let Some(text) = text {
            let file_name = path
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "<config>".to_string());
            let entries = properties::parse(text).map_err(|source| ConfigError::Syntax {
                path: path.map(Path::to_path_buf).unwrap_or_default(),
                source,
            })?;
            for e in entries {
                if props.values.contains_key(&e.key) {
                    tracing::warn!(key = %e.key, line = e.line, "config key set twice; the last value wins");
                }
                props.set(&e.key, e.value, format!("{file_name} line {}", e.line));
            }
        }
        for kv in &args.set {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| ConfigError::BadOverride(kv.clone()))?;
            let k = k.trim();
            if k.is_empty() {
                return Err(ConfigError::BadOverride(kv.clone()));
            }
            props.set(k, v.trim().to_string(), format!("--set {k}"));
        }
        let flag = |props: &mut Props, key: &str, v: &Option<String>, name: &str| {
            if let Some(v) = v {
                props.set(key, v.clone(), name.to_string());
            }
        };
        if let Some(d) = &args.data_dir {
            props.set(
                "journalDirectories",
                d.join("journal").display().to_string(),
                "--data-dir".into(),
            );
            props.set(
                "ledgerDirectories",
                d.join("ledgers").display().to_string(),
                "--data-dir".into(),
            );
        }
        flag(&mut props, "bookiePort", &args.port, "--port");
        flag(
            &mut props,
            "journalDirectories",
            &args.journal_dirs,
            "--journal-dirs",
        );
        flag(
            &mut props,
            "ledgerDirectories",
            &args.ledger_dirs,
            "--ledger-dirs",
        );
        flag(
            &mut props,
            "indexDirectories",
            &args.index_dirs,
            "--index-dirs",
        );
        flag(
            &mut props,
            "metadataServiceUri",
            &args.metadata_service_uri,
            "--metadata-service-uri",
        );
        if args.zk_servers.is_some() && args.metadata_service_uri.is_none() {
            // A flag beats the file: --zk-servers must win over a metadataServiceUri in the file.
            props.set("metadataServiceUri", String::new(), "--zk-servers".into());
        }
        flag(&mut props, "zkServers", &args.zk_servers, "--zk-servers");
        flag(
            &mut props,
            "zkLedgersRootPath",
            &args.zk_ledgers_root_path,
            "--zk-ledgers-root-path",
        );
        flag(
            &mut props,
            "prometheusStatsHttpPort",
            &args.metrics_port,
            "--metrics-port",
        );
        flag(&mut props, "httpServerPort", &args.http_port, "--http-port");
        flag(&mut props, "bookieId", &args.bookie_id, "--bookie-id");
        flag(
            &mut props,
            "advertisedAddress",
            &args.advertised_address,
            "--advertised-address",
        );
        if args.allow_loopback {
            props.set("allowLoopback", "true".into(), "--allow-loopback".into());
        }
        if args.readonly {
            props.set("forceReadOnlyBookie", "true".into(), "--readonly".into());
        }

        let cfg = Self::from_props(&mut props, args.standalone)?;

        for key in props.values.keys() {
            if props.used.contains(key) {
                continue;
            }
            if IGNORED_KEYS.contains(&key.as_str()) || key.starts_with("dbStorage_rocksDB_") {
                report.ignored_keys.push(key.clone());
            } else {
                report.unknown_keys.push(key.clone());
            }
        }
        Ok((cfg, report))
    }

    fn from_props(p: &mut Props, standalone: bool) -> Result<BookieConfig, ConfigError> {
        const MIB: u64 = 1 << 20;
        // Features whose silent absence would downgrade security: refuse to start.
        for key in ["tlsProviderFactoryClass", "bookieAuthProviderFactoryClass"] {
            if let Some(v) = p.string(key) {
                return Err(ConfigError::Unsupported {
                    key: key.into(),
                    reason: format!("\"{v}\" is set but bookie-rs supports neither TLS nor authentication; unset it"),
                });
            }
        }
        if p.bool("zkEnableSecurity", false)? {
            return Err(ConfigError::Unsupported {
                key: "zkEnableSecurity".into(),
                reason: "ZooKeeper ACL security (SASL) is not supported by bookie-rs".into(),
            });
        }

        // ---- metadata ----
        let zk_timeout = Duration::from_millis(p.u64_min("zkTimeout", 10_000, 1)?);
        let uri = p.raw("metadataServiceUri");
        let zk_servers = p.raw("zkServers");
        let root = p
            .raw("zkLedgersRootPath")
            .unwrap_or(("/ledgers".into(), "default".into()));
        let metadata_service = if standalone {
            None
        } else if let Some((v, origin)) = uri {
            Some(
                MetadataServiceUri::parse(&v)
                    .map_err(|r| Props::invalid("metadataServiceUri", &v, &origin, r))?,
            )
        } else if let Some((v, origin)) = zk_servers {
            metadata_uri::normalise_root(&root.0)
                .map_err(|r| Props::invalid("zkLedgersRootPath", &root.0, &root.1, r))?;
            Some(
                MetadataServiceUri::from_zk_servers(&v, &root.0)
                    .map_err(|r| Props::invalid("zkServers", &v, &origin, r))?,
            )
        } else {
            return Err(ConfigError::Unsupported {
                key: "metadataServiceUri".into(),
                reason: "neither metadataServiceUri nor zkServers is set; set one, or run with --standalone".into(),
            });
        };

        // ---- network ----
        let allow_ephemeral_ports = p.bool("allowEphemeralPorts", false)?;
        let bookie_port = p.port("bookiePort", 3181)?;
        if bookie_port == 0 && !allow_ephemeral_ports {
            let origin = p
                .values
                .get("bookiePort")
                .map(|(_, o)| o.clone())
                .unwrap_or_default();
            return Err(Props::invalid(
                "bookiePort",
                "0",
                &origin,
                "port 0 needs allowEphemeralPorts=true",
            ));
        }
        let netty_max_frame_size_bytes =
            p.int("nettyMaxFrameSizeBytes", 5_242_880, 1024, i32::MAX as i64)? as u32;
        let opt_limit = |n: u32| if n == 0 { None } else { Some(n) };

        // ---- directories ----
        let journal_dirs = match p.dirs("journalDirectories")? {
            Some(d) => {
                p.used.insert("journalDirectory".into());
                d
            }
            None => p
                .dirs("journalDirectory")?
                .unwrap_or_else(|| vec![PathBuf::from("/tmp/bk-txn")]),
        };
        let ledger_dirs = p
            .dirs("ledgerDirectories")?
            .unwrap_or_else(|| vec![PathBuf::from("/tmp/bk-data")]);
        let index_dirs = p.dirs("indexDirectories")?;

        // ---- journal ----
        let journal_alignment_size_bytes = p.u64_min("journalAlignmentSize", 512, 512)?;
        if journal_alignment_size_bytes % 512 != 0 {
            let (v, o) = p
                .values
                .get("journalAlignmentSize")
                .cloned()
                .unwrap_or_default();
            return Err(Props::invalid(
                "journalAlignmentSize",
                &v,
                &o,
                "must be a multiple of 512",
            ));
        }
        let journal_pre_alloc_size_bytes = p.size("journalPreAllocSizeMB", 16, MIB, 1)?;
        if journal_pre_alloc_size_bytes % journal_alignment_size_bytes != 0 {
            let (v, o) = p
                .values
                .get("journalPreAllocSizeMB")
                .cloned()
                .unwrap_or_default();
            return Err(Props::invalid(
                "journalPreAllocSizeMB",
                &v,
                &o,
                format!(
                    "must be a multiple of journalAlignmentSize ({journal_alignment_size_bytes})"
                ),
            ));
        }
        let buffered_entries = p.u64_min("journalBufferedEntriesThreshold", 0, 0)?;
        let buffered_entries = if buffered_entries == 0 {
            // journalMaxGroupedEntriesToCommit is not a Java key; accepted as an alias.
            p.u64_min("journalMaxGroupedEntriesToCommit", 0, 0)?
        } else {
            p.used.insert("journalMaxGroupedEntriesToCommit".into());
            buffered_entries
        };
        let journal_max_memory = p.u64_min("journalMaxMemorySizeMb", 0, 0)?;

        // ---- ledger storage ----
        let entry_log_size_limit_bytes = p.int("logSizeLimit", 1 << 30, 1 << 20, 1 << 30)? as u64;
        let cache_default = default_cache_bytes() / MIB;
        let read_ahead_batch_bytes =
            p.int("dbStorage_readAheadCacheBatchBytesSize", -1, -1, i64::MAX)?;
        let flush_entrylog_bytes = p.u64_min("flushEntrylogBytes", 0, 0)?;

        // ---- GC ----
        let compaction_rate = p.u64_min("compactionRate", 1000, 1)?;
        // Java: a threshold <= 0 or an interval <= 0 disables that compaction; a threshold
        // above 1 is invalid.
        let minor_compaction_threshold =
            p.fraction("minorCompactionThreshold", 0.2, f64::MIN, 1.0, false)?;
        let major_compaction_threshold =
            p.fraction("majorCompactionThreshold", 0.8, f64::MIN, 1.0, false)?;
        let enabled_interval = |secs: i64, threshold: f64| {
            if secs <= 0 || threshold <= 0.0 {
                None
            } else {
                Some(Duration::from_secs(secs as u64))
            }
        };
        let minor_compaction_interval = enabled_interval(
            p.int("minorCompactionInterval", 3600, i64::MIN, i64::MAX)?,
            minor_compaction_threshold,
        );
        let major_compaction_interval = enabled_interval(
            p.int("majorCompactionInterval", 86400, i64::MIN, i64::MAX)?,
            major_compaction_threshold,
        );
        if let (Some(minor), Some(major)) = (minor_compaction_interval, major_compaction_interval) {
            if minor >= major || minor_compaction_threshold >= major_compaction_threshold {
                let (v, o) = p
                    .values
                    .get("minorCompactionThreshold")
                    .cloned()
                    .unwrap_or_default();
                return Err(Props::invalid(
                    "minorCompactionThreshold",
                    &v,
                    &o,
                    "minor compaction must have a smaller threshold and a shorter interval than major compaction",
                ));
            }
        }
        let ms_opt = |v: i64| {
            if v < 0 {
                None
            } else {
                Some(Duration::from_millis(v as u64))
            }
        };
        let minor_max = ms_opt(p.int("minorCompactionMaxTimeMillis", -1, -1, i64::MAX)?);
        let major_max = ms_opt(p.int("majorCompactionMaxTimeMillis", -1, -1, i64::MAX)?);

        // ---- disks ----
        let disk_usage_threshold = p.fraction("diskUsageThreshold", 0.95, 0.0, 1.0, true)?;
        let disk_usage_warn_threshold =
            p.fraction("diskUsageWarnThreshold", 0.90, 0.0, 1.0, true)?;
        if disk_usage_warn_threshold > disk_usage_threshold {
            let (v, o) = p
                .values
                .get("diskUsageWarnThreshold")
                .cloned()
                .unwrap_or_default();
            return Err(Props::invalid(
                "diskUsageWarnThreshold",
                &v,
                &o,
                "must not exceed diskUsageThreshold",
            ));
        }
        let disk_usage_lwm_threshold = p.fraction(
            "diskUsageLwmThreshold",
            disk_usage_threshold,
            0.0,
            1.0,
            true,
        )?;
        if disk_usage_lwm_threshold > disk_usage_threshold {
            let (v, o) = p
                .values
                .get("diskUsageLwmThreshold")
                .cloned()
                .unwrap_or_default();
            return Err(Props::invalid(
                "diskUsageLwmThreshold",
                &v,
                &o,
                "must not exceed diskUsageThreshold",
            ));
        }
        let min_entry_log = p.u64_min(
            "minUsableSizeForEntryLogCreation",
            entry_log_size_limit_bytes,
            0,
        )?;

        Ok(BookieConfig {
            standalone,
            metadata_service,
            zk_timeout,
            bookie_port,
            listening_interface: p.string("listeningInterface"),
            advertised_address: p.string("advertisedAddress"),
            use_host_name_as_bookie_id: p.bool("useHostNameAsBookieID", false)?,
            use_short_host_name: p.bool("useShortHostName", false)?,
            bookie_id: p.string("bookieId"),
            allow_loopback: p.bool("allowLoopback", false)?,
            allow_ephemeral_ports,
            server_tcp_no_delay: p.bool("serverTcpNoDelay", true)?,
            server_sock_keepalive: p.bool("serverSockKeepalive", true)?,
            netty_max_frame_size_bytes,
            max_pending_add_requests_per_thread: p.u32_min(
                "maxPendingAddRequestsPerThread",
                10_000,
                1,
            )?,
            max_pending_read_requests_per_thread: p.u32_min(
                "maxPendingReadRequestsPerThread",
                10_000,
                1,
            )?,
            max_adds_in_progress_limit: opt_limit(p.u32_min("maxAddsInProgressLimit", 0, 0)?),
            max_reads_in_progress_limit: opt_limit(p.u32_min("maxReadsInProgressLimit", 0, 0)?),
            num_add_worker_threads: p.u32_min("numAddWorkerThreads", 1, 0)?,
            num_read_worker_threads: p.u32_min("numReadWorkerThreads", 8, 0)?,
            max_batch_read_size_bytes: p.u64_min("maxBatchReadSize", 5_242_880, 1)?,
            journal_dirs,
            ledger_dirs,
            index_dirs,
            allow_storage_expansion: p.bool("allowStorageExpansion", false)?,
            journal_format_version_to_write: p.int("journalFormatVersionToWrite", 6, 1, 6)? as u32,
            journal_max_size_bytes: p.size("journalMaxSizeMB", 2048, MIB, 1)?,
            journal_max_backups: p.u32_min("journalMaxBackups", 5, 0)?,
            journal_pre_alloc_size_bytes,
            journal_write_buffer_size_bytes: p.size("journalWriteBufferSizeKB", 64, 1024, 1)?,
            journal_remove_from_page_cache: p.bool("journalRemoveFromPageCache", true)?,
            journal_write_data: p.bool("journalWriteData", true)?,
            journal_sync_data: p.bool("journalSyncData", true)?,
            journal_adaptive_group_writes: p.bool("journalAdaptiveGroupWrites", true)?,
            journal_max_group_wait: p.millis("journalMaxGroupWaitMSec", 2)?,
            journal_keys_set: JournalKeysSet {
                max_group_wait: p.values.contains_key("journalMaxGroupWaitMSec"),
                max_size: p.values.contains_key("journalMaxSizeMB"),
                max_backups: p.values.contains_key("journalMaxBackups"),
            },
            journal_buffered_writes_threshold_bytes: p.u64_min(
                "journalBufferedWritesThreshold",
                524_288,
                0,
            )?,
            journal_buffered_entries_threshold: if buffered_entries == 0 {
                None
            } else {
                Some(buffered_entries)
            },
            journal_flush_when_queue_empty: p.bool("journalFlushWhenQueueEmpty", false)?,
            journal_alignment_size_bytes,
            journal_queue_size: p.u32_min("journalQueueSize", 10_000, 1)?,
            journal_max_memory_size_bytes: if journal_max_memory == 0 {
                None
            } else {
                Some(journal_max_memory.saturating_mul(MIB))
            },
            journal_page_cache_flush_interval: p
                .millis("journalPageCacheFlushIntervalMSec", 1000)?,
            journal_reuse_files: p.bool("journalReuseFiles", false)?,
            skip_replay_journal_invalid_record: p.bool("skipReplayJournalInvalidRecord", false)?,
            ledger_storage_class: p.string_or(
                "ledgerStorageClass",
                "org.apache.bookkeeper.bookie.SortedLedgerStorage",
            ),
            write_cache_max_size_bytes: p.size(
                "dbStorage_writeCacheMaxSizeMb",
                cache_default,
                MIB,
                1,
            )?,
            read_ahead_cache_max_size_bytes: p.size(
                "dbStorage_readAheadCacheMaxSizeMb",
                cache_default,
                MIB,
                1,
            )?,
            read_ahead_cache_batch_size: p.u32_min("dbStorage_readAheadCacheBatchSize", 100, 1)?,
            read_ahead_cache_batch_bytes: if read_ahead_batch_bytes <= 0 {
                None
            } else {
                Some(read_ahead_batch_bytes as u64)
            },
            max_throttle_time: p.millis("dbStorage_maxThrottleTimeMs", 10_000)?,
            entry_log_size_limit_bytes,
            entry_log_file_preallocation_enabled: p
                .bool("entryLogFilePreallocationEnabled", true)?,
            flush_interval: Duration::from_millis(p.u64_min("flushInterval", 10_000, 1)?),
            flush_entrylog_bytes: if flush_entrylog_bytes == 0 {
                None
            } else {
                Some(flush_entrylog_bytes)
            },
            read_buffer_size_bytes: p.u64_min("readBufferSizeBytes", 512, 1)?,
            write_buffer_size_bytes: p.u64_min("writeBufferSizeBytes", 65_536, 1)?,
            gc_wait_time: Duration::from_millis(p.u64_min("gcWaitTime", 600_000, 1)?),
            gc_overreplicated_ledger_wait_time: p
                .millis("gcOverreplicatedLedgerWaitTime", 86_400_000)?,
            verify_metadata_on_gc: p.bool("verifyMetadataOnGC", false)?,
            minor_compaction_threshold,
            minor_compaction_interval,
            major_compaction_threshold,
            major_compaction_interval,
            minor_compaction_max_time: minor_max,
            major_compaction_max_time: major_max,
            compaction_rate_by_entries: p.u64_min("compactionRateByEntries", compaction_rate, 1)?,
            compaction_rate_by_bytes: p.u64_min("compactionRateByBytes", 1_000_000, 1)?,
            is_throttle_by_bytes: p.bool("isThrottleByBytes", false)?,
            compaction_max_outstanding_requests: p.u64_min(
                "compactionMaxOutstandingRequests",
                100_000,
                1,
            )?,
            force_allow_compaction: p.bool("forceAllowCompaction", false)?,
            is_force_gc_allow_when_no_space: p.bool("isForceGCAllowWhenNoSpace", false)?,
            read_only_mode_enabled: p.bool("readOnlyModeEnabled", true)?,
            read_only_mode_on_any_disk_full_enabled: p
                .bool("readOnlyModeOnAnyDiskFullEnabled", true)?,
            force_read_only_bookie: p.bool("forceReadOnlyBookie", false)?,
            persist_bookie_status_enabled: p.bool("persistBookieStatusEnabled", false)?,
            disk_usage_threshold,
            disk_usage_warn_threshold,
            disk_usage_lwm_threshold,
            disk_check_interval: Duration::from_millis(p.u64_min(
                "diskCheckInterval",
                10_000,
                1,
            )?),
            min_usable_size_for_index_file_creation_bytes: p.u64_min(
                "minUsableSizeForIndexFileCreation",
                104_857_600,
                0,
            )?,
            min_usable_size_for_entry_log_creation_bytes: min_entry_log,
            min_usable_size_for_high_priority_writes_bytes: p.u64_min(
                "minUsableSizeForHighPriorityWrites",
                min_entry_log,
                0,
            )?,
            http_server_enabled: p.bool("httpServerEnabled", false)?,
            http_server_port: p.port("httpServerPort", 8080)?,
            http_server_host: p.string_or("httpServerHost", "0.0.0.0"),
            enable_statistics: p.bool("enableStatistics", true)?,
            prometheus_stats_http_enable: p.bool("prometheusStatsHttpEnable", true)?,
            prometheus_stats_http_address: p.string_or("prometheusStatsHttpAddress", "0.0.0.0"),
            prometheus_stats_http_port: p.port("prometheusStatsHttpPort", 8000)?,
        })
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
mod tests {
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
        assert_eq!(c.netty_max_frame_size_bytes, 5_242_880);
        assert_eq!(c.zk_timeout, Duration::from_millis(10_000));
        assert_eq!(c.journal_format_version_to_write, 6);
        assert_eq!(c.journal_max_group_wait, Duration::from_millis(2));
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
        assert!(c.enable_statistics && !c.http_server_enabled);
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
            vec![
                "numHighPriorityWorkerThreads".to_string(),
                "statsProviderClass".to_string()
            ]
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
            &format!("{ZK}tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory\n"),
            &[],
        );
        assert!(e.contains("tlsProviderFactoryClass"), "{e}");
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
        assert!(
            r.unknown_keys.is_empty() && r.ignored_keys.is_empty(),
            "{r:?}"
        );
        assert_eq!(c.max_adds_in_progress_limit, Some(100));
        assert_eq!(c.journal_buffered_entries_threshold, Some(50));
        assert_eq!(c.write_cache_max_size_bytes, 64 << 20);
        assert_eq!(c.read_ahead_cache_batch_bytes, None);
        assert_eq!(c.minor_compaction_max_time, None);
        assert_eq!(c.major_compaction_max_time, Some(Duration::from_secs(2)));
        assert_eq!(c.journal_max_size_bytes, 1 << 20);
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
            format!("{ZK}typoKey=1\nserverNumIOThreads=4\ntypoKey=2\n"),
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
        assert!(log.contains("serverNumIOThreads"));
        assert!(
            log.contains("set twice"),
            "duplicate keys are reported: {log}"
        );
    }
}

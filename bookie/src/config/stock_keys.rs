//! `stock_keys`: the one table that says what every stock BookKeeper server key does in
//! bookie-rs: honoured (and how), no effect (and why), or refused (and why). It is the
//! source of docs/config.md §5 and of the start-up line naming each key that is set but has
//! no effect.
//!
//! Guarantees (tests in `config/key_table_tests.rs`):
//! * every key of the stock `bk_server.conf` of BookKeeper 4.17.3 (the list in
//!   `bk_server_4_17_3.keys`, with its source) is in this table, so a stock key can never be
//!   silently ignored;
//! * every key a section of `sections.rs` reads is in this table, and every key marked
//!   [`KeyEffect::Honoured`] is read by a section;
//! * docs/config.md §5 lists every key of this table with the same effect;
//! * an entry ending in `*` covers every key with that prefix (`dbStorage_rocksDB_*`).
//!
//! Keys not in the table and read by no section are reported as unknown (typos, other
//! products' keys).

/// What a stock key does in bookie-rs. The text is one line: how it is honoured, why it
/// has no effect, or why it is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEffect {
    /// Read by `sections` and acted on.
    Honoured(&'static str),
    /// Accepted and validated where it has a type, but changes nothing; named at start-up
    /// when set.
    NoEffect(&'static str),
    /// Fails start-up when set (or set to the value named): running without the feature
    /// would silently downgrade security.
    Refused(&'static str),
}

impl KeyEffect {
    /// "honoured", "no effect" or "refused" (the column of docs/config.md §5).
    pub fn kind(self) -> &'static str {
        match self {
            KeyEffect::Honoured(_) => "honoured",
            KeyEffect::NoEffect(_) => "no effect",
            KeyEffect::Refused(_) => "refused",
        }
    }

    /// The one-line how / why.
    pub fn text(self) -> &'static str {
        match self {
            KeyEffect::Honoured(t) | KeyEffect::NoEffect(t) | KeyEffect::Refused(t) => t,
        }
    }
}

use KeyEffect::{Honoured as H, NoEffect as N, Refused as R};

const TLS_REFRESH: &str = "> 0: every this many seconds the certificate, key, trust and password files are read again; when one changed the config is rebuilt, checked as at start-up and used by new connections; a failed rebuild is logged and the old one kept; 0 (default): off";
const AUTORECOVERY: &str = "an auto-recovery (auditor / replication worker) option: bookie-rs does not embed auto-recovery; run Java's AutoRecoveryMain beside it";
const CLIENT: &str = "a BookKeeper client option (of Java's embedded auto-recovery and tools): the bookie itself sends no client requests";
const STREAM: &str = "a stream storage (table service) option: bookie-rs has no stream storage";
const NO_ROCKSDB: &str = "bookie-rs has no RocksDB: the entry index lives in the segment footers";
const INDEX_FILES: &str = "an InterleavedLedgerStorage index-file option: bookie-rs has no index files (the entry index lives in the segment footers)";
const SKIPLIST: &str = "a SortedLedgerStorage memtable option: adds are buffered in the write cache (dbStorage_writeCacheMaxSizeMb)";
const ENTRY_LOG_PER_LEDGER: &str = "used only with entryLogPerLedgerEnabled, which has no effect";
const DIRECT_IO_LOGGER: &str = "a buffer of Java's direct-I/O entry logger: bookie-rs's entry log always uses O_DIRECT, with the caches sized by dbStorage_writeCacheMaxSizeMb and dbStorage_readAheadCacheMaxSizeMb";
const CODAHALE: &str =
    "a Codahale stats provider option: bookie-rs exports Prometheus metrics only";
const NETTY_ALLOCATOR: &str = "a Netty ByteBuf allocator option: bookie-rs allocates with jemalloc, within the bound of docs/memory.md §1";
const CLASS_LOADING: &str = "Java class loading: the ledger manager follows metadataServiceUri's scheme (hierarchical, longhierarchical, flat)";

/// Every stock key (and the few non-stock keys bookie-rs reads), in the order of
/// docs/config.md §1.
pub const STOCK_KEYS: &[(&str, KeyEffect)] = &[
    // ---- network and server (docs/config.md §1.1) ----
    ("bookiePort", H("the port the bookie listens on and registers in its id")),
    ("listeningInterface", H("the address the bookie binds (and the host of its id when advertisedAddress is unset)")),
    ("advertisedAddress", H("the host of the bookie id")),
    ("useHostNameAsBookieID", H("the bookie id uses the host name instead of the IP address")),
    ("useShortHostName", H("with useHostNameAsBookieID, the host name without its domain")),
    ("bookieId", H("a custom bookie id, used verbatim")),
    ("allowLoopback", H("a loopback address as bookie id is refused unless true")),
    ("allowEphemeralPorts", H("bookiePort=0 is refused unless true")),
    ("serverTcpNoDelay", H("TCP_NODELAY on every accepted connection")),
    ("serverSockKeepalive", H("SO_KEEPALIVE on every accepted connection")),
    ("serverTcpLinger", N("SO_LINGER is left at the OS default: connections close gracefully")),
    ("serverNumIOThreads", N("connections are served by the async runtime's worker threads (one per core), not a Netty event-loop group")),
    ("nettyMaxFrameSizeBytes", H("the largest frame accepted (never below Pulsar's 5253120; docs/config.md §1.1) and the floor of a journal segment")),
    ("byteBufAllocatorSizeInitial", N("Netty's adaptive receive buffer: each connection reads into its own buffer, grown to the frame being read")),
    ("byteBufAllocatorSizeMin", N("Netty's adaptive receive buffer: each connection reads into its own buffer, grown to the frame being read")),
    ("byteBufAllocatorSizeMax", N("Netty's adaptive receive buffer: each connection reads into its own buffer, grown to the frame being read")),
    ("serverWriteBufferLowWaterMark", N("Netty's channel write watermarks: queued responses are bounded by built-in send budgets (16 MiB a connection, 64 MiB in all)")),
    ("serverWriteBufferHighWaterMark", N("Netty's channel write watermarks: queued responses are bounded by built-in send budgets (16 MiB a connection, 64 MiB in all)")),
    ("numAddWorkerThreads", N("adds run on the async runtime, there is no add thread pool; maxPendingAddRequestsPerThread bounds them per connection")),
    ("numReadWorkerThreads", N("reads run on the async runtime and the entry log's 32 reader threads, there is no read thread pool; maxPendingReadRequestsPerThread bounds them per connection")),
    ("numHighPriorityWorkerThreads", N("there is no separate high-priority pool: fencing and recovery requests run on the async runtime like the others")),
    ("numLongPollWorkerThreads", N("there is no long-poll thread pool: requests run on the async runtime")),
    ("maxPendingAddRequestsPerThread", H("adds in progress per connection; at the limit the connection is not read until one is answered (Java: per add thread)")),
    ("maxPendingReadRequestsPerThread", H("reads in progress per connection; at the limit the connection is not read until one is answered (Java: per read thread)")),
    ("maxAddsInProgressLimit", H("adds in progress in the whole bookie; at the limit no connection is read for adds; 0 (Java: no limit) = the built-in bound")),
    ("maxReadsInProgressLimit", H("reads in progress in the whole bookie; at the limit no connection is read for reads; 0 (Java: no limit) = the built-in bound")),
    ("readWorkerThreadsThrottlingEnabled", N("there is no read thread pool to throttle: reads are bounded by maxReadsInProgressLimit and per connection")),
    ("requestTimerTickDurationMs", N("the long-poll timer wheel of Java: bookie-rs has no such timer")),
    ("requestTimerNumTicks", N("the long-poll timer wheel of Java: bookie-rs has no such timer")),
    ("waitTimeoutOnResponseBackpressureMs", N("a connection over its send budget makes its requests wait; it is never closed on a timeout")),
    ("maxBatchReadSize", H("the largest answer to a batch read")),
    ("bookieAuthProviderFactoryClass", H("org.apache.bookkeeper.tls.BookieAuthZFactory: a client is authorized by the role in its TLS certificate (authorizedRoles; docs/tls.md §2); any other class, SASL included, is refused at start-up naming it")),
    ("tlsProviderFactoryClass", H("org.apache.bookkeeper.tls.TLSContextFactory: START_TLS on the bookie port, served by rustls (docs/tls.md §2); present even empty: the \"tls\" extension is advertised, as Java does; any other class is refused at start-up naming it")),
    ("tlsProvider", N("OpenSSL or JDK: bookie-rs always serves TLS with rustls (ring)")),
    ("tlsClientAuthentication", H("true: a client certificate is required and verified against the trust store; false: none is asked for and the trust store keys are ignored, as in Java")),
    ("tlsKeyStoreType", H("PEM, JKS (default) or PKCS12, case-sensitive as in Java; store files are sniffed, so a PKCS12 file loads under JKS and a JKS file under PKCS12 as on JDK 17; JKS is read by bookie-rs's own reader (docs/tls.md §2.2); a JCEKS file is refused with the keytool command that converts it")),
    ("tlsKeyStore", H("the PEM private key (PKCS#8, encrypted PKCS#8, PKCS#1 or SEC1) or the PKCS12 key store (its first private key)")),
    ("tlsKeyStorePasswordPath", H("the file holding the key or store password: trimmed for stores; for a PEM key tried as it is, then trimmed")),
    ("tlsTrustStoreType", H("as tlsKeyStoreType; a PKCS12 trust store counts only entries carrying Java's trusted-certificate attribute, as Java does")),
    ("tlsTrustStore", H("the CA certificates client certificates are verified against (with tlsClientAuthentication=true)")),
    ("tlsTrustStorePasswordPath", H("the trust store's password file (trimmed; ignored for PEM, as in Java)")),
    ("tlsCertificatePath", H("the PEM certificate chain (leaf first) of a PEM key; start-up checks it is X.509 v3, valid now and matches the key")),
    ("tlsEnabledCipherSuites", H("only the first listed suite is used, as Java's getString (the rest is named at start-up); IANA, Java or OpenSSL names; a suite rustls lacks fails start-up naming the key")),
    ("tlsEnabledProtocols", H("only the first listed protocol is used, as Java's getString (the rest is named at start-up); TLSv1.2 or TLSv1.3; older ones fail start-up naming the key")),
    ("tlsCertFilesRefreshDurationSeconds", H(TLS_REFRESH)),
    ("authorizedRoles", H("with BookieAuthZFactory: the roles authorized (split on ',', trimmed); an empty list or an empty element fails start-up, as in Java")),
    ("permittedStartupUsers", N("the OS user is not checked: run the binary as the intended user (e.g. systemd User=)")),
    ("disableServerSocketBind", N("the bookie always listens on bookiePort (there is no local transport to use instead)")),
    ("enableLocalTransport", N("there is no in-process local transport")),
    ("enableBusyWait", N("there are no busy-waiting event loops")),
    ("allocatorPoolingPolicy", N(NETTY_ALLOCATOR)),
    ("allocatorPoolingConcurrency", N(NETTY_ALLOCATOR)),
    ("allocatorOutOfMemoryPolicy", N(NETTY_ALLOCATOR)),
    ("allocatorLeakDetectionPolicy", N(NETTY_ALLOCATOR)),
    ("bookieAddressResolverEnabled", N(CLIENT)),
    // ---- directories (docs/config.md §1.2) ----
    ("journalDirectories", H("the journal directories (one journal each)")),
    ("journalDirectory", H("the journal directory when journalDirectories is unset")),
    ("ledgerDirectories", H("the entry log directories")),
    ("indexDirectories", H("recorded in the cookie as Java does; holds no files (the entry index lives in the segment footers)")),
    ("allowMultipleDirsUnderSameDiskPartition", N("not checked: directories on one partition are accepted, as with Java's default true")),
    ("allowStorageExpansion", H("new ledger directories are accepted against the cookie and the cookie is updated")),
    // ---- journal (docs/config.md §1.3) ----
    ("journalFormatVersionToWrite", H("6 journals explicit-LAC records, 5 and below do not (the segment format is bookie-rs's own either way)")),
    ("journalMaxSizeMB", H("when set, the journal segment size, capped at 256 MiB (unset: 128 MiB; Java's 2048 is not applied)")),
    ("journalMaxBackups", H("when set, the free journal segments kept for reuse (unset: as many as the latest checkpoint freed, 2 to 64; Java's 5 is not applied)")),
    ("journalPreAllocSizeMB", H("the shortest journal segment made on a full journal disk (at least one frame plus 1 MiB)")),
    ("journalWriteBufferSizeKB", N("a group is written in one aligned write of its own size: there is no write buffer to size")),
    ("journalRemoveFromPageCache", N("journal segments are written with O_DIRECT, so they never enter the page cache")),
    ("journalWriteData", H("false: adds are acknowledged without a journal write (durable at the next checkpoint), as in Java")),
    ("journalSyncData", N("every add is fsynced before its acknowledgement; acknowledging before fsync is not offered")),
    ("journalAdaptiveGroupWrites", N("group commit is always adaptive: a group is written as soon as the previous one is durable")),
    ("journalMaxGroupWaitMSec", H("when set > 0 and journalFlushWhenQueueEmpty=false, the longest a group waits for more records (unset: no wait; Java's 2 ms is not applied)")),
    ("journalBufferedWritesThreshold", H("the most record bytes in one group (at least 4096)")),
    ("journalBufferedEntriesThreshold", H("the most records in one group (0 = no limit)")),
    ("journalMaxGroupedEntriesToCommit", H("not a stock key: an alias of journalBufferedEntriesThreshold")),
    ("journalFlushWhenQueueEmpty", H("true: no group wait (journalMaxGroupWaitMSec is not applied)")),
    ("journalAlignmentSize", N("validated only: records are padded to 4096-byte sectors whatever the value")),
    ("journalQueueSize", H("records queued to the journal before adds wait")),
    ("journalMaxMemorySizeMb", H("the bytes of records in flight in a journal (at least 8 MiB)")),
    ("journalPageCacheFlushIntervalMSec", N("only meaningful with journalSyncData=false, which has no effect")),
    ("journalReuseFiles", N("journal segments are always recycled (the free ones kept: see journalMaxBackups)")),
    ("numJournalCallbackThreads", N("acknowledgements are sent from the async runtime: there is no callback pool")),
    ("skipReplayJournalInvalidRecord", N("replay cuts a torn tail and fails start-up on corruption before it: records are never skipped")),
    ("journalChannelProvider", N("the journal writes through bookie-rs's own disk layer (io_uring, O_DIRECT)")),
    // ---- ledger storage (docs/config.md §1.4) ----
    ("ledgerStorageClass", N("informative only: the storage is always bookie-rs's journal and segment entry log (DbLedgerStorage's behaviour)")),
    ("dbStorage_writeCacheMaxSizeMb", H("the write cache (two halves, one flushed while the other takes adds)")),
    ("dbStorage_readAheadCacheMaxSizeMb", H("the read-ahead cache")),
    ("dbStorage_readAheadCacheBatchSize", H("entries read ahead after a sequential miss")),
    ("dbStorage_readAheadCacheBatchBytesSize", H("when > 0, the bytes read ahead at most per miss (unset or -1: 1 MiB)")),
    ("dbStorage_maxThrottleTimeMs", H("how long an add waits for write-cache space before it is refused")),
    ("dbStorage_directIOEntryLogger", N("the entry log always uses O_DIRECT where the file system supports it")),
    ("dbStorage_directIOEntryLoggerTotalWriteBufferSizeMB", N(DIRECT_IO_LOGGER)),
    ("dbStorage_directIOEntryLoggerTotalReadBufferSizeMB", N(DIRECT_IO_LOGGER)),
    ("dbStorage_directIOEntryLoggerReadBufferSizeMB", N(DIRECT_IO_LOGGER)),
    ("dbStorage_directIOEntryLoggerMaxFdCacheTimeSeconds", N(DIRECT_IO_LOGGER)),
    ("dbStorage_rocksDB_*", N("bookie-rs has no RocksDB (Java ignores these too since 4.15)")),
    ("defaultRocksdbConf", N(NO_ROCKSDB)),
    ("entryLocationRocksdbConf", N(NO_ROCKSDB)),
    ("ledgerMetadataRocksdbConf", N(NO_ROCKSDB)),
    ("logSizeLimit", H("the largest segment a flush writes (a larger write-cache half becomes several segments)")),
    ("entryLogFilePreallocationEnabled", N("a segment is written whole by one flush: there is no next file to preallocate")),
    ("flushInterval", H("the checkpoint period: write cache flushed, journal mark persisted (at least 100 ms); the periodic flush is paced to spare a shared device (ARCHITECTURE.md, \"Background and periodic flushes are paced\")")),
    ("flushEntrylogBytes", N("segments are written with O_DIRECT and made durable once, at the end of the flush: there is no page-cache backlog to flush early")),
    ("readBufferSizeBytes", N("a buffer of Java's BufferedChannel: segment reads are direct")),
    ("writeBufferSizeBytes", N("a buffer of Java's BufferedChannel: segment writes are direct")),
    ("entryLogPerLedgerEnabled", N("ledgers share segments, as with Java's default false")),
    ("entryLogPerLedgerCounterLimitsMultFactor", N(ENTRY_LOG_PER_LEDGER)),
    ("entrylogMapAccessExpiryTimeInSeconds", N(ENTRY_LOG_PER_LEDGER)),
    ("maximumNumberOfActiveEntryLogs", N(ENTRY_LOG_PER_LEDGER)),
    ("fileInfoFormatVersionToWrite", N(INDEX_FILES)),
    ("fileInfoCacheInitialCapacity", N(INDEX_FILES)),
    ("fileInfoMaxIdleTime", N(INDEX_FILES)),
    ("openFileLimit", N(INDEX_FILES)),
    ("pageLimit", N(INDEX_FILES)),
    ("pageSize", N(INDEX_FILES)),
    ("sortedLedgerStorageEnabled", N(SKIPLIST)),
    ("skipListSizeLimit", N(SKIPLIST)),
    ("skipListArenaChunkSize", N(SKIPLIST)),
    ("skipListArenaMaxAllocSize", N(SKIPLIST)),
    ("numOfMemtableFlushThreads", N(SKIPLIST)),
    // ---- GC and compaction (docs/config.md §1.5) ----
    ("gcWaitTime", H("the period of a GC round (due compactions, then deletion of ledgers without metadata)")),
    ("gcOverreplicatedLedgerWaitTime", H("the period of the over-replication check (ledgers whose ensembles no longer hold this bookie are deleted)")),
    ("gcOverreplicatedLedgerMaxConcurrentRequests", H("bounds the over-replication check's metadata reads in flight and locks held at once")),
    ("gcMetadataOpRateLimit", H("paces the over-replication check's metadata reads (per second)")),
    ("verifyMetadataOnGC", H("GC re-reads the metadata of a ledger missing from the listing and deletes it only if it is gone or lists this bookie in no ensemble")),
    ("minorCompactionThreshold", H("segments whose live fraction is below it are rewritten by minor compaction (<= 0: off)")),
    ("minorCompactionInterval", H("the period of minor compaction, in seconds (<= 0: off)")),
    ("majorCompactionThreshold", H("segments whose live fraction is below it are rewritten by major compaction (<= 0: off)")),
    ("majorCompactionInterval", H("the period of major compaction, in seconds (<= 0: off)")),
    ("minorCompactionMaxTimeMillis", H("a minor compaction pass starts no further segment after this time (<= 0: unbounded), as Java")),
    ("majorCompactionMaxTimeMillis", H("a major compaction pass starts no further segment after this time (<= 0: unbounded), as Java")),
    ("compactionRate", H("the default of compactionRateByEntries")),
    ("compactionRateByEntries", H("entries copied per second by compaction, unless isThrottleByBytes=true")),
    ("compactionRateByBytes", H("bytes copied per second by compaction when isThrottleByBytes=true")),
    ("isThrottleByBytes", H("compaction is limited by compactionRateByBytes instead of compactionRateByEntries")),
    ("compactionMaxOutstandingRequests", N("Java's batch of index updates during compaction: a segment's index switches at once, after its copy is durable")),
    ("forceAllowCompaction", H("a forced GC round (PUT /api/v1/bookie/gc) also runs a compaction kind that is off (no interval), when its threshold is in (0, 1)")),
    ("isForceGCAllowWhenNoSpace", N("a full disk does not start an early GC or compaction round: they keep their schedule")),
    ("useTransactionalCompaction", N("compaction is always crash-safe: the new segment is durable before the index switches to it")),
    ("useTargetEntryLogSizeForGc", N("compaction picks segments by the live fraction of their own size, and merges small segments instead")),
    ("gcEntryLogMetadataCacheEnabled", N("segment metadata is kept in memory, read from the segment footers: there is no cache to persist")),
    ("gcEntryLogMetadataCachePath", N("segment metadata is kept in memory, read from the segment footers: there is no cache to persist")),
    ("entryLocationCompactionInterval", N(NO_ROCKSDB)),
    // ---- read-only mode and disks (docs/config.md §1.6) ----
    ("readOnlyModeEnabled", H("false: a full disk stops the bookie instead of making it read-only, and the admin API refuses read-only")),
    ("readOnlyModeOnAnyDiskFullEnabled", H("true: one full ledger directory makes the bookie read-only; false: only when all are full")),
    ("forceReadOnlyBookie", H("the bookie is read-only for the life of the process")),
    ("persistBookieStatusEnabled", H("a read-only state set through the admin API survives restart (current/BOOKIE_STATUS in every ledger directory, Java's format)")),
    ("diskUsageThreshold", H("a ledger directory above this used fraction is full")),
    ("diskUsageWarnThreshold", H("a ledger directory above this used fraction is logged as almost full")),
    ("diskUsageLwmThreshold", H("a full ledger directory is writable again below this used fraction")),
    ("diskCheckInterval", H("the period of the disk usage check")),
    ("minUsableSizeForIndexFileCreation", N("bookie-rs creates no index files")),
    ("minUsableSizeForEntryLogCreation", N("a new segment is cut to the room below diskUsageThreshold instead; only the default of minUsableSizeForHighPriorityWrites")),
    ("minUsableSizeForHighPriorityWrites", H("free space below which a read-only bookie no longer takes recovery adds (availableForHighPriorityWrites)")),
    // ---- metadata service (docs/config.md §1.7) ----
    ("metadataServiceUri", H("the ZooKeeper servers, ledgers root and ledger layout")),
    ("zkServers", H("the ZooKeeper servers when metadataServiceUri is unset")),
    ("zkLedgersRootPath", H("the ledgers root when metadataServiceUri is unset")),
    ("zkTimeout", H("the ZooKeeper session timeout")),
    ("zkRetryBackoffStartMs", N("the ZooKeeper client reconnects with its own backoff within zkTimeout")),
    ("zkRetryBackoffMaxMs", N("the ZooKeeper client reconnects with its own backoff within zkTimeout")),
    ("zkEnableSecurity", R("when true: bookie-rs has no ZooKeeper SASL login, which the CREATOR_ALL ACLs Java then sets need (without one Java's bookie fails too, with InvalidACL); running without them would leave the znodes open")),
    ("zkRequestRateLimit", N("ZooKeeper requests are not rate-limited")),
    ("ledgerManagerFactoryClass", N(CLASS_LOADING)),
    ("ledgerManagerType", N(CLASS_LOADING)),
    ("allowShadedLedgerManagerFactoryClass", N(CLASS_LOADING)),
    ("shadedLedgerManagerFactoryClassPrefix", N(CLASS_LOADING)),
    // ---- HTTP server and statistics (docs/config.md §1.8) ----
    ("httpServerEnabled", H("true: the admin API (and /metrics) on httpServerHost:httpServerPort")),
    ("httpServerPort", H("the admin API's port")),
    ("httpServerHost", H("the admin API's address")),
    ("httpServerClass", N("the HTTP server is built in")),
    ("httpServerTlsEnable", H("true: the admin API (and its /metrics) over HTTPS, always requiring a client certificate, as Java's Vert.x server; a bad store fails start-up naming the key (Java runs without its HTTP port then); the metrics-only listener stays plain, as Java's")),
    ("httpServerKeyStorePath", H("the admin port's key store: JKS or PKCS12, sniffed (a JCEKS file is refused with the keytool command that converts it)")),
    ("httpServerKeyStorePassword", H("the admin port's key store password (inline, not a file); also opens its trust store, as in Java")),
    ("httpServerTrustStorePath", H("the CA certificates the admin port verifies client certificates against (JKS or PKCS12: its trusted certificate entries and the certificates of its key entries, as Java's PKIX trust manager takes them; docs/tls.md §2.2)")),
    ("httpServerTrustStorePassword", N("never read, as in Java, whose getter returns httpServerKeyStorePassword: the trust store is opened with httpServerKeyStorePassword")),
    ("enableStatistics", H("false: no metrics are served (/metrics answers 500)")),
    ("statsProviderClass", H("metrics are exported only with org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider (or --metrics-port); another class is named at start-up as having no effect (docs/metrics.md §1)")),
    ("prometheusStatsHttpEnable", H("false: no metrics-only listener when httpServerEnabled=false")),
    ("prometheusStatsHttpAddress", H("the metrics-only listener's address (when httpServerEnabled=false)")),
    ("prometheusStatsHttpPort", H("the metrics-only listener's port (when httpServerEnabled=false)")),
    ("prometheusStatsLatencyRolloverSeconds", H("the op-stat summaries' quantile window in seconds (>= 1): quantiles cover the last closed window, the first closing 1 s after start (docs/metrics.md §1)")),
    ("exposeDefaultJVMMetrics", N("there is no JVM")),
    ("limitStatsLogging", N("the set of metrics is fixed")),
    ("enableTaskExecutionStats", N("there are no executor pools to time")),
    ("sanityCheckMetricsEnabled", N("the periodic in-bookie sanity check is not implemented")),
    ("codahaleStatsPrefix", N(CODAHALE)),
    ("codahaleStatsOutputFrequencySeconds", N(CODAHALE)),
    ("codahaleStatsGraphiteEndpoint", N(CODAHALE)),
    ("codahaleStatsCSVEndpoint", N(CODAHALE)),
    ("codahaleStatsSlf4jEndpoint", N(CODAHALE)),
    ("codahaleStatsJmxEndpoint", N(CODAHALE)),
    // ---- other (docs/config.md §1.9) ----
    ("bookieDeathWatchInterval", N("there is no death-watch thread: a fatal error stops the process directly")),
    ("autoRecoveryDaemonEnabled", N(AUTORECOVERY)),
    ("useV2WireProtocol", N(CLIENT)),
    ("dataIntegrityChecking", N("every segment entry and journal record is checksummed and checked on every read: there is no separate check")),
    ("localConsistencyCheckOnStartup", N("start-up replays the journal and reads every segment footer: there is no separate check")),
    ("localScrubInterval", H("> 0: every (0.5..1.5) × this many seconds a scrub pass reads every segment and checks its trailer, footer and every entry's CRC32C (docs/durability.md); 0: off")),
    ("localScrubRateLimit", H("entries per second a scrub pass checks (0 = no limit)")),
    ("localScrubRateLimitBytes", H("not a stock key: bytes per second a scrub pass reads (0 = no limit; the slower of the two limits holds)")),
    ("chaosEnabled", H("not a stock key: true wraps the storage disks in the fault-injecting chaos layer and serves /api/v1/chaos/faults (docs/chaos.md); false (default): no layer, no cost")),
    ("chaosFaultPlan", H("not a stock key: a JSON fault plan added at start-up (needs chaosEnabled=true; docs/chaos.md)")),
    ("chaosTestOnlyAckBeforeFdatasync", H("not a stock key: TEST ONLY, breaks durability: true runs the journal's write+fdatasync without the fdatasync, so adds are acknowledged before they are durable (to prove a loss check can fail); needs chaosEnabled=true; refused by a release build (docs/chaos.md)")),
    ("extraServerComponents", N("there are no Java server component plugins")),
    ("ignoreExtraServerComponentsStartupFailures", N("there are no Java server component plugins")),
    ("preserveMdcForTaskExecution", N("a Java logging (MDC) option")),
    ("lostBookieRecoveryDelay", N(AUTORECOVERY)),
    ("rereplicationEntryBatchSize", N(AUTORECOVERY)),
    ("auditorPeriodicCheckInterval", N(AUTORECOVERY)),
    ("auditorPeriodicBookieCheckInterval", N(AUTORECOVERY)),
    ("auditorLedgerVerificationPercentage", N(AUTORECOVERY)),
    ("auditorMaxNumberOfConcurrentOpenLedgerOperations", N(AUTORECOVERY)),
    ("auditorAcquireConcurrentOpenLedgerOperationsTimeOutMSec", N(AUTORECOVERY)),
    ("openLedgerRereplicationGracePeriod", N(AUTORECOVERY)),
    ("numEntriesInReplicationTaskBatch", N(AUTORECOVERY)),
    ("rwRereplicateBackoffMs", N(AUTORECOVERY)),
    ("storeSystemTimeAsLedgerUnderreplicatedMarkTime", N(AUTORECOVERY)),
    ("ensemblePlacementPolicy", N(CLIENT)),
    ("reppDnsResolverClass", N(CLIENT)),
    ("networkTopologyScriptFileName", N(CLIENT)),
    ("networkTopologyScriptNumberArgs", N(CLIENT)),
    ("minNumRacksPerWriteQuorum", N(CLIENT)),
    ("enforceMinNumRacksPerWriteQuorum", N(CLIENT)),
    ("enforceMinNumFaultDomainsForWrite", N(CLIENT)),
    ("stickyReadSEnabled", N(CLIENT)),
    ("reorderReadSequenceEnabled", N(CLIENT)),
    ("digestType", N(CLIENT)),
    ("passwd", N(CLIENT)),
    ("enableDigestTypeAutodetection", N(CLIENT)),
    ("dlog.bkcEnsembleSize", N("a DistributedLog option: bookie-rs has no DistributedLog")),
    ("dlog.bkcWriteQuorumSize", N("a DistributedLog option: bookie-rs has no DistributedLog")),
    ("dlog.bkcAckQuorumSize", N("a DistributedLog option: bookie-rs has no DistributedLog")),
    ("storageserver.grpc.port", N(STREAM)),
    ("storage.range.store.dirs", N(STREAM)),
    ("storage.serve.readonly.tables", N(STREAM)),
    ("storage.cluster.controller.schedule.interval.ms", N(STREAM)),
];

/// What `key` does in bookie-rs, if it is a key we know (exact entries first, then
/// `prefix*` entries).
pub fn effect_of(key: &str) -> Option<KeyEffect> {
    STOCK_KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .or_else(|| {
            STOCK_KEYS.iter().find(|(k, _)| {
                k.strip_suffix('*')
                    .is_some_and(|prefix| key.starts_with(prefix))
            })
        })
        .map(|(_, e)| *e)
}

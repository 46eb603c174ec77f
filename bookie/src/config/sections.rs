//! `sections`: the typed reading of the stock keys, one function per section of
//! `bk_server.conf` (metadata, network, directories, journal, ledger storage, GC and compaction,
//! disks, HTTP and statistics), assembled into a [`BookieConfig`] by [`from_props`].
//!
//! Owns every key's code default, unit, range and sentinel, and every rule that involves
//! several keys (compaction thresholds, disk thresholds, journal alignment, when the journal
//! group wait applies). Each key is read, validated and defaulted here and nowhere else; a field
//! holds the value in the type its consumer uses (`Option<Duration>`, bytes as `usize` for
//! memory), so `config::mapping` copies fields without converting them again.
//!
//! Decisions (see ARCHITECTURE.md):
//! * **Frame limit.** `nettyMaxFrameSizeBytes` defaults to 5,253,120 bytes (what Pulsar's
//!   bookkeeper.conf ships, and what Pulsar's broker client sends at most), not Java's
//!   5,242,880: a Pulsar chunk frame is 5,242,992 bytes or more, so Java's default closes the
//!   connection on Pulsar's largest frames. A configured value below 5,253,120 is raised to it
//!   with a one-line warning naming the key (refusing it would stop a stock Java
//!   `bk_server.conf` that spells out the Java default).
//! * **Greedy group commit by default.** `journalMaxGroupWaitMSec`, `journalMaxSizeMB` and
//!   `journalMaxBackups` apply only when the configuration sets them; their Java defaults
//!   (2 ms, 2 GiB, 5) are never applied. The group wait applies only when set > 0 and
//!   `journalFlushWhenQueueEmpty` is false, as in Java.

use std::path::PathBuf;
use std::time::Duration;

use bk_proto::frame::PULSAR_MAX_FRAME_BYTES;

use super::metadata_uri::{self, MetadataServiceUri};
use super::props::Props;
use super::{default_cache_bytes, BookieConfig, ConfigError};

const MIB: u64 = 1 << 20;

/// Reads every section from `p`. `standalone` comes from `--standalone`.
pub(crate) fn from_props(p: &mut Props, standalone: bool) -> Result<BookieConfig, ConfigError> {
    super::keys::refuse_insecure(p)?;
    let security = crate::tls::settings::read(p)?;
    let (metadata_service, zk_timeout) = metadata(p, standalone)?;
    let n = network(p)?;
    let d = directories(p)?;
    let j = journal(p)?;
    let s = ledger_storage(p)?;
    let g = gc(p)?;
    let k = disks(p, s.entry_log_size_limit_bytes)?;
    let h = http_and_stats(p)?;
    let (chaos_enabled, chaos_fault_plan, chaos_test_only_ack_before_fdatasync) = chaos(p)?;
    Ok(BookieConfig {
        standalone,
        metadata_service,
        zk_timeout,
        bookie_port: n.bookie_port,
        listening_interface: n.listening_interface,
        advertised_address: n.advertised_address,
        use_host_name_as_bookie_id: n.use_host_name_as_bookie_id,
        use_short_host_name: n.use_short_host_name,
        bookie_id: n.bookie_id,
        allow_loopback: n.allow_loopback,
        allow_ephemeral_ports: n.allow_ephemeral_ports,
        server_tcp_no_delay: n.server_tcp_no_delay,
        server_sock_keepalive: n.server_sock_keepalive,
        netty_max_frame_size_bytes: n.netty_max_frame_size_bytes,
        max_pending_add_requests_per_thread: n.max_pending_add_requests_per_thread,
        max_pending_read_requests_per_thread: n.max_pending_read_requests_per_thread,
        max_adds_in_progress_limit: n.max_adds_in_progress_limit,
        max_reads_in_progress_limit: n.max_reads_in_progress_limit,
        num_add_worker_threads: n.num_add_worker_threads,
        num_read_worker_threads: n.num_read_worker_threads,
        max_batch_read_size_bytes: n.max_batch_read_size_bytes,
        journal_dirs: d.journal_dirs,
        ledger_dirs: d.ledger_dirs,
        index_dirs: d.index_dirs,
        allow_storage_expansion: d.allow_storage_expansion,
        journal_format_version_to_write: j.journal_format_version_to_write,
        journal_max_size_bytes: j.journal_max_size_bytes,
        journal_max_backups: j.journal_max_backups,
        journal_pre_alloc_size_bytes: j.journal_pre_alloc_size_bytes,
        journal_write_buffer_size_bytes: j.journal_write_buffer_size_bytes,
        journal_remove_from_page_cache: j.journal_remove_from_page_cache,
        journal_write_data: j.journal_write_data,
        journal_sync_data: j.journal_sync_data,
        journal_adaptive_group_writes: j.journal_adaptive_group_writes,
        journal_max_group_wait: j.journal_max_group_wait,
        journal_buffered_writes_threshold_bytes: j.journal_buffered_writes_threshold_bytes,
        journal_buffered_entries_threshold: j.journal_buffered_entries_threshold,
        journal_flush_when_queue_empty: j.journal_flush_when_queue_empty,
        journal_alignment_size_bytes: j.journal_alignment_size_bytes,
        journal_queue_size: j.journal_queue_size,
        journal_max_memory_size_bytes: j.journal_max_memory_size_bytes,
        journal_page_cache_flush_interval: j.journal_page_cache_flush_interval,
        journal_reuse_files: j.journal_reuse_files,
        skip_replay_journal_invalid_record: j.skip_replay_journal_invalid_record,
        ledger_storage_class: s.ledger_storage_class,
        write_cache_max_size_bytes: s.write_cache_max_size_bytes,
        read_ahead_cache_max_size_bytes: s.read_ahead_cache_max_size_bytes,
        read_ahead_cache_batch_size: s.read_ahead_cache_batch_size,
        read_ahead_cache_batch_bytes: s.read_ahead_cache_batch_bytes,
        max_throttle_time: s.max_throttle_time,
        entry_log_size_limit_bytes: s.entry_log_size_limit_bytes,
        entry_log_file_preallocation_enabled: s.entry_log_file_preallocation_enabled,
        flush_interval: s.flush_interval,
        flush_entrylog_bytes: s.flush_entrylog_bytes,
        read_buffer_size_bytes: s.read_buffer_size_bytes,
        write_buffer_size_bytes: s.write_buffer_size_bytes,
        gc_wait_time: g.gc_wait_time,
        gc_overreplicated_ledger_wait_time: g.gc_overreplicated_ledger_wait_time,
        gc_overreplicated_ledger_max_concurrent_requests: g
            .gc_overreplicated_ledger_max_concurrent_requests,
        gc_metadata_op_rate_limit: g.gc_metadata_op_rate_limit,
        verify_metadata_on_gc: g.verify_metadata_on_gc,
        minor_compaction_threshold: g.minor_compaction_threshold,
        minor_compaction_interval: g.minor_compaction_interval,
        major_compaction_threshold: g.major_compaction_threshold,
        major_compaction_interval: g.major_compaction_interval,
        minor_compaction_max_time: g.minor_compaction_max_time,
        major_compaction_max_time: g.major_compaction_max_time,
        compaction_rate_by_entries: g.compaction_rate_by_entries,
        compaction_rate_by_bytes: g.compaction_rate_by_bytes,
        is_throttle_by_bytes: g.is_throttle_by_bytes,
        compaction_max_outstanding_requests: g.compaction_max_outstanding_requests,
        force_allow_compaction: g.force_allow_compaction,
        is_force_gc_allow_when_no_space: g.is_force_gc_allow_when_no_space,
        local_scrub_interval: g.local_scrub_interval,
        local_scrub_rate_limit: g.local_scrub_rate_limit,
        local_scrub_rate_limit_bytes: g.local_scrub_rate_limit_bytes,
        chaos_enabled,
        chaos_fault_plan,
        chaos_test_only_ack_before_fdatasync,
        read_only_mode_enabled: k.read_only_mode_enabled,
        read_only_mode_on_any_disk_full_enabled: k.read_only_mode_on_any_disk_full_enabled,
        force_read_only_bookie: k.force_read_only_bookie,
        persist_bookie_status_enabled: k.persist_bookie_status_enabled,
        disk_usage_threshold: k.disk_usage_threshold,
        disk_usage_warn_threshold: k.disk_usage_warn_threshold,
        disk_usage_lwm_threshold: k.disk_usage_lwm_threshold,
        disk_check_interval: k.disk_check_interval,
        min_usable_size_for_index_file_creation_bytes: k
            .min_usable_size_for_index_file_creation_bytes,
        min_usable_size_for_entry_log_creation_bytes: k
            .min_usable_size_for_entry_log_creation_bytes,
        min_usable_size_for_high_priority_writes_bytes: k
            .min_usable_size_for_high_priority_writes_bytes,
        http_server_enabled: h.http_server_enabled,
        http_server_port: h.http_server_port,
        http_server_host: h.http_server_host,
        enable_statistics: h.enable_statistics,
        stats_provider_class: h.stats_provider_class,
        metrics_enabled: h.metrics_enabled,
        prometheus_stats_http_enable: h.prometheus_stats_http_enable,
        prometheus_stats_http_address: h.prometheus_stats_http_address,
        prometheus_stats_http_port: h.prometheus_stats_http_port,
        prometheus_stats_latency_rollover: h.prometheus_stats_latency_rollover,
        tls: security.tls,
        tls_provider_factory_class_present: security.tls_key_present,
        http_tls: security.http_tls,
        bookie_authz: security.authz,
        properties: Vec::new(),
    })
}

/// metadataServiceUri, else zkServers + zkLedgersRootPath (`None` when standalone); zkTimeout.
fn metadata(
    p: &mut Props,
    standalone: bool,
) -> Result<(Option<MetadataServiceUri>, Duration), ConfigError> {
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
            reason:
                "neither metadataServiceUri nor zkServers is set; set one, or run with --standalone"
                    .into(),
        });
    };
    Ok((metadata_service, zk_timeout))
}

/// The network fields of [`BookieConfig`] (documented there).
struct Network {
    bookie_port: u16,
    listening_interface: Option<String>,
    advertised_address: Option<String>,
    use_host_name_as_bookie_id: bool,
    use_short_host_name: bool,
    bookie_id: Option<String>,
    allow_loopback: bool,
    allow_ephemeral_ports: bool,
    server_tcp_no_delay: bool,
    server_sock_keepalive: bool,
    netty_max_frame_size_bytes: usize,
    max_pending_add_requests_per_thread: u32,
    max_pending_read_requests_per_thread: u32,
    max_adds_in_progress_limit: Option<u32>,
    max_reads_in_progress_limit: Option<u32>,
    num_add_worker_threads: u32,
    num_read_worker_threads: u32,
    max_batch_read_size_bytes: u64,
}

fn network(p: &mut Props) -> Result<Network, ConfigError> {
    let allow_ephemeral_ports = p.bool("allowEphemeralPorts", false)?;
    let bookie_port = p.port("bookiePort", 3181)?;
    if bookie_port == 0 && !allow_ephemeral_ports {
        return Err(p.invalid_here("bookiePort", "port 0 needs allowEphemeralPorts=true"));
    }
    let off_when_zero = |n: u32| if n == 0 { None } else { Some(n) };
    Ok(Network {
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
        netty_max_frame_size_bytes: max_frame_bytes(p)?,
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
        max_adds_in_progress_limit: off_when_zero(p.u32_min("maxAddsInProgressLimit", 0, 0)?),
        max_reads_in_progress_limit: off_when_zero(p.u32_min("maxReadsInProgressLimit", 0, 0)?),
        num_add_worker_threads: p.u32_min("numAddWorkerThreads", 1, 0)?,
        num_read_worker_threads: p.u32_min("numReadWorkerThreads", 8, 0)?,
        max_batch_read_size_bytes: p.u64_min("maxBatchReadSize", 5_242_880, 1)?,
    })
}

/// nettyMaxFrameSizeBytes: default Pulsar's 5,253,120; a smaller value is raised to it with
/// a note (module doc, "Frame limit").
fn max_frame_bytes(p: &mut Props) -> Result<usize, ConfigError> {
    const KEY: &str = "nettyMaxFrameSizeBytes";
    let pulsar = PULSAR_MAX_FRAME_BYTES as i64;
    let bytes = p.int(KEY, pulsar, 1024, i32::MAX as i64)?;
    if bytes < pulsar {
        p.note(format!(
            "{KEY}={bytes} is below the {pulsar} bytes a Pulsar broker's frames may take; \
             raised to {pulsar}"
        ));
        return Ok(PULSAR_MAX_FRAME_BYTES);
    }
    Ok(bytes as usize)
}

/// The directory fields of [`BookieConfig`] (documented there).
struct Directories {
    journal_dirs: Vec<PathBuf>,
    ledger_dirs: Vec<PathBuf>,
    index_dirs: Option<Vec<PathBuf>>,
    allow_storage_expansion: bool,
}

fn directories(p: &mut Props) -> Result<Directories, ConfigError> {
    let journal_dirs = match p.dirs("journalDirectories")? {
        Some(d) => {
            p.mark_used("journalDirectory");
            d
        }
        None => p
            .dirs("journalDirectory")?
            .unwrap_or_else(|| vec![PathBuf::from("/tmp/bk-txn")]),
    };
    Ok(Directories {
        journal_dirs,
        ledger_dirs: p
            .dirs("ledgerDirectories")?
            .unwrap_or_else(|| vec![PathBuf::from("/tmp/bk-data")]),
        index_dirs: p.dirs("indexDirectories")?,
        allow_storage_expansion: p.bool("allowStorageExpansion", false)?,
    })
}

/// The journal fields of [`BookieConfig`] (documented there).
struct Journal {
    journal_format_version_to_write: u32,
    journal_max_size_bytes: Option<u64>,
    journal_max_backups: Option<usize>,
    journal_pre_alloc_size_bytes: u64,
    journal_write_buffer_size_bytes: u64,
    journal_remove_from_page_cache: bool,
    journal_write_data: bool,
    journal_sync_data: bool,
    journal_adaptive_group_writes: bool,
    journal_max_group_wait: Option<Duration>,
    journal_buffered_writes_threshold_bytes: usize,
    journal_buffered_entries_threshold: Option<usize>,
    journal_flush_when_queue_empty: bool,
    journal_alignment_size_bytes: u64,
    journal_queue_size: usize,
    journal_max_memory_size_bytes: Option<usize>,
    journal_page_cache_flush_interval: Duration,
    journal_reuse_files: bool,
    skip_replay_journal_invalid_record: bool,
}

fn journal(p: &mut Props) -> Result<Journal, ConfigError> {
    let alignment = p.u64_min("journalAlignmentSize", 512, 512)?;
    if alignment % 512 != 0 {
        return Err(p.invalid_here("journalAlignmentSize", "must be a multiple of 512"));
    }
    let pre_alloc = p.size("journalPreAllocSizeMB", 16, MIB, 1)?;
    if pre_alloc % alignment != 0 {
        return Err(p.invalid_here(
            "journalPreAllocSizeMB",
            format!("must be a multiple of journalAlignmentSize ({alignment})"),
        ));
    }
    let flush_when_queue_empty = p.bool("journalFlushWhenQueueEmpty", false)?;
    // Some only when set > 0 and the queue-empty flush is off (module doc, "Greedy").
    let group_wait = p
        .opt_int("journalMaxGroupWaitMSec", 0, i64::MAX)?
        .filter(|ms| *ms > 0 && !flush_when_queue_empty)
        .map(|ms| Duration::from_millis(ms as u64));
    let mut buffered_entries = p.memory_size("journalBufferedEntriesThreshold", 0, 1, 0)?;
    if buffered_entries == 0 {
        // journalMaxGroupedEntriesToCommit is not a Java key; accepted as an alias.
        buffered_entries = p.memory_size("journalMaxGroupedEntriesToCommit", 0, 1, 0)?;
    } else {
        p.mark_used("journalMaxGroupedEntriesToCommit");
    }
    let max_memory = p.opt_size("journalMaxMemorySizeMb", MIB, 0)?;
    Ok(Journal {
        journal_format_version_to_write: p.int("journalFormatVersionToWrite", 6, 1, 6)? as u32,
        journal_max_size_bytes: p.opt_size("journalMaxSizeMB", MIB, 1)?,
        journal_max_backups: p
            .opt_int("journalMaxBackups", 0, u32::MAX as i64)?
            .map(|n| n as usize),
        journal_pre_alloc_size_bytes: pre_alloc,
        journal_write_buffer_size_bytes: p.size("journalWriteBufferSizeKB", 64, 1024, 1)?,
        journal_remove_from_page_cache: p.bool("journalRemoveFromPageCache", true)?,
        journal_write_data: p.bool("journalWriteData", true)?,
        journal_sync_data: p.bool("journalSyncData", true)?,
        journal_adaptive_group_writes: p.bool("journalAdaptiveGroupWrites", true)?,
        journal_max_group_wait: group_wait,
        journal_buffered_writes_threshold_bytes: p
            .memory_size("journalBufferedWritesThreshold", 524_288, 1, 0)?
            .max(4096),
        journal_buffered_entries_threshold: (buffered_entries > 0).then_some(buffered_entries),
        journal_flush_when_queue_empty: flush_when_queue_empty,
        journal_alignment_size_bytes: alignment,
        journal_queue_size: p.int("journalQueueSize", 10_000, 1, u32::MAX as i64)? as usize,
        journal_max_memory_size_bytes: max_memory
            .filter(|b| *b > 0)
            .map(|b| (b as usize).max(8 << 20)),
        journal_page_cache_flush_interval: p.millis("journalPageCacheFlushIntervalMSec", 1000)?,
        journal_reuse_files: p.bool("journalReuseFiles", false)?,
        skip_replay_journal_invalid_record: p.bool("skipReplayJournalInvalidRecord", false)?,
    })
}

/// The ledger storage fields of [`BookieConfig`] (documented there).
struct LedgerStorage {
    ledger_storage_class: String,
    write_cache_max_size_bytes: usize,
    read_ahead_cache_max_size_bytes: usize,
    read_ahead_cache_batch_size: usize,
    read_ahead_cache_batch_bytes: Option<u64>,
    max_throttle_time: Duration,
    entry_log_size_limit_bytes: u64,
    entry_log_file_preallocation_enabled: bool,
    flush_interval: Duration,
    flush_entrylog_bytes: Option<u64>,
    read_buffer_size_bytes: u64,
    write_buffer_size_bytes: u64,
}

fn ledger_storage(p: &mut Props) -> Result<LedgerStorage, ConfigError> {
    let cache_default_mib = (default_cache_bytes() as u64) / MIB;
    let read_ahead_batch_bytes =
        p.int("dbStorage_readAheadCacheBatchBytesSize", -1, -1, i64::MAX)?;
    let flush_entrylog_bytes = p.u64_min("flushEntrylogBytes", 0, 0)?;
    Ok(LedgerStorage {
        ledger_storage_class: p.string_or(
            "ledgerStorageClass",
            "org.apache.bookkeeper.bookie.SortedLedgerStorage",
        ),
        write_cache_max_size_bytes: p.memory_size(
            "dbStorage_writeCacheMaxSizeMb",
            cache_default_mib,
            MIB,
            1,
        )?,
        read_ahead_cache_max_size_bytes: p.memory_size(
            "dbStorage_readAheadCacheMaxSizeMb",
            cache_default_mib,
            MIB,
            1,
        )?,
        read_ahead_cache_batch_size: p.int(
            "dbStorage_readAheadCacheBatchSize",
            100,
            1,
            u32::MAX as i64,
        )? as usize,
        read_ahead_cache_batch_bytes: (read_ahead_batch_bytes > 0)
            .then_some(read_ahead_batch_bytes as u64),
        max_throttle_time: p.millis("dbStorage_maxThrottleTimeMs", 10_000)?,
        entry_log_size_limit_bytes: p.int("logSizeLimit", 1 << 30, 1 << 20, 1 << 30)? as u64,
        entry_log_file_preallocation_enabled: p.bool("entryLogFilePreallocationEnabled", true)?,
        flush_interval: Duration::from_millis(p.u64_min("flushInterval", 10_000, 1)?),
        flush_entrylog_bytes: (flush_entrylog_bytes > 0).then_some(flush_entrylog_bytes),
        read_buffer_size_bytes: p.u64_min("readBufferSizeBytes", 512, 1)?,
        write_buffer_size_bytes: p.u64_min("writeBufferSizeBytes", 65_536, 1)?,
    })
}

/// The GC and compaction fields of [`BookieConfig`] (documented there).
struct Gc {
    gc_wait_time: Duration,
    gc_overreplicated_ledger_wait_time: Option<Duration>,
    gc_overreplicated_ledger_max_concurrent_requests: usize,
    gc_metadata_op_rate_limit: u32,
    verify_metadata_on_gc: bool,
    minor_compaction_threshold: f64,
    minor_compaction_interval: Option<Duration>,
    major_compaction_threshold: f64,
    major_compaction_interval: Option<Duration>,
    minor_compaction_max_time: Option<Duration>,
    major_compaction_max_time: Option<Duration>,
    compaction_rate_by_entries: u64,
    compaction_rate_by_bytes: u64,
    is_throttle_by_bytes: bool,
    compaction_max_outstanding_requests: u64,
    force_allow_compaction: bool,
    is_force_gc_allow_when_no_space: bool,
    local_scrub_interval: Option<Duration>,
    local_scrub_rate_limit: f64,
    local_scrub_rate_limit_bytes: u64,
}

fn gc(p: &mut Props) -> Result<Gc, ConfigError> {
    let compaction_rate = p.u64_min("compactionRate", 1000, 1)?;
    // Java: a threshold <= 0 or an interval <= 0 disables that compaction; a threshold
    // above 1 is invalid.
    let minor_threshold = p.fraction("minorCompactionThreshold", 0.2, f64::MIN, 1.0, false)?;
    let major_threshold = p.fraction("majorCompactionThreshold", 0.8, f64::MIN, 1.0, false)?;
    let enabled_interval = |secs: i64, threshold: f64| {
        (secs > 0 && threshold > 0.0).then(|| Duration::from_secs(secs as u64))
    };
    let minor_interval = enabled_interval(
        p.int("minorCompactionInterval", 3600, i64::MIN, i64::MAX)?,
        minor_threshold,
    );
    let major_interval = enabled_interval(
        p.int("majorCompactionInterval", 86400, i64::MIN, i64::MAX)?,
        major_threshold,
    );
    if let (Some(minor), Some(major)) = (minor_interval, major_interval) {
        if minor >= major || minor_threshold >= major_threshold {
            return Err(p.invalid_here(
                "minorCompactionThreshold",
                "minor compaction must have a smaller threshold and a shorter interval than major compaction",
            ));
        }
    }
    // Java bounds a pass only when the max time is > 0 (GarbageCollectorThread
    // `maxTimeMillis > 0`): -1 (and 0) = unbounded.
    let unbounded_when_negative = |v: i64| (v > 0).then(|| Duration::from_millis(v as u64));
    Ok(Gc {
        gc_wait_time: Duration::from_millis(p.u64_min("gcWaitTime", 600_000, 1)?),
        // Java enables the check only for a value > 0.
        gc_overreplicated_ledger_wait_time: Some(p.int(
            "gcOverreplicatedLedgerWaitTime",
            86_400_000,
            i64::MIN,
            i64::MAX,
        )?)
        .filter(|ms| *ms > 0)
        .map(|ms| Duration::from_millis(ms as u64)),
        // Java's semaphore and RateLimiter need at least 1 (0 hangs or throws there).
        gc_overreplicated_ledger_max_concurrent_requests: p.u32_min(
            "gcOverreplicatedLedgerMaxConcurrentRequests",
            1000,
            1,
        )? as usize,
        gc_metadata_op_rate_limit: p.u32_min("gcMetadataOpRateLimit", 1000, 1)?,
        verify_metadata_on_gc: p.bool("verifyMetadataOnGC", false)?,
        minor_compaction_threshold: minor_threshold,
        minor_compaction_interval: minor_interval,
        major_compaction_threshold: major_threshold,
        major_compaction_interval: major_interval,
        minor_compaction_max_time: unbounded_when_negative(p.int(
            "minorCompactionMaxTimeMillis",
            -1,
            -1,
            i64::MAX,
        )?),
        major_compaction_max_time: unbounded_when_negative(p.int(
            "majorCompactionMaxTimeMillis",
            -1,
            -1,
            i64::MAX,
        )?),
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
        // Java: enabled when > 0 (isLocalScrubEnabled); RateLimiter.create needs > 0, 0 = none.
        local_scrub_interval: Some(p.int("localScrubInterval", 0, i64::MIN, i64::MAX)?)
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(s as u64)),
        local_scrub_rate_limit: p.fraction("localScrubRateLimit", 60.0, 0.0, f64::MAX, false)?,
        local_scrub_rate_limit_bytes: p.u64_min("localScrubRateLimitBytes", 0, 0)?,
    })
}

/// The read-only mode and disk fields of [`BookieConfig`] (documented there).
struct Disks {
    read_only_mode_enabled: bool,
    read_only_mode_on_any_disk_full_enabled: bool,
    force_read_only_bookie: bool,
    persist_bookie_status_enabled: bool,
    disk_usage_threshold: f64,
    disk_usage_warn_threshold: f64,
    disk_usage_lwm_threshold: f64,
    disk_check_interval: Duration,
    min_usable_size_for_index_file_creation_bytes: u64,
    min_usable_size_for_entry_log_creation_bytes: u64,
    min_usable_size_for_high_priority_writes_bytes: u64,
}

/// `entry_log_size_limit_bytes` (logSizeLimit) is the default of
/// minUsableSizeForEntryLogCreation.
fn disks(p: &mut Props, entry_log_size_limit_bytes: u64) -> Result<Disks, ConfigError> {
    let threshold = p.fraction("diskUsageThreshold", 0.95, 0.0, 1.0, true)?;
    let warn = p.fraction("diskUsageWarnThreshold", 0.90, 0.0, 1.0, true)?;
    if warn > threshold {
        return Err(p.invalid_here(
            "diskUsageWarnThreshold",
            "must not exceed diskUsageThreshold",
        ));
    }
    let lwm = p.fraction("diskUsageLwmThreshold", threshold, 0.0, 1.0, true)?;
    if lwm > threshold {
        return Err(p.invalid_here(
            "diskUsageLwmThreshold",
            "must not exceed diskUsageThreshold",
        ));
    }
    let min_entry_log = p.u64_min(
        "minUsableSizeForEntryLogCreation",
        entry_log_size_limit_bytes,
        0,
    )?;
    Ok(Disks {
        read_only_mode_enabled: p.bool("readOnlyModeEnabled", true)?,
        read_only_mode_on_any_disk_full_enabled: p
            .bool("readOnlyModeOnAnyDiskFullEnabled", true)?,
        force_read_only_bookie: p.bool("forceReadOnlyBookie", false)?,
        persist_bookie_status_enabled: p.bool("persistBookieStatusEnabled", false)?,
        disk_usage_threshold: threshold,
        disk_usage_warn_threshold: warn,
        disk_usage_lwm_threshold: lwm,
        disk_check_interval: Duration::from_millis(p.u64_min("diskCheckInterval", 10_000, 1)?),
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
    })
}

/// The HTTP and statistics fields of [`BookieConfig`] (documented there).
struct HttpAndStats {
    http_server_enabled: bool,
    http_server_port: u16,
    http_server_host: String,
    enable_statistics: bool,
    stats_provider_class: String,
    metrics_enabled: bool,
    prometheus_stats_http_enable: bool,
    prometheus_stats_http_address: String,
    prometheus_stats_http_port: u16,
    prometheus_stats_latency_rollover: Duration,
}

/// `statsProviderClass`'s default (Java's `NullStatsProvider`: no metrics at all).
pub(crate) const NULL_STATS_PROVIDER: &str = "org.apache.bookkeeper.stats.NullStatsProvider";
/// The one stats provider bookie-rs implements.
pub(crate) const PROMETHEUS_PROVIDER: &str =
    "org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider";

fn http_and_stats(p: &mut Props) -> Result<HttpAndStats, ConfigError> {
    // `--metrics-port` asks for metrics whatever the file's provider (docs/metrics.md §1).
    let metrics_port_flag = p
        .raw("prometheusStatsHttpPort")
        .is_some_and(|(_, origin)| origin == "--metrics-port");
    let stats_provider_class = p.string_or("statsProviderClass", NULL_STATS_PROVIDER);
    let prometheus = stats_provider_class == PROMETHEUS_PROVIDER;
    if !prometheus && stats_provider_class != NULL_STATS_PROVIDER {
        p.note(format!(
            "statsProviderClass={stats_provider_class}: bookie-rs implements only \
             {PROMETHEUS_PROVIDER}; no metrics are exported{}",
            if metrics_port_flag {
                " except on --metrics-port"
            } else {
                ""
            }
        ));
    }
    Ok(HttpAndStats {
        stats_provider_class,
        metrics_enabled: prometheus || metrics_port_flag,
        http_server_enabled: p.bool("httpServerEnabled", false)?,
        http_server_port: p.port("httpServerPort", 8080)?,
        http_server_host: p.string_or("httpServerHost", "0.0.0.0"),
        enable_statistics: p.bool("enableStatistics", true)?,
        prometheus_stats_http_enable: p.bool("prometheusStatsHttpEnable", true)?,
        prometheus_stats_http_address: p.string_or("prometheusStatsHttpAddress", "0.0.0.0"),
        prometheus_stats_http_port: p.port("prometheusStatsHttpPort", 8000)?,
        // Java's provider schedules its window rotation with this period (an int): 0 or
        // less throws at start-up, so it is refused here, naming the key.
        prometheus_stats_latency_rollover: Duration::from_secs(p.int(
            "prometheusStatsLatencyRolloverSeconds",
            crate::metrics::rollover::DEFAULT_ROLLOVER_SECONDS as i64,
            1,
            i32::MAX as i64,
        )? as u64),
    })
}

/// `chaosEnabled`, `chaosFaultPlan` and `chaosTestOnlyAckBeforeFdatasync` (ours,
/// docs/chaos.md): a plan without chaos enabled is refused, so a forgotten switch never
/// reads as "the plan ran and found nothing"; the test-only switch, which makes acknowledged
/// adds not durable, is refused without chaos and by any build without debug assertions
/// (every release build).
fn chaos(p: &mut Props) -> Result<(bool, Option<std::path::PathBuf>, bool), ConfigError> {
    let enabled = p.bool("chaosEnabled", false)?;
    let plan = p
        .string("chaosFaultPlan")
        .filter(|s| !s.trim().is_empty())
        .map(std::path::PathBuf::from);
    if plan.is_some() && !enabled {
        return Err(p.invalid_here(
            "chaosFaultPlan",
            "a fault plan needs chaosEnabled=true (chaos is off unless enabled)",
        ));
    }
    let ack_early = p.bool("chaosTestOnlyAckBeforeFdatasync", false)?;
    if ack_early && !cfg!(debug_assertions) {
        return Err(p.invalid_here(
            "chaosTestOnlyAckBeforeFdatasync",
            "refused by a release build: it acknowledges adds that are not durable, for \
             tests of loss checkers only (docs/chaos.md)",
        ));
    }
    if ack_early && !enabled {
        return Err(p.invalid_here("chaosTestOnlyAckBeforeFdatasync", "needs chaosEnabled=true"));
    }
    Ok((enabled, plan, ack_early))
}

/// The security keys (`tls::settings`, which owns their rules) read through [`Props`].
impl crate::tls::settings::KeyReader for Props {
    fn value(&mut self, key: &str) -> Option<(String, String)> {
        self.raw(key)
    }
    fn present(&mut self, key: &str) -> bool {
        self.mark_used(key);
        self.contains(key)
    }
    fn bool(&mut self, key: &str, default: bool) -> Result<bool, ConfigError> {
        Props::bool(self, key, default)
    }
    fn int(&mut self, key: &str, default: i64, min: i64, max: i64) -> Result<i64, ConfigError> {
        Props::int(self, key, default, min, max)
    }
    fn note(&mut self, line: String) {
        Props::note(self, line)
    }
}

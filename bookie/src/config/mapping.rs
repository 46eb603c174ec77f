//! `mapping`: the one mapping from a loaded [`BookieConfig`] to the configurations of the
//! parts it drives: the request path ([`ServerConfig`]), the journal
//! ([`bk_journal::JournalConfig`]), the entry log ([`bk_entrylog::EntryLogConfig`]) and the
//! storage pair ([`RealStorageConfig`]).
//!
//! Guarantees:
//! * no key is read, validated or defaulted here: `sections` did that once, and the fields
//!   arrive in the consumer's type (a group wait is already `Option<Duration>`, cache sizes
//!   are already bytes as `usize`), so they are copied as they are;
//! * the only rules here are the ones that involve a crate's own defaults: a journal segment
//!   is `journalMaxSizeMB` capped at 256 MiB, or the journal's default size, and in either
//!   case holds one frame (`nettyMaxFrameSizeBytes`) plus 1 MiB of headers; the shortest
//!   segment made on a full journal disk is `journalPreAllocSizeMB`, and holds one frame
//!   plus 1 MiB as well;
//! * a key the bookie does not read leaves the crate's default in place.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use bk_entrylog::EntryLogConfig;
use bk_journal::JournalConfig;

use super::BookieConfig;
use crate::server::limits::LimitsConfig;
use crate::server::ServerConfig;
use crate::storage::real::RealStorageConfig;

/// Sub-directory the bookie owns inside every configured directory (Java layout).
pub const CURRENT_DIR: &str = "current";

/// Largest journal segment a set `journalMaxSizeMB` gives: segments are recycled, so a
/// smaller size only means more, cheaper recycling than Java's never-reused 2 GiB files.
const JOURNAL_SEGMENT_BYTES_MAX: u64 = 256 << 20;

/// Room a journal segment keeps beside its largest record for group and record headers.
const JOURNAL_SEGMENT_HEADROOM_BYTES: u64 = 1 << 20;

/// The settings the request path takes from the configuration.
pub fn server_config(cfg: &BookieConfig) -> ServerConfig {
    // The dual-stack wildcard; with listeningInterface set, node.rs binds the bookie
    // address's IP instead (registration/bookie_id.rs rule 6).
    let ip = IpAddr::from([0, 0, 0, 0]);
    let limits = LimitsConfig::from_stock(
        cfg.max_adds_in_progress_limit.unwrap_or(0) as usize,
        cfg.max_reads_in_progress_limit.unwrap_or(0) as usize,
        cfg.max_pending_add_requests_per_thread as usize,
        cfg.max_pending_read_requests_per_thread as usize,
        0,
    );
    ServerConfig {
        bind: SocketAddr::new(ip, cfg.bookie_port),
        max_frame_bytes: cfg.netty_max_frame_size_bytes,
        tcp_nodelay: cfg.server_tcp_no_delay,
        tcp_keepalive: cfg.server_sock_keepalive,
        limits,
        ..ServerConfig::default()
    }
}

/// Storage settings from the configuration: journal and entry log, in the `current/`
/// sub-directory of every configured directory.
pub fn storage_config(cfg: &BookieConfig) -> RealStorageConfig {
    RealStorageConfig {
        journal_dirs: current(&cfg.journal_dirs),
        ledger_dirs: current(&cfg.ledger_dirs),
        journal: journal_config(cfg),
        entry_log: entry_log_config(cfg),
        disk: bk_disk::DiskConfig::default(),
        chaos: None,
    }
}

/// The journal's settings: the stock journal keys as `sections` typed them.
pub fn journal_config(cfg: &BookieConfig) -> JournalConfig {
    let d = JournalConfig::default();
    let segment_bytes = cfg
        .journal_max_size_bytes
        .map_or(d.segment_bytes, |b| b.min(JOURNAL_SEGMENT_BYTES_MAX));
    // A segment must hold the largest record: one frame plus the journal's headers.
    let frame_segment_bytes = (cfg.netty_max_frame_size_bytes as u64
        + JOURNAL_SEGMENT_HEADROOM_BYTES)
        .next_multiple_of(bk_disk::SECTOR as u64);
    JournalConfig {
        group_wait_max: cfg.journal_max_group_wait,
        group_bytes_max: cfg.journal_buffered_writes_threshold_bytes,
        group_records_max: cfg.journal_buffered_entries_threshold.unwrap_or(0),
        segment_bytes: segment_bytes.max(frame_segment_bytes),
        segment_bytes_min: cfg
            .journal_pre_alloc_size_bytes
            .next_multiple_of(bk_disk::SECTOR as u64)
            .max(frame_segment_bytes),
        in_flight_bytes_max: cfg
            .journal_max_memory_size_bytes
            .unwrap_or(d.in_flight_bytes_max),
        queue_records_max: cfg.journal_queue_size,
        free_segments_max: cfg.journal_max_backups.unwrap_or(d.free_segments_max),
        // Unset: the pool keeps what each checkpoint frees (at least 2), so a sustained
        // load writes into recycled segments, not into new ones whose unwritten extents
        // every group converts (ARCHITECTURE.md, Journal).
        free_segments_follow_checkpoints: cfg.journal_max_backups.is_none(),
        ..d
    }
}

/// The slowest a background write-cache flush runs (bk_entrylog's `flush_pace`): a
/// 128 MiB half takes at most 2 s, and faster when it filled faster. Not a stock key:
/// the pace never makes an add wait (a half-full active half lifts it), so there is
/// nothing for an operator to trade.
pub const FLUSH_PACE_MIN_BYTES_PER_SEC: u64 = 64 << 20;

/// The entry log's settings: caches, throttling and disk thresholds.
pub fn entry_log_config(cfg: &BookieConfig) -> EntryLogConfig {
    EntryLogConfig {
        write_cache_bytes: cfg.write_cache_max_size_bytes,
        read_cache_bytes: cfg.read_ahead_cache_max_size_bytes,
        readahead_entries: cfg.read_ahead_cache_batch_size,
        // dbStorage_readAheadCacheBatchBytesSize when set > 0, else the entry log's 1 MiB.
        readahead_bytes: cfg
            .read_ahead_cache_batch_bytes
            .map_or(EntryLogConfig::default().readahead_bytes, |b| {
                usize::try_from(b).unwrap_or(usize::MAX)
            }),
        max_throttle: cfg.max_throttle_time,
        disk_usage_threshold: cfg.disk_usage_threshold,
        disk_usage_warn_threshold: cfg.disk_usage_warn_threshold,
        disk_usage_lwm_threshold: cfg.disk_usage_lwm_threshold,
        // Java throttles compaction by entries unless isThrottleByBytes=true.
        compaction_rate_bytes_per_sec: if cfg.is_throttle_by_bytes {
            cfg.compaction_rate_by_bytes
        } else {
            0
        },
        compaction_rate_entries_per_sec: if cfg.is_throttle_by_bytes {
            0
        } else {
            cfg.compaction_rate_by_entries
        },
        segment_max_bytes: cfg.entry_log_size_limit_bytes,
        read_only_on_any_dir_full: cfg.read_only_mode_on_any_disk_full_enabled,
        flush_pace_min_bytes_per_sec: FLUSH_PACE_MIN_BYTES_PER_SEC,
        ..EntryLogConfig::default()
    }
}

/// `<dir>/current` for every directory.
fn current(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter().map(|d| d.join(CURRENT_DIR)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BookieArgs;
    use std::time::Duration;

    fn config_of(text: &str) -> BookieConfig {
        let args = BookieArgs {
            standalone: true,
            ..Default::default()
        };
        BookieConfig::from_text_and_args(Some(text), None, &args)
            .unwrap()
            .0
    }

    fn journal_of(text: &str) -> JournalConfig {
        storage_config(&config_of(text)).journal
    }

    #[test]
    fn journal_sizing_keys_apply_only_when_set() {
        // Absent: greedy group commit, 128 MiB segments, a free pool that follows the
        // checkpoints (at least 2 segments), whatever Java's defaults (2 ms, 2048 MB, 5)
        // would say.
        let d = journal_of("");
        assert_eq!(d.group_wait_max, None);
        assert_eq!(d.segment_bytes, 128 << 20);
        assert_eq!(d.free_segments_max, 2);
        assert!(d.free_segments_follow_checkpoints);
        // Set: applied (the segment size capped at 256 MiB).
        let s =
            journal_of("journalMaxGroupWaitMSec=3\njournalMaxSizeMB=4096\njournalMaxBackups=7\n");
        assert_eq!(s.group_wait_max, Some(Duration::from_millis(3)));
        assert_eq!(s.segment_bytes, 256 << 20);
        assert_eq!(s.free_segments_max, 7);
        assert!(!s.free_segments_follow_checkpoints);
        // journalFlushWhenQueueEmpty=true keeps group commit greedy, as in Java.
        let f = journal_of("journalMaxGroupWaitMSec=3\njournalFlushWhenQueueEmpty=true\n");
        assert_eq!(f.group_wait_max, None);
        // A segment always holds one frame (5 MiB chunks) plus headers.
        let small = journal_of("journalMaxSizeMB=1\n");
        assert!(small.segment_bytes >= 5_242_880 + (1 << 20));
        assert_eq!(small.segment_bytes % 4096, 0);
        // journalPreAllocSizeMB: the shortest segment on a full journal disk (16 MiB by
        // default), never below one frame plus headers.
        assert_eq!(d.segment_bytes_min, 16 << 20);
        assert_eq!(
            journal_of("journalPreAllocSizeMB=32\n").segment_bytes_min,
            32 << 20
        );
        assert!(journal_of("journalPreAllocSizeMB=1\n").segment_bytes_min >= 5_242_880 + (1 << 20));
        // The other journal keys keep their mapping.
        let q = journal_of("journalQueueSize=77\njournalBufferedWritesThreshold=100\n");
        assert_eq!(q.queue_records_max, 77);
        assert_eq!(q.group_bytes_max, 4096);
    }

    #[test]
    fn compaction_rate_keys_throttle_by_entries_unless_by_bytes() {
        let e = storage_config(&config_of("")).entry_log;
        assert_eq!(
            (
                e.compaction_rate_entries_per_sec,
                e.compaction_rate_bytes_per_sec
            ),
            (1000, 0)
        );
        let e = storage_config(&config_of("compactionRate=50\n")).entry_log;
        assert_eq!(e.compaction_rate_entries_per_sec, 50);
        let e = storage_config(&config_of(
            "compactionRateByEntries=7\ncompactionRateByBytes=12345\nisThrottleByBytes=true\n",
        ))
        .entry_log;
        assert_eq!(
            (
                e.compaction_rate_entries_per_sec,
                e.compaction_rate_bytes_per_sec
            ),
            (0, 12345)
        );
    }

    /// Was `bk_journal`'s `stock_keys_map_onto_the_config`, the test of the journal crate's
    /// own stock-key mapping, which this mapping replaced.
    #[test]
    fn stock_journal_keys_map_onto_the_journal_config() {
        let c = journal_of("");
        assert_eq!(c.group_wait_max, None);
        assert_eq!(c.group_bytes_max, 512 * 1024);
        assert_eq!(c.group_records_max, 0);
        assert_eq!(
            c.in_flight_bytes_max,
            JournalConfig::default().in_flight_bytes_max
        );
        let c = journal_of(
            "journalMaxGroupWaitMSec=1\njournalBufferedWritesThreshold=65536\n\
             journalMaxGroupedEntriesToCommit=100\njournalMaxSizeMB=2048\njournalQueueSize=500\n\
             journalMaxMemorySizeMb=32\n",
        );
        assert_eq!(c.group_wait_max, Some(Duration::from_millis(1)));
        assert_eq!(c.group_bytes_max, 65536);
        assert_eq!(c.group_records_max, 100);
        assert_eq!(c.segment_bytes, 256 << 20);
        assert_eq!(c.queue_records_max, 500);
        assert_eq!(c.in_flight_bytes_max, 32 << 20);
        assert!(c.record_payload_max() > 5_253_120);
        let c = journal_of("journalMaxGroupWaitMSec=2\njournalFlushWhenQueueEmpty=true\n");
        assert_eq!(c.group_wait_max, None);
        // journalBufferedWritesThreshold=0 is one place's business: a 4096-byte group cap.
        assert_eq!(
            journal_of("journalBufferedWritesThreshold=0\n").group_bytes_max,
            4096
        );
        // A tiny journalMaxMemorySizeMb keeps 8 MiB in flight.
        assert_eq!(
            journal_of("journalMaxMemorySizeMb=1\n").in_flight_bytes_max,
            8 << 20
        );
    }

    /// Walk 1: journalMaxGroupWaitMSec, from the file to the committer's group wait.
    #[test]
    fn group_wait_walk_from_key_to_journal() {
        let set = config_of("journalMaxGroupWaitMSec=5\n");
        assert_eq!(set.journal_max_group_wait, Some(Duration::from_millis(5)));
        assert_eq!(
            journal_config(&set).group_wait_max,
            Some(Duration::from_millis(5))
        );
        assert_eq!(journal_config(&config_of("")).group_wait_max, None);
        assert_eq!(
            journal_config(&config_of("journalMaxGroupWaitMSec=0\n")).group_wait_max,
            None
        );
        assert_eq!(
            journal_config(&config_of("journalMaxGroupWaitMSec=\n")).group_wait_max,
            None,
            "an empty value is unset"
        );
        let flush = config_of("journalMaxGroupWaitMSec=5\njournalFlushWhenQueueEmpty=true\n");
        assert_eq!(journal_config(&flush).group_wait_max, None);
    }

    /// Walk 2: nettyMaxFrameSizeBytes, from the file to the frame decoder's limit and the
    /// journal segment floor.
    #[test]
    fn frame_limit_walk_from_key_to_server_and_journal() {
        let pulsar = bk_proto::frame::PULSAR_MAX_FRAME_BYTES;
        let unset = config_of("");
        assert_eq!(server_config(&unset).max_frame_bytes, pulsar);
        let big = config_of("nettyMaxFrameSizeBytes=20971520\njournalMaxSizeMB=1\n");
        assert_eq!(server_config(&big).max_frame_bytes, 20_971_520);
        assert_eq!(
            journal_config(&big).segment_bytes,
            20_971_520 + (1 << 20),
            "a segment holds one frame plus 1 MiB"
        );
        let args = BookieArgs {
            standalone: true,
            ..Default::default()
        };
        let (java, report) =
            BookieConfig::from_text_and_args(Some("nettyMaxFrameSizeBytes=5242880\n"), None, &args)
                .unwrap();
        assert_eq!(server_config(&java).max_frame_bytes, pulsar);
        assert_eq!(report.adjusted.len(), 1, "{report:?}");
        assert!(report.adjusted[0].starts_with("nettyMaxFrameSizeBytes=5242880"));
    }

    /// Walk 3: dbStorage_writeCacheMaxSizeMb, from the file to the entry log's write cache.
    #[test]
    fn write_cache_walk_from_key_to_entry_log() {
        let c = config_of("dbStorage_writeCacheMaxSizeMb=64\n");
        assert_eq!(c.write_cache_max_size_bytes, 64 << 20);
        assert_eq!(storage_config(&c).entry_log.write_cache_bytes, 64 << 20);
        assert_eq!(
            entry_log_config(&config_of("")).write_cache_bytes,
            crate::config::default_cache_bytes()
        );
    }

    #[test]
    fn read_ahead_bytes_key_applies_when_set() {
        let d = EntryLogConfig::default().readahead_bytes;
        assert_eq!(entry_log_config(&config_of("")).readahead_bytes, d);
        let set = config_of("dbStorage_readAheadCacheBatchBytesSize=65536\n");
        assert_eq!(entry_log_config(&set).readahead_bytes, 65536);
        let off = config_of("dbStorage_readAheadCacheBatchBytesSize=-1\n");
        assert_eq!(entry_log_config(&off).readahead_bytes, d);
    }

    #[test]
    fn server_sock_keepalive_reaches_the_server_config() {
        assert!(server_config(&config_of("")).tcp_keepalive);
        assert!(!server_config(&config_of("serverSockKeepalive=false\n")).tcp_keepalive);
    }

    #[test]
    fn storage_dirs_are_the_current_subdirectories() {
        let s = storage_config(&config_of(
            "journalDirectories=/j\nledgerDirectories=/l1,/l2\n",
        ));
        assert_eq!(s.journal_dirs, vec![PathBuf::from("/j/current")]);
        assert_eq!(
            s.ledger_dirs,
            vec![PathBuf::from("/l1/current"), PathBuf::from("/l2/current")]
        );
    }
}

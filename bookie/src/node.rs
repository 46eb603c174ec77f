//! The whole bookie process, in start-up and shutdown order (semantics.md §16), so that
//! `main.rs` stays a few lines:
//!
//! 1. bookie id, cookie validation (ZooKeeper + directories; directories only when
//!    standalone) — a failure aborts start-up;
//! 2. storage: entry log opened, journal replayed into it, flushed, checkpointed;
//! 3. port bound, requests served (recorded by `request_metrics`); background flusher
//!    (flushInterval), disk-usage monitor (`disk_monitor`: diskCheckInterval ->
//!    read-only), GC and compaction (`gc`: gcWaitTime; never when standalone);
//! 4. registration in ZooKeeper (writable, or read-only when forced);
//! 5. on SIGTERM/SIGINT: stop reading requests and drain the ones in flight, flush +
//!    checkpoint, shut the journal and entry log down, unregister, exit 0. A lost
//!    ZooKeeper registration or a fatal storage error exits non-zero.
//!
//! This file owns assembly and that order only; what each background task does lives
//! in its own module.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::BookieConfig;
use crate::disk_monitor::{self, server_status, DiskMonitorConfig};
use crate::gc::{self, CompactionSchedule};
use crate::handlers::{Bookie, BookieOptions};
use crate::metrics::{self, Gauge, Metrics, ServerStatus};
use crate::registration::{self, Registration};
use crate::request_metrics::MetricsObserver;
use crate::server::limits::LimitsConfig;
use crate::server::{RequestObserver, Server, ServerConfig};
use crate::storage::real::{self, RealStorage, RealStorageConfig};
use crate::storage::{exit_on_fatal, StorageError};

/// Sub-directory the bookie owns inside every configured directory (Java layout).
pub const CURRENT_DIR: &str = "current";

/// Why the bookie stopped.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("bookie id: {0}")]
    BookieId(String),
    #[error("cookie / registration: {0}")]
    Registration(String),
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Fatal(String),
}

/// The settings the request path takes from the configuration.
pub fn server_config(cfg: &BookieConfig) -> ServerConfig {
    let ip = cfg
        .listening_interface
        .as_deref()
        .and_then(|s| s.parse::<IpAddr>().ok())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let limits = LimitsConfig::from_stock(
        cfg.max_adds_in_progress_limit.unwrap_or(0) as usize,
        cfg.max_reads_in_progress_limit.unwrap_or(0) as usize,
        cfg.max_pending_add_requests_per_thread as usize,
        cfg.max_pending_read_requests_per_thread as usize,
        0,
    );
    ServerConfig {
        bind: SocketAddr::new(ip, cfg.bookie_port),
        // Never below Pulsar's frame size: a stock broker sends 5,253,120-byte frames even
        // when bk_server.conf keeps Java's 5 MiB default.
        max_frame_bytes: (cfg.netty_max_frame_size_bytes as usize)
            .max(bk_proto::frame::PULSAR_MAX_FRAME_BYTES),
        tcp_nodelay: cfg.server_tcp_no_delay,
        limits,
        ..ServerConfig::default()
    }
}

fn current(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter().map(|d| d.join(CURRENT_DIR)).collect()
}

/// Storage settings from the configuration.
pub fn storage_config(cfg: &BookieConfig) -> RealStorageConfig {
    // Group wait, segment size and free segments follow the stock keys only when the
    // configuration sets them (JournalKeysSet): their Java defaults are not ours.
    let set = cfg.journal_keys_set;
    let mut journal = bk_journal::JournalConfig::from_stock(&bk_journal::StockJournalKeys {
        journal_max_group_wait_msec: set
            .max_group_wait
            .then_some(cfg.journal_max_group_wait.as_millis() as i64),
        journal_flush_when_queue_empty: Some(cfg.journal_flush_when_queue_empty),
        journal_max_size_mb: set.max_size.then_some(cfg.journal_max_size_bytes >> 20),
        journal_max_backups: set.max_backups.then_some(cfg.journal_max_backups as u64),
        ..Default::default()
    });
    journal.group_bytes_max = cfg.journal_buffered_writes_threshold_bytes.max(4096) as usize;
    journal.group_records_max = cfg.journal_buffered_entries_threshold.unwrap_or(0) as usize;
    journal.queue_records_max = cfg.journal_queue_size.max(1) as usize;
    if let Some(bytes) = cfg.journal_max_memory_size_bytes {
        journal.in_flight_bytes_max = (bytes as usize).max(8 << 20);
    }
    // A segment must hold the largest record: one frame plus the journal's headers.
    let min_segment = (cfg.netty_max_frame_size_bytes as u64 + (1 << 20)).next_multiple_of(4096);
    journal.segment_bytes = journal.segment_bytes.max(min_segment);
    let entry_log = bk_entrylog::EntryLogConfig {
        write_cache_bytes: cfg.write_cache_max_size_bytes as usize,
        read_cache_bytes: cfg.read_ahead_cache_max_size_bytes as usize,
        readahead_entries: cfg.read_ahead_cache_batch_size as usize,
        max_throttle: cfg.max_throttle_time,
        disk_usage_threshold: cfg.disk_usage_threshold,
        disk_usage_warn_threshold: cfg.disk_usage_warn_threshold,
        disk_usage_lwm_threshold: cfg.disk_usage_lwm_threshold,
        ..bk_entrylog::EntryLogConfig::default()
    };
    RealStorageConfig {
        journal_dirs: current(&cfg.journal_dirs),
        ledger_dirs: current(&cfg.ledger_dirs),
        journal,
        entry_log,
        disk: bk_disk::DiskConfig::default(),
    }
}

fn create_dirs(disk: &mut dyn bk_disk::Disk, dirs: &[PathBuf]) -> Result<(), NodeError> {
    for d in dirs {
        disk.create_dir_all(d)?;
    }
    Ok(())
}

/// Runs the bookie until a signal or a fatal error. Returns the process exit code.
pub async fn run(cfg: BookieConfig) -> Result<i32, NodeError> {
    // Signal handlers first: a SIGTERM that arrives while we start (even right after the
    // registration node appears) is then queued and handled in step 5, rather than killing
    // the process with the default action and leaving a registration behind.
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let standalone = cfg.metadata_service.is_none();
    let addr = registration::resolve_bookie_address(&cfg, cfg.bookie_port)
        .map_err(|e| NodeError::BookieId(e.to_string()))?;
    tracing::info!(bookie_id = %addr.bookie_id, standalone, "starting bookie");

    let mut disk = bk_disk::open_disk(&bk_disk::DiskConfig::default())?.disk;
    let storage_cfg = storage_config(&cfg);
    create_dirs(disk.as_mut(), &storage_cfg.journal_dirs)?;
    create_dirs(disk.as_mut(), &storage_cfg.ledger_dirs)?;

    // 1. Cookies.
    let registration = if standalone {
        registration::check_cookies_standalone(&cfg, &addr, disk.as_mut())
            .map_err(|e| NodeError::Registration(e.to_string()))?;
        None
    } else {
        let reg = Registration::connect(&cfg, &addr)
            .await
            .map_err(|e| NodeError::Registration(e.to_string()))?;
        reg.check_cookies(&cfg, &addr, disk.as_mut())
            .await
            .map_err(|e| NodeError::Registration(e.to_string()))?;
        Some(reg)
    };
    drop(disk);

    // 2. Storage (blocking: replay reads the journal).
    let storage: Arc<RealStorage> = {
        let sc = storage_cfg.clone();
        let opened = tokio::task::spawn_blocking(move || real::open(&sc, exit_on_fatal()))
            .await
            .map_err(|e| NodeError::Fatal(format!("storage open task failed: {e}")))??;
        tracing::info!(replayed = opened.replayed, "journal replayed");
        Arc::new(opened)
    };
    let bookie = Bookie::new(
        storage.store.clone(),
        BookieOptions {
            journal_explicit_lac: cfg.journal_format_version_to_write >= 6,
            journal_write_data: cfg.journal_write_data,
            max_batch_read_size: cfg.max_batch_read_size_bytes,
            ledger_dirs: cfg.ledger_dirs.clone(),
            read_only: cfg.force_read_only_bookie,
        },
    );

    // 3. Serve, with metrics (a metrics port that cannot be bound is logged, not fatal:
    // Java starts its endpoint only with the Prometheus provider configured).
    let metrics = Metrics::new();
    for i in 0..storage.journal.journals() {
        if let Some(m) = storage.journal.metrics(i) {
            metrics.add_collector(metrics::adapters::journal_collector(m, i));
        }
    }
    metrics.gauge_set(Gauge::JournalDirs, storage.journal.journals() as i64);
    let metrics_server =
        match metrics::MetricsServer::start_from_config(&cfg, metrics.clone()).await {
            Ok(server) => server,
            Err(e) => {
                tracing::warn!(error = %e, "metrics endpoint not started");
                None
            }
        };
    let observer: Arc<dyn RequestObserver> = Arc::new(MetricsObserver(metrics.clone()));
    let server =
        Server::start_with_observer(bookie.clone(), server_config(&cfg), Some(observer)).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let flusher = storage.store.spawn_flusher(
        cfg.flush_interval.max(Duration::from_millis(100)),
        Duration::from_millis(100),
        stop.clone(),
    )?;
    let registration = registration.map(Arc::new);
    let monitor = tokio::spawn(disk_monitor::disk_monitor(
        storage.clone(),
        bookie.clone(),
        registration.clone(),
        metrics.clone(),
        DiskMonitorConfig::from_config(&cfg),
    ));
    let gc = registration.as_ref().map(|reg| {
        tokio::spawn(gc::gc_loop(
            storage.clone(),
            bookie.clone(),
            reg.clone(),
            cfg.gc_wait_time.max(Duration::from_secs(1)),
            CompactionSchedule::from_config(&cfg),
        ))
    });

    // 4. Registration.
    if let Some(reg) = &registration {
        reg.register(bookie.is_read_only())
            .await
            .map_err(|e| NodeError::Registration(e.to_string()))?;
    }
    metrics.set_server_status(server_status(bookie.is_read_only()));
    tracing::info!(addr = %server.local_addr(), "bookie ready");

    // 5. Wait for a signal or a lost registration.
    let mut exit_code = 0;
    let mut fatal = registration.as_ref().map(|r| r.fatal());
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = interrupt.recv() => tracing::info!("SIGINT: shutting down"),
        reason = async {
            match fatal.as_mut() {
                Some(rx) => rx.wait_for(|r| r.is_some()).await.ok().and_then(|r| r.clone()),
                None => std::future::pending().await,
            }
        } => {
            tracing::error!(?reason, "registration lost; shutting down");
            exit_code = 1;
        }
    }

    bookie.set_read_only(true);
    let drained = server.shutdown().await;
    if !drained {
        tracing::warn!("requests still in flight after the drain timeout");
    }
    monitor.abort();
    if let Some(gc) = gc {
        gc.abort();
    }
    stop.store(true, Ordering::Release);
    let _ = tokio::task::spawn_blocking(move || flusher.join()).await;
    let st = storage.clone();
    match tokio::task::spawn_blocking(move || st.shutdown()).await {
        Ok(Ok(())) => tracing::info!("storage flushed and checkpointed"),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "final flush failed");
            exit_code = 70;
        }
        Err(e) => {
            tracing::error!(error = %e, "final flush task failed");
            exit_code = 70;
        }
    }
    if let Some(reg) = &registration {
        reg.shutdown().await;
    }
    metrics.set_server_status(ServerStatus::Unregistered);
    if let Some(m) = metrics_server {
        m.shutdown();
    }
    Ok(exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BookieArgs;
    use std::time::Duration;

    fn journal_of(text: &str) -> bk_journal::JournalConfig {
        let args = BookieArgs {
            standalone: true,
            ..Default::default()
        };
        let (cfg, _) = BookieConfig::from_text_and_args(Some(text), None, &args).unwrap();
        storage_config(&cfg).journal
    }

    #[test]
    fn journal_sizing_keys_apply_only_when_set() {
        // Absent: greedy group commit, 128 MiB segments, 2 free segments, whatever
        // Java's defaults (2 ms, 2048 MB, 5) would say.
        let d = journal_of("");
        assert_eq!(d.group_wait_max, None);
        assert_eq!(d.segment_bytes, 128 << 20);
        assert_eq!(d.free_segments_max, 2);
        // Set: applied (the segment size capped at 256 MiB).
        let s =
            journal_of("journalMaxGroupWaitMSec=3\njournalMaxSizeMB=4096\njournalMaxBackups=7\n");
        assert_eq!(s.group_wait_max, Some(Duration::from_millis(3)));
        assert_eq!(s.segment_bytes, 256 << 20);
        assert_eq!(s.free_segments_max, 7);
        // journalFlushWhenQueueEmpty=true keeps group commit greedy, as in Java.
        let f = journal_of("journalMaxGroupWaitMSec=3\njournalFlushWhenQueueEmpty=true\n");
        assert_eq!(f.group_wait_max, None);
        // A segment always holds one frame (5 MiB chunks) plus headers.
        let small = journal_of("journalMaxSizeMB=1\n");
        assert!(small.segment_bytes >= 5_242_880 + (1 << 20));
        assert_eq!(small.segment_bytes % 4096, 0);
        // The other journal keys keep their mapping.
        let q = journal_of("journalQueueSize=77\njournalBufferedWritesThreshold=100\n");
        assert_eq!(q.queue_records_max, 77);
        assert_eq!(q.group_bytes_max, 4096);
    }
}

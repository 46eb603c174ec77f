//! The whole bookie process, in start-up and shutdown order (docs/semantics.md §16), so that
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
//!    checkpoint, shut the journal and entry log down, unregister, exit 0. A fatal
//!    storage error, or ZooKeeper refusing our authentication, exits non-zero; a ZooKeeper
//!    outage or session expiry does not (registration retries until ZooKeeper is back).
//!
//! This file owns assembly and that order only; what each background task does lives
//! in its own module.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::mapping::{server_config, storage_config};
use crate::config::BookieConfig;
use crate::disk_monitor::{self, DiskMonitorConfig};
use crate::gc::{self, CompactionSchedule};
use crate::handlers::{Bookie, BookieOptions};
use crate::memory::{MemoryBound, MemoryUse};
use crate::metrics::adapters::memory_collector;
use crate::metrics::{self, Gauge, Metrics, ServerStatus};
use crate::mode::{self, ReadOnlyReason};
use crate::registration::{self, Registration};
use crate::request_metrics::MetricsObserver;
use crate::server::{RequestObserver, Server};
use crate::storage::real::{self, RealStorage};
use crate::storage::{exit_on_fatal, StorageError};

pub use crate::config::mapping::CURRENT_DIR;

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
    let server_cfg = server_config(&cfg);
    let bound = MemoryBound::of(&cfg, &server_cfg);
    tracing::info!(
        bound_mib = bound.total() >> 20,
        write_cache_mib = bound.write_cache >> 20,
        read_cache_mib = bound.read_cache >> 20,
        in_flight_mib = bound.in_flight >> 20,
        send_mib = bound.send >> 20,
        journal_mib = bound.journal >> 20,
        fixed_mib = bound.fixed >> 20,
        "memory bound (docs/memory.md)"
    );
    let server = Server::start_with_observer(bookie.clone(), server_cfg, Some(observer)).await?;
    metrics.add_collector(memory_collector(bound, {
        let probe = server.memory_probe();
        let storage = storage.clone();
        move || {
            let (write_cache, read_cache) = storage.cache_bytes();
            let journal = (0..storage.journal.journals())
                .filter_map(|i| storage.journal.metrics(i))
                .map(|m| m.memory_used_bytes.load(Ordering::Relaxed))
                .sum();
            MemoryUse {
                write_cache,
                read_cache,
                in_flight: probe.in_flight_bytes() as u64,
                receive_buffers: probe.receive_buffer_bytes() as u64,
                send: probe.send_bytes() as u64,
                journal,
            }
        }
    }));
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
        reg.register(bookie.mode().reasons().published_read_only())
            .await
            .map_err(|e| NodeError::Registration(e.to_string()))?;
    }
    // From here on every mode change (disk monitor, journal, operator) is published by
    // one task, in order.
    let publisher = tokio::spawn(mode::publish_mode(
        bookie.mode().clone(),
        registration.clone(),
        metrics.clone(),
    ));
    tracing::info!(addr = %server.local_addr(), "bookie ready");

    // 5. Wait for a signal, or for ZooKeeper to refuse our authentication.
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

    publisher.abort();
    bookie.set_read_only(ReadOnlyReason::ShuttingDown, true);
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

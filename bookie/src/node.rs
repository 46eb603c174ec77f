//! The whole bookie process, in start-up and shutdown order (docs/semantics.md §16), so that
//! `main.rs` stays a few lines:
//!
//! 0. the admin HTTP API / metrics listener(s) (`admin`), before anything slow, so probes
//!    see "alive, not ready" (200 / 503) during start-up rather than a refused connection;
//! 1. bookie id, cookie validation (ZooKeeper + directories; directories only when
//!    standalone) — a failure aborts start-up;
//! 2. storage: entry log opened, journal replayed into it, flushed, checkpointed;
//! 3. port bound, requests served (recorded by `request_metrics`); background flusher
//!    (flushInterval), disk-usage monitor (`disk_monitor`: diskCheckInterval ->
//!    read-only), the journal-disk watcher (`journal_space`: a full journal disk ->
//!    read-only), GC and compaction (`gc`: gcWaitTime; never when standalone), the
//!    scrubber (`scrubber`: localScrubInterval, and passes the operator asks for);
//! 4. registration in ZooKeeper (writable, or read-only when forced); from here the admin
//!    API's `is_ready` answers 200;
//! 5. on SIGTERM/SIGINT: `is_ready` answers 503 again; cancel GC, compaction and scrubbing
//!    (a pass in progress stops within one read batch, written entry or scrub chunk), stop reading requests and
//!    drain the ones in flight (at most [`DRAIN_BUDGET`]), flush + checkpoint, shut the
//!    journal and entry log down (done by [`STORAGE_DEADLINE`] after the signal),
//!    unregister, exit 0. A fatal
//!    storage error, or ZooKeeper refusing our authentication, exits non-zero; a ZooKeeper
//!    outage or session expiry does not (registration retries until ZooKeeper is back).
//!
//! Shutdown is bounded: `run` returns within [`SHUTDOWN_BUDGET`] of the signal and
//! `main` gives the runtime at most 1 s more, so the process is gone within 10 s of a
//! SIGTERM whatever runs (docs/semantics.md §16). A final flush that cannot finish in
//! time (a stalled or full disk) is given up: logged, exit code [`EXIT_FLUSH_GAVE_UP`],
//! the journal not trimmed. Nothing is lost by it: every acknowledged add is already
//! fsynced in the journal (acknowledgement waits for that), and the next start replays
//! it. A signal during start-up (steps 1-4) stops start-up the same way.
//!
//! This file owns assembly and that order only; what each background task does lives
//! in its own module.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bk_entrylog::Cancel;
use tokio::signal::unix::Signal;
use tokio::time::Instant;

use crate::admin::{self, AdminListeners, AdminState, Phase};
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
use crate::tls::contexts::TlsContexts;

pub use crate::config::mapping::CURRENT_DIR;

/// `run` returns within this of the stop signal (module docs).
pub const SHUTDOWN_BUDGET: Duration = Duration::from_secs(8);
/// The request drain takes at most this of it.
pub const DRAIN_BUDGET: Duration = Duration::from_secs(3);
/// The final flush, checkpoint and storage shutdown end by this, counted from the signal;
/// unregistering gets the rest of [`SHUTDOWN_BUDGET`].
pub const STORAGE_DEADLINE: Duration = Duration::from_millis(6500);
/// Exit code when the final flush did not finish within the budget (EX_TEMPFAIL): the
/// journal still holds every acknowledged entry and is replayed at the next start.
pub const EXIT_FLUSH_GAVE_UP: i32 = 75;

/// The next SIGTERM or SIGINT (one that arrived earlier and was not yet taken counts).
async fn stop_signal(term: &mut Signal, interrupt: &mut Signal) -> &'static str {
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = interrupt.recv() => "SIGINT",
    }
}

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
/// Builds the TLS contexts itself; a bad TLS file is then a [`NodeError::Fatal`] (the
/// binary builds them first, with [`run_with_tls`], to exit as for a configuration error).
pub async fn run(cfg: BookieConfig) -> Result<i32, NodeError> {
    let tls = TlsContexts::from_config(&cfg).map_err(|e| NodeError::Fatal(e.to_string()))?;
    run_with_tls(cfg, tls).await
}

/// [`run`] with the TLS contexts built at start-up (`tls::contexts`): `tls.bookie` is for
/// the bookie port, `tls.admin` for the admin listener; both are held in [`Surface`] for as
/// long as the bookie runs.
pub async fn run_with_tls(cfg: BookieConfig, tls: TlsContexts) -> Result<i32, NodeError> {
    // tlsCertFilesRefreshDurationSeconds: rebuilt while the bookie runs; stops when dropped.
    let _tls_refresh = match (&cfg.tls, &tls.bookie) {
        (Some(settings), Some(context)) => crate::tls::refresh::spawn(settings, context),
        _ => None,
    };
    // Signal handlers first: a SIGTERM that arrives while we start stops start-up (below)
    // rather than killing the process with the default action and leaving a registration
    // behind.
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let addr = registration::resolve_bookie_address(&cfg, cfg.bookie_port)
        .map_err(|e| NodeError::BookieId(e.to_string()))?;
    tracing::info!(
        bookie_id = %addr.bookie_id,
        standalone = cfg.metadata_service.is_none(),
        "starting bookie"
    );

    // 0. Admin API and metrics listeners (a port that cannot be bound is logged, not fatal).
    let chaos = crate::chaos::from_config(&cfg).map_err(NodeError::Fatal)?;
    let metrics = Metrics::new();
    metrics.add_collector(crate::chaos::collector(chaos.clone()));
    let admin_state = AdminState::new(
        Arc::new(cfg.clone()),
        addr.bookie_id.clone(),
        metrics.clone(),
    );
    admin_state.set_bookie_address(addr.clone());
    if let Some(c) = chaos {
        admin_state.set_chaos(c);
    }
    let listeners = match admin::start_with_tls(&cfg, admin_state.clone(), tls.admin.clone()).await
    {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!(error = %e, "admin HTTP API / metrics endpoint not started");
            None
        }
    };
    let surface = Surface {
        metrics,
        admin_state,
        listeners,
        tls,
    };

    // Steps 1-2 bind no bookie port, so nothing was acknowledged: a signal abandons them
    // at once (a journal replay cut short is replayed again at the next start, as after
    // a crash).
    let started = tokio::select! {
        opened = open(&cfg, &addr, &surface.admin_state) => opened,
        name = stop_signal(&mut term, &mut interrupt) => {
            tracing::info!("{name} during start-up: stopping before serving");
            surface.shutdown();
            return Ok(0);
        }
    };
    match started {
        Ok(opened) => serve(cfg, addr.listen_ip, opened, surface, term, interrupt).await,
        Err(e) => {
            surface.shutdown();
            Err(e)
        }
    }
}

/// The operator's surface, up from step 0 to the end: metrics, the admin API's state, and
/// the listeners serving them.
struct Surface {
    metrics: Metrics,
    admin_state: Arc<AdminState>,
    listeners: Option<AdminListeners>,
    /// The TLS contexts of the bookie port and of the admin listener (`None`: plain).
    tls: TlsContexts,
}

impl Surface {
    fn shutdown(self) {
        if let Some(l) = self.listeners {
            l.shutdown();
        }
    }
}

/// What steps 1-2 bring up.
struct Opened {
    registration: Option<Arc<Registration>>,
    storage: Arc<RealStorage>,
}

/// Steps 1-2: cookies (and the ZooKeeper session), then storage.
async fn open(
    cfg: &BookieConfig,
    addr: &registration::BookieAddress,
    admin_state: &AdminState,
) -> Result<Opened, NodeError> {
    let standalone = cfg.metadata_service.is_none();
    let mut disk = bk_disk::open_disk(&bk_disk::DiskConfig::default())?.disk;
    let mut storage_cfg = storage_config(cfg);
    storage_cfg.chaos = admin_state.chaos();
    create_dirs(disk.as_mut(), &storage_cfg.journal_dirs)?;
    create_dirs(disk.as_mut(), &storage_cfg.ledger_dirs)?;

    // 1. Cookies.
    let registration = if standalone {
        registration::check_cookies_standalone(cfg, addr, disk.as_mut())
            .map_err(|e| NodeError::Registration(e.to_string()))?;
        None
    } else {
        let reg = Registration::connect(cfg, addr)
            .await
            .map_err(|e| NodeError::Registration(e.to_string()))?;
        reg.check_cookies(cfg, addr, disk.as_mut())
            .await
            .map_err(|e| NodeError::Registration(e.to_string()))?;
        let reg = Arc::new(reg);
        admin_state.set_registration(reg.clone());
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
    Ok(Opened {
        registration,
        storage,
    })
}

/// Steps 3-5: serve until a signal or a fatal error, then shut down within the budget.
async fn serve(
    cfg: BookieConfig,
    listen_ip: Option<std::net::IpAddr>,
    opened: Opened,
    surface: Surface,
    mut term: Signal,
    mut interrupt: Signal,
) -> Result<i32, NodeError> {
    let Opened {
        registration,
        storage,
    } = opened;
    let Surface {
        metrics,
        admin_state,
        listeners,
        // The admin listener took `tls.admin` at step 0; the bookie server takes `tls.bookie`.
        tls,
    } = surface;
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
    // persistBookieStatusEnabled: the operator's read-only state from before the restart.
    crate::bookie_status::restore(&cfg, &bookie);
    admin_state.set_bookie(bookie.clone());

    // Full ledger disks (a flush without room, at start-up too) make the bookie
    // read-only at once, not only at the next disk check.
    disk_monitor::follow_storage_mode(&storage, &bookie, cfg.read_only_mode_enabled)?;

    // 3. Serve, with metrics.
    for i in 0..storage.journal.journals() {
        if let Some(m) = storage.journal.metrics(i) {
            metrics.add_collector(metrics::adapters::journal_collector(m, i));
        }
    }
    metrics.gauge_set(Gauge::JournalDirs, storage.journal.journals() as i64);
    metrics.gauge_set(Gauge::JournalQueueMaxSize, cfg.journal_queue_size as i64);
    metrics.add_collector(metrics::adapters::journal_memory_max_collector(
        storage.journal.journals(),
        storage_config(&cfg).journal.in_flight_bytes_max,
    ));
    metrics.add_collector(metrics::adapters::entrylog_collector(
        storage.clone(),
        &storage_config(&cfg).ledger_dirs,
    ));
    metrics.add_collector(metrics::adapters::ledger_dirs_collector({
        let storage = storage.clone();
        move || storage.dir_usages()
    }));
    // enableStatistics=false: requests are not recorded (Java's request processor),
    // nor the waits inside them.
    if cfg.enable_statistics {
        bookie.record_waits_into(metrics.clone());
    }
    let observer: Option<Arc<dyn RequestObserver>> = cfg
        .enable_statistics
        .then(|| Arc::new(MetricsObserver(metrics.clone())) as Arc<dyn RequestObserver>);
    let mut server_cfg = server_config(&cfg);
    server_cfg.tls = tls.bookie.clone();
    if let Some(authz) = &cfg.bookie_authz {
        let authorizer = crate::tls::authz::BookieAuthZ::new(authz.authorized_roles.clone())
            .map_err(NodeError::Fatal)?;
        server_cfg.authorizer = Some(Arc::new(authorizer));
    }
    if let Some(ip) = listen_ip {
        server_cfg.bind.set_ip(ip);
    }
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
    let server = Server::start_with_observer(bookie.clone(), server_cfg, observer).await?;
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
    let monitor = tokio::spawn(disk_monitor::disk_monitor(
        storage.clone(),
        bookie.clone(),
        DiskMonitorConfig::from_config(&cfg),
    ));
    let maintenance = Cancel::new();
    let journal_space = tokio::spawn(crate::journal_space::journal_space_watcher(
        storage.clone(),
        bookie.clone(),
    ));
    let gc = registration.as_ref().map(|reg| {
        let overreplicated_deleted = prometheus_client::metrics::counter::Counter::default();
        metrics.registry().register(
            "bookie_rs_gc_overreplicated_ledgers_deleted",
            "Ledgers deleted because no ensemble of their metadata lists this bookie",
            overreplicated_deleted.clone(),
        );
        tokio::spawn(gc::gc_loop(
            storage.clone(),
            bookie.clone(),
            reg.clone(),
            cfg.gc_wait_time.max(Duration::from_secs(1)),
            CompactionSchedule::from_config(&cfg),
            gc::GcMetadataOptions::from_config(&cfg, overreplicated_deleted),
            maintenance.clone(),
            admin_state.gc_trigger(),
        ))
    });

    // The scrubber runs with or without ZooKeeper (it reads local files only).
    let scrub = tokio::spawn(crate::scrubber::scrub_loop(
        storage.clone(),
        admin_state.scrubber(),
        crate::scrubber::ScrubSchedule::from_config(&cfg),
        maintenance.clone(),
    ));

    // 4. Registration (a signal meanwhile goes straight to the shutdown of step 5).
    let mut signalled = None;
    if let Some(reg) = &registration {
        tokio::select! {
            registered = reg.register(bookie.mode().reasons().published_read_only()) => {
                registered.map_err(|e| NodeError::Registration(e.to_string()))?;
            }
            name = stop_signal(&mut term, &mut interrupt) => signalled = Some(name),
        }
    }
    // From here on every mode change (disk monitor, journal, operator) is published by
    // one task, in order.
    let publisher = tokio::spawn(mode::publish_mode(
        bookie.mode().clone(),
        registration.clone(),
        metrics.clone(),
    ));
    admin_state.set_phase(Phase::Running);
    tracing::info!(addr = %server.local_addr(), "bookie ready");

    // 5. Wait for a signal, or for ZooKeeper to refuse our authentication.
    let mut exit_code = 0;
    let mut fatal = registration.as_ref().map(|r| r.fatal());
    match signalled {
        Some(name) => tracing::info!("{name} during registration: shutting down"),
        None => tokio::select! {
            name = stop_signal(&mut term, &mut interrupt) => {
                tracing::info!("{name}: shutting down");
            }
            reason = async {
                match fatal.as_mut() {
                    Some(rx) => rx.wait_for(|r| r.is_some()).await.ok().and_then(|r| r.clone()),
                    None => std::future::pending().await,
                }
            } => {
                tracing::error!(?reason, "registration lost; shutting down");
                exit_code = 1;
            }
        },
    }
    let signal_at = Instant::now();

    admin_state.set_phase(Phase::ShuttingDown);
    // Maintenance first: a compaction or GC pass holds the entry log open, and closing
    // it would wait for the pass (at its configured rate, minutes).
    maintenance.cancel();
    scrub.abort();
    journal_space.abort();
    if let Some(gc) = gc {
        gc.abort();
    }
    monitor.abort();
    publisher.abort();
    bookie.set_read_only(ReadOnlyReason::ShuttingDown, true);
    if tokio::time::timeout(DRAIN_BUDGET, server.shutdown())
        .await
        .map_or(true, |drained| !drained)
    {
        tracing::warn!(
            budget = ?DRAIN_BUDGET,
            "requests still in flight after the drain; they are not answered"
        );
    }
    // The flusher may be in a flush; the final flush waits for it (one at a time).
    stop.store(true, Ordering::Release);
    let st = storage.clone();
    let final_flush = tokio::task::spawn_blocking(move || {
        let _ = flusher.join();
        st.shutdown()
    });
    match tokio::time::timeout_at(signal_at + STORAGE_DEADLINE, final_flush).await {
        Ok(Ok(Ok(()))) => tracing::info!("storage flushed and checkpointed"),
        Ok(Ok(Err(e))) => {
            tracing::error!(error = %e, "final flush failed");
            exit_code = 70;
        }
        Ok(Err(e)) => {
            tracing::error!(error = %e, "final flush task failed");
            exit_code = 70;
        }
        Err(_) => {
            // The blocked flush is left behind (the process exits under it); the journal
            // is not trimmed, and it holds every acknowledged add (fsynced before it was
            // acknowledged), so the next start replays what the entry log lacks.
            tracing::error!(
                deadline = ?STORAGE_DEADLINE,
                "final flush did not finish in time (stalled or full disk?): giving up; \
                 every acknowledged entry is in the journal and is replayed at the next start"
            );
            exit_code = EXIT_FLUSH_GAVE_UP;
        }
    }
    if let Some(reg) = &registration {
        if tokio::time::timeout_at(signal_at + SHUTDOWN_BUDGET, reg.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                "unregistering did not finish in time; the node goes when the session expires"
            );
        }
    }
    metrics.set_server_status(ServerStatus::Unregistered);
    if let Some(l) = listeners {
        l.shutdown();
    }
    Ok(exit_code)
}

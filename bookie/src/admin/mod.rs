//! `admin`: the bookie's HTTP admin API (`httpServerEnabled=true`, on `httpServerPort`), with
//! the stock 4.17 bookie's paths, methods, status codes and JSON keys (docs/config.md §2), and
//! `/metrics` + `/heartbeat` on the same port, as the Apache Pulsar Helm chart runs it.
//!
//! Owns: [`AdminState`] (what the endpoints read: the start-up phase, the bookie once storage
//! is open, the ZooKeeper registration, the GC trigger), the router, and the helpers that shape
//! answers. One file per endpoint family: `bookie` (state, readiness, read-only toggle, disk,
//! journal mark, GC), `compaction` (GC details, suspending and resuming compaction),
//! `sanity` (write and read a ledger here), `chaos` (inject, list and clear disk faults when
//! `chaosEnabled=true`, docs/chaos.md), `scrub` (start and watch a scrub pass, list
//! detected corruptions), `cluster` (bookie listings from ZooKeeper),
//! `bookie_info` (disk space of every bookie, asked over the bookie protocol), `ledger`
//! (list, metadata, delete; + `ledger_metadata`, the metadata znode decoder), `ledger_read`
//! (entries from this bookie's storage), `autorecovery`, `decommission` (waits until a
//! bookie's ledgers moved off it), `recovery` (re-replicates a lost bookie's ledgers; +
//! `bookie_client`, requests to other bookies), `expand_storage` (the start-up cookie
//! check, again), `entry_location` (Java's answers for a storage without a location
//! index), `config`; `zk` the bounded
//! ZooKeeper calls; `listener` binds the ports and bounds the connections.
//!
//! Guarantees:
//! - the server is up before storage opens (node.rs starts it first), so while the journal
//!   replays `/api/v1/bookie/state` answers 200 (`running: false`: the Helm liveness probe
//!   passes) and `/api/v1/bookie/is_ready` answers 503 (readiness and startup probes wait);
//! - `is_ready` is 200 only in [`Phase::Running`]: storage opened (journal replayed), the
//!   bookie port serving and the bookie registered; 503 again from the first moment of
//!   shutdown;
//! - an endpoint that needs the bookie or ZooKeeper before it exists answers 503, never
//!   made-up data; endpoints that talk to ZooKeeper bound each call by `zkTimeout`;
//! - a wrong method gets the status Java gives for it (mostly 404, `gc` 405, `/metrics` 403).

mod autorecovery;
mod bookie;
pub mod bookie_client;
mod bookie_info;
mod chaos;
mod cluster;
mod compaction;
mod config;
mod decommission;
mod entry_location;
mod expand_storage;
mod java_string;
mod ledger;
pub mod ledger_metadata;
mod ledger_read;
mod ledger_recovery;
pub mod listener;
mod recovery;
mod sanity;
mod scrub;
mod zk;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;

use crate::config::BookieConfig;
use crate::gc_trigger::GcTrigger;
use crate::handlers::Bookie;
use crate::metrics::Metrics;
use crate::registration::{BookieAddress, Registration};
use crate::scrubber::Scrubber;

pub use listener::{start_from_config, start_with_tls, AdminListeners};

/// Where the process is in its life (node.rs steps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Cookies checked, journal replaying, port not yet serving, or not yet registered.
    Starting = 0,
    /// Serving and registered.
    Running = 1,
    /// A signal or a fatal error arrived: draining.
    ShuttingDown = 2,
}

/// What the admin endpoints read (module docs). Shared by the listener(s) and node.rs.
pub struct AdminState {
    cfg: Arc<BookieConfig>,
    bookie_id: String,
    metrics: Metrics,
    phase: AtomicU8,
    bookie: OnceLock<Arc<Bookie>>,
    registration: OnceLock<Arc<Registration>>,
    /// The address start-up derived (its id and the alternate ids the cookie check reads).
    address: OnceLock<BookieAddress>,
    /// One `expand_storage` cookie check at a time.
    cookie_check: tokio::sync::Mutex<()>,
    gc: Arc<GcTrigger>,
    scrubber: Arc<Scrubber>,
    /// The chaos control, when `chaosEnabled=true` (set once, before storage opens).
    chaos: OnceLock<Arc<bk_disk::chaos::Chaos>>,
}

impl AdminState {
    pub fn new(cfg: Arc<BookieConfig>, bookie_id: String, metrics: Metrics) -> Arc<AdminState> {
        Arc::new(AdminState {
            cfg,
            bookie_id,
            metrics,
            phase: AtomicU8::new(Phase::Starting as u8),
            bookie: OnceLock::new(),
            registration: OnceLock::new(),
            address: OnceLock::new(),
            cookie_check: tokio::sync::Mutex::new(()),
            gc: Arc::new(GcTrigger::default()),
            scrubber: Arc::new(Scrubber::default()),
            chaos: OnceLock::new(),
        })
    }

    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            0 => Phase::Starting,
            1 => Phase::Running,
            _ => Phase::ShuttingDown,
        }
    }

    /// Moves to `phase`; never back from [`Phase::ShuttingDown`].
    pub fn set_phase(&self, phase: Phase) {
        let _ = self
            .phase
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (p != Phase::ShuttingDown as u8).then_some(phase as u8)
            });
    }

    /// The bookie, once storage is open (set once).
    pub fn set_bookie(&self, bookie: Arc<Bookie>) {
        let _ = self.bookie.set(bookie);
    }

    /// The ZooKeeper registration, once connected (set once; never in standalone mode).
    pub fn set_registration(&self, registration: Arc<Registration>) {
        let _ = self.registration.set(registration);
    }

    /// The bookie address start-up derived and checked the cookies with (set once, before
    /// the cookie check; `expand_storage` checks them again with it).
    pub fn set_bookie_address(&self, address: BookieAddress) {
        let _ = self.address.set(address);
    }

    /// The trigger the GC loop serves (`PUT /api/v1/bookie/gc`).
    pub fn gc_trigger(&self) -> Arc<GcTrigger> {
        self.gc.clone()
    }

    /// The scrubber the scrub loop serves (`/api/v1/bookie/scrub`, `corruptions`).
    pub fn scrubber(&self) -> Arc<Scrubber> {
        self.scrubber.clone()
    }

    /// The chaos control (`chaosEnabled=true`; set once, before storage opens).
    pub fn set_chaos(&self, chaos: Arc<bk_disk::chaos::Chaos>) {
        let _ = self.chaos.set(chaos);
    }

    /// The chaos control, `None` while chaos is off.
    pub fn chaos(&self) -> Option<Arc<bk_disk::chaos::Chaos>> {
        self.chaos.get().cloned()
    }

    fn bookie(&self) -> Option<&Arc<Bookie>> {
        self.bookie.get()
    }

    fn registration(&self) -> Option<&Arc<Registration>> {
        self.registration.get()
    }

    /// Bound for one ZooKeeper call of an endpoint.
    fn zk_timeout(&self) -> Duration {
        self.cfg.zk_timeout.max(Duration::from_secs(1))
    }
}

/// Shared state as the handlers extract it.
type Shared = axum::extract::State<Arc<AdminState>>;

/// The full admin router: every endpoint, plus `/metrics` and `/heartbeat`.
pub fn router(state: Arc<AdminState>) -> Router {
    Router::new()
        .route("/heartbeat", any(heartbeat))
        .route("/metrics", any(metrics))
        .route("/api/v1/config/server_config", any(config::server_config))
        .route("/api/v1/bookie/state", any(bookie::state))
        .route("/api/v1/bookie/is_ready", any(bookie::is_ready))
        .route("/api/v1/bookie/state/readonly", any(bookie::readonly))
        .route("/api/v1/bookie/info", any(bookie::info))
        .route("/api/v1/bookie/last_log_mark", any(bookie::last_log_mark))
        .route("/api/v1/bookie/list_disk_file", any(bookie::list_disk_file))
        .route("/api/v1/bookie/gc", any(bookie::gc))
        .route("/api/v1/bookie/gc_details", any(compaction::gc_details))
        .route("/api/v1/bookie/scrub", any(scrub::scrub))
        .route("/api/v1/bookie/corruptions", any(scrub::corruptions))
        .route(
            "/api/v1/bookie/gc/suspend_compaction",
            any(compaction::suspend),
        )
        .route(
            "/api/v1/bookie/gc/resume_compaction",
            any(compaction::resume),
        )
        .route("/api/v1/bookie/sanity", any(sanity::sanity))
        .route(
            "/api/v1/bookie/expand_storage",
            any(expand_storage::expand_storage),
        )
        .route(
            "/api/v1/bookie/entry_location_compact",
            any(entry_location::entry_location_compact),
        )
        .route("/api/v1/bookie/list_bookies", any(cluster::list_bookies))
        .route(
            "/api/v1/bookie/list_bookie_info",
            any(bookie_info::list_bookie_info),
        )
        .route("/api/v1/bookie/cluster_info", any(cluster::cluster_info))
        .route("/api/v1/ledger/list", any(ledger::list))
        .route("/api/v1/ledger/metadata", any(ledger::metadata))
        .route("/api/v1/ledger/delete", any(ledger::delete))
        .route("/api/v1/ledger/read", any(ledger_read::read))
        .route("/api/v1/autorecovery/status", any(autorecovery::status))
        .route(
            "/api/v1/autorecovery/who_is_auditor",
            any(autorecovery::who_is_auditor),
        )
        .route(
            "/api/v1/autorecovery/list_under_replicated_ledger",
            any(autorecovery::list_under_replicated_ledger),
        )
        .route(
            "/api/v1/autorecovery/lost_bookie_recovery_delay",
            any(autorecovery::lost_bookie_recovery_delay),
        )
        .route(
            "/api/v1/autorecovery/trigger_audit",
            any(autorecovery::trigger_audit),
        )
        .route(
            "/api/v1/autorecovery/decommission",
            any(decommission::decommission),
        )
        .route("/api/v1/autorecovery/bookie", any(recovery::recover))
        .route("/api/v1/chaos/faults", any(chaos::faults))
        .fallback(not_found)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// The router of a metrics-only port (`prometheusStatsHttpPort`): `/metrics`, `/heartbeat`.
pub fn metrics_router(state: Arc<AdminState>) -> Router {
    Router::new()
        .route("/heartbeat", any(heartbeat))
        .route("/metrics", any(metrics))
        .fallback(not_found)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Largest request body read (a `PUT` body is a few bytes of JSON).
const MAX_BODY_BYTES: usize = 64 * 1024;

async fn heartbeat() -> Response {
    text(StatusCode::OK, "OK\n")
}

/// `/metrics`: the stock exposition (metrics.rs renders it); GET only (403 as Java);
/// without the Prometheus provider 500 with Java's answer for `NullStatsProvider`.
async fn metrics(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return text(
            StatusCode::FORBIDDEN,
            &format!("{method} is forbidden. Should be GET method"),
        );
    }
    if !state.cfg.metrics_enabled {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Currently stats provider doesn't support exporting metrics in http service",
        );
    }
    let body = state.metrics.encode();
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

async fn not_found() -> Response {
    text(StatusCode::NOT_FOUND, "Not found")
}

/// A plain-text answer.
fn text(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

/// A JSON answer, pretty-printed as Java's `JsonUtil.toJson` prints it.
fn json(status: StatusCode, value: &serde_json::Value) -> Response {
    let body = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_string());
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Java's answer to a method an endpoint does not serve (most endpoints: 404).
fn wrong_method(message: &str) -> Response {
    text(StatusCode::NOT_FOUND, message)
}

/// 503 while the bookie (storage) is not open yet.
fn not_started() -> Response {
    text(
        StatusCode::SERVICE_UNAVAILABLE,
        "Bookie is not fully started yet",
    )
}

/// 503 for an endpoint that needs ZooKeeper when there is none (standalone) or not yet.
fn no_metadata_store(state: &AdminState) -> Response {
    if state.cfg.metadata_service.is_none() {
        text(
            StatusCode::SERVICE_UNAVAILABLE,
            "No metadata store: the bookie runs standalone",
        )
    } else {
        text(
            StatusCode::SERVICE_UNAVAILABLE,
            "Not connected to the metadata store yet",
        )
    }
}

#[cfg(test)]
mod tests;

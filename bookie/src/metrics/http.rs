//! The `/metrics` endpoint as a stand-alone handle ([`MetricsServer`]), for callers that
//! want only metrics (tests, embedders). The HTTP server itself is the admin API's
//! (`crate::admin::listener`, hyper): which port serves `/metrics` is decided there
//! (`httpServerPort` with `httpServerEnabled=true`, else `prometheusStatsHttpPort`).
//!
//! Behaviour: `GET /metrics` -> 200, `text/plain; version=0.0.4; charset=utf-8`; another
//! method on `/metrics` -> 403 (as Java); `/heartbeat` -> 200 `OK\n`; on the metrics-only
//! port anything else -> 404. Bounds: those of `admin::listener`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::Metrics;
use crate::admin::{self, AdminListeners, AdminState};
use crate::config::BookieConfig;

/// A running listener that serves `/metrics`. Dropping it does not stop it; call
/// [`MetricsServer::shutdown`].
pub struct MetricsServer {
    local_addr: SocketAddr,
    listeners: AdminListeners,
}

impl MetricsServer {
    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting and rotating.
    pub fn shutdown(&self) {
        self.listeners.shutdown();
    }

    /// Starts the listener the configuration asks for `/metrics` (admin::listener docs);
    /// `Ok(None)` if metrics are off (no Prometheus provider, no `--metrics-port`) or the
    /// Prometheus endpoint is disabled.
    pub async fn start_from_config(
        cfg: &BookieConfig,
        metrics: Metrics,
    ) -> std::io::Result<Option<MetricsServer>> {
        let state = AdminState::new(Arc::new(cfg.clone()), String::new(), metrics);
        let listeners = admin::start_from_config(cfg, state).await?;
        Ok(listeners.metrics_addr().map(|local_addr| MetricsServer {
            local_addr,
            listeners,
        }))
    }
}

/// Binds `addr` and serves `/metrics` (and `/heartbeat`) until shut down.
pub async fn serve(
    metrics: Metrics,
    addr: SocketAddr,
    rollover: Duration,
) -> std::io::Result<MetricsServer> {
    // Asked for explicitly: metrics on whatever the default stats provider.
    let mut cfg = BookieConfig::defaults_standalone();
    cfg.metrics_enabled = true;
    let state = AdminState::new(Arc::new(cfg), String::new(), metrics);
    let listeners = admin::listener::serve_metrics(state, addr, rollover).await?;
    let local_addr = listeners
        .metrics_addr()
        .ok_or_else(|| std::io::Error::other("metrics listener did not start"))?;
    Ok(MetricsServer {
        local_addr,
        listeners,
    })
}

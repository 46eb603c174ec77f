//! Where the admin API and `/metrics` listen, and the bounded HTTP/1.1 accept loop (hyper)
//! behind both.
//!
//! Ports (decision, as the Java bookie and its Prometheus provider do):
//! - `httpServerEnabled=true`: one listener on `httpServerHost:httpServerPort` serves the
//!   whole admin API plus `/metrics` and `/heartbeat` (Java's provider opens no port of its
//!   own then), so the Helm chart's `httpServerPort=8000` = `prometheusStatsHttpPort=8000`
//!   is one listener;
//! - `httpServerEnabled=false`: with metrics on (`statsProviderClass` the Prometheus
//!   provider, or `--metrics-port`; docs/metrics.md §1) and `prometheusStatsHttpEnable`,
//!   a metrics-only listener on `prometheusStatsHttpAddress:prometheusStatsHttpPort`
//!   serves `/metrics` and `/heartbeat`, everything else 404; with metrics off, none.
//!
//! Bounds: at most [`MAX_CONNECTIONS`] connections per listener (others wait in the accept
//! queue), a request head within [`HEAD_TIMEOUT`] and [`MAX_HEAD_BYTES`], one request per
//! connection (no keep-alive: probes and scrapes open one each), bodies up to 64 KiB
//! (mod.rs). While a listener serves `/metrics`, the op-stat quantile window closes every
//! `prometheusStatsLatencyRolloverSeconds` (`metrics/rollover.rs`).
//!
//! TLS (`httpServerTlsEnable`, docs/tls.md §5): given a [`TlsContext`], the admin listener
//! serves HTTPS only: every accepted connection completes a TLS handshake, from the context's
//! current config and within [`HEAD_TIMEOUT`], before hyper reads a byte; a handshake that
//! fails or stalls closes that connection only. `/metrics` on the admin port goes over the
//! same TLS. The metrics-only listener stays plaintext, as Java's Prometheus port does.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use super::AdminState;
use crate::config::BookieConfig;
use crate::metrics::rollover;
use crate::tls::TlsContext;

/// Connections served at once per listener.
pub const MAX_CONNECTIONS: usize = 64;
/// Time to receive a request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// One bound listener and its accept loop.
pub struct Listener {
    local_addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl Listener {
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

/// The listeners the configuration asked for (module docs). Dropping does not stop them;
/// call [`AdminListeners::shutdown`].
pub struct AdminListeners {
    admin: Option<Listener>,
    metrics_only: Option<Listener>,
    serves_metrics: bool,
    rotate: Option<JoinHandle<()>>,
}

impl AdminListeners {
    /// The admin API's address (`httpServerEnabled=true`).
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(Listener::local_addr)
    }

    /// The address that serves `/metrics` with statistics on, if any.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        if !self.serves_metrics {
            return None;
        }
        self.metrics_only
            .as_ref()
            .or(self.admin.as_ref())
            .map(Listener::local_addr)
    }

    /// Stops accepting (a request being answered completes) and rotating.
    pub fn shutdown(&self) {
        for l in self.admin.iter().chain(self.metrics_only.iter()) {
            l.accept.abort();
        }
        if let Some(r) = &self.rotate {
            r.abort();
        }
    }
}

/// Starts what the configuration asks for (module docs), all plaintext; a listener that
/// cannot be bound is an error naming its key and address.
pub async fn start_from_config(
    cfg: &BookieConfig,
    state: Arc<AdminState>,
) -> std::io::Result<AdminListeners> {
    start_with_tls(cfg, state, None).await
}

/// [`start_from_config`], the admin listener over TLS from `admin_tls` when given (module
/// docs); the metrics-only listener is plaintext either way.
pub async fn start_with_tls(
    cfg: &BookieConfig,
    state: Arc<AdminState>,
    admin_tls: Option<Arc<TlsContext>>,
) -> std::io::Result<AdminListeners> {
    let statistics = cfg.metrics_enabled;
    let admin = if cfg.http_server_enabled {
        let addr = resolve(
            "httpServerHost",
            &cfg.http_server_host,
            cfg.http_server_port,
        )
        .await?;
        let tls = admin_tls.is_some();
        let l = bind(
            "httpServerPort",
            addr,
            super::router(state.clone()),
            admin_tls,
        )
        .await?;
        tracing::info!(addr = %l.local_addr, tls, "admin HTTP API listening (with /metrics)");
        Some(l)
    } else {
        None
    };
    let metrics_only = if !cfg.http_server_enabled && statistics && cfg.prometheus_stats_http_enable
    {
        let addr = resolve(
            "prometheusStatsHttpAddress",
            &cfg.prometheus_stats_http_address,
            cfg.prometheus_stats_http_port,
        )
        .await?;
        let l = bind(
            "prometheusStatsHttpPort",
            addr,
            super::metrics_router(state.clone()),
            None,
        )
        .await?;
        tracing::info!(addr = %l.local_addr, "metrics endpoint listening");
        Some(l)
    } else {
        None
    };
    let serves_metrics = statistics && (admin.is_some() || metrics_only.is_some());
    let rotate = serves_metrics
        .then(|| rollover::spawn(state.metrics.clone(), cfg.prometheus_stats_latency_rollover));
    Ok(AdminListeners {
        admin,
        metrics_only,
        serves_metrics,
        rotate,
    })
}

/// A metrics-only listener on `addr` (tests, embedders), its quantile window `rollover`.
pub async fn serve_metrics(
    state: Arc<AdminState>,
    addr: SocketAddr,
    rollover: Duration,
) -> std::io::Result<AdminListeners> {
    let l = bind("metrics", addr, super::metrics_router(state.clone()), None).await?;
    Ok(AdminListeners {
        admin: None,
        metrics_only: Some(l),
        serves_metrics: true,
        rotate: Some(rollover::spawn(state.metrics.clone(), rollover)),
    })
}

async fn resolve(key: &str, host: &str, port: u16) -> std::io::Result<SocketAddr> {
    tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("{key} {host}: {e}")))?
        .next()
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{key}: cannot resolve {host}"),
            )
        })
}

/// Binds `addr` and serves `router` on it until aborted, over TLS from `tls` when given
/// (module docs).
pub async fn bind(
    key: &str,
    addr: SocketAddr,
    router: Router,
    tls: Option<Arc<TlsContext>>,
) -> std::io::Result<Listener> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("{key} {addr}: {e}")))?;
    let local_addr = listener.local_addr()?;
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let accept = tokio::spawn(async move {
        loop {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return;
            };
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, %local_addr, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let router = router.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let Some(ctx) = tls else {
                    return serve_http(stream, router).await;
                };
                // The config current now: a certificate refresh reaches new connections.
                let acceptor = TlsAcceptor::from(ctx.current());
                match tokio::time::timeout(HEAD_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => serve_http(stream, router).await,
                    Ok(Err(e)) => {
                        tracing::debug!(error = %e, %peer, %local_addr, "HTTPS handshake failed")
                    }
                    Err(_) => {
                        tracing::debug!(%peer, %local_addr, "HTTPS handshake timed out")
                    }
                }
            });
        }
    });
    Ok(Listener { local_addr, accept })
}

/// One HTTP/1.1 exchange on `stream` (plain TCP or TLS), bounded as the module docs say.
async fn serve_http<S>(stream: S, router: Router)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(router);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .keep_alive(false)
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    if let Err(e) = conn.await {
        tracing::debug!(error = %e, "HTTP connection failed");
    }
}

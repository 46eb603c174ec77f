//! A tiny HTTP/1.1 server for `/metrics` (and `/heartbeat`), on tokio.
//!
//! Where it listens (decision, mirrors the Java Prometheus provider): with
//! `httpServerEnabled=false` on `prometheusStatsHttpAddress:prometheusStatsHttpPort`
//! (0.0.0.0:8000); with `httpServerEnabled=true`, Java serves `/metrics` on the admin HTTP
//! server instead, so we listen on `httpServerHost:httpServerPort` and answer `/metrics` and
//! `/heartbeat` there (the rest of the admin API is not implemented: 404).
//!
//! Behaviour: `GET /metrics` -> 200, `text/plain; version=0.0.4; charset=utf-8`; another method
//! on `/metrics` -> 403 (as Java); `/heartbeat` -> 200 `OK\n`; anything else -> 404. One request
//! per connection (`Connection: close`).
//!
//! Bounds: at most 64 connections served at once (others wait in the accept queue), request
//! head at most 8 KiB, 10 s to receive it; the op-stat quantile window is rotated every
//! `rollover`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::Metrics;
use crate::config::BookieConfig;

const MAX_HEAD_BYTES: usize = 8 * 1024;
const MAX_CONNECTIONS: usize = 64;
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// The running metrics endpoint. Dropping it does not stop it; call [`MetricsServer::shutdown`].
pub struct MetricsServer {
    local_addr: SocketAddr,
    accept: tokio::task::JoinHandle<()>,
    rotate: tokio::task::JoinHandle<()>,
}

impl MetricsServer {
    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting and rotating.
    pub fn shutdown(&self) {
        self.accept.abort();
        self.rotate.abort();
    }

    /// Starts the endpoint the configuration asks for; `Ok(None)` if statistics or the
    /// Prometheus endpoint are disabled (`enableStatistics=false` / `prometheusStatsHttpEnable=false`).
    pub async fn start_from_config(
        cfg: &BookieConfig,
        metrics: Metrics,
    ) -> std::io::Result<Option<MetricsServer>> {
        if !cfg.enable_statistics || (!cfg.prometheus_stats_http_enable && !cfg.http_server_enabled)
        {
            return Ok(None);
        }
        let (host, port) = if cfg.http_server_enabled {
            (cfg.http_server_host.as_str(), cfg.http_server_port)
        } else {
            (
                cfg.prometheus_stats_http_address.as_str(),
                cfg.prometheus_stats_http_port,
            )
        };
        let addr = tokio::net::lookup_host((host, port))
            .await?
            .next()
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("cannot resolve {host}"),
                )
            })?;
        serve(metrics, addr, Duration::from_secs(60))
            .await
            .map(Some)
    }
}

/// Binds `addr` and serves `/metrics` until shut down.
pub async fn serve(
    metrics: Metrics,
    addr: SocketAddr,
    rollover: Duration,
) -> std::io::Result<MetricsServer> {
    let listener = TcpListener::bind(addr).await?;
    let local_addr = listener.local_addr()?;
    let m = metrics.clone();
    let rotate = tokio::spawn(async move {
        let mut tick = tokio::time::interval(rollover.max(Duration::from_millis(10)));
        tick.tick().await; // the first tick is immediate
        loop {
            tick.tick().await;
            m.rotate();
        }
    });
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let accept = tokio::spawn(async move {
        loop {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return;
            };
            match listener.accept().await {
                Ok((stream, _)) => {
                    let metrics = metrics.clone();
                    tokio::spawn(async move {
                        let _permit = permit;
                        if let Err(e) = handle(stream, &metrics).await {
                            tracing::debug!(error = %e, "metrics connection failed");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics endpoint accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    tracing::info!(%local_addr, "metrics endpoint listening");
    Ok(MetricsServer {
        local_addr,
        accept,
        rotate,
    })
}

async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            return Ok(Some(buf));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Ok(None);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(if buf.is_empty() { None } else { Some(buf) });
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

async fn handle(mut stream: TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(Some(h))) => h,
        Ok(Ok(None)) => {
            return respond(
                &mut stream,
                "400 Bad Request",
                "text/plain",
                b"bad request\n",
            )
            .await
        }
        Ok(Err(e)) => return Err(e),
        Err(_) => return Ok(()),
    };
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("");
    let path = target.split('?').next().unwrap_or("");
    match path {
        "/metrics" if method == "GET" => {
            let body = metrics.encode();
            respond(
                &mut stream,
                "200 OK",
                "text/plain; version=0.0.4; charset=utf-8",
                body.as_bytes(),
            )
            .await
        }
        "/metrics" => {
            respond(
                &mut stream,
                "403 Forbidden",
                "text/plain",
                b"only GET is allowed\n",
            )
            .await
        }
        "/heartbeat" => respond(&mut stream, "200 OK", "text/plain", b"OK\n").await,
        _ => respond(&mut stream, "404 Not Found", "text/plain", b"not found\n").await,
    }
}

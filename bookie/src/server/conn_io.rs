//! `conn_io`: one connection's two halves, plain TCP or TLS after START_TLS (docs/tls.md §1),
//! and the writer task that drains the connection's response queue into its write half.
//!
//! Guarantees: responses go out in queue order, coalesced up to 256 KiB a write; each write
//! is flushed, so a TLS writer never keeps records in rustls' buffer (a no-op on TCP); when
//! the queue closes the writer hands its half back (the START_TLS upgrade reunites it with
//! the read half) instead of shutting it down, and the caller decides.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::send_budget::Queued;
use super::RequestObserver;
use crate::tls::upgrade::ServerTls;

/// A TLS session over an accepted socket.
pub(super) type TlsConn = ServerTls<TcpStream>;

/// The read half of a connection.
pub(super) enum ConnReader {
    Plain(OwnedReadHalf),
    Tls(tokio::io::ReadHalf<TlsConn>),
    /// Taken for an upgrade that did not hand a new one back (reads fail).
    Detached,
}

/// The write half of a connection.
pub(super) enum ConnWriter {
    Plain(OwnedWriteHalf),
    Tls(tokio::io::WriteHalf<TlsConn>),
}

impl AsyncRead for ConnReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ConnReader::Plain(r) => Pin::new(r).poll_read(cx, buf),
            ConnReader::Tls(r) => Pin::new(r).poll_read(cx, buf),
            ConnReader::Detached => Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
        }
    }
}

impl AsyncWrite for ConnWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ConnWriter::Plain(w) => Pin::new(w).poll_write(cx, buf),
            ConnWriter::Tls(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ConnWriter::Plain(w) => Pin::new(w).poll_flush(cx),
            ConnWriter::Tls(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ConnWriter::Plain(w) => Pin::new(w).poll_shutdown(cx),
            ConnWriter::Tls(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}

/// Writes queued responses, coalescing whatever is already queued (up to 256 KiB) into
/// one write, until every sender of `rx` is gone. Returns the write half then, or `None`
/// after a failed write.
pub(super) async fn write_responses(
    mut writer: ConnWriter,
    mut rx: mpsc::Receiver<Queued>,
    observer: Option<Arc<dyn RequestObserver>>,
) -> Option<ConnWriter> {
    const COALESCE_BYTES: usize = 256 * 1024;
    // One record per socket write (a batch of coalesced responses, or one large one).
    async fn timed_write(
        writer: &mut ConnWriter,
        bytes: &[u8],
        observer: &Option<Arc<dyn RequestObserver>>,
    ) -> bool {
        let started = std::time::Instant::now();
        // TLS: rustls holds the records until flushed.
        let ok = writer.write_all(bytes).await.is_ok() && writer.flush().await.is_ok();
        if let Some(o) = observer {
            o.channel_write(started.elapsed(), ok);
        }
        ok
    }
    let mut out = BytesMut::new();
    let mut batch: Vec<Queued> = Vec::new();
    while let Some(first) = rx.recv().await {
        if first.bytes.len() >= COALESCE_BYTES {
            if !timed_write(&mut writer, &first.bytes, &observer).await {
                return None;
            }
            continue;
        }
        out.clear();
        out.extend_from_slice(&first.bytes);
        batch.push(first);
        while out.len() < COALESCE_BYTES {
            match rx.try_recv() {
                Ok(next) => {
                    out.extend_from_slice(&next.bytes);
                    batch.push(next);
                }
                Err(_) => break,
            }
        }
        if !timed_write(&mut writer, &out, &observer).await {
            return None;
        }
        // Written: give the budget back.
        batch.clear();
    }
    Some(writer)
}

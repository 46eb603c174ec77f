//! `tls::upgrade`: the server side of START_TLS once the clear-text EOK is written
//! (docs/tls.md §1): the rustls handshake over the accepted socket, bounded in time, and the
//! peer's certificate chain for the authorizer (docs/tls.md §3).
//!
//! Owns [`Prefixed`], the stream that hands out the bytes the reader had already buffered
//! after the START_TLS frame before it reads the socket again: a client may send its
//! ClientHello right behind START_TLS, and those bytes belong to the TLS stream.
//!
//! Guarantees: a handshake either completes within [`HANDSHAKE_TIMEOUT`] or fails with a
//! reason (never a panic); only the connection being upgraded is affected.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use rustls_pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::TlsAcceptor;

use super::TlsContext;

/// How long a client has for its whole handshake, from the EOK on: Netty's `SslHandler`
/// default, which Java's `TLSContextFactory` keeps (docs/tls.md §1).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Budget bytes one TLS session holds for rustls' buffers, from before its handshake until the
/// connection closes (docs/tls.md §1): unsent TLS records up to rustls' buffer limit
/// (64 KiB, plus one record it may overshoot by), the record being received (up to
/// 16 KiB + header and tag) and decrypted plaintext not yet read (up to 16 KiB).
pub const TLS_BUFFER_BYTES: usize = 128 * 1024;

/// A server-side TLS session over `IO`.
pub type ServerTls<IO> = tokio_rustls::server::TlsStream<Prefixed<IO>>;

/// `inner`, with `prefix` read before it.
#[derive(Debug)]
pub struct Prefixed<IO> {
    prefix: Bytes,
    inner: IO,
}

impl<IO> Prefixed<IO> {
    pub fn new(prefix: Bytes, inner: IO) -> Self {
        Prefixed { prefix, inner }
    }

    /// The bytes of the prefix not read yet.
    pub fn pending_prefix(&self) -> usize {
        self.prefix.len()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Prefixed<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Prefixed<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Runs the server handshake on `io` (after `prefix`) with the context's current config,
/// within `timeout`. `Err` is the reason to log; the caller closes the connection.
pub async fn accept<IO>(
    ctx: &TlsContext,
    io: IO,
    prefix: Bytes,
    timeout: Duration,
) -> Result<ServerTls<IO>, String>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let acceptor = TlsAcceptor::from(ctx.current());
    match tokio::time::timeout(timeout, acceptor.accept(Prefixed::new(prefix, io))).await {
        Err(_) => Err(format!(
            "TLS handshake not finished within {} s",
            timeout.as_secs_f64()
        )),
        Ok(Err(e)) => Err(format!("TLS handshake failed: {e}")),
        Ok(Ok(tls)) => Ok(tls),
    }
}

/// The client's certificate chain, leaf first, or `None` when it sent none.
pub fn peer_chain<IO>(tls: &ServerTls<IO>) -> Option<Vec<CertificateDer<'static>>> {
    tls.get_ref()
        .1
        .peer_certificates()
        .filter(|chain| !chain.is_empty())
        .map(|chain| chain.iter().map(|c| c.clone().into_owned()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn prefix_is_read_before_the_stream() {
        let (mut client, server) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut client, b" world")
            .await
            .unwrap();
        drop(client);
        let mut p = Prefixed::new(Bytes::from_static(b"hello"), server);
        let mut small = [0u8; 3];
        p.read_exact(&mut small).await.unwrap();
        assert_eq!(&small, b"hel");
        assert_eq!(p.pending_prefix(), 2);
        let mut rest = Vec::new();
        p.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"lo world");
    }
}

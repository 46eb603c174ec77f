//! Binding the bookie port as Java binds it: an unspecified address (`0.0.0.0` or `::`, what
//! `listeningInterface` unset gives) is the wildcard **dual-stack**, one `[::]` socket with
//! `IPV6_V6ONLY` off, so clients reach the bookie over IPv4 and IPv6 alike (Java's NIO
//! binds `new InetSocketAddress(port)` that way). On a host without IPv6 it falls back to
//! `0.0.0.0`. A specific address is bound as it is.

use std::net::{Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;

use tokio::net::{TcpListener, TcpSocket};

/// Backlog of the listening socket (tokio's `TcpListener::bind` uses the same).
const BACKLOG: u32 = 1024;

/// Binds `addr` (see the module doc for the wildcard).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    if !addr.ip().is_unspecified() {
        return TcpListener::bind(addr).await;
    }
    match dual_stack(addr.port()) {
        Ok(l) => Ok(l),
        Err(e) if ipv6_unavailable(&e) => {
            tracing::info!(error = %e, "no IPv6 on this host: listening on IPv4 only");
            TcpListener::bind(SocketAddr::from(([0, 0, 0, 0], addr.port()))).await
        }
        Err(e) => Err(e),
    }
}

fn dual_stack(port: u16) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v6()?;
    let off: libc::c_int = 0;
    // SAFETY: the fd is the open socket above; optval points to a c_int of the given size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            &off as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)))?;
    socket.listen(BACKLOG)
}

fn ipv6_unavailable(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAFNOSUPPORT) | Some(libc::EADDRNOTAVAIL) | Some(libc::EPROTONOSUPPORT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_wildcard_accepts_ipv4_and_ipv6_clients() {
        let listener = bind(SocketAddr::from(([0, 0, 0, 0], 0))).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        for client in ["127.0.0.1", "::1"] {
            let target = SocketAddr::new(client.parse().unwrap(), port);
            let (conn, accepted) =
                tokio::join!(tokio::net::TcpStream::connect(target), listener.accept());
            conn.unwrap_or_else(|e| panic!("{client}: {e}"));
            let (_, peer) = accepted.unwrap();
            assert!(
                peer.ip().to_canonical().to_string() == client,
                "{client} arrived as {peer}"
            );
        }
    }

    #[tokio::test]
    async fn a_specific_address_is_bound_as_it_is() {
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
        assert_eq!(listener.local_addr().unwrap().ip().to_string(), "127.0.0.1");
    }
}

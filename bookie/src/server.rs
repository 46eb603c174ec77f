//! `server`: the TCP side of the request path — accept loop, one reader and one writer
//! task per connection, dispatch, backpressure and graceful drain.
//!
//! Per connection:
//! - the **reader** splits the byte stream into frames with bk-proto's `FrameDecoder`
//!   (limit = `nettyMaxFrameSizeBytes`), decodes each frame ([`codec`]), takes the
//!   in-progress permits the request needs ([`limits`]), then calls
//!   [`Bookie::dispatch`] and spawns a task that awaits the reply and queues the encoded
//!   response. Permits are taken *before* the next read from the socket, so at a cap the
//!   bookie stops reading that socket (TCP pushes back on the client) instead of buffering;
//! - the **writer** drains a bounded queue of encoded responses (bounded in count and in
//!   bytes: a completed request waits for room, holding its permit, so a client that does
//!   not read its responses ends up not being read either), coalescing what is ready into
//!   one write. Responses go out in completion order; clients match them by
//!   key (v2: ledger+entry+opcode, batch: requestId, v3: txnId+operation).
//!   Queued response bytes take from the connection's share *and* from a bookie-wide send
//!   budget ([`ServerConfig::send_bytes_total`]); the reader reads the socket again only
//!   while both have room, so a client that never reads its responses holds at most its
//!   share and is itself no longer read (docs/memory.md §2).
//!
//! Invariants: a malformed frame closes that one connection (no response, like the Java
//! bookie); nothing here panics on input; every buffer is bounded (receive buffer by the
//! frame limit and, before it is allocated or read into, the global byte budget, response queue by count and bytes, in-progress work by [`limits`]).

pub mod codec;
mod conn_io;
pub mod limits;
mod listen;
mod pre_auth;
mod send_budget;
mod start_tls;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bk_proto::frame::FrameDecoder;
use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify, Semaphore};

use crate::handlers::Bookie;
use crate::tls::{ConnectionAuthorizer, TlsContext};
use codec::{Decoded, Echo};
use conn_io::{write_responses, ConnReader, ConnWriter};
use limits::{Limits, LimitsConfig};
use send_budget::{send_permits, Queued, ResponseBudget};

/// Settings of the network side (stock keys in parentheses).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to bind (`listeningInterface` / `bookiePort`); unspecified = the dual-stack
    /// wildcard (`listen.rs`).
    pub bind: SocketAddr,
    /// Largest frame accepted, counting the 4-byte prefix (`nettyMaxFrameSizeBytes`).
    pub max_frame_bytes: usize,
    /// `serverTcpNoDelay`.
    pub tcp_nodelay: bool,
    /// `serverSockKeepalive`: SO_KEEPALIVE on every accepted connection.
    pub tcp_keepalive: bool,
    pub limits: LimitsConfig,
    /// Responses queued per connection before completing requests wait.
    pub response_queue_len: usize,
    /// Response bytes queued per connection and not yet written; a completed request
    /// waits (holding its in-progress permit) while its connection is over this.
    pub response_queue_bytes: usize,
    /// Response bytes queued and not yet written, bookie-wide (the send budget); a
    /// completed request also waits while the bookie is over this.
    pub send_bytes_total: usize,
    /// How long SIGTERM waits for in-flight requests.
    pub drain_timeout: Duration,
    /// The TLS context START_TLS upgrades with (`tlsProviderFactoryClass`; docs/tls.md §1).
    /// `None`: START_TLS answers EBADREQ and nothing else changes.
    pub tls: Option<Arc<TlsContext>>,
    /// Decides after each handshake whether the connection is authorized
    /// (`bookieAuthProviderFactoryClass`; docs/tls.md §3). `None`: every connection is.
    pub authorizer: Option<Arc<dyn ConnectionAuthorizer>>,
    /// How long a client has for its TLS handshake after the EOK (Netty's 10 s).
    pub tls_handshake_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: SocketAddr::from(([0, 0, 0, 0], 3181)),
            max_frame_bytes: bk_proto::frame::DEFAULT_MAX_FRAME_BYTES,
            tcp_nodelay: true,
            tcp_keepalive: true,
            limits: LimitsConfig::default(),
            response_queue_len: 1024,
            response_queue_bytes: DEFAULT_RESPONSE_QUEUE_BYTES,
            send_bytes_total: DEFAULT_SEND_BYTES_TOTAL,
            drain_timeout: Duration::from_secs(10),
            tls: None,
            authorizer: None,
            tls_handshake_timeout: crate::tls::upgrade::HANDSHAKE_TIMEOUT,
        }
    }
}

/// Default share of the send budget one connection may hold.
pub const DEFAULT_RESPONSE_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// Default bookie-wide send budget.
pub const DEFAULT_SEND_BYTES_TOTAL: usize = 64 * 1024 * 1024;

/// What a request was, for metrics (stock names are chosen by the observer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    Add,
    RecoveryAdd,
    Read,
    FenceRead,
    LongPollRead,
    BatchRead,
    WriteLac,
    ReadLac,
    ForceLedger,
    GetBookieInfo,
    ListEntries,
}

impl RequestKind {
    pub fn of(op: &crate::handlers::Op) -> RequestKind {
        use crate::handlers::Op;
        match op {
            Op::Add(a) if a.recovery => RequestKind::RecoveryAdd,
            Op::Add(_) => RequestKind::Add,
            Op::Read(r) if r.fence.is_some() => RequestKind::FenceRead,
            Op::Read(r) if r.long_poll.is_some() => RequestKind::LongPollRead,
            Op::Read(_) => RequestKind::Read,
            Op::BatchRead(_) => RequestKind::BatchRead,
            Op::WriteLac { .. } => RequestKind::WriteLac,
            Op::ReadLac { .. } => RequestKind::ReadLac,
            Op::ForceLedger { .. } => RequestKind::ForceLedger,
            Op::GetBookieInfo { .. } => RequestKind::GetBookieInfo,
            Op::ListEntries { .. } => RequestKind::ListEntries,
        }
    }
}

/// Hooks for metrics. Called on the request path: implementations must not block.
pub trait RequestObserver: Send + Sync + 'static {
    /// A request was decoded and is about to wait for its permits.
    fn started(&self, kind: RequestKind, request_bytes: usize);
    /// Its response was queued for writing; `latency` runs from decode to queueing,
    /// `processing` from its dispatch (permits held) to queueing.
    fn finished(
        &self,
        kind: RequestKind,
        latency: Duration,
        processing: Duration,
        status: crate::handlers::Status,
        request_bytes: usize,
        response_bytes: usize,
    );
    /// A connection opened (+1) or closed (-1).
    fn connections(&self, delta: i64);
    /// The request found its in-progress limits full and waits for its permits.
    fn blocked(&self, _kind: RequestKind) {}
    /// A request [`RequestObserver::blocked`] stopped waiting: `Some(wait)` when it got
    /// its permits after `wait`, `None` when it was abandoned (shutdown).
    fn unblocked(&self, _kind: RequestKind, _waited: Option<Duration>) {}
    /// A read of entry -1 (the last entry; plain, fencing or long poll) answered no-entry.
    fn read_last_entry_no_entry(&self) {}
    /// One write of queued responses to the socket took `took` (`ok`: it succeeded).
    fn channel_write(&self, _took: Duration, _ok: bool) {}
}

/// Shared by all connections.
struct Shared {
    observer: Option<Arc<dyn RequestObserver>>,
    bookie: Arc<Bookie>,
    config: ServerConfig,
    limits: Arc<Limits>,
    /// The bookie-wide send budget (response bytes queued, not yet written).
    send: Arc<Semaphore>,
    /// Requests decoded and not yet answered (or dropped), for the drain at shutdown.
    in_flight: AtomicUsize,
    idle: Notify,
    shutdown: watch::Receiver<bool>,
    connections: AtomicUsize,
    /// Whether `block_in_place` is available (multi-thread runtime).
    multi_thread: bool,
    clock: std::time::Instant,
    /// Until when (ms since `clock`) adds are submitted under `block_in_place`.
    writes_slow_until_ms: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// Submits an operation. An add may block in the entry log while its write cache is
    /// full (up to `dbStorage_maxThrottleTimeMs`); after one add was seen blocking, adds
    /// run under `block_in_place` for a while so the other connections served by this
    /// network thread keep going (multi-thread runtime only).
    fn dispatch(&self, op: crate::handlers::Op) -> crate::handlers::Pending {
        let is_write = limits::kind_of(&op) == limits::Kind::Write;
        if !is_write || !self.multi_thread {
            return self.bookie.dispatch(op);
        }
        let now_ms = self.clock.elapsed().as_millis() as u64;
        if now_ms < self.writes_slow_until_ms.load(Ordering::Relaxed) {
            return tokio::task::block_in_place(|| self.bookie.dispatch(op));
        }
        let started = std::time::Instant::now();
        let pending = self.bookie.dispatch(op);
        if started.elapsed() > SLOW_SUBMIT {
            self.writes_slow_until_ms
                .store(now_ms + SLOW_WINDOW.as_millis() as u64, Ordering::Relaxed);
        }
        pending
    }
}

/// An add submission slower than this means the entry log is throttling.
const SLOW_SUBMIT: Duration = Duration::from_millis(2);
/// How long adds then run under `block_in_place`.
const SLOW_WINDOW: Duration = Duration::from_secs(1);

/// A running server: its bound address and the handle to stop it.
pub struct Server {
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Binds the port and starts accepting. The caller has finished journal replay.
    pub async fn start(bookie: Arc<Bookie>, config: ServerConfig) -> std::io::Result<Server> {
        Self::start_with_observer(bookie, config, None).await
    }

    /// [`Server::start`] with metrics hooks.
    pub async fn start_with_observer(
        bookie: Arc<Bookie>,
        config: ServerConfig,
        observer: Option<Arc<dyn RequestObserver>>,
    ) -> std::io::Result<Server> {
        let listener = listen::bind(config.bind).await?;
        let local_addr = listener.local_addr()?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            observer,
            bookie,
            limits: Arc::new(Limits::new(&config.limits)),
            send: Arc::new(Semaphore::new(send_permits(config.send_bytes_total))),
            config,
            in_flight: AtomicUsize::new(0),
            idle: Notify::new(),
            shutdown: shutdown_rx,
            connections: AtomicUsize::new(0),
            multi_thread: tokio::runtime::Handle::current().runtime_flavor()
                == tokio::runtime::RuntimeFlavor::MultiThread,
            clock: std::time::Instant::now(),
            writes_slow_until_ms: std::sync::atomic::AtomicU64::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        tracing::info!(%local_addr, "bookie listening");
        Ok(Server {
            local_addr,
            shutdown,
            shared,
            accept,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Open connections right now.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// The byte budget right now: (bytes held by receive buffers, bytes of the
    /// partial-frame share reserved, size of that share, budget bytes free).
    pub fn byte_budget(&self) -> (usize, usize, usize, usize) {
        let l = &self.shared.limits;
        (
            l.buffered_bytes(),
            l.partial_bytes(),
            l.partial_share(),
            l.available().2,
        )
    }

    /// What the request path holds now, for the memory metrics (docs/memory.md §1).
    pub fn memory_probe(&self) -> MemoryProbe {
        MemoryProbe {
            limits: self.shared.limits.clone(),
            send: self.shared.send.clone(),
            send_total: send_permits(self.shared.config.send_bytes_total),
        }
    }

    /// Stops accepting and reading new requests, then waits (up to the drain timeout) for
    /// every request already read to be answered. Returns whether it drained fully.
    pub async fn shutdown(self) -> bool {
        self.shutdown.send_replace(true);
        self.accept.abort();
        let deadline = tokio::time::Instant::now() + self.shared.config.drain_timeout;
        loop {
            let idle = self.shared.idle.notified();
            if self.shared.in_flight.load(Ordering::Acquire) == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return self.shared.in_flight.load(Ordering::Acquire) == 0;
            }
        }
    }
}

/// A cheap handle on the request path's byte budgets, readable from any thread.
#[derive(Clone)]
pub struct MemoryProbe {
    limits: Arc<Limits>,
    send: Arc<Semaphore>,
    send_total: usize,
}

impl MemoryProbe {
    /// Bytes of the in-flight budget held now (receive buffers and requests).
    pub fn in_flight_bytes(&self) -> usize {
        self.limits
            .budget_bytes()
            .saturating_sub(self.limits.available().2)
    }

    /// Size of the in-flight budget.
    pub fn in_flight_budget(&self) -> usize {
        self.limits.budget_bytes()
    }

    /// Bytes of the in-flight budget held by receive buffers (not yet requests).
    pub fn receive_buffer_bytes(&self) -> usize {
        self.limits.buffered_bytes()
    }

    /// Response bytes queued and not yet written, bookie-wide.
    pub fn send_bytes(&self) -> usize {
        self.send_total
            .saturating_sub(self.send.available_permits())
    }

    /// Size of the send budget.
    pub fn send_budget(&self) -> usize {
        self.send_total
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    shared.connections.fetch_add(1, Ordering::Relaxed);
                    if let Some(o) = &shared.observer {
                        o.connections(1);
                    }
                    if let Err(reason) = serve_connection(stream, peer, shared.clone()).await {
                        tracing::debug!(%peer, %reason, "connection closed");
                    }
                    shared.connections.fetch_sub(1, Ordering::Relaxed);
                    if let Some(o) = &shared.observer {
                        o.connections(-1);
                    }
                });
            }
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Marks one request in flight until dropped (answered, or dropped with its connection).
struct InFlight(Arc<Shared>);

impl InFlight {
    fn new(shared: &Arc<Shared>) -> Self {
        shared.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(shared.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Applies the socket options of `config` to an accepted connection (`serverTcpNoDelay`,
/// `serverSockKeepalive`, as Java's Netty child options do).
fn configure_accepted(stream: &TcpStream, config: &ServerConfig) -> Result<(), String> {
    stream
        .set_nodelay(config.tcp_nodelay)
        .map_err(|e| format!("set TCP_NODELAY: {e}"))?;
    socket2::SockRef::from(stream)
        .set_keepalive(config.tcp_keepalive)
        .map_err(|e| format!("set SO_KEEPALIVE: {e}"))
}

/// Reads requests until EOF, a malformed frame, an I/O error or shutdown.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
) -> Result<(), String> {
    configure_accepted(&stream, &shared.config)?;
    let (reader, writer) = stream.into_split();
    let mut reader = ConnReader::Plain(reader);
    let queue_len = shared.config.response_queue_len.max(1);
    let (mut tx, rx) = mpsc::channel::<Queued>(queue_len);
    let budget = ResponseBudget::new(
        shared.config.response_queue_bytes,
        shared.send.clone(),
        shared.config.send_bytes_total,
        shared.config.max_frame_bytes,
    );
    let mut writer_task = Some(tokio::spawn(write_responses(
        ConnWriter::Plain(writer),
        rx,
        shared.observer.clone(),
    )));
    let mut security = codec::Security {
        tls: shared.config.tls.is_some(),
        tls_active: false,
        unauthorized: shared.config.authorizer.is_some(),
    };
    // Requests of this connection not answered yet (START_TLS waits for none).
    let outstanding = Arc::new(start_tls::Outstanding::default());
    // The TLS buffers' share of the byte budget, once upgraded.
    let mut _tls_budget = None;
    let conn_limits = shared.limits.connection();
    let decoder = FrameDecoder::new(shared.config.max_frame_bytes);
    let mut protocol = codec::ConnectionProtocol::default();
    // Invariant at every await: `budget.held() >= buf.capacity()` (the buffer's memory is
    // in the global byte budget before it is allocated or read into).
    let mut read_budget = shared.limits.buffer_budget();
    let mut buf = BytesMut::new();
    let mut shutdown = shared.shutdown.clone();

    let result = 'conn: loop {
        // Hand out every complete frame already buffered before reading more.
        loop {
            let total = match decoder.peek_len(&buf) {
                Ok(Some(len)) => len + bk_proto::frame::FRAME_PREFIX_BYTES,
                Ok(None) => break,
                Err(e) => break 'conn Err(format!("bad frame: {e}")),
            };
            if buf.len() < total {
                break;
            }
            let frame = match decoder.decode(&mut buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => break 'conn Err(format!("bad frame: {e}")),
            };
            // The frame's bytes leave the buffer's budget for the request's: counted once.
            let frame_bytes = read_budget.take(total);
            let frame_len = frame.len();
            match codec::decode(frame, &mut protocol, security) {
                Decoded::Close(reason) => break 'conn Err(reason),
                Decoded::Ignore => drop(frame_bytes),
                Decoded::StartTls(header) => {
                    drop(frame_bytes);
                    // Nothing in clear may follow the EOK: answer what is in flight first.
                    tokio::select! {
                        _ = outstanding.drained() => {}
                        _ = shutdown.wait_for(|s| *s) => break 'conn Ok(()),
                    }
                    let queued = budget.queue(codec::start_tls_ok(&header)).await;
                    if tx.send(queued).await.is_err() {
                        break 'conn Err("writer gone".into());
                    }
                    // Closing the queue ends the writer once the EOK is out; it hands the
                    // write half back.
                    let (next_tx, next_rx) = mpsc::channel::<Queued>(queue_len);
                    drop(std::mem::replace(&mut tx, next_tx));
                    let writer = match writer_task.take() {
                        Some(task) => tokio::select! {
                            w = task => w.ok().flatten(),
                            _ = shutdown.wait_for(|s| *s) => break 'conn Ok(()),
                        },
                        None => None,
                    };
                    let Some(writer) = writer else {
                        break 'conn Err("writing the START_TLS response failed".into());
                    };
                    // Bytes after the START_TLS frame are the client's first TLS bytes.
                    let prefix = std::mem::take(&mut buf).freeze();
                    let plain = std::mem::replace(&mut reader, ConnReader::Detached);
                    let upgraded = tokio::select! {
                        u = start_tls::upgrade(&shared, plain, writer, prefix) => u,
                        _ = shutdown.wait_for(|s| *s) => break 'conn Ok(()),
                    };
                    let upgraded = match upgraded {
                        Ok(u) => u,
                        Err(reason) => {
                            tracing::info!(%peer, %reason, "TLS handshake failed: connection closed");
                            break 'conn Ok(());
                        }
                    };
                    reader = upgraded.reader;
                    _tls_budget = Some(upgraded.budget);
                    security.tls_active = true;
                    security.unauthorized = !upgraded.authorized;
                    writer_task = Some(tokio::spawn(write_responses(
                        upgraded.writer,
                        next_rx,
                        shared.observer.clone(),
                    )));
                    if security.unauthorized {
                        // Java's answer to a refused client, inside TLS; the connection stays.
                        let queued = budget.queue(codec::start_tls_refused(&header)).await;
                        if tx.send(queued).await.is_err() {
                            break 'conn Err("writer gone".into());
                        }
                    }
                }
                Decoded::Reply(bytes) => {
                    drop(frame_bytes);
                    let queued = budget.queue(bytes).await;
                    if tx.send(queued).await.is_err() {
                        break 'conn Err("writer gone".into());
                    }
                }
                Decoded::Op { op, echo } => {
                    let started = std::time::Instant::now();
                    let kind = RequestKind::of(&op);
                    if let Some(o) = &shared.observer {
                        o.started(kind, frame_len);
                    }
                    // A read's reply exists before it is queued: a read is admitted only
                    // with its estimated reply reserved in the connection's share and the
                    // send budget (send_budget.rs).
                    let reply_slot = if limits::kind_of(&op) == limits::Kind::Read {
                        tokio::select! {
                            slot = budget.reply_slot() => Some(slot),
                            _ = shutdown.wait_for(|s| *s) => break 'conn Ok(()),
                        }
                    } else {
                        None
                    };
                    let in_flight = InFlight::new(&shared);
                    let outstanding = outstanding.guard();
                    // Polled once first: only a request that finds its limits full
                    // is counted as blocked (one poll, no extra work when it is not).
                    let mut admit =
                        std::pin::pin!(conn_limits.admit(limits::kind_of(&op), frame_bytes));
                    let first = std::future::poll_fn(|cx| {
                        std::task::Poll::Ready(std::future::Future::poll(admit.as_mut(), cx))
                    })
                    .await;
                    // When processing began: for an add admitted at once, its arrival (no
                    // second clock read on the add path); after a read's reply slot or any
                    // wait for admission, now.
                    let (permit, dispatched) = match first {
                        std::task::Poll::Ready(p) if reply_slot.is_none() => (p, started),
                        std::task::Poll::Ready(p) => (p, std::time::Instant::now()),
                        std::task::Poll::Pending => {
                            let blocked_at = std::time::Instant::now();
                            if let Some(o) = &shared.observer {
                                o.blocked(kind);
                            }
                            let p = tokio::select! {
                                p = &mut admit => {
                                    if let Some(o) = &shared.observer {
                                        o.unblocked(kind, Some(blocked_at.elapsed()));
                                    }
                                    p
                                }
                                _ = shutdown.wait_for(|s| *s) => {
                                    if let Some(o) = &shared.observer {
                                        o.unblocked(kind, None);
                                    }
                                    break 'conn Ok(());
                                }
                            };
                            (p, std::time::Instant::now())
                        }
                    };
                    let reads_last_entry =
                        matches!(&op, crate::handlers::Op::Read(r) if r.entry == -1);
                    let pending = shared.dispatch(op);
                    let tx = tx.clone();
                    let budget = budget.clone();
                    let observer = shared.observer.clone();
                    // Boxed: the request's future is 680 bytes (the response queue's
                    // and the send's futures live in it), and the runtime moves a task's
                    // future several times on spawn and at each stage change; a box moves
                    // as a pointer (docs/benchmarks.md, "A cheaper user-space path per add").
                    tokio::spawn(Box::pin(async move {
                        let reply = pending.await;
                        let bytes = codec::encode(&echo, &reply);
                        if let Some(o) = &observer {
                            let now = std::time::Instant::now();
                            o.finished(
                                kind,
                                now.saturating_duration_since(started),
                                now.saturating_duration_since(dispatched),
                                reply.status(),
                                frame_len,
                                bytes.len(),
                            );
                            if reads_last_entry
                                && reply.status() == crate::handlers::Status::NoEntry
                            {
                                o.read_last_entry_no_entry();
                            }
                        }
                        // The encoded frame is a copy: do not keep the entry twice.
                        drop(reply);
                        // The response queue is bounded: a slow reader of responses makes
                        // this wait while holding its permit, which stops socket reads. A
                        // read's reply takes the reservation its slot holds.
                        let queued = match reply_slot {
                            Some(slot) => budget.queue_reserved(slot, bytes),
                            None => budget.queue(bytes).await,
                        };
                        let _ = tx.send(queued).await;
                        drop(tx);
                        drop(outstanding);
                        drop(permit);
                        drop(in_flight);
                    }));
                }
            }
        }
        if *shutdown.borrow() {
            break Ok(());
        }
        // Read more requests only while their responses would find room: a client that
        // does not read its responses stops being read once its share is queued.
        tokio::select! {
            _ = budget.room() => {}
            _ = shutdown.wait_for(|s| *s) => break Ok(()),
        }
        // Room for the next read, in the byte budget before it is allocated.
        let prepared = tokio::select! {
            r = prepare_read(&mut buf, &mut read_budget, &decoder, &shared.limits) => r,
            _ = shutdown.wait_for(|s| *s) => break Ok(()),
        };
        if let Err(e) = prepared {
            break Err(e);
        }
        tokio::select! {
            n = reader.read_buf(&mut buf) => match n {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(format!("read: {e}")),
            },
            _ = shutdown.wait_for(|s| *s) => break Ok(()),
        }
    };
    drop(tx);
    // Let queued responses go out (the writer ends when every sender is gone).
    if let Some(task) = writer_task {
        if let Ok(Some(mut writer)) = task.await {
            // TCP: FIN; TLS: close_notify first.
            let _ = writer.shutdown().await;
        }
    }
    result
}

/// Read size while the byte budget is roomy, and while it is tight
/// ([`Limits::bytes_tight`]).
const READ_CHUNK_BYTES: usize = 64 * 1024;
const TIGHT_READ_CHUNK_BYTES: usize = 4 * 1024;

/// Makes `buf` ready for one read, with its whole capacity in the byte budget first.
///
/// - A large frame (over [`limits::SMALL_FRAME_BYTES`]) whose prefix has arrived is
///   reserved whole from the partial-frame share, and the buffer is then allocated to
///   exactly the frame (never past it, so a read never takes bytes of the next frame
///   while the share is held). Growing it step by step would copy a 5 MiB frame about
///   twice over for no gain in resident memory.
/// - Otherwise the buffer gets room for one chunk (and at least the rest of a known
///   small frame).
///
/// The buffer is reallocated to an exact capacity (never `BytesMut::reserve`, which may
/// double), so its memory is what the budget holds.
async fn prepare_read(
    buf: &mut BytesMut,
    budget: &mut limits::BufferBudget,
    decoder: &FrameDecoder,
    limits: &Limits,
) -> Result<(), String> {
    let frame_total = decoder
        .peek_len(buf)
        .map_err(|e| format!("bad frame: {e}"))?
        .map(|len| len + bk_proto::frame::FRAME_PREFIX_BYTES);
    let len = buf.len();
    let spare = buf.capacity() - len;
    match frame_total {
        Some(total) if total > limits::SMALL_FRAME_BYTES => {
            if !budget.has_frame_reservation() {
                // Wait holding only the bytes already here.
                if spare > 0 {
                    *buf = exact_copy(buf, len);
                }
                budget.shrink_to(buf.capacity());
                budget.reserve_frame(total).await;
            }
            if buf.capacity() < total {
                // The whole frame is in the budget now: one allocation, no copies as it
                // arrives. Its pages become resident only as bytes are written into them.
                *buf = exact_copy(buf, total);
            }
        }
        _ => {
            if len == 0 && spare < TIGHT_READ_CHUNK_BYTES {
                // Between frames: hold nothing while waiting for the budget.
                *buf = BytesMut::new();
                budget.shrink_to(0);
            }
            let chunk = if limits.bytes_tight() {
                TIGHT_READ_CHUNK_BYTES
            } else {
                READ_CHUNK_BYTES
            };
            let need = frame_total.map_or(1, |total| total - len);
            if spare < need.max(TIGHT_READ_CHUNK_BYTES / 4) {
                let want = len + chunk.max(need);
                budget.cover(buf.capacity() + want).await;
                *buf = exact_copy(buf, want);
                budget.shrink_to(buf.capacity());
            }
        }
    }
    Ok(())
}

/// A buffer of exactly `capacity` (at least `buf.len()`) holding `buf`'s bytes.
fn exact_copy(buf: &BytesMut, capacity: usize) -> BytesMut {
    let mut fresh = BytesMut::with_capacity(capacity.max(buf.len()));
    fresh.extend_from_slice(buf);
    fresh
}

/// The echo fields of a request, kept while it is processed (re-exported for tests).
pub type RequestEcho = Echo;

#[cfg(test)]
mod socket_option_tests {
    use super::*;

    /// The options an accepted connection ends up with, read back with getsockopt.
    async fn accepted_options(config: ServerConfig) -> (bool, bool) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move { TcpStream::connect(addr).await.unwrap() });
        let (accepted, _) = listener.accept().await.unwrap();
        let _client = client.await.unwrap();
        configure_accepted(&accepted, &config).unwrap();
        let sock = socket2::SockRef::from(&accepted);
        (sock.keepalive().unwrap(), sock.tcp_nodelay().unwrap())
    }

    #[tokio::test]
    async fn server_sock_keepalive_sets_so_keepalive_on_accepted_connections() {
        let on = accepted_options(ServerConfig::default()).await;
        assert_eq!(on, (true, true), "(SO_KEEPALIVE, TCP_NODELAY) by default");
        let off = accepted_options(ServerConfig {
            tcp_keepalive: false,
            tcp_nodelay: false,
            ..ServerConfig::default()
        })
        .await;
        assert_eq!(off, (false, false));
    }
}

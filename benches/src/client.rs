//! A minimal pipelined bookie client: one TCP connection, many requests in flight, v2 or v3
//! wire protocol (all encoding and decoding is bk-proto's; this file only moves frames and
//! matches responses to requests).
//!
//! Matching (docs/protocol.md §4): v2 adds and reads by (opcode, ledgerId, entryId) with a
//! FIFO per key (two reads of the same entry may be in flight), v2 batch reads by requestId,
//! v3 by txnId. Responses may arrive in any order.
//!
//! With TLS (a job's `tls_ca`), the connection is upgraded by tls.rs before the first request;
//! the reader and writer are generic over the stream halves, so the plain path keeps its
//! `TcpStream` halves with no indirection per request.
//!
//! Invariants:
//! - Every request ends: with the bookie's answer, with `Timeout` after its deadline, or with
//!   `ConnectionLost` when the connection fails (every outstanding request is failed at once,
//!   and requests issued afterwards fail immediately). Nothing waits forever.
//! - Bounded: at most `SEND_QUEUE_FRAMES` frames wait for the socket; the number of requests
//!   in flight is bounded by the caller (a job's `iodepth`).
//! - A response that cannot be decoded kills the connection (as the stock client does).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bk_proto::v2::{self, ErrorCode, Flags};
use bk_proto::v3;
use bk_proto::{FrameDecoder, MasterKey};
use bytes::{Bytes, BytesMut};
use rustls::ClientConfig;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::options::Protocol;

/// Frames queued for the socket writer before senders wait.
const SEND_QUEUE_FRAMES: usize = 1024;
/// Largest response frame accepted (batch reads ask for at most 5 MiB of entries).
const MAX_RESPONSE_FRAME_BYTES: usize = 16 * 1024 * 1024;
/// Largest batch read we ask for, bytes (the Java client caps it at its frame size).
pub const BATCH_MAX_SIZE_BYTES: i64 = 5 * 1024 * 1024;

/// Why a request did not succeed.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum RequestError {
    /// The bookie answered with an error status (v2 code / v3 status name, e.g. "EFENCED").
    #[error("bookie answered {0}")]
    Bookie(&'static str),
    #[error("request timed out")]
    Timeout,
    #[error("connection lost: {0}")]
    ConnectionLost(Arc<str>),
    /// The answer decoded but is not a valid answer to this request (e.g. a digest mismatch).
    #[error("bad response: {0}")]
    BadResponse(String),
}

impl RequestError {
    /// The name errors are counted under in reports.
    pub fn code(&self) -> &'static str {
        match self {
            RequestError::Bookie(name) => name,
            RequestError::Timeout => "ETIMEOUT",
            RequestError::ConnectionLost(_) => "ECONNLOST",
            RequestError::BadResponse(_) => "EBADRESPONSE",
        }
    }
}

/// Name of a bookie status (same names in v2 and v3).
pub fn status_name(code: ErrorCode) -> &'static str {
    code.to_status().as_str_name()
}

/// A decoded answer.
#[derive(Debug)]
enum Reply {
    Add(ErrorCode),
    Read(ErrorCode, Bytes),
    Batch(ErrorCode, Vec<Bytes>),
}

type Waiter = oneshot::Sender<Result<Reply, RequestError>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    /// v2 add/read: (opcode, ledger, entry).
    V2(u8, i64, i64),
    /// v2 batch read requestId, or v3 txnId.
    Id(u64),
}

#[derive(Default)]
struct Pending {
    /// Set once the connection failed; new requests fail at once with it.
    dead: Option<Arc<str>>,
    waiters: HashMap<Key, VecDeque<(u64, Waiter)>>,
}

/// One frame to send: a head and an optional body sent without copying.
struct OutFrame {
    head: Bytes,
    body: Bytes,
}

/// One connection to one bookie.
pub struct Connection {
    protocol: Protocol,
    tx: mpsc::Sender<OutFrame>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    tasks: Vec<JoinHandle<()>>,
    /// With TLS: the negotiated protocol version and cipher suite, e.g. "TLSv1_3
    /// TLS13_AES_128_GCM_SHA256".
    tls_session: Option<String>,
}

fn lock(p: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    match p.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Fails every outstanding request and marks the connection dead.
fn kill(pending: &Mutex<Pending>, reason: &str) {
    let mut p = lock(pending);
    let reason: Arc<str> = Arc::from(reason);
    if p.dead.is_none() {
        p.dead = Some(reason.clone());
    }
    for (_, q) in p.waiters.drain() {
        for (_, w) in q {
            let _ = w.send(Err(RequestError::ConnectionLost(reason.clone())));
        }
    }
}

impl Connection {
    /// Connects (5 s limit), upgrades to TLS when `tls` is given (tls.rs), and starts the
    /// reader and writer tasks.
    pub async fn connect(
        addr: &str,
        protocol: Protocol,
        tls: Option<&Arc<ClientConfig>>,
    ) -> Result<Connection, String> {
        let stream = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr))
            .await
            .map_err(|_| format!("cannot connect to bookie {addr}: timed out after 5s"))?
            .map_err(|e| format!("cannot connect to bookie {addr}: {e}"))?;
        stream
            .set_nodelay(true)
            .map_err(|e| format!("{addr}: set TCP_NODELAY: {e}"))?;
        let pending = Arc::new(Mutex::new(Pending::default()));
        let (tx, rx) = mpsc::channel::<OutFrame>(SEND_QUEUE_FRAMES);
        let mut tls_session = None;
        let (writer, reader) = match tls {
            None => {
                let (rd, wr) = stream.into_split();
                spawn_loops(rd, wr, rx, protocol, &pending, addr)
            }
            Some(config) => {
                let tls = crate::tls::start_tls(stream, addr, config).await?;
                tls_session = Some(crate::tls::session_summary(tls.get_ref().1));
                let (rd, wr) = tokio::io::split(tls);
                spawn_loops(rd, wr, rx, protocol, &pending, addr)
            }
        };
        Ok(Connection {
            protocol,
            tx,
            pending,
            next_id: AtomicU64::new(1),
            tasks: vec![writer, reader],
            tls_session,
        })
    }

    /// With TLS: the negotiated protocol version and cipher suite.
    pub fn tls_session(&self) -> Option<&str> {
        self.tls_session.as_deref()
    }

    /// Whether the connection has failed, and why.
    pub fn dead_reason(&self) -> Option<Arc<str>> {
        lock(&self.pending).dead.clone()
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    async fn call(
        &self,
        key: Key,
        frame: OutFrame,
        timeout: Duration,
    ) -> Result<Reply, RequestError> {
        let token = self.id();
        let (wtx, wrx) = oneshot::channel();
        {
            let mut p = lock(&self.pending);
            if let Some(reason) = &p.dead {
                return Err(RequestError::ConnectionLost(reason.clone()));
            }
            p.waiters.entry(key).or_default().push_back((token, wtx));
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let sent = tokio::time::timeout_at(deadline, self.tx.send(frame)).await;
        let outcome = match sent {
            Err(_) => Err(RequestError::Timeout),
            Ok(Err(_)) => Err(RequestError::ConnectionLost(
                self.dead_reason()
                    .unwrap_or_else(|| Arc::from("writer stopped")),
            )),
            Ok(Ok(())) => match tokio::time::timeout_at(deadline, wrx).await {
                Ok(Ok(r)) => return r,
                Ok(Err(_)) => Err(RequestError::ConnectionLost(
                    self.dead_reason()
                        .unwrap_or_else(|| Arc::from("connection closed")),
                )),
                Err(_) => Err(RequestError::Timeout),
            },
        };
        // Forget our waiter so a late answer is dropped.
        let mut p = lock(&self.pending);
        if let Some(q) = p.waiters.get_mut(&key) {
            q.retain(|(t, _)| *t != token);
            if q.is_empty() {
                p.waiters.remove(&key);
            }
        }
        outcome
    }

    /// Adds `entry` (a complete entry: metadata, digest, payload) to its ledger.
    pub async fn add(
        &self,
        ledger_id: i64,
        entry_id: i64,
        entry: Bytes,
        master_key: &MasterKey,
        timeout: Duration,
    ) -> Result<(), RequestError> {
        let (key, frame) = match self.protocol {
            Protocol::V2 => {
                let req = v2::AddRequest::new(Flags::NONE, *master_key, entry)
                    .map_err(|e| RequestError::BadResponse(format!("cannot encode add: {e}")))?;
                let mut head = BytesMut::new();
                req.encode_head(&mut head)
                    .map_err(|e| RequestError::BadResponse(format!("cannot encode add: {e}")))?;
                (
                    Key::V2(v2::OpCode::AddEntry as u8, ledger_id, entry_id),
                    OutFrame {
                        head: head.freeze(),
                        body: req.entry,
                    },
                )
            }
            Protocol::V3 => {
                let txn = self.id();
                let req = v3::new_request(
                    txn,
                    None,
                    v3::RequestBody::AddEntry(v3::AddRequest {
                        flag: None,
                        ledger_id,
                        entry_id,
                        master_key: Bytes::copy_from_slice(master_key.as_bytes()),
                        body: entry,
                        write_flags: None,
                    }),
                );
                (Key::Id(txn), encode_v3(&req)?)
            }
        };
        match self.call(key, frame, timeout).await? {
            Reply::Add(ErrorCode::Ok) => Ok(()),
            Reply::Add(code) => Err(RequestError::Bookie(status_name(code))),
            other => Err(RequestError::BadResponse(format!(
                "expected an add response, got {other:?}"
            ))),
        }
    }

    /// Reads one entry; returns the stored entry bytes.
    pub async fn read(
        &self,
        ledger_id: i64,
        entry_id: i64,
        timeout: Duration,
    ) -> Result<Bytes, RequestError> {
        let (key, frame) = match self.protocol {
            Protocol::V2 => {
                let mut head = BytesMut::new();
                v2::ReadRequest::new(ledger_id, entry_id)
                    .encode(&mut head)
                    .map_err(|e| RequestError::BadResponse(format!("cannot encode read: {e}")))?;
                (
                    Key::V2(v2::OpCode::ReadEntry as u8, ledger_id, entry_id),
                    OutFrame {
                        head: head.freeze(),
                        body: Bytes::new(),
                    },
                )
            }
            Protocol::V3 => {
                let txn = self.id();
                let req = v3::new_request(
                    txn,
                    None,
                    v3::RequestBody::ReadEntry(v3::ReadRequest {
                        ledger_id,
                        entry_id,
                        ..Default::default()
                    }),
                );
                (Key::Id(txn), encode_v3(&req)?)
            }
        };
        match self.call(key, frame, timeout).await? {
            Reply::Read(ErrorCode::Ok, entry) => Ok(entry),
            Reply::Read(code, _) => Err(RequestError::Bookie(status_name(code))),
            other => Err(RequestError::BadResponse(format!(
                "expected a read response, got {other:?}"
            ))),
        }
    }

    /// Reads up to `max_count` entries from `start` with BATCH_READ_ENTRY (v2 only).
    pub async fn batch_read(
        &self,
        ledger_id: i64,
        start: i64,
        max_count: i32,
        timeout: Duration,
    ) -> Result<Vec<Bytes>, RequestError> {
        if self.protocol != Protocol::V2 {
            return Err(RequestError::BadResponse(
                "batch reads exist only in v2".into(),
            ));
        }
        let id = self.id();
        let mut head = BytesMut::new();
        v2::BatchReadRequest {
            version: v2::CURRENT_PROTOCOL_VERSION,
            flags: Flags::NONE,
            ledger_id,
            start_entry_id: start,
            request_id: id as i64,
            max_count,
            max_size: BATCH_MAX_SIZE_BYTES,
            master_key: None,
        }
        .encode(&mut head)
        .map_err(|e| RequestError::BadResponse(format!("cannot encode batch read: {e}")))?;
        let frame = OutFrame {
            head: head.freeze(),
            body: Bytes::new(),
        };
        match self.call(Key::Id(id), frame, timeout).await? {
            Reply::Batch(ErrorCode::Ok, entries) => Ok(entries),
            Reply::Batch(code, _) => Err(RequestError::Bookie(status_name(code))),
            other => Err(RequestError::BadResponse(format!(
                "expected a batch read response, got {other:?}"
            ))),
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        kill(&self.pending, "connection closed by bkbench");
    }
}

fn spawn_loops<R, W>(
    rd: R,
    wr: W,
    rx: mpsc::Receiver<OutFrame>,
    protocol: Protocol,
    pending: &Arc<Mutex<Pending>>,
    addr: &str,
) -> (JoinHandle<()>, JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let writer = tokio::spawn(write_loop(wr, rx, pending.clone(), addr.to_string()));
    let reader = tokio::spawn(read_loop(rd, protocol, pending.clone(), addr.to_string()));
    (writer, reader)
}

fn encode_v3(req: &v3::Request) -> Result<OutFrame, RequestError> {
    let mut buf = BytesMut::new();
    v3::encode_request(req, &mut buf)
        .map_err(|e| RequestError::BadResponse(format!("cannot encode v3 request: {e}")))?;
    Ok(OutFrame {
        head: buf.freeze(),
        body: Bytes::new(),
    })
}

async fn write_loop<W: AsyncWrite + Unpin>(
    wr: W,
    mut rx: mpsc::Receiver<OutFrame>,
    pending: Arc<Mutex<Pending>>,
    addr: String,
) {
    let mut w = BufWriter::with_capacity(64 * 1024, wr);
    let result: std::io::Result<()> = async {
        while let Some(f) = rx.recv().await {
            w.write_all(&f.head).await?;
            w.write_all(&f.body).await?;
            // Batch whatever else is already queued into the same flush.
            while let Ok(f) = rx.try_recv() {
                w.write_all(&f.head).await?;
                w.write_all(&f.body).await?;
            }
            w.flush().await?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        kill(&pending, &format!("write to {addr} failed: {e}"));
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut rd: R,
    protocol: Protocol,
    pending: Arc<Mutex<Pending>>,
    addr: String,
) {
    let decoder = FrameDecoder::new(MAX_RESPONSE_FRAME_BYTES);
    let mut buf = BytesMut::with_capacity(256 * 1024);
    let reason = loop {
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => {
                    if let Err(e) = dispatch(frame, protocol, &pending) {
                        kill(&pending, &format!("bad response from {addr}: {e}"));
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    kill(&pending, &format!("bad frame from {addr}: {e}"));
                    return;
                }
            }
        }
        if buf.capacity() - buf.len() < 64 * 1024 {
            buf.reserve(256 * 1024);
        }
        match rd.read_buf(&mut buf).await {
            Ok(0) => break format!("{addr} closed the connection"),
            Ok(_) => {}
            Err(e) => break format!("read from {addr} failed: {e}"),
        }
    };
    kill(&pending, &reason);
}

fn dispatch(frame: Bytes, protocol: Protocol, pending: &Mutex<Pending>) -> Result<(), String> {
    let (key, reply) = match protocol {
        Protocol::V2 => match bk_proto::decode_response_v2(frame).map_err(|e| e.to_string())? {
            v2::Response::AddEntry(r) => (
                Key::V2(v2::OpCode::AddEntry as u8, r.ledger_id, r.entry_id),
                Reply::Add(r.error),
            ),
            v2::Response::ReadEntry(r) => (
                Key::V2(v2::OpCode::ReadEntry as u8, r.ledger_id, r.entry_id),
                Reply::Read(r.error, r.entry),
            ),
            v2::Response::BatchReadEntry(r) => (
                Key::Id(r.request_id as u64),
                Reply::Batch(r.error, r.entries),
            ),
            v2::Response::Auth(_) => return Ok(()),
        },
        Protocol::V3 => {
            let r = bk_proto::decode_response_v3(frame).map_err(|e| e.to_string())?;
            let top = code_of(r.status);
            let key = Key::Id(r.header.txn_id);
            let reply = match v3::OperationType::try_from(r.header.operation) {
                Ok(v3::OperationType::AddEntry) => {
                    let sub = r.add_response.map(|a| code_of(a.status)).unwrap_or(top);
                    Reply::Add(if top == ErrorCode::Ok { sub } else { top })
                }
                Ok(v3::OperationType::ReadEntry) => match (top, r.read_response) {
                    (ErrorCode::Ok, Some(rr)) => {
                        Reply::Read(code_of(rr.status), rr.body.unwrap_or_default())
                    }
                    (ErrorCode::Ok, None) => {
                        return Err("EOK read response without readResponse".into())
                    }
                    (code, _) => Reply::Read(code, Bytes::new()),
                },
                _ => return Ok(()),
            };
            (key, reply)
        }
    };
    let mut p = lock(pending);
    let waiter = p.waiters.get_mut(&key).and_then(|q| q.pop_front());
    if p.waiters.get(&key).is_some_and(|q| q.is_empty()) {
        p.waiters.remove(&key);
    }
    drop(p);
    if let Some((_, w)) = waiter {
        let _ = w.send(Ok(reply));
    }
    // An answer nobody waits for (its request timed out) is dropped, as the stock client does.
    Ok(())
}

fn code_of(status: i32) -> ErrorCode {
    v3::StatusCode::try_from(status)
        .map(ErrorCode::from_status)
        .unwrap_or(ErrorCode::Io)
}

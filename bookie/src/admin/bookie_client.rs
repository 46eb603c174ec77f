//! A small pipelined v2 client to one other bookie, for what bookie recovery
//! (`admin/recovery.rs`, `admin/ledger_recovery.rs`) asks of a cluster's bookies: plain
//! reads of stored entries, fencing reads (`DO_FENCING` with the master key) and recovery
//! adds (`RECOVERY_ADD` flag) of entries copied unchanged. Encoding and decoding
//! are bk-proto's; this file moves frames and matches answers to requests.
//!
//! Matching (docs/protocol.md §4): a v2 answer names (opcode, ledger id, entry id), so
//! waiters are kept per key, first in first out (the bookie may answer in any order).
//!
//! Guarantees:
//! - every request ends: with the bookie's answer, with an error after [`REQUEST_TIMEOUT`],
//!   or with the connection's failure (every waiter is failed at once, later requests fail
//!   at once); nothing waits forever;
//! - a caller that drops a request's future does not cancel it: the frame is written whole
//!   and its answer consumed, so the connection stays usable (a frame cut off mid-write
//!   would have made the bookie read the next frame's bytes as the rest of an entry);
//! - bounded: the caller bounds the requests in flight (recovery keeps at most
//!   `COPY_WINDOW` per fragment); an answer frame over [`MAX_FRAME_BYTES`] or one that does
//!   not decode kills the connection (as the stock client does);
//! - the reader task ends when the client is dropped or the connection fails.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bk_proto::v2::{self, ErrorCode, Flags, OpCode};
use bk_proto::{FrameDecoder, MasterKey};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Bound for connecting to a bookie.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound for one request, from its send to its answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer frame read: an entry as large as the bookies' frame limit allows
/// (`nettyMaxFrameSizeBytes` is at most a few MiB in practice) plus headers.
const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

type Key = (u8, i64, i64);
type Answer = Result<(ErrorCode, Bytes), String>;

#[derive(Default)]
struct Pending {
    /// Set once the connection failed; requests fail at once with it.
    dead: Option<String>,
    waiters: HashMap<Key, VecDeque<oneshot::Sender<Answer>>>,
}

fn lock(p: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    p.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One connection to one bookie.
pub struct BookieClient {
    addr: String,
    writer: Arc<tokio::sync::Mutex<OwnedWriteHalf>>,
    pending: Arc<Mutex<Pending>>,
    reader: JoinHandle<()>,
}

impl Drop for BookieClient {
    fn drop(&mut self) {
        self.reader.abort();
        // No answer can come any more: requests still in flight end now, not at their timeout.
        kill(&self.pending, &format!("{}: client closed", self.addr));
    }
}

impl BookieClient {
    /// Connects to `addr` (`host:port`, a bookie id of the address form).
    pub async fn connect(addr: &str) -> Result<BookieClient, String> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| format!("connect to {addr}: timed out after {CONNECT_TIMEOUT:?}"))?
            .map_err(|e| format!("connect to {addr}: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (rd, wr) = stream.into_split();
        let pending = Arc::new(Mutex::new(Pending::default()));
        let reader = tokio::spawn(read_loop(rd, pending.clone(), addr.to_string()));
        Ok(BookieClient {
            addr: addr.to_string(),
            writer: Arc::new(tokio::sync::Mutex::new(wr)),
            pending,
            reader,
        })
    }

    /// The bookie's address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Whether the connection failed (make a new one).
    pub fn is_dead(&self) -> bool {
        lock(&self.pending).dead.is_some()
    }

    /// Reads entry `entry` of `ledger`: the stored entry bytes (metadata, digest, payload)
    /// on EOK, else the bookie's code.
    pub async fn read(&self, ledger: i64, entry: i64) -> Result<Result<Bytes, ErrorCode>, String> {
        self.send_read(v2::ReadRequest::new(ledger, entry)).await
    }

    /// A fencing read (`DO_FENCING` with `key`, plus `extra_flags`) of entry `entry` of
    /// `ledger` (-1: the last entry the bookie stores, the LAC read of ledger recovery): the
    /// bookie fences the ledger before it answers, as [`BookieClient::read`] otherwise.
    pub async fn fencing_read(
        &self,
        ledger: i64,
        entry: i64,
        key: &MasterKey,
        extra_flags: Flags,
    ) -> Result<Result<Bytes, ErrorCode>, String> {
        self.send_read(v2::ReadRequest::fencing(ledger, entry, *key, extra_flags))
            .await
    }

    async fn send_read(&self, req: v2::ReadRequest) -> Result<Result<Bytes, ErrorCode>, String> {
        let (ledger, entry) = (req.ledger_id, req.entry_id);
        let mut frame = BytesMut::new();
        req.encode(&mut frame)
            .map_err(|e| format!("encode read: {e}"))?;
        let (code, body) = self
            .call((OpCode::ReadEntry as u8, ledger, entry), frame.freeze())
            .await?;
        Ok(if code == ErrorCode::Ok {
            Ok(body)
        } else {
            Err(code)
        })
    }

    /// Adds the complete stored entry `entry` with the `RECOVERY_ADD` flag (accepted by a
    /// fenced ledger, as Java's replicator sends it) and `key`; the bookie's code.
    pub async fn recovery_add(&self, key: &MasterKey, entry: Bytes) -> Result<ErrorCode, String> {
        self.add(key, entry, Flags::RECOVERY_ADD).await
    }

    /// Adds the complete entry `entry` with `flags` and `key`; the bookie's code.
    pub async fn add(
        &self,
        key: &MasterKey,
        entry: Bytes,
        flags: Flags,
    ) -> Result<ErrorCode, String> {
        let req =
            v2::AddRequest::new(flags, *key, entry).map_err(|e| format!("encode add: {e}"))?;
        let mut frame = BytesMut::new();
        req.encode(&mut frame)
            .map_err(|e| format!("encode add: {e}"))?;
        let (code, _) = self
            .call(
                (OpCode::AddEntry as u8, req.ledger_id, req.entry_id),
                frame.freeze(),
            )
            .await?;
        Ok(code)
    }

    /// Sends `frame` and waits for the answer to `key`. The exchange runs in a task of its
    /// own, so a caller that stops waiting (a dropped future) never leaves a frame half
    /// written on the connection, nor a waiter without its request.
    async fn call(&self, key: Key, frame: Bytes) -> Result<(ErrorCode, Bytes), String> {
        let exchange = exchange(
            self.writer.clone(),
            self.pending.clone(),
            self.addr.clone(),
            key,
            frame,
        );
        tokio::spawn(exchange)
            .await
            .map_err(|e| format!("{}: request task: {e}", self.addr))?
    }
}

async fn exchange(
    writer: Arc<tokio::sync::Mutex<OwnedWriteHalf>>,
    pending: Arc<Mutex<Pending>>,
    addr: String,
    key: Key,
    frame: Bytes,
) -> Result<(ErrorCode, Bytes), String> {
    let (tx, rx) = oneshot::channel();
    {
        let mut p = lock(&pending);
        if let Some(why) = &p.dead {
            return Err(why.clone());
        }
        p.waiters.entry(key).or_default().push_back(tx);
    }
    let sent = tokio::time::timeout(REQUEST_TIMEOUT, async {
        writer.lock().await.write_all(&frame).await
    })
    .await;
    let outcome = match sent {
        Ok(Ok(())) => match tokio::time::timeout(REQUEST_TIMEOUT, rx).await {
            Ok(Ok(answer)) => return answer,
            Ok(Err(_)) => Err(format!("{addr}: connection closed")),
            Err(_) => Err(format!("{addr}: no answer within {REQUEST_TIMEOUT:?}")),
        },
        Ok(Err(e)) => {
            let why = format!("{addr}: write: {e}");
            kill(&pending, &why);
            return Err(why);
        }
        Err(_) => Err(format!("{addr}: write timed out")),
    };
    // A request given up on may still be answered; with a FIFO per key its late answer
    // would go to the next request of the same key, so the connection is not reused.
    kill(&pending, &format!("{addr}: abandoned after a timeout"));
    outcome
}

/// Fails every waiter and marks the connection dead.
fn kill(pending: &Mutex<Pending>, why: &str) {
    let mut p = lock(pending);
    if p.dead.is_none() {
        p.dead = Some(why.to_string());
    }
    for (_, q) in p.waiters.drain() {
        for w in q {
            let _ = w.send(Err(why.to_string()));
        }
    }
}

async fn read_loop(
    mut rd: tokio::net::tcp::OwnedReadHalf,
    pending: Arc<Mutex<Pending>>,
    addr: String,
) {
    let decoder = FrameDecoder::new(MAX_FRAME_BYTES);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let why = loop {
        let frame = match decoder.decode(&mut buf) {
            Ok(Some(f)) => f,
            Ok(None) => match rd.read_buf(&mut buf).await {
                Ok(0) => break format!("{addr}: connection closed by the bookie"),
                Ok(_) => continue,
                Err(e) => break format!("{addr}: read: {e}"),
            },
            Err(e) => break format!("{addr}: bad frame: {e}"),
        };
        let (key, answer) = match v2::Response::decode(frame) {
            Ok(v2::Response::AddEntry(r)) => (
                (OpCode::AddEntry as u8, r.ledger_id, r.entry_id),
                (r.error, Bytes::new()),
            ),
            Ok(v2::Response::ReadEntry(r)) => (
                (OpCode::ReadEntry as u8, r.ledger_id, r.entry_id),
                (r.error, r.entry),
            ),
            Ok(other) => break format!("{addr}: unexpected answer {:?}", other.opcode()),
            Err(e) => break format!("{addr}: undecodable answer: {e}"),
        };
        let waiter = {
            let mut p = lock(&pending);
            let waiter = p.waiters.get_mut(&key).and_then(VecDeque::pop_front);
            if p.waiters.get(&key).is_some_and(VecDeque::is_empty) {
                p.waiters.remove(&key);
            }
            waiter
        };
        match waiter {
            Some(w) => {
                let _ = w.send(Ok(answer));
            }
            None => break format!("{addr}: answer to no request {key:?}"),
        }
    };
    kill(&pending, &why);
}

//! Shared helpers of the request-path integration tests: an in-process bookie on a
//! loopback port (in-memory test double or the real journal + entry log), and a raw
//! protocol client built on bk-proto's client-side encoders/decoders.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bk_proto::v2::{self, Flags};
use bk_proto::v3::{self, RequestBody};
use bk_proto::{DigestManager, DigestType, EntryHeader, FrameDecoder, MasterKey};
use bookie::handlers::{Bookie, BookieOptions};
use bookie::server::{Server, ServerConfig};
use bookie::storage::mem::{MemJournal, MemStorage};
use bookie::storage::{FatalHandler, Store};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const TIMEOUT: Duration = Duration::from_secs(5);

/// A bookie running on the in-memory test double.
pub struct MemBookie {
    pub server: Server,
    pub bookie: Arc<Bookie>,
    pub storage: Arc<MemStorage>,
    pub journal: Arc<MemJournal>,
    pub fatal: Arc<std::sync::atomic::AtomicUsize>,
}

impl MemBookie {
    pub fn addr(&self) -> SocketAddr {
        self.server.local_addr()
    }
}

pub fn loopback_config() -> ServerConfig {
    ServerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..ServerConfig::default()
    }
}

pub async fn mem_bookie() -> MemBookie {
    mem_bookie_with(BookieOptions::default(), loopback_config()).await
}

pub async fn mem_bookie_with(options: BookieOptions, config: ServerConfig) -> MemBookie {
    let storage = Arc::new(MemStorage::new());
    let journal = Arc::new(MemJournal::new());
    let fatal_count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let fc = fatal_count.clone();
    let fatal: FatalHandler = Arc::new(move |_reason: &str| {
        fc.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    let store = Store::new(
        storage.clone(),
        journal.clone(),
        vec![journal.clone()],
        fatal,
    );
    let mut options = options;
    if options.ledger_dirs.is_empty() {
        options.ledger_dirs = vec![std::env::temp_dir()];
    }
    let bookie = Bookie::new(store, options);
    let server = Server::start(bookie.clone(), config)
        .await
        .expect("server starts");
    MemBookie {
        server,
        bookie,
        storage,
        journal,
        fatal: fatal_count,
    }
}

pub fn key() -> MasterKey {
    MasterKey::from_password(b"")
}

pub fn other_key() -> MasterKey {
    MasterKey::from_password(b"other")
}

/// A CRC32C entry as a stock client builds it.
pub fn entry(ledger: i64, entry: i64, lac: i64, payload: &[u8]) -> Bytes {
    DigestManager::new(DigestType::Crc32c, b"").build_entry(
        &EntryHeader {
            ledger_id: ledger,
            entry_id: entry,
            last_add_confirmed: lac,
            length: payload.len() as i64 * (entry + 1),
        },
        payload,
    )
}

/// A raw protocol client.
pub struct Client {
    stream: TcpStream,
    buf: BytesMut,
    decoder: FrameDecoder,
    txn: u64,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Client {
            stream,
            buf: BytesMut::new(),
            decoder: FrameDecoder::new(64 * 1024 * 1024),
            txn: 0,
        }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// Next response frame payload; `None` if the bookie closed the connection.
    pub async fn recv_frame(&mut self) -> Option<Bytes> {
        tokio::time::timeout(TIMEOUT, async {
            loop {
                if let Some(f) = self.decoder.decode(&mut self.buf).expect("valid frame") {
                    return Some(f);
                }
                match self.stream.read_buf(&mut self.buf).await {
                    Ok(0) | Err(_) => return None,
                    Ok(_) => {}
                }
            }
        })
        .await
        .expect("response within timeout")
    }

    /// True if nothing arrives within `wait` (and the connection stays open).
    pub async fn silent_for(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.stream.read_buf(&mut self.buf))
            .await
            .is_err()
    }

    /// True if the bookie closes the connection (EOF or reset) within the timeout,
    /// having sent nothing.
    pub async fn closed_without_reply(&mut self) -> bool {
        matches!(
            tokio::time::timeout(TIMEOUT, self.stream.read_buf(&mut self.buf)).await,
            Ok(Ok(0)) | Ok(Err(_))
        ) && self.buf.is_empty()
    }

    // ------------------------------------------------------------------- v2

    pub async fn v2_send(&mut self, req: v2::Request) {
        let mut b = BytesMut::new();
        req.encode(&mut b).expect("encode");
        self.send_raw(&b).await;
    }

    pub async fn v2_recv(&mut self) -> v2::Response {
        let f = self.recv_frame().await.expect("response frame");
        bk_proto::decode_response_v2(f).expect("v2 response")
    }

    pub async fn v2_add(&mut self, flags: Flags, key: MasterKey, entry: Bytes) -> v2::AddResponse {
        let req = v2::AddRequest::new(flags, key, entry).expect("entry");
        self.v2_send(v2::Request::AddEntry(req)).await;
        match self.v2_recv().await {
            v2::Response::AddEntry(r) => r,
            other => panic!("expected add response, got {other:?}"),
        }
    }

    pub async fn v2_read(&mut self, ledger: i64, entry: i64) -> v2::ReadResponse {
        self.v2_send(v2::Request::ReadEntry(v2::ReadRequest::new(ledger, entry)))
            .await;
        match self.v2_recv().await {
            v2::Response::ReadEntry(r) => r,
            other => panic!("expected read response, got {other:?}"),
        }
    }

    pub async fn v2_fence(&mut self, ledger: i64, key: MasterKey) -> v2::ReadResponse {
        self.v2_send(v2::Request::ReadEntry(v2::ReadRequest::fencing(
            ledger,
            -1,
            key,
            Flags::NONE,
        )))
        .await;
        match self.v2_recv().await {
            v2::Response::ReadEntry(r) => r,
            other => panic!("expected read response, got {other:?}"),
        }
    }

    // ------------------------------------------------------------------- v3

    pub async fn v3_send(&mut self, priority: Option<u32>, body: RequestBody) -> u64 {
        self.txn += 1;
        let req = v3::new_request(self.txn, priority, body);
        let mut b = BytesMut::new();
        v3::encode_request(&req, &mut b).expect("encode");
        self.send_raw(&b).await;
        self.txn
    }

    pub async fn v3_send_request(&mut self, req: &v3::Request) {
        let mut b = BytesMut::new();
        v3::encode_request(req, &mut b).expect("encode");
        self.send_raw(&b).await;
    }

    pub async fn v3_recv(&mut self) -> v3::Response {
        let f = self.recv_frame().await.expect("response frame");
        bk_proto::decode_response_v3(f).expect("v3 response")
    }

    /// Sends and waits for the response to this request (checks txnId + operation).
    pub async fn v3_call(&mut self, priority: Option<u32>, body: RequestBody) -> v3::Response {
        let op = body.operation();
        let txn = self.v3_send(priority, body).await;
        let resp = self.v3_recv().await;
        assert_eq!(resp.header.txn_id, txn, "txnId echoed");
        assert_eq!(resp.header.operation, op, "operation echoed");
        resp
    }

    pub async fn v3_add(&mut self, key: MasterKey, entry: Bytes, recovery: bool) -> v3::Response {
        let h = EntryHeader::parse(&entry).expect("entry");
        self.v3_call(
            recovery.then_some(v3::DEFAULT_HIGH_PRIORITY_VALUE),
            RequestBody::AddEntry(v3::AddRequest {
                flag: recovery.then_some(v3::add_request::Flag::RecoveryAdd as i32),
                ledger_id: h.ledger_id,
                entry_id: h.entry_id,
                master_key: Bytes::copy_from_slice(&key.0),
                body: entry,
                write_flags: None,
            }),
        )
        .await
    }

    pub async fn v3_read(&mut self, ledger: i64, entry: i64) -> v3::Response {
        self.v3_call(
            None,
            RequestBody::ReadEntry(v3::ReadRequest {
                ledger_id: ledger,
                entry_id: entry,
                ..Default::default()
            }),
        )
        .await
    }
}

pub fn v3_status(resp: &v3::Response) -> v3::StatusCode {
    v3::StatusCode::try_from(resp.status).expect("known status")
}

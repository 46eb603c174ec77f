//! A tiny in-process fake bookie for bkbench's end-to-end tests: speaks v2 and v3 through
//! bk-proto (server side), keeps entries in a map, and can be told to vanish (close every
//! connection and the listener) or to stall (stop answering) mid-run.
//!
//! It is a test double for the client, not a bookie: no journal, no fencing, no limits.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bk_proto::v2::{self, ErrorCode};
use bk_proto::{v3, ConnProtocolState, FrameDecoder, Request};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Notify;

#[derive(Default)]
pub struct Store {
    pub entries: HashMap<(i64, i64), Bytes>,
    pub adds: u64,
    pub reads: u64,
    pub batch_reads: u64,
}

pub struct FakeBookie {
    pub addr: String,
    pub store: Arc<Mutex<Store>>,
    stall: Arc<AtomicBool>,
    readonly: Arc<AtomicBool>,
    vanish: Arc<Notify>,
    gone: Arc<AtomicBool>,
}

impl FakeBookie {
    /// Starts on 127.0.0.1 with an ephemeral port, on the current tokio runtime.
    pub async fn start() -> FakeBookie {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let store = Arc::new(Mutex::new(Store::default()));
        let stall = Arc::new(AtomicBool::new(false));
        let readonly = Arc::new(AtomicBool::new(false));
        let vanish = Arc::new(Notify::new());
        let gone = Arc::new(AtomicBool::new(false));
        let (s, st, ro, v, g) = (
            store.clone(),
            stall.clone(),
            readonly.clone(),
            vanish.clone(),
            gone.clone(),
        );
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = v.notified() => { g.store(true, Ordering::SeqCst); return; }
                    acc = listener.accept() => {
                        let Ok((sock, _)) = acc else { return };
                        let (s, st, ro, v) = (s.clone(), st.clone(), ro.clone(), v.clone());
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = serve(sock, s, st, ro) => {}
                                _ = wait_forever(v) => {}
                            }
                        });
                    }
                }
            }
        });
        FakeBookie {
            addr,
            store,
            stall,
            readonly,
            vanish,
            gone,
        }
    }

    /// Answers every add with EREADONLY from now on.
    pub fn set_readonly(&self) {
        self.readonly.store(true, Ordering::SeqCst);
    }

    /// Closes the listener and every connection (the process "dies").
    pub fn vanish(&self) {
        // notify_waiters wakes every connection task and the accept loop.
        self.vanish.notify_waiters();
        self.gone.store(true, Ordering::SeqCst);
    }

    /// Stops answering (requests are read and dropped).
    pub fn stall(&self) {
        self.stall.store(true, Ordering::SeqCst);
    }
}

async fn wait_forever(v: Arc<Notify>) {
    v.notified().await;
}

async fn serve(
    mut sock: tokio::net::TcpStream,
    store: Arc<Mutex<Store>>,
    stall: Arc<AtomicBool>,
    readonly: Arc<AtomicBool>,
) {
    let dec = FrameDecoder::default();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut state = ConnProtocolState::default();
    loop {
        match sock.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut out = BytesMut::new();
        loop {
            let frame = match dec.decode(&mut buf) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => return,
            };
            let Ok(req) = bk_proto::decode_request(frame, &mut state) else {
                return;
            };
            if stall.load(Ordering::SeqCst) {
                continue;
            }
            handle(req, &store, readonly.load(Ordering::SeqCst), &mut out);
        }
        if !out.is_empty() && sock.write_all(&out).await.is_err() {
            return;
        }
    }
}

fn handle(req: Request, store: &Mutex<Store>, readonly: bool, out: &mut BytesMut) {
    let mut s = store.lock().expect("store");
    match req {
        Request::V2(v2::Request::AddEntry(a)) if readonly => {
            v2::AddResponse::for_request(&a, ErrorCode::ReadOnly)
                .encode(out)
                .expect("encode");
        }
        Request::V2(v2::Request::AddEntry(a)) => {
            s.adds += 1;
            s.entries.insert((a.ledger_id, a.entry_id), a.entry.clone());
            v2::AddResponse::for_request(&a, ErrorCode::Ok)
                .encode(out)
                .expect("encode");
        }
        Request::V2(v2::Request::ReadEntry(r)) => {
            s.reads += 1;
            let resp = match s.entries.get(&(r.ledger_id, r.entry_id)) {
                Some(e) => v2::ReadResponse::ok(&r, e.clone()),
                None => v2::ReadResponse::error(&r, ErrorCode::NoEntry),
            };
            resp.encode(out).expect("encode");
        }
        Request::V2(v2::Request::BatchReadEntry(b)) => {
            s.batch_reads += 1;
            let mut entries = Vec::new();
            let mut id = b.start_entry_id;
            while let Some(e) = s.entries.get(&(b.ledger_id, id)) {
                if b.max_count > 0 && entries.len() >= b.max_count as usize {
                    break;
                }
                entries.push(e.clone());
                id += 1;
            }
            let code = if entries.is_empty() {
                ErrorCode::NoEntry
            } else {
                ErrorCode::Ok
            };
            v2::BatchReadResponse::for_request(&b, code, entries)
                .encode(out)
                .expect("encode");
        }
        Request::V2(v2::Request::Auth(_)) => {}
        Request::V3(r) => {
            let (header, body) = v3::split_request(*r);
            let resp = match body {
                v3::RequestBody::AddEntry(a) => {
                    s.adds += 1;
                    s.entries.insert((a.ledger_id, a.entry_id), a.body.clone());
                    v3::add_response(&header, v3::StatusCode::Eok, a.ledger_id, a.entry_id)
                }
                v3::RequestBody::ReadEntry(r) => {
                    s.reads += 1;
                    let (status, body) = match s.entries.get(&(r.ledger_id, r.entry_id)) {
                        Some(e) => (v3::StatusCode::Eok, Some(e.clone())),
                        None => (v3::StatusCode::Enoentry, None),
                    };
                    v3::read_response(
                        &header,
                        v3::ReadResponse {
                            status: status as i32,
                            ledger_id: r.ledger_id,
                            entry_id: r.entry_id,
                            body,
                            max_lac: None,
                            lac_update_timestamp: None,
                        },
                    )
                }
                _ => v3::unsupported_operation_response(&header),
            };
            v3::encode_response(&resp, out).expect("encode");
        }
    }
}

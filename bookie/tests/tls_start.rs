//! START_TLS on the bookie port (docs/tls.md §1) and the authorization gate (docs/tls.md §3),
//! against an in-process bookie, with a tokio-rustls client inside the test and rcgen
//! certificates (v3; rustls refuses v1).

mod common;

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bk_proto::v2::{self, ErrorCode, Flags};
use bk_proto::v3::{self, RequestBody, StatusCode};
use bk_proto::FrameDecoder;
use bookie::handlers::BookieOptions;
use bookie::server::ServerConfig;
use bookie::tls::{ConnectionAuthorizer, TlsContext};
use bytes::{Buf, Bytes, BytesMut};
use common::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

// ------------------------------------------------------------------ certificates

struct Ca {
    cert: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap().der().clone();
    Ca {
        cert,
        issuer: Issuer::new(params, key),
    }
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn leaf(ca: &Ca, cn: &str, sans: &[&str]) -> Identity {
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    let cert = params.signed_by(&key, &ca.issuer).unwrap().der().clone();
    (
        vec![cert],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

fn roots(ca: &Ca) -> Arc<RootCertStore> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.cert.clone()).unwrap();
    Arc::new(roots)
}

/// The bookie's TLS context: its certificate from `ca`; client certificates from `clients`
/// required when given.
fn server_tls(ca: &Ca, clients: Option<&Ca>) -> Arc<TlsContext> {
    bookie::tls::install_crypto_provider();
    let (chain, key) = leaf(ca, "bookie", &["localhost", "127.0.0.1"]);
    let builder = rustls::ServerConfig::builder();
    let builder = match clients {
        Some(c) => builder
            .with_client_cert_verifier(WebPkiClientVerifier::builder(roots(c)).build().unwrap()),
        None => builder.with_no_client_auth(),
    };
    Arc::new(TlsContext::new(Arc::new(
        builder.with_single_cert(chain, key).unwrap(),
    )))
}

fn client_tls(ca: &Ca, identity: Option<Identity>) -> Arc<ClientConfig> {
    bookie::tls::install_crypto_provider();
    let builder = ClientConfig::builder().with_root_certificates(roots(ca));
    Arc::new(match identity {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).unwrap(),
        None => builder.with_no_client_auth(),
    })
}

#[derive(Debug)]
struct Authorizer(Result<String, String>);

impl ConnectionAuthorizer for Authorizer {
    fn authorize(&self, peer_chain: Option<&[CertificateDer<'_>]>) -> Result<String, String> {
        assert!(peer_chain.is_some_and(|c| !c.is_empty()), "leaf first");
        self.0.clone()
    }
}

async fn tls_bookie(
    tls: Arc<TlsContext>,
    authorizer: Option<Arc<dyn ConnectionAuthorizer>>,
) -> MemBookie {
    mem_bookie_with(
        BookieOptions::default(),
        ServerConfig {
            tls: Some(tls),
            authorizer,
            tls_handshake_timeout: Duration::from_secs(1),
            ..loopback_config()
        },
    )
    .await
}

/// The usual set-up: a CA, and a bookie with a certificate of it, no client certificates asked,
/// no authorizer.
async fn one_way_tls_bookie() -> (Ca, MemBookie) {
    let ca = ca("ca");
    let b = tls_bookie(server_tls(&ca, None), None).await;
    (ca, b)
}

// ------------------------------------------------------------------ wire bytes (docs/tls.md §1)

const START_TLS_TXN1: [u8; 15] = hex(b"0000000b0a06080310091801d20600");
const EOK_TXN1: [u8; 17] = hex(b"0000000d0a060803100918011000d20600");
const EBADREQ_TXN1: [u8; 15] = hex(b"0000000b0a06080310091801109403");
const EIO_TXN1: [u8; 15] = hex(b"0000000b0a0608031009180110f503");

const fn hex<const N: usize>(s: &[u8]) -> [u8; N] {
    const fn nib(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            _ => c - b'a' + 10,
        }
    }
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = nib(s[2 * i]) << 4 | nib(s[2 * i + 1]);
        i += 1;
    }
    out
}

/// Sends START_TLS (txn 1) in clear and reads exactly the EOK frame back.
async fn start_tls_in_clear(addr: SocketAddr) -> TcpStream {
    start_tls_on(TcpStream::connect(addr).await.unwrap()).await
}

async fn start_tls_on(mut tcp: TcpStream) -> TcpStream {
    tcp.write_all(&START_TLS_TXN1).await.unwrap();
    let mut eok = [0u8; EOK_TXN1.len()];
    tokio::time::timeout(TIMEOUT, tcp.read_exact(&mut eok))
        .await
        .expect("EOK in time")
        .expect("EOK");
    assert_eq!(eok, EOK_TXN1, "EOK with startTLSResponse, in clear");
    tcp
}

// ------------------------------------------------------------------ a framing client over TLS

type Tls = tokio_rustls::client::TlsStream<TcpStream>;

struct TlsClient {
    tls: Tls,
    buf: BytesMut,
    decoder: FrameDecoder,
    txn: u64,
}

impl TlsClient {
    async fn connect(addr: SocketAddr, config: Arc<ClientConfig>) -> io::Result<TlsClient> {
        Self::connect_on(TcpStream::connect(addr).await?, config).await
    }

    async fn connect_on(tcp: TcpStream, config: Arc<ClientConfig>) -> io::Result<TlsClient> {
        let tcp = start_tls_on(tcp).await;
        let tls = tokio::time::timeout(
            TIMEOUT,
            TlsConnector::from(config).connect(ServerName::try_from("localhost").unwrap(), tcp),
        )
        .await
        .expect("handshake in time")?;
        Ok(TlsClient {
            tls,
            buf: BytesMut::new(),
            decoder: FrameDecoder::new(64 << 20),
            // START_TLS was txn 1.
            txn: 1,
        })
    }

    async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.tls.write_all(bytes).await?;
        self.tls.flush().await
    }

    /// The next frame (with its prefix), or `None` when the bookie closed or failed it.
    async fn recv_raw(&mut self) -> Option<Bytes> {
        tokio::time::timeout(TIMEOUT, async {
            loop {
                if let Some(len) = self.decoder.peek_len(&self.buf).expect("frame") {
                    if self.buf.len() >= len + 4 {
                        return Some(self.buf.split_to(len + 4).freeze());
                    }
                }
                match self.tls.read_buf(&mut self.buf).await {
                    Ok(0) | Err(_) => return None,
                    Ok(_) => {}
                }
            }
        })
        .await
        .expect("frame or close within the timeout")
    }

    async fn v3(&mut self, body: RequestBody) -> v3::Response {
        self.txn += 1;
        let mut b = BytesMut::new();
        v3::encode_request(&v3::new_request(self.txn, None, body), &mut b).unwrap();
        self.send(&b).await.unwrap();
        let f = self.recv_raw().await.expect("v3 response");
        let r = bk_proto::decode_response_v3(f.slice(4..)).unwrap();
        assert_eq!(r.header.txn_id, self.txn);
        r
    }

    async fn v3_add(&mut self, ledger: i64, e: i64) -> v3::Response {
        self.v3(RequestBody::AddEntry(v3::AddRequest {
            flag: None,
            ledger_id: ledger,
            entry_id: e,
            master_key: Bytes::copy_from_slice(&key().0),
            body: entry(ledger, e, e - 1, b"over tls"),
            write_flags: None,
        }))
        .await
    }

    async fn v3_read(&mut self, ledger: i64, e: i64) -> v3::Response {
        self.v3(RequestBody::ReadEntry(v3::ReadRequest {
            ledger_id: ledger,
            entry_id: e,
            ..Default::default()
        }))
        .await
    }

    async fn v2_send(&mut self, req: v2::Request) -> io::Result<()> {
        let mut b = BytesMut::new();
        req.encode(&mut b).unwrap();
        self.send(&b).await
    }

    async fn v2_call(&mut self, req: v2::Request) -> v2::Response {
        self.v2_send(req).await.unwrap();
        let f = self.recv_raw().await.expect("v2 response");
        bk_proto::decode_response_v2(f.slice(4..)).unwrap()
    }

    /// The bookie closed (or failed) this connection without sending anything more.
    async fn closed(&mut self) -> bool {
        self.recv_raw().await.is_none()
    }
}

fn v2_add(ledger: i64, e: i64) -> v2::Request {
    v2::Request::AddEntry(
        v2::AddRequest::new(Flags::NONE, key(), entry(ledger, e, e - 1, b"v2 tls")).unwrap(),
    )
}

/// A TLS client the bookie must refuse: its handshake fails, or (TLS 1.3, where the client
/// finishes before the server has checked its certificate) its first request gets no answer
/// and the connection ends.
async fn assert_refused(addr: SocketAddr, config: Arc<ClientConfig>) {
    match TlsClient::connect(addr, config).await {
        Err(_) => {}
        Ok(mut c) => {
            let _ = c
                .v2_send(v2::Request::ReadEntry(v2::ReadRequest::new(1, 0)))
                .await;
            assert!(c.closed().await, "refused client must get no answer");
        }
    }
}

/// A plain connection is still served: the bookie stayed up.
async fn assert_serves_plain(addr: SocketAddr) {
    let mut c = Client::connect(addr).await;
    let r = c.v3_read(999, 0).await;
    assert_eq!(v3_status(&r), StatusCode::Enoledger);
}

// ------------------------------------------------------------------ tests

#[tokio::test]
async fn start_tls_then_v3_and_v2_traffic_over_tls() {
    let (ca, b) = one_way_tls_bookie().await;
    let mut c = TlsClient::connect(b.addr(), client_tls(&ca, None))
        .await
        .expect("handshake");
    for e in 0..3 {
        assert_eq!(v3_status(&c.v3_add(1, e).await), StatusCode::Eok);
    }
    let r = c.v3_read(1, 2).await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    assert_eq!(
        r.read_response.unwrap().body,
        Some(entry(1, 2, 1, b"over tls"))
    );

    // Another connection: START_TLS is v3, the frames after it v2 (sticky from then on).
    let mut c2 = TlsClient::connect(b.addr(), client_tls(&ca, None))
        .await
        .expect("handshake");
    let v2::Response::AddEntry(a) = c2.v2_call(v2_add(2, 0)).await else {
        panic!("v2 add response")
    };
    assert_eq!((a.error, a.ledger_id, a.entry_id), (ErrorCode::Ok, 2, 0));
    let v2::Response::ReadEntry(r) = c2
        .v2_call(v2::Request::ReadEntry(v2::ReadRequest::new(2, 0)))
        .await
    else {
        panic!("v2 read response")
    };
    assert_eq!(
        (r.error, r.entry.clone()),
        (ErrorCode::Ok, entry(2, 0, -1, b"v2 tls"))
    );
    // The first connection is unaffected.
    assert_eq!(v3_status(&c.v3_read(2, 0).await), StatusCode::Eok);
}

#[tokio::test]
async fn large_responses_over_tls_arrive_whole_when_the_client_reads_late() {
    let (ca, b) = one_way_tls_bookie().await;
    // A small receive buffer (no autotuning), so the bookie's socket fills.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(64 * 1024).unwrap();
    let tcp = socket.connect(b.addr()).await.unwrap();
    let mut c = TlsClient::connect_on(tcp, client_tls(&ca, None))
        .await
        .expect("handshake");
    let big = vec![7u8; 4 << 20];
    let body = entry(6, 0, -1, &big);
    let r = c
        .v3(RequestBody::AddEntry(v3::AddRequest {
            flag: None,
            ledger_id: 6,
            entry_id: 0,
            master_key: Bytes::copy_from_slice(&key().0),
            body: body.clone(),
            write_flags: None,
        }))
        .await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    // Three 4 MiB replies queued while the client does not read: the socket fills, and the
    // last records wait in rustls' buffer until the writer flushes them.
    let mut reqs = BytesMut::new();
    for txn in 100..103 {
        let read = RequestBody::ReadEntry(v3::ReadRequest {
            ledger_id: 6,
            entry_id: 0,
            ..Default::default()
        });
        v3::encode_request(&v3::new_request(txn, None, read), &mut reqs).unwrap();
    }
    c.send(&reqs).await.unwrap();
    // Read slowly, so the bookie's socket stays full to the end.
    let mut got = BytesMut::new();
    let want = 3 * (4 + body.len() + 64);
    let slow = tokio::time::timeout(Duration::from_secs(30), async {
        while got.len() < want - 3 * 64 {
            let mut chunk = vec![0u8; 32 * 1024];
            let n = c.tls.read(&mut chunk).await.expect("read");
            assert!(n > 0, "closed early");
            got.extend_from_slice(&chunk[..n]);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    slow.await
        .expect("all three responses (a record left in rustls' buffer never comes)");
    c.buf = got;
    for _ in 0..3 {
        let f = c.recv_raw().await.expect("whole response");
        let r = bk_proto::decode_response_v3(f.slice(4..)).unwrap();
        assert_eq!(r.read_response.unwrap().body, Some(body.clone()));
    }
}

#[tokio::test]
async fn without_a_context_start_tls_answers_ebadreq_and_stays_plain() {
    let b = mem_bookie().await;
    let mut c = Client::connect(b.addr()).await;
    c.send_raw(&START_TLS_TXN1).await;
    let f = c.recv_frame().await.expect("EBADREQ");
    assert_eq!(&f[..], &EBADREQ_TXN1[4..]);
    assert_eq!(v3_status(&c.v3_read(1, 0).await), StatusCode::Enoledger);
}

#[tokio::test]
async fn requests_in_flight_are_answered_in_clear_before_the_eok() {
    let (ca, b) = one_way_tls_bookie().await;
    b.journal.hold(true);
    let mut tcp = TcpStream::connect(b.addr()).await.unwrap();
    let mut add = BytesMut::new();
    let req = v3::new_request(
        7,
        None,
        RequestBody::AddEntry(v3::AddRequest {
            flag: None,
            ledger_id: 3,
            entry_id: 0,
            master_key: Bytes::copy_from_slice(&key().0),
            body: entry(3, 0, -1, b"before"),
            write_flags: None,
        }),
    );
    v3::encode_request(&req, &mut add).unwrap();
    add.extend_from_slice(&START_TLS_TXN1);
    tcp.write_all(&add).await.unwrap();
    let mut one = [0u8; 1];
    assert!(
        tokio::time::timeout(Duration::from_millis(300), tcp.read(&mut one))
            .await
            .is_err(),
        "no EOK while the add is in flight"
    );
    b.journal.hold(false);
    let mut decoder_buf = BytesMut::new();
    let decoder = FrameDecoder::new(1 << 20);
    let add_resp = loop {
        if let Some(f) = decoder.decode(&mut decoder_buf).unwrap() {
            break f;
        }
        tokio::time::timeout(TIMEOUT, tcp.read_buf(&mut decoder_buf))
            .await
            .unwrap()
            .unwrap();
    };
    let r = bk_proto::decode_response_v3(add_resp).unwrap();
    assert_eq!((r.header.txn_id, v3_status(&r)), (7, StatusCode::Eok));
    while decoder_buf.len() < EOK_TXN1.len() {
        tokio::time::timeout(TIMEOUT, tcp.read_buf(&mut decoder_buf))
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(
        &decoder_buf[..],
        &EOK_TXN1[..],
        "then the EOK, and nothing else"
    );
    tokio::time::timeout(
        TIMEOUT,
        TlsConnector::from(client_tls(&ca, None))
            .connect(ServerName::try_from("localhost").unwrap(), tcp),
    )
    .await
    .unwrap()
    .expect("handshake after the drain");
}

/// A stream that sends the START_TLS frame in front of its first write and swallows the EOK
/// in front of what it reads: the ClientHello reaches the bookie in the same segment as
/// START_TLS, before the bookie has answered.
struct Preamble {
    inner: TcpStream,
    to_send: Option<Vec<u8>>,
    to_skip: usize,
}

impl AsyncRead for Preamble {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        while self.to_skip > 0 {
            let mut skip = [0u8; EOK_TXN1.len()];
            let want = self.to_skip;
            let mut rb = ReadBuf::new(&mut skip[..want]);
            match Pin::new(&mut self.inner).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {
                    let at = EOK_TXN1.len() - want;
                    assert_eq!(rb.filled(), &EOK_TXN1[at..at + rb.filled().len()]);
                    self.to_skip -= rb.filled().len();
                }
                other => return other,
            }
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Preamble {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(mut first) = self.to_send.take() {
            first.extend_from_slice(buf);
            // Small: one write on loopback.
            return match Pin::new(&mut self.inner).poll_write(cx, &first) {
                Poll::Ready(Ok(n)) if n == first.len() => Poll::Ready(Ok(buf.len())),
                Poll::Ready(Ok(_)) => Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => {
                    first.truncate(START_TLS_TXN1.len());
                    self.to_send = Some(first);
                    Poll::Pending
                }
            };
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[tokio::test]
async fn a_client_hello_read_with_the_start_tls_frame_belongs_to_the_handshake() {
    let (ca, b) = one_way_tls_bookie().await;
    let io = Preamble {
        inner: TcpStream::connect(b.addr()).await.unwrap(),
        to_send: Some(START_TLS_TXN1.to_vec()),
        to_skip: EOK_TXN1.len(),
    };
    let mut tls = tokio::time::timeout(
        TIMEOUT,
        TlsConnector::from(client_tls(&ca, None))
            .connect(ServerName::try_from("localhost").unwrap(), io),
    )
    .await
    .unwrap()
    .expect("handshake");
    let mut req = BytesMut::new();
    v3::encode_request(
        &v3::new_request(
            2,
            None,
            RequestBody::ReadEntry(v3::ReadRequest {
                ledger_id: 4,
                entry_id: 0,
                ..Default::default()
            }),
        ),
        &mut req,
    )
    .unwrap();
    tls.write_all(&req).await.unwrap();
    tls.flush().await.unwrap();
    let mut len = [0u8; 4];
    tokio::time::timeout(TIMEOUT, tls.read_exact(&mut len))
        .await
        .unwrap()
        .unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    tls.read_exact(&mut body).await.unwrap();
    let r = bk_proto::decode_response_v3(Bytes::from(body)).unwrap();
    assert_eq!(v3_status(&r), StatusCode::Enoledger);
}

#[tokio::test]
async fn mutual_tls_refuses_no_cert_and_untrusted_cert_on_that_connection_only() {
    let ca1 = ca("server-and-clients");
    let other = ca("untrusted");
    let b = tls_bookie(server_tls(&ca1, Some(&ca1)), None).await;
    assert_refused(b.addr(), client_tls(&ca1, None)).await;
    assert_serves_plain(b.addr()).await;
    assert_refused(
        b.addr(),
        client_tls(&ca1, Some(leaf(&other, "intruder", &[]))),
    )
    .await;
    assert_serves_plain(b.addr()).await;
    let mut ok = TlsClient::connect(b.addr(), client_tls(&ca1, Some(leaf(&ca1, "broker", &[]))))
        .await
        .expect("trusted client");
    assert_eq!(v3_status(&ok.v3_add(5, 0).await), StatusCode::Eok);
}

#[tokio::test]
async fn a_refused_authorization_gets_eio_inside_tls_then_pre_authorization_answers() {
    let ca = ca("ca");
    let refuse: Arc<dyn ConnectionAuthorizer> =
        Arc::new(Authorizer(Err("no authorized role".into())));
    let b = tls_bookie(server_tls(&ca, Some(&ca)), Some(refuse)).await;
    let client = || client_tls(&ca, Some(leaf(&ca, "norole", &[])));

    // v3: EIO (the START_TLS header as received), then EUA for an add; the connection stays.
    let mut c = TlsClient::connect(b.addr(), client()).await.unwrap();
    assert_eq!(&c.recv_raw().await.expect("EIO")[..], &EIO_TXN1[..]);
    let r = c.v3_add(1, 0).await;
    assert_eq!(v3_status(&r), StatusCode::Eua);
    assert!(r.add_response.is_none(), "header and status only");
    assert_eq!(v3_status(&c.v3_read(1, 0).await), StatusCode::Eua);

    // v2: EIO, then EUA for an add (its own ledger and entry), close for a batch read.
    let mut c = TlsClient::connect(b.addr(), client()).await.unwrap();
    assert_eq!(&c.recv_raw().await.expect("EIO")[..], &EIO_TXN1[..]);
    let v2::Response::AddEntry(a) = c.v2_call(v2_add(8, 3)).await else {
        panic!("v2 add response")
    };
    assert_eq!(
        (a.error, a.ledger_id, a.entry_id),
        (ErrorCode::Unauthorized, 8, 3)
    );
    c.v2_send(v2::Request::BatchReadEntry(v2::BatchReadRequest {
        version: 2,
        flags: Flags::NONE,
        ledger_id: 8,
        start_entry_id: 0,
        request_id: 1,
        max_count: 10,
        max_size: 1 << 20,
        master_key: None,
    }))
    .await
    .unwrap();
    assert!(
        c.closed().await,
        "v2 batch read before authorization closes"
    );
    assert!(b.journal.snapshot().is_empty(), "nothing reached storage");

    // No START_TLS at all: the same answers in clear.
    let mut c = Client::connect(b.addr()).await;
    let r = c.v3_add(key(), entry(1, 0, -1, b"x"), false).await;
    assert_eq!(v3_status(&r), StatusCode::Eua);
    assert_eq!(c.v2_read(1, 0).await.error, ErrorCode::Unauthorized);
}

#[tokio::test]
async fn an_accepted_authorization_serves_the_connection() {
    let ca = ca("ca");
    let allow: Arc<dyn ConnectionAuthorizer> = Arc::new(Authorizer(Ok("pulsar".into())));
    let b = tls_bookie(server_tls(&ca, Some(&ca)), Some(allow)).await;
    let mut c = TlsClient::connect(b.addr(), client_tls(&ca, Some(leaf(&ca, "broker", &[]))))
        .await
        .unwrap();
    assert_eq!(
        v3_status(&c.v3_add(1, 0).await),
        StatusCode::Eok,
        "no EIO first"
    );
    // A plain connection is never authorized.
    let mut plain = Client::connect(b.addr()).await;
    assert_eq!(v3_status(&plain.v3_read(1, 0).await), StatusCode::Eua);
}

#[tokio::test]
async fn garbage_instead_of_a_client_hello_closes_that_connection() {
    let (_ca, b) = one_way_tls_bookie().await;
    let mut tcp = start_tls_in_clear(b.addr()).await;
    tcp.write_all(&[0x42; 64]).await.unwrap();
    assert!(closed_soon(&mut tcp).await);
    assert_serves_plain(b.addr()).await;
}

#[tokio::test]
async fn plaintext_v2_after_start_tls_closes_that_connection() {
    let (_ca, b) = one_way_tls_bookie().await;
    let mut tcp = start_tls_in_clear(b.addr()).await;
    let mut req = BytesMut::new();
    v2_add(1, 0).encode(&mut req).unwrap();
    tcp.write_all(&req).await.unwrap();
    assert!(closed_soon(&mut tcp).await);
    assert!(b.journal.snapshot().is_empty());
    assert_serves_plain(b.addr()).await;
}

#[tokio::test]
async fn a_handshake_abandoned_halfway_closes_that_connection() {
    let (ca, b) = one_way_tls_bookie().await;
    let hello = client_hello(&ca);
    // Half a ClientHello, then the client goes away.
    let mut tcp = start_tls_in_clear(b.addr()).await;
    tcp.write_all(&hello[..hello.len() / 2]).await.unwrap();
    tcp.shutdown().await.unwrap();
    assert!(closed_soon(&mut tcp).await);
    // Half a ClientHello, then silence: closed at the handshake timeout (1 s here).
    let mut tcp = start_tls_in_clear(b.addr()).await;
    tcp.write_all(&hello[..hello.len() / 2]).await.unwrap();
    assert!(
        closed_soon(&mut tcp).await,
        "closed at the handshake timeout"
    );
    assert_serves_plain(b.addr()).await;
}

/// A slowloris handshake: a real ClientHello, one byte every 200 ms (a whole minute for the
/// hello alone), from the EOK on. The handshake deadline (1 s in these tests, 10 s by
/// default) is for the whole handshake, not per read, so the bookie closes that connection
/// once it passes; a good client connecting meanwhile is served.
#[tokio::test]
async fn a_slowloris_handshake_is_closed_at_the_deadline_while_others_are_served() {
    let (ca, b) = one_way_tls_bookie().await;
    let hello = client_hello(&ca);
    let (mut from_bookie, mut to_bookie) = start_tls_in_clear(b.addr()).await.into_split();
    let trickle = tokio::spawn(async move {
        let mut sent = 0;
        for byte in hello.iter() {
            if to_bookie.write_all(&[*byte]).await.is_err() {
                break;
            }
            sent += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        (sent, hello.len())
    });
    // Meanwhile a good client does its handshake and is served.
    let mut good = TlsClient::connect(b.addr(), client_tls(&ca, None))
        .await
        .expect("good client's handshake");
    assert_eq!(v3_status(&good.v3_add(9, 0).await), StatusCode::Eok);
    assert!(
        closed_soon(&mut from_bookie).await,
        "the slow handshake is closed at the deadline"
    );
    // The bookie's close ends the trickle (its writes fail) well before the hello is out.
    let (sent, whole) = tokio::time::timeout(Duration::from_secs(30), trickle)
        .await
        .expect("the trickle stops once the bookie closed")
        .unwrap();
    assert!(sent < whole, "closed after {sent} of {whole} bytes");
    assert_eq!(v3_status(&good.v3_read(9, 0).await), StatusCode::Eok);
    assert_serves_plain(b.addr()).await;
}

#[tokio::test]
async fn a_second_start_tls_closes_the_connection() {
    let (ca, b) = one_way_tls_bookie().await;
    let mut c = TlsClient::connect(b.addr(), client_tls(&ca, None))
        .await
        .unwrap();
    c.send(&START_TLS_TXN1).await.unwrap();
    assert!(c.closed().await);
    assert_serves_plain(b.addr()).await;
}

/// The first flight of a real rustls client.
fn client_hello(ca: &Ca) -> Vec<u8> {
    let mut conn = rustls::ClientConnection::new(
        client_tls(ca, None),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut out = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut out).unwrap();
    }
    assert!(out.len() > 100);
    out
}

/// The bookie ends the connection within the generous bound (EOF or reset), having sent
/// nothing, or only a TLS alert (content type 21), in clear.
async fn closed_soon<R: AsyncRead + Unpin>(tcp: &mut R) -> bool {
    let mut got = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let mut b = [0u8; 256];
            match tcp.read(&mut b).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&b[..n]),
            }
        }
    })
    .await
    .is_ok();
    let mut rest = &got[..];
    while rest.len() >= 5 && rest[0] == 21 {
        let len = 5 + u16::from_be_bytes([rest[3], rest[4]]) as usize;
        rest = &rest[len.min(rest.len())..];
    }
    ended && !rest.has_remaining()
}

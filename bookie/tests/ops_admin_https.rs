//! The admin HTTP port over TLS (docs/tls.md §5), with mutual TLS as `httpServerTlsEnable`
//! runs it: an HTTPS client with a certificate from the trusted CA gets the admin API and
//! `/metrics`; no certificate, an untrusted one, a plaintext request or a stalled handshake
//! gets no HTTP answer and closes only that connection; the metrics-only port stays plaintext.
//! Certificates are made here with rcgen.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bookie::admin::listener::{start_with_tls, AdminListeners, HEAD_TIMEOUT};
use bookie::admin::AdminState;
use bookie::config::BookieConfig;
use bookie::metrics::Metrics;
use bookie::tls::{install_crypto_provider, TlsContext};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair,
};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Bound on one exchange; far above what any of them needs.
const EXCHANGE_BOUND: Duration = Duration::from_secs(30);

struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A leaf for `localhost` / 127.0.0.1 with `eku`, and its key.
    fn leaf(
        &self,
        cn: &str,
        eku: ExtendedKeyUsagePurpose,
    ) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![eku];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (vec![cert.der().clone(), self.der()], key)
    }
}

/// Mutual TLS as `httpServerTlsEnable` asks: a server certificate from `ca`, client
/// certificates required and checked against `ca`.
fn server_context(ca: &Ca) -> Arc<TlsContext> {
    install_crypto_provider();
    let mut roots = RootCertStore::empty();
    roots.add(ca.der()).unwrap();
    let verifier = WebPkiClientVerifier::builder(Arc::new(roots))
        .build()
        .unwrap();
    let (chain, key) = ca.leaf("bookie", ExtendedKeyUsagePurpose::ServerAuth);
    let config = ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    Arc::new(TlsContext::new(Arc::new(config)))
}

/// A client trusting `ca`, presenting `identity` if given.
fn client_config(
    ca: &Ca,
    identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Arc<ClientConfig> {
    install_crypto_provider();
    let mut roots = RootCertStore::empty();
    roots.add(ca.der()).unwrap();
    let builder = ClientConfig::builder().with_root_certificates(roots);
    Arc::new(match identity {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).unwrap(),
        None => builder.with_no_client_auth(),
    })
}

async fn start(cfg: BookieConfig, tls: Option<Arc<TlsContext>>) -> AdminListeners {
    let state = AdminState::new(Arc::new(cfg.clone()), "b:3181".into(), Metrics::new());
    start_with_tls(&cfg, state, tls).await.unwrap()
}

fn admin_config() -> BookieConfig {
    let mut cfg = BookieConfig::defaults_standalone();
    cfg.http_server_enabled = true;
    cfg.http_server_host = "127.0.0.1".into();
    cfg.http_server_port = 0;
    cfg.metrics_enabled = true;
    cfg
}

/// Writes one GET for `path` on `stream` and reads until the server closes.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    path: &str,
) -> std::io::Result<Vec<u8>> {
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
        .await?;
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await?;
    Ok(buf)
}

/// GET `path` over TLS with `client`: the raw answer, or the error that ended the attempt.
async fn https_get(
    addr: SocketAddr,
    client: Arc<ClientConfig>,
    path: &str,
) -> std::io::Result<Vec<u8>> {
    let attempt = async {
        let tcp = TcpStream::connect(addr).await?;
        let name = ServerName::try_from("localhost").unwrap();
        let tls = TlsConnector::from(client).connect(name, tcp).await?;
        exchange(tls, path).await
    };
    tokio::time::timeout(EXCHANGE_BOUND, attempt)
        .await
        .expect("the exchange ends within the bound")
}

/// The status and body of an HTTP/1.1 answer.
fn parse(answer: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

fn is_http(answer: &std::io::Result<Vec<u8>>) -> bool {
    matches!(answer, Ok(bytes) if bytes.starts_with(b"HTTP/"))
}

#[tokio::test]
async fn mutual_tls_serves_the_admin_api_and_metrics() {
    let ca = Ca::new("test-ca");
    let l = start(admin_config(), Some(server_context(&ca))).await;
    let addr = l.admin_addr().unwrap();
    assert_eq!(l.metrics_addr(), Some(addr), "one listener serves both");
    let client = client_config(
        &ca,
        Some(ca.leaf("operator", ExtendedKeyUsagePurpose::ClientAuth)),
    );

    let (status, body) = parse(
        &https_get(addr, client.clone(), "/api/v1/bookie/state")
            .await
            .unwrap(),
    );
    assert_eq!(status, 200);
    assert!(body.contains("\"running\": false"), "{body}");
    let (status, body) = parse(&https_get(addr, client, "/metrics").await.unwrap());
    assert_eq!(status, 200);
    assert!(body.contains("# TYPE"), "{body}");
    l.shutdown();
}

#[tokio::test]
async fn clients_without_a_trusted_certificate_are_refused_and_others_served() {
    let ca = Ca::new("test-ca");
    let other_ca = Ca::new("other-ca");
    let l = start(admin_config(), Some(server_context(&ca))).await;
    let addr = l.admin_addr().unwrap();
    let good = client_config(
        &ca,
        Some(ca.leaf("operator", ExtendedKeyUsagePurpose::ClientAuth)),
    );

    let no_cert = https_get(addr, client_config(&ca, None), "/api/v1/bookie/state").await;
    assert!(!is_http(&no_cert), "no client certificate: {no_cert:?}");
    let untrusted = client_config(
        &ca,
        Some(other_ca.leaf("intruder", ExtendedKeyUsagePurpose::ClientAuth)),
    );
    let untrusted = https_get(addr, untrusted, "/api/v1/bookie/state").await;
    assert!(!is_http(&untrusted), "untrusted certificate: {untrusted:?}");
    // A client that does not trust the bookie's certificate gives up by itself.
    let wrong_server = client_config(
        &other_ca,
        Some(ca.leaf("operator", ExtendedKeyUsagePurpose::ClientAuth)),
    );
    assert!(https_get(addr, wrong_server, "/metrics").await.is_err());

    let (status, _) = parse(&https_get(addr, good, "/metrics").await.unwrap());
    assert_eq!(status, 200, "the listener keeps serving");
    l.shutdown();
}

#[tokio::test]
async fn plaintext_http_to_the_tls_port_gets_no_http_answer() {
    let ca = Ca::new("test-ca");
    let l = start(admin_config(), Some(server_context(&ca))).await;
    let addr = l.admin_addr().unwrap();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let answer = tokio::time::timeout(EXCHANGE_BOUND, exchange(tcp, "/api/v1/bookie/state"))
        .await
        .expect("the bookie closes the connection");
    assert!(!is_http(&answer), "{answer:?}");

    let good = client_config(
        &ca,
        Some(ca.leaf("operator", ExtendedKeyUsagePurpose::ClientAuth)),
    );
    let (status, _) = parse(&https_get(addr, good, "/api/v1/bookie/state").await.unwrap());
    assert_eq!(status, 200);
    l.shutdown();
}

#[tokio::test]
async fn a_stalled_handshake_is_closed_and_does_not_hold_others_up() {
    let ca = Ca::new("test-ca");
    let l = start(admin_config(), Some(server_context(&ca))).await;
    let addr = l.admin_addr().unwrap();
    // Half a TLS record header, then nothing.
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled.write_all(&[0x16, 0x03]).await.unwrap();

    let good = client_config(
        &ca,
        Some(ca.leaf("operator", ExtendedKeyUsagePurpose::ClientAuth)),
    );
    let (status, _) = parse(&https_get(addr, good, "/metrics").await.unwrap());
    assert_eq!(status, 200, "served while another handshake stalls");

    let mut rest = Vec::new();
    let closed = tokio::time::timeout(
        HEAD_TIMEOUT + EXCHANGE_BOUND,
        stalled.read_to_end(&mut rest),
    )
    .await;
    assert!(closed.is_ok(), "the stalled handshake is closed");
    assert!(!rest.starts_with(b"HTTP/"));
    l.shutdown();
}

#[tokio::test]
async fn the_metrics_only_port_stays_plaintext() {
    let ca = Ca::new("test-ca");
    let mut cfg = BookieConfig::defaults_standalone();
    cfg.prometheus_stats_http_address = "127.0.0.1".into();
    cfg.prometheus_stats_http_port = 0;
    cfg.metrics_enabled = true;
    let l = start(cfg, Some(server_context(&ca))).await;
    assert!(l.admin_addr().is_none());
    let tcp = TcpStream::connect(l.metrics_addr().unwrap()).await.unwrap();
    let answer = tokio::time::timeout(EXCHANGE_BOUND, exchange(tcp, "/metrics"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(parse(&answer).0, 200);
    l.shutdown();
}

//! bkbench's side of TLS on the bookie port (docs/tls.md §1), as the stock Java client does it:
//! on a fresh TCP connection, the v3 START_TLS request in clear, its EOK read back in clear,
//! then a rustls client handshake, after which the caller speaks v2 or v3 on the TLS stream.
//!
//! The client configuration is built once per job from the job's `tls_ca` (PEM CA bundle the
//! bookie's certificate must chain to; turns TLS on), and optionally `tls_cert` + `tls_key`
//! (the client's PEM chain and its PKCS#8, PKCS#1 or SEC1 key, for mutual TLS). The server
//! name checked against the bookie's certificate is the host part of the bookie address: an IP
//! address is checked against the certificate's IP SANs, a DNS name against its DNS SANs
//! (stricter than the stock client, which by default verifies no host name).
//!
//! Every failure is a message naming the bookie (and the file, for configuration errors).

use std::sync::Arc;
use std::time::Duration;

use bk_proto::v3;
use bytes::{Bytes, BytesMut};
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// START_TLS request and its answer, and then the handshake, each get this long (the stock
/// client's `startTLSTimeout` is 10 s, Netty's handshake timeout too).
pub const START_TLS_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest START_TLS answer accepted (the EOK is 13 bytes after its prefix).
const MAX_START_TLS_RESPONSE_BYTES: usize = 64 * 1024;
/// txnId of the START_TLS request: the first request of every connection.
const START_TLS_TXN_ID: u64 = 1;

/// Installs ring as rustls' process-wide crypto provider (as the bookie does); idempotent.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Builds the client configuration: trust `ca_file`'s certificates only; present
/// `cert_file` + `key_file` when both are given.
pub fn client_config(
    ca_file: &str,
    identity: Option<(&str, &str)>,
) -> Result<Arc<ClientConfig>, String> {
    install_crypto_provider();
    let mut roots = RootCertStore::empty();
    for cert in read_certificates("tls_ca", ca_file)? {
        roots
            .add(cert)
            .map_err(|e| format!("tls_ca {ca_file}: not a usable CA certificate: {e}"))?;
    }
    let builder = ClientConfig::builder().with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert_file, key_file)) => {
            let chain = read_certificates("tls_cert", cert_file)?;
            let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| {
                format!("tls_key {key_file}: no PKCS#8, PKCS#1 or SEC1 private key in PEM: {e}")
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                format!("tls_cert {cert_file} / tls_key {key_file}: unusable client identity: {e}")
            })?
        }
    };
    Ok(Arc::new(config))
}

fn read_certificates(key: &str, file: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| format!("{key} {file}: cannot read: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{key} {file}: bad PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{key} {file}: no CERTIFICATE block"));
    }
    Ok(certs)
}

/// The name the bookie's certificate must carry: the host of `addr` (`HOST:PORT`, `[V6]:PORT`).
fn server_name(addr: &str) -> Result<ServerName<'static>, String> {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .map_err(|e| format!("bookie {addr}: '{host}' is not a TLS server name: {e}"))
}

/// Upgrades a fresh connection to `addr` to TLS: START_TLS in clear, its EOK, the handshake.
pub async fn start_tls(
    mut tcp: TcpStream,
    addr: &str,
    config: &Arc<ClientConfig>,
) -> Result<TlsStream<TcpStream>, String> {
    let name = server_name(addr)?;
    let request = v3::new_request(START_TLS_TXN_ID, None, v3::RequestBody::StartTls);
    let mut frame = BytesMut::new();
    v3::encode_request(&request, &mut frame)
        .map_err(|e| format!("bookie {addr}: cannot encode START_TLS: {e}"))?;
    let answer = tokio::time::timeout(START_TLS_TIMEOUT, async {
        tcp.write_all(&frame).await?;
        read_one_frame(&mut tcp).await
    })
    .await
    .map_err(|_| format!("bookie {addr}: no answer to START_TLS within {START_TLS_TIMEOUT:?}"))?
    .map_err(|e| format!("bookie {addr}: START_TLS failed: {e}"))?;
    check_start_tls_answer(answer).map_err(|e| format!("bookie {addr}: {e}"))?;
    tokio::time::timeout(
        START_TLS_TIMEOUT,
        TlsConnector::from(config.clone()).connect(name, tcp),
    )
    .await
    .map_err(|_| format!("bookie {addr}: TLS handshake not done within {START_TLS_TIMEOUT:?}"))?
    .map_err(|e| format!("bookie {addr}: TLS handshake failed: {e}"))
}

/// "TLSv1_3 TLS13_AES_128_GCM_SHA256": what a handshake negotiated.
pub fn session_summary(session: &rustls::ClientConnection) -> String {
    let version = session
        .protocol_version()
        .map_or_else(|| "?".to_string(), |v| format!("{v:?}"));
    let suite = session
        .negotiated_cipher_suite()
        .map_or_else(|| "?".to_string(), |s| format!("{:?}", s.suite()));
    format!("{version} {suite}")
}

/// Reads exactly one length-prefixed frame (nothing behind it: the bookie sends nothing more
/// in clear, and the next bytes belong to the TLS handshake).
async fn read_one_frame(tcp: &mut TcpStream) -> std::io::Result<Bytes> {
    let mut prefix = [0u8; 4];
    tcp.read_exact(&mut prefix).await?;
    let len = u32::from_be_bytes(prefix) as usize;
    if len > MAX_START_TLS_RESPONSE_BYTES {
        return Err(std::io::Error::other(format!(
            "answer of {len} bytes is not a START_TLS response (is this a bookie?)"
        )));
    }
    let mut body = vec![0u8; len];
    tcp.read_exact(&mut body).await?;
    Ok(Bytes::from(body))
}

fn check_start_tls_answer(frame: Bytes) -> Result<(), String> {
    let r = bk_proto::decode_response_v3(frame)
        .map_err(|e| format!("undecodable answer to START_TLS: {e}"))?;
    if r.header.operation != v3::OperationType::StartTls as i32
        || r.header.txn_id != START_TLS_TXN_ID
    {
        return Err(format!(
            "answer to START_TLS is for operation {} txn {}",
            r.header.operation, r.header.txn_id
        ));
    }
    match v3::StatusCode::try_from(r.status) {
        Ok(v3::StatusCode::Eok) => Ok(()),
        Ok(v3::StatusCode::Ebadreq) => Err(
            "refused START_TLS (EBADREQ): the bookie has no TLS configured \
             (tlsProviderFactoryClass)"
                .into(),
        ),
        Ok(other) => Err(format!("refused START_TLS ({})", other.as_str_name())),
        Err(_) => Err(format!("refused START_TLS (status {})", r.status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_from_bookie_addresses() {
        assert!(matches!(
            server_name("127.0.0.1:3181"),
            Ok(ServerName::IpAddress(_))
        ));
        assert!(matches!(
            server_name("[::1]:3181"),
            Ok(ServerName::IpAddress(_))
        ));
        assert!(matches!(
            server_name("bookie-0.example:3181"),
            Ok(ServerName::DnsName(_))
        ));
    }

    #[test]
    fn the_start_tls_request_is_the_stock_clients_bytes() {
        // docs/tls.md §1: `0000000b 0a0608031009 1801 d20600`.
        let request = v3::new_request(START_TLS_TXN_ID, None, v3::RequestBody::StartTls);
        let mut frame = BytesMut::new();
        v3::encode_request(&request, &mut frame).unwrap();
        assert_eq!(
            frame.as_ref(),
            [0, 0, 0, 0x0b, 0x0a, 0x06, 0x08, 0x03, 0x10, 0x09, 0x18, 0x01, 0xd2, 0x06, 0x00]
        );
    }

    #[test]
    fn answers_to_start_tls() {
        // EOK and EBADREQ frames of docs/tls.md §1, without their prefix.
        let eok = Bytes::from_static(&[
            0x0a, 0x06, 0x08, 0x03, 0x10, 0x09, 0x18, 0x01, 0x10, 0x00, 0xd2, 0x06, 0x00,
        ]);
        assert_eq!(check_start_tls_answer(eok), Ok(()));
        let ebadreq = Bytes::from_static(&[
            0x0a, 0x06, 0x08, 0x03, 0x10, 0x09, 0x18, 0x01, 0x10, 0x94, 0x03,
        ]);
        let e = check_start_tls_answer(ebadreq).unwrap_err();
        assert!(e.contains("EBADREQ"), "{e}");
    }
}

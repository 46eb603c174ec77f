//! `tls::server_config`: builds the rustls `ServerConfig`s of the bookie port
//! ([`build_server_config`], from the `tls*` keys) and of the admin port
//! ([`build_http_server_config`], from the `httpServer*` keys), and checks them the way
//! start-up needs (docs/tls.md §2).
//!
//! Guarantees:
//! * a config that is returned can serve: key and certificate match, the own certificate
//!   (and every certificate of its chain below a self-issued one) is X.509 v3 and valid now,
//!   at least one cipher suite and one protocol version are usable together;
//! * `tlsClientAuthentication=true` → a client certificate is required and verified
//!   against the trust store (`WebPkiClientVerifier`); false → none is asked for and the trust
//!   store keys are not read; the admin port always requires one (Java's Vert.x server);
//! * every error is a [`TlsError`] naming the key at fault; names rustls lacks in
//!   `tlsEnabledCipherSuites` / `tlsEnabledProtocols` are logged (warn) and dropped, and only
//!   an empty result fails;
//! * the process-wide crypto provider (ring) is installed before anything is built.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};
use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate, X509Version};

use super::error::TlsError;
use super::names;
use super::settings::{HttpTlsSettings, StoreType, TlsSettings};
use super::stores::{self, OwnKey};

/// The bookie port's TLS config from its settings.
pub fn build_server_config(s: &TlsSettings) -> Result<Arc<ServerConfig>, TlsError> {
    super::install_crypto_provider();
    let own = stores::own_key(
        s.key_store_type,
        s.key_store.as_ref(),
        "tlsKeyStore",
        s.key_store_password_path.as_ref(),
        s.certificate_path.as_ref(),
    )?;
    check_own_chain(&own, SystemTime::now())?;
    let provider = provider_with_suites(s.enabled_cipher_suite.as_deref())?;
    let versions = protocol_versions(s.enabled_protocol.as_deref())?;
    let verifier = if s.client_authentication {
        let Some(trust) = s.trust_store.as_ref() else {
            return Err(TlsError::key(
                "tlsTrustStore",
                "not set: tlsClientAuthentication=true needs the trust store the client \
                 certificates are checked against",
            ));
        };
        let pw =
            stores::trust_store_password(s.trust_store_type, s.trust_store_password_path.as_ref())?;
        let keys = s
            .trust_store_password_path
            .as_ref()
            .map_or("tlsTrustStorePasswordPath (not set)", |f| f.key);
        let anchors = stores::trust_anchors(s.trust_store_type, trust, &pw, keys)?;
        client_verifier(trust.key, anchors, &provider)?
    } else {
        WebPkiClientVerifier::no_client_auth()
    };
    finish(provider, &versions, verifier, own)
}

/// The admin port's TLS config (always mutual TLS; stores typed JKS and sniffed).
pub fn build_http_server_config(s: &HttpTlsSettings) -> Result<Arc<ServerConfig>, TlsError> {
    super::install_crypto_provider();
    let Some(store) = s.key_store.as_ref() else {
        return Err(TlsError::key(
            "httpServerKeyStorePath",
            "not set: httpServerTlsEnable=true needs the admin port's key store",
        ));
    };
    let own = stores::own_key_inline(store, &s.key_store_password, "httpServerKeyStorePassword")?;
    check_own_chain(&own, SystemTime::now())?;
    let Some(trust) = s.trust_store.as_ref() else {
        return Err(TlsError::key(
            "httpServerTrustStorePath",
            "not set: the admin port always requires client certificates (as Java's), \
             checked against this trust store",
        ));
    };
    // Java's quirk: the trust store is opened with httpServerKeyStorePassword.
    let keys = if s.trust_store_password_set {
        "httpServerKeyStorePassword; Java opens the trust store with the key store's password \
         and never reads httpServerTrustStorePassword, and so does bookie-rs"
    } else {
        "httpServerKeyStorePassword, which Java also uses for the trust store"
    };
    let anchors = stores::trust_anchors(StoreType::Jks, trust, &s.key_store_password, keys)?;
    let provider = provider_with_suites(None)?;
    let verifier = client_verifier(trust.key, anchors, &provider)?;
    finish(provider, &protocol_versions(None)?, verifier, own)
}

fn client_verifier(
    key: &'static str,
    anchors: Vec<CertificateDer<'static>>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let mut roots = RootCertStore::empty();
    for (i, cert) in anchors.into_iter().enumerate() {
        roots
            .add(cert)
            .map_err(|e| TlsError::key(key, format!("trusted certificate #{}: {e}", i + 1)))?;
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| TlsError::key(key, format!("cannot verify client certificates: {e}")))
}

fn finish(
    provider: Arc<CryptoProvider>,
    versions: &[&'static SupportedProtocolVersion],
    verifier: Arc<dyn ClientCertVerifier>,
    own: OwnKey,
) -> Result<Arc<ServerConfig>, TlsError> {
    let cert_key = own.cert_key;
    let builder = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| {
            TlsError::key(
                "tlsEnabledCipherSuites",
                format!(
                    "no cipher suite usable with the enabled protocols (tlsEnabledProtocols): {e}"
                ),
            )
        })?;
    let config = builder
        .with_client_cert_verifier(verifier)
        .with_single_cert(own.chain, own.key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => TlsError::key(
                cert_key,
                "the certificate does not match the private key (a key and certificate of \
                 different pairs)",
            ),
            e => TlsError::key(
                if cert_key == "tlsCertificatePath" {
                    "tlsKeyStore"
                } else {
                    cert_key
                },
                format!(
                    "unusable private key: {e} (rustls with ring takes RSA >= 2048 bits, \
                     ECDSA P-256/P-384 and Ed25519 keys; no DSA, no P-521)"
                ),
            ),
        })?;
    Ok(Arc::new(config))
}

/// The ring provider with its suites narrowed to `tlsEnabledCipherSuites`' first entry.
fn provider_with_suites(suite: Option<&str>) -> Result<Arc<CryptoProvider>, TlsError> {
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(name) = suite {
        let (kept, dropped) = names::cipher_suites(&[name.to_string()]);
        for d in &dropped {
            tracing::warn!("tlsEnabledCipherSuites: dropped {d}");
        }
        if kept.is_empty() {
            return Err(TlsError::key(
                "tlsEnabledCipherSuites",
                format!("no usable cipher suite left: {}", dropped.join("; ")),
            ));
        }
        provider.cipher_suites = kept;
    }
    Ok(Arc::new(provider))
}

/// The versions `tlsEnabledProtocols`' first entry allows (default TLS 1.2 + 1.3).
fn protocol_versions(
    protocol: Option<&str>,
) -> Result<Vec<&'static SupportedProtocolVersion>, TlsError> {
    let Some(name) = protocol else {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    };
    let (kept, dropped) = names::protocol_versions(&[name.to_string()]);
    for d in &dropped {
        tracing::warn!("tlsEnabledProtocols: dropped {d}");
    }
    if kept.is_empty() {
        return Err(TlsError::key(
            "tlsEnabledProtocols",
            format!("no usable protocol left: {}", dropped.join("; ")),
        ));
    }
    Ok(kept)
}

/// The own chain as rustls and the clients will see it: each certificate below a
/// self-issued one must be X.509 v3 (rustls-webpki refuses v1 end-entity and intermediate
/// certificates), and the leaf must be valid at `now` (stricter than Java, which serves an
/// expired certificate).
pub fn check_own_chain(own: &OwnKey, now: SystemTime) -> Result<(), TlsError> {
    let key = own.cert_key;
    let now_s = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    for (i, der) in own.chain.iter().enumerate() {
        let what = if i == 0 {
            "the certificate".to_string()
        } else {
            format!("certificate #{} of the chain", i + 1)
        };
        let (_, cert) = X509Certificate::from_der(der)
            .map_err(|e| TlsError::key(key, format!("{what} does not parse: {e}")))?;
        let self_issued = cert.subject() == cert.issuer();
        if cert.version() != X509Version::V3 && !(i > 0 && self_issued) {
            return Err(TlsError::key(
                key,
                format!(
                    "{what} ({}) is X.509 v{}, which rustls refuses (Java accepts it); re-issue \
                     it with v3 extensions (e.g. `openssl x509 -req ... -extfile ext.cnf`)",
                    cert.subject(),
                    cert.version().0 + 1
                ),
            ));
        }
        if i == 0 {
            let v = cert.validity();
            if now_s < v.not_before.timestamp() {
                return Err(TlsError::key(
                    key,
                    format!(
                        "{what} ({}) is not valid before {}",
                        cert.subject(),
                        v.not_before
                    ),
                ));
            }
            if now_s > v.not_after.timestamp() {
                return Err(TlsError::key(
                    key,
                    format!("{what} ({}) expired at {}", cert.subject(), v.not_after),
                ));
            }
        }
    }
    Ok(())
}

//! TLS on the bookie's connections (issue 13; docs/tls.md when it lands).
//!
//! Owns: the server-side TLS context every new TLS session is started from. The context is an
//! `Arc<rustls::ServerConfig>` behind a lock so that new certificates can replace it while the
//! bookie runs (`tlsCertFilesRefreshDurationSeconds`): connections already up keep the config
//! they started with; a new one takes whatever is current when its handshake begins.
//!
//! rustls runs on the ring provider only (no OpenSSL, no aws-lc-rs at run time or build time).

pub mod authz;
pub mod contexts;
pub mod error;
pub mod jks;
pub mod names;
pub mod refresh;
pub mod server_config;
#[cfg(test)]
mod server_config_tests;
pub mod settings;
pub mod stores;
pub mod upgrade;

use std::sync::Arc;

use parking_lot::RwLock;
use rustls::ServerConfig;
use rustls_pki_types::CertificateDer;

/// The TLS context of one listener (the bookie port, or the admin HTTP port).
#[derive(Debug)]
pub struct TlsContext {
    current: RwLock<Arc<ServerConfig>>,
}

impl TlsContext {
    /// A context that starts every session from `config`.
    pub fn new(config: Arc<ServerConfig>) -> Self {
        Self {
            current: RwLock::new(config),
        }
    }

    /// The config a handshake starting now uses.
    pub fn current(&self) -> Arc<ServerConfig> {
        self.current.read().clone()
    }

    /// Swaps in a new config (certificate refresh); sessions already up are not touched.
    pub fn replace(&self, config: Arc<ServerConfig>) {
        *self.current.write() = config;
    }
}

/// The process-wide rustls crypto provider: ring. Call before building any rustls config;
/// calling it again is harmless.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Decides, once per connection and right after its TLS handshake, whether the connection is
/// authorized (`bookieAuthProviderFactoryClass`). Until it is, the connection gets only the
/// pre-authorization answers (docs/tls.md); a connection that never upgrades to TLS is never
/// authorized when an authorizer is configured.
pub trait ConnectionAuthorizer: Send + Sync + std::fmt::Debug {
    /// `peer_chain` is the client's certificate chain, leaf first, or `None` when the client sent
    /// no certificate. `Ok(principal)` authorizes the connection; `Err(reason)` refuses it (the
    /// reason is logged, the connection stays open with pre-authorization answers, as in Java).
    fn authorize(&self, peer_chain: Option<&[CertificateDer<'_>]>) -> Result<String, String>;
}

//! `tls::contexts`: the TLS contexts the bookie starts with, built once at start-up from
//! the parsed configuration ([`TlsContexts::from_config`]) and held for the listeners.
//!
//! Guarantees: a context exists iff its listener serves TLS (`tlsProviderFactoryClass` =
//! TLSContextFactory for the bookie port, `httpServerTlsEnable=true` for the admin port), and
//! it holds a config that was checked by `tls::server_config`; a failure names the key and
//! fails start-up (the binary exits as for any other configuration error).

use std::sync::Arc;

use super::error::TlsError;
use super::server_config::{build_http_server_config, build_server_config};
use super::TlsContext;
use crate::config::BookieConfig;

/// The bookie port's and the admin port's TLS contexts (`None` = plain TCP / HTTP).
#[derive(Debug, Clone, Default)]
pub struct TlsContexts {
    pub bookie: Option<Arc<TlsContext>>,
    pub admin: Option<Arc<TlsContext>>,
}

impl TlsContexts {
    /// Builds the contexts `cfg` asks for.
    pub fn from_config(cfg: &BookieConfig) -> Result<TlsContexts, TlsError> {
        let bookie = match &cfg.tls {
            Some(s) => Some(Arc::new(TlsContext::new(build_server_config(s)?))),
            None => None,
        };
        let admin = match &cfg.http_tls {
            Some(s) => Some(Arc::new(TlsContext::new(build_http_server_config(s)?))),
            None => None,
        };
        Ok(TlsContexts { bookie, admin })
    }
}

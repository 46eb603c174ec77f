//! `tls::error`: [`TlsError`], the one error of building a TLS config from its keys and
//! files. Guarantee: every error names the stock key at fault (and the file, when one is
//! involved), so start-up says which line of `bk_server.conf` to fix (docs/tls.md §2).

use std::fmt;
use std::path::{Path, PathBuf};

/// A TLS config that cannot be built: the key at fault, its file, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError {
    /// The stock key, e.g. `tlsCertificatePath`.
    pub key: &'static str,
    /// The file the key names, when the error is about a file.
    pub path: Option<PathBuf>,
    pub reason: String,
}

impl TlsError {
    /// An error about `key` alone (a missing key, an unusable name).
    pub fn key(key: &'static str, reason: impl Into<String>) -> Self {
        Self {
            key,
            path: None,
            reason: reason.into(),
        }
    }

    /// An error about the file `path` that `key` names.
    pub fn file(key: &'static str, path: &Path, reason: impl Into<String>) -> Self {
        Self {
            key,
            path: Some(path.to_path_buf()),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{} ({}): {}", self.key, p.display(), self.reason),
            None => write!(f, "{}: {}", self.key, self.reason),
        }
    }
}

impl std::error::Error for TlsError {}

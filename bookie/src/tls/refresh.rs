//! `tls::refresh`: `tlsCertFilesRefreshDurationSeconds` (docs/tls.md §2): every that many
//! seconds the bookie port's TLS files are read again, and when any of them changed the
//! config is rebuilt, checked as at start-up, and swapped into the [`TlsContext`] for new
//! connections (those up keep theirs).
//!
//! Guarantees:
//! * the files watched are the five Java watches: certificate, key (store), key password,
//!   trust store, trust password; "changed" compares their **contents**, so a Kubernetes
//!   secret's symlink swap, or a rewrite within the same second, is seen (Java compares
//!   mtimes, which follow symlinks);
//! * a rebuild that fails (a half-written file, an expired certificate, a key of another
//!   pair) is logged as an error naming the key and the old config stays in use; the files
//!   are retried at the next tick (Java keeps the old one too, and logs at info);
//! * the task does its file reads and builds on the blocking pool, and ends when its
//!   [`RefreshTask`] is dropped.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::error::TlsError;
use super::server_config::build_server_config;
use super::settings::TlsSettings;
use super::stores::read_file;
use super::TlsContext;

/// The contents of the watched files (`None` for one that is unset or unreadable).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint(Vec<Option<Vec<u8>>>);

/// What one check did.
#[derive(Debug)]
pub enum Checked {
    /// No watched file changed since the config in use was built.
    Unchanged,
    /// A file changed and the rebuilt config is now current.
    Replaced,
    /// A file changed but the rebuild failed; the old config stays in use.
    Failed(TlsError),
}

/// The rebuild state of one context: its settings and the files its config was built from.
#[derive(Debug)]
pub struct Refresher {
    settings: TlsSettings,
    context: Arc<TlsContext>,
    built_from: Fingerprint,
}

impl Refresher {
    /// Starts from the files as they are now (the context was just built from them).
    pub fn new(settings: TlsSettings, context: Arc<TlsContext>) -> Self {
        let built_from = fingerprint(&settings);
        Self {
            settings,
            context,
            built_from,
        }
    }

    /// Reads the files; rebuilds and swaps in the config if any changed.
    pub fn check(&mut self) -> Checked {
        let now = fingerprint(&self.settings);
        if now == self.built_from {
            return Checked::Unchanged;
        }
        match build_server_config(&self.settings) {
            Ok(config) => {
                self.context.replace(config);
                self.built_from = now;
                Checked::Replaced
            }
            Err(e) => Checked::Failed(e),
        }
    }
}

/// The files Java's `FileModifiedTimeUpdater`s watch.
fn watched(s: &TlsSettings) -> Vec<(&'static str, PathBuf)> {
    [
        &s.certificate_path,
        &s.key_store,
        &s.key_store_password_path,
        &s.trust_store,
        &s.trust_store_password_path,
    ]
    .into_iter()
    .flatten()
    .map(|k| (k.key, k.path.clone()))
    .collect()
}

fn fingerprint(s: &TlsSettings) -> Fingerprint {
    Fingerprint(
        watched(s)
            .into_iter()
            .map(|(key, path)| read_file(key, &path).ok())
            .collect(),
    )
}

/// The running refresh task; dropping it stops the task.
#[derive(Debug)]
pub struct RefreshTask(tokio::task::JoinHandle<()>);

impl Drop for RefreshTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the refresh task of `context` when `settings` ask for one
/// (`tlsCertFilesRefreshDurationSeconds` > 0). Call inside the runtime.
pub fn spawn(settings: &TlsSettings, context: &Arc<TlsContext>) -> Option<RefreshTask> {
    let every = settings.cert_files_refresh?;
    let refresher = Refresher::new(settings.clone(), context.clone());
    Some(RefreshTask(tokio::spawn(refresh_loop(refresher, every))))
}

async fn refresh_loop(mut refresher: Refresher, every: Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let checked = tokio::task::spawn_blocking(move || {
            let c = refresher.check();
            (refresher, c)
        })
        .await;
        let Ok((r, checked)) = checked else {
            // The blocking pool is shutting down with the runtime.
            return;
        };
        refresher = r;
        match checked {
            Checked::Unchanged => {}
            Checked::Replaced => {
                tracing::info!("tlsCertFilesRefreshDurationSeconds: TLS files changed; new connections use the new certificates")
            }
            Checked::Failed(e) => tracing::error!(
                error = %e,
                "tlsCertFilesRefreshDurationSeconds: TLS files changed but cannot be used; \
                 keeping the previous certificates"
            ),
        }
    }
}

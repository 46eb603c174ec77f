//! `registration`: the bookie's presence in ZooKeeper (docs/registration.md §1-§5,
//! docs/semantics.md §14 and §16).
//!
//! Owns: the ZooKeeper session, the INSTANCEID read, the cookie check/creation (ZooKeeper copy
//! plus the `current/VERSION` files through `cookie`), the EPHEMERAL
//! `<root>/available/<bookieId>` and `<root>/available/readonly/<bookieId>` nodes with
//! BookieServiceInfo data, read-only transitions, re-registration after session expiry, and
//! unregistration at shutdown. Standalone mode uses only [`check_cookies_standalone`].
//!
//! Start-up order for `main.rs` (docs/semantics.md §16):
//! 1. [`resolve_bookie_address`] (bookie id);
//! 2. [`Registration::connect`], then [`Registration::check_cookies`] — failure aborts start-up;
//! 3. journal replay etc. (request path);
//! 4. [`Registration::register`] (writable, or read-only if forced) — failure aborts start-up;
//! 5. serve; call [`Registration::set_read_only`] on transitions; watch
//!    [`Registration::fatal`]: `Some(reason)` means ZooKeeper refused our authentication, so
//!    the bookie must shut down (a session expiry is not fatal: re-registration retries until
//!    ZooKeeper is back, however long that takes);
//! 6. [`Registration::shutdown`] deletes the node(s) and closes the session.
//!
//! Invariants:
//! * registration changes are serialized (one async mutex); the mode recorded is the mode
//!   published, except between the create and the delete of a transition, when both nodes exist
//!   (writable->read-only: create read-only first, then delete writable; and the reverse), so a
//!   client never sees the bookie in neither list;
//! * a node owned by another session is never deleted or taken over: we wait up to
//!   [`PREVIOUS_SESSION_WAIT_FACTOR`] x `zkTimeout` for it to expire, then fail (two bookies
//!   with one id must not both run);
//! * a failed or timed-out ZooKeeper call is an error to the caller, never treated as success;
//! * every ZooKeeper call is bounded by a timeout (2 x zkTimeout);
//! * a mode change that could not be published (connection loss, node held by another
//!   session) is retried every 2 s by the session watcher until ZooKeeper shows it.

/// How many `zkTimeout`s start-up waits for a registration node held by another session.
///
/// A bookie restarted at once after a crash (SIGKILL, then systemd or Kubernetes starting it
/// again) finds its node still held by the dead process's session. ZooKeeper expires a session
/// in buckets of `tickTime`, so up to the session timeout plus one tick after the last ping, and
/// a server's tick is at most half its minimum session timeout: with the same `zkTimeout` as
/// before, the node goes within 1.5 x `zkTimeout`. The Java bookie waits 1 x `zkTimeout` and
/// exits; its JVM start hides the gap, ours did not (tests/pulsar all_kill: a bookie restarted
/// 0.1 s after SIGKILL waited 10.006 s and exited, leaving the broker short of bookies). 2x
/// covers it with room; a node still held after that belongs to a live bookie of the same id.
const PREVIOUS_SESSION_WAIT_FACTOR: u32 = 2;

pub mod bookie_id;
mod host_network;
pub mod service_info;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bk_disk::Disk;
use zookeeper_client as zk;

pub use bookie_id::{resolve_bookie_address, validate_bookie_id, BookieAddress, BookieIdError};
pub use service_info::{BookieServiceInfo, Endpoint};

use crate::config::BookieConfig;
use crate::cookie::{self, Cookie, CookieError, CookiePlan};
use crate::metrics::zk_stats::{self, ZkOp};

/// Registration / metadata errors.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    #[error("cannot connect to ZooKeeper {connect}: {source}")]
    Connect { connect: String, source: zk::Error },
    #[error("ZooKeeper {op} {path} failed: {source}")]
    Zk {
        op: &'static str,
        path: String,
        source: zk::Error,
    },
    #[error("ZooKeeper {op} {path} timed out after {timeout:?}")]
    Timeout {
        op: &'static str,
        path: String,
        timeout: Duration,
    },
    #[error(
        "{path} does not exist in ZooKeeper: has the cluster been initialized? \
         Try `bin/bookkeeper shell metaformat` or `initnewcluster`"
    )]
    NotInitialized { path: String },
    #[error(
        "{path} is held by another ZooKeeper session (another bookie with this id, or the previous process \
         whose session has not expired) and was not released within {waited:?}"
    )]
    AlreadyRegistered { path: String, waited: Duration },
    #[error("cookie {path} changed concurrently in ZooKeeper (another bookie with the same id?)")]
    CookieRace { path: String },
    #[error(transparent)]
    Cookie(#[from] CookieError),
    #[error(transparent)]
    BookieId(#[from] BookieIdError),
    #[error("standalone mode has no metadata service")]
    Standalone,
    #[error("registration has been shut down")]
    ShutDown,
}

type Result<T, E = RegistrationError> = std::result::Result<T, E>;

/// How often the session watcher retries a registration mode change that failed.
const RECONCILE_INTERVAL: Duration = Duration::from_secs(2);

/// Longest wait between two re-registration attempts after a session expiry. Small enough
/// that the bookie is registered again within a few seconds of ZooKeeper's return (each
/// attempt also waits up to the connect timeout).
const REREGISTER_BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Published registration mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Unregistered,
    Writable,
    ReadOnly,
}

struct Published {
    /// Mode last published (what ZooKeeper shows).
    mode: Mode,
    /// Mode wanted by the bookie (kept across session expiry; used by re-registration).
    wanted_read_only: bool,
    /// Whether `register` has been called (re-registration only applies after it).
    registered_once: bool,
}

struct Inner {
    connect: String,
    root: String,
    zk_timeout: Duration,
    bookie_id: String,
    data: Vec<u8>,
    client: parking_lot::Mutex<Option<zk::Client>>,
    published: tokio::sync::Mutex<Published>,
    shutting_down: AtomicBool,
    fatal_tx: tokio::sync::watch::Sender<Option<String>>,
    expirations: std::sync::atomic::AtomicU64,
}

/// The bookie's ZooKeeper session and registration. Cheap to clone (shared handle).
#[derive(Clone)]
pub struct Registration {
    inner: Arc<Inner>,
    watcher: Arc<parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

fn open_acl() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

fn ephemeral_acl() -> zk::CreateOptions<'static> {
    zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all())
}

/// Runs a ZooKeeper call with the operation timeout, mapping errors.
async fn zk_call<T>(
    timeout: Duration,
    op: &'static str,
    path: &str,
    fut: impl std::future::Future<Output = Result<T, zk::Error>>,
) -> Result<T> {
    let started = Instant::now();
    let result = tokio::time::timeout(timeout, fut).await;
    if let (Some(o), Ok(r)) = (zk_stats::op_of(op), &result) {
        zk_stats::ZK_STATS.record(o, started, r.is_ok());
    }
    match result {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(source)) => Err(RegistrationError::Zk {
            op,
            path: path.to_string(),
            source,
        }),
        Err(_) => Err(RegistrationError::Timeout {
            op,
            path: path.to_string(),
            timeout,
        }),
    }
}

/// Connects a new ZooKeeper session.
pub async fn connect_zk(connect: &str, session_timeout: Duration) -> Result<zk::Client> {
    let fut = zk::Client::connector()
        .with_session_timeout(session_timeout)
        .connect(connect);
    let fut = zk_stats::timed(ZkOp::CreateClient, fut);
    match tokio::time::timeout(session_timeout + Duration::from_secs(5), fut).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(source)) => Err(RegistrationError::Connect {
            connect: connect.to_string(),
            source,
        }),
        Err(_) => Err(RegistrationError::Connect {
            connect: connect.to_string(),
            source: zk::Error::Timeout,
        }),
    }
}

impl Registration {
    /// Connects to the metadata service of `cfg` and checks the cluster is initialized
    /// (`<root>` and `<root>/available` exist; `<root>/available/readonly` is created if missing).
    /// Does not register.
    pub async fn connect(cfg: &BookieConfig, addr: &BookieAddress) -> Result<Registration> {
        let md = cfg
            .metadata_service
            .as_ref()
            .ok_or(RegistrationError::Standalone)?;
        let client = connect_zk(&md.zk_connect, cfg.zk_timeout).await?;
        let http = cfg
            .http_server_enabled
            .then_some((cfg.http_server_host.as_str(), cfg.http_server_port));
        // The "tls" extension: whenever tlsProviderFactoryClass is set, even empty, as Java
        // (docs/tls.md §1).
        let info = BookieServiceInfo::for_bookie(
            &addr.host,
            addr.port,
            http,
            cfg.tls_provider_factory_class_present,
        );
        let (fatal_tx, _) = tokio::sync::watch::channel(None);
        let reg = Registration {
            inner: Arc::new(Inner {
                connect: md.zk_connect.clone(),
                root: md.ledgers_root.clone(),
                zk_timeout: cfg.zk_timeout,
                bookie_id: addr.bookie_id.clone(),
                data: info.encode(),
                client: parking_lot::Mutex::new(Some(client.clone())),
                published: tokio::sync::Mutex::new(Published {
                    mode: Mode::Unregistered,
                    wanted_read_only: false,
                    registered_once: false,
                }),
                shutting_down: AtomicBool::new(false),
                fatal_tx,
                expirations: std::sync::atomic::AtomicU64::new(0),
            }),
            watcher: Arc::new(parking_lot::Mutex::new(None)),
        };
        reg.inner.check_layout(&client).await?;
        Ok(reg)
    }

    /// The current ZooKeeper session's client (it changes after a session expiry; fetch it again
    /// for each use). Errors after shutdown.
    pub fn client(&self) -> Result<zk::Client> {
        self.inner.client()
    }

    /// The ledgers root path, e.g. `/ledgers`.
    pub fn ledgers_root(&self) -> &str {
        &self.inner.root
    }

    /// This bookie's id.
    pub fn bookie_id(&self) -> &str {
        &self.inner.bookie_id
    }

    /// The serialized BookieServiceInfo this bookie publishes.
    pub fn service_info_bytes(&self) -> &[u8] {
        &self.inner.data
    }

    /// Number of session expiries survived so far.
    pub fn session_expirations(&self) -> u64 {
        self.inner.expirations.load(Ordering::Relaxed)
    }

    /// `<root>/INSTANCEID`, None if the cluster has none.
    pub async fn instance_id(&self) -> Result<Option<String>> {
        self.inner.instance_id(&self.inner.client()?).await
    }

    /// Cookie validation of docs/registration.md §5.3 against ZooKeeper and every directory of `cfg`
    /// (journal, ledger, configured index dirs); writes VERSION files and the ZooKeeper cookie for
    /// a new bookie (or an allowed expansion). Call before journal replay.
    pub async fn check_cookies(
        &self,
        cfg: &BookieConfig,
        addr: &BookieAddress,
        disk: &mut dyn Disk,
    ) -> Result<CookiePlan> {
        let client = self.inner.client()?;
        let t = self.inner.op_timeout();
        let instance_id = self.inner.instance_id(&client).await?;
        let master = master_cookie(cfg, addr, instance_id);
        let path = self.inner.cookie_path(&addr.bookie_id);
        let zk_cookie = read_zk_cookie(&client, t, &path).await?;
        for alt in &addr.alternate_ids {
            let alt_path = self.inner.cookie_path(alt);
            if let Some((c, _)) = read_zk_cookie(&client, t, &alt_path).await? {
                // The bookie was known under another id: the master (with the current id) must
                // match it, which it cannot unless the ids agree -> a clear mismatch error.
                master.verify(&c, &alt_path, cfg.allow_storage_expansion)?;
            }
        }
        let (journal_dirs, other_dirs) = cookie_dir_sets(cfg);
        let dirs = cookie::read_all_dir_cookies(disk, &journal_dirs, &other_dirs)?;
        let plan = cookie::plan(
            &master,
            zk_cookie.as_ref().map(|(c, _)| c),
            true,
            &dirs,
            cfg.allow_storage_expansion,
        )?;
        match &plan {
            CookiePlan::Verified => {}
            CookiePlan::NewBookie => {
                cookie::write_all_dir_cookies(disk, &dirs, &master)?;
                let parent = format!("{}/cookies", self.inner.root);
                zk_call(t, "mkdir", &parent, client.mkdir(&parent, &open_acl())).await?;
                match tokio::time::timeout(
                    t,
                    zk_stats::timed(
                        ZkOp::Create,
                        client.create(&path, master.to_text().as_bytes(), &open_acl()),
                    ),
                )
                .await
                {
                    Ok(Ok(_)) => {}
                    Ok(Err(zk::Error::NodeExists)) => {
                        return Err(RegistrationError::CookieRace { path })
                    }
                    Ok(Err(source)) => {
                        return Err(RegistrationError::Zk {
                            op: "create",
                            path,
                            source,
                        })
                    }
                    Err(_) => {
                        return Err(RegistrationError::Timeout {
                            op: "create",
                            path,
                            timeout: t,
                        })
                    }
                }
                tracing::info!(bookie_id = %addr.bookie_id, "new bookie: cookies written to every directory and ZooKeeper");
            }
            CookiePlan::Expand { new_dirs } => {
                cookie::write_all_dir_cookies(disk, &dirs, &master)?;
                let version = zk_cookie.as_ref().map(|(_, v)| *v);
                match tokio::time::timeout(
                    t,
                    client.set_data(&path, master.to_text().as_bytes(), version),
                )
                .await
                {
                    Ok(Ok(_)) => {}
                    Ok(Err(zk::Error::BadVersion)) => {
                        return Err(RegistrationError::CookieRace { path })
                    }
                    Ok(Err(source)) => {
                        return Err(RegistrationError::Zk {
                            op: "set_data",
                            path,
                            source,
                        })
                    }
                    Err(_) => {
                        return Err(RegistrationError::Timeout {
                            op: "set_data",
                            path,
                            timeout: t,
                        })
                    }
                }
                tracing::info!(?new_dirs, "storage expanded: cookies rewritten");
            }
        }
        Ok(plan)
    }

    /// Publishes the registration node (read-only node if `read_only`) and starts watching the
    /// session for expiry. Fails if another session holds the node beyond `zkTimeout`.
    pub async fn register(&self, read_only: bool) -> Result<()> {
        {
            let mut p = self.inner.published.lock().await;
            p.wanted_read_only = read_only;
            p.registered_once = true;
            let client = self.inner.client()?;
            self.inner.publish(&client, &mut p).await?;
        }
        let mut w = self.watcher.lock();
        if w.is_none() {
            let inner = self.inner.clone();
            *w = Some(tokio::spawn(async move { inner.watch_session().await }));
        }
        Ok(())
    }

    /// Switches between the writable and the read-only registration (docs/semantics.md §14). Before
    /// [`register`](Self::register) only records the wish.
    pub async fn set_read_only(&self, read_only: bool) -> Result<()> {
        let mut p = self.inner.published.lock().await;
        p.wanted_read_only = read_only;
        if !p.registered_once {
            return Ok(());
        }
        let client = self.inner.client()?;
        self.inner.publish(&client, &mut p).await
    }

    /// The mode currently published in ZooKeeper.
    pub async fn mode(&self) -> Mode {
        self.inner.published.lock().await.mode
    }

    /// `Some(reason)` once the registration is lost for good (session expired and
    /// re-registration failed): the bookie must shut down.
    pub fn fatal(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        self.inner.fatal_tx.subscribe()
    }

    /// Unregisters (deletes this session's nodes) and closes the session. Idempotent.
    pub async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        if let Some(h) = self.watcher.lock().take() {
            h.abort();
        }
        let mut p = self.inner.published.lock().await;
        if let Ok(client) = self.inner.client() {
            let t = self.inner.op_timeout();
            for path in [self.inner.writable_path(), self.inner.read_only_path()] {
                if let Err(e) = delete_if_ours(&client, t, &path).await {
                    tracing::warn!(%path, error = %e, "could not delete registration node at shutdown (session close removes it)");
                }
            }
        }
        p.mode = Mode::Unregistered;
        // Dropping the last clone closes the session (other clones, e.g. held by GC, keep it
        // open until they are dropped; the nodes are already gone).
        self.inner.client.lock().take();
        tracing::info!(bookie_id = %self.inner.bookie_id, "unregistered from ZooKeeper");
    }
}

/// Deletes `path` if it exists and is owned by this client's session.
async fn delete_if_ours(client: &zk::Client, t: Duration, path: &str) -> Result<()> {
    let stat = zk_call(t, "stat", path, client.check_stat(path)).await?;
    if let Some(s) = stat {
        if s.ephemeral_owner == client.session_id().0 {
            match tokio::time::timeout(
                t,
                zk_stats::timed(ZkOp::Delete, client.delete(path, Some(s.version))),
            )
            .await
            {
                Ok(Ok(())) | Ok(Err(zk::Error::NoNode)) => {}
                Ok(Err(source)) => {
                    return Err(RegistrationError::Zk {
                        op: "delete",
                        path: path.into(),
                        source,
                    })
                }
                Err(_) => {
                    return Err(RegistrationError::Timeout {
                        op: "delete",
                        path: path.into(),
                        timeout: t,
                    })
                }
            }
        }
    }
    Ok(())
}

async fn read_zk_cookie(
    client: &zk::Client,
    t: Duration,
    path: &str,
) -> Result<Option<(Cookie, i32)>> {
    match tokio::time::timeout(t, zk_stats::timed(ZkOp::GetData, client.get_data(path))).await {
        Ok(Ok((data, stat))) => Ok(Some((Cookie::parse(&data, path)?, stat.version))),
        Ok(Err(zk::Error::NoNode)) => Ok(None),
        Ok(Err(source)) => Err(RegistrationError::Zk {
            op: "get_data",
            path: path.into(),
            source,
        }),
        Err(_) => Err(RegistrationError::Timeout {
            op: "get_data",
            path: path.into(),
            timeout: t,
        }),
    }
}

/// The master cookie for this configuration.
pub fn master_cookie(
    cfg: &BookieConfig,
    addr: &BookieAddress,
    instance_id: Option<String>,
) -> Cookie {
    Cookie::for_config(
        &addr.bookie_id,
        &cfg.journal_dirs,
        &cfg.ledger_dirs,
        cfg.index_dirs.as_deref(),
        instance_id,
    )
}

fn cookie_dir_sets(cfg: &BookieConfig) -> (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) {
    let mut other = cfg.ledger_dirs.clone();
    other.extend(cfg.index_dirs.iter().flatten().cloned());
    (cfg.journal_dirs.clone(), other)
}

/// Cookie validation without ZooKeeper (standalone mode): the directories alone decide.
pub fn check_cookies_standalone(
    cfg: &BookieConfig,
    addr: &BookieAddress,
    disk: &mut dyn Disk,
) -> Result<CookiePlan> {
    let master = master_cookie(cfg, addr, None);
    let (journal_dirs, other_dirs) = cookie_dir_sets(cfg);
    let dirs = cookie::read_all_dir_cookies(disk, &journal_dirs, &other_dirs)?;
    let plan = cookie::plan(&master, None, false, &dirs, cfg.allow_storage_expansion)?;
    if plan != CookiePlan::Verified {
        cookie::write_all_dir_cookies(disk, &dirs, &master)?;
    }
    Ok(plan)
}

impl Inner {
    fn client(&self) -> Result<zk::Client> {
        self.client
            .lock()
            .clone()
            .ok_or(RegistrationError::ShutDown)
    }

    fn op_timeout(&self) -> Duration {
        self.zk_timeout * 2
    }

    fn writable_path(&self) -> String {
        format!("{}/available/{}", self.root, self.bookie_id)
    }

    fn read_only_path(&self) -> String {
        format!("{}/available/readonly/{}", self.root, self.bookie_id)
    }

    fn cookie_path(&self, id: &str) -> String {
        format!("{}/cookies/{}", self.root, id)
    }

    async fn check_layout(&self, client: &zk::Client) -> Result<()> {
        let t = self.op_timeout();
        for path in [self.root.clone(), format!("{}/available", self.root)] {
            if zk_call(t, "stat", &path, client.check_stat(&path))
                .await?
                .is_none()
            {
                return Err(RegistrationError::NotInitialized { path });
            }
        }
        let ro = format!("{}/available/readonly", self.root);
        match tokio::time::timeout(
            t,
            zk_stats::timed(ZkOp::Create, client.create(&ro, &[], &open_acl())),
        )
        .await
        {
            Ok(Ok(_)) | Ok(Err(zk::Error::NodeExists)) => Ok(()),
            Ok(Err(source)) => Err(RegistrationError::Zk {
                op: "create",
                path: ro,
                source,
            }),
            Err(_) => Err(RegistrationError::Timeout {
                op: "create",
                path: ro,
                timeout: t,
            }),
        }
    }

    async fn instance_id(&self, client: &zk::Client) -> Result<Option<String>> {
        let path = format!("{}/INSTANCEID", self.root);
        let t = self.op_timeout();
        match tokio::time::timeout(t, zk_stats::timed(ZkOp::GetData, client.get_data(&path))).await
        {
            Ok(Ok((data, _))) => Ok(Some(String::from_utf8_lossy(&data).trim().to_string())),
            Ok(Err(zk::Error::NoNode)) => Ok(None),
            Ok(Err(source)) => Err(RegistrationError::Zk {
                op: "get_data",
                path,
                source,
            }),
            Err(_) => Err(RegistrationError::Timeout {
                op: "get_data",
                path,
                timeout: t,
            }),
        }
    }

    /// Creates the ephemeral node `path`, waiting up to [`PREVIOUS_SESSION_WAIT_FACTOR`] x
    /// zkTimeout for a node held by another session to disappear (docs/registration.md §4.1).
    async fn create_ephemeral(&self, client: &zk::Client, path: &str) -> Result<()> {
        let t = self.op_timeout();
        let wait = self.zk_timeout * PREVIOUS_SESSION_WAIT_FACTOR;
        let started = Instant::now();
        loop {
            match tokio::time::timeout(
                t,
                zk_stats::timed(
                    ZkOp::Create,
                    client.create(path, &self.data, &ephemeral_acl()),
                ),
            )
            .await
            {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(zk::Error::NodeExists)) => {}
                Ok(Err(source)) => {
                    return Err(RegistrationError::Zk {
                        op: "create",
                        path: path.into(),
                        source,
                    })
                }
                Err(_) => {
                    return Err(RegistrationError::Timeout {
                        op: "create",
                        path: path.into(),
                        timeout: t,
                    })
                }
            }
            let (stat, watcher) =
                zk_call(t, "stat", path, client.check_and_watch_stat(path)).await?;
            match stat {
                None => continue,
                Some(s) if s.ephemeral_owner == client.session_id().0 => return Ok(()),
                Some(s) => {
                    let left = wait.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        return Err(RegistrationError::AlreadyRegistered {
                            path: path.into(),
                            waited: started.elapsed(),
                        });
                    }
                    tracing::warn!(
                        path,
                        owner = format_args!("{:#x}", s.ephemeral_owner),
                        "registration node held by another session; waiting for it to expire"
                    );
                    let _ = tokio::time::timeout(left, watcher.changed()).await;
                }
            }
        }
    }

    /// Makes ZooKeeper show `p.wanted_read_only` (transition order of docs/semantics.md §14).
    async fn publish(&self, client: &zk::Client, p: &mut Published) -> Result<()> {
        let t = self.op_timeout();
        let (w, ro) = (self.writable_path(), self.read_only_path());
        if p.wanted_read_only {
            if p.mode == Mode::ReadOnly {
                return Ok(());
            }
            let parent = format!("{}/available/readonly", self.root);
            zk_call(t, "mkdir", &parent, client.mkdir(&parent, &open_acl())).await?;
            self.create_ephemeral(client, &ro).await?;
            p.mode = Mode::ReadOnly;
            delete_if_ours(client, t, &w).await?;
            tracing::info!(bookie_id = %self.bookie_id, "registered read-only");
        } else {
            if p.mode == Mode::Writable {
                return Ok(());
            }
            self.create_ephemeral(client, &w).await?;
            p.mode = Mode::Writable;
            delete_if_ours(client, t, &ro).await?;
            tracing::info!(bookie_id = %self.bookie_id, "registered writable");
        }
        Ok(())
    }

    /// Background task: on session expiry, open a new session and publish again, retrying with
    /// backoff (100 ms doubling to [`REREGISTER_BACKOFF_MAX`]) for as long as it takes, each
    /// attempt logged. ZooKeeper being away is never a reason to stop: adds and reads need no
    /// metadata, and the Java bookie's shutdown after a failed re-registration turns a
    /// ZooKeeper outage into a bookie outage (docs/semantics.md §14). Only a failed
    /// authentication is reported through [`Registration::fatal`].
    async fn watch_session(self: Arc<Self>) {
        loop {
            // Take the watcher, then look at the current state: a session that already expired
            // before the watcher existed would otherwise never be reported (terminal states
            // are delivered once).
            let (mut watcher, mut state) = match self.client() {
                Ok(c) => (c.state_watcher(), c.state()),
                Err(_) => return,
            };
            loop {
                match state {
                    zk::SessionState::Expired => break,
                    zk::SessionState::AuthFailed => {
                        let _ = self
                            .fatal_tx
                            .send(Some("ZooKeeper authentication failed".into()));
                        return;
                    }
                    zk::SessionState::Closed => return,
                    zk::SessionState::SyncConnected => zk_stats::ZK_STATS.sync_connected(),
                    other => tracing::info!(state = ?other, "ZooKeeper session state"),
                }
                // Wait for the next state change; meanwhile, every few seconds, re-publish a
                // mode change that failed (e.g. connection loss during a transition).
                state = loop {
                    tokio::select! {
                        s = watcher.changed() => break s,
                        _ = tokio::time::sleep(RECONCILE_INTERVAL) => self.reconcile().await,
                    }
                };
            }
            if self.shutting_down.load(Ordering::SeqCst) {
                return;
            }
            self.expirations.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(bookie_id = %self.bookie_id, "ZooKeeper session expired; re-registering (requests are still served)");
            let started = Instant::now();
            let mut backoff = Duration::from_millis(100);
            let mut attempt: u64 = 0;
            loop {
                if self.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                attempt += 1;
                match self.reestablish().await {
                    Ok(()) => {
                        tracing::info!(
                            attempt,
                            after_ms = started.elapsed().as_millis() as u64,
                            "re-registered after ZooKeeper session expiry"
                        );
                        break;
                    }
                    Err(e) => tracing::warn!(
                        attempt,
                        error = %e,
                        retry_in_ms = backoff.as_millis() as u64,
                        "re-registration attempt failed; will retry"
                    ),
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(REREGISTER_BACKOFF_MAX);
            }
        }
    }

    /// Publishes the wanted mode if a previous attempt failed (no-op when they agree).
    async fn reconcile(&self) {
        let mut p = self.published.lock().await;
        let agree = match p.mode {
            Mode::Writable => !p.wanted_read_only,
            Mode::ReadOnly => p.wanted_read_only,
            Mode::Unregistered => false,
        };
        if agree || !p.registered_once || self.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = self.client() else { return };
        match self.publish(&client, &mut p).await {
            Ok(()) => tracing::info!(mode = ?p.mode, "registration mode re-published"),
            Err(e) => {
                tracing::warn!(error = %e, "registration mode still not published; will retry")
            }
        }
    }

    async fn reestablish(&self) -> Result<()> {
        let client = connect_zk(&self.connect, self.zk_timeout).await?;
        let mut p = self.published.lock().await;
        if self.shutting_down.load(Ordering::SeqCst) {
            return Err(RegistrationError::ShutDown);
        }
        // The old session's ephemeral nodes are gone with it.
        p.mode = Mode::Unregistered;
        self.publish(&client, &mut p).await?;
        *self.client.lock() = Some(client);
        tracing::info!(bookie_id = %self.bookie_id, read_only = p.wanted_read_only, "re-registered after session expiry");
        Ok(())
    }
}

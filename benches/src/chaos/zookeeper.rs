//! The ZooKeeper of a drill with `zookeeper = true`: one server `bkchaos` starts with
//! `scripts/zk.sh` (the Debian package's jar; installed by the script when missing), the
//! cluster metadata a new BookKeeper cluster has, and what the schedule's `zk_stop` /
//! `zk_start` do to it. The bookies register under [`LEDGERS_ROOT`] as in production, so a
//! drill can take ZooKeeper away under load and check that they wait it out and register
//! again (docs/chaos.md §7).
//!
//! Invariants:
//! - The server keeps its port and data directory across `zk_stop` / `zk_start`, as a
//!   restarted ensemble member would, so sessions the bookies held may be expired by it, but
//!   the cluster metadata is still there.
//! - The server is stopped when the [`ZooKeeper`] is dropped (also when a drill fails); it is
//!   started without zk.sh's owner watchdog, which would delete the data directory when the
//!   server stops.
//! - Nothing here waits without a deadline.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use zookeeper_client as zk;

/// Where the drill's bookies register (`metadataServiceUri=zk+hierarchical://<addr>/ledgers`).
pub const LEDGERS_ROOT: &str = "/ledgers";

/// How long bkchaos waits for the drill's bookies to be registered (after their start, or after
/// `zk_start`): ZooKeeper's session timeout of the bookies (zkTimeout, 10 s by default) plus
/// their reconnect back-off, with room for a loaded machine.
pub const REGISTRATION_DEADLINE: Duration = Duration::from_secs(60);

/// The script that starts and stops the server: `$BKCHAOS_ZK_SCRIPT`, else the repository's.
fn script() -> PathBuf {
    std::env::var_os("BKCHAOS_ZK_SCRIPT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/zk.sh"))
}

/// One ZooKeeper server on loopback.
pub struct ZooKeeper {
    dir: PathBuf,
    port: u16,
    /// Stopped by `zk_stop` and not started again yet.
    pub stopped: bool,
    /// The session that owned each bookie's registration when `zk_stop` stopped the server
    /// (by bookie id), to tell a resumed session from a new registration afterwards.
    pub owners_before_stop: Vec<(String, Option<i64>)>,
}

impl ZooKeeper {
    /// Starts a server with its data under `dir` on a free port and creates the cluster
    /// metadata (`initnewcluster`'s nodes).
    pub async fn start_new(dir: &Path) -> Result<ZooKeeper, String> {
        let mut z = ZooKeeper {
            dir: dir.to_path_buf(),
            port: crate::ports::free_port()?,
            stopped: true,
            owners_before_stop: Vec::new(),
        };
        z.start()?;
        z.init_cluster().await?;
        Ok(z)
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The bookies' `metadataServiceUri`.
    pub fn metadata_service_uri(&self) -> String {
        format!("zk+hierarchical://{}{LEDGERS_ROOT}", self.addr())
    }

    /// Starts the server (again) on its port and data directory; returns once it answers
    /// `ruok` (zk.sh waits at most 60 s).
    pub fn start(&mut self) -> Result<Duration, String> {
        let t = Instant::now();
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(&self.dir)
            .arg(self.port.to_string())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/zk.sh start failed ({}{}): {}",
                out.status,
                if out.status.code() == Some(2) {
                    ", ZooKeeper cannot be installed"
                } else {
                    ""
                },
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        self.stopped = false;
        Ok(t.elapsed())
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it to exit.
    pub fn stop(&mut self) -> Result<(), String> {
        let out = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(&self.dir)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/zk.sh stop failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        self.stopped = true;
        Ok(())
    }

    /// What `bookkeeper shell initnewcluster` creates: the root, `available/readonly`,
    /// `INSTANCEID` and `LAYOUT` (docs/registration.md).
    async fn init_cluster(&self) -> Result<(), String> {
        let c = connect(&self.addr()).await?;
        let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        c.mkdir(&format!("{LEDGERS_ROOT}/available/readonly"), &open)
            .await
            .map_err(|e| format!("ZooKeeper: mkdir {LEDGERS_ROOT}/available/readonly: {e}"))?;
        let instance = format!("bkchaos-{:016x}", rand::random::<u64>());
        c.create(
            &format!("{LEDGERS_ROOT}/INSTANCEID"),
            instance.as_bytes(),
            &open,
        )
        .await
        .map_err(|e| format!("ZooKeeper: create {LEDGERS_ROOT}/INSTANCEID: {e}"))?;
        c.create(
            &format!("{LEDGERS_ROOT}/LAYOUT"),
            b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1",
            &open,
        )
        .await
        .map_err(|e| format!("ZooKeeper: create {LEDGERS_ROOT}/LAYOUT: {e}"))?;
        Ok(())
    }
}

async fn connect(addr: &str) -> Result<zk::Client, String> {
    let connect = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(addr);
    match tokio::time::timeout(Duration::from_secs(20), connect).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(format!("cannot connect to ZooKeeper {addr}: {e}")),
        Err(_) => Err(format!("ZooKeeper {addr} did not accept a session in 20 s")),
    }
}

/// The bookie ids registered now in the ZooKeeper at `addr`, writable and read-only.
async fn registered(addr: &str) -> Result<Vec<String>, String> {
    let c = connect(addr).await?;
    let mut ids = Vec::new();
    for path in [
        format!("{LEDGERS_ROOT}/available"),
        format!("{LEDGERS_ROOT}/available/readonly"),
    ] {
        let children = c
            .list_children(&path)
            .await
            .map_err(|e| format!("ZooKeeper: list {path}: {e}"))?;
        ids.extend(children.into_iter().filter(|c| c != "readonly"));
    }
    Ok(ids)
}

/// The session owning each bookie's registration node (writable or read-only), None where
/// there is none.
pub async fn owners(addr: &str, ids: &[String]) -> Result<Vec<(String, Option<i64>)>, String> {
    let c = connect(addr).await?;
    let mut out = Vec::new();
    for id in ids {
        let mut owner = None;
        for path in [
            format!("{LEDGERS_ROOT}/available/{id}"),
            format!("{LEDGERS_ROOT}/available/readonly/{id}"),
        ] {
            if let Some(stat) = c
                .check_stat(&path)
                .await
                .map_err(|e| format!("ZooKeeper: stat {path}: {e}"))?
            {
                owner = Some(stat.ephemeral_owner);
                break;
            }
        }
        out.push((id.clone(), owner));
    }
    Ok(out)
}

/// Waits until bookie `id` is registered by a session other than `previous` (the one of its
/// last start, None at the first): a bookie restarted after SIGKILL finds its old node held by
/// the dead session until that expires, and both implementations wait for that before they
/// register (the Java bookie also serves no request until then). The new owner and how long.
pub async fn wait_new_owner(
    addr: &str,
    id: &str,
    previous: Option<i64>,
) -> Result<(i64, Duration), String> {
    let t = Instant::now();
    loop {
        let why = match owners(addr, &[id.to_string()]).await {
            Ok(o) => match o.first().and_then(|(_, owner)| *owner) {
                Some(owner) if Some(owner) != previous => return Ok((owner, t.elapsed())),
                Some(owner) => format!("still owned by the session of its last start ({owner:#x})"),
                None => "not registered".to_string(),
            },
            Err(e) => e,
        };
        if t.elapsed() > REGISTRATION_DEADLINE {
            return Err(format!(
                "bookie {id} not registered anew within {REGISTRATION_DEADLINE:?}: {why}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until every id of `want` is registered in the ZooKeeper at `addr`; how long that
/// took, or Err naming the missing ones after [`REGISTRATION_DEADLINE`].
pub async fn wait_registered(addr: &str, want: &[String]) -> Result<Duration, String> {
    let t = Instant::now();
    loop {
        let last = match registered(addr).await {
            Ok(ids) => {
                let missing: Vec<&String> = want.iter().filter(|w| !ids.contains(w)).collect();
                if missing.is_empty() {
                    return Ok(t.elapsed());
                }
                format!("not registered: {missing:?} (registered: {ids:?})")
            }
            Err(e) => e,
        };
        if t.elapsed() > REGISTRATION_DEADLINE {
            return Err(format!(
                "bookies not registered within {REGISTRATION_DEADLINE:?}: {last}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.stop();
        }
    }
}

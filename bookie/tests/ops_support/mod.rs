//! Shared helpers of the operations integration tests (`ops_*.rs`): one throwaway ZooKeeper per
//! test binary (started with `scripts/zk.sh`, stopped by its watchdog when the binary exits),
//! cluster initialisation like `bookkeeper shell initnewcluster`, and config builders.
//!
//! Skip rule: a test that needs ZooKeeper prints a line starting with `SKIPPED` and returns only
//! when ZooKeeper cannot be installed (zk.sh exit status 2) and `BK_REQUIRE_ZK` is unset; any
//! other start failure panics. CI sets `BK_REQUIRE_ZK=1`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use bookie::config::{BookieArgs, BookieConfig};
use zookeeper_client as zk;

pub struct ZkServer {
    /// `127.0.0.1:<port>`.
    pub connect: String,
    pub dir: PathBuf,
}

static ZK: OnceLock<Option<ZkServer>> = OnceLock::new();

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/zk.sh")
}

/// The shared ZooKeeper of this test binary, or None (after printing SKIPPED) if it cannot be
/// installed and BK_REQUIRE_ZK is unset.
pub fn zk_server(test: &str) -> Option<&'static ZkServer> {
    let server = ZK.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("bk-ops-zk-{}", std::process::id()));
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(&dir)
            .arg("0")
            .arg(std::process::id().to_string())
            .output()
            .expect("run scripts/zk.sh");
        if out.status.success() {
            let connect = String::from_utf8_lossy(&out.stdout).trim().to_string();
            return Some(ZkServer { connect, dir });
        }
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        if out.status.code() == Some(2) && std::env::var_os("BK_REQUIRE_ZK").is_none() {
            None
        } else {
            panic!(
                "ZooKeeper could not be started (status {:?}): {stderr}",
                out.status.code()
            );
        }
    });
    if server.is_none() {
        println!("SKIPPED {test}: ZooKeeper cannot be installed here (set BK_REQUIRE_ZK=1 to fail instead)");
    }
    server.as_ref()
}

/// An observer session.
pub async fn observer(server: &ZkServer) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(std::time::Duration::from_secs(10))
        .connect(&server.connect)
        .await
        .expect("observer connects")
}

pub fn open() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// What `initnewcluster` creates: root, available, available/readonly, INSTANCEID, LAYOUT.
pub async fn init_cluster(client: &zk::Client, root: &str, instance_id: Option<&str>) {
    client
        .mkdir(&format!("{root}/available/readonly"), &open())
        .await
        .expect("mkdir available");
    if let Some(id) = instance_id {
        client
            .create(&format!("{root}/INSTANCEID"), id.as_bytes(), &open())
            .await
            .expect("INSTANCEID");
    }
    client
        .create(
            &format!("{root}/LAYOUT"),
            b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1",
            &open(),
        )
        .await
        .expect("LAYOUT");
}

/// A config for a bookie on 127.0.0.1 registered under `root`, dirs under `base`.
pub fn bookie_config(
    server: &ZkServer,
    root: &str,
    base: &Path,
    port: u16,
    extra: &[&str],
) -> BookieConfig {
    bookie_config_at(&server.connect, root, base, port, extra)
}

/// Same as [`bookie_config`] with an explicit ZooKeeper connect string (e.g. a [`ZkProxy`]).
pub fn bookie_config_at(
    connect: &str,
    root: &str,
    base: &Path,
    port: u16,
    extra: &[&str],
) -> BookieConfig {
    let mut set = vec![
        format!("metadataServiceUri=zk+hierarchical://{connect}{root}"),
        format!("journalDirectories={}", base.join("journal").display()),
        format!("ledgerDirectories={}", base.join("ledgers").display()),
        "advertisedAddress=127.0.0.1".to_string(),
        "allowLoopback=true".to_string(),
        format!("bookiePort={port}"),
        "zkTimeout=4000".to_string(),
    ];
    set.extend(extra.iter().map(|s| s.to_string()));
    let args = BookieArgs {
        set,
        ..Default::default()
    };
    BookieConfig::from_text_and_args(None, None, &args)
        .expect("valid test config")
        .0
}

/// A TCP proxy in front of ZooKeeper that a test can cut, to make a client lose its
/// connection while another client takes over (and closes) its session.
pub struct ZkProxy {
    /// `127.0.0.1:<port>` of the proxy.
    pub connect: String,
    blocked: std::sync::Arc<std::sync::atomic::AtomicBool>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl ZkProxy {
    pub async fn start(upstream: &str) -> ZkProxy {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind proxy");
        let connect = listener.local_addr().expect("proxy addr").to_string();
        let blocked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (b, c, up) = (blocked.clone(), conns.clone(), upstream.to_string());
        let accept = tokio::spawn(async move {
            while let Ok((mut down, _)) = listener.accept().await {
                if b.load(Ordering::SeqCst) {
                    continue; // dropped: connection closed at once
                }
                let up = up.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut upstream) = tokio::net::TcpStream::connect(&up).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut upstream).await;
                    }
                });
                c.lock().unwrap().push(task.abort_handle());
            }
        });
        ZkProxy {
            connect,
            blocked,
            conns,
            accept,
        }
    }

    /// Closes every proxied connection and refuses new ones.
    pub fn block(&self) {
        self.blocked
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for h in self.conns.lock().unwrap().drain(..) {
            h.abort();
        }
    }

    pub fn unblock(&self) {
        self.blocked
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for ZkProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.block();
    }
}

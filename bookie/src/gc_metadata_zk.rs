//! `gc_metadata_zk`: the [`MetadataStore`] of the garbage collector over the bookie's
//! ZooKeeper session: ledger metadata znodes (docs/registration.md §2.3, path from
//! `gc_scan::ledger_path`) and the under-replication locks Java's replication workers and GC
//! share (`ZkLedgerUnderreplicationManager`).
//!
//! Tree (created as Java's `ZkLedgerUnderreplicationManager` creates it when GC opens one):
//! ```text
//! <root>/underreplication              persistent, empty
//! <root>/underreplication/LAYOUT       persistent, text format: type: "BASIC"\nversion: 1\n
//! <root>/underreplication/ledgers      persistent, empty
//! <root>/underreplication/locks/urL<id as %010d>
//!                                      EPHEMERAL, LockDataFormat text: bookieId: "<id>"\n
//! ```
//! Guarantees: every call is bounded by the timeout given (2 x `zkTimeout`, as Java bounds
//! GC's metadata reads); a missing node is `Ok(None)`/`Ok(false)`, every other failure an
//! `Err` naming the path; a LAYOUT of another type or version is an error (as Java's
//! `CompatibilityException`), so the over-replication check does not run against a tree it
//! does not understand. Locks are ephemeral on this session: a bookie that dies holding one
//! frees it when its session expires.

use std::future::Future;
use std::time::Duration;

use zookeeper_client as zk;

use crate::gc_metadata::MetadataStore;
use crate::gc_scan::ledger_path;

/// The layout znode's content (protobuf text format of `LedgerRereplicationLayoutFormat`).
pub const LAYOUT_DATA: &str = "type: \"BASIC\"\nversion: 1\n";

/// The lock znode of `ledger` under the ledgers root `root`.
pub fn lock_path(root: &str, ledger: u64) -> String {
    format!(
        "{}/underreplication/locks/urL{ledger:010}",
        root.trim_end_matches('/')
    )
}

/// The bookie's session, ledgers root, own id (lock data) and per-call bound.
pub struct ZkMetadata {
    client: zk::Client,
    root: String,
    lock_data: Vec<u8>,
    timeout: Duration,
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

fn ephemeral() -> zk::CreateOptions<'static> {
    zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all())
}

async fn bounded<T>(
    timeout: Duration,
    what: &str,
    path: &str,
    fut: impl Future<Output = Result<T, zk::Error>>,
) -> Result<Result<T, zk::Error>, String> {
    tokio::time::timeout(timeout, fut)
        .await
        .map_err(|_| format!("{what} {path}: timed out after {timeout:?}"))
}

impl ZkMetadata {
    pub fn new(client: zk::Client, root: &str, bookie_id: &str, timeout: Duration) -> ZkMetadata {
        ZkMetadata {
            client,
            root: root.trim_end_matches('/').to_string(),
            lock_data: format!("bookieId: \"{bookie_id}\"\n").into_bytes(),
            timeout,
        }
    }

    async fn create_if_missing(&self, path: &str, data: &[u8]) -> Result<(), String> {
        match bounded(
            self.timeout,
            "create",
            path,
            self.client.create(path, data, &persistent()),
        )
        .await?
        {
            Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
            Err(e) => Err(format!("create {path}: {e}")),
        }
    }

    /// Creates the under-replication tree if missing and checks its LAYOUT (module docs),
    /// as Java does each time its GC opens an under-replication manager.
    pub async fn prepare(&self) -> Result<(), String> {
        let base = format!("{}/underreplication", self.root);
        self.create_if_missing(&base, b"").await?;
        let layout = format!("{base}/LAYOUT");
        self.create_if_missing(&layout, LAYOUT_DATA.as_bytes())
            .await?;
        let data =
            match bounded(self.timeout, "get", &layout, self.client.get_data(&layout)).await? {
                Ok((data, _)) => data,
                Err(e) => return Err(format!("get {layout}: {e}")),
            };
        if !layout_is_basic_v1(&String::from_utf8_lossy(&data)) {
            return Err(format!(
                "{layout} is {:?}, not {LAYOUT_DATA:?}: incompatible under-replication layout",
                String::from_utf8_lossy(&data)
            ));
        }
        self.create_if_missing(&format!("{base}/ledgers"), b"")
            .await
    }
}

/// Whether a LAYOUT text names type BASIC, version 1 (whitespace as text format allows).
pub fn layout_is_basic_v1(text: &str) -> bool {
    let mut kind = None;
    let mut version = None;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        match k.trim() {
            "type" => kind = Some(v.trim().trim_matches('"').to_string()),
            "version" => version = v.trim().parse::<i64>().ok(),
            _ => {}
        }
    }
    kind.as_deref() == Some("BASIC") && version == Some(1)
}

impl MetadataStore for ZkMetadata {
    fn read_metadata(
        &self,
        ledger: u64,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, String>> + Send + 'static {
        let path = ledger_path(&self.root, ledger);
        // Created here, so the request leaves now (module docs of gc_scan.rs).
        let fut = self.client.get_data(&path);
        let timeout = self.timeout;
        async move {
            match bounded(timeout, "get", &path, fut).await? {
                Ok((data, _)) => Ok(Some(data)),
                Err(zk::Error::NoNode) => Ok(None),
                Err(e) => Err(format!("get {path}: {e}")),
            }
        }
    }

    async fn lock_exists(&self, ledger: u64) -> Result<bool, String> {
        let path = lock_path(&self.root, ledger);
        match bounded(self.timeout, "stat", &path, self.client.check_stat(&path)).await? {
            Ok(stat) => Ok(stat.is_some()),
            Err(e) => Err(format!("stat {path}: {e}")),
        }
    }

    async fn acquire_lock(&self, ledger: u64) -> Result<(), String> {
        let path = lock_path(&self.root, ledger);
        let create = || self.client.create(&path, &self.lock_data, &ephemeral());
        match bounded(self.timeout, "create", &path, create()).await? {
            Ok(_) => return Ok(()),
            Err(zk::Error::NoNode) => {}
            Err(e) => return Err(format!("create {path}: {e}")),
        }
        // Java's createFullPathOptimistic: make the parents, then try again.
        let locks = format!("{}/underreplication/locks", self.root);
        self.create_if_missing(&format!("{}/underreplication", self.root), b"")
            .await?;
        self.create_if_missing(&locks, b"").await?;
        match bounded(self.timeout, "create", &path, create()).await? {
            Ok(_) => Ok(()),
            Err(e) => Err(format!("create {path}: {e}")),
        }
    }

    async fn release_lock(&self, ledger: u64) -> Result<(), String> {
        let path = lock_path(&self.root, ledger);
        match bounded(
            self.timeout,
            "delete",
            &path,
            self.client.delete(&path, None),
        )
        .await?
        {
            Ok(()) | Err(zk::Error::NoNode) => Ok(()),
            Err(e) => Err(format!("delete {path}: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_paths_and_layout() {
        assert_eq!(
            lock_path("/ledgers/", 42),
            "/ledgers/underreplication/locks/urL0000000042"
        );
        assert_eq!(
            lock_path("/l", 12_345_678_901),
            "/l/underreplication/locks/urL12345678901"
        );
        assert!(layout_is_basic_v1(LAYOUT_DATA));
        assert!(layout_is_basic_v1("type:\"BASIC\" \nversion : 1"));
        assert!(!layout_is_basic_v1("type: \"BASIC\"\nversion: 2\n"));
        assert!(!layout_is_basic_v1("type: \"OTHER\"\nversion: 1\n"));
        assert!(!layout_is_basic_v1(""));
    }
}

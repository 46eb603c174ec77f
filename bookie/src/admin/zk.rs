//! The admin API's ZooKeeper calls: children, data and existence of one node, and the few
//! writes an operator asks for (ledger delete, auto-recovery switch and delay, the sanity
//! test's ledger id), each bounded by the bookie's `zkTimeout`, through the registration's
//! current session (so an endpoint sees what the bookie's own registration sees). Writes use
//! the open ACL, as the registration's nodes do; none is retried (a timed-out write may or
//! may not have happened: the answer says it timed out, never that it did nothing).
//!
//! A missing node is `Ok(None)`, distinct from a failed or timed-out read (`Err`), so no
//! endpoint reads "no answer" as "nothing there".

use std::time::Duration;

use zookeeper_client as zk;

use super::AdminState;

/// One session's client, the ledgers root and the per-call bound.
pub(super) struct Zk {
    client: zk::Client,
    root: String,
    timeout: Duration,
}

impl Zk {
    /// `None` when there is no registration (standalone, or not connected yet).
    pub(super) fn of(state: &AdminState) -> Option<Result<Zk, String>> {
        let reg = state.registration()?;
        Some(
            reg.client()
                .map(|client| Zk {
                    client,
                    root: reg.ledgers_root().trim_end_matches('/').to_string(),
                    timeout: state.zk_timeout(),
                })
                .map_err(|e| e.to_string()),
        )
    }

    /// `<ledgers root>/<rel>` (`rel` without a leading slash; empty for the root).
    pub(super) fn path(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.root.clone()
        } else {
            format!("{}/{rel}", self.root)
        }
    }

    pub(super) fn root(&self) -> &str {
        &self.root
    }

    pub(super) fn client(&self) -> &zk::Client {
        &self.client
    }

    async fn bounded<T>(
        &self,
        what: &str,
        path: &str,
        fut: impl std::future::Future<Output = Result<T, zk::Error>>,
    ) -> Result<Option<T>, String> {
        let started = std::time::Instant::now();
        let result = tokio::time::timeout(self.timeout, fut).await;
        if let (Some(op), Ok(r)) = (crate::metrics::zk_stats::op_of(what), &result) {
            crate::metrics::zk_stats::ZK_STATS.record(op, started, r.is_ok());
        }
        match result {
            Ok(Ok(v)) => Ok(Some(v)),
            Ok(Err(zk::Error::NoNode)) => Ok(None),
            Ok(Err(e)) => Err(format!("{what} {path}: {e}")),
            Err(_) => Err(format!("{what} {path}: timed out after {:?}", self.timeout)),
        }
    }

    pub(super) async fn children(&self, path: &str) -> Result<Option<Vec<String>>, String> {
        self.bounded("list", path, self.client.list_children(path))
            .await
    }

    pub(super) async fn data(&self, path: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self
            .bounded("get", path, self.client.get_data(path))
            .await?
            .map(|(data, _stat)| data))
    }

    /// The data of `path` and the node's creation time (ms since the epoch).
    pub(super) async fn data_and_ctime(
        &self,
        path: &str,
    ) -> Result<Option<(Vec<u8>, i64)>, String> {
        Ok(self
            .bounded("get", path, self.client.get_data(path))
            .await?
            .map(|(data, stat)| (data, stat.ctime)))
    }

    /// Deletes `path` at any version; `Ok(false)` when there was no such node.
    pub(super) async fn delete(&self, path: &str) -> Result<bool, String> {
        Ok(self
            .bounded("delete", path, self.client.delete(path, None))
            .await?
            .is_some())
    }

    /// Creates the persistent node `path` with `data`, and any missing parent (empty,
    /// persistent, as Java's `ZkUtils.createFullPathOptimistic`); `Ok(false)` when `path`
    /// already existed.
    pub(super) async fn create_persistent(&self, path: &str, data: &[u8]) -> Result<bool, String> {
        let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        for (i, _) in path.match_indices('/').skip(1) {
            let parent = &path[..i];
            match self.create_once(parent, &[], &opts).await {
                Ok(_) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(format!("create {parent}: {e}")),
            }
        }
        match self.create_once(path, data, &opts).await {
            Ok(_) => Ok(true),
            Err(zk::Error::NodeExists) => Ok(false),
            Err(e) => Err(format!("create {path}: {e}")),
        }
    }

    /// Sets the data of `path`, creating it (and parents) when missing.
    pub(super) async fn put(&self, path: &str, data: &[u8]) -> Result<(), String> {
        match self
            .bounded("set", path, self.client.set_data(path, data, None))
            .await?
        {
            Some(_) => Ok(()),
            None => self.create_persistent(path, data).await.map(|_| ()),
        }
    }

    /// Creates an ephemeral sequential node `<prefix><seq>` (parents as needed) and returns
    /// its sequence number.
    pub(super) async fn create_ephemeral_sequential(&self, prefix: &str) -> Result<i64, String> {
        if let Some((parent, _)) = prefix.rsplit_once('/') {
            self.create_persistent(parent, &[]).await?;
        }
        let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        match self.create_once(prefix, &[], &opts).await {
            Ok(seq) => Ok(seq),
            Err(e) => Err(format!("create {prefix}<seq>: {e}")),
        }
    }

    async fn create_once(
        &self,
        path: &str,
        data: &[u8],
        opts: &zk::CreateOptions<'_>,
    ) -> Result<i64, zk::Error> {
        match tokio::time::timeout(self.timeout, self.client.create(path, data, opts)).await {
            Ok(r) => r.map(|(_, seq)| seq.into_i64()),
            Err(_) => Err(zk::Error::Timeout),
        }
    }

    /// The data of `path` and its version, for a compare-and-set write
    /// ([`Zk::set_if_version`], [`Zk::delete_if_version`]).
    pub(super) async fn data_versioned(
        &self,
        path: &str,
    ) -> Result<Option<(Vec<u8>, i32)>, String> {
        Ok(self
            .bounded("get", path, self.client.get_data(path))
            .await?
            .map(|(data, stat)| (data, stat.version)))
    }

    /// Sets `path` to `data` only if its version is still `version`: `Ok(true)` when
    /// written, `Ok(false)` when the node changed or went meanwhile (read it again).
    pub(super) async fn set_if_version(
        &self,
        path: &str,
        data: &[u8],
        version: i32,
    ) -> Result<bool, String> {
        let set = self.client.set_data(path, data, Some(version));
        match tokio::time::timeout(self.timeout, set).await {
            Ok(Ok(_)) => Ok(true),
            Ok(Err(zk::Error::BadVersion | zk::Error::NoNode)) => Ok(false),
            Ok(Err(e)) => Err(format!("set {path}: {e}")),
            Err(_) => Err(format!("set {path}: timed out after {:?}", self.timeout)),
        }
    }

    /// Deletes `path` only at `version`; `Ok(false)` when it changed or went meanwhile.
    pub(super) async fn delete_if_version(&self, path: &str, version: i32) -> Result<bool, String> {
        let delete = self.client.delete(path, Some(version));
        match tokio::time::timeout(self.timeout, delete).await {
            Ok(Ok(())) => Ok(true),
            Ok(Err(zk::Error::BadVersion | zk::Error::NoNode)) => Ok(false),
            Ok(Err(e)) => Err(format!("delete {path}: {e}")),
            Err(_) => Err(format!("delete {path}: timed out after {:?}", self.timeout)),
        }
    }

    pub(super) async fn exists(&self, path: &str) -> Result<bool, String> {
        Ok(self
            .bounded("stat", path, self.client.check_stat(path))
            .await?
            .flatten()
            .is_some())
    }

    /// Writable bookies (`available/*` less `readonly`) and read-only ones
    /// (`available/readonly/*`), each sorted.
    pub(super) async fn bookies(&self) -> Result<(Vec<String>, Vec<String>), String> {
        let mut rw = self
            .children(&self.path("available"))
            .await?
            .unwrap_or_default();
        rw.retain(|c| c != "readonly");
        let mut ro = self
            .children(&self.path("available/readonly"))
            .await?
            .unwrap_or_default();
        rw.sort();
        ro.sort();
        Ok((rw, ro))
    }

    /// The elected auditor's bookie id (`underreplication/auditorelection`, the vote with
    /// the lowest sequence number, its text-format `bookieId: "..."`), `None` if none.
    pub(super) async fn auditor(&self) -> Result<Option<String>, String> {
        let election = self.path("underreplication/auditorelection");
        let Some(mut votes) = self.children(&election).await? else {
            return Ok(None);
        };
        votes.sort_by_key(|v| {
            v.rsplit('_')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(u64::MAX)
        });
        let Some(first) = votes.first() else {
            return Ok(None);
        };
        let path = format!("{election}/{first}");
        let Some(data) = self.data(&path).await? else {
            return Ok(None);
        };
        parse_vote(&String::from_utf8_lossy(&data))
            .map(Some)
            .ok_or_else(|| format!("{path}: no bookieId in the auditor vote"))
    }
}

/// The `bookieId` of an `AuditorVoteFormat` in protobuf text format (`bookieId: "h:p"`).
pub(super) fn parse_vote(text: &str) -> Option<String> {
    let rest = &text[text.find("bookieId")? + "bookieId".len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

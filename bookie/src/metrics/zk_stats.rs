//! The ZooKeeper client's stock series, as Java's `ZooKeeperClient` exports them under the
//! bookie's scope (docs/metrics.md §2): one summary per operation,
//! `bookie_bookie_zk_<op>{success}` (latency in ms; `success="false"` for any error, a
//! missing node included, as Java counts a non-OK return code), `bookie_bookie_zk_create_client`
//! (session establishment) and the counter `bookie_bookie_watcher_state_SyncConnected`
//! (times the session became connected).
//!
//! Callers wrap each ZooKeeper future in [`timed`] where it is created, so the latency runs
//! from the request being sent. A call cut off by a timeout is not recorded (its future is
//! dropped unfinished). Decision: one process-wide [`ZK_STATS`], as for `gc_stats`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Instant;

use super::{OpSummary, Scrape};

macro_rules! zk_ops {
    ($($var:ident => $name:literal,)*) => {
        /// A ZooKeeper operation, by Java's stat name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ZkOp { $($var,)* }
        impl ZkOp {
            pub const ALL: &'static [ZkOp] = &[$(ZkOp::$var,)*];
            pub fn metric_name(self) -> &'static str {
                match self { $(ZkOp::$var => $name,)* }
            }
        }
    };
}

zk_ops! {
    Create => "bookie_bookie_zk_create",
    CreateClient => "bookie_bookie_zk_create_client",
    Delete => "bookie_bookie_zk_delete",
    Exists => "bookie_bookie_zk_exists",
    GetAcl => "bookie_bookie_zk_get_acl",
    GetChildren => "bookie_bookie_zk_get_children",
    GetData => "bookie_bookie_zk_get_data",
    Multi => "bookie_bookie_zk_multi",
    SetAcl => "bookie_bookie_zk_set_acl",
    SetData => "bookie_bookie_zk_set_data",
    Sync => "bookie_bookie_zk_sync",
}

/// The process's ZooKeeper client figures (module docs).
pub struct ZkStats {
    ops: Vec<OpSummary>,
    sync_connected: AtomicU64,
}

pub static ZK_STATS: LazyLock<ZkStats> = LazyLock::new(ZkStats::new);

impl ZkStats {
    fn new() -> ZkStats {
        ZkStats {
            ops: ZkOp::ALL.iter().map(|_| OpSummary::new(1000.0)).collect(),
            sync_connected: AtomicU64::new(0),
        }
    }

    pub fn record(&self, op: ZkOp, started: Instant, ok: bool) {
        let us = started.elapsed().as_micros().min(u64::MAX as u128) as u64;
        self.ops[op as usize].record(us, ok);
    }

    /// The session became connected (`SyncConnected`).
    pub fn sync_connected(&self) {
        self.sync_connected.fetch_add(1, Ordering::Relaxed);
    }

    pub fn rotate(&self) {
        for o in &self.ops {
            o.rotate();
        }
    }

    pub fn collect(&self, s: &mut Scrape) {
        for op in ZkOp::ALL {
            s.summary(op.metric_name(), &[], &self.ops[*op as usize].snapshot());
        }
        s.counter(
            "bookie_bookie_watcher_state_SyncConnected",
            &[],
            self.sync_connected.load(Ordering::Relaxed),
        );
    }
}

/// `fut` timed into `op` from now (module docs).
pub fn timed<T, E>(
    op: ZkOp,
    fut: impl std::future::Future<Output = Result<T, E>>,
) -> impl std::future::Future<Output = Result<T, E>> {
    let started = Instant::now();
    async move {
        let r = fut.await;
        ZK_STATS.record(op, started, r.is_ok());
        r
    }
}

/// The operation of the short names the bookie's ZooKeeper helpers log (`"get"`,
/// `"list"`, `"stat"`, `"mkdir"`, ...); `None` for one without a Java stat.
pub fn op_of(name: &str) -> Option<ZkOp> {
    Some(match name {
        "create" | "mkdir" => ZkOp::Create,
        "delete" => ZkOp::Delete,
        "stat" | "exists" => ZkOp::Exists,
        "get" | "get_data" => ZkOp::GetData,
        "list" | "children" | "get_children" => ZkOp::GetChildren,
        "set" | "set_data" => ZkOp::SetData,
        "multi" => ZkOp::Multi,
        "sync" => ZkOp::Sync,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn timed_calls_are_counted_by_outcome() {
        let before = ZK_STATS.ops[ZkOp::GetData as usize].snapshot();
        let ok: Result<u8, ()> = timed(ZkOp::GetData, async { Ok(1) }).await;
        let err: Result<u8, ()> = timed(ZkOp::GetData, async { Err(()) }).await;
        assert!(ok.is_ok() && err.is_err());
        let after = ZK_STATS.ops[ZkOp::GetData as usize].snapshot();
        assert_eq!(after.success.count, before.success.count + 1);
        assert_eq!(after.failure.count, before.failure.count + 1);
        ZK_STATS.sync_connected();
        let mut s = Scrape::default();
        ZK_STATS.collect(&mut s);
        let text = s.finish();
        for op in ZkOp::ALL {
            assert!(text.contains(&format!("# TYPE {} summary\n", op.metric_name())));
        }
        assert!(text.contains("# TYPE bookie_bookie_watcher_state_SyncConnected counter\n"));
        assert_eq!(op_of("list"), Some(ZkOp::GetChildren));
        assert_eq!(op_of("mkdir"), Some(ZkOp::Create));
        assert_eq!(op_of("nothing"), None);
    }
}

//! `gc_scan`: lists every ledger id that has metadata in ZooKeeper, for the garbage collector
//! (docs/semantics.md §15: a ledger whose metadata znode is gone is deleted locally).
//!
//! Tree layout (docs/registration.md §2.3, HierarchicalLedgerManager = "hybrid"):
//! * ids `< i32::MAX`: 10 decimal digits split 2/4/4: `<root>/00/0000/L0001` (ledger 1);
//! * larger ids: 19 digits split 3/4/4/4/4: `<root>/000/0000/0021/4748/L3648` (2147483648);
//! * the legacy flat layout (`<root>/L0000000001`) is accepted as well.
//!
//! Other children of the root (`available`, `cookies`, `LAYOUT`, `INSTANCEID`, `idgen`,
//! `idgen-long`, `underreplication`, ...) are not ledger subtrees: only all-digit names of length
//! 2 (short tree) or 3 (long tree) at the top, 4-digit names below, and `L` + 4 digits at the
//! leaves are followed; anything else is skipped.
//!
//! Efficiency: the tree is walked level by level; at each level up to `max_in_flight`
//! getChildren requests are issued back to back before their answers are awaited (the
//! zookeeper-client crate sends a request when its future is created), so a scan costs a few
//! round trips per level rather than one per directory.
//!
//! Invariants (the GC relies on them):
//! * any failure (connection loss, session expiry, timeout, missing root) is an `Err`: the GC
//!   must skip its round; a failed scan is never "no ledgers";
//! * a subtree that disappears between listing its parent and listing it (NoNode) is empty:
//!   its ledgers were deleted, which is the truth at that moment;
//! * the caller takes its local ledger snapshot *before* starting the scan: ledger metadata is
//!   created before any entry reaches a bookie, so every local ledger whose metadata still
//!   exists is then seen by the scan.

use std::time::{Duration, Instant};

use zookeeper_client as zk;

use crate::metrics::zk_stats::{timed, ZkOp};

/// Scan failures. Any of them means "skip this GC round".
#[derive(Debug, thiserror::Error)]
pub enum GcScanError {
    #[error(
        "ledgers root {0} does not exist (wrong zkLedgersRootPath?); refusing to treat it as empty"
    )]
    RootMissing(String),
    #[error("{0} does not look like a BookKeeper ledgers root (no `available` child); refusing to scan it")]
    NotALedgersRoot(String),
    #[error(
        "{path} names ledger manager {layout:?}, whose metadata is not a ZooKeeper ledger tree; \
         refusing to garbage-collect from a scan that would find no ledgers"
    )]
    UnsupportedLayout { path: String, layout: String },
    #[error("ZooKeeper getChildren {path} failed: {source}")]
    Zk { path: String, source: zk::Error },
    #[error("ZooKeeper getChildren {path} timed out after {timeout:?}")]
    Timeout { path: String, timeout: Duration },
}

/// Scan tuning.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// getChildren requests issued before awaiting answers.
    pub max_in_flight: usize,
    /// Bound on each request (Java uses 2 x zkTimeout for the GC scan).
    pub op_timeout: Duration,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            max_in_flight: 256,
            op_timeout: Duration::from_secs(20),
        }
    }
}

/// The ledger ids that have metadata, sorted and unique.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveLedgers {
    ids: Vec<u64>,
    /// Number of getChildren calls made.
    pub listings: usize,
    /// Wall time of the scan.
    pub elapsed: Duration,
}

impl LiveLedgers {
    pub fn contains(&self, ledger_id: u64) -> bool {
        self.ids.binary_search(&ledger_id).is_ok()
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Highest id with metadata (Java GC deletes local ledgers above it too).
    pub fn max_id(&self) -> Option<u64> {
        self.ids.last().copied()
    }

    /// Sorted ids.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }
}

/// The metadata znode path of `ledger_id` under `root` (hierarchical manager).
///
/// BookKeeper ledger ids are Java longs, `0..=i64::MAX` (19 digits at most). A larger id has
/// no metadata znode in BookKeeper; its 20th digit is kept in the leaf (`L` + 5 digits), a
/// name no scan reads, so it never aliases another ledger's path.
pub fn ledger_path(root: &str, ledger_id: u64) -> String {
    let root = root.trim_end_matches('/');
    if ledger_id < i32::MAX as u64 {
        let s = format!("{ledger_id:010}");
        format!("{root}/{}/{}/L{}", &s[0..2], &s[2..6], &s[6..10])
    } else {
        let s = format!("{ledger_id:019}");
        format!(
            "{root}/{}/{}/{}/{}/L{}",
            &s[0..3],
            &s[3..7],
            &s[7..11],
            &s[11..15],
            &s[15..]
        )
    }
}

fn all_digits(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_digit())
}

/// What a child of the ledgers root is to the scan (names come from ZooKeeper: untrusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootChild {
    /// Top of the short tree (ids `< i32::MAX`): 2 digits, one level of 4-digit dirs below.
    ShortTree,
    /// Top of the long tree: 3 digits, three levels of 4-digit dirs below.
    LongTree,
    /// A legacy flat-layout ledger znode, `L` + 10 digits.
    FlatLedger(u64),
    /// Anything else (`available`, `cookies`, `LAYOUT`, ...): not followed.
    Other,
}

impl RootChild {
    /// Levels of 4-digit directories between this top directory and the leaves.
    pub fn dir_levels(self) -> Option<u8> {
        match self {
            RootChild::ShortTree => Some(1),
            RootChild::LongTree => Some(3),
            RootChild::FlatLedger(_) | RootChild::Other => None,
        }
    }
}

/// Classifies a child name of the ledgers root. Never panics.
pub fn classify_root_child(name: &str) -> RootChild {
    if all_digits(name, 2) {
        RootChild::ShortTree
    } else if all_digits(name, 3) {
        RootChild::LongTree
    } else if name.len() == 11 && name.starts_with('L') && all_digits(&name[1..], 10) {
        match name[1..].parse::<u64>() {
            Ok(id) => RootChild::FlatLedger(id),
            Err(_) => RootChild::Other,
        }
    } else {
        RootChild::Other
    }
}

/// Whether `name` is an intermediate directory of the ledger tree (exactly 4 digits).
pub fn is_tree_dir(name: &str) -> bool {
    all_digits(name, 4)
}

/// The ledger id of leaf `name` (`L` + 4 digits) in a directory whose path encodes `digits`
/// (the concatenated digits of the directories above it); None for any other name.
pub fn leaf_ledger_id(digits: &str, name: &str) -> Option<u64> {
    if name.len() == 5 && name.starts_with('L') && all_digits(&name[1..], 4) {
        format!("{digits}{}", &name[1..]).parse::<u64>().ok()
    } else {
        None
    }
}

/// Whether the `LAYOUT` znode data (docs/registration.md §2.1: `<version>\n<factory class>:<manager
/// version>`) names a ledger manager whose metadata lives in this ZooKeeper tree
/// (hierarchical, long-hierarchical, legacy or flat, possibly under a shaded package).
/// Never panics; anything unreadable is "no".
pub fn layout_is_zk_tree(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let class = text
        .lines()
        .nth(1)
        .unwrap_or("")
        .split(':')
        .next()
        .unwrap_or("")
        .trim();
    class.ends_with("HierarchicalLedgerManagerFactory")
        || class.ends_with("FlatLedgerManagerFactory")
}

/// A directory still to list: its path, the digits its path encodes, and how many 4-digit
/// levels remain below it before the leaves.
struct Pending {
    path: String,
    digits: String,
    dir_levels_left: u8,
}

/// Checks that `LAYOUT` (docs/registration.md §2.1: `<version>\n<factory class>:<manager version>`)
/// names a ledger manager whose metadata lives in this ZooKeeper tree (hierarchical,
/// long-hierarchical, legacy or flat, possibly under a shaded package). Any other manager
/// (e.g. `ms`) would make the scan find nothing and GC delete everything.
async fn check_layout(client: &zk::Client, path: &str, t: Duration) -> Result<(), GcScanError> {
    let data = match tokio::time::timeout(t, timed(ZkOp::GetData, client.get_data(path))).await {
        Ok(Ok((data, _))) => data,
        Ok(Err(zk::Error::NoNode)) => return Ok(()),
        Ok(Err(source)) => {
            return Err(GcScanError::Zk {
                path: path.to_string(),
                source,
            })
        }
        Err(_) => {
            return Err(GcScanError::Timeout {
                path: path.to_string(),
                timeout: t,
            })
        }
    };
    if layout_is_zk_tree(&data) {
        Ok(())
    } else {
        Err(GcScanError::UnsupportedLayout {
            path: path.to_string(),
            layout: String::from_utf8_lossy(&data).into_owned(),
        })
    }
}

/// Scans with default options.
pub async fn scan_live_ledgers(
    client: &zk::Client,
    root: &str,
) -> Result<LiveLedgers, GcScanError> {
    scan_live_ledgers_with(client, root, &ScanOptions::default()).await
}

async fn list(
    client: &zk::Client,
    path: &str,
    t: Duration,
) -> Result<Option<Vec<String>>, GcScanError> {
    await_listing(
        timed(ZkOp::GetChildren, client.list_children(path)),
        path,
        t,
    )
    .await
}

async fn await_listing(
    fut: impl std::future::Future<Output = Result<Vec<String>, zk::Error>>,
    path: &str,
    t: Duration,
) -> Result<Option<Vec<String>>, GcScanError> {
    match tokio::time::timeout(t, fut).await {
        Ok(Ok(children)) => Ok(Some(children)),
        Ok(Err(zk::Error::NoNode)) => Ok(None),
        Ok(Err(source)) => Err(GcScanError::Zk {
            path: path.to_string(),
            source,
        }),
        Err(_) => Err(GcScanError::Timeout {
            path: path.to_string(),
            timeout: t,
        }),
    }
}

/// Scans the ledger tree under `root` and returns every ledger id with metadata.
pub async fn scan_live_ledgers_with(
    client: &zk::Client,
    root: &str,
    opts: &ScanOptions,
) -> Result<LiveLedgers, GcScanError> {
    let started = Instant::now();
    let root = root.trim_end_matches('/');
    let t = opts.op_timeout;
    let window = opts.max_in_flight.max(1);
    let top = list(client, root, t)
        .await?
        .ok_or_else(|| GcScanError::RootMissing(root.to_string()))?;
    if !top.iter().any(|c| c == "available") {
        return Err(GcScanError::NotALedgersRoot(root.to_string()));
    }
    if top.iter().any(|c| c == "LAYOUT") {
        check_layout(client, &format!("{root}/LAYOUT"), t).await?;
    }
    let mut listings = 1;
    let mut ids = Vec::new();
    let mut frontier = Vec::new();
    for child in top {
        match classify_root_child(&child) {
            RootChild::FlatLedger(id) => ids.push(id),
            kind => {
                if let Some(dir_levels_left) = kind.dir_levels() {
                    frontier.push(Pending {
                        path: format!("{root}/{child}"),
                        digits: child,
                        dir_levels_left,
                    });
                }
            }
        }
    }
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for chunk in frontier.chunks(window) {
            // Creating the futures sends the requests; awaiting in order then costs about one
            // round trip for the whole chunk.
            // (`list_children` itself, not an async wrapper, so each request leaves now.)
            let futures: Vec<_> = chunk
                .iter()
                .map(|p| timed(ZkOp::GetChildren, client.list_children(&p.path)))
                .collect();
            for (p, fut) in chunk.iter().zip(futures) {
                listings += 1;
                let Some(children) = await_listing(fut, &p.path, t).await? else {
                    continue;
                };
                for c in children {
                    if p.dir_levels_left > 0 {
                        if is_tree_dir(&c) {
                            next.push(Pending {
                                path: format!("{}/{c}", p.path),
                                digits: format!("{}{c}", p.digits),
                                dir_levels_left: p.dir_levels_left - 1,
                            });
                        }
                    } else if let Some(id) = leaf_ledger_id(&p.digits, &c) {
                        ids.push(id);
                    }
                }
            }
        }
        frontier = next;
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(LiveLedgers {
        ids,
        listings,
        elapsed: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_the_reference_examples() {
        assert_eq!(ledger_path("/ledgers", 1), "/ledgers/00/0000/L0001");
        assert_eq!(
            ledger_path("/ledgers", 2147483648),
            "/ledgers/000/0000/0021/4748/L3648"
        );
        assert_eq!(
            ledger_path("/ledgers/", 2147483646),
            "/ledgers/21/4748/L3646"
        );
        // Integer.MAX_VALUE itself goes to the long layout (Java: id < Integer.MAX_VALUE).
        assert_eq!(ledger_path("/l", 2147483647), "/l/000/0000/0021/4748/L3647");
        assert_eq!(
            ledger_path("/l", u64::MAX >> 1),
            "/l/922/3372/0368/5477/L5807"
        );
    }

    /// Fuzz finding (target `zk_metadata`): ids of 20 digits (above i64::MAX) lost their last
    /// digit, so `ledger_path(15263706100831027214)` was the path of ledger 1526370610083102721.
    #[test]
    fn ids_above_i64_max_never_alias_another_ledger() {
        let path = ledger_path("/l", 15_263_706_100_831_027_214);
        assert_eq!(path, "/l/152/6370/6100/8310/L27214");
        assert_ne!(path, ledger_path("/l", 1_526_370_610_083_102_721));
        let leaf = path.rsplit('/').next().unwrap();
        assert_eq!(leaf_ledger_id("152637061008310", leaf), None);
        assert_eq!(ledger_path("/l", u64::MAX), "/l/184/4674/4073/7095/L51615");
    }

    #[test]
    fn names_the_scan_follows() {
        assert_eq!(classify_root_child("00"), RootChild::ShortTree);
        assert_eq!(classify_root_child("000"), RootChild::LongTree);
        assert_eq!(
            classify_root_child("L0000000042"),
            RootChild::FlatLedger(42)
        );
        for other in [
            "available",
            "LAYOUT",
            "0a",
            "L00000000x1",
            "L123",
            "١٢",
            "0000",
        ] {
            assert_eq!(classify_root_child(other), RootChild::Other, "{other}");
        }
        assert!(is_tree_dir("0021") && !is_tree_dir("21") && !is_tree_dir("002a"));
        assert_eq!(leaf_ledger_id("000000021", "L3648"), Some(213_648));
        assert_eq!(leaf_ledger_id("00", "L12345"), None);
        assert_eq!(leaf_ledger_id("00", "X1234"), None);
        assert!(layout_is_zk_tree(
            b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"
        ));
        assert!(!layout_is_zk_tree(
            b"2\norg.apache.bookkeeper.meta.MSLedgerManagerFactory:1"
        ));
        assert!(!layout_is_zk_tree(b"\xff\xfe"));
    }

    #[test]
    fn live_ledgers_lookup() {
        let l = LiveLedgers {
            ids: vec![1, 5, 9],
            ..Default::default()
        };
        assert!(l.contains(5) && !l.contains(6));
        assert_eq!(l.max_id(), Some(9));
        assert_eq!(l.len(), 3);
    }
}

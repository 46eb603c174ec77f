//! Unit tests of bookie/src/gc_metadata.rs: every decision of the over-replication check and
//! of `verifyMetadataOnGC` (member, not member, metadata missing, ZooKeeper error, locked),
//! against an in-memory [`MetadataStore`].

use std::collections::{HashMap, HashSet};
use std::future::Future;

use parking_lot::Mutex;

use super::*;
use crate::admin::ledger_metadata::encode_ensembles_for_tests as encode;

const ME: &str = "127.0.0.1:3181";

type Read = Result<Option<Vec<u8>>, String>;

#[derive(Default)]
struct Fake {
    metadata: Mutex<HashMap<u64, Read>>,
    /// What the metadata becomes once this bookie takes the ledger's lock (a concurrent
    /// ensemble change).
    after_lock: Mutex<HashMap<u64, Read>>,
    /// Locks held by someone else.
    held_elsewhere: HashSet<u64>,
    /// Ledgers whose lock check fails.
    lock_check_fails: HashSet<u64>,
    /// Ledgers whose lock cannot be created.
    lock_create_fails: HashSet<u64>,
    acquired: Mutex<Vec<u64>>,
    released: Mutex<Vec<u64>>,
    reads: Mutex<Vec<u64>>,
}

impl Fake {
    fn with(entries: Vec<(u64, Read)>) -> Fake {
        let f = Fake::default();
        f.metadata.lock().extend(entries);
        f
    }
}

impl MetadataStore for Fake {
    fn read_metadata(&self, ledger: u64) -> impl Future<Output = Read> + Send + 'static {
        self.reads.lock().push(ledger);
        let r = self
            .metadata
            .lock()
            .get(&ledger)
            .cloned()
            .unwrap_or(Ok(None));
        async move { r }
    }

    fn lock_exists(&self, ledger: u64) -> impl Future<Output = Result<bool, String>> + Send {
        let r = if self.lock_check_fails.contains(&ledger) {
            Err("connection loss".to_string())
        } else {
            Ok(self.held_elsewhere.contains(&ledger))
        };
        async move { r }
    }

    fn acquire_lock(&self, ledger: u64) -> impl Future<Output = Result<(), String>> + Send {
        let r = if self.lock_create_fails.contains(&ledger) {
            Err("node exists".to_string())
        } else {
            self.acquired.lock().push(ledger);
            if let Some(md) = self.after_lock.lock().remove(&ledger) {
                self.metadata.lock().insert(ledger, md);
            }
            Ok(())
        };
        async move { r }
    }

    fn release_lock(&self, ledger: u64) -> impl Future<Output = Result<(), String>> + Send {
        self.released.lock().push(ledger);
        async { Ok(()) }
    }
}

fn closed(ensembles: &[(i64, &[&str])]) -> Read {
    Ok(Some(encode(ensembles, LedgerState::Closed, Some(99))))
}

fn rate() -> OpRate {
    OpRate::new(1_000_000)
}

#[test]
fn member_of_any_ensemble_is_kept() {
    // This bookie only in the first of two segments: still a member.
    let md = closed(&[(0, &[ME, "b:1", "c:1"]), (50, &["d:1", "b:1", "c:1"])]);
    assert_eq!(judge_overreplicated(&md, ME), Verdict::Keep(Keep::Member));
    assert_eq!(judge_unlisted(&md, ME), Verdict::Keep(Keep::Member));
    let md = closed(&[(0, &["a:1", "b:1", "c:1"]), (50, &["a:1", ME, "c:1"])]);
    assert_eq!(judge_overreplicated(&md, ME), Verdict::Keep(Keep::Member));
}

#[test]
fn closed_and_not_a_member_is_deleted() {
    let md = closed(&[(0, &["a:1", "b:1", "c:1"]), (50, &["a:1", "d:1", "c:1"])]);
    assert_eq!(judge_overreplicated(&md, ME), Verdict::Delete);
    assert_eq!(judge_unlisted(&md, ME), Verdict::Delete);
    // An id is matched exactly: a prefix or another port is not this bookie.
    let md = closed(&[(0, &["127.0.0.1:31810", "127.0.0.1:318"])]);
    assert_eq!(judge_overreplicated(&md, ME), Verdict::Delete);
}

#[test]
fn open_or_in_recovery_is_never_overreplicated() {
    for state in [LedgerState::Open, LedgerState::InRecovery] {
        let md = Ok(Some(encode(&[(0, &["a:1", "b:1"])], state, None)));
        assert_eq!(
            judge_overreplicated(&md, ME),
            Verdict::Keep(Keep::NotClosed(state))
        );
        // verifyMetadataOnGC checks membership only, as Java does.
        assert_eq!(judge_unlisted(&md, ME), Verdict::Delete);
    }
}

#[test]
fn missing_metadata() {
    // Left to the listing pass by the over-replication check; deleted by verifyMetadataOnGC.
    assert_eq!(
        judge_overreplicated(&Ok(None), ME),
        Verdict::Keep(Keep::NoMetadata)
    );
    assert_eq!(judge_unlisted(&Ok(None), ME), Verdict::Delete);
}

#[test]
fn a_failed_or_unparsable_read_keeps_the_ledger() {
    let err: Read = Err("get /ledgers/00/0000/L0001: connection loss".into());
    assert!(matches!(
        judge_overreplicated(&err, ME),
        Verdict::Keep(Keep::ReadFailed(_))
    ));
    assert!(matches!(
        judge_unlisted(&err, ME),
        Verdict::Keep(Keep::ReadFailed(_))
    ));
    let mut partial = encode(&[(0, &["a:1"])], LedgerState::Closed, Some(1));
    partial.truncate(partial.len() - 4);
    for bad in [
        partial,
        b"BookieMetadataFormatVersion\t2\nquorumSize: 2\n".to_vec(),
    ] {
        let read: Read = Ok(Some(bad));
        assert!(matches!(
            judge_overreplicated(&read, ME),
            Verdict::Keep(Keep::ReadFailed(_))
        ));
        assert!(matches!(
            judge_unlisted(&read, ME),
            Verdict::Keep(Keep::ReadFailed(_))
        ));
    }
}

#[tokio::test]
async fn precheck_keeps_everything_but_closed_non_members() {
    let store = Fake::with(vec![
        (1, closed(&[(0, &[ME, "b:1"])])),
        (2, closed(&[(0, &["a:1", "b:1"])])),
        (3, Err("timed out".into())),
        (
            5,
            Ok(Some(encode(&[(0, &["a:1"])], LedgerState::Open, None))),
        ),
        (6, closed(&[(0, &["a:1"]), (7, &["b:1"])])),
    ]);
    let c = overreplicated_candidates(&store, &[1, 2, 3, 4, 5, 6], ME, 2, &mut rate()).await;
    assert_eq!(c, vec![2, 6]);
    assert_eq!(*store.reads.lock(), vec![1, 2, 3, 4, 5, 6]);
}

#[tokio::test]
async fn locked_ledgers_are_kept_and_only_taken_locks_are_released() {
    let not_member = closed(&[(0, &["a:1", "b:1"])]);
    let mut store = Fake::with((1..=4).map(|i| (i, not_member.clone())).collect());
    store.held_elsewhere.insert(1);
    store.lock_check_fails.insert(2);
    store.lock_create_fails.insert(3);
    let b = lock_and_recheck(&store, &[1, 2, 3, 4], ME, &mut rate()).await;
    assert_eq!(
        b,
        LockedBatch {
            locked: vec![4],
            victims: vec![4]
        }
    );
    assert_eq!(*store.acquired.lock(), vec![4]);
    release_locks(&store, &b.locked).await;
    assert_eq!(*store.released.lock(), vec![4]);
}

#[tokio::test]
async fn the_recheck_under_lock_decides() {
    let not_member = closed(&[(0, &["a:1", "b:1"])]);
    let store = Fake::with((1..=4).map(|i| (i, not_member.clone())).collect());
    // While waiting for the lock: 1 was re-replicated back to this bookie, 2's read fails,
    // 3's metadata was deleted; 4 is still over-replicated.
    store.after_lock.lock().extend([
        (1, closed(&[(0, &["a:1", ME])])),
        (2, Err("session expired".into())),
        (3, Ok(None)),
    ]);
    let b = lock_and_recheck(&store, &[1, 2, 3, 4], ME, &mut rate()).await;
    assert_eq!(b.locked, vec![1, 2, 3, 4]);
    assert_eq!(b.victims, vec![4]);
}

#[tokio::test]
async fn verify_keeps_members_and_unreadable_ledgers() {
    let store = Fake::with(vec![
        (1, closed(&[(0, &[ME])])),
        (2, closed(&[(0, &["a:1"])])),
        (3, Err("connection loss".into())),
    ]);
    let keep = verify_unlisted(&store, &[1, 2, 3, 4], ME, 3, &mut rate()).await;
    assert_eq!(keep, vec![1, 3]);
}

#[tokio::test]
async fn schedule_and_rate() {
    assert!(!OverReplicationSchedule::new(Some(Duration::from_secs(3600))).due());
    assert!(!OverReplicationSchedule::new(None).due());
    let mut s = OverReplicationSchedule::new(Some(Duration::from_millis(1)));
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(s.due());
    s.interval = Some(Duration::from_secs(3600));
    s.done();
    assert!(!s.due());

    // 11 operations at 100/s take at least 100 ms (a lower bound only).
    let mut r = OpRate::new(100);
    let t0 = Instant::now();
    for _ in 0..11 {
        r.acquire().await;
    }
    assert!(Instant::now() - t0 >= Duration::from_millis(100));
}

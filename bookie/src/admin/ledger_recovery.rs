//! Ledger recovery of a ledger that is not closed and whose last ensemble lists the bookie
//! being recovered, run by `autorecovery/bookie` (admin/recovery.rs) before it copies the
//! ledger's fragments: Java's `ReadOnlyLedgerHandle.recover` (what `BookKeeperAdmin
//! .recoverLedger` opens such a ledger with), `LedgerRecoveryOp` over `ReadLastConfirmedOp`
//! and `RecoveryReadOp`, then `closeRecovered` (docs/operations.md §2).
//!
//! Steps, each as Java decides it:
//! 1. **In recovery.** OPEN becomes IN_RECOVERY by a compare-and-set on the metadata znode
//!    (nothing written when it is IN_RECOVERY already; a CLOSED ledger ends here, closed by
//!    someone else).
//! 2. **Fencing LAC read.** Every member of the last ensemble gets a v2 `READ_ENTRY` of entry
//!    -1 (its last stored entry) with `DO_FENCING` and the master key; a bookie fences the
//!    ledger durably before it answers, so no add of the old writer is acknowledged after.
//!    An entry answered is digest-checked, and its header gives that bookie's
//!    lastAddConfirmed and length; NoSuchEntry / NoSuchLedger are valid answers (nothing
//!    there). The read is done once the valid answers cover the ensemble (Java's
//!    `RoundRobinDistributionSchedule` coverage set): in every write set — the W consecutive
//!    indexes from each index — fewer than Qa members are unknown (not answered, an error, or,
//!    stricter than Java, an entry whose digest fails). So no entry can have been acknowledged
//!    by Qa bookies without one of them having answered. UNAUTHORIZED from any member fails at
//!    once. LAC = max(the highest lastAddConfirmed heard, the last ensemble's first entry - 1).
//! 3. **Recovery reads** of entries LAC+1, LAC+2, ...: each read with `DO_FENCING |
//!    HIGH_PRIORITY` from the members of its write set in order (Java's
//!    `SequenceReadRequest`); the first answer with a valid digest is the entry; the tail
//!    ends at the first entry that W - Qa + 1 members answer NoSuchEntry / NoSuchLedger (no
//!    quorum can have acknowledged it); an entry that every member failed otherwise fails
//!    the ledger (an error is never taken for "no such entry").
//! 4. **Recovery adds.** Each recovered entry is written unchanged (the writer's digest and
//!    header) as a `RECOVERY_ADD` with the master key to every member of its write set but the
//!    source, and each must acknowledge (after its journal fsync) before the next is read.
//! 5. **Close.** IN_RECOVERY becomes CLOSED with lastEntryId = the last entry recovered (else
//!    the LAC) and length = that entry's header length, by compare-and-set; when someone else
//!    closed the ledger meanwhile, theirs is kept. Refused when the ensembles changed since
//!    step 1 (Java: no ensemble is added to a ledger in recovery).
//!
//! Differences from Java, and why: Java's recovery adds go to the whole write set and replace
//! a member that fails by an ensemble change written with the close; here the source is left
//! out of the write-back and then replaced by the fragment copy that follows (admin/
//! recovery.rs), so the closed ledger has the same ensembles, and any other member that does
//! not take the entry fails the ledger (logged; the run is then incomplete and the cookie
//! kept; running it again resumes from IN_RECOVERY). Java re-digests a recovered entry with
//! its own lastAddConfirmed; here the writer's bytes are kept, so reads return what the writer
//! wrote. When no entry is recovered past the LAC, the length is read from the LAC entry's own
//! header (Java keeps the LAC answer's length, of an entry that may lie beyond the LAC).
//!
//! Bounds: every ZooKeeper call by `zkTimeout`, every connect and request as
//! `bookie_client` bounds them; the tail is read one entry at a time.

use std::sync::Arc;

use bk_proto::v2::{ErrorCode, Flags};
use bk_proto::{DigestManager, DigestType, EntryHeader, MasterKey};
use bytes::Bytes;
use tokio::task::JoinSet;

use super::bookie_client::BookieClient;
use super::ledger_metadata::{closed_after_recovery, in_recovery, recovery_view, LedgerState};
use super::recovery::{read_from_any, Clients, CAS_ATTEMPTS};
use super::zk::Zk;

/// How the recovery of a ledger not closed ended.
pub(super) enum Recovered {
    /// The ledger is closed (by this recovery or by someone else): its metadata now.
    Closed(Vec<u8>),
    /// The metadata went meanwhile: the ledger was deleted.
    Deleted,
}

/// Fences, recovers and closes ledger `ledger` (metadata znode `path`), whose last
/// ensemble lists `src` (module docs).
pub(super) async fn recover_open_ledger(
    zk: &Zk,
    clients: &mut Clients,
    ledger: i64,
    path: &str,
    src: &str,
) -> Result<Recovered, String> {
    let Some(data) = mark_in_recovery(zk, path).await? else {
        return Ok(Recovered::Deleted);
    };
    let view = recovery_view(&data).map_err(|e| format!("{path}: {e}"))?;
    if view.state == LedgerState::Closed {
        return Ok(Recovered::Closed(data));
    }
    let (first, last_ensemble) = view
        .ensembles
        .last()
        .ok_or_else(|| format!("{path}: no ensemble"))?;
    let ensemble_size = last_ensemble.len();
    if ensemble_size == 0 || view.ensemble_size as usize != ensemble_size {
        return Err(format!(
            "{path}: ensemble size {} but the last ensemble has {ensemble_size} members",
            view.ensemble_size
        ));
    }
    let write_quorum = (view.write_quorum.max(1) as usize).min(ensemble_size);
    let digest_type = DigestType::from_i32(view.digest_type).map_err(|e| e.to_string())?;
    let mut members = Vec::with_capacity(ensemble_size);
    for id in last_ensemble {
        let client = match clients.get(id).await {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(ledger, "ledger recovery: {e}");
                None
            }
        };
        members.push((id.clone(), client));
    }
    let tail = Tail {
        ledger,
        digest: DigestManager::new(digest_type, &view.password),
        key: MasterKey::from_password(&view.password),
        quorum: Quorum {
            ensemble: ensemble_size,
            write: write_quorum,
            ack: (view.ack_quorum.max(1) as usize).min(write_quorum),
        },
        members,
        src,
    };
    let heard_lac = tail.fencing_lac_read().await?;
    let lac = heard_lac.max(first - 1);
    let mut last: Option<(i64, i64)> = None;
    let mut next = lac + 1;
    while let Some((body, header)) = tail.recovery_read(next).await? {
        tail.write_back(next, body).await?;
        last = Some((next, header.length));
        next += 1;
    }
    let (last_entry, length) = match last {
        Some(l) => l,
        None if lac < 0 => (-1, 0),
        None => (lac, tail.length_of(clients, &view.ensembles, lac).await?),
    };
    tracing::info!(
        ledger,
        "Closing recovered ledger {ledger}: lastAddConfirmed {lac} from the fencing reads, {} \
         entries recovered past it, last entry {last_entry}, length {length}",
        last_entry - lac
    );
    close(zk, path, &view.ensembles, last_entry, length).await
}

/// Step 1: OPEN to IN_RECOVERY (compare-and-set, read again on a conflict); the metadata
/// after it, `None` when the ledger was deleted.
async fn mark_in_recovery(zk: &Zk, path: &str) -> Result<Option<Vec<u8>>, String> {
    for _ in 0..CAS_ATTEMPTS {
        let Some((data, version)) = zk.data_versioned(path).await? else {
            return Ok(None);
        };
        let Some(marked) = in_recovery(&data).map_err(|e| format!("{path}: {e}"))? else {
            return Ok(Some(data)); // in recovery already, or closed
        };
        if zk.set_if_version(path, &marked, version).await? {
            return Ok(Some(marked));
        }
    }
    Err(format!(
        "{path}: metadata changed on each of {CAS_ATTEMPTS} attempts to mark it in recovery"
    ))
}

/// Step 5: IN_RECOVERY to CLOSED at `last_entry` with `length`, unless someone else closed
/// it meanwhile (then theirs); refused when the ensembles are no longer `ensembles`.
async fn close(
    zk: &Zk,
    path: &str,
    ensembles: &[(i64, Vec<String>)],
    last_entry: i64,
    length: i64,
) -> Result<Recovered, String> {
    for _ in 0..CAS_ATTEMPTS {
        let Some((data, version)) = zk.data_versioned(path).await? else {
            return Ok(Recovered::Deleted);
        };
        let now = recovery_view(&data).map_err(|e| format!("{path}: {e}"))?;
        if now.state == LedgerState::Closed {
            tracing::info!("{path}: closed by another client during recovery; its close is kept");
            return Ok(Recovered::Closed(data));
        }
        if now.ensembles != ensembles {
            return Err(format!(
                "{path}: the ensembles changed during ledger recovery; not closed"
            ));
        }
        let Some(closed) =
            closed_after_recovery(&data, last_entry, length).map_err(|e| format!("{path}: {e}"))?
        else {
            return Err(format!(
                "{path}: state {:?} during ledger recovery; not closed",
                now.state
            ));
        };
        if zk.set_if_version(path, &closed, version).await? {
            return Ok(Recovered::Closed(closed));
        }
    }
    Err(format!(
        "{path}: metadata changed on each of {CAS_ATTEMPTS} attempts to close it"
    ))
}

/// Ensemble size and the write and ack quorums (1 <= ack <= write <= ensemble).
#[derive(Clone, Copy)]
struct Quorum {
    ensemble: usize,
    write: usize,
    ack: usize,
}

impl Quorum {
    /// The ensemble indexes storing `entry`, in the order a read tries them
    /// (`(entry + k) % E`, k < W: Java's `RoundRobinDistributionSchedule`).
    fn write_set(self, entry: i64) -> impl Iterator<Item = usize> {
        let e = self.ensemble as i64;
        (0..self.write as i64).map(move |k| (entry + k).rem_euclid(e) as usize)
    }

    /// Java's `RRQuorumCoverageSet.checkCovered`: in every write set fewer than Qa members
    /// are unknown (`known[i]`: member `i` gave a valid answer).
    fn covered(self, known: &[bool]) -> bool {
        (0..self.ensemble).all(|i| {
            (0..self.write)
                .filter(|j| !known[(i + j) % self.ensemble])
                .count()
                < self.ack
        })
    }

    /// NoSuchEntry answers that end the tail: W - Qa + 1 (Java's
    /// `requiredBookiesMissingEntryForRecovery`).
    fn missing_to_end(self) -> usize {
        self.write - self.ack + 1
    }
}

/// What recovering the tail of one ledger needs.
struct Tail<'a> {
    ledger: i64,
    digest: DigestManager,
    key: MasterKey,
    quorum: Quorum,
    /// The last ensemble, by index: bookie id and its connection (`None`: not reachable).
    members: Vec<(String, Option<Arc<BookieClient>>)>,
    src: &'a str,
}

impl Tail<'_> {
    /// Step 2: the highest lastAddConfirmed the fencing reads heard (-1 when none).
    async fn fencing_lac_read(&self) -> Result<i64, String> {
        let mut reads = JoinSet::new();
        let mut why = Vec::new();
        for (i, (id, client)) in self.members.iter().enumerate() {
            let Some(client) = client.clone() else {
                why.push(format!("{id}: not reachable"));
                continue;
            };
            let (ledger, key) = (self.ledger, self.key);
            reads.spawn(
                async move { (i, client.fencing_read(ledger, -1, &key, Flags::NONE).await) },
            );
        }
        let mut known = vec![false; self.members.len()];
        let mut lac = -1;
        while let Some(done) = reads.join_next().await {
            let (i, answer) = done.map_err(|e| format!("fencing read task: {e}"))?;
            let id = &self.members[i].0;
            let valid = match answer {
                Ok(Ok(body)) => match self.digest.verify_entry(&body) {
                    Ok((h, _)) if h.ledger_id == self.ledger => {
                        lac = lac.max(h.last_add_confirmed);
                        true
                    }
                    Ok((h, _)) => {
                        why.push(format!("{id}: answered an entry of ledger {}", h.ledger_id));
                        false
                    }
                    Err(e) => {
                        why.push(format!("{id}: {e}"));
                        false
                    }
                },
                Ok(Err(ErrorCode::NoEntry | ErrorCode::NoLedger)) => true,
                Ok(Err(ErrorCode::Unauthorized)) => {
                    return Err(format!(
                        "fencing read of ledger {} refused by {id}: UNAUTHORIZED (wrong password)",
                        self.ledger
                    ));
                }
                Ok(Err(code)) => {
                    why.push(format!("{id}: {code:?}"));
                    false
                }
                Err(e) => {
                    why.push(e);
                    false
                }
            };
            if valid {
                known[i] = true;
                if self.quorum.covered(&known) {
                    // The reads still in flight run on (bookie_client requests are not
                    // cancelled by dropping them); their bookies get fenced as well.
                    reads.detach_all();
                    return Ok(lac);
                }
            }
        }
        Err(format!(
            "fencing reads of ledger {} did not hear from enough bookies of its last ensemble: {}",
            self.ledger,
            why.join("; ")
        ))
    }

    /// Step 3: entry `entry` and its header, `None` at the end of the tail.
    async fn recovery_read(&self, entry: i64) -> Result<Option<(Bytes, EntryHeader)>, String> {
        let (mut missing, mut why) = (0, Vec::new());
        for i in self.quorum.write_set(entry) {
            let (id, client) = &self.members[i];
            let Some(client) = client else {
                why.push(format!("{id}: not reachable"));
                continue;
            };
            let read = client
                .fencing_read(self.ledger, entry, &self.key, Flags::HIGH_PRIORITY)
                .await;
            match read {
                Ok(Ok(body)) => match self.digest.verify_entry_for(&body, self.ledger, entry) {
                    Ok((header, _)) => return Ok(Some((body, header))),
                    Err(e) => why.push(format!("{id}: {e}")),
                },
                Ok(Err(ErrorCode::NoEntry | ErrorCode::NoLedger)) => {
                    missing += 1;
                    if missing >= self.quorum.missing_to_end() {
                        return Ok(None);
                    }
                }
                Ok(Err(code)) => why.push(format!("{id}: {code:?}")),
                Err(e) => why.push(e),
            }
        }
        Err(format!(
            "recovery read of entry {entry} of ledger {}: {missing} bookies have no such entry \
             ({} needed to end the ledger there), the others failed: {}",
            self.ledger,
            self.quorum.missing_to_end(),
            why.join("; ")
        ))
    }

    /// Step 4: `body` (entry `entry`) to every member of its write set but the source.
    async fn write_back(&self, entry: i64, body: Bytes) -> Result<(), String> {
        let mut adds = JoinSet::new();
        for i in self.quorum.write_set(entry) {
            let (id, client) = &self.members[i];
            if id == self.src {
                continue;
            }
            let Some(client) = client.clone() else {
                return Err(format!(
                    "recovery add of entry {entry} of ledger {} to {id}: not reachable",
                    self.ledger
                ));
            };
            let (key, body, id) = (self.key, body.clone(), id.clone());
            adds.spawn(async move { (id, client.recovery_add(&key, body).await) });
        }
        if adds.is_empty() {
            return Err(format!(
                "entry {entry} of ledger {} has no bookie to be written back to but the source",
                self.ledger
            ));
        }
        while let Some(done) = adds.join_next().await {
            match done {
                Ok((_, Ok(ErrorCode::Ok))) => {}
                Ok((id, Ok(code))) => {
                    return Err(format!(
                        "recovery add of entry {entry} of ledger {} to {id}: {code:?}",
                        self.ledger
                    ))
                }
                Ok((_, Err(e))) => return Err(e),
                Err(e) => return Err(format!("recovery add task: {e}")),
            }
        }
        Ok(())
    }

    /// The length in the header of entry `entry`, read (digest-checked) from a member of its
    /// write set in the ensemble that holds it.
    async fn length_of(
        &self,
        clients: &mut Clients,
        ensembles: &[(i64, Vec<String>)],
        entry: i64,
    ) -> Result<i64, String> {
        let (_, members) = ensembles
            .iter()
            .rev()
            .find(|(first, _)| *first <= entry)
            .ok_or_else(|| format!("entry {entry} of ledger {} is in no ensemble", self.ledger))?;
        let mut readers = Vec::new();
        for i in self.quorum.write_set(entry) {
            let Some(id) = members.get(i) else { continue };
            readers.push((id.clone(), clients.get(id).await.ok()));
        }
        let body = read_from_any(&readers, &self.digest, self.ledger, entry).await?;
        let header = EntryHeader::parse(&body).map_err(|e| e.to_string())?;
        Ok(header.length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(ensemble: usize, write: usize, ack: usize) -> Quorum {
        Quorum {
            ensemble,
            write,
            ack,
        }
    }

    #[test]
    fn coverage_is_decided_as_java_decides_it() {
        // E = W = 3, Qa = 2: two valid answers cover (one unknown per write set < 2).
        let q332 = q(3, 3, 2);
        assert!(q332.covered(&[true, false, true]));
        assert!(!q332.covered(&[true, false, false]));
        // E = W = Qa = 2 (Pulsar's default): one valid answer covers.
        assert!(q(2, 2, 2).covered(&[false, true]));
        assert!(!q(2, 2, 2).covered(&[false, false]));
        // E = 3, W = Qa = 2: every write set {0,1}, {1,2}, {2,0} needs one known member.
        let q322 = q(3, 2, 2);
        assert!(
            !q322.covered(&[true, false, false]),
            "write set {{1,2}} unknown"
        );
        assert!(q322.covered(&[true, true, false]));
        // E = 5, W = 3, Qa = 2: write sets of 3 consecutive (wrapping), at most one unknown
        // each, so two unknowns never cover.
        let q532 = q(5, 3, 2);
        assert!(q532.covered(&[true, false, true, true, true]));
        assert!(
            !q532.covered(&[true, false, true, true, false]),
            "{{4,0,1}}"
        );
        assert!(!q532.covered(&[true, false, false, true, true]));
        // Qa = 1: every member must have answered.
        assert!(!q(3, 3, 1).covered(&[true, true, false]));
    }

    #[test]
    fn the_tail_ends_after_w_minus_qa_plus_one_missing_answers() {
        assert_eq!(q(3, 3, 2).missing_to_end(), 2);
        assert_eq!(q(2, 2, 2).missing_to_end(), 1);
        assert_eq!(q(5, 3, 1).missing_to_end(), 3);
    }

    #[test]
    fn reads_try_the_write_set_in_order() {
        assert_eq!(q(3, 3, 2).write_set(4).collect::<Vec<_>>(), vec![1, 2, 0]);
        assert_eq!(q(5, 2, 2).write_set(4).collect::<Vec<_>>(), vec![4, 0]);
    }
}

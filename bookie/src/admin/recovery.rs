//! `PUT /api/v1/autorecovery/bookie`: Java 4.17's `RecoveryBookieService`, and the
//! re-replication it runs, `BookKeeperAdmin.recoverBookieData(bookieSrc)` (recoverLedger →
//! `LedgerFragmentReplicator`), done here over ZooKeeper and the bookie protocol
//! (docs/operations.md §2).
//!
//! Answers (as Java's handler, in its order): no body 404 `No request body provide.`; a body
//! that is not `{"bookie_src": [<bookie id>, ...], "delete_cookie": <bool>}` 404
//! `ERROR parameters: <reason>`; a method other than PUT, or an empty `bookie_src`, 404
//! `Not found method. Should be PUT method`; otherwise 200 `Success send recovery request
//! command.` at once, and the recovery runs in the background. As in Java only the first
//! id of `bookie_src` is recovered, and an invalid id is only logged.
//!
//! The background task (one ledger after another; a failed ledger is logged and the others
//! still run): for every ledger with metadata whose ensembles list the source bookie, and
//! for every ensemble ("fragment") that lists it,
//! 1. chooses a replacement among the registered writable bookies outside that ensemble
//!    (at random: Java's default placement without racks);
//! 2. copies every entry of the fragment whose write set holds the source's index: read
//!    from a surviving member of the entry's write set, digest-checked with the ledger's
//!    digest and password, written unchanged to the replacement as a `RECOVERY_ADD` with the
//!    ledger's master key (`SHA-1("ledger" || password)`); the replacement acknowledges only
//!    after its journal fsync, so the copy is durable before step 3;
//! 3. replaces the source by the replacement in that ensemble of the metadata, a
//!    compare-and-set on the znode version, read again and retried on a conflict (Java's
//!    `MetadataUpdateLoop`); nothing is written when the ensemble no longer lists the source.
//!
//! A ledger not closed whose last ensemble lists the source is first fenced, its unconfirmed
//! tail recovered and its metadata closed (ledger recovery, admin/ledger_recovery.rs), as
//! Java's `recoverLedger` opens it with recovery; then its fragments are recovered as those
//! of any closed ledger. The run ends with `Complete
//! recovering bookie` only when every ledger was recovered; only then is the source's
//! cookie deleted (`delete_cookie`, at the version read). It stops between ledgers when
//! this bookie shuts down. Every ZooKeeper call is bounded by `zkTimeout`, every bookie
//! request by `bookie_client::REQUEST_TIMEOUT`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use bk_proto::v2::ErrorCode;
use bk_proto::{DigestManager, DigestType, MasterKey};
use serde::Deserialize;
use tokio::task::JoinSet;

use super::bookie_client::BookieClient;
use super::cluster::zk_or_answer;
use super::ledger_metadata::{recovery_view, replace_in_ensemble, LedgerState, RecoveryView};
use super::ledger_recovery::{recover_open_ledger, Recovered};
use super::zk::Zk;
use super::{no_metadata_store, text, wrong_method, AdminState, Phase, Shared};

/// Entries copied concurrently within one fragment.
pub const COPY_WINDOW: usize = 64;
/// Compare-and-set attempts of one metadata update before the ledger fails.
pub(super) const CAS_ATTEMPTS: usize = 20;

/// Java's `RecoveryRequestJsonBody` (Jackson refuses unknown properties).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecoveryRequest {
    bookie_src: Vec<String>,
    #[serde(default)]
    delete_cookie: bool,
}

/// `PUT /api/v1/autorecovery/bookie`.
pub(super) async fn recover(state: Shared, method: Method, body: Bytes) -> Response {
    if body.is_empty() {
        return text(StatusCode::NOT_FOUND, "No request body provide.");
    }
    let request = match serde_json::from_slice::<RecoveryRequest>(&body) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("Failed to parse JSON request: {e}");
            return text(StatusCode::NOT_FOUND, &format!("ERROR parameters: {e}"));
        }
    };
    let Some(src) = request.bookie_src.first().filter(|_| method == Method::PUT) else {
        return wrong_method("Not found method. Should be PUT method");
    };
    let zk = zk_or_answer!(state);
    let admin = state.0.clone();
    let (src, delete_cookie) = (src.clone(), request.delete_cookie);
    tokio::spawn(async move {
        if let Err(e) = valid_bookie_id(&src) {
            tracing::error!("Exception occurred while recovering bookie: {e}");
            return;
        }
        tracing::info!(bookie = %src, "Start recovering bookie");
        match recover_bookie_data(&admin, &zk, &src).await {
            Ok(()) => {
                if delete_cookie {
                    if let Err(e) = delete_cookie_of(&zk, &src).await {
                        tracing::error!("Exception occurred while recovering bookie: {e}");
                        return;
                    }
                }
                tracing::info!(bookie = %src, "Complete recovering bookie");
            }
            Err(e) => tracing::error!("Exception occurred while recovering bookie: {e}"),
        }
    });
    text(StatusCode::OK, "Success send recovery request command.")
}

/// Java's `BookieId.parse`: a non-empty string of `[a-zA-Z0-9:._-]`, not `readonly`.
fn valid_bookie_id(s: &str) -> Result<(), String> {
    let valid = !s.is_empty()
        && s != "readonly"
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '.' | '_' | '-'));
    if valid {
        Ok(())
    } else {
        Err(format!("BookieId {s} is not valid"))
    }
}

/// Deletes `<root>/cookies/<src>` at the version read (Java's
/// `Cookie.deleteFromRegistrationManager`); a missing cookie is an error, as in Java.
async fn delete_cookie_of(zk: &Zk, src: &str) -> Result<(), String> {
    let path = zk.path(&format!("cookies/{src}"));
    let (_, version) = zk
        .data_versioned(&path)
        .await?
        .ok_or_else(|| format!("no cookie at {path}"))?;
    if zk.delete_if_version(&path, version).await? {
        tracing::info!(bookie = %src, "deleted the cookie of the recovered bookie");
        Ok(())
    } else {
        Err(format!("{path} changed while deleting it"))
    }
}

/// How one ledger ended.
enum Outcome {
    /// Every fragment that listed the source now lists its replacement.
    Recovered(usize),
    /// The metadata went meanwhile: the ledger was deleted.
    Deleted,
}

/// `BookKeeperAdmin.recoverBookieData(src)`: every ledger whose ensembles list `src`.
async fn recover_bookie_data(state: &AdminState, zk: &Zk, src: &str) -> Result<(), String> {
    let live = crate::gc_scan::scan_live_ledgers(zk.client(), zk.root())
        .await
        .map_err(|e| e.to_string())?;
    let mut clients = Clients::default();
    let (mut recovered, mut failed) = (0usize, 0usize);
    for &id in live.ids() {
        if state.phase() == Phase::ShuttingDown {
            return Err("stopped: this bookie is shutting down".into());
        }
        let Ok(ledger) = i64::try_from(id) else {
            continue;
        };
        match recover_ledger(zk, &mut clients, ledger, src).await {
            Ok(Outcome::Recovered(0)) | Ok(Outcome::Deleted) => {}
            Ok(Outcome::Recovered(n)) => {
                recovered += 1;
                tracing::info!(ledger, fragments = n, "Recovered ledger {ledger}.");
            }
            Err(e) => {
                failed += 1;
                tracing::error!(ledger, "Failed to recover ledger {ledger} : {e}");
            }
        }
    }
    tracing::info!(
        bookie = %src, recovered, failed,
        "recovery of bookie {src}: {recovered} ledgers recovered, {failed} failed"
    );
    if failed > 0 {
        return Err(format!(
            "recovery of {src} incomplete: {failed} ledgers failed"
        ));
    }
    Ok(())
}

/// One ledger (Java's `recoverLedger` for a closed ledger, and for the closed ensembles of
/// an open one).
async fn recover_ledger(
    zk: &Zk,
    clients: &mut Clients,
    ledger: i64,
    src: &str,
) -> Result<Outcome, String> {
    let path = crate::gc_scan::ledger_path(zk.root(), ledger as u64);
    let Some((data, _)) = zk.data_versioned(&path).await? else {
        return Ok(Outcome::Deleted);
    };
    let mut view = recovery_view(&data).map_err(|e| format!("{path}: {e}"))?;
    let in_last = |v: &RecoveryView| {
        v.ensembles
            .last()
            .is_some_and(|(_, m)| m.iter().any(|b| b == src))
    };
    if view.state != LedgerState::Closed && in_last(&view) {
        // Java's `fenceRequired`: the writer may still add to an ensemble with the source.
        match recover_open_ledger(zk, clients, ledger, &path, src).await? {
            Recovered::Deleted => return Ok(Outcome::Deleted),
            Recovered::Closed(closed) => {
                view = recovery_view(&closed).map_err(|e| format!("{path}: {e}"))?;
            }
        }
    }
    let fragments = fragments_of(&view, src);
    if fragments.is_empty() {
        return Ok(Outcome::Recovered(0));
    }
    let digest_type = DigestType::from_i32(view.digest_type).map_err(|e| e.to_string())?;
    let copy = Copier {
        ledger,
        digest: DigestManager::new(digest_type, &view.password),
        key: MasterKey::from_password(&view.password),
        ensemble_size: view.ensemble_size,
        write_quorum: view.write_quorum,
    };
    let (writable, _) = zk.bookies().await?;
    for fragment in &fragments {
        let target = choose_replacement(&writable, &fragment.members, src)?;
        tracing::info!(
            ledger,
            "Replicating fragment [{}, {}] of ledger {ledger}: {src} -> {target}",
            fragment.first,
            fragment.last
        );
        copy.fragment(clients, fragment, &target).await?;
        let swap = [(src.to_string(), target)];
        if !update_ensemble(zk, &path, fragment.first, &swap).await? {
            return Ok(Outcome::Deleted);
        }
        tracing::info!(
            ledger,
            "Updated ZK to point ledger fragments from old bookies to new bookies: {src} -> {}",
            swap[0].1
        );
    }
    Ok(Outcome::Recovered(fragments.len()))
}

/// One ensemble that lists the source: its entries `first..=last` (`last < first`: none).
struct Fragment {
    first: i64,
    last: i64,
    members: Vec<String>,
    /// The source's position in `members`.
    index: usize,
}

/// The fragments holding `src`, as Java's `recoverLedger` ranges them: an ensemble ends
/// before the next one's first entry; the last ends at the closed ledger's last entry.
fn fragments_of(view: &RecoveryView, src: &str) -> Vec<Fragment> {
    let mut out = Vec::new();
    for (i, (first, members)) in view.ensembles.iter().enumerate() {
        let Some(index) = members.iter().position(|m| m == src) else {
            continue;
        };
        let last = match view.ensembles.get(i + 1) {
            Some((next, _)) => next - 1,
            None => view.last_entry_id,
        };
        out.push(Fragment {
            first: *first,
            last,
            members: members.clone(),
            index,
        });
    }
    out
}

/// A registered writable bookie outside `ensemble` and other than `src`, at random
/// (Java: `BKNotEnoughBookiesException` when there is none).
fn choose_replacement(
    writable: &[String],
    ensemble: &[String],
    src: &str,
) -> Result<String, String> {
    let candidates: Vec<&String> = writable
        .iter()
        .filter(|b| b.as_str() != src && !ensemble.contains(b))
        .collect();
    if candidates.is_empty() {
        return Err(format!(
            "Not enough non-faulty bookies available: none of the writable bookies {writable:?} \
             is outside the ensemble {ensemble:?}"
        ));
    }
    // std's randomly keyed hasher as the random source (no `rand` in the server's deps).
    use std::hash::{BuildHasher, Hasher};
    let pick = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish() as usize
        % candidates.len();
    Ok(candidates[pick].clone())
}

/// Replaces the members of the ensemble at `first` (a compare-and-set, read again on a
/// conflict); `Ok(false)` when the ledger's metadata went (deleted meanwhile).
async fn update_ensemble(
    zk: &Zk,
    path: &str,
    first: i64,
    swap: &[(String, String)],
) -> Result<bool, String> {
    for _ in 0..CAS_ATTEMPTS {
        let Some((data, version)) = zk.data_versioned(path).await? else {
            return Ok(false);
        };
        let Some(updated) =
            replace_in_ensemble(&data, first, swap).map_err(|e| format!("{path}: {e}"))?
        else {
            return Ok(true); // someone else already moved it
        };
        if zk.set_if_version(path, &updated, version).await? {
            return Ok(true);
        }
    }
    Err(format!(
        "{path}: metadata changed on each of {CAS_ATTEMPTS} attempts to update it"
    ))
}

/// What copying a ledger's entries needs.
struct Copier {
    ledger: i64,
    digest: DigestManager,
    key: MasterKey,
    ensemble_size: i32,
    write_quorum: i32,
}

impl Copier {
    /// The ensemble indexes storing `entry` (round-robin striping: `(entry + k) % E`, k < W,
    /// Java's `RoundRobinDistributionSchedule`).
    fn write_set(&self, entry: i64) -> Vec<usize> {
        let e = i64::from(self.ensemble_size.max(1));
        (0..i64::from(self.write_quorum.max(1)))
            .map(|k| ((entry + k) % e) as usize)
            .collect()
    }

    /// Copies the fragment's entries stored at the source's index to `target`, at most
    /// [`COPY_WINDOW`] at a time; the first failure fails the fragment.
    async fn fragment(
        &self,
        clients: &mut Clients,
        fragment: &Fragment,
        target: &str,
    ) -> Result<(), String> {
        let entries: Vec<i64> = (fragment.first..=fragment.last)
            .filter(|&e| self.write_set(e).contains(&fragment.index))
            .collect();
        if entries.is_empty() {
            return Ok(());
        }
        let target_client = clients.get(target).await?;
        // A replica that cannot be reached is not tried again within the fragment; one whose
        // connection failed is reconnected (`Clients::get`).
        let mut unreachable: HashSet<usize> = HashSet::new();
        let mut in_flight = JoinSet::new();
        for entry in entries {
            let mut readers = Vec::new();
            for i in self.write_set(entry) {
                if i == fragment.index {
                    continue;
                }
                let id = fragment.members[i].clone();
                if unreachable.contains(&i) {
                    readers.push((id, None));
                    continue;
                }
                match clients.get(&id).await {
                    Ok(c) => readers.push((id, Some(c))),
                    Err(e) => {
                        tracing::warn!(ledger = self.ledger, "recovery: {e}");
                        unreachable.insert(i);
                        readers.push((id, None));
                    }
                }
            }
            if in_flight.len() >= COPY_WINDOW {
                joined(in_flight.join_next().await)?;
            }
            let (ledger, digest, key) = (self.ledger, self.digest.clone(), self.key);
            let target = target_client.clone();
            in_flight.spawn(async move {
                let body = read_from_any(&readers, &digest, ledger, entry).await?;
                match target.recovery_add(&key, body).await? {
                    ErrorCode::Ok => Ok(()),
                    code => Err(format!(
                        "write of entry {entry} of ledger {ledger} to {}: {code:?}",
                        target.addr()
                    )),
                }
            });
        }
        while let Some(done) = in_flight.join_next().await {
            joined(Some(done))?;
        }
        Ok(())
    }
}

fn joined(done: Option<Result<Result<(), String>, tokio::task::JoinError>>) -> Result<(), String> {
    match done {
        None | Some(Ok(Ok(()))) => Ok(()),
        Some(Ok(Err(e))) => Err(e),
        Some(Err(e)) => Err(format!("copy task: {e}")),
    }
}

/// The entry from the first surviving replica that has it with a valid digest (a digest
/// mismatch or a read error moves on to the next replica, as the client's read does).
pub(super) async fn read_from_any(
    readers: &[(String, Option<Arc<BookieClient>>)],
    digest: &DigestManager,
    ledger: i64,
    entry: i64,
) -> Result<Bytes, String> {
    let mut why = Vec::new();
    for (id, client) in readers {
        let Some(client) = client else {
            why.push(format!("{id}: not reachable"));
            continue;
        };
        match client.read(ledger, entry).await {
            Ok(Ok(body)) => match digest.verify_entry_for(&body, ledger, entry) {
                Ok(_) => return Ok(body),
                Err(e) => why.push(format!("{id}: {e}")),
            },
            Ok(Err(code)) => why.push(format!("{id}: {code:?}")),
            Err(e) => why.push(e),
        }
    }
    Err(format!(
        "BK error reading ledger entry {entry} of ledger {ledger}: {}",
        why.join("; ")
    ))
}

/// One connection per bookie for the run, made again after it failed.
#[derive(Default)]
pub(super) struct Clients {
    open: HashMap<String, Arc<BookieClient>>,
}

impl Clients {
    /// A live connection to bookie `id` (an address-form bookie id).
    pub(super) async fn get(&mut self, id: &str) -> Result<Arc<BookieClient>, String> {
        if let Some(c) = self.open.get(id).filter(|c| !c.is_dead()) {
            return Ok(c.clone());
        }
        let c = Arc::new(BookieClient::connect(id).await?);
        self.open.insert(id.to_string(), c.clone());
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(ensembles: &[(i64, &[&str])], state: LedgerState, last: i64) -> RecoveryView {
        RecoveryView {
            state,
            ensemble_size: ensembles[0].1.len() as i32,
            write_quorum: 2,
            ack_quorum: 2,
            last_entry_id: last,
            digest_type: 3,
            password: Vec::new(),
            ensembles: ensembles
                .iter()
                .map(|(f, m)| (*f, m.iter().map(|s| s.to_string()).collect()))
                .collect(),
        }
    }

    #[test]
    fn fragments_are_ranged_as_java_ranges_them() {
        let v = view(
            &[
                (0, &["a", "b", "c"]),
                (10, &["a", "d", "c"]),
                (20, &["e", "d", "c"]),
            ],
            LedgerState::Closed,
            25,
        );
        let f = fragments_of(&v, "a");
        let got: Vec<(i64, i64, usize)> = f.iter().map(|f| (f.first, f.last, f.index)).collect();
        assert_eq!(got, vec![(0, 9, 0), (10, 19, 0)]);
        let c: Vec<(i64, i64)> = fragments_of(&v, "c")
            .iter()
            .map(|f| (f.first, f.last))
            .collect();
        assert_eq!(
            c,
            vec![(0, 9), (10, 19), (20, 25)],
            "the last ends at the last entry"
        );
        assert!(fragments_of(&v, "z").is_empty());
    }

    #[test]
    fn only_the_entries_striped_on_the_source_are_copied() {
        let copy = Copier {
            ledger: 1,
            digest: DigestManager::new(DigestType::Crc32c, b""),
            key: MasterKey::from_password(b""),
            ensemble_size: 3,
            write_quorum: 2,
        };
        assert_eq!(copy.write_set(0), vec![0, 1]);
        assert_eq!(copy.write_set(2), vec![2, 0]);
        let on_0: Vec<i64> = (0..6).filter(|&e| copy.write_set(e).contains(&0)).collect();
        assert_eq!(on_0, vec![0, 2, 3, 5]);
    }

    #[test]
    fn the_replacement_is_a_writable_bookie_outside_the_ensemble() {
        let ensemble: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let writable: Vec<String> = ["b", "c", "d"].iter().map(|s| s.to_string()).collect();
        for _ in 0..20 {
            assert_eq!(choose_replacement(&writable, &ensemble, "a").unwrap(), "d");
        }
        let full: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert!(choose_replacement(&full, &ensemble, "a").is_err());
    }

    #[test]
    fn bookie_ids_are_checked_as_java_parses_them() {
        assert!(valid_bookie_id("127.0.0.1:3181").is_ok());
        assert!(valid_bookie_id("bookie-1_x.y").is_ok());
        assert!(valid_bookie_id("a b").is_err());
        assert!(valid_bookie_id("readonly").is_err());
        assert!(valid_bookie_id("").is_err());
    }

    #[test]
    fn the_body_is_parsed_as_jackson_would() {
        let r: RecoveryRequest =
            serde_json::from_str(r#"{"bookie_src":["a:1","b:1"],"delete_cookie":true}"#).unwrap();
        assert_eq!((r.bookie_src.len(), r.delete_cookie), (2, true));
        let r: RecoveryRequest = serde_json::from_str(r#"{"bookie_src":["a:1"]}"#).unwrap();
        assert!(!r.delete_cookie);
        assert!(serde_json::from_str::<RecoveryRequest>(r#"{"bookie_src":"a:1"}"#).is_err());
        assert!(serde_json::from_str::<RecoveryRequest>(r#"{"bookie_src":[],"x":1}"#).is_err());
        assert!(serde_json::from_str::<RecoveryRequest>("nope").is_err());
    }
}

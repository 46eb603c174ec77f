//! `PUT /api/v1/autorecovery/decommission`: Java 4.17's `DecommissionService` +
//! `BookKeeperAdmin.decommissionBookie`, over ZooKeeper only. Decommission copies no data: it
//! wakes the auditor and waits until the auto-recovery workers have moved every ledger off the
//! bookie (its metadata no longer stores an entry there), which only needs metadata reads.
//!
//! The answer comes at once, the work runs in the background (as Java's executor):
//! - body `{"bookie_src": "<bookie id>"}`; empty body 404 `Null request body for
//!   DecommissionService.`; no `bookie_src` (or a body that is not a JSON object of it) 404
//!   `Request body not contains bookie_src.`; an invalid id 404 `Exception when send
//!   decommission command.<reason>`; otherwise 200 `Success send decommission Bookie command
//!   <id>`; any other method 404 `Not found method. Should be PUT method`;
//! - the background task logs `Start decommissioning bookie.`, then `Complete decommissioning
//!   bookie.` or `Error handling decommissionBookie: <id>.` with the reason, and in between:
//!   refuses a bookie still registered (`available/` or `available/readonly/`); triggers an
//!   audit, failing when auto-recovery is disabled or no auditor is elected (Java's
//!   `UnavailableException`); sleeps 30 s (Java's, to let the auditor run); collects the
//!   ledgers whose ensembles list the bookie and waits, `min(3 s × count, 5 min)` between
//!   checks, until none stores an entry there ([`entries_stored_on`]) or has metadata no
//!   more; then does the same for the under-replicated ledgers that name it as a missing
//!   replica.
//!
//! As Java's HTTP handler (unlike `bookkeeper shell decommissionbookie`), the bookie's cookie
//! is not deleted. Bounds: every ZooKeeper call by `zkTimeout` (a failed read ends the task
//! with the error, never read as "moved"); every sleep ends when this bookie shuts down.

use std::time::Duration;

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::autorecovery::{under_replicated, wake_auditor};
use super::cluster::zk_or_answer;
use super::ledger_metadata::{ensembles, entries_stored_on};
use super::zk::Zk;
use super::{no_metadata_store, text, wrong_method, AdminState, Phase, Shared};

/// Java's sleep after triggering the audit.
const AUDIT_GRACE: Duration = Duration::from_secs(30);
/// Java's wait between checks: 3 s per ledger still stored, at most 5 min.
const PER_LEDGER: Duration = Duration::from_secs(3);
const MAX_BETWEEN_CHECKS: Duration = Duration::from_secs(300);

/// `PUT /api/v1/autorecovery/decommission`.
pub(super) async fn decommission(state: Shared, method: Method, body: Bytes) -> Response {
    if method != Method::PUT {
        return wrong_method("Not found method. Should be PUT method");
    }
    if body.is_empty() {
        return text(
            StatusCode::NOT_FOUND,
            "Null request body for DecommissionService.",
        );
    }
    let src = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("bookie_src").cloned());
    let Some(src) = src else {
        return text(
            StatusCode::NOT_FOUND,
            "Request body not contains bookie_src.",
        );
    };
    let bookie = match parse_bookie_id(&src) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!("Exception occurred while decommissioning bookie: {e}");
            return text(
                StatusCode::NOT_FOUND,
                &format!("Exception when send decommission command.{e}"),
            );
        }
    };
    let zk = zk_or_answer!(state);
    let admin = state.0.clone();
    let target = bookie.clone();
    tokio::spawn(async move {
        tracing::info!("Start decommissioning bookie.");
        match decommission_bookie(&admin, &zk, &target).await {
            Ok(()) => tracing::info!("Complete decommissioning bookie."),
            Err(e) => tracing::error!("Error handling decommissionBookie: {target}. {e}"),
        }
    });
    text(
        StatusCode::OK,
        &format!("Success send decommission Bookie command {bookie}"),
    )
}

/// Java's `BookieId.parse`: a non-empty string of `[a-zA-Z0-9:._-]`, not `readonly`.
fn parse_bookie_id(v: &Value) -> Result<String, String> {
    let Some(s) = v.as_str() else {
        return Err(format!("bookie_src is not a string: {v}"));
    };
    let valid = !s.is_empty()
        && s != "readonly"
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '.' | '_' | '-'));
    if valid {
        Ok(s.to_string())
    } else {
        Err(format!("BookieId {s} is not valid"))
    }
}

async fn decommission_bookie(state: &AdminState, zk: &Zk, bookie: &str) -> Result<(), String> {
    let (rw, ro) = zk.bookies().await?;
    if rw.iter().chain(&ro).any(|b| b == bookie) {
        tracing::error!("Bookie: {bookie} is not shutdown yet");
        return Err("Illegal operation (bookie is not shut down yet)".into());
    }
    match wake_auditor(zk).await? {
        Ok(()) => {}
        Err(why) => {
            tracing::error!("{why}");
            return Err(why.into());
        }
    }
    pause(state, AUDIT_GRACE).await?;

    let listed = ledgers_listing(zk, bookie).await?;
    if !listed.is_empty() {
        wait_until_moved(state, zk, bookie, listed).await?;
    }
    let under: Vec<u64> = under_replicated(zk)
        .await?
        .into_iter()
        .filter(|u| u.replicas.iter().any(|r| r == bookie))
        .filter_map(|u| u64::try_from(u.ledger).ok())
        .collect();
    if !under.is_empty() {
        tracing::info!(
            "Still in some underreplicated ledgers metadata, this bookie is part of its ensemble. Have to make sure that those ledger fragments are rereplicated"
        );
        wait_until_moved(state, zk, bookie, under).await?;
    }
    Ok(())
}

/// Every ledger whose ensembles list `bookie` (Java's `BookieLedgerIndexer`); a ledger
/// deleted since the listing is left out.
async fn ledgers_listing(zk: &Zk, bookie: &str) -> Result<Vec<u64>, String> {
    let live = crate::gc_scan::scan_live_ledgers(zk.client(), zk.root())
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for &id in live.ids() {
        let path = crate::gc_scan::ledger_path(zk.root(), id);
        if let Some(data) = zk.data(&path).await? {
            if ensembles(&data)
                .map_err(|e| format!("{path}: {e}"))?
                .has_member(bookie)
            {
                out.push(id);
            }
        }
    }
    Ok(out)
}

/// Java's `waitForLedgersToBeReplicated`.
async fn wait_until_moved(
    state: &AdminState,
    zk: &Zk,
    bookie: &str,
    mut ledgers: Vec<u64>,
) -> Result<(), String> {
    retain_stored(zk, bookie, &mut ledgers).await?;
    while !ledgers.is_empty() {
        let wait = (PER_LEDGER * ledgers.len().min(1000) as u32).min(MAX_BETWEEN_CHECKS);
        tracing::info!(
            "Count of Ledgers which need to be rereplicated: {}, waiting {} seconds for next check",
            ledgers.len(),
            wait.as_secs()
        );
        pause(state, wait).await?;
        tracing::debug!("Making sure following ledgers replication to be completed: {ledgers:?}");
        retain_stored(zk, bookie, &mut ledgers).await?;
    }
    Ok(())
}

/// Keeps the ledgers whose metadata still stores an entry on `bookie`; a ledger without
/// metadata (deleted) is dropped; a failed read or an unreadable znode is an error.
async fn retain_stored(zk: &Zk, bookie: &str, ledgers: &mut Vec<u64>) -> Result<(), String> {
    let mut kept = Vec::with_capacity(ledgers.len());
    for &id in ledgers.iter() {
        let path = crate::gc_scan::ledger_path(zk.root(), id);
        match zk.data(&path).await? {
            None => tracing::debug!("Ledger: {id} has been deleted"),
            Some(data) => {
                if entries_stored_on(&data, bookie).map_err(|e| format!("{path}: {e}"))? {
                    kept.push(id);
                }
            }
        }
    }
    *ledgers = kept;
    Ok(())
}

/// Sleeps `d`, ending early (with an error) when this bookie starts shutting down.
async fn pause(state: &AdminState, d: Duration) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + d;
    loop {
        if state.phase() == Phase::ShuttingDown {
            return Err("the bookie is shutting down".into());
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(());
        }
        tokio::time::sleep((deadline - now).min(Duration::from_millis(200))).await;
    }
}

/// Checks of the id rule and the striping rule (the endpoint's flow is tested on the binary,
/// bookie/tests/ops_admin_decommission.rs).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::ledger_metadata::{encode_ensembles_for_tests, LedgerState};

    #[test]
    fn bookie_ids_are_checked_as_java_parses_them() {
        assert_eq!(
            parse_bookie_id(&Value::from("127.0.0.1:3181")),
            Ok("127.0.0.1:3181".into())
        );
        assert!(parse_bookie_id(&Value::from("readonly")).is_err());
        assert!(parse_bookie_id(&Value::from("")).is_err());
        assert!(parse_bookie_id(&Value::from("a b")).is_err());
        assert!(parse_bookie_id(&Value::from(3)).is_err());
    }

    #[test]
    fn stored_follows_javas_segment_rules() {
        let b = "b:1";
        // E = W (test metadata has W = 2): every member stores the segment.
        let md = encode_ensembles_for_tests(&[(0, &["a:1", b])], LedgerState::Closed, Some(5));
        assert_eq!(entries_stored_on(&md, b), Ok(true));
        assert_eq!(entries_stored_on(&md, "c:1"), Ok(false));
        // Closed, last segment never written: nothing stored.
        let md = encode_ensembles_for_tests(
            &[(0, &["a:1", "c:1"]), (6, &["a:1", b])],
            LedgerState::Closed,
            Some(5),
        );
        assert_eq!(entries_stored_on(&md, b), Ok(false));
        // Open: the last segment is stored on every member.
        let md = encode_ensembles_for_tests(&[(0, &["a:1", b, "c:1"])], LedgerState::Open, None);
        assert_eq!(entries_stored_on(&md, b), Ok(true));
        // E = 3 > W = 2, one entry (id 0 on indexes 0 and 1): index 2 stores nothing.
        let md =
            encode_ensembles_for_tests(&[(0, &["a:1", "c:1", b])], LedgerState::Closed, Some(0));
        assert_eq!(entries_stored_on(&md, b), Ok(false));
        assert_eq!(entries_stored_on(&md, "c:1"), Ok(true));
        // Two entries: entry 1 is on indexes 1 and 2.
        let md =
            encode_ensembles_for_tests(&[(0, &["a:1", "c:1", b])], LedgerState::Closed, Some(1));
        assert_eq!(entries_stored_on(&md, b), Ok(true));
    }
}

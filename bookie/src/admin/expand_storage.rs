//! `PUT /api/v1/bookie/expand_storage`: the cookie check of start-up, run again on a running
//! bookie (4.17.3 `ExpandStorageService`, which runs `LegacyCookieValidation.checkCookies` over
//! the running configuration's journal, ledger and index directories).
//!
//! Owns nothing but the answer; the check is `Registration::check_cookies` (or, standalone,
//! `registration::check_cookies_standalone`), the very code start-up runs
//! (docs/registration.md §5.3), with the configuration and bookie address start-up used.
//!
//! Guarantees:
//! - 200 `Success expand storage` only when the cookies in ZooKeeper and in every directory
//!   still match this bookie's configuration, or when `allowStorageExpansion=true` and the
//!   expansion rules of docs/registration.md §5.3 allow rewriting them (stored ledger/index
//!   dir lists that are a subset of the configured ones; never a journal dir, never a wiped
//!   one); what is rewritten then is rewritten as at start-up (every `current/VERSION` durably
//!   replaced, then the ZooKeeper cookie by compare-and-set on its version);
//! - a mismatch, a corrupt cookie, a missing ZooKeeper cookie or a failed ZooKeeper or disk
//!   call is 500 `Exception while updating cookie for storage expansion` (Java's text), logged
//!   with the reason, and a mismatch writes nothing (the check decides before any write);
//! - 503 until storage is open (start-up's own check has not finished); one check at a time;
//!   the check runs off the network threads (its fsyncs and ZooKeeper calls may take seconds);
//! - other methods: 404 `Not found method. Should be PUT method` (Java's).
//!
//! The configuration is read once at start-up here (`server_config` PUT is 405), so unlike
//! Java no directory can be added to a running bookie: a new directory is added by a restart
//! with `allowStorageExpansion=true`. This endpoint re-validates, and repairs what start-up's
//! rules repair.

use axum::http::{Method, StatusCode};
use axum::response::Response;

use super::{not_started, text, wrong_method, Shared};
use crate::registration;

/// Java's answer on success.
const SUCCESS: &str = "Success expand storage";
/// Java's answer when the cookie check fails.
const FAILURE: &str = "Exception while updating cookie for storage expansion";

/// `PUT /api/v1/bookie/expand_storage`.
pub(super) async fn expand_storage(state: Shared, method: Method) -> Response {
    if method != Method::PUT {
        return wrong_method("Not found method. Should be PUT method");
    }
    if state.bookie().is_none() {
        return not_started();
    }
    let Some(addr) = state.address.get().cloned() else {
        return not_started();
    };
    let registration = match (&state.cfg.metadata_service, state.registration()) {
        (None, _) => None,
        (Some(_), Some(r)) => Some(r.clone()),
        (Some(_), None) => return not_started(),
    };
    let _one_at_a_time = state.cookie_check.lock().await;
    let cfg = state.cfg.clone();
    let handle = tokio::runtime::Handle::current();
    let checked = tokio::task::spawn_blocking(move || {
        let mut disk = bk_disk::SyscallDisk::new();
        match registration {
            Some(reg) => handle.block_on(reg.check_cookies(&cfg, &addr, &mut disk)),
            None => registration::check_cookies_standalone(&cfg, &addr, &mut disk),
        }
    })
    .await;
    match checked {
        Ok(Ok(plan)) => {
            tracing::info!(?plan, "expand_storage: cookie check passed");
            text(StatusCode::OK, SUCCESS)
        }
        Ok(Err(e)) => {
            tracing::error!(error = %e, "expand_storage: cookie check failed");
            text(StatusCode::INTERNAL_SERVER_ERROR, FAILURE)
        }
        Err(e) => {
            tracing::error!(error = %e, "expand_storage: cookie check task failed");
            text(StatusCode::INTERNAL_SERVER_ERROR, FAILURE)
        }
    }
}

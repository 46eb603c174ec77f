//! `/api/v1/autorecovery/{status,who_is_auditor}`: auto-recovery as ZooKeeper shows it,
//! read as the Java handlers read it (`<ledgers root>/underreplication/...`).
//!
//! Shapes: `status` GET `{"enabled": bool}` (true unless `underreplication/disable`
//! exists); `who_is_auditor` 200 `Auditor: <bookie id>`, 404 `No auditor elected` or
//! `Exception when get.<reason>` (as Java). Changing state (`status` PUT, `trigger_audit`,
//! `lost_bookie_recovery_delay`, `decommission`, `bookie`) and `list_under_replicated_ledger`
//! are not built here (501, mod.rs).

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::json as j;

use super::cluster::zk_or_answer;
use super::zk::Zk;
use super::{json, no_metadata_store, text, wrong_method, Shared};

/// `GET /api/v1/autorecovery/status`.
pub(super) async fn status(state: Shared, method: Method) -> Response {
    if method == Method::PUT {
        return text(
            StatusCode::NOT_IMPLEMENTED,
            "changing the auto-recovery status is not implemented by bookie-rs",
        );
    }
    if method != Method::GET {
        return wrong_method("Not found method. Should be GET or PUT method");
    }
    let zk = zk_or_answer!(state);
    match zk.exists(&zk.path("underreplication/disable")).await {
        Ok(disabled) => json(StatusCode::OK, &j!({ "enabled": !disabled })),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

/// `GET /api/v1/autorecovery/who_is_auditor`.
pub(super) async fn who_is_auditor(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method("Not found method. Should be GET method");
    }
    let zk: Zk = zk_or_answer!(state);
    match zk.auditor().await {
        Ok(Some(id)) => text(StatusCode::OK, &format!("Auditor: {id}")),
        Ok(None) => text(StatusCode::NOT_FOUND, "No auditor elected"),
        Err(e) => text(StatusCode::NOT_FOUND, &format!("Exception when get.{e}")),
    }
}

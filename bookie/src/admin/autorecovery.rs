//! `/api/v1/autorecovery/...`: auto-recovery as ZooKeeper shows it, read and switched as the
//! Java handlers do through `ZkLedgerUnderreplicationManager` (`<ledgers root>/underreplication/`:
//! `disable`, `lostBookieRecoveryDelay`, `ledgers/<4 hex levels>/urL<%010d id>`,
//! `auditorelection`).
//!
//! Shapes (4.17 handlers):
//! - `status` GET `{"enabled": bool}` (true unless `underreplication/disable` exists); PUT
//!   `?enabled=true|false` creates or deletes `disable` and answers the new status; 400
//!   without `enabled`;
//! - `who_is_auditor` 200 `Auditor: <bookie id>`, 404 `No auditor elected` or
//!   `Exception when get.<reason>`;
//! - `list_under_replicated_ledger` GET: a JSON list of ledger ids, or with
//!   `?printmissingreplica` a map `{"<id>": ["<missing bookie>", ...]}`; filters
//!   `?missingreplica=<id>` (replica list contains it) and `?excludingmissingreplica=<id>`
//!   (does not); 404 `No under replicated ledgers found` when none matches (as Java);
//! - `lost_bookie_recovery_delay` GET `lostBookieRecoveryDelay value: <n>` (404 when the node
//!   is missing or unreadable, as Java); PUT `{"delay_seconds": n}` writes it;
//! - `trigger_audit` PUT: rewrites the delay with its own value, which wakes the auditor
//!   (Java's `BookKeeperAdmin.triggerAudit`), nothing when replication is disabled or no
//!   auditor is elected; 404 `Exception when do operation.<reason>` on a failed read.
//!
//! `bookie` (recover a bookie's ledgers) is bookie/src/admin/recovery.rs; `decommission`
//! only waits on metadata: bookie/src/admin/decommission.rs.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::Query;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{json as j, Map, Value};

use super::cluster::zk_or_answer;
use super::zk::Zk;
use super::{json, no_metadata_store, text, wrong_method, Shared};

/// At most this many `underreplication/ledgers` nodes are visited by one listing.
const MAX_VISITED: usize = 1_000_000;

/// `GET|PUT /api/v1/autorecovery/status`.
pub(super) async fn status(
    state: Shared,
    method: Method,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if method != Method::GET && method != Method::PUT {
        return wrong_method("Not found method. Should be GET or PUT method");
    }
    let zk = zk_or_answer!(state);
    let disable = zk.path("underreplication/disable");
    if method == Method::PUT {
        let Some(enabled) = params.get("enabled") else {
            return text(
                StatusCode::BAD_REQUEST,
                &format!("Param 'enabled' not found in {params:?}"),
            );
        };
        // Java's Boolean.parseBoolean: "true" in any case is true, anything else false.
        let result = if enabled.eq_ignore_ascii_case("true") {
            zk.delete(&disable).await.map(|_| ())
        } else {
            zk.create_persistent(&disable, b"").await.map(|_| ())
        };
        if let Err(e) = result {
            return text(StatusCode::INTERNAL_SERVER_ERROR, &e);
        }
    }
    match zk.exists(&disable).await {
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
    // Java lists the election's children: without the node that is a NoNode exception,
    // whose text it answers (the same words here, so scripts that match them still do).
    let election = zk.path("underreplication/auditorelection");
    match zk.exists(&election).await {
        Ok(true) => {}
        Ok(false) => {
            return text(
                StatusCode::NOT_FOUND,
                &format!(
                    "Exception when get.org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode for {election}"
                ),
            )
        }
        Err(e) => return text(StatusCode::NOT_FOUND, &format!("Exception when get.{e}")),
    }
    match zk.auditor().await {
        Ok(Some(id)) => text(StatusCode::OK, &format!("Auditor: {id}")),
        Ok(None) => text(StatusCode::NOT_FOUND, "No auditor elected"),
        Err(e) => text(StatusCode::NOT_FOUND, &format!("Exception when get.{e}")),
    }
}

/// One `urL` node: its ledger and the missing replicas it names.
pub(super) struct UnderReplicated {
    pub(super) ledger: i64,
    pub(super) replicas: Vec<String>,
}

/// `GET /api/v1/autorecovery/list_under_replicated_ledger`.
pub(super) async fn list_under_replicated_ledger(
    state: Shared,
    method: Method,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if method != Method::GET {
        return wrong_method("Not found method. Should be GET method");
    }
    let including = params
        .get("missingreplica")
        .filter(|s| !s.trim().is_empty());
    let excluding = params
        .get("excludingmissingreplica")
        .filter(|s| !s.trim().is_empty());
    let print_replicas = params.contains_key("printmissingreplica");
    let zk = zk_or_answer!(state);
    let all = match under_replicated(&zk).await {
        Ok(all) => all,
        Err(e) => return text(StatusCode::NOT_FOUND, &format!("Exception when get.{e}")),
    };
    let wanted: Vec<UnderReplicated> = all
        .into_iter()
        .filter(|u| including.is_none_or(|b| u.replicas.contains(b)))
        .filter(|u| excluding.is_none_or(|b| !u.replicas.contains(b)))
        .collect();
    if wanted.is_empty() {
        return text(StatusCode::NOT_FOUND, "No under replicated ledgers found");
    }
    if print_replicas {
        let mut out = Map::new();
        for u in wanted {
            out.insert(u.ledger.to_string(), j!(u.replicas));
        }
        json(StatusCode::OK, &Value::Object(out))
    } else {
        let ids: Vec<i64> = wanted.iter().map(|u| u.ledger).collect();
        json(StatusCode::OK, &j!(ids))
    }
}

/// Every `urL` node under `underreplication/ledgers`, breadth first as Java lists them. A node
/// that vanishes during the walk is skipped (Java ignores NoNode too); any other failed read
/// fails the listing.
pub(super) async fn under_replicated(zk: &Zk) -> Result<Vec<UnderReplicated>, String> {
    let mut queue = std::collections::VecDeque::from([zk.path("underreplication/ledgers")]);
    let mut out = Vec::new();
    let mut visited = 0usize;
    while let Some(parent) = queue.pop_front() {
        visited += 1;
        if visited > MAX_VISITED {
            return Err("underreplication/ledgers: tree too large to walk".into());
        }
        let Some(children) = zk.children(&parent).await? else {
            continue;
        };
        for c in children {
            let child = format!("{parent}/{c}");
            let Some(id) = c.strip_prefix("urL") else {
                queue.push_back(child);
                continue;
            };
            let ledger = id
                .parse::<i64>()
                .map_err(|_| format!("{child}: not an under-replicated ledger node"))?;
            if let Some(data) = zk.data(&child).await? {
                let replicas = parse_replicas(&String::from_utf8_lossy(&data));
                out.push(UnderReplicated { ledger, replicas });
            }
        }
    }
    Ok(out)
}

/// The `replica` fields of an `UnderreplicatedLedgerFormat` in protobuf text format
/// (`replica: "host:port"` lines; `ctime: <n>` ignored).
pub(super) fn parse_replicas(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("replica")?.trim_start();
            let rest = rest.strip_prefix(':')?.trim().strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

/// `GET|PUT /api/v1/autorecovery/lost_bookie_recovery_delay`.
pub(super) async fn lost_bookie_recovery_delay(
    state: Shared,
    method: Method,
    body: Bytes,
) -> Response {
    if method != Method::GET && method != Method::PUT {
        return wrong_method("Not found method. Should be PUT method");
    }
    let zk = zk_or_answer!(state);
    if method == Method::GET {
        return match read_delay(&zk).await {
            Ok(n) => text(
                StatusCode::OK,
                &format!("lostBookieRecoveryDelay value: {n}"),
            ),
            Err(e) => text(
                StatusCode::NOT_FOUND,
                &format!("Exception when get lostBookieRecoveryDelay.{e}"),
            ),
        };
    }
    if body.is_empty() {
        return text(
            StatusCode::NOT_FOUND,
            "Null request body for lostBookieRecoveryDelay.",
        );
    }
    let delay = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("delay_seconds").and_then(Value::as_i64))
        .and_then(|d| i32::try_from(d).ok());
    let Some(delay) = delay else {
        return text(
            StatusCode::NOT_FOUND,
            "Request body not contains lostBookieRecoveryDelay.",
        );
    };
    match zk.put(&delay_path(&zk), delay.to_string().as_bytes()).await {
        Ok(()) => text(
            StatusCode::OK,
            &format!("Success set lostBookieRecoveryDelay to {delay}"),
        ),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

fn delay_path(zk: &Zk) -> String {
    zk.path("underreplication/lostBookieRecoveryDelay")
}

/// The stored delay; a missing node is an error, as in Java (`Error contacting zookeeper`).
async fn read_delay(zk: &Zk) -> Result<i32, String> {
    let path = delay_path(zk);
    let data = zk
        .data(&path)
        .await?
        .ok_or_else(|| "Error contacting zookeeper".to_string())?;
    let s = String::from_utf8_lossy(&data);
    s.trim()
        .parse::<i32>()
        .map_err(|_| format!("{path}: not a number: {s:?}"))
}

/// `PUT /api/v1/autorecovery/trigger_audit`.
pub(super) async fn trigger_audit(state: Shared, method: Method) -> Response {
    if method != Method::PUT {
        return wrong_method("Not found method. Should be PUT method");
    }
    let zk = zk_or_answer!(state);
    match trigger(&zk).await {
        Ok(()) => text(StatusCode::OK, "Success trigger audit."),
        Err(e) => text(
            StatusCode::NOT_FOUND,
            &format!("Exception when do operation.{e}"),
        ),
    }
}

async fn trigger(zk: &Zk) -> Result<(), String> {
    if let Err(why) = wake_auditor(zk).await? {
        tracing::warn!("trigger_audit: {why}, nothing to do");
    }
    Ok(())
}

/// Java's `BookKeeperAdmin.triggerAudit`: rewrites the delay with its own value. The inner
/// `Err` is Java's `UnavailableException` (auto-recovery disabled, or no auditor elected),
/// which `trigger_audit` answers as done and decommission fails on; the outer one a failed
/// ZooKeeper call or a missing election node.
pub(super) async fn wake_auditor(zk: &Zk) -> Result<Result<(), &'static str>, String> {
    if zk.exists(&zk.path("underreplication/disable")).await? {
        return Ok(Err("Autorecovery is disabled. So giving up!"));
    }
    // Java lists the election's children and fails when the election node is missing.
    let election = zk.path("underreplication/auditorelection");
    if zk.children(&election).await?.is_none() {
        return Err(format!(
            "org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode for {election}"
        ));
    }
    if zk.auditor().await?.is_none() {
        return Ok(Err(
            "No auditor elected, though Autorecovery is enabled. So giving up.",
        ));
    }
    let delay = read_delay(zk).await?;
    tracing::info!("Resetting LostBookieRecoveryDelay value: {delay}, to kickstart audit task");
    zk.put(&delay_path(zk), delay.to_string().as_bytes())
        .await
        .map(Ok)
}

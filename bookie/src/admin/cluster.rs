//! `/api/v1/bookie/{list_bookies,cluster_info}`: the cluster as ZooKeeper
//! shows it (docs/registration.md §2 for the paths), read as the Java handlers read it.
//!
//! Shapes: `list_bookies` `{"<bookie id>": null | "<hostname>"}` (`?type=rw|ro`,
//! `?print_hostnames=true`); `cluster_info` `{"auditorElected","auditorId",
//! "clusterUnderReplicated","ledgerReplicationEnabled","totalBookiesCount",
//! "writableBookiesCount","readonlyBookiesCount","unavailableBookiesCount"}`.
//! A failed ZooKeeper read is a 500 naming the path, never an empty listing.

use std::collections::HashMap;

use axum::extract::Query;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{json as j, Map, Value};

use super::zk::Zk;
use super::{json, no_metadata_store, text, wrong_method, Shared};

/// Resolves the ZooKeeper reader or answers why there is none.
macro_rules! zk_or_answer {
    ($state:expr) => {
        match Zk::of(&$state) {
            None => return no_metadata_store(&$state),
            Some(Err(e)) => return text(StatusCode::SERVICE_UNAVAILABLE, &e),
            Some(Ok(zk)) => zk,
        }
    };
}
pub(super) use zk_or_answer;

/// `GET /api/v1/bookie/list_bookies`.
pub(super) async fn list_bookies(
    state: Shared,
    method: Method,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if method != Method::GET {
        return wrong_method("Not found method. Should be GET method");
    }
    let zk = zk_or_answer!(state);
    let (rw, ro) = match zk.bookies().await {
        Ok(b) => b,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e),
    };
    let read_only = params.get("type").map(String::as_str) == Some("ro");
    let hostnames = params.get("print_hostnames").map(String::as_str) == Some("true");
    let mut out = Map::new();
    for id in if read_only { ro } else { rw } {
        let host = hostnames.then(|| Value::String(host_of(&id).to_string()));
        out.insert(id, host.unwrap_or(Value::Null));
    }
    json(StatusCode::OK, &Value::Object(out))
}

/// The host part of a `host:port` bookie id (the id itself when it is not one).
fn host_of(id: &str) -> &str {
    match id.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => host,
        _ => id,
    }
}

/// `GET /api/v1/bookie/cluster_info`.
pub(super) async fn cluster_info(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method("Only GET is supported.");
    }
    let zk = zk_or_answer!(state);
    match read_cluster_info(&zk).await {
        Ok(v) => json(StatusCode::OK, &v),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

async fn read_cluster_info(zk: &Zk) -> Result<Value, String> {
    let (rw, ro) = zk.bookies().await?;
    // Java's getAllBookies: every bookie with a cookie.
    let total = zk
        .children(&zk.path("cookies"))
        .await?
        .map_or(0, |c| c.len());
    // Java logs a failed auditor read and answers "not elected".
    let auditor = zk.auditor().await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cluster_info: could not read the auditor");
        None
    });
    let under_replicated = any_under_replicated(zk).await?;
    let replication_enabled = !zk.exists(&zk.path("underreplication/disable")).await?;
    Ok(j!({
        "auditorElected": auditor.is_some(),
        "auditorId": auditor.unwrap_or_default(),
        "clusterUnderReplicated": under_replicated,
        "ledgerReplicationEnabled": replication_enabled,
        "totalBookiesCount": total,
        "writableBookiesCount": rw.len(),
        "readonlyBookiesCount": ro.len(),
        "unavailableBookiesCount": total as i64 - rw.len() as i64 - ro.len() as i64,
    }))
}

/// True when any `urL<id>` node exists under `underreplication/ledgers` (a depth-first walk
/// of its hex tree that stops at the first one).
pub(super) async fn any_under_replicated(zk: &Zk) -> Result<bool, String> {
    let mut stack = vec![zk.path("underreplication/ledgers")];
    let mut visited = 0usize;
    while let Some(path) = stack.pop() {
        visited += 1;
        if visited > 100_000 {
            return Err("underreplication/ledgers: tree too large to walk".into());
        }
        let Some(children) = zk.children(&path).await? else {
            continue;
        };
        for c in children {
            if c.starts_with("urL") {
                return Ok(true);
            }
            stack.push(format!("{path}/{c}"));
        }
    }
    Ok(false)
}

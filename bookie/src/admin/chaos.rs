//! `/api/v1/chaos/faults` (ours, not stock; docs/chaos.md): the run-time control of the chaos
//! layer.
//!
//! - `POST` with one fault spec as JSON (`bk_disk::chaos::FaultSpec`, format in
//!   docs/chaos.md): 201 `{"id": N}`; a spec that does not parse or check is 400 with the
//!   parser's reason; more than `MAX_FAULTS` active is 409;
//! - `GET`: 200, the active faults in the order added, each `{"id", "spec", "matched",
//!   "hits"}`, plus `"injected"`: the count per fault kind since start-up;
//! - `DELETE`: 200 `{"cleared": N}`, every active fault removed (counts stay);
//! - any method while chaos is off (`chaosEnabled=false`, the default): 403 with a message
//!   naming the key; other methods: 405.

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use bk_disk::chaos::{FaultKind, FaultSpec};
use serde_json::{json as j, Map, Value};

use super::{json, text, Shared};

/// `POST|GET|DELETE /api/v1/chaos/faults`.
pub(super) async fn faults(state: Shared, method: Method, body: Bytes) -> Response {
    let Some(chaos) = state.chaos() else {
        return text(
            StatusCode::FORBIDDEN,
            "chaos fault injection is not enabled on this bookie: start it with \
             chaosEnabled=true (docs/chaos.md)",
        );
    };
    match method {
        Method::POST => {
            let spec = match FaultSpec::from_json(&body) {
                Ok(s) => s,
                Err(e) => return text(StatusCode::BAD_REQUEST, &e.to_string()),
            };
            match chaos.add(spec) {
                Ok(id) => json(StatusCode::CREATED, &j!({ "id": id })),
                Err(e) => text(StatusCode::CONFLICT, &e.to_string()),
            }
        }
        Method::GET => {
            let faults: Vec<Value> = chaos
                .list()
                .into_iter()
                .map(|a| {
                    j!({
                        "id": a.id,
                        "spec": serde_json::to_value(&a.spec).unwrap_or(Value::Null),
                        "matched": a.matched,
                        "hits": a.hits,
                    })
                })
                .collect();
            let injected: Map<String, Value> = FaultKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), j!(chaos.injected(*k))))
                .collect();
            json(
                StatusCode::OK,
                &j!({ "faults": faults, "injected": injected }),
            )
        }
        Method::DELETE => json(StatusCode::OK, &j!({ "cleared": chaos.clear() })),
        _ => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "POST a fault spec, GET the active faults, DELETE to clear them",
        ),
    }
}

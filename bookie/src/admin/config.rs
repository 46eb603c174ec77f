//! `/api/v1/config/server_config`: the configuration as given (file, `--set`, flags), as
//! Java's `ServerConfiguration.asJson()`: `{"<key>": "<value>", ...}`, in key order.
//!
//! Values of keys that name a password or secret are shown as `******` (Java prints them).
//! PUT (Java sets properties at run time, most of which then have no effect) is refused:
//! 405, since the configuration is read and validated once, at start-up.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value};

use super::{json, text, wrong_method, Shared};

/// `GET /api/v1/config/server_config`.
pub(super) async fn server_config(state: Shared, method: Method) -> Response {
    if method == Method::PUT {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "bookie-rs reads its configuration once, at start-up: restart with the new value",
        );
    }
    if method != Method::GET {
        return wrong_method("Request body not found. should contains k-v pairs");
    }
    let mut out = Map::new();
    for (key, value) in &state.cfg.properties {
        let lower = key.to_ascii_lowercase();
        let shown = if lower.contains("password") || lower.contains("secret") {
            "******".to_string()
        } else {
            value.clone()
        };
        out.insert(key.clone(), Value::String(shown));
    }
    json(StatusCode::OK, &Value::Object(out))
}

//! `GET /api/v1/bookie/list_bookie_info`: asks every writable bookie (ZooKeeper's
//! `available/`) for its disk space over the bookie protocol (v3 GET_BOOKIE_INFO, as Java's
//! `BookieInfoReader` does) and answers Java's text-in-JSON shape:
//! `{"<bookie id>": ": {Free: <bytes>(<readable>), Total: <bytes>(<readable>)},", ...,
//!   "ClusterInfo: ": "{Free: <sum>(<readable>), Total: <sum>(<readable>)}"}`.
//!
//! A bookie that does not answer within [`ASK_TIMEOUT`] is left out (Java logs and leaves
//! it out too); no answer from any bookie is Java's 404 `Not found any Bookie info.`.
//! `<readable>` is Java's: divided by 1000 while >= 1000, units KB/MB/GB/TB, at most three
//! decimals truncated, trailing zeros dropped; nothing for values below 1000.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use axum::response::Response;
use bk_proto::v3::{self, RequestBody};
use bytes::BytesMut;
use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::cluster::zk_or_answer;
use super::zk::Zk;
use super::{json, no_metadata_store, text, wrong_method, Shared};

/// Bound for connecting to one bookie and getting its answer.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest answer frame read (a GET_BOOKIE_INFO response is a few dozen bytes).
const MAX_FRAME: usize = 64 * 1024;

pub(super) async fn list_bookie_info(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method("Not found method. Should be GET method");
    }
    let zk: Zk = zk_or_answer!(state);
    let (rw, _ro) = match zk.bookies().await {
        Ok(b) => b,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e),
    };
    let mut asks = tokio::task::JoinSet::new();
    for id in rw {
        asks.spawn(async move {
            let answer = tokio::time::timeout(ASK_TIMEOUT, ask(&id)).await;
            (id, answer)
        });
    }
    let mut infos = Vec::new();
    while let Some(done) = asks.join_next().await {
        match done {
            Ok((id, Ok(Ok((free, total))))) => infos.push((id, free, total)),
            Ok((id, Ok(Err(e)))) => tracing::warn!(bookie = %id, error = %e, "bookie info"),
            Ok((id, Err(_))) => tracing::warn!(bookie = %id, "bookie info: no answer in time"),
            Err(e) => tracing::warn!(error = %e, "bookie info task failed"),
        }
    }
    if infos.is_empty() {
        return text(StatusCode::NOT_FOUND, "Not found any Bookie info.");
    }
    infos.sort();
    let mut out = Map::new();
    let (mut free_sum, mut total_sum) = (0u64, 0u64);
    for (id, free, total) in infos {
        out.insert(
            id,
            Value::String(format!(
                ": {{Free: {free}{}, Total: {total}{}}},",
                readable(free),
                readable(total)
            )),
        );
        free_sum = free_sum.saturating_add(free);
        total_sum = total_sum.saturating_add(total);
    }
    out.insert(
        "ClusterInfo: ".into(),
        Value::String(format!(
            "{{Free: {free_sum}{}, Total: {total_sum}{}}}",
            readable(free_sum),
            readable(total_sum)
        )),
    );
    json(StatusCode::OK, &Value::Object(out))
}

/// (free, total) bytes of the bookie `id` (`host:port`).
async fn ask(id: &str) -> Result<(u64, u64), String> {
    let mut stream = tokio::net::TcpStream::connect(id)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let req = v3::new_request(
        1,
        None,
        RequestBody::GetBookieInfo(v3::GetBookieInfoRequest {
            // TOTAL_DISK_CAPACITY | FREE_DISK_SPACE
            requested: Some(0x1 | 0x2),
        }),
    );
    let mut out = BytesMut::new();
    v3::encode_request(&req, &mut out).map_err(|e| e.to_string())?;
    stream
        .write_all(&out)
        .await
        .map_err(|e| format!("write: {e}"))?;
    let decoder = bk_proto::FrameDecoder::new(MAX_FRAME);
    let mut buf = BytesMut::new();
    let frame = loop {
        if let Some(f) = decoder.decode(&mut buf).map_err(|e| e.to_string())? {
            break f;
        }
        if stream
            .read_buf(&mut buf)
            .await
            .map_err(|e| format!("read: {e}"))?
            == 0
        {
            return Err("closed without an answer".into());
        }
    };
    let resp = bk_proto::decode_response_v3(frame).map_err(|e| e.to_string())?;
    let info = resp
        .get_bookie_info_response
        .ok_or("answer without GetBookieInfoResponse")?;
    if info.status != v3::StatusCode::Eok as i32 {
        return Err(format!("status {}", info.status));
    }
    let free = info.free_disk_space.unwrap_or(0).max(0) as u64;
    let total = info.total_disk_capacity.unwrap_or(0).max(0) as u64;
    Ok((free, total))
}

/// Java's `ListBookieInfoService.getReadable` (module docs).
fn readable(val: u64) -> String {
    const UNITS: [&str; 5] = ["", "KB", "MB", "GB", "TB"];
    let mut d = val as f64;
    let mut unit = 0;
    while d >= 1000.0 && unit < UNITS.len() - 1 {
        d /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        return String::new();
    }
    let truncated = (d * 1000.0).floor() / 1000.0;
    let mut s = format!("{truncated:.3}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    format!("({s}{})", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn readable_sizes_as_java_prints_them() {
        assert_eq!(readable(999), "");
        assert_eq!(readable(76_730_732_544), "(76.73GB)");
        assert_eq!(readable(270_553_174_016), "(270.553GB)");
        assert_eq!(readable(1_000), "(1KB)");
        assert_eq!(readable(1_999_999), "(1.999MB)");
        assert_eq!(readable(5_000_000_000_000_000), "(5000TB)");
    }
}

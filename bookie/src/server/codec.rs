//! Translation between bk-proto's wire messages and the handlers' protocol-independent
//! [`Op`] / [`Reply`].
//!
//! - **Detection** is bk-proto's [`bk_proto::decode_request`]: sticky per connection as in
//!   Java (start in v3; the first frame that is not a valid v3 `Request` switches the
//!   connection to v2 for good).
//! - **Echo**: each decoded request keeps an [`Echo`] with exactly what its response must
//!   repeat for the stock client to match it: v2 `(version, ledgerId, entryId, opcode)` —
//!   the entry id as *requested* (-1 stays -1); batch reads the `requestId`; v3 the header
//!   (`txnId`, `operation`) plus the sub-request's ids.
//! - Requests answered without touching storage (AUTH with no plugin, START_TLS without
//!   TLS, unsupported v3 operations, bad versions) become [`Decoded::Reply`].
//! - Error codes above 106 are never sent to v2 clients ([`Status::v2_code`]).
//! - **TLS and authorization** ([`Security`]): START_TLS becomes [`Decoded::StartTls`] when
//!   the bookie has TLS (docs/tls.md §1); a connection not authorized yet gets only the
//!   pre-authorization answers of [`super::pre_auth`] (docs/tls.md §3).

use bk_proto::v2::{self, ErrorCode, Flags};
use bk_proto::v3::{self, BkPacketHeader, RequestBody, StatusCode};
use bk_proto::ConnProtocolState;
use bytes::{Bytes, BytesMut};

use crate::handlers::{AddOp, BatchReadOp, LongPoll, Op, ReadOp, Reply, Status};

/// Per-connection protocol state (v3 until the first v2 frame).
#[derive(Debug, Default, Clone, Copy)]
pub struct ConnectionProtocol(pub ConnProtocolState);

/// What a response must repeat from its request.
#[derive(Debug, Clone)]
pub enum Echo {
    V2Add {
        version: u8,
        ledger: i64,
        entry: i64,
    },
    V2Read {
        version: u8,
        ledger: i64,
        entry: i64,
    },
    V2Batch {
        version: u8,
        ledger: i64,
        start: i64,
        request_id: i64,
    },
    V3 {
        header: BkPacketHeader,
        ledger: i64,
        entry: i64,
    },
}

/// The outcome of decoding one frame.
#[derive(Debug)]
pub enum Decoded {
    /// An operation for the handlers.
    Op { op: Op, echo: Echo },
    /// A complete encoded response to send as is.
    Reply(Bytes),
    /// Undecodable: close the connection without a response.
    Close(String),
    /// START_TLS on a bookie with TLS (docs/tls.md §1): the server drains, answers EOK in
    /// clear and runs the handshake. Carries the request's header.
    StartTls(BkPacketHeader),
    /// Nothing to answer (an AUTH for our authorizer before authorization, docs/tls.md §3).
    Ignore,
}

/// What a connection's TLS and authorization state lets through (docs/tls.md §1, §3).
#[derive(Debug, Default, Clone, Copy)]
pub struct Security {
    /// The bookie has a TLS context: START_TLS upgrades (otherwise EBADREQ, as before).
    pub tls: bool,
    /// This connection already runs TLS: another START_TLS closes it, as in Java.
    pub tls_active: bool,
    /// The bookie has an authorizer and it has not authorized this connection: requests
    /// get the pre-authorization answers ([`super::pre_auth`]).
    pub unauthorized: bool,
}

fn v2_error(status: Status) -> ErrorCode {
    // v2_code never yields 107, so from_i32 always succeeds; EIO is the safe fallback.
    ErrorCode::from_i32(status.v2_code()).unwrap_or(ErrorCode::Io)
}

fn v3_status(status: Status) -> StatusCode {
    StatusCode::try_from(status.v3_code()).unwrap_or(StatusCode::Eio)
}

fn frame(encode: impl FnOnce(&mut BytesMut) -> Result<(), bk_proto::ProtoError>) -> Bytes {
    let mut dst = BytesMut::new();
    match encode(&mut dst) {
        Ok(()) => dst.freeze(),
        Err(e) => {
            // Only a response over 2 GiB can fail to encode; sending nothing lets the client
            // time out rather than receive a torn frame.
            tracing::error!(error = %e, "response could not be encoded");
            Bytes::new()
        }
    }
}

fn encode_v3(resp: &v3::Response) -> Bytes {
    frame(|dst| v3::encode_response(resp, dst))
}

/// Decodes one frame payload on a connection in state `security`.
pub fn decode(payload: Bytes, protocol: &mut ConnectionProtocol, security: Security) -> Decoded {
    let req = match bk_proto::decode_request(payload, &mut protocol.0) {
        Err(e) => return Decoded::Close(format!("undecodable frame: {e}")),
        Ok(req) => req,
    };
    if security.unauthorized {
        if let Some(answer) = super::pre_auth::answer(&req) {
            return answer;
        }
    }
    match req {
        bk_proto::Request::V2(req) => decode_v2(req),
        bk_proto::Request::V3(req) => decode_v3(*req, security),
    }
}

fn decode_v2(req: v2::Request) -> Decoded {
    match req {
        v2::Request::AddEntry(add) => {
            let echo = Echo::V2Add {
                version: add.version,
                ledger: add.ledger_id,
                entry: add.entry_id,
            };
            if !add_header(add.version).version_supported() {
                return Decoded::Reply(encode(
                    &echo,
                    &Reply::Add {
                        status: Status::BadVersion,
                    },
                ));
            }
            Decoded::Op {
                op: Op::Add(AddOp {
                    master_key: Bytes::copy_from_slice(&add.master_key.0),
                    recovery: add.flags.contains(Flags::RECOVERY_ADD),
                    high_priority: add.flags.contains(Flags::HIGH_PRIORITY),
                    deferred_sync: false,
                    body: add.entry,
                }),
                echo,
            }
        }
        v2::Request::ReadEntry(read) => {
            let echo = Echo::V2Read {
                version: read.version,
                ledger: read.ledger_id,
                entry: read.entry_id,
            };
            if !add_header(read.version).version_supported() {
                return Decoded::Reply(encode(
                    &echo,
                    &read_error(read.entry_id, Status::BadVersion),
                ));
            }
            let fence = read.flags.contains(Flags::DO_FENCING).then(|| {
                read.master_key
                    .map(|k| Bytes::copy_from_slice(&k.0))
                    .unwrap_or_default()
            });
            Decoded::Op {
                op: Op::Read(ReadOp {
                    ledger: read.ledger_id,
                    entry: read.entry_id,
                    fence,
                    long_poll: None,
                    high_priority: read.flags.contains(Flags::HIGH_PRIORITY),
                }),
                echo,
            }
        }
        v2::Request::BatchReadEntry(batch) => {
            let echo = Echo::V2Batch {
                version: batch.version,
                ledger: batch.ledger_id,
                start: batch.start_entry_id,
                request_id: batch.request_id,
            };
            if !add_header(batch.version).version_supported() {
                return Decoded::Reply(encode(
                    &echo,
                    &Reply::BatchRead {
                        status: Status::BadVersion,
                        entries: Vec::new(),
                    },
                ));
            }
            let fence = batch.flags.contains(Flags::DO_FENCING).then(|| {
                batch
                    .master_key
                    .map(|k| Bytes::copy_from_slice(&k.0))
                    .unwrap_or_default()
            });
            Decoded::Op {
                op: Op::BatchRead(BatchReadOp {
                    ledger: batch.ledger_id,
                    start: batch.start_entry_id,
                    max_count: batch.max_count,
                    max_size: batch.max_size,
                    fence,
                }),
                echo,
            }
        }
        // No auth plugin: answer AuthDisabledPlugin (docs/protocol.md §6).
        v2::Request::Auth(_) => {
            Decoded::Reply(frame(|dst| v2::AuthResponse::auth_disabled().encode(dst)))
        }
    }
}

fn add_header(version: u8) -> v2::PacketHeader {
    v2::PacketHeader::new(version, v2::OpCode::AddEntry, Flags::NONE)
}

fn read_error(entry: i64, status: Status) -> Reply {
    Reply::Read {
        status,
        entry,
        body: None,
        max_lac: None,
        lac_update_timestamp: None,
    }
}

fn decode_v3(req: v3::Request, security: Security) -> Decoded {
    let (header, body) = v3::split_request(req);
    let reply_now = |resp: v3::Response| Decoded::Reply(encode_v3(&resp));
    match &body {
        RequestBody::Auth(_) => return reply_now(v3::auth_disabled_response(&header)),
        RequestBody::StartTls if security.tls_active => {
            return Decoded::Close("START_TLS on a TLS connection".into())
        }
        RequestBody::StartTls if security.tls => return Decoded::StartTls(header),
        RequestBody::StartTls => {
            return reply_now(v3::start_tls_response(&header, StatusCode::Ebadreq))
        }
        RequestBody::Unsupported(_) => {
            return reply_now(v3::unsupported_operation_response(&header))
        }
        RequestBody::MissingBody(_) => {
            return reply_now(v3::error_response(&header, &body, StatusCode::Ebadreq))
        }
        _ => {}
    }
    if header.version != v3::ProtocolVersion::VersionThree as i32 {
        return reply_now(v3::error_response(&header, &body, StatusCode::Ebadversion));
    }
    let high_priority = header.is_high_priority();
    let (op, ledger, entry) = match body {
        RequestBody::ReadEntry(r) => {
            let long_poll = r.is_long_poll().then(|| LongPoll {
                previous_lac: r.previous_lac.unwrap_or(-1),
                timeout: r
                    .time_out
                    .map(|ms| std::time::Duration::from_millis(ms.max(0) as u64)),
                piggyback: r.is_piggyback(),
            });
            let fence = r
                .is_fencing()
                .then(|| r.master_key.clone().unwrap_or_default());
            (
                Op::Read(ReadOp {
                    ledger: r.ledger_id,
                    entry: r.entry_id,
                    fence,
                    long_poll,
                    high_priority,
                }),
                r.ledger_id,
                r.entry_id,
            )
        }
        RequestBody::AddEntry(a) => {
            let (ledger, entry) = (a.ledger_id, a.entry_id);
            let recovery = a.is_recovery();
            let deferred_sync = a.is_deferred_sync();
            (
                Op::Add(AddOp {
                    master_key: a.master_key,
                    body: a.body,
                    recovery,
                    high_priority,
                    deferred_sync,
                }),
                ledger,
                entry,
            )
        }
        RequestBody::WriteLac(w) => (
            Op::WriteLac {
                ledger: w.ledger_id,
                master_key: w.master_key,
                body: w.body,
            },
            w.ledger_id,
            w.lac,
        ),
        RequestBody::ReadLac(r) => (
            Op::ReadLac {
                ledger: r.ledger_id,
            },
            r.ledger_id,
            -1,
        ),
        RequestBody::ForceLedger(f) => (
            Op::ForceLedger {
                ledger: f.ledger_id,
            },
            f.ledger_id,
            -1,
        ),
        RequestBody::GetBookieInfo(g) => (
            Op::GetBookieInfo {
                requested: g.requested.unwrap_or(0),
            },
            0,
            -1,
        ),
        RequestBody::GetListOfEntriesOfLedger(g) => (
            Op::ListEntries {
                ledger: g.ledger_id,
            },
            g.ledger_id,
            -1,
        ),
        RequestBody::Auth(_)
        | RequestBody::StartTls
        | RequestBody::Unsupported(_)
        | RequestBody::MissingBody(_) => {
            return reply_now(v3::unsupported_operation_response(&header))
        }
    };
    Decoded::Op {
        op,
        echo: Echo::V3 {
            header,
            ledger,
            entry,
        },
    }
}

/// The clear-text EOK to a START_TLS, written before the handshake (docs/tls.md §1).
pub fn start_tls_ok(header: &BkPacketHeader) -> Bytes {
    encode_v3(&v3::start_tls_response(header, StatusCode::Eok))
}

/// The answer, inside TLS, to a START_TLS whose connection the authorizer refused: the
/// request's header as received and EIO, as Java's `processStartTLSRequestV3` sends it
/// (docs/tls.md §3).
pub fn start_tls_refused(header: &BkPacketHeader) -> Bytes {
    encode_v3(&v3::status_only_response(*header, StatusCode::Eio))
}

/// Encodes the response to a request (identified by its echo).
pub fn encode(echo: &Echo, reply: &Reply) -> Bytes {
    match echo {
        Echo::V2Add {
            version,
            ledger,
            entry,
        } => frame(|dst| {
            v2::AddResponse {
                version: *version,
                error: v2_error(reply.status()),
                ledger_id: *ledger,
                entry_id: *entry,
            }
            .encode(dst)
        }),
        Echo::V2Read {
            version,
            ledger,
            entry,
        } => {
            let status = reply.status();
            let body = match reply {
                Reply::Read { body: Some(b), .. } if status == Status::Ok => b.clone(),
                _ => Bytes::new(),
            };
            frame(|dst| {
                v2::ReadResponse {
                    version: *version,
                    error: v2_error(status),
                    ledger_id: *ledger,
                    entry_id: *entry,
                    entry: body,
                }
                .encode(dst)
            })
        }
        Echo::V2Batch {
            version,
            ledger,
            start,
            request_id,
        } => {
            let entries = match reply {
                Reply::BatchRead { entries, .. } => entries.clone(),
                _ => Vec::new(),
            };
            frame(|dst| {
                v2::BatchReadResponse {
                    version: *version,
                    error: v2_error(reply.status()),
                    ledger_id: *ledger,
                    start_entry_id: *start,
                    request_id: *request_id,
                    entries,
                }
                .encode(dst)
            })
        }
        Echo::V3 {
            header,
            ledger,
            entry,
        } => encode_v3(&v3_response(header, *ledger, *entry, reply)),
    }
}

fn v3_response(header: &BkPacketHeader, ledger: i64, entry: i64, reply: &Reply) -> v3::Response {
    let status = v3_status(reply.status());
    match reply {
        Reply::Add { .. } => v3::add_response(header, status, ledger, entry),
        Reply::Read {
            entry: reply_entry,
            body,
            max_lac,
            lac_update_timestamp,
            ..
        } => v3::read_response(
            header,
            v3::ReadResponse {
                status: status as i32,
                ledger_id: ledger,
                entry_id: *reply_entry,
                body: body.clone(),
                max_lac: *max_lac,
                lac_update_timestamp: *lac_update_timestamp,
            },
        ),
        Reply::WriteLac { .. } => v3::write_lac_response(header, status, ledger),
        Reply::ReadLac {
            lac_body,
            last_entry,
            ..
        } => v3::read_lac_response(
            header,
            v3::ReadLacResponse {
                status: status as i32,
                ledger_id: ledger,
                lac_body: lac_body.clone(),
                last_entry_body: last_entry.clone(),
            },
        ),
        Reply::ForceLedger { .. } => v3::force_ledger_response(header, status, ledger),
        Reply::BookieInfo { total, free, .. } => v3::get_bookie_info_response(
            header,
            v3::GetBookieInfoResponse {
                status: status as i32,
                total_disk_capacity: *total,
                free_disk_space: *free,
            },
        ),
        Reply::ListEntries { availability, .. } => v3::list_of_entries_response(
            header,
            v3::GetListOfEntriesOfLedgerResponse {
                status: status as i32,
                ledger_id: ledger,
                availability_of_entries_of_ledger: availability.clone(),
            },
        ),
        // A v2-only reply on a v3 request cannot happen (dispatch mirrors the op).
        Reply::BatchRead { .. } => v3::unsupported_operation_response(header),
    }
}

#[cfg(test)]
mod security_tests {
    use super::*;

    fn start_tls_payload() -> Bytes {
        let mut b = BytesMut::new();
        v3::encode_request(&v3::new_request(1, None, RequestBody::StartTls), &mut b).unwrap();
        b.split_off(4).freeze()
    }

    fn decode_in(security: Security) -> Decoded {
        decode(
            start_tls_payload(),
            &mut ConnectionProtocol::default(),
            security,
        )
    }

    #[test]
    fn start_tls_in_every_state() {
        let off = Security::default();
        let Decoded::Reply(b) = decode_in(off) else {
            panic!("EBADREQ without TLS")
        };
        assert_eq!(
            &b[..],
            b"\x00\x00\x00\x0b\x0a\x06\x08\x03\x10\x09\x18\x01\x10\x94\x03"
        );
        let on = Security { tls: true, ..off };
        assert!(matches!(decode_in(on), Decoded::StartTls(h) if h.txn_id == 1));
        let unauthorized = Security {
            unauthorized: true,
            ..on
        };
        assert!(
            matches!(decode_in(unauthorized), Decoded::StartTls(_)),
            "START_TLS passes the pre-authorization gate"
        );
        let again = Security {
            tls_active: true,
            ..on
        };
        assert!(matches!(decode_in(again), Decoded::Close(_)));
        let eok = start_tls_ok(&v3::request_header(9, 1, None));
        assert_eq!(
            &eok[..],
            b"\x00\x00\x00\x0d\x0a\x06\x08\x03\x10\x09\x18\x01\x10\x00\xd2\x06\x00"
        );
        let eio = start_tls_refused(&v3::request_header(9, 1, None));
        assert_eq!(
            &eio[..],
            b"\x00\x00\x00\x0b\x0a\x06\x08\x03\x10\x09\x18\x01\x10\xf5\x03"
        );
    }
}

//! v3 protobuf protocol (docs/protocol.md §3): generated message types, validating decoders,
//! frame encoders, and helpers that build requests and responses by the rules of 3.3.
//!
//! Messages come from `proto/BookkeeperProtocol.proto` (proto2) compiled by prost; `bytes`
//! fields are `Bytes`, so decoding a frame slices entry bodies out of it (no copy).
//!
//! Invariants kept here (prost alone does not):
//! * Decoding rejects messages that protobuf-java rejects: absent `required` fields
//!   ([`ProtoError::MissingRequiredField`], checked on the wire) and values of required enum
//!   fields that the enum does not define ([`ProtoError::UnknownEnumValue`]; proto2 enums are
//!   closed, so Java treats such a field as absent). Unknown values of *optional* enum fields
//!   (`ReadRequest.flag`, `AddRequest.flag`) are dropped to `None`, as Java does.
//! * Encoding always writes every required field: prost writes required scalars even when
//!   they equal the default, and required message fields (`header`) are plain struct fields.
use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;

use crate::frame::{frame_len_i32, FRAME_PREFIX_BYTES};
use crate::ProtoError;

mod validate;

#[allow(clippy::all, missing_docs)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/bk.v3.rs"));
}

pub use generated::*;

/// Plugin name a bookie without authentication answers AUTH with (docs/protocol.md §6).
pub const AUTH_DISABLED_PLUGIN_NAME: &str = "AuthDisabledPlugin";
/// `header.priority` the Java client sends for recovery reads/adds; `> 0` means high priority.
pub const DEFAULT_HIGH_PRIORITY_VALUE: u32 = 100;
/// `AddRequest.writeFlags` bit for DEFERRED_SYNC (Java `WriteFlag`, not in the proto).
pub const WRITE_FLAG_DEFERRED_SYNC: i32 = 0x1;

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// Decodes one frame payload (no length prefix) as a v3 `Request`, validating as protobuf-java.
pub fn decode_request(payload: Bytes) -> Result<Request, ProtoError> {
    let mut req = Request::decode(payload.clone())?;
    validate::check_required(&payload, &validate::REQUEST)?;
    check_header(&req.header)?;
    if let Some(r) = req.read_request.as_mut() {
        if r.flag
            .is_some_and(|f| read_request::Flag::try_from(f).is_err())
        {
            r.flag = None;
        }
    }
    if let Some(r) = req.add_request.as_mut() {
        if r.flag
            .is_some_and(|f| add_request::Flag::try_from(f).is_err())
        {
            r.flag = None;
        }
    }
    Ok(req)
}

/// Decodes one frame payload (no length prefix) as a v3 `Response`, validating as
/// protobuf-java.
pub fn decode_response(payload: Bytes) -> Result<Response, ProtoError> {
    let resp = Response::decode(payload.clone())?;
    validate::check_required(&payload, &validate::RESPONSE)?;
    check_header(&resp.header)?;
    check_status("Response.status", resp.status)?;
    let sub_statuses = [
        resp.read_response
            .as_ref()
            .map(|r| ("ReadResponse.status", r.status)),
        resp.add_response
            .as_ref()
            .map(|r| ("AddResponse.status", r.status)),
        resp.write_lac_response
            .as_ref()
            .map(|r| ("WriteLacResponse.status", r.status)),
        resp.read_lac_response
            .as_ref()
            .map(|r| ("ReadLacResponse.status", r.status)),
        resp.get_bookie_info_response
            .as_ref()
            .map(|r| ("GetBookieInfoResponse.status", r.status)),
        resp.force_ledger_response
            .as_ref()
            .map(|r| ("ForceLedgerResponse.status", r.status)),
        resp.get_list_of_entries_of_ledger_response
            .as_ref()
            .map(|r| ("GetListOfEntriesOfLedgerResponse.status", r.status)),
    ];
    for (field, status) in sub_statuses.into_iter().flatten() {
        check_status(field, status)?;
    }
    Ok(resp)
}

/// Decodes a standalone `AuthMessage` (the body of v2 AUTH packets).
pub fn decode_auth_message(bytes: Bytes) -> Result<AuthMessage, ProtoError> {
    let msg = AuthMessage::decode(bytes.clone())?;
    validate::check_required(&bytes, &validate::AUTH_MESSAGE)?;
    Ok(msg)
}

fn check_header(h: &BkPacketHeader) -> Result<(), ProtoError> {
    if ProtocolVersion::try_from(h.version).is_err() {
        return Err(ProtoError::UnknownEnumValue {
            field: "BKPacketHeader.version",
            value: h.version,
        });
    }
    if OperationType::try_from(h.operation).is_err() {
        return Err(ProtoError::UnknownEnumValue {
            field: "BKPacketHeader.operation",
            value: h.operation,
        });
    }
    Ok(())
}

fn check_status(field: &'static str, value: i32) -> Result<(), ProtoError> {
    StatusCode::try_from(value)
        .map(|_| ())
        .map_err(|_| ProtoError::UnknownEnumValue { field, value })
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

fn encode_framed<M: Message>(msg: &M, dst: &mut BytesMut) -> Result<(), ProtoError> {
    let len = msg.encoded_len();
    let n = frame_len_i32(len)?;
    dst.reserve(FRAME_PREFIX_BYTES + len);
    dst.put_i32(n);
    msg.encode(dst)
        .map_err(|e| ProtoError::BadProtobuf(e.to_string()))
}

/// Writes `req` as one frame (prefix included).
pub fn encode_request(req: &Request, dst: &mut BytesMut) -> Result<(), ProtoError> {
    encode_framed(req, dst)
}

/// Writes `resp` as one frame (prefix included).
pub fn encode_response(resp: &Response, dst: &mut BytesMut) -> Result<(), ProtoError> {
    encode_framed(resp, dst)
}

// ---------------------------------------------------------------------------------------------
// Typed views
// ---------------------------------------------------------------------------------------------

/// A v3 request split by operation: what the server dispatches on, and what clients build
/// requests from ([`new_request`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RequestBody {
    ReadEntry(ReadRequest),
    AddEntry(AddRequest),
    Auth(AuthMessage),
    WriteLac(WriteLacRequest),
    ReadLac(ReadLacRequest),
    GetBookieInfo(GetBookieInfoRequest),
    StartTls,
    ForceLedger(ForceLedgerRequest),
    GetListOfEntriesOfLedger(GetListOfEntriesOfLedgerRequest),
    /// RANGE_READ_ENTRY, RANGE_ADD_ENTRY, BATCH_READ_ENTRY, or a value outside the enum: the
    /// Java bookie answers `header copy + EBADREQ` (see [`unsupported_operation_response`]).
    Unsupported(i32),
    /// A supported operation whose sub-message is absent.
    MissingBody(OperationType),
}

impl RequestBody {
    /// The `OperationType` value this body goes with.
    pub fn operation(&self) -> i32 {
        let op = match self {
            RequestBody::ReadEntry(_) => OperationType::ReadEntry,
            RequestBody::AddEntry(_) => OperationType::AddEntry,
            RequestBody::Auth(_) => OperationType::Auth,
            RequestBody::WriteLac(_) => OperationType::WriteLac,
            RequestBody::ReadLac(_) => OperationType::ReadLac,
            RequestBody::GetBookieInfo(_) => OperationType::GetBookieInfo,
            RequestBody::StartTls => OperationType::StartTls,
            RequestBody::ForceLedger(_) => OperationType::ForceLedger,
            RequestBody::GetListOfEntriesOfLedger(_) => OperationType::GetListOfEntriesOfLedger,
            RequestBody::Unsupported(op) => return *op,
            RequestBody::MissingBody(op) => *op,
        };
        op as i32
    }
}

/// Splits a request into its header and the sub-message that `header.operation` names
/// (other sub-messages and `requestContext` are dropped).
pub fn split_request(req: Request) -> (BkPacketHeader, RequestBody) {
    let Request {
        header,
        read_request,
        add_request,
        auth_request,
        write_lac_request,
        read_lac_request,
        get_bookie_info_request,
        start_tls_request,
        force_ledger_request,
        get_list_of_entries_of_ledger_request,
        request_context: _,
    } = req;
    let Ok(op) = OperationType::try_from(header.operation) else {
        return (header, RequestBody::Unsupported(header.operation));
    };
    let missing = RequestBody::MissingBody(op);
    let body = match op {
        OperationType::ReadEntry => read_request.map_or(missing, RequestBody::ReadEntry),
        OperationType::AddEntry => add_request.map_or(missing, RequestBody::AddEntry),
        OperationType::Auth => auth_request.map_or(missing, RequestBody::Auth),
        OperationType::WriteLac => write_lac_request.map_or(missing, RequestBody::WriteLac),
        OperationType::ReadLac => read_lac_request.map_or(missing, RequestBody::ReadLac),
        OperationType::GetBookieInfo => {
            get_bookie_info_request.map_or(missing, RequestBody::GetBookieInfo)
        }
        OperationType::StartTls => start_tls_request.map_or(missing, |_| RequestBody::StartTls),
        OperationType::ForceLedger => {
            force_ledger_request.map_or(missing, RequestBody::ForceLedger)
        }
        OperationType::GetListOfEntriesOfLedger => get_list_of_entries_of_ledger_request
            .map_or(missing, RequestBody::GetListOfEntriesOfLedger),
        OperationType::RangeReadEntry
        | OperationType::RangeAddEntry
        | OperationType::BatchReadEntry => RequestBody::Unsupported(op as i32),
    };
    (header, body)
}

/// Header of a client request: VERSION_THREE, `operation`, `txn_id`, and `priority` if given
/// (the Java client sends [`DEFAULT_HIGH_PRIORITY_VALUE`] for recovery traffic).
pub fn request_header(operation: i32, txn_id: u64, priority: Option<u32>) -> BkPacketHeader {
    BkPacketHeader {
        version: ProtocolVersion::VersionThree as i32,
        operation,
        txn_id,
        priority,
    }
}

/// Builds a request for `body` (header from [`request_header`]); inverse of [`split_request`].
pub fn new_request(txn_id: u64, priority: Option<u32>, body: RequestBody) -> Request {
    let mut req = Request {
        header: request_header(body.operation(), txn_id, priority),
        ..Default::default()
    };
    match body {
        RequestBody::ReadEntry(r) => req.read_request = Some(r),
        RequestBody::AddEntry(r) => req.add_request = Some(r),
        RequestBody::Auth(r) => req.auth_request = Some(r),
        RequestBody::WriteLac(r) => req.write_lac_request = Some(r),
        RequestBody::ReadLac(r) => req.read_lac_request = Some(r),
        RequestBody::GetBookieInfo(r) => req.get_bookie_info_request = Some(r),
        RequestBody::StartTls => req.start_tls_request = Some(StartTlsRequest {}),
        RequestBody::ForceLedger(r) => req.force_ledger_request = Some(r),
        RequestBody::GetListOfEntriesOfLedger(r) => {
            req.get_list_of_entries_of_ledger_request = Some(r)
        }
        RequestBody::Unsupported(_) | RequestBody::MissingBody(_) => {}
    }
    req
}

// ---------------------------------------------------------------------------------------------
// Response construction (docs/protocol.md §3.3)
// ---------------------------------------------------------------------------------------------

/// Header of a normal response: VERSION_THREE, the request's operation and txnId, no
/// priority.
pub fn response_header(req: &BkPacketHeader) -> BkPacketHeader {
    BkPacketHeader {
        version: ProtocolVersion::VersionThree as i32,
        operation: req.operation,
        txn_id: req.txn_id,
        priority: None,
    }
}

/// `header + status` and nothing else. Valid for errors: the client reads the sub-response
/// only when the top-level status is EOK.
pub fn status_only_response(header: BkPacketHeader, status: StatusCode) -> Response {
    Response {
        header,
        status: status as i32,
        ..Default::default()
    }
}

/// Answer to RANGE_READ/RANGE_ADD/BATCH_READ (v3) and unknown operations: request header copied
/// verbatim, status EBADREQ, no sub-response.
pub fn unsupported_operation_response(req: &BkPacketHeader) -> Response {
    status_only_response(*req, StatusCode::Ebadreq)
}

/// Answer to a request refused before authentication: header copied verbatim, EUA.
pub fn unauthenticated_response(req: &BkPacketHeader) -> Response {
    status_only_response(*req, StatusCode::Eua)
}

pub fn read_response(req: &BkPacketHeader, sub: ReadResponse) -> Response {
    Response {
        header: response_header(req),
        status: sub.status,
        read_response: Some(sub),
        ..Default::default()
    }
}

pub fn add_response(
    req: &BkPacketHeader,
    status: StatusCode,
    ledger_id: i64,
    entry_id: i64,
) -> Response {
    Response {
        header: response_header(req),
        status: status as i32,
        add_response: Some(AddResponse {
            status: status as i32,
            ledger_id,
            entry_id,
        }),
        ..Default::default()
    }
}

pub fn write_lac_response(req: &BkPacketHeader, status: StatusCode, ledger_id: i64) -> Response {
    Response {
        header: response_header(req),
        status: status as i32,
        write_lac_response: Some(WriteLacResponse {
            status: status as i32,
            ledger_id,
        }),
        ..Default::default()
    }
}

pub fn read_lac_response(req: &BkPacketHeader, sub: ReadLacResponse) -> Response {
    Response {
        header: response_header(req),
        status: sub.status,
        read_lac_response: Some(sub),
        ..Default::default()
    }
}

pub fn force_ledger_response(req: &BkPacketHeader, status: StatusCode, ledger_id: i64) -> Response {
    Response {
        header: response_header(req),
        status: status as i32,
        force_ledger_response: Some(ForceLedgerResponse {
            status: status as i32,
            ledger_id,
        }),
        ..Default::default()
    }
}

pub fn get_bookie_info_response(req: &BkPacketHeader, sub: GetBookieInfoResponse) -> Response {
    Response {
        header: response_header(req),
        status: sub.status,
        get_bookie_info_response: Some(sub),
        ..Default::default()
    }
}

pub fn list_of_entries_response(
    req: &BkPacketHeader,
    sub: GetListOfEntriesOfLedgerResponse,
) -> Response {
    Response {
        header: response_header(req),
        status: sub.status,
        get_list_of_entries_of_ledger_response: Some(sub),
        ..Default::default()
    }
}

/// START_TLS answer: EOK carries an empty `startTLSResponse`; errors (EBADREQ when TLS is not
/// configured, EIO after a failed handshake) are header + status only.
pub fn start_tls_response(req: &BkPacketHeader, status: StatusCode) -> Response {
    Response {
        header: response_header(req),
        status: status as i32,
        start_tls_response: (status == StatusCode::Eok).then_some(StartTlsResponse {}),
        ..Default::default()
    }
}

/// AUTH answer: header copied verbatim, EOK with the plugin's message.
pub fn auth_response(req: &BkPacketHeader, message: AuthMessage) -> Response {
    Response {
        header: *req,
        status: StatusCode::Eok as i32,
        auth_response: Some(message),
        ..Default::default()
    }
}

/// What a bookie without an auth plugin answers to a v3 AUTH (docs/protocol.md §6).
pub fn auth_disabled_response(req: &BkPacketHeader) -> Response {
    auth_response(
        req,
        AuthMessage {
            auth_plugin_name: AUTH_DISABLED_PLUGIN_NAME.to_string(),
            payload: Bytes::new(),
        },
    )
}

/// An error answer to `header` + `body` (as from [`split_request`]) following 3.3: the
/// sub-response of the operation is included with the same status and the request's ids
/// echoed (some Java completions read it unconditionally); AUTH and unsupported operations
/// get the header copied verbatim and no sub-response.
pub fn error_response(header: &BkPacketHeader, body: &RequestBody, status: StatusCode) -> Response {
    let st = status as i32;
    match body {
        RequestBody::ReadEntry(r) => read_response(
            header,
            ReadResponse {
                status: st,
                ledger_id: r.ledger_id,
                entry_id: r.entry_id,
                ..Default::default()
            },
        ),
        RequestBody::AddEntry(r) => add_response(header, status, r.ledger_id, r.entry_id),
        RequestBody::WriteLac(r) => write_lac_response(header, status, r.ledger_id),
        RequestBody::ReadLac(r) => read_lac_response(
            header,
            ReadLacResponse {
                status: st,
                ledger_id: r.ledger_id,
                ..Default::default()
            },
        ),
        RequestBody::GetBookieInfo(_) => get_bookie_info_response(
            header,
            GetBookieInfoResponse {
                status: st,
                ..Default::default()
            },
        ),
        RequestBody::StartTls => start_tls_response(header, status),
        RequestBody::ForceLedger(r) => force_ledger_response(header, status, r.ledger_id),
        RequestBody::GetListOfEntriesOfLedger(r) => list_of_entries_response(
            header,
            GetListOfEntriesOfLedgerResponse {
                status: st,
                ledger_id: r.ledger_id,
                ..Default::default()
            },
        ),
        RequestBody::Auth(_) | RequestBody::Unsupported(_) => status_only_response(*header, status),
        RequestBody::MissingBody(_) => status_only_response(response_header(header), status),
    }
}

/// Java's mapping of an internal write-callback result to a v3 status for ADD, WRITE_LAC and
/// FORCE_LEDGER completions: EOK stays EOK, EIO stays EIO, anything else becomes EUA.
pub fn write_callback_status(rc: crate::v2::ErrorCode) -> StatusCode {
    match rc {
        crate::v2::ErrorCode::Ok => StatusCode::Eok,
        crate::v2::ErrorCode::Io => StatusCode::Eio,
        _ => StatusCode::Eua,
    }
}

impl BkPacketHeader {
    /// `priority > 0` (Java `RequestUtils.isHighPriority`).
    pub fn is_high_priority(&self) -> bool {
        self.priority.unwrap_or(0) > 0
    }
}

impl ReadRequest {
    /// Long poll: `previousLAC` set and the flag is not FENCE_LEDGER (docs/semantics.md §10.2).
    pub fn is_long_poll(&self) -> bool {
        self.previous_lac.is_some() && self.flag != Some(read_request::Flag::FenceLedger as i32)
    }
    pub fn is_fencing(&self) -> bool {
        self.flag == Some(read_request::Flag::FenceLedger as i32)
    }
    pub fn is_piggyback(&self) -> bool {
        self.flag == Some(read_request::Flag::EntryPiggyback as i32)
    }
}

impl AddRequest {
    pub fn is_recovery(&self) -> bool {
        self.flag == Some(add_request::Flag::RecoveryAdd as i32)
    }
    pub fn is_deferred_sync(&self) -> bool {
        self.write_flags.unwrap_or(0) & WRITE_FLAG_DEFERRED_SYNC != 0
    }
}

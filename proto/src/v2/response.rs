//! v2 responses (bookie -> client): ADDENTRY, READENTRY, BATCH_READ_ENTRY and AUTH, their
//! encoders (the server) and [`Response::decode`] (clients).
//!
//! Guarantees: decoding never panics and copies no entry byte (entries are `Bytes` slices of
//! the frame); unknown error codes are errors. The format of each response is documented
//! above its type.
use bytes::{BufMut, Bytes, BytesMut};

use super::{
    encode_auth, AddRequest, BatchReadRequest, ErrorCode, Flags, OpCode, PacketHeader, ReadRequest,
    BATCH_RESPONSE_PREFIX_BYTES, CURRENT_PROTOCOL_VERSION, RESPONSE_PREFIX_BYTES,
};
use crate::frame::{frame_len_i32, FRAME_PREFIX_BYTES};
use crate::reader::Reader;
use crate::v3;
use crate::ProtoError;

/// ADDENTRY response (docs/protocol.md §2.7), always 28 bytes on the wire.
///
/// Format (payload): `header(4: request version, opcode 1, flags 0) | errorCode(i32) |
/// ledgerId(8) | entryId(8)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddResponse {
    pub version: u8,
    pub error: ErrorCode,
    pub ledger_id: i64,
    pub entry_id: i64,
}

impl AddResponse {
    /// Answer to `req` with `error` (ids and version echoed).
    pub fn for_request(req: &AddRequest, error: ErrorCode) -> Self {
        Self {
            version: req.version,
            error,
            ledger_id: req.ledger_id,
            entry_id: req.entry_id,
        }
    }

    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        dst.reserve(FRAME_PREFIX_BYTES + RESPONSE_PREFIX_BYTES);
        dst.put_i32(RESPONSE_PREFIX_BYTES as i32);
        dst.put_i32(PacketHeader::new(self.version, OpCode::AddEntry, Flags::NONE).to_i32());
        dst.put_i32(self.error.as_i32());
        dst.put_i64(self.ledger_id);
        dst.put_i64(self.entry_id);
        Ok(())
    }
}

/// READENTRY response (docs/protocol.md §2.9).
///
/// Format (payload): `header(4: request version, opcode 2, flags 0) | errorCode(i32) |
/// ledgerId(8) | entryId(8, echo of the requested id, -1 stays -1) | entry (rest; empty unless
/// EOK)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResponse {
    pub version: u8,
    pub error: ErrorCode,
    pub ledger_id: i64,
    pub entry_id: i64,
    pub entry: Bytes,
}

impl ReadResponse {
    /// EOK answer carrying `entry` (ids and version echoed from the request).
    pub fn ok(req: &ReadRequest, entry: Bytes) -> Self {
        Self {
            version: req.version,
            error: ErrorCode::Ok,
            ledger_id: req.ledger_id,
            entry_id: req.entry_id,
            entry,
        }
    }

    /// Error answer (no entry bytes).
    pub fn error(req: &ReadRequest, error: ErrorCode) -> Self {
        Self {
            version: req.version,
            error,
            ledger_id: req.ledger_id,
            entry_id: req.entry_id,
            entry: Bytes::new(),
        }
    }

    /// Writes the frame up to (not including) the entry; write `self.entry` next (zero-copy
    /// send of large entries).
    pub fn encode_head(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        dst.reserve(FRAME_PREFIX_BYTES + RESPONSE_PREFIX_BYTES);
        dst.put_i32(frame_len_i32(RESPONSE_PREFIX_BYTES + self.entry.len())?);
        dst.put_i32(PacketHeader::new(self.version, OpCode::ReadEntry, Flags::NONE).to_i32());
        dst.put_i32(self.error.as_i32());
        dst.put_i64(self.ledger_id);
        dst.put_i64(self.entry_id);
        Ok(())
    }

    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        dst.reserve(FRAME_PREFIX_BYTES + RESPONSE_PREFIX_BYTES + self.entry.len());
        self.encode_head(dst)?;
        dst.put_slice(&self.entry);
        Ok(())
    }
}

/// BATCH_READ_ENTRY response (docs/protocol.md §2.11).
///
/// Format (payload): `header(4: request version, opcode 7, flags 0) | errorCode(i32) |
/// ledgerId(8) | startEntryId(8) | requestId(8) | { len(i32) | entry(len) }*` until the end of
/// the frame; error responses carry no entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchReadResponse {
    pub version: u8,
    pub error: ErrorCode,
    pub ledger_id: i64,
    pub start_entry_id: i64,
    pub request_id: i64,
    /// Entries `start_entry_id, start_entry_id + 1, ...`.
    pub entries: Vec<Bytes>,
}

impl BatchReadResponse {
    /// Answer to `req` (ids, request id and version echoed).
    pub fn for_request(req: &BatchReadRequest, error: ErrorCode, entries: Vec<Bytes>) -> Self {
        Self {
            version: req.version,
            error,
            ledger_id: req.ledger_id,
            start_entry_id: req.start_entry_id,
            request_id: req.request_id,
            entries,
        }
    }

    /// Frame size including the 4-byte prefix: `36 + Σ(4 + len)` (the size accounting of
    /// docs/semantics.md §10.3 starts from this 36).
    pub fn frame_len(&self) -> usize {
        self.entries.iter().fold(
            FRAME_PREFIX_BYTES + BATCH_RESPONSE_PREFIX_BYTES,
            |acc, e| acc.saturating_add(4).saturating_add(e.len()),
        )
    }

    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        let total = self.frame_len();
        let payload = frame_len_i32(total - FRAME_PREFIX_BYTES)?;
        dst.reserve(total);
        dst.put_i32(payload);
        dst.put_i32(PacketHeader::new(self.version, OpCode::BatchReadEntry, Flags::NONE).to_i32());
        dst.put_i32(self.error.as_i32());
        dst.put_i64(self.ledger_id);
        dst.put_i64(self.start_entry_id);
        dst.put_i64(self.request_id);
        for e in &self.entries {
            // each entry is smaller than the whole frame, which fits an i32 (checked above)
            dst.put_i32(frame_len_i32(e.len())?);
            dst.put_slice(e);
        }
        Ok(())
    }
}

/// AUTH response (docs/protocol.md §2.12): `header(4: version, opcode 3, flags 0) | AuthMessage
/// protobuf` – no error code field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthResponse {
    pub version: u8,
    pub message: v3::AuthMessage,
}

impl AuthResponse {
    /// What a bookie without an auth plugin answers to any v2 AUTH (docs/protocol.md §6): header
    /// version 2 (a constant, not the request's), plugin name `AuthDisabledPlugin`, empty
    /// payload.
    pub fn auth_disabled() -> Self {
        Self {
            version: CURRENT_PROTOCOL_VERSION,
            message: v3::AuthMessage {
                auth_plugin_name: v3::AUTH_DISABLED_PLUGIN_NAME.to_string(),
                payload: Bytes::new(),
            },
        }
    }

    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        encode_auth(
            PacketHeader::new(self.version, OpCode::Auth, Flags::NONE),
            &self.message,
            dst,
        )
    }
}

/// A decoded v2 response (what a v2 client receives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    AddEntry(AddResponse),
    ReadEntry(ReadResponse),
    Auth(AuthResponse),
    BatchReadEntry(BatchReadResponse),
}

impl Response {
    /// Decodes one frame payload (no length prefix). Flags are ignored; unknown error codes
    /// and opcodes without a v2 layout are errors.
    pub fn decode(payload: Bytes) -> Result<Self, ProtoError> {
        let mut r = Reader::new(payload);
        let header = PacketHeader::from_i32(r.i32("v2 packet header")?);
        let version = header.version;
        match OpCode::from_u8(header.opcode) {
            Some(OpCode::AddEntry) => {
                let error = read_error_code(&mut r)?;
                let ledger_id = r.i64("ADDENTRY response ledgerId")?;
                let entry_id = r.i64("ADDENTRY response entryId")?;
                Ok(Response::AddEntry(AddResponse {
                    version,
                    error,
                    ledger_id,
                    entry_id,
                }))
            }
            Some(OpCode::ReadEntry) => {
                let error = read_error_code(&mut r)?;
                let ledger_id = r.i64("READENTRY response ledgerId")?;
                let entry_id = r.i64("READENTRY response entryId")?;
                Ok(Response::ReadEntry(ReadResponse {
                    version,
                    error,
                    ledger_id,
                    entry_id,
                    entry: r.rest(),
                }))
            }
            Some(OpCode::Auth) => Ok(Response::Auth(AuthResponse {
                version,
                message: v3::decode_auth_message(r.rest())?,
            })),
            Some(OpCode::BatchReadEntry) => {
                let error = read_error_code(&mut r)?;
                let ledger_id = r.i64("BATCH_READ response ledgerId")?;
                let start_entry_id = r.i64("BATCH_READ response startEntryId")?;
                let request_id = r.i64("BATCH_READ response requestId")?;
                let mut entries = Vec::new();
                while r.remaining() > 0 {
                    let len = r.i32("BATCH_READ response entry length")?;
                    let len = usize::try_from(len).map_err(|_| ProtoError::InvalidLength {
                        what: "BATCH_READ response entry",
                        len: i64::from(len),
                    })?;
                    entries.push(r.bytes(len, "BATCH_READ response entry")?);
                }
                Ok(Response::BatchReadEntry(BatchReadResponse {
                    version,
                    error,
                    ledger_id,
                    start_entry_id,
                    request_id,
                    entries,
                }))
            }
            Some(OpCode::ReadLac | OpCode::WriteLac | OpCode::GetBookieInfo) | None => {
                Err(ProtoError::UnknownOpcode(header.opcode))
            }
        }
    }

    /// Writes the whole frame, prefix included.
    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        match self {
            Response::AddEntry(r) => r.encode(dst),
            Response::ReadEntry(r) => r.encode(dst),
            Response::Auth(r) => r.encode(dst),
            Response::BatchReadEntry(r) => r.encode(dst),
        }
    }

    pub fn opcode(&self) -> OpCode {
        match self {
            Response::AddEntry(_) => OpCode::AddEntry,
            Response::ReadEntry(_) => OpCode::ReadEntry,
            Response::Auth(_) => OpCode::Auth,
            Response::BatchReadEntry(_) => OpCode::BatchReadEntry,
        }
    }
}

fn read_error_code(r: &mut Reader) -> Result<ErrorCode, ProtoError> {
    let code = r.i32("v2 error code")?;
    ErrorCode::from_i32(code).ok_or(ProtoError::UnknownErrorCode(code))
}

//! v2 binary protocol (`BookieProtocol`, protocol.md section 2): packet header, opcodes, flags,
//! error codes, and every request/response the server decodes or the client receives.
//!
//! All decoders take a frame *payload* (without the 4-byte length prefix, as returned by
//! [`crate::FrameDecoder`]) and never panic. All encoders write a complete frame, prefix
//! included. Entry bytes are `Bytes` slices of the received frame: decoding an ADDENTRY or a
//! READENTRY response copies no entry byte.
//!
//! Ids stay `i64` here because the wire carries `-1` sentinels (`LAST_ADD_CONFIRMED`); turning
//! them into `Option` is the server's job once it knows which field it is looking at.
use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;

use crate::entry::{MasterKey, MASTER_KEY_LENGTH};
use crate::frame::{frame_len_i32, FRAME_PREFIX_BYTES};
use crate::reader::Reader;
use crate::v3;
use crate::ProtoError;

/// Protocol version clients send (`CURRENT_PROTOCOL_VERSION`).
pub const CURRENT_PROTOCOL_VERSION: u8 = 2;
/// Oldest version the server still answers (`LOWEST_COMPAT_PROTOCOL_VERSION`).
pub const LOWEST_COMPAT_PROTOCOL_VERSION: u8 = 0;
/// `INVALID_ENTRY_ID` / `LAST_ADD_CONFIRMED`: entry id -1 in a read means "the last entry".
pub const LAST_ADD_CONFIRMED: i64 = -1;
/// Header size of every v2 packet.
pub const PACKET_HEADER_BYTES: usize = 4;
/// ADDENTRY / READENTRY response payload before the entry: header, error code, ledger, entry.
pub const RESPONSE_PREFIX_BYTES: usize = 4 + 4 + 8 + 8;
/// BATCH_READ_ENTRY response payload before the entries (adds the request id).
pub const BATCH_RESPONSE_PREFIX_BYTES: usize = RESPONSE_PREFIX_BYTES + 8;

/// v2 opcodes (protocol.md 2.2). 4, 5, 6 exist in BookKeeper but have no v2 layout: the Java
/// server's decoder throws on them (connection closed), and so does ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpCode {
    AddEntry = 1,
    ReadEntry = 2,
    Auth = 3,
    ReadLac = 4,
    WriteLac = 5,
    GetBookieInfo = 6,
    BatchReadEntry = 7,
}

impl OpCode {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => OpCode::AddEntry,
            2 => OpCode::ReadEntry,
            3 => OpCode::Auth,
            4 => OpCode::ReadLac,
            5 => OpCode::WriteLac,
            6 => OpCode::GetBookieInfo,
            7 => OpCode::BatchReadEntry,
            _ => return None,
        })
    }
}

/// Header flags (low 16 bits of the packet header, protocol.md 2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(pub u16);

impl Flags {
    pub const NONE: Flags = Flags(0x0000);
    /// READENTRY / BATCH_READ_ENTRY: fence the ledger; a 20-byte master key follows.
    pub const DO_FENCING: Flags = Flags(0x0001);
    /// ADDENTRY: add even if the ledger is fenced.
    pub const RECOVERY_ADD: Flags = Flags(0x0002);
    /// Scheduling hint; also lets adds through on a read-only bookie (if configured).
    pub const HIGH_PRIORITY: Flags = Flags(0x0004);

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    pub fn union(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

/// The first 4 bytes of every v2 packet.
///
/// Format: `i32` big-endian = `version(8) | opcode(8) | flags(16)` (bits 31..24, 23..16, 15..0).
/// Legacy version 0: the whole int is the opcode, flags are 0 (decoding takes the opcode from
/// the low byte and ignores bits 15..8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketHeader {
    /// Raw version byte (Java reads it as a signed byte).
    pub version: u8,
    pub opcode: u8,
    pub flags: Flags,
}

impl PacketHeader {
    pub fn new(version: u8, opcode: OpCode, flags: Flags) -> Self {
        Self {
            version,
            opcode: opcode as u8,
            flags,
        }
    }

    pub fn from_i32(h: i32) -> Self {
        let [version, op_hi, f_hi, f_lo] = h.to_be_bytes();
        if version == 0 {
            Self {
                version,
                opcode: f_lo,
                flags: Flags::NONE,
            }
        } else {
            Self {
                version,
                opcode: op_hi,
                flags: Flags(u16::from_be_bytes([f_hi, f_lo])),
            }
        }
    }

    pub fn to_i32(self) -> i32 {
        if self.version == 0 {
            i32::from(self.opcode)
        } else {
            i32::from_be_bytes([
                self.version,
                self.opcode,
                (self.flags.0 >> 8) as u8,
                self.flags.0 as u8,
            ])
        }
    }

    /// Java's check before serving add/read/batch-read: `version` (as a signed byte) in
    /// `LOWEST_COMPAT_PROTOCOL_VERSION..=CURRENT_PROTOCOL_VERSION`; otherwise answer EBADVERSION.
    pub fn version_supported(self) -> bool {
        let v = self.version as i8;
        v >= LOWEST_COMPAT_PROTOCOL_VERSION as i8 && v <= CURRENT_PROTOCOL_VERSION as i8
    }

    /// The master key after READENTRY/BATCH_READ_ENTRY is present only with the fence flag
    /// and version >= 2 (signed comparison, as Java).
    fn carries_fence_key(self) -> bool {
        self.flags.contains(Flags::DO_FENCING) && (self.version as i8) >= 2
    }
}

/// v2 error codes (int32 in responses, protocol.md 2.4) and their v3 `StatusCode` twins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorCode {
    Ok = 0,
    NoLedger = 1,
    NoEntry = 2,
    BadRequest = 100,
    Io = 101,
    Unauthorized = 102,
    BadVersion = 103,
    Fenced = 104,
    ReadOnly = 105,
    TooManyRequests = 106,
    /// The stock Java v2 client cannot decode this code and closes the connection.
    UnknownLedgerState = 107,
}

impl ErrorCode {
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            0 => ErrorCode::Ok,
            1 => ErrorCode::NoLedger,
            2 => ErrorCode::NoEntry,
            100 => ErrorCode::BadRequest,
            101 => ErrorCode::Io,
            102 => ErrorCode::Unauthorized,
            103 => ErrorCode::BadVersion,
            104 => ErrorCode::Fenced,
            105 => ErrorCode::ReadOnly,
            106 => ErrorCode::TooManyRequests,
            107 => ErrorCode::UnknownLedgerState,
            _ => return None,
        })
    }

    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// False only for 107: the stock v2 client maps 0, 1, 2, 100..=106 and closes the
    /// connection on anything else.
    pub fn understood_by_stock_v2_client(self) -> bool {
        self != ErrorCode::UnknownLedgerState
    }

    pub fn to_status(self) -> v3::StatusCode {
        use v3::StatusCode as S;
        match self {
            ErrorCode::Ok => S::Eok,
            ErrorCode::NoLedger => S::Enoledger,
            ErrorCode::NoEntry => S::Enoentry,
            ErrorCode::BadRequest => S::Ebadreq,
            ErrorCode::Io => S::Eio,
            ErrorCode::Unauthorized => S::Eua,
            ErrorCode::BadVersion => S::Ebadversion,
            ErrorCode::Fenced => S::Efenced,
            ErrorCode::ReadOnly => S::Ereadonly,
            ErrorCode::TooManyRequests => S::Etoomanyrequests,
            ErrorCode::UnknownLedgerState => S::Eunknownledgerstate,
        }
    }

    pub fn from_status(s: v3::StatusCode) -> Self {
        use v3::StatusCode as S;
        match s {
            S::Eok => ErrorCode::Ok,
            S::Enoledger => ErrorCode::NoLedger,
            S::Enoentry => ErrorCode::NoEntry,
            S::Ebadreq => ErrorCode::BadRequest,
            S::Eio => ErrorCode::Io,
            S::Eua => ErrorCode::Unauthorized,
            S::Ebadversion => ErrorCode::BadVersion,
            S::Efenced => ErrorCode::Fenced,
            S::Ereadonly => ErrorCode::ReadOnly,
            S::Etoomanyrequests => ErrorCode::TooManyRequests,
            S::Eunknownledgerstate => ErrorCode::UnknownLedgerState,
        }
    }
}

impl From<ErrorCode> for v3::StatusCode {
    fn from(e: ErrorCode) -> Self {
        e.to_status()
    }
}

impl From<v3::StatusCode> for ErrorCode {
    fn from(s: v3::StatusCode) -> Self {
        ErrorCode::from_status(s)
    }
}

// ---------------------------------------------------------------------------------------------
// Requests (client -> bookie)
// ---------------------------------------------------------------------------------------------

/// ADDENTRY request (protocol.md 2.6).
///
/// Format (payload): `header(4) | master key(20) | entry(rest)` where the entry starts with
/// `ledgerId(8) | entryId(8)` (section 5). `ledger_id`/`entry_id` are copies of the entry's
/// first 16 bytes, peeked at decode time; the encoder writes only `entry`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddRequest {
    pub version: u8,
    pub flags: Flags,
    pub master_key: MasterKey,
    pub ledger_id: i64,
    pub entry_id: i64,
    /// The whole entry (section 5), stored and returned unchanged by the bookie.
    pub entry: Bytes,
}

impl AddRequest {
    /// Version 2 add of `entry`; fails if the entry is shorter than its 16-byte id prefix.
    pub fn new(flags: Flags, master_key: MasterKey, entry: Bytes) -> Result<Self, ProtoError> {
        let (ledger_id, entry_id) = peek_entry_ids(&entry)?;
        Ok(Self {
            version: CURRENT_PROTOCOL_VERSION,
            flags,
            master_key,
            ledger_id,
            entry_id,
            entry,
        })
    }

    pub fn is_recovery(&self) -> bool {
        self.flags.contains(Flags::RECOVERY_ADD)
    }

    pub fn is_high_priority(&self) -> bool {
        self.flags.contains(Flags::HIGH_PRIORITY)
    }

    fn header(&self) -> PacketHeader {
        PacketHeader::new(self.version, OpCode::AddEntry, self.flags)
    }

    /// Writes the frame up to (not including) the entry bytes; write `self.entry` next.
    /// Lets a client send multi-MiB entries without copying them.
    pub fn encode_head(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        let payload = PACKET_HEADER_BYTES + MASTER_KEY_LENGTH + self.entry.len();
        dst.reserve(FRAME_PREFIX_BYTES + PACKET_HEADER_BYTES + MASTER_KEY_LENGTH);
        dst.put_i32(frame_len_i32(payload)?);
        dst.put_i32(self.header().to_i32());
        dst.put_slice(&self.master_key.0);
        Ok(())
    }

    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        dst.reserve(FRAME_PREFIX_BYTES + 24 + self.entry.len());
        self.encode_head(dst)?;
        dst.put_slice(&self.entry);
        Ok(())
    }
}

/// READENTRY request (protocol.md 2.8).
///
/// Format (payload): `header(4) | ledgerId(8) | entryId(8) | [master key(20)]`; the key is
/// present iff `flags` has DO_FENCING and version >= 2. Trailing bytes are ignored (as Java).
/// Invariant for encoding: `master_key.is_some()` exactly when the header says a key follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub version: u8,
    pub flags: Flags,
    pub ledger_id: i64,
    /// `-1` = the last entry the bookie has.
    pub entry_id: i64,
    pub master_key: Option<MasterKey>,
}

impl ReadRequest {
    /// Plain read (flags 0x0000).
    pub fn new(ledger_id: i64, entry_id: i64) -> Self {
        Self {
            version: CURRENT_PROTOCOL_VERSION,
            flags: Flags::NONE,
            ledger_id,
            entry_id,
            master_key: None,
        }
    }

    /// Fencing read: DO_FENCING plus `extra_flags` (e.g. HIGH_PRIORITY for recovery reads).
    pub fn fencing(
        ledger_id: i64,
        entry_id: i64,
        master_key: MasterKey,
        extra_flags: Flags,
    ) -> Self {
        Self {
            version: CURRENT_PROTOCOL_VERSION,
            flags: Flags::DO_FENCING.union(extra_flags),
            ledger_id,
            entry_id,
            master_key: Some(master_key),
        }
    }

    pub fn is_fencing(&self) -> bool {
        self.flags.contains(Flags::DO_FENCING)
    }

    pub fn is_high_priority(&self) -> bool {
        self.flags.contains(Flags::HIGH_PRIORITY)
    }

    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        let key_len = if self.master_key.is_some() {
            MASTER_KEY_LENGTH
        } else {
            0
        };
        dst.reserve(FRAME_PREFIX_BYTES + 20 + key_len);
        dst.put_i32(frame_len_i32(PACKET_HEADER_BYTES + 16 + key_len)?);
        dst.put_i32(PacketHeader::new(self.version, OpCode::ReadEntry, self.flags).to_i32());
        dst.put_i64(self.ledger_id);
        dst.put_i64(self.entry_id);
        if let Some(k) = &self.master_key {
            dst.put_slice(&k.0);
        }
        Ok(())
    }
}

/// BATCH_READ_ENTRY request (opcode 7, protocol.md 2.10).
///
/// Format (payload): `header(4) | ledgerId(8) | startEntryId(8) | requestId(8) |
/// maxCount(i32) | maxSize(i64) | [master key(20)]` (key as in [`ReadRequest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchReadRequest {
    pub version: u8,
    pub flags: Flags,
    pub ledger_id: i64,
    pub start_entry_id: i64,
    /// Matches the response to the request (the client's txn-id counter).
    pub request_id: i64,
    /// `<= 0` means unlimited.
    pub max_count: i32,
    /// Bytes; the server caps it with its `maxBatchReadSize`.
    pub max_size: i64,
    pub master_key: Option<MasterKey>,
}

impl BatchReadRequest {
    pub fn is_fencing(&self) -> bool {
        self.flags.contains(Flags::DO_FENCING)
    }

    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        let key_len = if self.master_key.is_some() {
            MASTER_KEY_LENGTH
        } else {
            0
        };
        dst.reserve(FRAME_PREFIX_BYTES + 40 + key_len);
        dst.put_i32(frame_len_i32(PACKET_HEADER_BYTES + 36 + key_len)?);
        dst.put_i32(PacketHeader::new(self.version, OpCode::BatchReadEntry, self.flags).to_i32());
        dst.put_i64(self.ledger_id);
        dst.put_i64(self.start_entry_id);
        dst.put_i64(self.request_id);
        dst.put_i32(self.max_count);
        dst.put_i64(self.max_size);
        if let Some(k) = &self.master_key {
            dst.put_slice(&k.0);
        }
        Ok(())
    }
}

/// AUTH request (opcode 3, protocol.md 2.12). Format (payload): `header(4) | AuthMessage
/// protobuf (rest)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRequest {
    pub version: u8,
    pub flags: Flags,
    pub message: v3::AuthMessage,
}

impl AuthRequest {
    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), ProtoError> {
        encode_auth(
            PacketHeader::new(self.version, OpCode::Auth, self.flags),
            &self.message,
            dst,
        )
    }
}

/// A decoded v2 request (only the opcodes the Java server decodes: 1, 2, 3, 7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    AddEntry(AddRequest),
    ReadEntry(ReadRequest),
    Auth(AuthRequest),
    BatchReadEntry(BatchReadRequest),
}

impl Request {
    /// Decodes one frame payload (no length prefix).
    pub fn decode(payload: Bytes) -> Result<Self, ProtoError> {
        let mut r = Reader::new(payload);
        let header = PacketHeader::from_i32(r.i32("v2 packet header")?);
        let version = header.version;
        let flags = header.flags;
        match OpCode::from_u8(header.opcode) {
            Some(OpCode::AddEntry) => {
                let master_key = MasterKey(r.array::<MASTER_KEY_LENGTH>("ADDENTRY master key")?);
                let entry = r.rest();
                let (ledger_id, entry_id) = peek_entry_ids(&entry)?;
                Ok(Request::AddEntry(AddRequest {
                    version,
                    flags,
                    master_key,
                    ledger_id,
                    entry_id,
                    entry,
                }))
            }
            Some(OpCode::ReadEntry) => {
                let ledger_id = r.i64("READENTRY ledgerId")?;
                let entry_id = r.i64("READENTRY entryId")?;
                let master_key = if header.carries_fence_key() {
                    Some(MasterKey(
                        r.array::<MASTER_KEY_LENGTH>("READENTRY master key")?,
                    ))
                } else {
                    None
                };
                Ok(Request::ReadEntry(ReadRequest {
                    version,
                    flags,
                    ledger_id,
                    entry_id,
                    master_key,
                }))
            }
            Some(OpCode::Auth) => {
                let message = v3::decode_auth_message(r.rest())?;
                Ok(Request::Auth(AuthRequest {
                    version,
                    flags,
                    message,
                }))
            }
            Some(OpCode::BatchReadEntry) => {
                let ledger_id = r.i64("BATCH_READ ledgerId")?;
                let start_entry_id = r.i64("BATCH_READ startEntryId")?;
                let request_id = r.i64("BATCH_READ requestId")?;
                let max_count = r.i32("BATCH_READ maxCount")?;
                let max_size = r.i64("BATCH_READ maxSize")?;
                let master_key = if header.carries_fence_key() {
                    Some(MasterKey(
                        r.array::<MASTER_KEY_LENGTH>("BATCH_READ master key")?,
                    ))
                } else {
                    None
                };
                Ok(Request::BatchReadEntry(BatchReadRequest {
                    version,
                    flags,
                    ledger_id,
                    start_entry_id,
                    request_id,
                    max_count,
                    max_size,
                    master_key,
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
            Request::AddEntry(r) => r.encode(dst),
            Request::ReadEntry(r) => r.encode(dst),
            Request::Auth(r) => r.encode(dst),
            Request::BatchReadEntry(r) => r.encode(dst),
        }
    }

    pub fn opcode(&self) -> OpCode {
        match self {
            Request::AddEntry(_) => OpCode::AddEntry,
            Request::ReadEntry(_) => OpCode::ReadEntry,
            Request::Auth(_) => OpCode::Auth,
            Request::BatchReadEntry(_) => OpCode::BatchReadEntry,
        }
    }

    /// The request's version byte (responses echo it, except the auth-disabled reply).
    pub fn version(&self) -> u8 {
        match self {
            Request::AddEntry(r) => r.version,
            Request::ReadEntry(r) => r.version,
            Request::Auth(r) => r.version,
            Request::BatchReadEntry(r) => r.version,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Responses (bookie -> client)
// ---------------------------------------------------------------------------------------------

/// ADDENTRY response (protocol.md 2.7), always 28 bytes on the wire.
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

/// READENTRY response (protocol.md 2.9).
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

/// BATCH_READ_ENTRY response (protocol.md 2.11).
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
    /// semantics.md 10.3 starts from this 36).
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

/// AUTH response (protocol.md 2.12): `header(4: version, opcode 3, flags 0) | AuthMessage
/// protobuf` – no error code field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthResponse {
    pub version: u8,
    pub message: v3::AuthMessage,
}

impl AuthResponse {
    /// What a bookie without an auth plugin answers to any v2 AUTH (protocol.md 6): header
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

/// The ledger and entry ids at the front of an entry (what the Java decoder peeks).
fn peek_entry_ids(entry: &[u8]) -> Result<(i64, i64), ProtoError> {
    match entry.get(..16) {
        Some(ids) => {
            let mut l = [0u8; 8];
            let mut e = [0u8; 8];
            l.copy_from_slice(&ids[..8]);
            e.copy_from_slice(&ids[8..]);
            Ok((i64::from_be_bytes(l), i64::from_be_bytes(e)))
        }
        None => Err(ProtoError::Truncated {
            what: "ADDENTRY entry ids",
            need: 16,
            have: entry.len(),
        }),
    }
}

fn encode_auth(
    header: PacketHeader,
    message: &v3::AuthMessage,
    dst: &mut BytesMut,
) -> Result<(), ProtoError> {
    let body_len = message.encoded_len();
    dst.reserve(FRAME_PREFIX_BYTES + PACKET_HEADER_BYTES + body_len);
    dst.put_i32(frame_len_i32(PACKET_HEADER_BYTES + body_len)?);
    dst.put_i32(header.to_i32());
    message
        .encode(dst)
        .map_err(|e| ProtoError::BadProtobuf(e.to_string()))
}

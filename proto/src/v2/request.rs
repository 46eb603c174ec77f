//! v2 requests (client -> bookie): ADDENTRY, READENTRY, BATCH_READ_ENTRY and AUTH, their
//! encoders (clients) and [`Request::decode`] (the server).
//!
//! Guarantees: decoding never panics and copies no entry byte (the entry of an ADDENTRY is
//! a `Bytes` slice of the frame); only the opcodes the Java server decodes (1, 2, 3, 7) are
//! accepted. The format of each request is documented above its type.
use bytes::{BufMut, Bytes, BytesMut};

use super::{
    encode_auth, Flags, OpCode, PacketHeader, CURRENT_PROTOCOL_VERSION, PACKET_HEADER_BYTES,
};
use crate::entry::{MasterKey, MASTER_KEY_LENGTH};
use crate::frame::{frame_len_i32, FRAME_PREFIX_BYTES};
use crate::reader::Reader;
use crate::v3;
use crate::ProtoError;

/// ADDENTRY request (docs/protocol.md §2.6).
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

/// READENTRY request (docs/protocol.md §2.8).
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

/// BATCH_READ_ENTRY request (opcode 7, docs/protocol.md §2.10).
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

/// AUTH request (opcode 3, docs/protocol.md §2.12). Format (payload): `header(4) | AuthMessage
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

//! The one error type of bk-proto.
//!
//! Every decoder in this crate returns `ProtoError` instead of panicking. bk-proto does no I/O,
//! so there is no I/O variant; the variants fall into two groups:
//! * invalid input (everything except the two below): the peer sent bytes that are not a valid
//!   frame/packet/message. The server closes the connection (that is what the Java bookie
//!   does: no error response is sent for undecodable frames).
//! * corruption ([`ProtoError::DigestMismatch`], [`ProtoError::UnexpectedEntry`]): a
//!   syntactically valid entry whose digest or ids do not match; only clients verify these.
use thiserror::Error;

/// Why bytes could not be decoded (or a message could not be encoded).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtoError {
    /// Frame length prefix plus the 4-byte prefix itself exceeds the configured maximum
    /// (Netty `TooLongFrameException` semantics: rejected when `N + 4 > max`).
    #[error(
        "frame of {len} bytes (including the 4-byte length prefix) exceeds the maximum of {max}"
    )]
    FrameTooLarge { len: u64, max: u64 },
    /// Frame length prefix is negative.
    #[error("negative frame length {0}")]
    NegativeLength(i32),
    /// A fixed-layout field runs past the end of the packet.
    #[error("truncated {what}: need {need} bytes, have {have}")]
    Truncated {
        what: &'static str,
        need: usize,
        have: usize,
    },
    /// A length field inside a packet is negative or larger than what follows it.
    #[error("invalid length {len} for {what}")]
    InvalidLength { what: &'static str, len: i64 },
    /// v2 opcode that the decoder does not handle (anything but 1, 2, 3, 7 on the server side;
    /// 4, 5, 6 are defined by BookKeeper but have no v2 layout).
    #[error("unknown or unsupported v2 opcode {0}")]
    UnknownOpcode(u8),
    /// v2 response error code outside the table of docs/protocol.md §2.4.
    #[error("unknown v2 error code {0}")]
    UnknownErrorCode(i32),
    /// Not a well-formed protobuf message (prost's decode error, as text).
    #[error("malformed protobuf: {0}")]
    BadProtobuf(String),
    /// A proto2 `required` field is absent (protobuf-java rejects such messages; so do we).
    /// The name is `Message.field`.
    #[error("missing required field {0}")]
    MissingRequiredField(&'static str),
    /// A required enum field holds a value its (closed, proto2) enum does not define;
    /// protobuf-java treats that field as absent, so the message is rejected.
    #[error("unknown value {value} for enum field {field}")]
    UnknownEnumValue { field: &'static str, value: i32 },
    /// On a connection still in v3 mode the frame parsed neither as v3 nor as v2.
    #[error("frame is neither a v3 request ({v3}) nor a v2 packet ({v2})")]
    NeitherV3NorV2 {
        v3: Box<ProtoError>,
        v2: Box<ProtoError>,
    },
    /// Corruption: an entry's (or LAC body's) digest does not match its contents.
    #[error("digest mismatch in entry {entry_id} of ledger {ledger_id}")]
    DigestMismatch { ledger_id: i64, entry_id: i64 },
    /// Corruption: an entry carries other ids than the ones it was read for.
    #[error("expected entry {expected_entry_id} of ledger {expected_ledger_id}, got entry {entry_id} of ledger {ledger_id}")]
    UnexpectedEntry {
        expected_ledger_id: i64,
        expected_entry_id: i64,
        ledger_id: i64,
        entry_id: i64,
    },
    /// Unknown digest type number (DataFormats `DigestType`: 1..=4).
    #[error("unknown digest type {0}")]
    UnknownDigestType(i32),
}

impl ProtoError {
    /// True for the corruption variants (valid framing, but the entry content is wrong).
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            ProtoError::DigestMismatch { .. } | ProtoError::UnexpectedEntry { .. }
        )
    }
}

impl From<prost::DecodeError> for ProtoError {
    fn from(e: prost::DecodeError) -> Self {
        ProtoError::BadProtobuf(e.to_string())
    }
}

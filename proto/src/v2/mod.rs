//! v2 binary protocol (`BookieProtocol`, docs/protocol.md §2): packet header, opcodes, flags,
//! error codes, and every request/response the server decodes or the client receives.
//!
//! All decoders take a frame *payload* (without the 4-byte length prefix, as returned by
//! [`crate::FrameDecoder`]) and never panic. All encoders write a complete frame, prefix
//! included. Entry bytes are `Bytes` slices of the received frame: decoding an ADDENTRY or a
//! READENTRY response copies no entry byte.
//!
//! Ids stay `i64` here because the wire carries `-1` sentinels (`LAST_ADD_CONFIRMED`); turning
//! them into `Option` is the server's job once it knows which field it is looking at.
//!
//! Where the code lives:
//! - `header`: [`OpCode`], [`Flags`] and [`PacketHeader`], the first 4 bytes of every packet;
//! - `error_code`: [`ErrorCode`], the v2 error codes and their v3 `StatusCode` twins;
//! - `request`: the requests (client -> bookie) and [`Request`], the server's decoder;
//! - `response`: the responses (bookie -> client) and [`Response`], the client's decoder;
//! - this file: the protocol constants and the AUTH encoding both directions share.
use bytes::{BufMut, BytesMut};
use prost::Message;

use crate::frame::{frame_len_i32, FRAME_PREFIX_BYTES};
use crate::v3;
use crate::ProtoError;

mod error_code;
mod header;
mod request;
mod response;

pub use error_code::ErrorCode;
pub use header::{Flags, OpCode, PacketHeader};
pub use request::{AddRequest, AuthRequest, BatchReadRequest, ReadRequest, Request};
pub use response::{AddResponse, AuthResponse, BatchReadResponse, ReadResponse, Response};

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

//! bk-proto: the BookKeeper wire protocol with no I/O, shared by the bookie server (decode
//! requests, encode responses) and the clients in benches/ and tests/ (encode requests, decode
//! responses).
//!
//! Map:
//! * [`frame`]: 4-byte length-prefixed framing with a Netty-compatible size limit.
//! * [`v2`]: the binary protocol (ADDENTRY, READENTRY, AUTH, BATCH_READ_ENTRY).
//! * [`v3`]: the protobuf protocol (prost types + required-field validation + builders).
//! * [`entry`]: entry metadata, digests (CRC32, CRC32C, HMAC-SHA1, DUMMY), master key, LAC body.
//! * [`availability`]: the GET_LIST_OF_ENTRIES_OF_LEDGER bitmap-like encoding.
//! * this file: per-connection v2/v3 detection ([`decode_request`]) and client-side decoders.
//!
//! Invariants: no decoder panics on any input (length checks before every slice, no unchecked
//! arithmetic on wire values); payloads are `Bytes` views of the received frame (entries are
//! never copied on decode); encoders always write proto2 required fields.
//!
//! Acceptance follows protobuf-java (BookKeeper <= 4.17, the client Pulsar bundles): missing
//! required fields and unknown values of required enums are rejected. Known difference: a
//! proto2 `string` field (`authPluginName`, `ContextPair`) holding invalid UTF-8 is rejected by
//! prost but accepted by protobuf-java; stock Java clients cannot produce such strings.
pub mod availability;
pub mod entry;
mod error;
pub mod frame;
mod reader;
pub mod v2;
pub mod v3;

use bytes::Bytes;

pub use entry::{DigestManager, DigestType, EntryHeader, MasterKey};
pub use error::ProtoError;
pub use frame::{FrameDecoder, DEFAULT_MAX_FRAME_BYTES};

/// A request decoded by the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    V2(v2::Request),
    V3(Box<v3::Request>),
}

/// Which protocol a server connection speaks, decided the way the Java bookie decides it.
///
/// Decision: **sticky per connection, exactly as Java** (`BookieProtoEncoding.RequestDecoder`):
/// a connection starts in v3 mode; each frame is first parsed as a v3 `Request`; the first
/// frame that fails to parse switches the connection to v2 *permanently* and is decoded as v2;
/// afterwards every frame is v2. Why not per frame by the first byte: sticky detection is
/// what stock clients are tested against, it gives the same answers for every byte sequence
/// (e.g. a v2 packet with version byte 3..=7 gets EBADVERSION instead of a closed connection,
/// a v3 frame after v2 traffic closes the connection as in Java), and it costs nothing extra on
/// v2 connections after the first frame. As a fast path, a frame whose first byte is 0x00..=0x07
/// (protobuf field number 0, never valid v3) skips the v3 attempt; the outcome is the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnProtocolState {
    /// No v2 frame seen yet: frames are tried as v3 first.
    #[default]
    V3,
    /// A frame failed v3 parsing: every later frame is v2.
    V2,
}

/// Server side: decodes one frame payload (from [`FrameDecoder`]) according to and updating
/// the connection's protocol state. An error means: close the connection without a response.
pub fn decode_request(frame: Bytes, state: &mut ConnProtocolState) -> Result<Request, ProtoError> {
    match *state {
        ConnProtocolState::V2 => v2::Request::decode(frame).map(Request::V2),
        ConnProtocolState::V3 => {
            let v3_err = if frame.first().is_some_and(|&b| b < 0x08) {
                ProtoError::BadProtobuf("first byte has field number 0 (a v2 packet)".into())
            } else {
                match v3::decode_request(frame.clone()) {
                    Ok(r) => return Ok(Request::V3(Box::new(r))),
                    Err(e) => e,
                }
            };
            *state = ConnProtocolState::V2;
            v2::Request::decode(frame)
                .map(Request::V2)
                .map_err(|v2_err| ProtoError::NeitherV3NorV2 {
                    v3: Box::new(v3_err),
                    v2: Box::new(v2_err),
                })
        }
    }
}

/// Client side (v2 connections): decodes one response frame payload.
pub fn decode_response_v2(frame: Bytes) -> Result<v2::Response, ProtoError> {
    v2::Response::decode(frame)
}

/// Client side (v3 connections): decodes and validates one response frame payload.
pub fn decode_response_v3(frame: Bytes) -> Result<v3::Response, ProtoError> {
    v3::decode_response(frame)
}

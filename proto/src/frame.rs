//! Length-prefixed framing shared by v2 and v3, both directions (docs/protocol.md §1.2).
//!
//! Format: `N: i32 big-endian` (length of what follows, not counting these 4 bytes), then `N`
//! payload bytes (a v2 packet or one serialized v3 protobuf message).
//!
//! Invariants:
//! * The limit `max_frame_bytes` counts the 4-byte prefix, like Netty's
//!   `LengthFieldBasedFrameDecoder(maxFrameSize, 0, 4, 0, 4)`: a frame is rejected when
//!   `N + 4 > max_frame_bytes`. It is rejected as soon as the prefix is seen (Netty `failFast`),
//!   before the payload arrives, so a peer cannot make us buffer more than the limit.
//! * A negative `N` is an error. After any error the connection must be closed (the Java
//!   bookie closes it without a response); calling `decode` again returns the same error.
//! * Decoded frames are `Bytes` views into the receive buffer: no payload byte is copied.
use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::ProtoError;

/// Size of the length prefix.
pub const FRAME_PREFIX_BYTES: usize = 4;

/// Pulsar's frame size: `maxMessageSize (5 MiB) + MESSAGE_SIZE_FRAME_PADDING (10240)`, which
/// Pulsar sets both on its BookKeeper client and in its shipped bookkeeper.conf
/// (`nettyMaxFrameSizeBytes=5253120`).
pub const PULSAR_MAX_FRAME_BYTES: usize = 5_253_120;

/// Default limit, counting the 4-byte prefix (Netty semantics): Pulsar's 5,253,120 plus
/// 1 MiB - 10,240 of headroom = 6 MiB. Java's own default is 5 MiB (5,242,880), which
/// would reject frames that a Pulsar broker configured with 5,253,120 may send; a
/// configured `nettyMaxFrameSizeBytes` should override this.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 6 * 1024 * 1024;

/// Largest limit accepted: the prefix is an `i32`, so `N <= i32::MAX`.
pub const MAX_MAX_FRAME_BYTES: usize = i32::MAX as usize + FRAME_PREFIX_BYTES;

/// Smallest capacity step [`FrameDecoder::decode`] reserves while a frame is incomplete.
const RESERVE_STEP_MIN_BYTES: usize = 64 * 1024;

/// Splits a byte stream into frames. Holds only the limit; the receive buffer belongs to the
/// caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameDecoder {
    max_frame_bytes: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_BYTES)
    }
}

impl FrameDecoder {
    /// `max_frame_bytes` counts the 4-byte prefix (Netty semantics). Values above
    /// [`MAX_MAX_FRAME_BYTES`] are clamped to it; values below 4 reject every frame.
    pub fn new(max_frame_bytes: usize) -> Self {
        Self {
            max_frame_bytes: max_frame_bytes.min(MAX_MAX_FRAME_BYTES),
        }
    }

    /// The limit, counting the prefix.
    pub fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// Takes one complete frame's payload off the front of `buf`.
    ///
    /// * `Ok(Some(payload))`: the payload without its prefix, a zero-copy view of `buf`'s memory.
    /// * `Ok(None)`: more bytes are needed; `buf` is untouched except that its capacity may
    ///   grow (at most to twice what it holds, or by 64 KiB, never past the announced frame).
    /// * `Err`: negative or oversized length; close the connection.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Bytes>, ProtoError> {
        let Some(len) = self.peek_len(buf)? else {
            return Ok(None);
        };
        let total = len + FRAME_PREFIX_BYTES;
        if buf.len() < total {
            // Grow geometrically with what has actually arrived instead of reserving the
            // announced size at once: 4 bytes from a peer must not pin `max_frame_bytes` of
            // memory. Amortized copying stays O(frame size).
            let missing = total - buf.len();
            buf.reserve(missing.min(buf.len().max(RESERVE_STEP_MIN_BYTES)));
            return Ok(None);
        }
        buf.advance(FRAME_PREFIX_BYTES);
        Ok(Some(buf.split_to(len).freeze()))
    }

    /// Validates the prefix at the front of `buf`, returning the payload length `N` once the
    /// 4 prefix bytes are there.
    pub fn peek_len(&self, buf: &[u8]) -> Result<Option<usize>, ProtoError> {
        let Some(prefix) = buf.get(..FRAME_PREFIX_BYTES) else {
            return Ok(None);
        };
        let n = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        if n < 0 {
            return Err(ProtoError::NegativeLength(n));
        }
        let len = n as usize; // n >= 0 and i32 fits usize on every supported target
        let total = len as u64 + FRAME_PREFIX_BYTES as u64;
        if total > self.max_frame_bytes as u64 {
            return Err(ProtoError::FrameTooLarge {
                len: total,
                max: self.max_frame_bytes as u64,
            });
        }
        Ok(Some(len))
    }
}

/// Writes the 4-byte length prefix for a payload of `payload_len` bytes.
pub fn put_frame_prefix(dst: &mut BytesMut, payload_len: usize) -> Result<(), ProtoError> {
    let n = frame_len_i32(payload_len)?;
    dst.put_i32(n);
    Ok(())
}

/// Appends `payload` as one frame (prefix + bytes).
pub fn encode_frame(payload: &[u8], dst: &mut BytesMut) -> Result<(), ProtoError> {
    let n = frame_len_i32(payload.len())?;
    dst.reserve(FRAME_PREFIX_BYTES + payload.len());
    dst.put_i32(n);
    dst.put_slice(payload);
    Ok(())
}

/// Converts a payload length to the prefix value, rejecting lengths that do not fit an i32.
pub(crate) fn frame_len_i32(payload_len: usize) -> Result<i32, ProtoError> {
    i32::try_from(payload_len).map_err(|_| ProtoError::FrameTooLarge {
        len: payload_len as u64 + FRAME_PREFIX_BYTES as u64,
        max: MAX_MAX_FRAME_BYTES as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(n: i32, payload: &[u8]) -> BytesMut {
        let mut b = BytesMut::new();
        b.put_i32(n);
        b.put_slice(payload);
        b
    }

    #[test]
    fn needs_four_bytes_for_the_prefix() {
        let d = FrameDecoder::default();
        let mut b = BytesMut::from(&[0u8, 0, 0][..]);
        assert_eq!(d.decode(&mut b), Ok(None));
        assert_eq!(b.len(), 3);
    }

    #[test]
    fn waits_for_the_whole_payload_then_splits_without_copy() {
        let d = FrameDecoder::default();
        let mut b = framed(5, b"hel");
        assert_eq!(d.decode(&mut b), Ok(None));
        b.put_slice(b"lo\x00\x00");
        let base = b.as_ptr() as usize;
        let f = d.decode(&mut b).unwrap().unwrap();
        assert_eq!(&f[..], b"hello");
        assert_eq!(
            f.as_ptr() as usize,
            base + 4,
            "payload must be a view, not a copy"
        );
        assert_eq!(&b[..], &[0, 0]);
    }

    #[test]
    fn a_bare_prefix_does_not_pin_the_announced_size() {
        let d = FrameDecoder::default();
        let mut b = framed((DEFAULT_MAX_FRAME_BYTES - 4) as i32, b"");
        assert_eq!(d.decode(&mut b), Ok(None));
        assert!(b.capacity() < 1024 * 1024, "capacity {}", b.capacity());
    }

    #[test]
    fn empty_frame_is_allowed() {
        let d = FrameDecoder::default();
        let mut b = framed(0, b"");
        assert_eq!(d.decode(&mut b).unwrap().unwrap().len(), 0);
        assert!(b.is_empty());
    }

    #[test]
    fn negative_length_is_rejected() {
        let d = FrameDecoder::default();
        let mut b = framed(-1, b"");
        assert_eq!(d.decode(&mut b), Err(ProtoError::NegativeLength(-1)));
        let mut b = framed(i32::MIN, b"");
        assert_eq!(d.decode(&mut b), Err(ProtoError::NegativeLength(i32::MIN)));
    }

    #[test]
    fn limit_counts_the_prefix_like_netty() {
        let d = FrameDecoder::new(100);
        let mut ok = framed(96, &[7u8; 96]);
        assert_eq!(d.decode(&mut ok).unwrap().unwrap().len(), 96);
        let mut too_big = framed(97, &[]);
        assert_eq!(
            d.decode(&mut too_big),
            Err(ProtoError::FrameTooLarge { len: 101, max: 100 })
        );
        // rejected from the prefix alone, before the payload arrives
        assert_eq!(too_big.len(), 4);
    }

    #[test]
    fn default_accepts_pulsar_frames() {
        let d = FrameDecoder::default();
        let payload = vec![0xabu8; PULSAR_MAX_FRAME_BYTES];
        let mut b = BytesMut::new();
        encode_frame(&payload, &mut b).unwrap();
        let f = d.decode(&mut b).unwrap().unwrap();
        assert_eq!(f.len(), PULSAR_MAX_FRAME_BYTES);
        // and N = i32::MAX is rejected by the default limit
        let mut huge = framed(i32::MAX, &[]);
        assert!(matches!(
            d.decode(&mut huge),
            Err(ProtoError::FrameTooLarge { .. })
        ));
    }

    #[test]
    fn sixty_four_mib_frames_with_a_raised_limit() {
        const MIB64: usize = 64 * 1024 * 1024;
        let d = FrameDecoder::new(MIB64 + FRAME_PREFIX_BYTES);
        let payload = vec![0x5au8; MIB64];
        let mut b = BytesMut::new();
        encode_frame(&payload, &mut b).unwrap();
        encode_frame(b"next", &mut b).unwrap();
        let f = d.decode(&mut b).unwrap().unwrap();
        assert_eq!(f.len(), MIB64);
        assert!(f.iter().all(|&x| x == 0x5a));
        assert_eq!(&d.decode(&mut b).unwrap().unwrap()[..], b"next");
        // one byte over
        let d = FrameDecoder::new(MIB64 + FRAME_PREFIX_BYTES - 1);
        let mut b = framed(MIB64 as i32, &[]);
        assert!(matches!(
            d.decode(&mut b),
            Err(ProtoError::FrameTooLarge { .. })
        ));
    }

    #[test]
    fn byte_at_a_time_stream_yields_the_same_frames() {
        let d = FrameDecoder::default();
        let mut wire = BytesMut::new();
        for p in [&b"a"[..], b"", b"bcdef", &[0u8; 300]] {
            encode_frame(p, &mut wire).unwrap();
        }
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for &byte in wire.iter() {
            buf.put_u8(byte);
            while let Some(f) = d.decode(&mut buf).unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got.len(), 4);
        assert_eq!(&got[2][..], b"bcdef");
        assert_eq!(got[3].len(), 300);
    }
}

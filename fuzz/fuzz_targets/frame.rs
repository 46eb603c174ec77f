//! Fuzz target `frame`: the length-prefixed frame decoder (bk_proto::FrameDecoder).
//!
//! Input: byte 0 picks the chunk size the stream arrives in, byte 1 the frame limit; the rest
//! is the byte stream. Checks: no panic, every frame respects the limit, and the frames plus
//! their prefixes are exactly a prefix of the stream (nothing lost, duplicated or reordered).
#![no_main]
use bk_proto::frame::FRAME_PREFIX_BYTES;
use bk_proto::FrameDecoder;
use bytes::BytesMut;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (Some(&chunk), Some(&limit)) = (data.first(), data.get(1)) else {
        return;
    };
    let stream = &data[2..];
    let chunk = usize::from(chunk).max(1);
    let max = usize::from(limit) * 16;
    let d = FrameDecoder::new(max);
    let mut buf = BytesMut::new();
    let mut rebuilt = Vec::new();
    'feed: for piece in stream.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match d.decode(&mut buf) {
                Ok(Some(f)) => {
                    assert!(f.len() + FRAME_PREFIX_BYTES <= max, "frame over the limit");
                    rebuilt.extend_from_slice(&(f.len() as i32).to_be_bytes());
                    rebuilt.extend_from_slice(&f);
                }
                Ok(None) => break,
                Err(_) => break 'feed,
            }
        }
    }
    assert_eq!(&stream[..rebuilt.len()], &rebuilt[..], "frames differ from the stream");
});

//! Fuzz target `v2_response`: the client's v2 response decoder. Input: one frame payload.
//! Checks: no panic; a decoded response re-encodes and decodes to the same value.
#![no_main]
use bk_proto::{decode_response_v2, FrameDecoder};
use bytes::{Bytes, BytesMut};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(resp) = decode_response_v2(Bytes::copy_from_slice(data)) {
        let mut out = BytesMut::new();
        resp.encode(&mut out).expect("re-encode");
        let frame = FrameDecoder::new(usize::MAX)
            .decode(&mut out)
            .expect("frame")
            .expect("complete");
        assert_eq!(decode_response_v2(frame).expect("decode again"), resp);
    }
});

//! Fuzz target `v2_request`: the server's v2 request decoder, directly and through the
//! per-connection v2/v3 detection. Input: one frame payload (no length prefix).
//! Checks: no panic; whatever decodes re-encodes to a frame that decodes to the same value.
#![no_main]
use bk_proto::{decode_request, v2, ConnProtocolState, FrameDecoder};
use bytes::{Bytes, BytesMut};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let payload = Bytes::copy_from_slice(data);
    let mut st = ConnProtocolState::V2;
    let via_state = decode_request(payload.clone(), &mut st);
    let direct = v2::Request::decode(payload);
    assert_eq!(via_state.is_ok(), direct.is_ok());
    if let Ok(req) = direct {
        let mut out = BytesMut::new();
        req.encode(&mut out).expect("re-encode");
        let frame = FrameDecoder::new(usize::MAX)
            .decode(&mut out)
            .expect("frame")
            .expect("complete");
        assert_eq!(v2::Request::decode(frame).expect("decode again"), req);
    }
});

//! Fuzz target `v3_response`: the client's v3 response decoder (prost + required-field and
//! closed-enum validation). Input: one frame payload. Checks: no panic; a decoded response
//! re-encodes and decodes to the same value; availability bytes inside never panic.
#![no_main]
use bk_proto::{availability, decode_response_v3, v3, FrameDecoder};
use bytes::{Bytes, BytesMut};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(resp) = decode_response_v3(Bytes::copy_from_slice(data)) {
        let mut out = BytesMut::new();
        v3::encode_response(&resp, &mut out).expect("re-encode");
        let frame = FrameDecoder::new(usize::MAX)
            .decode(&mut out)
            .expect("frame")
            .expect("complete");
        assert_eq!(decode_response_v3(frame).expect("decode again"), resp);
        if let Some(bytes) = resp
            .get_list_of_entries_of_ledger_response
            .and_then(|r| r.availability_of_entries_of_ledger)
        {
            let _ = availability::decode_availability(&bytes);
        }
    }
});

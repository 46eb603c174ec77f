//! Fuzz target `v3_request`: the server's v3 request decoder (prost + required-field and
//! closed-enum validation) and the sticky detection on a fresh connection. Input: one frame
//! payload. Checks: no panic; a decoded request re-encodes and decodes to the same value; the
//! op split never panics. The server's codec, in every TLS / authorization state
//! (docs/tls.md §1, §3): no panic, and a connection not authorized yet never gets an
//! operation through to the handlers.
#![no_main]
use bk_proto::{decode_request, v3, ConnProtocolState, FrameDecoder, Request};
use bookie::server::codec::{self, ConnectionProtocol, Decoded, Security};
use bytes::{Bytes, BytesMut};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let payload = Bytes::copy_from_slice(data);
    for state in 0..8u8 {
        let security = Security {
            tls: state & 1 != 0,
            tls_active: state & 2 != 0,
            unauthorized: state & 4 != 0,
        };
        let decoded = codec::decode(
            payload.clone(),
            &mut ConnectionProtocol::default(),
            security,
        );
        if security.unauthorized {
            assert!(!matches!(decoded, Decoded::Op { .. }), "op before authorization");
        }
        if !security.tls {
            assert!(!matches!(decoded, Decoded::StartTls(_)), "START_TLS without TLS");
        }
    }
    let mut st = ConnProtocolState::default();
    let detected = decode_request(payload.clone(), &mut st);
    if let Ok(req) = v3::decode_request(payload) {
        assert!(matches!(detected, Ok(Request::V3(_))), "valid v3 must be detected as v3");
        let mut out = BytesMut::new();
        v3::encode_request(&req, &mut out).expect("re-encode");
        let frame = FrameDecoder::new(usize::MAX)
            .decode(&mut out)
            .expect("frame")
            .expect("complete");
        assert_eq!(v3::decode_request(frame).expect("decode again"), req);
        let (header, body) = v3::split_request(req);
        let _ = v3::error_response(&header, &body, v3::StatusCode::Ebadreq);
    }
});

//! Property tests: decode(encode(x)) == x for every v2 and v3 message shape, and no decoder
//! panics on arbitrary or mutated input. Case count: proptest's default (256) unless
//! PROPTEST_CASES is set, e.g. `PROPTEST_CASES=20000 cargo test -p bk-proto --test prop`.
use bk_proto::availability::{decode_availability, encode_availability, is_entry_available};
use bk_proto::v2::{self, ErrorCode, Flags};
use bk_proto::v3::{self, RequestBody, StatusCode};
use bk_proto::{
    decode_request, ConnProtocolState, DigestManager, DigestType, EntryHeader, FrameDecoder,
    MasterKey, Request,
};
use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

fn payload_of(frame: &[u8]) -> Bytes {
    let mut buf = BytesMut::from(frame);
    let p = FrameDecoder::new(usize::MAX)
        .decode(&mut buf)
        .unwrap()
        .unwrap();
    assert!(buf.is_empty());
    p
}

fn bytes_strategy(max: usize) -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

fn master_key() -> impl Strategy<Value = MasterKey> {
    any::<[u8; 20]>().prop_map(MasterKey)
}

/// (version, flags) pairs as they survive the header: version 0 has no flags.
fn version_flags() -> impl Strategy<Value = (u8, Flags)> {
    prop_oneof![
        Just((0u8, Flags::NONE)),
        (1u8..=255, any::<u16>()).prop_map(|(v, f)| (v, Flags(f))),
        (Just(2u8), prop::sample::select(vec![0u16, 1, 2, 4, 5, 6]))
            .prop_map(|(v, f)| (v, Flags(f))),
    ]
}

fn fence_key_present(version: u8, flags: Flags) -> bool {
    flags.contains(Flags::DO_FENCING) && (version as i8) >= 2
}

fn v2_request() -> impl Strategy<Value = v2::Request> {
    let add = (
        version_flags(),
        master_key(),
        proptest::collection::vec(any::<u8>(), 16..200),
    )
        .prop_map(|((version, flags), master_key, entry)| {
            let mut a = v2::AddRequest::new(flags, master_key, Bytes::from(entry)).unwrap();
            a.version = version;
            v2::Request::AddEntry(a)
        });
    let read = (version_flags(), any::<i64>(), any::<i64>(), master_key()).prop_map(
        |((version, flags), ledger_id, entry_id, k)| {
            v2::Request::ReadEntry(v2::ReadRequest {
                version,
                flags,
                ledger_id,
                entry_id,
                master_key: fence_key_present(version, flags).then_some(k),
            })
        },
    );
    let batch = (
        version_flags(),
        any::<(i64, i64, i64, i32, i64)>(),
        master_key(),
    )
        .prop_map(
            |(
                (version, flags),
                (ledger_id, start_entry_id, request_id, max_count, max_size),
                k,
            )| {
                v2::Request::BatchReadEntry(v2::BatchReadRequest {
                    version,
                    flags,
                    ledger_id,
                    start_entry_id,
                    request_id,
                    max_count,
                    max_size,
                    master_key: fence_key_present(version, flags).then_some(k),
                })
            },
        );
    let auth = (version_flags(), ".{0,20}", bytes_strategy(64)).prop_map(
        |((version, flags), name, payload)| {
            v2::Request::Auth(v2::AuthRequest {
                version,
                flags,
                message: v3::AuthMessage {
                    auth_plugin_name: name,
                    payload,
                },
            })
        },
    );
    prop_oneof![add, read, batch, auth]
}

fn error_code() -> impl Strategy<Value = ErrorCode> {
    (0i32..=107).prop_filter_map("defined", ErrorCode::from_i32)
}

fn v2_response() -> impl Strategy<Value = v2::Response> {
    let add = (any::<u8>(), error_code(), any::<i64>(), any::<i64>()).prop_map(
        |(version, error, ledger_id, entry_id)| {
            v2::Response::AddEntry(v2::AddResponse {
                version,
                error,
                ledger_id,
                entry_id,
            })
        },
    );
    let read = (
        any::<u8>(),
        error_code(),
        any::<i64>(),
        any::<i64>(),
        bytes_strategy(200),
    )
        .prop_map(|(version, error, ledger_id, entry_id, entry)| {
            v2::Response::ReadEntry(v2::ReadResponse {
                version,
                error,
                ledger_id,
                entry_id,
                entry,
            })
        });
    let batch = (
        any::<u8>(),
        error_code(),
        any::<(i64, i64, i64)>(),
        proptest::collection::vec(bytes_strategy(50), 0..8),
    )
        .prop_map(
            |(version, error, (ledger_id, start_entry_id, request_id), entries)| {
                v2::Response::BatchReadEntry(v2::BatchReadResponse {
                    version,
                    error,
                    ledger_id,
                    start_entry_id,
                    request_id,
                    entries,
                })
            },
        );
    let auth = (any::<u8>(), ".{0,20}", bytes_strategy(64)).prop_map(|(version, name, payload)| {
        v2::Response::Auth(v2::AuthResponse {
            version,
            message: v3::AuthMessage {
                auth_plugin_name: name,
                payload,
            },
        })
    });
    prop_oneof![add, read, batch, auth]
}

fn status() -> impl Strategy<Value = StatusCode> {
    error_code().prop_map(StatusCode::from)
}

fn v3_body() -> impl Strategy<Value = RequestBody> {
    prop_oneof![
        (
            prop::option::of(1i32..=2),
            any::<i64>(),
            any::<i64>(),
            prop::option::of(bytes_strategy(24)),
            prop::option::of(any::<i64>()),
            prop::option::of(any::<i64>())
        )
            .prop_map(
                |(flag, ledger_id, entry_id, master_key, previous_lac, time_out)| {
                    RequestBody::ReadEntry(v3::ReadRequest {
                        flag,
                        ledger_id,
                        entry_id,
                        master_key,
                        previous_lac,
                        time_out,
                    })
                }
            ),
        (
            prop::option::of(Just(1i32)),
            any::<i64>(),
            any::<i64>(),
            bytes_strategy(24),
            bytes_strategy(300),
            prop::option::of(any::<i32>())
        )
            .prop_map(
                |(flag, ledger_id, entry_id, master_key, body, write_flags)| {
                    RequestBody::AddEntry(v3::AddRequest {
                        flag,
                        ledger_id,
                        entry_id,
                        master_key,
                        body,
                        write_flags,
                    })
                }
            ),
        (".{0,10}", bytes_strategy(30)).prop_map(|(n, p)| RequestBody::Auth(v3::AuthMessage {
            auth_plugin_name: n,
            payload: p
        })),
        (
            any::<i64>(),
            any::<i64>(),
            bytes_strategy(24),
            bytes_strategy(40)
        )
            .prop_map(|(ledger_id, lac, master_key, body)| RequestBody::WriteLac(
                v3::WriteLacRequest {
                    ledger_id,
                    lac,
                    master_key,
                    body
                }
            )),
        any::<i64>().prop_map(|ledger_id| RequestBody::ReadLac(v3::ReadLacRequest { ledger_id })),
        prop::option::of(any::<i64>()).prop_map(|requested| RequestBody::GetBookieInfo(
            v3::GetBookieInfoRequest { requested }
        )),
        Just(RequestBody::StartTls),
        any::<i64>()
            .prop_map(|ledger_id| RequestBody::ForceLedger(v3::ForceLedgerRequest { ledger_id })),
        any::<i64>().prop_map(|ledger_id| RequestBody::GetListOfEntriesOfLedger(
            v3::GetListOfEntriesOfLedgerRequest { ledger_id }
        )),
        prop::sample::select(vec![3i32, 4, 12]).prop_map(RequestBody::Unsupported),
    ]
}

fn v3_request() -> impl Strategy<Value = v3::Request> {
    (
        any::<u64>(),
        prop::option::of(any::<u32>()),
        v3_body(),
        proptest::collection::vec((".{0,5}", ".{0,5}"), 0..3),
    )
        .prop_map(|(txn, prio, body, ctx)| {
            let mut r = v3::new_request(txn, prio, body);
            r.request_context = ctx
                .into_iter()
                .map(|(key, value)| v3::ContextPair { key, value })
                .collect();
            r
        })
}

fn v3_response() -> impl Strategy<Value = v3::Response> {
    (v3_request(), status(), bytes_strategy(100), any::<i64>()).prop_map(
        |(req, status, body, n)| {
            let (h, b) = v3::split_request(req);
            let st = status as i32;
            match b {
                RequestBody::ReadEntry(r) => v3::read_response(
                    &h,
                    v3::ReadResponse {
                        status: st,
                        ledger_id: r.ledger_id,
                        entry_id: r.entry_id,
                        body: Some(body),
                        max_lac: Some(n),
                        lac_update_timestamp: r.time_out,
                    },
                ),
                RequestBody::ReadLac(r) => v3::read_lac_response(
                    &h,
                    v3::ReadLacResponse {
                        status: st,
                        ledger_id: r.ledger_id,
                        lac_body: Some(body.clone()),
                        last_entry_body: (n % 2 == 0).then_some(body),
                    },
                ),
                RequestBody::GetBookieInfo(_) => v3::get_bookie_info_response(
                    &h,
                    v3::GetBookieInfoResponse {
                        status: st,
                        total_disk_capacity: Some(n),
                        free_disk_space: None,
                    },
                ),
                RequestBody::Auth(m) => v3::auth_response(&h, m),
                RequestBody::GetListOfEntriesOfLedger(r) => v3::list_of_entries_response(
                    &h,
                    v3::GetListOfEntriesOfLedgerResponse {
                        status: st,
                        ledger_id: r.ledger_id,
                        availability_of_entries_of_ledger: Some(body),
                    },
                ),
                other => v3::error_response(&h, &other, status),
            }
        },
    )
}

proptest! {
    #[test]
    fn v2_requests_round_trip(req in v2_request()) {
        let mut b = BytesMut::new();
        req.encode(&mut b).unwrap();
        let p = payload_of(&b);
        prop_assert_eq!(&v2::Request::decode(p.clone()).unwrap(), &req);
        // and through the server's detection, unless the version byte happens to make the
        // packet a valid protobuf (never for versions 0..=7)
        if p[0] < 8 {
            let mut st = ConnProtocolState::default();
            prop_assert_eq!(decode_request(p, &mut st).unwrap(), Request::V2(req));
        }
    }

    #[test]
    fn v2_responses_round_trip(resp in v2_response()) {
        let mut b = BytesMut::new();
        resp.encode(&mut b).unwrap();
        prop_assert_eq!(v2::Response::decode(payload_of(&b)).unwrap(), resp);
    }

    #[test]
    fn v3_requests_round_trip(req in v3_request()) {
        let mut b = BytesMut::new();
        v3::encode_request(&req, &mut b).unwrap();
        let p = payload_of(&b);
        prop_assert_eq!(&v3::decode_request(p.clone()).unwrap(), &req);
        let mut st = ConnProtocolState::default();
        prop_assert_eq!(decode_request(p, &mut st).unwrap(), Request::V3(Box::new(req.clone())));
        // split/new are inverse for what new_request builds
        let (h, body) = v3::split_request(req.clone());
        let mut again = v3::new_request(h.txn_id, h.priority, body);
        again.request_context = req.request_context.clone();
        prop_assert_eq!(again, req);
    }

    #[test]
    fn v3_responses_round_trip(resp in v3_response()) {
        let mut b = BytesMut::new();
        v3::encode_response(&resp, &mut b).unwrap();
        prop_assert_eq!(v3::decode_response(payload_of(&b)).unwrap(), resp);
    }

    #[test]
    fn decoders_never_panic_on_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let b = Bytes::from(data.clone());
        let _ = v2::Request::decode(b.clone());
        let _ = v2::Response::decode(b.clone());
        let _ = v3::decode_request(b.clone());
        let _ = v3::decode_response(b.clone());
        let _ = v3::decode_auth_message(b.clone());
        for mut st in [ConnProtocolState::V3, ConnProtocolState::V2] {
            let _ = decode_request(b.clone(), &mut st);
        }
        let mut buf = BytesMut::from(&data[..]);
        let d = FrameDecoder::new(256);
        while let Ok(Some(_)) = d.decode(&mut buf) {}
        let _ = EntryHeader::parse(&data);
        let _ = bk_proto::entry::parse_lac_body(&data);
        let _ = DigestManager::new(DigestType::Hmac, b"").verify_entry(&b);
        let _ = DigestManager::new(DigestType::Crc32, b"").verify_lac_body(&data);
        let _ = decode_availability(&data);
    }

    #[test]
    fn decoders_never_panic_on_mutated_valid_frames(
        req in v3_request(),
        v2req in v2_request(),
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        for bytes in [
            { let mut b = BytesMut::new(); v3::encode_request(&req, &mut b).unwrap(); b },
            { let mut b = BytesMut::new(); v2req.encode(&mut b).unwrap(); b },
        ] {
            let mut m = bytes[4..].to_vec();
            if m.is_empty() { continue; }
            for (i, x) in &flips {
                let at = i.index(m.len());
                m[at] ^= x;
            }
            let truncated = &m[..cut.index(m.len() + 1).min(m.len())];
            for input in [&m[..], truncated] {
                let b = Bytes::copy_from_slice(input);
                let _ = v3::decode_request(b.clone());
                let _ = v3::decode_response(b.clone());
                let _ = v2::Request::decode(b.clone());
                let _ = v2::Response::decode(b.clone());
                let mut st = ConnProtocolState::default();
                let _ = decode_request(b, &mut st);
            }
        }
    }

    #[test]
    fn frames_split_anywhere_reassemble(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 1..6),
        chunk in 1usize..50,
    ) {
        let mut wire = BytesMut::new();
        for p in &payloads {
            bk_proto::frame::encode_frame(p, &mut wire).unwrap();
        }
        let d = FrameDecoder::default();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for c in wire.chunks(chunk) {
            buf.extend_from_slice(c);
            while let Some(f) = d.decode(&mut buf).unwrap() {
                got.push(f.to_vec());
            }
        }
        prop_assert_eq!(got, payloads);
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn entries_verify_with_their_digest(
        t in prop::sample::select(vec![DigestType::Crc32, DigestType::Hmac, DigestType::Crc32c, DigestType::Dummy]),
        pw in proptest::collection::vec(any::<u8>(), 0..10),
        h in any::<(i64, i64, i64, i64)>(),
        payload in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let dm = DigestManager::new(t, &pw);
        let header = EntryHeader { ledger_id: h.0, entry_id: h.1, last_add_confirmed: h.2, length: h.3 };
        let e = dm.build_entry(&header, &payload);
        let (got, p) = dm.verify_entry_for(&e, h.0, h.1).unwrap();
        prop_assert_eq!(got, header);
        prop_assert_eq!(&p[..], &payload[..]);
        prop_assert_eq!(dm.verify_lac_body(&dm.build_lac_body(h.0, h.2)).unwrap(), (h.0, h.2));
    }

    #[test]
    fn availability_says_exactly_which_entries_exist(
        mut ids in proptest::collection::vec(0i64..300, 0..80),
    ) {
        ids.sort_unstable();
        let groups = decode_availability(&encode_availability(ids.iter().copied())).unwrap();
        for e in -1..310 {
            prop_assert_eq!(is_entry_available(&groups, e), ids.binary_search(&e).is_ok(), "entry {}", e);
        }
    }
}

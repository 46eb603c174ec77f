//! Byte-exact protocol tests: every request and response type is encoded and compared with the
//! bytes documented in docs/protocol.md §2.13, §3.5 and §6 or, where that
//! file has no hex example, with bytes written out by hand from its layout tables; then the
//! bytes are decoded back through the same path the server/client uses (FrameDecoder, then
//! the decoder) and compared with the original value.
use bk_proto::v2::{self, ErrorCode, Flags};
use bk_proto::v3::{self, OperationType, RequestBody, StatusCode};
use bk_proto::{
    decode_request, decode_response_v2, decode_response_v3, ConnProtocolState, DigestManager,
    DigestType, EntryHeader, FrameDecoder, MasterKey, ProtoError, Request,
};
use bytes::{Bytes, BytesMut};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(s.len().is_multiple_of(2), "odd hex: {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Splits a whole frame with the real frame decoder and checks nothing is left over.
fn payload(frame: &[u8]) -> Bytes {
    let mut buf = BytesMut::from(frame);
    let p = FrameDecoder::default()
        .decode(&mut buf)
        .expect("frame")
        .expect("complete frame");
    assert!(buf.is_empty(), "trailing bytes after the frame");
    p
}

fn key() -> MasterKey {
    MasterKey::from_password(b"")
}

const KEY_HEX: &str = "850bf1071c5e3d8c24235676f8816ae0cbe2f14f";

/// The 41-byte entry of docs/protocol.md §2.13: ledger 5, entry 0, LAC -1, length 5, CRC32C, "hello".
const ENTRY_HEX: &str = "0000000000000005 0000000000000000 ffffffffffffffff 0000000000000005
                         b548f369 68656c6c6f";

fn hello_entry() -> Bytes {
    DigestManager::new(DigestType::Crc32c, b"").build_entry(
        &EntryHeader {
            ledger_id: 5,
            entry_id: 0,
            last_add_confirmed: -1,
            length: 5,
        },
        b"hello",
    )
}

fn encode_v2_req(r: &v2::Request) -> Vec<u8> {
    let mut b = BytesMut::new();
    r.encode(&mut b).unwrap();
    b.to_vec()
}

fn encode_v2_resp(r: &v2::Response) -> Vec<u8> {
    let mut b = BytesMut::new();
    r.encode(&mut b).unwrap();
    b.to_vec()
}

fn encode_v3_req(r: &v3::Request) -> Vec<u8> {
    let mut b = BytesMut::new();
    v3::encode_request(r, &mut b).unwrap();
    b.to_vec()
}

fn encode_v3_resp(r: &v3::Response) -> Vec<u8> {
    let mut b = BytesMut::new();
    v3::encode_response(r, &mut b).unwrap();
    b.to_vec()
}

/// Server-side decode of a v2 request frame through the connection state machine.
fn server_decode_v2(frame: &[u8]) -> v2::Request {
    let mut st = ConnProtocolState::default();
    match decode_request(payload(frame), &mut st).expect("decodes") {
        Request::V2(r) => {
            assert_eq!(st, ConnProtocolState::V2);
            r
        }
        Request::V3(r) => panic!("decoded as v3: {r:?}"),
    }
}

fn server_decode_v3(frame: &[u8]) -> v3::Request {
    let mut st = ConnProtocolState::default();
    match decode_request(payload(frame), &mut st).expect("decodes") {
        Request::V3(r) => {
            assert_eq!(st, ConnProtocolState::V3);
            *r
        }
        Request::V2(r) => panic!("decoded as v2: {r:?}"),
    }
}

// ------------------------------------------------------------------------------------------
// v2 (docs/protocol.md §2.13 and the layouts of §2.6-§2.12)
// ------------------------------------------------------------------------------------------

#[test]
fn v2_addentry_request_matches_2_13() {
    let expected = hex(&format!("00000041 02010000 {KEY_HEX} {ENTRY_HEX}"));
    assert_eq!(expected.len(), 69);
    let req =
        v2::Request::AddEntry(v2::AddRequest::new(Flags::NONE, key(), hello_entry()).unwrap());
    assert_eq!(to_hex(&encode_v2_req(&req)), to_hex(&expected));

    let frame = payload(&expected);
    let decoded = server_decode_v2(&expected);
    assert_eq!(decoded, req);
    let v2::Request::AddEntry(add) = decoded else {
        unreachable!()
    };
    assert_eq!((add.ledger_id, add.entry_id), (5, 0));
    assert!(!add.is_recovery());
    // zero-copy: the entry points into the frame
    let _ = frame;
    let buf = Bytes::from(expected[4..].to_vec());
    let v2::Request::AddEntry(add) = v2::Request::decode(buf.clone()).unwrap() else {
        unreachable!()
    };
    assert_eq!(
        add.entry.as_ptr(),
        buf[24..].as_ptr(),
        "entry must not be copied"
    );
}

#[test]
fn v2_recovery_add_carries_flags_0006() {
    let req = v2::Request::AddEntry(
        v2::AddRequest::new(
            Flags::RECOVERY_ADD.union(Flags::HIGH_PRIORITY),
            key(),
            hello_entry(),
        )
        .unwrap(),
    );
    let bytes = encode_v2_req(&req);
    assert_eq!(to_hex(&bytes[4..8]), "02010006");
    let v2::Request::AddEntry(add) = server_decode_v2(&bytes) else {
        unreachable!()
    };
    assert!(add.is_recovery() && add.is_high_priority());
}

#[test]
fn v2_add_encode_head_plus_entry_equals_encode() {
    let add = v2::AddRequest::new(Flags::NONE, key(), hello_entry()).unwrap();
    let mut head = BytesMut::new();
    add.encode_head(&mut head).unwrap();
    head.extend_from_slice(&add.entry);
    assert_eq!(head.to_vec(), encode_v2_req(&v2::Request::AddEntry(add)));
}

#[test]
fn v2_addentry_response_matches_2_13() {
    let expected = hex("00000018 02010000 00000000 0000000000000005 0000000000000000");
    assert_eq!(expected.len(), 28);
    let add = v2::AddRequest::new(Flags::NONE, key(), hello_entry()).unwrap();
    let resp = v2::Response::AddEntry(v2::AddResponse::for_request(&add, ErrorCode::Ok));
    assert_eq!(encode_v2_resp(&resp), expected);
    assert_eq!(decode_response_v2(payload(&expected)).unwrap(), resp);
}

#[test]
fn v2_readentry_request_matches_2_13() {
    let expected = hex("00000014 02020000 0000000000000005 0000000000000000");
    let req = v2::Request::ReadEntry(v2::ReadRequest::new(5, 0));
    assert_eq!(encode_v2_req(&req), expected);
    assert_eq!(server_decode_v2(&expected), req);
}

#[test]
fn v2_fencing_lac_read_matches_2_13() {
    let expected = hex(&format!(
        "00000028 02020001 0000000000000005 ffffffffffffffff {KEY_HEX}"
    ));
    let req = v2::Request::ReadEntry(v2::ReadRequest::fencing(5, -1, key(), Flags::NONE));
    assert_eq!(encode_v2_req(&req), expected);
    let decoded = server_decode_v2(&expected);
    assert_eq!(decoded, req);
    let v2::Request::ReadEntry(r) = decoded else {
        unreachable!()
    };
    assert!(r.is_fencing() && r.master_key == Some(key()));
}

#[test]
fn v2_fence_flag_without_key_space_is_truncated_and_version_1_has_no_key() {
    // fence flag, version 2, key missing -> Java throws (connection closed)
    let short = hex("00000014 02020001 0000000000000005 ffffffffffffffff");
    assert!(matches!(
        v2::Request::decode(payload(&short)),
        Err(ProtoError::Truncated { .. })
    ));
    // fence flag with version 1: no key is read; the server answers EUA (semantics)
    let v1 = hex("00000014 01020001 0000000000000005 ffffffffffffffff");
    let v2::Request::ReadEntry(r) = v2::Request::decode(payload(&v1)).unwrap() else {
        unreachable!()
    };
    assert!(r.is_fencing() && r.master_key.is_none());
    // trailing bytes after a plain read are ignored, as in Java
    let trailing = hex("00000016 02020000 0000000000000005 0000000000000000 abcd");
    assert_eq!(
        v2::Request::decode(payload(&trailing)).unwrap(),
        v2::Request::ReadEntry(v2::ReadRequest::new(5, 0))
    );
}

#[test]
fn v2_readentry_response_enoentry_matches_2_13() {
    let expected = hex("00000018 02020000 00000002 0000000000000005 0000000000000007");
    let resp = v2::Response::ReadEntry(v2::ReadResponse::error(
        &v2::ReadRequest::new(5, 7),
        ErrorCode::NoEntry,
    ));
    assert_eq!(encode_v2_resp(&resp), expected);
    assert_eq!(decode_response_v2(payload(&expected)).unwrap(), resp);
}

#[test]
fn v2_readentry_response_eok_matches_2_13() {
    let expected = hex(&format!(
        "00000041 02020000 00000000 0000000000000005 0000000000000000 {ENTRY_HEX}"
    ));
    let resp = v2::Response::ReadEntry(v2::ReadResponse::ok(
        &v2::ReadRequest::new(5, 0),
        hello_entry(),
    ));
    assert_eq!(encode_v2_resp(&resp), expected);
    let p = payload(&expected);
    let decoded = decode_response_v2(p.clone()).unwrap();
    assert_eq!(decoded, resp);
    let v2::Response::ReadEntry(r) = decoded else {
        unreachable!()
    };
    assert_eq!(
        r.entry.as_ptr(),
        p[24..].as_ptr(),
        "entry must not be copied"
    );
    // the client verifies what it read
    let dm = DigestManager::new(DigestType::Crc32c, b"");
    assert_eq!(
        &dm.verify_entry_for(&r.entry, 5, 0).unwrap().1[..],
        b"hello"
    );
    // last-entry reads echo -1
    let last = v2::ReadResponse::ok(&v2::ReadRequest::new(5, -1), hello_entry());
    assert_eq!(last.entry_id, -1);
}

#[test]
fn v2_batch_read_request_matches_2_13() {
    let expected = hex(
        "00000028 02070000 0000000000000005 0000000000000000 000000000000002a 00000064 0000000000500000",
    );
    let req = v2::Request::BatchReadEntry(v2::BatchReadRequest {
        version: 2,
        flags: Flags::NONE,
        ledger_id: 5,
        start_entry_id: 0,
        request_id: 42,
        max_count: 100,
        max_size: 5 * 1024 * 1024,
        master_key: None,
    });
    assert_eq!(encode_v2_req(&req), expected);
    assert_eq!(server_decode_v2(&expected), req);
}

#[test]
fn v2_fencing_batch_read_request_layout_2_10() {
    // N = 60 with the fence flag (recovery batch reads send 0x0005)
    let expected = hex(&format!(
        "0000003c 02070005 0000000000000005 0000000000000003 0000000000000001 00000000 0000000000001000 {KEY_HEX}"
    ));
    let req = v2::Request::BatchReadEntry(v2::BatchReadRequest {
        version: 2,
        flags: Flags::DO_FENCING.union(Flags::HIGH_PRIORITY),
        ledger_id: 5,
        start_entry_id: 3,
        request_id: 1,
        max_count: 0,
        max_size: 4096,
        master_key: Some(key()),
    });
    assert_eq!(encode_v2_req(&req), expected);
    assert_eq!(server_decode_v2(&expected), req);
}

#[test]
fn v2_batch_read_response_layout_2_11() {
    // two entries "abc" and "" (length 0) after the 36-byte prefix
    let expected = hex(
        "0000002b 02070000 00000000 0000000000000005 0000000000000003 000000000000002a
         00000003 616263 00000000",
    );
    let req = v2::BatchReadRequest {
        version: 2,
        flags: Flags::NONE,
        ledger_id: 5,
        start_entry_id: 3,
        request_id: 42,
        max_count: 0,
        max_size: 1 << 20,
        master_key: None,
    };
    let resp = v2::BatchReadResponse::for_request(
        &req,
        ErrorCode::Ok,
        vec![Bytes::from_static(b"abc"), Bytes::new()],
    );
    assert_eq!(resp.frame_len(), expected.len());
    let resp = v2::Response::BatchReadEntry(resp);
    assert_eq!(to_hex(&encode_v2_resp(&resp)), to_hex(&expected));
    assert_eq!(decode_response_v2(payload(&expected)).unwrap(), resp);

    // error: same 36-byte prefix, no entries
    let err = hex("00000020 02070000 00000001 0000000000000005 0000000000000003 000000000000002a");
    let resp = v2::Response::BatchReadEntry(v2::BatchReadResponse::for_request(
        &req,
        ErrorCode::NoLedger,
        vec![],
    ));
    assert_eq!(encode_v2_resp(&resp), err);
    assert_eq!(decode_response_v2(payload(&err)).unwrap(), resp);

    // an entry length running past the frame, or negative, is an error
    let bad = hex("00000026 02070000 00000000 0000000000000005 0000000000000003 000000000000002a 00000009 6162");
    assert!(matches!(
        decode_response_v2(payload(&bad[..bad.len()])),
        Err(ProtoError::Truncated { .. })
    ));
    let neg = hex(
        "00000024 02070000 00000000 0000000000000005 0000000000000003 000000000000002a ffffffff",
    );
    assert!(matches!(
        decode_response_v2(payload(&neg)),
        Err(ProtoError::InvalidLength { .. })
    ));
}

#[test]
fn v2_auth_disabled_response_matches_6() {
    let expected = hex("0000001a 02030000 0a124175746844697361626c6564506c7567696e1200");
    let resp = v2::Response::Auth(v2::AuthResponse::auth_disabled());
    assert_eq!(encode_v2_resp(&resp), expected);
    assert_eq!(decode_response_v2(payload(&expected)).unwrap(), resp);
}

#[test]
fn v2_auth_request_layout_2_12() {
    // AuthMessage{authPluginName = "p", payload = 0x01 0x02}
    let expected = hex("0000000b 02030000 0a0170 12020102");
    let req = v2::Request::Auth(v2::AuthRequest {
        version: 2,
        flags: Flags::NONE,
        message: v3::AuthMessage {
            auth_plugin_name: "p".into(),
            payload: Bytes::from_static(&[1, 2]),
        },
    });
    assert_eq!(encode_v2_req(&req), expected);
    assert_eq!(server_decode_v2(&expected), req);
    // AuthMessage lacking its required payload is rejected like protobuf-java does
    let missing = hex("00000007 02030000 0a0170");
    assert_eq!(
        v2::Request::decode(payload(&missing)),
        Err(ProtoError::MissingRequiredField("AuthMessage.payload"))
    );
}

#[test]
fn v2_version_0_legacy_header() {
    // version 0: the whole int is the opcode, flags are 0
    let legacy = hex("00000014 00000002 0000000000000005 0000000000000001");
    let decoded = server_decode_v2(&legacy);
    assert_eq!(
        decoded,
        v2::Request::ReadEntry(v2::ReadRequest {
            version: 0,
            flags: Flags::NONE,
            ledger_id: 5,
            entry_id: 1,
            master_key: None,
        })
    );
    assert_eq!(encode_v2_req(&decoded), legacy);
    let h = v2::PacketHeader::from_i32(0x0000_0102);
    assert_eq!((h.version, h.opcode, h.flags), (0, 2, Flags::NONE));
    assert!(h.version_supported());
    // responses to it echo version 0
    let r = v2::ReadResponse::error(
        &v2::ReadRequest {
            version: 0,
            flags: Flags::NONE,
            ledger_id: 5,
            entry_id: 1,
            master_key: None,
        },
        ErrorCode::NoEntry,
    );
    let mut b = BytesMut::new();
    r.encode(&mut b).unwrap();
    assert_eq!(to_hex(&b[4..8]), "00000002");
}

#[test]
fn v2_version_support_is_signed_like_java() {
    for (v, ok) in [
        (0u8, true),
        (1, true),
        (2, true),
        (3, false),
        (0x80, false),
        (0xff, false),
    ] {
        let h = v2::PacketHeader {
            version: v,
            opcode: 1,
            flags: Flags::NONE,
        };
        assert_eq!(h.version_supported(), ok, "version {v}");
    }
}

#[test]
fn v2_unknown_opcodes_are_typed_errors() {
    for op in [0u8, 4, 5, 6, 8, 0xff] {
        let frame = hex(&format!(
            "00000014 02{op:02x}0000 0000000000000005 0000000000000000"
        ));
        assert_eq!(
            v2::Request::decode(payload(&frame)),
            Err(ProtoError::UnknownOpcode(op)),
            "request opcode {op}"
        );
        assert_eq!(
            decode_response_v2(payload(&frame)),
            Err(ProtoError::UnknownOpcode(op)),
            "response opcode {op}"
        );
    }
}

#[test]
fn v2_error_codes_map_to_v3_status_codes() {
    let table = [
        (0, ErrorCode::Ok, StatusCode::Eok, 0),
        (1, ErrorCode::NoLedger, StatusCode::Enoledger, 402),
        (2, ErrorCode::NoEntry, StatusCode::Enoentry, 403),
        (100, ErrorCode::BadRequest, StatusCode::Ebadreq, 404),
        (101, ErrorCode::Io, StatusCode::Eio, 501),
        (102, ErrorCode::Unauthorized, StatusCode::Eua, 502),
        (103, ErrorCode::BadVersion, StatusCode::Ebadversion, 503),
        (104, ErrorCode::Fenced, StatusCode::Efenced, 504),
        (105, ErrorCode::ReadOnly, StatusCode::Ereadonly, 505),
        (
            106,
            ErrorCode::TooManyRequests,
            StatusCode::Etoomanyrequests,
            506,
        ),
        (
            107,
            ErrorCode::UnknownLedgerState,
            StatusCode::Eunknownledgerstate,
            507,
        ),
    ];
    for (v2int, code, status, v3int) in table {
        assert_eq!(ErrorCode::from_i32(v2int), Some(code));
        assert_eq!(code.as_i32(), v2int);
        assert_eq!(StatusCode::from(code), status);
        assert_eq!(status as i32, v3int);
        assert_eq!(ErrorCode::from(status), code);
        assert_eq!(code.understood_by_stock_v2_client(), v2int != 107);
    }
    for bad in [-1, 3, 99, 108, 402] {
        assert_eq!(ErrorCode::from_i32(bad), None);
    }
    let unknown = hex("00000018 02010000 0000006c 0000000000000005 0000000000000000");
    assert_eq!(
        decode_response_v2(payload(&unknown)),
        Err(ProtoError::UnknownErrorCode(108))
    );
}

#[test]
fn v2_add_with_short_entry_is_truncated() {
    // master key present, but fewer than 16 entry bytes to peek the ids from
    let frame = hex(&format!("00000020 02010000 {KEY_HEX} 0000000000000005"));
    assert!(matches!(
        v2::Request::decode(payload(&frame)),
        Err(ProtoError::Truncated { .. })
    ));
}

// ------------------------------------------------------------------------------------------
// v3 (docs/protocol.md §3.5, §6 and the field tables of §3.2)
// ------------------------------------------------------------------------------------------

#[test]
fn v3_add_request_matches_3_5() {
    let expected = hex(&format!(
        "00000050 0a06080310021801 aa0645 0805 1000 1a14{KEY_HEX} 2229{ENTRY_HEX}"
    ));
    assert_eq!(expected.len(), 84);
    let req = v3::new_request(
        1,
        None,
        RequestBody::AddEntry(v3::AddRequest {
            ledger_id: 5,
            entry_id: 0,
            master_key: Bytes::copy_from_slice(&key().0),
            body: hello_entry(),
            ..Default::default()
        }),
    );
    assert_eq!(to_hex(&encode_v3_req(&req)), to_hex(&expected));
    let decoded = server_decode_v3(&expected);
    assert_eq!(decoded, req);
    // zero-copy body
    let p = Bytes::from(expected[4..].to_vec());
    let d = v3::decode_request(p.clone()).unwrap();
    let body = d.add_request.unwrap().body;
    assert_eq!(
        body.as_ptr(),
        p[p.len() - 41..].as_ptr(),
        "body must not be copied"
    );
    let (h, b) = v3::split_request(decoded);
    assert_eq!(h.txn_id, 1);
    assert!(matches!(b, RequestBody::AddEntry(ref a) if !a.is_recovery() && !a.is_deferred_sync()));
}

#[test]
fn v3_add_response_matches_3_5() {
    let expected = hex("00000013 0a06080310021801 1000 aa0606 0800 1005 1800");
    let req_header = v3::request_header(OperationType::AddEntry as i32, 1, Some(100));
    let resp = v3::add_response(&req_header, StatusCode::Eok, 5, 0);
    assert_eq!(
        resp.header.priority, None,
        "responses do not carry priority"
    );
    assert_eq!(encode_v3_resp(&resp), expected);
    assert_eq!(decode_response_v3(payload(&expected)).unwrap(), resp);
}

#[test]
fn v3_read_response_enoentry_matches_3_5() {
    let expected = hex("00000015 0a06080310011807 109303 a20607 089303 1005 1809");
    let (h, body) = v3::split_request(v3::new_request(
        7,
        None,
        RequestBody::ReadEntry(v3::ReadRequest {
            ledger_id: 5,
            entry_id: 9,
            ..Default::default()
        }),
    ));
    let resp = v3::error_response(&h, &body, StatusCode::Enoentry);
    assert_eq!(encode_v3_resp(&resp), expected);
    assert_eq!(decode_response_v3(payload(&expected)).unwrap(), resp);
}

#[test]
fn v3_read_request_layout() {
    // header {3, READ_ENTRY, txn 7}, readRequest {ledgerId 5, entryId 9}
    let expected = hex("0000000f 0a06080310011807 a20604 0805 1009");
    let req = v3::new_request(
        7,
        None,
        RequestBody::ReadEntry(v3::ReadRequest {
            ledger_id: 5,
            entry_id: 9,
            ..Default::default()
        }),
    );
    assert_eq!(encode_v3_req(&req), expected);
    assert_eq!(server_decode_v3(&expected), req);

    // fencing read, high priority; -1 is a 10-byte varint; flag (field 100) goes last
    let expected = hex(&format!(
        "00000033 0a08080310011802 2064 a20626 0805 10ffffffffffffffffff01 1a14{KEY_HEX} a00601"
    ));
    let req = v3::new_request(
        2,
        Some(v3::DEFAULT_HIGH_PRIORITY_VALUE),
        RequestBody::ReadEntry(v3::ReadRequest {
            flag: Some(v3::read_request::Flag::FenceLedger as i32),
            ledger_id: 5,
            entry_id: -1,
            master_key: Some(Bytes::copy_from_slice(&key().0)),
            ..Default::default()
        }),
    );
    assert_eq!(to_hex(&encode_v3_req(&req)), to_hex(&expected));
    let d = server_decode_v3(&expected);
    assert!(d.header.is_high_priority());
    assert!(d.read_request.as_ref().unwrap().is_fencing());
    assert_eq!(d, req);

    // long poll: previousLAC 3, timeOut 1000
    let lp = v3::ReadRequest {
        ledger_id: 5,
        entry_id: -1,
        previous_lac: Some(3),
        time_out: Some(1000),
        flag: Some(v3::read_request::Flag::EntryPiggyback as i32),
        ..Default::default()
    };
    assert!(lp.is_long_poll() && lp.is_piggyback());
}

#[test]
fn v3_start_tls_matches_3_5() {
    let req_bytes = hex("0000000b 0a06080310091801 d20600");
    let req = v3::new_request(1, None, RequestBody::StartTls);
    assert_eq!(encode_v3_req(&req), req_bytes);
    let decoded = server_decode_v3(&req_bytes);
    assert_eq!(decoded, req);
    let (h, body) = v3::split_request(decoded);
    assert_eq!(body, RequestBody::StartTls);

    let resp_bytes = hex("0000000d 0a06080310091801 1000 d20600");
    let resp = v3::start_tls_response(&h, StatusCode::Eok);
    assert_eq!(encode_v3_resp(&resp), resp_bytes);
    assert_eq!(decode_response_v3(payload(&resp_bytes)).unwrap(), resp);

    // without TLS configured: EBADREQ, header + status
    let resp = v3::start_tls_response(&h, StatusCode::Ebadreq);
    assert_eq!(
        encode_v3_resp(&resp),
        hex("0000000b 0a06080310091801 109403")
    );
}

#[test]
fn v3_auth_disabled_response_matches_6() {
    let expected =
        hex("00000023 0a06080310051801 1000 b20616 0a124175746844697361626c6564506c7567696e 1200");
    let req = v3::new_request(
        1,
        None,
        RequestBody::Auth(v3::AuthMessage {
            auth_plugin_name: "p".into(),
            payload: Bytes::from_static(b"x"),
        }),
    );
    // AUTH request: field 102
    assert_eq!(
        encode_v3_req(&req),
        hex("00000011 0a06080310051801 b20606 0a0170 120178")
    );
    assert_eq!(server_decode_v3(&encode_v3_req(&req)), req);
    let resp = v3::auth_disabled_response(&req.header);
    assert_eq!(encode_v3_resp(&resp), expected);
    assert_eq!(decode_response_v3(payload(&expected)).unwrap(), resp);
}

#[test]
fn v3_auth_and_unsupported_ops_copy_the_request_header() {
    let h = v3::request_header(OperationType::RangeReadEntry as i32, 9, Some(5));
    let req = v3::Request {
        header: h,
        ..Default::default()
    };
    let (h2, body) = v3::split_request(req);
    assert_eq!(body, RequestBody::Unsupported(3));
    let resp = v3::unsupported_operation_response(&h2);
    // header verbatim, priority included; status 404 = 94 03
    assert_eq!(
        encode_v3_resp(&resp),
        hex("0000000d 0a08080310031809 2005 109403")
    );
    let resp = v3::error_response(&h2, &body, StatusCode::Ebadreq);
    assert_eq!(resp.header, h);
    // v3 BATCH_READ_ENTRY (12) is unsupported too
    let req = v3::Request {
        header: v3::request_header(OperationType::BatchReadEntry as i32, 1, None),
        ..Default::default()
    };
    assert_eq!(v3::split_request(req).1, RequestBody::Unsupported(12));
    // an operation without its sub-message
    let req = v3::Request {
        header: v3::request_header(OperationType::AddEntry as i32, 1, None),
        ..Default::default()
    };
    assert_eq!(
        v3::split_request(req).1,
        RequestBody::MissingBody(OperationType::AddEntry)
    );
    // unauthenticated: header copy + EUA
    let resp = v3::unauthenticated_response(&h);
    assert_eq!((resp.header, resp.status), (h, StatusCode::Eua as i32));
}

#[test]
fn v3_write_lac_request_and_response_layout() {
    let lac_body = DigestManager::new(DigestType::Dummy, b"").build_lac_body(5, 3);
    assert_eq!(to_hex(&lac_body), "00000000000000050000000000000003");
    // writeLacRequest = field 103 (ba 06): ledgerId 5, lac 3, masterKey, body
    let expected = hex(&format!(
        "00000037 0a06080310061801 ba062c 0805 1003 1a14{KEY_HEX} 2210 00000000000000050000000000000003"
    ));
    let req = v3::new_request(
        1,
        None,
        RequestBody::WriteLac(v3::WriteLacRequest {
            ledger_id: 5,
            lac: 3,
            master_key: Bytes::copy_from_slice(&key().0),
            body: lac_body,
        }),
    );
    assert_eq!(to_hex(&encode_v3_req(&req)), to_hex(&expected));
    assert_eq!(server_decode_v3(&expected), req);

    let resp_bytes = hex("00000011 0a06080310061801 1000 ba0604 0800 1005");
    let resp = v3::write_lac_response(&req.header, StatusCode::Eok, 5);
    assert_eq!(encode_v3_resp(&resp), resp_bytes);
    assert_eq!(decode_response_v3(payload(&resp_bytes)).unwrap(), resp);
}

#[test]
fn v3_read_lac_request_and_response_layout() {
    let expected = hex("0000000d 0a06080310071801 c20602 0805");
    let req = v3::new_request(
        1,
        None,
        RequestBody::ReadLac(v3::ReadLacRequest { ledger_id: 5 }),
    );
    assert_eq!(encode_v3_req(&req), expected);
    assert_eq!(server_decode_v3(&expected), req);

    // lacBody (16 bytes) and lastEntryBody "e"
    let resp_bytes = hex(
        "00000026 0a06080310071801 1000 c20619 0800 1005 1a10 00000000000000050000000000000003 220165",
    );
    let resp = v3::read_lac_response(
        &req.header,
        v3::ReadLacResponse {
            status: 0,
            ledger_id: 5,
            lac_body: Some(DigestManager::new(DigestType::Dummy, b"").build_lac_body(5, 3)),
            last_entry_body: Some(Bytes::from_static(b"e")),
        },
    );
    assert_eq!(to_hex(&encode_v3_resp(&resp)), to_hex(&resp_bytes));
    assert_eq!(decode_response_v3(payload(&resp_bytes)).unwrap(), resp);
}

#[test]
fn v3_get_bookie_info_request_and_response_layout() {
    let expected = hex("0000000d 0a06080310081801 ca0602 0803");
    let req = v3::new_request(
        1,
        None,
        RequestBody::GetBookieInfo(v3::GetBookieInfoRequest { requested: Some(3) }),
    );
    assert_eq!(encode_v3_req(&req), expected);
    assert_eq!(server_decode_v3(&expected), req);

    // totalDiskCapacity 1000 (e8 07), freeDiskSpace 300 (ac 02)
    let resp_bytes = hex("00000015 0a06080310081801 1000 ca0608 0800 10e807 18ac02");
    let resp = v3::get_bookie_info_response(
        &req.header,
        v3::GetBookieInfoResponse {
            status: 0,
            total_disk_capacity: Some(1000),
            free_disk_space: Some(300),
        },
    );
    assert_eq!(encode_v3_resp(&resp), resp_bytes);
    assert_eq!(decode_response_v3(payload(&resp_bytes)).unwrap(), resp);
}

#[test]
fn v3_force_ledger_request_and_response_layout() {
    let expected = hex("0000000d 0a060803100a1801 da0602 0805");
    let req = v3::new_request(
        1,
        None,
        RequestBody::ForceLedger(v3::ForceLedgerRequest { ledger_id: 5 }),
    );
    assert_eq!(encode_v3_req(&req), expected);
    assert_eq!(server_decode_v3(&expected), req);
    let resp_bytes = hex("00000011 0a060803100a1801 1000 da0604 0800 1005");
    let resp = v3::force_ledger_response(&req.header, StatusCode::Eok, 5);
    assert_eq!(encode_v3_resp(&resp), resp_bytes);
    assert_eq!(decode_response_v3(payload(&resp_bytes)).unwrap(), resp);
}

#[test]
fn v3_list_of_entries_request_and_response_layout() {
    let expected = hex("0000000d 0a060803100b1801 e20602 0805");
    let req = v3::new_request(
        1,
        None,
        RequestBody::GetListOfEntriesOfLedger(v3::GetListOfEntriesOfLedgerRequest { ledger_id: 5 }),
    );
    assert_eq!(encode_v3_req(&req), expected);
    assert_eq!(server_decode_v3(&expected), req);

    let avail = bk_proto::availability::encode_availability([0, 1]);
    let resp_bytes = hex(&format!(
        "0000006b 0a060803100b1801 1000 e2065e 0800 1005 1a58 00000000 00000001 {} {}",
        "00".repeat(56),
        "0000000000000000 0000000000000000 00000002 00000000"
    ));
    let resp = v3::list_of_entries_response(
        &req.header,
        v3::GetListOfEntriesOfLedgerResponse {
            status: 0,
            ledger_id: 5,
            availability_of_entries_of_ledger: Some(avail),
        },
    );
    assert_eq!(to_hex(&encode_v3_resp(&resp)), to_hex(&resp_bytes));
    assert_eq!(decode_response_v3(payload(&resp_bytes)).unwrap(), resp);
}

#[test]
fn v3_request_context_is_field_200() {
    let mut req = v3::new_request(
        1,
        None,
        RequestBody::ReadLac(v3::ReadLacRequest { ledger_id: 5 }),
    );
    req.request_context.push(v3::ContextPair {
        key: "k".into(),
        value: "v".into(),
    });
    let expected = hex("00000016 0a06080310071801 c20602 0805 c20c06 0a016b 120176");
    assert_eq!(encode_v3_req(&req), expected);
    assert_eq!(server_decode_v3(&expected), req);
    // a ContextPair without value is invalid
    let bad = hex("00000013 0a06080310071801 c20602 0805 c20c03 0a016b");
    assert_eq!(
        v3::decode_request(payload(&bad)),
        Err(ProtoError::MissingRequiredField("ContextPair.value"))
    );
}

#[test]
fn v3_error_responses_carry_the_sub_response() {
    let cases = [
        RequestBody::AddEntry(v3::AddRequest {
            ledger_id: 5,
            entry_id: 6,
            ..Default::default()
        }),
        RequestBody::WriteLac(v3::WriteLacRequest {
            ledger_id: 5,
            ..Default::default()
        }),
        RequestBody::ReadLac(v3::ReadLacRequest { ledger_id: 5 }),
        RequestBody::ForceLedger(v3::ForceLedgerRequest { ledger_id: 5 }),
        RequestBody::GetBookieInfo(v3::GetBookieInfoRequest { requested: None }),
        RequestBody::GetListOfEntriesOfLedger(v3::GetListOfEntriesOfLedgerRequest { ledger_id: 5 }),
    ];
    for body in cases {
        let req = v3::new_request(3, Some(100), body);
        let (h, body) = v3::split_request(req);
        let resp = v3::error_response(&h, &body, StatusCode::Eio);
        assert_eq!(resp.status, StatusCode::Eio as i32);
        assert_eq!(resp.header, v3::response_header(&h));
        let bytes = encode_v3_resp(&resp);
        let back = decode_response_v3(payload(&bytes)).unwrap();
        assert_eq!(back, resp);
        let sub_status = back
            .add_response
            .map(|r| r.status)
            .or(back.write_lac_response.map(|r| r.status))
            .or(back.read_lac_response.map(|r| r.status))
            .or(back.force_ledger_response.map(|r| r.status))
            .or(back.get_bookie_info_response.map(|r| r.status))
            .or(back
                .get_list_of_entries_of_ledger_response
                .map(|r| r.status));
        assert_eq!(sub_status, Some(StatusCode::Eio as i32), "{body:?}");
    }
}

#[test]
fn v3_missing_required_fields_are_named() {
    // header without txnId
    let no_txn = hex("00000009 0a04 08031002 c20600");
    assert_eq!(
        v3::decode_request(payload(&no_txn)),
        Err(ProtoError::MissingRequiredField("BKPacketHeader.txnId"))
    );
    // no header at all
    let no_header = hex("00000005 c2060208 05");
    assert_eq!(
        v3::decode_request(payload(&no_header)),
        Err(ProtoError::MissingRequiredField("Request.header"))
    );
    // AddRequest without body
    let no_body = hex(&format!(
        "00000025 0a06080310021801 aa061a 0805 1000 1a14{KEY_HEX}"
    ));
    assert_eq!(
        v3::decode_request(payload(&no_body)),
        Err(ProtoError::MissingRequiredField("AddRequest.body"))
    );
    // Response without status
    let no_status = hex("00000008 0a06080310021801");
    assert_eq!(
        v3::decode_response(payload(&no_status)),
        Err(ProtoError::MissingRequiredField("Response.status"))
    );
    // AddResponse without entryId
    let no_entry = hex("00000011 0a06080310021801 1000 aa0604 0800 1005");
    assert_eq!(
        v3::decode_response(payload(&no_entry)),
        Err(ProtoError::MissingRequiredField("AddResponse.entryId"))
    );
    // required fields equal to their defaults are still present on the wire: accepted
    assert!(v3::decode_response(payload(&hex(
        "00000013 0a06080310021801 1000 aa0606 0800 1005 1800"
    )))
    .is_ok());
}

#[test]
fn v3_closed_enums_like_protobuf_java() {
    // operation 99 (e3 00 -> 63)
    let bad_op = hex("00000008 0a0608031063 1801");
    assert_eq!(
        v3::decode_request(payload(&bad_op)),
        Err(ProtoError::UnknownEnumValue {
            field: "BKPacketHeader.operation",
            value: 99
        })
    );
    // status 7 in a response
    let bad_status = hex("0000000a 0a06080310021801 1007");
    assert!(matches!(
        v3::decode_response(payload(&bad_status)),
        Err(ProtoError::UnknownEnumValue { .. })
    ));
    // unknown optional ReadRequest.flag (7) is dropped, as Java keeps it as an unknown field
    let odd_flag = hex("00000012 0a06080310011807 a20607 0805 1009 a00607");
    let r = v3::decode_request(payload(&odd_flag)).unwrap();
    assert_eq!(r.read_request.unwrap().flag, None);
}

#[test]
fn v3_unknown_fields_and_groups_are_skipped() {
    // field 15 varint, field 16 fixed32, field 17 fixed64, field 18 group (empty) in a ReadLacRequest
    let frame = hex(
        "00000023 0a06080310071801 c20618 0805 7801 8501 01020304 8901 0102030405060708 930194 01",
    );
    let r = v3::decode_request(payload(&frame)).unwrap();
    assert_eq!(r.read_lac_request.unwrap().ledger_id, 5);
}

// ------------------------------------------------------------------------------------------
// Protocol detection on the server (docs/protocol.md §1.3)
// ------------------------------------------------------------------------------------------

#[test]
fn detection_is_sticky_per_connection_like_java() {
    let v3_frame = encode_v3_req(&v3::new_request(1, None, RequestBody::StartTls));
    let v2_frame = encode_v2_req(&v2::Request::ReadEntry(v2::ReadRequest::new(5, 0)));

    // v2 client with TLS: START_TLS (v3) first, then v2
    let mut st = ConnProtocolState::default();
    assert!(matches!(
        decode_request(payload(&v3_frame), &mut st),
        Ok(Request::V3(_))
    ));
    assert_eq!(st, ConnProtocolState::V3);
    assert!(matches!(
        decode_request(payload(&v2_frame), &mut st),
        Ok(Request::V2(_))
    ));
    assert_eq!(st, ConnProtocolState::V2);
    // a v3 frame after v2 traffic is decoded as v2 and fails (0x0a = version 10, opcode 6)
    assert!(matches!(
        decode_request(payload(&v3_frame), &mut st),
        Err(ProtoError::UnknownOpcode(6))
    ));
    assert_eq!(st, ConnProtocolState::V2);
}

#[test]
fn detection_falls_back_to_v2_for_unsupported_versions() {
    // version 3 v2 packet: not protobuf, decoded as v2 (the server answers EBADVERSION)
    let frame = hex("00000014 03020000 0000000000000005 0000000000000000");
    let mut st = ConnProtocolState::default();
    let Ok(Request::V2(v2::Request::ReadEntry(r))) = decode_request(payload(&frame), &mut st)
    else {
        panic!("expected a v2 read")
    };
    assert_eq!(r.version, 3);
    assert!(!v2::PacketHeader::from_i32(0x0302_0000).version_supported());
}

#[test]
fn detection_error_reports_both_attempts() {
    // invalid as v3 (missing required field) and as v2 (opcode 6 from 0x0a06...)
    let frame = hex("00000008 0a0408031002 c206");
    let mut st = ConnProtocolState::default();
    let err = decode_request(payload(&frame), &mut st).unwrap_err();
    assert!(matches!(err, ProtoError::NeitherV3NorV2 { .. }), "{err:?}");
    assert_eq!(st, ConnProtocolState::V2);
    // empty frame
    let mut st = ConnProtocolState::default();
    assert!(decode_request(Bytes::new(), &mut st).is_err());
}

//! `pre_auth`: what a connection that is not authorized yet gets, when the bookie has an
//! authorizer (`bookieAuthProviderFactoryClass`; docs/tls.md §3). Java's
//! `AuthHandler.ServerSideHandler.channelRead`, answer for answer:
//!
//! | request | answer |
//! |---|---|
//! | v2 ADDENTRY | v2 ADD response, EUA (102), the request's version, ledger and entry |
//! | v2 READENTRY (fencing too) | v2 READ response, EUA, the request's version, ledger and entry |
//! | v2 AUTH naming our plugin | nothing (`BookieAuthZFactory.process` is a no-op) |
//! | any other v2 packet (BATCH_READ, AUTH naming another plugin) | close |
//! | v3 START_TLS with its `startTLSRequest` | passed on (the upgrade) |
//! | v3 AUTH with an `authRequest` naming our plugin | nothing |
//! | any other v3 request | `Response{header copied, status EUA (502)}`; connection kept |
//!
//! Guarantees: the answer depends on the decoded request alone; nothing here reaches storage.

use bk_proto::v2::{self, ErrorCode};
use bk_proto::v3::{self, RequestBody};
use bytes::{Bytes, BytesMut};

use super::codec::Decoded;

/// The plugin name of `org.apache.bookkeeper.tls.BookieAuthZFactory`, the one authorizer the
/// bookie serves: AUTH packets naming it are swallowed, others are refused.
pub const AUTHZ_PLUGIN_NAME: &str = "BookieAuthZFactory";

/// What happens to `req` before authorization: `None` lets it through (START_TLS only),
/// `Some` is the whole answer.
pub fn answer(req: &bk_proto::Request) -> Option<Decoded> {
    match req {
        bk_proto::Request::V2(req) => Some(answer_v2(req)),
        bk_proto::Request::V3(req) => answer_v3(req),
    }
}

fn frame(encode: impl FnOnce(&mut BytesMut) -> Result<(), bk_proto::ProtoError>) -> Decoded {
    let mut dst = BytesMut::new();
    match encode(&mut dst) {
        Ok(()) => Decoded::Reply(dst.freeze()),
        // Small fixed-size responses always encode; if one did not, closing is the safe answer.
        Err(e) => Decoded::Close(format!("pre-authorization answer not encodable: {e}")),
    }
}

fn answer_v2(req: &v2::Request) -> Decoded {
    match req {
        v2::Request::AddEntry(add) => frame(|dst| {
            v2::AddResponse {
                version: add.version,
                error: ErrorCode::Unauthorized,
                ledger_id: add.ledger_id,
                entry_id: add.entry_id,
            }
            .encode(dst)
        }),
        v2::Request::ReadEntry(read) => frame(|dst| {
            v2::ReadResponse {
                version: read.version,
                error: ErrorCode::Unauthorized,
                ledger_id: read.ledger_id,
                entry_id: read.entry_id,
                entry: Bytes::new(),
            }
            .encode(dst)
        }),
        v2::Request::Auth(auth) if auth.message.auth_plugin_name == AUTHZ_PLUGIN_NAME => {
            Decoded::Ignore
        }
        v2::Request::Auth(_) => {
            Decoded::Close("v2 AUTH for another plugin before authorization".into())
        }
        v2::Request::BatchReadEntry(_) => {
            Decoded::Close("v2 batch read before authorization".into())
        }
    }
}

fn answer_v3(req: &v3::Request) -> Option<Decoded> {
    let (header, body) = v3::split_request(req.clone());
    match body {
        RequestBody::StartTls => None,
        RequestBody::Auth(msg) if msg.auth_plugin_name == AUTHZ_PLUGIN_NAME => {
            Some(Decoded::Ignore)
        }
        _ => Some(frame(|dst| {
            v3::encode_response(&v3::unauthenticated_response(&header), dst)
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bk_proto::{v2::Flags, MasterKey};

    fn reply(d: Option<Decoded>) -> Bytes {
        match d {
            Some(Decoded::Reply(b)) => b,
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn v2_add_and_read_get_eua_in_their_own_version_ledger_entry() {
        let entry = bytes::Bytes::from(vec![0u8; 40]);
        let mut add =
            v2::AddRequest::new(Flags::NONE, MasterKey::from_password(b""), entry).unwrap();
        add.version = 2;
        add.ledger_id = 7;
        add.entry_id = 9;
        let b = reply(answer(&bk_proto::Request::V2(v2::Request::AddEntry(add))));
        let r = bk_proto::decode_response_v2(b.slice(4..)).unwrap();
        let v2::Response::AddEntry(r) = r else {
            panic!("add response expected")
        };
        assert_eq!(
            (r.version, r.error, r.ledger_id, r.entry_id),
            (2, ErrorCode::Unauthorized, 7, 9)
        );

        let read = v2::ReadRequest::new(7, -1);
        let b = reply(answer(&bk_proto::Request::V2(v2::Request::ReadEntry(read))));
        let v2::Response::ReadEntry(r) = bk_proto::decode_response_v2(b.slice(4..)).unwrap() else {
            panic!("read response expected")
        };
        assert_eq!(
            (r.error, r.ledger_id, r.entry_id),
            (ErrorCode::Unauthorized, 7, -1)
        );
    }

    #[test]
    fn v2_batch_read_and_foreign_auth_close_our_auth_is_swallowed() {
        let batch = v2::Request::BatchReadEntry(v2::BatchReadRequest {
            version: 2,
            flags: Flags::NONE,
            ledger_id: 1,
            start_entry_id: 0,
            request_id: 1,
            max_count: 1,
            max_size: 0,
            master_key: None,
        });
        assert!(matches!(
            answer(&bk_proto::Request::V2(batch)),
            Some(Decoded::Close(_))
        ));
        let auth = |name: &str| {
            bk_proto::Request::V2(v2::Request::Auth(v2::AuthRequest {
                version: 2,
                flags: Flags::NONE,
                message: v3::AuthMessage {
                    auth_plugin_name: name.into(),
                    payload: Bytes::new(),
                },
            }))
        };
        assert!(matches!(answer(&auth("SASL")), Some(Decoded::Close(_))));
        assert!(matches!(
            answer(&auth(AUTHZ_PLUGIN_NAME)),
            Some(Decoded::Ignore)
        ));
    }

    #[test]
    fn v3_start_tls_passes_our_auth_is_swallowed_the_rest_is_eua() {
        let start = v3::new_request(1, None, RequestBody::StartTls);
        assert!(answer(&bk_proto::Request::V3(Box::new(start))).is_none());

        let auth = |name: &str| {
            v3::new_request(
                2,
                None,
                RequestBody::Auth(v3::AuthMessage {
                    auth_plugin_name: name.into(),
                    payload: Bytes::new(),
                }),
            )
        };
        let ours = answer(&bk_proto::Request::V3(Box::new(auth(AUTHZ_PLUGIN_NAME))));
        assert!(
            matches!(ours, Some(Decoded::Ignore)),
            "no answer to our own plugin's AUTH"
        );
        let other = reply(answer(&bk_proto::Request::V3(Box::new(auth("SASL")))));
        let r = bk_proto::decode_response_v3(other.slice(4..)).unwrap();
        assert_eq!(r.status, v3::StatusCode::Eua as i32);
        assert_eq!(r.header.txn_id, 2);
        assert!(r.auth_response.is_none());

        let mut read = v3::new_request(
            3,
            Some(1),
            RequestBody::ReadEntry(v3::ReadRequest {
                ledger_id: 1,
                entry_id: 0,
                ..Default::default()
            }),
        );
        read.header.version = v3::ProtocolVersion::VersionTwo as i32;
        let b = reply(answer(&bk_proto::Request::V3(Box::new(read.clone()))));
        let r = bk_proto::decode_response_v3(b.slice(4..)).unwrap();
        assert_eq!(
            r.header, read.header,
            "header copied verbatim, priority and version too"
        );
        assert_eq!(r.status, v3::StatusCode::Eua as i32);
        assert!(r.read_response.is_none());
    }
}

//! Journal records as the bookie sees them: a kind byte plus an opaque payload, with
//! typed helpers for the four kinds a bookie writes (entry, fence, explicit LAC,
//! ledger master key).
//!
//! The journal itself is payload-agnostic: it stores `kind` and `payload` and gives
//! them back on replay. The typed payload layouts below are a convention between the
//! bookie and this module, documented here and in docs/formats.md.
//!
//! Invariants:
//! - a [`Record`]'s payload CRC32C is computed once, when the record is built (on the
//!   appending thread), and covers exactly the payload bytes;
//! - kind 0 is never written (it is what zero-filled space decodes to);
//! - [`TypedRecord::decode`] never panics: a payload that does not fit its kind's
//!   layout is a [`FormatError`].

use crate::error::FormatError;
use bytes::{Bytes, BytesMut};

/// The kind byte of a record. 0 is reserved (never written); 1..=4 are the bookie
/// kinds below; any other value is accepted and handed back untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKind(pub u8);

impl RecordKind {
    /// An entry: `ledger u64 LE | entry u64 LE | entry bytes`.
    pub const ENTRY: RecordKind = RecordKind(1);
    /// A fence: `ledger u64 LE`.
    pub const FENCE: RecordKind = RecordKind(2);
    /// An explicit LAC: `ledger u64 LE | LAC body bytes`.
    pub const EXPLICIT_LAC: RecordKind = RecordKind(3);
    /// A ledger master key: `ledger u64 LE | key [u8; 20]`.
    pub const MASTER_KEY: RecordKind = RecordKind(4);
}

/// Length of a ledger master key (a SHA-1 digest of the ledger password).
pub const MASTER_KEY_LEN: usize = 20;

/// The most bytes of payload a record may carry before its `body` (the typed
/// helpers' fixed fields live there so the body is never copied to build them).
const PREFIX_MAX: usize = 16;

/// A record to append: kind + payload, where payload = `prefix ‖ body`. The body is
/// a zero-copy `Bytes` (for an entry: the bytes as received from the network).
#[derive(Clone, Debug)]
pub struct Record {
    kind: RecordKind,
    prefix: [u8; PREFIX_MAX],
    prefix_len: u8,
    body: Bytes,
    payload_crc: u32,
}

impl Record {
    /// A record of any kind (not 0) with an opaque payload.
    ///
    /// Returns None for kind 0, which is reserved.
    pub fn new(kind: RecordKind, payload: Bytes) -> Option<Record> {
        if kind.0 == 0 {
            return None;
        }
        Some(Self::with_prefix(kind, &[], payload))
    }

    fn with_prefix(kind: RecordKind, prefix: &[u8], body: Bytes) -> Record {
        debug_assert!(prefix.len() <= PREFIX_MAX);
        let mut p = [0u8; PREFIX_MAX];
        p[..prefix.len()].copy_from_slice(prefix);
        let crc = crc32c::crc32c_append(crc32c::crc32c(prefix), &body);
        Record {
            kind,
            prefix: p,
            prefix_len: prefix.len() as u8,
            body,
            payload_crc: crc,
        }
    }

    /// An entry of a ledger.
    pub fn entry(ledger: u64, entry: u64, data: Bytes) -> Record {
        let mut prefix = [0u8; 16];
        prefix[..8].copy_from_slice(&ledger.to_le_bytes());
        prefix[8..].copy_from_slice(&entry.to_le_bytes());
        Self::with_prefix(RecordKind::ENTRY, &prefix, data)
    }

    /// [`Record::entry`] with its payload CRC computed by the caller: `payload_crc` must be
    /// CRC32C of `ledger LE ‖ entry LE ‖ data` (the entry log's entry CRC is the same
    /// function, so the bookie computes it once per add). Debug builds check it; a wrong one
    /// in a release build makes the record fail its check at replay (journal corruption).
    pub fn entry_with_crc(ledger: u64, entry: u64, data: Bytes, payload_crc: u32) -> Record {
        let mut prefix = [0u8; PREFIX_MAX];
        prefix[..8].copy_from_slice(&ledger.to_le_bytes());
        prefix[8..].copy_from_slice(&entry.to_le_bytes());
        debug_assert_eq!(
            payload_crc,
            crc32c::crc32c_append(crc32c::crc32c(&prefix), &data),
            "payload CRC given for ledger {ledger} entry {entry}"
        );
        Record {
            kind: RecordKind::ENTRY,
            prefix,
            prefix_len: PREFIX_MAX as u8,
            body: data,
            payload_crc,
        }
    }

    /// A ledger became fenced.
    pub fn fence(ledger: u64) -> Record {
        Self::with_prefix(RecordKind::FENCE, &ledger.to_le_bytes(), Bytes::new())
    }

    /// An explicit LAC body (docs/protocol.md §5.4) was written for a ledger.
    pub fn explicit_lac(ledger: u64, body: Bytes) -> Record {
        Self::with_prefix(RecordKind::EXPLICIT_LAC, &ledger.to_le_bytes(), body)
    }

    /// The master key of a ledger (journaled before its first entry after start-up).
    pub fn master_key(ledger: u64, key: [u8; MASTER_KEY_LEN]) -> Record {
        Self::with_prefix(
            RecordKind::MASTER_KEY,
            &ledger.to_le_bytes(),
            Bytes::copy_from_slice(&key),
        )
    }

    pub fn kind(&self) -> RecordKind {
        self.kind
    }

    /// Payload length in bytes.
    pub fn payload_len(&self) -> usize {
        self.prefix_len as usize + self.body.len()
    }

    /// CRC32C of the payload bytes.
    pub fn payload_crc(&self) -> u32 {
        self.payload_crc
    }

    /// The payload as two slices (prefix, body); their concatenation is the payload.
    pub fn payload_parts(&self) -> (&[u8], &[u8]) {
        (&self.prefix[..self.prefix_len as usize], &self.body)
    }

    /// The payload as one buffer (copies the prefix; the body is copied only when a
    /// prefix exists).
    pub fn payload(&self) -> Bytes {
        if self.prefix_len == 0 {
            return self.body.clone();
        }
        let mut b = BytesMut::with_capacity(self.payload_len());
        b.extend_from_slice(&self.prefix[..self.prefix_len as usize]);
        b.extend_from_slice(&self.body);
        b.freeze()
    }
}

/// A record's payload interpreted by kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypedRecord {
    Entry {
        ledger: u64,
        entry: u64,
        data: Bytes,
    },
    Fence {
        ledger: u64,
    },
    ExplicitLac {
        ledger: u64,
        body: Bytes,
    },
    MasterKey {
        ledger: u64,
        key: [u8; MASTER_KEY_LEN],
    },
    /// A kind this module does not know; handed back as is.
    Other {
        kind: RecordKind,
        payload: Bytes,
    },
}

fn le_u64(b: &[u8], at: usize) -> Result<u64, FormatError> {
    let s = b.get(at..at + 8).ok_or(FormatError::Truncated {
        need: at + 8,
        have: b.len(),
    })?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Ok(u64::from_le_bytes(a))
}

impl TypedRecord {
    /// Interprets a payload by its kind. Never panics.
    pub fn decode(kind: RecordKind, payload: Bytes) -> Result<TypedRecord, FormatError> {
        match kind {
            RecordKind::ENTRY => {
                let ledger = le_u64(&payload, 0)?;
                let entry = le_u64(&payload, 8)?;
                Ok(TypedRecord::Entry {
                    ledger,
                    entry,
                    data: payload.slice(16..),
                })
            }
            RecordKind::FENCE => {
                let ledger = le_u64(&payload, 0)?;
                if payload.len() != 8 {
                    return Err(FormatError::InvalidField {
                        field: "fence payload length",
                        value: payload.len() as u64,
                    });
                }
                Ok(TypedRecord::Fence { ledger })
            }
            RecordKind::EXPLICIT_LAC => {
                let ledger = le_u64(&payload, 0)?;
                Ok(TypedRecord::ExplicitLac {
                    ledger,
                    body: payload.slice(8..),
                })
            }
            RecordKind::MASTER_KEY => {
                let ledger = le_u64(&payload, 0)?;
                if payload.len() != 8 + MASTER_KEY_LEN {
                    return Err(FormatError::InvalidField {
                        field: "master key payload length",
                        value: payload.len() as u64,
                    });
                }
                let mut key = [0u8; MASTER_KEY_LEN];
                key.copy_from_slice(&payload[8..]);
                Ok(TypedRecord::MasterKey { ledger, key })
            }
            _ => Ok(TypedRecord::Other { kind, payload }),
        }
    }

    /// The record that encodes this value (inverse of [`TypedRecord::decode`]).
    pub fn to_record(&self) -> Option<Record> {
        Some(match self {
            TypedRecord::Entry {
                ledger,
                entry,
                data,
            } => Record::entry(*ledger, *entry, data.clone()),
            TypedRecord::Fence { ledger } => Record::fence(*ledger),
            TypedRecord::ExplicitLac { ledger, body } => {
                Record::explicit_lac(*ledger, body.clone())
            }
            TypedRecord::MasterKey { ledger, key } => Record::master_key(*ledger, *key),
            TypedRecord::Other { kind, payload } => Record::new(*kind, payload.clone())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_with_its_crc_given_is_the_same_record() {
        let data = Bytes::from(vec![7u8; 1000]);
        let computed = Record::entry(u64::MAX - 1, 42, data.clone());
        let given = Record::entry_with_crc(u64::MAX - 1, 42, data, computed.payload_crc());
        assert_eq!(given.payload_parts(), computed.payload_parts());
        assert_eq!(given.payload_crc(), computed.payload_crc());
        assert_eq!(given.kind(), RecordKind::ENTRY);
        assert_eq!(given.payload_crc(), crc32c::crc32c(&given.payload()));
    }

    #[test]
    fn typed_round_trip() {
        let cases = vec![
            TypedRecord::Entry {
                ledger: 7,
                entry: 9,
                data: Bytes::from_static(b"hello"),
            },
            TypedRecord::Fence { ledger: u64::MAX },
            TypedRecord::ExplicitLac {
                ledger: 3,
                body: Bytes::from_static(&[1, 2, 3]),
            },
            TypedRecord::MasterKey {
                ledger: 1,
                key: [5u8; 20],
            },
            TypedRecord::Other {
                kind: RecordKind(200),
                payload: Bytes::from_static(b"x"),
            },
        ];
        for c in cases {
            let r = c.to_record().unwrap();
            assert_eq!(r.payload_crc(), crc32c::crc32c(&r.payload()));
            assert_eq!(TypedRecord::decode(r.kind(), r.payload()).unwrap(), c);
        }
    }

    #[test]
    fn short_payloads_are_errors() {
        for k in 1..=4u8 {
            assert!(TypedRecord::decode(RecordKind(k), Bytes::from_static(&[1, 2])).is_err());
        }
        assert!(Record::new(RecordKind(0), Bytes::new()).is_none());
    }
}

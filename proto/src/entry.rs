//! Entry bytes as clients build them and bookies store them (docs/protocol.md §5): the
//! 32-byte entry metadata, the four digest types, the master key, and the LAC body.
//!
//! The bookie only *parses* (ledgerId, entryId, LAC) and never verifies digests; clients (bkbench,
//! tests) use [`DigestManager`] to build entries a Java client would accept and to verify what
//! they read back. Every parser checks lengths first and never panics.
use bytes::{BufMut, Bytes, BytesMut};
use hmac::{Hmac, Mac};
use sha1::{Digest, Sha1};

use crate::ProtoError;

/// Length of a master key (always SHA-1 sized).
pub const MASTER_KEY_LENGTH: usize = 20;
/// Entry metadata before the digest: ledgerId, entryId, LAC, cumulative length.
pub const METADATA_LENGTH: usize = 32;
/// LAC body metadata covered by its digest: ledgerId, lac.
pub const LAC_METADATA_LENGTH: usize = 16;

/// A ledger's 20-byte master key: `SHA-1("ledger" || password)`. Compared byte for byte.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MasterKey(pub [u8; MASTER_KEY_LENGTH]);

impl MasterKey {
    /// `SHA-1("ledger" UTF-8 bytes || password)` (Java `DigestManager.generateMasterKey`).
    pub fn from_password(password: &[u8]) -> Self {
        let mut h = Sha1::new();
        h.update(b"ledger");
        h.update(password);
        MasterKey(h.finalize().into())
    }

    /// From wire bytes of any length (v3 `masterKey` is `bytes`): `None` unless exactly 20.
    pub fn from_slice(b: &[u8]) -> Option<Self> {
        <[u8; MASTER_KEY_LENGTH]>::try_from(b).ok().map(MasterKey)
    }

    pub fn as_bytes(&self) -> &[u8; MASTER_KEY_LENGTH] {
        &self.0
    }

    /// As v3 `masterKey` bytes.
    pub fn to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(&self.0)
    }
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MasterKey(")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// The entry metadata (docs/protocol.md §5.1).
///
/// Format: `ledgerId(i64 BE) | entryId(i64 BE) | lastAddConfirmed(i64 BE) | length(i64 BE)`,
/// followed in the entry by `digest(D) | payload`. `length` is the *cumulative* ledger length
/// including this entry's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EntryHeader {
    pub ledger_id: i64,
    pub entry_id: i64,
    /// The writer's LAC when the entry was sent (-1 initially).
    pub last_add_confirmed: i64,
    pub length: i64,
}

impl EntryHeader {
    /// Parses the first 32 bytes of an entry.
    pub fn parse(entry: &[u8]) -> Result<Self, ProtoError> {
        let m = entry.get(..METADATA_LENGTH).ok_or(ProtoError::Truncated {
            what: "entry metadata",
            need: METADATA_LENGTH,
            have: entry.len(),
        })?;
        Ok(Self {
            ledger_id: be_i64(m, 0),
            entry_id: be_i64(m, 8),
            last_add_confirmed: be_i64(m, 16),
            length: be_i64(m, 24),
        })
    }

    pub fn to_bytes(&self) -> [u8; METADATA_LENGTH] {
        let mut out = [0u8; METADATA_LENGTH];
        out[..8].copy_from_slice(&self.ledger_id.to_be_bytes());
        out[8..16].copy_from_slice(&self.entry_id.to_be_bytes());
        out[16..24].copy_from_slice(&self.last_add_confirmed.to_be_bytes());
        out[24..].copy_from_slice(&self.length.to_be_bytes());
        out
    }
}

/// `m` is at least `at + 8` long (callers slice fixed-size metadata first).
fn be_i64(m: &[u8], at: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&m[at..at + 8]);
    i64::from_be_bytes(b)
}

/// Ledger digest type (DataFormats `DigestType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum DigestType {
    Crc32 = 1,
    Hmac = 2,
    Crc32c = 3,
    Dummy = 4,
}

impl DigestType {
    pub fn from_i32(v: i32) -> Result<Self, ProtoError> {
        Ok(match v {
            1 => DigestType::Crc32,
            2 => DigestType::Hmac,
            3 => DigestType::Crc32c,
            4 => DigestType::Dummy,
            _ => return Err(ProtoError::UnknownDigestType(v)),
        })
    }

    /// Digest size D in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            DigestType::Crc32 => 8,
            DigestType::Hmac => 20,
            DigestType::Crc32c => 4,
            DigestType::Dummy => 0,
        }
    }
}

/// A computed digest (up to 20 bytes).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DigestValue {
    bytes: [u8; 20],
    len: usize,
}

impl DigestValue {
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl std::fmt::Debug for DigestValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Computes and verifies entry and LAC-body digests for one ledger (Java `DigestManager`).
///
/// * CRC32: `java.util.zip.CRC32` over metadata then payload, stored as an 8-byte BE long
///   (high 4 bytes zero).
/// * CRC32C: standard CRC-32C (Castagnoli), 4-byte BE int.
/// * HMAC: HmacSHA1 with key `SHA-1("mac" || password)`, 20 bytes.
/// * DUMMY: nothing.
#[derive(Clone)]
pub struct DigestManager {
    digest_type: DigestType,
    mac_key: [u8; 20],
}

impl std::fmt::Debug for DigestManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestManager")
            .field("digest_type", &self.digest_type)
            .finish_non_exhaustive()
    }
}

impl DigestManager {
    pub fn new(digest_type: DigestType, password: &[u8]) -> Self {
        let mut h = Sha1::new();
        h.update(b"mac");
        h.update(password);
        Self {
            digest_type,
            mac_key: h.finalize().into(),
        }
    }

    pub fn digest_type(&self) -> DigestType {
        self.digest_type
    }

    pub fn digest_len(&self) -> usize {
        self.digest_type.digest_len()
    }

    /// Digest over `covered` (metadata) followed by `payload`.
    pub fn compute(&self, covered: &[u8], payload: &[u8]) -> DigestValue {
        let mut bytes = [0u8; 20];
        let len = self.digest_len();
        match self.digest_type {
            DigestType::Crc32 => {
                let mut h = crc32fast::Hasher::new();
                h.update(covered);
                h.update(payload);
                bytes[..8].copy_from_slice(&u64::from(h.finalize()).to_be_bytes());
            }
            DigestType::Crc32c => {
                let c = crc32c::crc32c_append(crc32c::crc32c(covered), payload);
                bytes[..4].copy_from_slice(&c.to_be_bytes());
            }
            DigestType::Hmac => {
                // HMAC accepts keys of any length; this cannot fail.
                let mut mac = match <Hmac<Sha1> as Mac>::new_from_slice(&self.mac_key) {
                    Ok(m) => m,
                    Err(_) => return DigestValue { bytes, len },
                };
                mac.update(covered);
                mac.update(payload);
                bytes.copy_from_slice(&mac.finalize().into_bytes());
            }
            DigestType::Dummy => {}
        }
        DigestValue { bytes, len }
    }

    /// Builds a complete entry: metadata, digest, payload.
    pub fn build_entry(&self, header: &EntryHeader, payload: &[u8]) -> Bytes {
        let meta = header.to_bytes();
        let digest = self.compute(&meta, payload);
        let mut out = BytesMut::with_capacity(METADATA_LENGTH + digest.len + payload.len());
        out.put_slice(&meta);
        out.put_slice(digest.as_bytes());
        out.put_slice(payload);
        out.freeze()
    }

    /// Verifies an entry's digest and returns its metadata and payload (a slice of `entry`).
    pub fn verify_entry(&self, entry: &Bytes) -> Result<(EntryHeader, Bytes), ProtoError> {
        let header = EntryHeader::parse(entry)?;
        let d = self.digest_len();
        let payload_at = METADATA_LENGTH + d;
        if entry.len() < payload_at {
            return Err(ProtoError::Truncated {
                what: "entry digest",
                need: payload_at,
                have: entry.len(),
            });
        }
        let expected = self.compute(&entry[..METADATA_LENGTH], &entry[payload_at..]);
        if expected.as_bytes() != &entry[METADATA_LENGTH..payload_at] {
            return Err(ProtoError::DigestMismatch {
                ledger_id: header.ledger_id,
                entry_id: header.entry_id,
            });
        }
        Ok((header, entry.slice(payload_at..)))
    }

    /// Like the Java client's read check: digest valid and ids as requested.
    pub fn verify_entry_for(
        &self,
        entry: &Bytes,
        ledger_id: i64,
        entry_id: i64,
    ) -> Result<(EntryHeader, Bytes), ProtoError> {
        let (h, payload) = self.verify_entry(entry)?;
        if h.ledger_id != ledger_id || h.entry_id != entry_id {
            return Err(ProtoError::UnexpectedEntry {
                expected_ledger_id: ledger_id,
                expected_entry_id: entry_id,
                ledger_id: h.ledger_id,
                entry_id: h.entry_id,
            });
        }
        Ok((h, payload))
    }

    /// LAC body (docs/protocol.md §5.4): `ledgerId(8) | lac(8) | digest over those 16 bytes`.
    pub fn build_lac_body(&self, ledger_id: i64, lac: i64) -> Bytes {
        let mut meta = [0u8; LAC_METADATA_LENGTH];
        meta[..8].copy_from_slice(&ledger_id.to_be_bytes());
        meta[8..].copy_from_slice(&lac.to_be_bytes());
        let digest = self.compute(&meta, &[]);
        let mut out = BytesMut::with_capacity(LAC_METADATA_LENGTH + digest.len);
        out.put_slice(&meta);
        out.put_slice(digest.as_bytes());
        out.freeze()
    }

    /// Verifies a LAC body and returns `(ledgerId, lac)`.
    pub fn verify_lac_body(&self, body: &[u8]) -> Result<(i64, i64), ProtoError> {
        let (ledger_id, lac) = parse_lac_body(body)?;
        let end = LAC_METADATA_LENGTH + self.digest_len();
        let digest = body
            .get(LAC_METADATA_LENGTH..end)
            .ok_or(ProtoError::Truncated {
                what: "LAC body digest",
                need: end,
                have: body.len(),
            })?;
        if self.compute(&body[..LAC_METADATA_LENGTH], &[]).as_bytes() != digest {
            return Err(ProtoError::DigestMismatch {
                ledger_id,
                entry_id: lac,
            });
        }
        Ok((ledger_id, lac))
    }
}

/// `(ledgerId, lac)` from the first 16 bytes of a LAC body; the bookie stores the body opaquely
/// but reads the LAC from bytes 8..16.
pub fn parse_lac_body(body: &[u8]) -> Result<(i64, i64), ProtoError> {
    let m = body
        .get(..LAC_METADATA_LENGTH)
        .ok_or(ProtoError::Truncated {
            what: "LAC body",
            need: LAC_METADATA_LENGTH,
            have: body.len(),
        })?;
    Ok((be_i64(m, 0), be_i64(m, 8)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn master_key_of_empty_password_matches_protocol_md() {
        assert_eq!(
            hex(&MasterKey::from_password(b"").0),
            "850bf1071c5e3d8c24235676f8816ae0cbe2f14f"
        );
    }

    fn hello_header() -> EntryHeader {
        EntryHeader {
            ledger_id: 5,
            entry_id: 0,
            last_add_confirmed: -1,
            length: 5,
        }
    }

    #[test]
    fn crc32c_entry_matches_protocol_md_example() {
        let dm = DigestManager::new(DigestType::Crc32c, b"");
        let e = dm.build_entry(&hello_header(), b"hello");
        assert_eq!(
            hex(&e),
            "0000000000000005\
             0000000000000000\
             ffffffffffffffff\
             0000000000000005\
             b548f369\
             68656c6c6f"
        );
        let (h, p) = dm.verify_entry_for(&e, 5, 0).unwrap();
        assert_eq!(h, hello_header());
        assert_eq!(&p[..], b"hello");
    }

    #[test]
    fn every_digest_type_round_trips_and_detects_corruption() {
        for t in [
            DigestType::Crc32,
            DigestType::Hmac,
            DigestType::Crc32c,
            DigestType::Dummy,
        ] {
            let dm = DigestManager::new(t, b"secret");
            let e = dm.build_entry(&hello_header(), b"hello");
            assert_eq!(e.len(), METADATA_LENGTH + t.digest_len() + 5);
            assert!(dm.verify_entry(&e).is_ok());
            if t != DigestType::Dummy {
                let mut bad = BytesMut::from(&e[..]);
                let last = bad.len() - 1;
                bad[last] ^= 1;
                assert!(matches!(
                    dm.verify_entry(&bad.freeze()),
                    Err(ProtoError::DigestMismatch {
                        ledger_id: 5,
                        entry_id: 0
                    })
                ));
                let lac = dm.build_lac_body(5, 9);
                assert_eq!(dm.verify_lac_body(&lac), Ok((5, 9)));
                let mut bad = lac.to_vec();
                bad[15] ^= 1;
                assert!(dm.verify_lac_body(&bad).is_err());
            }
        }
    }

    #[test]
    fn crc32_is_java_crc32_as_a_long() {
        // java.util.zip.CRC32 of "123456789" is 0xcbf43926 (the standard check value).
        let dm = DigestManager::new(DigestType::Crc32, b"");
        assert_eq!(
            hex(dm.compute(b"1234", b"56789").as_bytes()),
            "00000000cbf43926"
        );
        let dm = DigestManager::new(DigestType::Crc32c, b"");
        assert_eq!(hex(dm.compute(b"12345", b"6789").as_bytes()), "e3069283");
    }

    #[test]
    fn hmac_uses_sha1_of_mac_and_password_as_key() {
        let dm = DigestManager::new(DigestType::Hmac, b"pw");
        let key: [u8; 20] = {
            let mut h = Sha1::new();
            h.update(b"macpw");
            h.finalize().into()
        };
        let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(&key).unwrap();
        mac.update(b"abcdef");
        assert_eq!(
            dm.compute(b"abc", b"def").as_bytes(),
            &mac.finalize().into_bytes()[..]
        );
    }

    #[test]
    fn short_inputs_are_errors_not_panics() {
        let dm = DigestManager::new(DigestType::Hmac, b"");
        for n in 0..60 {
            let b = Bytes::from(vec![0u8; n]);
            let _ = EntryHeader::parse(&b);
            let _ = dm.verify_entry(&b);
            let _ = dm.verify_lac_body(&b);
            let _ = parse_lac_body(&b);
        }
        assert!(matches!(
            dm.verify_entry(&Bytes::from(vec![0u8; 40])),
            Err(ProtoError::Truncated { .. })
        ));
    }
}

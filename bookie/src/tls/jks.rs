//! `tls::jks`: reads Java KeyStore (JKS) files, the JDK's own store format and the store
//! type Java's TLS keys default to (`tlsKeyStoreType=JKS`, Vert.x's `JksOptions` on the admin
//! port). No maintained pure-Rust reader exists (docs/tls.md §2.2), and the format is small,
//! so it is read here.
//!
//! Guarantees:
//! * never panics on any input, and allocates at most the file's own size (every length is
//!   checked against the bytes left before anything is read); fuzzed by `fuzz/jks_store`;
//! * the store's integrity digest is checked with the password before any entry is used, as
//!   the JDK does when a password is given: a wrong password (or altered bytes) is
//!   [`JksError::WrongPassword`], never a garbled key;
//! * a private key is recovered with the JDK's key protector and its own check digest, so a
//!   key password other than the store password is [`JksError::KeyPassword`] (Java's TLS code
//!   opens keys with the store password too);
//! * JCEKS (magic `CE CE CE CE`, keys under PBEWithMD5AndTripleDES) is not read here.
//!
//! The file (big-endian throughout; `utf` = u16 length + Java modified UTF-8):
//!
//! ```text
//! u32 magic 0xFEEDFEED | u32 version (1 or 2) | u32 count
//! count × entry:
//!   u32 tag | utf alias | u64 creation time (ms)
//!   tag 1, private key: u32 len + EncryptedPrivateKeyInfo (DER) | u32 chain count |
//!                       chain count × certificate
//!   tag 2, trusted certificate: certificate
//!   certificate: (version 2 only: utf type, "X.509") | u32 len + DER
//! 20 bytes: SHA-1( password as UTF-16BE || "Mighty Aphrodite" || every byte above )
//! ```
//!
//! A protected key (the `EncryptedPrivateKeyInfo`'s algorithm is the JDK's key protector,
//! OID 1.3.6.1.4.1.42.2.17.1.1) holds `salt (20) || key XOR stream (n) || check (20)`, where
//! the stream is `d1 || d2 || ...` with `d1 = SHA-1(pw || salt)`, `d(i+1) = SHA-1(pw || d(i))`
//! (`pw` = the password as UTF-16BE), cut to `n` bytes, and `check = SHA-1(pw || key)`; the
//! key is a PKCS#8 `PrivateKeyInfo`.

use sha1::{Digest, Sha1};

const MAGIC: u32 = 0xFEED_FEED;
const TAG_PRIVATE_KEY: u32 = 1;
const TAG_TRUSTED_CERT: u32 = 2;
const DIGEST_BYTES: usize = 20;
/// The salt the integrity digest starts with, after the password.
const INTEGRITY_SALT: &[u8] = b"Mighty Aphrodite";
/// DER of OID 1.3.6.1.4.1.42.2.17.1.1 (the JDK's `KeyProtector`), tag and length included.
const KEY_PROTECTOR_OID: &[u8] = &[
    0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x2a, 0x02, 0x11, 0x01, 0x01,
];

/// Why a JKS file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JksError {
    /// Not a well-formed JKS file (truncated, bad magic or version, lengths past the end).
    Malformed(String),
    /// The integrity digest does not match: a wrong store password, or an altered file
    /// (the JDK: "Keystore was tampered with, or password was incorrect").
    WrongPassword,
    /// The store opened, but the key of this alias is protected by another password.
    KeyPassword(String),
    /// The key of this alias is protected by another algorithm (the OID's DER bytes).
    KeyProtection(String),
}

impl std::fmt::Display for JksError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JksError::Malformed(why) => write!(f, "not a valid JKS store: {why}"),
            JksError::WrongPassword => {
                write!(f, "wrong store password, or the store was altered")
            }
            JksError::KeyPassword(alias) => write!(
                f,
                "the key \"{alias}\" has a password other than the store's (Java opens it \
                 with the store password too)"
            ),
            JksError::KeyProtection(alias) => write!(
                f,
                "the key \"{alias}\" is protected by an algorithm other than JKS's own"
            ),
        }
    }
}

/// One entry of a JKS store, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JksEntry {
    /// A private key (still protected) with its certificate chain, leaf first.
    PrivateKey {
        alias: String,
        protected_key: Vec<u8>,
        chain: Vec<Vec<u8>>,
    },
    /// A certificate the owner trusts (`keytool -importcert`).
    TrustedCert { alias: String, cert: Vec<u8> },
}

/// A recovered private key entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JksPrivateKey {
    /// The key, a PKCS#8 `PrivateKeyInfo` (DER).
    pub pkcs8: Vec<u8>,
    /// Its certificate chain (DER), leaf first.
    pub chain: Vec<Vec<u8>>,
}

/// A JKS store whose integrity digest matched its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JksStore {
    pub entries: Vec<JksEntry>,
    /// The password that opened it, as UTF-16BE bytes (it also recovers the keys).
    password: Vec<u8>,
}

impl JksStore {
    /// Parses `bytes` and checks the integrity digest with `password`.
    pub fn open(bytes: &[u8], password: &str) -> Result<JksStore, JksError> {
        let password = utf16be(password);
        let mut r = Reader { bytes, pos: 0 };
        if r.u32()? != MAGIC {
            return Err(malformed("no JKS magic FEEDFEED"));
        }
        let version = r.u32()?;
        if version != 1 && version != 2 {
            return Err(malformed(format!("version {version} (1 or 2 expected)")));
        }
        let count = r.u32()?;
        let mut entries = Vec::new();
        for _ in 0..count {
            entries.push(r.entry(version)?);
        }
        let body = r.pos;
        let stored = r.take(DIGEST_BYTES)?;
        if r.pos != bytes.len() {
            return Err(malformed(format!(
                "{} bytes after the integrity digest",
                bytes.len() - r.pos
            )));
        }
        let mut h = Sha1::new();
        h.update(&password);
        h.update(INTEGRITY_SALT);
        h.update(&bytes[..body]);
        if h.finalize().as_slice() != stored {
            return Err(JksError::WrongPassword);
        }
        Ok(JksStore { entries, password })
    }

    /// The first private key entry, recovered with the store password. `None` when the
    /// store holds no key.
    pub fn first_private_key(&self) -> Option<Result<JksPrivateKey, JksError>> {
        self.entries.iter().find_map(|e| match e {
            JksEntry::PrivateKey {
                alias,
                protected_key,
                chain,
            } => Some(
                recover_key(alias, protected_key, &self.password).map(|pkcs8| JksPrivateKey {
                    pkcs8,
                    chain: chain.clone(),
                }),
            ),
            JksEntry::TrustedCert { .. } => None,
        })
    }

    /// The certificates Java's PKIX trust manager takes from this store: every trusted
    /// certificate entry and the leaf of every private key entry (JDK 17
    /// `TrustStoreUtil.getTrustedCerts`), in file order.
    pub fn trusted_certs(&self) -> Vec<Vec<u8>> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                JksEntry::TrustedCert { cert, .. } => Some(cert.clone()),
                JksEntry::PrivateKey { chain, .. } => chain.first().cloned(),
            })
            .collect()
    }
}

fn malformed(why: impl Into<String>) -> JksError {
    JksError::Malformed(why.into())
}

/// Java's `char[]` password as bytes: each UTF-16 unit high byte first.
fn utf16be(password: &str) -> Vec<u8> {
    password.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// Recovers the PKCS#8 key of a protected key (module doc), `password` as UTF-16BE.
fn recover_key(alias: &str, protected_key: &[u8], password: &[u8]) -> Result<Vec<u8>, JksError> {
    let data = protector_data(protected_key)
        .ok_or_else(|| {
            malformed(format!(
                "the key \"{alias}\" is not an EncryptedPrivateKeyInfo"
            ))
        })?
        .map_err(|()| JksError::KeyProtection(alias.to_string()))?;
    if data.len() < 2 * DIGEST_BYTES {
        return Err(malformed(format!("the key \"{alias}\" is too short")));
    }
    let (salt, rest) = data.split_at(DIGEST_BYTES);
    let (encrypted, check) = rest.split_at(rest.len() - DIGEST_BYTES);
    let mut key = Vec::with_capacity(encrypted.len());
    let mut digest: Vec<u8> = salt.to_vec();
    for chunk in encrypted.chunks(DIGEST_BYTES) {
        let mut h = Sha1::new();
        h.update(password);
        h.update(&digest);
        digest = h.finalize().to_vec();
        key.extend(chunk.iter().zip(&digest).map(|(c, d)| c ^ d));
    }
    let mut h = Sha1::new();
    h.update(password);
    h.update(&key);
    if h.finalize().as_slice() != check {
        return Err(JksError::KeyPassword(alias.to_string()));
    }
    Ok(key)
}

/// The encrypted data of an `EncryptedPrivateKeyInfo` (`SEQUENCE { SEQUENCE { OID,
/// params }, OCTET STRING }`): `None` when it does not parse, `Some(Err)` for an algorithm
/// other than the key protector.
fn protector_data(der_bytes: &[u8]) -> Option<Result<Vec<u8>, ()>> {
    use der::{Decode, Reader as _};
    let mut r = der::SliceReader::new(der_bytes).ok()?;
    let (algorithm, data) = r
        .sequence(|r| {
            let algorithm = r.sequence(|r| {
                let oid = der::asn1::AnyRef::decode(r)?;
                while !r.is_finished() {
                    der::asn1::AnyRef::decode(r)?;
                }
                Ok::<_, der::Error>(der::Encode::to_der(&oid))
            })?;
            let data = der::asn1::OctetString::decode(r)?;
            Ok::<_, der::Error>((algorithm, data.as_bytes().to_vec()))
        })
        .ok()?;
    if !r.is_finished() {
        return None;
    }
    Some(if algorithm.ok()?.as_slice() == KEY_PROTECTOR_OID {
        Ok(data)
    } else {
        Err(())
    })
}

/// A bounds-checked big-endian reader over the file.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], JksError> {
        let left = self.bytes.len() - self.pos;
        if n > left {
            return Err(malformed(format!(
                "{n} bytes needed at offset {}, {left} left",
                self.pos
            )));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn u16(&mut self) -> Result<u16, JksError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, JksError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A Java `writeUTF` string (modified UTF-8 read as UTF-8, lossily: aliases are only
    /// shown in messages).
    fn utf(&mut self) -> Result<String, JksError> {
        let n = self.u16()? as usize;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// `u32 len` + that many bytes.
    fn blob(&mut self) -> Result<Vec<u8>, JksError> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }

    fn certificate(&mut self, version: u32) -> Result<Vec<u8>, JksError> {
        if version == 2 {
            let kind = self.utf()?;
            if kind != "X.509" {
                return Err(malformed(format!("certificate type \"{kind}\"")));
            }
        }
        self.blob()
    }

    fn entry(&mut self, version: u32) -> Result<JksEntry, JksError> {
        let tag = self.u32()?;
        let alias = self.utf()?;
        self.take(8)?; // creation time
        match tag {
            TAG_PRIVATE_KEY => {
                let protected_key = self.blob()?;
                let n = self.u32()?;
                let mut chain = Vec::new();
                for _ in 0..n {
                    chain.push(self.certificate(version)?);
                }
                Ok(JksEntry::PrivateKey {
                    alias,
                    protected_key,
                    chain,
                })
            }
            TAG_TRUSTED_CERT => Ok(JksEntry::TrustedCert {
                cert: self.certificate(version)?,
                alias,
            }),
            t => Err(malformed(format!(
                "entry \"{alias}\" has tag {t} (1 or 2 expected)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made by keytool (JDK 17), password `changeit`, valid until 2126 (testdata/README.md):
    /// a trusted CA entry `ca` and a key entry `bookie` (RSA 2048) with chain [bookie, ca].
    const BOOKIE_JKS: &[u8] = include_bytes!("testdata/bookie.jks");

    #[test]
    fn a_keytool_store_opens_and_gives_its_key_chain_and_trusted_certs() {
        let s = JksStore::open(BOOKIE_JKS, "changeit").unwrap();
        assert_eq!(s.entries.len(), 2);
        let JksPrivateKey { pkcs8: key, chain } = s.first_private_key().unwrap().unwrap();
        assert_eq!(chain.len(), 2);
        // A PKCS#8 PrivateKeyInfo of an RSA key: SEQUENCE { INTEGER 0, SEQUENCE { rsaEncryption ...
        assert_eq!(key[0], 0x30);
        let rsa_oid = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
        assert!(key.windows(rsa_oid.len()).any(|w| w == rsa_oid));
        // The CA entry and the key entry's leaf.
        let trusted = s.trusted_certs();
        assert_eq!(trusted.len(), 2);
        assert!(trusted.contains(&chain[0]) && trusted.contains(&chain[1]));
    }

    #[test]
    fn a_wrong_password_or_an_altered_byte_is_refused_before_any_key_is_used() {
        assert_eq!(
            JksStore::open(BOOKIE_JKS, "changeme"),
            Err(JksError::WrongPassword)
        );
        // A flipped byte in a certificate (lengths intact): the digest catches it.
        let mut altered = BOOKIE_JKS.to_vec();
        let at = altered.len() - 100;
        altered[at] ^= 1;
        assert_eq!(
            JksStore::open(&altered, "changeit"),
            Err(JksError::WrongPassword)
        );
    }

    #[test]
    fn a_key_under_another_password_is_named() {
        let s = JksStore::open(BOOKIE_JKS, "changeit").unwrap();
        let JksEntry::PrivateKey {
            alias,
            protected_key,
            ..
        } = s
            .entries
            .iter()
            .find(|e| matches!(e, JksEntry::PrivateKey { .. }))
            .unwrap()
        else {
            unreachable!()
        };
        assert_eq!(
            recover_key(alias, protected_key, &utf16be("other")),
            Err(JksError::KeyPassword("bookie".into()))
        );
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_gives_an_error_never_a_panic() {
        for n in 0..BOOKIE_JKS.len() {
            assert!(
                JksStore::open(&BOOKIE_JKS[..n], "changeit").is_err(),
                "cut at {n}"
            );
        }
        for i in 0..BOOKIE_JKS.len() {
            let mut b = BOOKIE_JKS.to_vec();
            b[i] ^= 0x80;
            assert!(JksStore::open(&b, "changeit").is_err(), "flipped at {i}");
        }
        let mut longer = BOOKIE_JKS.to_vec();
        longer.push(0);
        assert!(matches!(
            JksStore::open(&longer, "changeit"),
            Err(JksError::Malformed(_))
        ));
    }

    #[test]
    fn other_key_protections_are_named() {
        // An EncryptedPrivateKeyInfo under PBES2's OID (1.2.840.113549.1.5.13).
        let der = [
            0x30, 0x12, 0x30, 0x0b, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05,
            0x0d, 0x04, 0x03, 1, 2, 3,
        ];
        assert_eq!(
            recover_key("k", &der, &utf16be("x")),
            Err(JksError::KeyProtection("k".into()))
        );
        assert!(matches!(
            recover_key("k", &[0x30, 0x01], &utf16be("x")),
            Err(JksError::Malformed(_))
        ));
    }
}

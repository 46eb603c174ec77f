//! `tls::stores`: reads the bookie's own key + certificate chain and its trust anchors from
//! the files the TLS keys name: PEM, PKCS#12, and JKS-typed files (docs/tls.md §2).
//!
//! Guarantees:
//! * PEM keys: PKCS#8 (`PRIVATE KEY`), PBES2-encrypted PKCS#8 (`ENCRYPTED PRIVATE KEY`),
//!   PKCS#1 (`RSA PRIVATE KEY`) and SEC1 (`EC PRIVATE KEY`), a superset of Java's PKCS#8 only;
//!   the certificate file gives the chain (every `CERTIFICATE` block, leaf first); a PEM trust
//!   file gives every `CERTIFICATE` block in it;
//! * password files as Java reads them (`getPasswordFromFile`): an empty file is the empty
//!   password; stores use the trimmed text; a PEM key tries the bytes as they are, then
//!   trimmed (Java uses them untrimmed; trying both is a superset);
//! * store files are sniffed, whatever the type key says (JDK 17 loads a PKCS12 file under
//!   type JKS and a JKS file under type PKCS12): `30` = PKCS#12 and `FE ED FE ED` = JKS
//!   (`tls::jks`) are read; `CE CE CE CE` (JCEKS) is refused naming the key, with the
//!   `keytool` command that converts it;
//! * a key store gives its first private key with its certificate chain; a trust store gives
//!   what Java's PKIX trust manager takes from it: every trusted certificate entry (in
//!   PKCS#12, only certificate bags carrying Oracle's trusted-key-usage attribute) and the
//!   leaf of every private key entry; it fails with a hint when nothing is left;
//! * every error names the key whose file is at fault (missing, unreadable, bad PEM, wrong
//!   password, no key, no certificate).

use std::path::Path;

use p12_keystore::Pkcs12Archive;
use rustls_pki_types::{
    CertificateDer, PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer,
};
use x509_parser::pem::Pem;

use super::error::TlsError;
use super::jks::{JksError, JksStore};
use super::settings::{KeyedPath, StoreType};

/// Largest key, certificate, store or password file read (real ones are a few KiB).
const FILE_BYTES_MAX: u64 = 4 << 20;

/// The bookie's own certificate chain (leaf first) and private key.
#[derive(Debug)]
pub struct OwnKey {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// The key naming the file the certificate came from (`tlsCertificatePath` for PEM,
    /// else the store's key), for errors about the certificate.
    pub cert_key: &'static str,
}

/// Reads a whole (small) file, naming `key` when it cannot.
pub fn read_file(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    bk_disk::read_small_file(
        &mut bk_disk::SyscallDisk::new(),
        path,
        false,
        FILE_BYTES_MAX,
    )
    .map_err(|e| TlsError::file(key, path, format!("cannot read the file: {e}")))
}

/// The password candidates of a password file: `[]` when none is configured, else the
/// bytes as they are then trimmed (one candidate when they are the same).
fn password_candidates(file: Option<&KeyedPath>) -> Result<Vec<Vec<u8>>, TlsError> {
    let Some(f) = file else {
        return Ok(Vec::new());
    };
    let raw = read_file(f.key, &f.path)?;
    let trimmed = trim_ascii(&raw).to_vec();
    Ok(if trimmed == raw {
        vec![raw]
    } else {
        vec![raw, trimmed]
    })
}

/// A store password: the trimmed file text (Java `.trim()`), empty when none is configured.
fn store_password(file: Option<&KeyedPath>) -> Result<String, TlsError> {
    let Some(f) = file else {
        return Ok(String::new());
    };
    let raw = read_file(f.key, &f.path)?;
    String::from_utf8(trim_ascii(&raw).to_vec())
        .map_err(|_| TlsError::file(f.key, &f.path, "the password is not UTF-8"))
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    // Java's String.trim(): every char <= U+0020 at either end.
    let start = b.iter().position(|c| *c > b' ').unwrap_or(b.len());
    let end = b.iter().rposition(|c| *c > b' ').map_or(start, |i| i + 1);
    &b[start..end]
}

/// Every PEM block of `bytes`, naming `key` when the file is not PEM.
fn pem_blocks(key: &'static str, path: &Path, bytes: &[u8]) -> Result<Vec<Pem>, TlsError> {
    let mut out = Vec::new();
    for block in Pem::iter_from_buffer(bytes) {
        out.push(block.map_err(|e| TlsError::file(key, path, format!("bad PEM: {e}")))?);
    }
    if out.is_empty() {
        return Err(TlsError::file(key, path, "no PEM block in the file"));
    }
    Ok(out)
}

/// Every `CERTIFICATE` block of a PEM file; at least one.
pub fn pem_certificates(
    key: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read_file(key, path)?;
    let certs: Vec<CertificateDer<'static>> = pem_blocks(key, path, &bytes)?
        .into_iter()
        .filter(|b| b.label == "CERTIFICATE")
        .map(|b| CertificateDer::from(b.contents))
        .collect();
    if certs.is_empty() {
        return Err(TlsError::file(
            key,
            path,
            "no CERTIFICATE block in the file",
        ));
    }
    Ok(certs)
}

/// The first private key of a PEM key file (`key` names it; `password` its password file).
pub fn pem_private_key(
    file: &KeyedPath,
    password: Option<&KeyedPath>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read_file(file.key, &file.path)?;
    for b in pem_blocks(file.key, &file.path, &bytes)? {
        match b.label.as_str() {
            "PRIVATE KEY" => return Ok(PrivatePkcs8KeyDer::from(b.contents).into()),
            "RSA PRIVATE KEY" => return Ok(PrivatePkcs1KeyDer::from(b.contents).into()),
            "EC PRIVATE KEY" => return Ok(PrivateSec1KeyDer::from(b.contents).into()),
            "ENCRYPTED PRIVATE KEY" => return decrypt_pkcs8(file, password, &b.contents),
            _ => {}
        }
    }
    Err(TlsError::file(
        file.key,
        &file.path,
        "no private key in the file (expected a PRIVATE KEY, ENCRYPTED PRIVATE KEY, \
         RSA PRIVATE KEY or EC PRIVATE KEY block)",
    ))
}

/// PKCS#8 `EncryptedPrivateKeyInfo` (PBES2) → the plain PKCS#8 key.
fn decrypt_pkcs8(
    file: &KeyedPath,
    password: Option<&KeyedPath>,
    der_bytes: &[u8],
) -> Result<PrivateKeyDer<'static>, TlsError> {
    use der::Reader;
    let parsed = der::SliceReader::new(der_bytes).and_then(|mut r| {
        r.sequence(|r| {
            let scheme: pkcs5::EncryptionScheme = r.decode()?;
            let data: der::asn1::OctetString = r.decode()?;
            Ok((scheme, data))
        })
    });
    let (scheme, data) = parsed.map_err(|e| {
        TlsError::file(
            file.key,
            &file.path,
            format!("bad encrypted PKCS#8 key: {e}"),
        )
    })?;
    let candidates = password_candidates(password)?;
    let Some(pw_file) = password else {
        return Err(TlsError::file(
            file.key,
            &file.path,
            "the key is encrypted but tlsKeyStorePasswordPath is not set",
        ));
    };
    for pw in &candidates {
        if let Ok(plain) = scheme.decrypt(pw, data.as_bytes()) {
            return Ok(PrivatePkcs8KeyDer::from(plain).into());
        }
    }
    Err(TlsError::file(
        pw_file.key,
        &pw_file.path,
        format!(
            "wrong password for the encrypted key {} (or an encryption scheme other than PBES2)",
            file.path.display()
        ),
    ))
}

/// What a store file is, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreFormat {
    Pkcs12,
    Jks,
    Jceks,
    Unknown,
}

fn sniff(bytes: &[u8]) -> StoreFormat {
    match bytes {
        [0xfe, 0xed, 0xfe, 0xed, ..] => StoreFormat::Jks,
        [0xce, 0xce, 0xce, 0xce, ..] => StoreFormat::Jceks,
        [0x30, ..] => StoreFormat::Pkcs12,
        _ => StoreFormat::Unknown,
    }
}

/// An opened key or trust store.
enum Store {
    Pkcs12(Pkcs12Archive),
    Jks(JksStore),
}

/// Opens a store file, sniffed (PKCS#12 or JKS; JCEKS refused with the conversion command).
fn open_store(file: &KeyedPath, password: &str, password_keys: &str) -> Result<Store, TlsError> {
    let bytes = read_file(file.key, &file.path)?;
    let p = file.path.display();
    let wrong_password = || {
        TlsError::file(
            file.key,
            &file.path,
            format!("wrong store password ({password_keys})"),
        )
    };
    match sniff(&bytes) {
        StoreFormat::Pkcs12 => Pkcs12Archive::from_pkcs12(&bytes, password)
            .map(Store::Pkcs12)
            .map_err(|e| match e {
                p12_keystore::error::Error::MacError(_) => wrong_password(),
                e => TlsError::file(
                    file.key,
                    &file.path,
                    format!("cannot read the PKCS12 store: {e}"),
                ),
            }),
        StoreFormat::Jks => JksStore::open(&bytes, password)
            .map(Store::Jks)
            .map_err(|e| match e {
                JksError::WrongPassword => TlsError::file(
                    file.key,
                    &file.path,
                    format!("wrong store password ({password_keys}), or the JKS store was altered"),
                ),
                e => TlsError::file(file.key, &file.path, e.to_string()),
            }),
        StoreFormat::Jceks => Err(TlsError::file(
            file.key,
            &file.path,
            format!(
                "a JCEKS key store, which bookie-rs cannot read; convert it to PKCS12 with \
                 `keytool -importkeystore -srckeystore {p} -srcstoretype JCEKS -destkeystore \
                 {p}.p12 -deststoretype PKCS12` and name the .p12 file here"
            ),
        )),
        StoreFormat::Unknown => Err(TlsError::file(
            file.key,
            &file.path,
            "not a PKCS12 or JKS store (a PEM file needs the store type PEM)",
        )),
    }
}

/// The bookie's key and chain: PEM (`key_store` = key file, `certificate` = chain file) or a
/// store (`key_store`; `certificate` unused). `store_password_keys` names the keys whose
/// password opens a store, for the wrong-password error.
pub fn own_key(
    kind: StoreType,
    key_store: Option<&KeyedPath>,
    key_store_key: &'static str,
    password_file: Option<&KeyedPath>,
    certificate: Option<&KeyedPath>,
) -> Result<OwnKey, TlsError> {
    let Some(store) = key_store else {
        return Err(TlsError::key(
            key_store_key,
            "not set: the bookie needs its private key (or key store) to serve TLS",
        ));
    };
    match kind {
        StoreType::Pem => {
            let Some(cert) = certificate else {
                return Err(TlsError::key(
                    "tlsCertificatePath",
                    "not set: a PEM key (tlsKeyStoreType=PEM) needs its certificate file",
                ));
            };
            Ok(OwnKey {
                key: pem_private_key(store, password_file)?,
                chain: pem_certificates(cert.key, &cert.path)?,
                cert_key: cert.key,
            })
        }
        StoreType::Jks | StoreType::Pkcs12 => {
            let pw = store_password(password_file)?;
            let keys = password_file.map_or(store.key, |f| f.key);
            own_key_of_store(store, open_store(store, &pw, keys)?)
        }
    }
}

/// An own key from a store opened with `password` (the admin port's inline password).
pub fn own_key_inline(
    store: &KeyedPath,
    password: &str,
    password_key: &str,
) -> Result<OwnKey, TlsError> {
    own_key_of_store(store, open_store(store, password, password_key)?)
}

fn own_key_of_store(store: &KeyedPath, opened: Store) -> Result<OwnKey, TlsError> {
    match opened {
        Store::Pkcs12(archive) => own_key_of_archive(store, archive),
        Store::Jks(jks) => {
            let no_key =
                || TlsError::file(store.key, &store.path, "no private key entry in the store");
            let key = jks
                .first_private_key()
                .ok_or_else(no_key)?
                .map_err(|e| TlsError::file(store.key, &store.path, e.to_string()))?;
            if key.chain.is_empty() {
                return Err(TlsError::file(
                    store.key,
                    &store.path,
                    "no certificate for the private key in the store",
                ));
            }
            Ok(OwnKey {
                chain: key.chain.into_iter().map(CertificateDer::from).collect(),
                key: PrivatePkcs8KeyDer::from(key.pkcs8).into(),
                cert_key: store.key,
            })
        }
    }
}

fn own_key_of_archive(store: &KeyedPath, archive: Pkcs12Archive) -> Result<OwnKey, TlsError> {
    let Some(key_bag) = archive.keys.first() else {
        return Err(TlsError::file(
            store.key,
            &store.path,
            "no private key entry in the store",
        ));
    };
    // The leaf: the certificate bag with the key's local key id, else the first one.
    let leaf = archive
        .certs
        .iter()
        .find(|c| {
            c.local_key_id.is_some()
                && c.local_key_id.as_deref()
                    == key_bag.local_key_id.as_ref().map(|k| k.0.as_slice())
        })
        .or_else(|| archive.certs.iter().find(|c| !c.trusted))
        .ok_or_else(|| {
            TlsError::file(
                store.key,
                &store.path,
                "no certificate for the private key in the store",
            )
        })?;
    let mut chain = vec![leaf.cert.clone()];
    // Then each issuer found in the store, up to a self-issued one.
    while let Some(last) = chain.last() {
        if last.issuer() == last.subject() {
            break;
        }
        let Some(next) = archive
            .certs
            .iter()
            .find(|c| c.cert.subject() == last.issuer() && !chain.contains(&c.cert))
        else {
            break;
        };
        chain.push(next.cert.clone());
    }
    Ok(OwnKey {
        chain: chain
            .iter()
            .map(|c| CertificateDer::from(c.as_der().to_vec()))
            .collect(),
        key: PrivatePkcs8KeyDer::from(key_bag.key.as_der().to_vec()).into(),
        cert_key: store.key,
    })
}

/// The trust anchors of a trust store (PEM, or a PKCS#12 store opened with `password`).
pub fn trust_anchors(
    kind: StoreType,
    trust_store: &KeyedPath,
    password: &str,
    password_keys: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    if kind == StoreType::Pem {
        return pem_certificates(trust_store.key, &trust_store.path);
    }
    let (trusted, entries): (Vec<CertificateDer<'static>>, usize) =
        match open_store(trust_store, password, password_keys)? {
            Store::Pkcs12(archive) => (pkcs12_trusted(&archive), archive.certs.len()),
            Store::Jks(jks) => {
                let certs = jks.trusted_certs();
                let n = jks.entries.len();
                (certs.into_iter().map(CertificateDer::from).collect(), n)
            }
        };
    if trusted.is_empty() {
        return Err(TlsError::file(
            trust_store.key,
            &trust_store.path,
            format!(
                "no trusted certificate entry ({entries} certificate bag(s) or entries, none \
                 a private key's or carrying Java's trusted-key-usage attribute, which Java \
                 ignores too); stores made with `openssl pkcs12 -export -nokeys` have none: \
                 make it with `keytool -importcert -alias ca -file ca.crt -keystore trust.p12 \
                 -storetype PKCS12`, or use the PEM CA file with the store type PEM"
            ),
        ));
    }
    Ok(trusted)
}

/// What Java's PKIX trust manager takes from a PKCS#12 store: the certificate bags with
/// the trusted-key-usage attribute, and the leaf of each private key (the certificate of the
/// key's local key id), as JDK 17's `TrustStoreUtil.getTrustedCerts`.
fn pkcs12_trusted(archive: &Pkcs12Archive) -> Vec<CertificateDer<'static>> {
    let key_ids: Vec<&[u8]> = archive
        .keys
        .iter()
        .filter_map(|k| k.local_key_id.as_ref().map(|id| id.0.as_slice()))
        .collect();
    archive
        .certs
        .iter()
        .filter(|c| {
            c.trusted
                || c.local_key_id
                    .as_deref()
                    .is_some_and(|id| key_ids.contains(&id))
        })
        .map(|c| CertificateDer::from(c.cert.as_der().to_vec()))
        .collect()
}

/// The trimmed password of a trust store's password file (ignored for PEM).
pub fn trust_store_password(kind: StoreType, file: Option<&KeyedPath>) -> Result<String, TlsError> {
    if kind == StoreType::Pem {
        return Ok(String::new());
    }
    store_password(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_formats_are_sniffed_by_their_magic() {
        assert_eq!(sniff(&[0xfe, 0xed, 0xfe, 0xed, 0]), StoreFormat::Jks);
        assert_eq!(sniff(&[0xce, 0xce, 0xce, 0xce]), StoreFormat::Jceks);
        assert_eq!(sniff(&[0x30, 0x82]), StoreFormat::Pkcs12);
        assert_eq!(sniff(b"-----BEGIN"), StoreFormat::Unknown);
    }

    #[test]
    fn java_trim_drops_control_and_space_at_both_ends_only() {
        assert_eq!(trim_ascii(b"\t secret \r\n"), b"secret");
        assert_eq!(trim_ascii(b"a b"), b"a b");
        assert_eq!(trim_ascii(b" \n"), b"");
    }
}

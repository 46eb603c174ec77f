//! `tls::settings`: the parsed security keys of `bk_server.conf`: TLS on the bookie port
//! (`tls*`), HTTPS on the admin port (`httpServer*Tls*` / `*Store*`) and the authorization
//! plugin (`bookieAuthProviderFactoryClass`, `authorizedRoles`), with Java's reading rules
//! (docs/tls.md §2).
//!
//! Owns the rules, not the reading: `config::sections` reads every key once through
//! [`KeyReader`] and stores the result on `BookieConfig`. Guarantees:
//! * `tlsProviderFactoryClass` absent or empty → no [`TlsSettings`] (TLS off, as Java's
//!   `SecurityProviderFactoryFactory`); [`SecuritySettings::tls_key_present`] still says
//!   whether the key was present (even empty), which decides the `"tls"` extension;
//! * only `org.apache.bookkeeper.tls.TLSContextFactory` and
//!   `org.apache.bookkeeper.tls.BookieAuthZFactory` are accepted; any other class fails
//!   start-up naming the key and the class;
//! * store types are Java's `KeyStoreType.valueOf`: case-sensitive `PEM`, `JKS`, `PKCS12`,
//!   default `JKS`; anything else names the key;
//! * `tlsEnabledCipherSuites` / `tlsEnabledProtocols` keep only their first comma-separated
//!   element (Java's `getString` on a list value), with a note naming what was dropped;
//! * `authorizedRoles` splits as `getStringArray` (on `,`, trimmed, empty elements kept), and
//!   with `BookieAuthZFactory` an empty list or an empty element fails start-up as Java does;
//! * no file is opened here: files are read when the TLS configs are built (`tls::server_config`).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::ConfigError;

/// The one TLS provider factory bookie-rs implements.
pub const TLS_CONTEXT_FACTORY: &str = "org.apache.bookkeeper.tls.TLSContextFactory";
/// The one bookie authorization plugin bookie-rs implements.
pub const BOOKIE_AUTHZ_FACTORY: &str = "org.apache.bookkeeper.tls.BookieAuthZFactory";

/// How a section reads keys (implemented by the config's property store): values are
/// trimmed, an empty value reads as `None`; every call marks the key read.
pub(crate) trait KeyReader {
    /// `(value, origin)` of `key`, `None` when unset or empty.
    fn value(&mut self, key: &str) -> Option<(String, String)>;
    /// True when `key` has an entry, even an empty one.
    fn present(&mut self, key: &str) -> bool;
    /// A boolean in Java's spellings, `default` when unset.
    fn bool(&mut self, key: &str, default: bool) -> Result<bool, ConfigError>;
    /// An integer in `[min, max]`, `default` when unset.
    fn int(&mut self, key: &str, default: i64, min: i64, max: i64) -> Result<i64, ConfigError>;
    /// A start-up note about a value the loader changed (key named first).
    fn note(&mut self, line: String);
}

/// The type of a key or trust store (`tlsKeyStoreType`, `tlsTrustStoreType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    /// PEM files: key + certificate chain, or a bundle of CA certificates.
    Pem,
    /// A Java key store. On JDK 17 a PKCS12 file loads under this type too, so the file is
    /// sniffed (`tls::stores`).
    Jks,
    /// A PKCS#12 file.
    Pkcs12,
}

impl StoreType {
    /// Java's `KeyStoreType.valueOf`: exact, case-sensitive names.
    fn parse(s: &str) -> Option<StoreType> {
        match s {
            "PEM" => Some(StoreType::Pem),
            "JKS" => Some(StoreType::Jks),
            "PKCS12" => Some(StoreType::Pkcs12),
            _ => None,
        }
    }
}

/// A configured file, with the key that named it (for error messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedPath {
    /// The stock key, e.g. `tlsKeyStore`.
    pub key: &'static str,
    pub path: PathBuf,
}

/// The TLS settings of the bookie port (present iff `tlsProviderFactoryClass` is
/// `org.apache.bookkeeper.tls.TLSContextFactory`).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsSettings {
    /// tlsProvider ("OpenSSL"): informative only; rustls serves either way.
    pub provider: String,
    /// tlsClientAuthentication (false): true = a client certificate is required and checked
    /// against the trust store; false = none is asked for and the trust store is ignored.
    pub client_authentication: bool,
    /// tlsKeyStoreType (JKS).
    pub key_store_type: StoreType,
    /// tlsKeyStore: the PEM private key, or the JKS/PKCS12 store.
    pub key_store: Option<KeyedPath>,
    /// tlsKeyStorePasswordPath: a file holding the key (store) password.
    pub key_store_password_path: Option<KeyedPath>,
    /// tlsCertificatePath: the PEM certificate chain (PEM only).
    pub certificate_path: Option<KeyedPath>,
    /// tlsTrustStoreType (JKS).
    pub trust_store_type: StoreType,
    /// tlsTrustStore.
    pub trust_store: Option<KeyedPath>,
    /// tlsTrustStorePasswordPath (ignored for PEM, as in Java).
    pub trust_store_password_path: Option<KeyedPath>,
    /// tlsEnabledCipherSuites: the first listed suite only (Java's quirk); `None` = rustls'
    /// defaults.
    pub enabled_cipher_suite: Option<String>,
    /// tlsEnabledProtocols: the first listed protocol only (Java's quirk); `None` = TLS 1.2
    /// and 1.3.
    pub enabled_protocol: Option<String>,
    /// tlsCertFilesRefreshDurationSeconds (0 = off).
    pub cert_files_refresh: Option<Duration>,
}

/// HTTPS on the admin port (present iff `httpServerTlsEnable=true`). Always mutual TLS, as
/// Java's Vert.x server (`ClientAuth.REQUIRED`); both stores are JKS-typed (sniffed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTlsSettings {
    /// httpServerKeyStorePath (required).
    pub key_store: Option<KeyedPath>,
    /// httpServerKeyStorePassword (inline, not a file).
    pub key_store_password: String,
    /// httpServerTrustStorePath (required).
    pub trust_store: Option<KeyedPath>,
    /// httpServerTrustStorePassword: never used, as in Java, whose getter reads
    /// httpServerKeyStorePassword; kept to name it in errors.
    pub trust_store_password_set: bool,
}

/// `bookieAuthProviderFactoryClass=org.apache.bookkeeper.tls.BookieAuthZFactory`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthzSettings {
    /// authorizedRoles (getStringArray): never empty, no empty element.
    pub authorized_roles: Vec<String>,
}

/// Every security section of the configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SecuritySettings {
    pub tls: Option<TlsSettings>,
    /// `tlsProviderFactoryClass` has an entry, even empty (Java advertises `"tls"` then).
    pub tls_key_present: bool,
    pub http_tls: Option<HttpTlsSettings>,
    pub authz: Option<AuthzSettings>,
}

/// Reads the security keys through `r` (Java's rules, module doc).
pub(crate) fn read(r: &mut dyn KeyReader) -> Result<SecuritySettings, ConfigError> {
    let tls_key_present = r.present("tlsProviderFactoryClass");
    let tls = match r.value("tlsProviderFactoryClass") {
        None => {
            mark_tls_keys_read(r);
            None
        }
        Some((class, _)) if class == TLS_CONTEXT_FACTORY => Some(read_tls(r)?),
        Some((class, _)) => {
            return Err(ConfigError::Unsupported {
                key: "tlsProviderFactoryClass".into(),
                reason: format!(
                    "\"{class}\" is not supported: bookie-rs implements only {TLS_CONTEXT_FACTORY}"
                ),
            })
        }
    };
    let authz = read_authz(r)?;
    let http_tls = read_http_tls(r)?;
    Ok(SecuritySettings {
        tls,
        tls_key_present,
        http_tls,
        authz,
    })
}

const TLS_KEYS: &[&str] = &[
    "tlsProvider",
    "tlsClientAuthentication",
    "tlsKeyStoreType",
    "tlsKeyStore",
    "tlsKeyStorePasswordPath",
    "tlsCertificatePath",
    "tlsTrustStoreType",
    "tlsTrustStore",
    "tlsTrustStorePasswordPath",
    "tlsEnabledCipherSuites",
    "tlsEnabledProtocols",
    "tlsCertFilesRefreshDurationSeconds",
];

/// With TLS off the TLS keys are still known (read, so never "unknown").
fn mark_tls_keys_read(r: &mut dyn KeyReader) {
    for key in TLS_KEYS {
        r.present(key);
    }
}

fn read_tls(r: &mut dyn KeyReader) -> Result<TlsSettings, ConfigError> {
    let refresh = r.int("tlsCertFilesRefreshDurationSeconds", 0, i64::MIN, i64::MAX)?;
    Ok(TlsSettings {
        provider: r
            .value("tlsProvider")
            .map_or_else(|| "OpenSSL".to_string(), |(v, _)| v),
        client_authentication: r.bool("tlsClientAuthentication", false)?,
        key_store_type: store_type(r, "tlsKeyStoreType")?,
        key_store: path(r, "tlsKeyStore"),
        key_store_password_path: path(r, "tlsKeyStorePasswordPath"),
        certificate_path: path(r, "tlsCertificatePath"),
        trust_store_type: store_type(r, "tlsTrustStoreType")?,
        trust_store: path(r, "tlsTrustStore"),
        trust_store_password_path: path(r, "tlsTrustStorePasswordPath"),
        enabled_cipher_suite: first_element(r, "tlsEnabledCipherSuites"),
        enabled_protocol: first_element(r, "tlsEnabledProtocols"),
        // Java refreshes only when the value is > 0.
        cert_files_refresh: (refresh > 0).then(|| Duration::from_secs(refresh as u64)),
    })
}

fn store_type(r: &mut dyn KeyReader, key: &'static str) -> Result<StoreType, ConfigError> {
    let Some((v, origin)) = r.value(key) else {
        return Ok(StoreType::Jks);
    };
    StoreType::parse(&v).ok_or_else(|| ConfigError::InvalidValue {
        key: key.into(),
        value: v.clone(),
        origin,
        reason: "expected PEM, JKS or PKCS12 (case-sensitive, as in Java)".into(),
    })
}

fn path(r: &mut dyn KeyReader, key: &'static str) -> Option<KeyedPath> {
    r.value(key).map(|(v, _)| KeyedPath {
        key,
        path: PathBuf::from(v),
    })
}

/// Java's `getString` on a value with commas: the first element (trimmed), with a note
/// naming the elements dropped.
fn first_element(r: &mut dyn KeyReader, key: &str) -> Option<String> {
    let (v, _) = r.value(key)?;
    let mut parts = v.split(',').map(str::trim);
    let first = parts.next().unwrap_or("").to_string();
    let dropped: Vec<&str> = parts.collect();
    if !dropped.is_empty() {
        r.note(format!(
            "{key}: only the first entry \"{first}\" is used (as Java's bookie does); dropped: {}",
            dropped.join(", ")
        ));
    }
    (!first.is_empty()).then_some(first)
}

/// Java's `getStringArray`: split on `,`, each element trimmed, empty elements kept.
pub fn string_array(v: &str) -> Vec<String> {
    v.split(',').map(|s| s.trim().to_string()).collect()
}

fn read_authz(r: &mut dyn KeyReader) -> Result<Option<AuthzSettings>, ConfigError> {
    const KEY: &str = "bookieAuthProviderFactoryClass";
    let roles_raw = r.value("authorizedRoles");
    let Some((class, _)) = r.value(KEY) else {
        return Ok(None);
    };
    if class != BOOKIE_AUTHZ_FACTORY {
        return Err(ConfigError::Unsupported {
            key: KEY.into(),
            reason: format!(
                "\"{class}\" is not supported: bookie-rs implements only {BOOKIE_AUTHZ_FACTORY} \
                 (SASL and other plugins are refused rather than run without authentication)"
            ),
        });
    }
    // Java: `authorizedRoles=` reads as [""], which fails like an empty list.
    let roles = roles_raw.map_or_else(|| vec![String::new()], |(v, _)| string_array(&v));
    if roles.iter().any(String::is_empty) {
        return Err(ConfigError::Unsupported {
            key: "authorizedRoles".into(),
            reason: format!(
                "{KEY} is {BOOKIE_AUTHZ_FACTORY} but authorizedRoles has no roles or an empty \
                 one ({roles:?}); Java's bookie fails to start the same way"
            ),
        });
    }
    Ok(Some(AuthzSettings {
        authorized_roles: roles,
    }))
}

fn read_http_tls(r: &mut dyn KeyReader) -> Result<Option<HttpTlsSettings>, ConfigError> {
    let enabled = r.bool("httpServerTlsEnable", false)?;
    let key_store = path(r, "httpServerKeyStorePath");
    let key_store_password = r
        .value("httpServerKeyStorePassword")
        .map(|(v, _)| v)
        .unwrap_or_default();
    let trust_store = path(r, "httpServerTrustStorePath");
    let trust_store_password_set = r.value("httpServerTrustStorePassword").is_some();
    Ok(enabled.then_some(HttpTlsSettings {
        key_store,
        key_store_password,
        trust_store,
        trust_store_password_set,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A reader over literal pairs (values trimmed, empty = unset, as the config's).
    #[derive(Default)]
    struct Pairs {
        values: BTreeMap<String, String>,
        notes: Vec<String>,
    }

    impl KeyReader for Pairs {
        fn value(&mut self, key: &str) -> Option<(String, String)> {
            let v = self.values.get(key)?.trim();
            (!v.is_empty()).then(|| (v.to_string(), format!("test {key}")))
        }
        fn present(&mut self, key: &str) -> bool {
            self.values.contains_key(key)
        }
        fn bool(&mut self, key: &str, default: bool) -> Result<bool, ConfigError> {
            Ok(self.value(key).map_or(default, |(v, _)| v == "true"))
        }
        fn int(&mut self, key: &str, default: i64, _: i64, _: i64) -> Result<i64, ConfigError> {
            Ok(self.value(key).map_or(default, |(v, _)| v.parse().unwrap()))
        }
        fn note(&mut self, line: String) {
            self.notes.push(line);
        }
    }

    fn pairs(kv: &[(&str, &str)]) -> Pairs {
        Pairs {
            values: kv
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            notes: Vec::new(),
        }
    }

    const TCF: (&str, &str) = ("tlsProviderFactoryClass", TLS_CONTEXT_FACTORY);

    #[test]
    fn absent_or_empty_factory_means_no_tls_but_empty_still_counts_as_present() {
        let s = read(&mut pairs(&[])).unwrap();
        assert!(s.tls.is_none() && !s.tls_key_present);
        let s = read(&mut pairs(&[("tlsProviderFactoryClass", "")])).unwrap();
        assert!(s.tls.is_none() && s.tls_key_present);
    }

    #[test]
    fn another_factory_class_is_refused_naming_key_and_class() {
        let e = read(&mut pairs(&[("tlsProviderFactoryClass", "com.x.MyTls")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tlsProviderFactoryClass") && e.contains("com.x.MyTls"),
            "{e}"
        );
    }

    #[test]
    fn store_types_default_to_jks_and_are_case_sensitive() {
        let s = read(&mut pairs(&[TCF])).unwrap().tls.unwrap();
        assert_eq!(s.key_store_type, StoreType::Jks);
        assert_eq!(s.trust_store_type, StoreType::Jks);
        assert!(!s.client_authentication);
        assert_eq!(s.provider, "OpenSSL");
        assert_eq!(s.cert_files_refresh, None);
        let s = read(&mut pairs(&[
            TCF,
            ("tlsKeyStoreType", "PEM"),
            ("tlsTrustStoreType", "PKCS12"),
        ]))
        .unwrap()
        .tls
        .unwrap();
        assert_eq!(
            (s.key_store_type, s.trust_store_type),
            (StoreType::Pem, StoreType::Pkcs12)
        );
        let e = read(&mut pairs(&[TCF, ("tlsTrustStoreType", "pem")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tlsTrustStoreType") && e.contains("\"pem\""),
            "{e}"
        );
    }

    #[test]
    fn list_keys_keep_only_their_first_element_and_note_the_rest() {
        let mut r = pairs(&[
            TCF,
            ("tlsEnabledProtocols", "TLSv1.2,TLSv1.3"),
            ("tlsEnabledCipherSuites", " TLS_AES_128_GCM_SHA256 , B"),
            ("tlsCertFilesRefreshDurationSeconds", "300"),
        ]);
        let s = read(&mut r).unwrap().tls.unwrap();
        assert_eq!(s.enabled_protocol.as_deref(), Some("TLSv1.2"));
        assert_eq!(
            s.enabled_cipher_suite.as_deref(),
            Some("TLS_AES_128_GCM_SHA256")
        );
        assert_eq!(s.cert_files_refresh, Some(Duration::from_secs(300)));
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert!(r
            .notes
            .iter()
            .any(|n| n.starts_with("tlsEnabledProtocols") && n.contains("TLSv1.3")));
    }

    #[test]
    fn authorized_roles_split_like_get_string_array() {
        assert_eq!(string_array(" admin , pulsar ,"), ["admin", "pulsar", ""]);
        let ok = read(&mut pairs(&[
            ("bookieAuthProviderFactoryClass", BOOKIE_AUTHZ_FACTORY),
            ("authorizedRoles", "admin, pulsar"),
        ]))
        .unwrap();
        assert_eq!(ok.authz.unwrap().authorized_roles, ["admin", "pulsar"]);
        for roles in [None, Some(""), Some("admin,"), Some("a,,b")] {
            let mut kv = vec![("bookieAuthProviderFactoryClass", BOOKIE_AUTHZ_FACTORY)];
            if let Some(v) = roles {
                kv.push(("authorizedRoles", v));
            }
            let e = read(&mut pairs(&kv)).unwrap_err().to_string();
            assert!(e.starts_with("authorizedRoles:"), "{roles:?}: {e}");
        }
    }

    #[test]
    fn other_auth_plugins_stay_refused_naming_the_class() {
        let sasl = "org.apache.bookkeeper.sasl.SASLBookieAuthProviderFactory";
        let e = read(&mut pairs(&[("bookieAuthProviderFactoryClass", sasl)]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bookieAuthProviderFactoryClass") && e.contains(sasl),
            "{e}"
        );
    }

    #[test]
    fn https_settings_exist_only_when_enabled() {
        let s = read(&mut pairs(&[("httpServerKeyStorePath", "/k.jks")])).unwrap();
        assert!(s.http_tls.is_none());
        let s = read(&mut pairs(&[
            ("httpServerTlsEnable", "true"),
            ("httpServerKeyStorePath", "/k.jks"),
            ("httpServerKeyStorePassword", "pw"),
            ("httpServerTrustStorePassword", "other"),
        ]))
        .unwrap();
        let h = s.http_tls.unwrap();
        assert_eq!(h.key_store_password, "pw");
        assert!(h.trust_store_password_set && h.trust_store.is_none());
    }
}

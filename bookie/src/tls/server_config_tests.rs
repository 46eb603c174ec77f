//! Tests of `tls::server_config`, `tls::stores` and `tls::refresh`: every start-up rule of docs/tls.md §2,
//! with certificates made by rcgen, and with `openssl` / `keytool` where a real PKCS#12,
//! JKS, JCEKS, v1 certificate or encrypted / PKCS#1 / SEC1 key file is needed (both tools are
//! required: a missing tool fails the test, it is not skipped).

use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use super::error::TlsError;
use super::server_config::{build_http_server_config, build_server_config};
use super::settings::{HttpTlsSettings, KeyedPath, StoreType, TlsSettings};

struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        Pki {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// A CA (`ca.crt`, `ca.key`) and a leaf signed by it (`<leaf>.crt`, `<leaf>.key`),
    /// valid between the given dates.
    fn ca_and_leaf(&self, leaf: &str, not_before: (i32, u8, u8), not_after: (i32, u8, u8)) {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name.push(DnType::CommonName, "test-ca");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        self.write("ca.crt", ca_cert.pem());
        self.write("ca.key", ca_key.serialize_pem());
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        p.distinguished_name.push(DnType::CommonName, leaf);
        p.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        p.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let cert = p.signed_by(&key, &issuer).unwrap();
        self.write(&format!("{leaf}.crt"), cert.pem());
        self.write(&format!("{leaf}.key"), key.serialize_pem());
    }

    fn valid_leaf(&self, leaf: &str) {
        self.ca_and_leaf(leaf, (2000, 1, 1), (2999, 1, 1));
    }

    /// `store` (of `kind`, password `password`) holding `ca.crt` as the trusted entry `ca`
    /// (keytool -importcert).
    fn trust_store_of_ca(&self, store: &str, kind: &str, password: &str) {
        self.run(
            "keytool",
            &[
                "-importcert",
                "-noprompt",
                "-alias",
                "ca",
                "-file",
                "ca.crt",
                "-keystore",
                store,
                "-storetype",
                kind,
                "-storepass",
                password,
            ],
        );
    }

    /// `src` (of `src_kind`) converted into `dest` (of `dest_kind`) by keytool, both with
    /// password `secret`.
    fn convert_store(&self, src: &str, src_kind: &str, dest: &str, dest_kind: &str) {
        self.run(
            "keytool",
            &[
                "-importkeystore",
                "-noprompt",
                "-srckeystore",
                src,
                "-srcstoretype",
                src_kind,
                "-srcstorepass",
                "secret",
                "-destkeystore",
                dest,
                "-deststoretype",
                dest_kind,
                "-deststorepass",
                "secret",
            ],
        );
    }

    /// Runs a tool in the directory; it must succeed.
    fn run(&self, tool: &str, args: &[&str]) {
        let out = Command::new(tool)
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("{tool} is required by this test: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn kp(key: &'static str, path: impl AsRef<Path>) -> Option<KeyedPath> {
    Some(KeyedPath {
        key,
        path: path.as_ref().to_path_buf(),
    })
}

/// PEM key + chain for `leaf`, no client authentication.
fn pem_settings(pki: &Pki, leaf: &str) -> TlsSettings {
    TlsSettings {
        provider: "OpenSSL".into(),
        client_authentication: false,
        key_store_type: StoreType::Pem,
        key_store: kp("tlsKeyStore", pki.path(&format!("{leaf}.key"))),
        key_store_password_path: None,
        certificate_path: kp("tlsCertificatePath", pki.path(&format!("{leaf}.crt"))),
        trust_store_type: StoreType::Pem,
        trust_store: kp("tlsTrustStore", pki.path("ca.crt")),
        trust_store_password_path: None,
        enabled_cipher_suite: None,
        enabled_protocol: None,
        cert_files_refresh: None,
    }
}

fn err(s: &TlsSettings) -> TlsError {
    build_server_config(s).expect_err("the config must be refused")
}

#[test]
fn a_pem_key_and_chain_build_with_and_without_client_authentication() {
    let pki = Pki::new();
    pki.valid_leaf("bookie");
    let mut s = pem_settings(&pki, "bookie");
    build_server_config(&s).unwrap();
    s.client_authentication = true;
    build_server_config(&s).unwrap();
    // Without client authentication the trust store is not read at all (as in Java).
    s.client_authentication = false;
    s.trust_store = kp("tlsTrustStore", pki.path("missing.crt"));
    build_server_config(&s).unwrap();
    s.client_authentication = true;
    let e = err(&s);
    assert_eq!(e.key, "tlsTrustStore", "{e}");
    s.trust_store = None;
    assert_eq!(err(&s).key, "tlsTrustStore");
}

#[test]
fn missing_files_and_keys_are_named() {
    let pki = Pki::new();
    pki.valid_leaf("bookie");
    let mut s = pem_settings(&pki, "bookie");
    s.key_store = kp("tlsKeyStore", pki.path("nope.key"));
    let e = err(&s);
    assert!(
        e.key == "tlsKeyStore" && e.to_string().contains("nope.key"),
        "{e}"
    );
    s = pem_settings(&pki, "bookie");
    s.certificate_path = None;
    assert_eq!(err(&s).key, "tlsCertificatePath");
    s = pem_settings(&pki, "bookie");
    s.key_store = None;
    assert_eq!(err(&s).key, "tlsKeyStore");
}

#[test]
fn bad_pem_is_named() {
    let pki = Pki::new();
    pki.valid_leaf("bookie");
    let mut s = pem_settings(&pki, "bookie");
    s.key_store = kp("tlsKeyStore", pki.write("garbage.key", "not pem at all\n"));
    let e = err(&s);
    assert!(e.key == "tlsKeyStore" && e.reason.contains("PEM"), "{e}");
    // A certificate file given as the key: PEM, but no key in it.
    s.key_store = kp("tlsKeyStore", pki.path("bookie.crt"));
    let e = err(&s);
    assert!(
        e.key == "tlsKeyStore" && e.reason.contains("no private key"),
        "{e}"
    );
    s = pem_settings(&pki, "bookie");
    s.certificate_path = kp("tlsCertificatePath", pki.path("bookie.key"));
    let e = err(&s);
    assert!(
        e.key == "tlsCertificatePath" && e.reason.contains("CERTIFICATE"),
        "{e}"
    );
}

#[test]
fn a_key_of_another_pair_is_a_mismatch_naming_the_certificate() {
    let pki = Pki::new();
    pki.valid_leaf("bookie");
    pki.valid_leaf("other");
    let mut s = pem_settings(&pki, "bookie");
    s.key_store = kp("tlsKeyStore", pki.path("other.key"));
    let e = err(&s);
    assert!(
        e.key == "tlsCertificatePath" && e.reason.contains("does not match"),
        "{e}"
    );
}

#[test]
fn an_expired_or_not_yet_valid_certificate_fails_start_up() {
    let pki = Pki::new();
    pki.ca_and_leaf("old", (2000, 1, 1), (2001, 1, 1));
    let e = err(&pem_settings(&pki, "old"));
    assert!(
        e.key == "tlsCertificatePath" && e.reason.contains("expired"),
        "{e}"
    );
    let pki = Pki::new();
    pki.ca_and_leaf("future", (2990, 1, 1), (2999, 1, 1));
    let e = err(&pem_settings(&pki, "future"));
    assert!(
        e.key == "tlsCertificatePath" && e.reason.contains("not valid before"),
        "{e}"
    );
}

#[test]
fn an_x509_v1_certificate_is_refused_with_the_fix() {
    let pki = Pki::new();
    pki.valid_leaf("bookie");
    // `openssl x509 -req` without -extfile makes a v1 certificate.
    pki.run(
        "openssl",
        &[
            "req",
            "-new",
            "-key",
            "bookie.key",
            "-subj",
            "/CN=v1",
            "-out",
            "v1.csr",
        ],
    );
    pki.run(
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            "v1.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "30",
            "-out",
            "v1.crt",
        ],
    );
    let mut s = pem_settings(&pki, "bookie");
    s.certificate_path = kp("tlsCertificatePath", pki.path("v1.crt"));
    let e = err(&s);
    assert!(
        e.key == "tlsCertificatePath" && e.reason.contains("X.509 v1") && e.reason.contains("v3"),
        "{e}"
    );
}

#[test]
fn pkcs1_sec1_and_encrypted_pkcs8_keys_load() {
    let pki = Pki::new();
    pki.run(
        "openssl",
        &["genrsa", "-traditional", "-out", "rsa.key", "2048"],
    );
    pki.run(
        "openssl",
        &[
            "ecparam",
            "-genkey",
            "-name",
            "prime256v1",
            "-noout",
            "-out",
            "ec.key",
        ],
    );
    for name in ["rsa", "ec"] {
        let key = std::fs::read_to_string(pki.path(&format!("{name}.key"))).unwrap();
        let label = if name == "rsa" {
            "RSA PRIVATE KEY"
        } else {
            "EC PRIVATE KEY"
        };
        assert!(key.contains(label), "{key}");
        pki.run(
            "openssl",
            &[
                "req",
                "-new",
                "-x509",
                "-key",
                &format!("{name}.key"),
                "-subj",
                "/CN=k",
                "-days",
                "30",
                "-out",
                &format!("{name}.crt"),
            ],
        );
        build_server_config(&pem_settings(&pki, name)).unwrap();
    }
    pki.run(
        "openssl",
        &[
            "pkcs8",
            "-topk8",
            "-v2",
            "aes-256-cbc",
            "-in",
            "ec.key",
            "-out",
            "enc.key",
            "-passout",
            "pass:secret",
        ],
    );
    std::fs::copy(pki.path("ec.crt"), pki.path("enc.crt")).unwrap();
    let mut s = pem_settings(&pki, "enc");
    // Java reads a PEM key's password untrimmed; the trimmed text is tried too.
    s.key_store_password_path = kp("tlsKeyStorePasswordPath", pki.write("pw", "secret\n"));
    build_server_config(&s).unwrap();
    s.key_store_password_path = kp("tlsKeyStorePasswordPath", pki.write("pw", "wrong"));
    let e = err(&s);
    assert!(
        e.key == "tlsKeyStorePasswordPath" && e.reason.contains("wrong password"),
        "{e}"
    );
    s.key_store_password_path = None;
    assert_eq!(err(&s).key, "tlsKeyStore");
}

/// `bookie.p12` (openssl, password `secret`), `trust-openssl.p12` (openssl -nokeys) and
/// `trust-keytool.p12` (keytool, trusted entries), all with password `secret`.
fn pkcs12_files(pki: &Pki) {
    pki.valid_leaf("bookie");
    pki.run(
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-in",
            "bookie.crt",
            "-inkey",
            "bookie.key",
            "-certfile",
            "ca.crt",
            "-out",
            "bookie.p12",
            "-passout",
            "pass:secret",
        ],
    );
    pki.run(
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-nokeys",
            "-in",
            "ca.crt",
            "-out",
            "trust-openssl.p12",
            "-passout",
            "pass:secret",
        ],
    );
    pki.trust_store_of_ca("trust-keytool.p12", "PKCS12", "secret");
}

fn store_settings(pki: &Pki, kind: StoreType) -> TlsSettings {
    TlsSettings {
        key_store_type: kind,
        key_store: kp("tlsKeyStore", pki.path("bookie.p12")),
        key_store_password_path: kp("tlsKeyStorePasswordPath", pki.write("ks.pw", "secret\n")),
        certificate_path: None,
        trust_store_type: kind,
        trust_store: kp("tlsTrustStore", pki.path("trust-keytool.p12")),
        trust_store_password_path: kp("tlsTrustStorePasswordPath", pki.write("ts.pw", " secret ")),
        client_authentication: true,
        ..pem_settings(pki, "bookie")
    }
}

/// `s` is refused naming tlsKeyStore as opened with a wrong password, and the password's key.
fn assert_wrong_key_store_password(s: &TlsSettings) {
    let e = err(s);
    assert!(
        e.key == "tlsKeyStore"
            && e.reason.contains("wrong store password")
            && e.reason.contains("tlsKeyStorePasswordPath"),
        "{e}"
    );
}

#[test]
fn pkcs12_stores_load_also_under_type_jks_and_a_wrong_password_is_named() {
    let pki = Pki::new();
    pkcs12_files(&pki);
    build_server_config(&store_settings(&pki, StoreType::Pkcs12)).unwrap();
    // JDK 17 opens a PKCS12 file under type JKS: sniffed here too.
    build_server_config(&store_settings(&pki, StoreType::Jks)).unwrap();
    let mut s = store_settings(&pki, StoreType::Pkcs12);
    s.key_store_password_path = kp("tlsKeyStorePasswordPath", pki.write("bad.pw", "nope"));
    assert_wrong_key_store_password(&s);
}

#[test]
fn a_trust_store_without_javas_trusted_attribute_has_no_entry_and_says_why() {
    let pki = Pki::new();
    pkcs12_files(&pki);
    let mut s = store_settings(&pki, StoreType::Pkcs12);
    s.trust_store = kp("tlsTrustStore", pki.path("trust-openssl.p12"));
    let e = err(&s);
    assert!(
        e.key == "tlsTrustStore"
            && e.reason.contains("no trusted certificate")
            && e.reason.contains("keytool -importcert"),
        "{e}"
    );
}

/// `bookie.jks` (the PKCS#12 key store converted by keytool) and `trust.jks` (the CA as a
/// trusted entry), both real JKS files with password `secret`.
fn jks_files(pki: &Pki) {
    pkcs12_files(pki);
    pki.convert_store("bookie.p12", "PKCS12", "bookie.jks", "JKS");
    pki.trust_store_of_ca("trust.jks", "JKS", "secret");
    assert_eq!(
        &std::fs::read(pki.path("bookie.jks")).unwrap()[..4],
        [0xfe, 0xed, 0xfe, 0xed]
    );
}

#[test]
fn real_jks_stores_load_under_either_store_type_and_a_wrong_password_is_named() {
    let pki = Pki::new();
    jks_files(&pki);
    for kind in [StoreType::Jks, StoreType::Pkcs12] {
        let mut s = store_settings(&pki, kind);
        s.key_store = kp("tlsKeyStore", pki.path("bookie.jks"));
        s.trust_store = kp("tlsTrustStore", pki.path("trust.jks"));
        build_server_config(&s).unwrap();
    }
    let mut s = store_settings(&pki, StoreType::Jks);
    s.key_store = kp("tlsKeyStore", pki.path("bookie.jks"));
    s.key_store_password_path = kp("tlsKeyStorePasswordPath", pki.write("bad.pw", "nope"));
    assert_wrong_key_store_password(&s);
}

#[test]
fn a_trust_store_holding_only_a_private_key_trusts_its_certificate_as_java_does() {
    // JDK 17's PKIX trust manager takes the leaf of every key entry: a key store given as
    // trust store trusts the bookie's own certificate (and so clients presenting it).
    let pki = Pki::new();
    jks_files(&pki);
    for (kind, file) in [
        (StoreType::Jks, "bookie.jks"),
        (StoreType::Pkcs12, "bookie.p12"),
    ] {
        let mut s = store_settings(&pki, kind);
        s.trust_store = kp("tlsTrustStore", pki.path(file));
        s.trust_store_password_path =
            kp("tlsTrustStorePasswordPath", pki.write("ts2.pw", "secret"));
        build_server_config(&s).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

#[test]
fn a_jceks_store_is_refused_with_the_conversion_command() {
    let pki = Pki::new();
    jks_files(&pki);
    pki.convert_store("bookie.p12", "PKCS12", "bookie.jceks", "JCEKS");
    let mut s = store_settings(&pki, StoreType::Jks);
    s.key_store = kp("tlsKeyStore", pki.path("bookie.jceks"));
    let e = err(&s);
    assert!(
        e.key == "tlsKeyStore"
            && e.reason.contains("JCEKS")
            && e.reason.contains("keytool -importkeystore"),
        "{e}"
    );
}

#[test]
fn unusable_cipher_and_protocol_names_fail_naming_their_key() {
    let pki = Pki::new();
    pki.valid_leaf("bookie");
    let mut s = pem_settings(&pki, "bookie");
    s.enabled_cipher_suite = Some("TLS_RSA_WITH_AES_128_CBC_SHA".into());
    assert_eq!(err(&s).key, "tlsEnabledCipherSuites");
    s.enabled_cipher_suite = Some("ECDHE-ECDSA-AES128-GCM-SHA256".into());
    build_server_config(&s).unwrap();
    s.enabled_cipher_suite = None;
    s.enabled_protocol = Some("TLSv1.1".into());
    assert_eq!(err(&s).key, "tlsEnabledProtocols");
    s.enabled_protocol = Some("TLSv1.3".into());
    build_server_config(&s).unwrap();
    // A TLS 1.2 suite with TLS 1.3 only: nothing usable together.
    s.enabled_cipher_suite = Some("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".into());
    assert_eq!(err(&s).key, "tlsEnabledCipherSuites");
}

#[test]
fn the_admin_port_opens_its_trust_store_with_the_key_store_password() {
    let pki = Pki::new();
    jks_files(&pki);
    // Vert.x's JksOptions: real JKS stores, the Java default for these keys.
    let jks = HttpTlsSettings {
        key_store: kp("httpServerKeyStorePath", pki.path("bookie.jks")),
        key_store_password: "secret".into(),
        trust_store: kp("httpServerTrustStorePath", pki.path("trust.jks")),
        trust_store_password_set: true,
    };
    build_http_server_config(&jks).unwrap();
    let mut h = HttpTlsSettings {
        key_store: kp("httpServerKeyStorePath", pki.path("bookie.p12")),
        trust_store: kp("httpServerTrustStorePath", pki.path("trust-keytool.p12")),
        ..jks
    };
    build_http_server_config(&h).unwrap();
    pki.trust_store_of_ca("trust-other.p12", "PKCS12", "other-pw");
    h.trust_store = kp("httpServerTrustStorePath", pki.path("trust-other.p12"));
    let e = build_http_server_config(&h).unwrap_err();
    assert!(
        e.key == "httpServerTrustStorePath"
            && e.reason.contains("httpServerKeyStorePassword")
            && e.reason.contains("httpServerTrustStorePassword"),
        "{e}"
    );
    h.trust_store = None;
    let e = build_http_server_config(&h).unwrap_err();
    assert_eq!(e.key, "httpServerTrustStorePath");
}

// ---- tls::refresh ----

use std::sync::Arc;

use super::refresh::{self, Checked, Refresher};
use super::TlsContext;

#[test]
fn a_changed_file_is_rebuilt_and_swapped_in_and_a_bad_one_keeps_the_old_config() {
    let pki = Pki::new();
    pki.valid_leaf("bookie");
    let s = pem_settings(&pki, "bookie");
    let ctx = Arc::new(TlsContext::new(build_server_config(&s).unwrap()));
    let mut r = Refresher::new(s, ctx.clone());
    let first = ctx.current();
    assert!(matches!(r.check(), Checked::Unchanged));
    assert!(Arc::ptr_eq(&first, &ctx.current()));
    // A new pair (same names): replaced.
    pki.valid_leaf("bookie");
    assert!(matches!(r.check(), Checked::Replaced));
    let second = ctx.current();
    assert!(!Arc::ptr_eq(&first, &second));
    assert!(matches!(r.check(), Checked::Unchanged));
    // Half a rotation (the key of another pair): refused, naming the key; old config kept.
    pki.valid_leaf("other");
    std::fs::copy(pki.path("other.key"), pki.path("bookie.key")).unwrap();
    match r.check() {
        Checked::Failed(e) => assert_eq!(e.key, "tlsCertificatePath", "{e}"),
        c => panic!("expected a failed rebuild, got {c:?}"),
    }
    assert!(Arc::ptr_eq(&second, &ctx.current()));
    // The rotation completes: picked up at the next check.
    std::fs::copy(pki.path("other.crt"), pki.path("bookie.crt")).unwrap();
    assert!(matches!(r.check(), Checked::Replaced));
    assert!(!Arc::ptr_eq(&second, &ctx.current()));
}

#[tokio::test]
async fn the_task_swaps_in_new_files_within_the_interval() {
    let pki = Pki::new();
    pki.valid_leaf("bookie");
    let mut s = pem_settings(&pki, "bookie");
    s.cert_files_refresh = Some(std::time::Duration::from_secs(1));
    let ctx = Arc::new(TlsContext::new(build_server_config(&s).unwrap()));
    let first = ctx.current();
    let task = refresh::spawn(&s, &ctx).expect("a refresh task");
    pki.valid_leaf("bookie");
    // Interval 1 s; a generous 20 s bound for a loaded machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while Arc::ptr_eq(&first, &ctx.current()) {
        assert!(
            std::time::Instant::now() < deadline,
            "not refreshed within 20 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    drop(task);
    s.cert_files_refresh = None;
    assert!(refresh::spawn(&s, &ctx).is_none());
}

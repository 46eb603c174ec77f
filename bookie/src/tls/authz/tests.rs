//! The role extraction on every vector of docs/tls.md §4, on certificates made by rcgen and,
//! for subjects rcgen cannot write (several OUs, multi-valued RDNs, other string types), on
//! certificates whose subject is written here by hand; and the authorizer's decisions.
//!
//! The expected roles were checked against the JDK (`X500Principal.getName()` → `LdapName`
//! → `CertUtils`' rules): set `BK_OU_VECTORS_OUT=<file>` and this module writes each hand-made
//! subject as `<label> <hex>` for such a harness.

use super::*;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PublicKeyData};

/// A v3 certificate from rcgen, subject `O=org, OU=<ou>, CN=client`.
fn rcgen_cert(ou: &str) -> Vec<u8> {
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "org");
    dn.push(DnType::OrganizationalUnitName, ou);
    dn.push(DnType::CommonName, "client");
    params.distinguished_name = dn;
    let key = KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().der().to_vec()
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else if len < 0x100 {
        out.extend([0x81, len as u8]);
    } else {
        out.extend([0x82, (len >> 8) as u8, len as u8]);
    }
    out.extend_from_slice(content);
    out
}

const UTF8: u8 = 0x0C;
const PRINTABLE: u8 = 0x13;
const T61: u8 = 0x14;
const NUMERIC: u8 = 0x12;
const BMP: u8 = 0x1E;
const IA5: u8 = 0x16;
const UNIVERSAL: u8 = 0x1C;

const CN: &[u8] = &[0x55, 0x04, 0x03];
const O: &[u8] = &[0x55, 0x04, 0x0A];
const OU: &[u8] = &[0x55, 0x04, 0x0B];
const ST: &[u8] = &[0x55, 0x04, 0x08];
/// emailAddress, 1.2.840.113549.1.9.1: no RFC 2253 keyword.
const EMAIL: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x01];

/// One attribute: `(type OID content, string tag, value bytes)`.
type Attr<'a> = (&'a [u8], u8, &'a [u8]);

/// A Name (RDNSequence) of `rdns`, each a set of attributes, in the order given.
fn name(rdns: &[&[Attr<'_>]]) -> Vec<u8> {
    let mut seq = Vec::new();
    for rdn in rdns {
        let mut set = Vec::new();
        for (oid, tag, value) in rdn.iter() {
            let mut atv = tlv(0x06, oid);
            atv.extend(tlv(*tag, value));
            set.extend(tlv(0x30, &atv));
        }
        seq.extend(tlv(0x31, &set));
    }
    tlv(0x30, &seq)
}

/// A v3 certificate with `subject` (its signature is not valid; role extraction does not
/// look at it).
fn cert_with_subject(subject: &[u8]) -> Vec<u8> {
    let alg = tlv(
        0x30,
        &tlv(0x06, &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]),
    );
    let mut validity = tlv(0x17, b"250101000000Z");
    validity.extend(tlv(0x17, b"350101000000Z"));
    let key = KeyPair::generate().unwrap();
    let mut tbs = tlv(0xA0, &tlv(0x02, &[2]));
    tbs.extend(tlv(0x02, &[1]));
    tbs.extend(&alg);
    tbs.extend(name(&[&[(CN, UTF8, b"ca")]]));
    tbs.extend(tlv(0x30, &validity));
    tbs.extend_from_slice(subject);
    tbs.extend(key.subject_public_key_info());
    let mut cert = tlv(0x30, &tbs);
    cert.extend(alg);
    cert.extend(tlv(0x03, &[0, 0]));
    tlv(0x30, &cert)
}

fn some(roles: &[&str]) -> Option<Vec<String>> {
    Some(roles.iter().map(|r| r.to_string()).collect())
}

/// docs/tls.md §4's vectors: the OU value of a single-OU subject → the roles.
const OU_VECTORS: &[(&str, Option<&[&str]>)] = &[
    ("0:role1,role2;1:cluster", Some(&["role1", "role2"])),
    ("1:c;0:a;0:b", Some(&["b"])),
    ("0: a , b ;1:c", Some(&["a", "b"])),
    (";0:a", Some(&["a"])),
    ("0:", Some(&[""])),
    ("0:,", None),
    ("0:,a", Some(&["", "a"])),
    ("0:a,,b", Some(&["a", "", "b"])),
    ("0:a,", Some(&["a"])),
    ("0:, ,", Some(&["", ""])),
    ("0:a:b;0", Some(&["a:b"])),
    ("1:c; 0:a", None),
    (" 0:a", None),
    ("00:a", None),
    ("a", None),
    ("", None),
    ("0:a\n", Some(&["a"])),
    ("0:a\r\n", Some(&["a"])),
    ("0:a\nb", None),
    ("0:a\u{2028}", Some(&["a"])),
    ("0:\u{1}a\u{1f}", Some(&["a"])),
    ("0:\u{a0}a", Some(&["\u{a0}a"])),
    ("0:pulsar;1:c1", Some(&["pulsar"])),
];

#[test]
fn ou_vectors_on_rcgen_certificates() {
    for (ou, want) in OU_VECTORS {
        let want = want.map(some).unwrap_or(None);
        assert_eq!(roles_from_cert(&rcgen_cert(ou)), want, "OU {ou:?}");
    }
}

#[test]
fn a_subject_without_ou_has_no_roles() {
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, "0:a");
    let key = KeyPair::generate().unwrap();
    let der = params.self_signed(&key).unwrap().der().to_vec();
    assert_eq!(roles_from_cert(&der), None);
}

/// A hand-made subject: `(label, subject, roles)`.
type SubjectVector = (&'static str, Vec<u8>, Option<Vec<String>>);

fn subject_vectors() -> Vec<SubjectVector> {
    vec![
        (
            "first-ou-wins",
            name(&[
                &[(O, UTF8, b"o")],
                &[(OU, UTF8, b"0:a")],
                &[(OU, UTF8, b"0:b")],
                &[(CN, UTF8, b"x")],
            ]),
            some(&["a"]),
        ),
        (
            // the first OU decides even when it has no role
            "first-ou-without-role",
            name(&[&[(OU, UTF8, b"1:c")], &[(OU, UTF8, b"0:b")]]),
            None,
        ),
        (
            "der-order-not-string-order",
            name(&[
                &[(CN, UTF8, b"x")],
                &[(OU, UTF8, b"0:b")],
                &[(OU, UTF8, b"0:a")],
            ]),
            some(&["b"]),
        ),
        (
            "cn-plus-ou-is-ignored",
            name(&[
                &[(CN, UTF8, b"x"), (OU, UTF8, b"0:a")],
                &[(OU, UTF8, b"0:b")],
            ]),
            some(&["b"]),
        ),
        (
            "ou-plus-cn-is-ignored-whatever-the-der-order",
            name(&[&[(OU, UTF8, b"0:a"), (CN, UTF8, b"x")]]),
            None,
        ),
        (
            "o-plus-ou-is-ignored",
            name(&[&[(OU, UTF8, b"0:a"), (O, UTF8, b"o")]]),
            None,
        ),
        (
            "oid-type-sorts-first",
            name(&[&[(OU, UTF8, b"0:a"), (EMAIL, IA5, b"a@b")]]),
            None,
        ),
        (
            "ou-plus-st-takes-the-ou",
            name(&[&[(ST, UTF8, b"s"), (OU, UTF8, b"0:a")]]),
            some(&["a"]),
        ),
        (
            "ou-plus-ou-takes-the-smaller-value",
            name(&[&[(OU, UTF8, b"0:z"), (OU, UTF8, b"0:B")]]),
            some(&["B"]),
        ),
        (
            "ou-plus-ou-compares-upper-cased",
            name(&[&[(OU, UTF8, b"0:b"), (OU, UTF8, b"0:A")]]),
            some(&["A"]),
        ),
        (
            "printable-string",
            name(&[&[(OU, PRINTABLE, b"0:a,b")]]),
            some(&["a", "b"]),
        ),
        (
            // JDK 17 reads every string type's bytes as UTF-8
            "t61-string-read-as-utf-8",
            name(&[&[(OU, T61, b"0:r\xe9le")]]),
            some(&["r\u{fffd}le"]),
        ),
        (
            "t61-string-with-utf-8-bytes",
            name(&[&[(OU, T61, "0:r\u{e9}le".as_bytes())]]),
            some(&["r\u{e9}le"]),
        ),
        (
            "ia5-string",
            name(&[&[(OU, IA5, b"0:a;1:c")]]),
            some(&["a"]),
        ),
        (
            // UTF-16 bytes read as UTF-8 start with NUL: no `digits:` prefix
            "bmp-string-read-as-utf-8",
            name(&[&[(OU, BMP, &[0, b'0', 0, b':', 0, b'r'])]]),
            None,
        ),
        (
            "universal-string-is-hex",
            name(&[&[(
                OU,
                UNIVERSAL,
                &[0, 0, 0, b'0', 0, 0, 0, b':', 0, 0, 0, b'a'],
            )]]),
            None,
        ),
        (
            // the JDK writes a NumericString as #hex: that OU gives no roles
            "numeric-string-ou-gives-none",
            name(&[&[(OU, NUMERIC, b"0")], &[(OU, UTF8, b"0:a")]]),
            None,
        ),
        ("empty-subject", name(&[]), None),
    ]
}

#[test]
fn hand_made_subjects() {
    let vectors = subject_vectors();
    if let Ok(path) = std::env::var("BK_OU_VECTORS_OUT") {
        // `<label> <subject hex> <expected roles>`, the OU vectors as rcgen writes them too.
        let single_ou = OU_VECTORS.iter().enumerate().map(|(i, (ou, want))| {
            let subject = name(&[
                &[(O, UTF8, b"org")],
                &[(OU, UTF8, ou.as_bytes())],
                &[(CN, UTF8, b"client")],
            ]);
            (
                format!("ou-vector-{i}"),
                subject,
                want.map(some).unwrap_or(None),
            )
        });
        let text: String = vectors
            .iter()
            .map(|(l, s, w)| (l.to_string(), s.clone(), w.clone()))
            .chain(single_ou)
            .map(|(label, subject, want)| {
                let hex: String = subject.iter().map(|b| format!("{b:02x}")).collect();
                format!("{label} {hex} {want:?}\n")
            })
            .collect();
        std::fs::write(path, text).unwrap();
    }
    for (label, subject, want) in vectors {
        assert_eq!(
            roles_from_cert(&cert_with_subject(&subject)),
            want,
            "{label}"
        );
    }
}

#[test]
fn java_split_and_trim() {
    assert_eq!(java_split("", ','), vec![""]);
    assert_eq!(java_split(",", ','), Vec::<&str>::new());
    assert_eq!(java_split(",a,,", ','), vec!["", "a"]);
    assert_eq!(java_trim("\u{0} a\t\u{20}"), "a");
    assert_eq!(
        java_trim("\u{a0}a\u{3000}"),
        "\u{a0}a\u{3000}",
        "only chars <= U+0020"
    );
}

#[test]
fn not_a_certificate_has_no_roles() {
    assert_eq!(roles_from_cert(b""), None);
    assert_eq!(roles_from_cert(b"0:a"), None);
    let mut der = rcgen_cert("0:a");
    der.truncate(der.len() / 2);
    assert_eq!(roles_from_cert(&der), None);
}

#[test]
fn new_refuses_no_roles_naming_the_key() {
    for roles in [vec![], vec![String::new()], vec!["a".into(), String::new()]] {
        let e = BookieAuthZ::new(roles).unwrap_err();
        assert!(e.contains("'authorizedRoles'"), "{e}");
        assert_eq!(e, NO_ROLES_MESSAGE);
    }
    assert_eq!(
        BookieAuthZ::new(vec!["pulsar".into()])
            .unwrap()
            .authorized_roles(),
        ["pulsar"]
    );
}

fn decide(authz: &BookieAuthZ, ou: &str) -> Result<String, String> {
    let chain = [CertificateDer::from(rcgen_cert(ou))];
    authz.authorize(Some(&chain))
}

#[test]
fn only_the_first_role_is_compared_exactly() {
    let authz = BookieAuthZ::new(vec!["pulsar".into(), "admin".into()]).unwrap();
    assert_eq!(decide(&authz, "0:pulsar;1:c1").as_deref(), Ok("pulsar"));
    assert_eq!(decide(&authz, "0:admin,other").as_deref(), Ok("admin"));
    let e = decide(&authz, "0:other,pulsar").unwrap_err();
    assert_eq!(
        e,
        "AuthZ failed: Cert role [other, pulsar] doesn't match allowedRoles list [pulsar, admin]"
    );
    assert!(decide(&authz, "0:Pulsar").is_err(), "case-sensitive");
    assert!(decide(&authz, "0:,pulsar").is_err(), "roles[0] is empty");
    assert!(decide(&authz, "0:").is_err());
}

#[test]
fn refusals_say_why_as_java_does() {
    let authz = BookieAuthZ::new(vec!["pulsar".into()]).unwrap();
    assert_eq!(
        authz.authorize(None).unwrap_err(),
        "AuthZ failed: Certificate missing"
    );
    assert_eq!(
        authz.authorize(Some(&[])).unwrap_err(),
        "AuthZ failed: Certificate missing"
    );
    assert_eq!(
        decide(&authz, "1:c1").unwrap_err(),
        "AuthZ failed: No cert role in OU field of certificate. Must have a role from \
         allowedRoles list [pulsar]"
    );
    let garbage = [CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01])];
    let e = authz.authorize(Some(&garbage)).unwrap_err();
    assert!(
        e.starts_with("AuthZ failed: Failed to parse certificate"),
        "{e}"
    );
}

#[test]
fn the_leaf_decides_not_the_issuer() {
    let authz = BookieAuthZ::new(vec!["pulsar".into()]).unwrap();
    let chain = [
        CertificateDer::from(rcgen_cert("0:other")),
        CertificateDer::from(rcgen_cert("0:pulsar")),
    ];
    assert!(authz.authorize(Some(&chain)).is_err());
}

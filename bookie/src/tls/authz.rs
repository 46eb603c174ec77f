//! `bookieAuthProviderFactoryClass=org.apache.bookkeeper.tls.BookieAuthZFactory`: the roles a
//! client certificate carries, and the decision taken from them (docs/tls.md §4).
//!
//! Owns: [`roles_from_cert`], BookKeeper's `CertUtils.getRolesFromOU` rule for rule, and
//! [`BookieAuthZ`], the [`ConnectionAuthorizer`] that compares the first role with
//! `authorizedRoles` as `BookieAuthZFactory.onProtocolUpgrade` does.
//!
//! Guarantees: [`roles_from_cert`] never panics on any bytes (fuzz target `cert_roles`); it
//! gives the roles Java gives for every subject, with the one deviation docs/tls.md §4 names
//! (a value Java renders as `#hex`, or one we cannot decode, gives `None` where Java gives the
//! roles of `"[B@…"`, i.e. none either). The authorizer accepts exactly when `roles[0]` equals
//! (case-sensitively) one of the authorized roles; every refusal is Java's "AuthZ failed: ..."
//! text, which the caller logs with the peer's address.
//!
//! How Java reads the OU (JDK `X500Principal.getName()` → RFC 2253 → `LdapName.getRdns()`):
//! 1. RDNs in DER order (`getRdns()` is root first). In each RDN the attributes are sorted
//!    by type name (case-insensitive; OIDs without an RFC 2253 keyword are dotted numbers,
//!    which sort before letters), then by upper-cased value; the RDN's type and value are
//!    its first attribute's. The first RDN whose type is `OU` gives the OU string, so an OU
//!    inside `CN+OU` is not seen.
//! 2. The OU string split at `;` (Java `Pattern.split`); each part must match
//!    `^([0-9]+):(.*)$` untrimmed (`.` stops at a line terminator, `$` allows one final line
//!    terminator); key and value are then trimmed (Java `trim`: every char `<= ' '`), the
//!    last duplicate key wins.
//! 3. The value of key `"0"` (exactly) split at `,` (trailing empty parts dropped, inner ones
//!    kept; no `,` at all gives the whole string), each part trimmed. No parts → no roles.

use rustls_pki_types::CertificateDer;
use x509_parser::asn1_rs::{Any, Tag};
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::FromDer;
use x509_parser::x509::X509Name;

use super::ConnectionAuthorizer;

/// The plugin's name (`getPluginName`), also the name a v3 AUTH request must carry.
pub const PLUGIN_NAME: &str = "BookieAuthZFactory";

/// Java's `init` message for an empty `authorizedRoles` or one with an empty element.
pub const NO_ROLES_MESSAGE: &str = "Configuration option 'bookieAuthProviderFactoryClass' is set \
to 'BookieAuthZFactory' but no roles set for configuration field 'authorizedRoles'.";

/// The roles in the subject's OU of the DER certificate `der`, as BookKeeper's
/// `CertUtils.getRolesFromOU` finds them (module docs). `None`: no OU, no part with key `0`,
/// or `der` is not a certificate. `Some` may hold empty strings (`0:,a` gives `["", "a"]`);
/// it is never empty.
pub fn roles_from_cert(der: &[u8]) -> Option<Vec<String>> {
    roles_of(der).ok().flatten()
}

/// [`roles_from_cert`], telling a certificate that does not parse apart.
fn roles_of(der: &[u8]) -> Result<Option<Vec<String>>, String> {
    let (_, cert) = X509Certificate::from_der(der).map_err(|e| e.to_string())?;
    Ok(ou_string(cert.subject()).and_then(|ou| roles_from_ou(&ou)))
}

/// An attribute value as `LdapName` holds it: a string, or (`#hex` in RFC 2253) bytes.
#[derive(Debug, PartialEq)]
enum AttrValue {
    Text(String),
    Binary,
}

/// The OU string Java's `getOUStringFromSubject` returns for `name` (module docs, step 1).
/// `None` when no RDN has type OU, or when the OU it finds is not a string.
fn ou_string(name: &X509Name<'_>) -> Option<String> {
    for rdn in name.iter_rdn() {
        let first = rdn
            .iter()
            .map(|atv| {
                let keyword = rfc2253_keyword(&atv.attr_type().to_id_string());
                let value = if keyword.is_some() {
                    decode_string(atv.attr_value())
                } else {
                    AttrValue::Binary
                };
                let type_name = keyword
                    .map(str::to_string)
                    .unwrap_or_else(|| atv.attr_type().to_id_string());
                (type_name, value)
            })
            .min_by(|(ta, va), (tb, vb)| {
                ta.to_ascii_uppercase()
                    .cmp(&tb.to_ascii_uppercase())
                    .then_with(|| value_order(va, vb))
            });
        match first {
            Some((t, value)) if t.eq_ignore_ascii_case("OU") => {
                return match value {
                    AttrValue::Text(s) => Some(s),
                    AttrValue::Binary => None,
                };
            }
            _ => {}
        }
    }
    None
}

/// The JDK's RFC 2253 keywords (`AVAKeyword` with `rfc2253Compliant`); any other type is
/// written as its dotted OID with a `#hex` value.
fn rfc2253_keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// The string the JDK's `AVA.toRFC2253String` writes for a value: JDK 17 reads the bytes of
/// every directory string type as UTF-8 (BMPString and T61String included; checked against
/// the JDK 17 `X500Principal`), and writes any other type as `#hex`.
fn decode_string(value: &Any<'_>) -> AttrValue {
    match value.header.tag() {
        Tag::Utf8String
        | Tag::PrintableString
        | Tag::T61String
        | Tag::Ia5String
        | Tag::GeneralString
        | Tag::BmpString => AttrValue::Text(String::from_utf8_lossy(value.as_bytes()).into_owned()),
        _ => AttrValue::Binary,
    }
}

/// `Rdn`'s order of two values of one type: by `toUpperCase(Locale.ENGLISH)`, in UTF-16 code
/// units; a binary value compares as `#...`.
fn value_order(a: &AttrValue, b: &AttrValue) -> std::cmp::Ordering {
    let key = |v: &AttrValue| match v {
        AttrValue::Text(s) => s.to_uppercase().encode_utf16().collect::<Vec<u16>>(),
        AttrValue::Binary => vec![u16::from(b'#')],
    };
    key(a).cmp(&key(b))
}

/// Steps 2 and 3 of the module docs on an OU string.
fn roles_from_ou(ou: &str) -> Option<Vec<String>> {
    let mut role_names = None;
    for part in java_split(ou, ';') {
        if let Some((key, value)) = code_and_name(part) {
            if java_trim(key) == "0" {
                role_names = Some(java_trim(value));
            }
        }
    }
    let roles: Vec<String> = java_split(role_names?, ',')
        .into_iter()
        .map(|r| java_trim(r).to_string())
        .collect();
    (!roles.is_empty()).then_some(roles)
}

/// `^([0-9]+):(.*)$` on `part` (Java regex, `find`, no flags): the two groups.
fn code_and_name(part: &str) -> Option<(&str, &str)> {
    let digits = part.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || part.as_bytes().get(digits) != Some(&b':') {
        return None;
    }
    let rest = &part[digits + 1..];
    // `.` matches no line terminator; `$` matches at the end or before a final one.
    let line_end = rest
        .find(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
        .unwrap_or(rest.len());
    match &rest[line_end..] {
        "" | "\n" | "\r" | "\r\n" | "\u{85}" | "\u{2028}" | "\u{2029}" => {
            Some((&part[..digits], &rest[..line_end]))
        }
        _ => None,
    }
}

/// Java's `Pattern.compile(sep).split(s)`: no separator gives `[s]`; otherwise the pieces,
/// trailing empty ones dropped (so `","` gives `[]`).
fn java_split(s: &str, sep: char) -> Vec<&str> {
    if !s.contains(sep) {
        return vec![s];
    }
    let mut parts: Vec<&str> = s.split(sep).collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// Java's `String.trim`: strips every char `<= U+0020` at both ends.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Java's `Arrays.toString` / slf4j rendering of a string array.
fn java_array(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

/// `BookieAuthZFactory`: authorizes a TLS connection whose client certificate's first role is
/// one of `authorizedRoles` (module docs).
#[derive(Debug, Clone)]
pub struct BookieAuthZ {
    authorized_roles: Vec<String>,
}

impl BookieAuthZ {
    /// Java's `init`: `authorized_roles` must be non-empty with no empty element; the error
    /// is Java's message, naming `authorizedRoles`.
    pub fn new(authorized_roles: Vec<String>) -> Result<Self, String> {
        if authorized_roles.is_empty() || authorized_roles.iter().any(String::is_empty) {
            return Err(NO_ROLES_MESSAGE.to_string());
        }
        Ok(Self { authorized_roles })
    }

    /// The roles a client certificate's first role is compared with.
    pub fn authorized_roles(&self) -> &[String] {
        &self.authorized_roles
    }
}

impl ConnectionAuthorizer for BookieAuthZ {
    fn authorize(&self, peer_chain: Option<&[CertificateDer<'_>]>) -> Result<String, String> {
        let Some(leaf) = peer_chain.and_then(<[_]>::first) else {
            return Err("AuthZ failed: Certificate missing".to_string());
        };
        let allowed = java_array(&self.authorized_roles);
        match roles_of(leaf.as_ref()) {
            Err(e) => Err(format!("AuthZ failed: Failed to parse certificate: {e}")),
            Ok(None) => Err(format!(
                "AuthZ failed: No cert role in OU field of certificate. Must have a role from \
                 allowedRoles list {allowed}"
            )),
            Ok(Some(roles)) => {
                if self.authorized_roles.contains(&roles[0]) {
                    Ok(roles[0].clone())
                } else {
                    Err(format!(
                        "AuthZ failed: Cert role {} doesn't match allowedRoles list {allowed}",
                        java_array(&roles)
                    ))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;

//! `tls::names`: Java / IANA / OpenSSL names of cipher suites and protocol versions →
//! rustls (ring provider), for `tlsEnabledCipherSuites` and `tlsEnabledProtocols`
//! (docs/tls.md §2).
//!
//! Guarantees:
//! * a suite rustls implements is found by its IANA name (what Java and Netty use:
//!   `TLS_AES_128_GCM_SHA256`, `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`), by rustls' own name
//!   (`TLS13_AES_128_GCM_SHA256`) and by its OpenSSL name (`ECDHE-RSA-AES128-GCM-SHA256`);
//! * a name rustls does not implement (CBC, RSA key exchange, DHE, the renegotiation SCSV,
//!   `TLSv1`, `TLSv1.1`, `SSLv3`, `SSLv2Hello`, or a typo) is returned as dropped, with the
//!   reason, so the caller warns; only an empty result is an error (the caller names the key).

use rustls::{SupportedCipherSuite, SupportedProtocolVersion};

/// The suites of the ring provider (TLS 1.3 and TLS 1.2, AEAD with ECDHE only).
fn all_suites() -> &'static [SupportedCipherSuite] {
    rustls::crypto::ring::ALL_CIPHER_SUITES
}

/// rustls' name of `suite` (`TLS13_AES_128_GCM_SHA256`, `TLS_ECDHE_RSA_WITH_...`).
pub fn rustls_name(suite: SupportedCipherSuite) -> String {
    format!("{:?}", suite.suite())
}

/// OpenSSL's TLS 1.2 names of the suites rustls has (TLS 1.3 names are the IANA ones).
const OPENSSL_TLS12: &[(&str, &str)] = &[
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

/// The suite named `name` (any of the three spellings), if rustls implements it.
pub fn cipher_suite(name: &str) -> Option<SupportedCipherSuite> {
    let name = name.trim();
    let iana = OPENSSL_TLS12
        .iter()
        .find(|(openssl, _)| openssl.eq_ignore_ascii_case(name))
        .map_or(name, |(_, iana)| iana);
    // IANA TLS 1.3 names lack rustls' `13`.
    let rustls13 = iana
        .strip_prefix("TLS_")
        .filter(|rest| !rest.contains("_WITH_"))
        .map(|rest| format!("TLS13_{rest}"));
    all_suites().iter().copied().find(|s| {
        let own = rustls_name(*s);
        own.eq_ignore_ascii_case(iana)
            || rustls13
                .as_deref()
                .is_some_and(|n| own.eq_ignore_ascii_case(n))
    })
}

/// The suites of `names` rustls implements, and the names dropped (with why).
pub fn cipher_suites(names: &[String]) -> (Vec<SupportedCipherSuite>, Vec<String>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for n in names {
        match cipher_suite(n) {
            Some(s) if !kept.contains(&s) => kept.push(s),
            Some(_) => {}
            None => dropped.push(format!(
                "{n} (not a suite rustls implements: only AEAD suites with ECDHE exist there)"
            )),
        }
    }
    (kept, dropped)
}

/// The protocol versions of `names` rustls implements, and the names dropped (with why).
pub fn protocol_versions(
    names: &[String],
) -> (Vec<&'static SupportedProtocolVersion>, Vec<String>) {
    let mut kept: Vec<&'static SupportedProtocolVersion> = Vec::new();
    let mut dropped = Vec::new();
    for n in names {
        let v = match n.trim() {
            "TLSv1.3" => Some(&rustls::version::TLS13),
            "TLSv1.2" => Some(&rustls::version::TLS12),
            "TLSv1" | "TLSv1.1" | "SSLv3" | "SSLv2Hello" => {
                dropped.push(format!(
                    "{n} (obsolete: rustls implements only TLSv1.2 and TLSv1.3)"
                ));
                None
            }
            _ => {
                dropped.push(format!(
                    "{n} (not a protocol name: expected TLSv1.2 or TLSv1.3)"
                ));
                None
            }
        };
        if let Some(v) = v {
            if !kept.iter().any(|k| k.version == v.version) {
                kept.push(v);
            }
        }
    }
    (kept, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(n: &str) -> Option<String> {
        cipher_suite(n).map(rustls_name)
    }

    #[test]
    fn iana_rustls_and_openssl_spellings_find_the_same_suite() {
        for n in ["TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"] {
            assert_eq!(
                name_of(n).as_deref(),
                Some("TLS13_AES_128_GCM_SHA256"),
                "{n}"
            );
        }
        for n in [
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            "ECDHE-RSA-AES128-GCM-SHA256",
        ] {
            assert_eq!(
                name_of(n).as_deref(),
                Some("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
                "{n}"
            );
        }
        assert_eq!(
            name_of("ECDHE-ECDSA-CHACHA20-POLY1305").as_deref(),
            Some("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256")
        );
    }

    #[test]
    fn suites_rustls_lacks_are_dropped_with_a_reason() {
        let names: Vec<String> = [
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
            "TLS_RSA_WITH_AES_128_GCM_SHA256",
            "TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
            "TLS_AES_256_GCM_SHA384",
        ]
        .map(String::from)
        .to_vec();
        let (kept, dropped) = cipher_suites(&names);
        assert_eq!(kept.len(), 1);
        assert_eq!(dropped.len(), 3, "{dropped:?}");
    }

    #[test]
    fn protocols_map_and_obsolete_ones_are_dropped() {
        let names: Vec<String> = ["TLSv1.2", "TLSv1.1", "TLSv1.3", "tls13"]
            .map(String::from)
            .to_vec();
        let (kept, dropped) = protocol_versions(&names);
        assert_eq!(kept.len(), 2);
        assert_eq!(dropped.len(), 2, "{dropped:?}");
        assert!(dropped[0].starts_with("TLSv1.1 (obsolete"));
    }
}

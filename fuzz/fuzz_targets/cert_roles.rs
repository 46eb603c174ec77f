//! Fuzz target `cert_roles`: the client certificate a TLS peer presents, read for its roles
//! (`bookie::tls::authz::roles_from_cert`, BookKeeper's `CertUtils.getRolesFromOU`).
//!
//! Checks: arbitrary bytes never panic; roles, when found, are never an empty list; the
//! authorizer (`BookieAuthZ`) decides on the same bytes without panicking, and accepts exactly
//! when the first role is the authorized one.
#![no_main]
use bookie::tls::authz::{roles_from_cert, BookieAuthZ};
use bookie::tls::ConnectionAuthorizer;
use rustls_pki_types::CertificateDer;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let roles = roles_from_cert(data);
    if let Some(roles) = &roles {
        assert!(!roles.is_empty(), "Some(roles) is never empty");
    }
    let authz = BookieAuthZ::new(vec!["pulsar".to_string()]).unwrap();
    let chain = [CertificateDer::from(data.to_vec())];
    let decision = authz.authorize(Some(&chain));
    let first_is_pulsar = roles.as_ref().is_some_and(|r| r[0] == "pulsar");
    assert_eq!(decision.is_ok(), first_is_pulsar, "{decision:?} for roles {roles:?}");
});

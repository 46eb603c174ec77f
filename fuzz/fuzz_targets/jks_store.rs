//! Fuzz target `jks_store`: a JKS key or trust store file as the TLS keys name it
//! (`bookie::tls::jks::JksStore`, docs/tls.md §2.2), opened with a fixed password.
//!
//! Checks: arbitrary bytes never panic (nor allocate beyond their own size); a store that
//! opens gives its first private key (or a named error) and its trusted certificates without
//! panicking, and every trusted certificate is one of the store's own. Seeded with a real
//! keytool store (fuzz/seeds/jks_store/), whose password is the one used here.
#![no_main]
use bookie::tls::jks::{JksEntry, JksStore};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(store) = JksStore::open(data, "changeit") else {
        return;
    };
    let _ = store.first_private_key();
    for cert in store.trusted_certs() {
        let own = store.entries.iter().any(|e| match e {
            JksEntry::TrustedCert { cert: c, .. } => *c == cert,
            JksEntry::PrivateKey { chain, .. } => chain.first() == Some(&cert),
        });
        assert!(own, "a trusted certificate that is not the store's");
    }
});

//! Fuzz target `cookie_text`: the cookie text read from ZooKeeper (`<root>/cookies/<id>`) and
//! from every `current/VERSION` file (`bookie::cookie::Cookie::parse`).
//!
//! Checks: parsing arbitrary bytes never panics; a cookie that parses re-formats to text that
//! parses back to an equal cookie and verifies against itself (with and without storage
//! expansion); a layout-5 cookie built from arbitrary field strings (the input split at NUL
//! bytes) survives `to_text` -> `parse` unchanged, whatever bytes its fields hold.
#![no_main]
use bookie::cookie::{Cookie, CURRENT_COOKIE_LAYOUT_VERSION};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Cookie::parse(data, "fuzz") {
        let text = c.to_text();
        match Cookie::parse(text.as_bytes(), "again") {
            Ok(back) => assert_eq!(back, c, "text {text:?}"),
            Err(e) => panic!("{c:?} formatted as {text:?} does not parse: {e}"),
        }
        assert!(c.verify(&c, "self", false).is_ok());
        assert!(c.verify(&c, "self", true).is_ok());
    }

    let text = String::from_utf8_lossy(data);
    let mut fields = text.split('\0').map(str::to_string);
    let mut next = || fields.next().unwrap_or_default();
    let bookie_host = next();
    let journal_dirs = next();
    let ledger_dirs = next();
    let instance_id = Some(next()).filter(|s| !s.is_empty());
    let index_dirs = Some(next()).filter(|s| !s.is_empty());
    let built = Cookie {
        layout_version: CURRENT_COOKIE_LAYOUT_VERSION,
        bookie_host,
        journal_dirs,
        ledger_dirs,
        instance_id,
        index_dirs,
    };
    let text = built.to_text();
    match Cookie::parse(text.as_bytes(), "built") {
        Ok(back) => assert_eq!(back, built, "text {text:?}"),
        Err(e) => panic!("{built:?} formatted as {text:?} does not parse: {e}"),
    }
});

//! Fuzz target `properties`: the Java-properties parser for `bk_server.conf`
//! (`bookie::config::properties::parse`), the typed configuration built from it
//! (`BookieConfig::from_text_and_args`), and the `metadataServiceUri` parser.
//!
//! Input: byte 0 selects options (bit 0: standalone, bit 1: escape non-BMP characters as
//! UTF-16 surrogate pairs, as `java.util.Properties.store` does); the rest, UTF-8-lossy, is
//! the file text.
//!
//! Checks: nothing panics; the parsed entries, written back the way `Properties.store` escapes
//! them, parse to the same keys and values; entries built from arbitrary strings (the text
//! split at NUL bytes into key/value pairs) survive write -> parse (values lose trailing
//! blanks, which the parser documents); a `metadataServiceUri` that parses re-formats (its
//! `Display`) to a string that parses to an equal value.
#![no_main]
use bookie::config::properties::{self, Property};
use bookie::config::{BookieArgs, BookieConfig, MetadataServiceUri};

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\x0c'
}

/// `java.util.Properties.saveConvert`: `key` escapes every space, a value only a leading one.
fn escape(s: &str, key: bool, utf16_escapes: bool, out: &mut String) {
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            ' ' if key || i == 0 => out.push_str("\\ "),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c if utf16_escapes && (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{:04X}", u));
                }
            }
            c => out.push(c),
        }
    }
}

fn store(entries: &[(String, String)], utf16_escapes: bool) -> String {
    let mut out = String::from("# written by the fuzz target\n");
    for (k, v) in entries {
        escape(k, true, utf16_escapes, &mut out);
        out.push('=');
        escape(v, false, utf16_escapes, &mut out);
        out.push('\n');
    }
    out
}

fn pairs(props: &[Property]) -> Vec<(String, String)> {
    props
        .iter()
        .map(|p| (p.key.clone(), p.value.clone()))
        .collect()
}

fn check_store_round_trip(entries: &[(String, String)], utf16_escapes: bool) {
    let text = store(entries, utf16_escapes);
    match properties::parse(&text) {
        Ok(back) => assert_eq!(&pairs(&back), entries, "text {text:?}"),
        Err(e) => panic!("{entries:?} stored as {text:?} does not parse: {e}"),
    }
}

fn check_uri(s: &str) {
    if let Ok(u) = MetadataServiceUri::parse(s) {
        let shown = u.to_string();
        assert_eq!(
            MetadataServiceUri::parse(&shown).ok().as_ref(),
            Some(&u),
            "{s:?} shown as {shown:?}"
        );
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&opts, rest)) = data.split_first() else {
        return;
    };
    let standalone = opts & 1 != 0;
    let utf16_escapes = opts & 2 != 0;
    let text = String::from_utf8_lossy(rest);

    if let Ok(props) = properties::parse(&text) {
        check_store_round_trip(&pairs(&props), utf16_escapes);
        for p in &props {
            check_uri(&p.value);
        }
    }

    let mut built = Vec::new();
    let mut parts = text.split('\0');
    while let Some(k) = parts.next() {
        let v = parts.next().unwrap_or("");
        built.push((k.to_string(), v.trim_end_matches(is_blank).to_string()));
    }
    check_store_round_trip(&built, utf16_escapes);

    check_uri(&text);

    let args = BookieArgs {
        standalone,
        ..Default::default()
    };
    let _ = BookieConfig::from_text_and_args(Some(&text), None, &args);
});

//! `java_string` against Java 17: each vector's expected code points are what
//! `new String(bytes, StandardCharsets.UTF_8).codePoints()` printed on OpenJDK 17.0.15. The
//! first vectors are picked cases (valid, truncated, overlong, encoded surrogates); the rest
//! are random byte strings on which `String::from_utf8_lossy` answers differently. A
//! differential run of 500,000 random strings against the same JVM found no difference.

use super::{us_ascii, utf8_lossy};

/// (bytes in hex, Java's code points).
const JAVA_17: &[(&str, &[u32])] = &[
    ("eda080", &[0xfffd]),
    ("eda041", &[0xfffd, 0x41]),
    ("e282ac", &[0x20ac]),
    ("f09f9880", &[0x1f600]),
    ("e282", &[0xfffd]),
    ("f09f98", &[0xfffd]),
    ("f09f", &[0xfffd]),
    ("f0", &[0xfffd]),
    ("e0", &[0xfffd]),
    ("c0af", &[0xfffd, 0xfffd]),
    ("e080af", &[0xfffd, 0xfffd, 0xfffd]),
    ("f4908080", &[0xfffd, 0xfffd, 0xfffd, 0xfffd]),
    ("f5808080", &[0xfffd, 0xfffd, 0xfffd, 0xfffd]),
    ("41c3a942", &[0x41, 0xe9, 0x42]),
    ("ed9fbf", &[0xd7ff]),
    ("edbfbf", &[0xfffd]),
    ("f09f41", &[0xfffd, 0x41]),
    ("f0418080", &[0xfffd, 0x41, 0xfffd, 0xfffd]),
    ("8cbccc9fedad", &[0xfffd, 0xfffd, 0x31f, 0xfffd]),
    ("c3a0bfedbfed9b", &[0xe0, 0xfffd, 0xfffd, 0xfffd]),
    ("8e42b2a3eda087", &[0xfffd, 0x42, 0xfffd, 0xfffd, 0xfffd]),
    (
        "f7fea1a590e0edbf",
        &[0xfffd, 0xfffd, 0xfffd, 0xfffd, 0xfffd, 0xfffd, 0xfffd],
    ),
    ("eda0dacecc", &[0xfffd, 0xfffd, 0xfffd, 0xfffd]),
    ("02cce0b3edbfa0", &[0x2, 0xfffd, 0xfffd, 0xfffd]),
    ("eda4b497adc1", &[0xfffd, 0xfffd, 0xfffd, 0xfffd]),
    ("8ff5a5edbf", &[0xfffd, 0xfffd, 0xfffd, 0xfffd]),
    ("be16edbe", &[0xfffd, 0x16, 0xfffd]),
    ("eda2f0c2ef11", &[0xfffd, 0xfffd, 0xfffd, 0xfffd, 0x11]),
    (
        "96e0dfedb53383",
        &[0xfffd, 0xfffd, 0xfffd, 0xfffd, 0x33, 0xfffd],
    ),
    ("a0c6edb4e8", &[0xfffd, 0xfffd, 0xfffd, 0xfffd]),
    ("f4edbf6e", &[0xfffd, 0xfffd, 0x6e]),
    ("ed80f3ae8ffeedb4", &[0xfffd, 0xfffd, 0xfffd, 0xfffd]),
    (
        "f89dcdeda080ffcb",
        &[0xfffd, 0xfffd, 0xfffd, 0xfffd, 0xfffd, 0xfffd],
    ),
    (
        "f5edbbf4fff5f5",
        &[0xfffd, 0xfffd, 0xfffd, 0xfffd, 0xfffd, 0xfffd],
    ),
    (
        "97edb2910fabedc1",
        &[0xfffd, 0xfffd, 0xf, 0xfffd, 0xfffd, 0xfffd],
    ),
    ("8aa0edba90e4", &[0xfffd, 0xfffd, 0xfffd, 0xfffd]),
    ("edbdf4a7", &[0xfffd, 0xfffd, 0xfffd]),
    ("edb81394", &[0xfffd, 0x13, 0xfffd]),
    ("c1c2988dedb180c3", &[0xfffd, 0x98, 0xfffd, 0xfffd, 0xfffd]),
    ("bef56df5edb9", &[0xfffd, 0xfffd, 0x6d, 0xfffd, 0xfffd]),
    ("edb6c0c0c7a9ed", &[0xfffd, 0xfffd, 0xfffd, 0x1e9, 0xfffd]),
    ("708fde93edacd1", &[0x70, 0xfffd, 0x793, 0xfffd, 0xfffd]),
];

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn utf8_lossy_replaces_as_java_17_does() {
    for (hex, java) in JAVA_17 {
        let ours: Vec<u32> = utf8_lossy(&bytes(hex)).chars().map(u32::from).collect();
        assert_eq!(&ours, java, "bytes {hex}");
    }
}

#[test]
fn the_vectors_include_cases_where_rust_lossy_differs() {
    // Without these the test above would not guard the difference that broke s14.
    let differing = JAVA_17
        .iter()
        .filter(|(hex, java)| {
            let rust: Vec<u32> = String::from_utf8_lossy(&bytes(hex))
                .chars()
                .map(u32::from)
                .collect();
            rust != *java
        })
        .count();
    assert!(differing >= 20, "only {differing} vectors differ");
}

#[test]
fn valid_utf8_is_unchanged() {
    let s = "BookieMetadataFormatVersion\t3\n\u{20ac}\u{1f600}é";
    assert_eq!(utf8_lossy(s.as_bytes()), s);
}

#[test]
fn us_ascii_replaces_high_bytes() {
    assert_eq!(us_ascii(b"ab\x80c\xff"), "ab\u{FFFD}c\u{FFFD}");
}

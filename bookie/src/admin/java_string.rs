//! Java's byte-to-String decodings, for admin answers that must equal the Java bookie's.
//!
//! Some Java handlers print raw bytes as a JSON string: `ledger/list?print_metadata=true`
//! prints each ledger's serialized metadata as `new String(bytes, UTF_8)`, `ledger/read`
//! prints entries as `new String(bytes, US_ASCII)`. Those bytes are binary (protobuf
//! varints, ctime, digests), so the answer depends on how malformed input is replaced, and
//! Java's UTF-8 decoder replaces differently from Rust's `String::from_utf8_lossy`:
//!
//! - an encoded surrogate (`ED A0 80`) is one U+FFFD in Java, three in Rust;
//! - a bad three-byte sequence whose second byte is a continuation byte (`ED A0 41`) is one
//!   U+FFFD for both bytes in Java, two in Rust (Rust stops at the first byte that cannot
//!   continue a valid sequence, Java at the first byte that is not `10xxxxxx`).
//!
//! [`utf8_lossy`] follows the JDK's `String.decodeUTF8_UTF16` (JDK 9 and later, the
//! replacing path) step by step; `java_string_tests` checks it against vectors produced by
//! Java 17. The difference made the interop s14 comparison fail on runs whose ledger ctimes
//! happened to encode such bytes.

/// The replacement character Java inserts for malformed input.
const REPL: char = '\u{FFFD}';

/// Java's `new String(bytes, US_ASCII)`: bytes >= 0x80 decode to U+FFFD.
pub(super) fn us_ascii(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| if b < 0x80 { b as char } else { REPL })
        .collect()
}

/// Java's `new String(bytes, UTF_8)`: valid UTF-8 decodes as usual; malformed input becomes
/// U+FFFD exactly where, and as many times as, the JDK puts it.
pub(super) fn utf8_lossy(s: &[u8]) -> String {
    let n = s.len();
    let mut out = String::with_capacity(n);
    let mut i = 0;
    while i < n {
        let b1 = s[i];
        i += 1;
        if b1 < 0x80 {
            out.push(b1 as char);
        } else if b1 & 0xe0 == 0xc0 && b1 & 0x1e != 0 {
            // Two bytes, C2..DF.
            if i < n {
                let b2 = s[i];
                i += 1;
                if not_continuation(b2) {
                    out.push(REPL);
                    i -= 1;
                } else {
                    out.push(char_or_repl(
                        (u32::from(b1 & 0x1f) << 6) | u32::from(b2 & 0x3f),
                    ));
                }
                continue;
            }
            out.push(REPL);
            break;
        } else if b1 & 0xf0 == 0xe0 {
            // Three bytes, E0..EF.
            if i + 1 < n {
                let (b2, b3) = (s[i], s[i + 1]);
                i += 2;
                if malformed3(b1, b2) || not_continuation(b3) {
                    out.push(REPL);
                    i -= 3;
                    i += malformed3_length(b1, s[i + 1]);
                } else {
                    let c = (u32::from(b1 & 0x0f) << 12)
                        | (u32::from(b2 & 0x3f) << 6)
                        | u32::from(b3 & 0x3f);
                    // A surrogate (D800..DFFF) is malformed: one U+FFFD for its three bytes.
                    out.push(char_or_repl(c));
                }
                continue;
            }
            if i < n && malformed3(b1, s[i]) {
                out.push(REPL);
                continue;
            }
            // A truncated sequence at the end: one U+FFFD for what is left.
            out.push(REPL);
            break;
        } else if b1 & 0xf8 == 0xf0 {
            // Four bytes, F0..F7.
            if i + 2 < n {
                let (b2, b3, b4) = (s[i], s[i + 1], s[i + 2]);
                i += 3;
                let uc = (u32::from(b1 & 0x07) << 18)
                    | (u32::from(b2 & 0x3f) << 12)
                    | (u32::from(b3 & 0x3f) << 6)
                    | u32::from(b4 & 0x3f);
                let malformed =
                    not_continuation(b2) || not_continuation(b3) || not_continuation(b4);
                if malformed || !(0x10000..0x110000).contains(&uc) {
                    out.push(REPL);
                    i -= 4;
                    i += malformed4_length(b1, b2, b3);
                } else {
                    out.push(char_or_repl(uc));
                }
                continue;
            }
            if b1 > 0xf4 || (i < n && malformed4_2(b1, s[i])) {
                out.push(REPL);
                continue;
            }
            // A truncated sequence at the end: its second byte is consumed with the first;
            // a third byte that cannot continue it is decoded on its own.
            i += 1;
            out.push(REPL);
            if i < n && not_continuation(s[i]) {
                continue;
            }
            break;
        } else {
            out.push(REPL);
        }
    }
    out
}

fn not_continuation(b: u8) -> bool {
    b & 0xc0 != 0x80
}

/// Java's `isMalformed3_2`: an overlong E0 or a second byte that is not a continuation.
fn malformed3(b1: u8, b2: u8) -> bool {
    (b1 == 0xe0 && b2 & 0xe0 == 0x80) || not_continuation(b2)
}

/// Java's `malformed3`: how many bytes the U+FFFD of a bad three-byte sequence stands for.
fn malformed3_length(b1: u8, b2: u8) -> usize {
    if malformed3(b1, b2) {
        1
    } else {
        2
    }
}

/// Java's `isMalformed4_2`: the second byte cannot follow `b1`.
fn malformed4_2(b1: u8, b2: u8) -> bool {
    (b1 == 0xf0 && !(0x90..=0xbf).contains(&b2))
        || (b1 == 0xf4 && b2 & 0xf0 != 0x80)
        || not_continuation(b2)
}

/// Java's `malformed4`: how many bytes the U+FFFD of a bad four-byte sequence stands for.
fn malformed4_length(b1: u8, b2: u8, b3: u8) -> usize {
    if b1 > 0xf4 || malformed4_2(b1, b2) {
        1
    } else if not_continuation(b3) {
        2
    } else {
        3
    }
}

/// `c` as a char, or U+FFFD where it is a surrogate (the only values that reach here and are
/// not chars).
fn char_or_repl(c: u32) -> char {
    char::from_u32(c).unwrap_or(REPL)
}

#[cfg(test)]
#[path = "java_string_tests.rs"]
mod java_string_tests;

//! Java properties text (`bk_server.conf`) -> ordered `(key, value)` pairs.
//!
//! Owns only the lexical format; typed interpretation lives in `config.rs`.
//!
//! Format (java.util.Properties `load`, the subset BookKeeper files use):
//! * a *logical line* is one or more physical lines joined where a line ends with an odd number
//!   of `\` (the `\` and the next line's leading whitespace are dropped);
//! * leading whitespace (space, tab, form feed) is skipped; blank lines are ignored; lines whose
//!   first non-blank character is `#` or `!` are comments (comments do not continue);
//! * the key ends at the first unescaped `=`, `:` or whitespace; whitespace around the separator
//!   and a single `=`/`:` are skipped; the value is the rest of the line (trailing whitespace is
//!   kept by Java, we trim it because stock files never mean it and it breaks numbers);
//! * escapes in keys and values: `\t \n \r \f`, `\uXXXX`, and `\c` = `c` for any other `c`;
//!   a character outside the Basic Multilingual Plane is a UTF-16 surrogate pair of two `\uXXXX`
//!   escapes (what `Properties.store` writes).
//!
//! Invariants: never panics on any input (it is a trust boundary: operator-edited text);
//! a malformed `\u` escape, or a surrogate that is not half of a pair, is an error naming the
//! line, not a silent substitution.

use std::fmt;

/// One `key=value` entry with the 1-based physical line where its logical line started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// A lexical error in the properties text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertiesError {
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for PropertiesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for PropertiesError {}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\x0c'
}

/// Parses properties text into entries in file order (duplicates are kept; the caller decides).
pub fn parse(text: &str) -> Result<Vec<Property>, PropertiesError> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((idx, first)) = lines.next() {
        let start_line = idx + 1;
        let trimmed = first.trim_start_matches(is_blank);
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        // Join continuation lines.
        let mut logical = String::new();
        let mut current = trimmed.to_string();
        loop {
            let trailing = current.chars().rev().take_while(|c| *c == '\\').count();
            if trailing % 2 == 1 {
                current.pop();
                logical.push_str(&current);
                match lines.next() {
                    Some((_, next)) => current = next.trim_start_matches(is_blank).to_string(),
                    None => break,
                }
            } else {
                logical.push_str(&current);
                break;
            }
        }
        let (key, value) = split_key_value(&logical);
        let key = unescape(key).map_err(|reason| PropertiesError {
            line: start_line,
            reason,
        })?;
        let value = unescape(value).map_err(|reason| PropertiesError {
            line: start_line,
            reason,
        })?;
        out.push(Property {
            key,
            value: value.trim_end_matches(is_blank).to_string(),
            line: start_line,
        });
    }
    Ok(out)
}

/// Splits a logical line into raw (still escaped) key and value.
fn split_key_value(line: &str) -> (&str, &str) {
    let bytes = line.as_bytes();
    let mut i = 0;
    let mut key_end = line.len();
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'=' | b':' | b' ' | b'\t' | b'\x0c' => {
                key_end = i;
                break;
            }
            _ => i += 1,
        }
    }
    let key_end = key_end.min(line.len());
    let key = &line[..key_end];
    let mut rest = &line[key_end..];
    rest = rest.trim_start_matches(is_blank);
    if let Some(r) = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':')) {
        rest = r.trim_start_matches(is_blank);
    }
    (key, rest)
}

fn unescape(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            None => {}
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let (hex, code) = unicode_escape(&mut chars);
                let code = match code {
                    // A high surrogate must be followed by `\u` + a low surrogate.
                    Some(high @ 0xd800..=0xdbff) => {
                        let low = match (chars.next(), chars.next()) {
                            (Some('\\'), Some('u')) => unicode_escape(&mut chars).1,
                            _ => None,
                        };
                        match low {
                            Some(low @ 0xdc00..=0xdfff) => {
                                Some(0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00))
                            }
                            _ => {
                                return Err(format!(
                                    "\\u{hex} is a UTF-16 high surrogate not followed by a \\u low surrogate"
                                ))
                            }
                        }
                    }
                    c => c,
                };
                match code.and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => return Err(format!("malformed \\u escape \"\\u{hex}\"")),
                }
            }
            Some(other) => out.push(other),
        }
    }
    Ok(out)
}

/// The four characters after `\u` (as read) and their value, if they are four hex digits
/// (`from_str_radix` alone would also take a sign: `\u+041`).
fn unicode_escape(chars: &mut std::str::Chars<'_>) -> (String, Option<u32>) {
    let hex: String = chars.by_ref().take(4).collect();
    let code = if hex.len() == 4 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        u32::from_str_radix(&hex, 16).ok()
    } else {
        None
    };
    (hex, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(text: &str) -> Vec<(String, String)> {
        parse(text)
            .unwrap()
            .into_iter()
            .map(|p| (p.key, p.value))
            .collect()
    }

    #[test]
    fn separators_comments_and_whitespace() {
        let got = kv("# comment\n! also comment\n\n  bookiePort=3181\nzkServers : a:1,b:2\njournalDirectory /x/y  \nempty=\n");
        assert_eq!(
            got,
            vec![
                ("bookiePort".into(), "3181".into()),
                ("zkServers".into(), "a:1,b:2".into()),
                ("journalDirectory".into(), "/x/y".into()),
                ("empty".into(), "".into()),
            ]
        );
    }

    #[test]
    fn continuation_lines_and_escapes() {
        let got = kv(
            "ledgerDirectories=/a,\\\n    /b,\\\n\t/c\nk\\=ey=v\\u0041\\tz\nodd=x\\\\\nnext=1\n",
        );
        assert_eq!(
            got,
            vec![
                ("ledgerDirectories".into(), "/a,/b,/c".into()),
                ("k=ey".into(), "vA\tz".into()),
                ("odd".into(), "x\\".into()),
                ("next".into(), "1".into()),
            ]
        );
    }

    #[test]
    fn line_numbers_point_at_logical_line_start() {
        let props = parse("a=1\\\n2\n\nb=3\n").unwrap();
        assert_eq!(props[0].line, 1);
        assert_eq!(props[0].value, "12");
        assert_eq!(props[1].line, 4);
    }

    #[test]
    fn malformed_unicode_escape_is_an_error() {
        let err = parse("a=1\nb=\\u12\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(parse("x=\\uZZZZ").is_err());
        assert!(parse("x=\\u+041").is_err());
    }

    /// Fuzz finding (target `properties`): `Properties.store` writes a character outside the
    /// BMP as a surrogate pair (`\uD83D\uDE00`), which was rejected as a malformed escape.
    #[test]
    fn surrogate_pairs_decode_to_one_character() {
        assert_eq!(
            kv("k\\uD83D\\uDE00=\\uD9DC\\uDDC7x\n"),
            vec![("k\u{1F600}".into(), "\u{871c7}x".into())]
        );
        for bad in [
            "k=\\uD83D",
            "k=\\uD83Dx",
            "k=\\uD83D\\n",
            "k=\\uD83D\\u0041",
            "k=\\uDE00",
            "k=\\uD83D\\uDE0",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        for text in [
            "\\",
            "=",
            ":",
            "\\\\\\",
            "a\\",
            "\u{1F600}=\\",
            "\\u",
            "k=\\\n",
            "\r\n\r\n",
            "=\\u00",
        ] {
            let _ = parse(text);
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let alphabet = [
            b'\\', b'\n', b'=', b':', b' ', b'u', b'0', b'a', b'#', b'!', b'\t', 0xc3, 0xa9,
        ];
        let mut x: u64 = 0x13198a2e03707344;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|i| alphabet[((x >> (i % 50)) as usize + i) % alphabet.len()])
                .collect();
            let _ = parse(&String::from_utf8_lossy(&bytes));
        }
    }
}

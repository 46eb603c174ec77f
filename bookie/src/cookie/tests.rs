//! Unit tests of `cookie` (kept beside it, out of its source file).

use super::*;

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

fn master() -> Cookie {
    Cookie::for_config(
        "10.0.0.5:3181",
        &[p("/data/bk/journal")],
        &[p("/data/bk/ledgers")],
        None,
        Some("0f6e5c9e-2d3b-4a44-9a3c-1a2b3c4d5e6f".into()),
    )
}

#[test]
fn text_matches_reference_example() {
    let expected = "5\nbookieHost: \"10.0.0.5:3181\"\njournalDir: \"/data/bk/journal\"\n\
                    ledgerDirs: \"1\\t/data/bk/ledgers\"\ninstanceId: \"0f6e5c9e-2d3b-4a44-9a3c-1a2b3c4d5e6f\"\n";
    assert_eq!(master().to_text(), expected);
    assert_eq!(Cookie::parse(expected.as_bytes(), "t").unwrap(), master());
}

#[test]
fn round_trip_with_index_dirs_and_odd_characters() {
    let c = Cookie::for_config(
        "my-bookie",
        &[p("/j1"), p("/j 2")],
        &[p("/l1"), p("/l\"2")],
        Some(&[p("/idx/é")]),
        None,
    );
    let text = c.to_text();
    assert!(
        text.contains("indexDirs: \"1\\t/idx/\\303\\251\""),
        "{text}"
    );
    assert!(!text.contains("instanceId"));
    let back = Cookie::parse(text.as_bytes(), "t").unwrap();
    assert_eq!(back, c);
    assert_eq!(
        decode_dirs(&back.ledger_dirs).unwrap(),
        vec!["/l1".to_string(), "/l\"2".to_string()]
    );
}

#[test]
fn parses_layout_3_and_java_variations() {
    let c = Cookie::parse(b"3\n10.0.0.5:3181\n/j\n1\t/l\n", "t").unwrap();
    assert_eq!(c.layout_version, 3);
    assert_eq!(c.ledger_dirs, "1\t/l");
    assert_eq!(Cookie::parse(c.to_text().as_bytes(), "t").unwrap(), c);
    // Field order, single quotes, hex escapes and concatenation are accepted.
    let c = Cookie::parse(
        b"4\nledgerDirs: '1\\x09/l'\nbookieHost: \"h:\" \"1\"\njournalDir: \"/j\"\n",
        "t",
    )
    .unwrap();
    assert_eq!(c.bookie_host, "h:1");
    assert_eq!(c.ledger_dirs, "1\t/l");
}

/// Fuzz finding (target `cookie_text`): a layout-3 line ending in `\r\r\n` kept one `\r`
/// in the field, which `to_text` then wrote as a line end, so the cookie changed on a
/// rewrite. Lines now end at `\n`, `\r` or `\r\n`, as Java's `BufferedReader.readLine`.
#[test]
fn layout_3_lines_end_like_java_readline() {
    let c = Cookie::parse(b"3\r\nh\r\r\nj\rl\n", "t").unwrap();
    assert_eq!(
        (
            c.bookie_host.as_str(),
            c.journal_dirs.as_str(),
            c.ledger_dirs.as_str()
        ),
        ("h", "", "j")
    );
    assert_eq!(Cookie::parse(c.to_text().as_bytes(), "t").unwrap(), c);
    let c = Cookie::parse(b"3\rh\nj\r\nl", "t").unwrap();
    assert_eq!(
        (
            c.bookie_host.as_str(),
            c.journal_dirs.as_str(),
            c.ledger_dirs.as_str()
        ),
        ("h", "j", "l")
    );
    let crash = b"3\n\r\r\r\r\n\n\n\r\r\n\n\x0b\0\0\x05\0\n\r\r";
    let c = Cookie::parse(crash, "t").unwrap();
    assert_eq!(Cookie::parse(c.to_text().as_bytes(), "t").unwrap(), c);
    // Layout 5 after a `\r\n` or lone `\r` version line.
    let c = Cookie::parse(
        b"5\r\nbookieHost: \"h\"\njournalDir: \"j\"\nledgerDirs: \"1\\tl\"\n",
        "t",
    )
    .unwrap();
    assert_eq!(c.ledger_dirs, "1\tl");
    assert_eq!(Cookie::parse(c.to_text().as_bytes(), "t").unwrap(), c);
}

#[test]
fn corrupt_cookies_are_errors_not_panics() {
    for bad in [
        &b""[..],
        b"2\nh\nj\nl\n",
        b"x\n",
        b"5\nbookieHost: \"h\"\n",
        b"5\nbookieHost: \"h\njournalDir: \"j\"\nledgerDirs: \"1\\tl\"\n",
        b"5\nbookieHost \"h\"\n",
        b"5\nbookieHost: \"h\"\nbookieHost: \"h\"\njournalDir: \"j\"\nledgerDirs: \"l\"\n",
        b"5\nfoo: \"h\"\n",
        b"5\nbookieHost: \"\\400\"\n",
        b"5\nbookieHost: \"\\q\"\n",
        b"\xff\xfe",
        b"3\nh\n",
    ] {
        match Cookie::parse(bad, "t") {
            Err(CookieError::Corrupt { .. }) => {}
            other => panic!("{:?} -> {other:?}", String::from_utf8_lossy(bad)),
        }
    }
}

#[test]
fn verify_rules() {
    let m = master();
    assert!(m.verify(&m, "x", false).is_ok());
    let mut other = m.clone();
    other.bookie_host = "10.0.0.6:3181".into();
    let e = m.verify(&other, "zk", false).unwrap_err().to_string();
    assert!(
        e.contains("bookieHost") && e.contains("10.0.0.6:3181"),
        "{e}"
    );
    let mut other = m.clone();
    other.journal_dirs = "/data/bk/journal,/other".into();
    assert!(matches!(
        m.verify(&other, "x", false),
        Err(CookieError::Mismatch {
            field: "journalDir",
            ..
        })
    ));
    let mut other = m.clone();
    other.instance_id = None;
    assert!(matches!(
        m.verify(&other, "x", false),
        Err(CookieError::Mismatch {
            field: "instanceId",
            ..
        })
    ));
    // Missing indexDirs equals the same side's ledgerDirs.
    let mut with_index = m.clone();
    with_index.index_dirs = Some(m.ledger_dirs.clone());
    assert!(m.verify(&with_index, "x", false).is_ok());
    assert!(with_index.verify(&m, "x", false).is_ok());
    // Superset only with expansion.
    let bigger = Cookie::for_config(
        "10.0.0.5:3181",
        &[p("/data/bk/journal")],
        &[p("/data/bk/ledgers"), p("/data/bk/ledgers2")],
        None,
        m.instance_id.clone(),
    );
    assert!(bigger.verify(&m, "x", false).is_err());
    assert!(bigger.verify(&m, "x", true).is_ok());
    assert!(
        m.verify(&bigger, "x", true).is_err(),
        "a removed dir is never accepted"
    );
}

fn dir(path: &str, journal: bool, cookie: Option<Cookie>, file: Option<&str>) -> DirCookie {
    DirCookie {
        dir: p(path),
        is_journal: journal,
        cookie,
        first_file: file.map(p),
    }
}

#[test]
fn plan_decisions() {
    let m = master();
    let fresh = [
        dir("/data/bk/journal", true, None, None),
        dir("/data/bk/ledgers", false, None, None),
    ];
    assert_eq!(
        plan(&m, None, true, &fresh, false).unwrap(),
        CookiePlan::NewBookie
    );
    assert_eq!(
        plan(&m, None, false, &fresh, false).unwrap(),
        CookiePlan::NewBookie
    );
    let dirty = [
        dir("/data/bk/journal", true, None, Some("x.txn")),
        dir("/data/bk/ledgers", false, None, None),
    ];
    assert!(matches!(
        plan(&m, None, true, &dirty, false),
        Err(CookieError::NewDirNotEmpty { .. })
    ));
    let ok = [
        dir("/data/bk/journal", true, Some(m.clone()), None),
        dir("/data/bk/ledgers", false, Some(m.clone()), None),
    ];
    assert_eq!(
        plan(&m, Some(&m), true, &ok, false).unwrap(),
        CookiePlan::Verified
    );
    assert_eq!(
        plan(&m, None, false, &ok, false).unwrap(),
        CookiePlan::Verified
    );
    assert!(matches!(
        plan(&m, None, true, &ok, false),
        Err(CookieError::MissingInZooKeeper)
    ));
    let wiped = [
        dir("/data/bk/journal", true, Some(m.clone()), None),
        dir("/data/bk/ledgers", false, None, None),
    ];
    assert!(matches!(
        plan(&m, Some(&m), true, &wiped, false),
        Err(CookieError::MissingInDirs { .. })
    ));
    assert!(matches!(
        plan(&m, None, false, &wiped, false),
        Err(CookieError::MissingInDirs { .. })
    ));
    let mut changed = m.clone();
    changed.bookie_host = "other:3181".into();
    assert!(matches!(
        plan(&changed, Some(&m), true, &ok, false),
        Err(CookieError::Mismatch { .. })
    ));
}

#[test]
fn plan_storage_expansion() {
    let old = master();
    let new = Cookie::for_config(
        "10.0.0.5:3181",
        &[p("/data/bk/journal")],
        &[p("/data/bk/ledgers"), p("/data/bk2/ledgers")],
        None,
        old.instance_id.clone(),
    );
    let dirs = [
        dir("/data/bk/journal", true, Some(old.clone()), None),
        dir("/data/bk/ledgers", false, Some(old.clone()), None),
        dir("/data/bk2/ledgers", false, None, None),
    ];
    assert!(plan(&new, Some(&old), true, &dirs, false).is_err());
    assert_eq!(
        plan(&new, Some(&old), true, &dirs, true).unwrap(),
        CookiePlan::Expand {
            new_dirs: vec![p("/data/bk2/ledgers")]
        }
    );
    let nested = [
        dir("/data/bk/journal", true, Some(old.clone()), None),
        dir("/data/bk/ledgers", false, Some(old.clone()), None),
        dir("/data/bk/ledgers/sub", false, None, None),
    ];
    assert!(plan(&new, Some(&old), true, &nested, true).is_err());
    // A dir the stored cookie lists but that lost its VERSION was wiped: refused even with
    // expansion.
    let wiped = [
        dir("/data/bk/journal", true, Some(new.clone()), None),
        dir("/data/bk/ledgers", false, Some(new.clone()), None),
        dir("/data/bk2/ledgers", false, None, None),
    ];
    assert!(matches!(
        plan(&new, Some(&new), true, &wiped, true),
        Err(CookieError::MissingInDirs { .. })
    ));
}

#[test]
fn files_round_trip_through_the_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let mut disk = bk_disk::SyscallDisk::with_queue_depth(8);
    let j = tmp.path().join("journal");
    let l = tmp.path().join("ledgers");
    let m = Cookie::for_config(
        "127.0.0.1:3181",
        std::slice::from_ref(&j),
        std::slice::from_ref(&l),
        None,
        None,
    );
    let states = read_all_dir_cookies(
        &mut disk,
        std::slice::from_ref(&j),
        std::slice::from_ref(&l),
    )
    .unwrap();
    assert!(states
        .iter()
        .all(|d| d.cookie.is_none() && d.first_file.is_none()));
    assert_eq!(
        plan(&m, None, false, &states, false).unwrap(),
        CookiePlan::NewBookie
    );
    write_all_dir_cookies(&mut disk, &states, &m).unwrap();
    let on_disk = std::fs::read_to_string(j.join("current/VERSION")).unwrap();
    assert_eq!(on_disk, m.to_text(), "exact text, no sector padding");
    let states = read_all_dir_cookies(
        &mut disk,
        std::slice::from_ref(&j),
        std::slice::from_ref(&l),
    )
    .unwrap();
    assert_eq!(
        plan(&m, None, false, &states, false).unwrap(),
        CookiePlan::Verified
    );
    // Wipe one directory: refused.
    std::fs::remove_dir_all(&l).unwrap();
    let states = read_all_dir_cookies(
        &mut disk,
        std::slice::from_ref(&j),
        std::slice::from_ref(&l),
    )
    .unwrap();
    assert!(matches!(
        plan(&m, None, false, &states, false),
        Err(CookieError::MissingInDirs { .. })
    ));
    // Old-layout files in the parent are refused.
    std::fs::write(l.join("1.txn"), b"x").unwrap();
    assert!(matches!(
        read_dir_cookie(&mut disk, &l, false),
        Err(CookieError::OldLayout { .. })
    ));
    // A corrupt VERSION is an error, not "no cookie".
    std::fs::write(j.join("current/VERSION"), b"5\ngarbage").unwrap();
    assert!(matches!(
        read_dir_cookie(&mut disk, &j, true),
        Err(CookieError::Corrupt { .. })
    ));
}

/// Seeded mutations of a valid cookie (byte flips, truncations, insertions of the
/// characters the parser treats specially): parse must return, never panic, and whatever
/// it accepts must round-trip. BK_COOKIE_FUZZ_ITERS raises the count.
#[test]
fn mutated_cookies_never_panic() {
    let iters: u64 = std::env::var("BK_COOKIE_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let base = master().to_text().into_bytes();
    let special = [
        b'"', b'\\', b'\n', b':', b'\'', b'0', b'7', b'x', 0xff, 0xc3,
    ];
    let mut x: u64 = 0x243f6a8885a308d3;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..iters {
        let mut b = base.clone();
        for _ in 0..(next() % 4 + 1) {
            let pos = (next() % (b.len() as u64 + 1)) as usize;
            match next() % 4 {
                0 if pos < b.len() => b[pos] = special[(next() % special.len() as u64) as usize],
                1 => b.insert(pos, special[(next() % special.len() as u64) as usize]),
                2 => b.truncate(pos),
                _ if pos < b.len() => {
                    b.remove(pos);
                }
                _ => {}
            }
        }
        if let Ok(c) = Cookie::parse(&b, "fuzz") {
            assert_eq!(Cookie::parse(c.to_text().as_bytes(), "again").unwrap(), c);
        }
    }
}

/// Bytes of a `current/VERSION` written by a stock Java bookie (4.17, interop run): our
/// text for the same configuration must be identical, and must parse back to it.
#[test]
fn identical_to_a_cookie_written_by_the_java_bookie() {
    let java = "5\nbookieHost: \"127.0.0.1:37185\"\n\
                journalDir: \"/work/main/tests/interop/target/runs/run-1795980737653/java/bookie-0/journal\"\n\
                ledgerDirs: \"1\\t/work/main/tests/interop/target/runs/run-1795980737653/java/bookie-0/ledgers\"\n\
                instanceId: \"688a452d-bd0c-4c68-bdc8-d29548d8d099\"\n";
    let base = "/work/main/tests/interop/target/runs/run-1795980737653/java/bookie-0";
    let ours = Cookie::for_config(
        "127.0.0.1:37185",
        &[PathBuf::from(format!("{base}/journal"))],
        &[PathBuf::from(format!("{base}/ledgers"))],
        None,
        Some("688a452d-bd0c-4c68-bdc8-d29548d8d099".into()),
    );
    assert_eq!(ours.to_text(), java);
    assert_eq!(Cookie::parse(java.as_bytes(), "java").unwrap(), ours);
}

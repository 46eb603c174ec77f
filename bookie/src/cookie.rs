//! `cookie`: the cookie that binds a bookie id to its exact directory set and cluster instance
//! (docs/registration.md §5), its text format, the `current/VERSION` file in every journal,
//! ledger and index directory, and the start-up decision of docs/registration.md §5.3.
//!
//! What lives where: this module owns the format, the comparison (`verify`), the local files
//! and the pure decision [`plan`]; `registration` reads/writes the ZooKeeper copy
//! (`<root>/cookies/<bookieId>`) and calls [`plan`] with it.
//!
//! Invariants:
//! * a bookie never starts against directories or a ZooKeeper cookie that disagree with its
//!   configuration (changed id, added/removed/reordered dirs, other cluster instance);
//! * a brand-new bookie writes `current/VERSION` into *every* directory before creating the
//!   ZooKeeper cookie; a directory without VERSION is accepted as new only if `current/` is empty;
//! * `VERSION` files are replaced atomically (temp file, fdatasync, rename, directory sync), so
//!   a crash leaves either the old or the new cookie, never a torn one;
//! * all file access goes through `bk_disk::Disk` (the one crate that touches files);
//! * parsing never panics; a cookie that does not parse is corruption (an error), never
//!   "no cookie".

use std::io;
use std::path::{Path, PathBuf};

use bk_disk::Disk;

/// Cookie layout version written by current Java bookies.
pub const CURRENT_COOKIE_LAYOUT_VERSION: u32 = 5;
/// Oldest layout version a bookie accepts.
pub const MIN_COOKIE_LAYOUT_VERSION: u32 = 3;
/// Name of the cookie file inside `<dir>/current/`.
pub const VERSION_FILE: &str = "VERSION";
/// Upper bound on a cookie's size (a cookie is a few hundred bytes; anything larger is corrupt).
const MAX_COOKIE_BYTES: u64 = 1 << 20;

/// The cookie (protobuf `CookieFormat` of DataFormats.proto, text-encoded).
///
/// Text format, layout version 5 (version >= 4 is parsed the same way):
/// ```text
/// 5\n
/// bookieHost: "<bookie id>"\n
/// journalDir: "<journal dirs joined with ','>"\n
/// ledgerDirs: "<count>\t<dir1>\t<dir2>..."\n      (tab written as the two characters \t)
/// instanceId: "<uuid>"\n                          (only if /ledgers/INSTANCEID exists)
/// indexDirs: "<count>\t<dir1>..."\n               (only if indexDirectories is configured)
/// ```
/// Fields in field-number order (1 bookieHost, 2 journalDir, 3 ledgerDirs, 4 instanceId,
/// 5 indexDirs); strings escaped like protobuf-java `TextFormat` (`\" \\ \n \t ...`, bytes
/// outside 0x20..=0x7e as three-digit octal). Layout version 3 (legacy, read only): four raw
/// lines `3`, bookieHost, journalDir, ledgerDirs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cookie {
    pub layout_version: u32,
    /// Bookie id (`host:port` or the custom `bookieId`).
    pub bookie_host: String,
    /// Configured journal dirs joined with `,` (compared as a string: order and spelling matter).
    pub journal_dirs: String,
    /// Encoded ledger dirs: `<count>\t<dir>\t<dir>...`.
    pub ledger_dirs: String,
    /// Cluster instance id, if the cluster has one.
    pub instance_id: Option<String>,
    /// Encoded index dirs, only when configured.
    pub index_dirs: Option<String>,
}

/// Cookie errors: corruption, I/O failure and mismatches are distinct.
#[derive(Debug, thiserror::Error)]
pub enum CookieError {
    #[error("corrupt cookie at {location}: {reason}")]
    Corrupt { location: String, reason: String },
    #[error("I/O error on cookie {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "cookie mismatch at {location}: {field} is {found:?} there but {expected:?} in this configuration \
         (changed bookie id or directories? restore the old configuration, or reformat this bookie)"
    )]
    Mismatch {
        location: String,
        field: &'static str,
        expected: String,
        found: String,
    },
    #[error(
        "directories {dirs:?} have no cookie (missing: {files}) but the cookie in ZooKeeper exists: a directory \
         was added or wiped (set allowStorageExpansion=true to add empty ledger directories)",
        files = cookie_files(.dirs)
    )]
    MissingInDirs { dirs: Vec<PathBuf> },
    #[error(
        "directory {dir} has no cookie and is not empty (contains {example}); refusing to adopt it"
    )]
    NewDirNotEmpty { dir: PathBuf, example: String },
    #[error(
        "all directories have a cookie but ZooKeeper has none for this bookie: the cluster metadata was \
         formatted or this bookie belongs to another cluster"
    )]
    MissingInZooKeeper,
    #[error("directory {dir} holds pre-cookie (layout < 3) data file {file}; upgrade it with the Java tools first")]
    OldLayout { dir: PathBuf, file: PathBuf },
    #[error("storage expansion is only allowed for ledger/index directories; {dirs:?} changed")]
    ExpansionNotAllowed { dirs: Vec<PathBuf> },
}

/// The cookie files of `dirs` (`<dir>/current/VERSION`), joined with ", ": a refusal names
/// the file an operator finds missing, not only its directory (the fault matrix,
/// bookie/tests/fault_matrix.rs, checks every refusal names the damaged file).
fn cookie_files(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.join("current").join(VERSION_FILE).display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Encodes a dir list the way `ledgerDirs` / `indexDirs` store it.
pub fn encode_dirs(dirs: &[PathBuf]) -> String {
    let mut s = dirs.len().to_string();
    for d in dirs {
        s.push('\t');
        s.push_str(&d.to_string_lossy());
    }
    s
}

/// Decodes `<count>\t<dir>...`; None if the count does not match.
fn decode_dirs(encoded: &str) -> Option<Vec<String>> {
    let mut parts = encoded.split('\t');
    let n: usize = parts.next()?.trim().parse().ok()?;
    let dirs: Vec<String> = parts.map(str::to_string).collect();
    (dirs.len() == n).then_some(dirs)
}

fn escape_text(s: &str, out: &mut String) {
    for &b in s.as_bytes() {
        match b {
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x0b => out.push_str("\\v"),
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'"' => out.push_str("\\\""),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{:03o}", b)),
        }
    }
}

/// Splits off one line the way Java's `BufferedReader.readLine` (which the Java bookie parses
/// cookies with) does: a line ends at `\n`, `\r` or `\r\n`, none of which it contains.
/// None at the end of the text.
fn read_line(s: &str) -> Option<(&str, &str)> {
    if s.is_empty() {
        return None;
    }
    let Some(i) = s.find(['\n', '\r']) else {
        return Some((s, ""));
    };
    let rest = &s[i + 1..];
    let rest = if s.as_bytes()[i] == b'\r' {
        rest.strip_prefix('\n').unwrap_or(rest)
    } else {
        rest
    };
    Some((&s[..i], rest))
}

/// Parses one quoted protobuf text-format string starting at `s` (which begins with a quote);
/// returns the bytes and the rest of the input.
fn parse_quoted(s: &str) -> Result<(Vec<u8>, &str), String> {
    let bytes = s.as_bytes();
    let quote = *bytes.first().ok_or("expected a string")?;
    if quote != b'"' && quote != b'\'' {
        return Err(format!("expected a quoted string, found {s:?}"));
    }
    let mut out = Vec::new();
    let mut i = 1;
    while i < bytes.len() {
        let b = bytes[i];
        if b == quote {
            return Ok((out, &s[i + 1..]));
        }
        if b == b'\n' {
            break;
        }
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        i += 1;
        let e = *bytes.get(i).ok_or("dangling backslash")?;
        i += 1;
        match e {
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'\\' | b'\'' | b'"' | b'?' => out.push(e),
            b'0'..=b'7' => {
                let mut v: u32 = (e - b'0') as u32;
                for _ in 0..2 {
                    match bytes.get(i) {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + (d - b'0') as u32;
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(u8::try_from(v).map_err(|_| "octal escape out of range")?);
            }
            b'x' => {
                let mut v: u32 = 0;
                let mut n = 0;
                while n < 2 {
                    match bytes.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            i += 1;
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    return Err("\\x escape without hex digits".into());
                }
                out.push(v as u8);
            }
            other => return Err(format!("unknown escape \\{}", other as char)),
        }
    }
    Err("unterminated string".into())
}

impl Cookie {
    /// The "master cookie" for this configuration (docs/registration.md §5.3 step 2).
    pub fn for_config(
        bookie_id: &str,
        journal_dirs: &[PathBuf],
        ledger_dirs: &[PathBuf],
        index_dirs: Option<&[PathBuf]>,
        instance_id: Option<String>,
    ) -> Cookie {
        let journal = journal_dirs
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(",");
        Cookie {
            layout_version: CURRENT_COOKIE_LAYOUT_VERSION,
            bookie_host: bookie_id.to_string(),
            journal_dirs: journal,
            ledger_dirs: encode_dirs(ledger_dirs),
            instance_id,
            index_dirs: index_dirs.map(encode_dirs),
        }
    }

    /// The text written to `current/VERSION` and to ZooKeeper.
    pub fn to_text(&self) -> String {
        let mut s = format!("{}\n", self.layout_version);
        if self.layout_version <= 3 {
            s.push_str(&format!(
                "{}\n{}\n{}\n",
                self.bookie_host, self.journal_dirs, self.ledger_dirs
            ));
            return s;
        }
        let mut field = |name: &str, v: &str| {
            s.push_str(name);
            s.push_str(": \"");
            escape_text(v, &mut s);
            s.push_str("\"\n");
        };
        field("bookieHost", &self.bookie_host);
        field("journalDir", &self.journal_dirs);
        field("ledgerDirs", &self.ledger_dirs);
        if let Some(i) = &self.instance_id {
            field("instanceId", i);
        }
        if let Some(i) = &self.index_dirs {
            field("indexDirs", i);
        }
        s
    }

    /// Parses cookie bytes; `location` is used in errors (a path or a znode).
    pub fn parse(bytes: &[u8], location: &str) -> Result<Cookie, CookieError> {
        let corrupt = |reason: String| CookieError::Corrupt {
            location: location.to_string(),
            reason,
        };
        let text = std::str::from_utf8(bytes).map_err(|_| corrupt("not UTF-8".into()))?;
        let (first, rest) = read_line(text).unwrap_or((text, ""));
        let version: u32 = first
            .trim()
            .parse()
            .map_err(|_| corrupt(format!("bad layout version line {:?}", first.trim())))?;
        if version < MIN_COOKIE_LAYOUT_VERSION {
            return Err(corrupt(format!(
                "layout version {version} is older than {MIN_COOKIE_LAYOUT_VERSION}"
            )));
        }
        if version == 3 {
            // Lines as Java reads them: a field never holds `\r`, so `to_text` round-trips.
            let mut lines = Vec::with_capacity(3);
            let mut rest = rest;
            while lines.len() < 3 {
                let Some((line, r)) = read_line(rest) else {
                    break;
                };
                lines.push(line);
                rest = r;
            }
            if lines.len() < 3 {
                return Err(corrupt(
                    "layout 3 cookie needs bookieHost, journalDir and ledgerDirs lines".into(),
                ));
            }
            return Ok(Cookie {
                layout_version: 3,
                bookie_host: lines[0].to_string(),
                journal_dirs: lines[1].to_string(),
                ledger_dirs: lines[2].to_string(),
                instance_id: None,
                index_dirs: None,
            });
        }
        let (mut host, mut journal, mut ledger, mut instance, mut index) =
            (None, None, None, None, None);
        for line in rest.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| corrupt(format!("expected `name: \"value\"`, got {line:?}")))?;
            // Adjacent string literals concatenate, as in protobuf text format.
            let mut value = value.trim_start();
            let mut bytes = Vec::new();
            while !value.is_empty() {
                let (b, r) = parse_quoted(value)
                    .map_err(|r| corrupt(format!("field {}: {r}", name.trim())))?;
                bytes.extend_from_slice(&b);
                value = r.trim_start();
            }
            let v = String::from_utf8(bytes)
                .map_err(|_| corrupt(format!("field {} is not UTF-8", name.trim())))?;
            let slot = match name.trim() {
                "bookieHost" => &mut host,
                "journalDir" => &mut journal,
                "ledgerDirs" => &mut ledger,
                "instanceId" => &mut instance,
                "indexDirs" => &mut index,
                other => return Err(corrupt(format!("unknown field {other:?}"))),
            };
            if slot.replace(v).is_some() {
                return Err(corrupt(format!("field {} repeated", name.trim())));
            }
        }
        Ok(Cookie {
            layout_version: version,
            bookie_host: host.ok_or_else(|| corrupt("missing bookieHost".into()))?,
            journal_dirs: journal.ok_or_else(|| corrupt("missing journalDir".into()))?,
            ledger_dirs: ledger.ok_or_else(|| corrupt("missing ledgerDirs".into()))?,
            instance_id: instance,
            index_dirs: index,
        })
    }

    /// `self` is the master cookie (from configuration); `found` a stored one at `location`.
    /// Java `Cookie.verify` (`allow_superset` = `verifyIsSuperSet`, for allowStorageExpansion:
    /// the configured ledger/index dirs may be a superset of the stored ones).
    pub fn verify(
        &self,
        found: &Cookie,
        location: &str,
        allow_superset: bool,
    ) -> Result<(), CookieError> {
        let mismatch = |field: &'static str, expected: &str, got: &str| CookieError::Mismatch {
            location: location.to_string(),
            field,
            expected: expected.to_string(),
            found: got.to_string(),
        };
        if self.bookie_host != found.bookie_host {
            return Err(mismatch(
                "bookieHost",
                &self.bookie_host,
                &found.bookie_host,
            ));
        }
        if self.journal_dirs != found.journal_dirs {
            return Err(mismatch(
                "journalDir",
                &self.journal_dirs,
                &found.journal_dirs,
            ));
        }
        let dirs_ok = |mine: &str, theirs: &str| {
            if mine == theirs {
                return true;
            }
            if !allow_superset {
                return false;
            }
            match (decode_dirs(mine), decode_dirs(theirs)) {
                (Some(m), Some(t)) => t.iter().all(|d| m.contains(d)),
                _ => false,
            }
        };
        if !dirs_ok(&self.ledger_dirs, &found.ledger_dirs) {
            return Err(mismatch(
                "ledgerDirs",
                &self.ledger_dirs,
                &found.ledger_dirs,
            ));
        }
        // A missing indexDirs on either side stands for that side's ledgerDirs.
        let my_index = self.index_dirs.as_deref().unwrap_or(&self.ledger_dirs);
        let their_index = found.index_dirs.as_deref().unwrap_or(&found.ledger_dirs);
        if !dirs_ok(my_index, their_index) {
            return Err(mismatch("indexDirs", my_index, their_index));
        }
        if self.instance_id != found.instance_id {
            return Err(mismatch(
                "instanceId",
                self.instance_id.as_deref().unwrap_or("<none>"),
                found.instance_id.as_deref().unwrap_or("<none>"),
            ));
        }
        Ok(())
    }
}

/// The state of one directory's `current/VERSION` as found at start-up.
#[derive(Debug, Clone)]
pub struct DirCookie {
    /// The configured directory (the parent of `current/`).
    pub dir: PathBuf,
    /// Whether this is a journal directory (expansion never applies to journals).
    pub is_journal: bool,
    /// The parsed `current/VERSION`, if the file exists.
    pub cookie: Option<Cookie>,
    /// A file found in `current/` (for "not empty" errors), if any.
    pub first_file: Option<PathBuf>,
}

/// What start-up must do (docs/registration.md §5.3 step 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CookiePlan {
    /// Everything present and matching: nothing to write.
    Verified,
    /// New bookie: write VERSION into every directory, then create the ZooKeeper cookie
    /// (which must not exist yet).
    NewBookie,
    /// allowStorageExpansion with new, empty ledger/index dirs: rewrite VERSION everywhere and
    /// update the ZooKeeper cookie with compare-and-set on its version.
    Expand { new_dirs: Vec<PathBuf> },
}

/// Decides what to do from the master cookie, the ZooKeeper cookie (None = absent or standalone
/// mode without ZooKeeper, see `zk_in_use`) and the directory states.
///
/// With `zk_in_use = false` (standalone), the directories alone decide: all missing and empty ->
/// `NewBookie`; all present and matching -> `Verified`; a mix -> `MissingInDirs`.
pub fn plan(
    master: &Cookie,
    zk_cookie: Option<&Cookie>,
    zk_in_use: bool,
    dirs: &[DirCookie],
    allow_storage_expansion: bool,
) -> Result<CookiePlan, CookieError> {
    if let Some(zk) = zk_cookie {
        master.verify(zk, "ZooKeeper cookie", allow_storage_expansion)?;
    }
    let mut missing = Vec::new();
    for d in dirs {
        match &d.cookie {
            Some(c) => {
                let loc = d
                    .dir
                    .join("current")
                    .join(VERSION_FILE)
                    .display()
                    .to_string();
                master.verify(c, &loc, allow_storage_expansion)?;
            }
            None => missing.push(d),
        }
    }
    let present = dirs.len() - missing.len();
    let check_empty = |ds: &[&DirCookie]| -> Result<(), CookieError> {
        for d in ds {
            if let Some(f) = &d.first_file {
                return Err(CookieError::NewDirNotEmpty {
                    dir: d.dir.clone(),
                    example: f.display().to_string(),
                });
            }
        }
        Ok(())
    };
    if missing.is_empty() {
        if zk_in_use && zk_cookie.is_none() {
            return Err(CookieError::MissingInZooKeeper);
        }
        // Stored cookies may be a subset (expansion done in a previous run that crashed before
        // rewriting every VERSION): rewrite when anything differs from the master.
        let stale = dirs.iter().any(|d| d.cookie.as_ref() != Some(master))
            || zk_cookie.is_some_and(|z| z != master);
        if stale && allow_storage_expansion {
            return Ok(CookiePlan::Expand {
                new_dirs: Vec::new(),
            });
        }
        return Ok(CookiePlan::Verified);
    }
    let known_elsewhere = if zk_in_use {
        zk_cookie.is_some()
    } else {
        present > 0
    };
    if !known_elsewhere {
        check_empty(&missing)?;
        return Ok(CookiePlan::NewBookie);
    }
    if !allow_storage_expansion {
        return Err(CookieError::MissingInDirs {
            dirs: missing.iter().map(|d| d.dir.clone()).collect(),
        });
    }
    let journals: Vec<PathBuf> = missing
        .iter()
        .filter(|d| d.is_journal)
        .map(|d| d.dir.clone())
        .collect();
    if !journals.is_empty() {
        return Err(CookieError::ExpansionNotAllowed { dirs: journals });
    }
    // A missing dir that a stored cookie already lists was part of this bookie and has been
    // wiped: never re-adopt it (its data is gone), expansion or not.
    let stored = zk_cookie.or_else(|| dirs.iter().find_map(|d| d.cookie.as_ref()));
    if let Some(stored) = stored {
        let mut listed: Vec<String> = decode_dirs(&stored.ledger_dirs).unwrap_or_default();
        listed.extend(
            stored
                .index_dirs
                .as_deref()
                .and_then(decode_dirs)
                .unwrap_or_default(),
        );
        let wiped: Vec<PathBuf> = missing
            .iter()
            .filter(|d| listed.iter().any(|l| Path::new(l) == d.dir))
            .map(|d| d.dir.clone())
            .collect();
        if !wiped.is_empty() {
            return Err(CookieError::MissingInDirs { dirs: wiped });
        }
    }
    check_empty(&missing)?;
    let known: Vec<&PathBuf> = dirs
        .iter()
        .filter(|d| d.cookie.is_some())
        .map(|d| &d.dir)
        .collect();
    for d in &missing {
        if known.iter().any(|k| d.dir.starts_with(k)) {
            return Err(CookieError::NewDirNotEmpty {
                dir: d.dir.clone(),
                example: "it is inside an existing bookie directory".into(),
            });
        }
    }
    Ok(CookiePlan::Expand {
        new_dirs: missing.iter().map(|d| d.dir.clone()).collect(),
    })
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CookieError + '_ {
    move |source| CookieError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a whole small file through the disk; None if it does not exist.
fn read_small_file(disk: &mut dyn Disk, path: &Path) -> Result<Option<Vec<u8>>, CookieError> {
    match bk_disk::read_small_file(disk, path, false, MAX_COOKIE_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => match bk_disk::TooLarge::of(&e) {
            Some(t) => Err(CookieError::Corrupt {
                location: path.display().to_string(),
                reason: format!("{} bytes is too large for a cookie", t.len),
            }),
            None => Err(io_err(path)(e)),
        },
    }
}

/// Reads `<dir>/current/VERSION` and lists `current/` (and checks the parent for pre-v3 files).
/// Creates `current/` if missing (Java does the same).
pub fn read_dir_cookie(
    disk: &mut dyn Disk,
    dir: &Path,
    is_journal: bool,
) -> Result<DirCookie, CookieError> {
    for f in disk
        .list_dir(dir)
        .or_else(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Ok(Vec::new())
            } else {
                Err(e)
            }
        })
        .map_err(io_err(dir))?
    {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == VERSION_FILE
            || name.ends_with(".txn")
            || name.ends_with(".idx")
            || name.ends_with(".log")
        {
            return Err(CookieError::OldLayout {
                dir: dir.to_path_buf(),
                file: f,
            });
        }
    }
    let current = dir.join("current");
    disk.create_dir_all(&current).map_err(io_err(&current))?;
    let path = current.join(VERSION_FILE);
    let cookie = match read_small_file(disk, &path)? {
        Some(bytes) => Some(Cookie::parse(&bytes, &path.display().to_string())?),
        None => None,
    };
    let first_file = disk
        .list_dir(&current)
        .map_err(io_err(&current))?
        .into_iter()
        .find(|f| f.file_name().is_none_or(|n| n != VERSION_FILE))
        .map(|f| if f.is_absolute() { f } else { current.join(f) });
    Ok(DirCookie {
        dir: dir.to_path_buf(),
        is_journal,
        cookie,
        first_file,
    })
}

/// Writes `<dir>/current/VERSION` atomically and durably (`bk_disk::replace_file`: the
/// text goes to `VERSION.tmp`, exactly its length, fdatasync, rename, directory sync).
pub fn write_dir_cookie(
    disk: &mut dyn Disk,
    dir: &Path,
    cookie: &Cookie,
) -> Result<(), CookieError> {
    let current = dir.join("current");
    disk.create_dir_all(&current).map_err(io_err(&current))?;
    let path = current.join(VERSION_FILE);
    bk_disk::replace_file(disk, &path, cookie.to_text().as_bytes(), false)
        .map_err(|e| io_err(&e.path)(e.source))
}

/// Reads the cookie state of every configured directory (journal dirs first).
pub fn read_all_dir_cookies(
    disk: &mut dyn Disk,
    journal_dirs: &[PathBuf],
    other_dirs: &[PathBuf],
) -> Result<Vec<DirCookie>, CookieError> {
    let mut out = Vec::new();
    for d in journal_dirs {
        out.push(read_dir_cookie(disk, d, true)?);
    }
    for d in other_dirs {
        if !journal_dirs.contains(d) && !out.iter().any(|x: &DirCookie| &x.dir == d) {
            out.push(read_dir_cookie(disk, d, false)?);
        }
    }
    Ok(out)
}

/// Writes the master cookie to every directory (NewBookie / Expand).
pub fn write_all_dir_cookies(
    disk: &mut dyn Disk,
    dirs: &[DirCookie],
    cookie: &Cookie,
) -> Result<(), CookieError> {
    for d in dirs {
        write_dir_cookie(disk, &d.dir, cookie)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;

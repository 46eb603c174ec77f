//! `bookie_status`: the operator's read-only state across restarts
//! (`persistBookieStatusEnabled`): the `BOOKIE_STATUS` file Java's `BookieStatus` writes in
//! every ledger directory's `current/`, in Java's format, so a bookie swapped either way
//! keeps it.
//!
//! Format (one line, UTF-8; Java's `BookieStatus.toString` / `parse`):
//! `<layout version = 1>,<READ_ONLY | READ_WRITE>,<last update, ms since the epoch>,<manual>\n`.
//! A 3-field line (older Java) means manual = true. Any other line is not a status.
//!
//! Guarantees:
//! * only [`ReadOnlyReason::Manual`] is persisted and restored: a full disk is seen again
//!   by the disk monitor, and a state Java wrote as read-only but not manual is not
//!   restored (Java would leave that read-only state on the first disk check too);
//! * a write goes to every ledger directory (`bk_disk::replace_file`: atomic and durable),
//!   and succeeds if one directory took it (Java's best effort); failures are logged;
//! * at start-up the newest readable status of all directories wins (Java's rule); an
//!   unreadable or malformed file is logged and skipped, never fatal;
//! * with `forceReadOnlyBookie=true` nothing is restored (as Java's `initState`).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::config::BookieConfig;
use crate::handlers::Bookie;
use crate::mode::ReadOnlyReason;

/// The file's name in each ledger directory's `current/` (Java's `BOOKIE_STATUS_FILENAME`).
pub const BOOKIE_STATUS_FILE: &str = "BOOKIE_STATUS";

/// Largest status file read (a status line is about 40 bytes).
const STATUS_FILE_BYTES_MAX: u64 = 4096;

/// One persisted status (the fields of Java's `BookieStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BookieStatus {
    pub read_only: bool,
    /// Set read-only by the operator (admin API), not by a full disk.
    pub manual: bool,
    /// Milliseconds since the epoch of the change; the newest file wins.
    pub updated_ms: i64,
}

impl BookieStatus {
    /// Java's line, newline included.
    pub fn to_text(&self) -> String {
        let mode = if self.read_only {
            "READ_ONLY"
        } else {
            "READ_WRITE"
        };
        format!("1,{mode},{},{}\n", self.updated_ms, self.manual)
    }

    /// Parses Java's line (layout version 1, 3 or 4 fields); `None` for anything else.
    pub fn parse(text: &str) -> Option<BookieStatus> {
        let line = text.lines().next()?.trim();
        let parts: Vec<&str> = line.split(',').map(str::trim).collect();
        if parts.first()?.parse::<i32>().ok()? != 1 || !(3..=4).contains(&parts.len()) {
            return None;
        }
        let read_only = match parts[1] {
            "READ_ONLY" => true,
            "READ_WRITE" => false,
            _ => return None,
        };
        let updated_ms = parts[2].parse::<i64>().ok()?;
        // Java's Boolean.parseBoolean: "true" in any case, anything else false.
        let manual = parts.get(3).is_none_or(|m| m.eq_ignore_ascii_case("true"));
        Some(BookieStatus {
            read_only,
            manual,
            updated_ms,
        })
    }
}

/// `<ledger dir>/current` of every ledger directory: where Java keeps the status.
fn status_dirs(cfg: &BookieConfig) -> Vec<PathBuf> {
    cfg.ledger_dirs
        .iter()
        .map(|d| d.join(crate::config::mapping::CURRENT_DIR))
        .collect()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Writes `status` to every directory; returns how many took it (failures logged).
pub fn write_to_dirs(
    disk: &mut dyn bk_disk::Disk,
    dirs: &[PathBuf],
    status: BookieStatus,
) -> usize {
    let text = status.to_text();
    let mut written = 0;
    for dir in dirs {
        let path = dir.join(BOOKIE_STATUS_FILE);
        match bk_disk::replace_file(disk, &path, text.as_bytes(), false) {
            Ok(()) => written += 1,
            Err(e) => tracing::warn!(path = %path.display(), error = %e,
                "cannot persist the bookie status in this directory (fine if another took it)"),
        }
    }
    written
}

/// The newest readable status of `dirs`, if any.
pub fn read_from_dirs(disk: &mut dyn bk_disk::Disk, dirs: &[PathBuf]) -> Option<BookieStatus> {
    let mut newest: Option<BookieStatus> = None;
    for dir in dirs {
        let path = dir.join(BOOKIE_STATUS_FILE);
        let Some(status) = read_one(disk, &path) else {
            continue;
        };
        if newest.is_none_or(|n| status.updated_ms > n.updated_ms) {
            newest = Some(status);
        }
    }
    newest
}

fn read_one(disk: &mut dyn bk_disk::Disk, path: &Path) -> Option<BookieStatus> {
    match bk_disk::read_small_file(disk, path, false, STATUS_FILE_BYTES_MAX) {
        Ok(bytes) => {
            let status = std::str::from_utf8(&bytes)
                .ok()
                .and_then(BookieStatus::parse);
            if status.is_none() {
                tracing::warn!(path = %path.display(), "bookie status file is not a status; skipped");
            }
            status
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read the bookie status file; skipped");
            None
        }
    }
}

/// At start-up, with `persistBookieStatusEnabled=true`: sets [`ReadOnlyReason::Manual`]
/// when the persisted status is a manual read-only one (module docs). Blocking (small reads).
pub fn restore(cfg: &BookieConfig, bookie: &Bookie) {
    if !cfg.persist_bookie_status_enabled || cfg.force_read_only_bookie {
        return;
    }
    let mut disk = bk_disk::SyscallDisk::new();
    match read_from_dirs(&mut disk, &status_dirs(cfg)) {
        Some(s) if s.read_only && s.manual => {
            tracing::info!(
                updated_ms = s.updated_ms,
                "read-only as persisted by the operator (persistBookieStatusEnabled)"
            );
            bookie.set_read_only(ReadOnlyReason::Manual, true);
        }
        Some(s) => tracing::info!(?s, "persisted bookie status leaves the bookie writable"),
        None => {}
    }
}

/// After the operator changed [`ReadOnlyReason::Manual`] to `read_only` (admin API), with
/// `persistBookieStatusEnabled=true`: persists it in every ledger directory.
pub async fn persist_manual(cfg: &BookieConfig, read_only: bool) {
    if !cfg.persist_bookie_status_enabled {
        return;
    }
    let dirs = status_dirs(cfg);
    let status = BookieStatus {
        read_only,
        manual: read_only,
        updated_ms: now_ms(),
    };
    let written = tokio::task::spawn_blocking(move || {
        write_to_dirs(&mut bk_disk::SyscallDisk::new(), &dirs, status)
    })
    .await
    .unwrap_or(0);
    if written == 0 {
        tracing::warn!(
            ?status,
            "failed to persist the bookie status in any ledger directory"
        );
    } else {
        tracing::info!(?status, "bookie status persisted");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_lines_parse_and_ours_is_javas_format() {
        let s = BookieStatus {
            read_only: true,
            manual: true,
            updated_ms: 1_700_000_000_123,
        };
        assert_eq!(s.to_text(), "1,READ_ONLY,1700000000123,true\n");
        assert_eq!(BookieStatus::parse(&s.to_text()), Some(s));
        // Older Java: three fields mean manual.
        assert_eq!(
            BookieStatus::parse("1,READ_ONLY,5\n"),
            Some(BookieStatus {
                read_only: true,
                manual: true,
                updated_ms: 5
            })
        );
        assert_eq!(
            BookieStatus::parse("1,READ_WRITE,7,false\n").map(|s| (s.read_only, s.manual)),
            Some((false, false))
        );
        for bad in [
            "",
            "2,READ_ONLY,5,true",
            "1,RO,5,true",
            "1,READ_ONLY",
            "1,READ_ONLY,x,true",
        ] {
            assert_eq!(BookieStatus::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_newest_status_of_all_directories_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("l{i}"))).collect();
        for d in &dirs {
            std::fs::create_dir_all(d).unwrap();
        }
        let mut disk = bk_disk::SyscallDisk::new();
        assert_eq!(read_from_dirs(&mut disk, &dirs), None);
        let old = BookieStatus {
            read_only: true,
            manual: true,
            updated_ms: 10,
        };
        assert_eq!(write_to_dirs(&mut disk, &dirs, old), 2);
        let new = BookieStatus {
            read_only: false,
            manual: false,
            updated_ms: 20,
        };
        assert_eq!(write_to_dirs(&mut disk, &dirs[1..], new), 1);
        assert_eq!(read_from_dirs(&mut disk, &dirs), Some(new));
        std::fs::write(dirs[1].join(BOOKIE_STATUS_FILE), "garbage").unwrap();
        assert_eq!(
            read_from_dirs(&mut disk, &dirs),
            Some(old),
            "a bad file is skipped"
        );
    }
}

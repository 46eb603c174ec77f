//! Small real file systems for the disk-full drills: an ext4 image of a given size,
//! loop-mounted in a temporary directory (needs root and loop devices).
//!
//! Where mounting is impossible, [`mount_or_skip`] prints a `SKIPPED` line and returns
//! `None`, so the calling test passes — unless `BK_REQUIRE_LOOP=1` (set by
//! `scripts/test-all.sh`, hence in CI), in which case it panics: a drill that did not run
//! is never reported as passing there.

// Test code sets up real directories directly; only production code is bound by
// ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types, dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A mounted ext4 image; unmounted (lazily, so a straggling process cannot block it) and
/// deleted on drop.
pub struct LoopMount {
    mnt: PathBuf,
    _tmp: tempfile::TempDir,
}

impl LoopMount {
    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mnt
    }

    /// Bytes free for an unprivileged writer (statvfs f_bavail), as `df` shows.
    pub fn free_bytes(&self) -> u64 {
        let out = Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(&self.mnt)
            .output()
            .expect("df");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .expect("df output")
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
    }
}

fn run(cmd: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Formats and mounts an ext4 file system of `size_bytes`.
pub fn mount(size_bytes: u64) -> Result<LoopMount, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let img = tmp.path().join("img");
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
    let f = std::fs::File::create(&img).map_err(|e| e.to_string())?;
    f.set_len(size_bytes).map_err(|e| e.to_string())?;
    drop(f);
    let img_s = img.to_string_lossy().into_owned();
    let mnt_s = mnt.to_string_lossy().into_owned();
    run("mkfs.ext4", &["-q", "-F", "-m", "0", &img_s])?;
    run("mount", &["-o", "loop", &img_s, &mnt_s])?;
    Ok(LoopMount { mnt, _tmp: tmp })
}

/// [`mount`], or `None` after a SKIPPED line when loop mounts are impossible here
/// (panics instead under `BK_REQUIRE_LOOP=1`).
pub fn mount_or_skip(test: &str, size_bytes: u64) -> Option<LoopMount> {
    match mount(size_bytes) {
        Ok(m) => Some(m),
        Err(e) if std::env::var("BK_REQUIRE_LOOP").as_deref() == Ok("1") => {
            panic!("{test}: BK_REQUIRE_LOOP=1 but no loop mount: {e}")
        }
        Err(e) => {
            println!("SKIPPED {test}: no loop mount ({e})");
            None
        }
    }
}

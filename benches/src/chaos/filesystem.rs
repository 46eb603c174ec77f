//! A bookie's own small filesystem, and the ballast file that fills it: how a drill makes a
//! disk really full (drill key `filesystem = SIZE`, actions `fill N` / `free N`) without
//! touching the host's disk or injecting anything into the bookie, so the drill runs against
//! the Java bookie too.
//!
//! The filesystem is ext4 in a sparse image file `<dir>/bookie-N.img`, made with `mkfs.ext4
//! -m 0` (no blocks reserved for root: the bookie runs as root and would otherwise write into
//! them) and loop-mounted on the bookie's data directory, so its journal and ledger
//! directories share it as on a one-disk node. Mounting needs root.
//!
//! The ballast is `<mount>/chaos-ballast`, grown with fallocate (blocks allocated, nothing
//! written: instant) until the filesystem answers ENOSPC, down to 4 KiB steps, so what is left
//! free is less than one block group's rounding. Freeing it deletes the file.
//!
//! Invariants: the filesystem is unmounted when its owner is dropped (lazily when still
//! busy), after the bookie process was killed (bookies.rs drops the process first); nothing
//! here waits without a deadline other than the `mount`/`umount` commands themselves.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The name of the ballast file at the root of a bookie's filesystem.
pub const BALLAST: &str = "chaos-ballast";

/// A loop-mounted ext4 filesystem of a given size on a directory.
#[derive(Debug)]
pub struct LoopFilesystem {
    image: PathBuf,
    mount: PathBuf,
    size: u64,
}

impl LoopFilesystem {
    /// Makes an ext4 filesystem of `size` bytes in `image` and mounts it on `mount` (which
    /// must exist and should be empty).
    pub fn create(image: &Path, mount: &Path, size: u64) -> Result<LoopFilesystem, String> {
        let f = std::fs::File::create(image)
            .map_err(|e| format!("cannot create {}: {e}", image.display()))?;
        f.set_len(size)
            .map_err(|e| format!("cannot size {}: {e}", image.display()))?;
        drop(f);
        run(
            Command::new("mkfs.ext4")
                .args(["-q", "-F", "-m", "0"])
                .arg(image),
            "mkfs.ext4",
        )?;
        run(
            Command::new("mount")
                .args(["-o", "loop"])
                .arg(image)
                .arg(mount),
            "mount -o loop (filesystem = needs root)",
        )?;
        Ok(LoopFilesystem {
            image: image.to_path_buf(),
            mount: mount.to_path_buf(),
            size,
        })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn image(&self) -> &Path {
        &self.image
    }
}

impl Drop for LoopFilesystem {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.mount)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.mount).output();
        }
    }
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run it: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Bytes free to an unprivileged writer on the filesystem of `dir`, and its size.
pub fn free_and_total(dir: &Path) -> Result<(u64, u64), String> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{}: a NUL in the path", dir.display()))?;
    // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(format!(
            "statvfs {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    let frsize = s.f_frsize;
    Ok((s.f_bavail * frsize, s.f_blocks * frsize))
}

/// Grows the ballast file in `dir` until the filesystem is full. Returns (bytes the ballast
/// holds, bytes left free).
pub fn fill(dir: &Path) -> Result<(u64, u64), String> {
    let path = dir.join(BALLAST);
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut len = f
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let mut step: u64 = 64 << 20;
    while step >= 4096 {
        // SAFETY: fallocate on a descriptor we own; mode 0 allocates and extends the file.
        let r = unsafe { libc::fallocate(f.as_raw_fd(), 0, len as i64, step as i64) };
        if r == 0 {
            len += step;
            continue;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOSPC) {
            step /= 2;
            continue;
        }
        return Err(format!("fallocate {}: {e}", path.display()));
    }
    let (free, _) = free_and_total(dir)?;
    Ok((len, free))
}

/// Deletes the ballast file in `dir`; returns the bytes it held (0 when there was none).
pub fn free(dir: &Path) -> Result<u64, String> {
    let path = dir.join(BALLAST);
    let len = match std::fs::metadata(&path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    std::fs::remove_file(&path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the file logic is tested here: `fill` fills whatever filesystem it is on, and the
    /// mount needs root, so both are exercised by the disk-full drill (tests/chaos_drills.rs).
    #[test]
    fn free_of_nothing_is_zero_and_free_removes_the_ballast() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(free(d.path()).unwrap(), 0);
        std::fs::write(d.path().join(BALLAST), vec![0u8; 8192]).unwrap();
        assert_eq!(free(d.path()).unwrap(), 8192);
        assert!(!d.path().join(BALLAST).exists());
        let (free, total) = free_and_total(d.path()).unwrap();
        assert!(total > 0 && free <= total);
    }
}

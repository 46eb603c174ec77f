//! Reading the kernel's process pseudo-files (`/proc/self/...`) for the bookie's
//! `process_*` metrics. They report a length of 0, so [`crate::read_small_file`] (which
//! trusts the length) cannot read them: [`read_proc_text`] reads until end of file,
//! bounded, and [`count_dir_entries`] counts a directory's entries (`/proc/self/fd`).
//!
//! Guarantees: nothing here writes; a read stops at `max_bytes` (an error beyond it,
//! never an unbounded allocation); errors carry the OS errno.

use std::io::{self, Read};
use std::path::Path;

/// The text of a pseudo-file, read to its end; more than `max_bytes` is an error.
pub fn read_proc_text(path: &Path, max_bytes: usize) -> io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    let n = file.take(max_bytes as u64 + 1).read_to_string(&mut text)?;
    if n > max_bytes {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("{} is over {max_bytes} bytes", path.display()),
        ));
    }
    Ok(text)
}

/// Entries of a directory (`.` and `..` not counted).
pub fn count_dir_entries(dir: &Path) -> io::Result<u64> {
    let mut n = 0;
    for entry in std::fs::read_dir(dir)? {
        entry?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_files_and_counts_fds() {
        let stat = read_proc_text(Path::new("/proc/self/stat"), 4096).unwrap();
        assert!(stat.contains(") "), "{stat}");
        assert!(read_proc_text(Path::new("/proc/self/stat"), 4).is_err());
        assert!(count_dir_entries(Path::new("/proc/self/fd")).unwrap() >= 3);
    }
}

//! `memory`: the default size of a DbLedgerStorage-style cache when its key is unset, from the
//! machine's physical memory.
//!
//! Java uses 25% of the JVM's max direct memory (itself the heap size by default). We have no
//! JVM: we take 1/16 of physical memory rounded down to whole MiB (the keys' unit), at least
//! 16 MiB and at most 1 GiB, so the two caches (write cache, read-ahead cache) never exceed 1/8
//! of RAM on small machines. When the physical memory cannot be read, 1 GiB is assumed (64 MiB
//! caches).

/// Default size in bytes of each of the write and read-ahead caches.
pub fn default_cache_bytes() -> usize {
    const MIB: u64 = 1 << 20;
    let bytes = (physical_memory_bytes() / 16).clamp(16 * MIB, 1024 * MIB);
    (bytes / MIB * MIB) as usize
}

/// Physical memory in bytes, or 1 GiB when `sysconf` cannot tell.
fn physical_memory_bytes() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page_size > 0 {
        (pages as u64).saturating_mul(page_size as u64)
    } else {
        1 << 30
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_cache_is_clamped_and_whole_mib() {
        let b = super::default_cache_bytes();
        assert!((16 << 20..=1 << 30).contains(&b), "{b}");
        assert_eq!(b % (1 << 20), 0, "{b}");
    }
}

//! `allocator`: the `bookie` binary's global allocator (a module of the binary, not of the
//! library): jemalloc, configured so that memory freed after a load goes back to the OS
//! within seconds, with the `jemalloc` feature (the default); the system allocator without.
//!
//! Why (ARCHITECTURE.md "Allocator", docs/memory.md §4): with glibc malloc the resident set
//! stayed at its peak after a 5 MiB write storm (the freed blocks stay in the arenas of
//! the many threads that freed them), so the bookie's memory never came back down.
//!
//! Settings (jemalloc's `malloc_conf`, read once at the first allocation):
//! - `background_thread:true`: a jemalloc thread purges unused dirty pages on time, so
//!   an idle bookie (no allocations to trigger a purge) still gives memory back;
//! - `dirty_decay_ms:1000,muzzy_decay_ms:0`: freed pages are returned (MADV_DONTNEED)
//!   over about a second, instead of jemalloc's default 10 s dirty + 10 s muzzy.
//!
//! `_RJEM_MALLOC_CONF` in the environment overrides these (jemalloc's own rule).

#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// A `const char *` jemalloc reads; a raw pointer is not `Sync`, this wrapper is (the
/// bytes are immutable and 'static).
#[cfg(feature = "jemalloc")]
#[repr(transparent)]
pub struct MallocConf(*const std::ffi::c_char);

// SAFETY: the pointer is to an immutable 'static byte string; nothing writes through it.
#[cfg(feature = "jemalloc")]
unsafe impl Sync for MallocConf {}

/// jemalloc's compiled-in options (tikv-jemalloc-sys prefixes jemalloc's symbols with
/// `_rjem_`, so its `malloc_conf` is `_rjem_malloc_conf`).
#[cfg(feature = "jemalloc")]
#[export_name = "_rjem_malloc_conf"]
pub static MALLOC_CONF: MallocConf =
    MallocConf(c"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0".as_ptr());

//! What this build is: the crate version and the git commit it was built from (recorded by
//! `build.rs`; `unknown` when built outside a git checkout). Printed by `bookie --version`
//! and logged at start.

/// The crate version (`Cargo.toml`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit (12 hex digits of HEAD at build time), or `unknown`.
pub const GIT_COMMIT: &str = env!("BOOKIE_GIT_COMMIT");

/// `<version> (git <commit>)`, as `bookie --version` prints it after the program name.
pub const VERSION_LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("BOOKIE_GIT_COMMIT"),
    ")"
);

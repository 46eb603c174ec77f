//! Build script of the `bookie` crate: records the git commit the binary is built from as
//! `BOOKIE_GIT_COMMIT` (12 hex digits of HEAD; uncommitted changes are not flagged, which
//! would mean watching the index and rebuilding on every `git add`),
//! for `bookie --version` and the start-up log line (`src/build_info.rs`). Outside a git
//! checkout (a source tarball) it is `BOOKIE_GIT_COMMIT` from the environment if set, else
//! `unknown`; the build never fails for want of git.

// A build script, not the bookie: ARCHITECTURE.md invariant 1 binds the crates' code.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=BOOKIE_GIT_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    // Rebuild when HEAD moves: HEAD itself, the branch it names, packed refs.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!(
            "cargo:rerun-if-changed={}",
            PathBuf::from(&dir).join("HEAD").display()
        );
    }
    if let (Some(common), Some(head_ref)) = (
        git(&["rev-parse", "--git-common-dir"]),
        git(&["rev-parse", "--symbolic-full-name", "HEAD"]),
    ) {
        let common = PathBuf::from(common);
        // A missing path would make cargo rerun this script on every build.
        for watched in [common.join(head_ref), common.join("packed-refs")] {
            if watched.exists() {
                println!("cargo:rerun-if-changed={}", watched.display());
            }
        }
    }
    let commit = std::env::var("BOOKIE_GIT_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            // Only our own checkout: a tarball unpacked inside some other repository must
            // not take that repository's commit.
            git(&["ls-files", "--full-name", "build.rs"])?;
            git(&["rev-parse", "--short=12", "HEAD"])
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=BOOKIE_GIT_COMMIT={commit}");
}

//! Per-directory disk-usage state machine (stock keys diskUsageThreshold,
//! diskUsageWarnThreshold, diskUsageLwmThreshold; docs/semantics.md §14).
//!
//! Invariant: a directory that became Full stays Full until its used fraction drops
//! below the low-water mark (hysteresis), and an ENOSPC seen while flushing marks its
//! directory Full at once, as does a flush that finds no room below the threshold for
//! its next segment (`room`). The entry log is ReadOnly while any directory is Full
//! (`readOnlyModeOnAnyDiskFullEnabled` = true, the stock default) or, with it false,
//! while every directory is; a full directory takes no new segments either way.

/// State of one ledger directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirState {
    /// Below the warn threshold.
    Ok,
    /// Above `diskUsageWarnThreshold`, below full.
    AlmostFull,
    /// Above `diskUsageThreshold` (or ENOSPC seen), until below the LWM.
    Full,
}

/// Whether the bookie may take writes, as far as ledger storage is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageMode {
    ReadWrite,
    ReadOnly,
}

/// Thresholds (fractions of used space, 0..=1).
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    pub full: f64,
    pub warn: f64,
    pub lwm: f64,
}

/// Next state of a directory given its previous state and used fraction.
pub fn next_dir_state(t: Thresholds, prev: DirState, used: f64) -> DirState {
    if used > t.full || (prev == DirState::Full && used >= t.lwm) {
        DirState::Full
    } else if used > t.warn {
        DirState::AlmostFull
    } else {
        DirState::Ok
    }
}

/// Storage mode from all directory states: read-only when one directory is full
/// (`any_full`, Java's `readOnlyModeOnAnyDiskFullEnabled=true`, the stock default) or
/// when every one is.
pub fn mode_of(states: &[DirState], any_full: bool) -> StorageMode {
    let full = if any_full {
        states.contains(&DirState::Full)
    } else {
        !states.is_empty() && states.iter().all(|s| *s == DirState::Full)
    };
    if full {
        StorageMode::ReadOnly
    } else {
        StorageMode::ReadWrite
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hysteresis() {
        let t = Thresholds {
            full: 0.95,
            warn: 0.90,
            lwm: 0.85,
        };
        let s = next_dir_state(t, DirState::Ok, 0.5);
        assert_eq!(s, DirState::Ok);
        let s = next_dir_state(t, s, 0.92);
        assert_eq!(s, DirState::AlmostFull);
        let s = next_dir_state(t, s, 0.96);
        assert_eq!(s, DirState::Full);
        let s = next_dir_state(t, s, 0.90);
        assert_eq!(s, DirState::Full, "stays full above the LWM");
        let s = next_dir_state(t, s, 0.80);
        assert_eq!(s, DirState::Ok);
        assert_eq!(
            mode_of(&[DirState::Ok, DirState::Full], true),
            StorageMode::ReadOnly
        );
        assert_eq!(
            mode_of(&[DirState::Ok, DirState::AlmostFull], true),
            StorageMode::ReadWrite
        );
        // readOnlyModeOnAnyDiskFullEnabled=false: read-only only when all are full.
        assert_eq!(
            mode_of(&[DirState::Ok, DirState::Full], false),
            StorageMode::ReadWrite
        );
        assert_eq!(
            mode_of(&[DirState::Full, DirState::Full], false),
            StorageMode::ReadOnly
        );
    }
}

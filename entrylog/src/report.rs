//! What the maintenance passes report to their caller (the bookie logs them).

/// What a GC pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// The ledgers this pass deleted, ascending (the bookie drops their in-memory
    /// state and logs them).
    pub deleted_ledgers: Vec<u64>,
    pub removed_segments: usize,
    pub reclaimed_bytes: u64,
    /// The pass was cancelled before it finished (what it reports did happen).
    pub cancelled: bool,
}

/// What a compaction pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionReport {
    /// Segments rewritten (their files are gone).
    pub compacted_segments: usize,
    /// New segments written (a merge turns several segments into one).
    pub output_segments: usize,
    pub removed_segments: usize,
    pub bytes_copied: u64,
    /// Live entries read for copying.
    pub entries_copied: u64,
    pub reclaimed_bytes: u64,
    /// The pass was cancelled before it finished: the group in progress was discarded
    /// (or installed, if its segment was already durable); the counts above are true.
    pub cancelled: bool,
    /// The pass stopped before a group because it had run for its max time
    /// (`minor/majorCompactionMaxTimeMillis`); the groups left wait for the next pass.
    pub max_time_reached: bool,
}

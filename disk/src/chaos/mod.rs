//! Chaos: faults injected on purpose inside a running bookie (docs/chaos.md).
//!
//! A [`ChaosDisk`] wraps a real backend and, operation by operation, asks the shared
//! [`Chaos`] control whether to add latency, fail with EIO or ENOSPC, flip a bit of what
//! a read returned, tear or misdirect a write, or cut the power. Faults are [`FaultSpec`]s scoped by
//! directory kind (journal / ledgers / index), a file-name glob and an operation, with a
//! seeded trigger. One concern per file: `spec` (the fault spec and its JSON parser, a
//! trust boundary), `trigger` (when a matching operation is hit), `control` (active
//! faults, per-kind counts), `disk` (the wrapping `Disk` and each effect's semantics; its
//! child `disk/power_cut` the wrapper's power-cut bookkeeping), `power` (the power cut:
//! what the layer keeps to undo unsynced writes on a real file system, and the cut
//! itself). Tests: `tests`, `power_tests` (real file systems) and `power_sim_tests` (the
//! seeded property test on the simulated disk).
//!
//! Off unless the bookie enables it: without chaos the backend is used unwrapped, so the
//! layer costs nothing. With chaos on but no `power_cut` fault ever added, the power-cut
//! bookkeeping does not run either (one atomic load per call). A power cut leaves every
//! file as the simulated disk's durable image would (`sim`: every write since the file's
//! last successful sync lost), then aborts the process; its limits are in `power`.

mod control;
mod disk;
mod power;
mod spec;
mod trigger;

pub use control::{ActiveFault, Chaos, Decision};
pub use disk::{wrap, ChaosDisk};
pub use power::{Power, PowerCutHook, DRAIN_WAIT};
pub use spec::{
    glob_match, parse_plan, DirKind, DirScope, Effect, FaultKind, FaultSpec, Latency,
    MisdirectedWrite, OpKind, OpScope, SpecError, TornWrite, Trigger, MAX_FAULTS, MAX_LATENCY_MS,
    MAX_MISDIRECT_SECTORS, MAX_PATTERN_LEN,
};
pub use trigger::TriggerState;

#[cfg(test)]
mod power_sim_tests;
#[cfg(test)]
mod power_tests;
#[cfg(test)]
mod tests;

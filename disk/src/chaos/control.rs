//! [`Chaos`]: the shared control of one bookie's fault injection: the directories of each
//! kind, the active faults with their trigger state, and the count of injected faults per
//! kind. Every [`ChaosDisk`](super::ChaosDisk) of the process holds the same `Arc<Chaos>`;
//! the admin API adds, lists and clears faults through it.
//!
//! Deciding a hit ([`Chaos::decide`]): the active faults are scanned in the order they
//! were added; every matching latency fault is offered the operation (their waits add up),
//! and the failing faults (EIO, ENOSPC, bit flip, torn write) are offered it until one
//! fires: at most one of them applies to an operation, and a fault not offered is not
//! counted as having matched. Each hit is counted per kind and logged (the first hit of a
//! fault at `warn`, later ones at `debug`).

use super::power::{Power, PowerCutHook};
use super::spec::{DirKind, Effect, FaultKind, FaultSpec, OpKind, SpecError, MAX_FAULTS};
use super::trigger::TriggerState;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One active fault.
struct Active {
    id: u64,
    spec: FaultSpec,
    state: TriggerState,
}

/// An active fault as the admin API lists it.
#[derive(Clone, Debug)]
pub struct ActiveFault {
    pub id: u64,
    pub spec: FaultSpec,
    /// Matching operations offered to its trigger.
    pub matched: u64,
    /// Operations it was applied to.
    pub hits: u64,
}

/// What happens to one operation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decision {
    /// Total wait of the latency faults hit.
    pub delay: Duration,
    /// The failing (or misdirecting) effect hit, if any, with a draw from its fault's
    /// seeded source (which bit a flip changes, where a misdirected write lands).
    pub failure: Option<(Effect, u64)>,
}

/// The shared control (module docs).
pub struct Chaos {
    roots: Vec<(DirKind, PathBuf)>,
    faults: Mutex<Vec<Active>>,
    next_id: AtomicU64,
    injected: [AtomicU64; FaultKind::ALL.len()],
    power: Power,
    /// Test only: journal segment write+fdatasyncs run as plain writes
    /// ([`Chaos::set_test_only_ack_before_fdatasync`]).
    ack_before_fdatasync: AtomicBool,
}

impl Chaos {
    /// A control with no active fault; `roots` names the directories of each kind (a file
    /// is of the kind of the longest root its path starts with, and of none outside them).
    pub fn new(roots: Vec<(DirKind, PathBuf)>) -> Chaos {
        Chaos {
            roots,
            faults: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            injected: Default::default(),
            power: Power::default(),
            ack_before_fdatasync: AtomicBool::new(false),
        }
    }

    /// **Breaks durability, for tests of the checkers only.** On: a write+fdatasync of a
    /// journal segment (`*.jseg` under a journal directory) runs as a plain write, so the
    /// journal acknowledges adds whose fdatasync never ran, and a power cut loses them.
    /// It exists to prove that a check for lost acknowledged entries can fail; the bookie
    /// accepts its key only in a build with debug assertions (never a release build).
    pub fn set_test_only_ack_before_fdatasync(&self, on: bool) {
        if on {
            tracing::error!(
                "chaos: TEST ONLY: journal write+fdatasync runs without the fdatasync; \
                 acknowledged adds are NOT durable"
            );
        }
        self.ack_before_fdatasync.store(on, Ordering::SeqCst);
    }

    /// Whether a write+fdatasync of `path` is to run without its fdatasync (test only).
    pub(crate) fn skips_sync_of(&self, path: &Path) -> bool {
        self.ack_before_fdatasync.load(Ordering::Relaxed)
            && self.dir_kind(path) == Some(DirKind::Journal)
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".jseg"))
    }

    /// The power-cut state shared by every disk of this control (`power` module).
    pub fn power(&self) -> &Power {
        &self.power
    }

    /// Replaces what a power cut runs once it has restored the files (default:
    /// `std::process::abort`). For tests, which must survive the cut they check.
    pub fn set_power_cut_hook(&self, hook: PowerCutHook) {
        self.power.set_hook(hook);
    }

    /// Adds a checked fault; its trigger starts now. Returns its id.
    pub fn add(&self, spec: FaultSpec) -> Result<u64, SpecError> {
        spec.validate()?;
        let mut faults = self.faults.lock();
        if faults.len() >= MAX_FAULTS {
            return Err(SpecError(format!(
                "at most {MAX_FAULTS} faults may be active; clear some first"
            )));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if spec.fault == Effect::PowerCut {
            // From now on every disk keeps what the cut needs (before the fault can fire).
            self.power.arm();
        }
        let state = TriggerState::new(spec.trigger, spec.seed, Instant::now());
        tracing::warn!(id, ?spec, "chaos: fault added");
        faults.push(Active { id, spec, state });
        Ok(id)
    }

    /// Removes every active fault; returns how many there were.
    pub fn clear(&self) -> usize {
        let mut faults = self.faults.lock();
        let n = faults.len();
        faults.clear();
        if n > 0 {
            tracing::warn!(cleared = n, "chaos: faults cleared");
        }
        n
    }

    /// The active faults in the order they were added, with their counts.
    pub fn list(&self) -> Vec<ActiveFault> {
        self.faults
            .lock()
            .iter()
            .map(|a| ActiveFault {
                id: a.id,
                spec: a.spec.clone(),
                matched: a.state.matched(),
                hits: a.state.hits(),
            })
            .collect()
    }

    /// Faults of `kind` injected since start-up (cleared faults included).
    pub fn injected(&self, kind: FaultKind) -> u64 {
        self.injected[kind.index()].load(Ordering::Relaxed)
    }

    /// The kind of directory `path` lives under (module docs).
    pub fn dir_kind(&self, path: &Path) -> Option<DirKind> {
        self.roots
            .iter()
            .filter(|(_, root)| path.starts_with(root))
            .max_by_key(|(_, root)| root.as_os_str().len())
            .map(|(k, _)| *k)
    }

    /// Decides what happens to one operation `op` on `path` writing `written` bytes.
    pub fn decide(&self, path: &Path, op: OpKind, written: u64) -> Decision {
        let mut decision = Decision::default();
        let mut faults = self.faults.lock();
        if faults.is_empty() {
            return decision;
        }
        let dir = self.dir_kind(path);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let now = Instant::now();
        for a in faults.iter_mut() {
            let is_latency = matches!(a.spec.fault, Effect::Latency(_));
            if !is_latency && decision.failure.is_some() {
                continue;
            }
            if !a.spec.matches(dir, &name, op) || !a.state.fires(written, now) {
                continue;
            }
            let kind = a.spec.kind();
            self.injected[kind.index()].fetch_add(1, Ordering::Relaxed);
            if a.state.hits() == 1 {
                tracing::warn!(id = a.id, kind = kind.name(), ?op, path = %path.display(), "chaos: fault injected (first hit)");
            } else {
                tracing::debug!(id = a.id, kind = kind.name(), ?op, path = %path.display(), "chaos: fault injected");
            }
            match &a.spec.fault {
                Effect::Latency(l) => {
                    let ms = l.ms + a.state.draw(l.jitter_ms);
                    decision.delay += Duration::from_millis(ms);
                }
                other => decision.failure = Some((other.clone(), a.state.draw(u64::MAX))),
            }
        }
        decision
    }
}

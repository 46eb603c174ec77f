//! The fault spec: what one injected fault is ([`FaultSpec`]), and its JSON form, read from
//! the admin API (`POST /api/v1/chaos/faults`) and from a fault plan file. The parser is a
//! trust boundary: [`FaultSpec::from_json`] and [`parse_plan`] never panic, refuse unknown
//! keys and check every value's range (fuzz target `chaos_spec`).
//!
//! JSON form of one fault (every key but `fault` optional):
//!
//! ```json
//! {"dir": "ledgers", "file": "*.log", "op": "read",
//!  "fault": "eio", "trigger": {"every": 3}, "seed": 7}
//! ```
//!
//! - `dir`: `journal`, `ledgers`, `index` or `any` (default): the kind of directory the
//!   file lives under (the bookie names the directories of each kind);
//! - `file`: a glob over the file's name (`*` any run, `?` one character; default `*`);
//! - `op`: `read`, `write`, `fdatasync`, `fallocate`, `open`, `rename` or `any` (default);
//!   a `WriteDatasync` is a `write` followed by an `fdatasync`, each matched on its own;
//! - `fault`: `"eio"`, `"enospc"`, `"bit_flip"` (one bit of what a read returned, storage
//!   intact), `{"torn_write": {"keep_bytes": N}}` (the write stores only its first N bytes,
//!   rounded down to a sector, then fails with EIO; `{"torn_write": {}}` keeps half) or
//!   `{"latency": {"ms": M, "jitter_ms": J}}` (each hit waits M plus a uniform 0..=J ms)
//!   or `"power_cut"` (the operation does not run; every write since each file's last
//!   successful sync is undone and the process aborts; any operation);
//! - `trigger`: `"always"` (default), `"once"`, `{"every": N}` (the Nth, 2Nth, ... match),
//!   `{"probability": p}` (each match with probability p, drawn from `seed`),
//!   `{"after_bytes": N}` (every match once N bytes were written by matching operations:
//!   with `"fault": "enospc"` on writes, a disk that is full above N bytes), or
//!   `{"for_ms": D}` (every match during the D ms after the fault was added);
//! - `seed`: the seed of the fault's random draws (probability, jitter, which bit flips;
//!   default 0), so a plan replays the same faults for the same operations.
//!
//! A plan file is a JSON array of such objects.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest latency one hit may add (a minute): beyond that the disk is gone, not slow.
pub const MAX_LATENCY_MS: u64 = 60_000;
/// Most faults active at once (a bound on the admin API's memory and each operation's scan).
pub const MAX_FAULTS: usize = 256;
/// Longest `file` glob accepted.
pub const MAX_PATTERN_LEN: usize = 256;

/// The kind of directory a file lives under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DirKind {
    Journal,
    Ledgers,
    Index,
}

/// Scope of a fault over directory kinds: one kind or any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DirScope {
    #[default]
    Any,
    Journal,
    Ledgers,
    Index,
}

/// The operation a fault applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Read,
    Write,
    Fdatasync,
    Fallocate,
    Open,
    Rename,
}

/// Scope of a fault over operations: one kind or any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpScope {
    #[default]
    Any,
    Read,
    Write,
    Fdatasync,
    Fallocate,
    Open,
    Rename,
}

/// What a hit does.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Effect {
    /// The operation fails with EIO and changes nothing.
    Eio,
    /// The operation fails with ENOSPC and changes nothing (a failed sync: see layer docs).
    Enospc,
    /// A read returns one bit flipped (chosen from the seed); the stored bytes are intact.
    BitFlip,
    /// A write stores only a prefix, then reports EIO.
    TornWrite(TornWrite),
    /// The operation waits first, then runs.
    Latency(Latency),
    /// The operation does not run: every write since each file's last successful sync is
    /// undone, then the process aborts (`power` module).
    PowerCut,
}

/// Parameters of [`Effect::TornWrite`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TornWrite {
    /// Bytes kept from the start of the write (rounded down to a sector); None: half.
    pub keep_bytes: Option<u64>,
}

/// Parameters of [`Effect::Latency`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    pub ms: u64,
    #[serde(default)]
    pub jitter_ms: u64,
}

/// When a matching operation is hit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Trigger {
    #[default]
    Always,
    Once,
    Every(u64),
    Probability(f64),
    AfterBytes(u64),
    ForMs(u64),
}

/// One fault: scope, effect, trigger, seed (module docs for the JSON form).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    #[serde(default)]
    pub dir: DirScope,
    #[serde(default = "any_file")]
    pub file: String,
    #[serde(default)]
    pub op: OpScope,
    pub fault: Effect,
    #[serde(default)]
    pub trigger: Trigger,
    #[serde(default)]
    pub seed: u64,
}

fn any_file() -> String {
    "*".to_string()
}

/// Why a fault spec or plan was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

impl FaultSpec {
    /// Parses and checks one fault from JSON text (module docs).
    pub fn from_json(text: &[u8]) -> Result<FaultSpec, SpecError> {
        let spec: FaultSpec =
            serde_json::from_slice(text).map_err(|e| SpecError(format!("fault spec: {e}")))?;
        spec.validate()?;
        Ok(spec)
    }

    /// Checks ranges and that the effect can happen to the operation scope.
    pub fn validate(&self) -> Result<(), SpecError> {
        let err = |m: String| Err(SpecError(m));
        if self.file.is_empty() || self.file.len() > MAX_PATTERN_LEN {
            return err(format!(
                "file: a glob of 1 to {MAX_PATTERN_LEN} bytes, got {} bytes",
                self.file.len()
            ));
        }
        match self.trigger {
            Trigger::Every(0) => return err("trigger every: at least 1".into()),
            Trigger::Probability(p) if !(0.0..=1.0).contains(&p) => {
                return err(format!("trigger probability: 0.0 to 1.0, got {p}"))
            }
            _ => {}
        }
        match (&self.fault, self.op) {
            (Effect::BitFlip, OpScope::Read | OpScope::Any) => {}
            (Effect::BitFlip, op) => {
                return err(format!("bit_flip happens to reads, not to op {op:?}"))
            }
            (Effect::TornWrite(_), OpScope::Write | OpScope::Any) => {}
            (Effect::TornWrite(_), op) => {
                return err(format!("torn_write happens to writes, not to op {op:?}"))
            }
            (Effect::Latency(l), _) if l.ms.saturating_add(l.jitter_ms) > MAX_LATENCY_MS => {
                return err(format!(
                    "latency: ms + jitter_ms at most {MAX_LATENCY_MS}, got {} + {}",
                    l.ms, l.jitter_ms
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// The name of the effect, as the metrics and the admin API name it.
    pub fn kind(&self) -> FaultKind {
        match self.fault {
            Effect::Eio => FaultKind::Eio,
            Effect::Enospc => FaultKind::Enospc,
            Effect::BitFlip => FaultKind::BitFlip,
            Effect::TornWrite(_) => FaultKind::TornWrite,
            Effect::Latency(_) => FaultKind::Latency,
            Effect::PowerCut => FaultKind::PowerCut,
        }
    }

    /// Whether this fault's scope covers an operation of `op` on a file of `dir` named `name`.
    pub fn matches(&self, dir: Option<DirKind>, name: &str, op: OpKind) -> bool {
        let dir_ok = match self.dir {
            DirScope::Any => true,
            DirScope::Journal => dir == Some(DirKind::Journal),
            DirScope::Ledgers => dir == Some(DirKind::Ledgers),
            DirScope::Index => dir == Some(DirKind::Index),
        };
        let op_ok = match self.op {
            OpScope::Any => true,
            OpScope::Read => op == OpKind::Read,
            OpScope::Write => op == OpKind::Write,
            OpScope::Fdatasync => op == OpKind::Fdatasync,
            OpScope::Fallocate => op == OpKind::Fallocate,
            OpScope::Open => op == OpKind::Open,
            OpScope::Rename => op == OpKind::Rename,
        };
        // Effects that only make sense for one operation apply to it alone under `any`.
        let effect_ok = match self.fault {
            Effect::BitFlip => op == OpKind::Read,
            Effect::TornWrite(_) => op == OpKind::Write,
            _ => true,
        };
        dir_ok && op_ok && effect_ok && glob_match(self.file.as_bytes(), name.as_bytes())
    }
}

/// Parses a fault plan: a JSON array of fault specs (module docs), at most [`MAX_FAULTS`].
pub fn parse_plan(text: &[u8]) -> Result<Vec<FaultSpec>, SpecError> {
    let specs: Vec<FaultSpec> =
        serde_json::from_slice(text).map_err(|e| SpecError(format!("fault plan: {e}")))?;
    if specs.len() > MAX_FAULTS {
        return Err(SpecError(format!(
            "fault plan: at most {MAX_FAULTS} faults, got {}",
            specs.len()
        )));
    }
    for (i, s) in specs.iter().enumerate() {
        s.validate()
            .map_err(|e| SpecError(format!("fault plan, fault {i}: {e}")))?;
    }
    Ok(specs)
}

/// The kinds of injected fault, each counted on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    Latency,
    Eio,
    Enospc,
    BitFlip,
    TornWrite,
    PowerCut,
}

impl FaultKind {
    pub const ALL: [FaultKind; 6] = [
        FaultKind::Latency,
        FaultKind::Eio,
        FaultKind::Enospc,
        FaultKind::BitFlip,
        FaultKind::TornWrite,
        FaultKind::PowerCut,
    ];

    /// The label value in metrics and the admin API.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Latency => "latency",
            FaultKind::Eio => "eio",
            FaultKind::Enospc => "enospc",
            FaultKind::BitFlip => "bit_flip",
            FaultKind::TornWrite => "torn_write",
            FaultKind::PowerCut => "power_cut",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// `*` matches any run of bytes, `?` one byte, anything else itself. Iterative with one
/// backtrack point, so linear-ish and never recursive on hostile patterns.
pub fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, n));
            p += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example_and_defaults() {
        let s = FaultSpec::from_json(
            br#"{"dir": "ledgers", "file": "*.log", "op": "read",
                 "fault": "eio", "trigger": {"every": 3}, "seed": 7}"#,
        )
        .unwrap();
        assert_eq!(s.dir, DirScope::Ledgers);
        assert_eq!(s.trigger, Trigger::Every(3));
        let d = FaultSpec::from_json(br#"{"fault": {"latency": {"ms": 5}}}"#).unwrap();
        assert_eq!(
            (d.dir, d.op, d.file.as_str()),
            (DirScope::Any, OpScope::Any, "*")
        );
        assert_eq!(d.trigger, Trigger::Always);
        let t = FaultSpec::from_json(br#"{"fault": {"torn_write": {}}}"#).unwrap();
        assert_eq!(t.fault, Effect::TornWrite(TornWrite { keep_bytes: None }));
    }

    #[test]
    fn refuses_bad_specs_with_a_reason() {
        for bad in [
            &br#"{"fault": "eio", "colour": 1}"#[..],
            br#"{"fault": "eio", "trigger": {"every": 0}}"#,
            br#"{"fault": "eio", "trigger": {"probability": 1.5}}"#,
            br#"{"fault": "bit_flip", "op": "write"}"#,
            br#"{"fault": {"torn_write": {}}, "op": "read"}"#,
            br#"{"fault": {"latency": {"ms": 60001}}}"#,
            br#"{"fault": "eio", "file": ""}"#,
            br#"{"fault": "eio", "dir": "tmp"}"#,
            br#"{"dir": "journal"}"#,
            b"[",
            b"",
        ] {
            assert!(
                FaultSpec::from_json(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn plan_is_an_array_checked_fault_by_fault() {
        let plan = parse_plan(br#"[{"fault": "eio"}, {"fault": "enospc", "op": "write"}]"#);
        assert_eq!(plan.unwrap().len(), 2);
        let e = parse_plan(br#"[{"fault": "eio"}, {"fault": "eio", "trigger": {"every": 0}}]"#)
            .unwrap_err();
        assert!(e.0.contains("fault 1"), "{e}");
    }

    #[test]
    fn scope_by_dir_name_and_op() {
        let s = FaultSpec::from_json(
            br#"{"dir": "journal", "file": "*.jseg", "op": "write", "fault": "eio"}"#,
        )
        .unwrap();
        assert!(s.matches(Some(DirKind::Journal), "1.jseg", OpKind::Write));
        assert!(!s.matches(Some(DirKind::Ledgers), "1.jseg", OpKind::Write));
        assert!(!s.matches(None, "1.jseg", OpKind::Write));
        assert!(!s.matches(Some(DirKind::Journal), "checkpoint", OpKind::Write));
        assert!(!s.matches(Some(DirKind::Journal), "1.jseg", OpKind::Read));
        let flip = FaultSpec::from_json(br#"{"fault": "bit_flip"}"#).unwrap();
        assert!(flip.matches(None, "x", OpKind::Read));
        assert!(!flip.matches(None, "x", OpKind::Write));
    }

    /// Every truncation and every one-byte change of a valid spec: no panic, and whatever is
    /// accepted writes back as JSON to an equal spec (the fuzz target `chaos_spec` checks
    /// the same on arbitrary input).
    #[test]
    fn mutated_specs_never_panic_and_accepted_ones_round_trip() {
        let seed = br#"{"dir": "journal", "file": "*.j?eg", "op": "write", "fault": {"latency": {"ms": 5, "jitter_ms": 2}}, "trigger": {"probability": 0.25}, "seed": 3}"#;
        let mut accepted = 0;
        let mut try_one = |bytes: &[u8]| {
            if let Ok(spec) = FaultSpec::from_json(bytes) {
                let back = FaultSpec::from_json(&serde_json::to_vec(&spec).unwrap()).unwrap();
                assert_eq!(back, spec);
                accepted += 1;
            }
            let _ = parse_plan(bytes);
        };
        for n in 0..=seed.len() {
            try_one(&seed[..n]);
        }
        for i in 0..seed.len() {
            for b in [b'"', b'{', b'}', b'0', b'9', b'-', b'.', b'e', b'*', 0xff] {
                let mut m = seed.to_vec();
                m[i] = b;
                try_one(&m);
            }
        }
        assert!(accepted > 10, "{accepted} mutants accepted");
    }

    #[test]
    fn glob() {
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"*.log", b"0001.log"));
        assert!(!glob_match(b"*.log", b"0001.log.tmp"));
        assert!(glob_match(b"a?c*", b"abcdef"));
        assert!(!glob_match(b"a?c", b"ac"));
        assert!(glob_match(b"*a*b*", b"xxaxxbxx"));
        assert!(glob_match(b"ledgers.state", b"ledgers.state"));
    }
}

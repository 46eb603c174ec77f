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
//!   rounded down to a sector, then fails with EIO; `{"torn_write": {}}` keeps half),
//!   `{"misdirected_write": {"sectors": S}}` (the write lands S sectors away from where it
//!   was asked, negative S before it, and reports success; `{"misdirected_write": {}}`:
//!   1 to 8 sectors either way, drawn from `seed`) or
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
    /// A write lands at another offset of the same file and reports success: the asked
    /// range keeps its old bytes, the other range is overwritten.
    MisdirectedWrite(MisdirectedWrite),
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

/// Farthest a misdirected write may be sent, in sectors (1 GiB): far enough for any file
/// the bookie writes, near enough that an offset never overflows.
pub const MAX_MISDIRECT_SECTORS: i64 = 1 << 18;

/// Parameters of [`Effect::MisdirectedWrite`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MisdirectedWrite {
    /// How far the write lands from where it was asked, in sectors (negative: before it;
    /// never 0). None: 1 to 8 sectors either way, drawn from the fault's seed, as the
    /// simulated disk's `misdirected_write` does. A write that would land below offset 0
    /// lands as far after its offset instead.
    pub sectors: Option<i64>,
}

impl MisdirectedWrite {
    /// The offset a write asked at `offset` lands at, given the hit's random `draw`.
    pub fn landing(&self, offset: u64, draw: u64) -> u64 {
        let sectors = self.sectors.unwrap_or_else(|| {
            let n = 1 + (draw % 8) as i64;
            if (draw >> 32) & 1 == 1 {
                -n
            } else {
                n
            }
        });
        let delta = sectors.unsigned_abs() * crate::SECTOR as u64;
        if sectors < 0 && offset >= delta {
            offset - delta
        } else {
            offset.saturating_add(delta)
        }
    }
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
            (Effect::MisdirectedWrite(m), OpScope::Write | OpScope::Any) => match m.sectors {
                Some(0) => return err("misdirected_write sectors: not 0".into()),
                Some(n) if n.unsigned_abs() > MAX_MISDIRECT_SECTORS as u64 => {
                    return err(format!(
                        "misdirected_write sectors: -{MAX_MISDIRECT_SECTORS} to \
                         {MAX_MISDIRECT_SECTORS}, got {n}"
                    ))
                }
                _ => {}
            },
            (Effect::MisdirectedWrite(_), op) => {
                return err(format!(
                    "misdirected_write happens to writes, not to op {op:?}"
                ))
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
            Effect::MisdirectedWrite(_) => FaultKind::MisdirectedWrite,
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
            Effect::TornWrite(_) | Effect::MisdirectedWrite(_) => op == OpKind::Write,
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
    MisdirectedWrite,
}

impl FaultKind {
    pub const ALL: [FaultKind; 7] = [
        FaultKind::Latency,
        FaultKind::Eio,
        FaultKind::Enospc,
        FaultKind::BitFlip,
        FaultKind::TornWrite,
        FaultKind::PowerCut,
        FaultKind::MisdirectedWrite,
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
            FaultKind::MisdirectedWrite => "misdirected_write",
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
        let m =
            FaultSpec::from_json(br#"{"fault": {"misdirected_write": {"sectors": -2}}}"#).unwrap();
        assert_eq!(
            m.fault,
            Effect::MisdirectedWrite(MisdirectedWrite { sectors: Some(-2) })
        );
        assert!(m.matches(None, "x.log", OpKind::Write));
        assert!(!m.matches(None, "x.log", OpKind::Read));
    }

    #[test]
    fn a_misdirected_write_lands_where_its_spec_and_draw_say() {
        let s = crate::SECTOR as u64;
        let at = |sectors, offset, draw| MisdirectedWrite { sectors }.landing(offset, draw);
        assert_eq!(at(Some(3), 10 * s, 0), 13 * s);
        assert_eq!(at(Some(-3), 10 * s, 0), 7 * s);
        // Never below offset 0: as far after instead.
        assert_eq!(at(Some(-3), s, 0), 4 * s);
        // Drawn: 1..=8 sectors, the direction from another bit of the draw.
        let mut seen = std::collections::BTreeSet::new();
        for draw in 0..64u64 {
            for high in [0u64, 1 << 32] {
                let got = at(None, 100 * s, draw | high) as i64 - (100 * s) as i64;
                assert_eq!(got % s as i64, 0);
                let n = got / s as i64;
                assert!((1..=8).contains(&n.abs()), "{n}");
                seen.insert(n);
            }
        }
        assert_eq!(seen.len(), 16, "{seen:?}");
    }

    #[test]
    fn refuses_bad_specs_with_a_reason() {
        for bad in [
            &br#"{"fault": "eio", "colour": 1}"#[..],
            br#"{"fault": "eio", "trigger": {"every": 0}}"#,
            br#"{"fault": "eio", "trigger": {"probability": 1.5}}"#,
            br#"{"fault": "bit_flip", "op": "write"}"#,
            br#"{"fault": {"torn_write": {}}, "op": "read"}"#,
            br#"{"fault": {"misdirected_write": {}}, "op": "fdatasync"}"#,
            br#"{"fault": {"misdirected_write": {"sectors": 0}}}"#,
            br#"{"fault": {"misdirected_write": {"sectors": 262145}}}"#,
            br#"{"fault": {"misdirected_write": {"sectors": -9223372036854775808}}}"#,
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

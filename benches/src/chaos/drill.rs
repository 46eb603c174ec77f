//! The drill file: what `bkchaos` starts, the load it puts on the bookies and the schedule of
//! faults it applies. INI, in the style of bkbench's job files (docs/chaos.md §7 is the
//! reference; `benches/chaos/*.drill` are the standard drills):
//!
//! ```ini
//! ; a comment
//! [drill]
//! description = power cut on one bookie of three under 1 KiB adds
//! bookies = 3            ; bookie-rs bookies bkchaos starts (standalone, own dirs and ports)
//! chaos = true           ; start them with chaosEnabled=true (inject and power_cut need it)
//! zookeeper = false      ; true: start a ZooKeeper and register the bookies in it
//! filesystem = 512m      ; each bookie's data on an ext4 filesystem of its own (needs root)
//! protocol = v2          ; v2 | v3
//! ensemble = 3           ; W: each entry is written to this many bookies ...
//! ack_quorum = 2         ; A: ... and counted acknowledged when this many answered OK
//! ledgers = 4
//! size = 1k              ; entry payload
//! rate = 300             ; adds per second in all (0: as fast as iodepth allows)
//! read_rate = 0          ; reads per second of acknowledged entries during the drill
//! iodepth = 8            ; adds in flight
//! duration = 10s         ; how long the load runs; the schedule's times count from its start
//! set = journalMaxGroupWaitMSec=2   ; a bookie key for every bookie (repeatable)
//!
//! [schedule]
//! 3s = power_cut 1       ; <time> = <action> <bookie index> [<argument>]
//! 5s = restart 1
//! ```
//!
//! Actions: `inject N <fault spec JSON>` (POST /api/v1/chaos/faults), `clear N` (DELETE),
//! `power_cut N` (injects a power cut on the next journal write: the bookie loses what it
//! had not fdatasynced and aborts), `kill N` (SIGKILL), `stop N` / `cont N` (SIGSTOP /
//! SIGCONT, a hung node), `restart N` (SIGKILL if still running, then start on the same
//! directories and ports), `zk_stop` / `zk_start` (no bookie index: stop the drill's
//! ZooKeeper; start it again on its port and data, then wait until every bookie is registered
//! again), `fill N` / `free N` (fill bookie N's own filesystem with a ballast file, delete
//! it; filesystem.rs).
//!
//! Invariants: every error names the file's line and what was expected; a drill that parses
//! is runnable (indices within `bookies`, `ack_quorum <= ensemble <= bookies`, schedule times
//! within `duration`, inject and power_cut only with `chaos = true`, zk_stop and zk_start only
//! with `zookeeper = true` and in turn, fill and free only with `filesystem =`).

use bk_disk::chaos::{Effect, FaultSpec, OpScope};
use std::time::Duration;

use crate::options::{parse_count, parse_size, parse_time, Protocol};

/// A whole drill file.
#[derive(Debug, Clone, PartialEq)]
pub struct Drill {
    /// The file name without extension, or `name =`.
    pub name: String,
    pub description: String,
    pub bookies: usize,
    pub chaos: bool,
    /// Start a ZooKeeper and register the bookies in it (zookeeper.rs).
    pub zookeeper: bool,
    /// Give each bookie a loop-mounted filesystem of this many bytes (filesystem.rs).
    pub filesystem: Option<u64>,
    pub protocol: Protocol,
    pub ensemble: usize,
    pub ack_quorum: usize,
    pub ledgers: usize,
    pub size: u64,
    pub rate: u64,
    pub read_rate: u64,
    pub iodepth: usize,
    pub duration: Duration,
    /// `KEY=VALUE` bookie settings, passed as `--set` to every bookie.
    pub sets: Vec<String>,
    /// In time order.
    pub schedule: Vec<Step>,
}

/// One scheduled action.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Since the load started.
    pub at: Duration,
    /// The bookie it acts on; 0 for the ZooKeeper actions, which act on none.
    pub bookie: usize,
    pub action: Action,
}

/// What a step does to its bookie.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// POST this fault spec (docs/chaos.md §2) to the bookie's chaos API.
    Inject(String),
    /// DELETE every fault.
    Clear,
    /// A power cut on the next journal write.
    PowerCut,
    Kill,
    Stop,
    Cont,
    Restart,
    /// Stop the drill's ZooKeeper.
    ZkStop,
    /// Start it again, then wait until every bookie is registered again.
    ZkStart,
    /// Fill the bookie's own filesystem with a ballast file.
    Fill,
    /// Delete the ballast file.
    Free,
}

impl Action {
    /// The action as written in the file (without the bookie), for reports.
    pub fn verb(&self) -> &'static str {
        match self {
            Action::Inject(_) => "inject",
            Action::Clear => "clear",
            Action::PowerCut => "power_cut",
            Action::Kill => "kill",
            Action::Stop => "stop",
            Action::Cont => "cont",
            Action::Restart => "restart",
            Action::ZkStop => "zk_stop",
            Action::ZkStart => "zk_start",
            Action::Fill => "fill",
            Action::Free => "free",
        }
    }

    /// Whether the action is on the drill's ZooKeeper, not on a bookie.
    pub fn on_zookeeper(&self) -> bool {
        matches!(self, Action::ZkStop | Action::ZkStart)
    }

    /// Whether the action ends the bookie's process on purpose (then its exit is expected).
    pub fn ends_the_process(&self) -> bool {
        matches!(self, Action::PowerCut | Action::Kill | Action::Restart)
    }

    /// Whether the action may leave reads of this bookie answering EIO on purpose: then an
    /// EIO at verification is "detected", not "lost". Bit flips and EIO on reads do; so do
    /// misdirected writes, which damage stored bytes the bookie's checksums then catch.
    pub fn injects_read_errors(&self) -> bool {
        let Action::Inject(spec) = self else {
            return false;
        };
        match FaultSpec::from_json(spec.as_bytes()) {
            Ok(s) => match s.fault {
                Effect::BitFlip | Effect::MisdirectedWrite(_) => true,
                Effect::Eio => matches!(s.op, OpScope::Read | OpScope::Any),
                _ => false,
            },
            // The bookie refuses a spec it cannot parse: nothing is injected.
            Err(_) => false,
        }
    }
}

impl Step {
    /// `power_cut 1`, `inject 0 {...}`: for reports.
    pub fn describe(&self) -> String {
        match &self.action {
            Action::Inject(spec) => format!("inject {} {spec}", self.bookie),
            other if other.on_zookeeper() => other.verb().to_string(),
            other => format!("{} {}", other.verb(), self.bookie),
        }
    }
}

/// Parses a drill file; `name` is used when the file has no `name =`.
pub fn parse_drill(name: &str, text: &str) -> Result<Drill, String> {
    let mut d = Drill {
        name: name.to_string(),
        description: String::new(),
        bookies: 3,
        chaos: false,
        zookeeper: false,
        filesystem: None,
        protocol: Protocol::V2,
        ensemble: 3,
        ack_quorum: 2,
        ledgers: 4,
        size: 1024,
        rate: 200,
        read_rate: 0,
        iodepth: 8,
        duration: Duration::from_secs(10),
        sets: Vec::new(),
        schedule: Vec::new(),
    };
    let mut section = None::<String>;
    let mut seen_drill = false;
    let mut steps: Vec<(usize, Duration, String)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let s = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("line {n}: section header '{line}' has no closing ']'"))?
                .trim()
                .to_ascii_lowercase();
            if s != "drill" && s != "schedule" {
                return Err(format!(
                    "line {n}: unknown section [{s}] (expected [drill] or [schedule])"
                ));
            }
            seen_drill |= s == "drill";
            section = Some(s);
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("line {n}: expected 'key = value', got '{line}'"))?;
        let (key, value) = (key.trim(), value.trim());
        let at = |e: String| format!("line {n}: {key}: {e}");
        match section.as_deref() {
            None => return Err(format!("line {n}: '{key}' is outside any section")),
            Some("schedule") => {
                let t = parse_time(key).map_err(|e| format!("line {n}: {e}"))?;
                steps.push((n, t, value.to_string()));
            }
            Some(_) => match key {
                "name" => d.name = value.to_string(),
                "description" => d.description = value.to_string(),
                "bookies" => d.bookies = count(value, 1, 64).map_err(at)?,
                "chaos" => d.chaos = boolean(value).map_err(at)?,
                "zookeeper" => d.zookeeper = boolean(value).map_err(at)?,
                "filesystem" => {
                    let size = parse_size(value).map_err(at)?;
                    if !(64 << 20..=64 << 30).contains(&size) {
                        return Err(at("must be 64 MiB .. 64 GiB".into()));
                    }
                    d.filesystem = Some(size);
                }
                "protocol" => {
                    d.protocol = match value.to_ascii_lowercase().as_str() {
                        "v2" => Protocol::V2,
                        "v3" => Protocol::V3,
                        _ => return Err(at(format!("expected v2 or v3, got '{value}'"))),
                    }
                }
                "ensemble" => d.ensemble = count(value, 1, 64).map_err(at)?,
                "ack_quorum" => d.ack_quorum = count(value, 1, 64).map_err(at)?,
                "ledgers" => d.ledgers = count(value, 1, 10_000).map_err(at)?,
                "size" => {
                    d.size = parse_size(value).map_err(at)?;
                    if d.size == 0 || d.size > 64 << 20 {
                        return Err(at("must be 1 byte .. 64 MiB".into()));
                    }
                }
                "rate" => d.rate = parse_count(value).map_err(at)?,
                "read_rate" => d.read_rate = parse_count(value).map_err(at)?,
                "iodepth" => d.iodepth = count(value, 1, 4096).map_err(at)?,
                "duration" => {
                    d.duration = parse_time(value).map_err(at)?;
                    if d.duration.is_zero() {
                        return Err(at("must be more than 0".into()));
                    }
                }
                "set" => {
                    if !value.contains('=') {
                        return Err(at(format!("expected KEY=VALUE, got '{value}'")));
                    }
                    d.sets.push(value.to_string());
                }
                other => return Err(format!("line {n}: unknown key '{other}' in [drill]")),
            },
        }
    }
    if !seen_drill {
        return Err("no [drill] section".into());
    }
    if d.ensemble > d.bookies {
        return Err(format!(
            "ensemble {} is larger than bookies {}",
            d.ensemble, d.bookies
        ));
    }
    if d.ack_quorum > d.ensemble {
        return Err(format!(
            "ack_quorum {} is larger than ensemble {}",
            d.ack_quorum, d.ensemble
        ));
    }
    // zk_stop and zk_start alternate, in time order: whether ZooKeeper is down.
    steps.sort_by_key(|s| s.1);
    let mut zk_down = false;
    for (n, at, text) in steps {
        let step = parse_step(at, &text).map_err(|e| format!("line {n}: {e}"))?;
        if step.action.on_zookeeper() {
            if !d.zookeeper {
                return Err(format!(
                    "line {n}: {} needs zookeeper = true in [drill]",
                    step.action.verb()
                ));
            }
            let stops = matches!(step.action, Action::ZkStop);
            if stops == zk_down {
                return Err(format!(
                    "line {n}: {} while ZooKeeper is already {}",
                    step.action.verb(),
                    if zk_down { "stopped" } else { "running" }
                ));
            }
            zk_down = stops;
        }
        if step.bookie >= d.bookies {
            return Err(format!(
                "line {n}: bookie {} does not exist (bookies = {}, counted from 0)",
                step.bookie, d.bookies
            ));
        }
        if matches!(
            step.action,
            Action::Inject(_) | Action::PowerCut | Action::Clear
        ) && !d.chaos
        {
            return Err(format!(
                "line {n}: {} needs chaos = true in [drill]",
                step.action.verb()
            ));
        }
        if matches!(step.action, Action::Fill | Action::Free) && d.filesystem.is_none() {
            return Err(format!(
                "line {n}: {} needs filesystem = SIZE in [drill] (it fills the bookie's own \
                 filesystem, never the host's)",
                step.action.verb()
            ));
        }
        if step.at > d.duration {
            return Err(format!(
                "line {n}: at {:?} is after the drill's duration {:?}",
                step.at, d.duration
            ));
        }
        d.schedule.push(step);
    }
    // Sorted above; stable: steps at the same time keep the file's order.
    Ok(d)
}

fn parse_step(at: Duration, text: &str) -> Result<Step, String> {
    let mut parts = text.splitn(3, char::is_whitespace);
    let verb = parts.next().unwrap_or_default();
    if verb == "zk_stop" || verb == "zk_start" {
        if let Some(extra) = parts.next().filter(|p| !p.trim().is_empty()) {
            return Err(format!(
                "'{verb}' takes no bookie index or argument, got '{}'",
                extra.trim()
            ));
        }
        let action = if verb == "zk_stop" {
            Action::ZkStop
        } else {
            Action::ZkStart
        };
        return Ok(Step {
            at,
            bookie: 0,
            action,
        });
    }
    let bookie: usize = parts
        .next()
        .ok_or_else(|| format!("'{verb}' needs a bookie index"))?
        .trim()
        .parse()
        .map_err(|_| format!("'{text}': the bookie index must be a number"))?;
    let arg = parts.next().map(str::trim).unwrap_or_default();
    let action = match verb {
        "inject" => {
            if arg.is_empty() {
                return Err("inject needs a fault spec (JSON, docs/chaos.md §2)".into());
            }
            serde_json::from_str::<serde_json::Value>(arg)
                .map_err(|e| format!("inject: the fault spec is not JSON: {e}"))?;
            Action::Inject(arg.to_string())
        }
        "clear" => Action::Clear,
        "power_cut" => Action::PowerCut,
        "kill" => Action::Kill,
        "stop" => Action::Stop,
        "cont" => Action::Cont,
        "restart" => Action::Restart,
        "fill" => Action::Fill,
        "free" => Action::Free,
        other => {
            return Err(format!(
                "unknown action '{other}' (inject, clear, power_cut, kill, stop, cont, restart, zk_stop, zk_start, fill, free)"
            ))
        }
    };
    if !arg.is_empty() && !matches!(action, Action::Inject(_)) {
        return Err(format!("'{verb}' takes no argument, got '{arg}'"));
    }
    Ok(Step { at, bookie, action })
}

fn strip_comment(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with(';') || t.starts_with('#') {
        return "";
    }
    // A trailing comment starts at " ;" (JSON specs may hold '#').
    match line.find(" ;") {
        Some(i) => &line[..i],
        None => line,
    }
}

fn count(v: &str, min: usize, max: usize) -> Result<usize, String> {
    let n: usize = v
        .parse()
        .map_err(|_| format!("expected a whole number, got '{v}'"))?;
    if n < min || n > max {
        return Err(format!("must be {min}..={max}, got {n}"));
    }
    Ok(n)
}

fn boolean(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(format!("expected true or false, got '{v}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POWER_CUT: &str = "\
; comment
[drill]
description = a cut
bookies = 3
chaos = true
ensemble = 3
ack_quorum = 2
size = 1k ; trailing comment
rate = 300
duration = 10s
set = journalMaxGroupWaitMSec=2

[schedule]
5s = restart 1
3s = power_cut 1
4s = inject 0 {\"dir\": \"ledgers\", \"op\": \"read\", \"fault\": \"eio\"}
";

    #[test]
    fn parses_a_drill_and_orders_its_schedule() {
        let d = parse_drill("pc", POWER_CUT).unwrap();
        assert_eq!(d.name, "pc");
        assert_eq!((d.bookies, d.ensemble, d.ack_quorum), (3, 3, 2));
        assert_eq!(d.size, 1024);
        assert_eq!(d.sets, vec!["journalMaxGroupWaitMSec=2".to_string()]);
        let verbs: Vec<&str> = d.schedule.iter().map(|s| s.action.verb()).collect();
        assert_eq!(verbs, ["power_cut", "inject", "restart"]);
        assert!(d.schedule[1].action.injects_read_errors());
        assert!(!d.schedule[0].action.injects_read_errors());
        assert_eq!(d.schedule[0].at, Duration::from_secs(3));
    }

    #[test]
    fn which_faults_may_leave_reads_answering_eio() {
        let inject = |spec: &str| Action::Inject(spec.to_string()).injects_read_errors();
        assert!(inject(r#"{"op": "read", "fault": "eio"}"#));
        assert!(inject(r#"{"fault": "eio"}"#));
        assert!(inject(r#"{"fault": "bit_flip"}"#));
        assert!(inject(
            r#"{"dir": "ledgers", "fault": {"misdirected_write": {}}, "trigger": {"every": 4}}"#
        ));
        assert!(!inject(r#"{"op": "write", "fault": "eio"}"#));
        assert!(!inject(
            r#"{"op": "fdatasync", "fault": {"latency": {"ms": 200}}}"#
        ));
        assert!(!inject(r#"{"fault": "no_such_fault"}"#));
        assert!(!Action::Kill.injects_read_errors());
    }

    #[test]
    fn zookeeper_actions_have_no_bookie() {
        let d = parse_drill(
            "zk",
            "[drill]\nzookeeper = true\nduration = 9s\n[schedule]\n5s = zk_start\n2s = zk_stop\n",
        )
        .unwrap();
        assert!(d.zookeeper);
        let steps: Vec<String> = d.schedule.iter().map(Step::describe).collect();
        assert_eq!(steps, ["zk_stop", "zk_start"]);
        assert!(d.schedule.iter().all(|s| s.action.on_zookeeper()));
    }

    #[test]
    fn fill_and_free_act_on_a_bookie_of_its_own_filesystem() {
        let d = parse_drill(
            "full",
            "[drill]\nfilesystem = 512m\n[schedule]\n2s = fill 1\n6s = free 1\n",
        )
        .unwrap();
        assert_eq!(d.filesystem, Some(512 << 20));
        let steps: Vec<String> = d.schedule.iter().map(Step::describe).collect();
        assert_eq!(steps, ["fill 1", "free 1"]);
    }

    #[test]
    fn errors_name_the_line_and_the_problem() {
        let cases = [
            (
                "[drill]\nbookies = 2\nensemble = 2\n[schedule]\n1s = kill 2\n",
                "line 5: bookie 2 does not exist",
            ),
            (
                "[drill]\n[schedule]\n1s = power_cut 0\n",
                "needs chaos = true",
            ),
            (
                "[drill]\nchaos = true\n[schedule]\n1s = inject 0 {nope\n",
                "not JSON",
            ),
            (
                "[drill]\n[schedule]\n1s = fill 0\n",
                "needs filesystem = SIZE",
            ),
            ("[drill]\nfilesystem = 1m\n", "must be 64 MiB .. 64 GiB"),
            (
                "[drill]\nduration = 5s\n[schedule]\n6s = kill 0\n",
                "after the drill's duration",
            ),
            ("[drill]\nensemble = 4\n", "larger than bookies"),
            ("[drill]\nack_quorum = 4\n", "larger than ensemble"),
            ("[drill]\nsize = 0\n", "line 2: size"),
            ("[drill]\nfoo = 1\n", "unknown key 'foo'"),
            (
                "[drill]\n[schedule]\n1s = explode 0\n",
                "unknown action 'explode'",
            ),
            (
                "[drill]\n[schedule]\n1s = kill 0 now\n",
                "takes no argument",
            ),
            (
                "[drill]\n[schedule]\n1s = zk_stop\n",
                "needs zookeeper = true",
            ),
            (
                "[drill]\nzookeeper = true\n[schedule]\n2s = zk_stop\n1s = zk_start\n",
                "line 5: zk_start while ZooKeeper is already running",
            ),
            (
                "[drill]\nzookeeper = true\n[schedule]\n1s = zk_stop 0\n",
                "takes no bookie index",
            ),
            ("[other]\n", "unknown section"),
            ("bookies = 3\n", "outside any section"),
            ("", "no [drill] section"),
        ];
        for (text, want) in cases {
            let err = parse_drill("x", text).unwrap_err();
            assert!(err.contains(want), "{text:?}: got '{err}', want '{want}'");
        }
    }

    /// Drill files are an operator's own, but a typo must give an error, never a panic:
    /// truncations and byte changes of a drill, seeded.
    #[test]
    fn damaged_drills_give_errors_not_panics() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(14);
        let base = format!("{POWER_CUT}zookeeper = true\n7s = zk_stop\n8s = zk_start\n");
        let alphabet = b"[]=;#{}\" 0123456789abkmsz_.-\n\t\xff";
        for _ in 0..20_000 {
            let mut bytes = base.as_bytes().to_vec();
            for _ in 0..rng.random_range(1..6) {
                if bytes.is_empty() {
                    break;
                }
                let i = rng.random_range(0..bytes.len());
                match rng.random_range(0..3) {
                    0 => bytes[i] = alphabet[rng.random_range(0..alphabet.len())],
                    1 => {
                        bytes.remove(i);
                    }
                    _ => bytes.truncate(i.max(1)),
                }
            }
            let _ = parse_drill("fuzz", &String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn the_standard_drills_parse() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/chaos");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("drill") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_stem().unwrap().to_str().unwrap();
            parse_drill(name, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
        assert!(n >= 10, "only {n} standard drills in {dir}");
    }
}

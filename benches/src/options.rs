//! Job options: the table of every option `bkbench` knows, value parsers (sizes, times, counts,
//! percentages, block-size distributions) and the typed [`JobSpec`] a job runs from.
//!
//! Invariants:
//! - The same option names are accepted in job files and on the command line (`--bs=4k`).
//! - Every error names the option and where its value came from (`file:line` or
//!   `command line`), so a user can find the bad line without guessing.
//! - A [`JobSpec`] that [`JobSpec::build`] returns has passed cross-option validation: the
//!   runner never needs to re-check combinations (e.g. batch reads on v3, tailing without a
//!   writer).
//!
//! Units: sizes use binary multipliers (`1k` = 1024 bytes, `k/m/g/t`, optional `b`/`ib`);
//! counts (`number_ios`, `rate_iops`) use decimal multipliers (`10k` = 10000); times accept
//! `us`, `ms`, `s`, `m`, `h` and a bare number means seconds (as fio's `runtime`).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use thiserror::Error;

/// Where an option value came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A job file, 1-based line number.
    File { path: String, line: usize },
    /// The command line.
    CommandLine,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{path}:{line}"),
            Origin::CommandLine => write!(f, "command line"),
        }
    }
}

/// One `key[=value]` as written by the user, before typing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOption {
    pub key: String,
    pub value: Option<String>,
    pub origin: Origin,
}

/// A bad option or job file. The message always names the option (or line) at fault.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum OptionError {
    #[error("{origin}: unknown option '{key}' (bkbench --cmdhelp lists them)")]
    Unknown { key: String, origin: Origin },
    #[error("{origin}: option '{key}': bad value '{value}': {reason}")]
    BadValue {
        key: String,
        value: String,
        reason: String,
        origin: Origin,
    },
    #[error("{origin}: option '{key}' needs a value ({key}=...)")]
    MissingValue { key: String, origin: Origin },
    #[error("job '{job}': {reason}")]
    Invalid { job: String, reason: String },
    #[error("{origin}: {reason}")]
    Syntax { reason: String, origin: Origin },
}

/// Which wire protocol the job speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    V2,
    V3,
}

/// The operations a job issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    Write,
    Read,
    Mixed,
}

/// Which entry a read targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadPattern {
    /// Each ledger is read in entry order starting at its LAC when the measured phase starts:
    /// every read is of an entry written moments ago (a Pulsar consumer at the tail).
    Tailing,
    /// Each ledger is read in entry order from entry 0 (a consumer catching up on a backlog).
    Catchup,
    /// Uniformly random acknowledged entries of random ledgers.
    Random,
}

/// Entry payload sizes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum BlockSize {
    Fixed {
        bytes: u64,
    },
    /// Uniform in `[min, max]`.
    Range {
        min: u64,
        max: u64,
    },
    /// Weighted choice; weights are percentages summing to 100.
    Split {
        choices: Vec<(u64, u32)>,
    },
}

impl BlockSize {
    /// The mean payload size.
    #[cfg(test)]
    pub fn mean(&self) -> f64 {
        match self {
            BlockSize::Fixed { bytes } => *bytes as f64,
            BlockSize::Range { min, max } => (*min as f64 + *max as f64) / 2.0,
            BlockSize::Split { choices } => {
                let total: u32 = choices.iter().map(|c| c.1).sum();
                choices
                    .iter()
                    .map(|(b, w)| *b as f64 * f64::from(*w))
                    .sum::<f64>()
                    / f64::from(total.max(1))
            }
        }
    }

    /// The largest payload this distribution can produce.
    pub fn max(&self) -> u64 {
        match self {
            BlockSize::Fixed { bytes } => *bytes,
            BlockSize::Range { max, .. } => *max,
            BlockSize::Split { choices } => choices.iter().map(|c| c.0).max().unwrap_or(0),
        }
    }

    /// Picks a payload size; `r` is a uniform random `u64`.
    pub fn pick(&self, r: u64) -> u64 {
        match self {
            BlockSize::Fixed { bytes } => *bytes,
            BlockSize::Range { min, max } => min + r % (max - min + 1),
            BlockSize::Split { choices } => {
                let total: u64 = choices.iter().map(|c| u64::from(c.1)).sum::<u64>().max(1);
                let mut x = r % total;
                for (bytes, weight) in choices {
                    if x < u64::from(*weight) {
                        return *bytes;
                    }
                    x -= u64::from(*weight);
                }
                choices.last().map(|c| c.0).unwrap_or(0)
            }
        }
    }
}

/// A fully typed, validated job.
#[derive(Debug, Clone, serde::Serialize)]
pub struct JobSpec {
    pub name: String,
    pub description: String,
    pub bookies: Vec<String>,
    pub protocol: Protocol,
    /// TCP connections per bookie.
    pub connections: u32,
    pub ledgers: u32,
    /// First ledger id; `None` = derived from the clock so reruns never collide.
    pub ledger_id: Option<u64>,
    pub password: String,
    pub bs: BlockSize,
    pub iodepth: u32,
    pub rate_iops: u64,
    #[serde(serialize_with = "ser_opt_dur")]
    pub runtime: Option<Duration>,
    pub number_ios: Option<u64>,
    #[serde(serialize_with = "ser_dur")]
    pub ramp_time: Duration,
    pub rw: Workload,
    pub rwmixread: u32,
    pub read_pattern: ReadPattern,
    pub batch_read: u32,
    /// Bytes written (over all ledgers) before the measured phase.
    pub prefill: u64,
    /// After the prefill, drop the OS page cache of this machine (the bookie's, when local).
    pub drop_caches: bool,
    pub seed: u64,
    #[serde(serialize_with = "ser_dur")]
    pub timeout: Duration,
    pub stonewall: bool,
    pub write_lat_log: Option<String>,
    /// PEM CA bundle the bookie's certificate must chain to; `Some` = START_TLS + TLS.
    pub tls_ca: Option<String>,
    /// PEM certificate chain presented to the bookie (mutual TLS), with `tls_key`.
    pub tls_cert: Option<String>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) of `tls_cert`.
    pub tls_key: Option<String>,
}

fn ser_dur<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn ser_opt_dur<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// One entry of the option table: name, value syntax, help text.
pub struct OptionDoc {
    pub name: &'static str,
    pub syntax: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

/// Every option a job accepts, in `--cmdhelp` order.
pub const OPTIONS: &[OptionDoc] = &[
    OptionDoc {
        name: "name",
        syntax: "STR",
        default: "",
        help: "job name (a job file's section name; on the command line, starts a new job)",
    },
    OptionDoc {
        name: "description",
        syntax: "STR",
        default: "",
        help: "free text shown in the report",
    },
    OptionDoc {
        name: "bookie",
        syntax: "HOST:PORT[,HOST:PORT...]",
        default: "127.0.0.1:3181",
        help: "target bookie(s); ledger i lives on bookie i mod N",
    },
    OptionDoc {
        name: "protocol",
        syntax: "v2|v3",
        default: "v2",
        help: "wire protocol (v2 binary as Pulsar uses, or v3 protobuf)",
    },
    OptionDoc {
        name: "connections",
        syntax: "INT",
        default: "1",
        help: "TCP connections per bookie; ledger i uses connection i mod N",
    },
    OptionDoc {
        name: "ledgers",
        syntax: "INT",
        default: "1",
        help: "ledgers written/read concurrently",
    },
    OptionDoc {
        name: "ledger_id",
        syntax: "INT",
        default: "from clock",
        help: "id of the first ledger (the others follow); default derives from the clock",
    },
    OptionDoc {
        name: "password",
        syntax: "STR",
        default: "",
        help: "ledger password; master key = SHA-1(\"ledger\" + password)",
    },
    OptionDoc {
        name: "bs",
        syntax: "SIZE",
        default: "1k",
        help: "fixed entry payload size",
    },
    OptionDoc {
        name: "bs_range",
        syntax: "SIZE-SIZE",
        default: "",
        help: "uniform payload size in a range (overrides bs)",
    },
    OptionDoc {
        name: "bssplit",
        syntax: "SIZE/PCT:SIZE/PCT...",
        default: "",
        help: "weighted payload sizes, percentages sum to 100 (overrides bs)",
    },
    OptionDoc {
        name: "iodepth",
        syntax: "INT",
        default: "1",
        help: "requests in flight for the job",
    },
    OptionDoc {
        name: "rate_iops",
        syntax: "COUNT",
        default: "0",
        help: "cap on requests per second (0 = unlimited); latency at a fixed rate",
    },
    OptionDoc {
        name: "runtime",
        syntax: "TIME",
        default: "10s",
        help: "measured duration (after ramp_time)",
    },
    OptionDoc {
        name: "number_ios",
        syntax: "COUNT",
        default: "",
        help:
            "stop after this many measured requests (whichever of runtime/number_ios comes first)",
    },
    OptionDoc {
        name: "ramp_time",
        syntax: "TIME",
        default: "0",
        help: "run this long before measuring",
    },
    OptionDoc {
        name: "rw",
        syntax: "write|read|mixed",
        default: "write",
        help: "workload; mixed issues reads with probability rwmixread%",
    },
    OptionDoc {
        name: "rwmixread",
        syntax: "PCT",
        default: "50",
        help: "share of reads in rw=mixed",
    },
    OptionDoc {
        name: "read_pattern",
        syntax: "tailing|catchup|random",
        default: "catchup",
        help: "which entries reads target (tailing needs writes: rw=mixed)",
    },
    OptionDoc {
        name: "batch_read",
        syntax: "INT",
        default: "0",
        help: "read N entries per request with BATCH_READ_ENTRY (v2 only; 0 = single reads)",
    },
    OptionDoc {
        name: "prefill",
        syntax: "SIZE",
        default: "0",
        help: "bytes written (not measured) before the measured phase, for reads",
    },
    OptionDoc {
        name: "drop_caches",
        syntax: "0|1",
        default: "0",
        help: "after the prefill: sync and drop this machine's page cache (root; cold reads of a local bookie)",
    },
    OptionDoc {
        name: "seed",
        syntax: "INT",
        default: "1",
        help: "seed for sizes, payloads and random reads",
    },
    OptionDoc {
        name: "timeout",
        syntax: "TIME",
        default: "30s",
        help: "per-request timeout (a timed-out request counts as error ETIMEOUT)",
    },
    OptionDoc {
        name: "stonewall",
        syntax: "(flag)",
        default: "off",
        help: "wait for all earlier jobs to finish before starting this one",
    },
    OptionDoc {
        name: "write_lat_log",
        syntax: "PREFIX",
        default: "",
        help: "write PREFIX_<job>.csv (per-second rates and latency) and PREFIX_<job>.svg (chart)",
    },
    OptionDoc {
        name: "tls_ca",
        syntax: "FILE",
        default: "",
        help: "TLS: PEM CA bundle the bookie's certificate must chain to (turns START_TLS + TLS on)",
    },
    OptionDoc {
        name: "tls_cert",
        syntax: "FILE",
        default: "",
        help: "mutual TLS: PEM client certificate chain, leaf first (needs tls_key and tls_ca)",
    },
    OptionDoc {
        name: "tls_key",
        syntax: "FILE",
        default: "",
        help: "mutual TLS: PEM private key of tls_cert (PKCS#8, PKCS#1 or SEC1)",
    },
];

/// Parses a size: `4096`, `4k`, `1M`, `5mib`, `2g` (binary multipliers).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (num, mult) = split_suffix(
        t,
        &[
            ("k", 1 << 10),
            ("m", 1 << 20),
            ("g", 1 << 30),
            ("t", 1 << 40),
        ],
    );
    let n: u64 = num
        .parse()
        .map_err(|_| format!("expected a size like 4096, 4k, 1m, 2g, got '{s}'"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' overflows"))
}

/// Parses a count: `1000`, `10k` (= 10000), `1m` (= 1000000).
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = split_suffix(&t, &[("k", 1_000), ("m", 1_000_000), ("g", 1_000_000_000)]);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("expected a count like 1000 or 10k, got '{s}'"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("count '{s}' overflows"))
}

/// Parses a time: `10` (seconds), `10s`, `500ms`, `250us`, `2m`, `1h`.
pub fn parse_time(s: &str) -> Result<Duration, String> {
    let t = s.trim().to_ascii_lowercase();
    let units: &[(&str, f64)] = &[
        ("us", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
    ];
    let mut num = t.as_str();
    let mut mult = 1.0;
    for (suffix, m) in units {
        if let Some(n) = t.strip_suffix(suffix) {
            num = n;
            mult = *m;
            break;
        }
    }
    let n: f64 = num
        .parse()
        .map_err(|_| format!("expected a time like 10s, 500ms, 2m, got '{s}'"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(format!("time '{s}' must be a non-negative number"));
    }
    Ok(Duration::from_secs_f64(n * mult))
}

fn split_suffix<'a>(t: &'a str, table: &[(&str, u64)]) -> (&'a str, u64) {
    for (suffix, mult) in table {
        if let Some(n) = t.strip_suffix(suffix) {
            return (n, *mult);
        }
    }
    (t, 1)
}

fn parse_u32(s: &str) -> Result<u32, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("expected a whole number, got '{s}'"))
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("expected 1/0 (or true/false), got '{s}'")),
    }
}

/// Parses `bs_range=1k-64k`.
pub fn parse_bs_range(s: &str) -> Result<BlockSize, String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("expected MIN-MAX like 1k-64k, got '{s}'"))?;
    let (min, max) = (parse_size(a)?, parse_size(b)?);
    if min == 0 || min > max {
        return Err(format!("need 0 < MIN <= MAX, got {min}-{max}"));
    }
    Ok(BlockSize::Range { min, max })
}

/// Parses `bssplit=1k/50:64k/50`.
pub fn parse_bssplit(s: &str) -> Result<BlockSize, String> {
    let mut choices = Vec::new();
    for part in s.split(':').filter(|p| !p.trim().is_empty()) {
        let (size, pct) = part
            .split_once('/')
            .ok_or_else(|| format!("expected SIZE/PCT, got '{part}'"))?;
        let size = parse_size(size)?;
        let pct = parse_u32(pct)?;
        if size == 0 {
            return Err("sizes must be > 0".into());
        }
        choices.push((size, pct));
    }
    let total: u32 = choices.iter().map(|c| c.1).sum();
    if choices.is_empty() || total != 100 {
        return Err(format!("percentages must sum to 100, got {total}"));
    }
    Ok(BlockSize::Split { choices })
}

/// Options applied so far, kept with their origins for cross-option errors.
struct Builder {
    spec: JobSpec,
    origins: BTreeMap<&'static str, Origin>,
}

impl JobSpec {
    /// The defaults every job starts from.
    pub fn defaults(name: &str) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            description: String::new(),
            bookies: vec!["127.0.0.1:3181".into()],
            protocol: Protocol::V2,
            connections: 1,
            ledgers: 1,
            ledger_id: None,
            password: String::new(),
            bs: BlockSize::Fixed { bytes: 1024 },
            iodepth: 1,
            rate_iops: 0,
            runtime: None,
            number_ios: None,
            ramp_time: Duration::ZERO,
            rw: Workload::Write,
            rwmixread: 50,
            read_pattern: ReadPattern::Catchup,
            batch_read: 0,
            prefill: 0,
            drop_caches: false,
            seed: 1,
            timeout: Duration::from_secs(30),
            stonewall: false,
            write_lat_log: None,
            tls_ca: None,
            tls_cert: None,
            tls_key: None,
        }
    }

    /// Builds a job from its options, applied in order (later wins), then validates the
    /// combination. `name` is the section name; a `name=` option overrides it.
    pub fn build(name: &str, options: &[RawOption]) -> Result<JobSpec, OptionError> {
        let mut b = Builder {
            spec: JobSpec::defaults(name),
            origins: BTreeMap::new(),
        };
        for opt in options {
            b.apply(opt)?;
        }
        b.validate()
    }

    /// Whether the job issues adds.
    pub fn writes(&self) -> bool {
        self.rw != Workload::Read
    }

    /// Whether the job issues reads.
    pub fn reads(&self) -> bool {
        self.rw != Workload::Write
    }
}

impl Builder {
    fn apply(&mut self, opt: &RawOption) -> Result<(), OptionError> {
        // `--tls-ca` and `tls_ca` are the same key (fio's keys use `_`).
        let key = opt.key.trim().to_ascii_lowercase().replace('-', "_");
        let doc = OPTIONS
            .iter()
            .find(|d| d.name == key)
            .ok_or_else(|| OptionError::Unknown {
                key: opt.key.clone(),
                origin: opt.origin.clone(),
            })?;
        let name = doc.name;
        // `stonewall` is a flag: bare key means on.
        let value = match (&opt.value, name) {
            (None, "stonewall") => "1".to_string(),
            (None, _) => {
                return Err(OptionError::MissingValue {
                    key: key.clone(),
                    origin: opt.origin.clone(),
                })
            }
            (Some(v), _) => v.trim().to_string(),
        };
        let bad = |reason: String| OptionError::BadValue {
            key: key.clone(),
            value: value.clone(),
            reason,
            origin: opt.origin.clone(),
        };
        let positive = |n: u32| {
            if n == 0 {
                Err("must be at least 1".to_string())
            } else {
                Ok(n)
            }
        };
        let s = &mut self.spec;
        match name {
            "name" => s.name = value.clone(),
            "description" => s.description = value.clone(),
            "bookie" => {
                let list: Vec<String> = value
                    .split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect();
                if list.is_empty() {
                    return Err(bad("expected HOST:PORT[,HOST:PORT...]".into()));
                }
                for b in &list {
                    let ok = b
                        .rsplit_once(':')
                        .map(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
                        .unwrap_or(false);
                    if !ok {
                        return Err(bad(format!("'{b}' is not HOST:PORT")));
                    }
                }
                s.bookies = list;
            }
            "protocol" => {
                s.protocol = match value.to_ascii_lowercase().as_str() {
                    "v2" | "2" => Protocol::V2,
                    "v3" | "3" => Protocol::V3,
                    _ => return Err(bad("expected v2 or v3".into())),
                }
            }
            "connections" => s.connections = parse_u32(&value).and_then(positive).map_err(bad)?,
            "ledgers" => s.ledgers = parse_u32(&value).and_then(positive).map_err(bad)?,
            "ledger_id" => {
                let id: u64 = value
                    .parse()
                    .map_err(|_| bad("expected a ledger id (whole number)".into()))?;
                if id > i64::MAX as u64 {
                    return Err(bad("ledger ids are signed 64-bit on the wire".into()));
                }
                s.ledger_id = Some(id);
            }
            "password" => s.password = value.clone(),
            "bs" => {
                let n = parse_size(&value).map_err(bad)?;
                if n == 0 {
                    return Err(bad("entry size must be > 0".into()));
                }
                s.bs = BlockSize::Fixed { bytes: n };
            }
            "bs_range" => s.bs = parse_bs_range(&value).map_err(bad)?,
            "bssplit" => s.bs = parse_bssplit(&value).map_err(bad)?,
            "iodepth" => s.iodepth = parse_u32(&value).and_then(positive).map_err(bad)?,
            "rate_iops" => s.rate_iops = parse_count(&value).map_err(bad)?,
            "runtime" => {
                let t = parse_time(&value).map_err(bad)?;
                if t.is_zero() {
                    return Err(bad("must be > 0".into()));
                }
                s.runtime = Some(t);
            }
            "number_ios" => {
                let n = parse_count(&value).map_err(bad)?;
                if n == 0 {
                    return Err(bad("must be > 0".into()));
                }
                s.number_ios = Some(n);
            }
            "ramp_time" => s.ramp_time = parse_time(&value).map_err(bad)?,
            "rw" => {
                s.rw = match value.to_ascii_lowercase().as_str() {
                    "write" => Workload::Write,
                    "read" => Workload::Read,
                    "mixed" | "rw" | "readwrite" => Workload::Mixed,
                    _ => return Err(bad("expected write, read or mixed".into())),
                }
            }
            "rwmixread" => {
                let p = parse_u32(&value).map_err(bad)?;
                if p > 100 {
                    return Err(bad("a percentage is 0..=100".into()));
                }
                s.rwmixread = p;
            }
            "read_pattern" => {
                s.read_pattern = match value.to_ascii_lowercase().as_str() {
                    "tailing" | "tail" => ReadPattern::Tailing,
                    "catchup" | "catch-up" => ReadPattern::Catchup,
                    "random" => ReadPattern::Random,
                    _ => return Err(bad("expected tailing, catchup or random".into())),
                }
            }
            "batch_read" => s.batch_read = parse_u32(&value).map_err(bad)?,
            "prefill" => s.prefill = parse_size(&value).map_err(bad)?,
            "drop_caches" => s.drop_caches = parse_bool(&value).map_err(bad)?,
            "seed" => {
                s.seed = value
                    .parse()
                    .map_err(|_| bad("expected a whole number".into()))?
            }
            "timeout" => {
                let t = parse_time(&value).map_err(bad)?;
                if t.is_zero() {
                    return Err(bad("must be > 0".into()));
                }
                s.timeout = t;
            }
            "stonewall" => s.stonewall = parse_bool(&value).map_err(bad)?,
            "write_lat_log" => {
                s.write_lat_log = if value.is_empty() {
                    None
                } else {
                    Some(value.clone())
                }
            }
            "tls_ca" | "tls_cert" | "tls_key" => {
                let path = (!value.is_empty()).then(|| value.clone());
                match name {
                    "tls_ca" => s.tls_ca = path,
                    "tls_cert" => s.tls_cert = path,
                    _ => s.tls_key = path,
                }
            }
            other => {
                return Err(OptionError::Unknown {
                    key: other.to_string(),
                    origin: opt.origin.clone(),
                })
            }
        }
        self.origins.insert(name, opt.origin.clone());
        Ok(())
    }

    fn origin(&self, key: &str) -> String {
        match self.origins.get(key) {
            Some(o) => format!("{key} ({o})"),
            None => format!("{key} (default)"),
        }
    }

    fn validate(self) -> Result<JobSpec, OptionError> {
        let s = &self.spec;
        let invalid = |reason: String| OptionError::Invalid {
            job: s.name.clone(),
            reason,
        };
        if s.name.is_empty() {
            return Err(invalid("a job needs a name".into()));
        }
        if s.batch_read > 0 && s.protocol == Protocol::V3 {
            return Err(invalid(format!(
                "{} needs protocol=v2: BATCH_READ_ENTRY has no v3 message ({})",
                self.origin("batch_read"),
                self.origin("protocol")
            )));
        }
        if s.batch_read > 0 && !s.reads() {
            return Err(invalid(format!(
                "{} is set but {} issues no reads",
                self.origin("batch_read"),
                self.origin("rw")
            )));
        }
        if s.rw == Workload::Read && s.read_pattern == ReadPattern::Tailing {
            return Err(invalid(format!(
                "{} needs a writer in the same job: use rw=mixed ({})",
                self.origin("read_pattern"),
                self.origin("rw")
            )));
        }
        if s.rw == Workload::Read && s.prefill == 0 {
            return Err(invalid(format!(
                "{} reads, but there is nothing to read: set prefill=SIZE ({})",
                self.origin("rw"),
                self.origin("prefill")
            )));
        }
        if s.tls_cert.is_some() != s.tls_key.is_some() {
            return Err(invalid(format!(
                "mutual TLS needs both {} and {}",
                self.origin("tls_cert"),
                self.origin("tls_key")
            )));
        }
        if s.tls_cert.is_some() && s.tls_ca.is_none() {
            return Err(invalid(format!(
                "{} is set but TLS is off: set {} (the CA the bookie's certificate chains to)",
                self.origin("tls_cert"),
                self.origin("tls_ca")
            )));
        }
        // One entry must fit a 5 MiB frame with its headers (docs/protocol.md §1.2).
        const MAX_PAYLOAD: u64 = 5 * 1024 * 1024 + 10 * 1024 - 256;
        if s.bs.max() > MAX_PAYLOAD {
            return Err(invalid(format!(
                "entry size {} is above what fits one {}-byte frame ({})",
                s.bs.max(),
                5 * 1024 * 1024 + 10 * 1024,
                self.origin("bs")
            )));
        }
        if let Some(first) = s.ledger_id {
            if first
                .checked_add(u64::from(s.ledgers) * 1024)
                .is_none_or(|e| e > i64::MAX as u64)
            {
                return Err(invalid(format!(
                    "{} is too close to the top of the id space",
                    self.origin("ledger_id")
                )));
            }
        }
        let mut spec = self.spec;
        if spec.runtime.is_none() && spec.number_ios.is_none() {
            spec.runtime = Some(Duration::from_secs(10));
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests;
